//! Chapter 6: communicators — accessors, constructors (dup, split, create),
//! destruction, comparison, names and info hints.

use std::os::raw::{c_char, c_int};
use std::sync::Arc;

use mpi_api::abi::*;

use super::agree::{bytes_to_ints, ints_to_bytes, View, TAG_EXCHANGE};
use super::attr::{copy_attrs, delete_attrs};
use super::{put, put_str, ret};
use crate::bail;
use crate::rt::attr::ObjKind;
use crate::rt::comm::{
    combine_offers, ctx_key, failed_elsewhere, Comm, CtxKey, CTX_BUSY, CTX_FAILED, CTX_SPAN_INTER, CTX_SPAN_INTRA,
};
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::group;
use crate::rt::info::Pairs;
use crate::rt::p2p::{Kind, ReqTable, Request};
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
        put(size, c.local_size(), "size")
    });
    ret(comm, "MPI_Comm_size", r)
}

pub unsafe fn MPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    let r = rt::with(|st| {
        let m = st.comms.get(comm)?.local_group().clone();
        if group.is_null() {
            bail!(MPI_ERR_ARG, "group is a NULL pointer");
        }
        let h = st.comms.groups.insert(m);
        put(group, h, "group")
    });
    ret(comm, "MPI_Comm_group", r)
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

/// A copy of communicator `comm`.
pub(crate) fn comm_of(comm: MPI_Comm) -> MpiResult<Comm> {
    rt::with(|st| st.comms.get(comm).cloned())
}

pub(crate) fn intra_of(comm: MPI_Comm, what: &str) -> MpiResult<Comm> {
    let c = comm_of(comm)?;
    if c.is_inter() {
        bail!(MPI_ERR_COMM, "{what} needs an intracommunicator, and this is an intercommunicator");
    }
    Ok(c)
}

/// The processes of one context-id agreement: this process's group and,
/// for an intercommunicator, the link between the two groups' leaders.
pub(crate) struct Agreement {
    pub local: View,
    /// The rank in `local` that talks to the other group.
    pub leader: usize,
    /// At the leader of an intercommunicator's group: the view on which it
    /// reaches the other leader, and that leader's rank in it.
    pub peer: Option<(View, usize)>,
    /// Whether there is another group (only the leader has `peer`).
    pub inter: bool,
}

impl Agreement {
    /// Combines every member's offer (see rt/comm.rs).
    pub(crate) fn round(&self, offer: u32) -> MpiResult<u32> {
        let l = &self.local;
        if !self.inter {
            return l.allreduce_u32(offer, combine_offers);
        }
        let mut m = if self.leader == 0 {
            l.reduce_u32(offer, combine_offers)?
        } else {
            l.allreduce_u32(offer, combine_offers)?
        };
        if l.rank == self.leader {
            let Some((pv, remote_leader)) = &self.peer else {
                bail!(MPI_ERR_INTERN, "the leader of an intercommunicator agreement has no link to the other group");
            };
            let theirs = pv.sendrecv_vec(&m.to_ne_bytes(), *remote_leader, TAG_EXCHANGE)?;
            if theirs.len() < 4 {
                bail!(MPI_ERR_INTERN, "short reply from the remote leader");
            }
            m = combine_offers(m, u32::from_ne_bytes(theirs[..4].try_into().unwrap()));
        }
        l.bcast_u32(m, self.leader)
    }
}

/// Agrees on a fresh context id with the processes of `a` and reserves
/// `span` ids from it, in rounds as rt/comm.rs explains. `ready` says every
/// member has already entered the operation (a full exchange preceded);
/// otherwise, in a process that may run agreements on several threads, a
/// first round only checks that all are there before this agreement claims
/// the token (a member held up elsewhere, perhaps waiting for what another
/// agreement of this process leads to, must not keep the token from it).
pub(crate) fn agree_ctx(key: CtxKey, span: u32, a: &Agreement, ready: bool) -> MpiResult<u32> {
    agree_ctx_or_fail(key, span, a, ready, Ok(()))
}

