//! Message matching: every send paired with its receive.
//!
//! The shim numbers the messages of every channel (communicator, source,
//! destination, tag) on both sides: the n-th send of a channel and the n-th
//! receive the receiver completed on it carry the same sequence number
//! (MPI's non-overtaking rule makes this exact, `ANY_SOURCE`/`ANY_TAG`
//! included, because receives are numbered by their actual source and tag).
//! A send and a receive match when (communicator, source, destination, tag,
//! sequence number) are equal. Where sequence numbers are missing, the n-th
//! send and the n-th receive of the channel in posting order are paired
//! (per-channel FIFO).
//!
//! A *clock violation* is a matched message whose receive completed before
//! its send started: impossible in reality, it shows the clocks of the two
//! ranks disagree. [`correct_clocks`] removes violations by shifting whole
//! ranks in time (see its documentation for the method).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::{Model, P2p, NONE};
use crate::{par_map, FastMap};

/// A send or receive: index into `ranks[rank].sends` or `.recvs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MsgRef {
    pub rank: u32,
    pub idx: u32,
}

impl MsgRef {
    pub const NONE: MsgRef = MsgRef { rank: NONE, idx: NONE };
    pub fn is_some(self) -> bool {
        self.rank != NONE
    }
}

/// A message that found no partner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unmatched {
    /// "send" or "receive".
    pub side: String,
    pub rank: i32,
    pub peer: i32,
    pub tag: i32,
    pub comm: String,
    pub seq: Option<u32>,
    pub bytes: i64,
    pub call: String,
    pub t: i64,
    /// Whether it ever completed.
    pub completed: bool,
}

/// A receive that ended before its send started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub sender: i32,
    pub receiver: i32,
    pub tag: i32,
    /// How much earlier the receive ended than the send started (ns).
    pub by_ns: i64,
}

/// What matching found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MatchSummary {
    pub sends: u64,
    pub receives: u64,
    pub matched: u64,
    pub unmatched_sends: u64,
    pub unmatched_receives: u64,
    /// Up to [`EXAMPLES`] of each side.
    pub unmatched: Vec<Unmatched>,
    pub clock_violations: u64,
    pub max_violation_ns: i64,
    /// The worst ones, up to [`EXAMPLES`].
    pub violations: Vec<Violation>,
}

/// How many examples to keep.
pub const EXAMPLES: usize = 10;

/// The pairing of all messages.
#[derive(Clone, Debug, Default)]
pub struct Matching {
    /// For each rank, for each receive: its send.
    pub recv_to_send: Vec<Vec<MsgRef>>,
    /// For each rank, for each send: its receive.
    pub send_to_recv: Vec<Vec<MsgRef>>,
    pub summary: MatchSummary,
    /// Per (sender, receiver): the largest (send start − receive end) over
    /// their messages; positive values are clock violations.
    pub pair_slack: HashMap<(u32, u32), i64>,
}

/// Dense ids of the channels (communicator, other side, tag) of one receiver.
#[derive(Default)]
struct Channels {
    map: FastMap<(u32, i32, i32), u32>,
    /// The last two channels seen (programs alternate between few).
    recent: [((u32, i32, i32), u32); 2],
}

impl Channels {
    fn id(&mut self, k: (u32, i32, i32)) -> u32 {
        if self.recent[0].1 != NONE && self.recent[0].0 == k {
            return self.recent[0].1;
        }
        if self.recent[1].1 != NONE && self.recent[1].0 == k {
            self.recent.swap(0, 1);
            return self.recent[0].1;
        }
        let n = self.map.len() as u32;
        let id = *self.map.entry(k).or_insert(n);
        self.recent[1] = self.recent[0];
        self.recent[0] = (k, id);
        id
    }
    fn len(&self) -> usize {
        self.map.len()
    }
}

/// Message ends of one side grouped by channel, each channel's in order of
/// sequence number (or of posting where the number is missing).
struct Grouped {
    /// Indices of the ends, channel after channel.
    order: Vec<u32>,
    /// `order[start[c]..start[c + 1]]` are the ends of channel `c`.
    start: Vec<u32>,
    /// Order key of each end (by original index): its sequence number, or
    /// 2^40 + its ordinal in the channel.
    seq: Vec<u64>,
}

