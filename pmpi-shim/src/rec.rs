//! Recording of one call: the logic the generated wrappers feed.
//!
//! A wrapper makes a [`Call`] with [`Call::begin`], hands it the arguments
//! that matter (communicator, peer, tag, counts, datatypes, output
//! pointers...), calls [`Call::enter`] which resolves them (world ranks,
//! bytes, sequence numbers) and writes an in-progress record into the
//! thread's journal, calls the MPI library, then [`Call::exit`] which reads
//! the outputs (statuses, new requests and communicators) and completes the
//! record in place. Nothing here may unwind into C: both halves run under
//! `catch_unwind`, and a panic turns tracing off for the process.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::OnceLock;

use mpi_api::abi::{self, MPI_Status};
use trace_format::journal::{self, JournalHeader, JournalWriter};
use trace_format::record::{flags, head, Kind, Record, NONE_I32, NONE_I64, NO_COMM, NO_RANK};
use trace_format::side::SideEntry;

use crate::clock::ticks;
use crate::state::{state, type_size, CommState, MsgInfo, ReqInfo, ReqKind, Tracer};

/// Recording categories, chosen per procedure by build.rs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    Send,
    SendInit,
    Recv,
    RecvInit,
    Mrecv,
    Sendrecv,
    /// `MPI_Psend_init`: a persistent partitioned send.
    PsendInit,
    /// `MPI_Precv_init`: a persistent partitioned receive.
    PrecvInit,
    Probe,
    Mprobe,
    Coll,
    Other,
}

/// Process tracing mode.
pub mod mode {
    /// Before `MPI_Init`: calls pass through unrecorded.
    pub const OFF: u8 = 0;
    pub const ON: u8 = 1;
    /// `MPI_Pcontrol(0)`: bookkeeping goes on, records are not written.
    pub const PAUSED: u8 = 2;
    /// After `MPI_Finalize`, or tracing failed: pass through.
    pub const DONE: u8 = 3;
}

pub static MODE: AtomicU8 = AtomicU8::new(mode::OFF);

/// Where journals go, set once at `MPI_Init`.
pub static TRACE_OUTPUT: OnceLock<(std::path::PathBuf, i32)> = OnceLock::new();
static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);

/// Per-thread state.
pub struct ThreadState {
    /// Call site of the current call (set by the trampoline).
    pub site: Cell<u64>,
    /// Call site of the last Fortran MPI call of this thread (set by the
    /// Fortran trampolines; see `site::set_site`).
    pub fortran_site: Cell<u64>,
    /// Nesting depth of intercepted calls (calls made by the MPI library
    /// itself through `MPI_X` are not recorded).
    pub depth: Cell<u32>,
    pub journal: RefCell<Option<JournalWriter>>,
    /// A journal given up after a failed reservation, kept mapped until the
    /// thread exits: a call in progress may still complete its slot there.
    retired_journal: RefCell<Option<JournalWriter>>,
    /// The journal could not be created or grown: calls of this thread are
    /// no longer recorded (no retry).
    pub broken: Cell<bool>,
}

thread_local! {
    pub static THREAD_STATE: ThreadState = const {
        ThreadState {
            site: Cell::new(0),
            fortran_site: Cell::new(0),
            depth: Cell::new(0),
            journal: RefCell::new(None),
            retired_journal: RefCell::new(None),
            broken: Cell::new(false),
        }
    };
}

/// Turns tracing off after an internal failure, saying why once.
pub fn fail(why: &str) {
    if MODE.swap(mode::DONE, Ordering::Relaxed) != mode::DONE {
        eprintln!("mpitrace: {why}; tracing stopped, the application continues");
    }
}

fn open_journal(t: &ThreadState) -> Option<()> {
    if t.broken.get() {
        return None;
    }
    let (dir, rank) = TRACE_OUTPUT.get()?;
    let thread = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
    let path = trace_format::layout::journal(dir, *rank, thread);
    let header = JournalHeader {
        clock: crate::clock::KIND,
        pid: std::process::id(),
        thread,
        rank: *rank,
        table_len: crate::PNAMES.len() as u32,
    };
    match JournalWriter::create(&path, header) {
        Ok(w) => {
            *t.journal.borrow_mut() = Some(w);
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() } as i64;
            crate::state::with_shared_side(|a| a.side.write(&SideEntry::Thread { thread, tid }));
            Some(())
        }
        Err(e) => {
            t.broken.set(true);
            eprintln!("mpitrace: {e}; calls of this thread are not recorded");
            None
        }
    }
}

/// A free journal slot of this thread (null if none can be had).
/// Must not be called with [`STATE`](crate::state::STATE) locked.
pub fn reserve() -> *mut Record {
    THREAD_STATE.try_with(reserve_in).unwrap_or(std::ptr::null_mut())
}

/// [`reserve`] with this thread's [`ThreadState`] at hand.
fn reserve_in(t: &ThreadState) -> *mut Record {
    let slot = (|| {
        if t.journal.borrow().is_none() {
            open_journal(t)?;
        }
        let mut j = t.journal.borrow_mut();
        let w = j.as_mut()?;
        match w.reserve() {
            Ok(s) => Some(s),
            Err(e) => {
                t.broken.set(true);
                *t.retired_journal.borrow_mut() = j.take();
                eprintln!("mpitrace: {e}; journal full, calls of this thread are no longer recorded");
                None
            }
        }
    })();
    slot.unwrap_or(std::ptr::null_mut())
}

/// Writes `rec` into `slot` (if any).
///
/// # Safety
/// `slot` is null or a slot reserved from this thread's journal. (A journal
/// stays mapped until its thread exits, even when a failed reservation
/// retired it.)
pub(crate) unsafe fn publish(slot: *mut Record, rec: &Record) {
    if !slot.is_null() {
        // SAFETY: not null, so by this function's contract a slot of one of
        // this thread's journals, mapped until the thread exits, aligned by
        // `JournalWriter::reserve`, and written by no other thread.
        unsafe { journal::publish(slot, rec) };
    }
}

