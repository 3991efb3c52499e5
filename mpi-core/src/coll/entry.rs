//! One entry point per collective: the shared-memory paths in the order
//! they are tried, then a schedule of messages ([`algo`], or the
//! intercommunicator forms of [`inter`]).

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi_api::abi::*;

use crate::bail;
use crate::coll::algo;
use crate::coll::args::{
    at, check_buf, check_root, elem, in_place, no_alias, reducer, signature_match, typed, views, Arr, Dir,
};
use crate::coll::buf::{Reduction, RootBlocks, UserBlocks};
use crate::coll::call::{run, run_or, Call};
use crate::coll::inter;
use crate::coll::sched::{Packed, Sched};
use crate::coll::shm::direct::{direct_bcast, direct_gather_all};
use crate::coll::shm::fast::{fast_allreduce, fast_barrier, fast_bcast, fast_gather_all};
use crate::coll::shm::ops::{
    flat_allgather, flat_allgatherv, flat_allreduce_split, flat_alltoall, flat_barrier, flat_bcast, flat_reduce,
    flat_reduce_scatter, flat_rooted, Target,
};
use crate::coll::shm::pieces::pieces_allreduce;
use crate::coll::shm::rooted::{fast_gatherv, fast_scatterv, shm_gatherv, shm_scatterv};
use crate::coll::shm::vtables::{fast_alltoallv, shm_alltoall_vw};
use crate::coll::shm::Shm;
use crate::rt::buf::UserBuf;
use crate::rt::datatype::check_count;
use crate::rt::error::MpiResult;
use crate::rt::{self, State};

/// The order every collective tries its ways, held once: a blocking call
/// first tries the paths only blocking calls take (`blocking`: the fast,
/// single-copy or table paths of the segment, tried in order; None when
/// none takes the call, decided alike on every rank), then the segment's
/// general operation (`segment`: run or started, or the plan of a
/// persistent request's starts), and otherwise builds a schedule of
/// messages (`build`). Generic, so every path is a direct call.
#[inline(always)]
fn cascade(
    call: Call,
    comm: MPI_Comm,
    blocking: impl FnOnce() -> Option<MpiResult<()>>,
    segment: impl FnOnce(Call) -> Shm,
    build: impl FnOnce(&mut State, &mut Sched) -> MpiResult<()>,
) -> MpiResult<()> {
    rt::ulfm::check(comm)?;
    if let Call::Block = call {
        if let Some(r) = blocking() {
            return r;
        }
    }
    let plan = match segment(call) {
        Shm::Done(r) => return r,
        Shm::Plan(p) => Some(p),
        Shm::No => None,
    };
    run_or(comm, call, plan, build)
}

/// No blocking-only path.
fn none() -> Option<MpiResult<()>> {
    None
}

/// No operation of the segment.
fn no_segment(_: Call) -> Shm {
    Shm::No
}

// In the closures below, the buffers' addresses are used as
// `UserBuf::new`, `UserBlocks::new` and `Reduction::new` lend them.

pub(crate) fn barrier(call: Call, comm: MPI_Comm) -> MpiResult<()> {
    cascade(
        call,
        comm,
        || fast_barrier(comm),
        |call| flat_barrier(call, comm),
        |st, s| {
            if s.is_inter() {
                inter::barrier(st, s);
                return Ok(());
            }
            algo::barrier(s);
            Ok(())
        },
    )
}

pub(crate) fn bcast(call: Call, buf: UserBuf, root: c_int, comm: MPI_Comm) -> MpiResult<()> {
    let buffer = buf.addr();
    cascade(
        call,
        comm,
        // SAFETY: the buffer is lent as `UserBuf::new` says.
        || unsafe { fast_bcast(buf, root, comm).or_else(|| direct_bcast(buf, root, comm)) },
        // SAFETY: as above.
        |call| unsafe { flat_bcast(call, buf, root, comm) },
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::bcast(st, s, buf, root) };
            }
            let root = check_root(root, s.size)?;
            let (n, dt) = typed(st, buf, "buffer")?;
            let view =
                if s.rank == root { s.input(buffer as *const u8, n, &dt) } else { s.output(buffer as *mut u8, n, &dt) };
            algo::bcast(s, &st.coll.tune, view, dt.packed_size(n), root);
            Ok(())
        },
    )
}

