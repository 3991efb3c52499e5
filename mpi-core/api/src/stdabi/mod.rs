//! The MPI-5 standard ABI (MPI Forum ABI 1.0): its handle encoding, its
//! constants, its `MPI_Status`, and how each of them corresponds to the
//! MPICH ABI of [`crate::abi`].
//!
//! Facts from the standard's `mpi_abi.h` (MPI 5.0, Annex A; as in the MPI
//! Forum's `mpi-abi-stubs` after its errata of October 2025, which gave
//! `MPI_ERRORS_RETURN`/`ABORT`, the F90 combiners, `MPI_SEEK_*` and
//! `MPI_APPNUM`/`LASTUSEDCODE`/`UNIVERSE_SIZE` the values they keep in
//! MPICH 5's `mpi_abi.h`; tests/tests/stdabi.rs runs binaries across the
//! two libraries). Handles are pointers to incomplete structs;
//! the predefined ones are small integers (below 0x400), `MPI_Status` is
//! `{MPI_SOURCE, MPI_TAG, MPI_ERROR, int MPI_internal[5]}`, `MPI_Aint` is
//! `intptr_t`, `MPI_Offset` and `MPI_Count` are 64-bit, `MPI_Fint` is `int`.
//!
//! `libmpi_abi.so` (crate `mpi-stdabi`) is generated from this module and
//! the procedure table: each entry converts its arguments to the MPICH ABI,
//! calls the same procedure of `libmpi.so.12`, and converts the results
//! back. The correspondence is by name: a standard constant and the MPICH
//! constant of the same name are the same thing ([`handle_pairs`],
//! [`int_pairs`]).
#![allow(non_upper_case_globals)]

pub mod codegen;

use std::os::raw::c_int;

use crate::abi::{self, CType, Constant};

/// `MPI_Abi_get_version` of the standard ABI.
pub const ABI_VERSION: (c_int, c_int) = (1, 0);
/// `MPI_VERSION`/`MPI_SUBVERSION` the standard ABI's header states.
pub const MPI_VERSION: (c_int, c_int) = (5, 0);

/// `MPI_Status` of the standard ABI (32 bytes). This library keeps MPICH's
/// first two words (`count_lo`, `count_hi_and_cancelled`) in
/// `MPI_internal[0..2]`; the other three are left as the program set them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(non_snake_case)]
pub struct MPI_Status {
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
    pub MPI_internal: [c_int; 5],
}

macro_rules! std_constants {
    ($( $name:ident : $ct:expr => $val:expr ;)*) => {
        /// Every constant of the standard ABI's `mpi_abi.h` that has a
        /// value (handles, integers), in the header's order.
        pub const STD_CONSTANTS: &[Constant] = &[
            $( Constant { name: stringify!($name), ctype: $ct, value: $val as i64 }, )*
        ];
    };
}

use CType::*;

