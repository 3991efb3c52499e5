//! The `mpirun` side of ranks on other hosts: starting the proxies through
//! the launch agent, authenticating their connections, relaying PMI,
//! output, exits and signals, and ending the job when a host is lost (see
//! [`crate::remote`] for the design).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Job, Outcome, RankPlan, Slot, KILL_GRACE};
use crate::cli::Options;
use crate::error::{Error, Result};
use crate::output::Stream;
use crate::proxy::parse_exit;
use crate::remote::{encode_spawn, same_secret, shell_word, Conn, Kind, SpawnSpec, STDIN_WINDOW};
use crate::sys::{self, ExitKind};

/// How long a proxy may take to connect back (ssh can be slow).
const CONNECT_LIMIT: Duration = Duration::from_secs(30);
/// How long a connection may stay silent before it says who it is.
const HELLO_LIMIT: Duration = Duration::from_secs(10);
/// How long proxies get to report their ranks' end after SIGKILL was sent.
const PROXY_GRACE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The agent runs; the proxy has not connected yet.
    Starting,
    Connected,
    /// Its ranks are accounted for; nothing more is expected.
    Done,
}

struct Proxy {
    host: String,
    ranks: Vec<usize>,
    token: String,
    /// The launch agent's pid (0 once collected).
    agent: i32,
    conn: Option<Conn>,
    state: State,
    /// Start requests, sent once the proxy is authenticated.
    spawns: Vec<(usize, Vec<u8>)>,
}

/// mpirun's stdin on its way to a rank on another host: a thread copies
/// stdin into a socket whose other end the event loop polls (stdin itself
/// is never made non-blocking: it may be shared with a shell), and sends
/// what it reads to the rank's proxy, at most [`STDIN_WINDOW`] bytes ahead
/// of what the proxy acknowledged.
struct StdinRelay {
    rank: usize,
    from: UnixStream,
    inflight: usize,
}

impl StdinRelay {
    fn start(rank: usize) -> std::io::Result<StdinRelay> {
        let (from, mut to) = UnixStream::pair()?;
        from.set_nonblocking(true)?;
        std::thread::Builder::new().name("stdin".into()).spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            let mut stdin = std::io::stdin().lock();
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        })?;
        Ok(StdinRelay { rank, from, inflight: 0 })
    }
}

/// Proxies and the listener they connect to.
#[derive(Default)]
pub(super) struct Remote {
    proxies: Vec<Proxy>,
    listener: Option<TcpListener>,
    pending: Vec<(Conn, Instant, SocketAddr)>,
    started: Option<Instant>,
    stdin: Option<StdinRelay>,
}

impl Remote {
    /// Adds the descriptors to poll.
    pub(super) fn poll_fds(&self, add: &mut impl FnMut(RawFd, libc::c_short, Slot)) {
        if let Some(l) = &self.listener {
            add(l.as_raw_fd(), libc::POLLIN, Slot::Listener);
        }
        for (i, (c, _, _)) in self.pending.iter().enumerate() {
            add(c.sock.as_raw_fd(), libc::POLLIN, Slot::Pending(i));
        }
        for (p, proxy) in self.proxies.iter().enumerate() {
            if let Some(c) = &proxy.conn {
                let ev = if c.wants_write() { libc::POLLIN | libc::POLLOUT } else { libc::POLLIN };
                add(c.sock.as_raw_fd(), ev, Slot::Proxy(p));
            }
        }
        // Input is read once the rank's proxy is there to take it, and
        // while the proxy keeps up.
        if let Some(relay) = &self.stdin {
            let connected = self.proxies.iter().any(|p| p.conn.is_some() && p.ranks.contains(&relay.rank));
            if connected && relay.inflight < STDIN_WINDOW {
                add(relay.from.as_raw_fd(), libc::POLLIN, Slot::Stdin);
            }
        }
    }

    /// When the loop must look at the timers of proxies again.
    pub(super) fn next_check(&self, now: Instant) -> Option<Instant> {
        let busy = !self.pending.is_empty()
            || self.proxies.iter().any(|p| p.state == State::Starting || p.agent > 0 && p.state != State::Done);
        busy.then(|| now + Duration::from_millis(250))
    }
}

