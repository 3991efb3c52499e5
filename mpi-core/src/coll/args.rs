//! Arguments of collectives as the runtime checks them: count and
//! displacement arrays, roots, buffers, reductions, and the packed views
//! of user buffers a schedule reads and writes.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use crate::bail;
use crate::coll::parts;
use crate::coll::sched::{Packed, Reducer, Sched};
use crate::rt::buf::UserBuf;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::MpiResult;
use crate::rt::op::{self, UserOp};
use crate::rt::State;

/// An array argument of counts or displacements (`int` or large-count).
#[derive(Clone, Copy)]
pub(crate) enum Arr {
    I32(*const c_int),
    I64(*const i64),
}
impl From<*const c_int> for Arr {
    fn from(p: *const c_int) -> Arr {
        Arr::I32(p)
    }
}
impl From<*const i64> for Arr {
    fn from(p: *const i64) -> Arr {
        Arr::I64(p)
    }
}
impl Arr {
    /// The first `n` values.
    ///
    /// # Safety
    /// The pointer is NULL or addresses `n` values.
    pub(crate) unsafe fn read(self, n: usize, what: &str) -> MpiResult<Vec<i64>> {
        match self {
            // SAFETY: not NULL, so `n` readable values (this function's contract).
            Arr::I32(p) if !p.is_null() => Ok((0..n).map(|i| unsafe { *p.add(i) } as i64).collect()),
            // SAFETY: as above.
            Arr::I64(p) if !p.is_null() => Ok((0..n).map(|i| unsafe { *p.add(i) }).collect()),
            _ if n == 0 => Ok(Vec::new()),
            _ => bail!(MPI_ERR_ARG, "{what} is a NULL pointer"),
        }
    }
    /// Whether the pointer is NULL.
    pub(crate) fn is_null(self) -> bool {
        match self {
            Arr::I32(p) => p.is_null(),
            Arr::I64(p) => p.is_null(),
        }
    }

    /// Value `i`.
    ///
    /// # Safety
    /// The pointer addresses more than `i` values.
    pub(crate) unsafe fn get(self, i: usize) -> i64 {
        match self {
            // SAFETY: value `i` is readable (this function's contract).
            Arr::I32(p) => unsafe { *p.add(i) as i64 },
            // SAFETY: as above.
            Arr::I64(p) => unsafe { *p.add(i) },
        }
    }

    /// The first `n` values, each a valid count.
    ///
    /// # Safety
    /// As for [`Arr::read`].
    pub(crate) unsafe fn counts(self, n: usize, what: &str) -> MpiResult<Vec<usize>> {
        // SAFETY: this function's contract is `read`'s.
        unsafe { self.read(n, what)? }.into_iter().map(check_count).collect()
    }
}

#[inline]
pub(crate) fn in_place(p: *const c_void) -> bool {
    p as usize == MPI_IN_PLACE
}

#[inline]
pub(crate) fn check_root(root: c_int, size: usize) -> MpiResult<usize> {
    if root < 0 || root as usize >= size {
        bail!(MPI_ERR_ROOT, "invalid root {root} in a communicator of size {size}");
    }
    Ok(root as usize)
}

