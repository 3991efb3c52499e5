//! Chapter 8 (error handling): user error handlers on communicators, and
//! error classes, codes and strings added by the program. (The error
//! handlers of files are set, read and called in `capi/io.rs`.)

use std::ffi::c_void;
use std::os::raw::{c_char, c_int};

use mpi_api::abi::*;

use super::{raise, ret, Out};
use crate::bail;
use crate::rt::errh::HandlerKind;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self};

/// Checks that `h` is a predefined handler or a live user handler made for
/// objects of `kind`.
pub(crate) fn check_errhandler(st: &rt::State, h: MPI_Errhandler, kind: HandlerKind) -> MpiResult<()> {
    match h {
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT => Ok(()),
        _ if handle_kind(h) == HANDLE_KIND_DIRECT
            && handle_obj(h) == OBJ_ERRHANDLER
            && st.errhandlers.get(handle_index(h) as usize).is_some_and(Option::is_some) =>
        {
            match st.comms.errors.kinds.get(&handle_index(h)) {
                Some(&k) if k != kind => {
                    bail!(
                        MPI_ERR_ARG,
                        "error handler 0x{:08x} was created for {k:?} objects, not {kind:?} ones",
                        h as u32
                    )
                }
                _ => Ok(()),
            }
        }
        MPI_ERRHANDLER_NULL => bail!(MPI_ERR_ARG, "MPI_ERRHANDLER_NULL is not an error handler"),
        _ => bail!(MPI_ERR_ARG, "invalid error handler 0x{:08x}", h as u32),
    }
}

pub unsafe fn MPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    let r = rt::with(|st| {
        st.comms.get(comm)?;
        check_errhandler(st, errhandler, HandlerKind::Comm)?;
        st.comms.get_mut(comm)?.errhandler = errhandler;
        Ok(())
    });
    ret(comm, "MPI_Comm_set_errhandler", r)
}