pub(crate) fn gather(call: Call, send: UserBuf, recv: UserBuf, root: c_int, comm: MPI_Comm) -> MpiResult<()> {
    let (sendbuf, recvbuf) = (send.addr() as *const c_void, recv.addr());
    cascade(
        call,
        comm,
        none,
        // SAFETY: the buffers are lent as `UserBuf::new` says.
        |call| unsafe { flat_rooted(call, false, send, recv, root, comm) },
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::gather(st, s, send, RootBlocks::Even(recv), root) };
            }
            let root = check_root(root, s.size)?;
            if s.rank != root {
                let (sc, sdt) = typed(st, send, "sendbuf")?;
                let mine = s.input(sendbuf as *const u8, sc, &sdt);
                algo::gather(s, &st.coll.tune, mine, sdt.packed_size(sc), std::ptr::null_mut(), root);
                return Ok(());
            }
            let (rc, rdt) = typed(st, recv, "recvbuf")?;
            let blk = rdt.packed_size(rc);
            let out = s.output(recvbuf as *mut u8, rc * s.size, &rdt);
            let mine = at(out, root * blk);
            if in_place(sendbuf) {
                s.pack_to(elem(recvbuf, root * rc, &rdt), rc, &rdt, mine);
                algo::gather(s, &st.coll.tune, mine, blk, out, root);
            } else {
                let (sc, sdt) = typed(st, send, "sendbuf")?;
                signature_match(sdt.packed_size(sc), blk)?;
                no_alias(sendbuf, recvbuf, blk)?;
                let mine = s.input(sendbuf as *const u8, sc, &sdt);
                algo::gather(s, &st.coll.tune, mine, blk, out, root);
            }
            Ok(())
        },
    )
}

pub(crate) fn gatherv(call: Call, send: UserBuf, recv: UserBlocks, root: c_int, comm: MPI_Comm) -> MpiResult<()> {
    let (sendbuf, recvbuf) = (send.addr() as *const c_void, recv.addr());
    cascade(
        call,
        comm,
        // SAFETY: the buffers and arrays are lent as `UserBuf::new` and
        // `UserBlocks::new` say.
        || unsafe { fast_gatherv(send, recv, root, comm).or_else(|| shm_gatherv(send, recv, root, comm)) },
        no_segment,
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::gather(st, s, send, RootBlocks::Varying(recv), root) };
            }
            let root = check_root(root, s.size)?;
            if s.rank != root {
                let (sc, sdt) = typed(st, send, "sendbuf")?;
                let mine = s.input(sendbuf as *const u8, sc, &sdt);
                algo::gatherv(s, mine, sdt.packed_size(sc), &[], root);
                return Ok(());
            }
            // SAFETY: as above (one count and displacement per rank).
            let (counts, displs) =
                unsafe { (recv.counts.counts(s.size, "recvcounts")?, recv.displs.read(s.size, "displs")?) };
            let rdt = st.types.get(recv.datatype())?;
            let inp = in_place(sendbuf);
            let mut v =
                views(s, recvbuf, (&counts, &displs), std::slice::from_ref(&rdt), false, Dir::Out, inp.then_some(root));
            let mine = if inp {
                let p = elem(recvbuf, 0, &rdt).wrapping_offset(displs[root] as isize * rdt.extent);
                v[root].0 = s.inout(p, counts[root], &rdt);
                v[root].0
            } else {
                let (sc, sdt) = typed(st, send, "sendbuf")?;
                signature_match(sdt.packed_size(sc), v[root].1)?;
                no_alias(sendbuf, recvbuf, v[root].1)?;
                s.input(sendbuf as *const u8, sc, &sdt)
            };
            let n = v[root].1;
            algo::gatherv(s, mine, n, &v, root);
            Ok(())
        },
    )
}

