//! The MPICH ABI: C types, handle values and constants.
//!
//! Facts from `shared/reference/mpich-abi.md` and the MPI standard. Every
//! constant is declared once here; `mpi.h` gets its `#define`s from
//! [`CONSTANTS`], the library and the shim use the Rust constants.
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]

use std::os::raw::c_int;

pub type MPI_Comm = c_int;
pub type MPI_Group = c_int;
pub type MPI_Datatype = c_int;
pub type MPI_Op = c_int;
pub type MPI_Request = c_int;
pub type MPI_Errhandler = c_int;
pub type MPI_Info = c_int;
pub type MPI_Win = c_int;
pub type MPI_Message = c_int;
pub type MPI_Session = c_int;
pub type MPI_Aint = i64;
pub type MPI_Offset = i64;
pub type MPI_Count = i64;
pub type MPI_Fint = c_int;
pub type MPI_File = *mut std::ffi::c_void;

/// `MPI_Status`, 20 bytes, laid out as MPICH lays it out.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MPI_Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
}

impl MPI_Status {
    /// The received byte count encoded in the status.
    pub fn byte_count(&self) -> u64 {
        (self.count_lo as u32 as u64) | (((self.count_hi_and_cancelled as u32 >> 1) as u64) << 32)
    }
    pub fn set_byte_count(&mut self, n: u64) {
        let cancelled = self.count_hi_and_cancelled & 1;
        self.count_lo = n as u32 as c_int;
        self.count_hi_and_cancelled = (((n >> 32) as u32) << 1) as c_int | cancelled;
    }
    pub fn cancelled(&self) -> bool {
        self.count_hi_and_cancelled & 1 != 0
    }
    pub fn set_cancelled(&mut self, c: bool) {
        self.count_hi_and_cancelled = (self.count_hi_and_cancelled & !1) | c as c_int;
    }
}

/// The C type a constant is given in `mpi.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CType {
    Int,
    Comm,
    Group,
    Datatype,
    Op,
    Request,
    Errhandler,
    Info,
    Win,
    Message,
    Session,
    /// A pointer value such as `MPI_IN_PLACE` (cast given as a string).
    Pointer(&'static str),
}

/// One `#define` of `mpi.h`.
#[derive(Clone, Copy, Debug)]
pub struct Constant {
    pub name: &'static str,
    pub ctype: CType,
    pub value: i64,
}

macro_rules! constants {
    ($( $name:ident : $rty:ty = $ct:expr => $val:expr ;)*) => {
        $( pub const $name: $rty = $val as $rty; )*
        /// Every constant of this module, in declaration order, for `mpi.h`.
        pub const CONSTANTS: &[Constant] = &[
            $( Constant { name: stringify!($name), ctype: $ct, value: $val as i64 }, )*
        ];
    };
}

use CType::*;

