//! End-to-end: C programs run on Debian's MPICH (MPICH ABI) and Open MPI
//! (Open MPI's native ABI) under libmpitrace.so; the traces are loaded with
//! trace-format's reader and checked row by row, with the same assertions
//! on both libraries.

mod common;

use std::collections::{BTreeMap, HashMap};

use common::Mpi;
use trace_format::record::{flags, Kind};
use trace_format::{Completeness, Event, Trace};

/// Compiles `tests/c/<src>`, runs it on `n` ranks under the shim with the
/// extra environment `env`, checks that it succeeded and returns its trace,
/// which must have no problems.
fn traced(name: &str, src: &str, n: usize, env: &[(&str, &str)]) -> Trace {
    traced_on(Mpi::Mpich, name, src, n, env)
}

/// [`traced`] on `mpi`.
fn traced_on(mpi: Mpi, name: &str, src: &str, n: usize, env: &[(&str, &str)]) -> Trace {
    let dir = common::scratch(name);
    let exe = common::compile_on(mpi, src, &dir);
    let tdir = dir.join("trace");
    let out = common::run_on(mpi, n, &exe, &[], &tdir, env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t = Trace::open(&tdir).unwrap();
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    t
}

fn calls<'a>(evs: &'a [Event], name: &str) -> Vec<&'a Event> {
    evs.iter().filter(|e| e.is_call(name)).collect()
}

fn count(evs: &[Event], name: &str) -> usize {
    calls(evs, name).len()
}

/// Every send (call or persistent/nonblocking completion) has exactly one
/// matching receive on the peer with the same (comm, tag, seq, bytes), and
/// the other way round.
fn check_matching(trace: &Trace) -> usize {
    check_matching_but(trace, |_| false)
}

/// [`check_matching`] leaving out the rows `skip` selects.
fn check_matching_but(trace: &Trace, skip: impl Fn(&Event) -> bool) -> usize {
    let is_send = |e: &Event| {
        matches!(
            &*e.call,
            "MPI_Send"
                | "MPI_Isend"
                | "MPI_Ssend"
                | "MPI_Bsend"
                | "MPI_Rsend"
                | "MPI_Sendrecv"
                | "MPI_Isendrecv"
                | "MPI_Isendrecv_replace"
        ) && e.kind == Kind::Call
    };
    let is_recv = |e: &Event| {
        (e.kind == Kind::Call && matches!(&*e.call, "MPI_Recv" | "MPI_Mrecv"))
            || (e.kind == Kind::Completion
                && matches!(
                    &*e.call,
                    "MPI_Irecv"
                        | "MPI_Imrecv"
                        | "MPI_Recv_init"
                        | "MPI_Sendrecv"
                        | "MPI_Isendrecv"
                        | "MPI_Isendrecv_replace"
                ))
    };
    let mut sends: HashMap<(u64, i32, i32, i32, i64), i64> = HashMap::new();
    let mut recvs: HashMap<(u64, i32, i32, i32, i64), i64> = HashMap::new();
    for e in trace.events() {
        if e.cancelled() || e.seq.is_none() || skip(e) {
            continue;
        }
        if is_send(e) || (e.kind == Kind::Completion && e.call.to_lowercase().ends_with("send_init")) {
            let k = (e.comm.unwrap(), e.rank, e.peer.unwrap(), e.tag.unwrap(), e.seq.unwrap());
            assert!(sends.insert(k, e.bytes.unwrap()).is_none(), "duplicate send {k:?}");
        } else if is_recv(e) {
            let k = (e.comm.unwrap(), e.peer.unwrap(), e.rank, e.tag.unwrap(), e.seq.unwrap());
            assert!(recvs.insert(k, e.bytes.unwrap()).is_none(), "duplicate receive {k:?}");
        }
    }
    assert_eq!(sends, recvs, "sends and receives do not match one to one");
    sends.len()
}

/// For every communicator, the members' collective calls have the same
/// sequence numbers and names in the same order.
fn check_collectives(trace: &Trace) {
    let coll = |e: &Event| {
        e.kind == Kind::Call
            && matches!(
                &*e.call,
                "MPI_Allreduce"
                    | "MPI_Bcast"
                    | "MPI_Barrier"
                    | "MPI_Reduce"
                    | "MPI_Allgather"
                    | "MPI_Gather"
                    | "MPI_Gatherv"
                    | "MPI_Alltoallv"
                    | "MPI_Iallreduce"
                    | "MPI_Scatter"
            )
    };
    let mut per: BTreeMap<(u64, i32), Vec<(i64, String)>> = BTreeMap::new();
    for e in trace.events().filter(|e| coll(e)) {
        per.entry((e.comm.unwrap(), e.rank)).or_default().push((e.seq.unwrap(), e.call.to_string()));
    }
    for (id, c) in &trace.comms {
        let seqs: Vec<_> = c.members.iter().map(|r| per.get(&(*id, *r)).cloned().unwrap_or_default()).collect();
        for s in &seqs {
            assert_eq!(s, &seqs[0], "collectives on comm {id:x} differ between members");
            let numbers: Vec<i64> = s.iter().map(|x| x.0).collect();
            assert_eq!(numbers, (1..=s.len() as i64).collect::<Vec<_>>());
        }
    }
}

#[test]
fn p2p_collectives_comms_regions_pcontrol() {
    check_p2p(&traced("p2p", "p2p.c", 3, &[]), "MPICH", "MPICH");
}

/// The same program on this project's MPI (mpi-core; its launcher and
/// compiler wrapper are built first if they are not).
#[test]
fn p2p_on_the_project_mpi() {
    check_p2p(&traced_on_project_mpi("p2p-own", "p2p.c", 3), "mpi-core", "MPICH");
}

/// Compiles `tests/c/<src>` with mpi-core's `mpicc` and runs it on `n`
/// ranks with its `mpirun` under the shim.
fn traced_on_project_mpi(name: &str, src: &str, n: usize) -> Trace {
    traced_on_project_mpi_as(name, src, n, false)
}

/// [`traced_on_project_mpi`]; `whole_job`: the shim is preloaded into the
/// launcher itself, as `mpitrace record` does, so that the jobs it spawns
/// are traced too (else only the ranks are, through `env`).
fn traced_on_project_mpi_as(name: &str, src: &str, n: usize, whole_job: bool) -> Trace {
    let (mpicc, mpirun) = common::project_mpi();
    let dir = common::scratch(name);
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = dir.join(src.trim_end_matches(".c"));
    let st = std::process::Command::new(&mpicc)
        .args(["-O1", "-g", "-I"])
        .arg(manifest.join("include"))
        .arg("-Wno-stringop-overflow")
        .arg(manifest.join("tests/c").join(src))
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(st.success());
    let tdir = dir.join("trace");
    let mut cmd = std::process::Command::new("timeout");
    cmd.args(["-k", "5", "120"]).arg(&mpirun).args(["-n", &n.to_string()]);
    if whole_job {
        cmd.env("LD_PRELOAD", common::shim()).env("MPITRACE_DIR", &tdir);
    } else {
        cmd.arg("env")
            .arg(format!("LD_PRELOAD={}", common::shim().display()))
            .arg(format!("MPITRACE_DIR={}", tdir.display()));
    }
    let out = cmd.arg(&exe).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Trace::open(&tdir).unwrap()
}

