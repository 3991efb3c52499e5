//! Building the data of one rank: its calls sorted by start time and the
//! zoom pyramid over them, laid out as the cache file stores them.
//!
//! Level `k` of the pyramid has buckets of `2^(shift0 + 2k)` ns (each level
//! 4 times coarser than the one below); only non-empty buckets are stored,
//! sorted by key, so a level never has more buckets than the level below.
//! `shift0` is chosen so that the finest level has at most one bucket per 8
//! calls (finer detail is drawn call by call). All levels are built in
//! one pass over the calls: a bucket that is complete is merged into its
//! parent (per-call histograms included, so the dominant call of every
//! bucket is exact).

use std::io::Write;

use crate::pod::{as_bytes, Bucket, Ev, Long, Pod, LONG};

/// A call as the builder takes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawCall {
    pub t_start: i64,
    pub t_end: i64,
    pub name: u16,
    pub flags: u16,
    /// Bytes sent or received; negative if unknown.
    pub bytes: i64,
}

/// Magic of a rank cache file.
pub const MAGIC: [u8; 8] = *b"MPITLOD\0";
/// Written in the header in native order; another value means the file
/// comes from a machine of the other byte order.
pub const ENDIAN: u32 = 0x0102_0304;

/// Header of a rank cache file, followed by the bucket count of each level
/// (one `u64` each), the events, the long durations and the levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Header {
    pub magic: [u8; 8],
    pub version: u32,
    pub endian: u32,
    pub rank: i32,
    pub levels: u32,
    pub shift0: u32,
    /// 0: calls and every level (in memory); [`crate::coarse::KIND_COARSE`]:
    /// a cache file of coarse levels only.
    pub kind: u32,
    pub origin: i64,
    pub t_min: i64,
    pub t_max: i64,
    pub n_events: u64,
    pub n_long: u64,
}
// SAFETY: repr(C), integers only, 72 bytes without padding.
unsafe impl Pod for Header {}
const _: () = assert!(std::mem::size_of::<Header>() == 72);

/// The data of one rank, ready to be written or viewed.
#[derive(Clone, Debug, Default)]
pub struct Image {
    pub header: Header,
    pub events: Vec<Ev>,
    pub long: Vec<Long>,
    pub levels: Vec<Vec<Bucket>>,
}

#[derive(Clone, Debug)]
pub(crate) struct Acc {
    pub(crate) live: bool,
    pub(crate) key: i64,
    count: u32,
    busy: i64,
    bytes: i64,
    max_end: i64,
    flags: u16,
    /// (call, time, count).
    hist: Vec<(u16, i64, u32)>,
}

impl Default for Acc {
    fn default() -> Acc {
        Acc { live: false, key: 0, count: 0, busy: 0, bytes: 0, max_end: i64::MIN, flags: 0, hist: Vec::new() }
    }
}

impl Acc {
    /// Adds one call of duration `busy` ending at `end`.
    pub(crate) fn add_call(&mut self, name: u16, busy: i64, end: i64, bytes: i64, flags: u16) {
        self.count = self.count.saturating_add(1);
        self.busy = self.busy.saturating_add(busy);
        self.bytes = self.bytes.saturating_add(bytes.max(0));
        self.max_end = self.max_end.max(end);
        self.flags |= flags;
        self.add(name, busy, 1);
    }
    fn add(&mut self, name: u16, busy: i64, count: u32) {
        match self.hist.iter_mut().find(|h| h.0 == name) {
            Some(h) => {
                h.1 = h.1.saturating_add(busy);
                h.2 = h.2.saturating_add(count);
            }
            None => self.hist.push((name, busy, count)),
        }
    }
    pub(crate) fn merge_from(&mut self, o: &Acc, key: i64) {
        if !self.live {
            self.live = true;
            self.key = key;
        }
        self.count = self.count.saturating_add(o.count);
        self.busy = self.busy.saturating_add(o.busy);
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.max_end = self.max_end.max(o.max_end);
        self.flags |= o.flags;
        for &(n, b, c) in &o.hist {
            self.add(n, b, c);
        }
    }
    pub(crate) fn bucket(&self) -> Bucket {
        Bucket {
            key: self.key,
            busy: self.busy,
            bytes: self.bytes,
            max_end: self.max_end,
            count: self.count,
            dominant: dominant(self.hist.iter().copied()),
            flags: self.flags,
        }
    }
    fn clear(&mut self) {
        self.live = false;
        self.count = 0;
        self.busy = 0;
        self.bytes = 0;
        self.max_end = i64::MIN;
        self.flags = 0;
        self.hist.clear();
    }
}

/// The dominant call of (call, time, count) entries: most time, then most
/// calls, then the lowest id.
pub fn dominant(hist: impl Iterator<Item = (u16, i64, u32)>) -> u16 {
    hist.max_by(|a, b| a.1.cmp(&b.1).then(a.2.cmp(&b.2)).then(b.0.cmp(&a.0))).map(|h| h.0).unwrap_or(0)
}

