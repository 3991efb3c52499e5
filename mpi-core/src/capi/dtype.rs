//! Chapter 4: datatypes — constructors, queries, decoding, addresses, and
//! packing (native and "external32"), plus counts of received data.
//!
//! The `_c` (large-count) constructors and their `int` counterparts share
//! one implementation over `i64` arguments. Errors of calls without a
//! communicator go to the handler of `MPI_COMM_WORLD`.

use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;

use mpi_api::abi::*;

use super::p2p::twins;
use super::{put, put_str, ret};
use crate::bail;
use crate::rt::datatype::{self as dtm, check_count, Contents, Dtype};
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self, State};

const WORLD: MPI_Comm = MPI_COMM_WORLD;

// ---------------------------------------------------------------------------
// Argument helpers

/// A C array argument of `n` elements as a slice.
///
/// # Safety
/// `p` is NULL or points to `n` readable values.
unsafe fn arr<'a, T>(p: *const T, n: usize, what: &str) -> MpiResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        bail!(MPI_ERR_ARG, "{what} is NULL");
    }
    // SAFETY: non-NULL; the caller passes an array of `n` values.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

fn check_ndims(ndims: c_int) -> MpiResult<usize> {
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

fn to_int(v: i64, what: &str) -> MpiResult<c_int> {
    c_int::try_from(v).map_err(|_| MpiError::new(MPI_ERR_VALUE_TOO_LARGE, format!("{what} {v} does not fit in an int")))
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

/// Runs a constructor and stores the new (uncommitted) type in `*newtype`.
fn construct(newtype: *mut MPI_Datatype, name: &str, f: impl FnOnce(&mut State) -> MpiResult<Dtype>) -> c_int {
    let r = rt::with(|st| {
        if newtype.is_null() {
            bail!(MPI_ERR_ARG, "newtype is a NULL pointer");
        }
        let t = f(st)?;
        let h = st.types.insert(t);
        // SAFETY: checked non-NULL; the caller passes a datatype variable.
        unsafe { newtype.write(h) };
        Ok(())
    });
    ret(WORLD, name, r)
}

// ---------------------------------------------------------------------------
// Constructors (shared implementations over i64 arguments)

fn contiguous_impl(count: i64, old: MPI_Datatype, newtype: *mut MPI_Datatype, large: bool, name: &str) -> c_int {
    construct(newtype, name, |st| {
        let n = check_count(count)?;
        let o = st.types.lookup(old)?;
        Ok(dtm::contiguous(n, &o)?.with_contents(Contents::new(
            MPI_COMBINER_CONTIGUOUS,
            vec![count],
            vec![],
            vec![o],
            large,
        )))
    })
}

/// Vector (`hetero == false`, stride in elements) or hvector (bytes).
#[allow(clippy::too_many_arguments)]
fn vector_impl(
    count: i64,
    bl: i64,
    stride: i64,
    old: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    bytes: bool,
    large: bool,
    name: &str,
) -> c_int {
    construct(newtype, name, |st| {
        let n = check_count(count)?;
        let b = blocklen(bl)?;
        let o = st.types.lookup(old)?;
        let s = to_isize(stride)?;
        let sb = if bytes {
            s
        } else {
            s.checked_mul(o.extent).ok_or_else(|| MpiError::new(MPI_ERR_ARG, "stride overflows"))?
        };
        let t = dtm::hvector(n, b, sb, &o)?;
        let c = if bytes {
            Contents::new(MPI_COMBINER_HVECTOR, vec![count, bl], vec![stride], vec![o], large)
        } else {
            Contents::new(MPI_COMBINER_VECTOR, vec![count, bl, stride], vec![], vec![o], large)
        };
        Ok(t.with_contents(c))
    })
}

/// Indexed/hindexed and their `_block` forms. `bls` has one length per
/// block, or one for all (`block`); `bytes`: displacements in bytes.
#[allow(clippy::too_many_arguments)]
fn indexed_impl(
    count: i64,
    bls: Vec<i64>,
    disps: Vec<i64>,
    old: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    bytes: bool,
    block: bool,
    large: bool,
    name: &str,
) -> c_int {
    construct(newtype, name, |st| {
        let o = st.types.lookup(old)?;
        let d = if bytes {
            disps.iter().map(|&v| to_isize(v)).collect::<MpiResult<Vec<_>>>()?
        } else {
            elem_disps(&disps, &o)?
        };
        let lens = bls.iter().map(|&v| blocklen(v)).collect::<MpiResult<Vec<_>>>()?;
        let blocks: Vec<(usize, isize)> =
            d.iter().enumerate().map(|(i, &d)| (if block { lens[0] } else { lens[i] }, d)).collect();
        let t = dtm::hindexed(&blocks, &o)?;
        let combiner = match (bytes, block) {
            (false, false) => MPI_COMBINER_INDEXED,
            (true, false) => MPI_COMBINER_HINDEXED,
            (false, true) => MPI_COMBINER_INDEXED_BLOCK,
            (true, true) => MPI_COMBINER_HINDEXED_BLOCK,
        };
        let mut is = vec![count];
        is.extend_from_slice(&bls);
        let c = if bytes {
            Contents::new(combiner, is, disps, vec![o], large)
        } else {
            is.extend_from_slice(&disps);
            Contents::new(combiner, is, vec![], vec![o], large)
        };
        Ok(t.with_contents(c))
    })
}

/// Reads the arrays of an indexed constructor: (lengths, displacements).
///
/// # Safety
/// The pointers address `count` values each (one length if `block`).
unsafe fn indexed_args<L: Copy + Into<i64>, D: Copy + Into<i64>>(
    count: i64,
    bls: *const L,
    disps: *const D,
    block: Option<i64>,
) -> MpiResult<(Vec<i64>, Vec<i64>)> {
    let n = check_count(count)?;
    let lens = match block {
        Some(b) => vec![b],
        // SAFETY: forwarded contract.
        None => unsafe { arr(bls, n, "array_of_blocklengths") }?.iter().map(|&v| v.into()).collect(),
    };
    // SAFETY: forwarded contract.
    let d = unsafe { arr(disps, n, "array_of_displacements") }?.iter().map(|&v| v.into()).collect();
    Ok((lens, d))
}

/// Indexed constructors with one length per block.
///
/// # Safety
/// The arrays hold `count` values each.
#[allow(clippy::too_many_arguments)]
unsafe fn indexed_entry<L: Copy + Into<i64>, D: Copy + Into<i64>>(
    count: i64,
    bls: *const L,
    disps: *const D,
    old: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    bytes: bool,
    large: bool,
    name: &str,
) -> c_int {
    // SAFETY: forwarded contract.
    match unsafe { indexed_args(count, bls, disps, None) } {
        Ok((l, d)) => indexed_impl(count, l, d, old, newtype, bytes, false, large, name),
        Err(e) => ret(WORLD, name, Err(e)),
    }
}

/// Indexed constructors with one length for all blocks.
///
/// # Safety
/// The array holds `count` displacements.
#[allow(clippy::too_many_arguments)]
unsafe fn indexed_block_entry<D: Copy + Into<i64>>(
    count: i64,
    bl: i64,
    disps: *const D,
    old: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    bytes: bool,
    large: bool,
    name: &str,
) -> c_int {
    let nolens: *const i64 = std::ptr::null();
    // SAFETY: forwarded contract.
    match unsafe { indexed_args(count, nolens, disps, Some(bl)) } {
        Ok((l, d)) => indexed_impl(count, l, d, old, newtype, bytes, true, large, name),
        Err(e) => ret(WORLD, name, Err(e)),
    }
}

twins! {
    pub unsafe fn MPI_Type_contiguous | MPI_Type_contiguous_c(count: Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        contiguous_impl(count as i64, oldtype, newtype, LARGE, NAME)
    }

    pub unsafe fn MPI_Type_vector | MPI_Type_vector_c(count: Count, blocklength: Count, stride: Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        vector_impl(count as i64, blocklength as i64, stride as i64, oldtype, newtype, false, LARGE, NAME)
    }

    pub unsafe fn MPI_Type_create_hvector | MPI_Type_create_hvector_c(count: Count, blocklength: Count, stride: Offset, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        vector_impl(count as i64, blocklength as i64, stride, oldtype, newtype, true, LARGE, NAME)
    }
}

pub unsafe fn MPI_Type_hvector(
    count: c_int,
    blocklength: c_int,
    stride: MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    vector_impl(count as i64, blocklength as i64, stride, oldtype, newtype, true, false, "MPI_Type_hvector")
}

twins! {
    pub unsafe fn MPI_Type_indexed | MPI_Type_indexed_c(count: Count, array_of_blocklengths: *const Count, array_of_displacements: *const Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: the caller passes arrays of `count` values.
        unsafe { indexed_entry(count as i64, array_of_blocklengths, array_of_displacements, oldtype, newtype, false, LARGE, NAME) }
    }

    pub unsafe fn MPI_Type_create_hindexed | MPI_Type_create_hindexed_c(count: Count, array_of_blocklengths: *const Count, array_of_displacements: *const Offset, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: the caller passes arrays of `count` values.
        unsafe { indexed_entry(count as i64, array_of_blocklengths, array_of_displacements, oldtype, newtype, true, LARGE, NAME) }
    }

    pub unsafe fn MPI_Type_create_indexed_block | MPI_Type_create_indexed_block_c(count: Count, blocklength: Count, array_of_displacements: *const Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: the caller passes an array of `count` displacements.
        unsafe { indexed_block_entry(count as i64, blocklength as i64, array_of_displacements, oldtype, newtype, false, LARGE, NAME) }
    }

    pub unsafe fn MPI_Type_create_hindexed_block | MPI_Type_create_hindexed_block_c(count: Count, blocklength: Count, array_of_displacements: *const Offset, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: the caller passes an array of `count` displacements.
        unsafe { indexed_block_entry(count as i64, blocklength as i64, array_of_displacements, oldtype, newtype, true, LARGE, NAME) }
    }
}

pub unsafe fn MPI_Type_hindexed(
    count: c_int,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    // SAFETY: same contract as the MPI-2 form.
    unsafe { MPI_Type_create_hindexed(count, array_of_blocklengths, array_of_displacements, oldtype, newtype) }
}

/// Struct: (lengths, displacements in bytes, types).
///
/// # Safety
/// The pointers address `count` values each.
unsafe fn struct_impl<L: Copy + Into<i64>>(
    count: i64,
    bls: *const L,
    disps: *const i64,
    types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
    large: bool,
    name: &str,
) -> c_int {
    construct(newtype, name, |st| {
        let n = check_count(count)?;
        // SAFETY: the caller passes arrays of `count` values.
        let (l, d, t) = unsafe {
            (
                arr(bls, n, "array_of_blocklengths")?,
                arr(disps, n, "array_of_displacements")?,
                arr(types, n, "array_of_types")?,
            )
        };
        let l: Vec<i64> = l.iter().map(|&v| v.into()).collect();
        let mut blocks = Vec::with_capacity(n);
        let mut tv = Vec::with_capacity(n);
        for i in 0..n {
            let ti = st.types.lookup(t[i])?;
            blocks.push((blocklen(l[i])?, to_isize(d[i])?, ti.clone()));
            tv.push(ti);
        }
        let ty = dtm::structure(&blocks)?;
        let mut is = vec![count];
        is.extend_from_slice(&l);
        Ok(ty.with_contents(Contents::new(MPI_COMBINER_STRUCT, is, d.to_vec(), tv, large)))
    })
}

twins! {
    pub unsafe fn MPI_Type_create_struct | MPI_Type_create_struct_c(count: Count, array_of_blocklengths: *const Count, array_of_displacements: *const Offset, array_of_types: *const MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: the caller passes arrays of `count` values.
        unsafe { struct_impl(count as i64, array_of_blocklengths, array_of_displacements, array_of_types, newtype, LARGE, NAME) }
    }
}

pub unsafe fn MPI_Type_struct(
    count: c_int,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    array_of_types: *mut MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    // SAFETY: the caller passes arrays of `count` values.
    unsafe {
        struct_impl(
            count as i64,
            array_of_blocklengths as *const c_int,
            array_of_displacements,
            array_of_types,
            newtype,
            false,
            "MPI_Type_struct",
        )
    }
}

/// Subarray over i64 arrays.
///
/// # Safety
/// The pointers address `ndims` values each.
#[allow(clippy::too_many_arguments)]
unsafe fn subarray_impl<T: Copy + Into<i64>>(
    ndims: c_int,
    sizes: *const T,
    subsizes: *const T,
    starts: *const T,
    order: c_int,
    old: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    large: bool,
    name: &str,
) -> c_int {
    construct(newtype, name, |st| {
        let n = check_ndims(ndims)?;
        let wide = |p: *const T, what: &str| -> MpiResult<Vec<i64>> {
            // SAFETY: the caller passes arrays of `ndims` values.
            Ok(unsafe { arr(p, n, what) }?.iter().map(|&v| v.into()).collect())
        };
        let (s, ss, s0) =
            (wide(sizes, "array_of_sizes")?, wide(subsizes, "array_of_subsizes")?, wide(starts, "array_of_starts")?);
        let o = st.types.lookup(old)?;
        let t = dtm::subarray(&s, &ss, &s0, order, &o)?;
        let mut is = vec![ndims as i64];
        is.extend(s.iter().chain(&ss).chain(&s0));
        is.push(order as i64);
        Ok(t.with_contents(Contents::new(MPI_COMBINER_SUBARRAY, is, vec![], vec![o], large)))
    })
}

twins! {
    pub unsafe fn MPI_Type_create_subarray | MPI_Type_create_subarray_c(ndims: c_int, array_of_sizes: *const Count, array_of_subsizes: *const Count, array_of_starts: *const Count, order: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: the caller passes arrays of `ndims` values.
        unsafe { subarray_impl(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype, newtype, LARGE, NAME) }
    }
}

/// Darray over i64 global sizes.
///
/// # Safety
/// The pointers address `ndims` values each.
#[allow(clippy::too_many_arguments)]
unsafe fn darray_impl<T: Copy + Into<i64>>(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const T,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: MPI_Datatype,
    newtype: *mut MPI_Datatype,
    large: bool,
    name: &str,
) -> c_int {
    construct(newtype, name, |st| {
        let n = check_ndims(ndims)?;
        // SAFETY: the caller passes arrays of `ndims` values.
        let (g, di, da, ps) = unsafe {
            (
                arr(gsizes, n, "array_of_gsizes")?.iter().map(|&v| v.into()).collect::<Vec<i64>>(),
                arr(distribs, n, "array_of_distribs")?,
                arr(dargs, n, "array_of_dargs")?,
                arr(psizes, n, "array_of_psizes")?,
            )
        };
        let o = st.types.lookup(old)?;
        let t = dtm::darray(size, rank, &g, di, da, ps, order, &o)?;
        let mut is = vec![size as i64, rank as i64, ndims as i64];
        is.extend(g.iter().copied());
        is.extend(di.iter().chain(da).chain(ps).map(|&v| v as i64));
        is.push(order as i64);
        Ok(t.with_contents(Contents::new(MPI_COMBINER_DARRAY, is, vec![], vec![o], large)))
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn MPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const c_int,
    array_of_distribs: *const c_int,
    array_of_dargs: *const c_int,
    array_of_psizes: *const c_int,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let (g, di, da, ps) = (array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes);
    // SAFETY: the caller passes arrays of `ndims` values.
    unsafe { darray_impl(size, rank, ndims, g, di, da, ps, order, oldtype, newtype, false, "MPI_Type_create_darray") }
}

/// `MPI_Type_create_darray` with `MPI_Count` global sizes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn MPI_Type_create_darray_c(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const MPI_Count,
    array_of_distribs: *const c_int,
    array_of_dargs: *const c_int,
    array_of_psizes: *const c_int,
    order: c_int,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    let (g, di, da, ps) = (array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes);
    // SAFETY: the caller passes arrays of `ndims` values.
    unsafe { darray_impl(size, rank, ndims, g, di, da, ps, order, oldtype, newtype, true, "MPI_Type_create_darray_c") }
}

fn resized_impl(old: MPI_Datatype, lb: i64, extent: i64, newtype: *mut MPI_Datatype, large: bool, name: &str) -> c_int {
    construct(newtype, name, |st| {
        let o = st.types.lookup(old)?;
        let t = o.resized(to_isize(lb)?, to_isize(extent)?)?;
        Ok(t.with_contents(Contents::new(MPI_COMBINER_RESIZED, vec![], vec![lb, extent], vec![o], large)))
    })
}

twins! {
    pub unsafe fn MPI_Type_create_resized | MPI_Type_create_resized_c(oldtype: MPI_Datatype, lb: Offset, extent: Offset, newtype: *mut MPI_Datatype) -> c_int {
        resized_impl(oldtype, lb, extent, newtype, LARGE, NAME)
    }
}

pub unsafe fn MPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    let r = rt::with(|st| {
        if newtype.is_null() {
            bail!(MPI_ERR_ARG, "newtype is a NULL pointer");
        }
        let o = st.types.lookup(oldtype)?;
        let committed = st.types.get(oldtype).is_ok();
        let t = o.dup().with_contents(Contents::new(MPI_COMBINER_DUP, vec![], vec![], vec![o.clone()], false));
        let h = st.types.insert_arc(Arc::new(t), committed);
        // SAFETY: checked non-NULL.
        unsafe { newtype.write(h) };
        Ok(h)
    });
    // Attribute copy callbacks run without the lock.
    let r = r.and_then(|h| super::attr::type_attrs_dup(oldtype, h));
    ret(WORLD, "MPI_Type_dup", r)
}

pub unsafe fn MPI_Type_commit(datatype: *mut MPI_Datatype) -> c_int {
    let r = rt::with(|st| {
        if datatype.is_null() {
            bail!(MPI_ERR_ARG, "datatype is a NULL pointer");
        }
        // SAFETY: checked non-NULL.
        st.types.commit(unsafe { *datatype })
    });
    ret(WORLD, "MPI_Type_commit", r)
}

pub unsafe fn MPI_Type_free(datatype: *mut MPI_Datatype) -> c_int {
    // Attribute delete callbacks run first, without the lock.
    if !datatype.is_null() {
        if let Err(e) = super::attr::type_attrs_free(*datatype) {
            return ret(WORLD, "MPI_Type_free", Err(e));
        }
    }
    let r = rt::with(|st| {
        if datatype.is_null() {
            bail!(MPI_ERR_ARG, "datatype is a NULL pointer");
        }
        // SAFETY: checked non-NULL.
        st.types.free(unsafe { *datatype })?;
        // SAFETY: checked non-NULL.
        unsafe { datatype.write(MPI_DATATYPE_NULL) };
        Ok(())
    });
    ret(WORLD, "MPI_Type_free", r)
}

// ---------------------------------------------------------------------------
// Decoding

/// (integers, addresses, large counts) of a type, as the `_c` (`large`)
/// or the `int` query reports them.
fn decoded(c: &Contents, large_query: bool) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    if large_query && c.large {
        let (i, l) = c.large_split();
        (i, Vec::new(), l)
    } else {
        (c.ints.clone(), c.aints.clone(), Vec::new())
    }
}

/// (ints, addresses, large counts, datatypes, combiner) counts.
fn envelope(st: &State, dt: MPI_Datatype, large_query: bool) -> MpiResult<(i64, i64, i64, i64, c_int)> {
    let t = st.types.lookup(dt)?;
    Ok(match &t.contents {
        None => (0, 0, 0, 0, MPI_COMBINER_NAMED),
        Some(c) => {
            let (i, a, l) = decoded(c, large_query);
            (i.len() as i64, a.len() as i64, l.len() as i64, c.types.len() as i64, c.combiner)
        }
    })
}

pub unsafe fn MPI_Type_get_envelope(
    datatype: MPI_Datatype,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    let r = rt::with(|st| {
        let (i, a, _, d, c) = envelope(st, datatype, false)?;
        put(num_integers, i as c_int, "num_integers")?;
        put(num_addresses, a as c_int, "num_addresses")?;
        put(num_datatypes, d as c_int, "num_datatypes")?;
        put(combiner, c, "combiner")
    });
    ret(WORLD, "MPI_Type_get_envelope", r)
}

pub unsafe fn MPI_Type_get_envelope_c(
    datatype: MPI_Datatype,
    num_integers: *mut MPI_Count,
    num_addresses: *mut MPI_Count,
    num_large_counts: *mut MPI_Count,
    num_datatypes: *mut MPI_Count,
    combiner: *mut c_int,
) -> c_int {
    let r = rt::with(|st| {
        let (i, a, l, d, c) = envelope(st, datatype, true)?;
        put(num_integers, i, "num_integers")?;
        put(num_addresses, a, "num_addresses")?;
        put(num_large_counts, l, "num_large_counts")?;
        put(num_datatypes, d, "num_datatypes")?;
        put(combiner, c, "combiner")
    });
    ret(WORLD, "MPI_Type_get_envelope_c", r)
}

/// Writes `vals` to a C array of capacity `max`.
///
/// # Safety
/// `p` is NULL or points to `max` writable values.
unsafe fn out_arr<T>(
    p: *mut T,
    max: i64,
    vals: impl ExactSizeIterator<Item = MpiResult<T>>,
    what: &str,
) -> MpiResult<()> {
    if (max as i128) < vals.len() as i128 {
        bail!(MPI_ERR_ARG, "{what}: room for {max} values, {} needed", vals.len());
    }
    if vals.len() > 0 && p.is_null() {
        bail!(MPI_ERR_ARG, "{what} is NULL");
    }
    for (i, v) in vals.enumerate() {
        // SAFETY: i < len <= max; the caller passes `max` writable values.
        unsafe { p.add(i).write(v?) };
    }
    Ok(())
}

/// The shared part of `get_contents`: checks, then fills the arrays.
///
/// # Safety
/// The arrays point to `max_*` writable values (or are NULL when empty).
#[allow(clippy::too_many_arguments)]
unsafe fn contents_impl(
    st: &mut State,
    dt: MPI_Datatype,
    large_query: bool,
    max: [i64; 4],
    ia: *mut c_int,
    aa: *mut MPI_Aint,
    la: *mut MPI_Count,
    da: *mut MPI_Datatype,
) -> MpiResult<()> {
    let t = st.types.lookup(dt)?;
    let Some(c) = &t.contents else {
        bail!(MPI_ERR_TYPE, "MPI_Type_get_contents of a predefined datatype (combiner MPI_COMBINER_NAMED)");
    };
    let (i, a, l) = decoded(c, large_query);
    if (max[3] as i128) < c.types.len() as i128 {
        bail!(MPI_ERR_ARG, "array_of_datatypes: room for {} values, {} needed", max[3], c.types.len());
    }
    // SAFETY: forwarded contract.
    unsafe {
        out_arr(ia, max[0], i.iter().map(|&v| to_int(v, "integer argument")), "array_of_integers")?;
        out_arr(aa, max[1], a.iter().map(|&v| Ok(v)), "array_of_addresses")?;
        if !l.is_empty() {
            out_arr(la, max[2], l.iter().map(|&v| Ok(v)), "array_of_large_counts")?;
        }
    }
    let handles: Vec<MpiResult<MPI_Datatype>> = c.types.iter().map(|t| Ok(st.types.handle_for(t))).collect();
    // SAFETY: forwarded contract.
    unsafe { out_arr(da, max[3], handles.into_iter(), "array_of_datatypes") }
}

pub unsafe fn MPI_Type_get_contents(
    datatype: MPI_Datatype,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_datatypes: *mut MPI_Datatype,
) -> c_int {
    let max = [max_integers as i64, max_addresses as i64, 0, max_datatypes as i64];
    let r = rt::with(|st| {
        // SAFETY: the caller passes arrays of the given sizes.
        unsafe {
            contents_impl(
                st,
                datatype,
                false,
                max,
                array_of_integers,
                array_of_addresses,
                std::ptr::null_mut(),
                array_of_datatypes,
            )
        }
    });
    ret(WORLD, "MPI_Type_get_contents", r)
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn MPI_Type_get_contents_c(
    datatype: MPI_Datatype,
    max_integers: MPI_Count,
    max_addresses: MPI_Count,
    max_large_counts: MPI_Count,
    max_datatypes: MPI_Count,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut MPI_Aint,
    array_of_large_counts: *mut MPI_Count,
    array_of_datatypes: *mut MPI_Datatype,
) -> c_int {
    let max = [max_integers, max_addresses, max_large_counts, max_datatypes];
    let r = rt::with(|st| {
        // SAFETY: the caller passes arrays of the given sizes.
        unsafe {
            contents_impl(
                st,
                datatype,
                true,
                max,
                array_of_integers,
                array_of_addresses,
                array_of_large_counts,
                array_of_datatypes,
            )
        }
    });
    ret(WORLD, "MPI_Type_get_contents_c", r)
}

// ---------------------------------------------------------------------------
// Queries

fn status_bytes(status: *const MPI_Status) -> MpiResult<u64> {
    if status.is_null() || status as usize == MPI_STATUS_IGNORE {
        bail!(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE");
    }
    // SAFETY: checked non-null; the caller passes a status.
    Ok(unsafe { (*status).byte_count() })
}

fn count_of(bytes: u64, size: usize) -> i64 {
    if size == 0 {
        return if bytes == 0 { 0 } else { MPI_UNDEFINED as i64 };
    }
    if !bytes.is_multiple_of(size as u64) {
        return MPI_UNDEFINED as i64;
    }
    (bytes / size as u64) as i64
}

fn elements_of(bytes: u64, dt: &Dtype) -> i64 {
    dt.elements_in(bytes).map(|e| e as i64).unwrap_or(MPI_UNDEFINED as i64)
}

fn clamp_int(v: i64) -> c_int {
    if v > c_int::MAX as i64 {
        MPI_UNDEFINED
    } else {
        v as c_int
    }
}

/// Runs `f` on the type `datatype` (committed or not) and its received bytes.
fn with_status<T>(status: *const MPI_Status, datatype: MPI_Datatype, f: impl FnOnce(u64, &Dtype) -> T) -> MpiResult<T> {
    rt::with(|st| {
        let b = status_bytes(status)?;
        let dt = st.types.lookup(datatype)?;
        Ok(f(b, &dt))
    })
}

pub unsafe fn MPI_Get_count(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> c_int {
    let r = with_status(status, datatype, |b, t| clamp_int(count_of(b, t.size))).and_then(|v| put(count, v, "count"));
    ret(WORLD, "MPI_Get_count", r)
}

pub unsafe fn MPI_Get_count_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    let r = with_status(status, datatype, |b, t| count_of(b, t.size)).and_then(|v| put(count, v, "count"));
    ret(WORLD, "MPI_Get_count_c", r)
}

pub unsafe fn MPI_Get_elements(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> c_int {
    let r = with_status(status, datatype, |b, t| clamp_int(elements_of(b, t))).and_then(|v| put(count, v, "count"));
    ret(WORLD, "MPI_Get_elements", r)
}

pub unsafe fn MPI_Get_elements_x(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    let r = with_status(status, datatype, elements_of).and_then(|v| put(count, v, "count"));
    ret(WORLD, "MPI_Get_elements_x", r)
}

pub unsafe fn MPI_Get_elements_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    MPI_Get_elements_x(status, datatype, count)
}

pub unsafe fn MPI_Status_set_elements(status: *mut MPI_Status, datatype: MPI_Datatype, count: c_int) -> c_int {
    MPI_Status_set_elements_x(status, datatype, count as MPI_Count)
}

pub unsafe fn MPI_Status_set_elements_c(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> c_int {
    MPI_Status_set_elements_x(status, datatype, count)
}

pub unsafe fn MPI_Status_set_elements_x(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> c_int {
    let r = rt::with(|st| {
        if status.is_null() || status as usize == MPI_STATUS_IGNORE {
            bail!(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE");
        }
        if count < 0 {
            bail!(MPI_ERR_COUNT, "negative count {count}");
        }
        let dt = st.types.lookup(datatype)?;
        // SAFETY: checked non-NULL; the caller passes a status.
        unsafe { (*status).set_byte_count(dt.bytes_of_elements(count as u64)) };
        Ok(())
    });
    ret(WORLD, "MPI_Status_set_elements_x", r)
}

/// Runs `f` on a type (committed or not).
fn query<T>(datatype: MPI_Datatype, f: impl FnOnce(&Dtype) -> MpiResult<T>) -> MpiResult<T> {
    rt::with(|st| f(&*st.types.lookup(datatype)?))
}

pub unsafe fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    let r = query(datatype, |t| put(size, clamp_int(t.size as i64), "size"));
    ret(WORLD, "MPI_Type_size", r)
}

pub unsafe fn MPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    let r = query(datatype, |t| put(size, t.size as i64, "size"));
    ret(WORLD, "MPI_Type_size_x", r)
}

pub unsafe fn MPI_Type_size_c(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    MPI_Type_size_x(datatype, size)
}

/// Writes two bounds of a type (`f` picks them) through `a` and `b`.
///
/// # Safety
/// `a` and `b` are NULL or writable.
unsafe fn put_bounds(
    datatype: MPI_Datatype,
    a: *mut MPI_Aint,
    b: *mut MPI_Aint,
    name: &str,
    f: fn(&Dtype) -> (isize, isize),
) -> c_int {
    let r = query(datatype, |t| {
        let (x, y) = f(t);
        put(a, x as i64, "lb")?;
        put(b, y as i64, "extent")
    });
    ret(WORLD, name, r)
}

pub unsafe fn MPI_Type_get_extent(datatype: MPI_Datatype, lb: *mut MPI_Aint, extent: *mut MPI_Aint) -> c_int {
    put_bounds(datatype, lb, extent, "MPI_Type_get_extent", |t| (t.lb, t.extent))
}

pub unsafe fn MPI_Type_get_extent_x(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) -> c_int {
    MPI_Type_get_extent(datatype, lb, extent)
}

pub unsafe fn MPI_Type_get_extent_c(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) -> c_int {
    MPI_Type_get_extent(datatype, lb, extent)
}

pub unsafe fn MPI_Type_get_true_extent(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Aint,
    true_extent: *mut MPI_Aint,
) -> c_int {
    put_bounds(datatype, true_lb, true_extent, "MPI_Type_get_true_extent", |t| (t.true_lb, t.true_extent))
}

pub unsafe fn MPI_Type_get_true_extent_x(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Count,
    true_extent: *mut MPI_Count,
) -> c_int {
    MPI_Type_get_true_extent(datatype, true_lb, true_extent)
}

pub unsafe fn MPI_Type_get_true_extent_c(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Count,
    true_extent: *mut MPI_Count,
) -> c_int {
    MPI_Type_get_true_extent(datatype, true_lb, true_extent)
}

pub unsafe fn MPI_Type_extent(datatype: MPI_Datatype, extent: *mut MPI_Aint) -> c_int {
    let r = query(datatype, |t| put(extent, t.extent as i64, "extent"));
    ret(WORLD, "MPI_Type_extent", r)
}

pub unsafe fn MPI_Type_lb(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> c_int {
    let r = query(datatype, |t| put(displacement, t.lb as i64, "displacement"));
    ret(WORLD, "MPI_Type_lb", r)
}

pub unsafe fn MPI_Type_ub(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> c_int {
    let r = query(datatype, |t| put(displacement, (t.lb + t.extent) as i64, "displacement"));
    ret(WORLD, "MPI_Type_ub", r)
}

pub unsafe fn MPI_Type_get_name(datatype: MPI_Datatype, type_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let name = st.types.name(datatype)?;
        if type_name.is_null() {
            bail!(MPI_ERR_ARG, "type_name is a NULL pointer");
        }
        // SAFETY: the caller passes a buffer of MPI_MAX_OBJECT_NAME chars.
        let n = unsafe { put_str(type_name, MPI_MAX_OBJECT_NAME as usize, &name) };
        put(resultlen, n, "resultlen")
    });
    ret(WORLD, "MPI_Type_get_name", r)
}

pub unsafe fn MPI_Type_set_name(datatype: MPI_Datatype, type_name: *const c_char) -> c_int {
    let r = rt::with(|st| {
        if type_name.is_null() {
            bail!(MPI_ERR_ARG, "type_name is a NULL pointer");
        }
        // SAFETY: non-NULL; the caller passes a NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(type_name) }.to_string_lossy();
        let mut end = s.len().min(MPI_MAX_OBJECT_NAME as usize - 1);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        st.types.set_name(datatype, s[..end].to_string())
    });
    ret(WORLD, "MPI_Type_set_name", r)
}

pub unsafe fn MPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut MPI_Datatype) -> c_int {
    let r = dtm::match_size(typeclass, size).and_then(|t| put(datatype, t, "datatype"));
    ret(WORLD, "MPI_Type_match_size", r)
}

pub unsafe fn MPI_Type_get_value_index(
    value_type: MPI_Datatype,
    index_type: MPI_Datatype,
    pair_type: *mut MPI_Datatype,
) -> c_int {
    let r = rt::with(|st| {
        st.types.lookup(value_type)?;
        st.types.lookup(index_type)?;
        let p = match (value_type, index_type) {
            (MPI_FLOAT, MPI_INT) => MPI_FLOAT_INT,
            (MPI_DOUBLE, MPI_INT) => MPI_DOUBLE_INT,
            (MPI_LONG, MPI_INT) => MPI_LONG_INT,
            (MPI_SHORT, MPI_INT) => MPI_SHORT_INT,
            (MPI_LONG_DOUBLE, MPI_INT) => MPI_LONG_DOUBLE_INT,
            (MPI_INT, MPI_INT) => MPI_2INT,
            _ => MPI_DATATYPE_NULL,
        };
        put(pair_type, p, "pair_type")
    });
    ret(WORLD, "MPI_Type_get_value_index", r)
}

/// The `MPI_Type_create_f90_*` calls.
///
/// # Safety
/// `newtype` is NULL or writable.
unsafe fn f90_impl(combiner: c_int, p: c_int, r: c_int, newtype: *mut MPI_Datatype, name: &str) -> c_int {
    let r = rt::with(|st| {
        let h = st.types.f90(combiner, p, r)?;
        put(newtype, h, "newtype")
    });
    ret(WORLD, name, r)
}

pub unsafe fn MPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    f90_impl(MPI_COMBINER_F90_REAL, p, r, newtype, "MPI_Type_create_f90_real")
}

pub unsafe fn MPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    f90_impl(MPI_COMBINER_F90_COMPLEX, p, r, newtype, "MPI_Type_create_f90_complex")
}

pub unsafe fn MPI_Type_create_f90_integer(r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    f90_impl(MPI_COMBINER_F90_INTEGER, MPI_UNDEFINED, r, newtype, "MPI_Type_create_f90_integer")
}

pub unsafe fn MPI_Type_toint(datatype: MPI_Datatype) -> c_int {
    datatype
}

pub unsafe fn MPI_Type_fromint(datatype: c_int) -> MPI_Datatype {
    datatype
}

// ---------------------------------------------------------------------------
// Addresses

pub unsafe fn MPI_Get_address(location: *const c_void, address: *mut MPI_Aint) -> c_int {
    // Usable before MPI_Init: no state involved.
    match put(address, location as usize as i64, "address") {
        Ok(()) => MPI_SUCCESS,
        Err(e) => ret(WORLD, "MPI_Get_address", Err(e)),
    }
}

pub unsafe fn MPI_Address(location: *const c_void, address: *mut MPI_Aint) -> c_int {
    MPI_Get_address(location, address)
}

pub unsafe fn MPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

pub unsafe fn MPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}

