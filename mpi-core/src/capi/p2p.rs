//! Chapter 3: point-to-point communication.

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi_api::abi::*;

use super::req::{complete_blocking, finish_req};
use super::{put, put_status, raise, ret, status_mut, Out};
use crate::bail;
use crate::rt::buf::{TypedBuf, UserBuf};
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::p2p::{proc_null_status, Kind, Mode, Persist, ReqTable, Request};
// Chapters that still name these through `super::p2p` (partitioned).
use crate::rt::sendrecv::{
    check_buf, check_peer, check_recv, pack_replace, probe_context, reap_bsends, recv_direct, recv_now, send_now,
    start_mrecv, start_recv, start_recv_typed, start_send, DirectRecv, Envelope,
};
pub(crate) use crate::rt::sendrecv::{check_tag, start_send_typed};
use crate::rt::{self, State};

/// The buffer of data a call sends.
///
/// # Safety
/// `buf` is NULL or addresses `count` readable elements of `datatype` until
/// the operation completes (the caller's MPI contract).
unsafe fn send_buf(buf: *const c_void, count: i64, datatype: MPI_Datatype) -> UserBuf {
    // SAFETY: the caller's contract, which is UserBuf::new's for data sent.
    unsafe { UserBuf::new(buf, count, datatype) }
}

/// The buffer into which a call receives.
///
/// # Safety
/// `buf` is NULL or addresses `count` writable elements of `datatype` until
/// the operation completes (the caller's MPI contract).
unsafe fn recv_buf(buf: *mut c_void, count: i64, datatype: MPI_Datatype) -> UserBuf {
    // SAFETY: the caller's contract, which is UserBuf::new's for data received.
    unsafe { UserBuf::new(buf, count, datatype) }
}

/// One body for an MPI procedure and its large-count (`_c`) twin.
///
/// `pub unsafe fn MPI_X | MPI_X_c(params) -> c_int { body }` defines both
/// `MPI_X` and `MPI_X_c` from one signature and one body. In the parameter
/// types, `Count` stands for `c_int` in `MPI_X` and `MPI_Count` in `MPI_X_c`,
/// `Disp` for `c_int` and `MPI_Aint`, `Offset` for `MPI_Aint` and
/// `MPI_Count`; in the body, `NAME` is the procedure's own name (`"MPI_X"` or
/// `"MPI_X_c"`) and `LARGE` is false or true. Each function lives in a private
/// module of its own name (where the aliases and `NAME` are defined) and is
/// re-exported, so it is `capi::MPI_X` like a hand-written one. build.rs
/// reads the `pub unsafe fn MPI_X | MPI_X_c(` line of each item (which must
/// stay on one line) and checks against the API table that the two differ
/// only in count and displacement types; the generated exports check the
/// signatures themselves.
macro_rules! twins {
    ($(
        $(#[$attr:meta])*
        pub unsafe fn $int:ident | $large:ident($($p:ident: $t:ty),* $(,)?) -> c_int $body:block
    )*) => {$(
        mod $int {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            type Count = std::os::raw::c_int;
            #[allow(dead_code)]
            type Disp = std::os::raw::c_int;
            #[allow(dead_code)]
            type Offset = mpi_api::abi::MPI_Aint;
            const NAME: &str = stringify!($int);
            #[allow(dead_code)]
            const LARGE: bool = false;
            $(#[$attr])*
            pub unsafe fn $int($($p: $t),*) -> std::os::raw::c_int $body
        }
        pub use self::$int::$int;
        mod $large {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            type Count = mpi_api::abi::MPI_Count;
            #[allow(dead_code)]
            type Disp = mpi_api::abi::MPI_Aint;
            #[allow(dead_code)]
            type Offset = mpi_api::abi::MPI_Count;
            const NAME: &str = stringify!($large);
            #[allow(dead_code)]
            const LARGE: bool = true;
            $(#[$attr])*
            pub unsafe fn $large($($p: $t),*) -> std::os::raw::c_int $body
        }
        pub use self::$large::$large;
    )*};
}
pub(crate) use twins;

// ----- blocking sends --------------------------------------------------------

fn send_common(name: &str, buf: UserBuf, to: Envelope, mode: Mode) -> c_int {
    let comm = to.comm;
    let r = rt::with(|st| {
        if send_now(st, &buf, &to, mode)? {
            return Ok(Err((MPI_Status::default(), MPI_SUCCESS)));
        }
        let i = start_send(st, &buf, &to, mode, None)?;
        Ok(if st.reqs.get(i).done { Err(finish_req(st, i)) } else { Ok(i) })
    });
    match r {
        Err(e) => raise(comm, name, e),
        Ok(Err((_, err))) => ret(comm, name, if err == 0 { Ok(()) } else { Err(MpiError::new(err, "send failed")) }),
        Ok(Ok(i)) => complete_blocking(comm, name, i, std::ptr::null_mut()),
    }
}

twins! {
    pub unsafe fn MPI_Send | MPI_Send_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`.
        unsafe { send_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Standard) }
    }
    pub unsafe fn MPI_Ssend | MPI_Ssend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`.
        unsafe { send_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Sync) }
    }
    pub unsafe fn MPI_Rsend | MPI_Rsend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`.
        unsafe { send_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Ready) }
    }
    pub unsafe fn MPI_Bsend | MPI_Bsend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`.
        unsafe { send_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Buffered) }
    }
}

