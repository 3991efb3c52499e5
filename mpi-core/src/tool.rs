//! The MPI tool information interface (`MPI_T`, MPI 4.0 chapter 15 / MPI
//! 3.1 section 14.3): what the library exposes and its sessions and handles.
//!
//! * Control variables are the library's tuning knobs, named as their
//!   environment variables (`MPICORE_EAGER_LIMIT`, ...), with the values the
//!   runtime uses. Knobs fixed at `MPI_Init` are `MPI_T_SCOPE_READONLY`
//!   (writes fail with `MPI_T_ERR_CVAR_SET_NEVER`); the collective size
//!   thresholds are read at each collective call and may be written while MPI
//!   runs (`MPI_T_SCOPE_ALL_EQ`: every rank must write the same value).
//! * Performance variables are counters of the point-to-point engine
//!   (`rt::p2p::COUNTERS`) and the lengths of its matching queues.
//! * Categories group them; there are no events; one time source (the clock
//!   of `MPI_Wtime`).
//!
//! The interface has its own lock and reference count, so it works before
//! `MPI_Init` and after `MPI_Finalize`; it reads runtime values through
//! `rt::try_with` (lock order: this module's lock, then the state lock).
//! The C boundary is `capi/tool.rs`; the variables are documented in
//! `mpi-core/TOOLS.md`.

use std::os::raw::c_int;
use std::sync::{Mutex, MutexGuard};

use mpi_api::abi::*;
use thiserror::Error;

use crate::coll::algo::Tune;
use crate::rt::{self, p2p::COUNTERS, State};

/// Errors of the tool interface, each one `MPI_T_ERR_*` code (`MPI_T`
/// calls return codes directly, no error handler is involved).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum ToolError {
    #[error("the tool interface is not initialized")]
    NotInitialized,
    #[error("invalid variable, category, enumeration item or source index")]
    InvalidIndex,
    #[error("no variable or category has this name")]
    InvalidName,
    #[error("invalid handle")]
    InvalidHandle,
    #[error("invalid performance-variable session")]
    InvalidSession,
    #[error("invalid argument")]
    Invalid,
    #[error("this control variable cannot be written now")]
    CvarSetNotNow,
    #[error("this control variable can never be written")]
    CvarSetNever,
    #[error("this performance variable cannot be started or stopped")]
    PvarNoStartStop,
    #[error("this performance variable cannot be written or reset")]
    PvarNoWrite,
}

impl ToolError {
    /// The `MPI_T_ERR_*` code of the error.
    pub fn code(self) -> c_int {
        match self {
            ToolError::NotInitialized => MPI_T_ERR_NOT_INITIALIZED,
            ToolError::InvalidIndex => MPI_T_ERR_INVALID_INDEX,
            ToolError::InvalidName => MPI_T_ERR_INVALID_NAME,
            ToolError::InvalidHandle => MPI_T_ERR_INVALID_HANDLE,
            ToolError::InvalidSession => MPI_T_ERR_INVALID_SESSION,
            ToolError::Invalid => MPI_T_ERR_INVALID,
            ToolError::CvarSetNotNow => MPI_T_ERR_CVAR_SET_NOT_NOW,
            ToolError::CvarSetNever => MPI_T_ERR_CVAR_SET_NEVER,
            ToolError::PvarNoStartStop => MPI_T_ERR_PVAR_NO_STARTSTOP,
            ToolError::PvarNoWrite => MPI_T_ERR_PVAR_NO_WRITE,
        }
    }
}

pub type ToolResult<T> = Result<T, ToolError>;

// ----- values ------------------------------------------------------------------

/// C type of a variable's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// `MPI_INT` (flags and enumerations).
    Int,
    /// `MPI_UNSIGNED_LONG` (sizes, times, counts).
    ULong,
    /// `MPI_CHAR`: a NUL-terminated string of at most [`STR_COUNT`] bytes.
    Str,
}

/// Elements of a string variable (its longest value, NUL included).
pub const STR_COUNT: usize = 64;

impl Ty {
    pub fn datatype(self) -> MPI_Datatype {
        match self {
            Ty::Int => MPI_INT,
            Ty::ULong => MPI_UNSIGNED_LONG,
            Ty::Str => MPI_CHAR,
        }
    }
    /// Elements of a handle's value (`count` of the handle allocation).
    pub fn count(self) -> usize {
        match self {
            Ty::Str => STR_COUNT,
            _ => 1,
        }
    }
}

