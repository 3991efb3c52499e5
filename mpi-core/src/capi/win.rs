//! Chapter 11: one-sided communication, the C binding — windows (create,
//! allocate, shared, dynamic, free), their names, info and groups, the RMA
//! operations and the synchronization calls. Each procedure converts its
//! C arguments (user buffers become `rt::win::ops::UserBuf`), calls the
//! runtime (`rt/win/`: `create`, `ops`, `sync`) and reports errors through
//! the window's handler (`capi/win_errh.rs`). The design is in
//! `mpi-core/RMA.md`.

use std::ffi::c_void;
use std::os::raw::{c_char, c_int};

use mpi_api::abi::*;

use super::p2p::twins;
use super::pack::opt_cstr;
use super::win_errh::ret_win;
use super::{put_str, Out};
use crate::bail;
use crate::rt::buf::UserBuf;
use crate::rt::comm::CTX_SPAN_INTRA;
use crate::rt::ctxid::{comm_of, new_context_or_fail};
use crate::rt::error::MpiResult;
use crate::rt::p2p::ReqTable;
use crate::rt::win::create::{Memory, WinRequest};
use crate::rt::win::ops::{RmaOp, RmaTarget};
use crate::rt::win::sync;
use crate::rt::{self};

// ----- creation and destruction ----------------------------------------

/// The `baseptr` argument of `MPI_Win_allocate(_shared)` and
/// `MPI_Win_shared_query`: declared `void *`, it is the address of the
/// program's pointer variable that receives a base address.
///
/// # Safety
/// `p` is NULL or points to a writable `void *` that nothing else accesses
/// during `'a`.
unsafe fn base_out<'a>(p: *mut c_void) -> Option<&'a mut *mut c_void> {
    // SAFETY: NULL or a writable, aligned `void *` of ours (the contract).
    unsafe { (p as *mut *mut c_void).as_mut() }
}

/// Collective creation of a window of any flavor over `comm`; `baseptr`
/// receives the base address of allocated memory.
fn create_common(
    comm: MPI_Comm,
    info: MPI_Info,
    memory: Memory,
    size: MPI_Aint,
    disp_unit: MPI_Aint,
    baseptr: Option<&mut *mut c_void>,
    mut newwin: Out<'_, MPI_Win>,
) -> MpiResult<()> {
    if newwin.is_null() {
        bail!(MPI_ERR_ARG, "win is a NULL pointer");
    }
    let c = comm_of(comm)?;
    if c.is_inter() {
        bail!(MPI_ERR_COMM, "windows need an intracommunicator, and this is an intercommunicator");
    }
    let hints = crate::rt::info::hints(info)?;
    let req = WinRequest { memory, size, disp_unit, hints };
    let mine = rt::win::create::check(&c, &req, baseptr.is_some());
    let ctx = new_context_or_fail(comm, CTX_SPAN_INTRA, false, mine)?;
    let (h, base) = rt::win::create::create(&c, ctx, req)?;
    if matches!(memory, Memory::Allocate | Memory::Shared) {
        if let Some(b) = baseptr {
            *b = base as *mut c_void;
        }
    }
    newwin.put(h)
}

twins! {
    pub unsafe fn MPI_Win_create | MPI_Win_create_c(base: *mut c_void, size: MPI_Aint, disp_unit: Disp, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
        // SAFETY: `win` is NULL or points to a writable MPI_Win (the
        // caller's contract).
        let win = unsafe { Out::new(win, "win") };
        crate::capi::ret(comm, NAME, create_common(comm, info, Memory::User(base as usize), size, disp_unit as MPI_Aint, None, win))
    }
}

twins! {
    pub unsafe fn MPI_Win_allocate | MPI_Win_allocate_c(size: MPI_Aint, disp_unit: Disp, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
        // SAFETY: `baseptr` is NULL or the address of the program's `void *`
        // variable, `win` NULL or a writable MPI_Win (the caller's contract).
        let (baseptr, win) = unsafe { (base_out(baseptr), Out::new(win, "win")) };
        crate::capi::ret(comm, NAME, create_common(comm, info, Memory::Allocate, size, disp_unit as MPI_Aint, baseptr, win))
    }
}

