//! Analyses of mpitrace traces.
//!
//! [`load::load`] reads a trace directory (finished or crashed) into a
//! compact [`model::Model`]; each analysis is a function from the model to
//! typed, serializable results, independent of any user interface:
//!
//! - [`profile`]: time in and outside MPI, per call and call site, message sizes;
//! - [`calltree`]: the same per call path (`MPITRACE_CALLPATH`), inclusive
//!   and exclusive, per rank, with the time lost in wait states;
//! - [`counters`]: hardware counters per rank (`MPITRACE_COUNTERS`), IPC,
//!   how evenly the ranks' work is spread;
//! - [`matching`]: sends paired with receives, unmatched messages, clock
//!   violations and their correction;
//! - [`collectives`]: collective instances across ranks and their costs;
//! - [`waitstates`]: Late Sender, Late Receiver, Wait at N x N, Wait at
//!   Barrier, Late Broadcast, Early Reduce;
//! - [`matrix`]: bytes and messages between every pair of ranks;
//! - [`critical_path`]: the critical path and who contributes to it;
//! - [`iorma`]: MPI-IO per file and kind of access, one-sided communication
//!   per target and window, epochs and synchronization;
//! - [`report`]: all of the above together, as text, Markdown or JSON;
//! - [`html`]: the same as one self-contained HTML page with plots;
//! - [`check`]: CI rules and baseline comparison;
//! - [`correctness`]: errors in the use of MPI the run survived (`check --correctness`);
//! - [`export`]: Chrome/Perfetto trace-event JSON, CSV;
//! - [`otf2`]: OTF2 archives (with the OTF2 library, loaded at run time);
//! - [`live`]: the state of each rank of a running job, from its journals;
//! - [`hang`]: hang diagnosis (wait-for graph, deadlock cycles) from that state.

pub mod calltree;
pub mod check;
pub mod collectives;
pub mod compact;
pub mod correctness;
pub mod counters;
pub mod critical_path;
pub mod export;
pub mod hang;
pub mod html;
pub mod iorma;
pub mod live;
pub mod load;
pub mod matching;
pub mod matrix;
pub mod model;
pub mod otf2;
pub mod perfetto;
pub mod profile;
pub mod report;
pub mod synth;
pub mod waitstates;

use std::path::PathBuf;

pub use load::load;
pub use model::Model;

/// Errors of the analyzers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Trace(#[from] trace_format::Error),
    #[error("{0}: not a trace directory (no meta.json, events or journals)")]
    NotATrace(PathBuf),
    #[error("{path}: corrupt: {what}")]
    Corrupt { path: PathBuf, what: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{file}:{line}: {what}")]
    Rules { file: String, line: usize, what: String },
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("OTF2: {0}")]
    Otf2(String),
}

/// Formats nanoseconds with a unit and 3 significant digits (`102 ms`,
/// `12.5 us`, `1.23 s`).
pub fn fmt_ns(ns: i64) -> String {
    let a = ns.unsigned_abs() as f64;
    let s = if ns < 0 { "-" } else { "" };
    let (v, unit) = if a < 1e3 {
        return format!("{s}{a:.0} ns");
    } else if a < 1e6 {
        (a / 1e3, "us")
    } else if a < 1e9 {
        (a / 1e6, "ms")
    } else {
        (a / 1e9, "s")
    };
    if v >= 99.95 {
        format!("{s}{v:.0} {unit}")
    } else if v >= 9.995 {
        format!("{s}{v:.1} {unit}")
    } else {
        format!("{s}{v:.2} {unit}")
    }
}

/// Formats a byte count with a binary unit.
pub fn fmt_bytes(b: i64) -> String {
    let a = b as f64;
    if b < 1024 {
        format!("{b} B")
    } else if a < 1024.0 * 1024.0 {
        format!("{:.1} KiB", a / 1024.0)
    } else if a < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} MiB", a / 1048576.0)
    } else {
        format!("{:.2} GiB", a / 1073741824.0)
    }
}

/// Maps `f` over `items` on all cores (items are taken one at a time, so
/// uneven ranks balance); results come back in order.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(x) = items.get(i) else { break };
            out.push((i, f(x)));
        }
        out
    };
    let mut parts: Vec<Vec<(usize, R)>> = std::thread::scope(|s| {
        // A thread that cannot be made (a tight `ulimit -v`: each one
        // reserves a stack and a malloc arena) is no error: the calling
        // thread takes its share of the items.
        let handles: Vec<_> =
            (1..threads).filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok()).collect();
        let mut parts = vec![work()];
        parts.extend(handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))));
        parts
    });
    let mut all: Vec<(usize, R)> = parts.iter_mut().flat_map(std::mem::take).collect();
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// Summary statistics of one value over ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    /// Coefficient of variation (standard deviation / mean), 0 if the mean is 0.
    pub cv: f64,
    /// Rank with the maximum.
    pub max_rank: i32,
    /// Rank with the minimum.
    pub min_rank: i32,
}

impl Stats {
    /// Statistics of `(rank, value)` pairs.
    pub fn of(values: impl IntoIterator<Item = (i32, f64)>) -> Stats {
        let mut n = 0usize;
        let (mut sum, mut sq) = (0.0, 0.0);
        let mut s = Stats { min: f64::INFINITY, max: f64::NEG_INFINITY, ..Default::default() };
        for (r, v) in values {
            n += 1;
            sum += v;
            sq += v * v;
            if v < s.min {
                s.min = v;
                s.min_rank = r;
            }
            if v > s.max {
                s.max = v;
                s.max_rank = r;
            }
        }
        if n == 0 {
            return Stats::default();
        }
        s.mean = sum / n as f64;
        let var = (sq / n as f64 - s.mean * s.mean).max(0.0);
        s.cv = if s.mean != 0.0 { var.sqrt() / s.mean.abs() } else { 0.0 };
        s
    }
}

/// A fast non-cryptographic hasher for the analyzers' internal maps (keys
/// are small integers from the trace, not attacker-chosen).
#[derive(Clone, Copy, Default)]
pub struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64)
    }
    fn write_u16(&mut self, i: u16) {
        self.write_u64(i as u64)
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    fn write_i32(&mut self, i: i32) {
        self.write_u64(i as u32 as u64)
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64)
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64)
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A `HashMap` with [`FxHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    #[test]
    fn par_map_keeps_the_order_of_the_items() {
        let items: Vec<u64> = (0..10_000).collect();
        let squares = super::par_map(&items, |x| x * x);
        assert_eq!(squares.len(), items.len());
        assert!(squares.iter().enumerate().all(|(i, &s)| s == (i as u64) * (i as u64)));
        assert!(super::par_map(&[] as &[u8], |x| *x).is_empty());
    }
}
