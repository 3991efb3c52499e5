//! The MPI-5 standard ABI (`mpi_abi.h`, `libmpi_abi.so`) under the
//! recording core, which speaks the MPICH ABI.
//!
//! As for Open MPI (`crate::ompi`), build.rs generates from the API table
//! two translation layers, `std_imp` (the application's standard-ABI
//! arguments to the core's) and `std_pmpi` (the core's arguments to the
//! library's `PMPI_X`), with the standard ABI's description in
//! `mpi_api::stdabi`. What they translate, each way a bijection so that
//! the application gets exactly what its library returned:
//!
//! * handles ([`crate::foreign`]): the predefined ones (small integers in
//!   this ABI) to MPICH's of the same name, so traces name the same
//!   datatypes and operations on every library; the library's own handles
//!   interned, as whatever the library makes them (this project's
//!   `libmpi_abi.so` passes MPICH `int`s zero-extended, MPICH's own and
//!   Open MPI's theirs: the shim does not rely on it);
//! * the special ranks, `MPI_ANY_TAG`, thread levels, error classes and
//!   `MPI_COMM_TYPE_SHARED` (generated bijections, `std_ints`),
//!   `MPI_IN_PLACE` and `MPI_STATUS(ES)_IGNORE`;
//! * statuses: the standard fixes `MPI_SOURCE`, `MPI_TAG`, `MPI_ERROR` and
//!   leaves the count and the cancelled flag to the implementation in
//!   `MPI_internal[5]`. A library that keeps MPICH's two words there (this
//!   project's `libmpi_abi.so`, and MPICH's, whose status this is) is
//!   converted field by field; for any other the shim asks the library
//!   (`MPI_Get_count_c` with `MPI_BYTE`, `MPI_Test_cancelled`) and sets
//!   them back the same way (`MPI_Status_set_elements_c`,
//!   `MPI_Status_set_cancelled`). Which one is found out with those calls
//!   at the first status converted (after `MPI_Init`: a status exists only
//!   then).
//!
//! Everything else passes untouched (other integer constants, callbacks,
//! `MPI_File` handles, `MPI_UNWEIGHTED`, `MPI_BUFFER_AUTOMATIC`): the core
//! does not read them, and the library calls the application's callbacks
//! with its own arguments.

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use mpi_api::abi;
use mpi_api::stdabi::{self, MPI_Status as StdStatus};

use crate::foreign;
pub use crate::std_ints::*;

/// Sets the predefined handles' translations (the standard's values, paired
/// by name with MPICH's); called once when the process's MPI has the
/// standard ABI. Handles the MPICH ABI lacks (`MPI_LOGICAL1`,
/// `MPI_INTEGER16`...) are interned as the library's own.
pub fn init() {
    let pairs = stdabi::HANDLE_TYPES
        .iter()
        .filter_map(|(cname, ctype)| Some((foreign::kind_of(cname)?, *ctype)))
        .flat_map(|(k, ctype)| stdabi::handle_pairs(ctype).into_iter().map(move |(s, m)| (s as usize, m as c_int, k)));
    foreign::set_predefined(pairs.collect::<Vec<_>>());
}

/// The standard ABI's `MPI_CART`, `MPI_GRAPH` and `MPI_DIST_GRAPH`, for
/// [`foreign::w_len`].
pub const TOPOLOGIES: foreign::Topologies = foreign::Topologies { cart: 211, graph: 212, dist_graph: 213 };

/// A buffer argument: `MPI_IN_PLACE` (1 here, -1 in MPICH) swapped;
/// `MPI_BOTTOM` is 0 in both, `MPI_BUFFER_AUTOMATIC` passes.
pub fn buffer_to_core<T>(p: *mut T) -> *mut T {
    if p as usize == stdabi::STD_IN_PLACE {
        abi::MPI_IN_PLACE as *mut T
    } else if p as usize == abi::MPI_IN_PLACE {
        stdabi::STD_IN_PLACE as *mut T
    } else {
        p
    }
}

/// Inverse of [`buffer_to_core`] (a swap).
pub fn buffer_to_lib<T>(p: *mut T) -> *mut T {
    buffer_to_core(p)
}

/// Where the library keeps a status's count and cancelled flag.
mod layout {
    /// Not found out yet.
    pub const UNKNOWN: u8 = 0;
    /// MPICH's `count_lo` and `count_hi_and_cancelled` in `MPI_internal[0..2]`.
    pub const MPICH_WORDS: u8 = 1;
    /// Unknown: asked of the library.
    pub const ASK: u8 = 2;
}

