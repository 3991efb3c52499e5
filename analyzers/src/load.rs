//! Loading a trace into the compact [`Model`].
//!
//! Finished ranks are streamed from their Parquet files batch by batch,
//! reading only the columns the analyses need, straight into the compact
//! vectors (no per-event allocation). Ranks that left only journals (a
//! crashed run) are read through `trace_format::read_rank_journals`. Ranks
//! are loaded in parallel on all cores. Damaged or missing files are listed
//! in [`Model::problems`]; everything readable is kept.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use trace_format::columns::{name, ColumnError, EventColumns};
use trace_format::reader::Completeness;
use trace_format::record::{flags, Kind};
use trace_format::{layout, Event, Meta};

use crate::model::{
    call_flags, classify, CallEv, CallPath, Class, CollEv, CommDesc, Frame, Interner, Location, Model, OpEv, P2p,
    Problem, RankData, RegionEv, Site, NONE, NO_HANDLE,
};
use crate::{Error, FastMap};

/// One row of the events table, as the builder sees it.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub thread: i32,
    pub kind: Kind,
    /// Local name id (see [`RankBuilder::name_id`]).
    pub name: u16,
    pub t_start: i64,
    pub t_end: Option<i64>,
    pub rc: Option<i32>,
    pub site: Option<u64>,
    pub comm: Option<u64>,
    pub peer: Option<i32>,
    pub tag: Option<i32>,
    pub bytes: Option<i64>,
    pub seq: Option<i64>,
    pub request: Option<i32>,
    pub root: Option<i32>,
    pub op: Option<i32>,
    pub recv_bytes: Option<i64>,
    pub flags: u8,
    /// Call path id (the rank's path table), if recorded.
    pub path: Option<u32>,
}

/// The fields of a row as the builder reads them: a [`Row`], or a row
/// read straight from decoded columns (only the fields asked for are read).
pub trait RowFields {
    fn thread(&self) -> i32;
    fn kind(&self) -> Kind;
    fn name(&self) -> u16;
    fn t_start(&self) -> i64;
    fn t_end(&self) -> Option<i64>;
    fn rc(&self) -> Option<i32>;
    fn site(&self) -> Option<u64>;
    fn comm(&self) -> Option<u64>;
    fn peer(&self) -> Option<i32>;
    fn tag(&self) -> Option<i32>;
    fn bytes(&self) -> Option<i64>;
    fn seq(&self) -> Option<i64>;
    fn request(&self) -> Option<i32>;
    fn root(&self) -> Option<i32>;
    fn op(&self) -> Option<i32>;
    fn recv_bytes(&self) -> Option<i64>;
    fn flags(&self) -> u8;
    fn path(&self) -> Option<u32>;
}