// ----- nonblocking sends -----------------------------------------------------

/// # Safety
/// `request` is NULL or points to a writable `MPI_Request`.
unsafe fn isend_common(name: &str, buf: UserBuf, to: Envelope, mode: Mode, request: *mut MPI_Request) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let i = start_send(st, &buf, &to, mode, None)?;
        // SAFETY: `request` is not NULL, so writable (the caller's contract).
        unsafe { *request = ReqTable::handle(i) };
        Ok(())
    });
    ret(to.comm, name, r)
}

twins! {
    pub unsafe fn MPI_Isend | MPI_Isend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { isend_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Standard, request) }
    }
    pub unsafe fn MPI_Issend | MPI_Issend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { isend_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Sync, request) }
    }
    pub unsafe fn MPI_Irsend | MPI_Irsend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { isend_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Ready, request) }
    }
    pub unsafe fn MPI_Ibsend | MPI_Ibsend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { isend_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Buffered, request) }
    }
}

// ----- receives --------------------------------------------------------------

/// # Safety
/// `status` is NULL, `MPI_STATUS_IGNORE` or points to a writable `MPI_Status`.
unsafe fn recv_common(name: &str, buf: UserBuf, from: Envelope, status: *mut MPI_Status) -> c_int {
    let comm = from.comm;
    // With more ranks than cores, a receive from a peer on this host that
    // found nothing keeps looking at that one ring between yields of the CPU
    // for a while (no request, no full progress round per turn), as the
    // sender is probably waiting for a CPU; bounded in time, as meanwhile
    // nothing else progresses. Between yields it reads only the word where
    // the peer's next record will be stamped (one cache line: after a switch
    // of processes every page touched costs), not the runtime.
    let window = rt::oversubscribed().then(rt::recv_yield_window).flatten();
    // The end of that window, from the first look that found nothing.
    let mut until: Option<std::time::Instant> = None;
    let mut watch = None;
    let r = loop {
        let r = rt::with(|st| {
            match recv_direct(st, &buf, &from)? {
                DirectRecv::Got(s) => return Ok(Some(Err((s, MPI_SUCCESS)))),
                DirectRecv::Nothing(w) => {
                    if let Some(win) = window {
                        let end = *until.get_or_insert_with(|| std::time::Instant::now() + win);
                        if std::time::Instant::now() < end {
                            watch = Some((w, end));
                            return Ok(None);
                        }
                    }
                }
                DirectRecv::General => {}
            }
            let i = start_recv(st, &buf, &from, None)?;
            Ok(Some(if st.reqs.get(i).done { Err(finish_req(st, i)) } else { Ok(i) }))
        });
        match r {
            Ok(None) => {
                rt::yield_cpu();
                if let Some((w, end)) = watch.take() {
                    let mut turns = 0u32;
                    while !w.ready() {
                        turns += 1;
                        if turns.is_multiple_of(8) && std::time::Instant::now() >= end {
                            break;
                        }
                        rt::yield_cpu();
                    }
                }
            }
            Ok(Some(x)) => break Ok(x),
            Err(e) => break Err(e),
        }
    };
    match r {
        Err(e) => raise(comm, name, e),
        Ok(Err((s, err))) => {
            // SAFETY: the caller's contract for `status`.
            unsafe { put_status(status, &s) };
            ret(comm, name, super::req::status_error(err, &s))
        }
        Ok(Ok(i)) => complete_blocking(comm, name, i, status),
    }
}

