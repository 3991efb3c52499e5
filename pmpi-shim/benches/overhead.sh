#!/bin/sh
# Overhead of libmpitrace.so on Debian's MPICH (or Open MPI with
# MPI=openmpi, or this project's libmpi_abi.so, the MPI-5 standard ABI, with
# MPI=stdabi; MPI=ours is this project's libmpi.so.12, the MPICH ABI, to
# compare with), with and without the shim in the same run (alternating,
# ROUNDS times): ns per intercepted cheap call (MPI_Comm_rank in a tight
# loop), 8-byte ping-pong half round trip, and bytes per event of the
# resulting Parquet trace.
#   [MPI=mpich|openmpi|stdabi|ours] pmpi-shim/benches/overhead.sh [CALLS] [PINGPONGS] [ROUNDS]
# Uses target/release/libmpitrace.so (cargo build --release -p pmpi-shim;
# for stdabi and ours also -p mpi-core -p mpi-stdabi -p mpi-launcher).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
lib=${MPITRACE_LIB:-$root/target/release/libmpitrace.so}
calls=${1:-2000000}
pings=${2:-200000}
rounds=${3:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH
case ${MPI:-mpich} in
    mpich) cc=mpicc.mpich; run="mpiexec.mpich -n 2" ;;
    openmpi) cc=mpicc.openmpi; run="mpirun.openmpi --allow-run-as-root --oversubscribe -n 2" ;;
    stdabi) cc=$root/target/release/mpicc_abi; run="$root/target/release/mpirun -n 2" ;;
    ours) cc=$root/target/release/mpicc; run="$root/target/release/mpirun -n 2" ;;
    *) echo "MPI must be mpich, openmpi, stdabi or ours" >&2; exit 2 ;;
esac
$cc -O2 "$here/../tests/c/bench.c" -o "$work/bench"
for i in $(seq "$rounds"); do
    plain=$(timeout 300 $run "$work/bench" "$calls" "$pings")
    rm -rf "$work/trace"
    traced=$(timeout 300 $run env LD_PRELOAD="$lib" MPITRACE_DIR="$work/trace" "$work/bench" "$calls" "$pings")
    events=$(( 2 * calls + 4 * pings ))
    bytes=$(cat "$work"/trace/events/*.parquet | wc -c)
    echo "round $i: plain [$plain] traced [$traced] events~$events parquet_bytes $bytes bytes/event $(echo "scale=2; $bytes / $events" | bc)"
done
