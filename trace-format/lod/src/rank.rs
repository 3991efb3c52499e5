//! The level-of-detail data of one rank and its queries.

use std::ops::Range;

use crate::pod::{view, Bucket, Ev, Long, LONG};
use crate::pyramid::{Header, Image, ENDIAN, MAGIC};

/// Where the bytes of a rank live: a memory-mapped cache file, or memory.
pub enum Store {
    Mmap(memmap2::Mmap),
    Words(Vec<u64>),
}

impl Store {
    fn bytes(&self) -> &[u8] {
        match self {
            Store::Mmap(m) => m,
            Store::Words(w) => crate::pod::as_bytes(w),
        }
    }
}

/// A call of a rank, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    pub t_start: i64,
    pub t_end: i64,
    pub name: u16,
    pub flags: u16,
}

impl Call {
    pub fn duration(&self) -> i64 {
        self.t_end - self.t_start
    }
}

/// What one column (terminal cell, pixel) of a rank's timeline shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    /// Calls that start in the cell.
    pub count: u32,
    /// Time in MPI inside the cell, ns (at most the cell's width).
    pub busy: i64,
    /// The call with the most time in the cell.
    pub dominant: Option<u16>,
    /// The single call that dominates the cell: the one covering the whole
    /// cell, or (when few enough calls are in view to be drawn one by one)
    /// the one with the most time in it.
    pub event: Option<usize>,
    /// [`crate::flags`] of the calls in the cell.
    pub flags: u16,
}

/// Calls per cell up to which cells are computed call by call (exactly).
pub const EXACT_PER_CELL: usize = 4;

/// The calls and zoom pyramid of one rank.
pub struct RankLod {
    store: Store,
    header: Header,
    events_off: usize,
    long_off: usize,
    /// (byte offset, buckets) of each level.
    levels: Vec<(usize, usize)>,
    /// Calls of the rank (those held, or for a coarse cache file the
    /// coarsest level's count).
    n_calls: u64,
    /// A coarse cache file's trailer: (offset, length).
    trailer: Option<(usize, usize)>,
    /// Call ids of a coarse cache file to the trace's, for ids from the API
    /// table's length on (the file names them in its trailer).
    name_map: Vec<u16>,
}

impl std::fmt::Debug for RankLod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankLod").field("header", &self.header).field("levels", &self.levels).finish()
    }
}

impl RankLod {
    /// Views a cache file image; `None` if it is damaged or of another version.
    pub fn from_store(store: Store) -> Result<RankLod, String> {
        let b = store.bytes();
        let header = *view::<Header>(b, 0, 1).and_then(|h| h.first()).ok_or("shorter than its header")?;
        if header.magic != MAGIC {
            return Err("not a level-of-detail file".into());
        }
        if header.version != crate::FORMAT_VERSION || header.endian != ENDIAN {
            return Err(format!("format version {} (this tool: {})", header.version, crate::FORMAT_VERSION));
        }
        // Every count of the header is checked against the file's size
        // before it sizes anything (the level table is viewed, not copied,
        // and only once it is known to be inside the file).
        let nlev = header.levels as usize;
        let lens = view::<u64>(b, 72, nlev).ok_or("truncated level table")?;
        let events_off = 72 + 8 * nlev;
        let n = usize::try_from(header.n_events).map_err(|_| "bad event count")?;
        let nl = usize::try_from(header.n_long).map_err(|_| "bad long count")?;
        let size = |count: usize, each: usize| count.checked_mul(each).filter(|&x| x <= b.len());
        let long_off = size(n, 16).and_then(|x| x.checked_add(events_off)).ok_or("bad event count")?;
        let mut off = size(nl, 16).and_then(|x| x.checked_add(long_off)).ok_or("bad long count")?;
        let mut levels = Vec::with_capacity(nlev);
        for &l in lens {
            let l = usize::try_from(l).map_err(|_| "bad level size")?;
            levels.push((off, l));
            off = size(l, 40).and_then(|x| x.checked_add(off)).ok_or("bad level size")?;
        }
        let coarse = header.kind == crate::coarse::KIND_COARSE;
        let mut trailer = None;
        if coarse {
            if n != 0 || nl != 0 {
                return Err("a coarse cache file with calls".into());
            }
            let len = view::<u64>(b, off, 1).and_then(|l| l.first()).ok_or("no trailer")?;
            let len = usize::try_from(*len).ok().filter(|&l| l <= b.len()).ok_or("bad trailer length")?;
            trailer = Some((off + 8, len));
            off = off.checked_add(8 + len).ok_or("bad trailer length")?;
        } else if header.kind != 0 {
            return Err(format!("unknown kind {}", header.kind));
        }
        if off != b.len() {
            return Err(format!("{} bytes, expected {off}", b.len()));
        }
        let mut r =
            RankLod { store, header, events_off, long_off, levels, n_calls: n as u64, trailer, name_map: Vec::new() };
        if coarse {
            let top = r.level(r.levels.len().saturating_sub(1));
            r.n_calls = top.iter().map(|bk| u64::from(bk.count)).sum();
        }
        Ok(r)
    }

