//! Building from a trace directory, the cache, damaged inputs.

use std::path::Path;
use std::sync::Arc;

use trace_format::journal::{ClockKind, JournalHeader, JournalWriter};
use trace_format::meta::RankMeta;
use trace_format::record::{flags, head, Kind, Record};
use trace_format::{layout, Event, Meta};
use trace_lod::{Lod, Progress, RankState};

fn call(rank: i32, name: &str, t0: i64, t1: i64, bytes: Option<i64>) -> Event {
    Event {
        rank,
        thread: 0,
        kind: Kind::Call,
        call: Arc::from(name),
        t_start: t0,
        t_end: Some(t1),
        t_local: t0,
        rc: Some(0),
        site: None,
        comm: Some(0),
        peer: None,
        tag: None,
        datatype: None,
        count: None,
        bytes,
        seq: None,
        request: None,
        root: None,
        op: None,
        aux: None,
        recv_bytes: None,
        recv_datatype: None,
        new_comm: None,
        path: None,
        counters: None,
        flags: flags::DONE,
    }
}

fn rank_meta(rank: i32, n: i32) -> RankMeta {
    let mut m = RankMeta { finalized: true, ..Default::default() };
    m.process.rank = rank;
    m.process.size = n;
    m.process.host = format!("node{}", rank / 2);
    m
}

