//! Schedules: a collective operation as a list of actions run by one rank.
//!
//! An algorithm appends sends, receives and local steps (copy, reduce, pack,
//! unpack) to a [`Sched`]; a [`Act::Fence`] makes the actions after it wait
//! until every send and receive posted before it has completed. The same
//! schedule runs a blocking call (driven by the caller's wait loop), a
//! nonblocking one (driven by every progress call of the library) and a
//! persistent one (run again from the top by each `MPI_Start`).
//!
//! All data in a schedule is packed bytes. Pointers are raw: user buffers
//! (valid for the duration of the operation, as the standard requires) and
//! temporary buffers owned by the schedule, whose heap blocks never move.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use mpi_api::abi::*;

use super::flat::Lane;
use crate::rt::buf::SendData;
use crate::rt::datatype::Dtype;
use crate::rt::error::{MpiError, MpiResult};
use crate::rt::op::{self, UserOp};
use crate::rt::p2p::{Kind, Mode, RecvOp, Request, Wire};
use crate::rt::State;

/// Where a schedule step reads or writes packed bytes: a contiguous user
/// buffer itself, or a temporary of the schedule that holds the packed
/// form of a user buffer.
pub type Packed = *mut u8;

/// How a reduction combines two packed buffers.
#[derive(Clone)]
pub enum Reducer {
    /// A predefined operation on the predefined type the data is made of.
    Builtin { op: MPI_Op, basic: MPI_Datatype },
    /// A user function, called on elements of the user's datatype.
    User { f: UserOp, handle: MPI_Datatype, dt: Arc<Dtype> },
}

impl Reducer {
    pub fn commutative(&self) -> bool {
        match self {
            Reducer::Builtin { .. } => true,
            Reducer::User { f, .. } => f.commute,
        }
    }

    /// Bytes of the smallest piece a reduction may be split into.
    pub fn unit(&self) -> usize {
        match self {
            Reducer::Builtin { basic, .. } => op::unit_size(*basic),
            Reducer::User { dt, .. } => dt.size.max(1),
        }
    }

    /// `dst = src op dst`, or `dst = dst op src` when `rev`.
    ///
    /// # Safety
    /// `src` and `dst` address `n` packed bytes each and do not overlap.
    pub unsafe fn apply(&self, src: Packed, dst: Packed, n: usize, rev: bool) -> MpiResult<()> {
        if n == 0 {
            return Ok(());
        }
        match self {
            Reducer::Builtin { op, basic } => {
                // SAFETY: `src` addresses `n` bytes (this function's contract).
                let a = unsafe { std::slice::from_raw_parts(src as *const u8, n) };
                // SAFETY: `dst` addresses `n` bytes, not overlapping `src`
                // (the contract), so no other reference to them exists.
                let b = unsafe { std::slice::from_raw_parts_mut(dst, n) };
                op::apply_dir(*op, *basic, a, b, rev)
            }
            Reducer::User { f, handle, dt } => {
                crate::rt::entering_user_code();
                let count = n / dt.size.max(1);
                if dt.contig {
                    if rev {
                        // SAFETY: `src` addresses `n` bytes (this function's contract).
                        let mut tmp = unsafe { std::slice::from_raw_parts(src as *const u8, n) }.to_vec();
                        // SAFETY: contiguous, so `dst` and `tmp` (`n` bytes each)
                        // hold `count` elements of the type; `f` was registered.
                        unsafe { f.call(dst, tmp.as_mut_ptr(), count, *handle, dt.extent) };
                        // SAFETY: `tmp` and `dst` are `n` bytes each, `tmp` ours.
                        unsafe { std::ptr::copy_nonoverlapping(tmp.as_ptr(), dst, n) };
                    } else {
                        // SAFETY: contiguous, so `src` and `dst` (`n` bytes each,
                        // the contract) hold `count` elements of the type.
                        unsafe { f.call(src, dst, count, *handle, dt.extent) };
                    }
                    return Ok(());
                }
                // The function sees elements laid out as the type describes.
                let span = if count == 0 { 0 } else { (count as isize - 1) * dt.extent.max(0) + dt.true_extent.max(0) }
                    as usize;
                let mut la = vec![0u8; span];
                let mut lb = vec![0u8; span];
                let base = |v: &mut Vec<u8>| v.as_mut_ptr().wrapping_offset(-dt.true_lb);
                let (pa, pb) = (base(&mut la), base(&mut lb));
                // SAFETY: `src` addresses `n` packed bytes (the contract), and
                // `pa` is the base of `span` bytes of ours, room for `count`
                // elements laid out as the type says.
                unsafe { dt.unpack(std::slice::from_raw_parts(src as *const u8, n), pa) };
                // SAFETY: likewise for `dst` into `lb`.
                unsafe { dt.unpack(std::slice::from_raw_parts(dst as *const u8, n), pb) };
                let (inv, inout) = if rev { (pb, pa) } else { (pa, pb) };
                // SAFETY: both hold `count` elements in the type's layout (just
                // unpacked); `f` is the registered function.
                unsafe { f.call(inv, inout, count, *handle, dt.extent) };
                // SAFETY: `inout` holds `count` elements; `dst` addresses their
                // `n` packed bytes (the contract), not overlapping our vectors.
                unsafe { dt.pack(inout, count, std::slice::from_raw_parts_mut(dst, n)) };
                Ok(())
            }
        }
    }
}

