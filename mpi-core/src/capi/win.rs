//! Chapter 11: one-sided communication — windows (create, allocate,
//! shared, dynamic, free), their names, info, groups, error handlers and
//! predefined attributes, the RMA operations and the synchronization calls.
//! The runtime side (messages, the target's progress hook) is `rt/win.rs`;
//! the design is in `mpi-core/RMA.md`.

use std::ffi::c_void;
use std::os::raw::{c_char, c_int};
use std::sync::Arc;

use mpi_api::abi::*;

use super::agree::View;
use super::comm::{comm_of, new_context_or_fail};
use super::errh::check_errhandler;
use super::p2p::twins;
use super::{put, put_str, raise};
use crate::bail;
use crate::rt::comm::CTX_SPAN_INTRA;
use crate::rt::datatype::Dtype;
use crate::rt::errh::HandlerKind;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::p2p::{Kind, ReqTable, Request};
use crate::rt::win::{self, kind, Hdr, Mem, Peer, Pending, Target, Win, LOCK_LINE};
use crate::rt::{self, State};

/// C type of a window error handler (`MPI_Win_errhandler_function`).
type WinErrFn = unsafe extern "C" fn(*mut MPI_Win, *mut c_int, ...);

/// Ends a call on window `win`: `MPI_SUCCESS`, or the error through the
/// window's error handler (that of `MPI_COMM_WORLD` if `win` is not valid).
pub(crate) fn ret_win(win: MPI_Win, name: &str, r: MpiResult<()>) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_win(win, name, e),
    }
}

fn raise_win(win: MPI_Win, name: &str, e: MpiError) -> c_int {
    let h = rt::try_with(|st| {
        st.wins.get(win).ok().map(|w| {
            let h = w.errhandler;
            let user = if handle_kind(h) == HANDLE_KIND_DIRECT {
                st.errhandlers.get(handle_index(h) as usize).copied().flatten()
            } else {
                None
            };
            (h, user, st.world_rank)
        })
    })
    .flatten();
    let Some((h, user, rank)) = h else {
        return raise(MPI_COMM_WORLD, name, e);
    };
    super::dispatch(h, user, rank, name, e, |f, code| {
        // SAFETY: `f` was registered by MPI_Win_create_errhandler as an
        // `MPI_Win_errhandler_function`; the lock is not held, so the
        // handler may call MPI.
        let f: WinErrFn = unsafe { std::mem::transmute::<usize, WinErrFn>(f) };
        let mut w = win;
        let mut code = code;
        // SAFETY: calling the user's handler with the standard's arguments.
        unsafe { f(&mut w, &mut code) };
    })
}

// ----- creation and destruction ----------------------------------------

/// What kind of memory a new window gets.
enum Memory {
    User(usize),
    Allocate,
    Shared,
    Dynamic,
}

/// Checks the arguments every flavor shares.
fn check_args(size: MPI_Aint, disp_unit: MPI_Aint) -> MpiResult<()> {
    if size < 0 {
        bail!(MPI_ERR_SIZE, "window size {size} is negative");
    }
    if disp_unit <= 0 || disp_unit > c_int::MAX as MPI_Aint {
        bail!(MPI_ERR_DISP, "displacement unit {disp_unit} must be positive");
    }
    Ok(())
}

/// Maps one shared segment for all members of `view` (every one on this
/// host): a lock word per member, then the members' parts, `sizes` bytes
/// each, in rank order, each starting at a multiple of `align` (1:
/// contiguous, as `MPI_Win_allocate_shared` promises). Returns the mapping
/// and the offset of every member's part; `None` (at every member) if any
/// could not map it.
fn map_shared(view: &View, ctx: u32, sizes: &[usize], align: usize) -> MpiResult<Option<(Mapping, Vec<usize>)>> {
    let mut offs = Vec::with_capacity(sizes.len());
    let mut total = sizes.len() * LOCK_LINE;
    for &s in sizes {
        offs.push(total);
        total += s.div_ceil(align) * align;
    }
    let len = total.max(64);
    let creator = view.group[0] as u32;
    let name = rt::with(|st| Ok(crate::coll::flat::name(st, ctx, creator)))?;
    let mine = if view.rank == 0 { crate::coll::flat::create(&name, len) } else { None };
    let made = view.bcast_u32((view.rank != 0 || mine.is_some()) as u32, 0)?;
    let map = if made == 0 {
        None
    } else if view.rank == 0 {
        mine
    } else {
        crate::coll::flat::open(&name, len)
    };
    let all = view.allreduce_u32(map.is_some() as u32, |a, b| a.min(b))?;
    if view.rank == 0 && made != 0 {
        crate::coll::flat::unlink(&name);
    }
    match (all, map) {
        (1, Some(m)) => Ok(Some((m, offs))),
        (_, m) => {
            if let Some((p, l)) = m {
                // SAFETY: our own mapping, not used by anyone.
                unsafe { libc::munmap(p as *mut libc::c_void, l) };
            }
            Ok(None)
        }
    }
}

/// A mapping: its address and length.
type Mapping = (*mut u8, usize);

/// Memory of a window in one shared segment: the mapping, this process's
/// base and every member's part in this process.
type SharedParts = (Mem, usize, Vec<Option<usize>>, usize);

/// [`map_shared`] for a window whose members each give `size` bytes.
fn shared_parts(view: &View, ctx: u32, size: usize, align: usize) -> MpiResult<Option<SharedParts>> {
    let sizes: Vec<usize> =
        view.allgather_vec(&(size as u64).to_ne_bytes())?.iter().map(|b| u64_of(b) as usize).collect();
    Ok(map_shared(view, ctx, &sizes, align)?.map(|((p, len), offs)| {
        let locals = offs.iter().map(|&o| Some(p as usize + o)).collect();
        (Mem::Shared(p, len), p as usize + offs[view.rank], locals, p as usize)
    }))
}

