//! The standard-ABI procedures no conversion rule covers: those taking a
//! program's callback (the library calls it with MPICH handles, codes and
//! statuses, so it gets a trampoline that converts them), the handle
//! conversions `MPI_X_toint`/`MPI_X_fromint`, `MPI_Abi_get_version` and
//! `MPI_Pcontrol` (C-variadic). The generated `PMPI_X` of each calls the
//! function of the same name here inside the panic guard.
//!
//! Callbacks without an `extra_state` (reduction operations and error
//! handlers) get one trampoline each from a fixed pool (`pools.rs`,
//! generated: the trampoline's index in the pool says which program
//! function it calls); the pool's size bounds how many of them a process
//! creates (`POOL`), and creating one more fails with `MPI_ERR_INTERN`.
//! Callbacks with an `extra_state` (attribute copy and delete, generalized
//! requests, data representations) get the program's functions and state
//! in a box passed as the library's `extra_state`.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicUsize, Ordering};

use mpi_api::abi::{MPI_Count, MPI_Status as MpichStatus};
use mpi_api::stdabi::{self, MPI_Status as StdStatus};

use crate::{cv, lib, missing, stdabi_err};

/// How many reduction operations (and error handlers of each kind) a
/// process can create.
pub const POOL: usize = 256;

type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut usize);
type UserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut usize);
type ErrFn = unsafe extern "C" fn(*mut usize, *mut c_int, ...);
type OpTramp = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_int);
type OpTrampC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut c_int);
type ErrTramp = unsafe extern "C" fn(*mut c_int, *mut c_int);
type FileErrTramp = unsafe extern "C" fn(*mut *mut c_void, *mut c_int);

/// The program's functions behind the trampolines, by pool and index.
static OPS: [AtomicUsize; POOL] = [const { AtomicUsize::new(0) }; POOL];
static OPS_C: [AtomicUsize; POOL] = [const { AtomicUsize::new(0) }; POOL];
static COMM_EH: [AtomicUsize; POOL] = [const { AtomicUsize::new(0) }; POOL];
static WIN_EH: [AtomicUsize; POOL] = [const { AtomicUsize::new(0) }; POOL];
static SESSION_EH: [AtomicUsize; POOL] = [const { AtomicUsize::new(0) }; POOL];
static FILE_EH: [AtomicUsize; POOL] = [const { AtomicUsize::new(0) }; POOL];

include!(concat!(env!("OUT_DIR"), "/pools.rs"));

/// Takes a free slot of `pool` for the program's function `f`.
fn take_slot(pool: &[AtomicUsize; POOL], f: usize) -> Option<usize> {
    (0..POOL).find(|&i| pool[i].compare_exchange(0, f, Ordering::AcqRel, Ordering::Relaxed).is_ok())
}

unsafe extern "C" fn op_tramp<const I: usize>(a: *mut c_void, b: *mut c_void, len: *mut c_int, dt: *mut c_int) {
    // SAFETY: slot `I` holds the program's `MPI_User_function` (set before
    // the operation existed); `dt` points to the call's datatype.
    unsafe {
        let f: UserFn = std::mem::transmute::<usize, UserFn>(OPS[I].load(Ordering::Acquire));
        let mut sdt = cv::datatype_out(*dt);
        f(a, b, len, &mut sdt);
    }
}

unsafe extern "C" fn op_tramp_c<const I: usize>(a: *mut c_void, b: *mut c_void, len: *mut MPI_Count, dt: *mut c_int) {
    // SAFETY: as `op_tramp`, with `MPI_User_function_c`.
    unsafe {
        let f: UserFnC = std::mem::transmute::<usize, UserFnC>(OPS_C[I].load(Ordering::Acquire));
        let mut sdt = cv::datatype_out(*dt);
        f(a, b, len, &mut sdt);
    }
}

/// An error handler's trampoline for integer handles (`conv` converts the
/// handle to the standard's).
///
/// # Safety
/// `slot` holds the program's error handler function; `h` and `code` point
/// to the handle and the error code.
unsafe fn call_errhandler(slot: &AtomicUsize, h: usize, code: *mut c_int) {
    // SAFETY: the slot holds the program's `MPI_X_errhandler_function`.
    unsafe {
        let f: ErrFn = std::mem::transmute::<usize, ErrFn>(slot.load(Ordering::Acquire));
        let mut sh = h;
        let mut scode = cv::errcode_out(*code);
        f(&mut sh, &mut scode);
    }
}