#[inline]
pub(crate) fn check_buf(buf: *const c_void, count: usize, dt: &Dtype, what: &str) -> MpiResult<()> {
    // Derived types may address absolute locations from MPI_BOTTOM (NULL).
    if in_place(buf) {
        bail!(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed as {what} here");
    }
    if buf.is_null() && count > 0 && dt.size > 0 && dt.contig {
        bail!(MPI_ERR_BUFFER, "{what} is NULL with count {count}");
    }
    Ok(())
}

#[inline]
pub(crate) fn no_alias(sendbuf: *const c_void, recvbuf: *const c_void, bytes: usize) -> MpiResult<()> {
    if sendbuf == recvbuf && bytes > 0 && !sendbuf.is_null() {
        bail!(MPI_ERR_BUFFER, "sendbuf and recvbuf are the same buffer (use MPI_IN_PLACE)");
    }
    Ok(())
}

/// Address of element `i` of `dt` at `buf`.
#[inline]
pub(crate) fn elem(buf: *const c_void, i: usize, dt: &Dtype) -> *mut u8 {
    (buf as *mut u8).wrapping_offset(i as isize * dt.extent)
}

/// A buffer argument with its count and type, checked.
pub(crate) fn typed(st: &mut State, buf: UserBuf, what: &str) -> MpiResult<(usize, Arc<Dtype>)> {
    let n = check_count(buf.count)?;
    let dt = st.types.get(buf.datatype)?;
    check_buf(buf.addr(), n, &dt, what)?;
    Ok((n, dt))
}

#[inline]
pub(crate) fn signature_match(mine: usize, root: usize) -> MpiResult<()> {
    if mine != root {
        bail!(MPI_ERR_TRUNCATE, "the send and receive parts of this rank differ in size ({mine} and {root} bytes)");
    }
    Ok(())
}

/// The user-defined operation behind handle `op`.
pub(crate) fn user_op(st: &State, op: MPI_Op) -> MpiResult<UserOp> {
    let i = handle_index(op) as usize;
    if handle_kind(op) == HANDLE_KIND_DIRECT && handle_obj(op) == OBJ_OP {
        if let Some(Some(u)) = st.coll.ops.get(i) {
            return Ok(*u);
        }
    }
    if op == MPI_OP_NULL {
        bail!(MPI_ERR_OP, "MPI_OP_NULL is not a valid operation");
    }
    bail!(MPI_ERR_OP, "invalid operation handle 0x{:08x}", op as u32)
}

/// How `op` reduces elements of `dt` (handle `datatype`).
pub(crate) fn reducer(st: &State, op: MPI_Op, datatype: MPI_Datatype, dt: &Arc<Dtype>) -> MpiResult<Reducer> {
    if op::is_predefined(op) {
        let Some(basic) = dt.basic else {
            bail!(MPI_ERR_OP, "predefined operations need a datatype made of a single predefined type");
        };
        op::check(op, basic)?;
        return Ok(Reducer::Builtin { op, basic });
    }
    let f = user_op(st, op)?;
    Ok(Reducer::User { f, handle: datatype, dt: dt.clone() })
}

#[inline]
pub(crate) fn typed_view(p: *const c_void, count: usize, dt: &Arc<Dtype>) -> parts::Typed {
    parts::Typed { p: p as Packed, count, dt: dt.clone() }
}

/// A buffer argument whose packed size must be `blk`.
pub(crate) fn typed_blk(st: &mut State, buf: UserBuf, blk: usize, what: &str) -> MpiResult<(usize, Arc<Dtype>)> {
    let (c, dt) = typed(st, buf, what)?;
    signature_match(dt.packed_size(c), blk)?;
    Ok((c, dt))
}

#[inline]
pub(crate) fn at(p: Packed, off: usize) -> Packed {
    p.wrapping_add(off)
}

/// Packed views of blocks `counts[i]` elements of `dts[i]` (or of the one
/// type) at `buf + displs[i]` (in bytes when `bytes_disp`, else in extents
/// of the type); block `skip` gets no view.
pub(crate) fn views(
    s: &mut Sched,
    buf: *const c_void,
    (counts, displs): (&[usize], &[i64]),
    dts: &[Arc<Dtype>],
    bytes_disp: bool,
    dir: Dir,
    skip: Option<usize>,
) -> Vec<(Packed, usize)> {
    (0..counts.len())
        .map(|i| {
            let dt = &dts[i.min(dts.len() - 1)];
            let off = if bytes_disp { displs[i] as isize } else { displs[i] as isize * dt.extent };
            let p = (buf as *mut u8).wrapping_offset(off);
            let n = dt.packed_size(counts[i]);
            if skip == Some(i) {
                return (std::ptr::null_mut(), n);
            }
            let v = match dir {
                Dir::In => s.input(p, counts[i], dt),
                Dir::Out => s.output(p, counts[i], dt),
                Dir::InOut => s.inout(p, counts[i], dt),
            };
            (v, n)
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    In,
    Out,
    InOut,
}
