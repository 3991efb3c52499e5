//! Chapter 13 (I/O): opening, closing and deleting files, views, data access
//! with explicit offsets, individual and shared file pointers (blocking,
//! nonblocking, collective and split collective), and file error handlers.
//!
//! The files themselves are in `crate::io`; this module checks arguments,
//! runs the collective protocols over the file's own context (agreed at
//! open, so file traffic never meets the program's messages) and reports
//! errors through the file's error handler (`MPI_ERRORS_RETURN` unless the
//! program sets another; `MPI_FILE_NULL`'s handler for errors without a
//! valid file, such as those of `MPI_File_open` and `MPI_File_delete`).
//!
//! Collective reads are each process's own (with sieving reads); collective
//! writes of many small pieces go through aggregators (two-phase), others
//! are each process's own; the ordered forms agree on offsets with one
//! exchange. Nonblocking accesses complete at once and hand back a request
//! that is already complete; split collectives do their work at `_begin`
//! and give the status at `_end`.

use std::ffi::{c_void, CStr, OsStr};
use std::os::raw::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

use mpi_api::abi::*;

use super::agree::View;
use super::comm::{comm_of, new_context, quiet};
use super::errh::check_errhandler;
use super::info::cstr;
use super::p2p::twins;
use super::{put, put_status, put_str};
use crate::bail;
use crate::io::datarep::{self, Datarep};
use crate::io::{self, File, FileRef, FileView, SharedPtr, Split};
use crate::rt::comm::CTX_SPAN_INTRA;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::errh::HandlerKind;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::p2p::{empty_status, Kind, ReqTable, Request};
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
fn fret(fh: MPI_File, name: &str, r: MpiResult<()>) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_file(fh, name, e),
    }
}

// ---------------------------------------------------------------------------
// Collective helpers over a file's group.

/// The file's group on the file's own context.
fn group_view(f: &File) -> MpiResult<View> {
    let (ctx, rank, group) = (f.ctx, f.rank, f.group.clone());
    rt::with(|st| View::new(st, ctx, rank, group))
}

/// The view of an open file, taken without keeping the file locked.
fn group_view_of(f: &FileRef) -> MpiResult<View> {
    let g = io::lock(f);
    group_view(&g)
}

/// Combines every member's outcome: this process's own error first, else
/// the error another member had (by class), else success.
fn agree(v: &View, mine: MpiResult<()>) -> MpiResult<()> {
    let c = match &mine {
        Ok(()) => 0,
        Err(e) => e.class as u32,
    };
    let worst = v.allreduce_u32(c, |a, b| a.max(b))?;
    mine?;
    if worst != 0 {
        bail!(worst as c_int, "the operation failed at another process of the file's group");
    }
    Ok(())
}

fn i64_bytes(v: i64) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

fn bytes_i64(b: &[u8]) -> i64 {
    b.get(..8).map_or(0, |s| i64::from_ne_bytes(s.try_into().unwrap()))
}

// ---------------------------------------------------------------------------
// Opening, closing, deleting.

