//! Fortran procedures with callbacks or string arrays, written by hand:
//! generalized requests with query, free and cancel procedures written in
//! Fortran, and `MPI_COMM_SPAWN(_MULTIPLE)`, whose arguments are arrays of
//! blank-padded `CHARACTER` strings, each list ended by a blank string.

use std::ffi::{c_char, c_int, c_void, CString};

use mpi_api::abi::{MPI_Comm, MPI_Datatype, MPI_Info, MPI_Status};

use super::conv::{self, set_ierror, Slot};
use crate::exports as x;

/// Runs `f` behind the panic guard and stores its code in `ierror`.
///
/// # Safety
/// `ierror` is NULL or a writable INTEGER.
unsafe fn run(name: &'static str, ierror: *mut c_int, f: impl FnOnce() -> c_int) {
    let rc = crate::ffi::guard(name, f);
    // SAFETY: the contract.
    unsafe { set_ierror(ierror, rc) };
}

// ---- Generalized requests ----

/// `QUERY_FN(EXTRA_STATE, STATUS, IERROR)`.
type FQuery = unsafe extern "C" fn(*const i64, *mut MPI_Status, *mut c_int);
/// `FREE_FN(EXTRA_STATE, IERROR)`.
type FFree = unsafe extern "C" fn(*const i64, *mut c_int);
/// `CANCEL_FN(EXTRA_STATE, COMPLETE, IERROR)`, `COMPLETE` a LOGICAL.
type FCancel = unsafe extern "C" fn(*const i64, *const c_int, *mut c_int);

/// What a request started from Fortran keeps: its procedures and extra
/// state (the C request's extra state points to it; freed after `free_fn`).
struct FortranGreq {
    query: FQuery,
    free: FFree,
    cancel: FCancel,
    extra: i64,
}

unsafe extern "C" fn query_trampoline(extra: *mut c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: the extra state given at the start, a live `FortranGreq`.
    let g = unsafe { &*(extra as *const FortranGreq) };
    let mut ierr = 0;
    // SAFETY: the program's procedure; the status is the library's.
    unsafe { (g.query)(&g.extra, status, &mut ierr) };
    ierr
}

unsafe extern "C" fn free_trampoline(extra: *mut c_void) -> c_int {
    // SAFETY: as above; the library calls `free_fn` once, last.
    let g = unsafe { Box::from_raw(extra as *mut FortranGreq) };
    let mut ierr = 0;
    // SAFETY: the program's procedure.
    unsafe { (g.free)(&g.extra, &mut ierr) };
    ierr
}

unsafe extern "C" fn cancel_trampoline(extra: *mut c_void, complete: c_int) -> c_int {
    // SAFETY: as above.
    let g = unsafe { &*(extra as *const FortranGreq) };
    let (mut ierr, logical) = (0, c_int::from(complete != 0));
    // SAFETY: the program's procedure.
    unsafe { (g.cancel)(&g.extra, &logical, &mut ierr) };
    ierr
}

type GrequestStartFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
static GREQUEST_START: Slot = Slot::new(c"MPI_Grequest_start");

/// `MPI_GREQUEST_START(QUERY_FN, FREE_FN, CANCEL_FN, EXTRA_STATE, REQUEST, IERROR)`.
unsafe fn grequest_start<const P: bool>(
    query: FQuery,
    free: FFree,
    cancel: FCancel,
    extra: *const i64,
    request: *mut c_int,
    ierror: *mut c_int,
) {
    let f: GrequestStartFn = if P {
        x::PMPI_Grequest_start
    } else {
        // SAFETY: `GrequestStartFn` is `MPI_Grequest_start`'s type.
        unsafe { GREQUEST_START.get::<GrequestStartFn>(x::MPI_Grequest_start) }
    };
    // SAFETY: the caller passes its extra state's address.
    let g = Box::into_raw(Box::new(FortranGreq { query, free, cancel, extra: unsafe { *extra } }));
    // SAFETY: the trampolines have the C callback types; `g` lives until `free_fn`.
    unsafe {
        run("MPI_Grequest_start", ierror, || {
            let rc = f(
                query_trampoline as *mut c_void,
                free_trampoline as *mut c_void,
                cancel_trampoline as *mut c_void,
                g.cast(),
                request,
            );
            if rc != 0 {
                drop(Box::from_raw(g));
            }
            rc
        })
    }
}
spellings!(grequest_start(q: FQuery, f: FFree, c: FCancel, e: *const i64, r: *mut c_int, ierror: *mut c_int) (q, f, c, e, r, ierror);
    mpi_grequest_start_, mpi_grequest_start__, mpi_grequest_start, MPI_GREQUEST_START, mpi_grequest_start_f08_;
    pmpi_grequest_start_, pmpi_grequest_start__, pmpi_grequest_start, PMPI_GREQUEST_START, pmpi_grequest_start_f08_, pmpir_grequest_start_f08_);

