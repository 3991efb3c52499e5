//! Values of predefined attributes (`MPI_Comm_get_attr(MPI_COMM_WORLD,
//! MPI_APPNUM, ...)`): libmpi.so.12 answers with a pointer to an int of
//! the MPICH ABI; where that int is a constant of a family the two ABIs
//! number differently (a rank sentinel, an error code, a window flavor or
//! model), the program gets a pointer to the standard's value instead.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::cv;

/// One converted value per attribute that needs one (`MPI_HOST`,
/// `MPI_IO`, `MPI_LASTUSEDCODE`, `MPI_WIN_CREATE_FLAVOR`, `MPI_WIN_MODEL`).
static CONVERTED: [AtomicI32; 5] = [const { AtomicI32::new(0) }; 5];

/// After a successful attribute query with `keyval` (the program's, standard
/// ABI) that found a value (`*flag` true), replaces a predefined
/// attribute's value by the standard ABI's.
///
/// # Safety
/// `attribute_val` and `flag` are NULL or what the query wrote: a pointer to
/// the attribute's value, and a flag.
pub unsafe fn predefined_value(keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) {
    let value = |n: &str| mpi_api::stdabi::std_value(n).unwrap_or(-1) as c_int;
    let conv: (usize, fn(c_int) -> c_int) = match keyval {
        k if k == value("MPI_HOST") => (0, cv::rank_out),
        k if k == value("MPI_IO") => (1, cv::rank_out),
        k if k == value("MPI_LASTUSEDCODE") => (2, cv::errcode_out),
        k if k == value("MPI_WIN_CREATE_FLAVOR") => (3, cv::win_flavor_out),
        k if k == value("MPI_WIN_MODEL") => (4, cv::win_model_out),
        _ => return,
    };
    if attribute_val.is_null() || flag.is_null() {
        return;
    }
    // SAFETY: `flag` was written by the query (the contract).
    if unsafe { *flag } == 0 {
        return;
    }
    let slot = attribute_val as *mut *const c_int;
    // SAFETY: the query stored a pointer to the attribute's int there (the
    // contract; predefined attributes are ints).
    let p = unsafe { *slot };
    if p.is_null() {
        return;
    }
    // SAFETY: the library's pointer to the attribute's int (above).
    let v = (conv.1)(unsafe { *p });
    CONVERTED[conv.0].store(v, Ordering::Relaxed);
    // SAFETY: `slot` is writable (the program's attribute_val argument).
    unsafe { *slot = CONVERTED[conv.0].as_ptr() };
}
