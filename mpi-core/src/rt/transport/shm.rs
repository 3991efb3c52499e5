//! The shared-memory transport: one ring per ordered pair of ranks of this
//! host in the node segment ([`crate::rt::shm`]), a FIFO per destination of
//! records waiting for ring space, and futex (or wake socket) wake-ups.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use super::{Incoming, MsgHdr, Transport};
use crate::rt::buf::SendData;
use crate::rt::shm::{self, kind, Consumer, Ctl, Producer, RingWatch, Segment};

/// A record waiting for space in the ring to one peer.
enum Out {
    Msg { hdr: MsgHdr, data: Vec<u8>, sreq: u64 },
    Stream { hdr: MsgHdr, ptr: *const u8, len: usize, off: usize, sreq: u64 },
}

/// The rings of this rank in the node segment. Peers are local ranks.
pub struct ShmTransport {
    seg: Segment,
    /// World rank of each local rank.
    local_world: Vec<usize>,
    my_local: usize,
    /// Producer end of the ring to each local rank (None for this rank).
    producers: Vec<Option<Producer>>,
    /// Consumer end of the ring from each other local rank, in local order.
    consumers: Vec<(usize, Consumer)>,
    pending_out: Vec<VecDeque<Out>>,
    /// Records in all of `pending_out`.
    n_pending: usize,
    /// The consumer [`Transport::next_incoming`] reads from.
    cursor: usize,
}

// SAFETY: queued stream pointers are user send buffers owned by a pending
// request, used only under the runtime lock; the segment is Send.
unsafe impl Send for ShmTransport {}

impl ShmTransport {
    /// The rings of local rank `my_local` in `seg`, whose local ranks have
    /// the world ranks `local_world`.
    pub fn new(seg: Segment, local_world: Vec<usize>, my_local: usize) -> ShmTransport {
        let n = local_world.len();
        let producers = (0..n).map(|l| (l != my_local).then(|| seg.producer(my_local, l))).collect();
        let consumers = (0..n).filter(|&l| l != my_local).map(|l| (l, seg.consumer(l, my_local))).collect();
        ShmTransport {
            seg,
            local_world,
            my_local,
            producers,
            consumers,
            pending_out: (0..n).map(|_| VecDeque::new()).collect(),
            n_pending: 0,
            cursor: 0,
        }
    }

    /// World ranks of the local ranks.
    pub fn local_world(&self) -> &[usize] {
        &self.local_world
    }

    pub fn my_local(&self) -> usize {
        self.my_local
    }

    /// Bytes of each ring.
    pub fn ring_size(&self) -> usize {
        self.seg.ring_size
    }

    /// Largest payload of one record.
    pub fn max_payload(&self) -> usize {
        self.seg.ring_size / 2 - shm::HDR
    }

    /// The control block of local rank `l`.
    pub fn ctl(&self, l: usize) -> &Ctl {
        self.seg.ctl(l)
    }

    /// The process id local rank `l` published in its control block.
    pub fn pid(&self, l: usize) -> i32 {
        self.seg.ctl(l).pid.load(Ordering::Acquire)
    }

    /// Marks this rank as finalizing in its control block.
    pub fn mark_finalized(&self) {
        self.seg.ctl(self.my_local).finalized.store(1, Ordering::Release);
    }

    /// Index in `consumers` of the ring from local rank `l` (every local rank
    /// but this one has one, in order).
    #[inline]
    fn consumer_index(&self, l: usize) -> usize {
        if l < self.my_local {
            l
        } else {
            l - 1
        }
    }

    /// The consumer end of the ring from local rank `l`, for the blocking
    /// receive's direct polling.
    #[inline]
    pub fn consumer(&mut self, l: usize) -> &mut Consumer {
        let i = self.consumer_index(l);
        &mut self.consumers[i].1
    }

    /// The watch on the ring from local rank `l`.
    pub fn watch(&self, l: usize) -> RingWatch {
        self.consumers[self.consumer_index(l)].1.watch()
    }

    /// Packs `data` (`bytes` packed) straight into a record of the ring to
    /// local rank `l`, when nothing waits to go
    /// there first and the ring has room. False if the caller must send the
    /// data itself.
    ///
    /// The ring's lines were last read by the receiver, so a store to one
    /// waits for the line to come back from that CPU. Copying a packed
    /// temporary into the ring is all such stores; packing in place spreads
    /// them over the packing loop, whose strided loads go on meanwhile
    /// (BENCHMARKS.md, derived datatypes).
    pub(crate) fn push_packed(&mut self, l: usize, hdr: &MsgHdr, data: SendData<'_>, bytes: usize) -> bool {
        if !self.pending_out[l].is_empty() {
            return false;
        }
        let p = self.producers[l].as_mut().expect("producer");
        if bytes > p.max_payload() {
            return false;
        }
        let (buf, count, dt) = (data.addr(), data.count(), data.dt());
        // SAFETY: buf holds `count` elements of dt (SendData::new's
        // contract), and the record's payload has exactly their packed size.
        if !p.try_push_with(hdr, bytes, |d| unsafe { dt.pack(buf, count, d) }) {
            return false;
        }
        shm::notify(self.seg.ctl(l));
        true
    }

