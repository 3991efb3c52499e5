//! The Fortran binding of `mpif.h` and `use mpi` (MPI 4.1 chapter 19), derived
//! from the C table: which procedures have one, how each argument crosses
//! (by reference, with the special addresses `MPI_BOTTOM`, `MPI_IN_PLACE`,
//! `MPI_STATUS_IGNORE`... of the Fortran program mapped to the C values, and
//! blank-padded `CHARACTER` arguments with gfortran's hidden lengths), and the
//! Rust code of the wrappers that mpi-core's build script writes.
//!
//! The calling convention is gfortran's (and MPICH's `libmpifort`'s): every
//! argument is an address, `CHARACTER` arguments add a `size_t` length after
//! all others, in order; procedures are exported under MPICH's spellings
//! (`mpi_send_`, `mpi_send__`, `mpi_send`, `MPI_SEND` and the `pmpi_` forms).
//! As in MPICH, the `mpi_` spellings call the C `MPI_` symbol (so a C-level
//! profiling library sees Fortran calls too), the `pmpi_` ones `PMPI_`.

use std::fmt::Write as _;

use crate::codegen::{rust_params, rust_ret, rust_type};
use crate::table::{Dir, Param, Procedure};

/// How one argument crosses from Fortran to C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A scalar passed by value in C: the Fortran address is read.
    Value(&'static str),
    /// A pointer or array of the same layout in both languages.
    Same,
    /// A choice buffer: `MPI_BOTTOM` and `MPI_IN_PLACE` mapped.
    Buffer,
    /// One status: `MPI_STATUS_IGNORE` mapped.
    Status,
    /// An array of statuses: `MPI_STATUSES_IGNORE` mapped.
    Statuses,
    /// `MPI_ERRCODES_IGNORE` mapped.
    Errcodes,
    /// Graph weights: `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` mapped.
    Weights,
    /// An input string (blank-padded, hidden length).
    StrIn,
    /// An output string (blank-padded on return, hidden length).
    StrOut,
    /// A file handle (a pointer in C, an integer in Fortran) passed in.
    FileIn,
    /// A file handle returned.
    FileOut,
    /// A file handle passed in and returned (`MPI_File_close`).
    FileInOut,
    /// An attribute value given as `INTEGER(KIND=MPI_ADDRESS_KIND)`.
    AddrValue,
    /// An attribute value given as `INTEGER` (the MPI-1 attribute calls).
    IntValue,
    /// An address the C call writes that Fortran cannot use (a temporary).
    Discard,
}

impl Arg {
    fn has_len(self) -> bool {
        matches!(self, Arg::StrIn | Arg::StrOut)
    }
}

/// Procedures whose Fortran binding is written by hand in mpi-core
/// (`src/fortran/`): no argc/argv, callbacks with Fortran conventions,
/// attribute values, string arrays.
pub const HANDWRITTEN: &[&str] = &[
    "MPI_Init",
    "MPI_Init_thread",
    "MPI_Pcontrol",
    "MPI_Comm_create_keyval",
    "MPI_Type_create_keyval",
    "MPI_Win_create_keyval",
    "MPI_Keyval_create",
    "MPI_Comm_get_attr",
    "MPI_Type_get_attr",
    "MPI_Win_get_attr",
    "MPI_Attr_get",
    "MPI_Info_create_env",
];

/// The Fortran binding of `p`: how each argument crosses, or why it has none
/// generated (C-only procedures, those written by hand, those not done yet).
pub fn plan(p: &Procedure) -> Result<Vec<Arg>, &'static str> {
    let n = p.name;
    if n.starts_with("MPI_T_") || n.contains("fortran") {
        return Err("C only");
    }
    if p.large || p.is_macro || p.varargs {
        return Err("large-count, macro or variadic: none in mpif.h");
    }
    if ["_c2f", "_f2c", "_c2f08", "_f082c", "_f2f08", "_f082f"].iter().any(|s| n.ends_with(s)) {
        return Err("C only");
    }
    if HANDWRITTEN.contains(&n) {
        return Err("written by hand");
    }
    p.params.iter().map(|q| arg(p, q)).collect()
}

