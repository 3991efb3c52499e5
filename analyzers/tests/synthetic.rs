//! Exact results on synthetic traces whose answers are known by construction.

use analyzers::collectives::collectives;
use analyzers::critical_path::critical_path;
use analyzers::matching::{correct_clocks, match_messages};
use analyzers::matrix::matrix;
use analyzers::model::Model;
use analyzers::profile::profile;
use analyzers::report::{analyze, document, render_markdown, render_text, Analyses, TextOptions};
use analyzers::synth::{site, SynthTrace};
use analyzers::waitstates::{wait_states, PatternKind};

const MS: i64 = 1_000_000;
const US: i64 = 1_000;

fn run(t: &SynthTrace) -> Analyses {
    analyze(t.model())
}

fn waits(m: &Model) -> analyzers::waitstates::WaitStates {
    let mt = match_messages(m);
    let c = collectives(m);
    wait_states(m, &mt, &c).states
}

#[test]
fn late_sender_of_5ms_at_the_receivers_call_site() {
    let mut t = SynthTrace::new(2);
    t.send(0, 1, 7, 800, 10 * MS, 10 * MS + 10 * US, 0x100);
    t.recv(1, 0, 7, 800, 5 * MS, 10 * MS + 20 * US, 0x200);
    t.finalize(20 * MS);
    let w = waits(&t.model());
    let ls = w.get(PatternKind::LateSender).unwrap();
    assert_eq!(ls.time_ns, 5 * MS);
    assert_eq!(ls.count, 1);
    assert_eq!(ls.by_rank, vec![0, 5 * MS]);
    assert_eq!(ls.by_cause, vec![5 * MS, 0]);
    assert_eq!(ls.sites[0].call, "MPI_Recv");
    assert_eq!(ls.sites[0].site, format!("{:#x}", site(1, 0x200)));
    assert_eq!(w.time(PatternKind::LateReceiver), 0);
    assert_eq!(w.total_ns, 5 * MS);
}

#[test]
fn late_receiver_blocks_a_synchronous_send() {
    let mut t = SynthTrace::new(2);
    t.send(0, 1, 0, 1 << 20, MS, 9 * MS, 0x100);
    t.recv(1, 0, 0, 1 << 20, 8 * MS, 9 * MS, 0x200);
    t.finalize(20 * MS);
    let w = waits(&t.model());
    assert_eq!(w.time(PatternKind::LateReceiver), 7 * MS);
    assert_eq!(w.get(PatternKind::LateReceiver).unwrap().by_rank, vec![7 * MS, 0]);
    assert_eq!(w.time(PatternKind::LateSender), 0);
}

#[test]
fn eager_send_loses_nothing() {
    let mut t = SynthTrace::new(2);
    t.send(0, 1, 0, 8, MS, MS + 2 * US, 0x100);
    t.recv(1, 0, 0, 8, 8 * MS, 8 * MS + US, 0x200);
    t.finalize(20 * MS);
    let w = waits(&t.model());
    assert_eq!(w.total_ns, 0);
}

#[test]
fn waitall_waits_for_the_latest_sender_and_any_source_is_matched() {
    let mut t = SynthTrace::new(3);
    // Rank 1 receives from rank 0 and from ANY_SOURCE (rank 2 in fact).
    t.irecv(1, 0, 5, 64, MS, MS + US, 0x100, 11);
    t.irecv(1, -2, 6, 64, MS + 2 * US, MS + 3 * US, 0x110, 12);
    t.wait(1, "MPI_Waitall", 2 * MS, 12 * MS, 0x120, &[11, 12], &[(12, 2, 6)]);
    t.isend(0, 1, 5, 64, 6 * MS, 6 * MS + US, 0x100, 21);
    t.wait(0, "MPI_Wait", 6 * MS + 2 * US, 6 * MS + 3 * US, 0x130, &[21], &[]);
    t.send(2, 1, 6, 64, 11 * MS, 11 * MS + US, 0x100);
    t.finalize(20 * MS);
    let m = t.model();
    let mt = match_messages(&m);
    assert_eq!(mt.summary.matched, 2);
    assert_eq!(mt.summary.unmatched_sends + mt.summary.unmatched_receives, 0);
    // The ANY_SOURCE receive (rank 1's second) is matched with rank 2's send.
    assert_eq!(mt.recv_to_send[1][1].rank, 2);
    let w = waits(&m);
    let ls = w.get(PatternKind::LateSender).unwrap();
    assert_eq!(ls.time_ns, 9 * MS, "Waitall from 2 ms waits for the send at 11 ms");
    assert_eq!(ls.count, 1);
    assert_eq!(ls.by_cause, vec![0, 0, 9 * MS]);
    assert_eq!(ls.sites[0].call, "MPI_Waitall");
}

