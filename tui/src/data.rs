//! What the terminal makes of the analyses (panels, message lines,
//! collective instances, jumps), loaded in the background by the viewer
//! core ([`trace_view::Loader`]) after the level of detail.
//!
//! All times in the viewer are the trace's own (those of the level of
//! detail). The analyses may shift whole ranks to remove clock violations
//! ([`analyzers::Model::clock_shift`]); [`Analysed::raw`] maps their times
//! back.

use std::path::Path;
use std::time::Duration;

use analyzers::matching::MsgRef;
use analyzers::model::{Class, Ends, Region, NONE};
use analyzers::report::Analyses;
use trace_lod::messages::MessageIndex;
use trace_view::messages::{clock_shift, ends_of_call, model_call, regions, MessageView};
use trace_view::{CriticalPathView, ThreadLanes, WorstWaits};

use crate::view::View;

/// A receive that started before its matching send was posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LateSender {
    pub rank: i32,
    /// Start of the receiving (completing) call, trace time.
    pub t: i64,
    /// Time lost, ns.
    pub wait: i64,
    pub sender: i32,
    /// When the send was posted, trace time.
    pub t_send: i64,
    /// The receiving call (index into the model's calls of `rank`).
    pub call: u32,
}

/// The analyses and what the viewer derives from them.
pub struct Analysed {
    pub an: Analyses,
    /// Matched messages in trace time; `Msg::id` indexes `msg_refs`.
    pub messages: MessageIndex,
    /// (send, receive) of each message.
    pub msg_refs: Vec<(MsgRef, MsgRef)>,
    /// Sorted by time.
    pub late_senders: Vec<LateSender>,
    /// Collective instances with an arrival spread of at least
    /// `slow_threshold`, sorted by first arrival.
    pub slow_colls: Vec<u32>,
    pub slow_threshold: i64,
    /// Per rank, per collective call of the model: its instance.
    pub coll_instance: Vec<Vec<u32>>,
    /// Per world rank: its user regions, trace time.
    pub regions: Vec<RankRegions>,
    /// Whether any rank has user regions.
    pub has_regions: bool,
    /// The critical path of the report, per rank in trace time.
    pub critical: CriticalPathView,
    /// The worst instances of every wait state, worst first.
    pub worst: WorstWaits,
    /// One lane per thread of the ranks that called MPI from several.
    pub threads: ThreadLanes,
    pub elapsed: Duration,
}

/// Deepest nesting level of user regions the timeline looks at (bounds
/// the cost of a frame; deeper regions show as their ancestor).
pub const MAX_REGION_DEPTH: usize = 8;

/// The user regions of one rank (`mpitrace_region_begin`/`end`), in trace
/// time, by nesting depth. Within a depth the regions are sorted by start
/// and, since regions nest, do not overlap, so their ends are sorted too:
/// what lies in a time range is found by binary search.
#[derive(Clone, Debug, Default)]
pub struct RankRegions {
    pub depths: Vec<Vec<Region>>,
}

impl RankRegions {
    pub fn new(regions: Vec<Region>) -> RankRegions {
        let mut depths: Vec<Vec<Region>> = Vec::new();
        for r in regions {
            let d = r.depth as usize;
            if depths.len() <= d {
                depths.resize_with(d + 1, Vec::new);
            }
            depths[d].push(r);
        }
        for d in &mut depths {
            d.sort_by_key(|r| (r.t0, r.t1));
        }
        RankRegions { depths }
    }

    pub fn is_empty(&self) -> bool {
        self.depths.iter().all(|d| d.is_empty())
    }

    /// The region `(depth, index)`.
    pub fn get(&self, (depth, i): (u16, u32)) -> &Region {
        &self.depths[depth as usize][i as usize]
    }

    /// For each of `n` columns of view `v`, the innermost region that
    /// overlaps it, as `(depth, index)`. Costs about `n` binary searches
    /// per depth, whatever the number of regions.
    pub fn columns(&self, v: View, n: usize, out: &mut Vec<Option<(u16, u32)>>) {
        out.clear();
        out.resize(n, None);
        for (depth, regs) in self.depths.iter().enumerate().take(MAX_REGION_DEPTH) {
            let mut j = regs.partition_point(|r| r.t1 < v.t0);
            for (c, slot) in out.iter_mut().enumerate() {
                let (a, b) = (v.col_start(c, n), v.col_start(c + 1, n).max(v.col_start(c, n) + 1));
                if j < regs.len() && regs[j].t1 < a {
                    j += regs[j..].partition_point(|r| r.t1 < a);
                }
                match regs.get(j) {
                    Some(r) if r.t0 < b => *slot = Some((depth as u16, j as u32)),
                    Some(_) => {}
                    None => break,
                }
            }
        }
    }