// ---------------------------------------------------------------------------
// Packing

/// Which format a pack call writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rep {
    Native,
    External32,
}

/// Bytes of `count` elements in `rep`.
fn packed_bytes(t: &Dtype, count: usize, rep: Rep) -> usize {
    match rep {
        Rep::Native => t.packed_size(count),
        Rep::External32 => t.ext_size(count),
    }
}

fn check_datarep(datarep: *const c_char) -> MpiResult<()> {
    if datarep.is_null() {
        bail!(MPI_ERR_ARG, "datarep is NULL");
    }
    // SAFETY: non-NULL; the caller passes a NUL-terminated string.
    let s = unsafe { std::ffi::CStr::from_ptr(datarep) };
    if s.to_bytes() != b"external32" {
        bail!(MPI_ERR_ARG, "data representation {:?} is not supported (only \"external32\")", s.to_string_lossy());
    }
    Ok(())
}

/// Reads a position argument.
///
/// # Safety
/// `p` is NULL or points to a readable value.
unsafe fn read_pos<T: Copy + Into<i64>>(p: *const T) -> MpiResult<usize> {
    if p.is_null() {
        bail!(MPI_ERR_ARG, "position is a NULL pointer");
    }
    // SAFETY: checked non-NULL.
    let v: i64 = unsafe { *p }.into();
    if v < 0 {
        bail!(MPI_ERR_ARG, "negative position {v}");
    }
    Ok(v as usize)
}

