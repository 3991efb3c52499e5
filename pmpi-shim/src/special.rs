//! Hand-written wrappers: procedures whose recording needs more than their
//! parameters (build.rs calls `special::MPI_X` for every `pub unsafe fn
//! MPI_X` defined here): initialization and finalization, `MPI_Abort`,
//! `MPI_Pcontrol`, the `Wait`/`Test` families and persistent requests.
// The wrappers carry the C names of the MPI procedures, and each one's
// safety contract is the MPI standard's for the procedure of its name.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::os::raw::{c_char, c_int};
use std::sync::atomic::Ordering;

use mpi_api::abi::{self, MPI_Status};
use trace_format::side::SideEntry;

use crate::rec::{self, complete_requests, mode, Call, Category, MODE};
use crate::state::state;
use crate::{clock, ids, life, pmpi};

pub unsafe fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let before = clock::point();
    // SAFETY: the application's arguments, valid as MPI_Init requires, passed
    // on unchanged to PMPI_Init, which requires the same.
    let rc = unsafe { pmpi::MPI_Init(argc, argv) };
    let after = clock::ticks();
    if rc == abi::MPI_SUCCESS {
        life::start(ids::MPI_Init, before, after);
    }
    rc
}

pub unsafe fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let before = clock::point();
    // SAFETY: the application's arguments, valid as MPI_Init_thread requires, passed
    // on unchanged to PMPI_Init_thread, which requires the same.
    let rc = unsafe { pmpi::MPI_Init_thread(argc, argv, required, provided) };
    let after = clock::ticks();
    if rc == abi::MPI_SUCCESS {
        life::start(ids::MPI_Init_thread, before, after);
    }
    rc
}

pub unsafe fn MPI_Finalize() -> c_int {
    let mut c = Call::begin(ids::MPI_Finalize, Category::Other, false);
    // A trace started by a session ends with that session.
    let tracing = c.recording() && life::started_by_init();
    if tracing {
        c.enter();
        life::before_finalize();
    }
    // SAFETY: the application's arguments, valid as MPI_Finalize requires, passed
    // on unchanged to PMPI_Finalize, which requires the same.
    let rc = unsafe { pmpi::MPI_Finalize() };
    c.exit(rc);
    if tracing {
        life::after_finalize();
    }
    rc
}

/// The first session of a process that did not call `MPI_Init` starts
/// tracing (see `life::start_session`); later ones are recorded as calls.
pub unsafe fn MPI_Session_init(info: c_int, errhandler: c_int, session: *mut c_int) -> c_int {
    if MODE.load(Ordering::Relaxed) != mode::OFF {
        let mut c = Call::begin(ids::MPI_Session_init, Category::Other, false);
        c.enter();
        // SAFETY: the application's arguments, valid as MPI_Session_init requires, passed
        // on unchanged to PMPI_Session_init, which requires the same.
        let rc = unsafe { pmpi::MPI_Session_init(info, errhandler, session) };
        c.exit(rc);
        return rc;
    }
    let before = clock::point();
    // SAFETY: the application's arguments, valid as MPI_Session_init requires, passed
    // on unchanged to PMPI_Session_init, which requires the same.
    let rc = unsafe { pmpi::MPI_Session_init(info, errhandler, session) };
    let after = clock::ticks();
    if rc == abi::MPI_SUCCESS && !session.is_null() && MODE.load(Ordering::Relaxed) == mode::OFF {
        // SAFETY: not null (checked): the application's MPI_Session*, valid
        // as MPI_Session_init requires, which wrote it on success.
        let s = unsafe { *session };
        life::start_session(s, ids::MPI_Session_init, before, after);
    }
    rc
}

