//! Process groups: ordered lists of world ranks behind `MPI_Group` handles,
//! and the group algebra of chapter 6.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};
use super::slots::Slots;
use crate::bail;

/// A group: world rank of every member, by rank in the group.
pub type Members = Arc<Vec<usize>>;

/// Live groups by handle index.
#[derive(Default)]
pub struct GroupTable {
    slots: Slots<Members>,
}

impl GroupTable {
    pub fn get(&self, g: MPI_Group) -> MpiResult<Members> {
        if g == MPI_GROUP_EMPTY {
            return Ok(Arc::new(Vec::new()));
        }
        if g == MPI_GROUP_NULL {
            bail!(MPI_ERR_GROUP, "MPI_GROUP_NULL is not a valid group here");
        }
        if handle_kind(g) == HANDLE_KIND_DIRECT && handle_obj(g) == OBJ_GROUP {
            if let Some(m) = self.slots.get(handle_index(g)) {
                return Ok(m.clone());
            }
        }
        Err(invalid(g))
    }

    /// A handle for `m` (`MPI_GROUP_EMPTY` if it has no members).
    pub fn insert(&mut self, m: Members) -> MPI_Group {
        if m.is_empty() {
            return MPI_GROUP_EMPTY;
        }
        make_handle(HANDLE_KIND_DIRECT, OBJ_GROUP, self.slots.insert(m))
    }

    /// `MPI_Group_free` (freeing `MPI_GROUP_EMPTY` is allowed and does nothing).
    pub fn remove(&mut self, g: MPI_Group) -> MpiResult<()> {
        if g == MPI_GROUP_EMPTY {
            return Ok(());
        }
        self.get(g)?;
        self.slots.remove(handle_index(g));
        Ok(())
    }

    /// Number of live group handles (for leak checks).
    pub fn live(&self) -> usize {
        self.slots.live()
    }
}

fn invalid(g: MPI_Group) -> MpiError {
    MpiError::new(MPI_ERR_GROUP, format!("invalid group handle 0x{:08x} (freed or never created)", g as u32))
}

/// Rank of world rank `w` in `m`, if it is a member.
pub fn rank_of(m: &[usize], w: usize) -> Option<usize> {
    m.iter().position(|&x| x == w)
}

/// `MPI_IDENT`, `MPI_SIMILAR` or `MPI_UNEQUAL`.
pub fn compare(a: &[usize], b: &[usize]) -> c_int {
    if a == b {
        return MPI_IDENT;
    }
    let (mut x, mut y) = (a.to_vec(), b.to_vec());
    x.sort_unstable();
    y.sort_unstable();
    if x == y {
        MPI_SIMILAR
    } else {
        MPI_UNEQUAL
    }
}

pub fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut v = a.to_vec();
    v.extend(b.iter().filter(|w| !a.contains(w)));
    v
}

pub fn intersection(a: &[usize], b: &[usize]) -> Vec<usize> {
    a.iter().copied().filter(|w| b.contains(w)).collect()
}

pub fn difference(a: &[usize], b: &[usize]) -> Vec<usize> {
    a.iter().copied().filter(|w| !b.contains(w)).collect()
}

/// Checks that `ranks` are distinct valid ranks of a group of `size`.
fn check_ranks(ranks: &[c_int], size: usize) -> MpiResult<()> {
    let mut seen = vec![false; size];
    for (i, &r) in ranks.iter().enumerate() {
        if r < 0 || r as usize >= size {
            bail!(MPI_ERR_RANK, "ranks[{i}] = {r} is not a rank of a group of size {size}");
        }
        if std::mem::replace(&mut seen[r as usize], true) {
            bail!(MPI_ERR_RANK, "rank {r} appears twice in ranks");
        }
    }
    Ok(())
}

pub fn incl(m: &[usize], ranks: &[c_int]) -> MpiResult<Vec<usize>> {
    check_ranks(ranks, m.len())?;
    Ok(ranks.iter().map(|&r| m[r as usize]).collect())
}

pub fn excl(m: &[usize], ranks: &[c_int]) -> MpiResult<Vec<usize>> {
    check_ranks(ranks, m.len())?;
    Ok(m.iter().enumerate().filter(|(i, _)| !ranks.contains(&(*i as c_int))).map(|(_, &w)| w).collect())
}

/// Expands `(first, last, stride)` triplets into ranks, checking each.
pub fn expand_ranges(ranges: &[[c_int; 3]], size: usize) -> MpiResult<Vec<c_int>> {
    let mut out = Vec::new();
    for (i, &[first, last, stride]) in ranges.iter().enumerate() {
        if stride == 0 {
            bail!(MPI_ERR_ARG, "ranges[{i}] has stride 0");
        }
        for (what, r) in [("first", first), ("last", last)] {
            if r < 0 || r as usize >= size {
                bail!(MPI_ERR_RANK, "ranges[{i}]: {what} rank {r} is not in a group of size {size}");
            }
        }
        if (stride > 0 && first > last) || (stride < 0 && first < last) {
            // An empty range is allowed by the standard only if consistent:
            // first beyond last in the stride's direction means no ranks.
            continue;
        }
        let mut r = first as i64;
        while (stride > 0 && r <= last as i64) || (stride < 0 && r >= last as i64) {
            out.push(r as c_int);
            r += stride as i64;
        }
    }
    check_ranks(&out, size)?;
    Ok(out)
}

/// `MPI_Group_translate_ranks` of one rank.
pub fn translate(a: &[usize], r: c_int, b: &[usize]) -> MpiResult<c_int> {
    if r == MPI_PROC_NULL {
        return Ok(MPI_PROC_NULL);
    }
    if r < 0 || r as usize >= a.len() {
        bail!(MPI_ERR_RANK, "rank {r} is not in the first group (size {})", a.len());
    }
    Ok(rank_of(b, a[r as usize]).map_or(MPI_UNDEFINED, |x| x as c_int))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algebra() {
        let a = [0, 1, 2, 3];
        let b = [3, 5, 1];
        assert_eq!(union(&a, &b), vec![0, 1, 2, 3, 5]);
        assert_eq!(intersection(&a, &b), vec![1, 3]);
        assert_eq!(difference(&a, &b), vec![0, 2]);
        assert_eq!(compare(&[1, 2], &[2, 1]), MPI_SIMILAR);
        assert_eq!(expand_ranges(&[[0, 6, 3], [5, 4, -1]], 8).unwrap(), vec![0, 3, 6, 5, 4]);
        assert_eq!(expand_ranges(&[[0, 6, 3], [6, 6, 1]], 8).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(excl(&a, &[1, 3]).unwrap(), vec![0, 2]);
        assert_eq!(incl(&a, &[4]).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(translate(&a, 3, &b).unwrap(), 0);
        assert_eq!(translate(&a, 0, &b).unwrap(), MPI_UNDEFINED);
    }
}
