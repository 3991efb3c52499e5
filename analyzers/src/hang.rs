//! Hang diagnosis: where each rank is, who waits for whom, and why.
//!
//! From the state of every rank ([`crate::live::Tracker`]: the call each
//! is in, its pending requests, its recent collectives) [`diagnose`]
//! builds the wait-for graph of the job:
//!
//! - a receive (or probe, or a wait on a receive request) waits for its
//!   source; from `MPI_ANY_SOURCE` for any member of the communicator;
//! - a send waits for its destination to receive (a rendezvous send blocks
//!   until then);
//! - a collective waits for the members of its communicator that have not
//!   entered the same instance (the shim numbers collectives per
//!   communicator); members that entered it with another operation, root,
//!   reduction or count are pointed out, as that is a hang of its own.
//!
//! Its cycles are deadlocks, said in words; a chain that ends at a rank
//! outside MPI (computing, dead or finished) names that rank. The same
//! works on a finished trace: the state when it ended.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use mpi_api::abi::{self, CType};
use serde::Serialize;
use trace_format::side::CommInfo;
use trace_format::Event;

use crate::live::{base_name, is_collective, is_polling, is_receive, is_send, Proc, Tracker};

/// The state of one rank handed to [`diagnose`].
pub struct RankState<'a> {
    pub rank: i32,
    pub track: &'a Tracker,
    pub proc: Proc,
    /// "Now" on the reference clock (ns), for the age of calls, if known.
    pub now: Option<i64>,
    pub host: Option<String>,
    pub pid: Option<u32>,
}

/// One operation a rank waits for.
#[derive(Clone, Debug, Serialize)]
pub struct Op {
    pub call: String,
    /// `MPI_Recv(from 1, tag 7)`.
    pub describe: String,
    pub comm: Option<String>,
    pub comm_id: Option<u64>,
    /// Peer as world rank (source of a receive, destination of a send); -2
    /// for `MPI_ANY_SOURCE`.
    pub peer: Option<i32>,
    pub root: Option<i32>,
    pub tag: Option<i32>,
    pub count: Option<i64>,
    pub datatype: Option<String>,
    pub op: Option<String>,
    /// Collective instance number on the communicator.
    pub instance: Option<i64>,
    /// `file:line` of the call (or the function).
    pub site: Option<String>,
    /// Seconds since the call started.
    pub since_s: Option<f64>,
}

/// A rank in the report.
#[derive(Clone, Debug, Serialize)]
pub struct RankReport {
    pub rank: i32,
    /// `in_mpi`, `polling` (calls `MPI_Test`/`MPI_Iprobe` in a loop),
    /// `computing`, `dead`, `finished`, `ended` (the trace ended without
    /// it finalizing), `not_started`, `unknown`.
    pub state: String,
    pub process: Proc,
    pub host: Option<String>,
    pub pid: Option<u32>,
    /// The call the rank is in (or polls with).
    pub call: Option<Op>,
    /// What the call waits for: the call itself, or the requests a
    /// `MPI_Wait*` waits on.
    pub waits_on: Vec<Op>,
    /// Ranks it waits for (all of them), or any of them (`waits_for_any`).
    pub waits_for: Vec<i32>,
    pub waits_for_any: bool,
    /// The last call that returned, and where.
    pub last_call: Option<String>,
    pub last_site: Option<String>,
    /// Seconds since the last call returned (ranks outside MPI).
    pub idle_s: Option<f64>,
}

/// An edge of the wait-for graph.
#[derive(Clone, Debug, Serialize)]
pub struct Edge {
    pub from: i32,
    pub to: i32,
    /// The wait is for any one of several ranks (`MPI_ANY_SOURCE`).
    pub any: bool,
    /// The operation that waits (`MPI_Recv(from 1, tag 7) at a.c:9`).
    pub why: String,
}

/// A cycle of the wait-for graph: a deadlock.
#[derive(Clone, Debug, Serialize)]
pub struct Cycle {
    pub ranks: Vec<i32>,
    pub text: String,
}

