//! Times the level-of-detail query alone: `RankLod::cells` for every rank
//! of a trace at 1920 columns, at zoom levels from the whole run down to
//! microseconds (what the desktop viewer asks for per frame).
//!
//! `cargo run --release -p trace-lod --example lod_query -- DIR [COLUMNS]`
//! (the trace's level of detail is built and cached first if needed).
//! Besides wall time it reports the CPU time of the querying thread (from
//! `/proc/thread-self/schedstat`, in ns), steadier on a busy machine.

use std::time::Instant;

use trace_lod::{Lod, Progress};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: lod_query DIR [COLUMNS]");
        std::process::exit(2);
    };
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1920);
    let t = Instant::now();
    let lod = match Lod::open(std::path::Path::new(&dir), &Progress::default()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    println!(
        "opened {} ranks, {} calls in {:.1} ms (cached: {})",
        lod.ranks.len(),
        lod.calls(),
        t.elapsed().as_secs_f64() * 1e3,
        lod.cached
    );
    let (lo, hi) = lod.span();
    let mid = lo + (hi - lo) / 3;
    let mut cells = Vec::new();
    println!("{:>12} {:>10} {:>10} {:>10} {:>10}", "span", "calls/col", "mean ms", "max ms", "CPU ms");
    let mut span = hi - lo;
    while span >= 20_000 {
        let frames = 8;
        let (mut sum, mut max) = (0.0f64, 0.0f64);
        let mut calls = 0usize;
        let cpu0 = thread_cpu_ns();
        for k in 0..frames {
            let t0 = if span == hi - lo { lo } else { mid + k * span / 50 };
            let t1 = t0 + span;
            let t = Instant::now();
            for r in &lod.ranks {
                r.data.cells(t0, t1, n, &mut cells);
            }
            let ms = t.elapsed().as_secs_f64() * 1e3;
            sum += ms;
            max = max.max(ms);
            if k == 0 {
                calls = lod.ranks.iter().map(|r| r.data.starting_in(t0, t1).len()).sum();
            }
        }
        let cpu = thread_cpu_ns().zip(cpu0).map(|(b, a)| (b - a) as f64 / 1e6 / frames as f64);
        let per_col = calls as f64 / (lod.ranks.len().max(1) * n) as f64;
        let cpu = cpu.map(|c| format!("{c:.2}")).unwrap_or_else(|| "?".into());
        println!(
            "{:>10.3}ms {:>10.2} {:>10.2} {:>10.2} {cpu:>10}",
            span as f64 / 1e6,
            per_col,
            sum / frames as f64,
            max
        );
        span /= 2;
    }
}

/// CPU time of this thread so far, ns (Linux).
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}
