//! Alltoallv and Alltoallw in shared memory: each rank writes a table of
//! its blocks' offsets and the blocks, or sends them as messages.

use std::ffi::c_void;

use mpi_api::abi::*;

use crate::coll::args::{check_buf, in_place, no_alias, signature_match, typed_view};
use crate::coll::buf::UserBlocks;
use crate::coll::call::{run, Call};
use crate::coll::flat::{self, Flat, Lane, Lookup};
use crate::coll::parts;
use crate::coll::shm::fast::fast_copy;
use crate::coll::shm::rooted::len_mismatch;
use crate::coll::shm::segment_op;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self, State};

// ----- Alltoallv and Alltoallw in shared memory ---------------------------------------

/// The blocks of one side of an Alltoallv/w: block j is `count` elements
/// of its type at its displacement. `what`: the names of the buffer, count
/// and displacement arguments.
///
/// # Safety
/// The counts and displacements of `blocks` are NULL or address `size` values.
pub(crate) unsafe fn typed_blocks(
    st: &mut State,
    blocks: UserBlocks,
    size: usize,
    bytes_disp: bool,
    what: [&str; 3],
) -> MpiResult<Vec<parts::Typed>> {
    let (buf, types) = (blocks.addr() as *const c_void, blocks.types);
    // SAFETY: this function's contract: the counts are NULL (reported) or
    // `size` values.
    let n = unsafe { blocks.counts.counts(size, what[1])? };
    // SAFETY: likewise for the displacements.
    let d = unsafe { blocks.displs.read(size, what[2])? };
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
pub(crate) fn offset_table_bytes(size: usize) -> usize {
    4 * (size + 1)
}

/// Writes word `i` of a table at `buf`.
///
/// # Safety
/// `buf` addresses more than `i` 32-bit words, 4-aligned.
pub(crate) unsafe fn write_table_word(buf: *mut u8, i: usize, v: usize) {
    // SAFETY: word `i` is inside the table and aligned (this function's contract).
    unsafe { (buf as *mut u32).add(i).write(v as u32) };
}

/// Word `i` of a table at `buf`.
///
/// # Safety
/// As for [`write_table_word`].
pub(crate) unsafe fn read_table_word(buf: *const u8, i: usize) -> usize {
    // SAFETY: word `i` is inside the table and aligned (this function's contract).
    unsafe { (buf as *const u32).add(i).read() as usize }
}

/// Writes at `buf` a table of offsets (`size + 1` words) and, `table`
/// bytes from `buf`, the blocks: `block(j, at)` writes block j at `at` (or
/// nothing, when the blocks go as messages) and gives its length. Returns
/// the bytes of all blocks.
///
/// # Safety
/// `buf` holds the table and the blocks.
pub(crate) unsafe fn write_blocks(
    buf: *mut u8,
    size: usize,
    table: usize,
    mut block: impl FnMut(usize, *mut u8) -> usize,
) -> usize {
    let mut off = 0;
    for j in 0..size {
        // SAFETY: the table's `size + 1` words are at `buf` (this function's
        // contract: `buf` holds the table), a segment block, 4-aligned.
        unsafe { write_table_word(buf, j, off) };
        // SAFETY: `table + off` bytes from `buf` is where block j starts, in
        // what `buf` holds (the contract: the table and the blocks).
        off += block(j, unsafe { buf.add(table + off) });
    }
    // SAFETY: the last of the table's `size + 1` words, as above.
    unsafe { write_table_word(buf, size, off) };
    off
}

/// Block `i` of the table at the start of rank `r`'s buffer (the blocks
/// `table` bytes after it): its address, if it holds `want` bytes, else
/// `MPI_ERR_TRUNCATE`.
///
/// # Safety
/// Rank `r` published a table of at least `table` bytes in this operation.
pub(crate) unsafe fn table_block(f: &Flat, r: usize, i: usize, table: usize, want: usize) -> MpiResult<*const u8> {
    let src = f.buf(r);
    // SAFETY: rank `r` wrote its table (at least `table` bytes, so words `i`
    // and `i + 1`) before publishing (this function's contract).
    let (o, e) = unsafe { (read_table_word(src, i), read_table_word(src, i + 1)) };
    if e < o || table + e > f.len_of(r) || e - o != want {
        return Err(len_mismatch(r, e.wrapping_sub(o), want));
    }
    // SAFETY: `table + o <= table + e`, inside the bytes rank `r` published
    // (checked just before).
    Ok(unsafe { src.add(table + o) })
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
/// arguments) and the others receive them. (The message path builds a
/// schedule per call, several times slower for small blocks.)
pub(crate) unsafe fn shm_alltoall_vw(
    send: UserBlocks,
    recv: UserBlocks,
    comm: MPI_Comm,
    bytes_disp: bool,
) -> Option<MpiResult<()>> {
    let (sendbuf, recvbuf) = (send.addr() as *const c_void, recv.addr() as *const c_void);
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
            // SAFETY: `send`'s constructor (the caller's MPI contract): its
            // arrays are NULL or hold one value per rank.
            let sv = unsafe { typed_blocks(st, send, size, bytes_disp, ["sendbuf", "sendcounts", "sdispls"])? };
            // SAFETY: likewise for `recv`'s arrays.
            let rv = unsafe { typed_blocks(st, recv, size, bytes_disp, ["recvbuf", "recvcounts", "rdispls"])? };
            if std::ptr::eq(sendbuf, recvbuf) && sv.iter().any(|v| v.bytes() > 0) {
                no_alias(sendbuf, recvbuf, 1)?;
            }
            signature_match(sv[rank].bytes(), rv[rank].bytes())?;
            let b = offset_table_bytes(size) + sv.iter().map(parts::Typed::bytes).sum::<usize>();
            Ok((sv, rv, b))
        })()))
    })
    .ok()
    .flatten()?;
    let bytes = mine.as_ref().map_or(0, |m| m.2);
    let (f, msg) = match segment_op(comm, bytes)? {
        Ok(x) => x,
        Err(e) => return Some(Err(e)),
    };
    let (mine, err) = match mine {
        Ok(m) => (Some(m), None),
        Err(e) => (None, Some(e)),
    };
    // SAFETY: `f` is this operation, just taken; the views are of the
    // caller's lent buffers, checked by `typed_blocks`.
    let r = unsafe { alltoall_vw_write(&f, mine, msg, comm) };
    Some(match err {
        Some(e) => Err(e),
        None => r,
    })
}

