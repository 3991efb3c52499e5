//! Info objects (chapter 9 of MPI 3.1) and `MPI_INFO_ENV`.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use mpi_api::abi::*;

use super::{put_str, ret, Out};
use crate::bail;
use crate::rt;
use crate::rt::error::MpiResult;
use crate::rt::info::{self, Pairs};

fn done(name: &str, r: MpiResult<()>) -> c_int {
    ret(MPI_COMM_WORLD, name, r)
}

/// A C string argument.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that stays unchanged during `'a`.
pub(crate) unsafe fn cstr<'a>(p: *const c_char, what: &str) -> MpiResult<std::borrow::Cow<'a, str>> {
    if p.is_null() {
        bail!(MPI_ERR_ARG, "{what} is a NULL pointer");
    }
    // SAFETY: not NULL, so a NUL-terminated string, unchanged during 'a
    // (the contract).
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy())
}

/// Contents of `h` (`MPI_INFO_ENV` filled on first use).
fn pairs(h: MPI_Info) -> MpiResult<Pairs> {
    if h == MPI_INFO_ENV && info::with_table(|t| t.env.is_empty()) {
        // The state's lock first (if the runtime runs), then the info
        // table's (a leaf lock).
        let size = rt::try_with(|st| st.world_size);
        let env = info::env_pairs(std::env::args().collect(), size);
        info::with_table(|t| t.env = env);
    }
    info::with_table(|t| t.get(h).cloned())
}

pub unsafe fn MPI_Info_create(info: *mut MPI_Info) -> c_int {
    // SAFETY: `info` is NULL or a writable handle (the caller's contract).
    let mut info = unsafe { Out::new(info, "info") };
    let r = (|| {
        if info.is_null() {
            bail!(MPI_ERR_ARG, "info is a NULL pointer");
        }
        info.put(info::insert(Pairs::new()))
    })();
    done("MPI_Info_create", r)
}

/// `MPI_Abi_get_info`: a new info object describing this library's ABI,
/// with the keys Open MPI and MPICH give (`mpi_aint_size`,
/// `mpi_count_size`, `mpi_offset_size`: sizes in bytes). This library has
/// the MPICH ABI (`MPI_Abi_get_version` says -1.-1); `libmpi_abi.so`, the
/// standard ABI over it, returns the same object (the sizes agree).
pub unsafe fn MPI_Abi_get_info(info: *mut MPI_Info) -> c_int {
    // SAFETY: `info` is NULL or a writable handle (the caller's contract).
    let mut info = unsafe { Out::new(info, "info") };
    let r = (|| {
        if info.is_null() {
            bail!(MPI_ERR_ARG, "info is a NULL pointer");
        }
        let size = |t: usize| t.to_string();
        let pairs: Pairs = vec![
            ("mpi_aint_size".into(), size(std::mem::size_of::<MPI_Aint>())),
            ("mpi_count_size".into(), size(std::mem::size_of::<MPI_Count>())),
            ("mpi_offset_size".into(), size(std::mem::size_of::<MPI_Offset>())),
        ];
        info.put(info::insert(pairs))
    })();
    done("MPI_Abi_get_info", r)
}

pub unsafe fn MPI_Info_create_env(argc: c_int, argv: *mut *mut c_char, info: *mut MPI_Info) -> c_int {
    // SAFETY: `info` is NULL or a writable handle (the caller's contract).
    let mut info = unsafe { Out::new(info, "info") };
    let r = (|| {
        if info.is_null() {
            bail!(MPI_ERR_ARG, "info is a NULL pointer");
        }
        // The command line given (as MPI_Init's): `argc` strings, or none
        // (then the process's own) when `argv` is NULL or `argc` is not
        // positive.
        let args: Vec<String> = if argv.is_null() || argc <= 0 {
            std::env::args().collect()
        } else {
            (0..argc as usize)
                // SAFETY: `argv` holds `argc` pointers (the caller's
                // contract, as for `main`'s), each NULL or a NUL-terminated
                // string unchanged during the call.
                .map(|i| unsafe { *argv.add(i) })
                .take_while(|p| !p.is_null())
                // SAFETY: not NULL, so a NUL-terminated string (as above).
                .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
                .collect()
        };
        let size = rt::try_with(|st| st.world_size);
        info.put(info::insert(info::env_pairs(args, size)))
    })();
    done("MPI_Info_create_env", r)
}

pub unsafe fn MPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) -> c_int {
    let r = (|| {
        // SAFETY: `key` and `value` are NULL or NUL-terminated strings (the
        // caller's contract), unchanged during the call.
        let (k, v) = unsafe { (cstr(key, "key"), cstr(value, "value")) };
        let (k, v) = (k?, v?);
        let (k, v) = (info::check_key(&k)?, info::check_value(&v)?);
        info::with_table(|t| {
            info::set(t.get_mut(info)?, k, v);
            Ok(())
        })
    })();
    done("MPI_Info_set", r)
}

pub unsafe fn MPI_Info_delete(info: MPI_Info, key: *const c_char) -> c_int {
    let r = (|| {
        // SAFETY: `key` is NULL or a NUL-terminated string (the caller's
        // contract), unchanged during the call.
        let k = unsafe { cstr(key, "key") }?;
        let k = info::check_key(&k)?;
        info::with_table(|t| {
            let p = t.get_mut(info)?;
            match p.iter().position(|(kk, _)| kk == k) {
                Some(i) => {
                    p.remove(i);
                    Ok(())
                }
                None => bail!(MPI_ERR_INFO_NOKEY, "key \"{k}\" is not in the info object"),
            }
        })
    })();
    done("MPI_Info_delete", r)
}

