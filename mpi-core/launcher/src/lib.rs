//! The launcher side of the MPI implementation: `mpirun`/`mpiexec` with an
//! embedded PMI-1 (and PMI-2) server, and the `mpicc`/`mpicxx` compiler
//! wrappers.
//!
//! # What a rank gets from `mpirun`
//! - `PMI_FD`: an inherited, connected `AF_UNIX` stream socket speaking PMI-1
//!   (`cmd=init pmi_version=1 pmi_subversion=1` ...), or PMI-2 after
//!   `cmd=init pmi_version=2 pmi_subversion=0`.
//! - `PMI_RANK`, `PMI_SIZE`, `MPI_LOCALNRANKS`, `MPI_LOCALRANKID` (ranks on
//!   the rank's host), `MPICORE_JOB_SECRET` (32 hex digits, per job).
//! - `LD_LIBRARY_PATH` starting with the directory of `libmpi.so`.
//! - The PMI key `PMI_process_mapping` gives the real placement
//!   (`(vector,(0,1,N))` on one machine, `(vector,(0,2,1))` for `-host a,b`
//!   round robin...); the KVS name
//!   (`get_my_kvsname`) is `kvs_<launcher pid>_<8 hex digits>`, and files
//!   `/dev/shm/mpicore-<kvsname>-*` (every segment of the job) are removed
//!   when the job ends, however it ends: by mpirun on its host, by each
//!   proxy on the others (also when mpirun itself was killed).
//! - Ranks run in one process group of their own and die with the launcher
//!   (`PR_SET_PDEATHSIG`). stdin goes to rank 0, the others read /dev/null;
//!   a rank 0 on another host gets it through its proxy.
//!
//! # Other hosts
//! `-host`/`-hosts`/`-hostfile`/`-ppn` place ranks on hosts (round robin over
//! the host list, `host:slots` and `-ppn` give consecutive ranks); ranks on
//! hosts that are not this machine run under a proxy (`mpirun --proxy`)
//! started by the launch agent (`-launcher ssh|rsh|fork`, `-launcher-exec`);
//! see [`remote`] for the design and how failures end the job.
//!
//! # How the job ends
//! All ranks exit 0: status 0. A rank exits with code C or is killed by
//! signal S while others run: a message, the others get SIGTERM and, a
//! second later, SIGKILL; status C or 128+S. `cmd=abort exitcode=N`: status
//! N. `MPIEXEC_TIMEOUT` (or `-timeout`) expired: status 124
//! ([`job::TIMEOUT_EXIT`]). A rank that leaves (exits, closes its PMI
//! socket) while the others wait in a PMI barrier: status 1.

pub mod cli;
pub mod error;
pub mod job;
pub mod output;
pub mod paths;
pub mod pmi;
pub mod proxy;
pub mod remote;
pub mod sys;
pub mod wrapper;

pub use error::{Error, Result};

/// The `main` of `mpirun` and `mpiexec`; returns the exit status.
pub fn launcher_main() -> i32 {
    sys::ensure_std_fds_open();
    let mut argv = std::env::args_os();
    let prog = argv
        .next()
        .and_then(|p| std::path::Path::new(&p).file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "mpirun".into());
    let mut args = Vec::new();
    for a in argv {
        match a.into_string() {
            Ok(s) => args.push(s),
            Err(a) => {
                eprintln!("{prog}: argument {a:?} is not valid UTF-8");
                return 2;
            }
        }
    }
    if args.first().is_some_and(|a| a == "--proxy") {
        return proxy::main(&args[1..]);
    }
    let command = match cli::parse(&args, &|k| std::env::var(k).ok()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{prog}: {e}");
            return e.exit_code();
        }
    };
    match command {
        cli::Command::Help => {
            print!("{}", cli::usage(&prog));
            0
        }
        cli::Command::Version => {
            println!(
                "{prog} (mpi-launcher) {}\nPMI-1 server (PMI-2 handshake supported); MPICH ABI library libmpi.so.12",
                env!("CARGO_PKG_VERSION")
            );
            0
        }
        cli::Command::Run(opts) => match job::run(&opts) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("{prog}: {e}");
                e.exit_code()
            }
        },
    }
}
