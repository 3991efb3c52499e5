//! Generation of the Fortran recording layer (see `src/fort.rs`), used under
//! Open MPI, for MPICH's `mpi_f08` and for the procedures of
//! [`MPICH_INTERNAL`]: for every procedure with a Fortran binding
//! (`mpi_api::fortran::layout`, the bindings mpi-core writes by hand
//! included),
//!
//! * `ofort::MPI_X(a0.., ierror, lengths..)`: the entry `site::fortran_enter`
//!   returns; turns the Fortran arguments into the core's and calls the
//!   recording wrapper `imp::MPI_X` with the Fortran call pending
//!   (`ofort::MPI_X_ts` too for procedures with choice buffers, given as
//!   array descriptors to MPICH's `mpi_x_f08ts_`);
//! * `ofwd::MPI_X(core arguments)`: what `pmpi::MPI_X` calls instead of the
//!   library's `PMPI_X` when a Fortran call is pending: the library's
//!   Fortran procedure with the program's arguments, then its outputs as
//!   the core's.
//!
//! Every array has the length the standard gives (build.rs fails on a
//! procedure left without an entry).

use std::fmt::Write as _;

use mpi_api::codegen;
use mpi_api::fortran::{self, Arg};
use mpi_api::table::{Dir, Param, Procedure};

use super::is_passthrough;
use super::layers::ompi_array_len;

/// The generated code.
pub struct Out {
    /// `ofort` and `ofwd` module bodies.
    pub ofort: String,
    pub ofwd: String,
    /// Names of the procedures with a layer.
    pub names: Vec<&'static str>,
    /// Those with an entry `ofort::MPI_X_ts` too: choice buffers given as
    /// array descriptors (MPICH's `mpi_f08`, `mpi_x_f08ts_`).
    pub ts_names: Vec<&'static str>,
}

/// Procedures whose Fortran binding in MPICH (4.0, Debian's
/// `libmpichfort.so.12`, `mpif.h`, `use mpi` and `use mpi_f08` alike)
/// calls MPICH's internals (`MPII_Comm_get_attr`...) instead of the C
/// `MPI_X`, which the shim would record: their Fortran calls go through
/// the same entries under the MPICH ABI too. On a library whose Fortran
/// binding does call `MPI_X` (this project's), that call is made inside the
/// recorded one and not recorded again.
pub const MPICH_INTERNAL: &[&str] = &[
    "MPI_Attr_get",
    "MPI_Attr_put",
    "MPI_Comm_get_attr",
    "MPI_Comm_set_attr",
    "MPI_Type_get_attr",
    "MPI_Type_set_attr",
    "MPI_Win_get_attr",
    "MPI_Win_set_attr",
];

/// How each C parameter of `p` arrives from Fortran (None: not a Fortran
/// argument, the core gets a null pointer or 0), if `p` has a layer: every
/// procedure with a Fortran binding (`mpi_api::fortran::layout`, which
/// describes the ones mpi-core writes by hand too: callbacks, extra states
/// and attribute values, string arrays), but for the conversion helpers.
fn fortran_args(p: &Procedure) -> Option<Vec<Option<Arg>>> {
    if p.is_macro || p.ret != "int" || is_passthrough(p.name) {
        return None;
    }
    fortran::layout(p).ok()
}

/// The handle kind constant of `crate::foreign::kind` of a C base type.
fn handle_kind(base: &str) -> Option<&'static str> {
    Some(match base {
        "MPI_Comm" => "COMM",
        "MPI_Group" => "GROUP",
        "MPI_Datatype" => "DATATYPE",
        "MPI_Op" => "OP",
        "MPI_Request" => "REQUEST",
        "MPI_Errhandler" => "ERRHANDLER",
        "MPI_Info" => "INFO",
        "MPI_Win" => "WIN",
        "MPI_Message" => "MESSAGE",
        "MPI_Session" => "SESSION",
        _ => return None,
    })
}

