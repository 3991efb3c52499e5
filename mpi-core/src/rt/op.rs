//! Reduction operations: the predefined operations on the predefined types
//! the standard allows them for (MPI 4.1 §6.9.2), and user functions
//! (`MPI_Op_create`).
//!
//! Data is always packed (the bytes a datatype carries, back to back).
//! `apply(op, dt, a, b)` computes `b[i] = a[i] op b[i]` (the standard's
//! `inoutvec = invec op inoutvec`); `apply_dir(.., rev = true)` computes
//! `b[i] = b[i] op a[i]`, so callers can keep "lower ranks on the left"
//! whichever buffer holds the result (and Allreduce gives identical bits on
//! every rank even for MAX of +0/-0 or NaNs).
//!
//! `long double` (x87 80-bit extended, in 16-byte slots) is computed with x87
//! instructions, so results are exactly those of C code on this machine.

use std::os::raw::c_int;

use mpi_api::abi::*;

use super::error::{MpiError, MpiResult};

/// The standard's groups of basic datatypes for reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    CInt,
    FInt,
    /// `MPI_AINT`, `MPI_OFFSET`, `MPI_COUNT`: the standard's "multi-language
    /// types"; MPICH also allows the logical operations on them, and
    /// programs written for MPICH use them, so they get every integer
    /// operation.
    Multi,
    /// `MPIX_C_FLOAT16` (IEEE binary16), computed through `f32`.
    Half,
    Float,
    Complex,
    Logical,
    Byte,
    Pair,
    Other,
}

fn class(dt: MPI_Datatype) -> Class {
    match dt {
        MPI_CHAR
        | MPI_SIGNED_CHAR
        | MPI_UNSIGNED_CHAR
        | MPI_SHORT
        | MPI_UNSIGNED_SHORT
        | MPI_INT
        | MPI_UNSIGNED
        | MPI_LONG
        | MPI_UNSIGNED_LONG
        | MPI_LONG_LONG_INT
        | MPI_UNSIGNED_LONG_LONG
        | MPI_INT8_T
        | MPI_INT16_T
        | MPI_INT32_T
        | MPI_INT64_T
        | MPI_UINT8_T
        | MPI_UINT16_T
        | MPI_UINT32_T
        | MPI_UINT64_T
        | MPI_WCHAR => Class::CInt,
        MPI_INTEGER | MPI_INTEGER1 | MPI_INTEGER2 | MPI_INTEGER4 | MPI_INTEGER8 => Class::FInt,
        MPI_AINT | MPI_OFFSET | MPI_COUNT => Class::Multi,
        MPIX_C_FLOAT16 => Class::Half,
        MPI_FLOAT | MPI_DOUBLE | MPI_LONG_DOUBLE | MPI_REAL | MPI_DOUBLE_PRECISION | MPI_REAL4 | MPI_REAL8 => {
            Class::Float
        }
        MPI_C_FLOAT_COMPLEX
        | MPI_C_DOUBLE_COMPLEX
        | MPI_C_LONG_DOUBLE_COMPLEX
        | MPI_COMPLEX
        | MPI_DOUBLE_COMPLEX
        | MPI_COMPLEX8
        | MPI_COMPLEX16
        | MPI_CXX_FLOAT_COMPLEX
        | MPI_CXX_DOUBLE_COMPLEX
        | MPI_CXX_LONG_DOUBLE_COMPLEX => Class::Complex,
        MPI_LOGICAL | MPI_C_BOOL | MPI_CXX_BOOL => Class::Logical,
        MPI_BYTE => Class::Byte,
        MPI_2INT
        | MPI_2INTEGER
        | MPI_2REAL
        | MPI_2DOUBLE_PRECISION
        | MPI_FLOAT_INT
        | MPI_DOUBLE_INT
        | MPI_LONG_INT
        | MPI_SHORT_INT
        | MPI_LONG_DOUBLE_INT => Class::Pair,
        _ => Class::Other,
    }
}

fn name(op: MPI_Op) -> &'static str {
    predefined_name(CType::Op, op).unwrap_or("(user-defined op)")
}

fn type_name(dt: MPI_Datatype) -> &'static str {
    predefined_name(CType::Datatype, dt).unwrap_or("(derived datatype)")
}

/// True for the predefined operations.
pub fn is_predefined(op: MPI_Op) -> bool {
    (MPI_MAX..=MPI_NO_OP).contains(&op)
}

