//! TCP transport between ranks on different hosts (shared memory stays the
//! path within a host).
//!
//! * Every rank of a multi-host job listens on an ephemeral port and
//!   publishes `addr1,addr2,...:port` (its non-loopback IPv4 addresses) in
//!   the PMI key-value space.
//! * Connections are made lazily, on the first record to a remote rank.
//!   Rank A's records to B all travel on one connection, so their order is
//!   the order of the sends: the one A opened to B, or — when B connected
//!   first and A had sent nothing to B yet — the one B opened (A answers on
//!   it). So a pair that talks both ways usually shares one connection,
//!   and the records one way carry the TCP acknowledgements of the other
//!   (with a connection per direction, every record cost the receiver an
//!   extra acknowledgement packet). After simultaneous connects (the first
//!   collective of a job) the higher rank moves its records to the lower
//!   rank's connection and closes its own: its last record there
//!   (`SWITCH_OLD`) and its first on the other (`SWITCH_NEW`) say so, and
//!   the lower rank reads the other connection only after the last record of
//!   the closed one, so order is kept. At most two sockets per pair of ranks
//!   that actually talk, usually one; no threads.
//! * Authentication: the accepting rank sends a 16-byte random nonce; the
//!   connecting rank answers with its rank and
//!   `HMAC-SHA256(job secret, "mpicore-auth" || nonce || rank)`. Records are
//!   accepted only after the answer checks out; a connection that fails is
//!   logged on stderr and dropped, and the job goes on.
//! * Strangers cost little: the listener binds every address, so anyone who
//!   reaches the port can connect. Until it authenticates, a connection may
//!   put at most `AUTH_LEN_FOREIGN` bytes in this process (the rest waits
//!   in the kernel), has 10 s to complete its answer once it started it,
//!   and at most `max(64, world size)` such connections stay longer than
//!   2 s (the oldest go first; four times as many in those 2 s, when new
//!   ones are refused, as a burst of strangers must not push out a rank
//!   that is about to answer). A silent connection is kept longer (10 min,
//!   or until the cap needs its place): a rank that dialed us and then
//!   computes without calling MPI answers our nonce only later.
//! * Every socket the transport reads is in one epoll set: a progress round
//!   costs one system call however many connections there are, and reads
//!   only the ones with data.
//! * Framing: the 48-byte record header of the shared-memory rings, then its
//!   payload. Large messages are streamed as `DATA` records written straight
//!   from the user's buffer (`writev`), never copied whole.
//! * A connection that breaks while the job runs means a rank or host died:
//!   the rank reports which one and ends the job.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::shm::{MsgHdr, HDR};
use super::transport::{Incoming, Transport};

const MAGIC: &[u8; 8] = b"mpicore1";
const AUTH_LEN: usize = 8 + 4 + 32;
/// Authentication of a process of another job: its process id (8 bytes)
/// instead of a rank, and the secret of the pair of groups it came with.
const MAGIC_FOREIGN: &[u8; 8] = b"mpicoreF";
const AUTH_LEN_FOREIGN: usize = 8 + 8 + 32;
/// How long a connection that started its authentication answer may take
/// to complete it (a real peer writes it in one piece).
const AUTH_PARTIAL_BUDGET: Duration = Duration::from_secs(10);
/// How long a connection that sent nothing is kept unauthenticated.
const AUTH_SILENT_BUDGET: Duration = Duration::from_secs(600);
/// The fewest unauthenticated connections kept at once (at least the
/// world size: every peer may dial us at the same time).
const MIN_UNAUTHED: usize = 64;
/// How long a new connection is safe from the cap: a real peer answers
/// within its next progress round.
const AUTH_GRACE: Duration = Duration::from_secs(2);
/// The epoll token of the listener (connections use their descriptor).
const LISTENER: u64 = u64::MAX;
/// Size of the read buffer of an authenticated connection.
const RBUF: usize = 64 << 10;
/// Largest DATA record payload on a connection.
const CHUNK: usize = 256 << 10;
/// Records of the transport itself (never handed to the engine, whose
/// kinds are small numbers): the last record on a connection its sender
/// gives up, and the first on the one it uses instead.
const SWITCH_OLD: u8 = 0xf0;
const SWITCH_NEW: u8 = 0xf1;
/// Per peer: its `SWITCH_OLD` was read / its `SWITCH_NEW` was read first
/// (the new connection is held until the old one is done).
const OLD_DONE: u8 = 1;
const NEW_HELD: u8 = 2;

/// What one look at the sockets found: frames in arrival order (sender's
/// world rank, header, offset of the payload in one shared buffer) and the
/// send requests whose streams are fully written. Kept by the transport and
/// reused from round to round, so a progress round allocates nothing.
#[derive(Default)]
pub struct Arrivals {
    frames: Vec<(usize, MsgHdr, usize)>,
    data: Vec<u8>,
    /// Send requests whose streams are fully written.
    pub streamed: Vec<u64>,
}

impl Arrivals {
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Frame `i`: sender's world rank, header, payload.
    pub fn get(&self, i: usize) -> (usize, &MsgHdr, &[u8]) {
        let (from, h, off) = &self.frames[i];
        (*from, h, &self.data[*off..*off + h.payload as usize])
    }

    fn push(&mut self, from: usize, h: MsgHdr, payload: &[u8]) {
        self.frames.push((from, h, self.data.len()));
        self.data.extend_from_slice(payload);
    }

    /// Forgets the frames and stream completions (keeps the memory).
    pub fn clear(&mut self) {
        self.frames.clear();
        self.data.clear();
        self.streamed.clear();
    }
}

