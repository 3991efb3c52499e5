//! A real Fortran workload on this library: `tests/fortran/cg.F90`, a
//! conjugate-gradient solver for the 2-D Poisson equation on a 2-D process
//! grid (halo exchange with MPI_Isend/MPI_Irecv/MPI_Waitall and a vector
//! datatype, dot products with MPI_Allreduce), built with `use mpi`.
//!
//! The same problem solved on 1, 2, 4 and 8 ranks must give the same
//! answer up to rounding, and the answer must be the right one: the
//! right-hand side is chosen so that the discrete solution is known exactly
//! (see the program), and the program prints its largest error. A halo
//! exchange that delivers the wrong rows or columns changes the matrix (the
//! error then stays near the size of the solution, 1/16); a dot product that
//! is not summed over all ranks changes every step length. Either breaks
//! these checks.

use std::time::Duration;

use system_tests::{compile_fortran, run, Compiler, FortranBinding, Launcher};

const T: Duration = Duration::from_secs(60);

/// Grid points per side: prime, so every decomposition (2x1, 2x2, 4x2) has
/// blocks of unequal size.
const N: usize = 47;
/// Iterations: enough to cut the residual by a factor of about 450 (from 1,
/// since x starts at 0) but not so many that it nears the rounding floor,
/// where the residuals of different decompositions stop agreeing.
const ITERS: usize = 40;

/// Relative tolerances between runs on different rank counts (or
/// libraries). Only the order of the sums in the dot products differs; the
/// checksum (a weighted sum of the solution) then differs by about 1e-15.
/// The residual |b - Ax| / |b| is about 2e-3, a difference of nearly equal
/// numbers, so the same rounding shows up about 500 times larger in it (up
/// to 1.4e-11 was seen).
const CHECKSUM_TOL: f64 = 1e-10;
const RESIDUAL_TOL: f64 = 1e-9;

/// What the program printed.
#[derive(Debug)]
struct Answer {
    ranks: usize,
    iters: usize,
    residual: f64,
    checksum: f64,
    error: f64,
}

/// Runs `exe` on `n` ranks of our launcher and parses its line
/// `cg: n=.. ranks=.. iters=.. residual=.. checksum=.. error=.. time=..`.
fn solve(exe: &std::path::Path, n: usize, args: &[&str]) -> Answer {
    let r = run(Launcher::Ours, n, exe, args, &[], T);
    r.assert_ok("cg: ");
    let line = r.stdout.lines().find(|l| l.starts_with("cg: ")).unwrap();
    let field = |key: &str| -> &str {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key).and_then(|w| w.strip_prefix('=')))
            .unwrap_or_else(|| panic!("no {key}= in `{line}`"))
    };
    let num = |key: &str| -> f64 { field(key).parse().unwrap_or_else(|e| panic!("{key} in `{line}`: {e}")) };
    assert_eq!(field("n"), N.to_string(), "{line}");
    Answer {
        ranks: field("ranks").parse().unwrap(),
        iters: field("iters").parse().unwrap(),
        residual: num("residual"),
        checksum: num("checksum"),
        error: num("error"),
    }
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// A fixed-iteration solve converged as far as it should (absolute bounds,
/// so that one wrong run on its own fails too).
fn assert_converged(a: &Answer) {
    assert_eq!(a.iters, ITERS, "{a:?}");
    // Measured 2.2e-3 and 5.7e-6. Broken copies of the program gave, on 4
    // ranks: sending the row next to the edge row north, 1.1e-2 and 3.7e-4;
    // no halo exchange, 1.6 and 4.3e-2; dot products not summed over the
    // ranks, 256 and 8.9e-2.
    assert!(a.residual < 5e-3, "residual not reduced: {a:?}");
    assert!(a.error < 2e-5, "wrong solution: {a:?}");
    // The solution is positive, at most 1/16, weighted by 1.0..2.0 over
    // 47 x 47 points: its checksum is about 96.
    assert!((90.0..100.0).contains(&a.checksum), "{a:?}");
}

fn assert_same(a: &Answer, reference: &Answer) {
    assert!(rel(a.checksum, reference.checksum) < CHECKSUM_TOL, "checksum differs:\n{a:?}\n{reference:?}");
    assert!(rel(a.residual, reference.residual) < RESIDUAL_TOL, "residual differs:\n{a:?}\n{reference:?}");
}

#[test]
fn same_answer_on_1_2_4_8_ranks() {
    let exe = compile_fortran("cg", Compiler::Ours, FortranBinding::Module);
    let (n, iters) = (N.to_string(), ITERS.to_string());
    let args = [n.as_str(), iters.as_str()];
    let one = solve(&exe, 1, &args);
    assert_converged(&one);
    for n in [2, 4, 8] {
        let a = solve(&exe, n, &args);
        assert_eq!(a.ranks, n);
        assert_converged(&a);
        assert_same(&a, &one);
    }
}

/// Built with MPICH's `mpif90.mpich` (its `mpi` module, `libmpifort`), run
/// on this library by our launcher: the same answer as our own build.
#[test]
fn mpich_built_cg_gives_the_same_answer() {
    let (n, iters) = (N.to_string(), ITERS.to_string());
    let args = [n.as_str(), iters.as_str()];
    let ours = solve(&compile_fortran("cg", Compiler::Ours, FortranBinding::Module), 1, &args);
    let theirs = solve(&compile_fortran("cg", Compiler::Mpich, FortranBinding::Module), 4, &args);
    assert_eq!(theirs.ranks, 4);
    assert_converged(&theirs);
    assert_same(&theirs, &ours);
}

/// With a tolerance the solver stops by itself, early, and the true residual
/// recomputed from x is near the tolerance (the recurrence's residual, which
/// the stopping test uses, drifts a little from it).
#[test]
fn tolerance_stops_early() {
    let exe = compile_fortran("cg", Compiler::Ours, FortranBinding::Module);
    let a = solve(&exe, 4, &[&N.to_string(), "1000", "1e-8"]);
    assert!(a.iters > ITERS && a.iters < 200, "{a:?}");
    assert!(a.residual < 1e-7, "{a:?}");
    assert!(a.error < 1e-9, "{a:?}");
}
