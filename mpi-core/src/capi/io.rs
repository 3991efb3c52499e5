//! Chapter 13 (I/O): opening, closing and deleting files, views, data access
//! with explicit offsets, individual and shared file pointers (blocking,
//! nonblocking, collective and split collective), and file error handlers.
//!
//! The files and their protocols are in `crate::io` (collective open,
//! close and view in `io::open`, accesses in `io::access`, two-phase
//! collective writes in `io::collective`); this module converts the C
//! arguments into typed values, calls them, and reports errors through the
//! file's error handler (`MPI_ERRORS_RETURN` unless the program sets
//! another; `MPI_FILE_NULL`'s handler for errors without a valid file, such
//! as those of `MPI_File_open` and `MPI_File_delete`).

use std::ffi::{c_void, CStr, OsStr};
use std::os::raw::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use mpi_api::abi::*;

use super::errh::check_errhandler;
use super::info::cstr;
use super::p2p::twins;
use super::pack::opt_cstr;
use super::{put_str, status_mut, Out};
use crate::bail;
use crate::io::access::{access, completed_request, ordered, split_begin, split_end, At, Direction};
use crate::io::collective::access_all;
use crate::io::open::{seek_to, OpenRequest, ViewRequest};
use crate::io::{self, datarep, File, Split};
use crate::rt::buf::UserBuf;
use crate::rt::errh::HandlerKind;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self};

/// C type of a file error handler (`MPI_File_errhandler_function`).
type FileErrFn = unsafe extern "C" fn(*mut MPI_File, *mut c_int, ...);

// ---------------------------------------------------------------------------
// Errors.

/// Invokes the error handler of file `fh` (the default file handler, that of
/// `MPI_FILE_NULL`, when `fh` is not an open file) for error `e` raised in
/// `name`; returns the code to give back.
pub(crate) fn raise_file(fh: MPI_File, name: &str, e: MpiError) -> c_int {
    let own = io::get(fh).ok().map(|f| io::lock(&f).errhandler);
    match own {
        Some(h) => raise_with(h, fh, name, e),
        None => {
            let h = rt::try_with(|st| st.comms.errors.file_default).unwrap_or(MPI_ERRORS_RETURN);
            raise_with(h, std::ptr::null_mut(), name, e)
        }
    }
}

/// Invokes error handler `h` for error `e` raised in `name` on file `fh`.
fn raise_with(h: MPI_Errhandler, fh: MPI_File, name: &str, e: MpiError) -> c_int {
    let found = rt::try_with(|st| {
        let user = if handle_kind(h) == HANDLE_KIND_DIRECT {
            st.errhandlers.get(handle_index(h) as usize).copied().flatten()
        } else {
            None
        };
        (user, st.world_rank)
    });
    // Before MPI_Init or after MPI_Finalize: just return the class.
    let Some((user, rank)) = found else { return e.class };
    match (h, user) {
        (MPI_ERRORS_RETURN, _) => e.class,
        (_, Some(f)) => {
            // SAFETY: `f` was registered by MPI_File_create_errhandler as an
            // `MPI_File_errhandler_function`; no lock is held here, so the
            // handler may call MPI.
            let f: FileErrFn = unsafe { std::mem::transmute::<usize, FileErrFn>(f) };
            let mut file = fh;
            let mut code = e.class;
            rt::entering_user_code();
            // SAFETY: both arguments point to live locals.
            unsafe { f(&mut file, &mut code) };
            e.class
        }
        _ => {
            eprintln!("Fatal error in {name} (rank {rank}): {e}");
            rt::abort(e.class, &format!("{name}: {}", e.msg))
        }
    }
}

/// Ends a call on file `fh`: `MPI_SUCCESS`, or the error through its handler.
fn file_result(fh: MPI_File, name: &str, r: MpiResult<()>) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_file(fh, name, e),
    }
}

// ---------------------------------------------------------------------------
// Opening, closing, deleting.

/// The file name as a path (`None`: the program passed NULL); ROMIO's
/// file-system prefixes (`ufs:`, `nfs:`) are accepted and dropped, as all
/// files here are POSIX files.
fn path_arg(filename: Option<&CStr>) -> MpiResult<PathBuf> {
    let Some(filename) = filename else {
        bail!(MPI_ERR_ARG, "filename is a NULL pointer");
    };
    let mut b = filename.to_bytes();
    for prefix in [&b"ufs:"[..], b"nfs:", b"file:"] {
        if let Some(rest) = b.strip_prefix(prefix) {
            b = rest;
        }
    }
    if b.is_empty() {
        bail!(MPI_ERR_BAD_FILE, "the file name is empty");
    }
    Ok(PathBuf::from(OsStr::from_bytes(b)))
}

