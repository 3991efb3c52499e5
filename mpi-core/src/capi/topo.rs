//! Chapter 7: process topologies — Cartesian, graph and distributed graph
//! communicators and their queries. Ranks are never reordered (`reorder`
//! is allowed to be ignored): rank i of the new communicator is rank i of
//! the old one.
#![allow(clippy::too_many_arguments)]

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::comm::publish;
use super::SentinelPtr;
use super::{c_array, put, ret, Out};
use crate::bail;
use crate::rt::comm::Comm;
use crate::rt::ctxid::comm_of;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::topo::{self, cart_of, dist_of, graph_of, intra, Topo};

static UNWEIGHTED_TARGET: c_int = 0x5157;
static WEIGHTS_EMPTY_TARGET: c_int = 0x5158;

/// `extern int * const MPI_UNWEIGHTED` of the MPICH ABI.
#[no_mangle]
pub static MPI_UNWEIGHTED: SentinelPtr = SentinelPtr(&UNWEIGHTED_TARGET);
/// `extern int * const MPI_WEIGHTS_EMPTY` of the MPICH ABI.
#[no_mangle]
pub static MPI_WEIGHTS_EMPTY: SentinelPtr = SentinelPtr(&WEIGHTS_EMPTY_TARGET);

fn is_unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, MPI_UNWEIGHTED.0)
}

/// Copies `v` to `out` (at most `max` values).
///
/// # Safety
/// `out` is NULL or holds `max` writable ints.
unsafe fn write_ints(out: *mut c_int, max: c_int, v: &[c_int], what: &str) -> MpiResult<()> {
    let n = v.len().min(max.max(0) as usize);
    if n == 0 {
        return Ok(());
    }
    if out.is_null() {
        bail!(MPI_ERR_ARG, "{what} is a NULL pointer");
    }
    // SAFETY: not NULL, so `max` >= `n` writable ints (the contract), which
    // the program's array cannot share with `v`, the library's.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out, n) };
    Ok(())
}

/// Publishes the communicator a constructor made (`None`: this process
/// is not in it).
///
/// # Safety
/// `out` is NULL or a writable handle.
unsafe fn publish_or_null(c: MpiResult<Option<Comm>>, out: *mut MPI_Comm) -> MpiResult<()> {
    match c? {
        // SAFETY: the contract.
        Some(c) => unsafe { publish(c, out) },
        // SAFETY: the contract.
        None => unsafe { put(out, MPI_COMM_NULL, "newcomm") },
    }
}

/// The arguments of a Cartesian grid for a communicator of `size`
/// processes: (dims, periods, processes).
///
/// # Safety
/// `dims` and `periods` are NULL or hold `ndims` ints each.
unsafe fn grid_args(
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    size: c_int,
) -> MpiResult<(Vec<c_int>, Vec<bool>, usize)> {
    if ndims < 0 {
        bail!(MPI_ERR_DIMS, "ndims = {ndims} is negative");
    }
    // SAFETY: both are NULL or `ndims` ints (the contract).
    let (d, p) = unsafe { (c_array(dims, ndims, "dims"), c_array(periods, ndims, "periods")) };
    topo::grid_args(d?, p?, size)
}

pub unsafe fn MPI_Cart_create(
    comm_old: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    comm_cart: *mut MPI_Comm,
) -> c_int {
    let r = (|| {
        if comm_cart.is_null() {
            bail!(MPI_ERR_ARG, "comm_cart is a NULL pointer");
        }
        // SAFETY: not NULL, so a writable handle (the caller's contract).
        unsafe { *comm_cart = MPI_COMM_NULL };
        let c = intra(comm_old, "MPI_Cart_create")?;
        // SAFETY: `dims` and `periods` are NULL or `ndims` ints each (the
        // caller's contract).
        let args = unsafe { grid_args(ndims, dims, periods, c.size()) };
        let args = args.map(|(d, p, n)| (n, Topo::Cart { dims: d, periods: p }));
        // SAFETY: `comm_cart` is a writable handle (checked above).
        unsafe { publish_or_null(topo::create(comm_old, args), comm_cart) }
    })();
    ret(comm_old, "MPI_Cart_create", r)
}

