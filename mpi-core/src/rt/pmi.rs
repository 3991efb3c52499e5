//! PMI client (PMI-1 and PMI-2 wire protocols, shared/reference/pmi.md): how
//! a rank learns its rank, the job size and the other ranks' business cards
//! from the launcher (this project's `mpirun`, MPICH's hydra, or Slurm).
//!
//! PMI-1 is spoken by default. PMI-2 is chosen with `MPICORE_PMI=2`, or
//! automatically under `srun --mpi=pmi2` (Slurm sets `SLURM_MPI_TYPE=pmi2`);
//! `MPICORE_PMI=1` forces PMI-1.
//!
//! The messages themselves are built and read by `mpi-pmi`, the codec the
//! launcher's server shares.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use mpi_pmi::{Message, SpawnSegment, Wire};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum PmiError {
    #[error("PMI: cannot talk to the launcher: {0}")]
    Io(#[from] std::io::Error),
    #[error("PMI: bad environment variable {0}={1}")]
    Env(&'static str, String),
    #[error("PMI: unexpected answer to {cmd}: {line}")]
    Protocol { cmd: String, line: String },
    #[error("PMI: key {0} not found")]
    NotFound(String),
}

/// One program of a spawn request.
pub struct SpawnRequest {
    pub command: String,
    pub args: Vec<String>,
    pub nprocs: usize,
    /// Info hints passed on (the launcher reads `wdir`).
    pub info: Vec<(String, String)>,
}

/// Connection to the process manager, or a singleton without one.
pub struct Pmi {
    conn: Option<Conn>,
    pub rank: usize,
    pub size: usize,
    pub kvsname: String,
    pub appnum: i32,
    pub universe_size: usize,
    /// Local rank information given by the launcher, if any.
    pub local: Option<(usize, usize)>,
    singleton_kvs: HashMap<String, String>,
}

struct Conn {
    reader: BufReader<UnixStream>,
    /// (Shared with the [`AbortChannel`], which so costs no descriptor.)
    writer: Arc<UnixStream>,
    /// Speaks PMI-2 (length-prefixed `cmd=..;key=value;` messages) after the
    /// PMI-1 style `init` line.
    v2: bool,
}

/// Which wire protocol to speak, from the environment.
pub fn wants_v2() -> bool {
    match std::env::var("MPICORE_PMI").as_deref().map(str::trim) {
        Ok("2") | Ok("pmi2") => return true,
        Ok("1") | Ok("pmi1") => return false,
        _ => {}
    }
    std::env::var("SLURM_MPI_TYPE").is_ok_and(|t| t.starts_with("pmi2"))
}

impl Conn {
    /// Sends one PMI-2 message.
    fn send_v2(&mut self, msg: &Message) -> Result<(), PmiError> {
        (&*self.writer).write_all(msg.to_v2().as_bytes())?;
        Ok(())
    }
    /// Reads one PMI-2 message and checks that it answers `cmd` without a
    /// nonzero `rc`.
    fn recv_v2(&mut self, cmd: &str) -> Result<Message, PmiError> {
        let mut len = [0u8; mpi_pmi::V2_LENGTH_WIDTH];
        self.reader.read_exact(&mut len)?;
        let n = mpi_pmi::parse_v2_length(&len)
            .map_err(|_| PmiError::Protocol { cmd: cmd.into(), line: String::from_utf8_lossy(&len).into_owned() })?;
        let mut body = vec![0u8; n];
        self.reader.read_exact(&mut body)?;
        let line = String::from_utf8_lossy(&body).into_owned();
        match Message::parse_v2_body(&line) {
            Ok(msg) if msg.cmd == mpi_pmi::v2_response_name(cmd) && msg.get("rc").is_none_or(|rc| rc == "0") => Ok(msg),
            _ => Err(PmiError::Protocol { cmd: cmd.into(), line }),
        }
    }
    fn call_v2(&mut self, msg: &Message) -> Result<Message, PmiError> {
        self.send_v2(msg)?;
        self.recv_v2(&msg.cmd)
    }
    /// Sends PMI-1 text (lines or `mcmd` segments).
    fn send(&mut self, text: &str) -> Result<(), PmiError> {
        (&*self.writer).write_all(text.as_bytes())?;
        Ok(())
    }
    /// Reads one PMI-1 line and checks that it is a `cmd` message.
    fn recv(&mut self, cmd: &str) -> Result<Message, PmiError> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(PmiError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "launcher closed the PMI connection",
            )));
        }
        match Message::parse_v1_line(&line) {
            Ok(msg) if msg.cmd == cmd => Ok(msg),
            _ => Err(PmiError::Protocol { cmd: cmd.into(), line }),
        }
    }
    fn call(&mut self, msg: &Message, answer: &str) -> Result<Message, PmiError> {
        self.send(&msg.to_v1_line())?;
        self.recv(answer)
    }
}