/// [`agree_ctx`] for a process whose own arguments may be wrong (`mine` is
/// their check): it then takes part in one round that fails the agreement
/// in every process, and returns its own error; the others return
/// [`failed_elsewhere`].
pub(crate) fn agree_ctx_or_fail(
    key: CtxKey,
    span: u32,
    a: &Agreement,
    ready: bool,
    mine: MpiResult<()>,
) -> MpiResult<u32> {
    if let Err(e) = mine {
        // Every member sees the flag in the round that pairs with this one.
        a.round(CTX_FAILED | CTX_BUSY)?;
        return Err(e);
    }
    // Idups run on threads of their own, whatever the thread level.
    let multi = rt::with(|st| Ok(st.thread_level == MPI_THREAD_MULTIPLE || st.comms.idups_running()))?;
    if multi && !ready {
        // Everybody offers busy: this only waits for all members. The
        // agreement is not registered yet, so it keeps no other agreement
        // of this process from the token meanwhile.
        if a.round(CTX_BUSY)? & CTX_FAILED != 0 {
            return Err(failed_elsewhere());
        }
    }
    rt::with(|st| {
        st.comms.agreements.register(key);
        Ok(())
    })?;
    let r = loop {
        let settled = rt::with(|st| st.comms.offer(key, span))
            .and_then(|o| a.round(o))
            .and_then(|m| rt::with(|st| st.comms.settle(key, m, span)));
        match settled {
            Ok(Some(ctx)) => break Ok(ctx),
            Ok(None) => std::thread::yield_now(),
            Err(e) => break Err(e),
        }
    };
    if r.is_err() {
        let _ = rt::with(|st| {
            st.comms.agreements.unregister(key);
            Ok(())
        });
    }
    r
}

/// Agrees on a fresh context id over all processes of `comm` (both groups
/// of an intercommunicator) and reserves `span` ids from it (collective).
/// `ready`: as for [`agree_ctx`].
pub(crate) fn new_context(comm: MPI_Comm, span: u32, ready: bool) -> MpiResult<u32> {
    new_context_or_fail(comm, span, ready, Ok(()))
}

/// [`new_context`] where this process's own arguments may be wrong
/// (`mine`): see [`agree_ctx_or_fail`].
pub(crate) fn new_context_or_fail(comm: MPI_Comm, span: u32, ready: bool, mine: MpiResult<()>) -> MpiResult<u32> {
    let (a, key) = rt::with(|st| agreement_of(st, comm))?;
    agree_ctx_or_fail(key, span, &a, ready, mine)
}

/// The agreement over all processes of `comm` and its key.
pub(crate) fn agreement_of(st: &mut rt::State, comm: MPI_Comm) -> MpiResult<(Agreement, CtxKey)> {
    let c = st.comms.get(comm)?.clone();
    let local = View::local(st, &c)?;
    let peer = if c.is_inter() && c.rank == 0 { Some((View::remote(st, &c)?, 0)) } else { None };
    Ok((Agreement { local, leader: 0, peer, inter: c.is_inter() }, ctx_key(&c, 0)))
}

/// Waits until the `MPI_Comm_idup`s of `comm` that this process started
/// have finished: a communicator constructor on `comm` comes after them
/// in every process, and must not mix its internal messages with theirs.
/// (Only constructors wait: they are collective, so every process has
/// started those idups too and they finish on their own threads.)
pub(crate) fn quiet(comm: MPI_Comm) -> MpiResult<()> {
    let Some(ctx) = rt::with(|st| Ok(st.comms.get(comm).ok().map(|c| c.ctx)))? else {
        return Ok(());
    };
    rt::wait_until(|st| !st.comms.idup_pending(ctx))
}

