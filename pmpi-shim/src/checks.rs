//! What the correctness checks (`mpitrace check --correctness`) need from
//! the shim beyond the plain record of each call:
//!
//! * the type signature of each committed datatype ([`signature`]), written
//!   on its `MPI_Type_commit` row: computed once per commit by walking the
//!   type's constructors (`MPI_Type_get_envelope`/`_contents`), so messages
//!   cost nothing (the analyzer combines the signature with each message's
//!   count and datatype handle);
//! * with `MPITRACE_CHECK_BUFFERS=1` (`mpitrace record --check-buffers`), a
//!   checksum of a nonblocking send's buffer when it starts and when it
//!   completes ([`checksum`]).

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::OnceLock;

use mpi_api::abi;
use trace_format::record::NONE_I64;
use trace_format::typesig::Sig;

use crate::pmpi;
use crate::state::type_size;

/// Constructors nested deeper than this are not followed (no signature).
const MAX_DEPTH: u32 = 64;

/// The type signature of datatype `dt` and its size in bytes, or `None`
/// when the library cannot describe it (large-count constructors, errors).
pub fn signature(dt: c_int) -> Option<(Sig, i64)> {
    let mut walk = Walk { memo: HashMap::new(), to_free: Vec::new() };
    let sig = walk.sig(dt, 0);
    // Derived types `MPI_Type_get_contents` returned are new references
    // the caller frees; freed only now, so that no handle is reused (and
    // mistaken for another in `memo`) during the walk.
    for mut t in walk.to_free {
        // SAFETY: a derived datatype handle get_contents returned to us.
        unsafe { pmpi::MPI_Type_free(&mut t) };
    }
    Some((sig?, type_size(dt)))
}

struct Walk {
    memo: HashMap<c_int, Option<Sig>>,
    to_free: Vec<c_int>,
}

impl Walk {
    fn sig(&mut self, dt: c_int, depth: u32) -> Option<Sig> {
        if abi::builtin_type_size(dt).is_some() {
            return Some(Sig::basic(dt));
        }
        if let Some(s) = self.memo.get(&dt) {
            return *s;
        }
        let s = if depth > MAX_DEPTH { None } else { self.derived(dt, depth) };
        self.memo.insert(dt, s);
        s
    }

    fn derived(&mut self, dt: c_int, depth: u32) -> Option<Sig> {
        let (ni, na, nd, comb) = envelope(dt)?;
        if comb == abi::MPI_COMBINER_NAMED
            || matches!(
                comb,
                abi::MPI_COMBINER_F90_REAL | abi::MPI_COMBINER_F90_COMPLEX | abi::MPI_COMBINER_F90_INTEGER
            )
        {
            return Some(Sig::basic(dt));
        }
        let (mut ints, mut addrs, mut types) =
            (vec![0 as c_int; ni as usize], vec![0i64; na as usize], vec![0 as c_int; nd as usize]);
        // SAFETY: arrays of the lengths the envelope gave, live for the call.
        let rc = unsafe {
            pmpi::MPI_Type_get_contents(dt, ni, na, nd, ints.as_mut_ptr(), addrs.as_mut_ptr(), types.as_mut_ptr())
        };
        if rc != abi::MPI_SUCCESS {
            return None;
        }
        for &t in &types {
            if abi::builtin_type_size(t).is_none() && envelope(t).is_some_and(|e| e.3 != abi::MPI_COMBINER_NAMED) {
                self.to_free.push(t);
            }
        }
        if comb == abi::MPI_COMBINER_STRUCT || comb == abi::MPI_COMBINER_STRUCT_INTEGER {
            // ints: count, then one block length per type.
            let mut out = Sig::EMPTY;
            for (i, &t) in types.iter().enumerate() {
                let n = *ints.get(i + 1)?;
                out = out.then(self.sig(t, depth + 1)?.repeat(u64::try_from(n).ok()?));
            }
            return Some(out);
        }
        // Every other constructor (contiguous, vector, indexed, subarray,
        // darray, resized, dup...) repeats its one old type: the signature
        // is as many copies of the old type's as its size holds.
        let [old] = types[..] else { return None };
        let old_size = type_size(old);
        let n = if old_size > 0 { type_size(dt) / old_size } else { 0 };
        Some(self.sig(old, depth + 1)?.repeat(u64::try_from(n).ok()?))
    }
}

