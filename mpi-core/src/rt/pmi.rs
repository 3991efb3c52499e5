//! PMI client (PMI-1 and PMI-2 wire protocols, shared/reference/pmi.md): how
//! a rank learns its rank, the job size and the other ranks' business cards
//! from the launcher (this project's `mpirun`, MPICH's hydra, or Slurm).
//!
//! PMI-1 is spoken by default. PMI-2 is chosen with `MPICORE_PMI=2`, or
//! automatically under `srun --mpi=pmi2` (Slurm sets `SLURM_MPI_TYPE=pmi2`);
//! `MPICORE_PMI=1` forces PMI-1.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;

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
    writer: UnixStream,
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

/// Escapes a PMI-2 value: a `;` inside a value is written twice.
fn v2_escape(v: &str) -> String {
    v.replace(';', ";;")
}

/// Splits a PMI-2 message body `cmd=x;k=v;...;` into its fields (`;;` is a
/// literal semicolon inside a value).
fn parse_v2(body: &str) -> HashMap<String, String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ';' {
            if chars.peek() == Some(&';') {
                chars.next();
                cur.push(';');
            } else {
                fields.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        fields.push(cur);
    }
    fields.iter().filter_map(|f| f.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

impl Conn {
    /// Sends one PMI-2 message: `cmd` and its arguments, length-prefixed.
    fn send_v2(&mut self, cmd: &str, args: &[(&str, &str)]) -> Result<(), PmiError> {
        let mut body = format!("cmd={cmd};");
        for (k, v) in args {
            body.push_str(k);
            body.push('=');
            body.push_str(&v2_escape(v));
            body.push(';');
        }
        let msg = format!("{:<6}{body}", body.len());
        self.writer.write_all(msg.as_bytes())?;
        Ok(())
    }
    /// Reads one PMI-2 message and checks that it answers `cmd` with `rc=0`.
    fn recv_v2(&mut self, cmd: &str) -> Result<HashMap<String, String>, PmiError> {
        let mut len = [0u8; 6];
        self.reader.read_exact(&mut len)?;
        let text = String::from_utf8_lossy(&len);
        let n: usize =
            text.trim().parse().map_err(|_| PmiError::Protocol { cmd: cmd.into(), line: text.to_string() })?;
        let mut body = vec![0u8; n];
        self.reader.read_exact(&mut body)?;
        let line = String::from_utf8_lossy(&body).into_owned();
        let map = parse_v2(&line);
        let want = format!("{cmd}-response");
        let rc_ok = !matches!(map.get("rc"), Some(rc) if rc != "0");
        if map.get("cmd") != Some(&want) || !rc_ok {
            return Err(PmiError::Protocol { cmd: cmd.into(), line });
        }
        Ok(map)
    }
    fn call_v2(&mut self, cmd: &str, args: &[(&str, &str)]) -> Result<HashMap<String, String>, PmiError> {
        self.send_v2(cmd, args)?;
        self.recv_v2(cmd)
    }
    fn send(&mut self, line: &str) -> Result<(), PmiError> {
        self.writer.write_all(line.as_bytes())?;
        Ok(())
    }
    fn recv(&mut self, cmd: &str) -> Result<HashMap<String, String>, PmiError> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(PmiError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "launcher closed the PMI connection",
            )));
        }
        let map = parse(&line);
        if map.get("cmd").map(String::as_str) != Some(cmd) {
            return Err(PmiError::Protocol { cmd: cmd.into(), line });
        }
        Ok(map)
    }
    fn call(&mut self, line: &str, answer: &str) -> Result<HashMap<String, String>, PmiError> {
        self.send(line)?;
        self.recv(answer)
    }
}