static LAYOUT: AtomicU8 = AtomicU8::new(layout::UNKNOWN);

/// The library's status procedures (`PMPI_`), found once.
struct StatusCalls {
    get_count: Option<unsafe extern "C" fn(*const StdStatus, usize, *mut i64) -> c_int>,
    test_cancelled: Option<unsafe extern "C" fn(*const StdStatus, *mut c_int) -> c_int>,
    set_elements: Option<unsafe extern "C" fn(*mut StdStatus, usize, i64) -> c_int>,
    set_cancelled: Option<unsafe extern "C" fn(*mut StdStatus, c_int) -> c_int>,
    /// The standard's `MPI_BYTE`.
    byte: usize,
}

fn status_calls() -> &'static StatusCalls {
    static CALLS: OnceLock<StatusCalls> = OnceLock::new();
    CALLS.get_or_init(|| {
        let sym = |names: &[&CStr]| -> *mut c_void {
            names
                .iter()
                // SAFETY: dlsym with a NUL-terminated name.
                .map(|n| unsafe { libc::dlsym(libc::RTLD_NEXT, n.as_ptr()) })
                .find(|f| !f.is_null())
                .unwrap_or(std::ptr::null_mut())
        };
        // SAFETY: each transmute gives an address found by dlsym the
        // standard ABI's C prototype of the procedure of that name
        // (`MPI_Count` is 64-bit and `MPI_Datatype` pointer-sized there); a
        // null address becomes `None`.
        unsafe {
            StatusCalls {
                get_count: std::mem::transmute::<*mut c_void, Option<_>>(sym(&[
                    c"PMPI_Get_count_c",
                    c"PMPI_Get_elements_x",
                ])),
                test_cancelled: std::mem::transmute::<*mut c_void, Option<_>>(sym(&[c"PMPI_Test_cancelled"])),
                set_elements: std::mem::transmute::<*mut c_void, Option<_>>(sym(&[
                    c"PMPI_Status_set_elements_c",
                    c"PMPI_Status_set_elements_x",
                ])),
                set_cancelled: std::mem::transmute::<*mut c_void, Option<_>>(sym(&[c"PMPI_Status_set_cancelled"])),
                byte: stdabi::std_value("MPI_BYTE").unwrap_or(0x247) as usize,
            }
        }
    })
}

/// Where the library keeps the count, found out at the first call: a
/// status given a count above 32 bits and the cancelled flag by the
/// library is compared with MPICH's encoding of them.
fn status_layout() -> u8 {
    let l = LAYOUT.load(Ordering::Relaxed);
    if l != layout::UNKNOWN {
        return l;
    }
    let c = status_calls();
    // `MPITRACE_STD_STATUS=library` takes the path of an unknown layout on
    // any library (the tests run it on this project's).
    let forced = std::env::var("MPITRACE_STD_STATUS").is_ok_and(|v| v == "library");
    let (Some(set_elements), Some(set_cancelled), false) = (c.set_elements, c.set_cancelled, forced) else {
        LAYOUT.store(layout::ASK, Ordering::Relaxed);
        return layout::ASK;
    };
    let probe = |n: i64, cancelled: bool| -> bool {
        let mut s = StdStatus::default();
        // SAFETY: a status of the standard ABI and its MPI_BYTE.
        let ok = unsafe { set_elements(&mut s, c.byte, n) == 0 && set_cancelled(&mut s, c_int::from(cancelled)) == 0 };
        let mut m = abi::MPI_Status::default();
        m.set_byte_count(n as u64);
        m.set_cancelled(cancelled);
        ok && s.MPI_internal[..2] == [m.count_lo, m.count_hi_and_cancelled]
    };
    let l = if probe((3 << 32) | 5, true) && probe(7, false) { layout::MPICH_WORDS } else { layout::ASK };
    LAYOUT.store(l, Ordering::Relaxed);
    l
}

/// A standard status as the core's.
pub fn status_to_core(s: &StdStatus, m: &mut abi::MPI_Status) {
    m.MPI_SOURCE = rank_to_core(s.MPI_SOURCE);
    m.MPI_TAG = tag_to_core(s.MPI_TAG);
    m.MPI_ERROR = error_to_core(s.MPI_ERROR);
    if status_layout() == layout::MPICH_WORDS {
        m.count_lo = s.MPI_internal[0];
        m.count_hi_and_cancelled = s.MPI_internal[1];
        return;
    }
    let c = status_calls();
    let (mut n, mut cancelled) = (0i64, 0);
    // SAFETY: `s` is a status of the standard ABI, `c.byte` its MPI_BYTE.
    if c.get_count.is_some_and(|f| unsafe { f(s, c.byte, &mut n) } == 0) && n >= 0 {
        m.set_byte_count(n as u64);
    }
    // SAFETY: as above.
    if c.test_cancelled.is_some_and(|f| unsafe { f(s, &mut cancelled) } == 0) {
        m.set_cancelled(cancelled != 0);
    }
}

