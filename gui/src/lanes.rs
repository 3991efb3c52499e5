//! The rows of the timeline: one lane per rank, grouped by host (a header
//! row per host that folds its ranks away) when the run spans hosts; a rank
//! that called MPI from several threads has one lane per thread instead,
//! unless its threads are folded into one lane.

use std::collections::BTreeSet;

use trace_lod::Lod;
use trace_view::{Edge, ThreadLanes};

use crate::filter::Filter;

/// Height of a host header row, px.
pub const HEADER_H: f32 = 16.0;

/// A row of the timeline.
#[derive(Clone, Debug, PartialEq)]
pub enum Row {
    /// A host and how many of its ranks are shown (when unfolded).
    Host { host: String, ranks: usize, folded: bool },
    /// A rank: index into `Lod::ranks`.
    Rank(usize),
    /// One thread of a rank: index into `Lod::ranks`, the lane in
    /// [`ThreadLanes`], the thread's number.
    Thread { rank: usize, lane: usize, thread: u16 },
}

/// The rows, their vertical positions, and where each rank is.
#[derive(Clone, Debug, Default)]
pub struct Lanes {
    pub rows: Vec<Row>,
    /// Top of each row, and the total height at the end (`rows.len() + 1` entries).
    pub tops: Vec<f32>,
    pub lane_h: f32,
    /// Per world rank: its row, or `u32::MAX` when hidden.
    row_of_rank: Vec<u32>,
}

impl Lanes {
    /// Lays out the ranks of `lod` kept by `filter`, with the hosts in
    /// `folded` folded.
    pub fn new(lod: &Lod, filter: &Filter, folded: &BTreeSet<String>, lane_h: f32) -> Lanes {
        Lanes::with_threads(lod, filter, folded, lane_h, None, &BTreeSet::new())
    }

    /// [`Lanes::new`], with one lane per thread for the ranks that have
    /// lanes in `threads`, except those (indexes into `Lod::ranks`) in
    /// `threads_folded`.
    pub fn with_threads(
        lod: &Lod,
        filter: &Filter,
        folded: &BTreeSet<String>,
        lane_h: f32,
        threads: Option<&ThreadLanes>,
        threads_folded: &BTreeSet<usize>,
    ) -> Lanes {
        let mut order: Vec<usize> = (0..lod.ranks.len()).filter(|&i| filter.keeps_rank(lod.ranks[i].rank)).collect();
        let host = |i: usize| lod.ranks[i].host.as_deref().unwrap_or("");
        let mut rows = Vec::new();
        let one_host = order.windows(2).all(|w| host(w[0]) == host(w[1]));
        let push_rank = |rows: &mut Vec<Row>, i: usize| {
            let lanes = threads.map(|t| t.of(lod.ranks[i].rank)).unwrap_or(&[]);
            if lanes.is_empty() || threads_folded.contains(&i) {
                rows.push(Row::Rank(i));
            } else {
                rows.extend(lanes.iter().map(|&(thread, lane)| Row::Thread { rank: i, lane, thread }));
            }
        };
        if one_host {
            order.into_iter().for_each(|i| push_rank(&mut rows, i));
        } else {
            // Sorted by host then rank, once; then a header per run of a host.
            order.sort_by(|&a, &b| host(a).cmp(host(b)).then(lod.ranks[a].rank.cmp(&lod.ranks[b].rank)));
            for mine in order.chunk_by(|&a, &b| host(a) == host(b)) {
                let h = host(mine[0]).to_string();
                let f = folded.contains(&h);
                rows.push(Row::Host { host: h, ranks: mine.len(), folded: f });
                if !f {
                    mine.iter().for_each(|&i| push_rank(&mut rows, i));
                }
            }
        }
        let max_rank = lod.ranks.iter().map(|r| r.rank.max(0) as usize + 1).max().unwrap_or(0);
        let mut row_of_rank = vec![u32::MAX; max_rank];
        let mut tops = Vec::with_capacity(rows.len() + 1);
        let mut y = 0.0;
        for (k, row) in rows.iter().enumerate() {
            tops.push(y);
            y += match row {
                Row::Host { .. } => HEADER_H,
                Row::Rank(i) | Row::Thread { rank: i, .. } => {
                    // A rank's first lane stands for it.
                    if let Some(slot) = usize::try_from(lod.ranks[*i].rank).ok().and_then(|r| row_of_rank.get_mut(r)) {
                        if *slot == u32::MAX {
                            *slot = k as u32;
                        }
                    }
                    lane_h
                }
            };
        }
        tops.push(y);
        Lanes { rows, tops, lane_h, row_of_rank }
    }