twins! {
    pub unsafe fn MPI_Recv | MPI_Recv_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: the caller's MPI contract: `buf` has room for `count` elements of `datatype`; `status` is NULL, MPI_STATUS_IGNORE or writable.
        unsafe { recv_common(NAME, recv_buf(buf, count as i64, datatype), Envelope { peer: source, tag, comm }, status) }
    }
}

/// # Safety
/// `request` is NULL or points to a writable `MPI_Request`.
unsafe fn irecv_common(name: &str, buf: UserBuf, from: Envelope, request: *mut MPI_Request) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let i = start_recv(st, &buf, &from, None)?;
        // SAFETY: `request` is not NULL, so writable (the caller's contract).
        unsafe { *request = ReqTable::handle(i) };
        Ok(())
    });
    ret(from.comm, name, r)
}

twins! {
    pub unsafe fn MPI_Irecv | MPI_Irecv_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` has room for `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { irecv_common(NAME, recv_buf(buf, count as i64, datatype), Envelope { peer: source, tag, comm }, request) }
    }
}

// ----- send-receive ----------------------------------------------------------

/// # Safety
/// `status` is NULL, `MPI_STATUS_IGNORE` or points to a writable `MPI_Status`.
unsafe fn sendrecv_common(
    name: &str,
    send: UserBuf,
    to: Envelope,
    recv: UserBuf,
    from: Envelope,
    status: *mut MPI_Status,
) -> c_int {
    let comm = to.comm;
    let r = rt::with(|st| {
        // Fast path: a small contiguous send goes out at once, then the
        // receive may be taken straight from the source's ring. (The receive
        // arguments are checked first: a failing call sends nothing.)
        check_recv(st, &recv, &from)?;
        if send_now(st, &send, &to, Mode::Standard)? {
            if let Some(s) = recv_now(st, &recv, &from)? {
                return Ok(Err(s));
            }
            let ri = start_recv(st, &recv, &from, None)?;
            return Ok(Ok((None, ri)));
        }
        let ri = start_recv(st, &recv, &from, None)?;
        match start_send(st, &send, &to, Mode::Standard, None) {
            Ok(si) => Ok(Ok((Some(si), ri))),
            Err(e) => {
                st.engine.cancel(&mut st.reqs, ri);
                Err(e)
            }
        }
    });
    let (si, ri) = match r {
        Ok(Ok(x)) => x,
        Ok(Err(s)) => {
            // SAFETY: the caller's contract for `status`.
            unsafe { put_status(status, &s) };
            return MPI_SUCCESS;
        }
        Err(e) => return raise(comm, name, e),
    };
    if let Err(e) = rt::wait_until(|st| !matches!(si, Some(si) if !st.reqs.get(si).done) && st.reqs.get(ri).done) {
        return raise(comm, name, e);
    }
    let (serr, (s, rerr)) =
        rt::with(|st| Ok((si.map_or(MPI_SUCCESS, |si| finish_req(st, si).1), finish_req(st, ri)))).expect("running");
    // SAFETY: the caller's contract for `status`.
    unsafe { put_status(status, &s) };
    if serr != MPI_SUCCESS {
        return raise(comm, name, MpiError::new(serr, "send part failed"));
    }
    ret(comm, name, super::req::status_error(rerr, &s))
}

