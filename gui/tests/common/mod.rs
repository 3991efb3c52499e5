//! A small known trace for the viewer's tests.
#![allow(dead_code)] // each test binary uses part of it

use std::path::PathBuf;

use analyzers::synth::{event, SynthTrace};
use egui::{Event, Modifiers, PointerButton, Pos2};
use egui_kittest::Harness;
use trace_format::record::Kind;

/// A fresh directory under the system's temporary directory. Those that
/// earlier runs of the same test left (their process is gone) are removed.
pub fn temp_dir(name: &str) -> PathBuf {
    let prefix = format!("mpitrace-gui-{name}-");
    for e in std::fs::read_dir(std::env::temp_dir()).into_iter().flatten().flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let pid = file.strip_prefix(&prefix).and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| p != std::process::id() && !std::path::Path::new(&format!("/proc/{p}")).exists()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    let d = std::env::temp_dir().join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Four ranks over 10 us: rank 0 sends 1 KiB to rank 1 (rank 1 waits
/// for it), rank 2 sends 64 B to rank 3, then all four call
/// `MPI_Allreduce` (rank 3 arrives last) and finalize.
pub fn small() -> SynthTrace {
    small_variant(0, 0)
}

/// [`small`] with every time `shift` ns later and each `MPI_Allreduce`
/// (and what follows it) `slower` ns longer.
pub fn small_variant(shift: i64, slower: i64) -> SynthTrace {
    let s = shift;
    let mut t = SynthTrace::new(4);
    t.send(0, 1, 7, 1024, s + 2_000, s + 3_000, 0x100);
    t.recv(1, 0, 7, 1024, s + 1_500, s + 3_500, 0x110);
    t.send(2, 3, 9, 64, s + 2_500, s + 2_800, 0x120);
    t.recv(3, 2, 9, 64, s + 2_600, s + 3_200, 0x130);
    for (r, a) in [(0, 5_000), (1, 5_200), (2, 5_500), (3, 6_500)] {
        t.coll(r, "MPI_Allreduce", s + a, s + 7_000 + slower, 0x200, 8, None);
    }
    t.finalize(s + 9_000 + slower);
    // Rank 0 marks a user region "solve" over the exchange, with "inner" nested in it.
    for (kind, name, at) in [
        (Kind::RegionBegin, "solve", 1_500),
        (Kind::RegionBegin, "inner", 2_000),
        (Kind::RegionEnd, "inner", 2_500),
        (Kind::RegionEnd, "solve", 4_000),
    ] {
        t.ranks[0].push(event(0, kind, name, s + at, s + at));
    }
    t.ranks[0].sort_by_key(|e| e.t_start);
    // MPI_Init (at 0) too.
    for e in t.ranks.iter_mut().flatten().filter(|e| e.t_start < s) {
        e.t_start += s;
        e.t_end = e.t_end.map(|x| x + s);
    }
    t
}

/// Writes [`small`] to a fresh directory.
pub fn small_dir(name: &str) -> PathBuf {
    let d = temp_dir(name);
    small().write(&d).expect("write trace");
    d
}

/// Moves the pointer to `p` and clicks there.
pub fn click_at<S>(h: &mut Harness<'_, S>, p: Pos2) {
    h.hover_at(p);
    h.run();
    for pressed in [true, false] {
        h.event(Event::PointerButton { pos: p, button: PointerButton::Primary, pressed, modifiers: Modifiers::NONE });
    }
    h.run();
}

/// Drags with the primary button from `a` to `b` in five steps, holding
/// `modifiers`.
pub fn drag<S>(h: &mut Harness<'_, S>, a: Pos2, b: Pos2, modifiers: Modifiers) {
    drag_with(h, a, b, PointerButton::Primary, modifiers)
}

/// Drags with `button` from `a` to `b` in five steps, holding `modifiers`.
pub fn drag_with<S>(h: &mut Harness<'_, S>, a: Pos2, b: Pos2, button: PointerButton, modifiers: Modifiers) {
    h.event(Event::ModifiersChanged(modifiers));
    h.hover_at(a);
    h.event(Event::PointerButton { pos: a, button, pressed: true, modifiers });
    h.step();
    for k in 1..=5 {
        h.event(Event::PointerMoved(a + (b - a) * k as f32 / 5.0));
        h.step();
    }
    h.event(Event::PointerButton { pos: b, button, pressed: false, modifiers });
    h.event(Event::ModifiersChanged(Modifiers::NONE));
    h.run();
}

/// Two ranks of two threads each, whose calls overlap (ns): rank 0's
/// thread 0 sends to rank 1 over [1000, 4000), its thread 1 receives from
/// rank 1 over [2000, 5000); rank 1's thread 0 receives over [1500, 4000),
/// its thread 1 sends over [2000, 5000); `MPI_Finalize` at 9000.
pub fn threads_dir(name: &str) -> PathBuf {
    let mut t = SynthTrace::new(2);
    t.send(0, 1, 1, 64, 1_000, 4_000, 0x100);
    t.recv(1, 0, 1, 64, 1_500, 4_000, 0x110);
    t.recv(0, 1, 2, 64, 2_000, 5_000, 0x110);
    t.ranks[0].last_mut().expect("a call").thread = 1;
    t.send(1, 0, 2, 64, 2_000, 5_000, 0x100);
    t.ranks[1].last_mut().expect("a call").thread = 1;
    t.finalize(9_000);
    for r in &mut t.ranks {
        r.sort_by_key(|e| e.t_start);
    }
    let d = temp_dir(name);
    t.write(&d).expect("write trace");
    d
}

/// Opens `dir`, waits for the analyses, without smooth zooming.
pub fn open_loaded(dir: &std::path::Path) -> gui::GuiApp {
    let mut app = gui::GuiApp::open(dir);
    app.wait_loaded(std::time::Duration::from_secs(60));
    app.smooth = false;
    app
}