/// Groups ends given as (index, channel id, sequence number or NONE): a
/// counting sort by channel (stable, so posting order is kept), then a sort
/// of any channel whose sequence numbers are not already in order.
fn group(ends: &[(u32, u32, u32)], len: usize, channels: usize) -> Grouped {
    let mut count = vec![0u32; channels + 1];
    let mut ordinal = vec![0u64; channels];
    let mut seq = vec![0u64; len];
    for &(i, c, sq) in ends {
        count[c as usize + 1] += 1;
        seq[i as usize] = if sq != NONE {
            sq as u64
        } else {
            ordinal[c as usize] += 1;
            (1u64 << 40) + ordinal[c as usize]
        };
    }
    for c in 0..channels {
        count[c + 1] += count[c];
    }
    let start = count.clone();
    let mut order = vec![0u32; ends.len()];
    for &(i, c, _) in ends {
        order[count[c as usize] as usize] = i;
        count[c as usize] += 1;
    }
    for c in 0..channels {
        let run = &mut order[start[c] as usize..start[c + 1] as usize];
        if !run.windows(2).all(|w| seq[w[0] as usize] <= seq[w[1] as usize]) {
            run.sort_by_key(|&i| seq[i as usize]);
        }
    }
    Grouped { order, start, seq }
}

struct PerReceiver {
    /// For each receive of the rank: its send.
    recv_to_send: Vec<MsgRef>,
    slack: FastMap<u32, i64>,
    violations: Vec<Violation>,
    count: u64,
    count_matched: u64,
}