    /// The regions running at `t`, outermost first.
    pub fn at(&self, t: i64) -> Vec<&Region> {
        let mut out = Vec::new();
        for regs in &self.depths {
            let j = regs.partition_point(|r| r.t1 < t);
            match regs.get(j) {
                Some(r) if r.t0 <= t => out.push(r),
                _ => {}
            }
        }
        out
    }
}

impl Analysed {
    /// Derives the viewer's indexes from the analyses.
    pub fn new(an: Analyses, elapsed: Duration) -> Analysed {
        let m = &an.model;
        let shift = |r: usize| clock_shift(m, r as i32);
        let MessageView { msgs, ends: msg_refs } = MessageView::new(&an);
        let mut late_senders = Vec::new();
        for (d, refs) in an.matching.recv_to_send.iter().enumerate() {
            let rd = &m.ranks[d];
            let mut best: std::collections::HashMap<u32, LateSender> = Default::default();
            for (i, s) in refs.iter().enumerate() {
                let recv = &rd.recvs.at(i);
                if !s.is_some() || recv.done == NONE {
                    continue;
                }
                let sr = &m.ranks[s.rank as usize];
                let t_send = sr.calls.at(sr.sends.at(s.idx as usize).post as usize).t_start;
                let c = &rd.calls.at(recv.done as usize);
                let wait = t_send.min(c.t_end) - c.t_start;
                if wait <= 0 {
                    continue;
                }
                let ls = LateSender {
                    rank: d as i32,
                    t: c.t_start - shift(d),
                    wait,
                    sender: s.rank as i32,
                    t_send: t_send - shift(s.rank as usize),
                    call: recv.done,
                };
                let e = best.entry(recv.done).or_insert(ls);
                if ls.wait > e.wait {
                    *e = ls;
                }
            }
            late_senders.extend(best.into_values());
        }
        late_senders.sort_by_key(|l| (l.t, l.rank));
        let colls = &an.collectives;
        let mut spreads: Vec<i64> = colls.instances.iter().map(|i| i.spread()).collect();
        spreads.sort_unstable();
        let slow_threshold = spreads.get(spreads.len() * 9 / 10).copied().unwrap_or(0).max(1);
        let mut slow: Vec<u32> = (0..colls.instances.len() as u32)
            .filter(|&i| colls.instances[i as usize].spread() >= slow_threshold)
            .collect();
        let first_raw = |i: u32| {
            let inst = &colls.instances[i as usize];
            let mb = &colls.members[inst.first as usize..(inst.first + inst.n) as usize];
            mb.iter().map(|x| x.arrival - shift(x.rank as usize)).min().unwrap_or(0)
        };
        slow.sort_by_key(|&i| first_raw(i));
        let mut coll_instance: Vec<Vec<u32>> = m.ranks.iter().map(|r| vec![NONE; r.colls.len()]).collect();
        for (i, inst) in colls.instances.iter().enumerate() {
            for mb in &colls.members[inst.first as usize..(inst.first + inst.n) as usize] {
                if let Some(x) = coll_instance.get_mut(mb.rank as usize).and_then(|v| v.get_mut(mb.idx as usize)) {
                    *x = i as u32;
                }
            }
        }
        let regions = regions(m).into_iter().map(RankRegions::new).collect::<Vec<RankRegions>>();
        Analysed {
            critical: CriticalPathView::new(&an),
            worst: WorstWaits::new(&an),
            threads: ThreadLanes::new(&an),
            has_regions: regions.iter().any(|r| !r.is_empty()),
            messages: MessageIndex::new(msgs),
            msg_refs,
            late_senders,
            slow_colls: slow,
            slow_threshold,
            coll_instance,
            regions,
            an,
            elapsed,
        }
    }

    /// Clock shift of `rank` (model time = trace time + shift).
    pub fn shift(&self, rank: i32) -> i64 {
        clock_shift(&self.an.model, rank)
    }
    /// A model time of `rank` in trace time.
    pub fn raw(&self, rank: i32, t: i64) -> i64 {
        t - self.shift(rank)
    }

