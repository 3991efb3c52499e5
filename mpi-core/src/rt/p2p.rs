//! Point-to-point engine: requests, matching and the wire protocols over the
//! transports (`rt/transport/`: shared-memory rings, TCP, in-process loopback).
//!
//! Protocols (record kinds in [`shm::kind`]):
//! * eager (`len <= eager_limit`): header + data in one record. A synchronous
//!   send asks for a `SYNC_ACK` when the receive matches.
//! * rendezvous: `RTS` carries the address of the (packed) send data; when
//!   the receive matches, the receiver copies it once with
//!   `process_vm_readv` and answers `FIN`. If the kernel refuses
//!   cross-process reads, the receiver answers `CTS` and the sender streams
//!   `DATA` records through the ring instead.
//! * cancel of a send not yet matched: `CANCEL_REQ` -> `CANCEL_ACK`.
//!
//! Each peer has a [`Route`]: the transport that reaches it. A transport
//! keeps the records to one peer in order (the rings queue them per
//! destination when full), so order between two ranks is always the order
//! of the sends.

use std::collections::VecDeque;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use mpi_api::abi::*;

use super::buf::SendData;
use super::datatype::{DtRef, Dtype};
use super::error::{MpiError, MpiResult};
use super::shm::{self, kind, Ctl, MsgHdr, Segment, FLAG_PIPE, FLAG_SYNC};
use super::tcp::Tcp;
use super::transport::loopback::Loopback;
use super::transport::shm::ShmTransport;
use super::transport::{Route, Transport};

/// Send modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Standard,
    Buffered,
    Sync,
    Ready,
}

/// Arguments of a persistent request, replayed by `MPI_Start`.
#[derive(Clone)]
pub enum Persist {
    Send {
        buf: *const u8,
        count: usize,
        dt: Arc<Dtype>,
        dest: i32,
        tag: i32,
        comm: MPI_Comm,
        mode: Mode,
    },
    Recv {
        buf: *mut u8,
        count: usize,
        dt: Arc<Dtype>,
        src: i32,
        tag: i32,
        comm: MPI_Comm,
    },
    /// Partitioned send (MPI 4.0): `count` elements per partition.
    Psend {
        buf: *const u8,
        partitions: usize,
        count: usize,
        dt: Arc<Dtype>,
        dest: i32,
        tag: i32,
        comm: MPI_Comm,
        /// This process's number of the channel (see `rt::part`).
        channel: i32,
    },
    /// Partitioned receive.
    Precv {
        buf: *mut u8,
        partitions: usize,
        count: usize,
        dt: Arc<Dtype>,
        src: i32,
        tag: i32,
        comm: MPI_Comm,
        /// The sender's channel, once its hello has arrived (see `rt::part`).
        channel: Option<i32>,
    },
    /// A persistent collective: its schedule, run again by each start (the
    /// type is the collectives', bound in `crate::layers`).
    Coll(crate::layers::PersistentColl),
}

/// The envelope of a message as the engine matches it: the context id of
/// its communicator, the source's rank there and the tag (a receive's may
/// be `MPI_ANY_SOURCE` and `MPI_ANY_TAG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wire {
    pub ctx: u32,
    pub src: i32,
    pub tag: i32,
}

pub struct SendOp {
    pub dest_world: usize,
    pub ctx: u32,
    pub src: i32,
    pub tag: i32,
    /// Data of a rendezvous send, kept until the receiver has it.
    pub rdv: Option<Rdv>,
    pub cancel_pending: bool,
}

pub struct Rdv {
    pub addr: *const u8,
    pub len: usize,
    /// Packed copy of non-contiguous data (`addr` points into it).
    pub owned: Option<Vec<u8>>,
    /// Bytes of `owned` packed so far, read by the receiver (through
    /// `process_vm_readv`) while the sender still packs (see `FLAG_PIPE`).
    pub packed: Option<Box<std::sync::atomic::AtomicU64>>,
}

impl Drop for Rdv {
    fn drop(&mut self) {
        if let Some(v) = self.owned.take() {
            give_back(v);
        }
    }
}

/// One spare buffer for the packed copies of non-contiguous rendezvous
/// sends, kept from one send to the next (up to `SPARE_MAX` bytes). Reusing
/// it saves zeroing or faulting in a new buffer per send, and the library
/// hands a large `malloc` block back only when a larger one replaces it
/// (or one is over `SPARE_MAX`, beyond glibc's limit): glibc raises its `mmap`
/// threshold to the size of each large block freed (up to 32 MiB), after
/// which the program's own large allocations come from the heap, placed
/// differently (in `tests/bench/dt_pack.c`, the 2 MiB buffers allocated after
/// a strided 2 MiB send moved from 16 bytes past a page to 64-byte and
/// 16-byte offsets in the heap, and its pack timings with them).
static SPARE: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());
const SPARE_MAX: usize = 32 << 20;

/// A buffer of `len` bytes to pack into: the spare one if it is large
/// enough (its bytes are old data, all overwritten by the packing).
fn scratch(len: usize) -> Vec<u8> {
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    if spare.capacity() < len {
        return vec![0u8; len];
    }
    let mut v = std::mem::take(&mut *spare);
    // No reallocation (len <= capacity); zeroes only bytes past the old length.
    v.resize(len, 0);
    v
}

/// Keeps `v` as the spare buffer if it is larger than the current one.
fn give_back(v: Vec<u8>) {
    if v.capacity() > SPARE_MAX {
        return;
    }
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    if v.capacity() > spare.capacity() {
        *spare = v;
    }
}

pub struct RecvOp {
    pub buf: *mut u8,
    pub dt: DtRef,
    pub ctx: u32,
    pub src: i32,
    pub tag: i32,
    /// Bytes the buffer can take.
    pub cap: usize,
    /// Streaming fallback of a rendezvous: bytes received so far, total, and
    /// a staging buffer when the receive type is not contiguous.
    pub stream: Option<(usize, usize, Option<Vec<u8>>)>,
}

pub enum Kind {
    /// Nothing to do (PROC_NULL, inactive persistent request).
    Null,
    Send(SendOp),
    Recv(RecvOp),
    /// Done when all `parts` (internal requests) are; the status is that of
    /// the last part (the receive of `Isendrecv`). `keep` holds data the parts
    /// read from (the packed send side of `Isendrecv_replace`).
    Compound {
        parts: Vec<u32>,
        keep: Option<Vec<u8>>,
    },
    /// A started partitioned send waiting for `MPI_Pready` of every partition.
    Partitioned {
        ready: Vec<bool>,
    },
    /// A nonblocking or persistent collective: `crate::coll` drives its
    /// schedule and completes the request with `ReqTable::finish`.
    Coll,
    /// A generalized request (`MPI_Grequest_start`): done when the
    /// program calls `MPI_Grequest_complete`; its callbacks run outside the
    /// runtime's lock (see `capi::req`).
    Greq(Greq),
}

/// The callbacks of a generalized request and their extra state, as the
/// program gave them (C function pointers; None for a NULL one, which does
/// nothing and succeeds).
#[derive(Clone, Copy)]
pub struct Greq {
    pub query: Option<GreqQueryFn>,
    pub free: Option<GreqFreeFn>,
    pub cancel: Option<GreqCancelFn>,
    /// MPICH's extension (`MPIX_Grequest_start`): called to make the
    /// request progress (see `rt::greq`).
    pub poll: Option<GreqPollFn>,
    /// MPICH's extension: called by the waits to block until it completes.
    pub wait: Option<GreqWaitFn>,
    pub extra: *mut std::ffi::c_void,
}

