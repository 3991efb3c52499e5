//! MPI-IO and one-sided communication: bytes, calls and bandwidth per file
//! and per kind of access, time in I/O per rank; bytes per target and
//! window, access epochs and time in synchronization per rank.
//!
//! Files and windows are told apart by the handle the shim records in the
//! `seq` column of `MPI_File_*` and one-sided calls. Handles differ from
//! rank to rank and are reused after a close or free, so a file is named
//! by the communicator it was opened on and its place among the files
//! opened on it (opening is collective: the k-th `MPI_File_open` on a
//! communicator is the same file on every member), and a window likewise
//! by its creation. File names are not recorded. A trace without handles
//! (recorded before the shim kept them) gets one file and one window per
//! communicator.
//!
//! Bandwidth is bytes over the time spent in the calls that moved them
//! (summed over ranks), what Darshan calls the per-process rate. Epochs:
//! fence epochs are the fences of a rank minus one (the first fence opens,
//! each next one closes and opens); PSCW access and exposure epochs are the
//! `MPI_Win_start` and `MPI_Win_post` calls; passive-target epochs are the
//! `MPI_Win_lock` and `MPI_Win_lock_all` calls, summed over ranks.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::model::{Model, OpEv, RankData, NONE, NO_HANDLE};
use crate::report::{Align, Block, Table, Tone};
use crate::{fmt_bytes, fmt_ns, par_map};

/// Whether `name` is an MPI-IO or one-sided call the loader keeps as an
/// [`OpEv`].
pub fn is_op(name: &str) -> bool {
    name.starts_with("MPI_File_") || name.starts_with("MPI_Win_") || rma_kind(name).is_some()
}

/// How a file access positions itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Access {
    /// `_at`: an explicit offset.
    ExplicitOffset,
    /// The process's own file pointer.
    IndividualPointer,
    /// `_shared`, `_ordered`: the file's shared pointer.
    SharedPointer,
}

/// A data access of MPI-IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IoKind {
    pub write: bool,
    pub collective: bool,
    pub access: Access,
}

impl IoKind {
    pub fn label(&self) -> String {
        format!(
            "{}, {}, {}",
            if self.write { "write" } else { "read" },
            if self.collective { "collective" } else { "independent" },
            match self.access {
                Access::ExplicitOffset => "explicit offset",
                Access::IndividualPointer => "individual pointer",
                Access::SharedPointer => "shared pointer",
            }
        )
    }
}

/// The kind of data access of an `MPI_File_*` call, `None` for the others
/// (open, close, set_view, sync...). Split collectives (`_begin`/`_end`)
/// and nonblocking ones (`MPI_File_iwrite...`) count as their access.
pub fn io_kind(name: &str) -> Option<IoKind> {
    let s = name.strip_prefix("MPI_File_")?;
    let s = s.strip_suffix("_c").unwrap_or(s);
    let s = s.strip_prefix('i').filter(|r| r.starts_with("read") || r.starts_with("write")).unwrap_or(s);
    let (write, rest) = match (s.strip_prefix("read"), s.strip_prefix("write")) {
        (Some(r), _) => (false, r),
        (_, Some(r)) => (true, r),
        _ => return None,
    };
    let ordered = rest.starts_with("_ordered");
    let access = if rest.starts_with("_at") {
        Access::ExplicitOffset
    } else if rest.starts_with("_shared") || ordered {
        Access::SharedPointer
    } else {
        Access::IndividualPointer
    };
    Some(IoKind { write, collective: rest.contains("_all") || ordered, access })
}

/// A one-sided communication call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RmaKind {
    Put,
    Get,
    /// Accumulate, Get_accumulate, Fetch_and_op, Compare_and_swap.
    Accumulate,
}

pub fn rma_kind(name: &str) -> Option<RmaKind> {
    let s = name.strip_prefix("MPI_")?;
    let s = s.strip_suffix("_c").unwrap_or(s);
    Some(match s {
        "Put" | "Rput" => RmaKind::Put,
        "Get" | "Rget" => RmaKind::Get,
        "Accumulate" | "Raccumulate" | "Get_accumulate" | "Rget_accumulate" | "Fetch_and_op" | "Compare_and_swap" => {
            RmaKind::Accumulate
        }
        _ => return None,
    })
}

/// The synchronization modes of one-sided communication.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncKind {
    Fence,
    /// Post, start, complete, wait (general active target).
    Pscw,
    /// Lock, unlock, flush (passive target).
    Lock,
}

