#!/usr/bin/env bash
# Installs the MPI library and its tools into a prefix, laid out as every MPI
# is: PREFIX/bin (mpicc mpicxx mpifort mpif90 mpif77 mpirun mpiexec),
# PREFIX/lib (libmpi.so and the names libmpi.so.12 / libmpich.so.12, and the
# Fortran library's names libmpichfort.so.12 / libmpifort.so.12: the Fortran
# binding lives in libmpi.so), PREFIX/include (mpi.h, mpif.h, and the sources
# of the `mpi` and `mpi_f08` modules, which mpifort compiles once per
# Fortran compiler into PREFIX/include/fortran/, or ~/.cache/mpi-core when
# the prefix is read-only; a .mod file belongs to one compiler version).
# The MPI-5 standard ABI beside it: PREFIX/lib/libmpi_abi.so.1 (and
# libmpi_abi.so), PREFIX/include/mpi_abi.h (also as mpi_abi/mpi.h, the
# header `mpicc -mpi-abi` and PREFIX/bin/mpicc_abi, mpicxx_abi compile with).
#
#   mpi-core/install.sh /opt/mpi-core        # after cargo build --release
set -euo pipefail
PREFIX=${1:?usage: mpi-core/install.sh PREFIX}
cd "$(dirname "$0")/.."
B=${CARGO_TARGET_DIR:-target}/${MPICORE_INSTALL_PROFILE:-release}
for f in mpicc mpicxx mpicc_abi mpicxx_abi mpifort mpif90 mpif77 mpirun mpiexec libmpi.so libmpi_abi.so include/mpi.h include/mpi_abi.h include/mpif.h include/mpi.f90 include/mpi_f08.f90; do
  [ -e "$B/$f" ] || { echo "install.sh: $B/$f missing; run cargo build --release --workspace first" >&2; exit 1; }
done
mkdir -p "$PREFIX/bin" "$PREFIX/lib" "$PREFIX/include/mpi_abi"
install -m 755 "$B/mpicc" "$B/mpicxx" "$B/mpicc_abi" "$B/mpicxx_abi" "$B/mpifort" "$B/mpif90" "$B/mpif77" "$B/mpirun" "$B/mpiexec" "$PREFIX/bin/"
install -m 755 "$B/libmpi.so" "$PREFIX/lib/libmpi.so.12"
ln -sf libmpi.so.12 "$PREFIX/lib/libmpi.so"
ln -sf libmpi.so.12 "$PREFIX/lib/libmpich.so.12"
ln -sf libmpi.so.12 "$PREFIX/lib/libmpichfort.so.12"
ln -sf libmpi.so.12 "$PREFIX/lib/libmpifort.so.12"
install -m 755 "$B/libmpi_abi.so" "$PREFIX/lib/libmpi_abi.so.1"
ln -sf libmpi_abi.so.1 "$PREFIX/lib/libmpi_abi.so"
install -m 644 "$B/include/mpi_abi.h" "$PREFIX/include/mpi_abi.h"
install -m 644 "$B/include/mpi_abi.h" "$PREFIX/include/mpi_abi/mpi.h"
install -m 644 "$B/include/mpi.h" "$B/include/mpif.h" "$B/include/mpi.f90" "$B/include/mpi_f08.f90" "$PREFIX/include/"
# The modules for the default Fortran compiler, now, while the prefix is
# writable (other compilers get theirs on first use).
if command -v "${MPICORE_FC:-gfortran}" > /dev/null; then
  tmp=$(mktemp -d)
  printf 'program p\nuse mpi_f08\nend program\n' > "$tmp/p.f90"
  (cd "$tmp" && "$PREFIX/bin/mpifort" -c p.f90) || echo "install.sh: warning: the Fortran modules were not compiled" >&2
  rm -rf "$tmp"
fi
echo "installed into $PREFIX"
