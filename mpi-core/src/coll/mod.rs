//! Collective operations (chapter 6 of MPI 4.1, "Collective Communication").
//!
//! Every collective call builds a [`sched::Sched`] with an algorithm of
//! [`algo`] chosen for the communicator size and message size, then runs it:
//! to completion for a blocking call, in the background (driven by every
//! progress call of the library) for a nonblocking one, from the top at each
//! `MPI_Start` for a persistent one. The messages of a collective travel on
//! the communicator's collective context with a tag unique to the operation
//! (calls are numbered per communicator, blocking and nonblocking ones
//! apart, and every rank makes the same calls of each kind in the same
//! order), so any number may be outstanding at once.
//!
//! While nonblocking collectives are active, a progress thread advances
//! them every few tens of microseconds, so they move on while the program
//! computes outside MPI (`MPICORE_ASYNC_PROGRESS=0` turns it off).
//!
//! Tuning (environment variables, read at `MPI_Init`; see mpi-core/COLLECTIVES.md):
//! `MPICORE_COLL_<NAME>=<algorithm>` forces an algorithm, and
//! `MPICORE_COLL_<NAME>_SHORT` etc. move the size thresholds.

pub mod algo;
pub(crate) mod args;
pub(crate) mod buf;
pub(crate) mod call;
pub(crate) mod entry;
pub mod flat;
pub(crate) mod inter;
pub(crate) mod neighbor;
pub mod parts;
pub mod sched;
pub(crate) mod shm;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use mpi_api::abi::*;

use crate::rt::error::MpiResult;
use crate::rt::op::UserOp;
use crate::rt::State;
use sched::Sched;

pub(crate) use algo::Tune;

/// A persistent collective's schedule, shared by its request and, while it
/// runs, by the list of active operations.
pub type SharedSched = Arc<Mutex<Sched>>;

enum Running {
    Owned(Box<Sched>),
    Shared(SharedSched),
    Flat(Box<flat::NbOp>),
}

struct Active {
    /// The request (None: an operation whose call failed on this rank,
    /// which still does its part so the other ranks are not stuck).
    req: Option<u32>,
    id: u64,
    sched: Running,
}

/// Hashes a context id with one multiplication (the maps below are looked
/// up in every collective call; SipHash cost more than the rest of a small
/// shared-memory collective's bookkeeping).
#[derive(Default)]
pub struct CtxHash(u64);

impl Hasher for CtxHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by context id.
pub type CtxMap<V> = HashMap<u32, V, BuildHasherDefault<CtxHash>>;

/// State of the collectives in the runtime (`State::coll`).
#[derive(Default)]
pub struct Colls {
    /// Next tag of each collective context, per lane (see [`flat::Lane`]).
    tags: CtxMap<[i32; 2]>,
    /// Nonblocking and started persistent operations.
    active: Vec<Active>,
    /// Temporary buffers for reuse (their pages stay mapped).
    pub(crate) pool: Vec<Vec<u8>>,
    /// User-defined operations by handle index.
    pub(crate) ops: Vec<Option<UserOp>>,
    pub(crate) tune: Tune,
    /// Shared-memory segments of communicators, by collective context.
    pub(crate) flat: CtxMap<flat::Entry>,
    /// Nonblocking operations that could run in shared memory, counted by
    /// collective context (see [`flat::nb_op`]).
    pub(crate) nb_ops: CtxMap<u64>,
    /// What blocking shared-memory collectives of this process wait for
    /// (see [`flat::Awaited`]), by a number of the wait.
    pub(crate) awaited: Vec<(u64, flat::Awaited)>,
    next_wait: u64,
    /// The operation of [`flat::guard`] a nonblocking call too large for its
    /// communicator's segment took, for the schedule the call makes next
    /// (which completes it before its first message).
    pub(crate) pending_guard: Option<flat::NbOp>,
    /// The bytes per rank of a persistent call too large for the segment,
    /// for the schedule the call makes next: each start takes the guard
    /// operation (see [`Sched::guard_bytes`]).
    pub(crate) pending_guard_bytes: Option<usize>,
}

/// At most this many bytes of idle temporary buffers are kept.
const POOL_BYTES: usize = 64 << 20;

impl Colls {
    /// The tag of the next schedule of lane `lane` on context `ctx`:
    /// blocking calls count in `0..2^29`, nonblocking and persistent ones
    /// in `2^29..2^30` (shared-memory operations' messages above, see
    /// `Flat::msg_tag`), so the two never take each other's messages.
    pub(crate) fn next_tag(&mut self, ctx: u32, lane: flat::Lane) -> i32 {
        let t = &mut self.tags.entry(ctx).or_insert([0; 2])[lane as usize];
        let tag = *t;
        *t = (*t + 1) & 0x1fff_ffff;
        tag | (lane as i32) << 29
    }