/// A variable's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    Int(c_int),
    ULong(u64),
    Str(String),
}

// ----- enumerations --------------------------------------------------------------

/// An `MPI_T_enum`: the handle is the address of one of these statics.
#[derive(Debug)]
pub struct EnumDef {
    pub name: &'static str,
    pub items: &'static [(c_int, &'static str)],
}

/// Values of `MPICORE_BIND`.
pub static BIND_ENUM: EnumDef = EnumDef { name: "mpicore_bind", items: &[(0, "none"), (1, "core")] };

/// Values of `MPICORE_PMI`: the protocol spoken with the launcher.
pub static PMI_ENUM: EnumDef = EnumDef { name: "mpicore_pmi", items: &[(0, "singleton"), (1, "pmi1"), (2, "pmi2")] };

/// Every enumeration, to validate handles.
pub static ENUMS: &[&EnumDef] = &[&BIND_ENUM, &PMI_ENUM];

/// The enumeration a C handle points to, if it is one of ours.
pub fn enum_of(p: *const std::ffi::c_void) -> ToolResult<&'static EnumDef> {
    ENUMS
        .iter()
        .copied()
        .find(|e| std::ptr::eq(*e as *const EnumDef as *const std::ffi::c_void, p))
        .ok_or(ToolError::InvalidHandle)
}

// ----- categories ----------------------------------------------------------------

/// A category; variables name theirs by index.
pub struct Category {
    pub name: &'static str,
    pub desc: &'static str,
    pub subcategories: &'static [usize],
}

const CAT_P2P: usize = 1;
const CAT_RUNTIME: usize = 2;
const CAT_COLL: usize = 3;

pub static CATEGORIES: &[Category] = &[
    Category { name: "mpicore", desc: "Everything mpi-core exposes through MPI_T.", subcategories: &[CAT_P2P, CAT_RUNTIME, CAT_COLL] },
    Category { name: "mpicore_p2p", desc: "Point-to-point engine: protocols, shared-memory rings, traffic and matching queues.", subcategories: &[] },
    Category { name: "mpicore_runtime", desc: "Start-up and waiting: the launcher protocol, how a waiting rank uses its CPU (spinning, yielding), binding, oversubscription.", subcategories: &[] },
    Category { name: "mpicore_coll", desc: "Collective algorithms and their size thresholds.", subcategories: &[] },
];

// ----- control variables ----------------------------------------------------------

/// Where a control variable's value comes from.
pub enum Source {
    /// A runtime value (`None`: MPI is not running).
    Runtime(fn(Option<&State>) -> Val),
    /// A collective size threshold (bytes or ranks), writable while MPI runs.
    TuneSize(fn(&mut Tune) -> &mut usize),
    /// A forced collective algorithm (`auto` when none is forced).
    TuneAlg(fn(&mut Tune) -> &mut Option<String>),
}

pub struct Cvar {
    pub name: &'static str,
    pub desc: &'static str,
    pub ty: Ty,
    pub scope: c_int,
    pub category: usize,
    pub enumtype: Option<&'static EnumDef>,
    pub source: Source,
}

impl Cvar {
    pub fn verbosity(&self) -> c_int {
        MPI_T_VERBOSITY_TUNER_BASIC
    }

    /// The value the library uses (before `MPI_Init`: what the environment
    /// sets, see each description).
    pub fn read(&self) -> Val {
        let tune = || rt::try_with(|st| st.coll.tune.clone()).unwrap_or_default();
        match &self.source {
            Source::Runtime(f) => rt::try_with(|st| f(Some(st))).unwrap_or_else(|| f(None)),
            Source::TuneSize(f) => Val::ULong(*f(&mut tune()) as u64),
            Source::TuneAlg(f) => Val::Str(f(&mut tune()).clone().unwrap_or_else(|| "auto".into())),
        }
    }

    /// Whether `MPI_T_cvar_write` may ever set the variable.
    pub fn writable(&self) -> bool {
        matches!(self.source, Source::TuneSize(_))
    }

