//! `mpitrace`: record, report and view traces of MPI programs.
//!
//! `mpitrace record [-o DIR] -- LAUNCHER ARGS...` runs an MPI job with
//! `libmpitrace.so` preloaded into every rank, then completes the trace
//! (also when it is stopped by a signal: see `record.rs`); `mpitrace convert
//! DIR` completes the trace of a run that left its journals.

mod analyze;
mod record;
mod signals;
mod top;
mod watch;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "mpitrace", version, about = "Record and analyze traces of MPI programs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an MPI job under the tracer: `mpitrace record -- mpiexec -n 4 ./app`.
    ///
    /// Every rank runs with libmpitrace.so preloaded; after the job its
    /// journals become the trace. Stopped by SIGINT, SIGTERM or SIGHUP,
    /// mpitrace passes the signal on to the job, kills it if it still runs
    /// after --kill-after, converts what was recorded until then and exits
    /// with 128 + the signal's number.
    Record(record::RecordArgs),
    /// Convert the journals an earlier run left (run with
    /// `MPITRACE_NO_CONVERT=1`, or killed along with mpitrace) into its trace, in place.
    Convert(record::ConvertArgs),
    #[command(flatten)]
    Analyze(analyze::Commands),
    /// Browse a trace in the terminal: timeline, messages, analyses (`?` lists the keys).
    Tui {
        /// The trace directory (finished, or the journals of a crashed run).
        dir: std::path::PathBuf,
    },
    /// Live view of a running job from its trace directory: each rank's
    /// current call, for how long, peer and call site, refreshed every
    /// second (`q` quits, the job runs on; `t` opens the timeline so far).
    Top {
        /// The trace directory the job writes (`record -o DIR`, MPITRACE_DIR).
        dir: std::path::PathBuf,
    },
    /// Open a trace in the desktop timeline analyzer (window; X11).
    Gui {
        /// The trace directory (finished, or the journals of a crashed run).
        dir: std::path::PathBuf,
        /// A second trace shown below the first, zoom and pan coupled.
        #[arg(long, value_name = "OTHER")]
        compare: Option<std::path::PathBuf>,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Record(args) => record::run(args),
        Command::Convert(args) => record::convert(args),
        Command::Analyze(c) => analyze::run(c),
        Command::Tui { dir } if !dir.is_dir() => Err(anyhow::anyhow!("{}: no such directory", dir.display())),
        Command::Tui { dir } => tui::run(&dir).map(|()| 0).map_err(anyhow::Error::from),
        Command::Top { dir } if !dir.is_dir() => Err(anyhow::anyhow!("{}: no such directory", dir.display())),
        Command::Top { dir } => top::run(&dir, None).map(|_| 0),
        Command::Gui { dir, compare: None } => gui::run(&dir).map(|()| 0).map_err(anyhow::Error::from),
        Command::Gui { dir, compare: Some(other) } => {
            gui::run_compare(&dir, &other).map(|()| 0).map_err(anyhow::Error::from)
        }
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("mpitrace: {e:#}");
            std::process::exit(2);
        }
    }
}
