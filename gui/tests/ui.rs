//! The viewer driven headless through egui_kittest: widgets are found in
//! the accessibility tree, input goes in as events.

mod common;

use std::time::Duration;

use egui::{Event, Modifiers, Pos2};
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use gui::app::{Pick, Tab};
use gui::ui::GUTTER_W;
use gui::GuiApp;

fn loaded(name: &str) -> GuiApp {
    let dir = common::small_dir(name);
    let mut app = GuiApp::open(&dir);
    app.wait_loaded(Duration::from_secs(60));
    app.smooth = false;
    app
}

fn harness(app: GuiApp) -> Harness<'static, GuiApp> {
    let mut h = Harness::builder()
        .with_size(egui::vec2(1200.0, 700.0))
        .build_ui_state(|ui, app: &mut GuiApp| app.show(ui), app);
    h.run();
    h
}

/// Screen x of time `t` on the timeline of `h`.
fn x_of(h: &Harness<'_, GuiApp>, t: f64) -> f32 {
    let r = h.get_by_label("timeline").rect();
    let w = r.width() - GUTTER_W;
    r.left() + GUTTER_W + h.state().view.x_of(t, w)
}

#[test]
fn opens_a_known_trace() {
    let app = loaded("open");
    let t = app.trace.as_ref().expect("trace");
    assert_eq!(t.lod.ranks.len(), 4);
    let a = t.analysed.as_ref().expect("analyses");
    assert_eq!(a.messages.len(), 2);
    assert_eq!(a.colls.len(), 1);
    let h = harness(app);
    h.get_by_label("timeline");
    h.get_by_label("MPI_Send");
    h.get_by_label("MPI_Allreduce");
    assert!(h.query_by_label_contains("Whole trace").is_some());
}

#[test]
fn shift_drag_selects_a_range_and_the_views_follow() {
    let mut h = harness(loaded("select"));
    let y = h.get_by_label("timeline").rect().center().y;
    let (xa, xb) = (x_of(&h, 1_800.0), x_of(&h, 3_600.0));
    common::drag(&mut h, Pos2::new(xa, y), Pos2::new(xb, y), Modifiers::SHIFT);
    let (a, b) = h.state().selection.expect("a selection");
    assert!((a - 1_800).abs() < 100 && (b - 3_600).abs() < 100, "selected {a}..{b}");
    assert!(h.query_by_label_contains("Selection:").is_some());
    // The profile follows: the Allreduce (from 5 us) is out of the range.
    assert!(h.query_by_label("MPI_Send").is_some());
    assert!(h.query_by_label("MPI_Allreduce").is_none());
}

#[test]
fn clicking_a_matrix_cell_highlights_its_messages() {
    let mut h = harness(loaded("matrix"));
    h.get_by_label("Matrix").click();
    h.run();
    assert_eq!(h.state().tab, Tab::Matrix);
    h.get_by_label("0 -> 1").click();
    h.run();
    assert_eq!(h.state().highlight, Some((0, 1)));
    assert!(h.query_by_label_contains("highlighted: 0 -> 1").is_some());
    let s = h.state_mut().stats().expect("stats").clone();
    assert_eq!(s.cell(0, 1), (1024, 1));
    assert_eq!(s.cell(2, 3), (64, 1));
    assert_eq!(s.cell(1, 0), (0, 0));
}

#[test]
fn search_finds_calls_and_goes_to_them() {
    let mut h = harness(loaded("search"));
    let find = h.get_by_label("Find");
    find.focus();
    find.type_text("allreduce");
    h.run();
    h.key_press(egui::Key::Enter);
    h.run();
    assert_eq!(h.state().found.len(), 4);
    assert!(h.query_by_label("1/4 found").is_some());
    assert!(matches!(h.state().picked, Some(Pick::Call { .. })));
    h.get_by_label("Next").click();
    h.run();
    assert_eq!(h.state().found_pos, 1);
    // By tag: the send and the receive of the message with tag 7.
    assert_eq!(h.state_mut().find("tag=7"), Ok(Some(2)));
    let t = h.state().trace.clone().expect("trace");
    let found: Vec<(i32, String)> = h
        .state()
        .found
        .iter()
        .map(|f| (t.lod.ranks[f.rank].rank, t.lod.name(t.lod.ranks[f.rank].data.call(f.call).name).to_string()))
        .collect();
    assert_eq!(found, vec![(1, "MPI_Recv".to_string()), (0, "MPI_Send".to_string())]);
}

