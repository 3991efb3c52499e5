//! Chapter 10, process creation and management: two `mpirun` jobs meet
//! through a port (its name passed in a file, or through the name
//! service), talk on the intercommunicator, merge it and disconnect.

use std::path::PathBuf;
use std::time::Duration;

use system_tests::{bin_dir, compile, run, run_command, Compiler, Launcher, Run};

const T: Duration = Duration::from_secs(90);

fn scratch(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mpicore-dpm-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs the two jobs of `exe` at once under our mpirun: `na` ranks with
/// `a_args`, `nb` with `b_args` (each with `env`).
fn two_jobs(
    exe: &std::path::Path,
    na: usize,
    a_args: &[&str],
    nb: usize,
    b_args: &[&str],
    env: &[(&str, &str)],
) -> (Run, Run) {
    two_jobs_with(Launcher::Ours, exe, na, a_args, nb, b_args, env)
}

fn two_jobs_with(
    l: Launcher,
    exe: &std::path::Path,
    na: usize,
    a_args: &[&str],
    nb: usize,
    b_args: &[&str],
    env: &[(&str, &str)],
) -> (Run, Run) {
    std::thread::scope(|s| {
        let a = s.spawn(|| run(l, na, exe, a_args, env, T));
        let b = s.spawn(|| run(l, nb, exe, b_args, env, T));
        (a.join().unwrap(), b.join().unwrap())
    })
}

#[test]
fn accept_connect_through_a_port_file() {
    let exe = compile("dpm_connect", Compiler::Ours);
    let d = scratch("port");
    for (na, nb, env) in [(2, 3, &[][..]), (1, 1, &[][..]), (3, 2, &[("MPICORE_FAKE_HOSTS", "2")][..])] {
        let f = d.join(format!("port-{na}-{nb}"));
        let f = f.to_str().unwrap();
        let (a, b) = two_jobs(&exe, na, &["accept", f], nb, &["connect", f], env);
        a.assert_ok("dpm_connect OK accept");
        b.assert_ok("dpm_connect OK connect");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The same meeting through `MPI_Publish_name` / `MPI_Lookup_name` (the
/// connector looks the name up until it is there); unpublishing twice
/// fails with `MPI_ERR_SERVICE`, a lookup of a name not published with
/// `MPI_ERR_NAME`. The name directory is the test's own.
#[test]
fn accept_connect_through_the_name_service() {
    let exe = compile("dpm_connect", Compiler::Ours);
    let d = scratch("names");
    let dir = d.to_str().unwrap();
    let service = format!("dpm test service {}", std::process::id());
    let env = [("MPICORE_NAME_DIR", dir)];
    let (a, b) = two_jobs(&exe, 2, &["names-accept", &service], 2, &["names-connect", &service], &env);
    a.assert_ok("dpm_connect OK names-accept");
    b.assert_ok("dpm_connect OK names-connect");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "the name was not unpublished");
    let _ = std::fs::remove_dir_all(&d);
}

/// A published name holds the port's secret: its file is 0600 even under
/// umask 000 in a name directory others may read (issue 20.8).
#[test]
fn published_name_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let exe = compile("dpm_publish", Compiler::Ours);
    let d = scratch("private");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c").arg(r#"umask 000 && exec "$0" -n 2 "$1" private-service"#).arg(bin_dir().join("mpirun")).arg(&exe);
    cmd.env("MPICORE_NAME_DIR", &d).env("MPIEXEC_TIMEOUT", T.as_secs().to_string());
    run_command(cmd, T).assert_ok("dpm_publish OK");
    let files: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "one published name: {files:?}");
    let mode = files[0].metadata().unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "mode of the published name {:?}", files[0].path());
    let _ = std::fs::remove_dir_all(&d);
}

