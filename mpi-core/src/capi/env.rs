//! Chapter 8 (environment): start-up, shut-down, timers, version, errors.

use std::os::raw::{c_char, c_int};

use mpi_api::abi::*;

use super::{put, put_str, raise, ret, Out};
use crate::rt::{self, error::MpiError};

/// `MPI_Init(_thread)`; the thread level provided goes to `provided`
/// unless it is NULL.
///
/// # Safety
/// `provided` is NULL or a writable int.
unsafe fn init_common(name: &str, required: c_int, provided: *mut c_int) -> c_int {
    match rt::init(required) {
        Ok(p) => {
            // SAFETY: `provided` is NULL or a writable int (the contract).
            if let Some(provided) = unsafe { provided.as_mut() } {
                *provided = p;
            }
            // A spawned job meets its parent before the program goes on.
            if let Err(e) = crate::rt::dpm::connect_parent() {
                return raise(MPI_COMM_WORLD, name, e);
            }
            MPI_SUCCESS
        }
        Err(e) => {
            if rt::is_initialized() {
                return raise(MPI_COMM_WORLD, name, e);
            }
            eprintln!("Fatal error in {name}: {e}");
            std::process::exit(1);
        }
    }
}

pub unsafe fn MPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: NULL is allowed.
    unsafe { init_common("MPI_Init", MPI_THREAD_SINGLE, std::ptr::null_mut()) }
}

pub unsafe fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    if !(MPI_THREAD_SINGLE..=MPI_THREAD_MULTIPLE).contains(&required) {
        // The standard lets an implementation treat unknown levels as the
        // nearest level it supports.
    }
    // SAFETY: `provided` is NULL or a writable int (the caller's contract).
    unsafe { init_common("MPI_Init_thread", required, provided) }
}

pub unsafe fn MPI_Finalize() -> c_int {
    // Attributes on MPI_COMM_SELF are deleted first (their callbacks may
    // still call MPI), as the standard asks.
    if let Err(e) = crate::caching::finalize_attrs() {
        return raise(MPI_COMM_WORLD, "MPI_Finalize", e);
    }
    ret(MPI_COMM_WORLD, "MPI_Finalize", rt::finalize())
}

pub unsafe fn MPI_Initialized(flag: *mut c_int) -> c_int {
    // SAFETY: `flag` is NULL or a writable int (the caller's contract).
    ret(MPI_COMM_WORLD, "MPI_Initialized", unsafe { put(flag, rt::is_initialized() as c_int, "flag") })
}

pub unsafe fn MPI_Finalized(flag: *mut c_int) -> c_int {
    // SAFETY: `flag` is NULL or a writable int (the caller's contract).
    ret(MPI_COMM_WORLD, "MPI_Finalized", unsafe { put(flag, rt::is_finalized() as c_int, "flag") })
}

pub unsafe fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    let rank = rt::try_with(|st| st.world_rank).unwrap_or(0);
    let cname = rt::try_with(|st| st.comms.get(comm).map(|c| c.name.clone()).unwrap_or_default()).unwrap_or_default();
    eprintln!("MPI_Abort called on rank {rank} ({cname}) with error code {errorcode}");
    rt::abort(errorcode, &format!("MPI_Abort(error code {errorcode}) on rank {rank}"))
}

pub unsafe fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    // SAFETY: `provided` is NULL or a writable int (the caller's contract).
    let mut provided = unsafe { Out::new(provided, "provided") };
    let r = rt::with(|st| Ok(st.thread_level)).and_then(|l| provided.put(l));
    ret(MPI_COMM_WORLD, "MPI_Query_thread", r)
}

pub unsafe fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    // SAFETY: `flag` is NULL or a writable int (the caller's contract).
    let mut flag = unsafe { Out::new(flag, "flag") };
    let r = rt::with(|st| Ok(st.main_thread == std::thread::current().id())).and_then(|m| flag.put(m as c_int));
    ret(MPI_COMM_WORLD, "MPI_Is_thread_main", r)
}

pub unsafe fn MPI_Wtime() -> f64 {
    rt::wtime()
}

pub unsafe fn MPI_Wtick() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_getres writes into `ts`, a local timespec.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9).max(1e-9)
}

pub unsafe fn MPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    // SAFETY: `resultlen` is NULL or a writable int (the caller's contract).
    let mut resultlen = unsafe { Out::new(resultlen, "resultlen") };
    let r = rt::with(|st| Ok(st.processor_name.clone())).and_then(|n| {
        if name.is_null() {
            return Err(MpiError::new(MPI_ERR_ARG, "name is a NULL pointer"));
        }
        // SAFETY: not NULL, so `name` holds MPI_MAX_PROCESSOR_NAME chars (the
        // caller's contract).
        let len = unsafe { put_str(name, MPI_MAX_PROCESSOR_NAME as usize, &n) };
        resultlen.put(len)
    });
    ret(MPI_COMM_WORLD, "MPI_Get_processor_name", r)
}