/// The length of array `q` (in the core's names), if the rules know it.
fn len_of(p: &Procedure, q: &Param) -> Option<String> {
    let known = matches!(
        q.name,
        "array_of_requests" | "array_of_statuses" | "array_of_types" | "array_of_info" | "sendtypes" | "recvtypes"
    ) || (q.name == "array_of_datatypes" && p.name == "MPI_Type_get_contents");
    let has_count = p.params.iter().any(|x| x.name == "count" || x.name == "incount");
    (known && (has_count || q.name.ends_with("types"))).then(|| ompi_array_len(p, q))
}

/// Whether `q` of `p` is a 1-based Fortran index of a request
/// (`MPI_Waitany`, `MPI_Waitsome`...; not a graph's `index`).
fn is_index(p: &Procedure, q: &Param) -> bool {
    matches!(q.name, "index" | "array_of_indices") && (p.name.ends_with("any") || p.name.ends_with("some"))
}

/// Generates both layers of `p` (call id `idx`), or None; with `ts`, the
/// entry `MPI_X_ts` whose choice buffers are array descriptors.
fn layers(idx: usize, p: &Procedure, ts: bool) -> Option<(String, String)> {
    let args = fortran_args(p)?;
    let name = p.name;
    // Position of each C parameter among the Fortran arguments.
    let mut pos = Vec::new();
    let mut n = 0usize;
    for a in &args {
        pos.push(a.map(|_| {
            n += 1;
            n - 1
        }));
    }
    // The word of IERROR (MPI_PCONTROL has none).
    let has_ierror = p.name != "MPI_Pcontrol";
    let ierror = n;
    let after = n + usize::from(has_ierror);
    let mut lens = Vec::new();
    let mut len_pos = vec![None; args.len()];
    for (i, a) in args.iter().enumerate() {
        if a.is_some_and(Arg::has_len) {
            len_pos[i] = Some(after + lens.len());
            lens.push(i);
        }
    }
    let words = after + lens.len();
    assert!(words <= 24, "{name}: more Fortran arguments than fort::MAX_ARGS");
    let fparams: Vec<String> = (0..words).map(|w| format!("w{w}: usize")).collect();

    // Entry: values first (array lengths use them), then the rest.
    let mut values = String::new();
    let mut rest = String::new();
    // Forward: substitutions before the call, outputs after.
    let mut subst = String::new();
    let mut outs = String::new();
    for (i, (a, q)) in args.iter().zip(&p.params).enumerate() {
        let v = codegen::rust_ident(q.name);
        let ty = codegen::rust_type(q);
        let Some(a) = a else {
            let none = if q.pointer_depth() == 0 { "0" } else { "std::ptr::null_mut()" };
            let _ = writeln!(rest, "        let {v}: {ty} = {none};");
            continue;
        };
        let w = format!("w{}", pos[i].unwrap());
        let hk = handle_kind(q.base());
        let array = super::layers::is_array(q);
        let int = |x: &str| format!("*({x} as *const ::std::os::raw::c_int)");
        match *a {
            Arg::Value(t) => {
                let raw = format!("*({w} as *const {t})");
                let e = match (hk, q.kind) {
                    (Some(k), _) => format!("crate::fort::handle({raw}, crate::foreign::kind::{k})"),
                    (None, "RANK") => format!("crate::fort::rank({raw})"),
                    (None, "ERROR_CODE" | "ERROR_CLASS") => format!("crate::fort::error({raw})"),
                    (None, "SPLIT_TYPE") => format!("crate::fort::split_type({raw})"),
                    _ => raw,
                };
                let _ = writeln!(values, "        let {v} = {e} as {ty};");
            }
            Arg::Same if hk.is_some() && !array => {
                let k = hk.unwrap();
                let conv = format!("crate::fort::handle({}, crate::foreign::kind::{k})", int(&w));
                let init =
                    if q.dir == Dir::Out { "0".to_string() } else { format!("if {w} == 0 {{ 0 }} else {{ {conv} }}") };
                let _ = writeln!(
                    rest,
                    "        let mut t_{v}: ::std::os::raw::c_int = {init};\n        \
                     let {v} = if {w} == 0 {{ std::ptr::null_mut() }} else {{ &mut t_{v} as *mut ::std::os::raw::c_int }} as {ty};"
                );
                if q.dir != Dir::In && !q.ctype.starts_with("const") {
                    let ok = if q.dir == Dir::Out { "rc == 0 && " } else { "" };
                    let conv = format!(
                        "crate::fort::handle({}, crate::foreign::kind::{k})",
                        int(&format!("fw.args[{}]", pos[i].unwrap()))
                    );
                    let _ = writeln!(
                        outs,
                        "    if {ok}!{v}.is_null() {{ *({v} as *mut ::std::os::raw::c_int) = {conv}; }}"
                    );
                }
            }
            Arg::Same if hk.is_some() => {
                let k = hk.unwrap();
                let len = len_of(p, q)?;
                let elem = |x: &str| {
                    format!(
                        "crate::fort::handle(*({x} as *const ::std::os::raw::c_int).add(k), crate::foreign::kind::{k})"
                    )
                };
                let init = if q.dir == Dir::Out {
                    format!("vec![0; n_{v}]")
                } else {
                    format!("(0..n_{v}).map(|k| {}).collect()", elem(&w))
                };
                let _ = writeln!(
                    rest,
                    "        let n_{v}: usize = if {w} == 0 {{ 0 }} else {{ {len} }};\n        \
                     #[allow(unused_mut)]\n        let mut t_{v}: Vec<::std::os::raw::c_int> = {init};\n        \
                     let {v} = if {w} == 0 {{ std::ptr::null_mut() }} else {{ t_{v}.as_mut_ptr() }} as {ty};"
                );
                if q.dir != Dir::In && !q.ctype.starts_with("const") {
                    let fa = format!("fw.args[{}]", pos[i].unwrap());
                    let _ = writeln!(
                        outs,
                        "    if !{v}.is_null() {{ for k in 0..{len} {{ *({v} as *mut ::std::os::raw::c_int).add(k) = {}; }} }}",
                        elem(&fa)
                    );
                }
            }
            Arg::Same if is_index(p, q) => {
                let fa = format!("fw.args[{}]", pos[i].unwrap());
                if array {
                    let _ = writeln!(
                        rest,
                        "        let mut t_{v}: Vec<::std::os::raw::c_int> = vec![0; incount.max(0) as usize];\n        \
                         let {v} = t_{v}.as_mut_ptr();"
                    );
                    let _ = writeln!(
                        outs,
                        "    if !outcount.is_null() && !{v}.is_null() {{ for k in 0..(*outcount).clamp(0, incount) as usize {{ \
                         *{v}.add(k) = crate::fort::index(*({fa} as *const ::std::os::raw::c_int).add(k)); }} }}"
                    );
                } else {
                    let _ = writeln!(
                        rest,
                        "        let mut t_{v}: ::std::os::raw::c_int = 0;\n        let {v} = &mut t_{v} as *mut _;"
                    );
                    let _ = writeln!(outs, "    if !{v}.is_null() {{ *{v} = crate::fort::index({}); }}", int(&fa));
                }
            }
            Arg::Same | Arg::Errcodes | Arg::Weights => {
                let _ = writeln!(rest, "        let {v} = {w} as {ty};");
            }
            Arg::Buffer if ts => {
                let _ =
                    writeln!(rest, "        let {v} = crate::fort::buffer(crate::fort::descriptor_data({w})) as {ty};");
            }
            Arg::Buffer => {
                let _ = writeln!(rest, "        let {v} = crate::fort::buffer({w}) as {ty};");
            }
            Arg::Status | Arg::Statuses => {
                let many = *a == Arg::Statuses;
                let len = if many { len_of(p, q)? } else { "1".to_string() };
                let (ignored, core_ignore) = if many {
                    ("crate::fort::is_statuses_ignore", "mpi_api::abi::MPI_STATUSES_IGNORE")
                } else {
                    ("crate::fort::is_status_ignore", "mpi_api::abi::MPI_STATUS_IGNORE")
                };
                let _ = writeln!(
                    rest,
                    "        let ign_{v} = {w} == 0 || {ignored}({w});\n        \
                     let n_{v}: usize = if ign_{v} {{ 0 }} else {{ {len} }};\n        \
                     #[allow(unused_mut)]\n        let mut s_{v}: Vec<mpi_api::abi::MPI_Status> = (0..n_{v}).map(|k| crate::fort::status({w}, k)).collect();\n        \
                     let {v} = if ign_{v} {{ {core_ignore} as *mut mpi_api::abi::MPI_Status }} else {{ s_{v}.as_mut_ptr() }} as {ty};"
                );
                if !q.ctype.starts_with("const") {
                    let fi = pos[i].unwrap();
                    // A status the program ignores but the recorder wants:
                    // Open MPI fills one of ours.
                    let _ = writeln!(
                        subst,
                        "    let want_{v} = !{v}.is_null() && {v} as usize != {core_ignore};\n    \
                         let n_{v}: usize = if want_{v} {{ {len} }} else {{ 0 }};\n    \
                         let mut f_{v} = vec![0 as ::std::os::raw::c_int; n_{v} * crate::fort::status_ints()];\n    \
                         if want_{v} && (fw.args[{fi}] == 0 || {ignored}(fw.args[{fi}])) {{ fw.args[{fi}] = f_{v}.as_mut_ptr() as usize; }}"
                    );
                    let _ = writeln!(
                        outs,
                        "    for k in 0..n_{v} {{ *({v} as *mut mpi_api::abi::MPI_Status).add(k) = crate::fort::status(fw.args[{fi}], k); }}\n    \
                         drop(f_{v});"
                    );
                }
            }
            Arg::StrIn => {
                let l = format!("w{}", len_pos[i].unwrap());
                let _ = writeln!(
                    rest,
                    "        let s_{v} = crate::fort::str_in({w}, {l});\n        let {v} = s_{v}.as_ptr() as {ty};"
                );
            }
            Arg::StrOut => {
                let l = format!("w{}", len_pos[i].unwrap());
                let _ = writeln!(
                    rest,
                    "        let mut s_{v} = vec![0 as ::std::os::raw::c_char; {l} + 1];\n        let {v} = s_{v}.as_mut_ptr() as {ty};"
                );
                let _ = writeln!(
                    outs,
                    "    if rc == 0 {{ crate::fort::str_out({v} as *mut ::std::os::raw::c_char, fw.args[{}], fw.args[{}]); }}",
                    pos[i].unwrap(),
                    len_pos[i].unwrap()
                );
            }
            Arg::FileIn => {
                let _ = writeln!(rest, "        let {v} = crate::fort::file({}) as {ty};", int(&w));
            }
            Arg::FileOut | Arg::FileInOut => {
                let init = if *a == Arg::FileOut {
                    "std::ptr::null_mut()".to_string()
                } else {
                    format!("crate::fort::file({})", int(&w))
                };
                let _ = writeln!(
                    rest,
                    "        let mut f_{v}: *mut ::std::ffi::c_void = {init};\n        let {v} = &mut f_{v} as *mut _ as {ty};"
                );
                let fa = format!("fw.args[{}]", pos[i].unwrap());
                let _ =
                    writeln!(outs, "    if rc == 0 && !{v}.is_null() {{ *{v} = crate::fort::file({}); }}", int(&fa));
            }
            Arg::AddrValue => {
                let _ = writeln!(rest, "        let {v} = *({w} as *const isize) as {ty};");
            }
            Arg::IntValue => {
                let _ = writeln!(rest, "        let {v} = *({w} as *const ::std::os::raw::c_int) as isize as {ty};");
            }
            // The recorder reads neither `argv` nor the spawned commands.
            Arg::StrArray => {
                let _ = writeln!(rest, "        let {v}: {ty} = std::ptr::null_mut();");
            }
            Arg::Discard => {
                let _ = writeln!(
                    rest,
                    "        let mut t_{v}: usize = 0;\n        let {v} = &mut t_{v} as *mut usize as {ty};"
                );
            }
        }
    }
    let cargs = codegen::rust_args(p);
    let cparams = codegen::rust_params(p);
    let wargs: Vec<String> =
        (0..words).map(|w| if has_ierror && w == ierror { "ierror".to_string() } else { format!("w{w}") }).collect();
    let allow = "#[allow(unused_unsafe, unused_variables, unused_mut, clippy::unnecessary_cast, clippy::useless_conversion, clippy::let_unit_value, clippy::let_and_return)]\n";
    let own_ierror = if has_ierror {
        format!(
            "    // `ierror` is optional in `mpi_f08`: one of ours when absent.\n    \
             let mut own_ierror: ::std::os::raw::c_int = 0;\n    \
             let ierror = if w{ierror} == 0 {{ &mut own_ierror as *mut _ as usize }} else {{ w{ierror} }};\n"
        )
    } else {
        String::new()
    };
    let rc = if has_ierror {
        format!("crate::fort::error(*(fw.args[{ierror}] as *const ::std::os::raw::c_int))")
    } else {
        "mpi_api::abi::MPI_SUCCESS".to_string()
    };
    let suffix = if ts { "_ts" } else { "" };
    let entry = format!(
        "{allow}pub unsafe extern \"C\" fn {name}{suffix}({fparams}) {{\n{own_ierror}    \
         let real = crate::fort::real();\n    \
         // SAFETY: the program's arguments of the Fortran {name}, each an address as gfortran\n    \
         // passes them (and the hidden string lengths), read as that binding declares them;\n    \
         // `real` is the library's Fortran procedure of the same arguments.\n    \
         unsafe {{ crate::fort::run({idx}, real, &[{wargs}], || {{\n{values}{rest}        \
         crate::imp::{name}({cargs});\n    }}) }};\n}}",
        fparams = fparams.join(", "),
        wargs = wargs.join(", "),
    );
    let fwd = format!(
        "{allow}pub unsafe fn {name}({cparams}) -> ::std::os::raw::c_int {{\n    \
         let Some(mut fw) = crate::fort::take({idx}) else {{ return mpi_api::abi::MPI_ERR_OTHER }};\n    \
         // SAFETY: `fw` holds the program's Fortran arguments of {name} (see the entry), the\n    \
         // parameters are the core's, valid as {name} requires; outputs are converted over the\n    \
         // lengths the standard gives.\n    \
         unsafe {{\n{subst}    crate::ofwd::raw_call(fw.real, &fw.args[..fw.n]);\n    \
         let rc = {rc};\n{outs}    rc\n    }}\n}}"
    );
    Some((entry, fwd))
}