/// Appends a complete record to this thread's journal.
pub fn append(rec: &Record) {
    // SAFETY: `reserve` returns null or a slot it just reserved from this
    // thread's journal.
    unsafe { publish(reserve(), rec) };
}

/// Asks the kernel to write this thread's journal back (Pcontrol level 2).
pub fn flush() {
    let _ = THREAD_STATE.try_with(|t| {
        if let Some(j) = t.journal.borrow().as_ref() {
            j.flush_async();
        }
    });
}

/// One call being recorded.
pub struct Call {
    recording: bool,
    /// Records are written (false while `MPI_Pcontrol(0)` pauses tracing).
    writes_records: bool,
    pub category: Category,
    large: bool,
    pub rec: Record,
    slot: *mut Record,
    comm_handle: Option<c_int>,
    win_handle: Option<c_int>,
    peer_raw: Option<c_int>,
    recv_peer_raw: Option<c_int>,
    root_raw: Option<c_int>,
    recv_tag: c_int,
    recv_count: i64,
    recv_type: Option<c_int>,
    /// Number of partitions of a partitioned send or receive.
    partitions: Option<c_int>,
    /// Counts arrays of a v-collective (`*const c_int`, or `*const i64`
    /// when `large`); see [`Call::send_counts`].
    send_counts: *const c_void,
    recv_counts: *const c_void,
    /// Output arguments read after a successful call; see [`Call::out_request`].
    out_request: *mut c_int,
    out_comm: *mut c_int,
    out_win: *mut c_int,
    out_file: *mut *mut c_void,
    /// A group, datatype or info object the call makes (its handle goes to `aux`).
    out_handle: *mut c_int,
    /// A group, datatype or info object the call frees or commits (in `aux`).
    in_handle: Option<c_int>,
    /// The send buffer (checksummed with `--check-buffers`).
    buf: *const c_void,
    /// A collective's receive buffer (only compared with `MPI_IN_PLACE`).
    recv_buf: *const c_void,
    /// The elements of `datatype` a nonblocking collective sends from
    /// `buf` at this process, where that is one contiguous run of them.
    send_elems: Option<i64>,
    out_message: *mut c_int,
    out_flag: *mut c_int,
    in_message: Option<c_int>,
    freeing_comm: Option<c_int>,
    freeing_win: Option<c_int>,
    status: *mut MPI_Status,
    /// Records written after the call's own (completions).
    completions: Vec<Record>,
    /// `begin` incremented the nesting depth.
    depth_counted: bool,
    /// This thread's state (valid for the whole call; null if unavailable).
    thread: *const ThreadState,
}

impl Call {
    /// Starts recording call `idx`; inactive (a plain pass-through) before
    /// `MPI_Init`, after `MPI_Finalize` and inside nested calls.
    #[inline]
    pub fn begin(idx: usize, category: Category, large: bool) -> Call {
        let mode_now = MODE.load(Ordering::Relaxed);
        let mut site = 0;
        let mut thread: *const ThreadState = std::ptr::null();
        let recording = (mode_now == mode::ON || mode_now == mode::PAUSED)
            && THREAD_STATE
                .try_with(|t| {
                    let depth = t.depth.get();
                    t.depth.set(depth + 1);
                    site = t.site.get();
                    thread = t;
                    depth == 0
                })
                .unwrap_or(false);
        Call {
            recording,
            writes_records: mode_now == mode::ON,
            category,
            large,
            rec: Record { head: head(idx as u16, Kind::Call, 0), site, ..Default::default() },
            slot: std::ptr::null_mut(),
            comm_handle: None,
            win_handle: None,
            peer_raw: None,
            recv_peer_raw: None,
            root_raw: None,
            recv_tag: NONE_I32,
            recv_count: NONE_I64,
            recv_type: None,
            partitions: None,
            send_counts: std::ptr::null(),
            recv_counts: std::ptr::null(),
            out_request: std::ptr::null_mut(),
            out_comm: std::ptr::null_mut(),
            out_win: std::ptr::null_mut(),
            out_file: std::ptr::null_mut(),
            out_handle: std::ptr::null_mut(),
            in_handle: None,
            buf: std::ptr::null(),
            recv_buf: std::ptr::null(),
            send_elems: None,
            out_message: std::ptr::null_mut(),
            out_flag: std::ptr::null_mut(),
            in_message: None,
            freeing_comm: None,
            freeing_win: None,
            status: std::ptr::null_mut(),
            completions: Vec::new(),
            depth_counted: !thread.is_null(),
            thread,
        }
    }

    /// Whether this call is being recorded.
    #[inline]
    pub fn recording(&self) -> bool {
        self.recording
    }

    pub fn id(&self) -> u16 {
        self.rec.call()
    }

