//! Buffer arguments of collectives as typed values, besides the single
//! buffers of [`UserBuf`].
//!
//! The C procedures (`capi::coll`) turn each buffer argument into one of
//! these with one `unsafe fn`, whose contract is the caller's: the memory
//! is lent to the library for the whole operation. Below the boundary the
//! collectives take these values instead of pointers, counts and datatype
//! handles. Datatypes stay handles, as in a [`UserBuf`].

use std::ffi::c_void;

use mpi_api::abi::{MPI_Datatype, MPI_Op, MPI_IN_PLACE};

use super::args::Arr;
use crate::rt::buf::UserBuf;

/// The blocks of one side of a v- or w-collective: block `i` is
/// `counts[i]` elements of its type at displacement `displs[i]` from
/// `addr`, in extents of the type (`types` holds one) or in bytes (a type
/// per block, Alltoallw).
#[derive(Clone, Copy)]
pub(crate) struct UserBlocks<'t> {
    addr: *mut c_void,
    pub(crate) counts: Arr,
    pub(crate) displs: Arr,
    pub(crate) types: &'t [MPI_Datatype],
}

impl<'t> UserBlocks<'t> {
    /// The blocks argument `addr`, `counts`, `displs`, `types` of a
    /// collective call.
    ///
    /// # Safety
    /// As for [`UserBuf::new`], for every block; `counts` and `displs` are
    /// NULL or address one value per rank of the group the blocks go to or
    /// come from, readable until the operation completes.
    #[inline]
    pub(crate) unsafe fn new(addr: *const c_void, counts: Arr, displs: Arr, types: &'t [MPI_Datatype]) -> Self {
        UserBlocks { addr: addr as *mut c_void, counts, displs, types }
    }

    /// The address, as the collectives' protocols use it.
    #[inline]
    pub(crate) fn addr(&self) -> *mut c_void {
        self.addr
    }

    /// The same blocks with other datatypes.
    #[inline]
    pub(crate) fn with_types<'u>(self, types: &'u [MPI_Datatype]) -> UserBlocks<'u> {
        UserBlocks { addr: self.addr, counts: self.counts, displs: self.displs, types }
    }

    /// The one datatype of a v-collective's side.
    #[inline]
    pub(crate) fn datatype(&self) -> MPI_Datatype {
        self.types[0]
    }

    /// The address, counts, displacements and (first) datatype.
    #[inline]
    pub(crate) fn parts(&self) -> (*mut c_void, Arr, Arr, MPI_Datatype) {
        (self.addr, self.counts, self.displs, self.types[0])
    }

    /// Whether the argument is `MPI_IN_PLACE`.
    #[inline]
    pub(crate) fn is_in_place(&self) -> bool {
        self.addr as usize == MPI_IN_PLACE
    }
}

/// The buffers, datatype and operation of a reduction: elements of
/// `datatype` from `send` (or `MPI_IN_PLACE`: the input is in `recv`)
/// combined with `op` into `recv`; their counts are the collective's.
#[derive(Clone, Copy)]
pub(crate) struct Reduction {
    send: *mut c_void,
    recv: *mut c_void,
    pub(crate) datatype: MPI_Datatype,
    pub(crate) op: MPI_Op,
}

impl Reduction {
    /// The reduction arguments of a collective call.
    ///
    /// # Safety
    /// As for [`UserBuf::new`], for `send` (read) and `recv` (written, and
    /// read when `send` is `MPI_IN_PLACE`), with the counts of the call.
    #[inline]
    pub(crate) unsafe fn new(send: *const c_void, recv: *mut c_void, datatype: MPI_Datatype, op: MPI_Op) -> Reduction {
        Reduction { send: send as *mut c_void, recv, datatype, op }
    }

    /// The send buffer, with `count` elements (the call's).
    #[inline]
    pub(crate) fn send_buf(&self, count: i64) -> UserBuf {
        // SAFETY: Reduction::new's contract, which is UserBuf::new's for `send`.
        unsafe { UserBuf::new(self.send, count, self.datatype) }
    }

    /// The receive buffer, with `count` elements (the call's).
    #[inline]
    pub(crate) fn recv_buf(&self, count: i64) -> UserBuf {
        // SAFETY: Reduction::new's contract, which is UserBuf::new's for `recv`.
        unsafe { UserBuf::new(self.recv, count, self.datatype) }
    }

    /// The send and receive addresses.
    #[inline]
    pub(crate) fn bufs(&self) -> (*const c_void, *mut c_void) {
        (self.send, self.recv)
    }
}

/// The root's side of a rooted collective between groups: consecutive
/// blocks of one count (Gather, Scatter) or blocks of their own counts and
/// displacements (Gatherv, Scatterv).
#[derive(Clone, Copy)]
pub(crate) enum RootBlocks<'t> {
    Even(UserBuf),
    Varying(UserBlocks<'t>),
}
