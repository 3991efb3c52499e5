//! Partitioned point-to-point communication (MPI 4.0 chapter 4.2).
//!
//! Matching happens at initialization, in the order of the initialization
//! calls: the k-th `MPI_Psend_init` of a process to a destination with a tag
//! on a communicator matches the k-th `MPI_Precv_init` there from that
//! process with that tag, whatever order the rounds are later started and
//! made ready in. Every `MPI_Psend_init` takes a channel number of its
//! process and sends a hello (user tag, channel) on the communicator's
//! collective context under [`HELLO`]; every `MPI_Precv_init` posts one
//! receive of hellos from its source. Hellos from one process arrive in the
//! order it sent them, and each is given to the earliest receive initialized
//! with its tag that has none yet ([`progress`]).
//!
//! A round's data goes as one message, once every partition is ready, on
//! the collective context under the channel's own tag ([`data_tag`]). Those
//! tags and [`HELLO`] are negative: no user receive (tags are at least 0, and
//! `MPI_ANY_TAG` matches only those) and no collective (its tags are
//! positive) can take them. A receive started before its hello arrived posts
//! its data receive when the hello comes.

use std::collections::{HashMap, VecDeque};
use std::os::raw::c_int;

use mpi_api::abi::*;

use super::buf::TypedBuf;
use super::error::MpiResult;
use super::p2p::{proc_null_status, Kind, Mode, Persist, RecvOp, Request, Wire};
use super::State;
use crate::bail;

/// Tag of the hellos on a communicator's collective context.
pub const HELLO: i32 = -2;

/// Tag of the data of channel `ch` (`ch` counts from 0, so these are below
/// [`HELLO`] and never `MPI_ANY_TAG`).
pub fn data_tag(ch: i32) -> i32 {
    -3 - ch
}

/// A posted receive of a hello: the internal request and where it lands.
struct HelloRecv {
    req: u32,
    /// (user tag, channel), as the sender wrote them.
    buf: Box<[i32; 2]>,
    ctx: u32,
    src: i32,
}

/// What this process knows of partitioned channels.
#[derive(Default)]
pub struct Parts {
    /// The next channel number of a partitioned send of this process.
    next: i32,
    /// Hello receives posted and not yet arrived.
    hellos: Vec<HelloRecv>,
    /// Hellos arrived and not yet given to a receive, by (collective
    /// context, source), in arrival order: (user tag, channel).
    arrived: HashMap<(u32, i32), VecDeque<(i32, i32)>>,
    /// Partitioned receives (request slots) in initialization order that
    /// have no channel yet, or were started before they had one.
    waiting: Vec<u32>,
}

impl Parts {
    /// Nothing to do in [`progress`].
    pub fn idle(&self) -> bool {
        self.hellos.is_empty() && self.waiting.is_empty()
    }
    /// Request `i` is being freed.
    pub fn forget(&mut self, i: u32) {
        self.waiting.retain(|&w| w != i);
    }
}

fn ctx_and_rank(st: &State, comm: MPI_Comm) -> MpiResult<(u32, i32)> {
    let c = st.comms.get(comm)?;
    Ok((c.coll_ctx(), c.rank))
}

/// The set-up of a partitioned send in request slot `i`: takes its channel
/// and says hello to the destination. Returns the channel.
pub fn init_send(st: &mut State, dest: i32, tag: c_int, comm: MPI_Comm) -> MpiResult<i32> {
    if st.parts.next == i32::MAX - 3 {
        bail!(MPI_ERR_INTERN, "this process has used up its partitioned channel numbers");
    }
    let ch = st.parts.next;
    st.parts.next += 1;
    if dest == MPI_PROC_NULL {
        return Ok(ch);
    }
    let (ctx, rank) = ctx_and_rank(st, comm)?;
    let dest_world = st.comms.get(comm)?.group[dest as usize];
    let bytes = st.types.get(MPI_BYTE)?;
    let mut hello = Vec::with_capacity(8);
    hello.extend_from_slice(&tag.to_ne_bytes());
    hello.extend_from_slice(&ch.to_ne_bytes());
    let h = st.reqs.alloc(Request::new(Kind::Null, comm));
    st.engine.start_send_vec(&mut st.reqs, h, hello, &bytes, dest_world, Wire { ctx, src: rank, tag: HELLO });
    // Nobody waits for it: the slot goes when the send is done.
    let r = st.reqs.get(h);
    if r.done {
        st.reqs.release(h);
    } else {
        r.freed = true;
    }
    Ok(ch)
}

/// The set-up of partitioned receive `i`: posts a receive of one hello from
/// its source and queues `i` for the channel that hello brings.
pub fn init_recv(st: &mut State, i: u32, src: i32, comm: MPI_Comm) -> MpiResult<()> {
    if src == MPI_PROC_NULL {
        return Ok(());
    }
    let (ctx, _) = ctx_and_rank(st, comm)?;
    let bytes = st.types.get(MPI_BYTE)?;
    let mut buf = Box::new([0i32; 2]);
    let op = RecvOp { buf: buf.as_mut_ptr().cast(), dt: bytes.into(), ctx, src, tag: HELLO, cap: 8, stream: None };
    let req = st.reqs.alloc(Request::new(Kind::Recv(op), comm));
    st.engine.start_recv(&mut st.reqs, req);
    st.parts.hellos.push(HelloRecv { req, buf, ctx, src });
    st.parts.waiting.push(i);
    Ok(())
}

/// `MPI_Start` of partitioned send `i`: a round begins with no partition ready.
pub fn start_send(st: &mut State, i: u32, partitions: usize) {
    st.reqs.get(i).kind = Kind::Partitioned { ready: vec![false; partitions] };
}

