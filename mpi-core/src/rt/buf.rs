//! Communication buffers as typed values.
//!
//! A program's buffer enters the library once, at the C boundary, through
//! [`UserBuf::new`]: an `unsafe fn` whose contract is the MPI standard's for
//! a communication buffer. Below the boundary point-to-point, collectives,
//! file access and RMA take the value instead of a pointer, a count and a
//! datatype handle each, so their functions stay safe to call.
//!
//! The datatype stays a handle in a [`UserBuf`]: each layer resolves it
//! under the state lock in the round that checks its other arguments (a
//! collective's fast path borrows the type there without moving a
//! reference count). [`TypedBuf`] is the buffer with its count checked and
//! its type resolved; [`SendData`] lends one to the engine for one send.

use std::ffi::c_void;

use mpi_api::abi::{MPI_Count, MPI_Datatype, MPI_DATATYPE_NULL, MPI_IN_PLACE};

use super::datatype::{check_count, DtRef, Dtype};
use super::error::MpiResult;
use super::State;

/// A buffer argument as the program gave it: `count` elements of the
/// datatype with handle `datatype`, laid out from `addr`. NULL is
/// `MPI_BOTTOM`, from which derived types may address absolute locations;
/// a collective's argument may also be `MPI_IN_PLACE`.
#[derive(Clone, Copy, Debug)]
pub struct UserBuf {
    addr: *mut c_void,
    pub count: MPI_Count,
    pub datatype: MPI_Datatype,
}

impl UserBuf {
    /// No buffer (an RMA operation without a result or compare buffer).
    pub const NONE: UserBuf = UserBuf { addr: std::ptr::null_mut(), count: 0, datatype: MPI_DATATYPE_NULL };

    /// The buffer argument `addr`, `count`, `datatype` of a call.
    ///
    /// # Safety
    /// Unless `addr` is `MPI_IN_PLACE`, or NULL with a datatype that holds
    /// no absolute addresses, or the count or datatype makes the buffer
    /// empty: `addr` addresses `count` elements of `datatype` (if the handle
    /// is valid) that stay lent to the library until the operation taking
    /// the buffer completes (the call returns, its request completes, or
    /// for RMA the epoch's synchronization ends it), readable for data the
    /// operation sends or writes to a file, writable for data it receives
    /// or reads. Counts and handles are checked later; this is the
    /// standard's contract for a communication buffer, which the calling
    /// program accepted.
    #[inline]
    pub unsafe fn new(addr: *const c_void, count: MPI_Count, datatype: MPI_Datatype) -> UserBuf {
        UserBuf { addr: addr as *mut c_void, count, datatype }
    }

    /// The address, as the program gave it.
    #[inline]
    pub fn addr(&self) -> *mut c_void {
        self.addr
    }

    /// Whether the argument is `MPI_IN_PLACE`.
    #[inline]
    pub fn is_in_place(&self) -> bool {
        self.addr as usize == MPI_IN_PLACE
    }

    /// The datatype to communicate with: `MPI_DATATYPE_NULL` passes as
    /// `MPI_BYTE` when nothing is sent (count 0), as in MPICH, which checks
    /// the datatype only of a positive count; programs rely on it (see
    /// mpi-core/CONFORMANCE.md).
    #[inline]
    pub fn datatype(&self) -> MPI_Datatype {
        if self.count == 0 && self.datatype == MPI_DATATYPE_NULL {
            mpi_api::abi::MPI_BYTE
        } else {
            self.datatype
        }
    }

    /// The count checked and the datatype resolved.
    #[inline]
    pub fn typed(&self, st: &mut State) -> MpiResult<TypedBuf> {
        let count = check_count(self.count)?;
        let dt = st.types.get_ref(self.datatype())?;
        Ok(TypedBuf { addr: self.addr as *mut u8, count, dt })
    }
}

/// A communication buffer with its count checked and its datatype resolved.
#[derive(Clone)]
pub struct TypedBuf {
    addr: *mut u8,
    pub count: usize,
    pub dt: DtRef,
}

impl TypedBuf {
    /// # Safety
    /// As for [`UserBuf::new`]: `addr` is NULL or addresses `count`
    /// elements of `dt` for as long as the operation runs.
    #[inline]
    pub unsafe fn new(addr: *const u8, count: usize, dt: impl Into<DtRef>) -> Self {
        TypedBuf { addr: addr as *mut u8, count, dt: dt.into() }
    }

    #[inline]
    pub fn addr(&self) -> *mut u8 {
        self.addr
    }

    /// The buffer lent to one send.
    #[inline]
    pub fn send_data(&self) -> SendData<'_> {
        SendData { addr: self.addr, count: self.count, dt: &self.dt }
    }
}

/// The data of one send as the engine takes it: `count` elements of `dt`
/// at `addr`, borrowed from the caller's buffer until the send completes.
#[derive(Clone, Copy)]
pub struct SendData<'t> {
    addr: *const u8,
    count: usize,
    dt: &'t Dtype,
}

impl<'t> SendData<'t> {
    /// # Safety
    /// `addr` is NULL with no data to send, or addresses `count` elements
    /// of `dt`, readable and unchanged until the send's request completes
    /// (which a rendezvous send does only once the receiver has the data).
    #[inline]
    pub unsafe fn new(addr: *const u8, count: usize, dt: &'t Dtype) -> Self {
        SendData { addr, count, dt }
    }

    /// The bytes `data`, sent as elements of `bytes` (a type of one byte,
    /// `MPI_BYTE`).
    ///
    /// # Safety
    /// As for [`SendData::new`]: the caller keeps `data` unchanged until the
    /// send's request completes (the borrow may end sooner).
    #[inline]
    pub unsafe fn of_bytes(data: &[u8], bytes: &'t Dtype) -> Self {
        debug_assert!(bytes.contig && bytes.size == 1);
        SendData { addr: data.as_ptr(), count: data.len(), dt: bytes }
    }

    #[inline]
    pub fn addr(&self) -> *const u8 {
        self.addr
    }

    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }

    #[inline]
    pub fn dt(&self) -> &'t Dtype {
        self.dt
    }
}
