//! The MPI tool information interface (MPI_T): control variables read and
//! set through the environment, before MPI_Init, while MPI runs and after
//! MPI_Finalize; performance variables counting a known ping-pong exactly;
//! error codes; the same programs built with Debian's `mpicc.mpich` give the
//! same output on our library.

use std::time::Duration;

use system_tests::{compile, run, Compiler, Launcher};

const T: Duration = Duration::from_secs(90);
const EAGER: (&str, &str) = ("MPICORE_EAGER_LIMIT", "4096");

/// The lines of rank 0's report (the `OK` line excluded: it names the size).
fn report(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| !l.contains(" OK")).collect()
}

#[test]
fn control_variables_listed_read_and_set_through_the_environment() {
    let exe = compile("mpit_vars", Compiler::Ours);
    for n in [1, 2] {
        let r = run(Launcher::Ours, n, &exe, &[], &[EAGER], T);
        r.assert_ok(&format!("mpit_vars OK on {n} ranks"));
        assert!(r.stdout.contains("running: cvar MPICORE_EAGER_LIMIT = 4096\n"), "{r}");
        assert!(r.stdout.contains("running: cvar MPICORE_BIND = "), "{r}");
        assert!(r.stdout.contains("running: cvar MPICORE_COLL_ALLREDUCE = \"auto\"\n"), "{r}");
        assert!(r.stdout.contains("running: cvar MPICORE_ASYNC_PROGRESS = 1\n"), "{r}");
        assert!(r.stdout.contains("running: cvar MPICORE_PMI = pmi1 (mpicore_pmi)\n"), "{r}");
        assert!(
            r.stdout.contains(
                "category mpicore_p2p: MPICORE_EAGER_LIMIT MPICORE_TCP_EAGER_LIMIT MPICORE_RING_SIZE MPICORE_NO_CMA |"
            ),
            "{r}"
        );
    }
    // Other knobs set through the environment read back as set.
    let env = [
        EAGER,
        ("MPICORE_BIND", "none"),
        ("MPICORE_SPIN_US", "123"),
        ("MPICORE_COLL_BCAST", "linear"),
        ("MPICORE_COLL_SEGMENT", "8192"),
        ("MPICORE_NO_CMA", "1"),
        ("MPICORE_ASYNC_PROGRESS", "off"),
        ("MPICORE_PMI", "2"),
        ("MPICORE_TCP_EAGER_LIMIT", "2000"),
    ];
    let r = run(Launcher::Ours, 2, &exe, &[], &env, T);
    r.assert_ok("mpit_vars OK on 2 ranks");
    for line in [
        "cvar MPICORE_BIND = none (mpicore_bind)",
        "cvar MPICORE_SPIN_US = 123",
        "cvar MPICORE_COLL_BCAST = \"linear\"",
        "cvar MPICORE_COLL_SEGMENT = 8192",
        "cvar MPICORE_NO_CMA = 1",
        "cvar MPICORE_ASYNC_PROGRESS = 0",
        "cvar MPICORE_PMI = pmi2 (mpicore_pmi)",
        "cvar MPICORE_TCP_EAGER_LIMIT = 2000",
    ] {
        assert!(r.stdout.contains(&format!("running: {line}\n")), "no `{line}`: {r}");
    }
}

/// A program that does not set the eager limit fails its own check of it:
/// the checks can fail.
#[test]
fn a_different_eager_limit_is_seen() {
    let exe = compile("mpit_vars", Compiler::Ours);
    let r = run(Launcher::Ours, 1, &exe, &[], &[("MPICORE_EAGER_LIMIT", "8192")], T);
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.stderr.contains("eager limit before MPI_Init"), "{r}");
}

/// Through shared memory, and over TCP (the two ranks as two "hosts").
#[test]
fn performance_variables_count_a_ping_pong() {
    let exe = compile("mpit_pvars", Compiler::Ours);
    for env in [&[EAGER][..], &[EAGER, ("MPICORE_FAKE_HOSTS", "2")][..]] {
        let r = run(Launcher::Ours, 2, &exe, &[], env, T);
        r.assert_ok("mpit_pvars OK");
        for rank in 0..2 {
            let line = format!("rank {rank}: sent 11 messages 66536 bytes, received 11 messages 66536 bytes");
            assert!(r.stdout.contains(&line), "no `{line}`: {r}");
        }
        assert!(r.stdout.contains("rank 0: unexpected queue held 3, peak at least 3"), "{r}");
    }
}

/// The same programs built with Debian's MPICH compiler (its `mpi.h`, its
/// `MPI_T_PVAR_ALL_HANDLES` reference resolved from our library) run on our
/// library, under our launcher and under hydra, and print the same.
#[test]
fn mpich_built_tool_programs_give_the_same_output() {
    for (name, n, ok) in [("mpit_vars", 2, "mpit_vars OK on 2 ranks"), ("mpit_pvars", 2, "mpit_pvars OK")] {
        let ours = run(Launcher::Ours, n, &compile(name, Compiler::Ours), &[], &[EAGER], T);
        ours.assert_ok(ok);
        let mut a = report(&ours.stdout);
        a.sort_unstable();
        assert!(a.len() > 5, "{ours}");
        // Under our mpirun and under MPICH's own hydra.
        for launcher in [Launcher::Ours, Launcher::Hydra] {
            let theirs = run(launcher, n, &compile(name, Compiler::Mpich), &[], &[EAGER], T);
            theirs.assert_ok(ok);
            let mut b = report(&theirs.stdout);
            b.sort_unstable();
            assert_eq!(a, b, "outputs differ ({launcher:?}):\n{ours}\n{theirs}");
        }
    }
}
