//! Chapter 6.7: caching — keyvals and attributes on communicators,
//! datatypes and windows, the predefined attributes of `MPI_COMM_WORLD`,
//! and `MPIR_Dup_fn` (what `MPI_DUP_FN`/`MPI_COMM_DUP_FN`/... expand to).
//!
//! Copy callbacks run at `MPI_Comm_dup` (and `MPI_Type_dup`), delete
//! callbacks at free, at `*_delete_attr`, and when `*_set_attr` replaces a
//! value — always without the runtime lock held, since they may call MPI.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

use mpi_api::abi::*;

use super::{ret, Out};
use crate::bail;
use crate::rt::attr::{self, Attrs, Keyval, ObjKind};
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self, State};

/// `MPI_Comm_copy_attr_function` and its datatype/window twins.
type CopyFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function` and its twins.
type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

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

// Values of the predefined attributes: the attribute value is the address
// of one of these ints.
static ATTR_TAG_UB: c_int = TAG_UB;
static ATTR_HOST: c_int = MPI_PROC_NULL;
static ATTR_IO: c_int = MPI_ANY_SOURCE;
/// Every rank reads the same CLOCK_MONOTONIC of one machine.
static ATTR_WTIME_IS_GLOBAL: c_int = 1;
static ATTR_UNIVERSE_SIZE: AtomicI32 = AtomicI32::new(1);
static ATTR_APPNUM: AtomicI32 = AtomicI32::new(0);

/// The value of a predefined communicator attribute, if `keyval` is one.
fn predefined_value(st: &State, keyval: c_int) -> Option<*mut c_void> {
    let p: *const c_int = match keyval {
        MPI_TAG_UB => &ATTR_TAG_UB,
        MPI_HOST => &ATTR_HOST,
        MPI_IO => &ATTR_IO,
        MPI_WTIME_IS_GLOBAL => &ATTR_WTIME_IS_GLOBAL,
        MPI_UNIVERSE_SIZE => {
            let n = st.pmi.universe_size.max(st.world_size);
            ATTR_UNIVERSE_SIZE.store(n as c_int, Ordering::Relaxed);
            ATTR_UNIVERSE_SIZE.as_ptr()
        }
        MPI_APPNUM => {
            ATTR_APPNUM.store(st.pmi.appnum, Ordering::Relaxed);
            ATTR_APPNUM.as_ptr()
        }
        MPI_LASTUSEDCODE => crate::rt::errh::LAST_USED_CODE.as_ptr(),
        _ => return None,
    };
    Some(p as *mut c_void)
}

/// Checks that `obj` is a live object of `kind`.
fn check_obj(st: &mut State, kind: ObjKind, obj: c_int) -> MpiResult<()> {
    match kind {
        ObjKind::Comm => st.comms.get(obj).map(|_| ()),
        ObjKind::Type => st.types.lookup(obj).map(|_| ()),
        ObjKind::Win => st.wins.get(obj).map(|_| ()),
    }
}

fn attrs_of(st: &mut State, kind: ObjKind, obj: c_int) -> MpiResult<&mut Attrs> {
    check_obj(st, kind, obj)?;
    match kind {
        ObjKind::Comm => Ok(&mut st.comms.get_mut(obj)?.attrs),
        _ => Ok(st.comms.keyvals.store(kind).entry(obj).or_default()),
    }
}

/// The error a failing callback reports.
fn callback_error(what: &str, kind: ObjKind, keyval: c_int, rc: c_int) -> MpiError {
    let class = if rc > 0 { rc } else { MPI_ERR_OTHER };
    MpiError::new(
        class,
        format!("the {what} callback of keyval 0x{:08x} on a {} returned {rc}", keyval as u32, kind.name()),
    )
}

/// Runs the delete callback of `kv` for value `v` (lock not held).
fn call_delete(kind: ObjKind, obj: c_int, keyval: c_int, v: usize, kv: &Keyval) -> MpiResult<()> {
    if kv.delete_fn == 0 {
        return Ok(());
    }
    // SAFETY: registered by *_create_keyval as a delete callback of this C type.
    let f: DeleteFn = unsafe { std::mem::transmute::<usize, DeleteFn>(kv.delete_fn) };
    // SAFETY: calling the user's callback with the arguments the standard defines.
    let rc = unsafe { f(obj, keyval, v as *mut c_void, kv.extra as *mut c_void) };
    if rc != MPI_SUCCESS {
        return Err(callback_error("delete", kind, keyval, rc));
    }
    Ok(())
}

/// The attributes a duplicate of `old` gets: every attribute whose keyval
/// has a copy callback that sets its flag (runs the callbacks).
pub(crate) fn copy_attrs(kind: ObjKind, old: c_int, attrs: &Attrs) -> MpiResult<Attrs> {
    let mut out = Attrs::new();
    for &(k, v) in attrs {
        let Some(kv) = rt::with(|st| Ok(st.comms.keyvals.callbacks(k)))? else { continue };
        if kv.copy_fn == 0 {
            continue;
        }
        let mut newv: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        let rc = if kv.copy_fn == MPIR_Dup_fn as *const () as usize {
            newv = v as *mut c_void;
            flag = 1;
            MPI_SUCCESS
        } else {
            // SAFETY: registered by *_create_keyval as a copy callback of this C type.
            let f: CopyFn = unsafe { std::mem::transmute::<usize, CopyFn>(kv.copy_fn) };
            // SAFETY: calling the user's callback with the arguments the standard defines.
            unsafe {
                f(old, k, kv.extra as *mut c_void, v as *mut c_void, &mut newv as *mut _ as *mut c_void, &mut flag)
            }
        };
        if rc != MPI_SUCCESS {
            return Err(callback_error("copy", kind, k, rc));
        }
        if flag != 0 {
            out.push((k, newv as usize));
        }
    }
    Ok(out)
}

/// Runs the delete callbacks of an object being freed, last set first, and
/// forgets each attribute whose callback succeeded.
pub(crate) fn delete_attrs(kind: ObjKind, obj: c_int, attrs: Attrs) -> MpiResult<()> {
    for &(k, v) in attrs.iter().rev() {
        if let Some(kv) = rt::with(|st| Ok(st.comms.keyvals.callbacks(k)))? {
            call_delete(kind, obj, k, v, &kv)?;
        }
        rt::with(|st| {
            if let Ok(a) = attrs_of(st, kind, obj) {
                attr::remove(a, k);
            }
            st.comms.keyvals.release(k);
            Ok(())
        })?;
    }
    Ok(())
}

/// Hook of `MPI_Type_dup`: copies the attributes of `old` to `new`.
pub(crate) fn type_attrs_dup(old: MPI_Datatype, new: MPI_Datatype) -> MpiResult<()> {
    let attrs = rt::with(|st| Ok(st.comms.keyvals.types.get(&old).cloned().unwrap_or_default()))?;
    if attrs.is_empty() {
        return Ok(());
    }
    let copied = copy_attrs(ObjKind::Type, old, &attrs)?;
    rt::with(|st| {
        for &(k, _) in &copied {
            st.comms.keyvals.hold(k);
        }
        st.comms.keyvals.types.insert(new, copied);
        Ok(())
    })
}

/// Hook of `MPI_Type_free`: runs the delete callbacks of `dt`'s attributes.
pub(crate) fn type_attrs_free(dt: MPI_Datatype) -> MpiResult<()> {
    let attrs = rt::with(|st| Ok(st.comms.keyvals.types.get(&dt).cloned().unwrap_or_default()))?;
    delete_attrs(ObjKind::Type, dt, attrs)?;
    rt::with(|st| {
        st.comms.keyvals.types.remove(&dt);
        Ok(())
    })
}

/// Hook of `MPI_Win_free`: runs the delete callbacks of `win`'s attributes.
pub(crate) fn win_attrs_free(win: MPI_Win) -> MpiResult<()> {
    let attrs = rt::with(|st| Ok(st.comms.keyvals.wins.get(&win).cloned().unwrap_or_default()))?;
    delete_attrs(ObjKind::Win, win, attrs)?;
    rt::with(|st| {
        st.comms.keyvals.wins.remove(&win);
        Ok(())
    })
}

/// Hook of `MPI_Finalize`: frees the attributes of `MPI_COMM_SELF` (last
/// set first), as if the communicator were freed.
pub(crate) fn finalize_attrs() -> MpiResult<()> {
    let attrs = rt::with(|st| Ok(st.comms.get(MPI_COMM_SELF)?.attrs.clone()))?;
    delete_attrs(ObjKind::Comm, MPI_COMM_SELF, attrs)
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
    let k = rt::with(|st| st.comms.keyvals.create(kind, copy_fn as usize, delete_fn as usize, extra as usize))?;
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
    let (old, kv) = rt::with(|st| {
        check_obj(st, kind, obj)?;
        let kv = st.comms.keyvals.get(keyval, kind)?;
        Ok((attr::get(attrs_of(st, kind, obj)?, keyval), kv))
    })?;
    if let Some(old) = old {
        call_delete(kind, obj, keyval, old, &kv)?;
    }
    rt::with(|st| {
        if attr::set(attrs_of(st, kind, obj)?, keyval, val as usize).is_none() {
            st.comms.keyvals.hold(keyval);
        }
        Ok(())
    })
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
    let v = rt::with(|st| {
        check_obj(st, kind, obj)?;
        if kind == ObjKind::Comm {
            if let Some(p) = predefined_value(st, keyval) {
                return Ok(Some(p as usize));
            }
        }
        if kind == ObjKind::Win {
            if let Some(p) = crate::rt::win::predefined_attr(st, obj, keyval) {
                return Ok(Some(p as usize));
            }
        }
        st.comms.keyvals.get(keyval, kind)?;
        Ok(attr::get(attrs_of(st, kind, obj)?, keyval))
    })?;
    match v {
        Some(v) => {
            *val = v as *mut c_void;
            *flag = 1;
        }
        None => *flag = 0,
    }
    Ok(())
}

fn delete_attr(kind: ObjKind, obj: c_int, keyval: c_int) -> MpiResult<()> {
    let (v, kv) = rt::with(|st| {
        check_obj(st, kind, obj)?;
        let kv = st.comms.keyvals.get(keyval, kind)?;
        Ok((attr::get(attrs_of(st, kind, obj)?, keyval), kv))
    })?;
    let Some(v) = v else {
        bail!(MPI_ERR_KEYVAL, "no attribute is stored under keyval 0x{:08x} on this {}", keyval as u32, kind.name());
    };
    call_delete(kind, obj, keyval, v, &kv)?;
    rt::with(|st| {
        if attr::remove(attrs_of(st, kind, obj)?, keyval).is_some() {
            st.comms.keyvals.release(keyval);
        }
        Ok(())
    })
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