pub unsafe fn MPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    let r = (|| {
        if ndims < 0 {
            bail!(MPI_ERR_DIMS, "ndims = {ndims} is negative");
        }
        if ndims == 0 {
            if nnodes != 1 {
                bail!(MPI_ERR_DIMS, "{nnodes} processes cannot form a grid of 0 dimensions");
            }
            return Ok(());
        }
        if dims.is_null() {
            bail!(MPI_ERR_ARG, "dims is a NULL pointer");
        }
        // SAFETY: not NULL and ndims > 0, so `ndims` readable and writable
        // ints (the caller's contract).
        let d = unsafe { std::slice::from_raw_parts_mut(dims, ndims as usize) };
        let mut work = d.to_vec();
        topo::dims_create(nnodes, &mut work)?;
        d.copy_from_slice(&work);
        Ok(())
    })();
    ret(MPI_COMM_WORLD, "MPI_Dims_create", r)
}

pub unsafe fn MPI_Cartdim_get(comm: MPI_Comm, ndims: *mut c_int) -> c_int {
    // SAFETY: `ndims` is NULL or a writable int (the caller's contract).
    let mut ndims = unsafe { Out::new(ndims, "ndims") };
    let r = cart_of(comm).and_then(|(_, d, _)| ndims.put(d.len() as c_int));
    ret(comm, "MPI_Cartdim_get", r)
}

pub unsafe fn MPI_Cart_get(
    comm: MPI_Comm,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    let r = cart_of(comm).and_then(|(c, d, p)| {
        let pi: Vec<c_int> = p.iter().map(|&x| x as c_int).collect();
        // SAFETY: `dims`, `periods` and `coords` are NULL or hold `maxdims`
        // writable ints each (the caller's contract).
        unsafe {
            write_ints(dims, maxdims, &d, "dims")?;
            write_ints(periods, maxdims, &pi, "periods")?;
            write_ints(coords, maxdims, &topo::cart_coords(&d, c.rank), "coords")
        }
    });
    ret(comm, "MPI_Cart_get", r)
}

pub unsafe fn MPI_Cart_rank(comm: MPI_Comm, coords: *const c_int, rank: *mut c_int) -> c_int {
    // SAFETY: `rank` is NULL or a writable int (the caller's contract).
    let mut rank = unsafe { Out::new(rank, "rank") };
    let r = cart_of(comm).and_then(|(_, d, p)| {
        // SAFETY: `coords` is NULL or holds an int per dimension of the
        // communicator's grid (the caller's contract).
        let co = unsafe { c_array(coords, d.len() as c_int, "coords") }?;
        rank.put(topo::cart_rank(&d, &p, co)?)
    });
    ret(comm, "MPI_Cart_rank", r)
}