unsafe extern "C" fn comm_eh_tramp<const I: usize>(h: *mut c_int, code: *mut c_int) {
    // SAFETY: the library passes pointers to the communicator and code.
    unsafe { call_errhandler(&COMM_EH[I], cv::comm_out(*h), code) }
}
unsafe extern "C" fn win_eh_tramp<const I: usize>(h: *mut c_int, code: *mut c_int) {
    // SAFETY: the library passes pointers to the window and code.
    unsafe { call_errhandler(&WIN_EH[I], cv::win_out(*h), code) }
}
unsafe extern "C" fn session_eh_tramp<const I: usize>(h: *mut c_int, code: *mut c_int) {
    // SAFETY: the library passes pointers to the session and code.
    unsafe { call_errhandler(&SESSION_EH[I], cv::session_out(*h), code) }
}
unsafe extern "C" fn file_eh_tramp<const I: usize>(h: *mut *mut c_void, code: *mut c_int) {
    // SAFETY: the library passes pointers to the file and code.
    unsafe { call_errhandler(&FILE_EH[I], cv::file_out(*h), code) }
}

/// Writes an MPICH handle created by the library to the program's.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn put_handle(out: *mut usize, r: c_int, h: c_int, conv: fn(c_int) -> usize) -> c_int {
    if r == mpi_api::abi::MPI_SUCCESS && !out.is_null() {
        // SAFETY: writable (the contract).
        unsafe { *out = conv(h) };
    }
    cv::errcode_out(r)
}

/// The library's out-argument for the program's `out`: NULL stays NULL
/// (the library reports it), else the local `h`.
fn out_arg<T>(out: *mut T, h: &mut c_int) -> *mut c_int {
    if out.is_null() {
        std::ptr::null_mut()
    } else {
        h
    }
}

fn pool_full(what: &str) -> c_int {
    eprintln!("libmpi_abi.so: more than {POOL} {what} created in this process");
    stdabi_err("MPI_ERR_INTERN")
}

/// # Safety
/// The standard's requirements for `MPI_Abi_get_version`.
pub unsafe fn MPI_Abi_get_version(abi_major: *mut c_int, abi_minor: *mut c_int) -> c_int {
    if abi_major.is_null() || abi_minor.is_null() {
        return stdabi_err("MPI_ERR_ARG");
    }
    // SAFETY: writable ints (the contract).
    unsafe {
        *abi_major = stdabi::ABI_VERSION.0;
        *abi_minor = stdabi::ABI_VERSION.1;
    }
    0
}

/// # Safety
/// The standard's requirements for `MPI_Op_create`.
pub unsafe fn MPI_Op_create(user_fn: *mut c_void, commute: c_int, op: *mut usize) -> c_int {
    let Some(create) = lib().PMPI_Op_create else { return missing("MPI_Op_create") };
    if user_fn.is_null() {
        // SAFETY: the library reports the NULL function itself.
        return unsafe { put_handle(op, create(user_fn, commute, std::ptr::null_mut()), 0, cv::op_out) };
    }
    let Some(i) = take_slot(&OPS, user_fn as usize) else { return pool_full("reduction operations") };
    let mut h: c_int = 0;
    // SAFETY: a trampoline of the MPICH `MPI_User_function` type, a writable handle.
    let r = unsafe { create(OP_TRAMPS[i] as *mut c_void, commute, out_arg(op, &mut h)) };
    // SAFETY: `op` is NULL or writable (the contract).
    unsafe { put_handle(op, r, h, cv::op_out) }
}

/// # Safety
/// The standard's requirements for `MPI_Op_create_c`.
pub unsafe fn MPI_Op_create_c(user_fn: *mut c_void, commute: c_int, op: *mut usize) -> c_int {
    let Some(create) = lib().PMPI_Op_create_c else { return missing("MPI_Op_create_c") };
    if user_fn.is_null() {
        // SAFETY: the library reports the NULL function itself.
        return unsafe { put_handle(op, create(user_fn, commute, std::ptr::null_mut()), 0, cv::op_out) };
    }
    let Some(i) = take_slot(&OPS_C, user_fn as usize) else { return pool_full("reduction operations") };
    let mut h: c_int = 0;
    // SAFETY: a trampoline of the MPICH `MPI_User_function_c` type.
    let r = unsafe { create(OP_TRAMPS_C[i] as *mut c_void, commute, out_arg(op, &mut h)) };
    // SAFETY: `op` is NULL or writable (the contract).
    unsafe { put_handle(op, r, h, cv::op_out) }
}

