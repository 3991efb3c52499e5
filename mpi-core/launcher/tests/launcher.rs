//! Integration tests of mpirun/mpiexec and mpicc/mpicxx with real processes.
//!
//! Every job runs under `MPIEXEC_TIMEOUT` and the test waits for it with its
//! own deadline, so a hang fails fast instead of blocking the suite.
//! Rank programs are bash one-liners and `tests/support/pmi_rank.py`, a
//! small PMI-1/PMI-2 client. The MPICH test compiles a program with Debian's
//! `mpicc.mpich` (skipped with a note when that is not installed); the mpicc
//! test with the real header builds `mpi-core` first if it is not built yet.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const MPIRUN: &str = env!("CARGO_BIN_EXE_mpirun");
const MPIEXEC: &str = env!("CARGO_BIN_EXE_mpiexec");
const MPICC: &str = env!("CARGO_BIN_EXE_mpicc");
const MPICXX: &str = env!("CARGO_BIN_EXE_mpicxx");

/// Longest any single job may take before the test gives up on it.
const LIMIT: Duration = Duration::from_secs(30);

fn pmi_rank() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/pmi_rank.py").display().to_string()
}

fn exe_dir() -> PathBuf {
    Path::new(MPIRUN).parent().unwrap().to_path_buf()
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("mpil-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The result of one finished command.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Run {
    fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
    fn assert_ok(&self) -> &Self {
        assert_eq!(self.code, Some(0), "{self:#?}");
        self
    }
}

fn collect(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    })
}

/// Waits for `child` until `limit`; kills it and fails the test after that.
fn wait_with_deadline(mut child: Child, limit: Duration, what: &str) -> Run {
    let start = Instant::now();
    let out = collect(
        child.stdout.take().map_or_else(|| Box::new(std::io::empty()) as Box<dyn Read + Send>, |o| Box::new(o)),
    );
    let err = collect(
        child.stderr.take().map_or_else(|| Box::new(std::io::empty()) as Box<dyn Read + Send>, |e| Box::new(e)),
    );
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what}: still running after {limit:?}; killed.\nstdout:\n{}\nstderr:\n{}",
                out.join().unwrap(),
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    Run { code: status.code(), stdout: out.join().unwrap(), stderr: err.join().unwrap(), elapsed }
}

/// Runs `prog args` with extra environment and optional stdin.
fn run_prog(prog: &str, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Run {
    let mut cmd = Command::new(prog);
    cmd.args(args).env("MPIEXEC_TIMEOUT", LIMIT.as_secs().to_string()).envs(env.iter().copied());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).unwrap();
    }
    wait_with_deadline(child, LIMIT + Duration::from_secs(5), &format!("{prog} {args:?}"))
}

fn mpirun(args: &[&str]) -> Run {
    run_prog(MPIRUN, args, &[], None)
}

/// Starts mpirun with piped output, for tests that talk to it while it runs.
fn spawn_mpirun(args: &[&str]) -> Child {
    Command::new(MPIRUN)
        .args(args)
        .env("MPIEXEC_TIMEOUT", "20")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs mpirun, expects success and returns the output lines, sorted.
fn sorted_lines(args: &[&str]) -> Vec<String> {
    let r = mpirun(args);
    r.assert_ok();
    let mut lines: Vec<String> = r.lines().into_iter().map(String::from).collect();
    lines.sort();
    lines
}

fn mpirun_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    run_prog(MPIRUN, args, env, None)
}

fn process_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Pids printed by the ranks as "... pid N".
fn pids_in(text: &str) -> Vec<i32> {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0] == "pid")
        .filter_map(|w| w[1].parse().ok())
        .collect()
}

