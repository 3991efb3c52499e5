//! C++ compiler wrapper for MPI programs; see `--help`.
fn main() {
    std::process::exit(mpi_launcher::wrapper::main(mpi_launcher::wrapper::Language::Cxx))
}