/// The whole diagnosis.
#[derive(Clone, Debug, Serialize)]
pub struct HangReport {
    /// Seconds since the last rank finished an MPI call, when watching a
    /// running job.
    pub stalled_s: Option<f64>,
    pub ranks: Vec<RankReport>,
    pub edges: Vec<Edge>,
    pub cycles: Vec<Cycle>,
    /// Collective instances whose members disagree (operation, root,
    /// reduction, count).
    pub mismatches: Vec<String>,
    /// Ranks not in an MPI call (computing, dead, finished...).
    pub not_in_mpi: Vec<i32>,
    /// What the graph says, in sentences: deadlocks, ranks waited for
    /// outside MPI, mismatched collectives.
    pub findings: Vec<String>,
}

/// Cycles reported at most.
const MAX_CYCLES: usize = 10;

/// Name of a predefined handle of the MPICH ABI, or the handle in hex.
fn handle_name(ctype: CType, h: i32) -> String {
    abi::predefined_name(ctype, h).map(str::to_string).unwrap_or_else(|| format!("{h:#x}"))
}

/// A communicator's short name: WORLD, SELF, its name, or the creating call.
pub fn comm_label(comms: &HashMap<u64, CommInfo>, id: u64) -> String {
    match comms.get(&id) {
        _ if id == 0 => "WORLD".into(),
        Some(c) => match &c.name {
            Some(n) => n.clone(),
            None if c.call == "predefined" && c.members.len() == 1 => "SELF".into(),
            None => format!("{}#{:x}", c.call.trim_start_matches("MPI_"), id & 0xffff),
        },
        None => format!("comm#{:x}", id & 0xffff),
    }
}

/// Ranks as `0-3, 7`.
pub fn fmt_ranks(ranks: &[i32]) -> String {
    let mut v = ranks.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => v[i].to_string(),
            1 => format!("{}, {}", v[i], v[j]),
            _ => format!("{}-{}", v[i], v[j]),
        });
        i = j + 1;
    }
    let s = parts.join(", ");
    if v.len() == 1 {
        format!("rank {s}")
    } else {
        format!("ranks {s}")
    }
}

fn peer_text(p: i32) -> String {
    match p {
        abi::MPI_ANY_SOURCE => "any".into(),
        abi::MPI_PROC_NULL => "MPI_PROC_NULL".into(),
        abi::MPI_ROOT => "MPI_ROOT".into(),
        p => p.to_string(),
    }
}

/// `MPI_Recv(from 1, tag 7)`, `MPI_Bcast(root 0)`, `MPI_Barrier`: the call
/// with what says whom it waits for (the communicator when not WORLD).
pub fn describe(e: &Event, comms: &HashMap<u64, CommInfo>) -> String {
    let name = base_name(&e.call);
    let mut args = Vec::new();
    let tag = |t: i32| if t == abi::MPI_ANY_TAG { "any tag".to_string() } else { format!("tag {t}") };
    if is_receive(name) {
        if let Some(p) = e.peer {
            args.push(format!("from {}", peer_text(p)));
        }
        if let Some(t) = e.tag {
            args.push(tag(t));
        }
    } else if is_send(name) || name.ends_with("send_init") {
        if let Some(p) = e.peer {
            args.push(format!("to {}", peer_text(p)));
        }
        if let Some(t) = e.tag {
            args.push(tag(t));
        }
    } else if let Some(p) = e.peer {
        args.push(format!("rank {}", peer_text(p)));
    }
    if let Some(r) = e.root {
        args.push(format!("root {}", peer_text(r)));
    }
    if let Some(o) = e.op.filter(|_| is_collective(e)) {
        args.push(handle_name(CType::Op, o));
    }
    if let Some(c) = e.comm.filter(|&c| c != 0) {
        args.push(format!("comm {}", comm_label(comms, c)));
    }
    if args.is_empty() {
        e.call.to_string()
    } else {
        format!("{}({})", e.call, args.join(", "))
    }
}

/// A call site without the directories of its file (`solver.c:88`).
pub fn short(site: &str) -> &str {
    site.rsplit('/').next().unwrap_or(site)
}

fn secs(ns: i64) -> f64 {
    (ns as f64 / 1e9 * 10.0).round() / 10.0
}