    /// Sets the variable (`MPI_T_cvar_write`).
    pub fn write(&self, v: u64) -> ToolResult<()> {
        let Source::TuneSize(f) = &self.source else { return Err(ToolError::CvarSetNever) };
        let v = usize::try_from(v).map_err(|_| ToolError::Invalid)?;
        // A zero segment would make pipelined algorithms loop forever.
        if v == 0 && self.name == "MPICORE_COLL_SEGMENT" {
            return Err(ToolError::Invalid);
        }
        rt::try_with(|st| *f(&mut st.coll.tune) = v).ok_or(ToolError::CvarSetNotNow)
    }
}

fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some()
}

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn oversubscribed(st: Option<&State>) -> bool {
    st.map_or_else(|| env_flag("MPICORE_OVERSUBSCRIBED"), |s| s.oversubscribed)
}

/// A read-only knob of the point-to-point engine or the wait loop.
const fn knob(name: &'static str, ty: Ty, category: usize, desc: &'static str, f: fn(Option<&State>) -> Val) -> Cvar {
    Cvar { name, desc, ty, scope: MPI_T_SCOPE_READONLY, category, enumtype: None, source: Source::Runtime(f) }
}

/// A collective size threshold (writable).
const fn coll_size(name: &'static str, desc: &'static str, f: fn(&mut Tune) -> &mut usize) -> Cvar {
    Cvar {
        name,
        desc,
        ty: Ty::ULong,
        scope: MPI_T_SCOPE_ALL_EQ,
        category: CAT_COLL,
        enumtype: None,
        source: Source::TuneSize(f),
    }
}

/// A forced collective algorithm (read-only).
const fn coll_alg(name: &'static str, desc: &'static str, f: fn(&mut Tune) -> &mut Option<String>) -> Cvar {
    Cvar {
        name,
        desc,
        ty: Ty::Str,
        scope: MPI_T_SCOPE_READONLY,
        category: CAT_COLL,
        enumtype: None,
        source: Source::TuneAlg(f),
    }
}

