//! Processes beyond the world (MPI 3.1 chapter 10): ports, the meeting of
//! two groups' roots, and the identities of processes of other jobs.
//!
//! * A process of another job becomes a peer with an index above the world
//!   size (`Engine::add_foreign`), always reached over TCP (even on this
//!   host), known by its process id (`Tcp::uid`, random) and its TCP
//!   listener's address. A process of our own job met this way (a port of
//!   our job) keeps its world rank.
//! * A port (`MPI_Open_port`) is a TCP listener of its own with a random
//!   32-byte secret; its name says how to reach it and carries the secret:
//!   `mpicore-port:<ipv4,...>:<tcp port>:<secret, hex>`. Whoever knows the
//!   name may connect, as the standard's names are capabilities.
//! * The roots meet on the port's socket: the acceptor sends a nonce, the
//!   connector its nonce and `HMAC(port secret, "mpicore-connect" || both
//!   nonces)`, the acceptor `HMAC(port secret, "mpicore-accept" || both)`:
//!   each proves it knows the secret without showing it. The two groups'
//!   connections then authenticate with the session secret
//!   `HMAC(port secret, "mpicore-session" || both nonces)`, fresh for every
//!   meeting. Then each root sends its group (identities in rank order).
//! * Everything read from that socket is waited for in the progress loop,
//!   so a root waiting for the other side keeps serving its job's traffic.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::raw::c_int;
use std::time::{Duration, Instant};

use mpi_api::abi::*;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::agree::View;
use super::comm::{ctx_key, Comm, CTX_SPAN_INTER};
use super::ctxid::{agree_ctx, intra_of, quiet, Agreement, KEY_DPM};
use super::error::{MpiError, MpiResult};
use super::pmi::SpawnRequest;
use super::tcp::{hmac_parts, random_bytes, Tcp};
use super::{with, State};
use crate::bail;

/// The context of the messages between the two roots while they agree on
/// the new intercommunicator's context id (above every id ever agreed).
pub const BRIDGE_CTX: u32 = super::comm::CTX_FAILED - 16;

/// The number of the next meeting of this process's roots (see [`meet`]).
static NEXT_BRIDGE: AtomicUsize = AtomicUsize::new(0);

/// How long a root waits for the other side once their sockets are
/// connected (the other root is inside its connect or accept).
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// An open port.
pub struct Port {
    pub name: String,
    listener: TcpListener,
    secret: [u8; 32],
}

