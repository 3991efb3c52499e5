//! The fixed-size binary record of a journal.
//!
//! Every intercepted call, region mark and request completion is one
//! [`Record`] of [`RECORD_SIZE`] bytes, written in place into a memory-mapped
//! journal file (see [`crate::journal`]). The first word (`head`) is written
//! last with release ordering; a zero head marks a free slot, so a reader of a
//! journal left behind by a crashed process takes every record up to the first
//! zero head.

/// Size in bytes of one journal record.
pub const RECORD_SIZE: usize = 96;

/// What a record describes (byte 2 of `head`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// An MPI call; `call` is its index in the API table.
    Call = 1,
    /// `mpitrace_region_begin`; `aux` is the region id.
    RegionBegin = 2,
    /// `mpitrace_region_end`; `aux` is the region id.
    RegionEnd = 3,
    /// A request completed inside the preceding `Wait*`/`Test*` call; `call`
    /// is the call that started the request (`MPI_Irecv`, `MPI_Start`...).
    Completion = 4,
}

impl Kind {
    pub fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Call,
            2 => Kind::RegionBegin,
            3 => Kind::RegionEnd,
            4 => Kind::Completion,
            _ => return None,
        })
    }
    /// The kind named `name` in the `kind` column of the events table.
    pub fn from_name(name: &str) -> Option<Kind> {
        [Kind::Call, Kind::RegionBegin, Kind::RegionEnd, Kind::Completion].into_iter().find(|k| k.name() == name)
    }
    /// Name used in the `kind` column of the events table.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Call => "call",
            Kind::RegionBegin => "region_begin",
            Kind::RegionEnd => "region_end",
            Kind::Completion => "completion",
        }
    }
}

/// Record flags (byte 3 of `head`).
pub mod flags {
    /// The call returned; `t_exit` and `rc` are valid.
    pub const DONE: u8 = 1;
    /// A completion whose status says the request was cancelled.
    pub const CANCELLED: u8 = 2;
    /// A completion of a persistent request (it stays allocated).
    pub const PERSISTENT: u8 = 4;
    /// A completion of a request the shim had no record of (started in a
    /// nested call, or a duplicate handle in the array).
    pub const UNKNOWN_REQUEST: u8 = 8;
    /// `MPI_STATUS_IGNORE` was passed and the shim substituted its own status.
    pub const OWN_STATUS: u8 = 16;
    /// The call created a communicator; `aux` is its slot.
    pub const NEW_COMM: u8 = 32;
    /// A collective given `MPI_IN_PLACE` as its send or receive buffer
    /// (the counts and datatype of that side are not significant).
    pub const IN_PLACE: u8 = 64;
    /// A collective with a receive datatype of its own (`MPI_Gather`...):
    /// `tag`, which collectives have none of, holds it (rows have it as
    /// `recv_datatype`).
    pub const RECV_TYPE: u8 = 128;
}

/// Value of `comm` when the call has no communicator.
pub const NO_COMM: u32 = u32::MAX;
/// Value of `peer`/`root` when the call has none (distinct from MPI_PROC_NULL = -1).
pub const NO_RANK: i32 = i32::MIN;
/// Value of integer fields that do not apply.
pub const NONE_I32: i32 = i32::MIN;
/// Value of 64-bit fields that do not apply.
pub const NONE_I64: i64 = i64::MIN;

/// One journal record, laid out exactly as stored (little-endian, 96 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// `call` (bits 0-15) | `kind` (bits 16-23) | `flags` (bits 24-31); 0 = free slot.
    pub head: u32,
    /// Return code of the call.
    pub rc: i32,
    /// Clock value at entry (ticks of the journal's clock).
    pub t_enter: u64,
    /// Clock value at exit (0 while the call is in progress).
    pub t_exit: u64,
    /// Return address in the caller (call site).
    pub site: u64,
    /// Communicator slot of this process (see the side file), or [`NO_COMM`].
    pub comm: u32,
    /// Peer as world rank (destination of a send, source of a receive,
    /// target of RMA); negative MPI constants (PROC_NULL, ANY_SOURCE) kept.
    pub peer: i32,
    pub tag: i32,
    /// Datatype handle.
    pub datatype: i32,
    pub count: i64,
    /// Bytes sent, received (from the status) or contributed.
    pub bytes: i64,
    /// Per-(comm, src, dst, tag) message sequence number for point-to-point,
    /// per-communicator sequence number for collectives.
    pub seq: i64,
    /// Request handle (nonblocking and persistent operations, completions).
    pub request: i32,
    /// Root of a rooted collective as world rank (MPI_ROOT/MPI_PROC_NULL kept).
    pub root: i32,
    /// Reduction operation handle.
    pub op: i32,
    /// Region id (region records), Pcontrol level (`MPI_Pcontrol`).
    pub aux: i32,
    /// Bytes received by a collective (this rank's receive buffer).
    pub recv_bytes: i64,
}

const _: () = assert!(std::mem::size_of::<Record>() == RECORD_SIZE);

impl Default for Record {
    fn default() -> Self {
        Record {
            head: 0,
            rc: 0,
            t_enter: 0,
            t_exit: 0,
            site: 0,
            comm: NO_COMM,
            peer: NO_RANK,
            tag: NONE_I32,
            datatype: NONE_I32,
            count: NONE_I64,
            bytes: NONE_I64,
            seq: NONE_I64,
            request: NONE_I32,
            root: NO_RANK,
            op: NONE_I32,
            aux: NONE_I32,
            recv_bytes: NONE_I64,
        }
    }
}

/// Builds a `head` word.
pub const fn head(call: u16, kind: Kind, flags: u8) -> u32 {
    call as u32 | (kind as u32) << 16 | (flags as u32) << 24
}

impl Record {
    pub fn call(&self) -> u16 {
        self.head as u16
    }
    pub fn kind(&self) -> Option<Kind> {
        Kind::from_u8((self.head >> 16) as u8)
    }
    pub fn flags(&self) -> u8 {
        (self.head >> 24) as u8
    }
    pub fn is_done(&self) -> bool {
        self.flags() & flags::DONE != 0
    }

    /// The record as bytes.
    pub fn as_bytes(&self) -> &[u8; RECORD_SIZE] {
        // SAFETY: Record is repr(C), 96 bytes without padding (asserted
        // above), and every bit pattern of its fields is a valid byte.
        unsafe { &*(self as *const Record as *const [u8; RECORD_SIZE]) }
    }

    /// Reads a record from bytes (any alignment).
    pub fn from_bytes(b: &[u8; RECORD_SIZE]) -> Record {
        // SAFETY: every bit pattern is a valid Record (integers only); the
        // read is unaligned-safe.
        unsafe { std::ptr::read_unaligned(b.as_ptr() as *const Record) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_roundtrip() {
        let r = Record { head: head(513, Kind::Completion, flags::DONE | flags::CANCELLED), ..Default::default() };
        assert_eq!(r.call(), 513);
        assert_eq!(r.kind(), Some(Kind::Completion));
        assert!(r.is_done());
        assert_eq!(r.flags() & flags::CANCELLED, flags::CANCELLED);
        assert_eq!(Record::from_bytes(r.as_bytes()), r);
    }
}
