//! Unit tests of the point-to-point engine over the loopback transport:
//! several engines in this process, driven in turn by the test.

use std::sync::Arc;

use mpi_api::abi::*;

use super::loopback::Loopback;
use crate::rt::buf::SendData;
use crate::rt::datatype::{builtin, Dtype};
use crate::rt::p2p::{Engine, Kind, Mode, RecvOp, ReqTable, Request, Wire};

/// Context id the tests' messages travel on.
const CTX: u32 = 8;

/// One rank of an in-process job: its engine and requests, and copies of
/// the data it sent (dropped after them, so no send outlives its data).
struct Rank {
    engine: Engine,
    reqs: ReqTable,
    sent: Vec<Vec<u8>>,
}

fn job(n: usize) -> Vec<Rank> {
    Loopback::job(n)
        .into_iter()
        .enumerate()
        .map(|(me, lb)| Rank {
            engine: Engine::with_loopback(me, n, lb).expect("engine"),
            reqs: ReqTable::default(),
            sent: Vec::new(),
        })
        .collect()
}

fn bytes() -> Arc<Dtype> {
    Arc::new(builtin(MPI_BYTE).expect("MPI_BYTE"))
}

/// Rounds of progress on every rank until none of them does anything.
fn pump(ranks: &mut [Rank]) {
    for _ in 0..10_000 {
        let mut did = false;
        for r in ranks.iter_mut() {
            did |= r.engine.progress(&mut r.reqs);
        }
        if !did {
            return;
        }
    }
    panic!("progress never settled");
}

fn isend(r: &mut Rank, data: &[u8], dest: usize, tag: i32, mode: Mode) -> u32 {
    let ri = r.reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
    let env = Wire { ctx: CTX, src: r.engine.world_rank() as i32, tag };
    let copy = data.to_vec();
    let dt = bytes();
    // SAFETY: the copy is kept unchanged in `r.sent` as long as the rank.
    let send = unsafe { SendData::of_bytes(&copy, &dt) };
    r.engine.start_send(&mut r.reqs, ri, send, dest, env, mode);
    r.sent.push(copy);
    ri
}

fn irecv(r: &mut Rank, buf: &mut [u8], src: i32, tag: i32) -> u32 {
    let op = RecvOp { buf: buf.as_mut_ptr(), dt: bytes().into(), ctx: CTX, src, tag, cap: buf.len(), stream: None };
    let ri = r.reqs.alloc(Request::new(Kind::Recv(op), MPI_COMM_WORLD));
    r.engine.start_recv(&mut r.reqs, ri);
    ri
}

fn done(r: &mut Rank, ri: u32) -> bool {
    r.reqs.get(ri).done
}

