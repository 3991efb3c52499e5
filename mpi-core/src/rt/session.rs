//! Sessions (MPI 4.0 section 11.3): what a session keeps, its handles, and
//! the process sets this library knows.
//!
//! A session holds no resources of its own: the runtime (the [`super::State`])
//! is shared by every session and by the world model, started by the first
//! of them and ended when the last is done (see `rt::start_for_session`,
//! `rt::session_ended`, `rt::finalize`).

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};
use super::info::Pairs;
use super::slots::Slots;

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
/// gives them. Compared case-sensitively, as MPICH does.
pub const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// The members (world ranks, in rank order) of process set `name`, seen
/// from world rank `me` of a job of `size` processes.
pub fn pset_members(name: &str, me: usize, size: usize) -> MpiResult<Vec<usize>> {
    match name {
        "mpi://WORLD" => Ok((0..size).collect()),
        "mpi://SELF" => Ok(vec![me]),
        _ => Err(MpiError::new(MPI_ERR_ARG, format!("unknown process set \"{name}\" (known: {})", PSETS.join(", ")))),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_sets_are_world_and_self_case_sensitively() {
        assert_eq!(pset_members("mpi://WORLD", 2, 4).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(pset_members("mpi://SELF", 2, 4).unwrap(), vec![2]);
        assert_eq!(pset_members("mpi://world", 2, 4).unwrap_err().class, MPI_ERR_ARG);
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
