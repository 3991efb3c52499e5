//! Chapter 6: communicators — accessors, constructors (dup, split, create),
//! destruction, comparison, names and info hints.

use std::os::raw::{c_char, c_int};
use std::sync::Arc;

use mpi_api::abi::*;

use super::{put, put_str, ret, Out};
use crate::bail;
use crate::caching::{copy_attrs, delete_attrs};
use crate::rt::agree::View;
use crate::rt::attr::{Attrs, ObjKind};
use crate::rt::comm::{ctx_key, Comm, CTX_SPAN_INTER, CTX_SPAN_INTRA};
// Chapters that still name these through `super::comm` (files, windows).
use crate::rt::ctxid::{agree_ctx, idup, intra_of, split, Agreement, BAD_COLOR, KEY_CREATE_GROUP};
pub(crate) use crate::rt::ctxid::{comm_of, new_context, new_context_or_fail, quiet};
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::group;
use crate::rt::info::Pairs;
use crate::rt::p2p::ReqTable;
use crate::rt::{self};

pub unsafe fn MPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> c_int {
    // SAFETY: `rank` is NULL or a writable int (the caller's contract).
    let mut rank = unsafe { Out::new(rank, "rank") };
    let r = rt::with(|st| {
        let c = st.comms.get(comm)?;
        rank.put(c.rank)
    });
    ret(comm, "MPI_Comm_rank", r)
}

pub unsafe fn MPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> c_int {
    // SAFETY: `size` is NULL or a writable int (the caller's contract).
    let mut size = unsafe { Out::new(size, "size") };
    let r = rt::with(|st| {
        let c = st.comms.get(comm)?;
        size.put(c.local_size())
    });
    ret(comm, "MPI_Comm_size", r)
}

pub unsafe fn MPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    // SAFETY: `group` is NULL or a writable handle (the caller's contract).
    let mut group = unsafe { Out::new(group, "group") };
    let r = rt::with(|st| {
        let m = st.comms.get(comm)?.local_group().clone();
        if group.is_null() {
            bail!(MPI_ERR_ARG, "group is a NULL pointer");
        }
        let h = st.comms.groups.insert(m);
        group.put(h)
    });
    ret(comm, "MPI_Comm_group", r)
}

pub unsafe fn MPI_Comm_set_name(comm: MPI_Comm, comm_name: *const c_char) -> c_int {
    let r = rt::with(|st| {
        if comm_name.is_null() {
            bail!(MPI_ERR_ARG, "comm_name is a NULL pointer");
        }
        // SAFETY: not NULL, so a NUL-terminated string (the caller's contract).
        let name = unsafe { std::ffi::CStr::from_ptr(comm_name) }.to_string_lossy().into_owned();
        let name: String = name.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
        st.comms.get_mut(comm)?.name = name;
        Ok(())
    });
    ret(comm, "MPI_Comm_set_name", r)
}

pub unsafe fn MPI_Comm_get_name(comm: MPI_Comm, comm_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    // SAFETY: `resultlen` is NULL or a writable int (the caller's contract).
    let mut resultlen = unsafe { Out::new(resultlen, "resultlen") };
    let r = rt::with(|st| {
        if comm_name.is_null() {
            bail!(MPI_ERR_ARG, "comm_name is a NULL pointer");
        }
        // MPI 4.1: the null handle's name is its constant's.
        let name = if comm == MPI_COMM_NULL { "MPI_COMM_NULL" } else { st.comms.get(comm)?.name.as_str() };
        // SAFETY: not NULL, so `comm_name` holds MPI_MAX_OBJECT_NAME chars
        // (the caller's contract).
        let n = unsafe { put_str(comm_name, MPI_MAX_OBJECT_NAME as usize, name) };
        resultlen.put(n)
    });
    ret(comm, "MPI_Comm_get_name", r)
}

/// Inserts a new communicator (with the hidden local communicator of an
/// intercommunicator) and writes its handle.
///
/// # Safety
/// `newcomm` is NULL or a writable handle.
pub(crate) unsafe fn publish(c: Comm, newcomm: *mut MPI_Comm) -> MpiResult<()> {
    let h = rt::with(|st| Ok(st.comms.publish(c)))?;
    // SAFETY: `newcomm` is NULL or a writable handle (the contract).
    unsafe { put(newcomm, h, "newcomm") }
}

