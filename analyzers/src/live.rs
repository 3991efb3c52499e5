//! Following a job while it runs: the state of each rank from its journals.
//!
//! The shim writes a call's record into the thread's journal at entry (in
//! progress, no `DONE` flag) and completes it in place at exit, so the
//! journals show at any moment the call each thread is in, with its
//! arguments and call site. [`Live`] reads what was added since its last
//! look: records up to the first free slot, stopping at a call still in
//! progress (read again the next time). It opens the files read-only and
//! never signals the job's processes, so it cannot disturb the job; a
//! journal removed by a rank that finalized stays readable through the
//! descriptor already open.
//!
//! [`Tracker`] folds one rank's events into what the live view and the
//! hang diagnosis ([`crate::hang`]) need: the calls in progress, the
//! requests started and not completed, the last collectives per
//! communicator, messages sent and received. It takes the events of a
//! finished trace just as well (the state when the job ended).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trace_format::events::{call_names, event_from_record, TickMap};
use trace_format::journal::{ChunkReader, ClockKind};
use trace_format::meta::ClockMap;
use trace_format::record::{flags, Kind, Record, NO_COMM, RECORD_SIZE};
use trace_format::side::{CommInfo, Module, ProcessInfo, SideEntry, SyncPoint};
use trace_format::{layout, Event, RankMeta, Symbolizer};

/// How many recent collective calls per communicator a [`Tracker`] keeps
/// (to compare the arguments of one instance across ranks).
const RECENT_COLLECTIVES: usize = 8;

/// Records read from one journal per look at most, so that a first look at
/// a long-running job does not stall the view (the rest comes next time).
const MAX_RECORDS_PER_LOOK: u64 = 1 << 20;

/// A procedure's name without the large-count suffix (`MPI_Send_c`).
pub fn base_name(call: &str) -> &str {
    call.strip_suffix("_c").unwrap_or(call)
}

/// Calls that ask whether something happened without waiting for it: a
/// rank calling them in a loop is waiting, not progressing.
pub fn is_polling(call: &str) -> bool {
    matches!(
        base_name(call),
        "MPI_Test"
            | "MPI_Testany"
            | "MPI_Testsome"
            | "MPI_Testall"
            | "MPI_Iprobe"
            | "MPI_Improbe"
            | "MPI_Request_get_status"
            | "MPI_Parrived"
            | "MPI_Win_test"
    )
}

/// Point-to-point calls that send (their `peer` is the destination).
pub fn is_send(call: &str) -> bool {
    matches!(
        base_name(call),
        "MPI_Send"
            | "MPI_Bsend"
            | "MPI_Ssend"
            | "MPI_Rsend"
            | "MPI_Isend"
            | "MPI_Ibsend"
            | "MPI_Issend"
            | "MPI_Irsend"
            | "MPI_Sendrecv"
            | "MPI_Sendrecv_replace"
            | "MPI_Isendrecv"
            | "MPI_Isendrecv_replace"
    )
}

/// Calls (or requests started by them) that wait for a message from `peer`.
pub fn is_receive(call: &str) -> bool {
    matches!(
        base_name(call),
        "MPI_Recv" | "MPI_Irecv" | "MPI_Recv_init" | "MPI_Mrecv" | "MPI_Imrecv" | "MPI_Probe" | "MPI_Mprobe"
    )
}

/// Persistent send requests (their completions are sends).
fn is_persistent_send(call: &str) -> bool {
    matches!(base_name(call), "MPI_Send_init" | "MPI_Bsend_init" | "MPI_Ssend_init" | "MPI_Rsend_init")
}

/// Completion rows that are a received message.
fn is_receive_completion(call: &str) -> bool {
    matches!(
        base_name(call),
        "MPI_Irecv"
            | "MPI_Recv_init"
            | "MPI_Imrecv"
            | "MPI_Sendrecv"
            | "MPI_Sendrecv_replace"
            | "MPI_Isendrecv"
            | "MPI_Isendrecv_replace"
    )
}