/// The addresses of this machine a proxy may reach, as `a,b,...:port`:
/// `MPIRUN_LAUNCHER_ADDR` if set, else every IPv4 interface address
/// (loopback last).
fn callback_addresses(port: u16) -> String {
    let list = match std::env::var("MPIRUN_LAUNCHER_ADDR") {
        Ok(v) if !v.trim().is_empty() => v.trim().to_string(),
        _ => {
            let mut v: Vec<String> = sys::interface_addresses()
                .into_iter()
                .filter(|a| a.is_ipv4() && !a.is_loopback())
                .map(|a| a.to_string())
                .collect();
            v.push("127.0.0.1".into());
            v.join(",")
        }
    };
    format!("{list}:{port}")
}

impl Job {
    /// Starts a proxy on every remote host of the job.
    pub(super) fn start_proxies(&mut self, opts: &Options, plans: &[RankPlan]) -> Result<()> {
        let mut hosts: Vec<String> = Vec::new();
        for h in self.hosts.iter().filter(|h| !h.is_empty()) {
            if !hosts.contains(h) {
                hosts.push(h.clone());
            }
        }
        if hosts.is_empty() {
            return Ok(());
        }
        let listener = TcpListener::bind("0.0.0.0:0").map_err(|e| Error::io("cannot open the port for proxies", e))?;
        listener.set_nonblocking(true).map_err(|e| Error::io("cannot set up the port for proxies", e))?;
        let port = listener.local_addr().map_err(|e| Error::io("cannot set up the port for proxies", e))?.port();
        let exe = std::env::current_exe().map_err(|e| Error::io("cannot find the mpirun executable", e))?;
        let addrs = callback_addresses(port);
        let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
        if !self.hosts[0].is_empty() {
            match StdinRelay::start(0) {
                Ok(relay) => self.remote.stdin = Some(relay),
                Err(e) => self.output.message(&format!("mpirun: warning: cannot forward stdin to rank 0: {e}")),
            }
        }
        self.remote.listener = Some(listener);
        self.remote.started = Some(Instant::now());
        for (id, host) in hosts.into_iter().enumerate() {
            let ranks: Vec<usize> = (0..self.size).filter(|&r| self.hosts[r] == host).collect();
            let mut spawns = Vec::new();
            for &r in &ranks {
                let (app, env, program) = plans[r];
                let mut env = env.clone();
                env.extend(self.rank_env(r));
                let wdir = app.wdir.as_ref().map(|w| cwd.join(w)).unwrap_or_else(|| cwd.clone());
                let spec = SpawnSpec {
                    program: program.as_os_str().as_bytes().to_vec(),
                    argv: app.argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
                    env: env.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect(),
                    wdir: Some(wdir.as_os_str().as_bytes().to_vec()),
                    // mpirun's stdin goes to rank 0, wherever it runs.
                    stdin: r == 0,
                };
                spawns.push((r, encode_spawn(&spec)));
                self.ranks[r].proxy = Some(id);
            }
            let token = sys::hex(&sys::random_bytes(16).map_err(|e| Error::io("cannot read random bytes", e))?);
            let command: Vec<String> =
                vec![exe.to_string_lossy().into_owned(), "--proxy".into(), addrs.clone(), id.to_string(), host.clone()];
            self.remote.proxies.push(Proxy {
                host: host.clone(),
                ranks,
                token: token.clone(),
                agent: 0,
                conn: None,
                state: State::Starting,
                spawns,
            });
            match start_agent(opts, &host, &command, &token) {
                Ok(pid) => self.remote.proxies[id].agent = pid,
                Err(e) => {
                    self.proxy_failed(id, format!("mpirun: cannot start the proxy on host {host}: {e}"));
                }
            }
            if self.verbose {
                self.output.message(&format!("mpirun: proxy {id} on host {host}: {}", command.join(" ")));
            }
        }
        Ok(())
    }

    /// A proxy can no longer run its ranks: the job ends (unless it ends
    /// already) and the ranks count as killed.
    fn proxy_failed(&mut self, p: usize, message: String) {
        let proxy = &mut self.remote.proxies[p];
        proxy.state = State::Done;
        proxy.conn = None;
        let ranks = proxy.ranks.clone();
        if ranks.iter().any(|&r| self.ranks[r].exit.is_none()) {
            self.fail(Outcome::RankFailed(ExitKind::Code(1)), message);
        }
        for r in ranks {
            if self.ranks[r].exit.is_none() {
                self.ranks[r].exit = Some(ExitKind::Signal(libc::SIGKILL));
                self.pmi.close(r);
                self.pmi.process_exited(r);
                self.output.flush_rank(r, Stream::Stdout);
                self.output.flush_rank(r, Stream::Stderr);
                self.last_exit = Some(Instant::now());
            }
        }
        if self.running().next().is_some() {
            self.terminate(libc::SIGTERM);
        }
    }

