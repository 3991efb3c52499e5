//! Correctness checks of a trace (`mpitrace check --correctness`): errors
//! in the program's use of MPI that the run survived. The rules, each with
//! an example, are in `analyzers/CHECKS.md`:
//!
//! - `collective-mismatch`: the members of one collective instance called
//!   different operations, or gave different roots, reduction operations,
//!   counts or type signatures (gathers, scatters and all-to-alls
//!   pairwise: what one rank sends another against what that one
//!   receives);
//! - `type-mismatch`: a message whose receive's type signature differs
//!   from its send's (`MPI_DOUBLE` received as `MPI_INT`, a vector of 3
//!   doubles received as 6 ints), derived datatypes included;
//! - `truncation`: a receive too small for its message;
//! - `unsafe-send-cycle`: blocking standard sends that completed only
//!   because the library buffered them (a replay of the point-to-point
//!   calls without buffering deadlocks);
//! - `any-source-race`: `MPI_ANY_SOURCE` receives that matched one
//!   sender's message while another sender's message was pending for them
//!   too (the match depended on timing);
//! - `request-not-completed`: requests started and neither completed nor
//!   freed when the rank called `MPI_Finalize`;
//! - `request-overwritten`: a request variable given to a nonblocking call
//!   while it held an active request, which was then never completed;
//! - `communicator-not-freed`, `group-not-freed`, `datatype-not-freed`,
//!   `window-not-freed`, `file-not-closed`, `info-not-freed`: objects made
//!   and not freed when the rank called `MPI_Finalize`;
//! - `send-buffer-modified` (traces recorded with `--check-buffers`): the
//!   buffer of a nonblocking send or the send buffer of a nonblocking
//!   collective written to before the operation completed.

mod objects;
mod types;

use std::collections::{BTreeMap, HashMap};

use trace_format::record::Kind;
use trace_format::{Event, Trace};

use crate::check::Outcome;
use crate::hang::{comm_label, compare_calls, short};
use crate::live::{base_name, is_collective, Tracker};

/// The rules, in the order they are reported.
pub const RULES: [&str; 14] = [
    "collective-mismatch",
    "type-mismatch",
    "truncation",
    "unsafe-send-cycle",
    "any-source-race",
    "request-not-completed",
    "request-overwritten",
    "communicator-not-freed",
    "group-not-freed",
    "datatype-not-freed",
    "window-not-freed",
    "file-not-closed",
    "info-not-freed",
    "send-buffer-modified",
];

/// Findings reported per rule at most (the count says how many more).
const MAX_PER_RULE: usize = 20;

/// Runs every rule on the trace: one failed outcome per finding, one
/// passed outcome per rule without any.
pub fn check(t: &Trace) -> Vec<Outcome> {
    let mut sym = trace_format::Symbolizer::new();
    let mut site = |rank: i32, e: &Event| -> String {
        let Some(a) = e.site else { return String::new() };
        let Some(m) = t.ranks.get(&rank).and_then(|r| r.meta.as_ref()) else { return String::new() };
        let s = sym.site(m, a);
        s.file_line().or(s.function).map(|s| format!(" at {}", short(&s))).unwrap_or_default()
    };
    let comms: HashMap<u64, trace_format::side::CommInfo> = t.comms.iter().map(|(k, v)| (*k, v.clone())).collect();
    let mut found: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    found.insert(RULES[0], collective_mismatches(t, &comms, &mut site));
    found.insert("type-mismatch", types::type_mismatches(t, &comms, &mut site));
    found.insert("truncation", types::truncations(t, &comms, &mut site));
    found.insert("unsafe-send-cycle", unsafe_send_cycles(t, &mut site));
    found.insert("any-source-race", any_source_races(t, &mut site));
    let left = leftovers(t, &comms, &mut site);
    found.insert("request-not-completed", left.requests);
    found.insert("request-overwritten", left.overwritten);
    found.insert("communicator-not-freed", left.comms);
    for (obj, list) in objects::objects_left(t, &mut site) {
        found.insert(obj.rule(), list);
    }
    found.insert("send-buffer-modified", objects::send_buffers_modified(t, &comms, &mut site));
    let mut out = Vec::new();
    for rule in RULES {
        let list = found.remove(rule).unwrap_or_default();
        if list.is_empty() {
            out.push(Outcome { rule: rule.into(), passed: true, message: "none found".into() });
            continue;
        }
        let n = list.len();
        for m in list.into_iter().take(MAX_PER_RULE) {
            out.push(Outcome { rule: rule.into(), passed: false, message: m });
        }
        if n > MAX_PER_RULE {
            out.push(Outcome {
                rule: rule.into(),
                passed: false,
                message: format!("... and {} more", n - MAX_PER_RULE),
            });
        }
    }
    out
}

