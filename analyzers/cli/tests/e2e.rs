//! End-to-end: C programs with known behaviour recorded with `mpitrace
//! record` under Debian's MPICH (`mpiexec.mpich`) and under this project's
//! `mpirun`, then analyzed with `mpitrace report/check/diff/export`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use analyzers::report::Report;
use analyzers::waitstates::PatternKind;
use common::bin_dir;

const MS: i64 = 1_000_000;

fn mpitrace() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mpitrace"))
}

/// Builds the shim and this project's MPI (same profile), once.
fn build_tools() {
    common::build_shim();
    common::build_ours();
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mpi {
    /// Debian's MPICH: mpicc.mpich and mpiexec.mpich.
    Mpich,
    /// This project's mpicc and mpirun.
    Ours,
}

fn scratch(name: &str) -> PathBuf {
    let d = bin_dir().join("mpitrace-analyzer-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// patterns.c compiled for `mpi`, once per MPI.
fn program(mpi: Mpi) -> PathBuf {
    static BUILT: [OnceLock<PathBuf>; 2] = [OnceLock::new(), OnceLock::new()];
    BUILT[mpi as usize]
        .get_or_init(|| {
            build_tools();
            let dir = bin_dir().join("mpitrace-analyzer-tests").join(format!("bin-{mpi:?}"));
            std::fs::create_dir_all(&dir).unwrap();
            let out = dir.join("patterns");
            let tmp = dir.join(format!("patterns.{}", std::process::id()));
            let cc = match mpi {
                Mpi::Mpich => PathBuf::from("mpicc.mpich"),
                Mpi::Ours => bin_dir().join("mpicc"),
            };
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/patterns.c");
            let st = Command::new(cc)
                .env_remove("LD_LIBRARY_PATH")
                .args(["-O1", "-g"])
                .arg(&src)
                .arg("-o")
                .arg(&tmp)
                .status()
                .expect("mpicc");
            assert!(st.success(), "compiling patterns.c for {mpi:?} failed");
            std::fs::rename(&tmp, &out).unwrap();
            out
        })
        .clone()
}

/// Records `patterns ARGS` on `n` ranks into `dir/trace`.
fn record(mpi: Mpi, n: usize, args: &[&str], dir: &Path) -> (PathBuf, Output) {
    let exe = program(mpi);
    let trace = dir.join("trace");
    let mut cmd = Command::new(mpitrace());
    cmd.arg("record").arg("-o").arg(&trace).arg("--");
    match mpi {
        Mpi::Mpich => {
            // cargo puts target/<profile> (our libmpich.so.12) on the path.
            cmd.env_remove("LD_LIBRARY_PATH");
            cmd.args(["timeout", "-k", "5", "120", "mpiexec.mpich", "-n", &n.to_string()]);
        }
        Mpi::Ours => {
            cmd.env("MPIEXEC_TIMEOUT", "120");
            cmd.arg(bin_dir().join("mpirun")).args(["-n", &n.to_string()]);
        }
    }
    cmd.arg(&exe).args(args);
    let out = cmd.output().expect("mpitrace record");
    assert_ne!(out.status.code(), Some(124), "timed out: {}", String::from_utf8_lossy(&out.stderr));
    (trace, out)
}

fn run(args: &[&str]) -> Output {
    Command::new(mpitrace()).args(args).output().expect("mpitrace")
}

fn report(trace: &Path) -> Report {
    let out = run(&["report", trace.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "report failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `patterns.c:N` of the receive that waits in "late" mode, read from the source so that
/// the program can grow.
fn late_recv_site() -> String {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/patterns.c")).unwrap();
    let line = src.lines().position(|l| l.contains("MPI_Recv(in, 8, MPI_BYTE, 0, 5")).expect("the late receive");
    format!("patterns.c:{}", line + 1)
}

fn late_sender(mpi: Mpi) {
    let dir = scratch(&format!("late-{mpi:?}"));
    let (trace, out) = record(mpi, 2, &["late", "100"], &dir);
    ok(&out);
    let r = report(&trace);
    assert!(r.trace.complete, "{:?}", r.trace.problems);
    assert_eq!(r.messages.matched, 1);
    let ls = r.wait_states.get(PatternKind::LateSender).unwrap();
    // The receiver waits about 100 ms; ranks leave the barrier up to some ms
    // apart on a loaded machine, so only the order of magnitude is asserted.
    assert!((50 * MS..250 * MS).contains(&ls.time_ns), "late sender {} ns", ls.time_ns);
    assert_eq!(ls.by_rank[0], 0);
    assert_eq!(ls.by_rank[1], ls.time_ns);
    assert_eq!(ls.by_cause[0], ls.time_ns);
    assert_eq!(ls.sites[0].call, "MPI_Recv");
    // The site, symbolized from the program's debug information (-g).
    let site = late_recv_site();
    assert_eq!(ls.sites[0].site, site, "{:?}", ls.sites[0]);
    assert_eq!(ls.sites[0].location.as_ref().and_then(|l| l.function.as_deref()), Some("main"));
    assert!(ls.sites[0].module.as_deref().is_some_and(|m| m.starts_with("patterns+0x")), "{:?}", ls.sites[0]);
    // The text report names it.
    let text = run(&["report", trace.to_str().unwrap(), "--width", "100"]);
    ok(&text);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Late Sender") && text.contains(&format!("MPI_Recv at {site}")), "{text}");
    let dir_name = trace.to_str().unwrap();
    assert!(text.lines().filter(|l| !l.contains(dir_name)).all(|l| l.chars().count() <= 100), "{text}");
    // The HTML report names the site with its source line and function.
    let page = dir.join("report.html");
    ok(&run(&["report", trace.to_str().unwrap(), "-f", "html", "-o", page.to_str().unwrap()]));
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.contains(&format!("MPI_Recv at {site}")) && page.contains("<td>main</td>"), "{page}");
}

#[test]
fn mpich_late_sender_of_100ms() {
    late_sender(Mpi::Mpich);
}

#[test]
fn ours_late_sender_of_100ms() {
    late_sender(Mpi::Ours);
}

#[test]
fn mpich_imbalanced_allreduce_last_rank_arrives_last() {
    let dir = scratch("imbalance");
    let (trace, out) = record(Mpi::Mpich, 4, &["imbalance", "50"], &dir);
    ok(&out);
    let r = report(&trace);
    let s = r.collectives.summaries.iter().find(|s| s.call == "MPI_Allreduce").expect("allreduce summary");
    assert_eq!((s.instances, s.ranks, s.last_rank), (3, 4, 3));
    assert_eq!(s.last_rank_share, 1.0);
    assert!(s.mean_spread_ns >= 40 * MS, "spread {}", s.mean_spread_ns);
    let nxn = r.wait_states.get(PatternKind::WaitAtNxN).unwrap();
    // Three ranks wait about 50 ms at each of three allreduces.
    assert!(nxn.time_ns >= 9 * 25 * MS, "{}", nxn.time_ns);
    assert!(nxn.by_cause[3] >= nxn.time_ns * 9 / 10, "{:?}", nxn.by_cause);
    assert!(nxn.by_rank[3] < 5 * MS, "{:?}", nxn.by_rank);
    // CI gate on the collective imbalance: 50 ms of spread fails 20 ms, passes 10 s.
    let t = trace.to_str().unwrap();
    let fail = run(&["check", t, "--max-collective-spread", "20ms"]);
    assert_eq!(fail.status.code(), Some(1), "{}", String::from_utf8_lossy(&fail.stdout));
    assert!(String::from_utf8_lossy(&fail.stdout).contains("FAIL max_collective_spread"));
    let pass = run(&["check", t, "--max-collective-spread", "10s"]);
    assert_eq!(pass.status.code(), Some(0), "{}", String::from_utf8_lossy(&pass.stdout));
}

#[test]
fn isendrecv_halves_are_matched() {
    let dir = scratch("isendrecv");
    let (trace, out) = record(Mpi::Ours, 4, &["isendrecv"], &dir);
    ok(&out);
    let r = report(&trace);
    assert!(r.trace.complete, "{:?}", r.trace.problems);
    assert_eq!((r.messages.sends, r.messages.receives, r.messages.matched), (4, 4, 4), "{:?}", r.messages);
}

fn ring(mpi: Mpi) {
    let dir = scratch(&format!("ring-{mpi:?}"));
    let (trace, out) = record(mpi, 4, &["ring"], &dir);
    ok(&out);
    let r = report(&trace);
    assert!(r.trace.complete, "{:?}", r.trace.problems);
    assert_eq!((r.messages.sends, r.messages.receives, r.messages.matched), (8, 8, 8), "{:?}", r.messages);
    let m = r.matrix.full.as_ref().expect("full matrix for 4 ranks");
    for s in 0..4 {
        for d in 0..4 {
            let expect = if d == (s + 1) % 4 {
                (s as i64 + 1) * 1000
            } else if d == (s + 3) % 4 {
                100
            } else {
                0
            };
            assert_eq!(m.bytes(s, d), expect, "{s} -> {d}");
        }
    }
    let calls = |name: &str| r.profile.calls.iter().find(|c| c.name == name).map(|c| (c.count, c.bytes));
    assert_eq!(calls("MPI_Sendrecv").map(|c| c.0), Some(4));
    assert_eq!(calls("MPI_Irecv"), Some((4, 400)));
    assert_eq!(calls("MPI_Isend"), Some((4, 400)));
    assert_eq!(r.profile.p2p_sizes.count(), 8);
    // The HTML report: one page whose heatmap has the ring's bytes.
    let html = dir.join("report.html");
    ok(&run(&["report", trace.to_str().unwrap(), "--format", "html", "-o", html.to_str().unwrap()]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
    assert!(!page.contains("<script") && !page.contains("src="), "self-contained");
    assert!(page.contains("<title>0 \u{2192} 1: 1000 B in 1 messages</title>"), "heatmap cell 0->1");
    assert!(page.contains("<title>3 \u{2192} 0: 3.9 KiB in 1 messages</title>"), "heatmap cell 3->0");
    assert!(page.contains("<title>critical path</title>"));
    // CSV of the messages: the ring's 8, with their bytes.
    let csv = dir.join("messages.csv");
    ok(&run(&["export", trace.to_str().unwrap(), "-f", "messages-csv", "-o", csv.to_str().unwrap()]));
    let csv = std::fs::read_to_string(&csv).unwrap();
    let mut msgs: Vec<(usize, usize, i64)> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap(), f[4].parse().unwrap())
        })
        .collect();
    msgs.sort();
    let mut expect: Vec<(usize, usize, i64)> =
        (0..4).flat_map(|s| [(s, (s + 1) % 4, (s as i64 + 1) * 1000), (s, (s + 3) % 4, 100)]).collect();
    expect.sort();
    assert_eq!(msgs, expect, "{csv}");
    // OTF2, read back with otf2-print: the ring's 8 messages with their sizes.
    let otf2 = dir.join("otf2");
    ok(&run(&["export", trace.to_str().unwrap(), "-f", "otf2", "-o", otf2.to_str().unwrap()]));
    let printed =
        Command::new("otf2-print").arg(otf2.join("traces.otf2")).output().expect("otf2-print (apt install otf2-tools)");
    assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
    let printed = String::from_utf8_lossy(&printed.stdout);
    let mut sent: Vec<(usize, usize, i64)> = printed
        .lines()
        .filter(|l| l.starts_with("MPI_SEND ") || l.starts_with("MPI_ISEND "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let after = |key: &str| f.iter().position(|x| *x == key).map(|i| f[i + 1].trim_end_matches(',')).unwrap();
            (f[1].parse().unwrap(), after("Receiver:").parse().unwrap(), after("Length:").parse().unwrap())
        })
        .collect();
    sent.sort();
    assert_eq!(sent, expect, "{printed}");
    let count = |kind: &str| printed.lines().filter(|l| l.split_whitespace().next() == Some(kind)).count();
    // Sendrecv halves are blocking; the ring's Isend/Irecv pairs are not.
    assert_eq!((count("MPI_RECV"), count("MPI_IRECV"), count("MPI_IRECV_REQUEST")), (4, 4, 4), "{printed}");
    assert_eq!((count("MPI_SEND"), count("MPI_ISEND"), count("MPI_ISEND_COMPLETE")), (4, 4, 4), "{printed}");
    // Chrome/Perfetto export, read back by an independent parser.
    let json = dir.join("trace.json");
    ok(&run(&["export", trace.to_str().unwrap(), "-o", json.to_str().unwrap()]));
    let py = Command::new("python3")
        .arg("-c")
        .arg(
            "import json,sys; t=json.load(open(sys.argv[1]))['traceEvents']; \
             print(sum(e['ph']=='X' for e in t), sum(e['ph']=='s' for e in t), sum(e['ph']=='f' for e in t), \
             len({e['pid'] for e in t}))",
        )
        .arg(&json)
        .output();
    let counts = match py {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => {
            let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
            let t = v["traceEvents"].as_array().unwrap();
            let n = |ph: &str| t.iter().filter(|e| e["ph"] == ph).count();
            let pids: std::collections::BTreeSet<i64> = t.iter().filter_map(|e| e["pid"].as_i64()).collect();
            format!("{} {} {} {}", n("X"), n("s"), n("f"), pids.len())
        }
    };
    let c: Vec<usize> = counts.split_whitespace().map(|x| x.parse().unwrap()).collect();
    assert!(c[0] >= 4 * 7, "{counts}");
    assert_eq!((c[1], c[2], c[3]), (8, 8, 4), "{counts}");
    perfetto_protobuf(&trace, &dir, 4, 8);
}

/// Calls in the calls CSV of `trace` with the selection `args`.
fn csv_calls(trace: &Path, dir: &Path, args: &[&str]) -> usize {
    let csv = dir.join("calls.csv");
    let mut a = vec!["export", trace.to_str().unwrap(), "-o", csv.to_str().unwrap()];
    a.extend_from_slice(args);
    ok(&run(&a));
    std::fs::read_to_string(&csv).unwrap().lines().count() - 1
}

/// The protobuf export (the default for other extensions than .json/.csv),
/// decoded with Perfetto's own generated protobuf classes (the `perfetto`
/// Python package): one slice per call, one flow per matched message from
/// a call of the sender to a call of the receiver, a process per rank.
/// `--ranks` and `--from/--to` select the same calls as in the CSV export.
fn perfetto_protobuf(trace: &Path, dir: &Path, ranks: usize, matched: usize) {
    const DECODE: &str = "import sys
try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:
    print('MISSING', e); sys.exit(3)
t = pb.Trace()
t.ParseFromString(open(sys.argv[1], 'rb').read())
names, strings, slices, ends, procs, threads = {}, {}, 0, 0, set(), 0
flows, terms, sites = set(), set(), set()
for p in t.packet:
    for e in p.interned_data.event_names: names[e.iid] = e.name
    for e in p.interned_data.debug_annotation_string_values: strings[e.iid] = e.str.decode()
    if p.HasField('track_descriptor'):
        d = p.track_descriptor
        if d.HasField('process'): procs.add(d.process.process_name)
        if d.HasField('thread'): threads += 1
    if p.HasField('track_event'):
        e = p.track_event
        if e.type == 1 and 1 in e.category_iids:
            slices += 1
            sites.update(strings[a.string_value_iid] for a in e.debug_annotations if a.HasField('string_value_iid'))
        if e.type == 2: ends += 1
        flows.update(e.flow_ids); terms.update(e.terminating_flow_ids)
print(slices, ends, len(flows), len(terms), len(flows & terms), len(procs), threads, 'MPI_Irecv' in names.values(), any('ring.c:' in s or 'patterns.c:' in s for s in sites))
";
    let decode = |args: &[&str]| -> Vec<String> {
        let pb = dir.join("trace.pftrace");
        let mut a = vec!["export", trace.to_str().unwrap(), "-o", pb.to_str().unwrap()];
        a.extend_from_slice(args);
        ok(&run(&a));
        let out = Command::new("python3").arg("-c").arg(DECODE).arg(&pb).output().expect("python3");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            !text.starts_with("MISSING"),
            "the protobuf check needs Perfetto's Python package: pip install perfetto protobuf (tests/run-all.sh installs them): {text}"
        );
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        text.split_whitespace().map(str::to_string).collect()
    };
    let all = decode(&[]);
    let calls = csv_calls(trace, dir, &[]);
    assert_eq!(all[0], calls.to_string(), "slices = calls: {all:?}");
    assert!(all[1].parse::<usize>().unwrap() >= calls, "every slice ends: {all:?}");
    let m = matched.to_string();
    assert_eq!((&all[2], &all[3], &all[4]), (&m, &m, &m), "one flow per matched message: {all:?}");
    assert_eq!(all[5], ranks.to_string(), "{all:?}");
    assert_eq!((all[7].as_str(), all[8].as_str()), ("True", "True"), "names and symbolized sites interned: {all:?}");
    // Two ranks: their calls only, and the messages between them.
    let two = decode(&["--ranks", "0-1"]);
    assert_eq!(two[0], csv_calls(trace, dir, &["--ranks", "0-1"]).to_string(), "{two:?}");
    assert_eq!(two[5], "2", "{two:?}");
    assert!(two[0].parse::<usize>().unwrap() < calls, "{two:?}");
    assert_eq!(two[2], two[4], "flows start and end among ranks 0-1: {two:?}");
    // A time range: the calls overlapping it, as the CSV has them.
    let early = decode(&["--to", "0ns"]);
    assert_eq!(early[0], csv_calls(trace, dir, &["--to", "0ns"]).to_string(), "{early:?}");
    assert!(early[0].parse::<usize>().unwrap() >= 1 && early[0].parse::<usize>().unwrap() < calls, "{early:?}");
    // Bad selections are clear errors.
    let bad = run(&["export", trace.to_str().unwrap(), "-o", "/dev/null", "-f", "perfetto", "--ranks", "3-1"]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("--ranks"), "{bad:?}");
}

#[test]
fn mpich_ring_matrix_and_any_source() {
    ring(Mpi::Mpich);
}

#[test]
fn ours_ring_matrix_and_any_source() {
    ring(Mpi::Ours);
}

#[test]
fn mpich_abort_still_reports() {
    let dir = scratch("abort");
    let (trace, out) = record(Mpi::Mpich, 3, &["abort"], &dir);
    assert!(!out.status.success(), "the job should fail");
    let r = report(&trace);
    assert!(!r.trace.complete);
    assert!(!r.trace.incomplete_ranks.is_empty());
    assert_eq!(r.messages.matched, 1, "{:?}", r.messages);
    assert!(r.profile.calls.iter().any(|c| c.name == "MPI_Recv"));
    let text = run(&["report", trace.to_str().unwrap(), "--format", "md"]);
    ok(&text);
    let md = String::from_utf8_lossy(&text.stdout);
    assert!(md.contains("INCOMPLETE TRACE"), "{md}");
}

#[test]
fn check_and_diff_flag_the_bad_run() {
    let good_dir = scratch("check-good");
    let (good, out) = record(Mpi::Mpich, 2, &["late", "0"], &good_dir);
    ok(&out);
    let bad_dir = scratch("check-bad");
    let (bad, out) = record(Mpi::Mpich, 2, &["late", "100"], &bad_dir);
    ok(&out);
    let junit = bad_dir.join("junit.xml");
    let fail = run(&["check", bad.to_str().unwrap(), "--max-late-sender", "50ms", "--junit", junit.to_str().unwrap()]);
    assert_eq!(fail.status.code(), Some(1), "{}", String::from_utf8_lossy(&fail.stdout));
    assert!(String::from_utf8_lossy(&fail.stdout).contains("FAIL max_late_sender"));
    let x = std::fs::read_to_string(&junit).unwrap();
    assert!(x.contains("failures=\"1\"") && x.contains("<failure message="), "{x}");
    let pass = run(&["check", good.to_str().unwrap(), "--max-late-sender", "50ms", "--require-complete"]);
    assert_eq!(pass.status.code(), Some(0), "{}", String::from_utf8_lossy(&pass.stdout));
    // A rules file with an error names the line.
    let rules = good_dir.join("rules.toml");
    std::fs::write(&rules, "max_mpi_fraction = 0.9\nmax_late_sender = soon\n").unwrap();
    let e = run(&["check", good.to_str().unwrap(), "--rules", rules.to_str().unwrap()]);
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("rules.toml:2:"), "{}", String::from_utf8_lossy(&e.stderr));
    // Baseline as a JSON report, regression check and diff.
    let base = good_dir.join("base.json");
    ok(&run(&["report", good.to_str().unwrap(), "--format", "json", "-o", base.to_str().unwrap()]));
    // A JSON report rendered again as a page (for CI artifacts made later).
    let again = run(&["report", base.to_str().unwrap(), "--format", "html"]);
    ok(&again);
    let again = String::from_utf8_lossy(&again.stdout);
    assert!(again.starts_with("<!DOCTYPE html>") && again.contains("Late Sender"), "{again}");
    let reg = run(&["check", bad.to_str().unwrap(), "--baseline", base.to_str().unwrap(), "--max-regression", "10%"]);
    assert_eq!(reg.status.code(), Some(1), "{}", String::from_utf8_lossy(&reg.stdout));
    let d = run(&["diff", base.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(d.status.code(), Some(1));
    let d = String::from_utf8_lossy(&d.stdout);
    assert!(d.lines().any(|l| l.starts_with("Late Sender") && l.contains("(worse)")), "{d}");
    // ...and names the call site that got slower, by its source line.
    assert!(
        d.lines().any(|l| l.starts_with(&format!("MPI_Recv at {} time", late_recv_site())) && l.contains("(worse)")),
        "{d}"
    );
    // The same as Markdown and as an HTML page (for CI artifacts).
    let md = run(&["diff", base.to_str().unwrap(), bad.to_str().unwrap(), "--format", "md"]);
    assert_eq!(md.status.code(), Some(1));
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.lines().any(|l| l.starts_with("| Late Sender |") && l.ends_with("| worse |")), "{md}");
    let page = bad_dir.join("diff.html");
    let h =
        run(&["diff", base.to_str().unwrap(), bad.to_str().unwrap(), "--format", "html", "-o", page.to_str().unwrap()]);
    assert_eq!(h.status.code(), Some(1));
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.contains("<td>Late Sender</td>") && page.contains("<td class=\"t-bad\">worse</td>"), "{page}");
    let c = run(&["check", bad.to_str().unwrap(), "--max-late-sender", "50ms", "--format", "md"]);
    assert_eq!(c.status.code(), Some(1));
    let c = String::from_utf8_lossy(&c.stdout);
    assert!(c.lines().any(|l| l.starts_with("| max_late_sender | FAIL |")), "{c}");
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = scratch("not-a-trace");
    let out = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a trace directory"));
    // The viewers fail before opening anything (no DISPLAY is needed to see it).
    for args in [&["gui", "/nonexistent"][..], &["gui", dir.to_str().unwrap(), "--compare", "/nonexistent"]] {
        let out =
            Command::new(mpitrace()).args(args).env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent: no such directory"), "{args:?}");
    }
}

#[test]
fn mpich_abort_journals_without_record_still_report() {
    // The job is run without `mpitrace record`, so nothing converts the
    // journals: the analyzers read them directly.
    let dir = scratch("abort-journals");
    let exe = program(Mpi::Mpich);
    let trace = dir.join("trace");
    let out = Command::new("timeout")
        .env_remove("LD_LIBRARY_PATH")
        .args(["-k", "5", "120", "mpiexec.mpich", "-n", "3", "env"])
        .arg(format!("LD_PRELOAD={}", bin_dir().join("libmpitrace.so").display()))
        .arg(format!("MPITRACE_DIR={}", trace.display()))
        .arg(&exe)
        .arg("abort")
        .output()
        .expect("mpiexec.mpich");
    assert_ne!(out.status.code(), Some(124), "timed out");
    assert!(trace.join("journal").exists());
    let r = report(&trace);
    assert_eq!(r.trace.incomplete_ranks.len(), 3, "{:?}", r.trace.incomplete_ranks);
    assert!(
        r.trace.incomplete_ranks.iter().any(|(rank, why)| *rank == 1 && why.contains("MPI_Abort")),
        "{:?}",
        r.trace.incomplete_ranks
    );
    assert_eq!(r.messages.matched, 1);
    assert!(r.trace.problems.iter().any(|p| p.contains("meta.json")));
}

/// A fixed MPI-IO and one-sided pattern (patterns.c `iorma`) on 2 ranks:
/// the bytes and calls of every file access and put are exact in the JSON,
/// text, Markdown and HTML reports, and the calls table has their bytes.
fn io_and_one_sided(mpi: Mpi) {
    let dir = scratch(&format!("iorma-{mpi:?}"));
    let file = dir.join("data.bin");
    let (trace, out) = record(mpi, 2, &["iorma", file.to_str().unwrap()], &dir);
    ok(&out);
    let r = report(&trace);
    assert!(r.trace.complete, "{:?}", r.trace.problems);
    const MIB: i64 = 1 << 20;
    let io = &r.io;
    assert_eq!(io.files.len(), 1, "{:?}", io.files);
    let f = &io.files[0];
    assert_eq!((f.name.as_str(), f.ranks, f.calls), ("file 1 (WORLD)", 2, 12), "{f:?}");
    assert_eq!((f.written_bytes, f.read_bytes), (2 * (MIB + 4096), 2 * MIB), "{f:?}");
    assert!(f.bandwidth > 0.0);
    let kind = |k: &str| io.kinds.iter().find(|x| x.name == k).unwrap_or_else(|| panic!("{k}: {:?}", io.kinds));
    let w = kind("write, collective, explicit offset");
    assert_eq!((w.calls, w.written_bytes, w.read_bytes), (2, 2 * MIB, 0));
    let w = kind("write, independent, individual pointer");
    assert_eq!((w.calls, w.written_bytes), (2, 8192));
    let rd = kind("read, independent, explicit offset");
    assert_eq!((rd.calls, rd.read_bytes), (2, 2 * MIB));
    assert_eq!(io.kinds.len(), 3, "{:?}", io.kinds);
    assert_eq!(io.ranks.iter().map(|x| (x.rank, x.calls)).collect::<Vec<_>>(), [(0, 6), (1, 6)]);
    assert!(io.ranks.iter().all(|x| x.time_ns > 0 && x.fraction > 0.0 && x.fraction < 1.0), "{:?}", io.ranks);
    let rma = &r.rma;
    assert_eq!((rma.puts, rma.gets, rma.bytes), (4, 0, 2 * (4 * MIB + 1024)));
    let targets: Vec<_> = rma.targets.iter().map(|t| (t.window.as_str(), t.target, t.calls, t.put_bytes)).collect();
    assert_eq!(targets, [("window 1 (WORLD)", 0, 2, 4 * MIB + 1024), ("window 1 (WORLD)", 1, 2, 4 * MIB + 1024)]);
    assert_eq!(rma.windows.len(), 1, "{:?}", rma.windows);
    let w = &rma.windows[0];
    assert_eq!((w.ranks, w.fence_epochs, w.lock_epochs, w.pscw_access_epochs), (2, 1, 2, 0), "{w:?}");
    assert!(w.fence_ns > 0 && w.lock_ns > 0 && rma.sync_ns >= w.fence_ns + w.lock_ns, "{w:?}");
    // The calls table has their bytes.
    let call = |n: &str| r.profile.calls.iter().find(|c| c.name == n).unwrap_or_else(|| panic!("{n}"));
    assert_eq!((call("MPI_Put").count, call("MPI_Put").bytes), (4, 2 * (4 * MIB + 1024)));
    assert_eq!((call("MPI_File_write_at_all").count, call("MPI_File_write_at_all").bytes), (2, 2 * MIB));
    // Text, Markdown and HTML show the same numbers.
    let t = trace.to_str().unwrap();
    let text = run(&["report", t, "--width", "120"]);
    ok(&text);
    let md = run(&["report", t, "-f", "md"]);
    ok(&md);
    let page = dir.join("report.html");
    ok(&run(&["report", t, "-f", "html", "-o", page.to_str().unwrap()]));
    let html = std::fs::read_to_string(&page).unwrap();
    for doc in
        [String::from_utf8_lossy(&text.stdout).to_string(), String::from_utf8_lossy(&md.stdout).to_string(), html]
    {
        for want in [
            "12 MPI-IO calls; read 2.0 MiB, written 2.0 MiB",
            "4 puts, 0 gets, 0 accumulates; 8.0 MiB moved",
            "write, collective, explicit offset",
            "file 1 (WORLD)",
            "window 1 (WORLD)",
            "One-sided communication",
        ] {
            assert!(doc.contains(want), "{want} missing:\n{doc}");
        }
    }
}

#[test]
fn mpich_io_and_one_sided_bytes_and_calls() {
    io_and_one_sided(Mpi::Mpich);
}

#[test]
fn ours_io_and_one_sided_bytes_and_calls() {
    io_and_one_sided(Mpi::Ours);
}