    /// Checks everything a cache file holds against what the builder
    /// promises, in one pass over the file: the level widths; the calls
    /// sorted by start, their names below `names` (when known), their ends
    /// within the header's span, which starts at the first call; each long
    /// duration once, in order, for a call marked long; every bucket of the
    /// finest level exactly the calls starting in it (count, time, end,
    /// flags), and every coarser bucket exactly the finer ones under it.
    /// [`RankLod::from_store`] only checks the counts against the file's
    /// size: the queries saturate on anything, but a damaged file would
    /// draw nonsense (a call out of order is never found again, a name
    /// index points past the names) without this.
    pub fn validate(&self, names: Option<usize>) -> Result<(), String> {
        if self.is_coarse() {
            return self.validate_coarse(names);
        }
        let h = &self.header;
        let b = self.store.bytes();
        let n = self.len();
        let evs: &[Ev] = view(b, self.events_off, n).ok_or("misaligned calls")?;
        let long: &[Long] = view(b, self.long_off, h.n_long as usize).ok_or("misaligned long durations")?;
        let nlev = self.levels.len();
        if nlev == 0 || h.shift0 as usize + 2 * (nlev - 1) > 62 {
            return Err(format!("{nlev} levels from a width of 2^{} ns", h.shift0));
        }
        let name_ok = |name: u16| names.is_none_or(|k| (name as usize) < k);
        let level0 =
            self.levels.first().and_then(|&(off, len)| view::<Bucket>(b, off, len)).ok_or("misaligned level")?;
        let (mut li, mut long_i, mut t_max) = (0usize, 0usize, i64::MIN);
        // The finest bucket being summed: (key, count, busy, max_end, flags).
        let mut acc: Option<(i64, u32, i64, i64, u16)> = None;
        let check_bucket = |li: usize, acc: (i64, u32, i64, i64, u16)| -> Result<(), String> {
            let bk = level0.get(li).ok_or_else(|| format!("calls beyond the {} buckets of level 0", level0.len()))?;
            if (bk.key, bk.count, bk.busy, bk.max_end, bk.flags) != acc || !name_ok(bk.dominant) {
                return Err(format!("bucket {li} of level 0 disagrees with its calls"));
            }
            Ok(())
        };
        for (i, e) in evs.iter().enumerate() {
            if i == 0 && (e.t_start != h.t_min || h.origin != h.t_min) {
                return Err(format!("first call at {} ns, the header says {}", e.t_start, h.t_min));
            }
            if i > 0 && e.t_start < evs[i - 1].t_start {
                return Err(format!("call {i} starts before call {}: not sorted", i - 1));
            }
            if !name_ok(e.name) {
                return Err(format!("call {i} has name {} of {} names", e.name, names.unwrap_or(0)));
            }
            let dur = if e.dur == LONG {
                let l = long.get(long_i).filter(|l| l.idx == i as u64 && l.dur >= LONG as i64);
                long_i += 1;
                l.ok_or_else(|| format!("call {i}: no long duration for it"))?.dur
            } else {
                e.dur as i64
            };
            let end = e.t_start.checked_add(dur).ok_or_else(|| format!("call {i} ends beyond time"))?;
            t_max = t_max.max(end);
            let key =
                e.t_start.checked_sub(h.origin).ok_or_else(|| format!("call {i} starts out of range"))? >> h.shift0;
            match &mut acc {
                Some(a) if a.0 == key => {
                    a.1 = a.1.checked_add(1).ok_or("too many calls in a bucket")?;
                    a.2 = a.2.saturating_add(dur);
                    a.3 = a.3.max(end);
                    a.4 |= e.flags;
                }
                _ => {
                    if let Some(a) = acc {
                        check_bucket(li, a)?;
                        li += 1;
                    }
                    acc = Some((key, 1, dur, end, e.flags));
                }
            }
        }
        if let Some(a) = acc {
            check_bucket(li, a)?;
            li += 1;
        }
        if li != level0.len() || long_i != long.len() {
            return Err(format!(
                "{} buckets and {} long durations for {li} and {long_i} in the calls",
                level0.len(),
                long.len()
            ));
        }
        if n > 0 && t_max != h.t_max {
            return Err(format!("calls end at {t_max} ns, the header says {}", h.t_max));
        }
        self.validate_levels(name_ok)
    }

