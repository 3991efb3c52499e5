//! Build script of mpi-core.
//!
//! 1. Generates the C exports: for every procedure of the API table that has
//!    an implementation `pub unsafe fn MPI_X(...)` in `src/capi/`, an exported
//!    `PMPI_X` that calls it behind a panic guard, and an exported `MPI_X` that
//!    forwards to `PMPI_X`.
//!
//!    A procedure and its large-count twin (`MPI_X`/`MPI_X_c`, differing only
//!    in `int` or `MPI_Aint` counts and displacements that become `MPI_Count`
//!    or `MPI_Aint`) may share one definition: an item
//!    `pub unsafe fn MPI_X | MPI_X_c(...)` in a `twins!` block (the macro is
//!    in `src/capi/p2p.rs`), whose parameter types say `Count`, `Disp` or
//!    `Offset` where the two differ. This script parses the sources
//!    (`build/capi_scan.rs`, with `syn`, so line breaks never matter), reads
//!    such an item as the implementation of both, and fails the build
//!    unless the table says `MPI_X_c` is the large-count variant of `MPI_X`
//!    with the same parameters, differing only in those types. The generated
//!    exports call `capi::MPI_X` with the table's types, so the compiler
//!    checks every signature, hand-written or generated, against the
//!    standard's.
//! 2. Writes `mpi.h` (template + constants + C enumerations + prototypes) to
//!    `target/<profile>/include/mpi.h`, where `mpicc` looks for it.
//! 3. Generates the Fortran binding (`mpi_api::fortran`): the wrappers
//!    (`fortran.rs`, included by `src/fortran/`), `mpif.h` and the source of
//!    the `mpi` module (`mpi.f90`, which `mpifort` compiles) next to `mpi.h`.
//! 4. Sets the SONAME `libmpi.so.12` and makes `libmpi.so.12`,
//!    `libmpich.so.12` and MPICH's Fortran library names
//!    (`libmpichfort.so.12`, `libmpifort.so.12`) links to `libmpi.so`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mpi_api::{abi, codegen, fortran, table};

