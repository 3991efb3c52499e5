//! Predefined reduction operations on predefined datatypes.
//!
//! `apply(op, dt, a, b)` computes `b[i] = a[i] op b[i]` (the standard's
//! `inoutvec = invec op inoutvec`), element by element, on packed bytes.

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};

fn bad(op: MPI_Op, dt: MPI_Datatype) -> MpiError {
    MpiError::new(
        MPI_ERR_OP,
        format!(
            "operation {} is not defined for datatype {}",
            predefined_name(CType::Op, op).unwrap_or("(user or invalid op)"),
            predefined_name(CType::Datatype, dt).unwrap_or("(derived type)")
        ),
    )
}

macro_rules! lanes {
    ($t:ty, $a:expr, $b:expr, |$x:ident, $y:ident| $e:expr) => {{
        const N: usize = std::mem::size_of::<$t>();
        for (ca, cb) in $a.chunks_exact(N).zip($b.chunks_exact_mut(N)) {
            let $x = <$t>::from_ne_bytes(ca.try_into().unwrap());
            let $y = <$t>::from_ne_bytes((&*cb).try_into().unwrap());
            cb.copy_from_slice(&($e).to_ne_bytes());
        }
    }};
}

macro_rules! int_ops {
    ($t:ty, $op:expr, $a:expr, $b:expr, $dt:expr) => {
        match $op {
            MPI_SUM => lanes!($t, $a, $b, |x, y| x.wrapping_add(y)),
            MPI_PROD => lanes!($t, $a, $b, |x, y| x.wrapping_mul(y)),
            MPI_MAX => lanes!($t, $a, $b, |x, y| if x > y { x } else { y }),
            MPI_MIN => lanes!($t, $a, $b, |x, y| if x < y { x } else { y }),
            MPI_LAND => lanes!($t, $a, $b, |x, y| ((x != 0 && y != 0) as $t)),
            MPI_LOR => lanes!($t, $a, $b, |x, y| ((x != 0 || y != 0) as $t)),
            MPI_LXOR => lanes!($t, $a, $b, |x, y| (((x != 0) != (y != 0)) as $t)),
            MPI_BAND => lanes!($t, $a, $b, |x, y| x & y),
            MPI_BOR => lanes!($t, $a, $b, |x, y| x | y),
            MPI_BXOR => lanes!($t, $a, $b, |x, y| x ^ y),
            MPI_REPLACE => $b.copy_from_slice($a),
            MPI_NO_OP => {}
            _ => return Err(bad($op, $dt)),
        }
    };
}

macro_rules! float_ops {
    ($t:ty, $op:expr, $a:expr, $b:expr, $dt:expr) => {
        match $op {
            MPI_SUM => lanes!($t, $a, $b, |x, y| x + y),
            MPI_PROD => lanes!($t, $a, $b, |x, y| x * y),
            MPI_MAX => lanes!($t, $a, $b, |x, y| if x > y { x } else { y }),
            MPI_MIN => lanes!($t, $a, $b, |x, y| if x < y { x } else { y }),
            MPI_REPLACE => $b.copy_from_slice($a),
            MPI_NO_OP => {}
            _ => return Err(bad($op, $dt)),
        }
    };
}

macro_rules! complex_ops {
    ($t:ty, $op:expr, $a:expr, $b:expr, $dt:expr) => {{
        const N: usize = std::mem::size_of::<$t>();
        match $op {
            MPI_SUM | MPI_PROD => {
                for (ca, cb) in $a.chunks_exact(2 * N).zip($b.chunks_exact_mut(2 * N)) {
                    let ar = <$t>::from_ne_bytes(ca[..N].try_into().unwrap());
                    let ai = <$t>::from_ne_bytes(ca[N..].try_into().unwrap());
                    let br = <$t>::from_ne_bytes(cb[..N].try_into().unwrap());
                    let bi = <$t>::from_ne_bytes(cb[N..].try_into().unwrap());
                    let (r, i) = if $op == MPI_SUM { (ar + br, ai + bi) } else { (ar * br - ai * bi, ar * bi + ai * br) };
                    cb[..N].copy_from_slice(&r.to_ne_bytes());
                    cb[N..].copy_from_slice(&i.to_ne_bytes());
                }
            }
            MPI_REPLACE => $b.copy_from_slice($a),
            MPI_NO_OP => {}
            _ => return Err(bad($op, $dt)),
        }
    }};
}

