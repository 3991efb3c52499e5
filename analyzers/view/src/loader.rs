//! Opening a trace for a viewer, in the background.
//!
//! One thread opens the level of detail ([`trace_lod::Lod`]) and sends
//! it, then loads the analyzers' model, runs the analyses and sends what
//! the viewer derives from them (its own type `A`). A panic on that thread
//! becomes an error message.
//!
//! A trace can also be opened reading each rank once ([`load_now`]): when
//! the level of detail has to be built (no cache next to the trace yet, or
//! an outdated one), the batches it reads are handed to the analyzers'
//! builder of that rank too ([`ModelTap`]), and the model is then
//! assembled from those ranks ([`analyzers::load::load_read`]); when the
//! level of detail comes from its cache, the analyzers read the trace.
//! The background loader does not do that: building the model along with
//! the level of detail delays the timeline's first frame until both are
//! built, and holds both builders' memory at once (BENCHMARKS.md,
//! "Opening a trace for a viewer").

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use analyzers::load::{journal_rank, unreadable_rank, ParquetRank, RanksRead, BATCH_ROWS, COLUMNS};
use analyzers::report::{analyze, Analyses};
use trace_format::columns::{ColumnError, EventColumns};
use trace_format::stream::EventBatches;
use trace_format::RankJournals;
use trace_lod::{BatchTap, Lod, Progress, RankTap};

/// Something the loader finished.
pub enum Loaded<A> {
    /// The level of detail, and how long it took to open.
    Lod(Result<Box<Lod>, String>, Duration),
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
    /// and the time they took).
    pub fn start(dir: &Path, derive: impl FnOnce(Analyses, Duration) -> A + Send + 'static) -> Loader<A> {
        let (tx, rx) = channel();
        let progress = Arc::new(Progress::default());
        let p = progress.clone();
        let d = dir.to_path_buf();
        std::thread::spawn(move || {
            let t = Instant::now();
            let lod = guarded(|| Lod::open(&d, &p).map(Box::new).map_err(|e| e.to_string()));
            let ok = lod.is_ok();
            if tx.send(Loaded::Lod(lod, t.elapsed())).is_err() || !ok {
                return;
            }
            let t = Instant::now();
            let derived = guarded(|| {
                let model = analyzers::load(&d).map_err(|e| e.to_string())?;
                Ok(Box::new(derive(analyze(model), t.elapsed())))
            });
            let _ = tx.send(Loaded::Analyses(derived));
        });
        Loader { rx, progress, started: Instant::now(), dir: dir.to_path_buf() }
    }
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

/// Opens `dir` on this thread (tests, benchmarks): the level of detail and
/// the analyses, each rank read once for both (see the module's text).
/// Fails if `dir` holds no trace.
pub fn load_now(dir: &Path) -> Result<Opened, String> {
    let ranks_read = RanksRead::default();
    let tap = ModelTap { ranks_read: &ranks_read };
    let lod = Lod::open_with(dir, &Progress::default(), Some(&tap)).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let analyses = analyzers::load::load_read(dir, &ranks_read).map(|model| {
        let an = analyze(model);
        (an, t.elapsed())
    });
    Ok(Opened { lod, analyses: analyses.map_err(|e| e.to_string()) })
}

/// Builds the analyzers' ranks from what the level of detail reads.
pub struct ModelTap<'r> {
    ranks_read: &'r RanksRead,
}

/// A tap for [`Lod::open_with`] that builds the analyzers' ranks into
/// `ranks_read`, for [`analyzers::load::load_read`].
pub fn model_tap(ranks_read: &RanksRead) -> ModelTap<'_> {
    ModelTap { ranks_read }
}

impl RankTap for ModelTap<'_> {
    fn columns(&self) -> &[&'static str] {
        COLUMNS
    }

    fn batch_rows(&self) -> usize {
        BATCH_ROWS
    }

    fn parquet_rank<'t>(
        &'t self,
        rank: i32,
        path: &Path,
        opened: Result<&EventBatches, &trace_format::Error>,
    ) -> Option<Box<dyn BatchTap + 't>> {
        match opened {
            Ok(batches) => Some(Box::new(ModelRank {
                rank,
                builder: ParquetRank::start(path, rank, batches),
                ranks_read: self.ranks_read,
            })),
            Err(e) => {
                self.ranks_read.insert(rank, unreadable_rank(path, rank, e));
                None
            }
        }
    }

    fn journal_rank(&self, rank: i32, read: &Result<RankJournals, trace_format::Error>) {
        self.ranks_read.insert(rank, journal_rank(rank, read));
    }
}

/// One rank of the model built from the batches the level of detail reads.
struct ModelRank<'r> {
    rank: i32,
    builder: ParquetRank,
    ranks_read: &'r RanksRead,
}

impl BatchTap for ModelRank<'_> {
    fn batch(&mut self, columns: Result<&EventColumns<'_>, &ColumnError>) {
        self.builder.push(columns);
    }

    fn damaged(&mut self, error: &trace_format::Error) {
        self.builder.damaged(error);
    }

    fn finish(self: Box<Self>) {
        self.ranks_read.insert(self.rank, self.builder.finish());
    }
}
