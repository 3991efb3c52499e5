//! Chapter 5 (first part): blocking collectives built on the point-to-point
//! engine, on the communicator's collective context.
//!
//! Algorithms: dissemination barrier; binomial-tree broadcast and reduce;
//! allreduce by recursive doubling (power-of-two sizes) or reduce + bcast,
//! always combining "lower ranks op higher ranks" so every rank gets the same
//! bits; allgather of small items by gather + bcast.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::ret;
use crate::bail;
use crate::rt::datatype::{check_count, Dtype};
use crate::rt::error::MpiResult;
use crate::rt::p2p::{Kind, Mode, RecvOp, Request};
use crate::rt::{self, op, State};

const TAG_BARRIER: i32 = 1;
const TAG_BCAST: i32 = 2;
const TAG_REDUCE: i32 = 3;
const TAG_ALLREDUCE: i32 = 4;
const TAG_GATHER: i32 = 5;

/// A communicator as the collective algorithms see it.
pub(crate) struct Cc {
    ctx: u32,
    rank: usize,
    size: usize,
    group: Arc<Vec<usize>>,
    bytes: Arc<Dtype>,
}

pub(crate) fn cc(comm: MPI_Comm) -> MpiResult<Cc> {
    rt::with(|st| {
        let c = st.comms.get(comm)?;
        let (ctx, rank, size, group) = (c.coll_ctx(), c.rank as usize, c.size() as usize, c.group.clone());
        Ok(Cc { ctx, rank, size, group, bytes: st.types.get(MPI_BYTE)? })
    })
}

impl Cc {
    fn isend(&self, st: &mut State, data: *const u8, len: usize, to: usize, tag: i32) -> u32 {
        let i = st.reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
        st.engine.start_send(&mut st.reqs, i, data, len, &self.bytes, self.group[to], self.ctx, self.rank as i32, tag, Mode::Standard);
        i
    }
    fn irecv(&self, st: &mut State, buf: *mut u8, len: usize, from: usize, tag: i32) -> u32 {
        let op = RecvOp { buf, dt: self.bytes.clone(), ctx: self.ctx, src: from as i32, tag, cap: len, stream: None };
        let i = st.reqs.alloc(Request::new(Kind::Recv(op), MPI_COMM_WORLD));
        st.engine.start_recv(&mut st.reqs, i);
        i
    }
    /// Sends `len` bytes to `to` and receives `rlen` from `from`.
    fn sendrecv(&self, s: &[u8], to: usize, r: &mut [u8], from: usize, tag: i32) -> MpiResult<()> {
        let ids = rt::with(|st| Ok([self.isend(st, s.as_ptr(), s.len(), to, tag), self.irecv(st, r.as_mut_ptr(), r.len(), from, tag)]))?;
        wait_all(&ids)
    }
    fn send(&self, s: &[u8], to: usize, tag: i32) -> MpiResult<()> {
        let id = rt::with(|st| Ok(self.isend(st, s.as_ptr(), s.len(), to, tag)))?;
        wait_all(&[id])
    }
    fn recv(&self, r: &mut [u8], from: usize, tag: i32) -> MpiResult<()> {
        let id = rt::with(|st| Ok(self.irecv(st, r.as_mut_ptr(), r.len(), from, tag)))?;
        wait_all(&[id])
    }
}

fn wait_all(ids: &[u32]) -> MpiResult<()> {
    rt::wait_until(|st| ids.iter().all(|&i| st.reqs.get(i).done))?;
    rt::with(|st| {
        let mut err = MPI_SUCCESS;
        for &i in ids {
            let e = st.reqs.get(i).err;
            if e != MPI_SUCCESS {
                err = e;
            }
            st.reqs.release(i);
        }
        if err != MPI_SUCCESS {
            bail!(err, "collective message mismatch (are all ranks calling the same collective with matching counts?)");
        }
        Ok(())
    })
}

pub(crate) fn barrier(c: &Cc) -> MpiResult<()> {
    let mut k = 1;
    while k < c.size {
        let to = (c.rank + k) % c.size;
        let from = (c.rank + c.size - k) % c.size;
        c.sendrecv(&[], to, &mut [], from, TAG_BARRIER)?;
        k <<= 1;
    }
    Ok(())
}

