//! `mpitrace record --hang-after SECONDS`: a thread that follows the
//! journals while the job runs and, when no rank has finished an MPI call
//! for that long while some rank is in one, says where every rank is and
//! who waits for whom (on standard error and in `hang.json` of the trace
//! directory). With `--kill-on-hang` it then stops the job the way a
//! SIGTERM to mpitrace does (the job is ended and its trace converted as
//! for a crash).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use analyzers::live::Live;

/// How long `record --live` waits before it diagnoses a hang.
pub const LIVE_HANG_AFTER: Duration = Duration::from_secs(30);

/// The file the hang report goes to, in the trace directory.
pub const HANG_JSON: &str = "hang.json";

/// The watching thread; stopped (and joined) by [`Watcher::stop`].
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    /// Starts watching; `quiet` writes hang.json only (the live view,
    /// which owns the terminal, shows it).
    pub fn start(dir: &Path, after: Duration, kill: bool, quiet: bool) -> Watcher {
        let stop = Arc::new(AtomicBool::new(false));
        let (d, s) = (dir.to_path_buf(), stop.clone());
        let thread =
            std::thread::Builder::new().name("hang-watch".into()).spawn(move || watch(d, after, kill, quiet, s)).ok();
        if thread.is_none() {
            say("mpitrace: cannot start the hang watcher (no thread); the job runs unwatched");
        }
        Watcher { stop, thread }
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `eprintln!` that cannot fail (standard error may be gone).
fn say(s: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{s}");
}

fn watch(dir: PathBuf, after: Duration, kill: bool, quiet: bool, stop: Arc<AtomicBool>) {
    let mut live = Live::new(&dir);
    // A look four times per period at least, and not more than 20 a
    // second: a hang is reported within a quarter of the period.
    let tick = (after / 4).clamp(Duration::from_millis(50), Duration::from_millis(250));
    let (mut progress, mut since) = (u64::MAX, Instant::now());
    let mut reported = false;
    // When this watcher first saw each rank waiting in its current call (by
    // this machine's clock: the ranks' own may be another machine's).
    let mut waiting: HashMap<i32, (String, Instant)> = HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(tick);
        live.look();
        let p = live.progress();
        if p != progress {
            (progress, since, reported) = (p, Instant::now(), false);
            // A call ended: who waits is looked at afresh (a rank may now
            // wait in a call that looks like the one it left).
            waiting.clear();
            continue;
        }
        let stalled = since.elapsed();
        if reported || live.all_finished() {
            continue;
        }
        let report = live.diagnose(Some(stalled.as_secs_f64()));
        let now = Instant::now();
        waiting.retain(|rank, _| report.ranks.iter().any(|r| r.rank == *rank && in_mpi(r)));
        for r in report.ranks.iter().filter(|r| in_mpi(r)) {
            let call = r.call.as_ref().map(|c| format!("{} {:?}", c.describe, c.instance)).unwrap_or_default();
            match waiting.get(&r.rank) {
                Some((c, _)) if *c == call => {}
                _ => {
                    waiting.insert(r.rank, (call, now));
                }
            }
        }
        // A hang needs a rank seen waiting in one call for the whole period:
        // nobody in MPI means the ranks compute (or the job has not started
        // tracing yet), and a rank that entered a barrier a moment ago while
        // the others still compute is early, not stuck.
        if stalled < after || !waiting.values().any(|(_, seen)| now.duration_since(*seen) >= after) {
            continue;
        }
        reported = true;
        let path = dir.join(HANG_JSON);
        let saved = match serde_json::to_vec_pretty(&report) {
            Ok(json) => trace_format::write_atomic(&path, &json).map(|()| format!(" (also in {})", path.display())),
            Err(e) => Ok(format!(" ({} not written: {e})", path.display())),
        }
        .unwrap_or_else(|e| format!(" ({} not written: {e})", path.display()));
        if !quiet {
            say(&format!("mpitrace: the job hangs{saved}: {}", report.render_text().trim_end()));
        }
        if kill {
            if !quiet {
                say("mpitrace: --kill-on-hang: ending the job");
            }
            // The way a SIGTERM to mpitrace ends the job: passed on to the
            // launcher, SIGKILL after --kill-after, the journals converted.
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
            return;
        }
    }
}

/// The rank waits in MPI (blocked in a call, or polling with one).
fn in_mpi(r: &analyzers::hang::RankReport) -> bool {
    r.state == "in_mpi" || r.state == "polling"
}