fn assert_all_gone(pids: &[i32]) {
    let start = Instant::now();
    while pids.iter().any(|&p| process_exists(p)) {
        assert!(start.elapsed() < Duration::from_secs(3), "processes left behind: {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------- PMI server

#[test]
fn kvs_and_barrier_for_several_sizes() {
    let script = pmi_rank();
    for n in [1usize, 2, 3, 5, 8] {
        let r = mpirun(&["-n", &n.to_string(), "python3", &script, "kvs"]);
        r.assert_ok();
        let expected: Vec<String> = (0..n).map(|i| format!("val-{i}-{}", i * i)).collect();
        let mut lines = r.lines();
        lines.sort();
        assert_eq!(lines.len(), n, "{r:#?}");
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(*line, format!("rank {i} saw {}", expected.join(",")));
        }
    }
}

#[test]
fn pipelined_and_split_commands() {
    let lines = sorted_lines(&["-np", "4", "python3", &pmi_rank(), "pipeline"]);
    let want: Vec<String> = (0..4).map(|i| format!("rank {i} saw val-0,val-1,val-2,val-3")).collect();
    assert_eq!(lines, want);
}

#[test]
fn hundreds_of_ranks_share_a_barrier() {
    // Each rank writes three requests at once and reads the three answers.
    let n = 250;
    let script = r#"printf 'cmd=init pmi_version=1 pmi_subversion=1\ncmd=barrier_in\ncmd=finalize\n' >&$PMI_FD
        head -n 3 <&$PMI_FD | tr '\n' ' '; echo"#;
    let r = mpirun(&["-n", &n.to_string(), "bash", "-c", script]);
    r.assert_ok();
    let lines = r.lines();
    assert_eq!(lines.len(), n);
    for line in lines {
        assert_eq!(line, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0 cmd=barrier_out cmd=finalize_ack ");
    }
}

#[test]
fn name_service() {
    let lines = sorted_lines(&["-n", "3", "python3", &pmi_rank(), "names"]);
    assert_eq!(lines, ["rank 0 found tcp://h:42", "rank 1 found tcp://h:42", "rank 2 found tcp://h:42"]);
}

#[test]
fn pmi2_wire_protocol() {
    let lines = sorted_lines(&["-n", "3", "python3", &pmi_rank(), "pmi2"]);
    assert_eq!(lines, ["rank 0 pmi2 saw v0,v1,v2", "rank 1 pmi2 saw v0,v1,v2", "rank 2 pmi2 saw v0,v1,v2"]);
}

#[test]
fn mpmd_appnum_and_process_mapping() {
    let script = pmi_rank();
    let lines = sorted_lines(&["-n", "2", "python3", &script, "info", ":", "-n", "1", "python3", &script, "info"]);
    assert_eq!(
        lines,
        [
            "rank 0 appnum 0 universe 3 mapping (vector,(0,1,3))",
            "rank 1 appnum 0 universe 3 mapping (vector,(0,1,3))",
            "rank 2 appnum 1 universe 3 mapping (vector,(0,1,3))",
        ]
    );
}

#[test]
fn shm_segments_are_removed_after_the_job() {
    let r = mpirun(&["-n", "2", "python3", &pmi_rank(), "shm"]);
    r.assert_ok();
    let files: Vec<&str> = r.stdout.split_whitespace().filter(|w| w.starts_with("/dev/shm/mpicore-kvs_")).collect();
    assert_eq!(files.len(), 2, "{r:#?}");
    for f in files {
        assert!(!Path::new(f).exists(), "{f} left behind");
    }
}

#[test]
fn mpiexec_is_the_same_launcher() {
    let r = run_prog(MPIEXEC, &["-n", "2", "python3", &pmi_rank(), "kvs"], &[], None);
    r.assert_ok();
    assert_eq!(r.lines().len(), 2);
}

// ------------------------------------------------------------------- output

#[test]
fn tagged_output_lines_never_mix() {
    // Each line is written in two pieces with a pause in between.
    let script = r#"for i in 1 2 3 4; do printf "line-$i-"; sleep 0.02; printf "$PMI_RANK\n"; done
        echo "err-$PMI_RANK" >&2"#;
    for flag in ["-l", "-prepend-rank", "--tag-output"] {
        let r = mpirun(&[flag, "-n", "3", "bash", "-c", script]);
        r.assert_ok();
        let lines = r.lines();
        assert_eq!(lines.len(), 12, "{r:#?}");
        for line in lines {
            let (tag, rest) = line.split_once(' ').unwrap();
            let rank = tag.trim_start_matches('[').trim_end_matches(']');
            assert!(rest.starts_with("line-") && rest.ends_with(&format!("-{rank}")), "bad line {line:?}");
        }
        let mut err: Vec<&str> = r.stderr.lines().collect();
        err.sort();
        assert_eq!(err, ["[0] err-0", "[1] err-1", "[2] err-2"]);
    }
}

#[test]
fn untagged_output_and_stdin_to_rank_0() {
    let r = run_prog(MPIRUN, &["-n", "2", "bash", "-c", "cat; echo done-$PMI_RANK"], &[], Some("hello\nworld\n"));
    r.assert_ok();
    let lines = r.lines();
    assert_eq!(lines.iter().filter(|l| **l == "hello").count(), 1, "{r:#?}");
    assert_eq!(lines.iter().filter(|l| **l == "world").count(), 1, "{r:#?}");
    assert!(lines.contains(&"done-0") && lines.contains(&"done-1"));
}

#[test]
fn closed_stdout_ends_the_job_like_a_pipeline() {
    // `mpirun -n 2 yes | head -n 2`
    let mut child = spawn_mpirun(&["-n", "2", "yes"]);
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..2 {
        line.clear();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, "y\n");
    }
    drop(reader);
    let r = wait_with_deadline(child, Duration::from_secs(10), "mpirun -n 2 yes");
    assert_eq!(r.code, Some(128 + libc::SIGPIPE), "{r:#?}");
    assert_eq!(r.stderr, "");
}

// ----------------------------------------------------------- job control

#[test]
fn failing_rank_sets_exit_code_and_ends_the_others() {
    let script = r#"if [ $PMI_RANK = 2 ]; then sleep 0.3; echo bye >&2; exit 3; fi
        echo "rank $PMI_RANK pid $$"; exec sleep 30"#;
    let r = mpirun(&["-n", "3", "bash", "-c", script]);
    assert_eq!(r.code, Some(3), "{r:#?}");
    assert!(r.stderr.contains("mpirun: rank 2 (pid ") && r.stderr.contains(") exited with code 3"), "{r:#?}");
    // The rank's own last words come before the verdict.
    assert!(r.stderr.find("bye").unwrap() < r.stderr.find("mpirun: rank 2").unwrap());
    assert!(r.elapsed < Duration::from_secs(8), "{r:#?}");
    let pids = pids_in(&r.stdout);
    assert_eq!(pids.len(), 2);
    assert_all_gone(&pids);
}

#[test]
fn each_rank_leads_its_own_session_and_its_children_end_with_the_job() {
    // A session per rank (as hydra does), so the kernel's per-session CPU
    // share (autogroup) does not pool the ranks with the launching shell.
    // Rank 0 leaves a child behind and exits 0 at once; rank 1 fails later:
    // the child, in rank 0's process group, must not outlive the job.
    let script = r#"sid=$(cut -d' ' -f6 /proc/$$/stat); pgrp=$(cut -d' ' -f5 /proc/$$/stat)
        echo "rank $PMI_RANK self $$ sid $sid pgrp $pgrp"
        if [ $PMI_RANK = 0 ]; then sleep 30 & echo "child pid $!"; exit 0; fi
        sleep 0.5; exit 4"#;
    let r = mpirun(&["-n", "2", "bash", "-c", script]);
    assert_eq!(r.code, Some(4), "{r:#?}");
    let mut seen = 0;
    for l in r.stdout.lines().filter(|l| l.starts_with("rank ")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!((f[3], f[5], f[7]), (f[3], f[3], f[3]), "rank not alone in its session and group: {l}");
        seen += 1;
    }
    assert_eq!(seen, 2, "{r:#?}");
    let pids = pids_in(&r.stdout);
    assert_eq!(pids.len(), 1, "{r:#?}");
    assert_all_gone(&pids);
}

#[test]
fn rank_leaving_while_others_wait_in_a_barrier() {
    let script = r#"if [ $PMI_RANK = 1 ]; then exit 0; fi
        printf 'cmd=init pmi_version=1 pmi_subversion=1\ncmd=barrier_in\n' >&$PMI_FD; exec sleep 30"#;
    let r = mpirun(&["-n", "3", "bash", "-c", script]);
    assert_eq!(r.code, Some(1), "{r:#?}");
    // "exited with code 0", or "closed its PMI connection" when the socket
    // closing is seen before the exit.
    assert!(r.stderr.starts_with("mpirun: rank 1 "), "{r:#?}");
    assert!(r.stderr.contains(" while other ranks wait for it in a PMI barrier; terminating the job"), "{r:#?}");
    assert!(r.elapsed < Duration::from_secs(8));
}

#[test]
fn rank_killed_by_signal() {
    let r = mpirun(&["-n", "2", "bash", "-c", "if [ $PMI_RANK = 1 ]; then kill -SEGV $$; fi; exec sleep 30"]);
    assert_eq!(r.code, Some(128 + 11), "{r:#?}");
    assert!(r.stderr.contains("rank 1 (pid") && r.stderr.contains("killed by signal 11 (SIGSEGV)"), "{r:#?}");
    assert!(r.elapsed < Duration::from_secs(8));
}

#[test]
fn pmi_abort_ends_the_job_with_its_code() {
    let r = mpirun(&["-n", "3", "python3", &pmi_rank(), "abort", "1", "7"]);
    assert_eq!(r.code, Some(7), "{r:#?}");
    assert!(r.stderr.contains("mpirun: rank 1 called MPI_Abort (error code 7); terminating the job"), "{r:#?}");
    assert!(r.elapsed < Duration::from_secs(8));
    // Only the launcher's verdict: the killed ranks are not reported.
    assert_eq!(r.stderr.matches("mpirun:").count(), 1, "{r:#?}");
    assert_all_gone(&pids_in(&r.stdout));
}

#[test]
fn timeout_kills_the_job() {
    // The ranks ignore SIGTERM, so the launcher has to follow up with SIGKILL.
    let r = mpirun_env(
        &["-n", "2", "bash", "-c", "trap '' TERM; echo pid $$; sleep 30 & wait"],
        &[("MPIEXEC_TIMEOUT", "1")],
    );
    assert_eq!(r.code, Some(124), "{r:#?}");
    assert!(r.stderr.contains("MPIEXEC_TIMEOUT"), "{r:#?}");
    assert!(r.elapsed >= Duration::from_millis(900) && r.elapsed < Duration::from_secs(8), "{r:#?}");
    assert_all_gone(&pids_in(&r.stdout));
    let r = mpirun(&["-timeout", "0.5", "-n", "1", "sleep", "30"]);
    assert_eq!(r.code, Some(124), "{r:#?}");
}

/// Starts mpirun and returns it once every rank printed "ready".
fn start_ready(args: &[&str], ranks: usize) -> (Child, mpsc::Receiver<String>) {
    let mut child = spawn_mpirun(args);
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut ready = 0;
    while ready < ranks {
        let line = rx.recv_timeout(Duration::from_secs(10)).expect("ranks did not start");
        if line.contains("ready") {
            ready += 1;
        }
    }
    (child, rx)
}

#[test]
fn signals_are_forwarded_to_the_ranks() {
    let script = r#"trap 'echo got-usr1-$PMI_RANK; exit 0' USR1; echo ready; while :; do sleep 0.05; done"#;
    let (mut child, rx) = start_ready(&["-n", "2", "bash", "-c", script], 2);
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGUSR1) };
    let mut got = vec![rx.recv_timeout(LIMIT).unwrap(), rx.recv_timeout(LIMIT).unwrap()];
    got.sort();
    assert_eq!(got, ["got-usr1-0", "got-usr1-1"]);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));

    let (child, _rx) = start_ready(&["-n", "2", "bash", "-c", "echo ready pid $$; exec sleep 30"], 2);
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let r = wait_with_deadline(child, Duration::from_secs(10), "mpirun after SIGTERM");
    assert_eq!(r.code, Some(128 + 15), "{r:#?}");
    assert!(r.stderr.contains("killed by signal 15 (SIGTERM)"), "{r:#?}");
}

