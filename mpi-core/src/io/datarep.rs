//! User-defined data representations (`MPI_Register_datarep`, MPI 3.1
//! section 13.5.3): a table of the representations this process registered,
//! by name, with the program's conversion and extent functions.
//!
//! A file view in such a representation is laid out as the types are in
//! memory, so, as for "external32", only data whose file extent equals its
//! native size is taken: the extent function is asked for every predefined
//! type of the etype, filetype and memory type, and a different answer is
//! `MPI_ERR_UNSUPPORTED_DATAREP`. The conversion functions then run on
//! whole accesses (one call, position 0, when the item count fits their
//! `int` count; in pieces otherwise), outside the runtime's lock, so they
//! may call MPI (type queries, say).

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Mutex;

use mpi_api::abi::*;

use crate::bail;
use crate::rt::datatype::Dtype;
use crate::rt::error::{MpiError, MpiResult};

/// `MPI_Datarep_conversion_function` (`int` count).
type ConvFn = unsafe extern "C" fn(*mut c_void, MPI_Datatype, c_int, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
/// `MPI_Datarep_conversion_function_c` (`MPI_Count` count).
type ConvFnC =
    unsafe extern "C" fn(*mut c_void, MPI_Datatype, MPI_Count, *mut c_void, MPI_Offset, *mut c_void) -> c_int;
/// `MPI_Datarep_extent_function`.
type ExtentFn = unsafe extern "C" fn(MPI_Datatype, *mut MPI_Aint, *mut c_void) -> c_int;

/// A conversion function as registered.
#[derive(Clone, Copy)]
pub enum Conv {
    /// `MPI_CONVERSION_FN_NULL`: the data is stored as it is in memory.
    Null,
    Int(ConvFn),
    Large(ConvFnC),
}

impl Conv {
    /// From the program's pointer: `large` for `MPI_Register_datarep_c`.
    ///
    /// # Safety
    /// `p` is NULL or a function of the type `large` says.
    pub unsafe fn from_ptr(p: *mut c_void, large: bool) -> Conv {
        if p.is_null() {
            Conv::Null
        } else if large {
            // SAFETY: a non-NULL MPI_Datarep_conversion_function_c pointer.
            Conv::Large(unsafe { std::mem::transmute::<*mut c_void, ConvFnC>(p) })
        } else {
            // SAFETY: a non-NULL MPI_Datarep_conversion_function pointer.
            Conv::Int(unsafe { std::mem::transmute::<*mut c_void, ConvFn>(p) })
        }
    }
}

/// A registered representation.
#[derive(Clone, Copy)]
pub struct Datarep {
    pub read: Conv,
    pub write: Conv,
    extent: Option<ExtentFn>,
    pub extra: *mut c_void,
}

// SAFETY: the program's function pointers and extra state, passed back to
// it as given; the table only stores them.
unsafe impl Send for Datarep {}

static REPS: Mutex<Option<HashMap<String, Datarep>>> = Mutex::new(None);

/// Registers `name` (`MPI_ERR_DUP_DATAREP` if it exists, predefined
/// names included).
///
/// # Safety
/// The pointers are NULL or functions of the types their names say
/// (`large`: the `_c` conversion type).
pub unsafe fn register(
    name: &str,
    read: *mut c_void,
    write: *mut c_void,
    extent: *mut c_void,
    extra: *mut c_void,
    large: bool,
) -> MpiResult<()> {
    if name.is_empty() || name.len() >= MPI_MAX_DATAREP_STRING as usize {
        bail!(MPI_ERR_ARG, "a data representation's name has 1 to {} characters", MPI_MAX_DATAREP_STRING - 1);
    }
    let mut reps = REPS.lock().unwrap_or_else(|e| e.into_inner());
    let reps = reps.get_or_insert_with(HashMap::new);
    if matches!(name, "native" | "internal" | "external32") || reps.contains_key(name) {
        bail!(MPI_ERR_DUP_DATAREP, "the data representation \"{name}\" is already defined");
    }
    // SAFETY: `read` and `write` are NULL or conversion functions of the
    // type `large` names, `extent` NULL or an MPI_Datarep_extent_function
    // (this function's contract); a NULL function pointer transmutes to
    // `None` (`Option<fn>` has the null-pointer niche).
    let rep = unsafe {
        Datarep {
            read: Conv::from_ptr(read, large),
            write: Conv::from_ptr(write, large),
            extent: std::mem::transmute::<*mut c_void, Option<ExtentFn>>(extent),
            extra,
        }
    };
    reps.insert(name.to_string(), rep);
    Ok(())
}

/// The representation registered as `name`.
pub fn lookup(name: &str) -> Option<Datarep> {
    REPS.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|m| m.get(name).copied())
}