/// Whether a call row is a collective operation: the shim numbers
/// collectives per communicator and gives them no peer.
pub fn is_collective(e: &Event) -> bool {
    e.kind == Kind::Call && e.comm.is_some() && e.seq.is_some() && e.peer.is_none()
}

/// Whether a call row started a request the program completes later.
fn starts_request(call: &str) -> bool {
    let b = base_name(call);
    !(b.starts_with("MPI_Wait")
        || b.starts_with("MPI_Test")
        || b.ends_with("_init")
        || matches!(
            b,
            "MPI_Start"
                | "MPI_Startall"
                | "MPI_Request_free"
                | "MPI_Cancel"
                | "MPI_Request_get_status"
                | "MPI_Pready"
                | "MPI_Pready_range"
                | "MPI_Pready_list"
                | "MPI_Parrived"
                | "MPI_Grequest_complete"
        ))
}

/// The state of one rank, folded from its events in order.
#[derive(Clone, Debug, Default)]
pub struct Tracker {
    pub rank: i32,
    /// The call each thread is in (not returned yet), by thread.
    pub current: BTreeMap<i32, Event>,
    /// The last call that returned.
    pub last: Option<Event>,
    /// Requests started and not completed, by handle (the row that started
    /// them; for a persistent request the `*_init` row with the sequence
    /// number of its `MPI_Start`).
    pub pending: HashMap<i32, Event>,
    /// Persistent requests by handle (their `*_init` rows).
    persistent: HashMap<i32, Event>,
    /// The last collective calls per communicator id, oldest first.
    pub colls: HashMap<u64, VecDeque<Event>>,
    /// Calls returned and requests completed, but for calls that only ask
    /// (`MPI_Test`, `MPI_Iprobe`...): a count that stands still while the
    /// rank makes no progress.
    pub progress: u64,
    /// Calls returned.
    pub calls: u64,
    /// Time in calls that returned (ns).
    pub mpi_ns: i64,
    /// End of the last call that returned (reference clock, ns).
    pub t_last: Option<i64>,
    /// Point-to-point messages sent to each world rank.
    pub sent: HashMap<i32, u64>,
    /// Point-to-point messages received from each world rank.
    pub received: HashMap<i32, u64>,
    /// The rank returned from `MPI_Finalize` (or entered it: the journals
    /// end there).
    pub finalized: bool,
}

impl Tracker {
    pub fn new(rank: i32) -> Tracker {
        Tracker { rank, ..Default::default() }
    }

    /// Takes the next event of the rank (events of one thread in order).
    pub fn apply(&mut self, e: &Event) {
        match e.kind {
            Kind::Call => self.call(e),
            Kind::Completion => {
                self.progress += 1;
                if let Some(r) = e.request {
                    self.pending.remove(&r);
                }
                if let Some(p) = e.peer.filter(|&p| p >= 0) {
                    if is_receive_completion(&e.call) && !e.cancelled() {
                        *self.received.entry(p).or_default() += 1;
                    } else if is_persistent_send(&e.call) && !e.cancelled() {
                        *self.sent.entry(p).or_default() += 1;
                    }
                }
            }
            Kind::RegionBegin | Kind::RegionEnd => {}
        }
    }

