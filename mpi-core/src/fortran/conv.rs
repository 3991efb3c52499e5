//! Conversions of Fortran arguments to C ones, used by the generated and
//! the handwritten wrappers.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use mpi_api::abi::{MPI_File, MPI_Status};

/// A common block's or a module variable's storage, exported under its
/// Fortran name. Its size is exactly MPICH's (no alignment padding): a
/// program that refers to the variable gets a copy of that size made by
/// the dynamic linker, which warns when the library's differs. Only its
/// address is ever used.
#[repr(C)]
pub struct Common<const N: usize>(UnsafeCell<[u8; N]>);

impl<const N: usize> Common<N> {
    pub const fn new() -> Self {
        Common(UnsafeCell::new([0; N]))
    }
    /// Where the storage is.
    pub fn addr(&self) -> usize {
        self.0.get() as usize
    }
}

impl<const N: usize> Default for Common<N> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the library never reads or writes the storage, only compares
// addresses with it (a Fortran program may write its variables: that is
// its own business, and it writes its own copy).
unsafe impl<const N: usize> Sync for Common<N> {}

/// The address of symbol `name` as the dynamic linker resolves it for the
/// program (its own definition first), or `fallback`.
fn lookup(name: &CStr, fallback: usize) -> usize {
    // SAFETY: `name` is a NUL-terminated string; RTLD_DEFAULT searches the
    // global scope, which is what the program's references resolve to.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize;
    if p == 0 {
        fallback
    } else {
        p
    }
}

/// The addresses of the special arguments in the program: those of
/// `mpif.h` and `use mpi` (MPICH's common blocks) and those of MPICH's
/// `use mpi_f08` (variables of its own names).
struct Specials {
    bottom: [usize; 2],
    in_place: [usize; 2],
    status_ignore: [usize; 2],
    statuses_ignore: [usize; 2],
    errcodes_ignore: [usize; 2],
    unweighted: [usize; 2],
    weights_empty: [usize; 2],
    argv_null: [usize; 2],
    argvs_null: [usize; 2],
}

fn specials() -> &'static Specials {
    use super::f08 as f;
    static S: OnceLock<Specials> = OnceLock::new();
    S.get_or_init(|| {
        let p1 = lookup(c"mpipriv1_", super::mpipriv1_.0.get() as usize);
        let p2 = lookup(c"mpipriv2_", super::mpipriv2_.0.get() as usize);
        let pc = lookup(c"mpiprivc_", super::mpiprivc_.0.get() as usize);
        let at = |name: &CStr, c: usize| lookup(name, c);
        Specials {
            bottom: [p1, at(c"MPIR_F08_MPI_BOTTOM", f::MPIR_F08_MPI_BOTTOM.addr())],
            in_place: [p1 + 4, at(c"MPIR_F08_MPI_IN_PLACE", f::MPIR_F08_MPI_IN_PLACE.addr())],
            status_ignore: [p1 + 8, at(c"MPIR_F08_MPI_STATUS_IGNORE_OBJ", f::MPIR_F08_MPI_STATUS_IGNORE_OBJ.addr())],
            statuses_ignore: [p2, at(c"MPIR_F08_MPI_STATUSES_IGNORE_OBJ", f::MPIR_F08_MPI_STATUSES_IGNORE_OBJ.addr())],
            errcodes_ignore: [
                p2 + 20,
                at(c"__mpi_f08_link_constants_MOD_mpi_errcodes_ignore", f::ERRCODES_IGNORE.addr()),
            ],
            unweighted: [
                lookup(c"mpifcmb5_", super::mpifcmb5_.0.get() as usize),
                at(c"__mpi_f08_link_constants_MOD_mpi_unweighted", f::UNWEIGHTED.addr()),
            ],
            weights_empty: [
                lookup(c"mpifcmb9_", super::mpifcmb9_.0.get() as usize),
                at(c"__mpi_f08_link_constants_MOD_mpi_weights_empty", f::WEIGHTS_EMPTY.addr()),
            ],
            argv_null: [pc + 1, at(c"__mpi_f08_link_constants_MOD_mpi_argv_null", f::ARGV_NULL.addr())],
            argvs_null: [pc, at(c"__mpi_f08_link_constants_MOD_mpi_argvs_null", f::ARGVS_NULL.addr())],
        }
    })
}

