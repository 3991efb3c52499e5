//! Independent data access (explicit offsets, the individual and the shared
//! file pointer), the ordered forms, and the completion of nonblocking and
//! split collective accesses: nonblocking accesses complete at once and
//! hand back a request that is already complete; split collectives do
//! their work at `_begin` and give the status at `_end`.

use std::sync::Arc;

use mpi_api::abi::*;

use super::datarep::{self, Datarep};
use super::group::{agree, bytes_i64, group_view_of, i64_bytes};
use super::{get, lock, File, FileRef, FileView, Split};
use crate::bail;
use crate::rt;
use crate::rt::buf::UserBuf;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::p2p::{empty_status, Kind, ReqTable, Request};

/// Where an access starts.
#[derive(Clone, Copy)]
pub(crate) enum At {
    /// An explicit offset (in etypes of the view).
    Offset(MPI_Offset),
    /// The individual file pointer.
    Mine,
    /// The shared file pointer.
    Shared,
}

/// Which way data moves.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

/// A [`UserBuf`] with its count and datatype checked against the view.
/// (The access checks them after the file's own checks, so errors come in
/// the standard's order.)
pub(crate) struct Buf {
    addr: *mut u8,
    count: usize,
    dt: Arc<Dtype>,
    /// The type's handle (for a user-defined representation's conversions).
    handle: MPI_Datatype,
}

impl Buf {
    pub(crate) fn new(user: &UserBuf, view: &FileView) -> MpiResult<Buf> {
        let esize = view.esize();
        let count = check_count(user.count)?;
        let dt = rt::with(|st| st.types.get(user.datatype))?;
        if view.datarep == "external32" {
            same_external_size(&dt, "datatype")?;
        }
        if let Some(user_rep) = user_rep(view) {
            user_rep.check(&dt, "datatype")?;
        }
        let bytes = dt.packed_size(count) as i64;
        if bytes % esize != 0 {
            bail!(
                MPI_ERR_TYPE,
                "{count} elements of the datatype ({bytes} bytes of data) are not a whole number of etypes of the view ({esize} bytes each)"
            );
        }
        Ok(Buf { addr: user.addr().cast(), count, dt, handle: user.datatype })
    }

    pub(crate) fn bytes(&self) -> usize {
        self.dt.packed_size(self.count)
    }

    /// The data, packed (borrowed from the user's buffer when contiguous).
    pub(crate) fn packed(&self) -> std::borrow::Cow<'_, [u8]> {
        let n = self.bytes();
        if n == 0 {
            return std::borrow::Cow::Borrowed(&[]);
        }
        if self.dt.contig {
            // SAFETY: a contiguous type: `count` elements are `n` bytes at
            // the buffer, valid for reading (UserBuf::new's contract).
            return std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(self.addr as *const u8, n) });
        }
        let mut packed = vec![0u8; n];
        // SAFETY: the buffer holds `count` elements of the type (UserBuf::new's contract).
        unsafe { self.dt.pack(self.addr, self.count, &mut packed) };
        std::borrow::Cow::Owned(packed)
    }
}

/// "external32" is supported for data as large there as in memory (all
/// fixed-size types; not `MPI_LONG`, `MPI_UNSIGNED_LONG`, `MPI_WCHAR`), so
/// that views keep their layout.
pub(crate) fn same_external_size(t: &Dtype, what: &str) -> MpiResult<()> {
    if t.ext_size(1) != t.size {
        bail!(
            MPI_ERR_UNSUPPORTED_DATAREP,
            "the {what} holds {} bytes natively and {} in \"external32\" (only types of the same size are supported)",
            t.size,
            t.ext_size(1)
        );
    }
    Ok(())
}

/// The registered representation of a view, if it has one.
pub(crate) fn user_rep(view: &FileView) -> Option<Datarep> {
    match view.datarep.as_str() {
        "native" | "internal" | "external32" => None,
        name => datarep::lookup(name),
    }
}