/// Collective creation of a window of any flavor over `comm`.
///
/// # Safety
/// `baseptr` is NULL or points to a `void *`; `newwin` to an `MPI_Win`.
unsafe fn create_common(
    comm: MPI_Comm,
    info: MPI_Info,
    memory: Memory,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    baseptr: *mut c_void,
    newwin: *mut MPI_Win,
) -> MpiResult<()> {
    if newwin.is_null() {
        bail!(MPI_ERR_ARG, "win is a NULL pointer");
    }
    let c = comm_of(comm)?;
    if c.is_inter() {
        bail!(MPI_ERR_COMM, "windows need an intracommunicator, and this is an intercommunicator");
    }
    let hints = rt::with(|st| st.comms.infos.get_or_null(info))?;
    let flavor = match memory {
        Memory::User(_) => MPI_WIN_FLAVOR_CREATE,
        Memory::Allocate => MPI_WIN_FLAVOR_ALLOCATE,
        Memory::Shared => MPI_WIN_FLAVOR_SHARED,
        Memory::Dynamic => MPI_WIN_FLAVOR_DYNAMIC,
    };
    let mut mine = check_args(size, disp_unit);
    if mine.is_ok() && matches!(memory, Memory::Allocate | Memory::Shared) && baseptr.is_null() {
        mine = Err(MpiError::new(MPI_ERR_ARG, "baseptr is a NULL pointer"));
    }
    if mine.is_ok() && matches!(memory, Memory::Shared) {
        // Every member sees the same answer: if any two are on different
        // hosts, every member has some member on another host.
        let remote = rt::with(|st| Ok(c.group.iter().any(|&w| st.engine.is_remote(w))))?;
        if remote {
            mine = Err(MpiError::new(
                MPI_ERR_RMA_SHARED,
                "MPI_Win_allocate_shared needs all processes of the communicator on one host",
            ));
        }
    }
    let ctx = new_context_or_fail(comm, CTX_SPAN_INTRA, false, mine)?;
    let size = size as usize;
    let (view, bytes) =
        rt::with(|st| Ok((View::new(st, ctx + 1, c.rank as usize, c.group.clone())?, st.types.get(MPI_BYTE)?)))?;
    let n = c.group.len();
    // Windows of MPI_Win_allocate whose members share a host live in one
    // shared segment too: Put, Get and accumulates are then done in place.
    let same_host = rt::with(|st| Ok(!c.group.iter().any(|&w| st.engine.is_remote(w))))?;
    let shm_alloc = matches!(memory, Memory::Allocate) && same_host && std::env::var_os("MPICORE_RMA_NO_SHM").is_none();
    let mut locks = 0;
    let (mem, base, locals) = match memory {
        Memory::User(b) => (Mem::None, b, vec![None; n]),
        Memory::Dynamic => (Mem::None, 0, vec![None; n]),
        Memory::Shared | Memory::Allocate if matches!(memory, Memory::Shared) || shm_alloc => {
            match shared_parts(&view, ctx, size, if matches!(memory, Memory::Shared) { 1 } else { 64 })? {
                Some((m, b, l, lk)) => {
                    locks = lk;
                    (m, b, l)
                }
                None if matches!(memory, Memory::Shared) => {
                    bail!(MPI_ERR_NO_MEM, "cannot map a shared segment for the window")
                }
                None => heap_part(&view, size, n)?,
            }
        }
        Memory::Allocate | Memory::Shared => heap_part(&view, size, n)?,
    };
    let mut card = Vec::with_capacity(24);
    for v in [base as u64, size as u64, disp_unit as u64] {
        card.extend_from_slice(&v.to_ne_bytes());
    }
    let peers: Vec<Peer> = view
        .allgather_vec(&card)?
        .iter()
        .zip(locals)
        .map(|(b, local)| Peer {
            base: u64_of(&b[0..]) as usize,
            size: u64_of(&b[8..]) as usize,
            disp_unit: u64_of(&b[16..]) as usize,
            local,
            pid: 0,
        })
        .collect();
    let mut peers = peers;
    if flavor != MPI_WIN_FLAVOR_DYNAMIC {
        // This process's own part is always reached directly; so are the
        // parts of other processes on this host, through CMA.
        let me = c.rank as usize;
        peers[me].local = Some(base);
        if matches!(flavor, MPI_WIN_FLAVOR_CREATE | MPI_WIN_FLAVOR_ALLOCATE)
            && std::env::var_os("MPICORE_RMA_NO_CMA").is_none()
        {
            rt::with(|st| {
                for (t, p) in peers.iter_mut().enumerate().filter(|&(t, _)| t != me) {
                    if let Some(ctl) = st.engine.ctl_of(c.group[t]) {
                        // SAFETY: control blocks live in the node segment,
                        // mapped until finalize.
                        p.pid = unsafe { &*ctl }.pid.load(std::sync::atomic::Ordering::Acquire);
                    }
                }
                Ok(())
            })?;
        }
    }
    let size = if flavor == MPI_WIN_FLAVOR_DYNAMIC { 0 } else { size };
    let mut w = Win::new(
        ctx,
        c.group.clone(),
        c.rank as usize,
        base,
        size,
        disp_unit as usize,
        flavor,
        peers,
        mem,
        MPI_ERRORS_ARE_FATAL,
        bytes,
    );
    w.hints = hints;
    w.shm_locks = (locks != 0).then_some(locks);
    w.acc_locks = w.shm_locks;
    // A window of MPI_Win_create on one host: a segment of lock words only,
    // so origins apply accumulates themselves (CMA) under the target part's
    // word, as the target does with those that reach it as messages.
    if flavor == MPI_WIN_FLAVOR_CREATE && same_host && n > 1 && w.peers.iter().any(|p| p.pid != 0) {
        if let Some(((p, len), _)) = map_shared(&view, ctx, &vec![0; n], 1)? {
            w.acc_locks = Some(p as usize);
            w.locks_map = Some((p as usize, len));
            rt::with(|st| {
                w.peer_ctls = c.group.iter().filter_map(|&g| st.engine.ctl_of(g)).map(|p| p as usize).collect();
                Ok(())
            })?;
        }
    }
    if locks != 0 {
        rt::with(|st| {
            w.peer_ctls = c.group.iter().filter_map(|&g| st.engine.ctl_of(g)).map(|p| p as usize).collect();
            Ok(())
        })?;
    }
    let h = rt::with(|st| Ok(st.wins.insert(w)))?;
    if matches!(memory, Memory::Allocate | Memory::Shared) {
        *(baseptr as *mut *mut c_void) = base as *mut c_void;
    }
    *newwin = h;
    Ok(())
}

/// Heap memory for this process's part (every member agrees it got one).
fn heap_part(view: &View, size: usize, n: usize) -> MpiResult<(Mem, usize, Vec<Option<usize>>)> {
    let m = win::alloc_heap(size);
    let ok = view.allreduce_u32(m.is_ok() as u32, |a, b| a.min(b))?;
    let m = m?;
    if ok == 0 {
        bail!(MPI_ERR_NO_MEM, "another process could not allocate its part of the window");
    }
    let p = match &m {
        Mem::Heap(p, _) => *p as usize,
        _ => 0,
    };
    Ok((m, p, vec![None; n]))
}

fn u64_of(b: &[u8]) -> u64 {
    b.get(..8).and_then(|s| s.try_into().ok()).map(u64::from_ne_bytes).unwrap_or(0)
}

twins! {
    pub unsafe fn MPI_Win_create | MPI_Win_create_c(base: *mut c_void, size: MPI_Aint, disp_unit: Disp, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
        crate::capi::ret(comm, NAME, create_common(comm, info, Memory::User(base as usize), size, disp_unit as MPI_Aint, std::ptr::null_mut(), win))
    }
}

twins! {
    pub unsafe fn MPI_Win_allocate | MPI_Win_allocate_c(size: MPI_Aint, disp_unit: Disp, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
        crate::capi::ret(comm, NAME, create_common(comm, info, Memory::Allocate, size, disp_unit as MPI_Aint, baseptr, win))
    }
}

twins! {
    pub unsafe fn MPI_Win_allocate_shared | MPI_Win_allocate_shared_c(size: MPI_Aint, disp_unit: Disp, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
        crate::capi::ret(comm, NAME, create_common(comm, info, Memory::Shared, size, disp_unit as MPI_Aint, baseptr, win))
    }
}

pub unsafe fn MPI_Win_create_dynamic(info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    super::ret(
        comm,
        "MPI_Win_create_dynamic",
        create_common(comm, info, Memory::Dynamic, 0, 1, std::ptr::null_mut(), win),
    )
}

