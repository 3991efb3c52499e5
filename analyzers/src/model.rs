//! The compact in-memory form of a trace that every analysis works on.
//!
//! A trace of 10^8 events does not fit in memory as [`trace_format::Event`]s
//! (about 200 bytes each). The loader ([`crate::load`]) turns each rank's
//! rows into a few vectors of small records:
//!
//! - [`Calls`] (16 bytes per call): every MPI call, sorted by start time,
//!   read as [`CallEv`] values;
//! - [`Ends`] (20 bytes per message end): every point-to-point send and
//!   receive, read as [`P2p`] values, with the call that posted it and the
//!   call that completed it (the same call for blocking operations; the
//!   `Wait*`/`Test*` for nonblocking ones);
//! - [`CollEv`] (40 bytes): every collective call with its per-communicator
//!   sequence number;
//! - [`RegionEv`]: user region marks.
//!
//! Completion rows of the trace are folded into the `P2p`/`CollEv` records
//! and are not stored themselves. Strings (call names, region names) and
//! communicator ids are interned into small integer ids; what calls and
//! message ends repeat (name, flags, site; communicator, peer, tag) is
//! interned per rank (see [`crate::compact`]).

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use trace_format::reader::Completeness;

pub use crate::compact::{CallIter, Calls, EndIter, Ends, Packed};
use trace_format::Meta;

/// "No index" in the `u32` index fields.
pub const NONE: u32 = u32::MAX;

/// Flags of a [`CallEv`].
pub mod call_flags {
    /// The call never returned (the process died inside it); `t_end` is the
    /// last time known of the rank.
    pub const UNFINISHED: u16 = 1;
    /// The call returned an error code.
    pub const FAILED: u16 = 2;
}

/// One MPI call (as read from [`Calls`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct CallEv {
    pub t_start: i64,
    pub t_end: i64,
    /// Index into [`Model::names`].
    pub name: u16,
    pub flags: u16,
    /// Index into [`Model::sites`].
    pub site: u32,
    /// Thread of the rank that made the call (its journal's number; 0 is
    /// the thread that initialized MPI).
    pub thread: u16,
}

impl CallEv {
    pub fn duration(&self) -> i64 {
        self.t_end - self.t_start
    }
}

/// A point-to-point message end (a send or a receive) of one rank (as read
/// from [`Ends`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct P2p {
    /// Index into [`Model::comms`].
    pub comm: u32,
    /// The other side as world rank (destination of a send, actual source
    /// of a receive once completed; negative if unknown or `MPI_PROC_NULL`).
    pub peer: i32,
    pub tag: i32,
    /// Message sequence number of the channel (comm, source, destination,
    /// tag), or [`NONE`] if not recorded.
    pub seq: u32,
    /// Bytes sent or received; negative if unknown.
    pub bytes: i64,
    /// Call (index into the rank's `calls`) that posted the operation.
    pub post: u32,
    /// Call that completed it, or [`NONE`] if it never completed.
    pub done: u32,
}

/// One collective call of a rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct CollEv {
    pub comm: u32,
    /// Per-communicator sequence number: equal on every member for the same
    /// collective instance.
    pub seq: u32,
    pub post: u32,
    pub done: u32,
    pub bytes: i64,
    pub recv_bytes: i64,
    /// Root as world rank, or `i32::MIN` if the operation has none.
    pub root: i32,
    pub op: i32,
}

/// An MPI-IO or one-sided call (`MPI_File_*`, `MPI_Win_*`, `MPI_Put`...)
/// with what its [`CallEv`] does not keep (see [`crate::iorma`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpEv {
    /// Index into the rank's calls.
    pub call: u32,
    /// Bytes read, written, put or got by this process; negative if unknown.
    pub bytes: i64,
    /// Target of a one-sided operation as world rank; negative if none.
    pub peer: i32,
    /// Communicator of the file or window (index into [`Model::comms`]),
    /// or [`NONE`].
    pub comm: u32,
    /// The file or window handle the process used (reused after a close or
    /// free), or [`NO_HANDLE`] when the trace did not record it.
    pub handle: i64,
}

/// [`OpEv::handle`] not recorded.
pub const NO_HANDLE: i64 = i64::MIN;

