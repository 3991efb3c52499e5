//! One-sided communication (chapter 11): windows, the messages that carry
//! RMA operations, and the target side that applies them.
//!
//! Every window owns two context ids, agreed like a communicator's: `ctx`
//! carries RMA traffic (requests to a target on tag [`TAG_REQ`], replies on
//! tags of their own), `ctx + 1` the window's internal collectives (creation,
//! fence, free). An operation is one message: a [`Hdr`], the target
//! datatype as (count, extent, runs of one element) and the packed data.
//! The target takes requests from the unexpected queue in [`progress`]
//! (called from `State::progress`, so whenever the target is inside any MPI
//! call), receives them (eager, rendezvous or streamed, as the engine does)
//! and applies them strictly in arrival order, under the state lock: an
//! accumulate is therefore atomic with respect to every other accumulate.
//! Synchronization rests on that order: a FLUSH, UNLOCK or COMPLETE applied
//! at the target comes after every operation the same origin sent before it.
//!
//! Windows of `MPI_Win_allocate_shared` are one shared segment: Put and Get
//! copy directly; accumulates still go to the target (atomicity).
//! See `mpi-core/RMA.md`.

use std::collections::VecDeque;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::datatype::Dtype;
use super::error::{MpiError, MpiResult};
use super::info::Pairs;
use super::p2p::{Engine, Kind, Mode, RecvOp, ReqTable, Request};
use super::State;
use crate::bail;

/// Tag of requests to a target; replies use tags from 1 on.
pub const TAG_REQ: i32 = 0;
const TAG_MAX: i32 = 0x3fff_ffff;

/// Kinds of request messages.
pub mod kind {
    pub const PUT: u32 = 1;
    pub const GET: u32 = 2;
    pub const ACC: u32 = 3;
    pub const GACC: u32 = 4;
    pub const CAS: u32 = 5;
    pub const LOCK: u32 = 6;
    pub const UNLOCK: u32 = 7;
    pub const FLUSH: u32 = 8;
    pub const POST: u32 = 9;
    pub const COMPLETE: u32 = 10;
}

/// What one process knows of another's part of a window.
#[derive(Clone, Copy, Debug, Default)]
pub struct Peer {
    /// Base address in the owner's address space (0 for dynamic windows).
    pub base: usize,
    pub size: usize,
    pub disp_unit: usize,
    /// Address of the same memory in this process (shared windows, and
    /// this process's own part).
    pub local: Option<usize>,
    /// Process id of a peer on this host whose memory this process may
    /// read and write with `process_vm_readv/writev` (0: none).
    pub pid: i32,
}

/// Memory the library allocated for a window, freed with it.
pub enum Mem {
    None,
    Heap(*mut u8, std::alloc::Layout),
    Shared(*mut u8, usize),
}

/// An operation this process started and must see complete: a request
/// (by protocol id, so a reused slot is never mistaken for it) and the
/// buffer it reads from. `owned`: the library releases the request; else
/// it belongs to the program (`MPI_Rget`) or to a compound request.
pub struct Pending {
    pub id: u64,
    pub owned: bool,
    pub keep: Option<Vec<u8>>,
    /// The receive of a target's acknowledgement: `keep` receives the
    /// error code of the operation.
    pub ack: bool,
}

/// A request message being received at the target, applied in order.
struct Incoming {
    req: u32,
    buf: Vec<u8>,
    src: usize,
}

