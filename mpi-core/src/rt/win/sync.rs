//! Synchronization of RMA epochs: fences (a count exchange, or a barrier
//! in a shared segment), general active target (post, start, complete,
//! wait, test: messages), passive target (locks in shared lock words, or
//! messages to each target's lock manager; flushes), and the collective
//! end of a window.

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::create::u64_of;
use super::msg::{encode, fence_round, post_reply, send_request, Hdr, ReplyBuf};
use super::node::{barrier_arrive, barrier_done, rw_try_lock, rw_unlock};
use super::ops::wait_grant;
use super::{kind, Win};
use crate::bail;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::{self, State};

/// After [`wait_local`]: the first error a target acknowledged since the
/// last look.
fn acked_error(win: MPI_Win) -> MpiResult<()> {
    match rt::with(|st| Ok(st.wins.get_mut(win)?.ack_error.take()))? {
        Some(e) => Err(MpiError::new(e, "an operation failed at its target (outside the target's window memory?)")),
        None => Ok(()),
    }
}

/// Waits until every operation this process started on `win` is complete here.
fn wait_local(win: MPI_Win) -> MpiResult<()> {
    rt::block_on(|st| {
        let State { wins, reqs, .. } = st;
        match wins.get_mut(win) {
            Ok(w) => w.local_done(reqs).then_some(Ok(())),
            Err(e) => Some(Err(e)),
        }
    })?
}

/// The collective end of a fence epoch (and of the window): every process
/// learns how many operations were sent to it and waits until it has
/// applied them all.
fn settle(win: MPI_Win) -> MpiResult<()> {
    wait_local(win)?;
    // A window in one shared segment moves every operation in place (no
    // message to count or wait for): its fence is a barrier on the
    // counters next to its lock words.
    if rt::with(|st| Ok(st.wins.get(win)?.shm_locks.is_some()))? {
        let k = rt::with(|st| Ok(barrier_arrive(st.wins.get_mut(win)?)))?;
        return rt::block_on(|st| match st.wins.get(win) {
            Ok(w) => barrier_done(w, k).then_some(Ok(())),
            Err(e) => Some(Err(e)),
        })?;
    }
    let (expected, total) = fence_counts(win)?;
    let messages = rt::block_on(|st| match st.wins.get_mut(win) {
        Ok(w) => {
            w.expected = expected;
            (w.applied >= expected).then(|| Ok(std::mem::replace(&mut w.total_seen, total) != total))
        }
        Err(e) => Some(Err(e)),
    })??;
    // Operations that travelled as messages are applied by each target
    // when it gets to them; direct transfers of the next epoch (shared
    // memory, CMA) must not overtake them: all wait until all are applied.
    if messages {
        fence_counts(win)?;
    }
    Ok(())
}

/// One round of messages between all members of `win`: returns how many
/// operations were sent to this process by message, and how many by all
/// processes to all, since the window was made.
fn fence_counts(win: MPI_Win) -> MpiResult<(u64, u64)> {
    let n = rt::with(|st| Ok(st.wins.get(win)?.size_n()))?;
    let mut bufs = vec![[0u8; 16]; n];
    let (ids, me, own, total) = rt::with(|st| {
        let State { wins, engine, reqs, .. } = st;
        let w = wins.get(win)?;
        let ids = fence_round(engine, reqs, w, &mut bufs);
        Ok((ids, w.rank, w.sent[w.rank], w.sent.iter().sum::<u64>()))
    })?;
    rt::block_on(|st| {
        ids.iter().all(|&i| st.reqs.get(i).done).then(|| {
            for &i in &ids {
                st.reqs.release(i);
            }
        })
    })?;
    let others = bufs.iter().enumerate().filter(|&(r, _)| r != me);
    let expected = own + others.clone().map(|(_, b)| u64_of(&b[..8])).sum::<u64>();
    Ok((expected, total + others.map(|(_, b)| u64_of(&b[8..])).sum::<u64>()))
}

