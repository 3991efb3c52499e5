//! The collective protocols of a file's life: opening (every process
//! agrees on the outcome, rank 0 creates the file and the shared file
//! pointer first), closing, setting the view, moving the shared file
//! pointer.

use std::ffi::OsStr;
use std::os::raw::c_int;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use mpi_api::abi::*;

use super::access::same_external_size;
use super::group::{agree, group_view_of};
use super::{datarep, dir_of, insert, lock, open_path, os_error, remove, File, FileRef, FileView, SharedPtr};
use crate::bail;
use crate::rt;
use crate::rt::agree::View;
use crate::rt::comm::CTX_SPAN_INTRA;
use crate::rt::ctxid::{comm_of, new_context, quiet};
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::info::Pairs;

/// What this process asks of `MPI_File_open`, checked locally.
pub(crate) struct OpenRequest {
    pub path: PathBuf,
    pub hints: Pairs,
}

/// `MPI_File_open` on `comm` with access mode `amode`; `request` is this
/// process's checked arguments (or why they are wrong: everybody's checks
/// are exchanged, so that all fail together). Returns the new handle.
pub(crate) fn open(comm: MPI_Comm, amode: c_int, request: MpiResult<OpenRequest>) -> MpiResult<MPI_File> {
    let c = comm_of(comm)?;
    if c.is_inter() {
        bail!(MPI_ERR_COMM, "MPI_File_open needs an intracommunicator, and this is an intercommunicator");
    }
    quiet(comm)?;
    let (pv, host) = rt::with(|st| Ok((View::local(st, &c)?, st.processor_name.clone())))?;
    // Everybody's checks, access mode and host, so that all fail together.
    let mut msg = Vec::new();
    msg.extend_from_slice(&request.as_ref().err().map_or(0, |e| e.class).to_ne_bytes());
    msg.extend_from_slice(&amode.to_ne_bytes());
    msg.extend_from_slice(host.as_bytes());
    let all = pv.allgather_vec(&msg)?;
    let OpenRequest { path, hints } = request?;
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
        let os = match open_path(&path, amode, true) {
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
                let beside = p.parent() == Some(dir_of(&path));
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
        let mut mine = open_path(&path, amode, false);
        // A file rank 0 just created may take a moment to show on a network
        // file system.
        for _ in 0..100 {
            match &mine {
                Err(e) if e.class == MPI_ERR_NO_SUCH_FILE && amode & MPI_MODE_CREATE != 0 => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    mine = open_path(&path, amode, false);
                }
                _ => break,
            }
        }
        let side = OsStr::from_bytes(&reply[5..]);
        let side = if reply[4] == 2 { dir_of(&path).join(side) } else { PathBuf::from(side) };
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
    Ok(insert(f))
}

/// `MPI_File_close` of `f` (handle `h`): everybody synchronizes, then the
/// handle goes and rank 0 deletes a file opened `MPI_MODE_DELETE_ON_CLOSE`.
pub(crate) fn close(h: MPI_File, f: FileRef) -> MpiResult<()> {
    let v = group_view_of(&f)?;
    let (mine, delete, path, rank) = {
        let g = lock(&f);
        let mine = if g.split.is_some() {
            Err(MpiError::new(MPI_ERR_OTHER, "a split collective on the file was begun and not ended"))
        } else if g.amode & MPI_MODE_RDONLY == 0 {
            g.os.sync_all().map_err(|e| os_error(&e, &g.path.display().to_string()))
        } else {
            Ok(())
        };
        (mine, g.amode & MPI_MODE_DELETE_ON_CLOSE != 0, g.path.clone(), g.rank)
    };
    // Everybody has synchronized before anybody deletes.
    let r = agree(&v, mine);
    remove(h);
    drop(f);
    if delete && rank == 0 {
        std::fs::remove_file(&path).map_err(|e| os_error(&e, &path.display().to_string()))?;
    }
    r
}

/// The arguments of `MPI_File_set_view`, converted from C.
pub(crate) struct ViewRequest {
    pub disp: MPI_Offset,
    pub etype: MPI_Datatype,
    pub filetype: MPI_Datatype,
    /// The representation's name (None: the caller passed NULL).
    pub datarep: Option<String>,
    pub info: MPI_Info,
}

/// `MPI_File_set_view`: every process checks its arguments, all agree on
/// the outcome, etype extent and representation; then the views change,
/// the individual pointers go to 0 and rank 0 resets the shared one.
pub(crate) fn set_view(file: &FileRef, req: ViewRequest) -> MpiResult<()> {
    let v = group_view_of(file)?;
    let mine = (|| {
        let mut f = lock(file);
        if f.split.is_some() {
            bail!(MPI_ERR_OTHER, "a split collective on the file was begun and not ended");
        }
        let Some(rep) = req.datarep else { bail!(MPI_ERR_ARG, "datarep is a NULL pointer") };
        let user = datarep::lookup(&rep);
        if !matches!(rep.as_str(), "native" | "internal" | "external32") && user.is_none() {
            bail!(
                MPI_ERR_UNSUPPORTED_DATAREP,
                "unknown data representation \"{rep}\" (not registered with MPI_Register_datarep)"
            );
        }
        let sequential = f.amode & MPI_MODE_SEQUENTIAL != 0;
        let disp = match (req.disp == MPI_DISPLACEMENT_CURRENT, sequential) {
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
            (false, false) => req.disp,
        };
        let (et, ft, pairs) = rt::with(|st| {
            Ok((st.types.get(req.etype)?, st.types.get(req.filetype)?, crate::rt::info::hints(req.info)?))
        })?;
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
            bail!(MPI_ERR_NOT_SAME, "rank {r} of the file's group gives another etype extent or data representation");
        }
    }
    let reset = {
        let mut f = lock(file);
        f.view = mine?;
        f.pos = 0;
        match (&f.shared, f.rank) {
            (Some(s), 0) => s.set(0),
            _ => Ok(()),
        }
    };
    agree(&v, reset)
}

/// The new offset of a seek, in etypes (`eof`: the end of file in the view).
pub(crate) fn seek_to(cur: i64, eof: i64, offset: MPI_Offset, whence: c_int) -> MpiResult<i64> {
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

/// `MPI_File_seek_shared`: everybody's accesses before the seek are done
/// once all are here; rank 0 moves the pointer, and nobody moves on before
/// it has.
pub(crate) fn seek_shared(file: &FileRef, offset: MPI_Offset, whence: c_int) -> MpiResult<()> {
    let v = group_view_of(file)?;
    let mine = lock(file).shared().map(|_| ()).and_then(|()| seek_to(0, 0, offset.max(0), whence).map(|_| ()));
    agree(&v, mine)?;
    let mine = (|| {
        let f = lock(file);
        if f.rank == 0 {
            let s = f.shared()?;
            let eof = if whence == MPI_SEEK_END { f.view.eof_offset(f.size()?) } else { 0 };
            let cur = if whence == MPI_SEEK_CUR { s.get()? } else { 0 };
            s.set(seek_to(cur, eof, offset, whence)?)?;
        }
        Ok(())
    })();
    agree(&v, mine)
}