/// Builds the diagnosis. `site` symbolizes a call site of a rank;
/// `stalled_s` is how long no rank finished a call (when watching).
pub fn diagnose(
    states: &[RankState],
    size: usize,
    comms: &HashMap<u64, CommInfo>,
    site: &mut dyn FnMut(i32, u64) -> Option<String>,
    stalled_s: Option<f64>,
) -> HangReport {
    let by_rank: BTreeMap<i32, &RankState> = states.iter().map(|s| (s.rank, s)).collect();
    let op_of = |rank: i32, e: &Event, now: Option<i64>, site: &mut dyn FnMut(i32, u64) -> Option<String>| Op {
        call: e.call.to_string(),
        describe: describe(e, comms),
        comm: e.comm.map(|c| comm_label(comms, c)),
        comm_id: e.comm,
        peer: e.peer,
        root: e.root,
        tag: e.tag,
        count: e.count,
        datatype: e.datatype.map(|d| handle_name(CType::Datatype, d)),
        op: e.op.filter(|_| is_collective(e)).map(|o| handle_name(CType::Op, o)),
        instance: e.seq.filter(|_| is_collective(e)),
        site: e.site.and_then(|s| site(rank, s)),
        since_s: now.map(|n| secs(n - e.t_start)),
    };
    let mut ranks = Vec::new();
    // The operations each rank in MPI waits for (its call, or requests).
    let mut waiting: BTreeMap<i32, (Event, Vec<Event>)> = BTreeMap::new();
    for r in 0..size as i32 {
        let Some(s) = by_rank.get(&r) else {
            ranks.push(RankReport {
                rank: r,
                state: "not_started".into(),
                process: Proc::Unknown,
                host: None,
                pid: None,
                call: None,
                waits_on: Vec::new(),
                waits_for: Vec::new(),
                waits_for_any: false,
                last_call: None,
                last_site: None,
                idle_s: None,
            });
            continue;
        };
        let t = s.track;
        let current = t.current.values().next().cloned();
        // A rank whose last call asked whether something completed, with
        // requests pending, polls (a loop around MPI_Test).
        let polling = current.is_none()
            && s.proc != Proc::Dead
            && !t.finalized
            && t.last.as_ref().is_some_and(|l| is_polling(&l.call))
            && !t.pending.is_empty();
        let state = match (&current, s.proc) {
            (Some(_), Proc::Dead) => "dead",
            (Some(_), _) => "in_mpi",
            (None, _) if polling => "polling",
            (None, Proc::Dead) => "dead",
            (None, Proc::Finished) => "finished",
            (None, Proc::Ended) => "ended",
            (None, _) if t.finalized => "finished",
            // On a machine that cannot be checked from here: computing, or
            // dead.
            (None, Proc::Unknown) => "unknown",
            (None, _) => "computing",
        };
        let call_ev = current.clone().or_else(|| polling.then(|| t.last.clone()).flatten());
        let mut report = RankReport {
            rank: r,
            state: state.into(),
            process: s.proc,
            host: s.host.clone(),
            pid: s.pid,
            call: call_ev.as_ref().map(|e| op_of(r, e, s.now, site)),
            waits_on: Vec::new(),
            waits_for: Vec::new(),
            waits_for_any: false,
            last_call: t.last.as_ref().map(|e| e.call.to_string()),
            last_site: t.last.as_ref().and_then(|e| e.site).and_then(|a| site(r, a)),
            idle_s: match (current.is_none(), s.now, t.t_last) {
                (true, Some(n), Some(l)) => Some(secs(n - l)),
                _ => None,
            },
        };
        if let Some(c) = call_ev.filter(|_| matches!(state, "in_mpi" | "polling")) {
            let ops = t.waits_on(&c);
            report.waits_on = ops.iter().map(|e| op_of(r, e, s.now, site)).collect();
            waiting.insert(r, (c, ops));
        }
        ranks.push(report);
    }
    // Has rank m entered collective instance `seq` on `comm`?
    let entered = |m: i32, comm: u64, seq: i64| {
        by_rank.get(&m).is_some_and(|s| s.track.coll_done(comm) >= seq || s.track.coll_instance(comm, seq).is_some())
    };
    let members = |comm: u64| -> Vec<i32> {
        comms.get(&comm).map(|c| c.members.iter().chain(c.remote.iter()).copied().collect()).unwrap_or_default()
    };
    let mut edges: Vec<Edge> = Vec::new();
    let mut mismatches: Vec<String> = Vec::new();
    let mut instances_seen = BTreeSet::new();
    let mut mismatched: BTreeSet<(u64, i64)> = BTreeSet::new();
    for (&r, (call, ops)) in &waiting {
        let mut all = BTreeSet::new();
        let mut any = false;
        for op in ops {
            let name = base_name(&op.call);
            let site_text = op.site.and_then(|a| site(r, a)).map(|s| short(&s).to_string());
            let mut why = if ops.len() == 1 && op.t_start == call.t_start && op.call == call.call {
                describe(op, comms)
            } else {
                format!("{} on {}", call.call, describe(op, comms))
            };
            if let Some(s) = &site_text {
                let _ = write!(why, " at {s}");
            }
            let (targets, or): (Vec<i32>, bool) = if is_receive(name) {
                match op.peer {
                    Some(abi::MPI_ANY_SOURCE) => {
                        let c = op.comm.and_then(|c| comms.get(&c));
                        let from = c.map(|c| if c.remote.is_empty() { &c.members } else { &c.remote });
                        (from.map(|m| m.iter().copied().filter(|&x| x != r).collect()).unwrap_or_default(), true)
                    }
                    Some(p) if p >= 0 => (vec![p], false),
                    _ => (Vec::new(), false),
                }
            } else if is_send(name) || name.ends_with("send_init") {
                (op.peer.filter(|&p| p >= 0).into_iter().collect(), false)
            } else if let (true, Some(comm), Some(seq)) = (is_collective(op), op.comm, op.seq) {
                if instances_seen.insert((comm, seq)) {
                    let found = compare_instance(&by_rank, comms, comm, seq, &members(comm));
                    if !found.is_empty() {
                        mismatched.insert((comm, seq));
                    }
                    mismatches.extend(found);
                }
                (members(comm).into_iter().filter(|&m| m != r && !entered(m, comm, seq)).collect(), false)
            } else {
                (Vec::new(), false)
            };
            any |= or;
            for to in targets {
                if all.insert(to) {
                    edges.push(Edge { from: r, to, any: or, why: why.clone() });
                }
            }
        }
        if let Some(rep) = ranks.iter_mut().find(|x| x.rank == r) {
            rep.waits_for = all.into_iter().collect();
            rep.waits_for_any = any;
        }
    }
    let blocked: BTreeSet<i32> = waiting.keys().copied().collect();
    // Deadlocks: cycles of edges that each must be satisfied (not the
    // "any of" edges of MPI_ANY_SOURCE).
    let mut adj: BTreeMap<i32, Vec<(i32, &str)>> = BTreeMap::new();
    for e in edges.iter().filter(|e| !e.any && blocked.contains(&e.to)) {
        adj.entry(e.from).or_default().push((e.to, e.why.as_str()));
    }
    let cycles: Vec<Cycle> = find_cycles(&adj)
        .into_iter()
        .map(|c| {
            let mut text = String::new();
            for (i, &r) in c.iter().enumerate() {
                let next = c[(i + 1) % c.len()];
                let why = adj[&r].iter().find(|(t, _)| *t == next).map(|(_, w)| *w).unwrap_or("?");
                if i == 0 {
                    let _ = write!(text, "rank {r} waits in {why} for rank {next}");
                } else {
                    let _ = write!(text, ", which waits in {why} for rank {next}");
                }
            }
            text.push_str(": a deadlock");
            Cycle { ranks: c, text }
        })
        .collect();
    let mut findings: Vec<String> = cycles.iter().map(|c| c.text.clone()).collect();
    // Waits for ranks outside MPI, grouped by what is waited in.
    let mut outside: BTreeMap<(i32, String), Vec<i32>> = BTreeMap::new();
    for e in edges.iter().filter(|e| !blocked.contains(&e.to)) {
        outside.entry((e.to, e.why.clone())).or_default().push(e.from);
    }
    for ((to, why), from) in outside {
        let who = ranks.iter().find(|x| x.rank == to);
        let what = match who.map(|x| x.state.as_str()) {
            Some("dead") => {
                let on = who.and_then(|x| x.host.as_ref()).map(|h| format!(" on {h}")).unwrap_or_default();
                let pid = who.and_then(|x| x.pid).map(|p| format!("process {p}{on} is gone")).unwrap_or("gone".into());
                format!("which is dead ({pid}{})", last_call_text(who))
            }
            Some("finished") => "which has finished (it called MPI_Finalize)".to_string(),
            Some("ended") => format!("which was not in MPI when the trace ended{}", last_call_text(who)),
            Some("not_started") => "which has not started tracing (no MPI_Init seen)".to_string(),
            Some("computing") => {
                let idle = who.and_then(|x| x.idle_s).map(|s| format!(" for {s:.1} s")).unwrap_or_default();
                format!("which is not in MPI (computing{idle}{})", last_call_text(who))
            }
            Some("unknown") => {
                let host = who.and_then(|x| x.host.clone()).unwrap_or_else(|| "its machine".into());
                format!(
                    "which is not in MPI (computing, or dead: {host} cannot be checked from here{})",
                    last_call_text(who)
                )
            }
            Some(s) => format!("which is {s}"),
            None => String::new(),
        };
        let verb = if from.len() == 1 { "waits" } else { "wait" };
        findings.push(format!("{} {verb} in {why} for rank {to}, {what}", fmt_ranks(&from)));
    }
    // Waits for ranks that wait themselves, outside a deadlock cycle.
    let in_cycle = |r: i32| cycles.iter().any(|c| c.ranks.contains(&r));
    let mut chained: BTreeMap<(i32, String), Vec<i32>> = BTreeMap::new();
    for e in edges.iter().filter(|e| !e.any && blocked.contains(&e.to) && !(in_cycle(e.from) && in_cycle(e.to))) {
        chained.entry((e.to, e.why.clone())).or_default().push(e.from);
    }
    for ((to, why), from) in chained {
        let call = ranks.iter().find(|x| x.rank == to).and_then(|x| x.call.as_ref());
        let desc = call.map(|c| c.describe.clone()).unwrap_or_default();
        let at = call.and_then(|c| c.site.as_deref()).map(|s| format!(" at {}", short(s))).unwrap_or_default();
        let verb = if from.len() == 1 { "waits" } else { "wait" };
        findings.push(format!("{} {verb} in {why} for rank {to}, which waits in {desc}{at}", fmt_ranks(&from)));
    }
    // Ranks in a collective instance every member entered: no one is
    // missing, so something about the instance does not agree.
    findings.extend(mismatches.iter().cloned());
    for (&r, (_, ops)) in &waiting {
        let rep = ranks.iter().find(|x| x.rank == r);
        let mismatched = ops.iter().any(|o| o.comm.zip(o.seq).is_some_and(|i| mismatched.contains(&i)));
        if rep.is_some_and(|x| x.waits_for.is_empty()) && !in_cycle(r) && !mismatched {
            let call = rep.and_then(|x| x.call.as_ref());
            let desc = call.map(|c| c.describe.clone()).unwrap_or_default();
            let at = call.and_then(|c| c.site.as_deref()).map(|s| format!(" at {}", short(s))).unwrap_or_default();
            findings.push(format!("rank {r} waits in {desc}{at} for no rank the trace can name"));
        }
    }
    let not_in_mpi: Vec<i32> = ranks.iter().filter(|x| !blocked.contains(&x.rank)).map(|x| x.rank).collect();
    HangReport { stalled_s, ranks, edges, cycles, mismatches, not_in_mpi, findings }
}

