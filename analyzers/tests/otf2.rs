//! The OTF2 export, read back with `otf2-print` (Debian's `otf2-tools`).

use std::path::PathBuf;
use std::process::Command;

use analyzers::otf2::write_otf2;
use analyzers::report::analyze;
use analyzers::synth::SynthTrace;

const MS: i64 = 1_000_000;
const US: i64 = 1_000;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("analyzers-otf2-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `otf2-print ARCHIVE` (it must be installed: the test fails otherwise).
fn otf2_print(anchor: &std::path::Path) -> String {
    let out =
        Command::new("otf2-print").arg(anchor).output().expect("otf2-print (apt install otf2-tools) must be installed");
    assert!(out.status.success(), "otf2-print failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn otf2_archive_reads_back_with_otf2_print() {
    let mut t = SynthTrace::new(3);
    // Rank 0 sends 800 bytes to rank 1 (tag 7), rank 1 sends 64 to rank 2
    // nonblocking (tag 3); a Bcast from root 2; a user region on rank 0.
    t.send(0, 1, 7, 800, 10 * MS, 10 * MS + 10 * US, 0x100);
    t.recv(1, 0, 7, 800, 5 * MS, 10 * MS + 20 * US, 0x200);
    t.isend(1, 2, 3, 64, 11 * MS, 11 * MS + US, 0x110, 5);
    t.wait(1, "MPI_Wait", 11 * MS + 2 * US, 11 * MS + 3 * US, 0x120, &[5], &[]);
    t.recv(2, 1, 3, 64, 11 * MS, 11 * MS + 5 * US, 0x210);
    for r in 0..3 {
        t.coll(r, "MPI_Bcast", 12 * MS, 13 * MS, 0x300, 32, Some(2));
    }
    let mut begin = analyzers::synth::event(0, trace_format::record::Kind::RegionBegin, "solve", 2 * MS, 2 * MS);
    begin.t_end = None;
    let mut end = analyzers::synth::event(0, trace_format::record::Kind::RegionEnd, "solve", 3 * MS, 3 * MS);
    end.t_end = None;
    t.ranks[0].insert(1, begin);
    t.ranks[0].insert(2, end);
    t.finalize(20 * MS);
    let a = analyze(t.model());
    let dir = tmp("small");
    let w = write_otf2(&a.model, &dir, "traces").unwrap();
    assert_eq!((w.locations, w.messages, w.collectives), (3, 2, 3));
    let text = otf2_print(&dir.join("traces.otf2"));
    let lines = |kind: &str| text.lines().filter(|l| l.split_whitespace().next() == Some(kind)).collect::<Vec<_>>();
    // Every call entered and left, plus the region on rank 0.
    let calls: usize = a.model.ranks.iter().map(|r| r.calls.len()).sum();
    assert_eq!(lines("ENTER").len(), calls + 1, "{text}");
    assert_eq!(lines("LEAVE").len(), calls + 1);
    assert_eq!(
        w.events as usize,
        text.lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase())
                && l.split_whitespace().nth(1).is_some_and(|x| x.parse::<u64>().is_ok()))
            .count()
    );
    // The blocking send, and the nonblocking one with its completion in MPI_Wait.
    let sends = lines("MPI_SEND");
    assert_eq!(sends.len(), 1, "{text}");
    assert!(
        sends[0].contains("Receiver: 1") && sends[0].contains("Tag: 7") && sends[0].contains("Length: 800"),
        "{sends:?}"
    );
    let isends = lines("MPI_ISEND");
    assert_eq!(isends.len(), 1, "{text}");
    assert!(
        isends[0].contains("Receiver: 2") && isends[0].contains("Tag: 3") && isends[0].contains("Length: 64"),
        "{isends:?}"
    );
    let done = lines("MPI_ISEND_COMPLETE");
    assert_eq!(done.len(), 1, "{text}");
    // Completed at the end of MPI_Wait (11 ms + 3 us), with the Isend's request.
    assert_eq!(done[0].split_whitespace().nth(2), Some("11003000"), "{done:?}");
    let req = |l: &str| l.rsplit("Request: ").next().map(|x| x.trim().to_string());
    assert_eq!(req(done[0]), req(isends[0]));
    let recvs = lines("MPI_RECV");
    assert!(recvs.iter().any(|l| l.contains("Sender: 0") && l.contains("Length: 800")), "{recvs:?}");
    assert!(recvs.iter().any(|l| l.contains("Sender: 1") && l.contains("Length: 64")), "{recvs:?}");
    let ends = lines("MPI_COLLECTIVE_END");
    assert_eq!(ends.len(), 3);
    assert!(ends.iter().all(|l| l.contains("BCAST") && l.contains("Root: 2")), "{ends:?}");
    assert_eq!(lines("MPI_COLLECTIVE_BEGIN").len(), 3);
    assert!(text.contains("\"solve\""), "user region by name");
    if std::env::var_os("OTF2_TEST_SHOW").is_some() {
        eprintln!("{text}");
    }
    // A second export into the same place is refused, not merged.
    assert!(write_otf2(&a.model, &dir, "traces").is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two threads of rank 0 in MPI at once (`MPI_THREAD_MULTIPLE`), and an
/// Allreduce recorded as the shim records it (no receive size): OTF2 has a
/// location per thread with the calls unclamped and the collective's
/// received bytes; the profile's shares add up; Perfetto has a track per
/// thread.
#[test]
fn threads_are_locations_and_tracks_and_shares_add_up() {
    let mut t = SynthTrace::new(2);
    // Window: 1 us (end of MPI_Init) to 20 ms (MPI_Finalize).
    // Rank 0: thread 0 in MPI_Recv 2..10 ms, thread 1 in MPI_Recv 4..14 ms
    // (overlapping), then both ranks in an Allreduce 15..16 ms.
    t.call(0, "MPI_Recv", 2 * MS, 10 * MS, 0x200);
    t.call(0, "MPI_Recv", 4 * MS, 14 * MS, 0x210).thread = 1;
    for r in 0..2 {
        t.coll(r, "MPI_Allreduce", 15 * MS, 16 * MS, 0x300, 8, None).recv_bytes = None;
    }
    t.finalize(20 * MS);
    let a = analyze(t.model());
    let r0 = &a.profile.ranks[0];
    let window = 20 * MS - 1000;
    // In MPI while any thread is: 2..14 and 15..16 ms.
    assert_eq!(r0.mpi_ns, 13 * MS);
    assert!(r0.mpi_fraction <= 1.0);
    let th: Vec<_> = r0.threads.iter().map(|x| (x.thread, x.calls, x.mpi_ns)).collect();
    assert_eq!(th, [(0, 2, 9 * MS), (1, 1, 10 * MS)]);
    assert!(r0.threads.iter().all(|x| x.mpi_ns + x.compute_ns == window), "{:?}", r0.threads);
    let shares: f64 = a.profile.calls.iter().map(|c| c.mpi_share).sum();
    assert!((shares - 1.0).abs() < 1e-9, "{shares}");
    assert!(a.profile.ranks[1].threads.is_empty());
    // MPI_Init and MPI_Finalize (1 us each on 2 ranks) with their time, not 0 ns.
    let time = |n: &str| a.profile.calls.iter().find(|c| c.name == n).map(|c| (c.count, c.time_ns));
    assert_eq!((time("MPI_Init"), time("MPI_Finalize")), (Some((2, 2000)), Some((2, 2000))));

    let dir = tmp("threads");
    let w = write_otf2(&a.model, &dir, "traces").unwrap();
    assert_eq!(w.locations, 3);
    let text = otf2_print(&dir.join("traces.otf2"));
    // Event lines: KIND LOCATION TIME ...; thread 1 of rank 0 is 2^32.
    let events = |loc: &str| {
        text.lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(loc) && l.starts_with(|c: char| c.is_ascii_uppercase()))
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f[0].to_string(), f[2].parse::<i64>().unwrap())
            })
            .collect::<Vec<_>>()
    };
    let t1 = events("4294967296");
    assert_eq!(
        t1.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["ENTER", "LEAVE"],
        "thread 1's MPI_Recv alone: {text}"
    );
    // Unclamped: it lasts its 10 ms though thread 0 was in MPI_Recv too.
    assert_eq!(t1[1].1 - t1[0].1, 10 * MS, "{text}");
    let t0 = events("0");
    assert_eq!(t0.iter().filter(|(k, _)| k == "ENTER").count(), 4, "Init, Recv, Allreduce, Finalize: {text}");
    let ends: Vec<&str> = text.lines().filter(|l| l.starts_with("MPI_COLLECTIVE_END")).collect();
    assert_eq!(ends.len(), 2, "{text}");
    assert!(ends.iter().all(|l| l.contains("Sent: 8") && l.contains("Received: 8")), "{ends:?}");

    let mut json = Vec::new();
    analyzers::export::write_chrome(&a.model, &a.matching, &Default::default(), &mut json).unwrap();
    let json = String::from_utf8(json).unwrap();
    assert!(json.contains("\"name\":\"thread_name\",\"pid\":0,\"tid\":1,\"args\":{\"name\":\"thread 1\"}"), "{json}");
    let recv_tracks: Vec<&str> = json
        .lines()
        .filter(|l| l.contains("\"name\":\"MPI_Recv\""))
        .map(|l| if l.contains("\"tid\":1,") { "1" } else { "0" })
        .collect();
    assert_eq!(recv_tracks, ["0", "1"]);
}
