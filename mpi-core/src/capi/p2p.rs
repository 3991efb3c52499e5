//! Chapter 3: point-to-point communication.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::req::{complete_blocking, finish_req};
use super::{put, put_status, raise, ret};
use crate::bail;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::p2p::{proc_null_status, Kind, Mode, Persist, RecvOp, ReqTable, Request};
use crate::rt::{self, shm, State};

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

pub(crate) fn check_tag(tag: c_int, recv: bool) -> MpiResult<()> {
    if (recv && tag == MPI_ANY_TAG) || (0..=TAG_UB).contains(&tag) {
        Ok(())
    } else {
        bail!(MPI_ERR_TAG, "invalid tag {tag} (tags are 0..={TAG_UB}{})", if recv { " or MPI_ANY_TAG" } else { "" })
    }
}

fn check_peer(rank: c_int, size: i32, recv: bool, what: &str) -> MpiResult<()> {
    if rank == MPI_PROC_NULL || (recv && rank == MPI_ANY_SOURCE) || (0..size).contains(&rank) {
        Ok(())
    } else {
        bail!(MPI_ERR_RANK, "invalid {what} rank {rank} in a communicator of size {size}")
    }
}

fn check_buf(buf: *const u8, count: usize, dt: &Dtype) -> MpiResult<()> {
    // A contiguous type starts at the buffer; other (derived) types may
    // address absolute locations from MPI_BOTTOM (NULL).
    if buf.is_null() && count > 0 && dt.size > 0 && dt.contig {
        bail!(MPI_ERR_BUFFER, "NULL buffer with count {count}");
    }
    Ok(())
}

/// Starts a send (into request slot `reuse`, or a new one); returns the slot.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_send(
    st: &mut State,
    buf: *const u8,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: Mode,
    reuse: Option<u32>,
) -> MpiResult<u32> {
    let count = check_count(count)?;
    let dt = st.types.get(datatype)?;
    start_send_dt(st, buf, count, dt, dest, tag, comm, mode, reuse)
}

/// [`start_send`] with the datatype already resolved.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_send_dt(
    st: &mut State,
    buf: *const u8,
    count: usize,
    dt: Arc<Dtype>,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: Mode,
    reuse: Option<u32>,
) -> MpiResult<u32> {
    let (ctx, src) = check_send(st, buf, count, &dt, dest, tag, comm)?;
    let ri = match reuse {
        Some(i) => i,
        None => st.reqs.alloc(Request::new(Kind::Null, comm)),
    };
    if dest == MPI_PROC_NULL {
        let r = st.reqs.get(ri);
        r.kind = Kind::Null;
        r.status = proc_null_status();
        st.reqs.finish(ri);
        return Ok(ri);
    }
    let dest_world = st.comms.get(comm)?.group[dest as usize];
    if mode == Mode::Buffered {
        return bsend(st, ri, buf, count, &dt, dest_world, ctx, src, tag);
    }
    let r = st.reqs.get(ri);
    r.done = false;
    r.err = MPI_SUCCESS;
    r.status = MPI_Status::default();
    st.engine.start_send(&mut st.reqs, ri, buf, count, &dt, dest_world, ctx, src, tag, mode);
    Ok(ri)
}

