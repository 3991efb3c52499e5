//! Benchmark of the level of detail and of the viewer's frames.
//!
//! `cargo run --release -p tui --example tui_bench -- DIR [--fresh] [--analyses]`
//!
//! DIR is a trace (write a large synthetic one with the `gen_trace`
//! example). Prints: the time to build the level of detail with every
//! call and the peak memory (what a first open cost before the cache was
//! written at conversion), the size of the cache against the events
//! files, the time to open the cache and draw the first frame, then the time per frame at several zoom levels
//! for terminal sizes, and the time of the level-of-detail query alone
//! for 1920 columns (what the desktop viewer asks for).

use std::path::PathBuf;
use std::time::Instant;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use trace_lod::{Lod, Progress};
use tui::view::View;
use tui::App;

#[path = "shared/rss.rs"]
mod rss;
use rss::{dir_size, peak_rss_mib};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.iter().find(|a| !a.starts_with("--")).map(PathBuf::from) else {
        eprintln!("usage: tui_bench DIR [--fresh] [--analyses]");
        std::process::exit(2);
    };
    if args.iter().any(|a| a == "--fresh") {
        let _ = std::fs::remove_dir_all(dir.join(trace_lod::CACHE_DIR));
    }
    let cdir = dir.join(trace_lod::CACHE_DIR);
    let events = dir_size(&dir.join("events"));
    // Before: no cache after conversion, so the first open builds the
    // level of detail from the trace (the in-memory image is what the
    // cache of format 2 wrote to disk).
    let t = Instant::now();
    let lod = match Lod::open(&dir, &Progress::default()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let first = t.elapsed();
    println!(
        "full level of detail (every call) built from the trace: {:.2} s, {} ranks, {} calls, peak RSS {:.0} MiB; \
         {:.1} MiB in memory ({:.2} x the events files; the size of the format-2 cache)",
        first.as_secs_f64(),
        lod.ranks.len(),
        lod.calls(),
        peak_rss_mib(),
        lod.size_bytes() as f64 / 1048576.0,
        lod.size_bytes() as f64 / events.max(1) as f64,
    );
    let cache = dir_size(&cdir);
    println!(
        "cache: {:.2} MiB ({:.2} bytes per call, {:.1} % of the events files' {:.1} MiB) in {}",
        cache as f64 / 1048576.0,
        cache as f64 / lod.calls().max(1) as f64,
        100.0 * cache as f64 / events.max(1) as f64,
        events as f64 / 1048576.0,
        cdir.display(),
    );
    if let Some(n) = &lod.cache_note {
        println!("cache note: {n}");
    }

    // After: the first frame from the cache (what a viewer shows while the
    // calls are read).
    let t = Instant::now();
    let coarse = Lod::open_cached(&dir).expect("open the cache");
    let opened = t.elapsed();
    let mut capp = App::with(coarse, None);
    capp.size = (200, 60);
    let mut term = Terminal::new(TestBackend::new(200, 60)).expect("test backend");
    term.draw(|f| tui::ui::draw(f, &capp)).expect("draw");
    println!(
        "first frame from the cache: opened in {:.1} ms; first frame (200x60) drawn at {:.1} ms",
        opened.as_secs_f64() * 1e3,
        t.elapsed().as_secs_f64() * 1e3
    );
    drop(capp);
    let mut app = App::with(lod, None);

    if args.iter().any(|a| a == "--analyses") {
        let t = Instant::now();
        match analyzers::load(&dir) {
            Ok(m) => {
                let an = tui::data::Analysed::new(analyzers::report::analyze(m), t.elapsed());
                println!("analyses: {:.1} s, peak RSS {:.0} MiB", t.elapsed().as_secs_f64(), peak_rss_mib());
                app.an = Some(Box::new(an));
            }
            Err(e) => println!("analyses failed: {e}"),
        }
    }

    let (lo, hi) = app.lod.as_ref().map(|l| l.span()).unwrap_or((0, 1));
    let mid = lo + (hi - lo) / 2;
    let zooms: Vec<i64> =
        [1i64, 10, 100, 1_000, 10_000, 100_000, 1_000_000].iter().map(|z| ((hi - lo) / z).max(200)).collect();
    println!("\nframe time by visible span (mean of 20 frames, panning; release build):");
    println!("{:>12} {:>12} {:>12} {:>16}", "span", "80x24 ms", "200x60 ms", "lod 1920px ms");
    for &span in &zooms {
        let mut row = Vec::new();
        for (w, h) in [(80u16, 24u16), (200, 60)] {
            app.size = (w, h);
            let mut term = Terminal::new(TestBackend::new(w, h)).expect("test backend");
            let frames = 20;
            let t = Instant::now();
            for k in 0..frames {
                app.view = View::new(mid + k * span / 50, mid + k * span / 50 + span);
                app.cursor_t = app.view.t0 + span / 3;
                term.draw(|f| tui::ui::draw(f, &app)).expect("draw");
            }
            row.push(t.elapsed().as_secs_f64() * 1e3 / frames as f64);
        }
        // The level-of-detail query alone, every rank, 1920 columns.
        let lod = app.lod.as_ref().expect("lod");
        let mut cells = Vec::new();
        let t = Instant::now();
        let frames = 5;
        for k in 0..frames {
            let v = View::new(mid + k * span / 50, mid + k * span / 50 + span);
            for r in &lod.ranks {
                r.data.cells(v.t0, v.t1, 1920, &mut cells);
            }
        }
        let gui = t.elapsed().as_secs_f64() * 1e3 / frames as f64;
        println!("{:>12} {:>12.2} {:>12.2} {:>16.2}", tui::view::fmt_dur(span), row[0], row[1], gui);
    }

    // Search from the start of the trace: the first search builds the
    // index; a scan of every call (what a search without the index costs
    // when nothing matches) for comparison.
    let lod = app.lod.as_ref().expect("lod");
    let t = Instant::now();
    let hits = lod
        .ranks
        .iter()
        .map(|r| r.data.events().iter().filter(|e| lod.name(e.name).contains("nosuchcall")).count())
        .sum::<usize>();
    println!("\nscan of every call (no index): {:.0} ms ({hits} hits)", t.elapsed().as_secs_f64() * 1e3);
    let t = Instant::now();
    let index = tui::search::SearchIndex::build(lod);
    println!(
        "search index: built in {:.0} ms, {:.2} MiB",
        t.elapsed().as_secs_f64() * 1e3,
        index.size_bytes() as f64 / 1048576.0
    );
    drop(index);
    println!("search from the start of the trace:");
    for q in ["finalize", "finalize", "allreduce", "dur>1ms", "waitall dur>100us", "nosuchcall"] {
        app.filter = tui::search::Filter::parse(q).expect("filter");
        app.cursor_t = lo;
        app.set_row(0);
        let t = Instant::now();
        app.search(true);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        println!("{q:>20}: {ms:>8.2} ms  {}", app.message.as_deref().unwrap_or(""));
    }

    // The band of user regions: 64 ranks of 10^6 regions each (an outer
    // one, 10^6 short ones in it, a third level in every 100th), 200
    // columns per rank, at several spans.
    let rank_regions = {
        let mut all = vec![analyzers::model::Region { t0: lo, t1: hi, name: 0, depth: 0 }];
        let step = ((hi - lo) / 1_000_000).max(4);
        for k in 0..1_000_000i64 {
            let t = lo + k * step;
            all.push(analyzers::model::Region { t0: t, t1: t + step / 2, name: 1, depth: 1 });
            if k % 100 == 0 {
                all.push(analyzers::model::Region { t0: t, t1: t + step / 4, name: 2, depth: 2 });
            }
        }
        tui::data::RankRegions::new(all)
    };
    println!("\nregion band, 64 ranks x 200 columns, 10^6 regions per rank:");
    let mut cols = Vec::new();
    for &span in &zooms {
        let v = View::new(mid, mid + span);
        let t = Instant::now();
        for _ in 0..64 {
            rank_regions.columns(v, 200, &mut cols);
        }
        println!("{:>12} {:>10.3} ms", tui::view::fmt_dur(span), t.elapsed().as_secs_f64() * 1e3);
    }
    println!("\npeak RSS {:.0} MiB", peak_rss_mib());
}