pub static CVARS: &[Cvar] = &[
    knob("MPICORE_EAGER_LIMIT", Ty::ULong, CAT_P2P,
        "Largest message (bytes) sent eagerly through the ring; larger ones use rendezvous. Default 16384, capped at half a ring at MPI_Init.",
        |st| Val::ULong(st.map_or_else(rt::p2p::configured_eager_limit, |s| s.engine.eager_limit()) as u64)),
    knob("MPICORE_TCP_EAGER_LIMIT", Ty::ULong, CAT_P2P,
        "Largest message (bytes) sent eagerly to a rank on another host over TCP; larger ones use rendezvous. Default 65536, at most a record's largest payload.",
        |st| Val::ULong(st.and_then(|s| s.engine.tcp.as_ref()).map_or_else(rt::tcp::configured_eager_limit, |t| t.eager_limit) as u64)),
    knob("MPICORE_RING_SIZE", Ty::ULong, CAT_P2P,
        "Bytes of each shared-memory ring between two ranks of a host. Chosen at MPI_Init from the number of local ranks unless set; before MPI_Init the value set (0 if none).",
        |st| Val::ULong(st.map_or_else(|| env_num("MPICORE_RING_SIZE").unwrap_or(0), |s| s.engine.ring_size() as u64))),
    knob("MPICORE_NO_CMA", Ty::Int, CAT_P2P,
        "1 if rendezvous data is not read from the sender with process_vm_readv but streamed through the ring: MPICORE_NO_CMA is set, or the kernel refused a cross-process read. Before MPI_Init: whether it is set.",
        |st| Val::Int(st.map_or_else(|| env_flag("MPICORE_NO_CMA"), |s| !s.engine.cma_enabled()) as c_int)),
    knob("MPICORE_SPIN_US", Ty::ULong, CAT_RUNTIME,
        "Microseconds a waiting rank busy-polls before it yields (default 2000, or 0 when ranks outnumber CPUs).",
        |st| Val::ULong(rt::backoff_policy(oversubscribed(st)).0)),
    knob("MPICORE_YIELD_US", Ty::ULong, CAT_RUNTIME,
        "Microseconds a waiting rank then yields the CPU before it sleeps on its futex (default 5000, or 50 when ranks outnumber CPUs).",
        |st| Val::ULong(rt::backoff_policy(oversubscribed(st)).1)),
    knob("MPICORE_RECV_YIELD_US", Ty::ULong, CAT_RUNTIME,
        "Microseconds a blocking receive from a peer on this host looks at that peer's ring between yields before it posts a request, when ranks outnumber CPUs (default 50; 0: off).",
        |_| Val::ULong(rt::recv_yield_window().map_or(0, |d| d.as_micros() as u64))),
    Cvar {
        name: "MPICORE_BIND",
        desc: "CPU binding policy: core (each rank pinned to one CPU, when ranks do not outnumber CPUs) or none (MPICORE_BIND=none, 0, no or off).",
        ty: Ty::Int,
        scope: MPI_T_SCOPE_READONLY,
        category: CAT_RUNTIME,
        enumtype: Some(&BIND_ENUM),
        source: Source::Runtime(|_| Val::Int(rt::binding_requested() as c_int)),
    },
    Cvar {
        name: "MPICORE_PMI",
        desc: "Protocol spoken with the launcher: pmi1, pmi2 (MPICORE_PMI=2, or Slurm's SLURM_MPI_TYPE=pmi2) or singleton (no launcher). Before MPI_Init: the protocol the environment asks for.",
        ty: Ty::Int,
        scope: MPI_T_SCOPE_READONLY,
        category: CAT_RUNTIME,
        enumtype: Some(&PMI_ENUM),
        source: Source::Runtime(|st| {
            Val::Int(st.map_or_else(|| if rt::pmi::wants_v2() { 2 } else { 1 }, |s| s.pmi.version()) as c_int)
        }),
    },
    knob("MPICORE_OVERSUBSCRIBED", Ty::Int, CAT_RUNTIME,
        "1 if this host runs more of the job's ranks than it has CPUs (or MPICORE_OVERSUBSCRIBED is set): waiting ranks yield early.",
        |st| Val::Int(oversubscribed(st) as c_int)),
    Cvar {
        name: "MPICORE_ASYNC_PROGRESS",
        desc: "1 if a helper thread advances nonblocking collectives while the program computes (default); 0 with MPICORE_ASYNC_PROGRESS=0, no, off or none.",
        ty: Ty::Int,
        scope: MPI_T_SCOPE_READONLY,
        category: CAT_COLL,
        enumtype: None,
        source: Source::Runtime(|_| Val::Int(crate::coll::async_progress_requested() as c_int)),
    },
    coll_alg("MPICORE_COLL_ALLREDUCE", "Allreduce algorithm forced (auto: chosen by size).", |t| &mut t.allreduce),
    coll_alg("MPICORE_COLL_BCAST", "Bcast algorithm forced (auto: chosen by size).", |t| &mut t.bcast),
    coll_alg("MPICORE_COLL_REDUCE", "Reduce algorithm forced (auto: chosen by size).", |t| &mut t.reduce),
    coll_alg("MPICORE_COLL_ALLGATHER", "Allgather algorithm forced (auto: chosen by size).", |t| &mut t.allgather),
    coll_alg("MPICORE_COLL_ALLTOALL", "Alltoall algorithm forced (auto: chosen by size).", |t| &mut t.alltoall),
    coll_size("MPICORE_COLL_ALLREDUCE_SHORT", "Allreduce: largest message (bytes) for recursive doubling.", |t| &mut t.allreduce_short),
    coll_size("MPICORE_COLL_ALLREDUCE_RING", "Allreduce: smallest message (bytes) for the ring algorithm (sizes not a power of two).", |t| &mut t.allreduce_ring),
    coll_size("MPICORE_COLL_ALLREDUCE_DIRECT", "Allreduce: largest message (bytes) for the one-round algorithm on oversubscribed hosts.", |t| &mut t.allreduce_direct),
    coll_size("MPICORE_COLL_BCAST_LONG", "Bcast: smallest message (bytes) for scatter + allgather.", |t| &mut t.bcast_long),
    coll_size("MPICORE_COLL_BCAST_LINEAR", "Bcast: largest message (bytes) for the linear algorithm on oversubscribed hosts.", |t| &mut t.bcast_linear),
    coll_size("MPICORE_COLL_REDUCE_SHORT", "Reduce: largest message (bytes) before reduce-scatter + gather is used (commutative operations).", |t| &mut t.reduce_short),
    coll_size("MPICORE_COLL_ALLGATHER_SHORT", "Allgather: largest total (bytes) for recursive doubling / Bruck.", |t| &mut t.allgather_short),
    coll_size("MPICORE_COLL_ALLTOALL_SHORT", "Alltoall: largest block (bytes) for Bruck (8 ranks or more).", |t| &mut t.alltoall_short),
    coll_size("MPICORE_COLL_ALLTOALL_MEDIUM", "Alltoall: largest block (bytes) for all-at-once exchange (pairwise above).", |t| &mut t.alltoall_medium),
    coll_size("MPICORE_COLL_GATHER_SHORT", "Gather/Scatter: largest total (block times ranks, bytes) for the binomial tree; linear above.", |t| &mut t.gather_short),
    coll_size("MPICORE_COLL_SEGMENT", "Segment (bytes) of the pipelined broadcast and reduction (not 0).", |t| &mut t.segment),
    coll_size("MPICORE_COLL_LINEAR_MAX", "With more ranks than cores, communicators up to this size use the one-round algorithms.", |t| &mut t.linear_max),
    coll_size("MPICORE_COLL_SHM_MAX", "Largest message per rank (bytes) of blocking collectives done in shared memory (0: never; at most 65536).", |t| &mut t.shm_max),
    coll_size("MPICORE_COLL_SHM_DIRECT", "Smallest block (bytes) of a blocking Allgather or Alltoall that each rank reads straight from the others' buffers, with a core per rank (0: never).", |t| &mut t.shm_direct),
    coll_size("MPICORE_COLL_SHM_PIECES", "Largest message (bytes) of a blocking Allreduce done in shared memory in pieces of 65536 bytes, with a core per rank (0: never).", |t| &mut t.shm_pieces),
];