    pub fn comm(&mut self, h: c_int) {
        self.comm_handle = Some(h);
    }
    pub fn win(&mut self, h: c_int) {
        self.win_handle = Some(h);
    }
    pub fn peer(&mut self, r: c_int) {
        self.peer_raw = Some(r);
    }
    pub fn recv_peer(&mut self, r: c_int) {
        self.recv_peer_raw = Some(r);
    }
    pub fn root(&mut self, r: c_int) {
        self.root_raw = Some(r);
    }
    pub fn tag(&mut self, t: c_int) {
        self.rec.tag = t;
    }
    pub fn recv_tag(&mut self, t: c_int) {
        self.recv_tag = t;
    }
    pub fn count(&mut self, n: i64) {
        self.rec.count = n;
    }
    pub fn recv_count(&mut self, n: i64) {
        self.recv_count = n;
    }
    pub fn datatype(&mut self, d: c_int) {
        self.rec.datatype = d;
    }
    pub fn recv_type(&mut self, d: c_int) {
        self.recv_type = Some(d);
    }
    /// Partitions of a partitioned operation (`count` is per partition).
    pub fn partitions(&mut self, n: c_int) {
        self.partitions = Some(n);
        self.rec.aux = n;
    }
    pub fn op(&mut self, o: c_int) {
        self.rec.op = o;
    }
    /// The send-side counts array of a v-collective (`sendcounts`).
    ///
    /// # Safety
    /// `counts` is null or the call's counts argument: where the standard
    /// makes it significant, it holds one count (`int`, or `MPI_Count` in a
    /// large-count procedure) per process of the group peers belong to, and
    /// it stays readable until [`Call::enter`] returns.
    #[inline]
    pub unsafe fn send_counts(&mut self, counts: *const c_void) {
        self.send_counts = counts;
    }
    /// The receive-side counts array of a v-collective (`recvcounts`).
    ///
    /// # Safety
    /// As for [`Call::send_counts`].
    #[inline]
    pub unsafe fn recv_counts(&mut self, counts: *const c_void) {
        self.recv_counts = counts;
    }
    /// The `MPI_Request*` the call writes a new request to.
    ///
    /// # Safety
    /// `p` is null or the call's output argument, which stays valid for
    /// reads until [`Call::exit`] returns and holds a handle after the call
    /// succeeded. The same holds for the other `out_*` setters.
    #[inline]
    pub unsafe fn out_request(&mut self, p: *mut c_int) {
        self.out_request = p;
    }
    /// The `MPI_Comm*` the call writes a new communicator to.
    ///
    /// # Safety
    /// As for [`Call::out_request`].
    #[inline]
    pub unsafe fn out_comm(&mut self, p: *mut c_int) {
        self.out_comm = p;
    }
    /// The `MPI_Win*` the call writes a new window to.
    ///
    /// # Safety
    /// As for [`Call::out_request`].
    #[inline]
    pub unsafe fn out_win(&mut self, p: *mut c_int) {
        self.out_win = p;
    }
    /// The `MPI_Group*`, `MPI_Datatype*` or `MPI_Info*` the call writes a
    /// new handle to (only the first one of a call is recorded).
    ///
    /// # Safety
    /// As for [`Call::out_request`].
    #[inline]
    pub unsafe fn out_handle(&mut self, p: *mut c_int) {
        if self.out_handle.is_null() {
            self.out_handle = p;
        }
    }
    /// A `MPI_Group*`, `MPI_Datatype*` or `MPI_Info*` the call frees (or,
    /// `MPI_Type_commit`, commits): its handle is recorded in `aux`.
    ///
    /// # Safety
    /// The pointer must be null or point to a valid handle.
    pub unsafe fn in_handle(&mut self, p: *mut c_int) {
        if !p.is_null() {
            // SAFETY: not null (checked), so valid by this function's contract.
            let h = unsafe { *p };
            (self.in_handle, self.rec.aux) = (Some(h), h);
        }
    }
    /// The send buffer of a send (only kept: read with `--check-buffers`
    /// when a nonblocking send starts and completes).
    #[inline]
    pub fn buf(&mut self, p: *const c_void) {
        self.buf = p;
    }
    /// A collective's receive buffer (only kept: compared with `MPI_IN_PLACE`).
    #[inline]
    pub fn recv_buf(&mut self, p: *const c_void) {
        self.recv_buf = p;
    }
    /// The `MPI_Message*` a matched probe writes its message to.
    ///
    /// # Safety
    /// As for [`Call::out_request`].
    #[inline]
    pub unsafe fn out_message(&mut self, p: *mut c_int) {
        self.out_message = p;
    }
    /// The flag of a test or probe (`flag`), read after a successful call.
    ///
    /// # Safety
    /// As for [`Call::out_request`].
    #[inline]
    pub unsafe fn out_flag(&mut self, p: *mut c_int) {
        self.out_flag = p;
    }
    /// A `MPI_Message*` consumed by the call (`MPI_Mrecv`).
    ///
    /// # Safety
    /// The pointer must be null or point to a valid `MPI_Message`.
    pub unsafe fn in_message(&mut self, m: *mut c_int) {
        if !m.is_null() {
            // SAFETY: not null (checked), so valid by this function's contract.
            self.in_message = Some(unsafe { *m });
        }
    }
    /// A `MPI_Comm*` the call frees.
    ///
    /// # Safety
    /// The pointer must be null or point to a valid `MPI_Comm`.
    pub unsafe fn freeing_comm(&mut self, p: *mut c_int) {
        if !p.is_null() {
            // SAFETY: not null (checked), so valid by this function's contract.
            self.freeing_comm = Some(unsafe { *p });
        }
    }
    /// The `MPI_File*` the call writes a new file handle to.
    ///
    /// # Safety
    /// As for [`Call::out_request`].
    #[inline]
    pub unsafe fn out_file(&mut self, p: *mut *mut c_void) {
        self.out_file = p;
    }
    /// A `MPI_File*` the call closes: its handle is recorded in `seq`.
    ///
    /// # Safety
    /// The pointer must be null or point to a valid `MPI_File`.
    pub unsafe fn freeing_file(&mut self, p: *mut *mut c_void) {
        if !p.is_null() {
            // SAFETY: not null (checked), so valid by this function's contract.
            self.rec.seq = unsafe { *p } as usize as i64;
        }
    }
    /// A `MPI_Win*` the call frees.
    ///
    /// # Safety
    /// The pointer must be null or point to a valid `MPI_Win`.
    pub unsafe fn freeing_win(&mut self, p: *mut c_int) {
        if !p.is_null() {
            // SAFETY: not null (checked), so valid by this function's contract.
            self.freeing_win = Some(unsafe { *p });
        }
    }

