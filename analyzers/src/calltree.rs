//! The call-tree profile: MPI time, calls, bytes and waiting per call path
//! and rank, as CUBE shows a metric by call path by process.
//!
//! The shim records call paths with `MPITRACE_CALLPATH=N` (the return
//! addresses from an MPI call site outwards, [`crate::model::CallPath`]).
//! Their frames, symbolized, make a tree: a node is a function reached
//! through the call sites above it (`main` > `solver_a` at `solver.c:12` >
//! `exchange` at `solver.c:30`), its children the functions it calls and,
//! as leaves, the MPI calls it makes (`MPI_Sendrecv` at `solver.c:18`). Two
//! solvers calling one `exchange()` make two `exchange` nodes.
//!
//! Metrics (all from the MPI calls of the trace, whole, `MPI_Init` and
//! `MPI_Finalize` included):
//! * *inclusive*: of every MPI call below the node;
//! * *exclusive*: of the MPI calls the node's function makes itself (its
//!   leaves); a leaf's exclusive metrics are its inclusive ones. The tree
//!   knows nothing of the time between MPI calls: a node's time is MPI time.
//! * `wait_ns`: time the calls lost in wait states (Late Sender, Late
//!   Receiver, the collective waits; [`crate::waitstates`]), each waiting
//!   call counted once, until the latest event it waited for.
//! * `bytes`: as in the profile (sent, received, contributed to a collective).
//! * `counters` (with `MPITRACE_COUNTERS`): the hardware counters of the
//!   compute intervals that ended at the calls, i.e. the work done before
//!   reaching this MPI call on this path (the text shows IPC when
//!   instructions and cycles were recorded).
//!
//! Per rank, `by_rank[r]` holds the inclusive metrics of rank `r`.
//! Calls of a trace without call paths, or recorded before the shim
//! recorded paths, have a path of one frame: their site.
//!
//! Paths are cut at the recorded depth, so they reach up to different
//! callers; those that reach the program's `main` (gfortran: `MAIN__`) are
//! rooted there (the C library's start-up frames above it are dropped), so
//! they meet in one tree. A path too short to reach `main` is rooted at its
//! outermost frame.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::{Model, NONE};
use crate::waitstates::Analysis;
use crate::{fmt_bytes, fmt_ns};

/// Metrics of a node (or of one rank at a node).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metrics {
    pub calls: u64,
    pub time_ns: i64,
    pub bytes: i64,
    pub wait_ns: i64,
    /// Hardware counters of the compute intervals that ended at these
    /// calls (in the order of [`CallTree::counters`]; empty without).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<u64>,
}

impl Metrics {
    fn add(&mut self, o: &Metrics) {
        self.calls += o.calls;
        self.time_ns += o.time_ns;
        self.bytes += o.bytes;
        self.wait_ns += o.wait_ns;
        if self.counters.len() < o.counters.len() {
            self.counters.resize(o.counters.len(), 0);
        }
        for (s, v) in self.counters.iter_mut().zip(&o.counters) {
            *s = s.wrapping_add(*v);
        }
    }
    /// Counter `name` of `names`, if recorded.
    pub fn counter(&self, names: &[String], name: &str) -> Option<u64> {
        names.iter().position(|n| n == name).and_then(|i| self.counters.get(i).copied())
    }
}

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A function of the program (or `module+0xOFFSET` where unsymbolized).
    Function,
    /// An MPI call (a leaf).
    Call,
}

/// One node of the call tree.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeNode {
    /// Index of the parent in [`CallTree::nodes`]; `None` for the outermost
    /// frames of the recorded paths.
    pub parent: Option<u32>,
    pub depth: u32,
    pub kind: Option<NodeKind>,
    /// Function or MPI procedure.
    pub name: String,
    /// Where the parent calls it (`file.c:42`); for an MPI call, where it
    /// is made. `None` at the outermost level, whose callers were not recorded.
    pub at: Option<String>,
    pub inclusive: Metrics,
    pub exclusive: Metrics,
    /// Inclusive metrics per rank (indexed by rank).
    pub by_rank: Vec<Metrics>,
}

/// The call tree of a trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallTree {
    /// Longest recorded call path (frames); 0 when the trace has none (the
    /// tree is then empty).
    pub depth: usize,
    /// Nodes in depth-first order, children by inclusive time, largest first.
    pub nodes: Vec<TreeNode>,
    /// The hardware counters of [`Metrics::counters`], when recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<String>,
}

