#!/usr/bin/env bash
# Installs the MPI library and its tools into a prefix, laid out as every MPI
# is: PREFIX/bin (mpicc mpicxx mpirun mpiexec), PREFIX/lib (libmpi.so and the
# names libmpi.so.12 / libmpich.so.12), PREFIX/include/mpi.h.
#
#   mpi-core/install.sh /opt/mpi-core        # after cargo build --release
set -euo pipefail
PREFIX=${1:?usage: mpi-core/install.sh PREFIX}
cd "$(dirname "$0")/.."
B=${CARGO_TARGET_DIR:-target}/${MPICORE_INSTALL_PROFILE:-release}
for f in mpicc mpicxx mpirun mpiexec libmpi.so include/mpi.h; do
  [ -e "$B/$f" ] || { echo "install.sh: $B/$f missing; run cargo build --release --workspace first" >&2; exit 1; }
done
mkdir -p "$PREFIX/bin" "$PREFIX/lib" "$PREFIX/include"
install -m 755 "$B/mpicc" "$B/mpicxx" "$B/mpirun" "$B/mpiexec" "$PREFIX/bin/"
install -m 755 "$B/libmpi.so" "$PREFIX/lib/libmpi.so.12"
ln -sf libmpi.so.12 "$PREFIX/lib/libmpi.so"
ln -sf libmpi.so.12 "$PREFIX/lib/libmpich.so.12"
install -m 644 "$B/include/mpi.h" "$PREFIX/include/"
echo "installed into $PREFIX"