fn last_call_text(who: Option<&RankReport>) -> String {
    match who.and_then(|x| x.last_call.as_ref()) {
        Some(c) => match who.and_then(|x| x.last_site.as_deref()) {
            Some(s) => format!("; its last call was {c} at {}", short(s)),
            None => format!("; its last call was {c}"),
        },
        None => "; it made no MPI call yet".to_string(),
    }
}

/// Counts that every member passes alike (the type signatures must match;
/// `MPI_IN_PLACE` does not change the count of these).
pub(crate) fn same_count(call: &str) -> bool {
    let c = call.strip_prefix("MPI_I").map(|s| format!("MPI_{s}"));
    let c = c.as_deref().unwrap_or(call);
    let c = c.strip_suffix("_init").unwrap_or(c);
    matches!(
        c.to_ascii_lowercase().as_str(),
        "mpi_bcast" | "mpi_reduce" | "mpi_allreduce" | "mpi_scan" | "mpi_exscan" | "mpi_reduce_scatter_block"
    )
}

/// Where the members' calls of collective instance `seq` on `comm`
/// disagree: operation, root, reduction, bytes.
fn compare_instance(
    by_rank: &BTreeMap<i32, &RankState>,
    comms: &HashMap<u64, CommInfo>,
    comm: u64,
    seq: i64,
    members: &[i32],
) -> Vec<String> {
    let calls: Vec<(i32, &Event)> = members
        .iter()
        .filter_map(|m| by_rank.get(m).and_then(|s| s.track.coll_instance(comm, seq)).map(|e| (*m, e)))
        .collect();
    compare_calls(&format!("collective #{seq} on {}", comm_label(comms, comm)), &calls)
}

