//! Chapter 7.6: neighborhood collectives, blocking and nonblocking, on
//! Cartesian, graph and distributed-graph communicators.
//!
//! Each block goes straight from the user's buffer to the neighbor's with
//! the user's datatypes, on the communicator's collective context. Blocks of
//! successive neighborhood collectives pair up in order (every process calls
//! them in the same order, and messages between two processes are never
//! overtaken). On a Cartesian grid the block sent towards a direction is
//! tagged with that direction, so the two blocks exchanged with the same
//! neighbor in a periodic dimension of size 1 or 2 cannot be confused.
//! A nonblocking call is a compound request of its sends and receives.
#![allow(clippy::too_many_arguments)]

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::agree::{wait_all, TAG_BASE};
use super::{c_array, put, ret};
use crate::bail;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::MpiResult;
use crate::rt::p2p::{Kind, Mode, RecvOp, ReqTable, Request};
use crate::rt::topo::Topo;
use crate::rt::{self, State};

/// Tag of the blocks of neighborhood collectives (plus the direction on a
/// Cartesian grid).
const TAG_NEIGHBOR: i32 = TAG_BASE + 0x100;

/// One block: user address, count and datatype.
pub(crate) struct Block {
    pub p: *mut u8,
    pub count: usize,
    pub dt: Arc<Dtype>,
}

/// Where typed blocks travel: a context, this process's rank (the source
/// of its messages) and the group that peers' ranks index.
pub(crate) struct Route {
    pub ctx: u32,
    pub rank: i32,
    pub group: Arc<Vec<usize>>,
}

/// Who this process exchanges with.
struct Plan {
    route: Route,
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
    let route = Route { ctx: c.coll_ctx(), rank: c.rank, group: c.group.clone() };
    Ok(Plan { route, ins, outs, cart: matches!(&*t, Topo::Cart { .. }) })
}

/// Posts the receives `(peer, tag, block)`, then the sends; returns the
/// requests (peers `MPI_PROC_NULL` are skipped).
pub(crate) fn post(st: &mut State, comm: MPI_Comm, r: &Route, recvs: Vec<(c_int, i32, Block)>, sends: Vec<(c_int, i32, Block)>) -> Vec<u32> {
    let mut ids = Vec::with_capacity(sends.len() + recvs.len());
    for (src, tag, b) in recvs {
        if src == MPI_PROC_NULL {
            continue;
        }
        let cap = b.dt.packed_size(b.count);
        let op = RecvOp { buf: b.p, dt: b.dt, ctx: r.ctx, src, tag, cap, stream: None };
        let i = st.reqs.alloc(Request::new(Kind::Recv(op), comm));
        st.engine.start_recv(&mut st.reqs, i);
        ids.push(i);
    }
    for (dst, tag, b) in sends {
        if dst == MPI_PROC_NULL {
            continue;
        }
        let i = st.reqs.alloc(Request::new(Kind::Null, comm));
        st.engine.start_send(&mut st.reqs, i, b.p, b.count, &b.dt, r.group[dst as usize], r.ctx, r.rank, tag, Mode::Standard);
        ids.push(i);
    }
    ids
}

/// The neighborhood transfers: block j from in-neighbor j, block k to
/// out-neighbor k, tagged as the module doc says.
fn post_plan(st: &mut State, comm: MPI_Comm, pl: &Plan, sends: Vec<Block>, recvs: Vec<Block>) -> Vec<u32> {
    let tag = |i: usize| if pl.cart { TAG_NEIGHBOR + i as i32 } else { TAG_NEIGHBOR };
    let recvs = recvs.into_iter().enumerate().map(|(j, b)| (pl.ins[j], tag(j ^ 1), b)).collect();
    let sends = sends.into_iter().enumerate().map(|(k, b)| (pl.outs[k], tag(k), b)).collect();
    post(st, comm, &pl.route, recvs, sends)
}

