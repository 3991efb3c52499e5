//! The target side: the progress hook receives the request messages of
//! every window and applies them in order per origin, under the state
//! lock; the lock manager of this process's part.

use mpi_api::abi::*;

use super::msg::{decode, rd, send_bytes, Hdr, Target, TAG_REQ};
use super::node::{barrier_done, with_part_lock};
use super::{kind, Incoming, Win};
use crate::bail;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::p2p::{Engine, Kind, RecvOp, ReqTable, Request};
use crate::rt::State;

/// The progress hook: receives request messages of every window and
/// applies those complete, in order. True if anything happened.
pub fn progress(st: &mut State) -> bool {
    // (Every wait loop's round comes here: the idle case costs a load.)
    if st.wins.slots.is_empty() {
        return false;
    }
    progress_some(st)
}

#[inline(never)]
fn progress_some(st: &mut State) -> bool {
    let State { wins, engine, reqs, .. } = st;
    let mut did = false;
    for w in wins.slots.iter_mut().flatten() {
        if w.shm_locks.is_some() {
            // (A barrier that completed counts as progress, so a waiter
            // about to sleep looks again instead.)
            if w.barriers > w.barrier_seen && barrier_done(w, w.barriers) {
                w.barrier_seen = w.barriers;
                did = true;
            }
        }
        while let Some((m, status)) = engine.mprobe(w.ctx, MPI_ANY_SOURCE, TAG_REQ) {
            let n = status.byte_count() as usize;
            let mut buf = vec![0u8; n];
            let op = RecvOp {
                buf: buf.as_mut_ptr(),
                dt: w.bytes.clone().into(),
                ctx: w.ctx,
                src: MPI_ANY_SOURCE,
                tag: TAG_REQ,
                cap: n,
                stream: None,
            };
            let ri = reqs.alloc(Request::new(Kind::Recv(op), MPI_COMM_WORLD));
            if engine.mrecv(reqs, ri, m).is_err() {
                reqs.release(ri);
                break;
            }
            w.incoming.push_back(Incoming { req: ri, buf, src: status.MPI_SOURCE as usize });
            did = true;
        }
        did |= apply_ready(w, engine, reqs);
        w.replies.retain(|&(i, _)| {
            if reqs.get(i).done {
                reqs.release(i);
                false
            } else {
                true
            }
        });
    }
    did
}

/// Applies the received request messages that may be applied now: in
/// order per origin (an origin's message waits while an earlier one of it
/// still waits for its data or for its fence epoch), in any order between
/// origins. True if any was applied.
fn apply_ready(w: &mut Win, engine: &mut Engine, reqs: &mut ReqTable) -> bool {
    let mut did = false;
    let mut blocked: Vec<usize> = Vec::new();
    let mut k = 0;
    while k < w.incoming.len() {
        let f = &w.incoming[k];
        if blocked.contains(&f.src) {
            k += 1;
            continue;
        }
        let ready = reqs.get(f.req).done && decode_epoch(&f.buf) <= w.fences;
        if !ready {
            blocked.push(f.src);
            k += 1;
            continue;
        }
        let f = w.incoming.remove(k).expect("entry exists");
        reqs.release(f.req);
        handle(w, engine, reqs, f.src, &f.buf);
        did = true;
    }
    did
}

/// The fence epoch of a received request (0 if too short to say).
pub(super) fn decode_epoch(b: &[u8]) -> u64 {
    rd::<8>(b, 40).map(u64::from_ne_bytes).unwrap_or(0)
}

/// Sends a reply from the target and keeps its data until it has left.
fn reply(w: &mut Win, engine: &mut Engine, reqs: &mut ReqTable, to: usize, tag: i32, data: Vec<u8>) {
    // SAFETY: `data` is kept with the request in `w.replies` until it completes.
    if let Some(i) = unsafe { send_bytes(engine, reqs, w, to, tag, &data) } {
        w.replies.push((i, data));
    }
}

/// Whether `[lo, hi)` lies in this process's memory of the window.
fn in_window(w: &Win, lo: usize, hi: usize) -> bool {
    if w.flavor == MPI_WIN_FLAVOR_DYNAMIC {
        return covered(&w.attached, lo, hi);
    }
    lo >= w.base && hi <= w.base + w.size
}

