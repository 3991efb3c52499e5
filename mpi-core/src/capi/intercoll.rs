//! Collectives on intercommunicators (chapter 5's "inter" semantics): the
//! data of one group goes to the other. Each function here returns `None`
//! for an intracommunicator, so the collective entry points of capi/coll.rs
//! can begin with `if let Some(r) = intercoll::x(...) { return r; }`.
//!
//! The local part runs as an ordinary intracommunicator collective on the
//! intercommunicator's hidden local communicator (`Comm::local_comm`); the
//! groups meet through their leaders (local rank 0) or, for rooted and
//! all-to-all operations, directly, with typed messages on the
//! intercommunicator's collective context. Nonblocking and persistent forms
//! are refused with `MPI_ERR_COMM` rather than run blocking.
//!
//! Roots follow the standard: `MPI_ROOT` at the root, `MPI_PROC_NULL` at the
//! other members of its group, the root's rank in the remote group at the
//! members of the other group.
// Used once capi/coll.rs dispatches here (the lines are ready: one `if let`
// at the top of its barrier/bcast/reduce/allreduce/allgather/gather/
// scatter/alltoall).
#![allow(dead_code)]

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::agree::{wait_all, View, TAG_BASE};
use super::coll::{self, Call};
use super::neighbor::{dtype, post, Block, Route};
use crate::bail;
use crate::rt::comm::Comm;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::MpiResult;
use crate::rt::{self};

const TAG_BARRIER: i32 = TAG_BASE + 0x200;
const TAG_BCAST: i32 = TAG_BASE + 0x201;
const TAG_REDUCE: i32 = TAG_BASE + 0x202;
const TAG_ALLREDUCE: i32 = TAG_BASE + 0x203;
const TAG_ALLGATHER: i32 = TAG_BASE + 0x204;
const TAG_GATHER: i32 = TAG_BASE + 0x205;
const TAG_SCATTER: i32 = TAG_BASE + 0x206;
const TAG_ALLTOALL: i32 = TAG_BASE + 0x207;

/// The intercommunicator `comm`, or None (an intracommunicator, or not a
/// communicator at all: the caller reports that).
fn inter(comm: MPI_Comm) -> Option<Comm> {
    rt::with(|st| Ok(st.comms.get(comm)?.clone())).ok().filter(Comm::is_inter)
}

/// Runs `f` on intercommunicator `comm` if it is one.
fn on_inter(comm: MPI_Comm, call: Call, f: impl FnOnce(&Comm) -> MpiResult<()>) -> Option<MpiResult<()>> {
    let c = inter(comm)?;
    if !matches!(call, Call::Block | Call::Msg) {
        return Some(Err(crate::rt::error::MpiError::new(
            MPI_ERR_COMM,
            "nonblocking and persistent collectives on intercommunicators are not supported",
        )));
    }
    Some(f(&c))
}

/// Typed messages with the remote group: receives, then sends, then wait.
fn exchange(comm: MPI_Comm, c: &Comm, recvs: Vec<(c_int, i32, Block)>, sends: Vec<(c_int, i32, Block)>) -> MpiResult<()> {
    let ids = rt::with(|st| {
        let route = Route { ctx: c.coll_ctx(), rank: c.rank, group: c.group.clone() };
        Ok(post(st, comm, &route, recvs, sends))
    })?;
    wait_all(&ids)
}

fn typed(dt: MPI_Datatype, count: i64) -> MpiResult<(Arc<Dtype>, usize)> {
    let n = check_count(count)?;
    Ok((rt::with(|st| dtype(st, dt))?, n))
}

fn block(p: *const c_void, n: usize, dt: &Arc<Dtype>) -> Block {
    Block { p: p as *mut u8, count: n, dt: dt.clone() }
}

/// What a root argument means here.
enum Root {
    /// This process is the root.
    Me,
    /// Another member of the root's group: nothing to do.
    Idle,
    /// A member of the other group; the root is remote rank r.
    Remote(c_int),
}

