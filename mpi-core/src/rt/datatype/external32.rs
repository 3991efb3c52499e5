//! The "external32" representation: big-endian, standard sizes; the
//! conversions of packed native data to and from it.

use mpi_api::abi::*;

use super::*;

/// How one basic value converts between native and external32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Conv {
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
pub(super) fn ext32(dt: MPI_Datatype, size: usize) -> (usize, Conv) {
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

pub(super) fn swap_parts(src: &[u8], dst: &mut [u8], part: usize) {
    for (s, d) in src.chunks(part).zip(dst.chunks_mut(part)) {
        for (i, b) in s.iter().rev().enumerate() {
            d[i] = *b;
        }
    }
}

/// x87 extended (little-endian, 16-byte slot) to IEEE binary128, big-endian.
pub(super) fn x87_to_quad(src: &[u8], dst: &mut [u8]) {
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
pub(super) fn quad_to_x87(src: &[u8], dst: &mut [u8]) {
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

pub(super) fn conv_to_ext(c: Conv, n: &[u8], e: &mut [u8]) {
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

pub(super) fn conv_from_ext(c: Conv, e: &[u8], n: &mut [u8]) {
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

impl Dtype {
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
