//! The PMI server of the launcher: the key-value space, barriers and the name
//! service of one job, speaking the PMI-1 wire protocol (and PMI-2 after a
//! `cmd=init pmi_version=2` handshake) with every rank.
//!
//! The wire formats are `mpi-pmi`'s, the same code the library's client
//! uses; this module holds what the server does with the messages.
//!
//! This module does no I/O. The launcher feeds it the bytes read from rank
//! R's socket ([`PmiServer::receive`]) and writes out what
//! [`PmiServer::pending_output`] holds; events that concern the whole job
//! (MPI_Abort) come out of [`PmiServer::take_events`].

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use mpi_pmi::{take_frame, Frame, Message, SpawnSegment, Wire, KEYLEN_MAX, KVSNAME_MAX, VALLEN_MAX};

/// What the launcher must act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PmiEvent {
    /// Rank `rank` asked to abort the job (MPI_Abort).
    Abort { rank: usize, code: i32, message: Option<String> },
    /// Rank `rank` broke the protocol; its connection is closed.
    ProtocolError { rank: usize, message: String },
    /// Rank `rank` asked for a new job (`mcmd=spawn`, MPI_Comm_spawn):
    /// its programs, and the keys to put in the new job's key-value space.
    /// Answer with [`PmiServer::spawn_result`].
    Spawn { rank: usize, apps: Vec<SpawnApp>, preput: Vec<(String, String)> },
}

/// A spawn request being received: its programs and preput keys.
type SpawnRequest = (Vec<SpawnApp>, Vec<(String, String)>);

/// One program of a spawn request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpawnApp {
    pub nprocs: usize,
    pub exe: String,
    pub args: Vec<String>,
    pub info: Vec<(String, String)>,
}

/// What a connection waits for before its next message is handled.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Wait {
    None,
    /// In a barrier (`barrier_in` or PMI-2 `kvs-fence`).
    Barrier {
        wire: Wire,
        thrid: Option<String>,
    },
    /// PMI-2 `info-getnodeattr` with `wait=TRUE` for a key not yet put.
    NodeAttr {
        key: String,
        thrid: Option<String>,
    },
}

#[derive(Debug)]
struct Conn {
    input: Vec<u8>,
    output: Vec<u8>,
    wire: Wire,
    wait: Wait,
    open: bool,
    finalized: bool,
}

/// Static facts about the job the server answers with.
#[derive(Debug, Clone)]
pub struct JobInfo {
    /// The name of the job's key-value space (unique per job).
    pub kvsname: String,
    /// The application number of each rank (MPMD index), one entry per rank.
    pub appnums: Vec<usize>,
    /// `PMI_process_mapping` (see [`mpi_pmi::format_process_mapping`]).
    pub mapping: String,
}

/// The PMI server state of one job.
#[derive(Debug)]
pub struct PmiServer {
    info: JobInfo,
    kvs: HashMap<String, String>,
    node_attrs: HashMap<String, String>,
    names: HashMap<String, String>,
    conns: Vec<Conn>,
    in_barrier: usize,
    exited: BTreeSet<usize>,
    /// Failures are tolerated (`-disable-auto-cleanup`): a rank that ended
    /// counts as arrived in the barriers.
    pub tolerate_exits: bool,
    events: Vec<PmiEvent>,
    /// Spawn requests being received, by rank (one segment per program).
    spawning: HashMap<usize, SpawnRequest>,
    trace: bool,
    trace_lines: Vec<String>,
}

/// A PMI-1 reply.
fn v1(cmd: &str, args: &[(&str, &str)]) -> String {
    args.iter().fold(Message::new(cmd), |msg, &(k, v)| msg.with(k, v)).to_v1_line()
}

/// A PMI-2 reply, with the request's `thrid` (if it had one) first.
fn v2(cmd: &str, thrid: Option<&str>, args: &[(&str, &str)]) -> String {
    let mut msg = Message::new(cmd);
    if let Some(thrid) = thrid {
        msg.push("thrid", thrid);
    }
    args.iter().fold(msg, |msg, &(k, v)| msg.with(k, v)).to_v2()
}

/// `0-2,5` style list of ranks.
fn rank_ranges(ranks: &BTreeSet<usize>) -> String {
    let mut out = String::new();
    let mut iter = ranks.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
    }
    out
}

