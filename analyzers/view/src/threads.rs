//! One lane per thread for the ranks whose calls came from several
//! threads (`MPI_THREAD_MULTIPLE`): the level of detail holds one pyramid
//! per rank, where two threads' calls overlap; the analyses' model knows
//! each call's thread (its journal), so the lanes are built from it, as a
//! level of detail of their own in memory, once the analyses are there.

use analyzers::report::Analyses;
use trace_lod::{Lod, RankLod, RawCall};

use crate::messages::clock_shift;

/// Which end of a call a time is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    Start,
    End,
}

/// The thread lanes of a trace.
#[derive(Debug)]
pub struct ThreadLanes {
    /// One entry per lane (its `rank` field is the lane's index); call
    /// names are the model's ([`analyzers::Model::names`]).
    pub lod: Lod,
    /// Per world rank with two threads or more: (thread, lane), by thread.
    by_rank: Vec<Vec<(u16, usize)>>,
}

impl ThreadLanes {
    pub fn new(an: &Analyses) -> ThreadLanes {
        let m = &an.model;
        let names: Vec<String> = m.names.iter().map(|s| s.to_string()).collect();
        let mut lanes: Vec<(i32, Vec<RawCall>)> = Vec::new();
        let mut by_rank = vec![Vec::new(); m.ranks.len()];
        for (r, rd) in m.ranks.iter().enumerate() {
            // From the rank's table of call kinds (a dozen), not its calls:
            // a rank of one thread costs nothing here.
            let mut threads: Vec<u16> = (0..rd.calls.kinds() as u32).map(|k| rd.calls.kind_thread(k)).collect();
            threads.sort_unstable();
            threads.dedup();
            if threads.len() < 2 {
                continue;
            }
            let shift = clock_shift(m, r as i32);
            let first = lanes.len();
            for (k, &t) in threads.iter().enumerate() {
                by_rank[r].push((t, first + k));
                lanes.push(((first + k) as i32, Vec::new()));
            }
            for c in rd.calls.iter() {
                let k = threads.binary_search(&c.thread).unwrap_or(0);
                lanes[first + k].1.push(RawCall {
                    t_start: c.t_start - shift,
                    t_end: c.t_end - shift,
                    name: c.name,
                    flags: c.flags,
                    bytes: -1,
                });
            }
        }
        ThreadLanes { lod: Lod::from_calls(names, lanes), by_rank }
    }

    /// The lanes of world rank `rank` as (thread, lane), empty when it
    /// made calls from one thread only.
    pub fn of(&self, rank: i32) -> &[(u16, usize)] {
        usize::try_from(rank).ok().and_then(|r| self.by_rank.get(r)).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The lane of world rank `rank` whose thread was in a call at `t`:
    /// the one whose call starts at `t` (`Edge::Start`, a message's send)
    /// or ends there (`Edge::End`, its receive), else any running then.
    pub fn lane_at(&self, rank: i32, t: i64, edge: Edge) -> Option<usize> {
        let lanes = self.of(rank);
        let exact = lanes.iter().find(|&&(_, lane)| {
            let d = self.data(lane);
            match edge {
                Edge::Start => d.call_at(t).is_some_and(|c| d.call(c).t_start == t),
                Edge::End => d.call_at(t - 1).is_some_and(|c| d.call(c).t_end == t),
            }
        });
        exact.or_else(|| lanes.iter().find(|&&(_, lane)| self.data(lane).call_at(t).is_some())).map(|x| x.1)
    }

    /// Whether any rank has thread lanes.
    pub fn any(&self) -> bool {
        !self.lod.ranks.is_empty()
    }

    /// The level of detail of lane `lane`.
    pub fn data(&self, lane: usize) -> &RankLod {
        &self.lod.ranks[lane].data
    }

    /// The call of lane `lane` numbered `call`, as the index of the same
    /// call (same start and name) in `rank_data`, the level of detail of
    /// its whole rank, whose names are `rank_names`.
    pub fn rank_call(&self, lane: usize, call: usize, rank_data: &RankLod, rank_names: &Lod) -> Option<usize> {
        let c = self.data(lane).call(call);
        let name = self.lod.name(c.name);
        let want = rank_names.name_id(name)?;
        let from = rank_data.first_at(c.t_start);
        (from..rank_data.len())
            .take_while(|&i| rank_data.call(i).t_start == c.t_start)
            .find(|&i| rank_data.call(i).name == want)
    }
}