pub struct Win {
    pub ctx: u32,
    /// World rank of every member, by window rank.
    pub group: Arc<Vec<usize>>,
    pub rank: usize,
    pub base: usize,
    pub size: usize,
    pub disp_unit: usize,
    pub flavor: c_int,
    pub peers: Vec<Peer>,
    pub mem: Mem,
    pub errhandler: MPI_Errhandler,
    pub name: String,
    pub hints: Pairs,
    /// Regions attached to a dynamic window.
    pub attached: Vec<(usize, usize)>,
    // Access epochs of this process as origin.
    pub fence_open: bool,
    /// `MPI_Win_start` group (window ranks) and which targets posted.
    pub start: Option<Vec<usize>>,
    pub granted: Vec<bool>,
    /// `MPI_Win_post` group (window ranks).
    pub post: Option<Vec<usize>>,
    /// Lock held at each target (`MPI_LOCK_*`), by `MPI_Win_lock`.
    pub locks: Vec<Option<c_int>>,
    pub lock_all: bool,
    /// `MPI_Win_lock_all` with `MPI_MODE_NOCHECK`: no lock was taken.
    pub lock_all_nocheck: bool,
    /// Operations sent to each target (cumulative) and the count covered by
    /// the last flush or unlock there.
    pub sent: Vec<u64>,
    pub flushed: Vec<u64>,
    pub pending: Vec<Pending>,
    /// An error a target acknowledged, reported by the next flush or unlock.
    pub ack_error: Option<c_int>,
    next_tag: i32,
    // The target side.
    /// Operations applied here (cumulative), and how many the last fence
    /// said were sent here.
    pub applied: u64,
    pub expected: u64,
    /// Fences this process has completed (the current fence epoch).
    pub fences: u64,
    /// Operations sent by anyone to anyone, as of the last fence.
    pub total_seen: u64,
    /// Direct transfers (CMA) still allowed: the kernel has not refused one.
    pub cma_ok: bool,
    /// All parts are in one shared segment whose first bytes hold a lock
    /// word per member (cache-line apart), at this address: every
    /// operation, accumulates included, is done in place by the origin.
    pub shm_locks: Option<usize>,
    /// Lock words (one line per member, as in a shared segment) under which
    /// every accumulate to a member's part is applied, by whichever process
    /// applies it: a shared window's segment, or a small segment of lock
    /// words only for a window of `MPI_Win_create` whose members share a
    /// host (accumulates there go through CMA, without the target).
    pub acc_locks: Option<usize>,
    /// The lock-word-only segment (address, length), unmapped with the window.
    pub locks_map: Option<(usize, usize)>,
    /// Control blocks of the members (to wake them at a barrier).
    pub peer_ctls: Vec<usize>,
    /// Barriers of a shared window this process has arrived at.
    pub barriers: u64,
    barrier_seen: u64,
    pub posts_from: Vec<u32>,
    pub completes_from: Vec<u32>,
    incoming: VecDeque<Incoming>,
    /// Replies being sent, with their data.
    replies: Vec<(u32, Vec<u8>)>,
    /// Error of an operation from each origin, reported with the next
    /// flush/unlock reply (and at this process's next fence).
    pub errors: Vec<c_int>,
    lk_excl: bool,
    lk_shared: u32,
    lk_queue: VecDeque<(usize, bool, i32)>,
    bytes: Arc<Dtype>,
    /// Values the predefined attributes point to: size, displacement
    /// unit, flavor, memory model.
    pub attr_vals: Box<(MPI_Aint, c_int, c_int, c_int)>,
}

// SAFETY: the raw pointers of a window point to memory owned by the window
// (or lent by the program for its lifetime); only the thread holding the
// runtime lock touches them.
unsafe impl Send for Win {}

impl Win {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: u32,
        group: Arc<Vec<usize>>,
        rank: usize,
        base: usize,
        size: usize,
        disp_unit: usize,
        flavor: c_int,
        peers: Vec<Peer>,
        mem: Mem,
        errhandler: MPI_Errhandler,
        bytes: Arc<Dtype>,
    ) -> Win {
        let n = group.len();
        Win {
            ctx,
            group,
            rank,
            base,
            size,
            disp_unit,
            flavor,
            peers,
            mem,
            errhandler,
            name: String::new(),
            hints: Vec::new(),
            attached: Vec::new(),
            fence_open: false,
            start: None,
            granted: vec![false; n],
            post: None,
            locks: vec![None; n],
            lock_all: false,
            lock_all_nocheck: false,
            sent: vec![0; n],
            flushed: vec![0; n],
            pending: Vec::new(),
            ack_error: None,
            next_tag: 1,
            applied: 0,
            expected: 0,
            fences: 0,
            total_seen: 0,
            cma_ok: true,
            shm_locks: None,
            acc_locks: None,
            locks_map: None,
            peer_ctls: Vec::new(),
            barriers: 0,
            barrier_seen: 0,
            posts_from: vec![0; n],
            completes_from: vec![0; n],
            incoming: VecDeque::new(),
            replies: Vec::new(),
            errors: vec![MPI_SUCCESS; n],
            lk_excl: false,
            lk_shared: 0,
            lk_queue: VecDeque::new(),
            bytes,
            attr_vals: Box::new((size as MPI_Aint, disp_unit as c_int, flavor, MPI_WIN_UNIFIED)),
        }
    }

    /// `MPI_BYTE`, the type of the library's own messages.
    pub fn bytes_type(&self) -> Arc<Dtype> {
        self.bytes.clone()
    }

    pub fn size_n(&self) -> usize {
        self.group.len()
    }

    /// A fresh reply tag.
    pub fn tag(&mut self) -> i32 {
        let t = self.next_tag;
        self.next_tag = if t >= TAG_MAX { 1 } else { t + 1 };
        t
    }

    /// Whether this process may access `target` now (an access epoch covers it).
    pub fn may_access(&self, target: usize) -> bool {
        self.fence_open
            || self.lock_all
            || self.locks[target].is_some()
            || self.start.as_ref().is_some_and(|g| g.contains(&target))
    }

    /// Whether a passive-target epoch covers `target`.
    pub fn passive(&self, target: usize) -> bool {
        self.lock_all || self.locks[target].is_some()
    }

    /// Whether this process is in no epoch at all.
    pub fn idle(&self) -> bool {
        !self.lock_all && self.locks.iter().all(Option::is_none) && self.start.is_none() && self.post.is_none()
    }

    /// Nothing this process started is still in flight.
    pub fn local_done(&mut self, reqs: &mut ReqTable) -> bool {
        if let Some(e) = collect(&mut self.pending, reqs) {
            self.ack_error.get_or_insert(e);
        }
        self.pending.is_empty()
    }

    /// Every request message received so far is applied, and every reply sent.
    pub fn target_quiet(&self) -> bool {
        self.incoming.is_empty() && self.replies.is_empty()
    }
}