/// Builds the blocks with `f` (from the plan and the state) and runs them:
/// to completion, or as the compound request written to `request`.
unsafe fn run(
    name: &str,
    comm: MPI_Comm,
    request: Option<*mut MPI_Request>,
    f: impl FnOnce(&mut State, &Plan) -> MpiResult<(Vec<Block>, Vec<Block>)>,
) -> c_int {
    let r = (|| {
        if let Some(rq) = request {
            if rq.is_null() {
                bail!(MPI_ERR_ARG, "request is a NULL pointer");
            }
        }
        let ids = rt::with(|st| {
            let pl = plan(st, comm)?;
            let (sends, recvs) = f(st, &pl)?;
            let ids = post_plan(st, comm, &pl, sends, recvs);
            match request {
                None => Ok(ids),
                Some(rq) => {
                    let i = st.reqs.alloc(Request::new(Kind::Null, comm));
                    st.reqs.make_compound(i, ids, None);
                    put(rq, ReqTable::handle(i), "request")?;
                    Ok(Vec::new())
                }
            }
        })?;
        wait_all(&ids)
    })();
    ret(comm, name, r)
}

pub(crate) fn dtype(st: &mut State, dt: MPI_Datatype) -> MpiResult<Arc<Dtype>> {
    st.types.get(dt)
}


fn no_in_place(sendbuf: *const c_void) -> MpiResult<()> {
    if sendbuf as usize == MPI_IN_PLACE {
        bail!(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed in neighborhood collectives");
    }
    Ok(())
}

/// Blocks at `base + displs[i] * extent` (`displs = None`: consecutive).
fn blocks(base: *mut u8, n: usize, counts: &[usize], displs: Option<&[c_int]>, dt: &Arc<Dtype>) -> Vec<Block> {
    let mut off: isize = 0;
    (0..n)
        .map(|i| {
            let d = match displs {
                Some(ds) => ds[i] as isize * dt.extent,
                None => {
                    let d = off;
                    off += counts[i] as isize * dt.extent;
                    d
                }
            };
            Block { p: base.wrapping_offset(d), count: counts[i], dt: dt.clone() }
        })
        .collect()
}

fn counts_of(v: &[c_int]) -> MpiResult<Vec<usize>> {
    v.iter().map(|&c| check_count(c as i64)).collect()
}

/// One side of a regular or "v" call: one count for all blocks or an
/// array of them, consecutive blocks or displacements (in extents).
struct Spec {
    buf: *const c_void,
    counts: Option<*const c_int>,
    count: c_int,
    displs: Option<*const c_int>,
    dt: MPI_Datatype,
}

impl Spec {
    fn regular(buf: *const c_void, count: c_int, dt: MPI_Datatype) -> Spec {
        Spec { buf, counts: None, count, displs: None, dt }
    }
    fn v(buf: *const c_void, counts: *const c_int, displs: *const c_int, dt: MPI_Datatype) -> Spec {
        Spec { buf, counts: Some(counts), count: 0, displs: Some(displs), dt }
    }
    /// The `n` blocks of this side.
    unsafe fn blocks(&self, st: &mut State, n: usize) -> MpiResult<Vec<Block>> {
        let dt = dtype(st, self.dt)?;
        let counts = match self.counts {
            Some(p) => counts_of(c_array(p, n as c_int, "counts")?)?,
            None => vec![check_count(self.count as i64)?; n],
        };
        let displs = match self.displs {
            Some(p) => Some(c_array(p, n as c_int, "displacements")?),
            None => None,
        };
        Ok(blocks(self.buf as *mut u8, n, &counts, displs, &dt))
    }
}

/// Allgather(v): the same send block to every out-neighbor.
unsafe fn allgather(name: &str, send: Spec, recv: Spec, comm: MPI_Comm, request: Option<*mut MPI_Request>) -> c_int {
    run(name, comm, request, |st, pl| {
        no_in_place(send.buf)?;
        let one = send.blocks(st, 1)?.pop().unwrap();
        let sends = (0..pl.outs.len()).map(|_| Block { p: one.p, count: one.count, dt: one.dt.clone() }).collect();
        Ok((sends, recv.blocks(st, pl.ins.len())?))
    })
}

/// Alltoall(v): block k to out-neighbor k.
unsafe fn alltoall(name: &str, send: Spec, recv: Spec, comm: MPI_Comm, request: Option<*mut MPI_Request>) -> c_int {
    run(name, comm, request, |st, pl| {
        no_in_place(send.buf)?;
        Ok((send.blocks(st, pl.outs.len())?, recv.blocks(st, pl.ins.len())?))
    })
}

/// Blocks of an `alltoallw` side: byte displacements, a type per block.
unsafe fn wblocks(st: &mut State, base: *mut u8, n: usize, counts: *const c_int, displs: *const i64, types: *const c_int) -> MpiResult<Vec<Block>> {
    let c = counts_of(c_array(counts, n as c_int, "counts")?)?;
    let d = c_array(displs, n as c_int, "displacements")?;
    let t = c_array(types, n as c_int, "datatypes")?;
    (0..n).map(|i| Ok(Block { p: base.wrapping_offset(d[i] as isize), count: c[i], dt: dtype(st, t[i])? })).collect()
}

unsafe fn alltoallw(
    name: &str,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const i64,
    sendtypes: *const c_int,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const i64,
    recvtypes: *const c_int,
    comm: MPI_Comm,
    request: Option<*mut MPI_Request>,
) -> c_int {
    run(name, comm, request, |st, pl| {
        no_in_place(sendbuf)?;
        let s = wblocks(st, sendbuf as *mut u8, pl.outs.len(), sendcounts, sdispls, sendtypes)?;
        let r = wblocks(st, recvbuf as *mut u8, pl.ins.len(), recvcounts, rdispls, recvtypes)?;
        Ok((s, r))
    })
}

pub unsafe fn MPI_Neighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    allgather("MPI_Neighbor_allgather", Spec::regular(sendbuf, sendcount, sendtype), Spec::regular(recvbuf, recvcount, recvtype), comm, None)
}

