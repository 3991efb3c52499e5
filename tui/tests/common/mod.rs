//! Helpers of the screen tests: a small trace whose contents are known,
//! and rendering the app into a `TestBackend`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use analyzers::synth::{event, SynthTrace};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use trace_format::record::Kind;
use tui::App;

/// A fresh temporary directory.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tui-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Four ranks, all times in ns:
/// - every rank: `MPI_Init` [0, 1000);
/// - rank 0 sends 8 KiB to rank 2 (tag 5) in `MPI_Send` [10 µs, 12 µs);
///   rank 2 waits for it in `MPI_Recv` [5 µs, 20 µs): a late sender of 5 µs;
/// - rank 1 sends 4 KiB to rank 3 (tag 9) in `MPI_Send` [40 µs, 41 µs);
///   rank 3 receives it in `MPI_Recv` [40.5 µs, 45 µs);
/// - `MPI_Allreduce` of 8 bytes: ranks 0-2 arrive at 50 µs, rank 3 at 80 µs,
///   all leave at 82 µs;
/// - `MPI_Finalize` at 100 µs.
pub fn small_trace(dir: &Path) {
    small_synth().write(dir).unwrap();
}

/// [`small_trace`] with user regions: rank 0 runs `solve` over
/// [8 µs, 60 µs] with `halo` nested over [9 µs, 21 µs]; rank 1 opens `io`
/// at 90 µs and never closes it (it lasts to the rank's end, 100 µs).
pub fn regions_trace(dir: &Path) {
    let mut t = small_synth();
    let marks = [
        (0, Kind::RegionBegin, "solve", 8_000),
        (0, Kind::RegionBegin, "halo", 9_000),
        (0, Kind::RegionEnd, "halo", 21_000),
    ];
    let marks = marks.into_iter().chain([(0, Kind::RegionEnd, "solve", 60_000), (1, Kind::RegionBegin, "io", 90_000)]);
    for (rank, kind, name, at) in marks {
        t.ranks[rank as usize].push(event(rank, kind, name, at, at));
    }
    for r in &mut t.ranks {
        r.sort_by_key(|e| e.t_start);
    }
    t.write(dir).unwrap();
}

fn small_synth() -> SynthTrace {
    let mut t = SynthTrace::new(4);
    t.send(0, 2, 5, 8192, 10_000, 12_000, 0x40);
    t.recv(2, 0, 5, 8192, 5_000, 20_000, 0x50);
    t.send(1, 3, 9, 4096, 40_000, 41_000, 0x40);
    t.recv(3, 1, 9, 4096, 40_500, 45_000, 0x50);
    for r in 0..4 {
        let arrive = if r == 3 { 80_000 } else { 50_000 };
        t.coll(r, "MPI_Allreduce", arrive, 82_000, 0x60, 8, None);
    }
    t.finalize(100_000);
    t
}

/// Opens `dir` and waits for everything to load.
pub fn open(dir: &Path, w: u16, h: u16) -> App {
    let mut app = App::open(dir);
    app.wait_loaded();
    app.size = (w, h);
    app
}

/// Draws the app; returns the buffer.
pub fn render(app: &mut App) -> Buffer {
    let (w, h) = app.size;
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| tui::ui::draw(f, app)).unwrap();
    t.backend().buffer().clone()
}

/// The lines of a buffer as text.
pub fn text(b: &Buffer) -> Vec<String> {
    (0..b.area.height).map(|y| (0..b.area.width).map(|x| b[(x, y)].symbol()).collect::<String>()).collect()
}

/// Renders and returns the screen as text, printing it (shown on failure).
pub fn screen(app: &mut App) -> Vec<String> {
    let lines = text(&render(app));
    println!("{}", lines.join("\n"));
    lines
}

pub fn key(app: &mut App, c: char) {
    app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
}

pub fn code(app: &mut App, c: KeyCode) {
    app.on_key(KeyEvent::new(c, KeyModifiers::NONE));
}

pub fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, c);
    }
}

/// Row of the screen whose label is `label` (e.g. "r2").
pub fn row_of(lines: &[String], label: &str) -> usize {
    lines
        .iter()
        .position(|l| {
            l.split_whitespace().next() == Some(label)
                || l.starts_with(&format!("{label} "))
                || l.starts_with(&format!("{label}│"))
        })
        .unwrap_or_else(|| panic!("no row {label}"))
}

/// Two ranks of two threads each, whose calls overlap (all times in µs):
/// rank 0's thread 0 sends to rank 1 over [10, 40), its thread 1 receives
/// from rank 1 over [20, 50); rank 1's thread 0 receives over [5, 40), its
/// thread 1 sends over [20, 50); `MPI_Finalize` at 100.
pub fn threads_trace(dir: &Path) {
    let mut t = SynthTrace::new(2);
    t.send(0, 1, 1, 64, 10_000, 40_000, 0x40);
    t.recv(1, 0, 1, 64, 5_000, 40_000, 0x50);
    t.recv(0, 1, 2, 64, 20_000, 50_000, 0x50);
    t.ranks[0].last_mut().unwrap().thread = 1;
    t.send(1, 0, 2, 64, 20_000, 50_000, 0x40);
    t.ranks[1].last_mut().unwrap().thread = 1;
    t.finalize(100_000);
    for r in &mut t.ranks {
        r.sort_by_key(|e| e.t_start);
    }
    t.write(dir).unwrap();
}