    pub(crate) fn give_back(&mut self, mut bufs: Vec<Vec<u8>>) {
        self.pool.append(&mut bufs);
        let mut total: usize = self.pool.iter().map(Vec::len).sum();
        // Keep the largest buffers, up to the limit.
        self.pool.sort_by_key(|v| std::cmp::Reverse(v.len()));
        while total > POOL_BYTES || self.pool.len() > 16 {
            match self.pool.pop() {
                Some(v) => total -= v.len(),
                None => break,
            }
        }
    }

    pub fn has_active(&self) -> bool {
        !self.active.is_empty()
    }

    /// Registers what a blocking shared-memory collective waits for; the
    /// number to [`Colls::unawait`] it with.
    pub(crate) fn await_words(&mut self, a: flat::Awaited) -> u64 {
        self.next_wait += 1;
        self.awaited.push((self.next_wait, a));
        self.next_wait
    }

    pub(crate) fn unawait(&mut self, id: u64) {
        self.awaited.retain(|(i, _)| *i != id);
    }
}

/// Progress of the nonblocking collectives: advances every active schedule
/// and completes the requests of finished ones. True if one completed.
pub(crate) fn progress(st: &mut State) -> bool {
    // (Every wait loop's round comes here: the idle case costs two loads.)
    if st.coll.awaited.is_empty() && st.coll.active.is_empty() {
        return false;
    }
    progress_some(st)
}

#[inline(never)]
fn progress_some(st: &mut State) -> bool {
    // A blocking shared-memory collective's words, written by another
    // rank, count as progress: the library's wait loop looks at its
    // progress last before it sleeps (after announcing the sleep, so a
    // writer that came before is seen here and one that comes after sees
    // the sleeper and wakes it); without this a write landing between the
    // waiter's last look and that announcement was missed until the
    // sleep's time-out (200 ms).
    if st.coll.awaited.iter().any(|(_, a)| a.ready()) {
        return true;
    }
    if st.coll.active.is_empty() {
        return false;
    }
    let mut active = std::mem::take(&mut st.coll.active);
    let mut did = false;
    active.retain_mut(|a| {
        // A request freed and reused meanwhile cannot happen (a freed active
        // request is released only by `finish` below), but be safe.
        if a.req.is_some_and(|r| st.reqs.try_get(r).is_none() || st.reqs.proto_id(r) != a.id) {
            return false;
        }
        // Its communicator was revoked, or a member failed: it ends with
        // that error.
        let fault = |st: &mut State, r: u32| {
            let comm = st.reqs.get(r).comm;
            crate::rt::ulfm::check_in(st, comm).err()
        };
        if let Some((r, e)) = a.req.and_then(|r| fault(st, r).map(|e| (r, e))) {
            complete(st, r, Err(e));
            did = true;
            return false;
        }
        let (done, res) = match &mut a.sched {
            Running::Flat(op) => {
                let before = op.has_published();
                let d = op.advance();
                // Publishing counts as progress too: a later blocking
                // operation of this rank may wait for its turn.
                did |= op.has_published() != before;
                (d, op.result())
            }
            Running::Owned(s) => {
                let d = s.advance(st);
                (d, s.result())
            }
            Running::Shared(s) => {
                let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
                let d = s.advance(st);
                (d, s.result())
            }
        };
        if done {
            if let Some(r) = a.req {
                complete(st, r, res);
            }
            did = true;
        }
        !done
    });
    // Operations started meanwhile (none today) go after the older ones.
    active.append(&mut st.coll.active);
    st.coll.active = active;
    did
}

fn complete(st: &mut State, i: u32, res: MpiResult<()>) {
    let r = st.reqs.get(i);
    if let Err(e) = res {
        r.err = e.class;
    }
    st.reqs.finish(i);
}

/// Starts a nonblocking collective: a request completing with schedule `s`.
pub(crate) fn start_nonblocking(st: &mut State, mut s: Sched) -> MPI_Request {
    let i = st.reqs.alloc(crate::rt::p2p::Request::new(crate::rt::p2p::Kind::Coll, s.comm));
    if s.advance(st) {
        complete(st, i, s.result());
    } else {
        let id = st.reqs.proto_id(i);
        st.coll.active.push(Active { req: Some(i), id, sched: Running::Owned(Box::new(s)) });
        kick(st);
    }
    crate::rt::p2p::ReqTable::handle(i)
}

/// Runs a leftover [`Colls::pending_guard`] in the background (its
/// operation number is taken: it must publish), so that no later schedule
/// takes it by mistake.
pub(crate) fn drop_pending_guard(st: &mut State) {
    if let Some(g) = st.coll.pending_guard.take() {
        start_flat(st, MPI_COMM_NULL, g, false);
    }
}

