//! Datatypes (chapter 4 of the standard).
//!
//! A datatype is kept in two forms, both built once by the constructor:
//!
//! * a **layout**: where the bytes of one element are, as a small tree of
//!   [`Node`]s — flat lists of runs `(offset, len)` (merged where they touch),
//!   repetitions (`count` copies of a child at a fixed stride, so a vector of a
//!   million doubles is one node, not a million runs) and sequences. Packing
//!   is a loop of copies over that tree; a repetition of a single run is a
//!   tight strided loop with fixed-size copies for the common element sizes.
//! * a **signature** ([`Sig`]): the sequence of predefined types the element
//!   carries, compressed the same way. It answers `Get_elements` on partial
//!   messages and drives the conversion to the "external32" representation.
//!
//! Plus bounds: lower bound and upper bound, each either "natural" (from the
//! data, or the children's bounds) or an explicit marker (`MPI_LB`/`MPI_UB`
//! of the old interface, or `MPI_Type_create_resized`), which dominates.
//! Constructors reduce to "placements": `n` copies of a child at a
//! displacement and a spacing (see [`combine`]).

pub mod construct;
pub mod decode;
pub mod pack;

use std::os::raw::c_int;
use std::sync::Arc;

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};
use crate::bail;

// ---------------------------------------------------------------------------
// Layout

/// A repetition of a flat run list is expanded into runs while it stays
/// below this many runs; larger ones stay a repetition node.
const EXPAND_LIMIT: usize = 256;

/// Where the bytes of one element are (offsets relative to the buffer).
#[derive(Debug, Clone)]
pub struct Node {
    /// Bytes of data below this node.
    size: usize,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// Contiguous runs `(offset, len)` in type-map order.
    Runs(Vec<(isize, usize)>),
    /// `count` copies of `child`, the i-th displaced by `off + i * stride`.
    Rep { off: isize, count: usize, stride: isize, child: Arc<Node> },
    /// The children, one after the other in type-map order.
    Seq(Vec<Node>),
}

/// Appends a run, merging it with the previous one if they touch.
fn push_run(v: &mut Vec<(isize, usize)>, o: isize, l: usize) {
    if l == 0 {
        return;
    }
    if let Some(last) = v.last_mut() {
        if last.0.wrapping_add(last.1 as isize) == o {
            last.1 += l;
            return;
        }
    }
    v.push((o, l));
}

/// Bytes still to skip and to visit in a partial walk.
struct Cursor {
    skip: usize,
    left: usize,
}

impl Node {
    fn empty() -> Node {
        Node { size: 0, kind: Kind::Runs(Vec::new()) }
    }

    fn from_runs(runs: impl IntoIterator<Item = (isize, usize)>) -> Node {
        let mut v = Vec::new();
        for (o, l) in runs {
            push_run(&mut v, o, l);
        }
        Node { size: v.iter().map(|r| r.1).sum(), kind: Kind::Runs(v) }
    }

    /// `n` copies of `node`, the i-th displaced by `disp + i * sp`.
    fn place(node: &Arc<Node>, disp: isize, n: usize, sp: isize) -> Node {
        if n == 0 || node.size == 0 {
            return Node::empty();
        }
        match &node.kind {
            Kind::Runs(r) if r.len() == 1 && sp == r[0].1 as isize => {
                return Node::from_runs([(disp.wrapping_add(r[0].0), n * r[0].1)]);
            }
            Kind::Runs(r) if n.saturating_mul(r.len()) <= EXPAND_LIMIT => {
                let mut v = Vec::with_capacity(n * r.len());
                for i in 0..n {
                    let d = disp.wrapping_add((i as isize).wrapping_mul(sp));
                    for &(o, l) in r {
                        push_run(&mut v, d.wrapping_add(o), l);
                    }
                }
                return Node { size: node.size * n, kind: Kind::Runs(v) };
            }
            Kind::Rep { off, count, stride, child } if n == 1 => {
                return Node {
                    size: node.size,
                    kind: Kind::Rep {
                        off: off.wrapping_add(disp),
                        count: *count,
                        stride: *stride,
                        child: child.clone(),
                    },
                };
            }
            _ => {}
        }
        if n == 1 && disp == 0 {
            return (**node).clone();
        }
        Node { size: node.size * n, kind: Kind::Rep { off: disp, count: n, stride: sp, child: node.clone() } }
    }

    /// The nodes one after the other: nested sequences are flattened and
    /// neighbouring run lists joined.
    fn seq(parts: Vec<Node>) -> Node {
        let mut out: Vec<Node> = Vec::new();
        let push = |n: Node, out: &mut Vec<Node>| {
            if n.size == 0 {
                return;
            }
            if let (Kind::Runs(r), Some(Node { kind: Kind::Runs(last), size })) = (&n.kind, out.last_mut()) {
                for &(o, l) in r {
                    push_run(last, o, l);
                }
                *size += n.size;
                return;
            }
            out.push(n);
        };
        for p in parts {
            match p.kind {
                Kind::Seq(children) => {
                    for c in children {
                        push(c, &mut out);
                    }
                }
                _ => push(p, &mut out),
            }
        }
        match out.len() {
            0 => Node::empty(),
            1 => out.pop().expect("one node"),
            _ => Node { size: out.iter().map(|n| n.size).sum(), kind: Kind::Seq(out) },
        }
    }

    /// Number of runs one walk visits (saturating).
    fn run_count(&self) -> usize {
        match &self.kind {
            Kind::Runs(r) => r.len(),
            Kind::Rep { count, child, .. } => count.saturating_mul(child.run_count()),
            Kind::Seq(c) => c.iter().fold(0usize, |a, n| a.saturating_add(n.run_count())),
        }
    }

    /// The single run of this node, if it is one.
    fn single_run(&self) -> Option<(isize, usize)> {
        match &self.kind {
            Kind::Runs(r) if r.len() == 1 => Some(r[0]),
            Kind::Runs(r) if r.is_empty() => Some((0, 0)),
            _ => None,
        }
    }

    /// Calls `f(offset, len)` for every run, in order.
    fn walk_all<S: Sink>(&self, base: isize, f: &mut S) {
        match &self.kind {
            Kind::Runs(r) => {
                for &(o, l) in r {
                    f.run(base.wrapping_add(o), l);
                }
            }
            Kind::Rep { off, count, stride, child } => walk_reps(base.wrapping_add(*off), *count, *stride, child, f),
            Kind::Seq(c) => {
                for n in c {
                    n.walk_all(base, f);
                }
            }
        }
    }

    /// Like [`Node::walk_all`], for the bytes `[cur.skip, cur.skip + cur.left)`
    /// of the packed form only; advances the cursor.
    fn walk_part<S: Sink>(&self, base: isize, cur: &mut Cursor, f: &mut S) {
        if cur.left == 0 {
            return;
        }
        if cur.skip >= self.size {
            cur.skip -= self.size;
            return;
        }
        if cur.skip == 0 && cur.left >= self.size {
            self.walk_all(base, f);
            cur.left -= self.size;
            return;
        }
        match &self.kind {
            Kind::Runs(r) => {
                for &(o, l) in r {
                    if cur.skip >= l {
                        cur.skip -= l;
                        continue;
                    }
                    let take = (l - cur.skip).min(cur.left);
                    f.run(base.wrapping_add(o).wrapping_add(cur.skip as isize), take);
                    cur.skip = 0;
                    cur.left -= take;
                    if cur.left == 0 {
                        return;
                    }
                }
            }
            // child.size > 0 here: otherwise self.size == 0 <= skip.
            Kind::Rep { off, count, stride, child } => {
                walk_reps_part(base.wrapping_add(*off), *count, *stride, child, cur, f)
            }
            Kind::Seq(c) => {
                for n in c {
                    n.walk_part(base, cur, f);
                    if cur.left == 0 {
                        return;
                    }
                }
            }
        }
    }
}

/// Walks the range of `cur` over `count` copies of `child`, `stride` bytes
/// apart from `b` (`child.size > 0`): the copy it starts inside, the whole
/// copies in bulk (the strided fast path), then the copy it ends inside.
fn walk_reps_part<S: Sink>(b: isize, count: usize, stride: isize, child: &Node, cur: &mut Cursor, f: &mut S) {
    let mut i = cur.skip / child.size;
    cur.skip -= i * child.size;
    let mut bi = b.wrapping_add((i as isize).wrapping_mul(stride));
    if cur.skip > 0 {
        child.walk_part(bi, cur, f);
        i += 1;
        bi = bi.wrapping_add(stride);
        if cur.left == 0 || i >= count {
            return;
        }
    }
    let whole = (cur.left / child.size).min(count.saturating_sub(i));
    if whole > 0 {
        walk_reps(bi, whole, stride, child, f);
        cur.left -= whole * child.size;
        i += whole;
        bi = bi.wrapping_add((whole as isize).wrapping_mul(stride));
    }
    if cur.left > 0 && i < count {
        child.walk_part(bi, cur, f);
    }
}

/// Walks `count` whole copies of `child`, `stride` bytes apart from `b`.
fn walk_reps<S: Sink>(b: isize, count: usize, stride: isize, child: &Node, f: &mut S) {
    match &child.kind {
        // The strided fast path: one run per copy.
        Kind::Runs(r) if r.len() == 1 => {
            let (o, l) = r[0];
            f.strided(b.wrapping_add(o), stride, count, l);
        }
        Kind::Runs(r) => {
            let mut bi = b;
            for _ in 0..count {
                for &(o, l) in r {
                    f.run(bi.wrapping_add(o), l);
                }
                bi = bi.wrapping_add(stride);
            }
        }
        _ => {
            let mut bi = b;
            for _ in 0..count {
                child.walk_all(bi, f);
                bi = bi.wrapping_add(stride);
            }
        }
    }
}

/// Receives the runs of a walk, in order.
trait Sink {
    /// `len` bytes at `off`.
    fn run(&mut self, off: isize, len: usize);
    /// `count` runs of `len` bytes at `off + i * stride`.
    fn strided(&mut self, off: isize, stride: isize, count: usize, len: usize) {
        let mut a = off;
        for _ in 0..count {
            self.run(a, len);
            a = a.wrapping_add(stride);
        }
    }
}

impl<F: FnMut(isize, usize)> Sink for F {
    fn run(&mut self, off: isize, len: usize) {
        self(off, len)
    }
}

/// Packs runs from the user's buffer at `buf` into `out`.
struct Gather {
    buf: *const u8,
    out: *mut u8,
    pos: usize,
}

/// Unpacks runs from `inp` into the user's buffer at `buf`.
struct Scatter {
    inp: *const u8,
    buf: *mut u8,
    pos: usize,
}

/// Gathers `n` values of type `T` found `stride` bytes apart at `src`
/// into consecutive places at `dst`.
///
/// # Safety
/// The ranges are valid and do not overlap.
#[inline(always)]
unsafe fn gather_n<T: Copy>(src: *const u8, stride: isize, n: usize, dst: *mut u8) {
    let d = dst as *mut T;
    let mut s = src;
    for i in 0..n {
        d.add(i).write_unaligned((s as *const T).read_unaligned());
        s = s.wrapping_offset(stride);
    }
}

/// Scatters `n` consecutive values of type `T` at `src` to places
/// `stride` bytes apart at `dst`.
///
/// # Safety
/// The ranges are valid and do not overlap.
#[inline(always)]
unsafe fn scatter_n<T: Copy>(src: *const u8, n: usize, dst: *mut u8, stride: isize) {
    let s = src as *const T;
    let mut d = dst;
    for i in 0..n {
        (d as *mut T).write_unaligned(s.add(i).read_unaligned());
        d = d.wrapping_offset(stride);
    }
}

/// Copies `n` runs of `len` bytes between a strided side (`stride` apart)
/// and a packed side; `gather`: from the strided side to the packed one.
/// The element size is dispatched once, outside the loop.
///
/// # Safety
/// The ranges are valid and do not overlap.
unsafe fn strided_copy(gather: bool, strided: *mut u8, stride: isize, n: usize, len: usize, packed: *mut u8) {
    if stride == len as isize {
        let (s, d) = if gather { (strided as *const u8, packed) } else { (packed as *const u8, strided) };
        std::ptr::copy_nonoverlapping(s, d, n * len);
        return;
    }
    macro_rules! kernel {
        ($t:ty) => {
            if gather {
                gather_n::<$t>(strided, stride, n, packed)
            } else {
                scatter_n::<$t>(packed, n, strided, stride)
            }
        };
    }
    match len {
        8 => kernel!(u64),
        4 => kernel!(u32),
        16 => kernel!(u128),
        2 => kernel!(u16),
        1 => kernel!(u8),
        ROW_MIN..=ROW_MAX => rows::copy(gather, strided, stride, n, len, packed),
        _ => memcpy_rows(gather, strided, stride, n, len, packed),
    }
}

