! Conjugate gradients for the 2-D Poisson equation -lap(u) = f on the unit
! square, u = 0 on its boundary, discretised with the 5-point stencil on an
! n x n grid of interior points (spacing h = 1/(n+1)) and solved as
! A u = h^2 f with A = 4 on the diagonal and -1 for the four neighbours.
!
! The grid is split over a 2-D Cartesian process grid (MPI_Dims_create,
! MPI_Cart_create); each rank owns a block plus a one-point halo that is
! refreshed before every matrix-vector product with MPI_Irecv/MPI_Isend and
! MPI_Waitall (rows are contiguous, columns go as an MPI_Type_vector). Dot
! products are a local sum and an MPI_Allreduce.
!
! The right-hand side f = 2 (x(1-x) + y(1-y)) has the solution
! u = x(1-x) y(1-y), and the 5-point stencil is exact for it (its second
! differences in x and in y are those of quadratics), so the discrete
! solution is u at the grid points and the printed error is the error of the
! iteration alone. A halo exchange that sends the wrong data changes the
! matrix, and so the error, even when CG still converges.
!
! Every rank applies the stencil in the same order at every point, whatever
! the decomposition; only the order of the sums in the dot products depends
! on the number of ranks, so runs on different rank counts agree up to
! rounding.
!
!   cg [n [iters [tol]]]   defaults: n = 256, iters = 200, tol = 0 (run all
!                          iters; otherwise stop once |r|/|b| < tol)
!
! Rank 0 prints one line:
!   cg: n=.. ranks=.. iters=.. residual=.. checksum=.. error=.. time=..
! residual is |b - A x| / |b| recomputed from x at the end, checksum a
! position-weighted sum of x (a block put in the wrong place changes it),
! error max |x - u| and time the largest solve time over the ranks (seconds,
! MPI_Wtime, after a warm-up exchange and a barrier).
program cg
  use mpi
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  integer :: n, maxit, iters, ierr, rank, nprocs, comm
  integer :: dims(2), coords(2), west, east, south, north
  integer :: nx, ny, i0, j0, i, j, coltype, st
  character(64) :: arg
  logical :: periods(2)
  real(dp) :: tol, h, alpha, beta, rho, rho_new, pq, bnorm, rnorm
  real(dp) :: checksum, err, t0, t1, elapsed, local(2), global(2), xg, yg, warm
  real(dp), allocatable :: x(:, :), r(:, :), p(:, :), q(:, :), b(:, :)

  call MPI_Init(ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  n = 256
  maxit = 200
  tol = 0
  st = 0
  if (argument(1, arg)) read (arg, *, iostat=st) n
  if (st == 0 .and. argument(2, arg)) read (arg, *, iostat=st) maxit
  if (st == 0 .and. argument(3, arg)) read (arg, *, iostat=st) tol
  if (st /= 0) then
    write (0, '(3a)') 'cg: bad argument "', trim(arg), '"; usage: cg [n [iters [tol]]]'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if

  dims = 0
  call MPI_Dims_create(nprocs, 2, dims, ierr)
  if (n < maxval(dims)) then
    write (0, '(a,i0,a,i0,a)') 'cg: n=', n, ' is too small for ', nprocs, ' ranks'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  periods = .false.
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .true., comm, ierr)
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Cart_coords(comm, rank, 2, coords, ierr)
  ! Neighbours; MPI_PROC_NULL on the outer boundary, where the halo stays
  ! zero (the Dirichlet condition).
  call MPI_Cart_shift(comm, 0, 1, west, east, ierr)
  call MPI_Cart_shift(comm, 1, 1, south, north, ierr)

  ! This rank's block: global points i0+1..i0+nx by j0+1..j0+ny.
  call split(n, dims(1), coords(1), i0, nx)
  call split(n, dims(2), coords(2), j0, ny)

  allocate (x(0:nx + 1, 0:ny + 1), r(0:nx + 1, 0:ny + 1), p(0:nx + 1, 0:ny + 1))
  allocate (q(nx, ny), b(nx, ny))
  x = 0
  r = 0
  p = 0
  ! One halo column: ny values nx+2 apart.
  call MPI_Type_vector(ny, 1, nx + 2, MPI_DOUBLE_PRECISION, coltype, ierr)
  call MPI_Type_commit(coltype, ierr)

  h = 1.0_dp / (n + 1)
  do j = 1, ny
    yg = (j0 + j) * h
    do i = 1, nx
      xg = (i0 + i) * h
      b(i, j) = h * h * 2 * (xg * (1 - xg) + yg * (1 - yg))
    end do
  end do

  ! x = 0, so r = b and p = r.
  r(1:nx, 1:ny) = b
  p(1:nx, 1:ny) = b
  rho = allsum(sum(b * b))
  bnorm = sqrt(rho)

  ! Warm-up: the first exchange and reduction set up connections and
  ! buffers in some libraries, which is not what the timing is about.
  call halo(p)
  warm = allsum(1.0_dp)
  call MPI_Barrier(comm, ierr)
  t0 = MPI_Wtime()

  iters = 0
  do while (iters < maxit)
    if (tol > 0 .and. sqrt(rho) / bnorm < tol) exit
    iters = iters + 1
    call halo(p)
    pq = 0
    do j = 1, ny
      do i = 1, nx
        q(i, j) = 4 * p(i, j) - p(i - 1, j) - p(i + 1, j) - p(i, j - 1) - p(i, j + 1)
        pq = pq + p(i, j) * q(i, j)
      end do
    end do
    alpha = rho / allsum(pq)
    rho_new = 0
    do j = 1, ny
      do i = 1, nx
        x(i, j) = x(i, j) + alpha * p(i, j)
        r(i, j) = r(i, j) - alpha * q(i, j)
        rho_new = rho_new + r(i, j) * r(i, j)
      end do
    end do
    rho_new = allsum(rho_new)
    beta = rho_new / rho
    rho = rho_new
    p(1:nx, 1:ny) = r(1:nx, 1:ny) + beta * p(1:nx, 1:ny)
  end do

  t1 = MPI_Wtime()
  call MPI_Allreduce(t1 - t0, elapsed, 1, MPI_DOUBLE_PRECISION, MPI_MAX, comm, ierr)

  ! The true residual b - A x (not the recurrence's r, which drifts from it),
  ! the checksum and the error.
  call halo(x)
  local = 0
  err = 0
  do j = 1, ny
    do i = 1, nx
      rnorm = b(i, j) - (4 * x(i, j) - x(i - 1, j) - x(i + 1, j) - x(i, j - 1) - x(i, j + 1))
      local(1) = local(1) + rnorm * rnorm
      ! Weights that differ from point to point, so that a transposed or
      ! shifted block gives another sum.
      local(2) = local(2) + x(i, j) * (1 + mod(3 * (i0 + i) + 7 * (j0 + j), 11) / 10.0_dp)
      xg = (i0 + i) * h
      yg = (j0 + j) * h
      err = max(err, abs(x(i, j) - xg * (1 - xg) * yg * (1 - yg)))
    end do
  end do
  call MPI_Allreduce(local, global, 2, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  rnorm = sqrt(global(1)) / bnorm
  checksum = global(2)
  call MPI_Allreduce(MPI_IN_PLACE, err, 1, MPI_DOUBLE_PRECISION, MPI_MAX, comm, ierr)

  if (rank == 0) then
    write (*, '(a,i0,a,i0,a,i0,8a)') 'cg: n=', n, ' ranks=', nprocs, ' iters=', iters, &
      ' residual=', trim(es(rnorm)), ' checksum=', trim(es(checksum)), &
      ' error=', trim(es(err)), ' time=', trim(fixed(elapsed))
  end if

  call MPI_Type_free(coltype, ierr)
  call MPI_Comm_free(comm, ierr)
  call MPI_Finalize(ierr)

contains

  ! Block distribution of m points over d parts: part c gets first+1..first+cnt,
  ! the first mod(m, d) parts one point more.
  subroutine split(m, d, c, first, cnt)
    integer, intent(in) :: m, d, c
    integer, intent(out) :: first, cnt
    cnt = m / d
    first = c * cnt + min(c, mod(m, d))
    if (c < mod(m, d)) cnt = cnt + 1
  end subroutine

  ! Refreshes the halo of v from the four neighbours. Buffers are passed by
  ! their first element (the `mpi` module takes choice buffers by address),
  ! never as array sections, which could be copies that outlive the call.
  subroutine halo(v)
    real(dp), intent(inout) :: v(0:nx + 1, 0:ny + 1)
    integer :: req(8), e
    ! Tags name the direction a message travels: 1 east, 2 west, 3 north,
    ! 4 south.
    call MPI_Irecv(v(0, 1), 1, coltype, west, 1, comm, req(1), e)
    call MPI_Irecv(v(nx + 1, 1), 1, coltype, east, 2, comm, req(2), e)
    call MPI_Irecv(v(1, 0), nx, MPI_DOUBLE_PRECISION, south, 3, comm, req(3), e)
    call MPI_Irecv(v(1, ny + 1), nx, MPI_DOUBLE_PRECISION, north, 4, comm, req(4), e)
    call MPI_Isend(v(nx, 1), 1, coltype, east, 1, comm, req(5), e)
    call MPI_Isend(v(1, 1), 1, coltype, west, 2, comm, req(6), e)
    call MPI_Isend(v(1, ny), nx, MPI_DOUBLE_PRECISION, north, 3, comm, req(7), e)
    call MPI_Isend(v(1, 1), nx, MPI_DOUBLE_PRECISION, south, 4, comm, req(8), e)
    call MPI_Waitall(8, req, MPI_STATUSES_IGNORE, e)
  end subroutine

  ! Sum of a over all ranks.
  function allsum(a) result(s)
    real(dp), intent(in) :: a
    real(dp) :: s
    integer :: e
    call MPI_Allreduce(a, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, e)
  end function

  ! Whether there is a command-line argument k; s gets it.
  logical function argument(k, s)
    integer, intent(in) :: k
    character(*), intent(out) :: s
    integer :: length
    call get_command_argument(k, s, length)
    argument = length > 0
  end function

  ! 17 significant digits: enough to tell two doubles apart.
  character(32) function es(v)
    real(dp), intent(in) :: v
    write (es, '(es24.16e3)') v
    es = adjustl(es)
  end function

  character(32) function fixed(v)
    real(dp), intent(in) :: v
    write (fixed, '(f16.6)') v
    fixed = adjustl(fixed)
  end function
end program