constants! {
    // Return codes and error classes (numbered as MPICH numbers them).
    MPI_SUCCESS: c_int = Int => 0;
    MPI_ERR_BUFFER: c_int = Int => 1;
    MPI_ERR_COUNT: c_int = Int => 2;
    MPI_ERR_TYPE: c_int = Int => 3;
    MPI_ERR_TAG: c_int = Int => 4;
    MPI_ERR_COMM: c_int = Int => 5;
    MPI_ERR_RANK: c_int = Int => 6;
    MPI_ERR_ROOT: c_int = Int => 7;
    MPI_ERR_GROUP: c_int = Int => 8;
    MPI_ERR_OP: c_int = Int => 9;
    MPI_ERR_TOPOLOGY: c_int = Int => 10;
    MPI_ERR_DIMS: c_int = Int => 11;
    MPI_ERR_ARG: c_int = Int => 12;
    MPI_ERR_UNKNOWN: c_int = Int => 13;
    MPI_ERR_TRUNCATE: c_int = Int => 14;
    MPI_ERR_OTHER: c_int = Int => 15;
    MPI_ERR_INTERN: c_int = Int => 16;
    MPI_ERR_IN_STATUS: c_int = Int => 17;
    MPI_ERR_PENDING: c_int = Int => 18;
    MPI_ERR_REQUEST: c_int = Int => 19;
    MPI_ERR_ACCESS: c_int = Int => 20;
    MPI_ERR_AMODE: c_int = Int => 21;
    MPI_ERR_BAD_FILE: c_int = Int => 22;
    MPI_ERR_CONVERSION: c_int = Int => 23;
    MPI_ERR_DUP_DATAREP: c_int = Int => 24;
    MPI_ERR_FILE_EXISTS: c_int = Int => 25;
    MPI_ERR_FILE_IN_USE: c_int = Int => 26;
    MPI_ERR_FILE: c_int = Int => 27;
    MPI_ERR_INFO: c_int = Int => 28;
    MPI_ERR_INFO_KEY: c_int = Int => 29;
    MPI_ERR_INFO_VALUE: c_int = Int => 30;
    MPI_ERR_INFO_NOKEY: c_int = Int => 31;
    MPI_ERR_IO: c_int = Int => 32;
    MPI_ERR_NAME: c_int = Int => 33;
    MPI_ERR_NO_MEM: c_int = Int => 34;
    MPI_ERR_NOT_SAME: c_int = Int => 35;
    MPI_ERR_NO_SPACE: c_int = Int => 36;
    MPI_ERR_NO_SUCH_FILE: c_int = Int => 37;
    MPI_ERR_PORT: c_int = Int => 38;
    MPI_ERR_QUOTA: c_int = Int => 39;
    MPI_ERR_READ_ONLY: c_int = Int => 40;
    MPI_ERR_SERVICE: c_int = Int => 41;
    MPI_ERR_SPAWN: c_int = Int => 42;
    MPI_ERR_UNSUPPORTED_DATAREP: c_int = Int => 43;
    MPI_ERR_UNSUPPORTED_OPERATION: c_int = Int => 44;
    MPI_ERR_WIN: c_int = Int => 45;
    MPI_ERR_BASE: c_int = Int => 46;
    MPI_ERR_LOCKTYPE: c_int = Int => 47;
    MPI_ERR_KEYVAL: c_int = Int => 48;
    MPI_ERR_RMA_CONFLICT: c_int = Int => 49;
    MPI_ERR_RMA_SYNC: c_int = Int => 50;
    MPI_ERR_SIZE: c_int = Int => 51;
    MPI_ERR_DISP: c_int = Int => 52;
    MPI_ERR_ASSERT: c_int = Int => 53;
    MPI_ERR_RMA_RANGE: c_int = Int => 55;
    MPI_ERR_RMA_ATTACH: c_int = Int => 56;
    MPI_ERR_RMA_SHARED: c_int = Int => 57;
    MPI_ERR_RMA_FLAVOR: c_int = Int => 58;
    MPI_T_ERR_MEMORY: c_int = Int => 59;
    MPI_T_ERR_NOT_INITIALIZED: c_int = Int => 60;
    MPI_T_ERR_CANNOT_INIT: c_int = Int => 61;
    MPI_T_ERR_INVALID_INDEX: c_int = Int => 62;
    MPI_T_ERR_INVALID_ITEM: c_int = Int => 63;
    MPI_T_ERR_INVALID_HANDLE: c_int = Int => 64;
    MPI_T_ERR_OUT_OF_HANDLES: c_int = Int => 65;
    MPI_T_ERR_OUT_OF_SESSIONS: c_int = Int => 66;
    MPI_T_ERR_INVALID_SESSION: c_int = Int => 67;
    MPI_T_ERR_CVAR_SET_NOT_NOW: c_int = Int => 68;
    MPI_T_ERR_CVAR_SET_NEVER: c_int = Int => 69;
    MPI_T_ERR_PVAR_NO_STARTSTOP: c_int = Int => 70;
    MPI_T_ERR_PVAR_NO_WRITE: c_int = Int => 71;
    MPI_T_ERR_PVAR_NO_ATOMIC: c_int = Int => 72;
    MPI_T_ERR_INVALID_NAME: c_int = Int => 73;
    MPI_T_ERR_INVALID: c_int = Int => 74;
    MPI_ERR_SESSION: c_int = Int => 75;
    MPI_ERR_PROC_ABORTED: c_int = Int => 76;
    MPI_ERR_VALUE_TOO_LARGE: c_int = Int => 77;
    MPI_T_ERR_NOT_SUPPORTED: c_int = Int => 78;
    // MPI 4.0 and 4.1 classes, numbered as MPICH 4.1 and later number them
    // (mpi4py wheels built against those headers use these values).
    MPI_T_ERR_NOT_ACCESSIBLE: c_int = Int => 79;
    MPI_ERR_ERRHANDLER: c_int = Int => 80;
    // MPICH's fault-tolerance classes (MPICH_ERR_FIRST_MPIX + 1..5).
    MPIX_ERR_PROC_FAILED: c_int = Int => 101;
    MPIX_ERR_PROC_FAILED_PENDING: c_int = Int => 102;
    MPIX_ERR_REVOKED: c_int = Int => 103;
    MPIX_ERR_EAGAIN: c_int = Int => 104;
    MPIX_ERR_NOREQ: c_int = Int => 105;
    MPI_ERR_LASTCODE: c_int = Int => 0x3fffffff;

    // Null and predefined handles.
    MPI_COMM_NULL: MPI_Comm = Comm => 0x04000000;
    MPI_COMM_WORLD: MPI_Comm = Comm => 0x44000000;
    MPI_COMM_SELF: MPI_Comm = Comm => 0x44000001;
    MPI_GROUP_NULL: MPI_Group = Group => 0x08000000;
    MPI_GROUP_EMPTY: MPI_Group = Group => 0x48000000;
    MPI_DATATYPE_NULL: MPI_Datatype = Datatype => 0x0c000000;
    MPI_ERRHANDLER_NULL: MPI_Errhandler = Errhandler => 0x14000000;
    MPI_ERRORS_ARE_FATAL: MPI_Errhandler = Errhandler => 0x54000000;
    MPI_ERRORS_RETURN: MPI_Errhandler = Errhandler => 0x54000001;
    MPI_ERRORS_ABORT: MPI_Errhandler = Errhandler => 0x54000003;
    MPI_OP_NULL: MPI_Op = Op => 0x18000000;
    MPI_INFO_NULL: MPI_Info = Info => 0x1c000000;
    MPI_INFO_ENV: MPI_Info = Info => 0x5c000001;
    MPI_WIN_NULL: MPI_Win = Win => 0x20000000;
    MPI_KEYVAL_INVALID: c_int = Int => 0x24000000;
    MPI_REQUEST_NULL: MPI_Request = Request => 0x2c000000;
    MPI_MESSAGE_NULL: MPI_Message = Message => 0x2c000000;
    MPI_MESSAGE_NO_PROC: MPI_Message = Message => 0x6c000000;
    MPI_SESSION_NULL: MPI_Session = Session => 0x38000000;

    // Reduction operations.
    MPI_MAX: MPI_Op = Op => 0x58000001;
    MPI_MIN: MPI_Op = Op => 0x58000002;
    MPI_SUM: MPI_Op = Op => 0x58000003;
    MPI_PROD: MPI_Op = Op => 0x58000004;
    MPI_LAND: MPI_Op = Op => 0x58000005;
    MPI_BAND: MPI_Op = Op => 0x58000006;
    MPI_LOR: MPI_Op = Op => 0x58000007;
    MPI_BOR: MPI_Op = Op => 0x58000008;
    MPI_LXOR: MPI_Op = Op => 0x58000009;
    MPI_BXOR: MPI_Op = Op => 0x5800000a;
    MPI_MINLOC: MPI_Op = Op => 0x5800000b;
    MPI_MAXLOC: MPI_Op = Op => 0x5800000c;
    MPI_REPLACE: MPI_Op = Op => 0x5800000d;
    MPI_NO_OP: MPI_Op = Op => 0x5800000e;

    // Predefined datatypes: 0x4c00SSII, SS = size in bytes.
    MPI_CHAR: MPI_Datatype = Datatype => 0x4c000101;
    MPI_UNSIGNED_CHAR: MPI_Datatype = Datatype => 0x4c000102;
    MPI_SHORT: MPI_Datatype = Datatype => 0x4c000203;
    MPI_UNSIGNED_SHORT: MPI_Datatype = Datatype => 0x4c000204;
    MPI_INT: MPI_Datatype = Datatype => 0x4c000405;
    MPI_UNSIGNED: MPI_Datatype = Datatype => 0x4c000406;
    MPI_LONG: MPI_Datatype = Datatype => 0x4c000807;
    MPI_UNSIGNED_LONG: MPI_Datatype = Datatype => 0x4c000808;
    MPI_LONG_LONG_INT: MPI_Datatype = Datatype => 0x4c000809;
    MPI_LONG_LONG: MPI_Datatype = Datatype => 0x4c000809;
    MPI_FLOAT: MPI_Datatype = Datatype => 0x4c00040a;
    MPI_DOUBLE: MPI_Datatype = Datatype => 0x4c00080b;
    MPI_LONG_DOUBLE: MPI_Datatype = Datatype => 0x4c00100c;
    MPI_BYTE: MPI_Datatype = Datatype => 0x4c00010d;
    MPI_WCHAR: MPI_Datatype = Datatype => 0x4c00040e;
    MPI_PACKED: MPI_Datatype = Datatype => 0x4c00010f;
    MPI_LB: MPI_Datatype = Datatype => 0x4c000010;
    MPI_UB: MPI_Datatype = Datatype => 0x4c000011;
    MPI_2INT: MPI_Datatype = Datatype => 0x4c000816;
    MPI_SIGNED_CHAR: MPI_Datatype = Datatype => 0x4c000118;
    MPI_UNSIGNED_LONG_LONG: MPI_Datatype = Datatype => 0x4c000819;
    MPI_CHARACTER: MPI_Datatype = Datatype => 0x4c00011a;
    MPI_INTEGER: MPI_Datatype = Datatype => 0x4c00041b;
    MPI_REAL: MPI_Datatype = Datatype => 0x4c00041c;
    MPI_LOGICAL: MPI_Datatype = Datatype => 0x4c00041d;
    MPI_COMPLEX: MPI_Datatype = Datatype => 0x4c00081e;
    MPI_DOUBLE_PRECISION: MPI_Datatype = Datatype => 0x4c00081f;
    MPI_2INTEGER: MPI_Datatype = Datatype => 0x4c000820;
    MPI_2REAL: MPI_Datatype = Datatype => 0x4c000821;
    MPI_DOUBLE_COMPLEX: MPI_Datatype = Datatype => 0x4c001022;
    MPI_2DOUBLE_PRECISION: MPI_Datatype = Datatype => 0x4c001023;
    MPI_REAL4: MPI_Datatype = Datatype => 0x4c000427;
    MPI_COMPLEX8: MPI_Datatype = Datatype => 0x4c000828;
    MPI_REAL8: MPI_Datatype = Datatype => 0x4c000829;
    MPI_COMPLEX16: MPI_Datatype = Datatype => 0x4c00102a;
    MPI_REAL16: MPI_Datatype = Datatype => 0x4c00102b;
    MPI_COMPLEX32: MPI_Datatype = Datatype => 0x4c00202c;
    MPI_INTEGER1: MPI_Datatype = Datatype => 0x4c00012d;
    MPI_INTEGER2: MPI_Datatype = Datatype => 0x4c00022f;
    MPI_INTEGER4: MPI_Datatype = Datatype => 0x4c000430;
    MPI_INTEGER8: MPI_Datatype = Datatype => 0x4c000831;
    MPI_INTEGER16: MPI_Datatype = Datatype => 0x0c000000;
    MPI_CXX_BOOL: MPI_Datatype = Datatype => 0x4c000133;
    MPI_CXX_FLOAT_COMPLEX: MPI_Datatype = Datatype => 0x4c000834;
    MPI_CXX_DOUBLE_COMPLEX: MPI_Datatype = Datatype => 0x4c001035;
    MPI_CXX_LONG_DOUBLE_COMPLEX: MPI_Datatype = Datatype => 0x4c002036;
    MPI_INT8_T: MPI_Datatype = Datatype => 0x4c000137;
    MPI_INT16_T: MPI_Datatype = Datatype => 0x4c000238;
    MPI_INT32_T: MPI_Datatype = Datatype => 0x4c000439;
    MPI_INT64_T: MPI_Datatype = Datatype => 0x4c00083a;
    MPI_UINT8_T: MPI_Datatype = Datatype => 0x4c00013b;
    MPI_UINT16_T: MPI_Datatype = Datatype => 0x4c00023c;
    MPI_UINT32_T: MPI_Datatype = Datatype => 0x4c00043d;
    MPI_UINT64_T: MPI_Datatype = Datatype => 0x4c00083e;
    MPI_C_BOOL: MPI_Datatype = Datatype => 0x4c00013f;
    // Same handle: the first spelling is the name `MPI_Type_get_name`
    // returns, and MPICH calls it MPI_C_COMPLEX.
    MPI_C_COMPLEX: MPI_Datatype = Datatype => 0x4c000840;
    MPI_C_FLOAT_COMPLEX: MPI_Datatype = Datatype => 0x4c000840;
    MPI_C_DOUBLE_COMPLEX: MPI_Datatype = Datatype => 0x4c001041;
    MPI_C_LONG_DOUBLE_COMPLEX: MPI_Datatype = Datatype => 0x4c002042;
    MPI_AINT: MPI_Datatype = Datatype => 0x4c000843;
    MPI_OFFSET: MPI_Datatype = Datatype => 0x4c000844;
    MPI_COUNT: MPI_Datatype = Datatype => 0x4c000845;
    // C's `_Float16` (IEEE binary16), MPICH's extension type.
    MPIX_C_FLOAT16: MPI_Datatype = Datatype => 0x4c000246;
    MPI_FLOAT_INT: MPI_Datatype = Datatype => 0x8c000000u32;
    MPI_DOUBLE_INT: MPI_Datatype = Datatype => 0x8c000001u32;
    MPI_LONG_INT: MPI_Datatype = Datatype => 0x8c000002u32;
    MPI_SHORT_INT: MPI_Datatype = Datatype => 0x8c000003u32;
    MPI_LONG_DOUBLE_INT: MPI_Datatype = Datatype => 0x8c000004u32;

    // Scalars.
    MPI_PROC_NULL: c_int = Int => -1;
    MPI_ANY_SOURCE: c_int = Int => -2;
    MPI_ROOT: c_int = Int => -3;
    MPI_ANY_TAG: c_int = Int => -1;
    MPI_UNDEFINED: c_int = Int => -32766;
    MPI_IDENT: c_int = Int => 0;
    MPI_CONGRUENT: c_int = Int => 1;
    MPI_SIMILAR: c_int = Int => 2;
    MPI_UNEQUAL: c_int = Int => 3;
    MPI_GRAPH: c_int = Int => 1;
    MPI_CART: c_int = Int => 2;
    MPI_DIST_GRAPH: c_int = Int => 3;
    MPI_THREAD_SINGLE: c_int = Int => 0;
    MPI_THREAD_FUNNELED: c_int = Int => 1;
    MPI_THREAD_SERIALIZED: c_int = Int => 2;
    MPI_THREAD_MULTIPLE: c_int = Int => 3;
    MPI_VERSION: c_int = Int => 4;
    MPI_SUBVERSION: c_int = Int => 0;
    MPI_MAX_PROCESSOR_NAME: c_int = Int => 128;
    MPI_MAX_LIBRARY_VERSION_STRING: c_int = Int => 8192;
    MPI_MAX_ERROR_STRING: c_int = Int => 512;
    // MPIX_GPU_query_support's gpu_type (MPICH's values).
    MPIX_GPU_SUPPORT_CUDA: c_int = Int => 0;
    MPIX_GPU_SUPPORT_ZE: c_int = Int => 1;
    MPIX_GPU_SUPPORT_HIP: c_int = Int => 2;
    MPI_MAX_PORT_NAME: c_int = Int => 256;
    MPI_MAX_OBJECT_NAME: c_int = Int => 128;
    MPI_MAX_STRINGTAG_LEN: c_int = Int => 256;
    MPI_MAX_PSET_NAME_LEN: c_int = Int => 256;
    MPI_MAX_INFO_KEY: c_int = Int => 255;
    MPI_MAX_INFO_VAL: c_int = Int => 1024;
    MPI_BSEND_OVERHEAD: c_int = Int => 96;
    MPI_LOCK_EXCLUSIVE: c_int = Int => 234;
    MPI_LOCK_SHARED: c_int = Int => 235;
    MPI_TYPECLASS_REAL: c_int = Int => 1;
    MPI_TYPECLASS_INTEGER: c_int = Int => 2;
    MPI_TYPECLASS_COMPLEX: c_int = Int => 3;
    MPI_WIN_FLAVOR_CREATE: c_int = Int => 1;
    MPI_WIN_FLAVOR_ALLOCATE: c_int = Int => 2;
    MPI_WIN_FLAVOR_DYNAMIC: c_int = Int => 3;
    MPI_WIN_FLAVOR_SHARED: c_int = Int => 4;
    MPI_WIN_SEPARATE: c_int = Int => 1;
    MPI_WIN_UNIFIED: c_int = Int => 2;
    MPI_COMBINER_NAMED: c_int = Int => 1;
    MPI_COMBINER_DUP: c_int = Int => 2;
    MPI_COMBINER_CONTIGUOUS: c_int = Int => 3;
    MPI_COMBINER_VECTOR: c_int = Int => 4;
    MPI_COMBINER_HVECTOR_INTEGER: c_int = Int => 5;
    MPI_COMBINER_HVECTOR: c_int = Int => 6;
    MPI_COMBINER_INDEXED: c_int = Int => 7;
    MPI_COMBINER_HINDEXED_INTEGER: c_int = Int => 8;
    MPI_COMBINER_HINDEXED: c_int = Int => 9;
    MPI_COMBINER_INDEXED_BLOCK: c_int = Int => 10;
    MPI_COMBINER_STRUCT_INTEGER: c_int = Int => 11;
    MPI_COMBINER_STRUCT: c_int = Int => 12;
    MPI_COMBINER_SUBARRAY: c_int = Int => 13;
    MPI_COMBINER_DARRAY: c_int = Int => 14;
    MPI_COMBINER_F90_REAL: c_int = Int => 15;
    MPI_COMBINER_F90_COMPLEX: c_int = Int => 16;
    MPI_COMBINER_F90_INTEGER: c_int = Int => 17;
    MPI_COMBINER_RESIZED: c_int = Int => 18;
    MPI_COMBINER_HINDEXED_BLOCK: c_int = Int => 19;
    MPI_ORDER_C: c_int = Int => 56;
    MPI_ORDER_FORTRAN: c_int = Int => 57;
    MPI_DISTRIBUTE_BLOCK: c_int = Int => 121;
    MPI_DISTRIBUTE_CYCLIC: c_int = Int => 122;
    MPI_DISTRIBUTE_NONE: c_int = Int => 123;
    MPI_DISTRIBUTE_DFLT_DARG: c_int = Int => -49767;
    MPI_MODE_NOCHECK: c_int = Int => 1024;
    MPI_MODE_NOSTORE: c_int = Int => 2048;
    MPI_MODE_NOPUT: c_int = Int => 4096;
    MPI_MODE_NOPRECEDE: c_int = Int => 8192;
    MPI_MODE_NOSUCCEED: c_int = Int => 16384;
    // File access modes, positions and limits (MPICH's ROMIO values).
    MPI_MODE_CREATE: c_int = Int => 1;
    MPI_MODE_RDONLY: c_int = Int => 2;
    MPI_MODE_WRONLY: c_int = Int => 4;
    MPI_MODE_RDWR: c_int = Int => 8;
    MPI_MODE_DELETE_ON_CLOSE: c_int = Int => 16;
    MPI_MODE_UNIQUE_OPEN: c_int = Int => 32;
    MPI_MODE_EXCL: c_int = Int => 64;
    MPI_MODE_APPEND: c_int = Int => 128;
    MPI_MODE_SEQUENTIAL: c_int = Int => 256;
    MPI_DISPLACEMENT_CURRENT: i64 = Int => -54278278;
    MPI_SEEK_SET: c_int = Int => 600;
    MPI_SEEK_CUR: c_int = Int => 602;
    MPI_SEEK_END: c_int = Int => 604;
    MPI_MAX_DATAREP_STRING: c_int = Int => 128;
    MPI_COMM_TYPE_SHARED: c_int = Int => 1;
    MPI_COMM_TYPE_HW_GUIDED: c_int = Int => 2;
    MPI_COMM_TYPE_HW_UNGUIDED: c_int = Int => 3;

    // Predefined attribute keys.
    MPI_TAG_UB: c_int = Int => 0x64400001;
    MPI_HOST: c_int = Int => 0x64400003;
    MPI_IO: c_int = Int => 0x64400005;
    MPI_WTIME_IS_GLOBAL: c_int = Int => 0x64400007;
    MPI_UNIVERSE_SIZE: c_int = Int => 0x64400009;
    MPI_LASTUSEDCODE: c_int = Int => 0x6440000b;
    MPI_APPNUM: c_int = Int => 0x6440000d;
    MPI_WIN_BASE: c_int = Int => 0x66000001;
    MPI_WIN_SIZE: c_int = Int => 0x66000003;
    MPI_WIN_DISP_UNIT: c_int = Int => 0x66000005;
    MPI_WIN_CREATE_FLAVOR: c_int = Int => 0x66000007;
    MPI_WIN_MODEL: c_int = Int => 0x66000009;
}

