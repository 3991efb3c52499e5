//! Completion: `Wait`/`Test` and their any/all/some forms, cancel, free,
//! persistent start.

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::p2p::start_persistent;
use super::{put, put_status, raise, ret};
use crate::bail;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::p2p::{empty_status, Kind};
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
fn finish_handle(st: &mut State, h: &mut MPI_Request, i: u32) -> (MPI_Status, c_int, MPI_Comm) {
    let comm = st.reqs.get(i).comm;
    let persistent = st.reqs.get(i).persist.is_some();
    let (s, e) = finish_req(st, i);
    if !persistent {
        *h = MPI_REQUEST_NULL;
    }
    (s, e, comm)
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
        Ok(Ok(Some((s, err, comm)))) => {
            put_status(status, &s);
            ret(comm, "MPI_Wait", status_error(err, &s))
        }
    }
}

pub unsafe fn MPI_Test(request: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let mut comm = MPI_COMM_WORLD;
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
        let (s, err, c) = finish_handle(st, &mut *request, i);
        comm = c;
        put_status(status, &s);
        put(flag, 1, "flag")?;
        status_error(err, &s)
    });
    ret(comm, "MPI_Test", r)
}

pub unsafe fn MPI_Request_get_status(request: MPI_Request, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let r = rt::with(|st| {
        let Some(i) = slot(st, request)? else {
            put_status(status, &empty_status());
            return put(flag, 1, "flag");
        };
        if !st.reqs.get(i).done {
            st.progress();
        }
        let r = st.reqs.get(i);
        if r.done {
            let mut s = r.status;
            s.MPI_ERROR = r.err;
            put_status(status, &s);
        }
        put(flag, r.done as c_int, "flag")
    });
    ret(MPI_COMM_WORLD, "MPI_Request_get_status", r)
}

/// Completes everything done in `hs`; returns (any error, first erroneous comm).
unsafe fn finish_all_done(st: &mut State, hs: &mut [MPI_Request], slots: &[Option<u32>], statuses: *mut MPI_Status) -> (bool, MPI_Comm) {
    let mut any_err = false;
    let mut comm = MPI_COMM_WORLD;
    for (k, h) in hs.iter_mut().enumerate() {
        let s = match slots[k] {
            None => empty_status(),
            Some(i) => {
                let (s, e, c) = finish_handle(st, h, i);
                if e != MPI_SUCCESS && !any_err {
                    any_err = true;
                    comm = c;
                }
                s
            }
        };
        if statuses as usize > MPI_STATUS_IGNORE {
            *statuses.add(k) = s;
        }
    }
    (any_err, comm)
}

pub unsafe fn MPI_Waitall(count: c_int, array_of_requests: *mut MPI_Request, array_of_statuses: *mut MPI_Status) -> c_int {
    let slots = match wait_slots(count, array_of_requests) {
        Ok(s) => s,
        Err(e) => return raise(MPI_COMM_WORLD, "MPI_Waitall", e),
    };
    if let Err(e) = rt::wait_until(|st| slots.iter().flatten().all(|&i| st.reqs.get(i).done)) {
        return raise(MPI_COMM_WORLD, "MPI_Waitall", e);
    }
    let (err, comm) = rt::with(|st| {
        let hs = handles(count, array_of_requests)?;
        Ok(finish_all_done(st, hs, &slots, array_of_statuses))
    })
    .expect("running");
    if err {
        return raise(comm, "MPI_Waitall", MpiError::new(MPI_ERR_IN_STATUS, "a request failed; see the statuses"));
    }
    MPI_SUCCESS
}

pub unsafe fn MPI_Testall(count: c_int, array_of_requests: *mut MPI_Request, flag: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    let mut comm = MPI_COMM_WORLD;
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
        let (err, c) = finish_all_done(st, hs, &slots, array_of_statuses);
        put(flag, 1, "flag")?;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    ret(comm, "MPI_Testall", r)
}

