//! Intercommunicators (MPI 4.0 section 7.6): creation from two
//! intracommunicators joined by their leaders, merging, and splitting.
//!
//! An intercommunicator keeps the remote group in `Comm::group` and the
//! local group in `Comm::local` (see rt/comm.rs), so point-to-point works on
//! it unchanged. Its context id is fresh for both groups: each group combines
//! its members' offers, the leaders exchange theirs (rounds as in
//! rt/comm.rs).

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::agree::{bytes_to_ints, bytes_to_ranks, ints_to_bytes, ranks_to_bytes, View, TAG_EXCHANGE};
use super::comm::{ctx_key, Comm, CTX_SPAN_INTER, CTX_SPAN_INTRA};
use super::ctxid::{agree_ctx, check_colors, comm_of, new_context, quiet, Agreement, KEY_INTERCOMM_CREATE};
use super::error::{MpiError, MpiResult};
use super::group;
use super::with;
use crate::bail;

/// Intercommunicator `comm` (`what` names the call in the error).
pub fn inter_of(comm: MPI_Comm, what: &str) -> MpiResult<Comm> {
    let c = comm_of(comm)?;
    if !c.is_inter() {
        bail!(MPI_ERR_COMM, "{what} needs an intercommunicator");
    }
    Ok(c)
}

/// What a leader tells its group after talking to the other leader: whether
/// to go on, the name of the agreement, the remote group.
fn encode_outcome(ok: bool, name: (u32, u32), remote: &[usize]) -> Vec<u8> {
    let mut v = vec![ok as u8];
    v.extend_from_slice(&name.0.to_ne_bytes());
    v.extend_from_slice(&name.1.to_ne_bytes());
    v.extend_from_slice(&ranks_to_bytes(remote));
    v
}

/// `MPI_Intercomm_create` (collective over `local_comm`, and between the
/// leaders over `peer_comm`): the new intercommunicator.
pub fn create(
    local_comm: MPI_Comm,
    local_leader: c_int,
    peer_comm: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
) -> MpiResult<Comm> {
    quiet(local_comm)?;
    let local = comm_of(local_comm)?;
    if local.is_inter() {
        bail!(MPI_ERR_COMM, "local_comm must be an intracommunicator");
    }
    if local_leader < 0 || local_leader >= local.size() {
        bail!(MPI_ERR_RANK, "local_leader {local_leader} is not a rank of local_comm (size {})", local.size());
    }
    if tag < 0 {
        bail!(MPI_ERR_TAG, "invalid tag {tag}");
    }
    let view = with(|st| View::local(st, &local))?;
    let leader = local_leader as usize;
    // The leaders swap (their group's name as a parent, their group);
    // the smaller name keys the context-id agreement in both groups.
    let mine = ctx_key(&local, 0);
    let mut outcome = Vec::new();
    let mut peer = None;
    if local.rank == local_leader {
        let res = (|| {
            let p = comm_of(peer_comm)?;
            if remote_leader < 0 || remote_leader >= p.size() {
                bail!(MPI_ERR_RANK, "remote_leader {remote_leader} is not a rank of peer_comm (size {})", p.size());
            }
            let pv = with(|st| View::new(st, p.coll_ctx(), p.rank as usize, p.group.clone()))?.with_user_tag(tag);
            let mut msg = [mine.0, mine.1].iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
            msg.extend_from_slice(&ranks_to_bytes(&local.group));
            let theirs = pv.sendrecv_vec(&msg, remote_leader as usize, TAG_EXCHANGE)?;
            if theirs.len() < 8 {
                bail!(MPI_ERR_INTERN, "short reply from the remote leader");
            }
            let name = |i: usize| u32::from_ne_bytes(theirs[i..i + 4].try_into().unwrap());
            let key = (mine.0, mine.1).min((name(0), name(4)));
            Ok((key, bytes_to_ranks(&theirs[8..]), pv))
        })();
        outcome = match &res {
            Ok((key, remote, _)) => {
                let disjoint = remote.iter().all(|w| !local.group.contains(w));
                encode_outcome(disjoint, *key, remote)
            }
            Err(_) => encode_outcome(false, (0, 0), &[]),
        };
        // Tell the group before reporting a leader's error, so that
        // nobody waits forever.
        let out = view.bcast_vec(outcome, leader)?;
        peer = Some((res?.2, remote_leader as usize));
        outcome = out;
    } else {
        outcome = view.bcast_vec(outcome, leader)?;
    }
    if outcome.len() < 9 || outcome[0] != 1 {
        bail!(MPI_ERR_ARG, "intercommunicator creation failed: the leaders could not agree, or the two groups overlap");
    }
    let name = |i: usize| u32::from_ne_bytes(outcome[i..i + 4].try_into().unwrap());
    let key = (name(1), name(5), KEY_INTERCOMM_CREATE | tag as u64);
    let remote = bytes_to_ranks(&outcome[9..]);
    let a = Agreement { local: view, leader, peer, inter: true };
    let ctx = agree_ctx(key, CTX_SPAN_INTER, &a, false)?;
    let mut c = Comm::intra(ctx, Arc::new(remote), local.rank, local.errhandler);
    c.local = Some(local.group.clone());
    Ok(c)
}

