//! Sessions (MPI 4.0 section 11.3): what a session keeps, its handles, and
//! the process sets this library knows.
//!
//! A session holds no resources of its own: the runtime (the [`super::State`])
//! is shared by every session and by the world model, started by the first
//! of them and ended when the last is done (see `rt::start_for_session`,
//! `rt::session_ended`, `rt::finalize`).

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::agree::{ranks_to_bytes, View, TAG_EXCHANGE};
use super::comm::{Comm, CTX_SESSIONS, CTX_SPAN_INTER, CTX_SPAN_INTRA};
use super::ctxid::{agree_ctx, Agreement};
use super::error::{MpiError, MpiResult};
use super::group::{rank_of, Members};
use super::info::Pairs;
use super::slots::Slots;
use super::with;
use crate::bail;

/// An open session.
#[derive(Debug, Clone)]
pub struct Session {
    pub errhandler: MPI_Errhandler,
    /// The thread level it was given (`thread_level` of its info).
    pub thread_level: c_int,
    /// The info it was opened with.
    pub info: Pairs,
}

/// Names of the process sets, in the order `MPI_Session_get_nth_pset`
/// gives them. Compared without regard to case, as MPICH does: they are
/// URIs, whose scheme and authority (`WORLD`, `SELF`) are case-insensitive
/// (RFC 3986 3.1, 3.2.2).
pub const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// The members (world ranks, in rank order) of process set `name`, seen
/// from world rank `me` of a job of `size` processes.
pub fn pset_members(name: &str, me: usize, size: usize) -> MpiResult<Vec<usize>> {
    if name.eq_ignore_ascii_case(PSETS[0]) {
        Ok((0..size).collect())
    } else if name.eq_ignore_ascii_case(PSETS[1]) {
        Ok(vec![me])
    } else {
        Err(MpiError::new(MPI_ERR_ARG, format!("unknown process set \"{name}\" (known: {})", PSETS.join(", "))))
    }
}

/// The handle of the session in slot `i`.
pub fn handle(i: u32) -> MPI_Session {
    make_handle(HANDLE_KIND_DIRECT, OBJ_SESSION, i)
}

/// The slot of session handle `h`, if it names an open session.
pub fn index(table: &Slots<Session>, h: MPI_Session) -> MpiResult<u32> {
    let i = handle_index(h);
    if handle_kind(h) == HANDLE_KIND_DIRECT && handle_obj(h) == OBJ_SESSION && table.get(i).is_some() {
        return Ok(i);
    }
    let what = if h == MPI_SESSION_NULL {
        "MPI_SESSION_NULL is not a session".to_string()
    } else {
        format!("invalid session handle 0x{:08x} (finalized or never opened)", h as u32)
    };
    Err(MpiError::new(MPI_ERR_SESSION, what))
}

/// The session behind handle `h`.
pub fn get(table: &Slots<Session>, h: MPI_Session) -> MpiResult<&Session> {
    index(table, h).map(|i| table.get(i).expect("index checked the slot"))
}

/// The session behind handle `h`, writable.
pub fn get_mut(table: &mut Slots<Session>, h: MPI_Session) -> MpiResult<&mut Session> {
    let i = index(table, h)?;
    Ok(table.get_mut(i).expect("index checked the slot"))
}

/// The standard's name of a thread level (the value of the `thread_level`
/// info key).
pub fn thread_level_name(level: c_int) -> &'static str {
    match level {
        MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        _ => "MPI_THREAD_MULTIPLE",
    }
}

/// The thread level a `thread_level` info value asks for; unknown values
/// ask for nothing in particular (`MPI_THREAD_SINGLE`), as the standard
/// lets an implementation ignore hints it does not understand.
pub fn parse_thread_level(v: &str) -> c_int {
    [MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE]
        .into_iter()
        .find(|&l| thread_level_name(l).eq_ignore_ascii_case(v.trim()))
        .unwrap_or(MPI_THREAD_SINGLE)
}

/// A stable 32-bit hash (FNV-1a) of a string tag, from which the internal
/// tags and the agreement key of a creation from groups are derived (the
/// same in every process, whatever its build).
pub fn stringtag_hash(tag: &str) -> u32 {
    tag.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193))
}