#[path = "build/capi_scan.rs"]
mod capi_scan;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=src/capi");
    println!("cargo:rerun-if-changed=include/mpi.h.in");
    println!("cargo:rerun-if-changed=api/data/mpi-api.tsv");
    println!("cargo:rerun-if-changed=api/src");

    let procs = table::procedures();
    let capi_scan::Implemented { names: implemented, twins } =
        capi_scan::scan_dir(&manifest.join("src/capi")).unwrap_or_else(|e| panic!("cannot read src/capi: {e}"));
    check_twins(&procs, &twins);

    // 1. Exports.
    let mut rs = String::new();
    let mut names = Vec::new();
    for p in procs.iter().filter(|p| !p.is_macro && implemented.contains(p.name)) {
        let params = codegen::rust_params(p);
        let args = codegen::rust_args(p);
        let ret = codegen::rust_ret(p);
        let pname = p.pname();
        // The C functions' contract is the MPI standard's for the procedure,
        // which is also the `# Safety` contract of `capi::MPI_X`: the
        // wrappers pass every argument on unchanged.
        let _ = writeln!(
            rs,
            "/// `{name}` behind the panic guard.\n///\n/// # Safety\n\
             /// The arguments meet the MPI standard's requirements for `{name}`.\n\
             #[no_mangle]\npub unsafe extern \"C\" fn {pname}({params}) -> {ret} {{\n    \
             crate::ffi::guard(\"{name}\", move || {{\n        \
             // SAFETY: the C caller meets the standard's requirements for `{name}`'s\n        \
             // arguments, the contract of `capi::{name}`; they are passed on unchanged.\n        \
             unsafe {{ crate::capi::{name}({args}) }}\n    }})\n}}\n\
             /// `{name}`: forwards to `{pname}`, so that a profiler's `{name}` can call it.\n///\n\
             /// # Safety\n/// The arguments meet the MPI standard's requirements for `{name}`.\n\
             #[no_mangle]\npub unsafe extern \"C\" fn {name}({params}) -> {ret} {{\n    \
             // SAFETY: `{pname}` has this function's contract (the standard's for `{name}`),\n    \
             // and the arguments are passed on unchanged.\n    unsafe {{ {pname}({args}) }}\n}}\n",
            name = p.name
        );
        names.push(p.name);
    }
    let unknown: Vec<_> = implemented.iter().filter(|n| !procs.iter().any(|p| &p.name == n)).collect();
    if !unknown.is_empty() {
        panic!("src/capi implements procedures missing from the API table: {unknown:?}");
    }
    let _ = writeln!(rs, "/// Every MPI procedure this library exports.\npub const EXPORTED: &[&str] = &{names:?};");
    std::fs::write(out.join("exports.rs"), rs).unwrap();

    // 2. mpi.h.
    let template = std::fs::read_to_string(manifest.join("include/mpi.h.in")).unwrap();
    let defines: String = abi::CONSTANTS.iter().map(|c| codegen::c_define(c) + "\n").collect();
    let enums: String = abi::C_ENUMS.iter().map(|e| codegen::c_enum(e) + "\n").collect();
    let mut protos = String::new();
    for p in procs.iter().filter(|p| !p.is_macro) {
        let _ = writeln!(protos, "{};", codegen::c_prototype(p, p.name));
        let _ = writeln!(protos, "{};", codegen::c_prototype(p, &p.pname()));
    }
    let header = template
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
        .replace("@CONSTANTS@", defines.trim_end())
        .replace("@ENUMS@", enums.trim_end())
        .replace("@PROTOTYPES@", protos.trim_end());
    let profile_dir = out.ancestors().nth(3).unwrap().to_path_buf();
    let inc = profile_dir.join("include");
    std::fs::create_dir_all(&inc).unwrap();
    write_if_changed(&inc.join("mpi.h"), &header);
    write_if_changed(&out.join("mpi.h"), &header);

    // 3. The Fortran binding: wrappers, `mpif.h`, the `mpi` module's source.
    let is_implemented = |n: &str| names.contains(&n);
    let (fortran, _) = fortran::rust_wrappers(&procs, &is_implemented);
    write_if_changed(&out.join("fortran.rs"), &fortran);
    let mpif = fortran::mpif_h(abi::CONSTANTS);
    write_if_changed(&inc.join("mpif.h"), &mpif);
    write_if_changed(&inc.join("mpi.f90"), &fortran::mpi_module(&mpif));
    write_if_changed(&inc.join("mpi_f08.f90"), &fortran::mpi_f08_module(&procs, &is_implemented, abi::CONSTANTS));

    // 4. SONAME and the names binaries look for.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi.so.12");
    for alias in ["libmpi.so.12", "libmpich.so.12", "libmpichfort.so.12", "libmpifort.so.12"] {
        let link = profile_dir.join(alias);
        let _ = std::fs::remove_file(&link);
        let _ = std::os::unix::fs::symlink("libmpi.so", &link);
    }
}

/// Each `twins!` pair must be a procedure and its large-count variant with
/// the same parameters, differing only where the first has `int` and the
/// second `MPI_Count` or `MPI_Aint`, or the first `MPI_Aint` and the second
/// `MPI_Count` (the types the macro's `Count`, `Disp` and `Offset` stand for).
fn check_twins(procs: &[table::Procedure], twins: &[(String, String)]) {
    let find = |n: &str| procs.iter().find(|p| p.name == n);
    for (a, b) in twins {
        let (Some(pa), Some(pb)) = (find(a), find(b)) else { continue };
        let same = pa.params.len() == pb.params.len()
            && pa.params.iter().zip(&pb.params).all(|(x, y)| {
                x.name == y.name
                    && x.suffix == y.suffix
                    && (x.ctype == y.ctype
                        || [("int", "MPI_Count"), ("int", "MPI_Aint"), ("MPI_Aint", "MPI_Count")]
                            .iter()
                            .any(|&(small, big)| x.base() == small && x.ctype.replace(small, big) == y.ctype))
            });
        // (The table marks most `_c` procedures `large`, not all: the window
        // constructors' `_c` forms only widen `disp_unit`.)
        if !(!pa.large && *b == format!("{a}_c") && same) {
            panic!("twins! pairs {a} with {b}, which is not its large-count variant differing only in count types");
        }
    }
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}