    fn call(&mut self, e: &Event) {
        let Some(t_end) = e.t_end else {
            self.current.insert(e.thread, e.clone());
            return;
        };
        self.current.remove(&e.thread);
        let name = base_name(&e.call);
        self.calls += 1;
        self.mpi_ns += (t_end - e.t_start).max(0);
        self.t_last = Some(self.t_last.map_or(t_end, |t| t.max(t_end)));
        if !is_polling(name) {
            self.progress += 1;
        }
        if let Some(p) = e.peer.filter(|&p| p >= 0) {
            if is_send(name) {
                *self.sent.entry(p).or_default() += 1;
            } else if matches!(name, "MPI_Recv" | "MPI_Mrecv") {
                *self.received.entry(p).or_default() += 1;
            }
        }
        if let Some(r) = e.request.filter(|_| e.flags & flags::DONE != 0 && e.rc == Some(0)) {
            if name.ends_with("_init") {
                self.persistent.insert(r, e.clone());
            } else if name == "MPI_Start" {
                let mut started = self.persistent.get(&r).cloned().unwrap_or_else(|| e.clone());
                (started.seq, started.t_start, started.site) = (e.seq, e.t_start, e.site.or(started.site));
                self.pending.insert(r, started);
            } else if name == "MPI_Request_free" {
                self.pending.remove(&r);
                self.persistent.remove(&r);
            } else if starts_request(name) {
                self.pending.insert(r, e.clone());
            }
        }
        if let Some(comm) = e.comm.filter(|_| is_collective(e)) {
            let q = self.colls.entry(comm).or_default();
            q.push_back(e.clone());
            if q.len() > RECENT_COLLECTIVES {
                q.pop_front();
            }
        }
        if name == "MPI_Finalize" {
            self.finalized = true;
        }
        self.last = Some(e.clone());
    }

    /// The highest collective sequence number this rank completed on `comm`.
    pub fn coll_done(&self, comm: u64) -> i64 {
        self.colls.get(&comm).and_then(|q| q.back()).and_then(|e| e.seq).unwrap_or(0)
    }

    /// This rank's call of collective instance `seq` on `comm`: in
    /// progress, pending (nonblocking) or among the recent ones.
    pub fn coll_instance(&self, comm: u64, seq: i64) -> Option<&Event> {
        let here = |e: &&Event| e.comm == Some(comm) && e.seq == Some(seq) && e.peer.is_none();
        self.current
            .values()
            .find(here)
            .or_else(|| self.pending.values().find(here))
            .or_else(|| self.colls.get(&comm).and_then(|q| q.iter().find(here)))
    }

    /// The operations the rank waits for in the call `current`: the call
    /// itself, or for `MPI_Wait*`/`MPI_Test*` the requests it waits on
    /// (the one it names, or every pending request: the shim records the
    /// handle of a single request only).
    pub fn waits_on(&self, current: &Event) -> Vec<Event> {
        let name = base_name(&current.call);
        if name.starts_with("MPI_Wait") || name.starts_with("MPI_Test") {
            if let Some(e) = current.request.and_then(|r| self.pending.get(&r)) {
                return vec![e.clone()];
            }
            let mut all: Vec<Event> = self.pending.values().cloned().collect();
            all.sort_by_key(|e| e.t_start);
            return all;
        }
        vec![current.clone()]
    }
}

/// What is known of a rank's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Proc {
    /// Runs (seen in /proc of this machine, or holding its lock on its
    /// side file).
    Alive,
    /// Its process is gone without finalizing.
    Dead,
    /// Returned from (or is in) `MPI_Finalize`.
    Finished,
    /// The trace ended (the job was killed or ended) without it finalizing.
    Ended,
    /// On another machine, which cannot be checked from here: not known.
    Unknown,
}

/// The side file of a rank, read as it grows.
#[derive(Default)]
struct SideTail {
    file: Option<File>,
    pos: u64,
    partial: Vec<u8>,
    process: Option<ProcessInfo>,
    comms: HashMap<u32, CommInfo>,
    points: Vec<(u64, u64)>,
    sync_init: Option<SyncPoint>,
    finalized: bool,
    modules: Vec<Module>,
    build_ids: BTreeMap<String, String>,
    regions: HashMap<i32, Arc<str>>,
}

