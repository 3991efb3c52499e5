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
use crate::coll::call::{run, run_or, Call};
use crate::coll::inter;
use crate::coll::sched::{Sched, P};
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
use crate::rt::datatype::check_count;
use crate::rt::error::MpiResult;
use crate::rt::{self, State};

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
            inter::barrier(st, s);
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
            return inter::bcast(st, s, buffer, count, datatype, root);
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
            return inter::gather(st, s, sendbuf, sendcount, sendtype, recvbuf, recvcount, None, recvtype, root);
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
            return inter::gather(
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
            return inter::scatter(st, s, sendbuf, sendcount, None, sendtype, recvbuf, recvcount, recvtype, root);
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
            return inter::scatter(
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
            return inter::allgather(st, s, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
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
            return inter::allgatherv(st, s, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype);
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
            return inter::alltoall(st, s, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
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
pub(crate) unsafe fn alltoall_vw(
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
            return inter::alltoall_vw(
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
pub(crate) unsafe fn reduce_views(
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
            return inter::reduce(st, s, sendbuf, recvbuf, count, datatype, op, root);
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
            return inter::allreduce(st, s, sendbuf, recvbuf, count, datatype, op);
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
pub(crate) unsafe fn reduce_scatter_any(
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
            return inter::reduce_scatter(st, s, sendbuf, recvbuf, counts, datatype, op);
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