/// State of this chapter: open ports, the parent of a spawned job.
#[derive(Default)]
pub struct Dpm {
    pub ports: Vec<Port>,
    /// The intercommunicator to the spawning job (`MPI_Comm_get_parent`).
    pub parent: Option<MPI_Comm>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

fn port_err(why: impl std::fmt::Display) -> MpiError {
    MpiError::new(MPI_ERR_PORT, why.to_string())
}

/// `MPI_Open_port`: a new port; returns its name.
pub fn open_port(st: &mut State) -> MpiResult<String> {
    let (listener, card) = Tcp::listen().map_err(|e| port_err(format!("cannot open a TCP port: {e}")))?;
    let secret: [u8; 32] = random_bytes();
    // A host with many addresses names as many as fit in MPI_MAX_PORT_NAME.
    let (ips, port) = card.rsplit_once(':').unwrap_or((&card, ""));
    let mut ips: Vec<&str> = ips.split(',').collect();
    let name = loop {
        let name = format!("mpicore-port:{}:{port}:{}", ips.join(","), hex(&secret));
        if name.len() < MPI_MAX_PORT_NAME as usize {
            break name;
        }
        if ips.len() == 1 {
            bail!(MPI_ERR_INTERN, "the port name would be longer than MPI_MAX_PORT_NAME");
        }
        ips.pop();
    };
    st.dpm.ports.push(Port { name: name.clone(), listener, secret });
    Ok(name)
}

/// `MPI_Close_port`.
pub fn close_port(st: &mut State, name: &str) -> MpiResult<()> {
    let k = st
        .dpm
        .ports
        .iter()
        .position(|p| p.name == name)
        .ok_or_else(|| port_err(format!("no open port named {name:?}")))?;
    st.dpm.ports.remove(k);
    Ok(())
}

/// Splits a port name into the addresses to try and the secret.
fn parse_port(name: &str) -> MpiResult<(Vec<SocketAddr>, Vec<u8>)> {
    let bad = || port_err(format!("{name:?} is not a port name of this MPI (mpicore-port:...)"));
    let rest = name.trim().strip_prefix("mpicore-port:").ok_or_else(bad)?;
    let mut it = rest.rsplitn(3, ':');
    let (secret, port, ips) = (it.next().ok_or_else(bad)?, it.next().ok_or_else(bad)?, it.next().ok_or_else(bad)?);
    let secret = unhex(secret).filter(|s| s.len() == 32).ok_or_else(bad)?;
    let addrs: Vec<SocketAddr> = ips.split(',').filter_map(|ip| format!("{ip}:{port}").parse().ok()).collect();
    if addrs.is_empty() {
        return Err(bad());
    }
    Ok((addrs, secret))
}

/// Waits, driving progress, until `fd` is ready for `events` or `deadline`.
fn wait_fd(fd: i32, events: i16, deadline: Instant) -> MpiResult<()> {
    super::block_on(|_| {
        let mut p = libc::pollfd { fd, events, revents: 0 };
        // SAFETY: poll of one valid pollfd, without waiting.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        if n != 0 {
            return Some(Ok(()));
        }
        (Instant::now() > deadline).then(|| Err(port_err("the other side did not answer in time")))
    })?
}

/// The socket two roots meet on (nonblocking; waits drive progress).
pub struct Side {
    sock: TcpStream,
    deadline: Instant,
    /// The user's socket of `MPI_Comm_join` (this is a duplicate) and its
    /// file status flags, put back when done.
    restore: Option<(i32, c_int)>,
}

impl Drop for Side {
    fn drop(&mut self) {
        if let Some((fd, flags)) = self.restore {
            // SAFETY: fcntl on the user's descriptor, still open (the join
            // holds it for the duration of the call).
            unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
        }
    }
}

