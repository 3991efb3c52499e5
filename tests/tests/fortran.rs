//! Fortran programs (`tests/fortran/`) on this library: built with the
//! project's `mpifort` through `mpif.h`, `use mpi` and `use mpi_f08`, and
//! built with MPICH's `mpif90.mpich` (MPICH's Fortran ABI:
//! `libmpichfort.so.12`, its `mpif.h` and `mpi.mod`) and run here unchanged.

use std::time::Duration;

use system_tests::{compile_fortran, run, Compiler, FortranBinding, Launcher};

const T: Duration = Duration::from_secs(120);

fn each_size(c: Compiler, b: FortranBinding, sizes: &[usize]) {
    let exe = compile_fortran("basics", c, b);
    let what = if b == FortranBinding::F08 { "fortran f08 OK" } else { "fortran OK" };
    for &n in sizes {
        let r = run(Launcher::Ours, n, &exe, &[], &[], T);
        r.assert_ok(&format!("{what} on {n} ranks"));
        // MPICH's `mpi_f08` claims subarray support: a nonblocking call
        // takes a non-contiguous section (as a datatype describing it), and
        // one whose count is not its number of elements is refused.
        if c == Compiler::Mpich && b == FortranBinding::F08 {
            assert!(r.stdout.contains("nonblocking section sent\n"), "{r}");
            assert!(r.stdout.contains("nonblocking section of another count refused: class 1\n"), "{r}");
        }
        assert!(!r.stderr.contains("has different size"), "{r}");
        assert!(!r.stderr.contains("CHECK FAILED"), "{r}");
    }
}

#[test]
fn mpif_h_programs_run() {
    each_size(Compiler::Ours, FortranBinding::MpifH, &[1, 2, 3, 4, 8]);
}

#[test]
fn use_mpi_programs_run() {
    each_size(Compiler::Ours, FortranBinding::Module, &[1, 2, 5]);
}

#[test]
fn use_mpi_f08_programs_run() {
    each_size(Compiler::Ours, FortranBinding::F08, &[1, 2, 4, 7]);
}

/// Built against MPICH (its headers, module and libraries), run here.
#[test]
fn mpich_built_programs_run_unchanged() {
    each_size(Compiler::Mpich, FortranBinding::MpifH, &[1, 4]);
    each_size(Compiler::Mpich, FortranBinding::Module, &[3]);
    each_size(Compiler::Mpich, FortranBinding::F08, &[1, 2, 5]);
}

/// The wrappers print their command; `mpif90` and `mpif77` are `mpifort`.
#[test]
fn wrappers_show_their_command() {
    system_tests::ensure_built();
    for w in ["mpifort", "mpif90", "mpif77"] {
        let out = std::process::Command::new(system_tests::bin_dir().join(w)).arg("-show").output().unwrap();
        let line = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && line.starts_with("gfortran ") && line.contains("-lmpi"), "{w}: {line}");
        assert!(line.contains("-fallow-argument-mismatch"), "{w}: {line}");
    }
}

/// Generalized requests with Fortran callbacks; spawning with argument
/// lists (blank-terminated string arrays), `MPI_ARGV_NULL` and
/// `MPI_COMM_SPAWN_MULTIPLE`; built here and with MPICH.
#[test]
fn callbacks_and_spawn() {
    for (c, b, sizes) in [
        (Compiler::Ours, FortranBinding::MpifH, &[1, 2][..]),
        (Compiler::Ours, FortranBinding::Module, &[2][..]),
        (Compiler::Mpich, FortranBinding::Module, &[1][..]),
    ] {
        let exe = compile_fortran("callbacks", c, b);
        for &n in sizes {
            let r = run(Launcher::Ours, n, &exe, &[], &[], T);
            r.assert_ok(&format!("fortran callbacks OK on {n} ranks"));
            assert!(!r.stderr.contains("CHECK FAILED"), "{r}");
        }
    }
}
