//! The timeline's geometry and the side views' numbers of a small known
//! trace, without a window.

mod common;

use std::collections::BTreeSet;

use egui::{Pos2, Rect};
use gui::data::Trace;
use gui::filter::{CallSet, Filter};
use gui::lanes::Lanes;
use gui::stats;
use gui::timeline::{self, Scene};
use gui::view::TimeView;

fn scene_geometry(trace: &Trace, view: TimeView, filter: &Filter, highlight: Option<(i32, i32)>) -> timeline::Geometry {
    scene_geometry_with(trace, view, filter, highlight, false)
}

fn scene_geometry_with(
    trace: &Trace,
    view: TimeView,
    filter: &Filter,
    highlight: Option<(i32, i32)>,
    critical: bool,
) -> timeline::Geometry {
    let lanes = Lanes::new(&trace.lod, filter, &BTreeSet::new(), 20.0);
    let kept = filter.name_mask(&trace.lod.names);
    let only = filter.on().any().then(|| CallSet::of(trace, filter.on()));
    let scene = Scene {
        trace,
        lanes: &lanes,
        view,
        rect: Rect::from_min_max(Pos2::new(100.0, 30.0), Pos2::new(1100.0, 530.0)),
        scroll: 0.0,
        kept: &kept,
        min_dur: filter.min_dur,
        only: only.as_ref(),
        highlight,
        picked_msg: None,
        dark: false,
        critical,
    };
    timeline::build(&scene, &timeline::palette(&trace.lod), &mut Vec::new())
}

#[test]
fn arrows_collectives_and_labels_of_a_small_trace() {
    let dir = common::small_dir("geometry");
    let trace = Trace::open(&dir).expect("open");
    let g = scene_geometry(&trace, TimeView::new(0.0, 10_000.0), &Filter::default(), None);
    assert_eq!(g.arrows.len(), 2);
    assert_eq!(g.colls_drawn, 1);
    assert!(g.labels.iter().any(|l| l.text == "Allreduce"), "{:?}", g.labels);
    assert!(g.labels.iter().any(|l| l.text == "Send"));
    // Init, Send/Recv, Allreduce, Finalize on every rank: one run each.
    assert_eq!(g.rects, 16);
    // Plus the two user regions of rank 0 (bands at the top of its lane).
    assert_eq!(g.bars.vertices.len(), (16 + 2) * 4);
    let regions = &trace.analysed.as_ref().expect("analyses").regions[0];
    assert_eq!(
        regions.iter().map(|r| (r.t0, r.t1, r.depth)).collect::<Vec<_>>(),
        vec![(1_500, 4_000, 0), (2_000, 2_500, 1)]
    );
    // The arrow of rank 0 -> 1 goes from the send's start to the receive's end.
    let (a, b, id) = g.arrows.iter().find(|x| x.0.y < x.1.y && x.1.y < 30.0 + 40.0).copied().expect("0 -> 1");
    assert!((a.x - (100.0 + 200.0)).abs() < 1.0 && (b.x - (100.0 + 350.0)).abs() < 1.0, "{a:?} {b:?}");
    assert_eq!(timeline::arrow_at(&g, a.lerp(b, 0.5), 3.0), Some(id));
    // Zoomed into the Allreduce: no message in view.
    let z = scene_geometry(&trace, TimeView::new(5_000.0, 7_000.0), &Filter::default(), None);
    assert_eq!(z.arrows.len(), 0);
    assert_eq!(z.colls_drawn, 1);
    // A rank filter drops the lanes and the arrows to them.
    let f = scene_geometry(&trace, TimeView::new(0.0, 10_000.0), &Filter::parse("rank=0-1").expect("filter"), None);
    assert_eq!(f.arrows.len(), 1);
    assert_eq!(f.rects, 8);
}

