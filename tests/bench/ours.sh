# Sourced by the benchmark scripts: builds this project's MPI (unless
# NOBUILD is set) and copies the library and mpirun into "$W/lib" of a
# fresh temporary directory $W (removed on exit), so a build during the
# benchmark does not change what it measures. Sets B (the build's
# directory) and W. mpirun puts its own directory first in the ranks'
# library path.
[ -n "${NOBUILD:-}" ] || nice -n 15 cargo build --release -q -p mpi-core -p mpi-launcher
B=${CARGO_TARGET_DIR:-$PWD/target}/release
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/lib"
cp "$B/libmpi.so" "$B/mpirun" "$W/lib/"
ln -s libmpi.so "$W/lib/libmpi.so.12"