fn arg(p: &Procedure, q: &Param) -> Result<Arg, &'static str> {
    let base = q.base();
    let depth = q.pointer_depth();
    if q.ctype.contains("char") {
        return match (q.kind, q.dir, depth) {
            ("STRING", Dir::In, 1) => Ok(Arg::StrIn),
            ("STRING", Dir::Out | Dir::InOut, 1) => Ok(Arg::StrOut),
            _ => Err("string arrays not done yet"),
        };
    }
    if base == "MPI_File" {
        return Ok(match (depth, q.dir) {
            (0, _) => Arg::FileIn,
            (_, Dir::Out) => Arg::FileOut,
            _ => Arg::FileInOut,
        });
    }
    if base.ends_with("_function") || base.ends_with("_function_c") {
        // A Fortran procedure passed as an argument is its address; the
        // user function, error handler and op conventions (everything by
        // reference) are the C ones.
        return match q.kind {
            "POLYFUNCTION" if base == "MPI_User_function" => Ok(Arg::Same),
            "FUNCTION" if base.contains("errhandler_function") || base == "MPI_Handler_function" => Ok(Arg::Same),
            _ => Err("callback conventions differ"),
        };
    }
    match (base, q.kind) {
        ("void", "BUFFER") => return Ok(Arg::Buffer),
        ("void", "C_BUFFER") => return Ok(Arg::Same),
        ("void", "C_BUFFER2") => return Ok(Arg::Discard),
        ("void", "ATTRIBUTE_VAL") if q.dir == Dir::In => return Ok(Arg::AddrValue),
        ("void", "ATTRIBUTE_VAL_10") if q.dir == Dir::In => return Ok(Arg::IntValue),
        ("void", _) => return Err("untyped argument"),
        ("MPI_Status", _) if q.suffix.is_empty() => return Ok(Arg::Status),
        ("MPI_Status", _) => return Ok(Arg::Statuses),
        _ => {}
    }
    let scalar = match base {
        "int" | "MPI_Comm" | "MPI_Group" | "MPI_Datatype" | "MPI_Op" | "MPI_Request" | "MPI_Errhandler"
        | "MPI_Info" | "MPI_Win" | "MPI_Message" | "MPI_Session" => "::std::os::raw::c_int",
        "MPI_Aint" | "MPI_Offset" | "MPI_Count" => "i64",
        "double" => "f64",
        _ => return Err("type without a Fortran form"),
    };
    if depth == 0 {
        return Ok(Arg::Value(scalar));
    }
    if q.name == "array_of_errcodes" {
        return Ok(Arg::Errcodes);
    }
    if q.kind == "WEIGHT" || (q.name.contains("weights") && p.name.contains("_graph")) {
        return Ok(Arg::Weights);
    }
    Ok(Arg::Same)
}

/// MPICH's eight spellings of a Fortran procedure, `mpi_` ones first.
pub fn spellings(name: &str) -> ([String; 4], [String; 4]) {
    let lower = name.to_ascii_lowercase();
    let upper = name.to_ascii_uppercase();
    (
        [format!("{lower}_"), format!("{lower}__"), lower.clone(), upper.clone()],
        [format!("p{lower}_"), format!("p{lower}__"), format!("p{lower}"), format!("P{upper}")],
    )
}

/// The Rust code of the Fortran wrappers of every procedure of `procs` that
/// `implemented` names and [`plan`] accepts: one body per procedure, taking
/// the C function to call, and the exported spellings calling it. The code
/// refers to `crate::fortran::conv` (the conversions) and `crate::exports`.
pub fn rust_wrappers(procs: &[Procedure], implemented: &dyn Fn(&str) -> bool) -> (String, Vec<&'static str>) {
    let mut out = String::new();
    let mut done = Vec::new();
    for p in procs.iter().filter(|p| implemented(p.name)) {
        let Ok(args) = plan(p) else { continue };
        wrapper(&mut out, p, &args);
        done.push(p.name);
    }
    let _ = writeln!(
        out,
        "/// Every procedure with a generated Fortran binding.\npub const FORTRAN_GENERATED: &[&str] = &{done:?};"
    );
    (out, done)
}

