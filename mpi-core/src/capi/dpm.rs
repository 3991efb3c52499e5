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
use std::sync::Arc;

use mpi_api::abi::*;

use super::comm::{free_comm, publish};
use super::info::cstr;
use super::{c_array, put, put_str, ret};
use crate::bail;
use crate::rt::agree::View;
use crate::rt::comm::{ctx_key, CTX_SPAN_INTER};
use crate::rt::ctxid::{agree_ctx, agreement_of, intra_of, quiet, Agreement, KEY_DPM};
use crate::rt::dpm::{self, Ident, Side, BRIDGE_CTX};
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::pmi::SpawnRequest;
use crate::rt::{self};

pub unsafe fn MPI_Open_port(_info: MPI_Info, port_name: *mut c_char) -> c_int {
    let r = (|| {
        if port_name.is_null() {
            bail!(MPI_ERR_ARG, "port_name is a NULL pointer");
        }
        let name = rt::with(dpm::open_port)?;
        put_str(port_name, MPI_MAX_PORT_NAME as usize, &name);
        Ok(())
    })();
    ret(MPI_COMM_WORLD, "MPI_Open_port", r)
}

pub unsafe fn MPI_Close_port(port_name: *const c_char) -> c_int {
    let r = cstr(port_name, "port_name").and_then(|name| rt::with(|st| dpm::close_port(st, &name)));
    ret(MPI_COMM_WORLD, "MPI_Close_port", r)
}

/// The meeting of `comm`'s group with another one (collective over
/// `comm`): at `root`, `reach` finds the other root and returns the
/// meeting socket and the session secret. The acceptor's side (`accepting`)
/// is rank 0 of the roots' bridge. Returns the new intercommunicator.
pub(crate) fn meet(
    comm: MPI_Comm,
    root: c_int,
    accepting: bool,
    reach: impl FnOnce() -> MpiResult<(Side, [u8; 32])>,
) -> MpiResult<MPI_Comm> {
    quiet(comm)?;
    let local = intra_of(comm, "a connect or accept")?;
    if root < 0 || root >= local.size() {
        bail!(MPI_ERR_ROOT, "root {root} is not a rank of the communicator (size {})", local.size());
    }
    let root = root as usize;
    let (view, me) = rt::with(|st| Ok((View::local(st, &local)?, dpm::my_identity(st)?)))?;
    let idents = view.allgather_vec(me.encode().as_bytes())?;
    let mut outcome = Vec::new();
    let mut their_root = None;
    if view.rank == root {
        let res = reach().and_then(|(mut side, key)| {
            let mut mine = format!("{root}");
            for id in &idents {
                mine.push('\n');
                mine.push_str(&String::from_utf8_lossy(id));
            }
            side.send(mine.as_bytes())?;
            Ok((key, side.recv()?))
        });
        outcome = match &res {
            Ok((key, theirs)) => [&[1u8][..], key, theirs].concat(),
            Err(e) => [&[0u8][..], &e.class.to_le_bytes()].concat(),
        };
        // Tell the group before reporting the root's error, so that nobody
        // waits forever.
        outcome = view.bcast_vec(outcome, root)?;
        res?;
    } else {
        outcome = view.bcast_vec(outcome, root)?;
    }
    if outcome.len() < 33 || outcome[0] != 1 {
        // (The root's error class, MPI_ERR_SPAWN for a failed spawn.)
        let class = outcome.get(1..5).map_or(MPI_ERR_PORT, |b| c_int::from_le_bytes(b.try_into().expect("4 bytes")));
        bail!(class, "the root could not reach the other group");
    }
    let key: [u8; 32] = outcome[1..33].try_into().expect("32 bytes");
    let text = String::from_utf8_lossy(&outcome[33..]).into_owned();
    let mut lines = text.lines();
    let their_root_rank: usize = lines
        .next()
        .and_then(|l| l.parse().ok())
        .ok_or_else(|| MpiError::new(MPI_ERR_INTERN, "malformed group from the other side"))?;
    let ids = lines.map(Ident::decode).collect::<MpiResult<Vec<_>>>()?;
    if their_root_rank >= ids.len() {
        bail!(MPI_ERR_INTERN, "malformed group from the other side");
    }
    let (remote, peer) = rt::with(|st| {
        let remote: Vec<usize> = ids.iter().map(|id| dpm::peer_of(st, id, &key)).collect();
        if view.rank == root {
            their_root = Some(remote[their_root_rank]);
        }
        let peer = match their_root {
            Some(them) => {
                let (group, rank) =
                    if accepting { (vec![st.world_rank, them], 0) } else { (vec![them, st.world_rank], 1) };
                Some((View::new(st, BRIDGE_CTX, rank, Arc::new(group))?, 1 - rank))
            }
            None => None,
        };
        Ok((remote, peer))
    })?;
    let a = Agreement { local: view, leader: root, peer, inter: true };
    let ctx = agree_ctx(ctx_key(&local, KEY_DPM), CTX_SPAN_INTER, &a, true)?;
    let mut c = crate::rt::comm::Comm::intra(ctx, Arc::new(remote), local.rank, local.errhandler);
    c.local = Some(local.group.clone());
    let mut h = MPI_COMM_NULL;
    // SAFETY: `h` is a local variable.
    unsafe { publish(c, &mut h)? };
    Ok(h)
}

