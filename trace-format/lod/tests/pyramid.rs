//! The pyramid and the cells against brute-force computations over random calls.

use trace_lod::pyramid::dominant;
use trace_lod::{flags, Lod, RankLod, RawCall};

struct Rng(u64);
impl Rng {
    fn next(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m.max(1)
    }
}

/// Random calls: mostly back to back with gaps, some overlapping (threads),
/// some very long, some of no duration.
fn random_calls(seed: u64, n: usize) -> Vec<RawCall> {
    let mut r = Rng(seed);
    let mut t = 1_000_000i64;
    (0..n)
        .map(|_| {
            t += r.next(3000) as i64;
            let d = match r.next(50) {
                0 => r.next(5_000_000_000) as i64 + 4_000_000_000,
                1 => 0,
                2..=5 => r.next(200_000) as i64,
                _ => r.next(2_000) as i64,
            };
            let c = RawCall {
                t_start: t,
                t_end: t + d,
                name: r.next(7) as u16,
                flags: if r.next(100) == 0 { flags::FAILED } else { 0 },
                bytes: if r.next(3) == 0 { -1 } else { r.next(100_000) as i64 },
            };
            if r.next(10) != 0 {
                t += d;
            }
            c
        })
        .collect()
}

/// The calls moved so that none overlaps the next (one thread): then the
/// call running into a window is the one before its first.
fn one_thread(mut calls: Vec<RawCall>) -> Vec<RawCall> {
    let mut t = 0;
    for c in &mut calls {
        let d = c.t_end - c.t_start;
        c.t_start = c.t_start.max(t);
        c.t_end = c.t_start + d;
        t = c.t_end;
    }
    calls
}

fn built(calls: &[RawCall]) -> RankLod {
    let lod = Lod::from_calls((0..7).map(|i| format!("MPI_{i}")).collect(), vec![(0, calls.to_vec())]);
    lod.ranks.into_iter().next().unwrap().data
}

#[test]
fn buckets_equal_brute_force() {
    for seed in [1u64, 7, 99] {
        let mut calls = random_calls(seed, 5000);
        calls.swap(10, 20); // not sorted
        let lod = built(&calls);
        let mut sorted = calls.clone();
        sorted.sort_by_key(|c| (c.t_start, c.t_end));
        let origin = sorted[0].t_start;
        assert_eq!(lod.len(), calls.len());
        assert!(lod.levels() > 3, "{} levels", lod.levels());
        assert_eq!(lod.level(lod.levels() - 1).len(), 1, "the top level is one bucket");
        for k in 0..lod.levels() {
            let w = lod.level_width(k);
            let mut want: std::collections::BTreeMap<i64, Vec<&RawCall>> = Default::default();
            for c in &sorted {
                want.entry((c.t_start - origin) / w).or_default().push(c);
            }
            let got = lod.level(k);
            assert_eq!(got.len(), want.len(), "level {k}");
            for (b, (key, cs)) in got.iter().zip(&want) {
                assert_eq!(b.key, *key);
                assert_eq!(lod.bucket_start(k, b.key), origin + key * w);
                assert_eq!(b.count as usize, cs.len());
                assert_eq!(b.busy, cs.iter().map(|c| c.t_end - c.t_start).sum::<i64>());
                assert_eq!(b.bytes, cs.iter().map(|c| c.bytes.max(0)).sum::<i64>());
                assert_eq!(b.flags, cs.iter().fold(0, |f, c| f | c.flags));
                assert_eq!(b.max_end, cs.iter().map(|c| c.t_end).max().unwrap());
                let mut hist: Vec<(u16, i64, u32)> = Vec::new();
                for c in cs {
                    match hist.iter_mut().find(|h| h.0 == c.name) {
                        Some(h) => {
                            h.1 += c.t_end - c.t_start;
                            h.2 += 1
                        }
                        None => hist.push((c.name, c.t_end - c.t_start, 1)),
                    }
                }
                assert_eq!(b.dominant, dominant(hist.into_iter()), "level {k} key {key}");
            }
        }
        // Calls decode back, long durations included.
        for (i, c) in sorted.iter().enumerate() {
            let d = lod.call(i);
            assert_eq!((d.t_start, d.t_end, d.name, d.flags), (c.t_start, c.t_end, c.name, c.flags));
        }
    }
}