/// The shim's own set-up after `PMPI_Init` (journals, module map, clock
/// synchronization) belongs to `MPI_Init`, not to the program's compute:
/// the Init row ends after the clock offset was measured, and the program's
/// next call (it computes nothing in between) follows closely.
fn check_init_covers_setup(t: &Trace, r: i32) {
    let ev = t.rank_events(r);
    let init = calls(ev, "MPI_Init")[0];
    let end = init.t_end.expect("MPI_Init finished");
    let end_local = init.t_local + (end - init.t_start);
    let sync = t.meta.rank_meta[r as usize].sync_init.as_ref().expect("init clock sync");
    // 1 us for the ticks-to-ns conversion of the row.
    assert!(
        end_local + 1000 >= sync.local_ns,
        "rank {r}: MPI_Init ends {} ns before the set-up's clock sync",
        sync.local_ns - end_local
    );
    let next = ev
        .iter()
        .filter(|e| e.t_start >= end && !std::ptr::eq(*e, init))
        .map(|e| e.t_start)
        .min()
        .expect("a call after MPI_Init");
    let gap = next - end;
    assert!(gap < end - init.t_start, "rank {r}: {gap} ns of compute after MPI_Init ({} ns)", end - init.t_start);
}

/// Checks the trace of p2p.c on 3 ranks, recorded on the MPI library whose
/// version string names `library`, of the ABI `abi` (as meta.json names it).
fn check_p2p(t: &Trace, library: &str, abi: &str) {
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert!(t.is_complete());
    assert_eq!(t.meta.ranks, 3);
    assert_eq!(t.meta.written_by, "finalize");
    assert!(t.meta.mpi_library.contains(library), "{}", t.meta.mpi_library);
    // meta.json names the ABI the shim recognised.
    assert_eq!(t.meta.mpi_abi, abi);
    assert_eq!(t.meta.rank_meta.len(), 3);
    for r in 0..3 {
        let ev = t.rank_events(r);
        let pp = if r < 2 { 5 } else { 0 };
        assert_eq!(count(ev, "MPI_Init"), 1);
        check_init_covers_setup(t, r);
        assert_eq!(count(ev, "MPI_Finalize"), 1);
        assert_eq!(count(ev, "MPI_Send"), pp + usize::from(r != 0), "rank {r}");
        assert_eq!(count(ev, "MPI_Recv"), pp + if r == 0 { 2 } else { 0 }, "rank {r}");
        assert_eq!(count(ev, "MPI_Irecv"), 1);
        assert_eq!(count(ev, "MPI_Isend"), 1);
        assert_eq!(count(ev, "MPI_Waitall"), 1);
        assert_eq!(count(ev, "MPI_Allreduce"), 2);
        assert_eq!(count(ev, "MPI_Bcast"), 1);
        // The barrier between Pcontrol(0) and Pcontrol(1) is absent.
        assert_eq!(count(ev, "MPI_Barrier"), 1);
        let pc: Vec<Option<i32>> = calls(ev, "MPI_Pcontrol").iter().map(|e| e.aux).collect();
        assert_eq!(pc, vec![Some(0), Some(1)]);
        assert_eq!(count(ev, "MPI_Comm_split"), 1);
        assert_eq!(count(ev, "MPI_Comm_free"), 1);
        // Completions follow the Waitall: the Irecv and the Isend.
        let w = ev.iter().position(|e| e.is_call("MPI_Waitall")).unwrap();
        let done: Vec<&str> = ev[w + 1..w + 3].iter().map(|e| &*e.call).collect();
        assert!(ev[w + 1..w + 3].iter().all(|e| e.kind == Kind::Completion));
        assert!(done.contains(&"MPI_Irecv") && done.contains(&"MPI_Isend"), "{done:?}");
        let irecv = calls(ev, "MPI_Irecv")[0];
        let comp = ev[w + 1..w + 3].iter().find(|e| &*e.call == "MPI_Irecv").unwrap();
        assert_eq!(comp.request, irecv.request);
        assert_eq!(comp.peer, Some((r + 2) % 3));
        assert_eq!(comp.bytes, Some(10));
        // User regions.
        let regions: Vec<(Kind, &str)> = ev
            .iter()
            .filter(|e| e.kind != Kind::Call && e.kind != Kind::Completion)
            .map(|e| (e.kind, &*e.call))
            .collect();
        assert_eq!(regions, vec![(Kind::RegionBegin, "pingpong"), (Kind::RegionEnd, "pingpong")]);
        // Receives with MPI_STATUS_IGNORE got the shim's own status.
        for e in calls(ev, "MPI_Recv").iter().filter(|e| e.tag == Some(7) || e.tag == Some(8)) {
            assert!(e.flags & flags::OWN_STATUS != 0);
            assert_eq!(e.bytes, Some(16));
        }
        assert!(ev
            .iter()
            .filter(|e| e.kind == Kind::Call)
            .all(|e| e.site.is_some() && e.t_end.is_some() && e.rc == Some(0)));
    }
    // ANY_SOURCE receives resolved to the real sources.
    let any: Vec<&Event> = calls(t.rank_events(0), "MPI_Recv").into_iter().filter(|e| e.tag == Some(5)).collect();
    let mut srcs: Vec<i32> = any.iter().map(|e| e.peer.unwrap()).collect();
    srcs.sort();
    assert_eq!(srcs, vec![1, 2]);
    assert!(any.iter().all(|e| e.bytes == Some(24) && e.seq == Some(1)));
    // Ping-pong sends carry seq 1..5.
    let seqs: Vec<i64> =
        calls(t.rank_events(0), "MPI_Send").iter().filter(|e| e.tag == Some(7)).map(|e| e.seq.unwrap()).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
    assert_eq!(check_matching(t), 5 + 5 + 2 + 3);
    // Call sites symbolize to the source line of the call, with the build
    // id of the executable that ran.
    let meta = t.ranks[&0].meta.as_ref().unwrap();
    let send = calls(t.rank_events(0), "MPI_Send")[0];
    let mut sym = trace_format::Symbolizer::with_debug_dir(None);
    let site = sym.site(meta, send.site.unwrap());
    assert!(site.module.ends_with("/p2p"), "{site:?}");
    assert_eq!((site.function.as_deref(), site.line, &site.problem), (Some("main"), Some(19), &None), "{site:?}");
    assert!(site.file.as_deref().unwrap().ends_with("tests/c/p2p.c"), "{site:?}");
    assert_eq!(site.to_string(), format!("main ({}:19)", site.file.as_deref().unwrap()));
    let exe_id = trace_format::symbolize::build_id_of(std::path::Path::new(&site.module));
    assert!(exe_id.is_some());
    assert_eq!(meta.build_ids.get(&site.module), exe_id.as_ref());
    // Every recorded call of the program has a site in p2p.c.
    for e in t.rank_events(1).iter().filter(|e| e.kind == Kind::Call) {
        let s = sym.site(t.ranks[&1].meta.as_ref().unwrap(), e.site.unwrap());
        assert!(s.file.as_deref().is_some_and(|f| f.ends_with("p2p.c")), "{}: {s:?}", e.call);
    }
    check_collectives(t);
    // Communicators: world, 3 selves, two halves of the split.
    let splits: Vec<_> = t.comms.values().filter(|c| c.call == "MPI_Comm_split").collect();
    let mut members: Vec<Vec<i32>> = splits.iter().map(|c| c.members.clone()).collect();
    members.sort();
    assert_eq!(members, vec![vec![0, 2], vec![1]]);
    assert!(splits.iter().all(|c| c.parent == Some(0)));
    let mut names: Vec<(Vec<i32>, Option<String>)> =
        splits.iter().map(|c| (c.members.clone(), c.name.clone())).collect();
    names.sort();
    assert_eq!(names, vec![(vec![0, 2], Some("even".into())), (vec![1], Some("odd".into()))]);
    assert_eq!(t.comms[&0].members, vec![0, 1, 2]);
    for r in 0..3 {
        let half = t.comms.iter().find(|(_, c)| c.call == "MPI_Comm_split" && c.members.contains(&r)).unwrap().0;
        let ar = calls(t.rank_events(r), "MPI_Allreduce");
        assert_eq!(ar[1].comm, Some(*half));
        let split = calls(t.rank_events(r), "MPI_Comm_split")[0];
        assert_eq!(split.new_comm, Some(*half));
    }
}

