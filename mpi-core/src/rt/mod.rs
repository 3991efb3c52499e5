//! The runtime: process state, start-up and shut-down, and the wait loop.
//!
//! All mutable state of the library lives in one [`State`] behind one mutex.
//! Every MPI call takes the lock for a short, non-blocking step; blocking calls
//! loop "lock, progress, test, unlock, back off" in [`wait_until`], so other
//! threads and the progress of other requests go on while one waits.

pub mod agree;
pub mod attr;
pub mod buf;
pub mod comm;
pub mod ctxid;
pub mod datatype;
pub mod dpm;
pub mod errh;
pub mod error;
pub mod greq;
pub mod group;
pub mod info;
pub mod inter;
pub mod op;
pub mod p2p;
pub mod part;
pub mod pmi;
pub mod req;
pub mod sendrecv;
pub mod session;
pub mod shm;
pub mod slots;
pub mod tcp;
pub mod topo;
pub mod transport;
pub mod ulfm;
pub mod unexp;
pub mod win;

use std::os::raw::c_int;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mpi_api::abi::*;

use self::comm::CommTable;
use self::datatype::TypeTable;
use self::error::{MpiError, MpiResult};
use self::p2p::{Engine, ReqTable};
use self::pmi::Pmi;
use self::shm::{Ctl, Segment};

/// Everything the library knows, behind [`lock`].
pub struct State {
    pub world_rank: usize,
    pub world_size: usize,
    pub pmi: Pmi,
    pub engine: Engine,
    pub reqs: ReqTable,
    pub comms: CommTable,
    pub types: TypeTable,
    pub thread_level: c_int,
    pub main_thread: std::thread::ThreadId,
    pub processor_name: String,
    /// Local ranks outnumber the CPUs we may run on: yield early.
    pub oversubscribed: bool,
    /// User error handlers (`MPI_Comm_create_errhandler`), by handle index.
    pub errhandlers: Vec<Option<usize>>,
    /// Buffered-send accounting (`MPI_Buffer_attach`).
    pub bsend: BsendBuffer,
    /// The collectives' state (its type is bound in `crate::layers`, so the
    /// runtime does not name the collectives' module).
    pub coll: crate::layers::CollState,
    /// One-sided communication's windows (bound in `crate::layers`).
    pub wins: crate::layers::RmaState,
    /// What a progress round calls after the engine: the layers' hooks,
    /// given at start (`crate::layers::PROGRESS_HOOKS`).
    pub progress_hooks: &'static [ProgressHook],
    /// Open sessions (`MPI_Session_init`, `capi/session.rs`).
    pub sessions: slots::Slots<session::Session>,
    /// Names this job among jobs that meet (`rt/dpm.rs`): the key-value
    /// space and the host of rank 0.
    pub job_id: String,
    /// Ports and the parent job (`rt/dpm.rs`).
    pub dpm: dpm::Dpm,
    /// Partitioned channels (matching at initialization).
    pub parts: part::Parts,
    /// The program's code that progress found due (a user reduction of a
    /// collective): it runs after the lock is released ([`run_due`]).
    pub due: Vec<UserCall>,
}

/// A call of the program's code (with what it needs), found due under the
/// lock and run without it (see [`State::defer`]).
pub type UserCall = Box<dyn FnOnce() + Send>;

/// The buffer attached for buffered sends. Data of a buffered send is copied
/// into library memory; the attached size bounds how much may be pending.
#[derive(Default)]
pub struct BsendBuffer {
    pub addr: usize,
    pub size: usize,
    /// Pending buffered sends: (request index, bytes charged).
    pub pending: Vec<(u32, usize)>,
}

/// Where a runtime runs: world rank `rank` of `size`, on host `host`
/// (`oversubscribed`: its local ranks outnumber the CPUs), in the job named
/// `job_id`.
pub struct Place {
    pub rank: usize,
    pub size: usize,
    pub host: String,
    pub oversubscribed: bool,
    pub job_id: String,
}

/// A layer's part of a progress round (see [`State::progress`]): true if
/// it did anything.
pub type ProgressHook = fn(&mut State) -> bool;

impl State {
    /// One round of progress: the engine writes queued records and handles
    /// the ones that arrived, compound requests complete, then each layer's
    /// hook runs (the nonblocking collectives advance their schedules, RMA
    /// targets apply operations). True if anything happened.
    pub fn progress(&mut self) -> bool {
        let mut did = self.engine.progress(&mut self.reqs);
        if !self.engine.ft.failed().is_empty() {
            ulfm::sweep(self);
        }
        did |= self.reqs.complete_compounds();
        did |= part::progress(self);
        for i in 0..self.progress_hooks.len() {
            did |= (self.progress_hooks[i])(self);
        }
        did
    }

    /// The state of a runtime whose engine is `engine`, before any MPI
    /// object but the predefined ones exists: at `place`, with the layers'
    /// `progress_hooks`.
    pub fn new(
        pmi: Pmi,
        engine: Engine,
        place: Place,
        thread_level: c_int,
        progress_hooks: &'static [ProgressHook],
    ) -> State {
        let Place { rank, size, host, oversubscribed, job_id } = place;
        State {
            world_rank: rank,
            world_size: size,
            pmi,
            engine,
            reqs: ReqTable::default(),
            comms: CommTable::new(rank, size),
            types: TypeTable::default(),
            thread_level,
            main_thread: std::thread::current().id(),
            processor_name: host,
            oversubscribed,
            errhandlers: Vec::new(),
            bsend: BsendBuffer::default(),
            coll: Default::default(),
            wins: Default::default(),
            progress_hooks,
            sessions: slots::Slots::default(),
            job_id,
            dpm: dpm::Dpm::default(),
            parts: part::Parts::default(),
            due: Vec::new(),
        }
    }

