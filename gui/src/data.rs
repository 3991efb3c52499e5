//! The trace as the desktop viewer holds it.
//!
//! The viewer core ([`trace_view::Loader`]) loads it in the background:
//! the level of detail ([`trace_lod::Lod`]) first, so the timeline is
//! drawn as soon as it is there, then the analyses ([`analyzers::report`]),
//! which add message arrows, collective instances, details and the side
//! views ([`Analysed`]).
//!
//! Times in the viewer are the trace's own (those of the level of detail);
//! the analyses may shift whole ranks to correct clock violations, and
//! [`Analysed::to_trace`] maps their times back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use analyzers::matching::MsgRef;
use analyzers::model::NONE;
use analyzers::report::Analyses;
use trace_lod::messages::{MessageIndex, Msg};
use trace_lod::Lod;
use trace_view::messages::{clock_shift, ends_of_call, model_call, regions, MessageView};
use trace_view::{CriticalPathView, ThreadLanes, WorstWaits};

/// A collective instance as drawn: its members' arrivals and ends in trace
/// time.
#[derive(Clone, Debug, PartialEq)]
pub struct CollSpan {
    /// Index into the analyses' collective instances.
    pub instance: u32,
    pub name: u16,
    /// Earliest arrival and latest end over the members, trace time.
    pub t0: i64,
    pub t1: i64,
    /// (rank, arrival, end), trace time, sorted by rank.
    pub members: Vec<(i32, i64, i64)>,
}

pub use analyzers::model::Region;
pub use trace_view::guarded;

/// The analyses and the indexes the viewer needs from them.
pub struct Analysed {
    pub an: Analyses,
    /// Matched messages in trace time; `Msg::id` indexes [`Analysed::ends`].
    pub messages: MessageIndex,
    /// The send and receive of each message.
    pub ends: Vec<(MsgRef, MsgRef)>,
    /// Each message as drawn, by id.
    pub msgs: Vec<Msg>,
    /// Per rank, per receive: the id of its message (`NONE` if unmatched
    /// or never completed).
    msg_of_recv: Vec<Vec<u32>>,
    /// Collective instances sorted by `t0`.
    pub colls: Vec<CollSpan>,
    /// Longest `t1 - t0` of `colls`.
    longest_coll: i64,
    /// Per world rank: its user regions, sorted by start.
    pub regions: Vec<Vec<Region>>,
    /// The report's critical path per rank, in trace time.
    pub critical: CriticalPathView,
    /// The worst instances of every wait state, worst first.
    pub worst: WorstWaits,
    /// One lane per thread of the ranks that called MPI from several.
    pub threads: ThreadLanes,
    pub elapsed: Duration,
}