fn wrapper(out: &mut String, p: &Procedure, args: &[Arg]) {
    let name = p.name;
    let ret = rust_ret(p);
    let returns_value = p.ret != "int";
    let cty = format!("unsafe extern \"C\" fn({}) -> {ret}", rust_params(p));
    // Fortran parameters: every argument an address, then `ierror` (for
    // subroutines), then the hidden lengths.
    let mut fparams: Vec<String> = (0..args.len()).map(|i| format!("a{i}: *mut ::std::ffi::c_void")).collect();
    if !returns_value {
        fparams.push("ierror: *mut ::std::os::raw::c_int".into());
    }
    let lens: Vec<usize> = (0..args.len()).filter(|&i| args[i].has_len()).collect();
    fparams.extend(lens.iter().map(|i| format!("l{i}: usize")));
    let fparams = fparams.join(", ");
    let fargs: Vec<String> = (0..args.len())
        .map(|i| format!("a{i}"))
        .chain((!returns_value).then(|| "ierror".to_string()))
        .chain(lens.iter().map(|i| format!("l{i}")))
        .collect();
    let fargs = fargs.join(", ");

    let mut pre = String::new();
    let mut post = String::new();
    let mut call = Vec::new();
    for (i, (a, q)) in args.iter().zip(&p.params).enumerate() {
        let ty = rust_type(q);
        let x = format!("a{i}");
        match *a {
            Arg::Value(t) => call.push(format!("unsafe {{ *({x} as *const {t}) }}")),
            Arg::Same => call.push(format!("{x} as {ty}")),
            Arg::Buffer => call.push(format!("conv::buffer({x}) as {ty}")),
            Arg::Status => call.push(format!("conv::status({x}) as {ty}")),
            Arg::Statuses => call.push(format!("conv::statuses({x}) as {ty}")),
            Arg::Errcodes => call.push(format!("conv::errcodes({x}) as {ty}")),
            Arg::Weights => call.push(format!("conv::weights({x}) as {ty}")),
            Arg::StrIn => {
                let _ = writeln!(
                    pre,
                    "        // SAFETY: the caller's CHARACTER variable and its length.\n        \
                     let s{i} = unsafe {{ conv::str_in({x}, l{i}) }};"
                );
                call.push(format!("s{i}.as_ptr() as {ty}"));
            }
            Arg::StrOut => {
                // A length the program gives the C call for this string.
                let hint = p
                    .params
                    .iter()
                    .position(|q| q.name == "valuelen" || q.name == "buflen")
                    .map_or("0".to_string(), |k| format!("unsafe {{ *(a{k} as *const ::std::os::raw::c_int) }}"));
                let _ = writeln!(
                    pre,
                    "        // SAFETY: the caller's INTEGER arguments.\n        \
                     let mut s{i} = conv::StrOut::new(l{i}, {hint});"
                );
                call.push(format!("s{i}.as_mut_ptr() as {ty}"));
                let _ = writeln!(
                    post,
                    "        // SAFETY: the caller's CHARACTER variable and its length.\n        \
                     unsafe {{ s{i}.finish(rc, {x}, l{i}) }};"
                );
            }
            Arg::FileIn => call.push(format!("unsafe {{ conv::file_in({x}) }}")),
            Arg::FileOut => {
                let _ = writeln!(pre, "        let mut f{i}: *mut ::std::ffi::c_void = ::std::ptr::null_mut();");
                call.push(format!("&mut f{i}"));
                let _ = writeln!(
                    post,
                    "        // SAFETY: the caller's INTEGER.\n        unsafe {{ conv::file_out(rc, f{i}, {x}) }};"
                );
            }
            Arg::FileInOut => {
                let _ = writeln!(
                    pre,
                    "        // SAFETY: the caller's INTEGER.\n        let mut f{i} = unsafe {{ conv::file_in({x}) }};"
                );
                call.push(format!("&mut f{i}"));
                let _ = writeln!(
                    post,
                    "        // SAFETY: the caller's INTEGER.\n        unsafe {{ conv::file_out(rc, f{i}, {x}) }};"
                );
            }
            Arg::AddrValue => call.push(format!("unsafe {{ *({x} as *const isize) }} as {ty}")),
            Arg::IntValue => call.push(format!("unsafe {{ *({x} as *const ::std::os::raw::c_int) }} as isize as {ty}")),
            Arg::Discard => {
                let _ = writeln!(
                    pre,
                    "        let _ = {x};\n        let mut t{i}: *mut ::std::ffi::c_void = ::std::ptr::null_mut();"
                );
                call.push(format!("(&mut t{i}) as *mut _ as {ty}"));
            }
        }
    }
    let call = call.join(", ");
    let result = if post.is_empty() {
        format!("unsafe {{ c({call}) }}")
    } else {
        format!("let rc = unsafe {{ c({call}) }};\n{post}        rc")
    };
    let lower = name.to_ascii_lowercase();
    let body_ret = if returns_value { format!(" -> {ret}") } else { String::new() };
    let _ = writeln!(
        out,
        "/// The Fortran binding of `{name}`, calling `c`.\n///\n/// # Safety\n\
         /// The arguments are what a Fortran caller of `{name}` passes (see the module).\n\
         #[allow(unused_unsafe, clippy::unnecessary_cast, clippy::useless_conversion)]\n\
         unsafe fn f_{lower}(c: {cty}, {fparams}){body_ret} {{"
    );
    if returns_value {
        // MPI_Wtime, MPI_Wtick, MPI_Aint_add, MPI_Aint_diff: Fortran functions.
        let _ = writeln!(
            out,
            "    // SAFETY: the Fortran caller passes the addresses of the arguments; `c` is `{name}`.\n    \
             unsafe {{ c({call}) }}\n}}"
        );
    } else {
        let _ = writeln!(
            out,
            "    let rc = crate::ffi::guard(\"{name}\", move || {{\n{pre}        \
             // SAFETY: the Fortran caller passes the addresses of the arguments (and the\n        \
             // lengths of its strings); each is converted to what `{name}` takes in C.\n        \
             {result}\n    }});\n    \
             // SAFETY: `ierror` is the caller's INTEGER (or null).\n    \
             unsafe {{ conv::set_ierror(ierror, rc) }};\n}}"
        );
    }
    let (mpi, pmpi) = spellings(name);
    let slot = format!("C_{}", name.to_ascii_uppercase());
    let _ = writeln!(out, "static {slot}: conv::Slot = conv::Slot::new(c\"{name}\");");
    for (names, callee) in
        [(&mpi, format!("{slot}.get::<{cty}>(crate::exports::{name})")), (&pmpi, format!("crate::exports::P{name}"))]
    {
        for s in names.iter() {
            let _ = writeln!(
                out,
                "/// `{name}` for Fortran callers.\n///\n/// # Safety\n/// See `f_{lower}`.\n\
                 #[no_mangle]\npub unsafe extern \"C\" fn {s}({fparams}){body_ret} {{\n    \
                 // SAFETY: the caller's arguments are passed on unchanged.\n    \
                 unsafe {{ f_{lower}({callee}, {fargs}) }}\n}}"
            );
        }
    }
}

