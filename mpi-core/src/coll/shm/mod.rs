//! Collectives in the communicator's shared-memory segment ([`flat`]): the
//! driver that runs one rank's part of an operation ([`in_segment`]:
//! blocking, started nonblocking, or planned for a persistent request),
//! makes the segment on first use, and takes the segment's next operation;
//! the protocols, one module per family:
//!
//! * [`ops`]: the general operation of each collective (packed parts).
//! * [`fast`]: the blocking fast path of small contiguous data.
//! * [`pieces`]: a large blocking Allreduce in consecutive operations.
//! * [`direct`]: single copies between user buffers (`process_vm_readv`).
//! * [`vtables`]: Alltoallv and Alltoallw with tables of offsets.
//! * [`rooted`]: Gatherv and Scatterv with tables of offsets.

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi_api::abi::*;

use crate::bail;
use crate::coll::buf::Reduction;
use crate::coll::call::{Call, RequestOut};
use crate::coll::entry::{allreduce, bcast};
use crate::coll::flat::{self, Flat, Lane, Lookup, NbKind, NbOp};
use crate::coll::parts;
use crate::rt::buf::UserBuf;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self, State};

/// This rank's part of an operation in shared memory, or why its own
/// arguments are bad and the bytes it publishes instead of data (so the
/// other ranks are not stuck).
pub(crate) type Part = Result<Box<dyn NbKind>, (MpiError, Option<usize>)>;

/// A collective in shared memory, if `comm` has a segment (made here, a
/// collective step, by a blocking call; a nonblocking call never makes one)
/// and `prep` takes the call: it looks at the arguments every rank has alike
/// (under the lock) and gives what the operation needs and its bytes per
/// rank, or None: use messages (which also report bad arguments). `part`
/// checks this rank's own arguments and gives its part. A blocking call
/// runs it here, a nonblocking one starts it; a persistent one gets it as
/// the plan of its starts.
pub(crate) fn in_segment<T>(
    call: Call,
    comm: MPI_Comm,
    mut prep: impl FnMut(&mut State, usize) -> Option<(T, usize)>,
    part: impl FnOnce(&mut State, &Who, T) -> Part,
) -> Shm {
    match call {
        Call::Block => {}
        Call::Nb(req) => return segment_start(comm, req, prep, part).map_or(Shm::No, Shm::Done),
        Call::Init(_) => return segment_plan(comm, prep, part).map_or(Shm::No, Shm::Plan),
        Call::Msg => return Shm::No,
    }
    let mut part = Some(part);
    loop {
        let found = rt::with(|st| {
            let size = st.comms.get(comm)?.size() as usize;
            let Some((t, bytes)) = prep(st, size) else { return Ok(Err(NotInSegment::Msg(None))) };
            Ok(match flat::lookup(st, comm, Lane::Block, bytes)? {
                Lookup::Ready(f) => {
                    let p = part.take().expect("a part is made once")(st, &Who { rank: f.rank, size: f.size }, t);
                    Ok((f, p))
                }
                Lookup::No => Err(NotInSegment::Msg(flat::guard(st, comm, Lane::Block, bytes)?.map(|g| (g, bytes)))),
                Lookup::Setup { ctx, rank, size, room } => {
                    Err(NotInSegment::MakeSegment(NewSegment { ctx, rank, size, room }))
                }
            })
        });
        let new = match found {
            // SAFETY: the part's user buffers are lent for this call.
            Ok(Ok((f, p))) => return Shm::Done(f.wait_turn().and_then(|()| unsafe { run_part(&f, p) })),
            // Too large for the segment: messages, once every rank's length
            // is known to match (see `flat::guard`).
            Ok(Err(NotInSegment::Msg(Some((g, bytes))))) => {
                return g.guard_check(bytes).map_or_else(|e| Shm::Done(Err(e)), |()| Shm::No)
            }
            Ok(Err(NotInSegment::Msg(None))) | Err(_) => return Shm::No,
            Ok(Err(NotInSegment::MakeSegment(new))) => new,
        };
        if let Err(e) = make_segment(comm, new) {
            return Shm::Done(Err(e));
        }
    }
}

/// Why [`in_segment`] does not run a blocking call in the segment now.
pub(crate) enum NotInSegment {
    /// Messages, after the operation of `flat::guard` (if any) with the bytes.
    Msg(Option<(Flat, usize)>),
    /// No segment yet: make it.
    MakeSegment(NewSegment),
}

