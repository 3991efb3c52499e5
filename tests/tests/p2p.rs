//! Point-to-point end to end: C programs on 1..8 ranks (oversubscribed on 2
//! cores), under the project's mpirun.

use std::time::Duration;

use system_tests::{compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(90);

fn each_size(name: &str, sizes: &[usize], expect: &str) {
    let exe = compile(name, Compiler::Ours);
    for &n in sizes {
        run(Launcher::Ours, n, &exe, &[], &[], T).assert_ok(expect);
    }
}

#[test]
fn basic_values_ordering_and_self() {
    each_size("p2p_basic", &[1, 2, 3, 8], "p2p_basic OK");
}

#[test]
fn blocking_receive_fast_path() {
    each_size("p2p_direct", &[2, 3, 4], "p2p_direct OK");
    let exe = compile("p2p_direct", Compiler::Ours);
    run(Launcher::Ours, 2, &exe, &[], &[("MPICORE_BIND", "none"), ("MPICORE_OVERSUBSCRIBED", "1")], T)
        .assert_ok("p2p_direct OK");
}

#[test]
fn send_modes() {
    each_size("modes", &[2, 4], "modes OK");
}

#[test]
fn probes_and_matched_probes() {
    each_size("probe", &[2, 5], "probe OK");
    each_size("status_error_field", &[2], "status_error_field OK");
}

/// Null and inactive requests complete with an empty status, MPI_ERROR =
/// MPI_SUCCESS included, from every single-completion call (MPICH suite:
/// pt2pt/rqstatus).
#[test]
fn empty_status_of_null_and_inactive_requests() {
    each_size("status_empty", &[1, 2], "status_empty OK");
}

#[test]
fn cancel() {
    each_size("cancel", &[2, 3], "cancel OK");
}

#[test]
fn generalized_requests() {
    each_size("grequest", &[1, 2, 3], "grequest OK");
}

#[test]
fn fortran_status_conversions() {
    each_size("status_f", &[2], "status_f OK");
}

#[test]
fn persistent_requests() {
    each_size("persistent", &[2, 4], "persistent OK");
}

#[test]
fn waitsome_waitany_testsome() {
    each_size("waitsome", &[2, 6], "waitsome OK");
}

#[test]
fn errors_return_right_classes() {
    each_size("errors", &[2, 3], "errors OK");
}

#[test]
fn large_messages() {
    each_size("large", &[2], "large OK");
}

#[test]
fn large_messages_without_cma_stream_through_the_ring() {
    let exe = compile("large", Compiler::Ours);
    let r = run(Launcher::Ours, 2, &exe, &[], &[("MPICORE_NO_CMA", "1")], T);
    r.assert_ok("large OK");
    let exe = compile("modes", Compiler::Ours);
    run(Launcher::Ours, 2, &exe, &[], &[("MPICORE_NO_CMA", "1")], T).assert_ok("modes OK");
}

#[test]
fn message_over_2_gib() {
    let exe = compile("large", Compiler::Ours);
    run(Launcher::Ours, 2, &exe, &["huge"], &[], Duration::from_secs(180)).assert_ok("large OK (2200000000 bytes)");
}

#[test]
fn invalid_rank_is_fatal_by_default() {
    let exe = compile("fatal", Compiler::Ours);
    let r = run(Launcher::Ours, 3, &exe, &[], &[], T);
    assert!(r.code.is_some_and(|c| c != 0), "job did not fail: {r}");
    assert!(r.stderr.contains("MPI_Send") && r.stderr.contains("Invalid rank"), "message: {r}");
    assert!(!r.stdout.contains("UNREACHABLE"), "{r}");
    assert!(r.elapsed < Duration::from_secs(30), "took too long: {r}");
}

#[test]
fn abort_ends_the_job_and_cleans_up() {
    let exe = compile("abort", Compiler::Ours);
    let r = run(Launcher::Ours, 4, &exe, &[], &[], T);
    assert_eq!(r.code, Some(7), "exit code: {r}");
    assert!(r.stderr.contains("MPI_Abort"), "message: {r}");
    assert!(!r.stdout.contains("UNREACHABLE"), "{r}");
    assert!(r.elapsed < Duration::from_secs(30), "took too long: {r}");
    let left = system_tests::shm_leftovers_of(&r);
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}

#[test]
fn thread_multiple() {
    each_size("threads", &[2, 3], "threads OK");
}

#[test]
fn mpi4_isendrecv_and_partitioned() {
    each_size("p2p_mpi4", &[1, 2, 3], "p2p_mpi4 OK");
}

/// Partitioned channels match in the order of their initialization calls,
/// whatever order rounds are started in, and a plain receive never takes
/// their messages (MPICH suite part/multipart, part/nonblocking_pready).
#[test]
fn partitioned_matching_order() {
    each_size("part_matching", &[2, 3, 4], "part_matching OK");
}

/// A panic inside the library (the test hook `MPICORE_TEST_PANIC`, with the
/// state lock held) fails the library for good: with `MPI_ERRORS_RETURN`
/// every later call returns an error instead of running on a state the
/// panic may have left half-updated; with the default handler the job ends
/// at once with the panic's message.
#[test]
fn a_panic_fails_the_library() {
    let exe = compile("panic_hook", Compiler::Ours);
    let env = [("MPICORE_TEST_PANIC", "MPI_Barrier")];
    let r = run(Launcher::Ours, 2, &exe, &["return"], &env, T);
    assert_eq!(r.code, Some(0), "{r}");
    for rank in 0..2 {
        assert!(r.stdout.contains(&format!("panic_hook: rank {rank}: every call fails after the panic")), "{r}");
    }
    let r = run(Launcher::Ours, 2, &exe, &["fatal"], &env, T);
    assert!(r.code.is_some_and(|c| c != 0), "the job should fail: {r}");
    assert!(r.stderr.contains("test hook MPICORE_TEST_PANIC=MPI_Barrier"), "no panic message: {r}");
    assert!(!r.stdout.contains("UNREACHABLE"), "{r}");
}
