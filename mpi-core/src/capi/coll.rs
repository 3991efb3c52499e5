//! Chapter 6 (MPI 4.1), collective communication: the C procedures. Each
//! converts its C arguments into typed values and calls the collective's
//! entry point in `crate::coll::entry` with a [`Call`] (blocking,
//! nonblocking `MPI_I*`, persistent `*_init`); the reduction operations'
//! table (`MPI_Op_create`, `MPI_Op_free`) lives here.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::slice;

use mpi_api::abi::*;

use super::p2p::twins;
use super::{put, ret};
use crate::bail;
use crate::coll::args::{user_op, Arr};
use crate::coll::buf::{Reduction, UserBlocks};
use crate::coll::call::Call;
use crate::coll::entry::{
    self, allgather, allgatherv, allreduce, alltoall, alltoallv, barrier, bcast, gather, gatherv, reduce, reduce_local,
    reduce_scatter, reduce_scatter_block, scan, scatter, scatterv,
};
use crate::rt;
use crate::rt::buf::UserBuf;
use crate::rt::error::MpiResult;
use crate::rt::op::{self, UserOp};

// ----- operations ------------------------------------------------------------------

/// Registers the user function `f` and writes its handle to `op`.
///
/// # Safety
/// `op` is NULL (an error reported) or writable.
unsafe fn op_create(name: &str, f: *mut c_void, commute: c_int, op: *mut MPI_Op, big: bool) -> c_int {
    let r = rt::with(|st| {
        if f.is_null() {
            bail!(MPI_ERR_ARG, "user_fn is NULL");
        }
        let u = Some(UserOp { f: f as usize, commute: commute != 0, big });
        let ops = &mut st.coll.ops;
        let i = match ops.iter().position(Option::is_none) {
            Some(i) => {
                ops[i] = u;
                i
            }
            None => {
                ops.push(u);
                ops.len() - 1
            }
        };
        // SAFETY: the caller's MPI contract: `op` is NULL (reported) or writable.
        unsafe { put(op, make_handle(HANDLE_KIND_DIRECT, OBJ_OP, i as u32), "op") }
    });
    ret(MPI_COMM_WORLD, name, r)
}

pub unsafe fn MPI_Op_create(user_fn: *mut c_void, commute: c_int, op: *mut MPI_Op) -> c_int {
    // SAFETY: the caller's MPI contract: `op` is NULL (reported) or writable.
    unsafe { op_create("MPI_Op_create", user_fn, commute, op, false) }
}

pub unsafe fn MPI_Op_create_c(user_fn: *mut c_void, commute: c_int, op: *mut MPI_Op) -> c_int {
    // SAFETY: the caller's MPI contract: `op` is NULL (reported) or writable.
    unsafe { op_create("MPI_Op_create_c", user_fn, commute, op, true) }
}

pub unsafe fn MPI_Op_free(op: *mut MPI_Op) -> c_int {
    let r = rt::with(|st| {
        if op.is_null() {
            bail!(MPI_ERR_ARG, "op is a NULL pointer");
        }
        // SAFETY: not NULL, so by the caller's MPI contract a readable and
        // writable handle.
        let op = unsafe { &mut *op };
        if op::is_predefined(*op) {
            bail!(MPI_ERR_OP, "predefined operations cannot be freed");
        }
        user_op(st, *op)?;
        st.coll.ops[handle_index(*op) as usize] = None;
        *op = MPI_OP_NULL;
        Ok(())
    });
    ret(MPI_COMM_WORLD, "MPI_Op_free", r)
}

pub unsafe fn MPI_Op_commutative(op: MPI_Op, commute: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let c = if op::is_predefined(op) { true } else { user_op(st, op)?.commute };
        // SAFETY: the caller's MPI contract: `commute` is NULL (reported) or writable.
        unsafe { put(commute, c as c_int, "commute") }
    });
    ret(MPI_COMM_WORLD, "MPI_Op_commutative", r)
}

pub unsafe fn MPI_Op_toint(op: MPI_Op) -> c_int {
    op
}

pub unsafe fn MPI_Op_fromint(op: c_int) -> MPI_Op {
    op
}

twins! {
    pub unsafe fn MPI_Reduce_local | MPI_Reduce_local_c(inbuf: *const c_void, inoutbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op) -> c_int {
        // SAFETY: the caller's MPI contract: `inbuf` holds `count` elements of `datatype`, and `inoutbuf` holds as many and may be written, for the duration of the call.
        ret(MPI_COMM_WORLD, NAME, unsafe { reduce_local(Reduction::new(inbuf, inoutbuf, datatype, op), count_arg(count)) })
    }
}