    /// Hands `call` (the program's code) to the next thread of the program
    /// that releases the lock ([`run_due`]): the standard lets user
    /// functions call MPI, and under the lock such a call would hang. The
    /// caller learns that it ran through what `call` itself records.
    pub fn defer(&mut self, call: UserCall) {
        self.due.push(call);
        DUE.store(true, Ordering::Release);
        // A thread asleep in a wait may be the one to run it.
        wake_waiters(self);
    }
}

/// The runtimes of an in-process job of `n` ranks over the loopback
/// transport (see [`transport::loopback`]), each with the layers'
/// `progress_hooks`: for unit tests that run the engine and the layers above
/// it without processes. Nothing here touches the process-wide runtime
/// ([`lock`], [`init`]).
pub fn loopback_job(n: usize, progress_hooks: &'static [ProgressHook]) -> MpiResult<Vec<State>> {
    transport::loopback::Loopback::job(n)
        .into_iter()
        .enumerate()
        .map(|(rank, lb)| {
            // (A singleton's PMI: the job exists only in this process.)
            let mut pmi = Pmi::init().map_err(|e| MpiError::new(MPI_ERR_OTHER, e.to_string()))?;
            if !pmi.is_singleton() {
                return Err(MpiError::new(MPI_ERR_OTHER, "an in-process job cannot run under a process manager"));
            }
            (pmi.rank, pmi.size) = (rank, n);
            let engine = Engine::with_loopback(rank, n, lb)?;
            let place = Place {
                rank,
                size: n,
                host: format!("loopback-{rank}"),
                oversubscribed: false,
                job_id: "loopback".into(),
            };
            Ok(State::new(pmi, engine, place, MPI_THREAD_SINGLE, progress_hooks))
        })
        .collect()
}

const UNINIT: u8 = 0;
const INITIALIZED: u8 = 1;
const FINALIZED: u8 = 2;

/// Phase of the world model (`MPI_Init` .. `MPI_Finalize`), which is what
/// `MPI_Initialized` and `MPI_Finalized` report. The runtime itself (the
/// [`State`]) may run without it, for sessions (see [`start_for_session`]).
static PHASE: AtomicU8 = AtomicU8::new(UNINIT);
/// The runtime ran and was torn down: it cannot start again in this process.
static TORN_DOWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The runtime's state and the mutex that guards it when threads may call
/// MPI at the same time (see [`lock`]).
struct StateCell {
    mutex: Mutex<()>,
    data: std::cell::UnsafeCell<Option<Box<State>>>,
}
// SAFETY: `data` is reached only through a [`Locked`]: one holding `mutex`,
// or, while LOCKING is false, one of the single thread the program lets call
// MPI at a time (thread levels below MPI_THREAD_MULTIPLE, and no thread of
// the library's own), so never by two threads at once.
unsafe impl Sync for StateCell {}
static STATE: StateCell = StateCell { mutex: Mutex::new(()), data: std::cell::UnsafeCell::new(None) };
/// Whether [`lock`] takes the mutex. Below `MPI_THREAD_MULTIPLE` the
/// program calls MPI from one thread at a time, and a mutex would cost each
/// call two atomic read-modify-writes; on x86 each also waits until the
/// call's stores to the shared-memory rings have reached the reader's cache
/// (a full barrier), which serializes a burst of small sends on the
/// round trips between cores. True until `MPI_Init_thread` settles on a
/// lower level, and for good once the level is raised to MULTIPLE or the
/// library starts a thread of its own ([`switch_to_locking`]).
static LOCKING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
/// A [`Locked`] that did not take the mutex is held (by the one thread that
/// may call MPI while LOCKING is off). A global, not a thread-local: in a
/// shared library every thread-local access is a call.
static UNLOCKED_HOLDER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// This rank's control block in the node segment (for sleeping without the lock).
static MY_CTL: AtomicPtr<Ctl> = AtomicPtr::new(std::ptr::null_mut());
static OVERSUB: AtomicU8 = AtomicU8::new(0);
/// Some peers are on other hosts: a sleeping rank must also look at sockets.
static TCP_ACTIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// This rank's wake socket, when it has TCP peers (see [`shm::WakeSocket`]).
static WAKE: std::sync::OnceLock<shm::WakeSocket> = std::sync::OnceLock::new();
/// How [`abort`] reaches the launcher without the state lock: a duplicate
/// of the PMI connection, set once at start-up (none for a singleton).
static ABORT: std::sync::OnceLock<pmi::AbortChannel> = std::sync::OnceLock::new();

/// Whether this host runs more of the job's ranks than it has CPUs.
pub fn oversubscribed() -> bool {
    OVERSUB.load(Ordering::Relaxed) != 0
}

