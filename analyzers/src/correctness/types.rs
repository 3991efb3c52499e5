//! Type signatures of messages (`type-mismatch`) and receives too small for
//! their message (`truncation`).
//!
//! A message's signature is its datatype's signature repeated `count`
//! times. Predefined datatypes are their own signature; the shim writes
//! the signature of each derived datatype on its `MPI_Type_commit` row
//! (`seq` the hash, `count` the elements, `bytes` the size, `aux` the
//! handle; see `trace_format::typesig`), so a derived type is known from
//! its commit on (handles are reused once freed: the last commit before
//! the message counts).

use std::collections::HashMap;

use mpi_api::abi;
use trace_format::record::Kind;
use trace_format::typesig::Sig;
use trace_format::{Event, Trace};

use super::{Key, SiteFn};
use crate::live::base_name;

/// A datatype of a rank as the analyzer knows it.
#[derive(Clone, Copy)]
pub(super) struct TypeInfo<'a> {
    pub sig: Sig,
    /// Size in bytes (`MPI_Type_size`).
    pub size: i64,
    /// The `MPI_Type_commit` row of a derived type.
    pub commit: Option<&'a Event>,
    /// The name of a predefined type.
    pub name: Option<&'static str>,
}

/// The derived datatypes each rank committed, by handle: (commit time,
/// type) in time order.
pub(super) struct Types<'a> {
    derived: HashMap<i32, HashMap<i32, Vec<(i64, TypeInfo<'a>)>>>,
}

impl<'a> Types<'a> {
    pub fn new(t: &'a Trace) -> Types<'a> {
        let mut derived: HashMap<i32, HashMap<i32, Vec<(i64, TypeInfo)>>> = HashMap::new();
        for (&r, rt) in &t.ranks {
            for e in rt.events.iter().filter(|e| e.kind == Kind::Call && base_name(&e.call) == "MPI_Type_commit") {
                let (Some(0), Some(h), Some(hash), Some(len), Some(size)) = (e.rc, e.aux, e.seq, e.count, e.bytes)
                else {
                    continue;
                };
                let sig = Sig { hash: hash as u64, len: len as u64 };
                let info = TypeInfo { sig, size, commit: Some(e), name: None };
                derived.entry(r).or_default().entry(h).or_default().push((e.t_start, info));
            }
        }
        for list in derived.values_mut().flat_map(|m| m.values_mut()) {
            list.sort_by_key(|(t, _)| *t);
        }
        Types { derived }
    }

    /// Datatype `h` of `rank` as it was at time `t`.
    pub fn at(&self, rank: i32, h: i32, t: i64) -> Option<TypeInfo<'a>> {
        if let Some(size) = abi::builtin_type_size(h) {
            let name = abi::predefined_name(abi::CType::Datatype, h);
            return Some(TypeInfo { sig: Sig::basic(h), size: size as i64, commit: None, name });
        }
        let list = self.derived.get(&rank)?.get(&h)?;
        list.iter().rev().find(|(c, _)| *c <= t).map(|(_, i)| *i)
    }
}

/// The receives (call rows of `MPI_Recv`, completions of `MPI_Irecv` and
/// `MPI_Recv_init`) of a rank.
fn is_receive(e: &Event) -> bool {
    matches!((e.kind, base_name(&e.call)), (Kind::Call, "MPI_Recv") | (Kind::Completion, "MPI_Irecv" | "MPI_Recv_init"))
}

/// Every send by its message key.
fn sends(t: &Trace) -> HashMap<Key, (i32, &Event)> {
    let mut sent = HashMap::new();
    for (&r, rt) in &t.ranks {
        for e in rt.events.iter().filter(|e| e.kind == Kind::Call && crate::live::is_send(&e.call)) {
            if let (Some(c), Some(p), Some(tag), Some(seq)) = (e.comm, e.peer.filter(|&p| p >= 0), e.tag, e.seq) {
                sent.insert((c, r, p, tag, seq), (r, e));
            }
        }
    }
    sent
}

/// How a datatype is named in findings: its name, or where it was
/// committed.
fn type_name(i: &TypeInfo, rank: i32, site: &mut SiteFn) -> String {
    match (i.name, i.commit) {
        (Some(n), _) => n.to_string(),
        (None, Some(c)) => format!("the datatype committed{}", site(rank, c)),
        (None, None) => "a derived datatype".into(),
    }
}

