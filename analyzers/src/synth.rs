//! Synthetic traces: a builder for exact small traces (tests) and a
//! generator of large realistic ones (benchmarks, viewer tests).
//!
//! Both produce the rows the shim would record (calls, completions with
//! resolved sources, sequence numbers per channel and per communicator,
//! call sites that differ between ranks as under ASLR) and can write them as
//! a trace directory with trace-format's writer.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use trace_format::meta::RankMeta;
use trace_format::record::{flags, Kind};
use trace_format::side::{CommInfo, ProcessInfo};
use trace_format::{layout, Event, Meta};

use crate::load::{assemble, push_events, RankBuilder};
use crate::model::Model;
use crate::Error;

/// A blank event.
pub fn event(rank: i32, kind: Kind, call: &str, t_start: i64, t_end: i64) -> Event {
    Event {
        rank,
        thread: 0,
        kind,
        call: Arc::from(call),
        t_start,
        t_end: Some(t_end),
        t_local: t_start,
        rc: Some(0),
        site: None,
        comm: None,
        peer: None,
        tag: None,
        datatype: None,
        count: None,
        bytes: None,
        seq: None,
        request: None,
        root: None,
        op: None,
        aux: None,
        recv_bytes: None,
        recv_datatype: None,
        new_comm: None,
        flags: flags::DONE,
    }
}

/// Site address of `offset` in rank `rank` (a different load base per rank).
pub fn site(rank: i32, offset: u64) -> u64 {
    0x5555_0000_0000 + (rank as u64) * 0x10_0000 + offset
}

/// Path of the one executable module of synthetic traces with modules.
pub const MODULE: &str = "/synthetic/bin/app";

/// The module map of rank `rank`: site offset `o` is at file offset `o`.
pub fn module(rank: i32) -> trace_format::side::Module {
    trace_format::side::Module { start: site(rank, 0), end: site(rank, 0x10_0000), offset: 0, path: MODULE.into() }
}

/// Builds a small trace call by call (all on `MPI_COMM_WORLD` = comm 0).
#[derive(Clone, Debug, Default)]
pub struct SynthTrace {
    pub ranks: Vec<Vec<Event>>,
    send_seq: HashMap<(i32, i32, i32), i64>,
    recv_seq: HashMap<(i32, i32, i32), i64>,
    coll_seq: HashMap<i32, i64>,
    /// Pending nonblocking operations: (rank, request) → the post event.
    pending: HashMap<(i32, i32), Event>,
    /// Ranks that did not finalize.
    pub crashed: Vec<i32>,
    /// Record the module map (every site in [`MODULE`] at its offset).
    pub with_modules: bool,
}

#[allow(clippy::too_many_arguments)]
impl SynthTrace {
    /// A trace of `n` ranks, each starting with `MPI_Init` over [0, 1000).
    pub fn new(n: usize) -> SynthTrace {
        let mut t = SynthTrace { ranks: vec![Vec::new(); n], ..Default::default() };
        for r in 0..n as i32 {
            t.call(r, "MPI_Init", 0, 1000, 0x10);
        }
        t
    }

    /// Appends a call at call site `offset` and returns it for more fields.
    pub fn call(&mut self, rank: i32, name: &str, t0: i64, t1: i64, offset: u64) -> &mut Event {
        let mut e = event(rank, Kind::Call, name, t0, t1);
        e.site = Some(site(rank, offset));
        let v = &mut self.ranks[rank as usize];
        v.push(e);
        v.last_mut().expect("just pushed")
    }

    fn next_send(&mut self, src: i32, dst: i32, tag: i32) -> i64 {
        let s = self.send_seq.entry((src, dst, tag)).or_insert(0);
        *s += 1;
        *s
    }
    fn next_recv(&mut self, src: i32, dst: i32, tag: i32) -> i64 {
        let s = self.recv_seq.entry((src, dst, tag)).or_insert(0);
        *s += 1;
        *s
    }

    /// A blocking send (`MPI_Send`) of `bytes` to `dst`.
    pub fn send(&mut self, rank: i32, dst: i32, tag: i32, bytes: i64, t0: i64, t1: i64, offset: u64) {
        let seq = self.next_send(rank, dst, tag);
        let e = self.call(rank, "MPI_Send", t0, t1, offset);
        (e.comm, e.peer, e.tag, e.bytes, e.seq) = (Some(0), Some(dst), Some(tag), Some(bytes), Some(seq));
    }

