//! Process-wide tracing state: communicators, windows, requests, matched
//! probes, message sequence counters and the side file.

use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::{Deref, DerefMut};
use std::os::raw::c_int;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mpi_api::abi::{self, MPI_Status};
use trace_format::record::{NONE_I64, NO_RANK};
use trace_format::side::{CommInfo, ProcessInfo, SideEntry, SideWriter, SyncPoint};

use crate::pmpi;

/// A small multiplicative hasher for integer keys (the default SipHash costs
/// more than the rest of a lookup).
#[derive(Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
    fn write_i32(&mut self, v: i32) {
        self.write_u64(v as u32 as u64)
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// What the shim knows of a communicator handle.
#[derive(Clone, Debug)]
pub struct CommState {
    pub slot: u32,
    pub id: u64,
    pub inter: bool,
    /// Shared so that requests and windows can keep a cheap copy.
    pub members: Arc<[i32]>,
    pub remote: Arc<[i32]>,
    pub coll_seq: i64,
    /// This process's rank in the communicator.
    pub rank: i32,
}

impl CommState {
    /// World rank of `r`, a rank of the group that point-to-point peers and
    /// roots refer to (the remote group of an intercommunicator). Negative
    /// MPI constants (PROC_NULL, ANY_SOURCE, ROOT) are kept.
    pub fn world_rank(&self, r: c_int) -> i32 {
        let group = if self.inter { &self.remote } else { &self.members };
        if r >= 0 {
            group.get(r as usize).copied().unwrap_or(r)
        } else {
            r
        }
    }
    /// Size of the group that counts arrays of collectives are indexed by.
    pub fn peer_group_size(&self) -> usize {
        if self.inter {
            self.remote.len()
        } else {
            self.members.len()
        }
    }
}

/// What kind of operation a request stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqKind {
    Send,
    Recv,
    /// `MPI_Isendrecv(_replace)`: the call row holds the send half, the
    /// completion the receive half.
    Sendrecv,
    /// Partitioned send and receive (`MPI_Psend_init`, `MPI_Precv_init`).
    PartSend,
    PartRecv,
    /// `MPI_Imrecv`: receives the message of a matched probe.
    Mrecv,
    Coll,
    Other,
}

/// A request the shim saw being created.
#[derive(Clone, Debug)]
pub struct ReqInfo {
    pub call: u16,
    pub kind: ReqKind,
    pub comm: Option<CommState>,
    pub peer: i32,
    pub tag: i32,
    pub bytes: i64,
    pub count: i64,
    pub datatype: i32,
    pub seq: i64,
    pub persistent: bool,
    pub active: bool,
    /// `Sendrecv` requests: the source asked for (world rank, or
    /// `MPI_ANY_SOURCE`/`MPI_PROC_NULL`) and the receive tag (or `MPI_ANY_TAG`).
    pub recv_peer: i32,
    pub recv_tag: i32,
    /// When the operation was posted (started, for persistent requests):
    /// a per-process counter.
    pub posted: u64,
    /// A receive numbered when it completes (depth_counted in
    /// `Tracer::late_pending` while pending), see `Tracer::post_receive`.
    pub late: bool,
    /// A receive from one source with one tag whose sequence number was
    /// taken when it was posted (`seq`), see `Tracer::post_receive`.
    pub preassigned: bool,
    /// A nonblocking send's buffer, checksummed with `--check-buffers`.
    pub sendbuf: Option<crate::checks::SendBuffer>,
}

/// A message matched by `MPI_Mprobe`/`MPI_Improbe`.
#[derive(Clone, Copy, Debug)]
pub struct MsgInfo {
    /// Communicator slot the message was probed on.
    pub slot: u32,
    pub seq: i64,
    pub peer: i32,
    pub tag: i32,
}

