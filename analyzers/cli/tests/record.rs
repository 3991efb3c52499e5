//! `mpitrace record` end to end on Debian's MPICH (and Open MPI), and the
//! Parquet files read by an independent reader (pyarrow, when installed).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{bin_dir, build_ours, build_shim};
use trace_format::Trace;

fn scratch(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let d = exe.parent().unwrap().parent().unwrap().join("mpitrace-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn compile(src: &str, dir: &Path) -> PathBuf {
    compile_with("mpicc.mpich", src, dir)
}

/// Compiles `pmpi-shim/tests/c/<src>` with the compiler wrapper `mpicc`.
fn compile_with(mpicc: &str, src: &str, dir: &Path) -> PathBuf {
    let c = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pmpi-shim/tests/c");
    let out = dir.join(src.trim_end_matches(".c"));
    let st = Command::new(mpicc)
        .env_remove("LD_LIBRARY_PATH")
        .args(["-O1", "-g", "-Wno-stringop-overflow", "-I"])
        .arg(c.join("../../include"))
        .arg(c.join(src))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("{mpicc}: {e} (install Debian's libmpich-dev or libopenmpi-dev)"));
    assert!(st.success());
    out
}

fn record(trace: &Path, n: usize, exe: &Path, args: &[&str]) -> Output {
    record_with(&["mpiexec.mpich"], trace, n, exe, args)
}

/// `mpitrace record -o trace -- <launcher...> -n n exe args`.
fn record_with(launcher: &[&str], trace: &Path, n: usize, exe: &Path, args: &[&str]) -> Output {
    build_shim();
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(env!("CARGO_BIN_EXE_mpitrace"))
        .arg("record")
        .arg("-o")
        .arg(trace)
        .arg("--")
        .args(launcher)
        .args(["-n", &n.to_string()])
        .arg(exe)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "timed out");
    out
}

#[test]
fn record_p2p_and_read_with_pyarrow() {
    let dir = scratch("record-p2p");
    let exe = compile("p2p.c", &dir);
    let trace = dir.join("trace");
    let out = record(&trace, 2, &exe, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("2 ranks of"), "{err}");
    assert!(err.contains("events"), "{err}");
    let t = Trace::open(&trace).unwrap();
    assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.meta.written_by, "record");
    assert_eq!(t.meta.launch_command[0], "mpiexec.mpich");
    let total: usize = t.ranks.values().map(|r| r.events.len()).sum();
    // No journals, and no empty journal folder, are left once the trace is
    // finished.
    assert!(!trace.join("journal").exists());

    let script = format!(
        "import sys\ntry:\n    import pyarrow.parquet as pq\nexcept ImportError:\n    print('SKIP'); sys.exit(0)\n\
         import glob\nt = pq.read_table(sorted(glob.glob('{}/events/*.parquet')))\n\
         calls = t.column('call').to_pylist()\n\
         print(t.num_rows, calls.count('MPI_Send'), len(pq.read_table(sorted(glob.glob('{}/comms/*.parquet')))))",
        trace.display(),
        trace.display()
    );
    let py = Command::new("python3").arg("-c").arg(script).output().unwrap();
    let text = String::from_utf8_lossy(&py.stdout);
    assert!(py.status.success(), "{}", String::from_utf8_lossy(&py.stderr));
    if text.trim() == "SKIP" {
        panic!("pyarrow is not installed: the independent-reader check needs it (pip install pyarrow; tests/run-all.sh installs it)");
    }
    let nums: Vec<usize> = text.split_whitespace().map(|s| s.parse().unwrap()).collect();
    let sends = t.events().filter(|e| e.is_call("MPI_Send")).count();
    // comms files: per rank world, self and its half of the split.
    assert_eq!(nums, vec![total, sends, 6]);
}

