//! Fault tolerance as MPICH offers it (ULFM, the `MPIX_Comm_*` calls):
//! revoking a communicator, agreeing over it, shrinking it, acknowledging
//! failures. The semantics are in `mpi-core/COMMUNICATORS.md`.
//!
//! Revocation is a control record (`kind::REVOKE`) on the point-to-point
//! engine, handled by its progress: any member revokes, and every other
//! member learns it without taking part, from each process that learned it
//! before (so it spreads even if the first one is gone). The engine then
//! keeps the communicator's context ids in [`FtState`]: its posted
//! receives end with `MPIX_ERR_REVOKED`, and every later send or receive on
//! those contexts, the library's internal ones included (collective
//! schedules, communicator constructions), fails at once. Blocking
//! shared-memory collectives look at the same state while they wait, and
//! nonblocking ones are ended by the collective progress hook.
//!
//! What must still work on a revoked communicator (`MPIX_Comm_agree`,
//! `MPIX_Comm_iagree`, `MPIX_Comm_shrink`) travels on its internal
//! context under tags of its own, from [`TAG_FT`], which revocation
//! spares.
//!
//! Process failures: by default a process that dies ends the job. With
//! failures tolerated ([`enabled`]: `MPICORE_ULFM=1`, which `mpirun
//! -disable-auto-cleanup` sets), dead ranks of this host and lost TCP peers
//! are marked failed ([`detect`]); the receives that wait for them end
//! ([`sweep`], run by the progress), sends to them and collectives with
//! them fail, and agree and shrink run over the survivors.

use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mpi_api::abi::*;

use super::agree::{View, TAG_BASE};
use super::comm::{ctx_key, Comm, CTX_SPAN_INTRA};
use super::ctxid::{agree_ctx, Agreement};
use super::error::{MpiError, MpiResult};
use super::p2p::{Kind, Request};
use super::{with, State};
use crate::bail;

/// First tag of the traffic a revoked communicator still carries (on its
/// internal context, above the constructors' tags and below those of
/// `MPI_Comm_create_group`).
pub const TAG_FT: i32 = TAG_BASE + 0x0800_0000;
const TAG_FT_END: i32 = TAG_FT + 0x0100_0000;
/// Tag groups (see [`View::fault_tolerant`]) of the agreement and of the
/// context-id rounds of a shrink.
const AGREE_TAGS: i32 = 1;
const SHRINK_TAGS: i32 = 2;
/// What a shrink's context-id agreement is made of (see `CtxKey`).
const SHRINK_KEY: u64 = u64::MAX - 1;

/// Whether this process ever saw a communicator revoked or a process
/// fail: the calls that check for them outside the engine look no further
/// in a process that did not.
static ANY_FAULT: AtomicBool = AtomicBool::new(false);

/// What the engine knows of revocations and failures.
#[derive(Default)]
pub struct FtState {
    /// Revoked communicators: their first context id and how many they use.
    revoked: Vec<(u32, u32)>,
    /// World ranks of the processes known to have failed (see the module's
    /// documentation).
    failed: Vec<usize>,
    /// The failures acknowledged on each communicator (by context id), as
    /// world ranks.
    acked: HashMap<u32, Vec<usize>>,
}

impl FtState {
    /// Whether traffic on context `ctx` with tag `tag` belongs to a revoked
    /// communicator (and is not what revocation spares).
    #[inline]
    pub fn revoked(&self, ctx: u32, tag: i32) -> bool {
        !self.revoked.is_empty()
            && !(TAG_FT..TAG_FT_END).contains(&tag)
            && self.revoked.iter().any(|&(b, s)| ctx >= b && ctx - b < s)
    }

    /// Records the revocation of contexts `base..base + span`; false if it
    /// was known.
    pub fn add_revoked(&mut self, base: u32, span: u32) -> bool {
        if self.revoked.iter().any(|&(b, _)| b == base) {
            return false;
        }
        self.revoked.push((base, span));
        ANY_FAULT.store(true, Ordering::Release);
        true
    }