    /// [`RankLod::validate`] of a coarse cache file: the level widths; the
    /// finest level's keys increasing and its ends within the header's
    /// span, whose end is the latest of them; every coarser bucket exactly
    /// the finer ones under it.
    fn validate_coarse(&self, names: Option<usize>) -> Result<(), String> {
        let h = &self.header;
        let nlev = self.levels.len();
        if nlev == 0 || h.shift0 as usize + 2 * (nlev - 1) > 62 {
            return Err(format!("{nlev} levels from a width of 2^{} ns", h.shift0));
        }
        let l0 = self.level(0);
        if l0.len() != self.levels[0].1 {
            return Err("misaligned level".into());
        }
        let name_ok = |name: u16| names.is_none_or(|k| (name as usize) < k);
        let mut t_max = i64::MIN;
        for (i, bk) in l0.iter().enumerate() {
            if i > 0 && bk.key <= l0[i - 1].key {
                return Err(format!("bucket {i} of level 0 out of order"));
            }
            // Buckets hold calls that start within the span.
            let start = self.bucket_start(0, bk.key);
            if bk.count == 0 || bk.busy < 0 || bk.max_end < h.t_min || start > h.t_max || bk.max_end < start {
                return Err(format!("bucket {i} of level 0 disagrees with the header"));
            }
            t_max = t_max.max(bk.max_end);
        }
        if !l0.is_empty() && t_max != h.t_max {
            return Err(format!("calls end at {t_max} ns, the header says {}", h.t_max));
        }
        self.validate_levels(name_ok)
    }

    /// Each coarser level: the finer buckets under each of its buckets
    /// (keys shifted by 2), summed; dominant calls named.
    fn validate_levels(&self, name_ok: impl Fn(u16) -> bool) -> Result<(), String> {
        let nlev = self.levels.len();
        if self.level(0).iter().any(|bk| !name_ok(bk.dominant)) {
            return Err("a bucket of level 0 names no call".into());
        }
        for k in 1..nlev {
            let (fine, coarse) = (self.level(k - 1), self.level(k));
            if coarse.len() > fine.len() || (coarse.is_empty() && !fine.is_empty()) {
                return Err(format!("level {k} has {} buckets over {}", coarse.len(), fine.len()));
            }
            let mut j = 0usize;
            for (ci, c) in coarse.iter().enumerate() {
                let mut sum = (c.key, 0u32, 0i64, 0i64, i64::MIN, 0u16);
                let first = j;
                while let Some(f) = fine.get(j).filter(|f| f.key >> 2 == c.key) {
                    sum.1 = sum.1.saturating_add(f.count);
                    sum.2 = sum.2.saturating_add(f.busy);
                    sum.3 = sum.3.saturating_add(f.bytes);
                    sum.4 = sum.4.max(f.max_end);
                    sum.5 |= f.flags;
                    j += 1;
                }
                let got = (c.key, c.count, c.busy, c.bytes, c.max_end, c.flags);
                if j == first || got != sum || !name_ok(c.dominant) {
                    return Err(format!("bucket {ci} of level {k} disagrees with the level below"));
                }
            }
            if j != fine.len() {
                return Err(format!("level {k} leaves buckets of level {} out", k - 1));
            }
        }
        Ok(())
    }