/// The user reduction a schedule handed out to run without the lock (see
/// [`crate::rt::State::defer`]), shared by the schedule and the call.
#[derive(Default)]
struct UserStep {
    /// `IDLE`, `DUE` (handed out, not finished) or `DONE`.
    state: AtomicU8,
    /// The schedule's temporaries, when the schedule went away while its
    /// call was out (a program freeing its state at `MPI_Finalize` with the
    /// operation pending): freed after the call, which may still use them.
    keep: Mutex<Vec<Vec<u8>>>,
}

const IDLE: u8 = 0;
const DUE: u8 = 1;
const DONE: u8 = 2;

/// What the call of a schedule's user reduction takes along: the
/// reduction and its packed operands, as [`Reducer::apply`] wants them.
struct UserReduce {
    red: Reducer,
    src: Packed,
    dst: Packed,
    n: usize,
    rev: bool,
    step: Arc<UserStep>,
}

// SAFETY: the pointers address a user buffer lent for the operation or a
// temporary of the schedule; the schedule does not touch them while the
// call is out (its step is `DUE`), and its temporaries outlive the call
// (`UserStep::keep`).
unsafe impl Send for UserReduce {}

impl UserReduce {
    fn run(self) {
        // SAFETY: as for the `Reduce` step that handed the call out: `src`
        // and `dst` address `n` packed bytes each and do not overlap.
        // (A user function returns no error; the result is ignored.)
        let _ = unsafe { self.red.apply(self.src, self.dst, self.n, self.rev) };
        self.step.state.store(DONE, Ordering::Release);
    }
}

/// One step of a schedule.
pub enum Act {
    /// To rank `to` of route `via` (see [`Sched::local`]).
    Send {
        p: Packed,
        n: usize,
        to: usize,
        via: u8,
    },
    Recv {
        p: Packed,
        n: usize,
        from: usize,
        via: u8,
    },
    /// Wait for every send and receive posted so far.
    Fence,
    Copy {
        src: Packed,
        dst: Packed,
        n: usize,
    },
    /// `dst = src op dst` (`dst op src` when `rev`), `n` bytes.
    Reduce {
        src: Packed,
        dst: Packed,
        n: usize,
        rev: bool,
    },
    /// Packs `count` elements of `dt` at user address `src` into `dst`.
    Pack {
        src: Packed,
        count: usize,
        dt: Arc<Dtype>,
        dst: Packed,
    },
    /// Unpacks `n` bytes at `src` to user address `dst`.
    Unpack {
        src: Packed,
        n: usize,
        dt: Arc<Dtype>,
        dst: Packed,
    },
}

/// A collective operation of one rank.
pub struct Sched {
    acts: Vec<Act>,
    /// Actions appended by `seal` after a final fence (unpacking results).
    tail: Vec<Act>,
    pc: usize,
    /// Posted sends and receives: (request, bytes expected, is a receive).
    pending: Vec<(u32, usize, bool)>,
    tmps: Vec<Vec<u8>>,
    pool: Vec<Vec<u8>>,
    pub rank: usize,
    pub size: usize,
    pub comm: MPI_Comm,
    /// More ranks than cores on this node (favours algorithms that move
    /// fewer bytes in total over those with shorter critical paths).
    pub oversub: bool,
    /// Where messages go: 0 the communicator (for an intercommunicator:
    /// the remote group), 1 an intercommunicator's local group.
    routes: Vec<Route>,
    /// The route new sends and receives take.
    via: u8,
    bytes: Arc<Dtype>,
    pub red: Option<Reducer>,
    err: Option<MpiError>,
    /// Kept for `MPI_Start`: temporaries are never returned to the pool.
    pub persistent: bool,
    /// A persistent operation's part in shared memory and its bytes per
    /// rank, run instead of the schedule by a start that finds the
    /// communicator's segment.
    pub flat: Option<(usize, Box<dyn super::flat::NbKind>)>,
    /// A nonblocking call too large for the communicator's segment: the
    /// segment's operation carrying this rank's length (see
    /// [`super::flat::guard`]), completed before the first step; if it
    /// fails, nothing is sent.
    pub guard: Option<super::flat::NbOp>,
    /// A persistent call too large for the segment: its bytes per rank, for
    /// the guard each start takes.
    pub guard_bytes: Option<usize>,
    /// The user reduction handed out to run without the lock, if one was.
    step: Option<Arc<UserStep>>,
}