    /// Whether communicator `c` is revoked.
    pub fn comm_revoked(&self, c: &Comm) -> bool {
        self.revoked(c.ctx, 0)
    }

    /// Whether world rank `w` is known to have failed.
    #[inline]
    pub fn is_failed(&self, w: usize) -> bool {
        !self.failed.is_empty() && self.failed.contains(&w)
    }

    /// The world ranks known to have failed.
    pub fn failed(&self) -> &[usize] {
        &self.failed
    }

    /// The error of a send on context `ctx` with tag `tag` to world rank
    /// `dest`, if it cannot go.
    #[inline]
    pub fn send_fails(&self, ctx: u32, tag: i32, dest: usize) -> Option<c_int> {
        if self.revoked(ctx, tag) {
            Some(MPIX_ERR_REVOKED)
        } else if self.is_failed(dest) {
            Some(MPIX_ERR_PROC_FAILED)
        } else {
            None
        }
    }

    /// Whether a member of `group` failed without the failure being
    /// acknowledged on the communicator of context `ctx`.
    fn unacknowledged(&self, ctx: u32, group: &[usize]) -> bool {
        let acked = self.acked.get(&ctx);
        group.iter().any(|&w| self.is_failed(w) && !acked.is_some_and(|a| a.contains(&w)))
    }
}

/// Whether process failures are tolerated (`MPICORE_ULFM=1`, which
/// `mpirun -disable-auto-cleanup` sets): a rank that dies is then marked
/// failed instead of ending the job.
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("MPICORE_ULFM").is_ok_and(|v| v == "1"))
}

/// Marks as failed the ranks of this host that died and the ranks whose
/// TCP connection was lost (with failures tolerated, see [`enabled`]).
pub fn detect(st: &mut State) {
    let lost = st.engine.tcp.as_mut().map(|t| std::mem::take(&mut t.lost_peers)).unwrap_or_default();
    let dead = st.engine.dead_local_peers().into_iter().map(|(w, _)| w);
    for w in dead.chain(lost) {
        if st.engine.ft.failed.contains(&w) {
            continue;
        }
        st.engine.ft.failed.push(w);
        ANY_FAULT.store(true, Ordering::Release);
    }
    if !st.engine.ft.failed.is_empty() {
        sweep(st);
    }
}

/// Ends the posted receives a failure concerns: from a failed process
/// (`MPIX_ERR_PROC_FAILED`), or from any source on a communicator with a
/// failure not acknowledged (`MPIX_ERR_PROC_FAILED_PENDING`). Run by the
/// progress once a failure is known (receives are posted on internal
/// contexts too, by the collectives and constructions).
pub fn sweep(st: &mut State) {
    // Each communicator's contexts and the group its sources name there.
    let mut spans: Vec<(u32, u32, Arc<Vec<usize>>, bool)> = Vec::new();
    for c in st.comms.all() {
        let pending = st.engine.ft.unacknowledged(c.ctx, c.group.as_slice());
        spans.push((c.ctx, 2, c.group.clone(), pending));
        if let Some(l) = &c.local {
            let pending = st.engine.ft.unacknowledged(c.ctx, l.as_slice());
            spans.push((c.ctx + 2, 1, l.clone(), pending));
        }
    }
    let ft = &st.engine.ft;
    let failed: Vec<usize> = ft.failed.clone();
    st.engine.fail_posted(&mut st.reqs, |ctx, src, _tag| {
        let (_, _, group, pending) = spans.iter().find(|(b, n, _, _)| ctx >= *b && ctx - b < *n)?;
        if src == MPI_ANY_SOURCE {
            return pending.then_some(MPIX_ERR_PROC_FAILED_PENDING);
        }
        let w = *group.get(usize::try_from(src).ok()?)?;
        failed.contains(&w).then_some(MPIX_ERR_PROC_FAILED)
    });
}