/// Creates an error handler through `create` with the trampoline of a
/// fresh slot of `pool`.
///
/// # Safety
/// `errhandler` is NULL or writable; `f` is the program's function.
unsafe fn create_errhandler(
    name: &str,
    create: Option<unsafe extern "C" fn(*mut c_void, *mut c_int) -> c_int>,
    pool: &[AtomicUsize; POOL],
    tramp: &dyn Fn(usize) -> *mut c_void,
    f: *mut c_void,
    errhandler: *mut usize,
) -> c_int {
    let Some(create) = create else { return missing(name) };
    if f.is_null() {
        // SAFETY: the library reports the NULL function itself.
        return unsafe { put_handle(errhandler, create(f, std::ptr::null_mut()), 0, cv::errhandler_out) };
    }
    let Some(i) = take_slot(pool, f as usize) else { return pool_full("error handlers") };
    let mut h: c_int = 0;
    // SAFETY: a trampoline of the MPICH errhandler function type.
    let r = unsafe { create(tramp(i), out_arg(errhandler, &mut h)) };
    // SAFETY: NULL or writable (the contract).
    unsafe { put_handle(errhandler, r, h, cv::errhandler_out) }
}

/// # Safety
/// The standard's requirements for `MPI_Comm_create_errhandler`.
pub unsafe fn MPI_Comm_create_errhandler(f: *mut c_void, errhandler: *mut usize) -> c_int {
    let c = lib().PMPI_Comm_create_errhandler;
    // SAFETY: the contract.
    unsafe {
        create_errhandler(
            "MPI_Comm_create_errhandler",
            c,
            &COMM_EH,
            &|i| COMM_EH_TRAMPS[i] as *mut c_void,
            f,
            errhandler,
        )
    }
}
/// # Safety
/// The standard's requirements for `MPI_Win_create_errhandler`.
pub unsafe fn MPI_Win_create_errhandler(f: *mut c_void, errhandler: *mut usize) -> c_int {
    let c = lib().PMPI_Win_create_errhandler;
    // SAFETY: the contract.
    unsafe {
        create_errhandler("MPI_Win_create_errhandler", c, &WIN_EH, &|i| WIN_EH_TRAMPS[i] as *mut c_void, f, errhandler)
    }
}
/// # Safety
/// The standard's requirements for `MPI_Session_create_errhandler`.
pub unsafe fn MPI_Session_create_errhandler(f: *mut c_void, errhandler: *mut usize) -> c_int {
    let c = lib().PMPI_Session_create_errhandler;
    // SAFETY: the contract.
    unsafe {
        create_errhandler(
            "MPI_Session_create_errhandler",
            c,
            &SESSION_EH,
            &|i| SESSION_EH_TRAMPS[i] as *mut c_void,
            f,
            errhandler,
        )
    }
}
/// # Safety
/// The standard's requirements for `MPI_File_create_errhandler`.
pub unsafe fn MPI_File_create_errhandler(f: *mut c_void, errhandler: *mut usize) -> c_int {
    let c = lib().PMPI_File_create_errhandler;
    // SAFETY: the contract.
    unsafe {
        create_errhandler(
            "MPI_File_create_errhandler",
            c,
            &FILE_EH,
            &|i| FILE_EH_TRAMPS[i] as *mut c_void,
            f,
            errhandler,
        )
    }
}

/// The program's attribute callbacks and state, behind the library's
/// `extra_state` of a keyval (never freed: a keyval's callbacks may run
/// until its last attribute is deleted, after `MPI_X_free_keyval`).
struct Keyval {
    copy: usize,
    delete: usize,
    extra: *mut c_void,
    /// The object's handle, MPICH to standard.
    handle_out: fn(c_int) -> usize,
}

type CopyFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
type DeleteFn = unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void) -> c_int;