#[test]
fn requests_persistent_any_some_cancel_sendrecv() {
    check_requests(&traced("requests", "requests.c", 2, &[]), true);
}

#[test]
fn requests_on_the_project_mpi() {
    let t = traced_on_project_mpi("requests-own", "requests.c", 2);
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    check_requests(&t, false);
}

/// Checks the trace of requests.c; `mpich`: run on Debian's MPICH 4.0.
fn check_requests(t: &Trace, mpich: bool) {
    check_requests_of(t, mpich, true)
}

/// [`check_requests`]; `mpi4`: the library has MPI 4.0's `MPI_Isendrecv`
/// (Open MPI 4.1 has not: requests.c leaves that part out).
fn check_requests_of(t: &Trace, mpich: bool, mpi4: bool) {
    for r in 0..2 {
        let ev = t.rank_events(r);
        assert_eq!(count(ev, "MPI_Start"), 3);
        let waits = 5 + usize::from(mpi4) + r as usize;
        assert_eq!(count(ev, "MPI_Wait"), waits, "rank 1 also waits for the Imrecv");
        let pers: Vec<&Event> = ev.iter().filter(|e| e.kind == Kind::Completion && e.call.ends_with("_init")).collect();
        assert_eq!(pers.len(), 3, "rank {r}");
        assert!(pers.iter().all(|e| e.flags & flags::PERSISTENT != 0));
        assert_eq!(pers.iter().map(|e| e.seq.unwrap()).collect::<Vec<_>>(), vec![1, 2, 3]);
        // Waitany + Waitsome complete the two receives and the send.
        let nb: Vec<&Event> =
            ev.iter().filter(|e| e.kind == Kind::Completion && (e.tag == Some(12) || e.tag == Some(13))).collect();
        assert_eq!(nb.len(), 3, "rank {r}: {nb:?}");
        let cancelled: Vec<&Event> = ev.iter().filter(|e| e.cancelled()).collect();
        assert_eq!(cancelled.len(), 1);
        assert_eq!((cancelled[0].tag, cancelled[0].seq), (Some(99), None));
        assert_eq!(ev.iter().filter(|e| e.kind == Kind::Completion && e.tag == Some(14)).count(), 2);
        let sr = ev.iter().filter(|e| e.kind == Kind::Completion && &*e.call == "MPI_Sendrecv").collect::<Vec<_>>();
        assert_eq!(sr.len(), 1);
        assert_eq!((sr[0].peer, sr[0].bytes), (Some(1 - r), Some(12)));
        // Isendrecv: the call row is the send half, the completion at
        // Wait/Waitall the receive half (source, tag, bytes, seq).
        let (p, c) = (Some(1 - r), Kind::Completion);
        if mpi4 {
            check_isendrecv(ev, p, mpich, r);
        }
        // The reversed Waitall: rows in array order, numbers in posting order.
        let w = ev.iter().rposition(|e| e.is_call("MPI_Waitall")).unwrap();
        let got: Vec<(Option<i64>, Option<i64>)> = ev[w + 1..w + 3].iter().map(|e| (e.seq, e.bytes)).collect();
        assert_eq!(got, vec![(Some(2), Some(8)), (Some(1), Some(4))], "rank {r}");
        // Receives numbered in posting order across calls.
        let w21 = ev.iter().find(|e| e.kind == c && e.tag == Some(21)).unwrap();
        let r21 = calls(ev, "MPI_Recv").into_iter().find(|e| e.tag == Some(21)).unwrap();
        assert_eq!(((w21.seq, w21.bytes), (r21.seq, r21.bytes)), ((Some(1), Some(4)), (Some(2), Some(8))));
        let r22 = calls(ev, "MPI_Recv").into_iter().find(|e| e.tag == Some(22)).unwrap();
        assert_eq!((r22.seq, r22.bytes), (Some(2), Some(8)), "after the freed receive");
    }
    // Persistent 0->1 three times; tags 12 to 15, 17 to 19 and twice 20
    // both ways; the matched-probe message. On MPICH the Isendrecv receive
    // halves have no bytes (checked above).
    // Tag 21 twice both ways, the Improbe message; tag 22's first message
    // went to the freed receive, which has no row.
    let freed = |e: &Event| e.tag == Some(22);
    if mpich || !mpi4 {
        let isr = |e: &Event| e.call.starts_with("MPI_Isendrecv") || freed(e);
        assert_eq!(check_matching_but(t, isr), 3 + 2 * 6 + 1 + 4 + 1);
    } else {
        assert_eq!(check_matching_but(t, freed), 3 + 2 * 9 + 1 + 4 + 1);
    }
    let ev = t.rank_events(1);
    let probe = calls(ev, "MPI_Iprobe").into_iter().last().unwrap();
    assert_eq!((probe.peer, probe.tag, probe.bytes, probe.seq), (Some(0), Some(16), Some(8), None));
    let ip = calls(ev, "MPI_Improbe").into_iter().last().unwrap();
    assert_eq!((ip.peer, ip.tag, ip.seq), (Some(0), Some(23), Some(1)));
    let im = ev.iter().find(|e| e.kind == Kind::Completion && e.call.starts_with("MPI_Imrecv")).unwrap();
    assert_eq!((im.peer, im.tag, im.bytes, im.seq), (Some(0), Some(23), Some(8), Some(1)));
    let mp = calls(ev, "MPI_Mprobe")[0];
    let mr = calls(ev, "MPI_Mrecv")[0];
    assert_eq!((mp.peer, mp.seq), (Some(0), Some(1)));
    assert_eq!((mr.peer, mr.tag, mr.bytes, mr.seq), (Some(0), Some(16), Some(8), Some(1)));
}

/// The rows of requests.c's `MPI_Isendrecv` part on rank `r` (events `ev`,
/// peer `p`): the call row is the send half, the completion the receive half.
fn check_isendrecv(ev: &[Event], p: Option<i32>, mpich: bool, r: i32) {
    let c = Kind::Completion;
    let isr: Vec<&Event> = ev.iter().filter(|e| e.call.starts_with("MPI_Isendrecv")).collect();
    let row = |e: &Event| (e.call.to_string(), e.kind, e.peer, e.tag, e.seq);
    let n = |s: &str| s.to_string();
    let mut want = vec![
        (n("MPI_Isendrecv"), Kind::Call, p, Some(17), Some(1)),
        (n("MPI_Isendrecv"), c, p, Some(17), Some(1)),
        (n("MPI_Isendrecv_replace"), Kind::Call, p, Some(18), Some(1)),
        (n("MPI_Isendrecv"), Kind::Call, p, Some(19), Some(1)),
        (n("MPI_Isendrecv_replace"), c, p, Some(18), Some(1)),
        (n("MPI_Isendrecv"), c, p, Some(19), Some(1)),
    ];
    let sends: Vec<i64> = isr.iter().filter(|e| e.kind == Kind::Call).map(|e| e.bytes.unwrap()).collect();
    assert_eq!(sends, vec![8, 12, 4]);
    if mpich {
        // MPICH 4.0 leaves these statuses unfilled: the receive half of
        // the wildcard receive is unknown; the others come from the call.
        want[4] = (n("MPI_Isendrecv_replace"), c, None, None, None);
        assert!(isr.iter().all(|e| e.kind == Kind::Call || e.bytes.is_none()), "{isr:?}");
    } else {
        let got: Vec<i64> = isr.iter().filter(|e| e.kind == c).map(|e| e.bytes.unwrap()).collect();
        assert_eq!(got, vec![8, 12, 4]);
    }
    assert_eq!(isr.iter().map(|e| row(e)).collect::<Vec<_>>(), want, "rank {r}");
    let wait = ev.iter().position(|e| e.is_call("MPI_Waitall")).unwrap();
    assert!(ev[wait + 1..wait + 3].iter().all(|e| e.kind == c && e.request.is_some()));
}