#[test]
fn search_of_a_large_trace_runs_in_the_background() {
    let mut app = loaded("search-bg");
    app.sync_stats_calls = 0;
    assert_eq!(app.find("allreduce"), Ok(None));
    assert!(app.find_pending());
    app.wait_found();
    assert!(!app.find_pending());
    assert_eq!(app.found.len(), 4);
    assert!(matches!(app.picked, Some(Pick::Call { .. })), "went to the first");
    // The window keeps drawing while a search runs, and takes its results.
    assert_eq!(app.find("send"), Ok(None));
    let mut h = harness(app);
    for _ in 0..200 {
        h.step();
        if !h.state().find_pending() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!h.state().find_pending());
    assert_eq!(h.state().found.len(), 2, "MPI_Send of ranks 0 and 2");
    h.run();
    assert!(h.query_by_label("1/2 found").is_some());
}

#[test]
fn a_tag_filter_is_applied_in_the_background_for_large_traces() {
    let mut app = loaded("tag-bg");
    app.sync_stats_calls = 0;
    app.set_filter("tag=9");
    assert!(app.call_set_pending());
    assert!(app.call_set().is_none(), "found in the background");
    let set = app.wait_call_set().expect("the calls with tag 9");
    assert_eq!(set.per_rank.iter().map(Vec::len).sum::<usize>(), 2);
    assert!(!app.call_set_pending());
    app.stats();
    app.wait_stats();
    let s = app.stats().expect("stats");
    assert_eq!(s.messages, 1);
    assert_eq!(s.cell(2, 3), (64, 1));
}

#[test]
fn filter_hides_ranks_and_dims_calls() {
    let mut h = harness(loaded("filter"));
    let f = h.get_by_label("Filter");
    f.focus();
    f.type_text("rank=2-3");
    h.run();
    assert_eq!(h.state().lanes.rows.len(), 2);
    assert_eq!(
        h.state_mut().stats().expect("stats").profile.iter().find(|r| r.name == "MPI_Send").map(|r| r.count),
        Some(1)
    );
}

#[test]
fn picking_a_send_and_jumping_to_its_receive() {
    let mut app = loaded("jump");
    let t = app.trace.as_ref().expect("trace");
    let r0 = &t.lod.ranks[0].data;
    let send = (0..r0.len()).find(|&i| t.lod.name(r0.call(i).name) == "MPI_Send").expect("a send");
    let start = r0.call(send).t_start - t.lod.span().0;
    app.pick_call(0, send);
    let details = app.details(app.picked);
    // From the start of the trace, to the ns (not whole seconds of the clock).
    let want = format!("{}.{:03} µs", start / 1000, start % 1000);
    assert!(start >= 1000 && details.iter().any(|(k, v)| k == "start" && *v == want), "{want} {details:?}");
    assert!(details.iter().any(|(k, v)| k == "message" && v == "0 -> 1"), "{details:?}");
    assert!(details.iter().any(|(k, v)| k == "bytes" && v == "1.0 KiB"));
    assert!(app.jump_to_partner());
    let Some(Pick::Call { rank, call }) = app.picked else { panic!("no pick") };
    let t = app.trace.as_ref().expect("trace");
    assert_eq!(t.lod.ranks[rank].rank, 1);
    assert_eq!(t.lod.name(t.lod.ranks[rank].data.call(call).name), "MPI_Recv");
    let mut h = harness(app);
    h.run();
    assert!(h.query_by_label("Jump to partner (J)").is_some());
}

#[test]
fn clicking_a_call_on_the_timeline_shows_its_details() {
    let mut h = harness(loaded("click"));
    let r = h.get_by_label("timeline").rect();
    // Lane of rank 1 (second lane; no host groups in a one-host trace).
    let y = r.top() + gui::ui::RULER_H + h.state().lane_h * 1.5;
    let x = x_of(&h, 2_500.0);
    common::click_at(&mut h, Pos2::new(x, y));
    assert_eq!(h.state().tab, Tab::Details);
    assert!(h.query_by_label("MPI_Recv").is_some());
}

