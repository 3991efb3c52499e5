//! `mpitrace record`: run a job with the shim preloaded and finish its trace.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Args;
use trace_format::{layout, table};

#[derive(Args)]
pub struct RecordArgs {
    /// Trace directory (default: ./mpitrace-<UTC time>).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// The shim to preload (default: libmpitrace.so next to this program,
    /// or $MPITRACE_LIB).
    #[arg(long)]
    lib: Option<PathBuf>,
    /// Keep the raw journals next to the Parquet files.
    #[arg(long)]
    keep_journals: bool,
    /// The launcher and its arguments, e.g. `mpiexec -n 4 ./app`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// Where libmpitrace.so is: --lib, $MPITRACE_LIB, or next to this binary
/// (cargo builds both into target/<profile>/).
fn find_lib(arg: Option<PathBuf>) -> Result<PathBuf> {
    let candidate = match arg.or_else(|| std::env::var_os("MPITRACE_LIB").map(PathBuf::from)) {
        Some(p) => p,
        None => {
            let exe = std::env::current_exe().context("locating the mpitrace binary")?;
            let dir = exe.parent().context("mpitrace binary has no directory")?;
            let here = dir.join("libmpitrace.so");
            // Test binaries live in target/<profile>/deps.
            if !here.exists() && dir.ends_with("deps") {
                dir.parent().unwrap_or(dir).join("libmpitrace.so")
            } else {
                here
            }
        }
    };
    if !candidate.exists() {
        bail!("{}: not found; build it with `cargo build -p pmpi-shim` or pass --lib", candidate.display());
    }
    Ok(std::fs::canonicalize(&candidate)?)
}

fn default_dir() -> PathBuf {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    PathBuf::from(format!("mpitrace-{secs}"))
}

/// Runs the job; returns its exit code (128 + signal if it was killed).
pub fn run(args: RecordArgs) -> Result<i32> {
    let lib = find_lib(args.lib)?;
    let dir = args.output.unwrap_or_else(default_dir);
    if dir.join(layout::META).exists()
        || dir.join(layout::EVENTS_DIR).exists()
        || dir.join(layout::JOURNAL_DIR).exists()
    {
        bail!("{} already holds a trace; choose another directory with -o", dir.display());
    }
    trace_format::private::create_dir_all(&dir)
        .with_context(|| format!("cannot create the trace directory {}", dir.display()))?;
    let dir = std::fs::canonicalize(&dir)?;
    let probe = dir.join(".mpitrace-write-test");
    std::fs::write(&probe, b"").with_context(|| format!("the trace directory {} is not writable", dir.display()))?;
    let _ = std::fs::remove_file(&probe);

    let preload = match std::env::var("LD_PRELOAD") {
        Ok(old) if !old.is_empty() => format!("{}:{old}", lib.display()),
        _ => lib.display().to_string(),
    };
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..])
        .env("LD_PRELOAD", preload)
        .env("MPITRACE_DIR", &dir)
        .env("MPITRACE_LAUNCH", serde_json::to_string(&args.command)?);
    if args.keep_journals {
        cmd.env("MPITRACE_KEEP_JOURNALS", "1");
    }
    let mut child = cmd.spawn().with_context(|| format!("cannot run `{}`", args.command[0]))?;
    // Ctrl-C goes to the whole job; mpitrace stays to finish the trace.
    // SAFETY: changing the disposition of SIGINT in this process only (the
    // child was spawned before).
    unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    let status = child.wait().context("waiting for the job")?;
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    summarize(&dir, &args.command, args.keep_journals)?;
    // Jobs the program spawned (MPI_Comm_spawn) traced themselves under
    // `spawned/`, a trace each.
    let mut spawned: Vec<PathBuf> = std::fs::read_dir(dir.join(SPAWNED))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    spawned.sort();
    for sub in spawned {
        summarize(&sub, &args.command, args.keep_journals)?;
    }
    Ok(code)
}

/// Where the traces of spawned jobs go in a trace directory (see the shim's
/// `life::output_dir`).
const SPAWNED: &str = "spawned";

fn summarize(dir: &Path, launch: &[String], keep: bool) -> Result<()> {
    let fin = match trace_format::finish_dir(dir, launch, keep) {
        Ok(f) => f,
        Err(trace_format::Error::NotATrace(_)) => {
            eprintln!(
                "mpitrace: no trace in {}: the program did not call MPI_Init (is it dynamically linked against MPI?)",
                dir.display()
            );
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    for p in &fin.problems {
        eprintln!("mpitrace: {p}");
    }
    let ranks = layout::ranks_in(dir, layout::EVENTS_DIR, ".parquet");
    let mut events = 0i64;
    for &r in &ranks {
        events += table::count_rows(&layout::events(dir, r)).unwrap_or(0);
    }
    let (mut files, mut bytes) = (0u64, 0u64);
    for entry in walk(dir).into_iter().filter(|p| !p.starts_with(dir.join(SPAWNED))) {
        files += 1;
        bytes += std::fs::metadata(&entry).map(|m| m.len()).unwrap_or(0);
    }
    let partial: Vec<i32> = fin.meta.rank_meta.iter().filter(|r| !r.finalized).map(|r| r.process.rank).collect();
    let missing: Vec<i32> = (0..fin.meta.ranks as i32).filter(|r| !ranks.contains(r)).collect();
    let mut state = String::new();
    if !partial.is_empty() {
        state += &format!("; {} ranks did not finalize (partial traces: {:?})", partial.len(), partial);
    }
    if !missing.is_empty() {
        state += &format!("; no trace from ranks {missing:?}");
    }
    eprintln!(
        "mpitrace: {} ranks of `{}` traced: {} events, {} in {} files ({:.1} bytes/event) in {}{}",
        ranks.len(),
        fin.meta.command.join(" "),
        events,
        human(bytes),
        files,
        if events > 0 { bytes as f64 / events as f64 } else { 0.0 },
        dir.display(),
        state
    );
    Ok(())
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn human(b: u64) -> String {
    match b {
        0..=9999 => format!("{b} B"),
        10_000..=9_999_999 => format!("{:.1} KiB", b as f64 / 1024.0),
        _ => format!("{:.1} MiB", b as f64 / 1048576.0),
    }
}