fn allreduce_rank3_last() -> SynthTrace {
    let mut t = SynthTrace::new(4);
    for r in 0..4 {
        let arrive = if r == 3 { 40 * MS } else { 10 * MS };
        t.coll(r, "MPI_Allreduce", arrive, 41 * MS, 0x300, 8, None);
    }
    t.finalize(50 * MS);
    t
}

#[test]
fn imbalanced_allreduce_rank3_arrives_last() {
    let t = allreduce_rank3_last();
    let m = t.model();
    let c = collectives(&m);
    assert_eq!(c.instances.len(), 1);
    let i = &c.instances[0];
    assert_eq!((i.n, i.last_rank, i.spread()), (4, 3, 30 * MS));
    assert_eq!(c.report.wait_by_rank, vec![30 * MS, 30 * MS, 30 * MS, 0]);
    let s = &c.report.summaries[0];
    assert_eq!((s.call.as_str(), s.comm.as_str(), s.instances, s.last_rank), ("MPI_Allreduce", "WORLD", 1, 3));
    assert_eq!(s.wait_ns, 90 * MS);
    assert_eq!(s.time_ns, 3 * 31 * MS + MS);
    let w = waits(&m);
    let nxn = w.get(PatternKind::WaitAtNxN).unwrap();
    assert_eq!(nxn.time_ns, 90 * MS);
    assert_eq!(nxn.by_cause, vec![0, 0, 0, 90 * MS]);
    assert_eq!(nxn.sites[0].ranks, 3);
}

#[test]
fn barrier_broadcast_and_reduce_patterns() {
    let mut t = SynthTrace::new(3);
    // Barrier: rank 2 arrives 4 ms late.
    for r in 0..3 {
        t.coll(r, "MPI_Barrier", if r == 2 { 5 * MS } else { MS }, 5 * MS + 10 * US, 0x100, 0, None);
    }
    // Bcast from root 1, which arrives at 9 ms; the others at 6 ms.
    for r in 0..3 {
        t.coll(r, "MPI_Bcast", if r == 1 { 9 * MS } else { 6 * MS }, 9 * MS + 10 * US, 0x110, 64, Some(1));
    }
    // Reduce to root 0, which arrives at 10 ms; the others at 12 and 13 ms.
    for (r, a) in [(0, 10 * MS), (1, 12 * MS), (2, 13 * MS)] {
        t.coll(r, "MPI_Reduce", a, 13 * MS + 10 * US, 0x120, 64, Some(0));
    }
    t.finalize(20 * MS);
    let w = waits(&t.model());
    assert_eq!(w.time(PatternKind::WaitAtBarrier), 8 * MS);
    assert_eq!(w.get(PatternKind::WaitAtBarrier).unwrap().by_cause, vec![0, 0, 8 * MS]);
    assert_eq!(w.time(PatternKind::LateBroadcast), 6 * MS);
    assert_eq!(w.get(PatternKind::LateBroadcast).unwrap().by_rank, vec![3 * MS, 0, 3 * MS]);
    // Early Reduce: the root waits until the first non-root arrives (12 ms).
    assert_eq!(w.time(PatternKind::EarlyReduce), 2 * MS);
    assert_eq!(w.get(PatternKind::EarlyReduce).unwrap().by_cause, vec![0, 2 * MS, 0]);
    assert_eq!(w.time(PatternKind::WaitAtNxN), 0);
}