fn flush(accs: &mut [Acc], levels: &mut [Vec<Bucket>], k: usize) {
    if !accs[k].live {
        return;
    }
    levels[k].push(accs[k].bucket());
    if k + 1 < accs.len() {
        let up = accs[k].key >> 2;
        if accs[k + 1].live && accs[k + 1].key != up {
            flush(accs, levels, k + 1);
        }
        let (lo, hi) = accs.split_at_mut(k + 1);
        hi[0].merge_from(&lo[k], up);
    }
    accs[k].clear();
}

/// Width exponent of the finest level: the narrowest buckets (a power of
/// two ns) such that the level has at most one bucket per 8 calls, so the
/// pyramid takes at most about 7 bytes per call whatever the pattern.
fn choose_shift(calls: &[RawCall]) -> u32 {
    let target = (calls.len() / 8).max(1);
    let buckets = |shift: u32| {
        let mut n = 0usize;
        let mut last = None;
        for c in calls {
            let k = (c.t_start - calls[0].t_start) >> shift;
            if last != Some(k) {
                n += 1;
                last = Some(k);
            }
        }
        n
    };
    let (mut lo, mut hi) = (0u32, 62u32);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if buckets(mid) <= target {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Sorts the calls of a rank by start and builds its pyramid.
pub fn build(rank: i32, mut calls: Vec<RawCall>) -> Image {
    if calls.windows(2).any(|w| (w[0].t_start, w[0].t_end) > (w[1].t_start, w[1].t_end)) {
        calls.sort_by_key(|c| (c.t_start, c.t_end));
    }
    let origin = calls.first().map(|c| c.t_start).unwrap_or(0);
    let last_start = calls.last().map(|c| c.t_start).unwrap_or(0);
    let t_max = calls.iter().map(|c| c.t_end.max(c.t_start)).max().unwrap_or(0);
    let shift0 = choose_shift(&calls);
    let span = (last_start - origin).max(0) as u64;
    let mut nlev = 1usize;
    while shift0 as usize + 2 * nlev <= 62 && (span >> (shift0 as usize + 2 * (nlev - 1))) > 0 {
        nlev += 1;
    }
    let mut levels: Vec<Vec<Bucket>> = vec![Vec::new(); nlev];
    let mut accs = vec![Acc::default(); nlev];
    let mut events = Vec::with_capacity(calls.len());
    let mut long = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let d = c.t_end.saturating_sub(c.t_start).max(0);
        let dur = if d < LONG as i64 {
            d as u32
        } else {
            long.push(Long { idx: i as u64, dur: d });
            LONG
        };
        events.push(Ev { t_start: c.t_start, dur, name: c.name, flags: c.flags });
        let key = (c.t_start - origin) >> shift0;
        if accs[0].live && accs[0].key != key {
            flush(&mut accs, &mut levels, 0);
        }
        let a = &mut accs[0];
        if !a.live {
            a.live = true;
            a.key = key;
        }
        a.count += 1;
        a.busy = a.busy.saturating_add(d);
        a.bytes = a.bytes.saturating_add(c.bytes.max(0));
        a.max_end = a.max_end.max(c.t_start + d);
        a.flags |= c.flags;
        a.add(c.name, d, 1);
    }
    for k in 0..nlev {
        flush(&mut accs, &mut levels, k);
    }
    let header = Header {
        magic: MAGIC,
        version: crate::FORMAT_VERSION,
        endian: ENDIAN,
        rank,
        levels: nlev as u32,
        shift0,
        kind: 0,
        origin,
        t_min: origin,
        t_max,
        n_events: events.len() as u64,
        n_long: long.len() as u64,
    };
    Image { header, events, long, levels }
}

impl Image {
    /// Level bucket counts, as stored after the header.
    fn level_lens(&self) -> Vec<u64> {
        self.levels.iter().map(|l| l.len() as u64).collect()
    }

    /// Writes the cache file image.
    pub fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(as_bytes(std::slice::from_ref(&self.header)))?;
        w.write_all(as_bytes(&self.level_lens()))?;
        w.write_all(as_bytes(&self.events))?;
        w.write_all(as_bytes(&self.long))?;
        for l in &self.levels {
            w.write_all(as_bytes(l))?;
        }
        Ok(())
    }

    /// The image as 8-byte words (for keeping it in memory).
    pub fn into_words(self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.size() / 8);
        let mut push =
            |b: &[u8]| out.extend(b.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]))));
        push(as_bytes(std::slice::from_ref(&self.header)));
        push(as_bytes(&self.level_lens()));
        push(as_bytes(&self.events));
        push(as_bytes(&self.long));
        for l in &self.levels {
            push(as_bytes(l));
        }
        out
    }

    /// Size of the image in bytes.
    pub fn size(&self) -> usize {
        72 + 8 * self.levels.len()
            + 16 * (self.events.len() + self.long.len())
            + 40 * self.levels.iter().map(Vec::len).sum::<usize>()
    }
}
