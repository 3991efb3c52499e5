//! Constructors from the arguments of the C procedures: the checks of
//! counts, block lengths and displacements, the constructor on resolved
//! types, and the contents kept for `MPI_Type_get_contents`. Arrays come
//! in as slices, converted at the C boundary; integers are wide (`i64`),
//! so the `int` and the large-count (`_c`) forms share one path.

use std::os::raw::c_int;

use mpi_api::abi::*;

use std::sync::Arc;

use super::*;
use crate::bail;
use crate::rt::error::{MpiError, MpiResult};

/// `ndims` of a subarray or darray, checked.
pub fn check_ndims(ndims: c_int) -> MpiResult<usize> {
    if ndims < 1 {
        bail!(MPI_ERR_ARG, "ndims = {ndims} is not positive");
    }
    Ok(ndims as usize)
}

fn blocklen(v: i64) -> MpiResult<usize> {
    if v < 0 {
        bail!(MPI_ERR_ARG, "negative block length {v}");
    }
    Ok(v as usize)
}

fn to_isize(v: i64) -> MpiResult<isize> {
    isize::try_from(v).map_err(|_| MpiError::new(MPI_ERR_ARG, format!("displacement {v} out of range")))
}

/// Displacements counted in elements of `old`, as bytes.
fn elem_disps(disps: &[i64], old: &Dtype) -> MpiResult<Vec<isize>> {
    disps
        .iter()
        .map(|&d| {
            to_isize(d)?
                .checked_mul(old.extent)
                .ok_or_else(|| MpiError::new(MPI_ERR_ARG, format!("displacement {d} overflows")))
        })
        .collect()
}

/// `MPI_Type_contiguous(_c)`.
pub fn contiguous_of(types: &TypeTable, count: i64, old: MPI_Datatype, large: bool) -> MpiResult<Dtype> {
    let n = check_count(count)?;
    let o = types.lookup(old)?;
    Ok(contiguous(n, &o)?.with_contents(Contents::new(MPI_COMBINER_CONTIGUOUS, vec![count], vec![], vec![o], large)))
}

/// The arguments of `MPI_Type_vector` and `MPI_Type_create_hvector`.
pub struct VectorArgs {
    pub count: i64,
    pub blocklength: i64,
    pub stride: i64,
    pub old: MPI_Datatype,
    /// hvector: the stride is in bytes, not in elements of `old`.
    pub stride_in_bytes: bool,
}

/// Vector (stride in elements) or hvector (in bytes).
pub fn vector_of(types: &TypeTable, a: &VectorArgs, large: bool) -> MpiResult<Dtype> {
    let n = check_count(a.count)?;
    let b = blocklen(a.blocklength)?;
    let o = types.lookup(a.old)?;
    let s = to_isize(a.stride)?;
    let sb = if a.stride_in_bytes {
        s
    } else {
        s.checked_mul(o.extent).ok_or_else(|| MpiError::new(MPI_ERR_ARG, "stride overflows"))?
    };
    let t = hvector(n, b, sb, &o)?;
    let c = if a.stride_in_bytes {
        Contents::new(MPI_COMBINER_HVECTOR, vec![a.count, a.blocklength], vec![a.stride], vec![o], large)
    } else {
        Contents::new(MPI_COMBINER_VECTOR, vec![a.count, a.blocklength, a.stride], vec![], vec![o], large)
    };
    Ok(t.with_contents(c))
}

/// The arguments of the indexed constructors (indexed, hindexed and their
/// `_block` forms).
pub struct IndexedArgs {
    pub count: i64,
    /// One length per block, or one for all (`one_blocklength`).
    pub blocklengths: Vec<i64>,
    pub displacements: Vec<i64>,
    pub old: MPI_Datatype,
    /// hindexed: displacements in bytes, not in elements of `old`.
    pub displacements_in_bytes: bool,
    pub one_blocklength: bool,
}

