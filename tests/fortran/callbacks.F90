! Generalized requests whose query, free and cancel procedures are written
! in Fortran, a data representation with conversion procedures in Fortran
! (and one with MPI_CONVERSION_FN_NULL), and MPI_COMM_SPAWN / MPI_COMM_SPAWN_MULTIPLE with argument
! lists (arrays of blank-padded strings, each ended by a blank one) and
! MPI_ARGV_NULL. The spawned copies of this program check the arguments
! they got and report a code to the parent. Rank 0 prints
! "fortran callbacks OK on N ranks" at the end.
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

subroutine query_fn(extra, status, ierr)
  MPI_DECL
  integer(kind=MPI_ADDRESS_KIND) extra
  integer status(MPI_STATUS_SIZE), ierr
  integer calls(3)
  common /greq/ calls
  calls(1) = calls(1) + 1
  status(MPI_SOURCE) = int(extra)
  status(MPI_TAG) = 77
  call MPI_Status_set_elements(status, MPI_INTEGER, 3, ierr)
  call MPI_Status_set_cancelled(status, .false., ierr)
  ierr = MPI_SUCCESS
end subroutine

subroutine free_fn(extra, ierr)
  MPI_DECL
  integer(kind=MPI_ADDRESS_KIND) extra
  integer ierr
  integer calls(3)
  common /greq/ calls
  calls(2) = calls(2) + int(extra)
  ierr = MPI_SUCCESS
end subroutine

subroutine cancel_fn(extra, complete, ierr)
  MPI_DECL
  integer(kind=MPI_ADDRESS_KIND) extra
  logical complete
  integer ierr
  integer calls(3)
  common /greq/ calls
  calls(3) = calls(3) + 1
  if (complete) calls(3) = calls(3) + 100
  ierr = MPI_SUCCESS
end subroutine

! The "negate4" data representation: INTEGERs stored negated.
subroutine neg_write(userbuf, datatype, count, filebuf, position, extra, ierr)
  MPI_DECL
  integer userbuf(*), filebuf(*), datatype, count, ierr, i
  integer(kind=MPI_OFFSET_KIND) position
  integer(kind=MPI_ADDRESS_KIND) extra
  ierr = MPI_SUCCESS
  if (datatype /= MPI_INTEGER .or. extra /= 44) ierr = MPI_ERR_TYPE
  do i = 1, count
    filebuf(i) = -userbuf(position + i)
  end do
end subroutine

subroutine neg_read(userbuf, datatype, count, filebuf, position, extra, ierr)
  MPI_DECL
  integer userbuf(*), filebuf(*), datatype, count, ierr, i
  integer(kind=MPI_OFFSET_KIND) position
  integer(kind=MPI_ADDRESS_KIND) extra
  ierr = MPI_SUCCESS
  do i = 1, count
    userbuf(position + i) = -filebuf(i)
  end do
end subroutine

subroutine ext4(datatype, extent, extra, ierr)
  MPI_DECL
  integer datatype, ierr
  integer(kind=MPI_ADDRESS_KIND) extent, extra
  extent = 4
  ierr = MPI_SUCCESS
end subroutine

! Writes through "negate4" and reads back through it, "native" and
! "plain4" (MPI_CONVERSION_FN_NULL: stored as they are).
subroutine datareps()
  MPI_DECL
  external neg_read, neg_write, ext4
  integer ierr, rank, pid, fh, k, vals(4), got(4)
  integer(kind=MPI_ADDRESS_KIND) extra
  integer(kind=MPI_OFFSET_KIND) disp
  character(len=64) fname
  integer getpid
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  extra = 44
  call MPI_Register_datarep('negate4', neg_read, neg_write, ext4, extra, ierr)
  call check(ierr == MPI_SUCCESS, 'register negate4')
