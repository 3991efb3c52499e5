//! Chapters 6 and 8 (part): communicators and their error handlers.

use std::os::raw::{c_char, c_int};
use std::sync::Arc;

use mpi_api::abi::*;

use super::coll::allreduce_max_u32;
use super::{put, put_str, raise, ret};
use crate::bail;
use crate::rt::comm::Comm;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self};

pub unsafe fn MPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let c = st.comms.get(comm)?;
        put(rank, c.rank, "rank")
    });
    ret(comm, "MPI_Comm_rank", r)
}

pub unsafe fn MPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let c = st.comms.get(comm)?;
        put(size, c.size(), "size")
    });
    ret(comm, "MPI_Comm_size", r)
}

fn check_errhandler(st: &rt::State, h: MPI_Errhandler) -> MpiResult<()> {
    match h {
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT => Ok(()),
        _ if handle_kind(h) == HANDLE_KIND_DIRECT
            && handle_obj(h) == OBJ_ERRHANDLER
            && st.errhandlers.get(handle_index(h) as usize).is_some_and(Option::is_some) =>
        {
            Ok(())
        }
        _ => bail!(MPI_ERR_ARG, "invalid error handler 0x{:08x}", h as u32),
    }
}

pub unsafe fn MPI_Comm_set_errhandler(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    let r = rt::with(|st| {
        check_errhandler(st, errhandler)?;
        st.comms.get_mut(comm)?.errhandler = errhandler;
        Ok(())
    });
    ret(comm, "MPI_Comm_set_errhandler", r)
}

pub unsafe fn MPI_Comm_get_errhandler(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    let r = rt::with(|st| {
        let h = st.comms.get(comm)?.errhandler;
        put(errhandler, h, "errhandler")
    });
    ret(comm, "MPI_Comm_get_errhandler", r)
}

pub unsafe fn MPI_Errhandler_set(comm: MPI_Comm, errhandler: MPI_Errhandler) -> c_int {
    MPI_Comm_set_errhandler(comm, errhandler)
}

pub unsafe fn MPI_Errhandler_get(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> c_int {
    MPI_Comm_get_errhandler(comm, errhandler)
}

pub unsafe fn MPI_Comm_create_errhandler(
    comm_errhandler_fn: *mut std::ffi::c_void,
    errhandler: *mut MPI_Errhandler,
) -> c_int {
    let r = rt::with(|st| {
        if comm_errhandler_fn.is_null() {
            bail!(MPI_ERR_ARG, "comm_errhandler_fn is NULL");
        }
        st.errhandlers.push(Some(comm_errhandler_fn as usize));
        let h = make_handle(HANDLE_KIND_DIRECT, OBJ_ERRHANDLER, (st.errhandlers.len() - 1) as u32);
        put(errhandler, h, "errhandler")
    });
    ret(MPI_COMM_WORLD, "MPI_Comm_create_errhandler", r)
}

pub unsafe fn MPI_Errhandler_create(function: *mut std::ffi::c_void, errhandler: *mut MPI_Errhandler) -> c_int {
    MPI_Comm_create_errhandler(function, errhandler)
}

pub unsafe fn MPI_Errhandler_free(errhandler: *mut MPI_Errhandler) -> c_int {
    let r = rt::with(|st| {
        if errhandler.is_null() {
            bail!(MPI_ERR_ARG, "errhandler is a NULL pointer");
        }
        check_errhandler(st, *errhandler)?;
        // User handlers stay registered while communicators may use them
        // (the standard frees them only when no object refers to them).
        *errhandler = MPI_ERRHANDLER_NULL;
        Ok(())
    });
    ret(MPI_COMM_WORLD, "MPI_Errhandler_free", r)
}

pub unsafe fn MPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) -> c_int {
    if let Err(e) = rt::with(|st| st.comms.get(comm).map(|_| ())) {
        return raise(comm, "MPI_Comm_call_errhandler", e);
    }
    raise(comm, "MPI_Comm_call_errhandler", MpiError::new(errorcode, "error raised by the application"));
    MPI_SUCCESS
}