impl Drop for Sched {
    fn drop(&mut self) {
        if let Some(step) = &self.step {
            if step.state.load(Ordering::Acquire) == DUE {
                step.keep.lock().unwrap_or_else(|e| e.into_inner()).append(&mut self.tmps);
            }
        }
    }
}

/// A group messages of a schedule address: its collective context, the tag
/// of this operation on it, the members' world ranks, this rank's rank
/// (its rank in the local group, for an intercommunicator's remote group).
struct Route {
    ctx: u32,
    tag: i32,
    group: Arc<Vec<usize>>,
    rank: usize,
}

// SAFETY: the raw pointers are user buffers lent for the operation and the
// schedule's own temporaries; a schedule is only used under the runtime lock.
unsafe impl Send for Sched {}

impl Sched {
    /// An empty schedule on communicator `comm`, with the message tag of
    /// this operation (the communicator's next). The tag is taken even if
    /// the call then fails its checks on this rank only (a bad root-only
    /// argument), so the ranks stay in step for the next collective.
    ///
    /// On an intercommunicator `rank` is this rank in the local group and
    /// `size` the size of the remote group; [`Sched::local`] switches to the
    /// local group (a second route, whose tag is also taken here, on every
    /// rank, so both stay in step).
    pub fn new(st: &mut State, comm: MPI_Comm) -> MpiResult<Sched> {
        Self::new_tagged(st, comm, None, Lane::Block)
    }

    /// [`Sched::new`], with messages under `tag` if given (on an
    /// intracommunicator: a tag every rank knows without drawing one of the
    /// communicator's tags, which only the ranks making a schedule draw);
    /// else under the next tag of `lane`.
    pub fn new_tagged(st: &mut State, comm: MPI_Comm, tag: Option<i32>, lane: Lane) -> MpiResult<Sched> {
        let c = st.comms.get(comm)?;
        let (ctx, rank, size, group) = (c.coll_ctx(), c.rank as usize, c.size() as usize, c.group.clone());
        let local = if c.is_inter() {
            let l = st.comms.get(c.local_comm)?;
            Some((l.coll_ctx(), l.group.clone()))
        } else {
            None
        };
        let bytes = st.types.get(MPI_BYTE)?;
        let tag = tag.unwrap_or_else(|| st.coll.next_tag(ctx, lane));
        let mut routes = vec![Route { ctx, tag, group, rank }];
        if let Some((lctx, lgroup)) = local {
            routes.push(Route { ctx: lctx, tag: st.coll.next_tag(lctx, lane), group: lgroup, rank });
        }
        Ok(Sched {
            acts: Vec::with_capacity(16),
            tail: Vec::new(),
            pc: 0,
            pending: Vec::with_capacity(8),
            tmps: Vec::new(),
            pool: std::mem::take(&mut st.coll.pool),
            rank,
            size,
            comm,
            oversub: st.oversubscribed,
            routes,
            via: 0,
            bytes,
            red: None,
            err: None,
            persistent: false,
            flat: None,
            guard: None,
            guard_bytes: None,
            step: None,
        })
    }

    // ----- building ---------------------------------------------------------

    /// Whether this is a schedule on an intercommunicator.
    pub fn is_inter(&self) -> bool {
        self.routes.len() > 1
    }

    /// Size of the local group of an intercommunicator.
    pub fn local_size(&self) -> usize {
        self.routes.last().map_or(self.size, |r| r.group.len())
    }

    /// Size of the remote group of an intercommunicator.
    pub fn remote_size(&self) -> usize {
        self.routes[0].group.len()
    }

    /// Sends and receives from here on go to the local group of an
    /// intercommunicator (`size` becomes its size), until [`Sched::remote`].
    pub fn local(&mut self) {
        assert!(self.is_inter(), "a local group is only on an intercommunicator");
        self.via = 1;
        self.size = self.routes[1].group.len();
    }

