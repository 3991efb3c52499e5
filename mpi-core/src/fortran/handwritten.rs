//! Fortran procedures whose form is not the C one with addresses:
//! initialization (no `argc`/`argv`), `MPI_Pcontrol` (not variadic),
//! attribute keys with callbacks written in Fortran (arguments by address,
//! values as `INTEGER(KIND=MPI_ADDRESS_KIND)`, or `INTEGER` for the MPI-1
//! calls), attribute queries (the predefined attributes' values rather than
//! pointers to them), and the predefined callbacks `MPI_COMM_DUP_FN`...

use std::ffi::{c_int, c_void};

use mpi_api::abi::{self, MPI_Info};

use super::conv::{set_ierror, Slot};
use crate::exports as x;

/// Exports one Fortran-convention function under several names.
macro_rules! aliases {
    ($body:ident $params:tt $args:tt ; $($m:ident),+) => {
        $(
            /// A predefined callback for Fortran programs (see the module).
            ///
            /// # Safety
            /// The arguments are what the library passes a Fortran callback.
            #[no_mangle]
            pub unsafe extern "C" fn $m $params {
                // SAFETY: the arguments are passed on unchanged.
                unsafe { $body $args }
            }
        )+
    };
}

/// Runs `f` behind the panic guard and stores its code in `ierror`.
///
/// # Safety
/// `ierror` is NULL or a writable INTEGER.
unsafe fn run(name: &'static str, ierror: *mut c_int, f: impl FnOnce() -> c_int) {
    let rc = crate::ffi::guard(name, f);
    // SAFETY: the contract.
    unsafe { set_ierror(ierror, rc) };
}

type InitFn = unsafe extern "C" fn(*mut c_int, *mut *mut *mut std::ffi::c_char) -> c_int;
type InitThreadFn = unsafe extern "C" fn(*mut c_int, *mut *mut *mut std::ffi::c_char, c_int, *mut c_int) -> c_int;
static INIT: Slot = Slot::new(c"MPI_Init");
static INIT_THREAD: Slot = Slot::new(c"MPI_Init_thread");

/// `MPI_INIT(IERROR)`.
unsafe fn init<const P: bool>(ierror: *mut c_int) {
    // SAFETY: `InitFn` is `MPI_Init`'s type.
    let f: InitFn = if P { x::PMPI_Init } else { unsafe { INIT.get::<InitFn>(x::MPI_Init) } };
    // SAFETY: NULL argc/argv are allowed; `ierror` is the caller's.
    unsafe { run("MPI_Init", ierror, || f(std::ptr::null_mut(), std::ptr::null_mut())) }
}
spellings!(init(ierror: *mut c_int) (ierror); mpi_init_, mpi_init__, mpi_init, MPI_INIT, mpi_init_f08_; pmpi_init_, pmpi_init__, pmpi_init, PMPI_INIT, pmpi_init_f08_, pmpir_init_f08_);

/// `MPI_INIT_THREAD(REQUIRED, PROVIDED, IERROR)`.
unsafe fn init_thread<const P: bool>(required: *const c_int, provided: *mut c_int, ierror: *mut c_int) {
    let f: InitThreadFn = if P {
        x::PMPI_Init_thread
    } else {
        // SAFETY: `InitThreadFn` is `MPI_Init_thread`'s type.
        unsafe { INIT_THREAD.get::<InitThreadFn>(x::MPI_Init_thread) }
    };
    // SAFETY: the caller passes the addresses of its INTEGERs.
    unsafe { run("MPI_Init_thread", ierror, || f(std::ptr::null_mut(), std::ptr::null_mut(), *required, provided)) }
}
spellings!(init_thread(required: *const c_int, provided: *mut c_int, ierror: *mut c_int) (required, provided, ierror);
    mpi_init_thread_, mpi_init_thread__, mpi_init_thread, MPI_INIT_THREAD, mpi_init_thread_f08_;
    pmpi_init_thread_, pmpi_init_thread__, pmpi_init_thread, PMPI_INIT_THREAD, pmpi_init_thread_f08_, pmpir_init_thread_f08_);

