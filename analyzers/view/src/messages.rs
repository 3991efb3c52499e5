//! The analyses as a timeline sees them.
//!
//! Times in the viewers are the trace's own (those of the level of
//! detail). The analyses may shift whole ranks to remove clock violations
//! ([`analyzers::Model::clock_shift`]: model time = trace time + shift);
//! everything here is turned back into trace time.

use analyzers::matching::MsgRef;
use analyzers::model::{regions_of, Ends, Model, Region};
use analyzers::report::Analyses;
use trace_lod::messages::Msg;

/// The matched messages of the analyses as drawn: one [`Msg`] per message
/// whose receive completed, in trace time, with `Msg::id` its index here.
#[derive(Clone, Debug, Default)]
pub struct MessageView {
    /// Each message as drawn, by id.
    pub msgs: Vec<Msg>,
    /// The send and receive of each message, by id.
    pub ends: Vec<(MsgRef, MsgRef)>,
}

impl MessageView {
    pub fn new(an: &Analyses) -> MessageView {
        let m = &an.model;
        let mut view = MessageView::default();
        for x in an.matching.messages(m) {
            let Some(t_recv) = x.recv_end else { continue };
            let send = &m.ranks[x.send.rank as usize].sends.at(x.send.idx as usize);
            view.msgs.push(Msg {
                src: x.send.rank as i32,
                dst: x.recv.rank as i32,
                t_send: x.send_start - clock_shift(m, x.send.rank as i32),
                t_recv: t_recv - clock_shift(m, x.recv.rank as i32),
                bytes: send.bytes,
                tag: send.tag,
                id: view.ends.len() as u64,
            });
            view.ends.push((x.send, x.recv));
        }
        view
    }
}

/// Clock shift of `rank` (model time = trace time + shift; 0 for a rank
/// the model does not have).
pub fn clock_shift(m: &Model, rank: i32) -> i64 {
    usize::try_from(rank).ok().and_then(|r| m.clock_shift.get(r)).copied().unwrap_or(0)
}

/// The model's call of `rank` that starts at trace time `t` with name
/// `name` (the call the level of detail shows there).
pub fn model_call(m: &Model, rank: i32, t: i64, name: &str) -> Option<u32> {
    let r = m.ranks.get(usize::try_from(rank).ok()?)?;
    let want = t + clock_shift(m, rank);
    let first = r.calls.partition_point(|c| c.t_start < want);
    (first..r.calls.len())
        .take_while(|&j| r.calls.at(j).t_start == want)
        .find(|&j| m.name(r.calls.at(j).name) == name)
        .map(|j| j as u32)
}

/// The point-to-point ends (sends or receives of one rank, as indexes
/// into `ends`) posted or completed by call `call`.
pub fn ends_of_call(ends: &Ends, call: u32) -> Vec<usize> {
    let hi = ends.partition_point(|p| p.post <= call);
    let mut out: Vec<usize> = (ends.partition_point(|p| p.post < call)..hi).collect();
    // Completions by a Wait* come after their posts, usually shortly.
    out.extend((hi.saturating_sub(4096)..hi).filter(|&i| ends.done(i) == call && ends.post(i) != call));
    out
}

/// The user regions of each world rank, in trace time, sorted by start.
pub fn regions(m: &Model) -> Vec<Vec<Region>> {
    m.ranks
        .iter()
        .enumerate()
        .map(|(r, d)| regions_of(&d.regions, clock_shift(m, r as i32), d.span().map_or(0, |s| s.1)))
        .collect()
}