pub fn sync_kind(name: &str) -> Option<SyncKind> {
    let s = name.strip_prefix("MPI_Win_")?;
    Some(match s {
        "fence" => SyncKind::Fence,
        "post" | "start" | "complete" | "wait" | "test" => SyncKind::Pscw,
        "lock" | "unlock" | "lock_all" | "unlock_all" | "sync" => SyncKind::Lock,
        f if f.starts_with("flush") => SyncKind::Lock,
        _ => return None,
    })
}

fn creates_window(name: &str) -> bool {
    let s = name.strip_suffix("_c").unwrap_or(name);
    matches!(s, "MPI_Win_create" | "MPI_Win_allocate" | "MPI_Win_allocate_shared" | "MPI_Win_create_dynamic")
}

/// Bytes, calls and time of one file or kind of access.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IoRow {
    /// The file (`file 1 (WORLD)`) or the kind (`write, collective, explicit offset`).
    pub name: String,
    /// Ranks that accessed it.
    pub ranks: usize,
    /// Calls (for a file: every `MPI_File_*` call on it, open and close included).
    pub calls: u64,
    pub read_bytes: i64,
    pub written_bytes: i64,
    /// Time in those calls, summed over ranks.
    pub time_ns: i64,
    /// Bytes read and written per second of the time in the calls that
    /// moved them.
    pub bandwidth: f64,
}

/// Time and bytes of one rank in MPI-IO or one-sided calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RankIo {
    pub rank: i32,
    pub calls: u64,
    pub bytes: i64,
    /// Time in the calls (for one-sided communication: in synchronization).
    pub time_ns: i64,
    /// Of the rank's profile window.
    pub fraction: f64,
}

/// MPI-IO.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IoReport {
    pub calls: u64,
    pub read_bytes: i64,
    pub written_bytes: i64,
    pub time_ns: i64,
    pub files: Vec<IoRow>,
    /// Per kind of access (data accesses only).
    pub kinds: Vec<IoRow>,
    /// Ranks with MPI-IO calls.
    pub ranks: Vec<RankIo>,
}

/// One-sided bytes to one target through one window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RmaTarget {
    pub window: String,
    pub target: i32,
    /// Put, get and accumulate calls of all origins.
    pub calls: u64,
    pub put_bytes: i64,
    pub get_bytes: i64,
    pub acc_bytes: i64,
}

/// Epochs and synchronization of one window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowSync {
    pub window: String,
    pub ranks: usize,
    pub fence_epochs: u64,
    pub pscw_access_epochs: u64,
    pub pscw_exposure_epochs: u64,
    pub lock_epochs: u64,
    pub fence_ns: i64,
    pub pscw_ns: i64,
    pub lock_ns: i64,
}

/// One-sided communication.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RmaReport {
    pub puts: u64,
    pub gets: u64,
    pub accumulates: u64,
    pub bytes: i64,
    /// Time in synchronization calls, summed over ranks.
    pub sync_ns: i64,
    pub targets: Vec<RmaTarget>,
    pub windows: Vec<WindowSync>,
    /// Ranks with one-sided calls.
    pub ranks: Vec<RankIo>,
}

/// Both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IoRma {
    pub io: IoReport,
    pub rma: RmaReport,
}

/// A file or window: its communicator and its number among those opened or
/// created on it ([`u32::MAX`] when the trace has no handles).
type Object = (u32, u32);

#[derive(Default)]
struct Acc {
    calls: u64,
    read: i64,
    written: i64,
    time: i64,
    /// Time of the calls that moved data (the bandwidth's).
    data_time: i64,
}

impl Acc {
    fn add(&mut self, o: &Acc) {
        self.calls += o.calls;
        self.read += o.read;
        self.written += o.written;
        self.time += o.time;
        self.data_time += o.data_time;
    }
    fn row(&self, name: String, ranks: usize) -> IoRow {
        let bw = if self.data_time > 0 { (self.read + self.written) as f64 * 1e9 / self.data_time as f64 } else { 0.0 };
        IoRow {
            name,
            ranks,
            calls: self.calls,
            read_bytes: self.read,
            written_bytes: self.written,
            time_ns: self.time,
            bandwidth: bw,
        }
    }
}

#[derive(Default)]
struct WinAcc {
    fences: u64,
    starts: u64,
    posts: u64,
    locks: u64,
    ns: [i64; 3],
}

#[derive(Default)]
struct RankAcc {
    files: HashMap<Object, Acc>,
    kinds: HashMap<IoKind, Acc>,
    io: RankIo,
    /// (window, target) -> calls, put, get, acc bytes.
    targets: HashMap<(Object, i32), (u64, [i64; 3])>,
    windows: HashMap<Object, WinAcc>,
    rma: RankIo,
    rma_ops: [u64; 3],
}