/// `MPI_Start` of partitioned receive `i`: its data receive is posted now
/// if its channel is known, else when its hello arrives.
pub fn start_recv(st: &mut State, i: u32) -> MpiResult<()> {
    let Some(Persist::Precv { src, channel, .. }) = &st.reqs.get(i).persist else {
        bail!(MPI_ERR_REQUEST, "not a partitioned receive");
    };
    if *src == MPI_PROC_NULL {
        let r = st.reqs.get(i);
        r.kind = Kind::Null;
        r.status = proc_null_status();
        st.reqs.finish(i);
        return Ok(());
    }
    match channel {
        Some(_) => post_data_recv(st, i),
        None => {
            // Already in `waiting` (since its initialization).
            st.reqs.get(i).kind = Kind::Null;
            Ok(())
        }
    }
}

/// Posts the data receive of started partitioned receive `i`, whose
/// channel is known.
fn post_data_recv(st: &mut State, i: u32) -> MpiResult<()> {
    let Some(Persist::Precv { buf, partitions, count, dt, src, comm, channel: Some(ch), .. }) =
        st.reqs.get(i).persist.clone()
    else {
        bail!(MPI_ERR_INTERN, "partitioned receive without a channel");
    };
    let (ctx, _) = ctx_and_rank(st, comm)?;
    let cap = dt.packed_size(partitions * count);
    let op = RecvOp { buf, dt: dt.into(), ctx, src, tag: data_tag(ch), cap, stream: None };
    let inner = st.reqs.alloc(Request::new(Kind::Recv(op), comm));
    st.engine.start_recv(&mut st.reqs, inner);
    st.reqs.make_compound(i, vec![inner], None);
    Ok(())
}

/// Marks partitions of started send `i` ready; sends the buffer when all are.
pub fn ready(st: &mut State, i: u32, parts: impl Iterator<Item = c_int>) -> MpiResult<()> {
    let r = st.reqs.get(i);
    let Some(Persist::Psend { buf, partitions, count, dt, dest, comm, channel, .. }) = r.persist.clone() else {
        bail!(MPI_ERR_REQUEST, "MPI_Pready needs a partitioned send request");
    };
    let Kind::Partitioned { ready } = &mut r.kind else {
        bail!(MPI_ERR_REQUEST, "MPI_Pready on a partitioned send that is not started (or already complete)");
    };
    for p in parts {
        if p < 0 || p as usize >= partitions {
            bail!(MPI_ERR_ARG, "partition {p} out of range 0..{partitions}");
        }
        ready[p as usize] = true;
    }
    if !ready.iter().all(|&b| b) {
        return Ok(());
    }
    if dest == MPI_PROC_NULL {
        let r = st.reqs.get(i);
        r.kind = Kind::Null;
        r.status = proc_null_status();
        st.reqs.finish(i);
        return Ok(());
    }
    let (ctx, rank) = ctx_and_rank(st, comm)?;
    let dest_world = st.comms.get(comm)?.group[dest as usize];
    // SAFETY: the buffer of `partitions * count` elements the program gave
    // MPI_Psend_init, kept for the request's life (the standard's rule).
    let whole = unsafe { TypedBuf::new(buf as *mut u8, partitions * count, dt) };
    let inner = st.reqs.alloc(Request::new(Kind::Null, comm));
    let env = Wire { ctx, src: rank, tag: data_tag(channel) };
    st.engine.start_send(&mut st.reqs, inner, whole.send_data(), dest_world, env, Mode::Standard);
    st.reqs.make_compound(i, vec![inner], None);
    Ok(())
}

/// Gives arrived hellos to the receives waiting for them, in initialization
/// order, and posts the data receives of those already started.
#[inline]
pub fn progress(st: &mut State) -> bool {
    if st.parts.idle() {
        return false;
    }
    progress_some(st)
}

#[inline(never)]
fn progress_some(st: &mut State) -> bool {
    let mut did = false;
    let mut k = 0;
    while k < st.parts.hellos.len() {
        let h = &st.parts.hellos[k];
        if !st.reqs.get(h.req).done {
            k += 1;
            continue;
        }
        // Arrival order per source is kept: hellos from one source are
        // received in the order their receives were posted.
        let h = st.parts.hellos.remove(k);
        st.reqs.release(h.req);
        st.parts.arrived.entry((h.ctx, h.src)).or_default().push_back((h.buf[0], h.buf[1]));
        did = true;
    }
    let mut k = 0;
    while k < st.parts.waiting.len() {
        let i = st.parts.waiting[k];
        let r = st.reqs.get(i);
        let started = r.active && !r.done && matches!(r.kind, Kind::Null);
        let Some(Persist::Precv { src, tag, comm, channel, .. }) = &mut r.persist else {
            st.parts.waiting.remove(k);
            continue;
        };
        if channel.is_none() {
            let ctx = match st.comms.get(*comm) {
                Ok(c) => c.coll_ctx(),
                Err(_) => {
                    k += 1;
                    continue;
                }
            };
            if let Some(q) = st.parts.arrived.get_mut(&(ctx, *src)) {
                if let Some(pos) = q.iter().position(|&(t, _)| t == *tag) {
                    *channel = q.remove(pos).map(|(_, ch)| ch);
                    did = true;
                }
            }
        }
        if channel.is_none() {
            k += 1;
            continue;
        }
        st.parts.waiting.remove(k);
        if started {
            if let Err(e) = post_data_recv(st, i) {
                let r = st.reqs.get(i);
                r.err = e.class;
                st.reqs.finish(i);
            }
            did = true;
        }
    }
    did
}