twins! {
    pub unsafe fn MPI_Sendrecv | MPI_Sendrecv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` and `recvbuf` room for `recvcount` of `recvtype`; `status` is NULL, MPI_STATUS_IGNORE or writable.
        unsafe { sendrecv_common(NAME, send_buf(sendbuf, sendcount as i64, sendtype), Envelope { peer: dest, tag: sendtag, comm }, recv_buf(recvbuf, recvcount as i64, recvtype), Envelope { peer: source, tag: recvtag, comm }, status) }
    }
}

/// # Safety
/// `status` is NULL, `MPI_STATUS_IGNORE` or points to a writable `MPI_Status`.
unsafe fn sendrecv_replace_common(
    name: &str,
    buf: UserBuf,
    to: Envelope,
    from: Envelope,
    status: *mut MPI_Status,
) -> c_int {
    let packed = match rt::with(|st| pack_replace(st, &buf)) {
        Ok(p) => p,
        Err(e) => return raise(to.comm, name, e),
    };
    // SAFETY: `packed` holds its length in bytes and outlives the call,
    // which completes the send before returning.
    let send = unsafe { UserBuf::new(packed.as_ptr() as *const c_void, packed.len() as i64, MPI_BYTE) };
    // SAFETY: the caller's contract for `status`.
    unsafe { sendrecv_common(name, send, to, buf, from, status) }
}

twins! {
    pub unsafe fn MPI_Sendrecv_replace | MPI_Sendrecv_replace_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: the caller's MPI contract: `buf` has room for `count` elements of `datatype`; `status` is NULL, MPI_STATUS_IGNORE or writable.
        unsafe { sendrecv_replace_common(NAME, recv_buf(buf, count as i64, datatype), Envelope { peer: dest, tag: sendtag, comm }, Envelope { peer: source, tag: recvtag, comm }, status) }
    }
}

// ----- probe -----------------------------------------------------------------

pub unsafe fn MPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let _keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: the caller's MPI contract: `flag` is NULL or writable, `status`
    // NULL, MPI_STATUS_IGNORE or writable, neither used elsewhere meanwhile.
    let (mut flag, mut status) = unsafe { (Out::new(flag, "flag"), status_mut(status)) };
    let r = rt::with(|st| {
        let ctx = probe_context(st, &Envelope { peer: source, tag, comm })?;
        if source == MPI_PROC_NULL {
            set_status(&mut status, proc_null_status());
            return flag.put(1);
        }
        let mut found = st.engine.probe(ctx, source, tag);
        if found.is_none() && st.progress() {
            found = st.engine.probe(ctx, source, tag);
        }
        if let Some(s) = found {
            set_status(&mut status, s);
        }
        flag.put(found.is_some() as c_int)
    });
    ret(comm, "MPI_Iprobe", r)
}

/// Writes `s` to a status argument the program did not ignore.
fn set_status(out: &mut Option<&mut MPI_Status>, s: MPI_Status) {
    if let Some(o) = out {
        **o = s;
    }
}

pub unsafe fn MPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let _keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: the caller's MPI contract: `status` is NULL, MPI_STATUS_IGNORE
    // or writable, and not used elsewhere meanwhile.
    let mut status = unsafe { status_mut(status) };
    let r = rt::with(|st| probe_context(st, &Envelope { peer: source, tag, comm })).and_then(|ctx| {
        if source == MPI_PROC_NULL {
            set_status(&mut status, proc_null_status());
            return Ok(());
        }
        set_status(&mut status, crate::rt::sendrecv::wait_probe(ctx, source, tag)?);
        Ok(())
    });
    ret(comm, "MPI_Probe", r)
}

pub unsafe fn MPI_Improbe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let _keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: the caller's MPI contract: `flag` and `message` are NULL or
    // writable, `status` NULL, MPI_STATUS_IGNORE or writable, none used
    // elsewhere meanwhile.
    let (mut flag, mut message, mut status) =
        unsafe { (Out::new(flag, "flag"), Out::new(message, "message"), status_mut(status)) };
    let r = rt::with(|st| {
        let ctx = probe_context(st, &Envelope { peer: source, tag, comm })?;
        if source == MPI_PROC_NULL {
            set_status(&mut status, proc_null_status());
            message.put(MPI_MESSAGE_NO_PROC)?;
            return flag.put(1);
        }
        st.progress();
        match st.engine.mprobe(ctx, source, tag) {
            Some((m, s)) => {
                set_status(&mut status, s);
                message.put(m)?;
                flag.put(1)
            }
            None => flag.put(0),
        }
    });
    ret(comm, "MPI_Improbe", r)
}

pub unsafe fn MPI_Mprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
    // until the call returns (the caller's contract).
    let _keep = unsafe { crate::capi::KeepError::new(status) };
    // SAFETY: the caller's MPI contract: `message` is NULL or writable,
    // `status` NULL, MPI_STATUS_IGNORE or writable, neither used elsewhere
    // meanwhile.
    let (mut message, mut status) = unsafe { (Out::new(message, "message"), status_mut(status)) };
    let r = rt::with(|st| probe_context(st, &Envelope { peer: source, tag, comm })).and_then(|ctx| {
        if source == MPI_PROC_NULL {
            set_status(&mut status, proc_null_status());
            return message.put(MPI_MESSAGE_NO_PROC);
        }
        let (m, s) = crate::rt::sendrecv::wait_mprobe(ctx, source, tag)?;
        set_status(&mut status, s);
        message.put(m)
    });
    ret(comm, "MPI_Mprobe", r)
}

/// Starts the receive of the message `*message` names and sets
/// `*message` to `MPI_MESSAGE_NULL`; returns the request slot.
///
/// # Safety
/// `message` is NULL or points to a readable and writable `MPI_Message`.
unsafe fn start_matched_recv(st: &mut State, buf: &UserBuf, message: *mut MPI_Message) -> MpiResult<u32> {
    if message.is_null() {
        bail!(MPI_ERR_ARG, "message is a NULL pointer");
    }
    // SAFETY: not NULL, so readable (the caller's contract).
    let m = unsafe { *message };
    let i = start_mrecv(st, buf, m)?;
    // SAFETY: not NULL, so writable (the caller's contract).
    unsafe { *message = MPI_MESSAGE_NULL };
    Ok(i)
}

/// # Safety
/// `message` as for [`start_matched_recv`]; `status` is NULL,
/// `MPI_STATUS_IGNORE` or points to a writable `MPI_Status`.
unsafe fn mrecv_common(name: &str, buf: UserBuf, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
    // SAFETY: the caller's contract for `message`.
    match rt::with(|st| unsafe { start_matched_recv(st, &buf, message) }) {
        Ok(i) => complete_blocking(MPI_COMM_WORLD, name, i, status),
        Err(e) => raise(MPI_COMM_WORLD, name, e),
    }
}

twins! {
    pub unsafe fn MPI_Mrecv | MPI_Mrecv_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
        // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status
        // until the call returns (the caller's contract).
        let _keep = unsafe { crate::capi::KeepError::new(status) };
        // SAFETY: the caller's MPI contract: `buf` has room for `count` elements of `datatype`; `message` points to a readable and writable message handle or is NULL; `status` is NULL, MPI_STATUS_IGNORE or writable.
        unsafe { mrecv_common(NAME, recv_buf(buf, count as i64, datatype), message, status) }
    }
}

/// # Safety
/// `message` as for [`start_matched_recv`]; `request` is NULL or points to
/// a writable `MPI_Request`.
unsafe fn imrecv_common(name: &str, buf: UserBuf, message: *mut MPI_Message, request: *mut MPI_Request) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        // SAFETY: the caller's contract for `message`.
        let i = unsafe { start_matched_recv(st, &buf, message) }?;
        // SAFETY: `request` is not NULL, so writable (the caller's contract).
        unsafe { *request = ReqTable::handle(i) };
        Ok(())
    });
    ret(MPI_COMM_WORLD, name, r)
}

twins! {
    pub unsafe fn MPI_Imrecv | MPI_Imrecv_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, message: *mut MPI_Message, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` has room for `count` elements of `datatype`; `message` points to a readable and writable message handle or is NULL; `request` is NULL or writable.
        unsafe { imrecv_common(NAME, recv_buf(buf, count as i64, datatype), message, request) }
    }
}