/// The type (committed) and count for a pack call; `comm` must be valid.
fn pack_args(comm: Option<MPI_Comm>, datatype: MPI_Datatype, count: i64) -> MpiResult<(Arc<Dtype>, usize)> {
    rt::with(|st| {
        if let Some(c) = comm {
            st.comms.get(c)?;
        }
        let n = check_count(count)?;
        Ok((st.types.get(datatype)?, n))
    })
}

/// The type, count and bytes of a pack or unpack of `count` elements at
/// `pos` in a packed buffer of `bufsize` bytes (`short`: the error class
/// when they do not fit); None if there is nothing to copy.
#[allow(clippy::too_many_arguments)]
fn window(
    comm: Option<MPI_Comm>,
    rep: Rep,
    datatype: MPI_Datatype,
    count: i64,
    bufsize: i64,
    pos: usize,
    buf: *const c_void,
    short: c_int,
) -> MpiResult<Option<(Arc<Dtype>, usize, usize)>> {
    let (t, n) = pack_args(comm, datatype, count)?;
    let need = packed_bytes(&t, n, rep);
    if bufsize < 0 || (bufsize as u64) < pos as u64 + need as u64 {
        bail!(short, "{need} bytes at position {pos} do not fit in the {bufsize}-byte packed buffer");
    }
    if need == 0 {
        return Ok(None);
    }
    if buf.is_null() {
        bail!(MPI_ERR_BUFFER, "the packed buffer is NULL");
    }
    Ok(Some((t, n, need)))
}

