//! Fortran calls recorded by the shim itself: those of Open MPI's Fortran
//! layers and of MPICH's `mpi_f08`, which call `PMPI_X` directly and never
//! reach the shim's C `MPI_X`, and those of MPICH's bindings that call its
//! internals (the attribute queries and settings, `MPICH_INTERNAL` in
//! `build/ofort.rs`).
//!
//! Otherwise, under an MPICH-ABI library the Fortran trampolines only note
//! the Fortran call site and jump to the MPI's own `mpi_x_` (which calls the
//! C `MPI_X`, recorded there, `site.rs`). In those cases
//! `site::fortran_enter` instead sends a Fortran call of a procedure with a
//! generated entry (`ofort` in `wrappers.rs`, from the API table and
//! `mpi_api::fortran::layout`) there:
//!
//! 1. the entry turns the Fortran arguments into the recording core's
//!    (MPICH-ABI) ones: `INTEGER` handles through Open MPI's `MPI_X_f2c`
//!    and then `ompi::to_core` (MPICH's are the C handles), the Fortran
//!    sentinels (`MPI_IN_PLACE`, `MPI_BOTTOM`, `MPI_STATUS(ES)_IGNORE`,
//!    variables found by name) to the core's values, statuses, strings, file
//!    handles, the data of array descriptors (MPICH's `mpi_x_f08ts_`);
//! 2. it notes the Fortran arguments as this thread's pending forward
//!    ([`run`]) and calls the recording wrapper `imp::MPI_X`, generic or
//!    special (Init, Wait family...), exactly as for a C call;
//! 3. the wrapper's `pmpi::MPI_X` finds the pending forward ([`pending`])
//!    and, instead of the library's C `PMPI_X`, calls `ofwd::MPI_X`, which
//!    calls the library's own Fortran procedure with the program's arguments
//!    (a status it asked to ignore replaced by one of its own, so the
//!    recorder learns the source and size) and turns the Fortran outputs
//!    (new handles, requests, statuses, 1-based indices, strings) into the
//!    core's for the recorder.
//!
//! So the library's Fortran procedure runs exactly once, with the program's
//! arguments, and the call is recorded once: anything it calls through a
//! C `MPI_X` (this project's bindings of the attribute calls do) is nested
//! inside the recorded call and not recorded (`rec::ThreadState::depth`). A
//! Fortran call made while a recorded call is in progress (a Fortran
//! callback of the library) goes straight to the library.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use mpi_api::abi;

/// Most words a Fortran call of the table passes (arguments, `ierror`,
/// hidden lengths).
pub const MAX_ARGS: usize = 24;

/// A Fortran call waiting for the recording wrapper's `pmpi::MPI_X`.
#[derive(Clone, Copy)]
pub struct Pending {
    /// The library's Fortran procedure.
    pub real: usize,
    /// How many of `args` it takes.
    pub n: usize,
    /// The program's arguments as it passed them (addresses and lengths).
    pub args: [usize; MAX_ARGS],
}

/// No pending forward.
const NONE: usize = usize::MAX;

thread_local! {
    /// Call id of the pending forward ([`NONE`] if none).
    static PENDING_ID: Cell<usize> = const { Cell::new(NONE) };
    static PENDING: Cell<Pending> = const { Cell::new(Pending { real: 0, n: 0, args: [0; MAX_ARGS] }) };
    /// The library's Fortran procedure chosen by `site::fortran_enter` for
    /// the entry it returns.
    static REAL: Cell<usize> = const { Cell::new(0) };
    /// Whether that procedure returns request indices 0-based ([`index`]).
    static ZERO_BASED: Cell<bool> = const { Cell::new(false) };
}

/// Notes the library's procedure for the entry about to run, and whether it
/// returns request indices 0-based (MPICH 4.0's `mpi_f08`).
pub fn set_real(f: usize, zero_based: bool) {
    REAL.with(|r| r.set(f));
    ZERO_BASED.with(|z| z.set(zero_based));
}