    /// Pushes queued records while the rings take them; the send requests
    /// of streams whose last chunk went out go to `streamed`.
    fn push_queued(&mut self, streamed: &mut impl FnMut(u64)) -> bool {
        let mut did = false;
        for l in 0..self.pending_out.len() {
            let mut pushed_any = false;
            while let Some(front) = self.pending_out[l].front_mut() {
                let p = self.producers[l].as_mut().expect("producer");
                match front {
                    Out::Msg { hdr, data, .. } => {
                        if !p.try_push(hdr, data) {
                            break;
                        }
                    }
                    Out::Stream { hdr, ptr, len, off, .. } => {
                        let n = (*len - *off).min(p.max_payload());
                        hdr.len = *off as u64;
                        // SAFETY: ptr..ptr+len is the send data, kept valid by
                        // the send request until the stream is done.
                        let chunk = unsafe { std::slice::from_raw_parts(ptr.add(*off), n) };
                        if !p.try_push(hdr, chunk) {
                            break;
                        }
                        pushed_any = true;
                        *off += n;
                        if *off < *len {
                            continue;
                        }
                    }
                }
                pushed_any = true;
                if let Some(Out::Stream { sreq, .. }) = self.pending_out[l].pop_front() {
                    streamed(sreq);
                }
                self.n_pending -= 1;
            }
            if pushed_any {
                shm::notify(self.seg.ctl(l));
                did = true;
            }
        }
        did
    }
}

impl Transport for ShmTransport {
    #[inline]
    fn send(&mut self, l: usize, hdr: &MsgHdr, payload: &[u8], sreq: u64) {
        if self.pending_out[l].is_empty() {
            let p = self.producers[l].as_mut().expect("producer");
            if p.try_push(hdr, payload) {
                shm::notify(self.seg.ctl(l));
                return;
            }
        }
        self.pending_out[l].push_back(Out::Msg { hdr: *hdr, data: payload.to_vec(), sreq });
        self.n_pending += 1;
    }

    unsafe fn stream(&mut self, l: usize, hdr: MsgHdr, ptr: *const u8, len: usize, sreq: u64) {
        self.pending_out[l].push_back(Out::Stream { hdr, ptr, len, off: 0, sreq });
        self.n_pending += 1;
    }

    /// Pushes queued records while the rings take them. (Input needs no
    /// reading: the rings are read in place.)
    #[inline]
    fn flush(&mut self, streamed: &mut impl FnMut(u64)) -> bool {
        // (The common case, nothing queued, costs no call.)
        self.n_pending != 0 && self.push_queued(streamed)
    }

    /// Reads the rings in local order, each until it is empty.
    #[inline]
    fn next_incoming(&mut self) -> Option<Incoming> {
        while self.cursor < self.consumers.len() {
            let (l, c) = &mut self.consumers[self.cursor];
            if let Some((hdr, p)) = c.peek() {
                // SAFETY: the record stays in the ring until `consume` pops it.
                return Some(unsafe { Incoming::new(self.local_world[*l], hdr, p.as_ptr(), p.len()) });
            }
            self.cursor += 1;
        }
        self.cursor = 0;
        None
    }

    #[inline]
    fn consume(&mut self, rec: &Incoming) {
        self.consumers[self.cursor].1.pop(&rec.hdr);
    }

    #[inline]
    fn has_pending_out(&self) -> bool {
        self.n_pending != 0
    }

    fn withdraw(&mut self, l: usize, id: u64) -> bool {
        let queued = self.pending_out[l].iter().position(
            |o| matches!(o, Out::Msg { sreq, hdr, .. } if *sreq == id && (hdr.kind == kind::RTS || hdr.kind == kind::EAGER)),
        );
        match queued {
            Some(p) => {
                self.pending_out[l].remove(p);
                self.n_pending -= 1;
                true
            }
            None => false,
        }
    }

    /// A rank of this host whose process ended without entering
    /// `MPI_Finalize` (gone, or a zombie its launcher has not reaped).
    fn dead_peer(&self) -> Option<(usize, i32)> {
        self.dead_peers(&[]).into_iter().next()
    }
}

impl ShmTransport {
    /// The ranks of this host (world rank, pid) whose process ended without
    /// entering `MPI_Finalize` (gone, or a zombie its launcher has not
    /// reaped), but those in `known`.
    pub fn dead_peers(&self, known: &[usize]) -> Vec<(usize, i32)> {
        let mut dead = Vec::new();
        for (l, &w) in self.local_world.iter().enumerate() {
            let c = self.seg.ctl(l);
            if l == self.my_local || c.finalized.load(Ordering::Acquire) != 0 || known.contains(&w) {
                continue;
            }
            let pid = c.pid.load(Ordering::Acquire);
            if pid <= 0 {
                continue;
            }
            // SAFETY: signal 0 only checks that the process exists.
            let gone = unsafe { libc::kill(pid, 0) } == -1
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
            let zombie = || {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|t| t.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
                    .unwrap_or(false)
            };
            if gone || zombie() {
                dead.push((w, pid));
            }
        }
        dead
    }
}