/// Checks that predefined `op` may reduce elements of predefined type `dt`
/// in a collective (`MPI_REPLACE`/`MPI_NO_OP` are for one-sided only).
pub fn check(op: MPI_Op, dt: MPI_Datatype) -> MpiResult<()> {
    use Class::*;
    let c = class(dt);
    let ok = match op {
        MPI_MAX | MPI_MIN => matches!(c, CInt | FInt | Multi | Float | Half),
        MPI_SUM | MPI_PROD => matches!(c, CInt | FInt | Multi | Float | Half | Complex),
        MPI_LAND | MPI_LOR | MPI_LXOR => matches!(c, CInt | Multi | Logical),
        MPI_BAND | MPI_BOR | MPI_BXOR => matches!(c, CInt | FInt | Multi | Byte),
        MPI_MAXLOC | MPI_MINLOC => c == Pair,
        MPI_REPLACE | MPI_NO_OP => {
            return Err(MpiError::new(
                MPI_ERR_OP,
                format!("{} is only valid in one-sided accumulate operations", name(op)),
            ))
        }
        _ => return Err(MpiError::new(MPI_ERR_OP, format!("invalid operation handle 0x{:08x}", op as u32))),
    };
    if !ok {
        return Err(MpiError::new(MPI_ERR_OP, format!("{} is not defined for datatype {}", name(op), type_name(dt))));
    }
    Ok(())
}

/// Whether `MPI_Compare_and_swap` takes elements of `dt`: a C or Fortran
/// integer, logical, multi-language or byte type (MPI 3.1 11.3.4), not a
/// floating-point, complex, pair or derived one. (`MPI_CHAR` counts as a C
/// integer here, as in the reductions above and in MPICH.)
pub fn compare_and_swap_type(dt: MPI_Datatype) -> bool {
    use Class::*;
    matches!(class(dt), CInt | FInt | Multi | Logical | Byte)
}

/// Plain numbers any bit pattern of which is a valid value.
trait Pod: Copy {}
macro_rules! pod {
    ($($t:ty),*) => { $( impl Pod for $t {} impl Pod for [$t; 2] {} )* };
}
pod!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

/// `b = f(a, b)` (or `f(b, a)` when `rev`) element by element.
#[inline(always)]
fn lanes<T: Pod>(a: &[u8], b: &mut [u8], rev: bool, f: impl Fn(T, T) -> T) {
    let n = std::mem::size_of::<T>();
    let cnt = a.len().min(b.len()) / n;
    if (a.as_ptr() as *const T).is_aligned() && (b.as_ptr() as *const T).is_aligned() {
        // SAFETY: both buffers are aligned for T and hold `cnt` elements; T
        // is plain data valid for any bits; `a` and `b` are distinct borrows.
        let (av, bv) = unsafe {
            (
                std::slice::from_raw_parts(a.as_ptr() as *const T, cnt),
                std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut T, cnt),
            )
        };
        if rev {
            for (x, y) in av.iter().zip(bv.iter_mut()) {
                *y = f(*y, *x);
            }
        } else {
            for (x, y) in av.iter().zip(bv.iter_mut()) {
                *y = f(*x, *y);
            }
        }
    } else {
        for i in 0..cnt {
            // SAFETY: element i lies within both buffers; unaligned access.
            unsafe {
                let pa = a.as_ptr().add(i * n) as *const T;
                let pb = b.as_mut_ptr().add(i * n) as *mut T;
                let (x, y) = (pa.read_unaligned(), pb.read_unaligned());
                pb.write_unaligned(if rev { f(y, x) } else { f(x, y) });
            }
        }
    }
}

trait Int: Pod + PartialOrd + Eq {
    const ZERO: Self;
    const ONE: Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}
macro_rules! int {
    ($($t:ty),*) => { $(
        impl Int for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn and(self, o: Self) -> Self { self & o }
            #[inline(always)] fn or(self, o: Self) -> Self { self | o }
            #[inline(always)] fn xor(self, o: Self) -> Self { self ^ o }
        }
    )* };
}
int!(i8, u8, i16, u16, i32, u32, i64, u64);

