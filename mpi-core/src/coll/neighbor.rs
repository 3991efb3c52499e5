//! Chapter 7.6: neighborhood collectives (the C procedures are in
//! `capi::neighbor`) on Cartesian, graph and
//! distributed-graph communicators — blocking, nonblocking (`MPI_I*`),
//! persistent (`*_init`) and with large counts (`*_c`).
//!
//! Each call becomes a collective schedule (`crate::coll::sched`) of one
//! receive per in-neighbor and one send per out-neighbor, run by the
//! collective engine as the call says ([`Call`]); non-contiguous blocks are
//! packed and unpacked by the schedule. All blocks of one call share the
//! call's tag, so two blocks between the same two processes pair up in the
//! order they were posted: for a graph, in the order of the edges, as the
//! standard says; on a Cartesian grid, where the same process can be the
//! neighbor on both sides of a periodic dimension of size 1 or 2, the
//! receives of a dimension are posted positive side first, which is the
//! order in which that neighbor sends them (its negative side first).

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::args::Arr;
use super::call::{run, Call};
use super::sched::{Packed, Sched};
use crate::bail;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::MpiResult;
use crate::rt::topo::Topo;
use crate::rt::State;

/// Who this process exchanges with.
struct Plan {
    ins: Vec<c_int>,
    outs: Vec<c_int>,
    cart: bool,
}

fn plan(st: &State, comm: MPI_Comm) -> MpiResult<Plan> {
    let c = st.comms.get(comm)?;
    let Some(t) = c.topo.clone() else {
        bail!(MPI_ERR_TOPOLOGY, "neighborhood collectives need a communicator with a process topology");
    };
    let (ins, outs) = t.neighbors(c.rank);
    Ok(Plan { ins, outs, cart: matches!(&*t, Topo::Cart { .. }) })
}

/// One block: user address, count and datatype.
struct Block {
    p: *mut u8,
    count: usize,
    dt: Arc<Dtype>,
}

/// Appends the transfers to `s`: block j from in-neighbor j, block k to
/// out-neighbor k, in the order the module doc explains (neighbors
/// `MPI_PROC_NULL` are skipped).
fn build(s: &mut Sched, pl: &Plan, sends: &[Block], recvs: &[Block]) {
    for i in 0..recvs.len() {
        let j = if pl.cart { i ^ 1 } else { i };
        let (src, b) = (pl.ins[j], &recvs[j]);
        if src != MPI_PROC_NULL {
            let p = s.output(b.p, b.count, &b.dt);
            s.recv(p, b.dt.packed_size(b.count), src as usize);
        }
    }
    // The same block sent to several neighbors is packed once.
    let mut last: Option<(*mut u8, usize, *const Dtype, Packed)> = None;
    for (k, b) in sends.iter().enumerate() {
        let dst = pl.outs[k];
        if dst == MPI_PROC_NULL {
            continue;
        }
        let p = match last {
            Some((bp, c, d, p)) if bp == b.p && c == b.count && d == Arc::as_ptr(&b.dt) => p,
            _ => s.input(b.p, b.count, &b.dt),
        };
        last = Some((b.p, b.count, Arc::as_ptr(&b.dt), p));
        s.send(p, b.dt.packed_size(b.count), dst as usize);
    }
}