/// Where the calls of the members of one collective instance (`label`)
/// disagree: operation, root, reduction, bytes.
pub fn compare_calls(label: &str, calls: &[(i32, &Event)]) -> Vec<String> {
    let Some((_, first)) = calls.first() else { return Vec::new() };
    let mut out = Vec::new();
    let group = |f: &dyn Fn(&Event) -> Option<String>| -> Option<String> {
        let mut by: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (m, e) in calls {
            if let Some(v) = f(e) {
                by.entry(v).or_default().push(*m);
            }
        }
        (by.len() > 1).then(|| {
            let mut parts: Vec<(Vec<i32>, String)> = by.into_iter().map(|(v, r)| (r, v)).collect();
            parts.sort_by_key(|(r, _)| std::cmp::Reverse(r.len()));
            parts
                .iter()
                .map(|(r, v)| format!("{} {} {v}", fmt_ranks(r), if r.len() == 1 { "gives" } else { "give" }))
                .collect::<Vec<_>>()
                .join("; ")
        })
    };
    if let Some(s) = group(&|e| Some(e.call.to_string())) {
        out.push(format!(
            "{label}: the operations differ: {}",
            s.replace(" gives ", " calls ").replace(" give ", " call ")
        ));
        return out;
    }
    let name = first.call.to_string();
    if let Some(s) = group(&|e| e.root.map(|r| format!("root {}", peer_text(r)))) {
        out.push(format!("{label} ({name}): the roots differ: {s}"));
    }
    if let Some(s) = group(&|e| e.op.map(|o| handle_name(CType::Op, o))) {
        out.push(format!("{label} ({name}): the reduction operations differ: {s}"));
    }
    if same_count(&name) {
        if let Some(s) = group(&|e| e.bytes.map(|b| format!("{b} bytes"))) {
            out.push(format!("{label} ({name}): the counts differ: {s}"));
        }
    }
    out
}

