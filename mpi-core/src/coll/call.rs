//! How a collective call runs: blocking, nonblocking or persistent, and
//! the one place that builds and runs (or starts) its schedule.

use mpi_api::abi::*;

use crate::bail;
use crate::coll::flat::{Lane, NbKind};
use crate::coll::sched::Sched;
use crate::rt::error::MpiResult;
use crate::rt::{self, State};

/// How a collective call runs.
#[derive(Clone, Copy)]
pub(crate) enum Call {
    Block,
    /// Blocking, with messages only (never in shared memory).
    Msg,
    /// `MPI_I*`: a request completing with the operation.
    Nb(RequestOut),
    /// `MPI_*_init`: an inactive persistent request.
    Init(RequestOut),
}

/// Where a nonblocking or persistent call returns its request: the C
/// caller's `MPI_Request *` argument.
#[derive(Clone, Copy)]
pub(crate) struct RequestOut(*mut MPI_Request);

impl RequestOut {
    /// The request argument of a C call.
    ///
    /// # Safety
    /// `request` is NULL (an error the call reports) or addresses an
    /// `MPI_Request` the call may write.
    #[inline]
    pub(crate) unsafe fn new(request: *mut MPI_Request) -> RequestOut {
        RequestOut(request)
    }

    /// Whether the argument is NULL.
    #[inline]
    pub(crate) fn is_null(self) -> bool {
        self.0.is_null()
    }

    /// Returns handle `h` to the caller (nothing if the argument is NULL).
    #[inline]
    pub(crate) fn set(self, h: MPI_Request) {
        if !self.0.is_null() {
            // SAFETY: not NULL, so writable (`RequestOut::new`).
            unsafe { self.0.write(h) };
        }
    }
}

impl Call {
    /// `MPI_I*` with its request argument.
    ///
    /// # Safety
    /// As for [`RequestOut::new`].
    #[inline]
    pub(crate) unsafe fn nonblocking(request: *mut MPI_Request) -> Call {
        // SAFETY: this function's contract is `RequestOut::new`'s.
        Call::Nb(unsafe { RequestOut::new(request) })
    }

    /// `MPI_*_init` with its request argument.
    ///
    /// # Safety
    /// As for [`RequestOut::new`].
    #[inline]
    pub(crate) unsafe fn persistent(request: *mut MPI_Request) -> Call {
        // SAFETY: this function's contract is `RequestOut::new`'s.
        Call::Init(unsafe { RequestOut::new(request) })
    }
}

/// Builds the schedule of a collective on `comm` with `build`, then runs it
/// as `call` says.
pub(crate) fn run(
    comm: MPI_Comm,
    call: Call,
    build: impl FnOnce(&mut State, &mut Sched) -> MpiResult<()>,
) -> MpiResult<()> {
    run_or(comm, call, None, build)
}

/// [`run`], with the shared-memory part a persistent operation runs when
/// the communicator has a segment.
pub(crate) fn run_or(
    comm: MPI_Comm,
    call: Call,
    plan: Option<(usize, Box<dyn NbKind>)>,
    build: impl FnOnce(&mut State, &mut Sched) -> MpiResult<()>,
) -> MpiResult<()> {
    run_sched(comm, call, plan, None, build)
}

/// A blocking schedule whose messages carry `tag` (see [`Sched::new_tagged`]).
pub(crate) fn run_tagged(
    comm: MPI_Comm,
    tag: i32,
    build: impl FnOnce(&mut State, &mut Sched) -> MpiResult<()>,
) -> MpiResult<()> {
    run_sched(comm, Call::Block, None, Some(tag), build)
}

/// [`run_or`], with messages under `tag` if given.
pub(crate) fn run_sched(
    comm: MPI_Comm,
    call: Call,
    plan: Option<(usize, Box<dyn NbKind>)>,
    tag: Option<i32>,
    build: impl FnOnce(&mut State, &mut Sched) -> MpiResult<()>,
) -> MpiResult<()> {
    rt::ulfm::check(comm)?;
    let blocking = rt::with(|st| {
        // The guard a nonblocking call's shared-memory look took (none for
        // other calls): completed by this schedule before its first step,
        // or, if the schedule fails to build, in the background.
        let guard = st.coll.pending_guard.take();
        let guard_bytes = st.coll.pending_guard_bytes.take().filter(|_| matches!(call, Call::Init(_)));
        let built = (|| {
            let lane = if matches!(call, Call::Nb(_) | Call::Init(_)) { Lane::Nb } else { Lane::Block };
            let mut s = Sched::new_tagged(st, comm, tag, lane)?;
            s.flat = plan;
            if let Call::Nb(req) | Call::Init(req) = call {
                if req.is_null() {
                    bail!(MPI_ERR_ARG, "request is a NULL pointer");
                }
            }
            build(st, &mut s)?;
            Ok(s)
        })();
        let mut s = match built {
            Ok(s) => s,
            Err(e) => {
                st.coll.pending_guard = guard;
                crate::coll::drop_pending_guard(st);
                return Err(e);
            }
        };
        s.guard = guard;
        s.guard_bytes = guard_bytes;
        s.seal(st);
        match call {
            Call::Block | Call::Msg => {
                let done = s.advance(st);
                Ok(Some((s, done)))
            }
            Call::Nb(req) => {
                let h = crate::coll::start_nonblocking(st, s);
                req.set(h);
                Ok(None)
            }
            Call::Init(req) => {
                let h = crate::coll::persistent_request(st, s);
                req.set(h);
                Ok(None)
            }
        }
    })?;
    if let Some((mut s, done)) = blocking {
        if !done {
            rt::wait_until(|st| s.advance(st))?;
        }
        s.result()?;
    }
    Ok(())
}
