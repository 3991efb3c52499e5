//! Completion: `Wait`/`Test` and their any/all/some forms, cancel, free,
//! persistent start; generalized requests (the logic is `rt::req`'s).

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::p2p::start_persistent;
use super::{out_array, out_mut, put, put_status, raise, ret, status_mut, statuses_mut, Out};
use crate::bail;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::p2p::{Greq, GreqCancelFn, GreqFreeFn, GreqQueryFn};
use crate::rt::req::{self, Completion};
pub(crate) use crate::rt::req::{finish_req, status_error};
use crate::rt::{self};

/// Waits for request `i` (not yet done), then reports like `MPI_Wait`.
pub(crate) fn complete_blocking(comm: MPI_Comm, name: &str, i: u32, status: *mut MPI_Status) -> c_int {
    let (s, err) = match req::wait_req(i) {
        Ok(x) => x,
        Err(e) => return raise(comm, name, e),
    };
    // SAFETY: callers pass the `status` argument of their own C caller (or
    // NULL), which the standard makes NULL, MPI_STATUS_IGNORE or writable.
    unsafe { put_status(status, &s) };
    ret(comm, name, status_error(err, &s))
}

/// The `count` request handles at `reqs` (an array argument).
///
/// # Safety
/// `reqs` is NULL or points to `count` handles the caller may read and
/// write, which nothing else accesses during `'a`.
unsafe fn handles<'a>(count: c_int, reqs: *mut MPI_Request) -> MpiResult<&'a mut [MPI_Request]> {
    if count < 0 {
        bail!(MPI_ERR_COUNT, "negative count {count}");
    }
    if count > 0 && reqs.is_null() {
        bail!(MPI_ERR_ARG, "array_of_requests is a NULL pointer");
    }
    if count == 0 {
        return Ok(&mut []);
    }
    // SAFETY: count > 0 and not NULL, so `count` handles of ours (the contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(reqs, count as usize) })
}

/// Ends a completion call `name` that failed before it began (`r`), or
/// that ran (`run`).
fn report<T>(name: &str, r: MpiResult<T>, run: impl FnOnce(T) -> Completion) -> c_int {
    match r {
        Err(e) => raise(MPI_COMM_WORLD, name, e),
        Ok(args) => {
            let (comm, r) = run(args);
            ret(comm, name, r)
        }
    }
}

pub unsafe fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let mut keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: `request` is NULL or the program's handle, which the call may
    // read and write (the standard's contract for an INOUT handle); `status`
    // is NULL, MPI_STATUS_IGNORE or a writable status (the caller's contract).
    let (request, status) = unsafe { (out_mut(request, "request"), status_mut(status)) };
    keep.empty_if(request.as_deref().is_ok_and(|&h| req::idle(&[h])));
    report("MPI_Wait", request, |request| req::wait(request, status))
}

pub unsafe fn MPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let mut keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: `request` is NULL or the program's INOUT handle, `flag` NULL or
    // a writable int, `status` NULL, MPI_STATUS_IGNORE or a writable status
    // (the caller's contract).
    let (request, flag, status) = unsafe { (out_mut(request, "request"), out_mut(flag, "flag"), status_mut(status)) };
    keep.empty_if(request.as_deref().is_ok_and(|&h| req::idle(&[h])));
    report("MPI_Test", request.and_then(|r| Ok((r, flag?))), |(request, flag)| req::test(request, flag, status))
}

pub unsafe fn MPI_Request_get_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let mut keep = unsafe { crate::capi::KeepError::new(status) };
    keep.empty_if(req::idle(&[request]));
    // SAFETY: `flag` is NULL or a writable int, `status` NULL,
    // MPI_STATUS_IGNORE or a writable status (the caller's contract).
    let (flag, status) = unsafe { (out_mut(flag, "flag"), status_mut(status)) };
    let r = flag.and_then(|flag| req::get_status(request, flag, status));
    ret(MPI_COMM_WORLD, "MPI_Request_get_status", r)
}

pub unsafe fn MPI_Waitall(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: `array_of_requests` is NULL or `count` handles the call may
    // read and write, `array_of_statuses` NULL, MPI_STATUSES_IGNORE or
    // `count` writable statuses (the caller's contract; a negative count,
    // an error, takes none).
    let (hs, statuses) =
        unsafe { (handles(count, array_of_requests), statuses_mut(array_of_statuses, count.max(0) as usize)) };
    report("MPI_Waitall", hs, |hs| req::wait_all(hs, statuses))
}