#[test]
fn ring_matrix_has_the_known_bytes() {
    let mut t = SynthTrace::new(4);
    for r in 0..4 {
        let (to, from) = ((r + 1) % 4, (r + 3) % 4);
        t.send(r, to, 0, 1000 * (r as i64 + 1), MS, MS + US, 0x100);
        t.recv(r, from, 0, 1000 * (from as i64 + 1), 2 * MS, 2 * MS + US, 0x110);
    }
    t.finalize(10 * MS);
    let m = t.model();
    let mx = matrix(&m);
    for r in 0..4 {
        for c in 0..4 {
            let expect = if c == (r + 1) % 4 { 1000 * (r as i64 + 1) } else { 0 };
            assert_eq!(mx.bytes(r, c), expect, "{r}->{c}");
            assert_eq!(mx.messages(r, c), u64::from(expect > 0));
        }
    }
    assert_eq!(match_messages(&m).summary.matched, 4);
}

#[test]
fn clock_violations_are_detected_and_corrected() {
    let mut t = SynthTrace::new(2);
    // Rank 1's clock is 3 ms behind: its receive "ends" before the send starts.
    t.send(0, 1, 0, 8, 8 * MS, 8 * MS + US, 0x100);
    t.recv(1, 0, 0, 8, 4 * MS, 5 * MS, 0x110);
    t.send(1, 0, 1, 8, 6 * MS, 6 * MS + US, 0x120);
    t.recv(0, 1, 1, 8, 9 * MS, 10 * MS, 0x130);
    t.finalize(20 * MS);
    let mut m = t.model();
    let mt = match_messages(&m);
    assert_eq!(mt.summary.clock_violations, 1);
    assert_eq!(mt.summary.max_violation_ns, 3 * MS);
    let c = correct_clocks(&mut m, &mt);
    assert_eq!(c.shift_ns, vec![0, 3 * MS]);
    assert_eq!(c.violations_after, 0);
    assert!(!c.inconsistent);
    assert_eq!(m.ranks[1].calls.at(1).t_end, 8 * MS);
    assert_eq!(m.clock_shift, vec![0, 3 * MS]);
}

#[test]
fn unmatched_messages_are_listed() {
    let mut t = SynthTrace::new(2);
    t.send(0, 1, 3, 8, MS, MS + US, 0x100);
    t.irecv(1, 0, 4, 8, MS, MS + US, 0x110, 5);
    t.finalize(10 * MS);
    let mt = match_messages(&t.model());
    assert_eq!((mt.summary.matched, mt.summary.unmatched_sends, mt.summary.unmatched_receives), (0, 1, 1));
    let u = &mt.summary.unmatched;
    assert_eq!((u[0].side.as_str(), u[0].rank, u[0].peer, u[0].tag), ("send", 0, 1, 3));
    assert_eq!((u[1].side.as_str(), u[1].rank, u[1].completed), ("receive", 1, false));
}

#[test]
fn profile_numbers() {
    let mut t = SynthTrace::new(2);
    t.send(0, 1, 0, 100, 2 * MS, 3 * MS, 0x100);
    t.send(0, 1, 0, 300, 5 * MS, 5 * MS + 500 * US, 0x100);
    t.recv(1, 0, 0, 100, MS, 3 * MS, 0x110);
    t.recv(1, 0, 0, 300, 4 * MS, 6 * MS, 0x110);
    t.finalize(11 * MS);
    let p = profile(&t.model());
    // Windows: end of MPI_Init (1 us) to the start of MPI_Finalize (11 ms).
    assert_eq!(p.ranks[0].time_ns, 11 * MS - US);
    assert_eq!(p.ranks[0].mpi_ns, 1500 * US);
    assert_eq!(p.ranks[1].mpi_ns, 4 * MS);
    assert_eq!(p.totals.mpi_ns, 5500 * US);
    let send = p.calls.iter().find(|c| c.name == "MPI_Send").unwrap();
    assert_eq!((send.count, send.time_ns, send.bytes, send.ranks), (2, 1500 * US, 400, 1));
    let recv = p.calls.iter().find(|c| c.name == "MPI_Recv").unwrap();
    assert_eq!((recv.count, recv.bytes), (2, 400));
    assert_eq!(p.calls[0].name, "MPI_Recv");
    assert_eq!(p.sites_by_time[0].call, "MPI_Recv");
    assert_eq!(p.sites_by_time[0].count, 2);
    let b: Vec<(i64, u64)> = p.p2p_sizes.buckets.iter().map(|b| (b.lo, b.count)).collect();
    assert_eq!(b, vec![(64, 1), (256, 1)]);
}