/// Constants that exist in Fortran only (or differ from C): name, value.
/// Facts of MPICH's `mpif.h` (the status is C's five integers; the
/// `_KIND` values are gfortran's kinds of 8-byte integers).
pub const FORTRAN_CONSTANTS: &[(&str, i64)] = &[
    ("MPI_STATUS_SIZE", 5),
    ("MPI_SOURCE", 3),
    ("MPI_TAG", 4),
    ("MPI_ERROR", 5),
    ("MPI_ADDRESS_KIND", 8),
    ("MPI_OFFSET_KIND", 8),
    ("MPI_COUNT_KIND", 8),
    ("MPI_INTEGER_KIND", 4),
    // A file handle is an integer in Fortran (a pointer in C).
    ("MPI_FILE_NULL", 0),
];

/// String lengths: in Fortran without C's terminating NUL (one less).
pub const FORTRAN_SHORTER: &[&str] = &[
    "MPI_MAX_DATAREP_STRING",
    "MPI_MAX_ERROR_STRING",
    "MPI_MAX_INFO_KEY",
    "MPI_MAX_INFO_VAL",
    "MPI_MAX_LIBRARY_VERSION_STRING",
    "MPI_MAX_OBJECT_NAME",
    "MPI_MAX_PORT_NAME",
    "MPI_MAX_PROCESSOR_NAME",
    "MPI_MAX_PSET_NAME_LEN",
    "MPI_MAX_STRINGTAG_LEN",
];