/// The file name as a path; ROMIO's file-system prefixes (`ufs:`, `nfs:`)
/// are accepted and dropped, as all files here are POSIX files.
unsafe fn path_arg(filename: *const c_char) -> MpiResult<PathBuf> {
    if filename.is_null() {
        bail!(MPI_ERR_ARG, "filename is a NULL pointer");
    }
    let mut b = CStr::from_ptr(filename).to_bytes();
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

unsafe fn open(
    comm: MPI_Comm,
    filename: *const c_char,
    amode: c_int,
    info: MPI_Info,
    fh: *mut MPI_File,
) -> MpiResult<()> {
    let c = comm_of(comm)?;
    if c.is_inter() {
        bail!(MPI_ERR_COMM, "MPI_File_open needs an intracommunicator, and this is an intercommunicator");
    }
    quiet(comm)?;
    let (pv, host) = rt::with(|st| Ok((View::local(st, &c)?, st.processor_name.clone())))?;
    let local = (|| -> MpiResult<(PathBuf, crate::rt::info::Pairs)> {
        if fh.is_null() {
            bail!(MPI_ERR_ARG, "fh is a NULL pointer");
        }
        let path = path_arg(filename)?;
        io::check_amode(amode)?;
        let hints = rt::with(|st| st.comms.infos.get_or_null(info))?;
        Ok((path, hints))
    })();
    // Everybody's checks, access mode and host, so that all fail together.
    let mut msg = Vec::new();
    msg.extend_from_slice(&local.as_ref().err().map_or(0, |e| e.class).to_ne_bytes());
    msg.extend_from_slice(&amode.to_ne_bytes());
    msg.extend_from_slice(host.as_bytes());
    let all = pv.allgather_vec(&msg)?;
    let (path, hints) = local?;
    for (r, m) in all.iter().enumerate() {
        let class = c_int::from_ne_bytes(m[..4].try_into().unwrap());
        if class != 0 {
            bail!(class, "MPI_File_open failed at rank {r} of the communicator");
        }
        let theirs = c_int::from_ne_bytes(m[4..8].try_into().unwrap());
        if theirs != amode {
            bail!(MPI_ERR_NOT_SAME, "rank {r} opens with amode 0x{theirs:x}, this process with 0x{amode:x}");
        }
    }
    let one_host = all.iter().all(|m| &m[8..] == host.as_bytes());
    // The file's own context; the exchange above brought everybody here.
    let ctx = new_context(comm, CTX_SPAN_INTRA, true)?;
    let rank = c.rank as usize;
    let fv = rt::with(|st| View::new(st, ctx, rank, c.group.clone()))?;

    // Rank 0 opens (and creates) first and makes the shared file pointer;
    // the others open what it made.
    let (os, shared, shared_err, side) = if rank == 0 {
        let os = match io::open_path(&path, amode, true) {
            Ok(os) => os,
            Err(e) => {
                fv.bcast_vec(e.class.to_ne_bytes().to_vec(), 0)?;
                return Err(e);
            }
        };
        let init = if amode & MPI_MODE_APPEND != 0 { os.metadata().map(|m| m.len() as i64).unwrap_or(0) } else { 0 };
        let mut reply = 0i32.to_ne_bytes().to_vec();
        let out = match SharedPtr::create(&path, init, one_host) {
            Ok((s, p)) => {
                // Next to the data file: its name only, found next to the
                // file each process names (paths may differ between
                // processes); elsewhere: the whole path.
                let beside = p.parent() == Some(io::dir_of(&path));
                match (beside, p.file_name()) {
                    (true, Some(name)) => {
                        reply.push(2);
                        reply.extend_from_slice(name.as_bytes());
                    }
                    _ => {
                        reply.push(1);
                        reply.extend_from_slice(p.as_os_str().as_bytes());
                    }
                }
                (os, Some(s), None, Some(p))
            }
            Err(e) => {
                reply.push(0);
                reply.extend_from_slice(e.msg.as_bytes());
                (os, None, Some(e), None)
            }
        };
        fv.bcast_vec(reply, 0)?;
        out
    } else {
        let reply = fv.bcast_vec(Vec::new(), 0)?;
        let class = c_int::from_ne_bytes(reply[..4].try_into().unwrap());
        if class != 0 {
            bail!(class, "{} could not be opened at rank 0", path.display());
        }
        let mut mine = io::open_path(&path, amode, false);
        // A file rank 0 just created may take a moment to show on a network
        // file system.
        for _ in 0..100 {
            match &mine {
                Err(e) if e.class == MPI_ERR_NO_SUCH_FILE && amode & MPI_MODE_CREATE != 0 => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    mine = io::open_path(&path, amode, false);
                }
                _ => break,
            }
        }
        let side = OsStr::from_bytes(&reply[5..]);
        let side = if reply[4] == 2 { io::dir_of(&path).join(side) } else { PathBuf::from(side) };
        let (shared, shared_err) = if reply[4] != 0 {
            match SharedPtr::open(&side) {
                Ok(s) => (Some(s), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, Some(MpiError::new(MPI_ERR_IO, String::from_utf8_lossy(&reply[5..]).into_owned())))
        };
        let os = agree(&fv, mine.as_ref().map(|_| ()).map_err(Clone::clone)).and(mine)?;
        (os, shared, shared_err, None)
    };
    if rank == 0 {
        let r = agree(&fv, Ok(()));
        // Every process has the side file open now (or gave up): unlink it.
        if let Some(p) = &side {
            let _ = std::fs::remove_file(p);
        }
        r?;
    }
    let size = os.metadata().map(|m| m.len() as i64).unwrap_or(0);
    let byte = rt::with(|st| st.types.get(MPI_BYTE))?;
    let file_default = rt::with(|st| Ok(st.comms.errors.file_default))?;
    let f = File {
        os,
        path,
        amode,
        group: c.group.clone(),
        rank,
        ctx,
        errhandler: file_default,
        hints,
        atomic: false,
        view: FileView::bytes(byte),
        pos: if amode & MPI_MODE_APPEND != 0 { size } else { 0 },
        shared,
        shared_err,
        split: None,
    };
    *fh = io::insert(f);
    Ok(())
}

pub unsafe fn MPI_File_open(
    comm: MPI_Comm,
    filename: *const c_char,
    amode: c_int,
    info: MPI_Info,
    fh: *mut MPI_File,
) -> c_int {
    fret(std::ptr::null_mut(), "MPI_File_open", open(comm, filename, amode, info, fh))
}

pub unsafe fn MPI_File_close(fh: *mut MPI_File) -> c_int {
    if fh.is_null() {
        return raise_file(std::ptr::null_mut(), "MPI_File_close", MpiError::new(MPI_ERR_ARG, "fh is a NULL pointer"));
    }
    let h = *fh;
    let f = match io::get(h) {
        Ok(f) => f,
        Err(e) => return raise_file(h, "MPI_File_close", e),
    };
    let handler = io::lock(&f).errhandler;
    let r = close(h, f);
    *fh = std::ptr::null_mut();
    match r {
        Ok(()) => MPI_SUCCESS,
        // The handle is gone: the error goes to the handler the file had.
        Err(e) => raise_with(handler, h, "MPI_File_close", e),
    }
}

fn close(h: MPI_File, f: FileRef) -> MpiResult<()> {
    let v = group_view_of(&f)?;
    let (mine, delete, path, rank) = {
        let g = io::lock(&f);
        let mine = if g.split.is_some() {
            Err(MpiError::new(MPI_ERR_OTHER, "a split collective on the file was begun and not ended"))
        } else if g.amode & MPI_MODE_RDONLY == 0 {
            g.os.sync_all().map_err(|e| io::os_error(&e, &g.path.display().to_string()))
        } else {
            Ok(())
        };
        (mine, g.amode & MPI_MODE_DELETE_ON_CLOSE != 0, g.path.clone(), g.rank)
    };
    // Everybody has synchronized before anybody deletes.
    let r = agree(&v, mine);
    io::remove(h);
    drop(f);
    if delete && rank == 0 {
        std::fs::remove_file(&path).map_err(|e| io::os_error(&e, &path.display().to_string()))?;
    }
    r
}

pub unsafe fn MPI_File_delete(filename: *const c_char, info: MPI_Info) -> c_int {
    let r = (|| {
        let path = path_arg(filename)?;
        rt::with(|st| st.comms.infos.get_or_null(info).map(|_| ()))?;
        std::fs::remove_file(&path).map_err(|e| io::os_error(&e, &path.display().to_string()))
    })();
    fret(std::ptr::null_mut(), "MPI_File_delete", r)
}

// ---------------------------------------------------------------------------
// File parameters.

/// Runs `f` on the open file `fh` (locked) and reports through its handler.
fn on_file(fh: MPI_File, name: &str, f: impl FnOnce(&mut File) -> MpiResult<()>) -> c_int {
    let r = io::get(fh).and_then(|file| f(&mut io::lock(&file)));
    fret(fh, name, r)
}

/// A collective call on `fh`: `local` runs at every process (file locked),
/// then all agree on the outcome.
fn collective(fh: MPI_File, name: &str, local: impl FnOnce(&mut File) -> MpiResult<()>) -> c_int {
    let r = io::get(fh).and_then(|file| {
        let v = group_view_of(&file)?;
        let mine = local(&mut io::lock(&file));
        agree(&v, mine)
    });
    fret(fh, name, r)
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
            f.os.set_len(size as u64).map_err(|e| io::os_error(&e, &f.path.display().to_string()))?;
        }
        Ok(())
    })
}

pub unsafe fn MPI_File_preallocate(fh: MPI_File, size: MPI_Offset) -> c_int {
    collective(fh, "MPI_File_preallocate", |f| {
        resizable(f, size)?;
        if f.rank == 0 && size > f.size()? {
            use std::os::fd::AsRawFd;
            // SAFETY: posix_fallocate on our open descriptor.
            let rc = unsafe { libc::posix_fallocate(f.os.as_raw_fd(), 0, size) };
            if rc != 0 {
                return Err(io::os_error(&std::io::Error::from_raw_os_error(rc), &f.path.display().to_string()));
            }
        }
        Ok(())
    })
}

