//! The next definitions of `PMPI_X`, resolved lazily with `dlsym(RTLD_NEXT)`.
//!
//! The shim never links an MPI library: whichever library the application
//! runs on (this project's, MPICH, any MPICH-ABI library) provides the
//! `PMPI_X` symbols found after the shim in the lookup order.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use crate::PNAMES;

/// The addresses found so far, by call id (null: not looked up yet, or missing).
static RESOLVED: [AtomicPtr<c_void>; PNAMES.len()] = [const { AtomicPtr::new(std::ptr::null_mut()) }; PNAMES.len()];

/// The address of `PMPI_X` for call id `idx`, if the MPI library has it.
#[inline]
pub fn resolve(idx: usize) -> Option<*mut c_void> {
    let p = RESOLVED[idx].load(Ordering::Relaxed);
    if !p.is_null() {
        return Some(p);
    }
    // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT searches the
    // objects loaded after this one.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, PNAMES[idx].as_ptr()) };
    if p.is_null() {
        return None;
    }
    RESOLVED[idx].store(p, Ordering::Relaxed);
    Some(p)
}

/// Reports (once per process) that the MPI library lacks a procedure.
pub fn missing(name: &str) {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    if !REPORTED.swap(true, Ordering::Relaxed) {
        eprintln!("mpitrace: the MPI library has no P{name}; the call returns an error (further misses not reported)");
    }
}