/// Brute force of what each of `n` columns shows, call by call.
fn brute_cells(calls: &[RawCall], t0: i64, t1: i64, n: usize) -> Vec<(u32, i64, Option<u16>)> {
    let bound = |c: usize| t0 + ((t1 - t0) as i128 * c as i128 / n as i128) as i64;
    (0..n)
        .map(|c| {
            let (a, z) = (bound(c), bound(c + 1));
            let count = calls.iter().filter(|x| x.t_start >= a && x.t_start < z).count() as u32;
            let mut busy = 0;
            let mut best: Option<(i64, u16)> = None;
            for x in calls {
                let touches = x.t_end.min(z) > x.t_start.max(a) || (x.t_start >= a && x.t_start < z);
                if !touches {
                    continue;
                }
                let o = (x.t_end.min(z) - x.t_start.max(a)).max(0);
                busy += o;
                if best.is_none_or(|b| o > b.0) {
                    best = Some((o, x.name));
                }
            }
            (count, busy, best.map(|b| b.1))
        })
        .collect()
}

#[test]
fn exact_cells_equal_brute_force() {
    let calls = one_thread(random_calls(5, 3000));
    let lod = built(&calls);
    let mut r = Rng(3);
    let mut out = Vec::new();
    let (lo, hi) = lod.span().unwrap();
    let mut compared = 0;
    for _ in 0..300 {
        let n = 1 + r.next(120) as usize;
        let t0 = lo + r.next((hi - lo) as u64) as i64 - 1000;
        let len = 1 + r.next(8_000 * n as u64) as i64;
        let t1 = t0 + len;
        lod.cells(t0, t1, n, &mut out);
        let in_view = lod.starting_in(t0, t1).len();
        if in_view > 4 * n {
            continue;
        }
        let want = brute_cells(&calls, t0, t1, n);
        for (c, (cell, w)) in out.iter().zip(&want).enumerate() {
            assert_eq!((cell.count, cell.busy, cell.dominant), *w, "cell {c} of {n} over [{t0}, {t1})");
        }
        compared += 1;
    }
    assert!(compared > 200, "{compared}");
}

#[test]
fn binned_cells_aligned_to_buckets_equal_the_buckets() {
    let calls = random_calls(11, 20_000);
    let lod = built(&calls);
    let (lo, hi) = lod.span().unwrap();
    let mut out = Vec::new();
    let mut levels = 0;
    for k in 1..lod.levels() - 1 {
        let w = lod.level_width(k);
        let n = 16;
        let first = lod.level(k)[lod.level(k).len() / 3].key;
        let t0 = lod.bucket_start(k, first);
        let t1 = t0 + w * n as i64;
        if lod.starting_in(t0, t1).len() <= 4 * n {
            continue;
        }
        lod.cells(t0, t1, n, &mut out);
        let want = brute_cells(&calls, t0, t1, n);
        for (c, cell) in out.iter().enumerate() {
            assert_eq!(cell.count, want[c].0, "level {k} cell {c}");
            assert!(cell.busy <= w && cell.busy >= 0);
            if cell.count > 0 && cell.event.is_none() {
                assert!(cell.dominant.is_some());
            }
        }
        let total: u32 = out.iter().map(|c| c.count).sum();
        assert_eq!(total as usize, lod.starting_in(t0, t1).len());
        levels += 1;
    }
    assert!(levels >= 2, "{levels}");
    // The whole run in one call's worth of columns.
    lod.cells(lo, hi, 80, &mut out);
    assert_eq!(out.iter().map(|c| c.count as usize).sum::<usize>(), calls.len());
}

#[test]
fn call_at_and_ranges() {
    let calls = vec![
        RawCall { t_start: 100, t_end: 200, name: 1, flags: 0, bytes: 0 },
        RawCall { t_start: 300, t_end: 300, name: 2, flags: 0, bytes: 0 },
        RawCall { t_start: 400, t_end: 10_000_000_000, name: 3, flags: 0, bytes: 0 },
    ];
    let lod = built(&calls);
    assert_eq!(lod.call_at(99), None);
    assert_eq!(lod.call_at(100), Some(0));
    assert_eq!(lod.call_at(199), Some(0));
    assert_eq!(lod.call_at(200), None);
    assert_eq!(lod.call_at(300), Some(1));
    assert_eq!(lod.call_at(9_999_999_999), Some(2));
    assert_eq!(lod.call(2).duration(), 10_000_000_000 - 400);
    assert_eq!(lod.starting_in(150, 401), 1..3);
    // A long call covers every column it spans, also when binned.
    let mut out = Vec::new();
    lod.cells(1000, 1_000_000_000, 50, &mut out);
    assert!(out.iter().all(|c| c.event == Some(2) && c.dominant == Some(3)));
}