/// Indexed/hindexed and their `_block` forms.
pub fn indexed_of(types: &TypeTable, a: IndexedArgs, large: bool) -> MpiResult<Dtype> {
    let (bytes, block) = (a.displacements_in_bytes, a.one_blocklength);
    let o = types.lookup(a.old)?;
    let d = if bytes {
        a.displacements.iter().map(|&v| to_isize(v)).collect::<MpiResult<Vec<_>>>()?
    } else {
        elem_disps(&a.displacements, &o)?
    };
    let lens = a.blocklengths.iter().map(|&v| blocklen(v)).collect::<MpiResult<Vec<_>>>()?;
    let blocks: Vec<(usize, isize)> =
        d.iter().enumerate().map(|(i, &d)| (if block { lens[0] } else { lens[i] }, d)).collect();
    let t = hindexed(&blocks, &o)?;
    let combiner = match (bytes, block) {
        (false, false) => MPI_COMBINER_INDEXED,
        (true, false) => MPI_COMBINER_HINDEXED,
        (false, true) => MPI_COMBINER_INDEXED_BLOCK,
        (true, true) => MPI_COMBINER_HINDEXED_BLOCK,
    };
    let mut is = vec![a.count];
    is.extend_from_slice(&a.blocklengths);
    let c = if bytes {
        Contents::new(combiner, is, a.displacements, vec![o], large)
    } else {
        is.extend_from_slice(&a.displacements);
        Contents::new(combiner, is, vec![], vec![o], large)
    };
    Ok(t.with_contents(c))
}

/// `MPI_Type_create_struct(_c)`: `count` blocks of the given lengths,
/// displacements (bytes) and types.
pub fn struct_of(
    types: &TypeTable,
    count: i64,
    blocklengths: &[i64],
    displacements: &[i64],
    member_types: &[MPI_Datatype],
    large: bool,
) -> MpiResult<Dtype> {
    let n = blocklengths.len();
    let mut blocks = Vec::with_capacity(n);
    let mut tv = Vec::with_capacity(n);
    for i in 0..n {
        let ti = types.lookup(member_types[i])?;
        blocks.push((blocklen(blocklengths[i])?, to_isize(displacements[i])?, ti.clone()));
        tv.push(ti);
    }
    let ty = structure(&blocks)?;
    let mut is = vec![count];
    is.extend_from_slice(blocklengths);
    Ok(ty.with_contents(Contents::new(MPI_COMBINER_STRUCT, is, displacements.to_vec(), tv, large)))
}

/// The arguments of `MPI_Type_create_subarray`.
pub struct SubarrayArgs {
    pub sizes: Vec<i64>,
    pub subsizes: Vec<i64>,
    pub starts: Vec<i64>,
    pub order: c_int,
    pub old: MPI_Datatype,
}

/// `MPI_Type_create_subarray(_c)`.
pub fn subarray_of(types: &TypeTable, a: &SubarrayArgs, large: bool) -> MpiResult<Dtype> {
    let o = types.lookup(a.old)?;
    let t = subarray(&a.sizes, &a.subsizes, &a.starts, a.order, &o)?;
    let mut is = vec![a.sizes.len() as i64];
    is.extend(a.sizes.iter().chain(&a.subsizes).chain(&a.starts));
    is.push(a.order as i64);
    Ok(t.with_contents(Contents::new(MPI_COMBINER_SUBARRAY, is, vec![], vec![o], large)))
}

/// The arguments of `MPI_Type_create_darray`.
pub struct DarrayArgs {
    /// The process grid's size and this process's rank in it.
    pub size: c_int,
    pub rank: c_int,
    pub gsizes: Vec<i64>,
    pub distribs: Vec<c_int>,
    pub dargs: Vec<c_int>,
    pub psizes: Vec<c_int>,
    pub order: c_int,
    pub old: MPI_Datatype,
}

/// `MPI_Type_create_darray(_c)`.
pub fn darray_of(types: &TypeTable, a: &DarrayArgs, large: bool) -> MpiResult<Dtype> {
    let o = types.lookup(a.old)?;
    let t = darray(a.size, a.rank, &a.gsizes, &a.distribs, &a.dargs, &a.psizes, a.order, &o)?;
    let mut is = vec![a.size as i64, a.rank as i64, a.gsizes.len() as i64];
    is.extend(a.gsizes.iter().copied());
    is.extend(a.distribs.iter().chain(&a.dargs).chain(&a.psizes).map(|&v| v as i64));
    is.push(a.order as i64);
    Ok(t.with_contents(Contents::new(MPI_COMBINER_DARRAY, is, vec![], vec![o], large)))
}