fn env_num(name: &'static str) -> Result<Option<usize>, PmiError> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().map(Some).map_err(|_| PmiError::Env(name, v)),
        Err(_) => Ok(None),
    }
}

impl Pmi {
    /// Connects through `PMI_FD` (or `PMI_PORT`), or starts as a singleton.
    pub fn init() -> Result<Pmi, PmiError> {
        let local = match (env_num("MPI_LOCALRANKID")?, env_num("MPI_LOCALNRANKS")?) {
            (Some(r), Some(n)) if r < n => Some((r, n)),
            _ => None,
        };
        // SAFETY: the launcher handed us this connected socket in PMI_FD and
        // nothing else in the process owns it.
        let stream = env_num("PMI_FD")?.map(|fd| unsafe { UnixStream::from_raw_fd(fd as i32) });
        let Some(stream) = stream else {
            if let Ok(port) = std::env::var("PMI_PORT") {
                return Self::init_port(&port, local);
            }
            return Ok(Pmi {
                conn: None,
                rank: 0,
                size: 1,
                kvsname: format!("singleton_{}", std::process::id()),
                appnum: 0,
                universe_size: 1,
                local: Some((0, 1)),
                singleton_kvs: HashMap::new(),
            });
        };
        let writer = Arc::new(stream.try_clone()?);
        let conn = Conn { reader: BufReader::new(stream), writer, v2: false };
        let rank = env_num("PMI_RANK")?.ok_or(PmiError::Env("PMI_RANK", String::new()))?;
        if wants_v2() {
            return Self::handshake_v2(conn, rank, local);
        }
        let size = env_num("PMI_SIZE")?.ok_or(PmiError::Env("PMI_SIZE", String::new()))?;
        Self::handshake(conn, rank, size, local)
    }

    fn init_port(port: &str, local: Option<(usize, usize)>) -> Result<Pmi, PmiError> {
        // PMI_PORT=host:port: a TCP connection. Not used by our launcher; kept
        // for hydra setups that prefer it.
        let tcp = std::net::TcpStream::connect(port)?;
        // Convert into the unix-stream-typed connection via raw fd duplication.
        use std::os::fd::IntoRawFd;
        let fd = tcp.into_raw_fd();
        // SAFETY: `fd` is a connected socket we own; UnixStream only uses
        // read/write on it, which work on any stream socket.
        let stream = unsafe { UnixStream::from_raw_fd(fd) };
        let writer = Arc::new(stream.try_clone()?);
        let mut conn = Conn { reader: BufReader::new(stream), writer, v2: false };
        let id = env_num("PMI_ID")?.unwrap_or(0);
        conn.call(&Message::new("initack").with("pmiid", id.to_string()), "initack")?;
        let size = conn.recv("set")?.get("size").and_then(|s| s.parse().ok()).unwrap_or(1);
        let rank = conn.recv("set")?.get("rank").and_then(|s| s.parse().ok()).unwrap_or(0);
        let _debug = conn.recv("set")?;
        Self::handshake(conn, rank, size, local)
    }