impl CallTree {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
    /// The children of node `i` (`None`: the outermost nodes), in order.
    pub fn children(&self, i: Option<u32>) -> impl Iterator<Item = (u32, &TreeNode)> {
        self.nodes.iter().enumerate().filter(move |(_, n)| n.parent == i).map(|(j, n)| (j as u32, n))
    }
    /// The node reached from the outermost level by the names `path` (each
    /// a function, the last possibly an MPI call).
    pub fn find(&self, path: &[&str]) -> Option<&TreeNode> {
        let mut at: Option<u32> = None;
        for name in path {
            at = Some(self.children(at).find(|(_, n)| n.name == *name)?.0);
        }
        at.map(|i| &self.nodes[i as usize])
    }
}

/// Per rank: metrics per (site, call name) of its calls.
type RankSites = HashMap<(u32, u16), Metrics>;

/// The metrics of one rank's calls by (site, name); `counters` are the
/// trace's counter names.
fn rank_sites(m: &Model, rank: usize, waits: &Analysis, counters: &[String]) -> RankSites {
    let r = &m.ranks[rank];
    let mut out: RankSites = HashMap::new();
    for (k, t0, t1) in r.calls.timed_kinds() {
        let (name, _, site) = r.calls.kind(k);
        let e = out.entry((site, name)).or_default();
        e.calls += 1;
        e.time_ns += (t1 - t0).max(0);
    }
    let mut add = |call: u32, f: &dyn Fn(&mut Metrics)| {
        if call == NONE || call as usize >= r.calls.len() {
            return;
        }
        let c = r.calls.at(call as usize);
        f(out.entry((c.site, c.name)).or_default());
    };
    for s in r.sends.iter().chain(r.recvs.iter()) {
        if s.bytes > 0 {
            add(s.post, &|e| e.bytes += s.bytes);
        }
    }
    for o in &r.ops {
        if o.bytes > 0 {
            add(o.call, &|e| e.bytes += o.bytes);
        }
    }
    for c in &r.colls {
        let b = c.bytes.max(c.recv_bytes);
        if b > 0 {
            add(c.post, &|e| e.bytes += b);
        }
    }
    for cause in waits.causes.get(rank).map_or(&[][..], |v| &v[..]) {
        if (cause.call as usize) < r.calls.len() {
            let c = r.calls.at(cause.call as usize);
            let w = (cause.until.min(c.t_end) - c.t_start).max(0);
            add(cause.call, &|e| e.wait_ns += w);
        }
    }
    // The rank's counters in the trace's order.
    let index: Vec<usize> =
        r.counter_names.iter().map(|n| counters.iter().position(|c| c == n).unwrap_or(usize::MAX)).collect();
    for ((site, name), values) in &r.site_counters {
        let e = out.entry((*site, *name)).or_default();
        e.counters.resize(counters.len(), 0);
        for (&i, v) in index.iter().zip(values) {
            if let Some(s) = e.counters.get_mut(i) {
                *s = s.wrapping_add(*v);
            }
        }
    }
    out
}

/// A node's identity among its siblings.
type Key = (Option<u32>, NodeKind, String, Option<String>);

/// The labels of a site's path, outermost first: (function, where its
/// caller calls it), then the MPI call's location.
type Chain = (Vec<(String, Option<String>)>, Option<String>);

fn chain(m: &Model, site: u32) -> Chain {
    let s = &m.sites[site as usize];
    let frames: Vec<(u32, u64, u64)> = match m.paths.get(s.path as usize).filter(|_| s.path != NONE) {
        Some(p) => p.frames.iter().map(|f| (f.module, f.offset, f.addr)).collect(),
        None => vec![(s.module, s.offset, s.addr)],
    };
    let located = |&(module, offset, _): &(u32, u64, u64)| m.locations.get(&(module, offset));
    let function = |f: &(u32, u64, u64)| -> String {
        if let Some(name) = located(f).and_then(|l| l.function.clone()) {
            return name;
        }
        match m.modules.get(f.0 as usize) {
            Some(p) => format!("{}+{:#x}", p.rsplit('/').next().unwrap_or(p), f.1),
            None => format!("{:#x}", f.2),
        }
    };
    let at = |f: &(u32, u64, u64)| located(f).map(|l| l.short());
    // The program's main function roots the tree: what called it (the C
    // library's start-up) is left out, so that paths cut at the recorded
    // depth at different heights still meet at `main`.
    let names: Vec<String> = frames.iter().map(function).collect();
    let top = names.iter().rposition(|n| is_main(n)).map_or(frames.len(), |i| i + 1);
    let mut out = Vec::with_capacity(top);
    for i in (0..top).rev() {
        let caller_at = frames.get(i + 1).and_then(at);
        let caller_at = if i + 1 == top && top < frames.len() && is_main(&names[i]) { None } else { caller_at };
        out.push((names[i].clone(), caller_at));
    }
    (out, frames.first().and_then(at))
}