// ----- persistent requests ---------------------------------------------------

/// # Safety
/// `request` is NULL or points to a writable `MPI_Request`.
unsafe fn send_init_common(name: &str, buf: UserBuf, to: Envelope, mode: Mode, request: *mut MPI_Request) -> c_int {
    let r = rt::with(|st| {
        let c = st.comms.get(to.comm)?;
        let size = c.size();
        let typed = buf.typed(st)?;
        check_tag(to.tag, false)?;
        check_peer(to.peer, size, false, "destination")?;
        check_buf(typed.addr(), typed.count, &typed.dt)?;
        let mut req = Request::new(Kind::Null, to.comm);
        req.persist = Some(Persist::Send {
            buf: typed.addr(),
            count: typed.count,
            dt: typed.dt.into_arc(),
            dest: to.peer,
            tag: to.tag,
            comm: to.comm,
            mode,
        });
        req.active = false;
        req.done = true;
        let i = st.reqs.alloc(req);
        // SAFETY: the caller's contract for `request`.
        unsafe { put(request, ReqTable::handle(i), "request") }
    });
    ret(to.comm, name, r)
}

twins! {
    pub unsafe fn MPI_Send_init | MPI_Send_init_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { send_init_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Standard, request) }
    }
    pub unsafe fn MPI_Ssend_init | MPI_Ssend_init_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { send_init_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Sync, request) }
    }
    pub unsafe fn MPI_Rsend_init | MPI_Rsend_init_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { send_init_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Ready, request) }
    }
    pub unsafe fn MPI_Bsend_init | MPI_Bsend_init_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` holds `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { send_init_common(NAME, send_buf(buf, count as i64, datatype), Envelope { peer: dest, tag, comm }, Mode::Buffered, request) }
    }
}

