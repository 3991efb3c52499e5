//! The tool information interface (`MPI_T_*`) at the C boundary: argument
//! checks and conversions around `crate::tool`. Every call returns an
//! `MPI_T_ERR_*` code directly (no error handler), and all but
//! `MPI_T_init_thread` fail with `MPI_T_ERR_NOT_INITIALIZED` outside an
//! `MPI_T_init_thread` ... `MPI_T_finalize` pair.

use std::ffi::{c_void, CStr};
use std::os::raw::{c_char, c_int};

use mpi_api::abi::*;

use crate::tool::{self, Target, Tool, ToolError, ToolResult, Val, CATEGORIES, CVARS, PVARS, STR_COUNT};

/// The value of `MPI_T_PVAR_ALL_HANDLES`: the address of a private static.
#[repr(transparent)]
pub struct AllHandles(*const u8);
// SAFETY: the pointer is never written or dereferenced; it only identifies
// a static.
unsafe impl Sync for AllHandles {}

static ALL_HANDLES_TARGET: u8 = 0;

/// `extern struct MPIR_T_pvar_handle_s * const MPI_T_PVAR_ALL_HANDLES` of
/// the MPICH ABI.
#[no_mangle]
pub static MPI_T_PVAR_ALL_HANDLES: AllHandles = AllHandles(&ALL_HANDLES_TARGET);

fn target(h: *mut c_void) -> Target {
    if std::ptr::eq(h as *const u8, MPI_T_PVAR_ALL_HANDLES.0) {
        Target::All
    } else {
        Target::One(h as usize)
    }
}

fn code(r: ToolResult<()>) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => e.code(),
    }
}

/// Runs `f` if the interface is initialized; the call's return code.
fn call(f: impl FnOnce(&mut Tool) -> ToolResult<()>) -> c_int {
    code(tool::with(f))
}

/// Writes a required output.
///
/// # Safety
/// `p` is NULL or valid for writing a `T`.
unsafe fn out<T>(p: *mut T, v: T) -> ToolResult<()> {
    if p.is_null() {
        return Err(ToolError::Invalid);
    }
    // SAFETY: not NULL, so writable for a `T` (the contract).
    unsafe { p.write_unaligned(v) };
    Ok(())
}

/// Writes an optional output (ignored when NULL).
///
/// # Safety
/// `p` is NULL or valid for writing a `T`.
unsafe fn opt<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: not NULL, so writable for a `T` (the contract).
        unsafe { p.write_unaligned(v) };
    }
}

/// Returns a string as the standard says: at most `*len - 1` characters and
/// a NUL into `buf` (nothing if `buf` is NULL or `*len` is 0), and the
/// string's length plus one in `*len` (nothing at all if `len` is NULL).
///
/// # Safety
/// `len` is NULL or valid for reading and writing an int; `buf` is NULL or
/// holds `*len` writable bytes.
unsafe fn put_tstr(buf: *mut c_char, len: *mut c_int, s: &str) {
    // SAFETY: `len` is NULL or a readable and writable int (the contract).
    let Some(len) = (unsafe { len.as_mut() }) else {
        return;
    };
    let n = *len;
    if !buf.is_null() && n > 0 {
        // SAFETY: `buf` is not NULL, so it holds `n` >= 1 writable bytes.
        unsafe { super::put_str(buf, n as usize, s) };
    }
    *len = c_int::try_from(s.len() + 1).unwrap_or(c_int::MAX);
}

/// A C index as an index below `n`.
fn index(i: c_int, n: usize) -> ToolResult<usize> {
    usize::try_from(i).ok().filter(|&i| i < n).ok_or(ToolError::InvalidIndex)
}

/// A C string argument.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn name<'a>(p: *const c_char) -> ToolResult<&'a str> {
    if p.is_null() {
        return Err(ToolError::Invalid);
    }
    // SAFETY: not NULL, so a NUL-terminated string (the contract).
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| ToolError::InvalidName)
}

/// Writes the first `len` entries of `list` to `indices`.
///
/// # Safety
/// `indices` is NULL or holds `len` ints.
unsafe fn put_indices(indices: *mut c_int, len: c_int, list: &[usize]) -> ToolResult<()> {
    let n = usize::try_from(len).map_err(|_| ToolError::Invalid)?.min(list.len());
    // SAFETY: `indices` is NULL or holds `len` >= `n` ints (the contract).
    let Some(out) = (unsafe { super::out_array(indices, n) }) else {
        return if n > 0 { Err(ToolError::Invalid) } else { Ok(()) };
    };
    for (o, &v) in out.iter_mut().zip(&list[..n]) {
        *o = v as c_int;
    }
    Ok(())
}