/// On Open MPI (its own ABI), `record` recognises `mpirun.openmpi` and
/// exports the shim's variables to every rank with `-x`.
#[test]
fn record_p2p_on_open_mpi() {
    let dir = scratch("record-p2p-ompi");
    let exe = compile_with("mpicc.openmpi", "p2p.c", &dir);
    let trace = dir.join("trace");
    let launcher = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"];
    let out = record_with(&launcher, &trace, 3, &exe, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("3 ranks of"), "{err}");
    let t = Trace::open(&trace).unwrap();
    assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
    assert!(t.meta.mpi_library.starts_with("Open MPI"), "{}", t.meta.mpi_library);
    assert_eq!(
        t.meta.launch_command,
        launcher
            .iter()
            .chain(&["-n", "3"])
            .map(|s| s.to_string())
            .chain([exe.display().to_string()])
            .collect::<Vec<_>>()
    );
    for r in 0..3 {
        assert!(t.rank_events(r).iter().any(|e| e.is_call("MPI_Allreduce")), "rank {r}");
    }
}

#[test]
fn record_killed_rank_and_exit_code() {
    let dir = scratch("record-kill");
    let exe = compile("crash.c", &dir);
    let trace = dir.join("trace");
    let out = record(&trace, 2, &exe, &["kill"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "the job's failure is passed through: {err}");
    assert!(err.contains("did not finalize"), "{err}");
    // Recording again into the same directory is refused.
    let again = record(&trace, 2, &exe, &["kill"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a trace"));
    let t = Trace::open(&trace).unwrap();
    assert_eq!(t.meta.ranks, 2);
    assert_eq!(t.rank_events(1).iter().filter(|e| e.is_call("MPI_Send")).count(), 3);
    assert!(!t.is_complete());
    // Each rank's level-of-detail cache was written at conversion (the
    // killed rank's by mpitrace after the job), and a viewer opens it.
    let lod = trace_lod::Lod::open_cached(&trace).unwrap();
    assert_eq!(lod.ranks.len(), 2);
    assert!(lod.ranks.iter().all(|r| r.data.is_coarse() && r.data.n_calls() > 0));
    assert!(matches!(lod.ranks[1].state, trace_lod::RankState::Partial(_)), "{:?}", lod.ranks[1].state);
}

#[test]
fn unwritable_output_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_mpitrace"))
        .args(["record", "-o", "/proc/mpitrace-cannot-be-here", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("cannot create the trace directory") || err.contains("not found"), "{err}");
}

/// The same through this project's MPI (mpi-core's mpicc and mpirun), when
/// they are built next to mpitrace; skipped otherwise.
#[test]
fn record_on_the_project_mpi() {
    let bin = Path::new(env!("CARGO_BIN_EXE_mpitrace")).parent().unwrap().to_path_buf();
    let (mpicc, mpirun) = (bin.join("mpicc"), bin.join("mpirun"));
    if !mpicc.exists() || !mpirun.exists() {
        panic!("mpi-core's mpicc/mpirun are not built next to mpitrace (cargo build --workspace first)");
    }
    let dir = scratch("record-own");
    let c = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pmpi-shim");
    let exe = dir.join("p2p");
    let st = Command::new(&mpicc)
        .args(["-O1", "-g", "-Wno-stringop-overflow", "-I"])
        .arg(c.join("include"))
        .arg(c.join("tests/c/p2p.c"))
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(st.success());
    build_shim();
    let trace = dir.join("trace");
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(env!("CARGO_BIN_EXE_mpitrace"))
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&mpirun)
        .args(["-n", "2"])
        .arg(&exe)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let t = Trace::open(&trace).unwrap();
    assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
    assert!(t.meta.mpi_library.contains("mpi-core"), "{}", t.meta.mpi_library);
    let sends = t.events().filter(|e| e.is_call("MPI_Send")).count();
    assert_eq!(sends, 5 + 5 + 1);
}

// Stopping `mpitrace record` with a signal (issue 20.11): endless.c runs
// until it is stopped, on two ranks; each test kills what its job left
// running, found by a marker argument in the processes' command lines.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mpi {
    /// Debian's MPICH (hydra's mpiexec).
    Mpich,
    /// This project's mpicc and mpirun.
    Ours,
}

/// endless.c compiled for `mpi` into `dir`.
fn compile_endless(mpi: Mpi, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/endless.c");
    let out = dir.join("endless");
    let cc = match mpi {
        Mpi::Mpich => PathBuf::from("mpicc.mpich"),
        Mpi::Ours => {
            build_ours();
            bin_dir().join("mpicc")
        }
    };
    let st = Command::new(cc).env_remove("LD_LIBRARY_PATH").args(["-O1", "-g"]).arg(&src).arg("-o").arg(&out).status();
    assert!(st.unwrap().success(), "compiling endless.c for {mpi:?} failed");
    out
}

/// Live processes whose command line holds `marker` (a zombie's command
/// line is empty: it is gone but for its exit status).
fn processes_with(marker: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else { continue };
        if cmdline.split(|&b| b == 0).any(|arg| arg == marker.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// Kills every process of a test's job on drop, so that a failing test
/// leaves nothing running.
struct Reaper(String);

impl Reaper {
    fn kill_all(&self) {
        for pid in processes_with(&self.0) {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// `mpitrace record` of endless.c, running.
struct Recording {
    child: std::process::Child,
    /// mpitrace's standard error, whole, once every holder closed it.
    stderr: std::sync::mpsc::Receiver<String>,
    trace: PathBuf,
    marker: String,
    started: std::time::Instant,
    // Last: the job is killed after mpitrace (the fields drop in order).
    reaper: Reaper,
}

impl Recording {
    /// Starts the recording (`extra`: options of `record`) and returns once
    /// every rank made 100 iterations.
    fn start(name: &str, mpi: Mpi, mode: &str, extra: &[&str]) -> Recording {
        build_shim();
        let dir = scratch(name);
        let exe = compile_endless(mpi, &dir);
        let trace = dir.join("trace");
        let marker = format!("mpitrace-test-{name}-{}", std::process::id());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mpitrace"));
        cmd.arg("record").args(extra).arg("-o").arg(&trace).arg("--");
        match mpi {
            Mpi::Mpich => {
                cmd.env_remove("LD_LIBRARY_PATH").arg("mpiexec.mpich");
            }
            Mpi::Ours => {
                cmd.arg(bin_dir().join("mpirun"));
            }
        }
        cmd.args(["-n", "2"]).arg(&exe).args([mode, &marker]);
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let reaper = Reaper(marker.clone());
        let mut stderr = child.stderr.take().unwrap();
        let (err_tx, err_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
            let _ = err_tx.send(s);
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let started = std::time::Instant::now();
        let mut rec = Recording { child, stderr: err_rx, trace, marker, started, reaper };
        loop {
            match rx.recv_timeout(std::time::Duration::from_secs(60)) {
                Ok(line) if line == "ready" => break,
                Ok(_) => continue,
                Err(_) => {
                    let _ = rec.child.kill();
                    let _ = rec.child.wait();
                    panic!("the job did not get ready: {}", rec.stderr());
                }
            }
        }
        rec
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill has no memory preconditions.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    /// Waits (at most 60 s) for mpitrace to end: its exit code, its
    /// standard error, and how long it took since `since`.
    fn finish(mut self, since: std::time::Instant) -> (Option<i32>, String, std::time::Duration) {
        let bound = std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            if since.elapsed() > bound {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("mpitrace did not end within {bound:?}: {}", self.stderr());
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let took = since.elapsed();
        eprintln!(
            "{}: mpitrace ended {took:?} after the signal ({:?} after the start)",
            self.marker,
            self.started.elapsed()
        );
        // Every process of the job is gone (they are all dead when mpitrace
        // returns; a short bound for the kernel's bookkeeping).
        let gone_by = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while !processes_with(&self.marker).is_empty() && std::time::Instant::now() < gone_by {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let left = processes_with(&self.marker);
        self.reaper.kill_all();
        let err = self.stderr();
        assert_eq!(left, Vec::<i32>::new(), "job processes left running: {err}");
        (status.code(), err, took)
    }

    /// mpitrace's standard error (what came within 10 s, if a process
    /// that is not mpitrace's keeps the pipe open).
    fn stderr(&self) -> String {
        self.stderr.recv_timeout(std::time::Duration::from_secs(10)).unwrap_or_else(|_| "(stderr still open)".into())
    }
}

/// The trace of a stopped endless.c: both ranks' calls up to the stop,
/// converted (no journal folder left), partial.
fn check_stopped_trace(trace: &Path, err: &str) {
    assert!(!trace.join("journal").exists(), "journal folder left: {err}");
    let t = Trace::open(trace).unwrap();
    assert_eq!(t.meta.ranks, 2, "{err}");
    for r in 0..2 {
        let ev = t.rank_events(r);
        let n = |call: &str| ev.iter().filter(|e| e.is_call(call)).count();
        // At "ready" rank 0 finished iteration 100, so each rank did at
        // least 100 exchanges and entered 100 barriers.
        assert!(n("MPI_Sendrecv") >= 100 && n("MPI_Barrier") >= 100, "rank {r}: {} events; {err}", ev.len());
        assert_eq!(n("MPI_Init"), 1, "rank {r}");
    }
    assert!(!t.is_complete(), "the ranks were stopped, the trace says so");
    assert!(err.contains("2 ranks of"), "the summary line: {err}");
}

fn stop_case(name: &str, mpi: Mpi, sig: i32, sig_name: &str) {
    let rec = Recording::start(name, mpi, "run", &[]);
    let trace = rec.trace.clone();
    let t0 = std::time::Instant::now();
    rec.signal(sig);
    let (code, err, took) = rec.finish(t0);
    assert_eq!(code, Some(128 + sig), "{err}");
    assert!(err.contains(&format!("{sig_name} received: stopping the job")), "{err}");
    assert!(err.contains(&format!("the job was stopped by {sig_name}; the trace in")), "{err}");
    // The job stopped when asked: no SIGKILL was needed.
    assert!(!err.contains("SIGKILL)"), "{err}");
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    check_stopped_trace(&trace, &err);
}

#[test]
fn sigterm_to_record_stops_the_job_and_keeps_the_trace() {
    stop_case("stop-term-mpich", Mpi::Mpich, libc::SIGTERM, "SIGTERM");
}

#[test]
fn sigint_to_record_stops_the_job_and_keeps_the_trace() {
    stop_case("stop-int-ours", Mpi::Ours, libc::SIGINT, "SIGINT");
}

#[test]
fn sighup_to_record_stops_the_job_and_keeps_the_trace() {
    stop_case("stop-hup-mpich", Mpi::Mpich, libc::SIGHUP, "SIGHUP");
}

/// A job that ignores SIGTERM is killed after --kill-after.
#[test]
fn a_job_that_does_not_stop_is_killed_after_the_grace() {
    let rec = Recording::start("stop-grace-ours", Mpi::Ours, "ignore-term", &["--kill-after", "1"]);
    let trace = rec.trace.clone();
    let t0 = std::time::Instant::now();
    rec.signal(libc::SIGTERM);
    let (code, err, took) = rec.finish(t0);
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains("the job still runs 1 s after SIGTERM: killing it (SIGKILL)"), "{err}");
    assert!(took >= std::time::Duration::from_secs(1) && took < std::time::Duration::from_secs(8), "{took:?}");
    check_stopped_trace(&trace, &err);
}

/// A second signal does not wait for the grace (10 s by default).
#[test]
fn a_second_signal_kills_the_job_at_once() {
    let rec = Recording::start("stop-twice-mpich", Mpi::Mpich, "ignore-term", &[]);
    let trace = rec.trace.clone();
    let t0 = std::time::Instant::now();
    rec.signal(libc::SIGTERM);
    std::thread::sleep(std::time::Duration::from_millis(300));
    rec.signal(libc::SIGINT);
    let (code, err, took) = rec.finish(t0);
    // The first signal is the one that stopped the recording.
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains("SIGINT received again: killing the job (SIGKILL)"), "{err}");
    assert!(took < std::time::Duration::from_secs(8), "{took:?}");
    check_stopped_trace(&trace, &err);
}

/// Ctrl-C on a terminal reaches mpitrace and the job together (they share
/// the terminal's foreground process group): mpitrace does not pass it on
/// again (our mpirun would take a second one as "kill now") and keeps the
/// trace. `script` provides the terminal; the test writes Ctrl-C into it.
#[test]
fn ctrl_c_on_a_terminal_reaches_the_job_once() {
    build_shim();
    build_ours();
    let dir = scratch("stop-tty-ours");
    let exe = compile_endless(Mpi::Ours, &dir);
    let trace = dir.join("trace");
    let marker = format!("mpitrace-test-tty-{}", std::process::id());
    let _reaper = Reaper(marker.clone());
    let cmd = format!(
        "{} record -o {} -- {} -n 2 {} run {marker}",
        env!("CARGO_BIN_EXE_mpitrace"),
        trace.display(),
        bin_dir().join("mpirun").display(),
        exe.display()
    );
    let mut child = Command::new("timeout")
        .args(["-k", "5", "60", "script", "-qec", &cmd, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs the command on a terminal");
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("ready") {
        let mut buf = [0u8; 4096];
        let n = std::io::Read::read(&mut stdout, &mut buf).unwrap();
        assert!(n > 0, "the job ended before it was ready: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"\x03").unwrap();
    std::io::Read::read_to_end(&mut stdout, &mut seen).unwrap();
    let status = child.wait().unwrap();
    let tty = String::from_utf8_lossy(&seen);
    assert_eq!(status.code(), Some(130), "{tty}");
    assert!(tty.contains("SIGINT received: stopping the job (sent to the job by the terminal"), "{tty}");
    assert!(!tty.contains("received again"), "the job got Ctrl-C twice: {tty}");
    assert!(tty.contains("the job was stopped by SIGINT"), "{tty}");
    assert_eq!(processes_with(&marker), Vec::<i32>::new());
    check_stopped_trace(&trace, &tty);
}

/// Events per rank of a trace, by call name.
fn calls_per_rank(trace: &Path) -> Vec<std::collections::BTreeMap<String, usize>> {
    let t = Trace::open(trace).unwrap();
    assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
    (0..t.meta.ranks as i32)
        .map(|r| {
            let mut m = std::collections::BTreeMap::new();
            for e in t.rank_events(r) {
                *m.entry(e.call.to_string()).or_insert(0) += 1;
            }
            m
        })
        .collect()
}

/// The journals a run left (`MPITRACE_NO_CONVERT=1`) become, with `mpitrace
/// convert`, the trace `mpitrace record` makes of the same program; `record`
/// into such a directory says to convert it; `convert` without journals is
/// a clear error.
#[test]
fn convert_leftover_journals() {
    let dir = scratch("convert");
    let exe = compile("p2p.c", &dir);
    let recorded = dir.join("recorded");
    let out = record(&recorded, 2, &exe, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let left = dir.join("left");
    let lib = bin_dir().join("libmpitrace.so");
    let out = Command::new("timeout")
        .args(["-k", "5", "120", "mpiexec.mpich", "-n", "2", "env"])
        .arg(format!("LD_PRELOAD={}", lib.display()))
        .arg(format!("MPITRACE_DIR={}", left.display()))
        .arg("MPITRACE_NO_CONVERT=1")
        .arg(&exe)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!left.join("events").exists() && left.join("journal").is_dir());

    let again = record(&left, 2, &exe, &[]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(err.contains("not converted") && err.contains(&format!("mpitrace convert {}", left.display())), "{err}");

    let mpitrace =
        |args: &[&str], d: &Path| Command::new(env!("CARGO_BIN_EXE_mpitrace")).args(args).arg(d).output().unwrap();
    let out = mpitrace(&["convert"], &left);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("2 ranks of") && err.contains("events"), "{err}");
    assert!(!left.join("journal").exists(), "journal folder left after convert");
    let (a, b) = (calls_per_rank(&recorded), calls_per_rank(&left));
    assert_eq!(a.len(), 2);
    assert_eq!(a, b, "the converted trace has the same rows per rank as a recorded one");
    assert_eq!(Trace::open(&left).unwrap().meta.written_by, "record");

    // Nothing left to convert: a converted trace, an empty or missing folder.
    let out = mpitrace(&["convert"], &left);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no journals to convert: the trace is converted already"));
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = mpitrace(&["convert"], &empty);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no journals to convert") && err.contains("not a trace directory"), "{err}");
    let out = mpitrace(&["convert"], &dir.join("missing"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such directory"));
}
