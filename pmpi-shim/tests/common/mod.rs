//! Helpers of the end-to-end tests: build C programs with `mpicc.mpich`,
//! run them with `mpiexec.mpich` under the shim, with a timeout.

// Each test crate uses a part of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// target/<profile>/ (the test binary lives in target/<profile>/deps/).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// libmpitrace.so, (re)built first: cargo does not build a cdylib-only
/// library for the integration tests of its package.
pub fn shim() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| cargo_build(&["pmpi-shim"]));
    let p = profile_dir().join("libmpitrace.so");
    assert!(p.exists(), "{} not built", p.display());
    p
}

/// This project's `mpicc` and `mpirun` (built first, in this profile; the
/// shim itself never links them).
pub fn project_mpi() -> (PathBuf, PathBuf) {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| cargo_build(&["mpi-core", "mpi-launcher"]));
    let bin = profile_dir();
    let (mpicc, mpirun) = (bin.join("mpicc"), bin.join("mpirun"));
    assert!(mpicc.exists() && mpirun.exists(), "mpicc/mpirun not built in {}", bin.display());
    (mpicc, mpirun)
}

/// `cargo build` of `packages` in this test's profile.
fn cargo_build(packages: &[&str]) {
    let release = profile_dir().file_name().is_some_and(|n| n == "release");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q"]).current_dir(env!("CARGO_MANIFEST_DIR"));
    for p in packages {
        cmd.args(["-p", p]);
    }
    if release {
        cmd.arg("--release");
    }
    assert!(cmd.status().expect("cargo").success(), "building {packages:?} failed");
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let d = profile_dir().join("mpitrace-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles `tests/c/<src>` into `dir`.
pub fn compile(src: &str, dir: &Path) -> PathBuf {
    let name = src.trim_end_matches(".cpp").trim_end_matches(".c");
    compile_with(src, dir, &[], name)
}

/// Compiles `tests/c/<src>` into `dir/<out>` with the `extra` flags.
pub fn compile_with(src: &str, dir: &Path, extra: &[&str], out: &str) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = dir.join(out);
    let compiler = if src.ends_with(".cpp") { "mpicxx.mpich" } else { "mpicc.mpich" };
    let st = Command::new(compiler)
        .env_remove("LD_LIBRARY_PATH")
        .args(["-O1", "-g", "-pthread", "-Wno-stringop-overflow"])
        .args(extra)
        .arg("-I")
        .arg(manifest.join("include"))
        .arg(manifest.join("tests/c").join(src))
        .arg("-o")
        .arg(&out)
        .status()
        .expect(compiler);
    assert!(st.success(), "compiling {src} failed");
    out
}

/// Runs `exe args` on `n` ranks under the shim, tracing into `trace`.
pub fn run(n: usize, exe: &Path, args: &[&str], trace: &Path, extra_env: &[(&str, &str)]) -> Output {
    run_umask(None, n, exe, args, trace, extra_env)
}

/// [`run`], the job under `umask` (octal digits) if given.
pub fn run_umask(
    umask: Option<&str>,
    n: usize,
    exe: &Path,
    args: &[&str],
    trace: &Path,
    extra_env: &[(&str, &str)],
) -> Output {
    let mut cmd = match umask {
        Some(m) => {
            let mut c = Command::new("sh");
            c.args(["-c", r#"umask "$0" && exec "$@""#, m, "timeout"]);
            c
        }
        None => Command::new("timeout"),
    };
    // cargo puts target/<profile> on LD_LIBRARY_PATH, where mpi-core's
    // libmpich.so.12 lives: these tests run on Debian's MPICH.
    cmd.env_remove("LD_LIBRARY_PATH");
    cmd.args(["-k", "5", "120", "mpiexec.mpich", "-n", &n.to_string(), "env"])
        .arg(format!("LD_PRELOAD={}", shim().display()))
        .arg(format!("MPITRACE_DIR={}", trace.display()));
    for (k, v) in extra_env {
        cmd.arg(format!("{k}={v}"));
    }
    cmd.arg(exe).args(args);
    let out = cmd.output().expect("mpiexec.mpich");
    assert_ne!(out.status.code(), Some(124), "timed out: {}", String::from_utf8_lossy(&out.stderr));
    out
}