/// Follows the handles of one rank to the files and windows they stand for.
#[derive(Default)]
struct Objects {
    open: HashMap<i64, Object>,
    /// Files or windows opened so far per communicator.
    made: HashMap<u32, u32>,
}

impl Objects {
    fn create(&mut self, o: &OpEv) -> Object {
        if o.handle == NO_HANDLE {
            return (o.comm, u32::MAX);
        }
        let n = self.made.entry(o.comm).or_default();
        let obj = (o.comm, *n);
        *n += 1;
        self.open.insert(o.handle, obj);
        obj
    }
    fn of(&self, o: &OpEv) -> Object {
        self.open.get(&o.handle).copied().unwrap_or((o.comm, u32::MAX))
    }
}

fn rank_acc(m: &Model, r: &RankData) -> RankAcc {
    let mut a = RankAcc::default();
    let (mut files, mut wins) = (Objects::default(), Objects::default());
    for o in &r.ops {
        let c = r.calls.at(o.call as usize);
        let name = m.name(c.name);
        let d = c.duration().max(0);
        let bytes = o.bytes.max(0);
        if name.starts_with("MPI_File_") {
            let obj = if name == "MPI_File_open" { files.create(o) } else { files.of(o) };
            let f = a.files.entry(obj).or_default();
            f.calls += 1;
            f.time += d;
            a.io.calls += 1;
            a.io.time_ns += d;
            if let Some(k) = io_kind(name) {
                let moved = if k.write { (0, bytes) } else { (bytes, 0) };
                f.read += moved.0;
                f.written += moved.1;
                f.data_time += d;
                a.io.bytes += bytes;
                let e = a.kinds.entry(k).or_default();
                e.calls += 1;
                e.read += moved.0;
                e.written += moved.1;
                e.time += d;
                e.data_time += d;
            }
            if name == "MPI_File_close" {
                files.open.remove(&o.handle);
            }
        } else if let Some(k) = rma_kind(name) {
            let obj = wins.of(o);
            let t = a.targets.entry((obj, o.peer)).or_default();
            t.0 += 1;
            t.1[k as usize] += bytes;
            a.rma_ops[k as usize] += 1;
            a.rma.calls += 1;
            a.rma.bytes += bytes;
        } else {
            let obj = if creates_window(name) { wins.create(o) } else { wins.of(o) };
            let w = a.windows.entry(obj).or_default();
            a.rma.calls += 1;
            if let Some(s) = sync_kind(name) {
                w.ns[s as usize] += d;
                a.rma.time_ns += d;
                match name {
                    "MPI_Win_fence" => w.fences += 1,
                    "MPI_Win_start" => w.starts += 1,
                    "MPI_Win_post" => w.posts += 1,
                    "MPI_Win_lock" | "MPI_Win_lock_all" => w.locks += 1,
                    _ => {}
                }
            }
            if name == "MPI_Win_free" {
                wins.open.remove(&o.handle);
            }
        }
    }
    let window = crate::profile::window(m, r).map(|(lo, hi)| hi - lo).unwrap_or(0);
    for x in [&mut a.io, &mut a.rma] {
        x.rank = r.rank;
        x.fraction = if window > 0 { x.time_ns as f64 / window as f64 } else { 0.0 };
    }
    a
}

fn object_label(m: &Model, kind: &str, (comm, n): Object) -> String {
    let comm = if comm == NONE { "?".to_string() } else { m.comm_label(comm) };
    if n == u32::MAX {
        format!("{kind}s on {comm}")
    } else {
        format!("{kind} {} ({comm})", n + 1)
    }
}

