//! The messages of RMA: a request is a [`Hdr`], the target datatype as
//! (count, extent, runs of one element) and the packed data; replies and
//! the fence's count exchange are plain byte messages on the window's
//! contexts.

use std::sync::Arc;

use mpi_api::abi::*;

use super::{Pending, Win};
use crate::rt::buf::SendData;
use crate::rt::datatype::Dtype;
use crate::rt::error::MpiResult;
use crate::rt::p2p::{Engine, Kind, Mode, RecvOp, ReqTable, Request, Wire};
use crate::rt::State;

/// Tag of requests to a target; replies use tags from 1 on.
pub const TAG_REQ: i32 = 0;

/// Header of a request message.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hdr {
    pub kind: u32,
    /// Operation (accumulates) or lock type (LOCK, UNLOCK).
    pub op: i32,
    /// Predefined element type (accumulates).
    pub basic: i32,
    /// Tag of the reply, 0 if none.
    pub reply: i32,
    /// Target address in the target's address space.
    pub addr: u64,
    /// Elements of the target type, its extent and its runs.
    pub count: u64,
    pub extent: i64,
    /// Fence epoch of the operation (0: not a fence epoch): the target
    /// applies it only after its own fence that opened that epoch.
    pub epoch: u64,
}

pub(super) const HDR_LEN: usize = 48;

/// The target side of an operation: where and in which layout.
pub struct Target<'a> {
    pub addr: usize,
    pub count: usize,
    pub extent: isize,
    pub runs: &'a [(isize, usize)],
}

impl Target<'_> {
    /// Bytes from the lowest to past the highest byte touched, relative to
    /// `addr` (`(0, 0)` when nothing is touched).
    pub fn span(&self) -> (isize, isize) {
        if self.count == 0 || self.runs.is_empty() {
            return (0, 0);
        }
        let lo_run = self.runs.iter().map(|&(o, _)| o).min().unwrap_or(0);
        let hi_run = self.runs.iter().map(|&(o, l)| o + l as isize).max().unwrap_or(0);
        let last = (self.count as isize - 1) * self.extent;
        (lo_run + last.min(0), hi_run + last.max(0))
    }
    /// Visits every run in order: (address, length). Elements that are one
    /// run each, back to back, are visited as one run (an accumulate then
    /// combines them in one call, not one call per element).
    pub(super) fn each(&self, mut f: impl FnMut(usize, usize)) {
        if let [(0, l)] = self.runs {
            if *l as isize == self.extent {
                f(self.addr, l * self.count);
                return;
            }
        }
        for i in 0..self.count {
            let b = self.addr as isize + i as isize * self.extent;
            for &(o, l) in self.runs {
                f((b + o) as usize, l);
            }
        }
    }
}

/// Runs `(offset, length)` of one element of a datatype.
pub type Runs = Vec<(isize, usize)>;

/// Encodes a request: header, runs, then `data`.
pub fn encode(h: &Hdr, runs: &[(isize, usize)], data: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR_LEN + 8 + runs.len() * 16 + data.iter().map(|d| d.len()).sum::<usize>());
    v.extend_from_slice(&h.kind.to_ne_bytes());
    v.extend_from_slice(&h.op.to_ne_bytes());
    v.extend_from_slice(&h.basic.to_ne_bytes());
    v.extend_from_slice(&h.reply.to_ne_bytes());
    v.extend_from_slice(&h.addr.to_ne_bytes());
    v.extend_from_slice(&h.count.to_ne_bytes());
    v.extend_from_slice(&h.extent.to_ne_bytes());
    v.extend_from_slice(&h.epoch.to_ne_bytes());
    v.extend_from_slice(&(runs.len() as u64).to_ne_bytes());
    for &(o, l) in runs {
        v.extend_from_slice(&(o as i64).to_ne_bytes());
        v.extend_from_slice(&(l as u64).to_ne_bytes());
    }
    for d in data {
        v.extend_from_slice(d);
    }
    v
}

/// The `N` bytes at `at` of `b`, if it is long enough.
pub(super) fn rd<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at + N).and_then(|s| s.try_into().ok())
}

/// Decodes a request: header, runs and the data that follows.
pub(super) fn decode(b: &[u8]) -> Option<(Hdr, Runs, &[u8])> {
    let u32_at = |at| rd::<4>(b, at).map(u32::from_ne_bytes);
    let i32_at = |at| rd::<4>(b, at).map(i32::from_ne_bytes);
    let u64_at = |at| rd::<8>(b, at).map(u64::from_ne_bytes);
    let h = Hdr {
        kind: u32_at(0)?,
        op: i32_at(4)?,
        basic: i32_at(8)?,
        reply: i32_at(12)?,
        addr: u64_at(16)?,
        count: u64_at(24)?,
        extent: u64_at(32)? as i64,
        epoch: u64_at(40)?,
    };
    let n = u64_at(HDR_LEN)? as usize;
    let mut runs = Vec::with_capacity(n.min(b.len() / 16));
    let mut at = HDR_LEN + 8;
    for _ in 0..n {
        runs.push((u64_at(at)? as i64 as isize, u64_at(at + 8)? as usize));
        at += 16;
    }
    Some((h, runs, b.get(at..)?))
}

/// Sends `data` as bytes to window rank `to` on tag `tag`; returns the
/// request, or `None` when it completed at once (eager: the data was copied).
///
/// # Safety
/// The caller keeps `data` unchanged until the returned request completes.
pub unsafe fn send_bytes(
    engine: &mut Engine,
    reqs: &mut ReqTable,
    w: &Win,
    to: usize,
    tag: i32,
    data: &[u8],
) -> Option<u32> {
    let i = reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
    let env = Wire { ctx: w.ctx, src: w.rank as i32, tag };
    // SAFETY: this function's contract.
    let send = unsafe { SendData::of_bytes(data, &w.bytes) };
    engine.start_send(reqs, i, send, w.group[to], env, Mode::Standard);
    if reqs.get(i).done {
        reqs.release(i);
        None
    } else {
        Some(i)
    }
}

