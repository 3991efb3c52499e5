//! The origin side of the RMA operations (Put, Get, Accumulate,
//! Get_accumulate, Fetch_and_op, Compare_and_swap and their request
//! forms): checks against the window and the epoch, then the operation in
//! place where this process reaches the target's memory (its own part, a
//! shared segment, process_vm_readv/writev), else as a request message.

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::msg::{encode, post_reply, send_bytes, Hdr, ReplyBuf, Target, TAG_REQ};
use super::node::{cma, with_part_lock};
use super::target::apply;
use super::{kind, Pending};
use crate::bail;
use crate::rt::buf::UserBuf;
use crate::rt::datatype::Dtype;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::p2p::{Kind, ReqTable, Request};
use crate::rt::{self, State};

/// Where an operation goes: `count` elements of `datatype` at
/// displacement `disp` (in the target's displacement units) of window
/// rank `rank`.
#[derive(Clone, Copy)]
pub struct RmaTarget {
    pub rank: c_int,
    pub disp: MPI_Aint,
    pub count: MPI_Count,
    pub datatype: MPI_Datatype,
}

/// One RMA operation.
pub struct RmaOp {
    kind: u32,
    op: MPI_Op,
    origin: UserBuf,
    result: UserBuf,
    /// The compare value of `MPI_Compare_and_swap` (origin's count and type).
    compare: *const u8,
    target: RmaTarget,
}

impl RmaOp {
    pub fn put(origin: UserBuf, target: RmaTarget) -> RmaOp {
        RmaOp { kind: kind::PUT, op: MPI_REPLACE, origin, result: UserBuf::NONE, compare: std::ptr::null(), target }
    }
    pub fn get(origin: UserBuf, target: RmaTarget) -> RmaOp {
        RmaOp { kind: kind::GET, ..RmaOp::put(origin, target) }
    }
    pub fn accumulate(origin: UserBuf, target: RmaTarget, op: MPI_Op) -> RmaOp {
        RmaOp { kind: kind::ACC, op, ..RmaOp::put(origin, target) }
    }
    /// `MPI_Get_accumulate` (and `MPI_Fetch_and_op`).
    pub fn get_accumulate(origin: UserBuf, result: UserBuf, target: RmaTarget, op: MPI_Op) -> RmaOp {
        RmaOp { kind: kind::GACC, op, result, ..RmaOp::put(origin, target) }
    }
    pub fn compare_and_swap(origin: UserBuf, compare: UserBuf, result: UserBuf, target: RmaTarget) -> RmaOp {
        RmaOp {
            kind: kind::CAS,
            compare: compare.addr().cast(),
            ..RmaOp::get_accumulate(origin, result, target, MPI_REPLACE)
        }
    }
}

/// Checked datatypes and sizes of an operation.
struct Checked {
    /// The target's window rank.
    t: usize,
    odt: Arc<Dtype>,
    tdt: Arc<Dtype>,
    rdt: Option<Arc<Dtype>>,
    bytes: usize,
    basic: MPI_Datatype,
    /// Wait for the target's `MPI_Win_post` first.
    need_grant: bool,
}

fn count_of(c: MPI_Count, what: &str) -> MpiResult<usize> {
    usize::try_from(c).map_err(|_| MpiError::new(MPI_ERR_COUNT, format!("{what} {c} is negative")))
}