/// [`strided_copy`] with one `memcpy` per row.
///
/// # Safety
/// As [`strided_copy`].
unsafe fn memcpy_rows(gather: bool, strided: *mut u8, stride: isize, n: usize, len: usize, packed: *mut u8) {
    let mut a = strided;
    for i in 0..n {
        let p = packed.add(i * len);
        if gather {
            std::ptr::copy_nonoverlapping(a as *const u8, p, len);
        } else {
            std::ptr::copy_nonoverlapping(p as *const u8, a, len);
        }
        a = a.wrapping_offset(stride);
    }
}

/// Rows of `ROW_MIN..=ROW_MAX` bytes are packed and unpacked by
/// [`rows::copy`]; shorter and longer ones by `memcpy`, row by row.
const ROW_MIN: usize = 128;
const ROW_MAX: usize = 16 << 10;

/// Copying many rows of a few KiB between a strided and a packed side: a
/// loop of 128-byte vector copies that prefetches the strided side's next
/// row while it copies the current one. For 512 rows of 4 KiB (the packed
/// 2 MiB fit the last-level cache, not L2) this takes 31 us where `memcpy`
/// per row (glibc: `rep movsb` for 4 KiB on this CPU) takes 37 to 39 us;
/// rows of 64 KiB are faster with `memcpy` (the hardware prefetcher keeps up
/// within a long row, and a row-ahead prefetch leaves L1), hence `ROW_MAX`.
/// Non-temporal stores lose (47 us) as long as the packed side fits the
/// cache. Unpacking prefetches the next row for writing (PREFETCHW, where
/// the CPU has it) so its lines arrive owned: on the AMD EPYC (Zen 4) of
/// 2026-11-27, 48.8 us against 51.4 for `memcpy` per row standalone (45.9
/// against 49.7 with aligned rows), about 1% in `MPI_Unpack`; on the earlier machine (Zen 5, loaded) the loop with
/// a read prefetch had lost to `memcpy` when unpacking. Measured with
/// `tests/bench/dt_rows.c`; details in BENCHMARKS.md.
#[cfg(target_arch = "x86_64")]
mod rows {
    use std::arch::x86_64::*;

    /// Copies `n` rows of `len` bytes (`ROW_MIN <= len`) between the
    /// strided side (`stride` apart) and the packed side; `gather`: from the
    /// strided side to the packed one.
    ///
    /// # Safety
    /// As [`super::strided_copy`]: the ranges are valid and the packed side
    /// overlaps no row.
    #[inline]
    pub unsafe fn copy(gather: bool, strided: *mut u8, stride: isize, n: usize, len: usize, packed: *mut u8) {
        debug_assert!(len >= super::ROW_MIN);
        let pfw = !gather && has_prefetchw();
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, and PREFETCHW if `pfw`; the caller's
            // guarantees pass on.
            unsafe { avx2(gather, pfw, strided, stride, n, len, packed) }
        } else {
            // SAFETY: as above (SSE2 is part of x86-64).
            unsafe { sse2(gather, pfw, strided, stride, n, len, packed) }
        }
    }

    /// Whether the CPU has PREFETCHW (CPUID 0x8000_0001, ECX bit 8:
    /// "3DNowPrefetch" / PRFCHW), looked up once.
    pub(super) fn has_prefetchw() -> bool {
        use std::sync::atomic::{AtomicU8, Ordering};
        static KNOWN: AtomicU8 = AtomicU8::new(0);
        match KNOWN.load(Ordering::Relaxed) {
            1 => false,
            2 => true,
            _ => {
                let yes = __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0;
                KNOWN.store(1 + yes as u8, Ordering::Relaxed);
                yes
            }
        }
    }

    /// The loop over rows, with `$chunk(dst, src)` copying 128 bytes.
    macro_rules! row_loop {
        ($gather:expr, $pfw:expr, $strided:expr, $stride:expr, $n:expr, $len:expr, $packed:expr, $chunk:ident) => {{
            let (stride, n, len) = ($stride, $n, $len);
            let mut a = $strided;
            // Packing reads the strided side; unpacking writes it, and with
            // `$pfw` prefetches it for writing (the lines arrive owned).
            let pf = |p: *const u8| {
                if $pfw {
                    // (Inside the callers' unsafe block. The CPU has
                    // PREFETCHW (`copy`); a prefetch never faults and
                    // writes nothing.)
                    std::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, preserves_flags, readonly))
                } else {
                    _mm_prefetch::<_MM_HINT_T0>(p as *const i8)
                }
            };
            for i in 0..n {
                let p = $packed.add(i * len);
                // The strided side's next row, or this one again at the end
                // (prefetches never fault, but stay inside the buffer).
                let next = if i + 1 < n { a.wrapping_offset(stride) } else { a };
                let (s, d) = if $gather { (a as *const u8, p) } else { (p as *const u8, a) };
                let mut j = 0;
                while j + 128 <= len {
                    pf(next.add(j));
                    pf(next.add(j + 64));
                    $chunk(d.add(j), s.add(j));
                    j += 128;
                }
                if j < len {
                    // The last 128 bytes, overlapping what was copied.
                    pf(next.add(j));
                    pf(next.add(len - 1));
                    $chunk(d.add(len - 128), s.add(len - 128));
                }
                a = a.wrapping_offset(stride);
            }
        }};
    }

    /// 128 bytes in four 32-byte loads then four stores.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn chunk_avx2(d: *mut u8, s: *const u8) {
        // SAFETY: (callers) 128 bytes at `s` are readable, at `d` writable;
        // unaligned loads and stores.
        unsafe {
            let s = s as *const __m256i;
            let d = d as *mut __m256i;
            let (v0, v1, v2, v3) = (
                _mm256_loadu_si256(s),
                _mm256_loadu_si256(s.add(1)),
                _mm256_loadu_si256(s.add(2)),
                _mm256_loadu_si256(s.add(3)),
            );
            _mm256_storeu_si256(d, v0);
            _mm256_storeu_si256(d.add(1), v1);
            _mm256_storeu_si256(d.add(2), v2);
            _mm256_storeu_si256(d.add(3), v3);
        }
    }

    /// 128 bytes in eight 16-byte loads then eight stores.
    #[inline(always)]
    unsafe fn chunk_sse2(d: *mut u8, s: *const u8) {
        // SAFETY: as in `chunk_avx2`.
        unsafe {
            let s = s as *const __m128i;
            let d = d as *mut __m128i;
            let v = [0, 1, 2, 3, 4, 5, 6, 7].map(|k| _mm_loadu_si128(s.add(k)));
            for (k, x) in v.into_iter().enumerate() {
                _mm_storeu_si128(d.add(k), x);
            }
        }
    }

    /// [`copy`] with 32-byte vectors; `pfw`: prefetch the next row for
    /// writing.
    ///
    /// # Safety
    /// As [`copy`], on a CPU with AVX2, and with PREFETCHW if `pfw`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn avx2(
        gather: bool,
        pfw: bool,
        strided: *mut u8,
        stride: isize,
        n: usize,
        len: usize,
        packed: *mut u8,
    ) {
        // SAFETY: (caller) every row and the packed side are valid for the
        // accesses; the chunks stay inside the rows since len >= 128.
        unsafe { row_loop!(gather, pfw, strided, stride, n, len, packed, chunk_avx2) }
    }

    /// [`copy`] with 16-byte vectors.
    ///
    /// # Safety
    /// As [`avx2`], on any x86-64 CPU (with PREFETCHW if `pfw`).
    pub(super) unsafe fn sse2(
        gather: bool,
        pfw: bool,
        strided: *mut u8,
        stride: isize,
        n: usize,
        len: usize,
        packed: *mut u8,
    ) {
        // SAFETY: as in `avx2`.
        unsafe { row_loop!(gather, pfw, strided, stride, n, len, packed, chunk_sse2) }
    }
}

/// Elsewhere: `memcpy` row by row.
#[cfg(not(target_arch = "x86_64"))]
mod rows {
    pub(super) use super::memcpy_rows as copy;
}

impl Sink for Gather {
    #[inline]
    fn run(&mut self, off: isize, len: usize) {
        // SAFETY: (pack's caller) the run lies in the user's buffer; the
        // packed stream fits the output.
        unsafe { copy_run(self.buf.wrapping_offset(off), self.out.add(self.pos), len) };
        self.pos += len;
    }
    fn strided(&mut self, off: isize, stride: isize, count: usize, len: usize) {
        // SAFETY: as in `run`, for `count` runs.
        unsafe {
            strided_copy(true, self.buf.wrapping_offset(off) as *mut u8, stride, count, len, self.out.add(self.pos))
        };
        self.pos += count * len;
    }
}

impl Sink for Scatter {
    #[inline]
    fn run(&mut self, off: isize, len: usize) {
        // SAFETY: (unpack's caller) the run lies in the user's buffer; the
        // walk visits no more bytes than the input holds.
        unsafe { copy_run(self.inp.add(self.pos), self.buf.wrapping_offset(off), len) };
        self.pos += len;
    }
    fn strided(&mut self, off: isize, stride: isize, count: usize, len: usize) {
        // SAFETY: as in `run`, for `count` runs.
        unsafe {
            strided_copy(false, self.buf.wrapping_offset(off), stride, count, len, self.inp.add(self.pos) as *mut u8)
        };
        self.pos += count * len;
    }
}

/// Copies `len` bytes; the usual element sizes are single loads and stores.
///
/// # Safety
/// Both ranges are valid for `len` bytes and do not overlap.
#[inline(always)]
unsafe fn copy_run(src: *const u8, dst: *mut u8, len: usize) {
    match len {
        8 => (dst as *mut u64).write_unaligned((src as *const u64).read_unaligned()),
        4 => (dst as *mut u32).write_unaligned((src as *const u32).read_unaligned()),
        16 => (dst as *mut u128).write_unaligned((src as *const u128).read_unaligned()),
        2 => (dst as *mut u16).write_unaligned((src as *const u16).read_unaligned()),
        1 => *dst = *src,
        _ => std::ptr::copy_nonoverlapping(src, dst, len),
    }
}

// ---------------------------------------------------------------------------
// Signature

/// The predefined types one element carries, in order.
#[derive(Debug)]
pub struct Sig {
    bytes: usize,
    elems: usize,
    kind: SigKind,
}

#[derive(Debug)]
enum SigKind {
    /// `n` consecutive values of predefined type `dt` of `size` bytes each.
    Basic {
        dt: MPI_Datatype,
        size: usize,
        n: usize,
    },
    Seq(Vec<Arc<Sig>>),
    Rep {
        n: usize,
        child: Arc<Sig>,
    },
}

impl Sig {
    fn basic(dt: MPI_Datatype, size: usize, n: usize) -> Arc<Sig> {
        Arc::new(Sig { bytes: size * n, elems: n, kind: SigKind::Basic { dt, size, n } })
    }

    fn empty() -> Arc<Sig> {
        Arc::new(Sig { bytes: 0, elems: 0, kind: SigKind::Seq(Vec::new()) })
    }

    fn rep(n: usize, child: &Arc<Sig>) -> Arc<Sig> {
        if n == 0 || child.elems == 0 {
            return Sig::empty();
        }
        if n == 1 {
            return child.clone();
        }
        if let SigKind::Basic { dt, size, n: k } = child.kind {
            return Sig::basic(dt, size, k * n);
        }
        Arc::new(Sig { bytes: child.bytes * n, elems: child.elems * n, kind: SigKind::Rep { n, child: child.clone() } })
    }