/// Validates the arguments of a send; returns (context, source rank).
#[allow(clippy::too_many_arguments)]
fn check_send(
    st: &State,
    buf: *const u8,
    count: usize,
    dt: &Dtype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<(u32, i32)> {
    let c = st.comms.get(comm)?;
    check_tag(tag, false)?;
    check_peer(dest, c.size(), false, "destination")?;
    check_buf(buf, count, dt)?;
    Ok((c.ctx, c.rank))
}

/// The fast path of a blocking standard or ready send: a small contiguous
/// message goes out (or into the per-destination queue) at once and needs
/// no request. Returns false if the send must take the general path.
#[allow(clippy::too_many_arguments)]
fn send_now(
    st: &mut State,
    buf: *const u8,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult<bool> {
    if !matches!(mode, Mode::Standard | Mode::Ready) || dest == MPI_PROC_NULL {
        return Ok(false);
    }
    let count = check_count(count)?;
    let dt = st.types.get(datatype)?;
    let bytes = dt.packed_size(count);
    if !dt.contig {
        return Ok(false);
    }
    let (ctx, src) = check_send(st, buf, count, &dt, dest, tag, comm)?;
    let dest_world = st.comms.get(comm)?.group[dest as usize];
    if bytes > st.engine.eager_limit_to(dest_world) {
        return Ok(false);
    }
    st.engine.send_eager_now(&mut st.reqs, buf, bytes, dest_world, ctx, src, tag);
    Ok(true)
}

/// Buffered send: the data is copied into library memory charged against
/// the attached buffer, and sent from there; request `ri` completes at once.
#[allow(clippy::too_many_arguments)]
fn bsend(
    st: &mut State,
    ri: u32,
    buf: *const u8,
    count: usize,
    dt: &Dtype,
    dest_world: usize,
    ctx: u32,
    src: i32,
    tag: i32,
) -> MpiResult<u32> {
    reap_bsends(&mut st.reqs, &mut st.bsend);
    let bytes = dt.packed_size(count);
    let charge = bytes + MPI_BSEND_OVERHEAD as usize;
    let used: usize = st.bsend.pending.iter().map(|p| p.1).sum();
    if used + charge > st.bsend.size {
        if let Some(r) = st.reqs.try_get(ri) {
            if r.persist.is_none() {
                st.reqs.release(ri);
            }
        }
        bail!(
            MPI_ERR_BUFFER,
            "buffered send of {bytes} bytes does not fit in the attached buffer ({} of {} bytes in use{})",
            used,
            st.bsend.size,
            if st.bsend.size == 0 { "; call MPI_Buffer_attach first" } else { "" }
        );
    }
    let mut copy = vec![0u8; bytes];
    // SAFETY: buf holds `count` elements of dt (checked by the caller).
    unsafe { dt.pack(buf, count, &mut copy) };
    let bytes_t = crate::rt::datatype::builtin(MPI_BYTE).expect("MPI_BYTE");
    let inner = st.reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
    st.engine.start_send(
        &mut st.reqs,
        inner,
        copy.as_ptr(),
        bytes,
        &bytes_t,
        dest_world,
        ctx,
        src,
        tag,
        Mode::Standard,
    );
    if let Kind::Send(s) = &mut st.reqs.get(inner).kind {
        if let Some(rdv) = &mut s.rdv {
            // The heap block does not move with the Vec: `rdv.addr` stays valid.
            rdv.owned = Some(copy);
        }
    }
    st.bsend.pending.push((inner, charge));
    let r = st.reqs.get(ri);
    r.kind = Kind::Null;
    r.status = MPI_Status::default();
    st.reqs.finish(ri);
    Ok(ri)
}

fn reap_bsends(reqs: &mut ReqTable, b: &mut rt::BsendBuffer) {
    b.pending.retain(|&(i, _)| {
        if reqs.try_get(i).is_some_and(|r| r.done) {
            reqs.release(i);
            false
        } else {
            true
        }
    });
}

/// Starts a receive (into slot `reuse`, or a new one); returns the slot.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_recv(
    st: &mut State,
    buf: *mut u8,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    reuse: Option<u32>,
) -> MpiResult<u32> {
    let count = check_count(count)?;
    let dt = st.types.get(datatype)?;
    start_recv_dt(st, buf, count, dt, source, tag, comm, reuse)
}

/// The argument checks of a receive, without starting it.
fn check_recv(
    st: &mut State,
    buf: *mut u8,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<()> {
    let count = check_count(count)?;
    let dt = st.types.get(datatype)?;
    check_recv_dt(st, buf, count, &dt, source, tag, comm).map(|_| ())
}

/// [`check_recv`] with the count and datatype resolved; returns the
/// communicator's context id.
fn check_recv_dt(
    st: &State,
    buf: *mut u8,
    count: usize,
    dt: &Dtype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<u32> {
    let c = st.comms.get(comm)?;
    check_tag(tag, true)?;
    check_peer(source, c.size(), true, "source")?;
    check_buf(buf, count, dt)?;
    Ok(c.ctx)
}

/// [`start_recv`] with the datatype already resolved.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_recv_dt(
    st: &mut State,
    buf: *mut u8,
    count: usize,
    dt: Arc<Dtype>,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    reuse: Option<u32>,
) -> MpiResult<u32> {
    let ctx = check_recv_dt(st, buf, count, &dt, source, tag, comm)?;
    let src = source;
    let ri = match reuse {
        Some(i) => i,
        None => st.reqs.alloc(Request::new(Kind::Null, comm)),
    };
    let r = st.reqs.get(ri);
    r.err = MPI_SUCCESS;
    if source == MPI_PROC_NULL {
        r.kind = Kind::Null;
        r.status = proc_null_status();
        st.reqs.finish(ri);
        return Ok(ri);
    }
    r.done = false;
    r.status = MPI_Status::default();
    let cap = dt.packed_size(count);
    r.kind = Kind::Recv(RecvOp { buf, dt, ctx, src, tag, cap, stream: None });
    st.engine.start_recv(&mut st.reqs, ri);
    Ok(ri)
}

// ----- blocking sends --------------------------------------------------------

unsafe fn send_common(
    name: &str,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: Mode,
) -> c_int {
    let r = rt::with(|st| {
        if send_now(st, buf as *const u8, count, datatype, dest, tag, comm, mode)? {
            return Ok(Err((MPI_Status::default(), MPI_SUCCESS)));
        }
        let i = start_send(st, buf as *const u8, count, datatype, dest, tag, comm, mode, None)?;
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
        send_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Standard)
    }
    pub unsafe fn MPI_Ssend | MPI_Ssend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
        send_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Sync)
    }
    pub unsafe fn MPI_Rsend | MPI_Rsend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
        send_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Ready)
    }
    pub unsafe fn MPI_Bsend | MPI_Bsend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm) -> c_int {
        send_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Buffered)
    }
}