type PcontrolFn = unsafe extern "C" fn(c_int) -> c_int;
static PCONTROL: Slot = Slot::new(c"MPI_Pcontrol");

/// `MPI_PCONTROL(LEVEL)`: no further arguments, and no `IERROR` in Fortran.
unsafe fn pcontrol<const P: bool>(level: *const c_int) {
    // The C procedure is variadic; a call with only the fixed argument
    // has the non-variadic convention on the platforms this library runs.
    let f: PcontrolFn = if P {
        x::PMPI_Pcontrol
    } else {
        // SAFETY: `PcontrolFn` is `MPI_Pcontrol`'s type without the variadic part.
        unsafe { PCONTROL.get::<PcontrolFn>(x::MPI_Pcontrol) }
    };
    // SAFETY: the caller passes the address of its INTEGER.
    unsafe { run("MPI_Pcontrol", std::ptr::null_mut(), || f(*level)) }
}
spellings!(pcontrol(level: *const c_int) (level);
    mpi_pcontrol_, mpi_pcontrol__, mpi_pcontrol, MPI_PCONTROL, mpi_pcontrol_f08_;
    pmpi_pcontrol_, pmpi_pcontrol__, pmpi_pcontrol, PMPI_PCONTROL, pmpi_pcontrol_f08_, pmpir_pcontrol_f08_);

type InfoEnvFn = unsafe extern "C" fn(c_int, *mut *mut std::ffi::c_char, *mut MPI_Info) -> c_int;
static INFO_ENV: Slot = Slot::new(c"MPI_Info_create_env");

/// `MPI_INFO_CREATE_ENV(INFO, IERROR)`.
unsafe fn info_create_env<const P: bool>(info: *mut MPI_Info, ierror: *mut c_int) {
    let f: InfoEnvFn = if P {
        x::PMPI_Info_create_env
    } else {
        // SAFETY: `InfoEnvFn` is `MPI_Info_create_env`'s type.
        unsafe { INFO_ENV.get::<InfoEnvFn>(x::MPI_Info_create_env) }
    };
    // SAFETY: no arguments given; `info` is the caller's INTEGER.
    unsafe { run("MPI_Info_create_env", ierror, || f(0, std::ptr::null_mut(), info)) }
}
spellings!(info_create_env(info: *mut MPI_Info, ierror: *mut c_int) (info, ierror);
    mpi_info_create_env_, mpi_info_create_env__, mpi_info_create_env, MPI_INFO_CREATE_ENV, mpi_info_create_env_f08_;
    pmpi_info_create_env_, pmpi_info_create_env__, pmpi_info_create_env, PMPI_INFO_CREATE_ENV, pmpi_info_create_env_f08_, pmpir_info_create_env_f08_);

// ---- Attribute keys with Fortran callbacks ----

/// A Fortran copy callback: `(OLDOBJ, KEYVAL, EXTRA_STATE, ATTRIBUTE_VAL_IN,
/// ATTRIBUTE_VAL_OUT, FLAG, IERROR)`, values `INTEGER(KIND=MPI_ADDRESS_KIND)`.
type FCopy = unsafe extern "C" fn(*const c_int, *const c_int, *const i64, *const i64, *mut i64, *mut c_int, *mut c_int);
/// A Fortran delete callback: `(OBJ, KEYVAL, ATTRIBUTE_VAL, EXTRA_STATE, IERROR)`.
type FDelete = unsafe extern "C" fn(*const c_int, *const c_int, *const i64, *const i64, *mut c_int);
/// The MPI-1 forms (`MPI_KEYVAL_CREATE`): values and extra state `INTEGER`.
type FCopy10 =
    unsafe extern "C" fn(*const c_int, *const c_int, *const c_int, *const c_int, *mut c_int, *mut c_int, *mut c_int);
type FDelete10 = unsafe extern "C" fn(*const c_int, *const c_int, *const c_int, *const c_int, *mut c_int);

/// What a key made from Fortran keeps: its callbacks and extra state (the
/// C key's extra state points to it; it lives as long as the program).
struct FortranKey {
    copy: usize,
    delete: usize,
    extra: i64,
    /// The MPI-1 `INTEGER` forms.
    mpi1: bool,
}

