//! Chapter 4: datatypes — constructors, queries, decoding, addresses, plus
//! counts of received data (packing is `capi/pack.rs`).
//!
//! This module reads the C arguments (arrays become slices, counts wide
//! integers) and hands them to `rt::datatype::construct` and
//! `rt::datatype::decode`. The `_c` (large-count) constructors and their
//! `int` counterparts share one implementation over `i64` arguments.
//! Errors of calls without a communicator go to the handler of
//! `MPI_COMM_WORLD`.

use std::os::raw::{c_char, c_int, c_void};

use mpi_api::abi::*;

use super::p2p::twins;
use super::{put_str, ret, status_mut, Out};
use crate::bail;
use crate::rt::datatype::construct::{self, check_ndims, DarrayArgs, IndexedArgs, SubarrayArgs, VectorArgs};
use crate::rt::datatype::{check_count, Dtype};
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

pub(super) fn to_int(v: i64, what: &str) -> MpiResult<c_int> {
    c_int::try_from(v).map_err(|_| MpiError::new(MPI_ERR_VALUE_TOO_LARGE, format!("{what} {v} does not fit in an int")))
}

/// The `newtype` argument of a constructor.
///
/// # Safety
/// `p` is NULL or points to a writable `MPI_Datatype` that nothing else
/// accesses during `'a`.
unsafe fn newtype_out<'a>(p: *mut MPI_Datatype) -> Out<'a, MPI_Datatype> {
    // SAFETY: this function's contract is `Out::new`'s.
    unsafe { Out::new(p, "newtype") }
}

/// Runs a constructor and stores the new (uncommitted) type in `*newtype`.
fn construct(mut newtype: Out<'_, MPI_Datatype>, name: &str, f: impl FnOnce(&mut State) -> MpiResult<Dtype>) -> c_int {
    let r = rt::with(|st| {
        if newtype.is_null() {
            bail!(MPI_ERR_ARG, "newtype is a NULL pointer");
        }
        let t = f(st)?;
        let h = st.types.insert(t);
        newtype.put(h)
    });
    ret(WORLD, name, r)
}

// ---------------------------------------------------------------------------
// Constructors (shared implementations over i64 arguments)

fn contiguous_impl(count: i64, old: MPI_Datatype, newtype: Out<'_, MPI_Datatype>, large: bool, name: &str) -> c_int {
    construct(newtype, name, |st| construct::contiguous_of(&st.types, count, old, large))
}

fn vector_impl(args: VectorArgs, newtype: Out<'_, MPI_Datatype>, large: bool, name: &str) -> c_int {
    construct(newtype, name, |st| construct::vector_of(&st.types, &args, large))
}

fn vector(count: i64, blocklength: i64, stride: i64, old: MPI_Datatype, stride_in_bytes: bool) -> VectorArgs {
    VectorArgs { count, blocklength, stride, old, stride_in_bytes }
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
        // SAFETY: `bls` is NULL or holds `count` (= n) lengths (the contract).
        None => unsafe { arr(bls, n, "array_of_blocklengths") }?.iter().map(|&v| v.into()).collect(),
    };
    // SAFETY: `disps` is NULL or holds `count` (= n) displacements (the
    // contract).
    let d = unsafe { arr(disps, n, "array_of_displacements") }?.iter().map(|&v| v.into()).collect();
    Ok((lens, d))
}

/// How an indexed constructor reads its arguments: displacements in bytes
/// (`h` forms), one length for all blocks (`_block` forms).
#[derive(Clone, Copy)]
struct IndexedForm {
    bytes: bool,
    one_blocklength: bool,
}