// ----- nonblocking sends -----------------------------------------------------

#[allow(clippy::too_many_arguments)]
unsafe fn isend_common(
    name: &str,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: Mode,
    request: *mut MPI_Request,
) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let i = start_send(st, buf as *const u8, count, datatype, dest, tag, comm, mode, None)?;
        *request = ReqTable::handle(i);
        Ok(())
    });
    ret(comm, name, r)
}

twins! {
    pub unsafe fn MPI_Isend | MPI_Isend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        isend_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Standard, request)
    }
    pub unsafe fn MPI_Issend | MPI_Issend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        isend_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Sync, request)
    }
    pub unsafe fn MPI_Irsend | MPI_Irsend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        isend_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Ready, request)
    }
    pub unsafe fn MPI_Ibsend | MPI_Ibsend_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        isend_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Buffered, request)
    }
}

// ----- receives --------------------------------------------------------------

/// Non-blocking reads of a remote peer's socket in [`recv_now`].
const TCP_POLLS: u32 = 256;

/// The fast path of a blocking receive: contiguous data from one peer, with
/// nothing else posted or queued, is taken straight from that peer's ring
/// (on this host) or socket (on another host) while the peer is expected to
/// answer soon (some microseconds of polling; one poll when ranks outnumber
/// the cores). `None`: take the general path (which also reports any
/// argument error).
fn recv_now(
    st: &mut State,
    buf: *mut u8,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<Option<MPI_Status>> {
    Ok(match recv_direct(st, buf, count, datatype, source, tag, comm)? {
        Direct::Got(s) => Some(s),
        Direct::Nothing(_) | Direct::General => None,
    })
}

/// What [`recv_direct`] found.
enum Direct {
    /// The message, received.
    Got(MPI_Status),
    /// Nothing from that peer on this host yet, and the fast path may be
    /// tried again once the watch on that peer's ring shows a record.
    Nothing(shm::RingWatch),
    /// The general path must take it.
    General,
}

/// [`recv_now`], telling apart an empty ring from a case for the general
/// path.
fn recv_direct(
    st: &mut State,
    buf: *mut u8,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<Direct> {
    let general = Ok(Direct::General);
    if source < 0 || count < 0 {
        return general;
    }
    let count = count as usize;
    let dt = st.types.get(datatype)?;
    if !dt.contig {
        return general;
    }
    let c = st.comms.get(comm)?;
    let Some(&src_world) = c.group.get(source as usize) else { return general };
    if check_tag(tag, true).is_err() || check_buf(buf, count, &dt).is_err() {
        return general;
    }
    let ctx = c.ctx;
    if !st.engine.direct_recv_ok(ctx, source, tag) {
        return general;
    }
    // (A look at a socket is a system call: fewer, for about as long.)
    let polls = match (rt::oversubscribed(), st.engine.is_remote(src_world)) {
        (true, _) => 1,
        (false, false) => 8192,
        (false, true) => TCP_POLLS,
    };
    let cap = dt.packed_size(count);
    // SAFETY: check_buf accepted `buf` for `count` elements of a contiguous
    // type, that is `cap` bytes.
    let got = unsafe { st.engine.recv_direct(&mut st.reqs, src_world, ctx, source, tag, buf, cap, polls) };
    Ok(match got {
        Some((t, n)) => {
            let mut s = MPI_Status { MPI_SOURCE: source, MPI_TAG: t, ..Default::default() };
            s.set_byte_count(n as u64);
            Direct::Got(s)
        }
        None if st.engine.direct_recv_ok(ctx, source, tag) => match st.engine.local_ring_watch(src_world) {
            Some(w) if !w.ready() => Direct::Nothing(w),
            _ => Direct::General,
        },
        None => Direct::General,
    })
}

unsafe fn recv_common(
    name: &str,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
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
            match recv_direct(st, buf as *mut u8, count, datatype, source, tag, comm)? {
                Direct::Got(s) => return Ok(Some(Err((s, MPI_SUCCESS)))),
                Direct::Nothing(w) => {
                    if let Some(win) = window {
                        let end = *until.get_or_insert_with(|| std::time::Instant::now() + win);
                        if std::time::Instant::now() < end {
                            watch = Some((w, end));
                            return Ok(None);
                        }
                    }
                }
                Direct::General => {}
            }
            let i = start_recv(st, buf as *mut u8, count, datatype, source, tag, comm, None)?;
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
            put_status(status, &s);
            ret(comm, name, super::req::status_error(err, &s))
        }
        Ok(Ok(i)) => complete_blocking(comm, name, i, status),
    }
}