pub unsafe fn MPI_File_open(
    comm: MPI_Comm,
    filename: *const c_char,
    amode: c_int,
    info: MPI_Info,
    fh: *mut MPI_File,
) -> c_int {
    // SAFETY: `filename` is NULL or a NUL-terminated string, `fh` NULL or a
    // writable MPI_File (the caller's contract).
    let (filename, mut fh) = unsafe { (opt_cstr(filename), Out::new(fh, "fh")) };
    // This process's checks; the open exchanges them so that all fail together.
    let request = (|| {
        if fh.is_null() {
            bail!(MPI_ERR_ARG, "fh is a NULL pointer");
        }
        let path = path_arg(filename)?;
        io::check_amode(amode)?;
        let hints = crate::rt::info::hints(info)?;
        Ok(OpenRequest { path, hints })
    })();
    // (`fh` is not NULL if the open succeeds: the request checked it.)
    let r = io::open::open(comm, amode, request).and_then(|h| fh.put(h));
    file_result(std::ptr::null_mut(), "MPI_File_open", r)
}

pub unsafe fn MPI_File_close(fh: *mut MPI_File) -> c_int {
    // SAFETY: `fh` is NULL or points to an MPI_File the call may read and
    // write (the caller's contract, an INOUT handle).
    let Some(fh) = (unsafe { fh.as_mut() }) else {
        return raise_file(std::ptr::null_mut(), "MPI_File_close", MpiError::new(MPI_ERR_ARG, "fh is a NULL pointer"));
    };
    let h = *fh;
    let f = match io::get(h) {
        Ok(f) => f,
        Err(e) => return raise_file(h, "MPI_File_close", e),
    };
    let handler = io::lock(&f).errhandler;
    let r = io::open::close(h, f);
    *fh = std::ptr::null_mut();
    match r {
        Ok(()) => MPI_SUCCESS,
        // The handle is gone: the error goes to the handler the file had.
        Err(e) => raise_with(handler, h, "MPI_File_close", e),
    }
}

pub unsafe fn MPI_File_delete(filename: *const c_char, info: MPI_Info) -> c_int {
    // SAFETY: `filename` is NULL or a NUL-terminated string (the caller's
    // contract).
    let filename = unsafe { opt_cstr(filename) };
    let r = (|| {
        let path = path_arg(filename)?;
        crate::rt::info::hints(info).map(|_| ())?;
        std::fs::remove_file(&path).map_err(|e| io::os_error(&e, &path.display().to_string()))
    })();
    file_result(std::ptr::null_mut(), "MPI_File_delete", r)
}

// ---------------------------------------------------------------------------
// File parameters.

/// Runs `f` on the open file `fh` (locked) and reports through its handler.
fn on_file(fh: MPI_File, name: &str, f: impl FnOnce(&mut File) -> MpiResult<()>) -> c_int {
    let r = io::get(fh).and_then(|file| f(&mut io::lock(&file)));
    file_result(fh, name, r)
}

/// A collective call on `fh`: `local` runs at every process (file locked),
/// then all agree on the outcome.
fn collective(fh: MPI_File, name: &str, local: impl FnOnce(&mut File) -> MpiResult<()>) -> c_int {
    let r = io::get(fh).and_then(|file| io::group::on_all(&file, local));
    file_result(fh, name, r)
}

/// Checks of `MPI_File_set_size` and `MPI_File_preallocate`.
fn resizable(f: &File, size: MPI_Offset) -> MpiResult<()> {
    if size < 0 {
        bail!(MPI_ERR_ARG, "size {size} is negative");
    }
    if f.amode & MPI_MODE_SEQUENTIAL != 0 {
        bail!(MPI_ERR_UNSUPPORTED_OPERATION, "the file was opened with MPI_MODE_SEQUENTIAL");
    }
    f.writable()
}