/// The C copy callback of a key made from Fortran: calls the Fortran one.
unsafe extern "C" fn copy_trampoline(
    old: c_int,
    keyval: c_int,
    extra: *mut c_void,
    val_in: *mut c_void,
    val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the library passes the extra state given at creation, a
    // leaked `FortranKey`.
    let k = unsafe { &*(extra as *const FortranKey) };
    let (mut ierr, mut fl) = (0, 0);
    let out = if k.mpi1 {
        let (e, vin, mut vout) = (k.extra as c_int, val_in as isize as c_int, 0);
        // SAFETY: `copy` is the program's Fortran procedure of this type.
        unsafe {
            let f: FCopy10 = std::mem::transmute::<usize, FCopy10>(k.copy);
            f(&old, &keyval, &e, &vin, &mut vout, &mut fl, &mut ierr);
        }
        vout as isize
    } else {
        let (vin, mut vout) = (val_in as i64, 0i64);
        // SAFETY: as above.
        unsafe {
            let f: FCopy = std::mem::transmute::<usize, FCopy>(k.copy);
            f(&old, &keyval, &k.extra, &vin, &mut vout, &mut fl, &mut ierr);
        }
        vout as isize
    };
    // SAFETY: the library passes where the copied value goes and the flag.
    unsafe {
        *(val_out as *mut *mut c_void) = out as *mut c_void;
        *flag = c_int::from(fl != 0);
    }
    ierr
}

/// The C delete callback of a key made from Fortran.
unsafe extern "C" fn delete_trampoline(obj: c_int, keyval: c_int, val: *mut c_void, extra: *mut c_void) -> c_int {
    // SAFETY: see `copy_trampoline`.
    let k = unsafe { &*(extra as *const FortranKey) };
    let mut ierr = 0;
    if k.mpi1 {
        let (e, v) = (k.extra as c_int, val as isize as c_int);
        // SAFETY: `delete` is the program's Fortran procedure of this type.
        unsafe { std::mem::transmute::<usize, FDelete10>(k.delete)(&obj, &keyval, &v, &e, &mut ierr) };
    } else {
        let v = val as i64;
        // SAFETY: as above.
        unsafe { std::mem::transmute::<usize, FDelete>(k.delete)(&obj, &keyval, &v, &k.extra, &mut ierr) };
    }
    ierr
}

type CreateKeyvalFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_void) -> c_int;
static COMM_KEYVAL: Slot = Slot::new(c"MPI_Comm_create_keyval");
static TYPE_KEYVAL: Slot = Slot::new(c"MPI_Type_create_keyval");
static WIN_KEYVAL: Slot = Slot::new(c"MPI_Win_create_keyval");
static KEYVAL: Slot = Slot::new(c"MPI_Keyval_create");

/// `MPI_X_CREATE_KEYVAL(COPY_FN, DELETE_FN, KEYVAL, EXTRA_STATE, IERROR)`.
///
/// # Safety
/// The arguments are what a Fortran caller passes; `f` has `CreateKeyvalFn`'s type.
unsafe fn create_keyval(
    name: &'static str,
    f: CreateKeyvalFn,
    mpi1: bool,
    (copy, delete, keyval, extra, ierror): (*mut c_void, *mut c_void, *mut c_int, *const c_void, *mut c_int),
) {
    // SAFETY: the caller passes its extra state's address.
    let extra = unsafe {
        if mpi1 {
            *(extra as *const c_int) as i64
        } else {
            *(extra as *const i64)
        }
    };
    let k = Box::into_raw(Box::new(FortranKey { copy: copy as usize, delete: delete as usize, extra, mpi1 }));
    // SAFETY: the trampolines have the C callback types; `k` lives on.
    unsafe {
        run(name, ierror, || {
            f(copy_trampoline as *mut c_void, delete_trampoline as *mut c_void, keyval, k as *mut c_void)
        })
    };
}