/// What [`in_segment`] did with a call.
pub(crate) enum Shm {
    /// Ran it (blocking) or started it (nonblocking).
    Done(MpiResult<()>),
    /// A persistent call: the part each start runs if the communicator has
    /// its segment by then, and its bytes per rank.
    Plan((usize, Box<dyn NbKind>)),
    /// Use messages.
    No,
}

/// The rank and communicator size a part is made for.
pub(crate) struct Who {
    pub(crate) rank: usize,
    pub(crate) size: usize,
}

/// A communicator's segment still to be made (see [`make_segment`]).
pub(crate) struct NewSegment {
    /// The communicator's collective context.
    ctx: u32,
    rank: usize,
    size: usize,
    /// Whether this process may map one more segment.
    room: bool,
}

/// [`in_segment`] for a persistent call: its part, if `prep` and `part` take it
/// (bad arguments are reported by the message path).
pub(crate) fn segment_plan<T>(
    comm: MPI_Comm,
    prep: impl FnOnce(&mut State, usize) -> Option<(T, usize)>,
    part: impl FnOnce(&mut State, &Who, T) -> Part,
) -> Option<(usize, Box<dyn NbKind>)> {
    rt::with(|st| {
        let c = st.comms.get(comm)?;
        let who = Who { rank: c.rank as usize, size: c.size() as usize };
        if c.is_inter() || who.size < 2 {
            return Ok(None);
        }
        let Some((t, bytes)) = prep(st, who.size) else { return Ok(None) };
        if flat::fits(&st.coll.tune, bytes).is_none() {
            // Messages, after the guard at each start (see `flat::guard`).
            st.coll.pending_guard_bytes = Some(bytes);
            return Ok(None);
        }
        Ok(part(st, &who, t).ok().map(|p| (bytes, p)))
    })
    .ok()
    .flatten()
}

/// Makes the shared-memory segment of a communicator.
pub(crate) fn make_segment(comm: MPI_Comm, new: NewSegment) -> MpiResult<()> {
    let NewSegment { ctx, rank, size, room } = new;
    // Rank 0 makes the segment and says so, with its process id and the
    // segment's descriptor; the others map it; all agree it worked.
    let len = flat::seg_len(size);
    let mut map = None;
    let mut fd = -1;
    let mut hello = [0 as c_int; 3];
    if rank == 0 {
        if let Some((m, f)) = if room { flat::create_anon(c"mpicore-coll", len) } else { None } {
            (map, fd) = (Some(m), f);
        }
        hello = [map.is_some() as c_int, std::process::id() as c_int, fd];
    }
    // SAFETY: `hello` and `all` live across the blocking calls.
    bcast(Call::Msg, unsafe { UserBuf::new(hello.as_mut_ptr() as *const c_void, 3, MPI_INT) }, 0, comm)?;
    if rank != 0 && hello[0] != 0 && room {
        map = flat::open_anon(hello[1] as u32, hello[2], len);
    }
    // Whether every rank mapped it, and the most nonblocking operations
    // any rank has started (negated, for one MIN).
    let nb = rt::with(|st| Ok(flat::nb_count(st, ctx)))?;
    let mut all = [map.is_some() as i64, -(nb as i64)];
    // SAFETY: as above.
    let red =
        unsafe { Reduction::new(MPI_IN_PLACE as *const c_void, all.as_mut_ptr() as *mut c_void, MPI_INT64_T, MPI_MIN) };
    let agreed = allreduce(Call::Msg, red, 2, comm);
    if fd >= 0 {
        flat::close_anon(fd);
    }
    agreed?;
    rt::with(|st| {
        flat::install(st, comm, ctx, map, all[0] == 1, all[1].unsigned_abs());
        Ok(())
    })
}

/// Runs part `part` of blocking operation `f` (whose turn it is) to its end.
///
/// # Safety
/// The user buffers `part` views stay lent until it returns.
pub(crate) unsafe fn run_part(f: &Flat, part: Part) -> MpiResult<()> {
    let (mut kind, err) = match part {
        Ok(k) => (k, None),
        Err((e, bytes)) => (Box::new(parts::Blank(bytes)) as Box<dyn NbKind>, Some(e)),
    };
    if kind.data() {
        f.wait_free()?;
    }
    // SAFETY: the user buffers of `part` are lent for this blocking call, and
    // this rank's buffer is free (waited for above when it writes data).
    let bytes = unsafe { kind.write(f) };
    f.publish(bytes);
    if kind.peers_have_data() {
        f.wait_data(kind.peers(f))?;
    } else {
        f.wait_for(kind.peers(f))?;
    }
    // SAFETY: the peers have published (waited for just above); the user
    // buffers are still lent (a blocking call).
    unsafe { kind.read(f)? };
    err.map_or(Ok(()), Err)
}