/// Is `[lo, hi)` covered by the union of `regions` (base, size)? An access
/// may span regions attached back to back, as one buffer attached in parts.
fn covered(regions: &[(usize, usize)], lo: usize, hi: usize) -> bool {
    let mut at = lo;
    while at < hi {
        match regions.iter().find(|&&(b, s)| b <= at && at < b + s) {
            Some(&(b, s)) => at = b + s,
            None => return false,
        }
    }
    true
}

/// Applies one request message from window rank `src`.
fn handle(w: &mut Win, engine: &mut Engine, reqs: &mut ReqTable, src: usize, msg: &[u8]) {
    let Some((h, runs, data)) = decode(msg) else {
        w.errors[src] = MPI_ERR_INTERN;
        return;
    };
    let t = Target { addr: h.addr as usize, count: h.count as usize, extent: h.extent as isize, runs: &runs };
    match h.kind {
        kind::LOCK => {
            let excl = h.op == MPI_LOCK_EXCLUSIVE;
            w.lk_queue.push_back((src, excl, h.reply));
            grant_locks(w, engine, reqs);
        }
        kind::UNLOCK => {
            if h.op == MPI_LOCK_EXCLUSIVE {
                w.lk_excl = false;
            } else {
                w.lk_shared = w.lk_shared.saturating_sub(1);
            }
            let e = std::mem::replace(&mut w.errors[src], MPI_SUCCESS);
            reply(w, engine, reqs, src, h.reply, e.to_ne_bytes().to_vec());
            grant_locks(w, engine, reqs);
        }
        kind::FLUSH => {
            let e = std::mem::replace(&mut w.errors[src], MPI_SUCCESS);
            reply(w, engine, reqs, src, h.reply, e.to_ne_bytes().to_vec());
        }
        kind::POST => w.posts_from[src] += 1,
        kind::COMPLETE => w.completes_from[src] += 1,
        _ => {
            w.applied += 1;
            let (lo, hi) = t.span();
            let bytes: usize = runs.iter().map(|r| r.1).sum::<usize>() * t.count;
            let lo = t.addr as isize + lo;
            let hi = t.addr as isize + hi;
            let ok = bytes == 0 || lo < hi && lo >= 0 && in_window(w, lo as usize, hi as usize);
            let res = match (ok, w.acc_locks) {
                (false, _) => Err(MpiError::new(MPI_ERR_RMA_RANGE, "outside the window")),
                // Other processes may apply accumulates to this part too.
                (true, Some(locks)) if matches!(h.kind, kind::ACC | kind::GACC | kind::CAS) => {
                    with_part_lock(locks, w.rank, || apply(&h, &t, bytes, data))
                }
                (true, _) => apply(&h, &t, bytes, data),
            };
            let acked = h.reply != 0 && matches!(h.kind, kind::PUT | kind::ACC);
            if acked {
                // An acknowledgement: the operation's error code.
                let code = res.as_ref().err().map_or(MPI_SUCCESS, |e| e.class);
                reply(w, engine, reqs, src, h.reply, code.to_ne_bytes().to_vec());
                return;
            }
            let out = match res {
                Ok(out) => out,
                Err(e) => {
                    w.errors[src] = e.class;
                    None
                }
            };
            if h.reply != 0 {
                // A failed operation still answers (with zeros), so the
                // origin never waits forever.
                let n = match h.kind {
                    kind::CAS => data.len() / 2,
                    _ => bytes,
                };
                reply(w, engine, reqs, src, h.reply, out.unwrap_or_else(|| vec![0u8; n]));
            }
        }
    }
}

/// Grants queued locks, in order, while they are compatible.
fn grant_locks(w: &mut Win, engine: &mut Engine, reqs: &mut ReqTable) {
    while let Some(&(src, excl, tag)) = w.lk_queue.front() {
        let free = if excl { !w.lk_excl && w.lk_shared == 0 } else { !w.lk_excl };
        if !free {
            break;
        }
        w.lk_queue.pop_front();
        if excl {
            w.lk_excl = true;
        } else {
            w.lk_shared += 1;
        }
        reply(w, engine, reqs, src, tag, MPI_SUCCESS.to_ne_bytes().to_vec());
    }
}

