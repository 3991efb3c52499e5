//! Hand-written wrappers: procedures whose recording needs more than their
//! parameters (build.rs calls `special::MPI_X` for every `pub unsafe fn
//! MPI_X` defined here): initialization and finalization, `MPI_Abort`,
//! `MPI_Pcontrol`, the `Wait`/`Test` families and persistent requests.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::os::raw::{c_char, c_int};
use std::sync::atomic::Ordering;

use mpi_api::abi::{self, MPI_Status};
use trace_format::side::SideEntry;

use crate::rec::{self, complete_requests, mode, Call, Cat, MODE};
use crate::state::state;
use crate::{clock, ids, life, pmpi};

pub unsafe fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let before = clock::point();
    // SAFETY: same contract as the caller's.
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
    // SAFETY: same contract as the caller's.
    let rc = unsafe { pmpi::MPI_Init_thread(argc, argv, required, provided) };
    let after = clock::ticks();
    if rc == abi::MPI_SUCCESS {
        life::start(ids::MPI_Init_thread, before, after);
    }
    rc
}

pub unsafe fn MPI_Finalize() -> c_int {
    let mut c = Call::begin(ids::MPI_Finalize, Cat::Other, false);
    // A trace started by a session ends with that session.
    let tracing = c.on() && life::started_by_init();
    if tracing {
        c.enter();
        life::before_finalize();
    }
    // SAFETY: same contract as the caller's.
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
        let mut c = Call::begin(ids::MPI_Session_init, Cat::Other, false);
        c.enter();
        // SAFETY: same contract as the caller's.
        let rc = unsafe { pmpi::MPI_Session_init(info, errhandler, session) };
        c.exit(rc);
        return rc;
    }
    let before = clock::point();
    // SAFETY: same contract as the caller's.
    let rc = unsafe { pmpi::MPI_Session_init(info, errhandler, session) };
    let after = clock::ticks();
    if rc == abi::MPI_SUCCESS && !session.is_null() && MODE.load(Ordering::Relaxed) == mode::OFF {
        // SAFETY: MPI wrote the new session handle.
        let s = unsafe { *session };
        life::start_session(s, ids::MPI_Session_init, before, after);
    }
    rc
}

/// Finalizing the session that started tracing ends it, as `MPI_Finalize`
/// does for `MPI_Init`.
pub unsafe fn MPI_Session_finalize(session: *mut c_int) -> c_int {
    let mut c = Call::begin(ids::MPI_Session_finalize, Cat::Other, false);
    // SAFETY: the caller passes a valid session pointer (or null, which
    // the library rejects).
    let ours = !session.is_null() && life::tracing_session() == Some(unsafe { *session });
    let tracing = c.on() && ours;
    // Every session's finalization is a call with its times (another
    // session's too: it once had no start time, so its duration was the
    // clock's whole value).
    c.enter();
    if tracing {
        life::before_finalize();
    }
    if ours {
        life::release_session_world();
    }
    // SAFETY: same contract as the caller's.
    let rc = unsafe { pmpi::MPI_Session_finalize(session) };
    c.exit(rc);
    if tracing {
        life::after_finalize();
    }
    rc
}

pub unsafe fn MPI_Abort(comm: c_int, errorcode: c_int) -> c_int {
    let mut c = Call::begin(ids::MPI_Abort, Cat::Other, false);
    if c.on() {
        c.comm(comm);
        c.rec.aux = errorcode;
        c.enter();
        if let Some(tr) = state().as_mut() {
            tr.side(&SideEntry::Note { message: format!("MPI_Abort called with error code {errorcode}") });
        }
        rec::flush();
    }
    // SAFETY: same contract as the caller's.
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
    let mut c = Call::begin(ids::MPI_Pcontrol, Cat::Other, false);
    if c.on() {
        c.rec.aux = level;
        c.enter();
    }
    // SAFETY: same contract as the caller's (level is the only argument
    // MPICH reads; passing it non-variadically is ABI-compatible on x86-64).
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
    fn as_slice(&self) -> &[c_int] {
        if self.n <= self.inline.len() {
            &self.inline[..self.n]
        } else {
            &self.heap
        }
    }
}