/// Hands a new object to C: its handle into `*handle`, its element count
/// into `*count`.
///
/// # Safety
/// `handle` and `count` are NULL or valid for writing.
unsafe fn put_new(
    handle: *mut *mut c_void,
    count: *mut c_int,
    alloc: impl FnOnce() -> ToolResult<(usize, usize)>,
) -> ToolResult<()> {
    if handle.is_null() || count.is_null() {
        return Err(ToolError::Invalid);
    }
    let (h, n) = alloc()?;
    // SAFETY: neither is NULL, so both are writable (the contract).
    unsafe {
        *handle = h as *mut c_void;
        *count = count_int(n);
    }
    Ok(())
}

/// Frees the object `*handle` names with `free`, then sets `*handle` to NULL
/// (the `*_NULL` handles).
///
/// # Safety
/// `handle` is NULL or valid for reading and writing.
unsafe fn free_and_clear(handle: *mut *mut c_void, free: impl FnOnce(usize) -> ToolResult<()>) -> ToolResult<()> {
    // SAFETY: `handle` is NULL or readable and writable (the contract).
    let Some(handle) = (unsafe { handle.as_mut() }) else {
        return Err(ToolError::Invalid);
    };
    free(*handle as usize)?;
    *handle = std::ptr::null_mut();
    Ok(())
}

fn count_int(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

// ----- environment ---------------------------------------------------------------

pub unsafe fn MPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int {
    // SAFETY: `provided` is NULL or a writable int (the caller's contract).
    let Some(provided) = (unsafe { provided.as_mut() }) else {
        return MPI_T_ERR_INVALID;
    };
    tool::init();
    *provided = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE);
    MPI_SUCCESS
}

pub unsafe fn MPI_T_finalize() -> c_int {
    code(tool::finalize())
}

// ----- control variables ---------------------------------------------------------

pub unsafe fn MPI_T_cvar_get_num(num_cvar: *mut c_int) -> c_int {
    // SAFETY: `num_cvar` is NULL or a writable int (the caller's contract).
    call(|_| unsafe { out(num_cvar, count_int(CVARS.len())) })
}

pub unsafe fn MPI_T_cvar_get_info(
    cvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    datatype: *mut c_int,
    enumtype: *mut *mut c_void,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    scope: *mut c_int,
) -> c_int {
    call(|_| {
        let cv = &CVARS[index(cvar_index, CVARS.len())?];
        let e = cv.enumtype.map_or(std::ptr::null_mut(), |e| e as *const tool::EnumDef as *mut c_void);
        // SAFETY: every output is NULL or writable for its type, and `name`
        // and `desc` are NULL or hold `*name_len` and `*desc_len` bytes (the
        // caller's contract).
        unsafe {
            put_tstr(name, name_len, cv.name);
            opt(verbosity, cv.verbosity());
            opt(datatype, cv.ty.datatype());
            opt(enumtype, e);
            put_tstr(desc, desc_len, cv.desc);
            opt(bind, MPI_T_BIND_NO_OBJECT);
            opt(scope, cv.scope);
        }
        Ok(())
    })
}

pub unsafe fn MPI_T_cvar_get_index(name_: *const c_char, cvar_index: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: `name_` is NULL or a NUL-terminated string (the caller's
        // contract).
        let i = tool::index_of(CVARS.iter().map(|c| c.name), unsafe { name(name_) }?)?;
        // SAFETY: `cvar_index` is NULL or a writable int (the caller's contract).
        unsafe { out(cvar_index, i as c_int) }
    })
}

pub unsafe fn MPI_T_cvar_handle_alloc(
    cvar_index: c_int,
    _obj_handle: *mut c_void,
    handle: *mut *mut c_void,
    count: *mut c_int,
) -> c_int {
    // SAFETY: `handle` and `count` are NULL or writable (the caller's contract).
    call(|t| unsafe { put_new(handle, count, || t.cvar_alloc(index(cvar_index, CVARS.len())?)) })
}

