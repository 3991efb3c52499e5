//! Sends and receives on the point-to-point engine, as the C boundary asks
//! for them: a communication buffer and an envelope are checked against the
//! communicator, then either go the request-free fast paths (a small
//! contiguous send goes out at once; a blocking receive from one peer takes
//! the message straight from that peer's ring or socket) or start a request
//! of the engine. Buffered sends copy their data here and charge it against
//! the attached buffer.
//!
//! Raw user pointers enter only through the buffers of [`super::buf`],
//! whose constructors carry the MPI standard's contract for a communication
//! buffer; everything here is safe to call.

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::buf::{TypedBuf, UserBuf};
use super::datatype::Dtype;
use super::error::MpiResult;
use super::p2p::{proc_null_status, Kind, Mode, RecvOp, ReqTable, Request, Wire};
use super::{shm, State};
use crate::bail;

/// The envelope of a message as a call names it: the peer's rank in `comm`
/// (the destination of a send; the source of a receive, which may be
/// `MPI_ANY_SOURCE`; `MPI_PROC_NULL` for no peer) and the tag.
#[derive(Clone, Copy, Debug)]
pub struct Envelope {
    pub peer: c_int,
    pub tag: c_int,
    pub comm: MPI_Comm,
}

pub(crate) fn check_tag(tag: c_int, recv: bool) -> MpiResult<()> {
    if (recv && tag == MPI_ANY_TAG) || (0..=TAG_UB).contains(&tag) {
        Ok(())
    } else {
        bail!(MPI_ERR_TAG, "invalid tag {tag} (tags are 0..={TAG_UB}{})", if recv { " or MPI_ANY_TAG" } else { "" })
    }
}

pub(crate) fn check_peer(rank: c_int, size: i32, recv: bool, what: &str) -> MpiResult<()> {
    if rank == MPI_PROC_NULL || (recv && rank == MPI_ANY_SOURCE) || (0..size).contains(&rank) {
        Ok(())
    } else {
        bail!(MPI_ERR_RANK, "invalid {what} rank {rank} in a communicator of size {size}")
    }
}

pub(crate) fn check_buf(buf: *const u8, count: usize, dt: &Dtype) -> MpiResult<()> {
    // A contiguous type starts at the buffer; other (derived) types may
    // address absolute locations from MPI_BOTTOM (NULL).
    if buf.is_null() && count > 0 && dt.size > 0 && dt.contig {
        bail!(MPI_ERR_BUFFER, "NULL buffer with count {count}");
    }
    Ok(())
}

/// Starts a send (into request slot `reuse`, or a new one); returns the slot.
pub fn start_send(st: &mut State, buf: &UserBuf, to: &Envelope, mode: Mode, reuse: Option<u32>) -> MpiResult<u32> {
    let buf = buf.typed(st)?;
    start_send_typed(st, buf, to, mode, reuse)
}

/// [`start_send`] with the datatype already resolved.
pub fn start_send_typed(
    st: &mut State,
    buf: TypedBuf,
    to: &Envelope,
    mode: Mode,
    reuse: Option<u32>,
) -> MpiResult<u32> {
    let (ctx, src, dest_world) = check_send(st, &buf, to)?;
    let ri = match reuse {
        Some(i) => i,
        None => st.reqs.alloc(Request::new(Kind::Null, to.comm)),
    };
    if to.peer == MPI_PROC_NULL {
        let r = st.reqs.get(ri);
        r.kind = Kind::Null;
        r.status = proc_null_status();
        st.reqs.finish(ri);
        return Ok(ri);
    }
    if mode == Mode::Buffered {
        return bsend(st, ri, &buf, dest_world, ctx, src, to.tag);
    }
    let r = st.reqs.get(ri);
    r.done = false;
    r.err = MPI_SUCCESS;
    r.status = MPI_Status::default();
    st.engine.start_send(&mut st.reqs, ri, buf.send_data(), dest_world, Wire { ctx, src, tag: to.tag }, mode);
    Ok(ri)
}

/// Validates the arguments of a send; returns (context, source rank,
/// destination's world rank: usize::MAX for `MPI_PROC_NULL`).
fn check_send(st: &State, buf: &TypedBuf, to: &Envelope) -> MpiResult<(u32, i32, usize)> {
    let c = st.comms.get(to.comm)?;
    super::ulfm::p2p_check(st, c, to.peer)?;
    check_tag(to.tag, false)?;
    check_peer(to.peer, c.size(), false, "destination")?;
    check_buf(buf.addr(), buf.count, &buf.dt)?;
    let dest = if to.peer == MPI_PROC_NULL { usize::MAX } else { c.group[to.peer as usize] };
    Ok((c.ctx, c.rank, dest))
}