/// (integers, addresses, datatypes, combiner) of a datatype.
fn envelope(dt: c_int) -> Option<(c_int, c_int, c_int, c_int)> {
    let (mut ni, mut na, mut nd, mut comb) = (0, 0, 0, 0);
    // SAFETY: live out pointers; MPI checks the handle.
    let rc = unsafe { pmpi::MPI_Type_get_envelope(dt, &mut ni, &mut na, &mut nd, &mut comb) };
    // The translation layers pass the combiner through: Open MPI numbers
    // the same list from 0 (NAMED) where MPICH starts at 1.
    if crate::detect::ABI.load(std::sync::atomic::Ordering::Relaxed) == crate::detect::kind::OMPI {
        comb += 1;
    }
    (rc == abi::MPI_SUCCESS && ni >= 0 && na >= 0 && nd >= 0).then_some((ni, na, nd, comb))
}

/// The counts a collective was given (`NONE_I64` where it has none).
pub struct Counts {
    /// `count` or `sendcount`.
    pub count: i64,
    /// `recvcount`.
    pub recv_count: i64,
    /// The sum of `recvcounts`, where significant.
    pub recv_sum: Option<i64>,
}

/// How many elements of its datatype the collective `name` (`MPI_Ibcast`,
/// `PMPI_Allreduce_init`...) sends from its send buffer at this process,
/// when they are one run of consecutive elements (blocks for every rank
/// follow each other): none where the process sends nothing from it (the
/// leaves of a broadcast or scatter) or the blocks lie where displacements
/// say (`MPI_Iscatterv`, `MPI_Ialltoallv`/`w`), and for the rooted ones on
/// an intercommunicator. `leaf`: not the root of a rooted collective;
/// `group`: the size of the group it exchanges with.
pub fn collective_send_elems(name: &[u8], leaf: bool, inter: bool, group: i64, c: Counts) -> Option<i64> {
    let name = std::str::from_utf8(name).ok()?;
    let name = name.strip_prefix('P').unwrap_or(name).strip_prefix("MPI_")?;
    let name = name.strip_suffix("_c").unwrap_or(name);
    let name = name.strip_suffix("_init").unwrap_or(name);
    let op = name.strip_prefix('I').unwrap_or(name).to_ascii_lowercase();
    let some = |n: i64| (n != NONE_I64 && n >= 0).then_some(n);
    match op.as_str() {
        "bcast" if !leaf && !inter => some(c.count),
        "gather" | "gatherv" | "reduce" if !inter => some(c.count),
        "allgather" | "allgatherv" | "allreduce" | "scan" | "exscan" | "neighbor_allgather" | "neighbor_allgatherv" => {
            some(c.count)
        }
        "scatter" if !leaf && !inter => some(c.count)?.checked_mul(group),
        "alltoall" => some(c.count)?.checked_mul(group),
        "reduce_scatter_block" => some(c.recv_count)?.checked_mul(group),
        "reduce_scatter" => c.recv_sum,
        _ => None,
    }
}

/// Whether send buffers are checksummed (`MPITRACE_CHECK_BUFFERS=1`).
pub fn check_buffers() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("MPITRACE_CHECK_BUFFERS").is_ok_and(|v| v == "1"))
}

/// The send buffer of a nonblocking send, checksummed at its start and at
/// its completion.
#[derive(Clone, Copy, Debug)]
pub struct SendBuffer {
    pub buf: usize,
    pub count: i64,
    pub datatype: c_int,
    pub comm: c_int,
    /// The checksum when the send started (`None` before it started, and
    /// when the buffer could not be read).
    pub sum: Option<u64>,
}

