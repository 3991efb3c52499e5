//! The level-of-detail cache: the coarser levels of each rank's zoom
//! pyramid, written while the rank's journals become Parquet, so that the
//! first frame of a finished trace needs no reading of the trace.
//!
//! A cache file holds the levels that fit in a [`BUDGET_DIVISOR`]th of
//! the size of the rank's events file (at least the coarsest): a small
//! fraction of the trace, whatever its length. The calls themselves (and the finer levels) are read from
//! the trace by the viewer afterwards, in the background.
//!
//! The file is a [`crate::pyramid::Header`] of kind [`KIND_COARSE`], the
//! bucket count of each level, the levels, then a trailer: its length (a
//! `u64`) and a JSON [`Trailer`] (the size and time of the events file it
//! was built from, the call names beyond the API table, the rank's state).
//! It lives in `DIR/lod/rank-NNNNN.lod`, or, when the trace directory is
//! read-only, in the user's cache directory (`$XDG_CACHE_HOME/mpitrace/`,
//! else `~/.cache/mpitrace/`) under a folder named after the trace
//! directory's canonical path ([`user_cache_dir`]).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::pod::{as_bytes, Bucket};
use crate::pyramid::{Acc, Header, RawCall, ENDIAN, MAGIC};
use crate::source::RankState;

/// `Header::kind` of a cache file (coarse levels, no calls).
pub const KIND_COARSE: u32 = 1;
/// A [`CoarseBuilder`] keeps at most one bucket per this many calls (or
/// [`MIN_BUCKETS`]).
pub const CALLS_PER_BUCKET: u64 = 32;
/// A cache file is at most the events file's size divided by this (5:
/// 20 %), keeping at least the coarsest level.
pub const BUDGET_DIVISOR: u64 = 5;
/// Buckets a [`CoarseBuilder`] keeps at least before it coarsens.
pub const MIN_BUCKETS: usize = 4096;

/// What a cache file says about where it comes from, after its levels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trailer {
    /// Size and modification time (ns since the epoch) of the events file
    /// the levels were built from; another size or time makes it stale.
    pub source_len: u64,
    pub source_mtime_ns: i128,
    /// Names of the call ids from the API table's length on, in order.
    pub extra_names: Vec<String>,
    pub state: RankState,
    pub host: Option<String>,
    /// What was wrong with the rank's data when it was built.
    pub problems: Vec<String>,
}

/// Size and modification time of `path`.
pub fn stamp(path: &Path) -> std::io::Result<(u64, i128)> {
    let m = std::fs::metadata(path)?;
    let ns = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    Ok((m.len(), ns))
}

/// Builds the coarse levels of one rank from its calls in any order, in
/// memory bounded by the number of buckets (at most one per
/// [`CALLS_PER_BUCKET`] calls), not by the number of calls: used while a
/// rank's journals, which hold its threads one after the other, are
/// converted.
pub struct CoarseBuilder {
    shift: u32,
    origin: Option<i64>,
    /// The bucket being filled, apart from the map (calls come mostly in
    /// order, so most calls touch only it).
    cur: Acc,
    fine: HashMap<i64, Acc>,
    calls: u64,
    t_min: i64,
    t_max: i64,
    /// Calls that never returned: they end at the rank's last time, known
    /// at the end.
    unfinished: Vec<RawCall>,
}

impl Default for CoarseBuilder {
    fn default() -> Self {
        CoarseBuilder {
            shift: 0,
            origin: None,
            cur: Acc::default(),
            fine: HashMap::new(),
            calls: 0,
            t_min: i64::MAX,
            t_max: i64::MIN,
            unfinished: Vec::new(),
        }
    }
}

impl CoarseBuilder {
    /// Adds a call (`flags::UNFINISHED` ones are finished at the end).
    pub fn push(&mut self, c: RawCall) {
        if c.flags & crate::flags::UNFINISHED != 0 {
            self.unfinished.push(c);
            return;
        }
        self.add(c);
    }

    fn add(&mut self, c: RawCall) {
        let d = c.t_end.saturating_sub(c.t_start).max(0);
        let end = c.t_start.saturating_add(d);
        self.calls += 1;
        self.t_min = self.t_min.min(c.t_start);
        self.t_max = self.t_max.max(end);
        let origin = *self.origin.get_or_insert(c.t_start);
        let key = c.t_start.saturating_sub(origin) >> self.shift;
        if !self.cur.live || self.cur.key != key {
            self.park();
            // Parking may have coarsened the buckets.
            let key = c.t_start.saturating_sub(origin) >> self.shift;
            self.cur = self.fine.remove(&key).unwrap_or_default();
            self.cur.live = true;
            self.cur.key = key;
        }
        self.cur.add_call(c.name, d, end, c.bytes, c.flags);
    }

    /// Moves the current bucket into the map, coarsening the map when it
    /// holds more buckets than the calls so far allow.
    fn park(&mut self) {
        if self.cur.live {
            let cur = std::mem::take(&mut self.cur);
            self.fine.insert(cur.key, cur);
        }
        let cap = MIN_BUCKETS.max((self.calls / CALLS_PER_BUCKET) as usize);
        while self.fine.len() > cap && self.shift + 2 <= 62 {
            self.shift += 2;
            let old = std::mem::take(&mut self.fine);
            for (_, a) in old {
                let up = a.key >> 2;
                self.fine.entry(up).or_default().merge_from(&a, up);
            }
        }
    }

    /// Number of calls added.
    pub fn calls(&self) -> u64 {
        self.calls + self.unfinished.len() as u64
    }