// ----- performance variables -------------------------------------------------------

pub struct Pvar {
    pub name: &'static str,
    pub desc: &'static str,
    pub class: c_int,
    /// Counters start and stop with their handle and may be reset or
    /// written; levels and the peak are continuous and read-only.
    pub continuous: bool,
    pub category: usize,
    /// The raw value (`None`: MPI is not running).
    read: fn(Option<&State>) -> u64,
}

impl Pvar {
    pub fn readonly(&self) -> bool {
        self.continuous
    }
    pub fn raw(&self) -> u64 {
        rt::try_with(|st| (self.read)(Some(st))).unwrap_or_else(|| (self.read)(None))
    }
}

fn load(c: &std::sync::atomic::AtomicU64) -> u64 {
    c.load(std::sync::atomic::Ordering::Relaxed)
}

const fn counter(name: &'static str, desc: &'static str, read: fn(Option<&State>) -> u64) -> Pvar {
    Pvar { name, desc, class: MPI_T_PVAR_CLASS_COUNTER, continuous: false, category: CAT_P2P, read }
}

pub static PVARS: &[Pvar] = &[
    counter(
        "mpicore_p2p_sent_messages",
        "Point-to-point messages this rank sent (including those of collectives done with messages).",
        |_| load(&COUNTERS.sent_msgs),
    ),
    counter("mpicore_p2p_sent_bytes", "Bytes of the point-to-point messages this rank sent.", |_| {
        load(&COUNTERS.sent_bytes)
    }),
    counter(
        "mpicore_p2p_received_messages",
        "Point-to-point messages this rank received (counted when a receive matches them).",
        |_| load(&COUNTERS.recv_msgs),
    ),
    counter("mpicore_p2p_received_bytes", "Bytes of the point-to-point messages this rank received.", |_| {
        load(&COUNTERS.recv_bytes)
    }),
    Pvar {
        name: "mpicore_p2p_unexpected_queue",
        desc: "Messages that arrived before their receive was posted and wait in the unexpected queue now.",
        class: MPI_T_PVAR_CLASS_LEVEL,
        continuous: true,
        category: CAT_P2P,
        read: |st| st.map_or(0, |s| s.engine.unexpected.len() as u64),
    },
    Pvar {
        name: "mpicore_p2p_unexpected_peak",
        desc: "Most messages waiting in the unexpected queue at once since MPI_Init.",
        class: MPI_T_PVAR_CLASS_HIGHWATERMARK,
        continuous: true,
        category: CAT_P2P,
        read: |_| load(&COUNTERS.unexpected_peak),
    },
    Pvar {
        name: "mpicore_p2p_posted_queue",
        desc: "Receives posted and not yet matched now.",
        class: MPI_T_PVAR_CLASS_LEVEL,
        continuous: true,
        category: CAT_P2P,
        read: |st| st.map_or(0, |s| s.engine.posted_len() as u64),
    },
];