#[test]
fn empty_rank() {
    let lod = built(&[]);
    assert!(lod.is_empty());
    let mut out = Vec::new();
    lod.cells(0, 100, 10, &mut out);
    assert_eq!(out.len(), 10);
    assert!(out.iter().all(|c| c.count == 0 && c.dominant.is_none()));
    assert_eq!(lod.call_at(5), None);
}

#[test]
fn binned_cells_show_calls_wider_than_a_column() {
    // Some calls of seconds among short ones.
    let calls = one_thread(random_calls(21, 50_000));
    let lod = built(&calls);
    let (lo, hi) = lod.span().unwrap();
    let mut out = Vec::new();
    let mut covered = 0;
    for n in [80usize, 333, 1920] {
        lod.cells(lo, hi, n, &mut out);
        assert!(lod.starting_in(lo, hi).len() > 4 * n, "binned");
        let bound = |c: usize| lo + ((hi - lo) as i128 * c as i128 / n as i128) as i64;
        for (c, cell) in out.iter().enumerate() {
            let (a, z) = (bound(c), bound(c + 1));
            let want = calls.iter().position(|x| x.t_start <= a && x.t_end >= z && x.t_end > a);
            if let Some(w) = want {
                covered += 1;
                assert_eq!(cell.event, want, "column {c} of {n}");
                assert_eq!(cell.busy, z - a);
                assert_eq!(cell.dominant, Some(calls[w].name));
            }
        }
    }
    assert!(covered > 20, "{covered}");
    // Windows anywhere (the search for the covering call starts from a
    // guess, forwards or backwards).
    let mut r = Rng(8);
    let mut checked = 0;
    for _ in 0..200 {
        let n = 1 + r.next(400) as usize;
        let t0 = lo + r.next((hi - lo) as u64) as i64;
        let t1 = t0 + 1 + r.next(((hi - t0) as u64).max(1)) as i64;
        lod.cells(t0, t1, n, &mut out);
        if lod.starting_in(t0, t1).len() <= 4 * n {
            continue;
        }
        checked += 1;
        let bound = |c: usize| t0 + ((t1 - t0) as i128 * c as i128 / n as i128) as i64;
        for (c, cell) in out.iter().enumerate() {
            let (a, z) = (bound(c), bound(c + 1));
            let latest = calls.iter().rposition(|x| x.t_start <= a);
            let want = latest.filter(|&i| calls[i].t_end >= z);
            if want.is_some() {
                assert_eq!(cell.event, want, "column {c} of {n} over [{t0}, {t1})");
                assert_eq!(cell.busy, z - a);
            }
        }
    }
    assert!(checked > 50, "{checked}");
}

/// Binned cells at any window: every call of the buckets in view is
/// counted once, in the column where its bucket starts; time never exceeds
/// a column.
#[test]
fn binned_cells_count_every_call_once() {
    let calls = random_calls(31, 40_000);
    let lod = built(&calls);
    let (lo, hi) = lod.span().unwrap();
    let mut r = Rng(5);
    let mut out = Vec::new();
    let mut checked = 0;
    for _ in 0..300 {
        let n = 1 + r.next(2000) as usize;
        let t0 = lo - 1000 + r.next((hi - lo) as u64) as i64;
        let t1 = t0 + 1 + r.next((hi - lo) as u64) as i64;
        lod.cells(t0, t1, n, &mut out);
        let in_view = lod.starting_in(t0, t1).len();
        if in_view <= 4 * n {
            continue;
        }
        checked += 1;
        // The level the query uses, and the calls of its buckets in view.
        let k = lod.level_for((t1 - t0) as f64 / n as f64);
        let b = lod.buckets_in(k, t0, t1);
        let (a, z) = (lod.bucket_start(k, b[0].key), lod.bucket_start(k, b[b.len() - 1].key) + lod.level_width(k));
        let total: u64 = out.iter().map(|c| c.count as u64).sum();
        assert_eq!(total as usize, lod.starting_in(a, z).len(), "{n} columns over [{t0}, {t1})");
        let bound = |c: usize| t0 + ((t1 - t0) as i128 * c as i128 / n as i128) as i64;
        for (c, cell) in out.iter().enumerate() {
            assert!(cell.busy >= 0 && cell.busy <= bound(c + 1) - bound(c), "column {c}: {cell:?}");
            assert!(cell.busy == 0 || cell.dominant.is_some(), "column {c}: {cell:?}");
        }
    }
    assert!(checked > 100, "{checked}");
}