enum Item {
    Bytes {
        buf: Vec<u8>,
        off: usize,
    },
    /// `len` bytes at `ptr` as DATA records; `hdr` is the template.
    Stream {
        hdr: MsgHdr,
        ptr: *const u8,
        len: usize,
        off: usize,
        in_frame: usize,
        sreq: u64,
    },
}

/// A connection to a rank on another host, dialed or accepted; records may
/// flow both ways once it is authenticated.
struct Conn {
    sock: TcpStream,
    addr: SocketAddr,
    /// The rank at the other end: the one we dialed, or (accepted) the one
    /// that authenticated.
    peer: Option<usize>,
    dialed: bool,
    /// Dialed: the acceptor's nonce is in and our answer queued first.
    /// Accepted: the dialer's answer checked out.
    authed: bool,
    /// Dialed: the acceptor's nonce, `nonce_len` bytes read so far (read
    /// without blocking). Accepted: the nonce we sent.
    nonce: [u8; 16],
    nonce_len: usize,
    /// When it was accepted or dialed.
    since: Instant,
    /// Accepted, unauthenticated: its complete answer is in but names a
    /// process of another job we are not introduced to yet; not watched
    /// for input (more would not be read) but looked at every round.
    parked: bool,
    /// Records waiting to be written.
    queue: VecDeque<Item>,
    /// Bytes read and not yet taken as frames.
    rbuf: Vec<u8>,
    rlen: usize,
    /// Not read until the peer's old connection has delivered its last
    /// record (`SWITCH_NEW` came first).
    held: bool,
}

impl Conn {
    fn new(sock: TcpStream, addr: SocketAddr, peer: Option<usize>, nonce: [u8; 16]) -> Conn {
        let dialed = peer.is_some();
        Conn {
            sock,
            addr,
            peer,
            dialed,
            authed: false,
            nonce,
            nonce_len: if dialed { 0 } else { 16 },
            since: Instant::now(),
            parked: false,
            queue: VecDeque::new(),
            // A stranger gets no more than its answer's worth of memory.
            rbuf: vec![0; if dialed { RBUF } else { AUTH_LEN_FOREIGN }],
            rlen: 0,
            held: false,
        }
    }
}

/// A transport record of kind `k` without payload.
fn marker(k: u8) -> Item {
    let h = MsgHdr { kind: k, ..Default::default() };
    // SAFETY: MsgHdr is plain old data.
    let b = unsafe { std::slice::from_raw_parts(&h as *const MsgHdr as *const u8, HDR) };
    Item::Bytes { buf: b.to_vec(), off: 0 }
}

/// The eager limit toward other hosts: `MPICORE_TCP_EAGER_LIMIT`, 64 KiB by
/// default, at most a record's largest payload.
pub fn configured_eager_limit() -> usize {
    std::env::var("MPICORE_TCP_EAGER_LIMIT").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(64 << 10).min(CHUNK)
}

/// A process of another job (peer index `world + k` for the k-th).
struct Foreign {
    /// Its process id (`Tcp::uid` over there).
    uid: u64,
    /// The secret its connections with us authenticate with.
    secret: Vec<u8>,
}

/// The secrets connections authenticate with: the job's for its ranks,
/// a per-peer one for processes of other jobs.
struct Keys {
    job: Vec<u8>,
    world: usize,
    foreign: Vec<Foreign>,
}

impl Keys {
    /// The secret for peer `p` and the identity bytes it authenticates as.
    fn of(&self, p: usize) -> (&[u8], Vec<u8>) {
        match p.checked_sub(self.world) {
            None => (&self.job, (p as u32).to_le_bytes().to_vec()),
            Some(k) => (&self.foreign[k].secret, self.foreign[k].uid.to_le_bytes().to_vec()),
        }
    }
}

pub struct Tcp {
    me: usize,
    /// This process's id among processes of all jobs (random).
    pub uid: u64,
    keys: Keys,
    listener: TcpListener,
    /// Listener addresses of every rank (`None` for ranks on our host).
    addrs: Vec<Option<String>>,
    hosts: Vec<String>,
    /// By rank: the connection our records to it travel on.
    out: Vec<Option<Conn>>,
    /// Accepted connections that carry no records of ours.
    inc: Vec<Conn>,
    /// Connections given up by a switch, until their queue is written.
    retiring: Vec<Conn>,
    /// Per peer: `OLD_DONE`, `NEW_HELD` or 0 (see `SWITCH_OLD`).
    switch: Vec<u8>,
    /// Set once this rank finalizes: peers closing is then expected.
    pub finalizing: bool,
    /// Peers whose connection was lost or could not be made while failures
    /// are tolerated (`rt::ulfm`), not yet marked failed by the runtime;
    /// and every peer given up so (nothing more is written to them).
    pub lost_peers: Vec<usize>,
    gone: Vec<usize>,
    /// Largest message sent eagerly to a rank on another host:
    /// `MPICORE_TCP_EAGER_LIMIT`, 64 KiB by default (at most a record's
    /// largest payload). Larger than in shared memory: the socket buffers
    /// the data anyway, and a rendezvous costs a round trip between hosts.
    pub eager_limit: usize,
    /// Streams fully written since the last `poll` (their send request ids).
    streamed: Vec<u64>,
    /// Buffers reused by every `poll`; between two polls, the frames the
    /// engine reads one by one ([`Transport::next_incoming`]).
    arrivals: Arrivals,
    /// The next frame of `arrivals` to hand to the engine.
    inbox_next: usize,
    /// The listener and every connection, watched for input.
    poller: Poller,
    /// Tokens of the last `Poller::ready` (reused).
    ready: Vec<u64>,
    /// When the unauthenticated connections' budgets are checked next.
    next_sweep: Instant,
    /// Some connections are parked (see `Conn::parked`).
    any_parked: bool,
    rejects: Rejects,
    /// The test hook's fault still to make (see [`Fault`]).
    fault: Option<Fault>,
}

