//! Collective operations: each instance across its ranks, and its costs.
//!
//! The shim numbers the collectives of each communicator on every member,
//! so the calls with equal (communicator, sequence number) on different
//! ranks are one instance. For each member we know when it arrived (entered
//! the call that started the operation), when it started waiting (the same
//! call, or the `Wait*` of a nonblocking collective) and when it left.
//!
//! Per member, the *wait* is the time it could not have done anything
//! useful because others were late, by the communication pattern of the
//! operation (clipped to the time it spent in the waiting call):
//! - N x N (Allreduce, Allgather, Alltoall, Reduce_scatter) and Barrier:
//!   until the last member arrived;
//! - 1 x N (Bcast, Scatter): non-roots until the root arrived;
//! - N x 1 (Reduce, Gather): the root until the first non-root arrived;
//! - Scan and others: until the last member arrived (reported as imbalance,
//!   no wait-state pattern).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::{Class, CollKind, Model, NONE};
use crate::Stats;

/// One member of an instance (40 bytes: one per collective call, the
/// largest part of the analysis on collective-heavy traces; where the rank
/// started to wait is read from the model, [`Member::wait_from`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub arrival: i64,
    pub end: i64,
    /// Waiting time by the pattern (see the module documentation).
    pub wait: i64,
    pub rank: u32,
    /// Index into the rank's `colls`.
    pub idx: u32,
    /// The rank waited for (last arriver, root, first sender), or -1.
    pub cause: i32,
}
const _: () = assert!(std::mem::size_of::<Member>() == 40);

/// One collective instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    pub comm: u32,
    pub seq: u32,
    pub name: u16,
    pub kind: CollKind,
    /// Range into [`Collectives::members`].
    pub first: u32,
    pub n: u32,
    /// Size of the communicator (0 if unknown).
    pub expected: u32,
    pub first_arrival: i64,
    pub last_arrival: i64,
    pub last_rank: i32,
    pub end: i64,
    /// Root as world rank, or `i32::MIN`.
    pub root: i32,
    /// Arrival of the root (or `i64::MIN`).
    pub root_arrival: i64,
    pub bytes: i64,
}

impl Member {
    const EMPTY: Member = Member { rank: 0, idx: 0, arrival: 0, end: 0, wait: 0, cause: -1 };

    /// Start of the call in which the rank waited (the post call, or the
    /// Wait* that completed it) and the end of that call.
    fn span(m: &Model, rank: u32, idx: u32) -> (i64, i64, i64) {
        let r = &m.ranks[rank as usize];
        let c = &r.colls[idx as usize];
        let post = &r.calls.at(c.post as usize);
        let (wait_from, end) = if c.done != NONE {
            let d = &r.calls.at(c.done as usize);
            (d.t_start.max(post.t_start), d.t_end.max(post.t_end))
        } else {
            (post.t_start, post.t_end)
        };
        (post.t_start, wait_from, end)
    }

    /// Start of the call in which the rank waited (post call or Wait*).
    pub fn wait_from(&self, m: &Model) -> i64 {
        Member::span(m, self.rank, self.idx).1
    }
}

impl Instance {
    const EMPTY: Instance = Instance {
        comm: 0,
        seq: 0,
        name: 0,
        kind: CollKind::Other,
        first: 0,
        n: 0,
        expected: 0,
        first_arrival: 0,
        last_arrival: 0,
        last_rank: -1,
        end: 0,
        root: i32::MIN,
        root_arrival: i64::MIN,
        bytes: 0,
    };
    pub fn spread(&self) -> i64 {
        self.last_arrival - self.first_arrival
    }
}

/// Costs of one (communicator, operation, size bucket).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CollSummary {
    pub comm: String,
    pub call: String,
    /// Bytes per rank (contributed or received, the larger) in `size_lo..=size_hi`.
    pub size_lo: i64,
    pub size_hi: i64,
    pub instances: u64,
    pub ranks: u32,
    /// Time in the operation summed over the members.
    pub time_ns: i64,
    /// Waiting time summed over the members.
    pub wait_ns: i64,
    pub mean_spread_ns: i64,
    pub max_spread_ns: i64,
    pub mean_duration_ns: i64,
    pub bytes: i64,
    /// The rank that arrived last most often, and how often (share of instances).
    pub last_rank: i32,
    pub last_rank_share: f64,
}

/// One instance, for the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InstanceInfo {
    pub comm: String,
    pub call: String,
    pub seq: u32,
    pub ranks: u32,
    pub start: i64,
    pub spread_ns: i64,
    pub duration_ns: i64,
    pub last_rank: i32,
    pub bytes: i64,
}

/// Serializable results.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CollReport {
    pub instances: u64,
    /// Instances some members of which are missing from the trace.
    pub incomplete: u64,
    /// Sorted by waiting time, largest first.
    pub summaries: Vec<CollSummary>,
    /// The instances with the largest arrival spread.
    pub worst: Vec<InstanceInfo>,
    /// Waiting time in collectives per rank.
    pub wait_by_rank: Vec<i64>,
    /// How often each rank arrived last (instances of more than one rank).
    pub last_by_rank: Vec<u64>,
    /// Arrival spread over all instances.
    pub spread: Stats,
}

