//! Error handlers of windows: the handler a window's errors go to, and
//! the calls that set, get and invoke it. Shared by the window and the
//! attribute bindings (`capi/win.rs`, `capi/attr.rs`).

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::errh::check_errhandler;
use super::{raise, Out};
use crate::rt;
use crate::rt::errh::HandlerKind;
use crate::rt::error::{MpiError, MpiResult};

/// C type of a window error handler (`MPI_Win_errhandler_function`).
type WinErrFn = unsafe extern "C" fn(*mut MPI_Win, *mut c_int, ...);

/// Ends a call on window `win`: `MPI_SUCCESS`, or the error through the
/// window's error handler (that of `MPI_COMM_WORLD` if `win` is not valid).
pub(crate) fn ret_win(win: MPI_Win, name: &str, r: MpiResult<()>) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_win(win, name, e),
    }
}

pub(crate) fn raise_win(win: MPI_Win, name: &str, e: MpiError) -> c_int {
    let h = rt::try_with(|st| {
        st.wins.get(win).ok().map(|w| {
            let h = w.errhandler;
            let user = if handle_kind(h) == HANDLE_KIND_DIRECT {
                st.errhandlers.get(handle_index(h) as usize).copied().flatten()
            } else {
                None
            };
            (h, user, st.world_rank)
        })
    })
    .flatten();
    let Some((h, user, rank)) = h else {
        return raise(MPI_COMM_WORLD, name, e);
    };
    super::dispatch(h, user, rank, name, e, |f, code| {
        // SAFETY: `f` was registered by MPI_Win_create_errhandler as an
        // `MPI_Win_errhandler_function`; the lock is not held, so the
        // handler may call MPI.
        let f: WinErrFn = unsafe { std::mem::transmute::<usize, WinErrFn>(f) };
        let mut w = win;
        let mut code = code;
        // SAFETY: calling the user's handler with the standard's arguments.
        unsafe { f(&mut w, &mut code) };
    })
}

pub unsafe fn MPI_Win_set_errhandler(win: MPI_Win, errhandler: MPI_Errhandler) -> c_int {
    let r = rt::with(|st| {
        st.wins.get(win)?;
        check_errhandler(st, errhandler, HandlerKind::Win)?;
        st.wins.get_mut(win)?.errhandler = errhandler;
        Ok(())
    });
    ret_win(win, "MPI_Win_set_errhandler", r)
}

pub unsafe fn MPI_Win_get_errhandler(win: MPI_Win, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: `errhandler` is NULL or a writable handle (the caller's
    // contract).
    let mut errhandler = unsafe { Out::new(errhandler, "errhandler") };
    let r = rt::with(|st| errhandler.put(st.wins.get(win)?.errhandler));
    ret_win(win, "MPI_Win_get_errhandler", r)
}

pub unsafe fn MPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) -> c_int {
    if let Err(e) = rt::with(|st| st.wins.get(win).map(|_| ())) {
        return raise_win(win, "MPI_Win_call_errhandler", e);
    }
    raise_win(win, "MPI_Win_call_errhandler", MpiError::new(errorcode, "error raised by the application"));
    MPI_SUCCESS
}