/// Packs `count` elements at `inbuf` at `*pos` in `outbuf[..outsize]`.
///
/// # Safety
/// `inbuf` addresses `count` elements; `outbuf` has `outsize` bytes.
#[allow(clippy::too_many_arguments)]
unsafe fn pack_impl(
    comm: Option<MPI_Comm>,
    rep: Rep,
    inbuf: *const c_void,
    count: i64,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: i64,
    pos: usize,
) -> MpiResult<usize> {
    let Some((t, n, need)) = window(comm, rep, datatype, count, outsize, pos, outbuf, MPI_ERR_ARG)? else {
        return Ok(pos);
    };
    // SAFETY: pos + need <= outsize bytes of the caller's output buffer.
    let out = unsafe { std::slice::from_raw_parts_mut((outbuf as *mut u8).add(pos), need) };
    match rep {
        // SAFETY: inbuf holds `n` elements of the type (caller).
        Rep::Native => unsafe { t.pack(inbuf as *const u8, n, out) },
        Rep::External32 => {
            let mut tmp = vec![0u8; t.packed_size(n)];
            // SAFETY: as above.
            unsafe { t.pack(inbuf as *const u8, n, &mut tmp) };
            t.native_to_ext(&tmp, n, out);
        }
    }
    Ok(pos + need)
}