/// All instances.
#[derive(Clone, Debug, Default)]
pub struct Collectives {
    pub instances: Vec<Instance>,
    pub members: Vec<Member>,
    pub report: CollReport,
}

fn size_bucket(bytes: i64) -> (i64, i64) {
    if bytes <= 0 {
        return (0, 0);
    }
    let b = 63 - (bytes as u64).leading_zeros();
    (1i64 << b, ((1i128 << (b + 1)) - 1).min(i64::MAX as i128) as i64)
}

/// How many instances to list as the worst.
pub const WORST: usize = 10;

/// A run of instances (the first's number; each a range of the sorted
/// calls) and where their members and the instances themselves go.
type Chunk<'a> = (usize, &'a mut [Member], &'a mut [Instance]);

/// Groups the collective calls of all ranks into instances and computes their costs.
pub fn collectives(m: &Model) -> Collectives {
    // (comm, seq, rank, idx), sorted.
    let mut all: Vec<(u32, u32, u32, u32)> = Vec::with_capacity(m.ranks.iter().map(|r| r.colls.len()).sum());
    for r in &m.ranks {
        for (i, c) in r.colls.iter().enumerate() {
            if c.seq != NONE && c.comm != NONE {
                all.push((c.comm, c.seq, r.rank as u32, i as u32));
            }
        }
    }
    all.sort_unstable();
    // Where each instance starts in `all` (it ends where the next starts),
    // 4 bytes per instance.
    let mut starts: Vec<u32> = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while j < all.len() && all[j].0 == all[i].0 && all[j].1 == all[i].1 {
            j += 1;
        }
        starts.push(i as u32);
        i = j;
    }
    let end_of = |k: usize| starts.get(k + 1).map_or(all.len(), |&s| s as usize);
    // Members are written in place, in the order of `all` (an instance's
    // members are its range of `all`): one allocation for all of them
    // rather than one per instance, which at a million instances was most
    // of the analysis's memory.
    let mut members = vec![Member::EMPTY; all.len()];
    let mut instances = vec![Instance::EMPTY; starts.len()];
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    // A few chunks per thread, so uneven chunks balance.
    let per = starts.len().div_ceil(threads * 4).max(1);
    let mut work: Vec<Chunk<'_>> = Vec::new();
    let (mut mem_rest, mut inst_rest) = (&mut members[..], &mut instances[..]);
    for k0 in (0..starts.len()).step_by(per) {
        let k1 = (k0 + per).min(starts.len());
        let len = end_of(k1 - 1) - starts[k0] as usize;
        let (mh, mr) = std::mem::take(&mut mem_rest).split_at_mut(len);
        let (ih, ir) = std::mem::take(&mut inst_rest).split_at_mut(k1 - k0);
        (mem_rest, inst_rest) = (mr, ir);
        work.push((k0, mh, ih));
    }
    let next = std::sync::Mutex::new(work);
    let run = || loop {
        let Some((k0, mem, inst)) = next.lock().unwrap_or_else(|e| e.into_inner()).pop() else { break };
        let base = starts[k0] as usize;
        for (k, slot) in inst.iter_mut().enumerate() {
            let (a, b) = (starts[k0 + k] as usize, end_of(k0 + k));
            *slot = build_instance(m, &all[a..b], &mut mem[a - base..b - base]);
            slot.first = a as u32;
        }
    };
    std::thread::scope(|s| {
        // A thread that cannot be made is no error: this one does its share.
        let hs: Vec<_> = (1..threads).filter_map(|_| std::thread::Builder::new().spawn_scoped(s, run).ok()).collect();
        run();
        for h in hs {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
    });
    drop(all);
    let mut out = Collectives { instances, members, ..Default::default() };
    out.report = summarize(m, &out);
    out
}