twins! {
    pub unsafe fn MPI_Win_allocate_shared | MPI_Win_allocate_shared_c(size: MPI_Aint, disp_unit: Disp, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win) -> c_int {
        // SAFETY: `baseptr` is NULL or the address of the program's `void *`
        // variable, `win` NULL or a writable MPI_Win (the caller's contract).
        let (baseptr, win) = unsafe { (base_out(baseptr), Out::new(win, "win")) };
        crate::capi::ret(comm, NAME, create_common(comm, info, Memory::Shared, size, disp_unit as MPI_Aint, baseptr, win))
    }
}

pub unsafe fn MPI_Win_create_dynamic(info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
    // SAFETY: `win` is NULL or points to a writable MPI_Win (the caller's
    // contract).
    let win = unsafe { Out::new(win, "win") };
    super::ret(comm, "MPI_Win_create_dynamic", create_common(comm, info, Memory::Dynamic, 0, 1, None, win))
}

/// `MPI_Win_shared_query(_c)`: the part of `rank` (`MPI_PROC_NULL`: the
/// first non-empty one); `put_du` writes the displacement unit.
fn shared_query(
    win: MPI_Win,
    rank: c_int,
    mut size: Out<'_, MPI_Aint>,
    baseptr: Option<&mut *mut c_void>,
    put_du: impl FnOnce(usize) -> MpiResult<()>,
) -> MpiResult<()> {
    let p = rt::with(|st| st.wins.get(win)?.shared_part(rank))?;
    let Some(baseptr) = baseptr else {
        bail!(MPI_ERR_ARG, "baseptr is a NULL pointer");
    };
    size.put(p.size as MPI_Aint)?;
    put_du(p.disp_unit)?;
    // An empty part has no memory to point at: NULL, not some address.
    *baseptr = if p.size == 0 { std::ptr::null_mut() } else { p.local.unwrap_or(0) as *mut c_void };
    Ok(())
}

twins! {
    pub unsafe fn MPI_Win_shared_query | MPI_Win_shared_query_c(win: MPI_Win, rank: c_int, size: *mut MPI_Aint, disp_unit: *mut Disp, baseptr: *mut c_void) -> c_int {
        // SAFETY: `size` and `disp_unit` are NULL or writable, `baseptr` NULL
        // or the address of the program's `void *` variable (the caller's
        // contract).
        let (size, mut disp_unit, baseptr) = unsafe { (Out::new(size, "size"), Out::new(disp_unit, "disp_unit"), base_out(baseptr)) };
        ret_win(win, NAME, shared_query(win, rank, size, baseptr, |d| disp_unit.put(d as Disp)))
    }
}

pub unsafe fn MPI_Win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) -> c_int {
    let r = rt::with(|st| st.wins.get_mut(win)?.attach(base as usize, size));
    ret_win(win, "MPI_Win_attach", r)
}

pub unsafe fn MPI_Win_detach(win: MPI_Win, base: *const c_void) -> c_int {
    let r = rt::with(|st| st.wins.get_mut(win)?.detach(base as usize));
    ret_win(win, "MPI_Win_detach", r)
}

pub unsafe fn MPI_Win_free(win: *mut MPI_Win) -> c_int {
    // SAFETY: `win` is NULL or points to an MPI_Win the call may read and
    // write (the caller's contract, an INOUT handle).
    let win = unsafe { win.as_mut() };
    let h = win.as_deref().copied().unwrap_or(MPI_WIN_NULL);
    let r = (|| {
        let Some(win) = win else {
            bail!(MPI_ERR_ARG, "win is a NULL pointer");
        };
        sync::quiesce_for_free(h)?;
        crate::caching::win_attrs_free(h)?;
        rt::with(|st| st.wins.remove(h).map(drop))?;
        *win = MPI_WIN_NULL;
        Ok(())
    })();
    ret_win(h, "MPI_Win_free", r)
}

// ----- names, info, groups -----------------