/// Applies a data operation to memory; returns the old contents when the
/// origin asked for them. The runs of `t` must lie in memory of the window.
pub fn apply(h: &Hdr, t: &Target, bytes: usize, data: &[u8]) -> MpiResult<Option<Vec<u8>>> {
    let need = match h.kind {
        kind::GACC if h.op == MPI_NO_OP => 0,
        kind::PUT | kind::ACC | kind::GACC => bytes,
        kind::CAS => 2 * bytes,
        _ => 0,
    };
    if data.len() < need {
        bail!(MPI_ERR_INTERN, "short RMA message: {} bytes of data for {need}", data.len());
    }
    let old = if matches!(h.kind, kind::GET | kind::GACC | kind::CAS) {
        let mut v = Vec::with_capacity(bytes);
        // SAFETY: the runs lie in the window (checked by the caller).
        t.each(|a, l| v.extend_from_slice(unsafe { std::slice::from_raw_parts(a as *const u8, l) }));
        Some(v)
    } else {
        None
    };
    let mut at = 0;
    let mut res = Ok(());
    match h.kind {
        kind::PUT => t.each(|a, l| {
            // SAFETY: as above; the data holds `bytes` bytes.
            unsafe { std::ptr::copy(data.as_ptr().add(at), a as *mut u8, l) };
            at += l;
        }),
        kind::GACC if h.op == MPI_NO_OP => {}
        kind::ACC | kind::GACC => t.each(|a, l| {
            // SAFETY: as above; the window memory does not alias the message.
            let dst = unsafe { std::slice::from_raw_parts_mut(a as *mut u8, l) };
            // An empty run (a zero-size type) has nothing to combine, and
            // no basic type to combine it with.
            if res.is_ok() && l > 0 {
                res = crate::rt::op::apply_dir(h.op, h.basic, &data[at..at + l], dst, false);
            }
            at += l;
        }),
        kind::CAS => {
            let (new, cmp) = data.split_at(bytes);
            if old.as_deref() == Some(&cmp[..bytes]) {
                t.each(|a, l| {
                    // SAFETY: as above.
                    unsafe { std::ptr::copy(new.as_ptr().add(at), a as *mut u8, l) };
                    at += l;
                });
            }
        }
        _ => {}
    }
    res?;
    Ok(old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::win::kind;
    use crate::rt::win::msg::{Hdr, Target};

    #[test]
    fn apply_accumulate_and_compare_and_swap() {
        let mut mem = [1i32, 2, 3, 4];
        let runs = [(0isize, 4usize), (8, 4)];
        let t = Target { addr: mem.as_mut_ptr() as usize, count: 1, extent: 12, runs: &runs };
        let data: Vec<u8> = [10i32, 30].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let h = Hdr { kind: kind::GACC, op: MPI_SUM, basic: MPI_INT, ..Default::default() };
        let old = apply(&h, &t, 8, &data).unwrap().unwrap();
        assert_eq!(old, [1i32, 3].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
        assert_eq!(mem, [11, 2, 33, 4]);
        // Compare-and-swap of one int: swaps only when the compare value matches.
        let one = [(0isize, 4usize)];
        let t = Target { addr: mem.as_mut_ptr() as usize + 4, count: 1, extent: 4, runs: &one };
        let h = Hdr { kind: kind::CAS, op: MPI_REPLACE, basic: MPI_INT, ..Default::default() };
        let mut cas: Vec<u8> = 99i32.to_ne_bytes().to_vec();
        cas.extend_from_slice(&5i32.to_ne_bytes());
        assert_eq!(apply(&h, &t, 4, &cas).unwrap().unwrap(), 2i32.to_ne_bytes());
        assert_eq!(mem[1], 2, "compare value 5 differs from 2: no swap");
        cas[4..].copy_from_slice(&2i32.to_ne_bytes());
        apply(&h, &t, 4, &cas).unwrap();
        assert_eq!(mem[1], 99);
        // An operation the type does not support is refused.
        let h = Hdr { kind: kind::ACC, op: MPI_MAXLOC, basic: MPI_INT, ..Default::default() };
        assert_eq!(apply(&h, &t, 4, &cas[..4]).unwrap_err().class, MPI_ERR_OP);
    }

    #[test]
    fn accesses_may_span_adjacent_regions() {
        let r = [(100, 50), (150, 50), (300, 10)];
        assert!(covered(&r, 100, 150));
        assert!(covered(&r, 120, 180), "across the seam of two regions");
        assert!(covered(&r, 100, 200));
        assert!(!covered(&r, 190, 210), "past the second region's end");
        assert!(!covered(&r, 195, 305), "over the gap");
        assert!(covered(&r, 300, 310));
        assert!(!covered(&r, 90, 110), "before the first region");
    }
}