pub unsafe fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    // SAFETY: `version` and `subversion` are NULL or writable ints (the
    // caller's contract).
    let (mut version, mut subversion) = unsafe { (Out::new(version, "version"), Out::new(subversion, "subversion")) };
    let r = version.put(MPI_VERSION).and_then(|()| subversion.put(MPI_SUBVERSION));
    ret(MPI_COMM_WORLD, "MPI_Get_version", r)
}

/// `MPI_Abi_get_version`: -1.-1, the standard's answer for a library
/// without the standard ABI (this one has MPICH's; `libmpi_abi.so` answers
/// 1.0).
pub unsafe fn MPI_Abi_get_version(abi_major: *mut c_int, abi_minor: *mut c_int) -> c_int {
    // SAFETY: `abi_major` and `abi_minor` are NULL or writable ints (the
    // caller's contract).
    let (mut major, mut minor) = unsafe { (Out::new(abi_major, "abi_major"), Out::new(abi_minor, "abi_minor")) };
    let r = major.put(-1).and_then(|()| minor.put(-1));
    ret(MPI_COMM_WORLD, "MPI_Abi_get_version", r)
}

/// The string `MPI_Get_library_version` returns.
pub fn library_version() -> String {
    format!(
        "mpi-core {} (Rust MPI library, MPICH ABI, MPI {}.{}), shared memory transport",
        env!("CARGO_PKG_VERSION"),
        MPI_VERSION,
        MPI_SUBVERSION
    )
}

pub unsafe fn MPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int {
    let r = if version.is_null() {
        Err(MpiError::new(MPI_ERR_ARG, "version is a NULL pointer"))
    } else {
        // SAFETY: not NULL, so `version` holds MPI_MAX_LIBRARY_VERSION_STRING
        // chars, and `resultlen` is NULL or a writable int (the caller's
        // contract).
        unsafe {
            let n = put_str(version, MPI_MAX_LIBRARY_VERSION_STRING as usize, &library_version());
            put(resultlen, n, "resultlen")
        }
    };
    ret(MPI_COMM_WORLD, "MPI_Get_library_version", r)
}

pub unsafe fn MPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
    // SAFETY: `errorclass` is NULL or a writable int (the caller's contract).
    let mut errorclass = unsafe { Out::new(errorclass, "errorclass") };
    let r = super::errh::class_of_code(errorcode).and_then(|c| errorclass.put(c));
    ret(MPI_COMM_WORLD, "MPI_Error_class", r)
}

pub unsafe fn MPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int {
    let r = if string.is_null() {
        Err(MpiError::new(MPI_ERR_ARG, "string is a NULL pointer"))
    } else {
        let s = super::errh::string_of_code(errorcode);
        // SAFETY: not NULL, so `string` holds MPI_MAX_ERROR_STRING chars, and
        // `resultlen` is NULL or a writable int (the caller's contract).
        unsafe {
            let n = put_str(string, MPI_MAX_ERROR_STRING as usize, &s);
            put(resultlen, n, "resultlen")
        }
    };
    ret(MPI_COMM_WORLD, "MPI_Error_string", r)
}

/// `MPI_Pcontrol` is variadic in C; the extra arguments are never read, and
/// on the x86-64 and AArch64 C ABIs the leading `int` arrives as it would
/// for a non-variadic function. A no-op, as the profiling chapter asks.
pub unsafe fn MPI_Pcontrol(_level: c_int) -> c_int {
    MPI_SUCCESS
}

/// `MPI_Alloc_mem`: memory from the C allocator (no special memory is
/// needed: one-sided and shared-memory transfers work on any address).
/// The info hints are checked but none is used.
pub unsafe fn MPI_Alloc_mem(size: MPI_Aint, info: MPI_Info, baseptr: *mut std::ffi::c_void) -> c_int {
    let r = (|| {
        if size < 0 {
            return Err(MpiError::new(MPI_ERR_SIZE, format!("size {size} is negative")));
        }
        if baseptr.is_null() {
            return Err(MpiError::new(MPI_ERR_ARG, "baseptr is a NULL pointer"));
        }
        crate::rt::info::hints(info).map(|_| ())?;
        // SAFETY: plain allocation; at least one byte so that the result is
        // a valid, unique pointer even for size 0.
        let p = unsafe { libc::malloc((size as usize).max(1)) };
        if p.is_null() {
            return Err(MpiError::new(MPI_ERR_NO_MEM, format!("cannot allocate {size} bytes")));
        }
        // SAFETY: `baseptr` is not NULL (checked above), so the address of
        // the caller's pointer, writable (the standard's `void *baseptr`
        // convention for MPI_Alloc_mem).
        unsafe { *(baseptr as *mut *mut std::ffi::c_void) = p };
        Ok(())
    })();
    ret(MPI_COMM_WORLD, "MPI_Alloc_mem", r)
}

/// `MPI_Free_mem` of memory from [`MPI_Alloc_mem`].
pub unsafe fn MPI_Free_mem(base: *mut std::ffi::c_void) -> c_int {
    let r = rt::with(|_| Ok(()));
    if r.is_ok() {
        // SAFETY: the standard allows only addresses MPI_Alloc_mem returned
        // (or NULL), which come from malloc.
        unsafe { libc::free(base) };
    }
    ret(MPI_COMM_WORLD, "MPI_Free_mem", r)
}
