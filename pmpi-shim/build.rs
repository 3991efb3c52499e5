//! Build script of pmpi-shim: generates every wrapper from the API table.
//!
//! For every non-macro procedure `MPI_X` of `mpi_api::table` it writes to
//! `$OUT_DIR/wrappers.rs`:
//!
//! * `pmpi::MPI_X(...)`: a call of the next `PMPI_X` (resolved lazily with
//!   `dlsym(RTLD_NEXT)`, see `src/next.rs`), used by all hand-written code;
//! * the exported symbol `MPI_X`: on x86-64 a naked trampoline that stores
//!   the caller's return address (the call site) in a thread-local and
//!   jumps to `imp::MPI_X` with the arguments untouched (stack arguments
//!   included); elsewhere a plain forwarding function;
//! * `imp::MPI_X(...)`: the recording wrapper. If `src/special.rs` defines
//!   `pub unsafe fn MPI_X(`, it calls that; otherwise the body is generated
//!   from the parameters' names and semantic kinds (communicator, peer, tag,
//!   count, datatype, root, op, requests, statuses, new communicators...),
//!   feeding a `rec::Call` whose hand-written logic does the recording.
//!
//! It also writes, for every procedure of the Fortran binding (`mpif.h`,
//! `use mpi`), trampolines under MPICH's four spellings (`mpi_send_`...)
//! that note the Fortran call site and jump to the MPI's own definition;
//! and, for Open MPI, whose Fortran layers call `PMPI_X` directly, the
//! Fortran entries that record such calls (`build/ofort.rs`, `src/fort.rs`).
//!
//! Conversion helpers (`MPI_Wtime`, `*_c2f`, `*_fromint`, `MPI_Aint_add`...)
//! are wrapped too but forward without recording.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mpi_api::table::{self, Dir, Param, Procedure};
use mpi_api::{codegen, fortran};