/// Binomial broadcast of `data` from `root`.
pub(crate) fn bcast_bytes(c: &Cc, data: &mut [u8], root: usize) -> MpiResult<()> {
    let n = c.size;
    let rel = (c.rank + n - root) % n;
    let mut mask = 1;
    while mask < n {
        if rel & mask != 0 {
            let src = (rel - mask + root) % n;
            c.recv(data, src, TAG_BCAST)?;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < n {
            let dst = (rel + mask + root) % n;
            c.send(data, dst, TAG_BCAST)?;
        }
        mask >>= 1;
    }
    Ok(())
}

/// Binomial reduce into `acc` at `root` (`acc` holds this rank's data and is
/// the result at the root). Children hold higher relative ranks, so each step
/// computes `acc op child` (lower ranks on the left).
pub(crate) fn reduce_bytes(c: &Cc, acc: &mut Vec<u8>, opn: MPI_Op, dt: MPI_Datatype, root: usize) -> MpiResult<()> {
    let n = c.size;
    let rel = (c.rank + n - root) % n;
    let mut tmp = vec![0u8; acc.len()];
    let mut mask = 1;
    while mask < n {
        if rel & mask != 0 {
            let dst = (rel - mask + root) % n;
            c.send(acc, dst, TAG_REDUCE)?;
            break;
        }
        if rel + mask < n {
            let src = (rel + mask + root) % n;
            c.recv(&mut tmp, src, TAG_REDUCE)?;
            // tmp = acc op tmp (lower ranks first), then keep it in acc.
            op::apply(opn, dt, acc, &mut tmp)?;
            std::mem::swap(acc, &mut tmp);
        }
        mask <<= 1;
    }
    Ok(())
}

pub(crate) fn allreduce_bytes(c: &Cc, acc: &mut Vec<u8>, opn: MPI_Op, dt: MPI_Datatype) -> MpiResult<()> {
    let n = c.size;
    if n.is_power_of_two() {
        let mut tmp = vec![0u8; acc.len()];
        let mut mask = 1;
        while mask < n {
            let p = c.rank ^ mask;
            c.sendrecv(acc, p, &mut tmp, p, TAG_ALLREDUCE)?;
            if p < c.rank {
                // acc = tmp op acc
                op::apply(opn, dt, &tmp, acc)?;
            } else {
                // acc = acc op tmp
                op::apply(opn, dt, acc, &mut tmp)?;
                std::mem::swap(acc, &mut tmp);
            }
            mask <<= 1;
        }
        return Ok(());
    }
    reduce_bytes(c, acc, opn, dt, 0)?;
    bcast_bytes(c, acc, 0)
}

/// Allreduce of one u32 with MAX (context id agreement).
pub(crate) fn allreduce_max_u32(comm: MPI_Comm, v: u32) -> MpiResult<u32> {
    let c = cc(comm)?;
    let mut acc = (v as u64).to_ne_bytes().to_vec();
    allreduce_bytes(&c, &mut acc, MPI_MAX, MPI_UNSIGNED_LONG)?;
    Ok(u64::from_ne_bytes(acc[..8].try_into().unwrap()) as u32)
}

/// Every rank's pair of ints, by rank (gather to 0 + bcast).
pub(crate) fn allgather_i32x2(comm: MPI_Comm, v: [i32; 2]) -> MpiResult<Vec<[i32; 2]>> {
    let c = cc(comm)?;
    let mut all = vec![0u8; 8 * c.size];
    let mine: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
    if c.rank == 0 {
        all[..8].copy_from_slice(&mine);
        for r in 1..c.size {
            c.recv(&mut all[8 * r..8 * r + 8], r, TAG_GATHER)?;
        }
    } else {
        c.send(&mine, 0, TAG_GATHER)?;
    }
    bcast_bytes(&c, &mut all, 0)?;
    Ok(all.chunks_exact(8).map(|ch| [i32::from_ne_bytes(ch[..4].try_into().unwrap()), i32::from_ne_bytes(ch[4..].try_into().unwrap())]).collect())
}

fn check_root(root: c_int, c: &Cc) -> MpiResult<usize> {
    if root < 0 || root as usize >= c.size {
        bail!(MPI_ERR_ROOT, "invalid root {root} in a communicator of size {}", c.size);
    }
    Ok(root as usize)
}

/// The predefined element type a reduction works on.
fn reduce_type(dt: &Dtype, op: MPI_Op) -> MpiResult<MPI_Datatype> {
    if !op::is_predefined(op) {
        bail!(MPI_ERR_OP, "user-defined operations are not supported yet (op 0x{:08x})", op as u32);
    }
    match dt.basic {
        Some(b) => Ok(b),
        None => bail!(MPI_ERR_TYPE, "reductions need a predefined datatype (derived types come later)"),
    }
}

pub unsafe fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    ret(comm, "MPI_Barrier", cc(comm).and_then(|c| barrier(&c)))
}

