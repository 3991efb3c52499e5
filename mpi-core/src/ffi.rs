//! Helpers of the C boundary: the panic guard around every export.
//!
//! A panic inside the library leaves its state possibly half-updated (the
//! state lock ignores poisoning, so nothing else would notice): after one,
//! the library is failed for good. The panicking call reports the panic
//! through the error handler of `MPI_COMM_WORLD` (so under the default
//! `MPI_ERRORS_ARE_FATAL` the job ends with the panic's message), and every
//! later call does not run but fails the same way with `MPI_ERR_INTERN`,
//! but for the few that touch no state (see [`runs_after_failure`]).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use mpi_api::abi::*;

use crate::rt::error::MpiError;

/// Value returned to C when a call panicked, or ran after a panic.
pub trait PanicValue {
    /// The value to return; `why` is the failure, `name` the call's.
    fn on_panic(name: &str, why: &str) -> Self;
}
impl PanicValue for std::os::raw::c_int {
    /// The failure goes through the error handler of `MPI_COMM_WORLD`
    /// (once per thread at a time: a handler's own MPI calls, failing too,
    /// just return the code).
    fn on_panic(name: &str, why: &str) -> Self {
        thread_local! {
            static REPORTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }
        if REPORTING.with(|r| r.replace(true)) {
            return MPI_ERR_INTERN;
        }
        let code = crate::capi::raise(MPI_COMM_WORLD, name, MpiError::new(MPI_ERR_INTERN, why.to_string()));
        REPORTING.with(|r| r.set(false));
        code
    }
}
impl PanicValue for i64 {
    fn on_panic(_: &str, _: &str) -> Self {
        0
    }
}
impl PanicValue for *mut std::ffi::c_void {
    fn on_panic(_: &str, _: &str) -> Self {
        std::ptr::null_mut()
    }
}
impl PanicValue for f64 {
    fn on_panic(_: &str, _: &str) -> Self {
        0.0
    }
}

/// What the first panic said (with the call it happened in): set once, the
/// library is failed from then on.
static FAILED: OnceLock<String> = OnceLock::new();

/// Calls that still run once the library failed: they read no state that a
/// panic may have left half-updated (or, `MPI_Abort`, end the job), and a
/// program needs them to report the failure and stop.
fn runs_after_failure(name: &str) -> bool {
    matches!(
        name,
        "MPI_Abort"
            | "MPI_Error_class"
            | "MPI_Error_string"
            | "MPI_Initialized"
            | "MPI_Finalized"
            | "MPI_Wtime"
            | "MPI_Wtick"
            | "MPI_Get_version"
            | "MPI_Get_library_version"
    )
}

/// The test hook `MPICORE_TEST_PANIC=<MPI_X>`: call `MPI_X` panics, with
/// the state lock held (as a bug in the library would), for the tests of
/// what follows a panic. Read once; compiled in always.
fn test_panic(name: &str) {
    static WHICH: OnceLock<Option<String>> = OnceLock::new();
    if WHICH.get_or_init(|| std::env::var("MPICORE_TEST_PANIC").ok()).as_deref() == Some(name) {
        crate::rt::try_with(|_| panic!("test hook MPICORE_TEST_PANIC={name}"));
    }
}

/// Runs `f`, turning a panic into an error return so that no panic crosses
/// the C boundary; once a call panicked, runs nothing more (see the module).
#[inline(always)]
pub fn guard<R: PanicValue>(name: &'static str, f: impl FnOnce() -> R) -> R {
    if let Some(why) = FAILED.get() {
        if !runs_after_failure(name) {
            return R::on_panic(name, &format!("the MPI library failed in an earlier call ({why}) and cannot go on"));
        }
    }
    // The program's code progress found due during the call (a user
    // reduction of a nonblocking collective) runs at its end, when the call
    // holds no lock any more.
    let f = || {
        test_panic(name);
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
            let why = format!("internal error (panic) in {name}: {msg}");
            let _ = FAILED.set(why.clone());
            R::on_panic(name, &why)
        }
    }
}