/// # Safety
/// `request` is NULL or points to a writable `MPI_Request`.
unsafe fn recv_init_common(name: &str, buf: UserBuf, from: Envelope, request: *mut MPI_Request) -> c_int {
    let r = rt::with(|st| {
        let c = st.comms.get(from.comm)?;
        let size = c.size();
        let typed = buf.typed(st)?;
        check_tag(from.tag, true)?;
        check_peer(from.peer, size, true, "source")?;
        check_buf(typed.addr(), typed.count, &typed.dt)?;
        let mut req = Request::new(Kind::Null, from.comm);
        req.persist = Some(Persist::Recv {
            buf: typed.addr(),
            count: typed.count,
            dt: typed.dt.into_arc(),
            src: from.peer,
            tag: from.tag,
            comm: from.comm,
        });
        req.active = false;
        req.done = true;
        let i = st.reqs.alloc(req);
        // SAFETY: the caller's contract for `request`.
        unsafe { put(request, ReqTable::handle(i), "request") }
    });
    ret(from.comm, name, r)
}

twins! {
    pub unsafe fn MPI_Recv_init | MPI_Recv_init_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` has room for `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { recv_init_common(NAME, recv_buf(buf, count as i64, datatype), Envelope { peer: source, tag, comm }, request) }
    }
}