/// Whether `p` is `MPI_ARGV_NULL` (one command's arguments).
pub fn is_argv_null(p: *const c_void) -> bool {
    specials().argv_null.contains(&(p as usize))
}

/// Whether `p` is `MPI_ARGVS_NULL` (`MPI_COMM_SPAWN_MULTIPLE`'s arguments).
pub fn is_argvs_null(p: *const c_void) -> bool {
    specials().argvs_null.contains(&(p as usize))
}

/// A choice buffer: `MPI_BOTTOM` and `MPI_IN_PLACE` become the C values.
pub fn buffer(p: *mut c_void) -> *mut c_void {
    let s = specials();
    match p as usize {
        a if s.bottom.contains(&a) => mpi_api::abi::MPI_BOTTOM as *mut c_void,
        a if s.in_place.contains(&a) => mpi_api::abi::MPI_IN_PLACE as *mut c_void,
        _ => p,
    }
}

/// A status: `MPI_STATUS_IGNORE` becomes the C value.
pub fn status(p: *mut c_void) -> *mut MPI_Status {
    if specials().status_ignore.contains(&(p as usize)) {
        mpi_api::abi::MPI_STATUS_IGNORE as *mut MPI_Status
    } else {
        p.cast()
    }
}

/// An array of statuses: `MPI_STATUSES_IGNORE` becomes the C value.
pub fn statuses(p: *mut c_void) -> *mut MPI_Status {
    if specials().statuses_ignore.contains(&(p as usize)) {
        mpi_api::abi::MPI_STATUSES_IGNORE as *mut MPI_Status
    } else {
        p.cast()
    }
}

/// An array of error codes: `MPI_ERRCODES_IGNORE` becomes the C value.
pub fn errcodes(p: *mut c_void) -> *mut c_int {
    if specials().errcodes_ignore.contains(&(p as usize)) {
        mpi_api::abi::MPI_ERRCODES_IGNORE as *mut c_int
    } else {
        p.cast()
    }
}

/// Graph weights: `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` become the C values.
pub fn weights(p: *mut c_void) -> *mut c_int {
    let s = specials();
    match p as usize {
        a if s.unweighted.contains(&a) => crate::capi::topo::MPI_UNWEIGHTED.0 as *mut c_int,
        a if s.weights_empty.contains(&a) => crate::capi::topo::MPI_WEIGHTS_EMPTY.0 as *mut c_int,
        _ => p.cast(),
    }
}

/// A Fortran `CHARACTER` argument as a C string: trailing blanks dropped
/// (the standard ignores them), cut at a NUL.
///
/// # Safety
/// `p` points to `len` readable bytes (or `len` is 0).
pub unsafe fn str_in(p: *const c_void, len: usize) -> CString {
    let bytes = if len == 0 || p.is_null() {
        &[][..]
    } else {
        // SAFETY: the contract.
        unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
    };
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    CString::new(&bytes[..end]).unwrap_or_default()
}

/// A C buffer for an output string, copied blank-padded into the Fortran
/// `CHARACTER` variable afterwards.
pub struct StrOut(Vec<u8>);

impl StrOut {
    /// Room for the Fortran variable's `len` characters, for the longest
    /// string the library writes (`MPI_MAX_LIBRARY_VERSION_STRING`), and
    /// for `hint` characters (a length the program gave the C call).
    pub fn new(len: usize, hint: c_int) -> Self {
        StrOut(vec![0; len.max(8192).max(hint.max(0) as usize) + 1])
    }
    pub fn as_mut_ptr(&mut self) -> *mut c_char {
        self.0.as_mut_ptr().cast()
    }
    /// Copies the string into `dst` (`len` bytes), padded with blanks,
    /// if the call succeeded.
    ///
    /// # Safety
    /// `dst` points to `len` writable bytes (or `len` is 0).
    pub unsafe fn finish(&self, rc: c_int, dst: *mut c_void, len: usize) {
        if rc != 0 || len == 0 || dst.is_null() {
            return;
        }
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len()).min(len);
        // SAFETY: the contract; the buffers are distinct.
        let out = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), len) };
        out[..n].copy_from_slice(&self.0[..n]);
        out[n..].fill(b' ');
    }
}

