! The `mpi_f08` binding: handle types and their comparison, TYPE(MPI_Status),
! optional IERROR, MPI_BOTTOM with a derived type, MPI_IN_PLACE, a user op
! written in Fortran (TYPE(C_PTR) buffers), attribute callbacks, Comm_split,
! a subarray of a 3-D array, Waitall with a status array, strings. Rank 0
! prints "fortran f08 OK on N ranks" at the end.
module checks
  use mpi_f08
  implicit none
  integer :: calls = 0, deleted = 0
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      write(0, *) 'CHECK FAILED: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end subroutine

  subroutine maxop(invec, inoutvec, len, dtype)
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: dtype
    integer, pointer :: a(:), b(:)
    call c_f_pointer(invec, a, [len])
    call c_f_pointer(inoutvec, b, [len])
    calls = calls + 1
    call check(dtype == MPI_INTEGER, 'datatype of the op')
    b = max(a, b)
  end subroutine

  subroutine copy_fn(oldcomm, keyval, extra, val_in, val_out, flag, ierr)
    type(MPI_Comm) :: oldcomm
    integer :: keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, val_in, val_out
    logical :: flag
    val_out = val_in + extra
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine

  subroutine delete_fn(comm, keyval, val, extra, ierr)
    type(MPI_Comm) :: comm
    integer :: keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    deleted = deleted + 1
    ierr = MPI_SUCCESS
  end subroutine
end module checks