/// A 3-rank trace: each rank calls Init, 100 Sends, Finalize.
fn write_trace(dir: &Path) {
    std::fs::create_dir_all(dir.join(layout::EVENTS_DIR)).unwrap();
    for r in 0..3 {
        let mut evs = vec![call(r, "MPI_Init", 0, 1000, None)];
        for i in 0..100 {
            let t = 2000 + i * 1000 + r as i64 * 10;
            evs.push(call(r, "MPI_Send", t, t + 400, Some(64)));
            let mut c = call(r, "MPI_Isend", t + 500, t + 500, Some(8));
            c.kind = Kind::Completion;
            evs.push(c);
        }
        evs.push(call(r, "MPI_Finalize", 200_000, 201_000, None));
        trace_format::table::write_events(&layout::events(dir, r), &evs, &rank_meta(r, 3)).unwrap();
    }
    Meta::from_ranks((0..3).map(|r| rank_meta(r, 3)).collect(), "test").write(&dir.join(layout::META)).unwrap();
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("trace-lod-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn builds_then_opens_from_cache() {
    let dir = tmpdir("cache");
    write_trace(&dir);
    let p = Progress::default();
    let a = Lod::open(&dir, &p).unwrap();
    assert!(!a.cached);
    assert_eq!(a.cache_note, None, "{:?}", a.cache_note);
    assert_eq!(a.ranks.len(), 3);
    assert_eq!(a.calls(), 3 * 102, "completions are not calls");
    assert_eq!(a.ranks[1].host.as_deref(), Some("node0"));
    assert_eq!(a.ranks[0].state, RankState::Complete);
    assert_eq!(p.fraction(), 1.0);
    assert!(dir.join("lod/index.json").exists() && dir.join("lod/rank-00002.lod").exists());
    let send = a.name_id("MPI_Send").unwrap();
    let b = Lod::open(&dir, &Progress::default()).unwrap();
    assert!(b.cached);
    assert!(b.ranks.iter().all(|r| r.data.is_mapped()));
    assert_eq!(b.span(), (0, 201_000));
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for r in 0..3 {
        a.ranks[r].data.cells(0, 201_000, 37, &mut x);
        b.ranks[r].data.cells(0, 201_000, 37, &mut y);
        assert_eq!(x, y);
    }
    assert_eq!(b.ranks[0].data.call(1).name, send);
    assert_eq!(b.ranks[0].data.level(0).iter().map(|l| l.bytes).sum::<i64>(), 6400);

    // A changed trace is rebuilt.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_trace(&dir);
    let c = Lod::open(&dir, &Progress::default()).unwrap();
    assert!(!c.cached);
    assert!(c.cache_note.as_deref().unwrap_or("").contains("changed"), "{:?}", c.cache_note);

    // A damaged cache file is rebuilt.
    std::fs::write(dir.join("lod/rank-00001.lod"), b"garbage").unwrap();
    let d = Lod::open(&dir, &Progress::default()).unwrap();
    assert!(!d.cached);
    assert!(d.cache_note.as_deref().unwrap_or("").contains("rank-00001.lod"), "{:?}", d.cache_note);
    assert!(Lod::open(&dir, &Progress::default()).unwrap().cached);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_and_missing_ranks() {
    let dir = tmpdir("damaged");
    write_trace(&dir);
    // Rank 1's file is garbage, rank 2's is gone; meta.json says 3 ranks.
    std::fs::write(layout::events(&dir, 1), b"PAR1 not really").unwrap();
    std::fs::remove_file(layout::events(&dir, 2)).unwrap();
    let lod = Lod::open(&dir, &Progress::default()).unwrap();
    assert_eq!(lod.ranks.len(), 3);
    assert_eq!(lod.ranks[0].data.len(), 102);
    assert!(lod.ranks[1].data.is_empty() && lod.ranks[2].data.is_empty());
    assert_eq!(lod.ranks[2].state, RankState::Missing);
    let all = lod.problems.join("\n");
    assert!(all.contains("rank-00001.parquet"), "{all}");
    assert!(all.contains("rank 2: no events file"), "{all}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn not_a_trace() {
    let dir = tmpdir("empty");
    assert!(matches!(Lod::open(&dir, &Progress::default()), Err(trace_lod::Error::NotATrace(_))));
    assert!(matches!(Lod::open(&dir.join("nope"), &Progress::default()), Err(trace_lod::Error::NoDir(_))));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn journals_of_a_crashed_run() {
    let dir = tmpdir("journal");
    std::fs::create_dir_all(dir.join(layout::JOURNAL_DIR)).unwrap();
    let names = trace_format::events::call_names();
    let id = |n: &str| names.iter().position(|x| *x == n).unwrap() as u16;
    let hdr =
        JournalHeader { clock: ClockKind::MonotonicNs, pid: 1, thread: 0, rank: 0, table_len: names.len() as u32 };
    let mut w = JournalWriter::create(&layout::journal(&dir, 0, 0), hdr).unwrap();
    let rec = |call: &str, t0: u64, t1: u64, done: bool| Record {
        head: head(id(call), Kind::Call, if done { flags::DONE } else { 0 }),
        t_enter: t0,
        t_exit: t1,
        ..Default::default()
    };
    w.append(&rec("MPI_Init", 100, 200, true)).unwrap();
    w.append(&rec("MPI_Barrier", 300, 400, true)).unwrap();
    w.append(&rec("MPI_Recv", 500, 0, false)).unwrap();
    drop(w);
    let lod = Lod::open(&dir, &Progress::default()).unwrap();
    assert_eq!(lod.ranks.len(), 1);
    let r = &lod.ranks[0];
    assert!(matches!(r.state, RankState::Partial(_)), "{:?}", r.state);
    assert_eq!(r.data.len(), 3);
    let last = r.data.call(2);
    assert_eq!(lod.name(last.name), "MPI_Recv");
    assert_ne!(last.flags & trace_lod::flags::UNFINISHED, 0);
    assert!(lod.problems.iter().any(|p| p.contains("did not finalize")), "{:?}", lod.problems);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Damage inside a rank's cache file that its counts and size do not
/// show (they still agree) is found when the cache is opened: the cache
/// is rebuilt, the note names the file, and the rank's calls are those of
/// a fresh build. Before the cache was validated each of these was mapped
/// and drawn: calls out of order, a name past the names, buckets that
/// disagree with their calls, a span that is not the calls'.
#[test]
fn damaged_cache_contents_are_found_and_rebuilt() {
    let dir = tmpdir("contents");
    write_trace(&dir);
    let fresh = Lod::open(&dir, &Progress::default()).unwrap();
    assert!(!fresh.cached);
    // The same calls (name ids depend on the order ranks were read in),
    // copied: `fresh` maps the file this test damages.
    let calls = |l: &Lod| -> Vec<(i64, i64, String, u16)> {
        let d = &l.ranks[1].data;
        (0..d.len()).map(|i| d.call(i)).map(|c| (c.t_start, c.t_end, l.name(c.name).into(), c.flags)).collect()
    };
    let want = calls(&fresh);
    drop(fresh);
    let file = dir.join("lod/rank-00001.lod");
    let clean = std::fs::read(&file).unwrap();
    let word = |at: usize, len: usize| {
        u64::from_le_bytes(clean[at..at + 8].try_into().unwrap()) & (u64::MAX >> (64 - 8 * len))
    };
    // The layout of `trace_lod::pyramid::Header` (72 bytes), then a bucket
    // count per level, the calls (16 bytes: start, duration, name, flags),
    // the long durations and the levels (40-byte buckets).
    let levels = word(20, 4) as usize;
    let n_events = word(56, 8) as usize;
    let events = 72 + 8 * levels;
    let level0 = events + 16 * n_events + 16 * word(64, 8) as usize;
    assert_eq!(n_events, 102);
    // (what the error says, where, the bytes written there).
    let damages: [(&str, usize, Vec<u8>); 4] = [
        // Call 3 starts before call 2.
        ("not sorted", events + 16 * 3, (word(events + 16 * 2, 8) - 1).to_le_bytes().into()),
        // Call 0's name is past the trace's names.
        ("name", events + 12, u16::MAX.to_le_bytes().into()),
        // The first bucket counts a call more than it has.
        ("level 0", level0 + 32, (word(level0 + 32, 4) as u32 + 1).to_le_bytes().into()),
        // The header's end of the calls is not theirs.
        ("header says", 48, (word(48, 8) + 5).to_le_bytes().into()),
    ];
    for (what, at, bytes) in &damages {
        let mut b = clean.clone();
        b[*at..*at + bytes.len()].copy_from_slice(bytes);
        assert_ne!(b, clean);
        std::fs::write(&file, &b).unwrap();
        let lod = Lod::open(&dir, &Progress::default()).unwrap();
        let note = lod.cache_note.as_deref().unwrap_or("");
        assert!(!lod.cached, "{what}: the damaged cache was used");
        assert!(note.contains(&file.display().to_string()) && note.contains(what), "{what}: {note}");
        assert_eq!(calls(&lod), want, "{what}");
        // Rebuilt and written again: the next open uses it.
        assert_eq!(std::fs::read(&file).unwrap().len(), clean.len(), "{what}");
        assert!(Lod::open(&dir, &Progress::default()).unwrap().cached, "{what}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