/// The fast path of a blocking standard or ready send: a small contiguous
/// message goes out (or into the per-destination queue) at once and needs
/// no request. Returns false if the send must take the general path.
pub fn send_now(st: &mut State, buf: &UserBuf, to: &Envelope, mode: Mode) -> MpiResult<bool> {
    if !matches!(mode, Mode::Standard | Mode::Ready) || to.peer == MPI_PROC_NULL {
        return Ok(false);
    }
    let buf = buf.typed(st)?;
    if !buf.dt.contig {
        return Ok(false);
    }
    let bytes = buf.dt.packed_size(buf.count);
    let (ctx, src, dest_world) = check_send(st, &buf, to)?;
    if bytes > st.engine.eager_limit_to(dest_world) {
        return Ok(false);
    }
    // SAFETY: a TypedBuf addresses `count` elements of its datatype
    // (TypedBuf::new's contract), here `bytes` contiguous bytes, not at NULL
    // if there are any (check_send).
    let data = if bytes == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(buf.addr(), bytes) } };
    st.engine.send_eager_now(&mut st.reqs, data, dest_world, Wire { ctx, src, tag: to.tag });
    Ok(true)
}

/// Buffered send: the data is copied into library memory charged against
/// the attached buffer, and sent from there; request `ri` completes at once.
fn bsend(st: &mut State, ri: u32, buf: &TypedBuf, dest_world: usize, ctx: u32, src: i32, tag: i32) -> MpiResult<u32> {
    reap_bsends(&mut st.reqs, &mut st.bsend);
    let bytes = buf.dt.packed_size(buf.count);
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
    // SAFETY: a TypedBuf addresses `count` elements of its datatype
    // (TypedBuf::new's contract), and `copy` has their packed size.
    unsafe { buf.dt.pack(buf.addr(), buf.count, &mut copy) };
    let bytes_t = crate::rt::datatype::builtin(MPI_BYTE).expect("MPI_BYTE");
    let inner = st.reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
    st.engine.start_send_vec(&mut st.reqs, inner, copy, &bytes_t, dest_world, Wire { ctx, src, tag });
    st.bsend.pending.push((inner, charge));
    let r = st.reqs.get(ri);
    r.kind = Kind::Null;
    r.status = MPI_Status::default();
    st.reqs.finish(ri);
    Ok(ri)
}

