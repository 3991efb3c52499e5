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
use crate::pmi::{JobInfo, PmiEvent, PmiServer, SpawnApp};
use crate::remote;
use crate::sys::{self, ExitKind};

#[path = "job_remote.rs"]
mod job_remote;
use job_remote::Remote;

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

/// One rank of the job.
struct Rank {
    /// Its pid on this machine (0: not started here).
    pid: i32,
    /// The proxy that runs it, for a rank on another host.
    proxy: Option<usize>,
    /// Its pid on its host, as the proxy reported it.
    remote_pid: i32,
    pmi: Option<UnixStream>,
    out: Option<OwnedFd>,
    err: Option<OwnedFd>,
    exit: Option<ExitKind>,
}

/// A running job.
struct Job {
    ranks: Vec<Rank>,
    pmi: PmiServer,
    output: Output,
    signals: sys::SignalPipe,
    outcome: Option<Outcome>,
    /// Failures tolerated (`MPICORE_ULFM=1`, `-disable-auto-cleanup`): a
    /// rank that fails does not end the job; the first such end, for the
    /// exit code.
    tolerate: bool,
    tolerated: Option<ExitKind>,
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
    /// Host of every rank ("" for this machine).
    hosts: Vec<String>,
    /// Proxies on other hosts, and the connections not yet authenticated.
    remote: Remote,
    /// Launchers of the jobs the ranks spawned (MPI_Comm_spawn), each a
    /// copy of this program running a job of its own.
    spawned: Vec<std::process::Child>,
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

/// The host of every rank, "" for this machine (see [`remote::place`]).
pub fn rank_hosts(hosts: &[String], ppn: Option<usize>, size: usize) -> Vec<String> {
    let me = sys::hostname();
    let mut known: Vec<(String, bool)> = Vec::new();
    remote::place(hosts, ppn, size)
        .into_iter()
        .map(|h| {
            if h.is_empty() {
                return h;
            }
            let local = match known.iter().find(|(k, _)| *k == h) {
                Some((_, l)) => *l,
                None => {
                    let l = is_local_host(&h, &me, &sys::interface_addresses);
                    known.push((h.clone(), l));
                    l
                }
            };
            if local {
                String::new()
            } else {
                h
            }
        })
        .collect()
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

/// Removes the shared-memory files of the job: the library names every
/// segment of a job (node segment, collective and window segments)
/// `mpicore-<kvsname>-...`, and unlinks each once all its ranks mapped it;
/// a job stopped earlier (signal, timeout, failed rank) leaves them to this.
pub fn remove_shm_segments(kvsname: &str) {
    let prefix = format!("mpicore-{kvsname}-");
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
    let hosts = rank_hosts(&opts.hosts, opts.ppn, size);
    let mut node_names: Vec<&str> = Vec::new();
    let nodes: Vec<usize> = hosts
        .iter()
        .map(|h| {
            node_names.iter().position(|n| n == h).unwrap_or_else(|| {
                node_names.push(h);
                node_names.len() - 1
            })
        })
        .collect();
    let mapping = mpi_pmi::format_process_mapping(&nodes);
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
        ranks: (0..size)
            .map(|_| Rank { pid: 0, proxy: None, remote_pid: 0, pmi: None, out: None, err: None, exit: None })
            .collect(),
        pmi: PmiServer::new(JobInfo { kvsname: kvsname.clone(), appnums: appnums.clone(), mapping }, opts.verbose),
        output: Output::new(size, opts.tag_output, Box::new(sys::FdWriter(1)), Box::new(sys::FdWriter(2))),
        signals,
        outcome: None,
        tolerate: opts.genv.iter().any(|(k, v)| k == "MPICORE_ULFM" && v == "1")
            || std::env::var("MPICORE_ULFM").is_ok_and(|v| v == "1"),
        tolerated: None,
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
        hosts,
        remote: Remote::default(),
        spawned: Vec::new(),
    };

    let rank_plans: Vec<RankPlan> = appnums.iter().map(|&a| (plans[a].0, &plans[a].1, &plans[a].2)).collect();
    // Remote hosts first: their agents take longest to start.
    job.pmi.tolerate_exits = job.tolerate;
    job.start_proxies(opts, &rank_plans)?;
    let mut stdin_pipe = None;
    for (rank, (app, env, program)) in rank_plans.iter().enumerate() {
        if !job.hosts[rank].is_empty() || job.outcome.is_some() {
            continue;
        }
        match job.spawn(rank, app, env, program) {
            Ok(stdin) => {
                if stdin.is_some() {
                    stdin_pipe = stdin;
                }
            }
            Err(e) => {
                job.output.message(&format!("mpirun: {e}"));
                job.outcome = Some(Outcome::RankFailed(ExitKind::Code(e.exit_code())));
                for r in job.ranks.iter_mut().filter(|r| r.pid == 0 && r.proxy.is_none()) {
                    r.exit = Some(ExitKind::Code(e.exit_code()));
                }
                job.terminate(libc::SIGKILL);
                job.killed = true;
                let code = job.event_loop(&kvsname);
                return Ok(if code == 0 { e.exit_code() } else { code });
            }
        }
    }
    if let Some(stdin) = stdin_pipe {
        forward_stdin(stdin);
    }
    job.deadline = opts.timeout.map(|t| Instant::now() + t);
    Ok(job.event_loop(&kvsname))
}

/// What starts one rank: its program segment, environment and resolved
/// program.
type RankPlan<'a> = (&'a crate::cli::App, &'a Vec<(OsString, OsString)>, &'a PathBuf);