pub fn is_initialized() -> bool {
    PHASE.load(Ordering::Acquire) != UNINIT
}
pub fn is_finalized() -> bool {
    PHASE.load(Ordering::Acquire) == FINALIZED
}

/// Some [`State::due`] calls wait for a thread to run them.
static DUE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

thread_local! {
    /// This thread is one of the library's own (see [`library_thread`]).
    static LIBRARY_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// This thread holds the state lock (kept in debug builds, for the
    /// assertions of [`entering_user_code`] and [`lock`]).
    #[cfg(debug_assertions)]
    static HELD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as one of the library's own (the helper of
/// `MPI_Comm_idup`): it never runs the program's deferred code, which the
/// program expects only in its own threads, inside its MPI calls.
pub fn library_thread() {
    LIBRARY_THREAD.with(|t| t.set(true));
}

/// Whether deferred calls wait and this thread may run them.
#[inline]
fn due_here() -> bool {
    DUE.load(Ordering::Acquire) && !LIBRARY_THREAD.with(|t| t.get())
}

/// Runs the program's code that progress found due ([`State::defer`]), on
/// this thread and without the lock. Called where a thread of the program
/// has released the lock: between the rounds of a wait ([`block_on`]) and
/// at the end of every call at the C boundary (`ffi::guard`). Nothing to
/// do costs one atomic load.
#[inline]
pub fn run_due() {
    if due_here() {
        run_due_now();
    }
}

#[cold]
fn run_due_now() {
    let calls = {
        let mut g = lock();
        match g.as_deref_mut() {
            Some(st) => {
                DUE.store(false, Ordering::Release);
                std::mem::take(&mut st.due)
            }
            None => return,
        }
    };
    for call in calls {
        entering_user_code();
        call();
    }
    // Waiters of the operations these calls advance look again.
    try_with(wake_waiters);
}

/// Whether this thread holds the state lock (known in debug builds only;
/// false otherwise).
pub fn lock_held() -> bool {
    #[cfg(debug_assertions)]
    return HELD.with(|h| h.get());
    #[cfg(not(debug_assertions))]
    false
}

/// To be called just before the library calls the program's code (a user
/// function, callback or error handler): in debug builds, fails if the
/// lock is held, as the code may call MPI and would hang on it.
#[inline]
pub fn entering_user_code() {
    debug_assert!(!lock_held(), "user code called with the lock held");
}

/// The state, locked (see [`lock`]).
pub struct Locked {
    /// None when LOCKING was off (see there).
    guard: Option<MutexGuard<'static, ()>>,
}

impl std::ops::Deref for Locked {
    type Target = Option<Box<State>>;
    #[inline]
    fn deref(&self) -> &Self::Target {
        // SAFETY: a Locked is the one way to the state in this process at
        // this moment (see StateCell's Sync impl).
        unsafe { &*STATE.data.get() }
    }
}

impl std::ops::DerefMut for Locked {
    #[inline]
    fn deref_mut(&mut self) -> &mut Self::Target {
        // SAFETY: as for Deref; `&mut self` keeps this Locked's borrows apart.
        unsafe { &mut *STATE.data.get() }
    }
}

impl Drop for Locked {
    #[inline]
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        HELD.with(|h| h.set(false));
        if self.guard.is_none() {
            UNLOCKED_HOLDER.store(false, Ordering::Release);
        }
    }
}

/// Threads of this process waiting for the state lock.
static LOCK_WANTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Locks the state. Panics in other threads do not poison it for us.
#[inline]
pub fn lock() -> Locked {
    #[cfg(debug_assertions)]
    assert!(!HELD.with(|h| h.get()), "the state lock taken again by the thread that holds it");
    let guard = if LOCKING.load(Ordering::Acquire) {
        let g = lock_mutex();
        // The thread that switched to locking may still hold the state
        // without the mutex, until its current call lets go.
        while UNLOCKED_HOLDER.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        Some(g)
    } else {
        UNLOCKED_HOLDER.store(true, Ordering::Relaxed);
        None
    };
    #[cfg(debug_assertions)]
    HELD.with(|h| h.set(true));
    Locked { guard }
}

fn lock_mutex() -> MutexGuard<'static, ()> {
    match STATE.mutex.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => {
            LOCK_WANTED.fetch_add(1, Ordering::SeqCst);
            let g = STATE.mutex.lock().unwrap_or_else(|e| e.into_inner());
            LOCK_WANTED.fetch_sub(1, Ordering::SeqCst);
            g
        }
    }
}

/// From now on every [`lock`] takes the mutex: call before a second thread
/// may reach the state (the library starting a thread of its own, the
/// thread level raised to `MPI_THREAD_MULTIPLE`). A caller that holds an
/// unlocked [`Locked`] keeps the state until it drops that: lockers wait
/// for it (see [`UNLOCKED_HOLDER`]).
pub fn switch_to_locking() {
    LOCKING.store(true, Ordering::SeqCst);
}

/// After the runtime started at thread level `provided`: calls take the
/// mutex only if threads may call MPI at once (MPICORE_ALWAYS_LOCK=1 keeps
/// it on, for comparison).
fn settle_locking(provided: c_int) {
    // (No thread of the library's own can exist yet: each needs a running
    // runtime, and a runtime starts once per process.)
    if provided < MPI_THREAD_MULTIPLE && std::env::var_os("MPICORE_ALWAYS_LOCK").is_none() {
        LOCKING.store(false, Ordering::Release);
    }
}