#ifdef USE_MPIF_H
  ! (MPICH's `mpi` module does not declare MPI_CONVERSION_FN_NULL.)
  call MPI_Register_datarep('plain4', MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, ext4, extra, ierr)
  call check(ierr == MPI_SUCCESS, 'register plain4')
#endif
  pid = getpid()
  call MPI_Bcast(pid, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  write(fname, '(a, i0, a)') '/tmp/fdatarep_', pid, '.dat'
  call MPI_File_open(MPI_COMM_WORLD, fname, MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  call check(ierr == MPI_SUCCESS, 'file open')
  disp = rank * 16
  vals = [(rank * 10 + k, k = 1, 4)]
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'negate4', MPI_INFO_NULL, ierr)
  call MPI_File_write_all(fh, vals, 4, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS, 'write through negate4')
  call MPI_File_sync(fh, ierr)
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'native', MPI_INFO_NULL, ierr)
  call MPI_File_read_all(fh, got, 4, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call check(all(got == -vals), 'negate4 stored negated')
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'negate4', MPI_INFO_NULL, ierr)
  call MPI_File_read_all(fh, got, 4, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call check(all(got == vals), 'read back through negate4')
#ifdef USE_MPIF_H
  call MPI_File_set_view(fh, disp, MPI_INTEGER, MPI_INTEGER, 'plain4', MPI_INFO_NULL, ierr)
  call MPI_File_read_all(fh, got, 4, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. all(got == -vals), 'read through plain4')
#endif
  call MPI_File_close(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) call MPI_File_delete(fname, MPI_INFO_NULL, ierr)
end subroutine

! A spawned copy: the code of the arguments it got, summed over its world,
! sent to the parent's rank 0.
subroutine child(parent)
  MPI_DECL
  integer parent, ierr, n, code, total, rank
  character(len=32) a1, a2
  n = command_argument_count()
  call get_command_argument(1, a1)
  call get_command_argument(2, a2)
  code = -100000
  if (n == 2 .and. a1 == 'single' .and. a2 == 'two words') code = 1
  if (n == 1 .and. a1 == 'multi-a') code = 10
  if (n == 2 .and. a1 == 'multi-b' .and. a2 == 'x') code = 100
  if (n == 0) code = 1000
  call MPI_Allreduce(code, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  if (rank == 0) call MPI_Send(total, 1, MPI_INTEGER, 0, 5, parent, ierr)
  call MPI_Comm_disconnect(parent, ierr)
end subroutine

! Receives the children's report on `inter` (at rank 0) and checks it.
subroutine expect(inter, want, what)
  MPI_DECL
  integer inter, want, got, rank, ierr
  character(*) what
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  if (rank == 0) then
    call MPI_Recv(got, 1, MPI_INTEGER, 0, 5, inter, MPI_STATUS_IGNORE, ierr)
    if (got /= want) write(0, *) what, ': children reported ', got, ', expected ', want
    call check(got == want, what)
  end if
  call MPI_Comm_disconnect(inter, ierr)
end subroutine

program callbacks
  MPI_DECL
  integer ierr, rank, nranks, req, n, parent, inter, errs(4)
  integer status(MPI_STATUS_SIZE)
  integer calls(3)
  common /greq/ calls
  external query_fn, free_fn, cancel_fn
  integer(kind=MPI_ADDRESS_KIND) extra
  character(len=32) args(3), argvs(2, 3)
  character(len=512) exe, cmds(2)
  integer maxprocs(2), infos(2)

  call MPI_Init(ierr)
  call MPI_Comm_get_parent(parent, ierr)
  if (parent /= MPI_COMM_NULL) then
    call child(parent)
    call MPI_Finalize(ierr)
    stop
  end if
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)

  ! A generalized request completed by the program.
  calls = 0
  extra = 7
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, req, ierr)
  call check(ierr == MPI_SUCCESS, 'grequest start')
  call MPI_Grequest_complete(req, ierr)
  call MPI_Wait(req, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, n, ierr)
  call check(status(MPI_SOURCE) == 7 .and. status(MPI_TAG) == 77 .and. n == 3, 'grequest status from query_fn')
  call check(calls(1) == 1 .and. calls(2) == 7 .and. calls(3) == 0, 'grequest query and free called once')
  ! One cancelled before it completes.
  extra = 5
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, req, ierr)
  call MPI_Cancel(req, ierr)
  call check(calls(3) == 1, 'cancel_fn called with complete = .false.')
  call MPI_Grequest_complete(req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call check(calls(2) == 12, 'free_fn of the second request')

  call datareps()

  ! Spawning copies of this program with argument lists.
  call get_command_argument(0, exe)
  args(1) = 'single'
  args(2) = 'two words'
  args(3) = ' '
  errs = -1
  call MPI_Comm_spawn(exe, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, errs, ierr)
  call check(ierr == MPI_SUCCESS .and. all(errs(1:2) == MPI_SUCCESS), 'spawn')
  call expect(inter, 2, 'spawn with arguments')

  call MPI_Comm_spawn(exe, MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, MPI_ERRCODES_IGNORE, ierr)
  call expect(inter, 1000, 'spawn with MPI_ARGV_NULL')

  cmds = exe
  argvs = ' '
  argvs(1, 1) = 'multi-a'
  argvs(2, 1) = 'multi-b'
  argvs(2, 2) = 'x'
  maxprocs = [1, 2]
  infos = MPI_INFO_NULL
  call MPI_Comm_spawn_multiple(2, cmds, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, inter, errs, ierr)
  call check(ierr == MPI_SUCCESS .and. all(errs(1:3) == MPI_SUCCESS), 'spawn_multiple')
  call expect(inter, 210, 'spawn_multiple with argument lists')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a)', 'fortran callbacks OK on ', nranks, ' ranks'
  call MPI_Finalize(ierr)
end program