#[test]
fn no_rank_outlives_a_killed_launcher() {
    let (mut child, rx) = start_ready(&["-n", "3", "bash", "-c", "echo ready pid $$; exec sleep 30"], 3);
    let _ = rx;
    let mut pids = Vec::new();
    // The "ready" lines were consumed by start_ready; ask the system instead.
    let launcher = child.id() as i32;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
        if after.split_whitespace().nth(1).and_then(|p| p.parse::<i32>().ok()) == Some(launcher) {
            pids.push(pid);
        }
    }
    assert_eq!(pids.len(), 3, "children of the launcher: {pids:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_all_gone(&pids);
}

// ------------------------------------------------- proxies ("remote" hosts)
//
// `-launcher fork` starts the proxies of hosts that are not this machine on
// this machine: the whole remote path (agent, proxy, relayed PMI, output and
// exits) without ssh or namespaces (tests/tests/multihost.rs has those).

#[test]
fn ranks_through_proxies_share_the_kvs_and_the_output() {
    let script = pmi_rank();
    let lines =
        sorted_lines(&["-launcher", "fork", "-host", "hosta,hostb", "-n", "4", "-l", "python3", &script, "kvs"]);
    let seen = "saw val-0-0,val-1-1,val-2-4,val-3-9";
    assert_eq!(lines, (0..4).map(|r| format!("[{r}] rank {r} {seen}")).collect::<Vec<_>>());
    // Mixed: this machine and a "remote" host, hosts with slots, -ppn.
    let r = mpirun(&["-launcher", "fork", "-host", "localhost,hostb:2", "-n", "5", "python3", &script, "info"]);
    r.assert_ok();
    assert!(r.stdout.contains("rank 4 appnum 0 universe 5 mapping (vector,(0,1,1),(1,1,2))"), "{r:#?}");
    let r = mpirun(&["-launcher", "fork", "-host", "hosta,hostb", "-ppn", "2", "-n", "4", "python3", &script, "info"]);
    assert!(r.stdout.contains("mapping (vector,(0,2,2))"), "{r:#?}");
    // A host file: 'host:slots', 'host slots=N', comments.
    let dir = TempDir::new("hostfile");
    let file = dir.path().join("hosts");
    std::fs::write(&file, "# two hosts\nhosta:2\nhostb slots=3 # more\n").unwrap();
    let r = mpirun(&["-launcher", "fork", "-hostfile", file.to_str().unwrap(), "python3", &script, "info"]);
    assert!(r.stdout.contains("universe 5 mapping (vector,(0,1,2),(1,1,3))"), "{r:#?}");
    // Each rank knows how many ranks share its host, and gets the job secret.
    let r = mpirun(&[
        "-launcher",
        "fork",
        "-host",
        "hosta:3,hostb",
        "-n",
        "4",
        "-l",
        "bash",
        "-c",
        "echo $MPI_LOCALRANKID/$MPI_LOCALNRANKS ${#MPICORE_JOB_SECRET}",
    ]);
    let mut lines = r.lines();
    lines.sort();
    assert_eq!(lines, ["[0] 0/3 32", "[1] 1/3 32", "[2] 2/3 32", "[3] 0/1 32"], "{r:#?}");
}