/// MPI-IO and one-sided communication of the whole trace.
pub fn io_rma(m: &Model) -> IoRma {
    let accs = par_map(&m.ranks, |r| (!r.ops.is_empty()).then(|| rank_acc(m, r)));
    let mut io = IoReport::default();
    let mut rma = RmaReport::default();
    let mut files: BTreeMap<Object, (Acc, usize)> = BTreeMap::new();
    let mut kinds: BTreeMap<IoKind, (Acc, usize)> = BTreeMap::new();
    let mut targets: BTreeMap<(Object, i32), (u64, [i64; 3])> = BTreeMap::new();
    let mut windows: BTreeMap<Object, (WinAcc, usize)> = BTreeMap::new();
    for a in accs.into_iter().flatten() {
        for (k, f) in &a.files {
            let e = files.entry(*k).or_default();
            e.0.add(f);
            e.1 += 1;
        }
        for (k, f) in &a.kinds {
            let e = kinds.entry(*k).or_default();
            e.0.add(f);
            e.1 += 1;
        }
        for (k, (n, b)) in &a.targets {
            let e = targets.entry(*k).or_default();
            e.0 += n;
            for (x, y) in e.1.iter_mut().zip(b) {
                *x += y;
            }
        }
        for (k, w) in &a.windows {
            let e = windows.entry(*k).or_default();
            e.0.fences = e.0.fences.max(w.fences);
            e.0.starts += w.starts;
            e.0.posts += w.posts;
            e.0.locks += w.locks;
            for (x, y) in e.0.ns.iter_mut().zip(w.ns) {
                *x += y;
            }
            e.1 += 1;
        }
        if a.io.calls > 0 {
            io.calls += a.io.calls;
            io.time_ns += a.io.time_ns;
            io.ranks.push(a.io);
        }
        if a.rma.calls > 0 {
            rma.puts += a.rma_ops[RmaKind::Put as usize];
            rma.gets += a.rma_ops[RmaKind::Get as usize];
            rma.accumulates += a.rma_ops[RmaKind::Accumulate as usize];
            rma.bytes += a.rma.bytes;
            rma.sync_ns += a.rma.time_ns;
            rma.ranks.push(a.rma);
        }
    }
    io.files = files.iter().map(|(k, (a, n))| a.row(object_label(m, "file", *k), *n)).collect();
    io.read_bytes = io.files.iter().map(|f| f.read_bytes).sum();
    io.written_bytes = io.files.iter().map(|f| f.written_bytes).sum();
    io.kinds = kinds.iter().map(|(k, (a, n))| a.row(k.label(), *n)).collect();
    rma.targets = targets
        .iter()
        .map(|((w, t), (n, b))| RmaTarget {
            window: object_label(m, "window", *w),
            target: *t,
            calls: *n,
            put_bytes: b[RmaKind::Put as usize],
            get_bytes: b[RmaKind::Get as usize],
            acc_bytes: b[RmaKind::Accumulate as usize],
        })
        .collect();
    rma.windows = windows
        .iter()
        .map(|(w, (a, n))| WindowSync {
            window: object_label(m, "window", *w),
            ranks: *n,
            fence_epochs: a.fences.saturating_sub(1),
            pscw_access_epochs: a.starts,
            pscw_exposure_epochs: a.posts,
            lock_epochs: a.locks,
            fence_ns: a.ns[SyncKind::Fence as usize],
            pscw_ns: a.ns[SyncKind::Pscw as usize],
            lock_ns: a.ns[SyncKind::Lock as usize],
        })
        .collect();
    IoRma { io, rma }
}

fn cell(s: impl Into<String>) -> (String, Tone) {
    (s.into(), Tone::Plain)
}

fn bytes_cell(b: i64) -> (String, Tone) {
    cell(if b > 0 { fmt_bytes(b) } else { "-".into() })
}