/// MINLOC/MAXLOC on (value, int) pairs laid out with `stride` bytes per pair
/// and the int at `ioff`.
macro_rules! loc_ops {
    ($t:ty, $op:expr, $a:expr, $b:expr, $stride:expr, $ioff:expr, $dt:expr) => {{
        const N: usize = std::mem::size_of::<$t>();
        let max = match $op {
            MPI_MAXLOC => true,
            MPI_MINLOC => false,
            MPI_REPLACE => {
                $b.copy_from_slice($a);
                return Ok(());
            }
            MPI_NO_OP => return Ok(()),
            _ => return Err(bad($op, $dt)),
        };
        for (ca, cb) in $a.chunks_exact($stride).zip($b.chunks_exact_mut($stride)) {
            let va = <$t>::from_ne_bytes(ca[..N].try_into().unwrap());
            let vb = <$t>::from_ne_bytes(cb[..N].try_into().unwrap());
            let ia = i32::from_ne_bytes(ca[$ioff..$ioff + 4].try_into().unwrap());
            let ib = i32::from_ne_bytes(cb[$ioff..$ioff + 4].try_into().unwrap());
            let take_a = if va == vb { ia < ib } else if max { va > vb } else { va < vb };
            if take_a {
                cb[..N].copy_from_slice(&va.to_ne_bytes());
                cb[$ioff..$ioff + 4].copy_from_slice(&ia.to_ne_bytes());
            }
        }
    }};
}

/// True for the predefined operations.
pub fn is_predefined(op: MPI_Op) -> bool {
    (MPI_MAX..=MPI_NO_OP).contains(&op)
}

/// `b = a op b` on packed elements of predefined type `dt`.
pub fn apply(op: MPI_Op, dt: MPI_Datatype, a: &[u8], b: &mut [u8]) -> MpiResult<()> {
    debug_assert_eq!(a.len(), b.len());
    match dt {
        MPI_CHAR | MPI_SIGNED_CHAR | MPI_INT8_T | MPI_INTEGER1 => int_ops!(i8, op, a, b, dt),
        MPI_UNSIGNED_CHAR | MPI_UINT8_T | MPI_BYTE | MPI_C_BOOL | MPI_CXX_BOOL => int_ops!(u8, op, a, b, dt),
        MPI_SHORT | MPI_INT16_T | MPI_INTEGER2 => int_ops!(i16, op, a, b, dt),
        MPI_UNSIGNED_SHORT | MPI_UINT16_T => int_ops!(u16, op, a, b, dt),
        MPI_INT | MPI_INT32_T | MPI_INTEGER | MPI_INTEGER4 | MPI_LOGICAL => int_ops!(i32, op, a, b, dt),
        MPI_UNSIGNED | MPI_UINT32_T | MPI_WCHAR => int_ops!(u32, op, a, b, dt),
        MPI_LONG | MPI_LONG_LONG_INT | MPI_INT64_T | MPI_INTEGER8 | MPI_AINT | MPI_OFFSET | MPI_COUNT => {
            int_ops!(i64, op, a, b, dt)
        }
        MPI_UNSIGNED_LONG | MPI_UNSIGNED_LONG_LONG | MPI_UINT64_T => int_ops!(u64, op, a, b, dt),
        MPI_FLOAT | MPI_REAL | MPI_REAL4 => float_ops!(f32, op, a, b, dt),
        MPI_DOUBLE | MPI_DOUBLE_PRECISION | MPI_REAL8 => float_ops!(f64, op, a, b, dt),
        MPI_C_FLOAT_COMPLEX | MPI_COMPLEX | MPI_COMPLEX8 | MPI_CXX_FLOAT_COMPLEX => complex_ops!(f32, op, a, b, dt),
        MPI_C_DOUBLE_COMPLEX | MPI_DOUBLE_COMPLEX | MPI_COMPLEX16 | MPI_CXX_DOUBLE_COMPLEX => {
            complex_ops!(f64, op, a, b, dt)
        }
        MPI_2INT | MPI_2INTEGER => loc_ops!(i32, op, a, b, 8, 4, dt),
        MPI_FLOAT_INT => loc_ops!(f32, op, a, b, 8, 4, dt),
        MPI_DOUBLE_INT => loc_ops!(f64, op, a, b, 12, 8, dt),
        MPI_LONG_INT => loc_ops!(i64, op, a, b, 12, 8, dt),
        MPI_SHORT_INT => loc_ops!(i16, op, a, b, 6, 2, dt),
        _ => return Err(bad(op, dt)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T: Copy>(v: &[T]) -> Vec<u8> {
        // SAFETY: plain-old-data values viewed as bytes.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)).to_vec() }
    }

    #[test]
    fn sums_and_locs() {
        let a = bytes(&[1i32, 2, 3]);
        let mut b = bytes(&[10i32, 20, 30]);
        apply(MPI_SUM, MPI_INT, &a, &mut b).unwrap();
        assert_eq!(b, bytes(&[11i32, 22, 33]));
        let a = bytes(&[1.5f64]);
        let mut b = bytes(&[2.0f64]);
        apply(MPI_MAX, MPI_DOUBLE, &a, &mut b).unwrap();
        assert_eq!(b, bytes(&[2.0f64]));
        // 2INT maxloc: (5, rank 3) vs (5, rank 1) -> lower index wins ties.
        let a = bytes(&[5i32, 3]);
        let mut b = bytes(&[5i32, 1]);
        apply(MPI_MAXLOC, MPI_2INT, &a, &mut b).unwrap();
        assert_eq!(b, bytes(&[5i32, 1]));
        assert!(apply(MPI_BAND, MPI_DOUBLE, &a[..8], &mut b[..8]).is_err());
    }
}