pub unsafe fn MPI_File_get_size(fh: MPI_File, size: *mut MPI_Offset) -> c_int {
    // SAFETY (of the closure's `put`): size is the caller's out-pointer.
    on_file(fh, "MPI_File_get_size", |f| unsafe { put(size, f.size()?, "size") })
}

pub unsafe fn MPI_File_sync(fh: MPI_File) -> c_int {
    collective(fh, "MPI_File_sync", |f| {
        if f.split.is_some() {
            bail!(MPI_ERR_OTHER, "a split collective on the file was begun and not ended");
        }
        if f.amode & MPI_MODE_RDONLY == 0 {
            f.os.sync_all().map_err(|e| io::os_error(&e, &f.path.display().to_string()))?;
        }
        Ok(())
    })
}

pub unsafe fn MPI_File_get_amode(fh: MPI_File, amode: *mut c_int) -> c_int {
    // SAFETY (of the closure's `put`): amode is the caller's out-pointer.
    on_file(fh, "MPI_File_get_amode", |f| unsafe { put(amode, f.amode, "amode") })
}

pub unsafe fn MPI_File_get_group(fh: MPI_File, group: *mut MPI_Group) -> c_int {
    on_file(fh, "MPI_File_get_group", |f| {
        if group.is_null() {
            bail!(MPI_ERR_ARG, "group is a NULL pointer");
        }
        let members = f.group.clone();
        let h = rt::with(|st| Ok(st.comms.groups.insert(members)))?;
        // SAFETY: group is the caller's out-pointer, checked above.
        unsafe { put(group, h, "group") }
    })
}

pub unsafe fn MPI_File_set_info(fh: MPI_File, info: MPI_Info) -> c_int {
    on_file(fh, "MPI_File_set_info", |f| {
        let pairs = rt::with(|st| st.comms.infos.get_or_null(info))?;
        for (k, v) in pairs {
            crate::rt::info::set(&mut f.hints, &k, &v);
        }
        Ok(())
    })
}

pub unsafe fn MPI_File_get_info(fh: MPI_File, info_used: *mut MPI_Info) -> c_int {
    on_file(fh, "MPI_File_get_info", |f| {
        if info_used.is_null() {
            bail!(MPI_ERR_ARG, "info_used is a NULL pointer");
        }
        let hints = f.hints.clone();
        let h = rt::with(|st| Ok(st.comms.infos.insert(hints)))?;
        // SAFETY: info_used is the caller's out-pointer, checked above.
        unsafe { put(info_used, h, "info_used") }
    })
}

pub unsafe fn MPI_File_set_atomicity(fh: MPI_File, flag: c_int) -> c_int {
    let r = io::get(fh).and_then(|file| {
        let v = group_view_of(&file)?;
        let all = v.allgather_vec(&[(flag != 0) as u8])?;
        if let Some(r) = all.iter().position(|b| b.first() != Some(&((flag != 0) as u8))) {
            bail!(MPI_ERR_NOT_SAME, "rank {r} of the file's group passes another atomicity flag");
        }
        io::lock(&file).atomic = flag != 0;
        Ok(())
    });
    fret(fh, "MPI_File_set_atomicity", r)
}

pub unsafe fn MPI_File_get_atomicity(fh: MPI_File, flag: *mut c_int) -> c_int {
    // SAFETY (of the closure's `put`): flag is the caller's out-pointer.
    on_file(fh, "MPI_File_get_atomicity", |f| unsafe { put(flag, f.atomic as c_int, "flag") })
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
    fret(file, "MPI_File_set_errhandler", r)
}

pub unsafe fn MPI_File_get_errhandler(file: MPI_File, errhandler: *mut MPI_Errhandler) -> c_int {
    let r = (|| {
        let h = if file.is_null() {
            rt::with(|st| Ok(st.comms.errors.file_default))?
        } else {
            io::lock(&io::get(file)?).errhandler
        };
        put(errhandler, h, "errhandler")
    })();
    fret(file, "MPI_File_get_errhandler", r)
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
    let r = io::get(fh).and_then(|file| {
        let v = group_view_of(&file)?;
        let mine = (|| {
            let mut f = io::lock(&file);
            if f.split.is_some() {
                bail!(MPI_ERR_OTHER, "a split collective on the file was begun and not ended");
            }
            if datarep.is_null() {
                bail!(MPI_ERR_ARG, "datarep is a NULL pointer");
            }
            // SAFETY: a NUL-terminated string from the caller.
            let rep = unsafe { CStr::from_ptr(datarep) }.to_string_lossy().into_owned();
            let user = datarep::lookup(&rep);
            if !matches!(rep.as_str(), "native" | "internal" | "external32") && user.is_none() {
                bail!(
                    MPI_ERR_UNSUPPORTED_DATAREP,
                    "unknown data representation \"{rep}\" (not registered with MPI_Register_datarep)"
                );
            }
            let sequential = f.amode & MPI_MODE_SEQUENTIAL != 0;
            let disp = match (disp == MPI_DISPLACEMENT_CURRENT, sequential) {
                (true, true) => {
                    let at = f.shared()?.get()?;
                    f.view.byte_position(at * f.view.esize())
                }
                (true, false) => {
                    bail!(MPI_ERR_ARG, "MPI_DISPLACEMENT_CURRENT is for files opened with MPI_MODE_SEQUENTIAL only")
                }
                (false, true) => bail!(
                    MPI_ERR_ARG,
                    "a file opened with MPI_MODE_SEQUENTIAL takes MPI_DISPLACEMENT_CURRENT as displacement"
                ),
                (false, false) => disp,
            };
            let (et, ft, pairs) =
                rt::with(|st| Ok((st.types.get(etype)?, st.types.get(filetype)?, st.comms.infos.get_or_null(info)?)))?;
            if rep == "external32" {
                same_external_size(&et, "etype")?;
                same_external_size(&ft, "filetype")?;
            }
            if let Some(user) = user {
                user.check(&et, "etype")?;
                user.check(&ft, "filetype")?;
            }
            let view = FileView::new(disp, et, ft, &rep, f.amode & MPI_MODE_RDONLY == 0)?;
            for (k, val) in pairs {
                crate::rt::info::set(&mut f.hints, &k, &val);
            }
            Ok(view)
        })();
        // Everybody's outcome, etype extent and representation (which must
        // be the same everywhere). All accesses in the old view are done
        // once everybody is here; then rank 0 resets the shared file
        // pointer, and nobody moves on before it has.
        let mut msg = mine.as_ref().err().map_or(0, |e| e.class).to_ne_bytes().to_vec();
        if let Ok(view) = &mine {
            msg.extend_from_slice(&(view.etype.extent as i64).to_ne_bytes());
            msg.extend_from_slice(view.datarep.as_bytes());
        }
        let all = v.allgather_vec(&msg)?;
        mine.as_ref().map_err(Clone::clone)?;
        for (r, m) in all.iter().enumerate() {
            let class = c_int::from_ne_bytes(m[..4].try_into().unwrap());
            if class != 0 {
                bail!(class, "MPI_File_set_view failed at rank {r} of the file's group");
            }
            if m[4..] != msg[4..] {
                bail!(
                    MPI_ERR_NOT_SAME,
                    "rank {r} of the file's group gives another etype extent or data representation"
                );
            }
        }
        let reset = {
            let mut f = io::lock(&file);
            f.view = mine?;
            f.pos = 0;
            match (&f.shared, f.rank) {
                (Some(s), 0) => s.set(0),
                _ => Ok(()),
            }
        };
        agree(&v, reset)
    });
    fret(fh, "MPI_File_set_view", r)
}