    /// The header and levels of this rank's cache file, at most `budget`
    /// bytes of buckets ([`crate::coarse::first_cached_level`]).
    pub fn coarse_levels(&self, budget: u64) -> (Header, Vec<Vec<Bucket>>) {
        let lens: Vec<usize> = self.levels.iter().map(|l| l.1).collect();
        let k0 = crate::coarse::first_cached_level(&lens, budget);
        let mut h = self.header;
        h.shift0 += 2 * k0 as u32;
        h.levels = (lens.len() - k0.min(lens.len())) as u32;
        h.kind = crate::coarse::KIND_COARSE;
        h.n_events = 0;
        h.n_long = 0;
        (h, (k0..lens.len()).map(|k| self.level(k).to_vec()).collect())
    }

    /// Keeps a freshly built image in memory.
    pub fn from_image(image: Image) -> RankLod {
        RankLod::from_store(Store::Words(image.into_words())).unwrap_or_else(|e| unreachable!("own image: {e}"))
    }

    pub fn rank(&self) -> i32 {
        self.header.rank
    }
    pub fn len(&self) -> usize {
        self.header.n_events as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Calls of the rank: those held, or those the levels of a coarse
    /// cache file count (which holds none).
    pub fn n_calls(&self) -> u64 {
        self.n_calls
    }
    /// Whether this is a coarse cache file: levels only, no calls (the
    /// trace's first frame, until its calls are read).
    pub fn is_coarse(&self) -> bool {
        self.header.kind == crate::coarse::KIND_COARSE
    }
    /// The trailer of a coarse cache file.
    pub fn trailer(&self) -> Option<&[u8]> {
        self.trailer.and_then(|(off, len)| self.store.bytes().get(off..off + len))
    }
    /// Maps the call ids of a coarse cache file from the API table's
    /// length `base` on to the trace's (`map[i]` for id `base + i`).
    pub fn set_name_map(&mut self, base: usize, map: &[u16]) {
        self.name_map = (0..base as u16).chain(map.iter().copied()).collect();
    }
    /// The trace's id of a call id stored in this rank's data.
    fn name(&self, id: u16) -> u16 {
        self.name_map.get(id as usize).copied().unwrap_or(id)
    }
    /// The calls, sorted by start.
    pub fn events(&self) -> &[Ev] {
        view(self.store.bytes(), self.events_off, self.len()).unwrap_or(&[])
    }
    fn long(&self) -> &[Long] {
        view(self.store.bytes(), self.long_off, self.header.n_long as usize).unwrap_or(&[])
    }
    /// Start of the first and end of the latest call.
    pub fn span(&self) -> Option<(i64, i64)> {
        (self.n_calls > 0).then_some((self.header.t_min, self.header.t_max))
    }
    /// Bytes of the data (the cache file's size).
    pub fn size_bytes(&self) -> usize {
        self.store.bytes().len()
    }
    /// Lets the kernel read ahead in the mapped cache file as usual.
    pub fn advise_normal(&self) {
        if let Store::Mmap(m) = &self.store {
            let _ = m.advise(memmap2::Advice::Normal);
        }
    }
    /// Whether the data is a memory-mapped cache file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.store, Store::Mmap(_))
    }

    /// Duration of call `i`: never negative, and the end it gives never
    /// overflows (a damaged cache file holds any bits; the builder writes
    /// no negative duration).
    fn dur(&self, i: usize, e: &Ev) -> i64 {
        if e.dur != LONG {
            return e.dur as i64;
        }
        let long = self.long();
        let j = long.partition_point(|l| l.idx < i as u64);
        let d = long.get(j).filter(|l| l.idx == i as u64).map(|l| l.dur).unwrap_or(LONG as i64);
        d.clamp(0, i64::MAX - e.t_start.max(0))
    }

    /// Call `i` (panics if out of range, like slice indexing).
    pub fn call(&self, i: usize) -> Call {
        let e = self.events()[i];
        Call { t_start: e.t_start, t_end: e.t_start.saturating_add(self.dur(i, &e)), name: e.name, flags: e.flags }
    }

    /// Index of the first call starting at or after `t`.
    pub fn first_at(&self, t: i64) -> usize {
        self.events().partition_point(|e| e.t_start < t)
    }

    /// Calls starting in `[t0, t1)`.
    pub fn starting_in(&self, t0: i64, t1: i64) -> Range<usize> {
        self.first_at(t0)..self.first_at(t1).max(self.first_at(t0))
    }