/// The request handles before the call (completed ones become NULL).
unsafe fn saved(reqs: *const c_int, n: c_int) -> Handles {
    let mut h = Handles { inline: [0; 8], heap: Vec::new(), n: 0 };
    if reqs.is_null() || n <= 0 {
        return h;
    }
    h.n = n as usize;
    // SAFETY: the caller's array holds n requests.
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

/// The status at `i` of an array MPI filled.
unsafe fn status_at(st: *const MPI_Status, i: usize) -> Option<MPI_Status> {
    // SAFETY: MPI filled at least i + 1 statuses.
    (!st.is_null()).then(|| unsafe { *st.add(i) })
}

/// Starts a Wait/Test call on `n` requests.
unsafe fn begin_completion(id: usize, reqs: *const c_int, n: c_int) -> (Call, Handles) {
    let mut c = Call::begin(id, Cat::Other, false);
    // SAFETY: forwarded contract of the caller's request array.
    let s = if c.on() { unsafe { saved(reqs, n) } } else { unsafe { saved(reqs, 0) } };
    if c.on() {
        c.rec.count = n as i64;
        if let [one] = s.as_slice() {
            c.rec.request = *one;
        }
        c.enter();
    }
    (c, s)
}

/// Completed requests: (index in the request array, status).
type Done = Vec<(usize, Option<MPI_Status>)>;

/// A Wait/Test call with one status: `call` runs the MPI procedure with the
/// status pointer to use (the caller's or the shim's own), `done` says which
/// request completed from the return code and that status.
unsafe fn one_status(
    id: usize,
    reqs: *const c_int,
    n: c_int,
    status: *mut MPI_Status,
    call: impl FnOnce(*mut MPI_Status) -> c_int,
    done: impl FnOnce(c_int, Option<MPI_Status>) -> Option<usize>,
) -> c_int {
    // SAFETY: forwarded contract of the caller's request array.
    let (mut c, s) = unsafe { begin_completion(id, reqs, n) };
    let mut own = MPI_Status::default();
    let st = c.status(status, &mut own);
    let rc = call(st);
    if c.on() {
        // SAFETY: MPI filled the status if it completed a request.
        let status = unsafe { status_at(st, 0) };
        if let Some(i) = done(rc, status) {
            complete_requests(&mut c, s.as_slice(), &[(i, status)]);
        }
    }
    c.exit(rc);
    rc
}

/// A Wait/Test call with an array of statuses (see [`one_status`]).
unsafe fn many_statuses(
    id: usize,
    reqs: *const c_int,
    n: c_int,
    statuses_arg: *mut MPI_Status,
    call: impl FnOnce(*mut MPI_Status) -> c_int,
    done: impl FnOnce(c_int, *const MPI_Status) -> Done,
) -> c_int {
    // SAFETY: forwarded contract of the caller's request array.
    let (mut c, s) = unsafe { begin_completion(id, reqs, n) };
    let mut own = Vec::new();
    let st = if c.on() { statuses(statuses_arg, n, &mut own) } else { statuses_arg };
    let rc = call(st);
    if c.on() {
        complete_requests(&mut c, s.as_slice(), &done(rc, st));
    }
    c.exit(rc);
    rc
}

/// The index MPI wrote (MPI_UNDEFINED when none).
unsafe fn index_of(index: *const c_int) -> c_int {
    // SAFETY: MPI wrote the index if the pointer is valid.
    if index.is_null() {
        abi::MPI_UNDEFINED
    } else {
        unsafe { *index }
    }
}

/// Whether a flag MPI wrote is set.
unsafe fn flag_set(flag: *const c_int) -> bool {
    // SAFETY: MPI wrote the flag if the pointer is valid.
    !flag.is_null() && unsafe { *flag } != 0
}

pub unsafe fn MPI_Wait(request: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: same contract as the caller's.
    unsafe {
        one_status(
            ids::MPI_Wait,
            request,
            1,
            status,
            |st| pmpi::MPI_Wait(request, st),
            |rc, _| (rc == abi::MPI_SUCCESS).then_some(0),
        )
    }
}

pub unsafe fn MPI_Test(request: *mut c_int, flag: *mut c_int, status: *mut MPI_Status) -> c_int {
    // SAFETY: same contract as the caller's.
    unsafe {
        one_status(
            ids::MPI_Test,
            request,
            1,
            status,
            |st| pmpi::MPI_Test(request, flag, st),
            |rc, _| (rc == abi::MPI_SUCCESS && flag_set(flag)).then_some(0),
        )
    }
}

pub unsafe fn MPI_Waitany(
    count: c_int,
    array_of_requests: *mut c_int,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: same contract as the caller's.
    unsafe {
        one_status(
            ids::MPI_Waitany,
            array_of_requests,
            count,
            status,
            |st| pmpi::MPI_Waitany(count, array_of_requests, index, st),
            |rc, _| {
                let i = index_of(index);
                (rc == abi::MPI_SUCCESS && i >= 0).then_some(i as usize)
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
    // SAFETY: same contract as the caller's.
    unsafe {
        one_status(
            ids::MPI_Testany,
            array_of_requests,
            count,
            status,
            |st| pmpi::MPI_Testany(count, array_of_requests, index, flag, st),
            |rc, _| {
                let i = index_of(index);
                (rc == abi::MPI_SUCCESS && flag_set(flag) && i >= 0).then_some(i as usize)
            },
        )
    }
}

/// Indices completed by a Waitall/Testall that returned `rc`.
unsafe fn all_done(rc: c_int, n: c_int, st: *const MPI_Status) -> Done {
    (0..n.max(0) as usize)
        .filter_map(|i| {
            // SAFETY: MPI filled n statuses.
            let s = unsafe { status_at(st, i) };
            let done = rc == abi::MPI_SUCCESS
                || (rc == abi::MPI_ERR_IN_STATUS && s.is_some_and(|s| s.MPI_ERROR != abi::MPI_ERR_PENDING));
            done.then_some((i, s))
        })
        .collect()
}

pub unsafe fn MPI_Waitall(count: c_int, array_of_requests: *mut c_int, array_of_statuses: *mut MPI_Status) -> c_int {
    // SAFETY: same contract as the caller's.
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
    // SAFETY: same contract as the caller's.
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
unsafe fn some_done(rc: c_int, outcount: *const c_int, indices: *const c_int, st: *const MPI_Status) -> Done {
    if !(rc == abi::MPI_SUCCESS || rc == abi::MPI_ERR_IN_STATUS) || outcount.is_null() {
        return Vec::new();
    }
    // SAFETY: MPI wrote outcount, and that many indices and statuses.
    let n = unsafe { *outcount };
    if n == abi::MPI_UNDEFINED || n <= 0 {
        return Vec::new();
    }
    (0..n as usize)
        // SAFETY: as above.
        .map(|j| unsafe { (*indices.add(j) as usize, status_at(st, j)) })
        .collect()
}

/// `MPI_Waitsome` and `MPI_Testsome` (same signature).
type SomeFn = unsafe fn(c_int, *mut c_int, *mut c_int, *mut c_int, *mut MPI_Status) -> c_int;

unsafe fn some(
    id: usize,
    f: SomeFn,
    n: c_int,
    reqs: *mut c_int,
    out: *mut c_int,
    idx: *mut c_int,
    st: *mut MPI_Status,
) -> c_int {
    // SAFETY: same contract as the caller's.
    unsafe { many_statuses(id, reqs, n, st, |st| f(n, reqs, out, idx, st), |rc, st| some_done(rc, out, idx, st)) }
}

pub unsafe fn MPI_Waitsome(
    incount: c_int,
    array_of_requests: *mut c_int,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> c_int {
    // SAFETY: same contract as the caller's.
    unsafe {
        some(
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
    // SAFETY: same contract as the caller's.
    unsafe {
        some(
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
    let mut c = Call::begin(ids::MPI_Start, Cat::Other, false);
    if c.on() && !request.is_null() {
        // SAFETY: the caller passes a valid request pointer.
        let h = unsafe { *request };
        match rec::start_request(h) {
            Some(info) => rec::describe_request(&mut c.rec, h, &info),
            None => c.rec.request = h,
        }
        c.enter();
    }
    // SAFETY: same contract as the caller's.
    let rc = unsafe { pmpi::MPI_Start(request) };
    c.exit(rc);
    rc
}

pub unsafe fn MPI_Startall(count: c_int, array_of_requests: *mut c_int) -> c_int {
    let mut c = Call::begin(ids::MPI_Startall, Cat::Other, false);
    if c.on() {
        c.rec.count = count as i64;
        // SAFETY: the caller's array holds count requests.
        for &h in unsafe { saved(array_of_requests, count) }.as_slice() {
            rec::start_request(h);
        }
        c.enter();
    }
    // SAFETY: same contract as the caller's.
    let rc = unsafe { pmpi::MPI_Startall(count, array_of_requests) };
    c.exit(rc);
    rc
}

pub unsafe fn MPI_Request_free(request: *mut c_int) -> c_int {
    let mut c = Call::begin(ids::MPI_Request_free, Cat::Other, false);
    if c.on() && !request.is_null() {
        // SAFETY: the caller passes a valid request pointer.
        let h = unsafe { *request };
        c.rec.request = h;
        if let Some(tr) = state().as_mut() {
            tr.requests.remove(&h);
        }
        c.enter();
    }
    // SAFETY: same contract as the caller's.
    let rc = unsafe { pmpi::MPI_Request_free(request) };
    c.exit(rc);
    rc
}

pub unsafe fn MPI_Comm_set_name(comm: c_int, comm_name: *const c_char) -> c_int {
    let mut c = Call::begin(ids::MPI_Comm_set_name, Cat::Other, false);
    if c.on() {
        c.comm(comm);
        c.enter();
    }
    // SAFETY: same contract as the caller's.
    let rc = unsafe { pmpi::MPI_Comm_set_name(comm, comm_name) };
    if c.on() && rc == abi::MPI_SUCCESS && !comm_name.is_null() {
        // SAFETY: the caller passes a NUL-terminated name.
        let name = unsafe { std::ffi::CStr::from_ptr(comm_name) }.to_string_lossy().into_owned();
        if let Some(tr) = state().as_mut() {
            tr.name_comm(comm, name);
        }
    }
    c.exit(rc);
    rc
}