    /// The status pointer to pass to MPI: the caller's, or `own` when the
    /// caller passed `MPI_STATUS_IGNORE` (so the actual source, tag and
    /// size can be recorded).
    ///
    /// # Safety
    /// `st` is `MPI_STATUS_IGNORE` or the call's status argument, and `own`
    /// a status of the wrapper's; the one returned is passed to MPI and
    /// stays valid for reads until [`Call::exit`] returns.
    pub unsafe fn status(&mut self, st: *mut MPI_Status, own: *mut MPI_Status) -> *mut MPI_Status {
        if !self.recording {
            return st;
        }
        if st as usize == abi::MPI_STATUS_IGNORE {
            self.rec.head |= (flags::OWN_STATUS as u32) << 24;
            self.status = own;
            return own;
        }
        self.status = st;
        st
    }

    /// Resolves the arguments and writes the in-progress record.
    pub fn enter(&mut self) {
        if !self.recording {
            return;
        }
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut g = state();
            let Some(tr) = g.as_mut() else { return };
            self.resolve(tr);
        }));
        if r.is_err() {
            fail("internal error recording a call");
            self.recording = false;
            return;
        }
        if crate::life::MODULES_DUE.load(Ordering::Relaxed)
            && crate::life::MODULES_DUE.swap(false, Ordering::Relaxed)
            && catch_unwind(crate::life::refresh_modules).is_err()
        {
            fail("internal error reading the module map");
        }
        if self.writes_records {
            // SAFETY: a recorded call got `thread` from this thread's
            // THREAD_STATE in `begin`; it lives until the thread exits, and a
            // `Call` (holding raw pointers, neither Send nor Sync) never
            // leaves the thread that made it.
            self.slot = reserve_in(unsafe { &*self.thread });
            self.rec.t_enter = ticks();
            // SAFETY: null or the slot just reserved from this thread's journal.
            unsafe { publish(self.slot, &self.rec) };
        } else {
            self.rec.t_enter = ticks();
        }
    }

    fn resolve(&mut self, tr: &mut Tracer) {
        tr.calls += 1;
        if tr.calls.is_multiple_of(256) {
            tr.maybe_clock_point(ticks());
        }
        if let Some(h) = self.freeing_comm {
            if let Some(cs) = tr.comm(h) {
                self.rec.comm = cs.slot;
            }
            tr.free_comm(h);
        }
        // A request variable still holding an active request of this
        // process is overwritten: the old handle goes to `aux` (the
        // analyzer reports it when that request is then never completed).
        if !self.out_request.is_null() && !matches!(self.category, Category::PsendInit | Category::PrecvInit) {
            // SAFETY: the call's output argument (contract of
            // `Call::out_request`), writable so readable; its value may be
            // indeterminate and is only compared.
            let old = unsafe { self.out_request.read_volatile() };
            if tr.requests.get(&old).is_some_and(|r| r.active) {
                self.rec.aux = old;
            }
        }
        if let Some(w) = self.freeing_win {
            if let Some(cs) = tr.wins.remove(&w) {
                self.rec.comm = cs.slot;
            }
        }
        // The window handle goes to `seq` (unused by one-sided calls): the
        // analyzers tell windows apart by it.
        if let Some(w) = self.win_handle.or(self.freeing_win) {
            self.rec.seq = i64::from(w);
        }
        let coll = self.category == Category::Coll;
        let (mut have_comm, mut send_sum, mut recv_sum, mut leaf) = (false, None, None, false);
        // The communicator is an intercommunicator; the size of the group
        // collectives exchange with.
        let (mut inter, mut group) = (false, 0usize);
        let r = &mut self.rec;
        let cs = match (self.comm_handle, self.win_handle) {
            (Some(h), _) => tr.comm(h),
            (None, Some(w)) => tr.wins.get_mut(&w),
            _ => None,
        };
        if let Some(cs) = cs {
            have_comm = true;
            r.comm = cs.slot;
            if let Some(p) = self.peer_raw {
                r.peer = cs.world_rank(p);
            }
            if let Some(p) = self.root_raw {
                r.root = cs.world_rank(p);
            }
            if coll {
                leaf = is_leaf(self.root_raw, cs);
                (inter, group) = (cs.inter, cs.peer_group_size());
                let call = r.call();
                // SAFETY: null or a counts argument of this call, as the
                // contract of the setters requires; `enter` still runs.
                send_sum = unsafe { sum_counts(call, self.root_raw, self.large, self.send_counts, cs) };
                // SAFETY: as above.
                recv_sum = unsafe { sum_counts(call, self.root_raw, self.large, self.recv_counts, cs) };
                if self.comm_handle.is_some() {
                    cs.coll_seq += 1;
                    r.seq = cs.coll_seq;
                }
            }
        } else if let Some(p) = self.peer_raw {
            r.peer = p;
        }
        let size = if r.datatype != NONE_I32 { type_size(r.datatype) } else { 0 };
        if r.count != NONE_I64 && r.datatype != NONE_I32 {
            r.bytes = r.count * size * self.partitions.map_or(1, i64::from);
        }
        match self.category {
            Category::Send | Category::Sendrecv if r.peer >= 0 && have_comm => {
                r.seq = tr.next_send_seq(r.comm, r.peer, r.tag);
            }
            Category::Coll => {
                if let Some(s) = send_sum {
                    r.count = s;
                    r.bytes = s * size;
                }
                let rsize = self.recv_type.map(type_size).unwrap_or(size);
                let rcount = recv_sum.or((self.recv_count != NONE_I64).then_some(self.recv_count));
                if let Some(n) = rcount {
                    r.recv_bytes = n * rsize;
                }
                let in_place = [self.buf, self.recv_buf].iter().any(|&b| b as usize == abi::MPI_IN_PLACE);
                if in_place {
                    r.head |= (flags::IN_PLACE as u32) << 24;
                } else if !self.buf.is_null() && crate::checks::check_buffers() {
                    let name = crate::PNAMES.get(r.call() as usize).map(|n| n.to_bytes()).unwrap_or(b"");
                    let counts = crate::checks::Counts { count: r.count, recv_count: self.recv_count, recv_sum };
                    self.send_elems = crate::checks::collective_send_elems(name, leaf, inter, group as i64, counts);
                }
                // At the leaves of rooted collectives the root's side of the
                // arguments is not significant (and may be garbage).
                if leaf {
                    let name = crate::PNAMES.get(r.call() as usize).map(|n| n.to_bytes()).unwrap_or(b"");
                    let has = |w: &[u8]| name.windows(w.len()).any(|x| x == w);
                    if has(b"catter") {
                        (r.count, r.bytes) = (NONE_I64, NONE_I64);
                    }
                    if has(b"ather") {
                        r.recv_bytes = NONE_I64;
                    }
                }
                // The receive datatype (correctness checks compare type
                // signatures pairwise) in `tag`, which collectives have none
                // of, where significant: not where the receive side is.
                let recv_in_place = self.recv_buf as usize == abi::MPI_IN_PLACE;
                if let Some(t) = self.recv_type.filter(|_| r.recv_bytes != NONE_I64 && !recv_in_place) {
                    r.tag = t;
                    r.head |= (flags::RECV_TYPE as u32) << 24;
                }
            }
            Category::Mrecv => {
                if let Some(m) = self.in_message.and_then(|m| tr.messages.remove(&m)) {
                    r.seq = m.seq;
                    r.comm = m.slot;
                    r.peer = m.peer;
                    r.tag = m.tag;
                }
            }
            _ => {}
        }
    }

    /// Completes the record with the return code and the call's outputs.
    pub fn exit(&mut self, rc: c_int) {
        if self.depth_counted {
            // SAFETY: `depth_counted` means `begin` got `thread` from this
            // thread's THREAD_STATE, alive until the thread exits; a `Call`
            // never leaves its thread (see `enter`).
            let t = unsafe { &*self.thread };
            t.depth.set(t.depth.get().saturating_sub(1));
        }
        if !self.recording {
            return;
        }
        let t = ticks();
        let outputs = !self.status.is_null()
            || !self.out_request.is_null()
            || !self.out_comm.is_null()
            || !self.out_win.is_null()
            || !self.out_file.is_null()
            || !self.out_handle.is_null()
            || !self.out_message.is_null();
        let commit = rc == abi::MPI_SUCCESS && self.rec.call() as usize == crate::ids::MPI_Type_commit;
        let outputs = outputs || commit;
        let r = catch_unwind(AssertUnwindSafe(|| {
            self.rec.t_exit = t;
            self.rec.rc = rc;
            self.rec.head |= (flags::DONE as u32) << 24;
            if let (true, Some(h)) = (commit, self.in_handle) {
                // The signature of the committed type (SCHEMA.md): not under
                // the state's lock, it asks MPI.
                if let Some((sig, size)) = crate::checks::signature(h) {
                    (self.rec.seq, self.rec.count, self.rec.bytes) = (sig.stored(), sig.len as i64, size);
                }
            }
            if rc == abi::MPI_SUCCESS && outputs {
                let mut g = state();
                if let Some(tr) = g.as_mut() {
                    self.outputs(tr);
                }
            }
        }));
        if r.is_err() {
            fail("internal error recording a call");
            return;
        }
        if self.writes_records {
            if self.slot.is_null() {
                self.slot = reserve();
                // SAFETY: null or the slot just reserved from this thread's journal.
                unsafe { publish(self.slot, &self.rec) };
            } else if outputs {
                // SAFETY: the slot `enter` reserved from this thread's
                // journal, which stays mapped while the thread runs.
                unsafe { publish(self.slot, &self.rec) };
            } else {
                // Only the exit time, return code and flags changed.
                // SAFETY: not null: the slot `enter` reserved from this
                // thread's journal, which stays mapped while the thread
                // runs; only this thread writes it.
                unsafe {
                    std::ptr::addr_of_mut!((*self.slot).t_exit).write_volatile(t);
                    std::ptr::addr_of_mut!((*self.slot).rc).write_volatile(rc);
                    journal::set_head(self.slot, self.rec.head);
                }
            }
            for e in &mut self.completions {
                if e.t_exit == 0 {
                    (e.t_enter, e.t_exit) = (t, t);
                }
                append(e);
            }
        }
    }

    /// A completion record for request/receive parts finished by this call.
    pub fn completion(&self, call: u16) -> Record {
        Record {
            head: head(call, Kind::Completion, flags::DONE),
            t_enter: self.rec.t_exit,
            t_exit: self.rec.t_exit,
            site: self.rec.site,
            ..Default::default()
        }
    }

    /// Reads the outputs of a call that succeeded (run from [`Call::exit`],
    /// while the pointers its setters took are still valid).
    fn outputs(&mut self, tr: &mut Tracer) {
        let key = (self.comm_handle, self.win_handle);
        let status = if self.status.is_null() {
            None
        } else {
            // SAFETY: not null: the status `Call::status` handed to MPI,
            // valid for reads until `exit` returns by that method's contract.
            Some(unsafe { *self.status })
        };
        // A probe's status has no meaningful cancelled bit (MPICH leaves it
        // as the caller's memory had it).
        let status = match self.category {
            Category::Probe | Category::Mprobe => status.map(|mut st| {
                st.set_cancelled(false);
                st
            }),
            _ => status,
        };
        // SAFETY: not null (checked first): the call's flag argument, which
        // the call that succeeded wrote (contract of `Call::out_flag`).
        let flag = self.out_flag.is_null() || unsafe { *self.out_flag } != 0;
        match (self.category, status) {
            (Category::Recv, Some(st)) => {
                // The status replaces the source asked for; a wildcard is
                // kept in `aux` (correctness checks look for receives whose
                // match depended on timing).
                if self.rec.peer == abi::MPI_ANY_SOURCE {
                    self.rec.aux = abi::MPI_ANY_SOURCE;
                }
                let (p, t, b, s) = tr.received_on(key, &st, true);
                (self.rec.peer, self.rec.tag, self.rec.bytes, self.rec.seq) = (p, t, b, s);
            }
            (Category::Mrecv, Some(st)) => {
                self.rec.bytes = st.byte_count() as i64;
            }
            (Category::Probe, Some(st)) if flag => {
                let (p, t, b, _) = tr.received_on(key, &st, false);
                (self.rec.peer, self.rec.tag, self.rec.bytes) = (p, t, b);
            }
            (Category::Mprobe, Some(st)) if flag => {
                let (p, t, b, s) = tr.received_on(key, &st, true);
                (self.rec.peer, self.rec.tag, self.rec.bytes, self.rec.seq) = (p, t, b, s);
                if !self.out_message.is_null() {
                    // SAFETY: not null (checked): the call's output argument,
                    // written by the call that succeeded (`Call::out_message`).
                    let m = unsafe { *self.out_message };
                    tr.messages.insert(m, MsgInfo { slot: self.rec.comm, seq: s, peer: p, tag: t });
                }
            }
            (Category::Sendrecv, Some(st)) => {
                let (p, t, b, s) = tr.received_on(key, &st, true);
                let mut c = self.completion(self.rec.call());
                (c.peer, c.tag, c.bytes, c.seq, c.comm) = (p, t, b, s, self.rec.comm);
                self.completions.push(c);
            }
            _ => {}
        }
        let needs_comm = !self.out_request.is_null() || !self.out_comm.is_null() || !self.out_win.is_null();
        let cs = if !needs_comm {
            None
        } else if self.category == Category::Mrecv {
            // `MPI_Imrecv` names no communicator: the probe's.
            let slot = self.rec.comm;
            tr.comms.values().find(|c| c.slot == slot).cloned()
        } else {
            tr.lookup(key).cloned()
        };
        if !self.out_request.is_null() {
            // SAFETY: not null (checked): the call's output argument,
            // written by the call that succeeded (`Call::out_request`).
            let h = unsafe { *self.out_request };
            self.rec.request = h;
            let kind = match self.category {
                Category::Send | Category::SendInit => ReqKind::Send,
                Category::Sendrecv => ReqKind::Sendrecv,
                Category::PsendInit => ReqKind::PartSend,
                Category::PrecvInit => ReqKind::PartRecv,
                Category::Recv | Category::RecvInit => ReqKind::Recv,
                Category::Mrecv => ReqKind::Mrecv,
                Category::Coll => ReqKind::Coll,
                _ => ReqKind::Other,
            };
            // Every procedure named `*_init` that makes a request (sends,
            // receives, collectives, partitioned) makes a persistent one.
            let name = crate::PNAMES[self.rec.call() as usize].to_bytes();
            let persistent = name.strip_suffix(b"_c").unwrap_or(name).ends_with(b"_init");
            let r = &self.rec;
            let posted = tr.next_post();
            let mut info = ReqInfo {
                call: r.call(),
                kind,
                comm: cs.clone(),
                peer: r.peer,
                // A collective's `tag` is its receive datatype.
                tag: if kind == ReqKind::Coll { NONE_I32 } else { r.tag },
                bytes: r.bytes,
                count: r.count,
                datatype: r.datatype,
                seq: r.seq,
                persistent,
                active: !persistent,
                recv_peer: match (&cs, self.recv_peer_raw) {
                    (Some(cs), Some(p)) => cs.world_rank(p),
                    (None, Some(p)) => p,
                    (_, None) => NO_RANK,
                },
                recv_tag: self.recv_tag,
                posted,
                late: false,
                preassigned: false,
                sendbuf: None,
            };
            // The data a nonblocking send, the send half of a send-receive
            // or a collective sends from its buffer (collectives: see
            // `checks::collective_send_elems`).
            let send_elems = match kind {
                ReqKind::Send | ReqKind::Sendrecv => Some(r.count),
                ReqKind::Coll => self.send_elems,
                _ => None,
            };
            let send_elems = send_elems.filter(|_| !self.buf.is_null() && crate::checks::check_buffers());
            if let Some(count) = send_elems {
                let mut b = crate::checks::SendBuffer {
                    buf: self.buf as usize,
                    count,
                    datatype: r.datatype,
                    comm: self.comm_handle.unwrap_or(abi::MPI_COMM_NULL),
                    sum: None,
                };
                if !persistent {
                    // SAFETY: the buffer of the send that just started, which
                    // the program may not free before it completes.
                    b.sum = unsafe { crate::checks::checksum(&b) };
                }
                info.sendbuf = Some(b);
            }
            // Persistent receives are posted by each `MPI_Start`.
            if matches!(info.kind, ReqKind::Recv | ReqKind::Sendrecv) && !persistent {
                tr.post_receive(&mut info);
            }
            tr.requests.insert(h, info);
        }
        if !self.out_comm.is_null() {
            // SAFETY: not null (checked): the call's output argument,
            // written by the call that succeeded (`Call::out_comm`).
            let h = unsafe { *self.out_comm };
            if h != abi::MPI_COMM_NULL {
                let name = crate::PNAMES[self.rec.call() as usize].to_str().unwrap_or("?");
                let parent = cs.as_ref().map(|c| c.id);
                let new = tr.register_comm(h, parent, &name[1..]);
                self.rec.aux = new.slot as i32;
                self.rec.head |= (flags::NEW_COMM as u32) << 24;
            }
        }
        if !self.out_win.is_null() {
            // SAFETY: not null (checked): the call's output argument,
            // written by the call that succeeded (`Call::out_win`).
            let w = unsafe { *self.out_win };
            self.rec.seq = i64::from(w);
            if let Some(cs) = &cs {
                tr.wins.insert(w, cs.clone());
            }
        }
        if !self.out_file.is_null() {
            // SAFETY: not null (checked): the call's output argument,
            // written by the call that succeeded (`Call::out_file`).
            self.rec.seq = unsafe { *self.out_file } as usize as i64;
        }
        if !self.out_handle.is_null() {
            // SAFETY: not null (checked): the call's output argument,
            // written by the call that succeeded (`Call::out_handle`).
            self.rec.aux = unsafe { *self.out_handle };
        }
    }
}