/// Finalizing the session that started tracing ends it, as `MPI_Finalize`
/// does for `MPI_Init`.
pub unsafe fn MPI_Session_finalize(session: *mut c_int) -> c_int {
    let mut c = Call::begin(ids::MPI_Session_finalize, Category::Other, false);
    // SAFETY: not null (checked first): the application's MPI_Session*,
    // which MPI_Session_finalize requires to point to a session handle.
    let ours = !session.is_null() && life::tracing_session() == Some(unsafe { *session });
    let tracing = c.recording() && ours;
    // Every session's finalization is a call with its times, another
    // session's too: without `enter` its record would have no start time,
    // and its duration would be the clock's whole value.
    c.enter();
    if tracing {
        life::before_finalize();
    }
    if ours {
        life::release_session_world();
    }
    // SAFETY: the application's arguments, valid as MPI_Session_finalize requires, passed
    // on unchanged to PMPI_Session_finalize, which requires the same.
    let rc = unsafe { pmpi::MPI_Session_finalize(session) };
    c.exit(rc);
    if tracing {
        life::after_finalize();
    }
    rc
}

pub unsafe fn MPI_Abort(comm: c_int, errorcode: c_int) -> c_int {
    let mut c = Call::begin(ids::MPI_Abort, Category::Other, false);
    if c.recording() {
        c.comm(comm);
        c.rec.aux = errorcode;
        c.enter();
        if let Some(tr) = state().as_mut() {
            tr.write_side(&SideEntry::Note { message: format!("MPI_Abort called with error code {errorcode}") });
        }
        rec::flush();
    }
    // SAFETY: the application's arguments, valid as MPI_Abort requires, passed
    // on unchanged to PMPI_Abort, which requires the same.
    let rc = unsafe { pmpi::MPI_Abort(comm, errorcode) };
    c.exit(rc);
    rc
}

/// Level 0 stops writing records (bookkeeping goes on so that sequence
/// numbers and communicators stay right), 1 resumes, 2 resumes and asks
/// the kernel to write the journals back.
pub unsafe fn MPI_Pcontrol(level: c_int) -> c_int {
    if level != 0 {
        let _ = MODE.compare_exchange(mode::PAUSED, mode::ON, Ordering::Relaxed, Ordering::Relaxed);
    }
    let mut c = Call::begin(ids::MPI_Pcontrol, Category::Other, false);
    if c.recording() {
        c.rec.aux = level;
        c.enter();
    }
    // SAFETY: the application's level, as MPI_Pcontrol requires. The C
    // procedure is variadic; MPICH reads only `level`, which a non-variadic
    // call passes in the same register as a variadic one on x86-64.
    let rc = unsafe { pmpi::MPI_Pcontrol(level) };
    c.exit(rc);
    if level == 0 {
        let _ = MODE.compare_exchange(mode::ON, mode::PAUSED, Ordering::Relaxed, Ordering::Relaxed);
    } else if level == 2 {
        rec::flush();
    }
    rc
}

/// Request handles copied before a call: up to 8 without allocating.
struct Handles {
    inline: [c_int; 8],
    heap: Vec<c_int>,
    n: usize,
}

impl Handles {
    const EMPTY: Handles = Handles { inline: [0; 8], heap: Vec::new(), n: 0 };

    fn as_slice(&self) -> &[c_int] {
        if self.n <= self.inline.len() {
            &self.inline[..self.n]
        } else {
            &self.heap
        }
    }
}

/// The request handles before the call (completed ones become NULL).
///
/// # Safety
/// `reqs` is null or points to `n` readable request handles.
unsafe fn copy_requests(reqs: *const c_int, n: c_int) -> Handles {
    let mut h = Handles::EMPTY;
    if reqs.is_null() || n <= 0 {
        return h;
    }
    h.n = n as usize;
    // SAFETY: not null and holding n > 0 handles, by this function's contract.
    let src = unsafe { std::slice::from_raw_parts(reqs, h.n) };
    if h.n <= h.inline.len() {
        h.inline[..h.n].copy_from_slice(src);
    } else {
        h.heap = src.to_vec();
    }
    h
}

/// The statuses array to pass to MPI: the caller's, or `own` (resized to
/// `n`) for `MPI_STATUSES_IGNORE`.
fn statuses(st: *mut MPI_Status, n: c_int, own: &mut Vec<MPI_Status>) -> *mut MPI_Status {
    if st as usize != abi::MPI_STATUSES_IGNORE {
        return st;
    }
    own.resize(n.max(1) as usize, MPI_Status::default());
    own.as_mut_ptr()
}

