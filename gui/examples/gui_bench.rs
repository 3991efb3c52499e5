//! Frame geometry of `mpitrace gui` on a large trace:
//! `cargo run --release -p gui --example gui_bench -- DIR [--analyses]`
//! (DIR from `cargo run --release -p tui --example gen_trace -- DIR 100000000 64`).
//!
//! Opens the level of detail (from its cache when there is one), builds
//! the first frame, then builds frames at zoom levels from the whole run
//! down to microseconds, 1920 px wide with 16 px lanes, while panning.
//! With `--analyses` the analyses are loaded too (message arrows and
//! collectives are then part of the frame). CPU time per frame is that of
//! the building thread (on 2 cores the lanes are built on one thread).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use egui::{Pos2, Rect};
use gui::data::Trace;
use gui::filter::Filter;
use gui::lanes::Lanes;
use gui::timeline::{self, Scene};
use gui::view::TimeView;
use trace_lod::{Lod, Progress};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: gui_bench DIR [--analyses]");
        std::process::exit(2);
    };
    let with_analyses = args.any(|a| a == "--analyses");
    let start = Instant::now();
    let lod = match Lod::open(&dir, &Progress::default()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gui_bench: {e}");
            std::process::exit(1);
        }
    };
    let opened = start.elapsed();
    let mut trace = Trace::new(lod);
    let filter = Filter::default();
    let lanes = Lanes::new(&trace.lod, &filter, &BTreeSet::new(), 16.0);
    let rect = Rect::from_min_max(Pos2::new(84.0, 22.0), Pos2::new(84.0 + 1920.0, 22.0 + lanes.height().min(1100.0)));
    let kept = filter.name_mask(&trace.lod.names);
    let palette = timeline::palette(&trace.lod);
    let mut cells = Vec::new();
    let (a, b) = trace.lod.span();
    let frame = |trace: &Trace, view: TimeView, cells: &mut Vec<trace_lod::Cell>| {
        let scene = Scene {
            trace,
            lanes: &lanes,
            view,
            rect,
            scroll: 0.0,
            kept: &kept,
            min_dur: 0,
            only: None,
            highlight: None,
            picked_msg: None,
            dark: false,
            critical: false,
        };
        timeline::build(&scene, &palette, cells)
    };
    let g = frame(&trace, TimeView::new(a as f64, b as f64), &mut cells);
    println!(
        "{} ranks, {} calls; opened in {:.1} ms (cached: {}); start to first frame {:.1} ms ({} rects)",
        trace.lod.ranks.len(),
        trace.lod.calls(),
        opened.as_secs_f64() * 1e3,
        trace.lod.cached,
        start.elapsed().as_secs_f64() * 1e3,
        g.rects
    );
    if with_analyses {
        let t = Instant::now();
        match Trace::open(&dir) {
            Ok(full) => trace = full,
            Err(e) => eprintln!("analyses: {e}"),
        }
        println!("analyses loaded in {:.1} s", t.elapsed().as_secs_f64());
    }
    println!("| span | frames | mean ms | max ms | CPU ms per frame | LOD query only, mean ms | rects | labels | arrows | arrows skipped |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let rows = lanes.visible(0.0, rect.height());
    let mut span = (b - a) as f64;
    while span >= 2_000.0 {
        let mut times = Vec::new();
        let mut query = 0.0;
        let mut last = timeline::Geometry::default();
        let mut cpu = 0u64;
        for k in 0..20 {
            let t0 = a as f64 + ((b - a) as f64 - span) * (0.3 + k as f64 * 0.01);
            let t = Instant::now();
            let c0 = thread_cpu_ns();
            last = frame(&trace, TimeView::new(t0, t0 + span), &mut cells);
            times.push(t.elapsed().as_secs_f64() * 1e3);
            cpu += thread_cpu_ns().saturating_sub(c0);
            let (q0, q1) = TimeView::new(t0, t0 + span).range();
            let t = Instant::now();
            for row in rows.clone() {
                if let gui::lanes::Row::Rank(i) = lanes.rows[row] {
                    trace.lod.ranks[i].data.cells(q0, q1, 1920, &mut cells);
                }
            }
            query += t.elapsed().as_secs_f64() * 1e3 / 20.0;
        }
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        let max = times.iter().copied().fold(0.0, f64::max);
        let cpu = cpu as f64 / 1e6 / times.len() as f64;
        println!(
            "| {} | {} | {mean:.2} | {max:.2} | {cpu:.2} | {query:.2} | {} | {} | {} | {} |",
            analyzers::fmt_ns(span as i64),
            times.len(),
            last.rects,
            last.labels.len(),
            last.arrows.len(),
            last.arrows_skipped
        );
        span /= 10.0;
    }
}

/// CPU time of this thread so far, ns (Linux's schedstat; 0 if unknown).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(0)
}