pub unsafe fn MPI_Comm_get_errhandler(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: `errhandler` is NULL or a writable handle (the caller's contract).
    let mut errhandler = unsafe { Out::new(errhandler, "errhandler") };
    let r = rt::with(|st| {
        let h = st.comms.get(comm)?.errhandler;
        errhandler.put(h)
    });
    ret(comm, "MPI_Comm_get_errhandler", r)
}

pub unsafe fn MPI_Errhandler_set(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    // SAFETY: no pointer arguments: nothing to uphold.
    unsafe { MPI_Comm_set_errhandler(comm, errhandler) }
}

pub unsafe fn MPI_Errhandler_get(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: the same argument, with the same contract (NULL or a writable
    // handle; the caller's).
    unsafe { MPI_Comm_get_errhandler(comm, errhandler) }
}

/// Registers the program's error handler function `f` for objects of
/// `kind`; its handle goes to `errhandler`.
fn create_errhandler(name: &str, f: *mut c_void, kind: HandlerKind, mut errhandler: Out<MPI_Errhandler>) -> c_int {
    let r = rt::with(|st| {
        if f.is_null() {
            bail!(MPI_ERR_ARG, "the error handler function is NULL");
        }
        if errhandler.is_null() {
            bail!(MPI_ERR_ARG, "errhandler is a NULL pointer");
        }
        st.errhandlers.push(Some(f as usize));
        let idx = (st.errhandlers.len() - 1) as u32;
        st.comms.errors.kinds.insert(idx, kind);
        errhandler.put(make_handle(HANDLE_KIND_DIRECT, OBJ_ERRHANDLER, idx))
    });
    ret(MPI_COMM_WORLD, name, r)
}

pub unsafe fn MPI_Comm_create_errhandler(comm_errhandler_fn: *mut c_void, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: `errhandler` is NULL or a writable handle (the caller's contract).
    create_errhandler("MPI_Comm_create_errhandler", comm_errhandler_fn, HandlerKind::Comm, unsafe {
        Out::new(errhandler, "errhandler")
    })
}

pub unsafe fn MPI_Errhandler_create(function: *mut c_void, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: `errhandler` is NULL or a writable handle (the caller's contract).
    create_errhandler("MPI_Errhandler_create", function, HandlerKind::Comm, unsafe {
        Out::new(errhandler, "errhandler")
    })
}

pub unsafe fn MPI_Win_create_errhandler(win_errhandler_fn: *mut c_void, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: `errhandler` is NULL or a writable handle (the caller's contract).
    create_errhandler("MPI_Win_create_errhandler", win_errhandler_fn, HandlerKind::Win, unsafe {
        Out::new(errhandler, "errhandler")
    })
}

pub unsafe fn MPI_File_create_errhandler(file_errhandler_fn: *mut c_void, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: `errhandler` is NULL or a writable handle (the caller's contract).
    create_errhandler("MPI_File_create_errhandler", file_errhandler_fn, HandlerKind::File, unsafe {
        Out::new(errhandler, "errhandler")
    })
}

pub unsafe fn MPI_Session_create_errhandler(
    session_errhandler_fn: *mut c_void,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    // SAFETY: `errhandler` is NULL or a writable handle (the caller's contract).
    create_errhandler("MPI_Session_create_errhandler", session_errhandler_fn, HandlerKind::Session, unsafe {
        Out::new(errhandler, "errhandler")
    })
}

pub unsafe fn MPI_Errhandler_free(errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: `errhandler` is NULL or the program's handle, readable and
    // writable (the caller's contract).
    let errhandler = unsafe { errhandler.as_mut() };
    let r = rt::with(|st| {
        let Some(errhandler) = errhandler else {
            bail!(MPI_ERR_ARG, "errhandler is a NULL pointer");
        };
        let h = *errhandler;
        let kind = st.comms.errors.kinds.get(&handle_index(h)).copied().unwrap_or(HandlerKind::Comm);
        check_errhandler(st, h, kind)?;
        // User handlers stay registered while objects may use them (the
        // standard frees them only when no object refers to them).
        *errhandler = MPI_ERRHANDLER_NULL;
        Ok(())
    });
    ret(MPI_COMM_WORLD, "MPI_Errhandler_free", r)
}

pub unsafe fn MPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) -> c_int {
    if let Err(e) = rt::with(|st| st.comms.get(comm).map(|_| ())) {
        return raise(comm, "MPI_Comm_call_errhandler", e);
    }
    raise(comm, "MPI_Comm_call_errhandler", MpiError::new(errorcode, "error raised by the application"));
    MPI_SUCCESS
}

pub unsafe fn MPI_Add_error_class(errorclass: *mut c_int) -> c_int {
    // SAFETY: `errorclass` is NULL or a writable int (the caller's contract).
    let mut errorclass = unsafe { Out::new(errorclass, "errorclass") };
    let r = rt::with(|st| {
        if errorclass.is_null() {
            bail!(MPI_ERR_ARG, "errorclass is a NULL pointer");
        }
        let c = st.comms.errors.add_class()?;
        errorclass.put(c)
    });
    ret(MPI_COMM_WORLD, "MPI_Add_error_class", r)
}

pub unsafe fn MPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
    // SAFETY: `errorcode` is NULL or a writable int (the caller's contract).
    let mut errorcode = unsafe { Out::new(errorcode, "errorcode") };
    let r = rt::with(|st| {
        if errorcode.is_null() {
            bail!(MPI_ERR_ARG, "errorcode is a NULL pointer");
        }
        let c = st.comms.errors.add_code(errorclass)?;
        errorcode.put(c)
    });
    ret(MPI_COMM_WORLD, "MPI_Add_error_code", r)
}

pub unsafe fn MPI_Add_error_string(errorcode: c_int, string: *const c_char) -> c_int {
    let r = rt::with(|st| {
        if string.is_null() {
            bail!(MPI_ERR_ARG, "string is a NULL pointer");
        }
        // SAFETY: not NULL, so a NUL-terminated string (the caller's contract).
        let s = unsafe { std::ffi::CStr::from_ptr(string) }.to_string_lossy();
        st.comms.errors.set_string(errorcode, &s)
    });
    ret(MPI_COMM_WORLD, "MPI_Add_error_string", r)
}

pub unsafe fn MPI_Remove_error_class(errorclass: c_int) -> c_int {
    ret(MPI_COMM_WORLD, "MPI_Remove_error_class", rt::with(|st| st.comms.errors.remove_class(errorclass)))
}

pub unsafe fn MPI_Remove_error_code(errorcode: c_int) -> c_int {
    ret(MPI_COMM_WORLD, "MPI_Remove_error_code", rt::with(|st| st.comms.errors.remove_code(errorcode)))
}

pub unsafe fn MPI_Remove_error_string(errorcode: c_int) -> c_int {
    ret(MPI_COMM_WORLD, "MPI_Remove_error_string", rt::with(|st| st.comms.errors.remove_string(errorcode)))
}

/// Class of an error code, for `MPI_Error_class` (user codes included).
pub(crate) fn class_of_code(code: c_int) -> MpiResult<c_int> {
    let user = rt::try_with(|st| st.comms.errors.class(code)).flatten();
    match user {
        Some(c) => Ok(c),
        None if crate::rt::errh::is_predefined_class(code) => Ok(code),
        None => Err(MpiError::new(MPI_ERR_ARG, format!("{code} is not an error code"))),
    }
}

/// String of an error code, for `MPI_Error_string` (user strings included).
pub(crate) fn string_of_code(code: c_int) -> String {
    rt::try_with(|st| st.comms.errors.string(code).map(str::to_string))
        .flatten()
        .unwrap_or_else(|| crate::rt::error::class_string(code).to_string())
}
