//! Profile: where the time goes, per rank and in total, per MPI call and
//! call site, and how big the messages are.
//!
//! Each rank's time is measured over its *window*: from the end of
//! `MPI_Init` to the start of `MPI_Finalize` (the first and last call when
//! those are missing, as in a crashed run), as mpiP does, so that start-up
//! and tear-down do not drown the application. Call durations are clipped
//! to the window, except those of `MPI_Init` and `MPI_Finalize`, which the
//! calls table gives whole. A rank's MPI time is the union of its calls'
//! intervals (with `MPI_THREAD_MULTIPLE` calls of threads overlap); each
//! thread's MPI and compute time add up to the window. Bytes are those sent (sends, collective contributions) or
//! received (receives, from the status).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::{Location, Model, RankData, NONE};
use crate::{par_map, Stats};

/// Time of one rank.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RankProfile {
    pub rank: i32,
    /// Start and end of the window (ns, reference clock).
    pub start: i64,
    pub end: i64,
    pub time_ns: i64,
    pub mpi_ns: i64,
    pub compute_ns: i64,
    pub mpi_fraction: f64,
    pub calls: u64,
    /// "complete", "partial: reason" or "missing".
    pub state: String,
    /// Per thread, when more than one thread made MPI calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadProfile>,
}

/// Time of one thread of a rank, over the rank's window: its MPI and
/// compute time add up to the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadProfile {
    /// Thread number (0: the thread that initialized MPI).
    pub thread: u16,
    pub calls: u64,
    pub mpi_ns: i64,
    pub compute_ns: i64,
    pub mpi_fraction: f64,
}

/// Totals over all ranks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Wall-clock time from the earliest window start to the latest end.
    pub wall_ns: i64,
    /// Sum of the ranks' window lengths.
    pub rank_ns: i64,
    pub mpi_ns: i64,
    pub compute_ns: i64,
    pub mpi_fraction: f64,
    pub calls: u64,
    pub bytes: i64,
    pub ranks: usize,
    /// Coefficient of variation of the ranks' compute time (load imbalance).
    pub compute_cv: f64,
}

/// One MPI call (or region) over all ranks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallProfile {
    pub name: String,
    pub count: u64,
    pub time_ns: i64,
    pub bytes: i64,
    /// Share of the time in all calls.
    pub mpi_share: f64,
    /// Over the ranks that made the call.
    pub ranks: usize,
    pub time: Stats,
    pub count_stats: Stats,
    pub bytes_stats: Stats,
}

/// One call site (same location on every rank).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteProfile {
    pub call: String,
    /// Best label: `file.c:42`, `module+0xOFFSET`, or the address on the
    /// lowest rank that used the site.
    pub site: String,
    /// `module+0xOFFSET`, if the module is known.
    #[serde(default)]
    pub module: Option<String>,
    /// Source location, if symbolized.
    #[serde(default)]
    pub location: Option<Location>,
    pub count: u64,
    pub time_ns: i64,
    pub bytes: i64,
    pub ranks: usize,
}

/// A bucket of a message size histogram: sizes in `lo..=hi`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    pub lo: i64,
    pub hi: i64,
    pub count: u64,
    pub bytes: i64,
}

/// Message sizes in power-of-two buckets (only non-empty buckets listed).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    pub buckets: Vec<Bucket>,
}

impl Histogram {
    fn from_counts(c: &[(u64, i64); 65]) -> Histogram {
        let buckets = c
            .iter()
            .enumerate()
            .filter(|(_, (n, _))| *n > 0)
            .map(|(i, &(count, bytes))| {
                let (lo, hi) =
                    if i == 0 { (0, 0) } else { (1i64 << (i - 1), ((1i128 << i) - 1).min(i64::MAX as i128) as i64) };
                Bucket { lo, hi, count, bytes }
            })
            .collect();
        Histogram { buckets }
    }
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.count).sum()
    }
}

fn bucket(bytes: i64) -> usize {
    if bytes <= 0 {
        0
    } else {
        64 - (bytes as u64).leading_zeros() as usize
    }
}

/// Sizes per collective operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CollSizes {
    pub call: String,
    pub sizes: Histogram,
}

/// Time in a user region.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RegionProfile {
    pub name: String,
    pub count: u64,
    /// Inclusive time over all ranks.
    pub time_ns: i64,
    pub time: Stats,
}

/// The whole profile.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub totals: Totals,
    pub ranks: Vec<RankProfile>,
    /// Sorted by time, largest first.
    pub calls: Vec<CallProfile>,
    /// Top sites by time.
    pub sites_by_time: Vec<SiteProfile>,
    /// Top sites by bytes.
    pub sites_by_bytes: Vec<SiteProfile>,
    pub p2p_sizes: Histogram,
    pub coll_sizes: Vec<CollSizes>,
    pub regions: Vec<RegionProfile>,
}

