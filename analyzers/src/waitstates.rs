//! Wait states: time lost waiting for another rank, by Scalasca's patterns.
//!
//! - **Late Sender**: a receive (blocking, or the `Wait*` completing a
//!   nonblocking one) started before its matching send was posted; the
//!   receiver waits from the start of its call until the send started (at
//!   most until its call ended). A `Waitall` completing several receives
//!   waits for the latest of their senders.
//! - **Late Receiver**: a send that could not complete before the receiver
//!   posted the receive (the sending call, or the `Wait*` of an `Isend`,
//!   was still running when the receive was posted): it waited from its
//!   start until the receive was posted. Sends that complete before the
//!   receive is posted (eager protocol) lose nothing.
//! - **Wait at N x N**, **Wait at Barrier**, **Late Broadcast**, **Early
//!   Reduce**: the collective waits of [`crate::collectives`].
//!
//! Each pattern reports the total time lost, the victims (ranks that
//! waited) and call sites where they waited, and the ranks responsible
//! (the late sender, receiver, last arriver or root).

use serde::{Deserialize, Serialize};

use crate::collectives::Collectives;
use crate::matching::{Matching, MsgRef};
use crate::model::{CollKind, Ends, Location, Model, RankData, NONE};
use crate::{par_map, FastMap};

/// The patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PatternKind {
    LateSender,
    LateReceiver,
    WaitAtNxN,
    WaitAtBarrier,
    LateBroadcast,
    EarlyReduce,
}

impl PatternKind {
    pub const ALL: [PatternKind; 6] = [
        PatternKind::LateSender,
        PatternKind::LateReceiver,
        PatternKind::WaitAtNxN,
        PatternKind::WaitAtBarrier,
        PatternKind::LateBroadcast,
        PatternKind::EarlyReduce,
    ];
    pub fn title(self) -> &'static str {
        match self {
            PatternKind::LateSender => "Late Sender",
            PatternKind::LateReceiver => "Late Receiver",
            PatternKind::WaitAtNxN => "Wait at N x N",
            PatternKind::WaitAtBarrier => "Wait at Barrier",
            PatternKind::LateBroadcast => "Late Broadcast",
            PatternKind::EarlyReduce => "Early Reduce",
        }
    }
    fn of_coll(k: CollKind) -> Option<PatternKind> {
        match k {
            CollKind::NxN => Some(PatternKind::WaitAtNxN),
            CollKind::Barrier => Some(PatternKind::WaitAtBarrier),
            CollKind::OneToN => Some(PatternKind::LateBroadcast),
            CollKind::NToOne => Some(PatternKind::EarlyReduce),
            _ => None,
        }
    }
}

/// Waiting at one call site.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteWait {
    pub call: String,
    /// Best label: `file.c:42`, `module+0xOFFSET` or `0xADDR` (see [`Model::site_label`]).
    pub site: String,
    /// `module+0xOFFSET`, if the module is known.
    #[serde(default)]
    pub module: Option<String>,
    /// Source location, if symbolized.
    #[serde(default)]
    pub location: Option<Location>,
    pub time_ns: i64,
    pub count: u64,
    pub ranks: usize,
}

/// One pattern's findings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pattern {
    pub kind: PatternKind,
    pub name: String,
    pub time_ns: i64,
    /// Number of waiting calls.
    pub count: u64,
    /// Time lost per rank (the victims), indexed by rank.
    pub by_rank: Vec<i64>,
    /// Time others lost waiting for each rank (the ones responsible).
    pub by_cause: Vec<i64>,
    /// Call sites where the time was lost, largest first (top [`TOP`]).
    pub sites: Vec<SiteWait>,
}

/// How many sites to list per pattern.
pub const TOP: usize = 10;

/// All patterns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitStates {
    pub patterns: Vec<Pattern>,
    pub total_ns: i64,
}

impl WaitStates {
    pub fn get(&self, k: PatternKind) -> Option<&Pattern> {
        self.patterns.iter().find(|p| p.kind == k)
    }
    pub fn time(&self, k: PatternKind) -> i64 {
        self.get(k).map(|p| p.time_ns).unwrap_or(0)
    }
}

/// Why a call waited: until `until` (ns) for rank `rank`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cause {
    pub call: u32,
    pub rank: u32,
    pub until: i64,
}

/// One waiting call.
#[derive(Clone, Copy, Debug)]
struct Wait {
    kind: PatternKind,
    call: u32,
    time: i64,
    cause: u32,
    until: i64,
}

/// One waiting call, as the viewers jump to it (model time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitInstance {
    pub kind: PatternKind,
    pub rank: u32,
    /// The waiting call (index into the rank's calls).
    pub call: u32,
    /// Time lost, ns.
    pub time_ns: i64,
    /// The rank waited for.
    pub cause: u32,
    /// When the awaited event came.
    pub until: i64,
}

/// Most instances kept per pattern in [`Analysis::worst`]: a viewer jumps
/// through the worst ones; the rest are in the totals.
pub const WORST: usize = 1000;