fn rate(bw: f64) -> (String, Tone) {
    cell(if bw > 0.0 { format!("{}/s", fmt_bytes(bw as i64)) } else { "-".into() })
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Most rows a table of these sections shows.
const ROWS: usize = 16;

/// The I/O and one-sided sections of a document (empty when the trace has
/// neither); shared by the report and both viewers.
pub fn document(x: &IoRma) -> Vec<Block> {
    let mut d = Vec::new();
    let io = &x.io;
    if io.calls > 0 {
        d.push(Block::Heading("I/O".into()));
        d.push(Block::Para(
            format!(
                "{} MPI-IO calls; read {}, written {}; {} in I/O calls",
                io.calls,
                fmt_bytes(io.read_bytes),
                fmt_bytes(io.written_bytes),
                fmt_ns(io.time_ns)
            ),
            Tone::Plain,
        ));
        let cols = [
            ("file", Align::Left),
            ("ranks", Align::Right),
            ("calls", Align::Right),
            ("read", Align::Right),
            ("written", Align::Right),
            ("time", Align::Right),
            ("bandwidth", Align::Right),
        ];
        for (rows, first) in [(&io.files, "file"), (&io.kinds, "operation")] {
            if rows.is_empty() {
                continue;
            }
            let mut c = cols;
            c[0].0 = first;
            let mut t = Table::new(&c);
            for f in rows.iter().take(ROWS) {
                t.row(vec![
                    cell(&f.name),
                    cell(f.ranks.to_string()),
                    cell(f.calls.to_string()),
                    bytes_cell(f.read_bytes),
                    bytes_cell(f.written_bytes),
                    cell(fmt_ns(f.time_ns)),
                    rate(f.bandwidth),
                ]);
            }
            d.push(Block::Table(t));
        }
        d.push(Block::Bars(rank_bars(&io.ranks, "in I/O")));
    }
    let rma = &x.rma;
    if !rma.ranks.is_empty() {
        d.push(Block::Heading("One-sided communication".into()));
        d.push(Block::Para(
            format!(
                "{} puts, {} gets, {} accumulates; {} moved; {} in synchronization",
                rma.puts,
                rma.gets,
                rma.accumulates,
                fmt_bytes(rma.bytes),
                fmt_ns(rma.sync_ns)
            ),
            Tone::Plain,
        ));
        if !rma.targets.is_empty() {
            let mut t = Table::new(&[
                ("window", Align::Left),
                ("target", Align::Right),
                ("calls", Align::Right),
                ("put", Align::Right),
                ("get", Align::Right),
                ("accumulate", Align::Right),
            ]);
            for r in rma.targets.iter().take(ROWS) {
                t.row(vec![
                    cell(&r.window),
                    cell(if r.target >= 0 { r.target.to_string() } else { "-".into() }),
                    cell(r.calls.to_string()),
                    bytes_cell(r.put_bytes),
                    bytes_cell(r.get_bytes),
                    bytes_cell(r.acc_bytes),
                ]);
            }
            d.push(Block::Table(t));
        }
        if !rma.windows.is_empty() {
            let mut t = Table::new(&[
                ("window", Align::Left),
                ("ranks", Align::Right),
                ("fence epochs", Align::Right),
                ("PSCW access/exposure", Align::Right),
                ("lock epochs", Align::Right),
                ("fence", Align::Right),
                ("PSCW", Align::Right),
                ("lock", Align::Right),
            ]);
            for w in rma.windows.iter().take(ROWS) {
                t.row(vec![
                    cell(&w.window),
                    cell(w.ranks.to_string()),
                    cell(w.fence_epochs.to_string()),
                    cell(format!("{}/{}", w.pscw_access_epochs, w.pscw_exposure_epochs)),
                    cell(w.lock_epochs.to_string()),
                    cell(fmt_ns(w.fence_ns)),
                    cell(fmt_ns(w.pscw_ns)),
                    cell(fmt_ns(w.lock_ns)),
                ]);
            }
            d.push(Block::Table(t));
        }
        d.push(Block::Bars(rank_bars(&rma.ranks, "in synchronization")));
    }
    d
}

fn rank_bars(ranks: &[RankIo], what: &str) -> Vec<(String, f64, String)> {
    let mut v: Vec<&RankIo> = ranks.iter().collect();
    if v.len() > ROWS {
        v.sort_by_key(|r| std::cmp::Reverse(r.time_ns));
        v.truncate(ROWS);
    }
    v.iter()
        .map(|r| {
            (
                format!("rank {}", r.rank),
                r.fraction.clamp(0.0, 1.0),
                format!(
                    "{} {what} ({}), {} calls, {}",
                    fmt_ns(r.time_ns),
                    pct(r.fraction),
                    r.calls,
                    fmt_bytes(r.bytes)
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_access() {
        let k = |w, c, a| Some(IoKind { write: w, collective: c, access: a });
        assert_eq!(io_kind("MPI_File_write_at_all"), k(true, true, Access::ExplicitOffset));
        assert_eq!(io_kind("MPI_File_iread_at"), k(false, false, Access::ExplicitOffset));
        assert_eq!(io_kind("MPI_File_read"), k(false, false, Access::IndividualPointer));
        assert_eq!(io_kind("MPI_File_iwrite_all"), k(true, true, Access::IndividualPointer));
        assert_eq!(io_kind("MPI_File_write_ordered_begin"), k(true, true, Access::SharedPointer));
        assert_eq!(io_kind("MPI_File_read_shared_c"), k(false, false, Access::SharedPointer));
        assert_eq!(io_kind("MPI_File_open"), None);
        assert_eq!(io_kind("MPI_File_set_view"), None);
        assert_eq!(rma_kind("MPI_Rput"), Some(RmaKind::Put));
        assert_eq!(rma_kind("MPI_Fetch_and_op"), Some(RmaKind::Accumulate));
        assert_eq!(sync_kind("MPI_Win_flush_local_all"), Some(SyncKind::Lock));
        assert_eq!(sync_kind("MPI_Win_create"), None);
        assert!(is_op("MPI_Get") && is_op("MPI_Win_fence") && !is_op("MPI_Send"));
    }
}
