//! MPICH's `MPIX_` extensions: error class deletion, GPU queries, extended
//! generalized requests, and fault tolerance (ULFM: revoke, shrink, agree,
//! failure acknowledgement). C programs under the project's mpirun.

use std::time::Duration;

use system_tests::{compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(120);

fn each_size(name: &str, sizes: &[usize], expect: &str) {
    system_tests::each_size_says_ranks(name, sizes, expect, T);
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

/// A real failure, tolerated when asked (`MPICORE_ULFM=1`, or mpirun's
/// `-disable-auto-cleanup`): the last rank kills itself; the survivors see
/// the failure, agree on it, revoke, shrink, and compute on the survivors;
/// point-to-point with the dead rank fails, any-source receives until the
/// failure is acknowledged. On one host and over TCP. Without the opt-in
/// the job ends as before.
#[test]
fn survivors_of_a_killed_rank_shrink_and_go_on() {
    let exe = compile("mpix_fail", Compiler::Ours);
    for (n, hosts) in [(2, "1"), (4, "1"), (4, "2"), (4, "4"), (5, "1")] {
        let env = [("MPICORE_ULFM", "1"), ("MPICORE_FAKE_HOSTS", hosts)];
        let r = run(Launcher::Ours, n, &exe, &[], &env, T);
        assert!(r.stdout.contains(&format!("mpix_fail OK: {} survivors", n - 1)), "{r}");
        assert!(!r.stderr.contains("CHECK FAILED"), "{r}");
        assert!(r.stderr.contains(&format!("rank {} ", n - 1)) && r.stderr.contains("goes on"), "{r}");
        // The job reports the failure (128 + SIGKILL), as MPICH does.
        assert_eq!(r.code, Some(137), "{r}");
    }
    // The launcher option, given to mpirun.
    let out = std::process::Command::new(system_tests::bin_dir().join("mpirun"))
        .args(["-disable-auto-cleanup", "-n", "3"])
        .arg(&exe)
        .env("MPIEXEC_TIMEOUT", "60")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("mpix_fail OK: 2 survivors"), "{out:?}");
    // Without the opt-in, the failure ends the job.
    let r = run(Launcher::Ours, 3, &exe, &[], &[], T);
    assert!(!r.stdout.contains("mpix_fail OK"), "{r}");
    assert_ne!(r.code, Some(0), "{r}");
}
