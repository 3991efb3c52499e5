//! Conversions of Fortran arguments to C ones, used by the generated and
//! the handwritten wrappers.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use mpi_api::abi::{MPI_File, MPI_Status};

/// A common block's storage, exported under its Fortran name.
#[repr(C, align(16))]
pub struct Common<const N: usize>(UnsafeCell<[u8; N]>);

impl<const N: usize> Common<N> {
    pub const fn new() -> Self {
        Common(UnsafeCell::new([0; N]))
    }
}

impl<const N: usize> Default for Common<N> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the library never reads or writes the storage, only compares
// addresses with it (a Fortran program may write its variables: that is
// its own business, and it writes its own copy).
unsafe impl<const N: usize> Sync for Common<N> {}

/// The address of symbol `name` as the dynamic linker resolves it for the
/// program (its own definition first), or `fallback`.
fn lookup(name: &CStr, fallback: usize) -> usize {
    // SAFETY: `name` is a NUL-terminated string; RTLD_DEFAULT searches the
    // global scope, which is what the program's references resolve to.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize;
    if p == 0 {
        fallback
    } else {
        p
    }
}

/// The addresses of the special arguments in the program.
struct Specials {
    bottom: usize,
    in_place: usize,
    status_ignore: usize,
    statuses_ignore: usize,
    errcodes_ignore: usize,
    unweighted: usize,
    weights_empty: usize,
}

fn specials() -> &'static Specials {
    static S: OnceLock<Specials> = OnceLock::new();
    S.get_or_init(|| {
        let p1 = lookup(c"mpipriv1_", super::mpipriv1_.0.get() as usize);
        let p2 = lookup(c"mpipriv2_", super::mpipriv2_.0.get() as usize);
        Specials {
            bottom: p1,
            in_place: p1 + 4,
            status_ignore: p1 + 8,
            statuses_ignore: p2,
            errcodes_ignore: p2 + 20,
            unweighted: lookup(c"mpifcmb5_", super::mpifcmb5_.0.get() as usize),
            weights_empty: lookup(c"mpifcmb9_", super::mpifcmb9_.0.get() as usize),
        }
    })
}

/// A choice buffer: `MPI_BOTTOM` and `MPI_IN_PLACE` become the C values.
pub fn buffer(p: *mut c_void) -> *mut c_void {
    let s = specials();
    match p as usize {
        a if a == s.bottom => mpi_api::abi::MPI_BOTTOM as *mut c_void,
        a if a == s.in_place => mpi_api::abi::MPI_IN_PLACE as *mut c_void,
        _ => p,
    }
}

/// A status: `MPI_STATUS_IGNORE` becomes the C value.
pub fn status(p: *mut c_void) -> *mut MPI_Status {
    if p as usize == specials().status_ignore {
        mpi_api::abi::MPI_STATUS_IGNORE as *mut MPI_Status
    } else {
        p.cast()
    }
}

/// An array of statuses: `MPI_STATUSES_IGNORE` becomes the C value.
pub fn statuses(p: *mut c_void) -> *mut MPI_Status {
    if p as usize == specials().statuses_ignore {
        mpi_api::abi::MPI_STATUSES_IGNORE as *mut MPI_Status
    } else {
        p.cast()
    }
}

/// An array of error codes: `MPI_ERRCODES_IGNORE` becomes the C value.
pub fn errcodes(p: *mut c_void) -> *mut c_int {
    if p as usize == specials().errcodes_ignore {
        mpi_api::abi::MPI_ERRCODES_IGNORE as *mut c_int
    } else {
        p.cast()
    }
}

/// Graph weights: `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` become the C values.
pub fn weights(p: *mut c_void) -> *mut c_int {
    let s = specials();
    match p as usize {
        a if a == s.unweighted => crate::capi::topo::MPI_UNWEIGHTED.0 as *mut c_int,
        a if a == s.weights_empty => crate::capi::topo::MPI_WEIGHTS_EMPTY.0 as *mut c_int,
        _ => p.cast(),
    }
}