twins! {
    pub unsafe fn MPI_Recv | MPI_Recv_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
        recv_common(NAME, buf, count as i64, datatype, source, tag, comm, status)
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn irecv_common(
    name: &str,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let i = start_recv(st, buf as *mut u8, count, datatype, source, tag, comm, None)?;
        *request = ReqTable::handle(i);
        Ok(())
    });
    ret(comm, name, r)
}

twins! {
    pub unsafe fn MPI_Irecv | MPI_Irecv_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        irecv_common(NAME, buf, count as i64, datatype, source, tag, comm, request)
    }
}

// ----- send-receive ----------------------------------------------------------

#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_common(
    name: &str,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let r = rt::with(|st| {
        // Fast path: a small contiguous send goes out at once, then the
        // receive may be taken straight from the source's ring. (The receive
        // arguments are checked first: a failing call sends nothing.)
        check_recv(st, recvbuf as *mut u8, recvcount, recvtype, source, recvtag, comm)?;
        if send_now(st, sendbuf as *const u8, sendcount, sendtype, dest, sendtag, comm, Mode::Standard)? {
            if let Some(s) = recv_now(st, recvbuf as *mut u8, recvcount, recvtype, source, recvtag, comm)? {
                return Ok(Err(s));
            }
            let ri = start_recv(st, recvbuf as *mut u8, recvcount, recvtype, source, recvtag, comm, None)?;
            return Ok(Ok((None, ri)));
        }
        let ri = start_recv(st, recvbuf as *mut u8, recvcount, recvtype, source, recvtag, comm, None)?;
        match start_send(st, sendbuf as *const u8, sendcount, sendtype, dest, sendtag, comm, Mode::Standard, None) {
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
            put_status(status, &s);
            return MPI_SUCCESS;
        }
        Err(e) => return raise(comm, name, e),
    };
    if let Err(e) = rt::wait_until(|st| !matches!(si, Some(si) if !st.reqs.get(si).done) && st.reqs.get(ri).done) {
        return raise(comm, name, e);
    }
    let (serr, (s, rerr)) =
        rt::with(|st| Ok((si.map_or(MPI_SUCCESS, |si| finish_req(st, si).1), finish_req(st, ri)))).expect("running");
    put_status(status, &s);
    if serr != MPI_SUCCESS {
        return raise(comm, name, MpiError::new(serr, "send part failed"));
    }
    ret(comm, name, super::req::status_error(rerr, &s))
}