pub unsafe fn MPI_File_set_size(fh: MPI_File, size: MPI_Offset) -> c_int {
    collective(fh, "MPI_File_set_size", |f| {
        resizable(f, size)?;
        if f.rank == 0 {
            f.set_len(size)?;
        }
        Ok(())
    })
}

pub unsafe fn MPI_File_preallocate(fh: MPI_File, size: MPI_Offset) -> c_int {
    collective(fh, "MPI_File_preallocate", |f| {
        resizable(f, size)?;
        if f.rank == 0 && size > f.size()? {
            f.preallocate(size)?;
        }
        Ok(())
    })
}

pub unsafe fn MPI_File_get_size(fh: MPI_File, size: *mut MPI_Offset) -> c_int {
    // SAFETY: `size` is NULL or a writable MPI_Offset (the caller's contract).
    let mut size = unsafe { Out::new(size, "size") };
    on_file(fh, "MPI_File_get_size", |f| size.put(f.size()?))
}

pub unsafe fn MPI_File_sync(fh: MPI_File) -> c_int {
    collective(fh, "MPI_File_sync", |f| {
        if f.split.is_some() {
            bail!(MPI_ERR_OTHER, "a split collective on the file was begun and not ended");
        }
        if f.amode & MPI_MODE_RDONLY == 0 {
            f.sync()?;
        }
        Ok(())
    })
}

pub unsafe fn MPI_File_get_amode(fh: MPI_File, amode: *mut c_int) -> c_int {
    // SAFETY: `amode` is NULL or a writable int (the caller's contract).
    let mut amode = unsafe { Out::new(amode, "amode") };
    on_file(fh, "MPI_File_get_amode", |f| amode.put(f.amode))
}

pub unsafe fn MPI_File_get_group(fh: MPI_File, group: *mut MPI_Group) -> c_int {
    // SAFETY: `group` is NULL or a writable handle (the caller's contract).
    let mut group = unsafe { Out::new(group, "group") };
    on_file(fh, "MPI_File_get_group", |f| {
        if group.is_null() {
            bail!(MPI_ERR_ARG, "group is a NULL pointer");
        }
        let members = f.group.clone();
        let h = rt::with(|st| Ok(st.comms.groups.insert(members)))?;
        group.put(h)
    })
}

pub unsafe fn MPI_File_set_info(fh: MPI_File, info: MPI_Info) -> c_int {
    on_file(fh, "MPI_File_set_info", |f| {
        let pairs = crate::rt::info::hints(info)?;
        for (k, v) in pairs {
            crate::rt::info::set(&mut f.hints, &k, &v);
        }
        Ok(())
    })
}

pub unsafe fn MPI_File_get_info(fh: MPI_File, info_used: *mut MPI_Info) -> c_int {
    // SAFETY: `info_used` is NULL or a writable handle (the caller's contract).
    let mut info_used = unsafe { Out::new(info_used, "info_used") };
    on_file(fh, "MPI_File_get_info", |f| {
        if info_used.is_null() {
            bail!(MPI_ERR_ARG, "info_used is a NULL pointer");
        }
        let hints = f.hints.clone();
        let h = crate::rt::info::insert(hints);
        info_used.put(h)
    })
}

pub unsafe fn MPI_File_set_atomicity(fh: MPI_File, flag: c_int) -> c_int {
    let r = io::get(fh).and_then(|file| io::group::set_atomicity(&file, flag != 0));
    file_result(fh, "MPI_File_set_atomicity", r)
}

pub unsafe fn MPI_File_get_atomicity(fh: MPI_File, flag: *mut c_int) -> c_int {
    // SAFETY: `flag` is NULL or a writable int (the caller's contract).
    let mut flag = unsafe { Out::new(flag, "flag") };
    on_file(fh, "MPI_File_get_atomicity", |f| flag.put(f.atomic as c_int))
}

pub unsafe fn MPI_File_c2f(file: MPI_File) -> MPI_Fint {
    io::to_fint(file)
}

pub unsafe fn MPI_File_f2c(file: MPI_Fint) -> MPI_File {
    io::from_fint(file)
}

// ---------------------------------------------------------------------------
// Error handlers of files.