impl Drop for Win {
    fn drop(&mut self) {
        if let Some((p, len)) = self.locks_map.take() {
            // SAFETY: our own mapping of the lock words, used by nobody now.
            unsafe { libc::munmap(p as *mut libc::c_void, len) };
        }
        match std::mem::replace(&mut self.mem, Mem::None) {
            Mem::None => {}
            // SAFETY: allocated by `alloc_heap` with this layout.
            Mem::Heap(p, l) => unsafe { std::alloc::dealloc(p, l) },
            // SAFETY: our own mapping of the shared segment.
            Mem::Shared(p, len) => unsafe {
                libc::munmap(p as *mut libc::c_void, len);
            },
        }
    }
}

/// Memory for `MPI_Win_allocate` (64-byte aligned, zeroed).
pub fn alloc_heap(size: usize) -> MpiResult<Mem> {
    let layout = std::alloc::Layout::from_size_align(size.max(1), 64)
        .map_err(|_| MpiError::new(MPI_ERR_NO_MEM, format!("cannot allocate {size} bytes")))?;
    // SAFETY: a layout of non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        bail!(MPI_ERR_NO_MEM, "cannot allocate {size} bytes for the window");
    }
    Ok(Mem::Heap(p, layout))
}

/// Forgets the pending operations that completed (releasing the requests
/// the library owns); returns the first error a target acknowledged.
fn collect(pending: &mut Vec<Pending>, reqs: &mut ReqTable) -> Option<c_int> {
    let mut err = None;
    pending.retain(|p| {
        let i = p.id as u32;
        let live = reqs.try_get(i).is_some() && reqs.proto_id(i) == p.id;
        if !live {
            return false;
        }
        if !reqs.get(i).done {
            return true;
        }
        if p.owned {
            reqs.release(i);
        }
        if let (true, Some(b)) = (p.ack, &p.keep) {
            let code = rd::<4>(b, 0).map(c_int::from_ne_bytes).unwrap_or(MPI_ERR_INTERN);
            if code != MPI_SUCCESS {
                err.get_or_insert(code);
            }
        }
        false
    });
    err
}

/// All windows of this process (slots are reused, as handles may be).
#[derive(Default)]
pub struct Wins {
    slots: Vec<Option<Win>>,
}

impl Wins {
    pub fn insert(&mut self, w: Win) -> MPI_Win {
        let i = match self.slots.iter().position(Option::is_none) {
            Some(i) => {
                self.slots[i] = Some(w);
                i
            }
            None => {
                self.slots.push(Some(w));
                self.slots.len() - 1
            }
        };
        make_handle(HANDLE_KIND_DIRECT, OBJ_WIN, i as u32)
    }
    fn index(h: MPI_Win) -> Option<usize> {
        (handle_kind(h) == HANDLE_KIND_DIRECT && handle_obj(h) == OBJ_WIN).then(|| handle_index(h) as usize)
    }
    pub fn get(&self, h: MPI_Win) -> MpiResult<&Win> {
        Self::index(h).and_then(|i| self.slots.get(i)).and_then(Option::as_ref).ok_or_else(|| bad_win(h))
    }
    pub fn get_mut(&mut self, h: MPI_Win) -> MpiResult<&mut Win> {
        Self::index(h).and_then(|i| self.slots.get_mut(i)).and_then(Option::as_mut).ok_or_else(|| bad_win(h))
    }
    pub fn remove(&mut self, h: MPI_Win) -> MpiResult<Win> {
        let w = Self::index(h).and_then(|i| self.slots.get_mut(i)).and_then(Option::take).ok_or_else(|| bad_win(h))?;
        // Free slots at the end go, so a process without windows has
        // nothing for the progress hook to look at.
        while self.slots.last().is_some_and(Option::is_none) {
            self.slots.pop();
        }
        Ok(w)
    }
    pub fn live(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }
}

fn bad_win(h: MPI_Win) -> MpiError {
    if h == MPI_WIN_NULL {
        MpiError::new(MPI_ERR_WIN, "MPI_WIN_NULL is not a window")
    } else {
        MpiError::new(MPI_ERR_WIN, format!("invalid window handle 0x{:08x}", h as u32))
    }
}

// ----- messages --------------------------------------------------------

/// Header of a request message.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hdr {
    pub kind: u32,
    /// Operation (accumulates) or lock type (LOCK, UNLOCK).
    pub op: i32,
    /// Predefined element type (accumulates).
    pub basic: i32,
    /// Tag of the reply, 0 if none.
    pub reply: i32,
    /// Target address in the target's address space.
    pub addr: u64,
    /// Elements of the target type, its extent and its runs.
    pub count: u64,
    pub extent: i64,
    /// Fence epoch of the operation (0: not a fence epoch): the target
    /// applies it only after its own fence that opened that epoch.
    pub epoch: u64,
}