/// Inserts a new communicator (with the hidden local communicator of an
/// intercommunicator) and writes its handle.
pub(crate) unsafe fn publish(mut c: Comm, newcomm: *mut MPI_Comm) -> MpiResult<()> {
    rt::with(|st| {
        for &(k, _) in &c.attrs {
            st.comms.keyvals.hold(k);
        }
        if c.is_inter() {
            let mut l = Comm::intra(c.ctx + 2, c.local_group().clone(), c.rank, MPI_ERRORS_RETURN);
            l.name = "local group of an intercommunicator".into();
            c.local_comm = st.comms.insert(l);
        }
        let h = st.comms.insert(c);
        put(newcomm, h, "newcomm")
    })
}

unsafe fn dup_common(comm: MPI_Comm, info: Option<MPI_Info>, newcomm: *mut MPI_Comm) -> MpiResult<()> {
    if newcomm.is_null() {
        bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
    }
    quiet(comm)?;
    let parent = comm_of(comm)?;
    let hints = match info {
        Some(i) => rt::with(|st| st.comms.infos.get_or_null(i))?,
        None => parent.hints.clone(),
    };
    let span = if parent.is_inter() { CTX_SPAN_INTER } else { CTX_SPAN_INTRA };
    let ctx = new_context(comm, span, false)?;
    let attrs = copy_attrs(ObjKind::Comm, comm, &parent.attrs)?;
    publish(Comm { ctx, attrs, hints, name: String::new(), ..parent }, newcomm)
}

pub unsafe fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> c_int {
    ret(comm, "MPI_Comm_dup", dup_common(comm, None, newcomm))
}

pub unsafe fn MPI_Comm_dup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) -> c_int {
    ret(comm, "MPI_Comm_dup_with_info", dup_common(comm, Some(info), newcomm))
}

/// A raw pointer handed to an idup's thread.
struct SendPtr(*mut MPI_Comm);
// SAFETY: the program keeps `newcomm` valid until the idup's request
// completes (the standard's rule for nonblocking calls' output arguments);
// only the idup's thread writes through it, before completing the request.
unsafe impl Send for SendPtr {}

/// `MPI_Comm_idup(_with_info)`: the copy callbacks run now, in the calling
/// thread; the context id is agreed on a thread of its own (after the
/// earlier idups of the same parent), which then writes `newcomm` and
/// completes the request. A constructor called later on the same parent
/// waits for it ([`quiet`]).
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
        Some(i) => rt::with(|st| st.comms.infos.get_or_null(i))?,
        None => parent.hints.clone(),
    };
    let attrs = copy_attrs(ObjKind::Comm, comm, &parent.attrs)?;
    let pctx = parent.ctx;
    let (a, key, ticket, req) = rt::with(|st| {
        let (a, key) = agreement_of(st, comm)?;
        let req = st.reqs.alloc(Request::new(Kind::Null, comm));
        Ok((a, key, st.comms.idup_start(pctx), req))
    })?;
    put(request, ReqTable::handle(req), "request")?;
    let out = SendPtr(newcomm);
    // Counted as a waiting thread from now on: a thread spinning in
    // MPI_Wait on the same CPU must yield to this one.
    let active = rt::Blocked::enter();
    let job = move || {
        let _active = active;
        let out = out;
        let span = parent.ctx_span();
        // A panic must still end the idup (or later constructors on the
        // parent would wait for it forever): it fails the request instead.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt::wait_until(|st| st.comms.idup_turn(pctx, ticket))
                .and_then(|()| agree_ctx(key, span, &a, false))
                // SAFETY: see `SendPtr`.
                .and_then(|ctx| unsafe { publish(Comm { ctx, attrs, hints, name: String::new(), ..parent }, out.0) })
        }))
        .unwrap_or_else(|_| {
            Err(MpiError::new(MPI_ERR_INTERN, "internal error (panic) in the thread of MPI_Comm_idup"))
        });
        let _ = rt::with(|st| {
            st.comms.idup_end(pctx);
            if let Err(e) = &r {
                st.reqs.get(req).err = e.class;
            }
            st.reqs.finish(req);
            rt::wake_waiters(st);
            Ok(())
        });
    };
    if let Err(e) = std::thread::Builder::new().name("mpi-comm-idup".into()).spawn(job) {
        rt::with(|st| {
            st.comms.idup_end(pctx);
            st.reqs.release(req);
            Ok(())
        })?;
        bail!(MPI_ERR_INTERN, "cannot start the thread of MPI_Comm_idup: {e}");
    }
    Ok(())
}