/// Messages whose receive's type signature differs from the send's.
/// `MPI_PACKED` matches anything, as the standard allows.
pub(super) fn type_mismatches(
    t: &Trace,
    comms: &HashMap<u64, trace_format::side::CommInfo>,
    site: &mut SiteFn,
) -> Vec<String> {
    let types = Types::new(t);
    let sent = sends(t);
    let mut out = Vec::new();
    for (&d, rt) in &t.ranks {
        for e in rt.events.iter().filter(|e| is_receive(e)) {
            if e.rc.is_some_and(|rc| rc != 0) {
                continue;
            }
            let (Some(c), Some(s), Some(tag), Some(seq)) = (e.comm, e.peer.filter(|&p| p >= 0), e.tag, e.seq) else {
                continue;
            };
            let Some(&(_, send)) = sent.get(&(c, s, d, tag, seq)) else { continue };
            let (Some(sd), Some(rd), Some(n), Some(b)) =
                (send.datatype, e.datatype, send.count.filter(|&n| n >= 0), e.bytes.filter(|&b| b >= 0))
            else {
                continue;
            };
            if sd == abi::MPI_PACKED || rd == abi::MPI_PACKED {
                continue;
            }
            let (Some(st), Some(rt_)) = (types.at(s, sd, send.t_start), types.at(d, rd, e.t_start)) else {
                continue;
            };
            if rt_.size <= 0 {
                continue;
            }
            // The receive holds `k` whole copies of its type; a part of one
            // more is a prefix of a derived type's signature, which the
            // hash cannot tell (not checked), but never of a basic type's.
            let (k, part) = (b / rt_.size, b % rt_.size);
            let same = match (part, rt_.name) {
                (0, _) => rt_.sig.repeat(k as u64) == st.sig.repeat(n as u64),
                (_, Some(_)) => false,
                (_, None) => continue,
            };
            if same {
                continue;
            }
            let what = crate::hang::describe(e, comms);
            let at = site(d, e);
            let sent_at = site(s, send);
            let text = match (st.name, rt_.name) {
                (Some(sn), Some(rn)) => format!("received as {rn} a message rank {s} sent as {sn}"),
                _ => format!(
                    "received as {k} x {} a message rank {s} sent as {n} x {}, whose type signatures differ",
                    type_name(&rt_, d, site),
                    type_name(&st, s, site)
                ),
            };
            out.push(format!("rank {d}: {what}{at} {text} ({}{sent_at})", send.call));
        }
    }
    out
}

/// Open MPI's `MPI_ERR_TRUNCATE` (its `mpi.h`): return codes are recorded
/// as the library gave them.
const OMPI_ERR_TRUNCATE: i32 = 15;

/// Whether `rc` is an error of class `MPI_ERR_TRUNCATE` in the trace's ABI
/// (MPICH keeps the class in the low 7 bits of its error codes).
fn is_truncate(rc: i32, ompi: bool) -> bool {
    if ompi {
        return rc == OMPI_ERR_TRUNCATE;
    }
    rc == abi::MPI_ERR_TRUNCATE || (rc > 0 && rc & 0x7f == abi::MPI_ERR_TRUNCATE)
}

