//! Call paths (`MPITRACE_CALLPATH`): `tests/c/callpath.c` calls one
//! `exchange()` helper from two solvers; every recorded path, symbolized,
//! must name the helper's real caller, with exact counts, whatever the
//! optimization level and frame pointers (DWARF unwinding), and with the
//! frame-pointer walk for code built with frame pointers.

mod common;

use std::collections::BTreeMap;

use common::Mpi;

use trace_format::{Event, Trace};

/// Runs `callpath.c` built with `flags` on 2 ranks with `env`; per rank, the
/// (call, first `keep` functions of its path) of every call row, counted.
fn paths(name: &str, flags: &[&str], env: &[(&str, &str)], keep: usize) -> Vec<BTreeMap<(String, Vec<String>), usize>> {
    paths_on(Mpi::Mpich, name, flags, env, keep)
}

/// [`paths`] on `mpi`.
fn paths_on(
    mpi: Mpi,
    name: &str,
    flags: &[&str],
    env: &[(&str, &str)],
    keep: usize,
) -> Vec<BTreeMap<(String, Vec<String>), usize>> {
    let dir = common::scratch(name);
    let exe = common::compile_with_on(mpi, "callpath.c", &dir, flags, "callpath");
    let tdir = dir.join("trace");
    let out = common::run_on(mpi, 2, &exe, &[], &tdir, env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t = Trace::open(&tdir).unwrap();
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    let mut sym = trace_format::Symbolizer::with_debug_dir(None);
    (0..2)
        .map(|r| {
            let meta = t.ranks[&r].meta.as_ref().unwrap();
            let mut seen = BTreeMap::new();
            for e in t.rank_events(r).iter().filter(|e| e.kind == trace_format::record::Kind::Call) {
                let funcs = functions(&mut sym, meta, e, keep);
                *seen.entry((e.call.to_string(), funcs)).or_insert(0) += 1;
            }
            seen
        })
        .collect()
}

/// The functions of `e`'s call path (its site alone without one), innermost first.
fn functions(sym: &mut trace_format::Symbolizer, meta: &trace_format::RankMeta, e: &Event, keep: usize) -> Vec<String> {
    let frames = match e.path {
        Some(p) => meta.paths[p as usize].clone(),
        None => vec![e.site.unwrap_or(0)],
    };
    assert_eq!(frames.first().copied(), e.site, "a path starts at the call's site");
    frames.iter().take(keep).map(|&a| sym.site(meta, a).function.unwrap_or_else(|| "?".into())).collect()
}

fn v(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The known answer: each rank calls exchange() 3 times from solver_a and
/// 5 times from solver_b, and MPI_Barrier once from solver_a.
fn check_known(got: &[BTreeMap<(String, Vec<String>), usize>], what: &str) {
    for (r, seen) in got.iter().enumerate() {
        // Calls of `call` whose path starts with the functions `p`.
        let n = |call: &str, p: &[&str]| -> usize {
            seen.iter().filter(|((c, f), _)| c == call && f.starts_with(&v(p))).map(|(_, n)| n).sum()
        };
        assert_eq!(n("MPI_Sendrecv", &["exchange", "solver_a", "main"]), 3, "{what} rank {r}: {seen:?}");
        assert_eq!(n("MPI_Sendrecv", &["exchange", "solver_b", "main"]), 5, "{what} rank {r}: {seen:?}");
        assert_eq!(n("MPI_Barrier", &["solver_a", "main"]), 1, "{what} rank {r}: {seen:?}");
        let sendrecvs: usize = seen.iter().filter(|((c, _), _)| c == "MPI_Sendrecv").map(|(_, n)| n).sum();
        assert_eq!(sendrecvs, 8, "{what} rank {r}: no other Sendrecv path: {seen:?}");
    }
}

#[test]
fn dwarf_paths_at_every_optimization_level() {
    for (name, flags) in [
        ("cp-O0-fp", &["-O0", "-fno-omit-frame-pointer"][..]),
        ("cp-O0", &["-O0"][..]),
        ("cp-O2-fp", &["-O2", "-fno-omit-frame-pointer"][..]),
        ("cp-O2", &["-O2", "-fomit-frame-pointer"][..]),
    ] {
        check_known(&paths(name, flags, &[("MPITRACE_CALLPATH", "4")], 3), name);
    }
}

#[test]
fn frame_pointer_paths() {
    for (name, flags) in
        [("cpfp-O0", &["-O0", "-fno-omit-frame-pointer"][..]), ("cpfp-O2", &["-O2", "-fno-omit-frame-pointer"][..])]
    {
        let env = [("MPITRACE_CALLPATH", "4"), ("MPITRACE_UNWIND", "fp")];
        check_known(&paths(name, flags, &env, 3), name);
    }
    // Without frame pointers the walk is wrong or short, but never faults:
    // the program runs, and every path still starts at the call's site.
    let got = paths(
        "cpfp-O2-nofp",
        &["-O2", "-fomit-frame-pointer"],
        &[("MPITRACE_CALLPATH", "8"), ("MPITRACE_UNWIND", "fp")],
        1,
    );
    for seen in &got {
        let sr: usize =
            seen.iter().filter(|((c, f), _)| c == "MPI_Sendrecv" && f == &v(&["exchange"])).map(|(_, n)| n).sum();
        assert_eq!(sr, 8, "{seen:?}");
    }
}

#[test]
fn no_paths_by_default() {
    let got = paths("cp-off", &["-O2"], &[], 1);
    for seen in &got {
        assert_eq!(seen.get(&("MPI_Sendrecv".to_string(), v(&["exchange"]))), Some(&8), "{seen:?}");
    }
    let t = Trace::open(&common::profile_dir().join("mpitrace-tests").join("cp-off").join("trace")).unwrap();
    for r in 0..2 {
        assert!(t.rank_events(r).iter().all(|e| e.path.is_none()));
        assert!(t.ranks[&r].meta.as_ref().unwrap().paths.is_empty());
    }
}

/// A run whose journals are not converted (as after a crash): the paths
/// come from the side file, and the records name them.
#[test]
fn paths_from_journals() {
    let got = paths("cp-journals", &["-O2"], &[("MPITRACE_CALLPATH", "4"), ("MPITRACE_NO_CONVERT", "1")], 3);
    check_known(&got, "journals");
    let dir = common::profile_dir().join("mpitrace-tests").join("cp-journals").join("trace");
    assert!(!dir.join("events").exists() || std::fs::read_dir(dir.join("events")).unwrap().next().is_none());
}

/// Under Open MPI the wrapper is reached through the translation layer of
/// its ABI: one more frame of the shim's below the call site.
#[test]
fn openmpi_dwarf_paths() {
    let env = [("MPITRACE_CALLPATH", "4")];
    check_known(&paths_on(Mpi::OpenMpi, "cp-ompi-O2", &["-O2"], &env, 3), "Open MPI -O2");
}

/// `MPI_THREAD_MULTIPLE` (`tests/c/threads.c`, two threads per rank
/// sending from `work`): paths are interned per rank from both threads,
/// each starts in `work`, goes on into the C library's thread start
/// (`start_thread`, `clone3`: named only where libc's debug symbols are
/// installed, so told by their module) and ends there, never at a zero
/// address.
#[test]
fn paths_of_threads() {
    let dir = common::scratch("cp-threads");
    let exe = common::compile_with("threads.c", &dir, &["-O2"], "threads");
    let tdir = dir.join("trace");
    let out = common::run(2, &exe, &[], &tdir, &[("MPITRACE_CALLPATH", "6")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t = Trace::open(&tdir).unwrap();
    let mut sym = trace_format::Symbolizer::with_debug_dir(None);
    let meta = t.ranks[&0].meta.as_ref().unwrap();
    let sends: Vec<&Event> = t.rank_events(0).iter().filter(|e| e.is_call("MPI_Send")).collect();
    assert_eq!(sends.len(), 100);
    let threads: std::collections::BTreeSet<i32> = sends.iter().map(|e| e.thread).collect();
    assert_eq!(threads.len(), 2, "sent from two threads");
    for e in sends {
        let frames = &meta.paths[e.path.expect("a path") as usize];
        assert!(frames.iter().all(|&a| a != 0), "{frames:x?}");
        let f = functions(&mut sym, meta, e, 1);
        assert_eq!(f[0], "work", "{f:?}");
        assert!(frames.len() >= 3, "{frames:x?}");
        for &a in &frames[1..] {
            let module = meta.locate(a).map(|m| m.0).unwrap_or("");
            assert!(module.contains("libc.so"), "{a:#x} in {module:?}");
        }
    }
}
