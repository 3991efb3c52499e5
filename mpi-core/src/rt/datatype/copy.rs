//! The copy loops of packing and unpacking: the sinks that gather runs
//! into a packed buffer or scatter them back, and the strided row copies.

use super::*;

/// Packs runs from the user's buffer at `buf` into `out`.
pub(super) struct Gather {
    pub(super) buf: *const u8,
    pub(super) out: *mut u8,
    pub(super) pos: usize,
}

/// Unpacks runs from `inp` into the user's buffer at `buf`.
pub(super) struct Scatter {
    pub(super) inp: *const u8,
    pub(super) buf: *mut u8,
    pub(super) pos: usize,
}

/// Gathers `n` values of type `T` found `stride` bytes apart at `src`
/// into consecutive places at `dst`.
///
/// # Safety
/// The ranges are valid and do not overlap.
#[inline(always)]
pub(super) unsafe fn gather_n<T: Copy>(src: *const u8, stride: isize, n: usize, dst: *mut u8) {
    let d = dst as *mut T;
    let mut s = src;
    for i in 0..n {
        // SAFETY: (caller) value `i` of the packed range at `dst` and the
        // one `i * stride` bytes past `src` are valid and disjoint; unaligned
        // accesses.
        unsafe { d.add(i).write_unaligned((s as *const T).read_unaligned()) };
        s = s.wrapping_offset(stride);
    }
}

/// Scatters `n` consecutive values of type `T` at `src` to places
/// `stride` bytes apart at `dst`.
///
/// # Safety
/// The ranges are valid and do not overlap.
#[inline(always)]
pub(super) unsafe fn scatter_n<T: Copy>(src: *const u8, n: usize, dst: *mut u8, stride: isize) {
    let s = src as *const T;
    let mut d = dst;
    for i in 0..n {
        // SAFETY: (caller) value `i` of the packed range at `src` and the
        // place `i * stride` bytes past `dst` are valid and disjoint;
        // unaligned accesses.
        unsafe { (d as *mut T).write_unaligned(s.add(i).read_unaligned()) };
        d = d.wrapping_offset(stride);
    }
}

/// Copies `n` runs of `len` bytes between a strided side (`stride` apart)
/// and a packed side; `gather`: from the strided side to the packed one.
/// The element size is dispatched once, outside the loop.
///
/// # Safety
/// The ranges are valid and do not overlap.
pub(super) unsafe fn strided_copy(
    gather: bool,
    strided: *mut u8,
    stride: isize,
    n: usize,
    len: usize,
    packed: *mut u8,
) {
    if stride == len as isize {
        let (s, d) = if gather { (strided as *const u8, packed) } else { (packed as *const u8, strided) };
        // SAFETY: the rows are contiguous (stride == len), so both sides are
        // one range of `n * len` bytes, valid and disjoint (the caller).
        unsafe { std::ptr::copy_nonoverlapping(s, d, n * len) };
        return;
    }
    macro_rules! kernel {
        ($t:ty) => {
            // SAFETY: `$t` is `len` bytes, so the `n` values are the `n`
            // runs, which the caller guarantees valid and disjoint.
            unsafe {
                if gather {
                    gather_n::<$t>(strided, stride, n, packed)
                } else {
                    scatter_n::<$t>(packed, n, strided, stride)
                }
            }
        };
    }
    match len {
        8 => kernel!(u64),
        4 => kernel!(u32),
        16 => kernel!(u128),
        2 => kernel!(u16),
        1 => kernel!(u8),
        // SAFETY: len >= ROW_MIN as `rows::copy` needs; the caller's
        // guarantees on the ranges pass on.
        ROW_MIN..=ROW_MAX => unsafe { rows::copy(gather, strided, stride, n, len, packed) },
        // SAFETY: the caller's guarantees pass on.
        _ => unsafe { memcpy_rows(gather, strided, stride, n, len, packed) },
    }
}

/// [`strided_copy`] with one `memcpy` per row.
///
/// # Safety
/// As [`strided_copy`].
pub(super) unsafe fn memcpy_rows(gather: bool, strided: *mut u8, stride: isize, n: usize, len: usize, packed: *mut u8) {
    let mut a = strided;
    for i in 0..n {
        // SAFETY: (caller) row `i` of the packed side, `len` bytes at
        // `packed + i * len`, and row `i` of the strided side at `a` are
        // valid and do not overlap.
        unsafe {
            let p = packed.add(i * len);
            if gather {
                std::ptr::copy_nonoverlapping(a as *const u8, p, len);
            } else {
                std::ptr::copy_nonoverlapping(p as *const u8, a, len);
            }
        }
        a = a.wrapping_offset(stride);
    }
}

/// Rows of `ROW_MIN..=ROW_MAX` bytes are packed and unpacked by
/// [`rows::copy`]; shorter and longer ones by `memcpy`, row by row.
pub(super) const ROW_MIN: usize = 128;
pub(super) const ROW_MAX: usize = 16 << 10;

/// Copying many rows of a few KiB between a strided and a packed side: a
/// loop of 128-byte vector copies that prefetches the strided side's next
/// row while it copies the current one, which beats `memcpy` per row while
/// the packed side fits the last-level cache. Rows of 64 KiB are faster
/// with `memcpy` (the hardware prefetcher keeps up within a long row, and a
/// row-ahead prefetch leaves L1), hence `ROW_MAX`; non-temporal stores
/// lose as long as the packed side fits the cache. Unpacking prefetches
/// the next row for writing (PREFETCHW, where the CPU has it) so its lines
/// arrive owned. Measured with `tests/bench/dt_rows.c`; the numbers are in
/// BENCHMARKS.md.
#[cfg(target_arch = "x86_64")]
pub(super) mod rows {
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
    pub(in crate::rt::datatype) fn has_prefetchw() -> bool {
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
    pub(super) unsafe fn chunk_avx2(d: *mut u8, s: *const u8) {
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
    pub(super) unsafe fn chunk_sse2(d: *mut u8, s: *const u8) {
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
    pub(in crate::rt::datatype) unsafe fn avx2(
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
    pub(in crate::rt::datatype) unsafe fn sse2(
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
pub(super) mod rows {
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
pub(super) unsafe fn copy_run(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: (caller) `len` bytes at `src` readable and at `dst` writable,
    // disjoint; each arm accesses exactly `len` bytes, unaligned.
    unsafe {
        match len {
            8 => (dst as *mut u64).write_unaligned((src as *const u64).read_unaligned()),
            4 => (dst as *mut u32).write_unaligned((src as *const u32).read_unaligned()),
            16 => (dst as *mut u128).write_unaligned((src as *const u128).read_unaligned()),
            2 => (dst as *mut u16).write_unaligned((src as *const u16).read_unaligned()),
            1 => *dst = *src,
            _ => std::ptr::copy_nonoverlapping(src, dst, len),
        }
    }
}