/// Unpacks `count` elements from `inbuf[*pos..insize]` into `outbuf`.
///
/// # Safety
/// `inbuf` has `insize` bytes; `outbuf` addresses `count` elements.
#[allow(clippy::too_many_arguments)]
unsafe fn unpack_impl(
    comm: Option<MPI_Comm>,
    rep: Rep,
    inbuf: *const c_void,
    insize: i64,
    pos: usize,
    outbuf: *mut c_void,
    count: i64,
    datatype: MPI_Datatype,
) -> MpiResult<usize> {
    let Some((t, n, need)) = window(comm, rep, datatype, count, insize, pos, inbuf, MPI_ERR_TRUNCATE)? else {
        return Ok(pos);
    };
    // SAFETY: pos + need <= insize bytes of the caller's input buffer.
    let src = unsafe { std::slice::from_raw_parts((inbuf as *const u8).add(pos), need) };
    match rep {
        // SAFETY: outbuf holds `n` elements of the type (caller).
        Rep::Native => unsafe { t.unpack(src, outbuf as *mut u8) },
        Rep::External32 => {
            let mut tmp = vec![0u8; t.packed_size(n)];
            t.ext_to_native(src, n, &mut tmp);
            // SAFETY: as above.
            unsafe { t.unpack(&tmp, outbuf as *mut u8) };
        }
    }
    Ok(pos + need)
}