pub unsafe fn MPI_T_cvar_handle_free(handle: *mut *mut c_void) -> c_int {
    // SAFETY: `handle` is NULL or the program's handle, readable and writable
    // (the caller's contract).
    call(|t| unsafe { free_and_clear(handle, |h| t.cvar_free(h)) })
}

pub unsafe fn MPI_T_cvar_read(handle: *mut c_void, buf: *mut c_void) -> c_int {
    call(|t| {
        let cv = t.cvar_of(handle as usize)?;
        if buf.is_null() {
            return Err(ToolError::Invalid);
        }
        // SAFETY: `buf` is not NULL, so it holds the variable's value: an
        // int, an unsigned long or `STR_COUNT` chars for the datatype and
        // count MPI_T_cvar_get_info and the handle's allocation told the
        // program (the caller's contract).
        unsafe {
            match cv.read() {
                Val::Int(v) => (buf as *mut c_int).write_unaligned(v),
                Val::ULong(v) => (buf as *mut u64).write_unaligned(v),
                Val::Str(s) => {
                    super::put_str(buf as *mut c_char, STR_COUNT, &s);
                }
            }
        }
        Ok(())
    })
}

pub unsafe fn MPI_T_cvar_write(handle: *mut c_void, buf: *const c_void) -> c_int {
    call(|t| {
        let cv = t.cvar_of(handle as usize)?;
        if !cv.writable() {
            return Err(ToolError::CvarSetNever);
        }
        if buf.is_null() {
            return Err(ToolError::Invalid);
        }
        // SAFETY: `buf` is not NULL, so it holds a value of the variable's
        // datatype, an unsigned long for every writable one (the caller's
        // contract).
        cv.write(unsafe { (buf as *const u64).read_unaligned() })
    })
}

// ----- enumerations --------------------------------------------------------------

pub unsafe fn MPI_T_enum_get_info(
    enumtype: *mut c_void,
    num: *mut c_int,
    name: *mut c_char,
    name_len: *mut c_int,
) -> c_int {
    call(|_| {
        let e = tool::enum_of(enumtype)?;
        // SAFETY: `num` is NULL or a writable int, `name_len` NULL or a
        // readable and writable int, `name` NULL or `*name_len` bytes (the
        // caller's contract).
        unsafe {
            out(num, count_int(e.items.len()))?;
            put_tstr(name, name_len, e.name);
        }
        Ok(())
    })
}

pub unsafe fn MPI_T_enum_get_item(
    enumtype: *mut c_void,
    index_: c_int,
    value: *mut c_int,
    name: *mut c_char,
    name_len: *mut c_int,
) -> c_int {
    call(|_| {
        let e = tool::enum_of(enumtype)?;
        let (v, n) = e.items[index(index_, e.items.len())?];
        // SAFETY: `value` is NULL or a writable int, `name_len` NULL or a
        // readable and writable int, `name` NULL or `*name_len` bytes (the
        // caller's contract).
        unsafe {
            out(value, v)?;
            put_tstr(name, name_len, n);
        }
        Ok(())
    })
}

// ----- performance variables -------------------------------------------------------

pub unsafe fn MPI_T_pvar_get_num(num_pvar: *mut c_int) -> c_int {
    // SAFETY: `num_pvar` is NULL or a writable int (the caller's contract).
    call(|_| unsafe { out(num_pvar, count_int(PVARS.len())) })
}

pub unsafe fn MPI_T_pvar_get_info(
    pvar_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    verbosity: *mut c_int,
    var_class: *mut c_int,
    datatype: *mut c_int,
    enumtype: *mut *mut c_void,
    desc: *mut c_char,
    desc_len: *mut c_int,
    bind: *mut c_int,
    readonly: *mut c_int,
    continuous: *mut c_int,
    atomic: *mut c_int,
) -> c_int {
    call(|_| {
        let p = &PVARS[index(pvar_index, PVARS.len())?];
        // SAFETY: every output is NULL or writable for its type, and `name`
        // and `desc` are NULL or hold `*name_len` and `*desc_len` bytes (the
        // caller's contract).
        unsafe {
            put_tstr(name, name_len, p.name);
            opt(verbosity, MPI_T_VERBOSITY_TUNER_BASIC);
            opt(var_class, p.class);
            opt(datatype, MPI_UNSIGNED_LONG);
            opt(enumtype, std::ptr::null_mut());
            put_tstr(desc, desc_len, p.desc);
            opt(bind, MPI_T_BIND_NO_OBJECT);
            opt(readonly, p.readonly() as c_int);
            opt(continuous, p.continuous as c_int);
            opt(atomic, 0);
        }
        Ok(())
    })
}