// ---- Spawning ----

/// The strings of one argument list: entries of `len` bytes from `p`,
/// `stride` entries apart, up to the first blank one.
///
/// # Safety
/// The list ends with a blank entry (the standard's contract for `ARGV`).
unsafe fn arg_list(p: *const u8, len: usize, stride: usize) -> Vec<CString> {
    let mut out = Vec::new();
    for k in 0.. {
        // SAFETY: the contract: entry `k` exists until the blank one.
        let s = unsafe { conv::str_in(p.add(k * stride * len).cast(), len) };
        if s.as_bytes().is_empty() {
            break;
        }
        out.push(s);
    }
    out
}

/// Pointers to `strings`, NULL-terminated, for C.
fn c_array(strings: &[CString]) -> Vec<*mut c_char> {
    strings.iter().map(|s| s.as_ptr() as *mut c_char).chain(std::iter::once(std::ptr::null_mut())).collect()
}

/// Whether this process is `root` of `comm` (only the root's command and
/// arguments are read: the others' need not be valid).
fn is_root(comm: MPI_Comm, root: c_int) -> bool {
    let mut me = -1;
    // SAFETY: a valid out pointer; an invalid communicator leaves `me` at -1
    // and the spawn call reports it.
    unsafe { x::PMPI_Comm_rank(comm, &mut me) };
    me == root
}

type SpawnFn = unsafe extern "C" fn(
    *const c_char,
    *mut *mut c_char,
    c_int,
    MPI_Info,
    c_int,
    MPI_Comm,
    *mut MPI_Comm,
    *mut c_int,
) -> c_int;
static SPAWN: Slot = Slot::new(c"MPI_Comm_spawn");

/// `MPI_COMM_SPAWN(COMMAND, ARGV, MAXPROCS, INFO, ROOT, COMM, INTERCOMM,
/// ARRAY_OF_ERRCODES, IERROR)`.
#[allow(clippy::too_many_arguments)]
unsafe fn comm_spawn<const P: bool>(
    command: *const u8,
    argv: *const u8,
    maxprocs: *const c_int,
    info: *const MPI_Info,
    root: *const c_int,
    comm: *const MPI_Comm,
    intercomm: *mut MPI_Comm,
    errcodes: *mut c_void,
    ierror: *mut c_int,
    command_len: usize,
    argv_len: usize,
) {
    let f: SpawnFn = if P {
        x::PMPI_Comm_spawn
    } else {
        // SAFETY: `SpawnFn` is `MPI_Comm_spawn`'s type.
        unsafe { SPAWN.get::<SpawnFn>(x::MPI_Comm_spawn) }
    };
    // SAFETY: the caller passes the addresses of its arguments and the
    // lengths of its strings.
    unsafe {
        run("MPI_Comm_spawn", ierror, || {
            let at_root = is_root(*comm, *root);
            let cmd = if at_root { conv::str_in(command.cast(), command_len) } else { CString::default() };
            let args =
                if at_root && !conv::is_argv_null(argv.cast()) { Some(arg_list(argv, argv_len, 1)) } else { None };
            let mut ptrs = args.as_deref().map(c_array);
            let argv_c = ptrs.as_mut().map_or(std::ptr::null_mut(), |v| v.as_mut_ptr());
            f(cmd.as_ptr(), argv_c, *maxprocs, *info, *root, *comm, intercomm, conv::errcodes(errcodes))
        })
    }
}
spellings!(comm_spawn(c: *const u8, a: *const u8, m: *const c_int, i: *const MPI_Info, r: *const c_int, co: *const MPI_Comm,
        ic: *mut MPI_Comm, e: *mut c_void, ierror: *mut c_int, cl: usize, al: usize) (c, a, m, i, r, co, ic, e, ierror, cl, al);
    mpi_comm_spawn_, mpi_comm_spawn__, mpi_comm_spawn, MPI_COMM_SPAWN, mpi_comm_spawn_f08_;
    pmpi_comm_spawn_, pmpi_comm_spawn__, pmpi_comm_spawn, PMPI_COMM_SPAWN, pmpi_comm_spawn_f08_, pmpir_comm_spawn_f08_);

