//! `MPI_Pack`/`MPI_Unpack` and their "external32" forms: data of a type
//! to and from a packed buffer, in the native or the external
//! representation.

use super::Dtype;

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