/// [`shm_alltoall_vw`] for an Alltoallv of contiguous types whose blocks
/// fit the segment and whose arguments are good (else None, before any
/// step: the general path runs the call, in the same operation layout, so
/// each rank chooses alone): the offsets come straight from the caller's
/// arrays, and nothing is allocated. With more ranks than cores, every page
/// a call touches is fetched again after each switch of processes, so the
/// general path's typed views cost more than the data (BENCHMARKS.md,
/// "Shared-memory collective thresholds").
#[inline]
pub(crate) unsafe fn fast_alltoallv(send: UserBlocks, recv: UserBlocks, comm: MPI_Comm) -> Option<MpiResult<()>> {
    let (sendbuf, sendcounts, sdispls, sendtype) =
        (send.addr() as *const c_void, send.counts, send.displs, send.datatype());
    let (recvbuf, recvcounts, rdispls, recvtype) = (recv.addr(), recv.counts, recv.displs, recv.datatype());
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
        let mut total = offset_table_bytes(size);
        for j in 0..size {
            // SAFETY: not NULL (checked above), so by the constructors of
            // `send` and `recv` (the caller's MPI contract) one count per rank.
            let (sc, rc) = unsafe { (sendcounts.get(j), recvcounts.get(j)) };
            if sc < 0 || rc < 0 || (sc > 0 && sendbuf.is_null()) || (rc > 0 && recvbuf.is_null()) {
                return Ok(None);
            }
            total += sc as usize * s.0;
        }
        // SAFETY: as in the loop, one count per rank.
        if unsafe { sendcounts.get(rank) as usize * s.0 != recvcounts.get(rank) as usize * r.0 }
            || flat::fits(&st.coll.tune, total).is_none()
        {
            return Ok(None);
        }
        Ok(match flat::lookup_in(st, comm, Lane::Block, ctx, rank, size, total)? {
            Lookup::Ready(f) => Some((f, s, r)),
            _ => None,
        })
    })
    .ok()
    .flatten()?;
    let (me, size, table) = (f.rank, f.size, offset_table_bytes(f.size));
    let r = (|| {
        f.wait_turn()?;
        f.wait_free()?;
        // SAFETY: this rank's block, free after `wait_free`, holds the table
        // and all blocks (`total` bytes, checked to fit); `sendcounts` and
        // `sdispls` are not NULL, so one value per rank (`send`'s
        // constructor), and each block of the lent send buffer is its
        // count's contiguous bytes, not overlapping the segment.
        let off = unsafe {
            write_blocks(f.buf(me), size, table, |j, at| {
                let n = sendcounts.get(j) as usize * su;
                fast_copy((sendbuf as *const u8).wrapping_offset(sdispls.get(j) as isize * se), at, n);
                n
            })
        };
        f.publish(Some(table + off));
        f.wait_data(0..size)?;
        if (0..size).any(|r| block_route(&f, r) != BlockRoute::Segment) {
            // Another rank's blocks go as messages, or its arguments are
            // bad: the general reading, with this rank's views.
            // SAFETY: `recv`'s arrays are not NULL (checked above), so one
            // value per rank.
            let rv =
                rt::with(|st| unsafe { typed_blocks(st, recv, size, false, ["recvbuf", "recvcounts", "rdispls"]) })?;
            // SAFETY: every rank has published (waited for above); `rv` views
            // the lent receive buffer; this rank sends nothing as messages.
            return unsafe { alltoall_vw_read(&f, Some((&[], &rv)), false, comm) };
        }
        for r in 0..size {
            // SAFETY: `recvcounts` is not NULL (checked above): one count per rank.
            let want = unsafe { recvcounts.get(r) } as usize * ru;
            // SAFETY: rank `r` published a table (its route is the segment).
            let src = unsafe { table_block(&f, r, me, table, want)? };
            // SAFETY: `table_block` checked the `want` bytes are inside what
            // rank `r` published; `rdispls` is not NULL (one per rank) and the
            // lent receive buffer has room for the block's count there.
            unsafe { fast_copy(src, (recvbuf as *mut u8).wrapping_offset(rdispls.get(r) as isize * re), want) };
        }
        Ok(())
    })();
    Some(r)
}

