//! Completion: `Wait`/`Test` and their any/all/some forms, cancel, free,
//! persistent start; generalized requests.
//!
//! A generalized request's callbacks (`query_fn`, `free_fn`, `cancel_fn`)
//! are the program's code and may call MPI (`MPI_Status_set_elements` in a
//! query is the common case), so they never run under the runtime's lock:
//! a completion call finishes the request under the lock like any other,
//! takes its callbacks out ([`finish_handle`] returns them with where its
//! status goes) and runs them after the lock is released.

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::p2p::start_persistent;
use super::{out_array, put_status, raise, ret, status_mut, statuses_mut, Out};
use crate::bail;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::p2p::{empty_status, Greq, GreqCancelFn, GreqFreeFn, GreqQueryFn, Kind, Request};
use crate::rt::{self, State};

/// Takes the result of completed request `i`: its status and error. A
/// non-persistent request is released; a persistent one becomes inactive.
pub(crate) fn finish_req(st: &mut State, i: u32) -> (MPI_Status, c_int) {
    let r = st.reqs.get(i);
    if r.persist.is_some() {
        if !r.active {
            return (empty_status(), MPI_SUCCESS);
        }
        r.active = false;
        let out = (r.status, r.err);
        r.kind = Kind::Null;
        if r.freed {
            st.reqs.release(i);
        }
        return out;
    }
    let mut s = r.status;
    let err = r.err;
    s.MPI_ERROR = err;
    st.reqs.release(i);
    (s, err)
}

/// The error a completed receive reports, if any.
pub(crate) fn status_error(err: c_int, s: &MPI_Status) -> MpiResult<()> {
    match err {
        MPI_SUCCESS => Ok(()),
        MPI_ERR_TRUNCATE => Err(MpiError::new(
            err,
            format!(
                "message from rank {} with tag {} is longer than the receive buffer ({} bytes received)",
                s.MPI_SOURCE,
                s.MPI_TAG,
                s.byte_count()
            ),
        )),
        e => Err(MpiError::new(e, "the operation failed")),
    }
}

/// Waits for request `i` (not yet done), then reports like `MPI_Wait`.
pub(crate) fn complete_blocking(comm: MPI_Comm, name: &str, i: u32, status: *mut MPI_Status) -> c_int {
    let (s, err) = match rt::block_on(|st| st.reqs.get(i).done.then(|| finish_req(st, i))) {
        Ok(x) => x,
        Err(e) => return raise(comm, name, e),
    };
    // SAFETY: callers pass the `status` argument of their own C caller (or
    // NULL), which the standard makes NULL, MPI_STATUS_IGNORE or writable.
    unsafe { put_status(status, &s) };
    ret(comm, name, status_error(err, &s))
}

