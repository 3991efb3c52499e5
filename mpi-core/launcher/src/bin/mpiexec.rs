//! Starts an MPI job on this machine; see `--help`.
fn main() {
    std::process::exit(mpi_launcher::launcher_main())
}