    fn handshake(mut conn: Conn, rank: usize, size: usize, local: Option<(usize, usize)>) -> Result<Pmi, PmiError> {
        let r = conn.call(&mpi_pmi::init_request(Wire::V1), "response_to_init")?;
        if !r.rc_is_zero() {
            return Err(PmiError::Protocol { cmd: "init".into(), line: format!("{r:?}") });
        }
        let kvsname = conn.call(&Message::new("get_my_kvsname"), "my_kvsname")?.take("kvsname").unwrap_or_default();
        let appnum =
            conn.call(&Message::new("get_appnum"), "appnum")?.get("appnum").and_then(|s| s.parse().ok()).unwrap_or(0);
        let universe_size = conn
            .call(&Message::new("get_universe_size"), "universe_size")?
            .get("size")
            .and_then(|s| s.parse().ok())
            .unwrap_or(size);
        Ok(Pmi { conn: Some(conn), rank, size, kvsname, appnum, universe_size, local, singleton_kvs: HashMap::new() })
    }

    /// PMI-2: the `init` line, then `fullinit` (rank, size, appnum) and
    /// `job-getid` (the key-value space's name).
    fn handshake_v2(mut conn: Conn, rank: usize, local: Option<(usize, usize)>) -> Result<Pmi, PmiError> {
        let r = conn.call(&mpi_pmi::init_request(Wire::V2), "response_to_init")?;
        if !r.rc_is_zero() || r.get("pmi_version") != Some("2") {
            return Err(PmiError::Protocol { cmd: "init".into(), line: format!("{r:?}") });
        }
        conn.v2 = true;
        // Slurm answers a fullinit without `pmijobid` with rc=3 ("pmijobid
        // missing in fullinit command"); like MPICH's client, pass its
        // PMI_JOBID on when the launcher set one.
        let mut fullinit = Message::new("fullinit");
        if let Ok(jobid) = std::env::var("PMI_JOBID") {
            fullinit.push("pmijobid", jobid);
        }
        let r = conn.call_v2(&fullinit.with("pmirank", rank.to_string()).with("threaded", "FALSE"))?;
        let num = |k: &str| r.get(k).and_then(|s| s.parse::<usize>().ok());
        let size = num("size").ok_or_else(|| PmiError::Protocol { cmd: "fullinit".into(), line: format!("{r:?}") })?;
        let rank = num("rank").unwrap_or(rank);
        let appnum = num("appnum").unwrap_or(0) as i32;
        let kvsname = conn.call_v2(&Message::new("job-getid"))?.take("jobid").unwrap_or_default();
        let universe_size = match conn.call_v2(&Message::new("info-getjobattr").with("key", "universeSize")) {
            Ok(m) if m.get("found") == Some("TRUE") => m.get("value").and_then(|v| v.parse().ok()).unwrap_or(size),
            _ => size,
        };
        Ok(Pmi { conn: Some(conn), rank, size, kvsname, appnum, universe_size, local, singleton_kvs: HashMap::new() })
    }

    pub fn is_singleton(&self) -> bool {
        self.conn.is_none()
    }

    /// The PMI version spoken with the launcher, 0 for a singleton.
    pub fn version(&self) -> u8 {
        match &self.conn {
            None => 0,
            Some(c) if c.v2 => 2,
            Some(_) => 1,
        }
    }

