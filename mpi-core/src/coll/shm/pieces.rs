//! Large blocking Allreduce in shared memory, in pieces.

use std::ffi::c_void;

use mpi_api::abi::*;

use crate::coll::args::{check_buf, in_place, no_alias, reducer};
use crate::coll::buf::Reduction;
use crate::coll::flat::{self, Flat, Lane, Lookup};
use crate::coll::sched::Reducer;
use crate::coll::shm::fast::fast_copy;
use crate::coll::shm::next_op;
use crate::rt::datatype::check_count;
use crate::rt::error::MpiResult;
use crate::rt::{self, State};

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
pub(crate) fn pieces_start<T>(
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
        Ok(match flat::lookup(st, comm, Lane::Block, flat::BIG)? {
            Lookup::Ready(f) => Some((a, f)),
            // The segment is made by a call that fits it (alike everywhere).
            _ => None,
        })
    })
    .ok()
    .flatten()
}

/// Allreduce in pieces (see [`pieces_start`]) of a contiguous type with a
/// predefined operation: each piece is cut into one block per rank; in a
/// first operation every rank writes the blocks of the others and
/// combines its own block of every rank (in rank order) into its result,
/// in a second it writes that block and takes the others' results. Each
/// block is computed once, so every rank gets the same bits.
pub(crate) unsafe fn pieces_allreduce(red: Reduction, count: i64, comm: MPI_Comm) -> Option<MpiResult<()>> {
    let ((sendbuf, recvbuf), datatype, op) = (red.bufs(), red.datatype, red.op);
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
                    // SAFETY: this rank's block of piece `at` is inside the
                    // receive buffer (`bytes`, checked by `check_buf`) and
                    // inside this rank's segment buffer (a piece is at most
                    // `flat::BIG`), free after `wait_free`.
                    unsafe { fast_copy(out.add(at + mo), mine.add(mo), ml) };
                } else {
                    for r in (0..size).filter(|&r| r != me) {
                        let (o, l) = blk(len, r);
                        // SAFETY: block `r` of the piece is inside the input
                        // (`bytes`, checked by `check_buf`, lent by `red`'s
                        // constructor) and inside this rank's free buffer.
                        unsafe { fast_copy(input.add(at + o), mine.add(o), l) };
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
                    // SAFETY: rank `r` wrote its block of the piece before
                    // publishing `len` bytes (checked above); the block is
                    // inside the receive buffer's `bytes`.
                    unsafe { fast_copy(g.buf(r).add(o), out.add(at + o), l) };
                }
                return Ok(());
            }
            // Rank order: x0 op (x1 op (... x_me)), then op x_me+1 ...
            // SAFETY: this rank's block of the piece is inside the receive
            // buffer's `bytes` (checked by `check_buf`).
            let dst = unsafe { out.add(at + mo) };
            if !inp {
                // SAFETY: the same block of the send buffer (also `bytes`,
                // checked, and not aliased: `no_alias`).
                unsafe { fast_copy(input.add(at + mo), dst, ml) };
            }
            for r in (0..me).rev() {
                // SAFETY: rank `r` wrote this rank's block of the piece before
                // publishing `len` bytes (checked above); `dst` holds `ml`.
                unsafe { red.apply(g.buf(r).add(mo), dst, ml, false)? };
            }
            for r in me + 1..size {
                // SAFETY: as above, rank `r`'s published block and `dst`.
                unsafe { red.apply(g.buf(r).add(mo), dst, ml, true)? };
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
