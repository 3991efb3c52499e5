//! Benchmark of the full report on a large synthetic trace.
//!
//! `cargo run --release -p analyzers --example bench -- DIR [EVENTS] [RANKS]`
//! writes a synthetic stencil trace of about EVENTS rows (default 10^7) over
//! RANKS ranks (default 64) into DIR unless it already holds one, then
//! loads it, runs every analysis, builds the report, and prints the times,
//! the throughput and the peak memory per event. With `BENCH_REPORT_JSON=FILE`
//! it also writes the JSON report (after the peak is measured), to compare
//! the results of two versions.

use std::path::PathBuf;
use std::time::Instant;

use analyzers::report::{analyze_timed, document, render_text, TextOptions};
use analyzers::synth::{write_stencil, StencilParams};

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time of the process so far (user + system), seconds.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with ')'): utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / hz
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "/tmp/mpitrace-bench".into()));
    let events: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    let ranks: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    if !dir.join("meta.json").exists() {
        std::fs::create_dir_all(&dir).expect("create the trace directory");
        // BENCH_MIX=collectives: the collective-heavy mix (40 % collectives).
        let p = if std::env::var("BENCH_MIX").as_deref() == Ok("collectives") {
            StencilParams::collective_heavy(ranks, events)
        } else {
            StencilParams::for_events(ranks, events)
        };
        let t = Instant::now();
        let rows = write_stencil(&dir, &p).expect("write the synthetic trace");
        eprintln!("wrote {rows} rows ({} ranks x {} steps) in {:.1} s", p.ranks, p.steps, t.elapsed().as_secs_f64());
    }
    let rss0 = peak_rss_kib();
    let c0 = cpu_s();
    let t0 = Instant::now();
    let model = analyzers::load(&dir).expect("load");
    let t1 = Instant::now();
    let c1 = cpu_s();
    let rows = model.rows();
    let rss_model = peak_rss_kib();
    let (a, phases) = analyze_timed(model);
    let t2 = Instant::now();
    let c2 = cpu_s();
    let text = render_text(&document(&a.report()), TextOptions { width: 100, color: false });
    let t3 = Instant::now();
    let page = analyzers::html::render(&a.report(), Some(&analyzers::html::overview(&a)));
    let t4 = Instant::now();
    let rss = peak_rss_kib();
    if let Some(out) = std::env::var_os("BENCH_REPORT_JSON") {
        // The whole report, to check that a change leaves every result as it was.
        std::fs::write(out, serde_json::to_string_pretty(&a.report()).expect("report as JSON"))
            .expect("write the report");
    }
    let secs = |a: Instant, b: Instant| (b - a).as_secs_f64();
    let total = secs(t0, t3);
    println!("rows                 {rows}");
    println!("ranks                {}", a.model.ranks.len());
    println!(
        "load                 {:.2} s  ({:.1} M rows/s; CPU {:.2} s)",
        secs(t0, t1),
        rows as f64 / secs(t0, t1) / 1e6,
        c1 - c0
    );
    println!(
        "analyses             {:.2} s  ({:.1} M rows/s; CPU {:.2} s)",
        secs(t1, t2),
        rows as f64 / secs(t1, t2) / 1e6,
        c2 - c1
    );
    for p in &phases {
        println!(
            "  {:<18} {:.3} s  (peak RSS after it {:.0} MiB, {:.1} bytes/row)",
            p.name,
            p.took.as_secs_f64(),
            p.peak_rss_kib as f64 / 1024.0,
            (p.peak_rss_kib.saturating_sub(rss0)) as f64 * 1024.0 / rows as f64
        );
    }
    println!("report               {:.3} s", secs(t2, t3));
    println!("HTML report          {:.3} s ({} KiB)", secs(t3, t4), page.len() / 1024);
    println!("total                {total:.2} s  ({:.1} M rows/s)", rows as f64 / total / 1e6);
    println!(
        "peak RSS             {:.0} MiB ({:.1} bytes/row; model alone {:.1} bytes/row)",
        rss as f64 / 1024.0,
        (rss - rss0) as f64 * 1024.0 / rows as f64,
        (rss_model - rss0) as f64 * 1024.0 / rows as f64
    );
    println!("threads              {}", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    eprintln!("{}", text.lines().take(12).collect::<Vec<_>>().join("\n"));
}
