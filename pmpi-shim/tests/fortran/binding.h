! The MPI binding of a test program's scope: `use mpi_f08` (-DF08),
! `use mpi` (-DUSE_MPI) or `mpif.h`, then `implicit none`.
#if defined(F08)
  use mpi_f08
#elif defined(USE_MPI)
  use mpi
#endif
  implicit none
#if !defined(F08) && !defined(USE_MPI)
  include 'mpif.h'
#endif