    fn seq(parts: Vec<Arc<Sig>>) -> Arc<Sig> {
        let mut out: Vec<Arc<Sig>> = Vec::new();
        let push = |s: Arc<Sig>, out: &mut Vec<Arc<Sig>>| {
            if s.elems == 0 {
                return;
            }
            if let (SigKind::Basic { dt, size, n }, Some(last)) = (&s.kind, out.last_mut()) {
                if let SigKind::Basic { dt: ldt, n: ln, .. } = last.kind {
                    if ldt == *dt {
                        *last = Sig::basic(*dt, *size, ln + n);
                        return;
                    }
                }
            }
            out.push(s);
        };
        for p in parts {
            match &p.kind {
                SigKind::Seq(children) => {
                    for c in children {
                        push(c.clone(), &mut out);
                    }
                }
                _ => push(p, &mut out),
            }
        }
        match out.len() {
            0 => Sig::empty(),
            1 => out.pop().expect("one part"),
            _ => Arc::new(Sig {
                bytes: out.iter().map(|s| s.bytes).sum(),
                elems: out.iter().map(|s| s.elems).sum(),
                kind: SigKind::Seq(out),
            }),
        }
    }

    /// Basic elements in the first `bytes` bytes (< or = `self.bytes`), or
    /// None if that cuts a basic element.
    fn elems_in(&self, bytes: usize) -> Option<usize> {
        self.elems_within(bytes, false)
    }

    /// [`Sig::elems_in`]; `floor`: the whole elements when the bytes end
    /// inside one (never None then).
    fn elems_within(&self, bytes: usize, floor: bool) -> Option<usize> {
        if bytes >= self.bytes {
            return Some(self.elems);
        }
        match &self.kind {
            SigKind::Basic { size, .. } => (floor || bytes.is_multiple_of(*size)).then_some(bytes / size),
            SigKind::Rep { child, .. } => {
                let whole = bytes / child.bytes;
                Some(whole * child.elems + child.elems_within(bytes - whole * child.bytes, floor)?)
            }
            SigKind::Seq(parts) => {
                let (mut acc, mut rest) = (0, bytes);
                for p in parts {
                    if rest >= p.bytes {
                        acc += p.elems;
                        rest -= p.bytes;
                    } else {
                        return Some(acc + p.elems_within(rest, floor)?);
                    }
                }
                Some(acc)
            }
        }
    }

    /// Bytes of the first `elems` basic elements (< or = `self.elems`).
    fn bytes_of(&self, elems: usize) -> usize {
        if elems >= self.elems {
            return self.bytes;
        }
        match &self.kind {
            SigKind::Basic { size, .. } => elems * size,
            SigKind::Rep { child, .. } => {
                let whole = elems / child.elems;
                whole * child.bytes + child.bytes_of(elems - whole * child.elems)
            }
            SigKind::Seq(parts) => {
                let (mut acc, mut rest) = (0, elems);
                for p in parts {
                    if rest >= p.elems {
                        acc += p.bytes;
                        rest -= p.elems;
                    } else {
                        return acc + p.bytes_of(rest);
                    }
                }
                acc
            }
        }
    }

    /// Calls `f(dt, size, n)` for every run of equal predefined types.
    fn for_each(&self, f: &mut impl FnMut(MPI_Datatype, usize, usize)) {
        match &self.kind {
            SigKind::Basic { dt, size, n } => f(*dt, *size, *n),
            SigKind::Rep { n, child } => {
                for _ in 0..*n {
                    child.for_each(f);
                }
            }
            SigKind::Seq(parts) => {
                for p in parts {
                    p.for_each(f);
                }
            }
        }
    }

    /// Bytes of one element in "external32".
    fn ext_bytes(&self) -> usize {
        match &self.kind {
            SigKind::Basic { dt, size, n } => n * ext32(*dt, *size).0,
            SigKind::Rep { n, child } => n * child.ext_bytes(),
            SigKind::Seq(parts) => parts.iter().map(|p| p.ext_bytes()).sum(),
        }
    }
}

// ---------------------------------------------------------------------------
// Datatypes

/// A lower or upper bound: from the data (natural), or an explicit marker,
/// which wins over natural bounds when types are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    None,
    Natural(isize),
    Marked(isize),
}

impl Bound {
    fn value(self) -> Option<isize> {
        match self {
            Bound::None => None,
            Bound::Natural(v) | Bound::Marked(v) => Some(v),
        }
    }
    fn shift(self, d: isize) -> MpiResult<Bound> {
        let add = |v: isize| v.checked_add(d).ok_or_else(overflow);
        Ok(match self {
            Bound::None => Bound::None,
            Bound::Natural(v) => Bound::Natural(add(v)?),
            Bound::Marked(v) => Bound::Marked(add(v)?),
        })
    }
    /// Combines two bounds, keeping the smaller (`min`) or larger value.
    fn join(self, other: Bound, min: bool) -> Bound {
        let pick = |a: isize, b: isize| if min { a.min(b) } else { a.max(b) };
        match (self, other) {
            (Bound::None, b) | (b, Bound::None) => b,
            (Bound::Marked(a), Bound::Marked(b)) => Bound::Marked(pick(a, b)),
            (Bound::Marked(a), Bound::Natural(_)) | (Bound::Natural(_), Bound::Marked(a)) => Bound::Marked(a),
            (Bound::Natural(a), Bound::Natural(b)) => Bound::Natural(pick(a, b)),
        }
    }
}

fn overflow() -> MpiError {
    MpiError::new(MPI_ERR_ARG, "the datatype's displacements or extent overflow the address range")
}

/// How a derived type was made (`MPI_Type_get_envelope`/`get_contents`).
/// Integers are kept wide; `large` tells that a `_c` constructor made it.
#[derive(Debug, Clone)]
pub struct Contents {
    pub combiner: c_int,
    pub ints: Vec<i64>,
    pub aints: Vec<i64>,
    pub types: Vec<Arc<Dtype>>,
    pub large: bool,
}

impl Contents {
    pub fn new(combiner: c_int, ints: Vec<i64>, aints: Vec<i64>, types: Vec<Arc<Dtype>>, large: bool) -> Contents {
        Contents { combiner, ints, aints, types, large }
    }

    /// The arguments as the large-count (`_c`) constructor takes them:
    /// (integers, large counts). Every count and displacement of a `_c`
    /// constructor is an `MPI_Count`; only the few `int` arguments (ndims,
    /// order, the darray process grid) stay integers.
    pub fn large_split(&self) -> (Vec<i64>, Vec<i64>) {
        if !self.large {
            return (self.ints.clone(), Vec::new());
        }
        let i = &self.ints;
        match self.combiner {
            MPI_COMBINER_SUBARRAY => (vec![i[0], i[i.len() - 1]], i[1..i.len() - 1].to_vec()),
            MPI_COMBINER_DARRAY => {
                let nd = i[2] as usize;
                let mut ints = i[..3].to_vec();
                ints.extend_from_slice(&i[3 + nd..]);
                (ints, i[3..3 + nd].to_vec())
            }
            _ => (Vec::new(), i.iter().chain(self.aints.iter()).copied().collect()),
        }
    }
}

/// A datatype ready for communication.
#[derive(Debug, Clone)]
pub struct Dtype {
    /// Bytes of data in one element.
    pub size: usize,
    pub lb: isize,
    pub extent: isize,
    pub true_lb: isize,
    pub true_extent: isize,
    /// One element is one run starting at offset 0 and `extent == size`, so
    /// `count` elements are `count * size` contiguous bytes at the buffer.
    pub contig: bool,
    /// The predefined type this one is made of, if it is made of one only
    /// (used by reductions and `Get_elements`).
    pub basic: Option<MPI_Datatype>,
    /// Size of the basic element (for `Get_elements`), when uniform.
    pub basic_size: usize,
    /// The handle, for a predefined type.
    pub named: Option<MPI_Datatype>,
    /// How a derived type was built (None for predefined types).
    pub contents: Option<Arc<Contents>>,
    node: Arc<Node>,
    sig: Arc<Sig>,
    lbb: Bound,
    ubb: Bound,
    /// Bounds of the data itself (without markers), if there is data.
    data: Option<(isize, isize)>,
    /// Alignment of the most aligned predefined type (for struct padding).
    align: usize,
    /// `Basic::Mixed` when several predefined types are present.
    basics: Basics,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Basics {
    Empty,
    One(MPI_Datatype, usize),
    Mixed,
}

impl Basics {
    fn join(self, o: Basics) -> Basics {
        match (self, o) {
            (Basics::Empty, b) | (b, Basics::Empty) => b,
            (Basics::One(a, s), Basics::One(b, _)) if a == b => Basics::One(a, s),
            _ => Basics::Mixed,
        }
    }
}

/// `n` copies of type `t`, the i-th at `disp + i * sp` bytes.
pub struct Place<'a> {
    pub t: &'a Dtype,
    pub disp: isize,
    pub n: usize,
    pub sp: isize,
}

impl<'a> Place<'a> {
    /// `n` consecutive copies of `t` (spaced by its extent) at `disp`.
    pub fn block(t: &'a Dtype, disp: isize, n: usize) -> Place<'a> {
        Place { t, disp, n, sp: t.extent }
    }
}

/// The type made of the placements, in order. `pad`: round the extent up
/// to the alignment of the most aligned member, as a C compiler pads a
/// struct (only `MPI_Type_create_struct` does this), unless an explicit
/// upper bound is present.
pub fn combine(places: &[Place], pad: bool) -> MpiResult<Dtype> {
    let mut size = 0usize;
    let mut nodes = Vec::with_capacity(places.len());
    let mut sigs = Vec::with_capacity(places.len());
    let (mut lbb, mut ubb) = (Bound::None, Bound::None);
    let mut data: Option<(isize, isize)> = None;
    let mut align = 1;
    let mut basics = Basics::Empty;
    for p in places.iter().filter(|p| p.n > 0) {
        let t = p.t;
        let bytes = t.size.checked_mul(p.n).ok_or_else(overflow)?;
        size = size.checked_add(bytes).ok_or_else(overflow)?;
        let span = (p.n as isize - 1).checked_mul(p.sp).ok_or_else(overflow)?;
        let (lo, hi) = (
            p.disp.checked_add(span.min(0)).ok_or_else(overflow)?,
            p.disp.checked_add(span.max(0)).ok_or_else(overflow)?,
        );
        lbb = lbb.join(t.lbb.shift(lo)?, true);
        ubb = ubb.join(t.ubb.shift(hi)?, false);
        if let Some((dl, dh)) = t.data {
            let (a, b) = (dl.checked_add(lo).ok_or_else(overflow)?, dh.checked_add(hi).ok_or_else(overflow)?);
            data = Some(match data {
                None => (a, b),
                Some((x, y)) => (x.min(a), y.max(b)),
            });
        }
        align = align.max(t.align);
        basics = basics.join(t.basics);
        nodes.push(Node::place(&t.node, p.disp, p.n, p.sp));
        sigs.push(Sig::rep(p.n, &t.sig));
    }
    if pad {
        if let (Some(lb), Bound::Natural(ub)) = (lbb.value(), ubb) {
            let ext = ub - lb;
            let r = ext.rem_euclid(align as isize);
            if r != 0 {
                ubb = Bound::Natural(ub.checked_add(align as isize - r).ok_or_else(overflow)?);
            }
        }
    }
    Ok(Dtype::finish(Arc::new(Node::seq(nodes)), Sig::seq(sigs), size, lbb, ubb, data, align, basics))
}

impl Dtype {
    #[allow(clippy::too_many_arguments)]
    fn finish(
        node: Arc<Node>,
        sig: Arc<Sig>,
        size: usize,
        lbb: Bound,
        ubb: Bound,
        data: Option<(isize, isize)>,
        align: usize,
        basics: Basics,
    ) -> Dtype {
        debug_assert_eq!(node.size, size);
        debug_assert_eq!(sig.bytes, size);
        let lb = lbb.value().unwrap_or(0);
        let ub = ubb.value().unwrap_or(lb);
        let extent = ub.wrapping_sub(lb);
        let (true_lb, true_ub) = data.unwrap_or((0, 0));
        let contig = size as isize == extent && lb == 0 && node.single_run().is_some_and(|r| r.0 == 0 || size == 0);
        let (basic, basic_size) = match basics {
            Basics::One(dt, s) => (Some(dt), s),
            _ => (None, 0),
        };
        Dtype {
            size,
            lb,
            extent,
            true_lb,
            true_extent: true_ub - true_lb,
            contig,
            basic,
            basic_size,
            named: None,
            contents: None,
            node,
            sig,
            lbb,
            ubb,
            data,
            align,
            basics,
        }
    }