/// Connecting to a port nobody listens on, or to something that is no port
/// name, fails with `MPI_ERR_PORT` in every process.
#[test]
fn connect_to_a_bad_port() {
    let exe = compile("dpm_connect", Compiler::Ours);
    let dead = format!("mpicore-port:127.0.0.1:1:{}", "ab".repeat(32));
    run(Launcher::Ours, 2, &exe, &["badport", &dead], &[], T).assert_ok("dpm_connect OK badport");
}

/// `MPI_Comm_join`: two jobs of 2 ranks, each rank joined with its
/// namesake in the other job over a TCP socket the program made.
#[test]
fn join_over_a_socket() {
    let exe = compile("dpm_join", Compiler::Ours);
    let d = scratch("join");
    let dir = d.to_str().unwrap();
    let (a, b) = two_jobs(&exe, 2, &["listen", dir], 2, &["dial", dir], &[]);
    a.assert_ok("dpm_join OK listen");
    b.assert_ok("dpm_join OK dial");
    let _ = std::fs::remove_dir_all(&d);
}

/// `MPI_Comm_spawn` and `MPI_Comm_spawn_multiple` under the project's
/// mpirun (a job of 2 spawns 2, then 1+2 processes, then each rank one of
/// its own at the same time; the children find their parent with
/// `MPI_Comm_get_parent`), and `MPI_ERR_SPAWN` for a program that does
/// not exist. mpirun waits for the spawned jobs.
#[test]
fn spawn_under_our_mpirun() {
    let exe = compile("dpm_spawn", Compiler::Ours);
    let r = run(Launcher::Ours, 2, &exe, &[], &[], T);
    r.assert_ok("dpm_spawn OK");
    assert!(r.stdout.contains("dpm_spawn child OK  (2 processes)"), "{r}");
    assert!(r.stdout.contains("dpm_spawn child OK m0 (3 processes)"), "{r}");
    assert_eq!(r.stdout.matches("dpm_spawn child OK s0 (1 processes)").count(), 2, "{r}");
}

/// Four threads spawn at once, each on a communicator of its own: the
/// meetings with the new jobs run side by side in one process without
/// taking each other's messages (MPICH suite: threads/spawn/th_taskmanager),
/// and, all on `MPI_COMM_SELF`, without giving two new intercommunicators
/// one context id (threads/spawn/multispawn, which hung one run in two).
#[test]
fn spawns_from_several_threads_at_once() {
    let exe = compile("dpm_spawn_threads", Compiler::Ours);
    for n in [1, 2] {
        run(Launcher::Ours, n, &exe, &[], &[], T).assert_ok(&format!("dpm_spawn_threads OK on {n} ranks"));
        for _ in 0..3 {
            run(Launcher::Ours, n, &exe, &["self"], &[], T).assert_ok(&format!("dpm_spawn_threads OK on {n} ranks"));
        }
    }
}

/// Under hydra (`mpiexec.mpich`, PMI-1): two jobs meet through a port, and
/// a job spawns (hydra puts the parent's port in the children's key-value
/// space). A missing program is left out: hydra reports the spawn started,
/// then ends the whole job when the program cannot be run.
#[test]
fn under_hydra() {
    let exe = compile("dpm_connect", Compiler::Ours);
    let d = scratch("hydra");
    let f = d.join("port");
    let f = f.to_str().unwrap();
    let (a, b) = two_jobs_with(Launcher::Hydra, &exe, 2, &["accept", f], 2, &["connect", f], &[]);
    a.assert_ok("dpm_connect OK accept");
    b.assert_ok("dpm_connect OK connect");
    let _ = std::fs::remove_dir_all(&d);
    let exe = compile("dpm_spawn", Compiler::Ours);
    let r = run(Launcher::Hydra, 2, &exe, &["no-missing"], &[], T);
    r.assert_ok("dpm_spawn OK");
    assert!(r.stdout.contains("dpm_spawn child OK m0 (3 processes)"), "{r}");
    assert_eq!(r.stdout.matches("dpm_spawn child OK s0 (1 processes)").count(), 2, "{r}");
}