/// `MPI_Type_create_resized(_c)`.
pub fn resized_of(types: &TypeTable, old: MPI_Datatype, lb: i64, extent: i64, large: bool) -> MpiResult<Dtype> {
    let o = types.lookup(old)?;
    let t = o.resized(to_isize(lb)?, to_isize(extent)?)?;
    Ok(t.with_contents(Contents::new(MPI_COMBINER_RESIZED, vec![], vec![lb, extent], vec![o], large)))
}

// ---------------------------------------------------------------------------
// Constructors on resolved types.

/// `MPI_Type_contiguous`.
pub fn contiguous(count: usize, old: &Dtype) -> MpiResult<Dtype> {
    combine(&[Place::block(old, 0, count)], false)
}

/// `MPI_Type_(h)vector`: `count` blocks of `bl` elements, `stride` bytes apart.
pub fn hvector(count: usize, bl: usize, stride: isize, old: &Dtype) -> MpiResult<Dtype> {
    let block = combine(&[Place::block(old, 0, bl)], false)?;
    combine(&[Place { t: &block, disp: 0, n: count, sp: stride }], false)
}

/// `MPI_Type_(h)indexed(_block)`: blocks `(length, displacement in bytes)`.
pub fn hindexed(blocks: &[(usize, isize)], old: &Dtype) -> MpiResult<Dtype> {
    let places: Vec<Place> = blocks.iter().map(|&(n, d)| Place::block(old, d, n)).collect();
    combine(&places, false)
}

/// `MPI_Type_create_struct`: blocks `(length, displacement, type)`. The
/// extent is padded to the members' alignment unless every block has the
/// same type (as MPICH does: such a struct is an hindexed in disguise).
pub fn structure(blocks: &[(usize, isize, Arc<Dtype>)]) -> MpiResult<Dtype> {
    let places: Vec<Place> = blocks.iter().map(|(n, d, t)| Place::block(t, *d, *n)).collect();
    let same = blocks.windows(2).all(|w| Arc::ptr_eq(&w[0].2, &w[1].2));
    combine(&places, !same)
}

fn check_order(order: c_int) -> MpiResult<bool> {
    match order {
        MPI_ORDER_C => Ok(true),
        MPI_ORDER_FORTRAN => Ok(false),
        _ => bail!(MPI_ERR_ARG, "order {order} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"),
    }
}

/// The dimensions from the fastest varying to the slowest.
fn fast_to_slow(ndims: usize, c_order: bool) -> Vec<usize> {
    if c_order {
        (0..ndims).rev().collect()
    } else {
        (0..ndims).collect()
    }
}

/// `MPI_Type_create_subarray`.
pub fn subarray(sizes: &[i64], subsizes: &[i64], starts: &[i64], order: c_int, old: &Dtype) -> MpiResult<Dtype> {
    let c_order = check_order(order)?;
    let nd = sizes.len();
    if nd == 0 {
        bail!(MPI_ERR_ARG, "ndims must be positive");
    }
    for d in 0..nd {
        let (s, ss, st) = (sizes[d], subsizes[d], starts[d]);
        if s < 1 || ss < 1 || st < 0 || ss > s || st > s - ss {
            bail!(
                MPI_ERR_ARG,
                "dimension {d}: size {s}, subsize {ss}, start {st} (need size >= 1, 1 <= subsize <= size, 0 <= start <= size - subsize)"
            );
        }
    }
    let mut t = old.clone();
    let mut estride = old.extent;
    let mut disp = 0isize;
    for d in fast_to_slow(nd, c_order) {
        t = combine(&[Place { t: &t, disp: 0, n: subsizes[d] as usize, sp: estride }], false)?;
        disp = (starts[d] as isize).checked_mul(estride).and_then(|x| x.checked_add(disp)).ok_or_else(overflow)?;
        estride = estride.checked_mul(sizes[d] as isize).ok_or_else(overflow)?;
    }
    let placed = combine(&[Place { t: &t, disp, n: 1, sp: 0 }], false)?;
    placed.resized(0, estride)
}

