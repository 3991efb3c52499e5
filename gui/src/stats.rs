//! The side views' numbers for a time range: profile, collective costs,
//! wait states, communication matrix and histograms. Calls count where
//! they overlap the range (their time clipped to it); messages, collective
//! instances and waits count where they start.

use std::collections::HashMap;

use crate::data::Trace;
use crate::filter::{CallSet, Filter};

/// One row of the profile table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProfileRow {
    pub name: String,
    pub count: u64,
    /// Time in the range, ns.
    pub time: i64,
    pub max: i64,
    /// Ranks that made the call.
    pub ranks: u32,
}

/// Columns of the profile table (sortable).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileCol {
    Name,
    Count,
    Time,
    Mean,
    Max,
    Ranks,
}

impl ProfileCol {
    pub const ALL: [ProfileCol; 6] =
        [ProfileCol::Name, ProfileCol::Count, ProfileCol::Time, ProfileCol::Mean, ProfileCol::Max, ProfileCol::Ranks];
    pub fn title(self) -> &'static str {
        match self {
            ProfileCol::Name => "Call",
            ProfileCol::Count => "Count",
            ProfileCol::Time => "Time",
            ProfileCol::Mean => "Mean",
            ProfileCol::Max => "Max",
            ProfileCol::Ranks => "Ranks",
        }
    }
}

/// Sorts `rows` by `col`, largest first if `desc`.
pub fn sort_profile(rows: &mut [ProfileRow], col: ProfileCol, desc: bool) {
    let mean = |r: &ProfileRow| r.time / r.count.max(1) as i64;
    rows.sort_by(|a, b| {
        let o = match col {
            ProfileCol::Name => a.name.cmp(&b.name),
            ProfileCol::Count => a.count.cmp(&b.count),
            ProfileCol::Time => a.time.cmp(&b.time),
            ProfileCol::Mean => mean(a).cmp(&mean(b)),
            ProfileCol::Max => a.max.cmp(&b.max),
            ProfileCol::Ranks => a.ranks.cmp(&b.ranks),
        };
        if desc {
            o.reverse()
        } else {
            o
        }
    });
}

/// Costs of one collective operation in the range.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CollRow {
    pub name: String,
    pub instances: u64,
    /// Time in the operation summed over members, ns.
    pub time: i64,
    /// Waiting time summed over members, ns.
    pub wait: i64,
    pub mean_spread: i64,
    pub max_spread: i64,
    pub bytes: i64,
    /// Bytes per member of the instances of this row: `[lo, hi]` (a power
    /// of two and below the next; `(0, 0)` for none).
    pub size: (i64, i64),
    /// The rank that arrived last most often, and how often.
    pub last: Option<(i32, u64)>,
}

/// A row of the collectives view being summed: the row, the sum of the
/// instances' spreads, how often each rank arrived last.
type CollAcc = (CollRow, i64, HashMap<i32, u64>);

/// The power-of-two class of a size: `[2^k, 2^(k+1) - 1]`, or `(0, 0)`.
pub fn size_class(bytes: i64) -> (i64, i64) {
    if bytes <= 0 {
        return (0, 0);
    }
    let k = 63 - (bytes as u64).leading_zeros();
    (1i64 << k, if k >= 62 { i64::MAX } else { (1i64 << (k + 1)) - 1 })
}

/// Waiting in the range at one call (name and site) for one rank.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WaitRow {
    pub call: String,
    pub site: String,
    /// The rank waited for.
    pub cause: i32,
    pub time: i64,
    pub count: u64,
}

/// A histogram over powers of two: `counts[k]` holds values in `[2^k, 2^(k+1))` (k = 0 also holds 0).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Log2Hist {
    pub counts: Vec<u64>,
}