pub(crate) fn scatter(call: Call, send: UserBuf, recv: UserBuf, root: c_int, comm: MPI_Comm) -> MpiResult<()> {
    let (sendbuf, recvbuf) = (send.addr() as *const c_void, recv.addr());
    cascade(
        call,
        comm,
        none,
        // SAFETY: the buffers are lent as `UserBuf::new` says.
        |call| unsafe { flat_rooted(call, true, send, recv, root, comm) },
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::scatter(st, s, RootBlocks::Even(send), recv, root) };
            }
            let root = check_root(root, s.size)?;
            if s.rank != root {
                let (rc, rdt) = typed(st, recv, "recvbuf")?;
                let out = s.output(recvbuf as *mut u8, rc, &rdt);
                algo::scatter(s, &st.coll.tune, std::ptr::null_mut(), rdt.packed_size(rc), out, root);
                return Ok(());
            }
            let (sc, sdt) = typed(st, send, "sendbuf")?;
            let blk = sdt.packed_size(sc);
            let src = s.input(sendbuf as *const u8, sc * s.size, &sdt);
            let out = if in_place(recvbuf) {
                std::ptr::null_mut()
            } else {
                let (rc, rdt) = typed(st, recv, "recvbuf")?;
                signature_match(rdt.packed_size(rc), blk)?;
                no_alias(sendbuf, recvbuf, blk)?;
                s.output(recvbuf as *mut u8, rc, &rdt)
            };
            algo::scatter(s, &st.coll.tune, src, blk, out, root);
            Ok(())
        },
    )
}

pub(crate) fn scatterv(call: Call, send: UserBlocks, recv: UserBuf, root: c_int, comm: MPI_Comm) -> MpiResult<()> {
    let (sendbuf, recvbuf) = (send.addr() as *const c_void, recv.addr());
    cascade(
        call,
        comm,
        // SAFETY: the buffers and arrays are lent as `UserBlocks::new` and
        // `UserBuf::new` say.
        || unsafe { fast_scatterv(send, recv, root, comm).or_else(|| shm_scatterv(send, recv, root, comm)) },
        no_segment,
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::scatter(st, s, RootBlocks::Varying(send), recv, root) };
            }
            let root = check_root(root, s.size)?;
            if s.rank != root {
                let (rc, rdt) = typed(st, recv, "recvbuf")?;
                let out = s.output(recvbuf as *mut u8, rc, &rdt);
                algo::scatterv(s, &[], out, rdt.packed_size(rc), root, false);
                return Ok(());
            }
            // SAFETY: as above (one count and displacement per rank).
            let (counts, displs) =
                unsafe { (send.counts.counts(s.size, "sendcounts")?, send.displs.read(s.size, "displs")?) };
            let sdt = st.types.get(send.datatype())?;
            let inp = in_place(recvbuf);
            let v = views(s, sendbuf, (&counts, &displs), &[sdt], false, Dir::In, inp.then_some(root));
            let (out, n) = if inp {
                (std::ptr::null_mut(), 0)
            } else {
                let (rc, rdt) = typed(st, recv, "recvbuf")?;
                signature_match(rdt.packed_size(rc), v[root].1)?;
                (s.output(recvbuf as *mut u8, rc, &rdt), rdt.packed_size(rc))
            };
            algo::scatterv(s, &v, out, n, root, inp);
            Ok(())
        },
    )
}

pub(crate) fn allgather(call: Call, send: UserBuf, recv: UserBuf, comm: MPI_Comm) -> MpiResult<()> {
    let (sendbuf, recvbuf) = (send.addr() as *const c_void, recv.addr());
    cascade(
        call,
        comm,
        // SAFETY: the buffers are lent as `UserBuf::new` says.
        || unsafe { fast_gather_all(false, send, recv, comm).or_else(|| direct_gather_all(false, send, recv, comm)) },
        // SAFETY: as above.
        |call| unsafe { flat_allgather(call, send, recv, comm) },
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::allgather(st, s, send, recv) };
            }
            let (rc, rdt) = typed(st, recv, "recvbuf")?;
            let blk = rdt.packed_size(rc);
            let out = s.output(recvbuf as *mut u8, rc * s.size, &rdt);
            let mine = at(out, s.rank * blk);
            if in_place(sendbuf) {
                s.pack_to(elem(recvbuf, s.rank * rc, &rdt), rc, &rdt, mine);
                algo::allgather(s, &st.coll.tune, mine, blk, out);
            } else {
                let (sc, sdt) = typed(st, send, "sendbuf")?;
                signature_match(sdt.packed_size(sc), blk)?;
                no_alias(sendbuf, recvbuf, blk)?;
                let mine = s.input(sendbuf as *const u8, sc, &sdt);
                algo::allgather(s, &st.coll.tune, mine, blk, out);
            }
            Ok(())
        },
    )
}

