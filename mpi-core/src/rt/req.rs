//! Completion of requests: `Wait`/`Test` and their any/all/some forms,
//! free, cancel; generalized requests.
//!
//! The calls take the program's request handles and statuses as slices and
//! references (the C boundary made them) and report `(comm, result)`: the
//! communicator whose error handler takes the error (`MPI_COMM_WORLD`
//! unless a finished request failed) and the outcome.
//!
//! A generalized request's callbacks (`query_fn`, `free_fn`, `cancel_fn`)
//! are the program's code and may call MPI (`MPI_Status_set_elements` in a
//! query is the common case), so they never run under the runtime's lock:
//! a completion call finishes the request under the lock like any other,
//! takes its callbacks out ([`finish_handle`] returns them with where its
//! status goes) and runs them after the lock is released. The extended
//! ones of MPICH (`poll_fn`, `wait_fn`) are driven first, also without the
//! lock (`rt::greq::drive`).

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};
use super::greq::{drive, Want};
use super::p2p::{empty_status, Greq, Kind, ReqTable, Request};
use super::{block_on, wait_until, wake_waiters, with, State};
use crate::bail;

/// The outcome of a completion call: the communicator whose error handler
/// takes its error, and the result.
pub type Completion = (MPI_Comm, MpiResult<()>);

