//! The small collectives communicator construction needs (agreeing on a
//! context id, exchanging groups, colors and edges), built directly on the
//! point-to-point engine so they work on any set of processes: a whole
//! communicator, a subgroup (`MPI_Comm_create_group`), the two leaders of an
//! intercommunicator, or the local group of one.
//!
//! They travel on a collective context with tags at or above `TAG_BASE`,
//! which the collective operations never use (their tags stay below 2^30),
//! so they cannot match anything else.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use crate::bail;
use crate::rt::comm::Comm;
use crate::rt::datatype::Dtype;
use crate::rt::error::MpiResult;
use crate::rt::p2p::{Kind, RecvOp, Request, Wire};
use crate::rt::{self, State};

/// First tag of the library's internal traffic on collective contexts.
pub(crate) const TAG_BASE: i32 = 0x4000_0000;
pub(crate) const TAG_REDUCE: i32 = TAG_BASE + 1;
pub(crate) const TAG_BCAST: i32 = TAG_BASE + 2;
pub(crate) const TAG_GATHER: i32 = TAG_BASE + 3;
pub(crate) const TAG_EXCHANGE: i32 = TAG_BASE + 4;
/// Tags of `MPI_Comm_create_group` and `MPI_Intercomm_create`: from here
/// on, 8 per user tag (masked to 25 bits).
const TAG_USER: i32 = TAG_BASE + 0x1000_0000;

/// A set of processes that exchange messages on context `ctx`, each known by
/// its index in `group`, which it uses as the source rank of its messages
/// unless the view has `labels`.
#[derive(Clone)]
pub(crate) struct View {
    pub ctx: u32,
    pub rank: usize,
    pub group: Arc<Vec<usize>>,
    bytes: Arc<Dtype>,
    /// Added to every tag (separates concurrent operations that share a
    /// context, such as `MPI_Comm_create_group` calls with different tags).
    tag_off: i32,
    /// The source rank each member's messages carry, by index, when that
    /// index does not name the process on `ctx` alone: the members of a
    /// subgroup (`MPI_Comm_create_group`, communicators from session
    /// groups) are numbered within it, and a member that moved on to its
    /// next group with the same tag would otherwise send as the same
    /// index as a process that has not sent yet in the previous one, and
    /// its message would be taken for that one.
    labels: Option<Arc<Vec<usize>>>,
}

impl View {
    pub fn new(st: &mut State, ctx: u32, rank: usize, group: Arc<Vec<usize>>) -> MpiResult<View> {
        Ok(View { ctx, rank, group, bytes: st.types.get(MPI_BYTE)?, tag_off: 0, labels: None })
    }
    /// The same processes, with tags of their own derived from a user tag.
    pub fn with_user_tag(mut self, tag: c_int) -> View {
        self.tag_off = TAG_USER - TAG_BASE + ((tag & 0x01ff_ffff) << 3);
        self
    }
    /// The same processes, with tags that a revoked communicator still
    /// carries (`rt::ulfm`), group `k` of them (16 tags per group).
    pub fn fault_tolerant(mut self, k: i32) -> View {
        self.tag_off = crate::rt::ulfm::TAG_FT - TAG_BASE + (k << 4);
        self
    }
    /// The same processes, whose messages carry `labels[i]` as the source
    /// rank of member `i` (numbers unique on the context, such as ranks in
    /// the parent communicator).
    pub fn with_labels(mut self, labels: Arc<Vec<usize>>) -> View {
        debug_assert_eq!(labels.len(), self.group.len());
        self.labels = Some(labels);
        self
    }
    /// The source rank of member `i`'s messages.
    fn label(&self, i: usize) -> i32 {
        self.labels.as_ref().map_or(i, |l| l[i]) as i32
    }
    /// The members of `c` (of its local group for an intercommunicator) on
    /// a context no user message or collective of `c` uses.
    pub fn local(st: &mut State, c: &Comm) -> MpiResult<View> {
        View::new(st, c.local_ctx(), c.rank as usize, c.local_group().clone())
    }
    /// The remote group of intercommunicator `c`, on its collective context.
    pub fn remote(st: &mut State, c: &Comm) -> MpiResult<View> {
        View::new(st, c.coll_ctx(), c.rank as usize, c.group.clone())
    }
    pub fn size(&self) -> usize {
        self.group.len()
    }