/// Both layers of every procedure that has them, and `ofwd::raw_call`.
pub fn generate(procedures: &[Procedure]) -> Out {
    let mut out = Out { ofort: String::new(), ofwd: String::new(), names: Vec::new(), ts_names: Vec::new() };
    for (idx, p) in procedures.iter().enumerate() {
        if let Some((entry, fwd)) = layers(idx, p, false) {
            let _ = writeln!(out.ofort, "{entry}");
            let _ = writeln!(out.ofwd, "{fwd}");
            out.names.push(p.name);
            // The forward is the same: the program's arguments go on as they are.
            let buffers = fortran_args(p).is_some_and(|a| a.contains(&Some(Arg::Buffer)));
            if let Some((entry, _)) = layers(idx, p, true).filter(|_| buffers) {
                let _ = writeln!(out.ofort, "{entry}");
                out.ts_names.push(p.name);
            }
        }
    }
    // raw_call: a Fortran procedure called with `a.len()` words.
    let mut arms = String::new();
    for n in 1..=24 {
        let ty = vec!["usize"; n].join(", ");
        let args: Vec<String> = (0..n).map(|k| format!("a[{k}]")).collect();
        let _ = writeln!(
            arms,
            "        {n} => std::mem::transmute::<usize, unsafe extern \"C\" fn({ty})>(f)({}),",
            args.join(", ")
        );
    }
    let _ = writeln!(
        out.ofwd,
        "/// Calls the Fortran procedure `f` with the words `a` (every Fortran argument is an\n\
         /// address or a hidden length, one word each).\n///\n/// # Safety\n\
         /// `f` takes exactly `a.len()` words, as the program passed them.\n\
         pub unsafe fn raw_call(f: usize, a: &[usize]) {{\n    \
         // SAFETY: this function's contract.\n    \
         unsafe {{\n        match a.len() {{\n{arms}            _ => unreachable!(),\n        }}\n    }}\n}}"
    );
    out
}
