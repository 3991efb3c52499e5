//! Hardware counters (`MPITRACE_COUNTERS`): per rank, the counters summed
//! over its compute intervals (between MPI calls, every thread), the
//! instructions per cycle, and how unevenly the ranks' work is spread. With
//! the compute time of the profile this tells apart a rank that computes
//! more (more instructions) from one that computes slower (same
//! instructions, lower IPC).

use serde::{Deserialize, Serialize};

use crate::model::Model;
use crate::Stats;

/// One rank's counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RankCounters {
    pub rank: i32,
    /// Per counter of [`CounterReport::names`]: the sum over the rank's
    /// compute intervals (0 when it recorded none).
    pub values: Vec<u64>,
    /// Instructions per cycle, when both were recorded.
    pub ipc: Option<f64>,
}

/// How one counter is spread over the ranks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterSpread {
    pub name: String,
    pub total: u64,
    /// Over the ranks that recorded it.
    pub stats: Stats,
    /// Largest rank value over the mean (1: even; Scalasca's and
    /// Score-P's load imbalance measure).
    pub max_over_mean: f64,
}

/// The counters of a trace (empty when none were recorded).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterReport {
    pub names: Vec<String>,
    pub ranks: Vec<RankCounters>,
    pub spread: Vec<CounterSpread>,
    /// Instructions per cycle over all ranks, when both were recorded.
    pub ipc: Option<f64>,
}

impl CounterReport {
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

fn ipc(names: &[String], values: &[u64]) -> Option<f64> {
    let at = |n: &str| names.iter().position(|x| x == n).map(|i| values[i]);
    match (at("instructions"), at("cycles")) {
        (Some(i), Some(c)) if c > 0 => Some(i as f64 / c as f64),
        _ => None,
    }
}

/// The counters of `m`.
pub fn counters(m: &Model) -> CounterReport {
    let mut names: Vec<String> = Vec::new();
    for r in &m.ranks {
        for n in &r.counter_names {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    if names.is_empty() {
        return CounterReport::default();
    }
    let ranks: Vec<RankCounters> = m
        .ranks
        .iter()
        .filter(|r| !r.counter_names.is_empty())
        .map(|r| {
            let totals = r.counter_totals();
            let values: Vec<u64> = names.iter().map(|n| totals.iter().find(|c| c.0 == n).map_or(0, |c| c.1)).collect();
            RankCounters { rank: r.rank, ipc: ipc(&names, &values), values }
        })
        .collect();
    let spread = names
        .iter()
        .enumerate()
        .map(|(k, n)| {
            let stats = Stats::of(ranks.iter().map(|r| (r.rank, r.values[k] as f64)));
            CounterSpread {
                name: n.clone(),
                total: ranks.iter().map(|r| r.values[k]).fold(0u64, u64::wrapping_add),
                max_over_mean: if stats.mean > 0.0 { stats.max / stats.mean } else { 0.0 },
                stats,
            }
        })
        .collect::<Vec<_>>();
    let totals: Vec<u64> = spread.iter().map(|s| s.total).collect();
    CounterReport { ipc: ipc(&names, &totals), names, ranks, spread }
}

/// Most ranks listed in the report's table (the others are in the JSON).
pub const ROWS: usize = 16;

/// The report's section.
pub fn document(c: &CounterReport) -> Vec<crate::report::Block> {
    use crate::report::{Align, Block, Table, Tone};
    if c.is_empty() {
        return Vec::new();
    }
    let mut d = vec![Block::Heading("Hardware counters".into())];
    let mut lines = vec![format!(
        "summed over the compute intervals (between MPI calls){}",
        c.ipc.map(|i| format!("; instructions per cycle {i:.2}")).unwrap_or_default()
    )];
    for s in &c.spread {
        lines.push(format!(
            "{}: max/mean {:.2} (max rank {}, min rank {}), cv {:.2}",
            s.name, s.max_over_mean, s.stats.max_rank, s.stats.min_rank, s.stats.cv
        ));
    }
    for l in lines {
        d.push(Block::Para(l, Tone::Plain));
    }
    let mut cols: Vec<(String, Align)> = vec![("rank".into(), Align::Right)];
    cols.extend(c.names.iter().map(|n| (n.clone(), Align::Right)));
    let with_ipc = c.ranks.iter().any(|r| r.ipc.is_some());
    if with_ipc {
        cols.push(("IPC".into(), Align::Right));
    }
    let cols: Vec<(&str, Align)> = cols.iter().map(|(s, a)| (s.as_str(), *a)).collect();
    let mut tb = Table::new(&cols);
    // The ranks with the most of the first counter first.
    let mut order: Vec<&RankCounters> = c.ranks.iter().collect();
    order.sort_by_key(|r| (std::cmp::Reverse(r.values.first().copied().unwrap_or(0)), r.rank));
    for r in order.into_iter().take(ROWS) {
        let mut row = vec![(r.rank.to_string(), Tone::Plain)];
        row.extend(r.values.iter().map(|v| (v.to_string(), Tone::Plain)));
        if with_ipc {
            row.push((r.ipc.map(|i| format!("{i:.2}")).unwrap_or_else(|| "-".into()), Tone::Plain));
        }
        tb.row(row);
    }
    d.push(Block::Table(tb));
    if c.ranks.len() > ROWS {
        d.push(Block::Para(format!("... {} more ranks (all in --format json)", c.ranks.len() - ROWS), Tone::Dim));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RankData;
    use trace_format::Completeness;

    #[test]
    fn ipc_and_imbalance() {
        let mut m = Model::default();
        for (r, (i, c)) in [(100u64, 200u64), (300, 200)].into_iter().enumerate() {
            let mut d = RankData::new(r as i32, Completeness::Complete);
            d.counter_names = vec!["instructions".into(), "cycles".into()];
            d.site_counters = vec![((0, 0), vec![i / 2, c / 2]), ((1, 0), vec![i - i / 2, c - c / 2])];
            m.ranks.push(d);
        }
        let c = counters(&m);
        assert_eq!(c.names, ["instructions", "cycles"]);
        assert_eq!(c.ranks[0].ipc, Some(0.5));
        assert_eq!(c.ranks[1].ipc, Some(1.5));
        assert_eq!(c.ipc, Some(1.0));
        assert_eq!(c.spread[0].total, 400);
        assert_eq!(c.spread[0].stats.max_rank, 1);
        assert!((c.spread[0].max_over_mean - 1.5).abs() < 1e-9);
        assert!(counters(&Model::default()).is_empty());
    }
}