/// A Fortran file handle (an integer) as the C handle.
///
/// # Safety
/// `p` points to an INTEGER.
pub unsafe fn file_in(p: *const c_void) -> MPI_File {
    // SAFETY: the contract.
    crate::io::from_fint(unsafe { *p.cast::<c_int>() })
}

/// Returns C file handle `f` to Fortran, if the call succeeded.
///
/// # Safety
/// `p` points to a writable INTEGER.
pub unsafe fn file_out(rc: c_int, f: MPI_File, p: *mut c_void) {
    if rc == 0 {
        // SAFETY: the contract.
        unsafe { *p.cast::<c_int>() = crate::io::to_fint(f) };
    }
}

/// Stores the return code in the optional `IERROR` argument.
///
/// # Safety
/// `ierror` is NULL or a writable INTEGER.
pub unsafe fn set_ierror(ierror: *mut c_int, rc: c_int) {
    if !ierror.is_null() {
        // SAFETY: the contract.
        unsafe { *ierror = rc };
    }
}

/// The C function a `mpi_` spelling calls: the symbol `name` as the
/// program sees it (a profiling library's `MPI_X` first), looked up once.
pub struct Slot {
    name: &'static CStr,
    addr: AtomicUsize,
}

impl Slot {
    pub const fn new(name: &'static CStr) -> Self {
        Slot { name, addr: AtomicUsize::new(0) }
    }

    /// The function, `F` being its `extern "C" fn` type; `ours` (the
    /// library's own `MPI_X`) if the lookup finds nothing.
    ///
    /// # Safety
    /// `F` is the function pointer type of the C procedure `name`.
    pub unsafe fn get<F: Copy>(&self, ours: F) -> F {
        const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<usize>()) };
        let mut a = self.addr.load(Ordering::Acquire);
        if a == 0 {
            // SAFETY: `F` is a function pointer (the contract), as wide as usize.
            let fallback: usize = unsafe { std::mem::transmute_copy(&ours) };
            a = lookup(self.name, fallback);
            self.addr.store(a, Ordering::Release);
        }
        // SAFETY: `a` is the address of the C procedure `name` (found by its
        // name, or ours), whose type is `F` (the contract).
        unsafe { std::mem::transmute_copy(&a) }
    }
}

/// One dimension of a gfortran array descriptor: the stride (in units of
/// the descriptor's `span`), lower and upper bound.
#[repr(C)]
struct GfcDim {
    stride: isize,
    lower: isize,
    upper: isize,
}

/// The head of gfortran's array descriptor (GCC 8 and later), which an
/// assumed-rank dummy (`TYPE(*), DIMENSION(..)`) of a procedure without
/// `BIND(C)` receives: MPICH's `mpi_f08` passes choice buffers so to its
/// `mpi_x_f08ts_` procedures. The dimensions follow it.
#[repr(C)]
struct GfcDesc {
    base: *mut c_void,
    offset: usize,
    elem_len: usize,
    version: c_int,
    rank: i8,
    kind: i8,
    attribute: i16,
    span: isize,
}

/// How a call uses a buffer given as a descriptor.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// During the call only: a non-contiguous section may be copied.
    Now,
    /// After the call returns too: a section must be contiguous.
    Later,
    /// Its address only (`MPI_GET_ADDRESS`): the first element's.
    Address,
}

/// Why a section cannot be passed.
#[derive(Debug)]
pub enum SectionError {
    /// A non-contiguous section given to a call that uses the buffer after
    /// it returns (nonblocking, persistent, RMA, split collective...) whose
    /// count and datatype do not let a datatype describe it (see
    /// [`Section::open_typed`]): the data must stay where the program's
    /// array is.
    Deferred,
    /// A descriptor no gfortran makes.
    Malformed,
}

/// A choice buffer given as a gfortran descriptor: contiguous data are
/// passed where they are; a non-contiguous section is gathered into a
/// contiguous copy for the call (and scattered back after it, for an
/// output buffer), as the compiler itself does for an assumed-size dummy,
/// or, for a call that keeps the buffer, described by a datatype of its own
/// ([`Section::open_typed`]).
pub struct Section {
    ptr: *mut c_void,
    /// The copy and the section's element addresses, if copied.
    copy: Option<(Vec<u8>, Vec<*mut u8>, usize)>,
    /// The datatype describing the section, passed with count 1.
    typed: Option<c_int>,
}