/// `MPI_Comm_dup(_with_info)`.
///
/// # Safety
/// `newcomm` is NULL or a writable handle.
unsafe fn dup_common(comm: MPI_Comm, info: Option<MPI_Info>, newcomm: *mut MPI_Comm) -> MpiResult<()> {
    if newcomm.is_null() {
        bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
    }
    quiet(comm)?;
    let parent = comm_of(comm)?;
    let hints = match info {
        Some(i) => crate::rt::info::hints(i)?,
        None => parent.hints.clone(),
    };
    let span = if parent.is_inter() { CTX_SPAN_INTER } else { CTX_SPAN_INTRA };
    let ctx = new_context(comm, span, false)?;
    let mut attrs = Attrs::new();
    let copied = copy_attrs(ObjKind::Comm, comm, &parent.attrs, &mut attrs);
    // SAFETY: not NULL (checked above), so a writable handle (the contract).
    unsafe { publish(Comm { ctx, attrs, hints, name: String::new(), ..parent }, newcomm)? };
    if let Err(e) = copied {
        // A copy callback failed: so does the call, and the duplicate goes
        // (the attributes copied before the failure through their delete
        // callbacks, on it). The other processes keep theirs: the copy is
        // local, after the collective part.
        // SAFETY: written just above (the contract).
        let h = unsafe { newcomm.read() };
        let freed = free_comm(h);
        // SAFETY: as above.
        unsafe { newcomm.write(MPI_COMM_NULL) };
        freed?;
        return Err(e);
    }
    Ok(())
}

pub unsafe fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    // SAFETY: `newcomm` is NULL or a writable handle (the caller's contract).
    ret(comm, "MPI_Comm_dup", unsafe { dup_common(comm, None, newcomm) })
}

pub unsafe fn MPI_Comm_dup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) -> c_int {
    // SAFETY: `newcomm` is NULL or a writable handle (the caller's contract).
    ret(comm, "MPI_Comm_dup_with_info", unsafe { dup_common(comm, Some(info), newcomm) })
}

/// A raw pointer handed to an idup's thread.
struct SendPtr(*mut MPI_Comm);
// SAFETY: the program keeps `newcomm` valid until the idup's request
// completes (the standard's rule for nonblocking calls' output arguments);
// only the idup's thread writes through it, before completing the request.
unsafe impl Send for SendPtr {}

/// `MPI_Comm_idup(_with_info)`: the copy callbacks run now, in the calling
/// thread; the rest is `rt::ctxid::idup`'s.
///
/// # Safety
/// `request` is NULL or a writable handle; `newcomm` is NULL or a handle
/// that stays writable until the request completes.
unsafe fn idup_common(
    comm: MPI_Comm,
    info: Option<MPI_Info>,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> MpiResult<()> {
    if request.is_null() {
        bail!(MPI_ERR_ARG, "request is a NULL pointer");
    }
    if newcomm.is_null() {
        bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
    }
    let parent = comm_of(comm)?;
    let hints = match info {
        Some(i) => crate::rt::info::hints(i)?,
        None => parent.hints.clone(),
    };
    let mut attrs = Attrs::new();
    let copied = copy_attrs(ObjKind::Comm, comm, &parent.attrs, &mut attrs);
    // After a failing copy callback the idup still runs (the other
    // processes' idups need this one), but its communicator goes as soon
    // as it exists, the copies made so far through their delete callbacks,
    // and the program gets MPI_COMM_NULL (and the callback's error now).
    let failed = copied.is_err();
    let out = SendPtr(newcomm);
    let deliver = move |h: MPI_Comm| {
        let out = out;
        let h = if failed {
            let _ = free_comm(h);
            MPI_COMM_NULL
        } else {
            h
        };
        // SAFETY: `out.0` is not NULL and stays writable until the request
        // completes, after this (the contract; see `SendPtr`).
        unsafe { out.0.write(h) }
    };
    let req = idup(comm, Comm { attrs, hints, name: String::new(), ..parent }, deliver)?;
    // SAFETY: not NULL (checked above), so a writable handle (the contract).
    unsafe { put(request, ReqTable::handle(req), "request")? };
    copied
}

pub unsafe fn MPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> c_int {
    // SAFETY: `request` is NULL or a writable handle, `newcomm` NULL or a
    // handle writable until the request completes (the caller's contract).
    ret(comm, "MPI_Comm_idup", unsafe { idup_common(comm, None, newcomm, request) })
}

pub unsafe fn MPI_Comm_idup_with_info(
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    // SAFETY: `request` is NULL or a writable handle, `newcomm` NULL or a
    // handle writable until the request completes (the caller's contract).
    ret(comm, "MPI_Comm_idup_with_info", unsafe { idup_common(comm, Some(info), newcomm, request) })
}

pub unsafe fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    // SAFETY: `comm` is NULL or the program's handle, readable and writable
    // (the caller's contract).
    let comm = unsafe { comm.as_mut() };
    let c = comm.as_deref().map_or(MPI_COMM_NULL, |&c| c);
    let r = (|| {
        let Some(comm) = comm else {
            bail!(MPI_ERR_ARG, "comm is a NULL pointer");
        };
        free_comm(c)?;
        *comm = MPI_COMM_NULL;
        Ok(())
    })();
    ret(c, "MPI_Comm_free", r)
}