/// `MPI_Win_shared_query(_c)`: the part of `rank` (`MPI_PROC_NULL`: the
/// first non-empty one); `put_du` writes the displacement unit.
///
/// # Safety
/// `size` and `baseptr` are NULL or point to an `MPI_Aint` and a `void *`.
unsafe fn shared_query(
    win: MPI_Win,
    rank: c_int,
    size: *mut MPI_Aint,
    baseptr: *mut c_void,
    put_du: impl FnOnce(usize) -> MpiResult<()>,
) -> MpiResult<()> {
    let p = rt::with(|st| {
        let w = st.wins.get(win)?;
        if w.flavor != MPI_WIN_FLAVOR_SHARED {
            bail!(MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query needs a window of MPI_Win_allocate_shared");
        }
        if rank == MPI_PROC_NULL {
            return Ok(w.peers.iter().find(|p| p.size > 0).copied().unwrap_or(w.peers[0]));
        }
        w.peers.get(usize::try_from(rank).unwrap_or(usize::MAX)).copied().ok_or_else(|| {
            MpiError::new(MPI_ERR_RANK, format!("rank {rank} is not in the window's group of {}", w.peers.len()))
        })
    })?;
    if baseptr.is_null() {
        bail!(MPI_ERR_ARG, "baseptr is a NULL pointer");
    }
    put(size, p.size as MPI_Aint, "size")?;
    put_du(p.disp_unit)?;
    *(baseptr as *mut *mut c_void) = p.local.unwrap_or(0) as *mut c_void;
    Ok(())
}

twins! {
    pub unsafe fn MPI_Win_shared_query | MPI_Win_shared_query_c(win: MPI_Win, rank: c_int, size: *mut MPI_Aint, disp_unit: *mut Disp, baseptr: *mut c_void) -> c_int {
        ret_win(win, NAME, shared_query(win, rank, size, baseptr, |d| put(disp_unit, d as Disp, "disp_unit")))
    }
}

pub unsafe fn MPI_Win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) -> c_int {
    let r = rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        if w.flavor != MPI_WIN_FLAVOR_DYNAMIC {
            bail!(MPI_ERR_RMA_FLAVOR, "MPI_Win_attach needs a window of MPI_Win_create_dynamic");
        }
        if size < 0 {
            bail!(MPI_ERR_SIZE, "size {size} is negative");
        }
        let (b, s) = (base as usize, size as usize);
        if w.attached.iter().any(|&(ob, os)| b < ob + os && ob < b + s) {
            bail!(MPI_ERR_RMA_ATTACH, "memory at {base:p} overlaps a region already attached");
        }
        w.attached.push((b, s));
        Ok(())
    });
    ret_win(win, "MPI_Win_attach", r)
}

pub unsafe fn MPI_Win_detach(win: MPI_Win, base: *const c_void) -> c_int {
    let r = rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        if w.flavor != MPI_WIN_FLAVOR_DYNAMIC {
            bail!(MPI_ERR_RMA_FLAVOR, "MPI_Win_detach needs a window of MPI_Win_create_dynamic");
        }
        match w.attached.iter().position(|&(b, _)| b == base as usize) {
            Some(i) => {
                w.attached.remove(i);
                Ok(())
            }
            None => bail!(MPI_ERR_RMA_ATTACH, "no region is attached at {base:p}"),
        }
    });
    ret_win(win, "MPI_Win_detach", r)
}

/// After [`wait_local`]: the first error a target acknowledged since the
/// last look.
fn acked_error(win: MPI_Win) -> MpiResult<()> {
    match rt::with(|st| Ok(st.wins.get_mut(win)?.ack_error.take()))? {
        Some(e) => Err(MpiError::new(e, "an operation failed at its target (outside the target's window memory?)")),
        None => Ok(()),
    }
}

/// Waits until every operation this process started on `win` is complete here.
fn wait_local(win: MPI_Win) -> MpiResult<()> {
    rt::block_on(|st| {
        let State { wins, reqs, .. } = st;
        match wins.get_mut(win) {
            Ok(w) => w.local_done(reqs).then_some(Ok(())),
            Err(e) => Some(Err(e)),
        }
    })?
}

/// The collective end of a fence epoch (and of the window): every process
/// learns how many operations were sent to it and waits until it has
/// applied them all.
fn settle(win: MPI_Win) -> MpiResult<()> {
    wait_local(win)?;
    // A window in one shared segment moves every operation in place (no
    // message to count or wait for): its fence is a barrier on the
    // counters next to its lock words.
    if rt::with(|st| Ok(st.wins.get(win)?.shm_locks.is_some()))? {
        let k = rt::with(|st| Ok(win::barrier_arrive(st.wins.get_mut(win)?)))?;
        return rt::block_on(|st| match st.wins.get(win) {
            Ok(w) => win::barrier_done(w, k).then_some(Ok(())),
            Err(e) => Some(Err(e)),
        })?;
    }
    let (expected, total) = fence_counts(win)?;
    let messages = rt::block_on(|st| match st.wins.get_mut(win) {
        Ok(w) => {
            w.expected = expected;
            (w.applied >= expected).then(|| Ok(std::mem::replace(&mut w.total_seen, total) != total))
        }
        Err(e) => Some(Err(e)),
    })??;
    // Operations that travelled as messages are applied by each target
    // when it gets to them; direct transfers of the next epoch (shared
    // memory, CMA) must not overtake them: all wait until all are applied.
    if messages {
        fence_counts(win)?;
    }
    Ok(())
}

/// One round of messages between all members of `win`: returns how many
/// operations were sent to this process by message, and how many by all
/// processes to all, since the window was made.
fn fence_counts(win: MPI_Win) -> MpiResult<(u64, u64)> {
    let n = rt::with(|st| Ok(st.wins.get(win)?.size_n()))?;
    let mut bufs = vec![[0u8; 16]; n];
    let (ids, me, own, total) = rt::with(|st| {
        let State { wins, engine, reqs, .. } = st;
        let w = wins.get(win)?;
        let ids = win::fence_round(engine, reqs, w, &mut bufs);
        Ok((ids, w.rank, w.sent[w.rank], w.sent.iter().sum::<u64>()))
    })?;
    rt::block_on(|st| {
        ids.iter().all(|&i| st.reqs.get(i).done).then(|| {
            for &i in &ids {
                st.reqs.release(i);
            }
        })
    })?;
    let others = bufs.iter().enumerate().filter(|&(r, _)| r != me);
    let expected = own + others.clone().map(|(_, b)| u64_of(&b[..8])).sum::<u64>();
    Ok((expected, total + others.map(|(_, b)| u64_of(&b[8..])).sum::<u64>()))
}

pub unsafe fn MPI_Win_free(win: *mut MPI_Win) -> c_int {
    let h = if win.is_null() { MPI_WIN_NULL } else { *win };
    let r = (|| {
        if win.is_null() {
            bail!(MPI_ERR_ARG, "win is a NULL pointer");
        }
        let idle = rt::with(|st| Ok(st.wins.get(h)?.idle()))?;
        if !idle {
            bail!(MPI_ERR_RMA_SYNC, "MPI_Win_free inside an access or exposure epoch (unlock, complete or wait first)");
        }
        settle(h)?;
        // Replies still leaving keep their own copies of the data, but
        // the window's requests must be gone before it is.
        rt::wait_until(|st| st.wins.get(h).map(|w| w.target_quiet()).unwrap_or(true))?;
        super::attr::win_attrs_free(h)?;
        rt::with(|st| st.wins.remove(h).map(drop))?;
        *win = MPI_WIN_NULL;
        Ok(())
    })();
    ret_win(h, "MPI_Win_free", r)
}

// ----- names, info, groups, error handlers, attributes -----------------

pub unsafe fn MPI_Win_get_group(win: MPI_Win, group: *mut MPI_Group) -> c_int {
    let r = rt::with(|st| {
        let g = st.wins.get(win)?.group.clone();
        if group.is_null() {
            bail!(MPI_ERR_ARG, "group is a NULL pointer");
        }
        let h = st.comms.groups.insert(g);
        put(group, h, "group")
    });
    ret_win(win, "MPI_Win_get_group", r)
}

pub unsafe fn MPI_Win_set_info(win: MPI_Win, info: MPI_Info) -> c_int {
    let r = rt::with(|st| {
        let pairs = st.comms.infos.get_or_null(info)?;
        let w = st.wins.get_mut(win)?;
        for (k, v) in pairs {
            crate::rt::info::set(&mut w.hints, &k, &v);
        }
        Ok(())
    });
    ret_win(win, "MPI_Win_set_info", r)
}

pub unsafe fn MPI_Win_get_info(win: MPI_Win, info_used: *mut MPI_Info) -> c_int {
    let r = rt::with(|st| {
        let hints = st.wins.get(win)?.hints.clone();
        if info_used.is_null() {
            bail!(MPI_ERR_ARG, "info_used is a NULL pointer");
        }
        let h = st.comms.infos.insert(hints);
        put(info_used, h, "info_used")
    });
    ret_win(win, "MPI_Win_get_info", r)
}