/// A C enumeration of `mpi.h`: the tool interface's constants are
/// enumerators in MPICH's header (not `#define`s), with the same names and
/// values.
#[derive(Clone, Copy, Debug)]
pub struct CEnum {
    /// The enumeration's tag and typedef name.
    pub name: &'static str,
    pub items: &'static [(&'static str, c_int)],
}

macro_rules! c_enums {
    ($( $tname:ident { $( $name:ident = $val:expr ),* $(,)? } )*) => {
        $( $( pub const $name: c_int = $val; )* )*
        /// Every C enumeration of this module, for `mpi.h`.
        pub const C_ENUMS: &[CEnum] = &[
            $( CEnum { name: stringify!($tname), items: &[ $( (stringify!($name), $val) ),* ] }, )*
        ];
    };
}

// The MPI tool information interface (MPI_T), values as in MPICH.
c_enums! {
    MPIR_T_verbosity_t {
        MPI_T_VERBOSITY_INVALID = 0,
        MPI_T_VERBOSITY_USER_BASIC = 221,
        MPI_T_VERBOSITY_USER_DETAIL = 222,
        MPI_T_VERBOSITY_USER_ALL = 223,
        MPI_T_VERBOSITY_TUNER_BASIC = 224,
        MPI_T_VERBOSITY_TUNER_DETAIL = 225,
        MPI_T_VERBOSITY_TUNER_ALL = 226,
        MPI_T_VERBOSITY_MPIDEV_BASIC = 227,
        MPI_T_VERBOSITY_MPIDEV_DETAIL = 228,
        MPI_T_VERBOSITY_MPIDEV_ALL = 229,
    }
    MPIR_T_bind_t {
        MPI_T_BIND_INVALID = 0,
        MPI_T_BIND_NO_OBJECT = 9700,
        MPI_T_BIND_MPI_COMM = 9701,
        MPI_T_BIND_MPI_DATATYPE = 9702,
        MPI_T_BIND_MPI_ERRHANDLER = 9703,
        MPI_T_BIND_MPI_FILE = 9704,
        MPI_T_BIND_MPI_GROUP = 9705,
        MPI_T_BIND_MPI_OP = 9706,
        MPI_T_BIND_MPI_REQUEST = 9707,
        MPI_T_BIND_MPI_WIN = 9708,
        MPI_T_BIND_MPI_MESSAGE = 9709,
        MPI_T_BIND_MPI_INFO = 9710,
    }
    MPIR_T_scope_t {
        MPI_T_SCOPE_INVALID = 0,
        MPI_T_SCOPE_CONSTANT = 60438,
        MPI_T_SCOPE_READONLY = 60439,
        MPI_T_SCOPE_LOCAL = 60440,
        MPI_T_SCOPE_GROUP = 60441,
        MPI_T_SCOPE_GROUP_EQ = 60442,
        MPI_T_SCOPE_ALL = 60443,
        MPI_T_SCOPE_ALL_EQ = 60444,
    }
    MPIR_T_pvar_class_t {
        MPI_T_PVAR_CLASS_INVALID = 0,
        MPI_T_PVAR_CLASS_STATE = 240,
        MPI_T_PVAR_CLASS_LEVEL = 241,
        MPI_T_PVAR_CLASS_SIZE = 242,
        MPI_T_PVAR_CLASS_PERCENTAGE = 243,
        MPI_T_PVAR_CLASS_HIGHWATERMARK = 244,
        MPI_T_PVAR_CLASS_LOWWATERMARK = 245,
        MPI_T_PVAR_CLASS_COUNTER = 246,
        MPI_T_PVAR_CLASS_AGGREGATE = 247,
        MPI_T_PVAR_CLASS_TIMER = 248,
        MPI_T_PVAR_CLASS_GENERIC = 249,
    }
    MPI_T_cb_safety {
        MPI_T_CB_REQUIRE_NONE = 0,
        MPI_T_CB_REQUIRE_MPI_RESTRICTED = 1,
        MPI_T_CB_REQUIRE_THREAD_SAFE = 2,
        MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE = 3,
    }
    MPI_T_source_order {
        MPI_T_SOURCE_ORDERED = 0,
        MPI_T_SOURCE_UNORDERED = 1,
    }
}