/// Frees communicator `c` (its attributes deleted first).
pub(crate) fn free_comm(c: MPI_Comm) -> MpiResult<()> {
    if c == MPI_COMM_WORLD || c == MPI_COMM_SELF {
        bail!(MPI_ERR_COMM, "predefined communicators cannot be freed");
    }
    let attrs = rt::with(|st| Ok(st.comms.get(c)?.attrs.clone()))?;
    delete_attrs(ObjKind::Comm, c, attrs)?;
    rt::with(|st| {
        let gone = st.comms.remove(c)?;
        if gone.is_inter() {
            st.comms.remove(gone.local_comm)?;
        }
        if st.dpm.parent == Some(c) {
            st.dpm.parent = None;
        }
        Ok(())
    })
}

/// A new intracommunicator of the processes of `members` (world ranks, in
/// rank order) with context `ctx`, inheriting `parent`'s error handler;
/// `MPI_COMM_NULL` if this process is not a member.
///
/// # Safety
/// `newcomm` is NULL or a writable handle.
unsafe fn make_intra(parent: &Comm, ctx: u32, members: Vec<usize>, newcomm: *mut MPI_Comm) -> MpiResult<()> {
    // SAFETY: the contract.
    unsafe { make_intra_with(parent, ctx, members, Vec::new(), newcomm) }
}

/// [`make_intra`] with info hints on the new communicator.
///
/// # Safety
/// `newcomm` is NULL or a writable handle.
unsafe fn make_intra_with(
    parent: &Comm,
    ctx: u32,
    members: Vec<usize>,
    hints: Pairs,
    newcomm: *mut MPI_Comm,
) -> MpiResult<()> {
    let me = rt::with(|st| Ok(st.world_rank))?;
    match group::rank_of(&members, me) {
        // SAFETY: `newcomm` is NULL or a writable handle (the contract).
        None => unsafe { put(newcomm, MPI_COMM_NULL, "newcomm") },
        Some(rank) => {
            let mut c = Comm::intra(ctx, Arc::new(members), rank as c_int, parent.errhandler);
            c.hints = hints;
            // SAFETY: `newcomm` is NULL or a writable handle (the contract).
            unsafe { publish(c, newcomm) }
        }
    }
}

pub unsafe fn MPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) -> c_int {
    let r = (|| {
        if newcomm.is_null() {
            bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
        }
        quiet(comm)?;
        let parent = comm_of(comm)?;
        if parent.is_inter() {
            // SAFETY: `newcomm` is a writable handle (checked above; the
            // caller's contract).
            return unsafe { super::inter::inter_split(comm, &parent, color, key, newcomm) };
        }
        let (parent, ctx, members) = split(comm, color, key)?;
        // SAFETY: as above.
        unsafe { make_intra(&parent, ctx, members, newcomm) }
    })();
    ret(comm, "MPI_Comm_split", r)
}