#[test]
fn range_statistics_of_a_small_trace() {
    let dir = common::small_dir("stats");
    let trace = Trace::open(&dir).expect("open");
    let all = stats::compute(&trace, 0, 10_001, &Filter::default(), None);
    let row = |s: &stats::RangeStats, n: &str| s.profile.iter().find(|r| r.name == n).cloned();
    assert_eq!(row(&all, "MPI_Allreduce").map(|r| (r.count, r.ranks)), Some((4, 4)));
    assert_eq!(all.colls.len(), 1);
    assert_eq!(all.colls[0].instances, 1);
    assert_eq!(all.colls[0].max_spread, 1_500);
    // 8 bytes per rank; rank 3 arrived last.
    assert_eq!(all.colls[0].size, (8, 15));
    assert_eq!(all.colls[0].last, Some((3, 1)));
    assert_eq!(stats::size_class(1024), (1024, 2047));
    assert_eq!(stats::size_class(0), (0, 0));
    assert_eq!(stats::size_class(1), (1, 1));
    assert_eq!(all.messages, 2);
    // Rank 1 waited in its receive for rank 0 (500 ns), and the Allreduce's
    // early arrivals for rank 3.
    assert!(all.waits.iter().any(|w| w.call == "MPI_Recv" && w.cause == 0 && w.time == 500), "{:?}", all.waits);
    assert!(all.waits.iter().any(|w| w.call == "MPI_Allreduce" && w.cause == 3));
    // Half of the receive on rank 1 is in [2500, 4000).
    let part = stats::compute(&trace, 2_500, 4_000, &Filter::default(), None);
    assert_eq!(row(&part, "MPI_Recv").map(|r| r.time), Some(1_000 + 600));
    assert!(row(&part, "MPI_Allreduce").is_none());
    assert_eq!(part.messages, 1);
    let mut p = part.profile.clone();
    stats::sort_profile(&mut p, stats::ProfileCol::Name, false);
    assert!(p.windows(2).all(|w| w[0].name <= w[1].name));
}

#[test]
fn dense_views_are_drawn_at_pixel_resolution_without_gaps() {
    use trace_lod::{Lod, RawCall};
    // A call of 5 ns every 10 ns: busy half of the time, everywhere.
    let calls: Vec<RawCall> = (0..100_000)
        .map(|i| RawCall { t_start: i * 10, t_end: i * 10 + 5, name: (i % 2) as u16, flags: 0, bytes: 0 })
        .collect();
    let lod = Lod::from_calls(vec!["MPI_Send".into(), "MPI_Recv".into()], vec![(0, calls)]);
    let trace = Trace::new(lod);
    // The bars' x extents (4 vertices per rectangle), merged.
    let covered = |g: &timeline::Geometry| {
        let mut spans: Vec<(f32, f32)> = g
            .bars
            .vertices
            .chunks(4)
            .map(|q| q.iter().fold((f32::MAX, f32::MIN), |(a, b), v| (a.min(v.pos.x), b.max(v.pos.x))))
            .collect();
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut gaps = 0;
        let mut end = spans.first().map(|s| s.0).unwrap_or(0.0);
        for &(a, b) in &spans {
            if a > end + 0.01 {
                gaps += 1;
            }
            end = end.max(b);
        }
        (spans.first().map(|s| s.0).unwrap_or(0.0), end, gaps)
    };
    // From 1 to 64 calls per pixel over 1000 px: every pixel shows MPI.
    for per_px in [1.0, 4.5, 6.0, 10.0, 32.0, 64.0] {
        let g = scene_geometry(&trace, TimeView::new(0.0, 10.0 * per_px * 1000.0), &Filter::default(), None);
        let (lo, hi, gaps) = covered(&g);
        assert!(lo <= 101.0 && hi >= 1099.0, "{per_px} calls per px: bars span {lo}..{hi}");
        assert_eq!(gaps, 0, "{per_px} calls per px: gaps between the bars");
    }
    // Zoomed in, calls are drawn one by one with the gaps between them.
    let z = scene_geometry(&trace, TimeView::new(0.0, 2_000.0), &Filter::default(), None);
    assert!(z.rects >= 190, "{} rects", z.rects);
    assert!(covered(&z).2 >= 190, "gaps between calls");
}

