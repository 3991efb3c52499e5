//! Conversions between the standard ABI and the MPICH ABI: the generated
//! tables of predefined handles and constants (`conv.rs`, from
//! `mpi_api::stdabi`), and the helpers the generated entry points use for
//! pointers, arrays and statuses.
//!
//! Handles: a predefined standard handle (a small integer) maps to MPICH's
//! by table; the library's own handles are MPICH ints, zero-extended to a
//! pointer-sized value (never below 0x1000, so never a predefined one), so
//! both directions are O(1) and exact. Files are MPICH pointers, shifted by
//! 0x1000 so that none is the standard's `MPI_FILE_NULL` (0x118).

use std::ffi::c_void;
use std::os::raw::c_int;

use mpi_api::abi::MPI_Status as MpichStatus;
use mpi_api::stdabi::{self, MPI_Status as StdStatus, STD_PREDEFINED_LIMIT};

include!(concat!(env!("OUT_DIR"), "/conv.rs"));

/// MPICH handle the library rejects as invalid (kind "invalid").
const INVALID_HANDLE: c_int = 0;
/// Marks an MPICH handle, integer or status field the library did not
/// write (it never hands out handle 0 or writes `INT_MIN`).
pub const COMM_SENTINEL: c_int = 0;
pub const GROUP_SENTINEL: c_int = 0;
pub const DATATYPE_SENTINEL: c_int = 0;
pub const OP_SENTINEL: c_int = 0;
pub const REQUEST_SENTINEL: c_int = 0;
pub const ERRHANDLER_SENTINEL: c_int = 0;
pub const INFO_SENTINEL: c_int = 0;
pub const WIN_SENTINEL: c_int = 0;
pub const MESSAGE_SENTINEL: c_int = 0;
pub const SESSION_SENTINEL: c_int = 0;
pub const FILE_SENTINEL: *mut c_void = usize::MAX as *mut c_void;
pub const INT_SENTINEL: c_int = c_int::MIN;

const FILE_SHIFT: usize = 0x1000;
const STD_FILE_NULL: usize = 0x118;

/// `MPI_File` of the standard ABI to MPICH's.
pub fn file_in(v: usize) -> *mut c_void {
    match v {
        STD_FILE_NULL => std::ptr::null_mut(),
        v if v > FILE_SHIFT => (v - FILE_SHIFT) as *mut c_void,
        _ => FILE_SENTINEL,
    }
}

/// `MPI_File` of MPICH's ABI to the standard's.
pub fn file_out(v: *mut c_void) -> usize {
    if v.is_null() {
        STD_FILE_NULL
    } else {
        (v as usize).wrapping_add(FILE_SHIFT)
    }
}

/// Error codes beyond the table: added classes and codes shift from
/// MPICH's first user code to the standard's; any other value passes
/// unchanged (a program may store any int in `MPI_ERROR` and read it back).
pub fn user_code_in(v: c_int) -> c_int {
    if v >= stdabi::STD_FIRST_USER_CODE {
        (v - stdabi::STD_FIRST_USER_CODE).checked_add(stdabi::MPICH_FIRST_USER_CODE).unwrap_or(v)
    } else {
        v
    }
}

/// MPICH error codes beyond the table to the standard's (MPICH's
/// fault-tolerance classes 101..105 keep their values, which the standard
/// leaves free).
pub fn user_code_out(v: c_int) -> c_int {
    if v >= stdabi::MPICH_FIRST_USER_CODE {
        v - stdabi::MPICH_FIRST_USER_CODE + stdabi::STD_FIRST_USER_CODE
    } else {
        v
    }
}

/// `MPI_DISPLACEMENT_CURRENT` (-1 in the standard ABI) to MPICH's.
pub fn displacement_in(v: i64) -> i64 {
    if v == -1 {
        mpi_api::abi::MPI_DISPLACEMENT_CURRENT
    } else {
        v
    }
}

/// A length from the arguments (`int` or `MPI_Count`; negative ones are 0).
pub fn len(v: impl Into<i64>) -> usize {
    v.into().max(0) as usize
}

/// Sum of `count` ints (the process counts of `MPI_Comm_spawn_multiple`).
///
/// # Safety
/// `p` is NULL or points to `count` ints.
pub unsafe fn sum(p: *const c_int, count: c_int) -> i64 {
    if p.is_null() {
        return 0;
    }
    // SAFETY: `count` readable ints (the contract).
    (0..len(count)).map(|i| unsafe { *p.add(i) } as i64).sum()
}