/// A core status as the standard's (`MPI_internal` the library does not
/// use for the count stays as it was).
pub fn status_to_lib(m: &abi::MPI_Status, s: &mut StdStatus) {
    s.MPI_SOURCE = rank_to_lib(m.MPI_SOURCE);
    s.MPI_TAG = tag_to_lib(m.MPI_TAG);
    s.MPI_ERROR = error_to_lib(m.MPI_ERROR);
    if status_layout() == layout::MPICH_WORDS {
        s.MPI_internal[0] = m.count_lo;
        s.MPI_internal[1] = m.count_hi_and_cancelled;
        return;
    }
    let c = status_calls();
    if let Some(f) = c.set_elements {
        // SAFETY: `s` is a status of the standard ABI, `c.byte` its MPI_BYTE.
        unsafe { f(s, c.byte, m.byte_count() as i64) };
    }
    if let Some(f) = c.set_cancelled {
        // SAFETY: as above.
        unsafe { f(s, c_int::from(m.cancelled())) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foreign::{kind, to_core, to_lib};

    #[test]
    fn handles_cross_by_name_and_back() {
        init();
        let std = |name: &str| stdabi::std_value(name).unwrap() as usize;
        // Predefined handles map to MPICH's of the same name, both ways.
        assert_eq!(to_core(std("MPI_COMM_WORLD"), kind::COMM), abi::MPI_COMM_WORLD);
        assert_eq!(to_lib(abi::MPI_COMM_WORLD, kind::COMM), std("MPI_COMM_WORLD"));
        assert_eq!(to_core(std("MPI_INT"), kind::DATATYPE), abi::MPI_INT);
        assert_eq!(to_lib(abi::MPI_DATATYPE_NULL, kind::DATATYPE), std("MPI_DATATYPE_NULL"));
        assert_eq!(to_lib(abi::MPI_REQUEST_NULL, kind::REQUEST), std("MPI_REQUEST_NULL"));
        // A datatype MPICH lacks (its MPI_INTEGER16 is the null datatype)
        // is the library's own: interned, and back to the same value.
        let i16 = to_core(std("MPI_INTEGER16"), kind::DATATYPE);
        assert_ne!(i16, abi::MPI_DATATYPE_NULL);
        assert_eq!(to_lib(i16, kind::DATATYPE), std("MPI_INTEGER16"));
        // The library's handles, whatever they are, round-trip and keep
        // their number when the library reuses them.
        let h = to_core(0x8400_0001, kind::COMM);
        assert_eq!((to_lib(h, kind::COMM), to_core(0x8400_0001, kind::COMM)), (0x8400_0001, h));
        assert_ne!(to_core(0x7f00_1234_5678, kind::COMM), h);
    }

    #[test]
    fn constants_cross_and_come_back() {
        assert_eq!(rank_to_core(-1), abi::MPI_ANY_SOURCE);
        assert_eq!(rank_to_core(-3), abi::MPI_PROC_NULL);
        assert_eq!(tag_to_core(-2), abi::MPI_ANY_TAG);
        assert_eq!(thread_level_to_core(4096), abi::MPI_THREAD_MULTIPLE);
        assert_eq!(error_to_core(19), abi::MPI_ERR_IN_STATUS);
        for v in -40_000..40_000 {
            assert_eq!(rank_to_lib(rank_to_core(v)), v);
            assert_eq!(tag_to_lib(tag_to_core(v)), v);
            assert_eq!(error_to_lib(error_to_core(v)), v);
            assert_eq!(thread_level_to_lib(thread_level_to_core(v)), v);
            assert_eq!(split_type_to_lib(split_type_to_core(v)), v);
        }
        let in_place = stdabi::STD_IN_PLACE as *mut u8;
        assert_eq!(buffer_to_core(in_place) as usize, abi::MPI_IN_PLACE);
        assert_eq!(buffer_to_lib(buffer_to_core(in_place)), in_place);
        assert!(buffer_to_core(std::ptr::null_mut::<u8>()).is_null());
    }
}
