//! Helpers of the C boundary: the panic guard around every export.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Value returned to C when a call panicked.
pub trait PanicValue {
    fn on_panic() -> Self;
}
impl PanicValue for std::os::raw::c_int {
    fn on_panic() -> Self {
        mpi_api::abi::MPI_ERR_INTERN
    }
}
impl PanicValue for i64 {
    fn on_panic() -> Self {
        0
    }
}
impl PanicValue for *mut std::ffi::c_void {
    fn on_panic() -> Self {
        std::ptr::null_mut()
    }
}
impl PanicValue for f64 {
    fn on_panic() -> Self {
        0.0
    }
}

/// Runs `f`, turning a panic into an error return so that no panic crosses
/// the C boundary.
#[inline(always)]
pub fn guard<R: PanicValue>(name: &'static str, f: impl FnOnce() -> R) -> R {
    // The program's code progress found due during the call (a user
    // reduction of a nonblocking collective) runs at its end, when the call
    // holds no lock any more.
    let f = || {
        let r = f();
        crate::rt::run_due();
        r
    };
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(e) => {
            let msg = e
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| e.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            eprintln!("{name}: internal error in mpi-core: {msg}");
            R::on_panic()
        }
    }
}
