//! What one rank does in a shared-memory collective ([`flat`](super::flat)),
//! blocking or nonblocking: the kinds of [`NbKind`]. `shm::ops` checks the
//! arguments and picks a part; these only move data.
//!
//! * [`Arrive`]: publish the arrival, wait for every rank's (Barrier).
//! * [`Moves`]: write a packed user buffer to this rank's buffer, read
//!   pieces of other ranks' buffers into user buffers (Bcast, Gather,
//!   Scatter, Allgather(v), Alltoall).
//! * [`Reduce`]: write, then combine (a piece of) the buffers of a range of
//!   ranks in rank order (Reduce, Allreduce, Scan, Exscan, Reduce_scatter).
//! * [`Blank`]: the part of a rank whose call failed its checks, so the
//!   others are not stuck.

use std::ops::Range;
use std::sync::Arc;

use super::flat::{Flat, NbKind};
use super::sched::{Packed, Reducer};
use crate::rt::datatype::Dtype;
use crate::rt::error::MpiResult;

/// `count` elements of `dt` at user address `p`.
#[derive(Clone)]
pub struct Typed {
    pub p: Packed,
    pub count: usize,
    pub dt: Arc<Dtype>,
}

impl Typed {
    /// Its packed bytes.
    pub fn bytes(&self) -> usize {
        self.dt.packed_size(self.count)
    }
}

/// Publishes `Some(bytes)` without data, or only the arrival; reads nothing.
#[derive(Clone)]
pub struct Blank(pub Option<usize>);

impl NbKind for Blank {
    fn clone_box(&self) -> Box<dyn NbKind> {
        Box::new(self.clone())
    }
    fn data(&self) -> bool {
        self.0.is_some()
    }
    unsafe fn write(&mut self, _: &Flat) -> Option<usize> {
        self.0
    }
    fn peers(&self, _: &Flat) -> Range<usize> {
        0..0
    }
    unsafe fn read(&mut self, _: &Flat) -> MpiResult<()> {
        Ok(())
    }
}

/// Publishes this rank's length only (its data goes as messages: the
/// operation's kind is `Msg`) and waits for every rank's arrival; fails if
/// a rank published other bytes or none (see [`Flat::check_all_len`]).
#[derive(Clone)]
pub struct Guard(pub usize);

impl NbKind for Guard {
    fn clone_box(&self) -> Box<dyn NbKind> {
        Box::new(self.clone())
    }
    fn data(&self) -> bool {
        true
    }
    unsafe fn write(&mut self, _: &Flat) -> Option<usize> {
        Some(self.0)
    }
    fn peers(&self, f: &Flat) -> Range<usize> {
        0..f.size
    }
    fn peers_have_data(&self) -> bool {
        false
    }
    unsafe fn read(&mut self, f: &Flat) -> MpiResult<()> {
        f.check_all_len(self.0)
    }
}

/// Publishes the arrival and waits for every rank's.
#[derive(Clone)]
pub struct Arrive;

impl NbKind for Arrive {
    fn clone_box(&self) -> Box<dyn NbKind> {
        Box::new(self.clone())
    }
    fn data(&self) -> bool {
        false
    }
    unsafe fn write(&mut self, _: &Flat) -> Option<usize> {
        None
    }
    fn peers(&self, f: &Flat) -> Range<usize> {
        0..f.size
    }
    fn peers_have_data(&self) -> bool {
        false
    }
    unsafe fn read(&mut self, _: &Flat) -> MpiResult<()> {
        Ok(())
    }
}

/// A piece of another rank's buffer to read: `to.bytes()` bytes at `off`
/// of rank `rank`'s buffer, which must hold `expect` bytes.
#[derive(Clone)]
pub struct Read {
    pub rank: usize,
    pub off: usize,
    pub expect: usize,
    pub to: Typed,
}

/// Writes `src` (if any) and publishes `publish` bytes (None: the arrival
/// only), then does `reads`.
#[derive(Clone)]
pub struct Moves {
    pub src: Option<Typed>,
    pub publish: Option<usize>,
    pub reads: Vec<Read>,
}

// SAFETY: the user buffers are lent for the operation, which runs under the
// runtime lock or in the calling thread.
unsafe impl Send for Moves {}