/// Validates operation `o` on `win` (`None`: the target is `MPI_PROC_NULL`).
fn check_op(st: &mut State, win: MPI_Win, o: &RmaOp) -> MpiResult<Option<Checked>> {
    let w = st.wins.get(win)?;
    if o.target.rank == MPI_PROC_NULL {
        return Ok(None);
    }
    let n = w.size_n();
    let t = match usize::try_from(o.target.rank) {
        Ok(t) if t < n => t,
        _ => bail!(MPI_ERR_RANK, "target rank {} is not in the window's group of {n}", o.target.rank),
    };
    if !w.may_access(t) {
        bail!(
            MPI_ERR_RMA_SYNC,
            "no access epoch covers target {t} (call MPI_Win_fence, MPI_Win_start or MPI_Win_lock first)"
        );
    }
    let dynamic = w.flavor == MPI_WIN_FLAVOR_DYNAMIC;
    if o.target.disp < 0 && !dynamic {
        bail!(MPI_ERR_DISP, "target displacement {} is negative", o.target.disp);
    }
    let peer = w.peers[t];
    let need_grant = !w.fence_open && !w.passive(t) && !w.granted[t];
    let ocount = count_of(o.origin.count, "origin count")?;
    let tcount = count_of(o.target.count, "target count")?;
    let tdt = st.types.get(o.target.datatype)?;
    let uses_origin = !(o.kind == kind::GET || o.kind == kind::GACC && o.op == MPI_NO_OP);
    let odt = if o.kind == kind::GACC && o.op == MPI_NO_OP { tdt.clone() } else { st.types.get(o.origin.datatype)? };
    let bytes = tdt.packed_size(tcount);
    if (uses_origin || o.kind == kind::GET) && odt.packed_size(ocount) != bytes {
        bail!(
            MPI_ERR_TYPE,
            "origin data ({} bytes) and target data ({bytes} bytes) differ in size",
            odt.packed_size(ocount)
        );
    }
    let rdt = if matches!(o.kind, kind::GACC | kind::CAS) {
        let rdt = st.types.get(o.result.datatype)?;
        let rcount = count_of(o.result.count, "result count")?;
        if rdt.packed_size(rcount) != bytes {
            bail!(
                MPI_ERR_TYPE,
                "result buffer ({} bytes) and target data ({bytes} bytes) differ in size",
                rdt.packed_size(rcount)
            );
        }
        Some(rdt)
    } else {
        None
    };
    let mut basic = MPI_DATATYPE_NULL;
    if matches!(o.kind, kind::ACC | kind::GACC | kind::CAS) {
        if !crate::rt::op::is_predefined(o.op) {
            bail!(MPI_ERR_OP, "one-sided accumulate operations take predefined operations only");
        }
        basic = match tdt.basic {
            Some(b) if !uses_origin || odt.basic == Some(b) => b,
            // No data (a zero count, or a zero-size derived type, which
            // has no basic type): there is nothing to combine, so this is a
            // no-op whatever the types are made of (as MPICH, which checks
            // nothing more of a zero-byte operation).
            _ if bytes == 0 => MPI_DATATYPE_NULL,
            _ => bail!(
                MPI_ERR_TYPE,
                "origin and target datatypes of an accumulate must be made of one and the same predefined type"
            ),
        };
        // An extension MPICH clients rely on (mpi4py's RMA tests): MPICH
        // accumulates MPI_BYTE as C's char (signed on x86-64: MAX of 200
        // and 6 is 6), so every integer operation applies (the standard
        // allows only the bitwise ones). The target computes with the type
        // sent in the header.
        if basic == MPI_BYTE {
            basic = MPI_SIGNED_CHAR;
        }
        if basic != MPI_DATATYPE_NULL && !matches!(o.op, MPI_REPLACE | MPI_NO_OP) {
            crate::rt::op::check(o.op, basic)?;
        }
        if o.kind == kind::CAS && !crate::rt::op::compare_and_swap_type(o.target.datatype) {
            bail!(
                MPI_ERR_TYPE,
                "MPI_Compare_and_swap takes a predefined integer, logical, multi-language or byte datatype"
            );
        }
    }
    if !dynamic && bytes > 0 {
        let (lo, hi) = if tdt.contig {
            (0, bytes as isize)
        } else {
            let runs = tdt.runs();
            Target { addr: 0, count: tcount, extent: tdt.extent, runs: &runs }.span()
        };
        let at = o.target.disp.saturating_mul(peer.disp_unit as i64) as isize;
        if at + lo < 0 || at + hi > peer.size as isize {
            bail!(
                MPI_ERR_RMA_RANGE,
                "the access [{}, {}) lies outside target {t}'s window of {} bytes",
                at + lo,
                at + hi,
                peer.size
            );
        }
    }
    Ok(Some(Checked { t, odt, tdt, rdt, bytes, basic, need_grant }))
}

/// A request that is already complete (for `MPI_Rput` and friends).
pub(super) fn done_request(reqs: &mut ReqTable) -> u32 {
    let i = reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
    reqs.finish(i);
    i
}

/// Waits for the `MPI_Win_post` of target `t` (PSCW access epoch).
pub(super) fn wait_grant(win: MPI_Win, t: usize) -> MpiResult<()> {
    rt::block_on(|st| match st.wins.get_mut(win) {
        Ok(w) if w.granted[t] => Some(Ok(())),
        Ok(w) if w.posts_from[t] > 0 => {
            w.posts_from[t] -= 1;
            w.granted[t] = true;
            Some(Ok(()))
        }
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })?
}

/// Starts one RMA operation; returns a request (its index in the request
/// table) for the `MPI_R*` forms (`want_req`).
pub fn start(win: MPI_Win, o: RmaOp, want_req: bool) -> MpiResult<Option<u32>> {
    // Usually one step under the lock; a PSCW epoch may first wait for the
    // target's post (without the lock).
    let first = rt::with(|st| match check_op(st, win, &o)? {
        None => Ok(Err(want_req.then(|| done_request(&mut st.reqs)))),
        Some(c) if c.need_grant => Ok(Ok(c)),
        Some(c) => start_checked(st, win, &o, &c, want_req).map(Err),
    })?;
    match first {
        Err(done) => Ok(done),
        Ok(c) => {
            wait_grant(win, c.t)?;
            rt::with(|st| start_checked(st, win, &o, &c, want_req))
        }
    }
}

