//! Attribute caching (MPI 4.0 section 7.7): the values of attributes on
//! communicators, datatypes and windows over the runtime's keyval tables
//! (`rt::attr`), the predefined attributes, and the program's copy and
//! delete callbacks.
//!
//! Copy callbacks run at `MPI_Comm_dup` (and `MPI_Type_dup`), delete
//! callbacks at free, at `*_delete_attr`, and when `*_set_attr` replaces a
//! value — always without the runtime lock held, since they may call MPI.
//! This sits above the runtime, beside the windows, since windows carry
//! attributes too; the C boundary is `capi/attr.rs`.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use mpi_api::abi::*;

use crate::bail;
use crate::rt::attr::{self, Attrs, Keyval, ObjKind};
use crate::rt::datatype::Contents;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self, State};

/// The copy callback of a keyval made with `MPI_*_DUP_FN` (the library's
/// `MPIR_Dup_fn`): the copy has the value of the original, with no call.
pub const COPY_DUP: usize = 1;

/// `MPI_Comm_copy_attr_function` and its datatype/window twins.
type CopyFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function` and its twins.
type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

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
    rt::entering_user_code();
    // SAFETY: calling the user's callback with the arguments the standard defines.
    let rc = unsafe { f(obj, keyval, v as *mut c_void, kv.extra as *mut c_void) };
    if rc != MPI_SUCCESS {
        return Err(callback_error("delete", kind, keyval, rc));
    }
    Ok(())
}

/// The attributes a duplicate of `old` gets, in `out`: every attribute
/// whose keyval has a copy callback that sets its flag (runs the
/// callbacks). A failing callback stops the copy with its error; `out` then
/// holds the copies made before it, which the caller must hand to their
/// delete callbacks (by freeing the duplicate) since they may own memory.
pub fn copy_attrs(kind: ObjKind, old: c_int, attrs: &Attrs, out: &mut Attrs) -> MpiResult<()> {
    for &(k, v) in attrs {
        let Some(kv) = rt::with(|st| Ok(st.comms.keyvals.callbacks(k)))? else { continue };
        if kv.copy_fn == 0 {
            continue;
        }
        let mut newv: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        let rc = if kv.copy_fn == COPY_DUP {
            newv = v as *mut c_void;
            flag = 1;
            MPI_SUCCESS
        } else {
            // SAFETY: registered by *_create_keyval as a copy callback of this C type.
            let f: CopyFn = unsafe { std::mem::transmute::<usize, CopyFn>(kv.copy_fn) };
            rt::entering_user_code();
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
    Ok(())
}

/// Runs the delete callbacks of an object being freed, last set first, and
/// forgets each attribute whose callback succeeded.
pub fn delete_attrs(kind: ObjKind, obj: c_int, attrs: Attrs) -> MpiResult<()> {
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

/// `MPI_Type_dup`: the duplicate's handle (`MPI_DATATYPE_NULL` on failure)
/// and the outcome. Attribute copy callbacks run without the lock; when one
/// fails, so does the call: the duplicate goes, with the copies made before
/// (through their delete callbacks).
pub fn type_dup(old: MPI_Datatype) -> (MPI_Datatype, MpiResult<()>) {
    let made = rt::with(|st| {
        let o = st.types.lookup(old)?;
        let committed = st.types.get(old).is_ok();
        let contents = Contents::new(MPI_COMBINER_DUP, vec![], vec![], vec![o.clone()], false);
        Ok(st.types.insert_arc(Arc::new(o.dup().with_contents(contents)), committed))
    });
    let h = match made {
        Ok(h) => h,
        Err(e) => return (MPI_DATATYPE_NULL, Err(e)),
    };
    match type_attrs_dup(old, h) {
        Ok(()) => (h, Ok(())),
        Err(e) => {
            let _ = type_attrs_free(h);
            let _ = rt::with(|st| st.types.free(h));
            (MPI_DATATYPE_NULL, Err(e))
        }
    }
}

/// Hook of `MPI_Type_dup`: copies the attributes of `old` to `new`. On
/// error (a copy callback failed), `new` has the copies made before and is
/// to be freed.
pub fn type_attrs_dup(old: MPI_Datatype, new: MPI_Datatype) -> MpiResult<()> {
    let attrs = rt::with(|st| Ok(st.comms.keyvals.types.get(&old).cloned().unwrap_or_default()))?;
    if attrs.is_empty() {
        return Ok(());
    }
    let mut copied = Attrs::new();
    let r = copy_attrs(ObjKind::Type, old, &attrs, &mut copied);
    // Stored even after a failing callback: freeing `new` (the caller's
    // part then) hands the copies made so far to their delete callbacks.
    rt::with(|st| {
        for &(k, _) in &copied {
            st.comms.keyvals.hold(k);
        }
        st.comms.keyvals.types.insert(new, copied);
        Ok(())
    })?;
    r
}

/// Hook of `MPI_Type_free`: runs the delete callbacks of `dt`'s attributes.
pub fn type_attrs_free(dt: MPI_Datatype) -> MpiResult<()> {
    free_stored(ObjKind::Type, dt)
}

/// Hook of `MPI_Win_free`: runs the delete callbacks of `win`'s attributes.
pub fn win_attrs_free(win: MPI_Win) -> MpiResult<()> {
    free_stored(ObjKind::Win, win)
}

/// Runs the delete callbacks of the attributes of `obj` (a datatype or a
/// window, whose attributes the keyval table stores), then forgets them.
fn free_stored(kind: ObjKind, obj: c_int) -> MpiResult<()> {
    let attrs = rt::with(|st| Ok(st.comms.keyvals.store(kind).get(&obj).cloned().unwrap_or_default()))?;
    delete_attrs(kind, obj, attrs)?;
    rt::with(|st| {
        st.comms.keyvals.store(kind).remove(&obj);
        Ok(())
    })
}

/// Hook of `MPI_Finalize`: frees the attributes of `MPI_COMM_SELF` (last
/// set first), as if the communicator were freed.
pub fn finalize_attrs() -> MpiResult<()> {
    let attrs = rt::with(|st| Ok(st.comms.get(MPI_COMM_SELF)?.attrs.clone()))?;
    delete_attrs(ObjKind::Comm, MPI_COMM_SELF, attrs)
}

/// `*_set_attr`: a value replaced goes through its delete callback first.
pub fn set_attr(kind: ObjKind, obj: c_int, keyval: c_int, val: usize) -> MpiResult<()> {
    let (old, kv) = rt::with(|st| {
        check_obj(st, kind, obj)?;
        let kv = st.comms.keyvals.get(keyval, kind)?;
        Ok((attr::get(attrs_of(st, kind, obj)?, keyval), kv))
    })?;
    if let Some(old) = old {
        call_delete(kind, obj, keyval, old, &kv)?;
    }
    rt::with(|st| {
        if attr::set(attrs_of(st, kind, obj)?, keyval, val).is_none() {
            st.comms.keyvals.hold(keyval);
        }
        Ok(())
    })
}

/// The value of attribute `keyval` of object `obj` of `kind`, if set.
pub fn get_attr(kind: ObjKind, obj: c_int, keyval: c_int) -> MpiResult<Option<usize>> {
    rt::with(|st| {
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
        st.comms.keyvals.get_in_use(keyval, kind)?;
        Ok(attr::get(attrs_of(st, kind, obj)?, keyval))
    })
}

/// `*_delete_attr`: runs the delete callback, then forgets the attribute.
/// The keyval may have been freed already: it lives on until its last
/// attribute is gone (MPI 4.0 section 7.7.2), so that one can be deleted.
pub fn delete_attr(kind: ObjKind, obj: c_int, keyval: c_int) -> MpiResult<()> {
    let (v, kv) = rt::with(|st| {
        check_obj(st, kind, obj)?;
        let kv = st.comms.keyvals.get_in_use(keyval, kind)?;
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
