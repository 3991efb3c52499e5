//! Context ids agreed among processes, and the communicator constructors
//! exchanges that come before them (the colors of a split): the runtime
//! part of `MPI_Comm_dup`, `split`, `create`, intercommunicators, windows,
//! files and sessions. The rounds themselves are explained in `rt/comm.rs`;
//! they travel over the small internal collectives of `rt/agree.rs`.

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::agree::{bytes_to_ints, ints_to_bytes, View, TAG_EXCHANGE};
use super::comm::{combine_offers, ctx_key, failed_elsewhere, Comm, CtxKey, CTX_BUSY, CTX_FAILED, CTX_SPAN_INTRA};
use super::error::{MpiError, MpiResult};
use super::p2p::{Kind, Request};
use crate::bail;
use crate::rt;

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
    // A revoked parent makes nothing (also where no message would fail).
    rt::ulfm::check_in(st, comm)?;
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

/// `MPI_Comm_split` of intracommunicator `comm`: every rank's (color, key)
/// is gathered, and the members of this rank's color are ordered by key,
/// then by rank in `comm`.
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

/// Kinds of agreement keys beside the plain one (0), ORed with a user tag.
pub(crate) const KEY_CREATE_GROUP: u64 = 1 << 32;
pub(crate) const KEY_INTERCOMM_CREATE: u64 = 2 << 32;
pub(crate) const KEY_DPM: u64 = 3 << 32;

/// `MPI_Comm_idup`: starts the duplicate `new` of `comm` (the parent with
/// its copied attributes and hints); returns the slot of its request. The
/// context id is agreed on a thread of its own (after the earlier idups of
/// the same parent), which then gives the new handle to `deliver` and
/// completes the request. A constructor called later on the same parent
/// waits for it ([`quiet`]).
pub(crate) fn idup(comm: MPI_Comm, new: Comm, deliver: impl FnOnce(MPI_Comm) + Send + 'static) -> MpiResult<u32> {
    let pctx = new.ctx;
    let (a, key, ticket, req) = rt::with(|st| {
        let (a, key) = agreement_of(st, comm)?;
        let req = st.reqs.alloc(Request::new(Kind::Null, comm));
        Ok((a, key, st.comms.idup_start(pctx), req))
    })?;
    // Counted as a waiting thread from now on: a thread spinning in
    // MPI_Wait on the same CPU must yield to this one.
    let active = rt::Blocked::enter();
    let job = move || {
        rt::library_thread();
        let _active = active;
        let span = new.ctx_span();
        // A panic must still end the idup (or later constructors on the
        // parent would wait for it forever): it fails the request instead.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt::wait_until(|st| st.comms.idup_turn(pctx, ticket))
                .and_then(|()| agree_ctx(key, span, &a, false))
                .and_then(|ctx| rt::with(|st| Ok(st.comms.publish(Comm { ctx, ..new }))))
                .map(deliver)
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
    rt::switch_to_locking();
    if let Err(e) = std::thread::Builder::new().name("mpi-comm-idup".into()).spawn(job) {
        rt::with(|st| {
            st.comms.idup_end(pctx);
            st.reqs.release(req);
            Ok(())
        })?;
        bail!(MPI_ERR_INTERN, "cannot start the thread of MPI_Comm_idup: {e}");
    }
    Ok(req)
}
