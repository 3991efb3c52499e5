//! `mpitrace record --hang-after`: planted hangs (tests/c/hang.c) on
//! Debian's MPICH and on this project's MPI; the report names the ranks,
//! calls, peers and call sites, within --hang-after + 2 s of the stall;
//! `--kill-on-hang` ends the job and its trace is readable, and `mpitrace
//! report` names the calls the ranks were in.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::bin_dir;
use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let d = exe.parent().unwrap().parent().unwrap().join("mpitrace-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Builds libmpitrace.so (and for `Ours` the MPI library and mpirun) next
/// to the mpitrace binary, once.
fn build(mpi: Mpi) {
    common::build_shim();
    if mpi == Mpi::Ours {
        common::build_ours();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mpi {
    /// Debian's MPICH (`mpicc.mpich`, hydra's `mpiexec.mpich`).
    Mpich,
    /// This project's mpicc and mpirun.
    Ours,
}

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/hang.c")
}

/// `hang.c:N` of the line holding `marker`.
fn site(marker: &str) -> String {
    let text = std::fs::read_to_string(source()).unwrap();
    let n = text.lines().position(|l| l.contains(marker)).unwrap_or_else(|| panic!("no {marker} in hang.c"));
    format!("hang.c:{}", n + 1)
}

fn compile(mpi: Mpi, dir: &Path) -> PathBuf {
    build(mpi);
    let out = dir.join("hang");
    let cc = match mpi {
        Mpi::Mpich => PathBuf::from("mpicc.mpich"),
        Mpi::Ours => bin_dir().join("mpicc"),
    };
    let st =
        Command::new(&cc).env_remove("LD_LIBRARY_PATH").args(["-O0", "-g"]).arg(source()).arg("-o").arg(&out).status();
    assert!(st.is_ok_and(|s| s.success()), "compiling hang.c with {} failed (Debian package mpich?)", cc.display());
    out
}

fn launcher(mpi: Mpi) -> Vec<String> {
    match mpi {
        Mpi::Mpich => vec!["mpiexec.mpich".into()],
        Mpi::Ours => vec![bin_dir().join("mpirun").display().to_string()],
    }
}

/// `mpitrace record --hang-after 2 --kill-on-hang` of hang.c in `mode` on 4
/// ranks (under a 90 s timeout).
fn record(mpi: Mpi, mode: &str, extra: &[&str]) -> (PathBuf, Output) {
    record_on(mpi, mode, extra, None)
}

/// [`record`], the ranks on "another machine" when `host` is given: in a
/// UTS namespace of their own with that host name (`unshare --uts`, as
/// root), so that `mpitrace` cannot look them up in `/proc` and knows them
/// only from the trace directory, as on a shared file system.
fn record_on(mpi: Mpi, mode: &str, extra: &[&str], host: Option<&str>) -> (PathBuf, Output) {
    let dir = scratch(&format!("hang-{mode}-{mpi:?}{}", host.map(|h| format!("-{h}")).unwrap_or_default()));
    let exe = compile(mpi, &dir);
    let trace = dir.join("trace");
    let out = Command::new("timeout")
        .args(["-k", "5", "90"])
        .arg(env!("CARGO_BIN_EXE_mpitrace"))
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .args(["--hang-after", "2", "--kill-on-hang", "--kill-after", "2"])
        .args(extra)
        .arg("--")
        .args(launcher(mpi))
        // On "another machine" a rank that dies leaves the others waiting
        // (as with a machine that goes down), not ended by the launcher.
        .args(host.map(|_| "-disable-auto-cleanup"))
        .args(["-n", "4"])
        .args(
            host.map(|h| {
                ["unshare", "--uts", "sh", "-c"]
                    .map(String::from)
                    .into_iter()
                    .chain([format!("hostname {h} && exec \"$0\" \"$@\"")])
            })
            .into_iter()
            .flatten(),
        )
        .arg(&exe)
        .arg(mode)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "timed out: {}", String::from_utf8_lossy(&out.stderr));
    (trace, out)
}

/// The hang report of a run that hung and was ended by --kill-on-hang:
/// checks what every such run must show and returns hang.json.
fn hung(trace: &Path, out: &Output) -> Value {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mpitrace: the job hangs"), "{err}");
    assert!(err.contains("--kill-on-hang: ending the job"), "{err}");
    assert_ne!(out.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&std::fs::read(trace.join("hang.json")).unwrap()).unwrap();
    let stalled = v["stalled_s"].as_f64().unwrap();
    assert!((2.0..=4.0).contains(&stalled), "reported {stalled} s after the last call returned, not within 2 + 2 s");
    // The trace was converted and is readable; the killed ranks are partial.
    let t = trace_format::Trace::open(trace).unwrap();
    assert_eq!(t.meta.ranks, 4);
    assert!(!t.is_complete());
    v
}

fn rank(v: &Value, r: usize) -> &Value {
    &v["ranks"][r]
}

fn call_site(v: &Value, r: usize) -> String {
    rank(v, r)["call"]["site"].as_str().unwrap_or("").to_string()
}

/// `mpitrace report` of the killed trace.
fn report(trace: &Path) -> String {
    let out =
        Command::new(env!("CARGO_BIN_EXE_mpitrace")).arg("report").arg(trace).arg("--color=never").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn recv_recv(mpi: Mpi) {
    let (trace, out) = record(mpi, "recvrecv", &[]);
    let v = hung(&trace, &out);
    let at = site("@recvrecv");
    for (r, other) in [(0, 1), (1, 0)] {
        assert_eq!(rank(&v, r)["state"], "in_mpi", "{v:#}");
        assert_eq!(rank(&v, r)["call"]["call"], "MPI_Recv");
        assert_eq!(rank(&v, r)["call"]["peer"], other);
        assert_eq!(rank(&v, r)["call"]["tag"], 7);
        assert_eq!(rank(&v, r)["call"]["count"], 1);
        assert_eq!(rank(&v, r)["call"]["datatype"], "MPI_INT");
        assert_eq!(rank(&v, r)["call"]["comm"], "WORLD");
        assert!(call_site(&v, r).ends_with(&at), "{} is not {at}", call_site(&v, r));
        assert!(rank(&v, r)["call"]["since_s"].as_f64().unwrap() >= 2.0);
        assert_eq!(rank(&v, r)["waits_for"], serde_json::json!([other]));
    }
    let after = site("@after-recvrecv");
    for r in [2, 3] {
        assert_eq!(rank(&v, r)["call"]["call"], "MPI_Barrier", "{v:#}");
        assert!(call_site(&v, r).ends_with(&after));
        assert_eq!(rank(&v, r)["waits_for"], serde_json::json!([0, 1]));
    }
    assert_eq!(v["cycles"].as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(v["cycles"][0]["ranks"], serde_json::json!([0, 1]));
    let text = v["cycles"][0]["text"].as_str().unwrap();
    let expected = "rank 0 waits in MPI_Recv(from 1, tag 7) at ";
    assert!(text.starts_with(expected), "{text}");
    assert!(text.contains(&format!("{at} for rank 1, which waits in MPI_Recv(from 0, tag 7) at ")), "{text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(text), "the deadlock is said on standard error too: {err}");
    let rep = report(&trace);
    assert!(rep.contains("Where the ranks were when the trace ended"), "{rep}");
    assert!(rep.contains("rank 0: in MPI_Recv(from 1, tag 7) at"), "{rep}");
    assert!(rep.contains("rank 3: in MPI_Barrier at"), "{rep}");
    assert!(rep.contains(text.split(" at ").next().unwrap()), "{rep}");
}

fn root_differs(mpi: Mpi) {
    let (trace, out) = record(mpi, "root", &[]);
    if !trace.join("hang.json").exists() {
        // This project's MPI completes the gather (each rank that believes
        // it is the root reads the shared segment): no hang to report, and
        // none reported; `check --correctness` finds the differing root.
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(mpi, Mpi::Ours, "MPICH hangs in this gather: {err}");
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(!err.contains("hangs"), "{err}");
        let chk =
            Command::new(env!("CARGO_BIN_EXE_mpitrace")).args(["check", "--correctness"]).arg(&trace).output().unwrap();
        let text = String::from_utf8_lossy(&chk.stdout);
        assert_eq!(chk.status.code(), Some(1), "{text}");
        assert!(text.contains("the roots differ: ranks 0-2 give root 0; rank 3 gives root 3"), "{text}");
        assert!(text.contains(&site("@root")), "{text}");
        return;
    }
    let v = hung(&trace, &out);
    assert_eq!(rank(&v, 3)["state"], "in_mpi", "{v:#}");
    assert_eq!(rank(&v, 3)["call"]["call"], "MPI_Gather");
    assert_eq!(rank(&v, 3)["call"]["root"], 3);
    assert!(call_site(&v, 3).ends_with(&site("@root")), "{v:#}");
    let mism = v["mismatches"].as_array().unwrap();
    assert_eq!(mism.len(), 1, "{v:#}");
    let m = mism[0].as_str().unwrap();
    assert!(m.contains("on WORLD (MPI_Gather): the roots differ: ranks 0-2 give root 0; rank 3 gives root 3"), "{m}");
    // Ranks that went on are in the barrier after it, waiting for the
    // ranks still in the gather, or still in the gather themselves.
    for r in 0..3 {
        let call = rank(&v, r)["call"]["call"].as_str().unwrap_or("").to_string();
        match call.as_str() {
            "MPI_Barrier" => assert!(call_site(&v, r).ends_with(&site("@after-root"))),
            "MPI_Gather" => assert!(call_site(&v, r).ends_with(&site("@root"))),
            other => panic!("rank {r} in {other}: {v:#}"),
        }
    }
}

fn never_enters_barrier(mpi: Mpi) {
    let (trace, out) = record(mpi, "barrier", &[]);
    let v = hung(&trace, &out);
    let at = site("@barrier");
    for r in [0, 1, 3] {
        assert_eq!(rank(&v, r)["call"]["call"], "MPI_Barrier", "{v:#}");
        assert!(call_site(&v, r).ends_with(&at), "{v:#}");
        assert_eq!(rank(&v, r)["waits_for"], serde_json::json!([2]));
    }
    assert_eq!(rank(&v, 2)["state"], "computing", "{v:#}");
    assert_eq!(rank(&v, 2)["last_call"], "MPI_Barrier");
    assert_eq!(v["not_in_mpi"], serde_json::json!([2]));
    let f = v["findings"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()).collect::<Vec<_>>();
    let want = "ranks 0, 1, 3 wait in MPI_Barrier at ";
    assert!(
        f.iter()
            .any(|f| f.starts_with(want) && f.contains(&format!("{at} for rank 2, which is not in MPI (computing"))),
        "{f:#?}"
    );
}

fn rank_died(mpi: Mpi) {
    let (trace, out) = record(mpi, "dead", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    let at = site("@dead");
    if trace.join("hang.json").exists() {
        // The library let the others wait: the hang report names the dead rank.
        let v = hung(&trace, &out);
        assert_eq!(rank(&v, 2)["state"], "dead", "{v:#}");
        for r in [0, 1, 3] {
            assert_eq!(rank(&v, r)["call"]["call"], "MPI_Recv", "{v:#}");
            assert_eq!(rank(&v, r)["call"]["peer"], 2);
            assert!(call_site(&v, r).ends_with(&at));
        }
        let f = v["findings"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert!(
            f.iter().any(|f| f.starts_with("ranks 0, 1, 3 wait in MPI_Recv(from 2, tag 3) at")
                && f.contains("for rank 2, which is dead")),
            "{f:#?}"
        );
    } else {
        // The library ended the job when the rank died: the report of the
        // trace says where each rank was.
        let rep = report(&trace);
        assert!(rep.contains("Where the ranks were when the trace ended"), "{rep}");
        assert!(rep.contains("rank 2: not in MPI when the trace ended"), "{rep}");
        assert!(rep.contains("MPI_Recv(from 2, tag 3) at"), "{rep}");
        assert!(rep.contains(&at), "{rep}");
    }
}

/// A rank that dies on a machine `mpitrace` cannot look into: named dead
/// all the same (its lock on its side file is gone), never "computing".
/// This project's MPI only: with `-disable-auto-cleanup` the others go on
/// (here into a deadlock of their own), where MPICH's hydra ends the job.
fn rank_died_elsewhere(mpi: Mpi) {
    let (trace, out) = record_on(mpi, "dead-aside", &[], Some("elsewhere"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(trace.join("hang.json").exists(), "no hang reported: {err}");
    let v = hung(&trace, &out);
    assert_eq!(rank(&v, 2)["state"], "dead", "{v:#}");
    assert_eq!(rank(&v, 2)["process"], "dead", "{v:#}");
    assert_eq!(rank(&v, 2)["host"], "elsewhere", "{v:#}");
    assert!(err.contains("rank 2: dead: its process is gone"), "{err}");
    for r in [0, 1, 3] {
        assert_eq!(rank(&v, r)["state"], "in_mpi", "{v:#}");
        assert!(call_site(&v, r).ends_with(&site("@aside")), "{v:#}");
    }
}

/// A rank computing on a machine `mpitrace` cannot look into: alive (it
/// holds its lock), so computing, not dead.
fn computing_elsewhere(mpi: Mpi) {
    let (trace, out) = record_on(mpi, "barrier", &[], Some("elsewhere"));
    let v = hung(&trace, &out);
    assert_eq!(rank(&v, 2)["state"], "computing", "{v:#}");
    assert_eq!(rank(&v, 2)["process"], "alive", "{v:#}");
    assert_eq!(rank(&v, 2)["host"], "elsewhere", "{v:#}");
}

fn no_hang(mpi: Mpi) {
    let dir = scratch(&format!("hang-ok-{mpi:?}"));
    let exe = compile(mpi, &dir);
    let trace = dir.join("trace");
    let out = Command::new("timeout")
        .args(["-k", "5", "90"])
        .arg(env!("CARGO_BIN_EXE_mpitrace"))
        .args(["record", "-o"])
        .arg(&trace)
        .args(["--hang-after", "1", "--kill-on-hang", "--"])
        .args(launcher(mpi))
        .args(["-n", "4"])
        .arg(&exe)
        .arg("ok")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "ranks computing for 3 s are not a hang: {err}");
    assert!(!err.contains("hangs") && !trace.join("hang.json").exists(), "{err}");
}

#[test]
fn recv_recv_deadlock_mpich() {
    recv_recv(Mpi::Mpich);
}
#[test]
fn recv_recv_deadlock_ours() {
    recv_recv(Mpi::Ours);
}
#[test]
fn collective_root_differs_mpich() {
    root_differs(Mpi::Mpich);
}
#[test]
fn collective_root_differs_ours() {
    root_differs(Mpi::Ours);
}
#[test]
fn rank_never_enters_barrier_mpich() {
    never_enters_barrier(Mpi::Mpich);
}
#[test]
fn rank_never_enters_barrier_ours() {
    never_enters_barrier(Mpi::Ours);
}
#[test]
fn rank_died_mpich() {
    rank_died(Mpi::Mpich);
}
#[test]
fn rank_died_ours() {
    rank_died(Mpi::Ours);
}
#[test]
fn computing_is_no_hang_mpich() {
    no_hang(Mpi::Mpich);
}
#[test]
fn computing_is_no_hang_ours() {
    no_hang(Mpi::Ours);
}
#[test]
fn rank_died_on_another_machine_ours() {
    rank_died_elsewhere(Mpi::Ours);
}
#[test]
fn computing_on_another_machine_mpich() {
    computing_elsewhere(Mpi::Mpich);
}
#[test]
fn computing_on_another_machine_ours() {
    computing_elsewhere(Mpi::Ours);
}