/// The error of a point-to-point operation with `peer` (a rank of `c`, or
/// `MPI_ANY_SOURCE` for a receive) on a revoked communicator or with a
/// failed process.
pub fn p2p_check(st: &State, c: &Comm, peer: c_int) -> MpiResult<()> {
    let ft = &st.engine.ft;
    if ft.comm_revoked(c) {
        return Err(revoked_error());
    }
    if ft.failed.is_empty() {
        return Ok(());
    }
    if peer == MPI_ANY_SOURCE {
        if ft.unacknowledged(c.ctx, c.group.as_slice()) {
            bail!(
                MPIX_ERR_PROC_FAILED_PENDING,
                "a process of the communicator failed (acknowledge it with MPIX_Comm_failure_ack)"
            );
        }
        return Ok(());
    }
    match usize::try_from(peer).ok().and_then(|p| c.group.get(p)) {
        Some(&w) if ft.is_failed(w) => Err(failed_error(peer)),
        _ => Ok(()),
    }
}

fn failed_error(rank: c_int) -> MpiError {
    MpiError::new(MPIX_ERR_PROC_FAILED, format!("process {rank} of the communicator failed"))
}

/// The error of a collective on `c`: revoked, or with a failed member.
fn comm_fault(st: &State, c: &Comm) -> Option<MpiError> {
    let ft = &st.engine.ft;
    if ft.comm_revoked(c) {
        return Some(revoked_error());
    }
    let failed = c.group.iter().chain(c.local.iter().flat_map(|l| l.iter())).position(|&w| ft.is_failed(w))?;
    Some(failed_error(failed as c_int))
}

/// The payload of a revocation record: the members' world ranks.
pub fn encode_members(members: &[usize]) -> Vec<u8> {
    members.iter().flat_map(|&m| (m as u32).to_le_bytes()).collect()
}

/// The members a revocation record names.
pub fn decode_members(payload: &[u8]) -> Vec<usize> {
    payload.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")) as usize).collect()
}

/// The error of an operation on a revoked communicator.
pub fn revoked_error() -> MpiError {
    MpiError::new(MPIX_ERR_REVOKED, "the communicator was revoked (MPIX_Comm_revoke)")
}

/// Fails with `MPIX_ERR_REVOKED` if `comm` is revoked, `MPIX_ERR_PROC_FAILED`
/// if a member failed (at no cost in a process that never saw either).
pub fn check(comm: MPI_Comm) -> MpiResult<()> {
    if !ANY_FAULT.load(Ordering::Acquire) {
        return Ok(());
    }
    with(|st| check_in(st, comm))
}

