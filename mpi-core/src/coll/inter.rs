//! Collectives on intercommunicators (the "inter" semantics of chapter 6):
//! the data of one group goes to the other.
//!
//! Each function appends this rank's part to a schedule (`coll::sched`) on
//! the intercommunicator, so the blocking, nonblocking (`MPI_I*`) and
//! persistent (`*_init`) forms share one implementation, as on
//! intracommunicators. A schedule on an intercommunicator has two routes:
//! the remote group (ranks are remote ranks) and, after `Sched::local`, the
//! local group (the intercommunicator's hidden local communicator), where
//! the intracommunicator algorithms of `coll::algo` run unchanged.
//!
//! * Barrier, Bcast, Reduce, Allreduce, Allgather, Reduce_scatter(_block):
//!   the local part runs inside each group (fan-in to, or fan-out from,
//!   local rank 0) and the two leaders exchange the data.
//! * Gather(v), Scatter(v), Allgatherv, Alltoall(v, w): direct messages
//!   between the members of the two groups.
//!
//! Roots follow the standard: `MPI_ROOT` at the root, `MPI_PROC_NULL` at the
//! other members of its group, the root's rank in the remote group at the
//! members of the other group. `MPI_IN_PLACE` is not allowed (the standard
//! defines no in-place intercommunicator collective); Scan and Exscan are
//! not defined on intercommunicators (`MPI_ERR_COMM`).

use std::ffi::c_void;
use std::os::raw::c_int;
use std::ptr::null_mut;
use std::sync::Arc;

use mpi_api::abi::*;

use super::algo;
use super::args::{at, reducer, typed, views, Arr, Dir};
use super::buf::{Reduction, RootBlocks, UserBlocks};
use super::sched::{Packed, Sched};
use crate::bail;
use crate::rt::buf::UserBuf;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::MpiResult;
use crate::rt::State;

/// What a root argument means here.
enum Root {
    /// This process is the root.
    Me,
    /// Another member of the root's group: nothing to do.
    Idle,
    /// A member of the other group; the root is remote rank r.
    Remote(usize),
}

fn root_of(s: &Sched, root: c_int) -> MpiResult<Root> {
    let size = s.remote_size();
    match root {
        MPI_ROOT => Ok(Root::Me),
        MPI_PROC_NULL => Ok(Root::Idle),
        r if r >= 0 && (r as usize) < size => Ok(Root::Remote(r as usize)),
        r => bail!(MPI_ERR_ROOT, "invalid root {r} on an intercommunicator (MPI_ROOT, MPI_PROC_NULL or a rank of the remote group of size {size})"),
    }
}