/// A user region mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionEv {
    pub t: i64,
    /// Index into [`Model::names`].
    pub name: u16,
    pub begin: bool,
}

/// Everything loaded of one rank.
#[derive(Clone, Debug)]
pub struct RankData {
    pub rank: i32,
    pub completeness: Completeness,
    pub calls: Calls,
    pub sends: Ends,
    pub recvs: Ends,
    pub colls: Vec<CollEv>,
    /// MPI-IO and one-sided calls, in call order.
    pub ops: Vec<OpEv>,
    pub regions: Vec<RegionEv>,
    /// Rows of the trace read for this rank (calls, completions, regions).
    pub rows: u64,
    /// Hardware counters (`MPITRACE_COUNTERS`) of the rank, in the order
    /// of the values of [`RankData::site_counters`].
    pub counter_names: Vec<String>,
    /// Per (site, call name) of the rank's calls: the hardware counters
    /// summed over the compute intervals that ended at those calls (all
    /// threads), sorted.
    pub site_counters: Vec<((u32, u16), Vec<u64>)>,
}

impl RankData {
    pub fn new(rank: i32, completeness: Completeness) -> RankData {
        RankData {
            rank,
            completeness,
            calls: Calls::default(),
            sends: Ends::default(),
            recvs: Ends::default(),
            colls: Vec::new(),
            ops: Vec::new(),
            regions: Vec::new(),
            rows: 0,
            counter_names: Vec::new(),
            site_counters: Vec::new(),
        }
    }
    /// Start of the first and end of the last call, if any.
    /// The rank's hardware counters summed over all its compute
    /// intervals: (name, total).
    pub fn counter_totals(&self) -> Vec<(&str, u64)> {
        let mut t = vec![0u64; self.counter_names.len()];
        for (_, v) in &self.site_counters {
            for (s, x) in t.iter_mut().zip(v) {
                *s = s.wrapping_add(*x);
            }
        }
        self.counter_names.iter().map(String::as_str).zip(t).collect()
    }
    pub fn span(&self) -> Option<(i64, i64)> {
        let first = self.calls.first()?.t_start;
        let last = self.calls.timed_kinds().map(|c| c.2).max()?;
        Some((first, last))
    }
    /// Time the operation was posted, and the start and end of the call that
    /// completed it (the post call for blocking operations).
    pub fn times(&self, post: u32, done: u32) -> (i64, Option<(i64, i64)>) {
        let d = (done != NONE).then(|| {
            let d = self.calls.at(done as usize);
            (d.t_start, d.t_end)
        });
        (self.calls.t_start(post as usize), d)
    }
}

/// A communicator.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CommDesc {
    /// Trace-wide id (0 = MPI_COMM_WORLD).
    pub id: u64,
    /// Members as world ranks (empty if the table was not found).
    pub members: Vec<i32>,
    pub name: Option<String>,
    pub call: String,
}

impl CommDesc {
    /// A short label: its name, "WORLD", or the creating call and id.
    pub fn label(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        match (self.id, self.members.len()) {
            (0, _) => "WORLD".into(),
            (_, 1) if self.call == "predefined" => "SELF".into(),
            _ => format!("{}#{:x}", self.call.trim_start_matches("MPI_"), self.id & 0xffff),
        }
    }
}

/// Where a problem was found and what it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file concerned, if any.
    pub file: Option<String>,
    pub rank: Option<i32>,
    pub what: String,
}

impl Problem {
    /// A problem from a trace-format error: the file it names becomes the
    /// problem's file, and the message is kept without it (so that the
    /// file is named once).
    pub fn of_error(rank: Option<i32>, e: &trace_format::Error) -> Problem {
        match e.path() {
            Some(p) => Problem { file: Some(p.display().to_string()), rank, what: e.what() },
            None => Problem { file: None, rank, what: e.to_string() },
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.file, self.rank) {
            (Some(p), _) => write!(f, "{p}: {}", self.what),
            (None, Some(r)) => write!(f, "rank {r}: {}", self.what),
            (None, None) => f.write_str(&self.what),
        }
    }
}