const HDR_LEN: usize = 48;

/// The target side of an operation: where and in which layout.
pub struct Target<'a> {
    pub addr: usize,
    pub count: usize,
    pub extent: isize,
    pub runs: &'a [(isize, usize)],
}

impl Target<'_> {
    /// Bytes from the lowest to past the highest byte touched, relative to
    /// `addr` (`(0, 0)` when nothing is touched).
    pub fn span(&self) -> (isize, isize) {
        if self.count == 0 || self.runs.is_empty() {
            return (0, 0);
        }
        let lo_run = self.runs.iter().map(|&(o, _)| o).min().unwrap_or(0);
        let hi_run = self.runs.iter().map(|&(o, l)| o + l as isize).max().unwrap_or(0);
        let last = (self.count as isize - 1) * self.extent;
        (lo_run + last.min(0), hi_run + last.max(0))
    }
    /// Visits every run in order: (address, length).
    fn each(&self, mut f: impl FnMut(usize, usize)) {
        for i in 0..self.count {
            let b = self.addr as isize + i as isize * self.extent;
            for &(o, l) in self.runs {
                f((b + o) as usize, l);
            }
        }
    }
}

/// Runs `(offset, length)` of one element of a datatype.
pub type Runs = Vec<(isize, usize)>;

/// Encodes a request: header, runs, then `data`.
pub fn encode(h: &Hdr, runs: &[(isize, usize)], data: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR_LEN + 8 + runs.len() * 16 + data.iter().map(|d| d.len()).sum::<usize>());
    v.extend_from_slice(&h.kind.to_ne_bytes());
    v.extend_from_slice(&h.op.to_ne_bytes());
    v.extend_from_slice(&h.basic.to_ne_bytes());
    v.extend_from_slice(&h.reply.to_ne_bytes());
    v.extend_from_slice(&h.addr.to_ne_bytes());
    v.extend_from_slice(&h.count.to_ne_bytes());
    v.extend_from_slice(&h.extent.to_ne_bytes());
    v.extend_from_slice(&h.epoch.to_ne_bytes());
    v.extend_from_slice(&(runs.len() as u64).to_ne_bytes());
    for &(o, l) in runs {
        v.extend_from_slice(&(o as i64).to_ne_bytes());
        v.extend_from_slice(&(l as u64).to_ne_bytes());
    }
    for d in data {
        v.extend_from_slice(d);
    }
    v
}

fn rd<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at + N).and_then(|s| s.try_into().ok())
}

/// Decodes a request: header, runs and the data that follows.
fn decode(b: &[u8]) -> Option<(Hdr, Runs, &[u8])> {
    let u32_at = |at| rd::<4>(b, at).map(u32::from_ne_bytes);
    let i32_at = |at| rd::<4>(b, at).map(i32::from_ne_bytes);
    let u64_at = |at| rd::<8>(b, at).map(u64::from_ne_bytes);
    let h = Hdr {
        kind: u32_at(0)?,
        op: i32_at(4)?,
        basic: i32_at(8)?,
        reply: i32_at(12)?,
        addr: u64_at(16)?,
        count: u64_at(24)?,
        extent: u64_at(32)? as i64,
        epoch: u64_at(40)?,
    };
    let n = u64_at(HDR_LEN)? as usize;
    let mut runs = Vec::with_capacity(n.min(b.len() / 16));
    let mut at = HDR_LEN + 8;
    for _ in 0..n {
        runs.push((u64_at(at)? as i64 as isize, u64_at(at + 8)? as usize));
        at += 16;
    }
    Some((h, runs, b.get(at..)?))
}

/// Sends `data` as bytes to window rank `to` on tag `tag`; returns the
/// request, or `None` when it completed at once (eager: the data was copied).
pub fn send_bytes(engine: &mut Engine, reqs: &mut ReqTable, w: &Win, to: usize, tag: i32, data: &[u8]) -> Option<u32> {
    let i = reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
    engine.start_send(
        reqs,
        i,
        data.as_ptr(),
        data.len(),
        &w.bytes,
        w.group[to],
        w.ctx,
        w.rank as i32,
        tag,
        Mode::Standard,
    );
    if reqs.get(i).done {
        reqs.release(i);
        None
    } else {
        Some(i)
    }
}

/// Posts a receive of the reply on `tag` from window rank `from` into
/// `count` elements of `dt` at `buf`; returns the request.
#[allow(clippy::too_many_arguments)]
pub fn post_reply(
    engine: &mut Engine,
    reqs: &mut ReqTable,
    w: &Win,
    from: usize,
    tag: i32,
    buf: *mut u8,
    count: usize,
    dt: Arc<Dtype>,
) -> u32 {
    let cap = dt.packed_size(count);
    let op = RecvOp { buf, dt, ctx: w.ctx, src: from as i32, tag, cap, stream: None };
    let i = reqs.alloc(Request::new(Kind::Recv(op), MPI_COMM_WORLD));
    engine.start_recv(reqs, i);
    i
}

