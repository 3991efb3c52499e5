//! MPI 4.0 chapter 11, the Sessions model: sessions, their process sets,
//! groups from process sets, and communicators made from groups (with no
//! parent communicator).
//!
//! Errors of a call on a session go to that session's error handler; a
//! call given no valid session raises its error on `MPI_COMM_SELF`, where
//! MPI 4.0 (section 9.3) puts errors that belong to no object. The two
//! constructors from groups raise on the error handler they are given (the
//! new communicator's), or on `MPI_COMM_SELF` if that is not valid.
//!
//! Communicators made from groups agree on their context id among the
//! group's members only, on a context reserved for this
//! (`CTX_SESSIONS`; the protocol is `rt::session`'s), with tags and an agreement key derived from a hash
//! of the string tag. The members first exchange the full string tag (and
//! the groups), so two concurrent creations whose string tags hash alike
//! fail with `MPI_ERR_ARG` instead of making a wrong communicator; see
//! COMMUNICATORS.md. (Members giving different string tags that hash
//! differently never meet, as for any mismatched collective: erroneous.)

use std::os::raw::{c_char, c_int};
use std::sync::Arc;

use mpi_api::abi::*;

use super::comm::publish;
use super::errh::check_errhandler;
use super::info::cstr;
use super::{put, put_str, raise, raise_on, Out};
use crate::bail;
use crate::rt::errh::HandlerKind;
use crate::rt::error::MpiResult;
use crate::rt::info::{self, Pairs};
use crate::rt::session::{self, GroupPair, Session, PSETS};
use crate::rt::{self, State};

/// Ends a call on `session`: `MPI_SUCCESS`, or the error through the
/// session's handler (`MPI_COMM_SELF`'s if `session` is not valid).
fn sret(session: MPI_Session, name: &str, r: MpiResult<()>) -> c_int {
    let Err(e) = r else { return MPI_SUCCESS };
    match rt::try_with(|st| session::get(&st.sessions, session).map(|s| s.errhandler).ok()).flatten() {
        Some(h) => raise_on(h, session, name, e),
        None => raise(MPI_COMM_SELF, name, e),
    }
}

/// Runs `f` on the state and session `session`.
fn with_session<R>(session: MPI_Session, f: impl FnOnce(&mut State, &Session) -> MpiResult<R>) -> MpiResult<R> {
    rt::with(|st| {
        let s = session::get(&st.sessions, session)?.clone();
        f(st, &s)
    })
}

/// Whether `h` is one of the predefined error handlers.
fn predefined(h: MPI_Errhandler) -> bool {
    matches!(h, MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT)
}

/// The handler `MPI_Session_init` reports its errors with: the one it was
/// given if that is valid, else `MPI_ERRORS_ARE_FATAL`.
fn init_handler(h: MPI_Errhandler) -> MPI_Errhandler {
    let valid = rt::try_with(|st| check_errhandler(st, h, HandlerKind::Session).is_ok()).unwrap_or(predefined(h));
    if valid {
        h
    } else {
        MPI_ERRORS_ARE_FATAL
    }
}

pub unsafe fn MPI_Session_init(info: MPI_Info, errhandler: MPI_Errhandler, session: *mut MPI_Session) -> c_int {
    // SAFETY: `session` is NULL or a writable handle (the caller's contract).
    let mut session = unsafe { Out::new(session, "session") };
    let r = (|| {
        if session.is_null() {
            bail!(MPI_ERR_ARG, "session is a NULL pointer");
        }
        // Everything is checked before the runtime starts: a failed call
        // must not leave it running. With the runtime not started yet no
        // user error handler can exist.
        let checked = rt::try_with(|st| {
            check_errhandler(st, errhandler, HandlerKind::Session)?;
            crate::rt::info::hints(info)
        });
        let pairs = match checked {
            Some(p) => p?,
            None => {
                if !predefined(errhandler) {
                    bail!(MPI_ERR_ARG, "invalid error handler 0x{:08x} (MPI is not running yet, so only the predefined handlers exist)", errhandler as u32);
                }
                // Info objects live apart from the runtime (they may be
                // made before it starts, MPI 4.0 11.4.1).
                crate::rt::info::hints(info)?
            }
        };
        let required = info::get(&pairs, "thread_level").map_or(MPI_THREAD_SINGLE, session::parse_thread_level);
        let h = rt::start_for_session(required, |st, provided| {
            let i = st.sessions.insert(Session { errhandler, thread_level: provided, info: pairs });
            Ok(session::handle(i))
        })?;
        session.put(h)
    })();
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_on(init_handler(errhandler), MPI_SESSION_NULL, "MPI_Session_init", e),
    }
}