/// The first part of `MPI_Win_free`: checks that no epoch is open, ends
/// the last fence epoch at every member, and waits until the window's own
/// traffic is done. The caller then runs the attributes' delete callbacks
/// and removes the window.
pub fn quiesce_for_free(h: MPI_Win) -> MpiResult<()> {
    let idle = rt::with(|st| Ok(st.wins.get(h)?.idle()))?;
    if !idle {
        bail!(MPI_ERR_RMA_SYNC, "MPI_Win_free inside an access or exposure epoch (unlock, complete or wait first)");
    }
    settle(h)?;
    // Replies still leaving keep their own copies of the data, but
    // the window's requests must be gone before it is.
    rt::wait_until(|st| st.wins.get(h).map(|w| w.target_quiet()).unwrap_or(true))
}

/// Sends a control request (`LOCK`, `UNLOCK`, `FLUSH`) to each of
/// `targets` and waits for every reply; returns the first error a target
/// reported.
fn control(win: MPI_Win, targets: &[usize], k: u32, arg: c_int) -> MpiResult<()> {
    if targets.is_empty() {
        return Ok(());
    }
    let mut bufs = vec![[0u8; 4]; targets.len()];
    let ids = rt::with(|st| {
        let int = st.types.get(MPI_BYTE)?;
        let mut ids = Vec::with_capacity(targets.len());
        for (&t, b) in targets.iter().zip(bufs.iter_mut()) {
            let State { wins, engine, reqs, .. } = &mut *st;
            let w = wins.get_mut(win)?;
            let tag = w.tag();
            ids.push(post_reply(engine, reqs, w, t, tag, ReplyBuf { addr: b.as_mut_ptr(), count: 4, dt: int.clone() }));
            let msg = encode(&Hdr { kind: k, op: arg, reply: tag, ..Default::default() }, &[], &[]);
            send_request(st, win, t, msg)?;
        }
        Ok(ids)
    })?;
    rt::block_on(|st| {
        if ids.iter().all(|&i| st.reqs.get(i).done) {
            for &i in &ids {
                st.reqs.release(i);
            }
            Some(())
        } else {
            None
        }
    })?;
    match bufs.iter().map(|b| c_int::from_ne_bytes(*b)).find(|&e| e != MPI_SUCCESS) {
        Some(e) => Err(MpiError::new(e, "an operation failed at its target (outside the target's window memory?)")),
        None => Ok(()),
    }
}

/// Sends a message that needs no reply (`POST`, `COMPLETE`) to each of `targets`.
fn notify(win: MPI_Win, targets: &[usize], k: u32) -> MpiResult<()> {
    rt::with(|st| {
        for &t in targets {
            send_request(st, win, t, encode(&Hdr { kind: k, ..Default::default() }, &[], &[]))?;
        }
        Ok(())
    })
}

fn check_assert(assert: c_int) -> MpiResult<()> {
    let all = MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED;
    if assert & !all != 0 {
        bail!(MPI_ERR_ASSERT, "invalid assertion {assert:#x}");
    }
    Ok(())
}

/// `MPI_Win_fence`: ends the fence epoch (every operation of it complete
/// at its target) and opens the next unless `MPI_MODE_NOSUCCEED`.
pub fn fence(assert: c_int, win: MPI_Win) -> MpiResult<()> {
    check_assert(assert)?;
    let idle = rt::with(|st| Ok(st.wins.get(win)?.idle()))?;
    if !idle {
        bail!(MPI_ERR_RMA_SYNC, "MPI_Win_fence inside a PSCW or lock epoch");
    }
    // MPI_MODE_NOPRECEDE: nothing to complete. Still, operations of the
    // next epoch may reach a target only after it called the fence:
    // messages wait for that at the target, direct transfers cannot,
    // so a window with direct peers synchronizes all the same.
    let direct = rt::with(|st| {
        let w = st.wins.get(win)?;
        Ok(w.peers.iter().enumerate().any(|(t, p)| t != w.rank && (p.local.is_some() || p.pid != 0)))
    })?;
    if assert & MPI_MODE_NOPRECEDE == 0 || direct {
        settle(win)?;
    }
    rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        w.fence_open = assert & MPI_MODE_NOSUCCEED == 0;
        w.fences += 1;
        Ok(())
    })
}

/// Window ranks of the members of `group`.
fn ranks_of(st: &mut State, win: MPI_Win, group: MPI_Group) -> MpiResult<Vec<usize>> {
    let m = st.comms.groups.get(group)?;
    let w = st.wins.get(win)?;
    m.iter()
        .map(|&wr| {
            crate::rt::group::rank_of(&w.group, wr)
                .ok_or_else(|| MpiError::new(MPI_ERR_GROUP, "the group has a process outside the window"))
        })
        .collect()
}