macro_rules! keyval_creator {
    ($body:ident, $name:literal, $slot:ident, $ours:ident, $pours:ident, $mpi1:expr) => {
        unsafe fn $body<const P: bool>(
            copy: *mut c_void,
            delete: *mut c_void,
            keyval: *mut c_int,
            extra: *const c_void,
            ierror: *mut c_int,
        ) {
            // SAFETY: `CreateKeyvalFn` is the type of `MPI_X_create_keyval`
            // (callbacks passed as untyped pointers).
            let f: CreateKeyvalFn = unsafe {
                if P {
                    x::$pours
                } else {
                    $slot.get::<CreateKeyvalFn>(x::$ours)
                }
            };
            // SAFETY: the caller's arguments.
            unsafe { create_keyval($name, f, $mpi1, (copy, delete, keyval, extra, ierror)) }
        }
    };
}
keyval_creator!(
    comm_create_keyval,
    "MPI_Comm_create_keyval",
    COMM_KEYVAL,
    MPI_Comm_create_keyval,
    PMPI_Comm_create_keyval,
    false
);
keyval_creator!(
    type_create_keyval,
    "MPI_Type_create_keyval",
    TYPE_KEYVAL,
    MPI_Type_create_keyval,
    PMPI_Type_create_keyval,
    false
);
keyval_creator!(
    win_create_keyval,
    "MPI_Win_create_keyval",
    WIN_KEYVAL,
    MPI_Win_create_keyval,
    PMPI_Win_create_keyval,
    false
);
keyval_creator!(keyval_create, "MPI_Keyval_create", KEYVAL, MPI_Keyval_create, PMPI_Keyval_create, true);
spellings!(comm_create_keyval(c: *mut c_void, d: *mut c_void, k: *mut c_int, e: *const c_void, ierror: *mut c_int) (c, d, k, e, ierror);
    mpi_comm_create_keyval_, mpi_comm_create_keyval__, mpi_comm_create_keyval, MPI_COMM_CREATE_KEYVAL, mpi_comm_create_keyval_f08_;
    pmpi_comm_create_keyval_, pmpi_comm_create_keyval__, pmpi_comm_create_keyval, PMPI_COMM_CREATE_KEYVAL, pmpi_comm_create_keyval_f08_, pmpir_comm_create_keyval_f08_);
spellings!(type_create_keyval(c: *mut c_void, d: *mut c_void, k: *mut c_int, e: *const c_void, ierror: *mut c_int) (c, d, k, e, ierror);
    mpi_type_create_keyval_, mpi_type_create_keyval__, mpi_type_create_keyval, MPI_TYPE_CREATE_KEYVAL, mpi_type_create_keyval_f08_;
    pmpi_type_create_keyval_, pmpi_type_create_keyval__, pmpi_type_create_keyval, PMPI_TYPE_CREATE_KEYVAL, pmpi_type_create_keyval_f08_, pmpir_type_create_keyval_f08_);
spellings!(win_create_keyval(c: *mut c_void, d: *mut c_void, k: *mut c_int, e: *const c_void, ierror: *mut c_int) (c, d, k, e, ierror);
    mpi_win_create_keyval_, mpi_win_create_keyval__, mpi_win_create_keyval, MPI_WIN_CREATE_KEYVAL, mpi_win_create_keyval_f08_;
    pmpi_win_create_keyval_, pmpi_win_create_keyval__, pmpi_win_create_keyval, PMPI_WIN_CREATE_KEYVAL, pmpi_win_create_keyval_f08_, pmpir_win_create_keyval_f08_);
spellings!(keyval_create(c: *mut c_void, d: *mut c_void, k: *mut c_int, e: *const c_void, ierror: *mut c_int) (c, d, k, e, ierror);
    mpi_keyval_create_, mpi_keyval_create__, mpi_keyval_create, MPI_KEYVAL_CREATE, mpi_keyval_create_f08_;
    pmpi_keyval_create_, pmpi_keyval_create__, pmpi_keyval_create, PMPI_KEYVAL_CREATE, pmpi_keyval_create_f08_);