std_constants! {
    // Predefined handles: a small integer each, by kind.
    MPI_OP_NULL: Op => 0x20;
    MPI_SUM: Op => 0x21;
    MPI_MIN: Op => 0x22;
    MPI_MAX: Op => 0x23;
    MPI_PROD: Op => 0x24;
    MPI_BAND: Op => 0x28;
    MPI_BOR: Op => 0x29;
    MPI_BXOR: Op => 0x2a;
    MPI_LAND: Op => 0x30;
    MPI_LOR: Op => 0x31;
    MPI_LXOR: Op => 0x32;
    MPI_MINLOC: Op => 0x38;
    MPI_MAXLOC: Op => 0x39;
    MPI_REPLACE: Op => 0x3c;
    MPI_NO_OP: Op => 0x3d;
    MPI_COMM_NULL: Comm => 0x100;
    MPI_COMM_WORLD: Comm => 0x101;
    MPI_COMM_SELF: Comm => 0x102;
    MPI_GROUP_NULL: Group => 0x108;
    MPI_GROUP_EMPTY: Group => 0x109;
    MPI_WIN_NULL: Win => 0x110;
    MPI_FILE_NULL: Pointer("MPI_File") => 0x118;
    MPI_SESSION_NULL: Session => 0x120;
    MPI_MESSAGE_NULL: Message => 0x128;
    MPI_MESSAGE_NO_PROC: Message => 0x129;
    MPI_INFO_NULL: Info => 0x130;
    MPI_INFO_ENV: Info => 0x131;
    MPI_ERRHANDLER_NULL: Errhandler => 0x140;
    MPI_ERRORS_ARE_FATAL: Errhandler => 0x141;
    MPI_ERRORS_ABORT: Errhandler => 0x142;
    MPI_ERRORS_RETURN: Errhandler => 0x143;
    MPI_REQUEST_NULL: Request => 0x180;
    MPI_DATATYPE_NULL: Datatype => 0x200;
    MPI_AINT: Datatype => 0x201;
    MPI_COUNT: Datatype => 0x202;
    MPI_OFFSET: Datatype => 0x203;
    MPI_PACKED: Datatype => 0x207;
    MPI_SHORT: Datatype => 0x208;
    MPI_INT: Datatype => 0x209;
    MPI_LONG: Datatype => 0x20a;
    MPI_LONG_LONG: Datatype => 0x20b;
    MPI_LONG_LONG_INT: Datatype => 0x20b;
    MPI_UNSIGNED_SHORT: Datatype => 0x20c;
    MPI_UNSIGNED: Datatype => 0x20d;
    MPI_UNSIGNED_LONG: Datatype => 0x20e;
    MPI_UNSIGNED_LONG_LONG: Datatype => 0x20f;
    MPI_FLOAT: Datatype => 0x210;
    MPI_C_FLOAT_COMPLEX: Datatype => 0x212;
    MPI_C_COMPLEX: Datatype => 0x212;
    MPI_CXX_FLOAT_COMPLEX: Datatype => 0x213;
    MPI_DOUBLE: Datatype => 0x214;
    MPI_C_DOUBLE_COMPLEX: Datatype => 0x216;
    MPI_CXX_DOUBLE_COMPLEX: Datatype => 0x217;
    MPI_LOGICAL: Datatype => 0x218;
    MPI_INTEGER: Datatype => 0x219;
    MPI_REAL: Datatype => 0x21a;
    MPI_COMPLEX: Datatype => 0x21b;
    MPI_DOUBLE_PRECISION: Datatype => 0x21c;
    MPI_DOUBLE_COMPLEX: Datatype => 0x21d;
    MPI_CHARACTER: Datatype => 0x21e;
    MPI_LONG_DOUBLE: Datatype => 0x220;
    MPI_C_LONG_DOUBLE_COMPLEX: Datatype => 0x224;
    MPI_CXX_LONG_DOUBLE_COMPLEX: Datatype => 0x225;
    MPI_FLOAT_INT: Datatype => 0x228;
    MPI_DOUBLE_INT: Datatype => 0x229;
    MPI_LONG_INT: Datatype => 0x22a;
    MPI_2INT: Datatype => 0x22b;
    MPI_SHORT_INT: Datatype => 0x22c;
    MPI_LONG_DOUBLE_INT: Datatype => 0x22d;
    MPI_2REAL: Datatype => 0x230;
    MPI_2DOUBLE_PRECISION: Datatype => 0x231;
    MPI_2INTEGER: Datatype => 0x232;
    MPI_C_BOOL: Datatype => 0x238;
    MPI_CXX_BOOL: Datatype => 0x239;
    MPI_WCHAR: Datatype => 0x23c;
    MPI_INT8_T: Datatype => 0x240;
    MPI_UINT8_T: Datatype => 0x241;
    MPI_CHAR: Datatype => 0x243;
    MPI_SIGNED_CHAR: Datatype => 0x244;
    MPI_UNSIGNED_CHAR: Datatype => 0x245;
    MPI_BYTE: Datatype => 0x247;
    MPI_INT16_T: Datatype => 0x248;
    MPI_UINT16_T: Datatype => 0x249;
    MPI_INT32_T: Datatype => 0x250;
    MPI_UINT32_T: Datatype => 0x251;
    MPI_INT64_T: Datatype => 0x258;
    MPI_UINT64_T: Datatype => 0x259;
    MPI_LOGICAL1: Datatype => 0x2c0;
    MPI_INTEGER1: Datatype => 0x2c1;
    MPI_LOGICAL2: Datatype => 0x2c8;
    MPI_INTEGER2: Datatype => 0x2c9;
    MPI_REAL2: Datatype => 0x2ca;
    MPI_LOGICAL4: Datatype => 0x2d0;
    MPI_INTEGER4: Datatype => 0x2d1;
    MPI_REAL4: Datatype => 0x2d2;
    MPI_COMPLEX4: Datatype => 0x2d3;
    MPI_LOGICAL8: Datatype => 0x2d8;
    MPI_INTEGER8: Datatype => 0x2d9;
    MPI_REAL8: Datatype => 0x2da;
    MPI_COMPLEX8: Datatype => 0x2db;
    MPI_LOGICAL16: Datatype => 0x2e0;
    MPI_INTEGER16: Datatype => 0x2e1;
    MPI_REAL16: Datatype => 0x2e2;
    MPI_COMPLEX16: Datatype => 0x2e3;
    MPI_COMPLEX32: Datatype => 0x2eb;

    // Error classes.
    MPI_SUCCESS: Int => 0;
    MPI_ERR_BUFFER: Int => 1;
    MPI_ERR_COUNT: Int => 2;
    MPI_ERR_TYPE: Int => 3;
    MPI_ERR_TAG: Int => 4;
    MPI_ERR_COMM: Int => 5;
    MPI_ERR_RANK: Int => 6;
    MPI_ERR_REQUEST: Int => 7;
    MPI_ERR_ROOT: Int => 8;
    MPI_ERR_GROUP: Int => 9;
    MPI_ERR_OP: Int => 10;
    MPI_ERR_TOPOLOGY: Int => 11;
    MPI_ERR_DIMS: Int => 12;
    MPI_ERR_ARG: Int => 13;
    MPI_ERR_UNKNOWN: Int => 14;
    MPI_ERR_TRUNCATE: Int => 15;
    MPI_ERR_OTHER: Int => 16;
    MPI_ERR_INTERN: Int => 17;
    MPI_ERR_PENDING: Int => 18;
    MPI_ERR_IN_STATUS: Int => 19;
    MPI_ERR_ACCESS: Int => 20;
    MPI_ERR_AMODE: Int => 21;
    MPI_ERR_ASSERT: Int => 22;
    MPI_ERR_BAD_FILE: Int => 23;
    MPI_ERR_BASE: Int => 24;
    MPI_ERR_CONVERSION: Int => 25;
    MPI_ERR_DISP: Int => 26;
    MPI_ERR_DUP_DATAREP: Int => 27;
    MPI_ERR_FILE_EXISTS: Int => 28;
    MPI_ERR_FILE_IN_USE: Int => 29;
    MPI_ERR_FILE: Int => 30;
    MPI_ERR_INFO_KEY: Int => 31;
    MPI_ERR_INFO_NOKEY: Int => 32;
    MPI_ERR_INFO_VALUE: Int => 33;
    MPI_ERR_INFO: Int => 34;
    MPI_ERR_IO: Int => 35;
    MPI_ERR_KEYVAL: Int => 36;
    MPI_ERR_LOCKTYPE: Int => 37;
    MPI_ERR_NAME: Int => 38;
    MPI_ERR_NO_MEM: Int => 39;
    MPI_ERR_NOT_SAME: Int => 40;
    MPI_ERR_NO_SPACE: Int => 41;
    MPI_ERR_NO_SUCH_FILE: Int => 42;
    MPI_ERR_PORT: Int => 43;
    MPI_ERR_QUOTA: Int => 44;
    MPI_ERR_READ_ONLY: Int => 45;
    MPI_ERR_RMA_ATTACH: Int => 46;
    MPI_ERR_RMA_CONFLICT: Int => 47;
    MPI_ERR_RMA_RANGE: Int => 48;
    MPI_ERR_RMA_SHARED: Int => 49;
    MPI_ERR_RMA_SYNC: Int => 50;
    MPI_ERR_SERVICE: Int => 51;
    MPI_ERR_SIZE: Int => 52;
    MPI_ERR_SPAWN: Int => 53;
    MPI_ERR_UNSUPPORTED_DATAREP: Int => 54;
    MPI_ERR_UNSUPPORTED_OPERATION: Int => 55;
    MPI_ERR_WIN: Int => 56;
    MPI_ERR_RMA_FLAVOR: Int => 57;
    MPI_ERR_PROC_ABORTED: Int => 58;
    MPI_ERR_VALUE_TOO_LARGE: Int => 59;
    MPI_ERR_SESSION: Int => 60;
    MPI_ERR_ERRHANDLER: Int => 61;
    MPI_ERR_ABI: Int => 62;
    MPI_T_ERR_CANNOT_INIT: Int => 1001;
    MPI_T_ERR_NOT_ACCESSIBLE: Int => 1002;
    MPI_T_ERR_NOT_INITIALIZED: Int => 1003;
    MPI_T_ERR_NOT_SUPPORTED: Int => 1004;
    MPI_T_ERR_MEMORY: Int => 1005;
    MPI_T_ERR_INVALID: Int => 1006;
    MPI_T_ERR_INVALID_INDEX: Int => 1007;
    MPI_T_ERR_INVALID_ITEM: Int => 1008;
    MPI_T_ERR_INVALID_SESSION: Int => 1009;
    MPI_T_ERR_INVALID_HANDLE: Int => 1010;
    MPI_T_ERR_INVALID_NAME: Int => 1011;
    MPI_T_ERR_OUT_OF_HANDLES: Int => 1012;
    MPI_T_ERR_OUT_OF_SESSIONS: Int => 1013;
    MPI_T_ERR_CVAR_SET_NOT_NOW: Int => 1014;
    MPI_T_ERR_CVAR_SET_NEVER: Int => 1015;
    MPI_T_ERR_PVAR_NO_WRITE: Int => 1016;
    MPI_T_ERR_PVAR_NO_STARTSTOP: Int => 1017;
    MPI_T_ERR_PVAR_NO_ATOMIC: Int => 1018;
    MPI_ERR_LASTCODE: Int => 0x3fff;

    // String sizes and assorted sizes (the standard's, which differ from
    // MPICH's where noted; the library checks against the smaller).
    MPI_MAX_DATAREP_STRING: Int => 128;
    MPI_MAX_ERROR_STRING: Int => 512;
    MPI_MAX_INFO_KEY: Int => 256;
    MPI_MAX_INFO_VAL: Int => 1024;
    MPI_MAX_LIBRARY_VERSION_STRING: Int => 8192;
    MPI_MAX_OBJECT_NAME: Int => 128;
    MPI_MAX_PORT_NAME: Int => 1024;
    MPI_MAX_PROCESSOR_NAME: Int => 256;
    MPI_MAX_STRINGTAG_LEN: Int => 1024;
    MPI_MAX_PSET_NAME_LEN: Int => 1024;
    MPI_BSEND_OVERHEAD: Int => 512;

    // Modes: bit flags.
    MPI_MODE_APPEND: Int => 1;
    MPI_MODE_CREATE: Int => 2;
    MPI_MODE_DELETE_ON_CLOSE: Int => 4;
    MPI_MODE_EXCL: Int => 8;
    MPI_MODE_RDONLY: Int => 16;
    MPI_MODE_RDWR: Int => 32;
    MPI_MODE_SEQUENTIAL: Int => 64;
    MPI_MODE_UNIQUE_OPEN: Int => 128;
    MPI_MODE_WRONLY: Int => 256;
    MPI_MODE_NOCHECK: Int => 1024;
    MPI_MODE_NOPRECEDE: Int => 2048;
    MPI_MODE_NOPUT: Int => 4096;
    MPI_MODE_NOSTORE: Int => 8192;
    MPI_MODE_NOSUCCEED: Int => 16384;

    // Wildcards and sentinels.
    MPI_ANY_SOURCE: Int => -1;
    MPI_ANY_TAG: Int => -2;
    MPI_PROC_NULL: Int => -3;
    MPI_ROOT: Int => -4;
    MPI_UNDEFINED: Int => -32766;

    MPI_THREAD_SINGLE: Int => 0;
    MPI_THREAD_FUNNELED: Int => 1024;
    MPI_THREAD_SERIALIZED: Int => 2048;
    MPI_THREAD_MULTIPLE: Int => 4096;
    MPI_ORDER_C: Int => 0xc;
    MPI_ORDER_FORTRAN: Int => 0xf;
    MPI_DISTRIBUTE_NONE: Int => 16;
    MPI_DISTRIBUTE_BLOCK: Int => 17;
    MPI_DISTRIBUTE_CYCLIC: Int => 18;
    MPI_DISTRIBUTE_DFLT_DARG: Int => 19;
    MPI_COMBINER_NAMED: Int => 101;
    MPI_COMBINER_DUP: Int => 102;
    MPI_COMBINER_CONTIGUOUS: Int => 103;
    MPI_COMBINER_VECTOR: Int => 104;
    MPI_COMBINER_HVECTOR: Int => 105;
    MPI_COMBINER_INDEXED: Int => 106;
    MPI_COMBINER_HINDEXED: Int => 107;
    MPI_COMBINER_INDEXED_BLOCK: Int => 108;
    MPI_COMBINER_HINDEXED_BLOCK: Int => 109;
    MPI_COMBINER_STRUCT: Int => 110;
    MPI_COMBINER_SUBARRAY: Int => 111;
    MPI_COMBINER_DARRAY: Int => 112;
    MPI_COMBINER_F90_REAL: Int => 113;
    MPI_COMBINER_F90_COMPLEX: Int => 114;
    MPI_COMBINER_F90_INTEGER: Int => 115;
    MPI_COMBINER_RESIZED: Int => 116;
    MPI_COMBINER_VALUE_INDEX: Int => 117;
    MPI_TYPECLASS_INTEGER: Int => 192;
    MPI_TYPECLASS_REAL: Int => 193;
    MPI_TYPECLASS_COMPLEX: Int => 194;
    MPI_IDENT: Int => 201;
    MPI_CONGRUENT: Int => 202;
    MPI_SIMILAR: Int => 203;
    MPI_UNEQUAL: Int => 204;
    MPI_CART: Int => 211;
    MPI_GRAPH: Int => 212;
    MPI_DIST_GRAPH: Int => 213;
    MPI_COMM_TYPE_SHARED: Int => 221;
    MPI_COMM_TYPE_HW_UNGUIDED: Int => 222;
    MPI_COMM_TYPE_HW_GUIDED: Int => 223;
    MPI_COMM_TYPE_RESOURCE_GUIDED: Int => 224;
    MPI_LOCK_EXCLUSIVE: Int => 301;
    MPI_LOCK_SHARED: Int => 302;
    MPI_WIN_FLAVOR_CREATE: Int => 311;
    MPI_WIN_FLAVOR_ALLOCATE: Int => 312;
    MPI_WIN_FLAVOR_DYNAMIC: Int => 313;
    MPI_WIN_FLAVOR_SHARED: Int => 314;
    MPI_WIN_UNIFIED: Int => 321;
    MPI_WIN_SEPARATE: Int => 322;
    MPI_SEEK_CUR: Int => 401;
    MPI_SEEK_END: Int => 402;
    MPI_SEEK_SET: Int => 403;

    // Predefined attribute keys.
    MPI_KEYVAL_INVALID: Int => 0;
    MPI_TAG_UB: Int => 501;
    MPI_IO: Int => 502;
    MPI_HOST: Int => 503;
    MPI_WTIME_IS_GLOBAL: Int => 504;
    MPI_APPNUM: Int => 505;
    MPI_LASTUSEDCODE: Int => 506;
    MPI_UNIVERSE_SIZE: Int => 507;
    MPI_WIN_BASE: Int => 601;
    MPI_WIN_DISP_UNIT: Int => 602;
    MPI_WIN_SIZE: Int => 603;
    MPI_WIN_CREATE_FLAVOR: Int => 604;
    MPI_WIN_MODEL: Int => 605;

    // The tool interface's enumerations.
    MPI_T_VERBOSITY_USER_BASIC: Int => 0x09;
    MPI_T_VERBOSITY_USER_DETAIL: Int => 0x0a;
    MPI_T_VERBOSITY_USER_ALL: Int => 0x0c;
    MPI_T_VERBOSITY_TUNER_BASIC: Int => 0x11;
    MPI_T_VERBOSITY_TUNER_DETAIL: Int => 0x12;
    MPI_T_VERBOSITY_TUNER_ALL: Int => 0x14;
    MPI_T_VERBOSITY_MPIDEV_BASIC: Int => 0x21;
    MPI_T_VERBOSITY_MPIDEV_DETAIL: Int => 0x22;
    MPI_T_VERBOSITY_MPIDEV_ALL: Int => 0x24;
    MPI_T_BIND_NO_OBJECT: Int => 1;
    MPI_T_BIND_MPI_COMM: Int => 2;
    MPI_T_BIND_MPI_DATATYPE: Int => 3;
    MPI_T_BIND_MPI_ERRHANDLER: Int => 4;
    MPI_T_BIND_MPI_FILE: Int => 5;
    MPI_T_BIND_MPI_GROUP: Int => 6;
    MPI_T_BIND_MPI_OP: Int => 7;
    MPI_T_BIND_MPI_REQUEST: Int => 8;
    MPI_T_BIND_MPI_WIN: Int => 9;
    MPI_T_BIND_MPI_MESSAGE: Int => 10;
    MPI_T_BIND_MPI_INFO: Int => 11;
    MPI_T_BIND_MPI_SESSION: Int => 12;
    MPI_T_SCOPE_CONSTANT: Int => 1;
    MPI_T_SCOPE_READONLY: Int => 2;
    MPI_T_SCOPE_LOCAL: Int => 3;
    MPI_T_SCOPE_GROUP: Int => 4;
    MPI_T_SCOPE_GROUP_EQ: Int => 5;
    MPI_T_SCOPE_ALL: Int => 6;
    MPI_T_SCOPE_ALL_EQ: Int => 7;
    MPI_T_PVAR_CLASS_STATE: Int => 1;
    MPI_T_PVAR_CLASS_LEVEL: Int => 2;
    MPI_T_PVAR_CLASS_SIZE: Int => 3;
    MPI_T_PVAR_CLASS_PERCENTAGE: Int => 4;
    MPI_T_PVAR_CLASS_HIGHWATERMARK: Int => 5;
    MPI_T_PVAR_CLASS_LOWWATERMARK: Int => 6;
    MPI_T_PVAR_CLASS_COUNTER: Int => 7;
    MPI_T_PVAR_CLASS_AGGREGATE: Int => 8;
    MPI_T_PVAR_CLASS_TIMER: Int => 9;
    MPI_T_PVAR_CLASS_GENERIC: Int => 10;
    MPI_T_CB_REQUIRE_NONE: Int => 0x00;
    MPI_T_CB_REQUIRE_MPI_RESTRICTED: Int => 0x03;
    MPI_T_CB_REQUIRE_THREAD_SAFE: Int => 0x0f;
    MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE: Int => 0x3f;
    MPI_T_SOURCE_ORDERED: Int => 1;
    MPI_T_SOURCE_UNORDERED: Int => 2;
}

