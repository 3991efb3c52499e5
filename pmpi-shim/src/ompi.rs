//! Open MPI's native ABI under the recording core, which speaks the MPICH
//! ABI.
//!
//! The recording wrappers (`imp`, `special`, `rec`, `state`, `life`) were
//! written for MPICH-ABI handles (`int`s whose bits say the object kind),
//! MPICH's constants and `MPI_Status`. Rather than a second copy of them,
//! build.rs generates for Open MPI, from the same API table, two thin
//! translation layers (`ompi_imp` and `ompi_pmpi` in `wrappers.rs`):
//!
//! * the exported `MPI_X` jumps (when [`crate::detect::ABI`] is Open MPI's)
//!   to `ompi_imp::MPI_X`, which takes the application's Open MPI arguments,
//!   translates them to the MPICH ABI ([`to_core`]...), calls the recording
//!   wrapper `imp::MPI_X` and translates its outputs back;
//! * the recording wrapper calls `pmpi::MPI_X`, which under Open MPI goes to
//!   `ompi_pmpi::MPI_X`: MPICH-ABI arguments translated to Open MPI's
//!   ([`to_ompi`]...), Open MPI's `PMPI_X` called, outputs translated back.
//!
//! What is translated: handles (predefined ones by name, Open MPI's
//! `&ompi_mpi_comm_world` to MPICH's `MPI_COMM_WORLD`; others interned here
//! as MPICH-style handles of the right object kind, so a handle the library
//! reuses maps to the same `int`, as MPICH reuses its handles); statuses
//! (layout and fields); the special ranks (`MPI_ANY_SOURCE`,
//! `MPI_PROC_NULL`, `MPI_ROOT`), the error classes the core looks at,
//! `MPI_IN_PLACE`, `MPI_STATUS(ES)_IGNORE` and `MPI_COMM_TYPE_SHARED`. Each
//! mapping is a bijection, so what the application gets back is exactly what
//! Open MPI returned. Callbacks and everything else pass untouched: Open MPI
//! calls the application's functions with its own arguments.

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};
use std::sync::Mutex;

use mpi_api::abi::{self, HANDLE_KIND_INDIRECT};
use mpi_api::ompi;

/// Kinds of handles, indexing the translation tables.
pub mod kind {
    pub const COMM: usize = 0;
    pub const GROUP: usize = 1;
    pub const DATATYPE: usize = 2;
    pub const OP: usize = 3;
    pub const REQUEST: usize = 4;
    pub const ERRHANDLER: usize = 5;
    pub const INFO: usize = 6;
    pub const WIN: usize = 7;
    pub const MESSAGE: usize = 8;
    pub const SESSION: usize = 9;
    pub const COUNT: usize = 10;
}

/// The kind of a handle C type (`"MPI_Comm"`), if it is one.
pub fn kind_of(ctype: &str) -> Option<usize> {
    Some(match ctype {
        "MPI_Comm" => kind::COMM,
        "MPI_Group" => kind::GROUP,
        "MPI_Datatype" => kind::DATATYPE,
        "MPI_Op" => kind::OP,
        "MPI_Request" => kind::REQUEST,
        "MPI_Errhandler" => kind::ERRHANDLER,
        "MPI_Info" => kind::INFO,
        "MPI_Win" => kind::WIN,
        "MPI_Message" => kind::MESSAGE,
        "MPI_Session" => kind::SESSION,
        _ => return None,
    })
}

/// MPICH's object bits for each kind (messages are requests in MPICH).
const OBJ: [u32; kind::COUNT] = [
    abi::OBJ_COMM,
    abi::OBJ_GROUP,
    abi::OBJ_DATATYPE,
    abi::OBJ_OP,
    abi::OBJ_REQUEST,
    abi::OBJ_ERRHANDLER,
    abi::OBJ_INFO,
    abi::OBJ_WIN,
    abi::OBJ_REQUEST,
    abi::OBJ_SESSION,
];

