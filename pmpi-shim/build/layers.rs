//! The translation layers of the foreign ABIs (Open MPI's native one, the
//! MPI-5 standard ABI), generated from the API table with each ABI's
//! description; see `src/foreign.rs`, `src/ompi.rs` and `src/stdabi.rs`.
//!
//! For each procedure and foreign ABI two functions: `<abi>_imp::MPI_X`
//! takes the application's arguments in the foreign ABI, converts them to
//! the MPICH ABI, calls the recording wrapper `imp::MPI_X` and converts the
//! outputs back; `<abi>_pmpi::MPI_X` takes the core's MPICH-ABI arguments,
//! converts them, calls the library's `PMPI_X` and converts the outputs
//! back. Every conversion is a bijection, so the application sees exactly
//! what its library did.

use std::fmt::Write as _;

use mpi_api::codegen;
use mpi_api::stdabi::{self, IntClass};
use mpi_api::table::{Dir, Param, Procedure};

/// A foreign ABI the shim records through translation layers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Foreign {
    /// Open MPI's native ABI (`mpi_api::ompi`, `src/ompi.rs`).
    Ompi,
    /// The MPI-5 standard ABI (`mpi_api::stdabi`, `src/stdabi.rs`).
    Std,
}

impl Foreign {
    pub const ALL: [Foreign; 2] = [Foreign::Ompi, Foreign::Std];

    /// The shim's module with this ABI's conversions.
    pub fn module(self) -> &'static str {
        match self {
            Foreign::Ompi => "ompi",
            Foreign::Std => "stdabi",
        }
    }
    /// Prefix of the generated layers' modules (`ompi_imp`, `std_pmpi`).
    pub fn prefix(self) -> &'static str {
        match self {
            Foreign::Ompi => "ompi",
            Foreign::Std => "std",
        }
    }
    /// Its value of `detect::ABI` (the name of the `detect::kind` constant).
    pub fn kind(self) -> &'static str {
        match self {
            Foreign::Ompi => "OMPI",
            Foreign::Std => "STD",
        }
    }
    /// Its `MPI_Status` type.
    fn status_type(self) -> &'static str {
        match self {
            Foreign::Ompi => "mpi_api::ompi::MPI_Status",
            Foreign::Std => "mpi_api::stdabi::MPI_Status",
        }
    }
    /// Rust type of a parameter in this ABI: handles are pointer-sized in
    /// both (`*mut c_void`), `MPI_Status` is the ABI's.
    fn rust_type(self, q: &Param) -> String {
        mpi_api::ompi::rust_type(q).replace("mpi_api::ompi::MPI_Status", self.status_type())
    }
    /// `name: Type, ...` of a Rust signature in this ABI.
    pub fn params(self, p: &Procedure) -> String {
        p.params
            .iter()
            .map(|q| format!("{}: {}", codegen::rust_ident(q.name), self.rust_type(q)))
            .collect::<Vec<_>>()
            .join(", ")
    }
    /// The family of integer constants (a conversion function prefix of the
    /// ABI's module) a parameter's values belong to, where the ABI's values
    /// differ from MPICH's in a way the core reads: special ranks, error
    /// classes and `MPI_COMM_TYPE_SHARED` in both; tags (`MPI_ANY_TAG`) and
    /// thread levels too in the standard ABI. Other integer constants reach
    /// the library as the application gave them (the core does not read
    /// them, and passes them through).
    fn family(self, proc_name: &str, q: &Param) -> Option<&'static str> {
        match q.kind {
            "RANK" | "RANK_NNI" => Some("rank"),
            // MPI_Abort's code is the process's exit status, not an MPI error.
            "ERROR_CODE" | "ERROR_CLASS" if proc_name != "MPI_Abort" => Some("error"),
            "SPLIT_TYPE" => Some("split_type"),
            "TAG" | "THREAD_LEVEL" if self == Foreign::Std => {
                Some(if q.kind == "TAG" { "tag" } else { "thread_level" })
            }
            "BUFFER" if q.pointer_depth() == 1 && q.base() == "void" && proc_name != "MPI_Get_address" => {
                Some("buffer")
            }
            _ => None,
        }
    }
    /// Procedures whose layers are not generated for this ABI (arrays of
    /// handles of a length the table does not give): they return
    /// `MPI_ERR_OTHER` with one message.
    fn untranslated(self) -> &'static [&'static str] {
        &["MPI_T_event_get_info"]
    }
}

