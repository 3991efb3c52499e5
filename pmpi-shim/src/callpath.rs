//! Call paths: the return addresses from an MPI call site outwards, of a
//! depth the user chooses (`MPITRACE_CALLPATH=N`, the number of addresses,
//! the call site included; 0 or 1: the call site alone, as without paths).
//!
//! Each distinct path is interned once per rank: written to the side file
//! as `SideEntry::Path { id, frames }` when first seen, and named in the
//! call's journal record by its id in the high bits of `site`
//! (`trace_format::record::site_with_path`), so a path costs the journal
//! nothing and the trace one small column. Addresses are symbolized after
//! the run, like `site`, through the rank's module map.
//!
//! Two unwinders (`MPITRACE_UNWIND`):
//! * `dwarf` (the default): libgcc's unwinder (`_Unwind_Backtrace`, what
//!   glibc's `backtrace()` uses) over
//!   the `.eh_frame` call frame information that GCC, Clang and rustc emit
//!   by default on x86-64 and AArch64. Right at any optimization level,
//!   with or without frame pointers. It starts in the shim, whose frames it
//!   skips up to the call site, and stops when the path is whole. It reads
//!   only what the unwind tables describe: a frame without them ends the
//!   path, never the program. It finds a frame's tables through glibc's
//!   `_dl_find_object` (glibc 2.35 and GCC 12 on), which takes no lock;
//!   older ones take the loader's lock (`dl_iterate_phdr`), so a call
//!   made while another thread runs `dlopen` waits for it.
//! * `fp`: a walk of the frame-pointer chain from the caller's `rbp`
//!   (noted by the trampoline, `site::set_site`), several times cheaper.
//!   Every read is checked to lie within the thread's stack, so a program
//!   built without frame pointers gets short or wrong paths, never a
//!   fault: use it for code built with `-fno-omit-frame-pointer`.
//!
//! The default depth is 0 (off): the call site, which every record carries
//! anyway, is mpiP's default depth too, and unwinding costs time at every
//! call (BENCHMARKS.md) that a user should choose to pay.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

use trace_format::record::{site_with_path, MAX_PATHS, SITE_ADDR_MASK};
use trace_format::side::SideEntry;

/// Most return addresses a path may have.
pub const MAX_DEPTH: usize = 32;

/// Frames of the shim itself that the unwinder may see below the call
/// site (the wrapper, its translation layer, `Call::enter`, this module).
const SHIM_FRAMES: usize = 16;

/// Depth of the paths recorded; 0 or 1: none.
static DEPTH: AtomicUsize = AtomicUsize::new(0);
/// The unwinder: [`DWARF`] or [`FP`].
static UNWINDER: AtomicU8 = AtomicU8::new(DWARF);
const DWARF: u8 = 0;
const FP: u8 = 1;

/// The paths seen so far, by their frames.
static PATHS: Mutex<Option<HashMap<Box<[u64]>, u32>>> = Mutex::new(None);

/// Reads `MPITRACE_CALLPATH` and `MPITRACE_UNWIND` (at `MPI_Init`);
/// a value it cannot use is named once and tracing goes on without paths.
pub fn configure(rank: i32) {
    let say = |what: String| {
        if rank == 0 {
            eprintln!("mpitrace: {what}");
        }
    };
    let depth = match std::env::var("MPITRACE_CALLPATH") {
        Err(_) => 0,
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n <= MAX_DEPTH => n,
            Ok(n) => {
                say(format!("MPITRACE_CALLPATH={n} is over {MAX_DEPTH}; call paths of depth {MAX_DEPTH} recorded"));
                MAX_DEPTH
            }
            Err(_) => {
                say(format!("MPITRACE_CALLPATH={v:?} is not a number; call paths are not recorded"));
                0
            }
        },
    };
    let unwinder = match std::env::var("MPITRACE_UNWIND").as_deref() {
        Err(_) | Ok("dwarf") | Ok("") => DWARF,
        Ok("fp") => FP,
        Ok(other) => {
            say(format!("MPITRACE_UNWIND={other:?} is neither dwarf nor fp; dwarf used"));
            DWARF
        }
    };
    if depth > 1 && unwinder == DWARF {
        // The first walk sets up the unwinder's lookup of unwind tables:
        // done here, not inside the application's first traced call.
        let mut warm = [0u64; 2];
        unwind_dwarf(0, &mut warm);
    }
    UNWINDER.store(unwinder, Ordering::Relaxed);
    DEPTH.store(depth, Ordering::Relaxed);
}

/// Whether call paths are recorded.
#[inline]
pub fn on() -> bool {
    DEPTH.load(Ordering::Relaxed) > 1
}

/// `site` with the id of the current call's path in its high bits (see the
/// module docs); `frame` is the caller's frame pointer at the call.
/// Must be called from the recording wrapper of the call, whose caller's
/// frames are intact.
#[inline(never)]
pub fn tag(site: u64, frame: u64) -> u64 {
    let depth = DEPTH.load(Ordering::Relaxed);
    if depth <= 1 || site == 0 || site > SITE_ADDR_MASK {
        return site;
    }
    let mut frames = [0u64; MAX_DEPTH];
    let n = match UNWINDER.load(Ordering::Relaxed) {
        FP => walk_frame_pointers(site, frame, &mut frames[..depth]),
        _ => unwind_dwarf(site, &mut frames[..depth]),
    };
    match intern(&frames[..n]) {
        Some(id) => site_with_path(site, id),
        None => site,
    }
}