/// Wait states and, per rank, the cause of every waiting call (sorted by
/// call index; used by the critical path).
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub states: WaitStates,
    pub causes: Vec<Vec<Cause>>,
    /// Per pattern (in the order of [`PatternKind::ALL`]): its largest
    /// instances, worst first (ties: earlier rank, then earlier call),
    /// at most [`WORST`].
    pub worst: Vec<Vec<WaitInstance>>,
}

/// Keeps the [`WORST`] largest of `v`, worst first (a selection, then a
/// sort of those kept: linear in the waits of a rank).
fn keep_worst(v: &mut Vec<WaitInstance>) {
    let key = |w: &WaitInstance| (std::cmp::Reverse(w.time_ns), w.rank, w.call);
    if v.len() > WORST {
        v.select_nth_unstable_by_key(WORST - 1, key);
        v.truncate(WORST);
    }
    v.sort_by_key(key);
}

/// Waits of one rank's sends or receives (`ends`, with their `partners`):
/// per completing call, the latest partner event (`partner_time`) that
/// came while the call was running; the call waited from its start until
/// then.
fn partner_waits(
    r: &RankData,
    ends: &Ends,
    partners: &[MsgRef],
    partner_time: impl Fn(MsgRef) -> i64,
    kind: PatternKind,
    out: &mut Vec<Wait>,
) {
    // Per completing call: the latest partner time and rank (dense: a
    // rank's calls are few enough, and hashing each end costs more).
    let mut latest: Vec<(i64, u32)> = vec![(i64::MIN, NONE); r.calls.len()];
    for (p, &q) in ends.iter().zip(partners) {
        if p.done == NONE || !q.is_some() {
            continue;
        }
        let t = partner_time(q);
        if r.calls.at(p.done as usize).t_end <= t && kind == PatternKind::LateReceiver {
            // The send completed before the receive was posted (eager).
            continue;
        }
        let e = &mut latest[p.done as usize];
        if t > e.0 {
            *e = (t, q.rank);
        }
    }
    for (call, &(t, who)) in latest.iter().enumerate() {
        if who == NONE {
            continue;
        }
        let call = call as u32;
        let c = &r.calls.at(call as usize);
        let w = t.min(c.t_end) - c.t_start;
        if w > 0 {
            out.push(Wait { kind, call, time: w, cause: who, until: t });
        }
    }
}

fn p2p_waits(m: &Model, mt: &Matching, rank: usize) -> Vec<Wait> {
    let r = &m.ranks[rank];
    let mut out = Vec::new();
    let post_time = |q: MsgRef, sends: bool| {
        let pr = &m.ranks[q.rank as usize];
        let p = if sends { &pr.sends.at(q.idx as usize) } else { &pr.recvs.at(q.idx as usize) };
        pr.calls.t_start(p.post as usize)
    };
    partner_waits(r, &r.recvs, &mt.recv_to_send[rank], |q| post_time(q, true), PatternKind::LateSender, &mut out);
    partner_waits(r, &r.sends, &mt.send_to_recv[rank], |q| post_time(q, false), PatternKind::LateReceiver, &mut out);
    out
}

/// Per (call, site key): time, count, first site index, ranks seen.
type SiteAcc = (i64, u64, u32, Vec<u32>);

/// What one rank's waits add up to.
struct RankWaits {
    /// Per pattern (index into [`PatternKind::ALL`]): time and count.
    totals: [(i64, u64); 6],
    /// (pattern, rank responsible) -> time.
    by_cause: FastMap<(u8, u32), i64>,
    /// (pattern, call name, site key) -> (time, count, site index).
    sites: FastMap<(u8, u16, i64), (i64, u64, u32)>,
    causes: Vec<Cause>,
    /// Per pattern: this rank's largest waits.
    worst: [Vec<WaitInstance>; 6],
}

fn kind_index(k: PatternKind) -> usize {
    PatternKind::ALL.iter().position(|x| *x == k).unwrap_or(0)
}

/// Sums up the waits of rank `rank` (its point-to-point ones found here,
/// its collective ones given).
fn rank_waits(m: &Model, mt: &Matching, rank: usize, coll_waits: &[Wait]) -> RankWaits {
    let r = &m.ranks[rank];
    let mut ws = p2p_waits(m, mt, rank);
    ws.extend_from_slice(coll_waits);
    let mut out = RankWaits {
        totals: [(0, 0); 6],
        by_cause: FastMap::default(),
        sites: FastMap::default(),
        causes: Vec::new(),
        worst: Default::default(),
    };
    for w in &ws {
        let k = kind_index(w.kind);
        out.worst[k].push(WaitInstance {
            kind: w.kind,
            rank: rank as u32,
            call: w.call,
            time_ns: w.time,
            cause: w.cause,
            until: w.until,
        });
        out.totals[k].0 += w.time;
        out.totals[k].1 += 1;
        *out.by_cause.entry((k as u8, w.cause)).or_insert(0) += w.time;
        let c = &r.calls.at(w.call as usize);
        let e = out.sites.entry((k as u8, c.name, m.sites[c.site as usize].key)).or_insert((0, 0, c.site));
        e.0 += w.time;
        e.1 += 1;
    }
    out.worst.iter_mut().for_each(keep_worst);
    ws.sort_by_key(|w| (w.call, std::cmp::Reverse(w.until)));
    ws.dedup_by_key(|w| w.call);
    out.causes = ws.iter().map(|w| Cause { call: w.call, rank: w.cause, until: w.until }).collect();
    out
}