pub unsafe fn MPI_Win_get_group(win: MPI_Win, group: *mut MPI_Group) -> c_int {
    // SAFETY: `group` is NULL or a writable handle (the caller's contract).
    let mut group = unsafe { Out::new(group, "group") };
    let r = rt::with(|st| {
        let g = st.wins.get(win)?.group.clone();
        if group.is_null() {
            bail!(MPI_ERR_ARG, "group is a NULL pointer");
        }
        let h = st.comms.groups.insert(g);
        group.put(h)
    });
    ret_win(win, "MPI_Win_get_group", r)
}

pub unsafe fn MPI_Win_set_info(win: MPI_Win, info: MPI_Info) -> c_int {
    let r = rt::with(|st| {
        let pairs = crate::rt::info::hints(info)?;
        let w = st.wins.get_mut(win)?;
        for (k, v) in pairs {
            crate::rt::info::set(&mut w.hints, &k, &v);
        }
        Ok(())
    });
    ret_win(win, "MPI_Win_set_info", r)
}

pub unsafe fn MPI_Win_get_info(win: MPI_Win, info_used: *mut MPI_Info) -> c_int {
    // SAFETY: `info_used` is NULL or a writable handle (the caller's contract).
    let mut info_used = unsafe { Out::new(info_used, "info_used") };
    let r = rt::with(|st| {
        let hints = rt::win::info_used(&st.wins.get(win)?.hints);
        if info_used.is_null() {
            bail!(MPI_ERR_ARG, "info_used is a NULL pointer");
        }
        let h = crate::rt::info::insert(hints);
        info_used.put(h)
    });
    ret_win(win, "MPI_Win_get_info", r)
}

pub unsafe fn MPI_Win_set_name(win: MPI_Win, win_name: *const c_char) -> c_int {
    // SAFETY: `win_name` is NULL or a NUL-terminated string (the caller's
    // contract).
    let win_name = unsafe { opt_cstr(win_name) };
    let r = rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        let Some(win_name) = win_name else {
            bail!(MPI_ERR_ARG, "win_name is a NULL pointer");
        };
        let name = win_name.to_string_lossy();
        w.name = name.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
        Ok(())
    });
    ret_win(win, "MPI_Win_set_name", r)
}

pub unsafe fn MPI_Win_get_name(win: MPI_Win, win_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    // SAFETY: `resultlen` is NULL or a writable int (the caller's contract).
    let mut resultlen = unsafe { Out::new(resultlen, "resultlen") };
    let r = rt::with(|st| {
        // MPI 4.1: the null handle's name is its constant's.
        let name = if win == MPI_WIN_NULL { "MPI_WIN_NULL" } else { st.wins.get(win)?.name.as_str() };
        if win_name.is_null() {
            bail!(MPI_ERR_ARG, "win_name is a NULL pointer");
        }
        // SAFETY: not NULL, so a buffer of MPI_MAX_OBJECT_NAME writable
        // chars (the caller's contract).
        let n = unsafe { put_str(win_name, MPI_MAX_OBJECT_NAME as usize, name) };
        resultlen.put(n)
    });
    ret_win(win, "MPI_Win_get_name", r)
}

// ----- RMA operations ---------------------------------------------------

/// Runs `o` (no request).
fn rma(win: MPI_Win, o: RmaOp) -> MpiResult<()> {
    rt::win::ops::start(win, o, false).map(drop)
}

/// Runs `o` and writes the request of an `MPI_R*` call (NULL refused).
fn rma_req(win: MPI_Win, o: RmaOp, mut request: Out<'_, MPI_Request>) -> MpiResult<()> {
    if request.is_null() {
        bail!(MPI_ERR_ARG, "request is a NULL pointer");
    }
    let i = rt::win::ops::start(win, o, true)?.expect("a request was asked for");
    request.put(ReqTable::handle(i))
}

fn target(rank: c_int, disp: MPI_Aint, count: MPI_Count, datatype: MPI_Datatype) -> RmaTarget {
    RmaTarget { rank, disp, count, datatype }
}