/// The path's id, interning it (and writing it to the side file) the
/// first time; `None` once the table is full.
fn intern(frames: &[u64]) -> Option<u32> {
    let mut g = PATHS.lock().unwrap_or_else(|p| p.into_inner());
    let table = g.get_or_insert_with(HashMap::new);
    if let Some(&id) = table.get(frames) {
        return Some(id);
    }
    let id = table.len() as u32;
    if id >= MAX_PATHS {
        return None;
    }
    table.insert(frames.into(), id);
    // Under the table's lock, so that the side file holds every id before
    // a record names it (a reader of a crashed run's journals needs both).
    crate::state::with_shared_side(|s| s.side.write(&SideEntry::Path { id, frames: frames.to_vec() }));
    Some(id)
}

/// The paths interned so far, by id (for `meta.json`).
pub fn table() -> Vec<Vec<u64>> {
    let g = PATHS.lock().unwrap_or_else(|p| p.into_inner());
    let Some(t) = g.as_ref() else { return Vec::new() };
    let mut out = vec![Vec::new(); t.len()];
    for (frames, &id) in t {
        out[id as usize] = frames.to_vec();
    }
    out
}

// libgcc's unwinder (libgcc_s, which the Rust runtime links already, and
// under glibc's `backtrace()`): its frames are walked one callback each,
// so the walk stops as soon as the path is whole.
extern "C" {
    fn _Unwind_Backtrace(trace: extern "C" fn(ctx: *mut c_void, arg: *mut c_void) -> c_int, arg: *mut c_void) -> c_int;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
}
/// `_URC_NO_REASON`: go on; `_URC_NORMAL_STOP`: enough.
const URC_NO_REASON: c_int = 0;
const URC_NORMAL_STOP: c_int = 4;

/// The state of one walk: the path so far.
struct Walk<'a> {
    site: u64,
    out: &'a mut [u64],
    n: usize,
    /// Frames seen before the call site (the shim's own).
    skipped: usize,
}

extern "C" fn each_frame(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` that `unwind_dwarf` passed, alive and
    // not otherwise borrowed during `_Unwind_Backtrace`; `ctx` is the
    // unwinder's context of this frame.
    let (w, ip) = unsafe { (&mut *(arg as *mut Walk), _Unwind_GetIP(ctx) as u64) };
    // The outermost frame of a thread (below `clone3`) has no caller.
    if ip == 0 {
        return URC_NORMAL_STOP;
    }
    if w.n == 0 && ip != w.site {
        w.skipped += 1;
        return if w.skipped > SHIM_FRAMES { URC_NORMAL_STOP } else { URC_NO_REASON };
    }
    w.out[w.n] = ip;
    w.n += 1;
    if w.n == w.out.len() {
        URC_NORMAL_STOP
    } else {
        URC_NO_REASON
    }
}

/// Fills `out` with `site` and the return addresses above it, by libgcc's
/// DWARF unwinder; returns how many.
fn unwind_dwarf(site: u64, out: &mut [u64]) -> usize {
    let mut w = Walk { site, out, n: 0, skipped: 0 };
    // SAFETY: `each_frame` gets `w` back as its argument, only during this
    // call; the unwinder reads this thread's stack through the unwind
    // tables of the code on it.
    unsafe { _Unwind_Backtrace(each_frame, (&mut w) as *mut Walk as *mut c_void) };
    if w.n == 0 {
        // The call site was not among the frames: the site alone.
        w.out[0] = site;
        w.n = 1;
    }
    w.n
}

/// The bounds `[lo, hi)` of this thread's stack, found once per thread.
fn stack_bounds() -> (u64, u64) {
    thread_local! {
        static BOUNDS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
    }
    BOUNDS
        .try_with(|b| {
            if b.get().1 == 0 {
                b.set(query_stack());
            }
            b.get()
        })
        .unwrap_or((0, 0))
}

fn query_stack() -> (u64, u64) {
    // SAFETY: a zeroed attribute object is what pthread_getattr_np fills;
    // it is destroyed after use; the out-pointers are live locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return (0, 0);
        }
        let (mut addr, mut size) = (std::ptr::null_mut::<c_void>(), 0usize);
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if ok {
            (addr as u64, addr as u64 + size as u64)
        } else {
            (0, 0)
        }
    }
}

/// Fills `out` with `site` and the return addresses of the frame-pointer
/// chain starting at `frame`; returns how many. Reads only 8-byte-aligned
/// words of this thread's stack above the current stack pointer, each frame
/// strictly above the previous one, so it ends (never faults) on a chain
/// broken by code without frame pointers.
fn walk_frame_pointers(site: u64, frame: u64, out: &mut [u64]) -> usize {
    out[0] = site;
    let mut n = 1;
    let (_, hi) = stack_bounds();
    let here = 0u8;
    // The caller's frames lie above this function's.
    let lo = &here as *const u8 as u64;
    let mut fp = frame;
    while n < out.len() {
        if fp < lo || !fp.is_multiple_of(8) || fp.saturating_add(16) > hi {
            break;
        }
        // SAFETY: `fp..fp + 16` lies within this thread's stack (checked
        // above against its bounds), which is mapped and readable.
        let (next, ret) = unsafe { (*(fp as *const u64), *((fp + 8) as *const u64)) };
        if ret == 0 || ret > SITE_ADDR_MASK {
            break;
        }
        out[n] = ret;
        n += 1;
        if next <= fp {
            break;
        }
        fp = next;
    }
    n
}