/// Releases the buffered sends that completed, giving their charge back.
pub(crate) fn reap_bsends(reqs: &mut ReqTable, b: &mut super::BsendBuffer) {
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
pub fn start_recv(st: &mut State, buf: &UserBuf, from: &Envelope, reuse: Option<u32>) -> MpiResult<u32> {
    let buf = buf.typed(st)?;
    start_recv_typed(st, buf, from, reuse)
}

/// The argument checks of a receive, without starting it.
pub fn check_recv(st: &mut State, buf: &UserBuf, from: &Envelope) -> MpiResult<()> {
    let buf = buf.typed(st)?;
    check_recv_typed(st, &buf, from).map(|_| ())
}

/// [`check_recv`] with the count and datatype resolved; returns the
/// communicator's context id.
fn check_recv_typed(st: &State, buf: &TypedBuf, from: &Envelope) -> MpiResult<u32> {
    let c = st.comms.get(from.comm)?;
    super::ulfm::p2p_check(st, c, from.peer)?;
    check_tag(from.tag, true)?;
    check_peer(from.peer, c.size(), true, "source")?;
    check_buf(buf.addr(), buf.count, &buf.dt)?;
    Ok(c.ctx)
}

/// [`start_recv`] with the datatype already resolved.
pub fn start_recv_typed(st: &mut State, buf: TypedBuf, from: &Envelope, reuse: Option<u32>) -> MpiResult<u32> {
    let ctx = check_recv_typed(st, &buf, from)?;
    let ri = match reuse {
        Some(i) => i,
        None => st.reqs.alloc(Request::new(Kind::Null, from.comm)),
    };
    let r = st.reqs.get(ri);
    r.err = MPI_SUCCESS;
    if from.peer == MPI_PROC_NULL {
        r.kind = Kind::Null;
        r.status = proc_null_status();
        st.reqs.finish(ri);
        return Ok(ri);
    }
    r.done = false;
    r.status = MPI_Status::default();
    let cap = buf.dt.packed_size(buf.count);
    r.kind = Kind::Recv(RecvOp { buf: buf.addr(), dt: buf.dt, ctx, src: from.peer, tag: from.tag, cap, stream: None });
    st.engine.start_recv(&mut st.reqs, ri);
    Ok(ri)
}

/// Non-blocking reads of a remote peer's socket in [`recv_now`].
const TCP_POLLS: u32 = 256;

/// The fast path of a blocking receive: contiguous data from one peer, with
/// nothing else posted or queued, is taken straight from that peer's ring
/// (on this host) or socket (on another host) while the peer is expected to
/// answer soon (some microseconds of polling; one poll when ranks outnumber
/// the cores). `None`: take the general path (which also reports any
/// argument error).
pub fn recv_now(st: &mut State, buf: &UserBuf, from: &Envelope) -> MpiResult<Option<MPI_Status>> {
    Ok(match recv_direct(st, buf, from)? {
        DirectRecv::Got(s) => Some(s),
        DirectRecv::Nothing(_) | DirectRecv::General => None,
    })
}

/// What [`recv_direct`] found.
pub enum DirectRecv {
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
pub fn recv_direct(st: &mut State, buf: &UserBuf, from: &Envelope) -> MpiResult<DirectRecv> {
    let general = Ok(DirectRecv::General);
    let (source, tag) = (from.peer, from.tag);
    if source < 0 || buf.count < 0 {
        return general;
    }
    let count = buf.count as usize;
    let dt = st.types.get(buf.datatype())?;
    if !dt.contig {
        return general;
    }
    let c = st.comms.get(from.comm)?;
    let Some(&src_world) = c.group.get(source as usize) else { return general };
    if check_tag(tag, true).is_err() || check_buf(buf.addr().cast(), count, &dt).is_err() {
        return general;
    }
    let ctx = c.ctx;
    if !st.engine.direct_recv_ok(ctx, source, tag) {
        return general;
    }
    // (A look at a socket is a system call: fewer, for about as long.)
    let polls = match (super::oversubscribed(), st.engine.is_remote(src_world)) {
        (true, _) => 1,
        (false, false) => 8192,
        (false, true) => TCP_POLLS,
    };
    let (cap, env) = (dt.packed_size(count), Wire { ctx, src: source, tag });
    // SAFETY: a UserBuf addresses `count` elements of its datatype
    // (UserBuf::new's contract), writable for a receive; check_buf accepted
    // it, and for a contiguous type that is `cap` bytes from `addr`.
    let got = unsafe { st.engine.recv_direct(&mut st.reqs, src_world, env, buf.addr().cast(), cap, polls) };
    Ok(match got {
        Some((t, n)) => {
            let mut s = MPI_Status { MPI_SOURCE: source, MPI_TAG: t, ..Default::default() };
            s.set_byte_count(n as u64);
            DirectRecv::Got(s)
        }
        None if st.engine.direct_recv_ok(ctx, source, tag) => match st.engine.local_ring_watch(src_world) {
            Some(w) if !w.ready() => DirectRecv::Nothing(w),
            _ => DirectRecv::General,
        },
        None => DirectRecv::General,
    })
}

/// The context id a probe for (`from.peer`, `from.tag`) looks at, after
/// checking them against the communicator.
pub fn probe_context(st: &State, from: &Envelope) -> MpiResult<u32> {
    let c = st.comms.get(from.comm)?;
    if st.engine.ft.comm_revoked(c) {
        return Err(super::ulfm::revoked_error());
    }
    check_tag(from.tag, true)?;
    check_peer(from.peer, c.size(), true, "source")?;
    Ok(c.ctx)
}

/// `MPI_Probe` on context `ctx` (from [`probe_context`]): waits for a
/// matching message; fails if the communicator is revoked meanwhile.
pub fn wait_probe(ctx: u32, source: i32, tag: i32) -> MpiResult<MPI_Status> {
    super::block_on(|st| match st.engine.probe(ctx, source, tag) {
        Some(s) => Some(Ok(s)),
        None => st.engine.ft.revoked(ctx, tag).then(|| Err(super::ulfm::revoked_error())),
    })?
}

/// `MPI_Mprobe` on context `ctx`, as [`wait_probe`].
pub fn wait_mprobe(ctx: u32, source: i32, tag: i32) -> MpiResult<(MPI_Message, MPI_Status)> {
    super::block_on(|st| match st.engine.mprobe(ctx, source, tag) {
        Some(m) => Some(Ok(m)),
        None => st.engine.ft.revoked(ctx, tag).then(|| Err(super::ulfm::revoked_error())),
    })?
}

/// The data a `*_replace` call sends, packed first so that the receive may
/// overwrite the buffer.
pub fn pack_replace(st: &mut State, buf: &UserBuf) -> MpiResult<Vec<u8>> {
    let typed = buf.typed(st)?;
    let mut tmp = vec![0u8; typed.dt.packed_size(typed.count)];
    if typed.count > 0 && !typed.addr().is_null() {
        // SAFETY: a non-NULL UserBuf addresses `count` elements of its
        // datatype (UserBuf::new's contract); `tmp` has their packed size.
        unsafe { typed.dt.pack(typed.addr(), typed.count, &mut tmp) };
    }
    Ok(tmp)
}

/// Starts the receive of message `m` matched by `MPI_Mprobe`/`Improbe`
/// (`MPI_MESSAGE_NO_PROC`: a receive from `MPI_PROC_NULL`); returns the
/// request slot.
pub fn start_mrecv(st: &mut State, buf: &UserBuf, m: MPI_Message) -> MpiResult<u32> {
    let typed = buf.typed(st)?;
    if m == MPI_MESSAGE_NO_PROC {
        let i = st.reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
        st.reqs.get(i).status = proc_null_status();
        st.reqs.finish(i);
        return Ok(i);
    }
    let cap = typed.dt.packed_size(typed.count);
    let i = st.reqs.alloc(Request::new(
        Kind::Recv(RecvOp {
            buf: typed.addr(),
            dt: typed.dt,
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
    Ok(i)
}