unsafe extern "C" fn copy_tramp(
    old: c_int,
    keyval: c_int,
    extra: *mut c_void,
    val_in: *mut c_void,
    val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: `extra` is the `Keyval` this library made for the keyval;
    // the other pointers are the library's, as the callback type says.
    unsafe {
        let kv = &*(extra as *const Keyval);
        match kv.copy {
            0 => {
                *flag = 0;
                0
            }
            stdabi::STD_DUP_FN => {
                *(val_out as *mut *mut c_void) = val_in;
                *flag = 1;
                0
            }
            f => {
                let f = std::mem::transmute::<usize, CopyFn>(f);
                cv::errcode_in(f((kv.handle_out)(old), cv::keyval_out(keyval), kv.extra, val_in, val_out, flag))
            }
        }
    }
}

unsafe extern "C" fn delete_tramp(obj: c_int, keyval: c_int, val: *mut c_void, extra: *mut c_void) -> c_int {
    // SAFETY: as `copy_tramp`.
    unsafe {
        let kv = &*(extra as *const Keyval);
        match kv.delete {
            0 => 0,
            f => {
                let f = std::mem::transmute::<usize, DeleteFn>(f);
                cv::errcode_in(f((kv.handle_out)(obj), cv::keyval_out(keyval), val, kv.extra))
            }
        }
    }
}

type KeyvalCreate = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_void) -> c_int;

/// # Safety
/// `keyval` is NULL or writable.
unsafe fn create_keyval(
    name: &str,
    create: Option<KeyvalCreate>,
    copy: *mut c_void,
    delete: *mut c_void,
    keyval: *mut c_int,
    extra: *mut c_void,
    handle_out: fn(c_int) -> usize,
) -> c_int {
    let Some(create) = create else { return missing(name) };
    let kv = Box::into_raw(Box::new(Keyval { copy: copy as usize, delete: delete as usize, extra, handle_out }));
    let mut k: c_int = 0;
    // SAFETY: trampolines of the MPICH callback types, their state, a writable int.
    let r = unsafe {
        create(copy_tramp as *mut c_void, delete_tramp as *mut c_void, out_arg(keyval, &mut k), kv as *mut c_void)
    };
    if r != 0 {
        // SAFETY: the library did not keep the box.
        drop(unsafe { Box::from_raw(kv) });
    } else if !keyval.is_null() {
        // SAFETY: writable (the contract).
        unsafe { *keyval = cv::keyval_out(k) };
    }
    cv::errcode_out(r)
}

/// # Safety
/// The standard's requirements for `MPI_Comm_create_keyval`.
pub unsafe fn MPI_Comm_create_keyval(c: *mut c_void, d: *mut c_void, k: *mut c_int, e: *mut c_void) -> c_int {
    let f = lib().PMPI_Comm_create_keyval;
    // SAFETY: the contract.
    unsafe { create_keyval("MPI_Comm_create_keyval", f, c, d, k, e, cv::comm_out) }
}
/// # Safety
/// The standard's requirements for `MPI_Keyval_create`.
pub unsafe fn MPI_Keyval_create(c: *mut c_void, d: *mut c_void, k: *mut c_int, e: *mut c_void) -> c_int {
    let f = lib().PMPI_Comm_create_keyval;
    // SAFETY: the contract (the same as MPI_Comm_create_keyval's).
    unsafe { create_keyval("MPI_Keyval_create", f, c, d, k, e, cv::comm_out) }
}
/// # Safety
/// The standard's requirements for `MPI_Type_create_keyval`.
pub unsafe fn MPI_Type_create_keyval(c: *mut c_void, d: *mut c_void, k: *mut c_int, e: *mut c_void) -> c_int {
    let f = lib().PMPI_Type_create_keyval;
    // SAFETY: the contract.
    unsafe { create_keyval("MPI_Type_create_keyval", f, c, d, k, e, cv::datatype_out) }
}
/// # Safety
/// The standard's requirements for `MPI_Win_create_keyval`.
pub unsafe fn MPI_Win_create_keyval(c: *mut c_void, d: *mut c_void, k: *mut c_int, e: *mut c_void) -> c_int {
    let f = lib().PMPI_Win_create_keyval;
    // SAFETY: the contract.
    unsafe { create_keyval("MPI_Win_create_keyval", f, c, d, k, e, cv::win_out) }
}

/// A generalized request's callbacks and state.
struct Greq {
    query: usize,
    free: usize,
    cancel: usize,
    extra: *mut c_void,
}

type QueryFn = unsafe extern "C" fn(*mut c_void, *mut StdStatus) -> c_int;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