pub unsafe fn MPI_Win_set_name(win: MPI_Win, win_name: *const c_char) -> c_int {
    let r = rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        if win_name.is_null() {
            bail!(MPI_ERR_ARG, "win_name is a NULL pointer");
        }
        let name = std::ffi::CStr::from_ptr(win_name).to_string_lossy();
        w.name = name.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
        Ok(())
    });
    ret_win(win, "MPI_Win_set_name", r)
}

pub unsafe fn MPI_Win_get_name(win: MPI_Win, win_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let w = st.wins.get(win)?;
        if win_name.is_null() {
            bail!(MPI_ERR_ARG, "win_name is a NULL pointer");
        }
        let n = put_str(win_name, MPI_MAX_OBJECT_NAME as usize, &w.name);
        put(resultlen, n, "resultlen")
    });
    ret_win(win, "MPI_Win_get_name", r)
}

pub unsafe fn MPI_Win_set_errhandler(win: MPI_Win, errhandler: MPI_Errhandler) -> c_int {
    let r = rt::with(|st| {
        st.wins.get(win)?;
        check_errhandler(st, errhandler, HandlerKind::Win)?;
        st.wins.get_mut(win)?.errhandler = errhandler;
        Ok(())
    });
    ret_win(win, "MPI_Win_set_errhandler", r)
}

pub unsafe fn MPI_Win_get_errhandler(win: MPI_Win, errhandler: *mut MPI_Errhandler) -> c_int {
    let r = rt::with(|st| put(errhandler, st.wins.get(win)?.errhandler, "errhandler"));
    ret_win(win, "MPI_Win_get_errhandler", r)
}

pub unsafe fn MPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) -> c_int {
    if let Err(e) = rt::with(|st| st.wins.get(win).map(|_| ())) {
        return raise_win(win, "MPI_Win_call_errhandler", e);
    }
    raise_win(win, "MPI_Win_call_errhandler", MpiError::new(errorcode, "error raised by the application"));
    MPI_SUCCESS
}

