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
//! traces and the journals of crashed runs alike, ranks in parallel) and
//! caches it next to the trace in `DIR/lod/` (one file per rank plus
//! `index.json`, versioned by [`FORMAT_VERSION`] and stamped with the
//! sizes and times of the files it was built from). A second open maps the
//! cache files into memory (on several threads) and validates each in one
//! pass ([`RankLod::validate`]: a damaged file is rebuilt, never drawn),
//! far faster than reading the trace again. [`messages::MessageIndex`]
//! finds the messages to draw in a time range.
//!
//! The crate has no user-interface dependencies.

pub mod messages;
pub mod pod;
pub mod pyramid;
pub mod rank;
pub mod source;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};
use trace_format::{layout, Meta};

pub use pod::{flags, Bucket, Ev};
pub use pyramid::RawCall;
pub use rank::{column_bounds, Call, Cell, RankLod, Store};
pub use source::{BatchTap, Names, RankState, RankTap};

/// Version of the cache files; a cache of another version is rebuilt.
pub const FORMAT_VERSION: u32 = 2;
/// Subdirectory of the trace holding the cache.
pub const CACHE_DIR: &str = "lod";
/// Threads mapping the cache files of a trace.
const MAP_THREADS: usize = 8;

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
    /// Whether it was opened from the cache (rather than built now).
    pub cached: bool,
    /// Why the cache could not be used or written, if so.
    pub cache_note: Option<String>,
    pub meta: Option<Meta>,
}

/// A source file and its size and modification time, to tell whether a
/// cache is still up to date.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    path: String,
    len: u64,
    mtime_ns: i128,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct IndexRank {
    rank: i32,
    state: RankState,
    host: Option<String>,
    /// Cache file name, or empty when the rank has no calls file.
    file: String,
}

/// `DIR/lod/index.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Index {
    version: u32,
    sources: Vec<Stamp>,
    names: Vec<String>,
    ranks: Vec<IndexRank>,
    problems: Vec<String>,
}

fn stamps(dir: &Path) -> Vec<Stamp> {
    let mut out = Vec::new();
    let mut add = |p: PathBuf| {
        if let Ok(m) = std::fs::metadata(&p) {
            let mtime_ns = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos() as i128)
                .unwrap_or(0);
            let path = p.strip_prefix(dir).unwrap_or(&p).display().to_string();
            out.push(Stamp { path, len: m.len(), mtime_ns });
        }
    };
    add(dir.join(layout::META));
    for sub in [layout::EVENTS_DIR, layout::JOURNAL_DIR] {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(dir.join(sub)).into_iter().flatten().flatten().map(|e| e.path()).collect();
        files.sort();
        files.into_iter().for_each(&mut add);
    }
    out
}

fn rank_file(rank: i32) -> String {
    format!("rank-{rank:05}.lod")
}

/// Maps the cache file of `rank` and validates it ([`RankLod::validate`];
/// `names`: how many call names the index lists, when known).
fn map_file(path: &Path, rank: i32, names: Option<usize>) -> Result<RankLod, String> {
    // A FIFO or device in its place is refused, not opened (or mapped).
    let (f, _) = trace_format::files::open_regular(path).map_err(|e| e.what())?;
    // SAFETY: the cache file is only ever replaced by rename, never
    // written in place, so the mapping does not change under us.
    let m = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| e.to_string())?;
    // Validation reads the whole file once, in order (a damaged cache is
    // rebuilt rather than drawn): read ahead as far as the kernel will,
    // then as usual for the queries' jumps.
    let _ = m.advise(memmap2::Advice::Sequential);
    let data = RankLod::from_store(Store::Mmap(m))?;
    if data.rank() != rank {
        return Err(format!("holds rank {}, the index says {rank}", data.rank()));
    }
    data.validate(names)?;
    data.advise_normal();
    Ok(data)
}