fn int_op<T: Int>(op: MPI_Op, a: &[u8], b: &mut [u8], rev: bool) -> bool {
    let t = |c: bool| if c { T::ONE } else { T::ZERO };
    match op {
        MPI_SUM => lanes(a, b, rev, T::add),
        MPI_PROD => lanes(a, b, rev, T::mul),
        MPI_MAX => lanes(a, b, rev, |x: T, y: T| if x > y { x } else { y }),
        MPI_MIN => lanes(a, b, rev, |x: T, y: T| if x < y { x } else { y }),
        MPI_LAND => lanes(a, b, rev, |x: T, y: T| t(x != T::ZERO && y != T::ZERO)),
        MPI_LOR => lanes(a, b, rev, |x: T, y: T| t(x != T::ZERO || y != T::ZERO)),
        MPI_LXOR => lanes(a, b, rev, |x: T, y: T| t((x != T::ZERO) != (y != T::ZERO))),
        MPI_BAND => lanes(a, b, rev, T::and),
        MPI_BOR => lanes(a, b, rev, T::or),
        MPI_BXOR => lanes(a, b, rev, T::xor),
        _ => return false,
    }
    true
}

trait Float:
    Pod + PartialOrd + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Sub<Output = Self>
{
}
impl Float for f32 {}
impl Float for f64 {}

fn float_op<T: Float>(op: MPI_Op, a: &[u8], b: &mut [u8], rev: bool) -> bool {
    match op {
        MPI_SUM => lanes(a, b, rev, |x: T, y: T| x + y),
        MPI_PROD => lanes(a, b, rev, |x: T, y: T| x * y),
        MPI_MAX => lanes(a, b, rev, |x: T, y: T| if x > y { x } else { y }),
        MPI_MIN => lanes(a, b, rev, |x: T, y: T| if x < y { x } else { y }),
        _ => return false,
    }
    true
}

/// An IEEE binary16 value (`_Float16`), as its bits.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct F16(u16);
impl Pod for F16 {}

impl F16 {
    /// The exact `f32` of a binary16 value (every one is representable).
    fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let (e, m) = ((h >> 10) & 0x1f, h & 0x3ff);
        let bits = match e {
            // Zero and subnormals: m * 2^-24, exact in f32.
            0 => return f32::from_bits(sign | (m as f32 * f32::from_bits(0x3380_0000)).to_bits()),
            // Infinities and NaNs (the payload kept, a NaN stays a NaN).
            0x1f => sign | 0x7f80_0000 | (m << 13),
            // Rebias the exponent (15 to 127), widen the mantissa.
            _ => sign | ((e + 112) << 23) | (m << 13),
        };
        f32::from_bits(bits)
    }

    /// The binary16 nearest to `x`, ties to even (IEEE's default rounding).
    /// A sum or product of two binary16 values computed in `f32` and
    /// rounded here is correctly rounded: f32 has 24 >= 2 * 11 + 2 bits,
    /// so rounding twice cannot differ from rounding once.
    fn from_f32(x: f32) -> F16 {
        let b = x.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        let exp = ((b >> 23) & 0xff) as i32;
        let man = b & 0x7f_ffff;
        if exp == 0xff {
            // Infinity, or a NaN made quiet so no payload truncates to infinity.
            let nan = if man != 0 { 0x200 | (man >> 13) as u16 } else { 0 };
            return F16(sign | 0x7c00 | nan);
        }
        // Rounds away the low `shift` bits of `m` to nearest, ties to even.
        let round = |m: u32, shift: u32| {
            let (q, rem, half) = (m >> shift, m & ((1 << shift) - 1), 1 << (shift - 1));
            if rem > half || (rem == half && q & 1 == 1) {
                q + 1
            } else {
                q
            }
        };
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return F16(sign | 0x7c00);
        }
        if e <= 0 {
            // A binary16 subnormal (or zero): value / 2^-24 with the
            // implicit bit made explicit; below 2^-25 everything rounds to 0.
            if e < -10 {
                return F16(sign);
            }
            return F16(sign | round(man | 0x80_0000, (14 - e) as u32) as u16);
        }
        // A carry out of the mantissa bumps the exponent, up to infinity.
        F16(sign | round(((e as u32) << 23) | man, 13) as u16)
    }
}

fn half_op(op: MPI_Op, a: &[u8], b: &mut [u8], rev: bool) -> bool {
    let arith = |f: fn(f32, f32) -> f32| move |x: F16, y: F16| F16::from_f32(f(x.to_f32(), y.to_f32()));
    match op {
        MPI_SUM => lanes(a, b, rev, arith(|x, y| x + y)),
        MPI_PROD => lanes(a, b, rev, arith(|x, y| x * y)),
        MPI_MAX => lanes(a, b, rev, |x: F16, y: F16| if x.to_f32() > y.to_f32() { x } else { y }),
        MPI_MIN => lanes(a, b, rev, |x: F16, y: F16| if x.to_f32() < y.to_f32() { x } else { y }),
        _ => return false,
    }
    true
}