/// Takes the result of completed request `i`: its status and error. A
/// non-persistent request is released; a persistent one becomes inactive.
pub fn finish_req(st: &mut State, i: u32) -> (MPI_Status, c_int) {
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

/// Waits for request `i`, then finishes it ([`finish_req`]).
pub fn wait_req(i: u32) -> MpiResult<(MPI_Status, c_int)> {
    block_on(|st| st.reqs.get(i).done.then(|| finish_req(st, i)))
}

/// What a nonblocking collective that got data other than it expects
/// reports (its schedule's detail is gone by the time it is waited for).
pub const COLL_MISMATCH: &str = "a nonblocking collective on this communicator got other data from a rank than it expects: \
     the ranks called different collectives at this point (collectives called in different orders on one communicator, \
     which the standard forbids, a blocking and a nonblocking one swapped for instance), or gave counts, types or roots \
     that differ";

/// The error a completed receive reports, if any.
pub fn status_error(err: c_int, s: &MPI_Status) -> MpiResult<()> {
    match err {
        MPI_SUCCESS => Ok(()),
        // A status without a source is not a receive's: that of a
        // nonblocking collective, whose messages are the library's (their
        // ranks and tags mean nothing to the program).
        MPI_ERR_TRUNCATE if s.MPI_SOURCE < 0 => Err(MpiError::new(err, COLL_MISMATCH)),
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

/// Whether every handle of `hs` is null or an inactive persistent request
/// (also for none): completing them gives an empty status (MPI 3.1 3.7.3).
/// False if a handle is invalid (the call reports that).
pub fn idle(hs: &[MPI_Request]) -> bool {
    hs.iter().all(|&h| h == MPI_REQUEST_NULL) || with(|st| slots(st, hs)).is_ok_and(|s| s.iter().all(Option::is_none))
}

/// Slots of the request handles `hs` (see [`slot`]).
fn slots(st: &mut State, hs: &[MPI_Request]) -> MpiResult<Vec<Option<u32>>> {
    // (A plain loop: collecting into a Result costs twice as much per
    // request, which a window of small messages feels.)
    let mut v = Vec::with_capacity(hs.len());
    for &h in hs {
        v.push(slot(st, h)?);
    }
    Ok(v)
}

/// Writes `s` to `status` unless the program ignores it.
fn put(status: Option<&mut MPI_Status>, s: MPI_Status) {
    if let Some(o) = status {
        *o = s;
    }
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
    super::entering_user_code();
    match g.query {
        // SAFETY: the program gave `query` to MPI_Grequest_start as its
        // MPI_Grequest_query_function; it gets its extra_state and a status
        // writable during the call, as the standard says, and no lock is held.
        Some(query) => unsafe { query(g.extra, s) },
        None => MPI_SUCCESS,
    }
}

/// Calls `free_fn` of a generalized request; its code.
fn greq_free(g: &Greq) -> c_int {
    super::entering_user_code();
    match g.free {
        // SAFETY: the program gave `free` to MPI_Grequest_start as its
        // MPI_Grequest_free_function; it gets its extra_state, once, as the
        // standard says, and no lock is held.
        Some(free) => unsafe { free(g.extra) },
        None => MPI_SUCCESS,
    }
}

/// The outcome of a callback's error code.
pub(super) fn greq_result(code: c_int, what: &str) -> MpiResult<()> {
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

/// `MPI_Wait`.
pub fn wait(request: &mut MPI_Request, status: Option<&mut MPI_Status>) -> Completion {
    if let Err(e) = drive(std::slice::from_ref(request), Want::All) {
        return (MPI_COMM_WORLD, Err(e));
    }
    // One pass under the lock: find the slot; if it is already complete,
    // finish it at once, else wait and finish under the same lock.
    let mut slot_of = None;
    let r = block_on(|st| {
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
        Err(e) | Ok(Err(e)) => (MPI_COMM_WORLD, Err(e)),
        Ok(Ok(None)) => {
            put(status, empty_status());
            (MPI_COMM_WORLD, Ok(()))
        }
        Ok(Ok(Some((_, _, comm, g @ Some(_))))) => (comm, after_greq(Ok(()), g, status)),
        Ok(Ok(Some((s, err, comm, None)))) => {
            put(status, s);
            (comm, status_error(err, &s))
        }
    }
}

/// `MPI_Test`: `flag` tells whether the request is complete.
pub fn test(request: &mut MPI_Request, flag: &mut c_int, mut status: Option<&mut MPI_Status>) -> Completion {
    if let Err(e) = drive(std::slice::from_ref(request), Want::Poll) {
        return (MPI_COMM_WORLD, Err(e));
    }
    let mut comm = MPI_COMM_WORLD;
    let mut greq = None;
    let r = with(|st| {
        let Some(i) = slot(st, *request)? else {
            put(status.as_deref_mut(), empty_status());
            *flag = 1;
            return Ok(());
        };
        if !st.reqs.get(i).done {
            st.progress();
        }
        if !st.reqs.get(i).done {
            *flag = 0;
            return Ok(());
        }
        let (s, err, c, g) = finish_handle(st, request, i);
        comm = c;
        *flag = 1;
        if g.is_some() {
            greq = g;
            return Ok(());
        }
        put(status.as_deref_mut(), s);
        status_error(err, &s)
    });
    (comm, after_greq(r, greq, status))
}

/// `MPI_Request_get_status`: like [`test`], but the request stays.
pub fn get_status(request: MPI_Request, flag: &mut c_int, mut status: Option<&mut MPI_Status>) -> MpiResult<()> {
    drive(&[request], Want::Poll)?;
    let mut greq = None;
    let r = with(|st| {
        let Some(i) = slot(st, request)? else {
            put(status.as_deref_mut(), empty_status());
            *flag = 1;
            return Ok(());
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
            put(status.as_deref_mut(), s);
        }
        *flag = r.done as c_int;
        Ok(())
    });
    match greq {
        Some(g) => r.and(greq_result(greq_query(&g, status), "query")),
        None => r,
    }
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

/// `MPI_Waitall` (`statuses`, if not ignored, has an entry per request).
pub fn wait_all(hs: &mut [MPI_Request], mut statuses: Option<&mut [MPI_Status]>) -> Completion {
    if let Err(e) = drive(hs, Want::All) {
        return (MPI_COMM_WORLD, Err(e));
    }
    let slots = match with(|st| slots(st, hs)) {
        Ok(s) => s,
        Err(e) => return (MPI_COMM_WORLD, Err(e)),
    };
    if let Err(e) = wait_until(|st| slots.iter().flatten().all(|&i| st.reqs.get(i).done)) {
        return (MPI_COMM_WORLD, Err(e));
    }
    let (err, comm, greqs) = with(|st| Ok(finish_all_done(st, hs, &slots, statuses.as_deref_mut()))).expect("running");
    if greqs_done(&greqs, statuses) | err {
        return (comm, Err(MpiError::new(MPI_ERR_IN_STATUS, "a request failed; see the statuses")));
    }
    (MPI_COMM_WORLD, Ok(()))
}

/// `MPI_Testall` (`statuses` as for [`wait_all`]).
pub fn test_all(hs: &mut [MPI_Request], flag: &mut c_int, mut statuses: Option<&mut [MPI_Status]>) -> Completion {
    if let Err(e) = drive(hs, Want::Poll) {
        return (MPI_COMM_WORLD, Err(e));
    }
    let mut comm = MPI_COMM_WORLD;
    let mut greqs = Vec::new();
    let r = with(|st| {
        let slots = slots(st, hs)?;
        let all = |st: &mut State| slots.iter().flatten().all(|&i| st.reqs.get(i).done);
        if !all(st) {
            st.progress();
        }
        if !all(st) {
            *flag = 0;
            return Ok(());
        }
        let (err, c, g) = finish_all_done(st, hs, &slots, statuses.as_deref_mut());
        greqs = g;
        *flag = 1;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    (comm, in_status(r, greqs_done(&greqs, statuses)))
}

/// Finishes the first done request among `slots`; writes index and status
/// (a generalized request's callbacks go to `greq`, for the caller).
fn any_done(
    st: &mut State,
    hs: &mut [MPI_Request],
    slots: &[Option<u32>],
    index: &mut c_int,
    status: Option<&mut MPI_Status>,
    greq: &mut Option<Greq>,
) -> MpiResult<()> {
    for (k, s) in slots.iter().enumerate() {
        let Some(i) = *s else { continue };
        if !st.reqs.get(i).done {
            continue;
        }
        let (s, e, _, g) = finish_handle(st, &mut hs[k], i);
        *index = k as c_int;
        if g.is_some() {
            *greq = g;
            return Ok(());
        }
        put(status, s);
        return status_error(e, &s).map_err(|mut err| {
            err.msg = format!("request {k}: {}", err.msg);
            err
        });
    }
    Ok(())
}

/// The communicator of the first done request among `slots`.
fn first_done_comm(st: &mut State, slots: &[Option<u32>]) -> Option<MPI_Comm> {
    let i = *slots.iter().flatten().find(|&&i| st.reqs.get(i).done)?;
    Some(st.reqs.get(i).comm)
}

/// `MPI_Waitany`.
pub fn wait_any(hs: &mut [MPI_Request], index: &mut c_int, mut status: Option<&mut MPI_Status>) -> Completion {
    if let Err(e) = drive(hs, Want::Any) {
        return (MPI_COMM_WORLD, Err(e));
    }
    let slots = match with(|st| slots(st, hs)) {
        Ok(s) => s,
        Err(e) => return (MPI_COMM_WORLD, Err(e)),
    };
    if slots.iter().all(Option::is_none) {
        put(status, empty_status());
        *index = MPI_UNDEFINED;
        return (MPI_COMM_WORLD, Ok(()));
    }
    if let Err(e) = wait_until(|st| slots.iter().flatten().any(|&i| st.reqs.get(i).done)) {
        return (MPI_COMM_WORLD, Err(e));
    }
    let mut comm = MPI_COMM_WORLD;
    let mut greq = None;
    let r = with(|st| {
        comm = first_done_comm(st, &slots).expect("a request is done");
        any_done(st, hs, &slots, index, status.as_deref_mut(), &mut greq)
    });
    (comm, after_greq(r, greq, status))
}

/// `MPI_Testany`.
pub fn test_any(
    hs: &mut [MPI_Request],
    index: &mut c_int,
    flag: &mut c_int,
    mut status: Option<&mut MPI_Status>,
) -> Completion {
    if let Err(e) = drive(hs, Want::Poll) {
        return (MPI_COMM_WORLD, Err(e));
    }
    let mut comm = MPI_COMM_WORLD;
    let mut greq = None;
    let r = with(|st| {
        let slots = slots(st, hs)?;
        if slots.iter().all(Option::is_none) {
            put(status.as_deref_mut(), empty_status());
            *index = MPI_UNDEFINED;
            *flag = 1;
            return Ok(());
        }
        if first_done_comm(st, &slots).is_none() {
            st.progress();
        }
        let Some(c) = first_done_comm(st, &slots) else {
            *index = MPI_UNDEFINED;
            *flag = 0;
            return Ok(());
        };
        *flag = 1;
        comm = c;
        any_done(st, hs, &slots, index, status.as_deref_mut(), &mut greq)
    });
    (comm, after_greq(r, greq, status))
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

/// What `MPI_Waitsome` and `MPI_Testsome` do once they waited, or not:
/// finish the done requests among `hs`, under the lock, and run the
/// callbacks of the generalized ones after it.
fn finish_some(
    hs: &mut [MPI_Request],
    known: Option<&[Option<u32>]>,
    outcount: &mut c_int,
    indices: Option<&mut [c_int]>,
    mut statuses: Option<&mut [MPI_Status]>,
    progress: bool,
) -> Completion {
    let mut comm = MPI_COMM_WORLD;
    let mut greqs = Vec::new();
    let r = with(|st| {
        let found;
        let slots = match known {
            Some(s) => s,
            None => {
                found = slots(st, hs)?;
                &found
            }
        };
        if slots.iter().all(Option::is_none) {
            *outcount = MPI_UNDEFINED;
            return Ok(());
        }
        if progress {
            st.progress();
        }
        let (n, err, c) = some_done(st, hs, slots, indices, statuses.as_deref_mut(), &mut greqs)?;
        *outcount = n;
        if err {
            comm = c;
            bail!(MPI_ERR_IN_STATUS, "a request failed; see the statuses");
        }
        Ok(())
    });
    (comm, in_status(r, greqs_done(&greqs, statuses)))
}

/// `MPI_Waitsome` (`indices` and `statuses` as for [`some_done`]).
pub fn wait_some(
    hs: &mut [MPI_Request],
    outcount: &mut c_int,
    indices: Option<&mut [c_int]>,
    statuses: Option<&mut [MPI_Status]>,
) -> Completion {
    if let Err(e) = drive(hs, Want::Any) {
        return (MPI_COMM_WORLD, Err(e));
    }
    let slots = match with(|st| slots(st, hs)) {
        Ok(s) => s,
        Err(e) => return (MPI_COMM_WORLD, Err(e)),
    };
    if slots.iter().all(Option::is_none) {
        *outcount = MPI_UNDEFINED;
        return (MPI_COMM_WORLD, Ok(()));
    }
    if let Err(e) = wait_until(|st| slots.iter().flatten().any(|&i| st.reqs.get(i).done)) {
        return (MPI_COMM_WORLD, Err(e));
    }
    finish_some(hs, Some(&slots), outcount, indices, statuses, false)
}

/// `MPI_Testsome` (`indices` and `statuses` as for [`some_done`]).
pub fn test_some(
    hs: &mut [MPI_Request],
    outcount: &mut c_int,
    indices: Option<&mut [c_int]>,
    statuses: Option<&mut [MPI_Status]>,
) -> Completion {
    if let Err(e) = drive(hs, Want::Poll) {
        return (MPI_COMM_WORLD, Err(e));
    }
    finish_some(hs, None, outcount, indices, statuses, true)
}

/// `MPI_Request_free`: sets `*request` to `MPI_REQUEST_NULL`.
pub fn free(request: &mut MPI_Request) -> MpiResult<()> {
    let mut greq = None;
    let r = with(|st| {
        if *request == MPI_REQUEST_NULL {
            bail!(MPI_ERR_REQUEST, "MPI_REQUEST_NULL cannot be freed");
        }
        let i = st.reqs.index(*request)?;
        st.parts.forget(i);
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
    match greq {
        Some(g) => r.and(greq_result(greq_free(&g), "free")),
        None => r,
    }
}

/// `MPI_Cancel`.
pub fn cancel(request: MPI_Request) -> MpiResult<()> {
    let mut greq = None;
    let r = with(|st| {
        let i = st.reqs.index(request)?;
        match st.reqs.get(i) {
            Request { kind: Kind::Greq(g), done, .. } => greq = Some((*g, *done)),
            _ => st.engine.cancel(&mut st.reqs, i),
        }
        Ok(())
    });
    match greq {
        // Its cancel_fn, told whether MPI_Grequest_complete was called.
        Some((Greq { cancel: Some(cancel), extra, .. }, done)) => {
            super::entering_user_code();
            // SAFETY: the program gave `cancel` to MPI_Grequest_start as its
            // MPI_Grequest_cancel_function; it gets its extra_state and the
            // completion flag, as the standard says, and no lock is held.
            r.and(greq_result(unsafe { cancel(extra, done as c_int) }, "cancel"))
        }
        _ => r,
    }
}

/// `MPI_Grequest_start`: the handle of a new generalized request.
pub fn greq_start(g: Greq) -> MpiResult<MPI_Request> {
    with(|st| Ok(ReqTable::handle(st.reqs.alloc(Request::new(Kind::Greq(g), MPI_COMM_WORLD)))))
}

/// `MPI_Grequest_complete`.
pub fn greq_complete(request: MPI_Request) -> MpiResult<()> {
    let mut freed = None;
    let r = with(|st| {
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
            wake_waiters(st);
        }
        Ok(())
    });
    match freed {
        Some(g) => r.and(greq_result(greq_free(&g), "free")),
        None => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncation_without_a_source_names_no_internal_rank_or_tag() {
        // The status of a nonblocking collective's request has no source.
        let e = status_error(MPI_ERR_TRUNCATE, &empty_status()).unwrap_err();
        assert_eq!(e.class, MPI_ERR_TRUNCATE);
        assert!(e.msg.contains("called different collectives"), "{}", e.msg);
        assert!(!e.msg.contains("-2") && !e.msg.contains("-1"), "{}", e.msg);
        let mut s = empty_status();
        s.MPI_SOURCE = 3;
        s.MPI_TAG = 7;
        let e = status_error(MPI_ERR_TRUNCATE, &s).unwrap_err();
        assert!(e.msg.contains("rank 3 with tag 7"), "{}", e.msg);
    }
}