/// A call site: the return address in one rank and the key that identifies
/// the same source location across ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Site {
    pub rank: i32,
    pub addr: u64,
    /// Same value on every rank for the same location of the same binary:
    /// the module and the offset within it when the rank's module map is
    /// known, else the address relative to the rank's `MPI_Init` call site
    /// (addresses differ between ranks under ASLR, offsets within a module
    /// do not).
    pub key: i64,
    /// Index into [`Model::modules`], or [`NONE`] if the address is in no
    /// recorded module.
    pub module: u32,
    /// Offset of the return address in the module's file (what
    /// `addr2line -e MODULE` takes for PIE executables and shared objects).
    pub offset: u64,
    /// The call path that reached the site: index into [`Model::paths`],
    /// or [`NONE`] (recorded without call paths). A site reached by two
    /// paths is two sites with the same `key`.
    pub path: u32,
}

/// One return address of a call path, placed in its module like a [`Site`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub addr: u64,
    /// Index into [`Model::modules`], or [`NONE`].
    pub module: u32,
    pub offset: u64,
}

/// A call path of one rank (`MPITRACE_CALLPATH`): return addresses from
/// the MPI call site (`frames[0]`) outwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallPath {
    pub rank: i32,
    pub frames: Vec<Frame>,
}

/// Where a site is in the source, from a symbolizer (see [`Model::symbolize`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Location {
    /// Function name, if known.
    pub function: Option<String>,
    /// Source file (as recorded in the debug information).
    pub file: String,
    /// Line, 0 if unknown.
    pub line: u32,
}

impl Location {
    /// `file.c:42` with the file's last path component only.
    pub fn short(&self) -> String {
        let f = self.file.rsplit('/').next().unwrap_or(&self.file);
        if self.line == 0 {
            f.to_string()
        } else {
            format!("{f}:{}", self.line)
        }
    }
}

/// A loaded trace.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub meta: Meta,
    /// Call and region names.
    pub names: Vec<Arc<str>>,
    pub sites: Vec<Site>,
    /// Call paths of every rank (see [`Site::path`]).
    pub paths: Vec<CallPath>,
    /// Paths of the executable modules call sites are in.
    pub modules: Vec<Arc<str>>,
    /// Source locations of (module, offset) pairs, filled by [`Model::symbolize`].
    pub locations: HashMap<(u32, u64), Location>,
    pub comms: Vec<CommDesc>,
    /// Indexed by world rank: `ranks[r].rank == r`.
    pub ranks: Vec<RankData>,
    pub problems: Vec<Problem>,
    /// Clock corrections applied to each rank's times (ns), see
    /// [`crate::matching::correct_clocks`].
    pub clock_shift: Vec<i64>,
}

impl Model {
    pub fn name(&self, id: u16) -> &str {
        self.names.get(id as usize).map(|s| &**s).unwrap_or("?")
    }
    pub fn class(&self, id: u16) -> Class {
        classify(self.name(id))
    }
    /// Total rows read.
    pub fn rows(&self) -> u64 {
        self.ranks.iter().map(|r| r.rows).sum()
    }
    /// Start of the earliest and end of the latest call of any rank.
    pub fn span(&self) -> (i64, i64) {
        let mut lo = i64::MAX;
        let mut hi = i64::MIN;
        for r in &self.ranks {
            if let Some((a, b)) = r.span() {
                lo = lo.min(a);
                hi = hi.max(b);
            }
        }
        if lo > hi {
            (0, 0)
        } else {
            (lo, hi)
        }
    }
    /// A label for a site: `file.c:42` when symbolized, else
    /// `module+0xOFFSET` when the module is known, else `0xADDR`.
    pub fn site_label(&self, site: u32) -> String {
        let Some(s) = self.sites.get(site as usize) else { return "?".into() };
        if s.addr == 0 {
            return "?".into();
        }
        if let Some(l) = self.site_location(site) {
            return l.short();
        }
        self.site_module_label(site).unwrap_or_else(|| format!("{:#x}", s.addr))
    }

    /// `module+0xOFFSET` (the module's file name only), if the site's module is known.
    pub fn site_module_label(&self, site: u32) -> Option<String> {
        let s = self.sites.get(site as usize)?;
        let path = self.modules.get(s.module as usize)?;
        Some(format!("{}+{:#x}", path.rsplit('/').next().unwrap_or(path), s.offset))
    }

