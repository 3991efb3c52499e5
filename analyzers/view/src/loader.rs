//! Opening a trace for a viewer, in the background, reading each rank once.
//!
//! One thread opens the level of detail ([`trace_lod::Lod`]) and sends it,
//! then the analyses, from which the viewer derives what its panels show
//! (its own type `A`). A panic on either path becomes an error message.
//!
//! When the level of detail has to be built (no cache next to the trace
//! yet, or an outdated one), its readers decode the columns the analyzers
//! need too and keep each decoded batch ([`RecordBatch`]: shared arrays,
//! no copy). Once the level of detail has been sent, the analyzers'
//! builders ([`analyzers::load::ParquetRank`]) take those batches, ranks
//! in parallel, and the model is assembled from them
//! ([`analyzers::load::load_read`]): each rank's events file is decoded
//! once, and the timeline's first frame waits only for the level of
//! detail (and the decoding of the analyzers' columns; building the model
//! alongside took the CPUs the level of detail needs, BENCHMARKS.md,
//! "Opening a trace for a viewer"). When the level of detail comes from
//! its cache, the analyzers read the trace.
//!
//! The batches kept are bounded ([`HANDOFF_BYTES`]): a rank whose next
//! batch would exceed the bound is given up and read again by the
//! analyzers, so memory stays bounded on traces of any size. Journals (a
//! crashed run) are read again by the analyzers too, so the timeline of a
//! crashed run does not wait for the model either.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use analyzers::load::{unreadable_rank, ParquetRank, RankRead, RanksRead, COLUMNS};
use analyzers::report::{analyze, Analyses};
use trace_format::columns::{ColumnError, EventColumns};
use trace_format::stream::{EventBatches, RecordBatch};
use trace_format::RankJournals;
use trace_lod::source::LOD_BATCH_ROWS;
use trace_lod::{BatchTap, Lod, Progress, RankTap};

/// Bytes of decoded batches that may wait for the analyzers' builders
/// (some 6 million rows at about 80 bytes a row).
pub const HANDOFF_BYTES: usize = 512 << 20;

/// Something the loader finished.
pub enum Loaded<A> {
    /// The level of detail, and how long it took to open: the coarse
    /// levels of the cache when the trace has one (then [`Loaded::Detail`]
    /// follows), else every call.
    Lod(Result<Box<Lod>, String>, Duration),
    /// The level of detail with every call, read from the trace after the
    /// coarse one of its cache was sent (same call ids): it replaces that
    /// one, the view staying where it is.
    Detail(Result<Box<Lod>, String>),
    /// What the viewer derived from the analyses.
    Analyses(Result<Box<A>, String>),
}

/// Runs `f`, turning a panic into an error.
pub fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
        Err(format!("internal error: {}", what.unwrap_or_default()))
    })
}

/// The background loader of one trace.
pub struct Loader<A> {
    rx: Receiver<Loaded<A>>,
    /// How far opening the level of detail has come.
    pub progress: Arc<Progress>,
    pub started: Instant,
    pub dir: PathBuf,
}

impl<A: Send + 'static> Loader<A> {
    /// Starts loading `dir`: the level of detail, then the analyses, from
    /// which `derive` makes what the viewer shows (it gets the analyses
    /// and the time they took after the level of detail was sent).
    pub fn start(dir: &Path, derive: impl FnOnce(Analyses, Duration) -> A + Send + 'static) -> Loader<A> {
        let (tx, rx) = channel();
        let progress = Arc::new(Progress::default());
        let p = progress.clone();
        let d = dir.to_path_buf();
        std::thread::spawn(move || open(&d, &p, &tx, derive));
        Loader { rx, progress, started: Instant::now(), dir: dir.to_path_buf() }
    }
}