/// Special pointer arguments (`#define`d as casts in `mpi.h`).
pub const MPI_BOTTOM: usize = 0;
pub const MPI_IN_PLACE: usize = usize::MAX; // (void *)-1
pub const MPI_STATUS_IGNORE: usize = 1;
pub const MPI_STATUSES_IGNORE: usize = 1;
pub const MPI_ERRCODES_IGNORE: usize = 0;

/// The largest tag this library accepts (value of the `MPI_TAG_UB` attribute).
pub const TAG_UB: c_int = 0x7fff_ffff;

/// Handle kinds (bits 31-30 of a handle).
pub const HANDLE_KIND_INVALID: u32 = 0;
pub const HANDLE_KIND_BUILTIN: u32 = 1;
pub const HANDLE_KIND_DIRECT: u32 = 2;
pub const HANDLE_KIND_INDIRECT: u32 = 3;

/// Object types (bits 29-26 of a handle).
pub const OBJ_COMM: u32 = 0x1;
pub const OBJ_GROUP: u32 = 0x2;
pub const OBJ_DATATYPE: u32 = 0x3;
pub const OBJ_ERRHANDLER: u32 = 0x5;
pub const OBJ_OP: u32 = 0x6;
pub const OBJ_INFO: u32 = 0x7;
pub const OBJ_WIN: u32 = 0x8;
pub const OBJ_KEYVAL: u32 = 0x9;
pub const OBJ_REQUEST: u32 = 0xb;
pub const OBJ_SESSION: u32 = 0xe;

