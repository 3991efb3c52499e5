//! How a job ends when it is stopped or cannot start (issue 20): nothing
//! left in /dev/shm whatever stopped it, a clear error and an exit status
//! (never a crash of the launcher) for what cannot be started.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use system_tests::{bin_dir, compile, ensure_built, run_command, shm_leftovers, Compiler};

/// The names in /dev/shm of the job of launcher `pid` (its KVS name is
/// `kvs_<pid>_<hex>`, part of every segment name of the job).
fn job_segments(pid: u32) -> Vec<String> {
    let tag = format!("kvs_{pid}_");
    shm_leftovers().into_iter().filter(|n| n.contains(&tag)).collect()
}

/// Whether a child of `parent` holds the shared-memory object of a
/// communicator's collectives (`memfd:mpicore-coll`, which has no name in
/// /dev/shm).
fn holds_coll_segment(parent: u32) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else { return false };
    procs.flatten().any(|p| {
        // (`pid (comm) state ppid ...`; the command may hold spaces.)
        let stat = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        ppid == Some(parent)
            && std::fs::read_dir(p.path().join("fd")).is_ok_and(|fds| {
                fds.flatten().any(|fd| {
                    std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy().contains("memfd:mpicore-coll"))
                })
            })
    })
}

/// Starts `stuck_coll` on 3 ranks (own process group, so a failed test can
/// still take everything down) and waits until rank 0 has made the segment
/// of its communicator, the one the sleeping ranks never map.
fn start_stuck(timeout: Option<&str>) -> Child {
    let exe = compile("stuck_coll", Compiler::Ours);
    let mut cmd = Command::new(bin_dir().join("mpirun"));
    cmd.args(["-n", "3"]).arg(exe).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    cmd.env("MPIEXEC_TIMEOUT", timeout.unwrap_or("300"));
    cmd.process_group(0);
    let mut child = cmd.spawn().expect("start mpirun");
    let start = Instant::now();
    loop {
        if holds_coll_segment(child.id()) {
            return child;
        }
        if start.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
            stop_group(&mut child);
            panic!("the collective segment of rank 0 never appeared");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stop_group(child: &mut Child) {
    // SAFETY: kill only sends a signal, to the process group this test made.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
}

/// Waits for mpirun to end by itself; its exit status.
fn wait_end(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if start.elapsed() > limit {
            stop_group(child);
            panic!("mpirun did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stopped_by(sig: i32) {
    let mut child = start_stuck(None);
    let pid = child.id();
    // SAFETY: kill only sends a signal, to the mpirun this test started.
    unsafe { libc::kill(pid as i32, sig) };
    let st = wait_end(&mut child, Duration::from_secs(30));
    assert_eq!(st.code(), Some(128 + sig), "mpirun's status after signal {sig}: {st:?}");
    let left = job_segments(pid);
    assert!(left.is_empty(), "left in /dev/shm after signal {sig}: {left:?}");
}

#[test]
fn sigterm_to_mpirun_leaves_no_segment() {
    stopped_by(libc::SIGTERM);
}

#[test]
fn sigint_to_mpirun_leaves_no_segment() {
    stopped_by(libc::SIGINT);
}

#[test]
fn sighup_to_mpirun_leaves_no_segment() {
    stopped_by(libc::SIGHUP);
}

#[test]
fn timeout_leaves_no_segment() {
    let mut child = start_stuck(Some("10"));
    let pid = child.id();
    let st = wait_end(&mut child, Duration::from_secs(60));
    assert_eq!(st.code(), Some(124), "mpirun's status after MPIEXEC_TIMEOUT: {st:?}");
    let left = job_segments(pid);
    assert!(left.is_empty(), "left in /dev/shm after MPIEXEC_TIMEOUT: {left:?}");
}

/// An absurd rank count is refused with a message, before anything is
/// allocated for it; so is a program that does not exist; ranks that
/// cannot be started (no file descriptors left) end the job with a message.
#[test]
fn what_cannot_start_is_a_clear_error() {
    ensure_built();
    let mpirun = bin_dir().join("mpirun");
    let t = Duration::from_secs(60);
    for n in ["99999999999", "1048577", "99999999999999999999999"] {
        let mut cmd = Command::new(&mpirun);
        cmd.args(["-n", n, "/bin/true"]);
        let r = run_command(cmd, t);
        assert_eq!(r.code, Some(2), "-n {n}: {r}");
        assert!(r.stderr.contains("too many ranks"), "-n {n}: {r}");
    }
    let mut cmd = Command::new(&mpirun);
    cmd.args(["-n", "2", "./no-such-program-here"]);
    let r = run_command(cmd, t);
    assert_eq!(r.code, Some(127), "{r}");
    assert!(r.stderr.contains("cannot run './no-such-program-here'"), "{r}");
    // 40 descriptors cannot serve 50 ranks (3 each): rank N fails to start.
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!("ulimit -n 40 && exec {} -n 50 /bin/true", mpirun.display()));
    let r = run_command(cmd, t);
    assert!(r.code.is_some_and(|c| c != 0 && c < 128), "{r}");
    assert!(r.stderr.contains("cannot start rank"), "{r}");
}

#[test]
fn abnormal_status_is_not_a_signal() {
    // The launcher itself must never die of a signal on bad input.
    ensure_built();
    let st = Command::new(bin_dir().join("mpirun"))
        .args(["-n", "99999999999", "./a.out"])
        .stderr(Stdio::null())
        .status()
        .expect("run mpirun");
    assert_eq!(st.signal(), None, "{st:?}");
    assert_eq!(st.code(), Some(2), "{st:?}");
}