/// `MPI_Win_post`: opens an exposure epoch to the origins of `group`.
pub fn post(group: MPI_Group, assert: c_int, win: MPI_Win) -> MpiResult<()> {
    check_assert(assert)?;
    let ranks = rt::with(|st| {
        let ranks = ranks_of(st, win, group)?;
        let w = st.wins.get_mut(win)?;
        if w.post.is_some() {
            bail!(MPI_ERR_RMA_SYNC, "MPI_Win_post while an exposure epoch is open");
        }
        w.post = Some(ranks.clone());
        Ok(ranks)
    })?;
    notify(win, &ranks, kind::POST)
}

/// `MPI_Win_start`: opens an access epoch to the targets of `group`
/// (operations wait for each target's post).
pub fn start(group: MPI_Group, assert: c_int, win: MPI_Win) -> MpiResult<()> {
    check_assert(assert)?;
    rt::with(|st| {
        let ranks = ranks_of(st, win, group)?;
        let w = st.wins.get_mut(win)?;
        if w.start.is_some() {
            bail!(MPI_ERR_RMA_SYNC, "MPI_Win_start while an access epoch is open");
        }
        w.granted.iter_mut().for_each(|g| *g = false);
        w.start = Some(ranks);
        Ok(())
    })
}

/// `MPI_Win_complete`: ends the access epoch once every operation is
/// complete here, and tells each target.
pub fn complete(win: MPI_Win) -> MpiResult<()> {
    let Some(ranks) = rt::with(|st| Ok(st.wins.get(win)?.start.clone()))? else {
        bail!(MPI_ERR_RMA_SYNC, "MPI_Win_complete without MPI_Win_start");
    };
    for &t in &ranks {
        wait_grant(win, t)?;
    }
    wait_local(win)?;
    notify(win, &ranks, kind::COMPLETE)?;
    rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        w.start = None;
        w.granted.iter_mut().for_each(|g| *g = false);
        Ok(())
    })
}

/// Ends the exposure epoch if every origin completed (`MPI_Win_test`/`wait`).
fn exposure_done(w: &mut Win) -> MpiResult<bool> {
    let Some(ranks) = &w.post else {
        bail!(MPI_ERR_RMA_SYNC, "no exposure epoch is open (call MPI_Win_post first)");
    };
    if ranks.iter().any(|&o| w.completes_from[o] == 0) {
        return Ok(false);
    }
    for &o in ranks {
        w.completes_from[o] -= 1;
    }
    w.post = None;
    Ok(true)
}

/// `MPI_Win_wait`: waits until every origin of the exposure epoch completed.
pub fn wait(win: MPI_Win) -> MpiResult<()> {
    rt::block_on(|st| match st.wins.get_mut(win).and_then(exposure_done) {
        Ok(true) => Some(Ok(())),
        Ok(false) => None,
        Err(e) => Some(Err(e)),
    })?
}

/// `MPI_Win_test`: whether the exposure epoch ended.
pub fn test(win: MPI_Win) -> MpiResult<bool> {
    rt::with(|st| {
        st.progress();
        exposure_done(st.wins.get_mut(win)?)
    })
}

/// The target of a passive-target call: `None` for `MPI_PROC_NULL`.
fn target_of(st: &State, win: MPI_Win, rank: c_int) -> MpiResult<Option<usize>> {
    let n = st.wins.get(win)?.size_n();
    match rank {
        MPI_PROC_NULL => Ok(None),
        r if r >= 0 && (r as usize) < n => Ok(Some(r as usize)),
        _ => bail!(MPI_ERR_RANK, "rank {rank} is not in the window's group of {n}"),
    }
}

/// Takes the passive-target lock of each of `targets`: in the lock words
/// of a window whose members share a host (waiting through `block_on`),
/// else from each target's lock manager (messages).
fn take_locks(win: MPI_Win, targets: &[usize], lock_type: c_int) -> MpiResult<()> {
    let Some(locks) = rt::with(|st| Ok(st.wins.get(win)?.acc_locks))? else {
        return control(win, targets, kind::LOCK, lock_type);
    };
    let excl = lock_type == MPI_LOCK_EXCLUSIVE;
    for &t in targets {
        rt::wait_until(|_| rw_try_lock(locks, t, excl))?;
    }
    Ok(())
}