/// Kind of a handle (bits 31-30).
pub const fn handle_kind(h: c_int) -> u32 {
    (h as u32) >> 30
}
/// Object type of a handle (bits 29-26).
pub const fn handle_obj(h: c_int) -> u32 {
    ((h as u32) >> 26) & 0xf
}
/// Makes a handle of kind `kind`, object `obj` and index `idx` (26 bits).
pub const fn make_handle(kind: u32, obj: u32, idx: u32) -> c_int {
    ((kind << 30) | (obj << 26) | (idx & 0x03ff_ffff)) as c_int
}
/// Index bits of a handle.
pub const fn handle_index(h: c_int) -> u32 {
    (h as u32) & 0x03ff_ffff
}

/// Size in bytes of a predefined datatype, if `dt` is one (pair types included).
pub fn builtin_type_size(dt: MPI_Datatype) -> Option<usize> {
    let u = dt as u32;
    if u >> 24 == 0x4c {
        let size = ((u >> 8) & 0xff) as usize;
        // MPI_LB and MPI_UB encode size 0.
        return Some(size);
    }
    match dt {
        MPI_FLOAT_INT => Some(8),
        MPI_DOUBLE_INT => Some(12),
        MPI_LONG_INT => Some(12),
        MPI_SHORT_INT => Some(6),
        MPI_LONG_DOUBLE_INT => Some(20),
        _ => None,
    }
}