/// Starts persistent request `i`. (The dispatch to the layer that owns the
/// kind of request is the boundary's: collectives live above the runtime.)
pub(crate) fn start_persistent(st: &mut State, i: u32) -> MpiResult<()> {
    let r = st.reqs.get(i);
    if r.active {
        bail!(MPI_ERR_REQUEST, "MPI_Start on a request that is still active");
    }
    let Some(p) = r.persist.clone() else {
        bail!(MPI_ERR_REQUEST, "MPI_Start on a request that is not persistent");
    };
    r.active = true;
    r.done = false;
    r.status.set_cancelled(false);
    let res = match p {
        Persist::Send { buf, count, dt, dest, tag, comm, mode } => {
            // SAFETY: the buffer the program gave MPI_*send_init, which it
            // keeps for the persistent request's life (the standard's rule).
            let buf = unsafe { TypedBuf::new(buf, count, dt) };
            start_send_typed(st, buf, &Envelope { peer: dest, tag, comm }, mode, Some(i))
        }
        Persist::Recv { buf, count, dt, src, tag, comm } => {
            // SAFETY: the buffer the program gave MPI_Recv_init, kept for the
            // persistent request's life.
            let buf = unsafe { TypedBuf::new(buf, count, dt) };
            start_recv_typed(st, buf, &Envelope { peer: src, tag, comm }, Some(i))
        }
        Persist::Psend { partitions, .. } => {
            crate::rt::part::start_send(st, i, partitions);
            Ok(i)
        }
        Persist::Precv { .. } => crate::rt::part::start_recv(st, i).map(|()| i),
        Persist::Coll(s) => crate::coll::start_persistent(st, i, s).map(|()| i),
    };
    if res.is_err() {
        let r = st.reqs.get(i);
        r.active = false;
        r.done = true;
    }
    res.map(|_| ())
}

// ----- buffer attach/detach --------------------------------------------------

/// Attaches the program's buffer for buffered sends. The library only
/// remembers its address and size (the data of a buffered send is copied
/// into library memory charged against that size), so this needs no contract.
fn attach_common(name: &str, buffer: *mut c_void, size: i64) -> c_int {
    let r = rt::with(|st| {
        if size < 0 {
            bail!(MPI_ERR_ARG, "negative buffer size {size}");
        }
        if st.bsend.size != 0 {
            bail!(MPI_ERR_BUFFER, "a buffer is already attached (detach it first)");
        }
        st.bsend.addr = buffer as usize;
        st.bsend.size = size as usize;
        Ok(())
    });
    ret(MPI_COMM_WORLD, name, r)
}

twins! {
    pub unsafe fn MPI_Buffer_attach | MPI_Buffer_attach_c(buffer: *mut c_void, size: Count) -> c_int {
        attach_common(NAME, buffer, size as i64)
    }
}

/// # Safety
/// `buffer_addr` is NULL or points to a writable `void *`; `size` is NULL
/// or points to a writable `i64`.
unsafe fn detach_common(name: &str, buffer_addr: *mut c_void, size: *mut i64) -> c_int {
    // Detach blocks until every buffered message has been delivered.
    let r = rt::wait_until(|st| {
        reap_bsends(&mut st.reqs, &mut st.bsend);
        st.bsend.pending.is_empty()
    })
    .and_then(|()| {
        rt::with(|st| {
            let (a, s) = (st.bsend.addr, st.bsend.size);
            st.bsend.addr = 0;
            st.bsend.size = 0;
            if !buffer_addr.is_null() {
                // SAFETY: not NULL, so a writable `void *` (the caller's contract:
                // the standard passes the address of the program's pointer).
                unsafe { *(buffer_addr as *mut *mut c_void) = a as *mut c_void };
            }
            // SAFETY: the caller's contract for `size`.
            unsafe { put(size, s as i64, "size") }
        })
    });
    ret(MPI_COMM_WORLD, name, r)
}