impl Lod {
    /// Opens the level of detail of the trace in `dir`: from its cache if
    /// that is up to date, otherwise built now (and cached, if the
    /// directory is writable). Fails only if `dir` holds no trace at all.
    pub fn open(dir: &Path, progress: &Progress) -> Result<Lod, Error> {
        Lod::open_with(dir, progress, None)
    }

    /// [`Lod::open`] that, if it has to build, shows what it reads of each
    /// rank to `tap` too (which sees nothing when the cache is used).
    pub fn open_with(dir: &Path, progress: &Progress, tap: Option<&dyn RankTap>) -> Result<Lod, Error> {
        if !dir.is_dir() {
            return Err(Error::NoDir(dir.to_path_buf()));
        }
        let sources = stamps(dir);
        match Lod::open_cache(dir, &sources) {
            Ok(lod) => {
                let n = lod.ranks.len();
                progress.ranks_total.store(n, Ordering::Relaxed);
                progress.ranks_done.store(n, Ordering::Relaxed);
                Ok(lod)
            }
            Err(why) => {
                let mut lod = Lod::build_with(dir, progress, true, tap)?;
                if lod.cache_note.is_none() && why != "no cache" {
                    lod.cache_note = Some(format!("cache rebuilt: {why}"));
                }
                Ok(lod)
            }
        }
    }