impl PmiServer {
    /// A server for a job with one rank per entry of `info.appnums`.
    pub fn new(info: JobInfo, trace: bool) -> Self {
        let conns = (0..info.appnums.len())
            .map(|_| Conn {
                input: Vec::new(),
                output: Vec::new(),
                wire: Wire::V1,
                wait: Wait::None,
                open: true,
                finalized: false,
            })
            .collect();
        PmiServer {
            info,
            kvs: HashMap::new(),
            node_attrs: HashMap::new(),
            names: HashMap::new(),
            conns,
            in_barrier: 0,
            exited: BTreeSet::new(),
            tolerate_exits: false,
            events: Vec::new(),
            spawning: HashMap::new(),
            trace,
            trace_lines: Vec::new(),
        }
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> usize {
        self.conns.len()
    }

    /// The job's key-value space name.
    pub fn kvsname(&self) -> &str {
        &self.info.kvsname
    }

    /// Handles bytes read from rank `rank`'s connection.
    pub fn receive(&mut self, rank: usize, data: &[u8]) {
        let Some(conn) = self.conns.get_mut(rank) else { return };
        if !conn.open {
            return;
        }
        conn.input.extend_from_slice(data);
        self.process(rank);
    }

    /// Rank `rank` closed its connection (or the launcher gave up on it).
    pub fn close(&mut self, rank: usize) {
        if let Some(conn) = self.conns.get_mut(rank) {
            conn.open = false;
            conn.input.clear();
            conn.output.clear();
        }
    }

    /// Whether rank `rank`'s connection is still in use.
    pub fn is_open(&self, rank: usize) -> bool {
        self.conns.get(rank).is_some_and(|c| c.open)
    }

    /// Whether rank `rank` sent `finalize`.
    pub fn finalized(&self, rank: usize) -> bool {
        self.conns.get(rank).is_some_and(|c| c.finalized)
    }

    /// Records that rank `rank`'s process has ended (for `PMI_dead_processes`).
    pub fn process_exited(&mut self, rank: usize) {
        self.exited.insert(rank);
        if self.tolerate_exits && self.in_barrier > 0 && self.barrier_full() {
            self.release_barrier();
        }
    }

    /// Whether every rank is in the barrier (or, with exits tolerated, ended).
    fn barrier_full(&self) -> bool {
        let gone = if self.tolerate_exits {
            self.exited.iter().filter(|&&r| !matches!(self.conns[r].wait, Wait::Barrier { .. })).count()
        } else {
            0
        };
        self.in_barrier + gone >= self.size()
    }

    /// Bytes waiting to be written to rank `rank`; the caller drains what it
    /// manages to write.
    pub fn pending_output(&mut self, rank: usize) -> Option<&mut Vec<u8>> {
        self.conns.get_mut(rank).filter(|c| c.open).map(|c| &mut c.output)
    }

    /// A rank that can no longer join the barrier other ranks wait in (its
    /// process ended or its connection closed): the job is deadlocked.
    pub fn stalled_barrier(&self) -> Option<usize> {
        if self.in_barrier == 0 || self.tolerate_exits {
            return None;
        }
        (0..self.size()).find(|&r| {
            let c = &self.conns[r];
            !matches!(c.wait, Wait::Barrier { .. }) && (!c.open || self.exited.contains(&r))
        })
    }

    /// How many reply bytes wait for rank `rank`.
    pub fn pending_output_len(&self, rank: usize) -> usize {
        self.conns.get(rank).filter(|c| c.open).map_or(0, |c| c.output.len())
    }

    /// Events since the last call.
    pub fn take_events(&mut self) -> Vec<PmiEvent> {
        std::mem::take(&mut self.events)
    }

    /// Records a trace line (with tracing on); see [`PmiServer::take_trace`].
    fn note(&mut self, line: impl FnOnce() -> String) {
        if self.trace {
            self.trace_lines.push(line());
        }
    }

    /// The trace of the PMI traffic since the last call (empty unless the
    /// server was created with tracing on).
    pub fn take_trace(&mut self) -> Vec<String> {
        std::mem::take(&mut self.trace_lines)
    }

    fn send(&mut self, rank: usize, text: &str) {
        self.note(|| format!("[pmi] to rank {rank}: {}", text.trim_end()));
        self.conns[rank].output.extend_from_slice(text.as_bytes());
    }

    fn protocol_error(&mut self, rank: usize, message: String) {
        self.events.push(PmiEvent::ProtocolError { rank, message });
        self.close(rank);
    }

    /// Takes the next complete message off rank `rank`'s input, if any.
    fn next_frame(&mut self, rank: usize) -> Result<Option<Frame>, mpi_pmi::DecodeError> {
        let conn = &mut self.conns[rank];
        take_frame(&mut conn.input, conn.wire)
    }

    /// Handles the complete messages of rank `rank` until it waits.
    fn process(&mut self, rank: usize) {
        while self.conns[rank].open && self.conns[rank].wait == Wait::None {
            let frame = match self.next_frame(rank) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    self.protocol_error(rank, e.to_string());
                    break;
                }
            };
            match frame {
                Frame::V1(line) => {
                    self.note(|| format!("[pmi] from rank {rank}: {line}"));
                    let line = line.trim_end_matches('\r');
                    if line.trim().is_empty() {
                        continue;
                    }
                    match Message::parse_v1_line(line) {
                        Ok(msg) => self.handle_v1(rank, msg),
                        Err(_) => self.protocol_error(rank, format!("malformed PMI-1 line {line:?}")),
                    }
                }
                Frame::Mcmd(block) => {
                    self.note(|| format!("[pmi] from rank {rank}: {}", block.trim_end()));
                    self.handle_spawn_v1(rank, &block);
                }
                Frame::V2(body) => {
                    self.note(|| format!("[pmi] from rank {rank}: {body}"));
                    match Message::parse_v2_body(&body) {
                        Ok(msg) => self.handle_v2(rank, msg),
                        Err(_) => self.protocol_error(rank, format!("malformed PMI-2 message {body:?}")),
                    }
                }
            }
        }
    }

    /// The value of a key for `get`: reserved keys first, then the KVS.
    fn lookup(&self, key: &str) -> Option<String> {
        match key {
            "PMI_process_mapping" => Some(self.info.mapping.clone()),
            "PMI_dead_processes" => Some(rank_ranges(&self.exited)),
            "universeSize" => Some(self.size().to_string()),
            _ => self.kvs.get(key).cloned(),
        }
    }

    fn is_reserved(key: &str) -> bool {
        matches!(key, "PMI_process_mapping" | "PMI_dead_processes")
    }

    fn handle_v1(&mut self, rank: usize, msg: Message) {
        let size = self.size().to_string();
        match msg.cmd.as_str() {
            "init" => {
                let (wire, accepted) = match msg.get("pmi_version").unwrap_or("1") {
                    "1" => (Wire::V1, true),
                    "2" => (Wire::V2, true),
                    _ => (Wire::V1, false),
                };
                self.send(rank, &mpi_pmi::init_response(wire, accepted).to_v1_line());
                self.conns[rank].wire = wire;
            }
            "initack" => {
                let r = rank.to_string();
                let text = v1("initack", &[])
                    + &v1("set", &[("size", &size)])
                    + &v1("set", &[("rank", &r)])
                    + &v1("set", &[("debug", "0")]);
                self.send(rank, &text);
            }
            "get_maxes" => {
                let (k, l, v) = (KVSNAME_MAX.to_string(), KEYLEN_MAX.to_string(), VALLEN_MAX.to_string());
                self.send(rank, &v1("maxes", &[("kvsname_max", &k), ("keylen_max", &l), ("vallen_max", &v)]));
            }
            "get_appnum" => {
                let app = self.info.appnums[rank].to_string();
                self.send(rank, &v1("appnum", &[("appnum", &app)]));
            }
            "get_my_kvsname" => {
                let name = self.info.kvsname.clone();
                self.send(rank, &v1("my_kvsname", &[("kvsname", &name)]));
            }
            "get_universe_size" => self.send(rank, &v1("universe_size", &[("size", &size)])),
            "put" => {
                let reply = match (msg.get("key"), msg.get("kvsname")) {
                    (_, Some(k)) if k != self.info.kvsname => {
                        v1("put_result", &[("rc", "-1"), ("msg", "unknown_kvsname")])
                    }
                    (None, _) | (Some(""), _) => v1("put_result", &[("rc", "-1"), ("msg", "missing_key")]),
                    (Some(key), _) if Self::is_reserved(key) => {
                        v1("put_result", &[("rc", "-1"), ("msg", "reserved_key")])
                    }
                    (Some(key), _) => {
                        let value = msg.get("value").unwrap_or("").to_string();
                        self.kvs.insert(key.to_string(), value);
                        v1("put_result", &[("rc", "0"), ("msg", "success")])
                    }
                };
                self.send(rank, &reply);
            }
            "get" => {
                let reply = match (msg.get("key"), msg.get("kvsname")) {
                    (_, Some(k)) if k != self.info.kvsname => {
                        v1("get_result", &[("rc", "-1"), ("msg", "unknown_kvsname"), ("value", "unknown")])
                    }
                    (Some(key), _) => match self.lookup(key) {
                        Some(value) => v1("get_result", &[("rc", "0"), ("msg", "success"), ("value", &value)]),
                        None => v1("get_result", &[("rc", "-1"), ("msg", "key_not_found"), ("value", "unknown")]),
                    },
                    (None, _) => v1("get_result", &[("rc", "-1"), ("msg", "missing_key"), ("value", "unknown")]),
                };
                self.send(rank, &reply);
            }
            "barrier_in" => self.enter_barrier(rank, Wire::V1, None),
            "finalize" => {
                self.conns[rank].finalized = true;
                self.send(rank, &v1("finalize_ack", &[]));
            }
            "abort" => {
                let code = msg.get("exitcode").and_then(|c| c.parse().ok()).unwrap_or(1);
                let message = msg.get("message").or_else(|| msg.get("msg")).map(mpi_pmi::unescape_v1);
                self.events.push(PmiEvent::Abort { rank, code, message });
            }
            "publish_name" => {
                let reply = match (msg.get("service"), msg.get("port")) {
                    (Some(s), Some(p)) if !self.names.contains_key(s) => {
                        self.names.insert(s.to_string(), p.to_string());
                        v1("publish_result", &[("rc", "0"), ("msg", "success")])
                    }
                    (Some(_), Some(_)) => v1("publish_result", &[("rc", "-1"), ("msg", "service_already_published")]),
                    _ => v1("publish_result", &[("rc", "-1"), ("msg", "missing_service_or_port")]),
                };
                self.send(rank, &reply);
            }
            "unpublish_name" => {
                let removed = msg.get("service").and_then(|s| self.names.remove(s)).is_some();
                let reply = if removed {
                    v1("unpublish_result", &[("rc", "0"), ("msg", "success")])
                } else {
                    v1("unpublish_result", &[("rc", "-1"), ("msg", "service_not_found")])
                };
                self.send(rank, &reply);
            }
            "lookup_name" => {
                let reply = match msg.get("service").and_then(|s| self.names.get(s)) {
                    Some(port) => v1("lookup_result", &[("rc", "0"), ("msg", "success"), ("port", port)]),
                    None => v1("lookup_result", &[("rc", "-1"), ("msg", "service_not_found")]),
                };
                self.send(rank, &reply);
            }
            other => {
                let reply = v1(&format!("{other}_result"), &[("rc", "-1"), ("msg", "unknown_command")]);
                self.send(rank, &reply);
            }
        }
    }

    /// `mcmd=spawn` blocks, one per program: collected until the last
    /// (`spawnssofar` = `totspawns`), then handed to the launcher as a
    /// [`PmiEvent::Spawn`].
    fn handle_spawn_v1(&mut self, rank: usize, block: &str) {
        let segment = match Message::parse_mcmd(block) {
            Ok(msg) => SpawnSegment::from_message(&msg),
            Err(e) => return self.protocol_error(rank, e.to_string()),
        };
        let last = segment.is_last();
        let entry = self.spawning.entry(rank).or_default();
        entry.0.push(SpawnApp {
            nprocs: segment.nprocs,
            exe: segment.execname,
            args: segment.args,
            info: segment.info,
        });
        entry.1.extend(segment.preput);
        if last {
            let (apps, preput) = self.spawning.remove(&rank).unwrap_or_default();
            self.events.push(PmiEvent::Spawn { rank, apps, preput });
        }
    }

    /// Answers rank `rank`'s spawn request.
    pub fn spawn_result(&mut self, rank: usize, ok: bool, msg: &str) {
        let msg = msg.replace(char::is_whitespace, "_");
        self.send(rank, &v1("spawn_result", &[("rc", if ok { "0" } else { "-1" }), ("msg", &msg)]));
    }

    fn handle_v2(&mut self, rank: usize, msg: Message) {
        let thrid = msg.get("thrid").map(str::to_string);
        let t = thrid.as_deref();
        let size = self.size().to_string();
        match msg.cmd.as_str() {
            "fullinit" => {
                let r = rank.to_string();
                let app = self.info.appnums[rank].to_string();
                let reply = v2(
                    "fullinit-response",
                    t,
                    &[
                        ("pmi-version", "2"),
                        ("pmi-subversion", "0"),
                        ("rank", &r),
                        ("size", &size),
                        ("appnum", &app),
                        ("debugged", "FALSE"),
                        ("pmiverbose", "FALSE"),
                        ("rc", "0"),
                    ],
                );
                self.send(rank, &reply);
            }
            "job-getid" => {
                let name = self.info.kvsname.clone();
                self.send(rank, &v2("job-getid-response", t, &[("jobid", &name), ("rc", "0")]));
            }
            "kvs-put" => {
                let reply = match msg.get("key") {
                    Some(key) if !key.is_empty() && !Self::is_reserved(key) => {
                        self.kvs.insert(key.to_string(), msg.get("value").unwrap_or("").to_string());
                        v2("kvs-put-response", t, &[("rc", "0")])
                    }
                    _ => v2("kvs-put-response", t, &[("rc", "-1"), ("errmsg", "bad key")]),
                };
                self.send(rank, &reply);
            }
            "kvs-get" | "info-getjobattr" => {
                let response = mpi_pmi::v2_response_name(&msg.cmd);
                let reply = match msg.get("key").and_then(|k| self.lookup(k)) {
                    Some(value) => v2(&response, t, &[("found", "TRUE"), ("value", &value), ("rc", "0")]),
                    None => v2(&response, t, &[("found", "FALSE"), ("rc", "0")]),
                };
                self.send(rank, &reply);
            }
            "kvs-fence" => self.enter_barrier(rank, Wire::V2, thrid),
            "info-putnodeattr" => {
                if let Some(key) = msg.get("key") {
                    self.node_attrs.insert(key.to_string(), msg.get("value").unwrap_or("").to_string());
                    self.wake_node_attr_waiters(key);
                }
                self.send(rank, &v2("info-putnodeattr-response", t, &[("rc", "0")]));
            }
            "info-getnodeattr" => {
                let key = msg.get("key").unwrap_or("").to_string();
                match self.node_attrs.get(&key) {
                    Some(value) => {
                        let reply =
                            v2("info-getnodeattr-response", t, &[("found", "TRUE"), ("value", value), ("rc", "0")]);
                        self.send(rank, &reply);
                    }
                    None if msg.get("wait") == Some("TRUE") => {
                        self.conns[rank].wait = Wait::NodeAttr { key, thrid };
                    }
                    None => {
                        self.send(rank, &v2("info-getnodeattr-response", t, &[("found", "FALSE"), ("rc", "0")]));
                    }
                }
            }
            "finalize" => {
                self.conns[rank].finalized = true;
                self.send(rank, &v2("finalize-response", t, &[("rc", "0")]));
            }
            "abort" => {
                let code = msg.get("exitcode").and_then(|c| c.parse().ok()).unwrap_or(1);
                let message = msg.get("msg").or_else(|| msg.get("message")).map(str::to_string);
                self.events.push(PmiEvent::Abort { rank, code, message });
            }
            "name-publish" => {
                let reply = match (msg.get("name"), msg.get("port")) {
                    (Some(n), Some(p)) if !self.names.contains_key(n) => {
                        self.names.insert(n.to_string(), p.to_string());
                        v2("name-publish-response", t, &[("rc", "0")])
                    }
                    _ => v2("name-publish-response", t, &[("rc", "-1"), ("errmsg", "cannot publish")]),
                };
                self.send(rank, &reply);
            }
            "name-unpublish" => {
                let removed = msg.get("name").and_then(|n| self.names.remove(n)).is_some();
                let rc = if removed { "0" } else { "-1" };
                self.send(rank, &v2("name-unpublish-response", t, &[("rc", rc)]));
            }
            "name-lookup" => {
                let reply = match msg.get("name").and_then(|n| self.names.get(n)) {
                    Some(port) => v2("name-lookup-response", t, &[("port", port), ("found", "TRUE"), ("rc", "0")]),
                    None => v2("name-lookup-response", t, &[("found", "FALSE"), ("rc", "-1")]),
                };
                self.send(rank, &reply);
            }
            "spawn" => {
                self.send(rank, &v2("spawn-response", t, &[("rc", "-1"), ("errmsg", "spawn not supported")]));
            }
            other => {
                let reply = v2(&mpi_pmi::v2_response_name(other), t, &[("rc", "-1"), ("errmsg", "unknown command")]);
                self.send(rank, &reply);
            }
        }
    }

    fn wake_node_attr_waiters(&mut self, key: &str) {
        let Some(value) = self.node_attrs.get(key).cloned() else { return };
        for r in 0..self.size() {
            if let Wait::NodeAttr { key: k, thrid } = &self.conns[r].wait {
                if k == key {
                    let reply = v2(
                        "info-getnodeattr-response",
                        thrid.as_deref(),
                        &[("found", "TRUE"), ("value", &value), ("rc", "0")],
                    );
                    self.conns[r].wait = Wait::None;
                    self.send(r, &reply);
                    self.process(r);
                }
            }
        }
    }

    fn enter_barrier(&mut self, rank: usize, wire: Wire, thrid: Option<String>) {
        self.conns[rank].wait = Wait::Barrier { wire, thrid };
        self.in_barrier += 1;
        if !self.barrier_full() {
            return;
        }
        self.release_barrier();
    }

    /// Everybody is in: releases them all, then lets each go on with the
    /// messages it sent after entering.
    fn release_barrier(&mut self) {
        self.in_barrier = 0;
        for r in 0..self.size() {
            if let Wait::Barrier { wire, thrid } = std::mem::replace(&mut self.conns[r].wait, Wait::None) {
                let reply = match wire {
                    Wire::V1 => v1("barrier_out", &[]),
                    Wire::V2 => v2("kvs-fence-response", thrid.as_deref(), &[("rc", "0")]),
                };
                if self.conns[r].open {
                    self.send(r, &reply);
                }
            }
        }
        for r in 0..self.size() {
            self.process(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(n: usize) -> PmiServer {
        let mapping = mpi_pmi::format_process_mapping(&vec![0; n]);
        PmiServer::new(JobInfo { kvsname: "kvs_test".into(), appnums: vec![0; n], mapping }, false)
    }

    fn out(s: &mut PmiServer, rank: usize) -> String {
        let buf = s.pending_output(rank).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        buf.clear();
        text
    }

    #[test]
    fn init_and_queries() {
        let mut s = server(3);
        s.receive(1, b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_maxes\ncmd=get_appnum\n");
        assert_eq!(
            out(&mut s, 1),
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n\
             cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n\
             cmd=appnum appnum=0\n"
        );
        s.receive(1, b"cmd=get_my_kvsname\ncmd=get_universe_size\n");
        assert_eq!(out(&mut s, 1), "cmd=my_kvsname kvsname=kvs_test\ncmd=universe_size size=3\n");
        s.receive(1, b"cmd=get kvsname=kvs_test key=PMI_process_mapping\n");
        assert_eq!(out(&mut s, 1), "cmd=get_result rc=0 msg=success value=(vector,(0,1,3))\n");
    }

    #[test]
    fn put_get_and_partial_lines() {
        let mut s = server(2);
        s.receive(0, b"cmd=put kvsname=kvs_test key=a val");
        assert_eq!(out(&mut s, 0), "");
        s.receive(0, b"ue=x=1\n");
        assert_eq!(out(&mut s, 0), "cmd=put_result rc=0 msg=success\n");
        s.receive(1, b"cmd=get kvsname=kvs_test key=a\ncmd=get kvsname=kvs_test key=b\n");
        assert_eq!(
            out(&mut s, 1),
            "cmd=get_result rc=0 msg=success value=x=1\n\
             cmd=get_result rc=-1 msg=key_not_found value=unknown\n"
        );
        s.receive(1, b"cmd=get kvsname=other key=a\n");
        assert!(out(&mut s, 1).starts_with("cmd=get_result rc=-1"));
    }

    #[test]
    fn barrier_holds_later_commands() {
        let mut s = server(2);
        s.receive(0, b"cmd=barrier_in\ncmd=get kvsname=kvs_test key=k\n");
        assert_eq!(out(&mut s, 0), "");
        s.receive(1, b"cmd=put kvsname=kvs_test key=k value=v\n");
        assert_eq!(out(&mut s, 1), "cmd=put_result rc=0 msg=success\n");
        assert_eq!(out(&mut s, 0), "");
        s.receive(1, b"cmd=barrier_in\n");
        assert_eq!(out(&mut s, 0), "cmd=barrier_out\ncmd=get_result rc=0 msg=success value=v\n");
        assert_eq!(out(&mut s, 1), "cmd=barrier_out\n");
        // A second barrier works the same.
        s.receive(1, b"cmd=barrier_in\n");
        s.receive(0, b"cmd=barrier_in\n");
        assert_eq!(out(&mut s, 0), "cmd=barrier_out\n");
        assert_eq!(out(&mut s, 1), "cmd=barrier_out\n");
    }

    #[test]
    fn barrier_with_a_departed_rank_is_stalled() {
        let mut s = server(3);
        s.receive(0, b"cmd=barrier_in\n");
        assert_eq!(s.stalled_barrier(), None);
        s.process_exited(2);
        assert_eq!(s.stalled_barrier(), Some(2));
        let mut s = server(2);
        s.close(1);
        assert_eq!(s.stalled_barrier(), None);
        s.receive(0, b"cmd=barrier_in\n");
        assert_eq!(s.stalled_barrier(), Some(1));
    }

    #[test]
    fn abort_and_finalize() {
        let mut s = server(1);
        s.receive(0, b"cmd=abort exitcode=7 message=bad\\ thing\n");
        assert_eq!(s.take_events(), vec![PmiEvent::Abort { rank: 0, code: 7, message: Some("bad thing".into()) }]);
        s.receive(0, b"cmd=finalize\n");
        assert_eq!(out(&mut s, 0), "cmd=finalize_ack\n");
        assert!(s.finalized(0));
    }

    #[test]
    fn names() {
        let mut s = server(2);
        s.receive(0, b"cmd=publish_name service=svc port=tcp://x:1\n");
        assert_eq!(out(&mut s, 0), "cmd=publish_result rc=0 msg=success\n");
        s.receive(1, b"cmd=lookup_name service=svc\n");
        assert_eq!(out(&mut s, 1), "cmd=lookup_result rc=0 msg=success port=tcp://x:1\n");
        s.receive(1, b"cmd=unpublish_name service=svc\ncmd=lookup_name service=svc\n");
        assert_eq!(
            out(&mut s, 1),
            "cmd=unpublish_result rc=0 msg=success\ncmd=lookup_result rc=-1 msg=service_not_found\n"
        );
    }

    #[test]
    fn dead_processes() {
        let mut s = server(6);
        for r in [0, 1, 2, 4] {
            s.process_exited(r);
        }
        s.receive(5, b"cmd=get kvsname=kvs_test key=PMI_dead_processes\n");
        assert_eq!(out(&mut s, 5), "cmd=get_result rc=0 msg=success value=0-2,4\n");
    }

    #[test]
    fn spawn_segments_make_one_request() {
        let mut s = server(1);
        s.receive(0, b"mcmd=spawn\nnprocs=1\nexecname=a\ntotspawns=2\nspawnssofar=1\nargcnt=2\narg1=x y\narg2=z\npreput_num=1\npreput_key_0=PARENT_ROOT_PORT_NAME\npreput_val_0=p:1\ninfo_num=0\nendcmd\n");
        assert_eq!(out(&mut s, 0), "");
        assert!(s.take_events().is_empty());
        s.receive(0, b"mcmd=spawn\nnprocs=3\nexecname=b\ntotspawns=2\nspawnssofar=2\nargcnt=0\ninfo_num=1\ninfo_key_0=wdir\ninfo_val_0=/tmp\nendcmd\n");
        let ev = s.take_events();
        let [PmiEvent::Spawn { rank: 0, apps, preput }] = &ev[..] else { panic!("{ev:?}") };
        assert_eq!(
            apps[0],
            SpawnApp { nprocs: 1, exe: "a".into(), args: vec!["x y".into(), "z".into()], info: vec![] }
        );
        assert_eq!(
            apps[1],
            SpawnApp { nprocs: 3, exe: "b".into(), args: vec![], info: vec![("wdir".into(), "/tmp".into())] }
        );
        assert_eq!(preput, &[("PARENT_ROOT_PORT_NAME".to_string(), "p:1".to_string())]);
        s.spawn_result(0, false, "no such program");
        assert_eq!(out(&mut s, 0), "cmd=spawn_result rc=-1 msg=no_such_program\n");
    }

    fn v2_msg(body: &str) -> Vec<u8> {
        exp(body).into_bytes()
    }

    fn exp(body: &str) -> String {
        format!("{:<6}{body}", body.len())
    }

    #[test]
    fn pmi2_session() {
        let mut s = server(2);
        for r in 0..2 {
            s.receive(r, b"cmd=init pmi_version=2 pmi_subversion=0\n");
            assert_eq!(out(&mut s, r), "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n");
            s.receive(r, &v2_msg(&format!("cmd=fullinit;pmirank={r};threaded=FALSE;")));
            let reply = out(&mut s, r);
            assert!(reply.contains(&format!(";rank={r};size=2;")), "{reply}");
            assert_eq!(reply[..6].trim().parse::<usize>().unwrap(), reply.len() - 6);
        }
        s.receive(0, &v2_msg("cmd=kvs-put;key=k0;value=v0;"));
        assert_eq!(out(&mut s, 0), exp("cmd=kvs-put-response;rc=0;"));
        s.receive(0, &v2_msg("cmd=kvs-fence;thrid=0x1;"));
        assert_eq!(out(&mut s, 0), "");
        s.receive(1, &v2_msg("cmd=kvs-fence;"));
        assert_eq!(out(&mut s, 0), exp("cmd=kvs-fence-response;thrid=0x1;rc=0;"));
        assert_eq!(out(&mut s, 1), exp("cmd=kvs-fence-response;rc=0;"));
        s.receive(1, &v2_msg("cmd=kvs-get;jobid=kvs_test;srcid=-1;key=k0;"));
        assert_eq!(out(&mut s, 1), exp("cmd=kvs-get-response;found=TRUE;value=v0;rc=0;"));
        s.receive(1, &v2_msg("cmd=info-getnodeattr;key=n;wait=TRUE;"));
        assert_eq!(out(&mut s, 1), "");
        s.receive(0, &v2_msg("cmd=info-putnodeattr;key=n;value=1;"));
        assert_eq!(out(&mut s, 0), exp("cmd=info-putnodeattr-response;rc=0;"));
        assert_eq!(out(&mut s, 1), exp("cmd=info-getnodeattr-response;found=TRUE;value=1;rc=0;"));
        s.receive(1, &v2_msg("cmd=info-getjobattr;key=PMI_process_mapping;"));
        assert!(out(&mut s, 1).contains("found=TRUE;value=(vector,(0,1,2));"));
        s.receive(1, &v2_msg("cmd=abort;isworld=TRUE;msg=oops;"));
        assert_eq!(s.take_events(), vec![PmiEvent::Abort { rank: 1, code: 1, message: Some("oops".into()) }]);
    }

    #[test]
    fn pmi2_values_keep_their_semicolons() {
        // A client doubles `;` inside a value; the server stores the value
        // itself and doubles it again on the way out.
        let mut s = server(1);
        s.receive(0, b"cmd=init pmi_version=2 pmi_subversion=0\n");
        out(&mut s, 0);
        s.receive(0, &v2_msg("cmd=kvs-put;key=card;value=a;;b=c;;;"));
        assert_eq!(out(&mut s, 0), exp("cmd=kvs-put-response;rc=0;"));
        s.receive(0, &v2_msg("cmd=kvs-get;key=card;"));
        let reply = out(&mut s, 0);
        assert_eq!(reply, exp("cmd=kvs-get-response;found=TRUE;value=a;;b=c;;;rc=0;"));
        let msg = mpi_pmi::Message::parse_v2_body(&reply[6..]).unwrap();
        assert_eq!(msg.get("value"), Some("a;b=c;"));
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        let mut s = server(1);
        s.receive(0, b"hello\n");
        assert!(matches!(s.take_events()[..], [PmiEvent::ProtocolError { rank: 0, .. }]));
        assert!(!s.is_open(0));
    }
}