/// Between 4 and 8 calls per column the finest level is coarser than a
/// column: its buckets share their time with every column they span, so
/// a rank busy all the time shows no empty columns (no stripes).
#[test]
fn dense_calls_leave_no_empty_columns_when_binned() {
    // A call of 100 ns every 120 ns.
    let calls: Vec<RawCall> = (0..200_000i64)
        .map(|i| RawCall { t_start: i * 120, t_end: i * 120 + 100, name: (i % 3) as u16, flags: 0, bytes: 0 })
        .collect();
    let lod = built(&calls);
    assert!(lod.level_width(0) >= 8 * 120, "finest level {} ns", lod.level_width(0));
    let mut out = Vec::new();
    for per_col in [5i64, 6, 7] {
        let n = 1920;
        let (t0, t1) = (1_000_000, 1_000_000 + per_col * 120 * n as i64);
        lod.cells(t0, t1, n, &mut out);
        assert!(lod.starting_in(t0, t1).len() > 4 * n, "binned");
        assert!(lod.level_width(0) as f64 > (t1 - t0) as f64 / n as f64, "finest level coarser than a column");
        for (c, cell) in out.iter().enumerate() {
            let w = (per_col * 120) as f64;
            // About 100/120 of each column is in MPI; spreading is exact
            // up to rounding at bucket edges.
            let frac = cell.busy as f64 / w;
            assert!((0.6..=1.0).contains(&frac), "{per_col} calls per column: column {c} busy {frac:.2}");
            assert!(cell.dominant.is_some());
        }
        let total: u64 = out.iter().map(|c| c.count as u64).sum();
        assert!(total as usize >= lod.starting_in(t0, t1).len());
    }
}

/// A bucket summed call by call: count, busy, bytes, latest end, flags,
/// (call, time, count) per call name.
type Brute = (u32, i64, i64, i64, u16, Vec<(u16, i64, u32)>);

/// The cache's coarse levels, built from calls in any order (a rank's
/// threads come one after the other from its journals), equal brute-force
/// buckets at the widths and origin they say, with at most one bucket per
/// `CALLS_PER_BUCKET` calls (or `MIN_BUCKETS`) on their finest level.
#[test]
fn coarse_levels_from_calls_in_any_order_equal_brute_force() {
    use std::collections::BTreeMap;
    use trace_lod::coarse::{CoarseBuilder, CALLS_PER_BUCKET, MIN_BUCKETS};
    for (seed, n) in [(3u64, 1usize), (5, 700), (9, 40_000), (11, 250_000)] {
        let calls = random_calls(seed, n);
        let mut order: Vec<usize> = (0..n).collect();
        let mut r = Rng(seed * 7 + 1);
        // Shuffled in runs, as threads' journals are.
        for i in (1..n).rev() {
            if r.next(4) == 0 {
                order.swap(i, r.next(i as u64 + 1) as usize);
            }
        }
        let mut b = CoarseBuilder::default();
        for &i in &order {
            b.push(calls[i]);
        }
        let (h, levels) = b.finish(0, u64::MAX);
        assert!(!levels.is_empty());
        // Memory bounded by the buckets, not the calls.
        assert!(levels[0].len() as u64 <= (n as u64 / CALLS_PER_BUCKET).max(MIN_BUCKETS as u64), "seed {seed}");
        assert_eq!(h.t_min, calls.iter().map(|c| c.t_start).min().unwrap());
        assert_eq!(h.t_max, calls.iter().map(|c| c.t_end.max(c.t_start)).max().unwrap());
        for (k, level) in levels.iter().enumerate() {
            let sh = h.shift0 + 2 * k as u32;
            let mut want: BTreeMap<i64, Brute> = BTreeMap::new();
            for c in &calls {
                let d = (c.t_end - c.t_start).max(0);
                let e = want.entry((c.t_start - h.origin) >> sh).or_insert((0, 0, 0, i64::MIN, 0, Vec::new()));
                e.0 += 1;
                e.1 += d;
                e.2 += c.bytes.max(0);
                e.3 = e.3.max(c.t_start + d);
                e.4 |= c.flags;
                match e.5.iter_mut().find(|x| x.0 == c.name) {
                    Some(x) => {
                        x.1 += d;
                        x.2 += 1;
                    }
                    None => e.5.push((c.name, d, 1)),
                }
            }
            let got: Vec<_> =
                level.iter().map(|b| (b.key, b.count, b.busy, b.bytes, b.max_end, b.flags, b.dominant)).collect();
            let want: Vec<_> =
                want.into_iter().map(|(key, w)| (key, w.0, w.1, w.2, w.3, w.4, dominant(w.5.into_iter()))).collect();
            assert_eq!(got, want, "seed {seed} level {k}");
        }
    }
}