impl SideTail {
    fn read(&mut self, path: &Path) {
        if self.file.is_none() {
            self.file = trace_format::files::open_regular(path).ok().map(|(f, _)| f);
        }
        let Some(f) = &self.file else { return };
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match f.read_at(&mut buf, self.pos) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            self.pos += n as u64;
            self.partial.extend_from_slice(&buf[..n]);
        }
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else { return };
        let lines: Vec<u8> = self.partial.drain(..=end).collect();
        for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let Ok(e) = serde_json::from_slice::<SideEntry>(line) else { continue };
            match e {
                SideEntry::Process(p) => self.process = Some(p),
                SideEntry::Comm(c) => {
                    self.comms.insert(c.slot, c);
                }
                SideEntry::Clock { ticks, ns } => self.points.push((ticks, ns)),
                SideEntry::Sync { phase, point } if phase == "init" => self.sync_init = Some(point),
                SideEntry::Module(m) => self.modules.push(m),
                SideEntry::BuildId { path, build_id } => {
                    self.build_ids.insert(path, build_id);
                }
                SideEntry::Region { id, name } => {
                    self.regions.insert(id, Arc::from(name));
                }
                SideEntry::Finalized => self.finalized = true,
                _ => {}
            }
        }
    }
}

/// One journal, read as it grows.
struct Tail {
    file: File,
    thread: u32,
    clock: ClockKind,
    /// Next slot to read (slot 0 is the header).
    next: u64,
}

impl Tail {
    /// Hands every record from the last look on to `f`, up to the first
    /// free slot; returns the call in progress there, if any (not handed
    /// on: it is read again next time).
    fn read(&mut self, f: &mut dyn FnMut(&Record)) -> Option<Record> {
        const BATCH: usize = 4096;
        let mut buf = vec![0u8; RECORD_SIZE * BATCH];
        let stop = self.next + MAX_RECORDS_PER_LOOK;
        while self.next < stop {
            let n = self.file.read_at(&mut buf, self.next * RECORD_SIZE as u64).unwrap_or(0);
            let whole = n / RECORD_SIZE;
            for i in 0..whole {
                let bytes: &[u8; RECORD_SIZE] = buf[i * RECORD_SIZE..(i + 1) * RECORD_SIZE].try_into().ok()?;
                let r = Record::from_bytes(bytes);
                if r.head == 0 {
                    return None;
                }
                if r.kind() == Some(Kind::Call) && !r.is_done() {
                    return Some(r);
                }
                f(&r);
                self.next += 1;
            }
            if whole < BATCH {
                return None;
            }
        }
        None
    }
}

/// One rank of a running job.
pub struct LiveRank {
    pub rank: i32,
    side: SideTail,
    tails: BTreeMap<u32, Tail>,
    pub track: Tracker,
    /// "Now" on the reference clock, as of the last look (for ages), when
    /// the rank runs on this machine.
    pub now: Option<i64>,
}

impl LiveRank {
    fn new(rank: i32) -> LiveRank {
        LiveRank { rank, side: SideTail::default(), tails: BTreeMap::new(), track: Tracker::new(rank), now: None }
    }

    pub fn process(&self) -> Option<&ProcessInfo> {
        self.side.process.as_ref()
    }

    /// The rank's metadata as far as known (for symbolizing call sites).
    pub fn meta(&self) -> RankMeta {
        RankMeta {
            process: self.side.process.clone().unwrap_or_default(),
            sync_init: self.side.sync_init,
            sync_finalize: None,
            finalized: self.side.finalized,
            modules: self.side.modules.clone(),
            build_ids: self.side.build_ids.clone(),
        }
    }

    /// Communicators of the rank, by trace-wide id.
    pub fn comms(&self) -> impl Iterator<Item = &CommInfo> {
        self.side.comms.values()
    }