/// The layout of a descriptor's section.
struct Layout {
    base: *mut c_void,
    elem: usize,
    span: isize,
    /// (extent, stride in elements of `span` bytes) per dimension.
    dims: Vec<(usize, isize)>,
    count: usize,
    contiguous: bool,
}

/// Reads a gfortran descriptor.
///
/// # Safety
/// `d` points to a gfortran array descriptor.
unsafe fn layout(d: *const c_void) -> Result<Layout, SectionError> {
    // SAFETY: the contract.
    let h = unsafe { &*d.cast::<GfcDesc>() };
    let rank = usize::try_from(h.rank).map_err(|_| SectionError::Malformed)?;
    if rank > 15 {
        return Err(SectionError::Malformed);
    }
    // SAFETY: the contract: `rank` dimensions follow the head.
    let raw = unsafe { std::slice::from_raw_parts(d.cast::<u8>().add(size_of::<GfcDesc>()).cast::<GfcDim>(), rank) };
    let dims: Vec<(usize, isize)> = raw.iter().map(|x| ((x.upper - x.lower + 1).max(0) as usize, x.stride)).collect();
    let count: usize = dims.iter().map(|d| d.0).product();
    // Contiguous: each dimension's stride is the product of the extents
    // before it (a dimension of extent 1 may have any stride).
    let mut expect = 1isize;
    let mut contiguous = rank == 0 || h.span as usize == h.elem_len;
    for &(n, stride) in &dims {
        contiguous &= n <= 1 || stride == expect;
        expect *= n as isize;
    }
    Ok(Layout { base: h.base, elem: h.elem_len, span: h.span, dims, count, contiguous })
}

impl Section {
    /// Reads descriptor `d` of a call that uses the buffer as `how` says.
    ///
    /// # Safety
    /// `d` points to a gfortran array descriptor of the program's actual
    /// argument, whose elements are readable.
    pub unsafe fn open(d: *const c_void, how: Use) -> Result<Section, SectionError> {
        // SAFETY: the contract.
        let l = unsafe { layout(d) }?;
        let Layout { elem, count, contiguous, .. } = l;
        let rank = l.dims.len();
        let extents: Vec<usize> = l.dims.iter().map(|d| d.0).collect();
        let h = (l.base, l.span);
        if contiguous || count == 0 || how == Use::Address {
            return Ok(Section { ptr: buffer(h.0), copy: None, typed: None });
        }
        if how == Use::Later {
            return Err(SectionError::Deferred);
        }
        // The elements' addresses in array element order (first index fastest).
        let mut addrs = Vec::with_capacity(count);
        let mut idx = vec![0usize; rank];
        for _ in 0..count {
            let off: isize = l.dims.iter().zip(&idx).map(|(x, &i)| i as isize * x.1).sum();
            addrs.push(h.0.cast::<u8>().wrapping_offset(off * h.1));
            for (k, i) in idx.iter_mut().enumerate() {
                *i += 1;
                if *i < extents[k] {
                    break;
                }
                *i = 0;
            }
        }
        let mut data = vec![0u8; count * elem];
        for (chunk, &a) in data.chunks_exact_mut(elem).zip(&addrs) {
            // SAFETY: each address is an element of the program's section
            // (the contract), `elem` bytes long.
            chunk.copy_from_slice(unsafe { std::slice::from_raw_parts(a, elem) });
        }
        let ptr = data.as_mut_ptr().cast();
        Ok(Section { ptr, copy: Some((data, addrs, elem)), typed: None })
    }