twins! {
    pub unsafe fn MPI_Put | MPI_Put_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, win: MPI_Win) -> c_int {
        // SAFETY: `origin_addr` holds `origin_count` elements of
        // `origin_datatype` until the epoch completes the operation (the
        // caller's contract, as UserBuf::new needs).
        let origin = unsafe { UserBuf::new(origin_addr, origin_count as MPI_Count, origin_datatype) };
        let to = target(target_rank, target_disp, target_count as MPI_Count, target_datatype);
        ret_win(win, NAME, rma(win, RmaOp::put(origin, to)))
    }
}

twins! {
    pub unsafe fn MPI_Get | MPI_Get_c(origin_addr: *mut c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, win: MPI_Win) -> c_int {
        // SAFETY: `origin_addr` holds `origin_count` elements of
        // `origin_datatype` until the epoch completes the operation (the
        // caller's contract, as UserBuf::new needs).
        let origin = unsafe { UserBuf::new(origin_addr, origin_count as MPI_Count, origin_datatype) };
        let to = target(target_rank, target_disp, target_count as MPI_Count, target_datatype);
        ret_win(win, NAME, rma(win, RmaOp::get(origin, to)))
    }
}

twins! {
    pub unsafe fn MPI_Accumulate | MPI_Accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win) -> c_int {
        // SAFETY: `origin_addr` holds `origin_count` elements of
        // `origin_datatype` until the epoch completes the operation (the
        // caller's contract, as UserBuf::new needs).
        let origin = unsafe { UserBuf::new(origin_addr, origin_count as MPI_Count, origin_datatype) };
        let to = target(target_rank, target_disp, target_count as MPI_Count, target_datatype);
        ret_win(win, NAME, rma(win, RmaOp::accumulate(origin, to, op)))
    }
}

twins! {
    pub unsafe fn MPI_Get_accumulate | MPI_Get_accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, result_addr: *mut c_void, result_count: Count, result_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win) -> c_int {
        // SAFETY: `origin_addr` holds `origin_count` elements of
        // `origin_datatype`, `result_addr` has room for `result_count` of
        // `result_datatype`, until the epoch completes the operation (the
        // caller's contract, as UserBuf::new needs).
        let (origin, result) = unsafe {
            (UserBuf::new(origin_addr, origin_count as MPI_Count, origin_datatype), UserBuf::new(result_addr, result_count as MPI_Count, result_datatype))
        };
        let to = target(target_rank, target_disp, target_count as MPI_Count, target_datatype);
        ret_win(win, NAME, rma(win, RmaOp::get_accumulate(origin, result, to, op)))
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
    // SAFETY: `origin_addr` holds one element of `datatype` and
    // `result_addr` has room for one, until the epoch completes the
    // operation (the caller's contract, as UserBuf::new needs).
    let (origin, result) = unsafe { (UserBuf::new(origin_addr, 1, datatype), UserBuf::new(result_addr, 1, datatype)) };
    let o = RmaOp::get_accumulate(origin, result, target(target_rank, target_disp, 1, datatype), op);
    ret_win(win, "MPI_Fetch_and_op", rma(win, o))
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
    // SAFETY: `origin_addr` and `compare_addr` hold one element of
    // `datatype` and `result_addr` has room for one, until the epoch
    // completes the operation (the caller's contract, as UserBuf::new needs).
    let (origin, compare, result) = unsafe {
        (
            UserBuf::new(origin_addr, 1, datatype),
            UserBuf::new(compare_addr, 1, datatype),
            UserBuf::new(result_addr, 1, datatype),
        )
    };
    let o = RmaOp::compare_and_swap(origin, compare, result, target(target_rank, target_disp, 1, datatype));
    ret_win(win, "MPI_Compare_and_swap", rma(win, o))
}

twins! {
    pub unsafe fn MPI_Rput | MPI_Rput_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, win: MPI_Win, request: *mut MPI_Request) -> c_int {
        // SAFETY: `origin_addr` holds `origin_count` elements of
        // `origin_datatype` until the epoch completes the operation (the
        // caller's contract, as UserBuf::new needs).
        let origin = unsafe { UserBuf::new(origin_addr, origin_count as MPI_Count, origin_datatype) };
        let to = target(target_rank, target_disp, target_count as MPI_Count, target_datatype);
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        ret_win(win, NAME, rma_req(win, RmaOp::put(origin, to), request))
    }
}