pub unsafe fn MPI_Comm_set_name(comm: MPI_Comm, comm_name: *const c_char) -> c_int {
    let r = rt::with(|st| {
        if comm_name.is_null() {
            bail!(MPI_ERR_ARG, "comm_name is a NULL pointer");
        }
        let name = std::ffi::CStr::from_ptr(comm_name).to_string_lossy().into_owned();
        let name: String = name.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
        st.comms.get_mut(comm)?.name = name;
        Ok(())
    });
    ret(comm, "MPI_Comm_set_name", r)
}

pub unsafe fn MPI_Comm_get_name(comm: MPI_Comm, comm_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        if comm_name.is_null() {
            bail!(MPI_ERR_ARG, "comm_name is a NULL pointer");
        }
        let n = put_str(comm_name, MPI_MAX_OBJECT_NAME as usize, &st.comms.get(comm)?.name);
        put(resultlen, n, "resultlen")
    });
    ret(comm, "MPI_Comm_get_name", r)
}

/// Agrees on a fresh context id over `comm` (collective).
fn new_context(comm: MPI_Comm) -> MpiResult<u32> {
    let mine = rt::with(|st| Ok(st.comms.next_ctx))?;
    let ctx = allreduce_max_u32(comm, mine)?;
    rt::with(|st| {
        st.comms.next_ctx = ctx + 2;
        Ok(ctx)
    })
}

pub unsafe fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    let r = rt::with(|st| st.comms.get(comm).cloned()).and_then(|parent| {
        let ctx = new_context(comm)?;
        rt::with(|st| {
            let c = Comm { ctx, name: String::new(), ..parent };
            let h = st.comms.insert(c);
            put(newcomm, h, "newcomm")
        })
    });
    ret(comm, "MPI_Comm_dup", r)
}

pub unsafe fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    let c = if comm.is_null() { MPI_COMM_NULL } else { *comm };
    let r = rt::with(|st| {
        if comm.is_null() {
            bail!(MPI_ERR_ARG, "comm is a NULL pointer");
        }
        st.comms.remove(*comm)?;
        *comm = MPI_COMM_NULL;
        Ok(())
    });
    ret(c, "MPI_Comm_free", r)
}

pub unsafe fn MPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) -> c_int {
    let r = rt::with(|st| st.comms.get(comm).cloned()).and_then(|parent| {
        if color < 0 && color != MPI_UNDEFINED {
            bail!(MPI_ERR_ARG, "invalid color {color} (must be >= 0 or MPI_UNDEFINED)");
        }
        // Everyone learns every member's (color, key).
        let all = super::coll::allgather_i32x2(comm, [color, key])?;
        let ctx = new_context(comm)?;
        if color == MPI_UNDEFINED {
            return put(newcomm, MPI_COMM_NULL, "newcomm");
        }
        let mut members: Vec<(c_int, usize)> =
            all.iter().enumerate().filter(|(_, ck)| ck[0] == color).map(|(r, ck)| (ck[1], r)).collect();
        members.sort();
        let group: Vec<usize> = members.iter().map(|&(_, r)| parent.group[r]).collect();
        let rank = members.iter().position(|&(_, r)| r as i32 == parent.rank).unwrap() as i32;
        rt::with(|st| {
            let c = Comm { ctx, group: Arc::new(group), rank, errhandler: parent.errhandler, name: String::new() };
            let h = st.comms.insert(c);
            put(newcomm, h, "newcomm")
        })
    });
    ret(comm, "MPI_Comm_split", r)
}

pub unsafe fn MPI_Comm_compare(comm1: MPI_Comm, comm2: MPI_Comm, result: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let a = st.comms.get(comm1)?;
        let b = st.comms.get(comm2)?;
        let v = if comm1 == comm2 {
            MPI_IDENT
        } else if a.group == b.group {
            MPI_CONGRUENT
        } else {
            let mut x = a.group.to_vec();
            let mut y = b.group.to_vec();
            x.sort();
            y.sort();
            if x == y {
                MPI_SIMILAR
            } else {
                MPI_UNEQUAL
            }
        };
        put(result, v, "result")
    });
    ret(comm1, "MPI_Comm_compare", r)
}
