//! The journals of a crashed run open in the viewer: what was recorded up
//! to the crash is drawn, the calls that never returned are marked, and
//! the window says which ranks did not finish.

mod common;

use std::time::Duration;

use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use gui::app::{Pick, Tab};
use gui::GuiApp;
use trace_format::journal::{ClockKind, JournalHeader, JournalWriter};
use trace_format::layout;
use trace_format::record::{flags, head, Kind, Record};

/// Journals of two ranks, no meta.json, no Parquet: rank 0 sends 256 B to
/// rank 1 and dies inside `MPI_Recv`; rank 1 receives them and dies
/// inside `MPI_Barrier`.
fn crashed_run(name: &str) -> std::path::PathBuf {
    let dir = common::temp_dir(name);
    std::fs::create_dir_all(dir.join(layout::JOURNAL_DIR)).expect("journal dir");
    let names = trace_format::events::call_names();
    let id = |n: &str| names.iter().position(|x| *x == n).expect("a call name") as u16;
    let rec = |call: &str, t0: u64, t1: Option<u64>| Record {
        head: head(id(call), Kind::Call, if t1.is_some() { flags::DONE } else { 0 }),
        t_enter: t0,
        t_exit: t1.unwrap_or(0),
        ..Default::default()
    };
    for rank in 0..2 {
        let hdr = JournalHeader {
            clock: ClockKind::MonotonicNs,
            pid: 100 + rank as u32,
            thread: 0,
            rank,
            table_len: names.len() as u32,
        };
        let mut w = JournalWriter::create(&layout::journal(&dir, rank, 0), hdr).expect("journal");
        w.append(&rec("MPI_Init", 100, Some(1_000))).expect("append");
        if rank == 0 {
            w.append(&Record {
                peer: 1,
                tag: 5,
                bytes: 256,
                count: 256,
                comm: 0,
                ..rec("MPI_Send", 2_000, Some(2_400))
            })
            .expect("append");
            w.append(&Record { peer: 1, tag: 6, comm: 0, ..rec("MPI_Recv", 3_000, None) }).expect("append");
        } else {
            w.append(&Record {
                peer: 0,
                tag: 5,
                bytes: 256,
                count: 256,
                comm: 0,
                ..rec("MPI_Recv", 1_800, Some(2_600))
            })
            .expect("append");
            w.append(&Record { comm: 0, ..rec("MPI_Barrier", 4_000, None) }).expect("append");
        }
    }
    dir
}

#[test]
fn journals_of_a_crashed_run_open_and_show_what_was_recorded() {
    let dir = crashed_run("crashed");
    let mut app = GuiApp::open(&dir);
    app.wait_loaded(Duration::from_secs(60));
    app.smooth = false;
    assert!(app.open_error.is_none(), "{:?}", app.open_error);
    let t = app.trace.as_ref().expect("a trace");
    assert_eq!(t.lod.ranks.len(), 2);
    assert_eq!(t.lod.calls(), 6);
    // The calls that never returned are marked and drawn up to the end.
    let r0 = &t.lod.ranks[0].data;
    let last = r0.call(r0.len() - 1);
    assert_eq!(t.lod.name(last.name), "MPI_Recv");
    assert_ne!(last.flags & trace_lod::flags::UNFINISHED, 0);
    let a = t.analysed.as_ref().expect("analyses of the journals");
    assert_eq!(a.messages.len(), 1, "the message sent before the crash is matched");
    let problems = t.problems();
    assert!(problems.iter().any(|p| p.contains("did not finalize")), "{problems:?}");
    // The window opens on the problems.
    assert_eq!(app.tab, Tab::Problems);
    app.pick_call(0, r0.len() - 1);
    let details = app.details(app.picked);
    assert!(details.iter().any(|(k, v)| k == "state" && v == "never returned"), "{details:?}");
    let mut h = Harness::builder()
        .with_size(egui::vec2(1200.0, 700.0))
        .build_ui_state(|ui, app: &mut GuiApp| app.show(ui), app);
    h.run();
    assert!(h.state().crashed.is_none(), "{:?}", h.state().crashed);
    assert!(matches!(h.state().picked, Some(Pick::Call { rank: 0, .. })));
    assert_eq!(h.state().geometry.arrows.len(), 1, "the message's arrow is drawn");
    assert_eq!(h.state().tab, Tab::Details);
    assert!(h.query_by_label("never returned").is_some());
    h.get_by_label("Problems").click();
    h.run();
    assert!(h.query_by_label_contains("2 ranks, 6 calls read").is_some());
    assert!(h.query_all_by_label_contains("did not finalize").next().is_some());
}