#[test]
fn remote_rank_failures_end_the_job() {
    let fork = ["-launcher", "fork", "-host", "localhost,hostb"];
    let r = mpirun(&[&fork[..], &["-n", "4", "python3", &pmi_rank(), "abort", "3", "7"]].concat());
    assert_eq!(r.code, Some(7), "{r:#?}");
    assert!(r.stderr.contains("mpirun: rank 3 called MPI_Abort (error code 7); terminating the job"), "{r:#?}");
    assert_all_gone(&pids_in(&r.stdout));

    let script = r#"echo "rank $PMI_RANK pid $$"; if [ $PMI_RANK = 1 ]; then sleep 0.5; kill -9 $$; fi; exec sleep 30"#;
    let r = mpirun(&[&fork[..], &["-n", "4", "bash", "-c", script]].concat());
    assert_eq!(r.code, Some(128 + 9), "{r:#?}");
    assert!(
        r.stderr.contains("mpirun: rank 1 (pid ") && r.stderr.contains(") on host hostb killed by signal 9 (SIGKILL)"),
        "{r:#?}"
    );
    assert!(r.elapsed < Duration::from_secs(8), "{r:#?}");
    let pids = pids_in(&r.stdout);
    assert_eq!(pids.len(), 4, "{r:#?}");
    assert_all_gone(&pids);
}