/// Whether this process is a non-root process of a rooted collective (root
/// `root`, a rank of `cs`; `MPI_ROOT` marks the root of an intercommunicator).
fn is_leaf(root: Option<c_int>, cs: &CommState) -> bool {
    match root {
        None => false,
        Some(r) if cs.inter => r != abi::MPI_ROOT,
        Some(r) => r != cs.rank,
    }
}

/// Sums a counts array of collective `call`, where it is significant here.
///
/// # Safety
/// `p` is null or a counts array of `call` as [`Call::send_counts`]
/// describes it (of `i64` if `large`, else of `int`).
unsafe fn sum_counts(call: u16, root: Option<c_int>, large: bool, p: *const c_void, cs: &CommState) -> Option<i64> {
    if p.is_null() || call as usize >= crate::PNAMES.len() {
        return None;
    }
    let name = crate::PNAMES[call as usize].to_bytes();
    if name.windows(8).any(|w| w == b"Neighbor") {
        return None;
    }
    // Counts arrays of rooted v-collectives are significant only at the root.
    if is_leaf(root, cs) {
        return None;
    }
    let n = cs.peer_group_size();
    // SAFETY: not null, and significant at this process (both checked
    // above), so the array holds one count of the element type `large`
    // selects per process of the peer group, by this function's contract.
    let sum = unsafe {
        if large {
            std::slice::from_raw_parts(p as *const i64, n).iter().sum::<i64>()
        } else {
            std::slice::from_raw_parts(p as *const c_int, n).iter().map(|&c| c as i64).sum::<i64>()
        }
    };
    Some(sum)
}