/// A Fortran `CHARACTER` argument as a C string: trailing blanks dropped
/// (the standard ignores them), cut at a NUL.
///
/// # Safety
/// `p` points to `len` readable bytes (or `len` is 0).
pub unsafe fn str_in(p: *const c_void, len: usize) -> CString {
    let bytes = if len == 0 || p.is_null() {
        &[][..]
    } else {
        // SAFETY: the contract.
        unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
    };
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    CString::new(&bytes[..end]).unwrap_or_default()
}

/// A C buffer for an output string, copied blank-padded into the Fortran
/// `CHARACTER` variable afterwards.
pub struct StrOut(Vec<u8>);

impl StrOut {
    /// Room for the Fortran variable's `len` characters, for the longest
    /// string the library writes (`MPI_MAX_LIBRARY_VERSION_STRING`), and
    /// for `hint` characters (a length the program gave the C call).
    pub fn new(len: usize, hint: c_int) -> Self {
        StrOut(vec![0; len.max(8192).max(hint.max(0) as usize) + 1])
    }
    pub fn as_mut_ptr(&mut self) -> *mut c_char {
        self.0.as_mut_ptr().cast()
    }
    /// Copies the string into `dst` (`len` bytes), padded with blanks,
    /// if the call succeeded.
    ///
    /// # Safety
    /// `dst` points to `len` writable bytes (or `len` is 0).
    pub unsafe fn finish(&self, rc: c_int, dst: *mut c_void, len: usize) {
        if rc != 0 || len == 0 || dst.is_null() {
            return;
        }
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len()).min(len);
        // SAFETY: the contract; the buffers are distinct.
        let out = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), len) };
        out[..n].copy_from_slice(&self.0[..n]);
        out[n..].fill(b' ');
    }
}

/// A Fortran file handle (an integer) as the C handle.
///
/// # Safety
/// `p` points to an INTEGER.
pub unsafe fn file_in(p: *const c_void) -> MPI_File {
    // SAFETY: the contract.
    crate::io::from_fint(unsafe { *p.cast::<c_int>() })
}

/// Returns C file handle `f` to Fortran, if the call succeeded.
///
/// # Safety
/// `p` points to a writable INTEGER.
pub unsafe fn file_out(rc: c_int, f: MPI_File, p: *mut c_void) {
    if rc == 0 {
        // SAFETY: the contract.
        unsafe { *p.cast::<c_int>() = crate::io::to_fint(f) };
    }
}

/// Stores the return code in the optional `IERROR` argument.
///
/// # Safety
/// `ierror` is NULL or a writable INTEGER.
pub unsafe fn set_ierror(ierror: *mut c_int, rc: c_int) {
    if !ierror.is_null() {
        // SAFETY: the contract.
        unsafe { *ierror = rc };
    }
}

/// The C function a `mpi_` spelling calls: the symbol `name` as the
/// program sees it (a profiling library's `MPI_X` first), looked up once.
pub struct Slot {
    name: &'static CStr,
    addr: AtomicUsize,
}

impl Slot {
    pub const fn new(name: &'static CStr) -> Self {
        Slot { name, addr: AtomicUsize::new(0) }
    }

    /// The function, `F` being its `extern "C" fn` type; `ours` (the
    /// library's own `MPI_X`) if the lookup finds nothing.
    ///
    /// # Safety
    /// `F` is the function pointer type of the C procedure `name`.
    pub unsafe fn get<F: Copy>(&self, ours: F) -> F {
        const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<usize>()) };
        let mut a = self.addr.load(Ordering::Acquire);
        if a == 0 {
            // SAFETY: `F` is a function pointer (the contract), as wide as usize.
            let fallback: usize = unsafe { std::mem::transmute_copy(&ours) };
            a = lookup(self.name, fallback);
            self.addr.store(a, Ordering::Release);
        }
        // SAFETY: `a` is the address of the C procedure `name` (found by its
        // name, or ours), whose type is `F` (the contract).
        unsafe { std::mem::transmute_copy(&a) }
    }
}