/// Slot of a request handle, `None` for `MPI_REQUEST_NULL` or an inactive
/// persistent request (both count as "null" for the completion calls).
fn slot(st: &mut State, h: MPI_Request) -> MpiResult<Option<u32>> {
    if h == MPI_REQUEST_NULL {
        return Ok(None);
    }
    let i = st.reqs.index(h)?;
    let r = st.reqs.get(i);
    if r.persist.is_some() && !r.active {
        return Ok(None);
    }
    Ok(Some(i))
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

/// Slots of the request handles `hs` (see [`slot`]).
fn slots(st: &mut State, hs: &[MPI_Request]) -> MpiResult<Vec<Option<u32>>> {
    hs.iter().map(|&h| slot(st, h)).collect()
}

/// Slots of the `count` handles at `reqs`, for the Wait family.
///
/// # Safety
/// As for [`handles`], during the call.
unsafe fn wait_slots(count: c_int, reqs: *mut MPI_Request) -> MpiResult<Vec<Option<u32>>> {
    // SAFETY: this function's contract; the slice ends with the call.
    rt::with(|st| slots(st, unsafe { handles(count, reqs) }?))
}

/// Finishes slot `i` held in `*h`: status out, handle nulled if released.
/// For a generalized request, also its callbacks, which the caller runs
/// once the lock is released (see [`greq_done`]); its status is theirs.
fn finish_handle(st: &mut State, h: &mut MPI_Request, i: u32) -> (MPI_Status, c_int, MPI_Comm, Option<Greq>) {
    let r = st.reqs.get(i);
    let (comm, persistent) = (r.comm, r.persist.is_some());
    let greq = match r.kind {
        Kind::Greq(g) => Some(g),
        _ => None,
    };
    let (s, e) = finish_req(st, i);
    if !persistent {
        *h = MPI_REQUEST_NULL;
    }
    (s, e, comm, greq)
}

/// Runs the callbacks of a generalized request a completion call finished
/// (outside the lock): `query_fn` on `status` (the caller's, its error field
/// kept, or a scratch one when the caller ignores it), then `free_fn`.
/// Returns the error code: the query's if it failed, else the free's.
fn greq_done(g: &Greq, status: Option<&mut MPI_Status>) -> c_int {
    let q = greq_query(g, status);
    let f = greq_free(g);
    if q != MPI_SUCCESS {
        q
    } else {
        f
    }
}

/// Calls `query_fn` of `g` on `status` (see [`greq_done`]); its code.
fn greq_query(g: &Greq, status: Option<&mut MPI_Status>) -> c_int {
    let mut scratch = empty_status();
    let s = match status {
        Some(s) => {
            // A fresh status, keeping the error field the call must not change.
            *s = MPI_Status { MPI_ERROR: s.MPI_ERROR, ..empty_status() };
            s
        }
        None => &mut scratch,
    };
    match g.query {
        // SAFETY: the program gave `query` to MPI_Grequest_start as its
        // MPI_Grequest_query_function; it gets its extra_state and a status
        // writable during the call, as the standard says, and no lock is held.
        Some(query) => unsafe { query(g.extra, s) },
        None => MPI_SUCCESS,
    }
}

/// The outcome of a callback's error code.
fn greq_result(code: c_int, what: &str) -> MpiResult<()> {
    match code {
        MPI_SUCCESS => Ok(()),
        c => Err(MpiError::new(c, format!("the {what} callback of a generalized request returned error code {c}"))),
    }
}

/// Runs the callbacks of the generalized requests an all/some call finished
/// (`(position in the statuses, callbacks)`), each status getting its
/// callbacks' error code. True if one failed.
///
/// `statuses`: `None` if the program ignores them, else it has every
/// position listed.
fn greqs_done(done: &[(usize, Greq)], mut statuses: Option<&mut [MPI_Status]>) -> bool {
    let mut failed = false;
    for (k, g) in done {
        let code = greq_done(g, statuses.as_deref_mut().map(|s| &mut s[*k]));
        if let Some(s) = statuses.as_deref_mut() {
            s[*k].MPI_ERROR = code;
        }
        failed |= code != MPI_SUCCESS;
    }
    failed
}

pub unsafe fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    // SAFETY: `request` is NULL or the program's handle, which the call may
    // read and write (the standard's contract for an INOUT handle).
    let Some(request) = (unsafe { request.as_mut() }) else {
        return raise(MPI_COMM_WORLD, "MPI_Wait", MpiError::new(MPI_ERR_ARG, "request is a NULL pointer"));
    };
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
    // caller's contract).
    let status = unsafe { status_mut(status) };
    // One pass under the lock: find the slot; if it is already complete,
    // finish it at once, else wait and finish under the same lock.
    let mut slot_of = None;
    let r = rt::block_on(|st| {
        let i = match slot_of {
            Some(i) => i,
            None => match slot(st, *request) {
                Err(e) => return Some(Err(e)),
                Ok(None) => return Some(Ok(None)),
                Ok(Some(i)) => {
                    slot_of = Some(i);
                    i
                }
            },
        };
        st.reqs.get(i).done.then(|| Ok(Some(finish_handle(st, &mut *request, i))))
    });
    match r {
        Err(e) | Ok(Err(e)) => raise(MPI_COMM_WORLD, "MPI_Wait", e),
        Ok(Ok(None)) => {
            if let Some(o) = status {
                *o = empty_status();
            }
            MPI_SUCCESS
        }
        Ok(Ok(Some((_, _, comm, g @ Some(_))))) => ret(comm, "MPI_Wait", after_greq(Ok(()), g, status)),
        Ok(Ok(Some((s, err, comm, None)))) => {
            if let Some(o) = status {
                *o = s;
            }
            ret(comm, "MPI_Wait", status_error(err, &s))
        }
    }
}

