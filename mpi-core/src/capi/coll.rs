//! Chapter 6 (MPI 4.1), collective communication: argument checks and the
//! packed views of user buffers, then the algorithms of `crate::coll`.
//!
//! Every collective has one implementation here taking a [`Call`] (blocking,
//! nonblocking `MPI_I*`, persistent `*_init`) and 64-bit counts; the exported
//! variants at the end of the file only forward to it.
#![allow(clippy::too_many_arguments)] // the standard's argument lists

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::p2p::twins;
use super::{intercoll, put, ret};
use crate::bail;
use crate::coll::algo;
use crate::coll::flat::{self, Flat, Lookup, NbKind, NbOp};
use crate::coll::parts;
use crate::coll::sched::{Reducer, Sched, P};
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::op::{self, UserOp};
use crate::rt::{self, State};

/// How a collective call runs.
#[derive(Clone, Copy)]
pub(crate) enum Call {
    Block,
    /// Blocking, with messages only (never in shared memory).
    Msg,
    /// `MPI_I*`: a request completing with the operation.
    Nb(*mut MPI_Request),
    /// `MPI_*_init`: an inactive persistent request.
    Init(*mut MPI_Request),
}

/// Builds the schedule of a collective on `comm` with `build`, then runs it
/// as `call` says.
pub(super) fn run(
    comm: MPI_Comm,
    call: Call,
    build: impl FnOnce(&mut State, &mut Sched) -> MpiResult<()>,
) -> MpiResult<()> {
    run_or(comm, call, None, build)
}

/// [`run`], with the shared-memory part a persistent operation runs when
/// the communicator has a segment.
fn run_or(
    comm: MPI_Comm,
    call: Call,
    plan: Option<(usize, Box<dyn NbKind>)>,
    build: impl FnOnce(&mut State, &mut Sched) -> MpiResult<()>,
) -> MpiResult<()> {
    run_sched(comm, call, plan, None, build)
}

/// A blocking schedule whose messages carry `tag` (see [`Sched::new_tagged`]).
fn run_tagged(comm: MPI_Comm, tag: i32, build: impl FnOnce(&mut State, &mut Sched) -> MpiResult<()>) -> MpiResult<()> {
    run_sched(comm, Call::Block, None, Some(tag), build)
}