#[path = "build/layers.rs"]
mod layers;
use layers::Foreign;
#[path = "build/ofort.rs"]
mod ofort;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=src/special.rs");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/layers.rs");
    let specials = scan_specials(&manifest.join("src/special.rs"));
    let procedures: Vec<Procedure> = table::procedures();
    println!("cargo:rerun-if-changed=build/ofort.rs");
    // The Fortran recording layer used under Open MPI (see src/fort.rs).
    let ofort = ofort::generate(&procedures);

    let mut pnames = String::new();
    // `MPI_X` names by call id (empty for macros, which have no symbol).
    let mut names = String::new();
    let mut ids = String::new();
    let mut pmpi = String::new();
    let mut exports = String::new();
    let mut imps = String::new();
    // The translation layers of the foreign ABIs (see src/foreign.rs), by
    // `Foreign::ALL`: (`<abi>_imp`, `<abi>_pmpi`).
    let mut foreign_layers: Vec<(String, String)> = vec![Default::default(); Foreign::ALL.len()];
    for (idx, p) in procedures.iter().enumerate() {
        let _ = writeln!(pnames, "    c\"P{}\",", p.name);
        let _ = writeln!(ids, "    pub const {}: usize = {idx};", p.name);
        if p.is_macro {
            let _ = writeln!(names, "    c\"\",");
            continue;
        }
        let params = codegen::rust_params(p);
        let args = codegen::rust_args(p);
        let ret = ret_type(p);
        let name = p.name;
        // pmpi::MPI_X: call the next definition.
        let _ = writeln!(
            pmpi,
            "#[inline]\npub unsafe fn {name}({params}) -> {ret} {{\n    \
             {foreign}\
             match crate::next::resolve({idx}) {{\n        \
             // SAFETY: the address is the MPI library's definition of {pname}, found by\n        \
             // dlsym under the table's name at index {idx}; this function type is generated from\n        \
             // the same table entry, so it is the C prototype of that definition. The arguments\n        \
             // are the caller's, who promised what the MPI standard requires of them.\n        \
             Some(f) => unsafe {{ std::mem::transmute::<*mut std::ffi::c_void, unsafe extern \"C\" fn({params}) -> {ret}>(f)({args}) }},\n        \
             None => {missing},\n    }}\n}}",
            pname = p.pname(),
            missing = missing_value(p),
            // Under a foreign ABI, the core's MPICH-ABI arguments are translated
            // (never for the conversion helpers, which the core does not call).
            foreign = if is_passthrough(name) {
                String::new()
            } else {
                // A Fortran call pending (src/fort.rs) goes to the library's Fortran
                // procedure instead (under Open MPI, and under the MPICH ABI for
                // MPICH's `mpi_f08` and `ofort::MPICH_INTERNAL`).
                let fortran = if ofort.names.contains(&name) {
                    format!(
                        "if crate::fort::pending({idx}) {{\n        \
                         // SAFETY: this function's arguments, passed on to the Fortran forward of the same prototype.\n        \
                         return unsafe {{ crate::ofwd::{name}({args}) }};\n    }}\n    "
                    )
                } else {
                    String::new()
                };
                format!("{fortran}{}", foreign_arms(name, &args))
            },
        );
        // The trampoline keeps only the integer argument registers (see
        // `site::TRAMPOLINE`): a floating-point argument would be lost.
        if let Some(q) =
            p.params.iter().find(|q| q.pointer_depth() == 0 && matches!(q.base(), "float" | "double" | "long double"))
        {
            panic!(
                "{name} takes the floating-point argument {}, which the call-site trampoline does not preserve",
                q.name
            );
        }
        // The exported symbol: a trampoline choosing, by the ABI detected
        // at the first call (`detect::ABI`), the wrapper or the library's
        // own MPI_X. Conversion helpers are not recorded, so they skip the
        // call site.
        let (asm, what) = if is_passthrough(name) {
            ("PASS_TRAMPOLINE", "set = sym crate::detect::ensure".to_string())
        } else {
            for (f, (imps, pmpis)) in Foreign::ALL.iter().zip(foreign_layers.iter_mut()) {
                let (imp, pmpi) = layers::layers(*f, idx, p, ret, &missing_value(p));
                let _ = writeln!(imps, "{imp}");
                let _ = writeln!(pmpis, "{pmpi}");
            }
            (
                "TRAMPOLINE",
                format!(
                    "set = sym crate::site::set_site, oimp = sym crate::ompi_imp::{name}, \
                     simp = sym crate::std_imp::{name}"
                ),
            )
        };
        let _ = writeln!(names, "    c\"{name}\",");
        let _ = writeln!(
            exports,
            "#[cfg(target_arch = \"x86_64\")]\n#[no_mangle]\n\
             // SAFETY: the trampoline (`site::{asm}`) restores the integer argument\n\
             // registers (the only ones {name} uses, as build.rs checked) and the stack pointer\n\
             // before it jumps, so imp::{name}, which has {name}'s C prototype, or the library's\n\
             // own {name} receives exactly the application's call.\n\
             #[unsafe(naked)]\npub unsafe extern \"C\" fn {name}() {{\n    \
             core::arch::naked_asm!(crate::site::{asm}!(), {what}, imp = sym crate::imp::{name}, \
             abi = sym crate::detect::ABI, pass = sym crate::detect::PASS, off = const {off});\n}}\n\
             #[cfg(not(target_arch = \"x86_64\"))]\n#[no_mangle]\npub unsafe extern \"C\" fn {name}({params}) -> {ret} {{\n    \
             // SAFETY: the application's arguments, valid as the MPI standard requires\n    \
             // for {name}, passed on unchanged to the wrapper, which requires the same.\n    \
             unsafe {{ crate::imp::{name}({args}) }}\n}}",
            off = idx * 8,
        );
        if is_passthrough(name) {
            let _ = writeln!(
                imps,
                "pub unsafe extern \"C\" fn {name}({params}) -> {ret} {{\n    \
                 // SAFETY: the application's arguments, valid as the MPI standard requires\n    \
                 // for {name}, passed on unchanged to {pname}, which requires the same.\n    \
                 unsafe {{ crate::pmpi::{name}({args}) }}\n}}",
                pname = p.pname(),
            );
            continue;
        }
        // imp::MPI_X: the recording wrapper.
        let body = if specials.contains(name) {
            format!(
                "    // SAFETY: the application's arguments, valid as the MPI standard requires\n    \
                 // for {name}, passed on unchanged to the hand-written wrapper, which requires the same.\n    \
                 unsafe {{ crate::special::{name}({args}) }}"
            )
        } else {
            generic_body(idx, p)
        };
        let _ = writeln!(imps, "pub unsafe extern \"C\" fn {name}({params}) -> {ret} {{\n{body}\n}}");
    }
    // Fortran entry points (`mpif.h`, `use mpi`: MPICH's spellings): a
    // trampoline that notes the Fortran call site and jumps to the MPI's own
    // Fortran procedure, whose call of the C `MPI_X` is then recorded with
    // that site (see `site::FORTRAN_TRAMPOLINE`).
    let mut fnames = String::new();
    // Match arms: trampoline index -> Open MPI recording entry.
    let mut fentries = String::new();
    // Trampoline indices whose entry records under the MPICH ABI too:
    // always, or on MPICH's `mpi_f08` (see `site::fortran_enter`).
    let (mut mpich_always, mut mpich_f08) = (Vec::new(), Vec::new());
    let mut fcount = 0usize;
    for p in procedures.iter().filter(|p| !p.is_macro) {
        let has_entry = ofort.names.contains(&p.name);
        // MPICH's `mpi_f08` takes choice buffers as array descriptors, in
        // `mpi_x_f08ts_` (`ofort::MPI_X_ts`).
        let ts = ofort.ts_names.contains(&p.name);
        let lower = p.name.to_ascii_lowercase();
        // Each spelling, and whether it is one of `mpi_f08`.
        let spellings: Vec<(String, bool)> = if p.large {
            // Only in MPICH's `mpi_f08`: `mpi_send_f08ts_large_` for `MPI_Send_c`.
            if !has_entry {
                continue;
            }
            let base = lower.strip_suffix("_c").unwrap_or(&lower);
            vec![(if ts { format!("{base}_f08ts_large_") } else { format!("{base}_f08_large_") }, true)]
        } else {
            if fortran::plan(p).is_err() && !fortran::HANDWRITTEN.contains(&p.name) {
                continue;
            }
            let [m0, m1, m2, m3, f08] = fortran::spellings(p.name).0;
            let mut v = vec![(m0, false), (m1, false), (m2, false), (m3, false), (f08, true)];
            v.extend(ts.then(|| (format!("{lower}_f08ts_"), true)));
            v
        };
        // Every Fortran call is recorded where the library's Fortran layer
        // does not reach `MPI_X`: a procedure without an entry (an array
        // whose length the rules do not know...) would pass unrecorded.
        assert!(
            has_entry || p.ret != "int" || is_passthrough(p.name),
            "{}: a Fortran binding without a recording entry (build/ofort.rs)",
            p.name
        );
        for (s, is_f08) in spellings {
            let _ = writeln!(fnames, "    c\"{s}\",");
            if has_entry {
                let entry = if s.contains("_f08ts_") { format!("{}_ts", p.name) } else { p.name.to_string() };
                let _ = writeln!(fentries, "        {fcount} => crate::ofort::{entry} as *const () as usize,");
                if ofort::MPICH_INTERNAL.contains(&p.name) {
                    mpich_always.push(fcount.to_string());
                } else if is_f08 {
                    mpich_f08.push(fcount.to_string());
                }
            }
            let _ = writeln!(
                exports,
                "#[cfg(target_arch = \"x86_64\")]\n#[no_mangle]\n\
                 // SAFETY: the trampoline (`site::FORTRAN_TRAMPOLINE`) restores the integer\n\
                 // argument registers and the stack pointer before it jumps to the MPI's own\n\
                 // `{s}`, which so receives exactly the application's call.\n\
                 #[unsafe(naked)]\npub unsafe extern \"C\" fn {s}() {{\n    \
                 core::arch::naked_asm!(crate::site::FORTRAN_TRAMPOLINE!(), set = sym crate::site::fortran_enter, idx = const {fcount});\n}}"
            );
            fcount += 1;
        }
    }
    let unknown: Vec<_> = specials.iter().filter(|n| !procedures.iter().any(|p| &p.name == n)).collect();
    assert!(unknown.is_empty(), "src/special.rs defines procedures missing from the table: {unknown:?}");

    // The generated functions carry the C names and prototypes of the MPI
    // standard (hence the naming and argument-count allowances); each one's
    // safety contract is the standard's for the procedure of its name.
    let c_api_allowances = "// C names and prototypes of the MPI standard; each function's safety contract is the\n\
                            // standard's for the procedure of its name.\n\
                            #[allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]";
    let mut rs = String::new();
    let _ = writeln!(
        rs,
        "/// `PMPI_X` names of the table, indexed by call id.\npub static PNAMES: [&std::ffi::CStr; {}] = [\n{pnames}];",
        procedures.len()
    );
    let _ = writeln!(
        rs,
        "/// `MPI_X` names of the table (empty for macros), indexed by call id.\n\
         pub static NAMES: [&std::ffi::CStr; {}] = [\n{names}];",
        procedures.len()
    );
    let _ = writeln!(
        rs,
        "/// Call ids (indices in the API table), named as the procedures; hand-written code uses\n\
         /// only some of them.\n#[allow(non_upper_case_globals, dead_code)]\npub mod ids {{\n{ids}}}"
    );
    let _ = writeln!(
        rs,
        "/// The Fortran procedures wrapped (MPICH's spellings), indexed as their trampolines.\n\
         pub static FNAMES: [&std::ffi::CStr; {fcount}] = [\n{fnames}];"
    );
    let _ =
        writeln!(rs, "/// The next definitions of the PMPI procedures.\n{c_api_allowances}\npub mod pmpi {{\n{pmpi}}}");
    let _ = writeln!(rs, "/// The recording wrappers.\n{c_api_allowances}\npub mod imp {{\n{imps}}}");
    for (f, (imps, pmpis)) in Foreign::ALL.iter().zip(&foreign_layers) {
        let (m, prefix) = (f.module(), f.prefix());
        let _ = writeln!(
            rs,
            "/// The application's arguments in the ABI of `{m}` translated for the recording wrappers.\n\
             {c_api_allowances}\npub mod {prefix}_imp {{\n{imps}}}"
        );
        let _ = writeln!(
            rs,
            "/// The core's arguments translated for the `PMPI_X` of a library of the ABI of `{m}`.\n\
             {c_api_allowances}\npub mod {prefix}_pmpi {{\n{pmpis}}}"
        );
    }
    let _ = writeln!(
        rs,
        "/// The standard ABI's integer constants the layers convert (see `stdabi`).\n\
         pub mod std_ints {{\nuse std::ffi::c_int;\n{}}}",
        layers::std_int_families()
    );
    let _ = writeln!(rs, "/// The exported MPI symbols.\n{c_api_allowances}\npub mod exports {{\n{exports}}}");
    let _ = writeln!(
        rs,
        "/// Fortran entries recording under Open MPI (see `fort`).\n{c_api_allowances}\npub mod ofort {{\n{}}}\n\
         /// Open MPI's Fortran procedures called for pending Fortran calls (see `fort`).\n\
         {c_api_allowances}\npub mod ofwd {{\n{}}}\n\
         /// The Open MPI recording entry of Fortran trampoline `fidx` (0: none).\n\
         pub fn ofort_entry(fidx: usize) -> usize {{\n    match fidx {{\n{fentries}        _ => 0,\n    }}\n}}\n\
         /// Whether Fortran trampoline `fidx` records through its entry under the MPICH ABI:\n\
         /// `Some(true)` always (`ofort::MPICH_INTERNAL`), `Some(false)` if the library's\n\
         /// `mpi_f08` calls `PMPI_X` (an `mpi_f08` spelling), None never.\n\
         pub fn mpich_fortran_entry(fidx: usize) -> Option<bool> {{\n    \
         match fidx {{\n        {} => Some(true),\n        {} => Some(false),\n        _ => None,\n    }}\n}}",
        ofort.ofort,
        ofort.ofwd,
        mpich_always.join(" | "),
        mpich_f08.join(" | ")
    );
    write_if_changed(&out.join("wrappers.rs"), &rs);
}

