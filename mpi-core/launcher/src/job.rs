//! Starting the ranks of a job and running it to its end: one poll(2) loop
//! serves the PMI sockets, forwards output and signals, reaps the ranks,
//! enforces the timeout and tears the job down when a rank fails.

use std::ffi::{OsStr, OsString};
use std::io::{IsTerminal, Read, Write};
use std::net::{IpAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::{EnvMode, Options};
use crate::error::{Error, Result};
use crate::output::{Output, Stream};
use crate::paths;
use crate::pmi::{JobInfo, PmiEvent, PmiServer};
use crate::sys::{self, ExitKind};

/// Exit status of the launcher when the job ran past its time limit.
pub const TIMEOUT_EXIT: i32 = 124;

/// Time between SIGTERM and SIGKILL when the job is torn down.
const KILL_GRACE: Duration = Duration::from_secs(1);

/// How long output is still collected after the last rank ended (children of
/// the ranks may keep the pipes open).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// How many 64 KiB reads of a rank's output pipe happen at once when the
/// launcher wants what is in it (the rank ended, a partial line is due).
const DRAIN_READS: usize = 16;

/// Signals passed on to the ranks.
pub const FORWARDED_SIGNALS: [i32; 6] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2, libc::SIGQUIT];

/// Variables of the launcher's environment never passed to ranks: they
/// belong to an enclosing job and would confuse the PMI client.
const STALE_VARS: [&str; 6] = ["PMI_PORT", "PMI_ID", "PMI_JOBID", "PMI_SPAWNED", "PMI_FD", "PMI_SUBVERSION"];

/// Why the job ended early, if it did.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    RankFailed(ExitKind),
    Aborted(i32),
    TimedOut,
    Interrupted(i32),
}

/// One started rank.
struct Rank {
    pid: i32,
    pmi: Option<UnixStream>,
    out: Option<OwnedFd>,
    err: Option<OwnedFd>,
    exit: Option<ExitKind>,
}

/// A running job.
struct Job {
    ranks: Vec<Rank>,
    pgid: i32,
    pmi: PmiServer,
    output: Output,
    signals: sys::SignalPipe,
    outcome: Option<Outcome>,
    terminating_since: Option<Instant>,
    killed: bool,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    last_exit: Option<Instant>,
    stop_signals: u32,
    verbose: bool,
    /// Number of ranks.
    size: usize,
    /// `MPICORE_JOB_SECRET` of this job.
    secret: String,
    /// The open-files limit the ranks get back (the launcher raises its own).
    child_nofile: Option<libc::rlimit>,
    /// The launcher's stdin is a terminal, fed to rank 0 through a pipe.
    stdin_tty: bool,
}

/// Whether `host` names this machine: by its usual names, as a loopback
/// or interface address, or as a name that resolves to one of those.
fn is_local_host(host: &str, me: &str, local_addrs: &dyn Fn() -> Vec<IpAddr>) -> bool {
    let h = host.trim().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let me = me.to_ascii_lowercase();
    let short = me.split('.').next().unwrap_or("");
    if h == "localhost" || h == "localhost.localdomain" || h == me || !short.is_empty() && h == short {
        return true;
    }
    let addrs: Vec<IpAddr> = match h.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => match (h.as_str(), 0u16).to_socket_addrs() {
            Ok(found) => found.map(|a| a.ip()).collect(),
            Err(_) => return false,
        },
    };
    if addrs.is_empty() {
        return false;
    }
    let mine = local_addrs();
    addrs.iter().all(|a| a.is_loopback() || mine.contains(a))
}

/// Fails on the first host that is not this machine.
pub fn check_hosts(hosts: &[String]) -> Result<()> {
    let me = sys::hostname();
    match hosts.iter().find(|h| !is_local_host(h, &me, &sys::interface_addresses)) {
        Some(h) => Err(Error::RemoteHost(h.clone())),
        None => Ok(()),
    }
}

