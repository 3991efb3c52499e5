//! Chapter 6.3: groups.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::{c_array, put, ret};
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
unsafe fn new_group(newgroup: *mut MPI_Group, f: impl FnOnce(&mut State) -> MpiResult<Vec<usize>>) -> MpiResult<()> {
    if newgroup.is_null() {
        bail!(MPI_ERR_ARG, "newgroup is a NULL pointer");
    }
    rt::with(|st| {
        let m = f(st)?;
        let h = st.comms.groups.insert(Arc::new(m));
        put(newgroup, h, "newgroup")
    })
}

fn get2(st: &State, a: MPI_Group, b: MPI_Group) -> MpiResult<(Members, Members)> {
    Ok((st.comms.groups.get(a)?, st.comms.groups.get(b)?))
}

pub unsafe fn MPI_Group_size(group: MPI_Group, size: *mut c_int) -> c_int {
    done("MPI_Group_size", rt::with(|st| put(size, st.comms.groups.get(group)?.len() as c_int, "size")))
}

pub unsafe fn MPI_Group_rank(group: MPI_Group, rank: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let m = st.comms.groups.get(group)?;
        let r = group::rank_of(&m, st.world_rank).map_or(MPI_UNDEFINED, |r| r as c_int);
        put(rank, r, "rank")
    });
    done("MPI_Group_rank", r)
}

pub unsafe fn MPI_Group_free(group: *mut MPI_Group) -> c_int {
    let r = rt::with(|st| {
        if group.is_null() {
            bail!(MPI_ERR_ARG, "group is a NULL pointer");
        }
        st.comms.groups.remove(*group)?;
        *group = MPI_GROUP_NULL;
        Ok(())
    });
    done("MPI_Group_free", r)
}

pub unsafe fn MPI_Group_compare(group1: MPI_Group, group2: MPI_Group, result: *mut c_int) -> c_int {
    let r = rt::with(|st| {
        let (a, b) = get2(st, group1, group2)?;
        put(result, group::compare(&a, &b), "result")
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
        let r1 = c_array(ranks1, n, "ranks1")?;
        if n > 0 && ranks2.is_null() {
            bail!(MPI_ERR_ARG, "ranks2 is a NULL pointer");
        }
        let out: Vec<c_int> = r1.iter().map(|&r| group::translate(&a, r, &b)).collect::<MpiResult<_>>()?;
        if !out.is_empty() {
            std::ptr::copy_nonoverlapping(out.as_ptr(), ranks2, out.len());
        }
        Ok(())
    });
    done("MPI_Group_translate_ranks", r)
}

/// A group made of two others by `f` (union, intersection, difference).
unsafe fn set_op(
    name: &str,
    group1: MPI_Group,
    group2: MPI_Group,
    newgroup: *mut MPI_Group,
    f: fn(&[usize], &[usize]) -> Vec<usize>,
) -> c_int {
    let r = new_group(newgroup, |st| {
        let (a, b) = get2(st, group1, group2)?;
        Ok(f(&a, &b))
    });
    done(name, r)
}

pub unsafe fn MPI_Group_union(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    set_op("MPI_Group_union", group1, group2, newgroup, group::union)
}

pub unsafe fn MPI_Group_intersection(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    set_op("MPI_Group_intersection", group1, group2, newgroup, group::intersection)
}

pub unsafe fn MPI_Group_difference(group1: MPI_Group, group2: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    set_op("MPI_Group_difference", group1, group2, newgroup, group::difference)
}

pub unsafe fn MPI_Group_incl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) -> c_int {
    let r = new_group(newgroup, |st| {
        let m = st.comms.groups.get(group)?;
        group::incl(&m, c_array(ranks, n, "ranks")?)
    });
    done("MPI_Group_incl", r)
}

pub unsafe fn MPI_Group_excl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group) -> c_int {
    let r = new_group(newgroup, |st| {
        let m = st.comms.groups.get(group)?;
        group::excl(&m, c_array(ranks, n, "ranks")?)
    });
    done("MPI_Group_excl", r)
}

/// The `n` triplets of a `ranges` argument, expanded to ranks of `m`.
unsafe fn range_ranks(m: &[usize], n: c_int, ranges: *const c_int) -> MpiResult<Vec<c_int>> {
    let flat = c_array(ranges, n.saturating_mul(3), "ranges")?;
    let triplets: Vec<[c_int; 3]> = flat.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    group::expand_ranges(&triplets, m.len())
}

pub unsafe fn MPI_Group_range_incl(group: MPI_Group, n: c_int, ranges: *mut c_int, newgroup: *mut MPI_Group) -> c_int {
    let r = new_group(newgroup, |st| {
        let m = st.comms.groups.get(group)?;
        let ranks = range_ranks(&m, n, ranges)?;
        group::incl(&m, &ranks)
    });
    done("MPI_Group_range_incl", r)
}

pub unsafe fn MPI_Group_range_excl(group: MPI_Group, n: c_int, ranges: *mut c_int, newgroup: *mut MPI_Group) -> c_int {
    let r = new_group(newgroup, |st| {
        let m = st.comms.groups.get(group)?;
        let ranks = range_ranks(&m, n, ranges)?;
        group::excl(&m, &ranks)
    });
    done("MPI_Group_range_excl", r)
}