unsafe fn bcast_common(name: &str, buffer: *mut c_void, count: i64, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
    let r = cc(comm).and_then(|c| {
        let root = check_root(root, &c)?;
        let n = check_count(count)?;
        let dt = rt::with(|st| st.types.get(datatype))?;
        let bytes = dt.packed_size(n);
        if bytes == 0 || c.size == 1 {
            return Ok(());
        }
        if dt.contig {
            let data = std::slice::from_raw_parts_mut(buffer as *mut u8, bytes);
            bcast_bytes(&c, data, root)
        } else {
            let mut tmp = vec![0u8; bytes];
            if c.rank == root {
                dt.pack(buffer as *const u8, n, &mut tmp);
            }
            bcast_bytes(&c, &mut tmp, root)?;
            if c.rank != root {
                dt.unpack(&tmp, buffer as *mut u8);
            }
            Ok(())
        }
    });
    ret(comm, name, r)
}

pub unsafe fn MPI_Bcast(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
    bcast_common("MPI_Bcast", buffer, count as i64, datatype, root, comm)
}
pub unsafe fn MPI_Bcast_c(buffer: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) -> c_int {
    bcast_common("MPI_Bcast_c", buffer, count, datatype, root, comm)
}

/// Packs the send side of a reduction (`MPI_IN_PLACE` reads `recvbuf`).
unsafe fn reduce_input(sendbuf: *const c_void, recvbuf: *const c_void, n: usize, dt: &Dtype) -> Vec<u8> {
    let src = if sendbuf as usize == MPI_IN_PLACE { recvbuf } else { sendbuf };
    let mut acc = vec![0u8; dt.packed_size(n)];
    if !acc.is_empty() {
        dt.pack(src as *const u8, n, &mut acc);
    }
    acc
}

#[allow(clippy::too_many_arguments)]
unsafe fn reduce_common(name: &str, sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) -> c_int {
    let r = cc(comm).and_then(|c| {
        let root = check_root(root, &c)?;
        let n = check_count(count)?;
        let dt = rt::with(|st| st.types.get(datatype))?;
        let base = reduce_type(&dt, op)?;
        let mut acc = reduce_input(sendbuf, recvbuf, n, &dt);
        reduce_bytes(&c, &mut acc, op, base, root)?;
        if c.rank == root && !acc.is_empty() {
            dt.unpack(&acc, recvbuf as *mut u8);
        }
        Ok(())
    });
    ret(comm, name, r)
}

pub unsafe fn MPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) -> c_int {
    reduce_common("MPI_Reduce", sendbuf, recvbuf, count as i64, datatype, op, root, comm)
}
pub unsafe fn MPI_Reduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) -> c_int {
    reduce_common("MPI_Reduce_c", sendbuf, recvbuf, count, datatype, op, root, comm)
}

unsafe fn allreduce_common(name: &str, sendbuf: *const c_void, recvbuf: *mut c_void, count: i64, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
    let r = cc(comm).and_then(|c| {
        let n = check_count(count)?;
        let dt = rt::with(|st| st.types.get(datatype))?;
        let base = reduce_type(&dt, op)?;
        let mut acc = reduce_input(sendbuf, recvbuf, n, &dt);
        allreduce_bytes(&c, &mut acc, op, base)?;
        if !acc.is_empty() {
            dt.unpack(&acc, recvbuf as *mut u8);
        }
        Ok(())
    });
    ret(comm, name, r)
}

pub unsafe fn MPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
    allreduce_common("MPI_Allreduce", sendbuf, recvbuf, count as i64, datatype, op, comm)
}
pub unsafe fn MPI_Allreduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) -> c_int {
    allreduce_common("MPI_Allreduce_c", sendbuf, recvbuf, count, datatype, op, comm)
}
