//! Type signatures as compact hashes.
//!
//! MPI matches a send and its receive by type signature: the sequence of
//! basic datatypes the message holds, every count expanded (a vector of 3
//! `MPI_DOUBLE` and `contiguous(3, MPI_DOUBLE)` both have the signature
//! `double double double`). The shim writes the signature of each
//! committed datatype on its `MPI_Type_commit` row (see SCHEMA.md); the
//! analyzers combine it with a message's count. Both sides compute the
//! same [`Sig`] with this module, so its definition is part of the format.
//!
//! A signature is a polynomial hash over the prime field 2^61 - 1 of the
//! element codes (the MPICH-ABI handle of each basic datatype), with its
//! length: concatenation and repetition are computed from the parts alone,
//! so `n` copies of a type cost `O(log n)`, never `O(n)`.

/// The modulus: the Mersenne prime 2^61 - 1.
const P: u64 = (1 << 61) - 1;
/// The base of the polynomial (any fixed number below `P`).
const B: u64 = 0x0123_4567_89ab_cdef % P;

fn mul(a: u64, b: u64) -> u64 {
    let x = a as u128 * b as u128;
    let r = ((x & P as u128) + (x >> 61)) as u64;
    if r >= P {
        r - P
    } else {
        r
    }
}

fn add(a: u64, b: u64) -> u64 {
    let r = a + b;
    if r >= P {
        r - P
    } else {
        r
    }
}

fn pow(mut b: u64, mut e: u64) -> u64 {
    let mut r = 1;
    while e > 0 {
        if e & 1 == 1 {
            r = mul(r, b);
        }
        b = mul(b, b);
        e >>= 1;
    }
    r
}

/// A type signature: the hash of its sequence of basic types and its
/// length in elements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Sig {
    pub hash: u64,
    pub len: u64,
}

impl Sig {
    /// The empty signature (a type of size 0, or a count of 0).
    pub const EMPTY: Sig = Sig { hash: 0, len: 0 };

    /// The signature of one basic datatype, by its MPICH-ABI handle.
    pub fn basic(handle: i32) -> Sig {
        // +1: no basic type may hash like the empty signature.
        Sig { hash: (handle as u32 as u64 + 1) % P, len: 1 }
    }

    /// `self` followed by `other`.
    pub fn then(self, other: Sig) -> Sig {
        Sig { hash: add(mul(self.hash, pow(B, other.len)), other.hash), len: self.len + other.len }
    }

    /// `n` copies of `self` (copies are alike, so their order of
    /// combination does not matter: binary powers suffice).
    pub fn repeat(self, mut n: u64) -> Sig {
        let (mut out, mut part) = (Sig::EMPTY, self);
        while n > 0 {
            if n & 1 == 1 {
                out = out.then(part);
            }
            part = part.then(part);
            n >>= 1;
        }
        out
    }

    /// The hash as stored in the `seq` column of `MPI_Type_commit` rows
    /// (it is below 2^61, so never negative).
    pub fn stored(self) -> i64 {
        self.hash as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structure_does_not_matter_only_the_sequence() {
        let (d, i) = (Sig::basic(0x4c00080b), Sig::basic(0x4c000405));
        // contiguous(3, double) vs 3 doubles one by one vs vector(3, 1, ...).
        assert_eq!(d.repeat(3), d.then(d).then(d));
        assert_eq!(d.repeat(2).repeat(3), d.repeat(6));
        assert_eq!(d.repeat(0), Sig::EMPTY);
        // Order and kind matter.
        assert_ne!(d.then(i), i.then(d));
        assert_ne!(d.repeat(3), i.repeat(6));
        assert_ne!(d.repeat(3), d.repeat(4));
        // A struct {int, double} x 2 equals the sequence spelled out.
        let s = i.then(d);
        assert_eq!(s.repeat(2), i.then(d).then(i).then(d));
        assert_eq!(s.repeat(2).len, 4);
    }
}
