//! `mpirun --proxy ADDRS:PORT ID HOST`: the process a launch agent starts on
//! a remote host. It reads its one-time token on stdin, connects back to
//! `mpirun`, starts the ranks it is sent and relays their PMI traffic, output
//! and exits (see [`crate::remote`]). It kills its ranks and exits when the
//! connection to `mpirun` is lost or it is told to stop by a signal.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::job::{signal_rank, start_process};
use crate::output::Stream;
use crate::remote::{decode_spawn, Conn, Kind};
use crate::sys::{self, ExitKind};

/// How long output of ended ranks is still relayed (children of a rank may
/// keep the pipes open).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// Output read from the ranks but not yet sent to mpirun beyond which the
/// proxy stops reading their pipes (the ranks then block on write, as with
/// a slow terminal).
const OUTPUT_BACKLOG: usize = 4 << 20;

struct PRank {
    rank: u32,
    pid: i32,
    pmi: Option<UnixStream>,
    pmi_out: Vec<u8>,
    out: Option<OwnedFd>,
    err: Option<OwnedFd>,
    /// The rank's stdin, when mpirun feeds it (non-blocking).
    stdin: Option<OwnedFd>,
    /// Input from mpirun not yet written into `stdin`.
    stdin_buf: Vec<u8>,
    /// mpirun's input ended: `stdin` closes once `stdin_buf` is written.
    stdin_eof: bool,
    exited: bool,
}

struct Proxy {
    conn: Conn,
    host: String,
    ranks: Vec<PRank>,
    index: HashMap<u32, usize>,
    go: bool,
    /// The job's KVS name (from `Go`): its segments in /dev/shm are
    /// removed when the proxy ends, however the job ended.
    kvsname: Option<String>,
    last_exit: Option<Instant>,
}