    /// [`Section::open`] for a call that keeps the buffer (nonblocking,
    /// persistent, one-sided) and takes `count` elements of `datatype`
    /// with it: a non-contiguous section holding exactly `count` elements,
    /// each one element of `datatype`, is passed where it is as one element
    /// of a datatype describing it (nested `MPI_Type_create_hvector`s over
    /// the dimensions, as MPICH's own `mpi_f08` does), which the pending
    /// operation keeps alive after [`Section::close`] frees the handle.
    ///
    /// # Safety
    /// As for [`Section::open`].
    pub unsafe fn open_typed(d: *const c_void, count: i64, datatype: i64) -> Result<Section, SectionError> {
        // SAFETY: the contract.
        let l = unsafe { layout(d) }?;
        if l.contiguous || l.count == 0 || count == 0 {
            return Ok(Section { ptr: buffer(l.base), copy: None, typed: None });
        }
        let dt = datatype as c_int;
        let (mut size, mut lb, mut extent) = (0 as c_int, 0i64, 0i64);
        // SAFETY: the out-arguments are locals.
        let ok = unsafe {
            crate::exports::PMPI_Type_size(dt, &mut size) == 0
                && crate::exports::PMPI_Type_get_extent(dt, &mut lb, &mut extent) == 0
        };
        if !ok || count as usize != l.count || size as usize != l.elem || lb != 0 || extent as usize != l.elem {
            return Err(SectionError::Deferred);
        }
        let mut t = dt;
        for &(n, stride) in &l.dims {
            let mut next = 0 as c_int;
            // SAFETY: `next` is a local; `t` a valid datatype (the caller's,
            // or made here).
            let rc = unsafe {
                crate::exports::PMPI_Type_create_hvector(n as c_int, 1, (stride * l.span) as i64, t, &mut next)
            };
            if t != dt {
                // SAFETY: a type made here, no longer needed by name.
                unsafe { crate::exports::PMPI_Type_free(&mut t) };
            }
            if rc != 0 {
                return Err(SectionError::Deferred);
            }
            t = next;
        }
        // SAFETY: `t` is the type just made.
        if unsafe { crate::exports::PMPI_Type_commit(&mut t) } != 0 {
            return Err(SectionError::Deferred);
        }
        Ok(Section { ptr: buffer(l.base), copy: None, typed: Some(t) })
    }

    /// The count the C call takes: 1 of the section's own datatype, else
    /// the program's.
    pub fn count(&self, given: i64) -> i64 {
        if self.typed.is_some() {
            1
        } else {
            given
        }
    }

    /// The datatype the C call takes (see [`Section::count`]).
    pub fn datatype(&self, given: i64) -> i64 {
        self.typed.map_or(given, i64::from)
    }

    /// What the C call takes.
    pub fn ptr(&self) -> *mut c_void {
        self.ptr
    }

    /// After the call: an output buffer's copy goes back to the section
    /// (if the call succeeded).
    ///
    /// # Safety
    /// The section is still the program's, writable if `out`.
    pub unsafe fn close(self, rc: c_int, out: bool) {
        if let Some(mut t) = self.typed {
            // SAFETY: a type made by `open_typed`; an operation started
            // with it keeps it until it completes.
            unsafe { crate::exports::PMPI_Type_free(&mut t) };
        }
        if let (Some((data, addrs, elem)), true, 0) = (self.copy, out, rc) {
            for (chunk, &a) in data.chunks_exact(elem).zip(&addrs) {
                // SAFETY: the contract; the copy and the section are distinct.
                unsafe { std::ptr::copy_nonoverlapping(chunk.as_ptr(), a, elem) };
            }
        }
    }
}

/// The element size of the argument a descriptor describes (`MPI_SIZEOF`).
///
/// # Safety
/// `d` points to a gfortran array descriptor.
pub unsafe fn elem_len(d: *const c_void) -> usize {
    // SAFETY: the contract.
    unsafe { (*d.cast::<GfcDesc>()).elem_len }
}

/// The object whose error handler reports a failed conversion.
pub enum On {
    Comm(c_int),
    Win(c_int),
    /// A Fortran file handle.
    File(c_int),
}

/// Reports `e` for call `name` through the error handler of `on`.
pub fn section_error(name: &str, on: On, e: SectionError) -> c_int {
    let msg = match e {
        SectionError::Deferred => "a non-contiguous array section is given to a call that uses its buffer after it \
                                   returns (nonblocking, persistent, one-sided or split), and its count and datatype \
                                   are not one element per array element (or it shares them with another buffer); \
                                   pass a contiguous array"
            .to_string(),
        SectionError::Malformed => "the buffer's array descriptor is not one gfortran makes".to_string(),
    };
    let e = crate::rt::error::MpiError::new(mpi_api::abi::MPI_ERR_BUFFER, msg);
    match on {
        On::Comm(c) => crate::capi::raise(c, name, e),
        On::Win(w) => crate::capi::win_errh::raise_win(w, name, e),
        On::File(f) => crate::capi::io::raise_file(crate::io::from_fint(f), name, e),
    }
}