unsafe extern "C" fn greq_query(extra: *mut c_void, status: *mut MpichStatus) -> c_int {
    // SAFETY: `extra` is this library's `Greq` (alive until the free
    // callback); `status` the library's status to fill.
    unsafe {
        let g = &*(extra as *const Greq);
        let mut s = StdStatus::default();
        let r = std::mem::transmute::<usize, QueryFn>(g.query)(g.extra, &mut s);
        *status = cv::status_in(&s);
        cv::errcode_in(r)
    }
}

unsafe extern "C" fn greq_free(extra: *mut c_void) -> c_int {
    // SAFETY: as `greq_query`; the library calls free once, last.
    unsafe {
        let g = Box::from_raw(extra as *mut Greq);
        cv::errcode_in(std::mem::transmute::<usize, FreeFn>(g.free)(g.extra))
    }
}

unsafe extern "C" fn greq_cancel(extra: *mut c_void, complete: c_int) -> c_int {
    // SAFETY: as `greq_query`.
    unsafe {
        let g = &*(extra as *const Greq);
        cv::errcode_in(std::mem::transmute::<usize, CancelFn>(g.cancel)(g.extra, complete))
    }
}

/// # Safety
/// The standard's requirements for `MPI_Grequest_start`.
pub unsafe fn MPI_Grequest_start(
    query: *mut c_void,
    free: *mut c_void,
    cancel: *mut c_void,
    extra: *mut c_void,
    request: *mut usize,
) -> c_int {
    let Some(start) = lib().PMPI_Grequest_start else { return missing("MPI_Grequest_start") };
    if query.is_null() || free.is_null() || cancel.is_null() {
        return stdabi_err("MPI_ERR_ARG");
    }
    let g =
        Box::into_raw(Box::new(Greq { query: query as usize, free: free as usize, cancel: cancel as usize, extra }));
    let mut h: c_int = 0;
    // SAFETY: trampolines of the MPICH callback types and their state.
    let r = unsafe {
        start(
            greq_query as *mut c_void,
            greq_free as *mut c_void,
            greq_cancel as *mut c_void,
            g as *mut c_void,
            out_arg(request, &mut h),
        )
    };
    if r != 0 {
        // SAFETY: the library did not keep the box.
        drop(unsafe { Box::from_raw(g) });
    }
    // SAFETY: NULL or writable (the contract).
    unsafe { put_handle(request, r, h, cv::request_out) }
}

/// # Safety
/// None (the level is a value).
pub unsafe fn MPI_Pcontrol(level: c_int) -> c_int {
    let Some(f) = lib().PMPI_Pcontrol else { return missing("MPI_Pcontrol") };
    // SAFETY: libmpi.so.12's `PMPI_Pcontrol` reads the level only.
    cv::errcode_out(unsafe { f(level) })
}

macro_rules! toint_fromint {
    ($($to:ident $from:ident $hin:ident $hout:ident;)*) => {$(
        /// The handle's MPICH integer (its Fortran handle).
        ///
        /// # Safety
        /// None (the handle is a value).
        pub unsafe fn $to(h: usize) -> c_int {
            cv::$hin(h)
        }
        /// The handle of an MPICH integer (a Fortran handle).
        ///
        /// # Safety
        /// None (the handle is a value).
        pub unsafe fn $from(i: c_int) -> usize {
            cv::$hout(i)
        }
    )*};
}

toint_fromint! {
    MPI_Comm_toint MPI_Comm_fromint comm_in comm_out;
    MPI_Errhandler_toint MPI_Errhandler_fromint errhandler_in errhandler_out;
    MPI_Group_toint MPI_Group_fromint group_in group_out;
    MPI_Info_toint MPI_Info_fromint info_in info_out;
    MPI_Message_toint MPI_Message_fromint message_in message_out;
    MPI_Op_toint MPI_Op_fromint op_in op_out;
    MPI_Request_toint MPI_Request_fromint request_in request_out;
    MPI_Session_toint MPI_Session_fromint session_in session_out;
    MPI_Type_toint MPI_Type_fromint datatype_in datatype_out;
    MPI_Win_toint MPI_Win_fromint win_in win_out;
}

/// # Safety
/// None (the handle is a value).
pub unsafe fn MPI_File_toint(h: usize) -> c_int {
    match lib().PMPI_File_c2f {
        // SAFETY: the MPICH file handle, a value.
        Some(f) => unsafe { f(cv::file_in(h)) },
        None => 0,
    }
}