/// Source, tag and byte count of a completed receive.
fn status(r: &mut Rank, ri: u32) -> (i32, i32, u64) {
    let req = r.reqs.get(ri);
    assert!(req.done, "receive not complete");
    assert_eq!(req.err, MPI_SUCCESS);
    (req.status.MPI_SOURCE, req.status.MPI_TAG, req.status.byte_count())
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn eager_message_posted_before_and_after_arrival() {
    let mut ranks = job(3);
    let a = pattern(100, 1);
    let b = pattern(200, 2);
    let mut got_a = vec![0u8; 100];
    let mut got_b = vec![0u8; 256];
    // Posted first, then sent.
    let ra = irecv(&mut ranks[2], &mut got_a, 0, 5);
    let sa = isend(&mut ranks[0], &a, 2, 5, Mode::Standard);
    // Sent first (unexpected at the receiver), then posted.
    let sb = isend(&mut ranks[1], &b, 2, 6, Mode::Standard);
    pump(&mut ranks);
    let rb = irecv(&mut ranks[2], &mut got_b, 1, 6);
    pump(&mut ranks);
    assert!(done(&mut ranks[0], sa) && done(&mut ranks[1], sb));
    assert_eq!(status(&mut ranks[2], ra), (0, 5, 100));
    assert_eq!(status(&mut ranks[2], rb), (1, 6, 200));
    assert_eq!(got_a, a);
    assert_eq!(&got_b[..200], &b[..]);
}

#[test]
fn rendezvous_message_streams_over_loopback() {
    let mut ranks = job(2);
    let len = ranks[0].engine.eager_limit() * 4 + 123;
    let data = pattern(len, 7);
    let mut got = vec![0u8; len];
    let s = isend(&mut ranks[0], &data, 1, 3, Mode::Standard);
    pump(&mut ranks);
    assert!(!done(&mut ranks[0], s), "a rendezvous send completes only once received");
    let r = irecv(&mut ranks[1], &mut got, 0, 3);
    pump(&mut ranks);
    assert!(done(&mut ranks[0], s));
    assert_eq!(status(&mut ranks[1], r), (0, 3, len as u64));
    assert_eq!(got, data);

    // Posted before the request-to-send arrives.
    let mut again = vec![0u8; len];
    let r = irecv(&mut ranks[1], &mut again, 0, 4);
    let s = isend(&mut ranks[0], &data, 1, 4, Mode::Standard);
    pump(&mut ranks);
    assert!(done(&mut ranks[0], s));
    assert_eq!(status(&mut ranks[1], r), (0, 4, len as u64));
    assert_eq!(again, data);
}

#[test]
fn same_source_and_tag_match_in_send_order() {
    let mut ranks = job(2);
    let msgs: Vec<Vec<u8>> = (0..6).map(|i| vec![i as u8; 8 + i]).collect();
    for m in &msgs {
        isend(&mut ranks[0], m, 1, 9, Mode::Standard);
    }
    pump(&mut ranks);
    for m in &msgs {
        let mut buf = vec![0u8; 32];
        let r = irecv(&mut ranks[1], &mut buf, 0, 9);
        pump(&mut ranks);
        assert_eq!(status(&mut ranks[1], r), (0, 9, m.len() as u64));
        assert_eq!(&buf[..m.len()], &m[..]);
    }
}

#[test]
fn wildcards_take_the_earliest_arrival() {
    let mut ranks = job(3);
    // Arrival order at rank 0: rank 2 (tag 1), rank 1 (tag 2), rank 2 (tag 3).
    isend(&mut ranks[2], b"first", 0, 1, Mode::Standard);
    pump(&mut ranks);
    isend(&mut ranks[1], b"second", 0, 2, Mode::Standard);
    pump(&mut ranks);
    isend(&mut ranks[2], b"third", 0, 3, Mode::Standard);
    pump(&mut ranks);
    let mut buf = [0u8; 16];
    let r = irecv(&mut ranks[0], &mut buf, MPI_ANY_SOURCE, MPI_ANY_TAG);
    assert_eq!(status(&mut ranks[0], r), (2, 1, 5));
    assert_eq!(&buf[..5], b"first");
    // Any tag from one source skips the other source's message.
    let r = irecv(&mut ranks[0], &mut buf, 2, MPI_ANY_TAG);
    assert_eq!(status(&mut ranks[0], r), (2, 3, 5));
    assert_eq!(&buf[..5], b"third");
    // Any source with one tag.
    let r = irecv(&mut ranks[0], &mut buf, MPI_ANY_SOURCE, 2);
    assert_eq!(status(&mut ranks[0], r), (1, 2, 6));
    assert_eq!(&buf[..6], b"second");
    // A posted wildcard receive takes the next message to arrive.
    let r = irecv(&mut ranks[0], &mut buf, MPI_ANY_SOURCE, MPI_ANY_TAG);
    isend(&mut ranks[1], b"late", 0, 77, Mode::Standard);
    pump(&mut ranks);
    assert_eq!(status(&mut ranks[0], r), (1, 77, 4));
}

#[test]
fn probe_sees_unexpected_messages_without_taking_them() {
    let mut ranks = job(2);
    assert!(ranks[1].engine.probe(CTX, 0, 4).is_none());
    isend(&mut ranks[0], &[1, 2, 3], 1, 4, Mode::Standard);
    pump(&mut ranks);
    let st = ranks[1].engine.probe(CTX, MPI_ANY_SOURCE, MPI_ANY_TAG).expect("a message");
    assert_eq!((st.MPI_SOURCE, st.MPI_TAG, st.byte_count()), (0, 4, 3));
    assert!(ranks[1].engine.probe(CTX, 0, 5).is_none(), "another tag");
    assert!(ranks[1].engine.probe(CTX + 1, 0, 4).is_none(), "another context");
    // Still there for the receive.
    let mut buf = [0u8; 3];
    let r = irecv(&mut ranks[1], &mut buf, 0, 4);
    assert_eq!(status(&mut ranks[1], r), (0, 4, 3));
    assert_eq!(buf, [1, 2, 3]);
    assert!(ranks[1].engine.probe(CTX, 0, 4).is_none());
}

#[test]
fn cancel_of_an_unmatched_receive() {
    let mut ranks = job(2);
    let mut buf = [0u8; 4];
    let r = irecv(&mut ranks[1], &mut buf, 0, 1);
    assert_eq!(ranks[1].engine.posted_len(), 1);
    let Rank { engine, reqs, .. } = &mut ranks[1];
    engine.cancel(reqs, r);
    let req = ranks[1].reqs.get(r);
    assert!(req.done && req.status.cancelled());
    assert_eq!(ranks[1].engine.posted_len(), 0);
    // The message sent later is not taken by the cancelled receive.
    isend(&mut ranks[0], &[9; 4], 1, 1, Mode::Standard);
    pump(&mut ranks);
    assert!(ranks[1].engine.probe(CTX, 0, 1).is_some());
}

#[test]
fn synchronous_send_completes_when_matched() {
    let mut ranks = job(2);
    let s = isend(&mut ranks[0], &[5; 16], 1, 2, Mode::Sync);
    pump(&mut ranks);
    assert!(!done(&mut ranks[0], s));
    let mut buf = [0u8; 16];
    let r = irecv(&mut ranks[1], &mut buf, 0, 2);
    pump(&mut ranks);
    assert!(done(&mut ranks[0], s));
    assert_eq!(status(&mut ranks[1], r), (0, 2, 16));
}

#[test]
fn messages_to_self_need_no_transport() {
    let mut ranks = job(1);
    let data = pattern(50_000, 3);
    let mut got = vec![0u8; 50_000];
    let s = isend(&mut ranks[0], &data, 0, 1, Mode::Standard);
    let r = irecv(&mut ranks[0], &mut got, 0, 1);
    pump(&mut ranks);
    assert!(done(&mut ranks[0], s));
    assert_eq!(status(&mut ranks[0], r), (0, 1, 50_000));
    assert_eq!(got, data);
}

#[test]
fn truncated_receive_reports_an_error() {
    let mut ranks = job(2);
    isend(&mut ranks[0], &[1; 10], 1, 1, Mode::Standard);
    pump(&mut ranks);
    let mut buf = [0u8; 4];
    let r = irecv(&mut ranks[1], &mut buf, 0, 1);
    let req = ranks[1].reqs.get(r);
    assert!(req.done);
    assert_eq!(req.err, MPI_ERR_TRUNCATE);
    assert_eq!(req.status.byte_count(), 4);
}