// The predefined callbacks, in Fortran's convention.
unsafe extern "C" fn null_copy(
    _: *const c_int,
    _: *const c_int,
    _: *const c_void,
    _: *const c_void,
    _: *mut c_void,
    flag: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: the library passes writable flag and error arguments.
    unsafe { (*flag, *ierr) = (0, 0) };
}
unsafe extern "C" fn dup_fn(
    _: *const c_int,
    _: *const c_int,
    _: *const c_void,
    vin: *const i64,
    vout: *mut i64,
    flag: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: the library passes the value, where its copy goes, and writable flags.
    unsafe { (*vout, *flag, *ierr) = (*vin, 1, 0) };
}
unsafe extern "C" fn dup_fn_mpi1(
    _: *const c_int,
    _: *const c_int,
    _: *const c_void,
    vin: *const c_int,
    vout: *mut c_int,
    flag: *mut c_int,
    ierr: *mut c_int,
) {
    // SAFETY: as in `dup_fn`, with INTEGER values.
    unsafe { (*vout, *flag, *ierr) = (*vin, 1, 0) };
}
unsafe extern "C" fn null_delete(
    _: *const c_int,
    _: *const c_int,
    _: *const c_void,
    _: *const c_void,
    ierr: *mut c_int,
) {
    // SAFETY: the library passes a writable error argument.
    unsafe { *ierr = 0 };
}
aliases!(null_copy(a: *const c_int, b: *const c_int, c: *const c_void, d: *const c_void, e: *mut c_void, f: *mut c_int, g: *mut c_int) (a, b, c, d, e, f, g);
    mpi_comm_null_copy_fn_, mpi_comm_null_copy_fn__, MPI_COMM_NULL_COPY_FN, mpi_comm_null_copy_fn, pmpi_comm_null_copy_fn_, pmpi_comm_null_copy_fn__, pmpi_comm_null_copy_fn, PMPI_COMM_NULL_COPY_FN,
    mpi_type_null_copy_fn_, mpi_type_null_copy_fn__, MPI_TYPE_NULL_COPY_FN, mpi_type_null_copy_fn, pmpi_type_null_copy_fn_, pmpi_type_null_copy_fn__, pmpi_type_null_copy_fn, PMPI_TYPE_NULL_COPY_FN,
    mpi_win_null_copy_fn_, mpi_win_null_copy_fn__, MPI_WIN_NULL_COPY_FN, mpi_win_null_copy_fn, pmpi_win_null_copy_fn_, pmpi_win_null_copy_fn__, pmpi_win_null_copy_fn, PMPI_WIN_NULL_COPY_FN,
    mpi_null_copy_fn_, mpi_null_copy_fn__, MPI_NULL_COPY_FN, mpi_null_copy_fn, pmpi_null_copy_fn_, pmpi_null_copy_fn__, pmpi_null_copy_fn, PMPI_NULL_COPY_FN,
    __mpi_f08_callbacks_MOD_mpi_comm_null_copy_fn, __mpi_f08_callbacks_MOD_mpi_type_null_copy_fn,
    __mpi_f08_callbacks_MOD_mpi_win_null_copy_fn);
aliases!(dup_fn(a: *const c_int, b: *const c_int, c: *const c_void, d: *const i64, e: *mut i64, f: *mut c_int, g: *mut c_int) (a, b, c, d, e, f, g);
    mpi_comm_dup_fn_, mpi_comm_dup_fn__, MPI_COMM_DUP_FN, mpi_comm_dup_fn, pmpi_comm_dup_fn_, pmpi_comm_dup_fn__, pmpi_comm_dup_fn, PMPI_COMM_DUP_FN,
    mpi_type_dup_fn_, mpi_type_dup_fn__, MPI_TYPE_DUP_FN, mpi_type_dup_fn, pmpi_type_dup_fn_, pmpi_type_dup_fn__, pmpi_type_dup_fn, PMPI_TYPE_DUP_FN,
    mpi_win_dup_fn_, mpi_win_dup_fn__, MPI_WIN_DUP_FN, mpi_win_dup_fn, pmpi_win_dup_fn_, pmpi_win_dup_fn__, pmpi_win_dup_fn, PMPI_WIN_DUP_FN,
    __mpi_f08_callbacks_MOD_mpi_comm_dup_fn, __mpi_f08_callbacks_MOD_mpi_type_dup_fn,
    __mpi_f08_callbacks_MOD_mpi_win_dup_fn);