/// One kind's translations.
#[derive(Default)]
struct Table {
    /// Open MPI address -> MPICH-ABI handle.
    to_core: HashMap<usize, c_int>,
    /// MPICH-ABI predefined handle -> Open MPI address.
    predefined: HashMap<c_int, usize>,
    /// Open MPI addresses of interned handles, by index.
    interned: Vec<usize>,
}

static TABLES: Mutex<Option<[Table; kind::COUNT]>> = Mutex::new(None);

/// Fills the predefined handles' translations (Open MPI's global objects
/// found by name); called once when the process's MPI is Open MPI.
pub fn init() {
    let mut tables: [Table; kind::COUNT] = Default::default();
    for (name, ctype, symbol) in ompi::PREDEFINED {
        let (Some(k), Some(c)) = (kind_of(ctype), abi::CONSTANTS.iter().find(|c| c.name == *name)) else {
            continue;
        };
        let Ok(sym) = std::ffi::CString::new(*symbol) else { continue };
        // SAFETY: dlsym with a NUL-terminated name.
        let addr = unsafe { libc::dlsym(libc::RTLD_DEFAULT, sym.as_ptr()) } as usize;
        if addr == 0 {
            continue;
        }
        let h = c.value as c_int;
        tables[k].to_core.entry(addr).or_insert(h);
        tables[k].predefined.entry(h).or_insert(addr);
    }
    *TABLES.lock().unwrap_or_else(|p| p.into_inner()) = Some(tables);
}

/// The MPICH-ABI handle of an Open MPI handle of kind `k`.
pub fn to_core(p: *mut c_void, k: usize) -> c_int {
    let addr = p as usize;
    if addr == 0 {
        // Not a valid Open MPI handle: an invalid MPICH one of that kind.
        return abi::make_handle(abi::HANDLE_KIND_INVALID, OBJ[k], 0x3ff_ffff);
    }
    let mut g = TABLES.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tables) = g.as_mut() else { return 0 };
    let t = &mut tables[k];
    if let Some(&h) = t.to_core.get(&addr) {
        return h;
    }
    let h = abi::make_handle(HANDLE_KIND_INDIRECT, OBJ[k], t.interned.len() as u32);
    t.interned.push(addr);
    t.to_core.insert(addr, h);
    h
}

/// The Open MPI handle of an MPICH-ABI handle of kind `k` (null if it never
/// came from Open MPI and is not predefined).
pub fn to_ompi(h: c_int, k: usize) -> *mut c_void {
    let g = TABLES.lock().unwrap_or_else(|p| p.into_inner());
    let Some(tables) = g.as_ref() else { return std::ptr::null_mut() };
    let t = &tables[k];
    let addr = if abi::handle_kind(h) == HANDLE_KIND_INDIRECT && abi::handle_obj(h) == OBJ[k] {
        t.interned.get((h as u32 & 0x3ff_ffff) as usize).copied()
    } else {
        t.predefined.get(&h).copied()
    };
    addr.unwrap_or(0) as *mut c_void
}

/// Special ranks, Open MPI's to MPICH's (a bijection on `int`).
pub fn rank_to_core(r: c_int) -> c_int {
    match r {
        ompi::MPI_ANY_SOURCE => abi::MPI_ANY_SOURCE,
        ompi::MPI_PROC_NULL => abi::MPI_PROC_NULL,
        ompi::MPI_ROOT => abi::MPI_ROOT,
        // Open MPI's value for MPICH's MPI_ROOT, which Open MPI does not use.
        abi::MPI_ROOT => ompi::MPI_ROOT,
        r => r,
    }
}

/// Inverse of [`rank_to_core`].
pub fn rank_to_ompi(r: c_int) -> c_int {
    match r {
        abi::MPI_ANY_SOURCE => ompi::MPI_ANY_SOURCE,
        abi::MPI_PROC_NULL => ompi::MPI_PROC_NULL,
        abi::MPI_ROOT => ompi::MPI_ROOT,
        ompi::MPI_ROOT => abi::MPI_ROOT,
        r => r,
    }
}

