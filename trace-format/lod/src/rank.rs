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
/// Same, when the finest pyramid level is coarser than a cell.
pub const EXACT_PER_CELL_FINE: usize = 16;

/// The calls and zoom pyramid of one rank.
pub struct RankLod {
    store: Store,
    header: Header,
    events_off: usize,
    long_off: usize,
    /// (byte offset, buckets) of each level.
    levels: Vec<(usize, usize)>,
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
        let nlev = header.levels as usize;
        let lens = view::<u64>(b, 72, nlev).ok_or("truncated level table")?;
        let events_off = 72 + 8 * nlev;
        let n = usize::try_from(header.n_events).map_err(|_| "bad event count")?;
        let nl = usize::try_from(header.n_long).map_err(|_| "bad long count")?;
        let long_off = events_off + 16 * n;
        let mut off = long_off + 16 * nl;
        let mut levels = Vec::with_capacity(nlev);
        for &l in lens {
            let l = usize::try_from(l).map_err(|_| "bad level size")?;
            levels.push((off, l));
            off = off.checked_add(40 * l).ok_or("bad level size")?;
        }
        if off != b.len() {
            return Err(format!("{} bytes, expected {off}", b.len()));
        }
        Ok(RankLod { store, header, events_off, long_off, levels })
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
    /// The calls, sorted by start.
    pub fn events(&self) -> &[Ev] {
        view(self.store.bytes(), self.events_off, self.len()).unwrap_or(&[])
    }
    fn long(&self) -> &[Long] {
        view(self.store.bytes(), self.long_off, self.header.n_long as usize).unwrap_or(&[])
    }
    /// Start of the first and end of the latest call.
    pub fn span(&self) -> Option<(i64, i64)> {
        (!self.is_empty()).then_some((self.header.t_min, self.header.t_max))
    }
    /// Bytes of the data (the cache file's size).
    pub fn size_bytes(&self) -> usize {
        self.store.bytes().len()
    }
    /// Whether the data is a memory-mapped cache file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.store, Store::Mmap(_))
    }

    fn dur(&self, i: usize, e: &Ev) -> i64 {
        if e.dur != LONG {
            return e.dur as i64;
        }
        let long = self.long();
        let j = long.partition_point(|l| l.idx < i as u64);
        long.get(j).filter(|l| l.idx == i as u64).map(|l| l.dur).unwrap_or(LONG as i64)
    }

    /// Call `i` (panics if out of range, like slice indexing).
    pub fn call(&self, i: usize) -> Call {
        let e = self.events()[i];
        Call { t_start: e.t_start, t_end: e.t_start + self.dur(i, &e), name: e.name, flags: e.flags }
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
        self.header.origin + (key << (self.header.shift0 as usize + 2 * k).min(62))
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
    /// average, or [`EXACT_PER_CELL_FINE`] when the finest pyramid level is
    /// coarser than a column) the cells are computed call by call and are
    /// exact. Otherwise they come from the pyramid level with buckets at
    /// most one column wide (each bucket adds to the column where it
    /// starts), plus, per column, the call that runs into it from the
    /// left; the cost is O(n log calls) whatever the number of calls.
    pub fn cells(&self, t0: i64, t1: i64, n: usize, out: &mut Vec<Cell>) {
        out.clear();
        out.resize(n, Cell::default());
        if n == 0 || t1 <= t0 || self.is_empty() {
            return;
        }
        let win = Window { t0, t1, n };
        let r = self.starting_in(t0, t1);
        let w = (t1 - t0) as f64 / n as f64;
        let fine = (self.level_width(0) as f64) > w;
        let limit = n.saturating_mul(if fine { EXACT_PER_CELL_FINE } else { EXACT_PER_CELL });
        if r.len() <= limit {
            self.cells_exact(&win, r, out);
        } else {
            self.cells_binned(&win, self.level_for(w), out);
        }
    }

    fn cells_exact(&self, win: &Window, r: Range<usize>, out: &mut [Cell]) {
        let mut best = vec![-1i64; win.n];
        let first = r.start.saturating_sub(1);
        for i in first..r.end {
            let c = self.call(i);
            if c.t_start < win.t0 && c.t_end <= win.t0 {
                continue;
            }
            if c.t_start >= win.t0 {
                let k = win.cell_of(c.t_start);
                out[k].count += 1;
            }
            let s = c.t_start.max(win.t0);
            let e = c.t_end.min(win.t1);
            let (ka, kb) = (win.cell_of(s), if e > s { win.cell_of(e - 1) } else { win.cell_of(s) });
            for (k, cell) in out.iter_mut().enumerate().take(kb + 1).skip(ka) {
                let overlap = (e.min(win.bound(k + 1)) - s.max(win.bound(k))).max(0);
                cell.busy += overlap;
                cell.flags |= c.flags;
                if overlap > best[k] {
                    best[k] = overlap;
                    cell.dominant = Some(c.name);
                    cell.event = Some(i);
                }
            }
        }
    }

    fn cells_binned(&self, win: &Window, k: usize, out: &mut [Cell]) {
        let mut best = vec![-1i64; win.n];
        // The latest end of calls started before each column: the bucket
        // before the window first, then the buckets of the columns so far.
        let l = self.level(k);
        let inside = self.buckets_in(k, win.t0, win.t1);
        let first = inside.as_ptr() as usize;
        let base = (first - l.as_ptr() as usize) / std::mem::size_of::<Bucket>();
        let mut reach = if base > 0 { l[base - 1].max_end } else { i64::MIN };
        let mut next = 0usize;
        let mut covering: Option<(usize, Call)> = None;
        let mut carry = 0i64;
        for (c, cell) in out.iter_mut().enumerate() {
            let (a, z) = (win.bound(c), win.bound(c + 1));
            cell.busy += std::mem::take(&mut carry);
            if reach > a {
                // A call started before the column runs into it.
                let tail = reach.min(z) - a;
                if reach >= z {
                    let call = match covering {
                        Some((i, x)) if x.t_start <= a && x.t_end >= z => Some((i, x)),
                        _ => self.call_at(a).map(|i| (i, self.call(i))).filter(|(_, x)| x.t_end >= z),
                    };
                    if let Some((i, x)) = call {
                        covering = Some((i, x));
                        cell.event = Some(i);
                        cell.dominant = Some(x.name);
                        cell.flags |= x.flags;
                        best[c] = i64::MAX;
                    }
                }
                cell.busy += tail;
            }
            while let Some(b) = inside.get(next) {
                let start = self.bucket_start(k, b.key).max(win.t0);
                if start >= z {
                    break;
                }
                cell.count += b.count;
                // A bucket narrower than a column may straddle its end: the
                // time goes to both columns by overlap (no aliasing stripes).
                let end = self.bucket_start(k, b.key).saturating_add(self.level_width(k));
                let spill = if end > z && c + 1 < win.n { (b.busy as i128 * (end - z) as i128 / (end - start).max(1) as i128) as i64 } else { 0 };
                cell.busy += b.busy - spill;
                carry += spill;
                cell.flags |= b.flags;
                if b.busy > best[c] {
                    best[c] = b.busy;
                    cell.dominant = Some(b.dominant);
                }
                reach = reach.max(b.max_end);
                next += 1;
            }
            cell.busy = cell.busy.min(z - a);
        }
    }
}

/// `n` equal columns of `[t0, t1)`.
struct Window {
    t0: i64,
    t1: i64,
    n: usize,
}

impl Window {
    /// Start of column `c` (`bound(n) == t1`).
    fn bound(&self, c: usize) -> i64 {
        self.t0 + ((self.t1 - self.t0) as i128 * c as i128 / self.n as i128) as i64
    }
    /// Column of `t` in `[t0, t1)`.
    fn cell_of(&self, t: i64) -> usize {
        let c = ((t - self.t0) as i128 * self.n as i128 / (self.t1 - self.t0) as i128) as usize;
        c.min(self.n - 1)
    }
}
