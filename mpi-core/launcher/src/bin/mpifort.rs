//! Fortran compiler wrapper for MPI programs (also installed as `mpif90`
//! and `mpif77`); see `--help`.
fn main() {
    std::process::exit(mpi_launcher::wrapper::main(mpi_launcher::wrapper::Language::Fortran))
}
