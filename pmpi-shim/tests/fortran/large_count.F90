! Large-count procedures through `use mpi_f08` (counts of
! INTEGER(KIND=MPI_COUNT_KIND), which MPICH's `mpi_f08` resolves to
! `mpi_send_f08ts_large_`...): a message, its count read back. Run on 2
! ranks; each call is on its own line.
program large_count
  use mpi_f08
  implicit none
  integer :: a(4), rank
  integer(kind=MPI_COUNT_KIND) :: n
  type(MPI_Status) :: st
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  n = 4
  a = rank + 7
  if (rank == 0) then
    call MPI_Send(a, n, MPI_INTEGER, 1, 3, MPI_COMM_WORLD)
  else
    call MPI_Recv(a, n, MPI_INTEGER, 0, 3, MPI_COMM_WORLD, st)
    call MPI_Get_count(st, MPI_INTEGER, n)
    if (a(4) /= 7 .or. n /= 4) stop 'large-count message'
    print '(a, i0)', 'count ', n
  end if
  call MPI_Finalize()
end program
