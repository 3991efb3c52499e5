! Point-to-point, nonblocking with a status array, MPI_Waitany, a wildcard
! receive, a split communicator with a name, and collectives, through
! `use mpi_f08` (-DF08), `use mpi` (-DUSE_MPI) or `mpif.h`. Run on 3 ranks;
! every call is on its own line, which the tests find by its text.
program mixed
#include "binding.h"
#if defined(F08)
  type(MPI_Comm) :: sub
  type(MPI_Request) :: reqs(2), one(1)
  type(MPI_Status) :: stats(2), st
#else
  integer :: sub, reqs(2), one(1)
  integer :: stats(MPI_STATUS_SIZE, 2), st(MPI_STATUS_SIZE)
#endif
  integer :: ierr, rank, nranks, left, right, idx, total, i
  integer :: sbuf(10), rbuf(10), wbuf(3)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call MPI_Pcontrol(1)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  sbuf = (/ (rank * 100 + i, i = 1, 10) /)

  call MPI_Irecv(rbuf, 10, MPI_INTEGER, left, 7, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(sbuf, 10, MPI_INTEGER, right, 7, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, stats, ierr)
  if (rbuf(10) /= left * 100 + 10) stop 'ring'

  call MPI_Sendrecv(sbuf, 2, MPI_INTEGER, right, 8, rbuf, 2, MPI_INTEGER, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, st, ierr)

  call MPI_Irecv(wbuf, 3, MPI_INTEGER, left, 9, MPI_COMM_WORLD, one(1), ierr)
  call MPI_Send(sbuf, 3, MPI_INTEGER, right, 9, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(1, one, idx, MPI_STATUS_IGNORE, ierr)
#if defined(ZERO_BASED_WAITANY)
  ! Debian's MPICH 4.0 `mpi_f08` returns the index 0-based.
  idx = idx + 1
#endif
  if (idx /= 1 .or. wbuf(3) /= left * 100 + 3) stop 'waitany'

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
  call MPI_Comm_set_name(sub, 'half', ierr)
  call MPI_Bcast(sbuf, 4, MPI_INTEGER, 0, sub, ierr)
  call MPI_Comm_free(sub, ierr)

  total = rank
  call MPI_Allreduce(MPI_IN_PLACE, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0)', 'total ', total
  call MPI_Finalize(ierr)
end program