/// Matches every send with its receive.
pub fn match_messages(m: &Model) -> Matching {
    let n = m.ranks.len();
    let all: Vec<usize> = (0..n).collect();
    // The sends to each receiver, by sender and then in the sender's
    // order: one counting sort of all sends (`to[start[d]..start[d + 1]]`
    // are receiver d's). Its cost follows the sends; a receiver never looks
    // at every sender (a trace may claim many ranks that sent nothing).
    let valid = |p: &crate::model::P2p| p.peer >= 0 && (p.peer as usize) < n;
    let mut start = vec![0usize; n + 1];
    for r in &m.ranks {
        for p in r.sends.iter().filter(valid) {
            start[p.peer as usize + 1] += 1;
        }
    }
    for d in 0..n {
        start[d + 1] += start[d];
    }
    let mut next = start.clone();
    let mut to = vec![MsgRef::NONE; start[n]];
    for (s, r) in m.ranks.iter().enumerate() {
        for (i, p) in r.sends.iter().enumerate().filter(|(_, p)| valid(p)) {
            to[next[p.peer as usize]] = MsgRef { rank: s as u32, idx: i as u32 };
            next[p.peer as usize] += 1;
        }
    }
    drop(next);
    let per: Vec<PerReceiver> = par_map(&all, |&d| {
        let rd = &m.ranks[d];
        let sends: &[MsgRef] = &to[start[d]..start[d + 1]];
        let mut ch = Channels { recent: [((0, 0, 0), NONE); 2], ..Default::default() };
        let send_ends: Vec<(u32, u32, u32)> = sends
            .iter()
            .enumerate()
            .map(|(i, sr)| {
                let p = &m.ranks[sr.rank as usize].sends.at(sr.idx as usize);
                (i as u32, ch.id((p.comm, sr.rank as i32, p.tag)), p.seq)
            })
            .collect();
        let recv_ends: Vec<(u32, u32, u32)> = rd
            .recvs
            .iter()
            .enumerate()
            .filter(|(_, p)| p.peer >= 0)
            .map(|(i, p)| (i as u32, ch.id((p.comm, p.peer, p.tag)), p.seq))
            .collect();
        let sg = group(&send_ends, sends.len(), ch.len());
        let rg = group(&recv_ends, rd.recvs.len(), ch.len());
        let mut out = PerReceiver {
            recv_to_send: vec![MsgRef::NONE; rd.recvs.len()],
            slack: FastMap::default(),
            violations: Vec::new(),
            count: 0,
            count_matched: 0,
        };
        for c in 0..ch.len() {
            let so = &sg.order[sg.start[c] as usize..sg.start[c + 1] as usize];
            let ro = &rg.order[rg.start[c] as usize..rg.start[c + 1] as usize];
            let (mut a, mut b) = (0, 0);
            let mut channel_slack = i64::MIN;
            while a < so.len() && b < ro.len() {
                let (ks, kr) = (sg.seq[so[a] as usize], rg.seq[ro[b] as usize]);
                match ks.cmp(&kr) {
                    std::cmp::Ordering::Less => a += 1,
                    std::cmp::Ordering::Greater => b += 1,
                    std::cmp::Ordering::Equal => {
                        let sref = sends[so[a] as usize];
                        out.recv_to_send[ro[b] as usize] = sref;
                        out.count_matched += 1;
                        let recv = &rd.recvs.at(ro[b] as usize);
                        let sr = &m.ranks[sref.rank as usize];
                        let send_start = sr.calls.t_start(sr.sends.post(sref.idx as usize) as usize);
                        if recv.done != NONE {
                            let recv_end = rd.calls.at(recv.done as usize).t_end;
                            let slack = send_start - recv_end;
                            channel_slack = channel_slack.max(slack);
                            if slack > 0 {
                                out.count += 1;
                                out.violations.push(Violation {
                                    sender: sref.rank as i32,
                                    receiver: d as i32,
                                    tag: recv.tag,
                                    by_ns: slack,
                                });
                                if out.violations.len() > 4 * EXAMPLES {
                                    out.violations.sort_by_key(|v| -v.by_ns);
                                    out.violations.truncate(EXAMPLES);
                                }
                            }
                        }
                        a += 1;
                        b += 1;
                    }
                }
            }
            if channel_slack != i64::MIN {
                // Every send of a channel comes from the same rank.
                let e = out.slack.entry(sends[so[0] as usize].rank).or_insert(i64::MIN);
                *e = (*e).max(channel_slack);
            }
        }
        out
    });
    drop((to, start));
    // The other direction: each send is matched at most once, so one pass
    // over the receives fills it (no second list of pairs is built).
    let mut send_to_recv: Vec<Vec<MsgRef>> = m.ranks.iter().map(|r| vec![MsgRef::NONE; r.sends.len()]).collect();
    for (d, p) in per.iter().enumerate() {
        for (ri, sref) in p.recv_to_send.iter().enumerate() {
            if sref.is_some() {
                send_to_recv[sref.rank as usize][sref.idx as usize] = MsgRef { rank: d as u32, idx: ri as u32 };
            }
        }
    }
    let mut res = Matching { send_to_recv, ..Default::default() };
    let s = &mut res.summary;
    for (d, p) in per.into_iter().enumerate() {
        s.matched += p.count_matched;
        res.recv_to_send.push(p.recv_to_send);
        for (src, slack) in p.slack {
            res.pair_slack.insert((src, d as u32), slack);
        }
        s.clock_violations += p.count;
        s.violations.extend(p.violations);
    }
    s.violations.sort_by_key(|v| -v.by_ns);
    s.violations.truncate(EXAMPLES);
    s.max_violation_ns = s.violations.first().map(|v| v.by_ns).unwrap_or(0);
    let mut ex_send = 0;
    let mut ex_recv = 0;
    for r in &m.ranks {
        s.sends += r.sends.len() as u64;
        s.receives += r.recvs.iter().filter(|p| p.peer >= 0).count() as u64;
        let unm = |side: &str, p: &P2p| Unmatched {
            side: side.into(),
            rank: r.rank,
            peer: p.peer,
            tag: p.tag,
            comm: m.comm_label(p.comm),
            seq: (p.seq != NONE).then_some(p.seq),
            bytes: p.bytes,
            call: m.name(r.calls.at(p.post as usize).name).to_string(),
            t: r.calls.t_start(p.post as usize),
            completed: p.done != NONE,
        };
        for (i, p) in r.sends.iter().enumerate() {
            if !res.send_to_recv[r.rank as usize][i].is_some() {
                s.unmatched_sends += 1;
                if ex_send < EXAMPLES {
                    ex_send += 1;
                    s.unmatched.push(unm("send", &p));
                }
            }
        }
        for (i, p) in r.recvs.iter().enumerate() {
            if p.peer >= 0 && !res.recv_to_send[r.rank as usize][i].is_some() {
                s.unmatched_receives += 1;
                if ex_recv < EXAMPLES {
                    ex_recv += 1;
                    s.unmatched.push(unm("receive", &p));
                }
            }
        }
    }
    res
}

