//! `mpif77`: the Fortran compiler wrapper under MPICH's other name (see `mpifort`).
fn main() {
    std::process::exit(mpi_launcher::wrapper::main(mpi_launcher::wrapper::Language::Fortran))
}
