//! Events: the rows of a trace, made from journal records, stored as Parquet.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use std::path::PathBuf;

use crate::journal::{ChunkReader, ClockKind, JournalEnd};
use crate::meta::ClockMap;
use crate::record::{flags, Kind, Record, NONE_I32, NONE_I64, NO_COMM, NO_RANK};
use crate::side::Side;

/// One row of the events table (see SCHEMA.md for the meaning of each field).
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub rank: i32,
    pub thread: i32,
    pub kind: Kind,
    /// MPI procedure (`MPI_Send`), region name for region rows, originating
    /// call (`MPI_Irecv`) for completion rows.
    pub call: Arc<str>,
    /// Start on the reference clock, ns.
    pub t_start: i64,
    /// End on the reference clock, ns; `None` while the call was in progress
    /// when the process died.
    pub t_end: Option<i64>,
    /// Start on the rank's own clock (CLOCK_MONOTONIC ns), uncorrected.
    pub t_local: i64,
    pub rc: Option<i32>,
    pub site: Option<u64>,
    pub comm: Option<u64>,
    pub peer: Option<i32>,
    pub tag: Option<i32>,
    pub datatype: Option<i32>,
    pub count: Option<i64>,
    pub bytes: Option<i64>,
    pub seq: Option<i64>,
    pub request: Option<i32>,
    pub root: Option<i32>,
    pub op: Option<i32>,
    /// Region id, Pcontrol level.
    pub aux: Option<i32>,
    pub recv_bytes: Option<i64>,
    /// The receive datatype of a collective that has one (`MPI_Gather`,
    /// `MPI_Alltoall`...), where significant.
    pub recv_datatype: Option<i32>,
    /// Communicator created by the call (trace-wide id).
    pub new_comm: Option<u64>,
    /// Record flags ([`crate::record::flags`]).
    pub flags: u8,
}

impl Event {
    pub fn is_call(&self, name: &str) -> bool {
        self.kind == Kind::Call && &*self.call == name
    }
    pub fn cancelled(&self) -> bool {
        self.flags & flags::CANCELLED != 0
    }
}

/// Names of the API table's procedures, indexed by call id.
pub fn call_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| mpi_api::table::procedures().into_iter().map(|p| p.name).collect())
}

/// Call id of a procedure name.
pub fn call_id(name: &str) -> Option<u16> {
    call_names().iter().position(|n| *n == name).map(|i| i as u16)
}

/// Maps journal clock ticks to CLOCK_MONOTONIC ns with the calibration points
/// of the side file (a line through the first and last point).
#[derive(Clone, Copy, Debug)]
pub struct TickMap {
    t0: u64,
    n0: u64,
    ns_per_tick: f64,
}

impl TickMap {
    pub fn new(clock: ClockKind, points: &[(u64, u64)]) -> TickMap {
        match (clock, points.first(), points.last()) {
            (ClockKind::Tsc, Some(&(t0, n0)), Some(&(t1, n1))) if t1 > t0 => {
                TickMap { t0, n0, ns_per_tick: (n1 as f64 - n0 as f64) / (t1 - t0) as f64 }
            }
            _ => TickMap { t0: 0, n0: 0, ns_per_tick: 1.0 },
        }
    }
    pub fn ns(&self, ticks: u64) -> i64 {
        self.n0 as i64 + ((ticks as f64 - self.t0 as f64) * self.ns_per_tick).round() as i64
    }
}

fn opt32(v: i32) -> Option<i32> {
    (v != NONE_I32).then_some(v)
}
fn opt64(v: i64) -> Option<i64> {
    (v != NONE_I64).then_some(v)
}

/// Turns the journals of one rank into events. Problems (damaged journals,
/// unknown call ids, communicator slots or regions) are appended to
/// `problems`; the flag says whether every journal was read whole.
pub fn events_from_journals(
    rank: i32,
    side: &Side,
    journals: &[(u32, PathBuf)],
    clock: ClockMap,
    problems: &mut Vec<String>,
) -> (Vec<Event>, bool) {
    let mut all = Vec::new();
    let whole = stream_events(rank, side, journals, clock, problems, 1 << 16, &mut |chunk| all.append(chunk));
    (all, whole)
}