/// `tag=` and `comm=` keep the calls, messages and collectives of that
/// tag or communicator: the others are dimmed or not drawn, and the side
/// views count only those.
#[test]
fn tag_and_comm_filters_on_the_timeline_and_in_the_numbers() {
    let dir = common::small_dir("tagfilter");
    let trace = Trace::open(&dir).expect("open");
    let f = Filter::parse("tag=9").expect("filter");
    let set = CallSet::of(&trace, f.on());
    // Rank 2's send and rank 3's receive (lanes 2 and 3) and nothing else.
    let kept: Vec<(i32, String)> = set
        .per_rank
        .iter()
        .enumerate()
        .flat_map(|(ri, v)| v.iter().map(move |k| (ri, k.call)))
        .map(|(ri, c)| {
            (trace.lod.ranks[ri].rank, trace.lod.name(trace.lod.ranks[ri].data.call(c as usize).name).to_string())
        })
        .collect();
    assert_eq!(kept, vec![(2, "MPI_Send".to_string()), (3, "MPI_Recv".to_string())]);
    let g = scene_geometry(&trace, TimeView::new(0.0, 10_000.0), &f, None);
    assert_eq!(g.arrows.len(), 1, "only the message with tag 9");
    assert!(g.arrows[0].0.y > 30.0 + 40.0, "the arrow of rank 2 -> 3");
    assert_eq!(g.colls_drawn, 0, "collectives have no tag");
    // The bars of ranks 0 and 1 are all dimmed; rank 2's send is not.
    let dim = egui::Color32::from_gray(215);
    let lane = |k: f32| {
        g.bars.vertices.chunks(4).filter(move |q| {
            q[0].pos.y >= 30.0 + 20.0 * k && q[2].pos.y <= 30.0 + 20.0 * (k + 1.0) && q[2].pos.y - q[0].pos.y > 5.0
        })
    };
    assert!(lane(0.0).count() >= 3 && lane(0.0).all(|q| q[0].color == dim));
    assert!(lane(1.0).all(|q| q[0].color == dim));
    assert!(lane(2.0).any(|q| q[0].color != dim), "rank 2's send stands out");
    // The numbers count only the calls and messages with tag 9.
    let s = stats::compute(&trace, 0, 10_001, &f, Some(&set));
    let names: Vec<(&str, u64)> = s.profile.iter().map(|r| (r.name.as_str(), r.count)).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&("MPI_Send", 1)) && names.contains(&("MPI_Recv", 1)));
    assert_eq!((s.messages, s.cell(2, 3), s.cell(0, 1)), (1, (64, 1), (0, 0)));
    assert!(s.colls.is_empty());
    // comm=0 (the world) keeps everything that has a communicator.
    let w = Filter::parse("comm=0").expect("filter");
    let g = scene_geometry(&trace, TimeView::new(0.0, 10_000.0), &w, None);
    assert_eq!((g.arrows.len(), g.colls_drawn), (2, 1));
    let s = stats::compute(&trace, 0, 10_001, &w, Some(&CallSet::of(&trace, w.on())));
    assert!(s.profile.iter().any(|r| r.name == "MPI_Allreduce" && r.count == 4));
    assert!(!s.profile.iter().any(|r| r.name == "MPI_Init"), "MPI_Init has no communicator");
    // comm= takes the trace-wide id, not the model's index: renumber the
    // world (index 0) to id 42.
    let mut renumbered = Trace::open(&dir).expect("open");
    let a = std::sync::Arc::get_mut(renumbered.analysed.as_mut().expect("analyses")).expect("not shared");
    assert_eq!(a.an.model.comms[0].id, 0);
    a.an.model.comms[0].id = 42;
    let by_id = Filter::parse("comm=42").expect("filter");
    let g = scene_geometry(&renumbered, TimeView::new(0.0, 10_000.0), &by_id, None);
    assert_eq!((g.arrows.len(), g.colls_drawn), (2, 1));
    let g = scene_geometry(&renumbered, TimeView::new(0.0, 10_000.0), &w, None);
    assert_eq!((g.arrows.len(), g.colls_drawn), (0, 0), "no communicator has id 0 now");
    // Another communicator keeps nothing.
    let none = Filter::parse("comm=5").expect("filter");
    let g = scene_geometry(&trace, TimeView::new(0.0, 10_000.0), &none, None);
    assert_eq!((g.arrows.len(), g.colls_drawn), (0, 0));
    assert!(g.bars.vertices.chunks(4).filter(|q| q[2].pos.y - q[0].pos.y > 5.0).all(|q| q[0].color == dim));
}

/// A search keeps the earliest matches in time over all ranks, not the
/// first ranks' ones.
#[test]
fn search_keeps_the_earliest_matches() {
    use gui::app::{search, MAX_FOUND};
    use trace_lod::{Lod, RawCall};
    let calls = |from: i64| {
        (0..8_000i64)
            .map(|i| RawCall { t_start: from + i * 100, t_end: from + i * 100 + 50, name: 0, flags: 0, bytes: 0 })
            .collect::<Vec<_>>()
    };
    // Rank 2 runs first, then rank 1, then rank 0.
    let lod =
        Lod::from_calls(vec!["MPI_Send".into()], vec![(0, calls(2_000_000)), (1, calls(1_000_000)), (2, calls(0))]);
    let trace = Trace::new(lod);
    let found = search(&trace, &Filter::parse("send").expect("filter"));
    assert_eq!(found.len(), MAX_FOUND);
    assert!(found.windows(2).all(|w| w[0].t <= w[1].t));
    assert_eq!(found.iter().filter(|f| f.rank == 2).count(), 8_000);
    assert_eq!(found.iter().filter(|f| f.rank == 1).count(), MAX_FOUND - 8_000);
    assert_eq!(found.iter().filter(|f| f.rank == 0).count(), 0);
    assert_eq!(found.last().map(|f| f.t), Some(1_000_000 + (MAX_FOUND as i64 - 8_001) * 100));
    // With a duration bound nothing is found.
    assert!(search(&trace, &Filter::parse("send dur>1us").expect("filter")).is_empty());
}