pub unsafe fn MPI_T_pvar_get_index(name_: *const c_char, var_class: c_int, pvar_index: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: `name_` is NULL or a NUL-terminated string (the caller's
        // contract).
        let n = unsafe { name(name_) }?;
        if !(MPI_T_PVAR_CLASS_STATE..=MPI_T_PVAR_CLASS_GENERIC).contains(&var_class) {
            return Err(ToolError::Invalid);
        }
        let i = PVARS.iter().position(|p| p.name == n && p.class == var_class).ok_or(ToolError::InvalidName)?;
        // SAFETY: `pvar_index` is NULL or a writable int (the caller's contract).
        unsafe { out(pvar_index, i as c_int) }
    })
}

pub unsafe fn MPI_T_pvar_session_create(pe_session: *mut *mut c_void) -> c_int {
    call(|t| {
        if pe_session.is_null() {
            return Err(ToolError::Invalid);
        }
        // SAFETY: not NULL, so a writable handle (the caller's contract).
        unsafe { *pe_session = t.session_create() as *mut c_void };
        Ok(())
    })
}

pub unsafe fn MPI_T_pvar_session_free(pe_session: *mut *mut c_void) -> c_int {
    // SAFETY: `pe_session` is NULL or the program's handle, readable and
    // writable (the caller's contract).
    call(|t| unsafe { free_and_clear(pe_session, |s| t.session_free(s)) })
}

pub unsafe fn MPI_T_pvar_handle_alloc(
    pe_session: *mut c_void,
    pvar_index: c_int,
    _obj_handle: *mut c_void,
    handle: *mut *mut c_void,
    count: *mut c_int,
) -> c_int {
    // SAFETY: `handle` and `count` are NULL or writable (the caller's contract).
    call(|t| unsafe { put_new(handle, count, || t.pvar_alloc(pe_session as usize, index(pvar_index, PVARS.len())?)) })
}

pub unsafe fn MPI_T_pvar_handle_free(pe_session: *mut c_void, handle: *mut *mut c_void) -> c_int {
    // SAFETY: `handle` is NULL or the program's handle, readable and writable
    // (the caller's contract).
    call(|t| unsafe { free_and_clear(handle, |h| t.pvar_free(pe_session as usize, h)) })
}

pub unsafe fn MPI_T_pvar_start(pe_session: *mut c_void, handle: *mut c_void) -> c_int {
    call(|t| t.pvar_start(pe_session as usize, target(handle)))
}

pub unsafe fn MPI_T_pvar_stop(pe_session: *mut c_void, handle: *mut c_void) -> c_int {
    call(|t| t.pvar_stop(pe_session as usize, target(handle)))
}

pub unsafe fn MPI_T_pvar_reset(pe_session: *mut c_void, handle: *mut c_void) -> c_int {
    call(|t| t.pvar_reset(pe_session as usize, target(handle)))
}

/// The handle of a call that does not take `MPI_T_PVAR_ALL_HANDLES`.
fn one(handle: *mut c_void) -> ToolResult<usize> {
    match target(handle) {
        Target::One(h) => Ok(h),
        Target::All => Err(ToolError::InvalidHandle),
    }
}

pub unsafe fn MPI_T_pvar_read(pe_session: *mut c_void, handle: *mut c_void, buf: *mut c_void) -> c_int {
    call(|t| {
        let v = t.pvar_read(pe_session as usize, one(handle)?)?;
        // SAFETY: `buf` is NULL or holds the variable's value, an unsigned
        // long (MPI_T_pvar_get_info's datatype for all; the caller's contract).
        unsafe { out(buf as *mut u64, v) }
    })
}

pub unsafe fn MPI_T_pvar_readreset(pe_session: *mut c_void, handle: *mut c_void, buf: *mut c_void) -> c_int {
    call(|t| {
        if buf.is_null() {
            return Err(ToolError::Invalid);
        }
        let v = t.pvar_readreset(pe_session as usize, one(handle)?)?;
        // SAFETY: `buf` is not NULL, so it holds the variable's value, an
        // unsigned long (MPI_T_pvar_get_info's datatype for all; the caller's
        // contract).
        unsafe { out(buf as *mut u64, v) }
    })
}