    fn look(&mut self, dir: &Path, host: &str, names: &mut HashMap<u16, Arc<str>>) {
        self.side.read(&layout::side(dir, self.rank));
        for (t, path) in layout::journals_of(dir, self.rank) {
            if self.tails.contains_key(&t) {
                continue;
            }
            let Ok(header) = ChunkReader::open(&path).map(|r| r.header) else { continue };
            let Ok((file, _)) = trace_format::files::open_regular(&path) else { continue };
            self.tails.insert(t, Tail { file, thread: t, clock: header.clock, next: 1 });
        }
        let local = self.side.process.as_ref().is_some_and(|p| p.host == host);
        let clock = ClockMap::new(self.side.sync_init, None);
        let mono = mono_ns();
        self.now = local.then(|| clock.to_reference(mono as i64));
        let slots: HashMap<u32, u64> = self.side.comms.values().map(|c| (c.slot, c.id)).collect();
        let (rank, side, track) = (self.rank, &self.side, &mut self.track);
        for tail in self.tails.values_mut() {
            let mut points = side.points.clone();
            // On this machine the clock the shim stamps with can be read
            // here too: a fresh calibration point keeps the ages of calls
            // right however long the rank has been blocked.
            if local && tail.clock == ClockKind::Tsc {
                if let Some(p) = tsc_point() {
                    points.push(p);
                }
            }
            let ticks = TickMap::new(tail.clock, &points);
            let thread = tail.thread as i32;
            let event = |r: &Record, names: &mut HashMap<u16, Arc<str>>| {
                let kind = r.kind()?;
                let name = match kind {
                    Kind::RegionBegin | Kind::RegionEnd => side.regions.get(&r.aux).cloned()?,
                    _ => names
                        .entry(r.call())
                        .or_insert_with(|| Arc::from(call_names().get(r.call() as usize).copied().unwrap_or("?")))
                        .clone(),
                };
                let comm = (r.comm != NO_COMM).then(|| slots.get(&r.comm).copied()).flatten();
                let mut e = event_from_record(rank, thread, kind, name, r, comm, &ticks, &clock);
                if r.flags() & flags::NEW_COMM != 0 {
                    e.new_comm = slots.get(&(r.aux as u32)).copied();
                    e.aux = None;
                }
                Some(e)
            };
            let current = tail.read(&mut |r| {
                if let Some(e) = event(r, names) {
                    track.apply(&e);
                }
            });
            track.current.remove(&thread);
            if let Some(e) = current.and_then(|r| event(&r, names)) {
                track.current.insert(thread, e);
            }
        }
        if self.side.finalized {
            self.track.finalized = true;
        }
    }

    /// What is known of the rank's process: on this machine (`host`) from
    /// `/proc`; on another from the lock it holds on its side file while
    /// it runs (`trace_format::alive`), when the trace directory is shared.
    /// A lock found free means a dead process only on a machine whose
    /// locks were seen held before (`locks_seen`, updated): a file system
    /// mounted without locks across machines never shows them held.
    pub fn proc_state(&self, dir: &Path, host: &str, locks_seen: &mut HashSet<String>) -> Proc {
        if self.track.finalized || self.side.finalized {
            return Proc::Finished;
        }
        let Some(p) = &self.side.process else { return Proc::Unknown };
        if p.host == host {
            return if process_alive(p.pid) { Proc::Alive } else { Proc::Dead };
        }
        if !p.alive_lock {
            return Proc::Unknown;
        }
        match trace_format::alive::probe(&layout::side(dir, self.rank)) {
            Some(true) => {
                locks_seen.insert(p.host.clone());
                Proc::Alive
            }
            Some(false) if locks_seen.contains(&p.host) => Proc::Dead,
            _ => Proc::Unknown,
        }
    }
}

/// The journals of a running job, looked at again and again.
pub struct Live {
    pub dir: PathBuf,
    pub ranks: BTreeMap<i32, LiveRank>,
    /// This machine's name (ranks on it can be checked and timed).
    pub host: String,
    names: HashMap<u16, Arc<str>>,
    /// Machines whose ranks were seen holding their liveness lock.
    pub locks_seen: HashSet<String>,
    symbolizer: Symbolizer,
    sites: HashMap<(i32, u64), Option<String>>,
}

impl Live {
    pub fn new(dir: &Path) -> Live {
        Live {
            dir: dir.to_path_buf(),
            ranks: BTreeMap::new(),
            host: hostname(),
            names: HashMap::new(),
            locks_seen: HashSet::new(),
            symbolizer: Symbolizer::new(),
            sites: HashMap::new(),
        }
    }

