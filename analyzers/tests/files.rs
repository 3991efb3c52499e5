//! Traces on disk: Parquet round trip, damaged and missing files.

use std::path::PathBuf;

use analyzers::profile::profile;
use analyzers::report::analyze;
use analyzers::synth::{write_stencil, StencilParams, SynthTrace};

const MS: i64 = 1_000_000;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("analyzers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn small() -> SynthTrace {
    let mut t = SynthTrace::new(3);
    t.send(0, 1, 7, 800, 10 * MS, 10 * MS + 10_000, 0x100);
    t.recv(1, 0, 7, 800, 5 * MS, 10 * MS + 20_000, 0x200);
    for r in 0..3 {
        t.coll(r, "MPI_Allreduce", (r as i64 + 11) * MS, 14 * MS, 0x300, 8, None);
    }
    // Nonblocking: rank 2 receives from any source what ranks 0 and 1 send.
    t.irecv(2, -2, 3, 64, 15 * MS, 15 * MS + 1000, 0x400, 11);
    t.irecv(2, -2, 3, 64, 15 * MS + 2000, 15 * MS + 3000, 0x400, 12);
    t.isend(0, 2, 3, 64, 15 * MS, 15 * MS + 1000, 0x410, 21);
    t.isend(1, 2, 3, 32, 16 * MS, 16 * MS + 1000, 0x410, 22);
    t.wait(0, "MPI_Wait", 17 * MS, 17 * MS + 1000, 0x420, &[21], &[]);
    t.wait(1, "MPI_Wait", 17 * MS, 17 * MS + 1000, 0x420, &[22], &[]);
    t.wait(2, "MPI_Waitall", 15 * MS + 5000, 16 * MS + 5000, 0x430, &[11, 12], &[(11, 0, 3), (12, 1, 3)]);
    t.finalize(20 * MS);
    t
}