/// A checksum of the data `count` elements of `datatype` at `buf` send:
/// a predefined type's bytes are read in place; a derived type's are
/// packed first (`MPI_Pack`), so that the gaps of a strided type, which
/// the program may change freely, do not count.
///
/// # Safety
/// `buf`, `count` and `datatype` are those of a send started by the
/// program, whose buffer stays allocated until the send completes (as MPI
/// requires), and the call is made before the program regains control
/// after that completion.
pub unsafe fn checksum(b: &SendBuffer) -> Option<u64> {
    if b.buf == 0 || b.count <= 0 {
        return None;
    }
    if let Some(size) = abi::builtin_type_size(b.datatype) {
        let n = usize::try_from(b.count).ok()?.checked_mul(size)?;
        // SAFETY: the send's buffer: `count` elements of a predefined
        // type, contiguous and readable (this function's contract).
        let bytes = unsafe { std::slice::from_raw_parts(b.buf as *const u8, n) };
        return Some(hash(bytes));
    }
    let count = c_int::try_from(b.count).ok()?;
    let mut size = 0;
    // SAFETY: live out pointer; MPI checks the handles.
    if unsafe { pmpi::MPI_Pack_size(count, b.datatype, b.comm, &mut size) } != abi::MPI_SUCCESS || size <= 0 {
        return None;
    }
    let mut packed = vec![0u8; size as usize];
    let mut pos = 0;
    // SAFETY: the send's buffer and arguments (this function's contract),
    // an output buffer of the size MPI_Pack_size gave.
    let rc = unsafe {
        pmpi::MPI_Pack(
            b.buf as *const c_void,
            count,
            b.datatype,
            packed.as_mut_ptr() as *mut c_void,
            size,
            &mut pos,
            b.comm,
        )
    };
    (rc == abi::MPI_SUCCESS).then(|| hash(&packed[..pos.clamp(0, size) as usize]))
}

/// A 64-bit hash of `bytes`: four independent multiply-rotate lanes over
/// 32-byte blocks (so the multiplications overlap; one lane runs at about
/// a third of the speed), combined at the end. Each step is a bijection of
/// its lane for a given word, so a changed word always changes the lane,
/// and a changed buffer the result but by a chance of about 2^-64.
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let step =
        |h: u64, w: &[u8]| (h ^ u64::from_le_bytes(w.try_into().expect("8 bytes"))).wrapping_mul(K).rotate_left(29);
    let mut lanes = [bytes.len() as u64, 1, 2, 3];
    let mut blocks = bytes.chunks_exact(32);
    for b in &mut blocks {
        for (l, w) in lanes.iter_mut().zip(b.chunks_exact(8)) {
            *l = step(*l, w);
        }
    }
    let mut h = lanes.iter().fold(0u64, |h, &l| step(h, &l.to_le_bytes()));
    let mut words = blocks.remainder().chunks_exact(8);
    for w in &mut words {
        h = step(h, w);
    }
    let mut last = [0u8; 8];
    let rest = words.remainder();
    last[..rest.len()].copy_from_slice(rest);
    step(h, &last)
}

#[cfg(test)]
mod tests {
    use super::hash;

    #[test]
    fn collectives_send_one_run_of_elements_or_none() {
        use super::{collective_send_elems as elems, Counts};
        let c = |count, recv_count, recv_sum| Counts { count, recv_count, recv_sum };
        let none = trace_format::record::NONE_I64;
        // The root of a broadcast sends, its leaves receive.
        assert_eq!(elems(b"PMPI_Ibcast", false, false, 4, c(3, none, None)), Some(3));
        assert_eq!(elems(b"PMPI_Ibcast", true, false, 4, c(3, none, None)), None);
        // A block per rank, one after the other.
        assert_eq!(elems(b"PMPI_Ialltoall", false, false, 4, c(2, 2, None)), Some(8));
        assert_eq!(elems(b"PMPI_Iscatter", false, false, 4, c(2, 2, None)), Some(8));
        assert_eq!(elems(b"PMPI_Ireduce_scatter_block", false, false, 4, c(none, 3, None)), Some(12));
        assert_eq!(elems(b"PMPI_Ireduce_scatter", false, false, 4, c(none, none, Some(7))), Some(7));
        assert_eq!(elems(b"PMPI_Allreduce_init", false, false, 4, c(5, none, None)), Some(5));
        assert_eq!(elems(b"PMPI_Igather_c", true, false, 4, c(5, 5, None)), Some(5));
        // Blocks where displacements say: not checked.
        assert_eq!(elems(b"PMPI_Ialltoallv", false, false, 4, c(8, none, None)), None);
        assert_eq!(elems(b"PMPI_Iscatterv", false, false, 4, c(8, 2, None)), None);
        assert_eq!(elems(b"PMPI_Ibarrier", false, false, 4, c(none, none, None)), None);
    }

    #[test]
    fn any_changed_byte_changes_the_hash() {
        let data: Vec<u8> = (0..203u32).map(|i| (i * 7) as u8).collect();
        let h = hash(&data);
        for i in 0..data.len() {
            let mut d = data.clone();
            d[i] ^= 1;
            assert_ne!(hash(&d), h, "byte {i}");
        }
        // Lengths count (a zero byte more is another buffer).
        assert_ne!(hash(&data[..200]), hash(&data[..201]));
        assert_eq!(hash(&data), h);
    }
}