/// Starts a nonblocking collective in shared memory: a request completing
/// with `op` (None: the call failed on this rank; the operation still does
/// this rank's part, without a request).
pub(crate) fn start_flat(
    st: &mut State,
    comm: MPI_Comm,
    mut op: flat::NbOp,
    with_request: bool,
) -> Option<MPI_Request> {
    let req = with_request.then(|| st.reqs.alloc(crate::rt::p2p::Request::new(crate::rt::p2p::Kind::Coll, comm)));
    if op.advance() {
        if let Some(i) = req {
            complete(st, i, op.result());
        }
    } else {
        let id = req.map_or(0, |i| st.reqs.proto_id(i));
        st.coll.active.push(Active { req, id, sched: Running::Flat(Box::new(op)) });
        kick(st);
    }
    req.map(crate::rt::p2p::ReqTable::handle)
}

/// A persistent collective request (inactive) around schedule `s`.
pub(crate) fn persistent_request(st: &mut State, mut s: Sched) -> MPI_Request {
    s.persistent = true;
    let mut r = crate::rt::p2p::Request::new(crate::rt::p2p::Kind::Coll, s.comm);
    r.persist = Some(crate::rt::p2p::Persist::Coll(Arc::new(Mutex::new(s))));
    r.active = false;
    r.done = true;
    crate::rt::p2p::ReqTable::handle(st.reqs.alloc(r))
}

/// `MPI_Start` of persistent collective request `i` (already marked active).
pub(crate) fn start_persistent(st: &mut State, i: u32, s: SharedSched) -> MpiResult<()> {
    st.reqs.get(i).kind = crate::rt::p2p::Kind::Coll;
    // In shared memory if the communicator has its segment by now (every
    // rank starts its persistent collectives in the same order, so all
    // decide alike).
    let (comm, plan) = {
        let g = s.lock().unwrap_or_else(|e| e.into_inner());
        (g.comm, g.flat.as_ref().map(|(b, p)| (*b, p.clone_box())))
    };
    let in_segment = flat::nb_op(st, comm)?;
    if let Some((bytes, part)) = plan.filter(|_| in_segment) {
        if let flat::Lookup::Ready(f) = flat::lookup(st, comm, flat::Lane::Nb, bytes)? {
            let mut op = flat::NbOp::new(f, part);
            if op.advance() {
                complete(st, i, op.result());
            } else {
                let id = st.reqs.proto_id(i);
                st.coll.active.push(Active { req: Some(i), id, sched: Running::Flat(Box::new(op)) });
                kick(st);
            }
            return Ok(());
        }
    }
    let (done, res) = {
        let mut g = s.lock().unwrap_or_else(|e| e.into_inner());
        g.restart();
        if let Some(b) = g.guard_bytes.filter(|_| in_segment) {
            if let Some(f) = flat::guard(st, comm, flat::Lane::Nb, b)? {
                g.guard = Some(flat::NbOp::new(f, Box::new(parts::Guard(b))));
            }
        }
        let d = g.advance(st);
        (d, g.result())
    };
    if done {
        complete(st, i, res);
    } else {
        let id = st.reqs.proto_id(i);
        st.coll.active.push(Active { req: Some(i), id, sched: Running::Shared(s) });
        kick(st);
    }
    Ok(())
}

/// The progress thread, once started.
static PROGRESS: std::sync::OnceLock<Option<std::thread::Thread>> = std::sync::OnceLock::new();

/// Whether `MPICORE_ASYNC_PROGRESS` leaves the progress thread of the
/// nonblocking collectives on (`0`, `no`, `off` or `none` turn it off).
pub fn async_progress_requested() -> bool {
    !matches!(std::env::var("MPICORE_ASYNC_PROGRESS").as_deref(), Ok("0" | "no" | "off" | "none"))
}

/// Wakes (starting it the first time) the thread that advances active
/// nonblocking collectives while the program computes.
fn kick(st: &State) {
    let oversub = st.oversubscribed;
    let t = PROGRESS.get_or_init(|| {
        if !async_progress_requested() {
            return None;
        }
        crate::rt::switch_to_locking();
        std::thread::Builder::new()
            .name("mpi-coll-progress".into())
            .spawn(move || progress_thread(oversub))
            .ok()
            .map(|h| h.thread().clone())
    });
    if let Some(t) = t {
        t.unpark();
    }
}

/// Advances the active collectives now and then; sleeps (parked) while
/// there are none; ends when MPI is finalized.
fn progress_thread(oversub: bool) {
    // With more ranks than cores the thread steals time from ranks that
    // compute: look less often.
    let pause = std::time::Duration::from_micros(if oversub { 500 } else { 20 });
    loop {
        let busy = match crate::rt::lock().as_deref_mut() {
            None => return,
            Some(st) => {
                if st.coll.has_active() {
                    st.progress();
                }
                st.coll.has_active()
            }
        };
        if busy {
            std::thread::sleep(pause);
        } else {
            std::thread::park();
        }
    }
}