/// How many sites to keep in each top list.
pub const TOP_SITES: usize = 20;

#[derive(Default, Clone, Copy)]
struct Acc {
    count: u64,
    time: i64,
    bytes: i64,
}

struct RankAcc {
    rank: RankProfile,
    /// Per name id.
    calls: Vec<Acc>,
    /// (name, site key) → (acc, lowest site index).
    sites: HashMap<(u16, i64), (Acc, u32)>,
    p2p: [(u64, i64); 65],
    coll: HashMap<u16, [(u64, i64); 65]>,
    regions: HashMap<u16, Acc>,
}

/// The window of a rank: end of MPI_Init to start of MPI_Finalize.
pub fn window(m: &Model, r: &RankData) -> Option<(i64, i64)> {
    let (first, last) = r.span()?;
    let init = r.calls.iter().take(4).find(|c| matches!(m.name(c.name), "MPI_Init" | "MPI_Init_thread"));
    let fin = r.calls.iter().rev().take(4).find(|c| m.name(c.name) == "MPI_Finalize");
    let start = init.map(|c| c.t_end).unwrap_or(first);
    let end = fin.map(|c| c.t_start).unwrap_or(last).max(start);
    Some((start, end))
}

fn rank_profile(m: &Model, r: &RankData) -> RankAcc {
    let n = m.names.len();
    let mut acc = RankAcc {
        rank: RankProfile { rank: r.rank, state: state(&r.completeness), ..Default::default() },
        calls: vec![Acc::default(); n],
        sites: HashMap::new(),
        p2p: [(0, 0); 65],
        coll: HashMap::new(),
        regions: HashMap::new(),
    };
    let Some((lo, hi)) = window(m, r) else { return acc };
    // A rank's site indices are contiguous: accumulate per site densely
    // (per call name, as address 0 stands for every unknown site).
    let kinds: Vec<(u16, u16, u32)> = (0..r.calls.kinds() as u32).map(|k| r.calls.kind(k)).collect();
    let site_lo = kinds.iter().map(|k| k.2).min().unwrap_or(0);
    let site_hi = kinds.iter().map(|k| k.2).max().unwrap_or(0);
    let mut per_site: Vec<Vec<(u16, Acc)>> = vec![Vec::new(); (site_hi - site_lo) as usize + 1];
    fn site_acc(v: &mut Vec<(u16, Acc)>, name: u16) -> &mut Acc {
        let i = match v.iter().position(|e| e.0 == name) {
            Some(i) => i,
            None => {
                v.push((name, Acc::default()));
                v.len() - 1
            }
        };
        &mut v[i].1
    }
    // Count and time per kind of call (a rank has a dozen), then per name
    // and per site.
    let mut per_kind = vec![(0u64, 0i64); kinds.len()];
    // MPI_Init and MPI_Finalize lie outside the window: they count whole
    // in the calls table, and not in the rank's MPI time.
    let edge: Vec<bool> =
        kinds.iter().map(|k| matches!(m.name(k.0), "MPI_Init" | "MPI_Init_thread" | "MPI_Finalize")).collect();
    let thread_of: Vec<u16> = (0..kinds.len() as u32).map(|k| r.calls.kind_thread(k)).collect();
    // The rank's MPI time is the union of its calls' intervals: calls of
    // several threads overlap, and a rank is in MPI while any thread is.
    let mut union = Union::default();
    let mut threads: Vec<(u16, Union)> = Vec::new();
    for (k, t0, t1) in r.calls.timed_kinds() {
        let k = k as usize;
        let e = &mut per_kind[k];
        e.0 += 1;
        if edge[k] {
            e.1 += (t1 - t0).max(0);
            continue;
        }
        let (a, b) = (t0.max(lo), t1.min(hi));
        e.1 += (b - a).max(0);
        union.add(a, b);
        let th = thread_of[k];
        let i = match threads.iter().position(|t| t.0 == th) {
            Some(i) => i,
            None => {
                threads.push((th, Union::default()));
                threads.len() - 1
            }
        };
        threads[i].1.add(a, b);
    }
    if threads.len() > 1 {
        threads.sort_by_key(|t| t.0);
        acc.rank.threads = threads
            .iter()
            .map(|(th, u)| ThreadProfile {
                thread: *th,
                calls: u.calls,
                mpi_ns: u.total,
                compute_ns: (hi - lo - u.total).max(0),
                mpi_fraction: if hi > lo { u.total as f64 / (hi - lo) as f64 } else { 0.0 },
            })
            .collect();
    }
    let mpi = union.total;
    for (&(name, _, site), &(count, time)) in kinds.iter().zip(&per_kind) {
        if count == 0 {
            continue;
        }
        let a = &mut acc.calls[name as usize];
        a.count += count;
        a.time += time;
        let e = site_acc(&mut per_site[(site - site_lo) as usize], name);
        e.count += count;
        e.time += time;
    }
    let mut add_bytes = |post: u32, bytes: i64, acc: &mut RankAcc| {
        if bytes <= 0 || post == NONE {
            return;
        }
        let c = &r.calls.at(post as usize);
        acc.calls[c.name as usize].bytes += bytes;
        site_acc(&mut per_site[(c.site - site_lo) as usize], c.name).bytes += bytes;
    };
    for s in &r.sends {
        add_bytes(s.post, s.bytes, &mut acc);
        let b = &mut acc.p2p[bucket(s.bytes)];
        b.0 += 1;
        b.1 += s.bytes.max(0);
    }
    for s in &r.recvs {
        add_bytes(s.post, s.bytes, &mut acc);
    }
    for o in &r.ops {
        add_bytes(o.call, o.bytes, &mut acc);
    }
    for c in &r.colls {
        let bytes = c.bytes.max(c.recv_bytes);
        add_bytes(c.post, bytes, &mut acc);
        let name = r.calls.at(c.post as usize).name;
        let h = acc.coll.entry(name).or_insert([(0, 0); 65]);
        let b = &mut h[bucket(bytes)];
        b.0 += 1;
        b.1 += bytes.max(0);
    }
    for (i, v) in per_site.into_iter().enumerate() {
        let site = site_lo + i as u32;
        for (name, a) in v {
            let e = acc.sites.entry((name, m.sites[site as usize].key)).or_insert((Acc::default(), site));
            e.0.count += a.count;
            e.0.time += a.time;
            e.0.bytes += a.bytes;
        }
    }
    let mut open: HashMap<u16, Vec<i64>> = HashMap::new();
    for e in &r.regions {
        if e.begin {
            open.entry(e.name).or_default().push(e.t);
        } else if let Some(t0) = open.get_mut(&e.name).and_then(|v| v.pop()) {
            let a = acc.regions.entry(e.name).or_default();
            a.count += 1;
            a.time += e.t - t0;
        }
    }
    acc.rank.start = lo;
    acc.rank.end = hi;
    acc.rank.time_ns = hi - lo;
    acc.rank.mpi_ns = mpi.min(hi - lo);
    acc.rank.compute_ns = (hi - lo - acc.rank.mpi_ns).max(0);
    acc.rank.mpi_fraction = if hi > lo { acc.rank.mpi_ns as f64 / (hi - lo) as f64 } else { 0.0 };
    acc.rank.calls = r.calls.len() as u64;
    acc
}