/// The status at `i` of an array MPI filled (none if `st` is null).
///
/// # Safety
/// `st` is null or points to at least `i + 1` readable statuses.
unsafe fn status_at(st: *const MPI_Status, i: usize) -> Option<MPI_Status> {
    // SAFETY: not null (checked), and holding i + 1 statuses by this
    // function's contract.
    (!st.is_null()).then(|| unsafe { *st.add(i) })
}

/// Starts a Wait/Test call on `n` requests.
///
/// # Safety
/// `reqs` is null or points to `n` readable request handles.
unsafe fn begin_completion(id: usize, reqs: *const c_int, n: c_int) -> (Call, Handles) {
    let mut c = Call::begin(id, Category::Other, false);
    if !c.recording() {
        return (c, Handles::EMPTY);
    }
    // SAFETY: this function's contract.
    let saved = unsafe { copy_requests(reqs, n) };
    c.rec.count = n as i64;
    if let [one] = saved.as_slice() {
        c.rec.request = *one;
    }
    c.enter();
    (c, saved)
}

/// Completed requests: (index in the request array, status).
type Completed = Vec<(usize, Option<MPI_Status>)>;

/// A Wait/Test call with one status: `call` runs the MPI procedure with the
/// status pointer to use (the caller's or the shim's own), `done` says which
/// request completed from the return code and that status.
///
/// # Safety
/// `reqs` is null or points to `n` readable request handles; `status` is
/// `MPI_STATUS_IGNORE` or points to a writable status, which `call` passes
/// to MPI.
unsafe fn one_status(
    id: usize,
    reqs: *const c_int,
    n: c_int,
    status: *mut MPI_Status,
    call: impl FnOnce(*mut MPI_Status) -> c_int,
    done: impl FnOnce(c_int, Option<MPI_Status>) -> Option<usize>,
) -> c_int {
    // SAFETY: the request array as this function's contract describes it.
    let (mut c, saved) = unsafe { begin_completion(id, reqs, n) };
    let mut own = MPI_Status::default();
    // SAFETY: `status` is MPI_STATUS_IGNORE or writable (this function's
    // contract); `own` outlives `c.exit` below.
    let st = unsafe { c.status(status, &mut own) };
    let rc = call(st);
    if c.recording() {
        // SAFETY: `st` is the caller's status (writable by this function's
        // contract) or `own`; MPI filled it if it completed a request.
        let status = unsafe { status_at(st, 0) };
        if let Some(i) = done(rc, status) {
            complete_requests(&mut c, saved.as_slice(), &[(i, status)], rc);
        }
    }
    c.exit(rc);
    rc
}

/// A Wait/Test call with an array of statuses (see [`one_status`]).
///
/// # Safety
/// `reqs` is null or points to `n` readable request handles.
unsafe fn many_statuses(
    id: usize,
    reqs: *const c_int,
    n: c_int,
    statuses_arg: *mut MPI_Status,
    call: impl FnOnce(*mut MPI_Status) -> c_int,
    done: impl FnOnce(c_int, *const MPI_Status) -> Completed,
) -> c_int {
    // SAFETY: the request array as this function's contract describes it.
    let (mut c, saved) = unsafe { begin_completion(id, reqs, n) };
    let mut own = Vec::new();
    let st = if c.recording() { statuses(statuses_arg, n, &mut own) } else { statuses_arg };
    let rc = call(st);
    if c.recording() {
        complete_requests(&mut c, saved.as_slice(), &done(rc, st), rc);
    }
    c.exit(rc);
    rc
}

/// The index MPI wrote (MPI_UNDEFINED when none).
///
/// # Safety
/// `index` is null or points to a readable int.
unsafe fn index_of(index: *const c_int) -> c_int {
    if index.is_null() {
        abi::MPI_UNDEFINED
    } else {
        // SAFETY: not null, so readable by this function's contract.
        unsafe { *index }
    }
}

/// Whether a flag MPI wrote is set.
///
/// # Safety
/// `flag` is null or points to a readable int.
unsafe fn flag_set(flag: *const c_int) -> bool {
    // SAFETY: not null (checked first), so readable by this function's contract.
    !flag.is_null() && unsafe { *flag } != 0
}