pub unsafe fn MPI_Session_finalize(session: *mut MPI_Session) -> c_int {
    // SAFETY: `session` is NULL or the program's handle, readable and
    // writable (the caller's contract).
    let session = unsafe { session.as_mut() };
    let s = session.as_deref().map_or(MPI_SESSION_NULL, |&s| s);
    // The session's handler, kept for errors after it is gone.
    let h = rt::try_with(|st| session::get(&st.sessions, s).map(|x| x.errhandler).ok()).flatten();
    let r = (|| {
        let Some(session) = session else {
            bail!(MPI_ERR_ARG, "session is a NULL pointer");
        };
        rt::with(|st| {
            let i = session::index(&st.sessions, s)?;
            st.sessions.remove(i);
            Ok(())
        })?;
        *session = MPI_SESSION_NULL;
        rt::session_ended()
    })();
    match (r, h) {
        (Ok(()), _) => MPI_SUCCESS,
        (Err(e), Some(h)) => raise_on(h, s, "MPI_Session_finalize", e),
        (Err(e), None) => raise(MPI_COMM_SELF, "MPI_Session_finalize", e),
    }
}

pub unsafe fn MPI_Session_get_num_psets(session: MPI_Session, info: MPI_Info, npset_names: *mut c_int) -> c_int {
    // SAFETY: `npset_names` is NULL or a writable int (the caller's contract).
    let mut npset_names = unsafe { Out::new(npset_names, "npset_names") };
    let r = with_session(session, |_st, _| {
        crate::rt::info::hints(info)?;
        npset_names.put(PSETS.len() as c_int)
    });
    sret(session, "MPI_Session_get_num_psets", r)
}

