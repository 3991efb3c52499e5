//! Open MPI's native ABI under the recording core, which speaks the MPICH
//! ABI.
//!
//! The recording wrappers (`imp`, `special`, `rec`, `state`, `life`) were
//! written for MPICH-ABI handles (`int`s whose bits say the object kind),
//! MPICH's constants and `MPI_Status`. Rather than a second copy of them,
//! build.rs generates for Open MPI, from the same API table, two thin
//! translation layers (`ompi_imp` and `ompi_pmpi` in `wrappers.rs`):
//!
//! * the exported `MPI_X` jumps (when [`crate::detect::ABI`] is Open MPI's)
//!   to `ompi_imp::MPI_X`, which takes the application's Open MPI arguments,
//!   translates them to the MPICH ABI ([`foreign::to_core`]...), calls the recording
//!   wrapper `imp::MPI_X` and translates its outputs back;
//! * the recording wrapper calls `pmpi::MPI_X`, which under Open MPI goes to
//!   `ompi_pmpi::MPI_X`: MPICH-ABI arguments translated to Open MPI's
//!   ([`foreign::to_lib`]...), Open MPI's `PMPI_X` called, outputs translated back.
//!
//! What is translated: handles (predefined ones by name, Open MPI's
//! `&ompi_mpi_comm_world` to MPICH's `MPI_COMM_WORLD`; others interned
//! (`crate::foreign`) as MPICH-style handles of the right object kind, so a handle the library
//! reuses maps to the same `int`, as MPICH reuses its handles); statuses
//! (layout and fields); the special ranks (`MPI_ANY_SOURCE`,
//! `MPI_PROC_NULL`, `MPI_ROOT`), the error classes the core looks at,
//! `MPI_IN_PLACE`, `MPI_STATUS(ES)_IGNORE` and `MPI_COMM_TYPE_SHARED`. Each
//! mapping is a bijection, so what the application gets back is exactly what
//! Open MPI returned. Callbacks and everything else pass untouched: Open MPI
//! calls the application's functions with its own arguments.

use std::ffi::c_int;

use mpi_api::abi;
use mpi_api::ompi;

use crate::foreign;

/// Sets the predefined handles' translations (Open MPI's global objects
/// found by name); called once when the process's MPI is Open MPI.
pub fn init() {
    let pairs = ompi::PREDEFINED.iter().filter_map(|(name, ctype, symbol)| {
        let k = foreign::kind_of(ctype)?;
        let c = abi::CONSTANTS.iter().find(|c| c.name == *name)?;
        let sym = std::ffi::CString::new(*symbol).ok()?;
        // SAFETY: dlsym with a NUL-terminated name.
        let addr = unsafe { libc::dlsym(libc::RTLD_DEFAULT, sym.as_ptr()) } as usize;
        Some((addr, c.value as c_int, k))
    });
    foreign::set_predefined(pairs.collect::<Vec<_>>());
}

/// Special ranks, Open MPI's to MPICH's (a bijection on `int`).
pub fn rank_to_core(r: c_int) -> c_int {
    match r {
        ompi::MPI_ANY_SOURCE => abi::MPI_ANY_SOURCE,
        ompi::MPI_PROC_NULL => abi::MPI_PROC_NULL,
        ompi::MPI_ROOT => abi::MPI_ROOT,
        // Open MPI's value for MPICH's MPI_ROOT, which Open MPI does not use.
        abi::MPI_ROOT => ompi::MPI_ROOT,
        r => r,
    }
}

/// Inverse of [`rank_to_core`].
pub fn rank_to_lib(r: c_int) -> c_int {
    match r {
        abi::MPI_ANY_SOURCE => ompi::MPI_ANY_SOURCE,
        abi::MPI_PROC_NULL => ompi::MPI_PROC_NULL,
        abi::MPI_ROOT => ompi::MPI_ROOT,
        ompi::MPI_ROOT => abi::MPI_ROOT,
        r => r,
    }
}

/// Error classes the core reads (`MPI_ERR_IN_STATUS`, `MPI_ERR_PENDING`),
/// Open MPI's to MPICH's; a bijection (MPICH's value of `MPI_ERR_PENDING`'s
/// slot takes the value they displace).
pub fn error_to_core(e: c_int) -> c_int {
    match e {
        ompi::MPI_ERR_IN_STATUS => abi::MPI_ERR_IN_STATUS,
        ompi::MPI_ERR_PENDING => abi::MPI_ERR_PENDING,
        abi::MPI_ERR_IN_STATUS => ompi::MPI_ERR_PENDING,
        e => e,
    }
}

/// Inverse of [`error_to_core`].
pub fn error_to_lib(e: c_int) -> c_int {
    match e {
        abi::MPI_ERR_IN_STATUS => ompi::MPI_ERR_IN_STATUS,
        abi::MPI_ERR_PENDING => ompi::MPI_ERR_PENDING,
        ompi::MPI_ERR_PENDING => abi::MPI_ERR_IN_STATUS,
        e => e,
    }
}

/// `MPI_COMM_TYPE_SHARED` (Open MPI 0, MPICH 1), swapped with the value it
/// displaces.
pub fn split_type_to_core(t: c_int) -> c_int {
    match t {
        ompi::MPI_COMM_TYPE_SHARED => abi::MPI_COMM_TYPE_SHARED,
        abi::MPI_COMM_TYPE_SHARED => ompi::MPI_COMM_TYPE_SHARED,
        t => t,
    }
}

/// Inverse of [`split_type_to_core`] (a swap is its own inverse).
pub fn split_type_to_lib(t: c_int) -> c_int {
    split_type_to_core(t)
}

/// A buffer argument: `MPI_IN_PLACE` translated (`MPI_BOTTOM` is 0 in both).
pub fn buffer_to_core<T>(p: *mut T) -> *mut T {
    if p as usize == ompi::MPI_IN_PLACE {
        abi::MPI_IN_PLACE as *mut T
    } else if p as usize == abi::MPI_IN_PLACE {
        ompi::MPI_IN_PLACE as *mut T
    } else {
        p
    }
}

/// Inverse of [`buffer_to_core`] (a swap).
pub fn buffer_to_lib<T>(p: *mut T) -> *mut T {
    buffer_to_core(p)
}

/// An Open MPI status as the core's.
pub fn status_to_core(s: &ompi::MPI_Status, c: &mut abi::MPI_Status) {
    c.MPI_SOURCE = rank_to_core(s.MPI_SOURCE);
    c.MPI_TAG = s.MPI_TAG;
    c.MPI_ERROR = error_to_core(s.MPI_ERROR);
    c.set_byte_count(s._ucount as u64);
    c.set_cancelled(s._cancelled != 0);
}

/// A core status as Open MPI's.
pub fn status_to_lib(c: &abi::MPI_Status, s: &mut ompi::MPI_Status) {
    *s = ompi::MPI_Status {
        MPI_SOURCE: rank_to_lib(c.MPI_SOURCE),
        MPI_TAG: c.MPI_TAG,
        MPI_ERROR: error_to_lib(c.MPI_ERROR),
        _cancelled: c_int::from(c.cancelled()),
        _ucount: c.byte_count() as usize,
    };
}

/// Open MPI's `MPI_CART`, `MPI_GRAPH` and `MPI_DIST_GRAPH`, for
/// [`foreign::w_len`].
pub const TOPOLOGIES: foreign::Topologies = foreign::Topologies { cart: 1, graph: 2, dist_graph: 3 };