fn no_in_place(sendbuf: *const c_void) -> MpiResult<()> {
    if sendbuf as usize == MPI_IN_PLACE {
        bail!(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed in neighborhood collectives");
    }
    Ok(())
}

/// One side of a call: one count for all blocks, or counts and
/// displacements (in extents of the one type, or in bytes with a type per
/// block).
pub(crate) enum Side {
    Regular { buf: *const c_void, count: i64, dt: MPI_Datatype },
    V { buf: *const c_void, counts: Arr, displs: Arr, dt: MPI_Datatype },
    W { buf: *const c_void, counts: Arr, displs: *const i64, types: *const MPI_Datatype },
}

impl Side {
    /// The `n` blocks of this side.
    ///
    /// # Safety
    /// The arrays hold at least `n` values (as the constructors say).
    unsafe fn blocks(&self, st: &mut State, n: usize) -> MpiResult<Vec<Block>> {
        match *self {
            Side::Regular { buf, count, dt } => {
                let dt = st.types.get(dt)?;
                let count = check_count(count)?;
                let stride = count as isize * dt.extent;
                Ok((0..n)
                    .map(|i| Block { p: (buf as *mut u8).wrapping_offset(i as isize * stride), count, dt: dt.clone() })
                    .collect())
            }
            Side::V { buf, counts, displs, dt } => {
                let dt = st.types.get(dt)?;
                // SAFETY: `v`'s contract (the caller's MPI contract): `counts`
                // is NULL (reported) or holds one value per neighbor, `n`.
                let c = unsafe { counts.counts(n, "counts")? };
                // SAFETY: as above, for the displacements.
                let d = unsafe { displs.read(n, "displacements")? };
                Ok((0..n)
                    .map(|i| Block {
                        p: (buf as *mut u8).wrapping_offset(d[i] as isize * dt.extent),
                        count: c[i],
                        dt: dt.clone(),
                    })
                    .collect())
            }
            Side::W { buf, counts, displs, types } => {
                // SAFETY: `w`'s contract (the caller's MPI contract): `counts`
                // is NULL (reported) or holds one value per neighbor, `n`.
                let c = unsafe { counts.counts(n, "counts")? };
                // SAFETY: as above, for the byte displacements.
                let d = unsafe { Arr::I64(displs).read(n, "displacements")? };
                if types.is_null() && n > 0 {
                    bail!(MPI_ERR_ARG, "datatypes is a NULL pointer");
                }
                (0..n)
                    .map(|i| {
                        Ok(Block {
                            p: (buf as *mut u8).wrapping_offset(d[i] as isize),
                            count: c[i],
                            // SAFETY: `types` is not NULL (checked above), so by
                            // `w`'s contract one handle per neighbor, `i < n`.
                            dt: st.types.get(unsafe { *types.add(i) })?,
                        })
                    })
                    .collect()
            }
        }
    }
}

/// Allgather(v): the one send block to every out-neighbor.
pub(crate) fn allgather(call: Call, send: Side, recv: Side, comm: MPI_Comm) -> MpiResult<()> {
    no_in_place(send_buf(&send))?;
    run(comm, call, |st, s| {
        let pl = plan(st, comm)?;
        // SAFETY: the sides are lent as their constructors say.
        let one = unsafe { send.blocks(st, 1)? }.pop().expect("one block");
        let sends: Vec<Block> =
            pl.outs.iter().map(|_| Block { p: one.p, count: one.count, dt: one.dt.clone() }).collect();
        // SAFETY: as above.
        let recvs = unsafe { recv.blocks(st, pl.ins.len())? };
        build(s, &pl, &sends, &recvs);
        Ok(())
    })
}

/// Alltoall(v, w): block k to out-neighbor k.
pub(crate) fn alltoall(call: Call, send: Side, recv: Side, comm: MPI_Comm) -> MpiResult<()> {
    no_in_place(send_buf(&send))?;
    run(comm, call, |st, s| {
        let pl = plan(st, comm)?;
        // SAFETY: the sides are lent as their constructors say.
        let (sends, recvs) = unsafe { (send.blocks(st, pl.outs.len())?, recv.blocks(st, pl.ins.len())?) };
        build(s, &pl, &sends, &recvs);
        Ok(())
    })
}

fn send_buf(s: &Side) -> *const c_void {
    match *s {
        Side::Regular { buf, .. } | Side::V { buf, .. } | Side::W { buf, .. } => buf,
    }
}

/// A side of one count for all blocks.
///
/// # Safety
/// As `UserBuf::new`, for each block of the call.
pub(crate) unsafe fn reg<C: Into<i64>>(buf: *const c_void, count: C, dt: MPI_Datatype) -> Side {
    Side::Regular { buf, count: count.into(), dt }
}

/// A side of counts and displacements (in extents of `dt`).
///
/// # Safety
/// As `UserBlocks::new`, with one count and displacement per neighbor.
pub(crate) unsafe fn v<A: Into<Arr>, B: Into<Arr>>(buf: *const c_void, counts: A, displs: B, dt: MPI_Datatype) -> Side {
    Side::V { buf, counts: counts.into(), displs: displs.into(), dt }
}

/// A side of counts, displacements in bytes and a type per block.
///
/// # Safety
/// As `UserBlocks::new`, with one count, displacement and type per neighbor.
pub(crate) unsafe fn w<A: Into<Arr>>(
    buf: *const c_void,
    counts: A,
    displs: *const i64,
    types: *const MPI_Datatype,
) -> Side {
    Side::W { buf, counts: counts.into(), displs, types }
}