/// The indexed constructors, their arrays read from C.
///
/// # Safety
/// The arrays hold `count` values each (no lengths if `one_blocklength`,
/// whose length is `block`); `newtype` is NULL or a writable handle.
unsafe fn indexed_entry<L: Copy + Into<i64>, D: Copy + Into<i64>>(
    count: i64,
    (bls, block): (*const L, i64),
    disps: *const D,
    (old, newtype): (MPI_Datatype, *mut MPI_Datatype),
    form: IndexedForm,
    large: bool,
    name: &str,
) -> c_int {
    let one = form.one_blocklength.then_some(block);
    // SAFETY: the arrays hold `count` values each, and no lengths are read
    // when `one` is given (the contract, `one_blocklength`).
    match unsafe { indexed_args(count, bls, disps, one) } {
        Ok((blocklengths, displacements)) => {
            let args = IndexedArgs {
                count,
                blocklengths,
                displacements,
                old,
                displacements_in_bytes: form.bytes,
                one_blocklength: form.one_blocklength,
            };
            // SAFETY: `newtype` is NULL or a writable handle (the contract).
            let newtype = unsafe { newtype_out(newtype) };
            construct(newtype, name, |st| construct::indexed_of(&st.types, args, large))
        }
        Err(e) => ret(WORLD, name, Err(e)),
    }
}

const INDEXED: IndexedForm = IndexedForm { bytes: false, one_blocklength: false };
const HINDEXED: IndexedForm = IndexedForm { bytes: true, one_blocklength: false };
const INDEXED_BLOCK: IndexedForm = IndexedForm { bytes: false, one_blocklength: true };
const HINDEXED_BLOCK: IndexedForm = IndexedForm { bytes: true, one_blocklength: true };
const NO_LENGTHS: *const i64 = std::ptr::null();

twins! {
    pub unsafe fn MPI_Type_contiguous | MPI_Type_contiguous_c(count: Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: `newtype` is NULL or points to a writable MPI_Datatype
        // (the caller's contract).
        let newtype = unsafe { newtype_out(newtype) };
        contiguous_impl(count as i64, oldtype, newtype, LARGE, NAME)
    }

    pub unsafe fn MPI_Type_vector | MPI_Type_vector_c(count: Count, blocklength: Count, stride: Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: `newtype` is NULL or points to a writable MPI_Datatype
        // (the caller's contract).
        let newtype = unsafe { newtype_out(newtype) };
        vector_impl(vector(count as i64, blocklength as i64, stride as i64, oldtype, false), newtype, LARGE, NAME)
    }

    pub unsafe fn MPI_Type_create_hvector | MPI_Type_create_hvector_c(count: Count, blocklength: Count, stride: Offset, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: `newtype` is NULL or points to a writable MPI_Datatype
        // (the caller's contract).
        let newtype = unsafe { newtype_out(newtype) };
        vector_impl(vector(count as i64, blocklength as i64, stride, oldtype, true), newtype, LARGE, NAME)
    }
}

pub unsafe fn MPI_Type_hvector(
    count: c_int,
    blocklength: c_int,
    stride: MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    // SAFETY: `newtype` is NULL or points to a writable MPI_Datatype (the
    // caller's contract).
    let newtype = unsafe { newtype_out(newtype) };
    vector_impl(vector(count as i64, blocklength as i64, stride, oldtype, true), newtype, false, "MPI_Type_hvector")
}

twins! {
    pub unsafe fn MPI_Type_indexed | MPI_Type_indexed_c(count: Count, array_of_blocklengths: *const Count, array_of_displacements: *const Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: the caller passes arrays of `count` values.
        unsafe { indexed_entry(count as i64, (array_of_blocklengths, 0), array_of_displacements, (oldtype, newtype), INDEXED, LARGE, NAME) }
    }

    pub unsafe fn MPI_Type_create_hindexed | MPI_Type_create_hindexed_c(count: Count, array_of_blocklengths: *const Count, array_of_displacements: *const Offset, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: the caller passes arrays of `count` values.
        unsafe { indexed_entry(count as i64, (array_of_blocklengths, 0), array_of_displacements, (oldtype, newtype), HINDEXED, LARGE, NAME) }
    }

    pub unsafe fn MPI_Type_create_indexed_block | MPI_Type_create_indexed_block_c(count: Count, blocklength: Count, array_of_displacements: *const Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: the caller passes an array of `count` displacements.
        unsafe { indexed_entry(count as i64, (NO_LENGTHS, blocklength as i64), array_of_displacements, (oldtype, newtype), INDEXED_BLOCK, LARGE, NAME) }
    }

    pub unsafe fn MPI_Type_create_hindexed_block | MPI_Type_create_hindexed_block_c(count: Count, blocklength: Count, array_of_displacements: *const Offset, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: the caller passes an array of `count` displacements.
        unsafe { indexed_entry(count as i64, (NO_LENGTHS, blocklength as i64), array_of_displacements, (oldtype, newtype), HINDEXED_BLOCK, LARGE, NAME) }
    }
}