/// The entry of a program: C's `main`, gfortran's `MAIN__`.
fn is_main(function: &str) -> bool {
    matches!(function, "main" | "MAIN__")
}

/// The call tree of `m`, with the waiting time of `waits`.
pub fn call_tree(m: &Model, waits: &Analysis) -> CallTree {
    let depth = m.paths.iter().map(|p| p.frames.len()).max().unwrap_or(0);
    if depth == 0 {
        return CallTree::default();
    }
    let ranks = m.ranks.len();
    let mut counters: Vec<String> = Vec::new();
    for n in m.ranks.iter().flat_map(|r| &r.counter_names) {
        if !counters.contains(n) {
            counters.push(n.clone());
        }
    }
    let idx: Vec<usize> = (0..ranks).collect();
    let per_rank = crate::par_map(&idx, |&r| rank_sites(m, r, waits, &counters));
    let mut nodes: Vec<TreeNode> = Vec::new();
    let mut ids: HashMap<Key, u32> = HashMap::new();
    let mut chains: HashMap<u32, Chain> = HashMap::new();
    let mut node = |nodes: &mut Vec<TreeNode>, key: Key| -> u32 {
        *ids.entry(key.clone()).or_insert_with(|| {
            let depth = key.0.map_or(0, |p| nodes[p as usize].depth + 1);
            nodes.push(TreeNode {
                parent: key.0,
                depth,
                kind: Some(key.1),
                name: key.2,
                at: key.3,
                by_rank: vec![Metrics::default(); ranks],
                ..Default::default()
            });
            nodes.len() as u32 - 1
        })
    };
    for (rank, sites) in per_rank.iter().enumerate() {
        let mut sites: Vec<_> = sites.iter().collect();
        sites.sort_by_key(|(k, _)| **k);
        for (&(site, name), mx) in sites {
            let (funcs, call_at) = chains.entry(site).or_insert_with(|| chain(m, site)).clone();
            let mut parent = None;
            let mut path = Vec::with_capacity(funcs.len() + 1);
            for (f, at) in funcs {
                let id = node(&mut nodes, (parent, NodeKind::Function, f, at));
                path.push(id);
                parent = Some(id);
            }
            let leaf = node(&mut nodes, (parent, NodeKind::Call, m.name(name).to_string(), call_at));
            path.push(leaf);
            for &id in &path {
                let n = &mut nodes[id as usize];
                n.inclusive.add(mx);
                n.by_rank[rank].add(mx);
            }
            nodes[leaf as usize].exclusive.add(mx);
            if let Some(p) = parent {
                nodes[p as usize].exclusive.add(mx);
            }
        }
    }
    CallTree { depth, nodes: depth_first(nodes), counters }
}

/// The nodes in depth-first order, siblings by inclusive time (largest
/// first, then by name), parents renumbered.
fn depth_first(nodes: Vec<TreeNode>) -> Vec<TreeNode> {
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); nodes.len() + 1];
    for (i, n) in nodes.iter().enumerate() {
        children[n.parent.map_or(nodes.len(), |p| p as usize)].push(i as u32);
    }
    for c in &mut children {
        c.sort_by(|&a, &b| {
            let (a, b) = (&nodes[a as usize], &nodes[b as usize]);
            b.inclusive.time_ns.cmp(&a.inclusive.time_ns).then_with(|| (&a.name, &a.at).cmp(&(&b.name, &b.at)))
        });
    }
    let mut order = Vec::with_capacity(nodes.len());
    let mut stack: Vec<u32> = children[nodes.len()].iter().rev().copied().collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(children[i as usize].iter().rev());
    }
    let mut new_id = vec![0u32; nodes.len()];
    for (new, &old) in order.iter().enumerate() {
        new_id[old as usize] = new as u32;
    }
    let mut slots: Vec<Option<TreeNode>> = nodes.into_iter().map(Some).collect();
    order
        .iter()
        .map(|&old| {
            let mut n = slots[old as usize].take().unwrap_or_default();
            n.parent = n.parent.map(|p| new_id[p as usize]);
            n
        })
        .collect()
}

