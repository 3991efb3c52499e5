//! Process topologies (chapter 7): Cartesian grids, graphs and distributed
//! graphs attached to a communicator, and the arithmetic on them.

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::error::MpiResult;
use crate::bail;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topo {
    Cart {
        dims: Vec<c_int>,
        periods: Vec<bool>,
    },
    /// `index`/`edges` as given to `MPI_Graph_create`.
    Graph {
        index: Vec<c_int>,
        edges: Vec<c_int>,
    },
    /// This process's in- and out-edges, in the order of the neighbor queries.
    Dist {
        sources: Vec<c_int>,
        sweights: Vec<c_int>,
        dests: Vec<c_int>,
        dweights: Vec<c_int>,
        weighted: bool,
    },
}

impl Topo {
    pub fn kind(&self) -> c_int {
        match self {
            Topo::Cart { .. } => MPI_CART,
            Topo::Graph { .. } => MPI_GRAPH,
            Topo::Dist { .. } => MPI_DIST_GRAPH,
        }
    }

    /// In- and out-neighbors of `rank` in the order the neighborhood
    /// collectives use (`MPI_PROC_NULL` for a missing Cartesian neighbor).
    pub fn neighbors(&self, rank: c_int) -> (Vec<c_int>, Vec<c_int>) {
        match self {
            Topo::Cart { dims, periods } => {
                let mut v = Vec::with_capacity(2 * dims.len());
                for d in 0..dims.len() {
                    let (src, dst) = cart_shift(dims, periods, rank, d, 1);
                    v.push(src);
                    v.push(dst);
                }
                (v.clone(), v)
            }
            Topo::Graph { index, edges } => {
                let n = graph_neighbors(index, edges, rank).to_vec();
                (n.clone(), n)
            }
            Topo::Dist { sources, dests, .. } => (sources.clone(), dests.clone()),
        }
    }
}

/// Number of processes of a grid.
pub fn grid_size(dims: &[c_int]) -> MpiResult<usize> {
    let mut n: usize = 1;
    for (i, &d) in dims.iter().enumerate() {
        if d <= 0 {
            bail!(MPI_ERR_DIMS, "dims[{i}] = {d} (every dimension of a grid must be positive)");
        }
        n = n
            .checked_mul(d as usize)
            .filter(|&n| n <= c_int::MAX as usize)
            .ok_or_else(|| super::error::MpiError::new(MPI_ERR_DIMS, "the grid has more than INT_MAX processes"))?;
    }
    Ok(n)
}

/// Coordinates of `rank` (row-major: the last dimension varies fastest).
pub fn cart_coords(dims: &[c_int], mut rank: c_int) -> Vec<c_int> {
    let mut c = vec![0; dims.len()];
    for i in (0..dims.len()).rev() {
        c[i] = rank % dims[i];
        rank /= dims[i];
    }
    c
}

/// Rank at `coords`; periodic dimensions wrap, others must be in range.
pub fn cart_rank(dims: &[c_int], periods: &[bool], coords: &[c_int]) -> MpiResult<c_int> {
    let mut r: i64 = 0;
    for i in 0..dims.len() {
        let mut c = coords[i] as i64;
        let d = dims[i] as i64;
        if periods[i] {
            c = c.rem_euclid(d);
        } else if c < 0 || c >= d {
            bail!(MPI_ERR_ARG, "coords[{i}] = {c} is outside the non-periodic dimension of size {d}");
        }
        r = r * d + c;
    }
    Ok(r as c_int)
}

/// `MPI_Cart_shift`: (source, dest) of `rank` for a shift of `disp` along `dim`.
pub fn cart_shift(dims: &[c_int], periods: &[bool], rank: c_int, dim: usize, disp: c_int) -> (c_int, c_int) {
    let coords = cart_coords(dims, rank);
    let at = |delta: i64| -> c_int {
        let mut c = coords.clone();
        let v = c[dim] as i64 + delta;
        let d = dims[dim] as i64;
        if !periods[dim] && (v < 0 || v >= d) {
            return MPI_PROC_NULL;
        }
        c[dim] = v.rem_euclid(d) as c_int;
        cart_rank(dims, periods, &c).unwrap_or(MPI_PROC_NULL)
    };
    (at(-(disp as i64)), at(disp as i64))
}

