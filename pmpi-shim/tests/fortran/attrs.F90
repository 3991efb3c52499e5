! Attribute keys whose copy and delete callbacks are written in Fortran
! (run by MPI_Comm_dup, MPI_Type_dup, MPI_Comm_delete_attr, MPI_Type_free,
! MPI_Win_free), queries of user and predefined attributes, the MPI-1
! attribute calls (not in mpi_f08), a generalized request with Fortran
! callbacks, MPI_Register_datarep, the legacy MPI_Type_struct (an array of
! handles given by a pointer) and, on MPICH (-DINFO_ENV: Open MPI 4.1 has
! none), MPI_Info_create_env; through `use mpi_f08` (-DF08), `use mpi`
! (-DUSE_MPI) or `mpif.h`. Run on 2 ranks; each call is on its own line.
#if defined(F08)
#define MPIMOD use mpi_f08
#define HANDLE(t) type(t)
#elif defined(USE_MPI)
#define MPIMOD use mpi
#define HANDLE(t) integer
#else
#define MPIMOD
#define HANDLE(t) integer
#endif
#if !defined(F08) && !defined(USE_MPI)
#define MPIF include 'mpif.h'
#else
#define MPIF
#endif
module callbacks
  MPIMOD
  implicit none
  MPIF
  integer, save :: copies = 0, deletes = 0, queries = 0, frees = 0, conversions = 0
