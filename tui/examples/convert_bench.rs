//! The cost of writing the level-of-detail cache at conversion.
//!
//! `cargo run --release -p tui --example convert_bench -- DIR [EVENTS] [RANKS]`
//! writes the journals of a synthetic trace (the stencil, or with
//! `BENCH_MIX=collectives` the collective-heavy mix) into DIR, then
//! converts them to Parquet twice, keeping the journals: without the cache
//! (`trace_format::finish_dir`) and with it (`trace_lod::convert::finish_dir`,
//! what the shim and `mpitrace record` do); prints both times, the peak
//! memory, the cache's size against the events files', and the time to
//! open the cache (a viewer's first level of detail).

use std::time::Instant;

use analyzers::synth::{stencil_rank, StencilParams, SynthTrace};

#[path = "shared/rss.rs"]
mod rss;
use rss::{cpu_s, dir_size, peak_rss_mib};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(std::path::PathBuf::from) else {
        eprintln!("usage: convert_bench DIR [EVENTS] [RANKS]");
        std::process::exit(2);
    };
    let events: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    let ranks: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(4);
    if !dir.join("journal").exists() {
        let p = if std::env::var("BENCH_MIX").as_deref() == Ok("collectives") {
            StencilParams::collective_heavy(ranks, events)
        } else {
            StencilParams::for_events(ranks, events)
        };
        let t = Instant::now();
        let mut s = SynthTrace::new(ranks);
        s.ranks = (0..ranks).map(|r| stencil_rank(&p, r)).collect();
        s.write_journals(&dir, true).expect("write the journals");
        eprintln!("journals written in {:.1} s", t.elapsed().as_secs_f64());
    }
    let clean = || {
        for sub in ["events", "comms", "lod"] {
            let _ = std::fs::remove_dir_all(dir.join(sub));
        }
    };
    clean();
    let rss0 = peak_rss_mib();
    let (t, c) = (Instant::now(), cpu_s());
    trace_format::finish_dir(&dir, &[], true).expect("convert");
    let (plain, plain_cpu) = (t.elapsed(), cpu_s() - c);
    clean();
    let (t, c) = (Instant::now(), cpu_s());
    let fin = trace_lod::convert::finish_dir(&dir, &[], true).expect("convert with the cache");
    let (with, with_cpu) = (t.elapsed(), cpu_s() - c);
    for p in &fin.problems {
        eprintln!("{p}");
    }
    let (cache, ev) = (dir_size(&dir.join("lod")), dir_size(&dir.join("events")));
    println!(
        "convert {} ranks: without the cache {:.2} s (CPU {:.2} s), with it {:.2} s (CPU {:.2} s, {:+.1} %); \
         peak RSS {:.0} MiB (before converting {:.0})",
        fin.converted.len(),
        plain.as_secs_f64(),
        plain_cpu,
        with.as_secs_f64(),
        with_cpu,
        100.0 * (with_cpu / plain_cpu.max(0.01) - 1.0),
        peak_rss_mib(),
        rss0
    );
    println!(
        "cache {:.2} MiB = {:.1} % of the events files' {:.1} MiB",
        cache as f64 / 1048576.0,
        100.0 * cache as f64 / ev.max(1) as f64,
        ev as f64 / 1048576.0
    );
    let t = Instant::now();
    let lod = trace_lod::Lod::open_cached(&dir).expect("open the cache");
    println!("open the cache: {:.1} ms, {} calls", t.elapsed().as_secs_f64() * 1e3, lod.calls());
}
