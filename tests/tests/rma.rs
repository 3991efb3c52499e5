//! One-sided communication (chapter 11): windows of every flavor, RMA
//! operations and every synchronization mode, as C programs on 1..8 ranks
//! (oversubscribed on this machine's cores) under the project's mpirun,
//! each under a timeout; and a window program built with MPICH's compiler.

use std::time::Duration;

use system_tests::{compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(120);

fn each_size(name: &str, sizes: &[usize], expect: &str) {
    let exe = compile(name, Compiler::Ours);
    for &n in sizes {
        run(Launcher::Ours, n, &exe, &[], &[], T).assert_ok(&format!("{expect} on {n} ranks"));
    }
}

/// Put/Get rings, Accumulate SUM onto rank 0, vector types on either side,
/// Rput/Rget, 800 KB transfers (rendezvous) on an `MPI_Win_allocate` window.
#[test]
fn fence_put_get_accumulate() {
    each_size("rma_fence", &[1, 2, 3, 4, 5, 8], "rma_fence OK");
}