/// Runs `f` from the position `*p` and stores the position it returns.
///
/// # Safety
/// `p` is NULL or points to the caller's position variable.
unsafe fn at_position<T: Copy + Into<i64> + TryFrom<usize>>(
    p: *mut T,
    f: impl FnOnce(usize) -> MpiResult<usize>,
) -> MpiResult<()> {
    // SAFETY: forwarded contract.
    unsafe {
        let q = f(read_pos(p)?)?;
        write_pos(p, q)
    }
}

/// Writes a new position back.
///
/// # Safety
/// `p` points to a writable value (checked by `read_pos`).
unsafe fn write_pos<T: TryFrom<usize>>(p: *mut T, v: usize) -> MpiResult<()> {
    let v = T::try_from(v).map_err(|_| MpiError::new(MPI_ERR_VALUE_TOO_LARGE, format!("position {v} does not fit")))?;
    // SAFETY: the caller's position variable.
    unsafe { p.write(v) };
    Ok(())
}

twins! {
    pub unsafe fn MPI_Pack | MPI_Pack_c(inbuf: *const c_void, incount: Count, datatype: MPI_Datatype, outbuf: *mut c_void, outsize: Count, position: *mut Count, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's buffers and position.
        let r = unsafe { at_position(position, |p| pack_impl(Some(comm), Rep::Native, inbuf, incount as i64, datatype, outbuf, outsize as i64, p)) };
        ret(comm, NAME, r)
    }

    pub unsafe fn MPI_Unpack | MPI_Unpack_c(inbuf: *const c_void, insize: Count, position: *mut Count, outbuf: *mut c_void, outcount: Count, datatype: MPI_Datatype, comm: MPI_Comm) -> c_int {
        // SAFETY: the caller's buffers and position.
        let r = unsafe { at_position(position, |p| unpack_impl(Some(comm), Rep::Native, inbuf, insize as i64, p, outbuf, outcount as i64, datatype)) };
        ret(comm, NAME, r)
    }
}