pub unsafe fn MPI_File_get_view(
    fh: MPI_File,
    disp: *mut MPI_Offset,
    etype: *mut MPI_Datatype,
    filetype: *mut MPI_Datatype,
    datarep: *mut c_char,
) -> c_int {
    on_file(fh, "MPI_File_get_view", |f| {
        if etype.is_null() || filetype.is_null() || datarep.is_null() || disp.is_null() {
            bail!(MPI_ERR_ARG, "an output argument is a NULL pointer");
        }
        let (et, ft) = (f.view.etype.clone(), f.view.filetype.clone());
        let (e, t) = rt::with(|st| Ok((st.types.handle_for(&et), st.types.handle_for(&ft))))?;
        // SAFETY: the caller's out-pointers, checked above; datarep holds
        // MPI_MAX_DATAREP_STRING bytes.
        unsafe {
            *disp = f.view.disp;
            *etype = e;
            *filetype = t;
            put_str(datarep, MPI_MAX_DATAREP_STRING as usize, &f.view.datarep);
        }
        Ok(())
    })
}

/// "external32" is supported for data as large there as in memory (all
/// fixed-size types; not `MPI_LONG`, `MPI_UNSIGNED_LONG`, `MPI_WCHAR`), so
/// that views keep their layout.
fn same_external_size(t: &Dtype, what: &str) -> MpiResult<()> {
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

/// The new offset of a seek, in etypes (`eof`: the end of file in the view).
fn seek_to(cur: i64, eof: i64, offset: MPI_Offset, whence: c_int) -> MpiResult<i64> {
    let to = match whence {
        MPI_SEEK_SET => offset,
        MPI_SEEK_CUR => cur.checked_add(offset).unwrap_or(-1),
        MPI_SEEK_END => eof.checked_add(offset).unwrap_or(-1),
        _ => bail!(MPI_ERR_ARG, "whence {whence} is none of MPI_SEEK_SET, MPI_SEEK_CUR, MPI_SEEK_END"),
    };
    if to < 0 {
        bail!(MPI_ERR_ARG, "the seek leads before the beginning of the view (offset {to})");
    }
    Ok(to)
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
    // SAFETY (of the closure's `put`): offset is the caller's out-pointer.
    on_file(fh, "MPI_File_get_position", |f| unsafe { put(offset, f.pos, "offset") })
}

pub unsafe fn MPI_File_seek_shared(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> c_int {
    let r = io::get(fh).and_then(|file| {
        let v = group_view_of(&file)?;
        // Everybody's accesses before the seek are done once all are here.
        let mine = io::lock(&file).shared().map(|_| ()).and_then(|()| seek_to(0, 0, offset.max(0), whence).map(|_| ()));
        agree(&v, mine)?;
        let mine = (|| {
            let f = io::lock(&file);
            if f.rank == 0 {
                let s = f.shared()?;
                let eof = if whence == MPI_SEEK_END { f.view.eof_offset(f.size()?) } else { 0 };
                let cur = if whence == MPI_SEEK_CUR { s.get()? } else { 0 };
                s.set(seek_to(cur, eof, offset, whence)?)?;
            }
            Ok(())
        })();
        // Nobody moves on before the pointer is set.
        agree(&v, mine)
    });
    fret(fh, "MPI_File_seek_shared", r)
}

pub unsafe fn MPI_File_get_position_shared(fh: MPI_File, offset: *mut MPI_Offset) -> c_int {
    // SAFETY (of the closure's `put`): offset is the caller's out-pointer.
    on_file(fh, "MPI_File_get_position_shared", |f| unsafe { put(offset, f.shared()?.get()?, "offset") })
}

pub unsafe fn MPI_File_get_byte_offset(fh: MPI_File, offset: MPI_Offset, disp: *mut MPI_Offset) -> c_int {
    on_file(fh, "MPI_File_get_byte_offset", |f| {
        if offset < 0 {
            bail!(MPI_ERR_ARG, "offset {offset} is negative");
        }
        let at = f.view.byte_position(offset * f.view.esize());
        // SAFETY: disp is the caller's out-pointer.
        unsafe { put(disp, at, "disp") }
    })
}

/// Extent of `datatype` in the file (the native representation: its extent).
fn type_extent(fh: MPI_File, datatype: MPI_Datatype) -> MpiResult<i64> {
    io::get(fh)?;
    Ok(rt::with(|st| st.types.lookup(datatype))?.extent as i64)
}

twins! {
    pub unsafe fn MPI_File_get_type_extent | MPI_File_get_type_extent_c(fh: MPI_File, datatype: MPI_Datatype, extent: *mut Offset) -> c_int {
        let r = type_extent(fh, datatype).and_then(|x| put(extent, x, "extent"));
        fret(fh, NAME, r)
    }
}

// ---------------------------------------------------------------------------
// Data access.

/// Where an access starts.
#[derive(Clone, Copy)]
enum At {
    /// An explicit offset (in etypes of the view).
    Offset(MPI_Offset),
    /// The individual file pointer.
    Mine,
    /// The shared file pointer.
    Shared,
}

/// The user's side of an access.
struct Buf {
    ptr: *mut u8,
    count: usize,
    dt: Arc<Dtype>,
    /// The type's handle (for a user-defined representation's conversions).
    handle: MPI_Datatype,
}

impl Buf {
    fn new(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype, view: &FileView) -> MpiResult<Buf> {
        let esize = view.esize();
        let count = check_count(count)?;
        let dt = rt::with(|st| st.types.get(datatype))?;
        if view.datarep == "external32" {
            same_external_size(&dt, "datatype")?;
        }
        if let Some(user) = user_rep(view) {
            user.check(&dt, "datatype")?;
        }
        let bytes = dt.packed_size(count) as i64;
        if bytes % esize != 0 {
            bail!(
                MPI_ERR_TYPE,
                "{count} elements of the datatype ({bytes} bytes of data) are not a whole number of etypes of the view ({esize} bytes each)"
            );
        }
        Ok(Buf { ptr: buf as *mut u8, count, dt, handle: datatype })
    }
    fn bytes(&self) -> usize {
        self.dt.packed_size(self.count)
    }
}

/// Moves the data of `b` at etype `start` of the view; returns the bytes
/// moved (fewer than asked only for a read that meets the end of the file).
fn transfer(f: &File, write: bool, start: i64, b: &Buf) -> MpiResult<usize> {
    let n = b.bytes();
    let at = start.checked_mul(f.view.esize()).ok_or_else(|| MpiError::new(MPI_ERR_ARG, "offset out of range"))?;
    if n == 0 {
        return Ok(0);
    }
    if let Some(user) = user_rep(&f.view) {
        return transfer_user(f, write, at, b, &user);
    }
    if f.view.datarep == "external32" {
        let mut native = vec![0u8; n];
        let mut ext = vec![0u8; n];
        if write {
            // SAFETY: the buffer holds `count` elements of the type (the caller's contract).
            unsafe { b.dt.pack(b.ptr, b.count, &mut native) };
            b.dt.native_to_ext(&native, b.count, &mut ext);
            f.write_stream(at, &ext)?;
            return Ok(n);
        }
        let got = f.read_stream(at, &mut ext)?;
        b.dt.ext_to_native(&ext, b.count, &mut native);
        // SAFETY: the buffer holds `count` elements of the type.
        unsafe { b.dt.unpack(&native[..got], b.ptr) };
        return Ok(got);
    }
    let direct = b.dt.contig;
    if write {
        if direct {
            // SAFETY: a contiguous type: `count` elements are `n` bytes at the buffer.
            let data = unsafe { std::slice::from_raw_parts(b.ptr as *const u8, n) };
            f.write_stream(at, data)?;
        } else {
            let mut packed = vec![0u8; n];
            // SAFETY: the buffer holds `count` elements of the type (the caller's contract).
            unsafe { b.dt.pack(b.ptr, b.count, &mut packed) };
            f.write_stream(at, &packed)?;
        }
        Ok(n)
    } else if direct {
        // SAFETY: as above, for writing into the user's buffer.
        let out = unsafe { std::slice::from_raw_parts_mut(b.ptr, n) };
        f.read_stream(at, out)
    } else {
        let mut packed = vec![0u8; n];
        let got = f.read_stream(at, &mut packed)?;
        // SAFETY: the buffer holds `count` elements of the type.
        unsafe { b.dt.unpack(&packed[..got], b.ptr) };
        Ok(got)
    }
}

/// The registered representation of a view, if it has one.
fn user_rep(view: &FileView) -> Option<Datarep> {
    match view.datarep.as_str() {
        "native" | "internal" | "external32" => None,
        name => datarep::lookup(name),
    }
}

/// [`transfer`] in a representation of `MPI_Register_datarep`: the data
/// goes through the program's conversion functions (outside the runtime's
/// lock) between the user's buffer and a packed file buffer. A short read
/// converts the whole data items it got.
fn transfer_user(f: &File, write: bool, at: i64, b: &Buf, rep: &Datarep) -> MpiResult<usize> {
    let n = b.bytes();
    let items = (b.count * b.dt.items()) as u64;
    let mut file = vec![0u8; n];
    if write {
        // SAFETY: the buffer holds `count` elements of the type (the
        // caller's contract), which are `items` data items in `n` bytes.
        unsafe { rep.convert(false, (b.ptr, &b.dt, b.handle), items, &mut file)? };
        f.write_stream(at, &file)?;
        return Ok(n);
    }
    let got = f.read_stream(at, &mut file)?;
    let whole = b.dt.whole_elements_in(got as u64);
    // SAFETY: as for writing, into the user's buffer.
    unsafe { rep.convert(true, (b.ptr, &b.dt, b.handle), whole, &mut file)? };
    Ok(got)
}

/// A status telling `bytes` were accessed.
fn status_of(bytes: usize) -> MPI_Status {
    let mut s = empty_status();
    s.set_byte_count(bytes as u64);
    s
}

/// An independent access (also the body of the `_all` forms).
fn access(
    fh: MPI_File,
    write: bool,
    at: At,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult<MPI_Status> {
    let file = io::get(fh)?;
    let mut f = io::lock(&file);
    if write {
        f.writable()?;
    } else {
        f.readable()?;
    }
    let b = Buf::new(buf, count, datatype, &f.view)?;
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
        At::Shared if !write => {
            // Under the pointer's lock: it moves by the whole etypes read
            // (fewer than asked at the end of the file).
            let esize = f.view.esize();
            let done = f.shared()?.update(|cur| {
                let done = transfer(&f, false, cur, &b)?;
                Ok((cur + done as i64 / esize, done))
            })?;
            return Ok(status_of(done));
        }
        At::Shared => f.shared()?.fetch_add(etypes)?,
    };
    let done = transfer(&f, write, start, &b)?;
    if let At::Mine = at {
        f.pos = start + done as i64 / f.view.esize();
    }
    Ok(status_of(done))
}

// ---------------------------------------------------------------------------
// Collective access through aggregators ("two-phase" I/O).

/// Average pieces per process from which a collective access goes through
/// aggregators instead of every process doing its own small transfers.
const TWO_PHASE_MIN_PIECES: u64 = 4;
/// Average piece size (bytes) below which a collective write is aggregated.
const TWO_PHASE_MAX_PIECE: u64 = 32 << 10;
/// A run of adjacent data an aggregator writes in one piece at most.
const MAX_RUN: usize = 16 << 20;

/// One process's part of a collective access.
struct Plan {
    start: i64,
    b: Buf,
    /// The file ranges of its data, in stream order.
    segs: Vec<io::view::Segment>,
    /// The `romio_cb_write` hint: 1 "enable", 2 "disable", 0 automatic.
    choice: u8,
}

/// The collective forms (`_all`). Reads are each process's own (a strided
/// view costs a few large sieving reads, see `io::File::read_pieces`). A
/// collective write whose pieces are many and small (interleaved views)
/// goes through aggregators: the file is cut into one domain per process,
/// each process sends its pieces and their data to the domains' owners, and
/// each owner writes its domain in a few large runs. Other writes, and all
/// in atomic mode, with "external32" or a registered representation, are
/// each process's own.
fn access_all(
    fh: MPI_File,
    write: bool,
    at: At,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult<MPI_Status> {
    let file = io::get(fh)?;
    let v = group_view_of(&file)?;
    if v.size() == 1 || !write {
        return access(fh, write, at, buf, count, datatype);
    }
    let plan = (|| -> MpiResult<Option<Plan>> {
        let f = io::lock(&file);
        f.writable()?;
        f.random_access()?;
        let b = Buf::new(buf, count, datatype, &f.view)?;
        let start = match at {
            At::Offset(o) if o < 0 => bail!(MPI_ERR_ARG, "offset {o} is negative"),
            At::Offset(o) => o,
            At::Mine => f.pos,
            At::Shared => bail!(MPI_ERR_INTERN, "a collective access with the shared file pointer"),
        };
        if f.atomic || f.view.datarep == "external32" || user_rep(&f.view).is_some() {
            return Ok(None);
        }
        let segs = f.view.segments(start * f.view.esize(), b.bytes() as i64);
        // ROMIO's hint: "enable" aggregates always, "disable" never.
        let choice = match crate::rt::info::get(&f.hints, "romio_cb_write") {
            Some("enable") => 1,
            Some("disable") => 2,
            _ => 0,
        };
        Ok(Some(Plan { start, b, segs, choice }))
    })();
    // Everybody's eligibility, piece count and range decide, the same way
    // everywhere, whether to aggregate.
    let (flag, nseg, lo, hi) = match &plan {
        Err(_) => (0u8, 0u64, 0i64, 0i64),
        Ok(None) => (1, 0, 0, 0),
        Ok(Some(p)) => {
            let lo = p.segs.iter().map(|s| s.0).min().unwrap_or(0);
            let hi = p.segs.iter().map(|s| s.0 + s.1 as i64).max().unwrap_or(0);
            (2, p.segs.len() as u64, lo, hi)
        }
    };
    let choice = plan.as_ref().map_or(0, |p| p.as_ref().map_or(0, |p| p.choice));
    let mut msg = vec![flag];
    msg.extend_from_slice(&nseg.to_ne_bytes());
    msg.extend_from_slice(&lo.to_ne_bytes());
    msg.extend_from_slice(&hi.to_ne_bytes());
    msg.extend_from_slice(&(plan.as_ref().map_or(0, |p| p.as_ref().map_or(0, |p| p.b.bytes())) as u64).to_ne_bytes());
    msg.push(choice);
    let all = v.allgather_vec(&msg)?;
    let field = |m: &[u8], k: usize| i64::from_ne_bytes(m[1 + 8 * k..9 + 8 * k].try_into().unwrap());
    let total: u64 = all.iter().map(|m| field(m, 0) as u64).sum();
    let bytes: u64 = all.iter().map(|m| field(m, 3) as u64).sum();
    let fragmented = total >= TWO_PHASE_MIN_PIECES * v.size() as u64 && bytes / total.max(1) < TWO_PHASE_MAX_PIECE;
    // A process's hint decides for all: "disable" first, then "enable".
    let aggregate = if all.iter().any(|m| m[33] == 2) { false } else { fragmented || all.iter().any(|m| m[33] == 1) };
    if !all.iter().all(|m| m[0] == 2) || !aggregate || total == 0 {
        drop(plan);
        return access(fh, write, at, buf, count, datatype);
    }
    let Some(p) = plan? else { bail!(MPI_ERR_INTERN, "collective access plan missing") };
    let with_data = all.iter().filter(|m| field(m, 0) > 0);
    let gmin = with_data.clone().map(|m| field(m, 1)).min().unwrap_or(0);
    let gmax = with_data.map(|m| field(m, 2)).max().unwrap_or(0);
    let doms = Domains { lo: gmin, chunk: ((gmax - gmin + v.size() as i64 - 1) / v.size() as i64).max(1), n: v.size() };
    let done = two_phase_write(&file, &v, &p, &doms)?;
    let mut f = io::lock(&file);
    if let At::Mine = at {
        f.pos = p.start + done as i64 / f.view.esize();
    }
    Ok(status_of(done))
}

/// The file cut into `n` domains of `chunk` bytes from `lo`, one per process.
struct Domains {
    lo: i64,
    chunk: i64,
    n: usize,
}

impl Domains {
    /// Splits ranges at domain boundaries: `(owner, offset, len, stream position)`.
    fn split(&self, segs: &[io::view::Segment]) -> Vec<(usize, i64, usize, usize)> {
        let mut out = Vec::with_capacity(segs.len());
        let mut pos = 0usize;
        for &(off, len) in segs {
            let (mut o, mut l) = (off, len as i64);
            while l > 0 {
                let a = (((o - self.lo) / self.chunk) as usize).min(self.n - 1);
                let end = if a == self.n - 1 { o + l } else { (self.lo + (a as i64 + 1) * self.chunk).min(o + l) };
                let k = end - o;
                out.push((a, o, k as usize, pos));
                pos += k as usize;
                o += k;
                l -= k;
            }
        }
        out
    }
}

/// Encodes ranges (and, for a write, their data after them).
fn encode_ranges(ranges: &[(i64, usize)], data: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(8 + 16 * ranges.len() + data.len());
    m.extend_from_slice(&(ranges.len() as u64).to_ne_bytes());
    for &(o, l) in ranges {
        m.extend_from_slice(&o.to_ne_bytes());
        m.extend_from_slice(&(l as u64).to_ne_bytes());
    }
    m.extend_from_slice(data);
    m
}

/// Decodes what [`encode_ranges`] made: the ranges and the data after them.
fn decode_ranges(m: &[u8]) -> (Vec<(i64, usize)>, &[u8]) {
    let n = bytes_i64(m) as usize;
    let ranges = (0..n)
        .map(|i| {
            let at = 8 + 16 * i;
            (bytes_i64(&m[at..]), bytes_i64(&m[at + 8..]) as usize)
        })
        .collect();
    (ranges, &m[(8 + 16 * n).min(m.len())..])
}

/// This process's data of the access, packed.
fn packed_data(b: &Buf) -> std::borrow::Cow<'_, [u8]> {
    let n = b.bytes();
    if n == 0 {
        return std::borrow::Cow::Borrowed(&[]);
    }
    if b.dt.contig {
        // SAFETY: a contiguous type: `count` elements are `n` bytes at the buffer.
        return std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(b.ptr as *const u8, n) });
    }
    let mut packed = vec![0u8; n];
    // SAFETY: the buffer holds `count` elements of the type (the caller's contract).
    unsafe { b.dt.pack(b.ptr, b.count, &mut packed) };
    std::borrow::Cow::Owned(packed)
}