/// Which way a layer converts its arguments.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    /// `<abi>_imp`: the application's arguments to the core's (MPICH ABI).
    ToCore,
    /// `<abi>_pmpi`: the core's arguments to the library's `PMPI_X`.
    ToLib,
}

/// One layer: a way and an ABI.
#[derive(Clone, Copy)]
struct Layer {
    way: Way,
    abi: Foreign,
}

impl Layer {
    /// Forward and backward conversion functions of a family (`rank`,
    /// `error`, `split_type`, `buffer`, `status`...).
    fn conv(self, family: &str) -> (String, String) {
        let (f, b) = match self.way {
            Way::ToCore => ("to_core", "to_lib"),
            Way::ToLib => ("to_lib", "to_core"),
        };
        let m = self.abi.module();
        (format!("crate::{m}::{family}_{f}"), format!("crate::{m}::{family}_{b}"))
    }
    /// Handle conversion of kind constant `k`: (forward, backward) as format
    /// strings of one argument.
    fn handle(self, k: &str) -> (String, String) {
        let (f, b) = match self.way {
            Way::ToCore => ("ptr_to_core", "ptr_to_lib"),
            Way::ToLib => ("ptr_to_lib", "ptr_to_core"),
        };
        (
            format!("crate::foreign::{f}({{}}, crate::foreign::kind::{k})"),
            format!("crate::foreign::{b}({{}}, crate::foreign::kind::{k})"),
        )
    }
    /// The null value of a converted handle.
    fn handle_zero(self) -> &'static str {
        match self.way {
            Way::ToCore => "0",
            Way::ToLib => "std::ptr::null_mut()",
        }
    }
    /// The status type on the far side.
    fn status_type(self) -> &'static str {
        match self.way {
            Way::ToCore => "mpi_api::abi::MPI_Status",
            Way::ToLib => self.abi.status_type(),
        }
    }
    /// The far side's `MPI_STATUS(ES)_IGNORE` (null in both foreign ABIs).
    fn status_ignore(self) -> &'static str {
        match self.way {
            Way::ToCore => "mpi_api::abi::MPI_STATUS_IGNORE as *mut _",
            Way::ToLib => "std::ptr::null_mut()",
        }
    }
    /// Whether a status pointer of the near side is `MPI_STATUS(ES)_IGNORE`.
    fn is_status_ignore(self, v: &str) -> String {
        match self.way {
            Way::ToCore => format!("{v}.is_null()"),
            Way::ToLib => format!("{v}.is_null() || {v} as usize == mpi_api::abi::MPI_STATUS_IGNORE"),
        }
    }
}

/// Whether `q` is an array (of its `count`, a group's size...).
pub fn is_array(q: &Param) -> bool {
    // The legacy procedures (`MPI_Type_struct`...) declare theirs as
    // pointers.
    !q.suffix.is_empty() || (q.name.starts_with("array_of_") && q.pointer_depth() == 1)
}

/// [`array_len`] of the arrays Open MPI's library gets (the Fortran entries
/// under Open MPI, `build/ofort.rs`).
pub fn ompi_array_len(p: &Procedure, q: &Param) -> String {
    array_len(p, q, Layer { way: Way::ToLib, abi: Foreign::Ompi })
}

/// The length (a Rust `usize` expression) of the array parameter `q` of `p`
/// converted by `layer`.
fn array_len(p: &Procedure, q: &Param, layer: Layer) -> String {
    let base = p.name.strip_suffix("_c").unwrap_or(p.name);
    let has = |n: &str| p.params.iter().any(|x| x.name == n);
    let count = |n: &str| format!("{} as usize", codegen::rust_ident(n));
    match q.name {
        "array_of_requests" | "array_of_statuses" | "array_of_types" | "array_of_info" if has("count") => {
            count("count")
        }
        "array_of_requests" | "array_of_statuses" if has("incount") => count("incount"),
        "array_of_datatypes" if base == "MPI_Type_get_contents" => count("max_datatypes"),
        "sendtypes" | "recvtypes" => {
            let comm = match layer.way {
                Way::ToCore => "comm as usize".to_string(),
                Way::ToLib => "crate::foreign::to_lib(comm, crate::foreign::kind::COMM)".to_string(),
            };
            format!(
                "crate::foreign::w_len({comm}, {}, {}, crate::{}::TOPOLOGIES)",
                base.contains("neighbor"),
                q.name == "sendtypes",
                layer.abi.module()
            )
        }
        "ranks1" | "ranks2" => count("n"),
        _ => panic!("{}: the length of array {} is not known to the translation layers", p.name, q.name),
    }
}

