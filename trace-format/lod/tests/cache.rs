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

/// Modification time and inode of a file (a rewrite changes one of them).
fn identity(p: &Path) -> (std::time::SystemTime, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).unwrap();
    (m.modified().unwrap(), m.ino())
}

#[test]
fn builds_then_opens_from_cache() {
    let dir = tmpdir("cache");
    write_trace(&dir);
    assert_eq!(Lod::open_cached(&dir).err().as_deref(), Some("no cache"));
    let p = Progress::default();
    let a = Lod::open(&dir, &p).unwrap();
    assert!(!a.cached);
    assert_eq!(a.cache_note, None, "{:?}", a.cache_note);
    assert_eq!(a.ranks.len(), 3);
    assert_eq!(a.calls(), 3 * 102, "completions are not calls");
    assert_eq!(a.ranks[1].host.as_deref(), Some("node0"));
    assert_eq!(a.ranks[0].state, RankState::Complete);
    assert_eq!(p.fraction(), 1.0);
    assert_eq!(a.cache_dir.as_deref(), Some(dir.join("lod").as_path()));
    let file = dir.join("lod/rank-00002.lod");
    let before = identity(&file);
    // The cache: coarse levels only, a fraction of the events file.
    let b = Lod::open_cached(&dir).unwrap();
    assert!(b.cached);
    assert!(b.ranks.iter().all(|r| r.data.is_mapped() && r.data.is_coarse() && r.data.is_empty()));
    assert_eq!(b.calls(), 3 * 102);
    assert_eq!(b.span(), (0, 201_000));
    assert_eq!(b.ranks[1].host.as_deref(), Some("node0"));
    assert_eq!(b.ranks[0].state, RankState::Complete);
    // The whole trace in one column: the calls' count and time (Init,
    // 100 Sends of 400 ns, Finalize).
    let mut y = Vec::new();
    for r in 0..3 {
        b.ranks[r].data.cells(0, 201_000, 1, &mut y);
        assert_eq!((y[0].count, y[0].busy), (102, 42_000), "rank {r}");
        // The coarsest level's dominant call, named as the trace names it.
        assert_eq!(b.name(y[0].dominant.unwrap()), "MPI_Send");
    }
    // Opening again reads the trace for the calls but leaves the cache be.
    let c = Lod::open(&dir, &Progress::default()).unwrap();
    assert_eq!(c.cache_note, None);
    assert_eq!(c.calls(), 3 * 102);
    assert_eq!(identity(&file), before, "the cache was rewritten");

    // A changed trace: the cache is stale, found so and rebuilt.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_trace(&dir);
    let why = Lod::open_cached(&dir).unwrap_err();
    assert!(why.contains("stale") && why.contains("rank-00000.parquet changed"), "{why}");
    let d = Lod::open(&dir, &Progress::default()).unwrap();
    let note = d.cache_note.as_deref().unwrap_or("");
    assert!(note.starts_with("level-of-detail cache rebuilt: ") && note.contains("stale"), "{note}");
    assert!(Lod::open_cached(&dir).is_ok());

    // A damaged cache file is found, named and rebuilt.
    std::fs::write(dir.join("lod/rank-00001.lod"), b"garbage").unwrap();
    let why = Lod::open_cached(&dir).unwrap_err();
    assert!(why.contains("rank-00001.lod"), "{why}");
    let e = Lod::open(&dir, &Progress::default()).unwrap();
    assert!(e.cache_note.as_deref().unwrap_or("").contains("rank-00001.lod"), "{:?}", e.cache_note);
    assert!(Lod::open_cached(&dir).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A trace directory that cannot be written: the cache goes to the user's
/// cache directory, keyed by the trace directory, and is used from there.
#[test]
fn read_only_trace_caches_in_the_user_cache_dir() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmpdir("readonly");
    let trace = dir.join("trace");
    std::fs::create_dir_all(&trace).unwrap();
    write_trace(&trace);
    let home = dir.join("xdg");
    std::fs::set_permissions(&trace, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::create_dir(trace.join("probe")).is_ok() {
        // Root writes anyway: nothing to test.
        std::fs::set_permissions(&trace, std::fs::Permissions::from_mode(0o755)).unwrap();
        eprintln!("skipped: the directory stays writable (running as root)");
        return;
    }
    // SAFETY: this test's process sets XDG_CACHE_HOME before any thread of
    // it reads the environment (the other tests do not read it).
    unsafe { std::env::set_var("XDG_CACHE_HOME", &home) };
    let user = trace_lod::coarse::user_cache_dir(&trace).unwrap();
    assert!(user.starts_with(home.join("mpitrace")), "{}", user.display());
    let a = Lod::open(&trace, &Progress::default()).unwrap();
    assert_eq!(a.cache_note, None, "{:?}", a.cache_note);
    assert_eq!(a.cache_dir.as_deref(), Some(user.as_path()));
    assert!(!trace.join("lod").exists());
    let b = Lod::open_cached(&trace).unwrap();
    assert_eq!(b.cache_dir.as_deref(), Some(user.as_path()));
    assert_eq!(b.calls(), 3 * 102);
    std::fs::set_permissions(&trace, std::fs::Permissions::from_mode(0o755)).unwrap();
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
    // Journals are not a converted trace: no cache is expected of them.
    assert_eq!(lod.cache_note, None);
    assert!(Lod::open_cached(&dir).unwrap_err().contains("journals not converted"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Damage inside a rank's cache file that its counts and size do not
/// show (they still agree) is found when the cache is opened, and the
/// cache rebuilt: buckets out of order, a name past the names, a coarse
/// bucket that disagrees with the finer ones, a span that is not the
/// buckets'.
#[test]
fn damaged_cache_contents_are_found_and_rebuilt() {
    let dir = tmpdir("contents");
    // Enough calls for several levels.
    std::fs::create_dir_all(dir.join(layout::EVENTS_DIR)).unwrap();
    let evs: Vec<Event> = (0..20_000).map(|i| call(0, "MPI_Send", i * 1000, i * 1000 + 400, Some(8))).collect();
    trace_format::table::write_events(&layout::events(&dir, 0), &evs, &rank_meta(0, 1)).unwrap();
    Meta::from_ranks(vec![rank_meta(0, 1)], "test").write(&dir.join(layout::META)).unwrap();
    Lod::open(&dir, &Progress::default()).unwrap();
    let file = dir.join("lod/rank-00000.lod");
    let clean = std::fs::read(&file).unwrap();
    assert!(Lod::open_cached(&dir).is_ok());
    let word = |at: usize, len: usize| {
        u64::from_le_bytes(clean[at..at + 8].try_into().unwrap()) & (u64::MAX >> (64 - 8 * len))
    };
    // The layout of `trace_lod::pyramid::Header` (72 bytes), then a bucket
    // count per level and the levels (40-byte buckets: key, busy, bytes,
    // max_end, count, dominant, flags).
    let levels = word(20, 4) as usize;
    assert!(levels >= 3, "{levels} levels");
    let level0 = 72 + 8 * levels;
    let level1 = level0 + 40 * word(72, 8) as usize;
    let damages: [(&str, usize, Vec<u8>); 4] = [
        // Bucket 1 of level 0 has the key of bucket 0.
        ("out of order", level0 + 40, word(level0, 8).to_le_bytes().into()),
        // The first bucket's dominant call is past the names.
        ("names no call", level0 + 36, u16::MAX.to_le_bytes().into()),
        // The first bucket of level 1 counts a call more than those below.
        ("level 1", level1 + 32, (word(level1 + 32, 4) as u32 + 1).to_le_bytes().into()),
        // The header's end of the calls is not theirs.
        ("header says", 48, (word(48, 8) + 5).to_le_bytes().into()),
    ];
    for (what, at, bytes) in &damages {
        let mut b = clean.clone();
        b[*at..*at + bytes.len()].copy_from_slice(bytes);
        assert_ne!(b, clean);
        std::fs::write(&file, &b).unwrap();
        let why = Lod::open_cached(&dir).unwrap_err();
        assert!(why.contains(&file.display().to_string()) && why.contains(what), "{what}: {why}");
        let lod = Lod::open(&dir, &Progress::default()).unwrap();
        let note = lod.cache_note.as_deref().unwrap_or("");
        assert!(note.contains(what), "{what}: {note}");
        assert_eq!(lod.calls(), 20_000);
        // Rebuilt and written again: the next open uses it.
        assert_eq!(std::fs::read(&file).unwrap(), clean, "{what}");
        assert!(Lod::open_cached(&dir).is_ok(), "{what}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
