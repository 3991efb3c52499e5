//! Process topologies (chapter 7): Cartesian grids, graphs and distributed
//! graphs attached to a communicator, and the arithmetic on them.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::agree::{bytes_to_ints, ints_to_bytes, View};
use super::comm::{Comm, CTX_SPAN_INTRA};
use super::ctxid::{comm_of, new_context_or_fail, quiet, split};
use super::error::MpiResult;
use super::with;
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

// ----- communicators with a topology ------------------------------------------

/// The topology of `comm` (`MPI_ERR_TOPOLOGY` if it has none).
pub fn topo_of(comm: MPI_Comm) -> MpiResult<(Comm, Arc<Topo>)> {
    let c = comm_of(comm)?;
    match c.topo.clone() {
        Some(t) => Ok((c, t)),
        None => bail!(MPI_ERR_TOPOLOGY, "the communicator has no process topology"),
    }
}

/// The communicator `comm` and its Cartesian grid: (dims, periods).
pub fn cart_of(comm: MPI_Comm) -> MpiResult<(Comm, Vec<c_int>, Vec<bool>)> {
    let (c, t) = topo_of(comm)?;
    match &*t {
        Topo::Cart { dims, periods } => Ok((c, dims.clone(), periods.clone())),
        _ => bail!(MPI_ERR_TOPOLOGY, "the communicator does not have a Cartesian topology"),
    }
}

/// The communicator `comm` and its graph: (index, edges).
pub fn graph_of(comm: MPI_Comm) -> MpiResult<(Comm, Vec<c_int>, Vec<c_int>)> {
    let (c, t) = topo_of(comm)?;
    match &*t {
        Topo::Graph { index, edges } => Ok((c, index.clone(), edges.clone())),
        _ => bail!(MPI_ERR_TOPOLOGY, "the communicator does not have a graph topology"),
    }
}

/// The distributed graph topology of `comm`.
pub fn dist_of(comm: MPI_Comm) -> MpiResult<Arc<Topo>> {
    let (_, t) = topo_of(comm)?;
    if !matches!(&*t, Topo::Dist { .. }) {
        bail!(MPI_ERR_TOPOLOGY, "the communicator does not have a distributed graph topology");
    }
    Ok(t)
}

/// Intracommunicator `comm` (`what` names the call in the error).
pub fn intra(comm: MPI_Comm, what: &str) -> MpiResult<Comm> {
    let c = comm_of(comm)?;
    if c.is_inter() {
        bail!(MPI_ERR_COMM, "{what} needs an intracommunicator");
    }
    Ok(c)
}

/// Creates the communicator of the first `n` ranks of intracommunicator
/// `comm_old` with topology `t` (collective over `comm_old`); the others
/// get `None`. `args` is this process's check of its arguments, giving
/// (`n`, `t`): if it failed, the process still takes part so that the call
/// fails in every process (nobody waits for it).
pub fn create(comm_old: MPI_Comm, args: MpiResult<(usize, Topo)>) -> MpiResult<Option<Comm>> {
    quiet(comm_old)?;
    let parent = comm_of(comm_old)?;
    let ctx = new_context_or_fail(comm_old, CTX_SPAN_INTRA, false, args.as_ref().map(|_| ()).map_err(Clone::clone))?;
    let (n, t) = args?;
    if parent.rank as usize >= n {
        return Ok(None);
    }
    let mut c = Comm::intra(ctx, Arc::new(parent.group[..n].to_vec()), parent.rank, parent.errhandler);
    c.topo = Some(Arc::new(t));
    Ok(Some(c))
}

/// Checks a Cartesian grid (`periods`: the C flags) for a communicator of
/// `size` processes: (dims, periods, processes of the grid).
pub fn grid_args(dims: &[c_int], periods: &[c_int], size: c_int) -> MpiResult<(Vec<c_int>, Vec<bool>, usize)> {
    let n = grid_size(dims)?;
    if n > size as usize {
        bail!(MPI_ERR_TOPOLOGY, "the grid has {n} processes, more than the {size} of the communicator");
    }
    Ok((dims.to_vec(), periods.iter().map(|&x| x != 0).collect(), n))
}

/// Checks the `index` of a graph: non-decreasing. Returns its number of
/// edges (the last entry, or 0).
pub fn graph_index(index: &[c_int]) -> MpiResult<c_int> {
    let mut prev = 0;
    for (i, &x) in index.iter().enumerate() {
        if x < prev {
            bail!(MPI_ERR_ARG, "index[{i}] = {x} is less than index[{}] = {prev}", i.saturating_sub(1));
        }
        prev = x;
    }
    Ok(prev)
}

/// Checks the `edges` of a graph of `nnodes` nodes for a communicator of
/// `size` processes.
pub fn graph_edges(nnodes: c_int, edges: &[c_int], size: c_int) -> MpiResult<()> {
    if let Some((i, &x)) = edges.iter().enumerate().find(|(_, &x)| x < 0 || x >= nnodes) {
        bail!(MPI_ERR_TOPOLOGY, "edges[{i}] = {x} is not a node of the graph (0..{nnodes})");
    }
    if nnodes > size {
        bail!(MPI_ERR_TOPOLOGY, "the graph has {nnodes} nodes, more than the {size} processes of the communicator");
    }
    Ok(())
}