/// [`check`] under the lock (also `MPIX_ERR_PROC_FAILED` when a member
/// failed: for collectives and constructions).
pub fn check_in(st: &State, comm: MPI_Comm) -> MpiResult<()> {
    if !ANY_FAULT.load(Ordering::Acquire) {
        return Ok(());
    }
    match st.comms.get(comm).ok().and_then(|c| comm_fault(st, c)) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The error that ends a wait outside the engine (shared-memory
/// collectives) on collective context `ctx`: revoked, or a member failed.
pub fn ctx_fault(st: &State, ctx: u32) -> Option<MpiError> {
    if !ANY_FAULT.load(Ordering::Relaxed) {
        return None;
    }
    if st.engine.ft.revoked(ctx, 0) {
        return Some(revoked_error());
    }
    let c = st.comms.all().find(|c| c.coll_ctx() == ctx || c.local_ctx() == ctx)?;
    comm_fault(st, c)
}

/// Every process of `c` (both groups of an intercommunicator).
fn members(c: &Comm) -> Vec<usize> {
    let mut m: Vec<usize> = c.group.iter().chain(c.local.iter().flat_map(|l| l.iter())).copied().collect();
    m.sort_unstable();
    m.dedup();
    m
}

/// `MPIX_Comm_revoke`.
pub fn revoke(comm: MPI_Comm) -> MpiResult<()> {
    with(|st| {
        let c = st.comms.get(comm)?;
        let (base, span, members) = (c.ctx, c.ctx_span(), members(c));
        st.engine.revoke(&mut st.reqs, base, span, &members);
        st.progress();
        super::wake_waiters(st);
        Ok(())
    })
}

/// `MPIX_Comm_is_revoked`.
pub fn is_revoked(comm: MPI_Comm) -> MpiResult<bool> {
    with(|st| {
        st.progress();
        let c = st.comms.get(comm)?;
        Ok(st.engine.ft.comm_revoked(c))
    })
}

fn intra(st: &State, comm: MPI_Comm, what: &str) -> MpiResult<Comm> {
    let c = st.comms.get(comm)?;
    if c.is_inter() {
        bail!(MPI_ERR_COMM, "{what} on an intercommunicator is not supported");
    }
    Ok(c.clone())
}

/// The members of `c` not known to have failed, with the failures known
/// now (see [`detect`]), as a view of them on the tags revocation spares
/// (group `k`), their messages labelled with their ranks in `c`.
fn survivors(st: &mut State, c: &Comm, k: i32) -> MpiResult<(View, Vec<usize>)> {
    if enabled() {
        // What can be known now: ended connections read, the members on
        // other hosts never talked to dialed (a dead one refuses).
        st.engine.reach(c.group.as_slice());
        st.progress();
        detect(st);
    }
    let ft = &st.engine.ft;
    let (mut group, mut labels, mut me) = (Vec::new(), Vec::new(), 0);
    for (r, &w) in c.group.iter().enumerate() {
        if r == c.rank as usize {
            me = group.len();
        } else if ft.is_failed(w) {
            continue;
        }
        group.push(w);
        labels.push(r);
    }
    let v = View::new(st, c.local_ctx(), me, Arc::new(group.clone()))?.with_labels(Arc::new(labels));
    Ok((v.fault_tolerant(k), group))
}

/// The agreement over `comm` before it runs: the view it runs on, and
/// whether it must report an unacknowledged failure.
fn agreement(comm: MPI_Comm) -> MpiResult<(View, bool)> {
    with(|st| {
        let c = intra(st, comm, "MPIX_Comm_agree")?;
        let (v, _) = survivors(st, &c, AGREE_TAGS)?;
        Ok((v, st.engine.ft.unacknowledged(c.ctx, c.group.as_slice())))
    })
}

/// Runs an agreement: `flag` becomes the bitwise AND of every member's.
fn run_agreement(v: &View, unacked: bool, flag: &mut c_int) -> MpiResult<()> {
    *flag = v.allreduce_u32(*flag as u32, |a, b| a & b)? as c_int;
    if unacked {
        bail!(MPIX_ERR_PROC_FAILED, "a process of the communicator failed and the failure was not acknowledged");
    }
    Ok(())
}

/// `MPIX_Comm_agree`: `flag` becomes the bitwise AND of all members'.
pub fn agree(comm: MPI_Comm, flag: &mut c_int) -> MpiResult<()> {
    let (v, unacked) = agreement(comm)?;
    run_agreement(&v, unacked, flag)
}

/// `MPIX_Comm_iagree`: the agreement runs on a thread of its own, which
/// gives the result to `deliver` and then completes the request (its slot
/// is returned).
pub fn iagree(comm: MPI_Comm, flag: c_int, deliver: impl FnOnce(c_int) + Send + 'static) -> MpiResult<u32> {
    let (v, unacked) = agreement(comm)?;
    let req = with(|st| Ok(st.reqs.alloc(Request::new(Kind::Null, comm))))?;
    let active = super::Blocked::enter();
    let job = move || {
        super::library_thread();
        let _active = active;
        let mut f = flag;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_agreement(&v, unacked, &mut f)))
            .unwrap_or_else(|_| Err(MpiError::new(MPI_ERR_INTERN, "internal error (panic) in MPIX_Comm_iagree")));
        if r.as_ref().map_or_else(|e| e.class == MPIX_ERR_PROC_FAILED, |_| true) {
            deliver(f);
        }
        let _ = with(|st| {
            if let Err(e) = &r {
                st.reqs.get(req).err = e.class;
            }
            st.reqs.finish(req);
            super::wake_waiters(st);
            Ok(())
        });
    };
    super::switch_to_locking();
    if let Err(e) = std::thread::Builder::new().name("mpix-comm-iagree".into()).spawn(job) {
        with(|st| {
            st.reqs.release(req);
            Ok(())
        })?;
        bail!(MPI_ERR_INTERN, "cannot start the thread of MPIX_Comm_iagree: {e}");
    }
    Ok(req)
}

