//! Info objects (chapter 9 of MPI 3.1) and `MPI_INFO_ENV`.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use mpi_api::abi::*;

use super::{put, put_str, ret};
use crate::bail;
use crate::rt::error::MpiResult;
use crate::rt::info::{self, Pairs};
use crate::rt::{self, State};

fn done(name: &str, r: MpiResult<()>) -> c_int {
    ret(MPI_COMM_WORLD, name, r)
}

/// A C string argument.
pub(crate) unsafe fn cstr<'a>(p: *const c_char, what: &str) -> MpiResult<std::borrow::Cow<'a, str>> {
    if p.is_null() {
        bail!(MPI_ERR_ARG, "{what} is a NULL pointer");
    }
    Ok(CStr::from_ptr(p).to_string_lossy())
}

/// Contents of `h` (filling `MPI_INFO_ENV` on first use).
fn pairs(st: &mut State, h: MPI_Info) -> MpiResult<&Pairs> {
    if h == MPI_INFO_ENV && st.comms.infos.env.is_empty() {
        st.comms.infos.env = info::env_pairs(st.world_size, &st.processor_name, st.thread_level);
    }
    st.comms.infos.get(h)
}

pub unsafe fn MPI_Info_create(info: *mut MPI_Info) -> c_int {
    let r = rt::with(|st| {
        if info.is_null() {
            bail!(MPI_ERR_ARG, "info is a NULL pointer");
        }
        put(info, st.comms.infos.insert(Pairs::new()), "info")
    });
    done("MPI_Info_create", r)
}

pub unsafe fn MPI_Info_create_env(_argc: c_int, _argv: *mut c_char, info: *mut MPI_Info) -> c_int {
    let r = rt::with(|st| {
        if info.is_null() {
            bail!(MPI_ERR_ARG, "info is a NULL pointer");
        }
        let p = pairs(st, MPI_INFO_ENV)?.clone();
        put(info, st.comms.infos.insert(p), "info")
    });
    done("MPI_Info_create_env", r)
}

pub unsafe fn MPI_Info_set(info: MPI_Info, key: *const c_char, value: *const c_char) -> c_int {
    let r = rt::with(|st| {
        let k = cstr(key, "key")?;
        let v = cstr(value, "value")?;
        let p = st.comms.infos.get_mut(info)?;
        info::set(p, info::check_key(&k)?, info::check_value(&v)?);
        Ok(())
    });
    done("MPI_Info_set", r)
}

pub unsafe fn MPI_Info_delete(info: MPI_Info, key: *const c_char) -> c_int {
    let r = rt::with(|st| {
        let k = cstr(key, "key")?;
        let k = info::check_key(&k)?;
        let p = st.comms.infos.get_mut(info)?;
        match p.iter().position(|(kk, _)| kk == k) {
            Some(i) => {
                p.remove(i);
                Ok(())
            }
            None => bail!(MPI_ERR_INFO_NOKEY, "key \"{k}\" is not in the info object"),
        }
    });
    done("MPI_Info_delete", r)
}

/// The value of `key` in `info`, if set.
unsafe fn lookup(st: &mut State, info: MPI_Info, key: *const c_char) -> MpiResult<Option<String>> {
    let k = cstr(key, "key")?;
    let k = info::check_key(&k)?.to_string();
    Ok(info::get(pairs(st, info)?, &k).map(str::to_string))
}

pub unsafe fn MPI_Info_get(
    info: MPI_Info,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    let r = rt::with(|st| {
        let v = lookup(st, info, key)?;
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
                // The buffer holds valuelen characters and the NUL.
                put_str(value, valuelen as usize + 1, &v);
                *flag = 1;
            }
            None => *flag = 0,
        }
        Ok(())
    });
    done("MPI_Info_get", r)
}

pub unsafe fn MPI_Info_get_valuelen(
    info: MPI_Info,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    let r = rt::with(|st| {
        let v = lookup(st, info, key)?;
        if let Some(v) = &v {
            put(valuelen, v.len() as c_int, "valuelen")?;
        }
        put(flag, v.is_some() as c_int, "flag")
    });
    done("MPI_Info_get_valuelen", r)
}

pub unsafe fn MPI_Info_get_string(
    info: MPI_Info,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    let r = rt::with(|st| {
        let v = lookup(st, info, key)?;
        if buflen.is_null() || flag.is_null() {
            bail!(MPI_ERR_ARG, "buflen or flag is a NULL pointer");
        }
        match v {
            Some(v) => {
                let cap = *buflen;
                if cap > 0 {
                    if value.is_null() {
                        bail!(MPI_ERR_ARG, "value is a NULL pointer");
                    }
                    put_str(value, cap as usize, &v);
                }
                *buflen = v.len() as c_int + 1;
                *flag = 1;
            }
            None => *flag = 0,
        }
        Ok(())
    });
    done("MPI_Info_get_string", r)
}

pub unsafe fn MPI_Info_get_nkeys(info: MPI_Info, nkeys: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let n = pairs(st, info)?.len() as c_int;
        put(nkeys, n, "nkeys")
    });
    done("MPI_Info_get_nkeys", r)
}

pub unsafe fn MPI_Info_get_nthkey(info: MPI_Info, n: c_int, key: *mut c_char) -> c_int {
    let r = rt::with(|st| {
        let p = pairs(st, info)?;
        if n < 0 || n as usize >= p.len() {
            bail!(MPI_ERR_ARG, "key number {n} is not in 0..{}", p.len());
        }
        if key.is_null() {
            bail!(MPI_ERR_ARG, "key is a NULL pointer");
        }
        put_str(key, MPI_MAX_INFO_KEY as usize + 1, &p[n as usize].0);
        Ok(())
    });
    done("MPI_Info_get_nthkey", r)
}

pub unsafe fn MPI_Info_dup(info: MPI_Info, newinfo: *mut MPI_Info) -> c_int {
    let r = rt::with(|st| {
        let p = pairs(st, info)?.clone();
        if newinfo.is_null() {
            bail!(MPI_ERR_ARG, "newinfo is a NULL pointer");
        }
        put(newinfo, st.comms.infos.insert(p), "newinfo")
    });
    done("MPI_Info_dup", r)
}

pub unsafe fn MPI_Info_free(info: *mut MPI_Info) -> c_int {
    let r = rt::with(|st| {
        if info.is_null() {
            bail!(MPI_ERR_ARG, "info is a NULL pointer");
        }
        st.comms.infos.remove(*info)?;
        *info = MPI_INFO_NULL;
        Ok(())
    });
    done("MPI_Info_free", r)
}