pub unsafe fn MPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> c_int {
    ret(comm, "MPI_Comm_idup", idup_common(comm, None, newcomm, request))
}

pub unsafe fn MPI_Comm_idup_with_info(
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    ret(comm, "MPI_Comm_idup_with_info", idup_common(comm, Some(info), newcomm, request))
}

pub unsafe fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    let c = if comm.is_null() { MPI_COMM_NULL } else { *comm };
    let r = (|| {
        if comm.is_null() {
            bail!(MPI_ERR_ARG, "comm is a NULL pointer");
        }
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
unsafe fn make_intra(parent: &Comm, ctx: u32, members: Vec<usize>, newcomm: *mut MPI_Comm) -> MpiResult<()> {
    make_intra_with(parent, ctx, members, Vec::new(), newcomm)
}

/// [`make_intra`] with info hints on the new communicator.
unsafe fn make_intra_with(
    parent: &Comm,
    ctx: u32,
    members: Vec<usize>,
    hints: Pairs,
    newcomm: *mut MPI_Comm,
) -> MpiResult<()> {
    let me = rt::with(|st| Ok(st.world_rank))?;
    match group::rank_of(&members, me) {
        None => put(newcomm, MPI_COMM_NULL, "newcomm"),
        Some(rank) => {
            let mut c = Comm::intra(ctx, Arc::new(members), rank as c_int, parent.errhandler);
            c.hints = hints;
            publish(c, newcomm)
        }
    }
}

/// `MPI_Comm_split` of intracommunicator `comm`: every rank's (color, key)
/// is gathered, and the members of this rank's color are ordered by key,
/// then by rank in `comm`.
/// The color a process gives `split` when its own arguments are wrong, so
/// that it still takes part in the exchange (and nobody waits for it).
pub(crate) const BAD_COLOR: c_int = c_int::MIN;

/// After the exchange of colors: an invalid color anywhere fails the call
/// in every process (the ones that gave a valid color learn who did not).
pub(crate) fn check_colors(mine: c_int, all: impl Iterator<Item = c_int>) -> MpiResult<()> {
    let bad = |c: c_int| c < 0 && c != MPI_UNDEFINED;
    if mine == BAD_COLOR {
        bail!(MPI_ERR_ARG, "invalid arguments");
    }
    if bad(mine) {
        bail!(MPI_ERR_ARG, "invalid color {mine} (must be >= 0 or MPI_UNDEFINED)");
    }
    if let Some((r, c)) = all.enumerate().find(|&(_, c)| bad(c)) {
        let what = if c == BAD_COLOR { "an invalid split type".to_string() } else { format!("the invalid color {c}") };
        bail!(MPI_ERR_ARG, "rank {r} gave {what}, so the split fails in every process");
    }
    Ok(())
}

pub(crate) fn split(comm: MPI_Comm, color: c_int, key: c_int) -> MpiResult<(Comm, u32, Vec<usize>)> {
    quiet(comm)?;
    let parent = intra_of(comm, "MPI_Comm_split")?;
    let view = rt::with(|st| View::local(st, &parent))?;
    let all = view.allgather_vec(&ints_to_bytes(&[color, key]))?;
    check_colors(color, all.iter().map(|ck| bytes_to_ints(ck)[0]))?;
    // The exchange above brought every member here.
    let ctx = new_context(comm, CTX_SPAN_INTRA, true)?;
    let mut members: Vec<(c_int, usize)> = Vec::new();
    if color != MPI_UNDEFINED {
        for (r, ck) in all.iter().enumerate() {
            let ck = bytes_to_ints(ck);
            if ck[0] == color {
                members.push((ck[1], r));
            }
        }
    }
    members.sort();
    let world: Vec<usize> = members.iter().map(|&(_, r)| parent.group[r]).collect();
    Ok((parent, ctx, world))
}

pub unsafe fn MPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) -> c_int {
    let r = (|| {
        if newcomm.is_null() {
            bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
        }
        quiet(comm)?;
        let parent = comm_of(comm)?;
        if parent.is_inter() {
            return super::inter::inter_split(comm, &parent, color, key, newcomm);
        }
        let (parent, ctx, members) = split(comm, color, key)?;
        make_intra(&parent, ctx, members, newcomm)
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
        let hints = rt::with(|st| st.comms.infos.get_or_null(info))?;
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
            bail!(MPI_ERR_COMM, "MPI_Comm_split_type needs an intracommunicator");
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
        make_intra_with(&parent, ctx, members, hints, newcomm)
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
            let r = super::inter::inter_split(comm, &parent, color, key, newcomm);
            members?;
            return r;
        }
        let ctx = new_context_or_fail(comm, CTX_SPAN_INTRA, false, members.as_ref().map(|_| ()).map_err(Clone::clone))?;
        make_intra(&parent, ctx, members?.to_vec(), newcomm)
    })();
    ret(comm, "MPI_Comm_create", r)
}