    /// A blocking receive from `src` (the actual source, as the status says).
    pub fn recv(&mut self, rank: i32, src: i32, tag: i32, bytes: i64, t0: i64, t1: i64, offset: u64) {
        let seq = self.next_recv(src, rank, tag);
        let e = self.call(rank, "MPI_Recv", t0, t1, offset);
        (e.comm, e.peer, e.tag, e.bytes, e.seq) = (Some(0), Some(src), Some(tag), Some(bytes), Some(seq));
    }

    /// `MPI_Isend` with request handle `req`.
    pub fn isend(&mut self, rank: i32, dst: i32, tag: i32, bytes: i64, t0: i64, t1: i64, offset: u64, req: i32) {
        let seq = self.next_send(rank, dst, tag);
        let e = self.call(rank, "MPI_Isend", t0, t1, offset);
        (e.comm, e.peer, e.tag, e.bytes, e.seq, e.request) =
            (Some(0), Some(dst), Some(tag), Some(bytes), Some(seq), Some(req));
        let e = e.clone();
        self.pending.insert((rank, req), e);
    }

    /// `MPI_Irecv` from `src` (may be `-2` for `MPI_ANY_SOURCE`); the actual
    /// source is given at the completion ([`SynthTrace::wait`]).
    pub fn irecv(&mut self, rank: i32, src: i32, tag: i32, bytes: i64, t0: i64, t1: i64, offset: u64, req: i32) {
        let e = self.call(rank, "MPI_Irecv", t0, t1, offset);
        (e.comm, e.peer, e.tag, e.bytes, e.request) = (Some(0), Some(src), Some(tag), Some(bytes), Some(req));
        let e = e.clone();
        self.pending.insert((rank, req), e);
    }

    /// A `Wait*` call completing `reqs`; receives completed from
    /// `(request, actual source, actual tag)` in `sources` take those.
    pub fn wait(
        &mut self,
        rank: i32,
        name: &str,
        t0: i64,
        t1: i64,
        offset: u64,
        reqs: &[i32],
        sources: &[(i32, i32, i32)],
    ) {
        self.call(rank, name, t0, t1, offset);
        for &q in reqs {
            let Some(post) = self.pending.remove(&(rank, q)) else { continue };
            let mut c = event(rank, Kind::Completion, &post.call, t1, t1);
            c.site = Some(site(rank, offset));
            (c.comm, c.peer, c.tag, c.bytes, c.seq, c.request) =
                (post.comm, post.peer, post.tag, post.bytes, post.seq, Some(q));
            if &*post.call == "MPI_Irecv" {
                let (src, tag) = sources
                    .iter()
                    .find(|s| s.0 == q)
                    .map(|s| (s.1, s.2))
                    .unwrap_or((post.peer.unwrap_or(-1), post.tag.unwrap_or(0)));
                c.peer = Some(src);
                c.tag = Some(tag);
                c.seq = Some(self.next_recv(src, rank, tag));
            }
            self.ranks[rank as usize].push(c);
        }
    }

    /// A collective on comm 0 (sequence numbers counted per rank).
    pub fn coll(
        &mut self,
        rank: i32,
        name: &str,
        t0: i64,
        t1: i64,
        offset: u64,
        bytes: i64,
        root: Option<i32>,
    ) -> &mut Event {
        let s = self.coll_seq.entry(rank).or_insert(0);
        *s += 1;
        let seq = *s;
        let e = self.call(rank, name, t0, t1, offset);
        (e.comm, e.seq, e.bytes, e.root) = (Some(0), Some(seq), Some(bytes), root);
        if matches!(name, "MPI_Allreduce" | "MPI_Reduce") {
            e.recv_bytes = Some(bytes);
        }
        e
    }

    /// `MPI_Finalize` over [t0, t0 + 1000) on every rank that did not crash.
    pub fn finalize(&mut self, t0: i64) {
        for r in 0..self.ranks.len() as i32 {
            if !self.crashed.contains(&r) {
                self.call(r, "MPI_Finalize", t0, t0 + 1000, 0x20);
            }
        }
    }

    fn meta(&self, rank: i32) -> RankMeta {
        RankMeta {
            process: ProcessInfo {
                rank,
                size: self.ranks.len() as i32,
                host: "synthetic".into(),
                argv: vec!["synthetic".into()],
                mpi_library: "synthetic".into(),
                ..Default::default()
            },
            finalized: !self.crashed.contains(&rank),
            modules: if self.with_modules { vec![module(rank)] } else { Vec::new() },
            ..Default::default()
        }
    }

