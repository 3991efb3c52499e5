//! C compiler wrapper for MPI programs of the MPI-5 standard ABI
//! (`mpicc -mpi-abi`); see `--help`.
fn main() {
    std::process::exit(mpi_launcher::wrapper::main_std_abi(mpi_launcher::wrapper::Language::C))
}