/// Control variables, performance variables and subcategories of category `c`.
pub fn category_members(c: usize) -> ToolResult<(Vec<usize>, Vec<usize>, &'static [usize])> {
    let cat = CATEGORIES.get(c).ok_or(ToolError::InvalidIndex)?;
    let cvars = (0..CVARS.len()).filter(|&i| CVARS[i].category == c).collect();
    let pvars = (0..PVARS.len()).filter(|&i| PVARS[i].category == c).collect();
    Ok((cvars, pvars, cat.subcategories))
}

// ----- sessions and handles --------------------------------------------------------

/// An object handed to C as a pointer: the address of its token, which is
/// unique while the object lives. C pointers are only compared, never
/// dereferenced.
struct Token(Box<u64>);

impl Token {
    fn new() -> Self {
        Token(Box::new(0))
    }
    fn addr(&self) -> usize {
        &*self.0 as *const u64 as usize
    }
}

struct CvarHandle {
    token: Token,
    var: usize,
}

/// A performance-variable handle of a session. A counter's value is
/// `accum` plus, while started, what the raw counter gained since `base`.
struct PvarHandle {
    token: Token,
    var: usize,
    started: bool,
    accum: u64,
    base: u64,
}

impl PvarHandle {
    fn value(&self) -> u64 {
        let p = &PVARS[self.var];
        if p.continuous {
            return p.raw();
        }
        if self.started {
            self.accum.wrapping_add(p.raw().wrapping_sub(self.base))
        } else {
            self.accum
        }
    }
    fn start(&mut self) -> ToolResult<()> {
        if PVARS[self.var].continuous {
            return Err(ToolError::PvarNoStartStop);
        }
        if !self.started {
            self.base = PVARS[self.var].raw();
            self.started = true;
        }
        Ok(())
    }
    fn stop(&mut self) -> ToolResult<()> {
        if PVARS[self.var].continuous {
            return Err(ToolError::PvarNoStartStop);
        }
        if self.started {
            self.accum = self.value();
            self.started = false;
        }
        Ok(())
    }
    fn write(&mut self, v: u64) -> ToolResult<()> {
        if PVARS[self.var].readonly() {
            return Err(ToolError::PvarNoWrite);
        }
        self.accum = v;
        self.base = PVARS[self.var].raw();
        Ok(())
    }
}

struct Session {
    token: Token,
    handles: Vec<PvarHandle>,
}

/// What a start/stop/reset applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    One(usize),
    /// `MPI_T_PVAR_ALL_HANDLES`.
    All,
}

/// The interface's state: how many `MPI_T_init_thread` are not finalized,
/// and the live handles and sessions.
pub struct Tool {
    refs: usize,
    cvar_handles: Vec<CvarHandle>,
    sessions: Vec<Session>,
}

static TOOL: Mutex<Tool> = Mutex::new(Tool { refs: 0, cvar_handles: Vec::new(), sessions: Vec::new() });

fn lock() -> MutexGuard<'static, Tool> {
    TOOL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `MPI_T_init_thread`: one more user of the interface.
pub fn init() {
    lock().refs += 1;
}

/// `MPI_T_finalize`: one user less; the last one frees every handle and session.
pub fn finalize() -> ToolResult<()> {
    let mut t = lock();
    if t.refs == 0 {
        return Err(ToolError::NotInitialized);
    }
    t.refs -= 1;
    if t.refs == 0 {
        t.cvar_handles.clear();
        t.sessions.clear();
    }
    Ok(())
}

/// Runs `f` on the interface's state if it is initialized.
pub fn with<R>(f: impl FnOnce(&mut Tool) -> ToolResult<R>) -> ToolResult<R> {
    let mut t = lock();
    if t.refs == 0 {
        return Err(ToolError::NotInitialized);
    }
    f(&mut t)
}