type SpawnMultipleFn = unsafe extern "C" fn(
    c_int,
    *mut *mut c_char,
    *mut *mut *mut c_char,
    *const c_int,
    *const MPI_Info,
    c_int,
    MPI_Comm,
    *mut MPI_Comm,
    *mut c_int,
) -> c_int;
static SPAWN_MULTIPLE: Slot = Slot::new(c"MPI_Comm_spawn_multiple");

/// `MPI_COMM_SPAWN_MULTIPLE(COUNT, ARRAY_OF_COMMANDS, ARRAY_OF_ARGV,
/// ARRAY_OF_MAXPROCS, ARRAY_OF_INFO, ROOT, COMM, INTERCOMM,
/// ARRAY_OF_ERRCODES, IERROR)`: `ARRAY_OF_ARGV(COUNT, *)` holds command
/// `i`'s arguments in row `i` (column-major, so `COUNT` entries apart).
#[allow(clippy::too_many_arguments)]
unsafe fn comm_spawn_multiple<const P: bool>(
    count: *const c_int,
    commands: *const u8,
    argvs: *const u8,
    maxprocs: *const c_int,
    infos: *const MPI_Info,
    root: *const c_int,
    comm: *const MPI_Comm,
    intercomm: *mut MPI_Comm,
    errcodes: *mut c_void,
    ierror: *mut c_int,
    commands_len: usize,
    argv_len: usize,
) {
    let f: SpawnMultipleFn = if P {
        x::PMPI_Comm_spawn_multiple
    } else {
        // SAFETY: `SpawnMultipleFn` is `MPI_Comm_spawn_multiple`'s type.
        unsafe { SPAWN_MULTIPLE.get::<SpawnMultipleFn>(x::MPI_Comm_spawn_multiple) }
    };
    // SAFETY: as in `comm_spawn`; `count` entries in each array.
    unsafe {
        run("MPI_Comm_spawn_multiple", ierror, || {
            let n = if is_root(*comm, *root) { (*count).max(0) as usize } else { 0 };
            let cmds: Vec<CString> =
                (0..n).map(|i| conv::str_in(commands.add(i * commands_len).cast(), commands_len)).collect();
            let mut cmd_ptrs = c_array(&cmds);
            let lists: Option<Vec<Vec<CString>>> = (n > 0 && !conv::is_argvs_null(argvs.cast()))
                .then(|| (0..n).map(|i| arg_list(argvs.add(i * argv_len), argv_len, n)).collect());
            let mut list_ptrs: Vec<Vec<*mut c_char>> = lists.iter().flatten().map(|l| c_array(l)).collect();
            let mut argv_ptrs: Vec<*mut *mut c_char> = list_ptrs.iter_mut().map(|v| v.as_mut_ptr()).collect();
            let argvs_c = if lists.is_some() { argv_ptrs.as_mut_ptr() } else { std::ptr::null_mut() };
            f(
                *count,
                cmd_ptrs.as_mut_ptr(),
                argvs_c,
                maxprocs,
                infos,
                *root,
                *comm,
                intercomm,
                conv::errcodes(errcodes),
            )
        })
    }
}
spellings!(comm_spawn_multiple(n: *const c_int, c: *const u8, a: *const u8, m: *const c_int, i: *const MPI_Info, r: *const c_int,
        co: *const MPI_Comm, ic: *mut MPI_Comm, e: *mut c_void, ierror: *mut c_int, cl: usize, al: usize)
        (n, c, a, m, i, r, co, ic, e, ierror, cl, al);
    mpi_comm_spawn_multiple_, mpi_comm_spawn_multiple__, mpi_comm_spawn_multiple, MPI_COMM_SPAWN_MULTIPLE, mpi_comm_spawn_multiple_f08_;
    pmpi_comm_spawn_multiple_, pmpi_comm_spawn_multiple__, pmpi_comm_spawn_multiple, PMPI_COMM_SPAWN_MULTIPLE,
    pmpi_comm_spawn_multiple_f08_, pmpir_comm_spawn_multiple_f08_);

