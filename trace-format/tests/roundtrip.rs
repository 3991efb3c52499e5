//! Journals written with the writer API, converted, read back; damaged
//! files are reported by name and the rest stays readable.

use std::path::{Path, PathBuf};

use trace_format::events::call_id;
use trace_format::journal::{ClockKind, JournalHeader, JournalWriter};
use trace_format::record::{flags, head, Kind, Record};
use trace_format::side::{CommInfo, ProcessInfo, SideEntry, SideWriter, SyncPoint};
use trace_format::{layout, Completeness, Trace};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tf-roundtrip-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join(layout::JOURNAL_DIR)).unwrap();
    d
}

/// Writes rank `rank` of a 2-rank job: `n` sends to the other rank, then
/// (if `finalize`) a finalized side file.
fn write_rank(d: &Path, rank: i32, n: usize, finalize: bool) {
    let mut side = SideWriter::open(&layout::side(d, rank)).unwrap();
    let process = ProcessInfo { rank, size: 2, host: "h".into(), mpi_library: "Test MPI".into(), ..Default::default() };
    side.write(&SideEntry::Process(process)).unwrap();
    side.write(&SideEntry::Comm(CommInfo {
        slot: 0,
        id: 0,
        call: "predefined".into(),
        members: vec![0, 1],
        ..Default::default()
    }))
    .unwrap();
    side.write(&SideEntry::Clock { ticks: 1000, ns: 500 }).unwrap();
    side.write(&SideEntry::Clock { ticks: 3000, ns: 1500 }).unwrap();
    side.write(&SideEntry::Sync {
        phase: "init".into(),
        point: SyncPoint { local_ns: 0, offset_ns: 100 * rank as i64, rtt_ns: 1 },
    })
    .unwrap();
    let header = JournalHeader { clock: ClockKind::Tsc, pid: 1, thread: 0, rank, table_len: 0 };
    let mut j = JournalWriter::create(&layout::journal(d, rank, 0), header).unwrap();
    let send = call_id("MPI_Send").unwrap();
    for i in 0..n {
        j.append(&Record {
            head: head(send, Kind::Call, flags::DONE),
            t_enter: 1000 + 10 * i as u64,
            t_exit: 1004 + 10 * i as u64,
            comm: 0,
            peer: 1 - rank,
            tag: 3,
            bytes: 8,
            seq: i as i64 + 1,
            ..Default::default()
        })
        .unwrap();
    }
    if finalize {
        side.write(&SideEntry::Finalized).unwrap();
    }
}

#[test]
fn convert_and_read_back() {
    let d = dir("ok");
    write_rank(&d, 0, 100_000, true);
    write_rank(&d, 1, 10, false);
    // Before conversion: journals read directly.
    let t = Trace::open(&d).unwrap();
    assert_eq!(t.rank_events(0).len(), 100_000);
    assert_eq!(t.ranks[&0].completeness, Completeness::Complete);
    assert!(matches!(t.ranks[&1].completeness, Completeness::Partial { .. }));
    let fin = trace_format::finish_dir(&d, &["mpirun".to_string()], false).unwrap();
    assert_eq!(fin.converted.len(), 2);
    assert_eq!(fin.meta.ranks, 2);
    let t = Trace::open(&d).unwrap();
    assert_eq!(t.meta.launch_command, vec!["mpirun"]);
    let e = &t.rank_events(0)[1];
    // Ticks 1010..1014 at 0.5 ns per tick from (1000, 500): 505..507 ns,
    // shifted by rank 0's offset 0.
    assert_eq!((e.t_start, e.t_end, e.t_local), (505, Some(507), 505));
    let e1 = &t.rank_events(1)[0];
    assert_eq!((e1.t_start, e1.t_local), (600, 500), "rank 1 offset 100 ns");
    assert_eq!((&*e.call, e.peer, e.tag, e.seq, e.comm), ("MPI_Send", Some(1), Some(3), Some(2), Some(0)));
    assert!(!d.join(layout::JOURNAL_DIR).exists(), "the emptied journal folder is removed");
    // Parquet roughly: far below 8 bytes per event for regular traffic.
    let size = std::fs::metadata(layout::events(&d, 0)).unwrap().len();
    assert!(size < 100_000 * 4, "{size} bytes for 100000 events");
}

#[test]
fn damaged_files_are_reported_and_the_rest_read() {
    let d = dir("damaged");
    write_rank(&d, 0, 50, true);
    write_rank(&d, 1, 50, true);
    trace_format::finish_dir(&d, &[], false).unwrap();
    // Cut rank 1's events file in half.
    let p = layout::events(&d, 1);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let t = Trace::open(&d).unwrap();
    assert_eq!(t.rank_events(0).len(), 50);
    assert!(t.problems.iter().any(|p| p.contains("rank-00001.parquet")), "{:?}", t.problems);
    assert_eq!(t.ranks[&1].completeness, Completeness::Missing);

    // A journal with garbage after its records, and a truncated one.
    let d = dir("journal");
    write_rank(&d, 0, 20, false);
    write_rank(&d, 1, 20, false);
    let j0 = layout::journal(&d, 0, 0);
    let mut b = std::fs::read(&j0).unwrap();
    b[96 * 30] = 0xff; // a record head after the free slot at 21
    std::fs::write(&j0, &b).unwrap();
    let j1 = layout::journal(&d, 1, 0);
    let b = std::fs::read(&j1).unwrap();
    std::fs::write(&j1, &b[..96 * 11 + 40]).unwrap();
    let t = Trace::open(&d).unwrap();
    assert_eq!(t.rank_events(0).len(), 20);
    assert_eq!(t.rank_events(1).len(), 10);
    assert!(t.problems.iter().any(|p| p.contains("rank-00000.t0.journal") && p.contains("Hole")), "{:?}", t.problems);
    assert!(
        t.problems.iter().any(|p| p.contains("rank-00001.t0.journal") && p.contains("Truncated")),
        "{:?}",
        t.problems
    );
}

/// Events files of schema 1 (a `t_local` column instead of `clock_offset`)
/// still read back the same events.
#[test]
fn schema_1_files_read_back() {
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{Field, Schema};
    use std::sync::Arc;
    let d = dir("schema1");
    write_rank(&d, 1, 30, true);
    trace_format::finish_dir(&d, &[], false).unwrap();
    let path = layout::events(&d, 1);
    let (events, meta) = trace_format::table::read_events(&path).unwrap();
    assert_eq!(events[0].t_start - events[0].t_local, 100);
    // Rewrite the file as schema 1 wrote it.
    let batch = trace_format::table::events_batch(&events).unwrap();
    let i = batch.schema().index_of("clock_offset").unwrap();
    let mut fields: Vec<Field> = batch.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    fields[i] = Field::new("t_local", fields[i].data_type().clone(), false);
    let mut cols = batch.columns().to_vec();
    cols[i] = Arc::new(Int64Array::from_iter_values(events.iter().map(|e| e.t_local)));
    let old = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
    let file = std::fs::File::create(&path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, old.schema(), None).unwrap();
    w.write(&old).unwrap();
    w.close().unwrap();
    let (again, _) = trace_format::table::read_events(&path).unwrap();
    assert_eq!(again, events);
    assert!(meta.is_some());
}