    /// The model of this trace (through the same builder the loader uses).
    pub fn model(&self) -> Model {
        let built = self
            .ranks
            .iter()
            .enumerate()
            .map(|(r, evs)| {
                let c = if self.crashed.contains(&(r as i32)) {
                    trace_format::Completeness::Partial { reason: "crashed".into() }
                } else {
                    trace_format::Completeness::Complete
                };
                let mut b = RankBuilder::new(r as i32, c);
                push_events(&mut b, evs);
                b.finish()
            })
            .collect();
        let meta = Meta::from_ranks((0..self.ranks.len() as i32).map(|r| self.meta(r)).collect(), "synthetic");
        assemble(meta, built, vec![world(self.ranks.len())], Vec::new())
    }

    /// Writes the trace as a directory (Parquet events and comms, meta.json).
    pub fn write(&self, dir: &Path) -> Result<(), Error> {
        for (r, evs) in self.ranks.iter().enumerate() {
            write_rank(dir, r as i32, evs, &self.meta(r as i32), self.ranks.len())?;
        }
        let meta = Meta::from_ranks((0..self.ranks.len() as i32).map(|r| self.meta(r)).collect(), "synthetic");
        Ok(meta.write(&dir.join(layout::META))?)
    }
}

impl SynthTrace {
    /// Writes the trace as a run that left only journals and side files
    /// (as a crashed job does: no events files), with a `meta.json` unless
    /// `meta` is false. Times are written as CLOCK_MONOTONIC nanoseconds;
    /// calls must be names of the MPI API table.
    pub fn write_journals(&self, dir: &Path, meta: bool) -> Result<(), Error> {
        use trace_format::journal::{ClockKind, JournalHeader, JournalWriter};
        use trace_format::record::{head, Record, NONE_I32, NONE_I64, NO_COMM, NO_RANK};
        use trace_format::side::{SideEntry, SideWriter};
        let jdir = dir.join(layout::JOURNAL_DIR);
        std::fs::create_dir_all(&jdir).map_err(|e| Error::Io { path: jdir.clone(), source: e })?;
        for (r, evs) in self.ranks.iter().enumerate() {
            let rank = r as i32;
            let rm = self.meta(rank);
            let mut side = SideWriter::open(&layout::side(dir, rank))?;
            side.write(&SideEntry::Process(rm.process.clone()))?;
            side.write(&SideEntry::Comm(CommInfo { slot: 0, ..world(self.ranks.len()) }))?;
            let header = JournalHeader { clock: ClockKind::MonotonicNs, pid: 1, thread: 0, rank, table_len: 0 };
            let mut j = JournalWriter::create(&layout::journal(dir, rank, 0), header)?;
            for e in evs {
                let Some(call) = trace_format::events::call_id(&e.call) else { continue };
                j.append(&Record {
                    head: head(call, e.kind, e.flags),
                    rc: e.rc.unwrap_or(0),
                    t_enter: e.t_start as u64,
                    t_exit: e.t_end.unwrap_or(0) as u64,
                    site: e.site.unwrap_or(0),
                    comm: if e.comm.is_some() { 0 } else { NO_COMM },
                    peer: e.peer.unwrap_or(NO_RANK),
                    tag: e.tag.unwrap_or(NONE_I32),
                    datatype: e.datatype.unwrap_or(NONE_I32),
                    count: e.count.unwrap_or(NONE_I64),
                    bytes: e.bytes.unwrap_or(NONE_I64),
                    seq: e.seq.unwrap_or(NONE_I64),
                    request: e.request.unwrap_or(NONE_I32),
                    root: e.root.unwrap_or(NO_RANK),
                    op: e.op.unwrap_or(NONE_I32),
                    aux: e.aux.unwrap_or(NONE_I32),
                    recv_bytes: e.recv_bytes.unwrap_or(NONE_I64),
                })?;
            }
            if rm.finalized {
                side.write(&SideEntry::Finalized)?;
            }
        }
        if meta {
            let meta = Meta::from_ranks((0..self.ranks.len() as i32).map(|r| self.meta(r)).collect(), "synthetic");
            meta.write(&dir.join(layout::META))?;
        }
        Ok(())
    }
}

