//! MPICH's extensions (`MPIX_`) that programs built against
//! `libmpich.so.12` call: error class removal under MPICH's names,
//! extended generalized requests, GPU support queries, and the
//! fault-tolerance calls (ULFM: revoke, shrink, agree, failure
//! acknowledgement; the logic is `rt::ulfm`'s).

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi_api::abi::*;

use super::{out_mut, put, ret, Out};
use crate::bail;
use crate::rt::error::MpiResult;
use crate::rt::greq::{self, GreqFns};
use crate::rt::p2p::{GreqCancelFn, GreqFreeFn, GreqPollFn, GreqQueryFn, GreqWaitFn, ReqTable};
use crate::rt::ulfm;
use crate::rt::{self};

// ----- error classes ----------------------------------------------------------

pub unsafe fn MPIX_Delete_error_class(errorclass: c_int) -> c_int {
    ret(MPI_COMM_WORLD, "MPIX_Delete_error_class", rt::with(|st| st.comms.errors.remove_class(errorclass)))
}

pub unsafe fn MPIX_Delete_error_code(errorcode: c_int) -> c_int {
    ret(MPI_COMM_WORLD, "MPIX_Delete_error_code", rt::with(|st| st.comms.errors.remove_code(errorcode)))
}

pub unsafe fn MPIX_Delete_error_string(errorcode: c_int) -> c_int {
    ret(MPI_COMM_WORLD, "MPIX_Delete_error_string", rt::with(|st| st.comms.errors.remove_string(errorcode)))
}

// ----- GPU support: none ---------------------------------------------------------

pub unsafe fn MPIX_Query_cuda_support() -> c_int {
    0
}

pub unsafe fn MPIX_Query_hip_support() -> c_int {
    0
}

pub unsafe fn MPIX_Query_ze_support() -> c_int {
    0
}

pub unsafe fn MPIX_GPU_query_support(gpu_type: c_int, is_supported: *mut c_int) -> c_int {
    // SAFETY: `is_supported` is NULL or a writable int (the caller's contract).
    let mut out = unsafe { Out::new(is_supported, "is_supported") };
    let r = match gpu_type {
        MPIX_GPU_SUPPORT_CUDA | MPIX_GPU_SUPPORT_ZE | MPIX_GPU_SUPPORT_HIP => out.put(0),
        t => Err(crate::rt::error::MpiError::new(MPI_ERR_ARG, format!("{t} is not a GPU type (MPIX_GPU_SUPPORT_*)"))),
    };
    ret(MPI_COMM_WORLD, "MPIX_GPU_query_support", r)
}

// ----- extended generalized requests ------------------------------------------

/// The five callbacks of an extended generalized request.
///
/// # Safety
/// Each pointer is NULL or a C function of the type its name says
/// (`MPI_Grequest_query_function` ... `MPIX_Grequest_wait_function`).
unsafe fn fns(
    query: *mut c_void,
    free: *mut c_void,
    cancel: *mut c_void,
    poll: *mut c_void,
    wait: *mut c_void,
) -> GreqFns {
    // SAFETY: NULL becomes None, anything else is a function of the type
    // (the contract); a function pointer and a data pointer have the same
    // size and representation on the platforms this library builds for.
    unsafe {
        GreqFns {
            query: std::mem::transmute::<*mut c_void, Option<GreqQueryFn>>(query),
            free: std::mem::transmute::<*mut c_void, Option<GreqFreeFn>>(free),
            cancel: std::mem::transmute::<*mut c_void, Option<GreqCancelFn>>(cancel),
            poll: std::mem::transmute::<*mut c_void, Option<GreqPollFn>>(poll),
            wait: std::mem::transmute::<*mut c_void, Option<GreqWaitFn>>(wait),
        }
    }
}

/// Returns a new request handle through `request` (NULL: `MPI_ERR_ARG`).
///
/// # Safety
/// `request` is NULL or a writable handle.
unsafe fn give(request: *mut MPI_Request, make: impl FnOnce() -> MpiResult<MPI_Request>) -> MpiResult<()> {
    if request.is_null() {
        bail!(MPI_ERR_ARG, "request is a NULL pointer");
    }
    // SAFETY: not NULL, so writable (the contract).
    make().and_then(|h| unsafe { put(request, h, "request") })
}

pub unsafe fn MPIX_Grequest_start(
    query_fn: *mut c_void,
    free_fn: *mut c_void,
    cancel_fn: *mut c_void,
    poll_fn: *mut c_void,
    wait_fn: *mut c_void,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: the program passes functions of the callback types or NULL.
    let f = unsafe { fns(query_fn, free_fn, cancel_fn, poll_fn, wait_fn) };
    // SAFETY: `request` is NULL or writable (the caller's contract).
    let r = unsafe { give(request, || greq::start(f.with_state(extra_state))) };
    ret(MPI_COMM_WORLD, "MPIX_Grequest_start", r)
}