    /// The levels, finest first, and the header of a cache file holding at
    /// most `budget` bytes of buckets (at least the coarsest level).
    pub fn finish(mut self, rank: i32, budget: u64) -> (Header, Vec<Vec<Bucket>>) {
        let last = self.t_max.max(self.unfinished.iter().map(|c| c.t_start).max().unwrap_or(i64::MIN));
        for mut c in std::mem::take(&mut self.unfinished) {
            c.t_end = last.max(c.t_start);
            self.add(c);
        }
        self.park();
        let mut level: Vec<Acc> = self.fine.into_values().collect();
        level.sort_unstable_by_key(|a| a.key);
        let mut levels = vec![level];
        let shift = self.shift;
        // Coarser levels until one bucket is left (keys on either side of
        // the origin never merge: two are).
        while levels.last().is_some_and(|l| l.len() > 1 && !(l.len() == 2 && l[0].key == -1 && l[1].key == 0))
            && shift + 2 * levels.len() as u32 <= 62
        {
            let fine = levels.last().map(Vec::as_slice).unwrap_or(&[]);
            let mut up: Vec<Acc> = Vec::new();
            for a in fine {
                let k = a.key >> 2;
                match up.last_mut() {
                    Some(u) if u.key == k => u.merge_from(a, k),
                    _ => {
                        let mut u = Acc::default();
                        u.merge_from(a, k);
                        up.push(u);
                    }
                }
            }
            levels.push(up);
        }
        let buckets: Vec<Vec<Bucket>> = levels.iter().map(|l| l.iter().map(Acc::bucket).collect()).collect();
        drop(levels);
        let header = Header {
            magic: MAGIC,
            version: crate::FORMAT_VERSION,
            endian: ENDIAN,
            rank,
            levels: 0,
            shift0: shift,
            kind: KIND_COARSE,
            origin: self.origin.unwrap_or(0),
            t_min: if self.calls == 0 { 0 } else { self.t_min },
            t_max: if self.calls == 0 { 0 } else { self.t_max },
            n_events: 0,
            n_long: 0,
        };
        coarsen(header, buckets, budget)
    }
}

/// Which levels of a pyramid (`lens`: buckets per level, finest first)
/// make a cache file: the finest of those that fit, with all coarser ones,
/// in `budget` bytes of buckets (at least the coarsest level).
pub fn first_cached_level(lens: &[usize], budget: u64) -> usize {
    let n = lens.len();
    let bytes = |from: usize| lens[from..].iter().map(|&l| 40 * l as u64).sum::<u64>();
    (0..n).find(|&k| bytes(k) <= budget).unwrap_or(n.saturating_sub(1))
}

/// The cache file's header and levels from a pyramid's (`header.shift0`
/// the width exponent of `levels[0]`): [`first_cached_level`] on.
pub fn coarsen(mut header: Header, mut levels: Vec<Vec<Bucket>>, budget: u64) -> (Header, Vec<Vec<Bucket>>) {
    let lens: Vec<usize> = levels.iter().map(Vec::len).collect();
    let k0 = first_cached_level(&lens, budget);
    levels.drain(..k0.min(levels.len()));
    header.shift0 += 2 * k0 as u32;
    header.levels = levels.len() as u32;
    header.kind = KIND_COARSE;
    header.n_events = 0;
    header.n_long = 0;
    (header, levels)
}

/// Writes a cache file at `path` (through a temporary file renamed into
/// place, so a reader never maps a half-written file).
pub fn write_file(path: &Path, header: &Header, levels: &[Vec<Bucket>], trailer: &Trailer) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    // Private like the trace it describes (its call names and hosts).
    trace_format::private::create_dir_all(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
    let json = serde_json::to_vec(trailer).map_err(std::io::Error::other)?;
    let written = trace_format::private::create(&tmp).and_then(|f| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let mut h = *header;
        h.levels = levels.len() as u32;
        w.write_all(as_bytes(std::slice::from_ref(&h)))?;
        let lens: Vec<u64> = levels.iter().map(|l| l.len() as u64).collect();
        w.write_all(as_bytes(&lens))?;
        for l in levels {
            w.write_all(as_bytes(l))?;
        }
        w.write_all(&(json.len() as u64).to_ne_bytes())?;
        w.write_all(&json)?;
        w.flush()?;
        drop(w);
        std::fs::rename(&tmp, path)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The cache directory of the trace in `dir` under the user's cache
/// directory (`$XDG_CACHE_HOME/mpitrace`, else `$HOME/.cache/mpitrace`):
/// a folder named after the trace directory and a hash of its canonical
/// path, so two traces of the same name never share it.
pub fn user_cache_dir(dir: &Path) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")))?;
    let canon = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    // FNV-1a of the path's bytes: stable across runs and builds.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in canon.as_os_str().as_encoded_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
    }
    let name: String = canon
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .map(|c| if c.is_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
                .collect()
        })
        .unwrap_or_default();
    Some(base.join("mpitrace").join(format!("{name}-{h:016x}")))
}

/// Where the cache files of the trace in `dir` may be, in the order they
/// are looked at and written: the trace's own `lod/`, then the user's.
pub fn cache_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.join(crate::CACHE_DIR)];
    out.extend(user_cache_dir(dir));
    out
}

/// Writes the cache file of `rank` into the first of [`cache_dirs`] that
/// takes it; the path written, or why none did.
pub fn store(
    dir: &Path,
    rank: i32,
    header: &Header,
    levels: &[Vec<Bucket>],
    trailer: &Trailer,
) -> Result<PathBuf, String> {
    let mut why = Vec::new();
    for d in cache_dirs(dir) {
        let path = d.join(crate::rank_file(rank));
        match write_file(&path, header, levels, trailer) {
            Ok(()) => return Ok(path),
            Err(e) => why.push(format!("{}: {e}", path.display())),
        }
    }
    Err(why.join("; "))
}
