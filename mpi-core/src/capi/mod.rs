//! The C API, one module per chapter. Every `pub unsafe fn MPI_X` here is
//! exported as `MPI_X`/`PMPI_X` by the wrappers that build.rs generates from
//! the API table. Functions here validate and convert C arguments, call the
//! runtime (`crate::rt`), and report errors through the communicator's error
//! handler.
// The C names and signatures are the standard's: many arguments are a
// given. The contract of every `pub unsafe fn MPI_X` is the MPI standard's
// for procedure `MPI_X` (what each pointer argument must address), which
// its `# Safety` section would only repeat.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

mod attr;
mod coll;
mod comm;
mod dpm;
mod dtype;
mod env;
mod errh;
mod group;
mod info;
mod inter;
pub(crate) mod io;
mod mpix;
mod neighbor;
mod p2p;
mod pack;
mod part;
mod req;
mod session;
mod tool;
pub(crate) mod topo;
mod win;
pub(crate) mod win_errh;

pub use attr::*;
pub use coll::*;
pub use comm::*;
pub use dpm::*;
pub use dtype::*;
pub use env::*;
pub use errh::*;
pub use group::*;
pub use info::*;
pub use inter::*;
pub use io::*;
pub use mpix::*;
pub use neighbor::*;
pub use p2p::*;
pub use pack::*;
pub use part::*;
pub use req::*;
pub use session::*;
pub use tool::*;
pub use topo::*;
pub use win::*;
pub use win_errh::*;

use std::mem::MaybeUninit;
use std::os::raw::c_int;

use mpi_api::abi::*;

use crate::rt::{self, error::MpiError, error::MpiResult};

/// C type of a communicator error handler (`MPI_Comm_errhandler_function`).
pub(crate) type CommErrFn = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int, ...);

/// Ends a call: `MPI_SUCCESS`, or the error through the handler of `comm`.
pub(crate) fn ret(comm: MPI_Comm, name: &str, r: MpiResult<()>) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise(comm, name, e),
    }
}

/// Invokes the error handler of `comm` (of `MPI_COMM_WORLD` if `comm` is not
/// valid) for error `e` raised in `name`; returns the code to give back.
pub(crate) fn raise(comm: MPI_Comm, name: &str, e: MpiError) -> c_int {
    let h = rt::try_with(|st| match st.comms.get(comm) {
        Ok(c) => c.errhandler,
        Err(_) => st.comms.get(MPI_COMM_WORLD).map(|c| c.errhandler).unwrap_or(MPI_ERRORS_ARE_FATAL),
    });
    raise_on(h.unwrap_or(MPI_ERRORS_ARE_FATAL), comm, name, e)
}

/// Invokes error handler `h` for error `e` raised in `name` on the object
/// with handle `obj` (a communicator or a session: the C functions of both
/// kinds of user handlers take a pointer to an `int` handle and a pointer to
/// the code); returns the code to give back.
pub(crate) fn raise_on(h: MPI_Errhandler, obj: c_int, name: &str, e: MpiError) -> c_int {
    let found = rt::try_with(|st| {
        let user = if handle_kind(h) == HANDLE_KIND_DIRECT {
            st.errhandlers.get(handle_index(h) as usize).copied().flatten()
        } else {
            None
        };
        (user, st.world_rank)
    });
    let (user, rank) = found.unwrap_or((None, 0));
    dispatch(h, user, rank, name, e, |f, code| {
        // SAFETY: `f` is the address of a function registered by
        // MPI_Comm_create_errhandler or MPI_Session_create_errhandler, whose
        // function types have the same C signature (`MPI_Comm` and
        // `MPI_Session` are both `int`).
        let f: CommErrFn = unsafe { std::mem::transmute::<usize, CommErrFn>(f) };
        let mut o = obj;
        let mut code = code;
        // SAFETY: a user error handler is called with pointers to a handle
        // and a code, as the standard says; both are locals that live through
        // the call, and the lock is not held here, so the handler may call MPI.
        unsafe { f(&mut o, &mut code) };
    })
}

/// Acts on error `e` of call `name` with handler `h` (`user`: the function
/// of a user handler, which `call` invokes with the error class); returns
/// the code to give back.
pub(crate) fn dispatch(
    h: MPI_Errhandler,
    user: Option<usize>,
    rank: usize,
    name: &str,
    e: MpiError,
    call: impl FnOnce(usize, c_int),
) -> c_int {
    match (h, user) {
        (MPI_ERRORS_RETURN, _) => e.class,
        (_, Some(f)) => {
            rt::entering_user_code();
            call(f, e.class);
            e.class
        }
        _ => {
            eprintln!("Fatal error in {name} (rank {rank}): {e}");
            rt::abort(e.class, &format!("{name}: {}", e.msg))
        }
    }
}