/// Special pointer values of the standard ABI.
pub const STD_IN_PLACE: usize = 1;
pub const STD_BUFFER_AUTOMATIC: usize = 2;
pub const STD_STATUS_IGNORE: usize = 0;
pub const STD_UNWEIGHTED: usize = 10;
pub const STD_WEIGHTS_EMPTY: usize = 11;
pub const STD_T_PVAR_ALL_HANDLES: usize = 1;
/// The copy callbacks `MPI_*_DUP_FN` are the value 1 (the null ones 0).
pub const STD_DUP_FN: usize = 1;
/// Predefined handles of the standard ABI are below this; the library's
/// own handles (MPICH's ints, zero-extended) are never below it.
pub const STD_PREDEFINED_LIMIT: usize = 0x1000;
/// User error classes and codes: MPICH's first one (above its
/// `MPI_ERR_LASTCODE`) is the standard's first one (above its).
pub const MPICH_FIRST_USER_CODE: c_int = abi::MPI_ERR_LASTCODE + 1;
pub const STD_FIRST_USER_CODE: c_int = 0x3fff + 1;

/// The standard ABI's value of a constant, by name.
pub fn std_value(name: &str) -> Option<i64> {
    STD_CONSTANTS.iter().find(|c| c.name == name).map(|c| c.value)
}