/// # Safety
/// None (the handle is a value).
pub unsafe fn MPI_File_fromint(i: c_int) -> usize {
    match lib().PMPI_File_f2c {
        // SAFETY: an integer, a value.
        Some(f) => cv::file_out(unsafe { f(i) }),
        None => cv::file_out(std::ptr::null_mut()),
    }
}

/// A data representation's conversion functions and state (registered for
/// the life of the process, as data representations are).
struct Datarep {
    read: usize,
    write: usize,
    extent: usize,
    extra: *mut c_void,
}

type ExtentFn = unsafe extern "C" fn(usize, *mut mpi_api::abi::MPI_Aint, *mut c_void) -> c_int;

unsafe extern "C" fn datarep_extent(dt: c_int, extent: *mut mpi_api::abi::MPI_Aint, extra: *mut c_void) -> c_int {
    // SAFETY: `extra` is this library's `Datarep`; `extent` the library's.
    unsafe {
        let d = &*(extra as *const Datarep);
        cv::errcode_in(std::mem::transmute::<usize, ExtentFn>(d.extent)(cv::datatype_out(dt), extent, d.extra))
    }
}

macro_rules! datarep_conversions {
    ($($name:ident $field:ident $count:ty;)*) => {$(
        unsafe extern "C" fn $name(
            buf: *mut c_void,
            dt: c_int,
            count: $count,
            filebuf: *mut c_void,
            position: mpi_api::abi::MPI_Offset,
            extra: *mut c_void,
        ) -> c_int {
            type F = unsafe extern "C" fn(*mut c_void, usize, $count, *mut c_void, mpi_api::abi::MPI_Offset, *mut c_void) -> c_int;
            // SAFETY: `extra` is this library's `Datarep`, whose function is
            // the program's of this type; the buffers are the library's.
            unsafe {
                let d = &*(extra as *const Datarep);
                let f = std::mem::transmute::<usize, F>(d.$field);
                cv::errcode_in(f(buf, cv::datatype_out(dt), count, filebuf, position, d.extra))
            }
        }
    )*};
}

datarep_conversions! {
    datarep_read read c_int;
    datarep_write write c_int;
    datarep_read_c read MPI_Count;
    datarep_write_c write MPI_Count;
}

type RegisterDatarep =
    unsafe extern "C" fn(*const std::os::raw::c_char, *mut c_void, *mut c_void, *mut c_void, *mut c_void) -> c_int;

/// Registers a data representation through `register` with this library's
/// conversion trampolines (`read_t`, `write_t`) where the program gave
/// functions (`MPI_CONVERSION_FN_NULL` stays NULL).
///
/// # Safety
/// The standard's requirements for `MPI_Register_datarep(_c)`.
#[allow(clippy::too_many_arguments)]
unsafe fn register_datarep(
    name: &str,
    register: Option<RegisterDatarep>,
    datarep: *const std::os::raw::c_char,
    read: *mut c_void,
    write: *mut c_void,
    extent: *mut c_void,
    extra: *mut c_void,
    (read_t, write_t): (*mut c_void, *mut c_void),
) -> c_int {
    let Some(register) = register else { return missing(name) };
    if extent.is_null() {
        return stdabi_err("MPI_ERR_ARG");
    }
    let d =
        Box::into_raw(Box::new(Datarep { read: read as usize, write: write as usize, extent: extent as usize, extra }));
    let or_null = |f: *mut c_void, t: *mut c_void| if f.is_null() { f } else { t };
    // SAFETY: trampolines of the MPICH callback types and their state; the
    // name as the program gave it.
    let r = unsafe {
        register(
            datarep,
            or_null(read, read_t),
            or_null(write, write_t),
            datarep_extent as *mut c_void,
            d as *mut c_void,
        )
    };
    if r != 0 {
        // SAFETY: the library did not keep the box.
        drop(unsafe { Box::from_raw(d) });
    }
    cv::errcode_out(r)
}

