//! Critical path: the chain of computation and communication that
//! determined the run time, and how much each rank and call contributes.
//!
//! Method (a backward walk over the wait states): start at the rank whose
//! window (see [`crate::profile::window`]) ends last, at that end. Walk
//! back in time over its calls. Time between calls is computation on the
//! path. A call that waited for another rank (a wait state of
//! [`crate::waitstates`]: late sender, late receiver, collective waits)
//! contributes only its part after the awaited event; the path then jumps
//! to the rank responsible at the moment of that event (the send's start,
//! the receive's post, the last arrival at the collective) and continues
//! there. Any other call is on the path whole. The walk ends at the start
//! of the window of the rank it is on. Every step goes strictly back in
//! time, so the walk ends; its length is the window end minus where it
//! ended.

use serde::{Deserialize, Serialize};

use crate::model::Model;
use crate::profile::window;
use crate::waitstates::Cause;

/// A call and its time on the critical path.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallShare {
    pub call: String,
    pub time_ns: i64,
    pub share: f64,
}

/// The critical path.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CriticalPath {
    pub start: i64,
    pub end: i64,
    pub length_ns: i64,
    pub compute_ns: i64,
    pub mpi_ns: i64,
    /// Time on the path per rank.
    pub by_rank: Vec<i64>,
    /// MPI calls on the path, largest first.
    pub by_call: Vec<CallShare>,
    /// How often the path moved to another rank.
    pub rank_switches: u64,
    /// The path as stretches on one rank each, in time order (not in the
    /// JSON report; at most [`MAX_SEGMENTS`], the earliest dropped).
    #[serde(skip)]
    pub segments: Vec<Segment>,
}

/// A stretch of the critical path on one rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    pub rank: u32,
    pub start: i64,
    pub end: i64,
}

/// Largest number of segments kept.
pub const MAX_SEGMENTS: usize = 1 << 20;

/// Walks the critical path; `causes` comes from [`crate::waitstates::wait_states`].
pub fn critical_path(m: &Model, causes: &[Vec<Cause>]) -> CriticalPath {
    let n = m.ranks.len();
    let windows: Vec<Option<(i64, i64)>> = m.ranks.iter().map(|r| window(m, r)).collect();
    let mut out = CriticalPath { by_rank: vec![0; n], ..Default::default() };
    let Some((mut cur, end)) = windows
        .iter()
        .enumerate()
        .filter_map(|(r, w)| w.map(|w| (r, w.1)))
        .max_by_key(|&(r, e)| (e, std::cmp::Reverse(r)))
    else {
        return out;
    };
    let mut by_call = vec![0i64; m.names.len()];
    let mut t = end;
    out.end = end;
    let mut seg_end = end;
    let mut idx = m.ranks[cur].calls.partition_point(|c| c.t_start < t) as isize - 1;
    let limit = 4 * m.ranks.iter().map(|r| r.calls.len()).sum::<usize>() + 16;
    for _ in 0..limit {
        let r = &m.ranks[cur];
        let lo = windows[cur].map(|w| w.0).unwrap_or(i64::MIN);
        if idx < 0 || t <= lo {
            let d = (t - lo).max(0);
            if lo != i64::MIN {
                out.compute_ns += d;
                out.by_rank[cur] += d;
                t = lo.min(t);
            }
            break;
        }
        let c = &r.calls.at(idx as usize);
        if c.t_end.max(lo) < t {
            let d = t - c.t_end.max(lo);
            out.compute_ns += d;
            out.by_rank[cur] += d;
            t = c.t_end.max(lo);
            if t <= lo {
                continue;
            }
        }
        let cs = &causes[cur];
        let cause = cs.binary_search_by_key(&(idx as u32), |x| x.call).ok().map(|i| cs[i]);
        let from = c.t_start.max(lo);
        match cause {
            Some(k) if k.until > from && k.until < t && (k.rank as usize) != cur && (k.rank as usize) < n => {
                let d = t - k.until;
                by_call[c.name as usize] += d;
                out.mpi_ns += d;
                out.by_rank[cur] += d;
                t = k.until;
                if out.segments.len() < MAX_SEGMENTS {
                    out.segments.push(Segment { rank: cur as u32, start: t, end: seg_end });
                }
                seg_end = t;
                cur = k.rank as usize;
                out.rank_switches += 1;
                idx = m.ranks[cur].calls.partition_point(|c| c.t_start < t) as isize - 1;
            }
            _ => {
                let d = (t - from).max(0);
                by_call[c.name as usize] += d;
                out.mpi_ns += d;
                out.by_rank[cur] += d;
                t = from.min(t);
                idx -= 1;
            }
        }
    }
    if out.segments.len() < MAX_SEGMENTS && seg_end > t {
        out.segments.push(Segment { rank: cur as u32, start: t, end: seg_end });
    }
    out.segments.reverse();
    out.start = t;
    out.length_ns = end - t;
    let total = out.length_ns.max(1) as f64;
    out.by_call = by_call
        .iter()
        .enumerate()
        .filter(|(_, &v)| v > 0)
        .map(|(i, &v)| CallShare { call: m.name(i as u16).to_string(), time_ns: v, share: v as f64 / total })
        .collect();
    out.by_call.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(a.call.cmp(&b.call)));
    out
}
