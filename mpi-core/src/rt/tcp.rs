//! TCP transport between ranks on different hosts (shared memory stays the
//! path within a host).
//!
//! * Every rank of a multi-host job listens on an ephemeral port and
//!   publishes `addr1,addr2,...:port` (its non-loopback IPv4 addresses) in
//!   the PMI key-value space.
//! * Connections are made lazily, on the first record to a remote rank. A
//!   connection carries records in one direction only: rank A sends to B on
//!   the connection A opened, and receives from B on the one B opened. So the
//!   order of records between two ranks is the order of the sends, and no
//!   tie-breaking between simultaneous connects is needed. At most two
//!   sockets per pair of ranks that actually talk; no threads.
//! * Authentication: the accepting rank sends a 16-byte random nonce; the
//!   connecting rank answers with its rank and
//!   `HMAC-SHA256(job secret, "mpicore-auth" || nonce || rank)`. Records are
//!   accepted only after the answer checks out; a connection that fails is
//!   logged on stderr and dropped, and the job goes on.
//! * Framing: the 48-byte record header of the shared-memory rings, then its
//!   payload. Large messages are streamed as `DATA` records written straight
//!   from the user's buffer (`writev`), never copied whole.
//! * A connection that breaks while the job runs means a rank or host died:
//!   the rank reports which one and ends the job.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::shm::{MsgHdr, HDR};

const MAGIC: &[u8; 8] = b"mpicore1";
const AUTH_LEN: usize = 8 + 4 + 32;
/// Largest DATA record payload on a connection.
const CHUNK: usize = 256 << 10;

/// A frame that arrived: sender's world rank, header, payload.
pub type Frame = (usize, MsgHdr, Vec<u8>);

enum Item {
    Bytes { buf: Vec<u8>, off: usize },
    /// `len` bytes at `ptr` as DATA records; `hdr` is the template.
    Stream { hdr: MsgHdr, ptr: *const u8, len: usize, off: usize, in_frame: usize, sreq: u64 },
}

struct OutConn {
    sock: TcpStream,
    queue: VecDeque<Item>,
    /// The acceptor's nonce, read without blocking; records wait behind the
    /// answer, which goes out first once the nonce is in.
    nonce: [u8; 16],
    nonce_len: usize,
    authed: bool,
}

struct InConn {
    sock: TcpStream,
    addr: SocketAddr,
    /// World rank once authenticated.
    peer: Option<usize>,
    nonce: [u8; 16],
    since: Instant,
    rbuf: Vec<u8>,
    rlen: usize,
}

pub struct Tcp {
    me: usize,
    secret: Vec<u8>,
    listener: TcpListener,
    /// Listener addresses of every rank (`None` for ranks on our host).
    addrs: Vec<Option<String>>,
    hosts: Vec<String>,
    out: Vec<Option<OutConn>>,
    inc: Vec<InConn>,
    /// Set once this rank finalizes: peers closing is then expected.
    pub finalizing: bool,
    /// Streams fully written since the last `poll` (their send request ids).
    streamed: Vec<u64>,
}

// SAFETY: stream items point into user send buffers kept alive by pending
// requests; the transport is only used under the runtime lock.
unsafe impl Send for Tcp {}

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &[u8], nonce: &[u8; 16], rank: u32) -> [u8; 32] {
    let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(b"mpicore-auth");
    m.update(nonce);
    m.update(&rank.to_le_bytes());
    m.finalize().into_bytes().into()
}

/// Random bytes from the kernel.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    let mut got = 0;
    while got < N {
        // SAFETY: getrandom writes at most N - got bytes into our buffer.
        let r = unsafe { libc::getrandom(b[got..].as_mut_ptr() as *mut libc::c_void, N - got, 0) };
        if r <= 0 {
            // Fall back to something unpredictable enough to continue.
            let t = Instant::now().elapsed().as_nanos() as u64 ^ std::process::id() as u64;
            for (i, x) in b.iter_mut().enumerate().skip(got) {
                *x = (t >> (i % 8 * 8)) as u8 ^ i as u8;
            }
            break;
        }
        got += r as usize;
    }
    b
}

/// Non-loopback IPv4 addresses of this host (loopback if there are none).
fn local_addresses() -> Vec<String> {
    let mut out = Vec::new();
    // SAFETY: getifaddrs allocates a list we walk read-only and free below.
    unsafe {
        let mut ifa: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut ifa) == 0 {
            let mut p = ifa;
            while !p.is_null() {
                let a = (*p).ifa_addr;
                if !a.is_null() && (*a).sa_family as i32 == libc::AF_INET {
                    let sin = &*(a as *const libc::sockaddr_in);
                    let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                    if !ip.is_loopback() {
                        out.push(ip.to_string());
                    }
                }
                p = (*p).ifa_next;
            }
            libc::freeifaddrs(ifa);
        }
    }
    if out.is_empty() {
        out.push("127.0.0.1".into());
    }
    out
}