/// Alltoallw with its arrays of types, one per rank (read where they are,
/// while the call builds its operation).
///
/// # Safety
/// The caller's MPI contract for Alltoallw's arguments: the buffers, count,
/// displacement and type arrays (one value per rank of `comm`) stay lent
/// until the operation completes; `call`'s request as for [`Call`].
unsafe fn alltoallw(
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
    // SAFETY: this function's contract: `recvtypes` is NULL or holds one
    // handle per rank (`size`), and `recvbuf`, `recvcounts`, `rdispls` are
    // the caller's lent receive blocks.
    let recv = unsafe { UserBlocks::new(recvbuf, recvcounts, rdispls, type_array(recvtypes, size)) };
    let send = if sendbuf as usize == MPI_IN_PLACE {
        // SAFETY: MPI_IN_PLACE: the send blocks are never addressed; the
        // types are the receive side's, borrowed from `recv`.
        unsafe { UserBlocks::new(sendbuf, sendcounts, sdispls, recv.types) }
    } else {
        // SAFETY: this function's contract: `sendtypes` is NULL or holds one
        // handle per rank, and the send blocks are the caller's, lent.
        unsafe { UserBlocks::new(sendbuf, sendcounts, sdispls, type_array(sendtypes, size)) }
    };
    entry::alltoallw(call, send, recv, comm)
}

/// The `n` datatype handles at `p` (NULL: one `MPI_DATATYPE_NULL`, which the
/// collective reports).
///
/// # Safety
/// `p` is NULL or addresses `n` handles, readable while the returned slice lives.
unsafe fn type_array<'a>(p: *const MPI_Datatype, n: usize) -> &'a [MPI_Datatype] {
    if p.is_null() {
        &[MPI_DATATYPE_NULL]
    } else {
        // SAFETY: not NULL, so `n` readable handles for the slice's life by
        // this function's contract.
        unsafe { slice::from_raw_parts(p, n) }
    }
}

/// A count argument, `int` or `MPI_Count`.
fn count_arg<T: Into<i64>>(c: T) -> i64 {
    c.into()
}

// ----- the exported calls (generated from the API table) ---------------------------------