fn parse(line: &str) -> HashMap<String, String> {
    line.split_whitespace().filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
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
        let writer = stream.try_clone()?;
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
        let writer = stream.try_clone()?;
        let mut conn = Conn { reader: BufReader::new(stream), writer, v2: false };
        let id = env_num("PMI_ID")?.unwrap_or(0);
        conn.send(&format!("cmd=initack pmiid={id}\n"))?;
        conn.recv("initack")?;
        let size = conn.recv("set")?.get("size").and_then(|s| s.parse().ok()).unwrap_or(1);
        let rank = conn.recv("set")?.get("rank").and_then(|s| s.parse().ok()).unwrap_or(0);
        let _debug = conn.recv("set")?;
        Self::handshake(conn, rank, size, local)
    }

    fn handshake(mut conn: Conn, rank: usize, size: usize, local: Option<(usize, usize)>) -> Result<Pmi, PmiError> {
        let r = conn.call("cmd=init pmi_version=1 pmi_subversion=1\n", "response_to_init")?;
        if r.get("rc").map(String::as_str) != Some("0") {
            return Err(PmiError::Protocol { cmd: "init".into(), line: format!("{r:?}") });
        }
        let kvsname = conn.call("cmd=get_my_kvsname\n", "my_kvsname")?.remove("kvsname").unwrap_or_default();
        let appnum = conn.call("cmd=get_appnum\n", "appnum")?.get("appnum").and_then(|s| s.parse().ok()).unwrap_or(0);
        let universe_size = conn
            .call("cmd=get_universe_size\n", "universe_size")?
            .get("size")
            .and_then(|s| s.parse().ok())
            .unwrap_or(size);
        Ok(Pmi { conn: Some(conn), rank, size, kvsname, appnum, universe_size, local, singleton_kvs: HashMap::new() })
    }

    /// PMI-2: the `init` line, then `fullinit` (rank, size, appnum) and
    /// `job-getid` (the key-value space's name).
    fn handshake_v2(mut conn: Conn, rank: usize, local: Option<(usize, usize)>) -> Result<Pmi, PmiError> {
        let r = conn.call("cmd=init pmi_version=2 pmi_subversion=0\n", "response_to_init")?;
        if r.get("rc").map(String::as_str) != Some("0") || r.get("pmi_version").map(String::as_str) != Some("2") {
            return Err(PmiError::Protocol { cmd: "init".into(), line: format!("{r:?}") });
        }
        conn.v2 = true;
        // Slurm answers a fullinit without `pmijobid` with rc=3 ("pmijobid
        // missing in fullinit command"); like MPICH's client, pass its
        // PMI_JOBID on when the launcher set one.
        let rank_s = rank.to_string();
        let jobid = std::env::var("PMI_JOBID").ok();
        let mut args = Vec::with_capacity(3);
        if let Some(j) = &jobid {
            args.push(("pmijobid", j.as_str()));
        }
        args.push(("pmirank", rank_s.as_str()));
        args.push(("threaded", "FALSE"));
        let r = conn.call_v2("fullinit", &args)?;
        let num = |k: &str| r.get(k).and_then(|s| s.parse::<usize>().ok());
        let size = num("size").ok_or_else(|| PmiError::Protocol { cmd: "fullinit".into(), line: format!("{r:?}") })?;
        let rank = num("rank").unwrap_or(rank);
        let appnum = num("appnum").unwrap_or(0) as i32;
        let kvsname = conn.call_v2("job-getid", &[])?.remove("jobid").unwrap_or_default();
        let universe_size = match conn.call_v2("info-getjobattr", &[("key", "universeSize")]) {
            Ok(m) if m.get("found").map(String::as_str) == Some("TRUE") => {
                m.get("value").and_then(|v| v.parse().ok()).unwrap_or(size)
            }
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
        for (i, a) in apps.iter().enumerate() {
            if bad(&a.command) || a.args.iter().any(|x| bad(x)) || a.info.iter().any(|(k, v)| bad(k) || bad(v)) {
                return Err(no("a spawn argument contains a newline"));
            }
            let mut m = format!(
                "mcmd=spawn\nnprocs={}\nexecname={}\ntotspawns={}\nspawnssofar={}\nargcnt={}\n",
                a.nprocs,
                a.command,
                apps.len(),
                i + 1,
                a.args.len()
            );
            for (j, x) in a.args.iter().enumerate() {
                m.push_str(&format!("arg{}={x}\n", j + 1));
            }
            m.push_str(&format!("preput_num={}\n", preput.len()));
            for (j, (k, v)) in preput.iter().enumerate() {
                m.push_str(&format!("preput_key_{j}={k}\npreput_val_{j}={v}\n"));
            }
            m.push_str(&format!("info_num={}\n", a.info.len()));
            for (j, (k, v)) in a.info.iter().enumerate() {
                m.push_str(&format!("info_key_{j}={k}\ninfo_val_{j}={v}\n"));
            }
            m.push_str("endcmd\n");
            c.send(&m)?;
        }
        let r = c.recv("spawn_result")?;
        Ok(r.get("rc").map(String::as_str) == Some("0"))
    }

    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        match &mut self.conn {
            None => {
                self.singleton_kvs.insert(key.into(), value.into());
                Ok(())
            }
            Some(c) if c.v2 => c.call_v2("kvs-put", &[("key", key), ("value", value)]).map(|_| ()),
            Some(c) => {
                let line = format!("cmd=put kvsname={} key={key} value={value}\n", self.kvsname);
                let r = c.call(&line, "put_result")?;
                if r.get("rc").map(String::as_str) != Some("0") {
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
                let mut r = c.call_v2("kvs-get", &[("key", key)])?;
                if r.get("found").map(String::as_str) != Some("TRUE") {
                    return Err(PmiError::NotFound(key.into()));
                }
                Ok(r.remove("value").unwrap_or_default())
            }
            Some(c) => {
                let line = format!("cmd=get kvsname={} key={key}\n", self.kvsname);
                let mut r = c.call(&line, "get_result")?;
                if r.get("rc").map(String::as_str) != Some("0") {
                    return Err(PmiError::NotFound(key.into()));
                }
                Ok(r.remove("value").unwrap_or_default())
            }
        }
    }

    pub fn barrier(&mut self) -> Result<(), PmiError> {
        match &mut self.conn {
            None => Ok(()),
            Some(c) if c.v2 => c.call_v2("kvs-fence", &[]).map(|_| ()),
            Some(c) => c.call("cmd=barrier_in\n", "barrier_out").map(|_| ()),
        }
    }

    pub fn finalize(&mut self) -> Result<(), PmiError> {
        match self.conn.take() {
            Some(mut c) if c.v2 => {
                c.call_v2("finalize", &[])?;
            }
            Some(mut c) => {
                c.call("cmd=finalize\n", "finalize_ack")?;
            }
            None => {}
        }
        Ok(())
    }

    /// Asks the launcher to end the job. Does not wait for an answer.
    pub fn abort(&mut self, code: i32, msg: &str) {
        if let Some(c) = &mut self.conn {
            let msg: String = msg.chars().map(|ch| if ch.is_whitespace() { '_' } else { ch }).collect();
            if c.v2 {
                let code = code.to_string();
                // `isworld` is the PMI-2 key (Slurm cancels the step only
                // when it is TRUE); `exitcode` is not PMI-2, only some
                // launchers use it.
                let _ = c.send_v2("abort", &[("isworld", "TRUE"), ("exitcode", &code), ("msg", &msg)]);
            } else {
                let _ = c.send(&format!("cmd=abort exitcode={code} msg={msg}\n"));
            }
        }
    }
}

