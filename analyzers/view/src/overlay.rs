//! What the viewers draw over the timeline from the analyses: the critical
//! path (the stretches of each rank that determined the run time) and the
//! worst instances of every wait state, in the trace's own time.
//!
//! Both come from the analyses as the report computes them
//! ([`analyzers::critical_path`], [`analyzers::waitstates`]); nothing is
//! recomputed here, only shifted back from model time
//! ([`crate::messages::clock_shift`]) and indexed for drawing.

use analyzers::report::Analyses;
use analyzers::waitstates::PatternKind;
use trace_lod::column_bounds;

use crate::messages::clock_shift;

/// The critical path per rank, in trace time.
#[derive(Clone, Debug, Default)]
pub struct CriticalPathView {
    /// Per world rank: its stretches on the path, sorted, disjoint.
    ranks: Vec<Vec<(i64, i64)>>,
    /// Length of the path, ns.
    pub length_ns: i64,
}

impl CriticalPathView {
    pub fn new(an: &Analyses) -> CriticalPathView {
        let m = &an.model;
        let mut ranks: Vec<Vec<(i64, i64)>> = vec![Vec::new(); m.ranks.len()];
        for s in &an.critical_path.segments {
            let Some(v) = ranks.get_mut(s.rank as usize) else { continue };
            let shift = clock_shift(m, s.rank as i32);
            if s.end > s.start {
                v.push((s.start - shift, s.end - shift));
            }
        }
        for v in &mut ranks {
            v.sort_unstable();
            // Adjacent stretches of one rank (the path left and came back
            // at once) become one.
            let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
            for &(a, b) in v.iter() {
                match out.last_mut() {
                    Some(l) if a <= l.1 => l.1 = l.1.max(b),
                    _ => out.push((a, b)),
                }
            }
            *v = out;
        }
        CriticalPathView { ranks, length_ns: an.critical_path.length_ns }
    }

    /// The stretches of world rank `rank` on the path.
    pub fn segments(&self, rank: i32) -> &[(i64, i64)] {
        usize::try_from(rank).ok().and_then(|r| self.ranks.get(r)).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Time of `[t0, t1)` on `rank` that lies on the path, ns.
    pub fn overlap(&self, rank: i32, t0: i64, t1: i64) -> i64 {
        let s = self.segments(rank);
        let i = s.partition_point(|x| x.1 <= t0);
        s[i..].iter().take_while(|x| x.0 < t1).map(|x| x.1.min(t1) - x.0.max(t0)).filter(|&d| d > 0).sum()
    }

    /// Whether a call of `rank` from `t0` to `t1` is on the path (a
    /// zero-length call: whether its instant is).
    pub fn on_path(&self, rank: i32, t0: i64, t1: i64) -> bool {
        self.overlap(rank, t0, t1.max(t0 + 1)) > 0
    }

    /// For each of `n` columns of `[t0, t1)` (the columns of
    /// [`trace_lod::RankLod::cells`]), whether the path runs on `rank`
    /// there.
    pub fn columns(&self, rank: i32, t0: i64, t1: i64, n: usize, out: &mut Vec<bool>) {
        out.clear();
        out.resize(n, false);
        let s = self.segments(rank);
        if s.is_empty() || n == 0 {
            return;
        }
        let mut bounds = Vec::new();
        column_bounds(t0, t1, n, &mut bounds);
        let mut i = s.partition_point(|x| x.1 <= t0);
        for (c, slot) in out.iter_mut().enumerate() {
            let (a, b) = (bounds[c], bounds[c + 1].max(bounds[c] + 1));
            while i < s.len() && s[i].1 <= a {
                i += 1;
            }
            if i == s.len() {
                break;
            }
            *slot = s[i].0 < b;
        }
    }
}

/// One waiting call to jump to, in trace time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitJump {
    pub kind: PatternKind,
    /// The waiting rank (world rank).
    pub rank: i32,
    /// The waiting call (index into the model's calls of `rank`).
    pub call: u32,
    /// Start and end of the waiting call.
    pub t_start: i64,
    pub t_end: i64,
    /// Time lost, ns.
    pub wait: i64,
    /// The rank waited for.
    pub cause: i32,
}

/// The worst instances of every wait state, worst first.
#[derive(Clone, Debug, Default)]
pub struct WorstWaits {
    /// In the order of [`PatternKind::ALL`].
    pub by_kind: Vec<Vec<WaitJump>>,
}

impl WorstWaits {
    pub fn new(an: &Analyses) -> WorstWaits {
        let m = &an.model;
        let by_kind = PatternKind::ALL
            .iter()
            .enumerate()
            .map(|(k, _)| {
                an.waits
                    .worst
                    .get(k)
                    .map(|v| v.as_slice())
                    .unwrap_or(&[])
                    .iter()
                    .filter_map(|w| {
                        let r = m.ranks.get(w.rank as usize)?;
                        if w.call as usize >= r.calls.len() {
                            return None;
                        }
                        let c = r.calls.at(w.call as usize);
                        let shift = clock_shift(m, w.rank as i32);
                        Some(WaitJump {
                            kind: w.kind,
                            rank: w.rank as i32,
                            call: w.call,
                            t_start: c.t_start - shift,
                            t_end: c.t_end - shift,
                            wait: w.time_ns,
                            cause: w.cause as i32,
                        })
                    })
                    .collect()
            })
            .collect();
        WorstWaits { by_kind }
    }

    /// The instances of pattern `kind`, worst first.
    pub fn of(&self, kind: PatternKind) -> &[WaitJump] {
        let k = PatternKind::ALL.iter().position(|x| *x == kind).unwrap_or(0);
        self.by_kind.get(k).map(Vec::as_slice).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns agree with the overlap of each column's time range, whatever
    /// the zoom (segments of 1 ns to whole columns, many per column).
    #[test]
    fn columns_are_the_columns_the_path_overlaps() {
        let mut segs = Vec::new();
        let mut t = 0;
        for k in 0..500i64 {
            let len = 1 + (k * 37) % 900;
            segs.push((t, t + len));
            t += len + (k * 53) % 1_300;
        }
        let cp = CriticalPathView { ranks: vec![Vec::new(), segs], length_ns: 0 };
        let mut cols = Vec::new();
        let mut bounds = Vec::new();
        for (t0, t1, n) in [(-100, t + 100, 80), (0, 5_000, 1_000), (12_345, 12_400, 7), (t, t + 1000, 10)] {
            cp.columns(1, t0, t1, n, &mut cols);
            column_bounds(t0, t1, n, &mut bounds);
            for c in 0..n {
                let (a, b) = (bounds[c], bounds[c + 1].max(bounds[c] + 1));
                assert_eq!(cols[c], cp.overlap(1, a, b) > 0, "column {c} of {t0}..{t1}/{n}");
            }
            cp.columns(0, t0, t1, n, &mut cols);
            assert!(cols.iter().all(|x| !x), "rank 0 is not on the path");
        }
        assert!(cp.on_path(1, 0, 1));
        assert!(!cp.on_path(1, -10, 0));
        assert!(!cp.on_path(7, 0, 1_000_000), "an unknown rank is not on it");
    }
}