/// One translation layer of procedure `p`: statements before the call, the
/// arguments, statements after it (`rc` in scope).
fn conversions(p: &Procedure, layer: Layer) -> (String, Vec<String>, String) {
    let mut pre = String::new();
    let mut post = String::new();
    let mut args = Vec::new();
    for q in &p.params {
        let v = codegen::rust_ident(q.name);
        let base = q.base();
        let is_const = q.ctype.starts_with("const ");
        let arr = is_array(q);
        let depth = q.pointer_depth();
        let writes = q.dir != Dir::In && !is_const;
        let ptr = |name: &str| if is_const { format!("{name}.as_ptr()") } else { format!("{name}.as_mut_ptr()") };
        let null = if is_const { "std::ptr::null()" } else { "std::ptr::null_mut()" };
        if p.name.contains("_idup") && q.kind == "COMMUNICATOR" && q.dir == Dir::Out {
            // The library may write the new communicator when the
            // duplication completes, after the call returned (this
            // project's libmpi_abi.so and Open MPI do): it gets the
            // application's own handle, never a temporary of a layer. The
            // core does not read it there (it registers the communicator
            // when first used).
            args.push(format!("{v} as _"));
            continue;
        }
        if let Some(k) = stdabi::codegen::handle_fn(base).filter(|_| base != "MPI_File") {
            let k = k.to_ascii_uppercase();
            let (fwd, back) = layer.handle(&k);
            let fwd = |x: &str| fwd.replace("{}", x);
            let back = |x: &str| back.replace("{}", x);
            let zero = layer.handle_zero();
            match (depth, arr) {
                (0, false) => args.push(fwd(&v)),
                (1, false) => {
                    if q.dir == Dir::Out && k == "REQUEST" && layer.way == Way::ToCore {
                        // The request the variable still holds, if the
                        // layers know it: the core reports an active one
                        // overwritten (`request-overwritten`). The old value
                        // is only looked up; the variable is writable, so
                        // readable, and may hold garbage.
                        let _ = writeln!(
                            pre,
                            "    let mut t_{v} = if {v}.is_null() {{ {zero} }} else {{ \
                             crate::foreign::ptr_known_to_core({v}.read_volatile(), crate::foreign::kind::REQUEST) }};"
                        );
                    } else if q.dir == Dir::Out {
                        let _ = writeln!(pre, "    let mut t_{v} = {zero};");
                    } else {
                        let init = fwd(&format!("*{v}"));
                        let _ = writeln!(pre, "    let mut t_{v} = if {v}.is_null() {{ {zero} }} else {{ {init} }};");
                    }
                    args.push(format!("if {v}.is_null() {{ {null} }} else {{ &mut t_{v} }}"));
                    if writes {
                        let cond = if q.dir == Dir::Out { "rc_ok && " } else { "" };
                        let _ = writeln!(post, "    if {cond}!{v}.is_null() {{ *{v} = {}; }}", back(&format!("t_{v}")));
                    }
                }
                (1, true) => {
                    let n = array_len(p, q, layer);
                    let init = if q.dir == Dir::Out {
                        format!("vec![{zero}; n_{v}]")
                    } else {
                        format!("(0..n_{v}).map(|i| {}).collect()", fwd(&format!("*{v}.add(i)")))
                    };
                    let _ = writeln!(
                        pre,
                        "    let n_{v}: usize = if {v}.is_null() {{ 0 }} else {{ {n} }};\n    \
                         #[allow(unused_mut)]\n    let mut t_{v}: Vec<_> = if {v}.is_null() {{ Vec::new() }} else {{ {init} }};"
                    );
                    // A nonblocking or persistent call may read its arrays until
                    // the request completes or is freed, after this call returned:
                    // the library then gets a copy that lives for the rest of the
                    // process (the core's copy, given to the other layer, is read
                    // during the call only).
                    let outlives_call = layer.way == Way::ToLib
                        && q.dir == Dir::In
                        && p.params.iter().any(|x| x.kind == "REQUEST" && x.dir == Dir::Out);
                    let t = if outlives_call { format!("Vec::leak(t_{v})") } else { format!("t_{v}") };
                    args.push(format!("if {v}.is_null() {{ {null} }} else {{ {} }}", ptr(&t)));
                    if writes {
                        let cond = if q.dir == Dir::Out { "rc_ok && " } else { "" };
                        let _ = writeln!(
                            post,
                            "    if {cond}!{v}.is_null() {{ for (i, h) in t_{v}.iter().enumerate() {{ *{v}.add(i) = {}; }} }}",
                            back("*h")
                        );
                    }
                }
                _ => panic!("{}: handle parameter {} of an unexpected shape", p.name, q.name),
            }
            continue;
        }
        if base == "MPI_Status" {
            // Output statuses are read too: a library leaves fields such as
            // MPI_ERROR untouched, and so must the layers.
            let (fwd, back) = layer.conv("status");
            let far = layer.status_type();
            let ignore = layer.status_ignore();
            let is_ignore = layer.is_status_ignore(&v);
            if arr {
                let n = array_len(p, q, layer);
                let _ = writeln!(
                    pre,
                    "    let ign_{v} = {is_ignore};\n    let n_{v}: usize = if ign_{v} {{ 0 }} else {{ {n} }};\n    \
                     #[allow(unused_mut)]\n    let mut t_{v}: Vec<{far}> = vec![{far}::default(); n_{v}];\n    \
                     for (i, s) in t_{v}.iter_mut().enumerate() {{ {fwd}(&*{v}.add(i), s); }}"
                );
                args.push(format!("if ign_{v} {{ {ignore} }} else {{ {} }}", ptr(&format!("t_{v}"))));
                if writes {
                    let _ = writeln!(
                        post,
                        "    if !ign_{v} {{ for (i, s) in t_{v}.iter().enumerate() {{ {back}(s, &mut *{v}.add(i)); }} }}"
                    );
                }
            } else if depth == 1 {
                let _ = writeln!(
                    pre,
                    "    let ign_{v} = {is_ignore};\n    #[allow(unused_mut)]\n    let mut t_{v}: {far} = {far}::default();\n    \
                     if !ign_{v} {{ {fwd}(&*{v}, &mut t_{v}); }}"
                );
                let r = if is_const { format!("&t_{v}") } else { format!("&mut t_{v}") };
                args.push(format!("if ign_{v} {{ {ignore} }} else {{ {r} }}"));
                if writes {
                    let _ = writeln!(post, "    if !ign_{v} {{ {back}(&t_{v}, &mut *{v}); }}");
                }
            } else {
                panic!("{}: status parameter {} of an unexpected shape", p.name, q.name);
            }
            continue;
        }
        match (layer.abi.family(p.name, q), depth, arr) {
            (Some("buffer"), _, _) => {
                let (fwd, _) = layer.conv("buffer");
                args.push(format!("{fwd}({v} as *mut ::std::ffi::c_void) as _"));
            }
            (Some(f), 0, false) => args.push(format!("{}({v})", layer.conv(f).0)),
            (Some(f), 1, false) if writes => {
                let _ = writeln!(post, "    if rc_ok && !{v}.is_null() {{ *{v} = {}(*{v}); }}", layer.conv(f).1);
                args.push(v);
            }
            (Some("rank"), 1, true) if p.name == "MPI_Group_translate_ranks" => {
                let n = array_len(p, q, layer);
                let (fwd, back) = layer.conv("rank");
                if writes {
                    let _ = writeln!(
                        post,
                        "    if rc_ok && !{v}.is_null() {{ for i in 0..{n} {{ *{v}.add(i) = {back}(*{v}.add(i)); }} }}"
                    );
                    args.push(v);
                } else {
                    let _ = writeln!(
                        pre,
                        "    let t_{v}: Vec<::std::os::raw::c_int> = if {v}.is_null() {{ Vec::new() }} else {{ (0..{n}).map(|i| {fwd}(*{v}.add(i))).collect() }};"
                    );
                    args.push(format!("if {v}.is_null() {{ {null} }} else {{ t_{v}.as_ptr() }}"));
                }
            }
            _ => args.push(v),
        }
    }
    (pre, args, post)
}

