//! Level of detail for the mpitrace viewers (the terminal browser and the
//! desktop viewer): what to draw for a time range of a trace at a given
//! number of columns or pixels, at a cost that grows with the screen and
//! not with the trace.
//!
//! For each rank, [`RankLod`] holds the MPI calls sorted by start time (16
//! bytes each) and a zoom pyramid ([`pyramid`]): per bucket of time the
//! number of calls, the dominant call, the time in MPI and the bytes, at
//! widths growing by 4 per level. [`RankLod::cells`] answers "what does
//! each of these `n` columns show" with about one bucket per column, or
//! call by call when at most 4 calls per column are in view; either way
//! in O(columns + what is in view), without a division per column (the
//! column bounds come from [`column_bounds`]); `examples/lod_query.rs`
//! measures it (BENCHMARKS.md).
//!
//! [`Lod::open`] builds all of it from a trace directory (finished Parquet
//! traces and the journals of crashed runs alike, ranks in parallel), in
//! memory. Its cache ([`coarse`]) holds only the coarse levels of each
//! rank, at most a fifth of the rank's events file: written while the
//! journals become Parquet ([`convert::convert_rank`], the shim at
//! `MPI_Finalize` and `mpitrace record`), or by [`Lod::open`] when it is
//! missing or out of date, into `DIR/lod/` (the user's cache directory
//! when the trace's is read-only), versioned by [`FORMAT_VERSION`] and
//! stamped with the size and time of the events file it was built from.
//! [`Lod::open_cached`] maps it in milliseconds and validates each file in
//! one pass ([`RankLod::validate`]: a damaged or stale file is rebuilt,
//! never drawn): a viewer's first frame, while the calls are read.
//! [`messages::MessageIndex`] finds the messages to draw in a time range.
//!
//! The crate has no user-interface dependencies.

pub mod coarse;
pub mod convert;
pub mod messages;
pub mod pod;
pub mod pyramid;
pub mod rank;
pub mod source;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use trace_format::{layout, Meta};

pub use pod::{flags, Bucket, Ev};
pub use pyramid::RawCall;
pub use rank::{column_bounds, Call, Cell, RankLod, Store};
pub use source::{BatchTap, Names, RankState, RankTap};

/// Version of the cache files; a cache of another version is rebuilt.
pub const FORMAT_VERSION: u32 = 3;
/// Subdirectory of the trace holding the cache.
pub const CACHE_DIR: &str = "lod";
/// Why [`Lod::open_cached`] failed when there is no cache at all (not
/// worth a note).
const NO_CACHE: &str = "no cache";
/// Why [`Lod::open_cached`] failed for a rank with journals only (a crashed
/// run not converted: no cache to expect, not worth a note either).
const NOT_CONVERTED: &str = "journals not converted";

/// Errors of opening a trace's level of detail.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}: no such directory")]
    NoDir(PathBuf),
    #[error("{0}: not a trace directory (no meta.json, events or journals)")]
    NotATrace(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// The trace directory could not be listed (permission denied...).
    #[error(transparent)]
    Trace(trace_format::Error),
}

/// How far building has come (shared with the thread that shows it).
#[derive(Debug, Default)]
pub struct Progress {
    pub ranks_total: AtomicUsize,
    pub ranks_done: AtomicUsize,
    /// Rows of the trace read so far.
    pub rows: AtomicU64,
    /// Rows of the trace in total (from the Parquet footers; 0 if unknown).
    pub rows_total: AtomicU64,
}

impl Progress {
    /// Fraction done, from 0 to 1.
    pub fn fraction(&self) -> f64 {
        let total = self.rows_total.load(Ordering::Relaxed);
        if total > 0 {
            return (self.rows.load(Ordering::Relaxed) as f64 / total as f64).min(1.0);
        }
        let n = self.ranks_total.load(Ordering::Relaxed);
        if n == 0 {
            0.0
        } else {
            self.ranks_done.load(Ordering::Relaxed) as f64 / n as f64
        }
    }
}

/// One rank of a trace.
#[derive(Debug)]
pub struct RankEntry {
    pub rank: i32,
    pub state: RankState,
    /// Host name, if known.
    pub host: Option<String>,
    pub data: RankLod,
}

