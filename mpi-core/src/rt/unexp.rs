//! The unexpected-message queue: messages that arrived before a receive
//! matching them was posted, kept per context and source in arrival order.
//!
//! A receive from one source looks only at that source's messages, near
//! the front of its queue; one queue for all made a root that takes small
//! messages from many ranks running ahead of it (a linear Gatherv, a
//! master collecting from workers) scan and shift thousands of other
//! ranks' messages on every receive. `MPI_ANY_SOURCE` takes the earliest
//! arrival over all sources of the context (each message carries its
//! arrival number); a source's messages stay in order, as matching must
//! not let one overtake another.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use mpi_api::abi::{MPI_ANY_SOURCE, MPI_ANY_TAG};

use super::p2p::Unexp;

/// Hashes the one `u64` key (context and source) with a multiply.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Emptied queues kept for reuse.
const SPARE: usize = 16;

fn key(ctx: u32, src: i32) -> u64 {
    (ctx as u64) << 32 | src as u32 as u64
}

/// Messages waiting for their receive (see the module documentation).
#[derive(Default)]
pub struct UnexpQueue {
    /// Per context and source: arrival number and message, oldest first.
    /// A queue that becomes empty leaves the map (programs that make and
    /// free many communicators would otherwise keep one per context).
    by_src: HashMap<u64, VecDeque<(u64, Unexp)>, BuildHasherDefault<KeyHasher>>,
    /// Emptied queues kept for reuse (their memory), at most `SPARE`.
    spare: Vec<VecDeque<(u64, Unexp)>>,
    /// Arrival number of the next message.
    next: u64,
    len: usize,
}

impl UnexpQueue {
    /// Messages waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a message that arrived now.
    pub fn push(&mut self, u: Unexp) {
        let spare = &mut self.spare;
        self.by_src
            .entry(key(u.ctx, u.src))
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push_back((self.next, u));
        self.next += 1;
        self.len += 1;
    }

    /// The queue and place of the first message a receive of (`ctx`,
    /// `src`, `tag`) matches, wildcards allowed.
    fn find(&self, ctx: u32, src: i32, tag: i32) -> Option<(u64, usize)> {
        if self.len == 0 {
            return None;
        }
        if src != MPI_ANY_SOURCE {
            let k = key(ctx, src);
            return self.by_src.get(&k)?.iter().position(|(_, u)| tag_matches(tag, u.tag)).map(|i| (k, i));
        }
        self.earliest(|k| (k >> 32) as u32 == ctx, |u| tag_matches(tag, u.tag))
    }

    /// The queue and place of the earliest arrival for which `pred` holds,
    /// among the queues whose key `queue` takes.
    fn earliest(&self, queue: impl Fn(u64) -> bool, pred: impl Fn(&Unexp) -> bool) -> Option<(u64, usize)> {
        let mut best: Option<(u64, u64, usize)> = None;
        for (&k, q) in self.by_src.iter().filter(|(&k, _)| queue(k)) {
            if let Some(i) = q.iter().position(|(_, u)| pred(u)) {
                if best.is_none_or(|(n, _, _)| q[i].0 < n) {
                    best = Some((q[i].0, k, i));
                }
            }
        }
        best.map(|(_, k, i)| (k, i))
    }

    /// Whether a message matches.
    pub fn any(&self, ctx: u32, src: i32, tag: i32) -> bool {
        self.find(ctx, src, tag).is_some()
    }

    /// The first message that matches, left in the queue.
    pub fn first(&self, ctx: u32, src: i32, tag: i32) -> Option<&Unexp> {
        let (k, i) = self.find(ctx, src, tag)?;
        Some(&self.by_src[&k][i].1)
    }

    /// Takes the first message that matches.
    pub fn take(&mut self, ctx: u32, src: i32, tag: i32) -> Option<Unexp> {
        let (k, i) = self.find(ctx, src, tag)?;
        self.remove(k, i)
    }

    /// Takes the earliest message for which `pred` holds, looking at every
    /// one (for cancelling a send: rare).
    pub fn take_where(&mut self, pred: impl Fn(&Unexp) -> bool) -> Option<Unexp> {
        let (k, i) = self.earliest(|_| true, pred)?;
        self.remove(k, i)
    }

    fn remove(&mut self, k: u64, i: usize) -> Option<Unexp> {
        let q = self.by_src.get_mut(&k)?;
        let (_, u) = q.remove(i)?;
        if q.is_empty() {
            let q = self.by_src.remove(&k).expect("the queue just used");
            if self.spare.len() < SPARE && q.capacity() <= 64 {
                self.spare.push(q);
            }
        }
        self.len -= 1;
        Some(u)
    }
}

/// Whether a receive's tag takes a message's: `MPI_ANY_TAG` only user tags
/// (at least 0), never the library's negative ones (partitioned channels).
fn tag_matches(want: i32, tag: i32) -> bool {
    want == tag || (want == MPI_ANY_TAG && tag >= 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::p2p::Body;

    fn msg(ctx: u32, src: i32, tag: i32, len: usize) -> Unexp {
        Unexp { ctx, src, tag, from: src as usize, len, body: Body::Eager { data: vec![0; len], sync_sreq: None } }
    }

    #[test]
    fn a_source_keeps_its_order_and_any_source_takes_the_earliest() {
        let mut q = UnexpQueue::default();
        q.push(msg(1, 2, 7, 10));
        q.push(msg(1, 1, 7, 11));
        q.push(msg(1, 2, 7, 12));
        q.push(msg(2, 1, 7, 13));
        q.push(msg(1, 1, 8, 14));
        assert_eq!(q.len(), 5);
        // Source 1, tag 8: skips the older tag-7 message of the same source.
        assert_eq!(q.take(1, 1, 8).map(|u| u.len), Some(14));
        // Any source: the earliest arrival of the context.
        assert_eq!(q.first(1, MPI_ANY_SOURCE, 7).map(|u| u.len), Some(10));
        assert_eq!(q.take(1, MPI_ANY_SOURCE, MPI_ANY_TAG).map(|u| u.len), Some(10));
        assert_eq!(q.take(1, MPI_ANY_SOURCE, 7).map(|u| u.len), Some(11));
        // Another context's message never matches.
        assert!(!q.any(1, 1, 7));
        assert_eq!(q.take(1, 2, MPI_ANY_TAG).map(|u| u.len), Some(12));
        assert!(q.take(1, MPI_ANY_SOURCE, MPI_ANY_TAG).is_none());
        assert_eq!(q.take_where(|u| u.ctx == 2).map(|u| u.len), Some(13));
        assert!(q.is_empty() && q.by_src.is_empty());
        // Emptied queues are kept for reuse, a bounded number.
        assert!(!q.spare.is_empty() && q.spare.len() <= SPARE);
    }
}