/// Runs mpirun with `input` written to its stdin by a thread (`endless`:
/// written over and over until mpirun stops reading).
fn mpirun_with_input(args: &[&str], input: Vec<u8>, endless: bool) -> Run {
    let mut child = Command::new(MPIRUN)
        .args(args)
        .env("MPIEXEC_TIMEOUT", LIMIT.as_secs().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    std::thread::spawn(move || while pipe.write_all(&input).is_ok() && endless {});
    wait_with_deadline(child, LIMIT + Duration::from_secs(5), &format!("mpirun {args:?} with input"))
}

/// mpirun's stdin reaches rank 0 on another host through its proxy: all of
/// it (more than the unacknowledged window), in order, then the end of
/// input; the other ranks read nothing. A rank 0 that stops reading
/// endless input does not hold up the job.
#[test]
fn stdin_reaches_rank_0_on_another_host() {
    let dir = TempDir::new("stdin");
    let out = dir.path().join("got");
    let input: Vec<u8> = (0..1_500_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let script = format!(
        "if [ $PMI_RANK = 0 ]; then cat > {}; echo rank 0 done; else echo rank $PMI_RANK read $(wc -c) bytes; fi",
        out.display()
    );
    let r = mpirun_with_input(
        &["-launcher", "fork", "-host", "hosta,hostb", "-n", "3", "bash", "-c", &script],
        input.clone(),
        false,
    );
    r.assert_ok();
    let mut lines = r.lines();
    lines.sort();
    assert_eq!(lines, ["rank 0 done", "rank 1 read 0 bytes", "rank 2 read 0 bytes"], "{r:#?}");
    let got = std::fs::read(&out).unwrap();
    assert_eq!(got.len(), input.len());
    assert!(got == input, "rank 0 read other bytes than mpirun was given");

    let r = mpirun_with_input(
        &[
            "-launcher",
            "fork",
            "-host",
            "hosta,hostb",
            "-n",
            "2",
            "bash",
            "-c",
            "if [ $PMI_RANK = 0 ]; then head -n 2; else sleep 0.3; fi",
        ],
        b"line one\nline two\nline three\n".to_vec(),
        true,
    );
    r.assert_ok();
    assert_eq!(r.stdout, "line one\nline two\n", "{r:#?}");
}

/// Connections to the port proxies use that are not proxies of the job
/// (no token, a wrong one) are dropped; the job goes on.
#[test]
fn strangers_on_the_proxy_port_are_turned_away() {
    let mut child =
        spawn_mpirun(&["-v", "-launcher", "fork", "-host", "hosta", "-n", "1", "bash", "-c", "sleep 1.5; echo done"]);
    let err = child.stderr.take().unwrap();
    let mut lines = BufReader::new(err).lines().map_while(Result::ok);
    // "mpirun: proxy 0 on host hosta: /path/mpirun --proxy A,B:PORT 0 hosta"
    let port: u16 = lines
        .find_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let at = w.iter().position(|&x| x == "--proxy")?;
            w.get(at + 1)?.rsplit_once(':')?.1.parse().ok()
        })
        .expect("verbose mpirun names the proxy command");
    let rest = std::thread::spawn(move || lines.collect::<Vec<_>>().join("\n"));
    // A forged hello (kind 1, proxy 0, token "nope"), then plain garbage.
    let mut hello = vec![1u8, 0, 0, 0, 0, 0, 0, 0, 4];
    hello.extend_from_slice(b"nope");
    for msg in [hello, b"GET / HTTP/1.0\r\n\r\n".to_vec()] {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(&msg).unwrap();
        let mut buf = Vec::new();
        // mpirun hangs up.
        let _ = s.read_to_end(&mut buf);
    }
    let r = wait_with_deadline(child, LIMIT, "mpirun with strangers");
    let stderr = rest.join().unwrap();
    assert_eq!(r.code, Some(0), "{r:#?}\n{stderr}");
    assert_eq!(r.stdout, "done\n");
    assert!(stderr.contains("mpirun: rejected a connection from 127.0.0.1:"), "{stderr}");
    assert_eq!(stderr.matches("rejected a connection").count(), 2, "{stderr}");
}

#[test]
fn a_lost_proxy_ends_the_job_and_leaves_nothing() {
    let (child, rx) = start_ready(
        &["-launcher", "fork", "-host", "hosta,hostb", "-n", "4", "bash", "-c", "echo ready pid $$; exec sleep 30"],
        4,
    );
    let _ = rx;
    // The proxies are the launcher's children (fork launcher); their ranks
    // are theirs.
    let children = |parent: i32| -> Vec<i32> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
            let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
            if after.split_whitespace().nth(1).and_then(|p| p.parse::<i32>().ok()) == Some(parent) {
                out.push(pid);
            }
        }
        out
    };
    let proxies = children(child.id() as i32);
    assert_eq!(proxies.len(), 2, "{proxies:?}");
    let ranks: Vec<i32> = proxies.iter().flat_map(|&p| children(p)).collect();
    assert_eq!(ranks.len(), 4, "{ranks:?}");
    let cmdline = std::fs::read_to_string(format!("/proc/{}/cmdline", proxies[1])).unwrap();
    let host = cmdline.split('\0').rfind(|w| !w.is_empty()).unwrap().to_string();
    // SAFETY: kill only sends a signal to the proxy this test started.
    unsafe { libc::kill(proxies[1], libc::SIGKILL) };
    let r = wait_with_deadline(child, Duration::from_secs(10), "mpirun with a killed proxy");
    assert_eq!(r.code, Some(1), "{r:#?}");
    assert!(r.stderr.contains(&format!("mpirun: lost the connection to host {host} (")), "{r:#?}");
    assert!(r.stderr.contains("terminating the job"), "{r:#?}");
    let mut all = proxies.clone();
    all.extend(ranks);
    assert_all_gone(&all);
}

