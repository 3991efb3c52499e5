//! Open MPI's native C ABI (Open MPI 4.x and 5.x, `libmpi.so.40`), the
//! second ABI the tracing shim knows, next to the MPICH ABI of [`crate::abi`].
//!
//! Facts from Open MPI's installed `mpi.h` (Debian's `libopenmpi-dev`,
//! `/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h`, Open MPI 4.1); the
//! test `matches_installed_header` checks them against it. In this ABI every
//! handle (`MPI_Comm`, `MPI_Datatype`...) is a pointer; a predefined handle
//! is the address of a named global object (`MPI_COMM_WORLD` is
//! `&ompi_mpi_comm_world`), so a process finds them with `dlsym`.
#![allow(non_camel_case_types, non_snake_case)]

use std::os::raw::c_int;

/// `MPI_Status` (`struct ompi_status_public_t`), 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MPI_Status {
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
    pub _cancelled: c_int,
    /// Received bytes.
    pub _ucount: usize,
}

pub const MPI_SUCCESS: c_int = 0;
pub const MPI_ANY_SOURCE: c_int = -1;
pub const MPI_PROC_NULL: c_int = -2;
pub const MPI_ROOT: c_int = -4;
pub const MPI_ANY_TAG: c_int = -1;
pub const MPI_UNDEFINED: c_int = -32766;
pub const MPI_ERR_IN_STATUS: c_int = 18;
pub const MPI_ERR_PENDING: c_int = 19;
/// `MPI_COMM_TYPE_SHARED`, the first of an enumeration.
pub const MPI_COMM_TYPE_SHARED: c_int = 0;
/// `MPI_BOTTOM` is `(void *) 0`.
pub const MPI_BOTTOM: usize = 0;
/// `MPI_IN_PLACE` is `(void *) 1`.
pub const MPI_IN_PLACE: usize = 1;
/// `MPI_STATUS_IGNORE` and `MPI_STATUSES_IGNORE` are `(MPI_Status *) 0`.
pub const MPI_STATUS_IGNORE: usize = 0;
pub const MPI_STATUSES_IGNORE: usize = 0;
/// `MPI_MAX_LIBRARY_VERSION_STRING`.
pub const MPI_MAX_LIBRARY_VERSION_STRING: usize = 256;

/// The global whose address a process finds to know it runs on Open MPI.
pub const WORLD_SYMBOL: &str = "ompi_mpi_comm_world";