/// Records the completion of the requests `saved[i]` for every `(i, status)`
/// in `done`, as [`Kind::Completion`] records following the call, which
/// returned `rc`. A request that completed in error (a truncated receive,
/// with `MPI_ERRORS_RETURN`) gets the error as the `rc` of its row: the
/// call's own return code, or under `MPI_ERR_IN_STATUS` its status's.
pub fn complete_requests(c: &mut Call, saved: &[c_int], done: &[(usize, Option<MPI_Status>)], rc: c_int) {
    if !c.recording() {
        return;
    }
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut g = state();
        let Some(tr) = g.as_mut() else { return };
        if let [one] = done {
            let rec = completion_of(c, tr, saved, *one, rc);
            c.completions.extend(rec);
            return;
        }
        // Receives completed together take their sequence numbers in the
        // order they were posted (the order MPI matched them in), whatever
        // their order in the request array; the rows keep the array order.
        let mut order: Vec<(u64, usize)> = done
            .iter()
            .enumerate()
            .map(|(k, &(i, _))| {
                let posted = saved.get(i).and_then(|h| tr.requests.get(h)).map_or(u64::MAX, |r| r.posted);
                (posted, k)
            })
            .collect();
        order.sort_unstable();
        let mut recs: Vec<Option<Record>> = vec![None; done.len()];
        for (_, k) in order {
            recs[k] = completion_of(c, tr, saved, done[k], rc);
        }
        c.completions.extend(recs.into_iter().flatten());
    }));
    if r.is_err() {
        fail("internal error recording completions");
    }
}