/// The tracing state of the process, behind [`STATE`].
pub struct Tracer {
    pub dir: PathBuf,
    pub rank: i32,
    pub size: i32,
    pub side: Option<SideWriter>,
    pub process: ProcessInfo,
    pub comms: FastMap<c_int, CommState>,
    next_slot: u32,
    /// How many communicators with the same parent and members (by the
    /// hash of both) this process saw created: part of their ids.
    created_alike: HashMap<u64, u32>,
    pub all_comms: Vec<CommInfo>,
    pub wins: FastMap<c_int, CommState>,
    pub requests: FastMap<c_int, ReqInfo>,
    pub messages: FastMap<c_int, MsgInfo>,
    send_seq: FastMap<(u32, i32, i32), i64>,
    recv_seq: FastMap<(u32, i32, i32), i64>,
    pub world_group: c_int,
    pub last_point: u64,
    pub point_interval: u64,
    /// Calls recorded (clock calibration is checked every 256).
    pub calls: u64,
    pub sync_init: Option<SyncPoint>,
    pub sync_comms: (c_int, c_int),
    /// Whether the library fills the status of a completed `MPI_Isendrecv`
    /// (MPICH 4.0 does not; see `life::isendrecv_fills_status`).
    pub isendrecv_status: bool,
    /// Executable mappings written to the side file.
    pub modules: Vec<trace_format::side::Module>,
    /// The dynamic loader's count of objects loaded when `modules` was taken.
    pub dl_adds: u64,
    /// Operations posted so far (see `ReqInfo::posted`).
    posts: u64,
    /// Pending nonblocking receives numbered when they complete, per
    /// communicator slot.
    late_pending: FastMap<u32, u32>,
    side_failed: bool,
}

/// The process-wide state, touched only by threads inside an MPI call.
pub struct StateCell {
    lock: Mutex<()>,
    cell: UnsafeCell<Option<Tracer>>,
}

// SAFETY: the cell is only reached through `state()`, which takes the lock
// whenever MPI may be called by several threads at once (THREAD_MULTIPLE).
// Below that thread level the MPI standard forbids concurrent MPI calls and
// the application orders them, so calls into the shim are serialized too.
unsafe impl Sync for StateCell {}

/// `None` until `MPI_Init` returned.
pub static STATE: StateCell = StateCell { lock: Mutex::new(()), cell: UnsafeCell::new(None) };

/// Whether [`state`] must lock (MPI_THREAD_MULTIPLE, or MPITRACE_LOCK=1).
/// Even uncontended, the lock's two atomic instructions per call are a large
/// share of the shim's overhead (see BENCHMARKS.md), so it is skipped when
/// the MPI standard already serializes the calls.
pub static LOCKING: AtomicBool = AtomicBool::new(true);

/// Exclusive access to [`STATE`]; never held across another `state()`.
pub struct StateGuard {
    _lock: Option<MutexGuard<'static, ()>>,
}

impl Deref for StateGuard {
    type Target = Option<Tracer>;
    fn deref(&self) -> &Option<Tracer> {
        // SAFETY: exclusive by the contract of `StateCell` (see above).
        unsafe { &*STATE.cell.get() }
    }
}

impl DerefMut for StateGuard {
    fn deref_mut(&mut self) -> &mut Option<Tracer> {
        // SAFETY: exclusive by the contract of `StateCell` (see above).
        unsafe { &mut *STATE.cell.get() }
    }
}

/// Access to the process-wide state (see [`StateCell`]).
pub fn state() -> StateGuard {
    let lock = LOCKING.load(Ordering::Relaxed).then(|| STATE.lock.lock().unwrap_or_else(|p| p.into_inner()));
    StateGuard { _lock: lock }
}

/// Side-file writes that any thread may make at any time (region names,
/// new threads), behind their own lock.
pub struct SharedSide {
    pub side: SideWriter,
    pub regions: HashMap<String, i32>,
}

pub static SHARED_SIDE: Mutex<Option<SharedSide>> = Mutex::new(None);

/// Runs `f` on the auxiliary side writer, if tracing.
pub fn with_shared_side<R>(f: impl FnOnce(&mut SharedSide) -> R) -> Option<R> {
    let mut g = SHARED_SIDE.lock().unwrap_or_else(|p| p.into_inner());
    g.as_mut().map(f)
}

impl SharedSide {
    /// Interns a region name, writing it to the side file the first time.
    pub fn region_id(&mut self, name: &str) -> i32 {
        if let Some(&id) = self.regions.get(name) {
            return id;
        }
        let id = self.regions.len() as i32 + 1;
        self.regions.insert(name.to_string(), id);
        let _ = self.side.write(&SideEntry::Region { id, name: name.to_string() });
        id
    }
}

