//! Writes a synthetic stencil trace for benchmarks and manual tests.
//!
//! `cargo run --release -p tui --example gen_trace -- DIR [EVENTS] [RANKS]`
//! (defaults: 10^8 rows over 64 ranks); `BENCH_MIX=collectives` writes the
//! collective-heavy mix (40 % collectives) instead of the stencil.

use std::time::Instant;

use analyzers::synth::{write_stencil, StencilParams};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: gen_trace DIR [EVENTS] [RANKS]");
        std::process::exit(2);
    };
    let events: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000_000);
    let ranks: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    let dir = std::path::PathBuf::from(dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {e}", dir.display());
        std::process::exit(1);
    }
    let t = Instant::now();
    let p = if std::env::var("BENCH_MIX").as_deref() == Ok("collectives") {
        StencilParams::collective_heavy(ranks, events)
    } else {
        StencilParams::for_events(ranks, events)
    };
    match write_stencil(&dir, &p) {
        Ok(rows) => println!(
            "{rows} rows over {ranks} ranks written to {} in {:.1} s",
            dir.display(),
            t.elapsed().as_secs_f64()
        ),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
