//! The loopback transport: engines of one process, one per rank of a job
//! that exists only in that process, exchange records through in-memory
//! queues. It lets unit tests run the point-to-point engine and the
//! collective schedules over several ranks without starting processes.
//!
//! Rendezvous works as between hosts: the receiver of an `RTS` answers
//! `CTS` and the sender streams `DATA` records. Nobody sleeps on a loopback
//! engine: whoever drives the engines (threads, or a test calling each
//! one's progress in turn) polls.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::{Incoming, MsgHdr, Transport};

/// Payload bytes of one `DATA` record of a stream.
const STREAM_CHUNK: usize = 32 << 10;

/// One record in a queue: sender, header, payload.
struct Record {
    from: usize,
    hdr: MsgHdr,
    data: Vec<u8>,
}

/// The queues of one in-process job: one per rank, of the records sent to it.
struct Hub {
    inboxes: Vec<Mutex<VecDeque<Record>>>,
}

/// One rank's end of the loopback transport. Peers are world ranks.
pub struct Loopback {
    me: usize,
    hub: Arc<Hub>,
    /// The record handed to the engine and not yet consumed.
    current: Option<Record>,
    /// Streams written since the last `flush` (their send requests).
    streamed: Vec<u64>,
}

impl Loopback {
    /// The ends of a job of `n` ranks, by rank.
    pub fn job(n: usize) -> Vec<Loopback> {
        let hub = Arc::new(Hub { inboxes: (0..n).map(|_| Mutex::new(VecDeque::new())).collect() });
        (0..n).map(|me| Loopback { me, hub: hub.clone(), current: None, streamed: Vec::new() }).collect()
    }

    fn push(&self, to: usize, hdr: &MsgHdr, payload: &[u8]) {
        let mut hdr = *hdr;
        hdr.payload = payload.len() as u32;
        let rec = Record { from: self.me, hdr, data: payload.to_vec() };
        self.hub.inboxes[to].lock().unwrap_or_else(|e| e.into_inner()).push_back(rec);
    }
}

impl Transport for Loopback {
    fn send(&mut self, to: usize, hdr: &MsgHdr, payload: &[u8], _sreq: u64) {
        self.push(to, hdr, payload);
    }

    /// Writes the whole stream at once (the queue has no limit).
    unsafe fn stream(&mut self, to: usize, hdr: MsgHdr, ptr: *const u8, len: usize, sreq: u64) {
        let mut off = 0;
        while off < len {
            let n = (len - off).min(STREAM_CHUNK);
            let h = MsgHdr { len: off as u64, ..hdr };
            // SAFETY: ptr..ptr+len is the send data, valid until the stream
            // is reported done (this function's contract).
            let chunk = unsafe { std::slice::from_raw_parts(ptr.add(off), n) };
            self.push(to, &h, chunk);
            off += n;
        }
        self.streamed.push(sreq);
    }

    fn flush(&mut self, streamed: &mut impl FnMut(u64)) -> bool {
        let did = !self.streamed.is_empty();
        for id in self.streamed.drain(..) {
            streamed(id);
        }
        did
    }

    fn next_incoming(&mut self) -> Option<Incoming> {
        let rec = self.hub.inboxes[self.me].lock().unwrap_or_else(|e| e.into_inner()).pop_front()?;
        let rec = self.current.insert(rec);
        // SAFETY: the record is kept in `current` until `consume` (moving
        // it there did not move its payload's heap block).
        Some(unsafe { Incoming::new(rec.from, rec.hdr, rec.data.as_ptr(), rec.data.len()) })
    }

    fn consume(&mut self, _rec: &Incoming) {
        self.current = None;
    }

    /// Records are delivered when sent; only stream completions wait for
    /// the next `flush`.
    fn has_pending_out(&self) -> bool {
        !self.streamed.is_empty()
    }
}