// ---- Data representations ----

/// A Fortran conversion procedure: `(USERBUF, DATATYPE, COUNT, FILEBUF,
/// POSITION, EXTRA_STATE, IERROR)`.
type FConversion =
    unsafe extern "C" fn(*mut c_void, *const c_int, *const c_int, *mut c_void, *const i64, *const i64, *mut c_int);
/// A Fortran extent procedure: `(DATATYPE, EXTENT, EXTRA_STATE, IERROR)`.
type FExtent = unsafe extern "C" fn(*const c_int, *mut i64, *const i64, *mut c_int);

/// What a representation registered from Fortran keeps (for the program's
/// life, as the representation).
struct FortranDatarep {
    read: Option<FConversion>,
    write: Option<FConversion>,
    extent: FExtent,
    extra: i64,
}

/// `MPI_CONVERSION_FN_NULL`: never called (recognised by its address and
/// passed to C as NULL).
unsafe extern "C" fn conversion_fn_null(
    _: *mut c_void,
    _: *const c_int,
    _: *const c_int,
    _: *mut c_void,
    _: *const i64,
    _: *const i64,
    ierr: *mut c_int,
) {
    // SAFETY: a writable error argument.
    unsafe { *ierr = mpi_api::abi::MPI_ERR_CONVERSION };
}

/// The names under which `MPI_CONVERSION_FN_NULL` is exported (MPICH's).
macro_rules! conversion_null {
    ($($name:ident),+) => {
        $(
            /// `MPI_CONVERSION_FN_NULL` for Fortran programs.
            ///
            /// # Safety
            /// Never called by the library.
            #[no_mangle]
            pub unsafe extern "C" fn $name(
                a: *mut c_void, b: *const c_int, c: *const c_int, d: *mut c_void, e: *const i64, f: *const i64, g: *mut c_int,
            ) {
                // SAFETY: the arguments are passed on unchanged.
                unsafe { conversion_fn_null(a, b, c, d, e, f, g) }
            }
        )+
        /// Whether `p` is one of the exported `MPI_CONVERSION_FN_NULL`s (at
        /// the address the program sees, which may be its own stub).
        fn is_conversion_null(p: usize) -> bool {
            [$($name as *const () as usize),+].contains(&p)
                || [$(concat!(stringify!($name), "\0")),+].iter().any(|n| {
                    // SAFETY: a NUL-terminated name; RTLD_DEFAULT is the program's scope.
                    unsafe { libc::dlsym(libc::RTLD_DEFAULT, n.as_ptr().cast()) as usize == p }
                })
        }
    };
}
conversion_null!(
    mpi_conversion_fn_null_,
    mpi_conversion_fn_null__,
    mpi_conversion_fn_null,
    MPI_CONVERSION_FN_NULL,
    pmpi_conversion_fn_null_,
    pmpi_conversion_fn_null__,
    pmpi_conversion_fn_null,
    PMPI_CONVERSION_FN_NULL,
    __mpi_f08_callbacks_MOD_mpi_conversion_fn_null
);

unsafe fn convert(
    f: FConversion,
    user: *mut c_void,
    dt: MPI_Datatype,
    count: c_int,
    file: *mut c_void,
    pos: i64,
    d: &FortranDatarep,
) -> c_int {
    let mut ierr = 0;
    // SAFETY: the program's procedure, with the library's buffers.
    unsafe { f(user, &dt, &count, file, &pos, &d.extra, &mut ierr) };
    ierr
}