/// Tag of the fence's count exchange (on `ctx + 1`; the window's other
/// collectives there use tags from `TAG_BASE` of `capi/agree.rs` on).
const TAG_FENCE: i32 = 1;

/// Starts one round of a fence: posts a receive of 16 bytes from every
/// other member into `bufs[r]` and sends each member `r` the operations
/// this process sent it by message and its total. Returns the receives.
pub fn fence_round(engine: &mut Engine, reqs: &mut ReqTable, w: &Win, bufs: &mut [[u8; 16]]) -> Vec<u32> {
    let total: u64 = w.sent.iter().sum();
    let mut ids = Vec::with_capacity(w.group.len());
    for (r, b) in bufs.iter_mut().enumerate().filter(|&(r, _)| r != w.rank) {
        let op = RecvOp {
            buf: b.as_mut_ptr(),
            dt: w.bytes.clone(),
            ctx: w.ctx + 1,
            src: r as i32,
            tag: TAG_FENCE,
            cap: 16,
            stream: None,
        };
        let i = reqs.alloc(Request::new(Kind::Recv(op), MPI_COMM_WORLD));
        engine.start_recv(reqs, i);
        ids.push(i);
    }
    for r in (0..w.group.len()).filter(|&r| r != w.rank) {
        let mut card = [0u8; 16];
        card[..8].copy_from_slice(&w.sent[r].to_ne_bytes());
        card[8..].copy_from_slice(&total.to_ne_bytes());
        // 16 bytes leave eagerly: the request is done at once.
        let i = reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
        engine.start_send(
            reqs,
            i,
            card.as_ptr(),
            16,
            &w.bytes,
            w.group[r],
            w.ctx + 1,
            w.rank as i32,
            TAG_FENCE,
            Mode::Standard,
        );
        ids.push(i);
    }
    ids
}

/// Sends request `msg` to `target` and tracks it until it has left.
pub fn send_request(st: &mut State, win: MPI_Win, target: usize, msg: Vec<u8>) -> MpiResult<()> {
    let State { wins, engine, reqs, .. } = st;
    let w = wins.get_mut(win)?;
    if let Some(i) = send_bytes(engine, reqs, w, target, TAG_REQ, &msg) {
        let id = reqs.proto_id(i);
        w.pending.push(Pending { id, owned: true, keep: Some(msg), ack: false });
    }
    Ok(())
}

// ----- the target side -------------------------------------------------

/// The progress hook: receives request messages of every window and
/// applies those complete, in order. True if anything happened.
pub fn progress(st: &mut State) -> bool {
    if st.wins.slots.is_empty() {
        return false;
    }
    let State { wins, engine, reqs, .. } = st;
    let mut did = false;
    for w in wins.slots.iter_mut().flatten() {
        if w.shm_locks.is_some() {
            // (A barrier that completed counts as progress, so a waiter
            // about to sleep looks again instead.)
            if w.barriers > w.barrier_seen && barrier_done(w, w.barriers) {
                w.barrier_seen = w.barriers;
                did = true;
            }
        }
        while let Some((m, status)) = engine.mprobe(w.ctx, MPI_ANY_SOURCE, TAG_REQ) {
            let n = status.byte_count() as usize;
            let mut buf = vec![0u8; n];
            let op = RecvOp {
                buf: buf.as_mut_ptr(),
                dt: w.bytes.clone(),
                ctx: w.ctx,
                src: MPI_ANY_SOURCE,
                tag: TAG_REQ,
                cap: n,
                stream: None,
            };
            let ri = reqs.alloc(Request::new(Kind::Recv(op), MPI_COMM_WORLD));
            if engine.mrecv(reqs, ri, m).is_err() {
                reqs.release(ri);
                break;
            }
            w.incoming.push_back(Incoming { req: ri, buf, src: status.MPI_SOURCE as usize });
            did = true;
        }
        did |= apply_ready(w, engine, reqs);
        w.replies.retain(|&(i, _)| {
            if reqs.get(i).done {
                reqs.release(i);
                false
            } else {
                true
            }
        });
    }
    did
}

/// Applies the received request messages that may be applied now: in
/// order per origin (an origin's message waits while an earlier one of it
/// still waits for its data or for its fence epoch), in any order between
/// origins. True if any was applied.
fn apply_ready(w: &mut Win, engine: &mut Engine, reqs: &mut ReqTable) -> bool {
    let mut did = false;
    let mut blocked: Vec<usize> = Vec::new();
    let mut k = 0;
    while k < w.incoming.len() {
        let f = &w.incoming[k];
        if blocked.contains(&f.src) {
            k += 1;
            continue;
        }
        let ready = reqs.get(f.req).done && decode_epoch(&f.buf) <= w.fences;
        if !ready {
            blocked.push(f.src);
            k += 1;
            continue;
        }
        let f = w.incoming.remove(k).expect("entry exists");
        reqs.release(f.req);
        handle(w, engine, reqs, f.src, &f.buf);
        did = true;
    }
    did
}

/// The fence epoch of a received request (0 if too short to say).
fn decode_epoch(b: &[u8]) -> u64 {
    rd::<8>(b, 40).map(u64::from_ne_bytes).unwrap_or(0)
}

