//! Constructors from the arguments of the C procedures: the checks of
//! counts, block lengths and displacements, the constructor on resolved
//! types, and the contents kept for `MPI_Type_get_contents`. Arrays come
//! in as slices, converted at the C boundary; integers are wide (`i64`),
//! so the `int` and the large-count (`_c`) forms share one path.

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::{check_count, contiguous, darray, hindexed, hvector, structure, subarray, Contents, Dtype, TypeTable};
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