pub unsafe fn MPI_Comm_split_type(
    comm: MPI_Comm,
    split_type: c_int,
    key: c_int,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let r = (|| {
        if newcomm.is_null() {
            bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
        }
        quiet(comm)?;
        let hints = crate::rt::info::hints(info)?;
        // None: an invalid type, which still takes part in the exchanges
        // (see `check_colors`).
        let shared = match split_type {
            MPI_UNDEFINED => Some(false),
            MPI_COMM_TYPE_SHARED => Some(true),
            // Guided by a resource type: shared memory is the only one known.
            MPI_COMM_TYPE_HW_GUIDED => {
                Some(crate::rt::info::get(&hints, "mpi_hw_resource_type") == Some("mpi_shared_memory"))
            }
            // A strict subset of a shared-memory domain: there is none finer.
            MPI_COMM_TYPE_HW_UNGUIDED => Some(false),
            _ => None,
        };
        // Color: the lowest rank in `comm` on the same host.
        let (parent, host) = rt::with(|st| Ok((st.comms.get(comm)?.clone(), st.processor_name.clone())))?;
        if parent.is_inter() {
            // MPI 4.0: local and remote processes of one shared-memory domain
            // (host) form an intercommunicator. The color must mean the same
            // in both groups, so it is derived from the host name itself (a
            // stable hash, made non-negative).
            let color = match shared {
                Some(true) => (crate::rt::session::stringtag_hash(&host) & 0x7fff_ffff) as c_int,
                Some(false) => MPI_UNDEFINED,
                None => bail!(MPI_ERR_ARG, "invalid split_type {split_type}"),
            };
            // SAFETY: `newcomm` is a writable handle (checked above; the
            // caller's contract).
            return unsafe { super::inter::inter_split(comm, &parent, color, key, newcomm) };
        }
        let view = rt::with(|st| View::local(st, &parent))?;
        let hosts = view.allgather_vec(host.as_bytes())?;
        let color = match shared {
            Some(true) => hosts.iter().position(|h| h == host.as_bytes()).unwrap() as c_int,
            Some(false) => MPI_UNDEFINED,
            None => BAD_COLOR,
        };
        let (parent, ctx, members) = split(comm, color, key).map_err(|e| match shared {
            None => MpiError::new(MPI_ERR_ARG, format!("invalid split_type {split_type}")),
            Some(_) => e,
        })?;
        // The info hints apply to the new communicator.
        // SAFETY: `newcomm` is a writable handle (checked above; the
        // caller's contract).
        unsafe { make_intra_with(&parent, ctx, members, hints, newcomm) }
    })();
    ret(comm, "MPI_Comm_split_type", r)
}

pub unsafe fn MPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) -> c_int {
    let r = (|| {
        if newcomm.is_null() {
            bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
        }
        quiet(comm)?;
        let parent = comm_of(comm)?;
        let me = rt::with(|st| Ok(st.world_rank))?;
        // A bad group here still takes part, so that the call fails in
        // every process instead of leaving the others waiting.
        let members = rt::with(|st| st.comms.groups.get(group)).and_then(|m| {
            if let Some(w) = m.iter().find(|w| !parent.local_group().contains(w)) {
                bail!(
                    MPI_ERR_GROUP,
                    "the group is not a subgroup of the communicator's (local) group (world rank {w} is not a member)"
                );
            }
            Ok(m)
        });
        if parent.is_inter() {
            let (color, key) = match &members {
                Err(_) => (BAD_COLOR, 0),
                Ok(m) => match group::rank_of(m, me) {
                    Some(r) => (0, r as c_int),
                    None => (MPI_UNDEFINED, 0),
                },
            };
            // SAFETY: `newcomm` is a writable handle (checked above; the
            // caller's contract).
            let r = unsafe { super::inter::inter_split(comm, &parent, color, key, newcomm) };
            members?;
            return r;
        }
        let ctx = new_context_or_fail(comm, CTX_SPAN_INTRA, false, members.as_ref().map(|_| ()).map_err(Clone::clone))?;
        // SAFETY: as above.
        unsafe { make_intra(&parent, ctx, members?.to_vec(), newcomm) }
    })();
    ret(comm, "MPI_Comm_create", r)
}