    /// Records how the type was built.
    pub fn with_contents(mut self, c: Contents) -> Dtype {
        self.contents = Some(Arc::new(c));
        self
    }

    /// Bytes that `count` elements carry.
    pub fn packed_size(&self, count: usize) -> usize {
        self.size.saturating_mul(count)
    }

    /// Basic elements per element (of the signature).
    pub fn elems(&self) -> usize {
        self.sig.elems
    }

    /// Runs `(offset, len)` of one element, in type-map order, merged.
    /// (Materialized: for a huge vector type this is a long list.)
    pub fn runs(&self) -> Vec<(isize, usize)> {
        let mut v = Vec::new();
        self.node.walk_all(0, &mut |o, l| push_run(&mut v, o, l));
        v
    }

    /// Number of runs a walk over one element visits.
    pub fn run_count(&self) -> usize {
        self.node.run_count()
    }

    /// The whole of `count` elements is one block at `buf + offset`.
    fn one_block(&self, count: usize) -> Option<isize> {
        if self.contig {
            return Some(0);
        }
        let (o, l) = self.node.single_run()?;
        (count <= 1 || l as isize == self.extent).then_some(o)
    }

    /// Packs `count` elements at `src` into `dst` (exactly `packed_size` bytes).
    ///
    /// # Safety
    /// `src` must address `count` elements of this type.
    pub unsafe fn pack(&self, src: *const u8, count: usize, dst: &mut [u8]) {
        debug_assert_eq!(dst.len(), self.packed_size(count));
        if dst.is_empty() {
            return;
        }
        if let Some(o) = self.one_block(count) {
            std::ptr::copy_nonoverlapping(src.wrapping_offset(o), dst.as_mut_ptr(), dst.len());
            return;
        }
        let mut g = Gather { buf: src, out: dst.as_mut_ptr(), pos: 0 };
        self.walk_elements(count, &mut g);
    }

    /// Visits every run of `count` whole elements.
    fn walk_elements<S: Sink>(&self, count: usize, f: &mut S) {
        if let Some((o, l)) = self.node.single_run() {
            // One run per element: a strided copy over the elements.
            f.strided(o, self.extent, count, l);
            return;
        }
        let mut base = 0isize;
        for _ in 0..count {
            self.node.walk_all(base, f);
            base = base.wrapping_add(self.extent);
        }
    }

    /// Packs the bytes `[skip, skip + dst.len())` of the packed form of
    /// `count` elements at `src` (for sending a message in pieces).
    ///
    /// # Safety
    /// `src` must address `count` elements of this type; the range lies
    /// within `packed_size(count)`.
    pub unsafe fn pack_range(&self, src: *const u8, count: usize, skip: usize, dst: &mut [u8]) {
        if dst.is_empty() || self.size == 0 {
            return;
        }
        if let Some(o) = self.one_block((skip + dst.len()).div_ceil(self.size)) {
            // Contiguous data: packed byte k is at offset o + k.
            std::ptr::copy_nonoverlapping(src.wrapping_offset(o).wrapping_add(skip), dst.as_mut_ptr(), dst.len());
            return;
        }
        let mut g = Gather { buf: src, out: dst.as_mut_ptr(), pos: 0 };
        self.walk_range(count, skip, dst.len(), &mut g);
    }

    /// Unpacks `src` (a whole number of elements' bytes, or fewer on a
    /// truncated/short message) into the buffer at `dst`.
    ///
    /// # Safety
    /// `dst` must address enough elements of this type for `src`.
    pub unsafe fn unpack(&self, src: &[u8], dst: *mut u8) {
        self.unpack_range(src, 0, dst)
    }

    /// Unpacks `src` as the bytes `[skip, skip + src.len())` of the packed
    /// form into the buffer at `dst`.
    ///
    /// # Safety
    /// `dst` must address enough elements of this type for those bytes.
    pub unsafe fn unpack_range(&self, src: &[u8], skip: usize, dst: *mut u8) {
        if src.is_empty() || self.size == 0 {
            return;
        }
        let count = (skip + src.len()).div_ceil(self.size);
        if let Some(o) = self.one_block(count) {
            // Contiguous data: packed byte k is at offset o + k.
            std::ptr::copy_nonoverlapping(src.as_ptr(), dst.wrapping_offset(o).wrapping_add(skip), src.len());
            return;
        }
        let mut sc = Scatter { inp: src.as_ptr(), buf: dst, pos: 0 };
        if skip == 0 && src.len() == self.packed_size(count) {
            self.walk_elements(count, &mut sc);
        } else {
            self.walk_range(count, skip, src.len(), &mut sc);
        }
    }

    /// Visits the runs of the bytes `[skip, skip + len)` of the packed form
    /// of `count` elements.
    fn walk_range<S: Sink>(&self, count: usize, skip: usize, len: usize, f: &mut S) {
        if self.size == 0 || len == 0 {
            return;
        }
        let total = self.packed_size(count);
        let mut cur = Cursor { skip, left: len.min(total.saturating_sub(skip)) };
        walk_reps_part(0, count, self.extent, &self.node, &mut cur, f);
    }

    /// Basic elements in `bytes` bytes of a message of this type, or None
    /// if they end inside a basic element.
    pub fn elements_in(&self, bytes: u64) -> Option<u64> {
        if self.size == 0 {
            return Some(0);
        }
        let whole = bytes / self.size as u64;
        let rest = (bytes % self.size as u64) as usize;
        Some(whole * self.sig.elems as u64 + self.sig.elems_in(rest)? as u64)
    }

    /// Whole basic elements in `bytes` bytes of a message of this type
    /// (those of an element the bytes end inside are not counted).
    pub fn whole_elements_in(&self, bytes: u64) -> u64 {
        if self.size == 0 {
            return 0;
        }
        let whole = bytes / self.size as u64;
        let rest = (bytes % self.size as u64) as usize;
        whole * self.sig.elems as u64 + self.sig.elems_within(rest, true).unwrap_or(0) as u64
    }

    /// Bytes that carry `elems` basic elements of this type.
    pub fn bytes_of_elements(&self, elems: u64) -> u64 {
        let per = self.sig.elems as u64;
        if per == 0 {
            return 0;
        }
        (elems / per) * self.size as u64 + self.sig.bytes_of((elems % per) as usize) as u64
    }

    /// A copy of this type with new lower bound and extent (`create_resized`).
    pub fn resized(&self, lb: isize, extent: isize) -> MpiResult<Dtype> {
        let ub = lb.checked_add(extent).ok_or_else(overflow)?;
        let (lbb, ubb) = (Bound::Marked(lb), Bound::Marked(ub));
        Ok(Dtype::finish(self.node.clone(), self.sig.clone(), self.size, lbb, ubb, self.data, self.align, self.basics))
    }

    /// A derived copy of this type (`MPI_Type_dup`); the caller sets contents.
    pub fn dup(&self) -> Dtype {
        let mut t = self.clone();
        t.named = None;
        t.contents = None;
        t
    }

    /// Predefined data items in one element (its type signature's length).
    pub fn items(&self) -> usize {
        self.sig.elems
    }

    /// The predefined types in this type's signature, each once, with their
    /// sizes.
    pub fn basic_types(&self) -> Vec<(MPI_Datatype, usize)> {
        let mut v: Vec<(MPI_Datatype, usize)> = Vec::new();
        self.sig.for_each(&mut |dt, size, _| {
            if !v.iter().any(|&(d, _)| d == dt) {
                v.push((dt, size));
            }
        });
        v
    }

    // --- "external32" -----------------------------------------------------

    /// Bytes of `count` elements in "external32".
    pub fn ext_size(&self, count: usize) -> usize {
        self.sig.ext_bytes().saturating_mul(count)
    }

    /// Converts `count` packed (native) elements to "external32".
    pub fn native_to_ext(&self, native: &[u8], count: usize, ext: &mut [u8]) {
        let (mut i, mut o) = (0, 0);
        for _ in 0..count {
            self.sig.for_each(&mut |dt, size, n| {
                let (esize, conv) = ext32(dt, size);
                for _ in 0..n {
                    conv_to_ext(conv, &native[i..i + size], &mut ext[o..o + esize]);
                    i += size;
                    o += esize;
                }
            });
        }
    }