    /// The source location of a site, if symbolized.
    pub fn site_location(&self, site: u32) -> Option<&Location> {
        let s = self.sites.get(site as usize)?;
        self.locations.get(&(s.module, s.offset))
    }

    /// Symbolizes every distinct (module, offset) of the call sites with
    /// `resolve(site, module path)`, asked once per distinct location with
    /// one of the sites there (its rank and address select the rank's
    /// module map); returns how many were resolved. The address is the
    /// return address: a symbolizer should look up the byte before it.
    pub fn symbolize(&mut self, mut resolve: impl FnMut(&Site, &str) -> Option<Location>) -> usize {
        // The sites, then the frames of call paths (as sites of their rank).
        let mut firsts: Vec<(u32, u64, Site)> =
            self.sites.iter().filter(|s| s.module != NONE && s.addr != 0).map(|s| (s.module, s.offset, *s)).collect();
        for p in &self.paths {
            for f in p.frames.iter().filter(|f| f.module != NONE && f.addr != 0) {
                let s = Site { rank: p.rank, addr: f.addr, key: 0, module: f.module, offset: f.offset, path: NONE };
                firsts.push((f.module, f.offset, s));
            }
        }
        firsts.sort_unstable_by_key(|f| (f.0, f.1));
        firsts.dedup_by_key(|f| (f.0, f.1));
        let mut n = 0;
        for (module, offset, site) in firsts {
            if self.locations.contains_key(&(module, offset)) {
                continue;
            }
            if let Some(l) = resolve(&site, &self.modules[module as usize]) {
                self.locations.insert((module, offset), l);
                n += 1;
            }
        }
        n
    }
    pub fn comm_label(&self, comm: u32) -> String {
        self.comms.get(comm as usize).map(|c| c.label()).unwrap_or_else(|| "?".into())
    }
    /// Number of ranks of the run (from meta.json, or the ranks found).
    pub fn size(&self) -> usize {
        self.ranks.len()
    }
}

/// What a call does, as far as the analyses care.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// Blocking send (`MPI_Send`, `Ssend`, `Bsend`, `Rsend`).
    Send,
    /// Nonblocking send (`MPI_Isend`...).
    Isend,
    /// Persistent send (`MPI_Send_init`...).
    SendInit,
    /// Blocking receive (`MPI_Recv`, `MPI_Mrecv`).
    Recv,
    /// Nonblocking receive (`MPI_Irecv`, `MPI_Imrecv`).
    Irecv,
    RecvInit,
    /// `MPI_Sendrecv`, `MPI_Sendrecv_replace`.
    Sendrecv,
    /// `MPI_Start`, `MPI_Startall`.
    Start,
    /// `MPI_Wait*`, `MPI_Test*`.
    Wait,
    /// A collective operation.
    Coll {
        kind: CollKind,
        nonblocking: bool,
    },
    Other,
}

impl Class {
    pub fn is_send(self) -> bool {
        matches!(self, Class::Send | Class::Isend | Class::SendInit)
    }
    pub fn is_recv(self) -> bool {
        matches!(self, Class::Recv | Class::Irecv | Class::RecvInit)
    }
    pub fn is_p2p(self) -> bool {
        self.is_send() || self.is_recv() || self == Class::Sendrecv
    }
}

/// The communication pattern of a collective, for the wait-state patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum CollKind {
    Barrier,
    /// Every rank needs every rank's data (Allreduce, Allgather, Alltoall,
    /// Reduce_scatter).
    NxN,
    /// The root sends to all (Bcast, Scatter).
    OneToN,
    /// All send to the root (Reduce, Gather).
    NToOne,
    /// Prefix operations (Scan, Exscan).
    Scan,
    /// Neighborhood collectives and others.
    Other,
}

