//! Chapter 6.3: groups.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::{c_array, ret, Out};
use crate::bail;
use crate::rt::error::MpiResult;
use crate::rt::group::{self, Members};
use crate::rt::{self, State};

/// Errors of group calls go to `MPI_COMM_WORLD`'s handler (no communicator
/// is involved).
fn done(name: &str, r: MpiResult<()>) -> c_int {
    ret(MPI_COMM_WORLD, name, r)
}

/// Publishes a new group built from `f` over existing groups.
fn new_group(mut newgroup: Out<MPI_Group>, f: impl FnOnce(&mut State) -> MpiResult<Vec<usize>>) -> MpiResult<()> {
    if newgroup.is_null() {
        bail!(MPI_ERR_ARG, "newgroup is a NULL pointer");
    }
    rt::with(|st| {
        let m = f(st)?;
        let h = st.comms.groups.insert(Arc::new(m));
        newgroup.put(h)
    })
}

fn get2(st: &State, a: MPI_Group, b: MPI_Group) -> MpiResult<(Members, Members)> {
    Ok((st.comms.groups.get(a)?, st.comms.groups.get(b)?))
}

pub unsafe fn MPI_Group_size(group: MPI_Group, size: *mut c_int) -> c_int {
    // SAFETY: `size` is NULL or a writable int (the caller's contract).
    let mut size = unsafe { Out::new(size, "size") };
    done("MPI_Group_size", rt::with(|st| size.put(st.comms.groups.get(group)?.len() as c_int)))
}

pub unsafe fn MPI_Group_rank(group: MPI_Group, rank: *mut c_int) -> c_int {
    // SAFETY: `rank` is NULL or a writable int (the caller's contract).
    let mut rank = unsafe { Out::new(rank, "rank") };
    let r = rt::with(|st| {
        let m = st.comms.groups.get(group)?;
        let r = group::rank_of(&m, st.world_rank).map_or(MPI_UNDEFINED, |r| r as c_int);
        rank.put(r)
    });
    done("MPI_Group_rank", r)
}

pub unsafe fn MPI_Group_free(group: *mut MPI_Group) -> c_int {
    // SAFETY: `group` is NULL or the program's handle, readable and
    // writable (the caller's contract).
    let group = unsafe { group.as_mut() };
    let r = rt::with(|st| {
        let Some(group) = group else {
            bail!(MPI_ERR_ARG, "group is a NULL pointer");
        };
        st.comms.groups.remove(*group)?;
        *group = MPI_GROUP_NULL;
        Ok(())
    });
    done("MPI_Group_free", r)
}

pub unsafe fn MPI_Group_compare(group1: MPI_Group, group2: MPI_Group, result: *mut c_int) -> c_int {
    // SAFETY: `result` is NULL or a writable int (the caller's contract).
    let mut result = unsafe { Out::new(result, "result") };
    let r = rt::with(|st| {
        let (a, b) = get2(st, group1, group2)?;
        result.put(group::compare(&a, &b))
    });
    done("MPI_Group_compare", r)
}

pub unsafe fn MPI_Group_translate_ranks(
    group1: MPI_Group,
    n: c_int,
    ranks1: *const c_int,
    group2: MPI_Group,
    ranks2: *mut c_int,
) -> c_int {
    let r = rt::with(|st| {
        let (a, b) = get2(st, group1, group2)?;
        // SAFETY: `ranks1` is NULL or holds `n` ints (the caller's contract).
        let r1 = unsafe { c_array(ranks1, n, "ranks1") }?;
        if n > 0 && ranks2.is_null() {
            bail!(MPI_ERR_ARG, "ranks2 is a NULL pointer");
        }
        let out: Vec<c_int> = r1.iter().map(|&r| group::translate(&a, r, &b)).collect::<MpiResult<_>>()?;
        // SAFETY: `ranks2` is NULL or holds `n` writable ints (the caller's
        // contract), and `out` has one per entry of `ranks1`, `n` (n >= 0:
        // checked by `c_array`).
        if let Some(r2) = unsafe { super::out_array(ranks2, out.len()) } {
            r2.copy_from_slice(&out);
        }
        Ok(())
    });
    done("MPI_Group_translate_ranks", r)
}