/// Where a reply goes: `count` elements of `dt` at `addr` (the program's
/// buffer, or one of the library's).
pub struct ReplyBuf {
    pub addr: *mut u8,
    pub count: usize,
    pub dt: Arc<Dtype>,
}

/// Posts a receive of the reply on `tag` from window rank `from` into
/// `into`; returns the request.
pub fn post_reply(engine: &mut Engine, reqs: &mut ReqTable, w: &Win, from: usize, tag: i32, into: ReplyBuf) -> u32 {
    let cap = into.dt.packed_size(into.count);
    let op = RecvOp { buf: into.addr, dt: into.dt.into(), ctx: w.ctx, src: from as i32, tag, cap, stream: None };
    let i = reqs.alloc(Request::new(Kind::Recv(op), MPI_COMM_WORLD));
    engine.start_recv(reqs, i);
    i
}

/// Tag of the fence's count exchange (on `ctx + 1`; the window's other
/// collectives there use tags from `TAG_BASE` of `capi/agree.rs` on).
const TAG_FENCE: i32 = 1;

/// Starts one round of a fence: posts a receive of 16 bytes from every
/// other member into `bufs[r]` and sends each member `r` the operations
/// this process sent it by message and its total. Returns the receives.
pub fn fence_round(engine: &mut Engine, reqs: &mut ReqTable, w: &Win, bufs: &mut [[u8; 16]]) -> Vec<u32> {
    let total: u64 = w.sent.iter().sum();
    let mut ids = Vec::with_capacity(w.group.len());
    for (r, b) in bufs.iter_mut().enumerate().filter(|&(r, _)| r != w.rank) {
        let op = RecvOp {
            buf: b.as_mut_ptr(),
            dt: w.bytes.clone().into(),
            ctx: w.ctx + 1,
            src: r as i32,
            tag: TAG_FENCE,
            cap: 16,
            stream: None,
        };
        let i = reqs.alloc(Request::new(Kind::Recv(op), MPI_COMM_WORLD));
        engine.start_recv(reqs, i);
        ids.push(i);
    }
    for r in (0..w.group.len()).filter(|&r| r != w.rank) {
        let mut card = [0u8; 16];
        card[..8].copy_from_slice(&w.sent[r].to_ne_bytes());
        card[8..].copy_from_slice(&total.to_ne_bytes());
        let i = reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
        let env = Wire { ctx: w.ctx + 1, src: w.rank as i32, tag: TAG_FENCE };
        engine.start_send_vec(reqs, i, card.to_vec(), &w.bytes, w.group[r], env);
        ids.push(i);
    }
    ids
}

/// Sends request `msg` to `target` and tracks it until it has left.
pub fn send_request(st: &mut State, win: MPI_Win, target: usize, msg: Vec<u8>) -> MpiResult<()> {
    let State { wins, engine, reqs, .. } = st;
    let w = wins.get_mut(win)?;
    // SAFETY: `msg` is kept with the request in `w.pending` until it completes.
    if let Some(i) = unsafe { send_bytes(engine, reqs, w, target, TAG_REQ, &msg) } {
        let id = reqs.proto_id(i);
        w.pending.push(Pending { id, owned: true, keep: Some(msg), ack: false });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::win::kind;
    use crate::rt::win::target::decode_epoch;

    #[test]
    fn request_round_trip() {
        let h = Hdr {
            kind: kind::ACC,
            op: MPI_SUM,
            basic: MPI_INT,
            reply: 7,
            addr: 0x1000,
            count: 3,
            extent: -16,
            epoch: 9,
        };
        let runs = vec![(0isize, 4usize), (8, 4)];
        let msg = encode(&h, &runs, &[&[1, 2, 3], &[4]]);
        let (g, r, data) = decode(&msg).expect("decodes");
        assert_eq!(
            (g.kind, g.op, g.basic, g.reply, g.addr, g.count, g.extent, g.epoch),
            (kind::ACC, MPI_SUM, MPI_INT, 7, 0x1000, 3, -16, 9)
        );
        assert_eq!(r, runs);
        assert_eq!(data, &[1, 2, 3, 4]);
        assert_eq!(decode_epoch(&msg), 9);
        assert!(decode(&msg[..HDR_LEN + 4]).is_none(), "a truncated message must not decode");
    }

    #[test]
    fn span_of_strided_and_negative_extents() {
        let runs = [(4isize, 4usize), (12, 4)];
        let t = Target { addr: 0, count: 3, extent: 32, runs: &runs };
        assert_eq!(t.span(), (4, 64 + 16));
        let t = Target { addr: 0, count: 3, extent: -32, runs: &runs };
        assert_eq!(t.span(), (4 - 64, 16));
        let t = Target { addr: 0, count: 0, extent: 32, runs: &runs };
        assert_eq!(t.span(), (0, 0));
    }

    #[test]
    fn back_to_back_elements_are_one_run() {
        let mut seen = Vec::new();
        let one = [(0isize, 4usize)];
        let t = Target { addr: 1000, count: 3, extent: 4, runs: &one };
        t.each(|a, l| seen.push((a, l)));
        assert_eq!(seen, [(1000, 12)]);
        // With gaps between elements (a resized type), each element is its own run.
        seen.clear();
        let t = Target { addr: 1000, count: 3, extent: 8, runs: &one };
        t.each(|a, l| seen.push((a, l)));
        assert_eq!(seen, [(1000, 4), (1008, 4), (1016, 4)]);
    }
}
