//! Harness of the end-to-end tests: builds the library and tools once,
//! compiles C test programs from `tests/c/` with the project's `mpicc` (or
//! MPICH's), and runs them as real processes under a launcher, each under a
//! timeout so a hang fails fast.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// `target/<profile>` of this build, where the library and tools are.
pub fn bin_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"));
    target.join(profile())
}

/// Builds `mpi-core`, `libmpi_abi.so` and the launcher (same profile as the tests), once.
pub fn ensure_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.current_dir(root()).args(["build", "-q", "-p", "mpi-core", "-p", "mpi-stdabi", "-p", "mpi-launcher"]);
        if profile() == "release" {
            cmd.arg("--release");
        }
        let st = cmd.status().expect("run cargo build");
        assert!(st.success(), "cargo build of mpi-core/mpi-stdabi/mpi-launcher failed");
    });
}

/// Which compiler builds a test program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compiler {
    /// The project's `mpicc`.
    Ours,
    /// Debian's `mpicc.mpich` (binaries then need `libmpich.so.12`).
    Mpich,
    /// The project's `mpicc_abi`: the MPI-5 standard ABI (`mpi_abi.h`,
    /// `libmpi_abi.so.1`).
    StdAbi,
    /// MPICH 5's `mpicc_abi` (see [`mpich5`]): the standard ABI as another
    /// implementation's header and wrapper define it.
    Mpich5Abi,
}

/// Where MPICH 5 is installed: `$MPICORE_MPICH5`, else `target/mpich5`
/// (tests/run-all.sh installs the `mpich` wheel from PyPI there; Debian 12's
/// MPICH 4.0 has no standard ABI).
pub fn mpich5() -> PathBuf {
    match std::env::var_os("MPICORE_MPICH5") {
        Some(p) => PathBuf::from(p),
        None => root().join("target/mpich5"),
    }
}

const MPICH5_INSTALL: &str =
    "install MPICH 5: python3 -m pip install --prefix target/mpich5 mpich==5.0.2 (tests/run-all.sh does it)";

/// Compiles `tests/c/<name>.c`; returns the executable.
pub fn compile(name: &str, with: Compiler) -> PathBuf {
    ensure_built();
    let out_dir = bin_dir().join("ctests");
    std::fs::create_dir_all(&out_dir).unwrap();
    let suffix = match with {
        Compiler::Ours => "",
        Compiler::Mpich => ".mpich",
        Compiler::StdAbi => ".abi",
        Compiler::Mpich5Abi => ".mpich5abi",
    };
    let exe = out_dir.join(format!("{name}{suffix}"));
    // Tests run in parallel and may want the same program: compile once per
    // test process into a private name, then rename into place (atomic, and
    // harmless for a copy that is running).
    static DONE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if done.contains(&exe) {
        return exe;
    }
    let tmp = out_dir.join(format!(".{name}{suffix}.{}", std::process::id()));
    let src = root().join("tests/c").join(format!("{name}.c"));
    let cc = match with {
        Compiler::Ours => bin_dir().join("mpicc"),
        Compiler::Mpich => PathBuf::from("mpicc.mpich"),
        Compiler::StdAbi => bin_dir().join("mpicc_abi"),
        Compiler::Mpich5Abi => mpich5().join("bin/mpicc_abi"),
    };
    let out = Command::new(&cc)
        .args(["-O1", "-g", "-Wall", "-pthread", "-o"])
        .arg(&tmp)
        .arg(&src)
        .arg("-I")
        .arg(root().join("tests/c"))
        .output()
        .unwrap_or_else(|e| {
            let hint = if with == Compiler::Mpich5Abi { MPICH5_INSTALL } else { "" };
            panic!("cannot run {}: {e} {hint}", cc.display())
        });
    assert!(out.status.success(), "compiling {} failed:\n{}", src.display(), String::from_utf8_lossy(&out.stderr));
    std::fs::rename(&tmp, &exe).unwrap();
    done.push(exe.clone());
    exe
}

/// The binding a Fortran test program is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FortranBinding {
    /// `include 'mpif.h'` (the program is built with `-DUSE_MPIF_H`).
    MpifH,
    /// `use mpi`.
    Module,
    /// `use mpi_f08` (the program `tests/fortran/<name>_f08.f90`).
    F08,
}