    /// The call running at `t` (the latest one started at or before `t`
    /// that had not ended; a call of no duration counts at its start).
    pub fn call_at(&self, t: i64) -> Option<usize> {
        let j = self.events().partition_point(|e| e.t_start <= t);
        let i = j.checked_sub(1)?;
        let c = self.call(i);
        (c.t_end > t || c.t_start == t).then_some(i)
    }

    pub fn levels(&self) -> usize {
        self.levels.len()
    }
    /// Width of the buckets of level `k`, ns.
    pub fn level_width(&self, k: usize) -> i64 {
        1i64 << (self.header.shift0 as usize + 2 * k).min(62)
    }
    /// The buckets of level `k`.
    pub fn level(&self, k: usize) -> &[Bucket] {
        self.levels.get(k).and_then(|&(off, n)| view(self.store.bytes(), off, n)).unwrap_or(&[])
    }
    /// Start of bucket `key` of level `k`.
    pub fn bucket_start(&self, k: usize, key: i64) -> i64 {
        let sh = (self.header.shift0 as usize + 2 * k).min(62) as u32;
        // Saturating: keys and origin of a damaged file may be anything.
        self.header.origin.saturating_add(key.checked_shl(sh).filter(|v| v >> sh == key).unwrap_or(if key < 0 {
            i64::MIN
        } else {
            i64::MAX
        }))
    }
    /// The coarsest level whose buckets are at most `width` ns wide (the
    /// finest level if all are wider).
    pub fn level_for(&self, width: f64) -> usize {
        (0..self.levels()).rev().find(|&k| self.level_width(k) as f64 <= width).unwrap_or(0)
    }
    /// The buckets of level `k` that hold calls starting in `[t0, t1)`.
    pub fn buckets_in(&self, k: usize, t0: i64, t1: i64) -> &[Bucket] {
        let l = self.level(k);
        if t1 <= t0 {
            return &[];
        }
        let sh = (self.header.shift0 as usize + 2 * k).min(62);
        let ka = (t0.saturating_sub(self.header.origin)) >> sh;
        let kb = (t1 - 1).saturating_sub(self.header.origin) >> sh;
        let a = l.partition_point(|b| b.key < ka);
        let z = l.partition_point(|b| b.key <= kb).max(a);
        &l[a..z]
    }

    /// What each of `n` equal columns of `[t0, t1)` shows, in `out`.
    ///
    /// When few calls are in view (at most [`EXACT_PER_CELL`] per column on
    /// average) the cells are computed call by call and are exact, at a
    /// cost of O(n + calls). Otherwise they come from the pyramid level
    /// with buckets at most one column wide (or the finest level, whose
    /// buckets then spread their time over the columns they span), plus,
    /// per column, the call that covers it when one started earlier; the
    /// cost is O(n) plus a short search per column a call covers, whatever
    /// the number of calls. No division per column or call: the column
    /// bounds are computed once, incrementally.
    pub fn cells(&self, t0: i64, t1: i64, n: usize, out: &mut Vec<Cell>) {
        out.clear();
        out.resize(n, Cell::default());
        if n == 0 || t1 <= t0 || self.n_calls == 0 {
            return;
        }
        let win = Window::new(t0, t1, n);
        let r = self.starting_in(t0, t1);
        if !self.is_coarse() && r.len() <= n.saturating_mul(EXACT_PER_CELL) {
            self.cells_exact(&win, r, out);
        } else {
            // In floating point: the window may be the whole range of i64.
            let w = (t1 as f64 - t0 as f64) / n as f64;
            self.cells_binned(&win, self.level_for(w), r.start, out);
        }
    }

    fn cells_exact(&self, win: &Window, r: Range<usize>, out: &mut [Cell]) {
        let evs = self.events();
        let n = win.n;
        let b = &win.bounds;
        let mut best = vec![-1i64; n];
        // Starts only grow (the calls are sorted), so the column of each
        // call is found by walking on from the previous one.
        let mut k = 0usize;
        for (i, e) in evs.iter().enumerate().take(r.end).skip(r.start.saturating_sub(1)) {
            let t_end = e.t_start.saturating_add(self.dur(i, e));
            if e.t_start < win.t0 && t_end <= win.t0 {
                continue;
            }
            let s = e.t_start.max(win.t0);
            let end = t_end.min(win.t1);
            while k + 1 < n && b[k + 1] <= s {
                k += 1;
            }
            if e.t_start >= win.t0 {
                out[k].count += 1;
            }
            let mut c = k;
            loop {
                let overlap = end.min(b[c + 1]).saturating_sub(s.max(b[c])).max(0);
                let cell = &mut out[c];
                cell.busy = cell.busy.saturating_add(overlap);
                cell.flags |= e.flags;
                if overlap > best[c] {
                    best[c] = overlap;
                    cell.dominant = Some(e.name);
                    cell.event = Some(i);
                }
                c += 1;
                if c >= n || b[c] >= end {
                    break;
                }
            }
        }
    }