macro_rules! row_field {
    ($($f:ident: $t:ty),*) => {
        impl RowFields for Row {
            $(
                #[inline]
                fn $f(&self) -> $t {
                    self.$f
                }
            )*
        }
    };
}
row_field!(thread: i32, kind: Kind, name: u16, t_start: i64, t_end: Option<i64>, rc: Option<i32>, site: Option<u64>,
    comm: Option<u64>, peer: Option<i32>, tag: Option<i32>, bytes: Option<i64>, seq: Option<i64>, request: Option<i32>,
    root: Option<i32>, op: Option<i32>, recv_bytes: Option<i64>, flags: u8, path: Option<u32>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReqKind {
    Send,
    Recv,
    Coll,
    /// `MPI_Isendrecv(_replace)`: the entity is the send half; the
    /// completion row is the receive half.
    SendRecv,
}

/// A request handle of the rank and the operation it stands for now.
#[derive(Clone, Copy, Debug)]
struct Req {
    kind: ReqKind,
    /// Index into sends/recvs/colls, or NONE for an inactive persistent request.
    entity: u32,
}

/// The request handles of a rank: a short list searched from the end (a
/// program has few requests in flight, and completes recent ones first),
/// spilling into a map when it grows long.
#[derive(Default)]
struct Requests {
    recent: Vec<(i32, Req)>,
    more: FastMap<i32, Req>,
}

/// Longest list before requests go to the map.
const RECENT_REQUESTS: usize = 32;

impl Requests {
    fn insert(&mut self, q: i32, req: Req) {
        if let Some(e) = self.recent.iter_mut().rev().find(|e| e.0 == q) {
            e.1 = req;
        } else if self.recent.len() < RECENT_REQUESTS && !self.more.contains_key(&q) {
            self.recent.push((q, req));
        } else {
            self.more.insert(q, req);
        }
    }
    fn get(&self, q: i32) -> Option<Req> {
        match self.recent.iter().rev().find(|e| e.0 == q) {
            Some(e) => Some(e.1),
            None if self.more.is_empty() => None,
            None => self.more.get(&q).copied(),
        }
    }
    fn remove(&mut self, q: i32) -> Option<Req> {
        match self.recent.iter().rposition(|e| e.0 == q) {
            Some(i) => Some(self.recent.remove(i).1),
            None if self.more.is_empty() => None,
            None => self.more.remove(&q),
        }
    }
}

/// Threads indexed directly by [`LastCall`]; others go to a map.
const DENSE_THREADS: usize = 256;

/// The last call of each thread of a rank. Thread numbers come from the
/// file (a journal's header, the `thread` column): a table indexed by them
/// would be as large as the largest number a damaged file holds, so only
/// small ones index a table, the rest a map.
#[derive(Default)]
struct LastCall {
    dense: Vec<u32>,
    more: FastMap<i32, u32>,
}

impl LastCall {
    #[inline]
    fn set(&mut self, thread: i32, call: u32) {
        let t = thread.max(0) as usize;
        if t < DENSE_THREADS {
            if t >= self.dense.len() {
                self.dense.resize(t + 1, NONE);
            }
            self.dense[t] = call;
        } else {
            self.more.insert(thread, call);
        }
    }
    #[inline]
    fn get(&self, thread: i32) -> u32 {
        let t = thread.max(0) as usize;
        if t < DENSE_THREADS {
            self.dense.get(t).copied().unwrap_or(NONE)
        } else {
            self.more.get(&thread).copied().unwrap_or(NONE)
        }
    }
}

/// Largest magnitude of a time (ns) the model takes.
pub const MAX_TIME_NS: i64 = 1 << 61;

fn plausible_time(t: i64) -> bool {
    (-MAX_TIME_NS..=MAX_TIME_NS).contains(&t)
}

/// Entries of the call-site cache of a rank builder (a power of two).
const SITE_CACHE: usize = 64;

/// Builds the [`RankData`] of one rank from its rows in file order.
pub struct RankBuilder {
    data: RankData,
    names: Interner,
    classes: Vec<Class>,
    /// Per name id: an MPI-IO or one-sided call (kept as an [`OpEv`]).
    op_names: Vec<bool>,
    site_addrs: Vec<u64>,
    site_ids: FastMap<u64, u32>,
    /// Recently seen sites: (address, index), by a hash of the address.
    site_cache: [(u64, u32); SITE_CACHE],
    comm_ids: Vec<u64>,
    comm_map: FastMap<u64, u32>,
    /// Last call of each thread (completions belong to it).
    last_call: LastCall,
    reqs: Requests,
    unfinished: Vec<u32>,
    t_max: i64,
    init_site: Option<u64>,
    /// Rows left out for times no clock gives ([`MAX_TIME_NS`]).
    skipped: u64,
    /// Hardware counters per (local site, local name) of the calls.
    site_counters: FastMap<(u32, u16), Vec<u64>>,
}

/// What a rank builder produced, with its local tables.
pub struct BuiltRank {
    pub data: RankData,
    names: Vec<std::sync::Arc<str>>,
    sites: Vec<u64>,
    comms: Vec<u64>,
    init_site: Option<u64>,
}

fn opt_i32(v: Option<i32>) -> i32 {
    v.unwrap_or(i32::MIN)
}

impl RankBuilder {
    pub fn new(rank: i32, completeness: Completeness) -> RankBuilder {
        RankBuilder {
            data: RankData::new(rank, completeness),
            names: Interner::default(),
            classes: Vec::new(),
            op_names: Vec::new(),
            site_addrs: Vec::new(),
            site_ids: FastMap::default(),
            site_cache: [(0, NONE); SITE_CACHE],
            comm_ids: Vec::new(),
            comm_map: FastMap::default(),
            last_call: LastCall::default(),
            reqs: Requests::default(),
            unfinished: Vec::new(),
            t_max: i64::MIN,
            init_site: None,
            skipped: 0,
            site_counters: FastMap::default(),
        }
    }

    /// Names the hardware counters of the rank's rows (`RankMeta::counters`,
    /// the order of their values); the first names given stay.
    pub fn set_counter_names<S: AsRef<str>>(&mut self, names: impl IntoIterator<Item = S>) {
        if self.data.counter_names.is_empty() {
            self.data.counter_names = names.into_iter().map(|s| s.as_ref().to_string()).collect();
        }
    }

    /// Adds the hardware counters of a call row (its compute interval,
    /// values in the order of [`RankBuilder::set_counter_names`]) to the
    /// rank's sums for the call's site and name. Call it right after the
    /// row's `push_row` made `calls` calls (`calls` is the count before).
    pub fn call_counters(&mut self, calls_before: usize, values: &[u64]) {
        let n = self.data.counter_names.len();
        if self.data.calls.len() <= calls_before || n == 0 {
            return;
        }
        let c = self.data.calls.at(self.data.calls.len() - 1);
        let sums = self.site_counters.entry((c.site, c.name)).or_insert_with(|| vec![0; n]);
        for (s, v) in sums.iter_mut().zip(values) {
            *s = s.wrapping_add(*v);
        }
    }

    /// Number of calls so far.
    pub fn calls_len(&self) -> usize {
        self.data.calls.len()
    }

    /// Rows left out so far for impossible times (reported by the loader).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Reserves room for `rows` rows. Pages of the vectors are only touched
    /// as they fill, so over-reserving costs address space, not memory, and
    /// saves the copies of growing.
    pub fn reserve(&mut self, rows: usize) {
        self.data.calls.reserve(rows);
        self.data.sends.reserve(rows / 2);
        self.data.recvs.reserve(rows / 2);
    }

    /// The local id of a call or region name.
    pub fn name_id(&mut self, name: &str) -> u16 {
        let id = self.names.id(name);
        if id as usize == self.classes.len() {
            self.classes.push(classify(name));
            self.op_names.push(crate::iorma::is_op(name));
        }
        id
    }

    /// The local id of call site `addr` reached by call path `path` (a
    /// site of several paths is as many sites, one per path).
    fn site(&mut self, addr: u64, path: Option<u32>) -> u32 {
        // The journal's packing: one word for the pair.
        let addr = match path {
            Some(p) => trace_format::record::site_with_path(addr, p),
            None => addr,
        };
        // A program calls MPI from few places: most lookups hit the cache.
        let slot = ((addr ^ (addr >> 6) ^ (addr >> 12)) as usize) & (SITE_CACHE - 1);
        let (a, i) = self.site_cache[slot];
        if a == addr && i != NONE {
            return i;
        }
        let i = match self.site_ids.get(&addr) {
            Some(&i) => i,
            None => {
                let i = self.site_addrs.len() as u32;
                self.site_addrs.push(addr);
                self.site_ids.insert(addr, i);
                i
            }
        };
        self.site_cache[slot] = (addr, i);
        i
    }

    fn comm(&mut self, id: Option<u64>) -> u32 {
        let Some(id) = id else { return NONE };
        if self.comm_ids.first() == Some(&id) {
            return 0;
        }
        if let Some(&i) = self.comm_map.get(&id) {
            return i;
        }
        let i = self.comm_ids.len() as u32;
        self.comm_ids.push(id);
        self.comm_map.insert(id, i);
        i
    }

    fn p2p<R: RowFields>(&mut self, r: &R, post: u32, done: u32) -> P2p {
        P2p {
            comm: self.comm(r.comm()),
            peer: opt_i32(r.peer()),
            tag: opt_i32(r.tag()),
            seq: r.seq().filter(|&s| (0..NONE as i64).contains(&s)).map(|s| s as u32).unwrap_or(NONE),
            bytes: r.bytes().unwrap_or(-1),
            post,
            done,
        }
    }

    fn coll<R: RowFields>(&mut self, r: &R, post: u32, done: u32) -> CollEv {
        // Calls with one count for both buffers record no receive size:
        // what they receive is what they contribute (every member of
        // Allreduce, Scan and Exscan; the root of Reduce; the others of Bcast).
        let recv_bytes = r.recv_bytes().or_else(|| {
            let name = self.names.names.get(r.name() as usize)?;
            let base = name.strip_suffix("_c").unwrap_or(name);
            let base = base.strip_suffix("_init").unwrap_or(base);
            let base = base.strip_prefix("MPI_I").or(base.strip_prefix("MPI_"))?.to_ascii_lowercase();
            let is_root = r.root().is_some_and(|root| root == self.data.rank);
            match base.as_str() {
                "allreduce" | "scan" | "exscan" => r.bytes(),
                "reduce" if is_root => r.bytes(),
                "bcast" if r.root().is_some() && !is_root => r.bytes(),
                _ => None,
            }
        });
        CollEv {
            comm: self.comm(r.comm()),
            seq: r.seq().filter(|&s| (0..NONE as i64).contains(&s)).map(|s| s as u32).unwrap_or(NONE),
            post,
            done,
            bytes: r.bytes().unwrap_or(-1),
            recv_bytes: recv_bytes.unwrap_or(-1),
            root: opt_i32(r.root()),
            op: opt_i32(r.op()),
        }
    }

    /// Adds one row (rows of one thread must come in the order recorded).
    pub fn push(&mut self, r: &Row) {
        self.push_row(r)
    }

    /// [`RankBuilder::push`] for any row.
    pub fn push_row<R: RowFields>(&mut self, r: &R) {
        // A time beyond ±2^61 ns (73 years) is not one a clock gave: the
        // row is damaged. Within it, the difference of any two times fits
        // in an i64, which the analyses rely on.
        if !plausible_time(r.t_start()) || r.t_end().is_some_and(|t| !plausible_time(t)) {
            self.skipped += 1;
            return;
        }
        self.data.rows += 1;
        self.t_max = self.t_max.max(r.t_end().unwrap_or(r.t_start())).max(r.t_start());
        match r.kind() {
            Kind::Call => self.push_call(r),
            Kind::Completion => self.push_completion(r),
            Kind::RegionBegin | Kind::RegionEnd => self.data.regions.push(RegionEv {
                t: r.t_start(),
                name: r.name(),
                begin: r.kind() == Kind::RegionBegin,
            }),
        }
    }

    fn push_call<R: RowFields>(&mut self, r: &R) {
        let idx = self.data.calls.len() as u32;
        let site = self.site(r.site().unwrap_or(0), r.path());
        let class = self.classes.get(r.name() as usize).copied().unwrap_or(Class::Other);
        if self.init_site.is_none() && r.site().is_some() {
            let n = &self.names.names[r.name() as usize];
            if &**n == "MPI_Init" || &**n == "MPI_Init_thread" {
                self.init_site = r.site();
            }
        }
        let mut fl = 0;
        if r.t_end().is_none() {
            fl |= call_flags::UNFINISHED;
            self.unfinished.push(idx);
        }
        if r.rc().is_some_and(|rc| rc != 0) {
            fl |= call_flags::FAILED;
        }
        self.data.calls.push(CallEv {
            t_start: r.t_start(),
            t_end: r.t_end().unwrap_or(r.t_start()),
            name: r.name(),
            flags: fl,
            site,
            thread: r.thread().clamp(0, u16::MAX as i32) as u16,
        });
        self.last_call.set(r.thread(), idx);
        if self.op_names.get(r.name() as usize).copied().unwrap_or(false) {
            let comm = self.comm(r.comm());
            self.data.ops.push(OpEv {
                call: idx,
                bytes: r.bytes().unwrap_or(-1),
                peer: r.peer().unwrap_or(i32::MIN),
                comm,
                handle: r.seq().unwrap_or(NO_HANDLE),
            });
        }
        let blocking_done = if r.t_end().is_some() { idx } else { NONE };
        let register = |b: &mut RankBuilder, kind: ReqKind, entity: u32| {
            if let Some(q) = r.request() {
                b.reqs.insert(q, Req { kind, entity });
            }
        };
        match class {
            Class::Send | Class::Sendrecv => {
                self.start(ReqKind::Send, r, idx, blocking_done);
            }
            Class::Isend => {
                let e = self.start(ReqKind::Send, r, idx, NONE);
                let both = self.names.names[r.name() as usize].starts_with("MPI_Isendrecv");
                register(self, if both { ReqKind::SendRecv } else { ReqKind::Send }, e);
            }
            Class::Recv => {
                self.start(ReqKind::Recv, r, idx, blocking_done);
            }
            Class::Irecv => {
                let e = self.start(ReqKind::Recv, r, idx, NONE);
                register(self, ReqKind::Recv, e);
            }
            Class::SendInit => register(self, ReqKind::Send, NONE),
            Class::RecvInit => register(self, ReqKind::Recv, NONE),
            Class::Start => {
                if let Some(req) = r.request().and_then(|q| self.reqs.get(q)) {
                    let e = self.start(req.kind, r, idx, NONE);
                    register(self, req.kind, e);
                }
            }
            Class::Coll { nonblocking, .. } => {
                if self.names.names[r.name() as usize].ends_with("_init") {
                    register(self, ReqKind::Coll, NONE);
                } else if nonblocking {
                    let e = self.start(ReqKind::Coll, r, idx, NONE);
                    register(self, ReqKind::Coll, e);
                } else {
                    self.start(ReqKind::Coll, r, idx, blocking_done);
                }
            }
            _ => {}
        }
    }

    /// Records the operation a call started (a send to a real rank, a
    /// receive not from `MPI_PROC_NULL`, a numbered collective); returns its
    /// index, or [`NONE`] if there is nothing to record.
    fn start<R: RowFields>(&mut self, kind: ReqKind, r: &R, post: u32, done: u32) -> u32 {
        match kind {
            ReqKind::Send if r.peer().is_some_and(|p| p >= 0) => {
                let s = self.p2p(r, post, done);
                self.data.sends.push(s);
                self.data.sends.len() as u32 - 1
            }
            ReqKind::Recv if r.peer().is_some_and(|p| p != -1) => {
                let s = self.p2p(r, post, done);
                self.data.recvs.push(s);
                self.data.recvs.len() as u32 - 1
            }
            ReqKind::Coll if r.seq().is_some() && r.comm().is_some() => {
                let c = self.coll(r, post, done);
                self.data.colls.push(c);
                self.data.colls.len() as u32 - 1
            }
            _ => NONE,
        }
    }

    fn push_completion<R: RowFields>(&mut self, r: &R) {
        if r.flags() & flags::UNKNOWN_REQUEST != 0 {
            return;
        }
        let done = self.last_call.get(r.thread());
        if done == NONE {
            return;
        }
        let class = self.classes.get(r.name() as usize).copied().unwrap_or(Class::Other);
        let cancelled = r.flags() & flags::CANCELLED != 0;
        if class == Class::Sendrecv {
            // The receive half of a Sendrecv, completed by the call itself.
            if r.peer().is_some_and(|p| p >= 0) && !cancelled {
                let s = self.p2p(r, done, done);
                self.data.recvs.push(s);
            }
            return;
        }
        let Some(q) = r.request() else { return };
        let persistent = r.flags() & flags::PERSISTENT != 0;
        let req = if persistent { self.reqs.get(q) } else { self.reqs.remove(q) };
        let Some(req) = req else { return };
        if persistent {
            self.reqs.insert(q, Req { entity: NONE, ..req });
        }
        if req.entity == NONE {
            return;
        }
        let e = req.entity as usize;
        match req.kind {
            ReqKind::Send => {
                self.data.sends.set_done(e, done);
                if cancelled {
                    let mut s = self.data.sends.at(e);
                    s.peer = i32::MIN;
                    self.data.sends.set(e, s);
                }
            }
            ReqKind::Recv => {
                let post = self.data.recvs.post(e);
                let mut s = self.p2p(r, post, done);
                if cancelled || r.peer().is_none_or(|p| p < 0) {
                    s.peer = i32::MIN;
                }
                self.data.recvs.set(e, s);
            }
            ReqKind::Coll => self.data.colls[e].done = done,
            ReqKind::SendRecv => {
                self.data.sends.set_done(e, done);
                // The receive half, posted by the same call.
                if !cancelled && r.peer().is_some_and(|p| p >= 0) {
                    let post = self.data.sends.post(e);
                    let s = self.p2p(r, post, done);
                    self.data.recvs.push(s);
                }
            }
        }
    }

    /// Finishes the rank: ends unfinished calls at the last time known and
    /// sorts the calls by start time (only needed with several threads).
    pub fn finish(mut self) -> BuiltRank {
        let t_max = self.t_max;
        for &i in &self.unfinished {
            let mut c = self.data.calls.at(i as usize);
            c.t_end = t_max.max(c.t_start);
            self.data.calls.set(i as usize, c);
        }
        let calls = &mut self.data.calls;
        if !calls.is_sorted_by_start() {
            let mut order: Vec<u32> = (0..calls.len() as u32).collect();
            order.sort_by_key(|&i| (calls.t_start(i as usize), i));
            let mut new_index = vec![0u32; calls.len()];
            for (new, &old) in order.iter().enumerate() {
                new_index[old as usize] = new as u32;
            }
            calls.permute(&order);
            let map = |i: u32| if i != NONE { new_index[i as usize] } else { i };
            self.data.sends.remap_calls(map);
            self.data.recvs.remap_calls(map);
            for c in &mut self.data.colls {
                c.post = map(c.post);
                c.done = map(c.done);
            }
            for o in &mut self.data.ops {
                o.call = map(o.call);
            }
            self.data.ops.sort_by_key(|o| o.call);
        }
        self.data.calls.seal();
        self.data.sends.seal();
        self.data.recvs.seal();
        self.data.colls.shrink_to_fit();
        self.data.regions.shrink_to_fit();
        self.data.regions.sort_by_key(|r| r.t);
        let mut sc: Vec<((u32, u16), Vec<u64>)> = self.site_counters.into_iter().collect();
        sc.sort_unstable_by_key(|e| e.0);
        self.data.site_counters = sc;
        BuiltRank {
            data: self.data,
            names: self.names.names,
            sites: self.site_addrs,
            comms: self.comm_ids,
            init_site: self.init_site,
        }
    }
}

/// A rank's data and the maps from its local ids to the trace's.
struct Remap {
    data: RankData,
    names: Vec<u16>,
    site_base: u32,
    comms: Vec<u32>,
}

impl Remap {
    fn apply(&mut self) {
        let d = &mut self.data;
        let names = &self.names;
        let base = self.site_base;
        d.calls.remap(|n| names[n as usize], |s| s + base);
        for ((site, name), _) in &mut d.site_counters {
            (*site, *name) = (*site + base, names[*name as usize]);
        }
        for r in &mut d.regions {
            r.name = self.names[r.name as usize];
        }
        let comms = &self.comms;
        let remap = |c: u32| if c != NONE { comms[c as usize] } else { c };
        d.sends.remap_comms(remap);
        d.recvs.remap_comms(remap);
        for c in &mut d.colls {
            c.comm = remap(c.comm);
        }
        for o in &mut d.ops {
            o.comm = remap(o.comm);
        }
    }
}

/// Assembles a model from built ranks: interns names, sites and
/// communicators trace-wide and places ranks at their index.
pub fn assemble(
    meta: Meta,
    built: Vec<BuiltRank>,
    comm_tables: Vec<trace_format::side::CommInfo>,
    problems: Vec<Problem>,
) -> Model {
    let mut names = Interner::default();
    let mut module_ids = Interner::default();
    let mut model = Model { meta, problems, ..Default::default() };
    let mut comm_index: HashMap<u64, u32> = HashMap::new();
    for c in comm_tables {
        if let std::collections::hash_map::Entry::Vacant(v) = comm_index.entry(c.id) {
            v.insert(model.comms.len() as u32);
            model.comms.push(CommDesc { id: c.id, members: c.members, name: c.name, call: c.call });
        }
    }
    let size = built.iter().map(|b| b.data.rank + 1).max().unwrap_or(0).max(model.meta.ranks as i32).max(0) as usize;
    let mut slots: Vec<Option<RankData>> = (0..size).map(|_| None).collect();
    let mut remaps = Vec::with_capacity(built.len());
    for b in built {
        let name_map: Vec<u16> = b.names.iter().map(|n| names.id(n)).collect();
        let site_base = model.sites.len() as u32;
        let init = b.init_site;
        let rank_meta = model.meta.rank_meta.iter().find(|m| m.process.rank == b.data.rank);
        // The rank's call paths, their frames placed in modules like sites.
        let path_base = model.paths.len() as u32;
        let rank_paths = rank_meta.map_or(&[][..], |m| &m.paths[..]);
        for frames in rank_paths {
            let frames = frames
                .iter()
                .map(|&addr| {
                    let (module, offset) = match rank_meta.and_then(|m| m.locate(addr)).filter(|_| addr != 0) {
                        Some((path, off)) => (module_ids.id(path) as u32, off),
                        None => (NONE, 0),
                    };
                    Frame { addr, module, offset }
                })
                .collect();
            model.paths.push(CallPath { rank: b.data.rank, frames });
        }
        for &packed in &b.sites {
            let word = trace_format::record::Record { site: packed, ..Default::default() };
            let addr = word.site_addr();
            let path = match word.path() {
                Some(p) if (p as usize) < rank_paths.len() => path_base + p,
                _ => NONE,
            };
            let located = rank_meta.and_then(|m| m.locate(addr)).filter(|_| addr != 0);
            let (module, offset) = match located {
                Some((path, off)) => (module_ids.id(path) as u32, off),
                None => (NONE, 0),
            };
            let key = if module != NONE && offset < 1 << 44 {
                // Disjoint from the fallback keys, exact for one module's offsets.
                i64::MIN | ((module as i64) << 44) | offset as i64
            } else {
                match init {
                    Some(i) => addr.wrapping_sub(i) as i64,
                    None => addr as i64,
                }
            };
            model.sites.push(Site { rank: b.data.rank, addr, key, module, offset, path });
        }
        let comm_map: Vec<u32> = b
            .comms
            .iter()
            .map(|&id| {
                *comm_index.entry(id).or_insert_with(|| {
                    model.comms.push(CommDesc { id, members: Vec::new(), name: None, call: "?".into() });
                    model.comms.len() as u32 - 1
                })
            })
            .collect();
        remaps.push(Remap { data: b.data, names: name_map, site_base, comms: comm_map });
    }
    // Rewrite the ranks' local ids as trace-wide ones, in parallel.
    let cells: Vec<std::sync::Mutex<Remap>> = remaps.into_iter().map(std::sync::Mutex::new).collect();
    crate::par_map(&cells, |c| c.lock().unwrap_or_else(|e| e.into_inner()).apply());
    for c in cells {
        let d = c.into_inner().unwrap_or_else(|e| e.into_inner()).data;
        let r = d.rank;
        if r >= 0 && (r as usize) < size {
            slots[r as usize] = Some(d);
        } else {
            model.problems.push(Problem {
                file: None,
                rank: Some(r),
                what: "rank number out of range; ignored".into(),
            });
        }
    }
    model.ranks = slots
        .into_iter()
        .enumerate()
        .map(|(r, d)| d.unwrap_or_else(|| RankData::new(r as i32, Completeness::Missing)))
        .collect();
    model.names = names.names;
    model.modules = module_ids.names;
    model.clock_shift = vec![0; model.ranks.len()];
    if model.meta.ranks == 0 {
        model.meta.ranks = model.ranks.len() as u32;
    }
    model
}

/// Feeds trace-format events (journals, or a [`trace_format::Trace`]) to a builder.
pub fn push_events(b: &mut RankBuilder, events: &[Event]) {
    for e in events {
        let name = b.name_id(&e.call);
        let before = b.calls_len();
        b.push(&Row {
            thread: e.thread,
            kind: e.kind,
            name,
            t_start: e.t_start,
            t_end: e.t_end,
            rc: e.rc,
            site: e.site,
            comm: e.comm,
            peer: e.peer,
            tag: e.tag,
            bytes: e.bytes,
            seq: e.seq,
            request: e.request,
            root: e.root,
            op: e.op,
            recv_bytes: e.recv_bytes,
            flags: e.flags,
            path: e.path,
        });
        if let Some(v) = &e.counters {
            b.call_counters(before, v);
        }
    }
}

/// Builds a model from a trace opened with [`trace_format::Trace::open`]
/// (convenient for small traces; [`load`] streams instead).
pub fn from_trace(trace: &trace_format::Trace) -> Model {
    let built = trace
        .ranks
        .values()
        .map(|r| {
            let mut b = RankBuilder::new(r.rank, r.completeness.clone());
            if let Some(m) = &r.meta {
                b.set_counter_names(&m.counters);
            }
            push_events(&mut b, &r.events);
            b.finish()
        })
        .collect();
    let problems = trace.problems.iter().map(|p| Problem { file: None, rank: None, what: p.clone() }).collect();
    assemble(trace.meta.clone(), built, trace.comms.values().cloned().collect(), problems)
}

/// Rows per decoded batch: small enough that a batch's columns stay in the
/// cache between decoding and conversion.
pub const BATCH_ROWS: usize = 8192;

/// Columns of the events table the loader reads: [`BASE_COLUMNS`] and
/// the hardware counters' (`trace_format::columns::name::COUNTERS`).
pub static COLUMNS: std::sync::LazyLock<Vec<&'static str>> =
    std::sync::LazyLock::new(|| BASE_COLUMNS.iter().chain(name::COUNTERS).copied().collect());

/// The columns of the events table the loader reads but counters.
pub const BASE_COLUMNS: &[&str] = &[
    name::THREAD,
    name::KIND,
    name::CALL,
    name::T_START,
    name::DURATION,
    name::RC,
    name::SITE,
    name::COMM,
    name::PEER,
    name::TAG,
    name::BYTES,
    name::SEQ,
    name::REQUEST,
    name::ROOT,
    name::OP,
    name::RECV_BYTES,
    name::FLAGS,
    name::PATH,
];

/// Row `i` of a batch, its kind, name and start already read; the other
/// fields are read from the columns only where the builder asks.
struct BatchRow<'c, 'a> {
    c: &'c EventColumns<'a>,
    i: usize,
    kind: Kind,
    name: u16,
    t0: i64,
}

impl RowFields for BatchRow<'_, '_> {
    #[inline]
    fn thread(&self) -> i32 {
        self.c.thread(self.i)
    }
    #[inline]
    fn kind(&self) -> Kind {
        self.kind
    }
    #[inline]
    fn name(&self) -> u16 {
        self.name
    }
    #[inline]
    fn t_start(&self) -> i64 {
        self.t0
    }
    #[inline]
    fn t_end(&self) -> Option<i64> {
        self.c.t_end(self.i)
    }
    #[inline]
    fn rc(&self) -> Option<i32> {
        self.c.rc(self.i)
    }
    #[inline]
    fn site(&self) -> Option<u64> {
        self.c.site(self.i)
    }
    #[inline]
    fn path(&self) -> Option<u32> {
        self.c.path(self.i)
    }
    #[inline]
    fn comm(&self) -> Option<u64> {
        self.c.comm(self.i)
    }
    #[inline]
    fn peer(&self) -> Option<i32> {
        self.c.peer(self.i)
    }
    #[inline]
    fn tag(&self) -> Option<i32> {
        self.c.tag(self.i)
    }
    #[inline]
    fn bytes(&self) -> Option<i64> {
        self.c.bytes(self.i)
    }
    #[inline]
    fn seq(&self) -> Option<i64> {
        self.c.seq(self.i)
    }
    #[inline]
    fn request(&self) -> Option<i32> {
        self.c.request(self.i)
    }
    #[inline]
    fn root(&self) -> Option<i32> {
        self.c.root(self.i)
    }
    #[inline]
    fn op(&self) -> Option<i32> {
        self.c.op(self.i)
    }
    #[inline]
    fn recv_bytes(&self) -> Option<i64> {
        self.c.recv_bytes(self.i)
    }
    #[inline]
    fn flags(&self) -> u8 {
        self.c.flags(self.i)
    }
}

/// What reading the events of one rank gave: its built rank (none if its
/// file was unreadable), rank metadata, communicators (journals carry
/// them; an events file's are in its comms file) and problems.
#[derive(Default)]
pub struct RankRead {
    built: Option<BuiltRank>,
    rank_meta: Option<trace_format::RankMeta>,
    comms: Vec<trace_format::side::CommInfo>,
    problems: Vec<Problem>,
}

/// Builds one rank of the model from the batches of its events file as
/// they are read: by [`load`], or by a viewer that reads each batch once
/// for its level of detail too ([`load_read`]).
pub struct ParquetRank {
    rank: i32,
    path: std::path::PathBuf,
    builder: RankBuilder,
    rank_meta: Option<trace_format::RankMeta>,
    announced: i64,
    problems: Vec<Problem>,
    /// Why the file could not be read (no rank is built then).
    failed: Option<Error>,
}

impl ParquetRank {
    /// Starts the rank `rank` of the events file `path`, opened as `batches`.
    pub fn start(path: &Path, rank: i32, batches: &trace_format::stream::EventBatches) -> ParquetRank {
        let mut problems = Vec::new();
        if let Some(v) = batches.schema_version {
            if v > trace_format::SCHEMA_VERSION {
                problems.push(Problem {
                    file: Some(path.display().to_string()),
                    rank: Some(rank),
                    what: format!(
                        "schema version {v} is newer than this tool's ({}); reading the columns it knows",
                        trace_format::SCHEMA_VERSION
                    ),
                });
            }
        }
        let completeness = match &batches.rank_meta {
            Some(m) if m.finalized => Completeness::Complete,
            _ => Completeness::Partial { reason: "did not finalize (converted after the job)".into() },
        };
        let mut builder = RankBuilder::new(rank, completeness);
        builder.reserve(batches.rows_to_reserve());
        ParquetRank {
            rank,
            path: path.to_path_buf(),
            builder,
            rank_meta: batches.rank_meta.clone(),
            announced: batches.rows,
            problems,
            failed: None,
        }
    }

    /// Adds the rows of the next batch (or notes that its columns are
    /// unusable: the file is then unreadable).
    pub fn push(&mut self, columns: Result<&EventColumns<'_>, &ColumnError>) {
        let c = match columns {
            Ok(c) => c,
            Err(e) => {
                self.failed.get_or_insert(Error::Corrupt {
                    path: self.path.clone(),
                    what: format!("column `{}` missing or of a wrong type", e.column()),
                });
                return;
            }
        };
        let b = &mut self.builder;
        let name_map: Vec<u16> = c.call().values().iter().map(|s| b.name_id(s)).collect();
        let mut bad_kind = 0usize;
        let counters = c.counter_names().next().is_some();
        if counters {
            b.set_counter_names(c.counter_names());
        }
        for i in 0..c.num_rows() {
            let Some(kind) = c.kind(i) else {
                bad_kind += 1;
                continue;
            };
            let name = match c.call().key(i) {
                Some(k) => name_map[k as usize],
                None => b.name_id("<unknown call>"),
            };
            let before = b.calls_len();
            b.push_row(&BatchRow { c, i, kind, name, t0: c.t_start(i) });
            if let Some(v) = counters.then(|| c.counters(i)).flatten() {
                b.call_counters(before, &v);
            }
        }
        if bad_kind > 0 {
            self.problems.push(Problem {
                file: Some(self.path.display().to_string()),
                rank: Some(self.rank),
                what: format!("{bad_kind} rows of unknown kind skipped"),
            });
        }
    }

    /// The file is damaged here (`what`: what is wrong, without the path,
    /// which the problem names); the rows read so far are kept.
    pub fn damaged(&mut self, what: &dyn std::fmt::Display) {
        self.problems.push(Problem {
            file: Some(self.path.display().to_string()),
            rank: Some(self.rank),
            what: format!("{what}; {} of {} rows read", self.builder.data.rows, self.announced),
        });
    }

    /// The rank as read.
    pub fn finish(self) -> RankRead {
        let mut problems = self.problems;
        match self.failed {
            Some(e) => {
                let what = match e {
                    Error::Corrupt { what, .. } => format!("corrupt: {what}"),
                    e => e.to_string(),
                };
                problems.push(Problem { file: Some(self.path.display().to_string()), rank: Some(self.rank), what });
                RankRead { problems, ..Default::default() }
            }
            None => {
                if let Some(p) = skipped_problem(Some(self.path.display().to_string()), self.rank, &self.builder) {
                    problems.push(p);
                }
                RankRead { built: Some(self.builder.finish()), rank_meta: self.rank_meta, comms: Vec::new(), problems }
            }
        }
    }
}

/// Streams one rank's events file into the model's builder.
fn load_parquet_rank(path: &Path, rank: i32) -> RankRead {
    match trace_format::stream::rank_batches(path, rank, &COLUMNS, BATCH_ROWS) {
        Ok(batches) => {
            let mut loader = ParquetRank::start(path, rank, &batches);
            for batch in batches {
                match batch {
                    Ok(b) => {
                        let columns = EventColumns::new(&b);
                        loader.push(columns.as_ref());
                        if columns.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        loader.damaged(&e.what());
                        break;
                    }
                }
            }
            loader.finish()
        }
        Err(e) => unreadable_rank(path, rank, &e),
    }
}

/// The problem of the rows a builder left out for impossible times, if any.
fn skipped_problem(file: Option<String>, rank: i32, b: &RankBuilder) -> Option<Problem> {
    (b.skipped() > 0).then(|| Problem {
        file,
        rank: Some(rank),
        what: format!("{} rows with impossible times (beyond ±2^61 ns) left out", b.skipped()),
    })
}

/// A rank whose events file could not be opened.
pub fn unreadable_rank(path: &Path, rank: i32, e: &trace_format::Error) -> RankRead {
    let mut p = Problem::of_error(Some(rank), e);
    p.file.get_or_insert_with(|| path.display().to_string());
    RankRead { problems: vec![p], ..Default::default() }
}

/// A rank read from its journals (a run that did not convert them).
pub fn journal_rank(rank: i32, read: &Result<trace_format::RankJournals, trace_format::Error>) -> RankRead {
    let rj = match read {
        Ok(rj) => rj,
        Err(e) => {
            let problems = vec![Problem::of_error(Some(rank), e)];
            return RankRead { problems, ..Default::default() };
        }
    };
    let completeness = if rj.complete {
        Completeness::Complete
    } else {
        let last = rj.problems.last().map(|p| p.trim_start_matches(&format!("rank {rank}: ")).to_string());
        Completeness::Partial { reason: last.unwrap_or_else(|| "journal incomplete".into()) }
    };
    let mut b = RankBuilder::new(rank, completeness);
    b.set_counter_names(&rj.meta.counters);
    push_events(&mut b, &rj.events);
    // These lines name their rank or file already.
    let mut problems: Vec<Problem> =
        rj.problems.iter().map(|p| Problem { file: None, rank: None, what: p.clone() }).collect();
    problems.extend(skipped_problem(None, rank, &b));
    RankRead { built: Some(b.finish()), rank_meta: Some(rj.meta.clone()), comms: rj.comms.clone(), problems }
}

/// The ranks of a trace already read (by a viewer, along with its level
/// of detail), by rank; [`load_read`] reads only those missing here.
#[derive(Default)]
pub struct RanksRead {
    ranks: Mutex<HashMap<i32, RankRead>>,
}

impl RanksRead {
    /// Keeps what reading `rank` gave.
    pub fn insert(&self, rank: i32, read: RankRead) {
        self.ranks.lock().unwrap_or_else(|e| e.into_inner()).insert(rank, read);
    }

    fn take(&self, rank: i32) -> Option<RankRead> {
        self.ranks.lock().unwrap_or_else(|e| e.into_inner()).remove(&rank)
    }
}

/// Loads the trace in `dir`: every rank's Parquet file, or its journals if
/// it has none (crashed run), and symbolizes its call sites
/// ([`symbolize_sites`]). Fails only if `dir` holds no trace at all.
pub fn load(dir: &Path) -> Result<Model, Error> {
    load_with_progress(dir, &|_, _| {})
}

/// Gives the call sites their function and `file:line` from the debug
/// information of the modules the trace recorded (where those files are
/// still there); returns how many distinct sites were resolved. A module
/// that cannot be read, or was rebuilt since the trace was taken, is listed
/// once in [`Model::problems`].
pub fn symbolize_sites(m: &mut Model, sym: &mut trace_format::Symbolizer) -> usize {
    for r in &m.meta.rank_meta {
        sym.expect_build_ids(&r.build_ids);
    }
    let mut troubles: Vec<String> = Vec::new();
    let n = m.symbolize(|s, path| {
        let site = sym.call_at(path, s.offset);
        if let Some(p) = site.problem {
            // One line per module: the first problem met in it.
            if !troubles.iter().any(|t| t.starts_with(path)) {
                troubles.push(if p.starts_with(path) { p } else { format!("{path}: {p}") });
            }
        }
        Some(Location { function: site.function, file: site.file?, line: site.line.unwrap_or(0) })
    });
    m.problems.extend(troubles.into_iter().map(|t| Problem {
        file: None,
        rank: None,
        what: format!("call sites not symbolized: {t}"),
    }));
    n
}

/// What the loading threads collect: ranks, communicators, problems, rank metadata.
type Loaded = (Vec<BuiltRank>, Vec<trace_format::side::CommInfo>, Vec<Problem>, Vec<trace_format::RankMeta>);

enum Job {
    Parquet(i32, std::path::PathBuf),
    Journal(i32),
}

/// [`load`] with a given number of threads.
pub fn load_with_threads(dir: &Path, threads: usize) -> Result<Model, Error> {
    load_observed(dir, threads, &|_, _| {}, None)
}

/// [`load`] that tells `progress(ranks read, ranks to read)` after each
/// rank (from the loading threads), e.g. to draw a progress bar.
pub fn load_with_progress(dir: &Path, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Model, Error> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut m = load_observed(dir, threads, progress, None)?;
    symbolize_sites(&mut m, &mut trace_format::Symbolizer::new());
    Ok(m)
}

/// [`load`] of a trace whose ranks a viewer has read already (along with
/// its level of detail): the ranks in `ranks_read` are taken from there,
/// the others read now.
pub fn load_read(dir: &Path, ranks_read: &RanksRead) -> Result<Model, Error> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut m = load_observed(dir, threads, &|_, _| {}, Some(ranks_read))?;
    symbolize_sites(&mut m, &mut trace_format::Symbolizer::new());
    Ok(m)
}

