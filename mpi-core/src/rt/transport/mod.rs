//! Transports: how the point-to-point engine's records reach other
//! processes and come back from them.
//!
//! The engine ([`super::p2p::Engine`]) speaks in records (a [`MsgHdr`] and a
//! payload) and keeps one [`Route`] per peer, which names the transport that
//! reaches it and the transport's own number for the peer. Every transport
//! implements [`Transport`]: the engine holds each one as a concrete field
//! and routes with a `match` on the route, so a message costs a direct call
//! the compiler can inline, never a virtual one.
//!
//! * [`shm::ShmTransport`]: rings in the node segment, to ranks of this host.
//! * [`super::tcp::Tcp`]: sockets, to ranks on other hosts and other jobs.
//! * [`loopback::Loopback`]: in-memory queues between engines of one process,
//!   for unit tests of the engine and the collectives without processes.
//!
//! What is specific to one transport (polling one peer's ring or socket for
//! a blocking receive, packing straight into a ring record, ring watches,
//! reading a peer's memory with `process_vm_readv`) stays a method of that
//! transport, called through its field.

pub mod loopback;
pub mod shm;

pub use super::shm::MsgHdr;

/// How the engine reaches one peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// This rank: records are handled at once.
    Me,
    /// A rank of this host, by its local rank in the node segment.
    Shm(u32),
    /// A rank on another host (or a process of another job), by world rank.
    Tcp,
    /// An engine of this process, by world rank.
    Loopback,
}

/// One record a transport received, handed to the engine's matching. The
/// payload lives in the transport (a ring record, a read buffer) and stays
/// valid until [`Transport::consume`] for this record; the engine may send
/// through any transport meanwhile (its answers), but takes no other record
/// from this one before consuming this.
pub struct Incoming {
    /// World rank (or peer index of another job's process) of the sender.
    pub from: usize,
    pub hdr: MsgHdr,
    payload: *const u8,
    len: usize,
}

impl Incoming {
    /// A record whose payload is `len` bytes at `payload`.
    ///
    /// # Safety
    /// The bytes must stay valid, and unchanged, until the record is consumed.
    pub unsafe fn new(from: usize, hdr: MsgHdr, payload: *const u8, len: usize) -> Incoming {
        Incoming { from, hdr, payload, len }
    }

    /// The record's payload.
    ///
    /// # Safety
    /// Only before [`Transport::consume`] of this record (see [`Incoming::new`]);
    /// the slice must not be used after that.
    #[inline]
    pub unsafe fn payload<'a>(&self) -> &'a [u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: valid until consumed (the constructor's contract, and the
        // caller's).
        unsafe { std::slice::from_raw_parts(self.payload, self.len) }
    }
}

/// What the engine needs from a transport. `peer` is the transport's own
/// number for the destination (see [`Route`]).
pub trait Transport {
    /// Hands one record to `peer`. What cannot be written now is queued:
    /// records to one peer always leave in the order they were handed over.
    /// `sreq` names the send request the record belongs to (0 if none), so
    /// that a queued one can be withdrawn ([`Transport::withdraw`]).
    fn send(&mut self, peer: usize, hdr: &MsgHdr, payload: &[u8], sreq: u64);

    /// Sends `len` bytes at `ptr` to `peer` as `DATA` records made from
    /// `hdr` (each with its offset in `len`): the streaming answer to a
    /// `CTS`.
    ///
    /// # Safety
    /// `ptr` addresses `len` readable bytes that stay valid and unchanged
    /// until `sreq` is reported done by [`Transport::flush`].
    unsafe fn stream(&mut self, peer: usize, hdr: MsgHdr, ptr: *const u8, len: usize, sreq: u64);

    /// Writes queued output and reads what arrived (made available to
    /// [`Transport::next_incoming`]). The send requests of streams now fully
    /// written go to `streamed`. True if anything was written or read.
    fn flush(&mut self, streamed: &mut impl FnMut(u64)) -> bool;

    /// The next record that arrived, if any (see [`Incoming`]).
    fn next_incoming(&mut self) -> Option<Incoming>;

    /// Releases the record last returned by [`Transport::next_incoming`].
    fn consume(&mut self, rec: &Incoming);

    /// Whether records wait to be written.
    fn has_pending_out(&self) -> bool;

    /// Removes a record of send request `sreq` (an `EAGER` or `RTS`) to
    /// `peer` that is still queued here, for the cancel of that send. True
    /// if it was removed, false if it left already (or the transport does
    /// not withdraw records).
    fn withdraw(&mut self, _peer: usize, _sreq: u64) -> bool {
        false
    }

    /// A peer process that ended without finalizing: its world rank and
    /// process id (for transports that can tell).
    fn dead_peer(&self) -> Option<(usize, i32)> {
        None
    }

    /// The file descriptors a rank about to sleep must watch for input of
    /// this transport (none for transports that wake sleepers themselves).
    fn poll_fds(&self, _fds: &mut Vec<libc::pollfd>) {}
}

#[cfg(test)]
mod tests;