fn pack_size_impl(comm: Option<MPI_Comm>, rep: Rep, count: i64, datatype: MPI_Datatype) -> MpiResult<usize> {
    let (t, n) = pack_args(comm, datatype, count)?;
    Ok(packed_bytes(&t, n, rep))
}

pub unsafe fn MPI_Pack_size(incount: c_int, datatype: MPI_Datatype, comm: MPI_Comm, size: *mut c_int) -> c_int {
    let r = pack_size_impl(Some(comm), Rep::Native, incount as i64, datatype)
        .and_then(|s| put(size, to_int(s as i64, "pack size")?, "size"));
    ret(comm, "MPI_Pack_size", r)
}

pub unsafe fn MPI_Pack_size_c(
    incount: MPI_Count,
    datatype: MPI_Datatype,
    comm: MPI_Comm,
    size: *mut MPI_Count,
) -> c_int {
    let r = pack_size_impl(Some(comm), Rep::Native, incount, datatype).and_then(|s| put(size, s as i64, "size"));
    ret(comm, "MPI_Pack_size_c", r)
}

pub unsafe fn MPI_Pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: c_int,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Aint,
    position: *mut MPI_Aint,
) -> c_int {
    MPI_Pack_external_c(datarep, inbuf, incount as i64, datatype, outbuf, outsize, position)
}