unsafe extern "C" fn read_trampoline(
    user: *mut c_void,
    dt: MPI_Datatype,
    count: c_int,
    file: *mut c_void,
    pos: i64,
    extra: *mut c_void,
) -> c_int {
    // SAFETY: the extra state given at registration, a leaked `FortranDatarep`.
    let d = unsafe { &*(extra as *const FortranDatarep) };
    // SAFETY: registered only when present.
    unsafe { convert(d.read.expect("registered with a read procedure"), user, dt, count, file, pos, d) }
}

unsafe extern "C" fn write_trampoline(
    user: *mut c_void,
    dt: MPI_Datatype,
    count: c_int,
    file: *mut c_void,
    pos: i64,
    extra: *mut c_void,
) -> c_int {
    // SAFETY: as above.
    let d = unsafe { &*(extra as *const FortranDatarep) };
    // SAFETY: registered only when present.
    unsafe { convert(d.write.expect("registered with a write procedure"), user, dt, count, file, pos, d) }
}

unsafe extern "C" fn extent_trampoline(dt: MPI_Datatype, extent: *mut isize, extra: *mut c_void) -> c_int {
    // SAFETY: as above.
    let d = unsafe { &*(extra as *const FortranDatarep) };
    let (mut ierr, mut e) = (0, 0i64);
    // SAFETY: the program's procedure; `extent` is the library's.
    unsafe {
        (d.extent)(&dt, &mut e, &d.extra, &mut ierr);
        *extent = e as isize;
    }
    ierr
}

type RegisterDatarepFn =
    unsafe extern "C" fn(*const c_char, *mut c_void, *mut c_void, *mut c_void, *mut c_void) -> c_int;
static REGISTER_DATAREP: Slot = Slot::new(c"MPI_Register_datarep");

/// `MPI_REGISTER_DATAREP(DATAREP, READ_CONVERSION_FN, WRITE_CONVERSION_FN,
/// DTYPE_FILE_EXTENT_FN, EXTRA_STATE, IERROR)`.
#[allow(clippy::too_many_arguments)]
unsafe fn register_datarep<const P: bool>(
    datarep: *const u8,
    read: *mut c_void,
    write: *mut c_void,
    extent: FExtent,
    extra: *const i64,
    ierror: *mut c_int,
    datarep_len: usize,
) {
    let f: RegisterDatarepFn = if P {
        x::PMPI_Register_datarep
    } else {
        // SAFETY: `RegisterDatarepFn` is `MPI_Register_datarep`'s type.
        unsafe { REGISTER_DATAREP.get::<RegisterDatarepFn>(x::MPI_Register_datarep) }
    };
    let proc_of = |p: *mut c_void| {
        // SAFETY: a Fortran procedure of the conversion type, unless it is
        // MPI_CONVERSION_FN_NULL.
        (!p.is_null() && !is_conversion_null(p as usize))
            .then(|| unsafe { std::mem::transmute::<*mut c_void, FConversion>(p) })
    };
    // SAFETY: the caller passes the addresses of its arguments and its string's length.
    unsafe {
        run("MPI_Register_datarep", ierror, || {
            let name = conv::str_in(datarep.cast(), datarep_len);
            let d = Box::into_raw(Box::new(FortranDatarep {
                read: proc_of(read),
                write: proc_of(write),
                extent,
                extra: *extra,
            }));
            let r = if (*d).read.is_some() { read_trampoline as *mut c_void } else { std::ptr::null_mut() };
            let w = if (*d).write.is_some() { write_trampoline as *mut c_void } else { std::ptr::null_mut() };
            let rc = f(name.as_ptr(), r, w, extent_trampoline as *mut c_void, d.cast());
            if rc != 0 {
                drop(Box::from_raw(d));
            }
            rc
        })
    }
}
spellings!(register_datarep(d: *const u8, r: *mut c_void, w: *mut c_void, e: FExtent, x: *const i64, ierror: *mut c_int, dl: usize)
        (d, r, w, e, x, ierror, dl);
    mpi_register_datarep_, mpi_register_datarep__, mpi_register_datarep, MPI_REGISTER_DATAREP, mpi_register_datarep_f08_;
    pmpi_register_datarep_, pmpi_register_datarep__, pmpi_register_datarep, PMPI_REGISTER_DATAREP, pmpi_register_datarep_f08_,
    pmpir_register_datarep_f08_);
