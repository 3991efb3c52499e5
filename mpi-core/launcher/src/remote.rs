//! Ranks on other hosts: where each rank runs, how the proxies on remote
//! hosts are started, and the framed protocol between `mpirun` and them.
//!
//! # Design
//! For every remote host `mpirun` runs the launch agent (`ssh -x HOST`,
//! `rsh HOST`, or `-launcher-exec AGENT` run as `AGENT HOST COMMAND ARGS...`;
//! `-launcher fork` runs the command directly) with the command
//! `<this mpirun> --proxy ADDR1,ADDR2,...:PORT ID HOST`. The proxy connects
//! back to one of the listed addresses of `mpirun`, and proves it is the one
//! that was started with a one-time token (32 random hex digits) that
//! `mpirun` wrote on the agent's stdin: no secret ever appears on a command
//! line. `mpirun` then sends the proxy the ranks to start (program,
//! arguments, environment including `MPICORE_JOB_SECRET`, working
//! directory).
//!
//! The proxy is a relay: it starts its ranks with a PMI socketpair each
//! (`PMI_FD`), and passes the bytes of every PMI connection, the ranks'
//! stdout and stderr, and their exits to `mpirun`, which runs the one PMI
//! server of the job (global key-value space and barriers) and the output
//! (`-l` prefixes) exactly as for local ranks. Signals travel the other way,
//! and so does `mpirun`'s stdin when rank 0 runs on another host: `mpirun`
//! reads it and sends it in [`Kind::Stdin`] frames, at most
//! [`STDIN_WINDOW`] bytes ahead of what the proxy has written into the
//! rank's pipe ([`Kind::StdinAck`]), so a rank that does not read holds up
//! neither the proxy nor `mpirun`'s memory.
//!
//! # Failure
//! A remote rank that fails is reported by its proxy like a local one (with
//! its host). A proxy connection that breaks (host gone, proxy killed) ends
//! the job naming the host and its ranks, status 1; TCP keep-alive and a
//! 10 s limit on unacknowledged data notice a host that went silent in
//! about 11 s. A proxy that loses `mpirun` kills its ranks (SIGKILL to
//! their process group) and exits; its ranks also die with it
//! (`PR_SET_PDEATHSIG`).
//!
//! # Frames
//! `[kind: u8][rank or value: u32 BE][length: u32 BE][payload]`.

use std::io::{self, Read};
use std::net::TcpStream;
use std::os::fd::AsRawFd;

use crate::sys;

/// Largest frame payload accepted.
const MAX_FRAME: usize = 64 << 20;
const HEADER: usize = 9;

/// Kinds of frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// proxy → mpirun: `value` = proxy id, payload = token.
    Hello = 1,
    /// mpirun → proxy: start rank `value`; payload see [`encode_spawn`].
    Spawn = 2,
    /// mpirun → proxy: no more ranks for this proxy; payload = the job's
    /// KVS name (the prefix of its shared-memory segments, which the proxy
    /// removes on its host when it ends).
    Go = 3,
    /// both ways: PMI bytes of rank `value`.
    Pmi = 4,
    /// both ways: rank `value`'s PMI connection is closed.
    PmiClosed = 5,
    /// proxy → mpirun: output of rank `value`.
    Stdout = 6,
    Stderr = 7,
    /// proxy → mpirun: rank `value` started, payload = its pid.
    Started = 8,
    /// proxy → mpirun: rank `value` ended, payload `code N` / `signal N`.
    Exited = 9,
    /// proxy → mpirun: rank `value` could not start, payload = why.
    Failed = 10,
    /// mpirun → proxy: send signal `value` to the ranks.
    Signal = 11,
    /// mpirun → proxy: input for rank `value`'s stdin (started with
    /// [`SpawnSpec::stdin`]); an empty payload is the end of the input.
    Stdin = 12,
    /// proxy → mpirun: rank `value`'s stdin took `N` more bytes (payload
    /// `N` in decimal), or `closed`: it takes no more (the rank closed its
    /// stdin or ended). mpirun keeps at most [`STDIN_WINDOW`] bytes
    /// unacknowledged.
    StdinAck = 13,
}

/// Bytes of stdin in flight to a remote rank (sent, not yet written into
/// its pipe by the proxy).
pub const STDIN_WINDOW: usize = 256 * 1024;

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        use Kind::*;
        Some(match b {
            1 => Hello,
            2 => Spawn,
            3 => Go,
            4 => Pmi,
            5 => PmiClosed,
            6 => Stdout,
            7 => Stderr,
            8 => Started,
            9 => Exited,
            10 => Failed,
            11 => Signal,
            12 => Stdin,
            13 => StdinAck,
            _ => return None,
        })
    }
}

/// One frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: Kind,
    pub value: u32,
    pub data: Vec<u8>,
}

