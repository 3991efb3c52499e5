//! Code generators over the table, used by build scripts: Rust `extern "C"`
//! signatures (for the library's exports and the shim's wrappers) and C
//! prototypes (for `mpi.h`).

use crate::abi::{CEnum, CType, Constant};
use crate::table::{Param, Procedure};

/// Rust type of a C base type (no pointers).
fn rust_base(base: &str) -> &'static str {
    match base {
        "void" => "::std::ffi::c_void",
        "int" | "MPI_Fint" | "MPI_T_cb_safety" | "MPI_T_source_order" | "MPIX_Grequest_class" => {
            "::std::os::raw::c_int"
        }
        "char" => "::std::os::raw::c_char",
        "double" => "f64",
        "MPI_Aint" | "MPI_Offset" | "MPI_Count" => "i64",
        "MPI_Comm" | "MPI_Group" | "MPI_Datatype" | "MPI_Op" | "MPI_Request" | "MPI_Errhandler" | "MPI_Info"
        | "MPI_Win" | "MPI_Message" | "MPI_Session" => "::std::os::raw::c_int",
        "MPI_Status" => "mpi_api::abi::MPI_Status",
        // Opaque pointers and function types are passed as untyped pointers.
        _ => "::std::ffi::c_void",
    }
}

/// C base types that are themselves pointers in the MPICH ABI.
fn base_is_pointer(base: &str) -> bool {
    matches!(
        base,
        "MPI_File"
            | "MPI_T_enum"
            | "MPI_T_cvar_handle"
            | "MPI_T_pvar_handle"
            | "MPI_T_pvar_session"
            | "MPI_T_event_registration"
            | "MPI_T_event_instance"
    )
}

/// Rust type of a parameter, ABI-compatible with its C declaration.
pub fn rust_type(p: &Param) -> String {
    let base = p.base();
    let is_const = p.ctype.starts_with("const ");
    let mut depth = p.pointer_depth();
    let mut inner = rust_base(base).to_string();
    if base.ends_with("_function") {
        // A function type: `F*` and a parameter of type `F` are both one
        // function pointer.
        depth = depth.max(1);
        inner = "::std::ffi::c_void".into();
    } else if base_is_pointer(base) {
        depth += 1;
        inner = "::std::ffi::c_void".into();
    }
    if depth == 0 {
        return inner;
    }
    let mut t = inner;
    for level in 0..depth {
        let kw = if level == 0 && is_const { "*const " } else { "*mut " };
        t = format!("{kw}{t}");
    }
    t
}

/// Rust return type of a procedure.
pub fn rust_ret(p: &Procedure) -> &'static str {
    match p.ret {
        "double" => "f64",
        "MPI_Aint" | "MPI_Offset" | "MPI_Count" => "i64",
        "MPI_File" => "*mut ::std::ffi::c_void",
        _ => "::std::os::raw::c_int",
    }
}

/// Parameter name safe as a Rust identifier.
pub fn rust_ident(name: &str) -> String {
    match name {
        "type" | "in" | "ref" | "fn" | "match" | "loop" | "move" | "use" | "where" | "box" | "impl" | "mod"
        | "self" | "super" | "crate" | "struct" | "enum" | "trait" | "const" | "static" | "mut" | "dyn" | "async"
        | "await" | "final" | "override" => format!("{name}_"),
        _ => name.to_string(),
    }
}

/// `name: Type, ...` for a Rust signature.
pub fn rust_params(p: &Procedure) -> String {
    p.params.iter().map(|q| format!("{}: {}", rust_ident(q.name), rust_type(q))).collect::<Vec<_>>().join(", ")
}

/// `name, ...` for a Rust call.
pub fn rust_args(p: &Procedure) -> String {
    p.params.iter().map(|q| rust_ident(q.name)).collect::<Vec<_>>().join(", ")
}

