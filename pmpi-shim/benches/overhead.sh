#!/bin/sh
# Overhead of libmpitrace.so on Debian's MPICH, with and without the shim in
# the same run (alternating, ROUNDS times): ns per intercepted cheap call
# (MPI_Comm_rank in a tight loop), 8-byte ping-pong half round trip, and
# bytes per event of the resulting Parquet trace.
#   pmpi-shim/benches/overhead.sh [CALLS] [PINGPONGS] [ROUNDS]
# Uses target/release/libmpitrace.so (cargo build --release -p pmpi-shim).
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
mpicc.mpich -O2 "$here/../tests/c/bench.c" -o "$work/bench"
for i in $(seq "$rounds"); do
    plain=$(timeout 300 mpiexec.mpich -n 2 "$work/bench" "$calls" "$pings")
    rm -rf "$work/trace"
    traced=$(timeout 300 mpiexec.mpich -n 2 env LD_PRELOAD="$lib" MPITRACE_DIR="$work/trace" "$work/bench" "$calls" "$pings")
    events=$(( 2 * calls + 4 * pings ))
    bytes=$(cat "$work"/trace/events/*.parquet | wc -c)
    echo "round $i: plain [$plain] traced [$traced] events~$events parquet_bytes $bytes bytes/event $(echo "scale=2; $bytes / $events" | bc)"
done