pub unsafe fn MPI_Testall(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    flag: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: `array_of_requests` is NULL or `count` handles the call may
    // read and write, `flag` NULL or a writable int, `array_of_statuses`
    // NULL, MPI_STATUSES_IGNORE or `count` writable statuses (the caller's
    // contract; a negative count, an error, takes none).
    let (hs, flag, statuses) = unsafe {
        (
            handles(count, array_of_requests),
            out_mut(flag, "flag"),
            statuses_mut(array_of_statuses, count.max(0) as usize),
        )
    };
    report("MPI_Testall", hs.and_then(|hs| Ok((hs, flag?))), |(hs, flag)| req::test_all(hs, flag, statuses))
}

pub unsafe fn MPI_Waitany(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let mut keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: `array_of_requests` is NULL or `count` handles the call may
    // read and write, `index` NULL or a writable int, `status` NULL,
    // MPI_STATUS_IGNORE or a writable status (the caller's contract).
    let (hs, index, status) =
        unsafe { (handles(count, array_of_requests), out_mut(index, "index"), status_mut(status)) };
    keep.empty_if(hs.as_deref().is_ok_and(req::idle));
    report("MPI_Waitany", hs.and_then(|hs| Ok((hs, index?))), |(hs, index)| req::wait_any(hs, index, status))
}

pub unsafe fn MPI_Testany(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let mut keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: `array_of_requests` is NULL or `count` handles the call may
    // read and write, `index` and `flag` NULL or writable ints, `status`
    // NULL, MPI_STATUS_IGNORE or a writable status (the caller's contract).
    let (hs, index, flag, status) = unsafe {
        (handles(count, array_of_requests), out_mut(index, "index"), out_mut(flag, "flag"), status_mut(status))
    };
    keep.empty_if(hs.as_deref().is_ok_and(req::idle));
    let args = hs.and_then(|hs| Ok((hs, index?, flag?)));
    report("MPI_Testany", args, |(hs, index, flag)| req::test_any(hs, index, flag, status))
}

/// The request handles with `outcount`, the indices and the statuses.
type SomeArgs<'a> =
    (MpiResult<(&'a mut [MPI_Request], &'a mut c_int)>, Option<&'a mut [c_int]>, Option<&'a mut [MPI_Status]>);

/// The arguments of `MPI_Waitsome`/`MPI_Testsome` as typed values: the
/// request handles with `outcount` (both required), the indices and the
/// statuses (optional).
///
/// # Safety
/// `reqs` is NULL or `incount` handles the call may read and write,
/// `outcount` NULL or a writable int, `indices` NULL or `incount` writable
/// ints, `statuses` NULL, `MPI_STATUSES_IGNORE` or `incount` writable
/// statuses, none accessed by other means during `'a` (a negative
/// `incount`, an error, takes none).
unsafe fn some_args<'a>(
    incount: c_int,
    reqs: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> SomeArgs<'a> {
    let n = incount.max(0) as usize;
    // SAFETY: each pointer as the contract states.
    let (hs, outcount, indices, statuses) = unsafe {
        (handles(incount, reqs), out_mut(outcount, "outcount"), out_array(indices, n), statuses_mut(statuses, n))
    };
    (hs.and_then(|hs| Ok((hs, outcount?))), indices, statuses)
}

pub unsafe fn MPI_Waitsome(
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's contract, as `some_args` states it.
    let (args, indices, statuses) =
        unsafe { some_args(incount, array_of_requests, outcount, array_of_indices, array_of_statuses) };
    report("MPI_Waitsome", args, |(hs, n)| req::wait_some(hs, n, indices, statuses))
}

pub unsafe fn MPI_Testsome(
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the caller's contract, as `some_args` states it.
    let (args, indices, statuses) =
        unsafe { some_args(incount, array_of_requests, outcount, array_of_indices, array_of_statuses) };
    report("MPI_Testsome", args, |(hs, n)| req::test_some(hs, n, indices, statuses))
}

pub unsafe fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is NULL or the program's INOUT handle (the caller's
    // contract).
    let request = unsafe { out_mut(request, "request") };
    ret(MPI_COMM_WORLD, "MPI_Request_free", request.and_then(req::free))
}

pub unsafe fn MPI_Cancel(request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is NULL or points to the program's handle (the
    // caller's contract).
    let request = unsafe { request.as_ref() };
    let r = match request {
        None => Err(MpiError::new(MPI_ERR_ARG, "request is a NULL pointer")),
        Some(&h) => req::cancel(h),
    };
    ret(MPI_COMM_WORLD, "MPI_Cancel", r)
}