/// The library's procedure of the running entry.
pub fn real() -> usize {
    REAL.with(Cell::get)
}

/// Whether any Fortran call went through an entry: until then
/// [`pending`], asked by every `pmpi::MPI_X`, costs one load of this and no
/// thread-local access.
static USED: AtomicBool = AtomicBool::new(false);

/// Whether a Fortran call of call id `idx` waits for its `pmpi::MPI_X`.
#[inline]
pub fn pending(idx: usize) -> bool {
    USED.load(Ordering::Relaxed) && PENDING_ID.with(Cell::get) == idx
}

/// Takes the pending Fortran call of call id `idx`.
pub fn take(idx: usize) -> Option<Pending> {
    if !pending(idx) {
        return None;
    }
    PENDING_ID.with(|p| p.set(NONE));
    Some(PENDING.with(Cell::get))
}

/// Runs the recording wrapper `imp` of call id `idx` with the Fortran call
/// `real(args)` pending; calls `real` here if the wrapper did not (a
/// wrapper that failed, or a panic, which also stops tracing), so the
/// program's call always happens exactly once.
///
/// # Safety
/// `real` is the library's Fortran procedure taking `args` (the program's
/// arguments, as it passed them).
pub unsafe fn run(idx: usize, real: usize, args: &[usize], imp: impl FnOnce()) {
    let mut p = Pending { real, n: args.len(), args: [0; MAX_ARGS] };
    p.args[..args.len()].copy_from_slice(args);
    USED.store(true, Ordering::Relaxed);
    PENDING.with(|c| c.set(p));
    PENDING_ID.with(|c| c.set(idx));
    if catch_unwind(AssertUnwindSafe(imp)).is_err() {
        crate::rec::fail("internal error recording a Fortran call");
    }
    if let Some(p) = take(idx) {
        // SAFETY: this function's contract.
        unsafe { crate::ofwd::raw_call(p.real, &p.args[..p.n]) };
    }
}

/// Open MPI's `MPI_X_f2c` of each handle kind (`ompi::kind` order).
const F2C: [&CStr; crate::foreign::kind::COUNT] = [
    c"PMPI_Comm_f2c",
    c"PMPI_Group_f2c",
    c"PMPI_Type_f2c",
    c"PMPI_Op_f2c",
    c"PMPI_Request_f2c",
    c"PMPI_Errhandler_f2c",
    c"PMPI_Info_f2c",
    c"PMPI_Win_f2c",
    c"PMPI_Message_f2c",
    c"PMPI_Session_f2c",
];
static F2C_FN: [AtomicUsize; crate::foreign::kind::COUNT + 1] =
    [const { AtomicUsize::new(0) }; crate::foreign::kind::COUNT + 1];

/// Open MPI's C handle of a Fortran handle, by `MPI_X_f2c` (`slot` indexes
/// [`F2C_FN`], `name` is the procedure).
fn f2c(slot: usize, name: &CStr, f: c_int) -> *mut c_void {
    let mut p = F2C_FN[slot].load(Ordering::Relaxed);
    if p == 0 {
        // SAFETY: dlsym with a NUL-terminated name.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
        if p == 0 {
            return std::ptr::null_mut();
        }
        F2C_FN[slot].store(p, Ordering::Relaxed);
    }
    // SAFETY: Open MPI's `MPI_X_f2c(MPI_Fint)` returns the C handle (a
    // pointer), or its null handle for an index it does not know.
    unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_int) -> *mut c_void>(p)(f) }
}

/// Whether the library has the MPICH ABI (the entries run there for the
/// procedures of `MPICH_INTERNAL` in `build/ofort.rs` and for MPICH's
/// `mpi_f08`).
fn mpich() -> bool {
    crate::detect::ABI.load(Ordering::Relaxed) == crate::detect::kind::MPICH
}

