//! `mpitrace record`: run a job with the shim preloaded and finish its trace.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use trace_format::{layout, table};

use crate::signals::{self, Event, Signals};

/// `eprintln!` that cannot fail: when mpitrace is stopped, its standard
/// error may be a hung-up terminal or a pipe whose reader died with the
/// same Ctrl-C (`| tee log`), and `eprintln!` would panic there before the
/// journals are converted.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

#[derive(Args)]
pub struct RecordArgs {
    /// Trace directory (default: ./mpitrace-<UTC time>).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// The shim to preload (default: libmpitrace.so next to this program,
    /// or $MPITRACE_LIB).
    #[arg(long)]
    lib: Option<PathBuf>,
    /// Keep the raw journals next to the Parquet files.
    #[arg(long)]
    keep_journals: bool,
    /// When mpitrace is stopped by SIGINT, SIGTERM or SIGHUP it passes the
    /// signal on to the job, then kills the job (SIGKILL) if it still runs
    /// after this many seconds; the trace keeps what was recorded.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_seconds)]
    kill_after: Duration,
    /// Hang diagnosis: when no rank has finished an MPI call for this many
    /// seconds while some rank is in one, print where every rank is (call,
    /// communicator, peer, tag, call site, since when), who waits for whom
    /// and the deadlocks, and write it to hang.json in the trace directory.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    hang_after: Option<Duration>,
    /// With --hang-after: end the job when it hangs (as a SIGTERM to
    /// mpitrace would; the trace is converted as for a crash).
    #[arg(long)]
    kill_on_hang: bool,
    /// Show the live view (`mpitrace top`) while the job runs; the job's
    /// output goes to job-output.log in the trace directory, and hangs
    /// are diagnosed after 30 s unless --hang-after says otherwise. `q`
    /// leaves the view, the job runs on.
    #[arg(long)]
    live: bool,
    /// Checksum the buffer of every nonblocking send when it starts and
    /// when it completes: `mpitrace check --correctness` reports the sends
    /// whose data the program changed meanwhile (send-buffer-modified).
    /// Costs a read of each such buffer twice (see pmpi-shim/BENCHMARKS.md).
    #[arg(long)]
    check_buffers: bool,
    /// Record call paths of this many return addresses (the call site and
    /// its callers; MPITRACE_CALLPATH): `mpitrace report` then shows a
    /// call-tree profile. Costs an unwind per call (pmpi-shim/BENCHMARKS.md).
    #[arg(long, value_name = "DEPTH")]
    callpath: Option<u32>,
    /// How call paths are unwound: `dwarf` (any code, the default) or `fp`
    /// (frame pointers: faster, for code built with -fno-omit-frame-pointer).
    #[arg(long, value_name = "dwarf|fp", value_parser = ["dwarf", "fp"])]
    unwind: Option<String>,
    /// Hardware counters to read at every MPI call, comma-separated
    /// (MPITRACE_COUNTERS: cycles, instructions, cache-misses, branches,
    /// branch-misses, task-clock, page-faults...): `mpitrace report` gives
    /// them per rank, with IPC and imbalance. Those the kernel refuses are
    /// named once and left out.
    #[arg(long, value_name = "LIST")]
    counters: Option<String>,
    /// The launcher and its arguments, e.g. `mpiexec -n 4 ./app`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Args)]
pub struct ConvertArgs {
    /// The trace directory holding the journals.
    dir: PathBuf,
    /// Keep the raw journals next to the Parquet files.
    #[arg(long)]
    keep_journals: bool,
}

fn parse_seconds(s: &str) -> std::result::Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{s}` is not a duration in seconds"))
}

/// Where libmpitrace.so is: --lib, $MPITRACE_LIB, or next to this binary
/// (cargo builds both into target/<profile>/).
fn find_lib(arg: Option<PathBuf>) -> Result<PathBuf> {
    let candidate = match arg.or_else(|| std::env::var_os("MPITRACE_LIB").map(PathBuf::from)) {
        Some(p) => p,
        None => {
            let exe = std::env::current_exe().context("locating the mpitrace binary")?;
            let dir = exe.parent().context("mpitrace binary has no directory")?;
            let here = dir.join("libmpitrace.so");
            // Test binaries live in target/<profile>/deps.
            if !here.exists() && dir.ends_with("deps") {
                dir.parent().unwrap_or(dir).join("libmpitrace.so")
            } else {
                here
            }
        }
    };
    if !candidate.exists() {
        bail!("{}: not found; build it with `cargo build -p pmpi-shim` or pass --lib", candidate.display());
    }
    Ok(std::fs::canonicalize(&candidate)?)
}

fn default_dir() -> PathBuf {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    PathBuf::from(format!("mpitrace-{secs}"))
}

/// Refuses a directory that holds a trace or the journals of one.
fn check_unused(dir: &Path) -> Result<()> {
    if has_journals(dir) {
        bail!(
            "{} holds the journals of an earlier run that were not converted: convert them with \
             `mpitrace convert {}`, or choose another directory with -o",
            dir.display(),
            dir.display()
        );
    }
    if dir.join(layout::META).exists()
        || dir.join(layout::EVENTS_DIR).exists()
        || dir.join(layout::JOURNAL_DIR).exists()
    {
        bail!("{} already holds a trace; choose another directory with -o", dir.display());
    }
    Ok(())
}

/// Whether `dir` holds journals or side files of any rank.
fn has_journals(dir: &Path) -> bool {
    !layout::ranks_in(dir, layout::JOURNAL_DIR, ".journal").is_empty()
        || !layout::ranks_in(dir, layout::JOURNAL_DIR, ".side.jsonl").is_empty()
}

/// Whether `launcher` is Open MPI's (`mpirun.openmpi`, `mpiexec.openmpi`,
/// `orterun`, `prterun`, or `mpirun`/`mpiexec` resolving to one of them, as
/// Debian's alternatives make them), which takes `-x VAR` to export a
/// variable to its ranks.
fn is_open_mpi_launcher(launcher: &str) -> bool {
    let open_mpi_name =
        |name: &str| matches!(name, "orterun" | "prterun" | "mpirun.openmpi" | "mpiexec.openmpi" | "oshrun");
    let path = Path::new(launcher);
    if path.file_name().and_then(|n| n.to_str()).is_some_and(open_mpi_name) {
        return true;
    }
    // Follow the symbolic links (mpirun -> /etc/alternatives/mpirun ->
    // mpirun.openmpi -> orterun) of the program the job would run.
    let found = if launcher.contains('/') {
        Some(path.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(launcher)).find(|c| c.is_file()))
    };
    let Some(real) = found.and_then(|p| std::fs::canonicalize(p).ok()) else { return false };
    real.file_name().and_then(|n| n.to_str()).is_some_and(open_mpi_name)
}

/// Runs the job; returns its exit code (128 + signal if it was killed, or
/// if mpitrace was stopped by one).
pub fn run(args: RecordArgs) -> Result<i32> {
    let lib = find_lib(args.lib)?;
    let dir = args.output.unwrap_or_else(default_dir);
    check_unused(&dir)?;
    trace_format::private::create_dir_all(&dir)
        .with_context(|| format!("cannot create the trace directory {}", dir.display()))?;
    let dir = std::fs::canonicalize(&dir)?;
    let probe = dir.join(".mpitrace-write-test");
    std::fs::write(&probe, b"").with_context(|| format!("the trace directory {} is not writable", dir.display()))?;
    let _ = std::fs::remove_file(&probe);

    let preload = match std::env::var("LD_PRELOAD") {
        Ok(old) if !old.is_empty() => format!("{}:{old}", lib.display()),
        _ => lib.display().to_string(),
    };
    // The shim's options, set for the job.
    let mut options: Vec<(&str, String)> = Vec::new();
    if args.keep_journals {
        options.push(("MPITRACE_KEEP_JOURNALS", "1".into()));
    }
    if args.check_buffers {
        options.push(("MPITRACE_CHECK_BUFFERS", "1".into()));
    }
    if let Some(n) = args.callpath {
        options.push(("MPITRACE_CALLPATH", n.to_string()));
    }
    if let Some(u) = &args.unwind {
        options.push(("MPITRACE_UNWIND", u.clone()));
    }
    if let Some(c) = &args.counters {
        options.push(("MPITRACE_COUNTERS", c.clone()));
    }
    let mut cmd = Command::new(&args.command[0]);
    if is_open_mpi_launcher(&args.command[0]) {
        // Open MPI starts ranks on other hosts with only the variables named
        // by `-x` (its local ranks inherit the launcher's environment).
        for var in ["LD_PRELOAD", "MPITRACE_DIR", "MPITRACE_LAUNCH"] {
            cmd.args(["-x", var]);
        }
        for (var, _) in &options {
            cmd.args(["-x", var]);
        }
    }
    cmd.args(&args.command[1..])
        .env("LD_PRELOAD", preload)
        .env("MPITRACE_DIR", &dir)
        .env("MPITRACE_LAUNCH", serde_json::to_string(&args.command)?);
    cmd.envs(options.iter().map(|(k, v)| (k, v)));
    // Installed before the job starts, so that no signal and no end of the
    // job is missed.
    let signals = Signals::install().context("cannot install signal handlers")?;
    // With a terminal on stdin the job shares our process group, as it would
    // without mpitrace: in the foreground it reads the terminal and gets its
    // Ctrl-C and Ctrl-Z; in the background it stops at a read (SIGTTIN)
    // and the shell's `fg`, which continues the whole group, resumes it.
    // Otherwise it gets a group of its own, which mpitrace alone signals:
    // the job then hears a signal once, however it was sent to mpitrace (to
    // it alone, or to its whole group, as `timeout` does).
    let own_group = !signals::stdin_is_terminal();
    if own_group {
        cmd.process_group(0);
    }
    if args.live {
        // The view owns the terminal: the job's output goes to a file.
        let log = dir.join("job-output.log");
        let f = trace_format::private::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
        cmd.stdout(f.try_clone()?).stderr(f).stdin(std::process::Stdio::null());
    }
    if args.kill_on_hang && args.hang_after.is_none() && !args.live {
        bail!("--kill-on-hang needs --hang-after SECONDS (or --live)");
    }
    let mut child = cmd.spawn().with_context(|| format!("cannot run `{}`", args.command[0]))?;
    let job = Job { pid: child.id() as i32, own_group, launcher: args.command[0].clone(), dir: dir.clone() };
    let hang_after = args.hang_after.or(args.live.then_some(crate::watch::LIVE_HANG_AFTER));
    let watcher = hang_after.map(|after| crate::watch::Watcher::start(&dir, after, args.kill_on_hang, args.live));
    let ended = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let view = args.live.then(|| {
        let (d, e) = (dir.clone(), ended.clone());
        std::thread::spawn(move || crate::top::run(&d, Some(&e)))
    });
    let supervised = job.supervise(&mut child, &signals, args.kill_after);
    ended.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(v) = view {
        match v.join() {
            Ok(Err(e)) => say!("mpitrace: the live view failed: {e:#}"),
            Err(_) => say!("mpitrace: the live view failed"),
            Ok(Ok(_)) => {}
        }
    }
    if let Some(w) = watcher {
        w.stop();
    }
    let (status, stopped_by) = supervised?;
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    signals.exit_on_stop(format!(
        "mpitrace: stopped while converting the journals; `mpitrace convert {}` finishes the trace\n",
        dir.display()
    ));
    let traced = finish(&dir, &args.command, args.keep_journals)?;
    match stopped_by {
        Some(sig) if traced => {
            say!(
                "mpitrace: the job was stopped by {}; the trace in {} holds what was recorded until then",
                signals::name(sig),
                dir.display()
            );
            Ok(128 + sig)
        }
        Some(sig) => {
            say!("mpitrace: the job was stopped by {} before it traced anything", signals::name(sig));
            Ok(128 + sig)
        }
        None => Ok(code),
    }
}

/// Converts the journals of a trace directory and of the traces of jobs it
/// spawned; says what the trace holds. False if there was nothing to trace.
fn finish(dir: &Path, launch: &[String], keep: bool) -> Result<bool> {
    let traced = summarize(dir, launch, keep)?;
    // Jobs the program spawned (MPI_Comm_spawn) traced themselves under
    // `spawned/`, a trace each.
    for sub in spawned(dir) {
        summarize(&sub, launch, keep)?;
    }
    Ok(traced)
}

fn spawned(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join(SPAWNED))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// `mpitrace convert DIR`: the journals a run left (it was started with
/// `MPITRACE_NO_CONVERT=1`, or it and mpitrace were killed) become the trace,
/// in place.
pub fn convert(args: ConvertArgs) -> Result<i32> {
    let dir = &args.dir;
    if !dir.is_dir() {
        bail!("{}: no such directory", dir.display());
    }
    let todo: Vec<PathBuf> = std::iter::once(dir.clone()).chain(spawned(dir)).filter(|d| has_journals(d)).collect();
    if todo.is_empty() {
        if dir.join(layout::META).exists() || dir.join(layout::EVENTS_DIR).exists() {
            bail!("{}: no journals to convert: the trace is converted already", dir.display());
        }
        bail!("{}: no journals to convert (no journal/rank-*.journal files): not a trace directory", dir.display());
    }
    // The launch command `mpitrace record` was given, if the run wrote
    // meta.json (MPITRACE_LAUNCH): conversion rebuilds meta.json.
    let launch = trace_format::Meta::read(&dir.join(layout::META)).map(|m| m.launch_command).unwrap_or_default();
    for d in todo {
        summarize(&d, &launch, args.keep_journals)?;
    }
    Ok(0)
}

/// The job as `record` started it.
struct Job {
    /// The launcher's pid (and process group id, when `own_group`).
    pid: i32,
    own_group: bool,
    launcher: String,
    /// The trace directory, which every traced process has in its
    /// environment (`MPITRACE_DIR`).
    dir: PathBuf,
}

impl Job {
    /// Where signals for the job go: its process group, or the launcher.
    fn target(&self) -> i32 {
        if self.own_group {
            -self.pid
        } else {
            self.pid
        }
    }

    /// Waits for the job to end. A stop signal is passed on to it (unless
    /// the terminal sent it to the job too); after `kill_after`, or at a
    /// second stop signal, the job is killed. Returns the launcher's status
    /// and the stop signal, if one came.
    fn supervise(
        &self,
        child: &mut std::process::Child,
        signals: &Signals,
        kill_after: Duration,
    ) -> Result<(std::process::ExitStatus, Option<i32>)> {
        let mut stopped_by: Option<i32> = None;
        let mut deadline: Option<Instant> = None;
        loop {
            if signals::has_ended(self.pid).context("waiting for the job")? {
                if stopped_by.is_some() {
                    self.reap_leftovers(deadline);
                }
                let status = child.wait().context("waiting for the job")?;
                return Ok((status, stopped_by));
            }
            let events = signals.wait(deadline).context("waiting for the job")?;
            if events.is_empty() && deadline.is_some_and(|d| Instant::now() >= d) {
                say!(
                    "mpitrace: the job still runs {} after {}: killing it (SIGKILL)",
                    signals::seconds(kill_after),
                    signals::name(stopped_by.unwrap_or(0))
                );
                signals::send(self.target(), libc::SIGKILL);
                deadline = None;
            }
            for ev in events {
                let Event::Stop { signal, from_terminal } = ev else { continue };
                if stopped_by.is_some() {
                    say!("mpitrace: {} received again: killing the job (SIGKILL)", signals::name(signal));
                    signals::send(self.target(), libc::SIGKILL);
                    deadline = None;
                    continue;
                }
                stopped_by = Some(signal);
                deadline = Some(Instant::now() + kill_after);
                // A terminal's signal reached the whole foreground group,
                // the job included when it shares ours: passing it on would
                // make it twice (and mpirun kills at once at a second one).
                let passed = if self.own_group || !from_terminal {
                    signals::send(self.target(), signal);
                    format!("passed on to `{}`", self.launcher)
                } else {
                    "sent to the job by the terminal".to_string()
                };
                say!(
                    "mpitrace: {} received: stopping the job ({passed}; killed if it still runs in {}); \
                     the trace is kept",
                    signals::name(signal),
                    signals::seconds(kill_after)
                );
            }
        }
    }

    /// After the launcher of a stopped job ended (not yet reaped, so its
    /// pid and group stay ours): what it left behind goes too. The
    /// launcher's group, if the job has its own, is killed; traced processes
    /// of this machine (the ranks, found by `MPITRACE_DIR` in their
    /// environment) get until the deadline, at least a second, to end, then
    /// are killed: their journals are about to be converted.
    fn reap_leftovers(&self, deadline: Option<Instant>) {
        if self.own_group {
            signals::send(-self.pid, libc::SIGKILL);
        }
        let until = deadline.unwrap_or_else(Instant::now).max(Instant::now() + Duration::from_secs(1));
        let mut left = traced_processes(&self.dir);
        while !left.is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
            left = traced_processes(&self.dir);
        }
        if left.is_empty() {
            return;
        }
        say!("mpitrace: killing traced processes the launcher left running: {left:?}");
        for &pid in &left {
            signals::send(pid, libc::SIGKILL);
        }
        let until = Instant::now() + Duration::from_secs(1);
        while !traced_processes(&self.dir).is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Live processes of this machine whose environment says they write the
/// trace in `dir` (`MPITRACE_DIR=dir`, as `record` sets it); zombies (whose
/// environment is gone) are not.
fn traced_processes(dir: &Path) -> Vec<i32> {
    use std::os::unix::ffi::OsStrExt;
    let mut want = b"MPITRACE_DIR=".to_vec();
    want.extend_from_slice(dir.as_os_str().as_bytes());
    let me = std::process::id() as i32;
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        // Processes of other users are unreadable, and not ours to stop.
        let Ok(env) = std::fs::read(e.path().join("environ")) else { continue };
        if env.split(|&b| b == 0).any(|var| var == want.as_slice()) {
            pids.push(pid);
        }
    }
    pids
}

/// Where the traces of spawned jobs go in a trace directory (see the shim's
/// `life::output_dir`).
const SPAWNED: &str = "spawned";

/// Converts what is left in one trace directory and says what the trace
/// holds; false if it holds nothing (no rank started tracing).
fn summarize(dir: &Path, launch: &[String], keep: bool) -> Result<bool> {
    let fin = match trace_lod::convert::finish_dir(dir, launch, keep) {
        Ok(f) => f,
        Err(trace_format::Error::NotATrace(_)) => {
            say!(
                "mpitrace: no trace in {}: the program did not call MPI_Init (is it dynamically linked against MPI? \
                 Or did mpitrace say above that it does not trace its MPI?)",
                dir.display()
            );
            return Ok(false);
        }
        Err(e) => return Err(e.into()),
    };
    for p in &fin.problems {
        say!("mpitrace: {p}");
    }
    let ranks = layout::ranks_in(dir, layout::EVENTS_DIR, ".parquet");
    let mut events = 0i64;
    for &r in &ranks {
        events += table::count_rows(&layout::events(dir, r)).unwrap_or(0);
    }
    let (mut files, mut bytes) = (0u64, 0u64);
    for entry in walk(dir).into_iter().filter(|p| !p.starts_with(dir.join(SPAWNED))) {
        files += 1;
        bytes += std::fs::metadata(&entry).map(|m| m.len()).unwrap_or(0);
    }
    let partial: Vec<i32> = fin.meta.rank_meta.iter().filter(|r| !r.finalized).map(|r| r.process.rank).collect();
    let missing: Vec<i32> = (0..fin.meta.ranks as i32).filter(|r| !ranks.contains(r)).collect();
    let mut state = String::new();
    if !partial.is_empty() {
        state += &format!("; {} ranks did not finalize (partial traces: {:?})", partial.len(), partial);
    }
    if !missing.is_empty() {
        state += &format!("; no trace from ranks {missing:?}");
    }
    say!(
        "mpitrace: {} ranks of `{}` traced: {} events, {} in {} files ({:.1} bytes/event) in {}{}",
        ranks.len(),
        fin.meta.command.join(" "),
        events,
        human(bytes),
        files,
        if events > 0 { bytes as f64 / events as f64 } else { 0.0 },
        dir.display(),
        state
    );
    Ok(true)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn human(b: u64) -> String {
    match b {
        0..=9999 => format!("{b} B"),
        10_000..=9_999_999 => format!("{:.1} KiB", b as f64 / 1024.0),
        _ => format!("{:.1} MiB", b as f64 / 1048576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_mpi_launchers() {
        for l in ["mpirun.openmpi", "/usr/bin/orterun", "prterun", "mpiexec.openmpi"] {
            assert!(is_open_mpi_launcher(l), "{l}");
        }
        for l in ["mpiexec.mpich", "/bin/sh", "srun", "no-such-launcher"] {
            assert!(!is_open_mpi_launcher(l), "{l}");
        }
        // Debian's alternatives: `mpirun` is Open MPI's when it resolves to orterun.
        if let Ok(real) = std::fs::canonicalize("/usr/bin/mpirun") {
            let orte = real.file_name().is_some_and(|n| n == "orterun" || n == "prterun");
            assert_eq!(is_open_mpi_launcher("/usr/bin/mpirun"), orte);
        }
    }
}