/// The value of a predefined window attribute, if `keyval` is one.
pub(crate) fn predefined_attr(st: &State, win: MPI_Win, keyval: c_int) -> Option<*mut c_void> {
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

// ----- RMA operations ---------------------------------------------------

/// The arguments of one RMA operation.
struct Op {
    kind: u32,
    op: MPI_Op,
    origin: *const u8,
    ocount: MPI_Count,
    odt: MPI_Datatype,
    result: *mut u8,
    rcount: MPI_Count,
    rdt: MPI_Datatype,
    compare: *const u8,
    target: c_int,
    disp: MPI_Aint,
    tcount: MPI_Count,
    tdt: MPI_Datatype,
}

impl Op {
    fn put(
        origin: *const c_void,
        ocount: MPI_Count,
        odt: MPI_Datatype,
        target: c_int,
        disp: MPI_Aint,
        tcount: MPI_Count,
        tdt: MPI_Datatype,
    ) -> Op {
        Op {
            kind: kind::PUT,
            op: MPI_REPLACE,
            origin: origin as *const u8,
            ocount,
            odt,
            result: std::ptr::null_mut(),
            rcount: 0,
            rdt: MPI_DATATYPE_NULL,
            compare: std::ptr::null(),
            target,
            disp,
            tcount,
            tdt,
        }
    }
}

/// Checked datatypes and sizes of an operation.
struct Checked {
    t: usize,
    odt: Arc<Dtype>,
    tdt: Arc<Dtype>,
    rdt: Option<Arc<Dtype>>,
    bytes: usize,
    basic: MPI_Datatype,
    /// Wait for the target's `MPI_Win_post` first.
    need_grant: bool,
}

fn count_of(c: MPI_Count, what: &str) -> MpiResult<usize> {
    usize::try_from(c).map_err(|_| MpiError::new(MPI_ERR_COUNT, format!("{what} {c} is negative")))
}

/// Validates operation `o` on `win` (`None`: the target is `MPI_PROC_NULL`).
fn check_op(st: &mut State, win: MPI_Win, o: &Op) -> MpiResult<Option<Checked>> {
    let w = st.wins.get(win)?;
    if o.target == MPI_PROC_NULL {
        return Ok(None);
    }
    let n = w.size_n();
    let t = match usize::try_from(o.target) {
        Ok(t) if t < n => t,
        _ => bail!(MPI_ERR_RANK, "target rank {} is not in the window's group of {n}", o.target),
    };
    if !w.may_access(t) {
        bail!(
            MPI_ERR_RMA_SYNC,
            "no access epoch covers target {t} (call MPI_Win_fence, MPI_Win_start or MPI_Win_lock first)"
        );
    }
    let dynamic = w.flavor == MPI_WIN_FLAVOR_DYNAMIC;
    if o.disp < 0 && !dynamic {
        bail!(MPI_ERR_DISP, "target displacement {} is negative", o.disp);
    }
    let peer = w.peers[t];
    let need_grant = !w.fence_open && !w.passive(t) && !w.granted[t];
    let ocount = count_of(o.ocount, "origin count")?;
    let tcount = count_of(o.tcount, "target count")?;
    let tdt = st.types.get(o.tdt)?;
    let uses_origin = !(o.kind == kind::GET || o.kind == kind::GACC && o.op == MPI_NO_OP);
    let odt = if o.kind == kind::GACC && o.op == MPI_NO_OP { tdt.clone() } else { st.types.get(o.odt)? };
    let bytes = tdt.packed_size(tcount);
    if (uses_origin || o.kind == kind::GET) && odt.packed_size(ocount) != bytes {
        bail!(
            MPI_ERR_TYPE,
            "origin data ({} bytes) and target data ({bytes} bytes) differ in size",
            odt.packed_size(ocount)
        );
    }
    let rdt = if matches!(o.kind, kind::GACC | kind::CAS) {
        let rdt = st.types.get(o.rdt)?;
        let rcount = count_of(o.rcount, "result count")?;
        if rdt.packed_size(rcount) != bytes {
            bail!(
                MPI_ERR_TYPE,
                "result buffer ({} bytes) and target data ({bytes} bytes) differ in size",
                rdt.packed_size(rcount)
            );
        }
        Some(rdt)
    } else {
        None
    };
    let mut basic = MPI_DATATYPE_NULL;
    if matches!(o.kind, kind::ACC | kind::GACC | kind::CAS) {
        if !crate::rt::op::is_predefined(o.op) {
            bail!(MPI_ERR_OP, "one-sided accumulate operations take predefined operations only");
        }
        basic = match tdt.basic {
            Some(b) if !uses_origin || odt.basic == Some(b) => b,
            _ => bail!(
                MPI_ERR_TYPE,
                "origin and target datatypes of an accumulate must be made of one and the same predefined type"
            ),
        };
        if !matches!(o.op, MPI_REPLACE | MPI_NO_OP) {
            crate::rt::op::check(o.op, basic)?;
        }
        if o.kind == kind::CAS && !crate::rt::datatype::is_predefined(o.tdt) {
            bail!(MPI_ERR_TYPE, "MPI_Compare_and_swap takes a predefined datatype");
        }
    }
    if !dynamic && bytes > 0 {
        let (lo, hi) = if tdt.contig {
            (0, bytes as isize)
        } else {
            let runs = tdt.runs();
            Target { addr: 0, count: tcount, extent: tdt.extent, runs: &runs }.span()
        };
        let at = o.disp.saturating_mul(peer.disp_unit as i64) as isize;
        if at + lo < 0 || at + hi > peer.size as isize {
            bail!(
                MPI_ERR_RMA_RANGE,
                "the access [{}, {}) lies outside target {t}'s window of {} bytes",
                at + lo,
                at + hi,
                peer.size
            );
        }
    }
    Ok(Some(Checked { t, odt, tdt, rdt, bytes, basic, need_grant }))
}

/// A request that is already complete (for `MPI_Rput` and friends).
fn done_request(reqs: &mut ReqTable) -> u32 {
    let i = reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
    reqs.finish(i);
    i
}

/// Waits for the `MPI_Win_post` of target `t` (PSCW access epoch).
fn wait_grant(win: MPI_Win, t: usize) -> MpiResult<()> {
    rt::block_on(|st| match st.wins.get_mut(win) {
        Ok(w) if w.granted[t] => Some(Ok(())),
        Ok(w) if w.posts_from[t] > 0 => {
            w.posts_from[t] -= 1;
            w.granted[t] = true;
            Some(Ok(()))
        }
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })?
}

/// Starts one RMA operation; returns a request for the `MPI_R*` forms.
///
/// # Safety
/// The buffers of `o` hold their counts of elements of their datatypes (the
/// program's promise to MPI), until the operation completes.
unsafe fn rma(win: MPI_Win, o: Op, want_req: bool) -> MpiResult<Option<u32>> {
    // Usually one step under the lock; a PSCW epoch may first wait for the
    // target's post (without the lock).
    let first = rt::with(|st| match check_op(st, win, &o)? {
        None => Ok(Err(want_req.then(|| done_request(&mut st.reqs)))),
        Some(c) if c.need_grant => Ok(Ok(c)),
        Some(c) => start_op(st, win, &o, &c, want_req).map(Err),
    })?;
    match first {
        Err(done) => Ok(done),
        Ok(c) => {
            wait_grant(win, c.t)?;
            rt::with(|st| start_op(st, win, &o, &c, want_req))
        }
    }
}

/// The operation checked by [`check_op`], under the lock: in place where
/// the memory is reachable, else as a message.
///
/// # Safety
/// As for [`rma`]; the target ranges were checked against the window
/// (dynamic windows: by the target).
unsafe fn start_op(st: &mut State, win: MPI_Win, o: &Op, c: &Checked, want_req: bool) -> MpiResult<Option<u32>> {
    let State { wins, engine, reqs, .. } = st;
    let w = wins.get_mut(win)?;
    let peer = w.peers[c.t];
    let (ocount, tcount) = (o.ocount as usize, o.tcount as usize);
    // Shared memory (and this process's own part): Put and Get are plain
    // copies; contiguous target data of a process on this host moves with
    // one process_vm_writev/readv.
    if matches!(o.kind, kind::PUT | kind::GET) && (peer.local.is_some() || peer.pid != 0 && w.cma_ok && c.tdt.contig) {
        let off = (o.disp * peer.disp_unit as i64) as isize;
        let mut tmp = Vec::new();
        let moved = match (peer.local, o.kind) {
            (Some(local), k) if c.odt.contig && c.tdt.contig => {
                let at = (local as isize + off) as *mut u8;
                if k == kind::PUT {
                    std::ptr::copy(o.origin, at, c.bytes);
                } else {
                    std::ptr::copy(at, o.origin as *mut u8, c.bytes);
                }
                true
            }
            (Some(local), kind::PUT) => {
                tmp.resize(c.bytes, 0);
                c.odt.pack(o.origin, ocount, &mut tmp);
                c.tdt.unpack(&tmp, (local as isize + off) as *mut u8);
                true
            }
            (Some(local), _) => {
                tmp.resize(c.bytes, 0);
                c.tdt.pack((local as isize + off) as *const u8, tcount, &mut tmp);
                c.odt.unpack(&tmp, o.origin as *mut u8);
                true
            }
            (None, k) => {
                let write = k == kind::PUT;
                let buf = if c.odt.contig {
                    o.origin as *mut u8
                } else {
                    tmp.resize(c.bytes, 0);
                    if write {
                        c.odt.pack(o.origin, ocount, &mut tmp);
                    }
                    tmp.as_mut_ptr()
                };
                // SAFETY: `buf` holds the `c.bytes` packed bytes (the program's
                // contiguous buffer or our staging copy).
                let ok =
                    unsafe { win::cma(peer.pid, (peer.base as isize + off) as usize, buf, c.bytes, write) }.is_ok();
                if ok && !write && !c.odt.contig {
                    c.odt.unpack(&tmp, o.origin as *mut u8);
                }
                if !ok {
                    w.cma_ok = false;
                }
                ok
            }
        };
        if moved {
            return Ok(want_req.then(|| done_request(reqs)));
        }
    }
    let runs = c.tdt.runs();
    let mut data = Vec::new();
    if matches!(o.kind, kind::PUT | kind::ACC | kind::CAS) || o.kind == kind::GACC && o.op != MPI_NO_OP {
        data = vec![0u8; c.bytes];
        c.odt.pack(o.origin, ocount, &mut data);
    }
    if o.kind == kind::CAS {
        let mut cmp = vec![0u8; c.bytes];
        c.odt.pack(o.compare, ocount, &mut cmp);
        data.extend_from_slice(&cmp);
    }
    // Accumulates where the origin reaches the memory: in place (shared
    // segment, own part) or through CMA (contiguous target data of a
    // process on this host), under the target part's lock word.
    if let (Some(locks), kind::ACC | kind::GACC | kind::CAS) = (w.acc_locks, o.kind) {
        let off = (o.disp * peer.disp_unit as i64) as isize;
        let h = Hdr { kind: o.kind, op: o.op, basic: c.basic, ..Default::default() };
        let old = if let Some(local) = peer.local {
            let t = Target { addr: (local as isize + off) as usize, count: tcount, extent: c.tdt.extent, runs: &runs };
            Some(win::with_part_lock(locks, c.t, || win::apply(&h, &t, c.bytes, &data))?)
        } else if peer.pid != 0 && w.cma_ok && c.tdt.contig {
            let remote = (peer.base as isize + off) as usize;
            let (pid, bytes) = (peer.pid, c.bytes);
            let r = win::with_part_lock(locks, c.t, || -> MpiResult<Option<Option<Vec<u8>>>> {
                let mut cur = vec![0u8; bytes];
                // SAFETY: `cur` holds `bytes` bytes.
                if unsafe { win::cma(pid, remote, cur.as_mut_ptr(), bytes, false) }.is_err() {
                    return Ok(None);
                }
                let one = [(0isize, bytes)];
                let t = Target { addr: cur.as_mut_ptr() as usize, count: 1, extent: bytes as isize, runs: &one };
                let old = win::apply(&h, &t, bytes, &data)?;
                // SAFETY: as above; the kernel let us read this range, so writes succeed too.
                if unsafe { win::cma(pid, remote, cur.as_mut_ptr(), bytes, true) }.is_err() {
                    bail!(MPI_ERR_INTERN, "process_vm_writev to rank {} failed after a read succeeded", c.t);
                }
                Ok(Some(old))
            })?;
            if r.is_none() {
                w.cma_ok = false;
            }
            r
        } else {
            None
        };
        if let Some(old) = old {
            if let (Some(old), Some(rdt)) = (old, &c.rdt) {
                rdt.unpack(&old, o.result);
            }
            return Ok(want_req.then(|| done_request(reqs)));
        }
    }
    let addr = (peer.base as i64).wrapping_add(o.disp.wrapping_mul(peer.disp_unit as i64)) as u64;
    let mut user = None;
    let mut reply = 0;
    if matches!(o.kind, kind::GET | kind::GACC | kind::CAS) {
        reply = w.tag();
        let (buf, count, dt) = match o.kind {
            kind::GET => (o.origin as *mut u8, ocount, c.odt.clone()),
            _ => (o.result, o.rcount as usize, c.rdt.clone().expect("result type checked")),
        };
        let ri = win::post_reply(engine, reqs, w, c.t, reply, buf, count, dt);
        w.pending.push(Pending { id: reqs.proto_id(ri), owned: !want_req, keep: None, ack: false });
        if want_req {
            user = Some(ri);
        }
    }
    // In a passive-target epoch every operation by message is answered
    // (data, or an acknowledgement for Put and Accumulate), so its reply
    // tells that it is complete at the target: a flush then only waits for
    // the replies and sends nothing.
    let passive = w.passive(c.t);
    if passive && reply == 0 {
        reply = w.tag();
        let mut code = vec![0u8; 4];
        let ri = win::post_reply(engine, reqs, w, c.t, reply, code.as_mut_ptr(), 4, w.bytes_type());
        w.pending.push(Pending { id: reqs.proto_id(ri), owned: true, keep: Some(code), ack: true });
    }
    let epoch = if w.fence_open && !passive && w.start.is_none() { w.fences } else { 0 };
    let h = Hdr {
        kind: o.kind,
        op: o.op,
        basic: c.basic,
        reply,
        addr,
        count: tcount as u64,
        extent: c.tdt.extent as i64,
        epoch,
    };
    let msg = win::encode(&h, &runs, &[&data]);
    w.sent[c.t] += 1;
    if passive {
        w.flushed[c.t] += 1;
    }
    match win::send_bytes(engine, reqs, w, c.t, win::TAG_REQ, &msg) {
        None => {}
        Some(si) if want_req && user.is_none() => {
            // The program's request completes with the send; it keeps the message.
            w.pending.push(Pending { id: reqs.proto_id(si), owned: false, keep: None, ack: false });
            let ui = reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
            reqs.make_compound(ui, vec![si], Some(msg));
            user = Some(ui);
        }
        Some(si) => w.pending.push(Pending { id: reqs.proto_id(si), owned: true, keep: Some(msg), ack: false }),
    }
    if want_req && user.is_none() {
        user = Some(done_request(reqs));
    }
    Ok(user)
}

/// Runs `o` and writes the request of an `MPI_R*` call.
unsafe fn rma_req(win: MPI_Win, o: Op, request: *mut MPI_Request) -> MpiResult<()> {
    if request.is_null() {
        bail!(MPI_ERR_ARG, "request is a NULL pointer");
    }
    let i = rma(win, o, true)?.expect("a request was asked for");
    put(request, crate::rt::p2p::ReqTable::handle(i), "request")
}

twins! {
    pub unsafe fn MPI_Put | MPI_Put_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, win: MPI_Win) -> c_int {
        let o = Op::put(origin_addr, origin_count as MPI_Count, origin_datatype, target_rank, target_disp, target_count as MPI_Count, target_datatype);
        ret_win(win, NAME, rma(win, o, false).map(drop))
    }
}