    fn rank_list(&self, p: usize) -> String {
        let ranks: Vec<String> = self.remote.proxies[p]
            .ranks
            .iter()
            .filter(|&&r| self.ranks[r].exit.is_none())
            .map(|r| r.to_string())
            .collect();
        ranks.join(",")
    }

    /// The connection of proxy `p` ended or broke.
    fn proxy_lost(&mut self, p: usize, why: &str) {
        let host = self.remote.proxies[p].host.clone();
        let ranks = self.rank_list(p);
        let text = format!(
            "mpirun: lost the connection to host {host} ({why}) while rank(s) {ranks} ran there; terminating the job"
        );
        self.proxy_failed(p, text);
    }

    pub(super) fn accept_proxies(&mut self) {
        let Some(l) = &self.remote.listener else { return };
        while let Ok((sock, addr)) = l.accept() {
            match Conn::new(sock) {
                Ok(c) => self.remote.pending.push((c, Instant::now(), addr)),
                Err(e) => self.output.message(&format!("mpirun: connection from {addr} dropped: {e}")),
            }
        }
    }

    /// Reads the hello of a new connection and hands it to its proxy.
    pub(super) fn read_pending(&mut self, i: usize) {
        let (conn, _, addr) = &mut self.remote.pending[i];
        let addr = *addr;
        let eof = !matches!(conn.fill(), Ok(true));
        let frame = conn.next_frame();
        let frame = match frame {
            Ok(Some(f)) => Some(f),
            Ok(None) if !eof => return,
            Ok(None) => {
                self.remote.pending.remove(i);
                self.output.message(&format!("mpirun: connection from {addr} closed before it said who it is"));
                return;
            }
            Err(_) => None,
        };
        let (conn, _, _) = self.remote.pending.remove(i);
        let Some(frame) = frame.filter(|f| {
            f.kind == Kind::Hello
                && self
                    .remote
                    .proxies
                    .get(f.value as usize)
                    .is_some_and(|px| px.state == State::Starting && same_secret(px.token.as_bytes(), &f.data))
        }) else {
            self.output.message(&format!("mpirun: rejected a connection from {addr}: not a proxy of this job"));
            return;
        };
        let proxy = &mut self.remote.proxies[frame.value as usize];
        let mut conn = conn;
        for (r, payload) in std::mem::take(&mut proxy.spawns) {
            conn.send(Kind::Spawn, r as u32, &payload);
        }
        conn.send(Kind::Go, 0, self.pmi.kvsname().as_bytes());
        proxy.conn = Some(conn);
        proxy.state = State::Connected;
        if self.verbose {
            let host = proxy.host.clone();
            self.output.message(&format!("mpirun: proxy on host {host} connected from {addr}"));
        }
    }

