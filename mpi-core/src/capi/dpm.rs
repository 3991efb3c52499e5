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

use super::agree::View;
use super::comm::{agree_ctx, agreement_of, free_comm, intra_of, publish, quiet, Agreement, KEY_DPM};
use super::info::cstr;
use super::{put, put_str, ret};
use crate::bail;
use crate::rt::comm::{ctx_key, CTX_SPAN_INTER};
use crate::rt::dpm::{self, Ident, Side, BRIDGE_CTX};
use crate::rt::error::{MpiError, MpiResult};
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
pub(crate) fn meet(comm: MPI_Comm, root: c_int, accepting: bool, reach: impl FnOnce() -> MpiResult<(Side, [u8; 32])>) -> MpiResult<MPI_Comm> {
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
    let their_root_rank: usize =
        lines.next().and_then(|l| l.parse().ok()).ok_or_else(|| MpiError::new(MPI_ERR_INTERN, "malformed group from the other side"))?;
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
                let (group, rank) = if accepting { (vec![st.world_rank, them], 0) } else { (vec![them, st.world_rank], 1) };
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
unsafe fn accept_or_connect(port_name: *const c_char, root: c_int, comm: MPI_Comm, newcomm: *mut MPI_Comm, accepting: bool) -> MpiResult<()> {
    if newcomm.is_null() {
        bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
    }
    let name = port_at_root(port_name, root, comm)?;
    let h = meet(comm, root, accepting, || if accepting { dpm::accept(&name, None) } else { dpm::connect(&name) })?;
    put(newcomm, h, "newcomm")
}

pub unsafe fn MPI_Comm_accept(port_name: *const c_char, _info: MPI_Info, root: c_int, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    ret(comm, "MPI_Comm_accept", accept_or_connect(port_name, root, comm, newcomm, true))
}

pub unsafe fn MPI_Comm_connect(port_name: *const c_char, _info: MPI_Info, root: c_int, comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    ret(comm, "MPI_Comm_connect", accept_or_connect(port_name, root, comm, newcomm, false))
}

/// Waits until this process's records are all written, meets every
/// process of `comm` (both groups), then frees it. Receives the user
/// posted and never matched are the user's error (MPI 3.1 10.5.4).
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
        rt::wait_until(|st| !st.engine.has_pending_out())?;
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

/// The intercommunicator to the job that spawned this one, if any (and
/// not yet disconnected).
pub unsafe fn MPI_Comm_get_parent(parent: *mut MPI_Comm) -> c_int {
    let r = rt::with(|st| put(parent, st.dpm.parent.unwrap_or(MPI_COMM_NULL), "parent"));
    ret(MPI_COMM_WORLD, "MPI_Comm_get_parent", r)
}

/// `MPI_Publish_name` / `MPI_Unpublish_name`: `f` on the two names.
unsafe fn with_names(name: &str, service_name: *const c_char, port_name: *const c_char, f: fn(&str, &str) -> MpiResult<()>) -> c_int {
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