/// Neighbors of `rank` in a graph given by `index`/`edges`.
pub fn graph_neighbors<'a>(index: &[c_int], edges: &'a [c_int], rank: c_int) -> &'a [c_int] {
    let r = rank as usize;
    let lo = if r == 0 { 0 } else { index[r - 1] as usize };
    &edges[lo..index[r] as usize]
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so that the product
/// is `nnodes`, the filled dimensions as close to each other as possible and
/// in non-increasing order.
pub fn dims_create(nnodes: c_int, dims: &mut [c_int]) -> MpiResult<()> {
    if nnodes < 0 {
        bail!(MPI_ERR_ARG, "nnodes = {nnodes} is negative");
    }
    let mut fixed: i64 = 1;
    for (i, &d) in dims.iter().enumerate() {
        if d < 0 {
            bail!(MPI_ERR_DIMS, "dims[{i}] = {d} is negative");
        }
        if d > 0 {
            fixed *= d as i64;
        }
    }
    let free = dims.iter().filter(|&&d| d == 0).count();
    if nnodes == 0 {
        // Only meaningful as all-free: every dimension 0 is not a grid.
        bail!(MPI_ERR_DIMS, "nnodes is 0");
    }
    if fixed == 0 || nnodes as i64 % fixed != 0 {
        bail!(MPI_ERR_DIMS, "nnodes = {nnodes} is not a multiple of the product of the fixed dimensions ({fixed})");
    }
    let rest = (nnodes as i64 / fixed) as u64;
    if free == 0 {
        if rest != 1 {
            bail!(MPI_ERR_DIMS, "the fixed dimensions multiply to {fixed}, not {nnodes}");
        }
        return Ok(());
    }
    let split = balanced_split(rest, free);
    let mut it = split.into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = it.next().unwrap() as c_int;
    }
    Ok(())
}

/// The factorization of `n` into `k` factors, non-increasing, with the
/// smallest spread (largest factor minus smallest), then the smallest
/// largest factor.
fn balanced_split(n: u64, k: usize) -> Vec<u64> {
    let divisors: Vec<u64> = {
        let mut d = Vec::new();
        let mut i = 1;
        while i * i <= n {
            if n.is_multiple_of(i) {
                d.push(i);
                if i * i != n {
                    d.push(n / i);
                }
            }
            i += 1;
        }
        d.sort_unstable();
        d
    };
    let mut best: Option<(u64, u64, Vec<u64>)> = None;
    let mut cur = Vec::with_capacity(k);
    search(n, k, u64::MAX, &divisors, &mut cur, &mut best);
    best.map(|b| b.2).unwrap_or_else(|| vec![1; k])
}

/// Depth-first search of non-increasing factor sequences of `n` with `k`
/// factors each at most `max`.
fn search(n: u64, k: usize, max: u64, divs: &[u64], cur: &mut Vec<u64>, best: &mut Option<(u64, u64, Vec<u64>)>) {
    if k == 0 {
        if n == 1 {
            let hi = cur[0];
            let lo = *cur.last().unwrap();
            let key = (hi - lo, hi);
            if best.as_ref().is_none_or(|b| key < (b.0, b.1)) {
                *best = Some((key.0, key.1, cur.clone()));
            }
        }
        return;
    }
    // The largest remaining factor is at least the k-th root of n.
    for &d in divs.iter().rev() {
        if d > max || !n.is_multiple_of(d) {
            continue;
        }
        if (d as f64).powi(k as i32) < n as f64 * (1.0 - 1e-9) {
            break;
        }
        if let Some(b) = best {
            // Spread can only grow from here.
            if !cur.is_empty() && cur[0] - d > b.0 {
                continue;
            }
        }
        cur.push(d);
        search(n / d, k - 1, d, divs, cur, best);
        cur.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dc(n: c_int, mut d: Vec<c_int>) -> Vec<c_int> {
        dims_create(n, &mut d).unwrap();
        d
    }

    #[test]
    fn dims() {
        assert_eq!(dc(6, vec![0, 0]), vec![3, 2]);
        assert_eq!(dc(7, vec![0, 0]), vec![7, 1]);
        assert_eq!(dc(6, vec![0, 3, 0]), vec![2, 3, 1]);
        assert_eq!(dc(72, vec![0, 0]), vec![9, 8]);
        assert_eq!(dc(16, vec![0, 0, 0, 0]), vec![2, 2, 2, 2]);
        assert_eq!(dc(24, vec![0, 0, 0]), vec![4, 3, 2]);
        assert_eq!(dc(1, vec![0, 0]), vec![1, 1]);
        assert_eq!(dc(1 << 20, vec![0, 0, 0]), vec![128, 128, 64]);
        assert_eq!(dims_create(7, &mut [0, 3]).unwrap_err().class, MPI_ERR_DIMS);
    }

    #[test]
    fn cart() {
        let dims = [3, 4];
        let per = [true, false];
        assert_eq!(cart_coords(&dims, 7), vec![1, 3]);
        assert_eq!(cart_rank(&dims, &per, &[1, 3]).unwrap(), 7);
        assert_eq!(cart_rank(&dims, &per, &[-1, 3]).unwrap(), 11);
        assert!(cart_rank(&dims, &per, &[0, 4]).is_err());
        assert_eq!(cart_shift(&dims, &per, 7, 1, 1), (6, MPI_PROC_NULL));
        assert_eq!(cart_shift(&dims, &per, 7, 0, 1), (3, 11));
    }
}