pub(crate) fn allgatherv(call: Call, send: UserBuf, recv: UserBlocks, comm: MPI_Comm) -> MpiResult<()> {
    let (sendbuf, recvbuf) = (send.addr() as *const c_void, recv.addr());
    cascade(
        call,
        comm,
        none,
        // SAFETY: the buffers and arrays are lent as `UserBuf::new` and
        // `UserBlocks::new` say.
        |call| unsafe { flat_allgatherv(call, send, recv, comm) },
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::allgatherv(st, s, send, recv) };
            }
            // SAFETY: as above (one count and displacement per rank).
            let (counts, displs) =
                unsafe { (recv.counts.counts(s.size, "recvcounts")?, recv.displs.read(s.size, "displs")?) };
            let rdt = st.types.get(recv.datatype())?;
            let me = s.rank;
            let inp = in_place(sendbuf);
            let mut v = views(s, recvbuf, (&counts, &displs), std::slice::from_ref(&rdt), false, Dir::Out, Some(me));
            let p = elem(recvbuf, 0, &rdt).wrapping_offset(displs[me] as isize * rdt.extent);
            if inp {
                v[me].0 = s.inout(p, counts[me], &rdt);
            } else {
                let (sc, sdt) = typed(st, send, "sendbuf")?;
                signature_match(sdt.packed_size(sc), v[me].1)?;
                no_alias(sendbuf, recvbuf, v[me].1)?;
                let mine = s.input(sendbuf as *const u8, sc, &sdt);
                v[me].0 = s.output(p, counts[me], &rdt);
                s.copy(mine, v[me].0, v[me].1);
            }
            algo::allgather_ring(s, &v);
            Ok(())
        },
    )
}

pub(crate) fn alltoall(call: Call, send: UserBuf, recv: UserBuf, comm: MPI_Comm) -> MpiResult<()> {
    let (sendbuf, recvbuf) = (send.addr() as *const c_void, recv.addr());
    cascade(
        call,
        comm,
        // SAFETY: the buffers are lent as `UserBuf::new` says.
        || unsafe { fast_gather_all(true, send, recv, comm).or_else(|| direct_gather_all(true, send, recv, comm)) },
        // SAFETY: as above.
        |call| unsafe { flat_alltoall(call, send, recv, comm) },
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::alltoall(st, s, send, recv) };
            }
            let size = s.size;
            let (rc, rdt) = typed(st, recv, "recvbuf")?;
            let blk = rdt.packed_size(rc);
            if in_place(sendbuf) {
                let buf = s.inout(recvbuf as *mut u8, rc * size, &rdt);
                let v: Vec<(Packed, usize)> = (0..size).map(|i| (at(buf, i * blk), blk)).collect();
                algo::alltoall_in_place(s, &v);
                return Ok(());
            }
            let (sc, sdt) = typed(st, send, "sendbuf")?;
            signature_match(sdt.packed_size(sc), blk)?;
            no_alias(sendbuf, recvbuf, blk * size)?;
            let src = s.input(sendbuf as *const u8, sc * size, &sdt);
            let out = s.output(recvbuf as *mut u8, rc * size, &rdt);
            algo::alltoall(s, &st.coll.tune, src, blk, out);
            Ok(())
        },
    )
}

