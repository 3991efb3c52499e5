//! The general shared-memory operation of each collective: each checks
//! this rank's arguments and gives its part ([`parts`]), which
//! [`in_segment`] runs (blocking), starts (nonblocking) or keeps as the plan
//! of a persistent request.

use std::ffi::c_void;
use std::os::raw::c_int;

use std::slice;

use mpi_api::abi::*;

use crate::bail;
use crate::coll::args::{check_buf, check_root, elem, in_place, no_alias, reducer, typed_blk, typed_view, Arr};
use crate::coll::buf::{Reduction, UserBlocks};
use crate::coll::call::Call;
use crate::coll::entry::allgatherv;
use crate::coll::flat::{self, NbKind};
use crate::coll::parts;
use crate::coll::sched::{Packed, Reducer};
use crate::coll::shm::{in_segment, Shm};
use crate::rt::buf::UserBuf;
use crate::rt::datatype::check_count;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self, State};

pub(crate) fn flat_barrier(call: Call, comm: MPI_Comm) -> Shm {
    in_segment(call, comm, |_, _| Some(((), 0)), |_, _, ()| Ok(Box::new(parts::Arrive)))
}

pub(crate) unsafe fn flat_bcast(call: Call, buf: UserBuf, root: c_int, comm: MPI_Comm) -> Shm {
    let (buffer, count, datatype) = (buf.addr(), buf.count, buf.datatype);
    let prep = |st: &mut State, size: usize| {
        let (n, dt) = (check_count(count).ok()?, st.types.get(datatype).ok()?);
        let root = check_root(root, size).ok()?;
        let bytes = dt.packed_size(n);
        Some(((n, dt, root), bytes))
    };
    in_segment(call, comm, prep, |_, f, (n, dt, root)| {
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
pub(crate) enum Target {
    /// Reduce to this root.
    Root(c_int),
    /// Allreduce.
    All,
    /// Scan (`false`) or Exscan (`true`): each rank the ranks up to itself
    /// (before itself).
    Prefix(bool),
}

/// Whether a reduction would call the program's function in the
/// background: a nonblocking or persistent call's part in the segment runs
/// in the progress hook, under the lock, where a function that calls MPI
/// would hang. Such calls take a schedule, whose user steps run without the
/// lock (the op is the same on every rank, so all decide alike).
fn user_in_background(call: Call, red: &Reducer) -> bool {
    matches!(red, Reducer::User { .. }) && !matches!(call, Call::Block)
}

/// Reduce, Allreduce, Scan or Exscan in shared memory.
pub(crate) unsafe fn flat_reduce(call: Call, red: Reduction, count: i64, target: Target, comm: MPI_Comm) -> Shm {
    let ((sendbuf, recvbuf), datatype, op) = (red.bufs(), red.datatype, red.op);
    let prep = |st: &mut State, size: usize| {
        let n = check_count(count).ok()?;
        let dt = st.types.get(datatype).ok()?;
        let red = reducer(st, op, datatype, &dt).ok()?;
        if user_in_background(call, &red) {
            return None;
        }
        let root = match target {
            Target::Root(r) => Some(check_root(r, size).ok()?),
            _ => None,
        };
        let bytes = dt.packed_size(n);
        (bytes > 0).then_some(((n, dt, red, root), bytes))
    };
    in_segment(call, comm, prep, |_, f, (n, dt, red, root)| {
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
        Ok(Box::new(parts::Reduce {
            from,
            input: input as *const u8,
            n_in: n,
            off: 0,
            out: recvbuf as Packed,
            n,
            dt,
            red,
        }))
    })
}

/// Reduce_scatter (`counts`) or Reduce_scatter_block (`Err(count)`) in
/// shared memory: each rank writes its whole vector and combines its block
/// of every rank's in rank order (the counts are alike on every rank).
pub(crate) unsafe fn flat_reduce_scatter(call: Call, red: Reduction, counts: Result<Arr, i64>, comm: MPI_Comm) -> Shm {
    let ((sendbuf, recvbuf), datatype, op) = (red.bufs(), red.datatype, red.op);
    let prep = |st: &mut State, size: usize| {
        let counts = match counts {
            // SAFETY: `MPI_Reduce_scatter`'s contract (the caller's):
            // `recvcounts` is NULL (an error) or one count per rank.
            Ok(a) => unsafe { a.counts(size, "recvcounts").ok()? },
            Err(b) => vec![check_count(b).ok()?; size],
        };
        let dt = st.types.get(datatype).ok()?;
        let red = reducer(st, op, datatype, &dt).ok()?;
        if user_in_background(call, &red) {
            return None;
        }
        let bytes = dt.packed_size(counts.iter().sum());
        (bytes > 0).then_some(((counts, dt, red), bytes))
    };
    in_segment(call, comm, prep, |_, f, (counts, dt, red)| {
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
            out: recvbuf as Packed,
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
pub(crate) unsafe fn flat_allreduce_split(red: Reduction, count: i64, comm: MPI_Comm) -> Option<MpiResult<()>> {
    let ((sendbuf, recvbuf), datatype, op) = (red.bufs(), red.datatype, red.op);
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
    // SAFETY: `tmp`, `counts` and `displs` live across both steps; the user
    // buffers are lent as `Reduction::new` says.
    let (split, piece) = unsafe {
        let (c, d) = (Arr::I64(counts.as_ptr()), Arr::I64(displs.as_ptr()));
        (
            Reduction::new(input, tp, datatype, op),
            (UserBuf::new(tp, counts[me], datatype), UserBlocks::new(recvbuf, c, d, slice::from_ref(&datatype))),
        )
    };
    // SAFETY: `counts` holds one count per rank and lives across the call;
    // `split`'s buffers are lent (above).
    let first = match unsafe { flat_reduce_scatter(Call::Block, split, Ok(Arr::I64(counts.as_ptr())), comm) } {
        Shm::Done(r) => r,
        // Nothing done on any rank: the ordinary paths.
        _ => return None,
    };
    // Every rank takes part in the second step, even if the first failed
    // here, so the ranks stay in step.
    let (mine, all) = piece;
    // SAFETY: `all`'s arrays are `counts` and `displs`, one value per rank,
    // alive across the call; the buffers are lent (above).
    let second = match unsafe { flat_allgatherv(Call::Block, mine, all, comm) } {
        Shm::Done(r) => r,
        _ => allgatherv(Call::Msg, mine, all, comm),
    };
    Some(first.and(second))
}

/// Allgather in shared memory: each rank writes its block, every rank
/// reads all blocks.
pub(crate) unsafe fn flat_allgather(call: Call, send: UserBuf, recv: UserBuf, comm: MPI_Comm) -> Shm {
    let sendbuf = send.addr() as *const c_void;
    let (recvbuf, recvcount, recvtype) = (recv.addr(), recv.count, recv.datatype);
    let prep = |st: &mut State, _| {
        let (rc, rdt) = (check_count(recvcount).ok()?, st.types.get(recvtype).ok()?);
        let blk = rdt.packed_size(rc);
        (blk > 0).then_some(((rc, rdt), blk))
    };
    in_segment(call, comm, prep, |st, f, (rc, rdt)| {
        let blk = rdt.packed_size(rc);
        let (me, inp) = (f.rank, in_place(sendbuf));
        let src = (|| {
            check_buf(recvbuf, rc, &rdt, "recvbuf")?;
            if inp {
                return Ok(typed_view(elem(recvbuf, me * rc, &rdt) as *const c_void, rc, &rdt));
            }
            let (sc, sdt) = typed_blk(st, send, blk, "sendbuf")?;
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
pub(crate) unsafe fn flat_allgatherv(call: Call, send: UserBuf, recv: UserBlocks, comm: MPI_Comm) -> Shm {
    let (recvbuf, recvcounts, displs, recvtype) = (recv.addr(), recv.counts, recv.displs, recv.datatype());
    let sendbuf = send.addr() as *const c_void;
    let prep = |st: &mut State, size: usize| {
        // SAFETY: `recv`'s constructor (the caller's MPI contract):
        // `recvcounts` is NULL (an error) or one count per rank.
        let counts = unsafe { recvcounts.counts(size, "recvcounts").ok()? };
        let rdt = st.types.get(recvtype).ok()?;
        let max = counts.iter().map(|&c| rdt.packed_size(c)).max()?;
        (max > 0).then_some(((counts, rdt), max))
    };
    in_segment(call, comm, prep, |st, f, (counts, rdt)| {
        let (me, inp) = (f.rank, in_place(sendbuf));
        let place = |d: i64| (recvbuf as *mut u8).wrapping_offset(d as isize * rdt.extent) as *const c_void;
        let mine = rdt.packed_size(counts[me]);
        let (src, displs) = (|| {
            // SAFETY: `recv`'s constructor: `displs` is NULL (reported) or
            // one displacement per rank.
            let displs = unsafe { displs.read(f.size, "displs")? };
            check_buf(recvbuf, counts.iter().sum(), &rdt, "recvbuf")?;
            if inp {
                return Ok((typed_view(place(displs[me]), counts[me], &rdt), displs));
            }
            let (sc, sdt) = typed_blk(st, send, mine, "sendbuf")?;
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
pub(crate) unsafe fn flat_alltoall(call: Call, send: UserBuf, recv: UserBuf, comm: MPI_Comm) -> Shm {
    let sendbuf = send.addr() as *const c_void;
    let (recvbuf, recvcount, recvtype) = (recv.addr(), recv.count, recv.datatype);
    let prep = |st: &mut State, size: usize| {
        let (rc, rdt) = (check_count(recvcount).ok()?, st.types.get(recvtype).ok()?);
        let blk = rdt.packed_size(rc);
        (blk > 0).then_some(((rc, rdt), blk * size))
    };
    in_segment(call, comm, prep, |st, f, (rc, rdt)| {
        let (me, size) = (f.rank, f.size);
        let blk = rdt.packed_size(rc);
        let src = (|| {
            check_buf(recvbuf, rc * size, &rdt, "recvbuf")?;
            if in_place(sendbuf) {
                return Ok(typed_view(recvbuf, rc * size, &rdt));
            }
            let (sc, sdt) = typed_blk(st, send, blk, "sendbuf")?;
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
pub(crate) unsafe fn flat_rooted(
    call: Call,
    scatter: bool,
    send: UserBuf,
    recv: UserBuf,
    root: c_int,
    comm: MPI_Comm,
) -> Shm {
    let (sendbuf, sendcount, sendtype) = (send.addr() as *const c_void, send.count, send.datatype);
    let (recvbuf, recvcount, recvtype) = (recv.addr(), recv.count, recv.datatype);
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
    in_segment(call, comm, prep, |st, f, (root, blk)| {
        let (me, size) = (f.rank, f.size);
        let out = |st: &mut State, off: usize, expect: usize| {
            let (rc, rdt) = typed_blk(st, recv, blk, "recvbuf")?;
            Ok(parts::Read { rank: root, off, expect, to: typed_view(recvbuf, rc, &rdt) })
        };
        let part: Result<parts::Moves, (MpiError, Option<usize>)> = if !scatter {
            (|| {
                let mine = if me == root && in_place(sendbuf) {
                    None
                } else {
                    let (sc, sdt) = typed_blk(st, send, blk, "sendbuf")?;
                    Some(typed_view(sendbuf, sc, &sdt))
                };
                let mut reads = Vec::new();
                if me == root {
                    let (rc, rdt) = typed_blk(st, recv, blk, "recvbuf")?;
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
                let (sc, sdt) = typed_blk(st, send, blk, "sendbuf")?;
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