/// Sockets watched for input in one epoll set, level-triggered: a socket
/// with unread data is reported every time. Closing a socket removes it.
struct Poller {
    ep: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Poller {
    fn new() -> std::io::Result<Poller> {
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        let ep = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Poller { ep, events: vec![libc::epoll_event { events: 0, u64: 0 }; 64] })
    }

    /// Watches `fd` for input (`on`) or stops (`!on`, the socket stays
    /// registered), reported as `token`.
    fn watch(&self, op: libc::c_int, fd: RawFd, token: u64, on: bool) -> std::io::Result<()> {
        let mut ev = libc::epoll_event { events: if on { libc::EPOLLIN as u32 } else { 0 }, u64: token };
        // SAFETY: `ev` is a valid event; `fd` is a descriptor we own.
        if unsafe { libc::epoll_ctl(self.ep.as_raw_fd(), op, fd, &mut ev) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    fn add(&self, fd: RawFd, token: u64) -> std::io::Result<()> {
        self.watch(libc::EPOLL_CTL_ADD, fd, token, true)
    }

    fn set(&self, fd: RawFd, on: bool) {
        let _ = self.watch(libc::EPOLL_CTL_MOD, fd, fd as u64, on);
    }

    fn remove(&self, fd: RawFd) {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as in `watch`; a descriptor not in the set only fails.
        unsafe { libc::epoll_ctl(self.ep.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
    }

    /// The tokens of the sockets with input now (without waiting) into
    /// `out`; all of them if the set cannot be read.
    fn ready(&mut self, out: &mut Vec<u64>) -> bool {
        out.clear();
        // SAFETY: `events` has room for `len` entries.
        let n = unsafe {
            libc::epoll_wait(self.ep.as_raw_fd(), self.events.as_mut_ptr(), self.events.len() as libc::c_int, 0)
        };
        if n < 0 {
            return false;
        }
        out.extend(self.events[..n as usize].iter().map(|e| e.u64));
        if n as usize == self.events.len() {
            // Busy round: room for more next time (the rest is reported
            // again then, level-triggered).
            let more = self.events.len() * 2;
            self.events.resize(more, libc::epoll_event { events: 0, u64: 0 });
        }
        true
    }
}

/// Rejected connections, logged one line each, 8 at once at most and
/// then one per second (a token bucket): a flood of strangers must not
/// flood the log, and the lines skipped are counted in the next one.
struct Rejects {
    tokens: f64,
    last: Instant,
    quiet: u64,
}

impl Default for Rejects {
    fn default() -> Rejects {
        Rejects { tokens: 8.0, last: Instant::now(), quiet: 0 }
    }
}

impl Rejects {
    fn note(&mut self, me: usize, addr: &SocketAddr, why: &str) {
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.last).as_secs_f64()).min(8.0);
        self.last = now;
        if self.tokens < 1.0 {
            self.quiet += 1;
            return;
        }
        self.tokens -= 1.0;
        let more = match std::mem::take(&mut self.quiet) {
            0 => String::new(),
            n => format!(" ({n} more rejected, not reported one by one)"),
        };
        eprintln!("mpi-core: rank {me}: rejected a connection from {addr}: {why}{more}");
    }
}

// SAFETY: stream items point into user send buffers kept alive by pending
// requests; the transport is only used under the runtime lock.
unsafe impl Send for Tcp {}

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &[u8], nonce: &[u8; 16], id: &[u8]) -> [u8; 32] {
    hmac_parts(secret, &[b"mpicore-auth", nonce, id])
}

/// HMAC-SHA256 of the concatenation of `parts` under `key`.
pub fn hmac_parts(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    for p in parts {
        m.update(p);
    }
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

/// The host of every world rank, for the messages of [`fatal_link`], which
/// the functions of a single connection (that do not see the [`Tcp`]) also
/// report. Set once, by the first transport made.
static HOSTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

fn host_of(rank: usize) -> &'static str {
    HOSTS.get().and_then(|h| h.get(rank)).map_or("(a host of another job)", String::as_str)
}

/// Ends the job because the link between this rank (`me`) and `peer`
/// failed: `what` happened to it (`why`). The message names both ranks
/// and their hosts, as the program's user needs both to find the cause.
fn fatal_link(me: usize, peer: usize, what: &str, why: &dyn std::fmt::Display) -> ! {
    fatal(format!(
        "mpi-core: rank {me} on host {}: {what} rank {peer} on host {} ({why}); ending the job",
        host_of(me),
        host_of(peer)
    ))
}

/// A fault this rank makes in its own traffic, for the tests of a job that
/// loses a connection: `MPICORE_TEST_TCP_FAULT=<rank>:<frames>:<cut|corrupt>`
/// makes world rank `rank`, after it has read `frames` records from other
/// hosts, shut down the connection the next one arrives on (`cut`: both
/// ends see it end, as after a reset) or read that record's length as
/// 0xffffffff (`corrupt`). A test hook, always compiled in, read once.
#[derive(Clone, Copy)]
struct Fault {
    /// Records still to read before the fault.
    left: u64,
    corrupt: bool,
}

impl Fault {
    fn from_env(me: usize) -> Option<Fault> {
        let v = std::env::var("MPICORE_TEST_TCP_FAULT").ok()?;
        let mut it = v.split(':');
        let rank: usize = it.next()?.trim().parse().ok()?;
        let left: u64 = it.next()?.trim().parse().ok()?;
        let corrupt = match it.next().map(str::trim) {
            Some("corrupt") => true,
            Some("cut") | None => false,
            Some(_) => return None,
        };
        (rank == me).then_some(Fault { left, corrupt })
    }
}

impl Tcp {
    /// Opens the listener; returns it with the business card to publish.
    pub fn listen() -> std::io::Result<(TcpListener, String)> {
        let l = TcpListener::bind("0.0.0.0:0")?;
        l.set_nonblocking(true)?;
        let port = l.local_addr()?.port();
        Ok((l, format!("{}:{port}", local_addresses().join(","))))
    }