twins! {
    pub unsafe fn MPI_Get | MPI_Get_c(origin_addr: *mut c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, win: MPI_Win) -> c_int {
        let o = Op { kind: kind::GET, ..Op::put(origin_addr, origin_count as MPI_Count, origin_datatype, target_rank, target_disp, target_count as MPI_Count, target_datatype) };
        ret_win(win, NAME, rma(win, o, false).map(drop))
    }
}

twins! {
    pub unsafe fn MPI_Accumulate | MPI_Accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win) -> c_int {
        let o = Op { kind: kind::ACC, op, ..Op::put(origin_addr, origin_count as MPI_Count, origin_datatype, target_rank, target_disp, target_count as MPI_Count, target_datatype) };
        ret_win(win, NAME, rma(win, o, false).map(drop))
    }
}

#[allow(clippy::too_many_arguments)]
fn gacc(
    origin_addr: *const c_void,
    origin_count: MPI_Count,
    origin_datatype: MPI_Datatype,
    result_addr: *mut c_void,
    result_count: MPI_Count,
    result_datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    target_count: MPI_Count,
    target_datatype: MPI_Datatype,
    op: MPI_Op,
) -> Op {
    Op {
        kind: kind::GACC,
        op,
        result: result_addr as *mut u8,
        rcount: result_count,
        rdt: result_datatype,
        ..Op::put(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype)
    }
}

twins! {
    pub unsafe fn MPI_Get_accumulate | MPI_Get_accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, result_addr: *mut c_void, result_count: Count, result_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win) -> c_int {
        let o = gacc(origin_addr, origin_count as MPI_Count, origin_datatype, result_addr, result_count as MPI_Count, result_datatype, target_rank, target_disp, target_count as MPI_Count, target_datatype, op);
        ret_win(win, NAME, rma(win, o, false).map(drop))
    }
}

pub unsafe fn MPI_Fetch_and_op(
    origin_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    op: MPI_Op,
    win: MPI_Win,
) -> c_int {
    let o = gacc(origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp, 1, datatype, op);
    ret_win(win, "MPI_Fetch_and_op", rma(win, o, false).map(drop))
}

pub unsafe fn MPI_Compare_and_swap(
    origin_addr: *const c_void,
    compare_addr: *const c_void,
    result_addr: *mut c_void,
    datatype: MPI_Datatype,
    target_rank: c_int,
    target_disp: MPI_Aint,
    win: MPI_Win,
) -> c_int {
    let o = Op {
        kind: kind::CAS,
        compare: compare_addr as *const u8,
        ..gacc(origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp, 1, datatype, MPI_REPLACE)
    };
    ret_win(win, "MPI_Compare_and_swap", rma(win, o, false).map(drop))
}

twins! {
    pub unsafe fn MPI_Rput | MPI_Rput_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, win: MPI_Win, request: *mut MPI_Request) -> c_int {
        let o = Op::put(origin_addr, origin_count as MPI_Count, origin_datatype, target_rank, target_disp, target_count as MPI_Count, target_datatype);
        ret_win(win, NAME, rma_req(win, o, request))
    }
}

twins! {
    pub unsafe fn MPI_Rget | MPI_Rget_c(origin_addr: *mut c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, win: MPI_Win, request: *mut MPI_Request) -> c_int {
        let o = Op { kind: kind::GET, ..Op::put(origin_addr, origin_count as MPI_Count, origin_datatype, target_rank, target_disp, target_count as MPI_Count, target_datatype) };
        ret_win(win, NAME, rma_req(win, o, request))
    }
}

twins! {
    pub unsafe fn MPI_Raccumulate | MPI_Raccumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win, request: *mut MPI_Request) -> c_int {
        let o = Op { kind: kind::ACC, op, ..Op::put(origin_addr, origin_count as MPI_Count, origin_datatype, target_rank, target_disp, target_count as MPI_Count, target_datatype) };
        ret_win(win, NAME, rma_req(win, o, request))
    }
}

twins! {
    pub unsafe fn MPI_Rget_accumulate | MPI_Rget_accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, result_addr: *mut c_void, result_count: Count, result_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win, request: *mut MPI_Request) -> c_int {
        let o = gacc(origin_addr, origin_count as MPI_Count, origin_datatype, result_addr, result_count as MPI_Count, result_datatype, target_rank, target_disp, target_count as MPI_Count, target_datatype, op);
        ret_win(win, NAME, rma_req(win, o, request))
    }
}

// ----- synchronization -------------------------------------------------