impl Datarep {
    /// Converts `items` predefined data items between the user's buffer
    /// (`user`: its address, type and the type's handle, tiled from the
    /// start) and the packed `file` buffer, in pieces the function's count
    /// can hold; `read`: from the file to memory, with the read function.
    /// With [`Conv::Null`], packs or unpacks as in memory.
    ///
    /// # Safety
    /// The user's buffer holds the elements those items belong to; `file`
    /// has their bytes; the functions are the program's.
    pub unsafe fn convert(
        &self,
        read: bool,
        user: (*mut u8, &Dtype, MPI_Datatype),
        items: u64,
        file: &mut [u8],
    ) -> MpiResult<()> {
        let (ptr, dt, handle) = user;
        let per = dt.items() as u64;
        if per == 0 || items == 0 {
            return Ok(());
        }
        let f = if read { self.read } else { self.write };
        crate::rt::entering_user_code();
        if let Conv::Null = f {
            // SAFETY: (this function's contract) the user's buffer holds the
            // elements the `items` data items belong to, which `pack` reads
            // and `unpack` writes; `file` is a Rust slice.
            unsafe {
                if read {
                    dt.unpack(&file[..dt.bytes_of_elements(items) as usize], ptr);
                } else {
                    dt.pack(ptr, items.div_ceil(per) as usize, file);
                }
            }
            return Ok(());
        }
        let step = match f {
            Conv::Int(_) => c_int::MAX as u64,
            _ => items,
        };
        let mut pos = 0u64;
        while pos < items {
            let k = step.min(items - pos);
            let at = dt.bytes_of_elements(pos) as usize;
            let fb = file[at..].as_mut_ptr() as *mut c_void;
            // SAFETY: `g` is the program's conversion function of the type
            // registered; it gets the user's buffer (holding the elements of
            // these items, the contract), `k` items that fit its count type,
            // and `fb`, the file bytes from item `pos` on, inside `file`.
            let rc = unsafe {
                match f {
                    Conv::Int(g) => g(ptr as *mut c_void, handle, k as c_int, fb, pos as MPI_Offset, self.extra),
                    Conv::Large(g) => g(ptr as *mut c_void, handle, k as MPI_Count, fb, pos as MPI_Offset, self.extra),
                    Conv::Null => MPI_SUCCESS,
                }
            };
            if rc != MPI_SUCCESS {
                bail!(
                    MPI_ERR_CONVERSION,
                    "the {} conversion function of the data representation returned error code {rc}",
                    if read { "read" } else { "write" }
                );
            }
            pos += k;
        }
        Ok(())
    }

    /// Fails unless every predefined type of `t` has its native size in
    /// the file (see the module's documentation).
    pub fn check(&self, t: &Dtype, what: &str) -> MpiResult<()> {
        let Some(f) = self.extent else { return Ok(()) };
        crate::rt::entering_user_code();
        for (dt, size) in t.basic_types() {
            let mut ext: MPI_Aint = 0;
            // SAFETY: the program's extent function, called as the standard says.
            let rc = unsafe { f(dt, &mut ext, self.extra) };
            if rc != MPI_SUCCESS {
                return Err(MpiError::new(
                    MPI_ERR_CONVERSION,
                    format!("the extent function of the data representation returned error code {rc}"),
                ));
            }
            if ext != size as MPI_Aint {
                bail!(
                    MPI_ERR_UNSUPPORTED_DATAREP,
                    "the {what} has a predefined type of {size} bytes that the data representation stores in {ext} (only types of the same size are supported)"
                );
            }
        }
        Ok(())
    }
}