    pub fn new(
        me: usize,
        secret: Vec<u8>,
        listener: TcpListener,
        addrs: Vec<Option<String>>,
        hosts: Vec<String>,
    ) -> std::io::Result<Tcp> {
        let n = addrs.len();
        let _ = HOSTS.set(hosts.clone());
        let poller = Poller::new()?;
        poller.add(listener.as_raw_fd(), LISTENER)?;
        Ok(Tcp {
            fault: Fault::from_env(me),
            me,
            uid: u64::from_le_bytes(random_bytes()),
            keys: Keys { job: secret, world: n, foreign: Vec::new() },
            listener,
            addrs,
            hosts,
            out: (0..n).map(|_| None).collect(),
            inc: Vec::new(),
            retiring: Vec::new(),
            switch: vec![0; n],
            finalizing: false,
            lost_peers: Vec::new(),
            gone: Vec::new(),
            eager_limit: configured_eager_limit(),
            streamed: Vec::new(),
            arrivals: Arrivals::default(),
            inbox_next: 0,
            poller,
            ready: Vec::new(),
            next_sweep: Instant::now(),
            any_parked: false,
            rejects: Rejects::default(),
        })
    }

    /// The business card of this process's listener.
    pub fn card(&self) -> String {
        let port = self.listener.local_addr().map(|a| a.port()).unwrap_or(0);
        format!("{}:{port}", local_addresses().join(","))
    }

    /// The peer index of the process `uid` of another job, listening at
    /// `card`: the one it has if known, else a new one whose connections
    /// authenticate with `secret`.
    pub fn foreign_peer(&mut self, uid: u64, card: &str, secret: &[u8]) -> usize {
        let k = self.keys.foreign.iter().position(|f| f.uid == uid).unwrap_or_else(|| {
            self.keys.foreign.push(Foreign { uid, secret: secret.to_vec() });
            self.addrs.push(Some(card.to_string()));
            self.hosts.push(format!("another job ({card})"));
            self.out.push(None);
            self.switch.push(0);
            self.keys.foreign.len() - 1
        });
        self.keys.world + k
    }

    /// Whether peer `p` breaks a tie of simultaneous connects our way (its
    /// connection is kept): a lower rank, or for processes of another
    /// job, a lower process id (peer indices differ between jobs).
    fn lower(&self, p: usize) -> bool {
        match p.checked_sub(self.keys.world) {
            None => p < self.me,
            Some(k) => self.keys.foreign[k].uid < self.uid,
        }
    }

    pub fn has_pending(&self) -> bool {
        self.out.iter().flatten().chain(&self.retiring).any(|c| !c.queue.is_empty())
    }

    /// Makes the connection our records to `to` travel on, if there is none
    /// yet: the one `to` opened to us if it has (and has authenticated),
    /// else a new one.
    fn connect(&mut self, to: usize) {
        if self.out[to].is_none() {
            if let Some(k) = self.inc.iter().position(|c| c.authed && c.peer == Some(to)) {
                self.out[to] = Some(self.inc.swap_remove(k));
                return;
            }
            let card = self.addrs[to].clone().unwrap_or_default();
            let (ips, port) = card.rsplit_once(':').unwrap_or(("", ""));
            let mut last = String::from("no address published");
            let mut sock = None;
            let mut addr = None;
            for ip in ips.split(',').filter(|s| !s.is_empty()) {
                let a: SocketAddr = match format!("{ip}:{port}").parse() {
                    Ok(a) => a,
                    Err(_) => continue,
                };
                match Self::dial(a) {
                    Ok(s) => {
                        sock = Some(s);
                        addr = Some(a);
                        break;
                    }
                    Err(e) => last = format!("{a}: {e}"),
                }
            }
            let sock = sock.filter(|s| {
                let fd = s.as_raw_fd();
                self.poller.add(fd, fd as u64).map_err(|e| last = format!("cannot watch the socket: {e}")).is_ok()
            });
            let (Some(sock), Some(addr)) = (sock, addr) else {
                if super::ulfm::enabled() {
                    self.give_up(to);
                    return;
                }
                fatal(format!(
                    "mpi-core: rank {} on host {} cannot connect to rank {to} on host {} ({last}); ending the job",
                    self.me,
                    host_of(self.me),
                    self.hosts[to]
                ))
            };
            self.out[to] = Some(Conn::new(sock, addr, Some(to), [0; 16]));
        }
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
    fn authenticate(me: usize, keys: &Keys, uid: u64, to: usize, c: &mut Conn) -> bool {
        if c.authed {
            return true;
        }
        while c.nonce_len < 16 {
            match c.sock.read(&mut c.nonce[c.nonce_len..]) {
                Ok(0) => fatal_link(me, to, "authentication failed with", &"connection closed"),
                Ok(n) => c.nonce_len += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => fatal_link(me, to, "authentication failed with", &e),
            }
        }
        let mut auth = Vec::with_capacity(AUTH_LEN_FOREIGN);
        let (secret, _) = keys.of(to);
        let id = if to < keys.world { (me as u32).to_le_bytes().to_vec() } else { uid.to_le_bytes().to_vec() };
        auth.extend_from_slice(if to < keys.world { MAGIC } else { MAGIC_FOREIGN });
        auth.extend_from_slice(&id);
        auth.extend_from_slice(&mac(secret, &c.nonce, &id));
        c.queue.push_front(Item::Bytes { buf: auth, off: 0 });
        c.authed = true;
        true
    }

    /// Sends one record to world rank `to`. On an idle, authenticated
    /// connection header and payload leave in one system call straight from
    /// the caller's buffer; what the socket does not take (or everything,
    /// behind queued records or the handshake) is queued and written later.
    pub fn write_record(&mut self, to: usize, hdr: &MsgHdr, payload: &[u8]) {
        if self.gone.contains(&to) {
            return;
        }
        let mut h = *hdr;
        h.payload = payload.len() as u32;
        // SAFETY: MsgHdr is plain old data.
        let hb = unsafe { std::slice::from_raw_parts(&h as *const MsgHdr as *const u8, HDR) };
        let mut off = 0;
        if let Some(c) = self.out[to].as_mut().filter(|c| c.authed && c.queue.is_empty()) {
            off = match send2(c.sock.as_raw_fd(), hb, payload) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => 0,
                Err(e) => send_failed(self.me, to, e),
            };
            if off == HDR + payload.len() {
                return;
            }
        }
        let mut buf = Vec::with_capacity(HDR + payload.len());
        buf.extend_from_slice(hb);
        buf.extend_from_slice(payload);
        self.enqueue(to, Item::Bytes { buf, off });
    }