twins! {
    pub unsafe fn MPI_Sendrecv | MPI_Sendrecv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
        sendrecv_common(NAME, sendbuf, sendcount as i64, sendtype, dest, sendtag, recvbuf, recvcount as i64, recvtype, source, recvtag, comm, status)
    }
}

/// The data a `*_replace` call sends, packed first so that the receive may
/// overwrite the buffer.
///
/// # Safety
/// `buf` holds `count` elements of `datatype` (or is NULL).
unsafe fn pack_replace(buf: *mut c_void, count: i64, datatype: MPI_Datatype) -> MpiResult<Vec<u8>> {
    rt::with(|st| {
        let dt = st.types.get(datatype)?;
        let n = check_count(count)?;
        let mut tmp = vec![0u8; dt.packed_size(n)];
        if n > 0 && !buf.is_null() {
            dt.pack(buf as *const u8, n, &mut tmp);
        }
        Ok(tmp)
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_replace_common(
    name: &str,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    let packed = match pack_replace(buf, count, datatype) {
        Ok(p) => p,
        Err(e) => return raise(comm, name, e),
    };
    sendrecv_common(
        name,
        packed.as_ptr() as *const c_void,
        packed.len() as i64,
        MPI_BYTE,
        dest,
        sendtag,
        buf,
        count,
        datatype,
        source,
        recvtag,
        comm,
        status,
    )
}

twins! {
    pub unsafe fn MPI_Sendrecv_replace | MPI_Sendrecv_replace_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
        sendrecv_replace_common(NAME, buf, count as i64, datatype, dest, sendtag, source, recvtag, comm, status)
    }
}

// ----- probe -----------------------------------------------------------------

fn probe_args(st: &mut State, source: c_int, tag: c_int, comm: MPI_Comm) -> MpiResult<u32> {
    let c = st.comms.get(comm)?;
    check_tag(tag, true)?;
    check_peer(source, c.size(), true, "source")?;
    Ok(c.ctx)
}

pub unsafe fn MPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let r = rt::with(|st| {
        let ctx = probe_args(st, source, tag, comm)?;
        if source == MPI_PROC_NULL {
            put_status(status, &proc_null_status());
            return put(flag, 1, "flag");
        }
        let mut found = st.engine.probe(ctx, source, tag);
        if found.is_none() && st.progress() {
            found = st.engine.probe(ctx, source, tag);
        }
        if let Some(s) = &found {
            put_status(status, s);
        }
        put(flag, found.is_some() as c_int, "flag")
    });
    ret(comm, "MPI_Iprobe", r)
}

pub unsafe fn MPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status) -> c_int {
    let r = rt::with(|st| probe_args(st, source, tag, comm)).and_then(|ctx| {
        if source == MPI_PROC_NULL {
            put_status(status, &proc_null_status());
            return Ok(());
        }
        let mut found = None;
        rt::wait_until(|st| {
            found = st.engine.probe(ctx, source, tag);
            found.is_some()
        })?;
        put_status(status, &found.unwrap());
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
    let r = rt::with(|st| {
        let ctx = probe_args(st, source, tag, comm)?;
        if source == MPI_PROC_NULL {
            put_status(status, &proc_null_status());
            put(message, MPI_MESSAGE_NO_PROC, "message")?;
            return put(flag, 1, "flag");
        }
        st.progress();
        match st.engine.mprobe(ctx, source, tag) {
            Some((m, s)) => {
                put_status(status, &s);
                put(message, m, "message")?;
                put(flag, 1, "flag")
            }
            None => put(flag, 0, "flag"),
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
    let r = rt::with(|st| probe_args(st, source, tag, comm)).and_then(|ctx| {
        if source == MPI_PROC_NULL {
            put_status(status, &proc_null_status());
            return put(message, MPI_MESSAGE_NO_PROC, "message");
        }
        let mut found = None;
        rt::wait_until(|st| {
            found = st.engine.mprobe(ctx, source, tag);
            found.is_some()
        })?;
        let (m, s) = found.unwrap();
        put_status(status, &s);
        put(message, m, "message")
    });
    ret(comm, "MPI_Mprobe", r)
}

/// Starts the receive of a matched message; returns the request slot.
unsafe fn start_mrecv(
    st: &mut State,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
) -> MpiResult<u32> {
    if message.is_null() {
        bail!(MPI_ERR_ARG, "message is a NULL pointer");
    }
    let m = *message;
    let count = check_count(count)?;
    let dt = st.types.get(datatype)?;
    if m == MPI_MESSAGE_NO_PROC {
        let i = st.reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
        st.reqs.get(i).status = proc_null_status();
        st.reqs.finish(i);
        *message = MPI_MESSAGE_NULL;
        return Ok(i);
    }
    let cap = dt.packed_size(count);
    let i = st.reqs.alloc(Request::new(
        Kind::Recv(RecvOp {
            buf: buf as *mut u8,
            dt,
            ctx: u32::MAX,
            src: MPI_ANY_SOURCE,
            tag: MPI_ANY_TAG,
            cap,
            stream: None,
        }),
        MPI_COMM_WORLD,
    ));
    if let Err(e) = st.engine.mrecv(&mut st.reqs, i, m) {
        st.reqs.release(i);
        return Err(e);
    }
    *message = MPI_MESSAGE_NULL;
    Ok(i)
}

unsafe fn mrecv_common(
    name: &str,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    match rt::with(|st| start_mrecv(st, buf, count, datatype, message)) {
        Ok(i) => complete_blocking(MPI_COMM_WORLD, name, i, status),
        Err(e) => raise(MPI_COMM_WORLD, name, e),
    }
}

twins! {
    pub unsafe fn MPI_Mrecv | MPI_Mrecv_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status) -> c_int {
        mrecv_common(NAME, buf, count as i64, datatype, message, status)
    }
}

unsafe fn imrecv_common(
    name: &str,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    request: *mut MPI_Request,
) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let i = start_mrecv(st, buf, count, datatype, message)?;
        *request = ReqTable::handle(i);
        Ok(())
    });
    ret(MPI_COMM_WORLD, name, r)
}

twins! {
    pub unsafe fn MPI_Imrecv | MPI_Imrecv_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, message: *mut MPI_Message, request: *mut MPI_Request) -> c_int {
        imrecv_common(NAME, buf, count as i64, datatype, message, request)
    }
}

