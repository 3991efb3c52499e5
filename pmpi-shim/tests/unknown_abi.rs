//! The shim never breaks a program: on an MPI library whose ABI it does not
//! know (a fake MPI built here, with pointer handles checked on every call
//! and no profiling interface), a program prints the same and exits the
//! same with `libmpitrace.so` preloaded as without it, no trace is written,
//! and rank 0 says once why tracing is off.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Builds the fake MPI library and the program linked to it into `dir`.
fn build_fake(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/fakempi");
    let cc = |args: &[&std::ffi::OsStr]| {
        let st = Command::new("cc").args(args).status().expect("cc (install gcc)");
        assert!(st.success(), "cc {args:?} failed");
    };
    let lib = dir.join("libfakempi.so");
    cc(&["-shared".as_ref(), "-fPIC".as_ref(), "-o".as_ref(), lib.as_os_str(), src.join("fakempi.c").as_os_str()]);
    let app = dir.join("app");
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let libdir = format!("-L{}", dir.display());
    cc(&[
        "-o".as_ref(),
        app.as_os_str(),
        src.join("app.c").as_os_str(),
        libdir.as_ref(),
        "-lfakempi".as_ref(),
        rpath.as_ref(),
    ]);
    app
}

/// Runs `app` (with the shim preloaded if `shim`), under a timeout, in `dir`
/// as working directory, with `MPITRACE_DIR` inside it.
fn run(app: &Path, dir: &Path, shim: Option<&Path>, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", "60"]).arg(app).current_dir(dir).env_remove("LD_LIBRARY_PATH");
    for v in ["PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"] {
        cmd.env_remove(v);
    }
    cmd.env("MPITRACE_DIR", dir.join("trace"));
    if let Some(s) = shim {
        cmd.env("LD_PRELOAD", s);
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("timeout")
}

const EXPECTED: &str = "rank 0 of 1 send 0 recv 0 barrier 0 got 7 8 9 status 12 0 5 c2f 91 wtime 42.5\n";

#[test]
fn unknown_abi_passes_through() {
    let dir = common::scratch("unknown_abi");
    let app = build_fake(&dir);
    let plain = run(&app, &dir, None, &[]);
    assert_eq!(String::from_utf8_lossy(&plain.stdout), EXPECTED);
    assert_eq!(plain.status.code(), Some(3), "{}", String::from_utf8_lossy(&plain.stderr));
    assert!(plain.stderr.is_empty(), "{}", String::from_utf8_lossy(&plain.stderr));

    let shim = common::shim();
    let traced = run(&app, &dir, Some(&shim), &[]);
    let err = String::from_utf8_lossy(&traced.stderr);
    assert_eq!(traced.stdout, plain.stdout, "stderr: {err}");
    assert_eq!(traced.status.code(), plain.status.code(), "stderr: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    assert!(
        lines[0].starts_with("mpitrace: tracing is off")
            && lines[0].contains("FakeMPI 0.1")
            && lines[0].contains("ABI this mpitrace does not know"),
        "{err}"
    );
    assert!(!dir.join("trace").exists(), "a trace was written on an unknown ABI");

    // Another rank than 0 says nothing.
    let rank1 = run(&app, &dir, Some(&shim), &[("PMI_RANK", "1")]);
    assert_eq!(rank1.stdout, plain.stdout);
    assert_eq!(rank1.status.code(), Some(3));
    assert!(rank1.stderr.is_empty(), "{}", String::from_utf8_lossy(&rank1.stderr));
}
