//! Fortran programs under the shim: each Fortran MPI call is recorded once
//! (as the C call the MPI's Fortran layer makes), with its call site in the
//! `.f90` source, on Debian's MPICH and on this project's library.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use trace_format::{Event, Trace};

/// Compiles `tests/fortran/<src>` with `fc` into `dir`.
fn compile(fc: &Path, src: &str, dir: &Path) -> PathBuf {
    let have = Command::new("gfortran").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(have, "gfortran is not installed: apt install gfortran");
    let exe = dir.join(src.trim_end_matches(".f90"));
    let out = Command::new(fc)
        .env_remove("LD_LIBRARY_PATH")
        .args(["-O0", "-g", "-w"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fortran").join(src))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", fc.display()));
    assert!(out.status.success(), "compiling {src}: {}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// The rows of `call` on rank `r`, with their sites symbolized as
/// (file name, line).
fn sites(t: &Trace, r: i32, call: &str) -> Vec<(String, u32)> {
    let meta = t.ranks[&r].meta.as_ref().unwrap();
    let mut sym = trace_format::Symbolizer::with_debug_dir(None);
    t.rank_events(r)
        .iter()
        .filter(|e: &&Event| e.is_call(call))
        .map(|e| {
            let s = sym.site(meta, e.site.unwrap());
            let file = s.file.as_deref().unwrap_or("?").rsplit('/').next().unwrap().to_string();
            (file, s.line.unwrap_or(0))
        })
        .collect()
}

fn check(t: &Trace, file: &str) {
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    let f = |line: u32, n: usize| vec![(file.to_string(), line); n];
    for r in 0..2 {
        assert_eq!(sites(t, r, "MPI_Init"), f(4, 1), "rank {r}");
        assert_eq!(sites(t, r, "MPI_Comm_rank"), f(5, 1), "rank {r}");
        assert_eq!(sites(t, r, "MPI_Allreduce"), f(15, 1), "rank {r}");
        assert_eq!(sites(t, r, "MPI_Barrier"), f(16, 1), "rank {r}");
        assert_eq!(sites(t, r, "MPI_Finalize"), f(18, 1), "rank {r}");
    }
    assert_eq!(sites(t, 0, "MPI_Send"), f(10, 3));
    assert_eq!(sites(t, 1, "MPI_Recv"), f(12, 3));
    assert!(sites(t, 0, "MPI_Recv").is_empty() && sites(t, 1, "MPI_Send").is_empty());
}

/// On Debian's MPICH (built with `mpif90.mpich`).
#[test]
fn fortran_calls_on_mpich() {
    let dir = common::scratch("fortran-mpich");
    let exe = compile(Path::new("mpif90.mpich"), "traced.f90", &dir);
    let tdir = dir.join("trace");
    let out = common::run(2, &exe, &[], &tdir, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("sum 3"));
    check(&Trace::open(&tdir).unwrap(), "traced.f90");
}

/// On this project's library (built with its `mpifort`), through `mpif.h`
/// and through `use mpi_f08`.
#[test]
fn fortran_calls_on_the_project_mpi() {
    for src in ["traced.f90", "traced_f08.f90"] {
        traced_on_project_mpi(src);
    }
}

fn traced_on_project_mpi(src: &str) {
    let (mpicc, mpirun) = common::project_mpi();
    let dir = common::scratch(&format!("fortran-own-{src}"));
    let exe = compile(&mpicc.with_file_name("mpifort"), src, &dir);
    let tdir = dir.join("trace");
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(&mpirun)
        .args(["-n", "2", "env"])
        .arg(format!("LD_PRELOAD={}", common::shim().display()))
        .arg(format!("MPITRACE_DIR={}", tdir.display()))
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("sum 3"));
    check(&Trace::open(&tdir).unwrap(), src);
}