/// The port name argument, read only at the root (it is not significant
/// elsewhere).
unsafe fn port_at_root(port_name: *const c_char, root: c_int, comm: MPI_Comm) -> MpiResult<String> {
    let me = rt::with(|st| Ok(st.comms.get(comm)?.rank))?;
    if me == root {
        Ok(cstr(port_name, "port_name")?.into_owned())
    } else {
        Ok(String::new())
    }
}

/// `MPI_Comm_accept` (`accepting`) or `MPI_Comm_connect`.
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
    let name = port_at_root(port_name, root, comm)?;
    let h = meet(comm, root, accepting, || if accepting { dpm::accept(&name, None) } else { dpm::connect(&name) })?;
    put(newcomm, h, "newcomm")
}

pub unsafe fn MPI_Comm_accept(
    port_name: *const c_char,
    _info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    ret(comm, "MPI_Comm_accept", accept_or_connect(port_name, root, comm, newcomm, true))
}

pub unsafe fn MPI_Comm_connect(
    port_name: *const c_char,
    _info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> c_int {
    ret(comm, "MPI_Comm_connect", accept_or_connect(port_name, root, comm, newcomm, false))
}

/// Waits until the operations on `comm` have completed (a receive never
/// matched waits forever, as the standard's "waits for all pending
/// communication" implies) and this process's records are all written,
/// meets every process of `comm` (both groups), then frees it.
pub unsafe fn MPI_Comm_disconnect(comm: *mut MPI_Comm) -> c_int {
    let c = if comm.is_null() { MPI_COMM_NULL } else { *comm };
    let r = (|| {
        if comm.is_null() {
            bail!(MPI_ERR_ARG, "comm is a NULL pointer");
        }
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
        let h = meet(MPI_COMM_SELF, 0, accepting, move || Ok((side, key)))?;
        put(intercomm, h, "intercomm")
    })();
    ret(MPI_COMM_SELF, "MPI_Comm_join", r)
}

/// How long the root of a spawn waits for the new job to connect.
const SPAWN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// A NULL-terminated C array of C strings (`MPI_ARGV_NULL`: none).
unsafe fn c_strings(mut p: *mut *mut c_char, what: &str) -> MpiResult<Vec<String>> {
    let mut v = Vec::new();
    while !p.is_null() && !(*p).is_null() {
        v.push(cstr(*p, what)?.into_owned());
        p = p.add(1);
    }
    Ok(v)
}

/// One program of a spawn, read at the root.
unsafe fn spawn_request(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: MPI_Info,
) -> MpiResult<SpawnRequest> {
    if maxprocs <= 0 {
        bail!(MPI_ERR_ARG, "maxprocs {maxprocs} is not positive");
    }
    let info = rt::with(|st| st.comms.infos.get_or_null(info))?;
    Ok(SpawnRequest {
        command: cstr(command, "command")?.into_owned(),
        args: c_strings(argv, "argv")?,
        nprocs: maxprocs as usize,
        info: info.into_iter().filter(|(k, _)| k == "wdir").collect(),
    })
}

/// The spawn of `MPI_Comm_spawn(_multiple)` (collective over `comm`; the
/// programs, `requests`, are read at the root only): the root opens a
/// port, asks the process manager for the job with the port's name as
/// its `PARENT_ROOT_PORT_NAME`, and accepts the new job's connection
/// (see `connect_parent`). Fills `errcodes` (unless NULL) with one code
/// per process started (at the root, per process asked for on failure).
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
    let at_root = rt::with(|st| Ok(st.comms.get(comm)?.rank))? == root;
    let mut asked = 0;
    let mut port = None;
    let reach = || {
        let reqs = requests()?;
        asked = reqs.iter().map(|r| r.nprocs).sum();
        let name = rt::with(dpm::open_port)?;
        port = Some(name.clone());
        let started = rt::with(|st| {
            st.pmi
                .spawn(&reqs, &[("PARENT_ROOT_PORT_NAME", &name)])
                .map_err(|e| MpiError::new(MPI_ERR_SPAWN, e.to_string()))
        })?;
        if !started {
            bail!(MPI_ERR_SPAWN, "the process manager could not start the new processes");
        }
        dpm::accept(&name, Some(std::time::Instant::now() + SPAWN_TIMEOUT))
            .map_err(|e| MpiError::new(MPI_ERR_SPAWN, format!("the new processes did not connect: {}", e.msg)))
    };
    let res = meet(comm, root, true, reach);
    if let Some(name) = &port {
        let _ = rt::with(|st| dpm::close_port(st, name));
    }
    let n = match &res {
        Ok(h) => rt::with(|st| Ok(st.comms.get(*h)?.size()))? as usize,
        Err(_) if at_root => asked,
        Err(_) => 0,
    };
    if !errcodes.is_null() {
        let code = if res.is_ok() { MPI_SUCCESS } else { MPI_ERR_SPAWN };
        for i in 0..n {
            *errcodes.add(i) = code;
        }
    }
    put(intercomm, res?, "intercomm")
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
    let requests = || Ok(vec![spawn_request(command, argv, maxprocs, info)?]);
    ret(comm, "MPI_Comm_spawn", spawn(comm, root, requests, intercomm, array_of_errcodes))
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
    let requests = || {
        let cmds = c_array(array_of_commands as *const *mut c_char, count, "array_of_commands")?;
        let maxprocs = c_array(array_of_maxprocs, count, "array_of_maxprocs")?;
        let infos = c_array(array_of_info, count, "array_of_info")?;
        (0..count as usize)
            .map(|i| {
                let argv = if array_of_argv.is_null() { std::ptr::null_mut() } else { *array_of_argv.add(i) };
                spawn_request(cmds[i], argv, maxprocs[i], infos[i])
            })
            .collect()
    };
    ret(comm, "MPI_Comm_spawn_multiple", spawn(comm, root, requests, intercomm, array_of_errcodes))
}