/// The level of detail of a whole trace.
#[derive(Debug)]
pub struct Lod {
    pub dir: PathBuf,
    /// Call names; `Ev::name` indexes this.
    pub names: Vec<String>,
    /// Sorted by rank.
    pub ranks: Vec<RankEntry>,
    /// What was missing or damaged, one line each, naming the file.
    pub problems: Vec<String>,
    /// Whether it was opened from the cache (rather than built now): its
    /// coarse levels, or, from a viewer's loader, the calls read after
    /// the cache's levels were shown.
    pub cached: bool,
    /// Why the cache could not be used or written, if so.
    pub cache_note: Option<String>,
    /// Where the cache files are (the trace's `lod/`, or the user's cache
    /// directory when the trace's is read-only), if any.
    pub cache_dir: Option<PathBuf>,
    pub meta: Option<Meta>,
}

pub(crate) fn rank_file(rank: i32) -> String {
    format!("rank-{rank:05}.lod")
}

/// Maps the cache file at `path` of `rank`, checks it against the rank's
/// events file `source` and validates it; its trailer with it.
fn map_cached(path: &Path, rank: i32, source: &Path) -> Result<(RankLod, coarse::Trailer), String> {
    // A FIFO or device in its place is refused, not opened (or mapped).
    let (f, _) = trace_format::files::open_regular(path).map_err(|e| e.what())?;
    // SAFETY: cache files are only ever replaced by rename, never written
    // in place, so the mapping does not change under us.
    let m = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| e.to_string())?;
    let data = RankLod::from_store(Store::Mmap(m))?;
    if !data.is_coarse() {
        return Err("not a cache file of coarse levels".into());
    }
    if data.rank() != rank {
        return Err(format!("holds rank {}, the file name says {rank}", data.rank()));
    }
    let trailer: coarse::Trailer =
        serde_json::from_slice(data.trailer().unwrap_or_default()).map_err(|e| format!("trailer: {e}"))?;
    let (len, mtime) = coarse::stamp(source).map_err(|e| format!("{}: {e}", source.display()))?;
    if (len, mtime) != (trailer.source_len, trailer.source_mtime_ns) {
        return Err(format!("stale: {} changed since the cache was built", source.display()));
    }
    let names = trace_format::events::call_names().len() + trailer.extra_names.len();
    data.validate(Some(names))?;
    Ok((data, trailer))
}

impl Lod {
    /// Opens the level of detail of the trace in `dir` with every call of
    /// every rank, read from the trace (ranks in parallel), and writes the
    /// cache of coarse levels if it is missing or out of date (the note
    /// says why it was rebuilt). Fails only if `dir` holds no trace at all.
    pub fn open(dir: &Path, progress: &Progress) -> Result<Lod, Error> {
        Lod::open_with(dir, progress, None)
    }

    /// [`Lod::open`] that shows what it reads of each rank to `tap` too.
    pub fn open_with(dir: &Path, progress: &Progress, tap: Option<&dyn RankTap>) -> Result<Lod, Error> {
        if !dir.is_dir() {
            return Err(Error::NoDir(dir.to_path_buf()));
        }
        match Lod::open_cached(dir) {
            Ok(c) => Lod::build_inner(dir, progress, false, tap, Names::new(c.names)),
            Err(why) => {
                let mut lod = Lod::build_inner(dir, progress, true, tap, Names::default())?;
                if why != NO_CACHE && !why.ends_with(NOT_CONVERTED) {
                    let note = format!("level-of-detail cache rebuilt: {why}");
                    lod.cache_note = Some(lod.cache_note.map_or(note.clone(), |n| format!("{note}; {n}")));
                }
                Ok(lod)
            }
        }
    }