/// The handle types: C type name, the constant type of both ABIs.
pub const HANDLE_TYPES: &[(&str, CType)] = &[
    ("MPI_Comm", CType::Comm),
    ("MPI_Group", CType::Group),
    ("MPI_Datatype", CType::Datatype),
    ("MPI_Op", CType::Op),
    ("MPI_Request", CType::Request),
    ("MPI_Errhandler", CType::Errhandler),
    ("MPI_Info", CType::Info),
    ("MPI_Win", CType::Win),
    ("MPI_Message", CType::Message),
    ("MPI_Session", CType::Session),
];

/// Predefined handles of one kind present in both ABIs: (standard value,
/// MPICH value), in the standard header's order (so the first standard
/// name of an MPICH value wins when converting back: `MPI_DATATYPE_NULL`
/// before `MPI_INTEGER16`, which MPICH lacks and defines as null).
pub fn handle_pairs(ctype: CType) -> Vec<(i64, i64)> {
    STD_CONSTANTS
        .iter()
        .filter(|c| c.ctype == ctype)
        .filter_map(|s| {
            abi::CONSTANTS.iter().find(|m| m.name == s.name && m.ctype == ctype).map(|m| (s.value, m.value))
        })
        .collect()
}

/// Predefined handles of the standard that MPICH's ABI lacks (the
/// Fortran `LOGICALn`, `REAL2`, `COMPLEX4`, `INTEGER16`...): the library
/// refuses them as invalid datatypes.
pub fn std_only_handles(ctype: CType) -> Vec<&'static str> {
    let in_mpich = |name: &str| {
        abi::CONSTANTS.iter().any(|m| {
            m.name == name
                && m.ctype == ctype
                && (name == "MPI_DATATYPE_NULL" || m.value != abi::MPI_DATATYPE_NULL as i64)
        })
    };
    STD_CONSTANTS.iter().filter(|c| c.ctype == ctype && !in_mpich(c.name)).map(|c| c.name).collect()
}

