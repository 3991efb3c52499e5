! MPI_Comm_spawn with an argument list and MPI_Comm_spawn_multiple with an
! array of info objects and of argument lists, of this program itself; the
! children send their rank and argument to the parent. Through `use mpi_f08`
! (-DF08), `use mpi` (-DUSE_MPI) or `mpif.h`. Run on 1 rank; each call is on
! its own line.
program spawn
#include "binding.h"
#if defined(F08)
  type(MPI_Comm) :: parent, inter
  type(MPI_Info) :: infos(2)
  type(MPI_Status) :: st
#else
  integer :: parent, inter, infos(2), st(MPI_STATUS_SIZE)
#endif
  integer :: ierr, rank, errs(2), maxprocs(2), got(2), i
  character(len=256) :: self, arg
  character(len=256) :: commands(2)
  character(len=8) :: argv(2), argvs(2, 2)

  call MPI_Init(ierr)
  call MPI_Comm_get_parent(parent, ierr)
  call get_command_argument(0, self)
  if (parent /= MPI_COMM_NULL) then
    call get_command_argument(1, arg)
    call MPI_Comm_rank(parent, rank, ierr)
    got(1) = rank
    got(2) = len_trim(arg)
    call MPI_Send(got, 2, MPI_INTEGER, 0, 1, parent, ierr)
    call MPI_Comm_disconnect(parent, ierr)
    call MPI_Finalize(ierr)  ! spawned
    stop
  end if
  argv(1) = 'one'
  argv(2) = ' '
  call MPI_Comm_spawn(self, argv, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, inter, errs, ierr)
  call MPI_Recv(got, 2, MPI_INTEGER, 0, 1, inter, st, ierr)
  if (got(1) /= 0 .or. got(2) /= 3) stop 'spawned child'
  call MPI_Comm_disconnect(inter, ierr)  ! one child
  do i = 1, 2
    call MPI_Info_create(infos(i), ierr)
  end do
  commands = self
  maxprocs = 1
  argvs = ' '
  argvs(1, 1) = 'three'
  argvs(2, 1) = 'four'
  call MPI_Comm_spawn_multiple(2, commands, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, inter, errs, ierr)
  do i = 1, 2
    call MPI_Recv(got, 2, MPI_INTEGER, i - 1, 1, inter, st, ierr)
    if (got(1) /= i - 1 .or. got(2) /= 6 - i) stop 'spawned children'
  end do
  call MPI_Comm_disconnect(inter, ierr)  ! two children
  do i = 1, 2
    call MPI_Info_free(infos(i), ierr)
  end do
  print '(a)', 'spawned 3'
  call MPI_Finalize(ierr)  ! spawning
end program