aliases!(dup_fn_mpi1(a: *const c_int, b: *const c_int, c: *const c_void, d: *const c_int, e: *mut c_int, f: *mut c_int, g: *mut c_int) (a, b, c, d, e, f, g);
    mpi_dup_fn_, mpi_dup_fn__, MPI_DUP_FN, mpi_dup_fn, pmpi_dup_fn_, pmpi_dup_fn__, pmpi_dup_fn, PMPI_DUP_FN);
aliases!(null_delete(a: *const c_int, b: *const c_int, c: *const c_void, d: *const c_void, e: *mut c_int) (a, b, c, d, e);
    mpi_comm_null_delete_fn_, mpi_comm_null_delete_fn__, MPI_COMM_NULL_DELETE_FN, mpi_comm_null_delete_fn, pmpi_comm_null_delete_fn_, pmpi_comm_null_delete_fn__, pmpi_comm_null_delete_fn, PMPI_COMM_NULL_DELETE_FN,
    mpi_type_null_delete_fn_, mpi_type_null_delete_fn__, MPI_TYPE_NULL_DELETE_FN, mpi_type_null_delete_fn, pmpi_type_null_delete_fn_, pmpi_type_null_delete_fn__, pmpi_type_null_delete_fn, PMPI_TYPE_NULL_DELETE_FN,
    mpi_win_null_delete_fn_, mpi_win_null_delete_fn__, MPI_WIN_NULL_DELETE_FN, mpi_win_null_delete_fn, pmpi_win_null_delete_fn_, pmpi_win_null_delete_fn__, pmpi_win_null_delete_fn, PMPI_WIN_NULL_DELETE_FN,
    mpi_null_delete_fn_, mpi_null_delete_fn__, MPI_NULL_DELETE_FN, mpi_null_delete_fn, pmpi_null_delete_fn_, pmpi_null_delete_fn__, pmpi_null_delete_fn, PMPI_NULL_DELETE_FN,
    __mpi_f08_callbacks_MOD_mpi_comm_null_delete_fn, __mpi_f08_callbacks_MOD_mpi_type_null_delete_fn,
    __mpi_f08_callbacks_MOD_mpi_win_null_delete_fn);

// ---- Attribute queries ----

/// The C key of a Fortran key: a predefined attribute's Fortran key is its
/// C key plus one (see `mpi_api::fortran::FORTRAN_KEYVALS`).
fn c_key(key: c_int) -> (c_int, bool) {
    let predefined = mpi_api::fortran::FORTRAN_KEYVALS
        .iter()
        .any(|n| abi::CONSTANTS.iter().any(|c| c.name == *n && c.value as c_int == key.wrapping_sub(1)));
    if predefined {
        (key - 1, true)
    } else {
        (key, false)
    }
}

type GetAttrFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_int) -> c_int;
static COMM_GET: Slot = Slot::new(c"MPI_Comm_get_attr");
static TYPE_GET: Slot = Slot::new(c"MPI_Type_get_attr");
static WIN_GET: Slot = Slot::new(c"MPI_Win_get_attr");
static ATTR_GET: Slot = Slot::new(c"MPI_Attr_get");

/// `MPI_X_GET_ATTR(OBJ, KEYVAL, ATTRIBUTE_VAL, FLAG, IERROR)`: the value of a
/// predefined attribute (C gives a pointer to it, the window base excepted),
/// else the value stored.
///
/// # Safety
/// The arguments are what a Fortran caller passes; `f` has `GetAttrFn`'s type.
unsafe fn get_attr(
    name: &'static str,
    f: GetAttrFn,
    mpi1: bool,
    (obj, key, val, flag, ierror): (*const c_int, *const c_int, *mut c_void, *mut c_int, *mut c_int),
) {
    // SAFETY: the caller passes the addresses of its arguments.
    unsafe {
        run(name, ierror, || {
            let (ckey, predefined) = c_key(*key);
            let (mut v, mut fl): (*mut c_void, c_int) = (std::ptr::null_mut(), 0);
            let rc = f(*obj, ckey, (&mut v) as *mut *mut c_void as *mut c_void, &mut fl);
            if rc == 0 {
                *flag = fl;
                if fl != 0 {
                    let value: i64 = match (predefined, ckey) {
                        (false, _) | (true, abi::MPI_WIN_BASE) => v as i64,
                        (true, abi::MPI_WIN_SIZE) => *(v as *const i64),
                        (true, _) => i64::from(*(v as *const c_int)),
                    };
                    if mpi1 {
                        *(val as *mut c_int) = value as c_int;
                    } else {
                        *(val as *mut i64) = value;
                    }
                }
            }
            rc
        })
    }
}