#[test]
fn sites_agree_across_ranks_despite_different_addresses() {
    let t = allreduce_rank3_last();
    let p = profile(&t.model());
    let ar: Vec<_> = p.sites_by_time.iter().filter(|s| s.call == "MPI_Allreduce").collect();
    assert_eq!(ar.len(), 1);
    assert_eq!((ar[0].ranks, ar[0].count), (4, 4));
    assert_eq!(ar[0].site, format!("{:#x}", site(0, 0x300)));
}

#[test]
fn critical_path_follows_the_late_sender() {
    let mut t = SynthTrace::new(2);
    t.send(0, 1, 0, 8, 10 * MS, 10 * MS + 100 * US, 0x100);
    t.recv(1, 0, 0, 8, MS, 10 * MS + 200 * US, 0x110);
    t.call(0, "MPI_Finalize", 20 * MS, 20 * MS + US, 0x20);
    t.call(1, "MPI_Finalize", 21 * MS, 21 * MS + US, 0x20);
    let m = t.model();
    let mt = match_messages(&m);
    let c = collectives(&m);
    let w = wait_states(&m, &mt, &c);
    let cp = critical_path(&m, &w.causes);
    assert_eq!(cp.end, 21 * MS);
    assert_eq!(cp.start, US);
    assert_eq!(cp.length_ns, 21 * MS - US);
    // Rank 1: compute 10.2 -> 21 ms and the receive after the send started (10 -> 10.2 ms).
    assert_eq!(cp.by_rank[1], 11 * MS);
    // Rank 0: compute from the end of MPI_Init (1 us) to the send at 10 ms.
    assert_eq!(cp.by_rank[0], 10 * MS - US);
    assert_eq!(cp.mpi_ns, 200 * US);
    assert_eq!(cp.compute_ns, 21 * MS - US - 200 * US);
    assert_eq!(cp.rank_switches, 1);
    assert_eq!(cp.by_call[0].call, "MPI_Recv");
    // As stretches: rank 0 up to the send's start, then rank 1 to the end.
    use analyzers::critical_path::Segment;
    assert_eq!(
        cp.segments,
        vec![Segment { rank: 0, start: US, end: 10 * MS }, Segment { rank: 1, start: 10 * MS, end: 21 * MS }]
    );
}

#[test]
fn crashed_rank_still_reports() {
    let mut t = SynthTrace::new(3);
    for r in 0..2 {
        t.coll(r, "MPI_Allreduce", MS, 2 * MS, 0x100, 8, None);
    }
    // Rank 2 died inside MPI_Allreduce: no end time.
    t.coll(2, "MPI_Allreduce", MS, 2 * MS, 0x100, 8, None).t_end = None;
    t.crashed.push(2);
    t.finalize(5 * MS);
    let a = run(&t);
    let r = a.report();
    assert!(!r.trace.complete);
    assert_eq!(r.trace.incomplete_ranks.len(), 1);
    assert_eq!(r.trace.incomplete_ranks[0].0, 2);
    let text = render_text(&document(&r), TextOptions { width: 80, color: false });
    assert!(text.contains("INCOMPLETE TRACE"), "{text}");
    assert!(text.contains("rank 2 partial"), "{text}");
}