    /// The coarse levels of every rank from the cache (written when the
    /// trace was converted, or by an earlier [`Lod::open`]), without
    /// reading the trace: the first frame of a viewer. The ranks hold no
    /// calls ([`RankLod::is_coarse`]). Fails, saying why, when a rank's
    /// cache file is missing, damaged or older than its events file, or a
    /// rank has only journals.
    pub fn open_cached(dir: &Path) -> Result<Lod, String> {
        let inv = trace_format::inventory::Inventory::scan(dir).map_err(|e| e.to_string())?;
        let mut problems: Vec<String> = inv.problems.iter().map(|e| e.to_string()).collect();
        if inv.meta_missing {
            problems.push(format!("{}: missing; ranks found from their files", dir.join(layout::META).display()));
        }
        let srcs = source::rank_sources(&inv);
        let dirs = coarse::cache_dirs(dir);
        let base = trace_format::events::call_names().len();
        let mut names: Vec<String> = trace_format::events::call_names().iter().map(|s| s.to_string()).collect();
        let mut ranks = Vec::with_capacity(srcs.len());
        let mut used = None;
        let mut any = false;
        for (rank, src) in &srcs {
            let path = match src {
                source::RankSource::Parquet(p) => p,
                source::RankSource::Journals => return Err(format!("rank {rank}: {NOT_CONVERTED}")),
                source::RankSource::None => {
                    problems.push(format!("rank {rank}: no events file and no journal"));
                    let data = RankLod::from_image(pyramid::build(*rank, Vec::new()));
                    ranks.push(RankEntry { rank: *rank, state: RankState::Missing, host: None, data });
                    continue;
                }
            };
            let mut why = None;
            let mut found = None;
            for d in &dirs {
                let file = d.join(rank_file(*rank));
                if std::fs::symlink_metadata(&file).is_err() {
                    continue;
                }
                any = true;
                match map_cached(&file, *rank, path) {
                    Ok(x) => {
                        found = Some((x, d));
                        break;
                    }
                    Err(e) => {
                        why.get_or_insert(format!("{}: {e}", file.display()));
                    }
                }
            }
            let Some(((mut data, t), d)) = found else {
                return Err(why.unwrap_or_else(|| {
                    if any {
                        format!("rank {rank}: no cache file")
                    } else {
                        NO_CACHE.into()
                    }
                }));
            };
            used.get_or_insert_with(|| d.clone());
            let map: Vec<u16> = t
                .extra_names
                .iter()
                .map(|n| match names.iter().position(|x| x == n) {
                    Some(i) => i as u16,
                    None => {
                        names.push(n.clone());
                        (names.len() - 1).min(u16::MAX as usize) as u16
                    }
                })
                .collect();
            data.set_name_map(base, &map);
            problems.extend(t.problems);
            ranks.push(RankEntry { rank: *rank, state: t.state, host: t.host, data });
        }
        if ranks.iter().all(|r| !r.data.is_coarse()) {
            return Err(NO_CACHE.into());
        }
        Ok(Lod {
            dir: dir.to_path_buf(),
            names,
            ranks,
            problems,
            cached: true,
            cache_note: None,
            cache_dir: used,
            meta: inv.meta,
        })
    }

    /// Builds the level of detail of the trace in `dir` (ranks in
    /// parallel), writing the cache if `write_cache` and possible.
    pub fn build(dir: &Path, progress: &Progress, write_cache: bool) -> Result<Lod, Error> {
        Lod::build_with(dir, progress, write_cache, None)
    }

    /// [`Lod::build`] showing what it reads of each rank to `tap`.
    pub fn build_with(
        dir: &Path,
        progress: &Progress,
        write_cache: bool,
        tap: Option<&dyn RankTap>,
    ) -> Result<Lod, Error> {
        Lod::build_inner(dir, progress, write_cache, tap, Names::default())
    }

    /// Every call of the trace, read from it, with the call ids of `names`
    /// (those of the coarse level of detail a viewer shows until then),
    /// showing what it reads to `tap`; the cache is left as it is.
    pub fn build_detail(
        dir: &Path,
        progress: &Progress,
        tap: Option<&dyn RankTap>,
        names: Vec<String>,
    ) -> Result<Lod, Error> {
        Lod::build_inner(dir, progress, false, tap, Names::new(names))
    }