fn random(n: usize) -> Result<Vec<u8>> {
    sys::random_bytes(n).map_err(|e| Error::io("cannot read random bytes", e))
}

/// What a poll entry stands for.
#[derive(Clone, Copy)]
enum Slot {
    Signals,
    Pmi(usize),
    Out(usize, Stream),
    /// The listener proxies connect to.
    Listener,
    /// A connection not yet authenticated.
    Pending(usize),
    /// The connection of a proxy.
    Proxy(usize),
    /// mpirun's stdin, for rank 0 on another host.
    Stdin,
}

/// A process started by [`start_process`].
pub(crate) struct Started {
    pub pid: i32,
    /// The launcher's end of the PMI socketpair (non-blocking).
    pub pmi: UnixStream,
    pub out: Option<OwnedFd>,
    pub err: Option<OwnedFd>,
    pub stdin: Option<std::process::ChildStdin>,
}

/// Sends `sig` to the process group rank `pid` leads (see [`start_process`]),
/// and to the rank itself if it is `running` and has left that group.
pub(crate) fn signal_rank(pid: i32, running: bool, sig: i32) {
    sys::kill(-pid, sig);
    if running && sys::getpgid(pid) != Some(pid) {
        sys::kill(pid, sig);
    }
}

/// Starts one rank: `program` with `argv` (argv[0] first) and exactly the
/// environment `env` plus `PMI_FD`, in a session (and process group) of
/// its own, stdout and stderr piped (non-blocking), dying with the calling
/// process.
///
/// A session per rank, as hydra does: where the kernel groups processes by
/// session for scheduling (autogroup, on by default in desktop kernels),
/// ranks sharing the session of the shell that started mpirun would share
/// one CPU share with everything else that shell runs, and a yielding rank
/// would mostly yield to its own peers; a 300-rank job on 2 busy cores took
/// twice as long as under hydra.
pub(crate) fn start_process(
    program: &Path,
    argv: &[OsString],
    env: &[(OsString, OsString)],
    wdir: Option<&Path>,
    stdin: Stdio,
    nofile: Option<libc::rlimit>,
) -> std::io::Result<Started> {
    let (ours, theirs) = UnixStream::pair()?;
    ours.set_nonblocking(true)?;
    let child_fd: RawFd = theirs.as_raw_fd();
    let mut cmd = Command::new(program);
    if let Some((first, rest)) = argv.split_first() {
        cmd.arg0(first).args(rest);
    }
    cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v))).env("PMI_FD", child_fd.to_string());
    if let Some(w) = wdir {
        cmd.current_dir(w);
    }
    cmd.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: getpid has no preconditions.
    let launcher = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec and
    // only makes async-signal-safe calls (setsid, fcntl, prctl, getppid,
    // setrlimit); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let flags = libc::fcntl(child_fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(child_fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Die with the launcher, even if it is killed with SIGKILL.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
            if libc::getppid() != launcher {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(lim) = nofile {
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    drop(theirs);
    let out = child.stdout.take().map(OwnedFd::from);
    let err = child.stderr.take().map(OwnedFd::from);
    for fd in out.iter().chain(err.iter()) {
        // Reads happen only after poll says so, but a rank that ended is
        // drained without waiting; failure here only costs that.
        let _ = sys::set_nonblocking(fd.as_raw_fd(), true);
    }
    Ok(Started { pid: child.id() as i32, pmi: ours, out, err, stdin: child.stdin.take() })
}

impl Job {
    /// Starts rank `rank` on this machine; returns the pipe to its stdin
    /// when the launcher must feed it.
    fn spawn(
        &mut self,
        rank: usize,
        app: &crate::cli::App,
        env: &[(OsString, OsString)],
        program: &Path,
    ) -> Result<Option<std::process::ChildStdin>> {
        let stdin = match (rank, self.stdin_tty) {
            (0, true) => Stdio::piped(),
            (0, false) => Stdio::inherit(),
            _ => Stdio::null(),
        };
        let mut env = env.to_vec();
        env.extend(self.rank_env(rank));
        let argv: Vec<OsString> = app.argv.iter().map(OsString::from).collect();
        let st = start_process(program, &argv, &env, app.wdir.as_deref(), stdin, self.child_nofile)
            .map_err(|e| Error::io(format!("cannot start rank {rank} ({})", program.display()), e))?;
        self.ranks[rank].pid = st.pid;
        self.ranks[rank].pmi = Some(st.pmi);
        self.ranks[rank].out = st.out;
        self.ranks[rank].err = st.err;
        Ok(st.stdin)
    }

    /// The variables that differ between ranks (and the job secret).
    fn rank_env(&self, rank: usize) -> Vec<(OsString, OsString)> {
        let host = &self.hosts[rank];
        let local: Vec<usize> = (0..self.size).filter(|&r| self.hosts[r] == *host).collect();
        let local_id = local.iter().position(|&r| r == rank).unwrap_or(0);
        [
            ("PMI_RANK", rank.to_string()),
            ("PMI_SIZE", self.size.to_string()),
            ("MPI_LOCALNRANKS", local.len().to_string()),
            ("MPI_LOCALRANKID", local_id.to_string()),
            ("MPICORE_JOB_SECRET", self.secret.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    fn running(&self) -> impl Iterator<Item = &Rank> {
        self.ranks.iter().filter(|r| r.exit.is_none())
    }

    /// Sends `sig` to every rank's process group (so that children of a
    /// rank get it too, also once the rank ended: it stays a zombie, see
    /// [`Job::reap`]) and directly to running ranks that left their group.
    fn signal_all(&mut self, sig: i32) {
        for r in self.ranks.iter().filter(|r| r.pid > 0) {
            signal_rank(r.pid, r.exit.is_none(), sig);
        }
        self.signal_proxies(sig);
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
                    let mut text =
                        format!("mpirun: rank {rank} called MPI_Abort (error code {code}); terminating the job");
                    if let Some(m) = message.filter(|m| !m.is_empty()) {
                        text.push_str(&format!("\nmpirun: abort message: {m}"));
                    }
                    self.fail(Outcome::Aborted(code), text);
                }
                PmiEvent::ProtocolError { rank, message } => {
                    self.output
                        .message(&format!("mpirun: rank {rank}: PMI protocol error: {message}; connection closed"));
                    self.ranks[rank].pmi = None;
                    self.close_remote_pmi(rank);
                }
                PmiEvent::Spawn { rank, apps, preput } => match self.start_spawned(&apps, &preput) {
                    Ok(()) => self.pmi.spawn_result(rank, true, "ok"),
                    Err(e) => {
                        self.output.message(&format!("mpirun: rank {rank} asked to spawn a job: {e}"));
                        self.pmi.spawn_result(rank, false, &e);
                    }
                },
            }
        }
    }

    /// Starts a new job running `apps` (a spawn request): this program
    /// again, `-n N program args : ...`, with the parent's port (the
    /// preput key `PARENT_ROOT_PORT_NAME`) in `MPICORE_PARENT_PORT`. The
    /// job runs on this host, in a process group of its own; its output
    /// goes where ours goes; it gets SIGTERM if this launcher dies.
    fn start_spawned(&mut self, apps: &[SpawnApp], preput: &[(String, String)]) -> std::result::Result<(), String> {
        let me = std::env::current_exe().map_err(|e| format!("cannot find the launcher's own program: {e}"))?;
        let path = std::env::var_os("PATH");
        let mut cmd = Command::new(me);
        for (i, app) in apps.iter().enumerate() {
            if app.nprocs == 0 || app.exe.is_empty() {
                return Err(format!("program {i} of the request is empty ({} processes of {:?})", app.nprocs, app.exe));
            }
            let wdir = app.info.iter().find(|(k, _)| k == "wdir").map(|(_, v)| PathBuf::from(v));
            let program = resolve_program(&app.exe, wdir.as_deref(), path.as_deref()).map_err(|e| e.to_string())?;
            if i > 0 {
                cmd.arg(":");
            }
            cmd.arg("-n").arg(app.nprocs.to_string());
            if let Some(w) = &wdir {
                cmd.arg("-wdir").arg(w);
            }
            cmd.arg(program).args(&app.args);
        }
        if let Some((_, port)) = preput.iter().find(|(k, _)| k == "PARENT_ROOT_PORT_NAME") {
            cmd.env("MPICORE_PARENT_PORT", port);
        }
        for v in STALE_VARS {
            cmd.env_remove(v);
        }
        cmd.stdin(Stdio::null()).process_group(0);
        // SAFETY: the closure runs in the child between fork and exec and
        // only calls prctl, which is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| format!("cannot start the launcher of the new job: {e}"))?;
        self.spawned.push(child);
        Ok(())
    }

    /// Collects the launchers of spawned jobs that ended: one that failed
    /// makes this launcher's exit status a failure too.
    fn reap_spawned(&mut self, wait: bool) {
        let mut failed = None;
        self.spawned.retain_mut(|c| {
            let st = if wait { c.wait().ok() } else { c.try_wait().ok().flatten() };
            match st {
                Some(st) => {
                    if !st.success() {
                        failed = Some(st.code().unwrap_or(1));
                    }
                    false
                }
                None => true,
            }
        });
        if let Some(code) = failed {
            self.output.message(&format!("mpirun: a job spawned by this one failed (exit status {code})"));
            self.outcome.get_or_insert(Outcome::RankFailed(ExitKind::Code(code)));
        }
    }

    /// Reads what rank `rank` sent on its PMI socket.
    fn read_pmi(&mut self, rank: usize) {
        let pmi = &mut self.pmi;
        if sys::drain(&mut self.ranks[rank].pmi, usize::MAX, |data| pmi.receive(rank, data)) {
            self.pmi.close(rank);
        }
    }

    /// Writes pending PMI replies to every rank that has some.
    fn write_pmi(&mut self) {
        for rank in 0..self.ranks.len() {
            if let Some(p) = self.ranks[rank].proxy {
                self.relay_pmi(p, rank);
                continue;
            }
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
        let slot = match stream {
            Stream::Stdout => &mut self.ranks[rank].out,
            Stream::Stderr => &mut self.ranks[rank].err,
        };
        let output = &mut self.output;
        if sys::drain(slot, max_reads, |data| output.feed(rank, stream, data, Instant::now())) {
            self.output.flush_rank(rank, stream);
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

    /// Collects ended ranks and reacts to failures. Each rank leads its own
    /// process group and stays a zombie until the end, so that the group id
    /// cannot be reused by an unrelated process while the launcher may still
    /// signal the group.
    fn reap(&mut self) {
        for rank in 0..self.ranks.len() {
            if self.ranks[rank].exit.is_some() || self.ranks[rank].pid <= 0 {
                continue;
            }
            let pid = self.ranks[rank].pid;
            let Some(kind) = sys::check_exit(pid, false) else { continue };
            // What the rank said last (an abort, a final message) comes
            // before the verdict on its exit.
            self.read_pmi(rank);
            self.handle_pmi_events();
            self.read_output(rank, Stream::Stdout, DRAIN_READS);
            self.read_output(rank, Stream::Stderr, DRAIN_READS);
            self.rank_ended(rank, kind);
        }
        self.reap_agents();
        self.reap_spawned(false);
    }

    /// Rank `rank` ended (here, or on its host as its proxy reports): the
    /// job goes on or ends, with a message naming the rank and its host.
    fn rank_ended(&mut self, rank: usize, kind: ExitKind) {
        {
            self.output.flush_rank(rank, Stream::Stdout);
            self.output.flush_rank(rank, Stream::Stderr);
            self.ranks[rank].exit = Some(kind);
            self.pmi.process_exited(rank);
            self.last_exit = Some(Instant::now());
            let r = &self.ranks[rank];
            let (pid, on) = match r.proxy {
                Some(_) => (r.remote_pid, format!(" on host {}", self.hosts[rank])),
                None => (r.pid, String::new()),
            };
            let text = match kind {
                ExitKind::Code(0) => return,
                // The launcher's own stdout was closed (`mpirun ... | head`):
                // that end is expected, not worth a message.
                ExitKind::Signal(libc::SIGPIPE) if self.output.is_broken(Stream::Stdout) => {
                    if self.outcome.is_none() {
                        self.outcome = Some(Outcome::RankFailed(kind));
                        self.terminate(libc::SIGTERM);
                    }
                    return;
                }
                ExitKind::Code(c) => format!("mpirun: rank {rank} (pid {pid}){on} exited with code {c}"),
                ExitKind::Signal(s) => {
                    format!("mpirun: rank {rank} (pid {pid}){on} killed by signal {s} ({})", sys::signal_name(s))
                }
            };
            if self.tolerate && self.outcome.is_none() {
                self.output.message(&format!("{text}; failures are tolerated, the job goes on"));
                self.tolerated.get_or_insert(kind);
                return;
            }
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
                for r in self.running().filter(|r| r.pid > 0) {
                    sys::kill(r.pid, sig);
                }
                self.signal_proxies(sig);
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
                format!(
                    "mpirun: rank {rank} {how} while other ranks wait for it in a PMI barrier; terminating the job"
                ),
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
                format!(
                    "mpirun: job did not finish within the time limit of {secs} s (MPIEXEC_TIMEOUT); terminating it"
                ),
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
        consider(self.remote.next_check(now));
        next.map(|t| t.saturating_duration_since(now))
    }

    /// Serves the job until every rank has ended; returns the exit status.
    fn event_loop(&mut self, kvsname: &str) -> i32 {
        // Ranks may have ended before the handler saw SIGCHLD.
        self.reap();
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut slots: Vec<Slot> = Vec::new();
        let mut ready_pending: Vec<usize> = Vec::new();
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
            self.remote.poll_fds(&mut add);
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
                    Slot::Listener => self.accept_proxies(),
                    Slot::Pending(i) => ready_pending.push(i),
                    Slot::Proxy(p) => self.read_proxy(p),
                    Slot::Stdin => self.relay_stdin(),
                }
            }
            // Highest index first: authenticating removes the entry.
            while let Some(i) = ready_pending.pop() {
                self.read_pending(i);
            }
            self.handle_pmi_events();
            self.write_pmi();
            self.close_broken_outputs();
            self.flush_proxies();
            self.check_stalled_barrier();
            self.check_timers(Instant::now());
            self.check_remote_timers(Instant::now());
        }
        self.finish(kvsname)
    }

    /// Cleans up after the last rank and computes the exit status.
    fn finish(&mut self, kvsname: &str) -> i32 {
        self.stop_proxies();
        // Spawned jobs may outlive their parents: wait for them (ended
        // first if this job failed).
        if self.outcome.is_some() {
            for c in &self.spawned {
                sys::kill(c.id() as i32, libc::SIGTERM);
            }
        }
        self.reap_spawned(true);
        // Whatever the ranks left behind in their process groups goes too;
        // then the ranks, kept as zombies until now, are collected.
        for r in self.ranks.iter().filter(|r| r.pid > 0) {
            sys::kill(-r.pid, libc::SIGKILL);
            sys::check_exit(r.pid, true);
        }
        self.output.finish();
        remove_shm_segments(kvsname);
        if self.verbose {
            let (user, sys) = sys::own_cpu_time();
            eprintln!("mpirun: launcher cpu time {user:.3} s user, {sys:.3} s system");
        }
        match self.outcome.or(self.tolerated.map(Outcome::RankFailed)) {
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
        for h in
            ["localhost", "LOCALHOST", "127.0.0.1", "127.0.1.1", "::1", "[::1]", "vm", "vm.example.org", "192.0.2.2"]
        {
            assert!(is_local_host(h, "vm.example.org", &addrs), "{h}");
        }
        for h in ["10.0.0.1", "192.0.2.3", "no-such-host.invalid"] {
            assert!(!is_local_host(h, "vm.example.org", &addrs), "{h}");
        }
        let hosts = ["localhost".to_string(), sys::hostname(), "no-such-host-x.invalid".into()];
        assert_eq!(rank_hosts(&hosts, None, 4), ["", "", "no-such-host-x.invalid", ""]);
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
