//! Partitioned point-to-point communication (MPI 4.0, `MPI_Psend_init` and
//! friends): argument checks; the protocol (matching at initialization, one
//! message per round once every partition is ready) is `rt::part`'s.
//! `MPI_Parrived` reports a partition arrived when that message has been
//! received.

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi_api::abi::*;

use super::p2p::check_tag;
use super::{c_array, ret, Out};
use crate::bail;
use crate::rt::datatype::check_count;
use crate::rt::error::MpiResult;
use crate::rt::p2p::{Kind, Persist, ReqTable, Request};
use crate::rt::{self, part, State};

#[allow(clippy::too_many_arguments)]
fn pinit(
    st: &mut State,
    send: bool,
    buf: *mut u8,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<MPI_Request> {
    let c = st.comms.get(comm)?;
    let size = c.size();
    if partitions < 1 {
        bail!(MPI_ERR_ARG, "partitions must be at least 1 (got {partitions})");
    }
    let count = check_count(count)?;
    let dt = st.types.get(datatype)?;
    check_tag(tag, false)?;
    if !(0..size).contains(&peer) && peer != MPI_PROC_NULL {
        bail!(
            MPI_ERR_RANK,
            "invalid {} rank {peer} in a communicator of size {size}",
            if send { "destination" } else { "source" }
        );
    }
    let partitions = partitions as usize;
    let mut req = Request::new(Kind::Null, comm);
    req.persist = Some(if send {
        let channel = part::init_send(st, peer, tag, comm)?;
        Persist::Psend { buf, partitions, count, dt, dest: peer, tag, comm, channel }
    } else {
        Persist::Precv { buf, partitions, count, dt, src: peer, tag, comm, channel: None }
    });
    req.active = false;
    req.done = true;
    let i = st.reqs.alloc(req);
    if !send {
        part::init_recv(st, i, peer, comm)?;
    }
    Ok(ReqTable::handle(i))
}

pub unsafe fn MPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    _info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: `request` is NULL or a writable handle (the caller's contract).
    let mut request = unsafe { Out::new(request, "request") };
    let r = rt::with(|st| {
        let h = pinit(st, true, buf as *mut u8, partitions, count, datatype, dest, tag, comm)?;
        request.put(h)
    });
    ret(comm, "MPI_Psend_init", r)
}

pub unsafe fn MPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    _info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: `request` is NULL or a writable handle (the caller's contract).
    let mut request = unsafe { Out::new(request, "request") };
    let r = rt::with(|st| {
        let h = pinit(st, false, buf as *mut u8, partitions, count, datatype, source, tag, comm)?;
        request.put(h)
    });
    ret(comm, "MPI_Precv_init", r)
}

/// Marks partitions of send `request` ready.
fn ready(st: &mut State, request: MPI_Request, parts: impl Iterator<Item = c_int>) -> MpiResult<()> {
    let i = st.reqs.index(request)?;
    part::ready(st, i, parts)
}

pub unsafe fn MPI_Pready(partition: c_int, request: MPI_Request) -> c_int {
    ret(MPI_COMM_WORLD, "MPI_Pready", rt::with(|st| ready(st, request, std::iter::once(partition))))
}

pub unsafe fn MPI_Pready_range(partition_low: c_int, partition_high: c_int, request: MPI_Request) -> c_int {
    ret(MPI_COMM_WORLD, "MPI_Pready_range", rt::with(|st| ready(st, request, partition_low..=partition_high)))
}

pub unsafe fn MPI_Pready_list(length: c_int, array_of_partitions: *const c_int, request: MPI_Request) -> c_int {
    let r = rt::with(|st| {
        if length < 0 || (length > 0 && array_of_partitions.is_null()) {
            bail!(MPI_ERR_ARG, "bad partition list");
        }
        // SAFETY: `array_of_partitions` holds `length` ints (the caller's
        // contract), and is not NULL when length > 0 (checked above).
        let list = unsafe { c_array(array_of_partitions, length, "array_of_partitions") }?;
        ready(st, request, list.iter().copied())
    });
    ret(MPI_COMM_WORLD, "MPI_Pready_list", r)
}

pub unsafe fn MPI_Parrived(request: MPI_Request, partition: c_int, flag: *mut c_int) -> c_int {
    // SAFETY: `flag` is NULL or a writable int (the caller's contract).
    let mut flag = unsafe { Out::new(flag, "flag") };
    let r = rt::with(|st| {
        let i = st.reqs.index(request)?;
        let Some(Persist::Precv { partitions, .. }) = st.reqs.get(i).persist.clone() else {
            bail!(MPI_ERR_REQUEST, "MPI_Parrived needs a partitioned receive request");
        };
        if partition < 0 || partition as usize >= partitions {
            bail!(MPI_ERR_ARG, "partition {partition} out of range 0..{partitions}");
        }
        if !st.reqs.get(i).done {
            st.progress();
        }
        flag.put(st.reqs.get(i).done as c_int)
    });
    ret(MPI_COMM_WORLD, "MPI_Parrived", r)
}