    /// Asks the process manager for a new job (PMI-1 `mcmd=spawn`, one
    /// segment per program), with `preput` in its key-value space; true if
    /// it started it.
    pub fn spawn(&mut self, apps: &[SpawnRequest], preput: &[(&str, &str)]) -> Result<bool, PmiError> {
        let no = |why: &str| PmiError::Protocol { cmd: "spawn".into(), line: why.into() };
        let c = match &mut self.conn {
            Some(c) if !c.v2 => c,
            Some(_) => return Err(no("spawning needs PMI-1 (MPICORE_PMI=1)")),
            None => return Err(no("a singleton has no process manager to spawn with")),
        };
        let bad = |s: &str| s.contains('\n');
        let preput: Vec<(String, String)> = preput.iter().map(|&(k, v)| (k.into(), v.into())).collect();
        for (i, a) in apps.iter().enumerate() {
            if bad(&a.command) || a.args.iter().any(|x| bad(x)) || a.info.iter().any(|(k, v)| bad(k) || bad(v)) {
                return Err(no("a spawn argument contains a newline"));
            }
            let segment = SpawnSegment {
                nprocs: a.nprocs,
                execname: a.command.clone(),
                args: a.args.clone(),
                preput: preput.clone(),
                info: a.info.clone(),
                totspawns: apps.len(),
                spawnssofar: i + 1,
            };
            c.send(&segment.to_message().to_mcmd())?;
        }
        Ok(c.recv("spawn_result")?.rc_is_zero())
    }

    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        match &mut self.conn {
            None => {
                self.singleton_kvs.insert(key.into(), value.into());
                Ok(())
            }
            Some(c) if c.v2 => c.call_v2(&Message::new("kvs-put").with("key", key).with("value", value)).map(|_| ()),
            Some(c) => {
                let put = Message::new("put").with("kvsname", &self.kvsname).with("key", key).with("value", value);
                let r = c.call(&put, "put_result")?;
                if !r.rc_is_zero() {
                    return Err(PmiError::Protocol { cmd: "put".into(), line: format!("{r:?}") });
                }
                Ok(())
            }
        }
    }

    pub fn get(&mut self, key: &str) -> Result<String, PmiError> {
        match &mut self.conn {
            None => self.singleton_kvs.get(key).cloned().ok_or_else(|| PmiError::NotFound(key.into())),
            Some(c) if c.v2 => {
                let mut r = c.call_v2(&Message::new("kvs-get").with("key", key))?;
                if r.get("found") != Some("TRUE") {
                    return Err(PmiError::NotFound(key.into()));
                }
                Ok(r.take("value").unwrap_or_default())
            }
            Some(c) => {
                let mut r =
                    c.call(&Message::new("get").with("kvsname", &self.kvsname).with("key", key), "get_result")?;
                if !r.rc_is_zero() {
                    return Err(PmiError::NotFound(key.into()));
                }
                Ok(r.take("value").unwrap_or_default())
            }
        }
    }

    pub fn barrier(&mut self) -> Result<(), PmiError> {
        match &mut self.conn {
            None => Ok(()),
            Some(c) if c.v2 => c.call_v2(&Message::new("kvs-fence")).map(|_| ()),
            Some(c) => c.call(&Message::new("barrier_in"), "barrier_out").map(|_| ()),
        }
    }

    pub fn finalize(&mut self) -> Result<(), PmiError> {
        match self.conn.take() {
            Some(mut c) if c.v2 => {
                c.call_v2(&Message::new("finalize"))?;
            }
            Some(mut c) => {
                c.call(&Message::new("finalize"), "finalize_ack")?;
            }
            None => {}
        }
        Ok(())
    }

    /// A second handle on the connection to the launcher, for ending the
    /// job from anywhere without the runtime's lock (see [`AbortChannel`]);
    /// None for a singleton.
    pub fn abort_channel(&self) -> Option<AbortChannel> {
        let c = self.conn.as_ref()?;
        Some(AbortChannel { writer: c.writer.clone(), v2: c.v2 })
    }
}

/// The text of an abort request in the connection's protocol.
fn abort_text(v2: bool, code: i32, msg: &str) -> String {
    let msg: String = msg.chars().map(|ch| if ch.is_whitespace() { '_' } else { ch }).collect();
    let code = code.to_string();
    if v2 {
        // `isworld` is the PMI-2 key (Slurm cancels the step only when it
        // is TRUE); `exitcode` is not PMI-2, only some launchers use it.
        Message::new("abort").with("isworld", "TRUE").with("exitcode", code).with("msg", msg).to_v2()
    } else {
        Message::new("abort").with("exitcode", code).with("msg", msg).to_v1_line()
    }
}

/// Where an abort request goes: the launcher connection's writing side,
/// shared at start-up (it stays open while this handle lives). Ending the job must not need the
/// runtime's lock (its holder may be the one that found the fatal error),
/// so the abort path writes here, one message in one `write`. A PMI
/// exchange of another thread in progress at that moment can mix with it;
/// the job ends either way (the launcher also ends it when this process
/// exits without finalizing).
pub struct AbortChannel {
    writer: Arc<UnixStream>,
    v2: bool,
}

impl AbortChannel {
    /// Asks the launcher to end the job; does not wait for an answer.
    pub fn send(&self, code: i32, msg: &str) {
        let _ = (&*self.writer).write_all(abort_text(self.v2, code, msg).as_bytes());
    }
}

/// Hydra's `PMI_process_mapping` value read as the node index of every rank.
pub use mpi_pmi::parse_process_mapping;