contains
  subroutine comm_copy(oldcomm, keyval, extra, val_in, val_out, flag, ierror)
    HANDLE(MPI_Comm) :: oldcomm
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra, val_in, val_out
    logical :: flag
    copies = copies + 1
    val_out = val_in + extra
    flag = .true.
    ierror = MPI_SUCCESS
  end subroutine
  subroutine comm_delete(comm, keyval, val, extra, ierror)
    HANDLE(MPI_Comm) :: comm
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    deletes = deletes + 1
    ierror = MPI_SUCCESS
  end subroutine
  subroutine type_copy(oldtype, keyval, extra, val_in, val_out, flag, ierror)
    HANDLE(MPI_Datatype) :: oldtype
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra, val_in, val_out
    logical :: flag
    copies = copies + 1
    val_out = val_in * extra
    flag = .true.
    ierror = MPI_SUCCESS
  end subroutine
  subroutine type_delete(dtype, keyval, val, extra, ierror)
    HANDLE(MPI_Datatype) :: dtype
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    deletes = deletes + 1
    ierror = MPI_SUCCESS
  end subroutine
  subroutine win_delete(win, keyval, val, extra, ierror)
    HANDLE(MPI_Win) :: win
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    deletes = deletes + 1
    ierror = MPI_SUCCESS
  end subroutine
  ! The MPI-1 forms: INTEGER values and extra state.
  subroutine old_copy(oldcomm, keyval, extra, val_in, val_out, flag, ierror)
    integer :: oldcomm, keyval, extra, val_in, val_out, ierror
    logical :: flag
    copies = copies + 1
    val_out = val_in
    flag = .true.
    ierror = MPI_SUCCESS
  end subroutine
  subroutine old_delete(comm, keyval, val, extra, ierror)
    integer :: comm, keyval, val, extra, ierror
    if (val /= 3 .or. extra /= 9) stop 'MPI-1 delete callback arguments'
    deletes = deletes + 1
    ierror = MPI_SUCCESS
  end subroutine
  ! A generalized request.
  subroutine query(extra, status, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    HANDLE(MPI_Status) :: status
#if !defined(F08)
    dimension status(MPI_STATUS_SIZE)
#endif
    integer :: ierror
    if (extra /= 42) stop 'query extra state'
    queries = queries + 1
    call MPI_Status_set_elements(status, MPI_BYTE, 24, ierror)
    call MPI_Status_set_cancelled(status, .false., ierror)
#if defined(F08)
    status%MPI_SOURCE = MPI_UNDEFINED
    status%MPI_TAG = MPI_UNDEFINED
#else
    status(MPI_SOURCE) = MPI_UNDEFINED
    status(MPI_TAG) = MPI_UNDEFINED
#endif
    ierror = MPI_SUCCESS
  end subroutine
  subroutine free_fn(extra, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: ierror
    frees = frees + 1
    ierror = MPI_SUCCESS
  end subroutine
  subroutine cancel_fn(extra, complete, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    logical :: complete
    integer :: ierror
    ierror = MPI_SUCCESS
  end subroutine
  ! A data representation (registered, never used by a file).
  subroutine conv(userbuf, datatype, count, filebuf, position, extra, ierror)
#if defined(F08)
    use, intrinsic :: iso_c_binding, only : c_ptr
    type(c_ptr), value :: userbuf, filebuf
#else
    integer :: userbuf(*), filebuf(*)
#endif
    HANDLE(MPI_Datatype) :: datatype
    integer :: count, ierror
    integer(kind=MPI_OFFSET_KIND) :: position
    integer(kind=MPI_ADDRESS_KIND) :: extra
    conversions = conversions + 1
    ierror = MPI_SUCCESS
  end subroutine
  subroutine extent(datatype, file_extent, extra, ierror)
    HANDLE(MPI_Datatype) :: datatype
    integer(kind=MPI_ADDRESS_KIND) :: file_extent, extra
    integer :: ierror
    file_extent = 4
    ierror = MPI_SUCCESS
  end subroutine
end module

program attrs
  use callbacks
  implicit none
  HANDLE(MPI_Comm) :: dup
  HANDLE(MPI_Datatype) :: pair, pair2
  HANDLE(MPI_Win) :: win
  HANDLE(MPI_Request) :: greq
  HANDLE(MPI_Status) :: st
#if !defined(F08)
  dimension st(MPI_STATUS_SIZE)
  integer :: key1, ival, blens(2), displs(2), types(2), rec, rsize
#endif
#if defined(INFO_ENV)
  HANDLE(MPI_Info) :: env
#endif
  integer :: ierr, rank, ckey, tkey, wkey, cnt, buf(4)
  integer(kind=MPI_ADDRESS_KIND) :: val, extra, wsize
  logical :: flag

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  ! A communicator key: copied with 10 added, deleted once.
  extra = 10
  call MPI_Comm_create_keyval(comm_copy, comm_delete, ckey, extra, ierr)
  val = 5
  call MPI_Comm_set_attr(MPI_COMM_WORLD, ckey, val, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_get_attr(dup, ckey, val, flag, ierr)
  if (.not. flag .or. val /= 15 .or. copies /= 1) stop 'copied communicator attribute'
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (.not. flag .or. val < 32767) stop 'MPI_TAG_UB'
  call MPI_Comm_delete_attr(dup, ckey, ierr)
  if (deletes /= 1) stop 'communicator delete callback'
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, ckey, ierr)
  call MPI_Comm_free_keyval(ckey, ierr)
  ! A datatype key: copied times 3, deleted with each type.
  extra = 3
  call MPI_Type_create_keyval(type_copy, type_delete, tkey, extra, ierr)
  call MPI_Type_contiguous(2, MPI_INTEGER, pair, ierr)
  val = 7
  call MPI_Type_set_attr(pair, tkey, val, ierr)
  call MPI_Type_dup(pair, pair2, ierr)
  call MPI_Type_get_attr(pair2, tkey, val, flag, ierr)
  if (.not. flag .or. val /= 21) stop 'copied datatype attribute'
  call MPI_Type_free(pair2, ierr)
  call MPI_Type_delete_attr(pair, tkey, ierr)
  call MPI_Type_free(pair, ierr)
  call MPI_Type_free_keyval(tkey, ierr)
  if (copies /= 2 .or. deletes /= 4) stop 'datatype callbacks'
  ! A window key with the predefined null copy and a Fortran delete.
  extra = 0
  call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_delete, wkey, extra, ierr)
  wsize = 16
  call MPI_Win_create(buf, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  val = 11
  call MPI_Win_set_attr(win, wkey, val, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, val, flag, ierr)
  if (.not. flag .or. val /= 16) stop 'MPI_WIN_SIZE'
  call MPI_Win_free(win, ierr)
  call MPI_Win_free_keyval(wkey, ierr)
  if (deletes /= 5) stop 'window delete callback'
#if !defined(F08)
  ! MPI-1: INTEGER values.
  call MPI_Keyval_create(old_copy, old_delete, key1, 9, ierr)
  call MPI_Attr_put(MPI_COMM_WORLD, key1, 3, ierr)
  call MPI_Attr_get(MPI_COMM_WORLD, key1, ival, flag, ierr)
  if (.not. flag .or. ival /= 3) stop 'MPI_Attr_get'
  call MPI_Attr_delete(MPI_COMM_WORLD, key1, ierr)
  call MPI_Keyval_free(key1, ierr)
  if (deletes /= 6) stop 'MPI-1 delete callback'
  ! The legacy struct constructor: its array of types is a pointer in C.
  blens = 1
  displs = (/ 0, 8 /)
  types = (/ MPI_INTEGER, MPI_DOUBLE_PRECISION /)
  call MPI_Type_struct(2, blens, displs, types, rec, ierr)
  call MPI_Type_size(rec, rsize, ierr)
  if (rsize /= 12) stop 'MPI_Type_struct'
  call MPI_Type_free(rec, ierr)
#endif
  ! A generalized request completed at once.
  extra = 42
  call MPI_Grequest_start(query, free_fn, cancel_fn, extra, greq, ierr)
  call MPI_Grequest_complete(greq, ierr)
  call MPI_Wait(greq, st, ierr)
  call MPI_Get_count(st, MPI_BYTE, cnt, ierr)
  if (cnt /= 24 .or. queries /= 1 .or. frees /= 1) stop 'generalized request'
  extra = 0
  call MPI_Register_datarep('shimtest', conv, conv, extent, extra, ierr)
#if defined(INFO_ENV)
  call MPI_Info_create_env(env, ierr)
  call MPI_Info_free(env, ierr)
#endif
  if (rank == 0) print '(a, i0, a, i0, a, i0)', 'copies ', copies, ' deletes ', deletes, ' bytes ', cnt
  call MPI_Finalize(ierr)
end program