/// [`in_segment`] for a nonblocking call: its part runs in the background; if
/// this rank's arguments (or the request pointer) are bad, the operation
/// still does a blank part and the call fails.
pub(crate) fn segment_start<T>(
    comm: MPI_Comm,
    req: RequestOut,
    prep: impl FnOnce(&mut State, usize) -> Option<(T, usize)>,
    part: impl FnOnce(&mut State, &Who, T) -> Part,
) -> Option<MpiResult<()>> {
    let r = rt::with(|st| {
        crate::coll::drop_pending_guard(st);
        let size = st.comms.get(comm)?.size() as usize;
        let Some((t, bytes)) = prep(st, size) else { return Ok(None) };
        if !flat::nb_op(st, comm)? {
            return Ok(None);
        }
        let f = match flat::lookup(st, comm, Lane::Nb, bytes)? {
            Lookup::Ready(f) => f,
            Lookup::No => {
                // Too large for the segment: messages, once every rank's
                // length is known to match (see `flat::guard`; the schedule
                // made next completes this first).
                if let Some(g) = flat::guard(st, comm, Lane::Nb, bytes)? {
                    st.coll.pending_guard = Some(NbOp::new(g, Box::new(parts::Guard(bytes))));
                }
                return Ok(None);
            }
            Lookup::Setup { .. } => return Ok(None),
        };
        // From here on this rank takes part in operation f.
        let (kind, mut err) = match part(st, &Who { rank: f.rank, size: f.size }, t) {
            Ok(k) => (k, None),
            Err((e, bytes)) => (Box::new(parts::Blank(bytes)) as Box<dyn NbKind>, Some(e)),
        };
        if req.is_null() {
            err.get_or_insert(MpiError::new(MPI_ERR_ARG, "request is a NULL pointer"));
        }
        let h = crate::coll::start_flat(st, comm, NbOp::new(f, kind), err.is_none());
        Ok(Some(match (err, h) {
            (Some(e), _) => Err(e),
            // SAFETY: checked non-NULL above; the caller's request.
            (None, Some(h)) => {
                req.set(h);
                Ok(())
            }
            (None, None) => Ok(()),
        }))
    });
    r.ok().flatten()
}

/// The next shared-memory operation of `comm` (which has its segment, as
/// for the operation before), for `bytes` per rank.
pub(crate) fn next_op(comm: MPI_Comm, bytes: usize) -> MpiResult<Flat> {
    rt::with(|st| match flat::lookup(st, comm, Lane::Block, bytes)? {
        Lookup::Ready(f) => Ok(f),
        _ => bail!(MPI_ERR_INTERN, "the shared-memory segment went away during a collective"),
    })
}

/// The next operation of the segment of `comm` (made here if it has none
/// yet: a collective step) for a rank with `bytes` to write, and whether
/// they are too many for it (then the operation carries only their length,
/// kind `Msg`, and they go as messages). None: the communicator uses
/// messages only (alike on every rank).
pub(crate) fn segment_op(comm: MPI_Comm, bytes: usize) -> Option<MpiResult<(Flat, bool)>> {
    loop {
        let found = rt::with(|st| {
            let fits = flat::fits(&st.coll.tune, bytes).is_some();
            Ok(match flat::lookup(st, comm, Lane::Block, if fits { bytes } else { 0 })? {
                Lookup::Ready(mut f) => {
                    if !fits {
                        f.by_message();
                    }
                    Ok((f, !fits))
                }
                Lookup::No => Err(None),
                Lookup::Setup { ctx, rank, size, room } => Err(Some(NewSegment { ctx, rank, size, room })),
            })
        });
        match found {
            Ok(Ok(x)) => return Some(Ok(x)),
            Ok(Err(None)) | Err(_) => return None,
            Ok(Err(Some(new))) => {
                if let Err(e) = make_segment(comm, new) {
                    return Some(Err(e));
                }
            }
        }
    }
}

pub(crate) mod direct;
pub(crate) mod fast;
pub(crate) mod ops;
pub(crate) mod pieces;
pub(crate) mod rooted;
pub(crate) mod vtables;