#[test]
fn wheel_zooms_and_keys_pan() {
    let mut h = harness(loaded("zoom"));
    let before = h.state().view;
    let r = h.get_by_label("timeline").rect();
    let p = Pos2::new(x_of(&h, 5_000.0), r.center().y);
    h.hover_at(p);
    h.event(Event::MouseWheel {
        unit: egui::MouseWheelUnit::Point,
        delta: egui::vec2(0.0, 200.0),
        modifiers: Modifiers::NONE,
        phase: egui::TouchPhase::Move,
        source: egui::MouseWheelSource::Wheel,
    });
    h.run();
    let after = h.state().view;
    assert!(after.span() < before.span() * 0.7, "{before:?} -> {after:?}");
    assert!((after.t_of(p.x - r.left() - GUTTER_W, r.width() - GUTTER_W) - 5_000.0).abs() < 50.0);
    h.key_press(egui::Key::D);
    h.run();
    assert!(h.state().view.t0 > after.t0);
    h.key_press(egui::Key::Home);
    h.run();
    assert!(h.state().view.span() >= before.span() * 0.99);
}

#[test]
fn a_missing_directory_opens_a_window_that_says_so() {
    let mut app = GuiApp::open(std::path::Path::new("/nonexistent/trace"));
    app.wait_loaded(Duration::from_secs(10));
    let h = harness(app);
    assert!(h.query_by_label("Could not open the trace").is_some());
    assert!(h.query_by_label_contains("no such directory").is_some());
}

#[test]
fn a_damaged_trace_shows_what_is_wrong_and_what_was_read() {
    let dir = common::small_dir("damaged");
    std::fs::write(dir.join("meta.json"), b"{ not json").expect("write");
    let ev = std::fs::read_dir(dir.join("events")).expect("events").flatten().map(|e| e.path()).min().expect("a file");
    std::fs::write(&ev, b"PAR1 garbage").expect("write");
    let mut app = GuiApp::open(&dir);
    app.wait_loaded(Duration::from_secs(60));
    app.smooth = false;
    let h = harness(app);
    assert_eq!(h.state().tab, Tab::Problems);
    assert!(h.state().crashed.is_none());
    assert!(h.query_all_by_label_contains("meta.json").next().is_some());
    assert!(h.query_by_label_contains("calls read").is_some());
}

#[test]
fn large_ranges_are_computed_in_the_background() {
    let mut app = loaded("background");
    let sync = app.stats().expect("stats").clone();
    app.sync_stats_calls = 0;
    app.select(0, 9_999);
    app.stats();
    assert!(app.stats_pending());
    app.wait_stats();
    assert!(!app.stats_pending());
    let s = app.stats().expect("stats");
    assert_eq!((s.t0, s.t1), (0, 9_999));
    assert_eq!(s.messages, sync.messages);
    assert_eq!(s.profile.len(), sync.profile.len());
}

#[test]
fn brackets_change_the_lane_height() {
    let mut h = harness(loaded("lanes"));
    let before = h.state().lanes.height();
    h.key_press(egui::Key::CloseBracket);
    h.run();
    assert!(h.state().lanes.height() > before);
}

#[test]
fn host_groups_fold_from_the_lane_names() {
    let mut app = loaded("fold");
    {
        let t = app.trace.as_mut().expect("trace");
        let lod = std::sync::Arc::get_mut(&mut t.lod).expect("not shared yet");
        for r in &mut lod.ranks {
            r.host = Some(format!("node{}", r.rank / 2));
        }
    }
    app.set_lane_height(20.0);
    let mut h = harness(app);
    // node0 header, ranks 0-1, node1 header, ranks 2-3.
    assert_eq!(h.state().lanes.rows.len(), 6);
    let r = h.get_by_label("timeline").rect();
    let header = Pos2::new(r.left() + 10.0, r.top() + gui::ui::RULER_H + gui::lanes::HEADER_H / 2.0);
    common::click_at(&mut h, header);
    assert!(h.state().folded.contains("node0"));
    assert_eq!(h.state().lanes.rows.len(), 4);
}