/// The completion record of request `saved[i]`, completed with status `st`
/// by a call that returned `rc` (none for an inactive persistent request or
/// a null handle).
fn completion_of(
    c: &Call,
    tr: &mut Tracer,
    saved: &[c_int],
    (i, st): (usize, Option<MPI_Status>),
    rc: c_int,
) -> Option<Record> {
    let &h = saved.get(i)?;
    if h == abi::MPI_REQUEST_NULL {
        return None;
    }
    let mut rec = c.completion(c.id());
    rec.request = h;
    // MPI fills a status's MPI_ERROR only when the call returns
    // MPI_ERR_IN_STATUS.
    rec.rc = match (rc, st) {
        (abi::MPI_ERR_IN_STATUS, Some(s)) => s.MPI_ERROR,
        _ => rc,
    };
    let info = match tr.requests.get_mut(&h) {
        Some(info) if info.persistent && !info.active => return None,
        Some(info) if info.persistent => {
            info.active = false;
            Some(info.clone())
        }
        Some(_) => tr.requests.remove(&h),
        None => None,
    };
    let cancelled = st.is_some_and(|s| s.cancelled());
    let Some(info) = info else {
        rec.head |= (flags::UNKNOWN_REQUEST as u32) << 24;
        return Some(rec);
    };
    let mut fl = 0;
    if info.persistent {
        fl |= flags::PERSISTENT;
    }
    if cancelled {
        fl |= flags::CANCELLED;
    }
    rec.head = head(info.call, Kind::Completion, flags::DONE | fl);
    if let Some(b) = info.sendbuf.filter(|b| b.sum.is_some() && !cancelled) {
        // `--check-buffers`: 1 when the data changed while it was being sent.
        // SAFETY: the buffer of the send completed just now; the program
        // has not regained control since, so it is still allocated.
        rec.aux = i32::from(unsafe { crate::checks::checksum(&b) } != b.sum);
    }
    rec.comm = info.comm.as_ref().map(|c| c.slot).unwrap_or(NO_COMM);
    (rec.peer, rec.tag, rec.bytes, rec.seq, rec.count, rec.datatype) =
        (info.peer, info.tag, info.bytes, info.seq, info.count, info.datatype);
    if info.kind == ReqKind::Sendrecv {
        // Like the completion row of `MPI_Sendrecv`: the receive half.
        (rec.count, rec.datatype) = (NONE_I64, NONE_I32);
    }
    if matches!(info.kind, ReqKind::Recv | ReqKind::Sendrecv) {
        tr.receive_done(&info, cancelled);
    }
    match (info.kind, st) {
        (ReqKind::Recv, Some(st)) if !cancelled => {
            let consume = !info.preassigned;
            let (p, t, b, s) = tr.received(info.comm.as_ref(), &st, consume);
            (rec.peer, rec.tag, rec.bytes) = (p, t, b);
            rec.seq = if consume { s } else { info.seq };
        }
        (ReqKind::Recv, _) if cancelled => rec.seq = NONE_I64,
        // `MPI_Imrecv`: the message (and its number) came from the matched
        // probe.
        (ReqKind::Mrecv, Some(st)) if !cancelled => rec.bytes = st.byte_count() as i64,
        (ReqKind::Sendrecv, st) if !cancelled => {
            (rec.peer, rec.tag, rec.bytes, rec.seq) = sendrecv_received(tr, &info, st);
        }
        _ => {}
    }
    Some(rec)
}