/// The value of an ABI pointer constant (`MPI_UNWEIGHTED`,
/// `MPI_F_STATUS_IGNORE`, ...): a constant pointer the program compares
/// arguments against.
#[repr(transparent)]
pub struct SentinelPtr(pub *const c_int);
// SAFETY: the pointer is never written or dereferenced; it only identifies
// a static.
unsafe impl Sync for SentinelPtr {}

/// Writes `s` to a C status pointer unless it is `MPI_STATUS_IGNORE`/NULL.
///
/// # Safety
/// `p` is NULL, `MPI_STATUS_IGNORE`, or points to a writable `MPI_Status`.
pub(crate) unsafe fn put_status(p: *mut MPI_Status, s: &MPI_Status) {
    // SAFETY: this function's contract is `status_mut`'s, and the reference
    // ends with this statement.
    if let Some(out) = unsafe { status_mut(p) } {
        *out = *s;
    }
}

/// Keeps the `MPI_ERROR` field of a call's single status as the program
/// left it: the standard lets only the calls that complete several requests
/// (and return `MPI_ERR_IN_STATUS`) set it, so the single-completion calls
/// restore it when they return, whatever the layers below wrote; except in
/// an empty status ([`KeepError::empty_if`]).
pub(crate) struct KeepError {
    field: *mut MaybeUninit<c_int>,
    value: MaybeUninit<c_int>,
}

impl KeepError {
    /// # Safety
    /// `p` is NULL, `MPI_STATUS_IGNORE`, or points to an `MPI_Status` that
    /// stays writable until the guard is dropped.
    pub(crate) unsafe fn new(p: *mut MPI_Status) -> KeepError {
        if p as usize <= MPI_STATUS_IGNORE {
            return KeepError { field: std::ptr::null_mut(), value: MaybeUninit::uninit() };
        }
        // SAFETY: a writable status (the contract); the field may hold
        // anything, so it is copied as possibly uninitialized bytes.
        let field = unsafe { &raw mut (*p).MPI_ERROR }.cast::<MaybeUninit<c_int>>();
        // SAFETY: as above: valid for reads, any bit pattern allowed.
        KeepError { field, value: unsafe { field.read() } }
    }

    /// When `empty` (the call's requests are all null or inactive), the
    /// call returns an empty status, which the standard defines with
    /// `MPI_ERROR` = `MPI_SUCCESS` (MPI 3.1 3.7.3): that field is then the
    /// call's, not restored.
    pub(crate) fn empty_if(&mut self, empty: bool) {
        if empty {
            self.field = std::ptr::null_mut();
        }
    }
}

impl Drop for KeepError {
    fn drop(&mut self) {
        if !self.field.is_null() {
            // SAFETY: still writable (`new`'s contract); no reference to the
            // status outlives the call that made the guard.
            unsafe { self.field.write(self.value) };
        }
    }
}

/// A status argument as a reference: `None` for NULL and `MPI_STATUS_IGNORE`.
///
/// # Safety
/// `p` is NULL, `MPI_STATUS_IGNORE`, or points to an `MPI_Status` that is
/// writable and not accessed by other means during `'a`.
pub(crate) unsafe fn status_mut<'a>(p: *mut MPI_Status) -> Option<&'a mut MPI_Status> {
    if p as usize > MPI_STATUS_IGNORE {
        // SAFETY: not NULL or the ignore constant, so by the contract a
        // writable status of nobody else's during 'a.
        Some(unsafe { &mut *p })
    } else {
        None
    }
}

/// An array-of-statuses argument of `n` entries as a slice: `None` for NULL
/// and `MPI_STATUSES_IGNORE`.
///
/// # Safety
/// `p` is NULL, `MPI_STATUSES_IGNORE`, or points to `n` writable statuses
/// not accessed by other means during `'a`.
pub(crate) unsafe fn statuses_mut<'a>(p: *mut MPI_Status, n: usize) -> Option<&'a mut [MPI_Status]> {
    if p as usize <= MPI_STATUSES_IGNORE {
        None
    } else if n == 0 {
        Some(&mut [])
    } else {
        // SAFETY: not NULL or the ignore constant, so by the contract `n`
        // writable statuses of nobody else's during 'a.
        Some(unsafe { std::slice::from_raw_parts_mut(p, n) })
    }
}