fn complex_op<T: Float>(op: MPI_Op, a: &[u8], b: &mut [u8], rev: bool) -> bool
where
    [T; 2]: Pod,
{
    match op {
        MPI_SUM => lanes(a, b, rev, |x: [T; 2], y: [T; 2]| [x[0] + y[0], x[1] + y[1]]),
        MPI_PROD => lanes(a, b, rev, |x: [T; 2], y: [T; 2]| [x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]]),
        _ => return false,
    }
    true
}

/// A value that MINLOC/MAXLOC compare.
trait Val: Copy {
    fn gt(self, o: Self) -> bool;
    fn lt(self, o: Self) -> bool;
}
macro_rules! val {
    ($($t:ty),*) => { $(
        impl Val for $t {
            #[inline(always)] fn gt(self, o: Self) -> bool { self > o }
            #[inline(always)] fn lt(self, o: Self) -> bool { self < o }
        }
    )* };
}
val!(i16, i32, i64, f32, f64);

/// MINLOC/MAXLOC on packed (value, index) pairs: `stride` bytes per pair, the
/// index at `ioff`. Ties keep the smaller index (so the op is commutative).
fn loc_op<V: Val, I: Val>(
    max: bool,
    a: &[u8],
    b: &mut [u8],
    stride: usize,
    ioff: usize,
    read_v: impl Fn(&[u8]) -> V,
    read_i: impl Fn(&[u8]) -> I,
) {
    for (ca, cb) in a.chunks_exact(stride).zip(b.chunks_exact_mut(stride)) {
        let (va, vb) = (read_v(ca), read_v(cb));
        let (ia, ib) = (read_i(&ca[ioff..]), read_i(&cb[ioff..]));
        let better = if max { va.gt(vb) } else { va.lt(vb) };
        let tie = !va.gt(vb) && !va.lt(vb);
        if better || (tie && ia.lt(ib)) {
            cb.copy_from_slice(ca);
        }
    }
}

macro_rules! reader {
    ($t:ty) => {
        |s: &[u8]| <$t>::from_ne_bytes(s[..std::mem::size_of::<$t>()].try_into().unwrap())
    };
}

fn loc(op: MPI_Op, dt: MPI_Datatype, a: &[u8], b: &mut [u8]) -> bool {
    let max = match op {
        MPI_MAXLOC => true,
        MPI_MINLOC => false,
        _ => return false,
    };
    match dt {
        MPI_2INT | MPI_2INTEGER => loc_op(max, a, b, 8, 4, reader!(i32), reader!(i32)),
        MPI_2REAL => loc_op(max, a, b, 8, 4, reader!(f32), reader!(f32)),
        MPI_2DOUBLE_PRECISION => loc_op(max, a, b, 16, 8, reader!(f64), reader!(f64)),
        MPI_FLOAT_INT => loc_op(max, a, b, 8, 4, reader!(f32), reader!(i32)),
        MPI_DOUBLE_INT => loc_op(max, a, b, 12, 8, reader!(f64), reader!(i32)),
        MPI_LONG_INT => loc_op(max, a, b, 12, 8, reader!(i64), reader!(i32)),
        MPI_SHORT_INT => loc_op(max, a, b, 6, 2, reader!(i16), reader!(i32)),
        MPI_LONG_DOUBLE_INT => loc_op(max, a, b, 20, 16, x87::Ld::read, reader!(i32)),
        _ => return false,
    }
    true
}

/// `b = a op b` on packed elements of predefined type `dt`.
pub fn apply(op: MPI_Op, dt: MPI_Datatype, a: &[u8], b: &mut [u8]) -> MpiResult<()> {
    apply_dir(op, dt, a, b, false)
}

