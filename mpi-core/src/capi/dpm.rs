//! Chapter 10: process creation and management — ports, accept/connect,
//! disconnect (the runtime side is rt/dpm.rs, which explains the design).
//!
//! Accept and connect are one meeting seen from either side: every member
//! of each group turns its TCP transport on and the group's identities are
//! gathered; the roots meet through the port, swap the groups, and tell
//! their groups; everybody registers the other group's processes as peers;
//! then the two groups agree on a context id as `MPI_Intercomm_create` does,
//! the roots talking on a bridge of their own.

use std::os::raw::{c_char, c_int};

use mpi_api::abi::*;

use super::comm::free_comm;
use super::info::cstr;
use super::{c_array, put, put_str, ret, Out};
use crate::bail;
use crate::rt::ctxid::{agreement_of, quiet};
use crate::rt::dpm;
use crate::rt::error::MpiResult;
use crate::rt::pmi::SpawnRequest;
use crate::rt::{self};

pub unsafe fn MPI_Open_port(_info: MPI_Info, port_name: *mut c_char) -> c_int {
    let r = (|| {
        if port_name.is_null() {
            bail!(MPI_ERR_ARG, "port_name is a NULL pointer");
        }
        let name = rt::with(dpm::open_port)?;
        // SAFETY: not NULL, so `port_name` holds MPI_MAX_PORT_NAME chars (the
        // caller's contract).
        unsafe { put_str(port_name, MPI_MAX_PORT_NAME as usize, &name) };
        Ok(())
    })();
    ret(MPI_COMM_WORLD, "MPI_Open_port", r)
}

pub unsafe fn MPI_Close_port(port_name: *const c_char) -> c_int {
    // SAFETY: `port_name` is NULL or a NUL-terminated string (the caller's
    // contract).
    let r = unsafe { cstr(port_name, "port_name") }.and_then(|name| rt::with(|st| dpm::close_port(st, &name)));
    ret(MPI_COMM_WORLD, "MPI_Close_port", r)
}

/// The port name argument, read only at the root (it is not significant
/// elsewhere).
///
/// # Safety
/// At the root, `port_name` is NULL or a NUL-terminated string.
unsafe fn port_at_root(port_name: *const c_char, root: c_int, comm: MPI_Comm) -> MpiResult<String> {
    let me = rt::with(|st| Ok(st.comms.get(comm)?.rank))?;
    if me == root {
        // SAFETY: this is the root: the contract.
        Ok(unsafe { cstr(port_name, "port_name") }?.into_owned())
    } else {
        Ok(String::new())
    }
}

/// `MPI_Comm_accept` (`accepting`) or `MPI_Comm_connect`.
///
/// # Safety
/// `newcomm` is NULL or a writable handle; at the root, `port_name` is NULL
/// or a NUL-terminated string.
unsafe fn accept_or_connect(
    port_name: *const c_char,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    accepting: bool,
) -> MpiResult<()> {
    if newcomm.is_null() {
        bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
    }
    // SAFETY: the contract.
    let name = unsafe { port_at_root(port_name, root, comm) }?;
    let h =
        dpm::meet(comm, root, accepting, || if accepting { dpm::accept(&name, None) } else { dpm::connect(&name) })?;
    // SAFETY: not NULL (checked above), so a writable handle (the contract).
    unsafe { put(newcomm, h, "newcomm") }
}

pub unsafe fn MPI_Comm_accept(
    port_name: *const c_char,
    _info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    // SAFETY: `newcomm` is NULL or a writable handle, `port_name` at the root
    // NULL or a NUL-terminated string (the caller's contract).
    ret(comm, "MPI_Comm_accept", unsafe { accept_or_connect(port_name, root, comm, newcomm, true) })
}

pub unsafe fn MPI_Comm_connect(
    port_name: *const c_char,
    _info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    // SAFETY: `newcomm` is NULL or a writable handle, `port_name` at the root
    // NULL or a NUL-terminated string (the caller's contract).
    ret(comm, "MPI_Comm_connect", unsafe { accept_or_connect(port_name, root, comm, newcomm, false) })
}

/// Waits until the operations on `comm` have completed (a receive never
/// matched waits forever, as the standard's "waits for all pending
/// communication" implies) and this process's records are all written,
/// meets every process of `comm` (both groups), then frees it.
pub unsafe fn MPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    // SAFETY: `comm` is NULL or the program's handle, readable and writable
    // (the caller's contract).
    let comm = unsafe { comm.as_mut() };
    let c = comm.as_deref().map_or(MPI_COMM_NULL, |&c| c);
    let r = (|| {
        let Some(comm) = comm else {
            bail!(MPI_ERR_ARG, "comm is a NULL pointer");
        };
        if c == MPI_COMM_WORLD || c == MPI_COMM_SELF {
            bail!(MPI_ERR_COMM, "predefined communicators cannot be disconnected");
        }
        quiet(c)?;
        rt::wait_until(|st| !st.reqs.pending_on(c) && !st.engine.has_pending_out())?;
        let (a, _) = rt::with(|st| agreement_of(st, c))?;
        a.round(0)?;
        free_comm(c)?;
        *comm = MPI_COMM_NULL;
        Ok(())
    })();
    ret(c, "MPI_Comm_disconnect", r)
}