/// Receives that failed with `MPI_ERR_TRUNCATE` (the program set
/// `MPI_ERRORS_RETURN`; a nonblocking one in its `MPI_Wait`/`MPI_Test`),
/// or blocking ones that never returned while the message their
/// sender sent them was larger than their buffer (the default error
/// handler ended the job): the message is named when the trace shows it
/// (the first message of the source and tag no receive took).
pub(super) fn truncations(
    t: &Trace,
    comms: &HashMap<u64, trace_format::side::CommInfo>,
    site: &mut SiteFn,
) -> Vec<String> {
    let sent = sends(t);
    let ompi = t.meta.mpi_abi == "Open MPI";
    let is_truncate = |rc: i32| is_truncate(rc, ompi);
    let mut received: std::collections::HashSet<Key> = Default::default();
    for (&d, rt) in &t.ranks {
        // Receives that failed did not take their message in full: the
        // oldest message nobody received is the one they truncated.
        let ok = |e: &&Event| e.rc.is_none_or(|rc| rc == 0);
        for e in rt.events.iter().filter(|e| is_receive(e) || base_name(&e.call) == "MPI_Sendrecv").filter(ok) {
            if let (Some(c), Some(s), Some(tag), Some(seq)) = (e.comm, e.peer.filter(|&p| p >= 0), e.tag, e.seq) {
                received.insert((c, s, d, tag, seq));
            }
        }
    }
    let mut out = Vec::new();
    for (&d, rt) in &t.ranks {
        // The receive rows, each with the call that failed with
        // MPI_ERR_TRUNCATE, if one did, and the message when the trace
        // says which: `MPI_Recv` itself, or the call that completed an
        // `MPI_Irecv` (`MPI_Wait`, `MPI_Waitall`, `MPI_Testsome`...: the
        // shim gives the completion row of a request completed in error
        // that error; traces of older shims only have the `MPI_Wait` or
        // `MPI_Test` row, which names its request).
        let mut found: Vec<(&Event, Option<&Event>, Option<Key>)> = Vec::new();
        let mut irecv: HashMap<(i32, i32), &Event> = HashMap::new();
        let mut last_call: HashMap<i32, &Event> = HashMap::new();
        let mut seen: std::collections::HashSet<*const Event> = Default::default();
        for e in &rt.events {
            let name = base_name(&e.call);
            if e.kind == Kind::Completion {
                let (Some(h), Some(rc)) = (e.request, e.rc) else { continue };
                if !is_truncate(rc) || !matches!(name, "MPI_Irecv" | "MPI_Recv_init") {
                    continue;
                }
                if let (Some(r), Some(w)) = (irecv.get(&(e.thread, h)), last_call.get(&e.thread)) {
                    if seen.insert(*r as *const Event) {
                        let key = match (e.comm, e.peer.filter(|&p| p >= 0), e.tag, e.seq) {
                            (Some(c), Some(s), Some(tag), Some(seq)) => Some((c, s, d, tag, seq)),
                            _ => None,
                        };
                        found.push((r, Some(w), key));
                    }
                }
                continue;
            }
            if e.kind != Kind::Call {
                continue;
            }
            last_call.insert(e.thread, e);
            match (name, e.request) {
                ("MPI_Recv", _) => {
                    let failed = e.rc.is_some_and(is_truncate);
                    if failed || e.t_end.is_none() {
                        found.push((e, failed.then_some(e), None));
                    }
                }
                ("MPI_Irecv" | "MPI_Recv_init", Some(h)) => {
                    irecv.insert((e.thread, h), e);
                }
                ("MPI_Wait" | "MPI_Test", Some(h)) if e.rc.is_some_and(is_truncate) => {
                    if let Some(r) = irecv.get(&(e.thread, h)).filter(|r| seen.insert(**r as *const Event)) {
                        found.push((r, Some(e), None));
                    }
                }
                _ => {}
            }
        }
        for (e, failed_in, key) in found {
            // The message the completion names, else the oldest message of
            // the source and tag nobody received.
            let message = match (key, e.comm, e.peer.filter(|&p| p >= 0), e.tag.filter(|&t| t >= 0)) {
                (Some(k), ..) => sent.get(&k).copied(),
                (None, Some(c), Some(s), Some(tag)) => sent
                    .iter()
                    .filter(|(k, _)| k.0 == c && k.1 == s && k.2 == d && k.3 == tag && !received.contains(k))
                    .min_by_key(|(k, _)| k.4)
                    .map(|(_, &(s, ev))| (s, ev)),
                _ => None,
            };
            let room = e.bytes.filter(|&b| b >= 0);
            let bigger = |m: &Event| matches!((m.bytes, room), (Some(mb), Some(r)) if mb > r);
            if failed_in.is_none() && !message.is_some_and(|(_, m)| bigger(m)) {
                continue;
            }
            let what = crate::hang::describe(e, comms);
            let mut text = format!("rank {d}: {what}{}", site(d, e));
            if let Some(r) = room {
                text += &format!(" had room for {r} bytes");
            }
            if let Some((s, m)) = message {
                if let Some(mb) = m.bytes {
                    text += &format!(" but rank {s} sent {mb} bytes ({}{})", m.call, site(s, m));
                }
            }
            text += &match failed_in {
                Some(f) if std::ptr::eq(f, e) => ": the message was truncated (MPI_ERR_TRUNCATE)".to_string(),
                Some(f) => format!(": the message was truncated (MPI_ERR_TRUNCATE in {}{})", f.call, site(d, f)),
                None => ": the message is truncated (the rank ended inside the receive)".to_string(),
            };
            out.push(text);
        }
    }
    out
}