fn fatal(msg: String) -> ! {
    eprintln!("{msg}");
    super::abort(1, &msg)
}

impl Tcp {
    /// Opens the listener; returns it with the business card to publish.
    pub fn listen() -> std::io::Result<(TcpListener, String)> {
        let l = TcpListener::bind("0.0.0.0:0")?;
        l.set_nonblocking(true)?;
        let port = l.local_addr()?.port();
        Ok((l, format!("{}:{port}", local_addresses().join(","))))
    }

    pub fn new(me: usize, secret: Vec<u8>, listener: TcpListener, addrs: Vec<Option<String>>, hosts: Vec<String>) -> Tcp {
        let n = addrs.len();
        Tcp { me, secret, listener, addrs, hosts, out: (0..n).map(|_| None).collect(), inc: Vec::new(), finalizing: false, streamed: Vec::new() }
    }

    /// The sockets a sleeping rank waits on: the listener and incoming
    /// connections for reading, outgoing ones for their handshake or close
    /// (and for writing while they have queued data).
    pub fn poll_fds(&self, fds: &mut Vec<libc::pollfd>) {
        self.incoming_fds(fds);
        for c in self.out.iter().flatten() {
            let events = if c.queue.is_empty() { libc::POLLIN } else { libc::POLLIN | libc::POLLOUT };
            fds.push(libc::pollfd { fd: c.sock.as_raw_fd(), events, revents: 0 });
        }
    }