impl Greq {
    /// Whether the library drives it (an extended generalized request).
    pub fn extended(&self) -> bool {
        self.poll.is_some() || self.wait.is_some()
    }
}

/// `MPI_Grequest_query_function`.
pub type GreqQueryFn = unsafe extern "C" fn(*mut std::ffi::c_void, *mut MPI_Status) -> c_int;
/// `MPI_Grequest_free_function`.
pub type GreqFreeFn = unsafe extern "C" fn(*mut std::ffi::c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
pub type GreqCancelFn = unsafe extern "C" fn(*mut std::ffi::c_void, c_int) -> c_int;
/// `MPIX_Grequest_poll_function`.
pub type GreqPollFn = unsafe extern "C" fn(*mut std::ffi::c_void, *mut MPI_Status) -> c_int;
/// `MPIX_Grequest_wait_function`.
pub type GreqWaitFn = unsafe extern "C" fn(c_int, *mut *mut std::ffi::c_void, f64, *mut MPI_Status) -> c_int;

pub struct Request {
    pub kind: Kind,
    pub done: bool,
    pub status: MPI_Status,
    /// Error of the operation (e.g. `MPI_ERR_TRUNCATE`), `MPI_SUCCESS` if none.
    pub err: c_int,
    pub comm: MPI_Comm,
    pub persist: Option<Persist>,
    /// Persistent request started and not yet completed by a Wait/Test.
    pub active: bool,
    /// `MPI_Request_free` was called: release the slot once done.
    pub freed: bool,
}

// SAFETY: the raw pointers in a request are user buffers the program handed
// to MPI for the duration of the operation; they are only touched by the
// thread holding the runtime lock.
unsafe impl Send for Request {}

impl Request {
    pub fn new(kind: Kind, comm: MPI_Comm) -> Self {
        Request {
            kind,
            done: false,
            status: empty_status(),
            err: MPI_SUCCESS,
            comm,
            persist: None,
            active: true,
            freed: false,
        }
    }
}

/// The status of an operation with nothing to receive (PROC_NULL).
pub fn empty_status() -> MPI_Status {
    MPI_Status {
        count_lo: 0,
        count_hi_and_cancelled: 0,
        MPI_SOURCE: MPI_ANY_SOURCE,
        MPI_TAG: MPI_ANY_TAG,
        MPI_ERROR: MPI_SUCCESS,
    }
}

pub fn proc_null_status() -> MPI_Status {
    MPI_Status { MPI_SOURCE: MPI_PROC_NULL, MPI_TAG: MPI_ANY_TAG, ..empty_status() }
}

struct Slot {
    gen: u32,
    req: Option<Request>,
}

/// All live requests. Handles are direct request handles carrying the slot
/// index; protocol messages name a request by `(generation << 32) | index`
/// so a reused slot is never mistaken for an old request.
#[derive(Default)]
pub struct ReqTable {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Requests of kind `Compound` not yet complete.
    compounds: Vec<u32>,
}

/// Index bit set in message (Mprobe) handles, so they never equal requests.
const MSG_BIT: u32 = 1 << 25;

impl ReqTable {
    pub fn alloc(&mut self, r: Request) -> u32 {
        if let Some(i) = self.free.pop() {
            let s = &mut self.slots[i as usize];
            s.gen = s.gen.wrapping_add(1);
            s.req = Some(r);
            i
        } else {
            self.slots.push(Slot { gen: 1, req: Some(r) });
            (self.slots.len() - 1) as u32
        }
    }
    /// Whether an operation on communicator `comm` (a send, a receive, a
    /// collective) has not completed yet.
    pub fn pending_on(&self, comm: MPI_Comm) -> bool {
        self.slots.iter().filter_map(|s| s.req.as_ref()).any(|r| {
            r.comm == comm
                && !r.done
                && r.active
                && matches!(r.kind, Kind::Send(_) | Kind::Recv(_) | Kind::Compound { .. } | Kind::Coll)
        })
    }
    pub fn handle(idx: u32) -> MPI_Request {
        make_handle(HANDLE_KIND_DIRECT, OBJ_REQUEST, idx)
    }
    /// Slot index of a user handle.
    pub fn index(&self, h: MPI_Request) -> MpiResult<u32> {
        let i = handle_index(h);
        if handle_kind(h) == HANDLE_KIND_DIRECT
            && handle_obj(h) == OBJ_REQUEST
            && i & MSG_BIT == 0
            && self.slots.get(i as usize).is_some_and(|s| s.req.is_some())
        {
            Ok(i)
        } else {
            Err(MpiError::new(MPI_ERR_REQUEST, format!("invalid request handle 0x{:08x}", h as u32)))
        }
    }
    pub fn get(&mut self, i: u32) -> &mut Request {
        self.slots[i as usize].req.as_mut().expect("live request")
    }
    pub fn try_get(&mut self, i: u32) -> Option<&mut Request> {
        self.slots.get_mut(i as usize).and_then(|s| s.req.as_mut())
    }
    pub fn proto_id(&self, i: u32) -> u64 {
        (self.slots[i as usize].gen as u64) << 32 | i as u64
    }
    fn by_proto(&mut self, id: u64) -> Option<(u32, &mut Request)> {
        let i = id as u32;
        let s = self.slots.get_mut(i as usize)?;
        if s.gen != (id >> 32) as u32 {
            return None;
        }
        s.req.as_mut().map(|r| (i, r))
    }
    pub fn release(&mut self, i: u32) {
        let slot = &mut self.slots[i as usize].req;
        if slot.is_some() {
            // Dropped in place: a request is large, moving it out costs.
            *slot = None;
            self.free.push(i);
        }
    }
    /// Marks request `i` complete; frees it if the user already let go of it.
    pub fn finish(&mut self, i: u32) {
        let r = self.get(i);
        r.done = true;
        if r.freed && r.persist.is_none() {
            self.release(i);
        }
    }
    /// Makes request `i` complete when all of `parts` are.
    pub fn make_compound(&mut self, i: u32, parts: Vec<u32>, keep: Option<Vec<u8>>) {
        let r = self.get(i);
        r.kind = Kind::Compound { parts, keep };
        r.done = false;
        self.compounds.push(i);
        self.complete_compounds();
    }

    /// Completes compound requests whose parts are all done. True if any.
    #[inline]
    pub fn complete_compounds(&mut self) -> bool {
        if self.compounds.is_empty() {
            return false;
        }
        self.complete_some_compounds()
    }

    #[inline(never)]
    fn complete_some_compounds(&mut self) -> bool {
        let mut did = false;
        let mut k = 0;
        while k < self.compounds.len() {
            let i = self.compounds[k];
            let parts = match &self.get(i).kind {
                Kind::Compound { parts, .. } => parts.clone(),
                _ => {
                    self.compounds.swap_remove(k);
                    continue;
                }
            };
            if !parts.iter().all(|&p| self.get(p).done) {
                k += 1;
                continue;
            }
            let mut status = empty_status();
            let mut err = MPI_SUCCESS;
            for &p in &parts {
                let r = self.get(p);
                status = r.status;
                if err == MPI_SUCCESS {
                    err = r.err;
                }
                self.release(p);
            }
            let r = self.get(i);
            if let Some(Persist::Precv { tag, .. }) = &r.persist {
                // Its data came under the channel's tag (`rt::part`).
                status.MPI_TAG = *tag;
            }
            r.status = status;
            r.err = err;
            r.kind = Kind::Null;
            self.compounds.swap_remove(k);
            self.finish(i);
            did = true;
        }
        did
    }

    pub fn live(&self) -> usize {
        self.slots.iter().filter(|s| s.req.is_some()).count()
    }
}

/// A message that arrived before its receive was posted.
pub struct Unexp {
    pub ctx: u32,
    pub src: i32,
    pub tag: i32,
    pub from: usize,
    pub len: usize,
    pub body: Body,
}

pub enum Body {
    Eager {
        data: Vec<u8>,
        sync_sreq: Option<u64>,
    },
    /// `progress`: address of the sender's counter of packed bytes, 0 if
    /// everything is ready.
    Rts {
        addr: u64,
        sreq: u64,
        progress: u64,
    },
}

struct Posted {
    ctx: u32,
    src: i32,
    tag: i32,
    req: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cma {
    Untested,
    Works,
    Refused,
}

/// Traffic counters of the point-to-point engine, read by the tool
/// interface (`MPI_T` performance variables, `crate::tool`). Process-wide,
/// so they outlive `MPI_Finalize`. Only written under the state lock, so a
/// relaxed load and store (plain moves, no locked instruction) count exactly.
pub struct Counters {
    /// Messages (eager or rendezvous) this rank started sending, and their bytes.
    pub sent_msgs: AtomicU64,
    pub sent_bytes: AtomicU64,
    /// Messages matched by a receive of this rank (counted at the match,
    /// so in program order), and their bytes.
    pub recv_msgs: AtomicU64,
    pub recv_bytes: AtomicU64,
    /// Most messages waiting in the unexpected queue at once since `MPI_Init`.
    pub unexpected_peak: AtomicU64,
}

/// The counters of this process.
pub static COUNTERS: Counters = Counters {
    sent_msgs: AtomicU64::new(0),
    sent_bytes: AtomicU64::new(0),
    recv_msgs: AtomicU64::new(0),
    recv_bytes: AtomicU64::new(0),
    unexpected_peak: AtomicU64::new(0),
};

impl Counters {
    #[inline]
    fn bump(c: &AtomicU64, n: u64) {
        c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
    }
    #[inline]
    fn sent(&self, bytes: usize) {
        Self::bump(&self.sent_msgs, 1);
        Self::bump(&self.sent_bytes, bytes as u64);
    }
    #[inline]
    fn received(&self, bytes: usize) {
        Self::bump(&self.recv_msgs, 1);
        Self::bump(&self.recv_bytes, bytes as u64);
    }
    #[inline]
    fn queued(&self, unexpected: usize) {
        if unexpected as u64 > self.unexpected_peak.load(Relaxed) {
            self.unexpected_peak.store(unexpected as u64, Relaxed);
        }
    }
}

pub struct Engine {
    me: usize,
    /// How each peer is reached, by world rank (then peer index of the
    /// processes of other jobs).
    routes: Vec<Route>,
    /// The rings to the ranks of this host (every rank has a node segment,
    /// of one rank if it is alone on its host).
    shm: ShmTransport,
    posted: VecDeque<Posted>,
    pub unexpected: super::unexp::UnexpQueue,
    eager_limit: usize,
    cma: Cma,
    /// Messages taken by `MPI_Mprobe`, waiting for `MPI_Mrecv`.
    messages: Vec<Option<Unexp>>,
    /// Transport to ranks on other hosts, if the job spans hosts.
    pub tcp: Option<Tcp>,
    /// Transport to engines of this process (unit tests).
    loopback: Option<Loopback>,
    /// Revoked communicators (fault tolerance, `rt::ulfm`).
    pub ft: super::ulfm::FtState,
}

// SAFETY: as for `Request`: raw pointers the engine keeps (in its
// transports' queues) are user send buffers owned by a pending request,
// used only under the runtime lock.
unsafe impl Send for Engine {}

#[inline]
fn matches(p_ctx: u32, p_src: i32, p_tag: i32, ctx: u32, src: i32, tag: i32) -> bool {
    // `MPI_ANY_TAG` matches user tags only: the library's own traffic under
    // negative tags (partitioned channels) is never a wildcard's.
    p_ctx == ctx && (p_src == src || p_src == MPI_ANY_SOURCE) && (p_tag == tag || (p_tag == MPI_ANY_TAG && tag >= 0))
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The eager limit the environment asks for (`MPICORE_EAGER_LIMIT`, 16 KiB
/// by default); the engine caps it at half a ring.
pub fn configured_eager_limit() -> usize {
    env_usize("MPICORE_EAGER_LIMIT").unwrap_or(16 << 10)
}

impl Engine {
    /// The engine of world rank `me` of `world_size`: `seg` is the node
    /// segment, shared with the ranks `local_world` (by local rank; this
    /// rank is `my_local`); the other ranks are reached over `tcp`.
    pub fn new(
        me: usize,
        world_size: usize,
        seg: Segment,
        local_world: Vec<usize>,
        my_local: usize,
        tcp: Option<Tcp>,
    ) -> Self {
        let mut routes = vec![Route::Tcp; world_size];
        for (l, &w) in local_world.iter().enumerate() {
            routes[w] = Route::Shm(l as u32);
        }
        routes[me] = Route::Me;
        let shm = ShmTransport::new(seg, local_world, my_local);
        let eager_limit = configured_eager_limit().min(shm.max_payload());
        let cma = if std::env::var_os("MPICORE_NO_CMA").is_some() { Cma::Refused } else { Cma::Untested };
        Engine {
            me,
            routes,
            shm,
            posted: VecDeque::new(),
            unexpected: Default::default(),
            eager_limit,
            cma,
            messages: Vec::new(),
            tcp,
            loopback: None,
            ft: Default::default(),
        }
    }

    /// The engine of world rank `me` of an in-process job whose ranks are
    /// all reached through `loopback` (see [`Loopback`]). Its node segment
    /// is private, of this rank alone.
    pub fn with_loopback(me: usize, world_size: usize, loopback: Loopback) -> MpiResult<Self> {
        let seg = Segment::private(1).map_err(|e| MpiError::new(MPI_ERR_OTHER, e.to_string()))?;
        let mut e = Engine::new(me, world_size, seg, vec![me], 0, None);
        for (w, r) in e.routes.iter_mut().enumerate() {
            if w != me {
                *r = Route::Loopback;
            }
        }
        e.loopback = Some(loopback);
        Ok(e)
    }

    /// The peer index of process `uid` of another job (see rt/dpm.rs),
    /// listening at `card`, authenticated with `secret`: reached over TCP
    /// like a rank on another host. The TCP transport must exist.
    pub fn add_foreign(&mut self, uid: u64, card: &str, secret: &[u8]) -> usize {
        let p = self.tcp.as_mut().expect("TCP transport").foreign_peer(uid, card, secret);
        if self.routes.len() <= p {
            self.routes.resize(p + 1, Route::Tcp);
        }
        p
    }

    /// True if peer `world` (a world rank, or a process of another job) is
    /// not this rank and does not share this host's node segment (it is
    /// reached over TCP, or over loopback in tests).
    #[inline]
    pub fn is_remote(&self, world: usize) -> bool {
        !matches!(self.routes[world], Route::Me | Route::Shm(_))
    }

    /// How peer `world` is reached.
    #[inline]
    pub fn route(&self, world: usize) -> Route {
        self.routes[world]
    }

    pub fn my_ctl_ptr(&self) -> *mut Ctl {
        self.shm.ctl(self.shm.my_local()) as *const Ctl as *mut Ctl
    }

    /// Lets peers read our memory with `process_vm_readv` where a Yama
    /// ptrace policy would otherwise forbid it.
    pub fn enable_cma_probe(&mut self) {
        // SAFETY: plain prctl; failure only means CMA may be refused later.
        unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
    }

    /// A rank of this host whose process ended without entering
    /// `MPI_Finalize` (gone, or a zombie its launcher has not reaped):
    /// its world rank and process id.
    pub fn dead_local_peer(&self) -> Option<(usize, i32)> {
        self.shm.dead_peer()
    }

    /// Connects to every rank of `peers` on another host that has no
    /// connection yet (failures tolerated: the unreachable are given up,
    /// and found by [`super::ulfm::detect`]).
    pub fn reach(&mut self, peers: &[usize]) {
        if let Some(t) = self.tcp.as_mut() {
            for &p in peers {
                if p != self.me && matches!(self.routes.get(p), Some(Route::Tcp)) {
                    t.reach(p);
                }
            }
        }
    }

    /// Every rank of this host that died, but those known to have failed
    /// (see [`super::ulfm`]).
    pub fn dead_local_peers(&self) -> Vec<(usize, i32)> {
        self.shm.dead_peers(self.ft.failed())
    }

    /// Ends the posted receives for which `fails(ctx, src, tag)` gives an
    /// error class, with that error.
    pub fn fail_posted(&mut self, reqs: &mut ReqTable, fails: impl Fn(u32, i32, i32) -> Option<c_int>) {
        let mut ended = Vec::new();
        self.posted.retain(|p| match fails(p.ctx, p.src, p.tag) {
            Some(e) => {
                ended.push((p.req, e));
                false
            }
            None => true,
        });
        for (ri, e) in ended {
            let r = reqs.get(ri);
            r.err = e;
            r.status.MPI_ERROR = e;
            reqs.finish(ri);
        }
    }

    /// Marks this rank as finalizing in its control block.
    pub fn mark_finalized(&self) {
        self.shm.mark_finalized();
    }

    /// Whether records wait to be written by any transport.
    pub fn has_pending_out(&self) -> bool {
        self.shm.has_pending_out()
            || self.tcp.as_ref().is_some_and(Tcp::has_pending)
            || self.loopback.as_ref().is_some_and(Loopback::has_pending_out)
    }

    /// The file descriptors a rank about to sleep watches for input of
    /// transports that cannot wake it themselves.
    pub fn poll_fds(&self, fds: &mut Vec<libc::pollfd>) {
        if let Some(t) = &self.tcp {
            t.poll_fds(fds);
        }
    }

    pub fn world_rank(&self) -> usize {
        self.me
    }

    // ----- sending records -------------------------------------------------

    /// Sends one record to world rank `to` through the transport of its
    /// route (which queues what it cannot write yet).
    #[inline]
    fn post(&mut self, reqs: &mut ReqTable, to: usize, hdr: MsgHdr, payload: &[u8], sreq: u64) {
        match self.routes[to] {
            Route::Me => self.incoming(reqs, to, &hdr, payload),
            Route::Shm(l) => self.shm.send(l as usize, &hdr, payload, sreq),
            Route::Tcp => self.tcp.as_mut().expect("TCP transport for a remote rank").send(to, &hdr, payload, sreq),
            Route::Loopback => self.loopback.as_mut().expect("loopback transport").send(to, &hdr, payload, sreq),
        }
    }

    /// Streams `len` bytes at `ptr` to `to` as `DATA` records (the answer to
    /// its `CTS` for send `sreq`).
    ///
    /// # Safety
    /// As for [`Transport::stream`].
    unsafe fn post_stream(&mut self, to: usize, hdr: MsgHdr, ptr: *const u8, len: usize, sreq: u64) {
        match self.routes[to] {
            // (A rank never answers its own RTS with a CTS: it copies.)
            Route::Me => unreachable!("streaming to this rank"),
            // SAFETY: this function's contract, which is the transport's.
            Route::Shm(l) => unsafe { self.shm.stream(l as usize, hdr, ptr, len, sreq) },
            // SAFETY: as above.
            Route::Tcp => unsafe { self.tcp.as_mut().expect("TCP transport").stream(to, hdr, ptr, len, sreq) },
            // SAFETY: as above.
            Route::Loopback => unsafe {
                self.loopback.as_mut().expect("loopback transport").stream(to, hdr, ptr, len, sreq)
            },
        }
    }

    /// Packs `data` (`bytes` packed) straight into a ring record to `to`
    /// when it is a rank of this host (see [`ShmTransport::push_packed`]).
    /// False if the caller must post the data itself.
    fn push_packed(&mut self, to: usize, hdr: &MsgHdr, data: SendData<'_>, bytes: usize) -> bool {
        match self.routes[to] {
            Route::Shm(l) => self.shm.push_packed(l as usize, hdr, data, bytes),
            _ => false,
        }
    }

    // ----- progress ----------------------------------------------------------

    /// Writes queued records and handles every record that arrived, through
    /// each transport. True if anything happened.
    pub fn progress(&mut self, reqs: &mut ReqTable) -> bool {
        let mut finish = |id: u64| {
            if let Some((i, _)) = reqs.by_proto(id) {
                reqs.finish(i);
            }
        };
        let mut did = self.shm.flush(&mut finish);
        while let Some(rec) = self.shm.next_incoming() {
            // SAFETY: the record stays in the ring until `consume`.
            self.incoming(reqs, rec.from, &rec.hdr, unsafe { rec.payload() });
            self.shm.consume(&rec);
            did = true;
        }
        if self.tcp.is_some() {
            did |= self.drain_tcp(reqs);
        }
        if self.loopback.is_some() {
            did |= self.drain_loopback(reqs);
        }
        did
    }

    /// Progress of the TCP transport (kept out of the rings' path).
    #[inline(never)]
    fn drain_tcp(&mut self, reqs: &mut ReqTable) -> bool {
        let t = self.tcp.as_mut().expect("TCP transport");
        let did = t.flush(&mut |id| {
            if let Some((i, _)) = reqs.by_proto(id) {
                reqs.finish(i);
            }
        });
        while let Some(rec) = self.tcp.as_mut().expect("TCP transport").next_incoming() {
            // SAFETY: the frame stays in the transport's buffer until `consume`.
            self.incoming(reqs, rec.from, &rec.hdr, unsafe { rec.payload() });
            self.tcp.as_mut().expect("TCP transport").consume(&rec);
        }
        did
    }

    /// Progress of the loopback transport.
    #[inline(never)]
    fn drain_loopback(&mut self, reqs: &mut ReqTable) -> bool {
        let lb = self.loopback.as_mut().expect("loopback transport");
        let mut did = lb.flush(&mut |id| {
            if let Some((i, _)) = reqs.by_proto(id) {
                reqs.finish(i);
            }
        });
        while let Some(rec) = self.loopback.as_mut().expect("loopback transport").next_incoming() {
            // SAFETY: the record is held by the transport until `consume`.
            self.incoming(reqs, rec.from, &rec.hdr, unsafe { rec.payload() });
            self.loopback.as_mut().expect("loopback transport").consume(&rec);
            did = true;
        }
        did
    }

    /// Handles one record from world rank `from`.
    fn incoming(&mut self, reqs: &mut ReqTable, from: usize, hdr: &MsgHdr, payload: &[u8]) {
        match hdr.kind {
            kind::EAGER => {
                if let Some(ri) = self.take_posted(hdr.ctx, hdr.src, hdr.tag) {
                    self.deliver(reqs, ri, hdr.src, hdr.tag, payload);
                    if hdr.flags & FLAG_SYNC != 0 {
                        self.ack(reqs, from, kind::SYNC_ACK, hdr.aux, 0);
                    }
                } else {
                    self.unexpected.push(Unexp {
                        ctx: hdr.ctx,
                        src: hdr.src,
                        tag: hdr.tag,
                        from,
                        len: payload.len(),
                        body: Body::Eager {
                            data: payload.to_vec(),
                            sync_sreq: (hdr.flags & FLAG_SYNC != 0).then_some(hdr.aux),
                        },
                    });
                    COUNTERS.queued(self.unexpected.len());
                }
            }
            kind::RTS => {
                let addr = u64::from_ne_bytes(payload[..8].try_into().unwrap());
                let progress =
                    if hdr.flags & FLAG_PIPE != 0 { u64::from_ne_bytes(payload[8..16].try_into().unwrap()) } else { 0 };
                let u = Unexp {
                    ctx: hdr.ctx,
                    src: hdr.src,
                    tag: hdr.tag,
                    from,
                    len: hdr.len as usize,
                    body: Body::Rts { addr, sreq: hdr.aux, progress },
                };
                if let Some(ri) = self.take_posted(hdr.ctx, hdr.src, hdr.tag) {
                    self.recv_unexp(reqs, ri, u);
                } else {
                    self.unexpected.push(u);
                    COUNTERS.queued(self.unexpected.len());
                }
            }
            kind::FIN | kind::SYNC_ACK => {
                if let Some((i, _)) = reqs.by_proto(hdr.aux) {
                    reqs.finish(i);
                }
            }
            kind::CTS => {
                if let Some((_, r)) = reqs.by_proto(hdr.aux) {
                    if let Kind::Send(s) = &r.kind {
                        let rdv = s.rdv.as_ref().expect("rendezvous send");
                        let (ptr, len) = (rdv.addr, rdv.len);
                        let h = MsgHdr { kind: kind::DATA, aux: hdr.len, ..Default::default() };
                        // SAFETY: the rendezvous data (the packed copy the
                        // request owns, or the send buffer by SendData::new's
                        // contract) stays until the request completes, which
                        // it does only once the stream is reported done.
                        unsafe { self.post_stream(from, h, ptr, len, hdr.aux) };
                    }
                }
            }
            kind::DATA => {
                if let Some((i, r)) = reqs.by_proto(hdr.aux) {
                    if let Kind::Recv(op) = &mut r.kind {
                        let (got, total, _) = op.stream.as_mut().expect("streaming receive");
                        let off = hdr.len as usize;
                        let keep = op.cap.saturating_sub(off).min(payload.len());
                        if keep > 0 {
                            // Each piece goes straight to its place: a
                            // non-contiguous type unpacks bytes [off, off +
                            // keep) of its packed form (pipelined with the
                            // transfer, no whole-message buffer).
                            // SAFETY: the buffer holds `cap` bytes of the type.
                            unsafe { op.dt.unpack_range(&payload[..keep], off, op.buf) };
                        }
                        *got += payload.len();
                        if *got >= *total {
                            op.stream = None;
                            reqs.finish(i);
                        }
                    }
                }
            }
            kind::CANCEL_REQ => {
                let ok = self
                    .unexpected
                    .take_where(|u| {
                        u.from == from
                            && match &u.body {
                                Body::Rts { sreq, .. } => *sreq == hdr.aux,
                                Body::Eager { sync_sreq, .. } => *sync_sreq == Some(hdr.aux),
                            }
                    })
                    .is_some();
                self.ack(reqs, from, kind::CANCEL_ACK, hdr.aux, ok as u8);
            }
            kind::CANCEL_ACK => {
                if let Some((i, r)) = reqs.by_proto(hdr.aux) {
                    if let Kind::Send(s) = &mut r.kind {
                        s.cancel_pending = false;
                    }
                    if hdr.flags == 1 {
                        r.status.set_cancelled(true);
                        reqs.finish(i);
                    }
                }
            }
            kind::REVOKE => {
                let members = super::ulfm::decode_members(payload);
                self.revoke(reqs, hdr.ctx, hdr.len as u32, &members);
            }
            k => panic!("corrupt shared-memory record kind {k} from rank {from}"),
        }
    }

    /// Revokes the communicator of context ids `base..base + span` whose
    /// members (world ranks) are `members`, once: its pending receives end
    /// with `MPIX_ERR_REVOKED`, later operations on it fail at once (see
    /// [`super::ulfm::FtState::revoked`]), and every other member is told,
    /// by each process that learns it (so that it reaches them all even
    /// when the one that revoked is gone).
    pub fn revoke(&mut self, reqs: &mut ReqTable, base: u32, span: u32, members: &[usize]) {
        if !self.ft.add_revoked(base, span) {
            return;
        }
        let ft = &self.ft;
        let mut ended = Vec::new();
        self.posted.retain(|p| {
            let hit = ft.revoked(p.ctx, p.tag);
            if hit {
                ended.push(p.req);
            }
            !hit
        });
        for ri in ended {
            reqs.get(ri).err = MPIX_ERR_REVOKED;
            reqs.finish(ri);
        }
        let payload = super::ulfm::encode_members(members);
        let hdr = MsgHdr { kind: kind::REVOKE, ctx: base, len: span as u64, ..Default::default() };
        for &m in members {
            if m != self.me && !self.ft.is_failed(m) {
                self.post(reqs, m, hdr, &payload, 0);
            }
        }
    }

    fn ack(&mut self, reqs: &mut ReqTable, to: usize, k: u8, aux: u64, flags: u8) {
        let h = MsgHdr { kind: k, flags, aux, ..Default::default() };
        self.post(reqs, to, h, &[], 0);
    }

    fn take_posted(&mut self, ctx: u32, src: i32, tag: i32) -> Option<u32> {
        let pos = self.posted.iter().position(|p| matches(p.ctx, p.src, p.tag, ctx, src, tag))?;
        self.posted.remove(pos).map(|p| p.req)
    }

    /// Copies eager data into receive `ri` and completes it.
    fn deliver(&mut self, reqs: &mut ReqTable, ri: u32, src: i32, tag: i32, data: &[u8]) {
        COUNTERS.received(data.len());
        let r = reqs.get(ri);
        let Kind::Recv(op) = &mut r.kind else { unreachable!("posted request is a receive") };
        let n = data.len().min(op.cap);
        // SAFETY: the receive buffer holds `cap` bytes of the receive type.
        unsafe { op.dt.unpack(&data[..n], op.buf) };
        r.status.MPI_SOURCE = src;
        r.status.MPI_TAG = tag;
        r.status.set_byte_count(n as u64);
        if data.len() > op.cap {
            r.err = MPI_ERR_TRUNCATE;
        }
        reqs.finish(ri);
    }

    /// Completes (or starts, for rendezvous) receive `ri` with message `u`.
    fn recv_unexp(&mut self, reqs: &mut ReqTable, ri: u32, u: Unexp) {
        match u.body {
            Body::Eager { data, sync_sreq } => {
                self.deliver(reqs, ri, u.src, u.tag, &data);
                if let Some(s) = sync_sreq {
                    self.ack(reqs, u.from, kind::SYNC_ACK, s, 0);
                }
            }
            Body::Rts { addr, sreq, progress } => {
                COUNTERS.received(u.len);
                let rid = reqs.proto_id(ri);
                let r = reqs.get(ri);
                r.status.MPI_SOURCE = u.src;
                r.status.MPI_TAG = u.tag;
                let Kind::Recv(op) = &mut r.kind else { unreachable!("posted request is a receive") };
                let n = u.len.min(op.cap);
                r.status.set_byte_count(n as u64);
                if u.len > op.cap {
                    r.err = MPI_ERR_TRUNCATE;
                }
                let read_ok = if u.from == self.me {
                    if n > 0 {
                        // SAFETY: our own send buffer, alive until FIN
                        // completes the send; the receive buffer holds the
                        // receive's `cap` bytes, and `n` was checked against it.
                        unsafe {
                            let src = std::slice::from_raw_parts(addr as *const u8, n);
                            op.dt.unpack(src, op.buf);
                        }
                    }
                    true
                } else if let (true, Route::Shm(l)) = (self.cma != Cma::Refused, self.routes[u.from]) {
                    let pid = self.shm.pid(l as usize);
                    let res = cma_receive(pid, addr, progress, n, op);
                    match res {
                        Ok(()) => {
                            self.cma = Cma::Works;
                            true
                        }
                        Err(e) => {
                            if self.cma == Cma::Works {
                                panic!("process_vm_readv from rank {} failed: {e}", u.from);
                            }
                            self.cma = Cma::Refused;
                            false
                        }
                    }
                } else {
                    false
                };
                if read_ok {
                    reqs.finish(ri);
                    self.ack(reqs, u.from, kind::FIN, sreq, 0);
                } else {
                    // Streaming fallback: ask the sender to push the data.
                    op.stream = Some((0, u.len, None));
                    let h = MsgHdr { kind: kind::CTS, aux: sreq, len: rid, ..Default::default() };
                    self.post(reqs, u.from, h, &[], 0);
                }
            }
        }
    }

    // ----- operations ------------------------------------------------------

    /// Starts send `ri` (already allocated) of `data` to world rank
    /// `dest_world` with envelope `env`.
    pub fn start_send(
        &mut self,
        reqs: &mut ReqTable,
        ri: u32,
        data: SendData<'_>,
        dest_world: usize,
        env: Wire,
        mode: Mode,
    ) {
        if let Some(e) = self.ft.send_fails(env.ctx, env.tag, dest_world) {
            reqs.get(ri).err = e;
            reqs.finish(ri);
            return;
        }
        let (buf, count, dt) = (data.addr(), data.count(), data.dt());
        let Wire { ctx, src, tag } = env;
        let bytes = dt.packed_size(count);
        COUNTERS.sent(bytes);
        let id = reqs.proto_id(ri);
        let sync = mode == Mode::Sync;
        reqs.get(ri).kind = Kind::Send(SendOp { dest_world, ctx, src, tag, rdv: None, cancel_pending: false });
        if bytes <= self.eager_limit_to(dest_world) {
            let mut hdr = MsgHdr { kind: kind::EAGER, src, tag, ctx, len: bytes as u64, ..Default::default() };
            if sync {
                hdr.flags = FLAG_SYNC;
                hdr.aux = id;
            }
            if dt.contig {
                // SAFETY: buf holds `count` contiguous elements
                // (SendData::new's contract).
                let payload = if bytes == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(buf, bytes) } };
                self.post(reqs, dest_world, hdr, payload, id);
            } else if !self.push_packed(dest_world, &hdr, data, bytes) {
                let mut tmp = vec![0u8; bytes];
                // SAFETY: buf holds `count` elements of dt (SendData::new's contract).
                unsafe { dt.pack(buf, count, &mut tmp) };
                self.post(reqs, dest_world, hdr, &tmp, id);
            }
            if !sync {
                reqs.finish(ri);
            }
            return;
        }
        // Large non-contiguous data for another rank of this host: pack
        // and transfer are pipelined — the RTS goes out after the first
        // piece is packed, and the receiver reads (process_vm_readv) each
        // piece the sender has finished while it packs the next.
        let pipe = !dt.contig
            && dest_world != self.me
            && matches!(self.routes[dest_world], Route::Shm(_))
            && self.cma != Cma::Refused
            && bytes > 2 * PIPE_PIECE;
        if pipe {
            let mut tmp = scratch(bytes);
            let tmp_ptr = tmp.as_mut_ptr();
            let packed = Box::new(std::sync::atomic::AtomicU64::new(0));
            let counter: *const std::sync::atomic::AtomicU64 = &*packed;
            // SAFETY: buf holds `count` elements of dt (SendData::new's
            // contract); tmp their packed size.
            unsafe { dt.pack_range(buf, count, 0, &mut tmp[..PIPE_PIECE]) };
            packed.store(PIPE_PIECE as u64, std::sync::atomic::Ordering::Release);
            if let Kind::Send(s) = &mut reqs.get(ri).kind {
                s.rdv = Some(Rdv { addr: tmp_ptr, len: bytes, owned: Some(tmp), packed: Some(packed) });
            }
            let mut card = [0u8; 16];
            card[..8].copy_from_slice(&(tmp_ptr as u64).to_ne_bytes());
            card[8..].copy_from_slice(&(counter as u64).to_ne_bytes());
            let hdr = MsgHdr {
                kind: kind::RTS,
                flags: FLAG_PIPE,
                src,
                tag,
                ctx,
                len: bytes as u64,
                aux: id,
                ..Default::default()
            };
            self.post(reqs, dest_world, hdr, &card, id);
            let mut off = PIPE_PIECE;
            while off < bytes {
                let n = (bytes - off).min(PIPE_PIECE);
                // SAFETY: the packed copy and its counter now belong to the
                // request, which cannot complete before the receiver has read
                // all `bytes` (it answers FIN only then) and so not before
                // this loop ends; the heap blocks do not move. The receiver
                // reads only bytes below the counter, which are not written
                // again.
                unsafe {
                    let dst = std::slice::from_raw_parts_mut(tmp_ptr.add(off), n);
                    dt.pack_range(buf, count, off, dst);
                    (*counter).store((off + n) as u64, std::sync::atomic::Ordering::Release);
                }
                off += n;
            }
            return;
        }
        let (addr, owned) = if dt.contig {
            (buf, None)
        } else {
            let mut tmp = scratch(bytes);
            // SAFETY: buf holds `count` elements of dt (SendData::new's contract).
            unsafe { dt.pack(buf, count, &mut tmp) };
            (tmp.as_ptr(), Some(tmp))
        };
        if let Kind::Send(s) = &mut reqs.get(ri).kind {
            s.rdv = Some(Rdv { addr, len: bytes, owned, packed: None });
        }
        let hdr = MsgHdr { kind: kind::RTS, src, tag, ctx, len: bytes as u64, aux: id, ..Default::default() };
        self.post(reqs, dest_world, hdr, &(addr as u64).to_ne_bytes(), id);
    }

    /// [`Engine::start_send`] in standard mode of `data` as elements of
    /// `bytes` (a type of one byte): the request keeps the data until it
    /// completes.
    pub fn start_send_vec(
        &mut self,
        reqs: &mut ReqTable,
        ri: u32,
        data: Vec<u8>,
        bytes: &Dtype,
        dest: usize,
        env: Wire,
    ) {
        // SAFETY: `data` is not changed again: it goes to the request below
        // (its heap block does not move), or the send has copied it already.
        let send = unsafe { SendData::of_bytes(&data, bytes) };
        self.start_send(reqs, ri, send, dest, env, Mode::Standard);
        if let Kind::Send(SendOp { rdv: Some(rdv), .. }) = &mut reqs.get(ri).kind {
            debug_assert!(rdv.owned.is_none(), "bytes are sent without a packed copy");
            rdv.owned = Some(data);
        }
    }

    /// Sends a small contiguous message eagerly, without a request (the
    /// fast path of a blocking standard send): the data is in the ring, or
    /// copied into the destination's queue, when this returns.
    pub fn send_eager_now(&mut self, reqs: &mut ReqTable, data: &[u8], dest_world: usize, env: Wire) {
        debug_assert!(data.len() <= self.eager_limit_to(dest_world));
        if self.ft.is_failed(dest_world) {
            return;
        }
        COUNTERS.sent(data.len());
        let Wire { ctx, src, tag } = env;
        let hdr = MsgHdr { kind: kind::EAGER, src, tag, ctx, len: data.len() as u64, ..Default::default() };
        self.post(reqs, dest_world, hdr, data, 0);
    }

    /// Fast path of a blocking receive of contiguous data from one peer on
    /// this host: polls that peer's ring directly, up to `polls` times, and
    /// copies a matching small eager message straight into `buf` — no
    /// request, no posted-queue entry. Other records met on the way are
    /// handled as usual (in ring order). Returns `Some((tag, bytes))` when the
    /// message was received, `None` when the caller must take the general
    /// path (nothing arrived in time, or the message needs more than a copy:
    /// rendezvous, synchronous mode, truncation).
    ///
    /// Only valid while no receive is posted and no unexpected message
    /// matches (the caller checks [`Engine::direct_recv_ok`]), so that
    /// matching order is the ring's order.
    ///
    /// # Safety
    /// `buf` must be valid for writing `cap` bytes.
    pub unsafe fn recv_direct(
        &mut self,
        reqs: &mut ReqTable,
        src_world: usize,
        env: Wire,
        buf: *mut u8,
        cap: usize,
        polls: u32,
    ) -> Option<(i32, usize)> {
        let Wire { ctx, src, tag } = env;
        let l = match self.routes[src_world] {
            Route::Shm(l) => l as usize,
            // SAFETY: this function's contract for `buf` and `cap`, which is
            // recv_direct_tcp's.
            Route::Tcp => return unsafe { self.recv_direct_tcp(reqs, src_world, env, buf, cap, polls) },
            Route::Me | Route::Loopback => return None,
        };
        for _ in 0..polls {
            let Some((hdr, ptr, n)) = self.shm.consumer(l).peek().map(|(h, p)| (h, p.as_ptr(), p.len())) else {
                std::hint::spin_loop();
                continue;
            };
            if matches(ctx, src, tag, hdr.ctx, hdr.src, hdr.tag) {
                if hdr.kind != kind::EAGER || hdr.flags & FLAG_SYNC != 0 || n > cap {
                    return None;
                }
                if n > 0 {
                    // SAFETY: the record's payload stays in the ring until the
                    // pop below; `buf` holds `cap >= n` bytes (caller's contract).
                    unsafe { std::ptr::copy_nonoverlapping(ptr, buf, n) };
                }
                self.shm.consumer(l).pop(&hdr);
                COUNTERS.received(n);
                return Some((hdr.tag, n));
            }
            // SAFETY: as in `progress`: the record stays until the pop.
            let payload = unsafe { std::slice::from_raw_parts(ptr, n) };
            self.incoming(reqs, src_world, &hdr, payload);
            self.shm.consumer(l).pop(&hdr);
            if !self.direct_recv_ok(ctx, src, tag) {
                return None;
            }
        }
        None
    }

    /// [`Engine::recv_direct`] from a rank on another host.
    ///
    /// # Safety
    /// As for [`Engine::recv_direct`].
    #[inline(never)]
    unsafe fn recv_direct_tcp(
        &mut self,
        reqs: &mut ReqTable,
        src_world: usize,
        env: Wire,
        buf: *mut u8,
        cap: usize,
        polls: u32,
    ) -> Option<(i32, usize)> {
        // A rank on another host: up to `polls` non-blocking reads of
        // its connection (while nothing waits to be sent over TCP).
        let Wire { ctx, src, tag } = env;
        let mut a = self.tcp.as_mut()?.take_arrivals();
        let (mut got, mut give_up) = (None, false);
        for _ in 0..polls {
            let t = self.tcp.as_mut().expect("TCP transport");
            if t.has_pending() || !t.read_from(src_world, &mut a) {
                break;
            }
            for i in 0..a.len() {
                let (from, hdr, payload) = a.get(i);
                let first = got.is_none()
                    && !give_up
                    && (hdr.kind == kind::EAGER || hdr.kind == kind::RTS)
                    && matches(ctx, src, tag, hdr.ctx, hdr.src, hdr.tag);
                if first && hdr.kind == kind::EAGER && hdr.flags & FLAG_SYNC == 0 && payload.len() <= cap {
                    // SAFETY: `buf` holds `cap` bytes (caller's contract).
                    unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), buf, payload.len()) };
                    got = Some((hdr.tag, payload.len()));
                    COUNTERS.received(payload.len());
                } else {
                    // (A matching message that needs more than a copy goes
                    // to the unexpected queue for the general path.)
                    give_up |= first;
                    self.incoming(reqs, from, hdr, payload);
                }
            }
            a.clear();
            if got.is_some() || give_up || !self.direct_recv_ok(ctx, src, tag) {
                break;
            }
        }
        self.tcp.as_mut().expect("TCP transport").recycle(a);
        got
    }

    /// The watch on the ring from world rank `w`, a peer on this host.
    pub fn local_ring_watch(&self, w: usize) -> Option<shm::RingWatch> {
        match self.routes[w] {
            Route::Shm(l) => Some(self.shm.watch(l as usize)),
            _ => None,
        }
    }

    /// Whether [`Engine::recv_direct`] may run: nothing posted, nothing
    /// queued to send, and no unexpected message for this envelope.
    pub fn direct_recv_ok(&self, ctx: u32, src: i32, tag: i32) -> bool {
        self.posted.is_empty()
            && !self.shm.has_pending_out()
            && !self.unexpected.any(ctx, src, tag)
            && !self.ft.revoked(ctx, tag)
    }

    /// Starts receive `ri` (already allocated as a `Kind::Recv`).
    pub fn start_recv(&mut self, reqs: &mut ReqTable, ri: u32) {
        let (ctx, src, tag) = match &reqs.get(ri).kind {
            Kind::Recv(op) => (op.ctx, op.src, op.tag),
            _ => unreachable!("start_recv on a receive"),
        };
        if self.ft.revoked(ctx, tag) {
            reqs.get(ri).err = MPIX_ERR_REVOKED;
            reqs.finish(ri);
            return;
        }
        if let Some(u) = self.unexpected.take(ctx, src, tag) {
            self.recv_unexp(reqs, ri, u);
        } else {
            self.posted.push_back(Posted { ctx, src, tag, req: ri });
        }
    }

    /// Status of the first unexpected message matching, for `Iprobe`.
    pub fn probe(&self, ctx: u32, src: i32, tag: i32) -> Option<MPI_Status> {
        self.unexpected.first(ctx, src, tag).map(|u| {
            let mut s = empty_status();
            s.MPI_SOURCE = u.src;
            s.MPI_TAG = u.tag;
            s.set_byte_count(u.len as u64);
            s
        })
    }

    /// Removes the first matching message for `Improbe`; returns its handle.
    pub fn mprobe(&mut self, ctx: u32, src: i32, tag: i32) -> Option<(MPI_Message, MPI_Status)> {
        let st = self.probe(ctx, src, tag)?;
        let u = self.unexpected.take(ctx, src, tag)?;
        let i = match self.messages.iter().position(Option::is_none) {
            Some(i) => {
                self.messages[i] = Some(u);
                i
            }
            None => {
                self.messages.push(Some(u));
                self.messages.len() - 1
            }
        };
        Some((make_handle(HANDLE_KIND_DIRECT, OBJ_REQUEST, MSG_BIT | i as u32), st))
    }

    /// Receives message `m` (from `Mprobe`) into receive request `ri`.
    pub fn mrecv(&mut self, reqs: &mut ReqTable, ri: u32, m: MPI_Message) -> MpiResult<()> {
        let i = handle_index(m);
        let bad = || MpiError::new(MPI_ERR_REQUEST, format!("invalid message handle 0x{:08x}", m as u32));
        if handle_obj(m) != OBJ_REQUEST || i & MSG_BIT == 0 {
            return Err(bad());
        }
        let u = self.messages.get_mut((i & !MSG_BIT) as usize).and_then(Option::take).ok_or_else(bad)?;
        self.recv_unexp(reqs, ri, u);
        Ok(())
    }

    /// Tries to cancel request `ri`. Receives not yet matched are cancelled at
    /// once; sends not yet matched are cancelled if the receiver agrees.
    pub fn cancel(&mut self, reqs: &mut ReqTable, ri: u32) {
        let id = reqs.proto_id(ri);
        let r = reqs.get(ri);
        if r.done {
            return;
        }
        match &mut r.kind {
            Kind::Recv(_) => {
                if let Some(p) = self.posted.iter().position(|p| p.req == ri) {
                    self.posted.remove(p);
                    r.status.set_cancelled(true);
                    r.status.set_byte_count(0);
                    reqs.finish(ri);
                }
            }
            Kind::Send(s) => {
                if s.cancel_pending {
                    return;
                }
                let dest = s.dest_world;
                // Still queued here: just drop it.
                if let Route::Shm(l) = self.routes[dest] {
                    if self.shm.withdraw(l as usize, id) {
                        r.status.set_cancelled(true);
                        reqs.finish(ri);
                        return;
                    }
                }
                s.cancel_pending = true;
                let h = MsgHdr { kind: kind::CANCEL_REQ, aux: id, ..Default::default() };
                self.post(reqs, dest, h, &[], 0);
            }
            // Null, compound and partitioned requests are not cancellable.
            _ => {}
        }
    }

    pub fn eager_limit(&self) -> usize {
        self.eager_limit
    }

    /// Largest message sent eagerly to world rank `to`: to another host
    /// the TCP transport's limit (see [`Tcp::eager_limit`]).
    pub fn eager_limit_to(&self, to: usize) -> usize {
        match &self.tcp {
            Some(t) if self.routes[to] == Route::Tcp => t.eager_limit,
            _ => self.eager_limit,
        }
    }

    /// Whether rendezvous data of this host is read with
    /// `process_vm_readv`: not when `MPICORE_NO_CMA` is set or the kernel
    /// refused a read (the data then streams through the ring).
    pub fn cma_enabled(&self) -> bool {
        self.cma != Cma::Refused
    }

    /// Bytes of each shared-memory ring of this node.
    pub fn ring_size(&self) -> usize {
        self.shm.ring_size()
    }

    /// Receives posted and not yet matched.
    pub fn posted_len(&self) -> usize {
        self.posted.len()
    }

    /// Wakes world rank `w` (on this node) if it sleeps waiting for
    /// progress: shared-memory collectives publish data without records.
    pub fn wake(&self, w: usize) {
        if let Some(c) = self.ctl_of(w) {
            // SAFETY: a control block of our segment.
            shm::notify(unsafe { &*c });
        }
    }

    /// The control block of world rank `w` for waking it (None for this
    /// rank and ranks on other hosts); valid while the engine lives.
    pub fn ctl_of(&self, w: usize) -> Option<*const Ctl> {
        match self.routes[w] {
            Route::Shm(l) => Some(self.shm.ctl(l as usize) as *const Ctl),
            _ => None,
        }
    }
}