/// The receive half of a completed `MPI_Isendrecv(_replace)`: (peer as
/// world rank, tag, bytes, seq). Where the library does not fill the
/// status of these requests (MPICH 4.0: it holds zeros or an older
/// request's values), the source and tag the call named are used, with
/// unknown bytes, and no sequence number when a wildcard leaves the
/// message unknown.
fn sendrecv_received(tr: &mut Tracer, info: &ReqInfo, st: Option<MPI_Status>) -> (i32, i32, i64, i64) {
    let (src, tag) = (info.recv_peer, info.recv_tag);
    if src == abi::MPI_PROC_NULL {
        return (abi::MPI_PROC_NULL, abi::MPI_ANY_TAG, 0, NONE_I64);
    }
    if let Some(st) = st.filter(|_| tr.isendrecv_status) {
        return tr.received(info.comm.as_ref(), &st, true);
    }
    let (wild_src, wild_tag) = (src == abi::MPI_ANY_SOURCE, tag == abi::MPI_ANY_TAG);
    let peer = if wild_src { NO_RANK } else { src };
    let t = if wild_tag { NONE_I32 } else { tag };
    let seq = match &info.comm {
        Some(cs) if !wild_src && !wild_tag => tr.next_recv_seq(cs.slot, src, tag),
        _ => NONE_I64,
    };
    (peer, t, NONE_I64, seq)
}

/// Marks the sequence-number keys of partitioned messages (communicator
/// slots are small counters).
const PARTITIONED: u32 = 1 << 31;

/// Looks a request up (for `MPI_Start`), activating persistent requests
/// and giving persistent sends and collectives their next sequence number.
pub fn start_request(h: c_int) -> Option<ReqInfo> {
    let mut g = state();
    let tr = g.as_mut()?;
    let mut info = tr.requests.get(&h).cloned()?;
    match (info.kind, &info.comm) {
        (ReqKind::Send, Some(cs)) if info.peer >= 0 => info.seq = tr.next_send_seq(cs.slot, info.peer, info.tag),
        // Partitioned messages are numbered apart from the others (they
        // match among themselves, in the order of the init calls, and both
        // sides name their peer).
        (ReqKind::PartSend, Some(cs)) if info.peer >= 0 => {
            info.seq = tr.next_send_seq(cs.slot | PARTITIONED, info.peer, info.tag)
        }
        (ReqKind::PartRecv, Some(cs)) if info.peer >= 0 => {
            info.seq = tr.next_recv_seq(cs.slot | PARTITIONED, info.peer, info.tag)
        }
        (ReqKind::Coll, Some(cs)) => {
            let slot = cs.slot;
            if let Some(c) = tr.comms.values_mut().find(|c| c.slot == slot) {
                c.coll_seq += 1;
                info.seq = c.coll_seq;
            }
        }
        _ => {}
    }
    info.active = true;
    info.posted = tr.next_post();
    if let Some(b) = &mut info.sendbuf {
        // SAFETY: the buffer of the persistent send being started, which
        // the program may not free before it completes.
        b.sum = unsafe { crate::checks::checksum(b) };
    }
    if info.kind == ReqKind::Recv {
        (info.late, info.preassigned, info.seq) = (false, false, NONE_I64);
        tr.post_receive(&mut info);
    }
    tr.requests.insert(h, info.clone());
    Some(info)
}

/// Fills a record from a request's description.
pub fn describe_request(rec: &mut Record, h: c_int, info: &ReqInfo) {
    rec.request = h;
    rec.comm = info.comm.as_ref().map(|c| c.slot).unwrap_or(NO_COMM);
    (rec.peer, rec.tag, rec.bytes, rec.seq) = (info.peer, info.tag, info.bytes, info.seq);
    if info.peer == NO_RANK {
        rec.peer = NO_RANK;
    }
}