/// In a process started by a spawn: meets the parent job (collective over
/// the new job's world, right after `MPI_Init`). The port comes from our
/// `mpirun` in `MPICORE_PARENT_PORT`, or from the key-value space under
/// launchers that put it there (`PMI_SPAWNED`).
pub(crate) fn connect_parent() -> MpiResult<()> {
    let port = match std::env::var("MPICORE_PARENT_PORT") {
        Ok(p) if !p.is_empty() => p,
        _ if std::env::var("PMI_SPAWNED").is_ok_and(|v| v == "1") => {
            rt::with(|st| st.pmi.get("PARENT_ROOT_PORT_NAME").map_err(|e| MpiError::new(MPI_ERR_SPAWN, e.to_string())))?
        }
        _ => return Ok(()),
    };
    let h = meet(MPI_COMM_WORLD, 0, false, || dpm::connect(&port))?;
    rt::with(|st| {
        st.dpm.parent = Some(h);
        Ok(())
    })
}

/// The intercommunicator to the job that spawned this one, if any (and
/// not yet disconnected).
pub unsafe fn MPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    let r = rt::with(|st| put(parent, st.dpm.parent.unwrap_or(MPI_COMM_NULL), "parent"));
    ret(MPI_COMM_WORLD, "MPI_Comm_get_parent", r)
}

/// `MPI_Publish_name` / `MPI_Unpublish_name`: `f` on the two names.
unsafe fn with_names(
    name: &str,
    service_name: *const c_char,
    port_name: *const c_char,
    f: fn(&str, &str) -> MpiResult<()>,
) -> c_int {
    let r = cstr(service_name, "service_name")
        .and_then(|s| Ok((s, cstr(port_name, "port_name")?)))
        .and_then(|(s, p)| rt::with(|_| f(&s, &p)));
    ret(MPI_COMM_WORLD, name, r)
}

pub unsafe fn MPI_Publish_name(service_name: *const c_char, _info: MPI_Info, port_name: *const c_char) -> c_int {
    with_names("MPI_Publish_name", service_name, port_name, dpm::publish_name)
}

pub unsafe fn MPI_Unpublish_name(service_name: *const c_char, _info: MPI_Info, port_name: *const c_char) -> c_int {
    with_names("MPI_Unpublish_name", service_name, port_name, dpm::unpublish_name)
}

pub unsafe fn MPI_Lookup_name(service_name: *const c_char, _info: MPI_Info, port_name: *mut c_char) -> c_int {
    let r = (|| {
        let s = cstr(service_name, "service_name")?;
        if port_name.is_null() {
            bail!(MPI_ERR_ARG, "port_name is a NULL pointer");
        }
        let p = rt::with(|_| dpm::lookup_name(&s))?;
        put_str(port_name, MPI_MAX_PORT_NAME as usize, &p);
        Ok(())
    })();
    ret(MPI_COMM_WORLD, "MPI_Lookup_name", r)
}