    /// Reads what the job wrote since the last look.
    pub fn look(&mut self) {
        let mut ranks = layout::ranks_in(&self.dir, layout::JOURNAL_DIR, ".journal");
        ranks.extend(layout::ranks_in(&self.dir, layout::JOURNAL_DIR, ".side.jsonl"));
        for r in ranks {
            self.ranks.entry(r).or_insert_with(|| LiveRank::new(r));
        }
        for lr in self.ranks.values_mut() {
            lr.look(&self.dir, &self.host, &mut self.names);
        }
        self.learn_locks();
    }

    /// Learns early, while their ranks run, which other machines' locks
    /// this one sees (`LiveRank::proc_state`): a few ranks of each machine
    /// not yet seen are asked, until one is seen holding its lock.
    fn learn_locks(&mut self) {
        const PER_HOST: usize = 4;
        let mut asked: HashMap<&str, usize> = HashMap::new();
        let mut seen = Vec::new();
        for lr in self.ranks.values().filter(|r| !r.track.finalized) {
            let Some(p) = lr.process().filter(|p| p.alive_lock && p.host != self.host) else { continue };
            if self.locks_seen.contains(&p.host) || seen.contains(&p.host) {
                continue;
            }
            let n = asked.entry(p.host.as_str()).or_default();
            if *n >= PER_HOST {
                continue;
            }
            *n += 1;
            if trace_format::alive::probe(&layout::side(&self.dir, lr.rank)) == Some(true) {
                seen.push(p.host.clone());
            }
        }
        self.locks_seen.extend(seen);
    }

    /// Progress of the whole job (see [`Tracker::progress`]).
    pub fn progress(&self) -> u64 {
        self.ranks.values().map(|r| r.track.progress).sum()
    }

    /// Whether any rank is in a call now.
    pub fn anyone_in_mpi(&self) -> bool {
        self.ranks.values().any(|r| !r.track.current.is_empty())
    }

    /// Whether every rank that started has finished.
    pub fn all_finished(&self) -> bool {
        !self.ranks.is_empty() && self.ranks.values().all(|r| r.track.finalized)
    }

    /// Number of ranks of the job (from the ranks' process entries).
    pub fn size(&self) -> usize {
        let said = self.ranks.values().filter_map(|r| r.process()).map(|p| p.size.max(0) as usize).max();
        said.unwrap_or(0).max(self.ranks.keys().next_back().map_or(0, |&r| r as usize + 1))
    }

    /// `file:line` (or function) of call site `site` of `rank`.
    pub fn site(&mut self, rank: i32, site: u64) -> Option<String> {
        if let Some(s) = self.sites.get(&(rank, site)) {
            return s.clone();
        }
        let meta = self.ranks.get(&rank)?.meta();
        let s = self.symbolizer.site(&meta, site);
        let text = s.file_line().or(s.function.clone());
        self.sites.insert((rank, site), text.clone());
        text
    }

    /// Every communicator known, by trace-wide id.
    pub fn comms(&self) -> HashMap<u64, CommInfo> {
        let mut m = HashMap::new();
        for r in self.ranks.values() {
            for c in r.comms() {
                m.entry(c.id).or_insert_with(|| c.clone());
            }
        }
        m
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A calibration point of the time-stamp counter, read as the shim reads
/// it (`clock::point` there).
fn tsc_point() -> Option<(u64, u64)> {
    #[cfg(target_arch = "x86_64")]
    {
        let a = mono_ns();
        // SAFETY: rdtsc has no preconditions on x86-64.
        let t = unsafe { core::arch::x86_64::_rdtsc() };
        let b = mono_ns();
        Some((t, a + (b - a) / 2))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// This machine's host name, as the shim records it (`gethostname`).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its length.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Whether process `pid` of this machine runs (a zombie does not).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(s) => s.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}