impl Analysed {
    pub fn new(an: Analyses, elapsed: Duration) -> Analysed {
        let m = &an.model;
        let shift = |r: u32| clock_shift(m, r as i32);
        let MessageView { msgs, ends } = MessageView::new(&an);
        let mut msg_of_recv: Vec<Vec<u32>> = m.ranks.iter().map(|r| vec![NONE; r.recvs.len()]).collect();
        for (id, (_, d)) in ends.iter().enumerate() {
            if let Some(x) = msg_of_recv.get_mut(d.rank as usize).and_then(|v| v.get_mut(d.idx as usize)) {
                *x = id as u32;
            }
        }
        let c = &an.collectives;
        let mut colls: Vec<CollSpan> = c
            .instances
            .iter()
            .enumerate()
            .map(|(i, inst)| {
                let mut members: Vec<(i32, i64, i64)> = c.members[inst.first as usize..(inst.first + inst.n) as usize]
                    .iter()
                    .map(|mb| (mb.rank as i32, mb.arrival - shift(mb.rank), mb.end - shift(mb.rank)))
                    .collect();
                members.sort_unstable();
                let t0 = members.iter().map(|x| x.1).min().unwrap_or(0);
                let t1 = members.iter().map(|x| x.2).max().unwrap_or(t0);
                CollSpan { instance: i as u32, name: inst.name, t0, t1, members }
            })
            .collect();
        colls.sort_by_key(|s| (s.t0, s.instance));
        let longest_coll = colls.iter().map(|s| s.t1 - s.t0).max().unwrap_or(0);
        let regions = regions(m);
        Analysed {
            critical: CriticalPathView::new(&an),
            worst: WorstWaits::new(&an),
            threads: ThreadLanes::new(&an),
            messages: MessageIndex::new(msgs.iter().copied()),
            msgs,
            ends,
            msg_of_recv,
            colls,
            longest_coll,
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
    pub fn to_trace(&self, rank: i32, t: i64) -> i64 {
        t - self.shift(rank)
    }

    /// The collective instances overlapping `[t0, t1)`.
    pub fn colls_in(&self, t0: i64, t1: i64) -> impl Iterator<Item = &CollSpan> + '_ {
        let a = self.colls.partition_point(|s| s.t0 < t0.saturating_sub(self.longest_coll));
        self.colls[a..].iter().take_while(move |s| s.t0 < t1).filter(move |s| s.t1 >= t0)
    }

    /// Number of collective instances starting in `[t0, t1)`.
    pub fn count_colls(&self, t0: i64, t1: i64) -> usize {
        self.colls.partition_point(|s| s.t0 < t1).saturating_sub(self.colls.partition_point(|s| s.t0 < t0))
    }

    /// The model's call of `rank` starting at trace time `t` named `name`.
    pub fn model_call(&self, rank: i32, t: i64, name: &str) -> Option<u32> {
        model_call(&self.an.model, rank, t, name)
    }

    /// The messages (indexes into [`Analysed::ends`]) sent or received by
    /// call `call` of `rank` (posted or completed by it).
    pub fn messages_of(&self, rank: i32, call: u32) -> Vec<usize> {
        let Some(r) = self.an.model.ranks.get(rank as usize) else { return Vec::new() };
        let mt = &self.an.matching;
        let mut out = Vec::new();
        for i in ends_of_call(&r.sends, call) {
            let Some(d) = mt.send_to_recv.get(rank as usize).and_then(|v| v.get(i)).filter(|d| d.is_some()) else {
                continue;
            };
            out.extend(
                self.msg_of_recv
                    .get(d.rank as usize)
                    .and_then(|v| v.get(d.idx as usize))
                    .filter(|&&id| id != NONE)
                    .map(|&id| id as usize),
            );
        }
        for i in ends_of_call(&r.recvs, call) {
            out.extend(
                self.msg_of_recv
                    .get(rank as usize)
                    .and_then(|v| v.get(i))
                    .filter(|&&id| id != NONE)
                    .map(|&id| id as usize),
            );
        }
        out
    }

    /// `on` with its communicator id (trace-wide, as reports show it)
    /// turned into the model's index of that communicator (an index no
    /// operation has if the trace has no such communicator).
    pub fn resolve(&self, on: crate::filter::On) -> crate::filter::On {
        let comms = &self.an.model.comms;
        let comm = on.comm.map(|id| {
            comms.iter().position(|c| c.id == id as u64).map(|i| i as u32).unwrap_or(crate::filter::NO_SUCH_COMM)
        });
        crate::filter::On { comm, ..on }
    }

    /// Whether message `id` is on the communicator and has the tag `on`
    /// asks for (every message when it asks for neither); `on` resolved
    /// with [`Analysed::resolve`].
    pub fn message_kept(&self, id: usize, on: crate::filter::On) -> bool {
        if !on.any() {
            return true;
        }
        let Some((s, _)) = self.ends.get(id) else { return false };
        let p = self.an.model.ranks.get(s.rank as usize).and_then(|r| r.sends.get(s.idx as usize));
        p.is_some_and(|p| on.keeps_p2p(p.comm, p.tag))
    }

    /// Whether collective instance `instance` is kept by `on` (resolved).
    pub fn coll_kept(&self, instance: u32, on: crate::filter::On) -> bool {
        !on.any() || self.an.collectives.instances.get(instance as usize).is_some_and(|i| on.keeps_coll(i.comm))
    }

    /// The message with id `id` as drawn.
    pub fn message(&self, id: usize) -> Option<Msg> {
        self.msgs.get(id).copied()
    }

    /// Start (trace time) and name of the call that completed the receive
    /// or posted the send of message `id`: `(rank, t_start, name)`.
    pub fn partner_call(&self, id: usize, of_send: bool) -> Option<(i32, i64, String)> {
        let (s, d) = *self.ends.get(id)?;
        let m = &self.an.model;
        let (q, call) = if of_send {
            let r = &m.ranks[d.rank as usize];
            let p = &r.recvs.at(d.idx as usize);
            (d, if p.done != NONE { p.done } else { p.post })
        } else {
            (s, m.ranks[s.rank as usize].sends.at(s.idx as usize).post)
        };
        let c = m.ranks[q.rank as usize].calls.get(call as usize)?;
        Some((q.rank as i32, self.to_trace(q.rank as i32, c.t_start), m.name(c.name).to_string()))
    }
}

/// An open trace (cheap to clone: the data is shared).
#[derive(Clone)]
pub struct Trace {
    pub dir: PathBuf,
    pub lod: Arc<Lod>,
    pub analysed: Option<Arc<Analysed>>,
    /// Why the analyses failed, if they did.
    pub analysis_error: Option<String>,
}

impl Trace {
    /// A trace of level of detail `lod`, analyses to come.
    pub fn new(lod: Lod) -> Trace {
        Trace { dir: lod.dir.clone(), lod: Arc::new(lod), analysed: None, analysis_error: None }
    }

    /// Opens `dir` synchronously (tests, benchmarks).
    pub fn open(dir: &Path) -> Result<Trace, String> {
        let opened = trace_view::load_now(dir)?;
        let mut t = Trace::new(opened.lod);
        match opened.analyses {
            Ok((an, elapsed)) => t.analysed = Some(Arc::new(Analysed::new(an, elapsed))),
            Err(e) => t.analysis_error = Some(e),
        }
        Ok(t)
    }

    /// Everything that was missing or damaged, one line each.
    pub fn problems(&self) -> Vec<String> {
        let mut out = self.lod.problems.clone();
        if let Some(n) = &self.lod.cache_note {
            out.push(n.clone());
        }
        if let Some(e) = &self.analysis_error {
            out.push(format!("analyses: {e}"));
        }
        if let Some(a) = &self.analysed {
            out.extend(a.an.model.problems.iter().map(|p| p.what.clone()));
        }
        out
    }
}

/// Something the loader finished.
pub type Loaded = trace_view::Loaded<Analysed>;

/// The background loader of one trace.
pub type Loader = trace_view::Loader<Analysed>;

/// Starts loading `dir`: the level of detail, then the analyses.
pub fn start_loader(dir: &Path) -> Loader {
    Loader::start(dir, Analysed::new)
}
