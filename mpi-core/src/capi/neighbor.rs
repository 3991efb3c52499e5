//! Chapter 7.6: neighborhood collectives, the C procedures: each converts
//! its buffer arguments into the sides of `crate::coll::neighbor` and runs
//! the call there.

use std::ffi::c_void;

use mpi_api::abi::*;

use super::p2p::twins;
use super::ret;
use crate::coll::call::Call;
use crate::coll::neighbor::{allgather, alltoall, reg, v, w};

// ----- the exported calls ----------------------------------------------------

twins! {
    pub unsafe fn MPI_Neighbor_allgather | MPI_Neighbor_allgather_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype`, and `recvbuf` has room for `recvcount` elements of `recvtype` per source neighbor; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { allgather(Call::Block, reg(sendbuf, sendcount, sendtype), reg(recvbuf, recvcount, recvtype), comm) })
    }

    pub unsafe fn MPI_Ineighbor_allgather | MPI_Ineighbor_allgather_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype`, and `recvbuf` has room for `recvcount` elements of `recvtype` per source neighbor; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { allgather(Call::nonblocking(request), reg(sendbuf, sendcount, sendtype), reg(recvbuf, recvcount, recvtype), comm) })
    }

    pub unsafe fn MPI_Neighbor_allgather_init | MPI_Neighbor_allgather_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype`, and `recvbuf` has room for `recvcount` elements of `recvtype` per source neighbor; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { allgather(Call::persistent(request), reg(sendbuf, sendcount, sendtype), reg(recvbuf, recvcount, recvtype), comm) })
    }

    pub unsafe fn MPI_Neighbor_allgatherv | MPI_Neighbor_allgatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype`, `recvcounts` and `displs` hold one value per source neighbor, and `recvbuf` has room for the blocks they describe; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { allgather(Call::Block, reg(sendbuf, sendcount, sendtype), v(recvbuf, recvcounts, displs, recvtype), comm) })
    }

    pub unsafe fn MPI_Ineighbor_allgatherv | MPI_Ineighbor_allgatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype`, `recvcounts` and `displs` hold one value per source neighbor, and `recvbuf` has room for the blocks they describe; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { allgather(Call::nonblocking(request), reg(sendbuf, sendcount, sendtype), v(recvbuf, recvcounts, displs, recvtype), comm) })
    }

    pub unsafe fn MPI_Neighbor_allgatherv_init | MPI_Neighbor_allgatherv_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype`, `recvcounts` and `displs` hold one value per source neighbor, and `recvbuf` has room for the blocks they describe; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { allgather(Call::persistent(request), reg(sendbuf, sendcount, sendtype), v(recvbuf, recvcounts, displs, recvtype), comm) })
    }

    pub unsafe fn MPI_Neighbor_alltoall | MPI_Neighbor_alltoall_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` per destination neighbor, and `recvbuf` has room for `recvcount` elements of `recvtype` per source neighbor; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { alltoall(Call::Block, reg(sendbuf, sendcount, sendtype), reg(recvbuf, recvcount, recvtype), comm) })
    }

    pub unsafe fn MPI_Ineighbor_alltoall | MPI_Ineighbor_alltoall_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` per destination neighbor, and `recvbuf` has room for `recvcount` elements of `recvtype` per source neighbor; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoall(Call::nonblocking(request), reg(sendbuf, sendcount, sendtype), reg(recvbuf, recvcount, recvtype), comm) })
    }

    pub unsafe fn MPI_Neighbor_alltoall_init | MPI_Neighbor_alltoall_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` per destination neighbor, and `recvbuf` has room for `recvcount` elements of `recvtype` per source neighbor; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoall(Call::persistent(request), reg(sendbuf, sendcount, sendtype), reg(recvbuf, recvcount, recvtype), comm) })
    }

    pub unsafe fn MPI_Neighbor_alltoallv | MPI_Neighbor_alltoallv_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: the send count and displacement arrays hold one value per destination neighbor and `sendbuf` holds the blocks they describe; the receive arrays one per source neighbor, and `recvbuf` has room for its blocks; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { alltoall(Call::Block, v(sendbuf, sendcounts, sdispls, sendtype), v(recvbuf, recvcounts, rdispls, recvtype), comm) })
    }

    pub unsafe fn MPI_Ineighbor_alltoallv | MPI_Ineighbor_alltoallv_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: the send count and displacement arrays hold one value per destination neighbor and `sendbuf` holds the blocks they describe; the receive arrays one per source neighbor, and `recvbuf` has room for its blocks; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoall(Call::nonblocking(request), v(sendbuf, sendcounts, sdispls, sendtype), v(recvbuf, recvcounts, rdispls, recvtype), comm) })
    }

    pub unsafe fn MPI_Neighbor_alltoallv_init | MPI_Neighbor_alltoallv_init_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Disp, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Disp, recvtype: MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: the send count and displacement arrays hold one value per destination neighbor and `sendbuf` holds the blocks they describe; the receive arrays one per source neighbor, and `recvbuf` has room for its blocks; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoall(Call::persistent(request), v(sendbuf, sendcounts, sdispls, sendtype), v(recvbuf, recvcounts, rdispls, recvtype), comm) })
    }

    pub unsafe fn MPI_Neighbor_alltoallw | MPI_Neighbor_alltoallw_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: the send count, byte displacement and type arrays hold one value per destination neighbor and `sendbuf` holds the blocks they describe; the receive arrays one per source neighbor, and `recvbuf` has room for its blocks; all of it stays lent until the call returns.
        ret(comm, NAME, unsafe { alltoall(Call::Block, w(sendbuf, sendcounts, sdispls, sendtypes), w(recvbuf, recvcounts, rdispls, recvtypes), comm) })
    }

    pub unsafe fn MPI_Ineighbor_alltoallw | MPI_Ineighbor_alltoallw_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: the send count, byte displacement and type arrays hold one value per destination neighbor and `sendbuf` holds the blocks they describe; the receive arrays one per source neighbor, and `recvbuf` has room for its blocks; all of it stays lent until the request completes, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoall(Call::nonblocking(request), w(sendbuf, sendcounts, sdispls, sendtypes), w(recvbuf, recvcounts, rdispls, recvtypes), comm) })
    }

    pub unsafe fn MPI_Neighbor_alltoallw_init | MPI_Neighbor_alltoallw_init_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const MPI_Aint, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm, _info: MPI_Info, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: the send count, byte displacement and type arrays hold one value per destination neighbor and `sendbuf` holds the blocks they describe; the receive arrays one per source neighbor, and `recvbuf` has room for its blocks; all of it stays lent while the persistent request is in use, and `request` is NULL or writable.
        ret(comm, NAME, unsafe { alltoall(Call::persistent(request), w(sendbuf, sendcounts, sdispls, sendtypes), w(recvbuf, recvcounts, rdispls, recvtypes), comm) })
    }
}