/// The value of `key` in `info`, if set.
///
/// # Safety
/// `key` is NULL or a NUL-terminated string.
unsafe fn lookup(info: MPI_Info, key: *const c_char) -> MpiResult<Option<String>> {
    // SAFETY: the contract; the string is copied before the call returns.
    let k = unsafe { cstr(key, "key") }?;
    let k = info::check_key(&k)?.to_string();
    Ok(info::get(&pairs(info)?, &k).map(str::to_string))
}

pub unsafe fn MPI_Info_get(
    info: MPI_Info,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: `flag` is NULL or a writable int (the caller's contract).
    let mut flag = unsafe { Out::new(flag, "flag") };
    let r = (|| {
        // SAFETY: `key` is NULL or a NUL-terminated string (the caller's
        // contract).
        let v = unsafe { lookup(info, key) }?;
        if flag.is_null() {
            bail!(MPI_ERR_ARG, "flag is a NULL pointer");
        }
        if valuelen < 0 {
            bail!(MPI_ERR_ARG, "valuelen {valuelen} is negative");
        }
        match v {
            Some(v) => {
                if value.is_null() {
                    bail!(MPI_ERR_ARG, "value is a NULL pointer");
                }
                // SAFETY: not NULL, so the buffer holds valuelen characters
                // and the NUL (the caller's contract).
                unsafe { put_str(value, valuelen as usize + 1, &v) };
                flag.put(1)?;
            }
            None => flag.put(0)?,
        }
        Ok(())
    })();
    done("MPI_Info_get", r)
}

pub unsafe fn MPI_Info_get_valuelen(
    info: MPI_Info,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: `valuelen` and `flag` are NULL or writable ints (the caller's
    // contract).
    let (mut valuelen, mut flag) = unsafe { (Out::new(valuelen, "valuelen"), Out::new(flag, "flag")) };
    let r = (|| {
        // SAFETY: `key` is NULL or a NUL-terminated string (the caller's
        // contract).
        let v = unsafe { lookup(info, key) }?;
        if let Some(v) = &v {
            valuelen.put(v.len() as c_int)?;
        }
        flag.put(v.is_some() as c_int)
    })();
    done("MPI_Info_get_valuelen", r)
}

pub unsafe fn MPI_Info_get_string(
    info: MPI_Info,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: `buflen` is NULL or a readable and writable int, `flag` NULL
    // or a writable int (the caller's contract).
    let (buflen, mut flag) = unsafe { (buflen.as_mut(), Out::new(flag, "flag")) };
    let r = (|| {
        // SAFETY: `key` is NULL or a NUL-terminated string (the caller's
        // contract).
        let v = unsafe { lookup(info, key) }?;
        let (Some(buflen), false) = (buflen, flag.is_null()) else {
            bail!(MPI_ERR_ARG, "buflen or flag is a NULL pointer");
        };
        match v {
            Some(v) => {
                let cap = *buflen;
                if cap > 0 {
                    if value.is_null() {
                        bail!(MPI_ERR_ARG, "value is a NULL pointer");
                    }
                    // SAFETY: not NULL, so `value` holds `*buflen` > 0 bytes
                    // (the caller's contract).
                    unsafe { put_str(value, cap as usize, &v) };
                }
                *buflen = v.len() as c_int + 1;
                flag.put(1)?;
            }
            None => flag.put(0)?,
        }
        Ok(())
    })();
    done("MPI_Info_get_string", r)
}

pub unsafe fn MPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) -> c_int {
    // SAFETY: `nkeys` is NULL or a writable int (the caller's contract).
    let mut nkeys = unsafe { Out::new(nkeys, "nkeys") };
    let r = (|| {
        let n = pairs(info)?.len() as c_int;
        nkeys.put(n)
    })();
    done("MPI_Info_get_nkeys", r)
}

pub unsafe fn MPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> c_int {
    let r = (|| {
        let p = pairs(info)?;
        if n < 0 || n as usize >= p.len() {
            bail!(MPI_ERR_ARG, "key number {n} is not in 0..{}", p.len());
        }
        if key.is_null() {
            bail!(MPI_ERR_ARG, "key is a NULL pointer");
        }
        // SAFETY: not NULL, so `key` holds MPI_MAX_INFO_KEY characters and
        // the NUL (the caller's contract).
        unsafe { put_str(key, MPI_MAX_INFO_KEY as usize + 1, &p[n as usize].0) };
        Ok(())
    })();
    done("MPI_Info_get_nthkey", r)
}

pub unsafe fn MPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> c_int {
    // SAFETY: `newinfo` is NULL or a writable handle (the caller's contract).
    let mut newinfo = unsafe { Out::new(newinfo, "newinfo") };
    let r = (|| {
        let p = pairs(info)?.clone();
        if newinfo.is_null() {
            bail!(MPI_ERR_ARG, "newinfo is a NULL pointer");
        }
        newinfo.put(info::insert(p))
    })();
    done("MPI_Info_dup", r)
}

pub unsafe fn MPI_Info_free(info: *mut MPI_Info) -> c_int {
    // SAFETY: `info` is NULL or the program's handle, readable and writable
    // (the caller's contract).
    let info = unsafe { info.as_mut() };
    let r = (|| {
        let Some(info) = info else {
            bail!(MPI_ERR_ARG, "info is a NULL pointer");
        };
        info::with_table(|t| t.remove(*info))?;
        *info = MPI_INFO_NULL;
        Ok(())
    })();
    done("MPI_Info_free", r)
}