/// Whether a Wait/Test that returned the error `rc` completed (and freed)
/// request `i` of `reqs` all the same: a receive truncated under
/// `MPI_ERRORS_RETURN` is complete, and MPI sets its handle to
/// `MPI_REQUEST_NULL`; an argument error leaves the handle as it was.
///
/// # Safety
/// `reqs` is null or points to `n` readable request handles, which the call
/// updated.
unsafe fn failed_but_freed(rc: c_int, reqs: *const c_int, n: c_int, i: c_int) -> bool {
    // SAFETY: i < n (checked first), within the handles of this function's
    // contract.
    rc != abi::MPI_SUCCESS
        && !reqs.is_null()
        && (0..n).contains(&i)
        && unsafe { *reqs.add(i as usize) } == abi::MPI_REQUEST_NULL
}

pub unsafe fn MPI_Wait(request: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: `request` (one handle) and `status` (writable, or
    // MPI_STATUS_IGNORE) are the application's, valid as MPI_Wait requires:
    // the contract of `one_status`, and of PMPI_Wait, which the closure
    // calls with them (`st`: `status` or the shim's own).
    unsafe {
        one_status(
            ids::MPI_Wait,
            request,
            1,
            status,
            |st| pmpi::MPI_Wait(request, st),
            |rc, _| (rc == abi::MPI_SUCCESS || failed_but_freed(rc, request, 1, 0)).then_some(0),
        )
    }
}

pub unsafe fn MPI_Test(request: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: `request` (one handle), `flag` (writable) and `status`
    // (writable, or MPI_STATUS_IGNORE) are the application's, valid as
    // MPI_Test requires: the contract of `one_status` and of PMPI_Test,
    // called with them; `flag` is read after PMPI_Test wrote it.
    unsafe {
        one_status(
            ids::MPI_Test,
            request,
            1,
            status,
            |st| pmpi::MPI_Test(request, flag, st),
            |rc, _| ((rc == abi::MPI_SUCCESS && flag_set(flag)) || failed_but_freed(rc, request, 1, 0)).then_some(0),
        )
    }
}

pub unsafe fn MPI_Waitany(
    count: c_int,
    array_of_requests: *mut c_int,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: `array_of_requests` (`count` handles), `index` (writable) and
    // `status` (writable, or MPI_STATUS_IGNORE) are the application's, valid
    // as MPI_Waitany requires: the contract of `one_status` and of
    // PMPI_Waitany, called with them; `index` is read after it was written.
    unsafe {
        one_status(
            ids::MPI_Waitany,
            array_of_requests,
            count,
            status,
            |st| pmpi::MPI_Waitany(count, array_of_requests, index, st),
            |rc, _| {
                let i = index_of(index);
                let ok = (rc == abi::MPI_SUCCESS && i >= 0) || failed_but_freed(rc, array_of_requests, count, i);
                ok.then_some(i as usize)
            },
        )
    }
}

pub unsafe fn MPI_Testany(
    count: c_int,
    array_of_requests: *mut c_int,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: `array_of_requests` (`count` handles), `index` and `flag`
    // (writable) and `status` (writable, or MPI_STATUS_IGNORE) are the
    // application's, valid as MPI_Testany requires: the contract of
    // `one_status` and of PMPI_Testany, called with them; `index` and `flag`
    // are read after it wrote them.
    unsafe {
        one_status(
            ids::MPI_Testany,
            array_of_requests,
            count,
            status,
            |st| pmpi::MPI_Testany(count, array_of_requests, index, flag, st),
            |rc, _| {
                let i = index_of(index);
                let ok = (rc == abi::MPI_SUCCESS && flag_set(flag) && i >= 0)
                    || failed_but_freed(rc, array_of_requests, count, i);
                ok.then_some(i as usize)
            },
        )
    }
}

/// Indices completed by a Waitall/Testall that returned `rc`.
///
/// # Safety
/// `st` is null or points to `n` statuses MPI filled.
unsafe fn all_done(rc: c_int, n: c_int, st: *const MPI_Status) -> Completed {
    (0..n.max(0) as usize)
        .filter_map(|i| {
            // SAFETY: i < n, within the statuses of this function's contract.
            let s = unsafe { status_at(st, i) };
            let done = rc == abi::MPI_SUCCESS
                || (rc == abi::MPI_ERR_IN_STATUS && s.is_some_and(|s| s.MPI_ERROR != abi::MPI_ERR_PENDING));
            done.then_some((i, s))
        })
        .collect()
}

pub unsafe fn MPI_Waitall(count: c_int, array_of_requests: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    // SAFETY: `array_of_requests` (`count` handles) and `array_of_statuses`
    // (`count` writable statuses, or MPI_STATUSES_IGNORE) are the
    // application's, valid as MPI_Waitall requires: the contract of
    // `many_statuses` and of PMPI_Waitall, called with them (`st`: the
    // application's statuses or the shim's own `count`); `all_done` reads
    // the `count` statuses after PMPI_Waitall filled them.
    unsafe {
        many_statuses(
            ids::MPI_Waitall,
            array_of_requests,
            count,
            array_of_statuses,
            |st| pmpi::MPI_Waitall(count, array_of_requests, st),
            |rc, st| all_done(rc, count, st),
        )
    }
}

pub unsafe fn MPI_Testall(
    count: c_int,
    array_of_requests: *mut c_int,
    flag: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: `array_of_requests` (`count` handles), `flag` (writable) and
    // `array_of_statuses` (`count` writable statuses, or
    // MPI_STATUSES_IGNORE) are the application's, valid as MPI_Testall
    // requires: the contract of `many_statuses` and of PMPI_Testall, called
    // with them; `flag` and the statuses are read after it wrote them.
    unsafe {
        many_statuses(
            ids::MPI_Testall,
            array_of_requests,
            count,
            array_of_statuses,
            |st| pmpi::MPI_Testall(count, array_of_requests, flag, st),
            |rc, st| {
                if rc != abi::MPI_SUCCESS || flag_set(flag) {
                    all_done(rc, count, st)
                } else {
                    Vec::new()
                }
            },
        )
    }
}

/// Completions of a Waitsome/Testsome.
///
/// # Safety
/// After a call that returned `rc`, `outcount` is null or the pointer MPI
/// wrote the count to, and on success (or `MPI_ERR_IN_STATUS`) `indices`
/// and `st` (if not null) hold at least that many entries.
unsafe fn some_done(rc: c_int, outcount: *const c_int, indices: *const c_int, st: *const MPI_Status) -> Completed {
    if !(rc == abi::MPI_SUCCESS || rc == abi::MPI_ERR_IN_STATUS) || outcount.is_null() {
        return Vec::new();
    }
    // SAFETY: not null (checked), and written by MPI on this return code,
    // by this function's contract.
    let n = unsafe { *outcount };
    if n == abi::MPI_UNDEFINED || n <= 0 {
        return Vec::new();
    }
    (0..n as usize)
        // SAFETY: j < n, the count of indices and statuses MPI wrote, by
        // this function's contract.
        .map(|j| unsafe { (*indices.add(j) as usize, status_at(st, j)) })
        .collect()
}

/// `MPI_Waitsome` and `MPI_Testsome` (same signature).
type WaitOrTestSomeFn = unsafe fn(c_int, *mut c_int, *mut c_int, *mut c_int, *mut MPI_Status) -> c_int;

/// `MPI_Waitsome` or `MPI_Testsome` (`f`: its next definition).
///
/// # Safety
/// The arguments are valid as `MPI_Waitsome` requires: `reqs` holds `n`
/// handles, `out` and `idx` are writable (`idx` for `n` indices), `st`
/// holds `n` writable statuses or is `MPI_STATUSES_IGNORE`.
unsafe fn wait_or_test_some(
    id: usize,
    f: WaitOrTestSomeFn,
    n: c_int,
    reqs: *mut c_int,
    out: *mut c_int,
    idx: *mut c_int,
    st: *mut MPI_Status,
) -> c_int {
    // SAFETY: the request array and statuses as this function's contract
    // describes them, which is what `many_statuses` and `f` require;
    // `some_done` reads `out`, then that many of `idx` and of the statuses
    // (`st` or the shim's own `n`), after `f` wrote them.
    unsafe { many_statuses(id, reqs, n, st, |st| f(n, reqs, out, idx, st), |rc, st| some_done(rc, out, idx, st)) }
}

pub unsafe fn MPI_Waitsome(
    incount: c_int,
    array_of_requests: *mut c_int,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the application's arguments, valid as MPI_Waitsome requires,
    // which is the contract of `wait_or_test_some` with PMPI_Waitsome.
    unsafe {
        wait_or_test_some(
            ids::MPI_Waitsome,
            pmpi::MPI_Waitsome,
            incount,
            array_of_requests,
            outcount,
            array_of_indices,
            array_of_statuses,
        )
    }
}

pub unsafe fn MPI_Testsome(
    incount: c_int,
    array_of_requests: *mut c_int,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: the application's arguments, valid as MPI_Testsome requires,
    // which is the contract of `wait_or_test_some` with PMPI_Testsome.
    unsafe {
        wait_or_test_some(
            ids::MPI_Testsome,
            pmpi::MPI_Testsome,
            incount,
            array_of_requests,
            outcount,
            array_of_indices,
            array_of_statuses,
        )
    }
}

pub unsafe fn MPI_Start(request: *mut c_int) -> c_int {
    let mut c = Call::begin(ids::MPI_Start, Category::Other, false);
    if c.recording() && !request.is_null() {
        // SAFETY: the caller passes a valid request pointer.
        let h = unsafe { *request };
        match rec::start_request(h) {
            Some(info) => rec::describe_request(&mut c.rec, h, &info),
            None => c.rec.request = h,
        }
        c.enter();
    }
    // SAFETY: the application's arguments, valid as MPI_Start requires, passed
    // on unchanged to PMPI_Start, which requires the same.
    let rc = unsafe { pmpi::MPI_Start(request) };
    c.exit(rc);
    rc
}

pub unsafe fn MPI_Startall(count: c_int, array_of_requests: *mut c_int) -> c_int {
    let mut c = Call::begin(ids::MPI_Startall, Category::Other, false);
    if c.recording() {
        c.rec.count = count as i64;
        // SAFETY: the caller's array holds count requests.
        for &h in unsafe { copy_requests(array_of_requests, count) }.as_slice() {
            rec::start_request(h);
        }
        c.enter();
    }
    // SAFETY: the application's arguments, valid as MPI_Startall requires, passed
    // on unchanged to PMPI_Startall, which requires the same.
    let rc = unsafe { pmpi::MPI_Startall(count, array_of_requests) };
    c.exit(rc);
    rc
}

pub unsafe fn MPI_Request_free(request: *mut c_int) -> c_int {
    let mut c = Call::begin(ids::MPI_Request_free, Category::Other, false);
    if c.recording() && !request.is_null() {
        // SAFETY: the caller passes a valid request pointer.
        let h = unsafe { *request };
        c.rec.request = h;
        if let Some(tr) = state().as_mut() {
            tr.requests.remove(&h);
        }
        c.enter();
    }
    // SAFETY: the application's arguments, valid as MPI_Request_free requires, passed
    // on unchanged to PMPI_Request_free, which requires the same.
    let rc = unsafe { pmpi::MPI_Request_free(request) };
    c.exit(rc);
    rc
}

pub unsafe fn MPI_Comm_set_name(comm: c_int, comm_name: *const c_char) -> c_int {
    let mut c = Call::begin(ids::MPI_Comm_set_name, Category::Other, false);
    if c.recording() {
        c.comm(comm);
        c.enter();
    }
    // SAFETY: the application's arguments, valid as MPI_Comm_set_name requires, passed
    // on unchanged to PMPI_Comm_set_name, which requires the same.
    let rc = unsafe { pmpi::MPI_Comm_set_name(comm, comm_name) };
    if c.recording() && rc == abi::MPI_SUCCESS && !comm_name.is_null() {
        // SAFETY: the caller passes a NUL-terminated name.
        let name = unsafe { std::ffi::CStr::from_ptr(comm_name) }.to_string_lossy().into_owned();
        if let Some(tr) = state().as_mut() {
            tr.name_comm(comm, name);
        }
    }
    c.exit(rc);
    rc
}
