//! Two traces side by side: coupled zoom, pan and selection, and the
//! comparison of their profiles, driven headless through egui_kittest.

mod common;

use std::time::Duration;

use egui::{Event, Modifiers, Pos2};
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use gui::app::Tab;
use gui::ui::GUTTER_W;
use gui::GuiApp;

/// B runs 1 ms later on its clock and each Allreduce takes 3 us longer.
const SHIFT: i64 = 1_000_000;
const SLOWER: i64 = 3_000;

fn compared(name: &str) -> Harness<'static, GuiApp> {
    let a = common::small_dir(&format!("{name}-a"));
    let b = common::temp_dir(&format!("{name}-b"));
    common::small_variant(SHIFT, SLOWER).write(&b).expect("write trace");
    let mut app = GuiApp::open_compare(&a, &b);
    app.smooth = false;
    app.wait_loaded(Duration::from_secs(60));
    assert!(app.trace.is_some() && app.compare.as_ref().is_some_and(|c| c.trace.is_some()), "both loaded");
    let mut h = Harness::builder()
        .with_size(egui::vec2(1200.0, 800.0))
        .build_ui_state(|ui, app: &mut GuiApp| app.show(ui), app);
    h.run();
    h
}

/// Asserts that B shows what A shows, `SHIFT` later.
fn assert_coupled(app: &GuiApp) {
    let b = app.compare.as_ref().expect("compared trace");
    assert!((b.view.t0 - app.view.t0 - SHIFT as f64).abs() < 1e-3, "A {:?}, B {:?}", app.view, b.view);
    assert!((b.view.span() - app.view.span()).abs() < 1e-3, "A {:?}, B {:?}", app.view, b.view);
}

#[test]
fn zoom_pan_and_selection_are_coupled() {
    let mut h = compared("couple");
    let spans = (
        h.state().trace.as_ref().map(|t| t.lod.span()),
        h.state().compare.as_ref().and_then(|b| b.trace.as_ref()).map(|t| t.lod.span()),
    );
    assert_eq!(h.state().compare_offset(), SHIFT as f64, "{spans:?}");
    let ra = h.get_by_label("timeline").rect();
    let rb = h.get_by_label("timeline B").rect();
    assert!(rb.top() >= ra.bottom() - 1.0, "B below A: {ra:?} {rb:?}");
    assert_coupled(h.state());
    // Wheel over A zooms both.
    let before = h.state().view;
    let w = ra.width() - GUTTER_W;
    let p = Pos2::new(ra.left() + GUTTER_W + h.state().view.x_of(5_000.0, w), ra.center().y);
    h.hover_at(p);
    h.event(Event::MouseWheel {
        unit: egui::MouseWheelUnit::Point,
        delta: egui::vec2(0.0, 200.0),
        modifiers: Modifiers::NONE,
        phase: egui::TouchPhase::Move,
        source: egui::MouseWheelSource::Wheel,
    });
    h.run();
    assert!(h.state().view.span() < before.span() * 0.7, "zoomed: {before:?} -> {:?}", h.state().view);
    assert_coupled(h.state());
    // Dragging B pans both.
    let zoomed = h.state().view;
    let y = rb.center().y;
    let x0 = rb.center().x;
    common::drag(&mut h, Pos2::new(x0, y), Pos2::new(x0 - 200.0, y), Modifiers::NONE);
    assert!(h.state().view.t0 > zoomed.t0, "A followed B's pan: {zoomed:?} -> {:?}", h.state().view);
    assert_coupled(h.state());
    // A selection on A selects the same part of B.
    h.state_mut().select(2_000, 4_000);
    h.run();
    assert_eq!(h.state().compare.as_ref().and_then(|b| b.selection), Some((SHIFT + 2_000, SHIFT + 4_000)));
    // Keys drive both (through A only).
    let v = h.state().view;
    h.key_press(egui::Key::D);
    h.run();
    assert!(h.state().view.t0 > v.t0);
    assert_coupled(h.state());
}