#[test]
fn report_renders_in_every_format_and_fits_the_width() {
    let a = run(&allreduce_rank3_last());
    let r = a.report();
    let doc = document(&r);
    for w in [60, 80, 132] {
        let text = render_text(&doc, TextOptions { width: w, color: false });
        for line in text.lines() {
            assert!(line.chars().count() <= w, "line longer than {w}: {line}");
        }
        assert!(text.contains("Wait at N x N"));
    }
    let md = render_markdown(&doc);
    assert!(md.starts_with("# mpitrace report"));
    assert!(md.contains("| Wait at N x N | 90.0 ms |"), "{md}");
    let json = serde_json::to_string(&r).unwrap();
    let back: analyzers::report::Report = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.schema_version, analyzers::report::SCHEMA_VERSION);
}

#[test]
fn call_sites_are_named_by_module_and_offset_then_by_source_line() {
    let mut t = SynthTrace::new(3);
    t.with_modules = true;
    // Ranks 1 and 2 wait for rank 0 at the same source location (offset
    // 0x200), loaded at different addresses.
    t.send(0, 1, 7, 800, 10 * MS, 10 * MS + 10 * US, 0x100);
    t.send(0, 2, 7, 800, 10 * MS, 10 * MS + 10 * US, 0x100);
    t.recv(1, 0, 7, 800, 5 * MS, 10 * MS + 20 * US, 0x200);
    t.recv(2, 0, 7, 800, 6 * MS, 10 * MS + 20 * US, 0x200);
    t.finalize(20 * MS);
    let a = run(&t);
    let ls = a.waits.states.get(PatternKind::LateSender).unwrap();
    assert_eq!(ls.sites.len(), 1, "{:?}", ls.sites);
    assert_eq!((ls.sites[0].ranks, ls.sites[0].count), (2, 2));
    assert_eq!(ls.sites[0].site, "app+0x200");
    assert_eq!(ls.sites[0].module.as_deref(), Some("app+0x200"));
    assert_eq!(ls.sites[0].location, None);
    let recv_site = a.profile.sites_by_time.iter().find(|s| s.call == "MPI_Recv").unwrap();
    assert_eq!((recv_site.ranks, recv_site.count, recv_site.site.as_str()), (2, 2, "app+0x200"));

    // A symbolizer maps (module, offset) to a source line; the labels follow.
    let mut model = t.model();
    let mut asked = Vec::new();
    let n = model.symbolize(|s, path| {
        asked.push((path.to_string(), s.offset));
        assert_eq!(s.addr, site(s.rank, s.offset));
        (s.offset == 0x200).then(|| analyzers::model::Location {
            function: Some("exchange".into()),
            file: "/src/stencil.c".into(),
            line: 42,
        })
    });
    assert_eq!(n, 1);
    asked.sort();
    // Every distinct offset once (Init 0x10, Send 0x100, Recv 0x200, Finalize 0x20), not once per rank.
    assert_eq!(asked.iter().map(|a| a.1).collect::<Vec<_>>(), vec![0x10, 0x20, 0x100, 0x200]);
    assert!(asked.iter().all(|a| a.0 == analyzers::synth::MODULE));
    let a = analyze(model);
    let ls = a.waits.states.get(PatternKind::LateSender).unwrap();
    assert_eq!(ls.sites[0].site, "stencil.c:42");
    assert_eq!(ls.sites[0].module.as_deref(), Some("app+0x200"));
    assert_eq!(ls.sites[0].location.as_ref().map(|l| l.line), Some(42));
    let send_site = a.profile.sites_by_time.iter().find(|s| s.call == "MPI_Send").unwrap();
    assert_eq!(send_site.site, "app+0x100");
}

/// Sends of distinct sizes from rank 0 to rank 1 on two tags, received tag
/// 6 first: (tag, bytes) in the order sent and in the order received.
fn two_channels() -> SynthTrace {
    let mut t = SynthTrace::new(2);
    let mut at = MS;
    for (tag, bytes) in [(5, 100), (5, 200), (6, 1000), (5, 300), (6, 2000)] {
        t.send(0, 1, tag, bytes, at, at + US, 0x100);
        at += MS;
    }
    for (tag, bytes) in [(6, 1000), (6, 2000), (5, 100), (5, 200), (5, 300)] {
        t.recv(1, 0, tag, bytes, at, at + US, 0x200);
        at += MS;
    }
    t.finalize(at + MS);
    t
}