pub unsafe fn MPIX_Grequest_class_create(
    query_fn: *mut c_void,
    free_fn: *mut c_void,
    cancel_fn: *mut c_void,
    poll_fn: *mut c_void,
    wait_fn: *mut c_void,
    greq_class: *mut c_int,
) -> c_int {
    // SAFETY: the program passes functions of the callback types or NULL.
    let f = unsafe { fns(query_fn, free_fn, cancel_fn, poll_fn, wait_fn) };
    // SAFETY: `greq_class` is NULL or a writable int (the caller's contract).
    let mut out = unsafe { Out::new(greq_class, "greq_class") };
    let r = if out.is_null() { out.put(0) } else { greq::class_create(f).and_then(|c| out.put(c)) };
    ret(MPI_COMM_WORLD, "MPIX_Grequest_class_create", r)
}

pub unsafe fn MPIX_Grequest_class_allocate(
    greq_class: c_int,
    extra_state: *mut c_void,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: `request` is NULL or writable (the caller's contract).
    let r = unsafe { give(request, || greq::class_allocate(greq_class, extra_state)) };
    ret(MPI_COMM_WORLD, "MPIX_Grequest_class_allocate", r)
}

// ----- fault tolerance (ULFM) ----------------------------------------------------

pub unsafe fn MPIX_Comm_revoke(comm: MPI_Comm) -> c_int {
    ret(comm, "MPIX_Comm_revoke", ulfm::revoke(comm))
}

pub unsafe fn MPIX_Comm_is_revoked(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    // SAFETY: `flag` is NULL or a writable int (the caller's contract).
    let mut out = unsafe { Out::new(flag, "flag") };
    ret(comm, "MPIX_Comm_is_revoked", ulfm::is_revoked(comm).and_then(|f| out.put(f as c_int)))
}

pub unsafe fn MPIX_Comm_agree(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    // SAFETY: `flag` is NULL or a readable and writable int (the caller's contract).
    let r = unsafe { out_mut(flag, "flag") }.and_then(|f| ulfm::agree(comm, f));
    ret(comm, "MPIX_Comm_agree", r)
}

/// The flag of an iagree, written by its thread before the request completes.
struct FlagOut(*mut c_int);
// SAFETY: the program keeps `flag` valid until the request completes (the
// rule for nonblocking calls' arguments); only the agreement's thread writes
// it, before completing the request.
unsafe impl Send for FlagOut {}

pub unsafe fn MPIX_Comm_iagree(comm: MPI_Comm, flag: *mut c_int, request: *mut MPI_Request) -> c_int {
    let r = (|| {
        if flag.is_null() {
            bail!(MPI_ERR_ARG, "flag is a NULL pointer");
        }
        let out = FlagOut(flag);
        // SAFETY: not NULL, so readable (the caller's contract).
        let mine = unsafe { flag.read() };
        let deliver = move |f| {
            let out = out;
            // SAFETY: writable until the request completes, after this (see `FlagOut`).
            unsafe { out.0.write(f) }
        };
        // SAFETY: `request` is NULL or writable (the caller's contract).
        unsafe { give(request, || ulfm::iagree(comm, mine, deliver).map(ReqTable::handle)) }
    })();
    ret(comm, "MPIX_Comm_iagree", r)
}

pub unsafe fn MPIX_Comm_shrink(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    // SAFETY: `newcomm` is NULL or a writable handle (the caller's contract).
    let mut out = unsafe { Out::new(newcomm, "newcomm") };
    let r = if out.is_null() { out.put(MPI_COMM_NULL) } else { ulfm::shrink(comm).and_then(|c| out.put(c)) };
    ret(comm, "MPIX_Comm_shrink", r)
}

pub unsafe fn MPIX_Comm_failure_ack(comm: MPI_Comm) -> c_int {
    ret(comm, "MPIX_Comm_failure_ack", ulfm::failure_ack(comm))
}

pub unsafe fn MPIX_Comm_failure_get_acked(comm: MPI_Comm, failedgrp: *mut MPI_Group) -> c_int {
    // SAFETY: `failedgrp` is NULL or a writable handle (the caller's contract).
    let mut out = unsafe { Out::new(failedgrp, "failedgrp") };
    let r =
        if out.is_null() { out.put(MPI_GROUP_NULL) } else { ulfm::failure_get_acked(comm).and_then(|g| out.put(g)) };
    ret(comm, "MPIX_Comm_failure_get_acked", r)
}