/// A non-blocking framed connection.
pub struct Conn {
    pub sock: TcpStream,
    input: Vec<u8>,
    output: Vec<u8>,
}

impl Conn {
    /// Wraps a connected socket (made non-blocking, with TCP keep-alive so
    /// that a host that vanishes is noticed).
    pub fn new(sock: TcpStream) -> io::Result<Conn> {
        sock.set_nonblocking(true)?;
        let _ = sock.set_nodelay(true);
        keepalive(&sock);
        Ok(Conn { sock, input: Vec::new(), output: Vec::new() })
    }

    /// Queues a frame.
    pub fn send(&mut self, kind: Kind, value: u32, data: &[u8]) {
        self.output.push(kind as u8);
        self.output.extend_from_slice(&value.to_be_bytes());
        self.output.extend_from_slice(&(data.len() as u32).to_be_bytes());
        self.output.extend_from_slice(data);
    }

    /// Whether frames wait to be written.
    pub fn wants_write(&self) -> bool {
        !self.output.is_empty()
    }

    /// Bytes waiting to be written.
    pub fn backlog(&self) -> usize {
        self.output.len()
    }

    /// Writes what the socket takes now. Err when the connection broke.
    pub fn flush(&mut self) -> io::Result<()> {
        while !self.output.is_empty() {
            match sys::write_some(self.sock.as_raw_fd(), &self.output)? {
                0 => break,
                n => {
                    self.output.drain(..n);
                }
            }
        }
        Ok(())
    }

    /// Writes everything, waiting up to `limit` (at the end of a proxy).
    pub fn flush_all(&mut self, limit: std::time::Duration) -> io::Result<()> {
        let until = std::time::Instant::now() + limit;
        while self.wants_write() {
            self.flush()?;
            let now = std::time::Instant::now();
            if now >= until {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "peer does not read"));
            }
            if self.wants_write() {
                let mut pfd = [libc::pollfd { fd: self.sock.as_raw_fd(), events: libc::POLLOUT, revents: 0 }];
                sys::poll(&mut pfd, Some(until - now))?;
            }
        }
        Ok(())
    }

    /// Reads what is available; Ok(false) at end of stream.
    pub fn fill(&mut self) -> io::Result<bool> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            match (&self.sock).read(&mut buf) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.input.extend_from_slice(&buf[..n]);
                    if self.input.len() > MAX_FRAME + HEADER {
                        return Ok(true);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The next complete frame; Err on garbage.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        if self.input.len() < HEADER {
            return Ok(None);
        }
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        let kind = Kind::from_u8(self.input[0]).ok_or_else(|| bad("unknown frame kind"))?;
        let value = u32::from_be_bytes([self.input[1], self.input[2], self.input[3], self.input[4]]);
        let len = u32::from_be_bytes([self.input[5], self.input[6], self.input[7], self.input[8]]) as usize;
        if len > MAX_FRAME {
            return Err(bad("frame too long"));
        }
        if self.input.len() < HEADER + len {
            return Ok(None);
        }
        let data = self.input[HEADER..HEADER + len].to_vec();
        self.input.drain(..HEADER + len);
        Ok(Some(Frame { kind, value, data }))
    }
}

/// TCP keep-alive: first probe after 5 s idle, then every 2 s, 3 probes;
/// and data not acknowledged within 10 s breaks the connection too.
fn keepalive(sock: &TcpStream) {
    let fd = sock.as_raw_fd();
    for (level, opt, val) in [
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1),
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 5),
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 2),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3),
        (libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, 10_000),
    ] {
        let v: libc::c_int = val;
        // SAFETY: `fd` is an open socket; the option value is a c_int that
        // lives for the call, and its size is passed.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as u32,
            )
        };
    }
}

/// What a proxy needs to start one rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnSpec {
    pub program: Vec<u8>,
    pub argv: Vec<Vec<u8>>,
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    pub wdir: Option<Vec<u8>>,
    /// The rank's stdin is a pipe fed with [`Kind::Stdin`] frames (rank 0:
    /// mpirun's stdin); otherwise /dev/null.
    pub stdin: bool,
}

/// NUL-separated fields: program, wdir (empty: none), `stdin` or empty,
/// argc, argv..., K=V... (the strings come from the OS and cannot hold NUL).
pub fn encode_spawn(s: &SpawnSpec) -> Vec<u8> {
    let stdin: &[u8] = if s.stdin { b"stdin" } else { b"" };
    let mut fields: Vec<Vec<u8>> = vec![s.program.clone(), s.wdir.clone().unwrap_or_default(), stdin.to_vec()];
    fields.push(s.argv.len().to_string().into_bytes());
    fields.extend(s.argv.iter().cloned());
    for (k, v) in &s.env {
        let mut kv = k.clone();
        kv.push(b'=');
        kv.extend_from_slice(v);
        fields.push(kv);
    }
    fields.join(&0u8)
}