pub unsafe fn MPI_Type_hindexed(
    count: c_int,
    array_of_blocklengths: *mut c_int,
    array_of_displacements: *mut MPI_Aint,
    oldtype: MPI_Datatype,
    newtype: *mut MPI_Datatype,
) -> c_int {
    // SAFETY: the same arrays of `count` values, which the MPI-2 form only
    // reads.
    unsafe { MPI_Type_create_hindexed(count, array_of_blocklengths, array_of_displacements, oldtype, newtype) }
}

/// Struct: (lengths, displacements in bytes, types).
///
/// # Safety
/// The array pointers address `count` values each; `newtype` is NULL or a
/// writable handle.
unsafe fn struct_impl<L: Copy + Into<i64>>(
    count: i64,
    bls: *const L,
    disps: *const i64,
    types: *const MPI_Datatype,
    newtype: *mut MPI_Datatype,
    large: bool,
    name: &str,
) -> c_int {
    // SAFETY: `newtype` is NULL or a writable handle (the contract).
    let newtype = unsafe { newtype_out(newtype) };
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
        construct::struct_of(&st.types, count, &l, d, t, large)
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
/// The array pointers address `ndims` values each; `newtype` is NULL or a
/// writable handle.
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
    // SAFETY: `newtype` is NULL or a writable handle (the contract).
    let newtype = unsafe { newtype_out(newtype) };
    construct(newtype, name, |st| {
        let n = check_ndims(ndims)?;
        let wide = |p: *const T, what: &str| -> MpiResult<Vec<i64>> {
            // SAFETY: the caller passes arrays of `ndims` values.
            Ok(unsafe { arr(p, n, what) }?.iter().map(|&v| v.into()).collect())
        };
        let args = SubarrayArgs {
            sizes: wide(sizes, "array_of_sizes")?,
            subsizes: wide(subsizes, "array_of_subsizes")?,
            starts: wide(starts, "array_of_starts")?,
            order,
            old,
        };
        construct::subarray_of(&st.types, &args, large)
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
/// The array pointers address `ndims` values each; `newtype` is NULL or a
/// writable handle.
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
    // SAFETY: `newtype` is NULL or a writable handle (the contract).
    let newtype = unsafe { newtype_out(newtype) };
    construct(newtype, name, |st| {
        let n = check_ndims(ndims)?;
        // SAFETY: the caller passes arrays of `ndims` values.
        let args = unsafe {
            DarrayArgs {
                size,
                rank,
                gsizes: arr(gsizes, n, "array_of_gsizes")?.iter().map(|&v| v.into()).collect(),
                distribs: arr(distribs, n, "array_of_distribs")?.to_vec(),
                dargs: arr(dargs, n, "array_of_dargs")?.to_vec(),
                psizes: arr(psizes, n, "array_of_psizes")?.to_vec(),
                order,
                old,
            }
        };
        construct::darray_of(&st.types, &args, large)
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

fn resized_impl(
    old: MPI_Datatype,
    lb: i64,
    extent: i64,
    newtype: Out<'_, MPI_Datatype>,
    large: bool,
    name: &str,
) -> c_int {
    construct(newtype, name, |st| construct::resized_of(&st.types, old, lb, extent, large))
}

twins! {
    pub unsafe fn MPI_Type_create_resized | MPI_Type_create_resized_c(oldtype: MPI_Datatype, lb: Offset, extent: Offset, newtype: *mut MPI_Datatype) -> c_int {
        // SAFETY: `newtype` is NULL or points to a writable MPI_Datatype
        // (the caller's contract).
        let newtype = unsafe { newtype_out(newtype) };
        resized_impl(oldtype, lb, extent, newtype, LARGE, NAME)
    }
}

pub unsafe fn MPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `newtype` is NULL or points to a writable MPI_Datatype (the
    // caller's contract).
    let mut newtype = unsafe { newtype_out(newtype) };
    let r = if newtype.is_null() {
        Err(MpiError::new(MPI_ERR_ARG, "newtype is a NULL pointer"))
    } else {
        // A failed copy callback fails the call with MPI_DATATYPE_NULL.
        let (h, r) = crate::caching::type_dup(oldtype);
        newtype.put(h).and(r)
    };
    ret(WORLD, "MPI_Type_dup", r)
}

pub unsafe fn MPI_Type_commit(datatype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `datatype` is NULL or points to a readable MPI_Datatype (the
    // caller's contract); only read.
    let datatype = unsafe { datatype.as_ref() }.copied();
    let r = rt::with(|st| {
        let Some(datatype) = datatype else {
            bail!(MPI_ERR_ARG, "datatype is a NULL pointer");
        };
        st.types.commit(datatype)
    });
    ret(WORLD, "MPI_Type_commit", r)
}

pub unsafe fn MPI_Type_free(datatype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `datatype` is NULL or points to an MPI_Datatype the call may
    // read and write (the caller's contract, an INOUT handle).
    let datatype = unsafe { datatype.as_mut() };
    // Attribute delete callbacks run first, without the lock.
    if let Some(&d) = datatype.as_deref() {
        if let Err(e) = crate::caching::type_attrs_free(d) {
            return ret(WORLD, "MPI_Type_free", Err(e));
        }
    }
    let r = rt::with(|st| {
        let Some(datatype) = datatype else {
            bail!(MPI_ERR_ARG, "datatype is a NULL pointer");
        };
        st.types.free(*datatype)?;
        *datatype = MPI_DATATYPE_NULL;
        Ok(())
    });
    ret(WORLD, "MPI_Type_free", r)
}

// ---------------------------------------------------------------------------
// Decoding

pub unsafe fn MPI_Type_get_envelope(
    datatype: MPI_Datatype,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    // SAFETY: the four are NULL or point to writable, distinct ints (the
    // caller's contract).
    let (mut num_integers, mut num_addresses, mut num_datatypes, mut combiner) = unsafe {
        (
            Out::new(num_integers, "num_integers"),
            Out::new(num_addresses, "num_addresses"),
            Out::new(num_datatypes, "num_datatypes"),
            Out::new(combiner, "combiner"),
        )
    };
    let r = rt::with(|st| {
        let e = st.types.envelope(datatype, false)?;
        num_integers.put(e.integers as c_int)?;
        num_addresses.put(e.addresses as c_int)?;
        num_datatypes.put(e.datatypes as c_int)?;
        combiner.put(e.combiner)
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
    // SAFETY: the four counts are NULL or point to writable, distinct
    // MPI_Counts, `combiner` to a writable int (the caller's contract).
    let (mut num_integers, mut num_addresses, mut num_large_counts, mut num_datatypes, mut combiner) = unsafe {
        (
            Out::new(num_integers, "num_integers"),
            Out::new(num_addresses, "num_addresses"),
            Out::new(num_large_counts, "num_large_counts"),
            Out::new(num_datatypes, "num_datatypes"),
            Out::new(combiner, "combiner"),
        )
    };
    let r = rt::with(|st| {
        let e = st.types.envelope(datatype, true)?;
        num_integers.put(e.integers)?;
        num_addresses.put(e.addresses)?;
        num_large_counts.put(e.large_counts)?;
        num_datatypes.put(e.datatypes)?;
        combiner.put(e.combiner)
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

/// The caller's output arrays of `MPI_Type_get_contents(_c)`, each with
/// its capacity.
struct ContentsOut {
    integers: (*mut c_int, i64),
    addresses: (*mut MPI_Aint, i64),
    large_counts: (*mut MPI_Count, i64),
    datatypes: (*mut MPI_Datatype, i64),
}

/// The shared part of `get_contents`: checks, then fills the arrays.
///
/// # Safety
/// The arrays point to their capacity of writable values (or are NULL when empty).
unsafe fn contents_impl(st: &mut State, dt: MPI_Datatype, large_query: bool, out: ContentsOut) -> MpiResult<()> {
    let c = st.types.contents(dt, large_query)?;
    let max_types = out.datatypes.1;
    if (max_types as i128) < c.types.len() as i128 {
        bail!(MPI_ERR_ARG, "array_of_datatypes: room for {max_types} values, {} needed", c.types.len());
    }
    // SAFETY: each array is NULL or has room for its capacity of values
    // (the contract), which `out_arr` checks the values against.
    unsafe {
        let (ia, max) = out.integers;
        out_arr(ia, max, c.integers.iter().map(|&v| to_int(v, "integer argument")), "array_of_integers")?;
        let (aa, max) = out.addresses;
        out_arr(aa, max, c.addresses.iter().map(|&v| Ok(v)), "array_of_addresses")?;
        if !c.large_counts.is_empty() {
            let (la, max) = out.large_counts;
            out_arr(la, max, c.large_counts.iter().map(|&v| Ok(v)), "array_of_large_counts")?;
        }
    }
    let handles: Vec<MpiResult<MPI_Datatype>> = c.types.iter().map(|t| Ok(st.types.handle_for(t))).collect();
    // SAFETY: `array_of_datatypes` is NULL or has room for `max_types`
    // handles (the contract).
    unsafe { out_arr(out.datatypes.0, max_types, handles.into_iter(), "array_of_datatypes") }
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
    let out = ContentsOut {
        integers: (array_of_integers, max_integers as i64),
        addresses: (array_of_addresses, max_addresses as i64),
        large_counts: (std::ptr::null_mut(), 0),
        datatypes: (array_of_datatypes, max_datatypes as i64),
    };
    // SAFETY: the caller passes arrays of the given sizes.
    let r = rt::with(|st| unsafe { contents_impl(st, datatype, false, out) });
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
    let out = ContentsOut {
        integers: (array_of_integers, max_integers),
        addresses: (array_of_addresses, max_addresses),
        large_counts: (array_of_large_counts, max_large_counts),
        datatypes: (array_of_datatypes, max_datatypes),
    };
    // SAFETY: the caller passes arrays of the given sizes.
    let r = rt::with(|st| unsafe { contents_impl(st, datatype, true, out) });
    ret(WORLD, "MPI_Type_get_contents_c", r)
}

// ---------------------------------------------------------------------------
// Queries

/// A status argument that is only read: `None` for NULL and
/// `MPI_STATUS_IGNORE`.
///
/// # Safety
/// `p` is NULL, `MPI_STATUS_IGNORE`, or points to a readable `MPI_Status`
/// that nothing writes during `'a`.
unsafe fn status_ref<'a>(p: *const MPI_Status) -> Option<&'a MPI_Status> {
    if p.is_null() || p as usize == MPI_STATUS_IGNORE {
        None
    } else {
        // SAFETY: neither NULL nor the ignore constant, so a readable
        // status by the contract.
        Some(unsafe { &*p })
    }
}

fn status_bytes(status: Option<&MPI_Status>) -> MpiResult<u64> {
    match status {
        Some(s) => Ok(s.byte_count()),
        None => bail!(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE"),
    }
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
fn with_status<T>(
    status: Option<&MPI_Status>,
    datatype: MPI_Datatype,
    f: impl FnOnce(u64, &Dtype) -> T,
) -> MpiResult<T> {
    rt::with(|st| {
        let b = status_bytes(status)?;
        let dt = st.types.lookup(datatype)?;
        Ok(f(b, &dt))
    })
}

pub unsafe fn MPI_Get_count(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a readable status,
    // `count` NULL or writable (the caller's contract).
    let (status, mut count) = unsafe { (status_ref(status), Out::new(count, "count")) };
    let r = with_status(status, datatype, |b, t| clamp_int(count_of(b, t.size))).and_then(|v| count.put(v));
    ret(WORLD, "MPI_Get_count", r)
}

pub unsafe fn MPI_Get_count_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a readable status,
    // `count` NULL or writable (the caller's contract).
    let (status, mut count) = unsafe { (status_ref(status), Out::new(count, "count")) };
    let r = with_status(status, datatype, |b, t| count_of(b, t.size)).and_then(|v| count.put(v));
    ret(WORLD, "MPI_Get_count_c", r)
}

pub unsafe fn MPI_Get_elements(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut c_int) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a readable status,
    // `count` NULL or writable (the caller's contract).
    let (status, mut count) = unsafe { (status_ref(status), Out::new(count, "count")) };
    let r = with_status(status, datatype, |b, t| clamp_int(elements_of(b, t))).and_then(|v| count.put(v));
    ret(WORLD, "MPI_Get_elements", r)
}

pub unsafe fn MPI_Get_elements_x(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a readable status,
    // `count` NULL or writable (the caller's contract).
    let (status, mut count) = unsafe { (status_ref(status), Out::new(count, "count")) };
    let r = with_status(status, datatype, elements_of).and_then(|v| count.put(v));
    ret(WORLD, "MPI_Get_elements_x", r)
}

pub unsafe fn MPI_Get_elements_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut MPI_Count) -> c_int {
    // SAFETY: the same arguments, under the same contract.
    unsafe { MPI_Get_elements_x(status, datatype, count) }
}

pub unsafe fn MPI_Status_set_elements(status: *mut MPI_Status, datatype: MPI_Datatype, count: c_int) -> c_int {
    // SAFETY: the same arguments, under the same contract.
    unsafe { MPI_Status_set_elements_x(status, datatype, count as MPI_Count) }
}

pub unsafe fn MPI_Status_set_elements_c(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> c_int {
    // SAFETY: the same arguments, under the same contract.
    unsafe { MPI_Status_set_elements_x(status, datatype, count) }
}

pub unsafe fn MPI_Status_set_elements_x(status: *mut MPI_Status, datatype: MPI_Datatype, count: MPI_Count) -> c_int {
    // SAFETY: `status` is NULL, MPI_STATUS_IGNORE or a writable status (the
    // caller's contract).
    let status = unsafe { status_mut(status) };
    let r = rt::with(|st| {
        let Some(status) = status else {
            bail!(MPI_ERR_ARG, "status is NULL or MPI_STATUS_IGNORE");
        };
        if count < 0 {
            bail!(MPI_ERR_COUNT, "negative count {count}");
        }
        let dt = st.types.lookup(datatype)?;
        status.set_byte_count(dt.bytes_of_elements(count as u64));
        Ok(())
    });
    ret(WORLD, "MPI_Status_set_elements_x", r)
}

/// Runs `f` on a type (committed or not).
fn query<T>(datatype: MPI_Datatype, f: impl FnOnce(&Dtype) -> MpiResult<T>) -> MpiResult<T> {
    rt::with(|st| f(&*st.types.lookup(datatype)?))
}

pub unsafe fn MPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    // SAFETY: `size` is NULL or a writable int (the caller's contract).
    let mut size = unsafe { Out::new(size, "size") };
    let r = query(datatype, |t| size.put(clamp_int(t.size as i64)));
    ret(WORLD, "MPI_Type_size", r)
}

pub unsafe fn MPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    // SAFETY: `size` is NULL or a writable MPI_Count (the caller's contract).
    let mut size = unsafe { Out::new(size, "size") };
    let r = query(datatype, |t| size.put(t.size as i64));
    ret(WORLD, "MPI_Type_size_x", r)
}

pub unsafe fn MPI_Type_size_c(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    // SAFETY: the same arguments, under the same contract.
    unsafe { MPI_Type_size_x(datatype, size) }
}

/// Writes two bounds of a type (`f` picks them) through `a` and `b`.
///
/// # Safety
/// `a` and `b` are NULL or point to writable, distinct `MPI_Aint`s.
unsafe fn put_bounds(
    datatype: MPI_Datatype,
    a: *mut MPI_Aint,
    b: *mut MPI_Aint,
    name: &str,
    f: fn(&Dtype) -> (isize, isize),
) -> c_int {
    // SAFETY: both NULL or writable and distinct (the contract).
    let (mut a, mut b) = unsafe { (Out::new(a, "lb"), Out::new(b, "extent")) };
    let r = query(datatype, |t| {
        let (x, y) = f(t);
        a.put(x as i64)?;
        b.put(y as i64)
    });
    ret(WORLD, name, r)
}

pub unsafe fn MPI_Type_get_extent(datatype: MPI_Datatype, lb: *mut MPI_Aint, extent: *mut MPI_Aint) -> c_int {
    // SAFETY: `lb` and `extent` are NULL or writable (the caller's contract).
    unsafe { put_bounds(datatype, lb, extent, "MPI_Type_get_extent", |t| (t.lb, t.extent)) }
}

pub unsafe fn MPI_Type_get_extent_x(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) -> c_int {
    // SAFETY: the same arguments (MPI_Count is MPI_Aint), same contract.
    unsafe { MPI_Type_get_extent(datatype, lb, extent) }
}

pub unsafe fn MPI_Type_get_extent_c(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) -> c_int {
    // SAFETY: the same arguments (MPI_Count is MPI_Aint), same contract.
    unsafe { MPI_Type_get_extent(datatype, lb, extent) }
}

pub unsafe fn MPI_Type_get_true_extent(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Aint,
    true_extent: *mut MPI_Aint,
) -> c_int {
    // SAFETY: `true_lb` and `true_extent` are NULL or writable (the
    // caller's contract).
    unsafe { put_bounds(datatype, true_lb, true_extent, "MPI_Type_get_true_extent", |t| (t.true_lb, t.true_extent)) }
}

pub unsafe fn MPI_Type_get_true_extent_x(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Count,
    true_extent: *mut MPI_Count,
) -> c_int {
    // SAFETY: the same arguments (MPI_Count is MPI_Aint), same contract.
    unsafe { MPI_Type_get_true_extent(datatype, true_lb, true_extent) }
}

pub unsafe fn MPI_Type_get_true_extent_c(
    datatype: MPI_Datatype,
    true_lb: *mut MPI_Count,
    true_extent: *mut MPI_Count,
) -> c_int {
    // SAFETY: the same arguments (MPI_Count is MPI_Aint), same contract.
    unsafe { MPI_Type_get_true_extent(datatype, true_lb, true_extent) }
}

pub unsafe fn MPI_Type_extent(datatype: MPI_Datatype, extent: *mut MPI_Aint) -> c_int {
    // SAFETY: `extent` is NULL or a writable MPI_Aint (the caller's contract).
    let mut extent = unsafe { Out::new(extent, "extent") };
    let r = query(datatype, |t| extent.put(t.extent as i64));
    ret(WORLD, "MPI_Type_extent", r)
}

pub unsafe fn MPI_Type_lb(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> c_int {
    // SAFETY: `displacement` is NULL or a writable MPI_Aint (the caller's contract).
    let mut displacement = unsafe { Out::new(displacement, "displacement") };
    let r = query(datatype, |t| displacement.put(t.lb as i64));
    ret(WORLD, "MPI_Type_lb", r)
}

pub unsafe fn MPI_Type_ub(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> c_int {
    // SAFETY: `displacement` is NULL or a writable MPI_Aint (the caller's contract).
    let mut displacement = unsafe { Out::new(displacement, "displacement") };
    let r = query(datatype, |t| displacement.put((t.lb + t.extent) as i64));
    ret(WORLD, "MPI_Type_ub", r)
}

pub unsafe fn MPI_Type_get_name(datatype: MPI_Datatype, type_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    // SAFETY: `resultlen` is NULL or a writable int (the caller's contract).
    let mut resultlen = unsafe { Out::new(resultlen, "resultlen") };
    let r = rt::with(|st| {
        // MPI 4.1: the null handle's name is its constant's.
        let name = if datatype == MPI_DATATYPE_NULL { "MPI_DATATYPE_NULL".into() } else { st.types.name(datatype)? };
        if type_name.is_null() {
            bail!(MPI_ERR_ARG, "type_name is a NULL pointer");
        }
        // SAFETY: not NULL, so a buffer of MPI_MAX_OBJECT_NAME writable
        // chars (the caller's contract).
        let n = unsafe { put_str(type_name, MPI_MAX_OBJECT_NAME as usize, &name) };
        resultlen.put(n)
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
    // SAFETY: `datatype` is NULL or a writable handle (the caller's contract).
    let mut datatype = unsafe { Out::new(datatype, "datatype") };
    let r = crate::rt::datatype::match_size(typeclass, size).and_then(|t| datatype.put(t));
    ret(WORLD, "MPI_Type_match_size", r)
}

pub unsafe fn MPI_Type_get_value_index(
    value_type: MPI_Datatype,
    index_type: MPI_Datatype,
    pair_type: *mut MPI_Datatype,
) -> c_int {
    // SAFETY: `pair_type` is NULL or a writable handle (the caller's contract).
    let mut pair_type = unsafe { Out::new(pair_type, "pair_type") };
    let r = rt::with(|st| {
        st.types.lookup(value_type)?;
        st.types.lookup(index_type)?;
        pair_type.put(crate::rt::datatype::value_index_pair(value_type, index_type))
    });
    ret(WORLD, "MPI_Type_get_value_index", r)
}

/// The `MPI_Type_create_f90_*` calls.
fn f90_impl(combiner: c_int, p: c_int, r: c_int, mut newtype: Out<'_, MPI_Datatype>, name: &str) -> c_int {
    let r = rt::with(|st| {
        let h = st.types.f90(combiner, p, r)?;
        newtype.put(h)
    });
    ret(WORLD, name, r)
}

pub unsafe fn MPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `newtype` is NULL or points to a writable MPI_Datatype (the
    // caller's contract).
    let newtype = unsafe { newtype_out(newtype) };
    f90_impl(MPI_COMBINER_F90_REAL, p, r, newtype, "MPI_Type_create_f90_real")
}

pub unsafe fn MPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `newtype` is NULL or points to a writable MPI_Datatype (the
    // caller's contract).
    let newtype = unsafe { newtype_out(newtype) };
    f90_impl(MPI_COMBINER_F90_COMPLEX, p, r, newtype, "MPI_Type_create_f90_complex")
}

pub unsafe fn MPI_Type_create_f90_integer(r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    // SAFETY: `newtype` is NULL or points to a writable MPI_Datatype (the
    // caller's contract).
    let newtype = unsafe { newtype_out(newtype) };
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
    // SAFETY: `address` is NULL or a writable MPI_Aint (the caller's contract).
    let mut address = unsafe { Out::new(address, "address") };
    // Usable before MPI_Init: no state involved.
    match address.put(location as usize as i64) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => ret(WORLD, "MPI_Get_address", Err(e)),
    }
}

pub unsafe fn MPI_Address(location: *const c_void, address: *mut MPI_Aint) -> c_int {
    // SAFETY: the same arguments, under the same contract.
    unsafe { MPI_Get_address(location, address) }
}

pub unsafe fn MPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

pub unsafe fn MPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}