/// A family of integer constants that crosses the boundary by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntClass {
    Rank,
    Tag,
    ThreadLevel,
    ErrorCode,
    Combiner,
    Order,
    Distrib,
    Typeclass,
    SplitType,
    LockType,
    Comparison,
    Topology,
    Seek,
    Keyval,
    Verbosity,
    Bind,
    Scope,
    PvarClass,
    CbSafety,
    SourceOrder,
    /// Bit flags, mapped bit by bit.
    AccessMode,
    Assert,
    /// Attribute values of window attributes.
    WinFlavor,
    WinModel,
}

impl IntClass {
    pub const ALL: &'static [IntClass] = &[
        IntClass::Rank,
        IntClass::Tag,
        IntClass::ThreadLevel,
        IntClass::ErrorCode,
        IntClass::Combiner,
        IntClass::Order,
        IntClass::Distrib,
        IntClass::Typeclass,
        IntClass::SplitType,
        IntClass::LockType,
        IntClass::Comparison,
        IntClass::Topology,
        IntClass::Seek,
        IntClass::Keyval,
        IntClass::Verbosity,
        IntClass::Bind,
        IntClass::Scope,
        IntClass::PvarClass,
        IntClass::CbSafety,
        IntClass::SourceOrder,
        IntClass::AccessMode,
        IntClass::Assert,
        IntClass::WinFlavor,
        IntClass::WinModel,
    ];

    /// Name of the generated conversion functions (`<fn>_in`, `<fn>_out`).
    pub fn fn_name(self) -> &'static str {
        match self {
            IntClass::Rank => "rank",
            IntClass::Tag => "tag",
            IntClass::ThreadLevel => "thread_level",
            IntClass::ErrorCode => "errcode",
            IntClass::Combiner => "combiner",
            IntClass::Order => "order",
            IntClass::Distrib => "distrib",
            IntClass::Typeclass => "typeclass",
            IntClass::SplitType => "split_type",
            IntClass::LockType => "lock_type",
            IntClass::Comparison => "comparison",
            IntClass::Topology => "topology",
            IntClass::Seek => "seek",
            IntClass::Keyval => "keyval",
            IntClass::Verbosity => "verbosity",
            IntClass::Bind => "bind",
            IntClass::Scope => "scope",
            IntClass::PvarClass => "pvar_class",
            IntClass::CbSafety => "cb_safety",
            IntClass::SourceOrder => "source_order",
            IntClass::AccessMode => "access_mode",
            IntClass::Assert => "assert",
            IntClass::WinFlavor => "win_flavor",
            IntClass::WinModel => "win_model",
        }
    }

    /// Whether the values are bit flags (OR-ed together).
    pub fn is_bits(self) -> bool {
        matches!(self, IntClass::AccessMode | IntClass::Assert)
    }

    /// The names of the constants of this family (in both ABIs).
    pub fn names(self) -> Vec<&'static str> {
        let prefixed = |p: &str| -> Vec<&'static str> {
            STD_CONSTANTS.iter().filter(|c| c.name.starts_with(p) && c.ctype == CType::Int).map(|c| c.name).collect()
        };
        match self {
            IntClass::Rank => vec!["MPI_ANY_SOURCE", "MPI_PROC_NULL", "MPI_ROOT"],
            IntClass::Tag => vec!["MPI_ANY_TAG"],
            IntClass::ThreadLevel => prefixed("MPI_THREAD_"),
            IntClass::ErrorCode => {
                let mut v = prefixed("MPI_ERR_");
                v.extend(prefixed("MPI_T_ERR_"));
                v.push("MPI_SUCCESS");
                v
            }
            IntClass::Combiner => prefixed("MPI_COMBINER_"),
            IntClass::Order => prefixed("MPI_ORDER_"),
            IntClass::Distrib => prefixed("MPI_DISTRIBUTE_"),
            IntClass::Typeclass => prefixed("MPI_TYPECLASS_"),
            IntClass::SplitType => prefixed("MPI_COMM_TYPE_"),
            IntClass::LockType => prefixed("MPI_LOCK_"),
            IntClass::Comparison => vec!["MPI_IDENT", "MPI_CONGRUENT", "MPI_SIMILAR", "MPI_UNEQUAL"],
            IntClass::Topology => vec!["MPI_CART", "MPI_GRAPH", "MPI_DIST_GRAPH"],
            IntClass::Seek => prefixed("MPI_SEEK_"),
            IntClass::Keyval => vec![
                "MPI_KEYVAL_INVALID",
                "MPI_TAG_UB",
                "MPI_IO",
                "MPI_HOST",
                "MPI_WTIME_IS_GLOBAL",
                "MPI_UNIVERSE_SIZE",
                "MPI_APPNUM",
                "MPI_LASTUSEDCODE",
                "MPI_WIN_BASE",
                "MPI_WIN_DISP_UNIT",
                "MPI_WIN_SIZE",
                "MPI_WIN_CREATE_FLAVOR",
                "MPI_WIN_MODEL",
            ],
            IntClass::Verbosity => prefixed("MPI_T_VERBOSITY_"),
            IntClass::Bind => prefixed("MPI_T_BIND_"),
            IntClass::Scope => prefixed("MPI_T_SCOPE_"),
            IntClass::PvarClass => prefixed("MPI_T_PVAR_CLASS_"),
            IntClass::CbSafety => prefixed("MPI_T_CB_REQUIRE_"),
            IntClass::SourceOrder => prefixed("MPI_T_SOURCE_"),
            IntClass::AccessMode => vec![
                "MPI_MODE_APPEND",
                "MPI_MODE_CREATE",
                "MPI_MODE_DELETE_ON_CLOSE",
                "MPI_MODE_EXCL",
                "MPI_MODE_RDONLY",
                "MPI_MODE_RDWR",
                "MPI_MODE_SEQUENTIAL",
                "MPI_MODE_UNIQUE_OPEN",
                "MPI_MODE_WRONLY",
            ],
            IntClass::Assert => vec![
                "MPI_MODE_NOCHECK",
                "MPI_MODE_NOPRECEDE",
                "MPI_MODE_NOPUT",
                "MPI_MODE_NOSTORE",
                "MPI_MODE_NOSUCCEED",
            ],
            IntClass::WinFlavor => prefixed("MPI_WIN_FLAVOR_"),
            IntClass::WinModel => vec!["MPI_WIN_UNIFIED", "MPI_WIN_SEPARATE"],
        }
    }
}