program basics_f08
  use mpi_f08
  use checks
  implicit none
  integer :: ierr, rank, nranks, next, prev, i, j, k, x, y, sum, resultlen, hrank, hsize
  type(MPI_Status) :: status, statuses(2)
  type(MPI_Request) :: reqs(2)
  type(MPI_Op) :: op
  type(MPI_Comm) :: dup, half
  type(MPI_Datatype) :: stype, sub, types(2)
  integer :: keyval, blocklens(2), ia, ib
  integer(kind=MPI_ADDRESS_KIND) :: disps(2), val, extra
  double precision :: da, db, t0
  double precision :: cube(4, 5, 6), got(4, 5, 6)
  integer :: grid(6, 8), col(8), sz
  type(MPI_Comm) :: quiet
  logical :: flag
  character(len=MPI_MAX_PROCESSOR_NAME) :: host
  character(len=MPI_MAX_ERROR_STRING) :: estr
  character(len=MPI_MAX_OBJECT_NAME) :: cname

  call MPI_Init(ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Init')
  t0 = MPI_Wtime()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  next = mod(rank + 1, nranks)
  prev = mod(rank + nranks - 1, nranks)
  call check(MPI_COMM_WORLD /= MPI_COMM_SELF .and. .not. (MPI_COMM_WORLD == MPI_COMM_NULL), 'handle comparison')

  call MPI_Sendrecv(rank, 1, MPI_INTEGER, next, 7, x, 1, MPI_INTEGER, prev, 7, MPI_COMM_WORLD, status)
  call check(x == prev .and. status%MPI_SOURCE == prev .and. status%MPI_TAG == 7, 'ring status')
  call MPI_Get_count(status, MPI_INTEGER, k)
  call check(k == 1, 'get_count')
  call MPI_Sendrecv(rank * 2, 1, MPI_INTEGER, next, 8, x, 1, MPI_INTEGER, prev, 8, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. x == prev * 2, 'ring with MPI_STATUS_IGNORE')

  ia = rank + 100
  da = rank + 0.5d0
  call MPI_Get_address(ia, disps(1))
  call MPI_Get_address(da, disps(2))
  blocklens = 1
  types = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
  call MPI_Type_create_struct(2, blocklens, disps, types, stype)
  call MPI_Type_commit(stype)
  call MPI_Isend(MPI_BOTTOM, 1, stype, next, 9, MPI_COMM_WORLD, reqs(1))
  call MPI_Get_address(ib, disps(1))
  call MPI_Get_address(db, disps(2))
  call MPI_Type_free(stype)
  call MPI_Type_create_struct(2, blocklens, disps, types, stype)
  call MPI_Type_commit(stype)
  call MPI_Recv(MPI_BOTTOM, 1, stype, prev, 9, MPI_COMM_WORLD, status)
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
  call check(ib == prev + 100 .and. db == prev + 0.5d0, 'MPI_BOTTOM struct')
  call check(reqs(1) == MPI_REQUEST_NULL, 'request freed')
  call MPI_Type_free(stype)

  sum = rank
  call MPI_Allreduce(MPI_IN_PLACE, sum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check(sum == nranks * (nranks - 1) / 2, 'allreduce in place')

  call MPI_Op_create(maxop, .true., op)
  x = mod(rank * 7, nranks + 3)
  call MPI_Allreduce(x, y, 1, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  k = 0
  do i = 0, nranks - 1
    k = max(k, mod(i * 7, nranks + 3))
  end do
  call check(ierr == MPI_SUCCESS .and. y == k, 'user op result')
  call MPI_Allreduce(calls, k, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check(nranks == 1 .or. k > 0, 'user op called')
  call MPI_Op_free(op)

  extra = 1000
  call MPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra)
  val = 42
  call MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, val)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  call MPI_Comm_get_attr(dup, keyval, val, flag)
  call check(flag .and. val == 1042, 'copied attribute')
  call MPI_Comm_free(dup)
  call check(deleted == 1 .and. dup == MPI_COMM_NULL, 'delete callback on free')
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval)
  call check(deleted == 2, 'delete callback on delete_attr')
  call MPI_Comm_free_keyval(keyval)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag)
  call check(flag .and. val >= 32767, 'MPI_TAG_UB value')

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, half)
  call MPI_Comm_rank(half, hrank)
  call MPI_Comm_size(half, hsize)
  call check(hsize == (nranks + 1 - mod(rank, 2)) / 2 .and. hrank == hsize - 1 - rank / 2, 'split')
  call MPI_Comm_free(half)

  do k = 1, 6
    do j = 1, 5
      do i = 1, 4
        cube(i, j, k) = rank * 1000 + i * 100 + j * 10 + k
      end do
    end do
  end do
  got = -1
  call MPI_Type_create_subarray(3, [4, 5, 6], [2, 2, 2], [1, 2, 3], MPI_ORDER_FORTRAN, MPI_DOUBLE_PRECISION, sub)
  call MPI_Type_commit(sub)
  call MPI_Sendrecv(cube, 1, sub, next, 10, got, 1, sub, prev, 10, MPI_COMM_WORLD, status)
  do k = 1, 6
    do j = 1, 5
      do i = 1, 4
        if (i >= 2 .and. i <= 3 .and. j >= 3 .and. j <= 4 .and. k >= 4 .and. k <= 5) then
          call check(got(i, j, k) == prev * 1000 + i * 100 + j * 10 + k, 'subarray element')
        else
          call check(got(i, j, k) == -1, 'outside the subarray untouched')
        end if
      end do
    end do
  end do
  call MPI_Type_free(sub)

  call MPI_Irecv(x, 1, MPI_INTEGER, prev, 11, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(rank, 1, MPI_INTEGER, next, 11, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, statuses)
  call check(x == prev .and. statuses(1)%MPI_SOURCE == prev .and. statuses(1)%MPI_TAG == 11, 'waitall')
  call MPI_Irecv(x, 1, MPI_INTEGER, prev, 12, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(rank, 1, MPI_INTEGER, next, 12, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. x == prev, 'waitall with MPI_STATUSES_IGNORE')

  ! Array sections: a row of a column-major array is not contiguous (an
  ! MPI that supports subarrays takes the section, one that does not gets
  ! the compiler's contiguous copy), and a column received into a strided
  ! section of another row.
  do j = 1, 8
    do i = 1, 6
      grid(i, j) = 1000 * rank + 10 * j + i
    end do
  end do
  call MPI_Sendrecv(grid(2, :), 8, MPI_INTEGER, next, 13, col, 8, MPI_INTEGER, prev, 13, MPI_COMM_WORLD, status)
  call check(all(col == [(1000 * prev + 10 * j + 2, j = 1, 8)]), 'row section sent')
  call MPI_Sendrecv(grid(:, 3), 4, MPI_INTEGER, next, 14, grid(5, 1:8:2), 4, MPI_INTEGER, prev, 14, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  call check(all(grid(5, 1:8:2) == [(1000 * prev + 30 + i, i = 1, 4)]) .and. grid(5, 2) == 1000 * rank + 25, &
             'strided section received')
  call MPI_Bcast(grid(3, 2:7), 6, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call check(all(grid(3, 2:7) == [(10 * j + 3, j = 2, 7)]), 'bcast of a section')
  call MPI_Sizeof(da, sz)
  call check(sz == 8, 'MPI_Sizeof')
  if (MPI_SUBARRAYS_SUPPORTED) then
    ! A nonblocking call keeps using the section after it returns: this
    ! library (under MPICH's module) passes it where it is, as one element
    ! of a datatype describing it.
    call MPI_Irecv(grid(6, 1:8:2), 4, MPI_INTEGER, rank, 15, MPI_COMM_WORLD, reqs(1))
    call MPI_Isend(grid(1, 1:4), 4, MPI_INTEGER, rank, 15, MPI_COMM_WORLD, reqs(2))
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    call check(all(grid(6, 1:8:2) == grid(1, 1:4)), 'nonblocking section')
    if (rank == 0) print '(a)', 'nonblocking section sent'
    ! A count that is not the section's number of elements cannot be
    ! described so, and is refused.
    call MPI_Comm_dup(MPI_COMM_WORLD, quiet)
    call MPI_Comm_set_errhandler(quiet, MPI_ERRORS_RETURN)
    call MPI_Isend(grid(1, :), 4, MPI_INTEGER, rank, 16, quiet, reqs(2), ierr)
    if (ierr /= MPI_SUCCESS) then
      call MPI_Error_class(ierr, k)
      if (rank == 0) print '(a, i0)', 'nonblocking section of another count refused: class ', k
    else
      call MPI_Recv(col, 4, MPI_INTEGER, rank, 16, quiet, MPI_STATUS_IGNORE)
      call MPI_Wait(reqs(2), MPI_STATUS_IGNORE)
    end if
    call MPI_Comm_free(quiet)
  end if

  call MPI_Get_processor_name(host, resultlen)
  call check(resultlen > 0 .and. len_trim(host) == resultlen, 'processor name')
  call MPI_Error_string(MPI_ERR_COMM, estr, resultlen)
  call check(resultlen > 0 .and. len_trim(estr) == resultlen, 'error string')
  call MPI_Comm_set_name(MPI_COMM_WORLD, 'fortran world   ')
  call MPI_Comm_get_name(MPI_COMM_WORLD, cname, resultlen)
  call check(cname == 'fortran world' .and. resultlen == 13, 'communicator name')

  call check(MPI_Wtime() >= t0 .and. MPI_Wtick() > 0, 'wtime')
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', 'fortran f08 OK on ', nranks, ' ranks'
  call MPI_Finalize()
end program
