//! A trace converted from journals has its level-of-detail cache (written
//! by the conversion), and a viewer opens it from there: the first level
//! of detail is the cache's coarse levels, the calls follow from the trace,
//! and the cache is not rewritten.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use analyzers::synth::{stencil_rank, StencilParams, SynthTrace};
use trace_view::{Loaded, Loader};

const RANKS: usize = 3;

/// Modification time (ns) and inode of a file: a rewrite changes one.
fn identity(p: &Path) -> (i64, i64, u64) {
    let m = std::fs::metadata(p).unwrap();
    (m.mtime(), m.mtime_nsec(), m.ino())
}

#[test]
fn a_converted_trace_opens_from_the_cache_written_at_conversion() {
    let dir = std::env::temp_dir().join(format!("trace-view-converted-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let p = StencilParams::for_events(RANKS, 60_000);
    let mut t = SynthTrace::new(RANKS);
    t.ranks = (0..RANKS).map(|r| stencil_rank(&p, r)).collect();
    t.write_journals(&dir, true).unwrap();
    // What `mpitrace record` does after the job (the shim does the same per
    // rank at MPI_Finalize).
    let fin = trace_lod::convert::finish_dir(&dir, &[], false).unwrap();
    assert!(fin.problems.is_empty(), "{:?}", fin.problems);
    let files: Vec<_> = (0..RANKS).map(|r| dir.join(format!("lod/rank-{r:05}.lod"))).collect();
    let before: Vec<_> = files.iter().map(|f| identity(f)).collect();
    // At most a fifth of the events files, whatever the trace.
    for (r, file) in files.iter().enumerate() {
        let cache = std::fs::metadata(file).unwrap().len();
        let events = std::fs::metadata(trace_format::layout::events(&dir, r as i32)).unwrap().len();
        assert!(cache * 5 <= events, "rank {r}: cache {cache} bytes for {events}");
    }

    let loader = Loader::start(&dir, |an, _| an);
    let Some(Loaded::Lod(Ok(coarse), _)) = loader.wait(Duration::from_secs(600)) else { panic!("no level of detail") };
    assert!(coarse.cached, "{:?}", coarse.cache_note);
    assert!(coarse.ranks.iter().all(|r| r.data.is_coarse()));
    let Some(Loaded::Detail(Ok(detail))) = loader.wait(Duration::from_secs(600)) else { panic!("no detail") };
    let Some(Loaded::Analyses(Ok(an))) = loader.wait(Duration::from_secs(600)) else { panic!("no analyses") };
    // The cache counts every call of each rank, and names its calls as
    // the trace does.
    assert_eq!(coarse.calls(), detail.calls());
    assert_eq!(detail.names[..coarse.names.len()], coarse.names[..]);
    for (c, d) in coarse.ranks.iter().zip(&detail.ranks) {
        assert_eq!(c.data.n_calls(), d.data.len() as u64);
        assert_eq!(c.data.span(), d.data.span());
        assert_eq!(c.state, d.state);
        assert_eq!(c.host, d.host);
        let (t0, t1) = d.data.span().unwrap();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        c.data.cells(t0, t1 + 1, 1, &mut x);
        d.data.cells(t0, t1 + 1, 1, &mut y);
        assert_eq!(x[0].count as usize, d.data.len());
        assert_eq!(x[0].dominant.map(|n| coarse.name(n)), y[0].dominant.map(|n| detail.name(n)));
    }
    assert_eq!(an.model.ranks.len(), RANKS);
    let after: Vec<_> = files.iter().map(|f| identity(f)).collect();
    assert_eq!(before, after, "the cache was rewritten");
    let _ = std::fs::remove_dir_all(&dir);
}