/// The value of an MPICH constant or enumerator of `crate::abi`, by name.
pub fn mpich_value(name: &str) -> Option<i64> {
    abi::CONSTANTS
        .iter()
        .find(|c| c.name == name)
        .map(|c| c.value)
        .or_else(|| abi::C_ENUMS.iter().flat_map(|e| e.items.iter()).find(|(n, _)| *n == name).map(|(_, v)| *v as i64))
}

/// (standard value, MPICH value) of each constant of `class` both ABIs
/// have. Constants only the standard has (`MPI_COMBINER_VALUE_INDEX`, `MPI_COMM_TYPE_RESOURCE_GUIDED`,
/// `MPI_T_BIND_MPI_SESSION`) have no pair: they reach the library
/// unchanged, where they are unknown values.
pub fn int_pairs(class: IntClass) -> Vec<(i64, i64)> {
    let mut pairs: Vec<(i64, i64)> =
        class.names().into_iter().filter_map(|n| Some((std_value(n)?, mpich_value(n)?))).collect();
    if class == IntClass::ErrorCode {
        // `MPI_ERR_ABI` (MPI 5.0) has no MPICH value: it travels as the
        // class MPICH leaves unused and accepts, 54, so that
        // `MPI_Error_class(MPI_ERR_ABI)` is `MPI_ERR_ABI`.
        pairs.push((std_value("MPI_ERR_ABI").unwrap_or(62), MPICH_ERR_ABI));
    }
    pairs
}