/// Copies `len` bytes at `addr` in process `pid` to `dst`.
/// Bytes packed between two looks at the counter of a pipelined send, and
/// read and unpacked at a time by a receiver (cache-sized).
const PIPE_PIECE: usize = 128 << 10;

/// Reads the `n` bytes of a rendezvous message at `addr` in process `pid`
/// into receive `op`: straight into the buffer for a contiguous type, else
/// in cache-sized pieces unpacked while still in cache (the bounce buffer
/// stays small however large the message). With `progress` (the address of
/// the sender's counter of packed bytes) the sender is still packing: only
/// bytes below the counter are read, and the counter is looked at again when
/// they run out.
fn cma_receive(pid: i32, addr: u64, progress: u64, n: usize, op: &RecvOp) -> std::io::Result<()> {
    let contig = op.dt.contig;
    let mut tmp = if contig { Vec::new() } else { vec![0u8; n.min(PIPE_PIECE)] };
    let mut ready = if progress == 0 { n } else { 0 };
    let mut off = 0;
    while off < n {
        if ready <= off {
            let mut c = 0u64;
            cma_read(pid, progress, &mut c as *mut u64 as *mut u8, 8)?;
            ready = (c as usize).min(n);
            if ready <= off {
                if super::oversubscribed() {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
                continue;
            }
        }
        if contig {
            let len = ready - off;
            // SAFETY: the receive buffer holds `cap >= n` contiguous bytes.
            cma_read(pid, addr + off as u64, unsafe { op.buf.add(off) }, len)?;
            off += len;
        } else {
            let len = (ready - off).min(PIPE_PIECE);
            cma_read(pid, addr + off as u64, tmp.as_mut_ptr(), len)?;
            // SAFETY: the receive buffer holds `cap` bytes of the type.
            unsafe { op.dt.unpack_range(&tmp[..len], off, op.buf) };
            off += len;
        }
    }
    Ok(())
}

fn cma_read(pid: i32, addr: u64, dst: *mut u8, len: usize) -> std::io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let n = (len - done).min(1 << 30);
        // SAFETY: `done < len`, and `dst` has room for `len` bytes (the
        // caller's buffer), so the offset stays inside it.
        let local = libc::iovec { iov_base: unsafe { dst.add(done) } as *mut libc::c_void, iov_len: n };
        let remote = libc::iovec { iov_base: (addr as usize + done) as *mut libc::c_void, iov_len: n };
        // SAFETY: `local` is our receive buffer with room for `len` bytes;
        // the kernel checks the remote range.
        let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if r == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "process_vm_readv read nothing"));
        }
        done += r as usize;
    }
    Ok(())
}