/// Sends a control request (`LOCK`, `UNLOCK`, `FLUSH`) to each of
/// `targets` and waits for every reply; returns the first error a target
/// reported.
fn control(win: MPI_Win, targets: &[usize], k: u32, arg: c_int) -> MpiResult<()> {
    if targets.is_empty() {
        return Ok(());
    }
    let mut bufs = vec![[0u8; 4]; targets.len()];
    let ids = rt::with(|st| {
        let int = st.types.get(MPI_BYTE)?;
        let mut ids = Vec::with_capacity(targets.len());
        for (&t, b) in targets.iter().zip(bufs.iter_mut()) {
            let State { wins, engine, reqs, .. } = &mut *st;
            let w = wins.get_mut(win)?;
            let tag = w.tag();
            ids.push(win::post_reply(engine, reqs, w, t, tag, b.as_mut_ptr(), 4, int.clone()));
            let msg = win::encode(&Hdr { kind: k, op: arg, reply: tag, ..Default::default() }, &[], &[]);
            win::send_request(st, win, t, msg)?;
        }
        Ok(ids)
    })?;
    rt::block_on(|st| {
        if ids.iter().all(|&i| st.reqs.get(i).done) {
            for &i in &ids {
                st.reqs.release(i);
            }
            Some(())
        } else {
            None
        }
    })?;
    match bufs.iter().map(|b| c_int::from_ne_bytes(*b)).find(|&e| e != MPI_SUCCESS) {
        Some(e) => Err(MpiError::new(e, "an operation failed at its target (outside the target's window memory?)")),
        None => Ok(()),
    }
}

/// Sends a message that needs no reply (`POST`, `COMPLETE`) to each of `targets`.
fn notify(win: MPI_Win, targets: &[usize], k: u32) -> MpiResult<()> {
    rt::with(|st| {
        for &t in targets {
            win::send_request(st, win, t, win::encode(&Hdr { kind: k, ..Default::default() }, &[], &[]))?;
        }
        Ok(())
    })
}

fn check_assert(assert: c_int) -> MpiResult<()> {
    let all = MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED;
    if assert & !all != 0 {
        bail!(MPI_ERR_ASSERT, "invalid assertion {assert:#x}");
    }
    Ok(())
}

pub unsafe fn MPI_Win_fence(assert: c_int, win: MPI_Win) -> c_int {
    let r = (|| {
        check_assert(assert)?;
        let idle = rt::with(|st| Ok(st.wins.get(win)?.idle()))?;
        if !idle {
            bail!(MPI_ERR_RMA_SYNC, "MPI_Win_fence inside a PSCW or lock epoch");
        }
        // MPI_MODE_NOPRECEDE: nothing to complete. Still, operations of the
        // next epoch may reach a target only after it called the fence:
        // messages wait for that at the target, direct transfers cannot,
        // so a window with direct peers synchronizes all the same.
        let direct = rt::with(|st| {
            let w = st.wins.get(win)?;
            Ok(w.peers.iter().enumerate().any(|(t, p)| t != w.rank && (p.local.is_some() || p.pid != 0)))
        })?;
        if assert & MPI_MODE_NOPRECEDE == 0 || direct {
            settle(win)?;
        }
        rt::with(|st| {
            let w = st.wins.get_mut(win)?;
            w.fence_open = assert & MPI_MODE_NOSUCCEED == 0;
            w.fences += 1;
            Ok(())
        })
    })();
    ret_win(win, "MPI_Win_fence", r)
}

/// Window ranks of the members of `group`.
fn ranks_of(st: &mut State, win: MPI_Win, group: MPI_Group) -> MpiResult<Vec<usize>> {
    let m = st.comms.groups.get(group)?;
    let w = st.wins.get(win)?;
    m.iter()
        .map(|&wr| {
            crate::rt::group::rank_of(&w.group, wr)
                .ok_or_else(|| MpiError::new(MPI_ERR_GROUP, "the group has a process outside the window"))
        })
        .collect()
}

pub unsafe fn MPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    let r = (|| {
        check_assert(assert)?;
        let ranks = rt::with(|st| {
            let ranks = ranks_of(st, win, group)?;
            let w = st.wins.get_mut(win)?;
            if w.post.is_some() {
                bail!(MPI_ERR_RMA_SYNC, "MPI_Win_post while an exposure epoch is open");
            }
            w.post = Some(ranks.clone());
            Ok(ranks)
        })?;
        notify(win, &ranks, kind::POST)
    })();
    ret_win(win, "MPI_Win_post", r)
}

pub unsafe fn MPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    let r = (|| {
        check_assert(assert)?;
        rt::with(|st| {
            let ranks = ranks_of(st, win, group)?;
            let w = st.wins.get_mut(win)?;
            if w.start.is_some() {
                bail!(MPI_ERR_RMA_SYNC, "MPI_Win_start while an access epoch is open");
            }
            w.granted.iter_mut().for_each(|g| *g = false);
            w.start = Some(ranks);
            Ok(())
        })
    })();
    ret_win(win, "MPI_Win_start", r)
}

pub unsafe fn MPI_Win_complete(win: MPI_Win) -> c_int {
    let r = (|| {
        let Some(ranks) = rt::with(|st| Ok(st.wins.get(win)?.start.clone()))? else {
            bail!(MPI_ERR_RMA_SYNC, "MPI_Win_complete without MPI_Win_start");
        };
        for &t in &ranks {
            wait_grant(win, t)?;
        }
        wait_local(win)?;
        notify(win, &ranks, kind::COMPLETE)?;
        rt::with(|st| {
            let w = st.wins.get_mut(win)?;
            w.start = None;
            w.granted.iter_mut().for_each(|g| *g = false);
            Ok(())
        })
    })();
    ret_win(win, "MPI_Win_complete", r)
}

/// Ends the exposure epoch if every origin completed (`MPI_Win_test`/`wait`).
fn exposure_done(w: &mut Win) -> MpiResult<bool> {
    let Some(ranks) = &w.post else {
        bail!(MPI_ERR_RMA_SYNC, "no exposure epoch is open (call MPI_Win_post first)");
    };
    if ranks.iter().any(|&o| w.completes_from[o] == 0) {
        return Ok(false);
    }
    for &o in ranks {
        w.completes_from[o] -= 1;
    }
    w.post = None;
    Ok(true)
}

pub unsafe fn MPI_Win_wait(win: MPI_Win) -> c_int {
    let r = rt::block_on(|st| match st.wins.get_mut(win).and_then(exposure_done) {
        Ok(true) => Some(Ok(())),
        Ok(false) => None,
        Err(e) => Some(Err(e)),
    });
    ret_win(win, "MPI_Win_wait", r.and_then(|r| r))
}

pub unsafe fn MPI_Win_test(win: MPI_Win, flag: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        st.progress();
        let done = exposure_done(st.wins.get_mut(win)?)?;
        put(flag, done as c_int, "flag")
    });
    ret_win(win, "MPI_Win_test", r)
}

/// The target of a passive-target call: `None` for `MPI_PROC_NULL`.
fn target_of(st: &State, win: MPI_Win, rank: c_int) -> MpiResult<Option<usize>> {
    let n = st.wins.get(win)?.size_n();
    match rank {
        MPI_PROC_NULL => Ok(None),
        r if r >= 0 && (r as usize) < n => Ok(Some(r as usize)),
        _ => bail!(MPI_ERR_RANK, "rank {rank} is not in the window's group of {n}"),
    }
}

/// Takes the passive-target lock of each of `targets`: in the lock words
/// of a window whose members share a host (waiting through `block_on`),
/// else from each target's lock manager (messages).
fn take_locks(win: MPI_Win, targets: &[usize], lock_type: c_int) -> MpiResult<()> {
    let Some(locks) = rt::with(|st| Ok(st.wins.get(win)?.acc_locks))? else {
        return control(win, targets, kind::LOCK, lock_type);
    };
    let excl = lock_type == MPI_LOCK_EXCLUSIVE;
    for &t in targets {
        rt::wait_until(|_| win::rw_try_lock(locks, t, excl))?;
    }
    Ok(())
}

/// Releases what [`take_locks`] took (after the operations completed).
fn release_locks(win: MPI_Win, targets: &[usize], lock_type: c_int) -> MpiResult<()> {
    let locks = rt::with(|st| {
        let w = st.wins.get(win)?;
        if let Some(locks) = w.acc_locks {
            for &t in targets {
                win::rw_unlock(w, locks, t, lock_type == MPI_LOCK_EXCLUSIVE);
            }
        }
        Ok(w.acc_locks)
    })?;
    match locks {
        Some(_) => finish_unlocked(win, targets),
        None => control(win, targets, kind::UNLOCK, lock_type),
    }
}