/// `MPI_Intercomm_merge` (collective over both groups): the
/// intracommunicator of both groups, the group that said `high` last.
pub fn merge(intercomm: MPI_Comm, high: bool) -> MpiResult<Comm> {
    quiet(intercomm)?;
    let c = inter_of(intercomm, "MPI_Intercomm_merge")?;
    let ctx = new_context(intercomm, CTX_SPAN_INTRA, false)?;
    let (local, remote, me, tie) = with(|st| {
        // Ties are broken by world rank within a job, by process id
        // between jobs (whose peer numbers differ on the two sides).
        let tie = match &st.engine.tcp {
            Some(t) if c.group[0] >= st.world_size => t.uid,
            _ => st.world_rank as u64,
        };
        Ok((View::local(st, &c)?, View::remote(st, &c)?, st.world_rank, tie))
    })?;
    // The leaders decide which group comes first: the one that said
    // high = false; on a tie, the one whose leader has the lower world
    // rank (process id, see above).
    let mut first = 0u32;
    if local.rank == 0 {
        let mut mine = vec![high as u8];
        mine.extend_from_slice(&tie.to_le_bytes());
        let theirs = remote.sendrecv_vec(&mine, 0, TAG_EXCHANGE)?;
        if theirs.len() < 9 {
            bail!(MPI_ERR_INTERN, "short reply from the remote leader");
        }
        let their_high = theirs[0] != 0;
        let their_tie = u64::from_le_bytes(theirs[1..9].try_into().unwrap());
        let local_first = if high != their_high { !high } else { tie < their_tie };
        first = local_first as u32;
    }
    let local_first = local.bcast_u32(first, 0)? != 0;
    let l = c.local_group();
    let members: Vec<usize> = if local_first {
        l.iter().chain(c.group.iter()).copied().collect()
    } else {
        c.group.iter().chain(l.iter()).copied().collect()
    };
    let rank = members
        .iter()
        .position(|&w| w == me)
        .ok_or_else(|| MpiError::new(MPI_ERR_INTERN, "not in the merged group"))?;
    Ok(Comm::intra(ctx, Arc::new(members), rank as c_int, c.errhandler))
}

/// `MPI_Comm_split` of intercommunicator `comm` (`c`): the processes of
/// each side with the same color form a new intercommunicator, ordered by
/// key then by rank on each side; a color found on one side only, or
/// `MPI_UNDEFINED`, gives `MPI_COMM_NULL`. `MPI_Comm_create` on an
/// intercommunicator is the split with color 0 for the members of the
/// group (keyed by their rank in it).
pub fn split(comm: MPI_Comm, c: &Comm, color: c_int, key: c_int) -> MpiResult<Option<Comm>> {
    let (local, remote) = with(|st| Ok((View::local(st, c)?, View::remote(st, c)?)))?;
    // Both sides' (color, key) tables, everywhere: gathered in each group,
    // swapped by the leaders, broadcast.
    let mine = local.allgather_vec(&ints_to_bytes(&[color, key]))?.concat();
    let mut theirs = Vec::new();
    if local.rank == 0 {
        theirs = remote.sendrecv_vec(&mine, 0, TAG_EXCHANGE)?;
    }
    let theirs = local.bcast_vec(theirs, 0)?;
    // A bad color on either side fails the split on both.
    let colors = |t: &[u8]| bytes_to_ints(t).chunks_exact(2).map(|ck| ck[0]).collect::<Vec<_>>();
    check_colors(color, colors(&mine).into_iter().chain(colors(&theirs)))?;
    // Every process of both groups has entered the split by now.
    let ctx = new_context(comm, CTX_SPAN_INTER, true)?;
    let side = |table: &[u8], group: &[usize]| -> Vec<usize> {
        let mut m: Vec<(c_int, usize)> = bytes_to_ints(table)
            .chunks_exact(2)
            .enumerate()
            .filter(|(_, ck)| ck[0] == color)
            .map(|(r, ck)| (ck[1], r))
            .collect();
        m.sort();
        m.iter().map(|&(_, r)| group[r]).collect()
    };
    if color == MPI_UNDEFINED {
        return Ok(None);
    }
    let (l, r) = (side(&mine, c.local_group()), side(&theirs, &c.group));
    let me = with(|st| Ok(st.world_rank))?;
    match group::rank_of(&l, me) {
        Some(rank) if !r.is_empty() => {
            let mut n = Comm::intra(ctx, Arc::new(r), rank as c_int, c.errhandler);
            n.local = Some(Arc::new(l));
            Ok(Some(n))
        }
        _ => Ok(None),
    }
}
