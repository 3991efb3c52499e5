//! The call-tree profile end to end: `pmpi-shim/tests/c/callpath.c`
//! (one `exchange()` helper called from two solvers, rank 1 late into the
//! second) recorded with `mpitrace record --callpath 4` on Debian's MPICH,
//! reported in every format with exact counts and bytes per path and rank,
//! and the wait on the late path only. And hardware counters
//! (`pmpi-shim/tests/c/counters.c`, a known number of instructions per
//! rank) through `mpitrace record --counters` and the report.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use analyzers::calltree::{CallTree, NodeKind, TreeNode};
use analyzers::report::Report;
use common::build_shim;

fn scratch(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let d = exe.parent().unwrap().parent().unwrap().join("mpitrace-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn compile_src(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../pmpi-shim/tests/c/{name}.c"));
    let out = dir.join(name);
    let st = Command::new("mpicc.mpich")
        .env_remove("LD_LIBRARY_PATH")
        .arg("-g")
        .args(flags)
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("mpicc.mpich: {e} (install Debian's mpich and libmpich-dev)"));
    assert!(st.success());
    out
}

fn mpitrace(args: &[&str]) -> Output {
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(env!("CARGO_BIN_EXE_mpitrace"))
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "timed out");
    assert!(out.status.success(), "mpitrace {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn record(name: &str, flags: &[&str], record_flags: &[&str]) -> PathBuf {
    record_src(name, "callpath", flags, record_flags).0
}

/// Records `pmpi-shim/tests/c/<src>.c` on 2 ranks; the trace and mpitrace's output.
fn record_src(name: &str, src: &str, flags: &[&str], record_flags: &[&str]) -> (PathBuf, Output) {
    build_shim();
    let dir = scratch(name);
    let exe = compile_src(&dir, src, flags);
    let trace = dir.join("trace");
    let mut args = vec!["record", "-o", trace.to_str().unwrap()];
    args.extend_from_slice(record_flags);
    args.extend_from_slice(&["--", "mpiexec.mpich", "-n", "2", exe.to_str().unwrap()]);
    let out = mpitrace(&args);
    (trace, out)
}

fn report(trace: &Path) -> Report {
    let out = mpitrace(&["report", "--format", "json", trace.to_str().unwrap()]);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The nodes named `name` whose parent is named `parent`.
fn under<'a>(t: &'a CallTree, parent: &str, name: &str) -> Vec<&'a TreeNode> {
    t.nodes.iter().filter(|n| n.name == name && n.parent.is_some_and(|p| t.nodes[p as usize].name == parent)).collect()
}

fn one<'a>(t: &'a CallTree, parent: &str, name: &str) -> &'a TreeNode {
    let v = under(t, parent, name);
    assert_eq!(v.len(), 1, "{parent} > {name}: {:#?}", t.nodes);
    v[0]
}

fn check_tree(t: &CallTree, what: &str) {
    assert_eq!(t.depth, 4, "{what}");
    // exchange() reached from each solver, its Sendrecv below it.
    let (a, b) = (one(t, "solver_a", "exchange"), one(t, "solver_b", "exchange"));
    for (n, calls, doubles) in [(a, 3u64, 10i64), (b, 5, 100)] {
        assert_eq!(n.kind, Some(NodeKind::Function));
        assert_eq!(n.inclusive.calls, 2 * calls, "{what}: {n:#?}");
        for r in 0..2 {
            assert_eq!(n.by_rank[r].calls, calls, "{what} rank {r}");
            // Each Sendrecv sends and receives `doubles` doubles.
            assert_eq!(n.by_rank[r].bytes, calls as i64 * 2 * 8 * doubles, "{what} rank {r}");
        }
        // The helper makes the calls itself: exclusive = inclusive.
        assert_eq!(n.exclusive, n.inclusive, "{what}");
        assert!(n.at.as_deref().is_some_and(|a| a.starts_with("callpath.c:")), "{what}: {n:?}");
    }
    let leaves: Vec<&TreeNode> = under(t, "exchange", "MPI_Sendrecv");
    assert_eq!(leaves.len(), 2, "{what}");
    assert!(leaves.iter().all(|l| l.kind == Some(NodeKind::Call) && l.at == leaves[0].at), "{what}");
    // solver_a makes one Barrier itself: exclusive of solver_a.
    let sa = one(t, "main", "solver_a");
    assert_eq!(sa.exclusive.calls, 2, "{what}: {sa:?}");
    assert_eq!(sa.inclusive.calls, 2 * 3 + 2, "{what}: {sa:?}");
    assert_eq!(one(t, "solver_a", "MPI_Barrier").inclusive.calls, 2, "{what}");
    // Rank 1 came 50 ms late into solver_b: rank 0 waited there, not in solver_a.
    assert!(b.by_rank[0].wait_ns >= 40_000_000, "{what}: {b:?}");
    assert!(a.by_rank[0].wait_ns < 20_000_000, "{what}: {a:?}");
    assert!(b.by_rank[0].time_ns >= b.by_rank[0].wait_ns, "{what}");
}