pub unsafe fn MPI_File_set_errhandler(file: MPI_File, errhandler: MPI_Errhandler) -> c_int {
    let r = rt::with(|st| check_errhandler(st, errhandler, HandlerKind::File)).and_then(|()| {
        if file.is_null() {
            // MPI_FILE_NULL: the default of files opened from now on.
            return rt::with(|st| {
                st.comms.errors.file_default = errhandler;
                Ok(())
            });
        }
        io::lock(&io::get(file)?).errhandler = errhandler;
        Ok(())
    });
    file_result(file, "MPI_File_set_errhandler", r)
}

pub unsafe fn MPI_File_get_errhandler(file: MPI_File, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: `errhandler` is NULL or a writable handle (the caller's
    // contract).
    let mut errhandler = unsafe { Out::new(errhandler, "errhandler") };
    let r = (|| {
        let h = if file.is_null() {
            rt::with(|st| Ok(st.comms.errors.file_default))?
        } else {
            io::lock(&io::get(file)?).errhandler
        };
        errhandler.put(h)
    })();
    file_result(file, "MPI_File_get_errhandler", r)
}

pub unsafe fn MPI_File_call_errhandler(fh: MPI_File, errorcode: c_int) -> c_int {
    if !fh.is_null() {
        if let Err(e) = io::get(fh) {
            return raise_file(std::ptr::null_mut(), "MPI_File_call_errhandler", e);
        }
    }
    raise_file(fh, "MPI_File_call_errhandler", MpiError::new(errorcode, "error raised by the application"));
    MPI_SUCCESS
}

// ---------------------------------------------------------------------------
// Views and positions.

pub unsafe fn MPI_File_set_view(
    fh: MPI_File,
    disp: MPI_Offset,
    etype: MPI_Datatype,
    filetype: MPI_Datatype,
    datarep: *const c_char,
    info: MPI_Info,
) -> c_int {
    // SAFETY: `datarep` is NULL (refused by set_view after the file's own
    // checks) or a NUL-terminated string (the caller's contract).
    let datarep = unsafe { opt_cstr(datarep) }.map(|s| s.to_string_lossy().into_owned());
    let request = ViewRequest { disp, etype, filetype, datarep, info };
    let r = io::get(fh).and_then(|file| io::open::set_view(&file, request));
    file_result(fh, "MPI_File_set_view", r)
}

pub unsafe fn MPI_File_get_view(
    fh: MPI_File,
    disp: *mut MPI_Offset,
    etype: *mut MPI_Datatype,
    filetype: *mut MPI_Datatype,
    datarep: *mut c_char,
) -> c_int {
    // SAFETY: `disp`, `etype` and `filetype` are NULL or writable, distinct
    // (the caller's contract).
    let (mut disp, mut etype, mut filetype) =
        unsafe { (Out::new(disp, "disp"), Out::new(etype, "etype"), Out::new(filetype, "filetype")) };
    on_file(fh, "MPI_File_get_view", |f| {
        if etype.is_null() || filetype.is_null() || datarep.is_null() || disp.is_null() {
            bail!(MPI_ERR_ARG, "an output argument is a NULL pointer");
        }
        let (et, ft) = (f.view.etype.clone(), f.view.filetype.clone());
        let (e, t) = rt::with(|st| Ok((st.types.handle_for(&et), st.types.handle_for(&ft))))?;
        disp.put(f.view.disp)?;
        etype.put(e)?;
        filetype.put(t)?;
        // SAFETY: not NULL (checked above), so a buffer of
        // MPI_MAX_DATAREP_STRING writable chars (the caller's contract).
        unsafe { put_str(datarep, MPI_MAX_DATAREP_STRING as usize, &f.view.datarep) };
        Ok(())
    })
}

pub unsafe fn MPI_File_seek(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> c_int {
    on_file(fh, "MPI_File_seek", |f| {
        f.random_access()?;
        let eof = if whence == MPI_SEEK_END { f.view.eof_offset(f.size()?) } else { 0 };
        f.pos = seek_to(f.pos, eof, offset, whence)?;
        Ok(())
    })
}

pub unsafe fn MPI_File_get_position(fh: MPI_File, offset: *mut MPI_Offset) -> c_int {
    // SAFETY: `offset` is NULL or a writable MPI_Offset (the caller's contract).
    let mut offset = unsafe { Out::new(offset, "offset") };
    on_file(fh, "MPI_File_get_position", |f| offset.put(f.pos))
}

pub unsafe fn MPI_File_seek_shared(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> c_int {
    let r = io::get(fh).and_then(|file| io::open::seek_shared(&file, offset, whence));
    file_result(fh, "MPI_File_seek_shared", r)
}

pub unsafe fn MPI_File_get_position_shared(fh: MPI_File, offset: *mut MPI_Offset) -> c_int {
    // SAFETY: `offset` is NULL or a writable MPI_Offset (the caller's contract).
    let mut offset = unsafe { Out::new(offset, "offset") };
    on_file(fh, "MPI_File_get_position_shared", |f| offset.put(f.shared()?.get()?))
}

pub unsafe fn MPI_File_get_byte_offset(fh: MPI_File, offset: MPI_Offset, disp: *mut MPI_Offset) -> c_int {
    // SAFETY: `disp` is NULL or a writable MPI_Offset (the caller's contract).
    let mut disp = unsafe { Out::new(disp, "disp") };
    on_file(fh, "MPI_File_get_byte_offset", |f| {
        if offset < 0 {
            bail!(MPI_ERR_ARG, "offset {offset} is negative");
        }
        let at = f.view.byte_position(offset * f.view.esize());
        disp.put(at)
    })
}

/// Extent of `datatype` in the file (the native representation: its extent).
fn type_extent(fh: MPI_File, datatype: MPI_Datatype) -> MpiResult<i64> {
    io::get(fh)?;
    Ok(rt::with(|st| st.types.lookup(datatype))?.extent as i64)
}

twins! {
    pub unsafe fn MPI_File_get_type_extent | MPI_File_get_type_extent_c(fh: MPI_File, datatype: MPI_Datatype, extent: *mut Offset) -> c_int {
        // SAFETY: `extent` is NULL or writable (the caller's contract).
        let mut extent = unsafe { Out::new(extent, "extent") };
        let r = type_extent(fh, datatype).and_then(|x| extent.put(x));
        file_result(fh, NAME, r)
    }
}

// ---------------------------------------------------------------------------
// Data access: each procedure makes the user's buffer a typed value, runs
// the access of its form (`crate::io::access`, `crate::io::collective`)
// and hands back the status or a complete request.

fn independent(fh: MPI_File, dir: Direction, at: At, buf: UserBuf) -> MpiResult<MPI_Status> {
    access(&io::get(fh)?, dir, at, &buf)
}

fn collective_access(fh: MPI_File, dir: Direction, at: At, buf: UserBuf) -> MpiResult<MPI_Status> {
    access_all(&io::get(fh)?, dir, at, &buf)
}

fn in_order(fh: MPI_File, dir: Direction, buf: UserBuf) -> MpiResult<MPI_Status> {
    ordered(&io::get(fh)?, dir, &buf)
}

/// Blocking access: status out (`None`: ignored), errors through the
/// file's handler.
fn blocking(name: &str, fh: MPI_File, r: MpiResult<MPI_Status>, status: Option<&mut MPI_Status>) -> c_int {
    match r {
        Ok(s) => {
            if let Some(out) = status {
                *out = s;
            }
            MPI_SUCCESS
        }
        Err(e) => raise_file(fh, name, e),
    }
}

/// Nonblocking access: done already; the request hands out the status
/// (a NULL `request` is refused).
fn immediate(name: &str, fh: MPI_File, r: MpiResult<MPI_Status>, mut request: Out<'_, MPI_Request>) -> c_int {
    let r = r.and_then(|s| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let handle = completed_request(s)?;
        request.put(handle)
    });
    file_result(fh, name, r)
}

/// `_end` of a split collective begun with `kind`.
fn end_split(name: &str, fh: MPI_File, kind: Split, status: Option<&mut MPI_Status>) -> c_int {
    blocking(name, fh, split_end(fh, kind), status)
}

// ---------------------------------------------------------------------------
// The data access procedures (one per form; bodies above).

twins! {
    pub unsafe fn MPI_File_read | MPI_File_read_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, independent(fh, Direction::Read, At::Mine, buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iread | MPI_File_iread_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        immediate(NAME, fh, independent(fh, Direction::Read, At::Mine, buf), request)
    }
}

twins! {
    pub unsafe fn MPI_File_read_at | MPI_File_read_at_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, independent(fh, Direction::Read, At::Offset(offset), buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iread_at | MPI_File_iread_at_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        immediate(NAME, fh, independent(fh, Direction::Read, At::Offset(offset), buf), request)
    }
}

twins! {
    pub unsafe fn MPI_File_read_shared | MPI_File_read_shared_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, independent(fh, Direction::Read, At::Shared, buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iread_shared | MPI_File_iread_shared_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        immediate(NAME, fh, independent(fh, Direction::Read, At::Shared, buf), request)
    }
}

twins! {
    pub unsafe fn MPI_File_read_all | MPI_File_read_all_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, collective_access(fh, Direction::Read, At::Mine, buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iread_all | MPI_File_iread_all_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        immediate(NAME, fh, independent(fh, Direction::Read, At::Mine, buf), request)
    }
}

twins! {
    pub unsafe fn MPI_File_read_all_begin | MPI_File_read_all_begin_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns, within this call (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        file_result(fh, NAME, split_begin(fh, Split::ReadAll, || collective_access(fh, Direction::Read, At::Mine, buf)))
    }
}

pub unsafe fn MPI_File_read_all_end(fh: MPI_File, _buf: *mut c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let _keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
    // caller's contract).
    let status = unsafe { status_mut(status) };
    end_split("MPI_File_read_all_end", fh, Split::ReadAll, status)
}

twins! {
    pub unsafe fn MPI_File_read_at_all | MPI_File_read_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, collective_access(fh, Direction::Read, At::Offset(offset), buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iread_at_all | MPI_File_iread_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        immediate(NAME, fh, independent(fh, Direction::Read, At::Offset(offset), buf), request)
    }
}

twins! {
    pub unsafe fn MPI_File_read_at_all_begin | MPI_File_read_at_all_begin_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns, within this call (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        file_result(fh, NAME, split_begin(fh, Split::ReadAtAll, || collective_access(fh, Direction::Read, At::Offset(offset), buf)))
    }
}

pub unsafe fn MPI_File_read_at_all_end(fh: MPI_File, _buf: *mut c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let _keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
    // caller's contract).
    let status = unsafe { status_mut(status) };
    end_split("MPI_File_read_at_all_end", fh, Split::ReadAtAll, status)
}

twins! {
    pub unsafe fn MPI_File_read_ordered | MPI_File_read_ordered_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, in_order(fh, Direction::Read, buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_read_ordered_begin | MPI_File_read_ordered_begin_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        // SAFETY: `buf` has room for `count` elements of `datatype` until the
        // access returns, within this call (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        file_result(fh, NAME, split_begin(fh, Split::ReadOrdered, || in_order(fh, Direction::Read, buf)))
    }
}

pub unsafe fn MPI_File_read_ordered_end(fh: MPI_File, _buf: *mut c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let _keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
    // caller's contract).
    let status = unsafe { status_mut(status) };
    end_split("MPI_File_read_ordered_end", fh, Split::ReadOrdered, status)
}

twins! {
    pub unsafe fn MPI_File_write | MPI_File_write_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, independent(fh, Direction::Write, At::Mine, buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iwrite | MPI_File_iwrite_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        immediate(NAME, fh, independent(fh, Direction::Write, At::Mine, buf), request)
    }
}

twins! {
    pub unsafe fn MPI_File_write_at | MPI_File_write_at_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, independent(fh, Direction::Write, At::Offset(offset), buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iwrite_at | MPI_File_iwrite_at_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        immediate(NAME, fh, independent(fh, Direction::Write, At::Offset(offset), buf), request)
    }
}

twins! {
    pub unsafe fn MPI_File_write_shared | MPI_File_write_shared_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, independent(fh, Direction::Write, At::Shared, buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iwrite_shared | MPI_File_iwrite_shared_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        immediate(NAME, fh, independent(fh, Direction::Write, At::Shared, buf), request)
    }
}

twins! {
    pub unsafe fn MPI_File_write_all | MPI_File_write_all_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, collective_access(fh, Direction::Write, At::Mine, buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iwrite_all | MPI_File_iwrite_all_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        immediate(NAME, fh, independent(fh, Direction::Write, At::Mine, buf), request)
    }
}

twins! {
    pub unsafe fn MPI_File_write_all_begin | MPI_File_write_all_begin_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns, within this call (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        file_result(fh, NAME, split_begin(fh, Split::WriteAll, || collective_access(fh, Direction::Write, At::Mine, buf)))
    }
}

pub unsafe fn MPI_File_write_all_end(fh: MPI_File, _buf: *const c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let _keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
    // caller's contract).
    let status = unsafe { status_mut(status) };
    end_split("MPI_File_write_all_end", fh, Split::WriteAll, status)
}

twins! {
    pub unsafe fn MPI_File_write_at_all | MPI_File_write_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, collective_access(fh, Direction::Write, At::Offset(offset), buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iwrite_at_all | MPI_File_iwrite_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `request` is NULL or a writable handle (the caller's contract).
        let request = unsafe { Out::new(request, "request") };
        immediate(NAME, fh, independent(fh, Direction::Write, At::Offset(offset), buf), request)
    }
}

twins! {
    pub unsafe fn MPI_File_write_at_all_begin | MPI_File_write_at_all_begin_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns, within this call (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        file_result(fh, NAME, split_begin(fh, Split::WriteAtAll, || collective_access(fh, Direction::Write, At::Offset(offset), buf)))
    }
}

pub unsafe fn MPI_File_write_at_all_end(fh: MPI_File, _buf: *const c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let _keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
    // caller's contract).
    let status = unsafe { status_mut(status) };
    end_split("MPI_File_write_at_all_end", fh, Split::WriteAtAll, status)
}

twins! {
    pub unsafe fn MPI_File_write_ordered | MPI_File_write_ordered_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
        // caller's contract).
        let status = unsafe { status_mut(status) };
        blocking(NAME, fh, in_order(fh, Direction::Write, buf), status)
    }
}

twins! {
    pub unsafe fn MPI_File_write_ordered_begin | MPI_File_write_ordered_begin_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        // SAFETY: `buf` holds `count` elements of `datatype` until the
        // access returns, within this call (the caller's contract).
        let buf = unsafe { UserBuf::new(buf, count as MPI_Count, datatype) };
        file_result(fh, NAME, split_begin(fh, Split::WriteOrdered, || in_order(fh, Direction::Write, buf)))
    }
}

pub unsafe fn MPI_File_write_ordered_end(fh: MPI_File, _buf: *const c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let _keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
    // caller's contract).
    let status = unsafe { status_mut(status) };
    end_split("MPI_File_write_ordered_end", fh, Split::WriteOrdered, status)
}

// (Not `twins!`: the large form differs in its conversion functions' type.)
pub unsafe fn MPI_Register_datarep(
    datarep: *const c_char,
    read_conversion_fn: *mut c_void,
    write_conversion_fn: *mut c_void,
    dtype_file_extent_fn: *mut c_void,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: `datarep` is NULL or a NUL-terminated string and the three
    // functions NULL or of the types the standard gives (the caller's contract).
    unsafe {
        register_datarep(
            "MPI_Register_datarep",
            datarep,
            read_conversion_fn,
            write_conversion_fn,
            dtype_file_extent_fn,
            extra_state,
            false,
        )
    }
}

pub unsafe fn MPI_Register_datarep_c(
    datarep: *const c_char,
    read_conversion_fn: *mut c_void,
    write_conversion_fn: *mut c_void,
    dtype_file_extent_fn: *mut c_void,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: `datarep` is NULL or a NUL-terminated string and the three
    // functions NULL or of the types the standard gives (the caller's contract).
    unsafe {
        register_datarep(
            "MPI_Register_datarep_c",
            datarep,
            read_conversion_fn,
            write_conversion_fn,
            dtype_file_extent_fn,
            extra_state,
            true,
        )
    }
}

/// Both forms of `MPI_Register_datarep` (`large`: the `_c` conversions).
///
/// # Safety
/// The pointers are the program's: a string and functions of the types
/// the standard names (or NULL).
unsafe fn register_datarep(
    name: &str,
    rep: *const c_char,
    read: *mut c_void,
    write: *mut c_void,
    extent: *mut c_void,
    extra: *mut c_void,
    large: bool,
) -> c_int {
    // SAFETY: a NUL-terminated string from the caller (or NULL, refused);
    // the functions as promised.
    let r =
        unsafe { cstr(rep, "datarep").and_then(|name| datarep::register(&name, read, write, extent, extra, large)) };
    // Errors of this call are raised on MPI_FILE_NULL's handler, as for
    // the other file calls without a file.
    file_result(std::ptr::null_mut(), name, r)
}