/// Opens `dir` for a [`Loader`], sending what it finishes to `tx`.
fn open<A>(dir: &Path, progress: &Progress, tx: &Sender<Loaded<A>>, derive: impl FnOnce(Analyses, Duration) -> A) {
    let t = Instant::now();
    let tap = Handoff::default();
    // The cache written at conversion: the first frame at once, the calls
    // read afterwards (each rank once, for the analyzers too).
    match guarded(|| Lod::open_cached(dir)) {
        Ok(coarse) => {
            let (names, cache_dir) = (coarse.names.clone(), coarse.cache_dir.clone());
            if tx.send(Loaded::Lod(Ok(Box::new(coarse)), t.elapsed())).is_err() {
                return;
            }
            let detail = guarded(|| {
                let mut d = Lod::build_detail(dir, progress, Some(&tap), names).map_err(|e| e.to_string())?;
                // Opened from the cache, completed from the trace.
                (d.cached, d.cache_dir) = (true, cache_dir);
                Ok(Box::new(d))
            });
            let ok = detail.is_ok();
            if tx.send(Loaded::Detail(detail)).is_err() || !ok {
                return;
            }
        }
        // `open_with` finds the same reason, notes it and rewrites the cache.
        Err(_) => {
            let lod = guarded(|| Lod::open_with(dir, progress, Some(&tap)).map(Box::new).map_err(|e| e.to_string()));
            let ok = lod.is_ok();
            if tx.send(Loaded::Lod(lod, t.elapsed())).is_err() || !ok {
                return;
            }
        }
    }
    let t = Instant::now();
    let derived = guarded(|| {
        let ranks_read = tap.build();
        let model = analyzers::load::load_read(dir, &ranks_read).map_err(|e| e.to_string())?;
        Ok(Box::new(derive(analyze(model), t.elapsed())))
    });
    let _ = tx.send(Loaded::Analyses(derived));
}

impl<A> Loader<A> {
    /// What has arrived since the last call; `None` when nothing new (or
    /// the loader is done).
    pub fn poll(&self) -> Option<Loaded<A>> {
        self.rx.try_recv().ok()
    }

    /// Waits up to `timeout` for the next result; `None` if none came (or
    /// the loader is done).
    pub fn wait(&self, timeout: Duration) -> Option<Loaded<A>> {
        self.rx.recv_timeout(timeout).ok()
    }
}

/// A trace opened at once by [`load_now`].
pub struct Opened {
    pub lod: Lod,
    /// The analyses and the time they took, or why they failed.
    pub analyses: Result<(Analyses, Duration), String>,
}

/// Opens `dir` and waits for the analyses too (tests, benchmarks), as the
/// background loader does: each rank read once. Fails if `dir` holds no
/// trace.
pub fn load_now(dir: &Path) -> Result<Opened, String> {
    let (tx, rx) = channel();
    open(dir, &Progress::default(), &tx, |an, took| (an, took));
    drop(tx);
    let mut lod = match rx.recv() {
        Ok(Loaded::Lod(lod, _)) => *lod?,
        _ => return Err("the loader stopped before the level of detail".into()),
    };
    loop {
        match rx.recv() {
            Ok(Loaded::Detail(d)) => lod = *d?,
            Ok(Loaded::Analyses(an)) => return Ok(Opened { lod, analyses: an.map(|b| *b) }),
            _ => return Ok(Opened { lod, analyses: Err("the loader stopped before the analyses".into()) }),
        }
    }
}

/// What the level of detail read of one events file, kept for the
/// analyzers' builder of that rank.
struct Kept {
    rank: i32,
    builder: ParquetRank,
    /// The batches, then why the reading stopped early, if it did.
    batches: Vec<RecordBatch>,
    stop: Option<Stop>,
}

/// Why the reading of an events file stopped before its end.
enum Stop {
    /// A column of its batches is missing or of a wrong type.
    Columns(ColumnError),
    /// The file is damaged there (what is wrong, without the path).
    Damaged(String),
}

impl Kept {
    /// The rank as the analyzers read it.
    fn build(mut self) -> RankRead {
        for batch in &self.batches {
            self.builder.push(EventColumns::new(batch).as_ref());
        }
        match &self.stop {
            Some(Stop::Columns(e)) => self.builder.push(Err(e)),
            Some(Stop::Damaged(e)) => self.builder.damaged(e),
            None => {}
        }
        self.builder.finish()
    }
}

/// The tap on the level of detail's readers that keeps what they decode
/// for the analyzers.
struct Handoff {
    kept: Mutex<Vec<Kept>>,
    /// Ranks read whole already (their events file could not be opened).
    read: RanksRead,
    /// Bytes of the batches kept, and how many may be.
    bytes: AtomicUsize,
    limit: usize,
}