    /// The model's call of `rank` that starts at trace time `t` with name
    /// `name` (the call the level of detail shows there).
    pub fn model_call(&self, rank: i32, t: i64, name: &str) -> Option<u32> {
        model_call(&self.an.model, rank, t, name)
    }

    /// Point-to-point ends (sends or receives) of `rank` posted or
    /// completed by call `call`, as indexes into `ends`.
    pub fn p2p_of(ends: &Ends, call: u32) -> Vec<usize> {
        ends_of_call(ends, call)
    }

    /// Collective calls (indexes into the model's `colls` of `rank`) posted
    /// or completed by `call`.
    pub fn colls_of(&self, rank: i32, call: u32) -> Vec<usize> {
        let Some(r) = self.an.model.ranks.get(rank as usize) else { return Vec::new() };
        let hi = r.colls.partition_point(|c| c.post <= call);
        let lo = hi.saturating_sub(256);
        (lo..hi).filter(|&i| r.colls[i].post == call || r.colls[i].done == call).collect()
    }

    /// The user regions of world rank `rank`, if it has any.
    pub fn regions_of(&self, rank: i32) -> Option<&RankRegions> {
        usize::try_from(rank).ok().and_then(|r| self.regions.get(r)).filter(|x| !x.is_empty())
    }

    /// Whether `name` is a point-to-point or collective operation.
    pub fn is_comm(&self, name: &str) -> bool {
        let c = analyzers::model::classify(name);
        c.is_p2p() || matches!(c, Class::Coll { .. } | Class::Wait)
    }
}

/// Something the background loader finished.
pub type Loaded = trace_view::Loaded<Analysed>;

/// The background loader.
pub type Loader = trace_view::Loader<Analysed>;

/// Starts loading `dir`: the level of detail, then the analyses.
pub fn start_loader(dir: &Path) -> Loader {
    Loader::start(dir, |an, elapsed| {
        if crate::term::test_hook("loader-panic") {
            panic!("{}=loader-panic: the analyses panic", crate::term::TEST_ENV);
        }
        Analysed::new(an, elapsed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(t0: i64, t1: i64, name: u16, depth: u16) -> Region {
        Region { t0, t1, name, depth }
    }

    /// The innermost region overlapping each column, found by looking at
    /// every region.
    fn brute(regs: &RankRegions, v: View, n: usize) -> Vec<Option<(u16, u32)>> {
        (0..n)
            .map(|c| {
                let (a, b) = (v.col_start(c, n), v.col_start(c + 1, n).max(v.col_start(c, n) + 1));
                let mut best = None;
                for (d, rs) in regs.depths.iter().enumerate() {
                    if let Some(j) = rs.iter().position(|r| r.t1 >= a && r.t0 < b) {
                        best = Some((d as u16, j as u32));
                    }
                }
                best
            })
            .collect()
    }

    #[test]
    fn columns_show_the_innermost_region() {
        // An outer region over everything, 20 000 short ones nested in it
        // (10 ns every 50 ns), and within every 100th of those a third level.
        let mut all = vec![region(0, 1_000_000, 0, 0)];
        for i in 0..20_000 {
            all.push(region(i * 50, i * 50 + 10, 1, 1));
            if i % 100 == 0 {
                all.push(region(i * 50 + 2, i * 50 + 5, 2, 2));
            }
        }
        all.push(region(1_000_100, 1_000_200, 3, 0));
        let regs = RankRegions::new(all);
        assert_eq!(regs.depths.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 20_000, 200]);
        let mut out = Vec::new();
        for (v, n) in [
            (View::new(-500, 1_100_000), 77),
            (View::new(0, 1000), 100),
            (View::new(4_990, 5_010), 20),
            (View::new(999_000, 1_000_300), 13),
        ] {
            regs.columns(v, n, &mut out);
            assert_eq!(out, brute(&regs, v, n), "{v:?} over {n}");
        }
        // Zoomed into one short region: it, then the outer one around it.
        regs.columns(View::new(100, 200), 10, &mut out);
        assert_eq!(out[0], Some((1, 2)));
        assert_eq!(out[3], Some((0, 0)));
        // At a time: outermost first.
        let names: Vec<u16> = regs.at(5_003).iter().map(|r| r.name).collect();
        assert_eq!(names, vec![0, 1, 2]);
        assert!(regs.at(1_000_050).is_empty());
    }
}