/// # Safety
/// The standard's requirements for `MPI_Register_datarep`.
pub unsafe fn MPI_Register_datarep(
    datarep: *const std::os::raw::c_char,
    read: *mut c_void,
    write: *mut c_void,
    extent: *mut c_void,
    extra: *mut c_void,
) -> c_int {
    let t = (datarep_read as *mut c_void, datarep_write as *mut c_void);
    let f = lib().PMPI_Register_datarep;
    // SAFETY: the contract.
    unsafe { register_datarep("MPI_Register_datarep", f, datarep, read, write, extent, extra, t) }
}

/// # Safety
/// The standard's requirements for `MPI_Register_datarep_c`.
pub unsafe fn MPI_Register_datarep_c(
    datarep: *const std::os::raw::c_char,
    read: *mut c_void,
    write: *mut c_void,
    extent: *mut c_void,
    extra: *mut c_void,
) -> c_int {
    let t = (datarep_read_c as *mut c_void, datarep_write_c as *mut c_void);
    let f = lib().PMPI_Register_datarep_c;
    // SAFETY: the contract.
    unsafe { register_datarep("MPI_Register_datarep_c", f, datarep, read, write, extent, extra, t) }
}

// `MPI_Comm_idup` writes the new communicator when the duplication
// completes, after the call returned: the library is given the program's
// own handle, set to `MPI_COMM_NULL` (0x100: high half zero) until then, and
// writes its int into the low half, which makes the handle that int
// zero-extended: this library's encoding of the library's handles. That
// needs a little-endian machine.
#[cfg(target_endian = "big")]
compile_error!("MPI_Comm_idup of the standard ABI assumes a little-endian machine");

/// # Safety
/// The standard's requirements for `MPI_Comm_idup`.
pub unsafe fn MPI_Comm_idup(comm: usize, newcomm: *mut usize, request: *mut usize) -> c_int {
    let Some(f) = lib().PMPI_Comm_idup else { return missing("MPI_Comm_idup") };
    let mut req: c_int = 0;
    // SAFETY: `newcomm` is NULL or the program's handle, writable until the
    // duplication completes (the contract); the library writes an int into
    // its first half (see above).
    let r = unsafe {
        if !newcomm.is_null() {
            *newcomm = cv::comm_out(mpi_api::abi::MPI_COMM_NULL);
        }
        f(cv::comm_in(comm), newcomm as *mut c_int, out_arg(request, &mut req))
    };
    // SAFETY: NULL or writable (the contract).
    unsafe { put_handle(request, r, req, cv::request_out) }
}

/// # Safety
/// The standard's requirements for `MPI_Comm_idup_with_info`.
pub unsafe fn MPI_Comm_idup_with_info(comm: usize, info: usize, newcomm: *mut usize, request: *mut usize) -> c_int {
    let Some(f) = lib().PMPI_Comm_idup_with_info else { return missing("MPI_Comm_idup_with_info") };
    let mut req: c_int = 0;
    // SAFETY: as in `MPI_Comm_idup`.
    let r = unsafe {
        if !newcomm.is_null() {
            *newcomm = cv::comm_out(mpi_api::abi::MPI_COMM_NULL);
        }
        f(cv::comm_in(comm), cv::info_in(info), newcomm as *mut c_int, out_arg(request, &mut req))
    };
    // SAFETY: NULL or writable (the contract).
    unsafe { put_handle(request, r, req, cv::request_out) }
}

/// # Safety
/// The standard's requirements for `MPI_Status_c2f`: the Fortran status of
/// the standard ABI is the C status's eight ints in order.
pub unsafe fn MPI_Status_c2f(c_status: *const StdStatus, f_status: *mut c_int) -> c_int {
    if c_status.is_null() || f_status.is_null() {
        return stdabi_err("MPI_ERR_ARG");
    }
    // SAFETY: a readable status and `MPI_F_STATUS_SIZE` (8) writable ints
    // (the contract); the status is 8 ints (`#[repr(C)]`).
    unsafe { std::ptr::copy_nonoverlapping(c_status as *const c_int, f_status, 8) };
    0
}

/// # Safety
/// The standard's requirements for `MPI_Status_f2c` (see `MPI_Status_c2f`).
pub unsafe fn MPI_Status_f2c(f_status: *const c_int, c_status: *mut StdStatus) -> c_int {
    if c_status.is_null() || f_status.is_null() {
        return stdabi_err("MPI_ERR_ARG");
    }
    // SAFETY: as in `MPI_Status_c2f`, the other way.
    unsafe { std::ptr::copy_nonoverlapping(f_status, c_status as *mut c_int, 8) };
    0
}