    /// Total height of all rows, px.
    pub fn height(&self) -> f32 {
        self.tops.last().copied().unwrap_or(0.0)
    }

    /// Rows visible in a window of height `h` scrolled by `scroll`.
    pub fn visible(&self, scroll: f32, h: f32) -> std::ops::Range<usize> {
        let a = self.tops.partition_point(|&t| t <= scroll).saturating_sub(1);
        let z = self.tops.partition_point(|&t| t < scroll + h).min(self.rows.len());
        a.min(z)..z
    }

    /// The row at height `y` (content coordinates).
    pub fn row_at(&self, y: f32) -> Option<usize> {
        if y < 0.0 || y >= self.height() {
            return None;
        }
        Some(self.tops.partition_point(|&t| t <= y).saturating_sub(1))
    }

    /// The row of world rank `rank`, if shown.
    pub fn row_of(&self, rank: i32) -> Option<usize> {
        let r = *self.row_of_rank.get(usize::try_from(rank).ok()?)?;
        (r != u32::MAX).then_some(r as usize)
    }

    /// Vertical centre of the lane of `rank` (content coordinates).
    pub fn centre_of(&self, rank: i32) -> Option<f32> {
        self.row_of(rank).map(|k| (self.tops[k] + self.tops[k + 1]) / 2.0)
    }

    /// Vertical centre of the lane of `rank` at time `t`, the `edge` of
    /// a call: the lane of its thread in that call, if its threads have
    /// lanes ([`ThreadLanes::lane_at`]), else its lane.
    pub fn centre_at(&self, rank: i32, t: i64, edge: Edge, threads: Option<&ThreadLanes>) -> Option<f32> {
        let first = self.row_of(rank)?;
        let lane = threads.and_then(|th| th.lane_at(rank, t, edge));
        let busy = lane.and_then(|l| {
            (first..self.rows.len()).find(|&k| matches!(self.rows[k], Row::Thread { lane, .. } if lane == l))
        });
        let k = busy.unwrap_or(first);
        Some((self.tops[k] + self.tops[k + 1]) / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_lod::RawCall;

    fn lod(n: i32) -> Lod {
        let mut l = Lod::from_calls(vec!["MPI_Send".into()], (0..n).map(|r| (r, Vec::<RawCall>::new())).collect());
        for (i, r) in l.ranks.iter_mut().enumerate() {
            r.host = Some(format!("node{}", i / 2));
        }
        l
    }

    #[test]
    fn groups_fold_and_find() {
        let l = lod(4);
        let lanes = Lanes::new(&l, &Filter::default(), &BTreeSet::new(), 10.0);
        assert_eq!(lanes.rows.len(), 6);
        assert_eq!(lanes.height(), 2.0 * HEADER_H + 40.0);
        assert_eq!(lanes.row_of(2), Some(4));
        assert_eq!(lanes.row_at(HEADER_H + 5.0), Some(1));
        let folded: BTreeSet<String> = ["node0".to_string()].into();
        let f = Lanes::new(&l, &Filter::default(), &folded, 10.0);
        assert_eq!(f.rows.len(), 4);
        assert_eq!(f.row_of(0), None);
        assert_eq!(f.visible(0.0, 1000.0), 0..4);
        assert_eq!(f.visible(HEADER_H + 1.0, 5.0), 1..2);
        let only = Lanes::new(&l, &Filter::parse("rank=1-2").unwrap(), &BTreeSet::new(), 10.0);
        assert_eq!(only.rows.iter().filter(|r| matches!(r, Row::Rank(_))).count(), 2);
    }
}
