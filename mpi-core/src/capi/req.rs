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
use super::{put, put_status, raise, ret};
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
    // SAFETY: status is NULL, MPI_STATUS_IGNORE, or the caller's status.
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
    Ok(std::slice::from_raw_parts_mut(reqs, count as usize))
}

/// Slots of the request handles `hs` (see [`slot`]).
fn slots(st: &mut State, hs: &[MPI_Request]) -> MpiResult<Vec<Option<u32>>> {
    hs.iter().map(|&h| slot(st, h)).collect()
}

/// Slots of the `count` handles at `reqs`, for the Wait family.
unsafe fn wait_slots(count: c_int, reqs: *mut MPI_Request) -> MpiResult<Vec<Option<u32>>> {
    rt::with(|st| slots(st, handles(count, reqs)?))
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
///
/// # Safety
/// `status` is NULL, `MPI_STATUS_IGNORE` or a writable status; the callbacks
/// are the program's, called as the standard says.
unsafe fn greq_done(g: &Greq, status: *mut MPI_Status) -> c_int {
    let q = greq_query(g, status);
    let f = greq_free(g);
    if q != MPI_SUCCESS {
        q
    } else {
        f
    }
}

/// Calls `query_fn` of `g` on `status` (see [`greq_done`]); its code.
///
/// # Safety
/// As for [`greq_done`].
unsafe fn greq_query(g: &Greq, status: *mut MPI_Status) -> c_int {
    let mut scratch = empty_status();
    let s = if status as usize > MPI_STATUS_IGNORE {
        // A fresh status, keeping the error field the call must not change.
        *status = MPI_Status { MPI_ERROR: (*status).MPI_ERROR, ..empty_status() };
        status
    } else {
        &mut scratch
    };
    match g.query {
        Some(query) => query(g.extra, s),
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
/// # Safety
/// `statuses` is `MPI_STATUSES_IGNORE`/NULL or has every position listed.
unsafe fn greqs_done(done: &[(usize, Greq)], statuses: *mut MPI_Status) -> bool {
    let mut failed = false;
    for (k, g) in done {
        let s = if statuses as usize > MPI_STATUS_IGNORE { statuses.add(*k) } else { std::ptr::null_mut() };
        let code = greq_done(g, s);
        if !s.is_null() {
            (*s).MPI_ERROR = code;
        }
        failed |= code != MPI_SUCCESS;
    }
    failed
}

pub unsafe fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    if request.is_null() {
        return raise(MPI_COMM_WORLD, "MPI_Wait", MpiError::new(MPI_ERR_ARG, "request is a NULL pointer"));
    }
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
            put_status(status, &empty_status());
            MPI_SUCCESS
        }
        Ok(Ok(Some((_, _, comm, g @ Some(_))))) => ret(comm, "MPI_Wait", after_greq(Ok(()), g, status)),
        Ok(Ok(Some((s, err, comm, None)))) => {
            put_status(status, &s);
            ret(comm, "MPI_Wait", status_error(err, &s))
        }
    }
}

pub unsafe fn MPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let mut comm = MPI_COMM_WORLD;
    let mut greq = None;
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let Some(i) = slot(st, *request)? else {
            put_status(status, &empty_status());
            return put(flag, 1, "flag");
        };
        if !st.reqs.get(i).done {
            st.progress();
        }
        if !st.reqs.get(i).done {
            return put(flag, 0, "flag");
        }
        let (s, err, c, g) = finish_handle(st, &mut *request, i);
        comm = c;
        put(flag, 1, "flag")?;
        if g.is_some() {
            greq = g;
            return Ok(());
        }
        put_status(status, &s);
        status_error(err, &s)
    });
    ret(comm, "MPI_Test", after_greq(r, greq, status))
}

