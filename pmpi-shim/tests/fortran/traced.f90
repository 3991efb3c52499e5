program traced
  include 'mpif.h'
  integer ierr, rank, nranks, x, i
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  x = rank
  do i = 1, 3
    if (rank == 0) then
      call MPI_Send(i, 1, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, ierr)
    else if (rank == 1) then
      call MPI_Recv(x, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    end if
  end do
  call MPI_Allreduce(MPI_IN_PLACE, x, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0)', 'sum ', x
  call MPI_Finalize(ierr)
end program
