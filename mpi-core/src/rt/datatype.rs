//! Datatypes in flattened form: one element is a list of byte runs
//! `(offset, len)` relative to the buffer address, merged where contiguous,
//! plus lower bound and extent. Packing is a loop of copies over the runs;
//! contiguous types are copied in one piece.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};

/// A datatype ready for communication.
#[derive(Debug, Clone)]
pub struct Dtype {
    /// Bytes of data in one element.
    pub size: usize,
    pub lb: isize,
    pub extent: isize,
    pub true_lb: isize,
    pub true_extent: isize,
    /// Runs of one element, in type-map order.
    pub runs: Vec<(isize, usize)>,
    /// One element is one run starting at offset 0 and `extent == size`, so
    /// `count` elements are `count * size` contiguous bytes at the buffer.
    pub contig: bool,
    /// The predefined type this one is made of, if it is made of one only
    /// (used by reductions and `Get_elements`).
    pub basic: Option<MPI_Datatype>,
    /// Size of the basic element (for `Get_elements`), when uniform.
    pub basic_size: usize,
    pub committed: bool,
}

impl Dtype {
    fn from_runs(runs: Vec<(isize, usize)>, lb: isize, extent: isize, basic: Option<MPI_Datatype>, basic_size: usize) -> Dtype {
        let size = runs.iter().map(|r| r.1).sum();
        let true_lb = runs.iter().map(|r| r.0).min().unwrap_or(0);
        let true_ub = runs.iter().map(|r| r.0 + r.1 as isize).max().unwrap_or(0);
        let contig = runs.len() == 1 && runs[0].0 == 0 && extent == size as isize
            || runs.is_empty() && extent == 0;
        Dtype {
            size,
            lb,
            extent,
            true_lb,
            true_extent: true_ub - true_lb,
            runs,
            contig,
            basic,
            basic_size,
            committed: true,
        }
    }

    /// Bytes that `count` elements carry.
    pub fn packed_size(&self, count: usize) -> usize {
        self.size * count
    }

    /// Packs `count` elements at `src` into `dst` (exactly `packed_size` bytes).
    ///
    /// # Safety
    /// `src` must address `count` elements of this type.
    pub unsafe fn pack(&self, src: *const u8, count: usize, dst: &mut [u8]) {
        debug_assert_eq!(dst.len(), self.packed_size(count));
        if dst.is_empty() {
            return;
        }
        if self.contig {
            std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len());
            return;
        }
        let mut o = 0;
        for i in 0..count {
            let base = src.offset(i as isize * self.extent);
            for &(off, len) in &self.runs {
                std::ptr::copy_nonoverlapping(base.offset(off), dst.as_mut_ptr().add(o), len);
                o += len;
            }
        }
    }

    /// Unpacks `src` (a whole number of elements' bytes, or fewer on a
    /// truncated/short message) into the buffer at `dst`.
    ///
    /// # Safety
    /// `dst` must address enough elements of this type for `src`.
    pub unsafe fn unpack(&self, src: &[u8], dst: *mut u8) {
        if src.is_empty() {
            return;
        }
        if self.contig {
            std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
            return;
        }
        let mut o = 0;
        let mut i = 0isize;
        while o < src.len() {
            let base = dst.offset(i * self.extent);
            for &(off, len) in &self.runs {
                let n = len.min(src.len() - o);
                std::ptr::copy_nonoverlapping(src.as_ptr().add(o), base.offset(off), n);
                o += n;
                if o >= src.len() {
                    break;
                }
            }
            i += 1;
        }
    }
}

/// Layout of a predefined pair type: (size of value, offset of int, extent).
fn pair_layout(dt: MPI_Datatype) -> Option<(usize, usize, usize, MPI_Datatype)> {
    Some(match dt {
        MPI_FLOAT_INT => (4, 4, 8, MPI_FLOAT),
        MPI_DOUBLE_INT => (8, 8, 16, MPI_DOUBLE),
        MPI_LONG_INT => (8, 8, 16, MPI_LONG),
        MPI_SHORT_INT => (2, 4, 8, MPI_SHORT),
        MPI_LONG_DOUBLE_INT => (16, 16, 32, MPI_LONG_DOUBLE),
        _ => return None,
    })
}

/// Size of the value of a predefined (value, int) pair type.
pub fn pair_value_size(dt: MPI_Datatype) -> Option<usize> {
    pair_layout(dt).map(|p| p.0)
}

/// Table of datatypes created by the program (derived types).
#[derive(Default)]
pub struct TypeTable {
    derived: Vec<Option<Arc<Dtype>>>,
    builtin_cache: std::collections::HashMap<MPI_Datatype, Arc<Dtype>>,
}

const DERIVED_BASE: u32 = 0x100;