fn two_phase_write(file: &FileRef, v: &View, p: &Plan, doms: &Domains) -> MpiResult<usize> {
    let data = packed_data(&p.b);
    let mut ranges = vec![Vec::new(); doms.n];
    let mut bytes = vec![Vec::new(); doms.n];
    for (a, o, l, pos) in doms.split(&p.segs) {
        ranges[a].push((o, l));
        bytes[a].extend_from_slice(&data[pos..pos + l]);
    }
    let out: Vec<Vec<u8>> = ranges.iter().zip(&bytes).map(|(r, d)| encode_ranges(r, d)).collect();
    drop(bytes);
    let inb = v.alltoall_vec(&out)?;
    drop(out);
    // This process's domain: every piece sent to it, by offset (later
    // senders' bytes win where pieces overlap), written in runs.
    let mut pieces: Vec<(i64, usize, &[u8])> = Vec::new();
    for m in &inb {
        let (rs, mut d) = decode_ranges(m);
        for (o, l) in rs {
            pieces.push((o, l, &d[..l]));
            d = &d[l..];
        }
    }
    pieces.sort_by_key(|x| x.0);
    let mine = (|| {
        let f = io::lock(file);
        let mut run: Vec<u8> = Vec::new();
        let mut run_lo = 0i64;
        for (o, l, d) in pieces {
            let run_hi = run_lo + run.len() as i64;
            let joins = !run.is_empty() && o <= run_hi && !(o == run_hi && run.len() >= MAX_RUN);
            if !joins {
                if !run.is_empty() {
                    f.write_at(&run, run_lo)?;
                }
                run.clear();
                run_lo = o;
            }
            let at = (o - run_lo) as usize;
            if run.len() < at + l {
                run.resize(at + l, 0);
            }
            run[at..at + l].copy_from_slice(d);
        }
        if !run.is_empty() {
            f.write_at(&run, run_lo)?;
        }
        Ok(())
    })();
    agree(v, mine)?;
    Ok(p.b.bytes())
}