impl Tool {
    /// New handle of control variable `var`: (handle address, element count).
    pub fn cvar_alloc(&mut self, var: usize) -> ToolResult<(usize, usize)> {
        let cv = CVARS.get(var).ok_or(ToolError::InvalidIndex)?;
        let h = CvarHandle { token: Token::new(), var };
        let addr = h.token.addr();
        self.cvar_handles.push(h);
        Ok((addr, cv.ty.count()))
    }

    pub fn cvar_free(&mut self, addr: usize) -> ToolResult<()> {
        let i = self.cvar_handles.iter().position(|h| h.token.addr() == addr).ok_or(ToolError::InvalidHandle)?;
        self.cvar_handles.swap_remove(i);
        Ok(())
    }

    /// The control variable of handle `addr`.
    pub fn cvar_of(&self, addr: usize) -> ToolResult<&'static Cvar> {
        let h = self.cvar_handles.iter().find(|h| h.token.addr() == addr).ok_or(ToolError::InvalidHandle)?;
        Ok(&CVARS[h.var])
    }

    pub fn session_create(&mut self) -> usize {
        let s = Session { token: Token::new(), handles: Vec::new() };
        let addr = s.token.addr();
        self.sessions.push(s);
        addr
    }

    pub fn session_free(&mut self, addr: usize) -> ToolResult<()> {
        let i = self.session_index(addr)?;
        self.sessions.swap_remove(i);
        Ok(())
    }

    fn session_index(&self, addr: usize) -> ToolResult<usize> {
        self.sessions.iter().position(|s| s.token.addr() == addr).ok_or(ToolError::InvalidSession)
    }

    fn session(&mut self, addr: usize) -> ToolResult<&mut Session> {
        let i = self.session_index(addr)?;
        Ok(&mut self.sessions[i])
    }

    /// New handle of performance variable `var` in `session`: (handle
    /// address, element count). Continuous variables run from now on.
    pub fn pvar_alloc(&mut self, session: usize, var: usize) -> ToolResult<(usize, usize)> {
        let s = self.session(session)?;
        let p = PVARS.get(var).ok_or(ToolError::InvalidIndex)?;
        let h = PvarHandle { token: Token::new(), var, started: p.continuous, accum: 0, base: 0 };
        let addr = h.token.addr();
        s.handles.push(h);
        Ok((addr, 1))
    }

    pub fn pvar_free(&mut self, session: usize, addr: usize) -> ToolResult<()> {
        let s = self.session(session)?;
        let i = s.handles.iter().position(|h| h.token.addr() == addr).ok_or(ToolError::InvalidHandle)?;
        s.handles.remove(i);
        Ok(())
    }

    fn pvar_handle(&mut self, session: usize, addr: usize) -> ToolResult<&mut PvarHandle> {
        let s = self.session(session)?;
        s.handles.iter_mut().find(|h| h.token.addr() == addr).ok_or(ToolError::InvalidHandle)
    }

    /// Applies `op` to one handle, or to every handle of the session that
    /// `applies` (the others are skipped, as the standard says for
    /// `MPI_T_PVAR_ALL_HANDLES`).
    fn each(
        &mut self,
        session: usize,
        target: Target,
        applies: fn(&Pvar) -> bool,
        op: fn(&mut PvarHandle) -> ToolResult<()>,
    ) -> ToolResult<()> {
        match target {
            Target::One(addr) => op(self.pvar_handle(session, addr)?),
            Target::All => {
                for h in self.session(session)?.handles.iter_mut().filter(|h| applies(&PVARS[h.var])) {
                    op(h)?;
                }
                Ok(())
            }
        }
    }

    pub fn pvar_start(&mut self, session: usize, target: Target) -> ToolResult<()> {
        self.each(session, target, |p| !p.continuous, PvarHandle::start)
    }

    pub fn pvar_stop(&mut self, session: usize, target: Target) -> ToolResult<()> {
        self.each(session, target, |p| !p.continuous, PvarHandle::stop)
    }

    pub fn pvar_reset(&mut self, session: usize, target: Target) -> ToolResult<()> {
        self.each(session, target, |p| !p.readonly(), |h| h.write(0))
    }

    pub fn pvar_read(&mut self, session: usize, addr: usize) -> ToolResult<u64> {
        Ok(self.pvar_handle(session, addr)?.value())
    }

    pub fn pvar_write(&mut self, session: usize, addr: usize, v: u64) -> ToolResult<()> {
        self.pvar_handle(session, addr)?.write(v)
    }

    /// `MPI_T_pvar_readreset`: the value, then back to 0.
    pub fn pvar_readreset(&mut self, session: usize, addr: usize) -> ToolResult<u64> {
        let h = self.pvar_handle(session, addr)?;
        let v = h.value();
        h.write(0)?;
        Ok(v)
    }
}