pub unsafe fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    let mut s: i64 = 0;
    // SAFETY: the caller's MPI contract for `buffer_addr`; `s` is ours.
    let rc = unsafe { detach_common("MPI_Buffer_detach", buffer_addr, &mut s) };
    if rc == MPI_SUCCESS && !size.is_null() {
        // SAFETY: not NULL, so writable (the caller's MPI contract).
        unsafe { *size = s as c_int };
    }
    rc
}
pub unsafe fn MPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut MPI_Count) -> c_int {
    // SAFETY: the caller's MPI contract for both out-arguments.
    unsafe { detach_common("MPI_Buffer_detach_c", buffer_addr, size) }
}

// ----- nonblocking send-receive (MPI 4.0) --------------------------------------

/// Starts the send and the receive of an `MPI_Isendrecv` as one compound
/// request; `keep` holds the packed data of a `_replace` call (sent from
/// there) until the request is freed.
///
/// # Safety
/// `request` is NULL or points to a writable `MPI_Request`.
unsafe fn isendrecv_common(
    name: &str,
    send: UserBuf,
    to: Envelope,
    recv: UserBuf,
    from: Envelope,
    keep: Option<Vec<u8>>,
    request: *mut MPI_Request,
) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let send = match &keep {
            // SAFETY: `keep` holds its length in bytes and is kept by the
            // compound request until it completes.
            Some(k) => unsafe { UserBuf::new(k.as_ptr() as *const c_void, k.len() as i64, MPI_BYTE) },
            None => send,
        };
        let ri = start_recv(st, &recv, &from, None)?;
        let si = match start_send(st, &send, &to, Mode::Standard, None) {
            Ok(si) => si,
            Err(e) => {
                st.engine.cancel(&mut st.reqs, ri);
                bail!(e.class, "{}", e.msg);
            }
        };
        let i = st.reqs.alloc(Request::new(Kind::Null, to.comm));
        // The receive goes last: the compound request reports its status.
        st.reqs.make_compound(i, vec![si, ri], keep);
        // SAFETY: `request` is not NULL, so writable (the caller's contract).
        unsafe { *request = ReqTable::handle(i) };
        Ok(())
    });
    ret(to.comm, name, r)
}

twins! {
    pub unsafe fn MPI_Isendrecv | MPI_Isendrecv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, source: c_int, recvtag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `sendbuf` holds `sendcount` elements of `sendtype` and `recvbuf` room for `recvcount` of `recvtype`; `request` is NULL or writable.
        unsafe { isendrecv_common(NAME, send_buf(sendbuf, sendcount as i64, sendtype), Envelope { peer: dest, tag: sendtag, comm }, recv_buf(recvbuf, recvcount as i64, recvtype), Envelope { peer: source, tag: recvtag, comm }, None, request) }
    }
}

/// # Safety
/// `request` is NULL or points to a writable `MPI_Request`.
unsafe fn isendrecv_replace_common(
    name: &str,
    buf: UserBuf,
    to: Envelope,
    from: Envelope,
    request: *mut MPI_Request,
) -> c_int {
    match rt::with(|st| pack_replace(st, &buf)) {
        // SAFETY: the caller's contract for `request`; the send goes from
        // the packed copy (`keep`), so its buffer here is only a placeholder.
        Ok(p) => unsafe { isendrecv_common(name, buf, to, buf, from, Some(p), request) },
        Err(e) => raise(to.comm, name, e),
    }
}

twins! {
    pub unsafe fn MPI_Isendrecv_replace | MPI_Isendrecv_replace_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        // SAFETY: the caller's MPI contract: `buf` has room for `count` elements of `datatype`; `request` is NULL or writable.
        unsafe { isendrecv_replace_common(NAME, recv_buf(buf, count as i64, datatype), Envelope { peer: dest, tag: sendtag, comm }, Envelope { peer: source, tag: recvtag, comm }, request) }
    }
}