#[test]
fn parquet_round_trip_gives_the_same_analysis() {
    let dir = tmp("roundtrip");
    let t = small();
    t.write(&dir).unwrap();
    let m = analyzers::load(&dir).unwrap();
    assert!(m.problems.is_empty(), "{:?}", m.problems);
    assert_eq!(m.rows(), t.ranks.iter().map(|r| r.len() as u64).sum::<u64>());
    // The streamed Parquet loader builds exactly the model of the events.
    let direct = t.model();
    for (x, y) in m.ranks.iter().zip(&direct.ranks) {
        assert_eq!(x.calls.len(), y.calls.len());
        for (cx, cy) in x.calls.iter().zip(&y.calls) {
            assert_eq!(
                (cx.t_start, cx.t_end, cx.flags, m.name(cx.name)),
                (cy.t_start, cy.t_end, cy.flags, direct.name(cy.name))
            );
            assert_eq!(m.sites[cx.site as usize].key, direct.sites[cy.site as usize].key);
        }
        assert_eq!(x.sends, y.sends, "rank {}", x.rank);
        assert_eq!(x.recvs, y.recvs, "rank {}", x.rank);
        assert_eq!(x.colls, y.colls, "rank {}", x.rank);
    }
    assert_eq!(m.ranks[2].recvs.iter().map(|r| (r.peer, r.bytes)).collect::<Vec<_>>(), vec![(0, 64), (1, 64)]);
    let a = analyze(m).report();
    let b = analyze(direct).report();
    assert_eq!(a.messages.matched, 3);
    assert_eq!(a.profile, b.profile);
    assert_eq!(a.wait_states, b.wait_states);
    assert_eq!(a.collectives, b.collectives);
    assert_eq!(a.critical_path, b.critical_path);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn truncated_and_missing_files_are_reported_and_the_rest_analyzed() {
    let dir = tmp("damaged");
    small().write(&dir).unwrap();
    let ev1 = trace_format::layout::events(&dir, 1);
    let bytes = std::fs::read(&ev1).unwrap();
    std::fs::write(&ev1, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::remove_file(trace_format::layout::events(&dir, 2)).unwrap();
    let m = analyzers::load(&dir).unwrap();
    let problems: Vec<String> = m.problems.iter().map(|p| p.to_string()).collect();
    assert!(problems.iter().any(|p| p.contains("rank-00001.parquet")), "{problems:?}");
    assert!(problems.iter().any(|p| p.starts_with("rank 2:") && p.contains("missing")), "{problems:?}");
    assert_eq!(m.ranks.len(), 3);
    // Rank 0: Init, Send, Allreduce, Isend, Wait, Finalize.
    assert_eq!(m.ranks[0].calls.len(), 6);
    assert!(m.ranks[2].calls.is_empty());
    let r = analyze(m).report();
    assert!(!r.trace.complete);
    assert_eq!(r.profile.ranks[0].calls, 6);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_meta_and_empty_directories() {
    let dir = tmp("meta");
    small().write(&dir).unwrap();
    std::fs::write(dir.join("meta.json"), b"{ not json").unwrap();
    let m = analyzers::load(&dir).unwrap();
    assert!(m.problems.iter().any(|p| p.to_string().contains("meta.json")), "{:?}", m.problems);
    assert_eq!(m.ranks.len(), 3);
    std::fs::remove_file(dir.join("meta.json")).unwrap();
    let m = analyzers::load(&dir).unwrap();
    assert!(m.problems.iter().any(|p| p.to_string().contains("meta.json: missing")), "{:?}", m.problems);
    let empty = tmp("empty");
    let e = analyzers::load(&empty).unwrap_err().to_string();
    assert!(e.contains("not a trace directory"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&empty);
}

#[test]
fn synthetic_stencil_has_the_designed_wait_states() {
    let dir = tmp("stencil");
    let p = StencilParams { ranks: 8, steps: 50, allreduce_every: 10, bytes: 4096, collectives: false };
    let rows = write_stencil(&dir, &p).unwrap();
    let m = analyzers::load(&dir).unwrap();
    assert_eq!(m.rows(), rows);
    let a = analyze(m);
    let r = a.report();
    assert_eq!(r.messages.matched, 8 * 50 * 2);
    assert_eq!(r.messages.unmatched_sends + r.messages.unmatched_receives, 0);
    let ls = r.wait_states.get(analyzers::waitstates::PatternKind::LateSender).unwrap();
    // Rank 0 posts late: its neighbours 1 and 7 wait for it most.
    assert!(ls.by_cause[0] > ls.by_cause[3] * 3, "{:?}", ls.by_cause);
    // The last rank computes longest: it arrives last at every allreduce.
    assert_eq!(r.collectives.summaries[0].last_rank, 7);
    assert_eq!(r.collectives.summaries[0].instances, 5);
    assert!(profile(&a.model).totals.compute_cv > 0.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sites_in_a_module_that_is_gone_are_named_by_offset_and_reported_once() {
    let dir = tmp("gone-module");
    let mut t = small();
    t.with_modules = true;
    t.write(&dir).unwrap();
    let m = analyzers::load(&dir).unwrap();
    let gone: Vec<String> = m.problems.iter().map(|p| p.to_string()).filter(|p| p.contains("not symbolized")).collect();
    assert_eq!(gone.len(), 1, "{:?}", m.problems);
    assert!(gone[0].contains(analyzers::synth::MODULE), "{gone:?}");
    assert!(m.locations.is_empty());
    let r = analyze(m).report();
    let ls = r.wait_states.get(analyzers::waitstates::PatternKind::LateSender).unwrap();
    assert_eq!(ls.sites[0].site, "app+0x200");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Values at and beyond the limits of the compact model's narrow fields
/// (32-bit durations and sizes, escaped to per-rank tables) come through
/// loading, from memory and from Parquet, exactly.
#[test]
fn values_beyond_the_compact_fields_are_exact() {
    const S: i64 = 1_000_000_000;
    let u32max = u32::MAX as i64;
    let sizes = [0, u32max - 2, u32max - 1, u32max, u32max + 1, 5 << 30, 1 << 40];
    let mut t = SynthTrace::new(2);
    let mut at = 10 * MS;
    for (k, &b) in sizes.iter().enumerate() {
        t.send(0, 1, i32::MAX - k as i32, b, at, at + 1000, 0x100);
        t.recv(1, 0, i32::MAX - k as i32, b, at, at + 2000, 0x200);
        at += MS;
    }
    // Calls lasting just below, at and above 2^32 ns, and one of 10 s
    // whose receiver waits 6 s for a late sender.
    for (k, d) in [u32max - 1, u32max, u32max + 1].into_iter().enumerate() {
        t.call(0, "MPI_Barrier", at, at + d, 0x300 + k as u64);
        at += d;
    }
    t.recv(1, 0, 5, 8, at, at + 10 * S, 0x210);
    t.send(0, 1, 5, 8, at + 6 * S, at + 6 * S + 1000, 0x110);
    t.finalize(at + 11 * S);
    let dir = tmp("limits");
    t.write(&dir).unwrap();
    for m in [t.model(), analyzers::load(&dir).unwrap()] {
        let got: Vec<i64> = m.ranks[1].recvs.iter().map(|p| p.bytes).collect();
        let want: Vec<i64> = sizes.iter().copied().chain([8]).collect();
        assert_eq!(got, want);
        assert_eq!(m.ranks[0].sends.iter().map(|p| p.tag).take(2).collect::<Vec<_>>(), vec![i32::MAX, i32::MAX - 1]);
        let d: Vec<i64> =
            m.ranks[0].calls.iter().filter(|c| m.name(c.name) == "MPI_Barrier").map(|c| c.duration()).collect();
        assert_eq!(d, vec![u32max - 1, u32max, u32max + 1]);
        let a = analyze(m);
        assert_eq!(a.matching.summary.matched, sizes.len() as u64 + 1);
        assert_eq!(a.matrix.bytes(0, 1), sizes.iter().sum::<i64>() + 8);
        let barrier = a.profile.calls.iter().find(|c| c.name == "MPI_Barrier").unwrap();
        assert_eq!(barrier.time_ns, 3 * u32max);
        let ls = a.waits.states.get(analyzers::waitstates::PatternKind::LateSender).unwrap();
        assert_eq!(ls.time_ns, 6 * S);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
