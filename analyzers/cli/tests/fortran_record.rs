//! Fortran programs recorded with `mpitrace record`: each Fortran MPI call
//! exactly once, with its `.f90` call site, through `mpif.h`, `use mpi` and
//! `use mpi_f08`, on Debian's Open MPI (whose Fortran layers call `PMPI_X`
//! directly, so the shim records the Fortran procedures themselves), on
//! Debian's MPICH (whose `mpif.h` and `use mpi` call the C `MPI_X` but for
//! the attribute calls, and whose `mpi_f08` calls `PMPI_X`) and on this
//! project's library (whose Fortran layer calls the C `MPI_X`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use analyzers::report::Report;
use common::{bin_dir, build_ours, build_shim};
use trace_format::record::Kind;
use trace_format::{Event, Trace};

/// `pmpi-shim/tests/fortran/<name>.F90`.
fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../pmpi-shim/tests/fortran/{name}.F90"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lib {
    OpenMpi,
    Mpich,
    /// This project's library (its `mpifort` and `mpirun`).
    Ours,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binding {
    MpifH,
    UseMpi,
    F08,
}

/// Compiles mixed.F90 for `mpi` and `binding`, records it on 3 ranks with
/// `mpitrace record`, and returns the trace.
fn record(mpi: Lib, binding: Binding) -> (Trace, PathBuf, PathBuf) {
    record_program("mixed", 3, mpi, binding, "total 3")
}

/// Compiles `pmpi-shim/tests/fortran/<name>.F90`, records it on `n` ranks
/// and checks that it printed `expect` (its own checks passed: a failed
/// one is a `STOP` with a message on stderr).
fn record_program(name: &str, n: usize, mpi: Lib, binding: Binding, expect: &str) -> (Trace, PathBuf, PathBuf) {
    record_with(name, n, mpi, binding, &[], expect)
}