/// The start of `pmpi::MPI_X` (`name`, called with `args`) that sends the
/// core's arguments to the translation layer of a foreign ABI.
fn foreign_arms(name: &str, args: &str) -> String {
    let arms: String = Foreign::ALL
        .iter()
        .map(|f| {
            format!(
                "            crate::detect::kind::{k} => {{\n                \
                 // SAFETY: this function's arguments, passed on to the translation layer of the\n                \
                 // same prototype.\n                \
                 return unsafe {{ crate::{m}_pmpi::{name}({args}) }};\n            }}\n",
                k = f.kind(),
                m = f.prefix()
            )
        })
        .collect();
    format!(
        "let abi = crate::detect::ABI.load(std::sync::atomic::Ordering::Relaxed);\n    \
         if abi != crate::detect::kind::MPICH {{\n        \
         match abi {{\n{arms}            _ => {{}}\n        }}\n    }}\n    "
    )
}

/// Return type of a procedure in the MPICH ABI.
fn ret_type(p: &Procedure) -> &'static str {
    match p.ret {
        "double" => "f64",
        "MPI_Aint" | "MPI_Offset" | "MPI_Count" => "i64",
        "MPI_File" => "*mut ::std::ffi::c_void",
        _ => codegen::rust_ret(p),
    }
}