    /// Converts `count` elements in "external32" to packed native form.
    pub fn ext_to_native(&self, ext: &[u8], count: usize, native: &mut [u8]) {
        let (mut i, mut o) = (0, 0);
        for _ in 0..count {
            self.sig.for_each(&mut |dt, size, n| {
                let (esize, conv) = ext32(dt, size);
                for _ in 0..n {
                    conv_from_ext(conv, &ext[i..i + esize], &mut native[o..o + size]);
                    i += esize;
                    o += size;
                }
            });
        }
    }
}

// ---------------------------------------------------------------------------
// Constructors on resolved types (the C API checks the arguments' form).

/// `MPI_Type_contiguous`.
pub fn contiguous(count: usize, old: &Dtype) -> MpiResult<Dtype> {
    combine(&[Place::block(old, 0, count)], false)
}

/// `MPI_Type_(h)vector`: `count` blocks of `bl` elements, `stride` bytes apart.
pub fn hvector(count: usize, bl: usize, stride: isize, old: &Dtype) -> MpiResult<Dtype> {
    let block = combine(&[Place::block(old, 0, bl)], false)?;
    combine(&[Place { t: &block, disp: 0, n: count, sp: stride }], false)
}

/// `MPI_Type_(h)indexed(_block)`: blocks `(length, displacement in bytes)`.
pub fn hindexed(blocks: &[(usize, isize)], old: &Dtype) -> MpiResult<Dtype> {
    let places: Vec<Place> = blocks.iter().map(|&(n, d)| Place::block(old, d, n)).collect();
    combine(&places, false)
}

/// `MPI_Type_create_struct`: blocks `(length, displacement, type)`. The
/// extent is padded to the members' alignment unless every block has the
/// same type (as MPICH does: such a struct is an hindexed in disguise).
pub fn structure(blocks: &[(usize, isize, Arc<Dtype>)]) -> MpiResult<Dtype> {
    let places: Vec<Place> = blocks.iter().map(|(n, d, t)| Place::block(t, *d, *n)).collect();
    let same = blocks.windows(2).all(|w| Arc::ptr_eq(&w[0].2, &w[1].2));
    combine(&places, !same)
}

fn check_order(order: c_int) -> MpiResult<bool> {
    match order {
        MPI_ORDER_C => Ok(true),
        MPI_ORDER_FORTRAN => Ok(false),
        _ => bail!(MPI_ERR_ARG, "order {order} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"),
    }
}

/// The dimensions from the fastest varying to the slowest.
fn fast_to_slow(ndims: usize, c_order: bool) -> Vec<usize> {
    if c_order {
        (0..ndims).rev().collect()
    } else {
        (0..ndims).collect()
    }
}

/// `MPI_Type_create_subarray`.
pub fn subarray(sizes: &[i64], subsizes: &[i64], starts: &[i64], order: c_int, old: &Dtype) -> MpiResult<Dtype> {
    let c_order = check_order(order)?;
    let nd = sizes.len();
    if nd == 0 {
        bail!(MPI_ERR_ARG, "ndims must be positive");
    }
    for d in 0..nd {
        let (s, ss, st) = (sizes[d], subsizes[d], starts[d]);
        if s < 1 || ss < 1 || st < 0 || ss > s || st > s - ss {
            bail!(
                MPI_ERR_ARG,
                "dimension {d}: size {s}, subsize {ss}, start {st} (need size >= 1, 1 <= subsize <= size, 0 <= start <= size - subsize)"
            );
        }
    }
    let mut t = old.clone();
    let mut estride = old.extent;
    let mut disp = 0isize;
    for d in fast_to_slow(nd, c_order) {
        t = combine(&[Place { t: &t, disp: 0, n: subsizes[d] as usize, sp: estride }], false)?;
        disp = (starts[d] as isize).checked_mul(estride).and_then(|x| x.checked_add(disp)).ok_or_else(overflow)?;
        estride = estride.checked_mul(sizes[d] as isize).ok_or_else(overflow)?;
    }
    let placed = combine(&[Place { t: &t, disp, n: 1, sp: 0 }], false)?;
    placed.resized(0, estride)
}

/// `MPI_Type_create_darray`.
#[allow(clippy::too_many_arguments)]
pub fn darray(
    size: c_int,
    rank: c_int,
    gsizes: &[i64],
    distribs: &[c_int],
    dargs: &[c_int],
    psizes: &[c_int],
    order: c_int,
    old: &Dtype,
) -> MpiResult<Dtype> {
    let c_order = check_order(order)?;
    let nd = gsizes.len();
    if nd == 0 {
        bail!(MPI_ERR_ARG, "ndims must be positive");
    }
    if size < 1 || rank < 0 || rank >= size {
        bail!(MPI_ERR_ARG, "rank {rank} is not in a group of size {size}");
    }
    let mut prod: i64 = 1;
    for (d, &p) in psizes.iter().enumerate() {
        if p < 1 {
            bail!(MPI_ERR_ARG, "array_of_psizes[{d}] = {p} is not positive");
        }
        prod = prod.saturating_mul(p as i64);
    }
    if prod != size as i64 {
        bail!(MPI_ERR_ARG, "the process grid has {prod} processes, not size = {size}");
    }
    // Coordinates of `rank` in the row-major process grid (both orders).
    let mut coords = vec![0i64; nd];
    let (mut r, mut t_size) = (rank as i64, prod);
    for d in 0..nd {
        t_size /= psizes[d] as i64;
        coords[d] = r / t_size;
        r %= t_size;
    }
    // Each dimension as cyclic(darg) over the process row.
    let mut dims = Vec::with_capacity(nd);
    for d in 0..nd {
        let (g, p, darg) = (gsizes[d], psizes[d] as i64, dargs[d]);
        if g < 1 {
            bail!(MPI_ERR_ARG, "array_of_gsizes[{d}] = {g} is not positive");
        }
        let b = match distribs[d] {
            MPI_DISTRIBUTE_NONE => {
                if p != 1 {
                    bail!(MPI_ERR_ARG, "dimension {d} is not distributed but has {p} processes");
                }
                g
            }
            MPI_DISTRIBUTE_BLOCK if darg == MPI_DISTRIBUTE_DFLT_DARG => (g + p - 1) / p,
            MPI_DISTRIBUTE_BLOCK => {
                if darg < 1 || (darg as i64).saturating_mul(p) < g {
                    bail!(
                        MPI_ERR_ARG,
                        "dimension {d}: block size {darg} times {p} processes does not cover {g} elements"
                    );
                }
                darg as i64
            }
            MPI_DISTRIBUTE_CYCLIC if darg == MPI_DISTRIBUTE_DFLT_DARG => 1,
            MPI_DISTRIBUTE_CYCLIC => {
                if darg < 1 {
                    bail!(MPI_ERR_ARG, "dimension {d}: cyclic distribution argument {darg} is not positive");
                }
                darg as i64
            }
            x => bail!(MPI_ERR_ARG, "dimension {d}: unknown distribution {x}"),
        };
        dims.push((g, p, b, coords[d]));
    }
    let mut t = old.clone();
    let mut estride = old.extent;
    for d in fast_to_slow(nd, c_order) {
        let (g, p, b, c) = dims[d];
        // Full blocks of b elements start at (c + k p) b; the last may be short.
        let first = c * b;
        let period = p.saturating_mul(b);
        let (mut nfull, mut last) = (0i64, 0i64);
        if first < g {
            let nblocks = (g - first + period - 1) / period;
            let last_start = first + (nblocks - 1) * period;
            let last_len = b.min(g - last_start);
            if last_len == b {
                nfull = nblocks;
            } else {
                nfull = nblocks - 1;
                last = last_len;
            }
        }
        let sp = |x: i64| (x as isize).checked_mul(estride).ok_or_else(overflow);
        let block = combine(&[Place { t: &t, disp: 0, n: b as usize, sp: estride }], false)?;
        let mut places = vec![Place { t: &block, disp: sp(first)?, n: nfull as usize, sp: sp(period)? }];
        if last > 0 {
            places.push(Place { t: &t, disp: sp(first + nfull * period)?, n: last as usize, sp: estride });
        }
        let dim = combine(&places, false)?;
        estride = sp(g)?;
        t = dim.resized(0, estride)?;
    }
    Ok(t)
}

// ---------------------------------------------------------------------------
// Predefined types

/// Layout of a predefined pair type: (value type, value size, offset of the
/// int, extent, alignment).
fn pair_layout(dt: MPI_Datatype) -> Option<(MPI_Datatype, usize, usize, usize, usize)> {
    Some(match dt {
        MPI_FLOAT_INT => (MPI_FLOAT, 4, 4, 8, 4),
        MPI_DOUBLE_INT => (MPI_DOUBLE, 8, 8, 16, 8),
        MPI_LONG_INT => (MPI_LONG, 8, 8, 16, 8),
        MPI_SHORT_INT => (MPI_SHORT, 2, 4, 8, 4),
        MPI_LONG_DOUBLE_INT => (MPI_LONG_DOUBLE, 16, 16, 32, 16),
        _ => return None,
    })
}

/// Size of the value of a predefined (value, int) pair type.
pub fn pair_value_size(dt: MPI_Datatype) -> Option<usize> {
    pair_layout(dt).map(|p| p.1)
}

/// Types made of two equal halves (complex numbers are one element; the
/// `2X` types are two).
fn halves(dt: MPI_Datatype) -> bool {
    matches!(
        dt,
        MPI_COMPLEX
            | MPI_DOUBLE_COMPLEX
            | MPI_COMPLEX8
            | MPI_COMPLEX16
            | MPI_COMPLEX32
            | MPI_C_FLOAT_COMPLEX
            | MPI_C_DOUBLE_COMPLEX
            | MPI_C_LONG_DOUBLE_COMPLEX
            | MPI_CXX_FLOAT_COMPLEX
            | MPI_CXX_DOUBLE_COMPLEX
            | MPI_CXX_LONG_DOUBLE_COMPLEX
    ) || two_of(dt).is_some()
}

/// The element type of the `MPI_2X` types.
fn two_of(dt: MPI_Datatype) -> Option<MPI_Datatype> {
    Some(match dt {
        MPI_2INT => MPI_INT,
        MPI_2INTEGER => MPI_INTEGER,
        MPI_2REAL => MPI_REAL,
        MPI_2DOUBLE_PRECISION => MPI_DOUBLE_PRECISION,
        _ => return None,
    })
}

/// Is `dt` a predefined datatype handle?
pub fn is_predefined(dt: MPI_Datatype) -> bool {
    dt != MPI_DATATYPE_NULL && predefined_name(CType::Datatype, dt).is_some()
}

/// The flattened form of a predefined datatype.
pub fn builtin(dt: MPI_Datatype) -> Option<Dtype> {
    if !is_predefined(dt) {
        return None;
    }
    let mut t = if let Some((vt, vsize, ioff, extent, align)) = pair_layout(dt) {
        let node = Node::from_runs([(0, vsize), (ioff as isize, 4)]);
        let sig = Sig::seq(vec![Sig::basic(vt, vsize, 1), Sig::basic(MPI_INT, 4, 1)]);
        let size = vsize + 4;
        let (lbb, ubb) = (Bound::Natural(0), Bound::Natural(extent as isize));
        Dtype::finish(Arc::new(node), sig, size, lbb, ubb, Some((0, ioff as isize + 4)), align, Basics::One(dt, 0))
    } else if dt == MPI_LB || dt == MPI_UB {
        let (lbb, ubb) = if dt == MPI_LB { (Bound::Marked(0), Bound::None) } else { (Bound::None, Bound::Marked(0)) };
        Dtype::finish(Arc::new(Node::empty()), Sig::empty(), 0, lbb, ubb, None, 1, Basics::Empty)
    } else {
        let size = builtin_type_size(dt)?;
        let sig = match two_of(dt) {
            Some(e) => Sig::basic(e, size / 2, 2),
            None => Sig::basic(dt, size, 1),
        };
        let align = if halves(dt) { size / 2 } else { size }.max(1);
        let basic_size = if two_of(dt).is_some() { size / 2 } else { size };
        let ubb = Bound::Natural(size as isize);
        Dtype::finish(
            Arc::new(Node::from_runs([(0, size)])),
            sig,
            size,
            Bound::Natural(0),
            ubb,
            Some((0, size as isize)),
            align,
            Basics::One(dt, basic_size),
        )
    };
    t.named = Some(dt);
    Some(t)
}

/// Every predefined datatype handle (each value once).
pub fn predefined_handles() -> Vec<MPI_Datatype> {
    let mut v: Vec<MPI_Datatype> = CONSTANTS
        .iter()
        .filter(|c| c.ctype == CType::Datatype)
        .map(|c| c.value as MPI_Datatype)
        .filter(|&h| h != MPI_DATATYPE_NULL)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// `MPI_Type_match_size`: the Fortran-named type of a class and size.
/// The predefined pair type of `MPI_Type_get_value_index` for a value
/// and an index type (`MPI_DATATYPE_NULL` if there is none).
pub fn value_index_pair(value: MPI_Datatype, index: MPI_Datatype) -> MPI_Datatype {
    match (value, index) {
        (MPI_FLOAT, MPI_INT) => MPI_FLOAT_INT,
        (MPI_DOUBLE, MPI_INT) => MPI_DOUBLE_INT,
        (MPI_LONG, MPI_INT) => MPI_LONG_INT,
        (MPI_SHORT, MPI_INT) => MPI_SHORT_INT,
        (MPI_LONG_DOUBLE, MPI_INT) => MPI_LONG_DOUBLE_INT,
        (MPI_INT, MPI_INT) => MPI_2INT,
        _ => MPI_DATATYPE_NULL,
    }
}

pub fn match_size(typeclass: c_int, size: c_int) -> MpiResult<MPI_Datatype> {
    let t = match (typeclass, size) {
        (MPI_TYPECLASS_REAL, 4) => MPI_REAL4,
        (MPI_TYPECLASS_REAL, 8) => MPI_REAL8,
        (MPI_TYPECLASS_REAL, 16) => MPI_REAL16,
        (MPI_TYPECLASS_INTEGER, 1) => MPI_INTEGER1,
        (MPI_TYPECLASS_INTEGER, 2) => MPI_INTEGER2,
        (MPI_TYPECLASS_INTEGER, 4) => MPI_INTEGER4,
        (MPI_TYPECLASS_INTEGER, 8) => MPI_INTEGER8,
        (MPI_TYPECLASS_COMPLEX, 8) => MPI_COMPLEX8,
        (MPI_TYPECLASS_COMPLEX, 16) => MPI_COMPLEX16,
        (MPI_TYPECLASS_COMPLEX, 32) => MPI_COMPLEX32,
        (MPI_TYPECLASS_REAL | MPI_TYPECLASS_INTEGER | MPI_TYPECLASS_COMPLEX, _) => {
            bail!(MPI_ERR_ARG, "no predefined type of class {typeclass} has size {size}")
        }
        _ => bail!(MPI_ERR_ARG, "invalid type class {typeclass}"),
    };
    Ok(t)
}

// ---------------------------------------------------------------------------
// "external32": big-endian, standard sizes

/// How one basic value converts between native and external32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conv {
    /// Bytes as they are (characters, bytes, 1-byte integers).
    Copy,
    /// Reverse the byte order of each `usize`-byte part.
    Swap(usize),
    /// A native 8-byte integer stored in 4 bytes (signed or not).
    Narrow8to4(bool),
    /// A native 4-byte wide character stored in 2 bytes.
    Narrow4to2,
    /// x87 80-bit `long double`s (in 16 bytes) to IEEE quad, per part.
    LongDouble,
}

/// External32 size and conversion of a predefined type of native `size`.
fn ext32(dt: MPI_Datatype, size: usize) -> (usize, Conv) {
    match dt {
        MPI_LONG => (4, Conv::Narrow8to4(true)),
        MPI_UNSIGNED_LONG => (4, Conv::Narrow8to4(false)),
        MPI_WCHAR => (2, Conv::Narrow4to2),
        MPI_LONG_DOUBLE | MPI_C_LONG_DOUBLE_COMPLEX | MPI_CXX_LONG_DOUBLE_COMPLEX => (size, Conv::LongDouble),
        _ if size <= 1 => (size, Conv::Copy),
        MPI_CHAR | MPI_UNSIGNED_CHAR | MPI_SIGNED_CHAR | MPI_BYTE | MPI_PACKED | MPI_CHARACTER => (size, Conv::Copy),
        _ if halves(dt) => (size, Conv::Swap(size / 2)),
        _ => (size, Conv::Swap(size)),
    }
}

fn swap_parts(src: &[u8], dst: &mut [u8], part: usize) {
    for (s, d) in src.chunks(part).zip(dst.chunks_mut(part)) {
        for (i, b) in s.iter().rev().enumerate() {
            d[i] = *b;
        }
    }
}

/// x87 extended (little-endian, 16-byte slot) to IEEE binary128, big-endian.
fn x87_to_quad(src: &[u8], dst: &mut [u8]) {
    let mant = u64::from_le_bytes(src[..8].try_into().expect("8 bytes"));
    let se = u16::from_le_bytes([src[8], src[9]]) as u128;
    let mut frac = ((mant & (u64::MAX >> 1)) as u128) << 49;
    if se & 0x7fff == 0x7fff && mant << 1 != 0 && frac == 0 {
        frac = 1 << 111; // keep a NaN a NaN
    }
    let q = (se << 112) | frac;
    dst[..16].copy_from_slice(&q.to_be_bytes());
}

/// IEEE binary128 (big-endian) to x87 extended in a 16-byte slot.
fn quad_to_x87(src: &[u8], dst: &mut [u8]) {
    let q = u128::from_be_bytes(src[..16].try_into().expect("16 bytes"));
    let se = (q >> 112) as u16;
    let frac = (q & ((1u128 << 112) - 1)) >> 49;
    let int_bit = if se & 0x7fff != 0 { 1u64 << 63 } else { 0 };
    let mut mant = frac as u64 | int_bit;
    if se & 0x7fff == 0x7fff && q & ((1u128 << 112) - 1) != 0 && mant << 1 == 0 {
        mant |= 1 << 62;
    }
    dst[..8].copy_from_slice(&mant.to_le_bytes());
    dst[8..10].copy_from_slice(&se.to_le_bytes());
    dst[10..16].fill(0);
}

fn conv_to_ext(c: Conv, n: &[u8], e: &mut [u8]) {
    match c {
        Conv::Copy => e.copy_from_slice(n),
        Conv::Swap(p) => swap_parts(n, e, p),
        Conv::Narrow8to4(_) => swap_parts(&n[..4], e, 4),
        Conv::Narrow4to2 => swap_parts(&n[..2], e, 2),
        Conv::LongDouble => {
            for (s, d) in n.chunks(16).zip(e.chunks_mut(16)) {
                x87_to_quad(s, d);
            }
        }
    }
}

fn conv_from_ext(c: Conv, e: &[u8], n: &mut [u8]) {
    match c {
        Conv::Copy => n.copy_from_slice(e),
        Conv::Swap(p) => swap_parts(e, n, p),
        Conv::Narrow8to4(signed) => {
            let v = u32::from_be_bytes(e[..4].try_into().expect("4 bytes"));
            let w = if signed { v as i32 as i64 as u64 } else { v as u64 };
            n.copy_from_slice(&w.to_le_bytes());
        }
        Conv::Narrow4to2 => {
            let v = u16::from_be_bytes([e[0], e[1]]) as u32;
            n.copy_from_slice(&v.to_le_bytes());
        }
        Conv::LongDouble => {
            for (s, d) in e.chunks(16).zip(n.chunks_mut(16)) {
                quad_to_x87(s, d);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Handles

/// A derived type of the program: the type and its committed state.
struct Entry {
    t: Arc<Dtype>,
    committed: bool,
}

/// Table of datatypes: predefined ones (built once) and derived types.
pub struct TypeTable {
    derived: Vec<Option<Entry>>,
    free_slots: Vec<usize>,
    /// Predefined types by the low byte of `0x4c00SSII` handles.
    builtin: Vec<Option<Arc<Dtype>>>,
    /// The pair types by the low byte of `0x8c0000II` handles.
    pairs: Vec<Option<Arc<Dtype>>>,
    /// Names set with `MPI_Type_set_name` (predefined types included).
    names: std::collections::HashMap<MPI_Datatype, String>,
    /// The "unnamed predefined" types of `MPI_Type_create_f90_*`, by
    /// (combiner, p, r): one handle each, never freed.
    f90: std::collections::HashMap<(c_int, c_int, c_int), MPI_Datatype>,
}

const DERIVED_BASE: u32 = 0x100;

impl Default for TypeTable {
    fn default() -> Self {
        let mut builtin = vec![None; 256];
        let mut pairs = vec![None; 8];
        for h in predefined_handles() {
            let t = builtin_arc(h);
            match (h as u32) >> 24 {
                0x4c => builtin[(h & 0xff) as usize] = t,
                _ => pairs[(h & 0x7) as usize] = t,
            }
        }
        TypeTable {
            derived: Vec::new(),
            free_slots: Vec::new(),
            builtin,
            pairs,
            names: Default::default(),
            f90: Default::default(),
        }
    }
}

fn builtin_arc(h: MPI_Datatype) -> Option<Arc<Dtype>> {
    builtin(h).map(Arc::new)
}

fn invalid(dt: MPI_Datatype) -> MpiError {
    if dt == MPI_DATATYPE_NULL {
        MpiError::new(MPI_ERR_TYPE, "MPI_DATATYPE_NULL is not a valid datatype here")
    } else {
        MpiError::new(MPI_ERR_TYPE, format!("invalid datatype handle 0x{:08x}", dt as u32))
    }
}

impl TypeTable {
    fn predefined(&self, dt: MPI_Datatype) -> Option<&Arc<Dtype>> {
        let slot = match (dt as u32) >> 24 {
            0x4c => self.builtin.get((dt & 0xff) as usize),
            0x8c if dt as u32 & 0x00ff_fff8 == 0 => self.pairs.get((dt & 0x7) as usize),
            _ => None,
        };
        slot.and_then(|t| t.as_ref()).filter(|t| t.named == Some(dt))
    }

    fn entry(&self, dt: MPI_Datatype) -> Option<&Entry> {
        if handle_obj(dt) == OBJ_DATATYPE && handle_kind(dt) == HANDLE_KIND_INDIRECT {
            let i = handle_index(dt).wrapping_sub(DERIVED_BASE) as usize;
            return self.derived.get(i).and_then(|e| e.as_ref());
        }
        None
    }

    /// Looks up a type for communication: it must be committed.
    pub fn get(&mut self, dt: MPI_Datatype) -> MpiResult<Arc<Dtype>> {
        if let Some(t) = self.predefined(dt) {
            return Ok(t.clone());
        }
        match self.entry(dt) {
            Some(e) if e.committed => Ok(e.t.clone()),
            Some(_) => Err(MpiError::new(
                MPI_ERR_TYPE,
                format!("datatype 0x{:08x} is not committed (call MPI_Type_commit first)", dt as u32),
            )),
            None => Err(invalid(dt)),
        }
    }

    /// The type for communication, borrowed (None: not a committed type);
    /// no reference count moves, for paths that only look at it.
    pub fn committed(&self, dt: MPI_Datatype) -> Option<&Arc<Dtype>> {
        self.predefined(dt).or_else(|| self.entry(dt).filter(|e| e.committed).map(|e| &e.t))
    }

    /// Looks up a type, committed or not (queries and constructors).
    pub fn lookup(&self, dt: MPI_Datatype) -> MpiResult<Arc<Dtype>> {
        if let Some(t) = self.predefined(dt) {
            return Ok(t.clone());
        }
        self.entry(dt).map(|e| e.t.clone()).ok_or_else(|| invalid(dt))
    }

    /// Registers a new derived type and returns its handle.
    pub fn insert(&mut self, t: Dtype) -> MPI_Datatype {
        self.insert_arc(Arc::new(t), false)
    }

    /// Registers a type object under a new handle.
    pub fn insert_arc(&mut self, t: Arc<Dtype>, committed: bool) -> MPI_Datatype {
        let e = Some(Entry { t, committed });
        let i = match self.free_slots.pop() {
            Some(i) => {
                self.derived[i] = e;
                i
            }
            None => {
                self.derived.push(e);
                self.derived.len() - 1
            }
        };
        make_handle(HANDLE_KIND_INDIRECT, OBJ_DATATYPE, DERIVED_BASE + i as u32)
    }

    /// `MPI_Type_commit`.
    pub fn commit(&mut self, dt: MPI_Datatype) -> MpiResult<()> {
        if self.predefined(dt).is_some() {
            return Ok(());
        }
        let i = handle_index(dt).wrapping_sub(DERIVED_BASE) as usize;
        match self.entry(dt) {
            Some(_) => {
                if let Some(Some(e)) = self.derived.get_mut(i) {
                    e.committed = true;
                }
                Ok(())
            }
            None => Err(invalid(dt)),
        }
    }

    /// Frees a derived type; operations already holding it keep their `Arc`.
    pub fn free(&mut self, dt: MPI_Datatype) -> MpiResult<()> {
        if self.predefined(dt).is_some() {
            bail!(MPI_ERR_TYPE, "predefined datatypes cannot be freed");
        }
        if self.entry(dt).is_none() {
            return Err(invalid(dt));
        }
        if self.f90.values().any(|&h| h == dt) {
            bail!(MPI_ERR_TYPE, "types from MPI_Type_create_f90_* are predefined and cannot be freed");
        }
        let i = handle_index(dt).wrapping_sub(DERIVED_BASE) as usize;
        self.derived[i] = None;
        self.free_slots.push(i);
        self.names.remove(&dt);
        Ok(())
    }

    /// The type's name (`MPI_Type_get_name`).
    pub fn name(&self, dt: MPI_Datatype) -> MpiResult<String> {
        let t = self.lookup(dt)?;
        if let Some(n) = self.names.get(&dt) {
            return Ok(n.clone());
        }
        Ok(t.named.and_then(|h| predefined_name(CType::Datatype, h)).unwrap_or("").to_string())
    }

    /// `MPI_Type_set_name`.
    pub fn set_name(&mut self, dt: MPI_Datatype, name: String) -> MpiResult<()> {
        self.lookup(dt)?;
        self.names.insert(dt, name);
        Ok(())
    }

    /// `MPI_Type_create_f90_real/complex/integer`: the type of
    /// `selected_real_kind(p, r)` (or `selected_int_kind(r)`), as gfortran
    /// on x86-64 chooses it; `MPI_UNDEFINED` leaves `p` or `r` free.
    pub fn f90(&mut self, combiner: c_int, p: c_int, r: c_int) -> MpiResult<MPI_Datatype> {
        let (p_, r_) = (if p == MPI_UNDEFINED { 0 } else { p }, if r == MPI_UNDEFINED { 0 } else { r });
        if p_ < 0 || r_ < 0 || (p == MPI_UNDEFINED && r == MPI_UNDEFINED && combiner != MPI_COMBINER_F90_INTEGER) {
            bail!(MPI_ERR_ARG, "invalid precision {p} / range {r}");
        }
        let base = match combiner {
            MPI_COMBINER_F90_INTEGER => match r_ {
                0..=2 => MPI_INTEGER1,
                3..=4 => MPI_INTEGER2,
                5..=9 => MPI_INTEGER4,
                10..=18 => MPI_INTEGER8,
                _ => bail!(MPI_ERR_ARG, "no integer kind has a range of {r} digits"),
            },
            _ => {
                let k = match (p_, r_) {
                    (0..=6, 0..=37) => 0,
                    (0..=15, 0..=307) => 1,
                    (0..=33, 0..=4931) => 2,
                    _ => bail!(MPI_ERR_ARG, "no real kind has precision {p} and range {r}"),
                };
                let reals = [MPI_REAL4, MPI_REAL8, MPI_REAL16];
                let complexes = [MPI_COMPLEX8, MPI_COMPLEX16, MPI_COMPLEX32];
                if combiner == MPI_COMBINER_F90_REAL {
                    reals[k]
                } else {
                    complexes[k]
                }
            }
        };
        if let Some(&h) = self.f90.get(&(combiner, p, r)) {
            return Ok(h);
        }
        let ints = if combiner == MPI_COMBINER_F90_INTEGER { vec![r as i64] } else { vec![p as i64, r as i64] };
        let t = self.lookup(base)?.dup().with_contents(Contents::new(combiner, ints, vec![], vec![], false));
        let h = self.insert_arc(Arc::new(t), true);
        self.f90.insert((combiner, p, r), h);
        Ok(h)
    }

    /// A handle for a type returned by `MPI_Type_get_contents`: the
    /// predefined handle, or a new handle on the same type object.
    pub fn handle_for(&mut self, t: &Arc<Dtype>) -> MPI_Datatype {
        match t.named {
            Some(h) => h,
            None => self.insert_arc(t.clone(), true),
        }
    }
}

/// Checks a count argument.
pub fn check_count(count: i64) -> MpiResult<usize> {
    if count < 0 {
        return Err(MpiError::new(MPI_ERR_COUNT, format!("negative count {count}")));
    }
    Ok(count as usize)
}

/// Size in bytes of one element of `dt`, for error-free paths.
pub fn size_of(types: &mut TypeTable, dt: MPI_Datatype) -> MpiResult<usize> {
    Ok(types.get(dt)?.size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(dt: MPI_Datatype) -> Dtype {
        builtin(dt).unwrap()
    }

    /// Packs `count` elements of `t` from a buffer whose byte i is i % 251,
    /// with the origin at `origin` bytes into the buffer.
    fn pack_pattern(t: &Dtype, count: usize, origin: usize) -> Vec<u8> {
        let buf: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
        let mut out = vec![0u8; t.packed_size(count)];
        // SAFETY: the tests keep every run inside the 4096-byte buffer.
        unsafe { t.pack(buf.as_ptr().add(origin), count, &mut out) };
        out
    }

    fn bytes(ranges: &[(usize, usize)]) -> Vec<u8> {
        ranges.iter().flat_map(|&(o, l)| (o..o + l).map(|i| (i % 251) as u8)).collect()
    }

    #[test]
    fn pair_types_have_padding() {
        let t = b(MPI_DOUBLE_INT);
        assert_eq!((t.size, t.extent, t.contig), (12, 16, false));
        let src: Vec<u8> = (0..32).collect();
        let mut out = vec![0u8; 24];
        // SAFETY: src holds two 16-byte elements.
        unsafe { t.pack(src.as_ptr(), 2, &mut out) };
        assert_eq!(&out[..12], &src[..12]);
        assert_eq!(&out[12..], &src[16..28]);
        let mut back = vec![0u8; 32];
        // SAFETY: back holds two elements.
        unsafe { t.unpack(&out, back.as_mut_ptr()) };
        assert_eq!(&back[16..28], &src[16..28]);
        assert!(b(MPI_INT).contig);
        assert_eq!(b(MPI_2INT).basic_size, 4);
        assert_eq!(b(MPI_2INT).elems(), 2);
        assert_eq!(b(MPI_SHORT_INT).runs(), vec![(0, 2), (4, 4)]);
    }

    #[test]
    fn contiguous_merges_into_one_run() {
        let t = contiguous(10, &b(MPI_INT)).unwrap();
        assert_eq!((t.size, t.lb, t.extent, t.contig), (40, 0, 40, true));
        assert_eq!(t.runs(), vec![(0, 40)]);
        assert_eq!(t.basic, Some(MPI_INT));
        let e = contiguous(0, &b(MPI_INT)).unwrap();
        assert_eq!((e.size, e.extent, e.contig), (0, 0, true));
    }

    #[test]
    fn vector_from_the_standard() {
        // Example 4.6: vector(2, 3, 4) of {(double,0),(char,8)} (extent 16).
        let oldtype = structure(&[(1, 0, Arc::new(b(MPI_DOUBLE))), (1, 8, Arc::new(b(MPI_CHAR)))]).unwrap();
        assert_eq!((oldtype.size, oldtype.extent), (9, 16));
        let t = hvector(2, 3, 4 * 16, &oldtype).unwrap();
        assert_eq!(t.size, 54);
        assert_eq!(t.extent, 64 + 48);
        assert_eq!(t.runs(), vec![(0, 9), (16, 9), (32, 9), (64, 9), (80, 9), (96, 9)]);
        assert_eq!(t.elems(), 12);
        // A big vector stays one strided node.
        let v = hvector(1_000_000, 1, 16, &b(MPI_DOUBLE)).unwrap();
        assert_eq!((v.size, v.extent, v.run_count()), (8_000_000, 16 * 999_999 + 8, 1_000_000));
        assert!(matches!(v.node.kind, Kind::Rep { count: 1_000_000, stride: 16, .. }));
        // Negative stride.
        let n = hvector(3, 1, -8, &b(MPI_INT)).unwrap();
        assert_eq!((n.lb, n.extent, n.true_lb), (-16, 20, -16));
        assert_eq!(n.runs(), vec![(0, 4), (-8, 4), (-16, 4)]);
    }

    #[test]
    fn vector_pack_and_partial_unpack() {
        let t = hvector(3, 2, 32, &b(MPI_INT)).unwrap();
        let packed = pack_pattern(&t, 2, 0);
        let ext = t.extent as usize;
        let want = bytes(&[(0, 8), (32, 8), (64, 8), (ext, 8), (ext + 32, 8), (ext + 64, 8)]);
        assert_eq!(packed, want);
        // Unpack 30 of the 48 bytes.
        let mut back = vec![0u8; 256];
        // SAFETY: back holds two elements.
        unsafe { t.unpack(&packed[..30], back.as_mut_ptr()) };
        assert_eq!(&back[0..8], &packed[0..8]);
        assert_eq!(&back[64..72], &packed[16..24]);
        assert_eq!(&back[ext..ext + 6], &packed[24..30]);
        assert_eq!(back[ext + 6], 0);
        // A range in the middle.
        let mut mid = vec![0u8; 20];
        let buf: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
        // SAFETY: the pattern buffer holds both elements.
        unsafe { t.pack_range(buf.as_ptr(), 2, 13, &mut mid) };
        assert_eq!(&mid[..], &packed[13..33]);
    }

    #[test]
    fn indexed_from_the_standard() {
        // Example 4.7: indexed(2, {3,1}, {4,0}) of the (double, char) type.
        let oldtype = structure(&[(1, 0, Arc::new(b(MPI_DOUBLE))), (1, 8, Arc::new(b(MPI_CHAR)))]).unwrap();
        let t = hindexed(&[(3, 64), (1, 0)], &oldtype).unwrap();
        assert_eq!(t.runs(), vec![(64, 9), (80, 9), (96, 9), (0, 9)]);
        assert_eq!((t.lb, t.extent, t.size), (0, 112, 36));
        // Adjacent blocks merge.
        let m = hindexed(&[(2, 0), (3, 8), (1, 40)], &b(MPI_INT)).unwrap();
        assert_eq!(m.runs(), vec![(0, 20), (40, 4)]);
    }

    #[test]
    fn struct_alignment_and_markers() {
        // Example 4.8-like: {(float,0),(float,4),(double,8),(char,16),(char,17),(char,18)}
        let f = Arc::new(b(MPI_FLOAT));
        let d = Arc::new(b(MPI_DOUBLE));
        let c = Arc::new(b(MPI_CHAR));
        let t = structure(&[(2, 0, f), (1, 8, d), (3, 16, c.clone())]).unwrap();
        assert_eq!((t.size, t.extent, t.true_extent), (19, 24, 19));
        assert_eq!(t.runs(), vec![(0, 19)]);
        assert!(!t.contig);
        assert_eq!(t.basic, None);
        // MPI_LB/MPI_UB markers set the bounds explicitly.
        let lb = Arc::new(b(MPI_LB));
        let ub = Arc::new(b(MPI_UB));
        let m = structure(&[(1, -8, lb), (1, 0, Arc::new(b(MPI_INT))), (1, 32, ub)]).unwrap();
        assert_eq!((m.lb, m.extent, m.true_lb, m.true_extent), (-8, 40, 0, 4));
        // Markers survive in a containing type and win over the data.
        let c2 = contiguous(2, &m).unwrap();
        assert_eq!((c2.lb, c2.extent), (-8, 80));
        assert_eq!(c2.runs(), vec![(0, 4), (40, 4)]);
        let s2 = structure(&[(1, 0, Arc::new(m)), (1, 100, Arc::new(b(MPI_CHAR)))]).unwrap();
        assert_eq!((s2.lb, s2.extent), (-8, 40));
    }

    #[test]
    fn resized_types_in_arrays() {
        let r = b(MPI_INT).resized(0, 12).unwrap();
        assert_eq!((r.size, r.extent, r.contig), (4, 12, false));
        let c = contiguous(3, &r).unwrap();
        assert_eq!(c.runs(), vec![(0, 4), (12, 4), (24, 4)]);
        assert_eq!(c.extent, 36);
        let packed = pack_pattern(&r, 3, 0);
        assert_eq!(packed, bytes(&[(0, 4), (12, 4), (24, 4)]));
        // A type resized to its own size is contiguous again.
        assert!(b(MPI_DOUBLE_INT).resized(0, 12).unwrap().contig);
        assert!(!b(MPI_SHORT_INT).resized(0, 6).unwrap().contig);
        let q = hvector(2, 1, 8, &b(MPI_DOUBLE)).unwrap().resized(0, 16).unwrap();
        assert!(q.contig);
    }

    #[test]
    fn subarray_c_and_fortran_order() {
        // 4x5 ints, the 2x3 block at (1,2).
        let t = subarray(&[4, 5], &[2, 3], &[1, 2], MPI_ORDER_C, &b(MPI_INT)).unwrap();
        assert_eq!((t.lb, t.extent, t.size), (0, 80, 24));
        assert_eq!(t.runs(), vec![((5 + 2) * 4, 12), ((2 * 5 + 2) * 4, 12)]);
        assert_eq!((t.true_lb, t.true_extent), (28, 60 - 28));
        // Fortran order: dimension 0 varies fastest.
        let f = subarray(&[4, 5], &[2, 3], &[1, 2], MPI_ORDER_FORTRAN, &b(MPI_INT)).unwrap();
        assert_eq!(f.runs(), vec![((2 * 4 + 1) * 4, 8), ((3 * 4 + 1) * 4, 8), ((4 * 4 + 1) * 4, 8)]);
        // 3-D.
        let s = subarray(&[3, 4, 5], &[2, 2, 2], &[1, 1, 1], MPI_ORDER_C, &b(MPI_CHAR)).unwrap();
        assert_eq!(s.runs(), vec![(26, 2), (31, 2), (46, 2), (51, 2)]);
        assert_eq!(s.extent, 60);
        assert!(subarray(&[4], &[5], &[0], MPI_ORDER_C, &b(MPI_INT)).is_err());
        assert!(subarray(&[4], &[2], &[3], MPI_ORDER_C, &b(MPI_INT)).is_err());
        assert!(subarray(&[4], &[2], &[0], 99, &b(MPI_INT)).is_err());
    }

    /// Global indices (row-major, C order) of the elements a darray covers.
    fn darray_elems(t: &Dtype) -> Vec<usize> {
        t.runs().iter().flat_map(|&(o, l)| o as usize / 4..(o as usize + l) / 4).collect()
    }

    #[test]
    fn darray_block_cyclic() {
        let i = b(MPI_INT);
        // 1-D, 10 elements, block over 3 procs: 4,4,2.
        let t =
            darray(3, 2, &[10], &[MPI_DISTRIBUTE_BLOCK], &[MPI_DISTRIBUTE_DFLT_DARG], &[3], MPI_ORDER_C, &i).unwrap();
        assert_eq!(darray_elems(&t), vec![8, 9]);
        assert_eq!((t.lb, t.extent), (0, 40));
        // Cyclic(2) over 3 procs, rank 1: 2,3, 8,9.
        let c = darray(3, 1, &[10], &[MPI_DISTRIBUTE_CYCLIC], &[2], &[3], MPI_ORDER_C, &i).unwrap();
        assert_eq!(darray_elems(&c), vec![2, 3, 8, 9]);
        // Cyclic(3) over 2 procs, rank 1, 10 elements: 3,4,5, 9 (short last block).
        let c = darray(2, 1, &[10], &[MPI_DISTRIBUTE_CYCLIC], &[3], &[2], MPI_ORDER_C, &i).unwrap();
        assert_eq!(darray_elems(&c), vec![3, 4, 5, 9]);
        // 2-D 4x6: rows block over 2, columns cyclic(1) over 3; rank 4 = (1, 1).
        let g = darray(
            6,
            4,
            &[4, 6],
            &[MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC],
            &[MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG],
            &[2, 3],
            MPI_ORDER_C,
            &i,
        )
        .unwrap();
        assert_eq!(darray_elems(&g), vec![2 * 6 + 1, 2 * 6 + 4, 3 * 6 + 1, 3 * 6 + 4]);
        assert_eq!(g.extent, 96);
        // Fortran order: the same elements, column-major positions, in
        // column-major type-map order.
        let f = darray(
            6,
            4,
            &[4, 6],
            &[MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC],
            &[MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG],
            &[2, 3],
            MPI_ORDER_FORTRAN,
            &i,
        )
        .unwrap();
        assert_eq!(darray_elems(&f), vec![4 + 2, 4 + 3, 4 * 4 + 2, 4 * 4 + 3]);
        // NONE with 1 proc; rank with nothing (block 4 over 4 procs of 3 elements... )
        let e =
            darray(4, 3, &[3], &[MPI_DISTRIBUTE_BLOCK], &[MPI_DISTRIBUTE_DFLT_DARG], &[4], MPI_ORDER_C, &i).unwrap();
        assert_eq!((e.size, e.extent), (0, 12));
        // Errors.
        let bad = |d, a, p| darray(2, 0, &[10], &[d], &[a], &[p], MPI_ORDER_C, &i).is_err();
        assert!(bad(MPI_DISTRIBUTE_NONE, 0, 2));
        assert!(bad(MPI_DISTRIBUTE_BLOCK, 3, 2));
        assert!(bad(MPI_DISTRIBUTE_CYCLIC, 0, 2));
        assert!(bad(MPI_DISTRIBUTE_CYCLIC, 1, 3));
        assert!(bad(77, 1, 2));
    }

    #[test]
    fn big_cyclic_darray_stays_compact() {
        let t = darray(2, 1, &[1_000_001], &[MPI_DISTRIBUTE_CYCLIC], &[1], &[2], MPI_ORDER_C, &b(MPI_DOUBLE)).unwrap();
        assert_eq!(t.size, 500_000 * 8);
        assert!(matches!(t.node.kind, Kind::Rep { .. }));
        assert_eq!(t.runs()[..2], [(8, 8), (24, 8)]);
    }

    #[test]
    fn elements_of_partial_messages() {
        let s = structure(&[(1, 0, Arc::new(b(MPI_INT))), (2, 8, Arc::new(b(MPI_DOUBLE)))]).unwrap();
        assert_eq!(s.size, 20);
        assert_eq!(s.elements_in(40), Some(6));
        assert_eq!(s.elements_in(24), Some(4));
        assert_eq!(s.elements_in(32), Some(5));
        assert_eq!(s.elements_in(30), None);
        assert_eq!((s.whole_elements_in(30), s.whole_elements_in(32)), (4, 5));
        assert_eq!(s.bytes_of_elements(5), 32);
        let v = hvector(1000, 1, 16, &s).unwrap();
        assert_eq!(v.elements_in(20 * 500 + 12), Some(1502));
    }

    #[test]
    fn external32_conversions() {
        let t =
            structure(&[(1, 0, Arc::new(b(MPI_INT))), (1, 8, Arc::new(b(MPI_LONG))), (1, 16, Arc::new(b(MPI_DOUBLE)))])
                .unwrap();
        assert_eq!(t.ext_size(1), 16);
        let mut native = vec![];
        native.extend_from_slice(&0x01020304i32.to_le_bytes());
        native.extend_from_slice(&(-2i64).to_le_bytes());
        native.extend_from_slice(&1.5f64.to_le_bytes());
        let mut ext = vec![0u8; 16];
        t.native_to_ext(&native, 1, &mut ext);
        assert_eq!(&ext[..4], &[1, 2, 3, 4]);
        assert_eq!(&ext[4..8], &[0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(&ext[8..], &1.5f64.to_be_bytes());
        let mut back = vec![0u8; 20];
        t.ext_to_native(&ext, 1, &mut back);
        assert_eq!(back, native);
        // long double 1.0 -> quad 0x3fff0000...
        let ld = b(MPI_LONG_DOUBLE);
        let mut x = [0u8; 16];
        x[..8].copy_from_slice(&(1u64 << 63).to_le_bytes());
        x[8..10].copy_from_slice(&0x3fffu16.to_le_bytes());
        let mut q = [0u8; 16];
        ld.native_to_ext(&x, 1, &mut q);
        assert_eq!(q[..2], [0x3f, 0xff]);
        assert!(q[2..].iter().all(|&b| b == 0));
        let mut y = [0u8; 16];
        ld.ext_to_native(&q, 1, &mut y);
        assert_eq!(x, y);
    }

    #[test]
    fn table_commit_free_names() {
        let mut tt = TypeTable::default();
        let h = tt.insert(contiguous(2, &b(MPI_INT)).unwrap());
        assert_eq!(tt.get(h).unwrap_err().class, MPI_ERR_TYPE);
        assert!(tt.lookup(h).is_ok());
        tt.commit(h).unwrap();
        assert_eq!(tt.get(h).unwrap().size, 8);
        assert_eq!(tt.name(MPI_DOUBLE).unwrap(), "MPI_DOUBLE");
        tt.set_name(h, "pair".into()).unwrap();
        assert_eq!(tt.name(h).unwrap(), "pair");
        tt.free(h).unwrap();
        assert!(tt.get(h).is_err());
        assert!(tt.free(MPI_INT).is_err());
        assert!(tt.get(MPI_DATATYPE_NULL).is_err());
        assert!(tt.get(0x4c0004ff).is_err());
        assert_eq!(tt.get(MPI_FLOAT_INT).unwrap().size, 8);
        for h in predefined_handles() {
            let t = tt.get(h).unwrap();
            assert_eq!(t.named, Some(h));
            if h != MPI_LB && h != MPI_UB {
                assert_eq!(t.size, builtin_type_size(h).unwrap(), "size of {h:x}");
            }
        }
    }

    /// Bytes that tell every position apart (period 251).
    fn pattern(n: usize, seed: usize) -> Vec<u8> {
        (0..n).map(|i| ((i * 7 + seed) % 251) as u8).collect()
    }

    /// A row copy: `strided_copy` or one of the kernels behind it.
    type RowCopy = unsafe fn(bool, *mut u8, isize, usize, usize, *mut u8);

    /// Copies `n` rows of `len` bytes between a strided side and a packed
    /// one with `copy` and checks every byte of both buffers against a
    /// row-by-row reference (bytes outside the rows keep their values).
    fn check_rows(copy: RowCopy, len: usize, n: usize, stride: isize, shift: usize, pshift: usize) {
        // The strided side: rows at base + i * stride, base far enough in
        // for a negative stride; `shift` and `pshift` misalign both sides.
        let span = n.saturating_sub(1) * stride.unsigned_abs() + len;
        let base = if stride < 0 { span - len } else { 0 } + shift;
        let row = |i: usize| (base as isize + i as isize * stride) as usize;
        for gather in [true, false] {
            let mut strided = pattern(span + shift + 64, 1);
            let mut packed = pattern(n * len + pshift + 64, 2);
            let (mut want_s, mut want_p) = (strided.clone(), packed.clone());
            for i in 0..n {
                let (r, p) = (row(i), pshift + i * len);
                if gather {
                    want_p[p..p + len].copy_from_slice(&strided[r..r + len]);
                } else {
                    want_s[r..r + len].copy_from_slice(&packed[p..p + len]);
                }
            }
            // SAFETY: every row lies in `strided`, the packed rows in
            // `packed`; separate vectors.
            unsafe { copy(gather, strided.as_mut_ptr().add(base), stride, n, len, packed.as_mut_ptr().add(pshift)) };
            let what = format!("gather {gather} len {len} n {n} stride {stride} shifts {shift}/{pshift}");
            assert!(strided == want_s, "strided side, {what}");
            assert!(packed == want_p, "packed side, {what}");
        }
    }

    #[test]
    fn row_copies_of_odd_sizes_and_alignments() {
        let mut copies: Vec<(&str, RowCopy)> = vec![("strided_copy", strided_copy)];
        #[cfg(target_arch = "x86_64")]
        {
            // Both prefetch hints (the write hint only where the CPU has it).
            let pfw = rows::has_prefetchw();
            // SAFETY (all four): check_rows passes valid, separate sides.
            copies.push(("sse2", |g, s, st, n, l, p| unsafe { rows::sse2(g, false, s, st, n, l, p) }));
            if pfw {
                copies.push(("sse2_pfw", |g, s, st, n, l, p| unsafe { rows::sse2(g, true, s, st, n, l, p) }));
            }
            if std::is_x86_feature_detected!("avx2") {
                // (and the CPU has AVX2)
                copies.push(("avx2", |g, s, st, n, l, p| unsafe { rows::avx2(g, false, s, st, n, l, p) }));
                if pfw {
                    copies.push(("avx2_pfw", |g, s, st, n, l, p| unsafe { rows::avx2(g, true, s, st, n, l, p) }));
                }
            }
        }
        for (name, copy) in copies {
            for len in [ROW_MIN, 129, 200, 255, 256, 1000, 4095, 4096, 4097, ROW_MAX, ROW_MAX + 1] {
                for n in [0, 1, 2, 5] {
                    let l = len as isize;
                    for stride in [l + 1, 2 * l + 3, -l - 7] {
                        for (shift, pshift) in [(0, 0), (1, 5), (3, 0), (0, 63)] {
                            if name != "strided_copy" && len > ROW_MAX {
                                continue;
                            }
                            check_rows(copy, len, n, stride, shift, pshift);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn vector_of_long_rows_packs_whole_and_in_ranges() {
        // 260 rows of 200 bytes, 333 apart (more rows than EXPAND_LIMIT: a
        // repetition node, so whole rows go through the row kernel and the
        // rows a range starts or ends inside are single runs).
        let (rows, len, stride) = (260, 200, 333);
        let t = hvector(rows, len, stride as isize, &b(MPI_BYTE)).unwrap();
        let ext = t.extent as usize;
        let buf = pattern(3 * ext + 8, 3);
        let mut runs = Vec::new();
        for e in 0..3 {
            for r in 0..rows {
                runs.push((e * ext + r * stride, len));
            }
        }
        let want: Vec<u8> = runs.iter().flat_map(|&(o, l)| buf[o..o + l].to_vec()).collect();
        for count in [0, 1, 3] {
            let mut out = vec![0u8; t.packed_size(count)];
            // SAFETY: buf holds three elements.
            unsafe { t.pack(buf.as_ptr(), count, &mut out) };
            assert!(out == want[..count * rows * len], "pack of {count} elements");
            let mut back = vec![0u8; buf.len()];
            // SAFETY: back holds three elements.
            unsafe { t.unpack(&out, back.as_mut_ptr()) };
            let mut expect = vec![0u8; buf.len()];
            for &(o, l) in &runs[..count * rows] {
                expect[o..o + l].copy_from_slice(&buf[o..o + l]);
            }
            assert!(back == expect, "unpack of {count} elements");
        }
        let total = 3 * rows * len;
        for (skip, n) in [(0, total), (1, total - 1), (199, 602), (150, 52_000), (52_000, 1), (total - 300, 300)] {
            let mut out = vec![0u8; n];
            // SAFETY: buf holds three elements; the range lies in the packed form.
            unsafe { t.pack_range(buf.as_ptr(), 3, skip, &mut out) };
            assert!(out == want[skip..skip + n], "pack range {skip}+{n}");
            let mut back = vec![0u8; buf.len()];
            // SAFETY: as above.
            unsafe { t.unpack_range(&want[skip..skip + n], skip, back.as_mut_ptr()) };
            let mut again = vec![0u8; n];
            // SAFETY: back holds three elements.
            unsafe { t.pack_range(back.as_ptr(), 3, skip, &mut again) };
            assert!(again == want[skip..skip + n], "unpack range {skip}+{n}");
        }
    }
}