fn no_in_place(p: *const c_void, what: &str) -> MpiResult<()> {
    if p as usize == MPI_IN_PLACE {
        bail!(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed as {what} on an intercommunicator");
    }
    Ok(())
}

/// Packed views of `size` consecutive blocks of `count` elements of `dt`.
fn blocks(
    s: &mut Sched,
    buf: *const c_void,
    count: usize,
    dt: &Arc<Dtype>,
    size: usize,
    dir: Dir,
) -> Vec<(Packed, usize)> {
    let counts = vec![count; size];
    let displs: Vec<i64> = (0..size).map(|i| (i * count) as i64).collect();
    views(s, buf, (&counts, &displs), std::slice::from_ref(dt), false, dir, None)
}

/// The leaders (local rank 0) swap `send` for `recv` (each group's data of
/// the whole operation), after the local steps before.
fn leaders_swap(s: &mut Sched, send: Packed, sn: usize, recv: Packed, rn: usize) {
    s.fence();
    s.remote();
    if s.rank == 0 {
        s.send(send, sn, 0);
        s.recv(recv, rn, 0);
        s.fence();
    }
    s.local();
}

pub(crate) fn barrier(st: &mut State, s: &mut Sched) {
    // Every member of this group has arrived at local rank 0, the leaders
    // meet, each leader lets its group go.
    s.local();
    algo::gather(s, &st.coll.tune, null_mut(), 0, null_mut(), 0);
    leaders_swap(s, null_mut(), 0, null_mut(), 0);
    algo::bcast(s, &st.coll.tune, null_mut(), 0, 0);
}

/// # Safety
/// As `MPI_Bcast`.
pub(crate) unsafe fn bcast(st: &mut State, s: &mut Sched, buf: UserBuf, root: c_int) -> MpiResult<()> {
    let buffer = buf.addr();
    match root_of(s, root)? {
        Root::Idle => {}
        Root::Me => {
            let (n, dt) = typed(st, buf, "buffer")?;
            let p = s.input(buffer as *const u8, n, &dt);
            s.send(p, dt.packed_size(n), 0);
        }
        Root::Remote(r) => {
            let (n, dt) = typed(st, buf, "buffer")?;
            let bytes = dt.packed_size(n);
            let p = s.output(buffer as *mut u8, n, &dt);
            if s.rank == 0 {
                s.recv(p, bytes, r);
                s.fence();
            }
            s.local();
            algo::bcast(s, &st.coll.tune, p, bytes, 0);
        }
    }
    Ok(())
}

/// This group's reduction at local rank 0 (in a temporary; null at the
/// other ranks): (where, bytes).
///
/// # Safety
/// `red`'s send buffer (or receive buffer in place) holds `count` elements
/// of its type, lent until the schedule completes.
unsafe fn reduce_local(st: &mut State, s: &mut Sched, red: Reduction, count: i64) -> MpiResult<(Packed, usize)> {
    let (sendbuf, datatype, op) = (red.bufs().0, red.datatype, red.op);
    no_in_place(sendbuf, "sendbuf")?;
    let (n, dt) = typed(st, red.send_buf(count), "sendbuf")?;
    s.red = Some(reducer(st, op, datatype, &dt)?);
    let bytes = dt.packed_size(n);
    let sb = s.input(sendbuf as *const u8, n, &dt);
    s.local();
    let acc = if s.rank == 0 { s.tmp(bytes) } else { null_mut() };
    algo::reduce(s, &st.coll.tune, sb, acc, bytes, 0);
    Ok((acc, bytes))
}

/// # Safety
/// As `MPI_Reduce`.
pub(crate) unsafe fn reduce(st: &mut State, s: &mut Sched, red: Reduction, count: i64, root: c_int) -> MpiResult<()> {
    let (recvbuf, datatype, op) = (red.bufs().1, red.datatype, red.op);
    match root_of(s, root)? {
        Root::Idle => {}
        Root::Me => {
            no_in_place(recvbuf, "recvbuf")?;
            let (n, dt) = typed(st, red.recv_buf(count), "recvbuf")?;
            reducer(st, op, datatype, &dt)?;
            let p = s.output(recvbuf as *mut u8, n, &dt);
            s.recv(p, dt.packed_size(n), 0);
        }
        Root::Remote(r) => {
            // SAFETY: this function's contract (`MPI_Reduce`'s): `red`'s
            // send buffer holds `count` elements, lent for the operation.
            let (acc, bytes) = unsafe { reduce_local(st, s, red, count)? };
            if s.rank == 0 {
                s.fence();
                s.remote();
                s.send(acc, bytes, r);
            }
        }
    }
    Ok(())
}

/// # Safety
/// As `MPI_Allreduce`.
pub(crate) unsafe fn allreduce(st: &mut State, s: &mut Sched, red: Reduction, count: i64) -> MpiResult<()> {
    let recvbuf = red.bufs().1;
    no_in_place(recvbuf, "recvbuf")?;
    let (n, dt) = typed(st, red.recv_buf(count), "recvbuf")?;
    let rb = s.output(recvbuf as *mut u8, n, &dt);
    // This group's result goes to the other group, and the other way.
    // SAFETY: this function's contract (`MPI_Allreduce`'s): `red`'s send
    // buffer holds `count` elements, lent for the operation.
    let (acc, bytes) = unsafe { reduce_local(st, s, red, count)? };
    leaders_swap(s, acc, bytes, rb, bytes);
    algo::bcast(s, &st.coll.tune, rb, bytes, 0);
    Ok(())
}

/// Reduce_scatter (`counts` per rank of the local group) and
/// Reduce_scatter_block (`Err(count)`): each group's reduction of vectors
/// of the sum of the counts is scattered over the other group.
///
/// # Safety
/// As `MPI_Reduce_scatter`.
pub(crate) unsafe fn reduce_scatter(
    st: &mut State,
    s: &mut Sched,
    red: Reduction,
    counts: Result<Arr, i64>,
) -> MpiResult<()> {
    let recvbuf = red.bufs().1;
    let lsize = s.local_size();
    let counts = match counts {
        // SAFETY: `MPI_Reduce_scatter`'s contract: `recvcounts` is NULL
        // (reported) or one count per rank of the local group.
        Ok(a) => unsafe { a.counts(lsize, "recvcounts")? },
        Err(b) => vec![check_count(b)?; lsize],
    };
    no_in_place(recvbuf, "recvbuf")?;
    let total: usize = counts.iter().sum();
    let (mine, dt) = typed(st, red.recv_buf(counts[s.rank] as i64), "recvbuf")?;
    let out = s.output(recvbuf as *mut u8, mine, &dt);
    // SAFETY: this function's contract: `red`'s send buffer holds the sum of
    // the counts (`total`) elements, lent for the operation.
    let (acc, bytes) = unsafe { reduce_local(st, s, red, total as i64)? };
    let theirs = if s.rank == 0 { s.tmp(bytes) } else { null_mut() };
    leaders_swap(s, acc, bytes, theirs, bytes);
    let blocks: Vec<(Packed, usize)> = counts
        .iter()
        .scan(0, |o, &c| {
            let b = dt.packed_size(c);
            *o += b;
            Some((at(theirs, *o - b), b))
        })
        .collect();
    algo::scatterv(s, &blocks, out, dt.packed_size(mine), 0, false);
    Ok(())
}

/// # Safety
/// As `MPI_Allgather`.
pub(crate) unsafe fn allgather(st: &mut State, s: &mut Sched, send: UserBuf, recv: UserBuf) -> MpiResult<()> {
    let sendbuf = send.addr() as *const c_void;
    let recvbuf = recv.addr();
    no_in_place(sendbuf, "sendbuf")?;
    let (sc, sdt) = typed(st, send, "sendbuf")?;
    let (rc, rdt) = typed(st, recv, "recvbuf")?;
    let (sblk, rall) = (sdt.packed_size(sc), rdt.packed_size(rc) * s.remote_size());
    let out = s.output(recvbuf as *mut u8, rc * s.remote_size(), &rdt);
    let mine = s.input(sendbuf as *const u8, sc, &sdt);
    // This group's blocks in rank order at local rank 0, swapped for the
    // other group's, then broadcast.
    s.local();
    let ours = if s.rank == 0 { s.tmp(sblk * s.size) } else { null_mut() };
    let total = sblk * s.size;
    algo::gather(s, &st.coll.tune, mine, sblk, ours, 0);
    leaders_swap(s, ours, total, out, rall);
    algo::bcast(s, &st.coll.tune, out, rall, 0);
    Ok(())
}

/// Each member's block straight to every member of the other group.
///
/// # Safety
/// As `MPI_Allgatherv`.
pub(crate) unsafe fn allgatherv(st: &mut State, s: &mut Sched, send: UserBuf, recv: UserBlocks) -> MpiResult<()> {
    let (recvbuf, recvcounts, displs, recvtype) = (recv.addr(), recv.counts, recv.displs, recv.datatype());
    let sendbuf = send.addr() as *const c_void;
    no_in_place(sendbuf, "sendbuf")?;
    let size = s.remote_size();
    let (sc, sdt) = typed(st, send, "sendbuf")?;
    // SAFETY: `recv`'s constructor (`MPI_Allgatherv`'s contract): its
    // arrays are NULL (reported) or one value per rank of the remote group.
    let counts = unsafe { recvcounts.counts(size, "recvcounts")? };
    // SAFETY: as above, for the displacements.
    let displs = unsafe { displs.read(size, "displs")? };
    let rdt = st.types.get(recvtype)?;
    let rv = views(s, recvbuf, (&counts, &displs), std::slice::from_ref(&rdt), false, Dir::Out, None);
    let mine = s.input(sendbuf as *const u8, sc, &sdt);
    let n = sdt.packed_size(sc);
    for (r, &(p, l)) in rv.iter().enumerate() {
        s.recv(p, l, r);
        s.send(mine, n, r);
    }
    Ok(())
}

/// Gather (`counts` None: `recvcount` each, in consecutive blocks) or
/// Gatherv: the root receives a block from every member of the other group.
///
/// # Safety
/// As `MPI_Gatherv`.
pub(crate) unsafe fn gather(
    st: &mut State,
    s: &mut Sched,
    send: UserBuf,
    recv: RootBlocks,
    root: c_int,
) -> MpiResult<()> {
    let sendbuf = send.addr() as *const c_void;
    match root_of(s, root)? {
        Root::Idle => {}
        Root::Me => {
            let size = s.remote_size();
            let rv = match recv {
                RootBlocks::Even(recv) => {
                    no_in_place(recv.addr(), "recvbuf")?;
                    let (rc, rdt) = typed(st, recv, "recvbuf")?;
                    blocks(s, recv.addr(), rc, &rdt, size, Dir::Out)
                }
                RootBlocks::Varying(recv) => {
                    no_in_place(recv.addr(), "recvbuf")?;
                    // SAFETY: `recv`'s constructor (`MPI_Gatherv`'s contract): at
                    // the root its arrays are NULL (reported) or one value per
                    // rank of the remote group.
                    let (c, d) =
                        unsafe { (recv.counts.counts(size, "recvcounts")?, recv.displs.read(size, "displs")?) };
                    let rdt = st.types.get(recv.datatype())?;
                    views(s, recv.addr(), (&c, &d), std::slice::from_ref(&rdt), false, Dir::Out, None)
                }
            };
            for (r, &(p, l)) in rv.iter().enumerate() {
                s.recv(p, l, r);
            }
        }
        Root::Remote(r) => {
            no_in_place(sendbuf, "sendbuf")?;
            let (sc, sdt) = typed(st, send, "sendbuf")?;
            let p = s.input(sendbuf as *const u8, sc, &sdt);
            s.send(p, sdt.packed_size(sc), r);
        }
    }
    Ok(())
}

/// Scatter (`counts` None) or Scatterv: the root sends a block to every
/// member of the other group.
///
/// # Safety
/// As `MPI_Scatterv`.
pub(crate) unsafe fn scatter(
    st: &mut State,
    s: &mut Sched,
    send: RootBlocks,
    recv: UserBuf,
    root: c_int,
) -> MpiResult<()> {
    let recvbuf = recv.addr();
    match root_of(s, root)? {
        Root::Idle => {}
        Root::Me => {
            let size = s.remote_size();
            let sv = match send {
                RootBlocks::Even(send) => {
                    no_in_place(send.addr(), "sendbuf")?;
                    let (sc, sdt) = typed(st, send, "sendbuf")?;
                    blocks(s, send.addr(), sc, &sdt, size, Dir::In)
                }
                RootBlocks::Varying(send) => {
                    no_in_place(send.addr(), "sendbuf")?;
                    // SAFETY: `send`'s constructor (`MPI_Scatterv`'s contract): at
                    // the root its arrays are NULL (reported) or one value per
                    // rank of the remote group.
                    let (c, d) =
                        unsafe { (send.counts.counts(size, "sendcounts")?, send.displs.read(size, "displs")?) };
                    let sdt = st.types.get(send.datatype())?;
                    views(s, send.addr(), (&c, &d), std::slice::from_ref(&sdt), false, Dir::In, None)
                }
            };
            for (r, &(p, l)) in sv.iter().enumerate() {
                s.send(p, l, r);
            }
        }
        Root::Remote(r) => {
            no_in_place(recvbuf, "recvbuf")?;
            let (rc, rdt) = typed(st, recv, "recvbuf")?;
            let p = s.output(recvbuf as *mut u8, rc, &rdt);
            s.recv(p, rdt.packed_size(rc), r);
        }
    }
    Ok(())
}

/// Alltoall: block r of the send buffer to remote rank r, block r of the
/// receive buffer from it.
///
/// # Safety
/// As `MPI_Alltoall`.
pub(crate) unsafe fn alltoall(st: &mut State, s: &mut Sched, send: UserBuf, recv: UserBuf) -> MpiResult<()> {
    let sendbuf = send.addr() as *const c_void;
    let recvbuf = recv.addr();
    no_in_place(sendbuf, "sendbuf")?;
    let size = s.remote_size();
    let (sc, sdt) = typed(st, send, "sendbuf")?;
    let (rc, rdt) = typed(st, recv, "recvbuf")?;
    let sv = blocks(s, sendbuf, sc, &sdt, size, Dir::In);
    let rv = blocks(s, recvbuf, rc, &rdt, size, Dir::Out);
    exchange(s, &sv, &rv);
    Ok(())
}

/// Alltoallv (`bytes_disp` false, one type each side) and Alltoallw (a type
/// per peer, displacements in bytes).
///
/// # Safety
/// As `MPI_Alltoallw`.
pub(crate) unsafe fn alltoall_vw(
    st: &mut State,
    s: &mut Sched,
    send: UserBlocks,
    recv: UserBlocks,
    bytes_disp: bool,
) -> MpiResult<()> {
    no_in_place(send.addr(), "sendbuf")?;
    let size = s.remote_size();
    // SAFETY: the constructors of `send` and `recv` (`MPI_Alltoallw`'s
    // contract): the arrays are NULL (reported) or one value per rank of the
    // remote group.
    let (sc, sd) = unsafe { (send.counts.counts(size, "sendcounts")?, send.displs.read(size, "sdispls")?) };
    // SAFETY: as above.
    let (rc, rd) = unsafe { (recv.counts.counts(size, "recvcounts")?, recv.displs.read(size, "rdispls")?) };
    let sdts = send.types.iter().map(|&t| st.types.get(t)).collect::<MpiResult<Vec<_>>>()?;
    let rdts = recv.types.iter().map(|&t| st.types.get(t)).collect::<MpiResult<Vec<_>>>()?;
    let sv = views(s, send.addr(), (&sc, &sd), &sdts, bytes_disp, Dir::In, None);
    let rv = views(s, recv.addr(), (&rc, &rd), &rdts, bytes_disp, Dir::Out, None);
    exchange(s, &sv, &rv);
    Ok(())
}

/// Block r of `sv` to remote rank r, block r of `rv` from it, all at once.
fn exchange(s: &mut Sched, sv: &[(Packed, usize)], rv: &[(Packed, usize)]) {
    for (r, (&(sp, sl), &(rp, rl))) in sv.iter().zip(rv).enumerate() {
        s.recv(rp, rl, r);
        s.send(sp, sl, r);
    }
}