/// Finds the wait states.
pub fn wait_states(m: &Model, mt: &Matching, colls: &Collectives) -> Analysis {
    let n = m.ranks.len();
    let ranks: Vec<usize> = (0..n).collect();
    let mut coll_waits: Vec<Vec<Wait>> = vec![Vec::new(); n];
    for inst in &colls.instances {
        let Some(kind) = PatternKind::of_coll(inst.kind) else { continue };
        for mb in &colls.members[inst.first as usize..(inst.first + inst.n) as usize] {
            if mb.wait <= 0 || mb.cause < 0 {
                continue;
            }
            let c = &m.ranks[mb.rank as usize].colls[mb.idx as usize];
            let call = if c.done != NONE { c.done } else { c.post };
            coll_waits[mb.rank as usize].push(Wait {
                kind,
                call,
                time: mb.wait,
                cause: mb.cause as u32,
                until: mb.wait_from(m) + mb.wait,
            });
        }
    }
    let per_rank: Vec<RankWaits> = par_map(&ranks, |&r| rank_waits(m, mt, r, &coll_waits[r]));
    drop(coll_waits);
    let mut out = Analysis {
        causes: Vec::with_capacity(n),
        worst: vec![Vec::new(); PatternKind::ALL.len()],
        ..Default::default()
    };
    struct Acc {
        time: i64,
        count: u64,
        by_rank: Vec<i64>,
        by_cause: Vec<i64>,
        sites: FastMap<(u16, i64), SiteAcc>,
    }
    let mut acc: Vec<Acc> = PatternKind::ALL
        .iter()
        .map(|_| Acc { time: 0, count: 0, by_rank: vec![0; n], by_cause: vec![0; n], sites: FastMap::default() })
        .collect();
    for (rank, rw) in per_rank.into_iter().enumerate() {
        for (k, &(time, count)) in rw.totals.iter().enumerate() {
            let a = &mut acc[k];
            a.time += time;
            a.count += count;
            a.by_rank[rank] += time;
        }
        for ((k, cause), time) in rw.by_cause {
            if let Some(x) = acc[k as usize].by_cause.get_mut(cause as usize) {
                *x += time;
            }
        }
        for ((k, name, key), (time, count, site)) in rw.sites {
            let e = acc[k as usize].sites.entry((name, key)).or_insert((0, 0, site, Vec::new()));
            e.0 += time;
            e.1 += count;
            e.3.push(rank as u32);
        }
        out.causes.push(rw.causes);
        for (k, w) in rw.worst.into_iter().enumerate() {
            out.worst[k].extend(w);
            if out.worst[k].len() > 4 * WORST {
                keep_worst(&mut out.worst[k]);
            }
        }
    }
    out.worst.iter_mut().for_each(keep_worst);
    for (kind, a) in PatternKind::ALL.iter().zip(acc) {
        let mut sites: Vec<SiteWait> = a
            .sites
            .iter()
            .map(|((name, _), (t, cnt, site, ranks))| SiteWait {
                call: m.name(*name).to_string(),
                site: m.site_label(*site),
                module: m.site_module_label(*site),
                location: m.site_location(*site).cloned(),
                time_ns: *t,
                count: *cnt,
                ranks: ranks.len(),
            })
            .collect();
        sites.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(a.site.cmp(&b.site)));
        sites.truncate(TOP);
        out.states.total_ns += a.time;
        out.states.patterns.push(Pattern {
            kind: *kind,
            name: kind.title().to_string(),
            time_ns: a.time,
            count: a.count,
            by_rank: a.by_rank,
            by_cause: a.by_cause,
            sites,
        });
    }
    out
}

#[cfg(test)]
mod worst_tests {
    use super::*;

    /// Selecting then sorting keeps exactly what a full sort would.
    #[test]
    fn keep_worst_keeps_the_largest_in_order() {
        let mut v: Vec<WaitInstance> = (0..2_500u32)
            .map(|i| WaitInstance {
                kind: PatternKind::LateSender,
                rank: i % 7,
                call: i,
                time_ns: ((i as i64 * 7_919) % 1_009) * 10,
                cause: 0,
                until: 0,
            })
            .collect();
        let mut all = v.clone();
        all.sort_by_key(|w| (std::cmp::Reverse(w.time_ns), w.rank, w.call));
        all.truncate(WORST);
        keep_worst(&mut v);
        assert_eq!(v, all);
    }
}