/// Sends a reply from the target and keeps its data until it has left.
fn reply(w: &mut Win, engine: &mut Engine, reqs: &mut ReqTable, to: usize, tag: i32, data: Vec<u8>) {
    if let Some(i) = send_bytes(engine, reqs, w, to, tag, &data) {
        w.replies.push((i, data));
    }
}

/// Whether `[lo, hi)` lies in this process's memory of the window.
fn in_window(w: &Win, lo: usize, hi: usize) -> bool {
    if w.flavor == MPI_WIN_FLAVOR_DYNAMIC {
        return w.attached.iter().any(|&(b, s)| lo >= b && hi <= b + s);
    }
    lo >= w.base && hi <= w.base + w.size
}

/// Applies one request message from window rank `src`.
fn handle(w: &mut Win, engine: &mut Engine, reqs: &mut ReqTable, src: usize, msg: &[u8]) {
    let Some((h, runs, data)) = decode(msg) else {
        w.errors[src] = MPI_ERR_INTERN;
        return;
    };
    let t = Target { addr: h.addr as usize, count: h.count as usize, extent: h.extent as isize, runs: &runs };
    match h.kind {
        kind::LOCK => {
            let excl = h.op == MPI_LOCK_EXCLUSIVE;
            w.lk_queue.push_back((src, excl, h.reply));
            grant_locks(w, engine, reqs);
        }
        kind::UNLOCK => {
            if h.op == MPI_LOCK_EXCLUSIVE {
                w.lk_excl = false;
            } else {
                w.lk_shared = w.lk_shared.saturating_sub(1);
            }
            let e = std::mem::replace(&mut w.errors[src], MPI_SUCCESS);
            reply(w, engine, reqs, src, h.reply, e.to_ne_bytes().to_vec());
            grant_locks(w, engine, reqs);
        }
        kind::FLUSH => {
            let e = std::mem::replace(&mut w.errors[src], MPI_SUCCESS);
            reply(w, engine, reqs, src, h.reply, e.to_ne_bytes().to_vec());
        }
        kind::POST => w.posts_from[src] += 1,
        kind::COMPLETE => w.completes_from[src] += 1,
        _ => {
            w.applied += 1;
            let (lo, hi) = t.span();
            let bytes: usize = runs.iter().map(|r| r.1).sum::<usize>() * t.count;
            let lo = t.addr as isize + lo;
            let hi = t.addr as isize + hi;
            let ok = bytes == 0 || lo < hi && lo >= 0 && in_window(w, lo as usize, hi as usize);
            let res = match (ok, w.acc_locks) {
                (false, _) => Err(MpiError::new(MPI_ERR_RMA_RANGE, "outside the window")),
                // Other processes may apply accumulates to this part too.
                (true, Some(locks)) if matches!(h.kind, kind::ACC | kind::GACC | kind::CAS) => {
                    with_part_lock(locks, w.rank, || apply(&h, &t, bytes, data))
                }
                (true, _) => apply(&h, &t, bytes, data),
            };
            let acked = h.reply != 0 && matches!(h.kind, kind::PUT | kind::ACC);
            if acked {
                // An acknowledgement: the operation's error code.
                let code = res.as_ref().err().map_or(MPI_SUCCESS, |e| e.class);
                reply(w, engine, reqs, src, h.reply, code.to_ne_bytes().to_vec());
                return;
            }
            let out = match res {
                Ok(out) => out,
                Err(e) => {
                    w.errors[src] = e.class;
                    None
                }
            };
            if h.reply != 0 {
                // A failed operation still answers (with zeros), so the
                // origin never waits forever.
                let n = match h.kind {
                    kind::CAS => data.len() / 2,
                    _ => bytes,
                };
                reply(w, engine, reqs, src, h.reply, out.unwrap_or_else(|| vec![0u8; n]));
            }
        }
    }
}

/// Grants queued locks, in order, while they are compatible.
fn grant_locks(w: &mut Win, engine: &mut Engine, reqs: &mut ReqTable) {
    while let Some(&(src, excl, tag)) = w.lk_queue.front() {
        let free = if excl { !w.lk_excl && w.lk_shared == 0 } else { !w.lk_excl };
        if !free {
            break;
        }
        w.lk_queue.pop_front();
        if excl {
            w.lk_excl = true;
        } else {
            w.lk_shared += 1;
        }
        reply(w, engine, reqs, src, tag, MPI_SUCCESS.to_ne_bytes().to_vec());
    }
}