/// Parses hydra's `PMI_process_mapping` value `(vector,(start,nnodes,ppn),...)`
/// into the node index of every rank.
pub fn parse_process_mapping(value: &str, size: usize) -> Option<Vec<usize>> {
    let body = value.trim().strip_prefix("(vector,")?.strip_suffix(')')?;
    let mut nodes = Vec::with_capacity(size);
    for block in body.split("),") {
        let nums: Vec<usize> = block
            .trim_matches(|c| c == '(' || c == ')')
            .split(',')
            .map(|s| s.trim().parse().ok())
            .collect::<Option<_>>()?;
        let [start, nnodes, ppn] = nums[..] else { return None };
        for n in 0..nnodes {
            for _ in 0..ppn {
                nodes.push(start + n);
            }
        }
    }
    // The mapping repeats cyclically when it covers fewer ranks than the job.
    if nodes.is_empty() {
        return None;
    }
    let period = nodes.len();
    Some((0..size).map(|r| nodes[r % period]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_fields() {
        let m = parse_v2("cmd=kvs-get-response;found=TRUE;value=a;;b=c;rc=0;");
        assert_eq!(m["cmd"], "kvs-get-response");
        assert_eq!(m["value"], "a;b=c");
        assert_eq!(m["rc"], "0");
        assert_eq!(v2_escape("x;y"), "x;;y");
    }

    #[test]
    fn mapping() {
        assert_eq!(parse_process_mapping("(vector,(0,1,4))", 4), Some(vec![0, 0, 0, 0]));
        assert_eq!(parse_process_mapping("(vector,(0,2,2))", 4), Some(vec![0, 0, 1, 1]));
        assert_eq!(parse_process_mapping("(vector,(0,2,1))", 4), Some(vec![0, 1, 0, 1]));
        assert_eq!(parse_process_mapping("(vector,(0,1,2),(1,1,1))", 3), Some(vec![0, 0, 1]));
        assert_eq!(parse_process_mapping("garbage", 2), None);
    }
}