macro_rules! attr_getter {
    ($body:ident, $name:literal, $slot:ident, $ours:ident, $pours:ident, $mpi1:expr) => {
        unsafe fn $body<const P: bool>(
            o: *const c_int,
            k: *const c_int,
            v: *mut c_void,
            fl: *mut c_int,
            ierror: *mut c_int,
        ) {
            // SAFETY: `GetAttrFn` is the type of `MPI_X_get_attr`.
            let f: GetAttrFn = unsafe {
                if P {
                    x::$pours
                } else {
                    $slot.get::<GetAttrFn>(x::$ours)
                }
            };
            // SAFETY: the caller's arguments.
            unsafe { get_attr($name, f, $mpi1, (o, k, v, fl, ierror)) }
        }
    };
}
attr_getter!(comm_get_attr, "MPI_Comm_get_attr", COMM_GET, MPI_Comm_get_attr, PMPI_Comm_get_attr, false);
attr_getter!(type_get_attr, "MPI_Type_get_attr", TYPE_GET, MPI_Type_get_attr, PMPI_Type_get_attr, false);
attr_getter!(win_get_attr, "MPI_Win_get_attr", WIN_GET, MPI_Win_get_attr, PMPI_Win_get_attr, false);
attr_getter!(attr_get, "MPI_Attr_get", ATTR_GET, MPI_Attr_get, PMPI_Attr_get, true);
spellings!(comm_get_attr(o: *const c_int, k: *const c_int, v: *mut c_void, fl: *mut c_int, ierror: *mut c_int) (o, k, v, fl, ierror);
    mpi_comm_get_attr_, mpi_comm_get_attr__, mpi_comm_get_attr, MPI_COMM_GET_ATTR, mpi_comm_get_attr_f08_;
    pmpi_comm_get_attr_, pmpi_comm_get_attr__, pmpi_comm_get_attr, PMPI_COMM_GET_ATTR, pmpi_comm_get_attr_f08_, pmpir_comm_get_attr_f08_);
spellings!(type_get_attr(o: *const c_int, k: *const c_int, v: *mut c_void, fl: *mut c_int, ierror: *mut c_int) (o, k, v, fl, ierror);
    mpi_type_get_attr_, mpi_type_get_attr__, mpi_type_get_attr, MPI_TYPE_GET_ATTR, mpi_type_get_attr_f08_;
    pmpi_type_get_attr_, pmpi_type_get_attr__, pmpi_type_get_attr, PMPI_TYPE_GET_ATTR, pmpi_type_get_attr_f08_, pmpir_type_get_attr_f08_);
spellings!(win_get_attr(o: *const c_int, k: *const c_int, v: *mut c_void, fl: *mut c_int, ierror: *mut c_int) (o, k, v, fl, ierror);
    mpi_win_get_attr_, mpi_win_get_attr__, mpi_win_get_attr, MPI_WIN_GET_ATTR, mpi_win_get_attr_f08_;
    pmpi_win_get_attr_, pmpi_win_get_attr__, pmpi_win_get_attr, PMPI_WIN_GET_ATTR, pmpi_win_get_attr_f08_, pmpir_win_get_attr_f08_);
spellings!(attr_get(o: *const c_int, k: *const c_int, v: *mut c_void, fl: *mut c_int, ierror: *mut c_int) (o, k, v, fl, ierror);
    mpi_attr_get_, mpi_attr_get__, mpi_attr_get, MPI_ATTR_GET, mpi_attr_get_f08_;
    pmpi_attr_get_, pmpi_attr_get__, pmpi_attr_get, PMPI_ATTR_GET, pmpi_attr_get_f08_);