/// Most rows of the tree in the report's table.
pub const ROWS: usize = 60;

/// The report's section: the tree as an indented table.
pub fn document(t: &CallTree) -> Vec<crate::report::Block> {
    use crate::report::{Align, Block, Table, Tone};
    if t.is_empty() {
        return Vec::new();
    }
    let mut d = vec![Block::Heading("Call paths".into())];
    let total: i64 = t.nodes.iter().filter(|n| n.parent.is_none()).map(|n| n.inclusive.time_ns).sum();
    d.push(Block::Para(
        format!(
            "MPI time by call path (recorded to depth {}): inclusive of every MPI call below a function, \
             exclusive of the calls it makes itself; the rank with the most inclusive time",
            t.depth
        ),
        Tone::Dim,
    ));
    let mut tb = Table::new(&[
        ("call path", Align::Left),
        ("at", Align::Left),
        ("calls", Align::Right),
        ("time", Align::Right),
        ("%", Align::Right),
        ("exclusive", Align::Right),
        ("bytes", Align::Right),
        ("wait", Align::Right),
        ("max rank", Align::Left),
    ]);
    // With counters: the compute before the calls, as IPC when both
    // instructions and cycles were recorded, else the first counter.
    let ipc = t.counters.iter().any(|c| c == "instructions") && t.counters.iter().any(|c| c == "cycles");
    let counter_col =
        if ipc { Some("IPC before".to_string()) } else { t.counters.first().map(|c| format!("{c} before")) };
    if let Some(h) = &counter_col {
        tb.headers.push(h.clone());
        tb.align.push(Align::Right);
    }
    for n in t.nodes.iter().take(ROWS) {
        let share = if total > 0 { n.inclusive.time_ns as f64 / total as f64 } else { 0.0 };
        let max = n
            .by_rank
            .iter()
            .enumerate()
            .max_by_key(|(r, x)| (x.time_ns, std::cmp::Reverse(*r)))
            .filter(|(_, x)| x.calls > 0)
            .map(|(r, x)| format!("r{r} {}", fmt_ns(x.time_ns)))
            .unwrap_or_else(|| "-".into());
        let plain = |s: String| (s, Tone::Plain);
        tb.row(vec![
            (
                format!("{}{}", "  ".repeat(n.depth as usize), n.name),
                if n.kind == Some(NodeKind::Call) { Tone::Plain } else { Tone::Dim },
            ),
            plain(n.at.clone().unwrap_or_default()),
            plain(n.inclusive.calls.to_string()),
            plain(fmt_ns(n.inclusive.time_ns)),
            plain(format!("{:.1}%", 100.0 * share)),
            plain(if n.exclusive.calls > 0 { fmt_ns(n.exclusive.time_ns) } else { "-".into() }),
            plain(if n.inclusive.bytes > 0 { fmt_bytes(n.inclusive.bytes) } else { "-".into() }),
            plain(if n.inclusive.wait_ns > 0 { fmt_ns(n.inclusive.wait_ns) } else { "-".into() }),
            plain(max),
        ]);
        if counter_col.is_some() {
            let m = &n.inclusive;
            let cell = if ipc {
                match (m.counter(&t.counters, "instructions"), m.counter(&t.counters, "cycles")) {
                    (Some(i), Some(c)) if c > 0 => format!("{:.2}", i as f64 / c as f64),
                    _ => "-".into(),
                }
            } else {
                m.counters.first().map_or_else(|| "-".into(), |v| v.to_string())
            };
            if let Some(row) = tb.rows.last_mut() {
                row.push(plain(cell));
            }
        }
    }
    d.push(Block::Table(tb));
    if t.nodes.len() > ROWS {
        d.push(Block::Para(format!("... {} more nodes (all in --format json)", t.nodes.len() - ROWS), Tone::Dim));
    }
    d
}