pub unsafe fn MPI_Pack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: MPI_Count,
    datatype: MPI_Datatype,
    outbuf: *mut c_void,
    outsize: MPI_Count,
    position: *mut MPI_Count,
) -> c_int {
    // SAFETY: the caller's buffers and position.
    let r = check_datarep(datarep).and_then(|()| unsafe {
        at_position(position, |p| pack_impl(None, Rep::External32, inbuf, incount, datatype, outbuf, outsize, p))
    });
    ret(WORLD, "MPI_Pack_external", r)
}

pub unsafe fn MPI_Unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Aint,
    position: *mut MPI_Aint,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: MPI_Datatype,
) -> c_int {
    MPI_Unpack_external_c(datarep, inbuf, insize, position, outbuf, outcount as i64, datatype)
}

pub unsafe fn MPI_Unpack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: MPI_Count,
    position: *mut MPI_Count,
    outbuf: *mut c_void,
    outcount: MPI_Count,
    datatype: MPI_Datatype,
) -> c_int {
    // SAFETY: the caller's buffers and position.
    let r = check_datarep(datarep).and_then(|()| unsafe {
        at_position(position, |p| unpack_impl(None, Rep::External32, inbuf, insize, p, outbuf, outcount, datatype))
    });
    ret(WORLD, "MPI_Unpack_external", r)
}

pub unsafe fn MPI_Pack_external_size(
    datarep: *const c_char,
    incount: c_int,
    datatype: MPI_Datatype,
    size: *mut MPI_Aint,
) -> c_int {
    MPI_Pack_external_size_c(datarep, incount as i64, datatype, size)
}

pub unsafe fn MPI_Pack_external_size_c(
    datarep: *const c_char,
    incount: MPI_Count,
    datatype: MPI_Datatype,
    size: *mut MPI_Count,
) -> c_int {
    let r = check_datarep(datarep)
        .and_then(|()| pack_size_impl(None, Rep::External32, incount, datatype))
        .and_then(|s| put(size, s as i64, "size"));
    ret(WORLD, "MPI_Pack_external_size", r)
}