pub unsafe fn MPI_T_pvar_write(pe_session: *mut c_void, handle: *mut c_void, buf: *const c_void) -> c_int {
    call(|t| {
        let h = one(handle)?;
        if buf.is_null() {
            return Err(ToolError::Invalid);
        }
        // SAFETY: `buf` is not NULL, so it holds a value of the variable's
        // datatype, an unsigned long for all (the caller's contract).
        t.pvar_write(pe_session as usize, h, unsafe { (buf as *const u64).read_unaligned() })
    })
}

// ----- categories ----------------------------------------------------------------

pub unsafe fn MPI_T_category_get_num(num_cat: *mut c_int) -> c_int {
    // SAFETY: `num_cat` is NULL or a writable int (the caller's contract).
    call(|_| unsafe { out(num_cat, count_int(CATEGORIES.len())) })
}

pub unsafe fn MPI_T_category_get_info(
    cat_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    num_cvars: *mut c_int,
    num_pvars: *mut c_int,
    num_categories: *mut c_int,
) -> c_int {
    call(|_| {
        let i = index(cat_index, CATEGORIES.len())?;
        let (cv, pv, sub) = tool::category_members(i)?;
        // SAFETY: every output is NULL or writable for its type, and `name`
        // and `desc` are NULL or hold `*name_len` and `*desc_len` bytes (the
        // caller's contract).
        unsafe {
            put_tstr(name, name_len, CATEGORIES[i].name);
            put_tstr(desc, desc_len, CATEGORIES[i].desc);
            opt(num_cvars, count_int(cv.len()));
            opt(num_pvars, count_int(pv.len()));
            opt(num_categories, count_int(sub.len()));
        }
        Ok(())
    })
}

pub unsafe fn MPI_T_category_get_index(name_: *const c_char, cat_index: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: `name_` is NULL or a NUL-terminated string (the caller's
        // contract).
        let i = tool::index_of(CATEGORIES.iter().map(|c| c.name), unsafe { name(name_) }?)?;
        // SAFETY: `cat_index` is NULL or a writable int (the caller's contract).
        unsafe { out(cat_index, i as c_int) }
    })
}

pub unsafe fn MPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    // SAFETY: `indices` is NULL or holds `len` writable ints (the caller's contract).
    call(|_| unsafe { put_indices(indices, len, &tool::category_members(index(cat_index, CATEGORIES.len())?)?.0) })
}

pub unsafe fn MPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    // SAFETY: `indices` is NULL or holds `len` writable ints (the caller's contract).
    call(|_| unsafe { put_indices(indices, len, &tool::category_members(index(cat_index, CATEGORIES.len())?)?.1) })
}

pub unsafe fn MPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    // SAFETY: `indices` is NULL or holds `len` writable ints (the caller's contract).
    call(|_| unsafe { put_indices(indices, len, tool::category_members(index(cat_index, CATEGORIES.len())?)?.2) })
}

/// The set of variables and categories never changes: always 0.
pub unsafe fn MPI_T_category_changed(update_number: *mut c_int) -> c_int {
    // SAFETY: `update_number` is NULL or a writable int (the caller's contract).
    call(|_| unsafe { out(update_number, 0) })
}

pub unsafe fn MPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) -> c_int {
    call(|_| {
        index(cat_index, CATEGORIES.len())?;
        // SAFETY: `num_events` is NULL or a writable int (the caller's contract).
        unsafe { out(num_events, 0) }
    })
}

pub unsafe fn MPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int {
    call(|_| {
        index(cat_index, CATEGORIES.len())?;
        // SAFETY: `indices` is NULL or holds `len` writable ints (the caller's
        // contract); nothing is written anyway.
        unsafe { put_indices(indices, len, &[]) }
    })
}

// ----- events: this library raises none ---------------------------------------------

pub unsafe fn MPI_T_event_get_num(num_events: *mut c_int) -> c_int {
    // SAFETY: `num_events` is NULL or a writable int (the caller's contract).
    call(|_| unsafe { out(num_events, 0) })
}

pub unsafe fn MPI_T_event_get_info(
    _event_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _verbosity: *mut c_int,
    _array_of_datatypes: *mut c_int,
    _array_of_displacements: *mut i64,
    _num_elements: *mut c_int,
    _enumtype: *mut *mut c_void,
    _info: *mut c_int,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _bind: *mut c_int,
) -> c_int {
    call(|_| Err(ToolError::InvalidIndex))
}