impl Default for Handoff {
    fn default() -> Handoff {
        Handoff { kept: Mutex::default(), read: RanksRead::default(), bytes: AtomicUsize::new(0), limit: HANDOFF_BYTES }
    }
}

impl Handoff {
    /// The analyzers' ranks built from what was kept, ranks in parallel.
    fn build(self) -> RanksRead {
        let mut kept = self.kept.into_inner().unwrap_or_else(|e| e.into_inner());
        // Largest first, so that no thread is left with a large rank at the end.
        kept.sort_by_key(|k| std::cmp::Reverse(k.batches.iter().map(RecordBatch::num_rows).sum::<usize>()));
        let kept = Mutex::new(kept.into_iter());
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let Some(k) = kept.lock().unwrap_or_else(|e| e.into_inner()).next() else { break };
                    self.read.insert(k.rank, k.build());
                });
            }
        });
        self.read
    }
}

impl RankTap for Handoff {
    fn columns(&self) -> &[&'static str] {
        &COLUMNS
    }

    fn batch_rows(&self) -> usize {
        LOD_BATCH_ROWS
    }

    fn parquet_rank<'t>(
        &'t self,
        rank: i32,
        path: &Path,
        opened: Result<&EventBatches, &trace_format::Error>,
    ) -> Option<Box<dyn BatchTap + 't>> {
        match opened {
            Ok(batches) => Some(Box::new(KeptRank {
                kept: Some(Kept {
                    rank,
                    builder: ParquetRank::start(path, rank, batches),
                    batches: Vec::new(),
                    stop: None,
                }),
                bytes: 0,
                handoff: self,
            })),
            Err(e) => {
                self.read.insert(rank, unreadable_rank(path, rank, e));
                None
            }
        }
    }

    /// Journals are read again by the analyzers (see the module's text).
    fn journal_rank(&self, _rank: i32, _read: &Result<RankJournals, trace_format::Error>) {}
}

/// Keeps what the level of detail reads of one events file; gives it up
/// (the analyzers then read the file again) when the batches kept of all
/// ranks would exceed the bound ([`HANDOFF_BYTES`]).
struct KeptRank<'h> {
    kept: Option<Kept>,
    /// Bytes of this rank's batches kept.
    bytes: usize,
    handoff: &'h Handoff,
}

impl BatchTap for KeptRank<'_> {
    fn batch(&mut self, batch: &RecordBatch, columns: Result<&EventColumns<'_>, &ColumnError>) {
        let Some(kept) = &mut self.kept else { return };
        if let Err(e) = columns {
            kept.stop = Some(Stop::Columns(e.clone()));
            return;
        }
        let bytes = batch.get_array_memory_size();
        if self.handoff.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes > self.handoff.limit {
            self.handoff.bytes.fetch_sub(bytes + self.bytes, Ordering::Relaxed);
            self.kept = None;
            return;
        }
        self.bytes += bytes;
        kept.batches.push(batch.clone());
    }

    fn damaged(&mut self, error: &trace_format::Error) {
        if let Some(kept) = &mut self.kept {
            // Without the path: the builder names the file.
            kept.stop = Some(Stop::Damaged(error.what()));
        }
    }

    fn finish(self: Box<Self>) {
        if let Some(kept) = self.kept {
            self.handoff.kept.lock().unwrap_or_else(|e| e.into_inner()).push(kept);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_format::stream::files_opened;

    #[test]
    fn ranks_over_the_bound_are_read_again_into_the_same_model() {
        const RANKS: usize = 3;
        let dir = std::env::temp_dir().join(format!("trace-view-over-the-bound-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        analyzers::synth::write_stencil(&dir, &analyzers::synth::StencilParams::for_events(RANKS, 30_000)).unwrap();
        let alone = analyze(analyzers::load(&dir).unwrap()).report();
        for (limit, readings) in [(HANDOFF_BYTES, RANKS), (1, 2 * RANKS)] {
            let before = files_opened();
            let tap = Handoff { limit, ..Handoff::default() };
            Lod::build_with(&dir, &Progress::default(), false, Some(&tap)).unwrap();
            let model = analyzers::load::load_read(&dir, &tap.build()).unwrap();
            assert_eq!(files_opened() - before, readings as u64, "bound {limit}");
            assert_eq!(analyze(model).report(), alone, "bound {limit}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