/// Elementary cycles of `adj`, each once (starting at its smallest rank),
/// at most [`MAX_CYCLES`], within a bounded search.
fn find_cycles(adj: &BTreeMap<i32, Vec<(i32, &str)>>) -> Vec<Vec<i32>> {
    let mut out: Vec<Vec<i32>> = Vec::new();
    let mut budget = 200_000usize;
    for &start in adj.keys() {
        // Depth-first over ranks greater than `start`, back to `start`.
        let mut path = vec![start];
        let mut iters = vec![0usize];
        let mut on_path: BTreeSet<i32> = [start].into();
        while let Some(&node) = path.last() {
            if out.len() >= MAX_CYCLES || budget == 0 {
                return out;
            }
            budget -= 1;
            let next = adj.get(&node).and_then(|v| v.get(*iters.last().unwrap_or(&0)));
            match next {
                Some(&(to, _)) => {
                    if let Some(i) = iters.last_mut() {
                        *i += 1;
                    }
                    if to == start {
                        out.push(path.clone());
                    } else if to > start && !on_path.contains(&to) {
                        path.push(to);
                        iters.push(0);
                        on_path.insert(to);
                    }
                }
                None => {
                    on_path.remove(&node);
                    path.pop();
                    iters.pop();
                }
            }
        }
    }
    out
}