// ----- persistent requests ---------------------------------------------------

#[allow(clippy::too_many_arguments)]
unsafe fn send_init_common(
    name: &str,
    buf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    mode: Mode,
    request: *mut MPI_Request,
) -> c_int {
    let r = rt::with(|st| {
        let c = st.comms.get(comm)?;
        let size = c.size();
        let n = check_count(count)?;
        let dt = st.types.get(datatype)?;
        check_tag(tag, false)?;
        check_peer(dest, size, false, "destination")?;
        check_buf(buf as *const u8, n, &dt)?;
        let mut req = Request::new(Kind::Null, comm);
        req.persist = Some(Persist::Send { buf: buf as *const u8, count: n, dt, dest, tag, comm, mode });
        req.active = false;
        req.done = true;
        let i = st.reqs.alloc(req);
        put(request, ReqTable::handle(i), "request")
    });
    ret(comm, name, r)
}

twins! {
    pub unsafe fn MPI_Send_init | MPI_Send_init_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        send_init_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Standard, request)
    }
    pub unsafe fn MPI_Ssend_init | MPI_Ssend_init_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        send_init_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Sync, request)
    }
    pub unsafe fn MPI_Rsend_init | MPI_Rsend_init_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        send_init_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Ready, request)
    }
    pub unsafe fn MPI_Bsend_init | MPI_Bsend_init_c(buf: *const c_void, count: Count, datatype: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        send_init_common(NAME, buf, count as i64, datatype, dest, tag, comm, Mode::Buffered, request)
    }
}

unsafe fn recv_init_common(
    name: &str,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    let r = rt::with(|st| {
        let c = st.comms.get(comm)?;
        let size = c.size();
        let n = check_count(count)?;
        let dt = st.types.get(datatype)?;
        check_tag(tag, true)?;
        check_peer(source, size, true, "source")?;
        check_buf(buf as *const u8, n, &dt)?;
        let mut req = Request::new(Kind::Null, comm);
        req.persist = Some(Persist::Recv { buf: buf as *mut u8, count: n, dt, src: source, tag, comm });
        req.active = false;
        req.done = true;
        let i = st.reqs.alloc(req);
        put(request, ReqTable::handle(i), "request")
    });
    ret(comm, name, r)
}