impl TypeTable {
    /// Looks a handle up.
    pub fn get(&mut self, dt: MPI_Datatype) -> MpiResult<Arc<Dtype>> {
        if let Some(t) = self.builtin_cache.get(&dt) {
            return Ok(t.clone());
        }
        if let Some(t) = builtin(dt) {
            let t = Arc::new(t);
            self.builtin_cache.insert(dt, t.clone());
            return Ok(t);
        }
        if handle_obj(dt) == OBJ_DATATYPE && handle_kind(dt) == HANDLE_KIND_INDIRECT {
            let i = handle_index(dt).wrapping_sub(DERIVED_BASE) as usize;
            if let Some(Some(t)) = self.derived.get(i) {
                return Ok(t.clone());
            }
        }
        if dt == MPI_DATATYPE_NULL {
            return Err(MpiError::new(MPI_ERR_TYPE, "MPI_DATATYPE_NULL is not a valid datatype here"));
        }
        Err(MpiError::new(MPI_ERR_TYPE, format!("invalid datatype handle 0x{:08x}", dt as u32)))
    }

    /// Registers a new derived type and returns its handle.
    pub fn insert(&mut self, t: Dtype) -> MPI_Datatype {
        let t = Some(Arc::new(t));
        let i = match self.derived.iter().position(Option::is_none) {
            Some(i) => {
                self.derived[i] = t;
                i
            }
            None => {
                self.derived.push(t);
                self.derived.len() - 1
            }
        };
        make_handle(HANDLE_KIND_INDIRECT, OBJ_DATATYPE, DERIVED_BASE + i as u32)
    }

    /// Frees a derived type; operations already holding it keep their `Arc`.
    pub fn free(&mut self, dt: MPI_Datatype) -> MpiResult<()> {
        if handle_kind(dt) != HANDLE_KIND_INDIRECT || handle_obj(dt) != OBJ_DATATYPE {
            return Err(MpiError::new(MPI_ERR_TYPE, "predefined datatypes cannot be freed"));
        }
        let i = handle_index(dt).wrapping_sub(DERIVED_BASE) as usize;
        match self.derived.get_mut(i) {
            Some(slot @ Some(_)) => {
                *slot = None;
                Ok(())
            }
            _ => Err(MpiError::new(MPI_ERR_TYPE, format!("invalid datatype handle 0x{:08x}", dt as u32))),
        }
    }
}

/// The flattened form of a predefined datatype.
pub fn builtin(dt: MPI_Datatype) -> Option<Dtype> {
    if let Some((vsize, ioff, extent, vtype)) = pair_layout(dt) {
        let runs = if ioff == vsize { vec![(0, vsize + 4)] } else { vec![(0, vsize), (ioff as isize, 4)] };
        let _ = vtype;
        return Some(Dtype::from_runs(runs, 0, extent as isize, Some(dt), 0));
    }
    if dt == MPI_DATATYPE_NULL || (dt as u32) >> 24 != 0x4c {
        return None;
    }
    let size = builtin_type_size(dt)?;
    if dt == MPI_LB || dt == MPI_UB {
        return Some(Dtype::from_runs(vec![], 0, 0, None, 0));
    }
    // Predefined pair types of two equal halves count as two basic elements.
    let basic_size = match dt {
        MPI_2INT | MPI_2INTEGER | MPI_2REAL | MPI_2DOUBLE_PRECISION => size / 2,
        _ => size,
    };
    Some(Dtype::from_runs(vec![(0, size)], 0, size as isize, Some(dt), basic_size))
}

/// Checks a count argument.
pub fn check_count(count: i64) -> MpiResult<usize> {
    if count < 0 {
        return Err(MpiError::new(MPI_ERR_COUNT, format!("negative count {count}")));
    }
    Ok(count as usize)
}

/// Size in bytes of one element of `dt`, for error-free paths.
pub fn size_of(types: &mut TypeTable, dt: MPI_Datatype) -> MpiResult<usize> {
    Ok(types.get(dt)?.size)
}

#[allow(dead_code)]
pub(crate) fn is_int_like(dt: c_int) -> bool {
    matches!(dt, MPI_INT | MPI_LONG | MPI_SHORT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_types_have_padding() {
        let t = builtin(MPI_DOUBLE_INT).unwrap();
        assert_eq!((t.size, t.extent, t.contig), (12, 16, false));
        let src: Vec<u8> = (0..32).collect();
        let mut out = vec![0u8; 24];
        // SAFETY: src holds two 16-byte elements.
        unsafe { t.pack(src.as_ptr(), 2, &mut out) };
        assert_eq!(&out[..12], &src[..12]);
        assert_eq!(&out[12..], &src[16..28]);
        let mut back = vec![0u8; 32];
        // SAFETY: back holds two elements.
        unsafe { t.unpack(&out, back.as_mut_ptr()) };
        assert_eq!(&back[16..28], &src[16..28]);
        assert!(builtin(MPI_INT).unwrap().contig);
        assert_eq!(builtin(MPI_2INT).unwrap().basic_size, 4);
    }
}