    /// Binned cells from level `k`; `first` is the index of the first call
    /// starting in the window.
    fn cells_binned(&self, win: &Window, k: usize, first: usize, out: &mut [Cell]) {
        let n = win.n;
        let b = &win.bounds;
        let mut best = vec![-1i64; n];
        let evs = self.events();
        let l = self.level(k);
        let inside = self.buckets_in(k, win.t0, win.t1);
        let base = (inside.as_ptr() as usize - l.as_ptr() as usize) / std::mem::size_of::<Bucket>();
        // The latest end of calls started before each column: the bucket
        // before the window first, then the buckets of the columns so far.
        let mut reach = if base > 0 { l[base - 1].max_end } else { i64::MIN };
        // The call running at the window's start may be in a bucket that
        // straddles it (then seen only after the first column).
        if let Some(i) = gallop_le(evs, first, win.t0).checked_sub(1) {
            reach = reach.max(self.call(i).t_end);
        }
        // Calls in the buckets seen so far end at index `seen` (a guess
        // for finding the call running into a column).
        let mut seen = match inside.first() {
            Some(x) if self.bucket_start(k, x.key) < win.t0 => self.first_at(self.bucket_start(k, x.key)),
            _ => first,
        };
        let width = self.level_width(k);
        let mut next = 0usize;
        let mut covering: Option<(usize, Call)> = None;
        // Without the calls (a coarse cache file), a bucket wider than a
        // column tells only that its calls end by its latest end, not
        // where within it they run: its end counts for the columns after
        // the bucket's own (until then its time is spread over them).
        // (bucket end, latest end of its calls) of such buckets.
        let mut pending: Vec<(i64, i64)> = Vec::new();
        for c in 0..n {
            let (a, z) = (b[c], b[c + 1]);
            pending.retain(|&(bucket_end, max_end)| {
                let due = bucket_end <= a;
                if due {
                    reach = reach.max(max_end);
                }
                !due
            });
            if reach > a {
                // A call started before the column runs into it.
                if reach >= z {
                    let call = match covering {
                        Some((i, x)) if x.t_start <= a && x.t_end >= z => Some((i, x)),
                        _ => gallop_le(evs, seen, a)
                            .checked_sub(1)
                            .map(|i| (i, self.call(i)))
                            .filter(|(_, x)| x.t_end >= z),
                    };
                    if let Some((i, x)) = call {
                        covering = Some((i, x));
                        let cell = &mut out[c];
                        cell.event = Some(i);
                        cell.dominant = Some(x.name);
                        cell.flags |= x.flags;
                        best[c] = i64::MAX;
                    }
                }
                out[c].busy = out[c].busy.saturating_add(reach.min(z).saturating_sub(a));
            }
            while let Some(bk) = inside.get(next) {
                let bs = self.bucket_start(k, bk.key);
                let start = bs.max(win.t0);
                if start >= z {
                    break;
                }
                out[c].count = out[c].count.saturating_add(bk.count);
                // A bucket that runs past the column's end gives its time to
                // the columns it spans by overlap (no aliasing stripes).
                let end = bs.saturating_add(width).min(win.t1);
                let total = end.saturating_sub(start).max(1) as f64;
                let mut cc = c;
                let mut given = 0i64;
                loop {
                    let last = cc + 1 >= n || b[cc + 1] >= end;
                    let part = if last {
                        bk.busy.saturating_sub(given)
                    } else {
                        (bk.busy as f64 * b[cc + 1].saturating_sub(start.max(b[cc])) as f64 / total) as i64
                    };
                    given = given.saturating_add(part);
                    let cell = &mut out[cc];
                    cell.busy = cell.busy.saturating_add(part);
                    cell.flags |= bk.flags;
                    if part > best[cc] {
                        best[cc] = part;
                        cell.dominant = Some(self.name(bk.dominant));
                    }
                    if last {
                        break;
                    }
                    cc += 1;
                }
                if self.is_coarse() && bs.saturating_add(width) > z {
                    pending.push((bs.saturating_add(width), bk.max_end));
                } else {
                    reach = reach.max(bk.max_end);
                }
                seen = seen.saturating_add(bk.count as usize);
                next += 1;
            }
        }
        for (c, cell) in out.iter_mut().enumerate() {
            cell.busy = cell.busy.clamp(0, b[c + 1] - b[c]);
        }
    }
}