pub unsafe fn MPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) -> c_int {
    // SAFETY: `flag` is NULL or a writable int (the caller's contract).
    let mut flag = unsafe { Out::new(flag, "flag") };
    let r = if status.is_null() || status as usize == MPI_STATUS_IGNORE {
        Err(MpiError::new(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE"))
    } else {
        // SAFETY: neither NULL nor MPI_STATUS_IGNORE, so a readable status
        // (the caller's contract).
        let status = unsafe { &*status };
        flag.put(status.cancelled() as c_int)
    };
    ret(MPI_COMM_WORLD, "MPI_Test_cancelled", r)
}

pub unsafe fn MPI_Start(request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is NULL or points to the program's handle (the
    // caller's contract).
    let request = unsafe { request.as_ref() };
    let r = rt::with(|st| {
        let Some(request) = request else {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        };
        let i = st.reqs.index(*request)?;
        start_persistent(st, i)
    });
    ret(MPI_COMM_WORLD, "MPI_Start", r)
}

pub unsafe fn MPI_Startall(count: c_int, array_of_requests: *mut MPI_Request) -> c_int {
    // SAFETY: `array_of_requests` is NULL or `count` handles of the program
    // (the caller's contract).
    let hs = unsafe { handles(count, array_of_requests) };
    let r = rt::with(|st| {
        let hs = hs?;
        for &h in hs.iter() {
            let i = st.reqs.index(h)?;
            start_persistent(st, i)?;
        }
        Ok(())
    });
    ret(MPI_COMM_WORLD, "MPI_Startall", r)
}

pub unsafe fn MPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
    // caller's contract).
    let r = match unsafe { status_mut(status) } {
        None => Err(MpiError::new(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE")),
        Some(status) => {
            status.set_cancelled(flag != 0);
            Ok(())
        }
    };
    ret(MPI_COMM_WORLD, "MPI_Status_set_cancelled", r)
}

/// A status the program gives to read (MPI 4.1's `MPI_Status_get_*`).
///
/// # Safety
/// `status` is NULL, `MPI_STATUS_IGNORE` or a readable status.
unsafe fn status_ref<'a>(status: *const MPI_Status) -> MpiResult<&'a MPI_Status> {
    if status as usize == MPI_STATUS_IGNORE {
        bail!(MPI_ERR_ARG, "status is MPI_STATUS_IGNORE");
    }
    // SAFETY: NULL or a readable status (the contract).
    unsafe { status.as_ref() }.ok_or_else(|| MpiError::new(MPI_ERR_ARG, "status is a NULL pointer"))
}

/// `MPI_Status_get_source/tag/error`: one field of a status.
///
/// # Safety
/// `status` as for [`status_ref`]; `out` is NULL or a writable int.
unsafe fn status_get(name: &str, status: *const MPI_Status, out: *mut c_int, field: fn(&MPI_Status) -> c_int) -> c_int {
    // SAFETY: the contract.
    let (status, mut out) = unsafe { (status_ref(status), Out::new(out, "value")) };
    let r = status.and_then(|s| out.put(field(s)));
    ret(MPI_COMM_WORLD, name, r)
}

/// `MPI_Status_set_source/tag/error`: sets one field of a status.
///
/// # Safety
/// `status` is NULL, `MPI_STATUS_IGNORE` or a writable status.
unsafe fn status_set(name: &str, status: *mut MPI_Status, set: impl FnOnce(&mut MPI_Status)) -> c_int {
    // SAFETY: the contract.
    let r = match unsafe { status_mut(status) } {
        None => Err(MpiError::new(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE")),
        Some(status) => {
            set(status);
            Ok(())
        }
    };
    ret(MPI_COMM_WORLD, name, r)
}

pub unsafe fn MPI_Status_get_source(status: *const MPI_Status, source: *mut c_int) -> c_int {
    // SAFETY: the caller's contract is `status_get`'s.
    unsafe { status_get("MPI_Status_get_source", status, source, |s| s.MPI_SOURCE) }
}

pub unsafe fn MPI_Status_get_tag(status: *const MPI_Status, tag: *mut c_int) -> c_int {
    // SAFETY: the caller's contract is `status_get`'s.
    unsafe { status_get("MPI_Status_get_tag", status, tag, |s| s.MPI_TAG) }
}

pub unsafe fn MPI_Status_get_error(status: *const MPI_Status, err: *mut c_int) -> c_int {
    // SAFETY: the caller's contract is `status_get`'s.
    unsafe { status_get("MPI_Status_get_error", status, err, |s| s.MPI_ERROR) }
}

pub unsafe fn MPI_Status_set_source(status: *mut MPI_Status, source: c_int) -> c_int {
    // SAFETY: the caller's contract is `status_set`'s.
    unsafe { status_set("MPI_Status_set_source", status, |s| s.MPI_SOURCE = source) }
}

pub unsafe fn MPI_Status_set_tag(status: *mut MPI_Status, tag: c_int) -> c_int {
    // SAFETY: the caller's contract is `status_set`'s.
    unsafe { status_set("MPI_Status_set_tag", status, |s| s.MPI_TAG = tag) }
}

pub unsafe fn MPI_Status_set_error(status: *mut MPI_Status, err: c_int) -> c_int {
    // SAFETY: the caller's contract is `status_set`'s.
    unsafe { status_set("MPI_Status_set_error", status, |s| s.MPI_ERROR = err) }
}

pub unsafe fn MPI_Grequest_start(
    query_fn: *mut std::ffi::c_void,
    free_fn: *mut std::ffi::c_void,
    cancel_fn: *mut std::ffi::c_void,
    extra_state: *mut std::ffi::c_void,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: the program passes C function pointers of the standard's
    // three callback types (or NULL, which becomes None: a function pointer
    // and a data pointer have the same size and representation on the
    // platforms this library builds for).
    let g = unsafe {
        Greq {
            query: std::mem::transmute::<*mut std::ffi::c_void, Option<GreqQueryFn>>(query_fn),
            free: std::mem::transmute::<*mut std::ffi::c_void, Option<GreqFreeFn>>(free_fn),
            cancel: std::mem::transmute::<*mut std::ffi::c_void, Option<GreqCancelFn>>(cancel_fn),
            poll: None,
            wait: None,
            extra: extra_state,
        }
    };
    let r = if request.is_null() {
        Err(MpiError::new(MPI_ERR_ARG, "request is a NULL pointer"))
    } else {
        // SAFETY: not NULL, so a writable handle (the caller's contract).
        rt::greq::start(g).and_then(|h| unsafe { put(request, h, "request") })
    };
    ret(MPI_COMM_WORLD, "MPI_Grequest_start", r)
}

pub unsafe fn MPI_Grequest_complete(request: MPI_Request) -> c_int {
    ret(MPI_COMM_WORLD, "MPI_Grequest_complete", req::greq_complete(request))
}

// ----- Fortran statuses -----------------------------------------------------------

/// `MPI_F_STATUS_IGNORE` and friends point here: programs pass them to the
/// conversions below (which refuse them) and compare against them.
static F_IGNORE_TARGET: [c_int; 4] = [0; 4];

/// `extern MPI_Fint *MPI_F_STATUS_IGNORE` of the MPICH ABI.
#[no_mangle]
pub static MPI_F_STATUS_IGNORE: super::SentinelPtr = super::SentinelPtr(&F_IGNORE_TARGET[0]);
/// `extern MPI_Fint *MPI_F_STATUSES_IGNORE` of the MPICH ABI.
#[no_mangle]
pub static MPI_F_STATUSES_IGNORE: super::SentinelPtr = super::SentinelPtr(&F_IGNORE_TARGET[1]);
/// `extern MPI_F08_status *MPI_F08_STATUS_IGNORE` of the MPICH ABI.
#[no_mangle]
pub static MPI_F08_STATUS_IGNORE: super::SentinelPtr = super::SentinelPtr(&F_IGNORE_TARGET[2]);
/// `extern MPI_F08_status *MPI_F08_STATUSES_IGNORE` of the MPICH ABI.
#[no_mangle]
pub static MPI_F08_STATUSES_IGNORE: super::SentinelPtr = super::SentinelPtr(&F_IGNORE_TARGET[3]);

/// A Fortran status (`MPI_F_STATUS_SIZE` integers) or an `mpi_f08`
/// `TYPE(MPI_Status)`: in the MPICH ABI both hold the C status's five
/// fields in its order (`MPI_F_SOURCE` = 2, `MPI_F_TAG` = 3, `MPI_F_ERROR` = 4).
type FStatus = [c_int; 5];

fn f_fields(s: &MPI_Status) -> FStatus {
    [s.count_lo, s.count_hi_and_cancelled, s.MPI_SOURCE, s.MPI_TAG, s.MPI_ERROR]
}

fn c_status(f: &FStatus) -> MPI_Status {
    MPI_Status { count_lo: f[0], count_hi_and_cancelled: f[1], MPI_SOURCE: f[2], MPI_TAG: f[3], MPI_ERROR: f[4] }
}

/// Whether `p` is NULL or one of the ignore constants (C or Fortran): not
/// a status to read or write.
fn no_status(p: *const std::ffi::c_void) -> bool {
    let u = p as usize;
    u <= MPI_STATUS_IGNORE || F_IGNORE_TARGET.as_ptr_range().contains(&(p as *const c_int))
}

/// Reads the status at `from` (`read`) and writes its conversion at `to`,
/// refusing NULL and the ignore constants with `MPI_ERR_ARG`.
///
/// # Safety
/// `from` is NULL, an ignore constant, or readable for an `A`; `to` is NULL,
/// an ignore constant, or writable for a `B`.
unsafe fn convert<A: Copy, B>(name: &str, from: *const A, to: *mut B, read: impl Fn(&A) -> B) -> c_int {
    let r = if no_status(from as *const std::ffi::c_void) {
        Err(MpiError::new(MPI_ERR_ARG, "the status to convert is NULL or a STATUS_IGNORE constant"))
    } else if no_status(to as *const std::ffi::c_void) {
        Err(MpiError::new(MPI_ERR_ARG, "the status to write is NULL or a STATUS_IGNORE constant"))
    } else {
        // SAFETY: neither is NULL or an ignore constant, so by the contract
        // `from` is readable and `to` writable (`A: Copy`: the read is a copy).
        unsafe { to.write(read(&*from)) };
        Ok(())
    };
    ret(MPI_COMM_WORLD, name, r)
}

pub unsafe fn MPI_Status_c2f(c_status_: *const MPI_Status, f_status: *mut c_int) -> c_int {
    // SAFETY: `c_status_` is NULL, an ignore constant or a readable status, `f_status`
    // NULL, an ignore constant or a writable one, of the types the names say
    // (the caller's contract; both Fortran forms are five ints).
    unsafe { convert("MPI_Status_c2f", c_status_, f_status as *mut FStatus, f_fields) }
}

pub unsafe fn MPI_Status_f2c(f_status: *const c_int, c_status_: *mut MPI_Status) -> c_int {
    // SAFETY: `f_status` is NULL, an ignore constant or a readable status, `c_status_`
    // NULL, an ignore constant or a writable one, of the types the names say
    // (the caller's contract; both Fortran forms are five ints).
    unsafe { convert("MPI_Status_f2c", f_status as *const FStatus, c_status_, c_status) }
}

pub unsafe fn MPI_Status_c2f08(c_status_: *const MPI_Status, f08_status: *mut std::ffi::c_void) -> c_int {
    // SAFETY: `c_status_` is NULL, an ignore constant or a readable status, `f08_status`
    // NULL, an ignore constant or a writable one, of the types the names say
    // (the caller's contract; both Fortran forms are five ints).
    unsafe { convert("MPI_Status_c2f08", c_status_, f08_status as *mut FStatus, f_fields) }
}

pub unsafe fn MPI_Status_f082c(f08_status: *const std::ffi::c_void, c_status_: *mut MPI_Status) -> c_int {
    // SAFETY: `f08_status` is NULL, an ignore constant or a readable status, `c_status_`
    // NULL, an ignore constant or a writable one, of the types the names say
    // (the caller's contract; both Fortran forms are five ints).
    unsafe { convert("MPI_Status_f082c", f08_status as *const FStatus, c_status_, c_status) }
}

pub unsafe fn MPI_Status_f082f(f08_status: *const std::ffi::c_void, f_status: *mut c_int) -> c_int {
    // SAFETY: `f08_status` is NULL, an ignore constant or a readable status, `f_status`
    // NULL, an ignore constant or a writable one, of the types the names say
    // (the caller's contract; both Fortran forms are five ints).
    unsafe { convert("MPI_Status_f082f", f08_status as *const FStatus, f_status as *mut FStatus, |f| *f) }
}

pub unsafe fn MPI_Status_f2f08(f_status: *const c_int, f08_status: *mut std::ffi::c_void) -> c_int {
    // SAFETY: `f_status` is NULL, an ignore constant or a readable status, `f08_status`
    // NULL, an ignore constant or a writable one, of the types the names say
    // (the caller's contract; both Fortran forms are five ints).
    unsafe { convert("MPI_Status_f2f08", f_status as *const FStatus, f08_status as *mut FStatus, |f| *f) }
}
