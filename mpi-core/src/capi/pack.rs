//! Chapter 4.2: packing and unpacking, native (`MPI_Pack`, `MPI_Unpack`,
//! `MPI_Pack_size`) and "external32" (`MPI_Pack_external` and friends).
//! The conversions are `rt::datatype::pack`'s; this module checks the
//! buffers and positions the C caller gives.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;

use mpi_api::abi::*;

use super::dtype::to_int;
use super::p2p::twins;
use super::{ret, Out};
use crate::bail;
use crate::rt;
use crate::rt::datatype::pack::PackRep;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::{MpiError, MpiResult};

const WORLD: MPI_Comm = MPI_COMM_WORLD;

/// A string argument: `None` for NULL.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that does not change
/// during `'a`.
pub(super) unsafe fn opt_cstr<'a>(p: *const c_char) -> Option<&'a CStr> {
    // SAFETY: not NULL, so a NUL-terminated string (the contract).
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}

fn check_datarep(datarep: Option<&CStr>) -> MpiResult<()> {
    let Some(s) = datarep else {
        bail!(MPI_ERR_ARG, "datarep is NULL");
    };
    if s.to_bytes() != b"external32" {
        bail!(MPI_ERR_ARG, "data representation {:?} is not supported (only \"external32\")", s.to_string_lossy());
    }
    Ok(())
}

/// Reads a position argument.
fn read_pos<T: Copy + Into<i64>>(p: Option<&T>) -> MpiResult<usize> {
    let Some(&p) = p else {
        bail!(MPI_ERR_ARG, "position is a NULL pointer");
    };
    let v: i64 = p.into();
    if v < 0 {
        bail!(MPI_ERR_ARG, "negative position {v}");
    }
    Ok(v as usize)
}

/// The type (committed) and count for a pack call; `comm` must be valid.
fn pack_args(comm: Option<MPI_Comm>, datatype: MPI_Datatype, count: i64) -> MpiResult<(Arc<Dtype>, usize)> {
    rt::with(|st| {
        if let Some(c) = comm {
            st.comms.get(c)?;
        }
        let n = check_count(count)?;
        Ok((st.types.get(datatype)?, n))
    })
}

/// What a pack or unpack call moves: `count` elements of `datatype` in
/// representation `rep` (`comm`, when the call has one, must be valid).
struct Packing {
    comm: Option<MPI_Comm>,
    rep: PackRep,
    datatype: MPI_Datatype,
    count: i64,
}

/// The packed buffer of a pack or unpack call: `size` bytes at `addr`.
struct PackedBuf {
    addr: *mut u8,
    size: i64,
}

impl Packing {
    /// The type, count and bytes of the call at `pos` in `buf` (`short`:
    /// the error class when they do not fit); None if there is nothing to copy.
    fn window(&self, buf: &PackedBuf, pos: usize, short: c_int) -> MpiResult<Option<(Arc<Dtype>, usize, usize)>> {
        let (t, n) = pack_args(self.comm, self.datatype, self.count)?;
        let need = t.packed_bytes(n, self.rep);
        let bufsize = buf.size;
        if bufsize < 0 || (bufsize as u64) < pos as u64 + need as u64 {
            bail!(short, "{need} bytes at position {pos} do not fit in the {bufsize}-byte packed buffer");
        }
        if need == 0 {
            return Ok(None);
        }
        if buf.addr.is_null() {
            bail!(MPI_ERR_BUFFER, "the packed buffer is NULL");
        }
        Ok(Some((t, n, need)))
    }

    /// Packs the elements at `inbuf` at `pos` in `out`; returns the new position.
    ///
    /// # Safety
    /// `inbuf` addresses `count` elements; `out` has `size` writable bytes.
    unsafe fn pack(&self, inbuf: *const c_void, out: PackedBuf, pos: usize) -> MpiResult<usize> {
        let Some((t, n, need)) = self.window(&out, pos, MPI_ERR_ARG)? else {
            return Ok(pos);
        };
        // SAFETY: pos + need <= size bytes of the caller's output buffer.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.addr.add(pos), need) };
        // SAFETY: inbuf holds `n` elements of the type (caller).
        unsafe { t.pack_as(self.rep, inbuf as *const u8, n, dst) };
        Ok(pos + need)
    }

