//! Messages to draw in a time range.
//!
//! Matching sends with receives is the analyzers' business; a viewer hands
//! the matched messages (as [`Msg`]) to a [`MessageIndex`] and asks it for
//! those that cross a time range. Messages are grouped by their length in
//! time (powers of two), each group sorted by start, so the messages
//! overlapping `[t0, t1)` are found by one binary search per group from
//! `t0` minus the group's longest length, and the number starting in a
//! range (to decide whether lines fit) by two.

/// A matched message between two ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msg {
    pub src: i32,
    pub dst: i32,
    /// When the send was posted (start of the sending call), ns.
    pub t_send: i64,
    /// When the receive completed (end of the receiving call), ns.
    pub t_recv: i64,
    pub bytes: i64,
    pub tag: i32,
    /// The caller's reference (e.g. index into its own tables).
    pub id: u64,
}

impl Msg {
    pub fn start(&self) -> i64 {
        self.t_send.min(self.t_recv)
    }
    pub fn end(&self) -> i64 {
        self.t_send.max(self.t_recv)
    }
}

/// Messages grouped by length for range queries.
#[derive(Clone, Debug, Default)]
pub struct MessageIndex {
    /// (longest length in the group, messages sorted by start).
    groups: Vec<(i64, Vec<Msg>)>,
    len: usize,
}

impl MessageIndex {
    pub fn new(msgs: impl IntoIterator<Item = Msg>) -> MessageIndex {
        let mut groups: Vec<(i64, Vec<Msg>)> = (0..64).map(|_| (0, Vec::new())).collect();
        let mut len = 0;
        for m in msgs {
            let l = (m.end() - m.start()) as u64;
            let g = &mut groups[(64 - l.leading_zeros()) as usize % 64];
            g.0 = g.0.max(l as i64);
            g.1.push(m);
            len += 1;
        }
        groups.retain(|g| !g.1.is_empty());
        for g in &mut groups {
            g.1.sort_by_key(|m| (m.start(), m.src, m.dst));
        }
        MessageIndex { groups, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of messages starting in `[t0, t1)`.
    pub fn count_starting(&self, t0: i64, t1: i64) -> usize {
        self.groups
            .iter()
            .map(|(_, v)| v.partition_point(|m| m.start() < t1) - v.partition_point(|m| m.start() < t0))
            .sum()
    }

    /// The messages whose time span overlaps `[t0, t1)`, group by group
    /// (not in time order).
    pub fn overlapping(&self, t0: i64, t1: i64) -> impl Iterator<Item = &Msg> + '_ {
        self.groups.iter().flat_map(move |(longest, v)| {
            let a = v.partition_point(|m| m.start() < t0.saturating_sub(*longest));
            v[a..].iter().take_while(move |m| m.start() < t1).filter(move |m| m.end() >= t0)
        })
    }

    /// Every message.
    pub fn iter(&self) -> impl Iterator<Item = &Msg> + '_ {
        self.groups.iter().flat_map(|(_, v)| v.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_equals_brute_force() {
        let mut x = 12345u64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let msgs: Vec<Msg> = (0..2000)
            .map(|i| {
                let t = rnd(1_000_000) as i64;
                let l = if rnd(10) == 0 { rnd(500_000) } else { rnd(2_000) } as i64;
                let back = rnd(20) == 0;
                Msg {
                    src: 0,
                    dst: 1,
                    t_send: if back { t + l } else { t },
                    t_recv: if back { t } else { t + l },
                    bytes: 8,
                    tag: 0,
                    id: i,
                }
            })
            .collect();
        let idx = MessageIndex::new(msgs.clone());
        assert_eq!(idx.len(), 2000);
        for _ in 0..200 {
            let t0 = rnd(1_200_000) as i64 - 100_000;
            let t1 = t0 + rnd(100_000) as i64 + 1;
            let mut got: Vec<u64> = idx.overlapping(t0, t1).map(|m| m.id).collect();
            let mut want: Vec<u64> = msgs.iter().filter(|m| m.end() >= t0 && m.start() < t1).map(|m| m.id).collect();
            got.sort();
            want.sort();
            assert_eq!(got, want);
            assert_eq!(idx.count_starting(t0, t1), msgs.iter().filter(|m| m.start() >= t0 && m.start() < t1).count());
        }
    }
}