/// Compiles `tests/fortran/<name>.F90` (or `<name>_f08.f90`) with `binding`, by the project's
/// `mpifort` or MPICH's `mpif90.mpich`; returns the executable.
pub fn compile_fortran(name: &str, with: Compiler, binding: FortranBinding) -> PathBuf {
    ensure_built();
    let fc = match with {
        Compiler::Ours => bin_dir().join("mpifort"),
        Compiler::Mpich => PathBuf::from("mpif90.mpich"),
        Compiler::StdAbi | Compiler::Mpich5Abi => panic!("the standard ABI has no Fortran binding here"),
    };
    let have = |c: &str| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(have("gfortran"), "gfortran is not installed: apt install gfortran");
    assert!(with == Compiler::Ours || have("mpif90.mpich"), "mpif90.mpich is not installed: apt install libmpich-dev");
    let out_dir = bin_dir().join("ftests");
    std::fs::create_dir_all(&out_dir).unwrap();
    let tag = format!(
        "{name}.{}.{}",
        if with == Compiler::Ours { "ours" } else { "mpich" },
        match binding {
            FortranBinding::MpifH => "mpif",
            FortranBinding::Module => "mod",
            FortranBinding::F08 => "f08",
        }
    );
    let exe = out_dir.join(&tag);
    // As in `compile`: tests of one process running at once share the
    // private name below, so they compile one at a time, each program once.
    static DONE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if done.contains(&exe) {
        return exe;
    }
    let tmp = out_dir.join(format!(".{tag}.{}", std::process::id()));
    let src = match binding {
        FortranBinding::F08 => root().join("tests/fortran").join(format!("{name}_f08.f90")),
        _ => root().join("tests/fortran").join(format!("{name}.F90")),
    };
    let mut cmd = Command::new(&fc);
    // -w: the type mismatches of choice buffers are expected with mpif.h.
    cmd.args(["-O1", "-g", "-w", "-o"]).arg(&tmp).arg(&src);
    // Module files a program defines go to a private directory, not into
    // the working directory (the source tree) of the test.
    let mods = out_dir.join(format!(".{tag}.{}.mod", std::process::id()));
    std::fs::create_dir_all(&mods).unwrap();
    cmd.arg("-J").arg(&mods);
    if binding == FortranBinding::MpifH {
        cmd.arg("-DUSE_MPIF_H");
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {}: {e}", fc.display()));
    assert!(out.status.success(), "compiling {} failed:\n{}", src.display(), String::from_utf8_lossy(&out.stderr));
    std::fs::rename(&tmp, &exe).unwrap();
    std::fs::remove_dir_all(&mods).ok();
    done.push(exe.clone());
    exe
}

/// Result of one job.
#[derive(Debug)]
pub struct Run {
    /// Exit code (128 + signal if killed by one), or None on timeout.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// Process id of the launcher (this project's `mpirun` names its job's
    /// key-value space, and so its shared-memory files, after it).
    pub pid: u32,
}

impl Run {
    pub fn assert_ok(&self, expect: &str) -> &Self {
        assert_eq!(self.code, Some(0), "job failed: {self}");
        assert!(self.stdout.contains(expect), "expected `{expect}` in the output: {self}");
        self
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?} after {:.1}s\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code,
            self.elapsed.as_secs_f64(),
            self.stdout,
            self.stderr
        )
    }
}

/// Which launcher starts a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launcher {
    /// The project's `mpirun`.
    Ours,
    /// Debian's `mpiexec.mpich` (hydra), with our library on the library path.
    Hydra,
    /// MPICH 5's `mpiexec` (see [`mpich5`]) with MPICH 5's libraries on the
    /// library path: a standard-ABI binary then runs on MPICH 5.
    Mpich5,
}

/// Runs `exe` on `n` ranks with `launcher`, killing it after `timeout`.
pub fn run(launcher: Launcher, n: usize, exe: &Path, args: &[&str], env: &[(&str, &str)], timeout: Duration) -> Run {
    ensure_built();
    let mut cmd = match launcher {
        Launcher::Ours => {
            let mut c = Command::new(bin_dir().join("mpirun"));
            c.arg("-n").arg(n.to_string());
            c
        }
        Launcher::Hydra => {
            let mut c = Command::new("mpiexec.mpich");
            let lib = bin_dir();
            let path = match std::env::var("LD_LIBRARY_PATH") {
                Ok(p) if !p.is_empty() => format!("{}:{p}", lib.display()),
                _ => lib.display().to_string(),
            };
            c.arg("-n").arg(n.to_string()).arg("-genv").arg("LD_LIBRARY_PATH").arg(path);
            c
        }
        Launcher::Mpich5 => {
            let exec = mpich5().join("bin/mpiexec");
            assert!(exec.exists(), "{} is missing: {MPICH5_INSTALL}", exec.display());
            let mut c = Command::new(exec);
            let lib = mpich5().join("lib");
            c.arg("-n").arg(n.to_string()).arg("-genv").arg("LD_LIBRARY_PATH").arg(lib);
            c
        }
    };
    cmd.arg(exe).args(args);
    cmd.env("MPIEXEC_TIMEOUT", (timeout.as_secs() + 5).to_string());
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_command(cmd, timeout)
}

/// Runs a launcher command line (stdin from /dev/null, output collected),
/// killing it and everything in its process group after `timeout`.
pub fn run_command(mut cmd: Command, timeout: Duration) -> Run {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Own process group, so a timeout can take down the launcher and ranks.
    cmd.process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().expect("start launcher");
    let pid = child.id() as i32;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)));
        }
        if start.elapsed() > timeout {
            // SAFETY: signalling the process group we created.
            unsafe { libc::kill(-pid, libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(1));
            // SAFETY: as above.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
        elapsed: start.elapsed(),
        pid: pid as u32,
    }
}

/// Shared-memory files in /dev/shm left by the job of `run` (started by this
/// project's `mpirun`, whose job names contain `kvs_<launcher pid>_`).
pub fn shm_leftovers_of(run: &Run) -> Vec<String> {
    let tag = format!("kvs_{}_", run.pid);
    shm_leftovers().into_iter().filter(|n| n.contains(&tag)).collect()
}

/// Shared-memory files in /dev/shm that this library created.
pub fn shm_leftovers() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("mpicore-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs C program `name` (compiled with our mpicc) under our mpirun at each
/// size of `sizes`: every run must succeed and print `<expect> on <n> ranks`.
pub fn each_size_says_ranks(name: &str, sizes: &[usize], expect: &str, timeout: Duration) {
    let exe = compile(name, Compiler::Ours);
    for &n in sizes {
        run(Launcher::Ours, n, &exe, &[], &[], timeout).assert_ok(&format!("{expect} on {n} ranks"));
    }
}