/// Call sites in a shared library loaded with `dlopen` after `MPI_Init`
/// symbolize to its source (the module map is completed at Finalize).
#[test]
fn sites_in_a_library_loaded_after_init() {
    let dir = common::scratch("dlopen");
    let lib = common::compile_with("dlopen_lib.c", &dir, &["-shared", "-fPIC"], "libplugin.so");
    let exe = common::compile("dlopen.c", &dir);
    let tdir = dir.join("trace");
    let out = common::run(2, &exe, &[lib.to_str().unwrap()], &tdir, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t = Trace::open(&tdir).unwrap();
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    let lib_id = trace_format::symbolize::build_id_of(&lib);
    assert!(lib_id.is_some());
    let mut sym = trace_format::Symbolizer::with_debug_dir(None);
    for r in 0..2 {
        let meta = t.ranks[&r].meta.as_ref().unwrap();
        let ar = calls(t.rank_events(r), "MPI_Allreduce");
        assert_eq!(ar.len(), 1, "rank {r}");
        let s = sym.site(meta, ar[0].site.unwrap());
        assert_eq!(
            (s.module_name(), s.function.as_deref(), s.line, &s.problem),
            ("libplugin.so", Some("plugin_exchange"), Some(7), &None),
            "{s:?}"
        );
        assert!(s.file.as_deref().unwrap().ends_with("dlopen_lib.c"), "{s:?}");
        assert_eq!(meta.build_ids.get(&s.module), lib_id.as_ref());
        // The program's own calls resolve to dlopen.c.
        let fin = calls(t.rank_events(r), "MPI_Finalize")[0];
        let s = sym.site(meta, fin.site.unwrap());
        assert_eq!((s.function.as_deref(), s.line), (Some("main"), Some(29)), "{s:?}");
    }
    // A rank killed a while after the dlopen: its journals have the module.
    let tdir = dir.join("trace-kill");
    let out = common::run(2, &exe, &[lib.to_str().unwrap(), "kill"], &tdir, &[]);
    assert!(!out.status.success());
    let t = Trace::open(&tdir).unwrap();
    assert!(matches!(t.ranks[&1].completeness, Completeness::Partial { .. }));
    let meta = t.ranks[&1].meta.as_ref().unwrap();
    let ar = calls(t.rank_events(1), "MPI_Allreduce")[0];
    let s = sym.site(meta, ar.site.unwrap());
    assert_eq!((s.module_name(), s.line), ("libplugin.so", Some(7)), "{s:?}");
}

/// Partitioned requests are persistent: every round completes with the
/// next sequence number, numbered apart from plain messages with the same
/// tag; bytes count all partitions.
#[test]
fn partitioned_rounds() {
    check_partitioned(&traced("partitioned", "partitioned.c", 2, &[]));
}

fn check_partitioned(t: &Trace) {
    let (init, peer) = (["MPI_Psend_init", "MPI_Precv_init"], [1, 0]);
    for r in 0..2 {
        let ev = t.rank_events(r);
        let i = calls(ev, init[r as usize])[0];
        assert_eq!(
            (i.peer, i.tag, i.count, i.bytes, i.aux),
            (Some(peer[r as usize]), Some(9), Some(4), Some(64), Some(4))
        );
        let req = i.request.unwrap();
        let starts: Vec<Option<i64>> = calls(ev, "MPI_Start").iter().map(|e| e.seq).collect();
        assert_eq!(starts, vec![Some(1), Some(2), Some(3)], "rank {r}");
        let done: Vec<&Event> = ev.iter().filter(|e| e.kind == Kind::Completion).collect();
        assert_eq!(done.len(), 3, "rank {r}: {done:?}");
        for (k, e) in done.iter().enumerate() {
            assert_eq!(
                (&*e.call, e.request, e.peer, e.bytes, e.seq, e.flags & flags::PERSISTENT != 0),
                (init[r as usize], Some(req), Some(peer[r as usize]), Some(64), Some(k as i64 + 1), true),
                "rank {r}"
            );
            assert_eq!(e.flags & flags::UNKNOWN_REQUEST, 0);
        }
    }
    let ready = calls(t.rank_events(0), "MPI_Pready");
    assert_eq!(ready.len(), 12);
    assert_eq!(ready[..4].iter().map(|e| e.aux.unwrap()).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    assert!(ready.iter().all(|e| e.request.is_some()));
    assert!(calls(t.rank_events(1), "MPI_Parrived").iter().all(|e| e.aux == Some(3)));
    // The plain messages with tag 9 are numbered 1..3 on their own.
    assert_eq!(check_matching_but(t, |e| e.call.starts_with("MPI_P")), 3);
    let sends: Vec<i64> = calls(t.rank_events(0), "MPI_Send").iter().map(|e| e.seq.unwrap()).collect();
    assert_eq!(sends, vec![1, 2, 3]);
}

/// An executable stripped of its debug information, kept in a separate
/// file named by `.gnu_debuglink`, still symbolizes to source lines.
#[test]
fn sites_from_a_separate_debug_file() {
    let dir = common::scratch("debuglink");
    let exe = common::compile("p2p.c", &dir);
    let dbg = dir.join("p2p.debug");
    let tool = |args: &[&std::ffi::OsStr]| {
        let st = std::process::Command::new(args[0]).args(&args[1..]).status().unwrap();
        assert!(st.success(), "{args:?}");
    };
    let link = format!("--add-gnu-debuglink={}", dbg.display());
    tool(&["objcopy".as_ref(), "--only-keep-debug".as_ref(), exe.as_os_str(), dbg.as_os_str()]);
    tool(&["strip".as_ref(), "--strip-debug".as_ref(), exe.as_os_str()]);
    tool(&["objcopy".as_ref(), link.as_ref(), exe.as_os_str()]);
    let tdir = dir.join("trace");
    let out = common::run(3, &exe, &[], &tdir, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t = Trace::open(&tdir).unwrap();
    let meta = t.ranks[&0].meta.as_ref().unwrap();
    let send = calls(t.rank_events(0), "MPI_Send")[0].site.unwrap();
    let s = trace_format::Symbolizer::with_debug_dir(None).site(meta, send);
    assert_eq!((s.function.as_deref(), s.line), (Some("main"), Some(19)), "{s:?}");
    assert!(s.file.as_deref().unwrap().ends_with("p2p.c"), "{s:?}");
    // Without the debug file: the symbol table only.
    std::fs::remove_file(&dbg).unwrap();
    let s = trace_format::Symbolizer::with_debug_dir(None).site(meta, send);
    assert_eq!((s.function.as_deref(), s.line), (Some("main"), None), "{s:?}");
}

/// C++ call sites symbolize to demangled names (inlined methods included).
#[test]
fn cxx_sites_are_demangled() {
    let t = traced("cxx", "cxx.cpp", 2, &[]);
    let mut sym = trace_format::Symbolizer::with_debug_dir(None);
    for r in 0..2 {
        let meta = t.ranks[&r].meta.as_ref().unwrap();
        let ev = t.rank_events(r);
        let ar = calls(ev, "MPI_Allreduce");
        assert_eq!(ar.len(), 2);
        let s = sym.site(meta, ar[0].site.unwrap());
        assert_eq!((s.function.as_deref(), s.line), (Some("solver::Grid::exchange()"), Some(10)), "{s:?}");
        assert!(s.file.as_deref().unwrap().ends_with("cxx.cpp"), "{s:?}");
        let s = sym.site(meta, calls(ev, "MPI_Barrier")[0].site.unwrap());
        assert_eq!((s.function.as_deref(), s.line), (Some("solver::step(solver::Grid&, int)"), Some(15)), "{s:?}");
    }
}

/// A program that uses MPI sessions and never calls `MPI_Init` is traced
/// from `MPI_Session_init` to `MPI_Session_finalize`, on MPICH and on this
/// project's MPI.
#[test]
fn sessions_without_mpi_init() {
    check_sessions(&traced("sessions", "sessions.c", 2, &[]));
    check_sessions(&traced_on_project_mpi("sessions-own", "sessions.c", 2));
}

fn check_sessions(t: &Trace) {
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert!(t.is_complete());
    assert_eq!((t.meta.ranks, t.meta.written_by.as_str()), (2, "finalize"));
    let user: Vec<_> = t.comms.values().filter(|c| c.call == "MPI_Comm_create_from_group").collect();
    assert_eq!(user.len(), 1, "{:?}", t.comms);
    assert_eq!((user[0].members.clone(), user[0].parent), (vec![0, 1], None));
    let id = user[0].id;
    for r in 0..2 {
        let ev = t.rank_events(r);
        let names: Vec<&str> = ev.iter().filter(|e| e.kind == Kind::Call).map(|e| &*e.call).collect();
        assert_eq!(names.first(), Some(&"MPI_Session_init"), "rank {r}: {names:?}");
        assert_eq!(names.last(), Some(&"MPI_Session_finalize"), "rank {r}: {names:?}");
        for name in ["MPI_Group_from_session_pset", "MPI_Comm_create_from_group", "MPI_Comm_free", "MPI_Group_free"] {
            assert_eq!(count(ev, name), 1, "rank {r}: {name}");
        }
        let ar = calls(ev, "MPI_Allreduce");
        assert_eq!((ar.len(), ar[0].comm, ar[0].seq), (1, Some(id), Some(1)));
        assert_eq!(calls(ev, "MPI_Comm_create_from_group")[0].new_comm, Some(id));
    }
    let send = calls(t.rank_events(0), "MPI_Send")[0];
    let recv = calls(t.rank_events(1), "MPI_Recv")[0];
    assert_eq!((send.comm, send.peer, send.tag, send.seq), (Some(id), Some(1), Some(3), Some(1)));
    assert_eq!((recv.comm, recv.peer, recv.tag, recv.seq, recv.bytes), (Some(id), Some(0), Some(3), Some(1), Some(4)));
    assert_eq!(check_matching(t), 1);
    // The second session: both of its calls, timed within the trace.
    for r in 0..2 {
        let ev = t.rank_events(r);
        let (first, last) = (ev[0].t_start, ev.iter().filter_map(|e| e.t_end).max().unwrap());
        for name in ["MPI_Session_init", "MPI_Session_finalize"] {
            let c = calls(ev, name);
            assert_eq!(c.len(), 2, "rank {r}: {name}");
            for e in c {
                let end = e.t_end.unwrap();
                assert!(
                    first <= e.t_start && e.t_start <= end && end <= last,
                    "rank {r}: {name} at {}..{end}, trace {first}..{last}",
                    e.t_start
                );
            }
        }
    }
}

/// A job spawned by a traced one (on this project's MPI, whose mpirun
/// spawns) traces itself in `spawned/<name>/` of the parents' trace, and
/// the parents' trace stays theirs.
#[test]
fn spawned_jobs_trace_apart_from_their_parents() {
    let t = traced_on_project_mpi_as("spawn-own", "spawn.c", 2, true);
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.meta.ranks, 2);
    for r in 0..2 {
        assert_eq!(count(t.rank_events(r), "MPI_Comm_spawn"), 1, "parent rank {r}");
        assert_eq!(count(t.rank_events(r), "MPI_Recv"), 0, "parent rank {r}");
    }
    assert_eq!(count(t.rank_events(0), "MPI_Send"), 2);
    let spawned: Vec<_> = std::fs::read_dir(t.dir.join("spawned")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(spawned.len(), 1, "{spawned:?}");
    let c = Trace::open(&spawned[0]).unwrap();
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    assert!(c.is_complete());
    assert_eq!(c.meta.ranks, 2);
    for r in 0..2 {
        let ev = c.rank_events(r);
        assert_eq!(count(ev, "MPI_Comm_get_parent"), 1, "child rank {r}");
        let recv = calls(ev, "MPI_Recv");
        assert_eq!((recv.len(), recv[0].bytes, recv[0].tag), (1, Some(4), Some(5)), "child rank {r}");
    }
}

/// Rank 1 dies after three sends; the trace of everything before is readable.
fn crash_case(mode: &str) -> Trace {
    crash_case_on(Mpi::Mpich, mode)
}

/// [`crash_case`] on `mpi`.
fn crash_case_on(mpi: Mpi, mode: &str) -> Trace {
    let dir = common::scratch(&format!("crash-{mode}-{mpi:?}"));
    let exe = common::compile_on(mpi, "crash.c", &dir);
    let tdir = dir.join("trace");
    let out = common::run_on(mpi, 2, &exe, &[mode], &tdir, &[]);
    assert!(!out.status.success());
    // Before any conversion: the reader reads the journals directly.
    let raw = Trace::open(&tdir).unwrap();
    let sends = calls(raw.rank_events(1), "MPI_Send");
    assert_eq!(sends.len(), 3, "{mode}: {:?}", raw.problems);
    assert!(matches!(raw.ranks[&1].completeness, Completeness::Partial { .. }));
    // After `finish_dir` (what `mpitrace record` does): Parquet files.
    let fin = trace_format::finish_dir(&tdir, &[], false).unwrap();
    assert_eq!(fin.converted.len(), 2);
    let t = Trace::open(&tdir).unwrap();
    assert_eq!(t.meta.ranks, 2);
    assert_eq!(calls(t.rank_events(1), "MPI_Send").len(), 3);
    // Rank 0 received up to three messages and may have been inside the
    // next receive: the launcher kills it at any point after rank 1 died,
    // possibly between two receives, so the open receive is optional.
    let recvs = calls(t.rank_events(0), "MPI_Recv");
    assert!((1..=4).contains(&recvs.len()), "{mode}: {recvs:?}");
    let open = recvs.iter().filter(|e| e.t_end.is_none()).count();
    assert!(open <= 1, "{mode}: at most one receive was in flight: {recvs:?}");
    let done = &recvs[..recvs.len() - open];
    assert!(done.len() <= 3, "{mode}: only three messages were sent: {recvs:?}");
    assert!(done.iter().all(|e| e.t_end.is_some() && e.peer == Some(1) && e.tag == Some(9)), "{mode}: {recvs:?}");
    t
}

/// Every file of `dir` (recursively) is 0600 and every folder 0700; the
/// names of the files.
fn check_private(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut files = Vec::new();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(dir), 0o700, "{}", dir.display());
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files.extend(check_private(&p));
        } else {
            assert_eq!(mode(&p), 0o600, "{}", p.display());
            files.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    files
}

/// A trace holds the command line, hosts and module paths: whatever the
/// umask, its files are 0600 and its folders 0700 (issue 20.8), for the
/// journals of a crashed run, the Parquet files and meta.json that
/// `finish_dir` makes of them, and those of a run that finished.
#[test]
fn trace_files_are_private() {
    let dir = common::scratch("private");
    let exe = common::compile("crash.c", &dir);
    let tdir = dir.join("crashed");
    let out = common::run_umask_on(Mpi::Mpich, Some("000"), 2, &exe, &["kill"], &tdir, &[]);
    assert!(!out.status.success());
    let files = check_private(&tdir);
    assert!(files.iter().any(|f| f.ends_with(".journal")), "{files:?}");
    assert!(files.iter().any(|f| f.ends_with(".side.jsonl")), "{files:?}");
    // What `mpitrace record` does after the job: the level-of-detail cache too.
    trace_lod::convert::finish_dir(&tdir, &[], false).unwrap();
    let files = check_private(&tdir);
    assert!(files.iter().any(|f| f.ends_with(".parquet")) && files.contains(&"meta.json".into()), "{files:?}");
    assert!(files.contains(&"rank-00001.lod".into()), "{files:?}");

    let exe = common::compile("p2p.c", &dir);
    let tdir = dir.join("finished");
    let out = common::run_umask_on(Mpi::Mpich, Some("000"), 3, &exe, &[], &tdir, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let files = check_private(&tdir);
    assert!(files.iter().any(|f| f.ends_with(".parquet")) && files.contains(&"meta.json".into()), "{files:?}");
    // Each rank wrote its level-of-detail cache at MPI_Finalize.
    assert!((0..3).all(|r| files.contains(&format!("rank-{r:05}.lod"))), "{files:?}");
    assert!(trace_lod::Lod::open_cached(&tdir).is_ok());
}

#[test]
fn crash_mpi_abort() {
    let t = crash_case("abort");
    let last = t.rank_events(1).iter().rev().find(|e| e.kind == Kind::Call).unwrap();
    assert_eq!(&*last.call, "MPI_Abort");
    assert_eq!((last.aux, last.t_end), (Some(42), None));
}

#[test]
fn crash_segfault() {
    let t = crash_case("segv");
    let last = t.rank_events(1).iter().rev().find(|e| e.kind == Kind::Call).unwrap();
    assert_eq!(&*last.call, "MPI_Send");
}

#[test]
fn crash_sigkill() {
    crash_case("kill");
}

#[test]
fn thread_multiple_journals_per_thread() {
    check_threads(&traced("threads", "threads.c", 2, &[]));
}

fn check_threads(t: &Trace) {
    assert_eq!(check_matching(t), 100);
    for r in 0..2 {
        let ev = t.rank_events(r);
        let name = if r == 0 { "MPI_Send" } else { "MPI_Recv" };
        // Main thread (0) does Init/dup/free/Finalize; workers 1 and 2.
        let mut by_thread: BTreeMap<i32, usize> = BTreeMap::new();
        for e in calls(ev, name) {
            *by_thread.entry(e.thread).or_default() += 1;
        }
        assert_eq!(by_thread.values().copied().collect::<Vec<_>>(), vec![50, 50], "rank {r}: {by_thread:?}");
        // Each worker used its own communicator, a distinct dup of world.
        let dups: Vec<u64> = calls(ev, "MPI_Comm_dup").iter().map(|e| e.new_comm.unwrap()).collect();
        assert_eq!(dups.len(), 2);
        assert_ne!(dups[0], dups[1]);
        for &th in by_thread.keys() {
            let comms: std::collections::BTreeSet<u64> =
                ev.iter().filter(|e| e.thread == th && e.is_call(name)).map(|e| e.comm.unwrap()).collect();
            assert_eq!(comms.len(), 1);
            assert!(dups.contains(comms.iter().next().unwrap()));
        }
        let regions = ev.iter().filter(|e| e.kind == Kind::RegionBegin).count();
        assert_eq!(regions, 2);
    }
}

#[test]
fn clock_sync_ping_pong() {
    check_clock(&traced("clock", "p2p.c", 2, &[("MPITRACE_CLOCK_PER_RANK", "1")]));
}

fn check_clock(t: &Trace) {
    let m1 = &t.meta.rank_meta[1];
    for p in [m1.sync_init.unwrap(), m1.sync_finalize.unwrap()] {
        // Same machine: the true offset is 0, the estimate within the round trip.
        assert!(p.rtt_ns > 0, "{p:?}");
        assert!(p.offset_ns.abs() <= p.rtt_ns, "{p:?}");
    }
    // A message is never received before it was sent, on the reference
    // clock, up to what the offset estimate can be off by: the larger
    // round trip of the two synchronizations (a loaded machine stretches
    // it, and the estimate with it).
    let tol = [m1.sync_init.unwrap(), m1.sync_finalize.unwrap()].iter().map(|p| p.rtt_ns).max().unwrap();
    for s in t.rank_events(0).iter().filter(|e| e.is_call("MPI_Send") && e.tag == Some(7)) {
        let r = t.rank_events(1).iter().find(|e| e.is_call("MPI_Recv") && e.tag == Some(7) && e.seq == s.seq).unwrap();
        assert!(r.t_end.unwrap() as i128 + tol as i128 >= s.t_start as i128, "tolerance {tol} ns: {s:?} {r:?}");
    }
}

#[test]
fn unwritable_trace_dir_leaves_the_program_running() {
    let dir = common::scratch("unwritable");
    let exe = common::compile("p2p.c", &dir);
    let out = common::run(2, &exe, &[], std::path::Path::new("/proc/mpitrace-no-such-dir"), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot write the trace") && err.contains("runs untraced"), "{err}");
}

#[test]
fn collectives_and_communicators_on_four_ranks() {
    check_coll(&traced("coll", "coll.c", 4, &[]));
}

fn check_coll(t: &Trace) {
    check_collectives(t);
    assert_eq!(check_matching(t), 1);
    for r in 0..4 {
        let ev = t.rank_events(r);
        let g = calls(ev, "MPI_Gatherv")[0];
        assert_eq!((g.root, g.bytes, g.seq), (Some(2), Some(4 * (r as i64 + 1)), Some(1)));
        // Only the root's receive counts are significant: 1+2+3+4 ints.
        assert_eq!(g.recv_bytes, if r == 2 { Some(40) } else { None });
        let a = calls(ev, "MPI_Alltoallv")[0];
        assert_eq!((a.count, a.bytes, a.recv_bytes), (Some(10), Some(40), Some(16 * (r as i64 + 1))));
        let red = calls(ev, "MPI_Reduce")[0];
        assert_eq!((red.root, red.op, red.seq), (Some(0), Some(0x5800_0001), Some(3)));
        // The nonblocking allreduce is the 4th collective on world; its
        // completion carries the same sequence number.
        let ia = calls(ev, "MPI_Iallreduce")[0];
        assert_eq!(ia.seq, Some(4));
        let done = ev.iter().find(|e| e.kind == Kind::Completion && &*e.call == "MPI_Iallreduce").unwrap();
        assert_eq!((done.seq, done.request), (Some(4), ia.request));
        // Scatter: the send side counts only at the root.
        let sc = calls(ev, "MPI_Scatter")[0];
        let expect = if r == 3 { Some(8) } else { None };
        assert_eq!((sc.bytes, sc.recv_bytes, sc.root, sc.seq), (expect, Some(8), Some(3), Some(5)));
        let dups: Vec<u64> = calls(ev, "MPI_Comm_dup").iter().map(|e| e.new_comm.unwrap()).collect();
        assert_ne!(dups[0], dups[1]);
        assert_eq!(calls(ev, "MPI_Barrier")[0].comm, Some(dups[1]));
        let cart = calls(ev, "MPI_Cart_create")[0];
        assert_eq!(cart.comm, Some(dups[0]));
        assert_eq!(calls(ev, "MPI_Bcast")[0].comm, cart.new_comm);
        assert_eq!(calls(ev, "MPI_Bcast")[0].root, Some(1));
    }
    // Ids agree across ranks: every rank names the same dups, cart, inter, merged.
    let ids = |name: &str| -> Vec<Vec<u64>> {
        (0..4).map(|r| calls(t.rank_events(r), name).iter().map(|e| e.new_comm.unwrap()).collect()).collect()
    };
    for name in ["MPI_Comm_dup", "MPI_Cart_create", "MPI_Intercomm_create", "MPI_Intercomm_merge"] {
        let v = ids(name);
        assert!(v.iter().all(|x| x == &v[0]), "{name}: {v:?}");
    }
    let inter = &t.comms[&ids("MPI_Intercomm_create")[0][0]];
    assert!(inter.inter);
    let mut groups = vec![inter.members.clone(), inter.remote.clone()];
    groups.sort();
    assert_eq!(groups, vec![vec![0, 2], vec![1, 3]]);
    let merged = &t.comms[&ids("MPI_Intercomm_merge")[0][0]];
    assert_eq!(merged.parent, Some(inter.id));
    assert_eq!(merged.members, vec![0, 2, 1, 3]);
    // The communicator of MPI_Comm_idup is registered at its first use, with
    // the same id everywhere.
    let idup: Vec<Option<u64>> = (0..4).map(|r| calls(t.rank_events(r), "MPI_Barrier")[1].comm).collect();
    assert!(idup.iter().all(|c| c.is_some() && *c == idup[0]), "{idup:?}");
    assert_eq!(t.comms[&idup[0].unwrap()].members, vec![0, 1, 2, 3]);
    // The message across the intercommunicator: world rank 0 to world rank 1.
    let s = calls(t.rank_events(0), "MPI_Send")[0];
    assert_eq!((s.peer, s.comm), (Some(1), Some(inter.id)));
    let r = calls(t.rank_events(1), "MPI_Recv")[0];
    assert_eq!((r.peer, r.seq), (Some(0), Some(1)));
}

#[test]
fn rma_targets_as_world_ranks() {
    check_rma(&traced("rma", "rma.c", 3, &[]));
}

fn check_rma(t: &Trace) {
    let puts = calls(t.rank_events(0), "MPI_Put");
    assert_eq!(
        puts.iter().map(|e| (e.peer, e.bytes, e.comm)).collect::<Vec<_>>(),
        vec![(Some(1), Some(12), Some(0)), (Some(2), Some(12), Some(0))]
    );
    for r in 0..3 {
        let ev = t.rank_events(r);
        assert_eq!(count(ev, "MPI_Win_fence"), 3);
        let g = calls(ev, "MPI_Get")[0];
        assert_eq!((g.peer, g.bytes, g.comm), (Some(0), Some(4), Some(0)));
        assert_eq!(calls(ev, "MPI_Win_free")[0].comm, Some(0));
    }
}

/// Unmounts the small file system of `full_trace_dir_...` however the test ends.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A trace directory on a 6 MiB tmpfs fills up: the program runs to its
/// end, the shim says so, and what fit is still readable. Skipped where
/// mounting is not allowed.
#[test]
fn full_trace_dir_leaves_the_program_running() {
    let dir = common::scratch("full");
    let exe = common::compile("bench.c", &dir);
    let mnt = dir.join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=6m", "tmpfs"])
        .arg(&mnt)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("cannot mount a tmpfs here: skipped");
        return;
    }
    let _guard = Mount(mnt.clone());
    let tdir = mnt.join("trace");
    // 200000 calls need ~19 MB of journal: the first 4 MB chunk fits.
    let out = common::run(1, &exe, &["200000", "0"], &tdir, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("call_ns"));
    assert!(err.contains("No space left on device"), "{err}");
    // The journal that fit is readable; no temporary files are left.
    let t = Trace::open(&tdir).unwrap();
    let n = count(t.rank_events(0), "MPI_Comm_rank");
    assert!(n > 30_000 && n < 200_000, "{n}");
    let leftovers: Vec<_> = std::fs::read_dir(&tdir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

// The same programs and assertions on Debian's Open MPI 4.1, whose ABI
// (pointer handles, its own constants and MPI_Status) the shim translates.

#[test]
fn openmpi_p2p_collectives_comms_regions_pcontrol() {
    check_p2p(&traced_on(Mpi::OpenMpi, "p2p-ompi", "p2p.c", 3, &[]), "Open MPI", "Open MPI");
}

#[test]
fn openmpi_requests_persistent_any_some_cancel_sendrecv() {
    check_requests_of(&traced_on(Mpi::OpenMpi, "requests-ompi", "requests.c", 2, &[]), false, false);
}

#[test]
fn openmpi_collectives_and_communicators_on_four_ranks() {
    check_coll(&traced_on(Mpi::OpenMpi, "coll-ompi", "coll.c", 4, &[]));
}

#[test]
fn openmpi_rma_targets_as_world_ranks() {
    check_rma(&traced_on(Mpi::OpenMpi, "rma-ompi", "rma.c", 3, &[]));
}

#[test]
fn openmpi_thread_multiple_journals_per_thread() {
    check_threads(&traced_on(Mpi::OpenMpi, "threads-ompi", "threads.c", 2, &[]));
}

#[test]
fn openmpi_clock_sync_ping_pong() {
    check_clock(&traced_on(Mpi::OpenMpi, "clock-ompi", "p2p.c", 2, &[("MPITRACE_CLOCK_PER_RANK", "1")]));
}

#[test]
fn openmpi_crash_sigkill() {
    crash_case_on(Mpi::OpenMpi, "kill");
}

#[test]
fn openmpi_crash_mpi_abort() {
    let t = crash_case_on(Mpi::OpenMpi, "abort");
    let last = t.rank_events(1).iter().rev().find(|e| e.kind == Kind::Call).unwrap();
    assert_eq!(&*last.call, "MPI_Abort");
    assert_eq!((last.aux, last.t_end), (Some(42), None));
}

// The same programs and assertions, built against the MPI-5 standard ABI
// (`mpicc_abi`, i.e. `mpicc -mpi-abi`: `mpi_abi.h`, `libmpi_abi.so.1`) and
// run on this project's libmpi_abi.so, whose ABI the shim translates.

#[test]
fn stdabi_p2p_collectives_comms_regions_pcontrol() {
    check_p2p(&traced_on(Mpi::StdAbi, "p2p-std", "p2p.c", 3, &[]), "mpi-core", "standard");
}

#[test]
fn stdabi_requests_persistent_any_some_cancel_sendrecv() {
    check_requests_of(&traced_on(Mpi::StdAbi, "requests-std", "requests.c", 2, &[]), false, true);
}

/// The same with the statuses' count and cancelled flag asked of the
/// library (`MPI_Get_count_c`, `MPI_Test_cancelled`) and set back through
/// it, as on a library whose status layout the shim does not know.
#[test]
fn stdabi_requests_with_statuses_through_the_library() {
    let env = [("MPITRACE_STD_STATUS", "library")];
    check_requests_of(&traced_on(Mpi::StdAbi, "requests-std-ask", "requests.c", 2, &env), false, true);
}

#[test]
fn stdabi_partitioned_rounds() {
    check_partitioned(&traced_on(Mpi::StdAbi, "partitioned-std", "partitioned.c", 2, &[]));
}

#[test]
fn stdabi_sessions_without_mpi_init() {
    check_sessions(&traced_on(Mpi::StdAbi, "sessions-std", "sessions.c", 2, &[]));
}

#[test]
fn stdabi_collectives_and_communicators_on_four_ranks() {
    check_coll(&traced_on(Mpi::StdAbi, "coll-std", "coll.c", 4, &[]));
}

#[test]
fn stdabi_rma_targets_as_world_ranks() {
    check_rma(&traced_on(Mpi::StdAbi, "rma-std", "rma.c", 3, &[]));
}

#[test]
fn stdabi_thread_multiple_journals_per_thread() {
    check_threads(&traced_on(Mpi::StdAbi, "threads-std", "threads.c", 2, &[]));
}

#[test]
fn stdabi_clock_sync_ping_pong() {
    check_clock(&traced_on(Mpi::StdAbi, "clock-std", "p2p.c", 2, &[("MPITRACE_CLOCK_PER_RANK", "1")]));
}

#[test]
fn stdabi_crash_sigkill() {
    crash_case_on(Mpi::StdAbi, "kill");
}

#[test]
fn stdabi_crash_mpi_abort() {
    let t = crash_case_on(Mpi::StdAbi, "abort");
    let last = t.rank_events(1).iter().rev().find(|e| e.kind == Kind::Call).unwrap();
    assert_eq!(&*last.call, "MPI_Abort");
    assert_eq!((last.aux, last.t_end), (Some(42), None));
}

/// `mpitrace record` of a program built against the standard ABI, on this
/// project's `mpirun` and `libmpi_abi.so`, then `mpitrace report --format
/// json`: exact call counts, every message matched, the library and the
/// ABI named.
#[test]
fn stdabi_recorded_by_mpitrace_record_and_reported() {
    let mpitrace = common::mpitrace();
    let (_, mpirun) = common::std_abi_mpi();
    let dir = common::scratch("record-std");
    let exe = common::compile_on(Mpi::StdAbi, "p2p.c", &dir);
    let tdir = dir.join("trace");
    let out = std::process::Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(&mpitrace)
        .arg("record")
        .arg("-o")
        .arg(&tdir)
        .arg("--")
        .arg(&mpirun)
        .args(["-n", "3"])
        .arg(&exe)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("3 ranks of"), "{err}");
    let t = Trace::open(&tdir).unwrap();
    assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!((t.meta.mpi_abi.as_str(), t.meta.written_by.as_str()), ("standard", "record"));
    let sends = check_matching(&t);
    // p2p.c on 3 ranks: ranks 0 and 1 ping-pong 5 times, ranks 1 and 2 send
    // to rank 0 with ANY_SOURCE, every rank one Isend in a ring (matched
    // by its Irecv's completion).
    assert_eq!(sends, 5 + 5 + 2 + 3);
    let report =
        std::process::Command::new(&mpitrace).arg("report").arg(&tdir).args(["--format", "json"]).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let r: serde_json::Value = serde_json::from_slice(&report.stdout).expect("JSON report");
    let m = &r["messages"];
    assert_eq!((m["sends"].as_u64(), m["receives"].as_u64()), (Some(sends as u64), Some(sends as u64)), "{m}");
    assert_eq!(m["matched"].as_u64(), Some(sends as u64), "{m}");
    assert_eq!((m["unmatched_sends"].as_u64(), m["unmatched_receives"].as_u64()), (Some(0), Some(0)));
    assert!(r["trace"]["mpi_library"].as_str().unwrap().contains("mpi-core"), "{}", r["trace"]);
    assert_eq!(r["trace"]["mpi_abi"], "standard");
    let calls = |name: &str| {
        r["profile"]["calls"].as_array().unwrap().iter().find(|c| c["name"] == name).map(|c| c["count"].as_u64())
    };
    assert_eq!(calls("MPI_Send"), Some(Some(12)));
    assert_eq!(calls("MPI_Recv"), Some(Some(12)));
    assert_eq!(calls("MPI_Allreduce"), Some(Some(6)));
    // The text report names the ABI.
    let text = std::process::Command::new(&mpitrace).arg("report").arg(&tdir).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("standard ABI"));
}

// The same on another library of the standard ABI: MPICH 5's
// `libmpi_abi.so.1` (PyPI's `mpich` wheel), programs built with its own
// `mpicc_abi` (its `mpi_abi.h`), run by its hydra `mpiexec`.

#[test]
fn mpich5_stdabi_p2p_collectives_comms_regions_pcontrol() {
    check_p2p(&traced_on(Mpi::Mpich5StdAbi, "p2p-mpich5", "p2p.c", 3, &[]), "MPICH Version:      5.", "standard");
}

/// MPICH 5.0.2, like 4.0, leaves the status of a completed `MPI_Isendrecv`
/// unfilled (zeros, in both of its ABIs, without the shim too): the shim
/// finds that out at start and records those receive halves as on MPICH 4.0.
#[test]
fn mpich5_stdabi_requests_persistent_any_some_cancel_sendrecv() {
    check_requests_of(&traced_on(Mpi::Mpich5StdAbi, "requests-mpich5", "requests.c", 2, &[]), true, true);
}

#[test]
fn mpich5_stdabi_collectives_and_communicators_on_four_ranks() {
    check_coll(&traced_on(Mpi::Mpich5StdAbi, "coll-mpich5", "coll.c", 4, &[]));
}

#[test]
fn mpich5_stdabi_rma_targets_as_world_ranks() {
    check_rma(&traced_on(Mpi::Mpich5StdAbi, "rma-mpich5", "rma.c", 3, &[]));
}

#[test]
fn mpich5_stdabi_crash_sigkill() {
    crash_case_on(Mpi::Mpich5StdAbi, "kill");
}

#[test]
fn mpich5_stdabi_thread_multiple_journals_per_thread() {
    check_threads(&traced_on(Mpi::Mpich5StdAbi, "threads-mpich5", "threads.c", 2, &[]));
}

#[test]
fn mpich5_stdabi_clock_sync_ping_pong() {
    check_clock(&traced_on(Mpi::Mpich5StdAbi, "clock-mpich5", "p2p.c", 2, &[("MPITRACE_CLOCK_PER_RANK", "1")]));
}

// Open MPI 5 (PRRTE and PMIx instead of ORTE; the same ABI): the wheel from
// PyPI that tests/run-all.sh installs.

#[test]
fn openmpi5_p2p_collectives_comms_regions_pcontrol() {
    check_p2p(&traced_on(Mpi::OpenMpi5, "p2p-ompi5", "p2p.c", 3, &[]), "Open MPI v5.", "Open MPI");
}

#[test]
fn openmpi5_requests_persistent_any_some_cancel_sendrecv() {
    check_requests_of(&traced_on(Mpi::OpenMpi5, "requests-ompi5", "requests.c", 2, &[]), false, false);
}

#[test]
fn openmpi5_collectives_and_communicators_on_four_ranks() {
    check_coll(&traced_on(Mpi::OpenMpi5, "coll-ompi5", "coll.c", 4, &[]));
}

#[test]
fn openmpi5_rma_targets_as_world_ranks() {
    check_rma(&traced_on(Mpi::OpenMpi5, "rma-ompi5", "rma.c", 3, &[]));
}

#[test]
fn openmpi5_thread_multiple_journals_per_thread() {
    check_threads(&traced_on(Mpi::OpenMpi5, "threads-ompi5", "threads.c", 2, &[]));
}

#[test]
fn openmpi5_crash_sigkill() {
    crash_case_on(Mpi::OpenMpi5, "kill");
}