// ------------------------------------------------------------- environment

fn env_report() -> &'static str {
    r#"echo "GA=$GA LA=$LA XA=$XA INH=$INHERITED HOME=${HOME:-none} SIZE=$PMI_SIZE LOCAL=$MPI_LOCALNRANKS/$MPI_LOCALRANKID SECRET=$MPICORE_JOB_SECRET LD=$LD_LIBRARY_PATH""#
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace().find_map(|w| w.strip_prefix(&format!("{key}="))).unwrap_or("")
}

#[test]
fn environment_options() {
    let env = [("INHERITED", "yes"), ("LD_LIBRARY_PATH", "/old/lib")];
    let args =
        ["-genv", "GA", "1", "-env", "LA", "2", "-x", "XA=3", "-x", "INHERITED", "-n", "2", "bash", "-c", env_report()];
    let r = mpirun_env(&args, &env);
    r.assert_ok();
    let lines = r.lines();
    assert_eq!(lines.len(), 2);
    let secret = field(lines[0], "SECRET");
    assert_eq!(secret.len(), 32);
    assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()));
    let lib = if exe_dir().join("libmpi.so").exists() { exe_dir() } else { exe_dir().parent().unwrap().join("lib") };
    for line in &lines {
        assert_eq!(field(line, "GA"), "1");
        assert_eq!(field(line, "LA"), "2");
        assert_eq!(field(line, "XA"), "3");
        assert_eq!(field(line, "INH"), "yes");
        assert_eq!(field(line, "SIZE"), "2");
        assert_eq!(field(line, "SECRET"), secret);
        assert_eq!(field(line, "LD"), format!("{}:/old/lib", lib.display()));
    }
    let mut local: Vec<&str> = lines.iter().map(|l| field(l, "LOCAL")).collect();
    local.sort();
    assert_eq!(local, ["2/0", "2/1"]);

    // A new job, a new secret.
    let again = mpirun_env(&["-n", "1", "bash", "-c", env_report()], &env);
    assert_ne!(field(again.lines()[0], "SECRET"), secret);

    // No library path, from the environment or the option.
    for (args, extra) in [
        (vec!["-n", "1", "bash", "-c", env_report()], Some(("MPIRUN_NO_LIBPATH", "1"))),
        (vec!["--no-libpath", "-n", "1", "bash", "-c", env_report()], None),
    ] {
        let mut e = env.to_vec();
        e.extend(extra);
        let r = mpirun_env(&args, &e);
        r.assert_ok();
        assert_eq!(field(r.lines()[0], "LD"), "/old/lib");
    }

    // -genvnone passes only what is set explicitly.
    let r = mpirun_env(&["-genvnone", "-genv", "GA", "1", "-n", "1", "bash", "-c", env_report()], &env);
    r.assert_ok();
    assert_eq!(field(r.lines()[0], "GA"), "1");
    assert_eq!(field(r.lines()[0], "INH"), "");
    assert_eq!(field(r.lines()[0], "HOME"), "none");
}