/// Marks a lock taken with `MPI_MODE_NOCHECK` (no lock at the target).
const NOCHECK_LOCK: c_int = 1 << 24;

/// The end of a `MPI_MODE_NOCHECK` lock on `targets`: a flush of those
/// that got operations by message.
fn finish_unlocked(win: MPI_Win, targets: &[usize]) -> MpiResult<()> {
    let todo = rt::with(|st| {
        let w = st.wins.get(win)?;
        Ok(targets.iter().copied().filter(|&t| w.sent[t] > w.flushed[t]).collect::<Vec<_>>())
    })?;
    control(win, &todo, kind::FLUSH, 0)
}

pub unsafe fn MPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> c_int {
    let r = (|| {
        check_assert(assert)?;
        if lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED {
            bail!(MPI_ERR_LOCKTYPE, "invalid lock type {lock_type}");
        }
        let Some(t) = rt::with(|st| target_of(st, win, rank))? else { return Ok(()) };
        rt::with(|st| {
            let w = st.wins.get(win)?;
            if w.locks[t].is_some() || w.lock_all {
                bail!(MPI_ERR_RMA_SYNC, "target {t} is already locked by this process");
            }
            Ok(())
        })?;
        // MPI_MODE_NOCHECK: no conflicting lock can exist, so none is taken.
        let nocheck = assert & MPI_MODE_NOCHECK != 0;
        if !nocheck {
            take_locks(win, &[t], lock_type)?;
        }
        rt::with(|st| {
            let w = st.wins.get_mut(win)?;
            w.locks[t] = Some(if nocheck { lock_type | NOCHECK_LOCK } else { lock_type });
            w.flushed[t] = w.sent[t];
            Ok(())
        })
    })();
    ret_win(win, "MPI_Win_lock", r)
}

pub unsafe fn MPI_Win_unlock(rank: c_int, win: MPI_Win) -> c_int {
    let r = (|| {
        let Some(t) = rt::with(|st| target_of(st, win, rank))? else { return Ok(()) };
        let Some(lt) = rt::with(|st| Ok(st.wins.get(win)?.locks[t]))? else {
            bail!(MPI_ERR_RMA_SYNC, "MPI_Win_unlock of target {t}, which this process has not locked");
        };
        wait_local(win)?;
        let r = if lt & NOCHECK_LOCK != 0 { finish_unlocked(win, &[t]) } else { release_locks(win, &[t], lt) };
        let r = r.and(acked_error(win));
        rt::with(|st| {
            let w = st.wins.get_mut(win)?;
            w.locks[t] = None;
            w.flushed[t] = w.sent[t];
            Ok(())
        })?;
        r
    })();
    ret_win(win, "MPI_Win_unlock", r)
}

pub unsafe fn MPI_Win_lock_all(assert: c_int, win: MPI_Win) -> c_int {
    let r = (|| {
        check_assert(assert)?;
        let n = rt::with(|st| {
            let w = st.wins.get(win)?;
            if w.lock_all || w.locks.iter().any(Option::is_some) {
                bail!(MPI_ERR_RMA_SYNC, "MPI_Win_lock_all while this process holds a lock on the window");
            }
            Ok(w.size_n())
        })?;
        let all: Vec<usize> = (0..n).collect();
        let nocheck = assert & MPI_MODE_NOCHECK != 0;
        if !nocheck {
            take_locks(win, &all, MPI_LOCK_SHARED)?;
        }
        rt::with(|st| {
            let w = st.wins.get_mut(win)?;
            w.lock_all = true;
            w.lock_all_nocheck = nocheck;
            w.flushed = w.sent.clone();
            Ok(())
        })
    })();
    ret_win(win, "MPI_Win_lock_all", r)
}

pub unsafe fn MPI_Win_unlock_all(win: MPI_Win) -> c_int {
    let r = (|| {
        let (on, n, nocheck) = rt::with(|st| {
            let w = st.wins.get(win)?;
            Ok((w.lock_all, w.size_n(), w.lock_all_nocheck))
        })?;
        if !on {
            bail!(MPI_ERR_RMA_SYNC, "MPI_Win_unlock_all without MPI_Win_lock_all");
        }
        wait_local(win)?;
        let all: Vec<usize> = (0..n).collect();
        let r = if nocheck { finish_unlocked(win, &all) } else { release_locks(win, &all, MPI_LOCK_SHARED) };
        let r = r.and(acked_error(win));
        rt::with(|st| {
            let w = st.wins.get_mut(win)?;
            w.lock_all = false;
            w.flushed = w.sent.clone();
            Ok(())
        })?;
        r
    })();
    ret_win(win, "MPI_Win_unlock_all", r)
}

/// Targets of a flush (`None`: all) that are in a passive epoch; checks
/// that the epoch exists.
fn flush_targets(win: MPI_Win, rank: Option<c_int>) -> MpiResult<Vec<usize>> {
    rt::with(|st| {
        let targets: Vec<usize> = match rank {
            Some(r) => target_of(st, win, r)?.into_iter().collect(),
            None => (0..st.wins.get(win)?.size_n()).collect(),
        };
        let w = st.wins.get(win)?;
        if rank.is_some() && targets.iter().any(|&t| !w.passive(t))
            || rank.is_none() && !w.lock_all && w.locks.iter().all(Option::is_none)
        {
            bail!(
                MPI_ERR_RMA_SYNC,
                "flush outside a passive-target epoch (call MPI_Win_lock or MPI_Win_lock_all first)"
            );
        }
        Ok(targets.into_iter().filter(|&t| w.passive(t)).collect())
    })
}

/// Completes the operations to `targets` here and, unless `local`, at the targets.
fn flush(win: MPI_Win, rank: Option<c_int>, local: bool) -> MpiResult<()> {
    // Nothing in flight and nothing sent since the last flush (direct
    // transfers complete at once): one look under the lock.
    let idle = rt::with(|st| {
        let State { wins, reqs, .. } = st;
        let w = wins.get_mut(win)?;
        let covered = match rank {
            Some(r) => usize::try_from(r)
                .ok()
                .filter(|&t| t < w.size_n())
                .is_some_and(|t| w.passive(t) && w.sent[t] == w.flushed[t]),
            None => w.lock_all && w.sent == w.flushed,
        };
        Ok(covered && w.local_done(reqs))
    })?;
    if idle {
        return acked_error(win);
    }
    let targets = flush_targets(win, rank)?;
    wait_local(win)?;
    acked_error(win)?;
    if local {
        return Ok(());
    }
    let todo = rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        let todo: Vec<usize> = targets.into_iter().filter(|&t| w.sent[t] > w.flushed[t]).collect();
        for &t in &todo {
            w.flushed[t] = w.sent[t];
        }
        Ok(todo)
    })?;
    control(win, &todo, kind::FLUSH, 0)
}

pub unsafe fn MPI_Win_flush(rank: c_int, win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_flush", flush(win, Some(rank), false))
}

pub unsafe fn MPI_Win_flush_all(win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_flush_all", flush(win, None, false))
}

pub unsafe fn MPI_Win_flush_local(rank: c_int, win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_flush_local", flush(win, Some(rank), true))
}

pub unsafe fn MPI_Win_flush_local_all(win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_flush_local_all", flush(win, None, true))
}

pub unsafe fn MPI_Win_sync(win: MPI_Win) -> c_int {
    let r = rt::with(|st| {
        st.wins.get(win)?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        st.progress();
        Ok(())
    });
    ret_win(win, "MPI_Win_sync", r)
}