/// Finishes the first done request among `slots`; writes index and status.
unsafe fn any_done(st: &mut State, hs: &mut [MPI_Request], slots: &[Option<u32>], index: *mut c_int, status: *mut MPI_Status) -> MpiResult<Option<MPI_Comm>> {
    for (k, s) in slots.iter().enumerate() {
        if let Some(i) = *s {
            if st.reqs.get(i).done {
                let (s, e, c) = finish_handle(st, &mut hs[k], i);
                put_status(status, &s);
                put(index, k as c_int, "index")?;
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

pub unsafe fn MPI_Waitany(count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int, status: *mut MPI_Status) -> c_int {
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
    let r = rt::with(|st| {
        let hs = handles(count, array_of_requests)?;
        let i = *slots.iter().flatten().find(|&&i| st.reqs.get(i).done).unwrap();
        comm = st.reqs.get(i).comm;
        any_done(st, hs, &slots, index, status).map(|_| ())
    });
    ret(comm, "MPI_Waitany", r)
}

pub unsafe fn MPI_Testany(count: c_int, array_of_requests: *mut MPI_Request, index: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    let mut comm = MPI_COMM_WORLD;
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
        any_done(st, hs, &slots, index, status).map(|_| ())
    });
    ret(comm, "MPI_Testany", r)
}

/// Finishes every done request; fills indices/statuses; returns outcount.
unsafe fn some_done(
    st: &mut State,
    hs: &mut [MPI_Request],
    slots: &[Option<u32>],
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> MpiResult<(c_int, bool, MPI_Comm)> {
    let mut n = 0usize;
    let mut err = false;
    let mut comm = MPI_COMM_WORLD;
    for (k, s) in slots.iter().enumerate() {
        let Some(i) = *s else { continue };
        if !st.reqs.get(i).done {
            continue;
        }
        let (s, e, c) = finish_handle(st, &mut hs[k], i);
        if e != MPI_SUCCESS && !err {
            err = true;
            comm = c;
        }
        if indices.is_null() {
            bail!(MPI_ERR_ARG, "array_of_indices is a NULL pointer");
        }
        *indices.add(n) = k as c_int;
        if statuses as usize > MPI_STATUS_IGNORE {
            *statuses.add(n) = s;
        }
        n += 1;
    }
    Ok((n as c_int, err, comm))
}

pub unsafe fn MPI_Waitsome(incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
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
    let r = rt::with(|st| {
        let hs = handles(incount, array_of_requests)?;
        let (n, err, c) = some_done(st, hs, &slots, array_of_indices, array_of_statuses)?;
        put(outcount, n, "outcount")?;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    ret(comm, "MPI_Waitsome", r)
}

pub unsafe fn MPI_Testsome(incount: c_int, array_of_requests: *mut MPI_Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    let mut comm = MPI_COMM_WORLD;
    let r = rt::with(|st| {
        let hs = handles(incount, array_of_requests)?;
        let slots = slots(st, hs)?;
        if slots.iter().all(Option::is_none) {
            return put(outcount, MPI_UNDEFINED, "outcount");
        }
        st.progress();
        let (n, err, c) = some_done(st, hs, &slots, array_of_indices, array_of_statuses)?;
        put(outcount, n, "outcount")?;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    ret(comm, "MPI_Testsome", r)
}

pub unsafe fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        if *request == MPI_REQUEST_NULL {
            bail!(MPI_ERR_REQUEST, "MPI_REQUEST_NULL cannot be freed");
        }
        let i = st.reqs.index(*request)?;
        let r = st.reqs.get(i);
        if r.done || (r.persist.is_some() && !r.active) {
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
    ret(MPI_COMM_WORLD, "MPI_Request_free", r)
}

pub unsafe fn MPI_Cancel(request: *mut MPI_Request) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let i = st.reqs.index(*request)?;
        st.engine.cancel(&mut st.reqs, i);
        Ok(())
    });
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