#[test]
fn installed_prefix_layout_gets_library_path_and_aliases() {
    let tmp = TempDir::new("prefix");
    let (bin, lib) = (tmp.path().join("bin"), tmp.path().join("lib"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::copy(MPIRUN, bin.join("mpirun")).unwrap();
    std::fs::write(lib.join("libmpi.so"), b"not really a library").unwrap();
    let r = run_prog(
        bin.join("mpirun").to_str().unwrap(),
        &["-n", "1", "bash", "-c", "echo LD=$LD_LIBRARY_PATH"],
        &[("LD_LIBRARY_PATH", "")],
        None,
    );
    r.assert_ok();
    assert_eq!(r.stdout.trim(), format!("LD={}", lib.display()));
    for alias in ["libmpi.so.12", "libmpich.so.12"] {
        assert_eq!(std::fs::read_link(lib.join(alias)).unwrap(), Path::new("libmpi.so"), "{alias}");
    }
}

#[test]
fn working_directory() {
    let tmp = TempDir::new("wdir");
    let dir = tmp.path().canonicalize().unwrap();
    std::fs::write(dir.join("hello.sh"), "#!/bin/sh\necho hello from $(pwd)\n").unwrap();
    std::fs::set_permissions(dir.join("hello.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let d = dir.to_str().unwrap();
    for opt in ["-wdir", "--wdir", "-wd"] {
        // A relative program is found in the working directory.
        let r = mpirun(&[opt, d, "-n", "2", "./hello.sh"]);
        r.assert_ok();
        assert_eq!(r.lines(), [format!("hello from {d}"), format!("hello from {d}")]);
    }
}

// ------------------------------------------------------------- command line

#[test]
fn command_line_handling() {
    let r = mpirun(&["--help"]);
    r.assert_ok();
    for opt in [
        "-np",
        "-host",
        "-ppn",
        "-genv",
        "-env",
        "-x",
        "-genvall",
        "-genvnone",
        "-l",
        "-wdir",
        "--oversubscribe",
        "--allow-run-as-root",
        "--bind-to",
        "--version",
        "MPIEXEC_TIMEOUT",
    ] {
        assert!(r.stdout.contains(opt), "--help does not mention {opt}");
    }
    assert_eq!(mpirun(&["-h"]).code, Some(0));
    let r = mpirun(&["--version"]);
    r.assert_ok();
    assert!(r.stdout.contains("mpi-launcher"));

    let r = mpirun(&["--frobnicate", "true"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("unknown option '--frobnicate'"), "{r:#?}");
    let r = mpirun(&["-n", "zero", "true"]);
    assert_eq!(r.code, Some(2));
    assert_eq!(mpirun(&["-n", "2"]).code, Some(2));

    let r = mpirun(&["-n", "2", "no-such-program-xyz"]);
    assert_eq!(r.code, Some(127));
    assert!(r.stderr.contains("no-such-program-xyz"), "{r:#?}");

    // A launch agent that cannot start the proxy.
    let r = mpirun(&["-launcher-exec", "false", "-host", "faraway.example.org", "-n", "1", "true"]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("the launch agent for host faraway.example.org exited with code 1"), "{r:#?}");
    let r = mpirun(&["-launcher", "telnet", "-host", "a", "true"]);
    assert_eq!(r.code, Some(2));

    // This machine under all its names; options other launchers use.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    let hosts = format!("localhost,127.0.0.1,{host}");
    let r = mpirun(&[
        "--host",
        &hosts,
        "-ppn",
        "1",
        "--oversubscribe",
        "--allow-run-as-root",
        "--bind-to",
        "core",
        "-bind-to",
        "none",
        "-genvall",
        "bash",
        "-c",
        "echo $PMI_RANK",
    ]);
    r.assert_ok();
    let mut lines = r.lines();
    lines.sort();
    assert_eq!(lines, ["0", "1", "2"]);
    // More ranks than cores is fine.
    assert_eq!(mpirun(&["-np", "9", "true"]).code, Some(0));
}

// ------------------------------------------------------------ MPICH client

#[test]
fn debian_mpich_program_runs_on_this_pmi_server() {
    if Command::new("mpicc.mpich").arg("-show").output().is_err() {
        eprintln!("note: mpicc.mpich not installed; MPICH client test skipped");
        return;
    }
    let tmp = TempDir::new("mpich");
    let src = tmp.path().join("ring.c");
    std::fs::write(
        &src,
        r#"#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, got = -1, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, token = 100 + rank;
    MPI_Sendrecv(&token, 1, MPI_INT, next, 7, &got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d of %d got %d sum %d\n", rank, size, got, sum);
    MPI_Finalize();
    return 0;
}
"#,
    )
    .unwrap();
    let exe = tmp.path().join("ring");
    mpich_compile(&src, &exe);
    for n in [2usize, 4] {
        let r = mpirun_env(&["-n", &n.to_string(), exe.to_str().unwrap()], &[("MPIRUN_NO_LIBPATH", "1")]);
        r.assert_ok();
        let mut lines = r.lines();
        lines.sort();
        let sum = n * (n - 1) / 2;
        let want: Vec<String> =
            (0..n).map(|i| format!("rank {i} of {n} got {} sum {sum}", 100 + (i + n - 1) % n)).collect();
        assert_eq!(lines, want, "{r:#?}");
    }
}

fn mpich_compile(src: &Path, exe: &Path) {
    let cc = Command::new("mpicc.mpich").arg(src).arg("-o").arg(exe).output().unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
}

#[test]
fn mpich_binaries_load_our_library_through_the_alias() {
    if Command::new("mpicc.mpich").arg("-show").output().is_err() {
        eprintln!("note: mpicc.mpich not installed; libmpich.so.12 alias test skipped");
        return;
    }
    assert!(real_library_built(), "mpi-core could not be built");
    let tmp = TempDir::new("alias");
    let src = tmp.path().join("which.c");
    std::fs::write(
        &src,
        r#"#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
int main(void) {
    Dl_info info;
    if (!dladdr((void *)MPI_Get_version, &info)) return 1;
    printf("%s\n", info.dli_fname);
    return 0;
}
"#,
    )
    .unwrap();
    let exe = tmp.path().join("which");
    mpich_compile(&src, &exe);
    let r = mpirun(&["-n", "1", exe.to_str().unwrap()]);
    r.assert_ok();
    assert_eq!(r.stdout.trim(), exe_dir().join("libmpich.so.12").display().to_string());
    let r = mpirun_env(&["-n", "1", exe.to_str().unwrap()], &[("MPIRUN_NO_LIBPATH", "1"), ("LD_LIBRARY_PATH", "")]);
    r.assert_ok();
    assert!(!r.stdout.contains(&exe_dir().display().to_string()), "{r:#?}");
}

// ---------------------------------------------------------- mpicc / mpicxx

#[test]
fn mpicc_show_and_info() {
    let (inc, lib) = if exe_dir().join("include/mpi.h").exists() {
        (exe_dir().join("include"), exe_dir())
    } else {
        (exe_dir().parent().unwrap().join("include"), exe_dir().parent().unwrap().join("lib"))
    };
    let (inc, lib) = (inc.display().to_string(), lib.display().to_string());
    let link = format!("-L{lib} -Wl,-rpath,{lib} -lmpi");
    type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)], String);
    let cases: [Case; 6] = [
        (MPICC, &["-show", "-O2", "a.c", "-o", "a"], &[], format!("cc -O2 a.c -o a -I{inc} {link}")),
        (MPICC, &["-show", "-c", "a.c"], &[("MPICH_CC", "gcc")], format!("gcc -c a.c -I{inc}")),
        (MPICC, &["-show", "a.c"], &[("MPICC_CC", "clang")], format!("clang a.c -I{inc} {link}")),
        (MPICXX, &["-show", "b.cc"], &[], format!("c++ b.cc -I{inc} {link}")),
        (MPICC, &["-compile_info"], &[], format!("cc -I{inc}")),
        (MPICC, &["-link_info"], &[], format!("cc -I{inc} {link}")),
    ];
    for (tool, args, env, want) in cases {
        let r = run_prog(tool, args, env, None);
        r.assert_ok();
        assert_eq!(r.stdout.trim_end(), want, "{tool} {args:?}");
    }
    let r = run_prog(MPICC, &["--help"], &[], None);
    r.assert_ok();
    assert!(r.stdout.contains("-show") && r.stdout.contains("-compile_info") && r.stdout.contains("-link_info"));
}

/// A C program using only MPI_Get_version, which any build of the library
/// exports.
const VERSION_C: &str = r#"#include <mpi.h>
#include <stdio.h>
int main(void) {
    int v = 0, s = 0;
    MPI_Get_version(&v, &s);
    printf("MPI %d.%d header %d.%d\n", v, s, MPI_VERSION, MPI_SUBVERSION);
    return 0;
}
"#;

#[test]
fn mpicc_builds_against_a_prefix_and_exit_code_passes_through() {
    // A stand-in installation: bin/mpicc, include/mpi.h, lib/libmpi.so.
    let tmp = TempDir::new("cc");
    let root = tmp.path();
    for d in ["bin", "include", "lib"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::copy(MPICC, root.join("bin/mpicc")).unwrap();
    std::fs::write(
        root.join("include/mpi.h"),
        "#define MPI_VERSION 4\n#define MPI_SUBVERSION 0\nint MPI_Get_version(int *, int *);\n",
    )
    .unwrap();
    std::fs::write(root.join("fake.c"), "int MPI_Get_version(int *v, int *s) { *v = 4; *s = 0; return 0; }\n").unwrap();
    let lib = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(root.join("lib/libmpi.so"))
        .arg(root.join("fake.c"))
        .status();
    if !lib.is_ok_and(|s| s.success()) {
        eprintln!("note: no working C compiler; mpicc compile test skipped");
        return;
    }
    std::fs::write(root.join("v.c"), VERSION_C).unwrap();
    let mpicc = root.join("bin/mpicc");
    let exe = root.join("v");
    let r = run_prog(
        mpicc.to_str().unwrap(),
        &[root.join("v.c").to_str().unwrap(), "-o", exe.to_str().unwrap()],
        &[],
        None,
    );
    r.assert_ok();
    // The rpath finds the library without LD_LIBRARY_PATH.
    let out = Command::new(&exe).env_remove("LD_LIBRARY_PATH").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "MPI 4.0 header 4.0\n");
    // The compiler's failure is the wrapper's failure.
    std::fs::write(root.join("bad.c"), "int main(void) { return missing; }\n").unwrap();
    let r =
        run_prog(mpicc.to_str().unwrap(), &["-c", root.join("bad.c").to_str().unwrap(), "-o", "/dev/null"], &[], None);
    assert_eq!(r.code, Some(1), "{r:#?}");
    assert!(r.stderr.contains("missing"), "{r:#?}");
    let r = run_prog(mpicc.to_str().unwrap(), &["x.c"], &[("MPICH_CC", "no-such-compiler-xyz")], None);
    assert_eq!(r.code, Some(127), "{r:#?}");
}

/// Makes sure the real header and library exist in the target directory,
/// building mpi-core if needed.
fn real_library_built() -> bool {
    let dir = exe_dir();
    let ready = || dir.join("include/mpi.h").exists() && dir.join("libmpi.so").exists();
    if ready() {
        return true;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-p", "mpi-core"]).current_dir(env!("CARGO_MANIFEST_DIR"));
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let ok = cmd.status().is_ok_and(|s| s.success());
    ok && ready()
}

#[test]
fn mpicc_and_mpirun_with_the_real_library() {
    assert!(real_library_built(), "mpi-core could not be built; run `cargo build -p mpi-core` and look at the errors");
    let tmp = TempDir::new("real");
    let src = tmp.path().join("v.c");
    let exe = tmp.path().join("v");
    std::fs::write(&src, VERSION_C).unwrap();
    let r = run_prog(MPICC, &[src.to_str().unwrap(), "-o", exe.to_str().unwrap()], &[], None);
    r.assert_ok();
    let r = mpirun(&["-n", "2", exe.to_str().unwrap()]);
    r.assert_ok();
    assert_eq!(r.lines(), ["MPI 4.0 header 4.0", "MPI 4.0 header 4.0"]);
    for alias in ["libmpi.so.12", "libmpich.so.12"] {
        assert!(exe_dir().join(alias).exists(), "{alias} missing next to libmpi.so");
    }
    // The same program as C++.
    let src = tmp.path().join("v.cc");
    std::fs::write(&src, VERSION_C).unwrap();
    let r = run_prog(MPICXX, &[src.to_str().unwrap(), "-o", exe.to_str().unwrap()], &[], None);
    r.assert_ok();
    let r = mpirun(&["-n", "1", exe.to_str().unwrap()]);
    assert_eq!(r.lines(), ["MPI 4.0 header 4.0"]);
}