pub unsafe fn MPI_Cart_coords(comm: MPI_Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int {
    let r = cart_of(comm).and_then(|(c, d, _)| {
        topo::check_rank(&c, rank)?;
        if maxdims < d.len() as c_int {
            bail!(MPI_ERR_ARG, "maxdims = {maxdims} is less than the {} dimensions", d.len());
        }
        // SAFETY: `coords` is NULL or holds `maxdims` writable ints (the
        // caller's contract).
        unsafe { write_ints(coords, maxdims, &topo::cart_coords(&d, rank), "coords") }
    });
    ret(comm, "MPI_Cart_coords", r)
}

pub unsafe fn MPI_Cart_shift(
    comm: MPI_Comm,
    direction: c_int,
    disp: c_int,
    rank_source: *mut c_int,
    rank_dest: *mut c_int,
) -> c_int {
    // SAFETY: `rank_source` and `rank_dest` are NULL or writable ints (the
    // caller's contract).
    let (mut rank_source, mut rank_dest) =
        unsafe { (Out::new(rank_source, "rank_source"), Out::new(rank_dest, "rank_dest")) };
    let r = cart_of(comm).and_then(|(c, d, p)| {
        if direction < 0 || direction as usize >= d.len() {
            bail!(MPI_ERR_DIMS, "direction {direction} is not a dimension of the grid (0..{})", d.len());
        }
        let (s, t) = topo::cart_shift(&d, &p, c.rank, direction as usize, disp);
        rank_source.put(s)?;
        rank_dest.put(t)
    });
    ret(comm, "MPI_Cart_shift", r)
}

pub unsafe fn MPI_Cart_sub(comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm) -> c_int {
    let r = (|| {
        if newcomm.is_null() {
            bail!(MPI_ERR_ARG, "newcomm is a NULL pointer");
        }
        let (_, d, _) = cart_of(comm)?;
        // SAFETY: `remain_dims` is NULL or holds an int per dimension of the
        // communicator's grid (the caller's contract).
        let keep = unsafe { c_array(remain_dims, d.len() as c_int, "remain_dims") }?;
        let nc = topo::cart_sub(comm, keep)?;
        // SAFETY: `newcomm` is a writable handle (checked above).
        unsafe { publish(nc, newcomm) }
    })();
    ret(comm, "MPI_Cart_sub", r)
}

pub unsafe fn MPI_Cart_map(
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    let r = (|| {
        let c = intra(comm, "MPI_Cart_map")?;
        // SAFETY: `dims` and `periods` are NULL or `ndims` ints each (the
        // caller's contract).
        let (_, _, n) = unsafe { grid_args(ndims, dims, periods, c.size()) }?;
        // SAFETY: `newrank` is NULL or a writable int (the caller's contract).
        unsafe { put(newrank, if (c.rank as usize) < n { c.rank } else { MPI_UNDEFINED }, "newrank") }
    })();
    ret(comm, "MPI_Cart_map", r)
}

/// Validates `index`/`edges` of a graph of `nnodes` nodes for a
/// communicator of `size` processes.
///
/// # Safety
/// `index` is NULL or holds `nnodes` ints, and `edges` NULL or as many ints
/// as its last entry says.
unsafe fn graph_args(
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    size: c_int,
) -> MpiResult<(Vec<c_int>, Vec<c_int>)> {
    if nnodes < 0 {
        bail!(MPI_ERR_ARG, "nnodes = {nnodes} is negative");
    }
    // SAFETY: `index` is NULL or `nnodes` ints (the contract).
    let idx = unsafe { c_array(index, nnodes, "index") }?;
    let nedges = topo::graph_index(idx)?;
    // SAFETY: `nedges` is the last entry of `index` (or 0), the number of
    // edges the contract gives `edges`.
    let e = unsafe { c_array(edges, nedges, "edges") }?;
    topo::graph_edges(nnodes, e, size)?;
    Ok((idx.to_vec(), e.to_vec()))
}

pub unsafe fn MPI_Graph_create(
    comm_old: MPI_Comm,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    comm_graph: *mut MPI_Comm,
) -> c_int {
    let r = (|| {
        if comm_graph.is_null() {
            bail!(MPI_ERR_ARG, "comm_graph is a NULL pointer");
        }
        // SAFETY: not NULL, so a writable handle (the caller's contract).
        unsafe { *comm_graph = MPI_COMM_NULL };
        let c = intra(comm_old, "MPI_Graph_create")?;
        // SAFETY: `index` is NULL or `nnodes` ints, `edges` NULL or as many
        // as the last of them (the caller's contract).
        let args = unsafe { graph_args(nnodes, index, edges, c.size()) };
        let args = args.map(|(idx, e)| (nnodes as usize, Topo::Graph { index: idx, edges: e }));
        // SAFETY: `comm_graph` is a writable handle (checked above).
        unsafe { publish_or_null(topo::create(comm_old, args), comm_graph) }
    })();
    ret(comm_old, "MPI_Graph_create", r)
}

pub unsafe fn MPI_Graphdims_get(comm: MPI_Comm, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
    // SAFETY: `nnodes` and `nedges` are NULL or writable ints (the caller's
    // contract).
    let (mut nnodes, mut nedges) = unsafe { (Out::new(nnodes, "nnodes"), Out::new(nedges, "nedges")) };
    let r = graph_of(comm).and_then(|(_, idx, e)| {
        nnodes.put(idx.len() as c_int)?;
        nedges.put(e.len() as c_int)
    });
    ret(comm, "MPI_Graphdims_get", r)
}

pub unsafe fn MPI_Graph_get(
    comm: MPI_Comm,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    let r = graph_of(comm).and_then(|(_, idx, e)| {
        // SAFETY: `index` and `edges` are NULL or hold `maxindex` and
        // `maxedges` writable ints (the caller's contract).
        unsafe {
            write_ints(index, maxindex, &idx, "index")?;
            write_ints(edges, maxedges, &e, "edges")
        }
    });
    ret(comm, "MPI_Graph_get", r)
}

pub unsafe fn MPI_Graph_neighbors_count(comm: MPI_Comm, rank: c_int, nneighbors: *mut c_int) -> c_int {
    // SAFETY: `nneighbors` is NULL or a writable int (the caller's contract).
    let mut nneighbors = unsafe { Out::new(nneighbors, "nneighbors") };
    let r = graph_of(comm).and_then(|(c, idx, e)| {
        topo::check_rank(&c, rank)?;
        nneighbors.put(topo::graph_neighbors(&idx, &e, rank).len() as c_int)
    });
    ret(comm, "MPI_Graph_neighbors_count", r)
}

pub unsafe fn MPI_Graph_neighbors(comm: MPI_Comm, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int) -> c_int {
    let r = graph_of(comm).and_then(|(c, idx, e)| {
        topo::check_rank(&c, rank)?;
        // SAFETY: `neighbors` is NULL or holds `maxneighbors` writable ints
        // (the caller's contract).
        unsafe { write_ints(neighbors, maxneighbors, topo::graph_neighbors(&idx, &e, rank), "neighbors") }
    });
    ret(comm, "MPI_Graph_neighbors", r)
}

pub unsafe fn MPI_Graph_map(
    comm: MPI_Comm,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    let r = (|| {
        let c = intra(comm, "MPI_Graph_map")?;
        // SAFETY: `index` is NULL or `nnodes` ints, `edges` NULL or as many
        // as the last of them (the caller's contract).
        unsafe { graph_args(nnodes, index, edges, c.size()) }?;
        // SAFETY: `newrank` is NULL or a writable int (the caller's contract).
        unsafe { put(newrank, if c.rank < nnodes { c.rank } else { MPI_UNDEFINED }, "newrank") }
    })();
    ret(comm, "MPI_Graph_map", r)
}

pub unsafe fn MPI_Topo_test(comm: MPI_Comm, status: *mut c_int) -> c_int {
    // SAFETY: `status` is NULL or a writable int (the caller's contract).
    let mut status = unsafe { Out::new(status, "status") };
    let r = comm_of(comm).and_then(|c| status.put(c.topo.as_ref().map_or(MPI_UNDEFINED, |t| t.kind())));
    ret(comm, "MPI_Topo_test", r)
}

/// Weights at `w` for `n` edges: `None` when unweighted.
///
/// # Safety
/// `w` is `MPI_UNWEIGHTED`, NULL or holds `n` ints readable during `'a`.
unsafe fn weights<'a>(w: *const c_int, n: c_int, what: &str) -> MpiResult<Option<&'a [c_int]>> {
    if is_unweighted(w) {
        return Ok(None);
    }
    if n == 0 {
        return Ok(Some(&[]));
    }
    // SAFETY: not MPI_UNWEIGHTED, so NULL or `n` ints (the contract).
    Ok(Some(unsafe { c_array(w, n, what) }?))
}

/// Common checks of the distributed graph constructors; clears the output.
///
/// # Safety
/// `out` is NULL or a writable handle.
unsafe fn dist_prologue(comm_old: MPI_Comm, info: MPI_Info, out: *mut MPI_Comm, what: &str) -> MpiResult<Comm> {
    if out.is_null() {
        bail!(MPI_ERR_ARG, "comm_dist_graph is a NULL pointer");
    }
    // SAFETY: not NULL, so a writable handle (the contract).
    unsafe { *out = MPI_COMM_NULL };
    crate::rt::info::hints(info)?;
    intra(comm_old, what)
}

pub unsafe fn MPI_Dist_graph_create_adjacent(
    comm_old: MPI_Comm,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    info: MPI_Info,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    let r = (|| {
        // SAFETY: `comm_dist_graph` is NULL or a writable handle (the
        // caller's contract).
        let c = unsafe { dist_prologue(comm_old, info, comm_dist_graph, "MPI_Dist_graph_create_adjacent") }?;
        let args = (|| {
            // SAFETY: `sources` and `destinations` are NULL or hold
            // `indegree` and `outdegree` ints, the weights MPI_UNWEIGHTED,
            // NULL or as many ints (the caller's contract).
            let (s, d, sw, dw) = unsafe {
                (
                    c_array(sources, indegree, "sources"),
                    c_array(destinations, outdegree, "destinations"),
                    weights(sourceweights, indegree, "sourceweights"),
                    weights(destweights, outdegree, "destweights"),
                )
            };
            topo::adjacent(c.size(), s?, sw?, d?, dw?)
        })();
        // SAFETY: `comm_dist_graph` is a writable handle (checked by
        // `dist_prologue`).
        unsafe { publish_or_null(topo::create(comm_old, args), comm_dist_graph) }
    })();
    ret(comm_old, "MPI_Dist_graph_create_adjacent", r)
}

pub unsafe fn MPI_Dist_graph_create(
    comm_old: MPI_Comm,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_: *const c_int,
    info: MPI_Info,
    _reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    let r = (|| {
        // SAFETY: `comm_dist_graph` is NULL or a writable handle (the
        // caller's contract).
        let c = unsafe { dist_prologue(comm_old, info, comm_dist_graph, "MPI_Dist_graph_create") }?;
        let local = (|| {
            // SAFETY: `sources` and `degrees` are NULL or hold `n` ints
            // (the caller's contract).
            let (src, deg) = unsafe { (c_array(sources, n, "sources"), c_array(degrees, n, "degrees")) };
            let (src, deg) = (src?, deg?);
            let total = topo::dist_degrees(deg)?;
            // SAFETY: `destinations` is NULL or holds an int per edge, the
            // sum of the degrees, and `weights_` is MPI_UNWEIGHTED, NULL or
            // as many ints (the caller's contract).
            let (dst, w) =
                unsafe { (c_array(destinations, total, "destinations"), weights(weights_, total, "weights")) };
            let w = w?;
            Ok((topo::dist_records(c.size(), src, deg, dst?, w)?, w.is_some()))
        })();
        // SAFETY: `comm_dist_graph` is a writable handle (checked by
        // `dist_prologue`).
        unsafe { publish_or_null(topo::dist_create(comm_old, &c, local), comm_dist_graph) }
    })();
    ret(comm_old, "MPI_Dist_graph_create", r)
}

pub unsafe fn MPI_Dist_graph_neighbors_count(
    comm: MPI_Comm,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    // SAFETY: `indegree`, `outdegree` and `weighted` are NULL or writable
    // ints (the caller's contract).
    let (mut indegree, mut outdegree, mut weighted) =
        unsafe { (Out::new(indegree, "indegree"), Out::new(outdegree, "outdegree"), Out::new(weighted, "weighted")) };
    let r = dist_of(comm).and_then(|t| match &*t {
        Topo::Dist { sources, dests, weighted: w, .. } => {
            indegree.put(sources.len() as c_int)?;
            outdegree.put(dests.len() as c_int)?;
            weighted.put(*w as c_int)
        }
        _ => Err(MpiError::new(MPI_ERR_TOPOLOGY, "not a distributed graph")),
    });
    ret(comm, "MPI_Dist_graph_neighbors_count", r)
}

pub unsafe fn MPI_Dist_graph_neighbors(
    comm: MPI_Comm,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    let r = dist_of(comm).and_then(|t| match &*t {
        Topo::Dist { sources: s, sweights, dests, dweights, weighted } => {
            // SAFETY: `sources` and `destinations` are NULL or hold
            // `maxindegree` and `maxoutdegree` writable ints, and so do the
            // weights unless they are MPI_UNWEIGHTED (the caller's contract).
            unsafe {
                write_ints(sources, maxindegree, s, "sources")?;
                write_ints(destinations, maxoutdegree, dests, "destinations")?;
                if *weighted {
                    if !is_unweighted(sourceweights) {
                        write_ints(sourceweights, maxindegree, sweights, "sourceweights")?;
                    }
                    if !is_unweighted(destweights) {
                        write_ints(destweights, maxoutdegree, dweights, "destweights")?;
                    }
                }
            }
            Ok(())
        }
        _ => Err(MpiError::new(MPI_ERR_TOPOLOGY, "not a distributed graph")),
    });
    ret(comm, "MPI_Dist_graph_neighbors", r)
}