    /// Starts a send of a copy of `data` (kept by the request, so the
    /// caller's buffer may go whatever happens to the request).
    fn isend(&self, st: &mut State, data: &[u8], to: usize, tag: i32) -> u32 {
        let env = Wire { ctx: self.ctx, src: self.label(self.rank), tag: tag + self.tag_off };
        let i = st.reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
        st.engine.start_send_vec(&mut st.reqs, i, data.to_vec(), &self.bytes, self.group[to], env);
        i
    }

    fn irecv(&self, st: &mut State, buf: &mut [u8], from: usize, tag: i32) -> u32 {
        let tag = tag + self.tag_off;
        let op = RecvOp {
            buf: buf.as_mut_ptr(),
            dt: self.bytes.clone().into(),
            ctx: self.ctx,
            src: self.label(from),
            tag,
            cap: buf.len(),
            stream: None,
        };
        let i = st.reqs.alloc(Request::new(Kind::Recv(op), MPI_COMM_WORLD));
        st.engine.start_recv(&mut st.reqs, i);
        i
    }

    fn send(&self, data: &[u8], to: usize, tag: i32) -> MpiResult<()> {
        let id = rt::with(|st| Ok(self.isend(st, data, to, tag)))?;
        wait_all(&[id])
    }

    fn recv(&self, buf: &mut [u8], from: usize, tag: i32) -> MpiResult<()> {
        let id = rt::with(|st| Ok(self.irecv(st, buf, from, tag)))?;
        wait_all(&[id])
    }

    /// Sends a byte string of any length (its length first).
    pub fn send_vec(&self, data: &[u8], to: usize, tag: i32) -> MpiResult<()> {
        let len = (data.len() as u64).to_ne_bytes();
        let ids = rt::with(|st| Ok([self.isend(st, &len, to, tag), self.isend(st, data, to, tag)]))?;
        wait_all(&ids)
    }

    /// Receives what [`View::send_vec`] sent.
    pub fn recv_vec(&self, from: usize, tag: i32) -> MpiResult<Vec<u8>> {
        let mut len = [0u8; 8];
        self.recv(&mut len, from, tag)?;
        let mut v = vec![0u8; u64::from_ne_bytes(len) as usize];
        self.recv(&mut v, from, tag)?;
        Ok(v)
    }

    /// Exchanges byte strings with `peer` (both sides call this).
    pub fn sendrecv_vec(&self, data: &[u8], peer: usize, tag: i32) -> MpiResult<Vec<u8>> {
        let len = (data.len() as u64).to_ne_bytes();
        let ids = rt::with(|st| Ok([self.isend(st, &len, peer, tag), self.isend(st, data, peer, tag)]))?;
        let got = self.recv_vec(peer, tag);
        wait_all(&ids)?;
        got
    }