/// The number of calls of `evs` starting at or before `t`, searched
/// outwards from `guess` (cheap when the answer is near it).
fn gallop_le(evs: &[Ev], guess: usize, t: i64) -> usize {
    let le = |i: usize| evs[i].t_start <= t;
    let g = guess.min(evs.len());
    if g < evs.len() && le(g) {
        // Forward: the answer is after g.
        let mut step = 1;
        while g + step < evs.len() && le(g + step) {
            step *= 2;
        }
        let (lo, hi) = (g + step / 2 + 1, (g + step).min(evs.len()));
        lo + evs[lo..hi].partition_point(|e| e.t_start <= t)
    } else {
        // Backward: the answer is at or before g.
        let mut step = 1;
        while step <= g && !le(g - step) {
            step *= 2;
        }
        let lo = g.saturating_sub(step);
        let hi = g - step / 2;
        lo + evs[lo..hi].partition_point(|e| e.t_start <= t)
    }
}

/// `n` equal columns of `[t0, t1)` and their bounds (`bounds[c]` is the
/// start of column `c`, `bounds[n] == t1`).
struct Window {
    t0: i64,
    t1: i64,
    n: usize,
    bounds: Vec<i64>,
}

impl Window {
    fn new(t0: i64, t1: i64, n: usize) -> Window {
        let mut bounds = Vec::new();
        column_bounds(t0, t1, n, &mut bounds);
        Window { t0, t1, n, bounds }
    }
}

/// The bounds of `n` equal columns of `[t0, t1)` into `out` (`n + 1`
/// values): column `c` starts at `t0 + floor((t1 - t0) * c / n)`, the last
/// value is `t1`. Computed without overflow or a division per column.
pub fn column_bounds(t0: i64, t1: i64, n: usize, out: &mut Vec<i64>) {
    out.clear();
    if n == 0 {
        out.push(t0);
        return;
    }
    // In 128 bits: the span of any two i64 fits (a damaged cache file's
    // span may be the whole range), and every bound lies in [t0, t1].
    let span = (t1 as i128 - t0 as i128).max(0);
    let ni = n as i128;
    let (q, rem) = (span / ni, span % ni);
    out.reserve(n + 1);
    let (mut acc, mut at) = (0i128, t0 as i128);
    for _ in 0..=n {
        out.push(at as i64);
        at += q;
        acc += rem;
        if acc >= ni {
            acc -= ni;
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bounds_equal_the_formula() {
        for (t0, t1, n) in [
            (0i64, 1920i64, 1920usize),
            (5, 6, 7),
            (-100, 1_000_003, 1920),
            (i64::MIN / 2, i64::MAX / 2, 1920),
            // The whole range (a damaged cache file's span): no overflow.
            (i64::MIN, i64::MAX, 7),
            (10, 10_000_000_007, 333),
        ] {
            let w = Window::new(t0, t1, n);
            assert_eq!(w.bounds.len(), n + 1);
            for (c, &b) in w.bounds.iter().enumerate() {
                assert_eq!(
                    b as i128,
                    t0 as i128 + (t1 as i128 - t0 as i128) * c as i128 / n as i128,
                    "column {c} of {n} over [{t0}, {t1})"
                );
            }
        }
    }

    #[test]
    fn gallop_equals_partition_point() {
        let starts = [1i64, 3, 3, 3, 7, 9, 9, 20, 21, 22, 40, 41, 100];
        let evs: Vec<Ev> = starts.iter().map(|&t| Ev { t_start: t, ..Ev::default() }).collect();
        for t in -1..110 {
            let want = evs.partition_point(|e| e.t_start <= t);
            for guess in 0..=evs.len() + 2 {
                assert_eq!(gallop_le(&evs, guess, t), want, "t {t} guess {guess}");
            }
        }
        assert_eq!(gallop_le(&[], 0, 5), 0);
    }
}
