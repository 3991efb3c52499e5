//! Generators of the standard ABI's boundary: the Rust entry points of
//! `libmpi_abi.so` (each converts its arguments to the MPICH ABI, calls the
//! procedure of `libmpi.so.12`, converts the results back), the conversion
//! functions of predefined handles and constants, and `mpi_abi.h`.
//!
//! How a parameter crosses is decided from the table's C type, semantic
//! kind and direction ([`conversion`]); a procedure with a parameter no rule
//! covers (callbacks, Fortran statuses) is either written by hand in the
//! `mpi-stdabi` crate or left out, and [`boundary`] says which and why.

use std::fmt::Write as _;

use super::{handle_pairs, int_pairs, IntClass, HANDLE_TYPES, STD_CONSTANTS};
use crate::abi::CType;
use crate::codegen as mpich;
use crate::table::{Dir, Param, Procedure};

/// Prefix of the conversion functions of a handle type (`comm_in`,
/// `comm_out`, `COMM_SENTINEL`), if `base` is a handle type.
pub fn handle_fn(base: &str) -> Option<&'static str> {
    Some(match base {
        "MPI_Comm" => "comm",
        "MPI_Group" => "group",
        "MPI_Datatype" => "datatype",
        "MPI_Op" => "op",
        "MPI_Request" => "request",
        "MPI_Errhandler" => "errhandler",
        "MPI_Info" => "info",
        "MPI_Win" => "win",
        "MPI_Message" => "message",
        "MPI_Session" => "session",
        "MPI_File" => "file",
        _ => return None,
    })
}

/// Whether a procedure belongs to the standard ABI's C interface: the
/// standard's procedures, without MPICH's extensions and removed MPI-1
/// procedures, and without the handle conversions `MPI_X_c2f`/`MPI_X_f2c`,
/// which `mpi_abi.h` defines as macros over `MPI_X_toint`/`MPI_X_fromint`
/// (as the standard's header does), and the `mpi_f08` status conversions;
/// `MPI_Status_c2f`/`MPI_Status_f2c` are functions (as MPICH's and mpi4py
/// expect).
pub fn in_std_abi(p: &Procedure) -> bool {
    let handle_conversion =
        (p.name.ends_with("_c2f") || p.name.ends_with("_f2c")) && !p.name.starts_with("MPI_Status_");
    let f08_status = p.name.starts_with("MPI_Status_") && p.name.contains("f08");
    !(p.legacy || p.mpix || p.is_macro || handle_conversion || f08_status)
}

/// Rust type of a parameter on the standard ABI's side.
pub fn std_rust_type(p: &Param) -> String {
    let base = p.base();
    if handle_fn(base).is_some() || base == "MPI_Status" {
        let inner = if base == "MPI_Status" { "mpi_api::stdabi::MPI_Status" } else { "usize" };
        let mut t = inner.to_string();
        for level in 0..p.pointer_depth() {
            let kw = if level == 0 && p.ctype.starts_with("const ") { "*const " } else { "*mut " };
            t = format!("{kw}{t}");
        }
        return t;
    }
    mpich::rust_type(p)
}

/// Rust return type of a procedure on the standard ABI's side.
pub fn std_rust_ret(p: &Procedure) -> &'static str {
    if handle_fn(p.ret).is_some() {
        "usize"
    } else {
        mpich::rust_ret(p)
    }
}

/// The length of an array parameter, as a Rust expression over the
/// procedure's (standard-side) arguments, where the rules know it.
fn array_len(proc: &Procedure, p: &Param) -> Option<String> {
    let has = |n: &str| proc.param(n).is_some();
    let count = if has("count") {
        "count"
    } else if has("incount") {
        "incount"
    } else {
        ""
    };
    let e = match p.name {
        "array_of_requests" | "array_of_statuses" if !count.is_empty() => count.to_string(),
        "array_of_types" | "array_of_info" if has("count") => "count".into(),
        "sendtypes" | "recvtypes" => format!(
            "crate::cv::alltoallw_len(comm, {}, {}, sendbuf as usize)",
            proc.name.to_ascii_lowercase().contains("neighbor"),
            p.name == "sendtypes"
        ),
        "array_of_errcodes" if has("maxprocs") => "maxprocs".into(),
        "array_of_errcodes" if has("array_of_maxprocs") => "crate::cv::sum(array_of_maxprocs, count)".into(),
        "array_of_datatypes" if has("max_datatypes") => "max_datatypes".into(),
        "ranks1" | "ranks2" if has("n") => "n".into(),
        "array_of_distribs" | "array_of_dargs" if has("ndims") => "ndims".into(),
        _ => return None,
    };
    Some(format!("crate::cv::len({e})"))
}