/// Alltoallv (one type each side, displacements in extents) and Alltoallw
/// (a type per peer, displacements in bytes).
fn alltoall_vw(call: Call, send: UserBlocks, recv: UserBlocks, comm: MPI_Comm, bytes_disp: bool) -> MpiResult<()> {
    if let Call::Block = call {
        // SAFETY: the buffers and arrays are lent as `UserBlocks::new` says.
        if let Some(r) = unsafe { shm_alltoall_vw(send, recv, comm, bytes_disp) } {
            return r;
        }
    }
    let (sendbuf, sendcounts, sdispls) = (send.addr() as *const c_void, send.counts, send.displs);
    let (recvbuf, recvcounts, rdispls) = (recv.addr(), recv.counts, recv.displs);
    run(comm, call, |st, s| {
        if s.is_inter() {
            // SAFETY: as above.
            return unsafe { inter::alltoall_vw(st, s, send, recv, bytes_disp) };
        }
        let size = s.size;
        // SAFETY: as above (one count and displacement per rank).
        let (rc, rd) = unsafe { (recvcounts.counts(size, "recvcounts")?, rdispls.read(size, "rdispls")?) };
        let rdts = recv.types.iter().map(|&t| st.types.get(t)).collect::<MpiResult<Vec<_>>>()?;
        if in_place(sendbuf) {
            let v = views(s, recvbuf, (&rc, &rd), &rdts, bytes_disp, Dir::InOut, None);
            algo::alltoall_in_place(s, &v);
            return Ok(());
        }
        // SAFETY: as above.
        let (sc, sd) = unsafe { (sendcounts.counts(size, "sendcounts")?, sdispls.read(size, "sdispls")?) };
        let sdts = send.types.iter().map(|&t| st.types.get(t)).collect::<MpiResult<Vec<_>>>()?;
        let sv = views(s, sendbuf, (&sc, &sd), &sdts, bytes_disp, Dir::In, None);
        let rv = views(s, recvbuf, (&rc, &rd), &rdts, bytes_disp, Dir::Out, None);
        if std::ptr::eq(sendbuf, recvbuf) && sv.iter().any(|v| v.1 > 0) {
            no_alias(sendbuf, recvbuf, 1)?;
        }
        signature_match(sv[s.rank].1, rv[s.rank].1)?;
        algo::alltoallv(s, &sv, &rv, st.coll.tune.alltoall.as_deref() == Some("pairwise"));
        Ok(())
    })
}

pub(crate) fn alltoallv(call: Call, send: UserBlocks, recv: UserBlocks, comm: MPI_Comm) -> MpiResult<()> {
    if let Call::Block = call {
        // SAFETY: the buffers and arrays are lent as `UserBlocks::new` says.
        if let Some(r) = unsafe { fast_alltoallv(send, recv, comm) } {
            return r;
        }
    }
    // In place, the one type is the receive side's.
    let send = if send.is_in_place() { send.with_types(recv.types) } else { send };
    alltoall_vw(call, send, recv, comm, false)
}

/// Alltoallw: `send` and `recv` hold a type per rank (the receive side's
/// on both when in place).
pub(crate) fn alltoallw(call: Call, send: UserBlocks, recv: UserBlocks, comm: MPI_Comm) -> MpiResult<()> {
    alltoall_vw(call, send, recv, comm, true)
}

/// Views of a reduction's input and output: (input, output, bytes).
fn reduce_views(
    st: &mut State,
    s: &mut Sched,
    red: Reduction,
    count: i64,
    writes_result: bool,
) -> MpiResult<(Packed, Packed, usize)> {
    let ((sendbuf, recvbuf), datatype, op) = (red.bufs(), red.datatype, red.op);
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

pub(crate) fn reduce(call: Call, red: Reduction, count: i64, root: c_int, comm: MPI_Comm) -> MpiResult<()> {
    cascade(
        call,
        comm,
        none,
        // SAFETY: the buffers are lent as `Reduction::new` says.
        |call| unsafe { flat_reduce(call, red, count, Target::Root(root), comm) },
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::reduce(st, s, red, count, root) };
            }
            let root = check_root(root, s.size)?;
            let (sb, rb, n) = reduce_views(st, s, red, count, s.rank == root)?;
            algo::reduce(s, &st.coll.tune, sb, rb, n, root);
            Ok(())
        },
    )
}

pub(crate) fn allreduce(call: Call, red: Reduction, count: i64, comm: MPI_Comm) -> MpiResult<()> {
    cascade(
        call,
        comm,
        // SAFETY: the buffers are lent as `Reduction::new` says.
        || unsafe {
            fast_allreduce(red, count, comm)
                .or_else(|| flat_allreduce_split(red, count, comm))
                .or_else(|| pieces_allreduce(red, count, comm))
        },
        // SAFETY: as above.
        |call| unsafe { flat_reduce(call, red, count, Target::All, comm) },
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::allreduce(st, s, red, count) };
            }
            let (sb, rb, n) = reduce_views(st, s, red, count, true)?;
            algo::allreduce(s, &st.coll.tune, sb, rb, n);
            Ok(())
        },
    )
}