/// Every predefined handle of `mpi.h` defined as
/// `OMPI_PREDEFINED_GLOBAL(type, symbol)`: (name, C type, symbol).
pub const PREDEFINED: &[(&str, &str, &str)] = &[
    ("MPI_2COMPLEX", "MPI_Datatype", "ompi_mpi_2cplex"),
    ("MPI_2DOUBLE_COMPLEX", "MPI_Datatype", "ompi_mpi_2dblcplex"),
    ("MPI_2DOUBLE_PRECISION", "MPI_Datatype", "ompi_mpi_2dblprec"),
    ("MPI_2INT", "MPI_Datatype", "ompi_mpi_2int"),
    ("MPI_2INTEGER", "MPI_Datatype", "ompi_mpi_2integer"),
    ("MPI_2REAL", "MPI_Datatype", "ompi_mpi_2real"),
    ("MPI_AINT", "MPI_Datatype", "ompi_mpi_aint"),
    ("MPI_BAND", "MPI_Op", "ompi_mpi_op_band"),
    ("MPI_BOR", "MPI_Op", "ompi_mpi_op_bor"),
    ("MPI_BXOR", "MPI_Op", "ompi_mpi_op_bxor"),
    ("MPI_BYTE", "MPI_Datatype", "ompi_mpi_byte"),
    ("MPI_CHAR", "MPI_Datatype", "ompi_mpi_char"),
    ("MPI_CHARACTER", "MPI_Datatype", "ompi_mpi_character"),
    ("MPI_COMM_NULL", "MPI_Comm", "ompi_mpi_comm_null"),
    ("MPI_COMM_SELF", "MPI_Comm", "ompi_mpi_comm_self"),
    ("MPI_COMM_WORLD", "MPI_Comm", "ompi_mpi_comm_world"),
    ("MPI_COMPLEX", "MPI_Datatype", "ompi_mpi_cplex"),
    ("MPI_COMPLEX16", "MPI_Datatype", "ompi_mpi_complex16"),
    ("MPI_COMPLEX32", "MPI_Datatype", "ompi_mpi_complex32"),
    ("MPI_COMPLEX8", "MPI_Datatype", "ompi_mpi_complex8"),
    ("MPI_COUNT", "MPI_Datatype", "ompi_mpi_count"),
    ("MPI_CXX_BOOL", "MPI_Datatype", "ompi_mpi_cxx_bool"),
    ("MPI_CXX_COMPLEX", "MPI_Datatype", "ompi_mpi_cxx_cplex"),
    ("MPI_CXX_DOUBLE_COMPLEX", "MPI_Datatype", "ompi_mpi_cxx_dblcplex"),
    ("MPI_CXX_FLOAT_COMPLEX", "MPI_Datatype", "ompi_mpi_cxx_cplex"),
    ("MPI_CXX_LONG_DOUBLE_COMPLEX", "MPI_Datatype", "ompi_mpi_cxx_ldblcplex"),
    ("MPI_C_BOOL", "MPI_Datatype", "ompi_mpi_c_bool"),
    ("MPI_C_COMPLEX", "MPI_Datatype", "ompi_mpi_c_float_complex"),
    ("MPI_C_DOUBLE_COMPLEX", "MPI_Datatype", "ompi_mpi_c_double_complex"),
    ("MPI_C_FLOAT_COMPLEX", "MPI_Datatype", "ompi_mpi_c_float_complex"),
    ("MPI_C_LONG_DOUBLE_COMPLEX", "MPI_Datatype", "ompi_mpi_c_long_double_complex"),
    ("MPI_DATATYPE_NULL", "MPI_Datatype", "ompi_mpi_datatype_null"),
    ("MPI_DOUBLE", "MPI_Datatype", "ompi_mpi_double"),
    ("MPI_DOUBLE_COMPLEX", "MPI_Datatype", "ompi_mpi_dblcplex"),
    ("MPI_DOUBLE_INT", "MPI_Datatype", "ompi_mpi_double_int"),
    ("MPI_DOUBLE_PRECISION", "MPI_Datatype", "ompi_mpi_dblprec"),
    ("MPI_ERRHANDLER_NULL", "MPI_Errhandler", "ompi_mpi_errhandler_null"),
    ("MPI_ERRORS_ARE_FATAL", "MPI_Errhandler", "ompi_mpi_errors_are_fatal"),
    ("MPI_ERRORS_RETURN", "MPI_Errhandler", "ompi_mpi_errors_return"),
    ("MPI_FILE_NULL", "MPI_File", "ompi_mpi_file_null"),
    ("MPI_FLOAT", "MPI_Datatype", "ompi_mpi_float"),
    ("MPI_FLOAT_INT", "MPI_Datatype", "ompi_mpi_float_int"),
    ("MPI_GROUP_EMPTY", "MPI_Group", "ompi_mpi_group_empty"),
    ("MPI_GROUP_NULL", "MPI_Group", "ompi_mpi_group_null"),
    ("MPI_INFO_ENV", "MPI_Info", "ompi_mpi_info_env"),
    ("MPI_INFO_NULL", "MPI_Info", "ompi_mpi_info_null"),
    ("MPI_INT", "MPI_Datatype", "ompi_mpi_int"),
    ("MPI_INT16_T", "MPI_Datatype", "ompi_mpi_int16_t"),
    ("MPI_INT32_T", "MPI_Datatype", "ompi_mpi_int32_t"),
    ("MPI_INT64_T", "MPI_Datatype", "ompi_mpi_int64_t"),
    ("MPI_INT8_T", "MPI_Datatype", "ompi_mpi_int8_t"),
    ("MPI_INTEGER", "MPI_Datatype", "ompi_mpi_integer"),
    ("MPI_INTEGER1", "MPI_Datatype", "ompi_mpi_integer1"),
    ("MPI_INTEGER16", "MPI_Datatype", "ompi_mpi_integer16"),
    ("MPI_INTEGER2", "MPI_Datatype", "ompi_mpi_integer2"),
    ("MPI_INTEGER4", "MPI_Datatype", "ompi_mpi_integer4"),
    ("MPI_INTEGER8", "MPI_Datatype", "ompi_mpi_integer8"),
    ("MPI_LAND", "MPI_Op", "ompi_mpi_op_land"),
    ("MPI_LB", "MPI_Datatype", "ompi_mpi_lb"),
    ("MPI_LOGICAL", "MPI_Datatype", "ompi_mpi_logical"),
    ("MPI_LOGICAL1", "MPI_Datatype", "ompi_mpi_logical1"),
    ("MPI_LOGICAL2", "MPI_Datatype", "ompi_mpi_logical2"),
    ("MPI_LOGICAL4", "MPI_Datatype", "ompi_mpi_logical4"),
    ("MPI_LOGICAL8", "MPI_Datatype", "ompi_mpi_logical8"),
    ("MPI_LONG", "MPI_Datatype", "ompi_mpi_long"),
    ("MPI_LONG_DOUBLE", "MPI_Datatype", "ompi_mpi_long_double"),
    ("MPI_LONG_DOUBLE_INT", "MPI_Datatype", "ompi_mpi_longdbl_int"),
    ("MPI_LONG_INT", "MPI_Datatype", "ompi_mpi_long_int"),
    ("MPI_LONG_LONG", "MPI_Datatype", "ompi_mpi_long_long_int"),
    ("MPI_LONG_LONG_INT", "MPI_Datatype", "ompi_mpi_long_long_int"),
    ("MPI_LOR", "MPI_Op", "ompi_mpi_op_lor"),
    ("MPI_LXOR", "MPI_Op", "ompi_mpi_op_lxor"),
    ("MPI_MAX", "MPI_Op", "ompi_mpi_op_max"),
    ("MPI_MAXLOC", "MPI_Op", "ompi_mpi_op_maxloc"),
    ("MPI_MESSAGE_NO_PROC", "MPI_Message", "ompi_message_no_proc"),
    ("MPI_MESSAGE_NULL", "MPI_Message", "ompi_message_null"),
    ("MPI_MIN", "MPI_Op", "ompi_mpi_op_min"),
    ("MPI_MINLOC", "MPI_Op", "ompi_mpi_op_minloc"),
    ("MPI_NO_OP", "MPI_Op", "ompi_mpi_op_no_op"),
    ("MPI_OFFSET", "MPI_Datatype", "ompi_mpi_offset"),
    ("MPI_OP_NULL", "MPI_Op", "ompi_mpi_op_null"),
    ("MPI_PACKED", "MPI_Datatype", "ompi_mpi_packed"),
    ("MPI_PROD", "MPI_Op", "ompi_mpi_op_prod"),
    ("MPI_REAL", "MPI_Datatype", "ompi_mpi_real"),
    ("MPI_REAL16", "MPI_Datatype", "ompi_mpi_real16"),
    ("MPI_REAL4", "MPI_Datatype", "ompi_mpi_real4"),
    ("MPI_REAL8", "MPI_Datatype", "ompi_mpi_real8"),
    ("MPI_REPLACE", "MPI_Op", "ompi_mpi_op_replace"),
    ("MPI_REQUEST_NULL", "MPI_Request", "ompi_request_null"),
    ("MPI_SHORT", "MPI_Datatype", "ompi_mpi_short"),
    ("MPI_SHORT_INT", "MPI_Datatype", "ompi_mpi_short_int"),
    ("MPI_SIGNED_CHAR", "MPI_Datatype", "ompi_mpi_signed_char"),
    ("MPI_SUM", "MPI_Op", "ompi_mpi_op_sum"),
    ("MPI_UB", "MPI_Datatype", "ompi_mpi_ub"),
    ("MPI_UINT16_T", "MPI_Datatype", "ompi_mpi_uint16_t"),
    ("MPI_UINT32_T", "MPI_Datatype", "ompi_mpi_uint32_t"),
    ("MPI_UINT64_T", "MPI_Datatype", "ompi_mpi_uint64_t"),
    ("MPI_UINT8_T", "MPI_Datatype", "ompi_mpi_uint8_t"),
    ("MPI_UNSIGNED", "MPI_Datatype", "ompi_mpi_unsigned"),
    ("MPI_UNSIGNED_CHAR", "MPI_Datatype", "ompi_mpi_unsigned_char"),
    ("MPI_UNSIGNED_LONG", "MPI_Datatype", "ompi_mpi_unsigned_long"),
    ("MPI_UNSIGNED_LONG_LONG", "MPI_Datatype", "ompi_mpi_unsigned_long_long"),
    ("MPI_UNSIGNED_SHORT", "MPI_Datatype", "ompi_mpi_unsigned_short"),
    ("MPI_WCHAR", "MPI_Datatype", "ompi_mpi_wchar"),
    ("MPI_WIN_NULL", "MPI_Win", "ompi_mpi_win_null"),
];