twins! {
    pub unsafe fn MPI_Rget | MPI_Rget_c(origin_addr: *mut c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, win: MPI_Win, request: *mut MPI_Request) -> c_int {
        // SAFETY: `origin_addr` holds `origin_count` elements of
        // `origin_datatype` until the epoch completes the operation (the
        // caller's contract, as UserBuf::new needs).
        let origin = unsafe { UserBuf::new(origin_addr, origin_count as MPI_Count, origin_datatype) };
        let to = target(target_rank, target_disp, target_count as MPI_Count, target_datatype);
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        ret_win(win, NAME, rma_req(win, RmaOp::get(origin, to), request))
    }
}

twins! {
    pub unsafe fn MPI_Raccumulate | MPI_Raccumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win, request: *mut MPI_Request) -> c_int {
        // SAFETY: `origin_addr` holds `origin_count` elements of
        // `origin_datatype` until the epoch completes the operation (the
        // caller's contract, as UserBuf::new needs).
        let origin = unsafe { UserBuf::new(origin_addr, origin_count as MPI_Count, origin_datatype) };
        let to = target(target_rank, target_disp, target_count as MPI_Count, target_datatype);
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        ret_win(win, NAME, rma_req(win, RmaOp::accumulate(origin, to, op), request))
    }
}

twins! {
    pub unsafe fn MPI_Rget_accumulate | MPI_Rget_accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype, result_addr: *mut c_void, result_count: Count, result_datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, target_count: Count, target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win, request: *mut MPI_Request) -> c_int {
        // SAFETY: `origin_addr` holds `origin_count` elements of
        // `origin_datatype`, `result_addr` has room for `result_count` of
        // `result_datatype`, until the epoch completes the operation (the
        // caller's contract, as UserBuf::new needs).
        let (origin, result) = unsafe {
            (UserBuf::new(origin_addr, origin_count as MPI_Count, origin_datatype), UserBuf::new(result_addr, result_count as MPI_Count, result_datatype))
        };
        let to = target(target_rank, target_disp, target_count as MPI_Count, target_datatype);
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        ret_win(win, NAME, rma_req(win, RmaOp::get_accumulate(origin, result, to, op), request))
    }
}

// ----- synchronization -------------------------------------------------

pub unsafe fn MPI_Win_fence(assert: c_int, win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_fence", sync::fence(assert, win))
}

pub unsafe fn MPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_post", sync::post(group, assert, win))
}

pub unsafe fn MPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_start", sync::start(group, assert, win))
}

pub unsafe fn MPI_Win_complete(win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_complete", sync::complete(win))
}

pub unsafe fn MPI_Win_wait(win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_wait", sync::wait(win))
}

pub unsafe fn MPI_Win_test(win: MPI_Win, flag: *mut c_int) -> c_int {
    // SAFETY: `flag` is NULL or a writable int (the caller's contract).
    let mut flag = unsafe { Out::new(flag, "flag") };
    let r = sync::test(win).and_then(|done| flag.put(done as c_int));
    ret_win(win, "MPI_Win_test", r)
}

pub unsafe fn MPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_lock", sync::lock(lock_type, rank, assert, win))
}

pub unsafe fn MPI_Win_unlock(rank: c_int, win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_unlock", sync::unlock(rank, win))
}

pub unsafe fn MPI_Win_lock_all(assert: c_int, win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_lock_all", sync::lock_all(assert, win))
}

pub unsafe fn MPI_Win_unlock_all(win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_unlock_all", sync::unlock_all(win))
}

pub unsafe fn MPI_Win_flush(rank: c_int, win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_flush", sync::flush(win, Some(rank), false))
}

pub unsafe fn MPI_Win_flush_all(win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_flush_all", sync::flush(win, None, false))
}

pub unsafe fn MPI_Win_flush_local(rank: c_int, win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_flush_local", sync::flush(win, Some(rank), true))
}

pub unsafe fn MPI_Win_flush_local_all(win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_flush_local_all", sync::flush(win, None, true))
}

pub unsafe fn MPI_Win_sync(win: MPI_Win) -> c_int {
    ret_win(win, "MPI_Win_sync", sync::sync(win))
}