/// Scan, or Exscan (`exclusive`).
pub(crate) fn scan(call: Call, red: Reduction, count: i64, comm: MPI_Comm, exclusive: bool) -> MpiResult<()> {
    cascade(
        call,
        comm,
        none,
        // SAFETY: the buffers are lent as `Reduction::new` says.
        |call| unsafe { flat_reduce(call, red, count, Target::Prefix(exclusive), comm) },
        |st, s| {
            if s.is_inter() {
                bail!(MPI_ERR_COMM, "Scan and Exscan are not defined on intercommunicators");
            }
            // Exscan leaves rank 0's receive buffer alone.
            let writes = !(exclusive && s.rank == 0) || in_place(red.bufs().0);
            let (sb, mut rb, n) = reduce_views(st, s, red, count, writes)?;
            if rb.is_null() {
                rb = s.tmp(n);
            }
            algo::scan(s, sb, rb, n, exclusive);
            Ok(())
        },
    )
}

/// Reduce_scatter (`counts` per rank) and Reduce_scatter_block (`Err(count)`).
///
/// # Safety
/// `counts`, if given, is NULL or addresses one count per rank of `comm`.
unsafe fn reduce_scatter_any(call: Call, red: Reduction, counts: Result<Arr, i64>, comm: MPI_Comm) -> MpiResult<()> {
    let ((sendbuf, recvbuf), datatype, op) = (red.bufs(), red.datatype, red.op);
    cascade(
        call,
        comm,
        none,
        // SAFETY: the buffers are lent as `Reduction::new` says; the counts
        // as this function's caller says.
        |call| unsafe { flat_reduce_scatter(call, red, counts, comm) },
        |st, s| {
            if s.is_inter() {
                // SAFETY: as above.
                return unsafe { inter::reduce_scatter(st, s, red, counts) };
            }
            let counts = match counts {
                // SAFETY: as above.
                Ok(a) => unsafe { a.counts(s.size, "recvcounts")? },
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
        },
    )
}

/// Reduce_scatter.
///
/// # Safety
/// `recvcounts` is NULL or addresses one count per rank of `comm`.
pub(crate) unsafe fn reduce_scatter(call: Call, red: Reduction, recvcounts: Arr, comm: MPI_Comm) -> MpiResult<()> {
    // SAFETY: this function's contract: `recvcounts` is NULL or one count per rank.
    unsafe { reduce_scatter_any(call, red, Ok(recvcounts), comm) }
}

pub(crate) fn reduce_scatter_block(call: Call, red: Reduction, recvcount: i64, comm: MPI_Comm) -> MpiResult<()> {
    // SAFETY: no counts array.
    unsafe { reduce_scatter_any(call, red, Err(recvcount), comm) }
}

/// `MPI_Reduce_local`: combines `count` elements of the send buffer into
/// the receive buffer (`inoutbuf = inbuf op inoutbuf`) on this process.
pub(crate) fn reduce_local(red: Reduction, count: i64) -> MpiResult<()> {
    let ((inbuf, inoutbuf), datatype, op) = (red.bufs(), red.datatype, red.op);
    rt::with(|st| {
        let n = check_count(count)?;
        let dt = st.types.get(datatype)?;
        let red = reducer(st, op, datatype, &dt)?;
        check_buf(inbuf, n, &dt, "inbuf")?;
        check_buf(inoutbuf, n, &dt, "inoutbuf")?;
        // The two buffers may not be one (there is no MPI_IN_PLACE form).
        no_alias(inbuf, inoutbuf, dt.packed_size(n))?;
        Ok((n, dt, red))
    })
    .and_then(|(n, dt, red)| {
        // Outside the lock: a user function may call MPI.
        let bytes = dt.packed_size(n);
        let mut a = vec![0u8; bytes];
        let mut b = vec![0u8; bytes];
        // SAFETY: the buffers hold `n` elements of `dt` (`Reduction::new`);
        // `a` and `b` hold their packed bytes.
        unsafe {
            dt.pack(inbuf as *const u8, n, &mut a);
            dt.pack(inoutbuf as *const u8, n, &mut b);
            red.apply(a.as_mut_ptr(), b.as_mut_ptr(), bytes, false)?;
            dt.unpack(&b, inoutbuf as *mut u8);
        }
        Ok(())
    })
}