twins! {
    pub unsafe fn MPI_Recv_init | MPI_Recv_init_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        recv_init_common(NAME, buf, count as i64, datatype, source, tag, comm, request)
    }
}

/// Starts persistent request `i`.
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
            start_send_dt(st, buf, count, dt, dest, tag, comm, mode, Some(i))
        }
        Persist::Recv { buf, count, dt, src, tag, comm } => start_recv_dt(st, buf, count, dt, src, tag, comm, Some(i)),
        Persist::Psend { partitions, .. } => {
            st.reqs.get(i).kind = Kind::Partitioned { ready: vec![false; partitions] };
            Ok(i)
        }
        Persist::Precv { buf, partitions, count, dt, src, tag, comm } => {
            // The whole buffer arrives as one message once every partition
            // was marked ready on the sender.
            start_recv_dt(st, buf, partitions * count, dt, src, tag, comm, None).map(|inner| {
                st.reqs.make_compound(i, vec![inner], None);
                i
            })
        }
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

unsafe fn attach_common(name: &str, buffer: *mut c_void, size: i64) -> c_int {
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
                *(buffer_addr as *mut *mut c_void) = a as *mut c_void;
            }
            put(size, s as i64, "size")
        })
    });
    ret(MPI_COMM_WORLD, name, r)
}

pub unsafe fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    let mut s: i64 = 0;
    let rc = detach_common("MPI_Buffer_detach", buffer_addr, &mut s);
    if rc == MPI_SUCCESS && !size.is_null() {
        *size = s as c_int;
    }
    rc
}
pub unsafe fn MPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut MPI_Count) -> c_int {
    detach_common("MPI_Buffer_detach_c", buffer_addr, size)
}

// ----- nonblocking send-receive (MPI 4.0) --------------------------------------

#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv_common(
    name: &str,
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: i64,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    keep: Option<Vec<u8>>,
    request: *mut MPI_Request,
) -> c_int {
    let r = rt::with(|st| {
        if request.is_null() {
            bail!(MPI_ERR_ARG, "request is a NULL pointer");
        }
        let send_from = keep.as_ref().map_or(sendbuf as *const u8, |k| k.as_ptr());
        let ri = start_recv(st, recvbuf as *mut u8, recvcount, recvtype, source, recvtag, comm, None)?;
        let si = match start_send(st, send_from, sendcount, sendtype, dest, sendtag, comm, Mode::Standard, None) {
            Ok(si) => si,
            Err(e) => {
                st.engine.cancel(&mut st.reqs, ri);
                bail!(e.class, "{}", e.msg);
            }
        };
        let i = st.reqs.alloc(Request::new(Kind::Null, comm));
        // The receive goes last: the compound request reports its status.
        st.reqs.make_compound(i, vec![si, ri], keep);
        *request = ReqTable::handle(i);
        Ok(())
    });
    ret(comm, name, r)
}

twins! {
    pub unsafe fn MPI_Isendrecv | MPI_Isendrecv_c(sendbuf: *const c_void, sendcount: Count, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Count, recvtype: MPI_Datatype, source: c_int, recvtag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        isendrecv_common(NAME, sendbuf, sendcount as i64, sendtype, dest, sendtag, recvbuf, recvcount as i64, recvtype, source, recvtag, comm, None, request)
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv_replace_common(
    name: &str,
    buf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    match pack_replace(buf, count, datatype) {
        Ok(p) => {
            let len = p.len() as i64;
            isendrecv_common(
                name,
                std::ptr::null(),
                len,
                MPI_BYTE,
                dest,
                sendtag,
                buf,
                count,
                datatype,
                source,
                recvtag,
                comm,
                Some(p),
                request,
            )
        }
        Err(e) => raise(comm, name, e),
    }
}

twins! {
    pub unsafe fn MPI_Isendrecv_replace | MPI_Isendrecv_replace_c(buf: *mut c_void, count: Count, datatype: MPI_Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
        isendrecv_replace_common(NAME, buf, count as i64, datatype, dest, sendtag, source, recvtag, comm, request)
    }
}
