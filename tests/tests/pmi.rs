//! Launch through PMI-2, the wire protocol of Slurm's `srun --mpi=pmi2`.
//! `tests/slurm/fake-srun.py` starts the ranks the way Slurm does (a
//! connected socket in `PMI_FD`, `SLURM_MPI_TYPE=pmi2`) and answers only
//! PMI-2, so a library that spoke PMI-1 would fail these tests.

use std::process::Command;
use std::time::Duration;

use system_tests::{compile, root, run, run_command, Compiler, Launcher};

const T: Duration = Duration::from_secs(90);

fn srun(n: usize, exe: &std::path::Path, env: &[(&str, &str)]) -> system_tests::Run {
    srun_args(n, exe, &[], env)
}

fn srun_args(n: usize, exe: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> system_tests::Run {
    let mut cmd = Command::new("python3");
    cmd.arg(root().join("tests/slurm/fake-srun.py")).arg("--mpi=pmi2").arg("-n").arg(n.to_string()).arg(exe).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_command(cmd, T)
}

#[test]
fn slurm_pmi2_launch_shared_memory() {
    let exe = compile("p2p_basic", Compiler::Ours);
    srun(4, &exe, &[]).assert_ok("p2p_basic OK");
    let exe = compile("coll_basic", Compiler::Ours);
    srun(3, &exe, &[]).assert_ok("coll_basic OK");
}

#[test]
fn slurm_pmi2_launch_over_tcp() {
    let exe = compile("p2p_basic", Compiler::Ours);
    srun(4, &exe, &[("MPICORE_FAKE_HOSTS", "2")]).assert_ok("p2p_basic OK");
}

#[test]
fn slurm_pmi2_abort_ends_the_job_with_its_code() {
    let exe = compile("abort", Compiler::Ours);
    let r = srun(3, &exe, &[]);
    assert_eq!(r.code, Some(7), "the job ends with the abort code: {r}");
    assert!(r.stderr.contains("aborted"), "the launcher saw the PMI-2 abort: {r}");
}

#[test]
fn a_rank_dying_without_finalize_is_noticed_by_its_host_neighbours() {
    // The fake srun, like Slurm without -K, lets the other ranks wait; they
    // must see that rank 1 is gone and end the job.
    let exe = compile("die", Compiler::Ours);
    let r = srun_args(3, &exe, &["1"], &[]);
    assert_eq!(r.code, Some(1), "{r}");
    assert!(r.stderr.contains("rank 1 (pid ") && r.stderr.contains("ended without calling MPI_Finalize"), "{r}");
}

#[test]
fn a_pmi1_client_is_refused_by_the_pmi2_server() {
    // The negative control: forcing PMI-1 must fail against a PMI-2-only server.
    let exe = compile("p2p_basic", Compiler::Ours);
    let r = srun(2, &exe, &[("MPICORE_PMI", "1")]);
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.stderr.contains("expected the PMI-2 init line"), "{r}");
}

#[test]
fn pmi2_wire_under_our_mpirun_and_hydra() {
    let exe = compile("p2p_basic", Compiler::Ours);
    run(Launcher::Ours, 3, &exe, &[], &[("MPICORE_PMI", "2")], T).assert_ok("p2p_basic OK");
    run(Launcher::Hydra, 3, &exe, &[], &[("MPICORE_PMI", "2")], T).assert_ok("p2p_basic OK");
}