/// [`run_or`], with messages under `tag` if given.
fn run_sched(
    comm: MPI_Comm,
    call: Call,
    plan: Option<(usize, Box<dyn NbKind>)>,
    tag: Option<i32>,
    build: impl FnOnce(&mut State, &mut Sched) -> MpiResult<()>,
) -> MpiResult<()> {
    let blocking = rt::with(|st| {
        // The guard a nonblocking call's shared-memory look took (none for
        // other calls): completed by this schedule before its first step,
        // or, if the schedule fails to build, in the background.
        let guard = st.coll.pending_guard.take();
        let guard_bytes = st.coll.pending_guard_bytes.take().filter(|_| matches!(call, Call::Init(_)));
        let built = (|| {
            let mut s = Sched::new_tagged(st, comm, tag)?;
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
                // SAFETY: checked non-NULL above; the caller's request.
                unsafe { put(req, h, "request")? };
                Ok(None)
            }
            Call::Init(req) => {
                let h = crate::coll::persistent_request(st, s);
                // SAFETY: as above.
                unsafe { put(req, h, "request")? };
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

/// An array argument of counts or displacements (`int` or large-count).
#[derive(Clone, Copy)]
pub(crate) enum Arr {
    I32(*const c_int),
    I64(*const i64),
}
impl From<*const c_int> for Arr {
    fn from(p: *const c_int) -> Arr {
        Arr::I32(p)
    }
}
impl From<*const i64> for Arr {
    fn from(p: *const i64) -> Arr {
        Arr::I64(p)
    }
}
impl Arr {
    /// The first `n` values.
    ///
    /// # Safety
    /// The pointer is NULL or addresses `n` values.
    pub(super) unsafe fn read(self, n: usize, what: &str) -> MpiResult<Vec<i64>> {
        match self {
            Arr::I32(p) if !p.is_null() => Ok((0..n).map(|i| *p.add(i) as i64).collect()),
            Arr::I64(p) if !p.is_null() => Ok((0..n).map(|i| *p.add(i)).collect()),
            _ if n == 0 => Ok(Vec::new()),
            _ => bail!(MPI_ERR_ARG, "{what} is a NULL pointer"),
        }
    }
    /// Whether the pointer is NULL.
    pub(super) fn is_null(self) -> bool {
        match self {
            Arr::I32(p) => p.is_null(),
            Arr::I64(p) => p.is_null(),
        }
    }

    /// Value `i`.
    ///
    /// # Safety
    /// The pointer addresses more than `i` values.
    pub(super) unsafe fn get(self, i: usize) -> i64 {
        match self {
            Arr::I32(p) => *p.add(i) as i64,
            Arr::I64(p) => *p.add(i),
        }
    }

    /// The first `n` values, each a valid count.
    pub(super) unsafe fn counts(self, n: usize, what: &str) -> MpiResult<Vec<usize>> {
        self.read(n, what)?.into_iter().map(check_count).collect()
    }
}

fn in_place(p: *const c_void) -> bool {
    p as usize == MPI_IN_PLACE
}

fn check_root(root: c_int, size: usize) -> MpiResult<usize> {
    if root < 0 || root as usize >= size {
        bail!(MPI_ERR_ROOT, "invalid root {root} in a communicator of size {size}");
    }
    Ok(root as usize)
}

fn check_buf(buf: *const c_void, count: usize, dt: &Dtype, what: &str) -> MpiResult<()> {
    // Derived types may address absolute locations from MPI_BOTTOM (NULL).
    if in_place(buf) {
        bail!(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed as {what} here");
    }
    if buf.is_null() && count > 0 && dt.size > 0 && dt.contig {
        bail!(MPI_ERR_BUFFER, "{what} is NULL with count {count}");
    }
    Ok(())
}

fn no_alias(sendbuf: *const c_void, recvbuf: *const c_void, bytes: usize) -> MpiResult<()> {
    if sendbuf == recvbuf && bytes > 0 && !sendbuf.is_null() {
        bail!(MPI_ERR_BUFFER, "sendbuf and recvbuf are the same buffer (use MPI_IN_PLACE)");
    }
    Ok(())
}

/// Address of element `i` of `dt` at `buf`.
pub(super) fn elem(buf: *const c_void, i: usize, dt: &Dtype) -> *mut u8 {
    (buf as *mut u8).wrapping_offset(i as isize * dt.extent)
}

/// A buffer argument with its count and type, checked.
pub(super) fn typed(
    st: &mut State,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    what: &str,
) -> MpiResult<(usize, Arc<Dtype>)> {
    let n = check_count(count)?;
    let dt = st.types.get(datatype)?;
    check_buf(buf, n, &dt, what)?;
    Ok((n, dt))
}

fn signature_match(mine: usize, root: usize) -> MpiResult<()> {
    if mine != root {
        bail!(MPI_ERR_TRUNCATE, "the send and receive parts of this rank differ in size ({mine} and {root} bytes)");
    }
    Ok(())
}

/// The user-defined operation behind handle `op`.
fn user_op(st: &State, op: MPI_Op) -> MpiResult<UserOp> {
    let i = handle_index(op) as usize;
    if handle_kind(op) == HANDLE_KIND_DIRECT && handle_obj(op) == OBJ_OP {
        if let Some(Some(u)) = st.coll.ops.get(i) {
            return Ok(*u);
        }
    }
    if op == MPI_OP_NULL {
        bail!(MPI_ERR_OP, "MPI_OP_NULL is not a valid operation");
    }
    bail!(MPI_ERR_OP, "invalid operation handle 0x{:08x}", op as u32)
}

/// How `op` reduces elements of `dt` (handle `datatype`).
pub(super) fn reducer(st: &State, op: MPI_Op, datatype: MPI_Datatype, dt: &Arc<Dtype>) -> MpiResult<Reducer> {
    if op::is_predefined(op) {
        let Some(basic) = dt.basic else {
            bail!(MPI_ERR_OP, "predefined operations need a datatype made of a single predefined type");
        };
        op::check(op, basic)?;
        return Ok(Reducer::Builtin { op, basic });
    }
    let f = user_op(st, op)?;
    Ok(Reducer::User { f, handle: datatype, dt: dt.clone() })
}

// ----- small messages in shared memory -------------------------------------------------

/// This rank's part of an operation in shared memory, or why its own
/// arguments are bad and the bytes it publishes instead of data (so the
/// other ranks are not stuck).
type Part = Result<Box<dyn NbKind>, (MpiError, Option<usize>)>;

/// A collective in shared memory, if `comm` has a segment (made here, a
/// collective step, by a blocking call; a nonblocking call never makes one)
/// and `prep` takes the call: it looks at the arguments every rank has alike
/// (under the lock) and gives what the operation needs and its bytes per
/// rank, or None: use messages (which also report bad arguments). `part`
/// checks this rank's own arguments and gives its part. A blocking call
/// runs it here, a nonblocking one starts it; a persistent one gets it as
/// the plan of its starts.
fn flat<T>(
    call: Call,
    comm: MPI_Comm,
    mut prep: impl FnMut(&mut State, usize) -> Option<(T, usize)>,
    part: impl FnOnce(&mut State, &Who, T) -> Part,
) -> Shm {
    match call {
        Call::Block => {}
        Call::Nb(req) => return flat_nb(comm, req, prep, part).map_or(Shm::No, Shm::Done),
        Call::Init(_) => return flat_plan(comm, prep, part).map_or(Shm::No, Shm::Plan),
        Call::Msg => return Shm::No,
    }
    let mut part = Some(part);
    loop {
        let found = rt::with(|st| {
            let size = st.comms.get(comm)?.size() as usize;
            let Some((t, bytes)) = prep(st, size) else { return Ok(Err(NotHere::Msg(None))) };
            Ok(match flat::lookup(st, comm, bytes)? {
                Lookup::Ready(f) => {
                    let p = part.take().expect("a part is made once")(st, &Who { rank: f.rank, size: f.size }, t);
                    Ok((f, p))
                }
                Lookup::No => Err(NotHere::Msg(flat::guard(st, comm, bytes)?.map(|g| (g, bytes)))),
                Lookup::Setup { ctx, rank, size, room } => Err(NotHere::Setup(ctx, rank, size, room)),
            })
        });
        let (ctx, rank, size, room) = match found {
            // SAFETY: the part's user buffers are lent for this call.
            Ok(Ok((f, p))) => return Shm::Done(f.wait_turn().and_then(|()| unsafe { flat_go(&f, p) })),
            // Too large for the segment: messages, once every rank's length
            // is known to match (see `flat::guard`).
            Ok(Err(NotHere::Msg(Some((g, bytes))))) => {
                return g.guard_check(bytes).map_or_else(|e| Shm::Done(Err(e)), |()| Shm::No)
            }
            Ok(Err(NotHere::Msg(None))) | Err(_) => return Shm::No,
            Ok(Err(NotHere::Setup(ctx, rank, size, room))) => (ctx, rank, size, room),
        };
        if let Err(e) = flat_setup(comm, ctx, rank, size, room) {
            return Shm::Done(Err(e));
        }
    }
}

/// Why [`flat`] does not run a blocking call in the segment now.
enum NotHere {
    /// Messages, after the operation of `flat::guard` (if any) with the bytes.
    Msg(Option<(Flat, usize)>),
    /// No segment yet: make it (communicator context, rank, size, whether
    /// this process may map one more).
    Setup(u32, usize, usize, bool),
}

/// What [`flat`] did with a call.
enum Shm {
    /// Ran it (blocking) or started it (nonblocking).
    Done(MpiResult<()>),
    /// A persistent call: the part each start runs if the communicator has
    /// its segment by then, and its bytes per rank.
    Plan((usize, Box<dyn NbKind>)),
    /// Use messages.
    No,
}

/// The rank and communicator size a part is made for.
struct Who {
    rank: usize,
    size: usize,
}

/// [`flat`] for a persistent call: its part, if `prep` and `part` take it
/// (bad arguments are reported by the message path).
fn flat_plan<T>(
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
fn flat_setup(comm: MPI_Comm, ctx: u32, rank: usize, size: usize, room: bool) -> MpiResult<()> {
    // Rank 0 makes the segment and says so, with its process id (part of
    // the name); the others map it; all agree it worked.
    let len = flat::seg_len(size);
    let mut map = None;
    let mut hello = [0 as c_int; 2];
    if rank == 0 {
        let name = rt::with(|st| Ok(flat::name(st, ctx, std::process::id())))?;
        if room {
            map = flat::create(&name, len);
        }
        hello = [map.is_some() as c_int, std::process::id() as c_int];
    }
    // SAFETY: `hello` and `all` live across the blocking calls.
    unsafe { bcast(Call::Msg, hello.as_mut_ptr() as *mut c_void, 2, MPI_INT, 0, comm)? };
    let name = rt::with(|st| Ok(flat::name(st, ctx, hello[1] as u32)))?;
    if rank != 0 && hello[0] != 0 && room {
        map = flat::open(&name, len);
    }
    let mut all = [map.is_some() as c_int];
    // SAFETY: as above.
    unsafe {
        allreduce(Call::Msg, MPI_IN_PLACE as *const c_void, all.as_mut_ptr() as *mut c_void, 1, MPI_INT, MPI_MIN, comm)?
    };
    if rank == 0 && hello[0] != 0 {
        flat::unlink(&name);
    }
    rt::with(|st| {
        flat::install(st, comm, ctx, map, all[0] == 1);
        Ok(())
    })
}

/// Runs part `part` of blocking operation `f` (whose turn it is) to its end.
unsafe fn flat_go(f: &Flat, part: Part) -> MpiResult<()> {
    let (mut kind, err) = match part {
        Ok(k) => (k, None),
        Err((e, bytes)) => (Box::new(parts::Blank(bytes)) as Box<dyn NbKind>, Some(e)),
    };
    if kind.data() {
        f.wait_free()?;
    }
    let bytes = kind.write(f);
    f.publish(bytes);
    if kind.peers_have_data() {
        f.wait_data(kind.peers(f))?;
    } else {
        f.wait_for(kind.peers(f))?;
    }
    kind.read(f)?;
    err.map_or(Ok(()), Err)
}

/// [`flat`] for a nonblocking call: its part runs in the background; if
/// this rank's arguments (or the request pointer) are bad, the operation
/// still does a blank part and the call fails.
fn flat_nb<T>(
    comm: MPI_Comm,
    req: *mut MPI_Request,
    prep: impl FnOnce(&mut State, usize) -> Option<(T, usize)>,
    part: impl FnOnce(&mut State, &Who, T) -> Part,
) -> Option<MpiResult<()>> {
    let r = rt::with(|st| {
        crate::coll::drop_pending_guard(st);
        let size = st.comms.get(comm)?.size() as usize;
        let Some((t, bytes)) = prep(st, size) else { return Ok(None) };
        let f = match flat::lookup(st, comm, bytes)? {
            Lookup::Ready(f) => f,
            Lookup::No => {
                // Too large for the segment: messages, once every rank's
                // length is known to match (see `flat::guard`; the schedule
                // made next completes this first).
                if let Some(g) = flat::guard(st, comm, bytes)? {
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
            (None, Some(h)) => unsafe { put(req, h, "request") },
            (None, None) => Ok(()),
        }))
    });
    r.ok().flatten()
}

fn typed_view(p: *const c_void, count: usize, dt: &Arc<Dtype>) -> parts::Typed {
    parts::Typed { p: p as P, count, dt: dt.clone() }
}

/// A buffer argument whose packed size must be `blk`.
fn typed_blk(
    st: &mut State,
    buf: *const c_void,
    count: i64,
    t: MPI_Datatype,
    blk: usize,
    what: &str,
) -> MpiResult<(usize, Arc<Dtype>)> {
    let (c, dt) = typed(st, buf, count, t, what)?;
    signature_match(dt.packed_size(c), blk)?;
    Ok((c, dt))
}

fn flat_barrier(call: Call, comm: MPI_Comm) -> Shm {
    flat(call, comm, |_, _| Some(((), 0)), |_, _, ()| Ok(Box::new(parts::Arrive)))
}

unsafe fn flat_bcast(
    call: Call,
    buffer: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Shm {
    let prep = |st: &mut State, size: usize| {
        let (n, dt) = (check_count(count).ok()?, st.types.get(datatype).ok()?);
        let root = check_root(root, size).ok()?;
        let bytes = dt.packed_size(n);
        Some(((n, dt, root), bytes))
    };
    flat(call, comm, prep, |_, f, (n, dt, root)| {
        let bytes = dt.packed_size(n);
        let is_root = f.rank == root;
        check_buf(buffer, n, &dt, "buffer").map_err(|e| (e, is_root.then_some(bytes)))?;
        let view = typed_view(buffer, n, &dt);
        Ok(Box::new(if is_root {
            parts::Moves { src: Some(view), publish: Some(bytes), reads: Vec::new() }
        } else {
            parts::Moves {
                src: None,
                publish: None,
                reads: vec![parts::Read { rank: root, off: 0, expect: bytes, to: view }],
            }
        }))
    })
}

/// Who gets the result of a reduction in shared memory.
#[derive(Clone, Copy)]
enum Target {
    /// Reduce to this root.
    Root(c_int),
    /// Allreduce.
    All,
    /// Scan (`false`) or Exscan (`true`): each rank the ranks up to itself
    /// (before itself).
    Prefix(bool),
}

/// Reduce, Allreduce, Scan or Exscan in shared memory.
unsafe fn flat_reduce(
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    target: Target,
    comm: MPI_Comm,
) -> Shm {
    let prep = |st: &mut State, size: usize| {
        let n = check_count(count).ok()?;
        let dt = st.types.get(datatype).ok()?;
        let red = reducer(st, op, datatype, &dt).ok()?;
        let root = match target {
            Target::Root(r) => Some(check_root(r, size).ok()?),
            _ => None,
        };
        let bytes = dt.packed_size(n);
        (bytes > 0).then_some(((n, dt, red, root), bytes))
    };
    flat(call, comm, prep, |_, f, (n, dt, red, root)| {
        let bytes = dt.packed_size(n);
        // The slots this rank combines.
        let from = match target {
            Target::Root(_) if root != Some(f.rank) => 0..0,
            Target::Prefix(false) => 0..f.rank + 1,
            Target::Prefix(true) => 0..f.rank,
            _ => 0..f.size,
        };
        let reads = !from.is_empty();
        let inp = in_place(sendbuf);
        let input = if inp { recvbuf as *const c_void } else { sendbuf };
        (|| {
            if inp && matches!(target, Target::Root(_)) && !reads {
                bail!(MPI_ERR_BUFFER, "MPI_IN_PLACE is only allowed at the root");
            }
            check_buf(input, n, &dt, "sendbuf")?;
            if reads {
                check_buf(recvbuf, n, &dt, "recvbuf")?;
                if !inp {
                    no_alias(sendbuf, recvbuf, bytes)?;
                }
            }
            Ok(())
        })()
        .map_err(|e| (e, Some(bytes)))?;
        Ok(Box::new(parts::Reduce { from, input: input as *const u8, n_in: n, off: 0, out: recvbuf as P, n, dt, red }))
    })
}

/// Reduce_scatter (`counts`) or Reduce_scatter_block (`Err(count)`) in
/// shared memory: each rank writes its whole vector and combines its block
/// of every rank's in rank order (the counts are alike on every rank).
unsafe fn flat_reduce_scatter(
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Result<Arr, i64>,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Shm {
    let prep = |st: &mut State, size: usize| {
        let counts = match counts {
            Ok(a) => a.counts(size, "recvcounts").ok()?,
            Err(b) => vec![check_count(b).ok()?; size],
        };
        let dt = st.types.get(datatype).ok()?;
        let red = reducer(st, op, datatype, &dt).ok()?;
        let bytes = dt.packed_size(counts.iter().sum());
        (bytes > 0).then_some(((counts, dt, red), bytes))
    };
    flat(call, comm, prep, |_, f, (counts, dt, red)| {
        let total: usize = counts.iter().sum();
        let (mine, inp) = (counts[f.rank], in_place(sendbuf));
        let input = if inp { recvbuf as *const c_void } else { sendbuf };
        (|| {
            check_buf(recvbuf, mine, &dt, "recvbuf")?;
            check_buf(input, total, &dt, "sendbuf")?;
            if !inp {
                no_alias(sendbuf, recvbuf, dt.packed_size(mine))?;
            }
            Ok(())
        })()
        .map_err(|e| (e, Some(dt.packed_size(total))))?;
        let off = counts[..f.rank].iter().map(|&c| dt.packed_size(c)).sum();
        Ok(Box::new(parts::Reduce {
            from: 0..f.size,
            input: input as *const u8,
            n_in: total,
            off,
            out: recvbuf as P,
            n: mine,
            dt,
            red,
        }))
    })
}

/// A blocking Allreduce of more than 8 KiB per rank on 4 or more ranks in
/// shared memory, as two operations: each rank combines its 1/p of every
/// rank's vector in rank order (a Reduce_scatter), then every rank takes
/// every piece (an Allgatherv). The combining is shared out instead of done
/// in full by every rank, which counts with more ranks than cores. None:
/// not taken (decided alike on every rank, before any step).
unsafe fn flat_allreduce_split(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (n, size, me) = rt::with(|st| {
        let c = st.comms.get(comm)?;
        let (size, me) = (c.size() as usize, c.rank as usize);
        if c.is_inter() || size < 4 {
            return Ok(None);
        }
        let n = check_count(count)?;
        let dt = st.types.get(datatype)?;
        reducer(st, op, datatype, &dt)?;
        let big = flat::fits(&st.coll.tune, dt.packed_size(n)) == Some(true);
        Ok((dt.contig && n >= size && big).then_some((n, size, me)))
    })
    .ok()
    .flatten()?;
    let counts: Vec<i64> = (0..size).map(|i| (n / size + usize::from(i < n % size)) as i64).collect();
    let displs: Vec<i64> = counts
        .iter()
        .scan(0, |at, &c| {
            *at += c;
            Some(*at - c)
        })
        .collect();
    let piece = rt::with(|st| Ok(st.types.get(datatype)?.packed_size(counts[me] as usize))).ok()?;
    let mut tmp = vec![0u8; piece.max(1)];
    let input = if in_place(sendbuf) { recvbuf as *const c_void } else { sendbuf };
    let tp = tmp.as_mut_ptr() as *mut c_void;
    let first = match flat_reduce_scatter(Call::Block, input, tp, Ok(Arr::I64(counts.as_ptr())), datatype, op, comm) {
        Shm::Done(r) => r,
        // Nothing done on any rank: the ordinary paths.
        _ => return None,
    };
    // Every rank takes part in the second step, even if the first failed
    // here, so the ranks stay in step.
    let (c, d) = (Arr::I64(counts.as_ptr()), Arr::I64(displs.as_ptr()));
    let second = match flat_allgatherv(Call::Block, tp, counts[me], datatype, recvbuf, c, d, datatype, comm) {
        Shm::Done(r) => r,
        _ => allgatherv(Call::Msg, tp, counts[me], datatype, recvbuf, c, d, datatype, comm),
    };
    Some(first.and(second))
}

/// Allgather in shared memory: each rank writes its block, every rank
/// reads all blocks.
unsafe fn flat_allgather(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Shm {
    let prep = |st: &mut State, _| {
        let (rc, rdt) = (check_count(recvcount).ok()?, st.types.get(recvtype).ok()?);
        let blk = rdt.packed_size(rc);
        (blk > 0).then_some(((rc, rdt), blk))
    };
    flat(call, comm, prep, |st, f, (rc, rdt)| {
        let blk = rdt.packed_size(rc);
        let (me, inp) = (f.rank, in_place(sendbuf));
        let src = (|| {
            check_buf(recvbuf, rc, &rdt, "recvbuf")?;
            if inp {
                return Ok(typed_view(elem(recvbuf, me * rc, &rdt) as *const c_void, rc, &rdt));
            }
            let (sc, sdt) = typed_blk(st, sendbuf, sendcount, sendtype, blk, "sendbuf")?;
            no_alias(sendbuf, recvbuf, blk)?;
            Ok(typed_view(sendbuf, sc, &sdt))
        })()
        .map_err(|e| (e, Some(blk)))?;
        let reads = (0..f.size)
            .filter(|&r| !(inp && r == me))
            .map(|r| parts::Read {
                rank: r,
                off: 0,
                expect: blk,
                to: typed_view(elem(recvbuf, r * rc, &rdt) as *const c_void, rc, &rdt),
            })
            .collect();
        Ok(Box::new(parts::Moves { src: Some(src), publish: Some(blk), reads }))
    })
}

/// Allgatherv in shared memory: each rank writes its block, every rank
/// reads all blocks (the counts are alike on every rank; the largest block
/// decides).
unsafe fn flat_allgatherv(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Arr,
    displs: Arr,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Shm {
    let prep = |st: &mut State, size: usize| {
        let counts = recvcounts.counts(size, "recvcounts").ok()?;
        let rdt = st.types.get(recvtype).ok()?;
        let max = counts.iter().map(|&c| rdt.packed_size(c)).max()?;
        (max > 0).then_some(((counts, rdt), max))
    };
    flat(call, comm, prep, |st, f, (counts, rdt)| {
        let (me, inp) = (f.rank, in_place(sendbuf));
        let place = |d: i64| (recvbuf as *mut u8).wrapping_offset(d as isize * rdt.extent) as *const c_void;
        let mine = rdt.packed_size(counts[me]);
        let (src, displs) = (|| {
            let displs = displs.read(f.size, "displs")?;
            check_buf(recvbuf, counts.iter().sum(), &rdt, "recvbuf")?;
            if inp {
                return Ok((typed_view(place(displs[me]), counts[me], &rdt), displs));
            }
            let (sc, sdt) = typed_blk(st, sendbuf, sendcount, sendtype, mine, "sendbuf")?;
            no_alias(sendbuf, recvbuf, mine)?;
            Ok((typed_view(sendbuf, sc, &sdt), displs))
        })()
        .map_err(|e| (e, Some(mine)))?;
        let reads = (0..f.size)
            .filter(|&r| !(inp && r == me))
            .map(|r| parts::Read {
                rank: r,
                off: 0,
                expect: rdt.packed_size(counts[r]),
                to: typed_view(place(displs[r]), counts[r], &rdt),
            })
            .collect();
        Ok(Box::new(parts::Moves { src: Some(src), publish: Some(mine), reads }))
    })
}

/// Alltoall in shared memory: each rank writes its whole send buffer and
/// takes its block from every rank's.
unsafe fn flat_alltoall(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Shm {
    let prep = |st: &mut State, size: usize| {
        let (rc, rdt) = (check_count(recvcount).ok()?, st.types.get(recvtype).ok()?);
        let blk = rdt.packed_size(rc);
        (blk > 0).then_some(((rc, rdt), blk * size))
    };
    flat(call, comm, prep, |st, f, (rc, rdt)| {
        let (me, size) = (f.rank, f.size);
        let blk = rdt.packed_size(rc);
        let src = (|| {
            check_buf(recvbuf, rc * size, &rdt, "recvbuf")?;
            if in_place(sendbuf) {
                return Ok(typed_view(recvbuf, rc * size, &rdt));
            }
            let (sc, sdt) = typed_blk(st, sendbuf, sendcount, sendtype, blk, "sendbuf")?;
            no_alias(sendbuf, recvbuf, blk * size)?;
            Ok(typed_view(sendbuf, sc * size, &sdt))
        })()
        .map_err(|e| (e, Some(blk * size)))?;
        let reads = (0..size)
            .map(|r| parts::Read {
                rank: r,
                off: me * blk,
                expect: blk * size,
                to: typed_view(elem(recvbuf, r * rc, &rdt) as *const c_void, rc, &rdt),
            })
            .collect();
        Ok(Box::new(parts::Moves { src: Some(src), publish: Some(blk * size), reads }))
    })
}

/// Gather (`scatter` false) or Scatter in shared memory: for a gather each
/// rank writes its block and the root reads them all; for a scatter the
/// root writes every block and each rank reads its own.
unsafe fn flat_rooted(
    call: Call,
    scatter: bool,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Shm {
    let prep = |st: &mut State, size: usize| {
        let root = check_root(root, size).ok()?;
        let me = st.comms.get(comm).ok()?.rank as usize;
        // The block size as this rank knows it (the root: its receive side
        // for a gather, its send side for a scatter).
        let (c, t) = if (me == root) == scatter { (sendcount, sendtype) } else { (recvcount, recvtype) };
        let (c, dt) = (check_count(c).ok()?, st.types.get(t).ok()?);
        let blk = dt.packed_size(c);
        (blk > 0).then_some(((root, blk), if scatter { blk * size } else { blk }))
    };
    flat(call, comm, prep, |st, f, (root, blk)| {
        let (me, size) = (f.rank, f.size);
        let out = |st: &mut State, off: usize, expect: usize| {
            let (rc, rdt) = typed_blk(st, recvbuf, recvcount, recvtype, blk, "recvbuf")?;
            Ok(parts::Read { rank: root, off, expect, to: typed_view(recvbuf, rc, &rdt) })
        };
        let part: Result<parts::Moves, (MpiError, Option<usize>)> = if !scatter {
            (|| {
                let mine = if me == root && in_place(sendbuf) {
                    None
                } else {
                    let (sc, sdt) = typed_blk(st, sendbuf, sendcount, sendtype, blk, "sendbuf")?;
                    Some(typed_view(sendbuf, sc, &sdt))
                };
                let mut reads = Vec::new();
                if me == root {
                    let (rc, rdt) = typed_blk(st, recvbuf, recvcount, recvtype, blk, "recvbuf")?;
                    if mine.is_some() {
                        no_alias(sendbuf, recvbuf, blk)?;
                    }
                    reads = (0..size)
                        .filter(|&r| r != me || mine.is_some())
                        .map(|r| parts::Read {
                            rank: r,
                            off: 0,
                            expect: blk,
                            to: typed_view(elem(recvbuf, r * rc, &rdt) as *const c_void, rc, &rdt),
                        })
                        .collect();
                }
                Ok(parts::Moves { src: mine, publish: Some(blk), reads })
            })()
            .map_err(|e| (e, Some(blk)))
        } else if me == root {
            (|| {
                let (sc, sdt) = typed_blk(st, sendbuf, sendcount, sendtype, blk, "sendbuf")?;
                let mut reads = Vec::new();
                if !in_place(recvbuf) {
                    reads.push(out(st, me * blk, blk * size)?);
                    no_alias(sendbuf, recvbuf, blk)?;
                }
                Ok(parts::Moves { src: Some(typed_view(sendbuf, sc * size, &sdt)), publish: Some(blk * size), reads })
            })()
            .map_err(|e| (e, Some(blk * size)))
        } else {
            out(st, me * blk, blk * size)
                .map(|r| parts::Moves { src: None, publish: None, reads: vec![r] })
                .map_err(|e| (e, None))
        };
        part.map(|m| Box::new(m) as Box<dyn NbKind>)
    })
}

// ----- the blocking fast path ------------------------------------------------------

/// The blocking Barrier, Bcast, Allreduce, Allgather and Alltoall of
/// contiguous data that fits the small buffers, on a communicator that has
/// its segment: one round under the lock (the communicator, the types, the
/// operation number) and no allocation, then plain copies between the user
/// buffers and the segment. At two ranks the bookkeeping of the general
/// shared-memory path ([`flat`]: boxed parts, typed views, packing) cost
/// more than the cache-line transfers themselves, and with more ranks than
/// cores it bounds how many broadcasts the readers take per time slice.
///
/// `pick` looks at the arguments (rank and size of the communicator given)
/// and gives what the operation needs and its bytes per rank, or None (any
/// argument it does not take, bad ones included): the general path then
/// runs the call and reports what is wrong. None is also returned, before
/// any step, when the communicator has no segment yet.
fn fast<T>(comm: MPI_Comm, pick: impl FnOnce(&mut State, &Who) -> Option<(T, usize)>) -> Option<(Flat, T)> {
    rt::with(|st| {
        let c = st.comms.get(comm)?;
        if c.is_inter() {
            return Ok(None);
        }
        let (ctx, who) = (c.coll_ctx(), Who { rank: c.rank as usize, size: c.size() as usize });
        let Some((t, bytes)) = pick(st, &who).filter(|&(_, b)| b <= flat::SLOT) else { return Ok(None) };
        Ok(match flat::lookup_in(st, comm, ctx, who.rank, who.size, bytes)? {
            Lookup::Ready(f) => Some((f, t)),
            _ => None,
        })
    })
    .ok()
    .flatten()
}

/// Bytes of `count` elements of contiguous type `t` (None: not contiguous,
/// or bad). The type is borrowed: no reference count moves.
fn fast_bytes(st: &State, count: i64, t: MPI_Datatype) -> Option<usize> {
    fast_type(st, count, t).map(|(n, _)| n)
}

/// [`fast_bytes`] and the type.
fn fast_type(st: &State, count: i64, t: MPI_Datatype) -> Option<(usize, &Arc<Dtype>)> {
    let n = check_count(count).ok()?;
    let dt = st.types.committed(t)?;
    dt.contig.then(|| (n * dt.size, dt))
}

/// Whether a send buffer of `bytes` and a receive buffer may be used as
/// they are (bad ones are left to the general path to report).
fn fast_bufs(sendbuf: *const c_void, recvbuf: *const c_void) -> bool {
    !recvbuf.is_null() && !in_place(recvbuf) && (in_place(sendbuf) || (!sendbuf.is_null() && sendbuf != recvbuf))
}

/// Copies `n` bytes.
///
/// # Safety
/// Both address `n` bytes that do not overlap.
unsafe fn fast_copy(from: *const u8, to: *mut u8, n: usize) {
    std::ptr::copy_nonoverlapping(from, to, n);
}

/// Writes `n` bytes at `from` to this rank's buffer and publishes them,
/// then waits for every rank's data, which must be `n` bytes each.
///
/// # Safety
/// `from` addresses `n` bytes; `f` is this rank's turn.
unsafe fn fast_exchange(f: &Flat, from: *const u8, n: usize) -> MpiResult<()> {
    f.wait_turn()?;
    f.wait_free()?;
    fast_copy(from, f.buf(f.rank), n);
    f.publish(Some(n));
    f.wait_data(0..f.size)?;
    f.check_len(0..f.size, n)
}

/// A Barrier: every rank publishes an empty buffer and waits for every
/// rank's. Through the buffers rather than the sequence words (as the
/// general path's does; every rank of a Barrier takes the same path, as
/// only the segment decides): each rank took its buffer's cache line back
/// after its last operation, so publishing waits for no other core, where
/// the sequence word the others poll would have to be taken back first.
fn fast_barrier(comm: MPI_Comm) -> Option<MpiResult<()>> {
    let (f, ()) = fast(comm, |_, _| Some(((), 0)))?;
    Some((|| {
        f.wait_turn()?;
        f.wait_free()?;
        f.publish(Some(0));
        f.wait_data(0..f.size)
    })())
}

unsafe fn fast_bcast(
    buffer: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (f, (root, n)) = fast(comm, |st, w| {
        let n = fast_bytes(st, count, datatype)?;
        let root = check_root(root, w.size).ok()?;
        (n > 0 && fast_bufs(MPI_IN_PLACE as *const c_void, buffer)).then_some(((root, n), n))
    })?;
    let p = buffer as *mut u8;
    Some((|| {
        f.wait_turn()?;
        if f.rank == root {
            f.wait_free()?;
            fast_copy(p, f.buf(root), n);
            f.publish(Some(n));
        } else {
            f.publish(None);
            f.wait_data(root..root + 1)?;
            f.check_len(root..root + 1, n)?;
            fast_copy(f.buf(root), p, n);
        }
        Ok(())
    })())
}

unsafe fn fast_allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (f, (n, red)) = fast(comm, |st, _| {
        let (n, dt) = fast_type(st, count, datatype)?;
        let red = reducer(st, op, datatype, dt).ok()?;
        (n > 0 && matches!(red, Reducer::Builtin { .. }) && fast_bufs(sendbuf, recvbuf)).then_some(((n, red), n))
    })?;
    let out = recvbuf as *mut u8;
    let input = if in_place(sendbuf) { out as *const u8 } else { sendbuf as *const u8 };
    Some((|| {
        fast_exchange(&f, input, n)?;
        // Every rank combines the slots in rank order: the same bits everywhere.
        fast_copy(f.buf(0), out, n);
        for r in 1..f.size {
            red.apply(f.buf(r), out, n, true)?;
        }
        Ok(())
    })())
}

/// Allgather (`alltoall` false: each rank's block to every rank) or Alltoall
/// (block j of each rank to rank j).
unsafe fn fast_gather_all(
    alltoall: bool,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (f, blk) = fast(comm, |st, w| {
        let blk = fast_bytes(st, recvcount, recvtype)?;
        let sent = if in_place(sendbuf) { blk } else { fast_bytes(st, sendcount, sendtype)? };
        let per_rank = if alltoall { blk * w.size } else { blk };
        (blk > 0 && sent == blk && fast_bufs(sendbuf, recvbuf)).then_some((blk, per_rank))
    })?;
    let out = recvbuf as *mut u8;
    let (me, size) = (f.rank, f.size);
    let inp = in_place(sendbuf);
    Some((|| {
        if alltoall {
            fast_exchange(&f, if inp { out } else { sendbuf as *const u8 }, blk * size)?;
            for r in 0..size {
                fast_copy(f.buf(r).add(me * blk), out.add(r * blk), blk);
            }
        } else {
            fast_exchange(&f, if inp { out.add(me * blk) } else { sendbuf as *const u8 }, blk)?;
            for r in (0..size).filter(|&r| !(inp && r == me)) {
                fast_copy(f.buf(r), out.add(r * blk), blk);
            }
        }
        Ok(())
    })())
}

// ----- large messages in shared memory, in pieces ---------------------------------

/// A blocking Allreduce of more than the large buffers hold, with a core
/// per rank, runs as consecutive shared-memory operations of one large
/// buffer each ("pieces"): as a rank may run ahead of the others by
/// several operations, its writing overlaps the others' reading and
/// combining, no page is pinned as `process_vm_readv` does, and a rank
/// combines straight from the others' buffers (no temporary). Whether a
/// call takes this path depends only on what every rank has alike (the
/// bytes, the communicator, its segment, the type and the operation),
/// decided before any step: `args` gives what the call needs and its
/// bytes, or None (not taken). Returns that and the first piece's
/// operation (the next ones follow it: see [`next_op`]), or None.
fn pieces_start<T>(
    comm: MPI_Comm,
    args: impl FnOnce(&mut State) -> MpiResult<Option<(T, usize)>>,
) -> Option<(T, Flat)> {
    rt::with(|st| {
        let t = &st.coll.tune;
        if t.shm_max == 0 || (st.oversubscribed && !t.shm_pieces_oversub) {
            return Ok(None);
        }
        let (lo, hi) = (flat::BIG, t.shm_pieces);
        let Some((a, bytes)) = args(st)? else { return Ok(None) };
        if bytes <= lo || bytes > hi {
            return Ok(None);
        }
        Ok(match flat::lookup(st, comm, flat::BIG)? {
            Lookup::Ready(f) => Some((a, f)),
            // The segment is made by a call that fits it (alike everywhere).
            _ => None,
        })
    })
    .ok()
    .flatten()
}

/// The next shared-memory operation of `comm` (which has its segment, as
/// for the operation before), for `bytes` per rank.
fn next_op(comm: MPI_Comm, bytes: usize) -> MpiResult<Flat> {
    rt::with(|st| match flat::lookup(st, comm, bytes)? {
        Lookup::Ready(f) => Ok(f),
        _ => bail!(MPI_ERR_INTERN, "the shared-memory segment went away during a collective"),
    })
}

/// Allreduce in pieces (see [`pieces_start`]) of a contiguous type with a
/// predefined operation: each piece is cut into one block per rank; in a
/// first operation every rank writes the blocks of the others and
/// combines its own block of every rank (in rank order) into its result,
/// in a second it writes that block and takes the others' results. Each
/// block is computed once, so every rank gets the same bits.
unsafe fn pieces_allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let ((n, dt, red, bytes), first) = pieces_start(comm, |st| {
        let n = check_count(count)?;
        let dt = st.types.get(datatype)?;
        let red = reducer(st, op, datatype, &dt)?;
        let b = dt.packed_size(n);
        Ok((dt.contig && matches!(red, Reducer::Builtin { .. })).then_some(((n, dt, red, b), b)))
    })?;
    let (me, size, unit) = (first.rank, first.size, red.unit());
    let inp = in_place(sendbuf);
    let input = if inp { recvbuf as *const u8 } else { sendbuf as *const u8 };
    let mut err = (|| {
        check_buf(input as *const c_void, n, &dt, "sendbuf")?;
        check_buf(recvbuf, n, &dt, "recvbuf")?;
        if !inp {
            no_alias(sendbuf, recvbuf, bytes)?;
        }
        Ok(())
    })()
    .err();
    let out = recvbuf as *mut u8;
    let most = flat::BIG - flat::BIG % unit;
    // Block r of a piece of `len` bytes: offset and length in it.
    let blk = |len: usize, r: usize| {
        let units = len / unit;
        let (q, rem) = (units / size, units % size);
        ((r * q + r.min(rem)) * unit, (q + usize::from(r < rem)) * unit)
    };
    // Operations 2i and 2i + 1 do piece i. The first one's length words
    // say each rank's whole length: if they differ, every rank fails with
    // `MPI_ERR_TRUNCATE` and all do as many operations, without data, as
    // the longest needs.
    let ops = |b: usize| 2 * b.div_ceil(most);
    let (mut nops, mut differ) = (ops(bytes), false);
    let mut f = Some(first);
    let mut i = 0;
    while i < nops {
        let g = match f.take() {
            Some(g) => g,
            None => match next_op(comm, flat::BIG) {
                Ok(g) => g,
                Err(e) => return Some(Err(e)),
            },
        };
        let (second, at) = (i % 2 == 1, i / 2 * most);
        let len = most.min(bytes.saturating_sub(at));
        let (mo, ml) = blk(len, me);
        let r = (|| {
            g.wait_turn()?;
            g.wait_free()?;
            let mine = g.buf(me);
            let data = err.is_none() && !differ;
            if data {
                if second {
                    fast_copy(out.add(at + mo), mine.add(mo), ml);
                } else {
                    for r in (0..size).filter(|&r| r != me) {
                        let (o, l) = blk(len, r);
                        fast_copy(input.add(at + o), mine.add(o), l);
                    }
                }
            }
            g.publish(Some(if i == 0 { bytes } else { len }));
            g.wait_data(0..size)?;
            if i == 0 {
                if (0..size).any(|r| g.len_of(r) != bytes) {
                    let longest = (0..size).map(|r| g.len_of(r)).max().unwrap_or(bytes);
                    (differ, nops) = (true, ops(longest));
                    g.check_len(0..size, bytes)?;
                }
            } else if !differ {
                g.check_len(0..size, len)?;
            }
            if !data {
                return Ok(());
            }
            if second {
                for r in (0..size).filter(|&r| r != me) {
                    let (o, l) = blk(len, r);
                    fast_copy(g.buf(r).add(o), out.add(at + o), l);
                }
                return Ok(());
            }
            // Rank order: x0 op (x1 op (... x_me)), then op x_me+1 ...
            let dst = out.add(at + mo);
            if !inp {
                fast_copy(input.add(at + mo), dst, ml);
            }
            for r in (0..me).rev() {
                red.apply(g.buf(r).add(mo), dst, ml, false)?;
            }
            for r in me + 1..size {
                red.apply(g.buf(r).add(mo), dst, ml, true)?;
            }
            Ok(())
        })();
        if let Err(e) = r {
            err.get_or_insert(e);
        }
        i += 1;
    }
    Some(err.map_or(Ok(()), Err))
}

/// This process's id, read once (`getpid` is a system call each time).
fn pid() -> u64 {
    static PID: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *PID.get_or_init(|| std::process::id() as u64)
}

/// Whether the single-copy paths ([`direct_gather_all`], [`direct_bcast`])
/// may run: shared memory and `MPICORE_COLL_SHM_DIRECT` on, a core per rank
/// (or `MPICORE_COLL_SHM_PIECES_OVERSUB`). Alike on every rank of a node.
fn direct_allowed(st: &State) -> bool {
    let t = &st.coll.tune;
    t.shm_max != 0 && t.shm_direct != 0 && (!st.oversubscribed || t.shm_pieces_oversub)
}

/// Bytes each rank of [`direct_gather_all`] publishes first: its process
/// id, the address of its data, whether the others may read it there, and
/// its bytes per block (which must match everywhere).
const HELLO: usize = 4 * 8;

/// A blocking Allgather (`alltoall` false) or Alltoall of blocks of at
/// least `MPICORE_COLL_SHM_DIRECT` bytes (an Alltoall only if it does not
/// fit the segment), with a core per rank: each rank
/// reads its blocks straight from the other ranks' send buffers
/// (`process_vm_readv`, one copy), where going through the segment copies
/// twice, and writing a buffer the other core has just read costs a
/// cache-line invalidation per line (64 KiB: 5-9 us against 1.5-2 us for
/// reading it, measured on the test machine). Two small operations: every
/// rank publishes its process, the address of its data and whether others
/// may read it there (contiguous types, not in place for Alltoall, reads
/// allowed); if all may, each reads, then all say whether their reads
/// worked, and the data is left alone until every rank has. Otherwise
/// (seen alike by every rank) None: the other paths run the call. Blocks
/// whose sizes differ between ranks fail with `MPI_ERR_TRUNCATE` everywhere.
unsafe fn direct_gather_all(
    alltoall: bool,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let inp = in_place(sendbuf);
    let (f, blk, ok) = rt::with(|st| {
        let t = &st.coll.tune;
        if !direct_allowed(st) {
            return Ok(None);
        }
        let rc = check_count(recvcount)?;
        let rdt = st.types.get(recvtype)?;
        let blk = rdt.packed_size(rc);
        // An Alltoall that fits the segment is faster there (2 ranks, 16 and
        // 32 KiB per pair: 4.0 and 4.9 us against 5.1 and 5.9).
        let size = st.comms.get(comm)?.size() as usize;
        if blk < t.shm_direct || (alltoall && flat::fits(t, blk * size).is_some()) {
            return Ok(None);
        }
        // Whether this rank's data may be read where it is, and its blocks
        // written straight into its receive buffer.
        let sent = if inp { None } else { fast_bytes(st, sendcount, sendtype) };
        let ok = st.engine.cma_enabled()
            && rdt.contig
            && fast_bufs(sendbuf, recvbuf)
            && if inp { !alltoall } else { sent == Some(blk) };
        Ok(match flat::lookup(st, comm, HELLO)? {
            Lookup::Ready(f) => Some((f, blk, ok)),
            _ => None,
        })
    })
    .ok()
    .flatten()?;
    let (me, size) = (f.rank, f.size);
    let out = recvbuf as *mut u8;
    let src = if inp { out.add(me * blk) as *const u8 } else { sendbuf as *const u8 };
    let r = (|| {
        let Some(peer) = direct_hello(&f, src, ok, blk, || {
            if ok && !inp {
                // This rank's own block, while the others arrive.
                fast_copy(src.add(if alltoall { me * blk } else { 0 }), out.add(me * blk), blk);
            }
        })?
        else {
            return Ok(None);
        };
        let mut failed = false;
        for r in (0..size).filter(|&r| r != me) {
            let (pid, at) = peer[r];
            let from = at + if alltoall { me * blk } else { 0 };
            failed |= crate::rt::win::cma(pid, from, out.add(r * blk), blk, false).is_err();
        }
        direct_done(comm, size, failed)
    })();
    r.transpose()
}

/// The first operation of a direct copy (see [`direct_gather_all`]):
/// publishes this rank's process, the address of its data, whether the
/// others may read or write it there (`ok`) and its bytes per block, runs
/// `meanwhile`, and waits for every rank's. Blocks that differ fail with
/// `MPI_ERR_TRUNCATE` (as does a rank that took another path, see
/// [`Flat::wait_all_len`]); Ok(None) if a rank may not be read; else the
/// process and address of every rank.
fn direct_hello(
    f: &Flat,
    addr: *const u8,
    ok: bool,
    bytes: usize,
    meanwhile: impl FnOnce(),
) -> MpiResult<Option<Vec<(i32, usize)>>> {
    f.wait_turn()?;
    f.wait_free()?;
    let words: [u64; 4] = [pid(), addr as u64, ok as u64, bytes as u64];
    // SAFETY: the rank's buffer holds at least `HELLO` bytes.
    unsafe { fast_copy(words.as_ptr() as *const u8, f.buf(f.rank), HELLO) };
    f.publish(Some(HELLO));
    meanwhile();
    f.wait_all_len(HELLO)?;
    // SAFETY: every rank published `HELLO` bytes (checked above).
    let word = |r: usize, i: usize| unsafe { (f.buf(r) as *const u64).add(i).read_unaligned() };
    if let Some(r) = (0..f.size).find(|&r| word(r, 3) != bytes as u64) {
        let theirs = word(r, 3);
        bail!(MPI_ERR_TRUNCATE, "rank {r} of the collective has {theirs} bytes per block where this rank has {bytes}: counts or types differ between ranks");
    }
    if (0..f.size).any(|r| word(r, 2) == 0) {
        return Ok(None);
    }
    Ok(Some((0..f.size).map(|r| (word(r, 0) as i32, word(r, 1) as usize)).collect()))
}

/// The second operation of a direct copy: says whether this rank's copies
/// `failed` and waits for every rank (whose data is left alone until
/// then). Ok(None) if a copy failed somewhere: every rank then does the
/// call again another way.
fn direct_done(comm: MPI_Comm, size: usize, failed: bool) -> MpiResult<Option<()>> {
    let g = next_op(comm, 0)?;
    g.wait_turn()?;
    g.wait_free()?;
    g.publish(Some(failed as usize));
    g.wait_data(0..size)?;
    Ok((0..size).all(|r| g.len_of(r) == 0).then_some(()))
}

/// The fewest bytes [`direct_bcast`] takes: below, the segment's buffers are
/// faster (2 ranks: 16 KiB 0.8-2.9 us against 4.0-4.5, 32 KiB a tie at
/// 3.4-4.4; at 48 and 64 KiB the segment took 4.4-6.5 us in some runs and
/// 15-28 in others, the direct copies 5.6-7.7 in all).
const DIRECT_BCAST_MIN: usize = 32 << 10;

/// A blocking Bcast of at least `MPICORE_COLL_SHM_DIRECT` and
/// [`DIRECT_BCAST_MIN`] bytes (of any size above), with a core per rank: the readers copy the data straight
/// from the root's buffer (`process_vm_readv`, one copy, where the segment
/// copies twice and has the root write lines the reader has just read);
/// with two ranks the root meanwhile writes the second half into the
/// reader's buffer (`process_vm_writev`), so both cores copy. Two small
/// operations as in [`direct_gather_all`]: every rank's process, buffer,
/// whether it may be read or written there, and its bytes; then, after the
/// copies, whether they worked (the root's buffer is left alone until
/// then). None (seen alike everywhere): the other paths run the call.
unsafe fn direct_bcast(
    buffer: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (f, bytes, root, ok) = rt::with(|st| {
        let t = &st.coll.tune;
        if !direct_allowed(st) {
            return Ok(None);
        }
        let dt = st.types.get(datatype)?;
        let bytes = dt.packed_size(check_count(count)?);
        let root = check_root(root, st.comms.get(comm)?.size() as usize)?;
        if bytes < t.shm_direct.max(DIRECT_BCAST_MIN) {
            return Ok(None);
        }
        let ok = st.engine.cma_enabled() && dt.contig && fast_bufs(MPI_IN_PLACE as *const c_void, buffer);
        Ok(match flat::lookup(st, comm, HELLO)? {
            Lookup::Ready(f) => Some((f, bytes, root, ok)),
            _ => None,
        })
    })
    .ok()
    .flatten()?;
    let (me, size) = (f.rank, f.size);
    let p = buffer as *mut u8;
    let r = (|| {
        let Some(peer) = direct_hello(&f, p, ok, bytes, || ())? else {
            return Ok(None);
        };
        // The part the readers read: all of it, or with two ranks the first
        // half (the root writes the rest).
        let pull = if size == 2 { bytes / 2 } else { bytes };
        let failed = if me != root {
            let (pid, at) = peer[root];
            crate::rt::win::cma(pid, at, p, pull, false).is_err()
        } else if pull < bytes {
            // Two ranks: the other one is 1 - root.
            let (pid, at) = peer[1 - me];
            crate::rt::win::cma(pid, at + pull, p.add(pull), bytes - pull, true).is_err()
        } else {
            false
        };
        direct_done(comm, size, failed)
    })();
    r.transpose()
}

// ----- Alltoallv and Alltoallw in shared memory ---------------------------------------

/// The blocks of one side of an Alltoallv/w: block j is `count` elements
/// of its type at its displacement. `what`: the names of the buffer, count
/// and displacement arguments.
///
/// # Safety
/// `counts` and `displs` are NULL or address `size` values.
#[allow(clippy::too_many_arguments)]
unsafe fn vblocks(
    buf: *const c_void,
    counts: Arr,
    displs: Arr,
    types: &[MPI_Datatype],
    st: &mut State,
    size: usize,
    bytes_disp: bool,
    what: [&str; 3],
) -> MpiResult<Vec<parts::Typed>> {
    let n = counts.counts(size, what[1])?;
    let d = displs.read(size, what[2])?;
    // One type for all blocks but in an Alltoallw: looked up once.
    let one = if types.len() == 1 { Some(st.types.get(types[0])?) } else { None };
    (0..size)
        .map(|j| {
            let dt = match &one {
                Some(t) => t.clone(),
                None => st.types.get(types[j])?,
            };
            let off = if bytes_disp { d[j] as isize } else { d[j] as isize * dt.extent };
            check_buf(buf, n[j], &dt, what[0])?;
            Ok(typed_view((buf as *const u8).wrapping_offset(off) as *const c_void, n[j], &dt))
        })
        .collect()
}

/// Bytes of the table of offsets at the start of a rank's buffer in
/// [`shm_alltoall_vw`]: `size + 1` 32-bit words (a buffer holds at most
/// 64 KiB; small, so that 8 bytes to each of 8 ranks fit a tiny buffer).
fn vtable(size: usize) -> usize {
    4 * (size + 1)
}

/// Writes word `i` of a table at `buf`.
///
/// # Safety
/// `buf` addresses more than `i` 32-bit words, 4-aligned.
unsafe fn tput(buf: *mut u8, i: usize, v: usize) {
    (buf as *mut u32).add(i).write(v as u32);
}

/// Word `i` of a table at `buf`.
///
/// # Safety
/// As for [`tput`].
unsafe fn tget(buf: *const u8, i: usize) -> usize {
    (buf as *const u32).add(i).read() as usize
}

/// Writes at `buf` a table of offsets (`size + 1` words) and, `table`
/// bytes from `buf`, the blocks: `block(j, at)` writes block j at `at` (or
/// nothing, when the blocks go as messages) and gives its length. Returns
/// the bytes of all blocks.
///
/// # Safety
/// `buf` holds the table and the blocks.
unsafe fn write_blocks(
    buf: *mut u8,
    size: usize,
    table: usize,
    mut block: impl FnMut(usize, *mut u8) -> usize,
) -> usize {
    let mut off = 0;
    for j in 0..size {
        tput(buf, j, off);
        off += block(j, buf.add(table + off));
    }
    tput(buf, size, off);
    off
}

/// Block `i` of the table at the start of rank `r`'s buffer (the blocks
/// `table` bytes after it): its address, if it holds `want` bytes, else
/// `MPI_ERR_TRUNCATE`.
///
/// # Safety
/// Rank `r` published a table of at least `table` bytes in this operation.
unsafe fn table_block(f: &Flat, r: usize, i: usize, table: usize, want: usize) -> MpiResult<*const u8> {
    let src = f.buf(r);
    let (o, e) = (tget(src, i), tget(src, i + 1));
    if e < o || table + e > f.len_of(r) || e - o != want {
        return Err(len_mismatch(r, e.wrapping_sub(o), want));
    }
    Ok(src.add(table + o))
}

/// A blocking Alltoallv or Alltoallw (not in place) on a communicator with
/// a shared-memory segment: every rank takes the operation, whatever its
/// counts (the segment alone decides, alike everywhere). A rank whose
/// blocks fit its buffer writes a table of their offsets (`size + 1`
/// words) and the packed blocks; a rank whose blocks do not fit publishes
/// only their length with kind `Msg` and sends them as messages; a rank
/// whose arguments are bad publishes an empty buffer. Every rank waits for
/// every rank's header, reads its block of each rank that wrote one
/// (checking its length against what it expects: `MPI_ERR_TRUNCATE`
/// otherwise), and if any rank sends messages, all take part in one
/// schedule (the same on every rank, as each sees every header), in which
/// the ranks that send post their blocks (to every rank but those with bad
/// arguments) and the others receive them. The message path built a
/// schedule per call at any size (2 ranks, 8 bytes: 0.9-1.2 us against
/// Open MPI's 0.25).
unsafe fn shm_alltoall_vw(
    sendbuf: *const c_void,
    sendcounts: Arr,
    sdispls: Arr,
    sendtypes: &[MPI_Datatype],
    recvbuf: *mut c_void,
    recvcounts: Arr,
    rdispls: Arr,
    recvtypes: &[MPI_Datatype],
    comm: MPI_Comm,
    bytes_disp: bool,
) -> Option<MpiResult<()>> {
    if in_place(sendbuf) {
        return None;
    }
    // This rank's blocks to send and receive and the bytes of its buffer,
    // or what is wrong with its arguments.
    let mine = rt::with(|st| {
        let c = st.comms.get(comm)?;
        let (size, rank) = (c.size() as usize, c.rank as usize);
        if c.is_inter() || size < 2 {
            return Ok(None);
        }
        Ok(Some((|| {
            let sv = vblocks(
                sendbuf,
                sendcounts,
                sdispls,
                sendtypes,
                st,
                size,
                bytes_disp,
                ["sendbuf", "sendcounts", "sdispls"],
            )?;
            let rv = vblocks(
                recvbuf,
                recvcounts,
                rdispls,
                recvtypes,
                st,
                size,
                bytes_disp,
                ["recvbuf", "recvcounts", "rdispls"],
            )?;
            if std::ptr::eq(sendbuf, recvbuf) && sv.iter().any(|v| v.bytes() > 0) {
                no_alias(sendbuf, recvbuf, 1)?;
            }
            signature_match(sv[rank].bytes(), rv[rank].bytes())?;
            let b = vtable(size) + sv.iter().map(parts::Typed::bytes).sum::<usize>();
            Ok((sv, rv, b))
        })()))
    })
    .ok()
    .flatten()?;
    let bytes = mine.as_ref().map_or(0, |m| m.2);
    let (f, msg) = match seg_op(comm, bytes)? {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    let (mine, err) = match mine {
        Ok(m) => (Some(m), None),
        Err(e) => (None, Some(e)),
    };
    let r = vw_run(&f, mine, msg, comm);
    Some(match err {
        Some(e) => Err(e),
        None => r,
    })
}

/// The next operation of the segment of `comm` (made here if it has none
/// yet: a collective step) for a rank with `bytes` to write, and whether
/// they are too many for it (then the operation carries only their length,
/// kind `Msg`, and they go as messages). None: the communicator uses
/// messages only (alike on every rank).
fn seg_op(comm: MPI_Comm, bytes: usize) -> Option<MpiResult<(Flat, bool)>> {
    loop {
        let found = rt::with(|st| {
            let fits = flat::fits(&st.coll.tune, bytes).is_some();
            Ok(match flat::lookup(st, comm, if fits { bytes } else { 0 })? {
                Lookup::Ready(mut f) => {
                    if !fits {
                        f.by_message();
                    }
                    Ok((f, !fits))
                }
                Lookup::No => Err(None),
                Lookup::Setup { ctx, rank, size, room } => Err(Some((ctx, rank, size, room))),
            })
        });
        match found {
            Ok(Ok(x)) => return Some(Ok(x)),
            Ok(Err(None)) | Err(_) => return None,
            Ok(Err(Some((ctx, rank, size, room)))) => {
                if let Err(e) = flat_setup(comm, ctx, rank, size, room) {
                    return Some(Err(e));
                }
            }
        }
    }
}

/// [`shm_alltoall_vw`] for an Alltoallv of contiguous types whose blocks
/// fit the segment and whose arguments are good (else None, before any
/// step: the general path runs the call, in the same operation layout, so
/// each rank chooses alone): the offsets come straight from the caller's
/// arrays, and nothing is allocated. With more ranks than cores, every page
/// a call touches is fetched again after each switch of processes: the
/// general path's typed views made an 8-byte Alltoallv at 4 ranks take
/// 4.1-4.7 us against 2.4-3.2 for an Alltoall, with as many switches.
unsafe fn fast_alltoallv(
    sendbuf: *const c_void,
    sendcounts: Arr,
    sdispls: Arr,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Arr,
    rdispls: Arr,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    if in_place(sendbuf)
        || std::ptr::eq(sendbuf, recvbuf)
        || sendcounts.is_null()
        || sdispls.is_null()
        || recvcounts.is_null()
        || rdispls.is_null()
    {
        return None;
    }
    // Elements' sizes and extents of the two types.
    let (f, (su, se), (ru, re)) = rt::with(|st| {
        let c = st.comms.get(comm)?;
        let (size, rank, ctx) = (c.size() as usize, c.rank as usize, c.coll_ctx());
        let (Some(sdt), Some(rdt)) = (st.types.committed(sendtype), st.types.committed(recvtype)) else {
            return Ok(None);
        };
        if c.is_inter() || size < 2 || !sdt.contig || !rdt.contig {
            return Ok(None);
        }
        let (s, r) = ((sdt.size, sdt.extent), (rdt.size, rdt.extent));
        let mut total = vtable(size);
        for j in 0..size {
            let (sc, rc) = (sendcounts.get(j), recvcounts.get(j));
            if sc < 0 || rc < 0 || (sc > 0 && sendbuf.is_null()) || (rc > 0 && recvbuf.is_null()) {
                return Ok(None);
            }
            total += sc as usize * s.0;
        }
        if sendcounts.get(rank) as usize * s.0 != recvcounts.get(rank) as usize * r.0
            || flat::fits(&st.coll.tune, total).is_none()
        {
            return Ok(None);
        }
        Ok(match flat::lookup_in(st, comm, ctx, rank, size, total)? {
            Lookup::Ready(f) => Some((f, s, r)),
            _ => None,
        })
    })
    .ok()
    .flatten()?;
    let (me, size, table) = (f.rank, f.size, vtable(f.size));
    let r = (|| {
        f.wait_turn()?;
        f.wait_free()?;
        let off = write_blocks(f.buf(me), size, table, |j, at| {
            let n = sendcounts.get(j) as usize * su;
            fast_copy((sendbuf as *const u8).wrapping_offset(sdispls.get(j) as isize * se), at, n);
            n
        });
        f.publish(Some(table + off));
        f.wait_data(0..size)?;
        if (0..size).any(|r| vway(&f, r) != VWay::Segment) {
            // Another rank's blocks go as messages, or its arguments are
            // bad: the general reading, with this rank's views.
            let rv = rt::with(|st| {
                vblocks(
                    recvbuf,
                    recvcounts,
                    rdispls,
                    &[recvtype],
                    st,
                    size,
                    false,
                    ["recvbuf", "recvcounts", "rdispls"],
                )
            })?;
            return vw_finish(&f, Some((&[], &rv)), false, comm);
        }
        for r in 0..size {
            let want = recvcounts.get(r) as usize * ru;
            let src = table_block(&f, r, me, table, want)?;
            fast_copy(src, (recvbuf as *mut u8).wrapping_offset(rdispls.get(r) as isize * re), want);
        }
        Ok(())
    })();
    Some(r)
}

/// How a rank's blocks travel in [`shm_alltoall_vw`], as its header says.
#[derive(Clone, Copy, PartialEq, Eq)]
enum VWay {
    Segment,
    Messages,
    /// Its arguments were bad: nothing.
    Nothing,
}

/// The operation of [`shm_alltoall_vw`] (`f`, taken) with this rank's
/// blocks and bytes (None: its arguments are bad); `msg`: they go as
/// messages.
unsafe fn vw_run(
    f: &Flat,
    mine: Option<(Vec<parts::Typed>, Vec<parts::Typed>, usize)>,
    msg: bool,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let (me, size, table) = (f.rank, f.size, vtable(f.size));
    f.wait_turn()?;
    f.wait_free()?;
    match &mine {
        Some((sv, _, b)) if !msg => {
            write_blocks(f.buf(me), size, table, |j, at| {
                let (v, n) = (&sv[j], sv[j].bytes());
                v.dt.pack(v.p, v.count, std::slice::from_raw_parts_mut(at, n));
                n
            });
            f.publish(Some(*b));
        }
        Some((_, _, b)) => f.publish(Some(*b)),
        None => f.publish(Some(0)),
    }
    f.wait_data(0..size)?;
    vw_finish(f, mine.as_ref().map(|(sv, rv, _)| (sv.as_slice(), rv.as_slice())), msg, comm)
}

/// How rank `r`'s blocks travel in [`shm_alltoall_vw`] (after
/// `wait_data`).
fn vway(f: &Flat, r: usize) -> VWay {
    if f.sent_by_message(r) {
        VWay::Messages
    } else if f.len_of(r) < vtable(f.size) {
        VWay::Nothing
    } else {
        VWay::Segment
    }
}

/// The reading part of [`vw_run`], once every rank has published: this
/// rank's blocks to send and receive (None: its arguments are bad), `msg`:
/// it sends its blocks as messages.
unsafe fn vw_finish(
    f: &Flat,
    mine: Option<(&[parts::Typed], &[parts::Typed])>,
    msg: bool,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let (me, size, table) = (f.rank, f.size, vtable(f.size));
    let ways: Vec<VWay> = (0..size).map(|r| vway(f, r)).collect();
    let mut err = None;
    if let Some((_, rv)) = mine {
        for (r, v) in rv.iter().enumerate() {
            match ways[r] {
                VWay::Segment => match table_block(f, r, me, table, v.bytes()) {
                    Ok(src) => v.dt.unpack(std::slice::from_raw_parts(src, v.bytes()), v.p),
                    Err(e) => {
                        err.get_or_insert(e);
                    }
                },
                VWay::Nothing => {
                    err.get_or_insert(MpiError::new(
                        MPI_ERR_TRUNCATE,
                        format!("rank {r} of the collective sends nothing (its arguments are bad)"),
                    ));
                }
                VWay::Messages => {}
            }
        }
    }
    if ways.contains(&VWay::Messages) {
        // Every rank, even one with bad arguments, takes part (each
        // schedule takes a tag of the communicator).
        let r = run(comm, Call::Block, |_, s| {
            let Some((sv, rv)) = mine else { return Ok(()) };
            for r in (0..size).filter(|&r| r != me && ways[r] == VWay::Messages) {
                let p = s.output(rv[r].p, rv[r].count, &rv[r].dt);
                s.recv(p, rv[r].bytes(), r);
            }
            if msg {
                for j in (0..size).filter(|&j| j != me && ways[j] != VWay::Nothing) {
                    let p = s.input(sv[j].p, sv[j].count, &sv[j].dt);
                    s.send(p, sv[j].bytes(), j);
                }
                let (i, o) =
                    (s.input(sv[me].p, sv[me].count, &sv[me].dt), s.output(rv[me].p, rv[me].count, &rv[me].dt));
                s.copy(i, o, rv[me].bytes());
            }
            Ok(())
        });
        if let Err(e) = r {
            err.get_or_insert(e);
        }
    }
    err.map_or(Ok(()), Err)
}

// ----- Gatherv and Scatterv in shared memory -----------------------------------------

/// The length a rank whose arguments are bad publishes.
const BAD: usize = flat::BAD_LEN;

/// Communicator size, rank and root of a blocking rooted collective that may
/// run in the segment, and what [`this`] makes of this rank's arguments
/// (under the lock). None: messages (an intercommunicator, one rank, or a
/// bad communicator or root: alike everywhere, reported there).
fn rooted<T>(
    comm: MPI_Comm,
    root: c_int,
    this: impl FnOnce(&mut State, usize, usize, usize) -> MpiResult<T>,
) -> Option<(usize, usize, usize, MpiResult<T>)> {
    rt::with(|st| {
        let c = st.comms.get(comm)?;
        let (size, rank) = (c.size() as usize, c.rank as usize);
        if c.is_inter() || size < 2 {
            return Ok(None);
        }
        let Ok(root) = check_root(root, size) else { return Ok(None) };
        Ok(Some((size, rank, root, this(st, size, rank, root))))
    })
    .ok()
    .flatten()
}

/// This rank's part of a Gatherv or Scatterv: at the root, the blocks of
/// every rank (`many`: buffer, counts, displacements, type, their names)
/// and its own block to copy (`one`, the other side: buffer, count, type,
/// name; None when it is `MPI_IN_PLACE`); at another rank, its block
/// (`one`).
///
/// # Safety
/// The arrays of `many` are NULL or address `size` values.
#[allow(clippy::type_complexity)]
unsafe fn rooted_args(
    st: &mut State,
    size: usize,
    rank: usize,
    root: usize,
    one: (*const c_void, i64, MPI_Datatype, &str),
    many: (*const c_void, Arr, Arr, MPI_Datatype, [&str; 3]),
) -> MpiResult<Result<(Vec<parts::Typed>, Option<parts::Typed>), parts::Typed>> {
    let (buf, count, t, name) = one;
    if rank != root {
        let (n, dt) = typed(st, buf, count, t, name)?;
        return Ok(Err(typed_view(buf, n, &dt)));
    }
    let v = vblocks(many.0, many.1, many.2, &[many.3], st, size, false, many.4)?;
    if in_place(buf) {
        return Ok(Ok((v, None)));
    }
    let (n, dt) = typed(st, buf, count, t, name)?;
    signature_match(dt.packed_size(n), v[root].bytes())?;
    no_alias(buf, many.0, v[root].bytes())?;
    Ok(Ok((v, Some(typed_view(buf, n, &dt)))))
}

/// What a rank does in [`fast_gatherv`] or [`fast_scatterv`] (see
/// [`fastv_pick`]).
enum FastV {
    /// The root, with its type's element size and extent, and the bytes of
    /// its own block to copy (None: in place).
    Root(usize, isize, Option<usize>),
    /// Another rank, with the bytes of its block.
    Leaf(usize),
}

/// This rank's part of [`fast_gatherv`] or [`fast_scatterv`], if its
/// arguments take it (else None: the general path runs the call): the
/// root's `root` checked; `one` (buffer, count, type) is a non-root's
/// block and, at the root, its own block (`MPI_IN_PLACE`: none); `many`
/// (buffer, counts, displacements, type) the root's blocks of every rank.
/// Contiguous types, good counts and buffers, and at the root its own
/// block's size matching its count. Gives the part, the root, and the
/// bytes of the root's blocks but its own (0 at other ranks).
#[allow(clippy::type_complexity)]
unsafe fn fastv_pick(
    st: &State,
    w: &Who,
    root: c_int,
    one: (*const c_void, i64, MPI_Datatype),
    many: (*const c_void, Arr, Arr, MPI_Datatype),
    (sendbuf, recvbuf): (*const c_void, *const c_void),
) -> Option<(FastV, usize, usize)> {
    let root = check_root(root, w.size).ok()?;
    if w.rank != root {
        let n = fast_bytes(st, one.1, one.2)?;
        return (n == 0 || !one.0.is_null()).then_some((FastV::Leaf(n), root, 0));
    }
    let own = if in_place(one.0) {
        None
    } else {
        let n = fast_bytes(st, one.1, one.2)?;
        fast_bufs(sendbuf, recvbuf).then_some(())?;
        Some(n)
    };
    let (buf, counts, displs, t) = many;
    if counts.is_null() || displs.is_null() || buf.is_null() {
        return None;
    }
    let dt = st.types.committed(t)?;
    if !dt.contig {
        return None;
    }
    let mut others = 0;
    for j in 0..w.size {
        let c = counts.get(j);
        if c < 0 {
            return None;
        }
        if j != root {
            others += c as usize * dt.size;
        }
    }
    if own.is_some_and(|n| n != counts.get(root) as usize * dt.size) {
        return None;
    }
    Some((FastV::Root(dt.size, dt.extent, own), root, others))
}

/// [`shm_gatherv`] for contiguous types and good arguments (else None,
/// before any step: the general path runs the call in the same layout, so
/// each rank chooses alone), without typed views or allocations (see
/// [`fast_alltoallv`]).
unsafe fn fast_gatherv(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Arr,
    displs: Arr,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (f, (part, root)) = fast(comm, |st, w| {
        let (part, root, _) = fastv_pick(
            st,
            w,
            root,
            (sendbuf, sendcount, sendtype),
            (recvbuf, recvcounts, displs, recvtype),
            (sendbuf, recvbuf),
        )?;
        // A non-root writes its block; the root only arrives.
        let bytes = match part {
            FastV::Leaf(n) => n,
            FastV::Root(..) => 0,
        };
        Some(((part, root), bytes))
    })?;
    Some((|| {
        f.wait_turn()?;
        let (u, e, own) = match part {
            FastV::Leaf(n) => {
                f.wait_free()?;
                fast_copy(sendbuf as *const u8, f.buf(f.rank), n);
                f.publish(Some(n));
                return Ok(());
            }
            FastV::Root(u, e, own) => (u, e, own),
        };
        f.publish(None);
        let at = |j: usize| (recvbuf as *mut u8).wrapping_offset(displs.get(j) as isize * e);
        if let Some(n) = own {
            fast_copy(sendbuf as *const u8, at(root), n);
        }
        f.wait_data(0..root)?;
        f.wait_data(root + 1..f.size)?;
        if (0..f.size).any(|r| r != root && (f.sent_by_message(r) || f.len_of(r) == BAD)) {
            let rv = rt::with(|st| {
                vblocks(
                    recvbuf,
                    recvcounts,
                    displs,
                    &[recvtype],
                    st,
                    f.size,
                    false,
                    ["recvbuf", "recvcounts", "displs"],
                )
            })?;
            return gatherv_collect(&f, Some(&rv), comm);
        }
        for r in (0..f.size).filter(|&r| r != root) {
            let (got, want) = (f.len_of(r), recvcounts.get(r) as usize * u);
            if got != want {
                return Err(len_mismatch(r, got, want));
            }
            fast_copy(f.buf(r), at(r), got);
        }
        Ok(())
    })())
}

/// [`shm_scatterv`] for contiguous types, good arguments and blocks that fit
/// a small buffer (else None, before any step: see [`fast_gatherv`]).
unsafe fn fast_scatterv(
    sendbuf: *const c_void,
    sendcounts: Arr,
    displs: Arr,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (f, (part, root, table)) = fast(comm, |st, w| {
        let table = vtable(w.size) + 4;
        // (Whether the table fits decides for every rank, as in shm_scatterv.)
        flat::fits(&st.coll.tune, table)?;
        let (part, root, others) = fastv_pick(
            st,
            w,
            root,
            (recvbuf, recvcount, recvtype),
            (sendbuf, sendcounts, displs, sendtype),
            (sendbuf, recvbuf),
        )?;
        // The root writes the table and the others' blocks; the others only arrive.
        let bytes = match part {
            FastV::Leaf(_) => 0,
            FastV::Root(..) => table + others,
        };
        Some(((part, root, table), bytes))
    })?;
    let (me, size) = (f.rank, f.size);
    Some((|| {
        f.wait_turn()?;
        let n = match part {
            FastV::Leaf(n) => n,
            FastV::Root(u, e, own) => {
                f.wait_free()?;
                let at = |j: usize| (sendbuf as *const u8).wrapping_offset(displs.get(j) as isize * e);
                let buf = f.buf(me);
                let off = write_blocks(buf, size, table, |j, to| {
                    let n = if j == root { 0 } else { sendcounts.get(j) as usize * u };
                    fast_copy(at(j), to, n);
                    n
                });
                tput(buf, size + 1, 0);
                f.publish(Some(table + off));
                if let Some(n) = own {
                    fast_copy(at(root), recvbuf as *mut u8, n);
                }
                return Ok(());
            }
        };
        f.publish(None);
        f.wait_data(root..root + 1)?;
        let len = f.len_of(root);
        if len < table || len == BAD || tget(f.buf(root), size + 1) != 0 {
            let v = rt::with(|st| typed(st, recvbuf, recvcount, recvtype, "recvbuf"))
                .map(|(c, dt)| typed_view(recvbuf, c, &dt))?;
            return scatterv_take(&f, root, Some(&v), comm);
        }
        fast_copy(table_block(&f, root, me, table, n)?, recvbuf as *mut u8, n);
        Ok(())
    })())
}

/// A blocking Gatherv on a communicator with a segment (every rank takes
/// the operation: the segment alone decides). Each rank but the root
/// writes its packed block to its buffer and publishes it, or, if it does
/// not fit, publishes its length with kind `Msg` and sends it as a message
/// under the operation's tag (see [`Flat::msg_tag`]); a rank with bad
/// arguments publishes [`BAD`]. The root waits for every rank's header,
/// checks each length against its count (`MPI_ERR_TRUNCATE`), copies the
/// blocks out, and receives the ones sent as messages (into a temporary if
/// their length is not what it expects, so no sender waits forever).
unsafe fn shm_gatherv(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Arr,
    displs: Arr,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (size, me, root, mine) = rooted(comm, root, |st, size, rank, root| {
        rooted_args(
            st,
            size,
            rank,
            root,
            (sendbuf, sendcount, sendtype, "sendbuf"),
            (recvbuf, recvcounts, displs, recvtype, ["recvbuf", "recvcounts", "displs"]),
        )
    })?;
    let bytes = match &mine {
        Ok(Err(v)) => v.bytes(),
        _ => 0,
    };
    let (f, msg) = match seg_op(comm, bytes)? {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    let r = (|| {
        f.wait_turn()?;
        if me != root {
            f.wait_free()?;
            return match &mine {
                Ok(Err(v)) if !msg => {
                    v.dt.pack(v.p, v.count, std::slice::from_raw_parts_mut(f.buf(me), bytes));
                    f.publish(Some(bytes));
                    Ok(())
                }
                Ok(Err(v)) => {
                    f.publish(Some(bytes));
                    run_tagged(comm, f.msg_tag(), |_, s| {
                        let p = s.input(v.p, v.count, &v.dt);
                        s.send(p, bytes, root);
                        Ok(())
                    })
                }
                _ => {
                    f.publish(Some(BAD));
                    Ok(())
                }
            };
        }
        f.publish(None);
        let blocks = mine.as_ref().ok().and_then(|m| m.as_ref().ok());
        if let Some((rv, Some(own))) = blocks {
            copy_typed(own, &rv[root]);
        }
        f.wait_data(0..root)?;
        f.wait_data(root + 1..size)?;
        gatherv_collect(&f, blocks.map(|b| b.0.as_slice()), comm)
    })();
    Some(match mine {
        Err(e) => Err(e),
        Ok(_) => r,
    })
}

/// The root's reading in [`shm_gatherv`], once every other rank has
/// published: each block into its place in `rv` (None: the root's
/// arguments are bad, the blocks sent as messages are only drained).
unsafe fn gatherv_collect(f: &Flat, rv: Option<&[parts::Typed]>, comm: MPI_Comm) -> MpiResult<()> {
    let (root, size) = (f.rank, f.size);
    let mut err = None;
    let mut by_msg = Vec::new();
    for r in (0..size).filter(|&r| r != root) {
        let got = f.len_of(r);
        if f.sent_by_message(r) {
            by_msg.push(r);
        } else if got == BAD {
            err.get_or_insert(MpiError::new(
                MPI_ERR_TRUNCATE,
                format!("rank {r} of the Gatherv sends nothing (its arguments are bad)"),
            ));
        } else if let Some(rv) = rv {
            if got != rv[r].bytes() {
                err.get_or_insert(len_mismatch(r, got, rv[r].bytes()));
            } else {
                rv[r].dt.unpack(std::slice::from_raw_parts(f.buf(r), got), rv[r].p);
            }
        }
    }
    if !by_msg.is_empty() {
        let r = run_tagged(comm, f.msg_tag(), |_, s| {
            for &r in &by_msg {
                let got = f.len_of(r);
                match rv {
                    Some(rv) if got == rv[r].bytes() => {
                        let p = s.output(rv[r].p, rv[r].count, &rv[r].dt);
                        s.recv(p, got, r);
                    }
                    _ => {
                        if let Some(rv) = rv {
                            err.get_or_insert(len_mismatch(r, got, rv[r].bytes()));
                        }
                        let t = s.tmp(got);
                        s.recv(t, got, r);
                    }
                }
            }
            Ok(())
        });
        if let Err(e) = r {
            err.get_or_insert(e);
        }
    }
    err.map_or(Ok(()), Err)
}

/// Copies typed data `from` to `to` (of the same packed size), through a
/// packed temporary unless both are contiguous.
///
/// # Safety
/// Both views address their elements; they do not overlap.
unsafe fn copy_typed(from: &parts::Typed, to: &parts::Typed) {
    let n = from.bytes();
    if from.dt.contig && to.dt.contig {
        fast_copy(from.p, to.p, n);
        return;
    }
    let mut tmp = vec![0u8; n];
    from.dt.pack(from.p, from.count, &mut tmp);
    to.dt.unpack(&tmp, to.p);
}

/// A rank's reading in [`shm_scatterv`], once the root has published:
/// its block into `v` (None: this rank's arguments are bad; a block sent
/// as a message is only drained).
unsafe fn scatterv_take(f: &Flat, root: usize, v: Option<&parts::Typed>, comm: MPI_Comm) -> MpiResult<()> {
    let (me, size, table) = (f.rank, f.size, vtable(f.size) + 4);
    let len = f.len_of(root);
    if len < table || len == BAD {
        bail!(MPI_ERR_TRUNCATE, "the root of the Scatterv sends nothing (its arguments are bad)");
    }
    let src = f.buf(root);
    if tget(src, size + 1) == 0 {
        let Some(v) = v else { return Ok(()) };
        let at = table_block(f, root, me, table, v.bytes())?;
        v.dt.unpack(std::slice::from_raw_parts(at, v.bytes()), v.p);
        return Ok(());
    }
    // By message: the table still says how long the block is.
    let got = tget(src, me + 1).wrapping_sub(tget(src, me));
    let mut err = None;
    let r = run_tagged(comm, f.msg_tag(), |_, s| {
        match v {
            Some(v) if v.bytes() == got => {
                let p = s.output(v.p, v.count, &v.dt);
                s.recv(p, got, root);
            }
            v => {
                if let Some(v) = v {
                    err = Some(len_mismatch(root, got, v.bytes()));
                }
                let t = s.tmp(got);
                s.recv(t, got, root);
            }
        }
        Ok(())
    });
    err.map_or(r, Err)
}

/// `MPI_ERR_TRUNCATE`: rank `r` has `got` bytes where this rank expects `want`.
fn len_mismatch(r: usize, got: usize, want: usize) -> MpiError {
    MpiError::new(MPI_ERR_TRUNCATE, format!("rank {r} of the collective has {got} bytes where this rank expects {want}: counts or types differ between ranks"))
}

/// A blocking Scatterv on a communicator with a segment (every rank takes
/// the operation). The root writes a table (each block's offset, and
/// whether the blocks go as messages) and, if they fit, the packed blocks
/// (its own excepted); else it sends each block as a message under the
/// operation's tag. Each rank waits for the root's header, learns the
/// length of its block from the table (`MPI_ERR_TRUNCATE` if it is not its
/// count; a block sent as a message is then received into a temporary, so
/// the root does not wait forever), and copies or receives it. A root with
/// bad arguments publishes [`BAD`]. Runs only if the table fits the
/// segment (up to 8190 ranks; decided by the size, alike everywhere).
unsafe fn shm_scatterv(
    sendbuf: *const c_void,
    sendcounts: Arr,
    displs: Arr,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (size, me, root, mine) = rooted(comm, root, |st, size, rank, root| {
        rooted_args(
            st,
            size,
            rank,
            root,
            (recvbuf, recvcount, recvtype, "recvbuf"),
            (sendbuf, sendcounts, displs, sendtype, ["sendbuf", "sendcounts", "displs"]),
        )
    })?;
    // The offsets of the blocks, then whether they go as messages.
    let table = vtable(size) + 4;
    // The root's bytes: the table and the others' blocks.
    let data = match &mine {
        Ok(Ok((sv, _))) => (0..size).filter(|&j| j != root).map(|j| sv[j].bytes()).sum(),
        _ => 0,
    };
    // Whether the table fits (else messages, decided by the size alike
    // everywhere), and whether the blocks do (else the root writes the
    // table alone).
    let (table_fits, msg) = rt::with(|st| {
        Ok((flat::fits(&st.coll.tune, table).is_some(), flat::fits(&st.coll.tune, table + data).is_none()))
    })
    .ok()?;
    if !table_fits {
        return None;
    }
    let (f, _) = match seg_op(
        comm,
        if me != root {
            0
        } else if msg {
            table
        } else {
            table + data
        },
    )? {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    let r = (|| {
        f.wait_turn()?;
        if me == root {
            let Ok(Ok((sv, own))) = &mine else {
                f.wait_free()?;
                f.publish(Some(BAD));
                return Ok(());
            };
            f.wait_free()?;
            let buf = f.buf(me);
            write_blocks(buf, size, table, |j, at| {
                let (v, n) = (&sv[j], if j == root { 0 } else { sv[j].bytes() });
                if !msg && n > 0 {
                    v.dt.pack(v.p, v.count, std::slice::from_raw_parts_mut(at, n));
                }
                n
            });
            tput(buf, size + 1, msg as usize);
            f.publish(Some(if msg { table } else { table + data }));
            if let Some(own) = own {
                copy_typed(&sv[root], own);
            }
            if msg {
                return run_tagged(comm, f.msg_tag(), |_, s| {
                    for j in (0..size).filter(|&j| j != root) {
                        let p = s.input(sv[j].p, sv[j].count, &sv[j].dt);
                        s.send(p, sv[j].bytes(), j);
                    }
                    Ok(())
                });
            }
            return Ok(());
        }
        f.publish(None);
        f.wait_data(root..root + 1)?;
        scatterv_take(&f, root, mine.as_ref().ok().and_then(|m| m.as_ref().err()), comm)
    })();
    Some(match mine {
        Err(e) => Err(e),
        Ok(_) => r,
    })
}

// ----- the collectives -------------------------------------------------------------

pub(crate) fn barrier(call: Call, comm: MPI_Comm) -> MpiResult<()> {
    if let Call::Block = call {
        if let Some(r) = fast_barrier(comm) {
            return r;
        }
    }
    let plan = match flat_barrier(call, comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            intercoll::barrier(st, s);
            return Ok(());
        }
        algo::barrier(s);
        Ok(())
    })
}

pub(crate) unsafe fn bcast(
    call: Call,
    buffer: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<()> {
    if let Call::Block = call {
        if let Some(r) = fast_bcast(buffer, count, datatype, root, comm) {
            return r;
        }
        if let Some(r) = direct_bcast(buffer, count, datatype, root, comm) {
            return r;
        }
    }
    let plan = match flat_bcast(call, buffer, count, datatype, root, comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            return intercoll::bcast(st, s, buffer, count, datatype, root);
        }
        let root = check_root(root, s.size)?;
        let (n, dt) = typed(st, buffer, count, datatype, "buffer")?;
        let buf =
            if s.rank == root { s.input(buffer as *const u8, n, &dt) } else { s.output(buffer as *mut u8, n, &dt) };
        algo::bcast(s, &st.coll.tune, buf, dt.packed_size(n), root);
        Ok(())
    })
}

pub(crate) unsafe fn gather(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let plan = match flat_rooted(call, false, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            return intercoll::gather(st, s, sendbuf, sendcount, sendtype, recvbuf, recvcount, None, recvtype, root);
        }
        let root = check_root(root, s.size)?;
        let is_root = s.rank == root;
        if !is_root {
            let (sc, sdt) = typed(st, sendbuf, sendcount, sendtype, "sendbuf")?;
            let mine = s.input(sendbuf as *const u8, sc, &sdt);
            algo::gather(s, &st.coll.tune, mine, sdt.packed_size(sc), std::ptr::null_mut(), root);
            return Ok(());
        }
        let (rc, rdt) = typed(st, recvbuf, recvcount, recvtype, "recvbuf")?;
        let blk = rdt.packed_size(rc);
        let out = s.output(recvbuf as *mut u8, rc * s.size, &rdt);
        let mine = at(out, root * blk);
        if in_place(sendbuf) {
            s.pack_to(elem(recvbuf, root * rc, &rdt), rc, &rdt, mine);
            algo::gather(s, &st.coll.tune, mine, blk, out, root);
        } else {
            let (sc, sdt) = typed(st, sendbuf, sendcount, sendtype, "sendbuf")?;
            signature_match(sdt.packed_size(sc), blk)?;
            no_alias(sendbuf, recvbuf, blk)?;
            let mine = s.input(sendbuf as *const u8, sc, &sdt);
            algo::gather(s, &st.coll.tune, mine, blk, out, root);
        }
        Ok(())
    })
}

pub(super) fn at(p: P, off: usize) -> P {
    p.wrapping_add(off)
}

/// Packed views of blocks `counts[i]` elements of `dt` at `buf + displs[i]`
/// (in units of `disp_unit` bytes, or of the extent when None).
pub(super) fn views(
    s: &mut Sched,
    buf: *const c_void,
    counts: &[usize],
    displs: &[i64],
    dts: &[Arc<Dtype>],
    bytes_disp: bool,
    dir: Dir,
    skip: Option<usize>,
) -> Vec<(P, usize)> {
    (0..counts.len())
        .map(|i| {
            let dt = &dts[i.min(dts.len() - 1)];
            let off = if bytes_disp { displs[i] as isize } else { displs[i] as isize * dt.extent };
            let p = (buf as *mut u8).wrapping_offset(off);
            let n = dt.packed_size(counts[i]);
            if skip == Some(i) {
                return (std::ptr::null_mut(), n);
            }
            let v = match dir {
                Dir::In => s.input(p, counts[i], dt),
                Dir::Out => s.output(p, counts[i], dt),
                Dir::InOut => s.inout(p, counts[i], dt),
            };
            (v, n)
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    In,
    Out,
    InOut,
}

pub(crate) unsafe fn gatherv(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Arr,
    displs: Arr,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<()> {
    if let Call::Block = call {
        if let Some(r) = fast_gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm) {
            return r;
        }
        if let Some(r) = shm_gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm) {
            return r;
        }
    }
    run(comm, call, |st, s| {
        if s.is_inter() {
            return intercoll::gather(
                st,
                s,
                sendbuf,
                sendcount,
                sendtype,
                recvbuf,
                0,
                Some((recvcounts, displs)),
                recvtype,
                root,
            );
        }
        let root = check_root(root, s.size)?;
        if s.rank != root {
            let (sc, sdt) = typed(st, sendbuf, sendcount, sendtype, "sendbuf")?;
            let mine = s.input(sendbuf as *const u8, sc, &sdt);
            algo::gatherv(s, mine, sdt.packed_size(sc), &[], root);
            return Ok(());
        }
        let counts = recvcounts.counts(s.size, "recvcounts")?;
        let displs = displs.read(s.size, "displs")?;
        let rdt = st.types.get(recvtype)?;
        let inp = in_place(sendbuf);
        let mut v =
            views(s, recvbuf, &counts, &displs, std::slice::from_ref(&rdt), false, Dir::Out, inp.then_some(root));
        let mine = if inp {
            let p = elem(recvbuf, 0, &rdt).wrapping_offset(displs[root] as isize * rdt.extent);
            v[root].0 = s.inout(p, counts[root], &rdt);
            v[root].0
        } else {
            let (sc, sdt) = typed(st, sendbuf, sendcount, sendtype, "sendbuf")?;
            signature_match(sdt.packed_size(sc), v[root].1)?;
            no_alias(sendbuf, recvbuf, v[root].1)?;
            s.input(sendbuf as *const u8, sc, &sdt)
        };
        let n = v[root].1;
        algo::gatherv(s, mine, n, &v, root);
        Ok(())
    })
}

pub(crate) unsafe fn scatter(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let plan = match flat_rooted(call, true, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            return intercoll::scatter(st, s, sendbuf, sendcount, None, sendtype, recvbuf, recvcount, recvtype, root);
        }
        let root = check_root(root, s.size)?;
        if s.rank != root {
            let (rc, rdt) = typed(st, recvbuf, recvcount, recvtype, "recvbuf")?;
            let out = s.output(recvbuf as *mut u8, rc, &rdt);
            algo::scatter(s, &st.coll.tune, std::ptr::null_mut(), rdt.packed_size(rc), out, root);
            return Ok(());
        }
        let (sc, sdt) = typed(st, sendbuf, sendcount, sendtype, "sendbuf")?;
        let blk = sdt.packed_size(sc);
        let src = s.input(sendbuf as *const u8, sc * s.size, &sdt);
        let out = if in_place(recvbuf) {
            std::ptr::null_mut()
        } else {
            let (rc, rdt) = typed(st, recvbuf, recvcount, recvtype, "recvbuf")?;
            signature_match(rdt.packed_size(rc), blk)?;
            no_alias(sendbuf, recvbuf, blk)?;
            s.output(recvbuf as *mut u8, rc, &rdt)
        };
        algo::scatter(s, &st.coll.tune, src, blk, out, root);
        Ok(())
    })
}

pub(crate) unsafe fn scatterv(
    call: Call,
    sendbuf: *const c_void,
    sendcounts: Arr,
    displs: Arr,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<()> {
    if let Call::Block = call {
        if let Some(r) = fast_scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm)
        {
            return r;
        }
        if let Some(r) = shm_scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm) {
            return r;
        }
    }
    run(comm, call, |st, s| {
        if s.is_inter() {
            return intercoll::scatter(
                st,
                s,
                sendbuf,
                0,
                Some((sendcounts, displs)),
                sendtype,
                recvbuf,
                recvcount,
                recvtype,
                root,
            );
        }
        let root = check_root(root, s.size)?;
        if s.rank != root {
            let (rc, rdt) = typed(st, recvbuf, recvcount, recvtype, "recvbuf")?;
            let out = s.output(recvbuf as *mut u8, rc, &rdt);
            algo::scatterv(s, &[], out, rdt.packed_size(rc), root, false);
            return Ok(());
        }
        let counts = sendcounts.counts(s.size, "sendcounts")?;
        let displs = displs.read(s.size, "displs")?;
        let sdt = st.types.get(sendtype)?;
        let inp = in_place(recvbuf);
        let v = views(s, sendbuf, &counts, &displs, &[sdt], false, Dir::In, inp.then_some(root));
        let (out, n) = if inp {
            (std::ptr::null_mut(), 0)
        } else {
            let (rc, rdt) = typed(st, recvbuf, recvcount, recvtype, "recvbuf")?;
            signature_match(rdt.packed_size(rc), v[root].1)?;
            (s.output(recvbuf as *mut u8, rc, &rdt), rdt.packed_size(rc))
        };
        algo::scatterv(s, &v, out, n, root, inp);
        Ok(())
    })
}

pub(crate) unsafe fn allgather(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<()> {
    if let Call::Block = call {
        if let Some(r) = fast_gather_all(false, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) {
            return r;
        }
        if let Some(r) = direct_gather_all(false, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) {
            return r;
        }
    }
    let plan = match flat_allgather(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            return intercoll::allgather(st, s, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
        }
        let (rc, rdt) = typed(st, recvbuf, recvcount, recvtype, "recvbuf")?;
        let blk = rdt.packed_size(rc);
        let out = s.output(recvbuf as *mut u8, rc * s.size, &rdt);
        let mine = at(out, s.rank * blk);
        if in_place(sendbuf) {
            s.pack_to(elem(recvbuf, s.rank * rc, &rdt), rc, &rdt, mine);
            algo::allgather(s, &st.coll.tune, mine, blk, out);
        } else {
            let (sc, sdt) = typed(st, sendbuf, sendcount, sendtype, "sendbuf")?;
            signature_match(sdt.packed_size(sc), blk)?;
            no_alias(sendbuf, recvbuf, blk)?;
            let mine = s.input(sendbuf as *const u8, sc, &sdt);
            algo::allgather(s, &st.coll.tune, mine, blk, out);
        }
        Ok(())
    })
}

pub(crate) unsafe fn allgatherv(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Arr,
    displs: Arr,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let plan = match flat_allgatherv(call, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            return intercoll::allgatherv(st, s, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype);
        }
        let counts = recvcounts.counts(s.size, "recvcounts")?;
        let displs = displs.read(s.size, "displs")?;
        let rdt = st.types.get(recvtype)?;
        let me = s.rank;
        let inp = in_place(sendbuf);
        let mut v = views(s, recvbuf, &counts, &displs, std::slice::from_ref(&rdt), false, Dir::Out, Some(me));
        let p = elem(recvbuf, 0, &rdt).wrapping_offset(displs[me] as isize * rdt.extent);
        if inp {
            v[me].0 = s.inout(p, counts[me], &rdt);
        } else {
            let (sc, sdt) = typed(st, sendbuf, sendcount, sendtype, "sendbuf")?;
            signature_match(sdt.packed_size(sc), v[me].1)?;
            no_alias(sendbuf, recvbuf, v[me].1)?;
            let mine = s.input(sendbuf as *const u8, sc, &sdt);
            v[me].0 = s.output(p, counts[me], &rdt);
            s.copy(mine, v[me].0, v[me].1);
        }
        algo::allgather_ring(s, &v);
        Ok(())
    })
}

pub(crate) unsafe fn alltoall(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<()> {
    if let Call::Block = call {
        if let Some(r) = fast_gather_all(true, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) {
            return r;
        }
        if let Some(r) = direct_gather_all(true, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) {
            return r;
        }
    }
    let plan = match flat_alltoall(call, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            return intercoll::alltoall(st, s, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
        }
        let size = s.size;
        let (rc, rdt) = typed(st, recvbuf, recvcount, recvtype, "recvbuf")?;
        let blk = rdt.packed_size(rc);
        if in_place(sendbuf) {
            let buf = s.inout(recvbuf as *mut u8, rc * size, &rdt);
            let v: Vec<(P, usize)> = (0..size).map(|i| (at(buf, i * blk), blk)).collect();
            algo::alltoall_in_place(s, &v);
            return Ok(());
        }
        let (sc, sdt) = typed(st, sendbuf, sendcount, sendtype, "sendbuf")?;
        signature_match(sdt.packed_size(sc), blk)?;
        no_alias(sendbuf, recvbuf, blk * size)?;
        let src = s.input(sendbuf as *const u8, sc * size, &sdt);
        let out = s.output(recvbuf as *mut u8, rc * size, &rdt);
        algo::alltoall(s, &st.coll.tune, src, blk, out);
        Ok(())
    })
}

/// Alltoallv (one type each side, displacements in extents) and Alltoallw
/// (a type per peer, displacements in bytes).
unsafe fn alltoall_vw(
    call: Call,
    sendbuf: *const c_void,
    sendcounts: Arr,
    sdispls: Arr,
    sendtypes: &[MPI_Datatype],
    recvbuf: *mut c_void,
    recvcounts: Arr,
    rdispls: Arr,
    recvtypes: &[MPI_Datatype],
    comm: MPI_Comm,
    bytes_disp: bool,
) -> MpiResult<()> {
    if let Call::Block = call {
        if let Some(r) = shm_alltoall_vw(
            sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, bytes_disp,
        ) {
            return r;
        }
    }
    run(comm, call, |st, s| {
        if s.is_inter() {
            return intercoll::alltoall_vw(
                st, s, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, bytes_disp,
            );
        }
        let size = s.size;
        let rc = recvcounts.counts(size, "recvcounts")?;
        let rd = rdispls.read(size, "rdispls")?;
        let rdts = recvtypes.iter().map(|&t| st.types.get(t)).collect::<MpiResult<Vec<_>>>()?;
        if in_place(sendbuf) {
            let v = views(s, recvbuf, &rc, &rd, &rdts, bytes_disp, Dir::InOut, None);
            algo::alltoall_in_place(s, &v);
            return Ok(());
        }
        let sc = sendcounts.counts(size, "sendcounts")?;
        let sd = sdispls.read(size, "sdispls")?;
        let sdts = sendtypes.iter().map(|&t| st.types.get(t)).collect::<MpiResult<Vec<_>>>()?;
        let sv = views(s, sendbuf, &sc, &sd, &sdts, bytes_disp, Dir::In, None);
        let rv = views(s, recvbuf, &rc, &rd, &rdts, bytes_disp, Dir::Out, None);
        if std::ptr::eq(sendbuf, recvbuf) && sv.iter().any(|v| v.1 > 0) {
            no_alias(sendbuf, recvbuf, 1)?;
        }
        signature_match(sv[s.rank].1, rv[s.rank].1)?;
        algo::alltoallv(s, &sv, &rv, st.coll.tune.alltoall.as_deref() == Some("pairwise"));
        Ok(())
    })
}

pub(crate) unsafe fn alltoallv(
    call: Call,
    sendbuf: *const c_void,
    sendcounts: Arr,
    sdispls: Arr,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Arr,
    rdispls: Arr,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<()> {
    if let Call::Block = call {
        if let Some(r) =
            fast_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm)
        {
            return r;
        }
    }
    let st = if in_place(sendbuf) { recvtype } else { sendtype };
    alltoall_vw(call, sendbuf, sendcounts, sdispls, &[st], recvbuf, recvcounts, rdispls, &[recvtype], comm, false)
}

pub(crate) unsafe fn alltoallw(
    call: Call,
    sendbuf: *const c_void,
    sendcounts: Arr,
    sdispls: Arr,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: Arr,
    rdispls: Arr,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let size = rt::with(|st| Ok(st.comms.get(comm)?.size() as usize))?;
    let types = |p: *const MPI_Datatype| {
        if p.is_null() {
            vec![MPI_DATATYPE_NULL]
        } else {
            std::slice::from_raw_parts(p, size).to_vec()
        }
    };
    let rts = types(recvtypes);
    let sts = if in_place(sendbuf) { rts.clone() } else { types(sendtypes) };
    alltoall_vw(call, sendbuf, sendcounts, sdispls, &sts, recvbuf, recvcounts, rdispls, &rts, comm, true)
}

/// Views of a reduction's input and output: (input, output, bytes).
unsafe fn reduce_views(
    st: &mut State,
    s: &mut Sched,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    writes_result: bool,
) -> MpiResult<(P, P, usize)> {
    let n = check_count(count)?;
    let dt = st.types.get(datatype)?;
    s.red = Some(reducer(st, op, datatype, &dt)?);
    let bytes = dt.packed_size(n);
    if in_place(sendbuf) {
        if !writes_result {
            bail!(MPI_ERR_BUFFER, "MPI_IN_PLACE is only allowed at the root");
        }
        check_buf(recvbuf, n, &dt, "recvbuf")?;
        let b = s.inout(recvbuf as *mut u8, n, &dt);
        return Ok((b, b, bytes));
    }
    check_buf(sendbuf, n, &dt, "sendbuf")?;
    let sb = s.input(sendbuf as *const u8, n, &dt);
    if !writes_result {
        return Ok((sb, std::ptr::null_mut(), bytes));
    }
    check_buf(recvbuf, n, &dt, "recvbuf")?;
    no_alias(sendbuf, recvbuf, bytes)?;
    Ok((sb, s.output(recvbuf as *mut u8, n, &dt), bytes))
}

pub(crate) unsafe fn reduce(
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let plan = match flat_reduce(call, sendbuf, recvbuf, count, datatype, op, Target::Root(root), comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            return intercoll::reduce(st, s, sendbuf, recvbuf, count, datatype, op, root);
        }
        let root = check_root(root, s.size)?;
        let (sb, rb, n) = reduce_views(st, s, sendbuf, recvbuf, count, datatype, op, s.rank == root)?;
        algo::reduce(s, &st.coll.tune, sb, rb, n, root);
        Ok(())
    })
}

pub(crate) unsafe fn allreduce(
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<()> {
    if let Call::Block = call {
        if let Some(r) = fast_allreduce(sendbuf, recvbuf, count, datatype, op, comm) {
            return r;
        }
        if let Some(r) = flat_allreduce_split(sendbuf, recvbuf, count, datatype, op, comm) {
            return r;
        }
        if let Some(r) = pieces_allreduce(sendbuf, recvbuf, count, datatype, op, comm) {
            return r;
        }
    }
    let plan = match flat_reduce(call, sendbuf, recvbuf, count, datatype, op, Target::All, comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            return intercoll::allreduce(st, s, sendbuf, recvbuf, count, datatype, op);
        }
        let (sb, rb, n) = reduce_views(st, s, sendbuf, recvbuf, count, datatype, op, true)?;
        algo::allreduce(s, &st.coll.tune, sb, rb, n);
        Ok(())
    })
}

pub(crate) unsafe fn scan(
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    exclusive: bool,
) -> MpiResult<()> {
    let plan = match flat_reduce(call, sendbuf, recvbuf, count, datatype, op, Target::Prefix(exclusive), comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            bail!(MPI_ERR_COMM, "Scan and Exscan are not defined on intercommunicators");
        }
        // Exscan leaves rank 0's receive buffer alone.
        let (sb, mut rb, n) = reduce_views(
            st,
            s,
            sendbuf,
            recvbuf,
            count,
            datatype,
            op,
            !(exclusive && s.rank == 0) || in_place(sendbuf),
        )?;
        if rb.is_null() {
            rb = s.tmp(n);
        }
        algo::scan(s, sb, rb, n, exclusive);
        Ok(())
    })
}