/// `MPI_File_read/write_ordered`: the shared file pointer moves by the sum
/// of every process's data, and each accesses its part in rank order.
fn ordered(
    fh: MPI_File,
    write: bool,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult<MPI_Status> {
    let file = io::get(fh)?;
    let v = group_view_of(&file)?;
    let mine = (|| {
        let f = io::lock(&file);
        if write {
            f.writable()?;
        } else {
            f.readable()?;
        }
        f.shared()?;
        let b = Buf::new(buf, count, datatype, &f.view)?;
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
        let got = io::lock(&file).shared()?.fetch_add(total);
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
        let f = io::lock(&file);
        (transfer(&f, write, base + before, &b)?, f.view.esize())
    };
    if !write {
        // A read that met the end of the file: the pointer ends after the
        // last etype anybody read, not after everything asked.
        let end = if done as i64 / esize < n { base + before + done as i64 / esize } else { -1 };
        let ends: Vec<i64> = v.allgather_vec(&i64_bytes(end))?.iter().map(|b| bytes_i64(b)).collect();
        if let Some(first_short) = ends.iter().position(|&e| e >= 0) {
            if v.rank == 0 {
                let r = io::lock(&file).shared().and_then(|s| s.set(ends[first_short]));
                agree(&v, r)?;
            } else {
                agree(&v, Ok(()))?;
            }
        }
    }
    Ok(status_of(done))
}

/// Blocking access: status out, errors through the file's handler.
unsafe fn blocking(name: &str, fh: MPI_File, r: MpiResult<MPI_Status>, status: *mut MPI_Status) -> c_int {
    match r {
        Ok(s) => {
            put_status(status, &s);
            MPI_SUCCESS
        }
        Err(e) => raise_file(fh, name, e),
    }
}

/// Nonblocking access: done already; the request hands out the status.
unsafe fn immediate(name: &str, fh: MPI_File, r: MpiResult<MPI_Status>, request: *mut MPI_Request) -> c_int {
    let r = r.and_then(|s| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let i = rt::with(|st| {
            let mut q = Request::new(Kind::Null, MPI_COMM_WORLD);
            q.done = true;
            q.status = s;
            Ok(st.reqs.alloc(q))
        })?;
        *request = ReqTable::handle(i);
        Ok(())
    });
    fret(fh, name, r)
}

/// `_begin` of a split collective: the work is done here, the status kept.
fn split_begin(fh: MPI_File, kind: Split, r: impl FnOnce() -> MpiResult<MPI_Status>) -> MpiResult<()> {
    let file = io::get(fh)?;
    if io::lock(&file).split.is_some() {
        bail!(MPI_ERR_OTHER, "a split collective is already active on this file");
    }
    let s = r()?;
    io::lock(&file).split = Some((kind, s));
    Ok(())
}

/// `_end` of a split collective begun with `kind`.
unsafe fn split_end(name: &str, fh: MPI_File, kind: Split, status: *mut MPI_Status) -> c_int {
    let r = io::get(fh).and_then(|file| {
        let mut f = io::lock(&file);
        match f.split {
            Some((k, s)) if k == kind => {
                f.split = None;
                Ok(s)
            }
            Some((k, _)) => bail!(MPI_ERR_OTHER, "the split collective begun on this file is {k:?}, not {kind:?}"),
            None => bail!(MPI_ERR_OTHER, "no split collective was begun on this file"),
        }
    });
    blocking(name, fh, r, status)
}

// ---------------------------------------------------------------------------
// The data access procedures (one per form; bodies above).

twins! {
    pub unsafe fn MPI_File_read | MPI_File_read_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, access(fh, false, At::Mine, buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iread | MPI_File_iread_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        immediate(NAME, fh, access(fh, false, At::Mine, buf, count as MPI_Count, datatype), request)
    }
}

twins! {
    pub unsafe fn MPI_File_read_at | MPI_File_read_at_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, access(fh, false, At::Offset(offset), buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iread_at | MPI_File_iread_at_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        immediate(NAME, fh, access(fh, false, At::Offset(offset), buf, count as MPI_Count, datatype), request)
    }
}

twins! {
    pub unsafe fn MPI_File_read_shared | MPI_File_read_shared_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, access(fh, false, At::Shared, buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iread_shared | MPI_File_iread_shared_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        immediate(NAME, fh, access(fh, false, At::Shared, buf, count as MPI_Count, datatype), request)
    }
}

twins! {
    pub unsafe fn MPI_File_read_all | MPI_File_read_all_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, access_all(fh, false, At::Mine, buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iread_all | MPI_File_iread_all_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        immediate(NAME, fh, access(fh, false, At::Mine, buf, count as MPI_Count, datatype), request)
    }
}

twins! {
    pub unsafe fn MPI_File_read_all_begin | MPI_File_read_all_begin_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        fret(fh, NAME, split_begin(fh, Split::ReadAll, || access_all(fh, false, At::Mine, buf, count as MPI_Count, datatype)))
    }
}