/// Like [`events_from_journals`], handing the events to `emit` in chunks of
/// at most `chunk` rows (the chunk is emptied by `emit` or afterwards).
pub fn stream_events(
    rank: i32,
    side: &Side,
    journals: &[(u32, PathBuf)],
    clock: ClockMap,
    problems: &mut Vec<String>,
    chunk: usize,
    emit: &mut dyn FnMut(&mut Vec<Event>),
) -> bool {
    let names = call_names();
    let mut name_cache: HashMap<(u8, u16, i32), Arc<str>> = HashMap::new();
    let slots: HashMap<u32, u64> = side.comms().map(|c| (c.slot, c.id)).collect();
    let regions: HashMap<i32, &str> = side.regions().collect();
    let points = side.clock_points();
    let mut out = Vec::new();
    let mut missing_slots = 0usize;
    let mut whole = true;
    for (thread, path) in journals {
        let mut j = match ChunkReader::open(path).and_then(|j| j.check_name(rank, *thread).map(|()| j)) {
            Ok(j) => j,
            Err(e) => {
                problems.push(e.to_string());
                whole = false;
                continue;
            }
        };
        let ticks = TickMap::new(j.header.clock, &points);
        if j.header.table_len != 0 && j.header.table_len as usize != names.len() {
            problems.push(format!(
                "{}: written with an API table of {} procedures, read with {}; call names may be wrong",
                j.path.display(),
                j.header.table_len,
                names.len()
            ));
        }
        if j.header.clock == ClockKind::Tsc && points.len() < 2 {
            problems
                .push(format!("{}: fewer than two clock calibration points; times are raw ticks", j.path.display()));
        }
        let mut n = 0usize;
        loop {
            let records = j.next_chunk(chunk.min(1 << 16));
            if records.is_empty() {
                break;
            }
            n += records.len();
            for r in &records {
                let Some(kind) = r.kind() else {
                    problems.push(format!("{}: record with unknown kind {:#x}", j.path.display(), r.head));
                    continue;
                };
                let region_id = matches!(kind, Kind::RegionBegin | Kind::RegionEnd).then_some(r.aux).unwrap_or(0);
                let call = name_cache
                    .entry((kind as u8, r.call(), region_id))
                    .or_insert_with(|| match kind {
                        Kind::RegionBegin | Kind::RegionEnd => {
                            Arc::from(regions.get(&r.aux).copied().unwrap_or("<unknown region>"))
                        }
                        _ => Arc::from(names.get(r.call() as usize).copied().unwrap_or("<unknown call>")),
                    })
                    .clone();
                let comm = if r.comm == NO_COMM {
                    None
                } else {
                    let id = slots.get(&r.comm).copied();
                    missing_slots += usize::from(id.is_none());
                    id
                };
                let mut e = event_from_record(rank, j.header.thread as i32, kind, call, r, comm, &ticks, &clock);
                if r.flags() & flags::NEW_COMM != 0 {
                    e.new_comm = slots.get(&(r.aux as u32)).copied();
                    e.aux = None;
                }
                out.push(e);
                if out.len() >= chunk {
                    emit(&mut out);
                    out.clear();
                }
            }
        }
        if let Some(end) = j.end().filter(|e| **e != JournalEnd::Clean) {
            problems.push(format!("{}: {end:?}; {n} records read", j.path.display()));
            whole = false;
        }
    }
    if missing_slots > 0 {
        problems.push(format!("rank {rank}: {missing_slots} records name communicators missing from the side file"));
    }
    if !out.is_empty() {
        emit(&mut out);
    }
    whole
}

/// The row of one journal record (`comm`: the trace-wide id of its slot);
/// also used by readers that follow the journals of a running job.
#[allow(clippy::too_many_arguments)]
pub fn event_from_record(
    rank: i32,
    thread: i32,
    kind: Kind,
    call: Arc<str>,
    r: &Record,
    comm: Option<u64>,
    ticks: &TickMap,
    clock: &ClockMap,
) -> Event {
    let local = ticks.ns(r.t_enter);
    let done = r.is_done();
    // Collectives keep their receive datatype in `tag`.
    let (tag, recv_datatype) =
        if r.flags() & flags::RECV_TYPE != 0 { (None, opt32(r.tag)) } else { (opt32(r.tag), None) };
    Event {
        rank,
        thread,
        kind,
        call,
        t_start: clock.to_reference(local),
        t_end: done.then(|| clock.to_reference(ticks.ns(r.t_exit.max(r.t_enter)))),
        t_local: local,
        rc: done.then_some(r.rc),
        site: (r.site != 0).then_some(r.site),
        comm,
        peer: (r.peer != NO_RANK).then_some(r.peer),
        tag,
        datatype: opt32(r.datatype),
        count: opt64(r.count),
        bytes: opt64(r.bytes),
        seq: opt64(r.seq),
        request: opt32(r.request),
        root: (r.root != NO_RANK).then_some(r.root),
        op: opt32(r.op),
        aux: opt32(r.aux),
        recv_bytes: opt64(r.recv_bytes),
        recv_datatype,
        new_comm: None,
        flags: r.flags(),
    }
}