/// Releases what [`take_locks`] took (after the operations completed).
fn release_locks(win: MPI_Win, targets: &[usize], lock_type: c_int) -> MpiResult<()> {
    let locks = rt::with(|st| {
        let w = st.wins.get(win)?;
        if let Some(locks) = w.acc_locks {
            for &t in targets {
                rw_unlock(w, locks, t, lock_type == MPI_LOCK_EXCLUSIVE);
            }
        }
        Ok(w.acc_locks)
    })?;
    match locks {
        Some(_) => finish_unlocked(win, targets),
        None => control(win, targets, kind::UNLOCK, lock_type),
    }
}

/// Marks a lock taken with `MPI_MODE_NOCHECK` (no lock at the target).
const NOCHECK_LOCK: c_int = 1 << 24;

/// The end of a `MPI_MODE_NOCHECK` lock on `targets`: a flush of those
/// that got operations by message.
fn finish_unlocked(win: MPI_Win, targets: &[usize]) -> MpiResult<()> {
    let todo = rt::with(|st| {
        let w = st.wins.get(win)?;
        Ok(targets.iter().copied().filter(|&t| w.sent[t] > w.flushed[t]).collect::<Vec<_>>())
    })?;
    control(win, &todo, kind::FLUSH, 0)
}

/// `MPI_Win_lock` of window rank `rank` (`MPI_PROC_NULL`: nothing).
pub fn lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) -> MpiResult<()> {
    check_assert(assert)?;
    if lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED {
        bail!(MPI_ERR_LOCKTYPE, "invalid lock type {lock_type}");
    }
    let Some(t) = rt::with(|st| target_of(st, win, rank))? else { return Ok(()) };
    rt::with(|st| {
        let w = st.wins.get(win)?;
        if w.locks[t].is_some() || w.lock_all {
            bail!(MPI_ERR_RMA_SYNC, "target {t} is already locked by this process");
        }
        no_active_access(w, "MPI_Win_lock")
    })?;
    // MPI_MODE_NOCHECK: no conflicting lock can exist, so none is taken.
    let nocheck = assert & MPI_MODE_NOCHECK != 0;
    if !nocheck {
        take_locks(win, &[t], lock_type)?;
    }
    rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        w.locks[t] = Some(if nocheck { lock_type | NOCHECK_LOCK } else { lock_type });
        w.flushed[t] = w.sent[t];
        w.fence_open = false;
        Ok(())
    })
}

/// A passive-target epoch (`name`) may not start inside a PSCW access
/// epoch: "distinct access epochs for win at the same process must be
/// disjoint" (MPI 3.1 11.5). A fence opens an access epoch only if
/// operations follow it before the next fence (11.5.1); the lock epoch
/// closes that possibility (`fence_open` is cleared once the lock is
/// taken): operations after the unlock would put the lock epoch inside the
/// fence's, so they fail with `MPI_ERR_RMA_SYNC` until the next fence (as
/// in MPICH; MPICH suite: errors/rma/win_sync_lock_at, _lock_fence).
fn no_active_access(w: &super::Win, name: &str) -> MpiResult<()> {
    if w.start.is_some() {
        bail!(MPI_ERR_RMA_SYNC, "{name} inside a PSCW access epoch (call MPI_Win_complete first)");
    }
    Ok(())
}

/// `MPI_Win_unlock`: completes the operations to `rank` there, then
/// releases its lock.
pub fn unlock(rank: c_int, win: MPI_Win) -> MpiResult<()> {
    let Some(t) = rt::with(|st| target_of(st, win, rank))? else { return Ok(()) };
    let Some(lt) = rt::with(|st| Ok(st.wins.get(win)?.locks[t]))? else {
        bail!(MPI_ERR_RMA_SYNC, "MPI_Win_unlock of target {t}, which this process has not locked");
    };
    wait_local(win)?;
    let r = if lt & NOCHECK_LOCK != 0 { finish_unlocked(win, &[t]) } else { release_locks(win, &[t], lt) };
    let r = r.and(acked_error(win));
    rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        w.locks[t] = None;
        w.flushed[t] = w.sent[t];
        Ok(())
    })?;
    r
}

