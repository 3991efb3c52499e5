//! `mpitrace record` end to end on Debian's MPICH, and the Parquet files
//! read by an independent reader (pyarrow, when installed).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use trace_format::Trace;

fn scratch(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let d = exe.parent().unwrap().parent().unwrap().join("mpitrace-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Builds libmpitrace.so next to the mpitrace binary (cargo does not build
/// another package's cdylib for these tests).
fn build_shim() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let bin = Path::new(env!("CARGO_BIN_EXE_mpitrace"));
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "-p", "pmpi-shim"]);
        if bin.parent().unwrap().ends_with("release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success());
    });
}

fn compile(src: &str, dir: &Path) -> PathBuf {
    let c = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pmpi-shim/tests/c");
    let out = dir.join(src.trim_end_matches(".c"));
    let st = Command::new("mpicc.mpich")
        .env_remove("LD_LIBRARY_PATH")
        .args(["-O1", "-g", "-Wno-stringop-overflow", "-I"])
        .arg(c.join("../../include"))
        .arg(c.join(src))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    out
}

fn record(trace: &Path, n: usize, exe: &Path, args: &[&str]) -> Output {
    build_shim();
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(env!("CARGO_BIN_EXE_mpitrace"))
        .arg("record")
        .arg("-o")
        .arg(trace)
        .args(["--", "mpiexec.mpich", "-n", &n.to_string()])
        .arg(exe)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "timed out");
    out
}

#[test]
fn record_p2p_and_read_with_pyarrow() {
    let dir = scratch("record-p2p");
    let exe = compile("p2p.c", &dir);
    let trace = dir.join("trace");
    let out = record(&trace, 2, &exe, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("2 ranks of"), "{err}");
    assert!(err.contains("events"), "{err}");
    let t = Trace::open(&trace).unwrap();
    assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.meta.written_by, "record");
    assert_eq!(t.meta.launch_command[0], "mpiexec.mpich");
    let total: usize = t.ranks.values().map(|r| r.events.len()).sum();
    // No journals, and no empty journal folder, are left once the trace is
    // finished.
    assert!(!trace.join("journal").exists());

    let script = format!(
        "import sys\ntry:\n    import pyarrow.parquet as pq\nexcept ImportError:\n    print('SKIP'); sys.exit(0)\n\
         import glob\nt = pq.read_table(sorted(glob.glob('{}/events/*.parquet')))\n\
         calls = t.column('call').to_pylist()\n\
         print(t.num_rows, calls.count('MPI_Send'), len(pq.read_table(sorted(glob.glob('{}/comms/*.parquet')))))",
        trace.display(),
        trace.display()
    );
    let py = Command::new("python3").arg("-c").arg(script).output().unwrap();
    let text = String::from_utf8_lossy(&py.stdout);
    assert!(py.status.success(), "{}", String::from_utf8_lossy(&py.stderr));
    if text.trim() == "SKIP" {
        panic!("pyarrow is not installed: the independent-reader check needs it (pip install pyarrow; tests/run-all.sh installs it)");
    }
    let nums: Vec<usize> = text.split_whitespace().map(|s| s.parse().unwrap()).collect();
    let sends = t.events().filter(|e| e.is_call("MPI_Send")).count();
    // comms files: per rank world, self and its half of the split.
    assert_eq!(nums, vec![total, sends, 6]);
}

#[test]
fn record_killed_rank_and_exit_code() {
    let dir = scratch("record-kill");
    let exe = compile("crash.c", &dir);
    let trace = dir.join("trace");
    let out = record(&trace, 2, &exe, &["kill"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "the job's failure is passed through: {err}");
    assert!(err.contains("did not finalize"), "{err}");
    // Recording again into the same directory is refused.
    let again = record(&trace, 2, &exe, &["kill"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a trace"));
    let t = Trace::open(&trace).unwrap();
    assert_eq!(t.meta.ranks, 2);
    assert_eq!(t.rank_events(1).iter().filter(|e| e.is_call("MPI_Send")).count(), 3);
    assert!(!t.is_complete());
}

#[test]
fn unwritable_output_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_mpitrace"))
        .args(["record", "-o", "/proc/mpitrace-cannot-be-here", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("cannot create the trace directory") || err.contains("not found"), "{err}");
}

/// The same through this project's MPI (mpi-core's mpicc and mpirun), when
/// they are built next to mpitrace; skipped otherwise.
#[test]
fn record_on_the_project_mpi() {
    let bin = Path::new(env!("CARGO_BIN_EXE_mpitrace")).parent().unwrap().to_path_buf();
    let (mpicc, mpirun) = (bin.join("mpicc"), bin.join("mpirun"));
    if !mpicc.exists() || !mpirun.exists() {
        panic!("mpi-core's mpicc/mpirun are not built next to mpitrace (cargo build --workspace first)");
    }
    let dir = scratch("record-own");
    let c = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pmpi-shim");
    let exe = dir.join("p2p");
    let st = Command::new(&mpicc)
        .args(["-O1", "-g", "-Wno-stringop-overflow", "-I"])
        .arg(c.join("include"))
        .arg(c.join("tests/c/p2p.c"))
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(st.success());
    build_shim();
    let trace = dir.join("trace");
    let out = Command::new("timeout")
        .args(["-k", "5", "120"])
        .arg(env!("CARGO_BIN_EXE_mpitrace"))
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(&mpirun)
        .args(["-n", "2"])
        .arg(&exe)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let t = Trace::open(&trace).unwrap();
    assert!(t.is_complete() && t.problems.is_empty(), "{:?}", t.problems);
    assert!(t.meta.mpi_library.contains("mpi-core"), "{}", t.meta.mpi_library);
    let sends = t.events().filter(|e| e.is_call("MPI_Send")).count();
    assert_eq!(sends, 5 + 5 + 1);
}