/// Classifies an MPI procedure name.
pub fn classify(name: &str) -> Class {
    let base = name.strip_suffix("_c").unwrap_or(name);
    let Some(s) = base.strip_prefix("MPI_") else { return Class::Other };
    match s {
        "Send" | "Ssend" | "Bsend" | "Rsend" => return Class::Send,
        "Isend" | "Issend" | "Ibsend" | "Irsend" | "Isendrecv" | "Isendrecv_replace" => return Class::Isend,
        "Send_init" | "Ssend_init" | "Bsend_init" | "Rsend_init" => return Class::SendInit,
        "Recv" | "Mrecv" => return Class::Recv,
        "Irecv" | "Imrecv" => return Class::Irecv,
        "Recv_init" => return Class::RecvInit,
        "Sendrecv" | "Sendrecv_replace" => return Class::Sendrecv,
        "Start" | "Startall" => return Class::Start,
        "Wait" | "Waitall" | "Waitany" | "Waitsome" | "Test" | "Testall" | "Testany" | "Testsome" => {
            return Class::Wait
        }
        _ => {}
    }
    let persistent = s.ends_with("_init");
    let core = s.strip_suffix("_init").unwrap_or(s);
    let (nonblocking, core) = match core.strip_prefix('I') {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) && !persistent => (true, rest),
        _ => (persistent, core),
    };
    let core = core.to_ascii_lowercase();
    let kind = match core.as_str() {
        "barrier" => CollKind::Barrier,
        "allreduce"
        | "allgather"
        | "allgatherv"
        | "alltoall"
        | "alltoallv"
        | "alltoallw"
        | "reduce_scatter"
        | "reduce_scatter_block" => CollKind::NxN,
        "bcast" | "scatter" | "scatterv" => CollKind::OneToN,
        "reduce" | "gather" | "gatherv" => CollKind::NToOne,
        "scan" | "exscan" => CollKind::Scan,
        c if c.starts_with("neighbor_") => CollKind::Other,
        _ => return Class::Other,
    };
    Class::Coll { kind, nonblocking }
}

/// Interns strings into `u16` ids.
#[derive(Clone, Debug, Default)]
pub struct Interner {
    pub names: Vec<Arc<str>>,
    map: HashMap<Arc<str>, u16>,
}

impl Interner {
    pub fn id(&mut self, s: &str) -> u16 {
        if let Some(&i) = self.map.get(s) {
            return i;
        }
        let i = self.names.len().min(u16::MAX as usize) as u16;
        if (i as usize) < u16::MAX as usize {
            let a: Arc<str> = Arc::from(s);
            self.names.push(a.clone());
            self.map.insert(a, i);
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        assert_eq!(classify("MPI_Isend"), Class::Isend);
        assert_eq!(classify("MPI_Send_c"), Class::Send);
        assert_eq!(classify("MPI_Waitall"), Class::Wait);
        assert_eq!(classify("MPI_Allreduce"), Class::Coll { kind: CollKind::NxN, nonblocking: false });
        assert_eq!(classify("MPI_Iallreduce"), Class::Coll { kind: CollKind::NxN, nonblocking: true });
        assert_eq!(classify("MPI_Bcast_init"), Class::Coll { kind: CollKind::OneToN, nonblocking: true });
        assert_eq!(classify("MPI_Ibarrier"), Class::Coll { kind: CollKind::Barrier, nonblocking: true });
        assert_eq!(classify("MPI_Gatherv"), Class::Coll { kind: CollKind::NToOne, nonblocking: false });
        assert_eq!(classify("MPI_Init"), Class::Other);
        assert_eq!(classify("MPI_Comm_rank"), Class::Other);
        assert_eq!(std::mem::size_of::<CollEv>(), 40);
    }
}

/// A user region of one rank, trace time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub t0: i64,
    pub t1: i64,
    /// Index into the model's names.
    pub name: u16,
    /// Nesting depth (0: outermost).
    pub depth: u16,
}

/// The regions of a rank from its begin and end marks, sorted by start;
/// a region never ended lasts until `end`.
pub fn regions_of(marks: &[RegionEv], shift: i64, end: i64) -> Vec<Region> {
    let mut open: Vec<(u16, i64)> = Vec::new();
    let mut out = Vec::new();
    for m in marks {
        if m.begin {
            open.push((m.name, m.t));
        } else if let Some(k) = open.iter().rposition(|o| o.0 == m.name) {
            let (name, t) = open.remove(k);
            out.push(Region { t0: t - shift, t1: m.t - shift, name, depth: k as u16 });
        }
    }
    for (k, (name, t)) in open.into_iter().enumerate() {
        out.push(Region { t0: t - shift, t1: (end - shift).max(t - shift), name, depth: k as u16 });
    }
    out.sort_by_key(|r| (r.t0, r.depth));
    out
}