impl HangReport {
    /// The report as text for a terminal or a log.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        if let Some(t) = self.stalled_s {
            let _ = writeln!(s, "no rank finished an MPI call for {t:.1} s; where the ranks are:");
        }
        for r in &self.ranks {
            let _ = write!(s, "  rank {}: ", r.rank);
            match (&r.call, r.state.as_str()) {
                (Some(c), st @ ("in_mpi" | "polling" | "dead")) => {
                    let verb = match st {
                        "polling" => "polls with",
                        "dead" => "died in",
                        _ => "in",
                    };
                    let _ = write!(s, "{verb} {}", c.describe);
                    if let Some(site) = &c.site {
                        let _ = write!(s, " at {}", short(site));
                    }
                    let mut extra = Vec::new();
                    if let Some(n) = c.count {
                        extra.push(match &c.datatype {
                            Some(d) => format!("count {n} {d}"),
                            None => format!("count {n}"),
                        });
                    }
                    if let Some(i) = c.instance {
                        extra.push(format!("instance {i}"));
                    }
                    if let Some(t) = c.since_s {
                        extra.push(format!("for {t:.1} s"));
                    }
                    if !extra.is_empty() {
                        let _ = write!(s, " ({})", extra.join(", "));
                    }
                    if r.waits_on.len() > 1 || r.waits_on.first().is_some_and(|o| o.call != c.call) {
                        let on: Vec<String> = r
                            .waits_on
                            .iter()
                            .map(|o| match &o.site {
                                Some(site) => format!("{} at {}", o.describe, short(site)),
                                None => o.describe.clone(),
                            })
                            .collect();
                        let _ = write!(s, " on {}", on.join(", "));
                    }
                    if !r.waits_for.is_empty() {
                        let any = if r.waits_for_any { "any of " } else { "" };
                        let _ = write!(s, "; waits for {any}{}", fmt_ranks(&r.waits_for));
                    }
                }
                (_, st) => {
                    let what = match st {
                        "computing" => "not in MPI (computing)",
                        "unknown" => "not in MPI (computing, or dead: its machine cannot be checked from here)",
                        "finished" => "finished (MPI_Finalize)",
                        "dead" => "dead: its process is gone",
                        "ended" => "not in MPI when the trace ended",
                        "not_started" => "no trace yet (before MPI_Init?)",
                        other => other,
                    };
                    let _ = write!(s, "{what}");
                    if let Some(t) = r.idle_s.filter(|_| st != "finished") {
                        let _ = write!(s, " for {t:.1} s");
                    }
                    if let (Some(c), false) = (&r.last_call, st == "finished") {
                        let _ = write!(s, "; last call {c}");
                        if let Some(site) = &r.last_site {
                            let _ = write!(s, " at {}", short(site));
                        }
                    }
                }
            }
            s.push('\n');
        }
        if !self.edges.is_empty() {
            let e: Vec<String> =
                self.edges.iter().map(|e| format!("{}->{}{}", e.from, e.to, if e.any { "?" } else { "" })).collect();
            let _ = writeln!(s, "wait-for graph: {}", e.join(" "));
        }
        for f in &self.findings {
            let _ = writeln!(s, "* {f}");
        }
        s
    }
}