/// How one parameter crosses: statements before the call, the argument
/// given to `libmpi.so.12`, statements after it.
#[derive(Default)]
struct Conv {
    pre: Vec<String>,
    arg: String,
    post: Vec<String>,
}

/// Whether the parameter is an array (a `[]` declarator or a pointer that
/// the table's name says is one).
fn is_array(p: &Param) -> bool {
    !p.suffix.is_empty() || p.name.starts_with("array_of_")
}

/// The conversion of a parameter, or why there is none.
fn conversion(proc: &Procedure, p: &Param) -> Result<Conv, String> {
    let n = mpich::rust_ident(p.name);
    let base = p.base();
    let depth = p.pointer_depth();
    let is_const = p.ctype.starts_with("const ");
    let pass = Conv { arg: n.clone(), ..Conv::default() };
    let ptr_arg = |t: &str| {
        if is_const {
            format!("if {n}.is_null() {{ std::ptr::null() }} else {{ &{t} }}")
        } else {
            format!("if {n}.is_null() {{ std::ptr::null_mut() }} else {{ &mut {t} }}")
        }
    };
    // A scalar behind a pointer or an array, converted with `f_in`/`f_out`
    // and `sentinel` marking values the library did not write.
    let by_ref = |f: &str, sentinel: &str| -> Result<Conv, String> {
        let t = format!("t_{n}");
        let mut c = Conv::default();
        if is_array(p) {
            let Some(len) = array_len(proc, p) else {
                return Err(format!("no length known for array `{}`", p.name));
            };
            // A nonblocking or persistent call may read its arrays until the
            // request completes or is freed, after this call returned: the
            // converted copy then lives for the rest of the process.
            let outlives_call =
                p.dir == Dir::In && proc.params.iter().any(|q| q.kind == "REQUEST" && q.dir == Dir::Out);
            let mutable = if outlives_call { "" } else { "mut " };
            if p.dir == Dir::Out {
                c.pre.push(format!("let mut {t} = vec![{sentinel}; if {n}.is_null() {{ 0 }} else {{ {len} }}];"));
            } else {
                c.pre.push(format!("let {mutable}{t} = crate::cv::array_in({n}, {len}, {f}_in);"));
            }
            c.arg = if outlives_call {
                format!("crate::cv::array_arg({n}.is_null(), Vec::leak({t}))")
            } else {
                format!("crate::cv::array_arg({n}.is_null(), &mut {t})")
            };
            if p.dir != Dir::In {
                c.post.push(format!("crate::cv::array_out({n}, &{t}, {sentinel}, {f}_out);"));
            }
        } else {
            if p.dir == Dir::Out {
                c.pre.push(format!("let mut {t} = {sentinel};"));
            } else {
                c.pre.push(format!("let mut {t} = if {n}.is_null() {{ {sentinel} }} else {{ {f}_in(*{n}) }};"));
            }
            c.arg = ptr_arg(&t);
            if p.dir != Dir::In && !is_const {
                c.post.push(format!("if !{n}.is_null() && {t} != {sentinel} {{ *{n} = {f}_out({t}); }}"));
            }
        }
        Ok(c)
    };
    if let Some(hf) = handle_fn(base) {
        let f = format!("crate::cv::{hf}");
        return match depth {
            0 => Ok(Conv { arg: format!("{f}_in({n})"), ..Conv::default() }),
            1 => by_ref(&f, &format!("crate::cv::{}_SENTINEL", hf.to_uppercase())),
            _ => Err(format!("`{}` is a pointer to a pointer to a handle", p.name)),
        };
    }
    if base == "MPI_Status" {
        let t = format!("t_{n}");
        let mut c = Conv::default();
        if is_array(p) {
            let Some(len) = array_len(proc, p) else {
                return Err(format!("no length known for status array `{}`", p.name));
            };
            c.pre.push(format!("let mut {t} = crate::cv::statuses_in({n}, {len}, {});", p.dir != Dir::Out));
            c.arg = format!("crate::cv::statuses_arg({n}.is_null(), &mut {t})");
        } else {
            c.pre.push(format!("let mut {t} = crate::cv::statuses_in({n}, 1, {});", p.dir != Dir::Out));
            c.arg = if is_const {
                format!("crate::cv::statuses_arg({n}.is_null(), &mut {t}) as *const _")
            } else {
                format!("crate::cv::statuses_arg({n}.is_null(), &mut {t})")
            };
        }
        if p.dir != Dir::In && !is_const {
            c.post.push(format!("crate::cv::statuses_out({n}, &{t});"));
        }
        return Ok(c);
    }
    match p.kind {
        "FUNCTION" | "POLYFUNCTION" | "EVENT_CB_FUNCTION" | "EVENT_FREE_CB_FUNCTION" | "EVENT_DROP_CB_FUNCTION" => {
            return Err(format!("callback `{}` needs a trampoline", p.name))
        }
        "F90_STATUS" | "F08_STATUS" => return Err("Fortran status".into()),
        // `MPI_Get_address(MPI_IN_PLACE)` is the constant's value, 1.
        "BUFFER" if base == "void" && depth == 1 && proc.name != "MPI_Get_address" => {
            return Ok(Conv { arg: format!("crate::cv::buffer({n})"), ..Conv::default() })
        }
        "WEIGHT" if base == "int" => return Ok(Conv { arg: format!("crate::cv::weights({n})"), ..Conv::default() }),
        "PVAR" if depth == 0 => return Ok(Conv { arg: format!("crate::cv::pvar_in({n})"), ..Conv::default() }),
        "ATTRIBUTE_VAL" | "ATTRIBUTE_VAL_10" if p.dir == Dir::Out => {
            let kv = proc.params.iter().find(|q| q.kind == "KEYVAL").map(|q| q.name);
            let flag = proc.params.iter().find(|q| q.kind == "LOGICAL" && q.dir == Dir::Out).map(|q| q.name);
            let (Some(kv), Some(flag)) = (kv, flag) else {
                return Err("attribute query without keyval and flag".into());
            };
            return Ok(Conv {
                arg: n.clone(),
                post: vec![format!("crate::attr::predefined_value({kv}, {n}, {flag});")],
                ..Conv::default()
            });
        }
        _ => {}
    }
    if proc.name == "MPI_File_set_view" && p.name == "disp" {
        return Ok(Conv { arg: format!("crate::cv::displacement_in({n})"), ..Conv::default() });
    }
    if base == "int" {
        if let Some(class) = super::int_class(proc.name, p.kind) {
            let f = format!("crate::cv::{}", class.fn_name());
            return match depth {
                0 => Ok(Conv { arg: format!("{f}_in({n})"), ..Conv::default() }),
                // Arrays of ranks without a known length hold no sentinels
                // (group members, graph neighbours): they pass unchanged.
                1 if is_array(p) && array_len(proc, p).is_none() => Ok(pass),
                1 => by_ref(&f, "crate::cv::INT_SENTINEL"),
                _ => Ok(pass),
            };
        }
    }
    Ok(pass)
}

