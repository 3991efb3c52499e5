//! Launch under a real Slurm: `srun --mpi=pmi2` on a one-node cluster that
//! `tests/slurm/start-slurm.sh` sets up on this machine (munged, slurmctld,
//! slurmd; root needed). Where `tests/tests/pmi.rs` checks the PMI-2 client
//! against a fake server, this is Slurm's own PMI-2 server (slurmstepd's
//! mpi/pmi2 plugin): its required `fullinit` fields, its fence, its abort.
//!
//! Slurm must be installed (Debian: `slurmctld slurmd slurm-client munge`;
//! `tests/run-all.sh` installs them): without `srun` these tests fail, they
//! do not skip. The cluster is started once per test binary and left
//! running for the next run (`tests/slurm/stop-slurm.sh` stops it).
//!
//! The node has as many CPUs as the machine, so jobs with more ranks than
//! CPUs are started with `--overcommit`, and `--oversubscribe` lets the
//! tests of this binary that run at the same time share the node.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use system_tests::{bin_dir, compile, root, run_command, shm_leftovers, Compiler, Run};

/// Time limit of one job.
const T: Duration = Duration::from_secs(90);
/// Time limit of setting up and starting the cluster.
const START: Duration = Duration::from_secs(150);

/// Starts the cluster (once per test binary); returns its `slurm.conf`.
/// Fails the calling test, with the reason, when Slurm is missing or does not
/// start.
fn cluster() -> &'static Path {
    static CONF: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let conf = CONF.get_or_init(|| {
        for tool in ["srun", "slurmctld", "slurmd", "munged"] {
            let found = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {tool}"))
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false);
            if !found {
                return Err(format!(
                    "`{tool}` is not installed: these tests need Slurm and munge \
                     (apt-get install -y slurmctld slurmd slurm-client munge; \
                     tests/run-all.sh installs them)"
                ));
            }
        }
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("tests/slurm/start-slurm.sh"));
        let r = run_command(cmd, START);
        if r.code != Some(0) {
            return Err(format!("tests/slurm/start-slurm.sh failed: {r}"));
        }
        let conf = PathBuf::from(r.stdout.lines().last().unwrap_or("").trim());
        if !conf.is_file() {
            return Err(format!("start-slurm.sh printed no slurm.conf: {r}"));
        }
        Ok(conf)
    });
    match conf {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

/// Compiles `tests/c/<name>.c`, after checking that the cluster is up (so a
/// machine without Slurm fails on that first, with its reason).
fn program(name: &str, with: Compiler) -> PathBuf {
    cluster();
    compile(name, with)
}

/// `srun --mpi=pmi2 -n <n> <exe>` on the test cluster, with the library's
/// build directory on the library path and `env` in the job's environment
/// (srun exports its environment to the ranks).
fn srun(n: usize, exe: &Path, env: &[(&str, &str)]) -> Run {
    let mut cmd = srun_command(n, env, &[]);
    cmd.arg(exe);
    run_command(cmd, T)
}

/// The srun command line of [`srun`] up to the program, with `options`.
fn srun_command(n: usize, env: &[(&str, &str)], options: &[&str]) -> Command {
    let conf = cluster();
    let mut cmd = Command::new("srun");
    // A test run inside some other Slurm job must not start its steps there.
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("SLURM_") {
            cmd.env_remove(&k);
        }
    }
    cmd.env("SLURM_CONF", conf);
    let lib = bin_dir();
    let path = match std::env::var("LD_LIBRARY_PATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", lib.display()),
        _ => lib.display().to_string(),
    };
    cmd.env("LD_LIBRARY_PATH", path);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // -v: srun names the step ("launching StepId=J.S"), which names the job's
    // shared-memory files. --time: Slurm itself ends a job that hangs even if
    // srun is gone.
    cmd.args(["--mpi=pmi2", "-v", "--overcommit", "--oversubscribe", "--time=3", "--job-name=mpicore-test"])
        .args(options)
        .arg("-n")
        .arg(n.to_string());
    cmd
}