/// Checks that `rank` is a rank of `c`.
pub fn check_rank(c: &Comm, rank: c_int) -> MpiResult<()> {
    if rank < 0 || rank >= c.size() {
        bail!(MPI_ERR_RANK, "rank {rank} is not in the communicator (size {})", c.size());
    }
    Ok(())
}

/// The subgrid of `coords` in a grid of `dims` that keeps the dimensions
/// flagged in `keep`: (the color shared by the processes of the subgrid,
/// its dimensions, its periods).
pub fn subgrid(dims: &[c_int], periods: &[bool], coords: &[c_int], keep: &[bool]) -> (c_int, Topo) {
    // Processes that agree on the dropped coordinates form one subgrid.
    let mut color: i64 = 0;
    for i in 0..dims.len() {
        if !keep[i] {
            color = color * dims[i] as i64 + coords[i] as i64;
        }
    }
    let sub = Topo::Cart {
        dims: (0..dims.len()).filter(|&i| keep[i]).map(|i| dims[i]).collect(),
        periods: (0..dims.len()).filter(|&i| keep[i]).map(|i| periods[i]).collect(),
    };
    (color as c_int, sub)
}

/// `MPI_Cart_sub` (collective over `comm`): the subgrid communicator of
/// this process, which keeps the dimensions flagged in `keep` (one per
/// dimension of the grid of `comm`).
pub fn cart_sub(comm: MPI_Comm, keep: &[c_int]) -> MpiResult<Comm> {
    let (c, d, p) = cart_of(comm)?;
    let keep: Vec<bool> = keep.iter().map(|&x| x != 0).collect();
    let (color, sub) = subgrid(&d, &p, &cart_coords(&d, c.rank), &keep);
    // The key (old rank) orders the subgrid by the kept coordinates.
    let (parent, ctx, members) = split(comm, color, c.rank)?;
    let me = with(|st| Ok(st.world_rank))?;
    let rank = members.iter().position(|&w| w == me).unwrap() as c_int;
    let mut nc = Comm::intra(ctx, Arc::new(members), rank, parent.errhandler);
    nc.topo = Some(Arc::new(sub));
    Ok(nc)
}

/// Checks ranks of a distributed graph against the communicator size.
pub fn check_nodes(v: &[c_int], size: c_int, what: &str) -> MpiResult<()> {
    if let Some((i, &x)) = v.iter().enumerate().find(|(_, &x)| x < 0 || x >= size) {
        bail!(MPI_ERR_RANK, "{what}[{i}] = {x} is not a rank of the communicator (size {size})");
    }
    Ok(())
}

/// The topology of `MPI_Dist_graph_create_adjacent` for a communicator of
/// `size` processes (weights `None`: unweighted).
pub fn adjacent(
    size: c_int,
    sources: &[c_int],
    sweights: Option<&[c_int]>,
    dests: &[c_int],
    dweights: Option<&[c_int]>,
) -> MpiResult<(usize, Topo)> {
    check_nodes(sources, size, "sources")?;
    check_nodes(dests, size, "destinations")?;
    if sweights.is_some() != dweights.is_some() {
        bail!(MPI_ERR_ARG, "sourceweights and destweights must both be MPI_UNWEIGHTED or neither");
    }
    let topo = Topo::Dist {
        sources: sources.to_vec(),
        sweights: sweights.unwrap_or_default().to_vec(),
        dests: dests.to_vec(),
        dweights: dweights.unwrap_or_default().to_vec(),
        weighted: sweights.is_some(),
    };
    Ok((size as usize, topo))
}

/// Checks the degrees of `MPI_Dist_graph_create`; their sum, the number
/// of edges.
pub fn dist_degrees(degrees: &[c_int]) -> MpiResult<c_int> {
    if let Some(i) = degrees.iter().position(|&x| x < 0) {
        bail!(MPI_ERR_ARG, "degrees[{i}] = {} is negative", degrees[i]);
    }
    Ok(degrees.iter().sum())
}

/// The edges this process declares to `MPI_Dist_graph_create` (`sources`
/// with their `degrees`, then `dests` and `weights` per edge), sorted by
/// the rank that must know them: each edge s -> d (weight x) goes to s as
/// an out-edge and to d as an in-edge, as records (0 = out / 1 = in,
/// other end, weight).
pub fn dist_records(
    size: c_int,
    sources: &[c_int],
    degrees: &[c_int],
    dests: &[c_int],
    weights: Option<&[c_int]>,
) -> MpiResult<Vec<Vec<c_int>>> {
    check_nodes(sources, size, "sources")?;
    check_nodes(dests, size, "destinations")?;
    let mut out: Vec<Vec<c_int>> = vec![Vec::new(); size as usize];
    let mut k = 0;
    for (i, &s) in sources.iter().enumerate() {
        for _ in 0..degrees[i] {
            let d = dests[k];
            let x = weights.map_or(1, |w| w[k]);
            out[s as usize].extend_from_slice(&[0, d, x]);
            out[d as usize].extend_from_slice(&[1, s, x]);
            k += 1;
        }
    }
    Ok(out)
}