/// Handle types of the C API: pointers in this ABI, `int`s in MPICH's.
pub const HANDLE_TYPES: &[&str] = &[
    "MPI_Comm",
    "MPI_Group",
    "MPI_Datatype",
    "MPI_Op",
    "MPI_Request",
    "MPI_Errhandler",
    "MPI_Info",
    "MPI_Win",
    "MPI_Message",
    "MPI_Session",
];

/// Rust type of a parameter in this ABI (see [`crate::codegen::rust_type`]
/// for the MPICH ABI): handles are pointers, `MPI_Status` is [`MPI_Status`].
pub fn rust_type(p: &crate::table::Param) -> String {
    let mpich = crate::codegen::rust_type(p);
    if HANDLE_TYPES.contains(&p.base()) {
        mpich.replace("::std::os::raw::c_int", "*mut ::std::ffi::c_void")
    } else if p.base() == "MPI_Status" {
        mpich.replace("mpi_api::abi::MPI_Status", "mpi_api::ompi::MPI_Status")
    } else {
        mpich
    }
}

/// `name: Type, ...` for a Rust signature in this ABI.
pub fn rust_params(p: &crate::table::Procedure) -> String {
    p.params
        .iter()
        .map(|q| format!("{}: {}", crate::codegen::rust_ident(q.name), rust_type(q)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The symbol of the predefined handle `name` (`"MPI_COMM_WORLD"`).
pub fn predefined_symbol(name: &str) -> Option<&'static str> {
    PREDEFINED.iter().find(|(n, _, _)| *n == name).map(|(_, _, s)| *s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Open MPI's `mpi.h` as Debian installs it.
    const HEADER: &str = "/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h";

    #[test]
    fn status_layout() {
        assert_eq!(std::mem::size_of::<MPI_Status>(), 24);
        assert_eq!(std::mem::offset_of!(MPI_Status, _ucount), 16);
        assert_eq!(predefined_symbol("MPI_COMM_WORLD"), Some(WORLD_SYMBOL));
        assert_eq!(predefined_symbol("MPI_REQUEST_NULL"), Some("ompi_request_null"));
        let procs = crate::table::procedures();
        let waitall = procs.iter().find(|p| p.name == "MPI_Waitall").unwrap();
        assert_eq!(
            rust_params(waitall),
            "count: ::std::os::raw::c_int, array_of_requests: *mut *mut ::std::ffi::c_void, \
             array_of_statuses: *mut mpi_api::ompi::MPI_Status"
        );
    }

    #[test]
    fn matches_installed_header() {
        let h = std::fs::read_to_string(HEADER)
            .unwrap_or_else(|e| panic!("{HEADER}: {e} (install Debian's libopenmpi-dev)"));
        let define = |name: &str| -> String {
            h.lines()
                .filter_map(|l| l.trim_start().strip_prefix("#define "))
                .find_map(|l| l.strip_prefix(name).filter(|r| r.starts_with([' ', '\t'])))
                .unwrap_or_else(|| panic!("{name} not in {HEADER}"))
                .split("/*")
                .next()
                .unwrap()
                .trim()
                .to_string()
        };
        for (name, v) in [
            ("MPI_ANY_SOURCE", MPI_ANY_SOURCE),
            ("MPI_PROC_NULL", MPI_PROC_NULL),
            ("MPI_ROOT", MPI_ROOT),
            ("MPI_ANY_TAG", MPI_ANY_TAG),
            ("MPI_UNDEFINED", MPI_UNDEFINED),
            ("MPI_ERR_IN_STATUS", MPI_ERR_IN_STATUS),
            ("MPI_ERR_PENDING", MPI_ERR_PENDING),
            ("MPI_SUCCESS", MPI_SUCCESS),
            ("MPI_MAX_LIBRARY_VERSION_STRING", MPI_MAX_LIBRARY_VERSION_STRING as c_int),
        ] {
            assert_eq!(define(name), v.to_string(), "{name}");
        }
        assert_eq!(define("MPI_IN_PLACE"), "((void *) 1)");
        assert_eq!(define("MPI_BOTTOM"), "((void *) 0)");
        assert!(h.contains("#define MPI_STATUS_IGNORE ((MPI_Status *) 0)"));
        assert!(h.contains("#define MPI_STATUSES_IGNORE ((MPI_Status *) 0)"));
        let status = h.split("struct ompi_status_public_t {").nth(1).expect("struct ompi_status_public_t");
        let fields: Vec<&str> =
            status.split("};").next().unwrap().lines().map(str::trim).filter(|l| l.ends_with(';')).collect();
        assert_eq!(fields, ["int MPI_SOURCE;", "int MPI_TAG;", "int MPI_ERROR;", "int _cancelled;", "size_t _ucount;"]);
        let shared = h.split("MPI_COMM_TYPE_SHARED").next().unwrap();
        assert!(shared.trim_end().ends_with('{'), "MPI_COMM_TYPE_SHARED is not the first of its enum");
        // Every predefined handle, and no other.
        let mut found = Vec::new();
        for l in h.lines() {
            let l = l.trim_start().trim_start_matches('#').trim_start();
            let Some(rest) = l.strip_prefix("define ") else { continue };
            let mut parts = rest.splitn(2, char::is_whitespace);
            let (name, value) = (parts.next().unwrap(), parts.next().unwrap_or("").trim());
            let Some(args) = value.strip_prefix("OMPI_PREDEFINED_GLOBAL(") else { continue };
            if !name.starts_with("MPI") {
                continue;
            }
            let args: Vec<&str> = args.trim_end_matches(')').split(',').map(str::trim).collect();
            found.push((name.to_string(), args[0].to_string(), args[1].to_string()));
        }
        found.sort();
        found.dedup();
        let ours: Vec<(String, String, String)> =
            PREDEFINED.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect();
        assert_eq!(ours, found);
    }
}