/// `MPIX_Comm_shrink`: a new communicator of the members not known to have
/// failed, in the same order, with the error handler of `comm`; works on a
/// revoked communicator.
pub fn shrink(comm: MPI_Comm) -> MpiResult<MPI_Comm> {
    let (a, key, c, survivors) = with(|st| {
        let c = intra(st, comm, "MPIX_Comm_shrink")?;
        let (local, survivors) = survivors(st, &c, SHRINK_TAGS)?;
        Ok((Agreement { local, leader: 0, peer: None, inter: false }, ctx_key(&c, SHRINK_KEY), c, survivors))
    })?;
    let ctx = agree_ctx(key, CTX_SPAN_INTRA, &a, false)?;
    let me = c.group[c.rank as usize];
    let rank = survivors.iter().position(|&w| w == me).expect("this process is alive") as i32;
    with(|st| Ok(st.comms.publish(Comm::intra(ctx, Arc::new(survivors), rank, c.errhandler))))
}

/// `MPIX_Comm_failure_ack`: the failures known now among the members of
/// `comm` are acknowledged on it.
pub fn failure_ack(comm: MPI_Comm) -> MpiResult<()> {
    with(|st| {
        let c = st.comms.get(comm)?;
        let failed: Vec<usize> = members(c).into_iter().filter(|&w| st.engine.ft.is_failed(w)).collect();
        let ctx = c.ctx;
        st.engine.ft.acked.insert(ctx, failed);
        Ok(())
    })
}

/// `MPIX_Comm_failure_get_acked`: the group of the failures acknowledged
/// on `comm` (`MPI_GROUP_EMPTY` when there are none).
pub fn failure_get_acked(comm: MPI_Comm) -> MpiResult<MPI_Group> {
    with(|st| {
        let ctx = st.comms.get(comm)?.ctx;
        let acked = st.engine.ft.acked.get(&ctx).cloned().unwrap_or_default();
        Ok(st.comms.groups.insert(Arc::new(acked)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revocation_covers_its_contexts_but_spares_the_fault_tolerant_tags() {
        let mut ft = FtState::default();
        assert!(!ft.revoked(8, 0));
        assert!(ft.add_revoked(8, 2));
        assert!(!ft.add_revoked(8, 2), "known already");
        for ctx in [8, 9] {
            assert!(ft.revoked(ctx, 0) && ft.revoked(ctx, TAG_BASE + 1) && ft.revoked(ctx, TAG_FT - 1));
            assert!(!ft.revoked(ctx, TAG_FT) && !ft.revoked(ctx, TAG_FT + 0x20 + 1));
            assert!(ft.revoked(ctx, TAG_FT_END));
        }
        assert!(!ft.revoked(7, 0) && !ft.revoked(10, 0));
        let c = Comm::intra(8, Arc::new(vec![0, 1]), 0, MPI_ERRORS_RETURN);
        assert!(ft.comm_revoked(&c));
        let other = Comm::intra(12, Arc::new(vec![0, 1]), 0, MPI_ERRORS_RETURN);
        assert!(!ft.comm_revoked(&other));
    }

    #[test]
    fn members_travel_as_world_ranks() {
        let m = vec![0, 3, 70000];
        assert_eq!(decode_members(&encode_members(&m)), m);
        let mut i = Comm::intra(8, Arc::new(vec![4, 2]), 0, MPI_ERRORS_RETURN);
        i.local = Some(Arc::new(vec![1, 2]));
        assert_eq!(members(&i), vec![1, 2, 4]);
    }
}
