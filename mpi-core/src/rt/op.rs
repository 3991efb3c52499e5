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
        MPI_INTEGER | MPI_INTEGER1 | MPI_INTEGER2 | MPI_INTEGER4 | MPI_INTEGER8 | MPI_AINT | MPI_OFFSET | MPI_COUNT => {
            Class::FInt
        }
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
        MPI_MAX | MPI_MIN => matches!(c, CInt | FInt | Float),
        MPI_SUM | MPI_PROD => matches!(c, CInt | FInt | Float | Complex),
        MPI_LAND | MPI_LOR | MPI_LXOR => matches!(c, CInt | Logical),
        MPI_BAND | MPI_BOR | MPI_BXOR => matches!(c, CInt | FInt | Byte),
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
        (Class::CInt | Class::FInt, _) => {
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