/// `MPI_Win_lock_all`: a shared lock of every member.
pub fn lock_all(assert: c_int, win: MPI_Win) -> MpiResult<()> {
    check_assert(assert)?;
    let n = rt::with(|st| {
        let w = st.wins.get(win)?;
        if w.lock_all || w.locks.iter().any(Option::is_some) {
            bail!(MPI_ERR_RMA_SYNC, "MPI_Win_lock_all while this process holds a lock on the window");
        }
        no_active_access(w, "MPI_Win_lock_all")?;
        Ok(w.size_n())
    })?;
    let all: Vec<usize> = (0..n).collect();
    let nocheck = assert & MPI_MODE_NOCHECK != 0;
    if !nocheck {
        take_locks(win, &all, MPI_LOCK_SHARED)?;
    }
    rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        w.lock_all = true;
        w.lock_all_nocheck = nocheck;
        w.flushed = w.sent.clone();
        w.fence_open = false;
        Ok(())
    })
}

/// `MPI_Win_unlock_all`: completes every operation at its target, then
/// releases every lock.
pub fn unlock_all(win: MPI_Win) -> MpiResult<()> {
    let (on, n, nocheck) = rt::with(|st| {
        let w = st.wins.get(win)?;
        Ok((w.lock_all, w.size_n(), w.lock_all_nocheck))
    })?;
    if !on {
        bail!(MPI_ERR_RMA_SYNC, "MPI_Win_unlock_all without MPI_Win_lock_all");
    }
    wait_local(win)?;
    let all: Vec<usize> = (0..n).collect();
    let r = if nocheck { finish_unlocked(win, &all) } else { release_locks(win, &all, MPI_LOCK_SHARED) };
    let r = r.and(acked_error(win));
    rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        w.lock_all = false;
        w.flushed = w.sent.clone();
        Ok(())
    })?;
    r
}

/// Targets of a flush (`None`: all) that are in a passive epoch; checks
/// that the epoch exists.
fn flush_targets(win: MPI_Win, rank: Option<c_int>) -> MpiResult<Vec<usize>> {
    rt::with(|st| {
        let targets: Vec<usize> = match rank {
            Some(r) => target_of(st, win, r)?.into_iter().collect(),
            None => (0..st.wins.get(win)?.size_n()).collect(),
        };
        let w = st.wins.get(win)?;
        if rank.is_some() && targets.iter().any(|&t| !w.passive(t))
            || rank.is_none() && !w.lock_all && w.locks.iter().all(Option::is_none)
        {
            bail!(
                MPI_ERR_RMA_SYNC,
                "flush outside a passive-target epoch (call MPI_Win_lock or MPI_Win_lock_all first)"
            );
        }
        Ok(targets.into_iter().filter(|&t| w.passive(t)).collect())
    })
}

/// Completes the operations to `targets` here and, unless `local`, at the targets.
pub fn flush(win: MPI_Win, rank: Option<c_int>, local: bool) -> MpiResult<()> {
    // Nothing in flight and nothing sent since the last flush (direct
    // transfers complete at once): one look under the lock.
    let idle = rt::with(|st| {
        let State { wins, reqs, .. } = st;
        let w = wins.get_mut(win)?;
        let covered = match rank {
            Some(r) => usize::try_from(r)
                .ok()
                .filter(|&t| t < w.size_n())
                .is_some_and(|t| w.passive(t) && w.sent[t] == w.flushed[t]),
            None => w.lock_all && w.sent == w.flushed,
        };
        Ok(covered && w.local_done(reqs))
    })?;
    if idle {
        return acked_error(win);
    }
    let targets = flush_targets(win, rank)?;
    wait_local(win)?;
    acked_error(win)?;
    if local {
        return Ok(());
    }
    let todo = rt::with(|st| {
        let w = st.wins.get_mut(win)?;
        let todo: Vec<usize> = targets.into_iter().filter(|&t| w.sent[t] > w.flushed[t]).collect();
        for &t in &todo {
            w.flushed[t] = w.sent[t];
        }
        Ok(todo)
    })?;
    control(win, &todo, kind::FLUSH, 0)
}

/// `MPI_Win_sync`: a memory barrier, and progress.
pub fn sync(win: MPI_Win) -> MpiResult<()> {
    rt::with(|st| {
        st.wins.get(win)?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        st.progress();
        Ok(())
    })
}
