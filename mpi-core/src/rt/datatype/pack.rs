//! `MPI_Pack`/`MPI_Unpack` and their "external32" forms: data of a type
//! to and from a packed buffer, in the native or the external
//! representation.

use super::*;

/// Which format a packed buffer holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PackRep {
    Native,
    External32,
}

impl Dtype {
    /// Bytes of `count` elements packed in `rep`.
    pub fn packed_bytes(&self, count: usize, rep: PackRep) -> usize {
        match rep {
            PackRep::Native => self.packed_size(count),
            PackRep::External32 => self.ext_size(count),
        }
    }

    /// Packs `count` elements at `src` into `out` (`packed_bytes` long) in `rep`.
    ///
    /// # Safety
    /// `src` holds `count` elements of this type.
    pub unsafe fn pack_as(&self, rep: PackRep, src: *const u8, count: usize, out: &mut [u8]) {
        match rep {
            // SAFETY: this function's contract.
            PackRep::Native => unsafe { self.pack(src, count, out) },
            PackRep::External32 => {
                let mut tmp = vec![0u8; self.packed_size(count)];
                // SAFETY: this function's contract.
                unsafe { self.pack(src, count, &mut tmp) };
                self.native_to_ext(&tmp, count, out);
            }
        }
    }

    /// Unpacks `count` elements in `rep` from `src` (`packed_bytes` long) to `dst`.
    ///
    /// # Safety
    /// `dst` has room for `count` elements of this type.
    pub unsafe fn unpack_as(&self, rep: PackRep, src: &[u8], count: usize, dst: *mut u8) {
        match rep {
            // SAFETY: this function's contract.
            PackRep::Native => unsafe { self.unpack(src, dst) },
            PackRep::External32 => {
                let mut tmp = vec![0u8; self.packed_size(count)];
                self.ext_to_native(src, count, &mut tmp);
                // SAFETY: this function's contract.
                unsafe { self.unpack(&tmp, dst) };
            }
        }
    }
}

// The packing walks over the layout.
impl Dtype {
    /// Packs `count` elements at `src` into `dst` (exactly `packed_size` bytes).
    ///
    /// # Safety
    /// `src` must address `count` elements of this type.
    pub unsafe fn pack(&self, src: *const u8, count: usize, dst: &mut [u8]) {
        debug_assert_eq!(dst.len(), self.packed_size(count));
        if dst.is_empty() {
            return;
        }
        if let Some(o) = self.one_block(count) {
            // SAFETY: the `count` elements at `src` (the contract) are one
            // block of `packed_size(count)` = `dst.len()` bytes at offset
            // `o`; `dst` is a separate Rust slice.
            unsafe { std::ptr::copy_nonoverlapping(src.wrapping_offset(o), dst.as_mut_ptr(), dst.len()) };
            return;
        }
        let mut g = Gather { buf: src, out: dst.as_mut_ptr(), pos: 0 };
        self.walk_elements(count, &mut g);
    }

    /// Visits every run of `count` whole elements.
    fn walk_elements<S: Sink>(&self, count: usize, f: &mut S) {
        if let Some((o, l)) = self.node.single_run() {
            // One run per element: a strided copy over the elements.
            f.strided(o, self.extent, count, l);
            return;
        }
        let mut base = 0isize;
        for _ in 0..count {
            self.node.walk_all(base, f);
            base = base.wrapping_add(self.extent);
        }
    }

    /// Packs the bytes `[skip, skip + dst.len())` of the packed form of
    /// `count` elements at `src` (for sending a message in pieces).
    ///
    /// # Safety
    /// `src` must address `count` elements of this type; the range lies
    /// within `packed_size(count)`.
    pub unsafe fn pack_range(&self, src: *const u8, count: usize, skip: usize, dst: &mut [u8]) {
        if dst.is_empty() || self.size == 0 {
            return;
        }
        if let Some(o) = self.one_block((skip + dst.len()).div_ceil(self.size)) {
            // Contiguous data: packed byte k is at offset o + k.
            // SAFETY: the block holds the elements at `src` (the contract)
            // that bytes `[skip, skip + dst.len())` fall in, the range lying
            // within `packed_size(count)`; `dst` is a separate Rust slice.
            unsafe {
                std::ptr::copy_nonoverlapping(src.wrapping_offset(o).wrapping_add(skip), dst.as_mut_ptr(), dst.len())
            };
            return;
        }
        let mut g = Gather { buf: src, out: dst.as_mut_ptr(), pos: 0 };
        self.walk_range(count, skip, dst.len(), &mut g);
    }

    /// Unpacks `src` (a whole number of elements' bytes, or fewer on a
    /// truncated/short message) into the buffer at `dst`.
    ///
    /// # Safety
    /// `dst` must address enough elements of this type for `src`.
    pub unsafe fn unpack(&self, src: &[u8], dst: *mut u8) {
        // SAFETY: this function's contract, with the bytes from 0.
        unsafe { self.unpack_range(src, 0, dst) }
    }

    /// Unpacks `src` as the bytes `[skip, skip + src.len())` of the packed
    /// form into the buffer at `dst`.
    ///
    /// # Safety
    /// `dst` must address enough elements of this type for those bytes.
    pub unsafe fn unpack_range(&self, src: &[u8], skip: usize, dst: *mut u8) {
        if src.is_empty() || self.size == 0 {
            return;
        }
        let count = (skip + src.len()).div_ceil(self.size);
        if let Some(o) = self.one_block(count) {
            // Contiguous data: packed byte k is at offset o + k.
            // SAFETY: `dst` addresses the elements that bytes `[skip, skip +
            // src.len())` fall in (the contract), one block at offset `o`;
            // `src` is a Rust slice, not the program's buffer.
            unsafe {
                std::ptr::copy_nonoverlapping(src.as_ptr(), dst.wrapping_offset(o).wrapping_add(skip), src.len())
            };
            return;
        }
        let mut sc = Scatter { inp: src.as_ptr(), buf: dst, pos: 0 };
        if skip == 0 && src.len() == self.packed_size(count) {
            self.walk_elements(count, &mut sc);
        } else {
            self.walk_range(count, skip, src.len(), &mut sc);
        }
    }

    /// Visits the runs of the bytes `[skip, skip + len)` of the packed form
    /// of `count` elements.
    fn walk_range<S: Sink>(&self, count: usize, skip: usize, len: usize, f: &mut S) {
        if self.size == 0 || len == 0 {
            return;
        }
        let total = self.packed_size(count);
        let mut cur = Cursor { skip, left: len.min(total.saturating_sub(skip)) };
        walk_reps_part(0, count, self.extent, &self.node, &mut cur, f);
    }
}