fn is_executable_file(p: &Path) -> bool {
    p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Finds the program the way execvp would, but before anything starts, so
/// that a typo gives one clear message instead of N failed ranks.
pub fn resolve_program(prog: &str, wdir: Option<&Path>, path_var: Option<&OsStr>) -> Result<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let base = match wdir {
        Some(w) if w.is_absolute() => w.to_path_buf(),
        Some(w) => cwd.join(w),
        None => cwd.clone(),
    };
    if prog.contains('/') {
        let p = base.join(prog);
        if is_executable_file(&p) {
            return Ok(p);
        }
        let why = if p.exists() { "not an executable file" } else { "no such file" };
        return Err(Error::ProgramNotFound(format!("cannot run '{prog}': {why} ({})", p.display())));
    }
    let path = path_var.map(OsStr::to_os_string).unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() { base.clone() } else { cwd.join(dir) };
        let p = dir.join(prog);
        if is_executable_file(&p) {
            return Ok(p);
        }
    }
    Err(Error::ProgramNotFound(format!("cannot run '{prog}': not found in PATH")))
}

/// Removes the shared-memory files the library names `mpicore-<kvsname>*`.
pub fn remove_shm_segments(kvsname: &str) {
    let prefix = format!("mpicore-{kvsname}");
    let Ok(dir) = std::fs::read_dir("/dev/shm") else { return };
    for entry in dir.flatten() {
        if entry.file_name().as_bytes().starts_with(prefix.as_bytes()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The environment common to all ranks of one program.
fn base_environment(opts: &Options, app_env: &[(String, String)], lib_dir: Option<&Path>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = match &opts.env_mode {
        EnvMode::All => std::env::vars_os().collect(),
        EnvMode::None => Vec::new(),
        EnvMode::List(names) => std::env::vars_os().filter(|(k, _)| names.iter().any(|n| OsStr::new(n) == k)).collect(),
    };
    env.retain(|(k, _)| !STALE_VARS.iter().any(|s| OsStr::new(s) == k));
    fn set(env: &mut Vec<(OsString, OsString)>, k: &str, v: &str) {
        env.retain(|(name, _)| name != k);
        env.push((k.into(), v.into()));
    }
    for (k, v) in opts.genv.iter().chain(app_env) {
        set(&mut env, k, v);
    }
    if let Some(dir) = lib_dir {
        let old = env.iter().find(|(k, _)| k == "LD_LIBRARY_PATH").map(|(_, v)| v.to_string_lossy().into_owned());
        set(&mut env, "LD_LIBRARY_PATH", &paths::prepend_path(dir, old.as_deref()));
    }
    env
}

/// Finds the library directory and makes sure its aliases exist.
fn prepare_lib_dir(verbose: bool) -> Option<PathBuf> {
    let exe_dir = match paths::exe_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("mpirun: warning: {e}; LD_LIBRARY_PATH left unchanged");
            return None;
        }
    };
    let dir = paths::lib_dir(&exe_dir);
    if !dir.join(paths::LIBMPI).exists() {
        eprintln!(
            "mpirun: warning: {} not found in {} (build mpi-core, or use --no-libpath)",
            paths::LIBMPI,
            dir.display()
        );
    }
    for (alias, err) in paths::ensure_library_aliases(&dir) {
        if verbose {
            eprintln!("mpirun: note: cannot create {}/{alias}: {err}", dir.display());
        }
    }
    Some(dir)
}

/// Copies the launcher's stdin to rank 0 (used when stdin is a terminal:
/// the ranks run in their own process group and must not read the terminal
/// themselves).
fn forward_stdin(mut to: std::process::ChildStdin) {
    let spawned = std::thread::Builder::new().name("stdin".into()).spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        let mut stdin = std::io::stdin().lock();
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
    });
    if let Err(e) = spawned {
        eprintln!("mpirun: warning: cannot forward stdin: {e}");
    }
}