pub unsafe fn MPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: `request` is NULL or the program's INOUT handle, `flag` NULL or
    // a writable int, `status` NULL, MPI_STATUS_IGNORE or a writable status
    // (the caller's contract).
    let (request, mut flag, mut status) = unsafe { (request.as_mut(), Out::new(flag, "flag"), status_mut(status)) };
    let mut comm = MPI_COMM_WORLD;
    let mut greq = None;
    let r = rt::with(|st| {
        let Some(request) = request else {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        };
        let Some(i) = slot(st, *request)? else {
            if let Some(o) = status.as_deref_mut() {
                *o = empty_status();
            }
            return flag.put(1);
        };
        if !st.reqs.get(i).done {
            st.progress();
        }
        if !st.reqs.get(i).done {
            return flag.put(0);
        }
        let (s, err, c, g) = finish_handle(st, request, i);
        comm = c;
        flag.put(1)?;
        if g.is_some() {
            greq = g;
            return Ok(());
        }
        if let Some(o) = status.as_deref_mut() {
            *o = s;
        }
        status_error(err, &s)
    });
    ret(comm, "MPI_Test", after_greq(r, greq, status))
}

pub unsafe fn MPI_Request_get_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: `flag` is NULL or a writable int, `status` NULL,
    // MPI_STATUS_IGNORE or a writable status (the caller's contract).
    let (mut flag, mut status) = unsafe { (Out::new(flag, "flag"), status_mut(status)) };
    let mut greq = None;
    let r = rt::with(|st| {
        let Some(i) = slot(st, request)? else {
            if let Some(o) = status.as_deref_mut() {
                *o = empty_status();
            }
            return flag.put(1);
        };
        if !st.reqs.get(i).done {
            st.progress();
        }
        let r = st.reqs.get(i);
        if let (true, Kind::Greq(g)) = (r.done, &r.kind) {
            // Its query (only: the request stays) sets the status.
            greq = Some(*g);
        } else if r.done {
            let mut s = r.status;
            s.MPI_ERROR = r.err;
            if let Some(o) = status.as_deref_mut() {
                *o = s;
            }
        }
        flag.put(r.done as c_int)
    });
    let r = match greq {
        Some(g) => r.and(greq_result(greq_query(&g, status), "query")),
        None => r,
    };
    ret(MPI_COMM_WORLD, "MPI_Request_get_status", r)
}

/// Completes everything done in `hs`; returns (any error, first erroneous
/// comm, the generalized requests among them for [`greqs_done`]).
fn finish_all_done(
    st: &mut State,
    hs: &mut [MPI_Request],
    slots: &[Option<u32>],
    mut statuses: Option<&mut [MPI_Status]>,
) -> (bool, MPI_Comm, Vec<(usize, Greq)>) {
    let mut any_err = false;
    let mut comm = MPI_COMM_WORLD;
    let mut greqs = Vec::new();
    for (k, h) in hs.iter_mut().enumerate() {
        let s = match slots[k] {
            None => empty_status(),
            Some(i) => {
                let (s, e, c, g) = finish_handle(st, h, i);
                if e != MPI_SUCCESS && !any_err {
                    any_err = true;
                    comm = c;
                }
                if let Some(g) = g {
                    greqs.push((k, g));
                    continue;
                }
                s
            }
        };
        if let Some(out) = statuses.as_deref_mut() {
            out[k] = s;
        }
    }
    (any_err, comm, greqs)
}