/// The state of a finished (or killed) trace's ranks when it ended.
pub fn from_trace(t: &trace_format::Trace) -> HangReport {
    let mut tracks: Vec<(Tracker, Proc, Option<trace_format::RankMeta>)> = Vec::new();
    let mut end = i64::MIN;
    for (&rank, rt) in &t.ranks {
        let mut tr = Tracker::new(rank);
        for e in &rt.events {
            tr.apply(e);
            end = end.max(e.t_end.unwrap_or(e.t_start));
        }
        let proc = if tr.finalized || rt.completeness == trace_format::Completeness::Complete {
            Proc::Finished
        } else {
            Proc::Ended
        };
        tracks.push((tr, proc, rt.meta.clone()));
    }
    // When the job was killed is not recorded: no ages.
    let now = None;
    let _ = end;
    let states: Vec<RankState> = tracks
        .iter()
        .map(|(tr, proc, meta)| RankState {
            rank: tr.rank,
            track: tr,
            proc: *proc,
            now,
            host: meta.as_ref().map(|m| m.process.host.clone()),
            pid: meta.as_ref().map(|m| m.process.pid),
        })
        .collect();
    let comms: HashMap<u64, CommInfo> = t.comms.iter().map(|(k, v)| (*k, v.clone())).collect();
    let mut sym = trace_format::Symbolizer::new();
    let metas: HashMap<i32, trace_format::RankMeta> =
        tracks.iter().filter_map(|(tr, _, m)| m.clone().map(|m| (tr.rank, m))).collect();
    let mut site = |rank: i32, a: u64| {
        let m = metas.get(&rank)?;
        let s = sym.site(m, a);
        s.file_line().or(s.function)
    };
    // Ranks of which nothing was read are left out (meta.json may claim
    // any number of them).
    let read = t.ranks.values().filter(|r| r.completeness != trace_format::Completeness::Missing);
    let size = read.map(|r| r.rank + 1).max().unwrap_or(0).max(0) as usize;
    diagnose(&states, size, &comms, &mut site, None)
}

impl crate::live::Live {
    /// The diagnosis of the job as of the last look.
    pub fn diagnose(&mut self, stalled_s: Option<f64>) -> HangReport {
        let host = self.host.clone();
        let comms = self.comms();
        let size = self.size();
        /// Rank, process state, now, host, pid.
        type Info = (i32, Proc, Option<i64>, Option<String>, Option<u32>);
        let info: Vec<Info> = self
            .ranks
            .values()
            .map(|r| {
                let p = r.process();
                let proc = r.proc_state(&self.dir, &host, &mut self.locks_seen);
                (r.rank, proc, r.now, p.map(|p| p.host.clone()), p.map(|p| p.pid))
            })
            .collect();
        // Symbolizing needs `self` mutably: the sites first.
        let mut sites: HashMap<(i32, u64), Option<String>> = HashMap::new();
        let wanted: Vec<(i32, u64)> = self
            .ranks
            .values()
            .flat_map(|r| {
                let t = &r.track;
                let evs = t.current.values().chain(t.pending.values()).chain(t.last.iter());
                evs.filter_map(|e| e.site).map(|s| (r.rank, s)).collect::<Vec<_>>()
            })
            .collect();
        for (r, a) in wanted {
            let v = self.site(r, a);
            sites.insert((r, a), v);
        }
        // Ranks on other machines are timed against the latest time any
        // rank recorded (the clocks are synchronized at MPI_Init).
        let latest = self
            .ranks
            .values()
            .flat_map(|r| r.track.t_last.into_iter().chain(r.track.current.values().map(|e| e.t_start)))
            .max();
        let local_now = self.ranks.values().filter_map(|r| r.now).max();
        let states: Vec<RankState> = info
            .into_iter()
            .map(|(rank, proc, now, host, pid)| RankState {
                rank,
                track: &self.ranks[&rank].track,
                proc,
                now: now.or(local_now).or(latest),
                host,
                pid,
            })
            .collect();
        let mut site = |r: i32, a: u64| sites.get(&(r, a)).cloned().flatten();
        diagnose(&states, size, &comms, &mut site, stalled_s)
    }
}

impl HangReport {
    /// The report as a section of `mpitrace report` (for a trace whose job
    /// did not end normally): where each rank was, and what the wait-for
    /// graph says.
    pub fn blocks(&self, title: &str) -> Vec<crate::report::Block> {
        use crate::report::{Block, Tone};
        let mut d = vec![Block::Heading(title.to_string())];
        let text = self.render_text();
        for line in text.lines() {
            let (line, tone) = match line.strip_prefix("* ") {
                Some(f) => (f, Tone::Bad),
                None => (line.trim_start(), Tone::Plain),
            };
            d.push(Block::Para(line.to_string(), tone));
        }
        d
    }

    /// Whether any rank was in (or polling with) an MPI call.
    pub fn anyone_waiting(&self) -> bool {
        self.ranks.iter().any(|r| r.state == "in_mpi" || r.state == "polling")
    }
}