/// [`record_program`], compiled with the preprocessor definitions `defines` too.
fn record_with(
    name: &str,
    n: usize,
    mpi: Lib,
    binding: Binding,
    defines: &[&str],
    expect: &str,
) -> (Trace, PathBuf, PathBuf) {
    build_shim();
    let dir = bin_dir().join("mpitrace-fortran-tests").join(format!("{name}-{mpi:?}-{binding:?}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ours = bin_dir().join("mpifort");
    let (fc, packages) = match mpi {
        Lib::OpenMpi => ("mpif90.openmpi", "openmpi-bin libopenmpi-dev gfortran"),
        Lib::Mpich => ("mpif90.mpich", "mpich libmpich-dev gfortran"),
        Lib::Ours => {
            build_ours();
            (ours.to_str().unwrap(), "gfortran")
        }
    };
    let define: &[&str] = match binding {
        Binding::MpifH => &[],
        Binding::UseMpi => &["-DUSE_MPI"],
        Binding::F08 => &["-DF08"],
    };
    let exe = dir.join(name);
    let out = Command::new(fc)
        .env_remove("LD_LIBRARY_PATH")
        .args(["-O0", "-g", "-w"])
        .args(define)
        .args(defines)
        .arg(source(name))
        .arg("-o")
        .arg(&exe)
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|e| panic!("{fc}: {e} (install {packages})"));
    assert!(out.status.success(), "compiling {name}.F90: {}", String::from_utf8_lossy(&out.stderr));
    let trace = dir.join("trace");
    let mut cmd = Command::new(bin_dir().join("mpitrace"));
    cmd.env_remove("LD_LIBRARY_PATH").arg("record").arg("-o").arg(&trace).args(["--", "timeout", "-k", "5", "120"]);
    match mpi {
        Lib::OpenMpi => cmd.args(["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"]),
        Lib::Mpich => cmd.arg("mpiexec.mpich"),
        Lib::Ours => cmd.arg(bin_dir().join("mpirun")),
    };
    let out: Output = cmd.args(["-n", &n.to_string()]).arg(&exe).output().expect("mpitrace record");
    assert_ne!(out.status.code(), Some(124), "timed out: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(expect) && !stderr.contains("STOP"), "{stdout}\n{stderr}");
    (Trace::open(&trace).unwrap(), trace, exe)
}

/// The line of `<name>.F90` holding `text` (each call is on its own line).
fn line_of(name: &str, text: &str) -> u32 {
    let src = std::fs::read_to_string(source(name)).unwrap();
    let hits: Vec<usize> = src.lines().enumerate().filter(|(_, l)| l.contains(text)).map(|(i, _)| i + 1).collect();
    assert_eq!(hits.len(), 1, "{text:?} in {name}.F90");
    hits[0] as u32
}

/// What the executable says about its calls: for each MPI procedure (by
/// its lower-case name), the return addresses of its `call` instructions in
/// address order (program order at -O0), and the lines of `<name>.F90` that
/// have a row in the line table.
struct Binary {
    returns: Vec<(String, u64)>,
    lines: Vec<u32>,
}

fn objdump(exe: &Path, what: &str) -> String {
    let out = Command::new("objdump").arg(what).arg(exe).output().expect("objdump (install binutils)");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn binary(exe: &Path, name: &str) -> Binary {
    let mut returns = Vec::new();
    let text = objdump(exe, "-d");
    let mut pending: Option<String> = None;
    for l in text.lines() {
        let addr = l.trim_start().split(':').next().and_then(|a| u64::from_str_radix(a, 16).ok());
        if let (Some(name), Some(a)) = (pending.take(), addr) {
            returns.push((name, a));
        }
        // `call 1110 <mpi_irecv_f08_@plt>`, `<mpi_irecv_@plt>`
        if let Some(callee) = l.split("call").nth(1).and_then(|c| c.split('<').nth(1)) {
            let callee = callee.trim_end_matches(">").trim_end_matches("@plt");
            // mpif.h's `mpi_send_`, mpi_f08's `mpi_send_f08_`, MPICH's with
            // descriptors `mpi_send_f08ts_` and large counts `..._large_`.
            let suffixes = ["_f08ts_large_", "_f08_large_", "_f08ts_", "_f08_", "_"];
            if let Some(base) = suffixes.iter().find_map(|s| callee.strip_suffix(s)) {
                if base.starts_with("mpi_") {
                    pending = Some(base.to_string());
                }
            }
        }
    }
    let lines = objdump(exe, "--dwarf=decodedline")
        .lines()
        .filter(|l| l.starts_with(&format!("{name}.F90")))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect();
    Binary { returns, lines }
}

/// The `aux` of the first row of `call` (the level of `MPI_Pcontrol`).
fn call_aux(calls: &[&Event], call: &str) -> Option<i32> {
    calls.iter().find(|e| &*e.call == call).and_then(|e| e.aux)
}

/// Checks that each of `calls` is the call of `program` (procedure, text of
/// its line in `<name>.F90`) at the same position, with the program's own
/// call instruction as its site.
fn check_sites(
    sym: &mut trace_format::Symbolizer,
    meta: &trace_format::RankMeta,
    bin: &Binary,
    name: &str,
    calls: &[&Event],
    program: &[(&str, &str)],
) {
    let rank = meta.process.rank;
    let names: Vec<&str> = calls.iter().map(|e| &*e.call).collect();
    assert_eq!(names, program.iter().map(|(c, _)| *c).collect::<Vec<_>>(), "{name} rank {rank}");
    for (e, (call, text)) in calls.iter().zip(program) {
        let s = sym.site(meta, e.site.unwrap());
        let file = s.file.as_deref().unwrap_or("?").rsplit('/').next().unwrap().to_string();
        assert_eq!(file, format!("{name}.F90"), "rank {rank} {call}");
        // The site is the program's own call instruction of this procedure:
        // the k-th in address order if its line is the k-th with a `call` of
        // it (program order at -O0; a call repeated by a loop has one); the
        // symbolizer gives the byte before its return address.
        let line = line_of(name, text);
        // A large-count row (`MPI_Send_c`) is a call of the generic name.
        let call = call.strip_suffix("_c").unwrap_or(call);
        let needle = format!("call {call}(");
        let k = std::fs::read_to_string(source(name))
            .unwrap()
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with(&needle))
            .position(|(i, _)| i + 1 == line as usize)
            .unwrap_or_else(|| panic!("{text:?} is no `{needle}` line of {name}.F90"));
        let lower = call.to_ascii_lowercase();
        let ret: Vec<u64> = bin.returns.iter().filter(|(n, _)| *n == lower).map(|&(_, a)| a - 1).collect();
        assert_eq!(Some(&s.address), ret.get(k), "rank {rank} {call}: {ret:x?}");
        // Its line, wherever gfortran's line table has a row for it
        // (gfortran -O0 gives none to a call whose arguments need no
        // code of their own; the address then maps to the row before).
        if bin.lines.contains(&line) {
            assert_eq!(s.line, Some(line), "rank {rank} {call}");
        }
    }
}

/// Checks the trace of mixed.F90 on 3 ranks.
fn check(t: &Trace, trace: &Path, exe: &Path) {
    let bin = binary(exe, "mixed");
    assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
    let mut sym = trace_format::Symbolizer::with_debug_dir(None);
    // Each call of the program, with the text that finds its line.
    let program: &[(&str, &str)] = &[
        ("MPI_Init", "call MPI_Init("),
        ("MPI_Comm_rank", "call MPI_Comm_rank("),
        ("MPI_Comm_size", "call MPI_Comm_size("),
        ("MPI_Pcontrol", "call MPI_Pcontrol("),
        ("MPI_Irecv", "call MPI_Irecv(rbuf"),
        ("MPI_Isend", "call MPI_Isend("),
        ("MPI_Waitall", "call MPI_Waitall("),
        ("MPI_Sendrecv", "call MPI_Sendrecv("),
        ("MPI_Irecv", "call MPI_Irecv(wbuf"),
        ("MPI_Send", "call MPI_Send("),
        ("MPI_Waitany", "call MPI_Waitany("),
        ("MPI_Comm_split", "call MPI_Comm_split("),
        ("MPI_Comm_set_name", "call MPI_Comm_set_name("),
        ("MPI_Bcast", "call MPI_Bcast("),
        ("MPI_Comm_free", "call MPI_Comm_free("),
        ("MPI_Allreduce", "call MPI_Allreduce("),
        ("MPI_Finalize", "call MPI_Finalize("),
    ];
    for r in 0..3 {
        let (left, right) = ((r + 2) % 3, (r + 1) % 3);
        let ev = t.rank_events(r);
        let meta = t.ranks[&r].meta.as_ref().unwrap();
        // Every call once, in program order, nothing else (no inner C call
        // counted a second time), each at its site.
        let calls: Vec<&Event> = ev.iter().filter(|e| e.kind == Kind::Call).collect();
        check_sites(&mut sym, meta, &bin, "mixed", &calls, program);
        assert_eq!(call_aux(&calls, "MPI_Pcontrol"), Some(1), "rank {r}");
        // Peers and bytes of the point-to-point calls and their completions.
        let pb = |e: &Event| (e.peer, e.bytes);
        let call = |n: &str, k: usize| *calls.iter().filter(|e| &*e.call == n).nth(k).unwrap();
        assert_eq!(pb(call("MPI_Irecv", 0)), (Some(left), Some(40)), "rank {r}");
        assert_eq!(pb(call("MPI_Isend", 0)), (Some(right), Some(40)), "rank {r}");
        assert_eq!(pb(call("MPI_Sendrecv", 0)), (Some(right), Some(8)), "rank {r}");
        assert_eq!(pb(call("MPI_Irecv", 1)), (Some(left), Some(12)), "rank {r}");
        assert_eq!(pb(call("MPI_Send", 0)), (Some(right), Some(12)), "rank {r}");
        // The root as a world rank: rank 0 of {0, 2} or of {1}.
        assert_eq!((call("MPI_Bcast", 0).root, call("MPI_Bcast", 0).bytes), (Some(r % 2), Some(16)), "rank {r}");
        #[allow(clippy::type_complexity)]
        let done: Vec<(&str, Option<i32>, Option<i64>)> =
            ev.iter().filter(|e| e.kind == Kind::Completion).map(|e| (&*e.call, e.peer, e.bytes)).collect();
        let mut waitall = done[..2].to_vec();
        waitall.sort();
        assert_eq!(
            waitall,
            vec![("MPI_Irecv", Some(left), Some(40)), ("MPI_Isend", Some(right), Some(40))],
            "rank {r}: {done:?}"
        );
        // The wildcard receive of the Sendrecv resolved, then the Waitany's
        // receive (the status the program ignored still read by the shim).
        assert_eq!(
            done[2..].to_vec(),
            vec![("MPI_Sendrecv", Some(left), Some(8)), ("MPI_Irecv", Some(left), Some(12))],
            "rank {r}"
        );
    }
    // The split communicators, one named by the program.
    let halves: Vec<_> = t.comms.values().filter(|c| c.call == "MPI_Comm_split").collect();
    assert_eq!(halves.len(), 2, "{:?}", t.comms);
    assert!(halves.iter().all(|c| c.name.as_deref() == Some("half")), "{halves:?}");
    // Every message matched: 3 ranks x (Isend, Sendrecv, Send).
    let out = Command::new(bin_dir().join("mpitrace"))
        .args(["report", trace.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    let m = &report.messages;
    assert_eq!((m.sends, m.receives, m.matched), (9, 9, 9), "{m:?}");
}

#[test]
fn openmpi_fortran_mpif_h_each_call_once_with_its_site() {
    let (t, dir, exe) = record(Lib::OpenMpi, Binding::MpifH);
    assert!(t.meta.mpi_library.starts_with("Open MPI"), "{}", t.meta.mpi_library);
    check(&t, &dir, &exe);
}

#[test]
fn openmpi_fortran_use_mpi_each_call_once_with_its_site() {
    let (t, dir, exe) = record(Lib::OpenMpi, Binding::UseMpi);
    check(&t, &dir, &exe);
}

#[test]
fn openmpi_fortran_use_mpi_f08_each_call_once_with_its_site() {
    let (t, dir, exe) = record(Lib::OpenMpi, Binding::F08);
    check(&t, &dir, &exe);
}

/// MPICH's Fortran layer calls the C `MPI_X`: recorded there once, not a
/// second time by the Fortran trampolines; its `mpi_f08` calls `PMPI_X`
/// (and takes choice buffers as array descriptors, `mpi_x_f08ts_`): recorded
/// by the shim's Fortran entries. (Debian's MPICH 4.0 `mpi_f08` returns
/// MPI_Waitany's index 0-based, which the program corrects.)
#[test]
fn mpich_fortran_each_call_once_with_its_site() {
    for binding in [Binding::MpifH, Binding::UseMpi, Binding::F08] {
        let defines: &[&str] = if binding == Binding::F08 { &["-DZERO_BASED_WAITANY"] } else { &[] };
        let (t, dir, exe) = record_with("mixed", 3, Lib::Mpich, binding, defines, "total 3");
        assert!(t.meta.mpi_library.contains("MPICH"), "{}", t.meta.mpi_library);
        check(&t, &dir, &exe);
    }
}

/// A completion row: call, peer, tag, bytes.
type Row = (String, Option<i32>, Option<i32>, Option<i64>);

/// Completions through MPI_Waitsome and MPI_Testany (1-based indices in
/// Fortran; 0-based in Debian's MPICH 4.0 `mpi_f08`, which the program
/// corrects and the shim knows), statuses the program ignores, a probe,
/// rooted collectives, through `use mpi` and `use mpi_f08`, on Open MPI and
/// on MPICH.
#[test]
fn fortran_requests_probe_and_collectives() {
    let runs = [
        (Lib::OpenMpi, Binding::UseMpi),
        (Lib::OpenMpi, Binding::F08),
        (Lib::Mpich, Binding::UseMpi),
        (Lib::Mpich, Binding::F08),
    ];
    for (mpi, binding) in runs {
        let defines: &[&str] =
            if (mpi, binding) == (Lib::Mpich, Binding::F08) { &["-DZERO_BASED_WAITANY"] } else { &[] };
        let expect = "cnt 2 idx 1 g 1 b 1 MPI_COMM_WORLD";
        let (t, trace, _) = record_with("requests", 2, mpi, binding, defines, expect);
        assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
        for r in 0..2 {
            let other = Some(1 - r);
            let ev = t.rank_events(r);
            // The calls, but for the polling loops.
            let names: Vec<&str> = ev
                .iter()
                .filter(|e| e.kind == Kind::Call && !e.is_call("MPI_Waitsome") && !e.is_call("MPI_Testany"))
                .map(|e| &*e.call)
                .collect();
            let expected = [
                "MPI_Init",
                "MPI_Comm_rank",
                "MPI_Comm_dup",
                "MPI_Irecv",
                "MPI_Isend",
                "MPI_Waitall",
                "MPI_Irecv",
                "MPI_Isend",
                "MPI_Isend",
                "MPI_Probe",
                "MPI_Get_count",
                "MPI_Recv",
                "MPI_Gatherv",
                "MPI_Reduce",
                "MPI_Comm_get_name",
                "MPI_Comm_free",
                "MPI_Finalize",
            ];
            assert_eq!(names, expected, "{binding:?} rank {r}");
            // Each request completed once, by the call that completed it.
            let completions = |by: &str| -> Vec<Row> {
                let mut out = Vec::new();
                let mut in_call = false;
                for e in ev {
                    match e.kind {
                        Kind::Call => in_call = e.is_call(by),
                        Kind::Completion if in_call => out.push((e.call.to_string(), e.peer, e.tag, e.bytes)),
                        _ => {}
                    }
                }
                out.sort();
                out
            };
            let c = |call: &str, tag: i32, bytes: i64| (call.to_string(), other, Some(tag), Some(bytes));
            assert_eq!(completions("MPI_Waitall"), vec![c("MPI_Irecv", 3, 16), c("MPI_Isend", 3, 16)], "{binding:?}");
            assert_eq!(completions("MPI_Waitsome"), vec![c("MPI_Irecv", 4, 16), c("MPI_Isend", 4, 16)], "{binding:?}");
            assert_eq!(completions("MPI_Testany"), vec![c("MPI_Isend", 5, 8)], "{binding:?}");
            let row = |call: &str| ev.iter().find(|e| e.kind == Kind::Call && e.is_call(call)).unwrap();
            assert_eq!((row("MPI_Probe").peer, row("MPI_Probe").bytes), (other, Some(8)), "{binding:?}");
            assert_eq!((row("MPI_Recv").peer, row("MPI_Recv").bytes), (other, Some(8)), "{binding:?}");
            assert_eq!(row("MPI_Gatherv").root, Some(0), "{binding:?}");
            // Everything on the duplicate but the name query of the world.
            let dup = row("MPI_Irecv").comm;
            assert!(dup.is_some_and(|c| c != 0), "{binding:?}");
            assert_eq!(row("MPI_Reduce").comm, dup);
            assert_eq!(row("MPI_Comm_get_name").comm, Some(0));
        }
        let out = Command::new(bin_dir().join("mpitrace"))
            .args(["report", trace.to_str().unwrap(), "--format", "json"])
            .output()
            .unwrap();
        let report: Report = serde_json::from_slice(&out.stdout).unwrap();
        let m = &report.messages;
        assert_eq!((m.sends, m.receives, m.matched), (6, 6, 6), "{binding:?} {m:?}");
    }
}

/// The calls of attrs.F90 (procedure, text of its line) for `binding` on
/// `mpi`.
fn attrs_program(binding: Binding, info_env: bool) -> Vec<(&'static str, &'static str)> {
    let mut p = vec![
        ("MPI_Init", "call MPI_Init("),
        ("MPI_Comm_rank", "call MPI_Comm_rank("),
        ("MPI_Comm_create_keyval", "call MPI_Comm_create_keyval("),
        ("MPI_Comm_set_attr", "call MPI_Comm_set_attr("),
        ("MPI_Comm_dup", "call MPI_Comm_dup("),
        ("MPI_Comm_get_attr", "call MPI_Comm_get_attr(dup"),
        ("MPI_Comm_get_attr", "call MPI_Comm_get_attr(MPI_COMM_WORLD"),
        ("MPI_Comm_delete_attr", "call MPI_Comm_delete_attr(dup"),
        ("MPI_Comm_free", "call MPI_Comm_free(dup"),
        ("MPI_Comm_delete_attr", "call MPI_Comm_delete_attr(MPI_COMM_WORLD"),
        ("MPI_Comm_free_keyval", "call MPI_Comm_free_keyval("),
        ("MPI_Type_create_keyval", "call MPI_Type_create_keyval("),
        ("MPI_Type_contiguous", "call MPI_Type_contiguous("),
        ("MPI_Type_set_attr", "call MPI_Type_set_attr("),
        ("MPI_Type_dup", "call MPI_Type_dup("),
        ("MPI_Type_get_attr", "call MPI_Type_get_attr("),
        ("MPI_Type_free", "call MPI_Type_free(pair2"),
        ("MPI_Type_delete_attr", "call MPI_Type_delete_attr("),
        ("MPI_Type_free", "call MPI_Type_free(pair,"),
        ("MPI_Type_free_keyval", "call MPI_Type_free_keyval("),
        ("MPI_Win_create_keyval", "call MPI_Win_create_keyval("),
        ("MPI_Win_create", "call MPI_Win_create("),
        ("MPI_Win_set_attr", "call MPI_Win_set_attr("),
        ("MPI_Win_get_attr", "call MPI_Win_get_attr("),
        ("MPI_Win_free", "call MPI_Win_free("),
        ("MPI_Win_free_keyval", "call MPI_Win_free_keyval("),
    ];
    if binding != Binding::F08 {
        p.extend([
            ("MPI_Keyval_create", "call MPI_Keyval_create("),
            ("MPI_Attr_put", "call MPI_Attr_put("),
            ("MPI_Attr_get", "call MPI_Attr_get("),
            ("MPI_Attr_delete", "call MPI_Attr_delete("),
            ("MPI_Keyval_free", "call MPI_Keyval_free("),
            ("MPI_Type_struct", "call MPI_Type_struct("),
            ("MPI_Type_size", "call MPI_Type_size("),
            ("MPI_Type_free", "call MPI_Type_free(rec"),
        ]);
    }
    p.extend([
        ("MPI_Grequest_start", "call MPI_Grequest_start("),
        ("MPI_Grequest_complete", "call MPI_Grequest_complete("),
        ("MPI_Wait", "call MPI_Wait("),
        ("MPI_Get_count", "call MPI_Get_count("),
        ("MPI_Register_datarep", "call MPI_Register_datarep("),
    ]);
    if info_env {
        p.extend([("MPI_Info_create_env", "call MPI_Info_create_env("), ("MPI_Info_free", "call MPI_Info_free(")]);
    }
    p.push(("MPI_Finalize", "call MPI_Finalize("));
    p
}

/// Records attrs.F90 on 2 ranks and checks every call once at its site,
/// with the objects it was made on.
fn check_attrs(mpi: Lib, binding: Binding) {
    // Open MPI 4.1 has no MPI_Info_create_env; Debian's MPICH 4.0 `mpi_f08`
    // returns an info it cannot free.
    let info_env = !(mpi == Lib::OpenMpi || (mpi == Lib::Mpich && binding == Binding::F08));
    let defines: &[&str] = if info_env { &["-DINFO_ENV"] } else { &[] };
    let deletes = if binding == Binding::F08 { 5 } else { 6 };
    let expect = format!("copies 2 deletes {deletes} bytes 24");
    let (t, _, exe) = record_with("attrs", 2, mpi, binding, defines, &expect);
    assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
    let bin = binary(&exe, "attrs");
    let mut sym = trace_format::Symbolizer::with_debug_dir(None);
    let program = attrs_program(binding, info_env);
    for r in 0..2 {
        let ev = t.rank_events(r);
        let calls: Vec<&Event> = ev.iter().filter(|e| e.kind == Kind::Call).collect();
        check_sites(&mut sym, t.ranks[&r].meta.as_ref().unwrap(), &bin, "attrs", &calls, &program);
        let at = |text: &str| calls[program.iter().position(|(_, t)| t.contains(text)).unwrap()];
        // Every call succeeded but maybe MPI_Register_datarep (Open MPI 4.1
        // and MPICH 4.0 take no conversion functions and return an error).
        for (e, (call, _)) in calls.iter().zip(&program) {
            assert!(e.rc == Some(0) || *call == "MPI_Register_datarep", "{mpi:?} {binding:?} rank {r}: {e:?}");
        }
        // The objects: the world, the duplicate (made by a call whose
        // Fortran attribute copy ran), the datatypes, the window, the
        // generalized request.
        let dup = at("MPI_Comm_dup(").new_comm;
        assert!(dup.is_some_and(|c| c != 0), "{mpi:?} {binding:?}");
        assert_eq!(at("MPI_Comm_set_attr(").comm, Some(0));
        assert_eq!(at("MPI_Comm_get_attr(dup").comm, dup);
        assert_eq!(at("MPI_Comm_get_attr(MPI_COMM_WORLD").comm, Some(0));
        assert_eq!(at("MPI_Comm_delete_attr(dup").comm, dup);
        let pair = at("MPI_Type_contiguous(").aux;
        assert!(pair.is_some());
        assert_eq!(at("MPI_Type_set_attr(").datatype, pair);
        assert_eq!(at("MPI_Type_delete_attr(").datatype, pair);
        assert_eq!(at("MPI_Type_get_attr(").datatype, at("MPI_Type_dup(").aux);
        let win = at("MPI_Win_create(").seq;
        assert!(win.is_some());
        assert_eq!((at("MPI_Win_set_attr(").seq, at("MPI_Win_get_attr(").seq), (win, win));
        if binding != Binding::F08 {
            assert_eq!(at("MPI_Attr_put(").comm, Some(0));
            assert_eq!(at("MPI_Attr_get(").comm, Some(0));
            let rec = at("MPI_Type_struct(").aux;
            assert!(rec.is_some());
            assert_eq!((at("MPI_Type_struct(").count, at("MPI_Type_size(").datatype), (Some(2), rec));
        }
        let greq = at("MPI_Grequest_start(").request;
        assert!(greq.is_some());
        assert_eq!((at("MPI_Grequest_complete(").request, at("MPI_Wait(").request), (greq, greq));
        // Completed once, by the MPI_Wait (its query callback in Fortran).
        let done: Vec<(&str, Option<i32>)> =
            ev.iter().filter(|e| e.kind == Kind::Completion).map(|e| (&*e.call, e.request)).collect();
        assert_eq!(done, vec![("MPI_Grequest_start", greq)], "{mpi:?} {binding:?} rank {r}");
        let wait = ev.iter().position(|e| e.kind == Kind::Call && e.is_call("MPI_Wait")).unwrap();
        assert_eq!(ev[wait + 1].kind, Kind::Completion);
    }
}

/// Attribute keys with Fortran callbacks, attribute queries, the MPI-1
/// attribute calls, a generalized request, MPI_Register_datarep and
/// MPI_Type_struct on Open MPI: each call once, at its site (mpi-core's
/// bindings of these are written by hand; the shim's Fortran entries of
/// them come from `mpi_api::fortran::layout`).
#[test]
fn openmpi_fortran_attributes_and_callbacks_each_call_once() {
    for binding in [Binding::MpifH, Binding::UseMpi, Binding::F08] {
        check_attrs(Lib::OpenMpi, binding);
    }
}

/// The same on MPICH, with MPI_Info_create_env: its Fortran attribute
/// queries and settings call MPICH's internals rather than the C `MPI_X`,
/// its `mpi_f08` calls `PMPI_X`, and each call is still recorded once.
/// (Debian's MPICH 4.0 `mpi_f08` returns an MPI_Info_create_env info that
/// MPI_Info_free rejects, even without the shim: left out there.)
#[test]
fn mpich_fortran_attributes_and_callbacks_each_call_once() {
    for binding in [Binding::MpifH, Binding::UseMpi, Binding::F08] {
        check_attrs(Lib::Mpich, binding);
    }
}

/// The same on this project's library, whose Fortran bindings of these
/// (written by hand) call the C `MPI_X`: inside the recorded call of the
/// attribute calls the shim records from Fortran, not recorded again.
#[test]
fn project_mpi_fortran_attributes_and_callbacks_each_call_once() {
    for binding in [Binding::MpifH, Binding::UseMpi, Binding::F08] {
        check_attrs(Lib::Ours, binding);
    }
}

/// MPI_Comm_spawn with an argument list and MPI_Comm_spawn_multiple with
/// arrays of commands, argument lists and info objects, from Fortran on
/// Open MPI: the parent's calls once each at their sites, and the spawned
/// jobs traced beside (Debian's MPICH cannot spawn on this machine, even
/// without the shim).
#[test]
fn openmpi_fortran_spawn_each_call_once() {
    for binding in [Binding::MpifH, Binding::UseMpi, Binding::F08] {
        let (t, trace, exe) = record_program("spawn", 1, Lib::OpenMpi, binding, "spawned 3");
        assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
        let bin = binary(&exe, "spawn");
        let mut sym = trace_format::Symbolizer::with_debug_dir(None);
        let parent = [
            ("MPI_Init", "call MPI_Init("),
            ("MPI_Comm_get_parent", "call MPI_Comm_get_parent("),
            ("MPI_Comm_spawn", "call MPI_Comm_spawn(self"),
            ("MPI_Recv", "call MPI_Recv(got, 2, MPI_INTEGER, 0,"),
            ("MPI_Comm_disconnect", "! one child"),
            ("MPI_Info_create", "call MPI_Info_create("),
            ("MPI_Info_create", "call MPI_Info_create("),
            ("MPI_Comm_spawn_multiple", "call MPI_Comm_spawn_multiple("),
            ("MPI_Recv", "call MPI_Recv(got, 2, MPI_INTEGER, i - 1"),
            ("MPI_Recv", "call MPI_Recv(got, 2, MPI_INTEGER, i - 1"),
            ("MPI_Comm_disconnect", "! two children"),
            ("MPI_Info_free", "call MPI_Info_free("),
            ("MPI_Info_free", "call MPI_Info_free("),
            ("MPI_Finalize", "! spawning"),
        ];
        let ev = t.rank_events(0);
        let calls: Vec<&Event> = ev.iter().filter(|e| e.kind == Kind::Call).collect();
        check_sites(&mut sym, t.ranks[&0].meta.as_ref().unwrap(), &bin, "spawn", &calls, &parent);
        let row = |k: usize| calls[k];
        assert!(calls.iter().all(|e| e.rc == Some(0)), "{binding:?}");
        // The spawns on the world (root 0) make intercommunicators, on
        // which the children's messages arrive (from processes outside the
        // job, which have no world rank).
        for (spawn, recvs) in [(2, 3..4), (7, 8..10)] {
            assert_eq!((row(spawn).comm, row(spawn).root), (Some(0), Some(0)), "{binding:?}");
            assert!(row(spawn).new_comm.is_some_and(|c| c != 0), "{binding:?}");
            for recv in recvs {
                assert_eq!((row(recv).comm, row(recv).bytes), (row(spawn).new_comm, Some(8)), "{binding:?}");
            }
        }
        // Two spawned jobs, of 1 and 2 ranks, each traced with its calls.
        let mut sizes = Vec::new();
        for dir in std::fs::read_dir(trace.join("spawned")).unwrap() {
            let child = Trace::open(&dir.unwrap().path()).unwrap();
            assert!(child.is_complete() && child.problems.is_empty(), "{:?}", child.problems);
            sizes.push(child.ranks.len());
            let program = [
                ("MPI_Init", "call MPI_Init("),
                ("MPI_Comm_get_parent", "call MPI_Comm_get_parent("),
                ("MPI_Comm_rank", "call MPI_Comm_rank(parent"),
                ("MPI_Send", "call MPI_Send(got"),
                ("MPI_Comm_disconnect", "call MPI_Comm_disconnect(parent"),
                ("MPI_Finalize", "! spawned"),
            ];
            for (r, rank) in &child.ranks {
                let ev = child.rank_events(*r);
                let calls: Vec<&Event> = ev.iter().filter(|e| e.kind == Kind::Call).collect();
                check_sites(&mut sym, rank.meta.as_ref().unwrap(), &bin, "spawn", &calls, &program);
                assert_eq!(calls[3].bytes, Some(8), "{binding:?}");
            }
        }
        sizes.sort();
        assert_eq!(sizes, vec![1, 2], "{binding:?}");
    }
}

/// Large-count procedures through MPICH's `mpi_f08` (`mpi_send_f08ts_large_`...,
/// for counts of `INTEGER(KIND=MPI_COUNT_KIND)`): each call once, as the
/// `MPI_X_c` procedure, at its site, with its peer and size.
#[test]
fn mpich_fortran_f08_large_count_each_call_once() {
    let (t, _, exe) = record_program("large_count", 2, Lib::Mpich, Binding::F08, "count 4");
    assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
    let bin = binary(&exe, "large_count");
    let mut sym = trace_format::Symbolizer::with_debug_dir(None);
    let start = [("MPI_Init", "call MPI_Init("), ("MPI_Comm_rank", "call MPI_Comm_rank(")];
    let end = [("MPI_Finalize", "call MPI_Finalize(")];
    let middle: [&[(&str, &str)]; 2] = [
        &[("MPI_Send_c", "call MPI_Send(")],
        &[("MPI_Recv_c", "call MPI_Recv("), ("MPI_Get_count_c", "call MPI_Get_count(")],
    ];
    for r in 0..2 {
        let program: Vec<(&str, &str)> = [&start[..], middle[r as usize], &end[..]].concat();
        let ev = t.rank_events(r);
        let calls: Vec<&Event> = ev.iter().filter(|e| e.kind == Kind::Call).collect();
        // Rows of the _c procedures, sites of the calls of MPI_Send...
        check_sites(&mut sym, t.ranks[&r].meta.as_ref().unwrap(), &bin, "large_count", &calls, &program);
        assert_eq!((calls[2].peer, calls[2].bytes, calls[2].count), (Some(1 - r), Some(16), Some(4)), "rank {r}");
    }
}