impl Side {
    pub fn new(sock: TcpStream) -> MpiResult<Side> {
        sock.set_nonblocking(true).map_err(port_err)?;
        let _ = sock.set_nodelay(true);
        Ok(Side { sock, deadline: Instant::now() + STEP_TIMEOUT, restore: None })
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> MpiResult<()> {
        let mut got = 0;
        while got < buf.len() {
            match self.sock.read(&mut buf[got..]) {
                Ok(0) => return Err(port_err("the other side closed the connection")),
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    wait_fd(self.sock.as_raw_fd(), libc::POLLIN, self.deadline)?
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(port_err(e)),
            }
        }
        Ok(())
    }

    fn write_all(&mut self, buf: &[u8]) -> MpiResult<()> {
        let mut off = 0;
        while off < buf.len() {
            match self.sock.write(&buf[off..]) {
                Ok(n) => off += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    wait_fd(self.sock.as_raw_fd(), libc::POLLOUT, self.deadline)?
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(port_err(e)),
            }
        }
        Ok(())
    }

    /// Sends one frame (length, then bytes).
    pub fn send(&mut self, data: &[u8]) -> MpiResult<()> {
        let mut f = (data.len() as u32).to_le_bytes().to_vec();
        f.extend_from_slice(data);
        self.write_all(&f)
    }

    /// Receives one frame (at most 16 MiB).
    pub fn recv(&mut self) -> MpiResult<Vec<u8>> {
        let mut len = [0u8; 4];
        self.read_exact(&mut len)?;
        let n = u32::from_le_bytes(len) as usize;
        if n > 16 << 20 {
            bail!(MPI_ERR_PORT, "corrupt frame from the other side ({n} bytes)");
        }
        let mut v = vec![0; n];
        self.read_exact(&mut v)?;
        Ok(v)
    }
}

fn session_key(secret: &[u8], na: &[u8], nc: &[u8]) -> [u8; 32] {
    hmac_parts(secret, &[b"mpicore-session", na, nc])
}

/// The acceptor's half of the meeting on an accepted socket: checks the
/// connector knows `secret`; returns the session secret.
fn greet_connector(side: &mut Side, secret: &[u8]) -> MpiResult<[u8; 32]> {
    let na: [u8; 16] = random_bytes();
    side.send(&na)?;
    let reply = side.recv()?;
    if reply.len() != 48 || reply[16..] != hmac_parts(secret, &[b"mpicore-connect", &na, &reply[..16]]) {
        bail!(MPI_ERR_PORT, "a process that does not know the port's secret tried to connect");
    }
    let nc = &reply[..16];
    side.send(&hmac_parts(secret, &[b"mpicore-accept", &na, nc]))?;
    Ok(session_key(secret, &na, nc))
}

/// The connector's half: proves it knows `secret`, checks the acceptor
/// does too; returns the session secret.
fn greet_acceptor(side: &mut Side, secret: &[u8]) -> MpiResult<[u8; 32]> {
    let na = side.recv()?;
    if na.len() != 16 {
        bail!(MPI_ERR_PORT, "unexpected greeting on the port");
    }
    let nc: [u8; 16] = random_bytes();
    let mut m = nc.to_vec();
    m.extend_from_slice(&hmac_parts(secret, &[b"mpicore-connect", &na, &nc]));
    side.send(&m)?;
    let proof = side.recv()?;
    if proof[..] != hmac_parts(secret, &[b"mpicore-accept", &na, &nc]) {
        bail!(MPI_ERR_PORT, "the process behind the port does not know its secret");
    }
    Ok(session_key(secret, &na, &nc))
}

/// `MPI_Comm_accept` at the root: waits for a connector on port `name`
/// (strangers that fail the handshake are turned away and the wait goes
/// on), until `deadline` if there is one; returns the meeting socket and
/// the session secret.
pub fn accept(name: &str, deadline: Option<Instant>) -> MpiResult<(Side, [u8; 32])> {
    let secret = super::with(|st| {
        let p = st
            .dpm
            .ports
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| port_err(format!("no open port named {name:?}")))?;
        Ok(p.secret)
    })?;
    loop {
        let sock = super::block_on(|st| {
            let p = st.dpm.ports.iter().find(|p| p.name == name);
            match p.map(|p| p.listener.accept()) {
                None => Some(Err(port_err("the port was closed"))),
                Some(Ok((s, _))) => Some(Ok(s)),
                Some(Err(_)) if deadline.is_some_and(|d| Instant::now() > d) => {
                    Some(Err(port_err("nobody connected in time")))
                }
                Some(Err(_)) => None,
            }
        })??;
        let mut side = Side::new(sock)?;
        match greet_connector(&mut side, &secret) {
            Ok(k) => return Ok((side, k)),
            Err(e) => eprintln!("mpi-core: turned away a connection on port {name}: {}", e.msg),
        }
    }
}

/// `MPI_Comm_connect` at the root: reaches the port named `name`; returns
/// the meeting socket and the session secret.
pub fn connect(name: &str) -> MpiResult<(Side, [u8; 32])> {
    let (addrs, secret) = parse_port(name)?;
    let mut last = String::new();
    for a in &addrs {
        match TcpStream::connect_timeout(a, Duration::from_secs(5)) {
            Ok(s) => {
                let mut side = Side::new(s)?;
                let k = greet_acceptor(&mut side, &secret)?;
                return Ok((side, k));
            }
            Err(e) => last = format!("{a}: {e}"),
        }
    }
    Err(port_err(format!("cannot reach port {name}: {last}")))
}

/// How a process is known to processes of other jobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    pub uid: u64,
    pub card: String,
    pub job: String,
    pub rank: usize,
}

