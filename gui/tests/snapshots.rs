//! Image snapshots of the viewer, rendered on the CPU by wgpu (Mesa's
//! lavapipe: Debian's `mesa-vulkan-drivers`, installed by
//! `tests/run-all.sh`). The images are in `tests/snapshots/`; after an
//! intended change of the drawing, `UPDATE_SNAPSHOTS=1 cargo test -p gui
//! --test snapshots` writes new ones (look at them before committing).

mod common;

use std::time::Duration;

use egui_kittest::{Harness, SnapshotOptions};
use gui::GuiApp;

fn app(name: &str) -> GuiApp {
    let dir = common::small_dir(name);
    let mut app = GuiApp::open(&dir);
    app.wait_loaded(Duration::from_secs(60));
    app.smooth = false;
    // The directory's name changes from run to run; the toolbar shows it.
    app.dir = "small-trace".into();
    app
}

fn snapshot(app: GuiApp, name: &str, setup: impl FnOnce(&mut Harness<'_, GuiApp>)) {
    snapshot_sized(app, name, egui::vec2(1100.0, 420.0), setup)
}

fn snapshot_sized(app: GuiApp, name: &str, size: egui::Vec2, setup: impl FnOnce(&mut Harness<'_, GuiApp>)) {
    let mut h = Harness::builder().with_size(size).wgpu().build_ui_state(|ui, app: &mut GuiApp| app.show(ui), app);
    h.run();
    setup(&mut h);
    // The frame time shown in the toolbar varies: hide it.
    h.state_mut().build_ms = 0.0;
    h.run();
    h.snapshot_options(name, &SnapshotOptions::new().threshold(1.0).max_failed_pixels(200));
}

#[test]
fn timeline_of_a_small_trace_with_its_messages() {
    snapshot(app("snap-whole"), "timeline_small", |_| {});
}

#[test]
fn highlighted_pair_and_selection() {
    snapshot(app("snap-highlight"), "timeline_highlight", |h| {
        let s = h.state_mut();
        s.click_matrix(0, 1);
        s.select(1_800, 3_600);
        s.tab = gui::app::Tab::Matrix;
    });
}

#[test]
fn two_traces_compared() {
    let mut a = app("snap-compare-a");
    let dir = common::temp_dir("snap-compare-b");
    // B: 1 ms later on its clock, each Allreduce 3 us longer.
    common::small_variant(1_000_000, 3_000).write(&dir).expect("write trace");
    let mut b = GuiApp::open(&dir);
    b.wait_loaded(Duration::from_secs(60));
    b.dir = "slower-trace".into();
    a.set_compare(b);
    a.tab = gui::app::Tab::Compare;
    snapshot_sized(a, "compare_small", egui::vec2(1100.0, 600.0), |_| {});
}

/// The critical path shown, the wait states listed with their "Worst"
/// buttons.
#[test]
fn critical_path_and_worst_waits() {
    snapshot(app("snap-critical"), "timeline_critical", |h| {
        let s = h.state_mut();
        s.show_critical = true;
        s.tab = gui::app::Tab::Waits;
    });
}

/// Two ranks of two threads each: one lane per thread under its rank.
#[test]
fn thread_lanes() {
    let mut app = common::open_loaded(&common::threads_dir("snap-threads"));
    app.dir = "threads-trace".into();
    snapshot(app, "timeline_threads", |_| {});
}