pub unsafe fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    ret(comm, "MPI_Barrier", barrier(Call::Block, comm))
}
pub unsafe fn MPI_Ibarrier(comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's MPI contract: `request` is NULL (reported) or writable.
    ret(comm, "MPI_Ibarrier", barrier(unsafe { Call::nonblocking(request) }, comm))
}
pub unsafe fn MPI_Barrier_init(comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
    // SAFETY: the caller's MPI contract: `request` is NULL (reported) or writable.
    ret(comm, "MPI_Barrier_init", barrier(unsafe { Call::persistent(request) }, comm))
}
twins! {
    pub unsafe fn MPI_Bcast | MPI_Bcast_c(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `buffer` holds `count` elements of `datatype` at the root and has room for them elsewhere; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { bcast(Call::Block, UserBuf::new(buffer, count_arg(count), datatype), root, comm) })
    }
    pub unsafe fn MPI_Ibcast | MPI_Ibcast_c(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buffer` holds `count` elements of `datatype` at the root and has room for them elsewhere; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { bcast(Call::nonblocking(request), UserBuf::new(buffer, count_arg(count), datatype), root, comm) })
    }
    pub unsafe fn MPI_Bcast_init | MPI_Bcast_init_c(buffer: *mut c_void, count: Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buffer` holds `count` elements of `datatype` at the root and has room for them elsewhere; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { bcast(Call::persistent(request), UserBuf::new(buffer, count_arg(count), datatype), root, comm) })
    }
    pub unsafe fn MPI_Gather | MPI_Gather_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE at the root), and at the root `recvbuf` has room for `recvcount` elements of `recvtype` per rank; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { gather(Call::Block, UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), root, comm) })
    }
    pub unsafe fn MPI_Igather | MPI_Igather_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE at the root), and at the root `recvbuf` has room for `recvcount` elements of `recvtype` per rank; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { gather(Call::nonblocking(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), root, comm) })
    }
    pub unsafe fn MPI_Gather_init | MPI_Gather_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE at the root), and at the root `recvbuf` has room for `recvcount` elements of `recvtype` per rank; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { gather(Call::persistent(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), root, comm) })
    }
    pub unsafe fn MPI_Gatherv | MPI_Gatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE at the root), and at the root `recvcounts` and `displs` hold one value per rank and `recvbuf` has room for the blocks they describe; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { gatherv(Call::Block, UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBlocks::new(recvbuf, Arr::from(recvcounts), Arr::from(displs), slice::from_ref(&recvtype)), root, comm) })
    }
    pub unsafe fn MPI_Igatherv | MPI_Igatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE at the root), and at the root `recvcounts` and `displs` hold one value per rank and `recvbuf` has room for the blocks they describe; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { gatherv(Call::nonblocking(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBlocks::new(recvbuf, Arr::from(recvcounts), Arr::from(displs), slice::from_ref(&recvtype)), root, comm) })
    }
    pub unsafe fn MPI_Gatherv_init | MPI_Gatherv_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE at the root), and at the root `recvcounts` and `displs` hold one value per rank and `recvbuf` has room for the blocks they describe; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { gatherv(Call::persistent(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBlocks::new(recvbuf, Arr::from(recvcounts), Arr::from(displs), slice::from_ref(&recvtype)), root, comm) })
    }
    pub unsafe fn MPI_Scatter | MPI_Scatter_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: at the root `sendbuf` holds `sendcount` elements of `sendtype` per rank, and `recvbuf` has room for `recvcount` elements of `recvtype` (or is MPI_IN_PLACE at the root); all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { scatter(Call::Block, UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), root, comm) })
    }
    pub unsafe fn MPI_Iscatter | MPI_Iscatter_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: at the root `sendbuf` holds `sendcount` elements of `sendtype` per rank, and `recvbuf` has room for `recvcount` elements of `recvtype` (or is MPI_IN_PLACE at the root); all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { scatter(Call::nonblocking(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), root, comm) })
    }
    pub unsafe fn MPI_Scatter_init | MPI_Scatter_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: at the root `sendbuf` holds `sendcount` elements of `sendtype` per rank, and `recvbuf` has room for `recvcount` elements of `recvtype` (or is MPI_IN_PLACE at the root); all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { scatter(Call::persistent(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), root, comm) })
    }
    pub unsafe fn MPI_Scatterv | MPI_Scatterv_c(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: at the root `sendcounts` and `displs` hold one value per rank and `sendbuf` holds the blocks they describe, and `recvbuf` has room for `recvcount` elements of `recvtype` (or is MPI_IN_PLACE at the root); all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { scatterv(Call::Block, UserBlocks::new(sendbuf, Arr::from(sendcounts), Arr::from(displs), slice::from_ref(&sendtype)), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), root, comm) })
    }
    pub unsafe fn MPI_Iscatterv | MPI_Iscatterv_c(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: at the root `sendcounts` and `displs` hold one value per rank and `sendbuf` holds the blocks they describe, and `recvbuf` has room for `recvcount` elements of `recvtype` (or is MPI_IN_PLACE at the root); all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { scatterv(Call::nonblocking(request), UserBlocks::new(sendbuf, Arr::from(sendcounts), Arr::from(displs), slice::from_ref(&sendtype)), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), root, comm) })
    }
    pub unsafe fn MPI_Scatterv_init | MPI_Scatterv_init_c(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: at the root `sendcounts` and `displs` hold one value per rank and `sendbuf` holds the blocks they describe, and `recvbuf` has room for `recvcount` elements of `recvtype` (or is MPI_IN_PLACE at the root); all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { scatterv(Call::persistent(request), UserBlocks::new(sendbuf, Arr::from(sendcounts), Arr::from(displs), slice::from_ref(&sendtype)), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), root, comm) })
    }
    pub unsafe fn MPI_Allgather | MPI_Allgather_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE), and `recvbuf` has room for `recvcount` elements of `recvtype` per rank; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { allgather(Call::Block, UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), comm) })
    }
    pub unsafe fn MPI_Iallgather | MPI_Iallgather_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE), and `recvbuf` has room for `recvcount` elements of `recvtype` per rank; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { allgather(Call::nonblocking(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), comm) })
    }
    pub unsafe fn MPI_Allgather_init | MPI_Allgather_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE), and `recvbuf` has room for `recvcount` elements of `recvtype` per rank; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { allgather(Call::persistent(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), comm) })
    }
    pub unsafe fn MPI_Allgatherv | MPI_Allgatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE), `recvcounts` and `displs` hold one value per rank, and `recvbuf` has room for the blocks they describe; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { allgatherv(Call::Block, UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBlocks::new(recvbuf, Arr::from(recvcounts), Arr::from(displs), slice::from_ref(&recvtype)), comm) })
    }
    pub unsafe fn MPI_Iallgatherv | MPI_Iallgatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE), `recvcounts` and `displs` hold one value per rank, and `recvbuf` has room for the blocks they describe; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { allgatherv(Call::nonblocking(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBlocks::new(recvbuf, Arr::from(recvcounts), Arr::from(displs), slice::from_ref(&recvtype)), comm) })
    }
    pub unsafe fn MPI_Allgatherv_init | MPI_Allgatherv_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` (or is MPI_IN_PLACE), `recvcounts` and `displs` hold one value per rank, and `recvbuf` has room for the blocks they describe; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { allgatherv(Call::persistent(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBlocks::new(recvbuf, Arr::from(recvcounts), Arr::from(displs), slice::from_ref(&recvtype)), comm) })
    }
    pub unsafe fn MPI_Alltoall | MPI_Alltoall_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` per rank (or is MPI_IN_PLACE), and `recvbuf` has room for `recvcount` elements of `recvtype` per rank; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { alltoall(Call::Block, UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), comm) })
    }
    pub unsafe fn MPI_Ialltoall | MPI_Ialltoall_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` per rank (or is MPI_IN_PLACE), and `recvbuf` has room for `recvcount` elements of `recvtype` per rank; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoall(Call::nonblocking(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), comm) })
    }
    pub unsafe fn MPI_Alltoall_init | MPI_Alltoall_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` per rank (or is MPI_IN_PLACE), and `recvbuf` has room for `recvcount` elements of `recvtype` per rank; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoall(Call::persistent(request), UserBuf::new(sendbuf, count_arg(sendcount), sendtype), UserBuf::new(recvbuf, count_arg(recvcount), recvtype), comm) })
    }
    pub unsafe fn MPI_Alltoallv | MPI_Alltoallv_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: the count and displacement arrays hold one value per rank, `sendbuf` (unless MPI_IN_PLACE) holds the blocks they describe and `recvbuf` has room for its blocks; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { alltoallv(Call::Block, UserBlocks::new(sendbuf, Arr::from(sendcounts), Arr::from(sdispls), slice::from_ref(&sendtype)), UserBlocks::new(recvbuf, Arr::from(recvcounts), Arr::from(rdispls), slice::from_ref(&recvtype)), comm) })
    }
    pub unsafe fn MPI_Ialltoallv | MPI_Ialltoallv_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: the count and displacement arrays hold one value per rank, `sendbuf` (unless MPI_IN_PLACE) holds the blocks they describe and `recvbuf` has room for its blocks; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoallv(Call::nonblocking(request), UserBlocks::new(sendbuf, Arr::from(sendcounts), Arr::from(sdispls), slice::from_ref(&sendtype)), UserBlocks::new(recvbuf, Arr::from(recvcounts), Arr::from(rdispls), slice::from_ref(&recvtype)), comm) })
    }
    pub unsafe fn MPI_Alltoallv_init | MPI_Alltoallv_init_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: the count and displacement arrays hold one value per rank, `sendbuf` (unless MPI_IN_PLACE) holds the blocks they describe and `recvbuf` has room for its blocks; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoallv(Call::persistent(request), UserBlocks::new(sendbuf, Arr::from(sendcounts), Arr::from(sdispls), slice::from_ref(&sendtype)), UserBlocks::new(recvbuf, Arr::from(recvcounts), Arr::from(rdispls), slice::from_ref(&recvtype)), comm) })
    }
    pub unsafe fn MPI_Alltoallw | MPI_Alltoallw_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: the count, displacement and type arrays hold one value per rank (the send arrays are unused with MPI_IN_PLACE), `sendbuf` holds the blocks they describe and `recvbuf` has room for its blocks; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { alltoallw(Call::Block, sendbuf, Arr::from(sendcounts), Arr::from(sdispls), sendtypes, recvbuf, Arr::from(recvcounts), Arr::from(rdispls), recvtypes, comm) })
    }
    pub unsafe fn MPI_Ialltoallw | MPI_Ialltoallw_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: the count, displacement and type arrays hold one value per rank (the send arrays are unused with MPI_IN_PLACE), `sendbuf` holds the blocks they describe and `recvbuf` has room for its blocks; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoallw(Call::nonblocking(request), sendbuf, Arr::from(sendcounts), Arr::from(sdispls), sendtypes, recvbuf, Arr::from(recvcounts), Arr::from(rdispls), recvtypes, comm) })
    }
    pub unsafe fn MPI_Alltoallw_init | MPI_Alltoallw_init_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtypes: *const MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: the count, displacement and type arrays hold one value per rank (the send arrays are unused with MPI_IN_PLACE), `sendbuf` holds the blocks they describe and `recvbuf` has room for its blocks; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoallw(Call::persistent(request), sendbuf, Arr::from(sendcounts), Arr::from(sdispls), sendtypes, recvbuf, Arr::from(recvcounts), Arr::from(rdispls), recvtypes, comm) })
    }
    pub unsafe fn MPI_Reduce | MPI_Reduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE at the root), and at the root `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { reduce(Call::Block, Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), root, comm) })
    }
    pub unsafe fn MPI_Ireduce | MPI_Ireduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE at the root), and at the root `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { reduce(Call::nonblocking(request), Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), root, comm) })
    }
    pub unsafe fn MPI_Reduce_init | MPI_Reduce_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE at the root), and at the root `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { reduce(Call::persistent(request), Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), root, comm) })
    }
    pub unsafe fn MPI_Allreduce | MPI_Allreduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE), and `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { allreduce(Call::Block, Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), comm) })
    }
    pub unsafe fn MPI_Iallreduce | MPI_Iallreduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE), and `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { allreduce(Call::nonblocking(request), Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), comm) })
    }
    pub unsafe fn MPI_Allreduce_init | MPI_Allreduce_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE), and `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { allreduce(Call::persistent(request), Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), comm) })
    }
    pub unsafe fn MPI_Reduce_scatter | MPI_Reduce_scatter_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `recvcounts` holds one value per rank, `sendbuf` holds their sum of elements of `datatype` (or is MPI_IN_PLACE: `recvbuf` holds them), and `recvbuf` has room for this rank's count; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { reduce_scatter(Call::Block, Reduction::new(sendbuf, recvbuf, datatype, op), Arr::from(recvcounts), comm) })
    }
    pub unsafe fn MPI_Ireduce_scatter | MPI_Ireduce_scatter_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `recvcounts` holds one value per rank, `sendbuf` holds their sum of elements of `datatype` (or is MPI_IN_PLACE: `recvbuf` holds them), and `recvbuf` has room for this rank's count; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { reduce_scatter(Call::nonblocking(request), Reduction::new(sendbuf, recvbuf, datatype, op), Arr::from(recvcounts), comm) })
    }
    pub unsafe fn MPI_Reduce_scatter_init | MPI_Reduce_scatter_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `recvcounts` holds one value per rank, `sendbuf` holds their sum of elements of `datatype` (or is MPI_IN_PLACE: `recvbuf` holds them), and `recvbuf` has room for this rank's count; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { reduce_scatter(Call::persistent(request), Reduction::new(sendbuf, recvbuf, datatype, op), Arr::from(recvcounts), comm) })
    }
    pub unsafe fn MPI_Reduce_scatter_block | MPI_Reduce_scatter_block_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `recvcount` elements of `datatype` per rank (or is MPI_IN_PLACE: `recvbuf` holds them), and `recvbuf` has room for `recvcount` of them; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { reduce_scatter_block(Call::Block, Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(recvcount), comm) })
    }
    pub unsafe fn MPI_Ireduce_scatter_block | MPI_Ireduce_scatter_block_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `recvcount` elements of `datatype` per rank (or is MPI_IN_PLACE: `recvbuf` holds them), and `recvbuf` has room for `recvcount` of them; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { reduce_scatter_block(Call::nonblocking(request), Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(recvcount), comm) })
    }
    pub unsafe fn MPI_Reduce_scatter_block_init | MPI_Reduce_scatter_block_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `recvcount` elements of `datatype` per rank (or is MPI_IN_PLACE: `recvbuf` holds them), and `recvbuf` has room for `recvcount` of them; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { reduce_scatter_block(Call::persistent(request), Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(recvcount), comm) })
    }
    pub unsafe fn MPI_Scan | MPI_Scan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE), and `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { scan(Call::Block, Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), comm, false) })
    }
    pub unsafe fn MPI_Iscan | MPI_Iscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE), and `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { scan(Call::nonblocking(request), Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), comm, false) })
    }
    pub unsafe fn MPI_Scan_init | MPI_Scan_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE), and `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { scan(Call::persistent(request), Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), comm, false) })
    }
    pub unsafe fn MPI_Exscan | MPI_Exscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE), and `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { scan(Call::Block, Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), comm, true) })
    }
    pub unsafe fn MPI_Iexscan | MPI_Iexscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE), and `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { scan(Call::nonblocking(request), Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), comm, true) })
    }
    pub unsafe fn MPI_Exscan_init | MPI_Exscan_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `count` elements of `datatype` (or is MPI_IN_PLACE), and `recvbuf` has room for them (and holds the input with MPI_IN_PLACE); all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { scan(Call::persistent(request), Reduction::new(sendbuf, recvbuf, datatype, op), count_arg(count), comm, true) })
    }
}