/// The generated boundary.
pub struct Boundary {
    /// Rust source: the `Lib` table of `libmpi.so.12`'s procedures and the
    /// exported entry points (`PMPI_X` converting and calling, `MPI_X`
    /// forwarding to `PMPI_X`).
    pub code: String,
    /// Procedures exported with a generated body.
    pub generated: Vec<&'static str>,
    /// Procedures of the standard ABI left out, with the reason.
    pub left_out: Vec<(&'static str, String)>,
}

/// Generates the boundary for the procedures `libmpi.so.12` implements
/// (`implemented`), except those of `handwritten` (whose bodies the crate
/// has; they are still exported, with `MPI_X` forwarding to `PMPI_X`, and
/// `Lib` has their MPICH procedure).
pub fn boundary(procs: &[Procedure], implemented: &dyn Fn(&str) -> bool, handwritten: &[&str]) -> Boundary {
    let mut code = String::new();
    let mut lib_fields = String::new();
    let mut lib_load = String::new();
    let mut generated = Vec::new();
    let mut left_out = Vec::new();
    for p in procs.iter().filter(|p| !p.is_macro && implemented(p.name)) {
        let pname = p.pname();
        let mparams: Vec<String> = p.params.iter().map(mpich::rust_type).collect();
        let ret = mpich::rust_ret(p);
        let _ =
            writeln!(lib_fields, "    pub {pname}: Option<unsafe extern \"C\" fn({}) -> {ret}>,", mparams.join(", "));
        let _ = writeln!(
            lib_load,
            "        // SAFETY: `{pname}` of libmpi.so.12 has the table's MPICH signature.\n        \
             {pname}: unsafe {{ std::mem::transmute::<Option<crate::Sym>, Option<unsafe extern \"C\" fn({}) -> {ret}>>(sym(c\"{pname}\")) }},",
            mparams.join(", ")
        );
        if !in_std_abi(p) {
            continue;
        }
        let sparams: String = p
            .params
            .iter()
            .map(|q| format!("{}: {}", mpich::rust_ident(q.name), std_rust_type(q)))
            .collect::<Vec<_>>()
            .join(", ");
        let sargs = mpich::rust_args(p);
        let sret = std_rust_ret(p);
        if handwritten.contains(&p.name) {
            // The crate's `handwritten::MPI_X` has the body.
            let _ = writeln!(
                code,
                "/// `{name}` of the standard ABI (written by hand in `handwritten.rs`).\n///\n/// # Safety\n\
                 /// The arguments meet the MPI standard's requirements for `{name}`.\n\
                 #[no_mangle]\npub unsafe extern \"C\" fn {pname}({sparams}) -> {sret} {{\n    \
                 crate::guard(\"{name}\", move || {{\n        \
                 // SAFETY: the caller's arguments meet the standard's requirements (this function's contract).\n        \
                 unsafe {{ crate::handwritten::{name}({sargs}) }}\n    }})\n}}\n",
                name = p.name
            );
        } else {
            let mut convs = Vec::new();
            let mut why = None;
            for q in &p.params {
                match conversion(p, q) {
                    Ok(c) => convs.push(c),
                    Err(e) => {
                        why = Some(e);
                        break;
                    }
                }
            }
            if p.varargs {
                why = Some("C-variadic".into());
            }
            if p.ret != "int" && p.ret != "double" && p.ret != "MPI_Aint" {
                why = Some(format!("returns {}", p.ret));
            }
            if let Some(why) = why {
                left_out.push((p.name, why));
                continue;
            }
            let pre: String = convs.iter().flat_map(|c| c.pre.iter()).map(|s| format!("        {s}\n")).collect();
            let post: String = convs.iter().flat_map(|c| c.post.iter()).map(|s| format!("        {s}\n")).collect();
            let args: Vec<&str> = convs.iter().map(|c| c.arg.as_str()).collect();
            let (call, result) = if p.ret == "int" {
                ("let r = f", "crate::cv::errcode_out(r)")
            } else if post.is_empty() {
                ("f", "")
            } else {
                ("let r = f", "r")
            };
            let call_end = if call == "f" { "" } else { ";" };
            let fallback =
                if p.ret == "int" { format!("crate::missing(\"{}\")", p.name) } else { "Default::default()".into() };
            let _ = writeln!(
                code,
                "/// `{name}` of the standard ABI: converts, calls libmpi.so.12's `{pname}`, converts back.\n///\n\
                 /// # Safety\n/// The arguments meet the MPI standard's requirements for `{name}`.\n\
                 #[no_mangle]\npub unsafe extern \"C\" fn {pname}({sparams}) -> {ret} {{\n    \
                 crate::guard(\"{name}\", move || {{\n        \
                 let Some(f) = crate::lib().{pname} else {{ return {fallback} }};\n        \
                 // SAFETY: the caller's arguments meet the standard's requirements for `{name}`:\n        \
                 // pointers are NULL where allowed or valid for the reads and writes the procedure\n        \
                 // makes, and the conversions read and write them as it does; `f` has the MPICH\n        \
                 // signature of the same procedure, given the converted arguments.\n        \
                 unsafe {{\n{pre}        {call}({args}){call_end}\n{post}        {result}\n        }}\n    }})\n}}\n",
                name = p.name,
                args = args.join(", "),
            );
            generated.push(p.name);
        }
        let _ = writeln!(
            code,
            "/// `{name}`: forwards to `{pname}`, so that a profiler's `{name}` can call it.\n///\n\
             /// # Safety\n/// The arguments meet the MPI standard's requirements for `{name}`.\n\
             #[no_mangle]\npub unsafe extern \"C\" fn {name}({sparams}) -> {sret} {{\n    \
             // SAFETY: `{pname}` has this function's contract; the arguments pass unchanged.\n    \
             unsafe {{ {pname}({sargs}) }}\n}}\n",
            name = p.name
        );
    }
    let lib = format!(
        "/// The procedures of libmpi.so.12 (MPICH ABI), found with `dlsym`.\n\
         /// (Each field is a C signature, as long as the procedure's.)\n\
         #[allow(non_snake_case, clippy::type_complexity)]\n\
         pub struct Lib {{\n{lib_fields}}}\n\n\
         impl Lib {{\n    /// Looks every procedure up with `sym`.\n    \
         pub fn load(sym: &dyn Fn(&std::ffi::CStr) -> Option<crate::Sym>) -> Lib {{\n        Lib {{\n{lib_load}        }}\n    }}\n}}\n\n"
    );
    Boundary { code: lib + &code, generated, left_out }
}

/// Rust source of the conversion functions of predefined handles and
/// integer constants (module `cv`'s generated half).
pub fn conversions() -> String {
    let mut s = String::new();
    for (cname, ctype) in HANDLE_TYPES {
        let hf = handle_fn(cname).expect("handle type");
        let pairs = handle_pairs(*ctype);
        let mut fwd = String::new();
        let mut back = String::new();
        let mut seen = Vec::new();
        for (sv, mv) in &pairs {
            if !seen.contains(sv) {
                let _ = writeln!(fwd, "        0x{sv:x} => 0x{:08x}u32 as c_int,", *mv as u32);
                seen.push(*sv);
            }
        }
        let mut seen = Vec::new();
        for (sv, mv) in &pairs {
            if !seen.contains(mv) {
                let _ = writeln!(back, "        0x{:08x}u32 => 0x{sv:x},", *mv as u32);
                seen.push(*mv);
            }
        }
        let _ = writeln!(
            s,
            "/// `{cname}` of the standard ABI to the MPICH ABI: predefined ones by table, the\n\
             /// library's own (MPICH ints, zero-extended) back to their int; anything else\n\
             /// becomes an invalid handle, which the library reports.\n\
             pub fn {hf}_in(v: usize) -> c_int {{\n    match v {{\n{fwd}        \
             v if v >= STD_PREDEFINED_LIMIT && v <= u32::MAX as usize => v as u32 as c_int,\n        \
             _ => INVALID_HANDLE,\n    }}\n}}\n\
             /// `{cname}` of the MPICH ABI to the standard ABI.\n\
             pub fn {hf}_out(v: c_int) -> usize {{\n    match v as u32 {{\n{back}        v => v as usize,\n    }}\n}}\n"
        );
    }
    for class in IntClass::ALL {
        let f = class.fn_name();
        let pairs = int_pairs(*class);
        if class.is_bits() {
            let fwd: String = pairs.iter().map(|(sv, mv)| format!("    if v & {sv} != 0 {{ m |= {mv}; }}\n")).collect();
            let back: String =
                pairs.iter().map(|(sv, mv)| format!("    if v & {mv} != 0 {{ m |= {sv}; }}\n")).collect();
            let _ = writeln!(
                s,
                "/// Bit flags of the `{f}` family, standard to MPICH, bit by bit; unknown bits pass.\n\
                 pub fn {f}_in(v: c_int) -> c_int {{\n    let known: c_int = {};\n    let mut m = v & !known;\n{fwd}    m\n}}\n\
                 /// Bit flags of the `{f}` family, MPICH to standard.\n\
                 pub fn {f}_out(v: c_int) -> c_int {{\n    let known: c_int = {};\n    let mut m = v & !known;\n{back}    m\n}}\n",
                pairs.iter().map(|p| p.0.to_string()).collect::<Vec<_>>().join(" | "),
                pairs.iter().map(|p| p.1.to_string()).collect::<Vec<_>>().join(" | "),
            );
            continue;
        }
        let mut fwd = String::new();
        let mut back = String::new();
        for (i, (sv, mv)) in pairs.iter().enumerate() {
            if !pairs[..i].iter().any(|q| q.0 == *sv) {
                let _ = writeln!(fwd, "        {sv} => {mv},");
            }
            if !pairs[..i].iter().any(|q| q.1 == *mv) {
                let _ = writeln!(back, "        {mv} => {sv},");
            }
        }
        let (fwd_other, back_other) = if *class == IntClass::ErrorCode {
            ("        v => user_code_in(v),\n", "        v => user_code_out(v),\n")
        } else {
            ("        v => v,\n", "        v => v,\n")
        };
        let _ = writeln!(
            s,
            "/// The `{f}` family of constants, standard value to MPICH value.\n\
             #[allow(clippy::match_single_binding, clippy::match_overlapping_arm)]\n\
             pub fn {f}_in(v: c_int) -> c_int {{\n    match v {{\n{fwd}{fwd_other}    }}\n}}\n\
             /// The `{f}` family of constants, MPICH value to standard value.\n\
             #[allow(clippy::match_single_binding, clippy::match_overlapping_arm)]\n\
             pub fn {f}_out(v: c_int) -> c_int {{\n    match v {{\n{back}{back_other}    }}\n}}\n"
        );
    }
    s
}

/// `#define` line of a standard constant.
fn std_define(c: &crate::abi::Constant) -> String {
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
        Some(t) => format!("#define {} (({})0x{:08x})", c.name, t, c.value),
    }
}