/// Reads the token line from stdin (at most 256 bytes, without buffering
/// past the newline).
fn read_token() -> Option<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    let mut stdin = std::io::stdin().lock();
    while line.len() < 256 {
        match stdin.read(&mut byte) {
            Ok(1) if byte[0] == b'\n' => break,
            Ok(1) => line.push(byte[0]),
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let t = String::from_utf8(line).ok()?.trim().to_string();
    (!t.is_empty()).then_some(t)
}

/// Connects to the first of `a,b,c:port` that answers.
fn connect(spec: &str) -> Result<TcpStream, String> {
    let (list, port) = spec.rsplit_once(':').ok_or_else(|| format!("bad address list '{spec}'"))?;
    let port: u16 = port.parse().map_err(|_| format!("bad port in '{spec}'"))?;
    let mut why = Vec::new();
    for a in list.split(',').filter(|a| !a.is_empty()) {
        let addr = match a.parse::<std::net::IpAddr>() {
            Ok(ip) => SocketAddr::new(ip, port),
            Err(_) => {
                why.push(format!("{a}: not an IP address"));
                continue;
            }
        };
        match TcpStream::connect_timeout(&addr, Duration::from_secs(3)) {
            Ok(s) => return Ok(s),
            Err(e) => why.push(format!("{addr}: {e}")),
        }
    }
    Err(format!("cannot connect back to mpirun ({})", why.join("; ")))
}

/// The `main` of a proxy; returns its exit status.
pub fn main(args: &[String]) -> i32 {
    let host = args.get(2).cloned().unwrap_or_else(sys::hostname);
    let fail = |msg: String| {
        eprintln!("mpirun proxy on {host}: {msg}");
        1
    };
    let (Some(spec), Some(id)) = (args.first(), args.get(1).and_then(|i| i.parse::<u32>().ok())) else {
        return fail("usage: mpirun --proxy ADDRS:PORT ID [HOST] (started by mpirun itself)".into());
    };
    let Some(token) = read_token() else {
        return fail("no token on stdin".into());
    };
    let sock = match connect(spec) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let mut conn = match Conn::new(sock) {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot set up the connection: {e}")),
    };
    conn.send(Kind::Hello, id, token.as_bytes());
    let wanted = [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT];
    let signals = match sys::SignalPipe::install(&wanted) {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot install signal handlers: {e}")),
    };
    let mut p =
        Proxy { conn, host, ranks: Vec::new(), index: HashMap::new(), go: false, kvsname: None, last_exit: None };
    let code = p.run(&signals);
    p.kill_all(libc::SIGKILL);
    for r in &p.ranks {
        if r.pid > 0 {
            sys::check_exit(r.pid, true);
        }
    }
    // The ranks are gone: what they left in this host's /dev/shm (a job
    // stopped before every rank mapped a segment) goes too; mpirun does
    // the same on its own host, and cannot here.
    if let Some(kvs) = &p.kvsname {
        crate::job::remove_shm_segments(kvs);
    }
    code
}

#[derive(Clone, Copy)]
enum Slot {
    Conn,
    Signals,
    Pmi(usize),
    Out(usize, Stream),
    Stdin(usize),
}

impl Proxy {
    fn run(&mut self, signals: &sys::SignalPipe) -> i32 {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut slots: Vec<Slot> = Vec::new();
        loop {
            let now = Instant::now();
            if self.go && self.ranks.iter().all(|r| r.exited) {
                let open = self.ranks.iter().any(|r| r.out.is_some() || r.err.is_some());
                if !open || self.last_exit.is_none_or(|t| now >= t + DRAIN_GRACE) {
                    // Everything is said: the exits went out after the output.
                    return match self.conn.flush_all(Duration::from_secs(10)) {
                        Ok(()) => 0,
                        Err(e) => self.lost(&format!("cannot send the last reports: {e}")),
                    };
                }
            }
            fds.clear();
            slots.clear();
            let mut add = |fd: RawFd, events: libc::c_short, slot: Slot| {
                fds.push(libc::pollfd { fd, events, revents: 0 });
                slots.push(slot);
            };
            let mut ev = libc::POLLIN;
            if self.conn.wants_write() {
                ev |= libc::POLLOUT;
            }
            add(self.conn.sock.as_raw_fd(), ev, Slot::Conn);
            add(signals.fd(), libc::POLLIN, Slot::Signals);
            let backlog = self.conn.backlog();
            for (i, r) in self.ranks.iter().enumerate() {
                if let Some(s) = &r.pmi {
                    let ev = if r.pmi_out.is_empty() { libc::POLLIN } else { libc::POLLIN | libc::POLLOUT };
                    add(s.as_raw_fd(), ev, Slot::Pmi(i));
                }
                if let (Some(fd), false) = (&r.stdin, r.stdin_buf.is_empty()) {
                    add(fd.as_raw_fd(), libc::POLLOUT, Slot::Stdin(i));
                }
                // Output waits in the pipes while mpirun has not taken
                // what was read already.
                if backlog > OUTPUT_BACKLOG {
                    continue;
                }
                if let Some(fd) = &r.out {
                    add(fd.as_raw_fd(), libc::POLLIN, Slot::Out(i, Stream::Stdout));
                }
                if let Some(fd) = &r.err {
                    add(fd.as_raw_fd(), libc::POLLIN, Slot::Out(i, Stream::Stderr));
                }
            }
            if let Err(e) = sys::poll(&mut fds, Some(Duration::from_millis(250))) {
                return self.lost(&format!("poll failed: {e}"));
            }
            for (pfd, slot) in fds.iter().zip(slots.iter()) {
                if pfd.revents == 0 {
                    continue;
                }
                match *slot {
                    Slot::Conn => {
                        if let Err(why) = self.read_conn() {
                            return self.lost(&why);
                        }
                    }
                    Slot::Signals => {
                        for sig in signals.drain() {
                            if sig == libc::SIGCHLD {
                                self.reap();
                            } else {
                                return self.lost(&format!("stopped by {}", sys::signal_name(sig)));
                            }
                        }
                    }
                    Slot::Pmi(i) => {
                        self.read_pmi(i);
                        self.write_pmi(i);
                    }
                    Slot::Out(i, stream) => self.read_output(i, stream, 1),
                    Slot::Stdin(i) => self.write_stdin(i),
                }
            }
            self.reap();
            if let Err(e) = self.conn.flush() {
                return self.lost(&format!("connection to mpirun broken: {e}"));
            }
        }
    }

    /// The connection to mpirun is gone (or the proxy was stopped): the
    /// ranks die.
    fn lost(&mut self, why: &str) -> i32 {
        if self.ranks.iter().any(|r| !r.exited) {
            eprintln!("mpirun proxy on {}: {why}; killing the ranks on this host", self.host);
        }
        self.kill_all(libc::SIGKILL);
        1
    }

    fn kill_all(&self, sig: i32) {
        for r in self.ranks.iter().filter(|r| r.pid > 0) {
            signal_rank(r.pid, !r.exited, sig);
        }
    }

    fn read_conn(&mut self) -> Result<(), String> {
        match self.conn.fill() {
            Ok(true) => {}
            Ok(false) => return Err("mpirun closed the connection".into()),
            Err(e) => return Err(format!("connection to mpirun broken: {e}")),
        }
        loop {
            let frame = match self.conn.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => return Ok(()),
                Err(e) => return Err(format!("bad data from mpirun: {e}")),
            };
            let idx = self.index.get(&frame.value).copied();
            match (frame.kind, idx) {
                (Kind::Spawn, None) => self.spawn(frame.value, &frame.data),
                (Kind::Go, _) => {
                    self.go = true;
                    // (A KVS name is a token of mpirun's making: letters,
                    // digits and `_`; anything else is not taken as one.)
                    let kvs = String::from_utf8_lossy(&frame.data).into_owned();
                    if !kvs.is_empty() && kvs.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                        self.kvsname = Some(kvs);
                    }
                }
                (Kind::Pmi, Some(i)) => {
                    self.ranks[i].pmi_out.extend_from_slice(&frame.data);
                    self.write_pmi(i);
                }
                (Kind::PmiClosed, Some(i)) => self.ranks[i].pmi = None,
                (Kind::Stdin, Some(i)) => {
                    let r = &mut self.ranks[i];
                    if frame.data.is_empty() {
                        r.stdin_eof = true;
                    } else if r.stdin.is_some() {
                        r.stdin_buf.extend_from_slice(&frame.data);
                    }
                    self.write_stdin(i);
                }
                (Kind::Signal, _) => self.signal(frame.value as i32),
                // Replies for a rank whose connection closed, duplicates.
                _ => {}
            }
        }
    }

    fn signal(&self, sig: i32) {
        if matches!(sig, libc::SIGINT | libc::SIGTERM | libc::SIGHUP | libc::SIGQUIT | libc::SIGKILL) {
            self.kill_all(sig);
        } else {
            for r in self.ranks.iter().filter(|r| !r.exited && r.pid > 0) {
                sys::kill(r.pid, sig);
            }
        }
    }

    fn spawn(&mut self, rank: u32, data: &[u8]) {
        let Some(spec) = decode_spawn(data) else {
            self.conn.send(Kind::Failed, rank, b"malformed start request");
            return;
        };
        let program = PathBuf::from(OsString::from_vec(spec.program));
        let argv: Vec<OsString> = spec.argv.into_iter().map(OsString::from_vec).collect();
        let env: Vec<(OsString, OsString)> =
            spec.env.into_iter().map(|(k, v)| (OsString::from_vec(k), OsString::from_vec(v))).collect();
        let wdir = spec.wdir.map(|w| PathBuf::from(OsString::from_vec(w)));
        let stdin = if spec.stdin { Stdio::piped() } else { Stdio::null() };
        match start_process(&program, &argv, &env, wdir.as_deref(), stdin, None) {
            Ok(st) => {
                let stdin = st.stdin.map(OwnedFd::from);
                if let Some(fd) = &stdin {
                    // A rank that does not read must not block the proxy
                    // (should this fail, writes wait for the rank instead).
                    let _ = sys::set_nonblocking(fd.as_raw_fd(), true);
                }
                self.conn.send(Kind::Started, rank, st.pid.to_string().as_bytes());
                self.index.insert(rank, self.ranks.len());
                self.ranks.push(PRank {
                    rank,
                    pid: st.pid,
                    pmi: Some(st.pmi),
                    pmi_out: Vec::new(),
                    out: st.out,
                    err: st.err,
                    stdin,
                    stdin_buf: Vec::new(),
                    stdin_eof: false,
                    exited: false,
                });
            }
            Err(e) => {
                let msg = format!("cannot start {}: {e}", program.display());
                self.conn.send(Kind::Failed, rank, msg.as_bytes());
            }
        }
    }

    fn read_pmi(&mut self, i: usize) {
        let (r, conn) = (&mut self.ranks[i], &mut self.conn);
        if sys::drain(&mut r.pmi, usize::MAX, |data| conn.send(Kind::Pmi, r.rank, data)) {
            conn.send(Kind::PmiClosed, r.rank, b"");
        }
    }

    fn write_pmi(&mut self, i: usize) {
        let r = &mut self.ranks[i];
        let Some(sock) = &r.pmi else {
            r.pmi_out.clear();
            return;
        };
        while !r.pmi_out.is_empty() {
            match sys::write_some(sock.as_raw_fd(), &r.pmi_out) {
                Ok(0) => return,
                Ok(n) => {
                    r.pmi_out.drain(..n);
                }
                Err(_) => {
                    r.pmi = None;
                    r.pmi_out.clear();
                    let rank = r.rank;
                    self.conn.send(Kind::PmiClosed, rank, b"");
                    return;
                }
            }
        }
    }

    /// Writes what rank `i`'s stdin takes now and tells mpirun how much
    /// that was; closes the pipe after the end of the input, and reports
    /// `closed` when the rank no longer reads it.
    fn write_stdin(&mut self, i: usize) {
        let r = &mut self.ranks[i];
        let Some(fd) = &r.stdin else { return };
        let mut written = 0;
        let mut broken = false;
        while written < r.stdin_buf.len() {
            match sys::write_some(fd.as_raw_fd(), &r.stdin_buf[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(_) => {
                    broken = true;
                    break;
                }
            }
        }
        r.stdin_buf.drain(..written);
        if written > 0 {
            self.conn.send(Kind::StdinAck, r.rank, written.to_string().as_bytes());
        }
        if broken {
            r.stdin = None;
            r.stdin_buf.clear();
            self.conn.send(Kind::StdinAck, r.rank, b"closed");
        } else if r.stdin_eof && r.stdin_buf.is_empty() {
            r.stdin = None;
        }
    }

    fn read_output(&mut self, i: usize, stream: Stream, max_reads: usize) {
        let (r, conn) = (&mut self.ranks[i], &mut self.conn);
        let (kind, slot) = match stream {
            Stream::Stdout => (Kind::Stdout, &mut r.out),
            Stream::Stderr => (Kind::Stderr, &mut r.err),
        };
        let rank = r.rank;
        sys::drain(slot, max_reads, |data| conn.send(kind, rank, data));
    }

    /// Reports ended ranks, after what they said last.
    fn reap(&mut self) {
        for i in 0..self.ranks.len() {
            let r = &self.ranks[i];
            if r.exited {
                continue;
            }
            let pid = r.pid;
            let Some(kind) = sys::check_exit(pid, false) else { continue };
            self.read_pmi(i);
            self.read_output(i, Stream::Stdout, 16);
            self.read_output(i, Stream::Stderr, 16);
            self.ranks[i].exited = true;
            self.last_exit = Some(Instant::now());
            if self.ranks[i].stdin.take().is_some() {
                self.ranks[i].stdin_buf.clear();
                self.conn.send(Kind::StdinAck, self.ranks[i].rank, b"closed");
            }
            let text = match kind {
                ExitKind::Code(c) => format!("code {c}"),
                ExitKind::Signal(s) => format!("signal {s}"),
            };
            self.conn.send(Kind::Exited, self.ranks[i].rank, text.as_bytes());
        }
    }
}

/// Parses the payload of an `Exited` frame.
pub fn parse_exit(data: &[u8]) -> Option<ExitKind> {
    let text = std::str::from_utf8(data).ok()?;
    let (what, n) = text.split_once(' ')?;
    let n: i32 = n.parse().ok()?;
    match what {
        "code" => Some(ExitKind::Code(n)),
        "signal" => Some(ExitKind::Signal(n)),
        _ => None,
    }
}
