//! The blocking fast path of small contiguous collectives in the segment.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use crate::coll::args::{check_root, in_place, reducer};
use crate::coll::buf::Reduction;
use crate::coll::flat::{self, Flat, Lane, Lookup};
use crate::coll::sched::Reducer;
use crate::coll::shm::Who;
use crate::rt::buf::UserBuf;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::MpiResult;
use crate::rt::{self, State};

// ----- the blocking fast path ------------------------------------------------------

/// The blocking Barrier, Bcast, Allreduce, Allgather and Alltoall of
/// contiguous data that fits the small buffers, on a communicator that has
/// its segment: one round under the lock (the communicator, the types, the
/// operation number) and no allocation, then plain copies between the user
/// buffers and the segment. At two ranks the bookkeeping of the general
/// shared-memory path ([`in_segment`]: boxed parts, typed views, packing) cost
/// more than the cache-line transfers themselves, and with more ranks than
/// cores it bounds how many broadcasts the readers take per time slice.
///
/// `pick` looks at the arguments (rank and size of the communicator given)
/// and gives what the operation needs and its bytes per rank, or None (any
/// argument it does not take, bad ones included): the general path then
/// runs the call and reports what is wrong. None is also returned, before
/// any step, when the communicator has no segment yet.
pub(crate) fn fast<T>(comm: MPI_Comm, pick: impl FnOnce(&mut State, &Who) -> Option<(T, usize)>) -> Option<(Flat, T)> {
    rt::with(|st| {
        let c = st.comms.get(comm)?;
        if c.is_inter() {
            return Ok(None);
        }
        let (ctx, who) = (c.coll_ctx(), Who { rank: c.rank as usize, size: c.size() as usize });
        let Some((t, bytes)) = pick(st, &who).filter(|&(_, b)| b <= flat::SLOT) else { return Ok(None) };
        Ok(match flat::lookup_in(st, comm, Lane::Block, ctx, who.rank, who.size, bytes)? {
            Lookup::Ready(f) => Some((f, t)),
            _ => None,
        })
    })
    .ok()
    .flatten()
}

/// Bytes of `count` elements of contiguous type `t` (None: not contiguous,
/// or bad). The type is borrowed: no reference count moves.
#[inline]
pub(crate) fn fast_bytes(st: &State, count: i64, t: MPI_Datatype) -> Option<usize> {
    fast_type(st, count, t).map(|(n, _)| n)
}

/// [`fast_bytes`] and the type.
#[inline]
pub(crate) fn fast_type(st: &State, count: i64, t: MPI_Datatype) -> Option<(usize, &Arc<Dtype>)> {
    let n = check_count(count).ok()?;
    let dt = st.types.committed(t)?;
    dt.contig.then(|| (n * dt.size, dt))
}

/// Whether a send buffer of `bytes` and a receive buffer may be used as
/// they are (bad ones are left to the general path to report).
#[inline]
pub(crate) fn fast_bufs(sendbuf: *const c_void, recvbuf: *const c_void) -> bool {
    !recvbuf.is_null() && !in_place(recvbuf) && (in_place(sendbuf) || (!sendbuf.is_null() && sendbuf != recvbuf))
}

/// Copies `n` bytes.
///
/// # Safety
/// Both address `n` bytes that do not overlap.
#[inline]
pub(crate) unsafe fn fast_copy(from: *const u8, to: *mut u8, n: usize) {
    // SAFETY: this function's contract: `n` bytes at each, not overlapping
    // (bytes: no alignment needed).
    unsafe { std::ptr::copy_nonoverlapping(from, to, n) };
}