/// What a call returns when the MPI library lacks the procedure.
fn missing_value(p: &Procedure) -> String {
    let v = match ret_type(p) {
        "f64" => "0.0",
        "i64" => "0",
        "*mut ::std::ffi::c_void" => "std::ptr::null_mut()",
        _ if p.ret == "int" => "mpi_api::abi::MPI_ERR_OTHER",
        _ => "0",
    };
    format!("{{ crate::next::missing({:?}); {v} }}", p.name)
}

/// Conversion and clock helpers: wrapped, never recorded.
fn is_passthrough(name: &str) -> bool {
    matches!(name, "MPI_Wtime" | "MPI_Wtick" | "MPI_Aint_add" | "MPI_Aint_diff")
        || ["_c2f", "_f2c", "_toint", "_fromint", "_f2f08", "_f082f", "_c2f08", "_f082c"]
            .iter()
            .any(|s| name.ends_with(s))
}

/// The recording category of a procedure (`rec::Cat`).
fn category(name: &str) -> &'static str {
    let base = name.trim_start_matches("MPI_");
    let base = base.strip_suffix("_c").unwrap_or(base);
    match base {
        "Send" | "Bsend" | "Ssend" | "Rsend" | "Isend" | "Ibsend" | "Issend" | "Irsend" => return "Send",
        "Send_init" | "Bsend_init" | "Ssend_init" | "Rsend_init" => return "SendInit",
        "Recv" | "Irecv" => return "Recv",
        "Recv_init" => return "RecvInit",
        "Psend_init" => return "PsendInit",
        "Precv_init" => return "PrecvInit",
        "Mrecv" | "Imrecv" => return "Mrecv",
        "Sendrecv" | "Sendrecv_replace" | "Isendrecv" | "Isendrecv_replace" => return "Sendrecv",
        "Probe" | "Iprobe" => return "Probe",
        "Mprobe" | "Improbe" => return "Mprobe",
        _ => {}
    }
    let lower = base.to_ascii_lowercase();
    let lower = lower.strip_suffix("_init").unwrap_or(&lower);
    const COLL: &[&str] = &[
        "barrier",
        "bcast",
        "gather",
        "gatherv",
        "scatter",
        "scatterv",
        "allgather",
        "allgatherv",
        "alltoall",
        "alltoallv",
        "alltoallw",
        "reduce",
        "allreduce",
        "reduce_scatter",
        "reduce_scatter_block",
        "scan",
        "exscan",
        "neighbor_allgather",
        "neighbor_allgatherv",
        "neighbor_alltoall",
        "neighbor_alltoallv",
        "neighbor_alltoallw",
    ];
    let is_coll = |s: &str| COLL.contains(&s);
    if is_coll(lower) || lower.strip_prefix('i').is_some_and(is_coll) {
        return "Coll";
    }
    "Other"
}

