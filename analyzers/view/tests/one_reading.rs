//! Opening a trace for a viewer reads each rank's events file once, for
//! the level of detail and the analyses alike, and the analyses come out
//! as when the analyzers read the trace on their own.
//!
//! One test in this file: it counts the events files the process opens.

use std::time::Duration;

use analyzers::report::{analyze, Analyses};
use trace_format::stream::files_opened;
use trace_view::{load_now, Loaded, Loader, MessageView};

const RANKS: usize = 4;

fn same_analyses(viewer: &Analyses, alone: &Analyses) {
    assert_eq!(viewer.report(), alone.report());
    let calls = |a: &Analyses| a.model.ranks.iter().map(|r| r.calls.len()).collect::<Vec<_>>();
    assert_eq!(calls(viewer), calls(alone));
    let (v, a) = (MessageView::new(viewer), MessageView::new(alone));
    assert!(!a.msgs.is_empty());
    assert_eq!(v.msgs, a.msgs);
}

#[test]
fn each_rank_is_read_once_and_the_panels_get_the_same_analyses() {
    let dir = std::env::temp_dir().join(format!("trace-view-one-reading-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    analyzers::synth::write_stencil(&dir, &analyzers::synth::StencilParams::for_events(RANKS, 200_000)).unwrap();

    let before = files_opened();
    let alone = analyze(analyzers::load(&dir).unwrap());
    assert_eq!(files_opened() - before, RANKS as u64, "the analyzers alone read each rank once");

    // No cache yet: the level of detail is built, its batches feed the model.
    let before = files_opened();
    let loader = Loader::start(&dir, |an, _| an);
    let Some(Loaded::Lod(Ok(lod), _)) = loader.wait(Duration::from_secs(600)) else { panic!("no level of detail") };
    assert!(!lod.cached);
    let Some(Loaded::Analyses(Ok(an))) = loader.wait(Duration::from_secs(600)) else { panic!("no analyses") };
    assert_eq!(files_opened() - before, RANKS as u64, "one reading of each rank for both");
    same_analyses(&an, &alone);

    // The first level of detail from its cache; the calls and the model
    // from one more reading of each rank.
    let before = files_opened();
    let opened = load_now(&dir).unwrap();
    assert!(opened.lod.cached);
    assert!(opened.lod.ranks.iter().all(|r| !r.data.is_coarse()));
    assert_eq!(files_opened() - before, RANKS as u64);
    same_analyses(&opened.analyses.unwrap().0, &alone);

    // Built again (the cache removed) by the synchronous open.
    std::fs::remove_dir_all(dir.join(trace_lod::CACHE_DIR)).unwrap();
    let before = files_opened();
    let opened = load_now(&dir).unwrap();
    assert!(!opened.lod.cached);
    assert_eq!(files_opened() - before, RANKS as u64);
    same_analyses(&opened.analyses.unwrap().0, &alone);

    let _ = std::fs::remove_dir_all(&dir);
}