/// `b = a op b`, or `b = b op a` when `rev`, on packed elements of
/// predefined type `dt`. Also does `MPI_REPLACE` (`b = a`) and `MPI_NO_OP`.
pub fn apply_dir(op: MPI_Op, dt: MPI_Datatype, a: &[u8], b: &mut [u8], rev: bool) -> MpiResult<()> {
    debug_assert_eq!(a.len(), b.len());
    match op {
        MPI_REPLACE => {
            b.copy_from_slice(a);
            return Ok(());
        }
        MPI_NO_OP => return Ok(()),
        _ => {}
    }
    let c = class(dt);
    let ok = match (c, dt) {
        (Class::Logical, MPI_LOGICAL) => matches!(op, MPI_LAND | MPI_LOR | MPI_LXOR) && int_op::<i32>(op, a, b, rev),
        (Class::Logical, _) => matches!(op, MPI_LAND | MPI_LOR | MPI_LXOR) && int_op::<u8>(op, a, b, rev),
        (Class::Byte, _) => matches!(op, MPI_BAND | MPI_BOR | MPI_BXOR) && int_op::<u8>(op, a, b, rev),
        (Class::Pair, _) => loc(op, dt, a, b),
        (Class::Complex, _) => match builtin_type_size(dt) {
            Some(8) => complex_op::<f32>(op, a, b, rev),
            Some(16) => complex_op::<f64>(op, a, b, rev),
            Some(32) => x87::complex_op(op, a, b, rev),
            _ => false,
        },
        (Class::Float, MPI_LONG_DOUBLE) => x87::float_op(op, a, b, rev),
        (Class::Float, _) => match builtin_type_size(dt) {
            Some(4) => float_op::<f32>(op, a, b, rev),
            Some(8) => float_op::<f64>(op, a, b, rev),
            _ => false,
        },
        (Class::Half, _) => half_op(op, a, b, rev),
        (Class::CInt | Class::FInt | Class::Multi, _) => {
            let signed = !matches!(
                dt,
                MPI_UNSIGNED_CHAR
                    | MPI_UNSIGNED_SHORT
                    | MPI_UNSIGNED
                    | MPI_UNSIGNED_LONG
                    | MPI_UNSIGNED_LONG_LONG
                    | MPI_UINT8_T
                    | MPI_UINT16_T
                    | MPI_UINT32_T
                    | MPI_UINT64_T
                    | MPI_WCHAR
            );
            match (builtin_type_size(dt), signed) {
                (Some(1), true) => int_op::<i8>(op, a, b, rev),
                (Some(1), false) => int_op::<u8>(op, a, b, rev),
                (Some(2), true) => int_op::<i16>(op, a, b, rev),
                (Some(2), false) => int_op::<u16>(op, a, b, rev),
                (Some(4), true) => int_op::<i32>(op, a, b, rev),
                (Some(4), false) => int_op::<u32>(op, a, b, rev),
                (Some(8), true) => int_op::<i64>(op, a, b, rev),
                (Some(8), false) => int_op::<u64>(op, a, b, rev),
                _ => false,
            }
        }
        (Class::Other, _) => false,
    };
    if !ok {
        return Err(MpiError::new(MPI_ERR_OP, format!("{} is not defined for datatype {}", name(op), type_name(dt))));
    }
    Ok(())
}

/// Size in bytes of one packed element of predefined type `dt` (the unit a
/// reduction may never split).
pub fn unit_size(dt: MPI_Datatype) -> usize {
    builtin_type_size(dt).unwrap_or(1).max(1)
}

/// A function given to `MPI_Op_create` (or `MPI_Op_create_c` when `big`).
#[derive(Clone, Copy, Debug)]
pub struct UserOp {
    pub f: usize,
    pub commute: bool,
    pub big: bool,
}

type UserFn = unsafe extern "C" fn(*mut u8, *mut u8, *mut c_int, *mut MPI_Datatype);
type UserFnC = unsafe extern "C" fn(*mut u8, *mut u8, *mut MPI_Count, *mut MPI_Datatype);

impl UserOp {
    /// Calls the function on `count` elements: `inout = in op inout`.
    ///
    /// # Safety
    /// `inv` and `inout` address `count` elements of `dt` in the layout the
    /// datatype describes; `f` is the function the program registered.
    pub unsafe fn call(&self, inv: *mut u8, inout: *mut u8, count: usize, dt: MPI_Datatype, extent: isize) {
        let mut dt = dt;
        if self.big {
            // SAFETY: `f` is the address of the `MPI_User_function_c` the
            // program gave `MPI_Op_create_c` (the contract; `big` tells the
            // two kinds apart).
            let f: UserFnC = unsafe { std::mem::transmute::<usize, UserFnC>(self.f) };
            let mut n = count as MPI_Count;
            // SAFETY: called as the standard says: `inv` and `inout` address
            // `count` elements of `dt` (the contract); count and datatype
            // are locals the function may read.
            unsafe { f(inv, inout, &mut n, &mut dt) };
            return;
        }
        // SAFETY: `f` is the address of the `MPI_User_function` the program
        // gave `MPI_Op_create` (the contract; `big` tells the two kinds apart).
        let f: UserFn = unsafe { std::mem::transmute::<usize, UserFn>(self.f) };
        let mut done = 0usize;
        while done < count {
            let n = (count - done).min(c_int::MAX as usize);
            let off = done as isize * extent;
            let mut len = n as c_int;
            // SAFETY: called as the standard says, on elements `done..done +
            // n` of the `count` that `inv` and `inout` address (the
            // contract), one `extent` apart; count and datatype are locals.
            unsafe { f(inv.wrapping_offset(off), inout.wrapping_offset(off), &mut len, &mut dt) };
            done += n;
        }
    }
}