/// The step `J.S` that srun launched (from its `-v` output).
fn step_of(r: &Run) -> Option<String> {
    let at = r.stderr.find("launching StepId=")? + "launching StepId=".len();
    let id: String = r.stderr[at..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    (!id.is_empty()).then_some(id)
}

/// Shared-memory files of step `J.S` left in /dev/shm (the library names
/// them after the PMI job id, `J.S` written `J_S`).
fn shm_leftovers_of_step(step: &str) -> Vec<String> {
    let tag = format!("-{}-", step.replace('.', "_"));
    shm_leftovers().into_iter().filter(|n| n.contains(&tag)).collect()
}

#[test]
fn srun_pmi2_point_to_point() {
    let exe = program("p2p_basic", Compiler::Ours);
    let r = srun(4, &exe, &[]);
    r.assert_ok("p2p_basic OK");
    let step = step_of(&r).expect("srun -v names the step");
    assert_eq!(shm_leftovers_of_step(&step), Vec::<String>::new(), "shared memory left by step {step}: {r}");
}

#[test]
fn srun_pmi2_collectives() {
    let exe = program("coll_basic", Compiler::Ours);
    srun(4, &exe, &[]).assert_ok("coll_basic OK");
    srun(3, &exe, &[]).assert_ok("coll_basic OK");
}

#[test]
fn srun_pmi2_over_tcp() {
    // Two "hosts" on this machine: the ranks exchange their TCP addresses in a
    // second put/fence/get round through Slurm's key-value space.
    let exe = program("p2p_basic", Compiler::Ours);
    srun(4, &exe, &[("MPICORE_FAKE_HOSTS", "2")]).assert_ok("p2p_basic OK");
}

#[test]
fn srun_pmi2_program_built_with_mpich() {
    // Built with Debian's mpicc.mpich, run on this library (libmpich.so.12
    // of the build directory first on the library path).
    let exe = program("p2p_basic", Compiler::Mpich);
    srun(3, &exe, &[]).assert_ok("p2p_basic OK");
}

#[test]
fn srun_pmi2_abort_ends_the_job_promptly() {
    // Rank 1 calls MPI_Abort(7) while the others wait in MPI_Recv: the PMI-2
    // abort (isworld=TRUE) makes slurmstepd kill the whole step. No
    // --kill-on-bad-exit: srun alone would leave the others waiting.
    let exe = program("abort", Compiler::Ours);
    let r = srun(3, &exe, &[]);
    assert!(r.code.is_some(), "the job did not end within {T:?}: {r}");
    assert_ne!(r.code, Some(0), "an aborted job must fail: {r}");
    assert!(
        r.elapsed < Duration::from_secs(30),
        "the job took {:.1}s to end after MPI_Abort: {r}",
        r.elapsed.as_secs_f64()
    );
    assert!(r.stderr.contains("error code 7"), "rank 1 reported its abort: {r}");
    assert!(!r.stdout.contains("UNREACHABLE"), "{r}");
    let step = step_of(&r).expect("srun -v names the step");
    assert_eq!(shm_leftovers_of_step(&step), Vec::<String>::new(), "shared memory left by step {step}: {r}");
}

#[test]
fn srun_kill_on_bad_exit_ends_the_job_when_a_rank_dies() {
    // Rank 1 kills itself with SIGKILL; the others wait for it. Slurm's
    // default (KillOnBadExit=0) lets them wait until the time limit, as it
    // does for MPICH; with -K srun ends the step, and the ranks blocked in
    // the library must go on SIGTERM.
    let exe = program("die", Compiler::Ours);
    let mut cmd = srun_command(3, &[], &["-K"]);
    cmd.arg(exe).arg("1");
    let r = run_command(cmd, T);
    assert!(r.code.is_some(), "the job did not end within {T:?}: {r}");
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.elapsed < Duration::from_secs(30), "the job took {:.1}s to end: {r}", r.elapsed.as_secs_f64());
    assert!(r.stdout.contains("rank 1 pid"), "{r}");
}

#[test]
fn a_rank_dying_without_finalize_ends_the_job_without_kill_on_bad_exit() {
    // Without -K Slurm lets the other ranks run on; the ranks of the dead
    // one's host notice that it ended without MPI_Finalize and abort the job.
    let exe = program("die", Compiler::Ours);
    let mut cmd = srun_command(3, &[], &[]);
    cmd.arg(exe).arg("1");
    let r = run_command(cmd, T);
    assert!(r.code.is_some(), "the job did not end within {T:?}: {r}");
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.elapsed < Duration::from_secs(30), "the job took {:.1}s to end: {r}", r.elapsed.as_secs_f64());
    assert!(r.stderr.contains("rank 1 (pid ") && r.stderr.contains("ended without calling MPI_Finalize"), "{r}");
}

#[test]
fn srun_pmi2_plugin_also_serves_the_pmi1_client() {
    // Slurm's mpi/pmi2 plugin also answers PMI-1 on the same socket: the
    // client forced to PMI-1 runs too (jobs, key-value rounds over TCP, abort).
    let exe = program("p2p_basic", Compiler::Ours);
    srun(4, &exe, &[("MPICORE_PMI", "1")]).assert_ok("p2p_basic OK");
    srun(4, &exe, &[("MPICORE_PMI", "1"), ("MPICORE_FAKE_HOSTS", "2")]).assert_ok("p2p_basic OK");
    let exe = program("abort", Compiler::Ours);
    let r = srun(3, &exe, &[("MPICORE_PMI", "1")]);
    assert!(r.code.is_some() && r.code != Some(0), "{r}");
    assert!(
        r.elapsed < Duration::from_secs(30),
        "the job took {:.1}s to end after MPI_Abort: {r}",
        r.elapsed.as_secs_f64()
    );
}