/// Predefined attribute keys: in Fortran the C key plus one (as in MPICH,
/// whose Fortran programs get the attribute's value where C gets a pointer
/// to it; the binding of `MPI_Comm_get_attr` tells them apart by this).
pub const FORTRAN_KEYVALS: &[&str] = &[
    "MPI_TAG_UB",
    "MPI_HOST",
    "MPI_IO",
    "MPI_WTIME_IS_GLOBAL",
    "MPI_UNIVERSE_SIZE",
    "MPI_LASTUSEDCODE",
    "MPI_APPNUM",
    "MPI_WIN_BASE",
    "MPI_WIN_SIZE",
    "MPI_WIN_DISP_UNIT",
    "MPI_WIN_CREATE_FLAVOR",
    "MPI_WIN_MODEL",
];

/// The Fortran value of C constant `c`.
pub fn fortran_value(c: &crate::abi::Constant) -> i64 {
    let v = c.value as i32 as i64;
    if FORTRAN_SHORTER.contains(&c.name) {
        v - 1
    } else if FORTRAN_KEYVALS.contains(&c.name) {
        v + 1
    } else {
        v
    }
}

/// The procedures `mpif.h` declares `EXTERNAL`: the predefined callbacks
/// and the two functions returning `DOUBLE PRECISION`.
pub const EXTERNALS: &[&str] = &[
    "MPI_DUP_FN",
    "MPI_NULL_DELETE_FN",
    "MPI_NULL_COPY_FN",
    "MPI_COMM_DUP_FN",
    "MPI_COMM_NULL_DELETE_FN",
    "MPI_COMM_NULL_COPY_FN",
    "MPI_WIN_DUP_FN",
    "MPI_WIN_NULL_DELETE_FN",
    "MPI_WIN_NULL_COPY_FN",
    "MPI_TYPE_DUP_FN",
    "MPI_TYPE_NULL_DELETE_FN",
    "MPI_TYPE_NULL_COPY_FN",
    "MPI_CONVERSION_FN_NULL",
];

/// The text of `mpif.h`: every integer constant and handle of the C header
/// (a Fortran handle is the C handle's value, as in MPICH), the Fortran-only
/// constants, the special addresses in MPICH's common blocks (the library
/// recognises their addresses), and the external procedures. Fixed form and
/// free form alike: statements start in column 7 and end before column 73.
pub fn mpif_h(constants: &[crate::abi::Constant]) -> String {
    let mut out = String::from(
        "! mpif.h of mpi-core (generated from the API table; do not edit).\n\
         ! Usable from fixed-form and free-form Fortran.\n",
    );
    let mut seen = std::collections::HashSet::new();
    let mut decl = |out: &mut String, name: &str, value: i64| {
        if !seen.insert(name.to_ascii_uppercase()) {
            return;
        }
        let _ = writeln!(out, "       INTEGER {name}");
        let _ = writeln!(out, "       PARAMETER ({name}={value})");
    };
    for &(n, v) in FORTRAN_CONSTANTS {
        decl(&mut out, n, v);
    }
    for c in constants {
        if matches!(c.ctype, crate::abi::CType::Pointer(_)) || FORTRAN_CONSTANTS.iter().any(|f| f.0 == c.name) {
            continue;
        }
        // Fortran is case-blind: a C constant that differs from another
        // only in case (none today) would be declared once.
        decl(&mut out, c.name, fortran_value(c));
    }
    out.push_str(
        "       LOGICAL MPI_SUBARRAYS_SUPPORTED\n\
         \x20      PARAMETER (MPI_SUBARRAYS_SUPPORTED=.FALSE.)\n\
         \x20      LOGICAL MPI_ASYNC_PROTECTS_NONBLOCKING\n\
         \x20      PARAMETER (MPI_ASYNC_PROTECTS_NONBLOCKING=.FALSE.)\n\
         \x20      INTEGER MPI_BOTTOM, MPI_IN_PLACE, MPI_UNWEIGHTED\n\
         \x20      INTEGER MPI_WEIGHTS_EMPTY\n\
         \x20      INTEGER MPI_STATUS_IGNORE(MPI_STATUS_SIZE)\n\
         \x20      INTEGER MPI_STATUSES_IGNORE(MPI_STATUS_SIZE,1)\n\
         \x20      INTEGER MPI_ERRCODES_IGNORE(1)\n\
         \x20      CHARACTER*1 MPI_ARGVS_NULL(1,1)\n\
         \x20      CHARACTER*1 MPI_ARGV_NULL(1)\n\
         \x20      COMMON /MPIFCMB5/ MPI_UNWEIGHTED\n\
         \x20      COMMON /MPIFCMB9/ MPI_WEIGHTS_EMPTY\n\
         \x20      COMMON /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE\n\
         \x20      COMMON /MPIPRIV2/ MPI_STATUSES_IGNORE, MPI_ERRCODES_IGNORE\n\
         \x20      COMMON /MPIPRIVC/ MPI_ARGVS_NULL, MPI_ARGV_NULL\n\
         \x20      SAVE /MPIFCMB5/, /MPIFCMB9/\n\
         \x20      SAVE /MPIPRIV1/, /MPIPRIV2/, /MPIPRIVC/\n",
    );
    for chunk in EXTERNALS.chunks(2) {
        let _ = writeln!(out, "       EXTERNAL {}", chunk.join(", "));
    }
    out.push_str(
        "       EXTERNAL MPI_WTIME, MPI_WTICK, PMPI_WTIME, PMPI_WTICK\n\
         \x20      DOUBLE PRECISION MPI_WTIME, MPI_WTICK\n\
         \x20      DOUBLE PRECISION PMPI_WTIME, PMPI_WTICK\n",
    );
    out
}