/// `long double` arithmetic with x87 instructions.
mod x87 {
    use super::*;

    /// An x87 80-bit value in a 16-byte slot.
    #[derive(Clone, Copy)]
    #[repr(C, align(16))]
    pub struct Ld([u8; 16]);

    impl Ld {
        pub fn read(s: &[u8]) -> Ld {
            let mut v = [0u8; 16];
            v[..10].copy_from_slice(&s[..10]);
            Ld(v)
        }
        fn write(self, s: &mut [u8]) {
            s[..10].copy_from_slice(&self.0[..10]);
        }
        fn neg(mut self) -> Ld {
            self.0[9] ^= 0x80;
            self
        }
    }

    #[cfg(target_arch = "x86_64")]
    macro_rules! arith {
        ($name:ident, $insn:literal) => {
            fn $name(a: Ld, b: Ld) -> Ld {
                let mut out = Ld([0; 16]);
                // SAFETY: loads two 80-bit values from valid 16-byte slots,
                // combines them (popping one) and stores and pops the result,
                // leaving the x87 stack empty as the ABI requires.
                unsafe {
                    std::arch::asm!(
                        "fld tbyte ptr [{a}]",
                        "fld tbyte ptr [{b}]",
                        $insn,
                        "fstp tbyte ptr [{o}]",
                        a = in(reg) a.0.as_ptr(),
                        b = in(reg) b.0.as_ptr(),
                        o = in(reg) out.0.as_mut_ptr(),
                        out("st(0)") _, out("st(1)") _,
                        options(nostack),
                    );
                }
                out
            }
        };
    }
    #[cfg(target_arch = "x86_64")]
    arith!(add, "faddp st(1), st");
    #[cfg(target_arch = "x86_64")]
    arith!(mul, "fmulp st(1), st");

    #[cfg(target_arch = "x86_64")]
    fn gt(a: Ld, b: Ld) -> bool {
        let r: u8;
        // SAFETY: loads two values, compares (popping one), pops the other;
        // the x87 stack is empty afterwards.
        unsafe {
            std::arch::asm!(
                "fld tbyte ptr [{b}]",
                "fld tbyte ptr [{a}]",
                "fucomip st, st(1)",
                "seta {r}",
                "fstp st(0)",
                a = in(reg) a.0.as_ptr(),
                b = in(reg) b.0.as_ptr(),
                r = out(reg_byte) r,
                out("st(0)") _, out("st(1)") _,
                options(nostack),
            );
        }
        r != 0
    }

    #[cfg(target_arch = "x86_64")]
    impl Val for Ld {
        fn gt(self, o: Self) -> bool {
            gt(self, o)
        }
        fn lt(self, o: Self) -> bool {
            gt(o, self)
        }
    }

    #[cfg(target_arch = "x86_64")]
    pub fn float_op(op: MPI_Op, a: &[u8], b: &mut [u8], rev: bool) -> bool {
        let f: fn(Ld, Ld) -> Ld = match op {
            MPI_SUM => add,
            MPI_PROD => mul,
            MPI_MAX => |x, y| if gt(x, y) { x } else { y },
            MPI_MIN => |x, y| if gt(y, x) { x } else { y },
            _ => return false,
        };
        for (ca, cb) in a.chunks_exact(16).zip(b.chunks_exact_mut(16)) {
            let (x, y) = (Ld::read(ca), Ld::read(cb));
            (if rev { f(y, x) } else { f(x, y) }).write(cb);
        }
        true
    }

    #[cfg(target_arch = "x86_64")]
    pub fn complex_op(op: MPI_Op, a: &[u8], b: &mut [u8], rev: bool) -> bool {
        if !matches!(op, MPI_SUM | MPI_PROD) {
            return false;
        }
        for (ca, cb) in a.chunks_exact(32).zip(b.chunks_exact_mut(32)) {
            let (mut x, mut y) = ([Ld::read(ca), Ld::read(&ca[16..])], [Ld::read(cb), Ld::read(&cb[16..])]);
            if rev {
                std::mem::swap(&mut x, &mut y);
            }
            let (re, im) = if op == MPI_SUM {
                (add(x[0], y[0]), add(x[1], y[1]))
            } else {
                (add(mul(x[0], y[0]), mul(x[1], y[1]).neg()), add(mul(x[0], y[1]), mul(x[1], y[0])))
            };
            re.write(cb);
            im.write(&mut cb[16..]);
        }
        true
    }