/// Error classes the core reads (`MPI_ERR_IN_STATUS`, `MPI_ERR_PENDING`),
/// Open MPI's to MPICH's; a bijection (MPICH's value of `MPI_ERR_PENDING`'s
/// slot takes the value they displace).
pub fn error_to_core(e: c_int) -> c_int {
    match e {
        ompi::MPI_ERR_IN_STATUS => abi::MPI_ERR_IN_STATUS,
        ompi::MPI_ERR_PENDING => abi::MPI_ERR_PENDING,
        abi::MPI_ERR_IN_STATUS => ompi::MPI_ERR_PENDING,
        e => e,
    }
}

/// Inverse of [`error_to_core`].
pub fn error_to_ompi(e: c_int) -> c_int {
    match e {
        abi::MPI_ERR_IN_STATUS => ompi::MPI_ERR_IN_STATUS,
        abi::MPI_ERR_PENDING => ompi::MPI_ERR_PENDING,
        ompi::MPI_ERR_PENDING => abi::MPI_ERR_IN_STATUS,
        e => e,
    }
}

/// `MPI_COMM_TYPE_SHARED` (Open MPI 0, MPICH 1), swapped with the value it
/// displaces.
pub fn split_type_to_core(t: c_int) -> c_int {
    match t {
        ompi::MPI_COMM_TYPE_SHARED => abi::MPI_COMM_TYPE_SHARED,
        abi::MPI_COMM_TYPE_SHARED => ompi::MPI_COMM_TYPE_SHARED,
        t => t,
    }
}

/// Inverse of [`split_type_to_core`] (a swap is its own inverse).
pub fn split_type_to_ompi(t: c_int) -> c_int {
    split_type_to_core(t)
}

/// A buffer argument: `MPI_IN_PLACE` translated (`MPI_BOTTOM` is 0 in both).
pub fn buffer_to_core<T>(p: *mut T) -> *mut T {
    if p as usize == ompi::MPI_IN_PLACE {
        abi::MPI_IN_PLACE as *mut T
    } else if p as usize == abi::MPI_IN_PLACE {
        ompi::MPI_IN_PLACE as *mut T
    } else {
        p
    }
}

/// Inverse of [`buffer_to_core`] (a swap).
pub fn buffer_to_ompi<T>(p: *mut T) -> *mut T {
    buffer_to_core(p)
}

/// An Open MPI status as the core's.
pub fn status_to_core(s: &ompi::MPI_Status) -> abi::MPI_Status {
    let mut c = abi::MPI_Status {
        MPI_SOURCE: rank_to_core(s.MPI_SOURCE),
        MPI_TAG: s.MPI_TAG,
        MPI_ERROR: error_to_core(s.MPI_ERROR),
        ..Default::default()
    };
    c.set_byte_count(s._ucount as u64);
    c.set_cancelled(s._cancelled != 0);
    c
}

/// A core status as Open MPI's.
pub fn status_to_ompi(c: &abi::MPI_Status) -> ompi::MPI_Status {
    ompi::MPI_Status {
        MPI_SOURCE: rank_to_ompi(c.MPI_SOURCE),
        MPI_TAG: c.MPI_TAG,
        MPI_ERROR: error_to_ompi(c.MPI_ERROR),
        _cancelled: c_int::from(c.cancelled()),
        _ucount: c.byte_count() as usize,
    }
}

/// Statuses given by the application (`n` of them at `p`, null for
/// `MPI_STATUS(ES)_IGNORE`) as a core array and the pointer to pass.
///
/// # Safety
/// `p` is null or points to `n` statuses.
pub unsafe fn statuses_to_core(p: *const ompi::MPI_Status, n: usize) -> (Vec<abi::MPI_Status>, bool) {
    if p.is_null() {
        return (Vec::new(), true);
    }
    // SAFETY: the caller's contract.
    let s = unsafe { std::slice::from_raw_parts(p, n) };
    (s.iter().map(status_to_core).collect(), false)
}