/// Kinds of agreement keys beside the plain one (0), ORed with a user tag.
pub(crate) const KEY_CREATE_GROUP: u64 = 1 << 32;
pub(crate) const KEY_INTERCOMM_CREATE: u64 = 2 << 32;
pub(crate) const KEY_DPM: u64 = 3 << 32;

pub unsafe fn MPI_Comm_create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm) -> c_int {
    let r = (|| {
        if newcomm.is_null() {
            bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
        }
        if tag < 0 {
            bail!(MPI_ERR_TAG, "invalid tag {tag} (MPI_Comm_create_group needs a tag >= 0)");
        }
        quiet(comm)?;
        let parent = intra_of(comm, "MPI_Comm_create_group")?;
        let (members, me) = rt::with(|st| Ok((st.comms.groups.get(group)?, st.world_rank)))?;
        if let Some(w) = members.iter().find(|w| !parent.group.contains(w)) {
            bail!(
                MPI_ERR_GROUP,
                "the group is not a subgroup of the communicator's group (world rank {w} is not a member)"
            );
        }
        let Some(rank) = group::rank_of(&members, me) else {
            return put(newcomm, MPI_COMM_NULL, "newcomm");
        };
        // Only the members take part: agree among them on the parent's
        // collective context, with tags derived from the user's tag.
        let local = rt::with(|st| View::new(st, parent.coll_ctx(), rank, members.clone()))?.with_user_tag(tag);
        let a = Agreement { local, leader: 0, peer: None, inter: false };
        let ctx = agree_ctx(ctx_key(&parent, KEY_CREATE_GROUP | tag as u64), CTX_SPAN_INTRA, &a, false)?;
        publish(Comm::intra(ctx, members, rank as c_int, parent.errhandler), newcomm)
    })();
    ret(comm, "MPI_Comm_create_group", r)
}

pub unsafe fn MPI_Comm_compare(comm1: MPI_Comm, comm2: MPI_Comm, result: *mut c_int) -> c_int {
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
        put(result, v, "result")
    });
    ret(comm1, "MPI_Comm_compare", r)
}

pub unsafe fn MPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) -> c_int {
    let r = rt::with(|st| {
        let pairs = st.comms.infos.get_or_null(info)?;
        let c = st.comms.get_mut(comm)?;
        for (k, v) in pairs {
            crate::rt::info::set(&mut c.hints, &k, &v);
        }
        Ok(())
    });
    ret(comm, "MPI_Comm_set_info", r)
}

pub unsafe fn MPI_Comm_get_info(comm: MPI_Comm, info_used: *mut MPI_Info) -> c_int {
    let r = rt::with(|st| {
        let hints = st.comms.get(comm)?.hints.clone();
        if info_used.is_null() {
            bail!(MPI_ERR_ARG, "info_used is a NULL pointer");
        }
        let h = st.comms.infos.insert(hints);
        put(info_used, h, "info_used")
    });
    ret(comm, "MPI_Comm_get_info", r)
}