#[test]
fn clicking_a_user_region_shows_its_details_and_zooms_to_it() {
    let mut h = harness(loaded("region"));
    let r = h.get_by_label("timeline").rect();
    // Rank 0's lane: the band of depth 0 ("solve", 1.5-4 us), then depth 1 ("inner", 2-2.5 us).
    let band = |depth: f32| r.top() + gui::ui::RULER_H + 1.0 + gui::timeline::REGION_BAND.1 * depth + 1.0;
    let p = Pos2::new(x_of(&h, 3_000.0), band(0.0));
    common::click_at(&mut h, p);
    assert!(matches!(h.state().picked, Some(Pick::Region { rank: 0, .. })), "{:?}", h.state().picked);
    let d = h.state().details(h.state().picked);
    let get = |k: &str| d.iter().find(|x| x.0 == k).map(|x| x.1.clone());
    assert_eq!(get("region").as_deref(), Some("solve"));
    assert_eq!(get("duration"), Some(analyzers::fmt_ns(2_500)));
    assert_eq!(get("MPI calls").as_deref(), Some("1"), "the send at 2 us");
    assert_eq!(get("time in MPI"), Some(format!("{} (40%)", analyzers::fmt_ns(1_000))));
    assert!(h.query_by_label("solve").is_some());
    // The nested region, one band lower.
    let p = Pos2::new(x_of(&h, 2_200.0), band(1.0));
    common::click_at(&mut h, p);
    let d = h.state().details(h.state().picked);
    assert!(d.contains(&("region".to_string(), "inner".to_string())), "{d:?}");
    assert!(d.contains(&("depth".to_string(), "1".to_string())));
    h.get_by_label("Zoom to it").click();
    h.run();
    assert_eq!(h.state().selection, Some((2_000, 2_500)));
    let v = h.state().view;
    assert!(v.t0 >= 1_900.0 && v.t0 <= 2_000.0 && v.t1 >= 2_500.0 && v.t1 <= 2_600.0, "{v:?}");
    // Below the bands, the call is picked.
    let p = Pos2::new(x_of(&h, 2_200.0), r.top() + gui::ui::RULER_H + h.state().lane_h - 4.0);
    common::click_at(&mut h, p);
    assert!(matches!(h.state().picked, Some(Pick::Call { rank: 0, .. })), "{:?}", h.state().picked);
}

#[test]
fn histograms_have_titled_axes_and_bins() {
    let mut h = harness(loaded("hist"));
    h.get_by_label("Histograms").click();
    h.run();
    assert_eq!(h.state().tab, Tab::Histograms);
    for title in [
        "Message sizes",
        "Size",
        "Messages",
        "Messages per bin",
        "Call durations",
        "Duration",
        "Calls",
        "Calls per bin",
    ] {
        assert!(h.query_by_label(title).is_some(), "{title}");
    }
    // The 1 KiB and the 64 B message, one bin each.
    let kib = format!("{} – {}", analyzers::fmt_bytes(1024), analyzers::fmt_bytes(2048));
    assert!(h.query_by_label(&kib).is_some(), "{kib}");
    assert!(h.query_by_label(&format!("{} – {}", analyzers::fmt_bytes(64), analyzers::fmt_bytes(128))).is_some());
    assert!(h.query_by_label("2 in all").is_some());
    assert_eq!(h.query_all_by_label("50%").count(), 2);
    assert!(h.query_all_by_label("axis max 1").next().is_some());
}

#[test]
fn collective_costs_by_operation_and_size() {
    let mut h = harness(loaded("colls"));
    h.get_by_label("Collectives").click();
    h.run();
    assert_eq!(h.state().tab, Tab::Collectives);
    assert!(h.query_by_label("Size per rank").is_some());
    assert!(h.query_by_label(&format!("{} – {}", analyzers::fmt_bytes(8), analyzers::fmt_bytes(15))).is_some());
    assert!(h.query_by_label("rank 3 (1x)").is_some(), "rank 3 arrived last");
}

#[test]
fn the_details_tab_lists_the_communicators_for_comm_filters() {
    let mut h = harness(loaded("comms"));
    h.get_by_label("Details").click();
    h.run();
    assert!(h.query_by_label("Communicators (filter with comm=ID)").is_some());
    assert!(h.query_by_label("comm=0").is_some());
    assert!(h.query_by_label("4").is_some(), "the world has 4 ranks");
}