/// `MPI_Type_create_darray`.
#[allow(clippy::too_many_arguments)]
pub fn darray(
    size: c_int,
    rank: c_int,
    gsizes: &[i64],
    distribs: &[c_int],
    dargs: &[c_int],
    psizes: &[c_int],
    order: c_int,
    old: &Dtype,
) -> MpiResult<Dtype> {
    let c_order = check_order(order)?;
    let nd = gsizes.len();
    if nd == 0 {
        bail!(MPI_ERR_ARG, "ndims must be positive");
    }
    if size < 1 || rank < 0 || rank >= size {
        bail!(MPI_ERR_ARG, "rank {rank} is not in a group of size {size}");
    }
    let mut prod: i64 = 1;
    for (d, &p) in psizes.iter().enumerate() {
        if p < 1 {
            bail!(MPI_ERR_ARG, "array_of_psizes[{d}] = {p} is not positive");
        }
        prod = prod.saturating_mul(p as i64);
    }
    if prod != size as i64 {
        bail!(MPI_ERR_ARG, "the process grid has {prod} processes, not size = {size}");
    }
    // Coordinates of `rank` in the row-major process grid (both orders).
    let mut coords = vec![0i64; nd];
    let (mut r, mut t_size) = (rank as i64, prod);
    for d in 0..nd {
        t_size /= psizes[d] as i64;
        coords[d] = r / t_size;
        r %= t_size;
    }
    // Each dimension as cyclic(darg) over the process row.
    let mut dims = Vec::with_capacity(nd);
    for d in 0..nd {
        let (g, p, darg) = (gsizes[d], psizes[d] as i64, dargs[d]);
        if g < 1 {
            bail!(MPI_ERR_ARG, "array_of_gsizes[{d}] = {g} is not positive");
        }
        let b = match distribs[d] {
            MPI_DISTRIBUTE_NONE => {
                if p != 1 {
                    bail!(MPI_ERR_ARG, "dimension {d} is not distributed but has {p} processes");
                }
                g
            }
            MPI_DISTRIBUTE_BLOCK if darg == MPI_DISTRIBUTE_DFLT_DARG => (g + p - 1) / p,
            MPI_DISTRIBUTE_BLOCK => {
                if darg < 1 || (darg as i64).saturating_mul(p) < g {
                    bail!(
                        MPI_ERR_ARG,
                        "dimension {d}: block size {darg} times {p} processes does not cover {g} elements"
                    );
                }
                darg as i64
            }
            MPI_DISTRIBUTE_CYCLIC if darg == MPI_DISTRIBUTE_DFLT_DARG => 1,
            MPI_DISTRIBUTE_CYCLIC => {
                if darg < 1 {
                    bail!(MPI_ERR_ARG, "dimension {d}: cyclic distribution argument {darg} is not positive");
                }
                darg as i64
            }
            x => bail!(MPI_ERR_ARG, "dimension {d}: unknown distribution {x}"),
        };
        dims.push((g, p, b, coords[d]));
    }
    let mut t = old.clone();
    let mut estride = old.extent;
    for d in fast_to_slow(nd, c_order) {
        let (g, p, b, c) = dims[d];
        // Full blocks of b elements start at (c + k p) b; the last may be short.
        let first = c * b;
        let period = p.saturating_mul(b);
        let (mut nfull, mut last) = (0i64, 0i64);
        if first < g {
            let nblocks = (g - first + period - 1) / period;
            let last_start = first + (nblocks - 1) * period;
            let last_len = b.min(g - last_start);
            if last_len == b {
                nfull = nblocks;
            } else {
                nfull = nblocks - 1;
                last = last_len;
            }
        }
        let sp = |x: i64| (x as isize).checked_mul(estride).ok_or_else(overflow);
        let block = combine(&[Place { t: &t, disp: 0, n: b as usize, sp: estride }], false)?;
        let mut places = vec![Place { t: &block, disp: sp(first)?, n: nfull as usize, sp: sp(period)? }];
        if last > 0 {
            places.push(Place { t: &t, disp: sp(first + nfull * period)?, n: last as usize, sp: estride });
        }
        let dim = combine(&places, false)?;
        estride = sp(g)?;
        t = dim.resized(0, estride)?;
    }
    Ok(t)
}
