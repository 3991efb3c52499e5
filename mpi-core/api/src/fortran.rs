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
    /// An array of blank-padded strings (`argv`, the commands of
    /// `MPI_Comm_spawn_multiple`), with one hidden length (of an element);
    /// only in [`layout`].
    StrArray,
}

impl Arg {
    /// Whether the argument adds a hidden length after the others.
    pub fn has_len(self) -> bool {
        matches!(self, Arg::StrIn | Arg::StrOut | Arg::StrArray)
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
    "MPI_Grequest_start",
    "MPI_Comm_spawn",
    "MPI_Comm_spawn_multiple",
    "MPI_Register_datarep",
];

/// The Fortran binding of `p`: how each argument crosses, or why it has none
/// generated (C-only procedures, those written by hand, those not done yet).
pub fn plan(p: &Procedure) -> Result<Vec<Arg>, &'static str> {
    if p.large {
        return Err("large-count, macro or variadic: none in mpif.h");
    }
    plan_any(p)
}

/// How each C parameter of `p` arrives in a Fortran call of `p`, for
/// every procedure with a Fortran binding, those in [`HANDWRITTEN`] included
/// (`None`: a C parameter the Fortran form lacks, `argc` and `argv`). It
/// serves a layer that reads the arguments and then passes the program's
/// own call on (pmpi-shim under Open MPI, whose Fortran procedures it
/// records), not one that calls the C procedure with them: a callback is
/// the address of a Fortran procedure, to be called with Fortran's
/// conventions only; an extra state is an `INTEGER(KIND=MPI_ADDRESS_KIND)`
/// value (`INTEGER` for `MPI_Keyval_create`); the value a `*_get_attr`
/// returns is not C's (the predefined attributes' values, not pointers to
/// them): `Discard`; arrays of strings are [`Arg::StrArray`].
/// `MPI_PCONTROL(LEVEL)` alone has no `IERROR`. Large-count procedures
/// (`MPI_Send_c`) have their binding in MPICH's `mpi_f08` only.
pub fn layout(p: &Procedure) -> Result<Vec<Option<Arg>>, &'static str> {
    const INT: Arg = Arg::Value("::std::os::raw::c_int");
    match p.name {
        // MPI_INIT(IERROR), MPI_INIT_THREAD(REQUIRED, PROVIDED, IERROR),
        // MPI_INFO_CREATE_ENV(INFO, IERROR): no argc, argv.
        "MPI_Init" => return Ok(vec![None, None]),
        "MPI_Init_thread" => return Ok(vec![None, None, Some(INT), Some(Arg::Same)]),
        "MPI_Info_create_env" => return Ok(vec![None, None, Some(Arg::Same)]),
        // Variadic in C.
        "MPI_Pcontrol" => return Ok(vec![Some(INT)]),
        _ => {}
    }
    if !HANDWRITTEN.contains(&p.name) {
        return Ok(plan_any(p)?.into_iter().map(Some).collect());
    }
    p.params
        .iter()
        .map(|q| {
            Some(match (q.kind, q.dir) {
                ("FUNCTION" | "POLYFUNCTION", _) => Ok(Arg::Same),
                ("EXTRA_STATE", _) => Ok(Arg::AddrValue),
                ("EXTRA_STATE2", _) => Ok(Arg::IntValue),
                ("ATTRIBUTE_VAL" | "ATTRIBUTE_VAL_10", Dir::Out) => Ok(Arg::Discard),
                ("STRING_ARRAY" | "STRING_2DARRAY", _) => Ok(Arg::StrArray),
                _ => arg(p, q),
            })
            .transpose()
        })
        .collect()
}