    #[cfg(not(target_arch = "x86_64"))]
    impl Val for Ld {
        fn gt(self, _: Self) -> bool {
            false
        }
        fn lt(self, _: Self) -> bool {
            false
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    pub fn float_op(_: MPI_Op, _: &[u8], _: &mut [u8], _: bool) -> bool {
        false
    }
    #[cfg(not(target_arch = "x86_64"))]
    pub fn complex_op(_: MPI_Op, _: &[u8], _: &mut [u8], _: bool) -> bool {
        false
    }
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
        assert!(check(MPI_BAND, MPI_DOUBLE).is_err());
        assert!(check(MPI_SUM, MPI_C_BOOL).is_err());
        assert!(check(MPI_LAND, MPI_C_BOOL).is_ok());
        assert!(check(MPI_SUM, MPI_BYTE).is_err());
    }

    #[test]
    fn direction_keeps_operand_order() {
        // MAX(+0, -0) is the left operand: rev must swap operands.
        let a = bytes(&[0.0f64]);
        let mut b = bytes(&[-0.0f64]);
        apply_dir(MPI_MAX, MPI_DOUBLE, &a, &mut b, false).unwrap();
        assert_eq!(b, bytes(&[-0.0f64]));
        let mut b = bytes(&[-0.0f64]);
        apply_dir(MPI_MAX, MPI_DOUBLE, &a, &mut b, true).unwrap();
        assert_eq!(b, bytes(&[0.0f64]));
        // unaligned path
        let a = [0u8, 1, 0, 0, 0];
        let mut b = [0u8, 2, 0, 0, 0];
        apply(MPI_SUM, MPI_INT, &a[1..], &mut b[1..]).unwrap();
        assert_eq!(b[1], 3);
    }

    #[test]
    fn half_conversions_round_to_nearest_even() {
        // Every binary16 value other than a NaN survives the trip through f32.
        for h in 0..=u16::MAX {
            let x = F16(h).to_f32();
            if !x.is_nan() {
                assert_eq!(F16::from_f32(x).0, h, "0x{h:04x}");
            } else {
                assert!(F16::from_f32(x).to_f32().is_nan());
            }
        }
        let r = |x: f32| F16::from_f32(x).0;
        assert_eq!(r(1.0 + 2f32.powi(-11)), 0x3c00); // tie, even is 1.0
        assert_eq!(r(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02); // tie, even is 1 + 2 ulp
        assert_eq!(r(1.0 + 1.1 * 2f32.powi(-11)), 0x3c01);
        assert_eq!(r(65504.0), 0x7bff);
        assert_eq!(r(65519.0), 0x7bff);
        assert_eq!(r(65520.0), 0x7c00); // halfway to 2^16 rounds to infinity
        assert_eq!(r(-1e10), 0xfc00);
        assert_eq!(r(2f32.powi(-24)), 0x0001); // smallest subnormal
        assert_eq!(r(2f32.powi(-25)), 0x0000); // tie, even is 0
        assert_eq!(r(1.5 * 2f32.powi(-25)), 0x0001);
        assert_eq!(r(3.0 * 2f32.powi(-25)), 0x0002); // tie between 1 and 2 units
        assert_eq!(r(2f32.powi(-14) - 2f32.powi(-25)), 0x0400); // rounds up to the smallest normal
        assert_eq!(r(-0.0), 0x8000);
        assert_eq!(r(f32::NAN) & 0x7e00, 0x7e00);
    }

    #[test]
    fn half_reductions_are_correctly_rounded() {
        let h = |v: &[u16]| bytes(v);
        // 0.1 + 0.2 in binary16: 0x2e66 + 0x3266 is halfway between 0x34cc
        // and 0x34cd; the even one wins (0.2998...).
        let mut b = h(&[0x3266, 0x3c00, 0x7bff, 0xc000]);
        apply(MPI_SUM, MPIX_C_FLOAT16, &h(&[0x2e66, 0x1000, 0x7bff, 0x3c00]), &mut b).unwrap();
        assert_eq!(b, h(&[0x34cc, 0x3c00, 0x7c00, 0xbc00]));
        let mut b = h(&[0x4000, 0x3e00]);
        apply(MPI_PROD, MPIX_C_FLOAT16, &h(&[0x4200, 0x3e00]), &mut b).unwrap(); // 2*3, 1.5*1.5
        assert_eq!(b, h(&[0x4600, 0x4080]));
        let mut b = h(&[0xc000, 0x4000]);
        apply(MPI_MAX, MPIX_C_FLOAT16, &h(&[0x3c00, 0x3c00]), &mut b).unwrap();
        assert_eq!(b, h(&[0x3c00, 0x4000]));
        apply(MPI_MIN, MPIX_C_FLOAT16, &h(&[0xfc00, 0x3c00]), &mut b).unwrap();
        assert_eq!(b, h(&[0xfc00, 0x3c00]));
        // Against exact sums (exact in f64), rounded by picking the nearest
        // neighbour, ties to the even bit pattern.
        let mut seed = 0x1234_5678u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed & 0x7bff) as u16 | (seed >> 16) as u16 & 0x8000
        };
        for _ in 0..20000 {
            let (x, y) = (next(), next());
            let mut b = h(&[y]);
            apply(MPI_SUM, MPIX_C_FLOAT16, &h(&[x]), &mut b).unwrap();
            let got = u16::from_ne_bytes([b[0], b[1]]);
            let exact = F16(x).to_f32() as f64 + F16(y).to_f32() as f64;
            let g = F16(got).to_f32() as f64;
            for n in [got.wrapping_sub(1), got.wrapping_add(1)] {
                let v = F16(n).to_f32() as f64;
                if (n ^ got) & 0x8000 == 0 && v.is_finite() && g.is_finite() && exact != 0.0 {
                    let (dg, dn) = ((exact - g).abs(), (exact - v).abs());
                    assert!(dg < dn || (dg == dn && got & 1 == 0), "{x:04x}+{y:04x}: {got:04x} vs {n:04x}");
                }
            }
        }
        assert!(check(MPI_SUM, MPIX_C_FLOAT16).is_ok());
        assert!(check(MPI_BAND, MPIX_C_FLOAT16).is_err());
    }