impl Log2Hist {
    pub fn add(&mut self, v: i64) {
        let k = if v <= 1 { 0 } else { 63 - (v as u64).leading_zeros() as usize };
        if self.counts.len() <= k {
            self.counts.resize(k + 1, 0);
        }
        self.counts[k] += 1;
    }
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// The numbers of all side views for one range.
#[derive(Clone, Debug, Default)]
pub struct RangeStats {
    pub t0: i64,
    pub t1: i64,
    pub profile: Vec<ProfileRow>,
    pub calls: u64,
    pub colls: Vec<CollRow>,
    pub waits: Vec<WaitRow>,
    /// Ranks of the matrix (max rank + 1).
    pub n: usize,
    /// (sender, receiver) -> (bytes, messages), the pairs that communicated.
    pub pairs: HashMap<(usize, usize), (i64, u64)>,
    pub messages: u64,
    pub msg_sizes: Log2Hist,
    pub call_durations: Log2Hist,
}

impl RangeStats {
    pub fn cell(&self, src: usize, dst: usize) -> (i64, u64) {
        self.pairs.get(&(src, dst)).copied().unwrap_or((0, 0))
    }
}

/// Computes the side views' numbers for `[t0, t1)`, for the ranks and
/// call names `filter` keeps; with `only`, for the calls it keeps (the
/// filter's `comm=`/`tag=`).
pub fn compute(trace: &Trace, t0: i64, t1: i64, filter: &Filter, only: Option<&CallSet>) -> RangeStats {
    let lod = &trace.lod;
    let mut st = RangeStats { t0, t1, ..Default::default() };
    let kept = filter.name_mask(&lod.names);
    let mut per_name: Vec<(ProfileRow, i32)> = vec![(ProfileRow::default(), -1); lod.names.len()];
    for (ri, r) in lod.ranks.iter().enumerate().filter(|(_, r)| filter.keeps_rank(r.rank)) {
        let d = &r.data;
        let range = d.starting_in(t0, t1);
        let first = range.start.saturating_sub(1);
        // The kept calls of the rank from `first` on (indexes ascend with starts).
        let mut set = only.map(|s| {
            let v = s.per_rank.get(ri).map(Vec::as_slice).unwrap_or(&[]);
            v[v.partition_point(|k| (k.call as usize) < first)..].iter().map(|k| k.call as usize).peekable()
        });
        for i in first..range.end {
            if let Some(set) = &mut set {
                while set.next_if(|&k| k < i).is_some() {}
                if set.peek() != Some(&i) {
                    continue;
                }
            }
            let c = d.call(i);
            if c.t_end <= t0 && c.t_start < t0 || !kept.get(c.name as usize).copied().unwrap_or(true) {
                continue;
            }
            let dur = c.duration();
            if dur < filter.min_dur {
                continue;
            }
            let time = c.t_end.min(t1) - c.t_start.max(t0);
            let Some((row, last)) = per_name.get_mut(c.name as usize) else { continue };
            row.count += 1;
            row.time += time.max(0);
            row.max = row.max.max(dur);
            if *last != r.rank {
                row.ranks += 1;
                *last = r.rank;
            }
            st.calls += 1;
            st.call_durations.add(dur);
        }
    }
    st.profile = per_name
        .into_iter()
        .enumerate()
        .filter(|(_, (r, _))| r.count > 0)
        .map(|(i, (mut r, _))| {
            r.name = lod.names[i].clone();
            r
        })
        .collect();
    sort_profile(&mut st.profile, ProfileCol::Time, true);
    if let Some(a) = &trace.analysed {
        analysed(trace, a, filter, only, &mut st);
    }
    st
}

fn analysed(trace: &Trace, a: &crate::data::Analysed, filter: &Filter, only: Option<&CallSet>, st: &mut RangeStats) {
    let on = a.resolve(filter.on());
    let (t0, t1) = (st.t0, st.t1);
    let m = &a.an.model;
    st.n = trace.lod.ranks.iter().map(|r| r.rank.max(0) as usize + 1).max().unwrap_or(0);
    for msg in a.messages.overlapping(t0, t1) {
        if msg.t_send < t0
            || msg.t_send >= t1
            || !filter.keeps_rank(msg.src) && !filter.keeps_rank(msg.dst)
            || !a.message_kept(msg.id as usize, on)
        {
            continue;
        }
        let (s, d) = (msg.src as usize, msg.dst as usize);
        let e = st.pairs.entry((s, d)).or_insert((0, 0));
        e.0 += msg.bytes.max(0);
        e.1 += 1;
        st.messages += 1;
        st.msg_sizes.add(msg.bytes);
    }
    let colls = &a.an.collectives;
    // Per operation and size class: the row, the sum of spreads, how often each rank came last.
    let mut by_op: HashMap<(u16, (i64, i64)), CollAcc> = HashMap::new();
    for s in a.colls_in(t0, t1).filter(|s| s.t0 >= t0) {
        let inst = &colls.instances[s.instance as usize];
        let name = m.name(inst.name);
        if !filter.keeps_name(name) || !on.keeps_coll(inst.comm) {
            continue;
        }
        let size = size_class(if inst.n > 0 { inst.bytes / inst.n as i64 } else { 0 });
        let e = by_op
            .entry((inst.name, size))
            .or_insert_with(|| (CollRow { name: name.to_string(), size, ..Default::default() }, 0, HashMap::new()));
        let members = &colls.members[inst.first as usize..(inst.first + inst.n) as usize];
        e.0.instances += 1;
        e.0.time += members.iter().map(|x| x.end - x.arrival).sum::<i64>();
        e.0.wait += members.iter().map(|x| x.wait).sum::<i64>();
        e.0.max_spread = e.0.max_spread.max(inst.spread());
        e.0.bytes += inst.bytes;
        e.1 += inst.spread();
        if inst.n > 1 {
            *e.2.entry(inst.last_rank).or_default() += 1;
        }
    }
    st.colls = by_op
        .into_values()
        .map(|(mut r, spread, last)| {
            r.mean_spread = spread / r.instances.max(1) as i64;
            r.last = last.into_iter().max_by_key(|&(rank, n)| (n, std::cmp::Reverse(rank)));
            r
        })
        .collect();
    st.colls.sort_by(|x, y| y.wait.cmp(&x.wait).then(x.name.cmp(&y.name)).then(x.size.cmp(&y.size)));
    let mut waits: HashMap<(u16, u32, u32), WaitRow> = HashMap::new();
    for (rank, causes) in a.an.waits.causes.iter().enumerate() {
        if !filter.keeps_rank(rank as i32) {
            continue;
        }
        let Some(rd) = m.ranks.get(rank) else { continue };
        let shift = a.shift(rank as i32);
        for cause in causes {
            let Some(c) = rd.calls.get(cause.call as usize) else { continue };
            let t = c.t_start - shift;
            if t < t0 || t >= t1 {
                continue;
            }
            let wait = cause.until.min(c.t_end) - c.t_start;
            if wait <= 0 || !filter.keeps_name(m.name(c.name)) {
                continue;
            }
            if let Some(set) = only {
                // The waiting call must be one of those kept (by its start and name).
                let ri = trace.lod.ranks.binary_search_by_key(&(rank as i32), |r| r.rank).ok();
                let kept = ri.and_then(|ri| set.per_rank.get(ri).map(|v| (ri, v))).is_some_and(|(ri, v)| {
                    let d = &trace.lod.ranks[ri].data;
                    v[v.partition_point(|k| k.t0 < t)..]
                        .iter()
                        .take_while(|k| k.t0 == t)
                        .any(|k| trace.lod.name(d.call(k.call as usize).name) == m.name(c.name))
                });
                if !kept {
                    continue;
                }
            }
            let e = waits.entry((c.name, c.site, cause.rank)).or_insert_with(|| WaitRow {
                call: m.name(c.name).to_string(),
                site: m.site_label(c.site),
                cause: cause.rank as i32,
                ..Default::default()
            });
            e.time += wait;
            e.count += 1;
        }
    }
    st.waits = waits.into_values().collect();
    st.waits.sort_by(|x, y| y.time.cmp(&x.time).then(x.cause.cmp(&y.cause)));
}