/// Kinds of agreement keys of the constructors from groups (beside those
/// of `rt/ctxid.rs`), ORed with the hash of the string tag.
const KEY_FROM_GROUP: u64 = 3 << 32;
const KEY_FROM_GROUPS: u64 = 4 << 32;

/// What the processes of a creation from groups compare before they agree
/// on a context id: the full string tag and the groups as each sees them.
fn handshake(tag: &str, first: &[usize], second: &[usize]) -> Vec<u8> {
    let mut v = (tag.len() as u64).to_ne_bytes().to_vec();
    v.extend_from_slice(tag.as_bytes());
    v.extend_from_slice(&(first.len() as u64).to_ne_bytes());
    v.extend_from_slice(&ranks_to_bytes(first));
    v.extend_from_slice(&ranks_to_bytes(second));
    v
}

/// The processes of `members` (where this one has rank `rank`) on the
/// sessions' context, with tags of their own for string tag hash `h`.
fn view_of(rank: usize, members: Members, h: u32) -> MpiResult<View> {
    // World ranks as the sources of messages: successive creations with the
    // same tag on other groups must not be mistaken for this one (see View).
    let labels = members.clone();
    with(|st| {
        Ok(View::new(st, CTX_SESSIONS, rank, members)?.with_user_tag((h & 0x01ff_ffff) as c_int).with_labels(labels))
    })
}

/// `MPI_Comm_create_from_group` once its arguments are checked: the new
/// communicator of `members` (this process is world rank `me`), or `None`
/// when this process is not a member.
pub fn comm_from_group(
    tag: &str,
    members: Members,
    me: usize,
    errhandler: MPI_Errhandler,
    hints: Pairs,
) -> MpiResult<Option<Comm>> {
    // Only the group's members call this; anybody else gets no communicator.
    let Some(rank) = rank_of(&members, me) else {
        return Ok(None);
    };
    let h = stringtag_hash(tag);
    let view = view_of(rank, members.clone(), h)?;
    let mine = handshake(tag, &members, &[]);
    if view.allgather_vec(&mine)?.iter().any(|theirs| *theirs != mine) {
        bail!(
            MPI_ERR_ARG,
            "the members of the group disagree on the group or on the string tag \"{tag}\" (another creation from a group, whose string tag hashes alike, runs at the same time)"
        );
    }
    let lowest = members.iter().min().copied().unwrap_or(0) as u32;
    let a = Agreement { local: view, leader: 0, peer: None, inter: false };
    // The exchange above brought every member here.
    let ctx = agree_ctx((CTX_SESSIONS, lowest, KEY_FROM_GROUP | h as u64), CTX_SPAN_INTRA, &a, true)?;
    let mut c = Comm::intra(ctx, members, rank as c_int, errhandler);
    c.hints = hints;
    Ok(Some(c))
}

/// The two groups of `MPI_Intercomm_create_from_groups`, each with its
/// leader (a rank in the group).
pub struct GroupPair {
    pub local: Members,
    pub local_leader: c_int,
    pub remote: Members,
    pub remote_leader: c_int,
}