pub(crate) type SiteFn<'a> = dyn FnMut(i32, &Event) -> String + 'a;

/// Collective instances (same communicator and sequence number) whose
/// members disagree.
fn collective_mismatches(
    t: &Trace,
    comms: &HashMap<u64, trace_format::side::CommInfo>,
    site: &mut SiteFn,
) -> Vec<String> {
    let mut inst: BTreeMap<(u64, i64), Vec<(i32, &Event)>> = BTreeMap::new();
    for (&r, rt) in &t.ranks {
        // `seq` of window and file calls is their handle, not an instance.
        let numbered = |e: &&Event| !e.call.starts_with("MPI_Win_") && !e.call.starts_with("MPI_File_");
        for e in rt.events.iter().filter(|e| is_collective(e)).filter(numbered) {
            if let (Some(c), Some(s)) = (e.comm, e.seq) {
                inst.entry((c, s)).or_default().push((r, e));
            }
        }
    }
    let types = types::Types::new(t);
    let mut out = Vec::new();
    for ((comm, seq), calls) in inst {
        let label = format!("collective #{seq} on {}", comm_label(comms, comm));
        let mut found = compare_calls(&label, &calls);
        if found.is_empty() {
            found.extend(types::collective_signatures(&label, &calls, &types, site));
        }
        if found.is_empty() {
            // These name the call sites of both sides themselves.
            let inter = comms.get(&comm).is_some_and(|c| c.inter);
            out.extend(types::collective_pairs(&label, &calls, &types, inter, site));
            continue;
        }
        for m in found {
            // Where each rank called it (the odd ones are named in `m`).
            let mut at: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for (r, e) in &calls {
                at.entry(site(*r, e)).or_default().push(*r);
            }
            let wheres: Vec<String> = at
                .into_iter()
                .filter(|(s, _)| !s.is_empty())
                .map(|(s, r)| format!("{}{s}", crate::hang::fmt_ranks(&r)))
                .collect();
            out.push(if wheres.is_empty() { m } else { format!("{m} (called by {})", wheres.join(", ")) });
        }
    }
    out
}

/// One blocking point-to-point step of a rank in the replay.
#[derive(Clone, Debug)]
enum Step<'a> {
    /// A blocking standard send (`MPI_Send`): completes when the receiver
    /// posted the receive (no buffering).
    Send { key: Key, ev: &'a Event },
    /// A send that does not wait (`MPI_Isend`, the send half of a
    /// send-receive, buffered and ready sends): posts its message.
    Post { key: Key },
    /// A receive posted without waiting (`MPI_Irecv`).
    PostRecv { key: Key },
    /// A blocking receive: completes when the message was posted.
    Recv { key: Key },
}

/// A message: (communicator, source, destination, tag, sequence number).
pub(crate) type Key = (u64, i32, i32, i32, i64);

