//! The live reader and the hang diagnosis on journals written as a hung
//! job leaves them (calls in progress at the end of each journal).

use analyzers::hang::fmt_ranks;
use analyzers::live::Live;
use analyzers::synth::SynthTrace;

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("analyzers-hang-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Makes the last call of `rank` one still in progress.
fn in_progress(t: &mut SynthTrace, rank: usize) {
    let e = t.ranks[rank].last_mut().unwrap();
    (e.t_end, e.rc, e.flags) = (None, None, 0);
}

#[test]
fn receive_receive_cycle_and_a_barrier_waiting_for_it() {
    let mut t = SynthTrace::new(4);
    for r in 0..4 {
        t.coll(r, "MPI_Barrier", 2000, 3000, 0x100, 0, None);
    }
    t.recv(0, 1, 7, 4, 4000, 5000, 0x200);
    in_progress(&mut t, 0);
    t.recv(1, 0, 7, 4, 4000, 5000, 0x200);
    in_progress(&mut t, 1);
    for r in 2..4 {
        t.coll(r, "MPI_Barrier", 4000, 5000, 0x300, 0, None);
        in_progress(&mut t, r as usize);
    }
    let dir = scratch("rr");
    t.write_journals(&dir, false).unwrap();
    let mut live = Live::new(&dir);
    live.look();
    assert!(live.anyone_in_mpi());
    assert_eq!(live.size(), 4);
    let rep = live.diagnose(Some(5.0));
    let calls: Vec<Option<String>> = rep.ranks.iter().map(|r| r.call.as_ref().map(|c| c.describe.clone())).collect();
    assert_eq!(
        calls,
        vec![
            Some("MPI_Recv(from 1, tag 7)".into()),
            Some("MPI_Recv(from 0, tag 7)".into()),
            Some("MPI_Barrier".into()),
            Some("MPI_Barrier".into())
        ]
    );
    assert_eq!(rep.ranks[2].waits_for, vec![0, 1]);
    assert_eq!(rep.cycles.len(), 1);
    assert_eq!(rep.cycles[0].ranks, vec![0, 1]);
    assert_eq!(
        rep.cycles[0].text,
        "rank 0 waits in MPI_Recv(from 1, tag 7) for rank 1, which waits in MPI_Recv(from 0, tag 7) for rank 0: a deadlock"
    );
    assert!(
        rep.findings
            .iter()
            .any(|f| f == "ranks 2, 3 wait in MPI_Barrier for rank 0, which waits in MPI_Recv(from 1, tag 7)"),
        "{:#?}",
        rep.findings
    );
    // A second look with nothing new changes nothing.
    let progress = live.progress();
    live.look();
    assert_eq!(live.progress(), progress);
}

#[test]
fn differing_roots_and_a_rank_outside_mpi() {
    let mut t = SynthTrace::new(4);
    for r in 0..3 {
        t.coll(r, "MPI_Bcast", 2000, 3000, 0x100, 16, Some(0));
        t.coll(r, "MPI_Barrier", 4000, 5000, 0x180, 0, None);
        in_progress(&mut t, r as usize);
    }
    t.coll(3, "MPI_Bcast", 2000, 3000, 0x100, 16, Some(1));
    in_progress(&mut t, 3);
    let dir = scratch("root");
    t.write_journals(&dir, false).unwrap();
    let mut live = Live::new(&dir);
    live.look();
    let rep = live.diagnose(None);
    assert_eq!(
        rep.mismatches,
        vec!["collective #1 on WORLD (MPI_Bcast): the roots differ: ranks 0-2 give root 0; rank 3 gives root 1"]
    );
    for r in 0..3 {
        assert_eq!(rep.ranks[r].waits_for, vec![3]);
    }
    assert!(rep.ranks[3].waits_for.is_empty());
    assert!(rep.cycles.is_empty());

    // Rank 2 computes instead of entering the barrier.
    let mut t = SynthTrace::new(3);
    for r in 0..3 {
        t.coll(r, "MPI_Barrier", 2000, 3000, 0x100, 0, None);
    }
    for r in [0, 1] {
        t.coll(r, "MPI_Barrier", 4000, 5000, 0x180, 0, None);
        in_progress(&mut t, r as usize);
    }
    // No rank finalized (all are in the job still).
    t.crashed = vec![0, 1, 2];
    let dir = scratch("barrier");
    t.write_journals(&dir, false).unwrap();
    let mut live = Live::new(&dir);
    live.look();
    let rep = live.diagnose(None);
    assert_eq!(rep.not_in_mpi, vec![2]);
    assert_eq!(rep.ranks[2].last_call.as_deref(), Some("MPI_Barrier"));
    assert!(
        rep.findings
            .iter()
            .any(|f| f.starts_with("ranks 0, 1 wait in MPI_Barrier for rank 2, which is not in MPI (computing")),
        "{:#?}",
        rep.findings
    );
}

#[test]
fn waits_on_pending_requests() {
    let mut t = SynthTrace::new(2);
    t.irecv(0, 1, 5, 8, 2000, 2100, 0x100, 77);
    t.call(0, "MPI_Wait", 2200, 2300, 0x140).request = Some(77);
    in_progress(&mut t, 0);
    let dir = scratch("wait");
    t.write_journals(&dir, false).unwrap();
    let mut live = Live::new(&dir);
    live.look();
    let rep = live.diagnose(None);
    assert_eq!(rep.ranks[0].waits_on.len(), 1);
    assert_eq!(rep.ranks[0].waits_on[0].describe, "MPI_Irecv(from 1, tag 5)");
    assert_eq!(rep.ranks[0].waits_for, vec![1]);
    assert_eq!(rep.edges[0].why, "MPI_Wait on MPI_Irecv(from 1, tag 5)");
}

#[test]
fn rank_lists() {
    assert_eq!(fmt_ranks(&[3]), "rank 3");
    assert_eq!(fmt_ranks(&[0, 1, 3]), "ranks 0, 1, 3");
    assert_eq!(fmt_ranks(&[4, 0, 1, 2, 7]), "ranks 0-2, 4, 7");
}