/// The standard array `p` of `len` elements, converted.
///
/// # Safety
/// `p` is NULL or points to `len` initialized elements.
pub unsafe fn array_in<S: Copy, M>(p: *const S, len: usize, f: fn(S) -> M) -> Vec<M> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: `len` readable elements (the contract).
    (0..len).map(|i| f(unsafe { *p.add(i) })).collect()
}

/// The array argument for the library: NULL where the program gave NULL.
pub fn array_arg<M>(null: bool, v: &mut [M]) -> *mut M {
    if null {
        std::ptr::null_mut()
    } else {
        v.as_mut_ptr()
    }
}

/// Writes back the elements the library wrote, converted.
///
/// # Safety
/// `p` is NULL or points to `v.len()` writable elements.
pub unsafe fn array_out<S, M: Copy + PartialEq>(p: *mut S, v: &[M], sentinel: M, f: fn(M) -> S) {
    if p.is_null() {
        return;
    }
    for (i, &m) in v.iter().enumerate() {
        if m != sentinel {
            // SAFETY: `v.len()` writable elements (the contract).
            unsafe { *p.add(i) = f(m) };
        }
    }
}

const UNWRITTEN: MpichStatus = MpichStatus {
    count_lo: INT_SENTINEL,
    count_hi_and_cancelled: INT_SENTINEL,
    MPI_SOURCE: INT_SENTINEL,
    MPI_TAG: INT_SENTINEL,
    MPI_ERROR: INT_SENTINEL,
};

/// One standard status as MPICH's: the count and cancelled flag live in
/// `MPI_internal[0..2]`.
pub fn status_in(s: &StdStatus) -> MpichStatus {
    MpichStatus {
        count_lo: s.MPI_internal[0],
        count_hi_and_cancelled: s.MPI_internal[1],
        MPI_SOURCE: rank_in(s.MPI_SOURCE),
        MPI_TAG: tag_in(s.MPI_TAG),
        MPI_ERROR: errcode_in(s.MPI_ERROR),
    }
}

/// Writes an MPICH status into a standard one: every field but
/// `MPI_ERROR`, which only where the library set it (the completion calls
/// leave it alone unless they return `MPI_ERR_IN_STATUS`).
pub fn status_out(m: &MpichStatus, s: &mut StdStatus) {
    s.MPI_SOURCE = rank_out(m.MPI_SOURCE);
    s.MPI_TAG = tag_out(m.MPI_TAG);
    if m.MPI_ERROR != INT_SENTINEL {
        s.MPI_ERROR = errcode_out(m.MPI_ERROR);
    }
    s.MPI_internal[0] = m.count_lo;
    s.MPI_internal[1] = m.count_hi_and_cancelled;
}

/// The MPICH statuses of a call: none (`MPI_STATUS(ES)_IGNORE`), one (no
/// allocation: the common `MPI_Recv`/`MPI_Wait` case) or an array.
pub enum Statuses {
    Ignored,
    One(MpichStatus),
    Many(Vec<MpichStatus>),
}

impl Statuses {
    fn slice(&self) -> &[MpichStatus] {
        match self {
            Statuses::Ignored => &[],
            Statuses::One(s) => std::slice::from_ref(s),
            Statuses::Many(v) => v,
        }
    }
    fn slice_mut(&mut self) -> &mut [MpichStatus] {
        match self {
            Statuses::Ignored => &mut [],
            Statuses::One(s) => std::slice::from_mut(s),
            Statuses::Many(v) => v,
        }
    }
}

/// The MPICH statuses for `len` standard ones at `p` (none when `p` is
/// `MPI_STATUS(ES)_IGNORE`), read from them when `read`.
///
/// # Safety
/// `p` is NULL or points to `len` statuses, initialized when `read`.
pub unsafe fn statuses_in(p: *const StdStatus, len: usize, read: bool) -> Statuses {
    if p.is_null() {
        return Statuses::Ignored;
    }
    // SAFETY: `len` readable statuses when `read` (the contract).
    let one = |i: usize| if read { status_in(unsafe { &*p.add(i) }) } else { UNWRITTEN };
    if len == 1 {
        Statuses::One(one(0))
    } else {
        Statuses::Many((0..len).map(one).collect())
    }
}

/// The status argument: MPICH's `MPI_STATUS(ES)_IGNORE` (1) for the
/// standard's (NULL).
pub fn statuses_arg(null: bool, v: &mut Statuses) -> *mut MpichStatus {
    if null {
        mpi_api::abi::MPI_STATUS_IGNORE as *mut MpichStatus
    } else {
        v.slice_mut().as_mut_ptr()
    }
}