#[test]
fn call_tree_separates_the_two_paths_of_one_helper() {
    for (name, flags, rec) in [
        ("ct-O2", &["-O2"][..], &["--callpath", "4"][..]),
        ("ct-O0-fp", &["-O0", "-fno-omit-frame-pointer"][..], &["--callpath", "4", "--unwind", "fp"][..]),
    ] {
        let trace = record(name, flags, rec);
        let r = report(&trace);
        check_tree(&r.call_tree, name);
        // Text, Markdown and HTML show the tree.
        for fmt in ["text", "md", "html"] {
            let out = mpitrace(&["report", "--format", fmt, trace.to_str().unwrap()]);
            let s = String::from_utf8_lossy(&out.stdout);
            assert!(s.contains("Call paths"), "{fmt}");
            let at = |f: &str| s.find(f).unwrap_or_else(|| panic!("{fmt}: no {f} in {s}"));
            // Depth-first: a solver, then its exchange.
            assert!(at("solver_b") < s[at("solver_b")..].find("exchange").map_or(0, |i| i + at("solver_b")), "{fmt}");
            assert!(at("solver_a") > 0, "{fmt}");
            if fmt == "html" {
                // The levels keep their indentation (main > solver > exchange).
                assert!(
                    s.contains("<td class=\"dim\">&nbsp;&nbsp;&nbsp;&nbsp;exchange</td>")
                        || s.contains(">&nbsp;&nbsp;&nbsp;&nbsp;exchange</td>"),
                    "{s}"
                );
            }
        }
    }
}

#[test]
fn no_call_tree_without_paths() {
    let trace = record("ct-off", &["-O2"], &[]);
    let r = report(&trace);
    assert!(r.call_tree.is_empty());
    let out = mpitrace(&["report", "--format", "json", trace.to_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("call_tree"));
    let out = mpitrace(&["report", trace.to_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Call paths"));
}

#[test]
fn counters_per_rank_with_ipc_and_imbalance_or_the_refusal() {
    let (trace, out) = record_src(
        "ct-counters",
        "counters",
        &["-O2"],
        &["--counters", "instructions,cycles,task-clock", "--callpath", "3"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let r = report(&trace);
    let c = &r.counters;
    assert_eq!(c.ranks.len(), 2, "{c:?}");
    let text = String::from_utf8_lossy(&mpitrace(&["report", trace.to_str().unwrap()]).stdout).to_string();
    assert!(text.contains("Hardware counters"), "{text}");
    // Per call path: the compute interval ending at the second barrier
    // (main > MPI_Barrier at its line) holds the loop.
    let src = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pmpi-shim/tests/c/counters.c"))
        .unwrap();
    let line = src.lines().enumerate().filter(|(_, l)| l.contains("MPI_Barrier(")).nth(1).unwrap().0 + 1;
    let t = &r.call_tree;
    assert_eq!(t.counters, c.names);
    let second = t
        .nodes
        .iter()
        .find(|n| n.name == "MPI_Barrier" && n.at.as_deref() == Some(&format!("counters.c:{line}")))
        .unwrap_or_else(|| panic!("no barrier at line {line}: {:#?}", t.nodes));
    if err.contains("counters refused by the kernel") {
        eprintln!("saw: the kernel refused the hardware counters");
        assert_eq!(c.names, ["task-clock"]);
        assert_eq!(c.ipc, None);
        assert!(c.ranks.iter().all(|r| r.values[0] > 0));
        // Most of each rank's CPU time between calls is the loop's.
        for rk in 0..2 {
            let at = second.by_rank[rk].counter(&t.counters, "task-clock").unwrap();
            assert!(at > 0 && at <= c.ranks[rk].values[0], "rank {rk}: {at}");
        }
    } else {
        eprintln!("saw: hardware counters granted");
        assert_eq!(c.names, ["instructions", "cycles", "task-clock"]);
        // 50e6 instructions per rank and rank number, plus the little
        // between the other calls.
        for rc in &c.ranks {
            let want = 50e6 * (rc.rank + 1) as f64;
            assert!((rc.values[0] as f64 - want).abs() / want < 0.02, "{rc:?}");
            assert!(rc.ipc.is_some_and(|i| i > 0.0));
        }
        let spread = &c.spread[0];
        assert_eq!(spread.stats.max_rank, 1);
        assert!((spread.max_over_mean - 4.0 / 3.0).abs() < 0.03, "{spread:?}");
        assert!(text.contains("instructions per cycle"), "{text}");
        for rk in 0..2 {
            let got = second.by_rank[rk].counter(&t.counters, "instructions").unwrap() as f64;
            let want = 50e6 * (rk + 1) as f64;
            assert!((got - want).abs() / want < 0.02, "rank {rk}: {got}");
        }
    }
}
