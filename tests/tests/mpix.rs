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

/// Revocation reaches ranks blocked in a receive, a barrier and waits of
/// nonblocking operations; agree, iagree and shrink work on the revoked
/// communicator (no process fails).
#[test]
fn revoke_agree_and_shrink_without_failures() {
    each_size("mpix_ulfm", &[1, 2, 3, 4, 7], "mpix_ulfm OK");
    // Over TCP between (simulated) hosts too.
    let exe = compile("mpix_ulfm", Compiler::Ours);
    run(Launcher::Ours, 4, &exe, &[], &[("MPICORE_FAKE_HOSTS", "2")], T).assert_ok("mpix_ulfm OK on 4 ranks");
}
