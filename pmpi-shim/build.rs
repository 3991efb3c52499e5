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
//! Conversion helpers (`MPI_Wtime`, `*_c2f`, `*_fromint`, `MPI_Aint_add`...)
//! are wrapped too but forward without recording.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mpi_api::codegen;
use mpi_api::table::{self, Dir, Param, Procedure};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=src/special.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let specials = scan_specials(&manifest.join("src/special.rs"));
    let procs: Vec<Procedure> = table::procedures();

    let mut names = String::new();
    let mut ids = String::new();
    let mut pmpi = String::new();
    let mut exports = String::new();
    let mut imps = String::new();
    for (idx, p) in procs.iter().enumerate() {
        let _ = writeln!(names, "    c\"P{}\",", p.name);
        let _ = writeln!(ids, "    pub const {}: usize = {idx};", p.name);
        if p.is_macro {
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
             match crate::next::get({idx}) {{\n        \
             // SAFETY: the pointer was resolved for PMPI_{rest} of the table, whose C\n        \
             // signature the generated Rust signature matches.\n        \
             Some(f) => unsafe {{ std::mem::transmute::<*mut std::ffi::c_void, unsafe extern \"C\" fn({params}) -> {ret}>(f)({args}) }},\n        \
             None => {missing},\n    }}\n}}",
            rest = &name[4..],
            missing = missing_value(p),
        );
        let target = if is_passthrough(name) { format!("crate::pmpi::{name}") } else { format!("crate::imp::{name}") };
        // The exported symbol.
        if is_passthrough(name) {
            let _ = writeln!(
                exports,
                "#[no_mangle]\npub unsafe extern \"C\" fn {name}({params}) -> {ret} {{\n    \
                 // SAFETY: same contract as the caller's.\n    unsafe {{ {target}({args}) }}\n}}"
            );
            continue;
        }
        let _ = writeln!(
            exports,
            "#[cfg(target_arch = \"x86_64\")]\n#[no_mangle]\n#[unsafe(naked)]\npub unsafe extern \"C\" fn {name}() {{\n    \
             core::arch::naked_asm!(crate::site::TRAMPOLINE!(), set = sym crate::site::set_site, imp = sym {target});\n}}\n\
             #[cfg(not(target_arch = \"x86_64\"))]\n#[no_mangle]\npub unsafe extern \"C\" fn {name}({params}) -> {ret} {{\n    \
             // SAFETY: same contract as the caller's.\n    unsafe {{ {target}({args}) }}\n}}"
        );
        // imp::MPI_X: the recording wrapper.
        let body = if specials.contains(name) {
            format!("    // SAFETY: same contract as the caller's.\n    unsafe {{ crate::special::{name}({args}) }}")
        } else {
            generic_body(idx, p)
        };
        let _ = writeln!(
            imps,
            "#[allow(unused_mut, unused_variables, clippy::unnecessary_cast)]\npub unsafe extern \"C\" fn {name}({params}) -> {ret} {{\n{body}\n}}"
        );
    }
    let unknown: Vec<_> = specials.iter().filter(|n| !procs.iter().any(|p| &p.name == n)).collect();
    assert!(unknown.is_empty(), "src/special.rs defines procedures missing from the table: {unknown:?}");

    let mut rs = String::new();
    let _ = writeln!(
        rs,
        "/// `PMPI_X` names of the table, indexed by call id.\npub static PNAMES: [&std::ffi::CStr; {}] = [\n{names}];",
        procs.len()
    );
    let _ = writeln!(rs, "/// Call ids (indices in the API table).\n#[allow(non_upper_case_globals, dead_code)]\npub mod ids {{\n{ids}}}");
    let _ = writeln!(rs, "/// The next definitions of the PMPI procedures.\n#[allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]\npub mod pmpi {{\n{pmpi}}}");
    let _ = writeln!(rs, "/// The recording wrappers.\n#[allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]\npub mod imp {{\n{imps}}}");
    let _ = writeln!(rs, "/// The exported MPI symbols.\n#[allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]\npub mod exports {{\n{exports}}}");
    write_if_changed(&out.join("wrappers.rs"), &rs);
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
    let cat = category(p.name);
    let id = |q: &Param| codegen::rust_ident(q.name);
    let mut pre = String::new(); // field setters, run only when recording
    let mut post = String::new(); // output pointers, handed over before the call
    let mut subst = String::new(); // argument substitutions (statuses)
    let mut seen_comm = false;
    let has_dest = p.params.iter().any(|q| q.name == "dest");
    for q in &p.params {
        let v = id(q);
        let set = |s: &mut String, what: String| {
            let _ = writeln!(s, "        {what};");
        };
        match (q.kind, q.dir, is_array(q)) {
            ("COMMUNICATOR", Dir::In, false) if !seen_comm => {
                seen_comm = true;
                set(&mut pre, format!("c.comm({v})"));
            }
            // The communicator of MPI_Comm_idup is not usable before the
            // request completes: it is registered when first used.
            ("COMMUNICATOR", Dir::Out, false) if !p.name.contains("_idup") => set(&mut post, format!("c.out_comm = {v}")),
            ("COMMUNICATOR", Dir::InOut, false) => set(&mut pre, format!("// SAFETY: the application passes a valid handle pointer.\n        unsafe {{ c.freeing_comm({v}) }}")),
            ("WINDOW", Dir::In, false) => set(&mut pre, format!("c.win({v})")),
            ("WINDOW", Dir::Out, false) => set(&mut post, format!("c.out_win = {v}")),
            ("WINDOW", Dir::InOut, false) => set(&mut pre, format!("// SAFETY: the application passes a valid handle pointer.\n        unsafe {{ c.freeing_win({v}) }}")),
            ("LOGICAL", Dir::Out, false) if q.name == "flag" => set(&mut post, format!("c.out_flag = {v}")),
            ("OPERATION", Dir::In, false) => set(&mut pre, format!("c.op({v})")),
            ("REQUEST", Dir::Out, false) => set(&mut post, format!("c.out_request = {v}")),
            ("REQUEST", Dir::In, false) if !q.ctype.ends_with('*') => set(&mut pre, format!("c.rec.request = {v}")),
            ("PARTITION", Dir::In, false) if q.name == "partitions" => set(&mut pre, format!("c.partitions({v})")),
            ("PARTITION", Dir::In, false) if q.name == "partition" => set(&mut pre, format!("c.rec.aux = {v}")),
            ("MESSAGE", Dir::Out, false) => set(&mut post, format!("c.out_message = {v}")),
            ("MESSAGE", Dir::InOut, false) => set(&mut pre, format!("// SAFETY: the application passes a valid handle pointer.\n        unsafe {{ c.in_message({v}) }}")),
            ("STATUS", Dir::Out, false) => {
                let _ = writeln!(subst, "    let {v} = c.status({v}, own_status.as_mut_ptr());");
            }
            ("RANK" | "RANK_NNI", Dir::In, false) => match q.name {
                "dest" | "target_rank" => set(&mut pre, format!("c.peer({v})")),
                "source" if has_dest => set(&mut pre, format!("c.recv_peer({v})")),
                "source" => set(&mut pre, format!("c.peer({v})")),
                "root" => set(&mut pre, format!("c.root({v})")),
                _ => {}
            },
            ("TAG", Dir::In, false) => match q.name {
                "tag" | "sendtag" => set(&mut pre, format!("c.tag({v})")),
                "recvtag" => set(&mut pre, format!("c.recv_tag({v})")),
                _ => {}
            },
            ("DATATYPE", Dir::In, false) => match q.name {
                "datatype" | "sendtype" | "origin_datatype" => set(&mut pre, format!("c.datatype({v})")),
                "recvtype" | "result_datatype" => set(&mut pre, format!("c.recv_type({v})")),
                _ => {}
            },
            (k, Dir::In, arr) if k.contains("NUM_ELEM") => match (q.name, arr) {
                ("count" | "sendcount" | "origin_count", false) => set(&mut pre, format!("c.count({v} as i64)")),
                ("recvcount" | "result_count", false) => set(&mut pre, format!("c.recv_count({v} as i64)")),
                ("sendcounts", true) => set(&mut pre, format!("c.send_counts = {v} as *const std::ffi::c_void")),
                ("recvcounts", true) => set(&mut pre, format!("c.recv_counts = {v} as *const std::ffi::c_void")),
                _ => {}
            },
            _ => {}
        }
    }
    let large = if p.large { "true" } else { "false" };
    let args = codegen::rust_args(p);
    format!(
        "    let mut c = crate::rec::Call::begin({idx}, crate::rec::Cat::{cat}, {large});\n    \
         let mut own_status = std::mem::MaybeUninit::<mpi_api::abi::MPI_Status>::zeroed();\n    \
         if c.on() {{\n{pre}{post}        c.enter();\n    }}\n{subst}    \
         // SAFETY: same contract as the caller's; substituted statuses point to live locals.\n    \
         let rc = unsafe {{ crate::pmpi::{name}({args}) }};\n    \
         c.exit(rc as i32);\n    rc",
        name = p.name
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