pub unsafe fn MPI_Waitall(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: `array_of_requests` is NULL or `count` handles the call may
    // read and write (the caller's contract); the slice ends with the call.
    let slots = match unsafe { wait_slots(count, array_of_requests) } {
        Ok(s) => s,
        Err(e) => return raise(MPI_COMM_WORLD, "MPI_Waitall", e),
    };
    if let Err(e) = rt::wait_until(|st| slots.iter().flatten().all(|&i| st.reqs.get(i).done)) {
        return raise(MPI_COMM_WORLD, "MPI_Waitall", e);
    }
    // SAFETY: `array_of_statuses` is NULL, MPI_STATUSES_IGNORE or `count`
    // writable statuses (the caller's contract; count >= 0 was checked).
    let mut statuses = unsafe { statuses_mut(array_of_statuses, count as usize) };
    let (err, comm, greqs) = rt::with(|st| {
        // SAFETY: as for `wait_slots` above.
        let hs = unsafe { handles(count, array_of_requests) }?;
        Ok(finish_all_done(st, hs, &slots, statuses.as_deref_mut()))
    })
    .expect("running");
    if greqs_done(&greqs, statuses) | err {
        return raise(comm, "MPI_Waitall", MpiError::new(MPI_ERR_IN_STATUS, "a request failed; see the statuses"));
    }
    MPI_SUCCESS
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
    // contract; a negative count, an error below, takes none).
    let (hs, mut flag, mut statuses) = unsafe {
        (
            handles(count, array_of_requests),
            Out::new(flag, "flag"),
            statuses_mut(array_of_statuses, count.max(0) as usize),
        )
    };
    let mut comm = MPI_COMM_WORLD;
    let mut greqs = Vec::new();
    let r = rt::with(|st| {
        let hs = hs?;
        let slots = slots(st, hs)?;
        let all = |st: &mut State| slots.iter().flatten().all(|&i| st.reqs.get(i).done);
        if !all(st) {
            st.progress();
        }
        if !all(st) {
            return flag.put(0);
        }
        let (err, c, g) = finish_all_done(st, hs, &slots, statuses.as_deref_mut());
        greqs = g;
        flag.put(1)?;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    ret(comm, "MPI_Testall", in_status(r, greqs_done(&greqs, statuses)))
}

/// Finishes the first done request among `slots`; writes index and status
/// (a generalized request's callbacks go to `greq`, for the caller).
fn any_done(
    st: &mut State,
    hs: &mut [MPI_Request],
    slots: &[Option<u32>],
    index: &mut Out<c_int>,
    status: Option<&mut MPI_Status>,
    greq: &mut Option<Greq>,
) -> MpiResult<Option<MPI_Comm>> {
    for (k, s) in slots.iter().enumerate() {
        if let Some(i) = *s {
            if st.reqs.get(i).done {
                let (s, e, c, g) = finish_handle(st, &mut hs[k], i);
                index.put(k as c_int)?;
                if g.is_some() {
                    *greq = g;
                    return Ok(Some(c));
                }
                if let Some(o) = status {
                    *o = s;
                }
                status_error(e, &s).map_err(|mut err| {
                    err.msg = format!("request {k}: {}", err.msg);
                    err
                })?;
                return Ok(Some(c));
            }
        }
    }
    Ok(None)
}

pub unsafe fn MPI_Waitany(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: `index` is NULL or a writable int, `status` NULL,
    // MPI_STATUS_IGNORE or a writable status (the caller's contract).
    let (mut index, mut status) = unsafe { (Out::new(index, "index"), status_mut(status)) };
    // SAFETY: `array_of_requests` is NULL or `count` handles the call may
    // read and write (the caller's contract); the slice ends with the call.
    let slots = match unsafe { wait_slots(count, array_of_requests) } {
        Ok(s) => s,
        Err(e) => return raise(MPI_COMM_WORLD, "MPI_Waitany", e),
    };
    if slots.iter().all(Option::is_none) {
        if let Some(o) = status {
            *o = empty_status();
        }
        return ret(MPI_COMM_WORLD, "MPI_Waitany", index.put(MPI_UNDEFINED));
    }
    if let Err(e) = rt::wait_until(|st| slots.iter().flatten().any(|&i| st.reqs.get(i).done)) {
        return raise(MPI_COMM_WORLD, "MPI_Waitany", e);
    }
    let mut comm = MPI_COMM_WORLD;
    let mut greq = None;
    let r = rt::with(|st| {
        // SAFETY: as for `wait_slots` above.
        let hs = unsafe { handles(count, array_of_requests) }?;
        let i = *slots.iter().flatten().find(|&&i| st.reqs.get(i).done).unwrap();
        comm = st.reqs.get(i).comm;
        any_done(st, hs, &slots, &mut index, status.as_deref_mut(), &mut greq).map(|_| ())
    });
    ret(comm, "MPI_Waitany", after_greq(r, greq, status))
}

pub unsafe fn MPI_Testany(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: `array_of_requests` is NULL or `count` handles the call may
    // read and write, `index` and `flag` NULL or writable ints, `status`
    // NULL, MPI_STATUS_IGNORE or a writable status (the caller's contract).
    let (hs, mut index, mut flag, mut status) = unsafe {
        (handles(count, array_of_requests), Out::new(index, "index"), Out::new(flag, "flag"), status_mut(status))
    };
    let mut comm = MPI_COMM_WORLD;
    let mut greq = None;
    let r = rt::with(|st| {
        let hs = hs?;
        let slots = slots(st, hs)?;
        if slots.iter().all(Option::is_none) {
            if let Some(o) = status.as_deref_mut() {
                *o = empty_status();
            }
            index.put(MPI_UNDEFINED)?;
            return flag.put(1);
        }
        let any = |st: &mut State| slots.iter().flatten().any(|&i| st.reqs.get(i).done);
        if !any(st) {
            st.progress();
        }
        if !any(st) {
            index.put(MPI_UNDEFINED)?;
            return flag.put(0);
        }
        flag.put(1)?;
        let i = *slots.iter().flatten().find(|&&i| st.reqs.get(i).done).unwrap();
        comm = st.reqs.get(i).comm;
        any_done(st, hs, &slots, &mut index, status.as_deref_mut(), &mut greq).map(|_| ())
    });
    ret(comm, "MPI_Testany", after_greq(r, greq, status))
}

/// Finishes every done request; fills indices/statuses; returns outcount.
///
/// `indices` and `statuses` have an entry per request (`None`: NULL, or
/// statuses ignored).
fn some_done(
    st: &mut State,
    hs: &mut [MPI_Request],
    slots: &[Option<u32>],
    mut indices: Option<&mut [c_int]>,
    mut statuses: Option<&mut [MPI_Status]>,
    greqs: &mut Vec<(usize, Greq)>,
) -> MpiResult<(c_int, bool, MPI_Comm)> {
    let mut n = 0usize;
    let mut err = false;
    let mut comm = MPI_COMM_WORLD;
    for (k, s) in slots.iter().enumerate() {
        let Some(i) = *s else { continue };
        if !st.reqs.get(i).done {
            continue;
        }
        let (s, e, c, g) = finish_handle(st, &mut hs[k], i);
        if e != MPI_SUCCESS && !err {
            err = true;
            comm = c;
        }
        let Some(indices) = indices.as_deref_mut() else {
            bail!(MPI_ERR_ARG, "array_of_indices is a NULL pointer");
        };
        indices[n] = k as c_int;
        match (g, statuses.as_deref_mut()) {
            (Some(g), _) => greqs.push((n, g)),
            (None, Some(out)) => out[n] = s,
            (None, None) => {}
        }
        n += 1;
    }
    Ok((n as c_int, err, comm))
}

pub unsafe fn MPI_Waitsome(
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: `array_of_requests` is NULL or `incount` handles the call may
    // read and write (the caller's contract); the slice ends with the call.
    let slots = match unsafe { wait_slots(incount, array_of_requests) } {
        Ok(s) => s,
        Err(e) => return raise(MPI_COMM_WORLD, "MPI_Waitsome", e),
    };
    // SAFETY: `outcount` is NULL or a writable int, `array_of_indices` NULL
    // or `incount` writable ints, `array_of_statuses` NULL,
    // MPI_STATUSES_IGNORE or `incount` writable statuses (the caller's
    // contract; incount >= 0 was checked).
    let (mut outcount, indices, mut statuses) = unsafe {
        (
            Out::new(outcount, "outcount"),
            out_array(array_of_indices, incount as usize),
            statuses_mut(array_of_statuses, incount as usize),
        )
    };
    if slots.iter().all(Option::is_none) {
        return ret(MPI_COMM_WORLD, "MPI_Waitsome", outcount.put(MPI_UNDEFINED));
    }
    if let Err(e) = rt::wait_until(|st| slots.iter().flatten().any(|&i| st.reqs.get(i).done)) {
        return raise(MPI_COMM_WORLD, "MPI_Waitsome", e);
    }
    let mut comm = MPI_COMM_WORLD;
    let mut greqs = Vec::new();
    let r = rt::with(|st| {
        // SAFETY: as for `wait_slots` above.
        let hs = unsafe { handles(incount, array_of_requests) }?;
        let (n, err, c) = some_done(st, hs, &slots, indices, statuses.as_deref_mut(), &mut greqs)?;
        outcount.put(n)?;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    ret(comm, "MPI_Waitsome", in_status(r, greqs_done(&greqs, statuses)))
}

pub unsafe fn MPI_Testsome(
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: `array_of_requests` is NULL or `incount` handles the call may
    // read and write, `outcount` NULL or a writable int, `array_of_indices`
    // NULL or `incount` writable ints, `array_of_statuses` NULL,
    // MPI_STATUSES_IGNORE or `incount` writable statuses (the caller's
    // contract; a negative incount, an error below, takes none).
    let (hs, mut outcount, indices, mut statuses) = unsafe {
        (
            handles(incount, array_of_requests),
            Out::new(outcount, "outcount"),
            out_array(array_of_indices, incount.max(0) as usize),
            statuses_mut(array_of_statuses, incount.max(0) as usize),
        )
    };
    let mut comm = MPI_COMM_WORLD;
    let mut greqs = Vec::new();
    let r = rt::with(|st| {
        let hs = hs?;
        let slots = slots(st, hs)?;
        if slots.iter().all(Option::is_none) {
            return outcount.put(MPI_UNDEFINED);
        }
        st.progress();
        let (n, err, c) = some_done(st, hs, &slots, indices, statuses.as_deref_mut(), &mut greqs)?;
        outcount.put(n)?;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    ret(comm, "MPI_Testsome", in_status(r, greqs_done(&greqs, statuses)))
}

pub unsafe fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is NULL or the program's INOUT handle (the caller's
    // contract).
    let request = unsafe { request.as_mut() };
    let mut greq = None;
    let r = rt::with(|st| {
        let Some(request) = request else {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        };
        if *request == MPI_REQUEST_NULL {
            bail!(MPI_ERR_REQUEST, "MPI_REQUEST_NULL cannot be freed");
        }
        let i = st.reqs.index(*request)?;
        let r = st.reqs.get(i);
        if let (true, Kind::Greq(g)) = (r.done, &r.kind) {
            // Complete already: its free_fn runs now (below), else at
            // MPI_Grequest_complete.
            greq = Some(*g);
            st.reqs.release(i);
        } else if r.done || (r.persist.is_some() && !r.active) {
            st.reqs.release(i);
        } else {
            r.freed = true;
            if r.persist.is_some() {
                // An active persistent request is released when it completes.
                r.persist = None;
            }
        }
        *request = MPI_REQUEST_NULL;
        Ok(())
    });
    let r = match greq {
        Some(g) => r.and(greq_result(greq_free(&g), "free")),
        None => r,
    };
    ret(MPI_COMM_WORLD, "MPI_Request_free", r)
}

pub unsafe fn MPI_Cancel(request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is NULL or points to the program's handle (the
    // caller's contract).
    let request = unsafe { request.as_ref() };
    let mut greq = None;
    let r = rt::with(|st| {
        let Some(request) = request else {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        };
        let i = st.reqs.index(*request)?;
        match st.reqs.get(i) {
            Request { kind: Kind::Greq(g), done, .. } => greq = Some((*g, *done)),
            _ => st.engine.cancel(&mut st.reqs, i),
        }
        Ok(())
    });
    let r = match greq {
        // Its cancel_fn, told whether MPI_Grequest_complete was called.
        Some((Greq { cancel: Some(cancel), extra, .. }, done)) => {
            // SAFETY: the program gave `cancel` to MPI_Grequest_start as its
            // MPI_Grequest_cancel_function; it gets its extra_state and the
            // completion flag, as the standard says, and no lock is held.
            r.and(greq_result(unsafe { cancel(extra, done as c_int) }, "cancel"))
        }
        _ => r,
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

/// The outcome of an all/some call whose generalized requests' callbacks
/// ran after it (`greq_failed`: one of them failed).
fn in_status(r: MpiResult<()>, greq_failed: bool) -> MpiResult<()> {
    match r {
        Ok(()) if greq_failed => Err(MpiError::new(MPI_ERR_IN_STATUS, "a request failed; see the statuses")),
        r => r,
    }
}

/// The outcome of a call that completes one request (`r`, under the lock)
/// and may have finished a generalized request `greq`, whose callbacks run
/// now on `status`.
fn after_greq(r: MpiResult<()>, greq: Option<Greq>, status: Option<&mut MPI_Status>) -> MpiResult<()> {
    match greq {
        Some(g) => r.and(greq_result(greq_done(&g, status), "query or free")),
        None => r,
    }
}

/// Calls `free_fn` of a generalized request; its code.
fn greq_free(g: &Greq) -> c_int {
    match g.free {
        // SAFETY: the program gave `free` to MPI_Grequest_start as its
        // MPI_Grequest_free_function; it gets its extra_state, once, as the
        // standard says, and no lock is held.
        Some(free) => unsafe { free(g.extra) },
        None => MPI_SUCCESS,
    }
}

pub unsafe fn MPI_Grequest_start(
    query_fn: *mut std::ffi::c_void,
    free_fn: *mut std::ffi::c_void,
    cancel_fn: *mut std::ffi::c_void,
    extra_state: *mut std::ffi::c_void,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: `request` is NULL or a writable handle (the caller's contract).
    let mut request = unsafe { Out::new(request, "request") };
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        // SAFETY: the program passes C function pointers of the standard's
        // three callback types (or NULL, which becomes None: a function
        // pointer and a data pointer have the same size and representation
        // on the platforms this library builds for).
        let g = unsafe {
            Greq {
                query: std::mem::transmute::<*mut std::ffi::c_void, Option<GreqQueryFn>>(query_fn),
                free: std::mem::transmute::<*mut std::ffi::c_void, Option<GreqFreeFn>>(free_fn),
                cancel: std::mem::transmute::<*mut std::ffi::c_void, Option<GreqCancelFn>>(cancel_fn),
                extra: extra_state,
            }
        };
        let i = st.reqs.alloc(Request::new(Kind::Greq(g), MPI_COMM_WORLD));
        request.put(crate::rt::p2p::ReqTable::handle(i))
    });
    ret(MPI_COMM_WORLD, "MPI_Grequest_start", r)
}

pub unsafe fn MPI_Grequest_complete(request: MPI_Request) -> c_int {
    let mut freed = None;
    let r = rt::with(|st| {
        let i = st.reqs.index(request)?;
        let r = st.reqs.get(i);
        let Kind::Greq(g) = r.kind else {
            bail!(MPI_ERR_REQUEST, "request 0x{:08x} is not a generalized request", request as u32);
        };
        if r.done {
            bail!(MPI_ERR_REQUEST, "MPI_Grequest_complete was already called on request 0x{:08x}", request as u32);
        }
        if r.freed {
            // MPI_Request_free came first: the request goes now, after its
            // free_fn (below).
            freed = Some(g);
            st.reqs.release(i);
        } else {
            r.done = true;
            // A thread may sleep in a Wait on it, with no message to come.
            rt::wake_waiters(st);
        }
        Ok(())
    });
    let r = match freed {
        Some(g) => r.and(greq_result(greq_free(&g), "free")),
        None => r,
    };
    ret(MPI_COMM_WORLD, "MPI_Grequest_complete", r)
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
