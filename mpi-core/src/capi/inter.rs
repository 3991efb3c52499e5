//! Chapter 6.6: intercommunicators — creation from two intracommunicators
//! joined by their leaders, merging, and the queries (the protocols are
//! `rt::inter`'s).

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::comm::publish;
use super::{put, ret, Out};
use crate::bail;
use crate::rt::comm::Comm;
use crate::rt::error::MpiResult;
use crate::rt::inter::{self, inter_of};
use crate::rt::{self};

pub unsafe fn MPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) -> c_int {
    // SAFETY: `flag` is NULL or a writable int (the caller's contract).
    let mut flag = unsafe { Out::new(flag, "flag") };
    let r = rt::with(|st| {
        let inter = st.comms.get(comm)?.is_inter();
        flag.put(inter as c_int)
    });
    ret(comm, "MPI_Comm_test_inter", r)
}

pub unsafe fn MPI_Comm_remote_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    // SAFETY: `size` is NULL or a writable int (the caller's contract).
    let mut size = unsafe { Out::new(size, "size") };
    let r = inter_of(comm, "MPI_Comm_remote_size").and_then(|c| size.put(c.size()));
    ret(comm, "MPI_Comm_remote_size", r)
}

pub unsafe fn MPI_Comm_remote_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    // SAFETY: `group` is NULL or a writable handle (the caller's contract).
    let mut group = unsafe { Out::new(group, "group") };
    let r = inter_of(comm, "MPI_Comm_remote_group").and_then(|c| {
        if group.is_null() {
            bail!(MPI_ERR_ARG, "group is a NULL pointer");
        }
        let h = rt::with(|st| Ok(st.comms.groups.insert(c.group.clone())))?;
        group.put(h)
    });
    ret(comm, "MPI_Comm_remote_group", r)
}

pub unsafe fn MPI_Intercomm_create(
    local_comm: MPI_Comm,
    local_leader: c_int,
    peer_comm: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    let r = (|| {
        if newintercomm.is_null() {
            bail!(MPI_ERR_ARG, "newintercomm is a NULL pointer");
        }
        let c = inter::create(local_comm, local_leader, peer_comm, remote_leader, tag)?;
        // SAFETY: `newintercomm` is a writable handle (checked above; the
        // caller's contract).
        unsafe { publish(c, newintercomm) }
    })();
    ret(local_comm, "MPI_Intercomm_create", r)
}

pub unsafe fn MPI_Intercomm_merge(intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm) -> c_int {
    let r = (|| {
        if newintracomm.is_null() {
            bail!(MPI_ERR_ARG, "newintracomm is a NULL pointer");
        }
        let c = inter::merge(intercomm, high != 0)?;
        // SAFETY: `newintracomm` is a writable handle (checked above; the
        // caller's contract).
        unsafe { publish(c, newintracomm) }
    })();
    ret(intercomm, "MPI_Intercomm_merge", r)
}

/// `MPI_Comm_split` of intercommunicator `comm` (`c`; see
/// `rt::inter::split`).
///
/// # Safety
/// `newcomm` is NULL or a writable handle.
pub(crate) unsafe fn inter_split(
    comm: MPI_Comm,
    c: &Comm,
    color: c_int,
    key: c_int,
    newcomm: *mut MPI_Comm,
) -> MpiResult<()> {
    match inter::split(comm, c, color, key)? {
        // SAFETY: `newcomm` is NULL or a writable handle (the contract).
        Some(n) => unsafe { publish(n, newcomm) },
        // SAFETY: as above.
        None => unsafe { put(newcomm, MPI_COMM_NULL, "newcomm") },
    }
}