    /// Back to the remote group of an intercommunicator.
    pub fn remote(&mut self) {
        self.via = 0;
        self.size = self.routes[0].group.len();
    }

    pub fn send(&mut self, p: Packed, n: usize, to: usize) {
        self.acts.push(Act::Send { p, n, to, via: self.via });
    }
    pub fn recv(&mut self, p: Packed, n: usize, from: usize) {
        self.acts.push(Act::Recv { p, n, from, via: self.via });
    }
    pub fn fence(&mut self) {
        if !matches!(self.acts.last(), None | Some(Act::Fence)) {
            self.acts.push(Act::Fence);
        }
    }
    pub fn copy(&mut self, src: Packed, dst: Packed, n: usize) {
        if n > 0 && src != dst {
            self.acts.push(Act::Copy { src, dst, n });
        }
    }
    /// `dst = src op dst`, or `dst = dst op src` when `rev`.
    pub fn reduce(&mut self, src: Packed, dst: Packed, n: usize, rev: bool) {
        if n > 0 {
            self.acts.push(Act::Reduce { src, dst, n, rev });
        }
    }

    /// A temporary buffer of `n` bytes, alive as long as the schedule.
    pub fn tmp(&mut self, n: usize) -> Packed {
        let pos =
            self.pool.iter().enumerate().filter(|(_, v)| v.len() >= n).min_by_key(|(_, v)| v.len()).map(|(i, _)| i);
        let mut v = match pos {
            Some(i) => self.pool.swap_remove(i),
            None => vec![0u8; n.max(64)],
        };
        let p = v.as_mut_ptr();
        self.tmps.push(v);
        p
    }

    /// Packed view of `count` elements of `dt` at user address `buf`, read
    /// by the operation (packed at the start if not contiguous).
    pub fn input(&mut self, buf: *const u8, count: usize, dt: &Arc<Dtype>) -> Packed {
        if dt.contig {
            return buf as Packed;
        }
        let n = dt.packed_size(count);
        let t = self.tmp(n);
        if n > 0 {
            self.acts.push(Act::Pack { src: buf as Packed, count, dt: dt.clone(), dst: t });
        }
        t
    }

    /// Packed view of `count` elements of `dt` at user address `buf`, written
    /// by the operation (unpacked at the end if not contiguous).
    pub fn output(&mut self, buf: *mut u8, count: usize, dt: &Arc<Dtype>) -> Packed {
        if dt.contig {
            return buf;
        }
        let n = dt.packed_size(count);
        let t = self.tmp(n);
        if n > 0 {
            self.tail.push(Act::Unpack { src: t, n, dt: dt.clone(), dst: buf });
        }
        t
    }

    /// Packs `count` elements of `dt` at user address `buf` into `dst` at
    /// the start (nothing to do for a contiguous type, whose packed view is
    /// the buffer itself).
    pub fn pack_to(&mut self, buf: *const u8, count: usize, dt: &Arc<Dtype>, dst: Packed) {
        if !dt.contig && count > 0 {
            self.acts.push(Act::Pack { src: buf as Packed, count, dt: dt.clone(), dst });
        }
    }

    /// Both: read at the start, written back at the end.
    pub fn inout(&mut self, buf: *mut u8, count: usize, dt: &Arc<Dtype>) -> Packed {
        let p = self.input(buf, count, dt);
        if !dt.contig && count > 0 {
            self.tail.push(Act::Unpack { src: p, n: dt.packed_size(count), dt: dt.clone(), dst: buf });
        }
        p
    }

    /// Ends building: gives unused buffers back.
    pub fn seal(&mut self, st: &mut State) {
        if !self.tail.is_empty() {
            self.acts.push(Act::Fence);
            self.acts.append(&mut self.tail);
        }
        st.coll.give_back(std::mem::take(&mut self.pool));
    }

    /// Makes a completed persistent schedule ready to run again.
    pub fn restart(&mut self) {
        self.pc = 0;
        self.err = None;
        if let Some(s) = &self.step {
            s.state.store(IDLE, Ordering::Relaxed);
        }
    }

    // ----- running ------------------------------------------------------------