/// For collectives whose members all pass the same count and datatype
/// signature (`MPI_Bcast`, `MPI_Allreduce`, `MPI_Reduce_scatter_block`...):
/// the members whose message signatures (datatype repeated `count` times)
/// differ, when their byte counts agree (`compare_calls` reports those that
/// do not); for `MPI_Reduce_scatter`, whose members receive counts of
/// their own, the members whose datatypes' signatures differ.
pub(super) fn collective_signatures(
    label: &str,
    calls: &[(i32, &Event)],
    types: &Types,
    site: &mut SiteFn,
) -> Option<String> {
    let (_, first) = calls.first()?;
    // `MPI_Reduce_scatter`: each member receives a count of its own, all
    // of one datatype (signature).
    let units_only = collective_op(&first.call) == "reduce_scatter";
    if !crate::hang::same_count(&first.call) && !units_only {
        return None;
    }
    let mut by: std::collections::BTreeMap<(u64, u64), (Vec<i32>, String)> = Default::default();
    for &(r, e) in calls {
        let info = types.at(r, e.datatype?, e.t_start)?;
        // `MPI_Reduce_scatter_block` has a receive count only.
        let n = match (e.count.filter(|&n| n >= 0), e.recv_bytes.filter(|&b| b >= 0 && info.size > 0)) {
            (Some(n), _) => n,
            (None, Some(b)) => b / info.size,
            (None, None) if units_only => 1,
            (None, None) => return None,
        };
        let sig = if units_only { info.sig } else { info.sig.repeat(n as u64) };
        let entry = by.entry((sig.hash, sig.len)).or_insert_with(|| (Vec::new(), String::new()));
        if entry.0.is_empty() {
            let name = type_name(&info, r, site);
            entry.1 = if units_only { name } else { format!("{n} x {name}") };
        }
        entry.0.push(r);
    }
    if by.len() < 2 {
        return None;
    }
    let mut parts: Vec<(Vec<i32>, String)> = by.into_values().collect();
    parts.sort_by_key(|(r, _)| std::cmp::Reverse(r.len()));
    let text: Vec<String> = parts
        .iter()
        .map(|(r, v)| format!("{} {} {v}", crate::hang::fmt_ranks(r), if r.len() == 1 { "gives" } else { "give" }))
        .collect();
    Some(format!("{label} ({}): the type signatures differ: {}", first.call, text.join("; ")))
}

/// The collectives whose members pass counts and datatypes of their own
/// for each side, which must match pairwise (what a rank sends to another
/// has the type signature that rank receives from it), by their name
/// without `MPI_`, `I`, `_init` and `_c`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pairs {
    /// Everyone sends to the root (`gather`, `gatherv`).
    Gather,
    /// The root sends to everyone (`scatter`, `scatterv`).
    Scatter,
    /// Everyone sends to everyone the same block (`allgather(v)`).
    Allgather,
    /// Everyone sends to everyone a block of its own (`alltoall`).
    Alltoall,
}

/// The base operation of a collective's name (`MPI_Igatherv_c` ->
/// `gatherv`).
fn collective_op(call: &str) -> String {
    let name = call.strip_prefix("MPI_").unwrap_or(call);
    let name = name.strip_suffix("_c").unwrap_or(name);
    let name = name.strip_suffix("_init").unwrap_or(name);
    name.strip_prefix('I').unwrap_or(name).to_ascii_lowercase()
}

/// One side (send or receive) of a member of a collective: the type
/// signature of what it sends to or receives from each peer (`block`;
/// for the v-forms, whose counts per peer the trace does not hold, only
/// the datatype's, `unit`), described.
struct Part {
    rank: i32,
    unit: Sig,
    block: Option<Sig>,
    text: String,
    at: String,
}

impl Part {
    /// Whether `other`'s block can be a block of this side: equal
    /// signatures, or for a side known by its datatype only, whole copies
    /// of it.
    fn accepts(&self, other: &Part) -> bool {
        let Some(b) = other.block else { return true };
        match self.block {
            Some(mine) => mine == b,
            None if self.unit.len == 0 => true,
            None => b.len % self.unit.len == 0 && self.unit.repeat(b.len / self.unit.len) == b,
        }
    }
}

/// The send part of a member: `None` where it sends nothing of its own
/// (the leaves of a scatter, a root that passed `MPI_IN_PLACE`) or its
/// datatype is unknown.
fn send_part(r: i32, e: &Event, types: &Types, per_block: bool, site: &mut SiteFn) -> Option<Part> {
    let (dt, n) = (e.datatype?, e.count.filter(|&n| n >= 0)?);
    let info = types.at(r, dt, e.t_start)?;
    let name = type_name(&info, r, site);
    let (block, text) = if per_block {
        (Some(info.sig.repeat(n as u64)), format!("{n} x {name}"))
    } else {
        (None, format!("{name} elements"))
    };
    Some(Part { rank: r, unit: info.sig, block, text, at: site(r, e) })
}

/// The receive part of a member (see [`send_part`]).
fn recv_part(r: i32, e: &Event, types: &Types, per_block: bool, site: &mut SiteFn) -> Option<Part> {
    let (dt, bytes) = (e.recv_datatype?, e.recv_bytes.filter(|&b| b >= 0)?);
    let info = types.at(r, dt, e.t_start).filter(|i| i.size > 0)?;
    let name = type_name(&info, r, site);
    let n = bytes / info.size;
    let (block, text) = if per_block {
        (Some(info.sig.repeat(n as u64)), format!("{n} x {name}"))
    } else {
        (None, format!("{name} elements"))
    };
    Some(Part { rank: r, unit: info.sig, block, text, at: site(r, e) })
}