/// The two layers of `p` for `abi`: `<abi>_imp::MPI_X` (the ABI's
/// arguments, calls the recording wrapper) and `<abi>_pmpi::MPI_X` (core
/// arguments, calls the library's `PMPI_X`). `ret` is the procedure's Rust
/// return type, `missing` what a call returns when the library lacks it.
pub fn layers(abi: Foreign, idx: usize, p: &Procedure, ret: &str, missing: &str) -> (String, String) {
    let name = p.name;
    let oparams = abi.params(p);
    let cparams = codegen::rust_params(p);
    let is_int = p.ret == "int";
    // `MPI_ERR_OTHER` where the library lacks a procedure, in the ABI of
    // the side that gets it.
    let m = abi.module();
    let lib_err_other = format!("crate::{m}::error_to_lib(mpi_api::abi::MPI_ERR_OTHER)");
    if abi.untranslated().contains(&name) {
        let body = |err: &str| format!("{{\n    crate::next::missing({name:?});\n    {err}\n}}");
        let allow = "#[allow(unused_variables)]\n";
        return (
            format!("{allow}pub unsafe extern \"C\" fn {name}({oparams}) -> {ret} {}", body(&lib_err_other)),
            format!("{allow}pub unsafe fn {name}({cparams}) -> {ret} {}", body("mpi_api::abi::MPI_ERR_OTHER")),
        );
    }
    // The library's call returns its own codes, converted with the rest.
    let missing =
        if is_int { missing.replace("mpi_api::abi::MPI_ERR_OTHER", &lib_err_other) } else { missing.to_string() };
    let layer = |way: Way, call: String| -> String {
        let layer = Layer { way, abi };
        let (pre, args, post) = conversions(p, layer);
        let args = args.join(", ");
        let call = call.replace("{args}", &args);
        let (rc_ok, ret_conv) = if is_int {
            let f = layer.conv("error").1;
            ("    #[allow(unused_variables)]\n    let rc_ok = rc == 0;\n".to_string(), format!("{f}(rc)"))
        } else {
            (String::new(), "rc".to_string())
        };
        format!(
            "    // SAFETY: the arguments are the caller's, valid as the MPI standard requires for\n    \
             // {name}; pointers are read and written only where the standard lets {name} do so\n    \
             // (null ones skipped), arrays over the lengths the standard gives them.\n    \
             unsafe {{\n{pre}    let rc = {call};\n{rc_ok}{post}    {ret_conv}\n    }}"
        )
    };
    let imp_call = "crate::imp::{name}({args})".replace("{name}", name);
    let pmpi_call = format!(
        "match crate::next::resolve({idx}) {{\n        \
         Some(f) => std::mem::transmute::<*mut std::ffi::c_void, unsafe extern \"C\" fn({oparams}) -> {ret}>(f)({{args}}),\n        \
         None => {missing},\n    }}"
    );
    let allow =
        "#[allow(unused_unsafe, clippy::let_and_return, clippy::unnecessary_cast, clippy::useless_conversion)]\n";
    (
        format!(
            "{allow}pub unsafe extern \"C\" fn {name}({oparams}) -> {ret} {{\n{}\n}}",
            layer(Way::ToCore, imp_call)
        ),
        format!("{allow}pub unsafe fn {name}({cparams}) -> {ret} {{\n{}\n}}", layer(Way::ToLib, pmpi_call)),
    )
}

/// The standard ABI's families of integer constants the layers convert
/// (see [`Foreign::family`]), as bijections: `<f>_to_core` and `<f>_to_lib`.
pub fn std_int_families() -> String {
    let mut s = String::new();
    for (f, class) in [
        ("rank", IntClass::Rank),
        ("tag", IntClass::Tag),
        ("thread_level", IntClass::ThreadLevel),
        ("error", IntClass::ErrorCode),
        ("split_type", IntClass::SplitType),
    ] {
        let perm = stdabi::int_bijection(class);
        let arms = |inv: bool| -> String {
            perm.iter()
                .map(|&(a, b)| if inv { format!("        {b} => {a},\n") } else { format!("        {a} => {b},\n") })
                .collect()
        };
        let _ = writeln!(
            s,
            "/// The `{f}` family, the standard ABI's value to MPICH's (a bijection of `int`).\n\
             pub fn {f}_to_core(v: c_int) -> c_int {{\n    match v {{\n{}        v => v,\n    }}\n}}\n\
             /// Inverse of [`{f}_to_core`].\n\
             pub fn {f}_to_lib(v: c_int) -> c_int {{\n    match v {{\n{}        v => v,\n    }}\n}}",
            arms(false),
            arms(true)
        );
    }
    s
}
