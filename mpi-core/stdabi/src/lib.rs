//! `libmpi_abi.so.1`: the MPI-5 standard ABI (MPI Forum ABI 1.0) of
//! mpi-core, for programs built against `mpi_abi.h` (`mpicc -mpi-abi`).
//!
//! There is one MPI library, `libmpi.so.12` (MPICH ABI); this one holds no
//! MPI logic of its own. Its entry points are generated from the API table
//! (`build.rs`, `mpi_api::stdabi::codegen`): each converts the arguments it
//! is given (handles, constants, statuses, special pointers) to the MPICH
//! ABI, calls the same procedure of `libmpi.so.12`, and converts the results
//! and the error code back (`cv`). Callbacks the program registers (user
//! reduction operations, error handlers, attribute copy and delete
//! functions, generalized requests) are wrapped in trampolines that convert
//! the handles and codes the library passes them (`handwritten`).
//!
//! `libmpi.so.12` is loaded with `dlopen` on first use, from the directory
//! of this library (as installed, or the cargo target directory), or from
//! `$MPICORE_LIBMPI` when set. It is loaded `RTLD_LOCAL | RTLD_DEEPBIND`:
//! its `MPI_X` symbols (MPICH ABI) never take the place of this library's
//! for the program, and its own references to them stay its own.

#![allow(non_snake_case)]

use std::ffi::{c_void, CStr, CString};
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::OnceLock;

use mpi_api::stdabi;

pub mod attr;
pub mod cv;
pub mod handwritten;

/// A symbol found with `dlsym`.
pub type Sym = NonNull<c_void>;

mod boundary {
    include!(concat!(env!("OUT_DIR"), "/boundary.rs"));
}
pub use boundary::{Lib, LEFT_OUT};

/// `libmpi.so.12`, loaded.
pub struct Loaded {
    pub lib: Lib,
    /// MPICH's `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` (exported pointer
    /// constants) and `MPI_T_PVAR_ALL_HANDLES`.
    pub unweighted: usize,
    pub weights_empty: usize,
    pub pvar_all_handles: usize,
}

static LOADED: OnceLock<Loaded> = OnceLock::new();

/// Where this library is, so `libmpi.so.12` is looked for next to it.
fn own_dir() -> Option<std::path::PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: `dladdr` fills `info` for an address of this library (this
    // function's); it returns 0 when it cannot.
    let ok = unsafe { libc::dladdr(own_dir as *const c_void, info.as_mut_ptr()) };
    if ok == 0 {
        return None;
    }
    // SAFETY: `dladdr` succeeded, so `info` is filled and `dli_fname` is
    // NULL or a NUL-terminated path owned by the loader.
    let fname = unsafe { info.assume_init().dli_fname };
    if fname.is_null() {
        return None;
    }
    // SAFETY: not NULL, a NUL-terminated string (above).
    let path = unsafe { CStr::from_ptr(fname) }.to_string_lossy().into_owned();
    std::path::Path::new(&path).parent().map(|p| p.to_path_buf())
}

fn dlerror() -> String {
    // SAFETY: `dlerror` returns NULL or a NUL-terminated message.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: not NULL (above).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

fn load() -> Result<Loaded, String> {
    let mut tried = Vec::new();
    let mut candidates: Vec<String> = Vec::new();
    if let Ok(p) = std::env::var("MPICORE_LIBMPI") {
        candidates.push(p);
    }
    if let Some(dir) = own_dir() {
        for name in ["libmpi.so.12", "libmpi.so"] {
            let p = dir.join(name);
            if p.exists() {
                candidates.push(p.to_string_lossy().into_owned());
            }
        }
    }
    candidates.push("libmpi.so.12".into());
    for c in candidates {
        let Ok(cname) = CString::new(c.clone()) else { continue };
        // SAFETY: a NUL-terminated path; loading runs the library's
        // initializers, which the MPI library has none of that matter.
        let h = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND) };
        if h.is_null() {
            tried.push(format!("{c}: {}", dlerror()));
            continue;
        }
        let sym = |name: &CStr| {
            // SAFETY: `h` is a live handle and `name` NUL-terminated.
            NonNull::new(unsafe { libc::dlsym(h, name.as_ptr()) })
        };
        if sym(c"PMPI_Init").is_none() || sym(c"MPI_UNWEIGHTED").is_none() {
            tried.push(format!("{c}: not mpi-core's libmpi.so.12"));
            continue;
        }
        let pointer_const = |name: &CStr| {
            // SAFETY: the symbol is an exported `T * const` of libmpi.so.12:
            // reading it gives the pointer value.
            sym(name).map_or(0, |p| unsafe { *(p.as_ptr() as *const usize) })
        };
        return Ok(Loaded {
            lib: Lib::load(&sym),
            unweighted: pointer_const(c"MPI_UNWEIGHTED"),
            weights_empty: pointer_const(c"MPI_WEIGHTS_EMPTY"),
            pvar_all_handles: pointer_const(c"MPI_T_PVAR_ALL_HANDLES"),
        });
    }
    Err(tried.join("; "))
}

/// `libmpi.so.12`; if it cannot be loaded, the program ends with a
/// message, as an MPI whose library is missing would.
pub fn loaded() -> &'static Loaded {
    LOADED.get_or_init(|| match load() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("libmpi_abi.so: cannot load libmpi.so.12 (the MPI library this standard-ABI library calls): {e}");
            std::process::exit(1);
        }
    })
}

/// The procedures of `libmpi.so.12`.
pub fn lib() -> &'static Lib {
    &loaded().lib
}

/// What a call returns when it panicked.
pub trait Fallback {
    fn fallback() -> Self;
}
impl Fallback for c_int {
    fn fallback() -> Self {
        stdabi_err("MPI_ERR_INTERN")
    }
}
impl Fallback for f64 {
    fn fallback() -> Self {
        0.0
    }
}
impl Fallback for i64 {
    fn fallback() -> Self {
        0
    }
}
impl Fallback for usize {
    fn fallback() -> Self {
        0
    }
}

/// The standard ABI's value of an error class, by name.
pub fn stdabi_err(name: &str) -> c_int {
    stdabi::std_value(name).unwrap_or(16) as c_int
}

/// Runs an entry point's body; a panic (a bug of this library) becomes
/// `MPI_ERR_INTERN` with a message, never an unwind into C.
pub fn guard<R: Fallback>(name: &str, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let why = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            eprintln!("libmpi_abi.so: internal error in {name}: {why}");
            R::fallback()
        }
    }
}

/// The result of a procedure the loaded `libmpi.so.12` lacks (an older
/// build): `MPI_ERR_UNSUPPORTED_OPERATION`, with a message.
pub fn missing(name: &str) -> c_int {
    eprintln!("libmpi_abi.so: {name} is not in the loaded libmpi.so.12");
    stdabi_err("MPI_ERR_UNSUPPORTED_OPERATION")
}