pub unsafe fn MPI_Ineighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    allgather("MPI_Ineighbor_allgather", Spec::regular(sendbuf, sendcount, sendtype), Spec::regular(recvbuf, recvcount, recvtype), comm, Some(request))
}

pub unsafe fn MPI_Neighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    allgather("MPI_Neighbor_allgatherv", Spec::regular(sendbuf, sendcount, sendtype), Spec::v(recvbuf, recvcounts, displs, recvtype), comm, None)
}

pub unsafe fn MPI_Ineighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    allgather("MPI_Ineighbor_allgatherv", Spec::regular(sendbuf, sendcount, sendtype), Spec::v(recvbuf, recvcounts, displs, recvtype), comm, Some(request))
}

pub unsafe fn MPI_Neighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    alltoall("MPI_Neighbor_alltoall", Spec::regular(sendbuf, sendcount, sendtype), Spec::regular(recvbuf, recvcount, recvtype), comm, None)
}

pub unsafe fn MPI_Ineighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    alltoall("MPI_Ineighbor_alltoall", Spec::regular(sendbuf, sendcount, sendtype), Spec::regular(recvbuf, recvcount, recvtype), comm, Some(request))
}

pub unsafe fn MPI_Neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
    alltoall("MPI_Neighbor_alltoallv", Spec::v(sendbuf, sendcounts, sdispls, sendtype), Spec::v(recvbuf, recvcounts, rdispls, recvtype), comm, None)
}

pub unsafe fn MPI_Ineighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    alltoall("MPI_Ineighbor_alltoallv", Spec::v(sendbuf, sendcounts, sdispls, sendtype), Spec::v(recvbuf, recvcounts, rdispls, recvtype), comm, Some(request))
}

pub unsafe fn MPI_Neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const i64, sendtypes: *const c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const i64, recvtypes: *const c_int, comm: MPI_Comm) -> c_int {
    alltoallw("MPI_Neighbor_alltoallw", sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, None)
}

pub unsafe fn MPI_Ineighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const i64, sendtypes: *const c_int, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const i64, recvtypes: *const c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    alltoallw("MPI_Ineighbor_alltoallw", sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, Some(request))
}