    /// Handles what proxy `p` sent.
    pub(super) fn read_proxy(&mut self, p: usize) {
        let Some(conn) = self.remote.proxies[p].conn.as_mut() else { return };
        let status = conn.fill();
        loop {
            let Some(conn) = self.remote.proxies[p].conn.as_mut() else { return };
            let frame = match conn.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    self.proxy_lost(p, &format!("bad data: {e}"));
                    return;
                }
            };
            let rank = frame.value as usize;
            if self.ranks.get(rank).is_none_or(|r| r.proxy != Some(p)) {
                continue;
            }
            match frame.kind {
                Kind::Pmi => self.pmi.receive(rank, &frame.data),
                Kind::PmiClosed => self.pmi.close(rank),
                Kind::Stdout => self.output.feed(rank, Stream::Stdout, &frame.data, Instant::now()),
                Kind::Stderr => self.output.feed(rank, Stream::Stderr, &frame.data, Instant::now()),
                Kind::StdinAck => self.stdin_acked(rank, &frame.data),
                Kind::Started => {
                    self.ranks[rank].remote_pid =
                        std::str::from_utf8(&frame.data).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
                }
                Kind::Exited if self.ranks[rank].exit.is_none() => {
                    // What the rank said last comes before the verdict.
                    self.handle_pmi_events();
                    let kind = parse_exit(&frame.data).unwrap_or(ExitKind::Code(1));
                    self.rank_ended(rank, kind);
                }
                Kind::Failed if self.ranks[rank].exit.is_none() => {
                    let host = &self.hosts[rank];
                    let why = String::from_utf8_lossy(&frame.data).into_owned();
                    self.fail(
                        Outcome::RankFailed(ExitKind::Code(1)),
                        format!("mpirun: cannot start rank {rank} on host {host}: {why}"),
                    );
                    self.ranks[rank].exit = Some(ExitKind::Code(1));
                    self.pmi.close(rank);
                    self.pmi.process_exited(rank);
                    self.last_exit = Some(Instant::now());
                }
                _ => {}
            }
        }
        match status {
            Ok(true) => {}
            Ok(false) => self.connection_ended(p, "the proxy closed it"),
            Err(e) => self.connection_ended(p, &e.to_string()),
        }
    }

    /// Passes what arrived on mpirun's stdin to the proxy of the rank that
    /// reads it; the end of the input as an empty frame.
    pub(super) fn relay_stdin(&mut self) {
        let Some(relay) = self.remote.stdin.as_mut() else { return };
        let Some(p) = self.ranks[relay.rank].proxy else { return };
        let Some(conn) = self.remote.proxies[p].conn.as_mut() else { return };
        let mut buf = [0u8; 64 * 1024];
        let room = STDIN_WINDOW.saturating_sub(relay.inflight).min(buf.len());
        if room == 0 {
            return;
        }
        match sys::read_some(relay.from.as_raw_fd(), &mut buf[..room]) {
            Ok(None) => {}
            Ok(Some(n)) if n > 0 => {
                conn.send(Kind::Stdin, relay.rank as u32, &buf[..n]);
                relay.inflight += n;
            }
            Ok(Some(_)) | Err(_) => {
                conn.send(Kind::Stdin, relay.rank as u32, b"");
                self.remote.stdin = None;
            }
        }
    }

    /// The proxy of `rank` wrote stdin into its pipe, or says the rank
    /// reads no more (then mpirun stops reading its stdin).
    fn stdin_acked(&mut self, rank: usize, data: &[u8]) {
        let Some(relay) = self.remote.stdin.as_mut().filter(|r| r.rank == rank) else { return };
        match std::str::from_utf8(data).ok().and_then(|t| t.parse::<usize>().ok()) {
            Some(n) => relay.inflight = relay.inflight.saturating_sub(n),
            None => self.remote.stdin = None,
        }
    }

    fn connection_ended(&mut self, p: usize, why: &str) {
        let proxy = &self.remote.proxies[p];
        if proxy.ranks.iter().all(|&r| self.ranks[r].exit.is_some()) {
            let proxy = &mut self.remote.proxies[p];
            proxy.conn = None;
            proxy.state = State::Done;
        } else {
            self.proxy_lost(p, why);
        }
    }

    /// Passes PMI replies for remote rank `rank` to its proxy.
    pub(super) fn relay_pmi(&mut self, p: usize, rank: usize) {
        let Some(pending) = self.pmi.pending_output(rank) else { return };
        if pending.is_empty() {
            return;
        }
        let data = std::mem::take(pending);
        if let Some(c) = self.remote.proxies[p].conn.as_mut() {
            c.send(Kind::Pmi, rank as u32, &data);
        }
    }

    /// The launcher closed remote rank `rank`'s PMI connection.
    pub(super) fn close_remote_pmi(&mut self, rank: usize) {
        if let Some(p) = self.ranks[rank].proxy {
            if let Some(c) = self.remote.proxies[p].conn.as_mut() {
                c.send(Kind::PmiClosed, rank as u32, b"");
            }
        }
    }

    pub(super) fn flush_proxies(&mut self) {
        for p in 0..self.remote.proxies.len() {
            let Some(c) = self.remote.proxies[p].conn.as_mut() else { continue };
            if let Err(e) = c.flush() {
                self.connection_ended(p, &e.to_string());
            }
        }
    }

    /// Passes a signal to the ranks on other hosts; proxies that have not
    /// connected yet are stopped with their agent.
    pub(super) fn signal_proxies(&mut self, sig: i32) {
        for p in 0..self.remote.proxies.len() {
            let proxy = &mut self.remote.proxies[p];
            match proxy.state {
                State::Connected => {
                    if let Some(c) = proxy.conn.as_mut() {
                        c.send(Kind::Signal, sig as u32, b"");
                    }
                }
                // The job ends before this proxy even started: its agent
                // goes. (Other signals have no rank to reach there yet.)
                State::Starting
                    if matches!(sig, libc::SIGINT | libc::SIGTERM | libc::SIGHUP | libc::SIGQUIT | libc::SIGKILL) =>
                {
                    if proxy.agent > 0 {
                        sys::kill(-proxy.agent, libc::SIGKILL);
                    }
                    let host = proxy.host.clone();
                    self.proxy_failed(p, format!("mpirun: the job ends before the proxy on host {host} started"));
                }
                State::Starting => {}
                State::Done => {}
            }
        }
        self.flush_proxies();
    }

    /// Collects launch agents that ended; one that ends before its proxy
    /// connected means the proxy could not start.
    pub(super) fn reap_agents(&mut self) {
        for p in 0..self.remote.proxies.len() {
            let agent = self.remote.proxies[p].agent;
            if agent <= 0 {
                continue;
            }
            let Some(kind) = sys::check_exit(agent, true) else { continue };
            self.remote.proxies[p].agent = 0;
            if self.remote.proxies[p].state == State::Starting {
                let host = self.remote.proxies[p].host.clone();
                let how = match kind {
                    ExitKind::Code(c) => format!("exited with code {c}"),
                    ExitKind::Signal(s) => format!("was killed by {}", sys::signal_name(s)),
                };
                self.proxy_failed(
                    p,
                    format!("mpirun: the launch agent for host {host} {how} before the proxy connected"),
                );
            }
        }
    }

    pub(super) fn check_remote_timers(&mut self, now: Instant) {
        let started = self.remote.started;
        self.remote.pending.retain(|(_, t, _)| now < *t + HELLO_LIMIT);
        for p in 0..self.remote.proxies.len() {
            let proxy = &self.remote.proxies[p];
            if proxy.state == State::Starting && started.is_some_and(|t| now >= t + CONNECT_LIMIT) {
                if proxy.agent > 0 {
                    sys::kill(-proxy.agent, libc::SIGKILL);
                }
                let host = proxy.host.clone();
                let secs = CONNECT_LIMIT.as_secs();
                self.proxy_failed(p, format!("mpirun: the proxy on host {host} did not connect back within {secs} s"));
            }
        }
        // Proxies that do not report the end of their ranks after SIGKILL.
        if self.killed && self.terminating_since.is_some_and(|t| now >= t + KILL_GRACE + PROXY_GRACE) {
            for p in 0..self.remote.proxies.len() {
                if self.remote.proxies[p].state == State::Connected {
                    self.proxy_lost(p, "no answer after SIGKILL");
                }
            }
        }
    }

    /// At the end: closes the connections (the proxies exit) and collects
    /// the agents, killing those that linger.
    pub(super) fn stop_proxies(&mut self) {
        if self.remote.proxies.is_empty() {
            return;
        }
        for p in &mut self.remote.proxies {
            if let Some(mut c) = p.conn.take() {
                let _ = c.flush_all(Duration::from_millis(500));
            }
        }
        self.remote.listener = None;
        self.remote.pending.clear();
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            for p in &mut self.remote.proxies {
                if p.agent > 0 && sys::check_exit(p.agent, true).is_some() {
                    p.agent = 0;
                }
            }
            if self.remote.proxies.iter().all(|p| p.agent <= 0) {
                return;
            }
            if Instant::now() >= until {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for p in &mut self.remote.proxies {
            if p.agent > 0 {
                sys::kill(-p.agent, libc::SIGKILL);
                sys::kill(p.agent, libc::SIGKILL);
                let deadline = Instant::now() + Duration::from_secs(1);
                while sys::check_exit(p.agent, true).is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                p.agent = 0;
            }
        }
    }
}

/// Runs the launch agent for `host` with `command`, writes the token on its
/// stdin; returns its pid. The agent runs in a process group of its own and
/// gets SIGTERM when mpirun dies.
fn start_agent(opts: &Options, host: &str, command: &[String], token: &str) -> std::io::Result<i32> {
    let launcher = opts.launcher.as_deref().unwrap_or("ssh");
    let mut cmd = if launcher == "fork" {
        let mut c = Command::new(&command[0]);
        c.args(&command[1..]);
        c
    } else {
        let mut c = match &opts.launcher_exec {
            Some(agent) => Command::new(agent),
            None => {
                let mut c = Command::new(launcher);
                if launcher == "ssh" {
                    c.arg("-x");
                }
                c
            }
        };
        c.arg(host).args(command.iter().map(|w| OsString::from(shell_word(w))));
        c
    };
    cmd.stdin(Stdio::piped()).stdout(Stdio::inherit()).stderr(Stdio::inherit()).process_group(0);
    // SAFETY: the closure runs between fork and exec and only calls prctl,
    // which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A few bytes into an empty pipe: this does not block.
        let _ = stdin.write_all(format!("{token}\n").as_bytes());
    }
    Ok(child.id() as i32)
}