    /// Queues `item` on the connection to `to` and writes what the socket
    /// takes if nothing was queued before it.
    fn enqueue(&mut self, to: usize, item: Item) {
        self.connect(to);
        // (None: given up, failures being tolerated.)
        let Some(c) = self.out[to].as_mut() else { return };
        c.queue.push_back(item);
        if c.queue.len() == 1 {
            Self::flush(self.me, &self.keys, self.uid, to, c, &mut self.streamed);
        }
    }

    /// Writes what the socket takes; the send requests of streams fully
    /// written go to `done`.
    fn flush(me: usize, keys: &Keys, uid: u64, to: usize, c: &mut Conn, done: &mut Vec<u64>) {
        if !Self::authenticate(me, keys, uid, to, c) {
            return;
        }
        let fd = c.sock.as_raw_fd();
        while let Some(item) = c.queue.front_mut() {
            match item {
                Item::Bytes { buf, off } => match send2(fd, &buf[*off..], &[]) {
                    Ok(n) => {
                        *off += n;
                        if *off < buf.len() {
                            continue;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                    Err(e) => send_failed(me, to, e),
                },
                Item::Stream { hdr, ptr, len, off, in_frame, sreq } => {
                    let n = (*len - *off).min(CHUNK);
                    let mut h = *hdr;
                    h.len = *off as u64;
                    h.payload = n as u32;
                    // SAFETY: the header is plain old data; the chunk is part of
                    // the send buffer kept alive by the send request.
                    let hb = unsafe { std::slice::from_raw_parts(&h as *const MsgHdr as *const u8, HDR) };
                    // SAFETY: `off + n <= len`, the send buffer's length, and
                    // the send request keeps the buffer alive.
                    let data = unsafe { std::slice::from_raw_parts(ptr.add(*off), n) };
                    let frame = HDR + n;
                    let (a, b) =
                        if *in_frame < HDR { (&hb[*in_frame..], data) } else { (&data[*in_frame - HDR..], &[][..]) };
                    match send2(fd, a, b) {
                        Ok(r) => *in_frame += r,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                        Err(e) => send_failed(me, to, e),
                    }
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
    }

    /// The buffers [`Tcp::poll`] and [`Tcp::read_from`] fill, lent out
    /// (give them back with [`Tcp::recycle`]).
    pub fn take_arrivals(&mut self) -> Arrivals {
        // (The frames of the last poll were all handed to the engine: it
        // reads until `next_incoming` says there are no more.)
        debug_assert!(self.inbox_next >= self.arrivals.len());
        let mut a = std::mem::take(&mut self.arrivals);
        a.clear();
        self.inbox_next = 0;
        a
    }

    /// Takes back buffers lent by [`Tcp::take_arrivals`], emptied.
    pub fn recycle(&mut self, mut a: Arrivals) {
        a.clear();
        self.arrivals = a;
    }

    /// Accepts, authenticates, reads and writes. Frames that arrived and
    /// send requests whose streams are fully written go to `a`.
    pub fn poll(&mut self, a: &mut Arrivals) {
        a.streamed.append(&mut self.streamed);
        for (to, c) in self.out.iter_mut().enumerate() {
            if let Some(c) = c {
                if !c.queue.is_empty() {
                    Self::flush(self.me, &self.keys, self.uid, to, c, &mut a.streamed);
                }
            }
        }
        for c in &mut self.retiring {
            Self::flush(self.me, &self.keys, self.uid, c.peer.expect("dialed"), c, &mut a.streamed);
        }
        // (Closed once written: the peer reads to the last record.)
        self.retiring.retain(|c| !c.queue.is_empty());
        // One look at the epoll set: only what has input is accepted or
        // read (a failing accept still costs the kernel a socket, a failing
        // read a system call).
        let mut ready = std::mem::take(&mut self.ready);
        if !self.poller.ready(&mut ready) {
            // (It does not fail with valid arguments: then read everything.)
            ready.push(LISTENER);
            ready.extend(self.inc.iter().chain(self.out.iter().flatten()).map(|c| c.sock.as_raw_fd() as u64));
        }
        for &t in &ready {
            if t == LISTENER {
                self.accept_all();
            } else {
                self.read_fd(t as RawFd, a);
            }
        }
        self.ready = ready;
        if self.any_parked || (!self.inc.is_empty() && Instant::now() >= self.next_sweep) {
            self.sweep(a);
        }
    }

    /// Accepts every connection waiting: each gets its nonce and is
    /// watched; the oldest unauthenticated one goes if there are too many.
    fn accept_all(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((s, addr)) => {
                    let nonce: [u8; 16] = random_bytes();
                    // (A new socket's send buffer takes the 16 bytes whole.)
                    let fd = s.as_raw_fd();
                    let ok = s.set_nodelay(true).is_ok()
                        && s.set_nonblocking(true).is_ok()
                        && (&s).write(&nonce).is_ok_and(|n| n == nonce.len())
                        && self.poller.add(fd, fd as u64).is_ok();
                    if ok && self.make_room() {
                        self.inc.push(Conn::new(s, addr, None, nonce));
                    } else if ok {
                        self.rejects.note(self.me, &addr, "too many new connections waiting to authenticate");
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // (Out of descriptors included: the listener stays ready
                // and is tried again next round.)
                Err(_) => break,
            }
        }
    }

    /// The cap on unauthenticated connections kept past `AUTH_GRACE`.
    fn unauthed_cap(&self) -> usize {
        MIN_UNAUTHED.max(self.keys.world)
    }

    /// Makes room for one more unauthenticated connection: false if there
    /// are four times the cap and none is past its grace period (then the
    /// new one is refused), else true, after dropping the oldest if needed.
    fn make_room(&mut self) -> bool {
        let hard = 4 * self.unauthed_cap();
        let waiting = self.inc.iter().filter(|c| !c.authed);
        if waiting.clone().count() < hard {
            return true;
        }
        let oldest = waiting.map(|c| c.since).min().expect("waiting connections");
        if oldest.elapsed() < AUTH_GRACE {
            return false;
        }
        let k = self.inc.iter().position(|c| !c.authed && c.since == oldest).expect("the oldest");
        let c = self.inc.swap_remove(k);
        self.lost(c, format!("{hard} connections were waiting to authenticate (it was the oldest)"));
        true
    }

    /// Reads the connection on descriptor `fd` (whichever list holds it).
    fn read_fd(&mut self, fd: RawFd, a: &mut Arrivals) {
        if let Some(k) = self.inc.iter().position(|c| c.sock.as_raw_fd() == fd) {
            self.read_inc(k, a);
        } else if let Some(to) = self.out.iter().position(|c| c.as_ref().is_some_and(|c| c.sock.as_raw_fd() == fd)) {
            // (A dialed connection still waiting for the nonce is read by
            // `flush`.)
            if self.out[to].as_ref().is_some_and(|c| c.authed) {
                self.read_out(to, a);
            }
        }
    }

    /// Drops the unauthenticated connections past their time budget, and
    /// the oldest past their grace period beyond the cap; looks again at
    /// the parked ones (see `Conn::parked`).
    fn sweep(&mut self, a: &mut Arrivals) {
        self.next_sweep = Instant::now() + Duration::from_secs(1);
        self.any_parked = false;
        let cap = self.unauthed_cap();
        let mut old: Vec<Instant> =
            self.inc.iter().filter(|c| !c.authed && c.since.elapsed() >= AUTH_GRACE).map(|c| c.since).collect();
        let young = self.inc.iter().filter(|c| !c.authed).count() - old.len();
        let drop = (old.len() + young).saturating_sub(cap).min(old.len());
        if drop > 0 {
            // Drop the oldest until `cap` are left (or only young ones).
            old.sort_unstable();
            let last = old[drop - 1];
            let mut k = 0;
            while k < self.inc.len() {
                if !self.inc[k].authed && self.inc[k].since <= last {
                    let c = self.inc.swap_remove(k);
                    self.lost(
                        c,
                        format!("more than {cap} connections were waiting to authenticate (it was among the oldest)"),
                    );
                } else {
                    k += 1;
                }
            }
        }
        let mut k = 0;
        while k < self.inc.len() {
            let c = &self.inc[k];
            if c.authed {
                k += 1;
                continue;
            }
            if c.parked {
                if self.read_inc(k, a) {
                    self.any_parked |= self.inc[k].parked;
                    k += 1;
                }
                continue;
            }
            let budget = if c.rlen == 0 { AUTH_SILENT_BUDGET } else { AUTH_PARTIAL_BUDGET };
            if c.since.elapsed() > budget {
                let c = self.inc.swap_remove(k);
                self.lost(c, format!("no authentication within {} s", budget.as_secs()));
                continue;
            }
            k += 1;
        }
    }

    /// Reads `out[to]` (which must exist).
    fn read_out(&mut self, to: usize, a: &mut Arrivals) {
        let c = self.out[to].as_mut().expect("connection");
        if let Err(why) = read_conn(c, &self.keys, &mut self.switch, &mut self.fault, a) {
            let c = self.out[to].take().expect("connection");
            self.lost(c, why);
        }
    }

    /// Reads accepted connection `k`; false if it is gone from `inc`
    /// (failed, finished by a switch, or now carrying our records too).
    fn read_inc(&mut self, k: usize, a: &mut Arrivals) -> bool {
        let was = self.inc[k].authed;
        let was_parked = self.inc[k].parked;
        match read_conn(&mut self.inc[k], &self.keys, &mut self.switch, &mut self.fault, a) {
            Ok(None) => {
                let c = &self.inc[k];
                if c.parked != was_parked {
                    // Parked: nothing more is read until it is introduced.
                    self.poller.set(c.sock.as_raw_fd(), !c.parked);
                    self.any_parked |= c.parked;
                }
                let p = c.peer.unwrap_or(usize::MAX);
                if !was
                    && c.authed
                    && p != usize::MAX
                    && self.lower(p)
                    && self.out[p].as_ref().is_some_and(|o| o.dialed)
                {
                    self.switch_to(k, a);
                    return false;
                }
                true
            }
            Ok(Some(from)) => {
                // The peer's old connection is done: its records go on on
                // the one we opened, perhaps read (and held) already.
                self.inc.swap_remove(k);
                if self.out[from].as_ref().is_some_and(|c| c.held) {
                    self.out[from].as_mut().expect("connection").held = false;
                    self.read_out(from, a);
                }
                false
            }
            Err(why) => {
                let c = self.inc.swap_remove(k);
                self.lost(c, why);
                false
            }
        }
    }

    /// `inc[k]` is the connection a lower rank opened to us while ours to
    /// it exists too (simultaneous connects): our records to it move to
    /// its connection, after a last record on ours.
    fn switch_to(&mut self, k: usize, a: &mut Arrivals) {
        let mut new = self.inc.swap_remove(k);
        let p = new.peer.expect("authenticated");
        let mut old = self.out[p].take().expect("our connection");
        // (Only written from now on, until closed.)
        self.poller.remove(old.sock.as_raw_fd());
        old.queue.push_back(marker(SWITCH_OLD));
        Self::flush(self.me, &self.keys, self.uid, p, &mut old, &mut a.streamed);
        if !old.queue.is_empty() {
            self.retiring.push(old);
        }
        new.queue.push_back(marker(SWITCH_NEW));
        Self::flush(self.me, &self.keys, self.uid, p, &mut new, &mut a.streamed);
        self.out[p] = Some(new);
    }

    /// Reads, without waiting, what has arrived from world rank `from`
    /// (one system call per connection it may use; complete frames go to
    /// `a`). False if `from` has no authenticated connection to us yet.
    pub fn read_from(&mut self, from: usize, a: &mut Arrivals) -> bool {
        let mut found = false;
        if self.out[from].as_ref().is_some_and(|c| c.authed) {
            found = true;
            self.read_out(from, a);
        }
        let mut k = 0;
        while k < self.inc.len() {
            let c = &self.inc[k];
            if c.authed && c.peer == Some(from) {
                found = true;
                if !self.read_inc(k, a) {
                    continue;
                }
            }
            k += 1;
        }
        found
    }

    /// Makes sure a connection to `to` exists (failures tolerated: a peer
    /// that cannot be reached is given up, see [`Tcp::give_up`]).
    pub fn reach(&mut self, to: usize) {
        if !self.gone.contains(&to) {
            self.connect(to);
        }
    }

    /// Gives up peer `p` (failures tolerated): the runtime marks it failed,
    /// nothing more is written to it.
    fn give_up(&mut self, p: usize) {
        if !self.gone.contains(&p) {
            self.gone.push(p);
            self.lost_peers.push(p);
        }
    }

    /// Closes connection `c`, which failed for reason `why`: a stranger's
    /// is reported, a peer's ends the job (unless this rank is finalizing).
    fn lost(&mut self, c: Conn, why: String) {
        match (c.peer, self.finalizing) {
            (None, _) => self.rejects.note(self.me, &c.addr, &why),
            (Some(_), true) => {}
            // A process of another job may end any time after it
            // disconnected; if it is needed again, it is dialed again.
            (Some(p), false) if p >= self.keys.world => {}
            (Some(p), false) if super::ulfm::enabled() => self.give_up(p),
            (Some(p), false) => fatal_link(self.me, p, "lost the connection with", &why),
        }
    }
}

/// Reads what connection `c` has (one read unless the buffer fills) and
/// takes out the complete frames; first checks the authentication of an
/// accepted connection. `switch`: the switch states by peer (see
/// `SWITCH_OLD`). Ok(Some(peer)): the peer's last record on this
/// connection was read (drop it). Err(reason): close it.
fn read_conn(
    c: &mut Conn,
    keys: &Keys,
    switch: &mut [u8],
    fault: &mut Option<Fault>,
    a: &mut Arrivals,
) -> Result<Option<usize>, String> {
    if (c.dialed && !c.authed) || c.held {
        // (The acceptor's nonce comes first: `Tcp::authenticate` reads it.)
        return Ok(None);
    }
    loop {
        // Until it authenticates, a connection's budget is its answer (and
        // the read buffer is that small).
        let end = if c.authed {
            if c.rlen == c.rbuf.len() {
                let grow = c.rbuf.len();
                c.rbuf.resize(grow * 2, 0);
            }
            c.rbuf.len()
        } else {
            AUTH_LEN_FOREIGN
        };
        if c.rlen == end {
            break;
        }
        match c.sock.read(&mut c.rbuf[c.rlen..end]) {
            Ok(0) => return Err("connection closed".into()),
            Ok(n) => {
                c.rlen += n;
                // A short read took what there was (the next poll reports
                // more): no second read just to see EAGAIN.
                if c.rlen < end {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut pos = 0;
    if !c.authed {
        let late = c.since.elapsed() > AUTH_PARTIAL_BUDGET;
        let foreign = c.rlen >= 8 && &c.rbuf[..8] == MAGIC_FOREIGN;
        if c.rlen >= 8 && !foreign && &c.rbuf[..8] != MAGIC {
            return Err("failed authentication (not a process of this job)".into());
        }
        let need = if foreign { AUTH_LEN_FOREIGN } else { AUTH_LEN };
        if c.rlen < need {
            if late && c.rlen > 0 {
                return Err(format!("no authentication within {} s", AUTH_PARTIAL_BUDGET.as_secs()));
            }
            return Ok(None);
        }
        let peer = if foreign {
            let uid = u64::from_le_bytes(c.rbuf[8..16].try_into().unwrap());
            match keys.foreign.iter().position(|f| f.uid == uid) {
                Some(k) => keys.world + k,
                // A process of a job we are still being introduced to (our
                // group's leader has not told us about it yet): wait.
                None if !late => {
                    c.parked = true;
                    return Ok(None);
                }
                None => return Err("unknown process of another job".into()),
            }
        } else {
            let rank = u32::from_le_bytes(c.rbuf[8..12].try_into().unwrap()) as usize;
            if &c.rbuf[..8] != MAGIC || rank >= keys.world {
                return Err("failed authentication (not a process of this job)".into());
            }
            rank
        };
        let (secret, id) = keys.of(peer);
        if c.rbuf[8 + id.len()..need] != mac(secret, &c.nonce, &id) {
            return Err("failed authentication (wrong secret)".into());
        }
        c.peer = Some(peer);
        c.authed = true;
        c.parked = false;
        if c.rbuf.len() < RBUF {
            c.rbuf.resize(RBUF, 0);
        }
        pos = need;
    }
    let from = c.peer.expect("authenticated");
    let mut done = None;
    while c.rlen - pos >= HDR {
        if let Some(f) = fault.as_mut() {
            if f.left > 0 {
                f.left -= 1;
            } else {
                make_fault(c, pos, f.corrupt);
                *fault = None;
            }
        }
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
        let payload = &c.rbuf[pos + HDR..pos + HDR + n];
        pos += HDR + n;
        match h.kind {
            SWITCH_OLD => {
                switch[from] = OLD_DONE;
                done = Some(from);
                break;
            }
            SWITCH_NEW if switch[from] != OLD_DONE => {
                switch[from] = NEW_HELD;
                c.held = true;
                break;
            }
            SWITCH_NEW => {}
            _ => a.push(from, h, payload),
        }
    }
    c.rbuf.copy_within(pos..c.rlen, 0);
    c.rlen -= pos;
    Ok(done)
}

/// The test hook's fault (see [`Fault`]) on connection `c`, whose next
/// record starts at `pos` of its read buffer.
#[cold]
fn make_fault(c: &mut Conn, pos: usize, corrupt: bool) {
    if corrupt {
        let at = pos + std::mem::offset_of!(MsgHdr, payload);
        c.rbuf[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    } else {
        eprintln!("mpi-core: test hook: shutting down a connection");
        let _ = c.sock.shutdown(std::net::Shutdown::Both);
    }
}

/// Sends `a` then `b` in one system call (retried if interrupted), without
/// SIGPIPE if the peer is gone; returns the bytes the socket took.
fn send2(fd: std::os::fd::RawFd, a: &[u8], b: &[u8]) -> std::io::Result<usize> {
    let mut iov = [
        libc::iovec { iov_base: a.as_ptr() as *mut libc::c_void, iov_len: a.len() },
        libc::iovec { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() },
    ];
    // SAFETY: an all-zero msghdr is valid (no address, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = if b.is_empty() { 1 } else { 2 };
    loop {
        // SAFETY: the iovecs describe live slices the kernel only reads.
        let r = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn send_failed(me: usize, to: usize, e: std::io::Error) -> ! {
    fatal_link(me, to, "sending failed to", &format_args!("{e}; did it die?"))
}

impl Transport for Tcp {
    #[inline]
    fn send(&mut self, to: usize, hdr: &MsgHdr, payload: &[u8], _sreq: u64) {
        self.write_record(to, hdr, payload);
    }

    /// `sreq` is reported by `flush` once everything is written.
    unsafe fn stream(&mut self, to: usize, hdr: MsgHdr, ptr: *const u8, len: usize, sreq: u64) {
        self.enqueue(to, Item::Stream { hdr, ptr, len, off: 0, in_frame: 0, sreq });
    }

    /// One [`Tcp::poll`]: its frames are then read by `next_incoming`.
    fn flush(&mut self, streamed: &mut impl FnMut(u64)) -> bool {
        let mut a = self.take_arrivals();
        self.poll(&mut a);
        for &id in &a.streamed {
            streamed(id);
        }
        let did = !a.streamed.is_empty() || !a.is_empty();
        self.arrivals = a;
        did
    }

    #[inline]
    fn next_incoming(&mut self) -> Option<Incoming> {
        if self.inbox_next >= self.arrivals.len() {
            return None;
        }
        let (from, hdr, payload) = self.arrivals.get(self.inbox_next);
        // SAFETY: `arrivals` is not written until the next `flush` or
        // `take_arrivals`, which come after the engine consumed every frame
        // (sending, meanwhile, does not touch it).
        Some(unsafe { Incoming::new(from, *hdr, payload.as_ptr(), payload.len()) })
    }

    #[inline]
    fn consume(&mut self, _rec: &Incoming) {
        self.inbox_next += 1;
    }

    #[inline]
    fn has_pending_out(&self) -> bool {
        self.has_pending()
    }

    /// The epoll set (readable when a socket it watches is), and the
    /// authenticated sockets with queued records for writing.
    fn poll_fds(&self, fds: &mut Vec<libc::pollfd>) {
        fds.push(libc::pollfd { fd: self.poller.ep.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        for c in self.out.iter().flatten().chain(&self.retiring) {
            if c.authed && !c.queue.is_empty() {
                fds.push(libc::pollfd { fd: c.sock.as_raw_fd(), events: libc::POLLOUT, revents: 0 });
            }
        }
    }
}
