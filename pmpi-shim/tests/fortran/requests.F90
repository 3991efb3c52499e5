! Nonblocking completion through MPI_Waitall and MPI_Waitsome with
! MPI_STATUSES_IGNORE, MPI_Testany, a wildcard probe and receive, rooted
! collectives on a duplicated communicator, a name read back; through
! `use mpi_f08` (-DF08) or `use mpi`. Run on 2 ranks.
program requests
#if defined(F08)
  use mpi_f08
  type(MPI_Request) :: reqs(2)
  type(MPI_Comm) :: dup
  type(MPI_Status) :: st
#else
  use mpi
  integer :: reqs(2), dup, st(MPI_STATUS_SIZE)
#endif
  integer :: ierr, rank, n, idx, cnt, outc, inds(2), a(4), b(4), g(8), counts(2), displs(2)
  logical :: flag
  character(len=MPI_MAX_OBJECT_NAME) :: nm
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  a = rank
  call MPI_Irecv(b, 4, MPI_INTEGER, 1 - rank, 3, dup, reqs(1), ierr)
  call MPI_Isend(a, 4, MPI_INTEGER, 1 - rank, 3, dup, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call MPI_Irecv(b, 4, MPI_INTEGER, 1 - rank, 4, dup, reqs(1), ierr)
  call MPI_Isend(a, 4, MPI_INTEGER, 1 - rank, 4, dup, reqs(2), ierr)
  outc = 0
  do while (outc /= MPI_UNDEFINED)
    call MPI_Waitsome(2, reqs, outc, inds, MPI_STATUSES_IGNORE, ierr)
  end do
  call MPI_Isend(a, 2, MPI_INTEGER, 1 - rank, 5, dup, reqs(1), ierr)
  call MPI_Probe(MPI_ANY_SOURCE, 5, dup, st, ierr)
  call MPI_Get_count(st, MPI_INTEGER, cnt, ierr)
  call MPI_Recv(b, cnt, MPI_INTEGER, MPI_ANY_SOURCE, 5, dup, st, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testany(1, reqs, idx, flag, MPI_STATUS_IGNORE, ierr)
  end do
#if defined(ZERO_BASED_WAITANY)
  ! Debian's MPICH 4.0 `mpi_f08` returns the index 0-based.
  idx = idx + 1
#endif
  counts = 4; displs = (/0, 4/)
  call MPI_Gatherv(a, 4, MPI_INTEGER, g, counts, displs, MPI_INTEGER, 0, dup, ierr)
  call MPI_Reduce(a, b, 4, MPI_INTEGER, MPI_MAX, 0, dup, ierr)
  call MPI_Comm_get_name(MPI_COMM_WORLD, nm, n, ierr)
  call MPI_Comm_free(dup, ierr)
  if (rank == 0) print '(a, i0, a, i0, a, i0, a, i0, 2a)', 'cnt ', cnt, ' idx ', idx, ' g ', g(5), ' b ', b(1), ' ', trim(nm)
  call MPI_Finalize(ierr)
end program