    #[test]
    fn address_offset_count_take_every_integer_op() {
        for dt in [MPI_AINT, MPI_OFFSET, MPI_COUNT] {
            for op in [MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR] {
                assert!(check(op, dt).is_ok(), "{} {}", name(op), type_name(dt));
            }
            let mut b = bytes(&[0i64, 5, -1]);
            apply(MPI_LXOR, dt, &bytes(&[3i64, 0, -7]), &mut b).unwrap();
            assert_eq!(b, bytes(&[1i64, 1, 0]));
            let mut b = bytes(&[-3i64]);
            apply(MPI_MIN, dt, &bytes(&[2i64]), &mut b).unwrap();
            assert_eq!(b, bytes(&[-3i64]));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_double() {
        // 1.5 and 2.25 as x87 extended: mantissa with explicit integer bit.
        fn ld(v: f64) -> [u8; 16] {
            let bits = v.to_bits();
            let sign = (bits >> 63) as u16;
            let exp = ((bits >> 52) & 0x7ff) as i32;
            let frac = bits & ((1 << 52) - 1);
            let mut out = [0u8; 16];
            if v != 0.0 {
                let m = (1u64 << 63) | (frac << 11);
                let e = (exp - 1023 + 16383) as u16 | (sign << 15);
                out[..8].copy_from_slice(&m.to_le_bytes());
                out[8..10].copy_from_slice(&e.to_le_bytes());
            }
            out
        }
        let a = ld(1.5);
        let mut b = ld(2.25);
        apply(MPI_SUM, MPI_LONG_DOUBLE, &a, &mut b).unwrap();
        assert_eq!(&b[..10], &ld(3.75)[..10]);
        apply(MPI_PROD, MPI_LONG_DOUBLE, &a, &mut b).unwrap();
        assert_eq!(&b[..10], &ld(5.625)[..10]);
        let mut b = ld(2.25);
        apply(MPI_MIN, MPI_LONG_DOUBLE, &a, &mut b).unwrap();
        assert_eq!(&b[..10], &ld(1.5)[..10]);
        // complex (1.5 + 2.25i) * (1.5 + 2.25i) = (2.25 - 5.0625) + 6.75i
        let mut x = [0u8; 32];
        x[..16].copy_from_slice(&ld(1.5));
        x[16..].copy_from_slice(&ld(2.25));
        let mut y = x;
        apply(MPI_PROD, MPI_C_LONG_DOUBLE_COMPLEX, &x, &mut y).unwrap();
        assert_eq!(&y[..10], &ld(2.25 - 5.0625)[..10]);
        assert_eq!(&y[16..26], &ld(6.75)[..10]);
    }
}
