//! Single-copy collectives between the user buffers of the ranks of a node
//! (`process_vm_readv`/`writev`), agreed in two small operations of the
//! segment.

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi_api::abi::*;

use crate::bail;
use crate::coll::args::{check_root, in_place};
use crate::coll::flat::{self, Flat, Lane, Lookup};
use crate::coll::shm::fast::{fast_bufs, fast_bytes, fast_copy};
use crate::coll::shm::next_op;
use crate::rt::buf::UserBuf;
use crate::rt::datatype::check_count;
use crate::rt::error::MpiResult;
use crate::rt::{self, State};

/// This process's id, read once (`getpid` is a system call each time).
pub(crate) fn pid() -> u64 {
    static PID: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *PID.get_or_init(|| std::process::id() as u64)
}

/// Whether the single-copy paths ([`direct_gather_all`], [`direct_bcast`])
/// may run: shared memory and `MPICORE_COLL_SHM_DIRECT` on, a core per rank
/// (or `MPICORE_COLL_SHM_PIECES_OVERSUB`). Alike on every rank of a node.
pub(crate) fn direct_allowed(st: &State) -> bool {
    let t = &st.coll.tune;
    t.shm_max != 0 && t.shm_direct != 0 && (!st.oversubscribed || t.shm_pieces_oversub)
}

/// Bytes each rank of [`direct_gather_all`] publishes first: its process
/// id, the address of its data, whether the others may read it there, and
/// its bytes per block (which must match everywhere).
pub(crate) const HELLO: usize = 4 * 8;

/// A blocking Allgather (`alltoall` false) or Alltoall of blocks of at
/// least `MPICORE_COLL_SHM_DIRECT` bytes (an Alltoall only if it does not
/// fit the segment), with a core per rank: each rank
/// reads its blocks straight from the other ranks' send buffers
/// (`process_vm_readv`, one copy), where going through the segment copies
/// twice, and writing a buffer the other core has just read costs a
/// cache-line invalidation per line (several times the cost of reading it;
/// see BENCHMARKS.md, "Shared-memory collective thresholds"). Two small
/// operations: every
/// rank publishes its process, the address of its data and whether others
/// may read it there (contiguous types, not in place for Alltoall, reads
/// allowed); if all may, each reads, then all say whether their reads
/// worked, and the data is left alone until every rank has. Otherwise
/// (seen alike by every rank) None: the other paths run the call. Blocks
/// whose sizes differ between ranks fail with `MPI_ERR_TRUNCATE` everywhere.
pub(crate) unsafe fn direct_gather_all(
    alltoall: bool,
    send: UserBuf,
    recv: UserBuf,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    let (sendbuf, sendcount, sendtype) = (send.addr() as *const c_void, send.count, send.datatype);
    let (recvbuf, recvcount, recvtype) = (recv.addr(), recv.count, recv.datatype);
    let inp = in_place(sendbuf);
    let (f, blk, ok) = rt::with(|st| {
        let t = &st.coll.tune;
        if !direct_allowed(st) {
            return Ok(None);
        }
        let rc = check_count(recvcount)?;
        let rdt = st.types.get(recvtype)?;
        let blk = rdt.packed_size(rc);
        // An Alltoall that fits the segment is faster there (BENCHMARKS.md,
        // "Shared-memory collective thresholds").
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
        Ok(match flat::lookup(st, comm, Lane::Block, HELLO)? {
            Lookup::Ready(f) => Some((f, blk, ok)),
            _ => None,
        })
    })
    .ok()
    .flatten()?;
    let (me, size) = (f.rank, f.size);
    let out = recvbuf as *mut u8;
    // SAFETY: in place, the lent receive buffer (`recv`'s constructor) holds
    // a block of `blk` bytes per rank, this rank's among them.
    let src = if inp { unsafe { out.add(me * blk) as *const u8 } } else { sendbuf as *const u8 };
    let r = (|| {
        let Some(peer) = direct_hello(&f, src, ok, blk, || {
            if ok && !inp {
                // This rank's own block, while the others arrive.
                // SAFETY: `ok`: contiguous blocks of `blk` bytes in the lent
                // send buffer (one per rank for Alltoall) and receive buffer
                // (one per rank), distinct (`fast_bufs`).
                unsafe { fast_copy(src.add(if alltoall { me * blk } else { 0 }), out.add(me * blk), blk) };
            }
        })?
        else {
            return Ok(None);
        };
        let mut failed = false;
        for r in (0..size).filter(|&r| r != me) {
            let (pid, at) = peer[r];
            let from = at + if alltoall { me * blk } else { 0 };
            // SAFETY: block `r` of the lent receive buffer, `blk` writable
            // bytes (`direct_hello` gave peers only if `ok`).
            failed |= unsafe { crate::rt::win::cma(pid, from, out.add(r * blk), blk, false) }.is_err();
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
pub(crate) fn direct_hello(
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
        bail!(MPI_ERR_TRUNCATE, "rank {r} of the collective has {theirs} bytes per block where this rank has {bytes}: counts or types differ between ranks, or the ranks called different collectives (in different orders on this communicator)");
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
pub(crate) fn direct_done(comm: MPI_Comm, size: usize, failed: bool) -> MpiResult<Option<()>> {
    let g = next_op(comm, 0)?;
    g.wait_turn()?;
    g.wait_free()?;
    g.publish(Some(failed as usize));
    g.wait_data(0..size)?;
    Ok((0..size).all(|r| g.len_of(r) == 0).then_some(()))
}

/// The fewest bytes [`direct_bcast`] takes: below, the segment's buffers are
/// faster; above, the direct copies take the same time in every run, where
/// the segment's time varies several-fold (BENCHMARKS.md, "Shared-memory
/// collective thresholds").
pub(crate) const DIRECT_BCAST_MIN: usize = 32 << 10;

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
pub(crate) unsafe fn direct_bcast(buf: UserBuf, root: c_int, comm: MPI_Comm) -> Option<MpiResult<()>> {
    let (buffer, count, datatype) = (buf.addr(), buf.count, buf.datatype);
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
        Ok(match flat::lookup(st, comm, Lane::Block, HELLO)? {
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
            // SAFETY: the lent buffer (`buf`'s constructor) holds `bytes`
            // contiguous bytes, `pull` of them read into.
            unsafe { crate::rt::win::cma(pid, at, p, pull, false) }.is_err()
        } else if pull < bytes {
            // Two ranks: the other one is 1 - root.
            let (pid, at) = peer[1 - me];
            // SAFETY: the last `bytes - pull` bytes of the lent buffer, read
            // to write them to the other rank.
            unsafe { crate::rt::win::cma(pid, at + pull, p.add(pull), bytes - pull, true) }.is_err()
        } else {
            false
        };
        direct_done(comm, size, failed)
    })();
    r.transpose()
}