    /// The listener, then every incoming connection, for reading.
    fn incoming_fds(&self, fds: &mut Vec<libc::pollfd>) {
        fds.push(libc::pollfd { fd: self.listener.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        for c in &self.inc {
            fds.push(libc::pollfd { fd: c.sock.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        }
    }

    pub fn has_pending(&self) -> bool {
        self.out.iter().flatten().any(|c| !c.queue.is_empty())
    }

    fn connect(&mut self, to: usize) -> &mut OutConn {
        if self.out[to].is_none() {
            let card = self.addrs[to].clone().unwrap_or_default();
            let (ips, port) = card.rsplit_once(':').unwrap_or(("", ""));
            let mut last = String::from("no address published");
            let mut sock = None;
            for ip in ips.split(',').filter(|s| !s.is_empty()) {
                let addr: SocketAddr = match format!("{ip}:{port}").parse() {
                    Ok(a) => a,
                    Err(_) => continue,
                };
                match Self::dial(addr) {
                    Ok(s) => {
                        sock = Some(s);
                        break;
                    }
                    Err(e) => last = format!("{addr}: {e}"),
                }
            }
            let Some(sock) = sock else {
                fatal(format!(
                    "mpi-core: rank {} cannot connect to rank {to} on host {} ({last})",
                    self.me, self.hosts[to]
                ))
            };
            self.out[to] = Some(OutConn { sock, queue: VecDeque::new(), nonce: [0; 16], nonce_len: 0, authed: false });
        }
        self.out[to].as_mut().unwrap()
    }

    /// Connects (the kernel completes it from the listen backlog, so this
    /// never waits for the peer's program); authentication happens later,
    /// without blocking, in `flush`.
    fn dial(addr: SocketAddr) -> std::io::Result<TcpStream> {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
        Ok(s)
    }

    /// Reads the acceptor's nonce if it is there; once complete, puts the
    /// authentication answer in front of the queue. False while waiting.
    fn authenticate(me: usize, secret: &[u8], to: usize, c: &mut OutConn) -> bool {
        if c.authed {
            return true;
        }
        while c.nonce_len < 16 {
            match c.sock.read(&mut c.nonce[c.nonce_len..]) {
                Ok(0) => fatal(format!("mpi-core: rank {me}: rank {to} closed the connection during authentication")),
                Ok(n) => c.nonce_len += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => fatal(format!("mpi-core: rank {me}: authenticating to rank {to} failed: {e}")),
            }
        }
        let mut auth = Vec::with_capacity(AUTH_LEN);
        auth.extend_from_slice(MAGIC);
        auth.extend_from_slice(&(me as u32).to_le_bytes());
        auth.extend_from_slice(&mac(secret, &c.nonce, me as u32));
        c.queue.push_front(Item::Bytes { buf: auth, off: 0 });
        c.authed = true;
        true
    }

    /// Queues one record to world rank `to` and tries to write it.
    pub fn send(&mut self, to: usize, hdr: &MsgHdr, payload: &[u8]) {
        let mut h = *hdr;
        h.payload = payload.len() as u32;
        let mut buf = Vec::with_capacity(HDR + payload.len());
        // SAFETY: MsgHdr is plain old data.
        buf.extend_from_slice(unsafe { std::slice::from_raw_parts(&h as *const MsgHdr as *const u8, HDR) });
        buf.extend_from_slice(payload);
        let me = self.me;
        let secret = std::mem::take(&mut self.secret);
        let c = self.connect(to);
        c.queue.push_back(Item::Bytes { buf, off: 0 });
        if c.queue.len() == 1 {
            let done = Self::flush(me, &secret, to, c);
            self.streamed.extend(done);
        }
        self.secret = secret;
    }

    /// Streams `len` bytes at `ptr` to `to` as DATA records (answer to CTS);
    /// `sreq` is reported by `poll` once everything is written.
    pub fn stream(&mut self, to: usize, hdr: MsgHdr, ptr: *const u8, len: usize, sreq: u64) {
        let me = self.me;
        let secret = std::mem::take(&mut self.secret);
        let c = self.connect(to);
        c.queue.push_back(Item::Stream { hdr, ptr, len, off: 0, in_frame: 0, sreq });
        if c.queue.len() == 1 {
            let done = Self::flush(me, &secret, to, c);
            self.streamed.extend(done);
        }
        self.secret = secret;
    }

    /// Writes what the socket takes; returns finished stream ids.
    fn flush(me: usize, secret: &[u8], to: usize, c: &mut OutConn) -> Vec<u64> {
        let mut done = Vec::new();
        if !Self::authenticate(me, secret, to, c) {
            return done;
        }
        while let Some(item) = c.queue.front_mut() {
            let fd = c.sock.as_raw_fd();
            match item {
                Item::Bytes { buf, off } => match c.sock.write(&buf[*off..]) {
                    Ok(n) => {
                        *off += n;
                        if *off < buf.len() {
                            continue;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return done,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => fatal(format!("mpi-core: rank {me}: sending to rank {to} failed: {e} (did it die?)")),
                },
                Item::Stream { hdr, ptr, len, off, in_frame, sreq } => {
                    let n = (*len - *off).min(CHUNK);
                    let mut h = *hdr;
                    h.len = *off as u64;
                    h.payload = n as u32;
                    // SAFETY: the header is plain old data; the chunk is part of
                    // the send buffer kept alive by the send request.
                    let hb = unsafe { std::slice::from_raw_parts(&h as *const MsgHdr as *const u8, HDR) };
                    let data = unsafe { std::slice::from_raw_parts(ptr.add(*off), n) };
                    let frame = HDR + n;
                    let (a, b) = if *in_frame < HDR {
                        (&hb[*in_frame..], data)
                    } else {
                        (&data[*in_frame - HDR..], &[][..])
                    };
                    let iov = [
                        libc::iovec { iov_base: a.as_ptr() as *mut libc::c_void, iov_len: a.len() },
                        libc::iovec { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() },
                    ];
                    // SAFETY: both iovecs describe live slices.
                    let r = unsafe { libc::writev(fd, iov.as_ptr(), 2) };
                    if r < 0 {
                        let e = std::io::Error::last_os_error();
                        match e.kind() {
                            ErrorKind::WouldBlock => return done,
                            ErrorKind::Interrupted => continue,
                            _ => fatal(format!("mpi-core: rank {me}: sending to rank {to} failed: {e} (did it die?)")),
                        }
                    }
                    *in_frame += r as usize;
                    if *in_frame < frame {
                        continue;
                    }
                    *in_frame = 0;
                    *off += n;
                    if *off < *len {
                        continue;
                    }
                    done.push(*sreq);
                }
            }
            c.queue.pop_front();
        }
        done
    }

    /// Accepts, authenticates, reads and writes. Returns frames that arrived
    /// and send requests whose streams are fully written.
    pub fn poll(&mut self) -> (Vec<Frame>, Vec<u64>) {
        let mut frames = Vec::new();
        let mut done = std::mem::take(&mut self.streamed);
        for (to, c) in self.out.iter_mut().enumerate() {
            if let Some(c) = c {
                if !c.queue.is_empty() {
                    done.extend(Self::flush(self.me, &self.secret, to, c));
                }
            }
        }
        // One poll for the listener and every incoming connection: only
        // what is ready is accepted or read (a failing accept still costs
        // the kernel a socket, a failing read a system call).
        let mut fds = Vec::with_capacity(1 + self.inc.len());
        self.incoming_fds(&mut fds);
        // SAFETY: poll of valid pollfds we own, without waiting.
        let n_ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        let mut ready: Vec<bool> = fds[1..].iter().map(|f| f.revents != 0 || n_ready < 0).collect();
        if fds[0].revents != 0 || n_ready < 0 {
            loop {
                match self.listener.accept() {
                    Ok((s, addr)) => {
                        let nonce: [u8; 16] = random_bytes();
                        let ok = s.set_nodelay(true).is_ok()
                            && s.set_write_timeout(Some(Duration::from_secs(2))).is_ok()
                            && (&s).write_all(&nonce).is_ok()
                            && s.set_nonblocking(true).is_ok();
                        if ok {
                            self.inc.push(InConn { sock: s, addr, peer: None, nonce, since: Instant::now(), rbuf: vec![0; 64 << 10], rlen: 0 });
                            ready.push(true);
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => break,
                }
            }
        }
        let mut k = 0;
        while k < self.inc.len() {
            // Connections still authenticating are looked at every time
            // (their deadline); the others when poll says so.
            if !ready[k] && self.inc[k].peer.is_some() {
                k += 1;
                continue;
            }
            match self.read_conn(k, &mut frames) {
                Ok(()) => k += 1,
                Err(why) => {
                    ready.swap_remove(k);
                    let c = self.inc.swap_remove(k);
                    match (c.peer, self.finalizing) {
                        (None, _) => eprintln!(
                            "mpi-core: rank {}: rejected a connection from {}: {why}",
                            self.me, c.addr
                        ),
                        (Some(_), true) => {}
                        (Some(p), false) => fatal(format!(
                            "mpi-core: rank {}: lost the connection from rank {p} on host {} ({why}); ending the job",
                            self.me, self.hosts[p]
                        )),
                    }
                }
            }
        }
        (frames, done)
    }

    /// Reads from incoming connection `k`; Err(reason) closes it.
    fn read_conn(&mut self, k: usize, frames: &mut Vec<Frame>) -> Result<(), String> {
        let n_ranks = self.addrs.len();
        let secret = &self.secret;
        let c = &mut self.inc[k];
        loop {
            if c.rlen == c.rbuf.len() {
                let grow = c.rbuf.len();
                c.rbuf.resize(grow * 2, 0);
            }
            match c.sock.read(&mut c.rbuf[c.rlen..]) {
                Ok(0) => return Err("connection closed".into()),
                Ok(n) => {
                    c.rlen += n;
                    // A short read took what there was (the next poll
                    // reports more): no second read just to see EAGAIN.
                    if c.rlen < c.rbuf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.to_string()),
            }
            if c.rlen < c.rbuf.len() {
                break;
            }
        }
        let mut pos = 0;
        if c.peer.is_none() {
            if c.rlen < AUTH_LEN {
                if c.since.elapsed() > Duration::from_secs(10) {
                    return Err("no authentication within 10 s".into());
                }
                return Ok(());
            }
            let rank = u32::from_le_bytes(c.rbuf[8..12].try_into().unwrap());
            let good = &c.rbuf[..8] == MAGIC
                && (rank as usize) < n_ranks
                && c.rbuf[12..AUTH_LEN] == mac(secret, &c.nonce, rank);
            if !good {
                return Err("failed authentication (wrong job secret)".into());
            }
            c.peer = Some(rank as usize);
            pos = AUTH_LEN;
        }
        let from = c.peer.unwrap();
        while c.rlen - pos >= HDR {
            let mut h = MsgHdr::default();
            // SAFETY: HDR bytes are available at pos; MsgHdr is plain old data.
            unsafe { std::ptr::copy_nonoverlapping(c.rbuf[pos..].as_ptr(), &mut h as *mut MsgHdr as *mut u8, HDR) };
            let n = h.payload as usize;
            if n > CHUNK {
                return Err(format!("corrupt record from rank {from} (payload {n})"));
            }
            if c.rlen - pos < HDR + n {
                if c.rbuf.len() < HDR + n {
                    c.rbuf.resize((HDR + n).next_power_of_two(), 0);
                }
                break;
            }
            frames.push((from, h, c.rbuf[pos + HDR..pos + HDR + n].to_vec()));
            pos += HDR + n;
        }
        c.rbuf.copy_within(pos..c.rlen, 0);
        c.rlen -= pos;
        Ok(())
    }
}
