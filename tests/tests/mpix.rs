//! MPICH's `MPIX_` extensions: error class deletion, GPU queries, extended
//! generalized requests, and fault tolerance (ULFM: revoke, shrink, agree,
//! failure acknowledgement). C programs under the project's mpirun.

use std::time::Duration;

use system_tests::{compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(120);

fn each_size(name: &str, sizes: &[usize], expect: &str) {
    let exe = compile(name, Compiler::Ours);
    for &n in sizes {
        run(Launcher::Ours, n, &exe, &[], &[], T).assert_ok(&format!("{expect} on {n} ranks"));
    }
}

#[test]
fn error_classes_deleted_and_no_gpu_support() {
    each_size("mpix_misc", &[1, 2], "mpix_misc OK");
}

#[test]
fn extended_generalized_requests_are_polled_and_waited() {
    each_size("mpix_greq", &[1, 2, 3], "mpix_greq OK");
}