/// The topology of this process from the records every process sent it
/// (see [`dist_records`]): edges in order of the rank that declared them,
/// then declaration order.
pub fn dist_from_records(got: &[Vec<c_int>], weighted: bool) -> Topo {
    let (mut s, mut sw, mut d, mut dw) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for rec in got.iter().flat_map(|b| b.chunks_exact(3)) {
        if rec[0] == 0 {
            d.push(rec[1]);
            dw.push(rec[2]);
        } else {
            s.push(rec[1]);
            sw.push(rec[2]);
        }
    }
    if !weighted {
        sw.clear();
        dw.clear();
    }
    Topo::Dist { sources: s, sweights: sw, dests: d, dweights: dw, weighted }
}

/// `MPI_Dist_graph_create` (collective over intracommunicator `c`, handle
/// `comm_old`): exchanges the records of this process's check of its
/// arguments (`local`: the records of [`dist_records`] and whether the
/// graph is weighted) and makes the communicator. Bad arguments still take
/// part (sending nothing), so that the call fails in every process.
pub fn dist_create(comm_old: MPI_Comm, c: &Comm, local: MpiResult<(Vec<Vec<c_int>>, bool)>) -> MpiResult<Option<Comm>> {
    let size = c.size() as usize;
    let send: Vec<Vec<u8>> = match &local {
        Ok((out, _)) => out.iter().map(|v| ints_to_bytes(v)).collect(),
        Err(_) => vec![Vec::new(); size],
    };
    quiet(comm_old)?;
    let view = with(|st| View::local(st, c))?;
    let got = view.alltoall_vec(&send)?;
    let got: Vec<Vec<c_int>> = got.iter().map(|b| bytes_to_ints(b)).collect();
    let args = local.map(|(_, weighted)| (size, dist_from_records(&got, weighted)));
    create(comm_old, args)
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

    #[test]
    fn subgrids_share_the_dropped_coordinates() {
        let (dims, per) = ([2, 3, 4], [true, false, true]);
        let (color, sub) = subgrid(&dims, &per, &[1, 2, 3], &[true, false, true]);
        assert_eq!(color, 2);
        assert_eq!(sub, Topo::Cart { dims: vec![2, 4], periods: vec![true, true] });
        assert_eq!(subgrid(&dims, &per, &[0, 1, 2], &[false, true, false]).0, 2);
        assert_eq!(subgrid(&dims, &per, &[1, 1, 2], &[false, true, false]).0, 6);
    }

    #[test]
    fn graph_checks() {
        assert_eq!(graph_index(&[2, 3, 3]).unwrap(), 3);
        assert_eq!(graph_index(&[]).unwrap(), 0);
        assert_eq!(graph_index(&[2, 1]).unwrap_err().class, MPI_ERR_ARG);
        assert!(graph_edges(3, &[1, 2, 0], 4).is_ok());
        assert_eq!(graph_edges(3, &[3], 4).unwrap_err().class, MPI_ERR_TOPOLOGY);
        assert_eq!(graph_edges(5, &[], 4).unwrap_err().class, MPI_ERR_TOPOLOGY);
        assert_eq!(grid_args(&[2, 3], &[1, 0], 6).unwrap(), (vec![2, 3], vec![true, false], 6));
        assert_eq!(grid_args(&[2, 3], &[1, 0], 5).unwrap_err().class, MPI_ERR_TOPOLOGY);
    }

    #[test]
    fn dist_graph_records_round_trip() {
        // Rank 0 declares 0 -> 1 (weight 5) and 0 -> 2 (weight 6); rank 2
        // declares 2 -> 0 (weight 7).
        let from0 = dist_records(3, &[0], &[2], &[1, 2], Some(&[5, 6])).unwrap();
        let from2 = dist_records(3, &[2], &[1], &[0], Some(&[7])).unwrap();
        let to = |r: usize| vec![from0[r].clone(), Vec::new(), from2[r].clone()];
        assert_eq!(
            dist_from_records(&to(0), true),
            Topo::Dist { sources: vec![2], sweights: vec![7], dests: vec![1, 2], dweights: vec![5, 6], weighted: true }
        );
        assert_eq!(
            dist_from_records(&to(2), false),
            Topo::Dist { sources: vec![0], sweights: vec![], dests: vec![0], dweights: vec![], weighted: false }
        );
        assert_eq!(dist_records(3, &[3], &[0], &[], None).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(dist_degrees(&[1, -1]).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(dist_degrees(&[1, 2]).unwrap(), 3);
    }
}