/// Writes `n` bytes at `from` to this rank's buffer and publishes them,
/// then waits for every rank's data, which must be `n` bytes each.
///
/// # Safety
/// `from` addresses `n` bytes; `f` is this rank's turn.
#[inline]
pub(crate) unsafe fn fast_exchange(f: &Flat, from: *const u8, n: usize) -> MpiResult<()> {
    f.wait_turn()?;
    f.wait_free()?;
    // SAFETY: `from` addresses `n` bytes (this function's contract); this
    // rank's block, free after `wait_free`, holds the `n` bytes it announced
    // when it arrived, and is the segment's, not the caller's memory.
    unsafe { fast_copy(from, f.buf(f.rank), n) };
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
#[inline]
pub(crate) fn fast_barrier(comm: MPI_Comm) -> Option<MpiResult<()>> {
    let (f, ()) = fast(comm, |_, _| Some(((), 0)))?;
    Some((|| {
        f.wait_turn()?;
        f.wait_free()?;
        f.publish(Some(0));
        f.wait_data(0..f.size)
    })())
}

#[inline]
pub(crate) unsafe fn fast_bcast(buf: UserBuf, root: c_int, comm: MPI_Comm) -> Option<MpiResult<()>> {
    let (buffer, count, datatype) = (buf.addr(), buf.count, buf.datatype);
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
            // SAFETY: `buf`'s constructor (the caller's MPI contract) lends
            // its `n` contiguous bytes (`fast_bytes`, not NULL: `fast_bufs`);
            // the root's block, free after `wait_free`, holds the `n` it announced.
            unsafe { fast_copy(p, f.buf(root), n) };
            f.publish(Some(n));
        } else {
            f.publish(None);
            f.wait_data(root..root + 1)?;
            f.check_len(root..root + 1, n)?;
            // SAFETY: the root wrote `n` bytes to its block before publishing
            // them (length checked just before); `buf` lends room for `n`.
            unsafe { fast_copy(f.buf(root), p, n) };
        }
        Ok(())
    })())
}

#[inline]
pub(crate) unsafe fn fast_allreduce(red: Reduction, count: i64, comm: MPI_Comm) -> Option<MpiResult<()>> {
    let ((sendbuf, recvbuf), datatype, op) = (red.bufs(), red.datatype, red.op);
    let (f, (n, red)) = fast(comm, |st, _| {
        let (n, dt) = fast_type(st, count, datatype)?;
        let red = reducer(st, op, datatype, dt).ok()?;
        (n > 0 && matches!(red, Reducer::Builtin { .. }) && fast_bufs(sendbuf, recvbuf)).then_some(((n, red), n))
    })?;
    let out = recvbuf as *mut u8;
    let input = if in_place(sendbuf) { out as *const u8 } else { sendbuf as *const u8 };
    Some((|| {
        // SAFETY: `input` is the lent send buffer, or the receive buffer in
        // place (`red`'s constructor), `n` contiguous bytes (`fast_type`).
        unsafe { fast_exchange(&f, input, n)? };
        // Every rank combines the slots in rank order: the same bits everywhere.
        // SAFETY: every rank wrote `n` bytes before publishing (`fast_exchange`
        // waited and checked the lengths); the receive buffer has room for `n`
        // and is not the segment.
        unsafe { fast_copy(f.buf(0), out, n) };
        for r in 1..f.size {
            // SAFETY: as above, rank `r`'s `n` published bytes and the `n`
            // bytes of the receive buffer.
            unsafe { red.apply(f.buf(r), out, n, true)? };
        }
        Ok(())
    })())
}

/// Allgather (`alltoall` false: each rank's block to every rank) or Alltoall
/// (block j of each rank to rank j).
#[inline]
pub(crate) unsafe fn fast_gather_all(
    alltoall: bool,
    send: UserBuf,
    recv: UserBuf,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (sendbuf, sendcount, sendtype) = (send.addr() as *const c_void, send.count, send.datatype);
    let (recvbuf, recvcount, recvtype) = (recv.addr(), recv.count, recv.datatype);
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
            // SAFETY: the lent send buffer (or the receive buffer in place)
            // holds a block per rank, `blk * size` contiguous bytes.
            unsafe { fast_exchange(&f, if inp { out } else { sendbuf as *const u8 }, blk * size)? };
            for r in 0..size {
                // SAFETY: rank `r` wrote `blk * size` bytes before publishing
                // (checked by `fast_exchange`), so block `me` is inside; the
                // lent receive buffer holds `size` blocks of `blk`.
                unsafe { fast_copy(f.buf(r).add(me * blk), out.add(r * blk), blk) };
            }
        } else {
            // SAFETY: the lent send buffer holds `blk` bytes, or in place this
            // rank's block of the receive buffer (`size` blocks of `blk`).
            unsafe { fast_exchange(&f, if inp { out.add(me * blk) } else { sendbuf as *const u8 }, blk)? };
            for r in (0..size).filter(|&r| !(inp && r == me)) {
                // SAFETY: rank `r` wrote `blk` bytes before publishing (checked
                // by `fast_exchange`); the receive buffer holds `size` blocks.
                unsafe { fast_copy(f.buf(r), out.add(r * blk), blk) };
            }
        }
        Ok(())
    })())
}