pub unsafe fn MPI_Request_get_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let mut greq = None;
    let r = rt::with(|st| {
        let Some(i) = slot(st, request)? else {
            put_status(status, &empty_status());
            return put(flag, 1, "flag");
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
            put_status(status, &s);
        }
        put(flag, r.done as c_int, "flag")
    });
    let r = match greq {
        Some(g) => r.and(greq_result(greq_query(&g, status), "query")),
        None => r,
    };
    ret(MPI_COMM_WORLD, "MPI_Request_get_status", r)
}

/// Completes everything done in `hs`; returns (any error, first erroneous
/// comm, the generalized requests among them for [`greqs_done`]).
unsafe fn finish_all_done(
    st: &mut State,
    hs: &mut [MPI_Request],
    slots: &[Option<u32>],
    statuses: *mut MPI_Status,
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
        if statuses as usize > MPI_STATUS_IGNORE {
            *statuses.add(k) = s;
        }
    }
    (any_err, comm, greqs)
}

pub unsafe fn MPI_Waitall(
    count: c_int,
    array_of_requests: *mut MPI_Request,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    let slots = match wait_slots(count, array_of_requests) {
        Ok(s) => s,
        Err(e) => return raise(MPI_COMM_WORLD, "MPI_Waitall", e),
    };
    if let Err(e) = rt::wait_until(|st| slots.iter().flatten().all(|&i| st.reqs.get(i).done)) {
        return raise(MPI_COMM_WORLD, "MPI_Waitall", e);
    }
    let (err, comm, greqs) = rt::with(|st| {
        let hs = handles(count, array_of_requests)?;
        Ok(finish_all_done(st, hs, &slots, array_of_statuses))
    })
    .expect("running");
    if greqs_done(&greqs, array_of_statuses) | err {
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
    let mut comm = MPI_COMM_WORLD;
    let mut greqs = Vec::new();
    let r = rt::with(|st| {
        let hs = handles(count, array_of_requests)?;
        let slots = slots(st, hs)?;
        let all = |st: &mut State| slots.iter().flatten().all(|&i| st.reqs.get(i).done);
        if !all(st) {
            st.progress();
        }
        if !all(st) {
            return put(flag, 0, "flag");
        }
        let (err, c, g) = finish_all_done(st, hs, &slots, array_of_statuses);
        greqs = g;
        put(flag, 1, "flag")?;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    ret(comm, "MPI_Testall", in_status(r, greqs_done(&greqs, array_of_statuses)))
}

/// Finishes the first done request among `slots`; writes index and status
/// (a generalized request's callbacks go to `greq`, for the caller).
unsafe fn any_done(
    st: &mut State,
    hs: &mut [MPI_Request],
    slots: &[Option<u32>],
    index: *mut c_int,
    status: *mut MPI_Status,
    greq: &mut Option<Greq>,
) -> MpiResult<Option<MPI_Comm>> {
    for (k, s) in slots.iter().enumerate() {
        if let Some(i) = *s {
            if st.reqs.get(i).done {
                let (s, e, c, g) = finish_handle(st, &mut hs[k], i);
                put(index, k as c_int, "index")?;
                if g.is_some() {
                    *greq = g;
                    return Ok(Some(c));
                }
                put_status(status, &s);
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
    let slots = match wait_slots(count, array_of_requests) {
        Ok(s) => s,
        Err(e) => return raise(MPI_COMM_WORLD, "MPI_Waitany", e),
    };
    if slots.iter().all(Option::is_none) {
        put_status(status, &empty_status());
        return ret(MPI_COMM_WORLD, "MPI_Waitany", put(index, MPI_UNDEFINED, "index"));
    }
    if let Err(e) = rt::wait_until(|st| slots.iter().flatten().any(|&i| st.reqs.get(i).done)) {
        return raise(MPI_COMM_WORLD, "MPI_Waitany", e);
    }
    let mut comm = MPI_COMM_WORLD;
    let mut greq = None;
    let r = rt::with(|st| {
        let hs = handles(count, array_of_requests)?;
        let i = *slots.iter().flatten().find(|&&i| st.reqs.get(i).done).unwrap();
        comm = st.reqs.get(i).comm;
        any_done(st, hs, &slots, index, status, &mut greq).map(|_| ())
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
    let mut comm = MPI_COMM_WORLD;
    let mut greq = None;
    let r = rt::with(|st| {
        let hs = handles(count, array_of_requests)?;
        let slots = slots(st, hs)?;
        if slots.iter().all(Option::is_none) {
            put_status(status, &empty_status());
            put(index, MPI_UNDEFINED, "index")?;
            return put(flag, 1, "flag");
        }
        let any = |st: &mut State| slots.iter().flatten().any(|&i| st.reqs.get(i).done);
        if !any(st) {
            st.progress();
        }
        if !any(st) {
            put(index, MPI_UNDEFINED, "index")?;
            return put(flag, 0, "flag");
        }
        put(flag, 1, "flag")?;
        let i = *slots.iter().flatten().find(|&&i| st.reqs.get(i).done).unwrap();
        comm = st.reqs.get(i).comm;
        any_done(st, hs, &slots, index, status, &mut greq).map(|_| ())
    });
    ret(comm, "MPI_Testany", after_greq(r, greq, status))
}

/// Finishes every done request; fills indices/statuses; returns outcount.
unsafe fn some_done(
    st: &mut State,
    hs: &mut [MPI_Request],
    slots: &[Option<u32>],
    indices: *mut c_int,
    statuses: *mut MPI_Status,
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
        if indices.is_null() {
            bail!(MPI_ERR_ARG, "array_of_indices is a NULL pointer");
        }
        *indices.add(n) = k as c_int;
        match g {
            Some(g) => greqs.push((n, g)),
            None if statuses as usize > MPI_STATUS_IGNORE => *statuses.add(n) = s,
            None => {}
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
    let slots = match wait_slots(incount, array_of_requests) {
        Ok(s) => s,
        Err(e) => return raise(MPI_COMM_WORLD, "MPI_Waitsome", e),
    };
    if slots.iter().all(Option::is_none) {
        return ret(MPI_COMM_WORLD, "MPI_Waitsome", put(outcount, MPI_UNDEFINED, "outcount"));
    }
    if let Err(e) = rt::wait_until(|st| slots.iter().flatten().any(|&i| st.reqs.get(i).done)) {
        return raise(MPI_COMM_WORLD, "MPI_Waitsome", e);
    }
    let mut comm = MPI_COMM_WORLD;
    let mut greqs = Vec::new();
    let r = rt::with(|st| {
        let hs = handles(incount, array_of_requests)?;
        let (n, err, c) = some_done(st, hs, &slots, array_of_indices, array_of_statuses, &mut greqs)?;
        put(outcount, n, "outcount")?;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    ret(comm, "MPI_Waitsome", in_status(r, greqs_done(&greqs, array_of_statuses)))
}

pub unsafe fn MPI_Testsome(
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    let mut comm = MPI_COMM_WORLD;
    let mut greqs = Vec::new();
    let r = rt::with(|st| {
        let hs = handles(incount, array_of_requests)?;
        let slots = slots(st, hs)?;
        if slots.iter().all(Option::is_none) {
            return put(outcount, MPI_UNDEFINED, "outcount");
        }
        st.progress();
        let (n, err, c) = some_done(st, hs, &slots, array_of_indices, array_of_statuses, &mut greqs)?;
        put(outcount, n, "outcount")?;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    ret(comm, "MPI_Testsome", in_status(r, greqs_done(&greqs, array_of_statuses)))
}

pub unsafe fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    let mut greq = None;
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
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
    let mut greq = None;
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
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
            r.and(greq_result(cancel(extra, done as c_int), "cancel"))
        }
        _ => r,
    };
    ret(MPI_COMM_WORLD, "MPI_Cancel", r)
}

pub unsafe fn MPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) -> c_int {
    let r = if status.is_null() || status as usize == MPI_STATUS_IGNORE {
        Err(MpiError::new(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE"))
    } else {
        put(flag, (*status).cancelled() as c_int, "flag")
    };
    ret(MPI_COMM_WORLD, "MPI_Test_cancelled", r)
}

pub unsafe fn MPI_Start(request: *mut MPI_Request) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let i = st.reqs.index(*request)?;
        start_persistent(st, i)
    });
    ret(MPI_COMM_WORLD, "MPI_Start", r)
}

pub unsafe fn MPI_Startall(count: c_int, array_of_requests: *mut MPI_Request) -> c_int {
    let r = rt::with(|st| {
        let hs = handles(count, array_of_requests)?;
        for &h in hs.iter() {
            let i = st.reqs.index(h)?;
            start_persistent(st, i)?;
        }
        Ok(())
    });
    ret(MPI_COMM_WORLD, "MPI_Startall", r)
}

pub unsafe fn MPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) -> c_int {
    let r = if status.is_null() || status as usize == MPI_STATUS_IGNORE {
        Err(MpiError::new(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE"))
    } else {
        (*status).set_cancelled(flag != 0);
        Ok(())
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
///
/// # Safety
/// As for [`greq_done`].
unsafe fn after_greq(r: MpiResult<()>, greq: Option<Greq>, status: *mut MPI_Status) -> MpiResult<()> {
    match greq {
        Some(g) => r.and(greq_result(greq_done(&g, status), "query or free")),
        None => r,
    }
}

/// Calls `free_fn` of a generalized request; its code.
///
/// # Safety
/// The callback is the program's.
unsafe fn greq_free(g: &Greq) -> c_int {
    match g.free {
        Some(free) => free(g.extra),
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
        *request = crate::rt::p2p::ReqTable::handle(i);
        Ok(())
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
/// `from` and `to` are NULL, an ignore constant, or valid for their types.
unsafe fn convert<A: Copy, B>(name: &str, from: *const A, to: *mut B, read: impl Fn(&A) -> B) -> c_int {
    let r = if no_status(from as *const std::ffi::c_void) {
        Err(MpiError::new(MPI_ERR_ARG, "the status to convert is NULL or a STATUS_IGNORE constant"))
    } else if no_status(to as *const std::ffi::c_void) {
        Err(MpiError::new(MPI_ERR_ARG, "the status to write is NULL or a STATUS_IGNORE constant"))
    } else {
        *to = read(&*from);
        Ok(())
    };
    ret(MPI_COMM_WORLD, name, r)
}

pub unsafe fn MPI_Status_c2f(c_status_: *const MPI_Status, f_status: *mut c_int) -> c_int {
    convert("MPI_Status_c2f", c_status_, f_status as *mut FStatus, f_fields)
}

pub unsafe fn MPI_Status_f2c(f_status: *const c_int, c_status_: *mut MPI_Status) -> c_int {
    convert("MPI_Status_f2c", f_status as *const FStatus, c_status_, c_status)
}

pub unsafe fn MPI_Status_c2f08(c_status_: *const MPI_Status, f08_status: *mut std::ffi::c_void) -> c_int {
    convert("MPI_Status_c2f08", c_status_, f08_status as *mut FStatus, f_fields)
}

pub unsafe fn MPI_Status_f082c(f08_status: *const std::ffi::c_void, c_status_: *mut MPI_Status) -> c_int {
    convert("MPI_Status_f082c", f08_status as *const FStatus, c_status_, c_status)
}

pub unsafe fn MPI_Status_f082f(f08_status: *const std::ffi::c_void, f_status: *mut c_int) -> c_int {
    convert("MPI_Status_f082f", f08_status as *const FStatus, f_status as *mut FStatus, |f| *f)
}

pub unsafe fn MPI_Status_f2f08(f_status: *const c_int, f08_status: *mut std::ffi::c_void) -> c_int {
    convert("MPI_Status_f2f08", f_status as *const FStatus, f08_status as *mut FStatus, |f| *f)
}