/// Thousands of ranks on many hosts: the lanes are laid out at once, a
/// frame builds only the visible lanes, and folding a host hides its ranks.
#[test]
fn thousands_of_ranks_on_many_hosts() {
    use trace_lod::{Lod, RawCall};
    let ranks = 4096;
    let calls = |r: i64| {
        (0..20i64)
            .map(|i| RawCall {
                t_start: i * 1000 + r,
                t_end: i * 1000 + r + 500,
                name: (i % 2) as u16,
                flags: 0,
                bytes: 0,
            })
            .collect::<Vec<_>>()
    };
    let mut lod =
        Lod::from_calls(vec!["MPI_Send".into(), "MPI_Recv".into()], (0..ranks).map(|r| (r as i32, calls(r))).collect());
    for r in &mut lod.ranks {
        r.host = Some(format!("node{:03}", r.rank / 32));
    }
    let trace = Trace::new(lod);
    let t = std::time::Instant::now();
    let lanes = Lanes::new(&trace.lod, &Filter::default(), &BTreeSet::new(), 20.0);
    let laid_out = t.elapsed();
    assert_eq!(lanes.rows.len(), 4096 + 128, "a header per host");
    assert!(laid_out.as_millis() < 500, "laid out in {laid_out:?}");
    assert_eq!(lanes.rows[0], gui::lanes::Row::Host { host: "node000".into(), ranks: 32, folded: false });
    // A frame: only the lanes in the 500 px window (about 25 rows) get bars.
    let g = scene_geometry(&trace, TimeView::new(0.0, 25_000.0), &Filter::default(), None);
    assert!(g.rects > 0 && g.rects <= 25 * 20, "{} rects", g.rects);
    let folded: BTreeSet<String> = ["node000".to_string(), "node127".to_string()].into();
    let f = Lanes::new(&trace.lod, &Filter::default(), &folded, 20.0);
    assert_eq!(f.rows.len(), 4096 + 128 - 64);
    assert_eq!(f.centre_of(0), None, "folded away");
    assert!(f.centre_of(32).is_some());
}

/// Many messages in the range but few between the visible lanes: those
/// are drawn (the others are not even looked at when there are far too many).
#[test]
fn arrows_between_visible_lanes_among_many_messages() {
    let mut t = analyzers::synth::SynthTrace::new(4);
    // 25 000 messages from rank 2 to 3, and 3 from rank 0 to 1, within 100 us.
    let n = 25_000i64;
    for i in 0..n {
        let at = 10_000 + i * 4;
        t.send(2, 3, 1, 8, at, at + 2, 0x100);
        t.recv(3, 2, 1, 8, at, at + 3, 0x110);
    }
    for i in 0..3 {
        let at = 20_000 + i * 10_000;
        t.send(0, 1, 2, 64, at, at + 100, 0x120);
        t.recv(1, 0, 2, 64, at, at + 200, 0x130);
    }
    t.finalize(200_000);
    let dir = common::temp_dir("many-arrows");
    t.write(&dir).expect("write trace");
    let trace = Trace::open(&dir).expect("open");
    assert_eq!(trace.analysed.as_ref().expect("analyses").messages.len(), n as usize + 3);
    let view = TimeView::new(0.0, 210_000.0);
    // Ranks 2 and 3 filtered out: the three arrows of 0 -> 1 are drawn.
    let g = scene_geometry(&trace, view, &Filter::parse("rank=0-1").expect("filter"), None);
    assert_eq!((g.arrows.len(), g.arrows_skipped), (3, 0));
    // All lanes: at most MAX_ARROWS drawn, the rest counted.
    let g = scene_geometry(&trace, view, &Filter::default(), None);
    assert_eq!(g.arrows.len(), timeline::MAX_ARROWS);
    assert_eq!(g.arrows.len() + g.arrows_skipped, n as usize + 3);
}