/// Applies a data operation to memory; returns the old contents when the
/// origin asked for them. The runs of `t` must lie in memory of the window.
pub fn apply(h: &Hdr, t: &Target, bytes: usize, data: &[u8]) -> MpiResult<Option<Vec<u8>>> {
    let need = match h.kind {
        kind::GACC if h.op == MPI_NO_OP => 0,
        kind::PUT | kind::ACC | kind::GACC => bytes,
        kind::CAS => 2 * bytes,
        _ => 0,
    };
    if data.len() < need {
        bail!(MPI_ERR_INTERN, "short RMA message: {} bytes of data for {need}", data.len());
    }
    let old = if matches!(h.kind, kind::GET | kind::GACC | kind::CAS) {
        let mut v = Vec::with_capacity(bytes);
        // SAFETY: the runs lie in the window (checked by the caller).
        t.each(|a, l| v.extend_from_slice(unsafe { std::slice::from_raw_parts(a as *const u8, l) }));
        Some(v)
    } else {
        None
    };
    let mut at = 0;
    let mut res = Ok(());
    match h.kind {
        kind::PUT => t.each(|a, l| {
            // SAFETY: as above; the data holds `bytes` bytes.
            unsafe { std::ptr::copy(data.as_ptr().add(at), a as *mut u8, l) };
            at += l;
        }),
        kind::GACC if h.op == MPI_NO_OP => {}
        kind::ACC | kind::GACC => t.each(|a, l| {
            // SAFETY: as above; the window memory does not alias the message.
            let dst = unsafe { std::slice::from_raw_parts_mut(a as *mut u8, l) };
            if res.is_ok() {
                res = super::op::apply_dir(h.op, h.basic, &data[at..at + l], dst, false);
            }
            at += l;
        }),
        kind::CAS => {
            let (new, cmp) = data.split_at(bytes);
            if old.as_deref() == Some(&cmp[..bytes]) {
                t.each(|a, l| {
                    // SAFETY: as above.
                    unsafe { std::ptr::copy(new.as_ptr().add(at), a as *mut u8, l) };
                    at += l;
                });
            }
        }
        _ => {}
    }
    res?;
    Ok(old)
}

/// Writes `len` bytes at `src` to address `addr` of process `pid`
/// (`process_vm_writev`), or reads them into `dst` (`process_vm_readv`).
///
/// # Safety
/// `buf` must be valid for `len` bytes (readable to write, writable to read).
pub unsafe fn cma(pid: i32, addr: usize, buf: *mut u8, len: usize, write: bool) -> std::io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let n = len - done;
        let local = libc::iovec { iov_base: buf.wrapping_add(done) as *mut libc::c_void, iov_len: n };
        let remote = libc::iovec { iov_base: (addr + done) as *mut libc::c_void, iov_len: n };
        // SAFETY: `local` is our own buffer of `n` bytes; the kernel checks
        // the remote range against the other process's mappings.
        let r = unsafe {
            if write {
                libc::process_vm_writev(pid, &local, 1, &remote, 1, 0)
            } else {
                libc::process_vm_readv(pid, &local, 1, &remote, 1, 0)
            }
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if r == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "process_vm_readv/writev moved nothing",
            ));
        }
        done += r as usize;
    }
    Ok(())
}

/// Bytes of the lock words at the start of a shared window segment (one
/// cache line per member).
pub const LOCK_LINE: usize = 64;

/// Runs `f` holding the lock word of member `t` of a shared window whose
/// lock words start at `locks`: accumulates done in place by any process
/// of the node exclude each other through it. A waiter spins briefly, then
/// yields (the holder may be a descheduled process on a busy core).
pub fn with_part_lock<R>(locks: usize, t: usize, f: impl FnOnce() -> R) -> R {
    use std::sync::atomic::{AtomicU32, Ordering};
    // SAFETY: `locks` is the start of the window's mapped segment, which
    // holds one lock line per member and outlives the window.
    let word = unsafe { &*((locks + t * LOCK_LINE) as *const AtomicU32) };
    let mut spins = 0u32;
    while word.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    let r = f();
    word.store(0, Ordering::Release);
    r
}

/// The barrier counter of member `t` (next to its lock word).
fn barrier_word(locks: usize, t: usize) -> &'static std::sync::atomic::AtomicU64 {
    // SAFETY: as in `with_part_lock`: the lock line of member t, 8 bytes in.
    unsafe { &*((locks + t * LOCK_LINE + 8) as *const std::sync::atomic::AtomicU64) }
}

/// Arrives at the next barrier of a shared window (publishes the count and
/// wakes the members that sleep); returns its number.
pub fn barrier_arrive(w: &mut Win) -> u64 {
    let locks = w.shm_locks.expect("a window in one shared segment");
    w.barriers += 1;
    barrier_word(locks, w.rank).store(w.barriers, std::sync::atomic::Ordering::Release);
    for &c in &w.peer_ctls {
        // SAFETY: control blocks of the node segment, mapped until finalize.
        super::shm::notify(unsafe { &*(c as *const super::shm::Ctl) });
    }
    w.barriers
}

/// Whether every member has arrived at barrier `k`.
pub fn barrier_done(w: &Win, k: u64) -> bool {
    let Some(locks) = w.shm_locks else { return true };
    (0..w.group.len()).all(|t| barrier_word(locks, t).load(std::sync::atomic::Ordering::Acquire) >= k)
}

/// Bit of a part's lock word (offset 16 of its lock line) held by an
/// exclusive `MPI_Win_lock`; the bits below count shared holders.
const RW_EXCL: u32 = 1 << 31;