/// Runs a job to its end and returns the launcher's exit status.
pub fn run(opts: &Options) -> Result<i32> {
    check_hosts(&opts.hosts)?;
    let lib_dir = if opts.no_libpath { None } else { prepare_lib_dir(opts.verbose) };

    // Everything that can be wrong with the command line is found before
    // the first rank starts.
    let mut plans = Vec::new();
    for app in &opts.apps {
        if let Some(w) = &app.wdir {
            if !w.is_dir() {
                return Err(Error::Usage(format!("working directory '{}' does not exist", w.display())));
            }
        }
        let env = base_environment(opts, &app.env, lib_dir.as_deref());
        let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone());
        let program = resolve_program(&app.argv[0], app.wdir.as_deref(), path_var.as_deref())?;
        plans.push((app, env, program));
    }

    let size = opts.size();
    let kvsname = format!("kvs_{}_{}", std::process::id(), sys::hex(&random(4)?));
    let secret = sys::hex(&random(16)?);
    let appnums: Vec<usize> =
        opts.apps.iter().enumerate().flat_map(|(i, a)| std::iter::repeat_n(i, a.nprocs)).collect();
    if opts.verbose {
        eprintln!(
            "mpirun: {size} rank(s), kvs {kvsname}, library dir {}",
            lib_dir.as_ref().map_or("(unchanged)".into(), |d| d.display().to_string())
        );
    }

    let old_limit = sys::raise_nofile_limit();
    let mut wanted: Vec<i32> = FORWARDED_SIGNALS.to_vec();
    wanted.push(libc::SIGCHLD);
    let signals = sys::SignalPipe::install(&wanted).map_err(|e| Error::io("cannot install signal handlers", e))?;

    let mut job = Job {
        ranks: Vec::with_capacity(size),
        pgid: 0,
        pmi: PmiServer::new(JobInfo { kvsname: kvsname.clone(), appnums }, opts.verbose),
        output: Output::new(size, opts.tag_output, Box::new(sys::FdWriter(1)), Box::new(sys::FdWriter(2))),
        signals,
        outcome: None,
        terminating_since: None,
        killed: false,
        deadline: None,
        timeout: opts.timeout,
        last_exit: None,
        stop_signals: 0,
        verbose: opts.verbose,
        size,
        secret,
        child_nofile: old_limit,
        stdin_tty: std::io::stdin().is_terminal(),
    };

    let mut stdin_pipe = None;
    let mut rank = 0;
    for (app, env, program) in &plans {
        for _ in 0..app.nprocs {
            match job.spawn(rank, app, env, program) {
                Ok(stdin) => {
                    if stdin.is_some() {
                        stdin_pipe = stdin;
                    }
                }
                Err(e) => {
                    job.output.message(&format!("mpirun: {e}"));
                    job.outcome = Some(Outcome::RankFailed(ExitKind::Code(e.exit_code())));
                    job.terminate(libc::SIGKILL);
                    job.killed = true;
                    let code = job.event_loop(&kvsname);
                    return Ok(if code == 0 { e.exit_code() } else { code });
                }
            }
            rank += 1;
        }
    }
    if let Some(stdin) = stdin_pipe {
        forward_stdin(stdin);
    }
    job.deadline = opts.timeout.map(|t| Instant::now() + t);
    Ok(job.event_loop(&kvsname))
}

fn random(n: usize) -> Result<Vec<u8>> {
    sys::random_bytes(n).map_err(|e| Error::io("cannot read random bytes", e))
}

/// What a poll entry stands for.
#[derive(Clone, Copy)]
enum Slot {
    Signals,
    Pmi(usize),
    Out(usize, Stream),
}