/// Moves the data of `b` at etype `start` of the view; returns the bytes
/// moved (fewer than asked only for a read that meets the end of the file).
fn transfer(f: &File, dir: Direction, start: i64, b: &Buf) -> MpiResult<usize> {
    let n = b.bytes();
    let at = start.checked_mul(f.view.esize()).ok_or_else(|| MpiError::new(MPI_ERR_ARG, "offset out of range"))?;
    if n == 0 {
        return Ok(0);
    }
    if let Some(rep) = user_rep(&f.view) {
        return transfer_user(f, dir, at, b, &rep);
    }
    if f.view.datarep == "external32" {
        let mut native = vec![0u8; n];
        let mut ext = vec![0u8; n];
        if dir == Direction::Write {
            // SAFETY: the buffer holds `count` elements of the type (UserBuf::new's contract).
            unsafe { b.dt.pack(b.addr, b.count, &mut native) };
            b.dt.native_to_ext(&native, b.count, &mut ext);
            f.write_stream(at, &ext)?;
            return Ok(n);
        }
        let got = f.read_stream(at, &mut ext)?;
        b.dt.ext_to_native(&ext, b.count, &mut native);
        // SAFETY: the buffer holds `count` elements of the type, valid for writing.
        unsafe { b.dt.unpack(&native[..got], b.addr) };
        return Ok(got);
    }
    match dir {
        Direction::Write => {
            f.write_stream(at, &b.packed())?;
            Ok(n)
        }
        Direction::Read if b.dt.contig => {
            // SAFETY: a contiguous type: `count` elements are `n` bytes at
            // the buffer, valid for writing (UserBuf::new's contract).
            let out = unsafe { std::slice::from_raw_parts_mut(b.addr, n) };
            f.read_stream(at, out)
        }
        Direction::Read => {
            let mut packed = vec![0u8; n];
            let got = f.read_stream(at, &mut packed)?;
            // SAFETY: the buffer holds `count` elements of the type, valid for writing.
            unsafe { b.dt.unpack(&packed[..got], b.addr) };
            Ok(got)
        }
    }
}

/// [`transfer`] in a representation of `MPI_Register_datarep`: the data
/// goes through the program's conversion functions (outside the runtime's
/// lock) between the user's buffer and a packed file buffer. A short read
/// converts the whole data items it got.
fn transfer_user(f: &File, dir: Direction, at: i64, b: &Buf, rep: &Datarep) -> MpiResult<usize> {
    let n = b.bytes();
    let items = (b.count * b.dt.items()) as u64;
    let mut file = vec![0u8; n];
    if dir == Direction::Write {
        // SAFETY: the buffer holds `count` elements of the type (UserBuf::new's
        // contract), which are `items` data items in `n` bytes.
        unsafe { rep.convert(false, (b.addr, &b.dt, b.handle), items, &mut file)? };
        f.write_stream(at, &file)?;
        return Ok(n);
    }
    let got = f.read_stream(at, &mut file)?;
    let whole = b.dt.whole_elements_in(got as u64);
    // SAFETY: as for writing, into the user's buffer.
    unsafe { rep.convert(true, (b.addr, &b.dt, b.handle), whole, &mut file)? };
    Ok(got)
}

/// A status telling `bytes` were accessed.
pub(crate) fn status_of(bytes: usize) -> MPI_Status {
    let mut s = empty_status();
    s.set_byte_count(bytes as u64);
    s
}

/// An independent access (also the body of the `_all` forms that do not
/// aggregate, and of the nonblocking forms).
pub(crate) fn access(file: &FileRef, dir: Direction, at: At, user: &UserBuf) -> MpiResult<MPI_Status> {
    let mut f = lock(file);
    match dir {
        Direction::Write => f.writable()?,
        Direction::Read => f.readable()?,
    }
    let b = Buf::new(user, &f.view)?;
    let etypes = (b.bytes() as i64) / f.view.esize();
    let start = match at {
        At::Offset(o) => {
            f.random_access()?;
            if o < 0 {
                bail!(MPI_ERR_ARG, "offset {o} is negative");
            }
            o
        }
        At::Mine => {
            f.random_access()?;
            f.pos
        }
        At::Shared if dir == Direction::Read => {
            // Under the pointer's lock: it moves by the whole etypes read
            // (fewer than asked at the end of the file).
            let esize = f.view.esize();
            let done = f.shared()?.update(|cur| {
                let done = transfer(&f, Direction::Read, cur, &b)?;
                Ok((cur + done as i64 / esize, done))
            })?;
            return Ok(status_of(done));
        }
        At::Shared => f.shared()?.fetch_add(etypes)?,
    };
    let done = transfer(&f, dir, start, &b)?;
    if let At::Mine = at {
        f.pos = start + done as i64 / f.view.esize();
    }
    Ok(status_of(done))
}