/// What [`correct_clocks`] did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockCorrection {
    pub method: String,
    /// Time added to each rank (ns), indexed by rank.
    pub shift_ns: Vec<i64>,
    pub violations_before: u64,
    pub violations_after: u64,
    /// The constraints contradict each other (clock drift within the run):
    /// the correction stopped after `ranks` rounds and some violations stay.
    pub inconsistent: bool,
}

/// The method, as reported.
pub const METHOD: &str = "constant per-rank shift: the smallest non-negative offsets o[r] such that every matched \
message satisfies recv_end + o[dst] >= send_start + o[src] (longest paths in the graph of rank pairs, Bellman-Ford); \
drift within the run is not modelled";

/// Removes clock violations by shifting ranks in time.
///
/// Each matched message gives the constraint `o[dst] − o[src] ≥ send_start −
/// recv_end`; only pairs with a violation constrain anything, as offsets
/// start at zero. The smallest non-negative solution is the longest-path
/// potential of the pair graph, found with Bellman-Ford in at most `ranks`
/// rounds. A positive cycle (constraints that contradict each other, from
/// clock drift inside the run) stops it after `ranks` rounds with the
/// violations that remain counted. The shifts are applied to every time of
/// the rank in `m` and recorded in [`Model::clock_shift`].
pub fn correct_clocks(m: &mut Model, matching: &Matching) -> ClockCorrection {
    let n = m.ranks.len();
    let mut shift = vec![0i64; n];
    let mut edges: Vec<(usize, usize, i64)> =
        matching.pair_slack.iter().map(|(&(s, d), &w)| (s as usize, d as usize, w)).collect();
    edges.sort_unstable();
    let mut out = ClockCorrection {
        method: METHOD.into(),
        violations_before: matching.summary.clock_violations,
        ..Default::default()
    };
    if matching.summary.clock_violations > 0 {
        let mut changed = true;
        let mut rounds = 0;
        while changed && rounds <= n {
            changed = false;
            rounds += 1;
            for &(s, d, w) in &edges {
                if shift[s] + w > shift[d] {
                    shift[d] = shift[s] + w;
                    changed = true;
                }
            }
        }
        out.inconsistent = changed;
        for (r, &o) in shift.iter().enumerate() {
            if o != 0 {
                m.ranks[r].calls.shift(o);
                for e in &mut m.ranks[r].regions {
                    e.t += o;
                }
            }
        }
        out.violations_after = count_violations(m, matching);
    }
    for (r, &o) in shift.iter().enumerate() {
        if let Some(x) = m.clock_shift.get_mut(r) {
            *x += o;
        }
    }
    out.shift_ns = shift;
    out
}

/// A matched message and its times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    pub send: MsgRef,
    pub recv: MsgRef,
    /// Start of the call that posted the send.
    pub send_start: i64,
    /// End of the call that completed the receive, if it completed.
    pub recv_end: Option<i64>,
}

impl Matching {
    /// Every matched message, receiver by receiver.
    pub fn messages<'a>(&'a self, m: &'a Model) -> impl Iterator<Item = Message> + 'a {
        self.recv_to_send.iter().enumerate().flat_map(move |(d, refs)| {
            let rd = &m.ranks[d];
            refs.iter().enumerate().filter(|(_, s)| s.is_some()).map(move |(i, &s)| {
                let recv = &rd.recvs.at(i);
                let sr = &m.ranks[s.rank as usize];
                Message {
                    send: s,
                    recv: MsgRef { rank: d as u32, idx: i as u32 },
                    send_start: sr.calls.t_start(sr.sends.post(s.idx as usize) as usize),
                    recv_end: (recv.done != NONE).then(|| rd.calls.at(recv.done as usize).t_end),
                }
            })
        })
    }
}

/// Number of matched messages whose receive ends before the send starts.
pub fn count_violations(m: &Model, matching: &Matching) -> u64 {
    matching.messages(m).filter(|x| x.recv_end.is_some_and(|e| e < x.send_start)).count() as u64
}
