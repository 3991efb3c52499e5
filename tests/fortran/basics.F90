! The Fortran binding of `mpif.h` (built with -DUSE_MPIF_H) and of `use mpi`:
! point-to-point with MPI_BOTTOM and a derived type, MPI_IN_PLACE
! collectives, MPI_STATUS_IGNORE and status arrays, a user op and attribute
! callbacks written in Fortran, MPI_Comm_split, a subarray of a 3-D array,
! nonblocking calls with MPI_Waitall, strings in both directions, the
! predefined attribute MPI_TAG_UB. Every result is checked; rank 0 prints
! "fortran OK on N ranks" at the end.
#ifdef USE_MPIF_H
#define MPI_DECL include 'mpif.h'
#else
#define MPI_DECL use mpi
#endif

subroutine check(ok, what)
  MPI_DECL
  logical, intent(in) :: ok
  character(*), intent(in) :: what
  integer ierr
  if (.not. ok) then
    write(0, *) 'CHECK FAILED: ', what
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
end subroutine

subroutine check_rc(ierr, what)
  MPI_DECL
  integer, intent(in) :: ierr
  character(*), intent(in) :: what
  call check(ierr == MPI_SUCCESS, what)
end subroutine

#ifndef USE_MPIF_H
! What `use mpi` has beyond `mpif.h`: MPI_SIZEOF of any type, MPI_F_SYNC_REG.
subroutine module_only()
  use mpi
  integer ierr, sz
  double precision d(3)
  integer(kind=2) h
  complex c
  character(len=1) ch
  call MPI_Sizeof(d, sz, ierr)
  call check(ierr == MPI_SUCCESS .and. sz == 8, 'MPI_Sizeof of double precision')
  call MPI_Sizeof(h, sz, ierr)
  call check(sz == 2, 'MPI_Sizeof of integer(kind=2)')
  call MPI_Sizeof(c, sz, ierr)
  call check(sz == 8, 'MPI_Sizeof of complex')
  call MPI_Sizeof(ch, sz, ierr)
  call check(sz == 1, 'MPI_Sizeof of character')
  call MPI_F_sync_reg(d)
end subroutine
#endif

! MPI_TYPE_CREATE_F90_* and MPI_TYPE_MATCH_SIZE give the types of the
! kinds a program selects by precision and range.
subroutine f90_types()
  MPI_DECL
  integer ierr, t, sz
  call MPI_Type_create_f90_real(15, MPI_UNDEFINED, t, ierr)
  call MPI_Type_size(t, sz, ierr)
  call check(ierr == MPI_SUCCESS .and. sz == 8, 'f90 real of precision 15')
  call MPI_Type_create_f90_real(6, MPI_UNDEFINED, t, ierr)
  call MPI_Type_size(t, sz, ierr)
  call check(sz == 4, 'f90 real of precision 6')
  call MPI_Type_create_f90_integer(18, t, ierr)
  call MPI_Type_size(t, sz, ierr)
  call check(ierr == MPI_SUCCESS .and. sz == 8, 'f90 integer of range 18')
  call MPI_Type_create_f90_complex(15, MPI_UNDEFINED, t, ierr)
  call MPI_Type_size(t, sz, ierr)
  call check(ierr == MPI_SUCCESS .and. sz == 16, 'f90 complex of precision 15')
  call MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, t, ierr)
  call check(ierr == MPI_SUCCESS .and. t == MPI_REAL8, 'match size real 8')
end subroutine

! A user op: the larger value, counting its calls.
subroutine maxop(invec, inoutvec, len, dtype)
  integer len, dtype, i
  integer invec(len), inoutvec(len)
  integer calls
  common /opcalls/ calls
  calls = calls + 1
  do i = 1, len
    inoutvec(i) = max(invec(i), inoutvec(i))
  end do
end subroutine

! Attribute callbacks: the copy gets the value plus the extra state, the
! deletion is counted.
subroutine copy_fn(oldcomm, keyval, extra, val_in, val_out, flag, ierr)
  MPI_DECL
  integer oldcomm, keyval, ierr
  integer(kind=MPI_ADDRESS_KIND) extra, val_in, val_out
  logical flag
  val_out = val_in + extra
  flag = .true.
  ierr = MPI_SUCCESS