/// `mpi_abi.h`: `template` with `@CONSTANTS@`, `@CONVERSIONS@` and
/// `@PROTOTYPES@` filled from this module and the table (every procedure of
/// the standard ABI, implemented or not, as `mpi.h` declares them all).
pub fn header(template: &str, procs: &[Procedure], version: &str) -> String {
    let defines: String = STD_CONSTANTS.iter().map(|c| std_define(c) + "\n").collect();
    let mut conv = String::new();
    for (cname, _) in HANDLE_TYPES.iter().chain(&[("MPI_File", CType::Pointer("MPI_File"))]) {
        let stem = cname.trim_start_matches("MPI_");
        let stem = if stem == "Datatype" { "Type" } else { stem };
        for pre in ["", "P"] {
            let _ = writeln!(conv, "#define {pre}MPI_{stem}_c2f {pre}MPI_{stem}_toint");
            let _ = writeln!(conv, "#define {pre}MPI_{stem}_f2c {pre}MPI_{stem}_fromint");
        }
    }
    let mut protos = String::new();
    for p in procs.iter().filter(|p| in_std_abi(p)) {
        let _ = writeln!(protos, "{};", mpich::c_prototype(p, p.name));
        let _ = writeln!(protos, "{};", mpich::c_prototype(p, &p.pname()));
    }
    template
        .replace("@VERSION@", version)
        .replace("@CONSTANTS@", defines.trim_end())
        .replace("@CONVERSIONS@", conv.trim_end())
        .replace("@PROTOTYPES@", protos.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::procedures;

    #[test]
    fn boundary_covers_the_common_procedures() {
        let procs = procedures();
        let b = boundary(&procs, &|_| true, &["MPI_Op_create"]);
        for n in ["MPI_Send", "MPI_Recv", "MPI_Waitall", "MPI_Alltoallw", "MPI_Type_create_struct", "MPI_Comm_split"] {
            assert!(b.generated.contains(&n), "{n} not generated");
        }
        assert!(!b.generated.contains(&"MPI_Op_create"));
        assert!(b.code.contains("pub unsafe extern \"C\" fn PMPI_Op_create("));
        assert!(b.left_out.iter().any(|(n, why)| *n == "MPI_Comm_create_errhandler" && why.contains("trampoline")));
        let send = b.code.split("fn PMPI_Send(").nth(1).unwrap();
        assert!(send.starts_with("buf: *const ::std::ffi::c_void, count: ::std::os::raw::c_int, datatype: usize,"));
        assert!(send.contains("crate::cv::datatype_in(datatype)"));
        assert!(send.contains("crate::cv::rank_in(dest)"));
        assert!(send.contains("crate::cv::tag_in(tag)"));
        assert!(send.contains("crate::cv::comm_in(comm)"));
        assert!(send.contains("crate::cv::buffer(buf)"));
        assert!(!b.code.contains("fn PMPI_Address("), "removed procedures are not in the standard ABI");
        let ineighbor = b.code.split("fn PMPI_Ineighbor_alltoallw(").nth(1).unwrap();
        assert!(ineighbor.contains("alltoallw_len(comm, true, true,"), "neighbour counts for Ineighbor_alltoallw");
        assert!(ineighbor.contains("Vec::leak(t_sendtypes)"), "the converted types outlive the call");
    }

    #[test]
    fn conversions_and_header() {
        let c = conversions();
        assert!(c.contains("pub fn comm_in(v: usize) -> c_int"));
        assert!(c.contains("        0x101 => 0x44000000u32 as c_int,"));
        assert!(c.contains("pub fn access_mode_in(v: c_int) -> c_int"));
        let h = header("@CONSTANTS@\n@CONVERSIONS@\n@PROTOTYPES@", &procedures(), "0");
        assert!(h.contains("#define MPI_COMM_WORLD ((MPI_Comm)0x00000101)"));
        assert!(h.contains("#define MPI_ANY_TAG (-2)"));
        assert!(h.contains("#define MPI_Type_c2f MPI_Type_toint"));
        assert!(h.contains("int MPI_Abi_get_version(int* abi_major, int* abi_minor);"));
        assert!(!h.contains("MPI_Address("));
    }
}