    /// Unpacks the elements at `pos` of `inp` into `outbuf`; returns the new position.
    ///
    /// # Safety
    /// `inp` has `size` readable bytes; `outbuf` addresses `count` elements.
    unsafe fn unpack(&self, inp: PackedBuf, pos: usize, outbuf: *mut c_void) -> MpiResult<usize> {
        let Some((t, n, need)) = self.window(&inp, pos, MPI_ERR_TRUNCATE)? else {
            return Ok(pos);
        };
        // SAFETY: pos + need <= size bytes of the caller's input buffer.
        let src = unsafe { std::slice::from_raw_parts(inp.addr.add(pos), need) };
        // SAFETY: outbuf holds `n` elements of the type (caller).
        unsafe { t.unpack_as(self.rep, src, n, outbuf as *mut u8) };
        Ok(pos + need)
    }
}

/// Runs `f` from the position `*p` (the program's INOUT position
/// variable, `None` for NULL) and stores the position it returns.
fn at_position<T: Copy + Into<i64> + TryFrom<usize>>(
    p: Option<&mut T>,
    f: impl FnOnce(usize) -> MpiResult<usize>,
) -> MpiResult<()> {
    let q = f(read_pos(p.as_deref())?)?;
    match p {
        Some(p) => write_pos(p, q),
        None => Ok(()),
    }
}

/// Writes a new position back.
fn write_pos<T: TryFrom<usize>>(p: &mut T, v: usize) -> MpiResult<()> {
    *p = T::try_from(v).map_err(|_| MpiError::new(MPI_ERR_VALUE_TOO_LARGE, format!("position {v} does not fit")))?;
    Ok(())
}

twins! {
    pub unsafe fn MPI_Pack | MPI_Pack_c(inbuf: *const c_void, incount: Count, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: Count, position: *mut Count, comm: MPI_Comm) -> c_int {
        // SAFETY: `position` is NULL or points to the program's position
        // variable, which the call reads and writes (the caller's contract).
        let position = unsafe { position.as_mut() };
        let packing = Packing { comm: Some(comm), rep: PackRep::Native, datatype, count: incount as i64 };
        let out = PackedBuf { addr: outbuf as *mut u8, size: outsize as i64 };
        let r = at_position(position, |p| {
            // SAFETY: `inbuf` holds `incount` elements of `datatype` and
            // `outbuf` has `outsize` writable bytes (the caller's contract).
            unsafe { packing.pack(inbuf, out, p) }
        });
        ret(comm, NAME, r)
    }

    pub unsafe fn MPI_Unpack | MPI_Unpack_c(inbuf: *const c_void, insize: Count, position: *mut Count, outbuf: *mut c_void, outcount: Count, datatype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: `position` is NULL or points to the program's position
        // variable, which the call reads and writes (the caller's contract).
        let position = unsafe { position.as_mut() };
        let packing = Packing { comm: Some(comm), rep: PackRep::Native, datatype, count: outcount as i64 };
        let inp = PackedBuf { addr: inbuf as *mut u8, size: insize as i64 };
        let r = at_position(position, |p| {
            // SAFETY: `inbuf` has `insize` readable bytes and `outbuf` room
            // for `outcount` elements of `datatype` (the caller's contract).
            unsafe { packing.unpack(inp, p, outbuf) }
        });
        ret(comm, NAME, r)
    }
}

fn pack_size_impl(comm: Option<MPI_Comm>, rep: PackRep, count: i64, datatype: MPI_Datatype) -> MpiResult<usize> {
    let (t, n) = pack_args(comm, datatype, count)?;
    Ok(t.packed_bytes(n, rep))
}

pub unsafe fn MPI_Pack_size(incount: c_int, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut c_int) -> c_int {
    // SAFETY: `size` is NULL or a writable int (the caller's contract).
    let mut size = unsafe { Out::new(size, "size") };
    let r = pack_size_impl(Some(comm), PackRep::Native, incount as i64, datatype)
        .and_then(|s| size.put(to_int(s as i64, "pack size")?));
    ret(comm, "MPI_Pack_size", r)
}