/// The core's (MPICH-ABI) handle of a Fortran handle of kind `k` (the same
/// integer under the MPICH ABI).
pub fn handle(f: c_int, k: usize) -> c_int {
    if mpich() {
        return f;
    }
    crate::foreign::ptr_to_core(f2c(k, F2C[k], f), k)
}

/// The core's error code (or class) of the library's.
pub fn error(e: c_int) -> c_int {
    if mpich() {
        e
    } else {
        crate::ompi::error_to_core(e)
    }
}

/// Open MPI's file handle of a Fortran one (`MPI_File` is a pointer in
/// both ABIs and passes the translation layers as it is).
pub fn file(f: c_int) -> *mut c_void {
    f2c(crate::foreign::kind::COUNT, c"PMPI_File_f2c", f)
}

/// A Fortran sentinel (`MPI_IN_PLACE`...): a variable found by name, whose
/// address the program passes. Open MPI's are common blocks of `mpif.h`
/// (the same symbols in `mpi_f08`); the MPICH ABI's a word of a common
/// block of `mpif.h` (MPICH's, which this project's library shares) or a
/// variable of MPICH's `mpi_f08`.
struct Sentinel {
    ompi: &'static CStr,
    /// The common block, the offset in it, and the `mpi_f08` variable.
    mpich: (&'static CStr, usize, &'static CStr),
    /// Resolved addresses: Open MPI's, the MPICH common block's word, the
    /// MPICH `mpi_f08` variable's (`usize::MAX`: none).
    at: [AtomicUsize; 3],
}

impl Sentinel {
    const fn new(ompi: &'static CStr, mpich: (&'static CStr, usize, &'static CStr)) -> Self {
        Sentinel { ompi, mpich, at: [const { AtomicUsize::new(0) }; 3] }
    }

    /// The address of symbol `name` plus `offset` (cached in slot `k`).
    fn resolve(&self, k: usize, name: &CStr, offset: usize) -> usize {
        let mut a = self.at[k].load(Ordering::Relaxed);
        if a == 0 {
            // The program's own definition if it has the variable (the one
            // the library then compares against too), else the library's.
            // SAFETY: dlsym with a NUL-terminated name.
            let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize;
            a = if p == 0 { usize::MAX } else { p + offset };
            self.at[k].store(a, Ordering::Relaxed);
        }
        a
    }

    /// Whether `p` is the sentinel's address.
    fn is(&self, p: usize) -> bool {
        p != 0
            && if mpich() {
                let (block, offset, f08) = self.mpich;
                p == self.resolve(1, block, offset) || p == self.resolve(2, f08, 0)
            } else {
                p == self.resolve(0, self.ompi, 0)
            }
    }
}

static IN_PLACE: Sentinel = Sentinel::new(c"mpi_fortran_in_place_", (c"mpipriv1_", 4, c"MPIR_F08_MPI_IN_PLACE"));
static BOTTOM: Sentinel = Sentinel::new(c"mpi_fortran_bottom_", (c"mpipriv1_", 0, c"MPIR_F08_MPI_BOTTOM"));
static STATUS_IGNORE: Sentinel =
    Sentinel::new(c"mpi_fortran_status_ignore_", (c"mpipriv1_", 8, c"MPIR_F08_MPI_STATUS_IGNORE_OBJ"));
static STATUSES_IGNORE: Sentinel =
    Sentinel::new(c"mpi_fortran_statuses_ignore_", (c"mpipriv2_", 0, c"MPIR_F08_MPI_STATUSES_IGNORE_OBJ"));

/// A choice buffer as the core sees it (`MPI_IN_PLACE`, `MPI_BOTTOM` mapped).
pub fn buffer(p: usize) -> *mut c_void {
    if IN_PLACE.is(p) {
        abi::MPI_IN_PLACE as *mut c_void
    } else if BOTTOM.is(p) {
        std::ptr::null_mut()
    } else {
        p as *mut c_void
    }
}