/// Called by a waiting thread between two looks at the state: if another
/// thread waits for the lock, let it have the lock first (for up to 50 us)
/// instead of taking it straight back — a spinning waiter would otherwise
/// starve the program's other threads.
fn let_others_in() {
    let wanted = LOCK_WANTED.load(Ordering::Relaxed);
    if wanted == 0 {
        return;
    }
    let t = Instant::now();
    while LOCK_WANTED.load(Ordering::Relaxed) >= wanted && t.elapsed() < Duration::from_micros(50) {
        std::thread::yield_now();
    }
}

/// Runs `f` on the state, or fails if MPI is not initialized / finalized.
pub fn with<R>(f: impl FnOnce(&mut State) -> MpiResult<R>) -> MpiResult<R> {
    let mut g = lock();
    match g.as_deref_mut() {
        Some(st) => f(st),
        None if TORN_DOWN.load(Ordering::Acquire) => {
            Err(MpiError::new(MPI_ERR_OTHER, "MPI has already been finalized"))
        }
        None => Err(MpiError::new(MPI_ERR_OTHER, "MPI has not been initialized (call MPI_Init first)")),
    }
}

/// Like [`with`] but returns `None` instead of an error when MPI is not running.
pub fn try_with<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    lock().as_deref_mut().map(f)
}

/// Blocks until `done` returns true, driving progress meanwhile.
pub fn wait_until(mut done: impl FnMut(&mut State) -> bool) -> MpiResult<()> {
    block_on(|st| done(st).then_some(()))
}

/// Blocks until `f` returns `Some`, driving progress meanwhile; `f` runs under
/// the lock, so it can also take the result (one lock round trip less than
/// waiting and then locking again).
pub fn block_on<R>(mut f: impl FnMut(&mut State) -> Option<R>) -> MpiResult<R> {
    let _blocked = Blocked::enter();
    let mut backoff = Backoff::new(OVERSUB.load(Ordering::Relaxed) != 0);
    let mut first = true;
    loop {
        // The program's code the last round found due runs here, between
        // rounds, without the lock (a blocking collective's user reduction
        // is one: the wait goes on once it ran).
        run_due();
        let busy_out;
        {
            let mut g = lock();
            let st = g.as_deref_mut().ok_or_else(|| MpiError::new(MPI_ERR_OTHER, "MPI is not running"))?;
            if first {
                // Often already complete: no progress round needed.
                first = false;
                if let Some(r) = f(st) {
                    return Ok(r);
                }
            }
            let progressed = st.progress();
            if let Some(r) = f(st) {
                return Ok(r);
            }
            if progressed {
                backoff.reset();
                continue;
            }
            busy_out = st.engine.has_pending_out();
        }
        if due_here() {
            continue;
        }
        let_others_in();
        // The last look before sleeping checks the caller's condition too:
        // it can become true without message progress (a shared-memory
        // collective's words, a helper thread completing a request), and a
        // waiter that only looked for messages would sleep through it until
        // the time-out. A result taken there is returned below.
        let mut found = None;
        backoff.snooze(busy_out, &mut |st: &mut State| {
            if st.progress() {
                return true;
            }
            found = f(st);
            // (Code found due is run at the top of the loop, not slept on.)
            found.is_some() || due_here()
        });
        if let Some(r) = found {
            return Ok(r);
        }
    }
}

/// Wakes this process's threads that sleep in [`block_on`], for a thread
/// that completed a request with no message arriving (the `MPI_Comm_idup`
/// thread). Takes the state, so it runs under the lock, before finalize can
/// unmap the control block.
pub fn wake_waiters(_st: &mut State) {
    let ctl = MY_CTL.load(Ordering::Acquire);
    if !ctl.is_null() {
        // SAFETY: MY_CTL points into the mapped segment until finalize
        // clears it under the lock, which the caller holds.
        shm::notify(unsafe { &*ctl });
    }
}

/// Threads of this process waiting in [`block_on`].
static BLOCKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts a thread in [`BLOCKED`] while it lives. The library's own helper
/// threads (such as `MPI_Comm_idup`'s) hold one from before they are
/// started until they end, so waiting threads yield the CPU to them.
pub struct Blocked;