/// The instance of the calls `g`, its members written to `members` (as long as `g`).
fn build_instance(m: &Model, g: &[(u32, u32, u32, u32)], members: &mut [Member]) -> Instance {
    let (comm, seq) = (g[0].0, g[0].1);
    for (slot, &(_, _, rank, idx)) in members.iter_mut().zip(g) {
        let (arrival, _, end) = Member::span(m, rank, idx);
        *slot = Member { rank, idx, arrival, end, wait: 0, cause: -1 };
    }
    let first = &m.ranks[g[0].2 as usize];
    let c0 = &first.colls[g[0].3 as usize];
    let name = first.calls.at(c0.post as usize).name;
    let kind = match m.class(name) {
        Class::Coll { kind, .. } => kind,
        _ => CollKind::Other,
    };
    let root = c0.root;
    let mut inst = Instance {
        comm,
        seq,
        name,
        kind,
        first: 0,
        n: members.len() as u32,
        expected: m.comms.get(comm as usize).map(|c| c.members.len() as u32).unwrap_or(0),
        first_arrival: i64::MAX,
        last_arrival: i64::MIN,
        last_rank: -1,
        end: i64::MIN,
        root,
        root_arrival: i64::MIN,
        bytes: 0,
    };
    let mut first_nonroot = (i64::MAX, -1);
    for mb in members.iter() {
        inst.first_arrival = inst.first_arrival.min(mb.arrival);
        if mb.arrival > inst.last_arrival {
            inst.last_arrival = mb.arrival;
            inst.last_rank = mb.rank as i32;
        }
        inst.end = inst.end.max(mb.end);
        if mb.rank as i32 == root {
            inst.root_arrival = mb.arrival;
        } else {
            first_nonroot = first_nonroot.min((mb.arrival, mb.rank as i32));
        }
        let c = &m.ranks[mb.rank as usize].colls[mb.idx as usize];
        inst.bytes += c.bytes.max(c.recv_bytes).max(0);
    }
    for mb in members.iter_mut() {
        let (until, cause) = match kind {
            CollKind::OneToN if root >= 0 => {
                if mb.rank as i32 == root || inst.root_arrival == i64::MIN {
                    (i64::MIN, -1)
                } else {
                    (inst.root_arrival, root)
                }
            }
            CollKind::NToOne if root >= 0 => {
                if mb.rank as i32 == root && first_nonroot.1 >= 0 {
                    first_nonroot
                } else {
                    (i64::MIN, -1)
                }
            }
            _ => (inst.last_arrival, inst.last_rank),
        };
        mb.wait = until.min(mb.end).saturating_sub(mb.wait_from(m)).max(0);
        mb.cause = if mb.wait > 0 { cause } else { -1 };
    }
    inst
}

fn summarize(m: &Model, c: &Collectives) -> CollReport {
    let n = m.ranks.len();
    let mut rep = CollReport { wait_by_rank: vec![0; n], last_by_rank: vec![0; n], ..Default::default() };
    rep.instances = c.instances.len() as u64;
    #[derive(Default)]
    struct Acc {
        instances: u64,
        members: u64,
        time: i64,
        wait: i64,
        spread_sum: i64,
        spread_max: i64,
        dur_sum: i64,
        bytes: i64,
        last: HashMap<i32, u64>,
    }
    let mut groups: HashMap<(u32, u16, (i64, i64)), Acc> = HashMap::new();
    let mut worst: Vec<&Instance> = Vec::new();
    for inst in &c.instances {
        if inst.expected > inst.n {
            rep.incomplete += 1;
        }
        let mem = &c.members[inst.first as usize..(inst.first + inst.n) as usize];
        let per_rank = if inst.n > 0 { inst.bytes / inst.n as i64 } else { 0 };
        let a = groups.entry((inst.comm, inst.name, size_bucket(per_rank))).or_default();
        a.instances += 1;
        a.members += inst.n as u64;
        a.spread_sum += inst.spread();
        a.spread_max = a.spread_max.max(inst.spread());
        a.dur_sum += inst.end - inst.first_arrival;
        a.bytes += inst.bytes;
        if inst.n > 1 {
            *a.last.entry(inst.last_rank).or_default() += 1;
            if let Some(x) = rep.last_by_rank.get_mut(inst.last_rank as usize) {
                *x += 1;
            }
        }
        for mb in mem {
            a.time += mb.end - mb.arrival;
            a.wait += mb.wait;
            rep.wait_by_rank[mb.rank as usize] += mb.wait;
        }
        worst.push(inst);
        if worst.len() > 64 * WORST {
            worst.sort_by_key(|i| std::cmp::Reverse(i.spread()));
            worst.truncate(WORST);
        }
    }
    rep.spread = Stats::of(c.instances.iter().map(|i| (i.last_rank, i.spread() as f64)));
    worst.sort_by_key(|i| (std::cmp::Reverse(i.spread()), i.comm, i.seq));
    worst.truncate(WORST);
    rep.worst = worst
        .iter()
        .map(|i| InstanceInfo {
            comm: m.comm_label(i.comm),
            call: m.name(i.name).to_string(),
            seq: i.seq,
            ranks: i.n,
            start: i.first_arrival,
            spread_ns: i.spread(),
            duration_ns: i.end - i.first_arrival,
            last_rank: i.last_rank,
            bytes: i.bytes,
        })
        .collect();
    let mut sums: Vec<CollSummary> = groups
        .into_iter()
        .map(|((comm, name, (lo, hi)), a)| {
            let (last_rank, last_n) =
                a.last.iter().max_by_key(|(r, n)| (**n, -**r)).map(|(r, n)| (*r, *n)).unwrap_or((-1, 0));
            let k = a.instances.max(1) as i64;
            CollSummary {
                comm: m.comm_label(comm),
                call: m.name(name).to_string(),
                size_lo: lo,
                size_hi: hi,
                instances: a.instances,
                ranks: (a.members / a.instances.max(1)) as u32,
                time_ns: a.time,
                wait_ns: a.wait,
                mean_spread_ns: a.spread_sum / k,
                max_spread_ns: a.spread_max,
                mean_duration_ns: a.dur_sum / k,
                bytes: a.bytes,
                last_rank,
                last_rank_share: last_n as f64 / a.instances.max(1) as f64,
            }
        })
        .collect();
    sums.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(b.time_ns.cmp(&a.time_ns)).then(a.call.cmp(&b.call)));
    rep.summaries = sums;
    rep
}