fn rw_word(locks: usize, t: usize) -> &'static std::sync::atomic::AtomicU32 {
    // SAFETY: as in `with_part_lock`: the lock line of member t, 16 bytes in.
    unsafe { &*((locks + t * LOCK_LINE + 16) as *const std::sync::atomic::AtomicU32) }
}

/// Tries to take `MPI_Win_lock` of member `t` in the lock words at `locks`
/// (windows whose members all share a host: no message to the target).
pub fn rw_try_lock(locks: usize, t: usize, exclusive: bool) -> bool {
    use std::sync::atomic::Ordering::{Acquire, Relaxed};
    let w = rw_word(locks, t);
    if exclusive {
        return w.compare_exchange(0, RW_EXCL, Acquire, Relaxed).is_ok();
    }
    let mut v = w.load(Relaxed);
    while v & RW_EXCL == 0 {
        match w.compare_exchange_weak(v, v + 1, Acquire, Relaxed) {
            Ok(_) => return true,
            Err(now) => v = now,
        }
    }
    false
}

/// Releases a lock taken with [`rw_try_lock`] and wakes the members that
/// may sleep waiting for it.
pub fn rw_unlock(w: &Win, locks: usize, t: usize, exclusive: bool) {
    use std::sync::atomic::Ordering::Release;
    if exclusive {
        rw_word(locks, t).store(0, Release);
    } else {
        rw_word(locks, t).fetch_sub(1, Release);
    }
    for &c in &w.peer_ctls {
        // SAFETY: control blocks of the node segment, mapped until finalize.
        super::shm::notify(unsafe { &*(c as *const super::shm::Ctl) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip() {
        let h = Hdr {
            kind: kind::ACC,
            op: MPI_SUM,
            basic: MPI_INT,
            reply: 7,
            addr: 0x1000,
            count: 3,
            extent: -16,
            epoch: 9,
        };
        let runs = vec![(0isize, 4usize), (8, 4)];
        let msg = encode(&h, &runs, &[&[1, 2, 3], &[4]]);
        let (g, r, data) = decode(&msg).expect("decodes");
        assert_eq!(
            (g.kind, g.op, g.basic, g.reply, g.addr, g.count, g.extent, g.epoch),
            (kind::ACC, MPI_SUM, MPI_INT, 7, 0x1000, 3, -16, 9)
        );
        assert_eq!(r, runs);
        assert_eq!(data, &[1, 2, 3, 4]);
        assert_eq!(decode_epoch(&msg), 9);
        assert!(decode(&msg[..HDR_LEN + 4]).is_none(), "a truncated message must not decode");
    }

    #[test]
    fn span_of_strided_and_negative_extents() {
        let runs = [(4isize, 4usize), (12, 4)];
        let t = Target { addr: 0, count: 3, extent: 32, runs: &runs };
        assert_eq!(t.span(), (4, 64 + 16));
        let t = Target { addr: 0, count: 3, extent: -32, runs: &runs };
        assert_eq!(t.span(), (4 - 64, 16));
        let t = Target { addr: 0, count: 0, extent: 32, runs: &runs };
        assert_eq!(t.span(), (0, 0));
    }

    #[test]
    fn apply_accumulate_and_compare_and_swap() {
        let mut mem = [1i32, 2, 3, 4];
        let runs = [(0isize, 4usize), (8, 4)];
        let t = Target { addr: mem.as_mut_ptr() as usize, count: 1, extent: 12, runs: &runs };
        let data: Vec<u8> = [10i32, 30].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let h = Hdr { kind: kind::GACC, op: MPI_SUM, basic: MPI_INT, ..Default::default() };
        let old = apply(&h, &t, 8, &data).unwrap().unwrap();
        assert_eq!(old, [1i32, 3].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
        assert_eq!(mem, [11, 2, 33, 4]);
        // Compare-and-swap of one int: swaps only when the compare value matches.
        let one = [(0isize, 4usize)];
        let t = Target { addr: mem.as_mut_ptr() as usize + 4, count: 1, extent: 4, runs: &one };
        let h = Hdr { kind: kind::CAS, op: MPI_REPLACE, basic: MPI_INT, ..Default::default() };
        let mut cas: Vec<u8> = 99i32.to_ne_bytes().to_vec();
        cas.extend_from_slice(&5i32.to_ne_bytes());
        assert_eq!(apply(&h, &t, 4, &cas).unwrap().unwrap(), 2i32.to_ne_bytes());
        assert_eq!(mem[1], 2, "compare value 5 differs from 2: no swap");
        cas[4..].copy_from_slice(&2i32.to_ne_bytes());
        apply(&h, &t, 4, &cas).unwrap();
        assert_eq!(mem[1], 99);
        // An operation the type does not support is refused.
        let h = Hdr { kind: kind::ACC, op: MPI_MAXLOC, basic: MPI_INT, ..Default::default() };
        assert_eq!(apply(&h, &t, 4, &cas[..4]).unwrap_err().class, MPI_ERR_OP);
    }
}