/// The length of a union of intervals given in order of start.
#[derive(Default)]
struct Union {
    total: i64,
    end: i64,
    calls: u64,
}

impl Union {
    fn add(&mut self, a: i64, b: i64) {
        self.calls += 1;
        if b <= a {
            return;
        }
        if self.calls == 1 || a >= self.end {
            self.total += b - a;
            self.end = b;
        } else if b > self.end {
            self.total += b - self.end;
            self.end = b;
        }
    }
}

/// "complete", "partial: why" or "missing".
pub fn state(c: &trace_format::Completeness) -> String {
    match c {
        trace_format::Completeness::Complete => "complete".into(),
        trace_format::Completeness::Partial { reason } => format!("partial: {reason}"),
        trace_format::Completeness::Missing => "missing".into(),
    }
}

/// Computes the profile.
pub fn profile(m: &Model) -> Profile {
    // Only ranks with calls get an accumulator (a kilobyte or more, with
    // a table per call name): a trace may claim far more ranks than it
    // has, and those are profiled as empty.
    let accs: Vec<Option<Box<RankAcc>>> = par_map(&m.ranks, |r| window(m, r).map(|_| Box::new(rank_profile(m, r))));
    let mut p = Profile::default();
    let n = m.names.len();
    let mut calls = vec![Acc::default(); n];
    let mut sites: HashMap<(u16, i64), (Acc, u32, usize)> = HashMap::new();
    let mut p2p = [(0u64, 0i64); 65];
    let mut coll: HashMap<u16, [(u64, i64); 65]> = HashMap::new();
    let mut regions: HashMap<u16, Acc> = HashMap::new();
    let present: Vec<&RankAcc> =
        accs.iter().flatten().filter(|a| a.rank.time_ns > 0 || a.rank.calls > 0).map(|a| &**a).collect();
    for a in accs.iter().flatten() {
        for (i, c) in a.calls.iter().enumerate() {
            calls[i].count += c.count;
            calls[i].time += c.time;
            calls[i].bytes += c.bytes;
        }
        for (k, (s, site)) in &a.sites {
            let e = sites.entry(*k).or_insert((Acc::default(), *site, 0));
            e.0.count += s.count;
            e.0.time += s.time;
            e.0.bytes += s.bytes;
            e.2 += 1;
            if m.sites[*site as usize].rank < m.sites[e.1 as usize].rank {
                e.1 = *site;
            }
        }
        for (i, b) in a.p2p.iter().enumerate() {
            p2p[i].0 += b.0;
            p2p[i].1 += b.1;
        }
        for (name, h) in &a.coll {
            let e = coll.entry(*name).or_insert([(0, 0); 65]);
            for (i, b) in h.iter().enumerate() {
                e[i].0 += b.0;
                e[i].1 += b.1;
            }
        }
        for (name, r) in &a.regions {
            let e = regions.entry(*name).or_default();
            e.count += r.count;
            e.time += r.time;
        }
    }
    let t = &mut p.totals;
    t.ranks = present.len();
    t.rank_ns = present.iter().map(|a| a.rank.time_ns).sum();
    t.mpi_ns = present.iter().map(|a| a.rank.mpi_ns).sum();
    t.compute_ns = present.iter().map(|a| a.rank.compute_ns).sum();
    t.mpi_fraction = if t.rank_ns > 0 { t.mpi_ns as f64 / t.rank_ns as f64 } else { 0.0 };
    t.calls = present.iter().map(|a| a.rank.calls).sum();
    t.bytes = calls.iter().map(|c| c.bytes).sum();
    let lo = present.iter().map(|a| a.rank.start).min().unwrap_or(0);
    let hi = present.iter().map(|a| a.rank.end).max().unwrap_or(0);
    t.wall_ns = hi - lo;
    t.compute_cv = Stats::of(present.iter().map(|a| (a.rank.rank, a.rank.compute_ns as f64))).cv;
    // Shares of the time in calls (which counts overlapping calls of
    // threads each, and MPI_Init and MPI_Finalize), so that they add up.
    let total_mpi = calls.iter().map(|c| c.time).sum::<i64>().max(1) as f64;
    for (i, c) in calls.iter().enumerate() {
        if c.count == 0 {
            continue;
        }
        let who = || present.iter().filter(|a| a.calls[i].count > 0);
        p.calls.push(CallProfile {
            name: m.names[i].to_string(),
            count: c.count,
            time_ns: c.time,
            bytes: c.bytes,
            mpi_share: c.time as f64 / total_mpi,
            ranks: who().count(),
            time: Stats::of(present.iter().map(|a| (a.rank.rank, a.calls[i].time as f64))),
            count_stats: Stats::of(present.iter().map(|a| (a.rank.rank, a.calls[i].count as f64))),
            bytes_stats: Stats::of(present.iter().map(|a| (a.rank.rank, a.calls[i].bytes as f64))),
        });
    }
    p.calls.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(a.name.cmp(&b.name)));
    let mut site_list: Vec<SiteProfile> = sites
        .iter()
        .map(|((name, _), (a, site, ranks))| SiteProfile {
            call: m.name(*name).to_string(),
            site: m.site_label(*site),
            module: m.site_module_label(*site),
            location: m.site_location(*site).cloned(),
            count: a.count,
            time_ns: a.time,
            bytes: a.bytes,
            ranks: *ranks,
        })
        .collect();
    site_list.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(a.site.cmp(&b.site)));
    p.sites_by_time = site_list.iter().take(TOP_SITES).cloned().collect();
    site_list.retain(|s| s.bytes > 0);
    site_list.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.site.cmp(&b.site)));
    site_list.truncate(TOP_SITES);
    p.sites_by_bytes = site_list;
    p.p2p_sizes = Histogram::from_counts(&p2p);
    let mut cs: Vec<CollSizes> = coll
        .iter()
        .map(|(name, h)| CollSizes { call: m.name(*name).to_string(), sizes: Histogram::from_counts(h) })
        .collect();
    cs.sort_by(|a, b| a.call.cmp(&b.call));
    p.coll_sizes = cs;
    let mut regs: Vec<RegionProfile> = regions
        .iter()
        .map(|(name, a)| RegionProfile {
            name: m.name(*name).to_string(),
            count: a.count,
            time_ns: a.time,
            time: Stats::of(
                present.iter().map(|r| (r.rank.rank, r.regions.get(name).map(|x| x.time).unwrap_or(0) as f64)),
            ),
        })
        .collect();
    regs.sort_by_key(|r| std::cmp::Reverse(r.time_ns));
    p.regions = regs;
    p.ranks = m
        .ranks
        .iter()
        .zip(accs)
        .map(|(r, a)| match a {
            Some(a) => a.rank,
            None => RankProfile { rank: r.rank, state: state(&r.completeness), ..Default::default() },
        })
        .collect();
    p
}