/// The inverse of [`encode_spawn`]; None on a malformed payload.
pub fn decode_spawn(data: &[u8]) -> Option<SpawnSpec> {
    let mut fields = data.split(|&b| b == 0);
    let program = fields.next()?.to_vec();
    let wdir = fields.next()?.to_vec();
    let stdin = match fields.next()? {
        b"stdin" => true,
        b"" => false,
        _ => return None,
    };
    let argc: usize = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
    let mut argv = Vec::with_capacity(argc.min(4096));
    for _ in 0..argc {
        argv.push(fields.next()?.to_vec());
    }
    let mut env = Vec::new();
    for f in fields.filter(|f| !f.is_empty()) {
        let eq = f.iter().position(|&b| b == b'=')?;
        env.push((f[..eq].to_vec(), f[eq + 1..].to_vec()));
    }
    Some(SpawnSpec { program, argv, env, wdir: (!wdir.is_empty()).then_some(wdir), stdin })
}

/// Host of every rank: the host list (one entry a slot, `a,b:2` is
/// `a,b,b`) is walked round and round; consecutive entries of one host form
/// its block of slots, replaced by `ppn` when given. No hosts: all local
/// (the empty name).
pub fn place(hosts: &[String], ppn: Option<usize>, size: usize) -> Vec<String> {
    let mut blocks: Vec<(String, usize)> = Vec::new();
    for h in hosts {
        match blocks.last_mut() {
            Some((last, n)) if last == h => *n += 1,
            _ => blocks.push((h.clone(), 1)),
        }
    }
    if let Some(p) = ppn {
        for b in &mut blocks {
            b.1 = p;
        }
    }
    if blocks.is_empty() {
        return vec![String::new(); size];
    }
    let mut out = Vec::with_capacity(size);
    'outer: loop {
        for (h, n) in &blocks {
            for _ in 0..*n {
                if out.len() == size {
                    break 'outer;
                }
                out.push(h.clone());
            }
        }
    }
    out
}

/// Compares a secret in time that does not depend on where it differs.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Quotes a word for a remote shell when it needs it.
pub fn shell_word(w: &str) -> String {
    if !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-,:=+@%".contains(&b)) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(s: &str) -> Vec<String> {
        s.split(',').filter(|h| !h.is_empty()).map(String::from).collect()
    }

    #[test]
    fn placement() {
        assert_eq!(place(&hosts("a,b"), None, 4), hosts("a,b,a,b"));
        assert_eq!(place(&hosts("a,a,b,b"), None, 4), hosts("a,a,b,b"));
        assert_eq!(place(&hosts("a,b"), Some(2), 5), hosts("a,a,b,b,a"));
        assert_eq!(place(&hosts("a,b,b"), None, 3), hosts("a,b,b"));
        assert_eq!(place(&[], None, 2), vec![String::new(); 2]);
    }

    #[test]
    fn spawn_round_trip() {
        let s = SpawnSpec {
            program: b"/bin/prog".to_vec(),
            argv: vec![b"prog".to_vec(), b"a b".to_vec(), Vec::new()],
            env: vec![(b"A".to_vec(), b"1=2".to_vec()), (b"B".to_vec(), Vec::new())],
            wdir: Some(b"/tmp".to_vec()),
            stdin: false,
        };
        assert_eq!(decode_spawn(&encode_spawn(&s)), Some(s.clone()));
        let s = SpawnSpec { stdin: true, wdir: None, ..s };
        assert_eq!(decode_spawn(&encode_spawn(&s)), Some(s));
        assert_eq!(decode_spawn(b"x"), None);
        assert_eq!(decode_spawn(b"x\0\0\0zz"), None);
        assert_eq!(decode_spawn(b"x\0\0what\x001"), None);
    }

    #[test]
    fn frames_and_quoting() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = Conn::new(TcpStream::connect(l.local_addr().unwrap()).unwrap()).unwrap();
        let mut b = Conn::new(l.accept().unwrap().0).unwrap();
        a.send(Kind::Pmi, 7, b"cmd=init\n");
        a.send(Kind::Go, 0, b"");
        a.flush_all(std::time::Duration::from_secs(5)).unwrap();
        let mut got = Vec::new();
        while got.len() < 2 {
            assert!(b.fill().unwrap());
            while let Some(f) = b.next_frame().unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got[0], Frame { kind: Kind::Pmi, value: 7, data: b"cmd=init\n".to_vec() });
        assert_eq!(got[1].kind, Kind::Go);
        assert!(same_secret(b"abc", b"abc") && !same_secret(b"abc", b"abd") && !same_secret(b"abc", b"ab"));
        assert_eq!(shell_word("/a/b-c"), "/a/b-c");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }
}