impl Ident {
    pub fn encode(&self) -> String {
        format!("{:016x} {} {} {}", self.uid, self.card, self.job, self.rank)
    }

    pub fn decode(s: &str) -> MpiResult<Ident> {
        let bad = || MpiError::new(MPI_ERR_INTERN, format!("malformed process identity {s:?}"));
        let f: Vec<&str> = s.split(' ').collect();
        if f.len() != 4 {
            return Err(bad());
        }
        Ok(Ident {
            uid: u64::from_str_radix(f[0], 16).map_err(|_| bad())?,
            card: f[1].to_string(),
            job: f[2].to_string(),
            rank: f[3].parse().map_err(|_| bad())?,
        })
    }
}

/// Turns the TCP transport on (a job on one host has none) and returns
/// this process's identity.
pub fn my_identity(st: &mut State) -> MpiResult<Ident> {
    super::ensure_tcp(st)?;
    let t = st.engine.tcp.as_ref().expect("TCP transport");
    Ok(Ident { uid: t.uid, card: t.card(), job: st.job_id.clone(), rank: st.world_rank })
}

/// The peer index of process `id`: its world rank if it is of our job,
/// else an index above the world (known before, or new with `secret`).
pub fn peer_of(st: &mut State, id: &Ident, secret: &[u8]) -> usize {
    if id.job == st.job_id {
        id.rank
    } else {
        st.engine.add_foreign(id.uid, &id.card, secret)
    }
}

/// The name service's directory: `MPICORE_NAME_DIR`, else
/// `$XDG_RUNTIME_DIR/mpicore-names`, else `/tmp/mpicore-names-<uid>`;
/// created private to the user, and refused if it belongs to another user
/// or others may write to it.
fn name_dir() -> MpiResult<std::path::PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let dir = match (std::env::var_os("MPICORE_NAME_DIR"), std::env::var_os("XDG_RUNTIME_DIR")) {
        (Some(d), _) => d.into(),
        (None, Some(x)) if !x.is_empty() => std::path::PathBuf::from(x).join("mpicore-names"),
        _ => std::path::PathBuf::from(format!("/tmp/mpicore-names-{uid}")),
    };
    let err = |why: String| MpiError::new(MPI_ERR_INTERN, format!("name service directory {}: {why}", dir.display()));
    if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        if e.kind() != ErrorKind::AlreadyExists {
            return Err(err(e.to_string()));
        }
    }
    let m = std::fs::symlink_metadata(&dir).map_err(|e| err(e.to_string()))?;
    if !m.is_dir() || m.uid() != uid || m.mode() & 0o022 != 0 {
        return Err(err("not a directory of this user that only this user may write to".into()));
    }
    Ok(dir)
}

/// The file of service `service` (its name in hex: any string is a name).
fn service_file(service: &str) -> MpiResult<std::path::PathBuf> {
    if service.is_empty() {
        bail!(MPI_ERR_ARG, "empty service name");
    }
    Ok(name_dir()?.join(hex(service.as_bytes())))
}

