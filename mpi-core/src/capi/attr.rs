//! Chapter 6.7: caching — keyvals and attributes on communicators,
//! datatypes and windows, the predefined attributes of `MPI_COMM_WORLD`,
//! and `MPIR_Dup_fn` (what `MPI_DUP_FN`/`MPI_COMM_DUP_FN`/... expand to).
//!
//! The callbacks run in `crate::caching`.

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi_api::abi::*;

use super::{ret, Out};
use crate::bail;
use crate::caching::{self, delete_attr, COPY_DUP};
use crate::rt::attr::ObjKind;
use crate::rt::error::MpiResult;
use crate::rt::{self};

/// `MPI_DUP_FN`, `MPI_COMM_DUP_FN`, `MPI_TYPE_DUP_FN`, `MPI_WIN_DUP_FN`:
/// the copy has the same value as the original.
///
/// # Safety
/// `attribute_val_out` points to a `void *` and `flag` to an `int`.
#[no_mangle]
pub unsafe extern "C" fn MPIR_Dup_fn(
    _oldobj: c_int,
    _keyval: c_int,
    _extra_state: *mut c_void,
    attribute_val_in: *mut c_void,
    attribute_val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the caller passes a pointer to the `void *` that receives the copy.
    unsafe { *(attribute_val_out as *mut *mut c_void) = attribute_val_in };
    // SAFETY: the caller passes a pointer to an int.
    unsafe { *flag = 1 };
    MPI_SUCCESS
}

/// The `*_create_keyval` calls. The callbacks and `extra` are only stored
/// (as addresses) here; they are called when attributes are copied or
/// deleted.
fn create_keyval(
    kind: ObjKind,
    copy_fn: *mut c_void,
    delete_fn: *mut c_void,
    mut keyval: Out<'_, c_int>,
    extra: *mut c_void,
) -> MpiResult<()> {
    if keyval.is_null() {
        bail!(MPI_ERR_ARG, "keyval is a NULL pointer");
    }
    // The library's own duplicating callback is not called but done.
    let copy_fn =
        if std::ptr::eq(copy_fn as *const (), MPIR_Dup_fn as *const ()) { COPY_DUP } else { copy_fn as usize };
    let k = rt::with(|st| st.comms.keyvals.create(kind, copy_fn, delete_fn as usize, extra as usize))?;
    keyval.put(k)
}

/// The `*_free_keyval` calls: `keyval` is the program's INOUT handle.
fn free_keyval(kind: ObjKind, keyval: Option<&mut c_int>) -> MpiResult<()> {
    let Some(keyval) = keyval else {
        bail!(MPI_ERR_ARG, "keyval is a NULL pointer");
    };
    rt::with(|st| st.comms.keyvals.free(*keyval, kind))?;
    *keyval = MPI_KEYVAL_INVALID;
    Ok(())
}

fn set_attr(kind: ObjKind, obj: c_int, keyval: c_int, val: *mut c_void) -> MpiResult<()> {
    caching::set_attr(kind, obj, keyval, val as usize)
}

/// The out-arguments of the `*_get_attr` calls: `attribute_val` (declared
/// `void *`, it addresses a `void *` that receives the value) and `flag`.
///
/// # Safety
/// `val` is NULL or points to a writable `void *`, `flag` is NULL or
/// points to a writable int, the two distinct, neither accessed by other
/// means during `'a`.
unsafe fn get_outs<'a>(val: *mut c_void, flag: *mut c_int) -> (Option<&'a mut *mut c_void>, Option<&'a mut c_int>) {
    // SAFETY: each is NULL or a writable, aligned object of its type that
    // is ours during 'a (the contract).
    unsafe { ((val as *mut *mut c_void).as_mut(), flag.as_mut()) }
}

