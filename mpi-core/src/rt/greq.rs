//! MPICH's extended generalized requests (`MPIX_Grequest_start`,
//! `MPIX_Grequest_class_create`, `MPIX_Grequest_class_allocate`): a
//! generalized request with two more callbacks, which the library calls to
//! complete it instead of waiting for another thread of the program.
//!
//! * `poll_fn(extra_state, status)` makes the request progress and calls
//!   `MPI_Grequest_complete` when it is done. The completion calls call it
//!   for the extended requests they are given that are not complete yet:
//!   a `Test` once, a `Wait` until the call's condition holds.
//! * `wait_fn(count, states, timeout, status)` blocks until the requests of
//!   `states` complete. `MPI_Wait`/`MPI_Waitall` call it once per request
//!   (count 1, timeout 0) when every request they still wait for has one,
//!   and then go on polling.
//!
//! Both are the program's code and run without the runtime's lock (they
//! call `MPI_Grequest_complete`, and often MPI communication). A class is a
//! set of callbacks kept for the life of the process (MPICH has no call to
//! free one); its handle is an `int`.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use mpi_api::abi::*;

use super::error::MpiResult;
use super::p2p::{empty_status, Greq, GreqCancelFn, GreqFreeFn, GreqPollFn, GreqQueryFn, GreqWaitFn, Kind};
use super::req::greq_result;
use super::{with, State};
use crate::bail;

/// Whether the process ever started an extended generalized request: the
/// completion calls of programs that never do look no further.
static USED: AtomicBool = AtomicBool::new(false);

/// The callbacks of a class (`MPIX_Grequest_class_create`).
#[derive(Clone, Copy)]
pub struct GreqFns {
    pub query: Option<GreqQueryFn>,
    pub free: Option<GreqFreeFn>,
    pub cancel: Option<GreqCancelFn>,
    pub poll: Option<GreqPollFn>,
    pub wait: Option<GreqWaitFn>,
}

impl GreqFns {
    /// A request of these callbacks with `extra` as its state.
    pub fn with_state(self, extra: *mut std::ffi::c_void) -> Greq {
        Greq { query: self.query, free: self.free, cancel: self.cancel, poll: self.poll, wait: self.wait, extra }
    }
}

/// The classes created, by handle minus [`CLASS_BASE`].
static CLASSES: Mutex<Vec<GreqFns>> = Mutex::new(Vec::new());

/// First class handle (any value that is not a small integer a program
/// might pass by mistake).
const CLASS_BASE: c_int = 0x6a00_0000;

/// `MPIX_Grequest_class_create`: the handle of a new class.
pub fn class_create(fns: GreqFns) -> MpiResult<c_int> {
    let mut classes = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
    if classes.len() >= 0x00ff_ffff {
        bail!(MPI_ERR_OTHER, "too many generalized request classes");
    }
    classes.push(fns);
    Ok(CLASS_BASE + classes.len() as c_int - 1)
}

/// `MPIX_Grequest_class_allocate`: a new request of class `class`.
pub fn class_allocate(class: c_int, extra: *mut std::ffi::c_void) -> MpiResult<MPI_Request> {
    let fns = {
        let classes = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
        match class.checked_sub(CLASS_BASE).and_then(|i| classes.get(usize::try_from(i).ok()?)) {
            Some(f) => *f,
            None => bail!(MPI_ERR_ARG, "{class} is not a generalized request class (MPIX_Grequest_class_create)"),
        }
    };
    start(fns.with_state(extra))
}

/// `MPI_Grequest_start` and `MPIX_Grequest_start`.
pub fn start(g: Greq) -> MpiResult<MPI_Request> {
    if g.extended() {
        USED.store(true, Ordering::Relaxed);
    }
    super::req::greq_start(g)
}

/// What a completion call needs before it finishes its requests.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A `Test`: each extended request polled once.
    Poll,
    /// `MPI_Wait`, `MPI_Waitall`: every request complete.
    All,
    /// `MPI_Waitany`, `MPI_Waitsome`: one request complete.
    Any,
}

/// Drives the extended generalized requests among `hs` (handles the call
/// validates itself: invalid ones are passed over here) until `want` holds,
/// calling their callbacks without the lock. Returns at once in a process
/// that never started one.
pub fn drive(hs: &[MPI_Request], want: Want) -> MpiResult<()> {
    if !USED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut waited = false;
    loop {
        let (pending, others, satisfied) = with(|st| {
            st.progress();
            Ok(look(st, hs, want))
        })?;
        if pending.is_empty() || (satisfied && want != Want::Poll) {
            return Ok(());
        }
        if want == Want::All && !waited && others == 0 && pending.iter().all(|g| g.wait.is_some()) {
            waited = true;
            for g in &pending {
                call_wait(g)?;
            }
            continue;
        }
        for g in &pending {
            call_poll(g)?;
        }
        if want == Want::Poll {
            return Ok(());
        }
        std::thread::yield_now();
    }
}

/// The extended requests among `hs` not complete yet, how many other
/// requests are not, and whether `want` holds.
fn look(st: &mut State, hs: &[MPI_Request], want: Want) -> (Vec<Greq>, usize, bool) {
    let mut pending = Vec::new();
    let (mut live, mut done, mut others) = (0, 0, 0);
    for &h in hs {
        if h == MPI_REQUEST_NULL {
            continue;
        }
        let Ok(i) = st.reqs.index(h) else { continue };
        let r = st.reqs.get(i);
        if r.persist.is_some() && !r.active {
            continue;
        }
        live += 1;
        if r.done {
            done += 1;
            continue;
        }
        match r.kind {
            Kind::Greq(g) if g.extended() => pending.push(g),
            _ => others += 1,
        }
    }
    let satisfied = match want {
        Want::All | Want::Poll => done == live,
        Want::Any => done > 0 || live == 0,
    };
    (pending, others, satisfied)
}

fn call_poll(g: &Greq) -> MpiResult<()> {
    let Some(poll) = g.poll else { return Ok(()) };
    let mut status = empty_status();
    super::entering_user_code();
    // SAFETY: the program gave `poll` as its MPIX_Grequest_poll_function;
    // it gets its extra_state and a status writable during the call, and no
    // lock is held (it may call MPI_Grequest_complete).
    let code = unsafe { poll(g.extra, &mut status) };
    greq_result(code, "poll")
}

fn call_wait(g: &Greq) -> MpiResult<()> {
    let Some(wait) = g.wait else { return Ok(()) };
    let mut status = empty_status();
    let mut states = [g.extra];
    super::entering_user_code();
    // SAFETY: the program gave `wait` as its MPIX_Grequest_wait_function; it
    // gets one state in an array that lives through the call, a timeout and
    // a writable status, and no lock is held.
    let code = unsafe { wait(1, states.as_mut_ptr(), 0.0, &mut status) };
    greq_result(code, "wait")
}