fn world(n: usize) -> CommInfo {
    CommInfo { id: 0, call: "predefined".into(), members: (0..n as i32).collect(), ..Default::default() }
}

fn write_rank(dir: &Path, rank: i32, events: &[Event], meta: &RankMeta, n: usize) -> Result<(), Error> {
    for sub in [layout::EVENTS_DIR, layout::COMMS_DIR] {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).map_err(|e| Error::Io { path: d, source: e })?;
    }
    trace_format::table::write_events(&layout::events(dir, rank), events, meta)?;
    trace_format::table::write_comms(&layout::comms(dir, rank), &[world(n)])?;
    Ok(())
}

/// Parameters of a large synthetic run: a periodic 1-D stencil (two
/// `Irecv`, two `Isend`, a `Waitall` per step) with an `Allreduce` every
/// `allreduce_every` steps; rank 0 posts its halos late and the last rank
/// computes longer, so the trace has late senders and collective waits.
/// With `collectives` set, every step ends with six collectives
/// (`Allreduce`, `Bcast`, `Barrier`, `Allgather`, `Reduce`, `Alltoall`):
/// 40 % of the rows, the collective-heavy mix of the scale benchmarks.
#[derive(Clone, Copy, Debug)]
pub struct StencilParams {
    pub ranks: usize,
    pub steps: usize,
    pub allreduce_every: usize,
    pub bytes: i64,
    pub collectives: bool,
}

/// The collectives of a collective-heavy step, in order.
const HEAVY: [&str; 6] = ["MPI_Allreduce", "MPI_Bcast", "MPI_Barrier", "MPI_Allgather", "MPI_Reduce", "MPI_Alltoall"];

impl StencilParams {
    /// Steps needed for about `events` rows in total.
    pub fn for_events(ranks: usize, events: u64) -> StencilParams {
        let per_step = 9.1;
        StencilParams {
            ranks,
            steps: ((events as f64 / ranks as f64 / per_step).ceil() as usize).max(1),
            allreduce_every: 10,
            bytes: 8192,
            collectives: false,
        }
    }
    /// The collective-heavy mix, about `events` rows.
    pub fn collective_heavy(ranks: usize, events: u64) -> StencilParams {
        let per_step = 9.0 + HEAVY.len() as f64;
        StencilParams {
            steps: ((events as f64 / ranks as f64 / per_step).ceil() as usize).max(1),
            collectives: true,
            ..StencilParams::for_events(ranks, events)
        }
    }
}