fn get_attr(
    kind: ObjKind,
    obj: c_int,
    keyval: c_int,
    (val, flag): (Option<&mut *mut c_void>, Option<&mut c_int>),
) -> MpiResult<()> {
    let (Some(val), Some(flag)) = (val, flag) else {
        bail!(MPI_ERR_ARG, "attribute_val or flag is a NULL pointer");
    };
    match caching::get_attr(kind, obj, keyval)? {
        Some(v) => {
            *val = v as *mut c_void;
            *flag = 1;
        }
        None => *flag = 0,
    }
    Ok(())
}

// Communicators.

pub unsafe fn MPI_Comm_create_keyval(
    comm_copy_attr_fn: *mut c_void,
    comm_delete_attr_fn: *mut c_void,
    comm_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: `comm_keyval` is NULL or points to a writable int (the caller's
    // contract).
    let comm_keyval = unsafe { Out::new(comm_keyval, "keyval") };
    ret(
        MPI_COMM_WORLD,
        "MPI_Comm_create_keyval",
        create_keyval(ObjKind::Comm, comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state),
    )
}

pub unsafe fn MPI_Keyval_create(
    copy_fn: *mut c_void,
    delete_fn: *mut c_void,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: `keyval` is NULL or points to a writable int (the caller's
    // contract).
    let keyval = unsafe { Out::new(keyval, "keyval") };
    ret(MPI_COMM_WORLD, "MPI_Keyval_create", create_keyval(ObjKind::Comm, copy_fn, delete_fn, keyval, extra_state))
}

pub unsafe fn MPI_Comm_free_keyval(comm_keyval: *mut c_int) -> c_int {
    // SAFETY: `comm_keyval` is NULL or points to an int the call may read and
    // write (the caller's contract, an INOUT handle).
    let comm_keyval = unsafe { comm_keyval.as_mut() };
    ret(MPI_COMM_WORLD, "MPI_Comm_free_keyval", free_keyval(ObjKind::Comm, comm_keyval))
}

pub unsafe fn MPI_Keyval_free(keyval: *mut c_int) -> c_int {
    // SAFETY: `keyval` is NULL or points to an int the call may read and
    // write (the caller's contract, an INOUT handle).
    let keyval = unsafe { keyval.as_mut() };
    ret(MPI_COMM_WORLD, "MPI_Keyval_free", free_keyval(ObjKind::Comm, keyval))
}

pub unsafe fn MPI_Comm_set_attr(comm: MPI_Comm, comm_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    ret(comm, "MPI_Comm_set_attr", set_attr(ObjKind::Comm, comm, comm_keyval, attribute_val))
}

pub unsafe fn MPI_Attr_put(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void) -> c_int {
    ret(comm, "MPI_Attr_put", set_attr(ObjKind::Comm, comm, keyval, attribute_val))
}

pub unsafe fn MPI_Comm_get_attr(
    comm: MPI_Comm,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: `attribute_val` is NULL or addresses a writable `void *`,
    // `flag` is NULL or a writable int (the caller's contract).
    let outs = unsafe { get_outs(attribute_val, flag) };
    ret(comm, "MPI_Comm_get_attr", get_attr(ObjKind::Comm, comm, comm_keyval, outs))
}

pub unsafe fn MPI_Attr_get(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    // SAFETY: `attribute_val` is NULL or addresses a writable `void *`,
    // `flag` is NULL or a writable int (the caller's contract).
    let outs = unsafe { get_outs(attribute_val, flag) };
    ret(comm, "MPI_Attr_get", get_attr(ObjKind::Comm, comm, keyval, outs))
}

pub unsafe fn MPI_Comm_delete_attr(comm: MPI_Comm, comm_keyval: c_int) -> c_int {
    ret(comm, "MPI_Comm_delete_attr", delete_attr(ObjKind::Comm, comm, comm_keyval))
}

pub unsafe fn MPI_Attr_delete(comm: MPI_Comm, keyval: c_int) -> c_int {
    ret(comm, "MPI_Attr_delete", delete_attr(ObjKind::Comm, comm, keyval))
}

// Datatypes.

pub unsafe fn MPI_Type_create_keyval(
    type_copy_attr_fn: *mut c_void,
    type_delete_attr_fn: *mut c_void,
    type_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: `type_keyval` is NULL or points to a writable int (the caller's
    // contract).
    let type_keyval = unsafe { Out::new(type_keyval, "keyval") };
    ret(
        MPI_COMM_WORLD,
        "MPI_Type_create_keyval",
        create_keyval(ObjKind::Type, type_copy_attr_fn, type_delete_attr_fn, type_keyval, extra_state),
    )
}

pub unsafe fn MPI_Type_free_keyval(type_keyval: *mut c_int) -> c_int {
    // SAFETY: `type_keyval` is NULL or points to an int the call may read and
    // write (the caller's contract, an INOUT handle).
    let type_keyval = unsafe { type_keyval.as_mut() };
    ret(MPI_COMM_WORLD, "MPI_Type_free_keyval", free_keyval(ObjKind::Type, type_keyval))
}

pub unsafe fn MPI_Type_set_attr(datatype: MPI_Datatype, type_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    ret(MPI_COMM_WORLD, "MPI_Type_set_attr", set_attr(ObjKind::Type, datatype, type_keyval, attribute_val))
}

pub unsafe fn MPI_Type_get_attr(
    datatype: MPI_Datatype,
    type_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: `attribute_val` is NULL or addresses a writable `void *`,
    // `flag` is NULL or a writable int (the caller's contract).
    let outs = unsafe { get_outs(attribute_val, flag) };
    ret(MPI_COMM_WORLD, "MPI_Type_get_attr", get_attr(ObjKind::Type, datatype, type_keyval, outs))
}

pub unsafe fn MPI_Type_delete_attr(datatype: MPI_Datatype, type_keyval: c_int) -> c_int {
    ret(MPI_COMM_WORLD, "MPI_Type_delete_attr", delete_attr(ObjKind::Type, datatype, type_keyval))
}

// Windows.

pub unsafe fn MPI_Win_create_keyval(
    win_copy_attr_fn: *mut c_void,
    win_delete_attr_fn: *mut c_void,
    win_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: `win_keyval` is NULL or points to a writable int (the caller's
    // contract).
    let win_keyval = unsafe { Out::new(win_keyval, "keyval") };
    ret(
        MPI_COMM_WORLD,
        "MPI_Win_create_keyval",
        create_keyval(ObjKind::Win, win_copy_attr_fn, win_delete_attr_fn, win_keyval, extra_state),
    )
}

pub unsafe fn MPI_Win_free_keyval(win_keyval: *mut c_int) -> c_int {
    // SAFETY: `win_keyval` is NULL or points to an int the call may read and
    // write (the caller's contract, an INOUT handle).
    let win_keyval = unsafe { win_keyval.as_mut() };
    ret(MPI_COMM_WORLD, "MPI_Win_free_keyval", free_keyval(ObjKind::Win, win_keyval))
}

pub unsafe fn MPI_Win_set_attr(win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    super::win_errh::ret_win(win, "MPI_Win_set_attr", set_attr(ObjKind::Win, win, win_keyval, attribute_val))
}

pub unsafe fn MPI_Win_get_attr(win: MPI_Win, win_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int {
    // SAFETY: `attribute_val` is NULL or addresses a writable `void *`,
    // `flag` is NULL or a writable int (the caller's contract).
    let outs = unsafe { get_outs(attribute_val, flag) };
    super::win_errh::ret_win(win, "MPI_Win_get_attr", get_attr(ObjKind::Win, win, win_keyval, outs))
}

pub unsafe fn MPI_Win_delete_attr(win: MPI_Win, win_keyval: c_int) -> c_int {
    super::win_errh::ret_win(win, "MPI_Win_delete_attr", delete_attr(ObjKind::Win, win, win_keyval))
}
