//! Opening a trace for a viewer, the level of detail and the analyzers'
//! model, two ways: `twice` reads every rank twice (the level of detail,
//! then the analyzers on their own), `once` reads it once for both (what
//! `trace_view::Loader` does). Neither writes the level-of-detail cache.
//!
//! `cargo run --release -p trace-view --example open_bench -- DIR once|twice`
//! prints the wall time of each part and the peak resident memory (run
//! each way in its own process to compare peaks); `-- DIR gen EVENTS RANKS`
//! writes a synthetic stencil trace to measure on.

use std::time::Instant;

use analyzers::load::RanksRead;
use trace_lod::{Lod, Progress};

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
            let lod = Lod::build(dir, &Progress::default(), false).expect("level of detail");
            println!("level of detail: {} calls, {:.3} s", lod.calls(), t.elapsed().as_secs_f64());
            analyzers::load(dir).expect("model")
        }
        "once" => {
            let ranks_read = RanksRead::default();
            let tap = trace_view::loader::model_tap(&ranks_read);
            let lod = Lod::build_with(dir, &Progress::default(), false, Some(&tap)).expect("level of detail");
            println!("level of detail: {} calls, {:.3} s", lod.calls(), t.elapsed().as_secs_f64());
            analyzers::load::load_read(dir, &ranks_read).expect("model")
        }
        other => {
            eprintln!("unknown way {other:?}: once or twice");
            std::process::exit(2);
        }
    };
    let calls: usize = model.ranks.iter().map(|r| r.calls.len()).sum();
    println!("model: {calls} calls; total {:.3} s; peak RSS {} MiB", t.elapsed().as_secs_f64(), peak_rss_kib() / 1024);
}