/// Name of a predefined handle, as it is spelled in C (`"MPI_INT"`), if any.
pub fn predefined_name(ctype: CType, value: c_int) -> Option<&'static str> {
    CONSTANTS.iter().find(|c| c.ctype == ctype && c.value as c_int == value).map(|c| c.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_count_roundtrip() {
        let mut s = MPI_Status::default();
        s.set_cancelled(true);
        s.set_byte_count(5 << 32 | 7);
        assert_eq!(s.byte_count(), 5 << 32 | 7);
        assert!(s.cancelled());
        assert_eq!(std::mem::size_of::<MPI_Status>(), 20);
    }

    #[test]
    fn sizes_from_handles() {
        assert_eq!(builtin_type_size(MPI_DOUBLE), Some(8));
        assert_eq!(builtin_type_size(MPI_C_LONG_DOUBLE_COMPLEX), Some(32));
        assert_eq!(builtin_type_size(MPI_DOUBLE_INT), Some(12));
        assert_eq!(builtin_type_size(MPI_COMM_WORLD), None);
        assert_eq!(handle_obj(MPI_COMM_WORLD), OBJ_COMM);
        assert_eq!(handle_kind(MPI_COMM_WORLD), HANDLE_KIND_BUILTIN);
        assert_eq!(predefined_name(CType::Datatype, MPI_INT), Some("MPI_INT"));
    }
}