/// C prototype, e.g. `int MPI_Send(const void* buf, ...)`, without `;`.
pub fn c_prototype(p: &Procedure, name: &str) -> String {
    // `T name[]` is written `T *name` (the same type): GCC 11+ would
    // otherwise warn at every call passing MPI_STATUSES_IGNORE, a pointer
    // that is not an array (-Wstringop-overflow).
    let mut params: Vec<String> = p
        .params
        .iter()
        .map(|q| match q.suffix {
            "[]" => format!("{} *{}", q.ctype, q.name),
            s => format!("{} {}{}", q.ctype, q.name, s),
        })
        .collect();
    if p.varargs {
        params.push("...".into());
    }
    if params.is_empty() {
        params.push("void".into());
    }
    format!("{} {}({})", p.ret, name, params.join(", "))
}

/// `typedef enum` declaration of a C enumeration for `mpi.h`.
pub fn c_enum(e: &CEnum) -> String {
    let items: Vec<String> = e.items.iter().map(|(n, v)| format!("    {n} = {v}")).collect();
    format!("typedef enum {0} {{\n{1}\n}} {0};", e.name, items.join(",\n"))
}

/// `#define` line of a constant for `mpi.h`.
pub fn c_define(c: &Constant) -> String {
    let cast = match c.ctype {
        CType::Int => None,
        CType::Comm => Some("MPI_Comm"),
        CType::Group => Some("MPI_Group"),
        CType::Datatype => Some("MPI_Datatype"),
        CType::Op => Some("MPI_Op"),
        CType::Request => Some("MPI_Request"),
        CType::Errhandler => Some("MPI_Errhandler"),
        CType::Info => Some("MPI_Info"),
        CType::Win => Some("MPI_Win"),
        CType::Message => Some("MPI_Message"),
        CType::Session => Some("MPI_Session"),
        CType::Pointer(t) => Some(t),
    };
    match cast {
        None => format!("#define {} ({})", c.name, c.value),
        Some(t) => format!("#define {} (({})0x{:08x})", c.name, t, c.value as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::procedures;

    #[test]
    fn signatures() {
        let procs = procedures();
        let get = |n: &str| procs.iter().find(|p| p.name == n).unwrap().clone();
        let send = get("MPI_Send");
        assert_eq!(
            c_prototype(&send, "MPI_Send"),
            "int MPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)"
        );
        assert!(rust_params(&send).starts_with("buf: *const ::std::ffi::c_void, count: ::std::os::raw::c_int"));
        let init = get("MPI_Init");
        assert_eq!(rust_type(&init.params[1]), "*mut *mut *mut ::std::os::raw::c_char");
        let wait = get("MPI_Waitall");
        assert_eq!(rust_type(&wait.params[2]), "*mut mpi_api::abi::MPI_Status");
        let wt = get("MPI_Wtime");
        assert_eq!(c_prototype(&wt, "PMPI_Wtime"), "double PMPI_Wtime(void)");
        assert_eq!(rust_ret(&wt), "f64");
        let fo = get("MPI_File_open");
        assert_eq!(rust_type(fo.param("fh").unwrap()), "*mut *mut ::std::ffi::c_void");
        let ce = get("MPI_Comm_create_errhandler");
        assert_eq!(rust_type(&ce.params[0]), "*mut ::std::ffi::c_void");
        let scope = crate::abi::C_ENUMS.iter().find(|e| e.name == "MPIR_T_scope_t").unwrap();
        assert!(c_enum(scope).starts_with(
            "typedef enum MPIR_T_scope_t {\n    MPI_T_SCOPE_INVALID = 0,\n    MPI_T_SCOPE_CONSTANT = 60438,"
        ));
        assert!(c_enum(scope).ends_with("MPI_T_SCOPE_ALL_EQ = 60444\n} MPIR_T_scope_t;"));
        let ri = get("MPI_Group_range_incl");
        assert_eq!(rust_type(ri.param("ranges").unwrap()), "*mut ::std::os::raw::c_int");
    }
}