/// Writes the MPICH statuses back to the program's.
///
/// # Safety
/// `p` is NULL or points to as many writable statuses as `v` holds.
pub unsafe fn statuses_out(p: *mut StdStatus, v: &Statuses) {
    if p.is_null() {
        return;
    }
    for (i, m) in v.slice().iter().enumerate() {
        // SAFETY: writable statuses (the contract).
        status_out(m, unsafe { &mut *p.add(i) });
    }
}

/// A raw pointer of either mutability, by address.
pub trait Ptr: Copy {
    fn addr_of(self) -> usize;
    fn from_addr(a: usize) -> Self;
}
impl<T> Ptr for *const T {
    fn addr_of(self) -> usize {
        self as usize
    }
    fn from_addr(a: usize) -> Self {
        a as *const T
    }
}
impl<T> Ptr for *mut T {
    fn addr_of(self) -> usize {
        self as usize
    }
    fn from_addr(a: usize) -> Self {
        a as *mut T
    }
}

/// A buffer argument: the standard's `MPI_IN_PLACE` (1) is MPICH's (-1).
pub fn buffer<P: Ptr>(p: P) -> P {
    if p.addr_of() == stdabi::STD_IN_PLACE {
        P::from_addr(mpi_api::abi::MPI_IN_PLACE)
    } else {
        p
    }
}

/// A weights argument: `MPI_UNWEIGHTED` (10) and `MPI_WEIGHTS_EMPTY` (11)
/// to the addresses libmpi.so.12 gives them.
pub fn weights<P: Ptr>(p: P) -> P {
    match p.addr_of() {
        stdabi::STD_UNWEIGHTED => P::from_addr(crate::loaded().unweighted),
        stdabi::STD_WEIGHTS_EMPTY => P::from_addr(crate::loaded().weights_empty),
        _ => p,
    }
}

/// A performance-variable handle: `MPI_T_PVAR_ALL_HANDLES` (1) to MPICH's.
pub fn pvar_in<P: Ptr>(p: P) -> P {
    if p.addr_of() == stdabi::STD_T_PVAR_ALL_HANDLES {
        P::from_addr(crate::loaded().pvar_all_handles)
    } else {
        p
    }
}

/// How many datatypes an `MPI_(Neighbor_)alltoallw` array holds: the size
/// of the (remote) group, or the neighbour count of the topology (out for
/// send, in for receive); none for a send array with `MPI_IN_PLACE`.
pub fn alltoallw_len(comm: usize, neighbor: bool, send: bool, sendbuf: usize) -> i64 {
    if send && sendbuf == stdabi::STD_IN_PLACE {
        return 0;
    }
    let c = comm_in(comm);
    let lib = crate::lib();
    let mut n: c_int = 0;
    // SAFETY: each call is given a communicator handle and writable ints,
    // as its MPICH signature asks; failures leave `n` at 0.
    unsafe {
        if !neighbor {
            let mut inter: c_int = 0;
            if let Some(f) = lib.PMPI_Comm_test_inter {
                f(c, &mut inter);
            }
            let size = if inter != 0 { lib.PMPI_Comm_remote_size } else { lib.PMPI_Comm_size };
            if let Some(f) = size {
                f(c, &mut n);
            }
            return i64::from(n);
        }
        let mut topo: c_int = 0;
        if let Some(f) = lib.PMPI_Topo_test {
            f(c, &mut topo);
        }
        match topo {
            mpi_api::abi::MPI_CART => {
                if let Some(f) = lib.PMPI_Cartdim_get {
                    f(c, &mut n);
                }
                n *= 2;
            }
            mpi_api::abi::MPI_GRAPH => {
                let mut rank: c_int = 0;
                if let (Some(r), Some(f)) = (lib.PMPI_Comm_rank, lib.PMPI_Graph_neighbors_count) {
                    r(c, &mut rank);
                    f(c, rank, &mut n);
                }
            }
            mpi_api::abi::MPI_DIST_GRAPH => {
                let (mut indeg, mut outdeg, mut weighted) = (0, 0, 0);
                if let Some(f) = lib.PMPI_Dist_graph_neighbors_count {
                    f(c, &mut indeg, &mut outdeg, &mut weighted);
                }
                n = if send { outdeg } else { indeg };
            }
            _ => {}
        }
    }
    i64::from(n)
}