/// `MPI_Publish_name`: writes the service's file atomically (a name
/// published again points to the new port). The file is 0600 whatever the
/// umask: a port name holds the secret that lets a process connect, and
/// the directory may be one others can read (`MPICORE_NAME_DIR`).
pub fn publish_name(service: &str, port: &str) -> MpiResult<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = service_file(service)?;
    let tmp = f.with_extension(format!("tmp{}", std::process::id()));
    let io = |e: std::io::Error| MpiError::new(MPI_ERR_INTERN, format!("cannot publish {service:?}: {e}"));
    // A stale temporary file of an earlier process with our pid may have
    // another mode; the new one is created private, then chmod-ed on the
    // open file (the umask may have taken bits off the creation mode).
    let _ = std::fs::remove_file(&tmp);
    let written =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp).and_then(|mut file| {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            file.write_all(port.as_bytes())
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    std::fs::rename(&tmp, &f).map_err(io)
}

/// `MPI_Lookup_name`.
pub fn lookup_name(service: &str) -> MpiResult<String> {
    std::fs::read_to_string(service_file(service)?)
        .map_err(|_| MpiError::new(MPI_ERR_NAME, format!("no port is published under the name {service:?}")))
}

/// `MPI_Unpublish_name`: only the name's current port may be unpublished.
pub fn unpublish_name(service: &str, port: &str) -> MpiResult<()> {
    let f = service_file(service)?;
    match std::fs::read_to_string(&f) {
        Ok(p) if p == port => std::fs::remove_file(&f)
            .map_err(|e| MpiError::new(MPI_ERR_SERVICE, format!("cannot unpublish {service:?}: {e}"))),
        Ok(_) => Err(MpiError::new(MPI_ERR_SERVICE, format!("{service:?} is published with another port"))),
        Err(_) => Err(MpiError::new(MPI_ERR_SERVICE, format!("{service:?} is not published"))),
    }
}

/// `MPI_Comm_join` on socket `fd`: the two processes swap random numbers
/// on it; the one with the smaller plays the acceptor. The connection
/// secret is made of both numbers: the user's socket is the trusted
/// channel the standard presumes (whoever reads it learns the secret).
/// Returns the meeting socket (a duplicate of `fd`, whose flags are put
/// back when it is dropped), the secret, and whether this side accepts.
pub fn join_socket(fd: c_int) -> MpiResult<(Side, [u8; 32], bool)> {
    use std::os::fd::FromRawFd;
    let bad = |why: String| MpiError::new(MPI_ERR_ARG, format!("MPI_Comm_join: file descriptor {fd}: {why}"));
    // SAFETY: fcntl/dup on a descriptor number; failures are reported.
    let (flags, dup) = unsafe { (libc::fcntl(fd, libc::F_GETFL), libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0)) };
    if fd < 0 || flags < 0 || dup < 0 {
        return Err(bad(std::io::Error::last_os_error().to_string()));
    }
    // SAFETY: `dup` is a descriptor this function just made and owns.
    let sock = unsafe { TcpStream::from_raw_fd(dup) };
    let mut side = Side::new(sock)?;
    side.restore = Some((fd, flags));
    let mine: [u8; 32] = random_bytes();
    side.send(&mine)?;
    let theirs = side.recv()?;
    if theirs.len() != 32 || theirs[..] == mine[..] {
        return Err(bad("no MPI_Comm_join of this MPI at the other end".into()));
    }
    let accepting = mine[..] < theirs[..];
    let (lo, hi) = if accepting { (&mine[..], &theirs[..]) } else { (&theirs[..], &mine[..]) };
    Ok((side, hmac_parts(lo, &[b"mpicore-join", hi]), accepting))
}

// ----- meetings of groups --------------------------------------------------

/// How long the root of a spawn waits for the new job to connect.
const SPAWN_TIMEOUT: Duration = Duration::from_secs(120);