fn hash(a: u64, b: u64) -> u64 {
    let mut x = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_add(0x632B_E59B_D9B4_E019);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

const PERIOD: i64 = 200_000;
const LAT: i64 = 3_000;

/// Times of rank `r` in step `s`: (post start, waitall start, waitall end, compute end).
fn step_times(p: &StencilParams, r: usize, s: usize) -> (i64, i64, i64, i64) {
    let post = |r: usize| {
        let base = 10_000 + s as i64 * PERIOD;
        base + (hash(r as u64, s as u64) % 5_000) as i64 + if r == 0 { 20_000 } else { 0 }
    };
    let n = p.ranks;
    let (left, right) = ((r + n - 1) % n, (r + 1) % n);
    let p0 = post(r);
    let wait_start = p0 + 4_000;
    let arrive = post(left).max(post(right)) + 2_000 + LAT;
    let wait_end = wait_start.max(arrive) + 1_000;
    let compute = 60_000 + (hash(s as u64, r as u64 + 7) % 10_000) as i64 + if r == n - 1 { 30_000 } else { 0 };
    (p0, wait_start, wait_end, wait_end + compute)
}

/// The rows of rank `r` of a synthetic stencil run.
pub fn stencil_rank(p: &StencilParams, r: usize) -> Vec<Event> {
    let n = p.ranks;
    let rank = r as i32;
    let (left, right) = (((r + n - 1) % n) as i32, ((r + 1) % n) as i32);
    let mut out = Vec::with_capacity(p.steps * 10 + 8);
    let call = |name: &str, t0: i64, t1: i64, off: u64| {
        let mut e = event(rank, Kind::Call, name, t0, t1);
        e.site = Some(site(rank, off));
        e
    };
    let names: Vec<Arc<str>> =
        ["MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Allreduce"].iter().map(|s| Arc::from(*s)).collect();
    out.push(call("MPI_Init", 0, 5_000, 0x10));
    let mut coll_seq = 0;
    for s in 0..p.steps {
        let (p0, ws, we, ce) = step_times(p, r, s);
        let seq = s as i64 + 1;
        let mut post = |i: i64, name: &Arc<str>, peer: i32, tag: i32, req: i32, off: u64| {
            let mut e = call("", p0 + i * 1_000, p0 + i * 1_000 + 500, off);
            e.call = name.clone();
            (e.comm, e.peer, e.tag, e.bytes, e.request, e.count, e.datatype) =
                (Some(0), Some(peer), Some(tag), Some(p.bytes), Some(req), Some(p.bytes / 8), Some(0x4c00080b));
            if &**name == "MPI_Isend" {
                e.seq = Some(seq);
            }
            out.push(e);
        };
        post(0, &names[0], left, 2, 1, 0x100);
        post(1, &names[0], right, 3, 2, 0x120);
        post(2, &names[1], right, 2, 3, 0x140);
        post(3, &names[1], left, 3, 4, 0x160);
        let mut w = call("", ws, we, 0x180);
        w.call = names[2].clone();
        w.count = Some(4);
        out.push(w);
        for (req, name, peer, tag) in [(1, 0, left, 2), (2, 0, right, 3), (3, 1, right, 2), (4, 1, left, 3)] {
            let mut c = event(rank, Kind::Completion, "", we, we);
            c.call = names[name].clone();
            c.site = Some(site(rank, 0x180));
            (c.comm, c.peer, c.tag, c.bytes, c.seq, c.request) =
                (Some(0), Some(peer), Some(tag), Some(p.bytes), Some(seq), Some(req));
            out.push(c);
        }
        if p.collectives {
            let last = (0..n).map(|q| step_times(p, q, s).3).max().unwrap_or(ce);
            let mut t = ce;
            for (j, name) in HEAVY.iter().enumerate() {
                coll_seq += 1;
                let end = last + (j as i64 + 1) * LAT;
                let mut a = call(name, t, end, 0x1c0 + 0x10 * j as u64);
                let bytes = if *name == "MPI_Barrier" { 0 } else { 8 };
                (a.comm, a.seq, a.bytes, a.recv_bytes, a.count) =
                    (Some(0), Some(coll_seq), Some(bytes), Some(bytes), Some(1));
                match *name {
                    "MPI_Allreduce" | "MPI_Reduce" => a.op = Some(0x58000003),
                    _ => {}
                }
                if matches!(*name, "MPI_Bcast" | "MPI_Reduce") {
                    a.root = Some(0);
                }
                out.push(a);
                t = end;
            }
        } else if s % p.allreduce_every == p.allreduce_every - 1 {
            let last = (0..n).map(|q| step_times(p, q, s).3).max().unwrap_or(ce);
            coll_seq += 1;
            let mut a = call("", ce, last + LAT, 0x1a0);
            a.call = names[3].clone();
            (a.comm, a.seq, a.bytes, a.recv_bytes, a.op, a.count) =
                (Some(0), Some(coll_seq), Some(8), Some(8), Some(0x58000003), Some(1));
            out.push(a);
        }
    }
    let end = (p.steps as i64 + 1) * PERIOD;
    out.push(call("MPI_Finalize", end, end + 5_000, 0x20));
    out
}

/// Writes a synthetic stencil trace to `dir`; returns the number of rows.
pub fn write_stencil(dir: &Path, p: &StencilParams) -> Result<u64, Error> {
    let ranks: Vec<usize> = (0..p.ranks).collect();
    let meta = |r: usize| RankMeta {
        process: ProcessInfo {
            rank: r as i32,
            size: p.ranks as i32,
            host: format!("node{}", r / 32),
            argv: vec!["synthetic-stencil".into()],
            mpi_library: "synthetic".into(),
            ..Default::default()
        },
        finalized: true,
        modules: vec![module(r as i32)],
        ..Default::default()
    };
    let results = crate::par_map(&ranks, |&r| -> Result<u64, Error> {
        let evs = stencil_rank(p, r);
        write_rank(dir, r as i32, &evs, &meta(r), p.ranks)?;
        Ok(evs.len() as u64)
    });
    let mut rows = 0;
    for r in results {
        rows += r?;
    }
    Meta::from_ranks(ranks.iter().map(|&r| meta(r)).collect(), "synthetic").write(&dir.join(layout::META))?;
    Ok(rows)
}