/// `MPI_Intercomm_create_from_groups` once the arguments every process
/// checks alone are checked: the new intercommunicator (this process is
/// world rank `me`).
pub fn intercomm_from_groups(
    tag: &str,
    groups: GroupPair,
    me: usize,
    errhandler: MPI_Errhandler,
    hints: Pairs,
) -> MpiResult<Comm> {
    let GroupPair { local, local_leader, remote, remote_leader } = groups;
    let Some(rank) = rank_of(&local, me) else {
        bail!(MPI_ERR_GROUP, "the calling process is not a member of local_group");
    };
    if local_leader < 0 || local_leader as usize >= local.len() {
        bail!(MPI_ERR_RANK, "local_leader {local_leader} is not a rank of local_group (size {})", local.len());
    }
    if remote_leader < 0 || remote_leader as usize >= remote.len() {
        bail!(MPI_ERR_RANK, "remote_leader {remote_leader} is not a rank of remote_group (size {})", remote.len());
    }
    if let Some(w) = remote.iter().find(|w| local.contains(w)) {
        bail!(MPI_ERR_GROUP, "local_group and remote_group overlap (world rank {w} is in both)");
    }
    let h = stringtag_hash(tag);
    let leader = local_leader as usize;
    let view = view_of(rank, local.clone(), h)?;
    // The leaders compare the string tag and the groups, then tell their
    // group whether to go on.
    let mut ok = 0u32;
    let mut peer = None;
    if rank == leader {
        let (a, b) = (local[leader], remote[remote_leader as usize]);
        let mine = (a > b) as usize;
        let pair = Arc::new(if a < b { vec![a, b] } else { vec![b, a] });
        let pv = view_of(mine, pair, h)?;
        let theirs = pv.sendrecv_vec(&handshake(tag, &local, &remote), 1 - mine, TAG_EXCHANGE);
        ok = theirs.as_ref().is_ok_and(|t| *t == handshake(tag, &remote, &local)) as u32;
        // Tell the group before reporting an error of the exchange, so
        // that nobody waits forever.
        view.bcast_u32(ok, leader)?;
        theirs?;
        peer = Some((pv, 1 - mine));
    } else {
        ok = view.bcast_u32(ok, leader)?;
    }
    if ok == 0 {
        bail!(
            MPI_ERR_ARG,
            "the leaders disagree on the groups or on the string tag \"{tag}\" (another creation from groups, whose string tag hashes alike, runs at the same time)"
        );
    }
    let lowest = local.iter().chain(remote.iter()).min().copied().unwrap_or(0) as u32;
    let a = Agreement { local: view, leader, peer, inter: true };
    let ctx = agree_ctx((CTX_SESSIONS, lowest, KEY_FROM_GROUPS | h as u64), CTX_SPAN_INTER, &a, false)?;
    let mut c = Comm::intra(ctx, remote, rank as c_int, errhandler);
    c.local = Some(local);
    c.hints = hints;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_sets_are_world_and_self_case_sensitively() {
        assert_eq!(pset_members("mpi://WORLD", 2, 4).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(pset_members("mpi://SELF", 2, 4).unwrap(), vec![2]);
        assert_eq!(pset_members("mpi://world", 2, 4).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(pset_members("MPI://Self", 2, 4).unwrap(), vec![2]);
        assert_eq!(pset_members("mpi://nobody", 2, 4).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(pset_members("", 0, 1).unwrap_err().class, MPI_ERR_ARG);
    }

    #[test]
    fn handles_name_open_sessions_only() {
        let mut t = Slots::default();
        let i =
            t.insert(Session { errhandler: MPI_ERRORS_RETURN, thread_level: MPI_THREAD_SINGLE, info: Pairs::new() });
        let h = handle(i);
        assert_ne!(h, MPI_SESSION_NULL);
        assert_eq!(get(&t, h).unwrap().errhandler, MPI_ERRORS_RETURN);
        assert_eq!(index(&t, MPI_SESSION_NULL).unwrap_err().class, MPI_ERR_SESSION);
        assert_eq!(index(&t, MPI_COMM_WORLD).unwrap_err().class, MPI_ERR_SESSION);
        t.remove(i);
        assert_eq!(index(&t, h).unwrap_err().class, MPI_ERR_SESSION);
    }

    #[test]
    fn thread_levels_round_trip() {
        for l in [MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE] {
            assert_eq!(parse_thread_level(thread_level_name(l)), l);
        }
        assert_eq!(parse_thread_level("mpi_thread_multiple"), MPI_THREAD_MULTIPLE);
        assert_eq!(parse_thread_level("lots"), MPI_THREAD_SINGLE);
    }

    #[test]
    fn stringtag_hash_is_fnv1a() {
        assert_eq!(stringtag_hash(""), 0x811c_9dc5);
        assert_eq!(stringtag_hash("a"), 0xe40c_292c);
        assert_ne!(stringtag_hash("tag-a"), stringtag_hash("tag-b"));
    }
}