    /// Binomial broadcast of a byte string from `root`.
    pub fn bcast_vec(&self, data: Vec<u8>, root: usize) -> MpiResult<Vec<u8>> {
        let n = self.size();
        let rel = (self.rank + n - root) % n;
        let mut data = data;
        let mut mask = 1;
        while mask < n {
            if rel & mask != 0 {
                data = self.recv_vec((rel - mask + root) % n, TAG_BCAST)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < n {
                self.send_vec(&data, (rel + mask + root) % n, TAG_BCAST)?;
            }
            mask >>= 1;
        }
        Ok(data)
    }

    /// Binomial reduction of a `u32` to rank 0 with `f` (the result is
    /// meaningful at rank 0 only).
    pub fn reduce_u32(&self, v: u32, f: impl Fn(u32, u32) -> u32) -> MpiResult<u32> {
        let n = self.size();
        let mut acc = v;
        let mut mask = 1;
        while mask < n {
            if self.rank & mask != 0 {
                self.send(&acc.to_ne_bytes(), self.rank - mask, TAG_REDUCE)?;
                break;
            }
            if self.rank + mask < n {
                let mut b = [0u8; 4];
                self.recv(&mut b, self.rank + mask, TAG_REDUCE)?;
                acc = f(acc, u32::from_ne_bytes(b));
            }
            mask <<= 1;
        }
        Ok(acc)
    }

    pub fn bcast_u32(&self, v: u32, root: usize) -> MpiResult<u32> {
        let b = self.bcast_vec(v.to_ne_bytes().to_vec(), root)?;
        Ok(u32::from_ne_bytes(b[..4].try_into().unwrap()))
    }

    /// `v` combined with `f` over the view, at every member.
    pub fn allreduce_u32(&self, v: u32, f: impl Fn(u32, u32) -> u32) -> MpiResult<u32> {
        let m = self.reduce_u32(v, f)?;
        self.bcast_u32(m, 0)
    }

    /// Every member's byte string, by rank (gather to 0, then broadcast).
    pub fn allgather_vec(&self, mine: &[u8]) -> MpiResult<Vec<Vec<u8>>> {
        let n = self.size();
        let mut all = Vec::new();
        if self.rank == 0 {
            let mut parts = vec![mine.to_vec()];
            for r in 1..n {
                parts.push(self.recv_vec(r, TAG_GATHER)?);
            }
            all = encode_parts(&parts);
        } else {
            self.send_vec(mine, 0, TAG_GATHER)?;
        }
        Ok(decode_parts(&self.bcast_vec(all, 0)?))
    }

    /// Sends `out[r]` to every member r and returns what each sent here
    /// (a personalized all-to-all of byte strings).
    pub fn alltoall_vec(&self, out: &[Vec<u8>]) -> MpiResult<Vec<Vec<u8>>> {
        let n = self.size();
        let mut inb = vec![Vec::new(); n];
        for k in 0..n {
            let to = (self.rank + k) % n;
            let from = (self.rank + n - k) % n;
            let len_out = (out[to].len() as u64).to_ne_bytes();
            let mut len = [0u8; 8];
            let ids = rt::with(|st| {
                Ok([self.isend(st, &len_out, to, TAG_EXCHANGE), self.irecv(st, &mut len, from, TAG_EXCHANGE)])
            })?;
            wait_all(&ids)?;
            inb[from] = vec![0u8; u64::from_ne_bytes(len) as usize];
            let ids = rt::with(|st| {
                Ok([self.isend(st, &out[to], to, TAG_EXCHANGE), self.irecv(st, &mut inb[from], from, TAG_EXCHANGE)])
            })?;
            wait_all(&ids)?;
        }
        Ok(inb)
    }
}

/// Several byte strings as one (each preceded by its length).
pub(crate) fn encode_parts(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    for p in parts {
        v.extend_from_slice(&(p.len() as u64).to_ne_bytes());
        v.extend_from_slice(p);
    }
    v
}

pub(crate) fn decode_parts(mut b: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while b.len() >= 8 {
        let n = u64::from_ne_bytes(b[..8].try_into().unwrap()) as usize;
        out.push(b[8..8 + n].to_vec());
        b = &b[8 + n..];
    }
    out
}

pub(crate) fn ints_to_bytes(v: &[c_int]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

pub(crate) fn bytes_to_ints(b: &[u8]) -> Vec<c_int> {
    b.chunks_exact(4).map(|c| c_int::from_ne_bytes(c.try_into().unwrap())).collect()
}

pub(crate) fn ranks_to_bytes(v: &[usize]) -> Vec<u8> {
    v.iter().flat_map(|&x| (x as u64).to_ne_bytes()).collect()
}

pub(crate) fn bytes_to_ranks(b: &[u8]) -> Vec<usize> {
    b.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap()) as usize).collect()
}

/// Waits for requests of internal traffic, then releases them.
pub(crate) fn wait_all(ids: &[u32]) -> MpiResult<()> {
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
            bail!(err, "internal message of communicator construction failed (do all processes call the same communicator functions in the same order?)");
        }
        Ok(())
    })
}