/// Gathers, scatters, all-gathers and all-to-alls whose send and receive
/// type signatures do not match pairwise, as the standard requires (the
/// byte counts may agree: 2 `MPI_DOUBLE` sent, 4 `MPI_INT` received). The
/// v-forms are checked by datatype: a block sent must be whole copies of
/// the receiver's datatype (and received ones of the sender's), their
/// counts per peer not being in the trace. `MPI_Alltoallv`/`w` and the
/// neighborhood collectives are not checked, nor intercommunicators.
pub(super) fn collective_pairs(
    label: &str,
    calls: &[(i32, &Event)],
    types: &Types,
    inter: bool,
    site: &mut SiteFn,
) -> Vec<String> {
    let Some((_, first)) = calls.first() else { return Vec::new() };
    let op = collective_op(&first.call);
    let pairs = match op.trim_end_matches('v') {
        "gather" => Pairs::Gather,
        "scatter" => Pairs::Scatter,
        "allgather" => Pairs::Allgather,
        "alltoall" if op == "alltoall" => Pairs::Alltoall,
        _ => return Vec::new(),
    };
    if inter {
        return Vec::new();
    }
    // The v-forms take counts per peer on one side: the root's of a
    // gatherv or scatterv, the receive side of an allgatherv.
    let v = op.ends_with('v');
    let send_blocks = !v || pairs != Pairs::Scatter;
    let recv_blocks = !v || pairs == Pairs::Scatter;
    let in_place = |e: &Event| e.flags & trace_format::record::flags::IN_PLACE != 0;
    let is_root = |r: i32, e: &Event| e.root == Some(r);
    let (mut senders, mut receivers) = (Vec::new(), Vec::new());
    for &(r, e) in calls {
        let sends = match pairs {
            Pairs::Gather => !(is_root(r, e) && in_place(e)),
            Pairs::Scatter => is_root(r, e),
            // In place, a rank's own block is where it receives the others'.
            Pairs::Allgather | Pairs::Alltoall => !in_place(e),
        };
        let receives = match pairs {
            Pairs::Gather => is_root(r, e),
            Pairs::Scatter => !(is_root(r, e) && in_place(e)),
            Pairs::Allgather | Pairs::Alltoall => true,
        };
        if sends {
            senders.extend(send_part(r, e, types, send_blocks, site));
        }
        if receives {
            receivers.extend(recv_part(r, e, types, recv_blocks, site));
        }
    }
    // (what is sent and where, what is received and where) -> (senders,
    // receivers) of the blocks that differ.
    type Side = (String, String);
    let mut bad: std::collections::BTreeMap<(Side, Side), (Vec<i32>, Vec<i32>)> = Default::default();
    for s in &senders {
        for d in &receivers {
            if d.accepts(s) && s.accepts(d) {
                continue;
            }
            let g = bad.entry(((s.text.clone(), s.at.clone()), (d.text.clone(), d.at.clone()))).or_default();
            g.0.push(s.rank);
            g.1.push(d.rank);
        }
    }
    let rooted = matches!(pairs, Pairs::Gather | Pairs::Scatter);
    bad.into_iter()
        .map(|(((stext, sat), (rtext, rat)), (mut from, mut to))| {
            from.sort_unstable();
            from.dedup();
            to.sort_unstable();
            to.dedup();
            let who = |ranks: &[i32], root: bool| {
                if root {
                    format!("root {}", ranks[0])
                } else {
                    crate::hang::fmt_ranks(ranks)
                }
            };
            let verb = |ranks: &[i32], v: &str| if ranks.len() == 1 { format!("{v}s") } else { v.to_string() };
            // Blocks per peer: "to each rank" where a sender sends one to
            // each, "from each rank" where a receiver gets one from each.
            let to_each = if send_blocks && pairs != Pairs::Gather { " to each rank" } else { "" };
            let from_each = if recv_blocks && pairs != Pairs::Scatter { " from each rank" } else { "" };
            format!(
                "{label} ({}): {} {} {stext}{to_each}{sat} where {} {} {rtext}{from_each}{rat}: the type signatures differ",
                first.call,
                who(&from, rooted && pairs == Pairs::Scatter),
                verb(&from, "send"),
                who(&to, rooted && pairs == Pairs::Gather),
                verb(&to, "receive"),
            )
        })
        .collect()
}
