//! The fixed-size records of the level-of-detail cache and their byte views.
//!
//! Every record is `repr(C)`, made of integers only and without padding, so
//! any bit pattern is a valid value and a slice of records can be viewed in
//! place in a memory-mapped file (8-byte aligned).

/// One MPI call of a rank (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Ev {
    /// Start, ns on the trace's reference clock.
    pub t_start: i64,
    /// Duration in ns; [`LONG`] when it does not fit (then it is in the
    /// rank's table of long durations).
    pub dur: u32,
    /// Index into [`crate::Lod::names`].
    pub name: u16,
    /// [`flags`].
    pub flags: u16,
}

/// `Ev::dur` of a call whose duration is in the table of long durations.
pub const LONG: u32 = u32::MAX;

/// Flags of an [`Ev`].
pub mod flags {
    /// The call never returned (the process died inside it); it is drawn
    /// up to the last time known of the rank.
    pub const UNFINISHED: u16 = 1;
    /// The call returned an error code.
    pub const FAILED: u16 = 2;
}

/// A duration that does not fit in [`Ev::dur`] (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Long {
    /// Index of the event.
    pub idx: u64,
    pub dur: i64,
}

/// One bucket of the zoom pyramid (40 bytes): the calls of a rank that
/// *start* in `[origin + key * width, origin + (key + 1) * width)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Bucket {
    pub key: i64,
    /// Sum of the durations of those calls (time in MPI), ns.
    pub busy: i64,
    /// Sum of their bytes (sent or received).
    pub bytes: i64,
    /// Latest end of those calls, ns.
    pub max_end: i64,
    pub count: u32,
    /// The call with the most time (ties: more calls, then lower id).
    pub dominant: u16,
    /// [`flags`] of any call in the bucket, or-ed.
    pub flags: u16,
}

/// Marker for records that may be viewed as bytes and back.
///
/// # Safety
/// Implementors are `repr(C)`, contain only integers, have no padding and
/// an alignment of at most 8.
pub unsafe trait Pod: Copy + 'static {}
// SAFETY: repr(C), integer fields only, 16 bytes without padding (the
// size is asserted below).
unsafe impl Pod for Ev {}
// SAFETY: repr(C), integer fields only, 16 bytes without padding.
unsafe impl Pod for Long {}
// SAFETY: repr(C), integer fields only, 40 bytes without padding.
unsafe impl Pod for Bucket {}
// SAFETY: an integer: every bit pattern is a value, alignment 8.
unsafe impl Pod for u64 {}

const _: () = assert!(std::mem::size_of::<Ev>() == 16);
const _: () = assert!(std::mem::size_of::<Long>() == 16);
const _: () = assert!(std::mem::size_of::<Bucket>() == 40);

/// The bytes of a slice of records.
pub fn as_bytes<T: Pod>(s: &[T]) -> &[u8] {
    // SAFETY: T is Pod (no padding), so every byte is initialized.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}

/// Views `len` records at byte `offset` of `bytes`, if they are in bounds
/// and aligned.
pub fn view<T: Pod>(bytes: &[u8], offset: usize, len: usize) -> Option<&[T]> {
    let size = len.checked_mul(std::mem::size_of::<T>())?;
    let end = offset.checked_add(size)?;
    let b = bytes.get(offset..end)?;
    if b.as_ptr().align_offset(std::mem::align_of::<T>()) != 0 {
        return None;
    }
    // SAFETY: in bounds, aligned, and every bit pattern is a valid T.
    Some(unsafe { std::slice::from_raw_parts(b.as_ptr() as *const T, len) })
}