pub unsafe fn MPI_File_read_all_end(fh: MPI_File, _buf: *mut c_void, status: *mut MPI_Status) -> c_int {
    split_end("MPI_File_read_all_end", fh, Split::ReadAll, status)
}

twins! {
    pub unsafe fn MPI_File_read_at_all | MPI_File_read_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, access_all(fh, false, At::Offset(offset), buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iread_at_all | MPI_File_iread_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        immediate(NAME, fh, access(fh, false, At::Offset(offset), buf, count as MPI_Count, datatype), request)
    }
}

twins! {
    pub unsafe fn MPI_File_read_at_all_begin | MPI_File_read_at_all_begin_c(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        fret(fh, NAME, split_begin(fh, Split::ReadAtAll, || access_all(fh, false, At::Offset(offset), buf, count as MPI_Count, datatype)))
    }
}

pub unsafe fn MPI_File_read_at_all_end(fh: MPI_File, _buf: *mut c_void, status: *mut MPI_Status) -> c_int {
    split_end("MPI_File_read_at_all_end", fh, Split::ReadAtAll, status)
}

twins! {
    pub unsafe fn MPI_File_read_ordered | MPI_File_read_ordered_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, ordered(fh, false, buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_read_ordered_begin | MPI_File_read_ordered_begin_c(fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        fret(fh, NAME, split_begin(fh, Split::ReadOrdered, || ordered(fh, false, buf, count as MPI_Count, datatype)))
    }
}

pub unsafe fn MPI_File_read_ordered_end(fh: MPI_File, _buf: *mut c_void, status: *mut MPI_Status) -> c_int {
    split_end("MPI_File_read_ordered_end", fh, Split::ReadOrdered, status)
}

twins! {
    pub unsafe fn MPI_File_write | MPI_File_write_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, access(fh, true, At::Mine, buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iwrite | MPI_File_iwrite_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        immediate(NAME, fh, access(fh, true, At::Mine, buf, count as MPI_Count, datatype), request)
    }
}

twins! {
    pub unsafe fn MPI_File_write_at | MPI_File_write_at_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, access(fh, true, At::Offset(offset), buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iwrite_at | MPI_File_iwrite_at_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        immediate(NAME, fh, access(fh, true, At::Offset(offset), buf, count as MPI_Count, datatype), request)
    }
}

twins! {
    pub unsafe fn MPI_File_write_shared | MPI_File_write_shared_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, access(fh, true, At::Shared, buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iwrite_shared | MPI_File_iwrite_shared_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        immediate(NAME, fh, access(fh, true, At::Shared, buf, count as MPI_Count, datatype), request)
    }
}

twins! {
    pub unsafe fn MPI_File_write_all | MPI_File_write_all_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, access_all(fh, true, At::Mine, buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iwrite_all | MPI_File_iwrite_all_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        immediate(NAME, fh, access(fh, true, At::Mine, buf, count as MPI_Count, datatype), request)
    }
}

twins! {
    pub unsafe fn MPI_File_write_all_begin | MPI_File_write_all_begin_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        fret(fh, NAME, split_begin(fh, Split::WriteAll, || access_all(fh, true, At::Mine, buf, count as MPI_Count, datatype)))
    }
}