#[test]
fn right_drag_measures_an_interval_and_escape_clears_it() {
    let mut h = harness(loaded("measure"));
    let y = h.get_by_label("timeline").rect().center().y;
    let (xa, xb) = (x_of(&h, 2_000.0), x_of(&h, 4_500.0));
    let view = h.state().view;
    common::drag_with(&mut h, Pos2::new(xa, y), Pos2::new(xb, y), egui::PointerButton::Secondary, Modifiers::NONE);
    let (a, b) = h.state().measure.expect("a measure");
    assert!((a - 2_000.0).abs() < 60.0 && (b - 4_500.0).abs() < 60.0, "measured {a}..{b}");
    assert_eq!(h.state().view, view, "measuring does not pan");
    assert_eq!(h.state().selection, None);
    h.key_press(egui::Key::Escape);
    h.run();
    assert_eq!(h.state().measure, None);
}

/// The "Critical path" checkbox draws the report's path: on rank 3 (last
/// at the allreduce, whose receive from rank 2 did not wait) and not on
/// rank 1, which only waited for its message.
#[test]
fn critical_path_checkbox_draws_the_path() {
    let mut h = harness(loaded("critical"));
    assert!(h.state().geometry.critical.is_empty(), "hidden at first");
    h.get_by_label("Critical path").click();
    h.run();
    assert!(h.state().show_critical);
    let a = h.state().trace.as_ref().unwrap().analysed.clone().unwrap();
    assert!(a.critical.on_path(3, 2_600, 3_200));
    assert!(!a.critical.on_path(1, 1_500, 3_500));
    let spans = h.state().geometry.critical.clone();
    let covers = |rank: i32, x: f32| spans.iter().any(|&(r, a, b)| r == rank && a <= x && x <= b);
    assert!(covers(3, x_of(&h, 2_900.0)), "rank 3's receive is on the path: {spans:?}");
    assert!(covers(0, x_of(&h, 8_000.0)), "the end of rank 0 is: {spans:?}");
    assert!(!spans.iter().any(|&(r, _, _)| r == 1), "rank 1 never is: {spans:?}");
    h.get_by_label("Critical path").click();
    h.run();
    assert!(h.state().geometry.critical.is_empty());
}

/// The wait states' "Worst" buttons go to the largest instance first:
/// at the allreduce rank 0 waited 1.5 us, rank 1 1.3 us, rank 2 1 us.
#[test]
fn worst_wait_buttons_go_to_the_largest_wait_first() {
    let mut h = harness(loaded("worst"));
    h.get_by_label("Wait states").click();
    h.run();
    let picked_rank = |h: &Harness<'_, GuiApp>| match h.state().picked {
        Some(Pick::Call { rank, call }) => {
            let t = h.state().trace.as_ref().unwrap();
            let c = t.lod.ranks[rank].data.call(call);
            (t.lod.ranks[rank].rank, t.lod.name(c.name).to_string())
        }
        ref p => panic!("picked {p:?}"),
    };
    h.get_by_label("Worst Wait at N x N").click();
    h.run();
    assert_eq!(picked_rank(&h), (0, "MPI_Allreduce".to_string()));
    h.state_mut().tab = Tab::Waits;
    h.run();
    assert!(h.query_by_label("1 of 3").is_some());
    h.get_by_label("Worst Wait at N x N").click();
    h.run();
    assert_eq!(picked_rank(&h), (1, "MPI_Allreduce".to_string()));
    h.state_mut().tab = Tab::Waits;
    h.run();
    h.get_by_label("Previous Wait at N x N").click();
    h.run();
    assert_eq!(picked_rank(&h), (0, "MPI_Allreduce".to_string()));
    h.state_mut().tab = Tab::Waits;
    h.run();
    h.get_by_label("Worst Late Sender").click();
    h.run();
    assert_eq!(picked_rank(&h), (1, "MPI_Recv".to_string()));
}