/// The meeting of `comm`'s group with another one (collective over
/// `comm`): at `root`, `reach` finds the other root and returns the
/// meeting socket and the session secret. The acceptor's side (`accepting`)
/// is rank 0 of the roots' bridge. Returns the new intercommunicator.
pub fn meet(
    comm: MPI_Comm,
    root: c_int,
    accepting: bool,
    reach: impl FnOnce() -> MpiResult<(Side, [u8; 32])>,
) -> MpiResult<MPI_Comm> {
    quiet(comm)?;
    let local = intra_of(comm, "a connect or accept")?;
    if root < 0 || root >= local.size() {
        bail!(MPI_ERR_ROOT, "root {root} is not a rank of the communicator (size {})", local.size());
    }
    let root = root as usize;
    let (view, me) = with(|st| Ok((View::local(st, &local)?, my_identity(st)?)))?;
    let idents = view.allgather_vec(me.encode().as_bytes())?;
    let mut outcome = Vec::new();
    let mut their_root = None;
    // At the root: a number of this meeting unique in this process. The
    // other root's messages to this one on BRIDGE_CTX carry it as their
    // source, and this root's carry the other's: meetings that run at once
    // in one process (spawns from several threads) then never take each
    // other's messages, which the roots' ranks in the bridge (0 and 1 in
    // every one) would not tell apart.
    let bridge = NEXT_BRIDGE.fetch_add(1, Ordering::Relaxed) & 0x3fff_ffff;
    if view.rank == root {
        let res = reach().and_then(|(mut side, key)| {
            let mut mine = format!("{root} {bridge}");
            for id in &idents {
                mine.push('\n');
                mine.push_str(&String::from_utf8_lossy(id));
            }
            side.send(mine.as_bytes())?;
            Ok((key, side.recv()?))
        });
        outcome = match &res {
            Ok((key, theirs)) => [&[1u8][..], key, &(bridge as u32).to_le_bytes()[..], theirs].concat(),
            Err(e) => [&[0u8][..], &e.class.to_le_bytes()].concat(),
        };
        // Tell the group before reporting the root's error, so that nobody
        // waits forever.
        outcome = view.bcast_vec(outcome, root)?;
        res?;
    } else {
        outcome = view.bcast_vec(outcome, root)?;
    }
    if outcome.len() < 37 || outcome[0] != 1 {
        // (The root's error class, MPI_ERR_SPAWN for a failed spawn.)
        let class = outcome.get(1..5).map_or(MPI_ERR_PORT, |b| c_int::from_le_bytes(b.try_into().expect("4 bytes")));
        bail!(class, "the root could not reach the other group");
    }
    let key: [u8; 32] = outcome[1..33].try_into().expect("32 bytes");
    // The root's number of this meeting: it makes the agreement's key
    // unique, so that meetings of one group running at once (spawns from
    // several threads on MPI_COMM_SELF) never count as one agreement and
    // take the same context id.
    let meeting = u32::from_le_bytes(outcome[33..37].try_into().expect("4 bytes"));
    let text = String::from_utf8_lossy(&outcome[37..]).into_owned();
    let mut lines = text.lines();
    let malformed = || MpiError::new(MPI_ERR_INTERN, "malformed group from the other side");
    let mut first = lines.next().ok_or_else(malformed)?.split(' ').map(|w| w.parse::<usize>().ok());
    let (Some(Some(their_root_rank)), Some(Some(their_bridge))) = (first.next(), first.next()) else {
        return Err(malformed());
    };
    let ids = lines.map(Ident::decode).collect::<MpiResult<Vec<_>>>()?;
    if their_root_rank >= ids.len() {
        return Err(malformed());
    }
    let (remote, peer) = with(|st| {
        let remote: Vec<usize> = ids.iter().map(|id| peer_of(st, id, &key)).collect();
        if view.rank == root {
            their_root = Some(remote[their_root_rank]);
        }
        let peer = match their_root {
            Some(them) => {
                let (group, rank) =
                    if accepting { (vec![st.world_rank, them], 0) } else { (vec![them, st.world_rank], 1) };
                let mut labels = vec![0; 2];
                labels[rank] = their_bridge;
                labels[1 - rank] = bridge;
                Some((View::new(st, BRIDGE_CTX, rank, Arc::new(group))?.with_labels(Arc::new(labels)), 1 - rank))
            }
            None => None,
        };
        Ok((remote, peer))
    })?;
    let a = Agreement { local: view, leader: root, peer, inter: true };
    let ctx = agree_ctx(ctx_key(&local, KEY_DPM | meeting as u64), CTX_SPAN_INTER, &a, true)?;
    let mut c = Comm::intra(ctx, Arc::new(remote), local.rank, local.errhandler);
    c.local = Some(local.group.clone());
    with(|st| Ok(st.comms.publish(c)))
}