#[test]
fn the_compare_tab_shows_both_profiles_and_the_difference() {
    let mut h = compared("tab");
    h.get_by_label("Compare").click();
    h.run();
    assert_eq!(h.state().tab, Tab::Compare);
    let rows = h.state_mut().compare_rows().expect("both profiles");
    let ar = rows.iter().find(|r| r.name == "MPI_Allreduce").expect("allreduce row");
    assert_eq!((ar.a_count, ar.b_count), (4, 4));
    assert_eq!(ar.delta(), 4 * SLOWER);
    // The largest difference comes first.
    assert_eq!(rows[0].name, "MPI_Allreduce");
    let send = rows.iter().find(|r| r.name == "MPI_Send").expect("send row");
    assert_eq!(send.delta(), 0);
    h.run();
    assert!(h.query_by_label(&format!("+{}", analyzers::fmt_ns(4 * SLOWER))).is_some());
    assert!(h.query_all_by_label_contains("B: ").next().is_some());
    // A filter applies to both.
    let f = h.get_by_label("Filter");
    f.focus();
    f.type_text("rank=0");
    h.run();
    let rows = h.state_mut().compare_rows().expect("both profiles");
    let ar = rows.iter().find(|r| r.name == "MPI_Allreduce").expect("allreduce row");
    assert_eq!((ar.a_count, ar.b_count, ar.delta()), (1, 1, SLOWER));
}

#[test]
fn a_compared_trace_that_cannot_be_opened_says_so() {
    let a = common::small_dir("compare-missing");
    let mut app = GuiApp::open_compare(&a, std::path::Path::new("/nonexistent/other"));
    app.wait_loaded(Duration::from_secs(60));
    let mut h = Harness::builder()
        .with_size(egui::vec2(1200.0, 800.0))
        .build_ui_state(|ui, app: &mut GuiApp| app.show(ui), app);
    assert!(h.query_by_label("timeline").is_some());
    assert!(h.query_by_label("Could not open the trace").is_some());
    assert!(h.query_by_label_contains("no such directory").is_some());
    h.get_by_label("Compare").click();
    h.run();
    assert!(h.query_by_label_contains("B could not be opened").is_some());
}

#[test]
fn picking_on_the_compared_trace_shows_its_details() {
    let mut h = compared("pick-b");
    let rb = h.get_by_label("timeline B").rect();
    // Rank 1's lane of B: its receive (1.5-3.5 us after B's start).
    let lanes_top = rb.top() + gui::ui::RULER_H;
    let y = lanes_top + h.state().compare.as_ref().map(|b| b.lane_h).unwrap_or(20.0) * 1.5;
    let bv = h.state().compare.as_ref().expect("B").view;
    let x = rb.left() + GUTTER_W + bv.x_of((SHIFT + 2_500) as f64, rb.width() - GUTTER_W);
    common::click_at(&mut h, Pos2::new(x, y));
    assert!(h.state().details_of_b);
    assert_eq!(h.state().tab, Tab::Details);
    assert!(matches!(h.state().compare.as_ref().and_then(|b| b.picked), Some(gui::app::Pick::Call { rank: 1, .. })));
    assert!(h.query_by_label("MPI_Recv").is_some());
    // Zooming to it moves both traces.
    h.get_by_label("Zoom to it").click();
    h.run();
    assert_eq!(h.state().compare.as_ref().and_then(|b| b.selection), Some((SHIFT + 1_500, SHIFT + 3_500)));
    assert_eq!(h.state().selection, Some((1_500, 3_500)));
    assert_coupled(h.state());
    // Picking on A shows A's details again.
    h.state_mut().pick_call(0, 1);
    h.run();
    assert!(!h.state().details_of_b);
}

#[test]
fn the_side_views_switch_to_the_compared_trace() {
    let mut h = compared("side-b");
    // A's four Allreduce take 5.8 us in all, B's 4 x SLOWER more.
    let slow = analyzers::fmt_ns(5_800 + 4 * SLOWER);
    h.get_by_label("B").click();
    h.run();
    assert!(h.state().side_of_b);
    // B's profile: its Allreduce time, and its own range.
    assert!(h.query_by_label(&slow).is_some(), "B's Allreduce time {slow}");
    // Times read from each trace's own start, so B's range is told by its own (longer) length.
    let (a0, a1) = h.state().range();
    let (b0, b1) = h.state().compare.as_ref().map(|b| b.range()).expect("B loaded");
    assert_ne!(a1 - a0, b1 - b0, "the variant is slower");
    let b_range = format!("Whole trace: 0 ns – {} ({})", analyzers::fmt_ns(b1 - b0), analyzers::fmt_ns(b1 - b0));
    assert!(h.query_by_label(&b_range).is_some(), "B's range {b_range}");
    // B's tabs work on B.
    h.get_by_label("Collectives").click();
    h.run();
    assert_eq!(h.state().compare.as_ref().map(|b| b.tab), Some(Tab::Collectives));
    assert_eq!(h.state().tab, Tab::Profile);
    h.get_by_label("A").click();
    h.run();
    assert!(!h.state().side_of_b);
    assert!(h.query_by_label(&slow).is_none());
}