/// The two processes at the ends of socket `fd` meet (see
/// `rt::dpm::join_socket`); each group is the process alone.
pub unsafe fn MPI_Comm_join(fd: c_int, intercomm: *mut MPI_Comm) -> c_int {
    let r = (|| {
        if intercomm.is_null() {
            bail!(MPI_ERR_ARG, "intercomm is a NULL pointer");
        }
        let (side, key, accepting) = dpm::join_socket(fd)?;
        let h = dpm::meet(MPI_COMM_SELF, 0, accepting, move || Ok((side, key)))?;
        // SAFETY: not NULL (checked above), so a writable handle (the
        // caller's contract).
        unsafe { put(intercomm, h, "intercomm") }
    })();
    ret(MPI_COMM_SELF, "MPI_Comm_join", r)
}

/// A NULL-terminated C array of C strings (`MPI_ARGV_NULL`: none).
///
/// # Safety
/// `p` is NULL or an array of NUL-terminated strings ended by NULL.
unsafe fn c_strings(mut p: *mut *mut c_char, what: &str) -> MpiResult<Vec<String>> {
    let mut v = Vec::new();
    // SAFETY: `p` is NULL or, by the contract, an entry of the array at or
    // before its terminating NULL, which is readable.
    while let Some(&s) = unsafe { p.as_ref() } {
        if s.is_null() {
            break;
        }
        // SAFETY: an entry before the NULL: a NUL-terminated string (the
        // contract), copied here.
        v.push(unsafe { cstr(s, what) }?.into_owned());
        // SAFETY: the entry was not the terminating NULL, so the next one is
        // still in the array.
        p = unsafe { p.add(1) };
    }
    Ok(v)
}

/// One program of a spawn, read at the root.
///
/// # Safety
/// `command` is NULL or a NUL-terminated string; `argv` as for [`c_strings`].
unsafe fn spawn_request(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: MPI_Info,
) -> MpiResult<SpawnRequest> {
    if maxprocs <= 0 {
        bail!(MPI_ERR_ARG, "maxprocs {maxprocs} is not positive");
    }
    let info = crate::rt::info::hints(info)?;
    // SAFETY: the contract; both are copied here.
    let (command, args) = unsafe { (cstr(command, "command"), c_strings(argv, "argv")) };
    Ok(SpawnRequest {
        command: command?.into_owned(),
        args: args?,
        nprocs: maxprocs as usize,
        info: info.into_iter().filter(|(k, _)| k == "wdir").collect(),
    })
}

/// `MPI_Comm_spawn(_multiple)` (see `rt::dpm::spawn`; `requests` runs
/// at the root only). Fills `errcodes` (unless NULL) with one code per
/// process started (at the root, per process asked for on failure).
///
/// # Safety
/// `intercomm` is NULL or a writable handle; `errcodes` NULL or holds an int
/// per process of the spawn (the `maxprocs` summed over the programs).
unsafe fn spawn(
    comm: MPI_Comm,
    root: c_int,
    requests: impl FnOnce() -> MpiResult<Vec<SpawnRequest>>,
    intercomm: *mut MPI_Comm,
    errcodes: *mut c_int,
) -> MpiResult<()> {
    if intercomm.is_null() {
        bail!(MPI_ERR_ARG, "intercomm is a NULL pointer");
    }
    let (res, n) = dpm::spawn(comm, root, requests)?;
    // SAFETY: `errcodes` is NULL or holds an int per process of the spawn
    // (the contract): `n` is the number started, or asked for at a root
    // that failed.
    if let Some(codes) = unsafe { super::out_array(errcodes, n) } {
        codes.fill(if res.is_ok() { MPI_SUCCESS } else { MPI_ERR_SPAWN });
    }
    // SAFETY: not NULL (checked above), so a writable handle (the contract).
    unsafe { put(intercomm, res?, "intercomm") }
}