/// 64-bit FNV-1a over integers.
fn fnv1a(words: impl IntoIterator<Item = u64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// Communicator id of MPI_COMM_WORLD.
pub const WORLD_ID: u64 = 0;

impl Tracer {
    pub fn new(dir: PathBuf, rank: i32, size: i32, side: Option<SideWriter>, process: ProcessInfo) -> Tracer {
        let mut t = Tracer {
            dir,
            rank,
            size,
            side,
            process,
            comms: FastMap::default(),
            next_slot: 0,
            created_alike: HashMap::new(),
            all_comms: Vec::new(),
            wins: FastMap::default(),
            requests: FastMap::default(),
            messages: FastMap::default(),
            send_seq: FastMap::default(),
            recv_seq: FastMap::default(),
            world_group: abi::MPI_GROUP_NULL,
            last_point: 0,
            point_interval: 1 << 31,
            calls: 0,
            sync_init: None,
            sync_comms: (abi::MPI_COMM_NULL, abi::MPI_COMM_NULL),
            isendrecv_status: true,
            modules: Vec::new(),
            dl_adds: 0,
            posts: 0,
            late_pending: FastMap::default(),
            side_failed: false,
        };
        let mut wg = abi::MPI_GROUP_NULL;
        // SAFETY: MPI is initialized; the out pointer is a live local.
        unsafe { pmpi::MPI_Comm_group(crate::life::world(), &mut wg) };
        t.world_group = wg;
        let world: Vec<i32> = (0..size).collect();
        t.add_comm(crate::life::world(), WORLD_ID, None, "predefined", false, world, Vec::new(), rank);
        let self_id = fnv1a([0x5e1f, rank as u64]);
        t.add_comm(abi::MPI_COMM_SELF, self_id, None, "predefined", false, vec![rank], Vec::new(), 0);
        t
    }

    /// Appends to the side file; the first failure is reported, then the
    /// side file is given up (the journals go on).
    pub fn write_side(&mut self, e: &SideEntry) {
        if let Some(s) = self.side.as_mut() {
            if let Err(err) = s.write(e) {
                if !self.side_failed {
                    eprintln!("mpitrace: rank {}: {err}; communicator and region names may be missing", self.rank);
                    self.side_failed = true;
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn add_comm(
        &mut self,
        h: c_int,
        id: u64,
        parent: Option<u64>,
        call: &str,
        inter: bool,
        members: Vec<i32>,
        remote: Vec<i32>,
        rank: i32,
    ) -> CommState {
        let slot = self.next_slot;
        self.next_slot += 1;
        let info = CommInfo {
            slot,
            id,
            parent,
            call: call.to_string(),
            inter,
            members: members.clone(),
            remote: remote.clone(),
            name: None,
        };
        self.write_side(&SideEntry::Comm(info.clone()));
        self.all_comms.push(info);
        let cs = CommState { slot, id, inter, members: members.into(), remote: remote.into(), coll_seq: 0, rank };
        self.comms.insert(h, cs.clone());
        cs
    }

    /// World ranks of the members of a group, in group order.
    fn group_world_ranks(&self, g: c_int) -> Vec<i32> {
        let mut n = 0;
        // SAFETY: valid group handle and live out pointers.
        unsafe { pmpi::MPI_Group_size(g, &mut n) };
        let ranks: Vec<c_int> = (0..n).collect();
        let mut out = vec![abi::MPI_UNDEFINED; n.max(0) as usize];
        if n > 0 {
            // SAFETY: both arrays hold n ints.
            unsafe { pmpi::MPI_Group_translate_ranks(g, n, ranks.as_ptr(), self.world_group, out.as_mut_ptr()) };
        }
        out
    }

    /// Registers a communicator created by `call` from `parent` (a trace id).
    /// The id is derived from what every member sees alike: the parent id,
    /// the member lists and how many communicators with the same parent and
    /// members this process saw created before.
    pub fn register_comm(&mut self, h: c_int, parent: Option<u64>, call: &str) -> CommState {
        let mut inter = 0;
        let mut rank = 0;
        let mut g = abi::MPI_GROUP_NULL;
        // SAFETY: `h` is a communicator handle the MPI library just returned
        // (or the application uses); out pointers are live locals.
        unsafe {
            pmpi::MPI_Comm_test_inter(h, &mut inter);
            pmpi::MPI_Comm_rank(h, &mut rank);
            pmpi::MPI_Comm_group(h, &mut g);
        }
        let members = self.group_world_ranks(g);
        // SAFETY: freeing the group we obtained above.
        unsafe { pmpi::MPI_Group_free(&mut g) };
        let mut remote = Vec::new();
        if inter != 0 {
            let mut rg = abi::MPI_GROUP_NULL;
            // SAFETY: as above, for the remote group.
            unsafe { pmpi::MPI_Comm_remote_group(h, &mut rg) };
            remote = self.group_world_ranks(rg);
            // SAFETY: freeing the group we obtained.
            unsafe { pmpi::MPI_Group_free(&mut rg) };
        }
        // Both sides of an intercommunicator have different parents and
        // local groups: key it on the two groups in a canonical order.
        let (key_parent, a, b) = if inter != 0 {
            let (x, y) = if members <= remote { (&members, &remote) } else { (&remote, &members) };
            (u64::MAX, x.clone(), y.clone())
        } else {
            (parent.unwrap_or(u64::MAX - 1), members.clone(), Vec::new())
        };
        let key = fnv1a(
            [key_parent, a.len() as u64]
                .into_iter()
                .chain(a.iter().map(|&r| r as u64))
                .chain(b.iter().map(|&r| r as u64)),
        );
        let nth = self.created_alike.entry(key).or_insert(0);
        *nth += 1;
        let mut id = fnv1a([key, *nth as u64]) >> 1;
        if id == WORLD_ID {
            id = 1;
        }
        self.add_comm(h, id, parent, call, inter != 0, members, remote, rank)
    }

    /// The state of a communicator handle, registering unknown ones (created
    /// in nested calls or before tracing started) on the fly.
    pub fn comm(&mut self, h: c_int) -> Option<&mut CommState> {
        if h == abi::MPI_COMM_NULL
            || abi::handle_obj(h) != abi::OBJ_COMM
            || abi::handle_kind(h) == abi::HANDLE_KIND_INVALID
        {
            return None;
        }
        if !self.comms.contains_key(&h) {
            self.register_comm(h, None, "unknown");
        }
        self.comms.get_mut(&h)
    }

    /// Records the name of a communicator (a new side entry for its slot).
    pub fn name_comm(&mut self, h: c_int, name: String) {
        let Some(slot) = self.comm(h).map(|c| c.slot) else {
            return;
        };
        if let Some(info) = self.all_comms.iter_mut().find(|c| c.slot == slot) {
            info.name = Some(name);
            let e = SideEntry::Comm(info.clone());
            self.write_side(&e);
        }
    }

    pub fn free_comm(&mut self, h: c_int) {
        if h != abi::MPI_COMM_WORLD && h != abi::MPI_COMM_SELF {
            self.comms.remove(&h);
        }
    }

    /// A nonblocking receive `info` is posted (or a persistent one started).
    /// MPI matches the messages of one source and tag to receives in the
    /// order these were posted, so a receive from one source with one tag
    /// takes its sequence number now if every pending receive on the
    /// communicator did so too (none can take a message before it that is
    /// not depth_counted yet) and no other thread may post receives meanwhile.
    /// Otherwise, as receives with a wildcard and the receive halves of
    /// `MPI_Isendrecv` always, it is numbered when it completes, and until
    /// then no receive on the communicator is numbered at posting.
    pub fn post_receive(&mut self, info: &mut ReqInfo) {
        let Some(slot) = info.comm.as_ref().map(|c| c.slot) else { return };
        let early = info.kind == ReqKind::Recv
            && info.peer >= 0
            && info.tag != abi::MPI_ANY_TAG
            && !LOCKING.load(Ordering::Relaxed)
            && self.late_pending.get(&slot).is_none_or(|&n| n == 0);
        if early {
            info.seq = self.next_recv_seq(slot, info.peer, info.tag);
            info.preassigned = true;
        } else if info.peer != abi::MPI_PROC_NULL || info.kind == ReqKind::Sendrecv {
            info.late = true;
            *self.late_pending.entry(slot).or_insert(0) += 1;
        }
    }

    /// A receive posted with [`Tracer::post_receive`] completed (`cancelled`:
    /// without a message).
    pub fn receive_done(&mut self, info: &ReqInfo, cancelled: bool) {
        let Some(slot) = info.comm.as_ref().map(|c| c.slot) else { return };
        if info.late {
            if let Some(n) = self.late_pending.get_mut(&slot) {
                *n = n.saturating_sub(1);
            }
        }
        if info.preassigned && cancelled {
            // Give the number back if no later receive took one.
            if let Some(c) = self.recv_seq.get_mut(&(slot, info.peer, info.tag)) {
                if *c == info.seq {
                    *c -= 1;
                }
            }
        }
    }

    /// The next value of the posting counter.
    pub fn next_post(&mut self) -> u64 {
        self.posts += 1;
        self.posts
    }

    pub fn next_send_seq(&mut self, slot: u32, peer: i32, tag: i32) -> i64 {
        let c = self.send_seq.entry((slot, peer, tag)).or_insert(0);
        *c += 1;
        *c
    }

    pub fn next_recv_seq(&mut self, slot: u32, peer: i32, tag: i32) -> i64 {
        let c = self.recv_seq.entry((slot, peer, tag)).or_insert(0);
        *c += 1;
        *c
    }

    /// The communicator of a call given by handle (or the window's).
    pub fn lookup(&mut self, (comm, win): (Option<c_int>, Option<c_int>)) -> Option<&mut CommState> {
        match (comm, win) {
            (Some(h), _) => self.comm(h),
            (None, Some(w)) => self.wins.get_mut(&w),
            _ => None,
        }
    }

    /// [`Tracer::received`] on the communicator of a call, without copying it.
    pub fn received_on(
        &mut self,
        key: (Option<c_int>, Option<c_int>),
        st: &MPI_Status,
        consume_seq: bool,
    ) -> (i32, i32, i64, i64) {
        let bytes = st.byte_count() as i64;
        let Some(cs) = self.lookup(key) else {
            return (st.MPI_SOURCE, st.MPI_TAG, bytes, NONE_I64);
        };
        let (slot, peer) = (cs.slot, if st.MPI_SOURCE >= 0 { cs.world_rank(st.MPI_SOURCE) } else { st.MPI_SOURCE });
        let seq = if consume_seq && st.MPI_SOURCE >= 0 && !st.cancelled() {
            self.next_recv_seq(slot, peer, st.MPI_TAG)
        } else {
            NONE_I64
        };
        (peer, st.MPI_TAG, bytes, seq)
    }

    /// Interpretation of a receive status on a communicator: (peer as world
    /// rank, tag, bytes, seq). The sequence number is consumed only for a
    /// real, uncancelled message.
    pub fn received(&mut self, comm: Option<&CommState>, st: &MPI_Status, consume_seq: bool) -> (i32, i32, i64, i64) {
        let bytes = st.byte_count() as i64;
        let Some(cs) = comm else {
            return (st.MPI_SOURCE, st.MPI_TAG, bytes, NONE_I64);
        };
        let peer = if st.MPI_SOURCE >= 0 { cs.world_rank(st.MPI_SOURCE) } else { st.MPI_SOURCE };
        let seq = if consume_seq && st.MPI_SOURCE >= 0 && !st.cancelled() {
            self.next_recv_seq(cs.slot, peer, st.MPI_TAG)
        } else {
            NONE_I64
        };
        (peer, st.MPI_TAG, bytes, seq)
    }

    /// Writes a clock calibration point when the last one is old.
    pub fn maybe_clock_point(&mut self, now: u64) {
        if now.wrapping_sub(self.last_point) > self.point_interval {
            self.clock_point();
            // About once a second: libraries loaded since (dlopen) join the
            // module map while the process runs, so a crash keeps them
            // (looked at after the state is unlocked: see `Call::enter`).
            crate::life::MODULES_DUE.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    pub fn clock_point(&mut self) {
        let (ticks, ns) = crate::clock::point();
        self.last_point = ticks;
        self.write_side(&SideEntry::Clock { ticks, ns });
    }
}

/// Size in bytes of a datatype (0 if unknown or invalid).
pub fn type_size(dt: c_int) -> i64 {
    if let Some(s) = abi::builtin_type_size(dt) {
        return s as i64;
    }
    if abi::handle_obj(dt) != abi::OBJ_DATATYPE
        || abi::handle_kind(dt) == abi::HANDLE_KIND_INVALID
        || dt == abi::MPI_DATATYPE_NULL
    {
        return 0;
    }
    let mut s: abi::MPI_Count = 0;
    // SAFETY: a valid-looking derived datatype handle and a live out pointer.
    let rc = unsafe { pmpi::MPI_Type_size_x(dt, &mut s) };
    if rc == 0 {
        s
    } else {
        0
    }
}

/// `NO_RANK` helper for optional ranks.
pub fn rank_or_none(r: Option<i32>) -> i32 {
    r.unwrap_or(NO_RANK)
}