/// Each thread of a rank has its own lane under the rank, and clicking
/// its name in the gutter folds them into one lane; a call picked on a
/// thread's lane is that thread's.
#[test]
fn thread_lanes_under_their_rank_fold_from_the_gutter() {
    use gui::lanes::Row;
    let mut h = harness(common::open_loaded(&common::threads_dir("threads")));
    let lanes: Vec<(usize, u16)> = h
        .state()
        .lanes
        .rows
        .iter()
        .map(|r| match r {
            Row::Thread { rank, thread, .. } => (*rank, *thread),
            r => panic!("{r:?}"),
        })
        .collect();
    assert_eq!(lanes, vec![(0, 0), (0, 1), (1, 0), (1, 1)]);
    let r = h.get_by_label("timeline").rect();
    let lane_y = |h: &Harness<'_, GuiApp>, k: usize| r.top() + gui::ui::RULER_H + h.state().lane_h * (k as f32 + 0.5);
    // The call names on the bars: Send on rank 0's thread 0, Recv on its thread 1.
    let labels = h.state().geometry.labels.clone();
    let on_lane = |text: &str, k: usize| {
        let y = lane_y(&h, k);
        labels.iter().any(|l| l.text == text && (l.pos.y - y).abs() < h.state().lane_h / 2.0)
    };
    assert!(on_lane("Send", 0) && !on_lane("Recv", 0), "{labels:?}");
    assert!(on_lane("Recv", 1) && !on_lane("Send", 1), "{labels:?}");
    assert!(on_lane("Recv", 2) && on_lane("Send", 3), "{labels:?}");
    // Picking at 4.5 us on rank 0's thread 1: its receive (from 2 us).
    let p = Pos2::new(x_of(&h, 4_500.0), lane_y(&h, 1));
    common::click_at(&mut h, p);
    let Some(Pick::Call { rank, call }) = h.state().picked else { panic!("{:?}", h.state().picked) };
    let t = h.state().trace.as_ref().unwrap();
    let c = t.lod.ranks[rank].data.call(call);
    assert_eq!((rank, t.lod.name(c.name), c.t_start), (0, "MPI_Recv", 2_000));
    let details = h.state().details(h.state().picked);
    assert!(details.contains(&("thread".to_string(), "1".to_string())), "{details:?}");
    // A click on the gutter folds rank 0's threads into one lane.
    let gutter = Pos2::new(r.left() + 10.0, lane_y(&h, 0));
    common::click_at(&mut h, gutter);
    assert_eq!(h.state().lanes.rows.len(), 3);
    assert_eq!(h.state().lanes.rows[0], Row::Rank(0));
    common::click_at(&mut h, gutter);
    assert_eq!(h.state().lanes.rows.len(), 4);
}

/// The Profile tab, below the profile: the call-tree profile of a trace
/// with call paths (`analyzers::synth::call_paths`).
#[test]
fn call_paths_tab_shows_the_tree() {
    let dir = common::temp_dir("call-paths");
    let t = analyzers::synth::call_paths();
    t.write(&dir).unwrap();
    let mut app = GuiApp::open(&dir);
    app.wait_loaded(Duration::from_secs(60));
    // The synthetic module is not there to symbolize: the viewer opens on
    // Problems, which says so.
    let mut h = harness(app);
    h.get_by_label("Profile").click();
    h.run();
    assert_eq!(h.state().tab, Tab::Profile);
    assert!(h.query_by_label("Call paths and counters (whole trace)").is_some());
    for name in ["app+0x900", "app+0x500", "app+0x600", "MPI_Send"] {
        assert!(h.query_all_by_label_contains(name).next().is_some(), "{name}");
    }
    // The tree: the outer function's 4 sends, then 3 and 1 below it.
    let tree = &h.state().trace.as_ref().unwrap().analysed.as_ref().unwrap().an.call_tree;
    assert_eq!(tree.find(&["app+0x900"]).map(|n| n.inclusive.calls), Some(4));
    assert_eq!(tree.find(&["app+0x900", "app+0x600"]).map(|n| n.inclusive.calls), Some(3));
    assert_eq!(tree.find(&["app+0x900", "app+0x500"]).map(|n| n.inclusive.calls), Some(1));
}

/// Without call paths the Profile tab has no such section.
#[test]
fn call_paths_tab_without_paths() {
    let h = harness(loaded("no-call-paths"));
    assert_eq!(h.state().tab, Tab::Profile);
    assert!(h.query_by_label_contains("Call paths").is_none());
}