/// A group made of two others by `f` (union, intersection, difference).
fn set_op(
    name: &str,
    group1: MPI_Group,
    group2: MPI_Group,
    newgroup: Out<MPI_Group>,
    f: fn(&[usize], &[usize]) -> Vec<usize>,
) -> c_int {
    let r = new_group(newgroup, |st| {
        let (a, b) = get2(st, group1, group2)?;
        Ok(f(&a, &b))
    });
    done(name, r)
}

pub unsafe fn MPI_Group_union(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: `newgroup` is NULL or a writable handle (the caller's contract).
    let newgroup = unsafe { Out::new(newgroup, "newgroup") };
    set_op("MPI_Group_union", group1, group2, newgroup, group::union)
}

pub unsafe fn MPI_Group_intersection(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: `newgroup` is NULL or a writable handle (the caller's contract).
    let newgroup = unsafe { Out::new(newgroup, "newgroup") };
    set_op("MPI_Group_intersection", group1, group2, newgroup, group::intersection)
}

pub unsafe fn MPI_Group_difference(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: `newgroup` is NULL or a writable handle (the caller's contract).
    let newgroup = unsafe { Out::new(newgroup, "newgroup") };
    set_op("MPI_Group_difference", group1, group2, newgroup, group::difference)
}

pub unsafe fn MPI_Group_incl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: `newgroup` is NULL or a writable handle (the caller's contract).
    let newgroup = unsafe { Out::new(newgroup, "newgroup") };
    let r = new_group(newgroup, |st| {
        let m = st.comms.groups.get(group)?;
        // SAFETY: `ranks` is NULL or holds `n` ints (the caller's contract).
        group::incl(&m, unsafe { c_array(ranks, n, "ranks") }?)
    });
    done("MPI_Group_incl", r)
}

pub unsafe fn MPI_Group_excl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: `newgroup` is NULL or a writable handle (the caller's contract).
    let newgroup = unsafe { Out::new(newgroup, "newgroup") };
    let r = new_group(newgroup, |st| {
        let m = st.comms.groups.get(group)?;
        // SAFETY: `ranks` is NULL or holds `n` ints (the caller's contract).
        group::excl(&m, unsafe { c_array(ranks, n, "ranks") }?)
    });
    done("MPI_Group_excl", r)
}

/// The `n` triplets of a `ranges` argument, expanded to ranks of `m`.
///
/// # Safety
/// `ranges` is NULL or holds `n` triplets of ints.
unsafe fn range_ranks(m: &[usize], n: c_int, ranges: *const c_int) -> MpiResult<Vec<c_int>> {
    // SAFETY: `n` triplets are `3n` ints (the contract); a count that
    // saturates is still fewer.
    let flat = unsafe { c_array(ranges, n.saturating_mul(3), "ranges") }?;
    let triplets: Vec<[c_int; 3]> = flat.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    group::expand_ranges(&triplets, m.len())
}

pub unsafe fn MPI_Group_range_incl(group: MPI_Group, n: c_int, ranges: *mut c_int, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: `newgroup` is NULL or a writable handle (the caller's contract).
    let newgroup = unsafe { Out::new(newgroup, "newgroup") };
    let r = new_group(newgroup, |st| {
        let m = st.comms.groups.get(group)?;
        // SAFETY: `ranges` is NULL or holds `n` triplets (the caller's
        // contract).
        let ranks = unsafe { range_ranks(&m, n, ranges) }?;
        group::incl(&m, &ranks)
    });
    done("MPI_Group_range_incl", r)
}

pub unsafe fn MPI_Group_range_excl(group: MPI_Group, n: c_int, ranges: *mut c_int, newgroup: *mut MPI_Group) -> c_int {
    // SAFETY: `newgroup` is NULL or a writable handle (the caller's contract).
    let newgroup = unsafe { Out::new(newgroup, "newgroup") };
    let r = new_group(newgroup, |st| {
        let m = st.comms.groups.get(group)?;
        // SAFETY: `ranges` is NULL or holds `n` triplets (the caller's
        // contract).
        let ranks = unsafe { range_ranks(&m, n, ranges) }?;
        group::excl(&m, &ranks)
    });
    done("MPI_Group_range_excl", r)
}