/// Reduce_scatter (`counts` per rank) and Reduce_scatter_block (`block`).
unsafe fn reduce_scatter_any(
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    counts: Result<Arr, i64>,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let plan = match flat_reduce_scatter(call, sendbuf, recvbuf, counts, datatype, op, comm) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, |st, s| {
        if s.is_inter() {
            return intercoll::reduce_scatter(st, s, sendbuf, recvbuf, counts, datatype, op);
        }
        let counts = match counts {
            Ok(a) => a.counts(s.size, "recvcounts")?,
            Err(b) => vec![check_count(b)?; s.size],
        };
        let total: usize = counts.iter().sum();
        let dt = st.types.get(datatype)?;
        s.red = Some(reducer(st, op, datatype, &dt)?);
        let mine = counts[s.rank];
        check_buf(recvbuf, mine, &dt, "recvbuf")?;
        let input = if in_place(sendbuf) { recvbuf as *const c_void } else { sendbuf };
        check_buf(input, total, &dt, "sendbuf")?;
        if !in_place(sendbuf) {
            no_alias(sendbuf, recvbuf, dt.packed_size(mine))?;
        }
        let sb = s.input(input as *const u8, total, &dt);
        let out = s.output(recvbuf as *mut u8, mine, &dt);
        let bytes: Vec<usize> = counts.iter().map(|&c| dt.packed_size(c)).collect();
        algo::reduce_scatter(s, sb, out, &bytes);
        Ok(())
    })
}