pub unsafe fn MPI_T_event_get_index(name_: *const c_char, _event_index: *mut c_int) -> c_int {
    call(|_| {
        // SAFETY: `name_` is NULL or a NUL-terminated string (the caller's
        // contract).
        unsafe { name(name_) }?;
        Err(ToolError::InvalidName)
    })
}

pub unsafe fn MPI_T_event_handle_alloc(
    _event_index: c_int,
    _obj_handle: *mut c_void,
    _info: c_int,
    _event_registration: *mut *mut c_void,
) -> c_int {
    call(|_| Err(ToolError::InvalidIndex))
}

/// Calls on event registrations and instances: none can exist.
fn no_event() -> c_int {
    call(|_| Err(ToolError::InvalidHandle))
}

pub unsafe fn MPI_T_event_handle_free(
    _event_registration: *mut c_void,
    _user_data: *mut c_void,
    _free_cb_function: *mut c_void,
) -> c_int {
    no_event()
}

pub unsafe fn MPI_T_event_handle_get_info(_event_registration: *mut c_void, _info_used: *mut c_int) -> c_int {
    no_event()
}

pub unsafe fn MPI_T_event_handle_set_info(_event_registration: *mut c_void, _info: c_int) -> c_int {
    no_event()
}

pub unsafe fn MPI_T_event_register_callback(
    _event_registration: *mut c_void,
    _cb_safety: c_int,
    _info: c_int,
    _user_data: *mut c_void,
    _event_cb_function: *mut c_void,
) -> c_int {
    no_event()
}

pub unsafe fn MPI_T_event_callback_get_info(
    _event_registration: *mut c_void,
    _cb_safety: c_int,
    _info_used: *mut c_int,
) -> c_int {
    no_event()
}

pub unsafe fn MPI_T_event_callback_set_info(
    _event_registration: *mut c_void,
    _cb_safety: c_int,
    _info: c_int,
) -> c_int {
    no_event()
}

pub unsafe fn MPI_T_event_set_dropped_handler(
    _event_registration: *mut c_void,
    _dropped_cb_function: *mut c_void,
) -> c_int {
    no_event()
}

pub unsafe fn MPI_T_event_read(_event_instance: *mut c_void, _element_index: c_int, _buffer: *mut c_void) -> c_int {
    no_event()
}

pub unsafe fn MPI_T_event_copy(_event_instance: *mut c_void, _buffer: *mut c_void) -> c_int {
    no_event()
}

pub unsafe fn MPI_T_event_get_timestamp(_event_instance: *mut c_void, _event_timestamp: *mut i64) -> c_int {
    no_event()
}

pub unsafe fn MPI_T_event_get_source(_event_instance: *mut c_void, _source_index: *mut c_int) -> c_int {
    no_event()
}

// ----- the time source -------------------------------------------------------------

pub unsafe fn MPI_T_source_get_num(num_sources: *mut c_int) -> c_int {
    // SAFETY: `num_sources` is NULL or a writable int (the caller's contract).
    call(|_| unsafe { out(num_sources, 1) })
}

pub unsafe fn MPI_T_source_get_info(
    source_index: c_int,
    name: *mut c_char,
    name_len: *mut c_int,
    desc: *mut c_char,
    desc_len: *mut c_int,
    ordering: *mut c_int,
    ticks_per_second: *mut i64,
    max_ticks: *mut i64,
    info: *mut c_int,
) -> c_int {
    call(|_| {
        index(source_index, 1)?;
        // SAFETY: every output is NULL or writable for its type, and `name`
        // and `desc` are NULL or hold `*name_len` and `*desc_len` bytes (the
        // caller's contract).
        unsafe {
            put_tstr(name, name_len, tool::source::NAME);
            put_tstr(desc, desc_len, tool::source::DESC);
            opt(ordering, MPI_T_SOURCE_ORDERED);
            opt(ticks_per_second, tool::source::TICKS_PER_SECOND);
            opt(max_ticks, i64::MAX);
            opt(info, MPI_INFO_NULL);
        }
        Ok(())
    })
}

pub unsafe fn MPI_T_source_get_timestamp(source_index: c_int, timestamp: *mut i64) -> c_int {
    call(|_| {
        index(source_index, 1)?;
        // SAFETY: `timestamp` is NULL or a writable count (the caller's contract).
        unsafe { out(timestamp, tool::source::now()) }
    })
}