fn is_array(q: &Param) -> bool {
    !q.suffix.is_empty()
}

/// The generated body of a recording wrapper.
fn generic_body(idx: usize, p: &Procedure) -> String {
    let category = category(p.name);
    // Statements handing arguments to the `Call`, run only when recording.
    let mut setters = String::new();
    // Output pointers the `Call` reads after the call, handed over before it.
    let mut output_pointers = String::new();
    // Status arguments replaced by the shim's own when the application
    // passes `MPI_STATUS_IGNORE`.
    let mut status_substitutions = String::new();
    let mut seen_comm = false;
    let has_dest = p.params.iter().any(|q| q.name == "dest");
    // A freed or consumed handle is read through the application's pointer.
    let handle_read = |method: &str, v: &str, what: &str| {
        format!(
            "// SAFETY: {name} requires `{v}` to point to a valid {what}; the method reads it\n        \
             // only when it is not null.\n        \
             unsafe {{ c.{method}({v}) }}",
            name = p.name
        )
    };
    // An output argument is read after the call succeeded.
    let output = |method: &str, v: &str| {
        format!(
            "// SAFETY: `{v}` is {name}'s output argument, valid as the standard requires\n        \
             // until this wrapper returns, after `c.exit`.\n        \
             unsafe {{ c.{method}({v}) }}",
            name = p.name
        )
    };
    // A counts array is read in `c.enter`.
    let counts = |method: &str, v: &str| {
        format!(
            "// SAFETY: `{v}` is {name}'s counts argument, as the standard requires it.\n        \
             unsafe {{ c.{method}({v} as *const std::ffi::c_void) }}",
            name = p.name
        )
    };
    for q in &p.params {
        let v = codegen::rust_ident(q.name);
        let push = |s: &mut String, statement: String| {
            let _ = writeln!(s, "        {statement};");
        };
        // Counts are `int` or, in large-count procedures, already 64-bit.
        let count_i64 = || if codegen::rust_type(q) == "i64" { v.clone() } else { format!("i64::from({v})") };
        match (q.kind, q.dir, is_array(q)) {
            ("COMMUNICATOR", Dir::In, false) if !seen_comm => {
                seen_comm = true;
                push(&mut setters, format!("c.comm({v})"));
            }
            // The communicator of MPI_Comm_idup is not usable before the
            // request completes: it is registered when first used.
            ("COMMUNICATOR", Dir::Out, false) if !p.name.contains("_idup") => {
                push(&mut output_pointers, output("out_comm", &v))
            }
            ("COMMUNICATOR", Dir::InOut, false) => {
                push(&mut setters, handle_read("freeing_comm", &v, "communicator handle"))
            }
            // A file handle is recorded in `seq` (the analyzers tell files apart by it).
            ("FILE", Dir::In, false) => push(&mut setters, format!("c.rec.seq = {v} as usize as i64")),
            ("FILE", Dir::Out, false) => push(&mut output_pointers, output("out_file", &v)),
            ("FILE", Dir::InOut, false) => push(&mut setters, handle_read("freeing_file", &v, "file handle")),
            ("WINDOW", Dir::In, false) => push(&mut setters, format!("c.win({v})")),
            ("WINDOW", Dir::Out, false) => push(&mut output_pointers, output("out_win", &v)),
            ("WINDOW", Dir::InOut, false) => push(&mut setters, handle_read("freeing_win", &v, "window handle")),
            ("LOGICAL", Dir::Out, false) if q.name == "flag" => push(&mut output_pointers, output("out_flag", &v)),
            ("OPERATION", Dir::In, false) => push(&mut setters, format!("c.op({v})")),
            ("REQUEST", Dir::Out, false) => push(&mut output_pointers, output("out_request", &v)),
            ("REQUEST", Dir::In, false) if !q.ctype.ends_with('*') => {
                push(&mut setters, format!("c.rec.request = {v}"))
            }
            ("PARTITION", Dir::In, false) if q.name == "partitions" => push(&mut setters, format!("c.partitions({v})")),
            ("PARTITION", Dir::In, false) if q.name == "partition" => push(&mut setters, format!("c.rec.aux = {v}")),
            ("MESSAGE", Dir::Out, false) => push(&mut output_pointers, output("out_message", &v)),
            ("MESSAGE", Dir::InOut, false) => push(&mut setters, handle_read("in_message", &v, "message handle")),
            ("STATUS", Dir::Out, false) => {
                let _ = writeln!(
                    status_substitutions,
                    "    // SAFETY: `{v}` is MPI_STATUS_IGNORE or writable, as {name} requires; `own_status`\n    \
                     // lives until this wrapper returns, after `c.exit`.\n    \
                     let {v} = unsafe {{ c.status({v}, own_status.as_mut_ptr()) }};",
                    name = p.name
                );
            }
            ("RANK" | "RANK_NNI", Dir::In, false) => match q.name {
                "dest" | "target_rank" => push(&mut setters, format!("c.peer({v})")),
                "source" if has_dest => push(&mut setters, format!("c.recv_peer({v})")),
                "source" => push(&mut setters, format!("c.peer({v})")),
                "root" => push(&mut setters, format!("c.root({v})")),
                _ => {}
            },
            ("TAG", Dir::In, false) => match q.name {
                "tag" | "sendtag" => push(&mut setters, format!("c.tag({v})")),
                "recvtag" => push(&mut setters, format!("c.recv_tag({v})")),
                _ => {}
            },
            // The send buffer, checksummed with `--check-buffers`.
            ("BUFFER", Dir::In, false) if q.name == "buf" => push(&mut setters, format!("c.buf({v})")),
            // The send half of `MPI_Isendrecv` and of collectives (the
            // root's `buffer` of a broadcast); a collective's receive
            // buffer, to see `MPI_IN_PLACE`.
            ("BUFFER", _, false) if q.name == "sendbuf" || (q.name == "buffer" && category == "Coll") => {
                push(&mut setters, format!("c.buf({v})"))
            }
            ("BUFFER", _, false) if q.name == "recvbuf" && category == "Coll" => {
                push(&mut setters, format!("c.recv_buf({v})"))
            }
            // Groups, datatypes and info objects made or freed (and the
            // datatype committed): the handle goes to `aux` (correctness
            // checks find the ones never freed).
            ("GROUP" | "DATATYPE" | "INFO", Dir::Out, false) => push(&mut output_pointers, output("out_handle", &v)),
            ("GROUP" | "DATATYPE" | "INFO", Dir::InOut, false) => {
                push(&mut setters, handle_read("in_handle", &v, "handle"))
            }
            ("DATATYPE", Dir::In, false) => match q.name {
                "datatype" | "sendtype" | "origin_datatype" => push(&mut setters, format!("c.datatype({v})")),
                "recvtype" | "result_datatype" => push(&mut setters, format!("c.recv_type({v})")),
                _ => {}
            },
            (k, Dir::In, arr) if k.contains("NUM_ELEM") => match (q.name, arr) {
                ("count" | "sendcount" | "origin_count", false) => {
                    push(&mut setters, format!("c.count({})", count_i64()))
                }
                ("recvcount" | "result_count", false) => push(&mut setters, format!("c.recv_count({})", count_i64())),
                ("sendcounts", true) => push(&mut setters, counts("send_counts", &v)),
                ("recvcounts", true) => push(&mut setters, counts("recv_counts", &v)),
                _ => {}
            },
            _ => {}
        }
    }
    let large = if p.large { "true" } else { "false" };
    let args = codegen::rust_args(p);
    let name = p.name;
    let (own_status, status_safety) = if status_substitutions.is_empty() {
        ("", "")
    } else {
        (
            "    let mut own_status = std::mem::MaybeUninit::<mpi_api::abi::MPI_Status>::zeroed();\n",
            "\n    // A status substituted for MPI_STATUS_IGNORE points to `own_status`, alive until the\n    \
             // end of this function.",
        )
    };
    let exit_code = if ret_type(p) == "::std::os::raw::c_int" { "rc" } else { "rc as i32" };
    format!(
        "    let mut c = crate::rec::Call::begin({idx}, crate::rec::Category::{category}, {large});\n\
         {own_status}    \
         if c.recording() {{\n{setters}{output_pointers}        c.enter();\n    }}\n{status_substitutions}    \
         // SAFETY: the application's arguments, valid as the MPI standard requires for {name},\n    \
         // passed on to {pname}, which requires the same.{status_safety}\n    \
         let rc = unsafe {{ crate::pmpi::{name}({args}) }};\n    \
         c.exit({exit_code});\n    rc",
        pname = p.pname(),
    )
}

/// Names `MPI_X` of the functions defined as `pub unsafe fn MPI_X(` in `path`.
fn scan_specials(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("pub unsafe fn MPI_"))
        .map(|rest| {
            format!("MPI_{}", rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>())
        })
        .collect()
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}