impl Job {
    /// Starts rank `rank`; returns the pipe to its stdin when the launcher
    /// must feed it.
    fn spawn(
        &mut self,
        rank: usize,
        app: &crate::cli::App,
        env: &[(OsString, OsString)],
        program: &Path,
    ) -> Result<Option<std::process::ChildStdin>> {
        let size = self.size;
        let (ours, theirs) = UnixStream::pair().map_err(|e| Error::io("cannot create the PMI socket", e))?;
        ours.set_nonblocking(true).map_err(|e| Error::io("cannot set up the PMI socket", e))?;
        let child_fd: RawFd = theirs.as_raw_fd();

        let mut cmd = Command::new(program);
        cmd.arg0(&app.argv[0]).args(&app.argv[1..]).env_clear().envs(env.iter().map(|(k, v)| (k, v)));
        cmd.env("PMI_FD", child_fd.to_string())
            .env("PMI_RANK", rank.to_string())
            .env("PMI_SIZE", size.to_string())
            .env("MPI_LOCALNRANKS", size.to_string())
            .env("MPI_LOCALRANKID", rank.to_string())
            .env("MPICORE_JOB_SECRET", &self.secret);
        if let Some(w) = &app.wdir {
            cmd.current_dir(w);
        }
        let stdin = match (rank, self.stdin_tty) {
            (0, true) => Stdio::piped(),
            (0, false) => Stdio::inherit(),
            _ => Stdio::null(),
        };
        cmd.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.process_group(self.pgid);
        // SAFETY: getpid has no preconditions.
        let launcher = unsafe { libc::getpid() };
        let old_limit = self.child_nofile;
        // SAFETY: the closure runs in the child between fork and exec and
        // only makes async-signal-safe calls (fcntl, prctl, getppid,
        // setrlimit); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                let flags = libc::fcntl(child_fd, libc::F_GETFD);
                if flags < 0 || libc::fcntl(child_fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Die with the launcher, even if it is killed with SIGKILL.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
                if libc::getppid() != launcher {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                if let Some(lim) = old_limit {
                    libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("cannot start rank {rank} ({})", program.display()), e))?;
        drop(theirs);
        let pid = child.id() as i32;
        if self.pgid == 0 {
            self.pgid = pid;
        }
        let out = child.stdout.take().map(OwnedFd::from);
        let err = child.stderr.take().map(OwnedFd::from);
        for fd in out.iter().chain(err.iter()) {
            // Reads happen only after poll says so, but a rank that ended is
            // drained without waiting; failure here only costs that.
            let _ = sys::set_nonblocking(fd.as_raw_fd(), true);
        }
        self.ranks.push(Rank { pid, pmi: Some(ours), out, err, exit: None });
        Ok(child.stdin.take())
    }

    fn running(&self) -> impl Iterator<Item = &Rank> {
        self.ranks.iter().filter(|r| r.exit.is_none())
    }

    /// Sends `sig` to every rank still running: to the process group (so
    /// that children of a rank get it too) and directly to ranks that left
    /// the group.
    fn signal_all(&self, sig: i32) {
        if self.pgid > 0 {
            sys::kill(-self.pgid, sig);
        }
        for r in self.running() {
            if sys::getpgid(r.pid) != Some(self.pgid) {
                sys::kill(r.pid, sig);
            }
        }
    }

    /// Starts tearing the job down with `sig` (SIGTERM, then SIGKILL).
    fn terminate(&mut self, sig: i32) {
        if self.terminating_since.is_none() {
            self.terminating_since = Some(Instant::now());
        }
        self.signal_all(sig);
    }

    /// Records the reason the job ends, unless there is one already.
    fn fail(&mut self, outcome: Outcome, message: String) {
        if self.outcome.is_some() {
            return;
        }
        self.outcome = Some(outcome);
        self.output.message(&message);
        if self.running().next().is_some() {
            self.terminate(libc::SIGTERM);
        }
    }

    fn handle_pmi_events(&mut self) {
        for line in self.pmi.take_trace() {
            self.output.message(&line);
        }
        for ev in self.pmi.take_events() {
            match ev {
                PmiEvent::Abort { rank, code, message } => {
                    let mut text = format!("mpirun: rank {rank} called MPI_Abort (error code {code}); terminating the job");
                    if let Some(m) = message.filter(|m| !m.is_empty()) {
                        text.push_str(&format!("\nmpirun: abort message: {m}"));
                    }
                    self.fail(Outcome::Aborted(code), text);
                }
                PmiEvent::ProtocolError { rank, message } => {
                    self.output.message(&format!("mpirun: rank {rank}: PMI protocol error: {message}; connection closed"));
                    self.ranks[rank].pmi = None;
                }
            }
        }
    }

    /// Reads what rank `rank` sent on its PMI socket.
    fn read_pmi(&mut self, rank: usize) {
        let mut buf = [0u8; 16 * 1024];
        loop {
            let Some(sock) = &self.ranks[rank].pmi else { return };
            match sys::read_some(sock.as_raw_fd(), &mut buf) {
                Ok(Some(0)) | Err(_) => {
                    self.ranks[rank].pmi = None;
                    self.pmi.close(rank);
                    return;
                }
                Ok(Some(n)) => self.pmi.receive(rank, &buf[..n]),
                Ok(None) => return,
            }
        }
    }

    /// Writes pending PMI replies to every rank that has some.
    fn write_pmi(&mut self) {
        for rank in 0..self.ranks.len() {
            let Some(sock) = &self.ranks[rank].pmi else { continue };
            let fd = sock.as_raw_fd();
            let Some(pending) = self.pmi.pending_output(rank) else { continue };
            let mut broken = false;
            while !pending.is_empty() {
                match sys::write_some(fd, pending) {
                    Ok(0) => break,
                    Ok(n) => {
                        pending.drain(..n);
                    }
                    Err(_) => {
                        broken = true;
                        break;
                    }
                }
            }
            if broken {
                self.ranks[rank].pmi = None;
                self.pmi.close(rank);
            }
        }
    }

    /// Reads rank output: up to `max_reads` times, stopping when the pipe
    /// is empty (bounded, because children of a rank may write forever).
    fn read_output(&mut self, rank: usize, stream: Stream, max_reads: usize) {
        let mut buf = vec![0u8; 64 * 1024];
        for _ in 0..max_reads {
            let slot = match stream {
                Stream::Stdout => &mut self.ranks[rank].out,
                Stream::Stderr => &mut self.ranks[rank].err,
            };
            let Some(fd) = slot else { return };
            match sys::read_some(fd.as_raw_fd(), &mut buf) {
                Ok(Some(0)) | Err(_) => {
                    *slot = None;
                    self.output.flush_rank(rank, stream);
                    return;
                }
                Ok(Some(n)) => self.output.feed(rank, stream, &buf[..n], Instant::now()),
                Ok(None) => return,
            }
        }
    }

    /// When the reader of the launcher's stdout (or stderr) went away, as
    /// in `mpirun ... | head`, the ranks' pipes for that stream are closed so
    /// that their next write fails (SIGPIPE), as in a shell pipeline.
    fn close_broken_outputs(&mut self) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            if self.output.is_broken(stream) {
                for r in &mut self.ranks {
                    match stream {
                        Stream::Stdout => r.out = None,
                        Stream::Stderr => r.err = None,
                    }
                }
            }
        }
    }

    /// Collects ended ranks and reacts to failures. The first rank leads
    /// the job's process group and stays a zombie until the end, so that the
    /// group id cannot be reused by an unrelated process while the launcher
    /// may still signal the group.
    fn reap(&mut self) {
        for rank in 0..self.ranks.len() {
            if self.ranks[rank].exit.is_some() {
                continue;
            }
            let pid = self.ranks[rank].pid;
            let Some(kind) = sys::check_exit(pid, pid != self.pgid) else { continue };
            // What the rank said last (an abort, a final message) comes
            // before the verdict on its exit.
            self.read_pmi(rank);
            self.handle_pmi_events();
            self.read_output(rank, Stream::Stdout, DRAIN_READS);
            self.read_output(rank, Stream::Stderr, DRAIN_READS);
            self.output.flush_rank(rank, Stream::Stdout);
            self.output.flush_rank(rank, Stream::Stderr);
            self.ranks[rank].exit = Some(kind);
            self.pmi.process_exited(rank);
            self.last_exit = Some(Instant::now());
            let text = match kind {
                ExitKind::Code(0) => continue,
                // The launcher's own stdout was closed (`mpirun ... | head`):
                // that end is expected, not worth a message.
                ExitKind::Signal(libc::SIGPIPE) if self.output.is_broken(Stream::Stdout) => {
                    if self.outcome.is_none() {
                        self.outcome = Some(Outcome::RankFailed(kind));
                        self.terminate(libc::SIGTERM);
                    }
                    continue;
                }
                ExitKind::Code(c) => format!("mpirun: rank {rank} (pid {pid}) exited with code {c}"),
                ExitKind::Signal(s) => {
                    format!("mpirun: rank {rank} (pid {pid}) killed by signal {s} ({})", sys::signal_name(s))
                }
            };
            self.fail(Outcome::RankFailed(kind), text);
        }
    }

    fn handle_signals(&mut self) {
        for sig in self.signals.drain() {
            if sig == libc::SIGCHLD {
                self.reap();
                continue;
            }
            let stops = matches!(sig, libc::SIGINT | libc::SIGTERM | libc::SIGHUP | libc::SIGQUIT);
            if stops {
                self.stop_signals += 1;
            }
            if stops && self.stop_signals >= 2 {
                // Asked twice: stop the job for good.
                if self.outcome.is_none() {
                    self.outcome = Some(Outcome::Interrupted(sig));
                    self.output.message(&format!("mpirun: {} received again; killing the job", sys::signal_name(sig)));
                }
                self.terminate(libc::SIGKILL);
                self.killed = true;
            } else if stops {
                // As a terminal would: the whole process group of the job.
                self.signal_all(sig);
            } else {
                // User signals (checkpoint requests...) go to the ranks
                // themselves, not to helpers they started.
                for r in self.running() {
                    sys::kill(r.pid, sig);
                }
            }
        }
    }

    /// Ends the job when ranks wait in a PMI barrier that a departed rank
    /// can never join.
    fn check_stalled_barrier(&mut self) {
        if self.outcome.is_some() {
            return;
        }
        if let Some(rank) = self.pmi.stalled_barrier() {
            if self.ranks[rank].exit.is_none() {
                // Its socket closed, maybe because it is exiting: say so if
                // it is gone already.
                self.reap();
                if self.outcome.is_some() {
                    return;
                }
            }
            let how = match self.ranks[rank].exit {
                Some(ExitKind::Code(c)) => format!("exited with code {c}"),
                Some(ExitKind::Signal(s)) => format!("was killed by signal {s}"),
                None => "closed its PMI connection".to_string(),
            };
            self.fail(
                Outcome::RankFailed(ExitKind::Code(1)),
                format!("mpirun: rank {rank} {how} while other ranks wait for it in a PMI barrier; terminating the job"),
            );
        }
    }

    fn check_timers(&mut self, now: Instant) {
        // The rest of a line may be waiting in the pipe while the launcher
        // was busy (a slow reader of its own output): read before giving up.
        for (rank, stream) in self.output.due(now) {
            self.read_output(rank, stream, DRAIN_READS);
        }
        self.output.flush_due(now);
        if self.deadline.is_some_and(|d| now >= d) {
            self.deadline = None;
            let secs = self.timeout.map_or(0.0, |t| t.as_secs_f64());
            self.fail(
                Outcome::TimedOut,
                format!("mpirun: job did not finish within the time limit of {secs} s (MPIEXEC_TIMEOUT); terminating it"),
            );
        }
        if let Some(since) = self.terminating_since {
            if !self.killed && now >= since + KILL_GRACE {
                self.killed = true;
                self.signal_all(libc::SIGKILL);
            }
        }
    }

    fn next_timeout(&self, now: Instant) -> Option<Duration> {
        let mut next: Option<Instant> = self.output.next_deadline();
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        };
        consider(self.deadline);
        if !self.killed {
            consider(self.terminating_since.map(|t| t + KILL_GRACE));
        }
        if self.running().next().is_none() {
            consider(self.last_exit.map(|t| t + DRAIN_GRACE));
        }
        next.map(|t| t.saturating_duration_since(now))
    }

    /// Serves the job until every rank has ended; returns the exit status.
    fn event_loop(&mut self, kvsname: &str) -> i32 {
        // Ranks may have ended before the handler saw SIGCHLD.
        self.reap();
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut slots: Vec<Slot> = Vec::new();
        loop {
            let now = Instant::now();
            if self.running().next().is_none() {
                let outputs_open = self.ranks.iter().any(|r| r.out.is_some() || r.err.is_some());
                let drained = self.last_exit.is_none_or(|t| now >= t + DRAIN_GRACE);
                if !outputs_open || drained {
                    break;
                }
            }
            fds.clear();
            slots.clear();
            let mut add = |fd: RawFd, events: libc::c_short, slot: Slot| {
                fds.push(libc::pollfd { fd, events, revents: 0 });
                slots.push(slot);
            };
            add(self.signals.fd(), libc::POLLIN, Slot::Signals);
            for (i, r) in self.ranks.iter().enumerate() {
                if let Some(s) = &r.pmi {
                    let mut ev = libc::POLLIN;
                    if self.pmi.pending_output_len(i) > 0 {
                        ev |= libc::POLLOUT;
                    }
                    add(s.as_raw_fd(), ev, Slot::Pmi(i));
                }
                if let Some(fd) = &r.out {
                    add(fd.as_raw_fd(), libc::POLLIN, Slot::Out(i, Stream::Stdout));
                }
                if let Some(fd) = &r.err {
                    add(fd.as_raw_fd(), libc::POLLIN, Slot::Out(i, Stream::Stderr));
                }
            }
            let timeout = self.next_timeout(now);
            if let Err(e) = sys::poll(&mut fds, timeout) {
                self.output.message(&format!("mpirun: poll failed: {e}; killing the job"));
                self.outcome.get_or_insert(Outcome::RankFailed(ExitKind::Code(1)));
                self.terminate(libc::SIGKILL);
                self.killed = true;
                std::thread::sleep(Duration::from_millis(50));
                self.reap();
                if self.running().next().is_none() {
                    break;
                }
                continue;
            }
            for (pfd, slot) in fds.iter().zip(slots.iter()) {
                if pfd.revents == 0 {
                    continue;
                }
                match *slot {
                    Slot::Signals => self.handle_signals(),
                    Slot::Pmi(r) => {
                        if pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                            self.read_pmi(r);
                        }
                    }
                    Slot::Out(r, stream) => self.read_output(r, stream, 1),
                }
            }
            self.handle_pmi_events();
            self.write_pmi();
            self.close_broken_outputs();
            self.check_stalled_barrier();
            self.check_timers(Instant::now());
        }
        self.finish(kvsname)
    }

    /// Cleans up after the last rank and computes the exit status.
    fn finish(&mut self, kvsname: &str) -> i32 {
        // Whatever the ranks left behind in their process group goes too;
        // then the group leader, kept as a zombie until now, is collected.
        if self.pgid > 0 {
            sys::kill(-self.pgid, libc::SIGKILL);
            sys::check_exit(self.pgid, true);
        }
        self.output.finish();
        remove_shm_segments(kvsname);
        if self.verbose {
            let (user, sys) = sys::own_cpu_time();
            eprintln!("mpirun: launcher cpu time {user:.3} s user, {sys:.3} s system");
        }
        match self.outcome {
            None => 0,
            Some(Outcome::RankFailed(ExitKind::Code(c))) => c,
            Some(Outcome::RankFailed(ExitKind::Signal(s))) | Some(Outcome::Interrupted(s)) => 128 + s,
            Some(Outcome::Aborted(code)) => match code & 0xff {
                // A code that would read as success once truncated.
                0 if code != 0 => 1,
                c => c,
            },
            Some(Outcome::TimedOut) => TIMEOUT_EXIT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_hosts() {
        let addrs = || vec!["192.0.2.2".parse().unwrap()];
        for h in ["localhost", "LOCALHOST", "127.0.0.1", "127.0.1.1", "::1", "[::1]", "vm", "vm.example.org", "192.0.2.2"] {
            assert!(is_local_host(h, "vm.example.org", &addrs), "{h}");
        }
        for h in ["10.0.0.1", "192.0.2.3", "no-such-host.invalid"] {
            assert!(!is_local_host(h, "vm.example.org", &addrs), "{h}");
        }
        assert!(check_hosts(&["localhost".into(), sys::hostname()]).is_ok());
        assert!(matches!(check_hosts(&["no-such-host-x.invalid".into()]), Err(Error::RemoteHost(_))));
    }

    #[test]
    fn programs() {
        assert!(resolve_program("sh", None, Some(OsStr::new("/usr/bin:/bin"))).is_ok());
        assert!(matches!(resolve_program("no-such-prog-x", None, None), Err(Error::ProgramNotFound(_))));
        assert!(matches!(resolve_program("./no-such-prog-x", None, None), Err(Error::ProgramNotFound(_))));
        let p = resolve_program("./sh", Some(Path::new("/bin")), None).unwrap();
        assert_eq!(p, Path::new("/bin/./sh"));
    }
}