/// The point-to-point steps of one rank (its first thread), in program
/// order. Receives of nonblocking requests take their message from the
/// request's completion row.
fn steps(rank: i32, events: &[Event]) -> Vec<Step<'_>> {
    let key_of = |e: &Event, src: i32, dst: i32| -> Option<Key> { Some((e.comm?, src, dst, e.tag?, e.seq?)) };
    // Request handle -> the message its completion received, for the
    // receives started at row i (handles are reused: the first completion
    // after the start).
    let mut irecv_key: HashMap<usize, Key> = HashMap::new();
    let mut open: HashMap<i32, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate().filter(|(_, e)| e.thread == 0) {
        match (e.kind, base_name(&e.call), e.request) {
            (Kind::Call, "MPI_Irecv", Some(r)) => {
                open.insert(r, i);
            }
            (Kind::Completion, "MPI_Irecv", Some(r)) => {
                if let (Some(at), Some(p)) = (open.remove(&r), e.peer) {
                    if let Some(k) = key_of(e, p, rank) {
                        irecv_key.insert(at, k);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate().filter(|(_, e)| e.thread == 0) {
        let name = base_name(&e.call);
        let peer = e.peer.filter(|&p| p >= 0);
        match (e.kind, name, peer) {
            (Kind::Call, "MPI_Send", Some(p)) => {
                if let Some(key) = key_of(e, rank, p) {
                    out.push(Step::Send { key, ev: e });
                }
            }
            (
                Kind::Call,
                "MPI_Isend" | "MPI_Ibsend" | "MPI_Issend" | "MPI_Irsend" | "MPI_Bsend" | "MPI_Rsend",
                Some(p),
            )
            | (Kind::Call, "MPI_Sendrecv" | "MPI_Sendrecv_replace" | "MPI_Ssend", Some(p)) => {
                if let Some(key) = key_of(e, rank, p) {
                    out.push(Step::Post { key });
                }
            }
            (Kind::Call, "MPI_Recv", Some(p))
            | (Kind::Completion, "MPI_Sendrecv" | "MPI_Sendrecv_replace", Some(p)) => {
                if let Some(key) = key_of(e, p, rank) {
                    out.push(Step::Recv { key });
                }
            }
            (Kind::Call, "MPI_Irecv", _) => {
                if let Some(&key) = irecv_key.get(&i) {
                    out.push(Step::PostRecv { key });
                }
            }
            _ => {}
        }
    }
    out
}

/// Replays every rank's point-to-point steps with no buffering at all: a
/// standard send completes only when its receive is posted. Ranks that
/// then stop at sends waiting for each other in a cycle completed only
/// because the library buffered their messages.
fn unsafe_send_cycles(t: &Trace, site: &mut SiteFn) -> Vec<String> {
    let ranks: Vec<(i32, Vec<Step>)> = t.ranks.iter().map(|(&r, rt)| (r, steps(r, &rt.events))).collect();
    let mut at = vec![0usize; ranks.len()];
    let index: HashMap<i32, usize> = ranks.iter().enumerate().map(|(i, (r, _))| (*r, i)).collect();
    let mut sent: std::collections::HashSet<Key> = Default::default();
    let mut posted_recv: std::collections::HashSet<Key> = Default::default();
    loop {
        let mut moved = false;
        for i in 0..ranks.len() {
            while let Some(step) = ranks[i].1.get(at[i]) {
                let ok = match step {
                    Step::Post { key } => {
                        sent.insert(*key);
                        true
                    }
                    Step::PostRecv { key } => {
                        posted_recv.insert(*key);
                        true
                    }
                    Step::Recv { key } => {
                        sent.contains(key) || {
                            // The sender is at this very send: both complete.
                            let s = index.get(&key.1).copied();
                            s.and_then(|s| ranks[s].1.get(at[s]))
                                .is_some_and(|st| matches!(st, Step::Send { key: k, .. } if k == key))
                        }
                    }
                    Step::Send { key, .. } => {
                        posted_recv.contains(key) || {
                            let d = index.get(&key.2).copied();
                            d.and_then(|d| ranks[d].1.get(at[d]))
                                .is_some_and(|st| matches!(st, Step::Recv { key: k } if k == key))
                        }
                    }
                };
                if !ok {
                    break;
                }
                match step {
                    Step::Send { key, .. } => {
                        sent.insert(*key);
                    }
                    Step::Recv { key } => {
                        posted_recv.insert(*key);
                    }
                    _ => {}
                }
                at[i] += 1;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    // Ranks stopped at a send, waiting for a rank stopped at a send: follow
    // the chain to find a cycle.
    let stuck_send = |i: usize| match ranks[i].1.get(at[i]) {
        Some(Step::Send { key, ev }) => Some((*key, *ev)),
        _ => None,
    };
    let mut out = Vec::new();
    let mut reported = std::collections::HashSet::new();
    for start in 0..ranks.len() {
        let mut path = Vec::new();
        let mut i = start;
        while let Some((key, _)) = stuck_send(i) {
            if let Some(pos) = path.iter().position(|&p| p == i) {
                let cycle: Vec<usize> = path[pos..].to_vec();
                let mut sorted: Vec<i32> = cycle.iter().map(|&c| ranks[c].0).collect();
                sorted.sort_unstable();
                if reported.insert(sorted) {
                    let parts: Vec<String> = cycle
                        .iter()
                        .map(|&c| {
                            let (k, ev) = stuck_send(c).expect("in the cycle");
                            format!("rank {} in MPI_Send(to {}, tag {}){}", ranks[c].0, k.2, k.3, site(ranks[c].0, ev))
                        })
                        .collect();
                    out.push(format!(
                        "{}: each sends before it receives, so these sends completed only because MPI buffered them \
                         (with MPI_Ssend or larger messages they deadlock)",
                        parts.join(", ")
                    ));
                }
                break;
            }
            path.push(i);
            match index.get(&key.2) {
                Some(&d) => i = d,
                None => break,
            }
        }
    }
    out
}

/// What ranks that finalized left at `MPI_Finalize`.
#[derive(Default)]
struct Left {
    /// Requests neither completed nor freed.
    requests: Vec<String>,
    /// Of those, the ones whose variable got another request meanwhile.
    overwritten: Vec<String>,
    /// Communicators not freed.
    comms: Vec<String>,
}

/// Requests and communicators of ranks that finalized, left at `MPI_Finalize`.
fn leftovers(t: &Trace, comms: &HashMap<u64, trace_format::side::CommInfo>, site: &mut SiteFn) -> Left {
    let mut out = Left::default();
    for (&r, rt) in &t.ranks {
        let mut tr = Tracker::new(r);
        let mut created: BTreeMap<u64, &Event> = BTreeMap::new();
        // Active request handle -> the call that was given its variable
        // (the shim puts the handle the variable held in `aux`).
        let mut overwritten: HashMap<i32, &Event> = HashMap::new();
        let mut finalized = false;
        for e in &rt.events {
            if e.kind == Kind::Call && base_name(&e.call) == "MPI_Finalize" {
                finalized = true;
                break;
            }
            let partitioned = matches!(base_name(&e.call), "MPI_Psend_init" | "MPI_Precv_init");
            if let (Kind::Call, Some(_), Some(old), false) = (e.kind, e.request, e.aux, partitioned) {
                if tr.pending.contains_key(&old) {
                    overwritten.insert(old, e);
                }
            }
            tr.apply(e);
            // A request whose `MPI_Wait`/`MPI_Test` failed (a truncated
            // receive) is complete and freed all the same, with no
            // completion row.
            if let (Kind::Call, "MPI_Wait" | "MPI_Test", Some(h)) = (e.kind, base_name(&e.call), e.request) {
                if e.rc.is_some_and(|rc| rc != 0) {
                    tr.pending.remove(&h);
                }
            }
            if e.kind != Kind::Call || e.rc != Some(0) {
                continue;
            }
            if let Some(id) = e.new_comm {
                created.insert(id, e);
            }
            if matches!(base_name(&e.call), "MPI_Comm_free" | "MPI_Comm_disconnect") {
                if let Some(c) = e.comm {
                    created.remove(&c);
                }
            }
        }
        if !finalized {
            continue;
        }
        let mut pending: Vec<(&i32, &Event)> = tr.pending.iter().collect();
        pending.sort_by_key(|(_, e)| e.t_start);
        for (h, e) in pending {
            let d = crate::hang::describe(e, comms);
            match overwritten.get(h) {
                Some(by) => out.overwritten.push(format!(
                    "rank {r}: the request of {d}{} was lost: its variable was given to {}{} while the request \
                     was active, and it was never completed",
                    site(r, e),
                    by.call,
                    site(r, by)
                )),
                None => out
                    .requests
                    .push(format!("rank {r}: the request of {d}{} was neither completed nor freed", site(r, e))),
            }
        }
        for (id, e) in created {
            out.comms.push(format!(
                "rank {r}: communicator {} made by {}{} was not freed",
                comm_label(comms, id),
                e.call,
                site(r, e)
            ));
        }
    }
    out
}

/// Wildcard receives (`MPI_ANY_SOURCE`) that matched a message while a
/// message of another sender, which a later receive of the same rank took,
/// had been sent already: which one matched depended on timing.
fn any_source_races(t: &Trace, site: &mut SiteFn) -> Vec<String> {
    // Every send's message and when it was sent (reference clock).
    let mut sends: HashMap<(u64, i32, i32), Vec<(i64, Key)>> = HashMap::new();
    for (&r, rt) in &t.ranks {
        for e in rt.events.iter().filter(|e| e.kind == Kind::Call && crate::live::is_send(&e.call)) {
            if let (Some(c), Some(p), Some(tag), Some(seq)) = (e.comm, e.peer.filter(|&p| p >= 0), e.tag, e.seq) {
                sends.entry((c, p, tag)).or_default().push((e.t_start, (c, r, p, tag, seq)));
            }
        }
    }
    let mut out = Vec::new();
    for (&d, rt) in &t.ranks {
        // When each message to this rank was received; and the wildcard
        // receives, with their call rows (for the site).
        let mut received: HashMap<Key, i64> = HashMap::new();
        let mut wild: Vec<(i64, Key, &Event)> = Vec::new();
        let mut irecv_wild: HashMap<i32, &Event> = HashMap::new();
        for e in &rt.events {
            let name = base_name(&e.call);
            let any = match (e.kind, name) {
                (Kind::Call, "MPI_Irecv") => {
                    if let (Some(r), Some(-2)) = (e.request, e.peer) {
                        irecv_wild.insert(r, e);
                    }
                    continue;
                }
                (Kind::Call, "MPI_Recv") => (e.aux == Some(-2)).then_some(()),
                (Kind::Completion, "MPI_Irecv" | "MPI_Sendrecv" | "MPI_Sendrecv_replace") => None,
                _ => continue,
            };
            let (Some(c), Some(s), Some(tag), Some(seq), Some(t_done)) =
                (e.comm, e.peer.filter(|&p| p >= 0), e.tag, e.seq, e.t_end)
            else {
                continue;
            };
            let key = (c, s, d, tag, seq);
            received.insert(key, t_done);
            let posted = match (e.kind, any) {
                (Kind::Call, Some(_)) => Some(e),
                (Kind::Completion, _) => e.request.and_then(|r| irecv_wild.remove(&r)),
                _ => None,
            };
            if let Some(p) = posted {
                wild.push((t_done, key, p));
            }
        }
        for (t_done, key, call) in wild {
            let (c, s, _, tag, _) = key;
            let rival =
                sends.get(&(c, d, tag)).into_iter().flatten().find(|(t_sent, k)| {
                    k.1 != s && *t_sent < t_done && received.get(k).is_none_or(|&got| got > t_done)
                });
            if let Some((_, k)) = rival {
                out.push(format!(
                    "rank {d}: {}(from any, tag {tag}){} matched the message of rank {s} while one of rank {} was \
                     pending too: which one it gets depends on timing",
                    call.call,
                    site(d, call),
                    k.1
                ));
            }
        }
    }
    out
}