/// How a rank's blocks travel in [`shm_alltoall_vw`], as its header says.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockRoute {
    Segment,
    Messages,
    /// Its arguments were bad: nothing.
    Nothing,
}

/// The operation of [`shm_alltoall_vw`] (`f`, taken) with this rank's
/// blocks and bytes (None: its arguments are bad); `msg`: they go as
/// messages.
///
/// # Safety
/// The views of `mine` address the caller's lent buffers; `b` bytes are the
/// table and the blocks, as announced when `f` was taken.
pub(crate) unsafe fn alltoall_vw_write(
    f: &Flat,
    mine: Option<(Vec<parts::Typed>, Vec<parts::Typed>, usize)>,
    msg: bool,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let (me, size, table) = (f.rank, f.size, offset_table_bytes(f.size));
    f.wait_turn()?;
    f.wait_free()?;
    match &mine {
        Some((sv, _, b)) if !msg => {
            // SAFETY: this rank's block, free after `wait_free`, holds the `b`
            // bytes of the table and the blocks (not messages); each view of
            // `sv` addresses the lent send buffer (this function's contract).
            unsafe {
                write_blocks(f.buf(me), size, table, |j, at| {
                    let (v, n) = (&sv[j], sv[j].bytes());
                    v.dt.pack(v.p, v.count, std::slice::from_raw_parts_mut(at, n));
                    n
                })
            };
            f.publish(Some(*b));
        }
        Some((_, _, b)) => f.publish(Some(*b)),
        None => f.publish(Some(0)),
    }
    f.wait_data(0..size)?;
    // SAFETY: every rank has published (waited for just above); the views are
    // of the lent buffers (this function's contract).
    unsafe { alltoall_vw_read(f, mine.as_ref().map(|(sv, rv, _)| (sv.as_slice(), rv.as_slice())), msg, comm) }
}

/// How rank `r`'s blocks travel in [`shm_alltoall_vw`] (after
/// `wait_data`).
pub(crate) fn block_route(f: &Flat, r: usize) -> BlockRoute {
    if f.sent_by_message(r) {
        BlockRoute::Messages
    } else if f.len_of(r) < offset_table_bytes(f.size) {
        BlockRoute::Nothing
    } else {
        BlockRoute::Segment
    }
}

/// The reading part of [`alltoall_vw_write`], once every rank has published: this
/// rank's blocks to send and receive (None: its arguments are bad), `msg`:
/// it sends its blocks as messages.
///
/// # Safety
/// Every rank has published in `f`'s operation; the views address the
/// caller's lent buffers.
pub(crate) unsafe fn alltoall_vw_read(
    f: &Flat,
    mine: Option<(&[parts::Typed], &[parts::Typed])>,
    msg: bool,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let (me, size, table) = (f.rank, f.size, offset_table_bytes(f.size));
    let ways: Vec<BlockRoute> = (0..size).map(|r| block_route(f, r)).collect();
    let mut err = None;
    if let Some((_, rv)) = mine {
        for (r, v) in rv.iter().enumerate() {
            match ways[r] {
                // SAFETY: rank `r`'s route is the segment, so it published a
                // table (this function's contract: every rank has published).
                BlockRoute::Segment => match unsafe { table_block(f, r, me, table, v.bytes()) } {
                    // SAFETY: `table_block` checked the `v.bytes()` bytes are in
                    // what rank `r` published; `v` views the lent receive buffer.
                    Ok(src) => unsafe { v.dt.unpack(std::slice::from_raw_parts(src, v.bytes()), v.p) },
                    Err(e) => {
                        err.get_or_insert(e);
                    }
                },
                BlockRoute::Nothing => {
                    err.get_or_insert(MpiError::new(
                        MPI_ERR_TRUNCATE,
                        format!("rank {r} of the collective sends nothing (its arguments are bad)"),
                    ));
                }
                BlockRoute::Messages => {}
            }
        }
    }
    if ways.contains(&BlockRoute::Messages) {
        // Every rank, even one with bad arguments, takes part (each
        // schedule takes a tag of the communicator).
        let r = run(comm, Call::Block, |_, s| {
            let Some((sv, rv)) = mine else { return Ok(()) };
            for r in (0..size).filter(|&r| r != me && ways[r] == BlockRoute::Messages) {
                let p = s.output(rv[r].p, rv[r].count, &rv[r].dt);
                s.recv(p, rv[r].bytes(), r);
            }
            if msg {
                for j in (0..size).filter(|&j| j != me && ways[j] != BlockRoute::Nothing) {
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
