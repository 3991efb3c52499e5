//! Opening a trace for a viewer, the level of detail and the analyzers'
//! model, two ways: `twice` reads every rank twice (the level of detail,
//! then the analyzers on their own), `once` reads it once for both (what
//! `trace_view::Loader` does: the level of detail first, the model built
//! from the same batches in the background). Each way first removes the
//! level-of-detail cache, so that it is built.
//!
//! `cargo run --release -p trace-view --example open_bench -- DIR once|twice`
//! prints the wall time of each part (the model's includes the analyses)
//! and the peak resident memory (run each way in its own process to
//! compare peaks); `-- DIR gen EVENTS RANKS` writes a synthetic stencil
//! trace to measure on.

use std::time::{Duration, Instant};

use trace_lod::{Lod, Progress};
use trace_view::{Loaded, Loader};

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap_or("");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(way)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: open_bench DIR once|twice");
        std::process::exit(2);
    };
    let dir = std::path::Path::new(dir);
    let t = Instant::now();
    let model = match way.as_str() {
        "gen" => {
            let events = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
            let ranks = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(16);
            std::fs::create_dir_all(dir).expect("trace directory");
            let params = analyzers::synth::StencilParams::for_events(ranks, events);
            let rows = analyzers::synth::write_stencil(dir, &params).expect("synthetic trace");
            println!("{rows} rows over {ranks} ranks written in {:.1} s", t.elapsed().as_secs_f64());
            return;
        }
        "twice" => {
            let _ = std::fs::remove_dir_all(dir.join(trace_lod::CACHE_DIR));
            let lod = Lod::open(dir, &Progress::default()).expect("level of detail");
            println!("level of detail: {} calls, {:.3} s", lod.calls(), t.elapsed().as_secs_f64());
            analyzers::report::analyze(analyzers::load(dir).expect("model")).model
        }
        "once" => {
            let _ = std::fs::remove_dir_all(dir.join(trace_lod::CACHE_DIR));
            let loader = Loader::start(dir, |an, _| an.model);
            let forever = Duration::from_secs(u32::MAX.into());
            match loader.wait(forever) {
                Some(Loaded::Lod(Ok(lod), took)) => {
                    println!("level of detail: {} calls, {:.3} s", lod.calls(), took.as_secs_f64())
                }
                _ => panic!("no level of detail"),
            }
            match loader.wait(forever) {
                Some(Loaded::Analyses(Ok(model))) => *model,
                _ => panic!("no model"),
            }
        }
        other => {
            eprintln!("unknown way {other:?}: once or twice");
            std::process::exit(2);
        }
    };
    let calls: usize = model.ranks.iter().map(|r| r.calls.len()).sum();
    println!("model: {calls} calls; total {:.3} s; peak RSS {} MiB", t.elapsed().as_secs_f64(), peak_rss_kib() / 1024);
}