/// The address of the data of a choice buffer given as a gfortran array
/// descriptor (MPICH's `mpi_f08` procedures `mpi_x_f08ts_`): its first word.
///
/// # Safety
/// `d` is null or the address of a descriptor.
pub unsafe fn descriptor_data(d: usize) -> usize {
    if d == 0 {
        0
    } else {
        // SAFETY: the caller's contract.
        unsafe { *(d as *const usize) }
    }
}

/// Whether a Fortran status argument is `MPI_STATUS_IGNORE`.
pub fn is_status_ignore(p: usize) -> bool {
    STATUS_IGNORE.is(p)
}

/// Whether a Fortran status array argument is `MPI_STATUSES_IGNORE`.
pub fn is_statuses_ignore(p: usize) -> bool {
    STATUSES_IGNORE.is(p)
}

/// The `INTEGER`s of a Fortran status: Open MPI's `MPI_STATUS_SIZE` (6)
/// holding its C `MPI_Status` as it is (`MPI_Status_f2c` copies it word by
/// word); MPICH's (5) are its C `MPI_Status` too, the core's layout.
pub fn status_ints() -> usize {
    if mpich() {
        std::mem::size_of::<abi::MPI_Status>() / 4
    } else {
        std::mem::size_of::<mpi_api::ompi::MPI_Status>() / 4
    }
}

/// The core's status of the Fortran status at `p` (the `k`-th of an array).
///
/// # Safety
/// `p` points to at least `k + 1` Fortran statuses.
pub unsafe fn status(p: usize, k: usize) -> abi::MPI_Status {
    let at = (p as *const c_int).wrapping_add(k * status_ints());
    if mpich() {
        // SAFETY: the caller's contract; Fortran `INTEGER`s are only 4-byte aligned.
        return unsafe { std::ptr::read_unaligned(at as *const abi::MPI_Status) };
    }
    // SAFETY: as above.
    let s = unsafe { std::ptr::read_unaligned(at as *const mpi_api::ompi::MPI_Status) };
    let mut c = abi::MPI_Status::default();
    crate::ompi::status_to_core(&s, &mut c);
    c
}

/// The core's rank of a Fortran rank argument (`MPI_ANY_SOURCE`...).
pub fn rank(r: c_int) -> c_int {
    if mpich() {
        r
    } else {
        crate::ompi::rank_to_core(r)
    }
}

/// The core's split type of a Fortran one (`MPI_COMM_TYPE_SHARED`).
pub fn split_type(t: c_int) -> c_int {
    if mpich() {
        t
    } else {
        crate::ompi::split_type_to_core(t)
    }
}

/// A blank-padded Fortran string of `len` bytes as a C string.
///
/// # Safety
/// `p` points to `len` bytes (or is null).
pub unsafe fn str_in(p: usize, len: usize) -> Vec<c_char> {
    if p == 0 {
        return vec![0];
    }
    // SAFETY: the caller's contract.
    let s = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
    let end = s.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    s[..end].iter().take_while(|&&b| b != 0).map(|&b| b as c_char).chain([0]).collect()
}

/// Copies the Fortran string the library wrote (`len` bytes at `f`,
/// blank-padded) into the core's buffer `c` of `len + 1` bytes.
///
/// # Safety
/// As the arguments say.
pub unsafe fn str_out(c: *mut c_char, f: usize, len: usize) {
    if c.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    let s = unsafe { str_in(f, len) };
    // SAFETY: `s` has at most `len + 1` bytes, the NUL included.
    unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), c, s.len()) };
}

/// A 1-based Fortran index (`MPI_Waitany`...) as C's.
pub fn index(f: c_int) -> c_int {
    // MPI_UNDEFINED, the same in both ABIs.
    const UNDEFINED: c_int = -32766;
    if f == UNDEFINED || f == UNDEFINED + 1 {
        // MPICH 4.1's and later `mpi_f08` add 1 to MPI_UNDEFINED too
        // (pmodels/mpich#6989); no index is negative.
        UNDEFINED
    } else if f <= 0 || ZERO_BASED.with(Cell::get) {
        f
    } else {
        f - 1
    }
}