impl Blocked {
    pub fn enter() -> Blocked {
        BLOCKED.fetch_add(1, Ordering::Relaxed);
        Blocked
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        BLOCKED.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A pause while spinning. When several threads of this process wait at
/// once (`MPI_THREAD_MULTIPLE`, or the library's own helper threads) they
/// share the CPU the rank is bound to, so a spinning one yields to the others.
#[inline]
fn relax() {
    if BLOCKED.load(Ordering::Relaxed) > 1 {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// How long a waiting rank spins, then yields before it sleeps, in
/// microseconds: `MPICORE_SPIN_US` and `MPICORE_YIELD_US` (read from the
/// environment once), with defaults that depend on oversubscription.
pub fn backoff_policy(oversubscribed: bool) -> (u64, u64) {
    static POLICY: std::sync::OnceLock<[(u64, u64); 2]> = std::sync::OnceLock::new();
    let p = POLICY.get_or_init(|| {
        let pick = |spin: u64, yld: u64| (env_u64("MPICORE_SPIN_US", spin), env_u64("MPICORE_YIELD_US", yld));
        [pick(2000, 5000), pick(0, 50)]
    });
    p[oversubscribed as usize]
}

/// Spin, then yield, then sleep on the futex until a peer writes to us.
///
/// With no more local ranks than CPUs a waiting rank keeps its CPU (busy
/// polling) for `MPICORE_SPIN_US` (default 2 ms) — giving it away costs a
/// time slice when the machine is loaded. With more ranks than CPUs it polls
/// only a few times, then yields so the rank that holds the data can run,
/// and soon sleeps on its futex, woken by the next record written to it.
struct Backoff {
    iter: u32,
    spin: Duration,
    yield_until: Duration,
    since: Option<Instant>,
}

impl Backoff {
    fn new(oversubscribed: bool) -> Self {
        let (spin, yld) = backoff_policy(oversubscribed);
        Backoff {
            iter: 0,
            spin: Duration::from_micros(spin),
            yield_until: Duration::from_micros(spin + yld),
            since: None,
        }
    }
    fn reset(&mut self) {
        self.iter = 0;
        self.since = None;
    }
    fn snooze(&mut self, busy_out: bool, ready: &mut impl FnMut(&mut State) -> bool) {
        self.iter += 1;
        // A few quick polls first; with more ranks than cores only two, as
        // every poll there holds a CPU another rank may need.
        if self.iter < if self.spin.is_zero() { 2 } else { 16 } {
            relax();
            return;
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        // Look at the clock only every 64 rounds while spinning.
        if !self.iter.is_multiple_of(64) && !self.spin.is_zero() {
            relax();
            return;
        }
        let waited = since.elapsed();
        if waited < self.spin {
            relax();
            return;
        }
        // (Only our own ranks outnumbering the cores switches to the
        // yielding policy, see `init`: reacting to load from other programs,
        // such as compilers, by yielding makes every wait a time slice.)
        if busy_out || waited < self.yield_until {
            // SAFETY: plain syscall.
            unsafe { libc::sched_yield() };
            return;
        }
        let ctl = MY_CTL.load(Ordering::Acquire);
        if ctl.is_null() {
            std::thread::sleep(Duration::from_micros(100));
            return;
        }
        // SAFETY: MY_CTL points into the segment, which stays mapped until
        // finalize clears MY_CTL (and finalize cannot run while we wait, as
        // waiting is part of an MPI call).
        let ctl = unsafe { &*ctl };
        check_local_peers();
        if let Some(wake) = WAKE.get() {
            // TCP peers too: one thread of the process sleeps in poll() on
            // the sockets and the wake socket (see POLLER), the others on
            // the futex, below.
            if POLLER.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                sleep_polling(ctl, wake, ready);
                POLLER.store(false, Ordering::Release);
                // What woke the poller may be for another thread: the
                // futex sleepers look again.
                shm::wake_sleepers(ctl);
                return;
            }
        }
        // (Without a wake socket, TCP records cannot wake us: sleep briefly.)
        let timeout_ms = if TCP_ACTIVE.load(Ordering::Relaxed) { 1 } else { 200 };
        shm::sleep(ctl, timeout_ms, || {
            let mut g = lock();
            match g.as_deref_mut() {
                Some(st) => ready(st),
                None => true,
            }
        });
    }
}

/// How long a blocking receive from a peer on this host keeps looking at
/// that peer's ring between yields before it posts a request and waits the
/// general way (only with more ranks than cores; `MPICORE_RECV_YIELD_US`,
/// 0 turns it off).
pub fn recv_yield_window() -> Option<Duration> {
    static W: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let us = *W.get_or_init(|| env_u64("MPICORE_RECV_YIELD_US", 50));
    (us > 0).then(|| Duration::from_micros(us))
}

/// Gives the CPU to another runnable thread or process.
pub fn yield_cpu() {
    // SAFETY: plain syscall.
    unsafe { libc::sched_yield() };
}

/// Ends the job when a rank of this host died without `MPI_Finalize`: a
/// waiting rank would otherwise wait for it forever under launchers that
/// let the other ranks run on (Slurm without `-K`). Looked at by ranks about
/// to sleep, at most every 200 ms.
fn check_local_peers() {
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    {
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| t.elapsed() < Duration::from_millis(200)) {
            return;
        }
        *last = Some(Instant::now());
    }
    if ulfm::enabled() {
        // Failures tolerated: the dead are marked failed, the job goes on.
        // A waiting rank must learn of a failure even where it never talked
        // to the failed process (its collective may wait for a survivor that
        // got the error and left): every rank on another host is dialed
        // once (a dead one refuses; a connection that ends is a failure).
        let _ = try_with(|st| {
            let all: Vec<usize> = (0..st.world_size).collect();
            st.engine.reach(&all);
            ulfm::detect(st)
        });
        return;
    }
    let dead =
        try_with(|st| st.engine.dead_local_peer().map(|(w, pid)| (w, pid, st.world_rank, st.processor_name.clone())));
    if let Some(Some((w, pid, me, host))) = dead {
        let why = format!("rank {w} (pid {pid}) on {host} ended without calling MPI_Finalize");
        eprintln!("mpi-core: rank {me}: {why}; ending the job");
        abort(1, &why);
    }
}

/// A thread of this process sleeps in [`sleep_polling`]. Only one may: two
/// pollers race for the datagram or the socket data that woke them, and the
/// one that finds it taken sleeps on in `poll` until its time-out (5 ranks
/// of 4 threads over TCP took 20x longer with ranks in separate sessions,
/// where threads sleep more often).
static POLLER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sleeps until a local sender rings `wake`, a TCP socket is ready, or
/// 200 ms pass (the same protocol as [`shm::sleep`], with `poll`).
fn sleep_polling(ctl: &shm::Ctl, wake: &shm::WakeSocket, ready: &mut impl FnMut(&mut State) -> bool) {
    let mut fds = Vec::new();
    shm::sleep_begin(ctl, &ctl.polling);
    let ready = {
        let mut g = lock();
        match g.as_deref_mut() {
            Some(st) => {
                let r = ready(st);
                if !r {
                    st.engine.poll_fds(&mut fds);
                }
                r
            }
            None => true,
        }
    };
    if !ready {
        fds.push(libc::pollfd { fd: wake.fd(), events: libc::POLLIN, revents: 0 });
        // SAFETY: poll on an array of valid pollfd structs we own.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 200) };
        wake.drain();
    }
    shm::sleep_end(&ctl.polling);
}

/// `MPI_Init` / `MPI_Init_thread`: starts the world model, and the runtime
/// unless a session already started it.
pub fn init(required: c_int) -> MpiResult<c_int> {
    let mut g = lock();
    if PHASE.load(Ordering::Acquire) != UNINIT {
        return Err(MpiError::new(MPI_ERR_OTHER, "MPI_Init called twice (or after MPI_Finalize)"));
    }
    let provided = start_or_join(&mut g, required)?;
    PHASE.store(INITIALIZED, Ordering::Release);
    Ok(provided)
}

/// Starts the runtime for `MPI_Session_init` unless it runs already, and
/// runs `register` on it with the thread level provided, under the same
/// lock (so that no other thread's finalization ends the runtime before
/// the new session counts).
pub fn start_for_session<R>(required: c_int, register: impl FnOnce(&mut State, c_int) -> MpiResult<R>) -> MpiResult<R> {
    let mut g = lock();
    let provided = start_or_join(&mut g, required)?;
    let st = g.as_deref_mut().ok_or_else(|| MpiError::new(MPI_ERR_INTERN, "the runtime did not start"))?;
    register(st, provided)
}

/// The runtime at `g`, started if it is not running; the thread level of
/// the process is raised to `required` (clamped to what exists). Returns
/// the level provided: the process's, which a caller that joins a running
/// runtime may find above the one it asked for (allowed, as for
/// `MPI_Init_thread`; a session made after `MPI_Init_thread(MPI_THREAD_MULTIPLE)`
/// runs at that level, as in MPICH: MPICH suite threads/init/mult_session).
fn start_or_join(g: &mut Locked, required: c_int) -> MpiResult<c_int> {
    let wanted = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE);
    if let Some(st) = g.as_deref_mut() {
        st.thread_level = st.thread_level.max(wanted);
        if st.thread_level >= MPI_THREAD_MULTIPLE {
            switch_to_locking();
        }
        return Ok(st.thread_level);
    }
    if TORN_DOWN.load(Ordering::Acquire) {
        return Err(MpiError::new(
            MPI_ERR_OTHER,
            "the MPI runtime of this process was shut down (by MPI_Finalize or the finalization of the last session) and cannot be started again",
        ));
    }
    start(g, required)
}

/// Starts the runtime: joins the job through PMI, maps the node segment,
/// connects to other hosts.
fn start(g: &mut Locked, required: c_int) -> MpiResult<c_int> {
    let mut pmi = Pmi::init().map_err(|e| MpiError::new(MPI_ERR_OTHER, e.to_string()))?;
    if let Some(ch) = pmi.abort_channel() {
        let _ = ABORT.set(ch);
    }
    let (rank, size) = (pmi.rank, pmi.size);
    let mut host = hostname();
    // Testing aid: split the ranks of one machine into k "hosts" (blocks of
    // consecutive ranks) that talk over TCP instead of shared memory.
    if let Some(k) = std::env::var("MPICORE_FAKE_HOSTS").ok().and_then(|v| v.parse::<usize>().ok()).filter(|&k| k > 0) {
        host = format!("{host}~{}", rank * k / size);
    }
    let pmierr = |e: pmi::PmiError| MpiError::new(MPI_ERR_OTHER, e.to_string());
    let secret_env = std::env::var("MPICORE_JOB_SECRET").ok().filter(|s| !s.is_empty());

    // Business cards: the host of every rank decides who shares memory.
    pmi.put(&format!("mpicore-host-{rank}"), &host).map_err(pmierr)?;
    if rank == 0 && secret_env.is_none() && size > 1 {
        // Launched by a process manager that hands out no job secret (hydra,
        // Slurm): rank 0 makes one; the key-value space is private to the job.
        let s: [u8; 32] = tcp::random_bytes();
        pmi.put("mpicore-secret", &s.iter().map(|b| format!("{b:02x}")).collect::<String>()).map_err(pmierr)?;
    }
    pmi.barrier().map_err(pmierr)?;
    let mut hosts = Vec::with_capacity(size);
    for r in 0..size {
        hosts.push(if r == rank { host.clone() } else { pmi.get(&format!("mpicore-host-{r}")).map_err(pmierr)? });
    }
    let local_world: Vec<usize> = (0..size).filter(|&r| hosts[r] == host).collect();
    let tcp = if local_world.len() != size {
        let secret = match &secret_env {
            Some(s) => s.clone(),
            None => pmi.get("mpicore-secret").map_err(pmierr)?,
        };
        let (listener, card) = tcp::Tcp::listen()
            .map_err(|e| MpiError::new(MPI_ERR_OTHER, format!("cannot open a TCP port for the job: {e}")))?;
        if std::env::var_os("MPICORE_TCP_VERBOSE").is_some() {
            eprintln!("mpi-core: rank {rank} on {host} listens on {card}");
        }
        pmi.put(&format!("mpicore-addr-{rank}"), &card).map_err(pmierr)?;
        pmi.barrier().map_err(pmierr)?;
        let mut addrs = vec![None; size];
        for r in (0..size).filter(|&r| hosts[r] != host) {
            addrs[r] = Some(pmi.get(&format!("mpicore-addr-{r}")).map_err(pmierr)?);
        }
        TCP_ACTIVE.store(true, Ordering::Relaxed);
        Some(
            tcp::Tcp::new(rank, secret.into_bytes(), listener, addrs, hosts.clone())
                .map_err(|e| MpiError::new(MPI_ERR_OTHER, format!("cannot watch the job's TCP sockets: {e}")))?,
        )
    } else {
        None
    };
    let my_local = local_world.iter().position(|&r| r == rank).unwrap();
    let nlocal = local_world.len();
    let segname = format!("/mpicore-{}-{}", sanitize(&pmi.kvsname), sanitize(&host));
    // The first local rank creates the node segment; the others attach as
    // soon as it is complete, and the creator unlinks its name once every
    // local rank has announced itself in it. This needs no PMI barrier, so
    // it also holds where a launcher's fence does not wait for processes
    // that have not connected yet (hydra's PMI-2).
    let shm_err = |e: shm::ShmError| MpiError::new(MPI_ERR_OTHER, e.to_string());
    let deadline = Instant::now() + Duration::from_secs(60);
    let seg = if my_local == 0 {
        Segment::create(&segname, nlocal).map_err(shm_err)?
    } else {
        // Test hook (always compiled in, read once): the other local ranks
        // wait this many seconds before attaching, so that a test can stop
        // the job while the segment still has its name.
        if let Some(s) = std::env::var("MPICORE_TEST_ATTACH_DELAY").ok().and_then(|v| v.trim().parse::<u64>().ok()) {
            std::thread::sleep(Duration::from_secs(s.min(600)));
        }
        loop {
            match Segment::attach(&segname) {
                Ok(seg) => break seg,
                Err(e) if Instant::now() > deadline => return Err(shm_err(e)),
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    };
    seg.ctl(my_local).pid.store(std::process::id() as i32, Ordering::Release);
    if my_local == 0 {
        while (1..nlocal).any(|l| seg.ctl(l).pid.load(Ordering::Acquire) == 0) {
            if Instant::now() > deadline {
                Segment::unlink(&segname);
                return Err(MpiError::new(MPI_ERR_OTHER, "local ranks did not attach to the node segment within 60 s"));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Segment::unlink(&segname);
    }
    pmi.barrier().map_err(pmierr)?;
    let ncpu = available_cpus();
    // Fake hosts all run on this machine: count every rank against its CPUs.
    let on_machine = if std::env::var_os("MPICORE_FAKE_HOSTS").is_some() { size } else { nlocal };
    let oversubscribed = on_machine > ncpu || std::env::var_os("MPICORE_OVERSUBSCRIBED").is_some();
    OVERSUB.store(oversubscribed as u8, Ordering::Relaxed);
    // (Fake hosts share one machine: their local ranks would collide.)
    if !oversubscribed && std::env::var_os("MPICORE_FAKE_HOSTS").is_none() {
        bind_to_cpu(my_local);
    }
    let engine = Engine::new(rank, size, seg, local_world, my_local, tcp);
    let pmi_kvs = pmi.kvsname.clone();
    let provided = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE);
    let job_id = format!("{}@{}", sanitize(&pmi_kvs), sanitize(&hosts[0]));
    let place = Place { rank, size, host, oversubscribed, job_id };
    let mut st = Box::new(State::new(pmi, engine, place, provided, crate::layers::PROGRESS_HOOKS));
    MY_CTL.store(st.engine.my_ctl_ptr(), Ordering::Release);
    if TCP_ACTIVE.load(Ordering::Relaxed) {
        enable_wake_socket();
    }
    st.engine.enable_cma_probe();
    **g = Some(st);
    settle_locking(provided);
    Ok(provided)
}

/// A rank that also waits for TCP traffic sleeps in poll(): local senders
/// wake it through its wake socket instead of the futex. MY_CTL must be set.
fn enable_wake_socket() {
    if WAKE.get().is_some() {
        return;
    }
    if let Ok(w) = shm::WakeSocket::bind() {
        // SAFETY: MY_CTL points to this rank's control block in the live
        // segment (set by init before any caller).
        unsafe { &*MY_CTL.load(Ordering::Acquire) }.wake.store(w.id(), Ordering::Release);
        let _ = WAKE.set(w);
    }
}

/// Turns the TCP transport on in a process that has none (its whole job
/// is on one host), for talking to processes of other jobs: a listener,
/// and sleeping in poll() from now on. The job's own ranks never connect
/// to it, so the job secret it holds is a random one nobody knows.
pub fn ensure_tcp(st: &mut State) -> MpiResult<()> {
    if st.engine.tcp.is_some() {
        return Ok(());
    }
    let (listener, _) =
        tcp::Tcp::listen().map_err(|e| MpiError::new(MPI_ERR_OTHER, format!("cannot open a TCP port: {e}")))?;
    let secret: [u8; 32] = tcp::random_bytes();
    let n = st.world_size;
    st.engine.tcp = Some(
        tcp::Tcp::new(st.world_rank, secret.to_vec(), listener, vec![None; n], vec![st.processor_name.clone(); n])
            .map_err(|e| MpiError::new(MPI_ERR_OTHER, format!("cannot watch TCP sockets: {e}")))?,
    );
    TCP_ACTIVE.store(true, Ordering::Relaxed);
    enable_wake_socket();
    Ok(())
}

/// `MPI_Finalize`: ends the world model; the runtime too unless sessions
/// are still open (the last one's finalization ends it then).
pub fn finalize() -> MpiResult<()> {
    let sessions = with(|st| {
        if PHASE.load(Ordering::Acquire) != INITIALIZED {
            return Err(MpiError::new(MPI_ERR_OTHER, "MPI_Finalize without MPI_Init"));
        }
        Ok(st.sessions.live())
    })?;
    if sessions > 0 {
        PHASE.store(FINALIZED, Ordering::Release);
        return Ok(());
    }
    let r = shut_down();
    PHASE.store(FINALIZED, Ordering::Release);
    r
}

/// After a session was finalized: ends the runtime if nothing uses it any
/// more (no open session, and the world model not running).
pub fn session_ended() -> MpiResult<()> {
    let idle = with(|st| Ok(st.sessions.live() == 0 && PHASE.load(Ordering::Acquire) != INITIALIZED))?;
    if idle {
        shut_down()?;
    }
    Ok(())
}

/// Completes outstanding traffic, then leaves the job (for good: see
/// [`TORN_DOWN`]).
fn shut_down() -> MpiResult<()> {
    // Flush every queued outgoing message before leaving.
    wait_until(|st| !st.engine.has_pending_out())?;
    // A barrier over the PMI keeps ranks from unmapping while peers still
    // read rendezvous data from them.
    let mut g = lock();
    let st = g.as_deref_mut().ok_or_else(|| MpiError::new(MPI_ERR_OTHER, "MPI is not running"))?;
    if let Some(t) = &mut st.engine.tcp {
        t.finalizing = true;
    }
    st.engine.mark_finalized();
    let _ = st.pmi.barrier();
    let _ = st.pmi.finalize();
    MY_CTL.store(std::ptr::null_mut(), Ordering::Release);
    *g = None;
    TORN_DOWN.store(true, Ordering::Release);
    Ok(())
}

/// Ends the whole job: tells the launcher, then exits.
///
/// Takes no lock: it is called where a fatal error is found, often in the
/// progress loop under the state lock (a lost TCP connection), and taking
/// that lock again would hang the rank instead of ending the job. It uses
/// only what start-up put aside for it ([`ABORT`]).
pub fn abort(code: c_int, why: &str) -> ! {
    // The program's buffered printf output would be lost by `_exit`.
    // SAFETY: fflush(NULL) flushes every C output stream; it takes only
    // stdio's own stream locks.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    if let Some(ch) = ABORT.get() {
        ch.send(code, why);
    }
    // Give the launcher a moment to read the abort before our exit races it.
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: _exit ends the process without running atexit handlers that
    // could call back into MPI.
    unsafe { libc::_exit(if code == 0 { 1 } else { code & 0xff }) }
}

pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes.
    unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// Pins this rank to the `local`-th CPU it may run on (as Open MPI does for
/// small jobs): two ranks that talk must not share one CPU while the other
/// idles. Off with `MPICORE_BIND=none` (or `0`/`no`).
fn bind_to_cpu(local: usize) {
    if !binding_requested() {
        return;
    }
    // SAFETY: sched_getaffinity/setaffinity on this process with a
    // zero-initialized cpu_set_t.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect();
        let Some(&cpu) = cpus.get(local) else { return };
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
    }
}

/// Whether `MPICORE_BIND` leaves CPU binding on (it is applied only when
/// the ranks of a host do not outnumber its CPUs).
pub fn binding_requested() -> bool {
    !matches!(std::env::var("MPICORE_BIND").as_deref(), Ok("none" | "0" | "no" | "off"))
}

fn available_cpus() -> usize {
    // SAFETY: sched_getaffinity into a zeroed cpu_set_t.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let n = libc::CPU_COUNT(&set) as usize;
            if n > 0 {
                return n;
            }
        }
    }
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Time base for `MPI_Wtime`.
pub fn wtime() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime into a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}