pub unsafe fn MPI_Comm_spawn(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    // SAFETY: `command` is a NUL-terminated string and `argv` MPI_ARGV_NULL
    // or a NULL-terminated array of them at the root, where this is called
    // (the caller's contract).
    let requests = || Ok(vec![unsafe { spawn_request(command, argv, maxprocs, info) }?]);
    // SAFETY: `intercomm` is NULL or a writable handle, `array_of_errcodes`
    // MPI_ERRCODES_IGNORE (NULL) or `maxprocs` ints (the caller's contract).
    ret(comm, "MPI_Comm_spawn", unsafe { spawn(comm, root, requests, intercomm, array_of_errcodes) })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn MPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> c_int {
    // (Called at the root only, where the arrays are significant.)
    let requests = || {
        // SAFETY: the three arrays are NULL or hold `count` entries (the
        // caller's contract).
        let (cmds, maxprocs, infos) = unsafe {
            (
                c_array(array_of_commands as *const *mut c_char, count, "array_of_commands"),
                c_array(array_of_maxprocs, count, "array_of_maxprocs"),
                c_array(array_of_info, count, "array_of_info"),
            )
        };
        let (cmds, maxprocs, infos) = (cmds?, maxprocs?, infos?);
        let argvs = if array_of_argv.is_null() {
            None
        } else {
            // SAFETY: not MPI_ARGVS_NULL (NULL), so `count` argument lists
            // (the caller's contract).
            Some(unsafe { c_array(array_of_argv as *const *mut *mut c_char, count, "array_of_argv") }?)
        };
        (0..count as usize)
            .map(|i| {
                let argv = argvs.map_or(std::ptr::null_mut(), |a| a[i]);
                // SAFETY: each command is a NUL-terminated string and each
                // argument list MPI_ARGV_NULL or a NULL-terminated array of
                // them (the caller's contract).
                unsafe { spawn_request(cmds[i], argv, maxprocs[i], infos[i]) }
            })
            .collect()
    };
    // SAFETY: `intercomm` is NULL or a writable handle, `array_of_errcodes`
    // MPI_ERRCODES_IGNORE (NULL) or an int per process asked for (the
    // caller's contract).
    ret(comm, "MPI_Comm_spawn_multiple", unsafe { spawn(comm, root, requests, intercomm, array_of_errcodes) })
}

/// The intercommunicator to the job that spawned this one, if any (and
/// not yet disconnected).
pub unsafe fn MPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    // SAFETY: `parent` is NULL or a writable handle (the caller's contract).
    let mut parent = unsafe { Out::new(parent, "parent") };
    let r = rt::with(|st| parent.put(st.dpm.parent.unwrap_or(MPI_COMM_NULL)));
    ret(MPI_COMM_WORLD, "MPI_Comm_get_parent", r)
}

/// `MPI_Publish_name` / `MPI_Unpublish_name`: `f` on the two names.
///
/// # Safety
/// `service_name` and `port_name` are NULL or NUL-terminated strings.
unsafe fn with_names(
    name: &str,
    service_name: *const c_char,
    port_name: *const c_char,
    f: fn(&str, &str) -> MpiResult<()>,
) -> c_int {
    // SAFETY: the contract; both stay unchanged during the call.
    let (s, p) = unsafe { (cstr(service_name, "service_name"), cstr(port_name, "port_name")) };
    let r = s.and_then(|s| Ok((s, p?))).and_then(|(s, p)| rt::with(|_| f(&s, &p)));
    ret(MPI_COMM_WORLD, name, r)
}

pub unsafe fn MPI_Publish_name(service_name: *const c_char, _info: MPI_Info, port_name: *const c_char) -> c_int {
    // SAFETY: both names are NULL or NUL-terminated strings (the caller's
    // contract).
    unsafe { with_names("MPI_Publish_name", service_name, port_name, dpm::publish_name) }
}

pub unsafe fn MPI_Unpublish_name(service_name: *const c_char, _info: MPI_Info, port_name: *const c_char) -> c_int {
    // SAFETY: both names are NULL or NUL-terminated strings (the caller's
    // contract).
    unsafe { with_names("MPI_Unpublish_name", service_name, port_name, dpm::unpublish_name) }
}

pub unsafe fn MPI_Lookup_name(service_name: *const c_char, _info: MPI_Info, port_name: *mut c_char) -> c_int {
    let r = (|| {
        // SAFETY: `service_name` is NULL or a NUL-terminated string (the
        // caller's contract).
        let s = unsafe { cstr(service_name, "service_name") }?;
        if port_name.is_null() {
            bail!(MPI_ERR_ARG, "port_name is a NULL pointer");
        }
        let p = rt::with(|_| dpm::lookup_name(&s))?;
        // SAFETY: not NULL, so `port_name` holds MPI_MAX_PORT_NAME chars (the
        // caller's contract).
        unsafe { put_str(port_name, MPI_MAX_PORT_NAME as usize, &p) };
        Ok(())
    })();
    ret(MPI_COMM_WORLD, "MPI_Lookup_name", r)
}