/// Core statuses (`n` at `p`, or `MPI_STATUS(ES)_IGNORE`) as Open MPI's.
///
/// # Safety
/// `p` is MPICH's `MPI_STATUS_IGNORE` or points to `n` statuses.
pub unsafe fn statuses_to_ompi(p: *const abi::MPI_Status, n: usize) -> (Vec<ompi::MPI_Status>, bool) {
    if p as usize == abi::MPI_STATUS_IGNORE || p.is_null() {
        return (Vec::new(), true);
    }
    // SAFETY: the caller's contract.
    let s = unsafe { std::slice::from_raw_parts(p, n) };
    (s.iter().map(status_to_ompi).collect(), false)
}

/// Calls Open MPI's `PMPI_<name>` taking one handle and two `int*`, e.g.
/// `PMPI_Comm_size(comm, &size)` (the second is ignored if unused).
fn handle_query(name: &CStr, h: *mut c_void, a: &mut c_int, b: &mut c_int) -> bool {
    // SAFETY: dlsym with a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if f.is_null() {
        return false;
    }
    // SAFETY: every procedure passed here has the C prototype
    // `int (MPI_Comm, int*, ...)` in Open MPI; extra pointer arguments a
    // shorter prototype does not read are harmless in the x86-64 and
    // AArch64 calling conventions.
    let rc = unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void, *mut c_int, *mut c_int, *mut c_int) -> c_int>(
            f,
        )(h, a, b, &mut 0)
    };
    rc == 0
}

/// The length of the `sendtypes`/`recvtypes` arrays of an `MPI_Alltoallw`
/// family call on the Open MPI communicator `comm`: the (remote) group size,
/// or the topology's out-/in-degree for the neighborhood ones.
///
/// # Safety
/// `comm` is an Open MPI communicator handle, valid as the call requires.
pub unsafe fn w_len(comm: *mut c_void, neighbor: bool, send: bool) -> usize {
    let (mut a, mut b) = (0, 0);
    if !neighbor {
        let inter = handle_query(c"PMPI_Comm_test_inter", comm, &mut a, &mut b) && a != 0;
        let q = if inter { c"PMPI_Comm_remote_size" } else { c"PMPI_Comm_size" };
        return if handle_query(q, comm, &mut a, &mut b) { a.max(0) as usize } else { 0 };
    }
    let mut topo = 0;
    if !handle_query(c"PMPI_Topo_test", comm, &mut topo, &mut b) {
        return 0;
    }
    // Open MPI's MPI_CART, MPI_GRAPH and MPI_DIST_GRAPH.
    const CART: c_int = 1;
    const GRAPH: c_int = 2;
    const DIST_GRAPH: c_int = 3;
    let n = match topo {
        CART if handle_query(c"PMPI_Cartdim_get", comm, &mut a, &mut b) => 2 * a,
        GRAPH => {
            let mut rank = 0;
            // SAFETY: dlsym with a NUL-terminated name.
            let f = unsafe { libc::dlsym(libc::RTLD_NEXT, c"PMPI_Graph_neighbors_count".as_ptr()) };
            if f.is_null() || !handle_query(c"PMPI_Comm_rank", comm, &mut rank, &mut b) {
                return 0;
            }
            // SAFETY: `int MPI_Graph_neighbors_count(MPI_Comm, int rank, int *nneighbors)`,
            // `comm` valid by this function's contract.
            let rc = unsafe {
                std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void, c_int, *mut c_int) -> c_int>(f)(
                    comm, rank, &mut a,
                )
            };
            if rc == 0 {
                a
            } else {
                0
            }
        }
        // MPI_Dist_graph_neighbors_count(comm, &indegree, &outdegree, &weighted)
        DIST_GRAPH if handle_query(c"PMPI_Dist_graph_neighbors_count", comm, &mut a, &mut b) => {
            if send {
                b
            } else {
                a
            }
        }
        _ => 0,
    };
    n.max(0) as usize
}
