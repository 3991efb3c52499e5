//! Build script of `libmpi_abi.so` (the MPI-5 standard ABI).
//!
//! 1. Finds the procedures `libmpi.so.12` implements (the same scan of
//!    `mpi-core/src/capi` as mpi-core's build script) and generates, from
//!    the API table and `mpi_api::stdabi`, an entry point for each that the
//!    standard ABI has (`boundary.rs`: `PMPI_X` converting and calling the
//!    MPICH procedure, `MPI_X` forwarding to `PMPI_X`) and the conversions
//!    of predefined handles and constants (`conv.rs`). The procedures of
//!    [`HANDWRITTEN`] have bodies in `src/handwritten.rs` (callbacks need
//!    trampolines); those no rule covers are left out, listed in
//!    `left_out.txt` next to the library and in `LEFT_OUT`.
//! 2. Writes the header: `target/<profile>/include/mpi_abi.h`, and the same
//!    as `include/mpi_abi/mpi.h` (what `mpicc -mpi-abi` puts first on the
//!    include path, so programs `#include <mpi.h>` as the standard says).
//! 3. Sets the SONAME `libmpi_abi.so.1` and links `libmpi_abi.so.1` to the
//!    library.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mpi_api::stdabi::codegen;
use mpi_api::table;

#[path = "../build/capi_scan.rs"]
mod capi_scan;

/// Procedures whose standard-ABI bodies are written by hand.
const HANDWRITTEN: &[&str] = &[
    "MPI_Abi_get_version",
    "MPI_Op_create",
    "MPI_Op_create_c",
    "MPI_Comm_create_errhandler",
    "MPI_Win_create_errhandler",
    "MPI_File_create_errhandler",
    "MPI_Session_create_errhandler",
    "MPI_Comm_create_keyval",
    "MPI_Type_create_keyval",
    "MPI_Win_create_keyval",
    "MPI_Keyval_create",
    "MPI_Grequest_start",
    "MPI_Comm_idup",
    "MPI_Comm_idup_with_info",
    "MPI_Register_datarep",
    "MPI_Register_datarep_c",
    "MPI_Pcontrol",
    "MPI_Status_c2f",
    "MPI_Status_f2c",
    "MPI_Comm_toint",
    "MPI_Comm_fromint",
    "MPI_Errhandler_toint",
    "MPI_Errhandler_fromint",
    "MPI_File_toint",
    "MPI_File_fromint",
    "MPI_Group_toint",
    "MPI_Group_fromint",
    "MPI_Info_toint",
    "MPI_Info_fromint",
    "MPI_Message_toint",
    "MPI_Message_fromint",
    "MPI_Op_toint",
    "MPI_Op_fromint",
    "MPI_Request_toint",
    "MPI_Request_fromint",
    "MPI_Session_toint",
    "MPI_Session_fromint",
    "MPI_Type_toint",
    "MPI_Type_fromint",
    "MPI_Win_toint",
    "MPI_Win_fromint",
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let core = manifest.parent().unwrap().to_path_buf();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=../src/capi");
    println!("cargo:rerun-if-changed=../api/data/mpi-api.tsv");
    println!("cargo:rerun-if-changed=../api/src");
    println!("cargo:rerun-if-changed=include/mpi_abi.h.in");

    let procs = table::procedures();
    let found = capi_scan::scan_dir(&core.join("src/capi")).unwrap_or_else(|e| panic!("cannot read src/capi: {e}"));
    // The toint/fromint pairs are the standard ABI's own (libmpi.so.12 has
    // a few of them); every hand-written one is exported.
    let implemented = |n: &str| found.names.contains(n) || HANDWRITTEN.contains(&n);
    for h in HANDWRITTEN {
        assert!(procs.iter().any(|p| p.name == *h), "{h} is not in the API table");
    }
    let b = codegen::boundary(&procs, &implemented, HANDWRITTEN);
    let mut left = String::new();
    for (n, why) in &b.left_out {
        let _ = writeln!(left, "{n}\t{why}");
    }
    let code = format!(
        "{}\n/// Procedures of the standard ABI that libmpi.so.12 has but this library leaves out, and why.\n\
         pub const LEFT_OUT: &[(&str, &str)] = &{:?};\n",
        b.code, b.left_out
    );
    write_if_changed(&out.join("boundary.rs"), &code);
    write_if_changed(&out.join("conv.rs"), &codegen::conversions());
    write_if_changed(&out.join("pools.rs"), &pools());

    let template = std::fs::read_to_string(manifest.join("include/mpi_abi.h.in")).unwrap();
    let header = codegen::header(&template, &procs, env!("CARGO_PKG_VERSION"));
    let profile_dir = out.ancestors().nth(3).unwrap().to_path_buf();
    let inc = profile_dir.join("include");
    std::fs::create_dir_all(inc.join("mpi_abi")).unwrap();
    write_if_changed(&inc.join("mpi_abi.h"), &header);
    write_if_changed(&inc.join("mpi_abi/mpi.h"), &header);
    write_if_changed(&profile_dir.join("libmpi_abi.left_out.txt"), &left);

    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi_abi.so.1");
    let link = profile_dir.join("libmpi_abi.so.1");
    let _ = std::fs::remove_file(&link);
    let _ = std::os::unix::fs::symlink("libmpi_abi.so", &link);
}

/// The trampoline tables of `src/handwritten.rs`: one instance of each
/// generic trampoline per slot of its pool.
fn pools() -> String {
    const POOL: usize = 256;
    let mut s = String::new();
    for (name, ty, f) in [
        ("OP_TRAMPS", "OpTramp", "op_tramp"),
        ("OP_TRAMPS_C", "OpTrampC", "op_tramp_c"),
        ("COMM_EH_TRAMPS", "ErrTramp", "comm_eh_tramp"),
        ("WIN_EH_TRAMPS", "ErrTramp", "win_eh_tramp"),
        ("SESSION_EH_TRAMPS", "ErrTramp", "session_eh_tramp"),
        ("FILE_EH_TRAMPS", "FileErrTramp", "file_eh_tramp"),
    ] {
        let items: Vec<String> = (0..POOL).map(|i| format!("{f}::<{i}>")).collect();
        let _ = writeln!(s, "static {name}: [{ty}; {POOL}] = [{}];", items.join(", "));
    }
    s
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}