end subroutine

subroutine delete_fn(comm, keyval, val, extra, ierr)
  MPI_DECL
  integer comm, keyval, ierr
  integer(kind=MPI_ADDRESS_KIND) val, extra
  integer deleted
  common /deletions/ deleted
  deleted = deleted + 1
  ierr = MPI_SUCCESS
end subroutine

program basics
  MPI_DECL
  integer ierr, rank, nranks, next, prev, i, j, k, x, y, sum
  integer status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2), reqs(2)
  integer calls, deleted, op, keyval, dup, half, hrank, hsize, sub, stype
  integer blocklens(2), types(2), resultlen
  integer(kind=MPI_ADDRESS_KIND) disps(2), val, extra
  integer ia, ib
  double precision da, db, t0
  double precision cube(4, 5, 6), got(4, 5, 6)
  integer sizes(3), subsizes(3), starts(3)
  logical flag
  character(len=MPI_MAX_PROCESSOR_NAME) host
  character(len=MPI_MAX_ERROR_STRING) estr
  character(len=MPI_MAX_OBJECT_NAME) cname
  common /opcalls/ calls
  common /deletions/ deleted
  external maxop, copy_fn, delete_fn

  calls = 0
  deleted = 0
  call MPI_Init(ierr)
  call check_rc(ierr, 'MPI_Init')
  t0 = MPI_Wtime()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  next = mod(rank + 1, nranks)
  prev = mod(rank + nranks - 1, nranks)

  ! A ring with a status, then with MPI_STATUS_IGNORE.
  call MPI_Sendrecv(rank, 1, MPI_INTEGER, next, 7, x, 1, MPI_INTEGER, prev, 7, &
                    MPI_COMM_WORLD, status, ierr)
  call check_rc(ierr, 'sendrecv')
  call check(x == prev .and. status(MPI_SOURCE) == prev .and. status(MPI_TAG) == 7, 'ring status')
  call MPI_Get_count(status, MPI_INTEGER, k, ierr)
  call check(k == 1, 'get_count')
  call MPI_Sendrecv(rank * 2, 1, MPI_INTEGER, next, 8, x, 1, MPI_INTEGER, prev, 8, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. x == prev * 2, 'ring with MPI_STATUS_IGNORE')

  ! MPI_BOTTOM with a struct of absolute addresses.
  ia = rank + 100
  da = rank + 0.5d0
  call MPI_Get_address(ia, disps(1), ierr)
  call MPI_Get_address(da, disps(2), ierr)
  blocklens = 1
  types(1) = MPI_INTEGER
  types(2) = MPI_DOUBLE_PRECISION
  call MPI_Type_create_struct(2, blocklens, disps, types, stype, ierr)
  call MPI_Type_commit(stype, ierr)
  call check_rc(ierr, 'struct type')
  call MPI_Isend(MPI_BOTTOM, 1, stype, next, 9, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Get_address(ib, disps(1), ierr)
  call MPI_Get_address(db, disps(2), ierr)
  call MPI_Type_free(stype, ierr)
  call MPI_Type_create_struct(2, blocklens, disps, types, stype, ierr)
  call MPI_Type_commit(stype, ierr)
  call MPI_Recv(MPI_BOTTOM, 1, stype, prev, 9, MPI_COMM_WORLD, status, ierr)
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
  call check(ib == prev + 100 .and. db == prev + 0.5d0, 'MPI_BOTTOM struct')
  call MPI_Type_free(stype, ierr)

  ! MPI_IN_PLACE.
  sum = rank
  call MPI_Allreduce(MPI_IN_PLACE, sum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(sum == nranks * (nranks - 1) / 2, 'allreduce in place')
  x = rank + 1
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, x, 1, MPI_INTEGER, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
    k = 1
    do i = 2, nranks
      k = k * i
    end do
    call check(x == k, 'reduce in place at the root')
  else
    call MPI_Reduce(x, y, 1, MPI_INTEGER, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
  end if

  ! A user op written in Fortran.
  call MPI_Op_create(maxop, .true., op, ierr)
  call check_rc(ierr, 'op_create')
  x = mod(rank * 7, nranks + 3)
  call MPI_Allreduce(x, y, 1, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  k = 0
  do i = 0, nranks - 1
    k = max(k, mod(i * 7, nranks + 3))
  end do
  call check(ierr == MPI_SUCCESS .and. y == k, 'user op result')
  call MPI_Allreduce(calls, k, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(nranks == 1 .or. k > 0, 'user op called')
  call MPI_Op_free(op, ierr)

  ! Attribute callbacks.
  extra = 1000
  call MPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra, ierr)
  call check_rc(ierr, 'create_keyval')
  val = 42
  call MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, val, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_get_attr(dup, keyval, val, flag, ierr)
  call check(ierr == MPI_SUCCESS .and. flag .and. val == 1042, 'copied attribute')
  call MPI_Comm_free(dup, ierr)
  call check(deleted == 1, 'delete callback on free')
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval, ierr)
  call check(deleted == 2, 'delete callback on delete_attr')
  call MPI_Comm_free_keyval(keyval, ierr)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  call check(ierr == MPI_SUCCESS .and. flag .and. val >= 32767, 'MPI_TAG_UB value')

  ! MPI_Comm_split.
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, half, ierr)
  call MPI_Comm_rank(half, hrank, ierr)
  call MPI_Comm_size(half, hsize, ierr)
  call check(hsize == (nranks + 1 - mod(rank, 2)) / 2, 'split size')
  call check(hrank == hsize - 1 - rank / 2, 'split rank (keys reversed)')
  call MPI_Comm_free(half, ierr)

  ! A 2x2x2 subarray of a 4x5x6 array, Fortran order.
  do k = 1, 6
    do j = 1, 5
      do i = 1, 4
        cube(i, j, k) = rank * 1000 + i * 100 + j * 10 + k
      end do
    end do
  end do
  got = -1
  sizes = (/ 4, 5, 6 /)
  subsizes = (/ 2, 2, 2 /)
  starts = (/ 1, 2, 3 /)
  call MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_FORTRAN, &
                                MPI_DOUBLE_PRECISION, sub, ierr)
  call MPI_Type_commit(sub, ierr)
  call MPI_Sendrecv(cube, 1, sub, next, 10, got, 1, sub, prev, 10, MPI_COMM_WORLD, status, ierr)
  call check_rc(ierr, 'subarray sendrecv')
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
  call MPI_Type_free(sub, ierr)

  ! Nonblocking with a status array.
  call MPI_Irecv(x, 1, MPI_INTEGER, prev, 11, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(rank, 1, MPI_INTEGER, next, 11, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, statuses, ierr)
  call check(ierr == MPI_SUCCESS .and. x == prev, 'waitall value')
  call check(statuses(MPI_SOURCE, 1) == prev .and. statuses(MPI_TAG, 1) == 11, 'waitall status')
  call check(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'requests freed')
  call MPI_Irecv(x, 1, MPI_INTEGER, prev, 12, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(rank, 1, MPI_INTEGER, next, 12, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. x == prev, 'waitall with MPI_STATUSES_IGNORE')

  ! Strings, both directions.
  host = '?'
#ifndef USE_MPIF_H
  call module_only()
#endif
  call f90_types()
  call MPI_Get_processor_name(host, resultlen, ierr)
  call check(ierr == MPI_SUCCESS .and. resultlen > 0 .and. len_trim(host) == resultlen, 'processor name')
  call check(host(resultlen+1:) == ' ', 'processor name blank-padded')
  call MPI_Error_string(MPI_ERR_COMM, estr, resultlen, ierr)
  call check(ierr == MPI_SUCCESS .and. resultlen > 0 .and. len_trim(estr) == resultlen, 'error string')
  call MPI_Comm_set_name(MPI_COMM_WORLD, 'fortran world   ', ierr)
  call MPI_Comm_get_name(MPI_COMM_WORLD, cname, resultlen, ierr)
  call check(cname == 'fortran world' .and. resultlen == 13, 'communicator name')

  call check(MPI_Wtime() >= t0 .and. MPI_Wtick() > 0, 'wtime')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a)', 'fortran OK on ', nranks, ' ranks'
  call MPI_Finalize(ierr)
end program