/// The operation checked by [`check_op`], under the lock: in place where
/// the memory is reachable, else as a message. The buffers of `o` are
/// valid as `UserBuf::new` promised; the target ranges were checked
/// against the window (dynamic windows: by the target).
fn start_checked(st: &mut State, win: MPI_Win, o: &RmaOp, c: &Checked, want_req: bool) -> MpiResult<Option<u32>> {
    let State { wins, engine, reqs, .. } = st;
    let w = wins.get_mut(win)?;
    let peer = w.peers[c.t];
    let (ocount, tcount) = (o.origin.count as usize, o.target.count as usize);
    let origin: *mut u8 = o.origin.addr().cast();
    // Shared memory (and this process's own part): Put and Get are plain
    // copies; contiguous target data of a process on this host moves with
    // one process_vm_writev/readv.
    if matches!(o.kind, kind::PUT | kind::GET) && (peer.local.is_some() || peer.pid != 0 && w.cma_ok && c.tdt.contig) {
        let off = (o.target.disp * peer.disp_unit as i64) as isize;
        let mut tmp = Vec::new();
        let moved = match (peer.local, o.kind) {
            (Some(local), k) if c.odt.contig && c.tdt.contig => {
                let at = (local as isize + off) as *mut u8;
                // SAFETY: both sides hold `c.bytes` contiguous bytes: the
                // origin buffer by UserBuf's contract, the target range
                // checked against the window's memory in this process.
                unsafe {
                    if k == kind::PUT {
                        std::ptr::copy(origin, at, c.bytes);
                    } else {
                        std::ptr::copy(at, origin, c.bytes);
                    }
                }
                true
            }
            (Some(local), kind::PUT) => {
                tmp.resize(c.bytes, 0);
                // SAFETY: the origin holds `ocount` elements of its type
                // (UserBuf's contract); the target range lies in the window.
                unsafe {
                    c.odt.pack(origin, ocount, &mut tmp);
                    c.tdt.unpack(&tmp, (local as isize + off) as *mut u8);
                }
                true
            }
            (Some(local), _) => {
                tmp.resize(c.bytes, 0);
                // SAFETY: as above, the other way.
                unsafe {
                    c.tdt.pack((local as isize + off) as *const u8, tcount, &mut tmp);
                    c.odt.unpack(&tmp, origin);
                }
                true
            }
            (None, k) => {
                let write = k == kind::PUT;
                let buf = if c.odt.contig {
                    origin
                } else {
                    tmp.resize(c.bytes, 0);
                    if write {
                        // SAFETY: the origin holds `ocount` elements of its type.
                        unsafe { c.odt.pack(origin, ocount, &mut tmp) };
                    }
                    tmp.as_mut_ptr()
                };
                // SAFETY: `buf` holds the `c.bytes` packed bytes (the program's
                // contiguous buffer or our staging copy).
                let ok = unsafe { cma(peer.pid, (peer.base as isize + off) as usize, buf, c.bytes, write) }.is_ok();
                if ok && !write && !c.odt.contig {
                    // SAFETY: the origin holds `ocount` elements of its type.
                    unsafe { c.odt.unpack(&tmp, origin) };
                }
                if !ok {
                    w.cma_ok = false;
                }
                ok
            }
        };
        if moved {
            return Ok(want_req.then(|| done_request(reqs)));
        }
    }
    let runs = c.tdt.runs();
    let mut data = Vec::new();
    if matches!(o.kind, kind::PUT | kind::ACC | kind::CAS) || o.kind == kind::GACC && o.op != MPI_NO_OP {
        data = vec![0u8; c.bytes];
        // SAFETY: the origin holds `ocount` elements of its type (UserBuf's contract).
        unsafe { c.odt.pack(origin, ocount, &mut data) };
    }
    if o.kind == kind::CAS {
        let mut cmp = vec![0u8; c.bytes];
        // SAFETY: the compare buffer holds one element of the origin's type
        // (MPI_Compare_and_swap's contract).
        unsafe { c.odt.pack(o.compare, ocount, &mut cmp) };
        data.extend_from_slice(&cmp);
    }
    // Accumulates where the origin reaches the memory: in place (shared
    // segment, own part) or through CMA (contiguous target data of a
    // process on this host), under the target part's lock word.
    if let (Some(locks), kind::ACC | kind::GACC | kind::CAS) = (w.acc_locks, o.kind) {
        let off = (o.target.disp * peer.disp_unit as i64) as isize;
        let h = Hdr { kind: o.kind, op: o.op, basic: c.basic, ..Default::default() };
        let old = if let Some(local) = peer.local {
            let t = Target { addr: (local as isize + off) as usize, count: tcount, extent: c.tdt.extent, runs: &runs };
            Some(with_part_lock(locks, c.t, || apply(&h, &t, c.bytes, &data))?)
        } else if peer.pid != 0 && w.cma_ok && c.tdt.contig {
            let remote = (peer.base as isize + off) as usize;
            let (pid, bytes) = (peer.pid, c.bytes);
            let r = with_part_lock(locks, c.t, || -> MpiResult<Option<Option<Vec<u8>>>> {
                let mut cur = vec![0u8; bytes];
                // SAFETY: `cur` holds `bytes` bytes.
                if unsafe { cma(pid, remote, cur.as_mut_ptr(), bytes, false) }.is_err() {
                    return Ok(None);
                }
                let one = [(0isize, bytes)];
                let t = Target { addr: cur.as_mut_ptr() as usize, count: 1, extent: bytes as isize, runs: &one };
                let old = apply(&h, &t, bytes, &data)?;
                // SAFETY: as above; the kernel let us read this range, so writes succeed too.
                if unsafe { cma(pid, remote, cur.as_mut_ptr(), bytes, true) }.is_err() {
                    bail!(MPI_ERR_INTERN, "process_vm_writev to rank {} failed after a read succeeded", c.t);
                }
                Ok(Some(old))
            })?;
            if r.is_none() {
                w.cma_ok = false;
            }
            r
        } else {
            None
        };
        if let Some(old) = old {
            if let (Some(old), Some(rdt)) = (old, &c.rdt) {
                // SAFETY: the result buffer holds its count of elements of
                // its type (UserBuf's contract), as many bytes as `old`.
                unsafe { rdt.unpack(&old, o.result.addr().cast()) };
            }
            return Ok(want_req.then(|| done_request(reqs)));
        }
    }
    let addr = (peer.base as i64).wrapping_add(o.target.disp.wrapping_mul(peer.disp_unit as i64)) as u64;
    let mut user = None;
    let mut reply = 0;
    if matches!(o.kind, kind::GET | kind::GACC | kind::CAS) {
        reply = w.tag();
        let into = match o.kind {
            kind::GET => ReplyBuf { addr: origin, count: ocount, dt: c.odt.clone() },
            _ => ReplyBuf {
                addr: o.result.addr().cast(),
                count: o.result.count as usize,
                dt: c.rdt.clone().expect("result type checked"),
            },
        };
        let ri = post_reply(engine, reqs, w, c.t, reply, into);
        w.pending.push(Pending { id: reqs.proto_id(ri), owned: !want_req, keep: None, ack: false });
        if want_req {
            user = Some(ri);
        }
    }
    // In a passive-target epoch every operation by message is answered
    // (data, or an acknowledgement for Put and Accumulate), so its reply
    // tells that it is complete at the target: a flush then only waits for
    // the replies and sends nothing.
    let passive = w.passive(c.t);
    if passive && reply == 0 {
        reply = w.tag();
        let mut code = vec![0u8; 4];
        let into = ReplyBuf { addr: code.as_mut_ptr(), count: 4, dt: w.bytes_type() };
        let ri = post_reply(engine, reqs, w, c.t, reply, into);
        w.pending.push(Pending { id: reqs.proto_id(ri), owned: true, keep: Some(code), ack: true });
    }
    let epoch = if w.fence_open && !passive && w.start.is_none() { w.fences } else { 0 };
    let h = Hdr {
        kind: o.kind,
        op: o.op,
        basic: c.basic,
        reply,
        addr,
        count: tcount as u64,
        extent: c.tdt.extent as i64,
        epoch,
    };
    let msg = encode(&h, &runs, &[&data]);
    w.sent[c.t] += 1;
    if passive {
        w.flushed[c.t] += 1;
    }
    // SAFETY: `msg` is kept with the request until it completes: by the
    // program's request (a compound) or in `w.pending`.
    match unsafe { send_bytes(engine, reqs, w, c.t, TAG_REQ, &msg) } {
        None => {}
        Some(si) if want_req && user.is_none() => {
            // The program's request completes with the send; it keeps the message.
            w.pending.push(Pending { id: reqs.proto_id(si), owned: false, keep: None, ack: false });
            let ui = reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
            reqs.make_compound(ui, vec![si], Some(msg));
            user = Some(ui);
        }
        Some(si) => w.pending.push(Pending { id: reqs.proto_id(si), owned: true, keep: Some(msg), ack: false }),
    }
    if want_req && user.is_none() {
        user = Some(done_request(reqs));
    }
    Ok(user)
}