impl NbKind for Moves {
    fn clone_box(&self) -> Box<dyn NbKind> {
        Box::new(self.clone())
    }
    fn data(&self) -> bool {
        self.publish.is_some()
    }
    unsafe fn write(&mut self, f: &Flat) -> Option<usize> {
        if let Some(s) = &self.src {
            // SAFETY: `s` views a user buffer still lent (this method's
            // contract); this rank's buffer of the operation was taken for the
            // bytes it publishes, which `s.bytes()` are.
            unsafe { s.dt.pack(s.p, s.count, std::slice::from_raw_parts_mut(f.buf(f.rank), s.bytes())) };
        }
        self.publish
    }
    fn peers(&self, _: &Flat) -> Range<usize> {
        let lo = self.reads.iter().map(|r| r.rank).min();
        let hi = self.reads.iter().map(|r| r.rank + 1).max();
        lo.unwrap_or(0)..hi.unwrap_or(0)
    }
    unsafe fn read(&mut self, f: &Flat) -> MpiResult<()> {
        for r in &self.reads {
            f.check_len(r.rank..r.rank + 1, r.expect)?;
            // SAFETY: rank `r.rank` published `r.expect` bytes (checked just
            // before), which hold `r.to.bytes()` at `r.off`, written before it
            // published; `r.to` views a user buffer still lent (the contract).
            unsafe { r.to.dt.unpack(std::slice::from_raw_parts(f.buf(r.rank).add(r.off), r.to.bytes()), r.to.p) };
        }
        Ok(())
    }
}

/// Writes `n_in` elements of `dt` at `input`; combines `n` elements at
/// byte `off` of the buffers of ranks `from` in rank order into `out`
/// (nothing if empty). `n_in == n` and `off == 0` but for Reduce_scatter.
#[derive(Clone)]
pub struct Reduce {
    pub from: Range<usize>,
    pub input: *const u8,
    pub n_in: usize,
    pub off: usize,
    pub out: Packed,
    pub n: usize,
    pub dt: Arc<Dtype>,
    pub red: Reducer,
}

// SAFETY: as for `Moves`.
unsafe impl Send for Reduce {}

impl NbKind for Reduce {
    fn clone_box(&self) -> Box<dyn NbKind> {
        Box::new(self.clone())
    }
    fn data(&self) -> bool {
        true
    }
    unsafe fn write(&mut self, f: &Flat) -> Option<usize> {
        let bytes = self.dt.packed_size(self.n_in);
        // SAFETY: `input` holds `n_in` elements of a user buffer still lent
        // (this method's contract); this rank's buffer was taken for `bytes`.
        unsafe { self.dt.pack(self.input, self.n_in, std::slice::from_raw_parts_mut(f.buf(f.rank), bytes)) };
        Some(bytes)
    }
    fn peers(&self, _: &Flat) -> Range<usize> {
        self.from.clone()
    }
    unsafe fn read(&mut self, f: &Flat) -> MpiResult<()> {
        if self.from.is_empty() {
            return Ok(());
        }
        let (bytes, dt, off) = (self.dt.packed_size(self.n), &self.dt, self.off);
        f.check_len(self.from.clone(), self.dt.packed_size(self.n_in))?;
        // In rank order (in a blocking call outside the lock: a user
        // function may call MPI).
        let mut tmp = Vec::new();
        let out: Packed = if dt.contig {
            self.out
        } else {
            tmp.resize(bytes, 0u8);
            tmp.as_mut_ptr()
        };
        // SAFETY: every rank of `from` published `n_in` elements (checked
        // above), whose `bytes` at `off` are inside; `out` is the lent
        // contiguous output or our temporary of `bytes`, not the segment.
        unsafe { std::ptr::copy_nonoverlapping(f.buf(self.from.start).add(off), out, bytes) };
        for r in self.from.clone().skip(1) {
            // SAFETY: as above, rank `r`'s published bytes and `out`.
            unsafe { self.red.apply(f.buf(r).add(off), out, bytes, true)? };
        }
        if !dt.contig {
            // SAFETY: `self.out` addresses `n` elements of a lent user buffer.
            unsafe { dt.unpack(&tmp, self.out) };
        }
        Ok(())
    }
}