/// An output array argument of `n` values as a slice; `None` for NULL.
///
/// # Safety
/// `p` is NULL or points to `n` writable values of type `T` not accessed by
/// other means during `'a`.
pub(crate) unsafe fn out_array<'a, T>(p: *mut T, n: usize) -> Option<&'a mut [T]> {
    if p.is_null() {
        None
    } else if n == 0 {
        Some(&mut [])
    } else {
        // SAFETY: not NULL, so by the contract `n` writable values of
        // nobody else's during 'a.
        Some(unsafe { std::slice::from_raw_parts_mut(p, n) })
    }
}

/// Writes `v` through a C out-pointer, or fails with `MPI_ERR_ARG` on NULL.
///
/// # Safety
/// `p` is NULL or points to writable memory for a `T`.
pub(crate) unsafe fn put<T>(p: *mut T, v: T, what: &str) -> MpiResult<()> {
    if p.is_null() {
        return Err(MpiError::new(MPI_ERR_ARG, format!("{what} is a NULL pointer")));
    }
    // SAFETY: not NULL, so writable for a `T` by the contract.
    unsafe { p.write(v) };
    Ok(())
}

/// A required scalar out-argument as a reference; `MPI_ERR_ARG` for NULL.
///
/// # Safety
/// `p` is NULL or points to memory writable for a `T` during `'a`, which
/// nothing else accesses meanwhile.
pub(crate) unsafe fn out_mut<'a, T>(p: *mut T, what: &str) -> MpiResult<&'a mut T> {
    // SAFETY: NULL or writable and ours alone during 'a (the contract).
    unsafe { p.as_mut() }.ok_or_else(|| MpiError::new(MPI_ERR_ARG, format!("{what} is a NULL pointer")))
}

/// A scalar out-argument of a C call, checked once at the top of the call:
/// NULL (writing then fails with `MPI_ERR_ARG`) or memory for a `T` that
/// the call may write.
pub(crate) struct Out<'a, T> {
    p: *mut T,
    what: &'static str,
    _borrow: std::marker::PhantomData<&'a mut T>,
}

impl<'a, T> Out<'a, T> {
    /// The out-argument `p`, named `what` in error messages.
    ///
    /// # Safety
    /// `p` is NULL or points to memory writable for a `T` during `'a`, which
    /// nothing else accesses while the `Out` lives.
    pub(crate) unsafe fn new(p: *mut T, what: &'static str) -> Self {
        Out { p, what, _borrow: std::marker::PhantomData }
    }

    /// Whether the program passed NULL.
    pub(crate) fn is_null(&self) -> bool {
        self.p.is_null()
    }

    /// Writes `v`, or fails with `MPI_ERR_ARG` if the program passed NULL.
    pub(crate) fn put(&mut self, v: T) -> MpiResult<()> {
        if self.p.is_null() {
            return Err(MpiError::new(MPI_ERR_ARG, format!("{} is a NULL pointer", self.what)));
        }
        // SAFETY: not NULL, so writable for a `T` and ours alone (the
        // contract of `new`).
        unsafe { self.p.write(v) };
        Ok(())
    }
}

/// The `n` values of a C array argument; NULL is an error only if n > 0,
/// and a negative `n` is `MPI_ERR_ARG`.
///
/// # Safety
/// `p` is NULL or points to at least `n` readable values.
pub(crate) unsafe fn c_array<'a, T>(p: *const T, n: c_int, what: &str) -> MpiResult<&'a [T]> {
    if n < 0 {
        return Err(MpiError::new(MPI_ERR_ARG, format!("{what}: count {n} is negative")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(MpiError::new(MPI_ERR_ARG, format!("{what} is a NULL pointer")));
    }
    // SAFETY: not NULL and n > 0, so by the contract `n` readable values.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

/// Copies a Rust string into a C buffer of `cap` bytes (NUL-terminated),
/// returning the length written without the NUL.
///
/// # Safety
/// `buf` points to at least `cap` writable bytes, and at least one (a `cap`
/// of 0 still gets the NUL).
pub(crate) unsafe fn put_str(buf: *mut std::os::raw::c_char, cap: usize, s: &str) -> c_int {
    let n = s.len().min(cap.saturating_sub(1));
    // SAFETY: n < max(cap, 1), so the `n` bytes and the NUL after them fit
    // in the writable bytes at `buf` (the contract); the program's buffer
    // cannot overlap a Rust string.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, n);
        *buf.add(n) = 0;
    }
    n as c_int
}