/// [`plan`], large-count procedures included (MPICH's `mpi_f08` has them,
/// as `mpi_x_f08ts_large_` and `mpi_x_f08_large_`).
fn plan_any(p: &Procedure) -> Result<Vec<Arg>, &'static str> {
    let n = p.name;
    if n.starts_with("MPI_T_") || n.contains("fortran") {
        return Err("C only");
    }
    if p.is_macro || p.varargs {
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

/// The exported names of a Fortran procedure, `mpi_` ones first: MPICH's
/// four spellings, then the specific procedure of the `mpi_f08` module
/// (`MPI_Send_f08`, which gfortran calls `mpi_send_f08_`).
pub fn spellings(name: &str) -> ([String; 5], [String; 5]) {
    let lower = name.to_ascii_lowercase();
    let upper = name.to_ascii_uppercase();
    (
        [format!("{lower}_"), format!("{lower}__"), lower.clone(), upper.clone(), format!("{lower}_f08_")],
        [
            format!("p{lower}_"),
            format!("p{lower}__"),
            format!("p{lower}"),
            format!("P{upper}"),
            format!("p{lower}_f08_"),
        ],
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
        let Ok(args) = plan_any(p) else { continue };
        let buffers = args.contains(&Arg::Buffer);
        // A large-count procedure has one MPICH `mpi_f08` entry: with
        // descriptors if it has buffers.
        if !p.large || !buffers {
            wrapper(&mut out, p, &args, false);
        }
        if buffers {
            wrapper(&mut out, p, &args, true);
        }
        done.push(p.name);
    }
    let _ = writeln!(
        out,
        "/// Every procedure with a generated Fortran binding.\npub const FORTRAN_GENERATED: &[&str] = &{done:?};"
    );
    (out, done)
}

/// Writes the wrapper of `p`; with `ts`, the one MPICH's `mpi_f08` calls
/// (`mpi_x_f08ts_`), whose choice buffers are gfortran array descriptors.
fn wrapper(out: &mut String, p: &Procedure, args: &[Arg], ts: bool) {
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
    let typed = typed_sections(p, args, ts);
    for (i, (a, q)) in args.iter().zip(&p.params).enumerate() {
        let ty = rust_type(q);
        let x = format!("a{i}");
        // The count and datatype of a non-contiguous section a deferred call
        // takes: the section describes them (count 1 of a type of its own).
        if let Some(&b) = typed.iter().find(|&&b| b + 1 == i || b + 2 == i).filter(|_| matches!(a, Arg::Value(_))) {
            let Arg::Value(t) = *a else { unreachable!() };
            let what = if b + 1 == i { "count" } else { "datatype" };
            call.push(format!("b{b}.{what}(unsafe {{ *({x} as *const {t}) }} as i64) as {t}"));
            continue;
        }
        match *a {
            Arg::Value(t) => call.push(format!("unsafe {{ *({x} as *const {t}) }}")),
            Arg::Same => call.push(format!("{x} as {ty}")),
            Arg::Buffer if ts => {
                let use_ = if name == "MPI_Get_address" {
                    "Address"
                } else if uses_buffer_later(name) {
                    "Later"
                } else {
                    "Now"
                };
                let open = if typed.contains(&i) {
                    let (Arg::Value(tc), Arg::Value(td)) = (args[i + 1], args[i + 2]) else { unreachable!() };
                    format!(
                        "conv::Section::open_typed({x}, unsafe {{ *(a{} as *const {tc}) }} as i64, \
                         unsafe {{ *(a{} as *const {td}) }} as i64)",
                        i + 1,
                        i + 2
                    )
                } else {
                    format!("conv::Section::open({x}, conv::Use::{use_})")
                };
                let _ = writeln!(
                    pre,
                    "        // SAFETY: the caller's array descriptor (and INTEGER arguments).\n        \
                     let b{i} = match unsafe {{ {open} }} {{\n            \
                     Ok(b) => b,\n            Err(e) => {{\n                \
                     // SAFETY: the caller's handle argument.\n                \
                     let on = {on};\n                \
                     return conv::section_error(\"{name}\", on, e);\n            }}\n        }};",
                    on = error_object(p)
                );
                call.push(format!("b{i}.ptr() as {ty}"));
                let _ = writeln!(
                    post,
                    "        // SAFETY: the section is the caller's.\n        unsafe {{ b{i}.close(rc, {}) }};",
                    q.dir != Dir::In
                );
            }
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
            Arg::StrArray => unreachable!("{name}: arrays of strings are left to hand-written bindings"),
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
    let lower = if ts { format!("{}_ts", name.to_ascii_lowercase()) } else { name.to_ascii_lowercase() };
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
    let l = name.to_ascii_lowercase();
    let base = l.strip_suffix("_c").filter(|_| p.large).unwrap_or(&l);
    // MPICH's profiling names of `mpi_f08`: `pmpir_x`, `pmpixr_x` for MPIX.
    let pmpir = match base.strip_prefix("mpix_") {
        Some(rest) => format!("pmpixr_{rest}"),
        None => format!("pmpir_{}", &base[4..]),
    };
    let (mpi, pmpi) = match (ts, p.large) {
        (true, false) => (vec![format!("{base}_f08ts_")], vec![format!("p{base}_f08ts_"), format!("{pmpir}_f08ts_")]),
        (true, true) => (vec![format!("{base}_f08ts_large_")], vec![format!("{pmpir}_f08ts_large_")]),
        (false, true) => (vec![format!("{base}_f08_large_")], vec![format!("{pmpir}_f08_large_")]),
        (false, false) => {
            let (m, mut p) = (spellings(name).0.to_vec(), spellings(name).1.to_vec());
            p.push(format!("{pmpir}_f08_"));
            (m, p)
        }
    };
    let slot = format!("C_{}", name.to_ascii_uppercase());
    // One slot per procedure, written with its first wrapper.
    if !ts || (p.large && args.contains(&Arg::Buffer)) {
        let _ = writeln!(out, "static {slot}: conv::Slot = conv::Slot::new(c\"{name}\");");
    }
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

/// Whether `name` may use its buffer after it returns (nonblocking,
/// persistent, partitioned, one-sided, split collective, attached buffers
/// and windows): a copy of a non-contiguous section cannot stand for it.
/// The choice buffers of descriptor wrapper `p` (`ts`) that a deferred
/// call keeps and that each have a count and a datatype of their own right
/// after them (`buf, count, datatype`): a non-contiguous section of those is
/// passed as count 1 of a datatype describing it
/// ([`conv::Section::open_typed`]). Buffers that share their count and
/// datatype with another (`MPI_Iallreduce`'s two) are not among them.
fn typed_sections(p: &Procedure, args: &[Arg], ts: bool) -> Vec<usize> {
    if !ts || !uses_buffer_later(p.name) {
        return Vec::new();
    }
    let buffers: Vec<usize> = (0..args.len()).filter(|&i| matches!(args[i], Arg::Buffer)).collect();
    let typed: Vec<usize> = buffers
        .iter()
        .copied()
        .filter(|&i| {
            i + 2 < args.len()
                && matches!(args[i + 1], Arg::Value(_))
                && matches!(args[i + 2], Arg::Value(_))
                && p.params[i + 1].name.ends_with("count")
                && p.params[i + 2].kind == "DATATYPE"
        })
        .collect();
    if typed.len() == buffers.len() {
        typed
    } else {
        Vec::new()
    }
}

fn uses_buffer_later(name: &str) -> bool {
    let rma = ["Put", "Get", "Accumulate", "Get_accumulate", "Fetch_and_op", "Compare_and_swap"];
    let rest = &name[4..];
    (rest.starts_with('I') && !rest.starts_with("Info"))
        || rest.starts_with("File_i")
        || name.ends_with("_init")
        || name.ends_with("_begin")
        || name.ends_with("_end")
        || ["Rput", "Rget", "Raccumulate", "Rget_accumulate", "Buffer_attach", "Win_create", "Win_attach", "Win_detach"]
            .contains(&rest)
        || ["Free_mem"].contains(&rest)
        || rma.contains(&rest)
}

/// The object whose error handler reports a buffer that cannot be passed.
fn error_object(p: &Procedure) -> String {
    for (k, q) in p.params.iter().enumerate() {
        if q.pointer_depth() > 0 {
            continue;
        }
        let handle = format!("unsafe {{ *(a{k} as *const ::std::os::raw::c_int) }}");
        match q.base() {
            "MPI_Comm" => return format!("conv::On::Comm({handle})"),
            "MPI_Win" => return format!("conv::On::Win({handle})"),
            "MPI_File" => return format!("conv::On::File({handle})"),
            _ => {}
        }
    }
    "conv::On::Comm(::mpi_api::abi::MPI_COMM_SELF)".to_string()
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
    // The module's own procedures (none in `mpif.h`): `MPI_SIZEOF` of any
    // type and `MPI_F_SYNC_REG`, taking assumed-rank arguments (the library
    // reads the element size from the descriptor).
    let mut own = String::new();
    for (name, args, decls) in F08_HANDWRITTEN.iter().filter(|(n, _, _)| ["MPI_Sizeof", "MPI_F_sync_reg"].contains(n)) {
        f08_interface(&mut own, name, args, decls, None);
    }
    format!(
        "! The `mpi` module of mpi-core (generated from the API table; do not edit).\n\
         \x20      module mpi\n\
         \x20      implicit none\n{body}{own}\
         \x20      end module mpi\n"
    )
}

/// The handle types of `mpi_f08` (C base type = Fortran type name).
const F08_HANDLES: &[&str] = &[
    "MPI_Comm",
    "MPI_Datatype",
    "MPI_Errhandler",
    "MPI_File",
    "MPI_Group",
    "MPI_Info",
    "MPI_Message",
    "MPI_Op",
    "MPI_Request",
    "MPI_Session",
    "MPI_Win",
];

/// The `mpi_f08` declaration of argument `q` (crossing as `a`).
fn f08_decl(q: &Param, a: Arg) -> String {
    let base = q.base();
    let scalar = q.pointer_depth() == 0 || (q.suffix.is_empty() && !matches!(a, Arg::Statuses));
    let intent = match (q.pointer_depth(), q.dir) {
        (0, _) | (_, Dir::In) => "intent(in)",
        (_, Dir::Out) => "intent(out)",
        (_, Dir::InOut) => "intent(inout)",
    };
    let dims = if scalar { "" } else { "(*)" };
    let n = q.name;
    let ty = match a {
        Arg::Buffer => return format!("!GCC$ ATTRIBUTES NO_ARG_CHECK :: {n}\n      type(*), dimension(*) :: {n}"),
        Arg::Same if base.ends_with("_function") || base.ends_with("_function_c") => return format!("external :: {n}"),
        Arg::Same if base == "void" => return format!("type(c_ptr), {intent} :: {n}"),
        Arg::Discard => return format!("type(c_ptr), intent(out) :: {n}"),
        Arg::StrIn | Arg::StrOut => return format!("character(len=*), {intent} :: {n}"),
        Arg::Status | Arg::Statuses => "type(MPI_Status)".to_string(),
        Arg::FileIn | Arg::FileOut | Arg::FileInOut => "type(MPI_File)".to_string(),
        Arg::AddrValue => "integer(kind=MPI_ADDRESS_KIND)".to_string(),
        Arg::IntValue => "integer".to_string(),
        _ if q.kind == "LOGICAL" => "logical".to_string(),
        _ if F08_HANDLES.contains(&base) => format!("type({base})"),
        _ => match base {
            "MPI_Aint" => "integer(kind=MPI_ADDRESS_KIND)".to_string(),
            "MPI_Offset" => "integer(kind=MPI_OFFSET_KIND)".to_string(),
            "MPI_Count" => "integer(kind=MPI_COUNT_KIND)".to_string(),
            "double" => "double precision".to_string(),
            _ => "integer".to_string(),
        },
    };
    format!("{ty}, {intent} :: {n}{dims}")
}

/// The `mpi_f08` interfaces written by hand (their Fortran forms are not
/// derived from the C ones; see mpi-core's `src/fortran/handwritten.rs`).
const F08_HANDWRITTEN: &[(&str, &str, &str)] = &[
    ("MPI_Init", "ierror", ""),
    ("MPI_Init_thread", "required, provided, ierror", "integer, intent(in) :: required\n      integer, intent(out) :: provided"),
    ("MPI_Pcontrol", "level", "integer, intent(in) :: level"),
    ("MPI_Grequest_start", "query_fn, free_fn, cancel_fn, extra_state, request, ierror", "external :: query_fn, free_fn, cancel_fn\n      integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state\n      type(MPI_Request), intent(out) :: request"),
    ("MPI_Comm_spawn", "command, argv, maxprocs, info, root, comm, intercomm, array_of_errcodes, ierror", "character(len=*), intent(in) :: command, argv(*)\n      integer, intent(in) :: maxprocs, root\n      type(MPI_Info), intent(in) :: info\n      type(MPI_Comm), intent(in) :: comm\n      type(MPI_Comm), intent(out) :: intercomm\n      integer :: array_of_errcodes(*)"),
    ("MPI_Comm_spawn_multiple", "count, array_of_commands, array_of_argv, array_of_maxprocs, array_of_info, root, comm, intercomm, array_of_errcodes, ierror", "integer, intent(in) :: count, root\n      character(len=*), intent(in) :: array_of_commands(*), array_of_argv(count, *)\n      integer, intent(in) :: array_of_maxprocs(*)\n      type(MPI_Info), intent(in) :: array_of_info(*)\n      type(MPI_Comm), intent(in) :: comm\n      type(MPI_Comm), intent(out) :: intercomm\n      integer :: array_of_errcodes(*)"),
    ("MPI_Register_datarep", "datarep, read_conversion_fn, write_conversion_fn, dtype_file_extent_fn, extra_state, ierror", "character(len=*), intent(in) :: datarep\n      external :: read_conversion_fn, write_conversion_fn, dtype_file_extent_fn\n      integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state"),
    ("MPI_Sizeof", "x, size, ierror", "type(*), dimension(..), intent(in) :: x\n      integer, intent(out) :: size"),
    ("MPI_F_sync_reg", "buf", "type(*), dimension(..) :: buf"),
    ("MPI_Info_create_env", "info, ierror", "type(MPI_Info), intent(out) :: info"),
    ("MPI_Comm_create_keyval", "copy_fn, delete_fn, keyval, extra_state, ierror", KEYVAL_DECLS),
    ("MPI_Type_create_keyval", "copy_fn, delete_fn, keyval, extra_state, ierror", KEYVAL_DECLS),
    ("MPI_Win_create_keyval", "copy_fn, delete_fn, keyval, extra_state, ierror", KEYVAL_DECLS),
    ("MPI_Comm_get_attr", "obj, keyval, attribute_val, flag, ierror", "type(MPI_Comm), intent(in) :: obj\n      integer, intent(in) :: keyval\n      integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val\n      logical, intent(out) :: flag"),
    ("MPI_Type_get_attr", "obj, keyval, attribute_val, flag, ierror", "type(MPI_Datatype), intent(in) :: obj\n      integer, intent(in) :: keyval\n      integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val\n      logical, intent(out) :: flag"),
    ("MPI_Win_get_attr", "obj, keyval, attribute_val, flag, ierror", "type(MPI_Win), intent(in) :: obj\n      integer, intent(in) :: keyval\n      integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val\n      logical, intent(out) :: flag"),
];
const KEYVAL_DECLS: &str = "external :: copy_fn, delete_fn\n      integer, intent(out) :: keyval\n      integer(kind=MPI_ADDRESS_KIND), intent(in) :: extra_state";

/// One generic interface of `mpi_f08` (`MPI_X` and `PMPI_X`) with its
/// specific external procedure `MPI_X_f08`.
fn f08_interface(out: &mut String, name: &str, args: &str, decls: &str, ret: Option<&str>) {
    // One argument per line: free form allows 132 columns.
    let args = args.split(',').map(str::trim).filter(|a| !a.is_empty()).collect::<Vec<_>>().join(", &\n        ");
    let args = if args.is_empty() { args } else { format!("&\n        {args}") };
    for prefix in ["", "P"] {
        let g = format!("{prefix}{name}");
        let _ = writeln!(out, "  interface {g}");
        match ret {
            Some(t) => {
                let _ = writeln!(
                    out,
                    "    function {g}_f08({args}) result(res)\n      import\n      implicit none\n      {t} :: res"
                );
            }
            None => {
                let _ = writeln!(out, "    subroutine {g}_f08({args})\n      import\n      implicit none");
            }
        }
        for d in decls.lines().filter(|l| !l.trim().is_empty()) {
            let _ = writeln!(out, "      {}", d.trim_start());
        }
        if args.split(',').any(|a| a.trim().trim_start_matches('&').trim() == "ierror") {
            let _ = writeln!(out, "      integer, optional, intent(out) :: ierror");
        }
        let _ = writeln!(out, "    end {}\n  end interface {g}", if ret.is_some() { "function" } else { "subroutine" });
    }
}

/// The source of the `mpi_f08` module: the handle types (one `INTEGER`
/// `MPI_VAL`, the C handle's value) with `==` and `/=`, `MPI_Status`
/// (C's layout), the constants, the special addresses in the common blocks
/// of `mpif.h`, and a generic interface for every procedure with a Fortran
/// binding whose specific procedure `MPI_X_f08` is exported by the library
/// (the same entry as `mpi_x_`: the arguments cross alike, handles as
/// `TYPE(MPI_Comm)` by address, an absent `ierror` as NULL). Choice buffers
/// are `TYPE(*), DIMENSION(*)` with gfortran's `NO_ARG_CHECK`, so
/// `MPI_SUBARRAYS_SUPPORTED` is `.FALSE.`: non-contiguous sections are
/// passed by copy-in/copy-out (nonblocking calls need contiguous buffers).
pub fn mpi_f08_module(
    procs: &[Procedure],
    implemented: &dyn Fn(&str) -> bool,
    constants: &[crate::abi::Constant],
) -> String {
    use crate::abi::CType;
    let mut out = String::from(
        "! The `mpi_f08` module of mpi-core (generated from the API table; do not edit).\n\
         module mpi_f08\n  use, intrinsic :: iso_c_binding, only: c_ptr\n  implicit none\n",
    );
    for h in F08_HANDLES {
        let _ = writeln!(out, "  type, bind(C) :: {h}\n    integer :: MPI_VAL\n  end type {h}");
    }
    out.push_str(
        "  type, bind(C) :: MPI_Status\n    integer :: count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR\n  end type MPI_Status\n",
    );
    let mut seen = std::collections::HashSet::new();
    for &(n, v) in FORTRAN_CONSTANTS {
        if n != "MPI_FILE_NULL" && seen.insert(n.to_string()) {
            let _ = writeln!(out, "  integer, parameter :: {n} = {v}");
        }
    }
    let _ = writeln!(out, "  type(MPI_File), parameter :: MPI_FILE_NULL = MPI_File(0)");
    seen.insert("MPI_FILE_NULL".into());
    for c in constants {
        if !seen.insert(c.name.to_ascii_uppercase()) {
            continue;
        }
        let ty = match c.ctype {
            CType::Pointer(_) => continue,
            CType::Int => {
                let _ = writeln!(out, "  integer, parameter :: {} = {}", c.name, fortran_value(c));
                continue;
            }
            CType::Comm => "MPI_Comm",
            CType::Group => "MPI_Group",
            CType::Datatype => "MPI_Datatype",
            CType::Op => "MPI_Op",
            CType::Request => "MPI_Request",
            CType::Errhandler => "MPI_Errhandler",
            CType::Info => "MPI_Info",
            CType::Win => "MPI_Win",
            CType::Message => "MPI_Message",
            CType::Session => "MPI_Session",
        };
        let _ = writeln!(out, "  type({ty}), parameter :: {} = {ty}({})", c.name, fortran_value(c));
    }
    out.push_str(
        "  logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .false.\n\
         \x20 logical, parameter :: MPI_ASYNC_PROTECTS_NONBLOCKING = .false.\n\
         \x20 integer :: MPI_BOTTOM, MPI_IN_PLACE\n\
         \x20 type(MPI_Status) :: MPI_STATUS_IGNORE\n\
         \x20 common /mpipriv1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE\n\
         \x20 type(MPI_Status) :: MPI_STATUSES_IGNORE(1)\n\
         \x20 integer :: MPI_ERRCODES_IGNORE(1)\n\
         \x20 common /mpipriv2/ MPI_STATUSES_IGNORE, MPI_ERRCODES_IGNORE\n\
         \x20 character(len=1) :: MPI_ARGVS_NULL(1, 1), MPI_ARGV_NULL(1)\n\
         \x20 common /mpiprivc/ MPI_ARGVS_NULL, MPI_ARGV_NULL\n\
         \x20 integer :: MPI_UNWEIGHTED\n\
         \x20 common /mpifcmb5/ MPI_UNWEIGHTED\n\
         \x20 integer :: MPI_WEIGHTS_EMPTY\n\
         \x20 common /mpifcmb9/ MPI_WEIGHTS_EMPTY\n\
         \x20 save /mpipriv1/, /mpipriv2/, /mpiprivc/, /mpifcmb5/, /mpifcmb9/\n",
    );
    for chunk in EXTERNALS.chunks(3) {
        let _ = writeln!(out, "  external :: {}", chunk.join(", "));
    }
    for op in ["==", "/="] {
        let _ = writeln!(out, "  interface operator({op})");
        for h in F08_HANDLES {
            let _ = writeln!(
                out,
                "    module procedure {}_{}",
                &h[4..].to_ascii_lowercase(),
                if op == "==" { "eq" } else { "ne" }
            );
        }
        let _ = writeln!(out, "  end interface");
    }
    for &(name, args, decls) in F08_HANDWRITTEN {
        f08_interface(&mut out, name, args, decls, None);
    }
    for p in procs.iter().filter(|p| implemented(p.name) && !p.legacy && !p.mpix) {
        let Ok(args) = plan(p) else { continue };
        let names: Vec<&str> = p.params.iter().map(|q| q.name).collect();
        let decls: Vec<String> = p.params.iter().zip(&args).map(|(q, &a)| f08_decl(q, a)).collect();
        let decls = decls.join("\n");
        match p.ret {
            "int" => f08_interface(
                &mut out,
                p.name,
                [names.join(", "), "ierror".into()].join(", ").trim_start_matches(", "),
                &decls,
                None,
            ),
            "double" => f08_interface(&mut out, p.name, &names.join(", "), &decls, Some("double precision")),
            _ => f08_interface(&mut out, p.name, &names.join(", "), &decls, Some("integer(kind=MPI_ADDRESS_KIND)")),
        }
    }
    out.push_str("contains\n");
    for h in F08_HANDLES {
        let short = h[4..].to_ascii_lowercase();
        for (op, sym) in [("eq", "=="), ("ne", "/=")] {
            let _ = writeln!(
                out,
                "  elemental logical function {short}_{op}(a, b)\n    type({h}), intent(in) :: a, b\n    \
                 {short}_{op} = a%MPI_VAL {sym} b%MPI_VAL\n  end function {short}_{op}"
            );
        }
    }
    out.push_str("end module mpi_f08\n");
    out
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
        assert_eq!(get("MPI_Comm_spawn").unwrap_err(), "written by hand");
        assert_eq!(get("MPI_Init"), Err("written by hand"));
        assert!(get("MPI_Send_c").is_err() && get("MPI_Comm_f2c").is_err() && get("MPI_T_init_thread").is_err());
        assert_eq!(get("MPI_Wtime").unwrap(), vec![]);
        let (m, p) = spellings("MPI_Send");
        assert_eq!(m, ["mpi_send_", "mpi_send__", "mpi_send", "MPI_SEND", "mpi_send_f08_"].map(String::from));
        assert_eq!(p[3], "PMPI_SEND");
    }

    #[test]
    fn layouts_cover_the_hand_written_bindings() {
        let procs = procedures();
        let get = |n: &str| layout(procs.iter().find(|p| p.name == n).unwrap());
        use Arg::*;
        let v = Some(Value("::std::os::raw::c_int"));
        let same = Some(Same);
        // Generated ones as `plan` has them.
        assert_eq!(get("MPI_Send").unwrap(), vec![Some(Buffer), v, v, v, v, v]);
        assert_eq!(get("MPI_Init").unwrap(), vec![None, None]);
        assert_eq!(get("MPI_Info_create_env").unwrap(), vec![None, None, same]);
        assert_eq!(get("MPI_Comm_create_keyval").unwrap(), vec![same, same, same, Some(AddrValue)]);
        assert_eq!(get("MPI_Keyval_create").unwrap(), vec![same, same, same, Some(IntValue)]);
        assert_eq!(get("MPI_Comm_get_attr").unwrap(), vec![v, v, Some(Discard), same]);
        assert_eq!(get("MPI_Attr_get").unwrap(), vec![v, v, Some(Discard), same]);
        assert_eq!(get("MPI_Grequest_start").unwrap(), vec![same, same, same, Some(AddrValue), same]);
        assert_eq!(get("MPI_Register_datarep").unwrap(), vec![Some(StrIn), same, same, same, Some(AddrValue)]);
        assert_eq!(get("MPI_Comm_spawn").unwrap(), vec![Some(StrIn), Some(StrArray), v, v, v, v, same, Some(Errcodes)]);
        let multiple = get("MPI_Comm_spawn_multiple").unwrap();
        assert_eq!(multiple[..5], [v, Some(StrArray), Some(StrArray), same, same]);
        // Every hand-written one has a layout.
        assert!(HANDWRITTEN.iter().all(|n| get(n).is_ok()));
        assert_eq!(get("MPI_Send_c").unwrap()[1], Some(Value("i64")));
        assert!(get("MPI_Register_datarep_c").is_err() && get("MPI_T_init_thread").is_err());
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