pub unsafe fn MPI_Comm_create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm) -> c_int {
    let r = (|| {
        if newcomm.is_null() {
            bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
        }
        if tag < 0 {
            bail!(MPI_ERR_TAG, "invalid tag {tag} (MPI_Comm_create_group needs a tag >= 0)");
        }
        // No wait for this process's pending MPI_Comm_idups of `comm`
        // (`quiet`): the call is collective over the group only, not over
        // `comm`, so it is not ordered with them, and another member may
        // start its idup only after this call returns (MPICH suite:
        // comm/comm_create_group_idup). Its messages carry tags of its own.
        let parent = intra_of(comm, "MPI_Comm_create_group")?;
        let (members, me) = rt::with(|st| Ok((st.comms.groups.get(group)?, st.world_rank)))?;
        // The members' ranks in the parent: the sources of the agreement's
        // messages (indices in the group would be ambiguous among
        // successive groups with the same tag; see View).
        let labels = match members.iter().map(|&w| group::rank_of(&parent.group, w).ok_or(w)).collect() {
            Ok(l) => Arc::new(l),
            Err(w) => bail!(
                MPI_ERR_GROUP,
                "the group is not a subgroup of the communicator's group (world rank {w} is not a member)"
            ),
        };
        let Some(rank) = group::rank_of(&members, me) else {
            // SAFETY: `newcomm` is a writable handle (checked above; the
            // caller's contract).
            return unsafe { put(newcomm, MPI_COMM_NULL, "newcomm") };
        };
        // Only the members take part: agree among them on the parent's
        // collective context, with tags derived from the user's tag.
        let local = rt::with(|st| View::new(st, parent.coll_ctx(), rank, members.clone()))?
            .with_user_tag(tag)
            .with_labels(labels);
        let a = Agreement { local, leader: 0, peer: None, inter: false };
        let ctx = agree_ctx(ctx_key(&parent, KEY_CREATE_GROUP | tag as u64), CTX_SPAN_INTRA, &a, false)?;
        // SAFETY: as above.
        unsafe { publish(Comm::intra(ctx, members, rank as c_int, parent.errhandler), newcomm) }
    })();
    ret(comm, "MPI_Comm_create_group", r)
}

pub unsafe fn MPI_Comm_compare(comm1: MPI_Comm, comm2: MPI_Comm, result: *mut c_int) -> c_int {
    // SAFETY: `result` is NULL or a writable int (the caller's contract).
    let mut result = unsafe { Out::new(result, "result") };
    let r = rt::with(|st| {
        let a = st.comms.get(comm1)?;
        let b = st.comms.get(comm2)?;
        let v = if comm1 == comm2 {
            MPI_IDENT
        } else if a.is_inter() != b.is_inter() {
            MPI_UNEQUAL
        } else {
            let l = group::compare(a.local_group(), b.local_group());
            let g = if a.is_inter() { group::compare(&a.group, &b.group) } else { l };
            match l.max(g) {
                MPI_IDENT => MPI_CONGRUENT,
                v => v,
            }
        };
        result.put(v)
    });
    ret(comm1, "MPI_Comm_compare", r)
}

pub unsafe fn MPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) -> c_int {
    let r = rt::with(|st| {
        let pairs = crate::rt::info::hints(info)?;
        let c = st.comms.get_mut(comm)?;
        for (k, v) in pairs {
            crate::rt::info::set(&mut c.hints, &k, &v);
        }
        Ok(())
    });
    ret(comm, "MPI_Comm_set_info", r)
}

pub unsafe fn MPI_Comm_get_info(comm: MPI_Comm, info_used: *mut MPI_Info) -> c_int {
    // SAFETY: `info_used` is NULL or a writable handle (the caller's contract).
    let mut info_used = unsafe { Out::new(info_used, "info_used") };
    let r = rt::with(|st| {
        let hints = crate::rt::comm::info_used(&st.comms.get(comm)?.hints);
        if info_used.is_null() {
            bail!(MPI_ERR_ARG, "info_used is a NULL pointer");
        }
        let h = crate::rt::info::insert(hints);
        info_used.put(h)
    });
    ret(comm, "MPI_Comm_get_info", r)
}