/// Index of the entry named `name` among `names`.
pub fn index_of<'a>(mut names: impl Iterator<Item = &'a str>, name: &str) -> ToolResult<usize> {
    names.position(|n| n == name).ok_or(ToolError::InvalidName)
}

/// The one time source: the monotonic clock of `MPI_Wtime`, in nanoseconds.
pub mod source {
    pub const NAME: &str = "mpicore_clock";
    pub const DESC: &str = "CLOCK_MONOTONIC in nanoseconds, the clock of MPI_Wtime.";
    pub const TICKS_PER_SECOND: i64 = 1_000_000_000;

    pub fn now() -> i64 {
        (crate::rt::wtime() * TICKS_PER_SECOND as f64) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_consistent() {
        for (i, c) in CVARS.iter().enumerate() {
            assert!(c.category < CATEGORIES.len());
            assert_eq!(CVARS.iter().position(|d| d.name == c.name), Some(i), "duplicate {}", c.name);
            assert!(c.enumtype.is_none() || c.ty == Ty::Int);
        }
        for p in PVARS {
            assert!(p.category < CATEGORIES.len());
            assert_eq!(PVARS.iter().filter(|q| q.name == p.name && q.class == p.class).count(), 1);
        }
        // Every variable is reachable from the root category.
        let (c, p, subs) = category_members(0).unwrap();
        let mut n = (c.len(), p.len());
        for &s in subs {
            let (c, p, _) = category_members(s).unwrap();
            n = (n.0 + c.len(), n.1 + p.len());
        }
        assert_eq!(n, (CVARS.len(), PVARS.len()));
    }

    #[test]
    fn counter_handles_start_stop_reset() {
        let mut t = Tool { refs: 1, cvar_handles: Vec::new(), sessions: Vec::new() };
        let s = t.session_create();
        let (h, count) = t.pvar_alloc(s, 0).unwrap();
        assert_eq!(count, 1);
        assert_eq!(t.pvar_read(s, h), Ok(0));
        t.pvar_write(s, h, 41).unwrap();
        assert_eq!(t.pvar_read(s, h), Ok(41), "a stopped counter keeps its value");
        t.pvar_start(s, Target::All).unwrap();
        t.pvar_stop(s, Target::One(h)).unwrap();
        assert_eq!(t.pvar_readreset(s, h), Ok(41), "nothing was sent");
        assert_eq!(t.pvar_read(s, h), Ok(0));
        let (lvl, _) = t.pvar_alloc(s, 4).unwrap();
        assert_eq!(t.pvar_start(s, Target::One(lvl)), Err(ToolError::PvarNoStartStop));
        assert_eq!(t.pvar_reset(s, Target::One(lvl)), Err(ToolError::PvarNoWrite));
        t.pvar_reset(s, Target::All).unwrap();
        let other = t.session_create();
        assert_eq!(t.pvar_read(other, h), Err(ToolError::InvalidHandle));
        t.session_free(s).unwrap();
        assert_eq!(t.pvar_read(s, h), Err(ToolError::InvalidSession));
    }

    #[test]
    fn cvars_read_outside_mpi() {
        let i = index_of(CVARS.iter().map(|c| c.name), "MPICORE_COLL_SEGMENT").unwrap();
        assert_eq!(CVARS[i].read(), Val::ULong(Tune::default().segment as u64));
        assert_eq!(CVARS[i].write(4096), Err(ToolError::CvarSetNotNow));
        assert_eq!(CVARS[0].write(1), Err(ToolError::CvarSetNever));
        assert_eq!(index_of(CVARS.iter().map(|c| c.name), "nope"), Err(ToolError::InvalidName));
    }
}