/// The source of the `mpi` module (`use mpi`): the declarations of `mpif.h`.
/// `mpifort` compiles it with the program's compiler, once per compiler
/// version (a `.mod` file is specific to one compiler).
pub fn mpi_module(mpif: &str) -> String {
    let body: String = mpif.lines().filter(|l| !l.starts_with('!')).map(|l| format!("{l}\n")).collect();
    format!(
        "! The `mpi` module of mpi-core (generated from the API table; do not edit).\n\
         \x20      module mpi\n\
         \x20      implicit none\n{body}\
         \x20      end module mpi\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::procedures;

    #[test]
    fn plans() {
        let procs = procedures();
        let get = |n: &str| plan(procs.iter().find(|p| p.name == n).unwrap());
        use Arg::*;
        let v = Value("::std::os::raw::c_int");
        assert_eq!(get("MPI_Send").unwrap(), vec![Buffer, v, v, v, v, v]);
        assert_eq!(get("MPI_Recv").unwrap(), vec![Buffer, v, v, v, v, v, Status]);
        assert_eq!(get("MPI_Waitall").unwrap(), vec![v, Same, Statuses]);
        assert_eq!(get("MPI_Get_processor_name").unwrap(), vec![StrOut, Same]);
        assert_eq!(get("MPI_Comm_set_name").unwrap(), vec![v, StrIn]);
        assert_eq!(get("MPI_File_open").unwrap(), vec![v, StrIn, v, v, FileOut]);
        assert_eq!(get("MPI_File_close").unwrap(), vec![FileInOut]);
        assert_eq!(get("MPI_Comm_set_attr").unwrap(), vec![v, v, AddrValue]);
        assert_eq!(get("MPI_Dist_graph_create_adjacent").unwrap()[3], Weights);
        assert_eq!(get("MPI_Comm_spawn").unwrap_err(), "string arrays not done yet");
        assert_eq!(get("MPI_Init"), Err("written by hand"));
        assert!(get("MPI_Send_c").is_err() && get("MPI_Comm_f2c").is_err() && get("MPI_T_init_thread").is_err());
        assert_eq!(get("MPI_Wtime").unwrap(), vec![]);
        let (m, p) = spellings("MPI_Send");
        assert_eq!(m, ["mpi_send_", "mpi_send__", "mpi_send", "MPI_SEND"].map(String::from));
        assert_eq!(p[3], "PMPI_SEND");
    }

    #[test]
    fn mpif_h_is_fixed_form() {
        let h = mpif_h(crate::abi::CONSTANTS);
        assert!(h.contains("       PARAMETER (MPI_COMM_WORLD=1140850688)\n"));
        assert!(h.contains("       PARAMETER (MPI_STATUS_SIZE=5)\n"));
        assert!(h.contains("COMMON /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE"));
        for l in h.lines() {
            assert!(l.starts_with('!') || (l.starts_with("       ") && l.len() <= 72), "{l}");
        }
        assert_eq!(h.matches("PARAMETER (MPI_STATUS_SIZE=").count(), 1);
    }
}
