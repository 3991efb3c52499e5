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
//!
//! Modules: this one holds the window table and types; `create` the
//! collective creation, `ops` the origin side of Put, Get and the
//! accumulates, `sync` fence, PSCW, locks and flushes, `msg` the request
//! messages, `target` the target side, `node` what works on memory of this
//! host (process_vm_readv/writev, lock words, barriers). `capi/win.rs` is
//! the C binding.

pub mod create;
pub mod msg;
mod node;
pub mod ops;
pub mod sync;
mod target;

pub use msg::{encode, post_reply, send_bytes, send_request, Hdr, ReplyBuf, Runs, Target, TAG_REQ};
pub use node::{barrier_arrive, barrier_done, cma, rw_try_lock, rw_unlock, with_part_lock, LOCK_LINE};
pub use target::{apply, progress};

use std::collections::VecDeque;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::datatype::Dtype;
use super::error::{MpiError, MpiResult};
use super::info::Pairs;
use super::p2p::ReqTable;
use super::State;
use crate::bail;
use msg::rd;

/// Largest reply tag; tags wrap around to 1 after it.
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

/// This process's part of a new window.
pub struct Part {
    pub base: usize,
    pub size: usize,
    pub disp_unit: usize,
    pub flavor: c_int,
    /// Memory the library allocated for it (freed with the window).
    pub mem: Mem,
}

impl Win {
    pub fn new(
        ctx: u32,
        group: Arc<Vec<usize>>,
        rank: usize,
        part: Part,
        peers: Vec<Peer>,
        errhandler: MPI_Errhandler,
        bytes: Arc<Dtype>,
    ) -> Win {
        let n = group.len();
        let Part { base, size, disp_unit, flavor, mem } = part;
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

impl Win {
    /// The part of window rank `rank` of a shared window
    /// (`MPI_Win_shared_query`; `MPI_PROC_NULL`: the first non-empty part).
    pub fn shared_part(&self, rank: c_int) -> MpiResult<Peer> {
        if self.flavor != MPI_WIN_FLAVOR_SHARED {
            bail!(MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query needs a window of MPI_Win_allocate_shared");
        }
        if rank == MPI_PROC_NULL {
            return Ok(self.peers.iter().find(|p| p.size > 0).copied().unwrap_or(self.peers[0]));
        }
        self.peers.get(usize::try_from(rank).unwrap_or(usize::MAX)).copied().ok_or_else(|| {
            MpiError::new(MPI_ERR_RANK, format!("rank {rank} is not in the window's group of {}", self.peers.len()))
        })
    }

    /// `MPI_Win_attach` of `size` bytes at address `base` (a dynamic window).
    pub fn attach(&mut self, base: usize, size: MPI_Aint) -> MpiResult<()> {
        if self.flavor != MPI_WIN_FLAVOR_DYNAMIC {
            bail!(MPI_ERR_RMA_FLAVOR, "MPI_Win_attach needs a window of MPI_Win_create_dynamic");
        }
        if size < 0 {
            bail!(MPI_ERR_SIZE, "size {size} is negative");
        }
        let s = size as usize;
        if self.attached.iter().any(|&(ob, os)| base < ob + os && ob < base + s) {
            bail!(MPI_ERR_RMA_ATTACH, "memory at {base:#x} overlaps a region already attached");
        }
        self.attached.push((base, s));
        Ok(())
    }

    /// `MPI_Win_detach` of the region attached at address `base`.
    pub fn detach(&mut self, base: usize) -> MpiResult<()> {
        if self.flavor != MPI_WIN_FLAVOR_DYNAMIC {
            bail!(MPI_ERR_RMA_FLAVOR, "MPI_Win_detach needs a window of MPI_Win_create_dynamic");
        }
        match self.attached.iter().position(|&(b, _)| b == base) {
            Some(i) => {
                self.attached.remove(i);
                Ok(())
            }
            None => bail!(MPI_ERR_RMA_ATTACH, "no region is attached at {base:#x}"),
        }
    }
}

/// The info keys the standard defines for windows (MPI 4.0 section 12.2.1)
/// and their defaults, in the order `MPI_Win_get_info` lists them.
const WIN_KEYS: [(&str, &str); 6] = [
    ("no_locks", "false"),
    ("accumulate_ordering", "rar,raw,war,waw"),
    ("accumulate_ops", "same_op_no_op"),
    ("same_size", "false"),
    ("same_disp_unit", "false"),
    ("alloc_shared_noncontig", "false"),
];

/// `MPI_Win_get_info`: every standard key, with the value the program gave
/// or the default; keys the library does not know are not "used", so they
/// are left out (as MPICH does).
pub fn info_used(hints: &Pairs) -> Pairs {
    WIN_KEYS
        .iter()
        .map(|&(k, default)| (k.to_string(), super::info::get(hints, k).unwrap_or(default).to_string()))
        .collect()
}

/// The value of a predefined window attribute, if `keyval` is one: a
/// pointer the window keeps (or its base address, for `MPI_WIN_BASE`).
pub fn predefined_attr(st: &State, win: MPI_Win, keyval: c_int) -> Option<*mut c_void> {
    let w = st.wins.get(win).ok()?;
    let v = &*w.attr_vals;
    Some(match keyval {
        MPI_WIN_BASE => w.base as *mut c_void,
        MPI_WIN_SIZE => &v.0 as *const MPI_Aint as *mut c_void,
        MPI_WIN_DISP_UNIT => &v.1 as *const c_int as *mut c_void,
        MPI_WIN_CREATE_FLAVOR => &v.2 as *const c_int as *mut c_void,
        MPI_WIN_MODEL => &v.3 as *const c_int as *mut c_void,
        _ => return None,
    })
}