fn root_of(c: &Comm, root: c_int) -> MpiResult<Root> {
    match root {
        MPI_ROOT => Ok(Root::Me),
        MPI_PROC_NULL => Ok(Root::Idle),
        r if r >= 0 && r < c.size() => Ok(Root::Remote(r)),
        r => bail!(MPI_ERR_ROOT, "invalid root {r} on an intercommunicator (MPI_ROOT, MPI_PROC_NULL or a rank of the remote group of size {})", c.size()),
    }
}

/// A buffer that holds `n` elements of `dt` (true extent), and the address
/// to pass as the buffer.
fn scratch(dt: &Dtype, n: usize) -> (Vec<u8>, *mut c_void) {
    let span = if n == 0 { 0 } else { (n as isize - 1) * dt.extent.max(0) + dt.true_extent.max(0) } as usize;
    let mut v = vec![0u8; span.max(1)];
    let p = v.as_mut_ptr().wrapping_offset(-dt.true_lb) as *mut c_void;
    (v, p)
}

pub(crate) fn barrier(call: Call, comm: MPI_Comm) -> Option<MpiResult<()>> {
    on_inter(comm, call, |c| {
        coll::barrier(Call::Block, c.local_comm)?;
        if c.rank == 0 {
            let remote = rt::with(|st| View::remote(st, c))?;
            remote.sendrecv_vec(&[], 0, TAG_BARRIER)?;
        }
        coll::barrier(Call::Block, c.local_comm)
    })
}

/// # Safety
/// As `MPI_Bcast`.
pub(crate) unsafe fn bcast(call: Call, buffer: *mut c_void, count: i64, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> Option<MpiResult<()>> {
    on_inter(comm, call, |c| {
        let (dt, n) = typed(datatype, count)?;
        match root_of(c, root)? {
            Root::Idle => Ok(()),
            Root::Me => exchange(comm, c, vec![], vec![(0, TAG_BCAST, block(buffer, n, &dt))]),
            Root::Remote(r) => {
                if c.rank == 0 {
                    exchange(comm, c, vec![(r, TAG_BCAST, block(buffer, n, &dt))], vec![])?;
                }
                coll::bcast(Call::Block, buffer, count, datatype, 0, c.local_comm)
            }
        }
    })
}

/// # Safety
/// As `MPI_Reduce`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn reduce(
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    on_inter(comm, call, |c| {
        let (dt, n) = typed(datatype, count)?;
        match root_of(c, root)? {
            Root::Idle => Ok(()),
            Root::Me => exchange(comm, c, vec![(0, TAG_REDUCE, block(recvbuf, n, &dt))], vec![]),
            Root::Remote(r) => {
                let (_keep, tmp) = scratch(&dt, n);
                coll::reduce(Call::Block, sendbuf, tmp, count, datatype, op, 0, c.local_comm)?;
                if c.rank == 0 {
                    exchange(comm, c, vec![], vec![(r, TAG_REDUCE, block(tmp, n, &dt))])?;
                }
                Ok(())
            }
        }
    })
}