    fn build_inner(
        dir: &Path,
        progress: &Progress,
        write_cache: bool,
        tap: Option<&dyn RankTap>,
        names: Names,
    ) -> Result<Lod, Error> {
        let meta_path = dir.join(layout::META);
        // The rank count (from meta.json) and the files worth reading;
        // files outside it, FIFOs and devices are reported and left out.
        let inv = trace_format::inventory::Inventory::scan(dir).map_err(|e| match e {
            trace_format::Error::NotATrace(p) => Error::NotATrace(p),
            e => Error::Trace(e),
        })?;
        let mut problems: Vec<String> = inv.problems.iter().map(|e| e.to_string()).collect();
        if inv.meta_missing {
            problems.push(format!("{}: missing; ranks found from their files", meta_path.display()));
        }
        let meta = inv.meta.clone();
        let srcs = source::rank_sources(&inv);
        let rows_total: i64 = srcs
            .iter()
            .filter_map(|(_, s)| match s {
                source::RankSource::Parquet(p) => trace_format::table::count_rows(p).ok(),
                _ => None,
            })
            .sum();
        progress.rows_total.store(rows_total.max(0) as u64, Ordering::Relaxed);
        progress.ranks_total.store(srcs.len(), Ordering::Relaxed);
        let next = AtomicUsize::new(0);
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, srcs.len().max(1));
        let results: Vec<Vec<Built>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some((rank, src)) = srcs.get(i) else { break };
                            // The stamp of the file before it is read: a
                            // file changed while it is read makes a stale
                            // cache, not a wrong one.
                            let stamp = match src {
                                source::RankSource::Parquet(p) => coarse::stamp(p).ok(),
                                _ => None,
                            };
                            let rc = source::read_rank(dir, *rank, src, &names, &progress.rows, tap);
                            let data = RankLod::from_image(pyramid::build(rc.rank, rc.calls));
                            out.push((
                                i,
                                RankEntry { rank: rc.rank, state: rc.state, host: rc.host, data },
                                rc.problems,
                                stamp,
                            ));
                            progress.ranks_done.fetch_add(1, Ordering::Relaxed);
                        }
                        out
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
        });
        let mut all: Vec<_> = results.into_iter().flatten().collect();
        all.sort_by_key(|x| x.0);
        let names = names.into_list();
        let mut ranks = Vec::with_capacity(all.len());
        let (mut cache_note, mut cache_dir) = (None, None);
        let extra_names = names.get(trace_format::events::call_names().len()..).unwrap_or_default().to_vec();
        for (_, entry, probs, stamp) in all {
            if let (true, Some((source_len, source_mtime_ns))) = (write_cache, stamp) {
                let budget = source_len / coarse::BUDGET_DIVISOR;
                let (header, levels) = entry.data.coarse_levels(budget);
                let trailer = coarse::Trailer {
                    source_len,
                    source_mtime_ns,
                    extra_names: extra_names.clone(),
                    state: entry.state.clone(),
                    host: entry.host.clone(),
                    problems: probs.clone(),
                };
                match coarse::store(dir, entry.rank, &header, &levels, &trailer) {
                    Ok(p) => {
                        cache_dir.get_or_insert_with(|| p.parent().map(Path::to_path_buf).unwrap_or_default());
                    }
                    Err(e) => {
                        cache_note.get_or_insert(format!("level-of-detail cache not written: {e}"));
                    }
                }
            }
            problems.extend(probs);
            ranks.push(entry);
        }
        if write_cache {
            // The index of the cache of format 2 (whole calls), if any:
            // nothing reads it any more.
            let _ = std::fs::remove_file(dir.join(CACHE_DIR).join("index.json"));
        }
        Ok(Lod { dir: dir.to_path_buf(), names, ranks, problems, cached: false, cache_note, cache_dir, meta })
    }

    /// A level of detail built in memory from calls (tests, other sources).
    pub fn from_calls(names: Vec<String>, ranks: Vec<(i32, Vec<RawCall>)>) -> Lod {
        let ranks = ranks
            .into_iter()
            .map(|(rank, calls)| RankEntry {
                rank,
                state: RankState::Complete,
                host: None,
                data: RankLod::from_image(pyramid::build(rank, calls)),
            })
            .collect();
        Lod {
            dir: PathBuf::new(),
            names,
            ranks,
            problems: Vec::new(),
            cached: false,
            cache_note: None,
            cache_dir: None,
            meta: None,
        }
    }

    /// Name of call id `id`.
    pub fn name(&self, id: u16) -> &str {
        self.names.get(id as usize).map(String::as_str).unwrap_or("?")
    }

    /// Id of a call name.
    pub fn name_id(&self, name: &str) -> Option<u16> {
        self.names.iter().position(|n| n == name).map(|i| i as u16)
    }

    /// The rank entry of world rank `rank`.
    pub fn rank(&self, rank: i32) -> Option<&RankEntry> {
        self.ranks.binary_search_by_key(&rank, |r| r.rank).ok().map(|i| &self.ranks[i])
    }

    /// Earliest start and latest end of any call, or `(0, 0)`.
    pub fn span(&self) -> (i64, i64) {
        let spans = self.ranks.iter().filter_map(|r| r.data.span());
        spans
            .fold(None, |acc: Option<(i64, i64)>, (a, b)| Some(acc.map_or((a, b), |(x, y)| (x.min(a), y.max(b)))))
            .unwrap_or((0, 0))
    }

    /// Number of calls of all ranks.
    pub fn calls(&self) -> u64 {
        self.ranks.iter().map(|r| r.data.n_calls()).sum()
    }

    /// Bytes of the level-of-detail data of all ranks.
    pub fn size_bytes(&self) -> u64 {
        self.ranks.iter().map(|r| r.data.size_bytes() as u64).sum()
    }
}

/// A rank built by a worker: (position, entry, problems, stamp of its
/// events file).
type Built = (usize, RankEntry, Vec<String>, Option<(u64, i128)>);