pub unsafe fn MPI_Pack_size_c(
    incount: MPI_Count,
    datatype: MPI_Datatype,
    comm: MPI_Comm,
    size: *mut MPI_Count,
) -> c_int {
    // SAFETY: `size` is NULL or a writable MPI_Count (the caller's contract).
    let mut size = unsafe { Out::new(size, "size") };
    let r = pack_size_impl(Some(comm), PackRep::Native, incount, datatype).and_then(|s| size.put(s as i64));
    ret(comm, "MPI_Pack_size_c", r)
}

pub unsafe fn MPI_Pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: c_int,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Aint,
    position: *mut MPI_Aint,
) -> c_int {
    // SAFETY: the same arguments under the same contract (the count
    // widened; MPI_Aint and MPI_Count are both i64).
    unsafe { MPI_Pack_external_c(datarep, inbuf, incount as i64, datatype, outbuf, outsize, position) }
}

pub unsafe fn MPI_Pack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: MPI_Count,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Count,
    position: *mut MPI_Count,
) -> c_int {
    // SAFETY: `datarep` is NULL or a NUL-terminated string, `position` NULL
    // or the program's position variable, read and written (the caller's
    // contract).
    let (datarep, position) = unsafe { (opt_cstr(datarep), position.as_mut()) };
    let packing = Packing { comm: None, rep: PackRep::External32, datatype, count: incount };
    let out = PackedBuf { addr: outbuf as *mut u8, size: outsize };
    let r = check_datarep(datarep).and_then(|()| {
        at_position(position, |p| {
            // SAFETY: `inbuf` holds `incount` elements of `datatype` and
            // `outbuf` has `outsize` writable bytes (the caller's contract).
            unsafe { packing.pack(inbuf, out, p) }
        })
    });
    ret(WORLD, "MPI_Pack_external", r)
}

pub unsafe fn MPI_Unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Aint,
    position: *mut MPI_Aint,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    // SAFETY: the same arguments under the same contract (the count
    // widened; MPI_Aint and MPI_Count are both i64).
    unsafe { MPI_Unpack_external_c(datarep, inbuf, insize, position, outbuf, outcount as i64, datatype) }
}

pub unsafe fn MPI_Unpack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Count,
    position: *mut MPI_Count,
    outbuf: *mut c_void,
    outcount: MPI_Count,
    datatype: MPI_Datatype,
) -> c_int {
    // SAFETY: `datarep` is NULL or a NUL-terminated string, `position` NULL
    // or the program's position variable, read and written (the caller's
    // contract).
    let (datarep, position) = unsafe { (opt_cstr(datarep), position.as_mut()) };
    let packing = Packing { comm: None, rep: PackRep::External32, datatype, count: outcount };
    let inp = PackedBuf { addr: inbuf as *mut u8, size: insize };
    let r = check_datarep(datarep).and_then(|()| {
        at_position(position, |p| {
            // SAFETY: `inbuf` has `insize` readable bytes and `outbuf` room
            // for `outcount` elements of `datatype` (the caller's contract).
            unsafe { packing.unpack(inp, p, outbuf) }
        })
    });
    ret(WORLD, "MPI_Unpack_external", r)
}

pub unsafe fn MPI_Pack_external_size(
    datarep: *const c_char,
    incount: c_int,
    datatype: MPI_Datatype,
    size: *mut MPI_Aint,
) -> c_int {
    // SAFETY: the same arguments under the same contract (the count
    // widened; MPI_Aint and MPI_Count are both i64).
    unsafe { MPI_Pack_external_size_c(datarep, incount as i64, datatype, size) }
}

pub unsafe fn MPI_Pack_external_size_c(
    datarep: *const c_char,
    incount: MPI_Count,
    datatype: MPI_Datatype,
    size: *mut MPI_Count,
) -> c_int {
    // SAFETY: `datarep` is NULL or a NUL-terminated string, `size` NULL or
    // a writable MPI_Count (the caller's contract).
    let (datarep, mut size) = unsafe { (opt_cstr(datarep), Out::new(size, "size")) };
    let r = check_datarep(datarep)
        .and_then(|()| pack_size_impl(None, PackRep::External32, incount, datatype))
        .and_then(|s| size.put(s as i64));
    ret(WORLD, "MPI_Pack_external_size", r)
}