fn load_observed(
    dir: &Path,
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
    ranks_read: Option<&RanksRead>,
) -> Result<Model, Error> {
    let meta_path = dir.join(layout::META);
    // The rank count and the files worth reading, checked (see
    // trace_format::inventory): files of ranks outside meta.json, FIFOs and
    // devices are reported and left out here.
    let inv = trace_format::inventory::Inventory::scan(dir).map_err(|e| match e {
        trace_format::Error::NotATrace(p) => Error::NotATrace(p),
        e => Error::Trace(e),
    })?;
    let mut problems: Vec<Problem> = inv.problems.iter().map(|e| Problem::of_error(None, e)).collect();
    if inv.meta_missing {
        problems.push(Problem {
            file: Some(meta_path.display().to_string()),
            rank: None,
            what: "missing; rebuilt from the rank files".into(),
        });
    }
    if let Some(m) = &inv.meta {
        if m.schema_version > trace_format::SCHEMA_VERSION {
            problems.push(Problem {
                file: Some(meta_path.display().to_string()),
                rank: None,
                what: format!(
                    "schema version {} is newer than this tool's ({}); reading what it knows",
                    m.schema_version,
                    trace_format::SCHEMA_VERSION
                ),
            });
        }
    }
    let jobs: Vec<Job> = inv
        .events
        .iter()
        .map(|(&r, p)| Job::Parquet(r, p.clone()))
        .chain(inv.journal_only().map(|(r, _)| Job::Journal(r)))
        .collect();
    let next = AtomicUsize::new(0);
    let out: Mutex<Loaded> = Mutex::new((Vec::new(), Vec::new(), Vec::new(), Vec::new()));
    let done = AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(job) = jobs.get(i) else { break };
        let read = match job {
            Job::Parquet(rank, path) => {
                let rank = *rank;
                let mut read = ranks_read.and_then(|r| r.take(rank)).unwrap_or_else(|| load_parquet_rank(path, rank));
                // The communicators of a rank whose events are left out are not read either.
                if read.built.is_some() {
                    let cpath = layout::comms(dir, rank);
                    match trace_format::table::read_comms(&cpath) {
                        Ok(c) => read.comms = c,
                        Err(e) => read.problems.push(Problem::of_error(Some(rank), &e)),
                    }
                }
                read
            }
            Job::Journal(rank) => ranks_read
                .and_then(|r| r.take(*rank))
                .unwrap_or_else(|| journal_rank(*rank, &trace_format::read_rank_journals(dir, *rank))),
        };
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        o.0.extend(read.built);
        o.1.extend(read.comms);
        o.2.extend(read.problems);
        o.3.extend(read.rank_meta);
        drop(o);
        progress(done.fetch_add(1, Ordering::Relaxed) + 1, jobs.len());
    };
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            s.spawn(work);
        }
    });
    let (mut built, comms, probs, rank_metas) = out.into_inner().unwrap_or_else(|e| e.into_inner());
    built.sort_by_key(|b| b.data.rank);
    let mut probs = probs;
    probs.sort_by(|a, b| (a.rank, &a.what).cmp(&(b.rank, &b.what)));
    problems.extend(probs);
    let meta = match inv.meta.clone() {
        Some(m) => m,
        None => inv.rebuilt_meta(rank_metas, "analyzers"),
    };
    let present: std::collections::BTreeSet<i32> = built.iter().map(|b| b.data.rank).collect();
    // A line per missing rank, or per run of more than 3 (a job killed
    // early may miss most of its ranks).
    let mut r = 0;
    while r < meta.ranks as i32 {
        if present.contains(&r) {
            r += 1;
            continue;
        }
        let first = r;
        while r < meta.ranks as i32 && !present.contains(&r) {
            r += 1;
        }
        let what = "no events file or journal read: rank missing";
        if r - first <= 3 {
            problems.extend((first..r).map(|k| Problem { file: None, rank: Some(k), what: what.into() }));
        } else {
            problems.push(Problem { file: None, rank: None, what: format!("ranks {first} to {}: {what}", r - 1) });
        }
    }
    Ok(assemble(meta, built, comms, problems))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::event;

    /// A thread number from a damaged file (a journal header, the thread
    /// column) sizes no table: the builder used to make one entry per
    /// thread up to it, 8 GB for 0x7fffffff. Completions still find the
    /// last call of their thread.
    #[test]
    fn a_huge_thread_number_sizes_nothing() {
        let mut b = RankBuilder::new(0, Completeness::Complete);
        let mut irecv = event(0, Kind::Call, "MPI_Irecv", 100, 110);
        (irecv.thread, irecv.peer, irecv.tag, irecv.request, irecv.comm) =
            (i32::MAX, Some(1), Some(3), Some(9), Some(0));
        let mut wait = event(0, Kind::Call, "MPI_Wait", 200, 300);
        wait.thread = i32::MAX;
        let mut done = event(0, Kind::Completion, "MPI_Irecv", 300, 300);
        (done.thread, done.peer, done.tag, done.request, done.comm) = (i32::MAX, Some(1), Some(3), Some(9), Some(0));
        let mut other = event(0, Kind::Call, "MPI_Barrier", 150, 160);
        other.thread = 1;
        push_events(&mut b, &[irecv, other, wait, done]);
        assert!(b.last_call.dense.len() <= DENSE_THREADS && b.last_call.more.len() == 1);
        let r = b.finish();
        assert_eq!(r.data.recvs.len(), 1);
        // Posted by the Irecv (call 0), completed in the Wait (call 2).
        let calls: Vec<(i64, i64)> = r.data.calls.iter().map(|c| (c.t_start, c.t_end)).collect();
        assert_eq!(calls, vec![(100, 110), (150, 160), (200, 300)]);
        assert_eq!((r.data.recvs.post(0), r.data.recvs.done(0)), (0, 2));
    }

    #[test]
    fn rows_with_impossible_times_are_left_out_and_counted() {
        let mut b = RankBuilder::new(0, Completeness::Complete);
        let ok = event(0, Kind::Call, "MPI_Barrier", 100, 200);
        let bad = event(0, Kind::Call, "MPI_Barrier", i64::MIN + 5, i64::MAX);
        push_events(&mut b, &[ok, bad]);
        assert_eq!(b.skipped(), 1);
        assert_eq!(b.finish().data.calls.len(), 1);
    }
}