/// The spawn of `MPI_Comm_spawn(_multiple)` (collective over `comm`; the
/// programs, `requests`, are read at the root only): the root opens a
/// port, asks the process manager for the job with the port's name as
/// its `PARENT_ROOT_PORT_NAME`, and accepts the new job's connection
/// (see [`connect_parent`]). Returns the outcome (the intercommunicator)
/// and the number of error codes to report: one per process started, or
/// at a root that failed, per process asked for.
pub fn spawn(
    comm: MPI_Comm,
    root: c_int,
    requests: impl FnOnce() -> MpiResult<Vec<SpawnRequest>>,
) -> MpiResult<(MpiResult<MPI_Comm>, usize)> {
    let at_root = with(|st| Ok(st.comms.get(comm)?.rank))? == root;
    let mut asked = 0;
    let mut port = None;
    let reach = || {
        let reqs = requests()?;
        asked = reqs.iter().map(|r| r.nprocs).sum();
        let name = with(open_port)?;
        port = Some(name.clone());
        let started = with(|st| {
            st.pmi
                .spawn(&reqs, &[("PARENT_ROOT_PORT_NAME", &name)])
                .map_err(|e| MpiError::new(MPI_ERR_SPAWN, e.to_string()))
        })?;
        if !started {
            bail!(MPI_ERR_SPAWN, "the process manager could not start the new processes");
        }
        accept(&name, Some(Instant::now() + SPAWN_TIMEOUT))
            .map_err(|e| MpiError::new(MPI_ERR_SPAWN, format!("the new processes did not connect: {}", e.msg)))
    };
    let res = meet(comm, root, true, reach);
    if let Some(name) = &port {
        let _ = with(|st| close_port(st, name));
    }
    let n = match &res {
        Ok(h) => with(|st| Ok(st.comms.get(*h)?.size()))? as usize,
        Err(_) if at_root => asked,
        Err(_) => 0,
    };
    Ok((res, n))
}

/// In a process started by a spawn: meets the parent job (collective over
/// the new job's world, right after `MPI_Init`). The port comes from our
/// `mpirun` in `MPICORE_PARENT_PORT`, or from the key-value space under
/// launchers that put it there (`PMI_SPAWNED`).
pub fn connect_parent() -> MpiResult<()> {
    let port = match std::env::var("MPICORE_PARENT_PORT") {
        Ok(p) if !p.is_empty() => p,
        _ if std::env::var("PMI_SPAWNED").is_ok_and(|v| v == "1") => {
            with(|st| st.pmi.get("PARENT_ROOT_PORT_NAME").map_err(|e| MpiError::new(MPI_ERR_SPAWN, e.to_string())))?
        }
        _ => return Ok(()),
    };
    let h = meet(MPI_COMM_WORLD, 0, false, || connect(&port))?;
    with(|st| {
        st.dpm.parent = Some(h);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_names() {
        let secret = [7u8; 32];
        let name = format!("mpicore-port:10.0.0.1,127.0.0.1:4242:{}", hex(&secret));
        let (addrs, s) = parse_port(&name).unwrap();
        assert_eq!(addrs, vec!["10.0.0.1:4242".parse().unwrap(), "127.0.0.1:4242".parse().unwrap()]);
        assert_eq!(s, secret);
        for bad in ["", "mpicore-port:", "tcp://1.2.3.4:5", &name[..name.len() - 2], &name.replace("4242", "x")] {
            assert_eq!(parse_port(bad).unwrap_err().class, MPI_ERR_PORT, "{bad}");
        }
        assert_eq!(unhex("0aff"), Some(vec![10, 255]));
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
    }

    #[test]
    fn identities() {
        let id = Ident { uid: 0xdead_beef_0123, card: "10.0.0.1:5000".into(), job: "kvs_1_ab@host".into(), rank: 3 };
        assert_eq!(Ident::decode(&id.encode()).unwrap(), id);
        assert!(Ident::decode("1 2 3").is_err());
        assert!(Ident::decode("zz a b 1").is_err());
    }
}