    /// Runs what can run now. True when the operation is complete.
    pub fn advance(&mut self, st: &mut State) -> bool {
        if let Some(g) = self.guard.as_mut() {
            if !g.advance() {
                return false;
            }
            let r = g.result();
            self.guard = None;
            if let Err(e) = r {
                // Counts differ across the segment's limit: no step runs.
                self.err = Some(e);
                self.pc = self.acts.len();
            }
        }
        loop {
            if self.pending.iter().any(|&(i, _, _)| !st.reqs.get(i).done) {
                return false;
            }
            for (i, n, is_recv) in self.pending.drain(..) {
                let r = st.reqs.get(i);
                if self.err.is_none() {
                    let got = r.status.byte_count() as usize;
                    if matches!(r.err, MPIX_ERR_REVOKED | MPIX_ERR_PROC_FAILED) {
                        self.err = Some(MpiError::new(r.err, "the communicator was revoked, or a process failed"));
                    } else if r.err != MPI_SUCCESS || (is_recv && got != n) {
                        let what = if r.err == MPI_ERR_TRUNCATE || got > n { "more" } else { "less" };
                        self.err = Some(MpiError::new(
                            MPI_ERR_TRUNCATE,
                            format!(
                                "rank {} of the collective sent {what} data than this rank expects ({n} bytes): counts, types or roots differ between ranks, or the ranks called different collectives (in different orders on this communicator)",
                                r.status.MPI_SOURCE
                            ),
                        ));
                    }
                }
                st.reqs.release(i);
            }
            if self.pc == self.acts.len() {
                if !self.persistent {
                    st.coll.give_back(std::mem::take(&mut self.tmps));
                }
                return true;
            }
            while self.pc < self.acts.len() {
                let pc = self.pc;
                self.pc += 1;
                match &self.acts[pc] {
                    Act::Fence => break,
                    &Act::Send { p, n, to, via } => {
                        let i = st.reqs.alloc(Request::new(Kind::Null, MPI_COMM_WORLD));
                        let r = &self.routes[via as usize];
                        let env = Wire { ctx: r.ctx, src: r.rank as i32, tag: r.tag };
                        // SAFETY: the schedule was built with `p` addressing
                        // `n` bytes (a user buffer lent for the operation or
                        // our temporary), kept until the schedule's sends
                        // complete; a fence orders local steps that write
                        // them after the send.
                        let data = unsafe { SendData::new(p, n, &self.bytes) };
                        st.engine.start_send(&mut st.reqs, i, data, r.group[to], env, Mode::Standard);
                        self.pending.push((i, n, false));
                    }
                    &Act::Recv { p, n, from, via } => {
                        let r = &self.routes[via as usize];
                        let op = RecvOp {
                            buf: p,
                            dt: self.bytes.clone().into(),
                            ctx: r.ctx,
                            src: from as i32,
                            tag: r.tag,
                            cap: n,
                            stream: None,
                        };
                        let i = st.reqs.alloc(Request::new(Kind::Recv(op), MPI_COMM_WORLD));
                        st.engine.start_recv(&mut st.reqs, i);
                        self.pending.push((i, n, true));
                    }
                    // SAFETY: (all local steps) the schedule was built with
                    // pointers to `n` valid bytes (user buffers lent for the
                    // operation or our temporaries), and a fence orders every
                    // local step after the transfers into its buffers.
                    &Act::Copy { src, dst, n } => unsafe { std::ptr::copy(src, dst, n) },
                    &Act::Reduce { src, dst, n, rev } => {
                        let red = self.red.as_ref().expect("reduction schedule has an operation");
                        if let Reducer::User { .. } = red {
                            // The program's function may call MPI: it runs
                            // after the lock is released, and the schedule
                            // waits here until it did.
                            let step = self.step.get_or_insert_with(Default::default);
                            match step.state.load(Ordering::Acquire) {
                                DONE => step.state.store(IDLE, Ordering::Relaxed),
                                DUE => {
                                    self.pc = pc;
                                    return false;
                                }
                                _ => {
                                    step.state.store(DUE, Ordering::Relaxed);
                                    let call = UserReduce { red: red.clone(), src, dst, n, rev, step: step.clone() };
                                    st.defer(Box::new(move || call.run()));
                                    self.pc = pc;
                                    return false;
                                }
                            }
                            continue;
                        }
                        // SAFETY: as above; src and dst never overlap.
                        if let Err(e) = unsafe { red.apply(src, dst, n, rev) } {
                            self.err.get_or_insert(e);
                        }
                    }
                    Act::Pack { src, count, dt, dst } => {
                        let n = dt.packed_size(*count);
                        // SAFETY: as above.
                        unsafe { dt.pack(*src, *count, std::slice::from_raw_parts_mut(*dst, n)) }
                    }
                    Act::Unpack { src, n, dt, dst } => {
                        // SAFETY: as above.
                        unsafe { dt.unpack(std::slice::from_raw_parts(*src, *n), *dst) }
                    }
                }
            }
        }
    }

    /// The outcome of a completed schedule.
    pub fn result(&self) -> MpiResult<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