/// `MPI_File_read/write_ordered`: the shared file pointer moves by the sum
/// of every process's data, and each accesses its part in rank order.
pub(crate) fn ordered(file: &FileRef, dir: Direction, user: &UserBuf) -> MpiResult<MPI_Status> {
    let v = group_view_of(file)?;
    let mine = (|| {
        let f = lock(file);
        match dir {
            Direction::Write => f.writable()?,
            Direction::Read => f.readable()?,
        }
        f.shared()?;
        let b = Buf::new(user, &f.view)?;
        Ok((b.bytes() as i64 / f.view.esize(), b))
    })();
    let n = mine.as_ref().map_or(-1, |m| m.0);
    let all = v.allgather_vec(&i64_bytes(n))?;
    let counts: Vec<i64> = all.iter().map(|b| bytes_i64(b)).collect();
    let (n, b) = mine?;
    if let Some(r) = counts.iter().position(|&c| c < 0) {
        bail!(MPI_ERR_OTHER, "the ordered access failed at rank {r} of the file's group");
    }
    let total: i64 = counts.iter().sum();
    let before: i64 = counts[..v.rank].iter().sum();
    let base = if v.rank == 0 {
        let got = lock(file).shared()?.fetch_add(total);
        let reply = match &got {
            Ok(base) => i64_bytes(*base),
            Err(_) => i64_bytes(-1),
        };
        v.bcast_vec(reply, 0)?;
        got?
    } else {
        let base = bytes_i64(&v.bcast_vec(Vec::new(), 0)?);
        if base < 0 {
            bail!(MPI_ERR_IO, "rank 0 could not update the shared file pointer");
        }
        base
    };
    let (done, esize) = {
        let f = lock(file);
        (transfer(&f, dir, base + before, &b)?, f.view.esize())
    };
    if dir == Direction::Read {
        // A read that met the end of the file: the pointer ends after the
        // last etype anybody read, not after everything asked.
        let end = if done as i64 / esize < n { base + before + done as i64 / esize } else { -1 };
        let ends: Vec<i64> = v.allgather_vec(&i64_bytes(end))?.iter().map(|b| bytes_i64(b)).collect();
        if let Some(first_short) = ends.iter().position(|&e| e >= 0) {
            if v.rank == 0 {
                let r = lock(file).shared().and_then(|s| s.set(ends[first_short]));
                agree(&v, r)?;
            } else {
                agree(&v, Ok(()))?;
            }
        }
    }
    Ok(status_of(done))
}

/// A request that is complete already and hands out `status` (the
/// nonblocking forms do their work at once).
pub(crate) fn completed_request(status: MPI_Status) -> MpiResult<MPI_Request> {
    let i = rt::with(|st| {
        let mut q = Request::new(Kind::Null, MPI_COMM_WORLD);
        q.done = true;
        q.status = status;
        Ok(st.reqs.alloc(q))
    })?;
    Ok(ReqTable::handle(i))
}

/// `_begin` of a split collective: the work is done here, the status kept.
pub(crate) fn split_begin(fh: MPI_File, kind: Split, work: impl FnOnce() -> MpiResult<MPI_Status>) -> MpiResult<()> {
    let file = get(fh)?;
    if lock(&file).split.is_some() {
        bail!(MPI_ERR_OTHER, "a split collective is already active on this file");
    }
    let s = work()?;
    lock(&file).split = Some((kind, s));
    Ok(())
}

/// `_end` of a split collective begun with `kind`: its status.
pub(crate) fn split_end(fh: MPI_File, kind: Split) -> MpiResult<MPI_Status> {
    let file = get(fh)?;
    let mut f = lock(&file);
    match f.split {
        Some((k, s)) if k == kind => {
            f.split = None;
            Ok(s)
        }
        Some((k, _)) => bail!(MPI_ERR_OTHER, "the split collective begun on this file is {k:?}, not {kind:?}"),
        None => bail!(MPI_ERR_OTHER, "no split collective was begun on this file"),
    }
}