/// # Safety
/// As `MPI_Allreduce`.
pub(crate) unsafe fn allreduce(
    call: Call,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    on_inter(comm, call, |c| {
        if sendbuf as usize == MPI_IN_PLACE {
            bail!(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed on an intercommunicator");
        }
        let (dt, n) = typed(datatype, count)?;
        // The reduction of this group's data goes to the other group.
        let (_keep, tmp) = scratch(&dt, n);
        coll::reduce(Call::Block, sendbuf, tmp, count, datatype, op, 0, c.local_comm)?;
        if c.rank == 0 {
            exchange(comm, c, vec![(0, TAG_ALLREDUCE, block(recvbuf, n, &dt))], vec![(0, TAG_ALLREDUCE, block(tmp, n, &dt))])?;
        }
        coll::bcast(Call::Block, recvbuf, count, datatype, 0, c.local_comm)
    })
}

/// # Safety
/// As `MPI_Allgather`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn allgather(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    on_inter(comm, call, |c| {
        if sendbuf as usize == MPI_IN_PLACE {
            bail!(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed on an intercommunicator");
        }
        let (st_, sn) = typed(sendtype, sendcount)?;
        let (rt_, rn) = typed(recvtype, recvcount)?;
        // Packed data of this group, in rank order, to the leader; the
        // leaders swap; each group learns the other's.
        let mut mine = vec![0u8; st_.packed_size(sn)];
        st_.pack(sendbuf as *const u8, sn, &mut mine);
        let (local, remote) = rt::with(|st| Ok((View::local(st, c)?, View::remote(st, c)?)))?;
        let ours = local.allgather_vec(&mine)?.concat();
        let mut theirs = Vec::new();
        if c.rank == 0 {
            theirs = remote.sendrecv_vec(&ours, 0, TAG_ALLGATHER)?;
        }
        let theirs = local.bcast_vec(theirs, 0)?;
        let want = rt_.packed_size(rn) * c.size() as usize;
        if theirs.len() != want {
            bail!(MPI_ERR_TRUNCATE, "the other group sent {} bytes, the receive buffer takes {want}", theirs.len());
        }
        if want > 0 {
            rt_.unpack(&theirs, recvbuf as *mut u8);
        }
        Ok(())
    })
}

/// The `i`th block of `n` elements of `dt` at `buf`.
fn nth(buf: *const c_void, i: usize, n: usize, dt: &Arc<Dtype>) -> Block {
    block((buf as *const u8).wrapping_offset(i as isize * n as isize * dt.extent) as *const c_void, n, dt)
}

/// # Safety
/// As `MPI_Gather`.
#[allow(clippy::too_many_arguments)]
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
) -> Option<MpiResult<()>> {
    on_inter(comm, call, |c| match root_of(c, root)? {
        Root::Idle => Ok(()),
        Root::Me => {
            let (dt, n) = typed(recvtype, recvcount)?;
            let recvs = (0..c.size()).map(|r| (r, TAG_GATHER, nth(recvbuf, r as usize, n, &dt))).collect();
            exchange(comm, c, recvs, vec![])
        }
        Root::Remote(r) => {
            let (dt, n) = typed(sendtype, sendcount)?;
            exchange(comm, c, vec![], vec![(r, TAG_GATHER, block(sendbuf, n, &dt))])
        }
    })
}

/// # Safety
/// As `MPI_Scatter`.
#[allow(clippy::too_many_arguments)]
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
) -> Option<MpiResult<()>> {
    on_inter(comm, call, |c| match root_of(c, root)? {
        Root::Idle => Ok(()),
        Root::Me => {
            let (dt, n) = typed(sendtype, sendcount)?;
            let sends = (0..c.size()).map(|r| (r, TAG_SCATTER, nth(sendbuf, r as usize, n, &dt))).collect();
            exchange(comm, c, vec![], sends)
        }
        Root::Remote(r) => {
            let (dt, n) = typed(recvtype, recvcount)?;
            exchange(comm, c, vec![(r, TAG_SCATTER, block(recvbuf, n, &dt))], vec![])
        }
    })
}

/// # Safety
/// As `MPI_Alltoall`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoall(
    call: Call,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<MpiResult<()>> {
    on_inter(comm, call, |c| {
        if sendbuf as usize == MPI_IN_PLACE {
            bail!(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed on an intercommunicator");
        }
        let (sdt, sn) = typed(sendtype, sendcount)?;
        let (rdt, rn) = typed(recvtype, recvcount)?;
        let recvs = (0..c.size()).map(|r| (r, TAG_ALLTOALL, nth(recvbuf, r as usize, rn, &rdt))).collect();
        let sends = (0..c.size()).map(|r| (r, TAG_ALLTOALL, nth(sendbuf, r as usize, sn, &sdt))).collect();
        exchange(comm, c, recvs, sends)
    })
}