/// [`int_pairs`] of `class` completed to a bijection of `int` (standard
/// value to MPICH value), as the pairs that are not identities: the first
/// pair of a value wins, and an MPICH value that is no standard value maps
/// to the end of its chain back through the pairs (the value the pairs
/// displaced). A tracer that turns a program's values into MPICH's and back
/// so gives the library exactly the program's values, whatever they are.
pub fn int_bijection(class: IntClass) -> Vec<(i64, i64)> {
    let mut f: Vec<(i64, i64)> = Vec::new();
    for (a, b) in int_pairs(class) {
        if !f.iter().any(|&(x, y)| x == a || y == b) {
            f.push((a, b));
        }
    }
    let mut extra = Vec::new();
    for &(_, b) in &f {
        if f.iter().any(|p| p.0 == b) {
            continue;
        }
        let mut g = b;
        while let Some(&(a, _)) = f.iter().find(|p| p.1 == g) {
            g = a;
        }
        extra.push((b, g));
    }
    f.extend(extra);
    f.retain(|p| p.0 != p.1);
    f
}

/// The MPICH-ABI value `MPI_ERR_ABI` crosses as (see [`int_pairs`]).
pub const MPICH_ERR_ABI: i64 = 54;

/// How an integer parameter of the table crosses: the family of constants
/// its values may be, from the standard's semantic kind (and the
/// procedure, where one kind means two things).
pub fn int_class(proc_name: &str, kind: &str) -> Option<IntClass> {
    Some(match kind {
        "RANK" | "RANK_NNI" => IntClass::Rank,
        "TAG" => IntClass::Tag,
        "THREAD_LEVEL" => IntClass::ThreadLevel,
        // MPI_Abort's code is the process's exit status, not an MPI error.
        "ERROR_CODE" | "ERROR_CLASS" if proc_name != "MPI_Abort" => IntClass::ErrorCode,
        "COMBINER" => IntClass::Combiner,
        "ORDER" => IntClass::Order,
        "DISTRIB_ENUM" | "DTYPE_DISTRIBUTION" => IntClass::Distrib,
        "TYPECLASS" => IntClass::Typeclass,
        "SPLIT_TYPE" => IntClass::SplitType,
        "LOCK_TYPE" => IntClass::LockType,
        "COMM_COMPARISON" | "GROUP_COMPARISON" => IntClass::Comparison,
        "TOPOLOGY_TYPE" => IntClass::Topology,
        "UPDATE_MODE" => IntClass::Seek,
        "KEYVAL" => IntClass::Keyval,
        "TOOL_VAR_VERBOSITY" => IntClass::Verbosity,
        "BIND_TYPE" => IntClass::Bind,
        "VARIABLE_SCOPE" => IntClass::Scope,
        "PVAR_CLASS" => IntClass::PvarClass,
        "CALLBACK_SAFETY" => IntClass::CbSafety,
        "SOURCE_ORDERING" => IntClass::SourceOrder,
        "ACCESS_MODE" => IntClass::AccessMode,
        "ASSERT" => IntClass::Assert,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_by_name() {
        let comms = handle_pairs(CType::Comm);
        assert!(comms.contains(&(0x101, abi::MPI_COMM_WORLD as i64)));
        assert!(comms.contains(&(0x100, abi::MPI_COMM_NULL as i64)));
        let dts = handle_pairs(CType::Datatype);
        // MPICH's MPI_INTEGER16 is its null datatype: the standard's null
        // comes first, so MPICH's null converts back to it.
        let first_null = dts.iter().find(|p| p.1 == abi::MPI_DATATYPE_NULL as i64).unwrap();
        assert_eq!(first_null.0, 0x200);
        assert!(std_only_handles(CType::Datatype).contains(&"MPI_INTEGER16"));
        assert!(std_only_handles(CType::Datatype).contains(&"MPI_LOGICAL1"));
        assert!(!std_only_handles(CType::Datatype).contains(&"MPI_DATATYPE_NULL"));
        assert_eq!(dts.iter().find(|p| p.0 == 0x209).unwrap().1, abi::MPI_INT as i64);
        // Every predefined standard handle is below the limit.
        assert!(STD_CONSTANTS
            .iter()
            .filter(|c| c.ctype != CType::Int)
            .all(|c| (c.value as usize) < STD_PREDEFINED_LIMIT));
    }

    #[test]
    fn int_families() {
        let rank = int_pairs(IntClass::Rank);
        assert!(rank.contains(&(-1, abi::MPI_ANY_SOURCE as i64)));
        assert!(rank.contains(&(-3, abi::MPI_PROC_NULL as i64)));
        let err = int_pairs(IntClass::ErrorCode);
        assert!(err.contains(&(7, abi::MPI_ERR_REQUEST as i64)));
        assert!(err.contains(&(0x3fff, abi::MPI_ERR_LASTCODE as i64)));
        assert!(err.contains(&(62, MPICH_ERR_ABI)), "MPI_ERR_ABI crosses as MPICH's unused 54");
        assert_eq!(int_pairs(IntClass::Verbosity).len(), 9);
        assert_eq!(int_pairs(IntClass::AccessMode).len(), 9);
        assert_eq!(int_pairs(IntClass::ThreadLevel), vec![(0, 0), (1024, 1), (2048, 2), (4096, 3)]);
        assert_eq!(int_class("MPI_Abort", "ERROR_CODE"), None);
        assert_eq!(int_class("MPI_Error_class", "ERROR_CODE"), Some(IntClass::ErrorCode));
        assert_eq!(std::mem::size_of::<MPI_Status>(), 32);
    }

    #[test]
    fn bijections_of_families() {
        for class in IntClass::ALL.iter().filter(|c| !c.is_bits()) {
            let b = int_bijection(*class);
            let image = |v: i64| b.iter().find(|q| q.0 == v).map_or(v, |q| q.1);
            // Each pair of the family holds, but for one whose value an
            // earlier pair took...
            let pairs = int_pairs(*class);
            for (i, &(s, m)) in pairs.iter().enumerate() {
                let taken = pairs[..i].iter().any(|p| p.0 == s || p.1 == m);
                assert!(taken || image(s) == m, "{class:?}: {s}");
            }
            // ...and no two values meet: the map is a permutation of the
            // values it moves.
            let mut from: Vec<i64> = b.iter().map(|p| p.0).collect();
            let mut to: Vec<i64> = b.iter().map(|p| p.1).collect();
            from.sort();
            to.sort();
            assert_eq!(from, to, "{class:?}");
            from.dedup();
            assert_eq!(from.len(), b.len(), "{class:?}");
        }
        // Ranks: the standard's ANY_SOURCE -1, PROC_NULL -3, ROOT -4 to
        // MPICH's -2, -1, -3; MPICH's ANY_SOURCE value -2 takes the place
        // of ROOT's -4, which MPICH does not use.
        let rank = int_bijection(IntClass::Rank);
        let image = |v: i64| rank.iter().find(|q| q.0 == v).map_or(v, |q| q.1);
        assert_eq!([-1, -3, -4, -2, 0, 5].map(image), [-2, -1, -3, -4, 0, 5]);
        assert_eq!(int_bijection(IntClass::Tag), vec![(-2, -1), (-1, -2)]);
    }
}