/// `pset_len`: the size of `pset_name`, the name being truncated to fit;
/// if it is 0, `pset_name` is not looked at and `pset_len` is set to the
/// length of the name plus one for the NUL (as MPICH does: a non-zero
/// `pset_len` is left as it is).
pub unsafe fn MPI_Session_get_nth_pset(
    session: MPI_Session,
    info: MPI_Info,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> c_int {
    // SAFETY: `pset_len` is NULL or a readable and writable int (the
    // caller's contract).
    let pset_len = unsafe { pset_len.as_mut() };
    let r = with_session(session, |_st, _| {
        crate::rt::info::hints(info)?;
        let Some(name) = usize::try_from(n).ok().and_then(|n| PSETS.get(n)) else {
            bail!(MPI_ERR_ARG, "no process set number {n} (there are {})", PSETS.len());
        };
        let Some(pset_len) = pset_len else {
            bail!(MPI_ERR_ARG, "pset_len is a NULL pointer");
        };
        let cap = *pset_len;
        if cap < 0 {
            bail!(MPI_ERR_ARG, "pset_len {cap} is negative");
        }
        if cap == 0 {
            *pset_len = name.len() as c_int + 1;
            return Ok(());
        }
        if pset_name.is_null() {
            bail!(MPI_ERR_ARG, "pset_name is a NULL pointer");
        }
        // SAFETY: not NULL, so `pset_name` holds `*pset_len` > 0 bytes (the
        // caller's contract).
        unsafe { put_str(pset_name, cap as usize, name) };
        Ok(())
    });
    sret(session, "MPI_Session_get_nth_pset", r)
}

/// The members of process set `pset_name` (a C string).
///
/// # Safety
/// `pset_name` is NULL or a NUL-terminated string.
unsafe fn pset_of(st: &State, pset_name: *const c_char) -> MpiResult<Vec<usize>> {
    // SAFETY: the contract; the name is used before the call returns.
    let name = unsafe { cstr(pset_name, "pset_name") }?;
    session::pset_members(&name, st.world_rank, st.world_size)
}

pub unsafe fn MPI_Session_get_pset_info(session: MPI_Session, pset_name: *const c_char, info: *mut MPI_Info) -> c_int {
    // SAFETY: `info` is NULL or a writable handle (the caller's contract).
    let mut info = unsafe { Out::new(info, "info") };
    let r = with_session(session, |st, _| {
        // SAFETY: `pset_name` is NULL or a NUL-terminated string (the
        // caller's contract).
        let members = unsafe { pset_of(st, pset_name) }?;
        if info.is_null() {
            bail!(MPI_ERR_ARG, "info is a NULL pointer");
        }
        let h = crate::rt::info::insert(vec![("mpi_size".to_string(), members.len().to_string())]);
        info.put(h)
    });
    sret(session, "MPI_Session_get_pset_info", r)
}

pub unsafe fn MPI_Session_get_info(session: MPI_Session, info_used: *mut MPI_Info) -> c_int {
    // SAFETY: `info_used` is NULL or a writable handle (the caller's contract).
    let mut info_used = unsafe { Out::new(info_used, "info_used") };
    let r = with_session(session, |_st, s| {
        if info_used.is_null() {
            bail!(MPI_ERR_ARG, "info_used is a NULL pointer");
        }
        let mut pairs = s.info.clone();
        info::set(&mut pairs, "thread_level", session::thread_level_name(s.thread_level));
        info_used.put(crate::rt::info::insert(pairs))
    });
    sret(session, "MPI_Session_get_info", r)
}

pub unsafe fn MPI_Session_set_errhandler(session: MPI_Session, errhandler: MPI_Errhandler) -> c_int {
    let r = rt::with(|st| {
        session::get(&st.sessions, session)?;
        check_errhandler(st, errhandler, HandlerKind::Session)?;
        session::get_mut(&mut st.sessions, session)?.errhandler = errhandler;
        Ok(())
    });
    sret(session, "MPI_Session_set_errhandler", r)
}

pub unsafe fn MPI_Session_get_errhandler(session: MPI_Session, errhandler: *mut MPI_Errhandler) -> c_int {
    // SAFETY: `errhandler` is NULL or a writable handle (the caller's contract).
    let mut errhandler = unsafe { Out::new(errhandler, "errhandler") };
    let r = with_session(session, |_, s| errhandler.put(s.errhandler));
    sret(session, "MPI_Session_get_errhandler", r)
}

pub unsafe fn MPI_Session_call_errhandler(session: MPI_Session, errorcode: c_int) -> c_int {
    let r = with_session(session, |_, _| Ok(()));
    if r.is_err() {
        return sret(session, "MPI_Session_call_errhandler", r);
    }
    let e = crate::rt::error::MpiError::new(errorcode, "error raised by the application");
    sret(session, "MPI_Session_call_errhandler", Err(e));
    MPI_SUCCESS
}

pub unsafe fn MPI_Session_toint(session: MPI_Session) -> c_int {
    session
}

pub unsafe fn MPI_Session_fromint(session: c_int) -> MPI_Session {
    session
}

pub unsafe fn MPI_Group_from_session_pset(
    session: MPI_Session,
    pset_name: *const c_char,
    newgroup: *mut MPI_Group,
) -> c_int {
    // SAFETY: `newgroup` is NULL or a writable handle (the caller's contract).
    let mut newgroup = unsafe { Out::new(newgroup, "newgroup") };
    let r = with_session(session, |st, _| {
        // SAFETY: `pset_name` is NULL or a NUL-terminated string (the
        // caller's contract).
        let members = unsafe { pset_of(st, pset_name) }?;
        if newgroup.is_null() {
            bail!(MPI_ERR_ARG, "newgroup is a NULL pointer");
        }
        newgroup.put(st.comms.groups.insert(Arc::new(members)))
    });
    sret(session, "MPI_Group_from_session_pset", r)
}

/// Ends a constructor from groups: its errors go to the handler it was
/// given for the new communicator, or to `MPI_COMM_SELF`'s if that one is
/// not a valid communicator handler.
fn from_groups_ret(errhandler: MPI_Errhandler, name: &str, r: MpiResult<()>) -> c_int {
    let Err(e) = r else { return MPI_SUCCESS };
    if rt::try_with(|st| check_errhandler(st, errhandler, HandlerKind::Comm).is_ok()) == Some(true) {
        raise_on(errhandler, MPI_COMM_NULL, name, e)
    } else {
        raise(MPI_COMM_SELF, name, e)
    }
}

/// The arguments of a constructor from groups that every process checks
/// alone: the string tag, the new communicator's handler and info hints.
///
/// # Safety
/// `stringtag` is NULL or a NUL-terminated string.
unsafe fn tag_handler_hints(
    st: &State,
    stringtag: *const c_char,
    errhandler: MPI_Errhandler,
    info: MPI_Info,
) -> MpiResult<(String, Pairs)> {
    // SAFETY: the contract; the tag is copied here.
    let tag = unsafe { cstr(stringtag, "stringtag") }?.into_owned();
    if tag.len() >= MPI_MAX_STRINGTAG_LEN as usize {
        bail!(
            MPI_ERR_ARG,
            "stringtag of {} characters is longer than MPI_MAX_STRINGTAG_LEN - 1 ({})",
            tag.len(),
            MPI_MAX_STRINGTAG_LEN - 1
        );
    }
    check_errhandler(st, errhandler, HandlerKind::Comm)?;
    Ok((tag, crate::rt::info::hints(info)?))
}

pub unsafe fn MPI_Comm_create_from_group(
    group: MPI_Group,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newcomm: *mut MPI_Comm,
) -> c_int {
    let r = (|| {
        if newcomm.is_null() {
            bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
        }
        let (tag, hints, members, me) = rt::with(|st| {
            // SAFETY: `stringtag` is NULL or a NUL-terminated string (the
            // caller's contract).
            let (tag, hints) = unsafe { tag_handler_hints(st, stringtag, errhandler, info) }?;
            Ok((tag, hints, st.comms.groups.get(group)?, st.world_rank))
        })?;
        let c = session::comm_from_group(&tag, members, me, errhandler, hints)?;
        // SAFETY: `newcomm` is a writable handle (checked above; the
        // caller's contract).
        unsafe {
            match c {
                Some(c) => publish(c, newcomm),
                None => put(newcomm, MPI_COMM_NULL, "newcomm"),
            }
        }
    })();
    from_groups_ret(errhandler, "MPI_Comm_create_from_group", r)
}

pub unsafe fn MPI_Intercomm_create_from_groups(
    local_group: MPI_Group,
    local_leader: c_int,
    remote_group: MPI_Group,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newintercomm: *mut MPI_Comm,
) -> c_int {
    let r = (|| {
        if newintercomm.is_null() {
            bail!(MPI_ERR_ARG, "newintercomm is a NULL pointer");
        }
        let (tag, hints, local, remote, me) = rt::with(|st| {
            // SAFETY: `stringtag` is NULL or a NUL-terminated string (the
            // caller's contract).
            let (tag, hints) = unsafe { tag_handler_hints(st, stringtag, errhandler, info) }?;
            Ok((tag, hints, st.comms.groups.get(local_group)?, st.comms.groups.get(remote_group)?, st.world_rank))
        })?;
        let groups = GroupPair { local, local_leader, remote, remote_leader };
        let c = session::intercomm_from_groups(&tag, groups, me, errhandler, hints)?;
        // SAFETY: `newintercomm` is a writable handle (checked above; the
        // caller's contract).
        unsafe { publish(c, newintercomm) }
    })();
    from_groups_ret(errhandler, "MPI_Intercomm_create_from_groups", r)
}