pub unsafe fn MPI_File_write_all_end(fh: MPI_File, _buf: *const c_void, status: *mut MPI_Status) -> c_int {
    split_end("MPI_File_write_all_end", fh, Split::WriteAll, status)
}

twins! {
    pub unsafe fn MPI_File_write_at_all | MPI_File_write_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, access_all(fh, true, At::Offset(offset), buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_iwrite_at_all | MPI_File_iwrite_at_all_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) -> c_int {
        immediate(NAME, fh, access(fh, true, At::Offset(offset), buf, count as MPI_Count, datatype), request)
    }
}

twins! {
    pub unsafe fn MPI_File_write_at_all_begin | MPI_File_write_at_all_begin_c(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        fret(fh, NAME, split_begin(fh, Split::WriteAtAll, || access_all(fh, true, At::Offset(offset), buf, count as MPI_Count, datatype)))
    }
}

pub unsafe fn MPI_File_write_at_all_end(fh: MPI_File, _buf: *const c_void, status: *mut MPI_Status) -> c_int {
    split_end("MPI_File_write_at_all_end", fh, Split::WriteAtAll, status)
}

twins! {
    pub unsafe fn MPI_File_write_ordered | MPI_File_write_ordered_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) -> c_int {
        blocking(NAME, fh, ordered(fh, true, buf, count as MPI_Count, datatype), status)
    }
}

twins! {
    pub unsafe fn MPI_File_write_ordered_begin | MPI_File_write_ordered_begin_c(fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype) -> c_int {
        fret(fh, NAME, split_begin(fh, Split::WriteOrdered, || ordered(fh, true, buf, count as MPI_Count, datatype)))
    }
}

pub unsafe fn MPI_File_write_ordered_end(fh: MPI_File, _buf: *const c_void, status: *mut MPI_Status) -> c_int {
    split_end("MPI_File_write_ordered_end", fh, Split::WriteOrdered, status)
}

// (Not `twins!`: the large form differs in its conversion functions' type.)
pub unsafe fn MPI_Register_datarep(
    datarep: *const c_char,
    read_conversion_fn: *mut c_void,
    write_conversion_fn: *mut c_void,
    dtype_file_extent_fn: *mut c_void,
    extra_state: *mut c_void,
) -> c_int {
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

pub unsafe fn MPI_Register_datarep_c(
    datarep: *const c_char,
    read_conversion_fn: *mut c_void,
    write_conversion_fn: *mut c_void,
    dtype_file_extent_fn: *mut c_void,
    extra_state: *mut c_void,
) -> c_int {
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
    fret(std::ptr::null_mut(), name, r)
}