/// (send bytes, receive bytes) of every matched receive of rank 1.
fn pairs(m: &Model) -> Vec<(i64, i64)> {
    let mt = match_messages(m);
    m.ranks[1]
        .recvs
        .iter()
        .zip(&mt.recv_to_send[1])
        .map(|(r, s)| (if s.is_some() { m.ranks[s.rank as usize].sends.at(s.idx as usize).bytes } else { -1 }, r.bytes))
        .collect()
}

#[test]
fn matching_by_sequence_number_per_channel() {
    let m = two_channels().model();
    assert_eq!(pairs(&m), vec![(1000, 1000), (2000, 2000), (100, 100), (200, 200), (300, 300)]);
    assert_eq!(match_messages(&m).summary.matched, 5);
}

#[test]
fn matching_without_sequence_numbers_is_fifo_per_channel() {
    let mut t = two_channels();
    for e in t.ranks.iter_mut().flatten() {
        e.seq = None;
    }
    let m = t.model();
    assert!(m.ranks[1].recvs.iter().all(|r| r.seq == analyzers::model::NONE));
    assert_eq!(pairs(&m), vec![(1000, 1000), (2000, 2000), (100, 100), (200, 200), (300, 300)]);
}

#[test]
fn matching_follows_sequence_numbers_out_of_posting_order() {
    // Matched probes (MPI_Mprobe + MPI_Mrecv) can receive a channel's
    // messages in another order than they were numbered: rank 1 records
    // seq 2 before seq 1 on tag 5.
    let mut t = two_channels();
    let recvs: Vec<usize> =
        t.ranks[1].iter().enumerate().filter(|(_, e)| &*e.call == "MPI_Recv").map(|(i, _)| i).collect();
    let (a, b) = (recvs[2], recvs[3]);
    // Swap what the first two tag-5 receives got (sequence number and size).
    let (sa, ba) = (t.ranks[1][a].seq, t.ranks[1][a].bytes);
    (t.ranks[1][a].seq, t.ranks[1][a].bytes) = (t.ranks[1][b].seq, t.ranks[1][b].bytes);
    (t.ranks[1][b].seq, t.ranks[1][b].bytes) = (sa, ba);
    assert_eq!(pairs(&t.model()), vec![(1000, 1000), (2000, 2000), (200, 200), (100, 100), (300, 300)]);
}

/// The worst instances of each pattern come worst first: three late
/// senders of 2, 6 and 4 ms, and the N x N waits of one allreduce.
#[test]
fn worst_wait_instances_come_worst_first() {
    let mut t = SynthTrace::new(4);
    for (i, wait) in [2, 6, 4].into_iter().enumerate() {
        let t0 = (i as i64 + 1) * 10 * MS;
        t.recv(1, 0, i as i32, 8, t0, t0 + wait * MS + US, 0x200);
        t.send(0, 1, i as i32, 8, t0 + wait * MS, t0 + wait * MS + US, 0x100);
    }
    for r in 0..4 {
        t.coll(r, "MPI_Allreduce", if r == 3 { 60 * MS } else { 50 * MS + r as i64 * MS }, 61 * MS, 0x300, 8, None);
    }
    t.finalize(70 * MS);
    let m = t.model();
    let w = wait_states(&m, &match_messages(&m), &collectives(&m));
    let ls = &w.worst[0];
    assert_eq!(ls.iter().map(|x| x.time_ns).collect::<Vec<_>>(), vec![6 * MS, 4 * MS, 2 * MS]);
    assert!(ls.iter().all(|x| x.kind == PatternKind::LateSender && x.rank == 1 && x.cause == 0));
    let nxn = &w.worst[2];
    assert_eq!(
        nxn.iter().map(|x| (x.rank, x.time_ns)).collect::<Vec<_>>(),
        vec![(0, 10 * MS), (1, 9 * MS), (2, 8 * MS)]
    );
    assert!(w.worst[1].is_empty());
}