    fn open_cache(dir: &Path, sources: &[Stamp]) -> Result<Lod, String> {
        let cdir = dir.join(CACHE_DIR);
        let ipath = cdir.join("index.json");
        if std::fs::symlink_metadata(&ipath).is_err() {
            return Err("no cache".into());
        }
        let text = trace_format::files::read_capped(&ipath, trace_format::files::INDEX_MAX_BYTES, "cache index")
            .map_err(|e| format!("index.json: {}", e.what()))?;
        let index: Index = serde_json::from_slice(&text).map_err(|e| format!("index.json: {e}"))?;
        if index.version != FORMAT_VERSION {
            return Err(format!("format version {} (this tool: {FORMAT_VERSION})", index.version));
        }
        if index.sources != sources {
            return Err("the trace changed since it was built".into());
        }
        // The index names the files to map: only the names the builder
        // writes, for ranks in increasing order within the rank limit.
        let mut last = -1;
        for r in &index.ranks {
            if r.rank <= last || r.rank as u32 >= trace_format::meta::MAX_RANKS {
                return Err(format!("index.json: rank {} out of order or range", r.rank));
            }
            if !r.file.is_empty() && r.file != rank_file(r.rank) {
                return Err(format!("index.json: file {:?} for rank {}", r.file, r.rank));
            }
            last = r.rank;
        }
        // Mapped and validated on several threads: on a cold page cache
        // each file costs a read, and the disk serves several at once.
        let next = AtomicUsize::new(0);
        let threads = MAP_THREADS.clamp(1, index.ranks.len().max(1));
        let parts: Vec<Vec<(usize, Result<RankLod, String>)>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(r) = index.ranks.get(i) else { break };
                            let data = if r.file.is_empty() {
                                Ok(RankLod::from_image(pyramid::build(r.rank, Vec::new())))
                            } else {
                                let path = cdir.join(&r.file);
                                map_file(&path, r.rank, Some(index.names.len()))
                                    .map_err(|e| format!("{}: {e}", path.display()))
                            };
                            out.push((i, data));
                        }
                        out
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
        });
        let mut mapped: Vec<Option<RankLod>> = (0..index.ranks.len()).map(|_| None).collect();
        for (i, data) in parts.into_iter().flatten() {
            mapped[i] = Some(data?);
        }
        let mut ranks = Vec::with_capacity(index.ranks.len());
        for (r, data) in index.ranks.into_iter().zip(mapped) {
            let data = data.ok_or_else(|| format!("rank {}: not mapped", r.rank))?;
            ranks.push(RankEntry { rank: r.rank, state: r.state, host: r.host, data });
        }
        let meta = Meta::read(&dir.join(layout::META)).ok();
        Ok(Lod {
            dir: dir.to_path_buf(),
            names: index.names,
            ranks,
            problems: index.problems,
            cached: true,
            cache_note: None,
            meta,
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
        let cdir = dir.join(CACHE_DIR);
        let mut cache_note = None;
        let mut write = write_cache;
        if write {
            if let Err(e) = std::fs::create_dir_all(&cdir) {
                cache_note = Some(format!("cache not written ({}: {e}); kept in memory", cdir.display()));
                write = false;
            }
        }
        let names = Names::default();
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
                            let rc = source::read_rank(dir, *rank, src, &names, &progress.rows, tap);
                            let has_file = !matches!(src, source::RankSource::None);
                            let image = pyramid::build(rc.rank, rc.calls);
                            let (data, note) = if write && has_file {
                                store_image(&cdir, rc.rank, image)
                            } else {
                                (RankLod::from_image(image), None)
                            };
                            out.push((
                                i,
                                RankEntry { rank: rc.rank, state: rc.state, host: rc.host, data },
                                rc.problems,
                                note,
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
        let mut ranks = Vec::with_capacity(all.len());
        let mut written = write;
        for (_, entry, probs, note) in all {
            problems.extend(probs);
            if let Some(n) = note {
                written = false;
                cache_note.get_or_insert(n);
            }
            ranks.push(entry);
        }
        let names = names.into_list();
        let mut lod = Lod { dir: dir.to_path_buf(), names, ranks, problems, cached: false, cache_note, meta };
        if written {
            if let Err(e) = lod.write_index(&cdir) {
                lod.cache_note = Some(format!("cache index not written: {e}"));
            }
        }
        Ok(lod)
    }

    fn write_index(&self, cdir: &Path) -> Result<(), String> {
        let index = Index {
            version: FORMAT_VERSION,
            sources: stamps(&self.dir),
            names: self.names.clone(),
            ranks: self
                .ranks
                .iter()
                .map(|r| IndexRank {
                    rank: r.rank,
                    state: r.state.clone(),
                    host: r.host.clone(),
                    file: if r.data.is_mapped() { rank_file(r.rank) } else { String::new() },
                })
                .collect(),
            problems: self.problems.clone(),
        };
        let text = serde_json::to_string(&index).map_err(|e| e.to_string())?;
        trace_format::write_atomic(&cdir.join("index.json"), text.as_bytes()).map_err(|e| e.to_string())
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
        Lod { dir: PathBuf::new(), names, ranks, problems: Vec::new(), cached: false, cache_note: None, meta: None }
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
        self.ranks.iter().map(|r| r.data.len() as u64).sum()
    }

    /// Bytes of the level-of-detail data of all ranks.
    pub fn size_bytes(&self) -> u64 {
        self.ranks.iter().map(|r| r.data.size_bytes() as u64).sum()
    }
}

/// A rank built by a worker: (position, entry, problems, cache note).
type Built = (usize, RankEntry, Vec<String>, Option<String>);

/// Writes a rank's image to the cache and maps it; keeps it in memory if
/// that fails (with the reason).
fn store_image(cdir: &Path, rank: i32, image: pyramid::Image) -> (RankLod, Option<String>) {
    let path = cdir.join(rank_file(rank));
    let tmp = cdir.join(format!("{}.{}.tmp", rank_file(rank), std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|f| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        image.write_to(&mut w)?;
        std::io::Write::flush(&mut w)?;
        drop(w);
        std::fs::rename(&tmp, &path)
    });
    // The names of the whole trace are not all known yet (other ranks are
    // still being read): the file is checked without them.
    match written.map_err(|e| e.to_string()).and_then(|_| map_file(&path, rank, None)) {
        Ok(r) => (r, None),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            (RankLod::from_image(image), Some(format!("cache not written ({}: {e}); kept in memory", path.display())))
        }
    }
}