pub(crate) unsafe fn reduce_scatter(
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: Arr,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<()> {
    reduce_scatter_any(call, sendbuf, recvbuf, Ok(recvcounts), datatype, op, comm)
}

pub(crate) unsafe fn reduce_scatter_block(
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<()> {
    reduce_scatter_any(call, sendbuf, recvbuf, Err(recvcount), datatype, op, comm)
}

unsafe fn reduce_local(
    name: &str,
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> c_int {
    let r = rt::with(|st| {
        let n = check_count(count)?;
        let dt = st.types.get(datatype)?;
        let red = reducer(st, op, datatype, &dt)?;
        check_buf(inbuf, n, &dt, "inbuf")?;
        check_buf(inoutbuf, n, &dt, "inoutbuf")?;
        Ok((n, dt, red))
    })
    .and_then(|(n, dt, red)| {
        // Outside the lock: a user function may call MPI.
        let bytes = dt.packed_size(n);
        let mut a = vec![0u8; bytes];
        let mut b = vec![0u8; bytes];
        dt.pack(inbuf as *const u8, n, &mut a);
        dt.pack(inoutbuf as *const u8, n, &mut b);
        red.apply(a.as_mut_ptr(), b.as_mut_ptr(), bytes, false)?;
        dt.unpack(&b, inoutbuf as *mut u8);
        Ok(())
    });
    ret(MPI_COMM_WORLD, name, r)
}

// ----- operations ------------------------------------------------------------------

unsafe fn op_create(name: &str, f: *mut c_void, commute: c_int, op: *mut MPI_Op, big: bool) -> c_int {
    let r = rt::with(|st| {
        if f.is_null() {
            bail!(MPI_ERR_ARG, "user_fn is NULL");
        }
        let u = Some(UserOp { f: f as usize, commute: commute != 0, big });
        let ops = &mut st.coll.ops;
        let i = match ops.iter().position(Option::is_none) {
            Some(i) => {
                ops[i] = u;
                i
            }
            None => {
                ops.push(u);
                ops.len() - 1
            }
        };
        put(op, make_handle(HANDLE_KIND_DIRECT, OBJ_OP, i as u32), "op")
    });
    ret(MPI_COMM_WORLD, name, r)
}

pub unsafe fn MPI_Op_create(user_fn: *mut c_void, commute: c_int, op: *mut MPI_Op) -> c_int {
    op_create("MPI_Op_create", user_fn, commute, op, false)
}

pub unsafe fn MPI_Op_create_c(user_fn: *mut c_void, commute: c_int, op: *mut MPI_Op) -> c_int {
    op_create("MPI_Op_create_c", user_fn, commute, op, true)
}

pub unsafe fn MPI_Op_free(op: *mut MPI_Op) -> c_int {
    let r = rt::with(|st| {
        if op.is_null() {
            bail!(MPI_ERR_ARG, "op is a NULL pointer");
        }
        if op::is_predefined(*op) {
            bail!(MPI_ERR_OP, "predefined operations cannot be freed");
        }
        user_op(st, *op)?;
        st.coll.ops[handle_index(*op) as usize] = None;
        *op = MPI_OP_NULL;
        Ok(())
    });
    ret(MPI_COMM_WORLD, "MPI_Op_free", r)
}

pub unsafe fn MPI_Op_commutative(op: MPI_Op, commute: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let c = if op::is_predefined(op) { true } else { user_op(st, op)?.commute };
        put(commute, c as c_int, "commute")
    });
    ret(MPI_COMM_WORLD, "MPI_Op_commutative", r)
}

pub unsafe fn MPI_Op_toint(op: MPI_Op) -> c_int {
    op
}

pub unsafe fn MPI_Op_fromint(op: c_int) -> MPI_Op {
    op
}

twins! {
    pub unsafe fn MPI_Reduce_local | MPI_Reduce_local_c(inbuf: *const c_void, inoutbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op) -> c_int {
        reduce_local(NAME, inbuf, inoutbuf, cnt(count), datatype, op)
    }
}

/// A count argument, `int` or `MPI_Count`.
fn cnt<T: Into<i64>>(c: T) -> i64 {
    c.into()
}

// ----- the exported calls (generated from the API table) ---------------------------------

pub unsafe fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    ret(comm, "MPI_Barrier", barrier(Call::Block, comm))
}
pub unsafe fn MPI_Ibarrier(comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    ret(comm, "MPI_Ibarrier", barrier(Call::Nb(request), comm))
}
pub unsafe fn MPI_Barrier_init(comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
    ret(comm, "MPI_Barrier_init", barrier(Call::Init(request), comm))
}
twins! {
    pub unsafe fn MPI_Bcast | MPI_Bcast_c(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, bcast(Call::Block, buffer, cnt(count), datatype, root, comm))
    }
    pub unsafe fn MPI_Ibcast | MPI_Ibcast_c(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, bcast(Call::Nb(request), buffer, cnt(count), datatype, root, comm))
    }
    pub unsafe fn MPI_Bcast_init | MPI_Bcast_init_c(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, bcast(Call::Init(request), buffer, cnt(count), datatype, root, comm))
    }
    pub unsafe fn MPI_Gather | MPI_Gather_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, gather(Call::Block, sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, root, comm))
    }
    pub unsafe fn MPI_Igather | MPI_Igather_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, gather(Call::Nb(request), sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, root, comm))
    }
    pub unsafe fn MPI_Gather_init | MPI_Gather_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, gather(Call::Init(request), sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, root, comm))
    }
    pub unsafe fn MPI_Gatherv | MPI_Gatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, gatherv(Call::Block, sendbuf, cnt(sendcount), sendtype, recvbuf, Arr::from(recvcounts), Arr::from(displs), recvtype, root, comm))
    }
    pub unsafe fn MPI_Igatherv | MPI_Igatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, gatherv(Call::Nb(request), sendbuf, cnt(sendcount), sendtype, recvbuf, Arr::from(recvcounts), Arr::from(displs), recvtype, root, comm))
    }
    pub unsafe fn MPI_Gatherv_init | MPI_Gatherv_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, gatherv(Call::Init(request), sendbuf, cnt(sendcount), sendtype, recvbuf, Arr::from(recvcounts), Arr::from(displs), recvtype, root, comm))
    }
    pub unsafe fn MPI_Scatter | MPI_Scatter_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, scatter(Call::Block, sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, root, comm))
    }
    pub unsafe fn MPI_Iscatter | MPI_Iscatter_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, scatter(Call::Nb(request), sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, root, comm))
    }
    pub unsafe fn MPI_Scatter_init | MPI_Scatter_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, scatter(Call::Init(request), sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, root, comm))
    }
    pub unsafe fn MPI_Scatterv | MPI_Scatterv_c(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, scatterv(Call::Block, sendbuf, Arr::from(sendcounts), Arr::from(displs), sendtype, recvbuf, cnt(recvcount), recvtype, root, comm))
    }
    pub unsafe fn MPI_Iscatterv | MPI_Iscatterv_c(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, scatterv(Call::Nb(request), sendbuf, Arr::from(sendcounts), Arr::from(displs), sendtype, recvbuf, cnt(recvcount), recvtype, root, comm))
    }
    pub unsafe fn MPI_Scatterv_init | MPI_Scatterv_init_c(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, scatterv(Call::Init(request), sendbuf, Arr::from(sendcounts), Arr::from(displs), sendtype, recvbuf, cnt(recvcount), recvtype, root, comm))
    }
    pub unsafe fn MPI_Allgather | MPI_Allgather_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, allgather(Call::Block, sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, comm))
    }
    pub unsafe fn MPI_Iallgather | MPI_Iallgather_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, allgather(Call::Nb(request), sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, comm))
    }
    pub unsafe fn MPI_Allgather_init | MPI_Allgather_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, allgather(Call::Init(request), sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, comm))
    }
    pub unsafe fn MPI_Allgatherv | MPI_Allgatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, allgatherv(Call::Block, sendbuf, cnt(sendcount), sendtype, recvbuf, Arr::from(recvcounts), Arr::from(displs), recvtype, comm))
    }
    pub unsafe fn MPI_Iallgatherv | MPI_Iallgatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, allgatherv(Call::Nb(request), sendbuf, cnt(sendcount), sendtype, recvbuf, Arr::from(recvcounts), Arr::from(displs), recvtype, comm))
    }
    pub unsafe fn MPI_Allgatherv_init | MPI_Allgatherv_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, allgatherv(Call::Init(request), sendbuf, cnt(sendcount), sendtype, recvbuf, Arr::from(recvcounts), Arr::from(displs), recvtype, comm))
    }
    pub unsafe fn MPI_Alltoall | MPI_Alltoall_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, alltoall(Call::Block, sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, comm))
    }
    pub unsafe fn MPI_Ialltoall | MPI_Ialltoall_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, alltoall(Call::Nb(request), sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, comm))
    }
    pub unsafe fn MPI_Alltoall_init | MPI_Alltoall_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, alltoall(Call::Init(request), sendbuf, cnt(sendcount), sendtype, recvbuf, cnt(recvcount), recvtype, comm))
    }
    pub unsafe fn MPI_Alltoallv | MPI_Alltoallv_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, alltoallv(Call::Block, sendbuf, Arr::from(sendcounts), Arr::from(sdispls), sendtype, recvbuf, Arr::from(recvcounts), Arr::from(rdispls), recvtype, comm))
    }
    pub unsafe fn MPI_Ialltoallv | MPI_Ialltoallv_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, alltoallv(Call::Nb(request), sendbuf, Arr::from(sendcounts), Arr::from(sdispls), sendtype, recvbuf, Arr::from(recvcounts), Arr::from(rdispls), recvtype, comm))
    }
    pub unsafe fn MPI_Alltoallv_init | MPI_Alltoallv_init_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, alltoallv(Call::Init(request), sendbuf, Arr::from(sendcounts), Arr::from(sdispls), sendtype, recvbuf, Arr::from(recvcounts), Arr::from(rdispls), recvtype, comm))
    }
    pub unsafe fn MPI_Alltoallw | MPI_Alltoallw_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const MPI_Datatype, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, alltoallw(Call::Block, sendbuf, Arr::from(sendcounts), Arr::from(sdispls), sendtypes, recvbuf, Arr::from(recvcounts), Arr::from(rdispls), recvtypes, comm))
    }
    pub unsafe fn MPI_Ialltoallw | MPI_Ialltoallw_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, alltoallw(Call::Nb(request), sendbuf, Arr::from(sendcounts), Arr::from(sdispls), sendtypes, recvbuf, Arr::from(recvcounts), Arr::from(rdispls), recvtypes, comm))
    }
    pub unsafe fn MPI_Alltoallw_init | MPI_Alltoallw_init_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, alltoallw(Call::Init(request), sendbuf, Arr::from(sendcounts), Arr::from(sdispls), sendtypes, recvbuf, Arr::from(recvcounts), Arr::from(rdispls), recvtypes, comm))
    }
    pub unsafe fn MPI_Reduce | MPI_Reduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, reduce(Call::Block, sendbuf, recvbuf, cnt(count), datatype, op, root, comm))
    }
    pub unsafe fn MPI_Ireduce | MPI_Ireduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, reduce(Call::Nb(request), sendbuf, recvbuf, cnt(count), datatype, op, root, comm))
    }
    pub unsafe fn MPI_Reduce_init | MPI_Reduce_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, reduce(Call::Init(request), sendbuf, recvbuf, cnt(count), datatype, op, root, comm))
    }
    pub unsafe fn MPI_Allreduce | MPI_Allreduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, allreduce(Call::Block, sendbuf, recvbuf, cnt(count), datatype, op, comm))
    }
    pub unsafe fn MPI_Iallreduce | MPI_Iallreduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, allreduce(Call::Nb(request), sendbuf, recvbuf, cnt(count), datatype, op, comm))
    }
    pub unsafe fn MPI_Allreduce_init | MPI_Allreduce_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, allreduce(Call::Init(request), sendbuf, recvbuf, cnt(count), datatype, op, comm))
    }
    pub unsafe fn MPI_Reduce_scatter | MPI_Reduce_scatter_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, reduce_scatter(Call::Block, sendbuf, recvbuf, Arr::from(recvcounts), datatype, op, comm))
    }
    pub unsafe fn MPI_Ireduce_scatter | MPI_Ireduce_scatter_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, reduce_scatter(Call::Nb(request), sendbuf, recvbuf, Arr::from(recvcounts), datatype, op, comm))
    }
    pub unsafe fn MPI_Reduce_scatter_init | MPI_Reduce_scatter_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, reduce_scatter(Call::Init(request), sendbuf, recvbuf, Arr::from(recvcounts), datatype, op, comm))
    }
    pub unsafe fn MPI_Reduce_scatter_block | MPI_Reduce_scatter_block_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, reduce_scatter_block(Call::Block, sendbuf, recvbuf, cnt(recvcount), datatype, op, comm))
    }
    pub unsafe fn MPI_Ireduce_scatter_block | MPI_Ireduce_scatter_block_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, reduce_scatter_block(Call::Nb(request), sendbuf, recvbuf, cnt(recvcount), datatype, op, comm))
    }
    pub unsafe fn MPI_Reduce_scatter_block_init | MPI_Reduce_scatter_block_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, reduce_scatter_block(Call::Init(request), sendbuf, recvbuf, cnt(recvcount), datatype, op, comm))
    }
    pub unsafe fn MPI_Scan | MPI_Scan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, scan(Call::Block, sendbuf, recvbuf, cnt(count), datatype, op, comm, false))
    }
    pub unsafe fn MPI_Iscan | MPI_Iscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, scan(Call::Nb(request), sendbuf, recvbuf, cnt(count), datatype, op, comm, false))
    }
    pub unsafe fn MPI_Scan_init | MPI_Scan_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, scan(Call::Init(request), sendbuf, recvbuf, cnt(count), datatype, op, comm, false))
    }
    pub unsafe fn MPI_Exscan | MPI_Exscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        ret(comm, NAME, scan(Call::Block, sendbuf, recvbuf, cnt(count), datatype, op, comm, true))
    }
    pub unsafe fn MPI_Iexscan | MPI_Iexscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, scan(Call::Nb(request), sendbuf, recvbuf, cnt(count), datatype, op, comm, true))
    }
    pub unsafe fn MPI_Exscan_init | MPI_Exscan_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        ret(comm, NAME, scan(Call::Init(request), sendbuf, recvbuf, cnt(count), datatype, op, comm, true))
    }
}
