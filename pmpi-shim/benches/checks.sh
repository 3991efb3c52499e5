#!/bin/sh
# The cost of what the shim records for the correctness checks
# (analyzers/CHECKS.md), on Debian's MPICH: ns per iteration of
# tests/c/bench_checks.c without the shim, with it, and with it and
# MPITRACE_CHECK_BUFFERS=1, alternating, ROUNDS times. One rank (the
# nonblocking exchanges go to itself): a second rank busy-polling on a
# shared 2-core machine makes the numbers noise.
#   pmpi-shim/benches/checks.sh [ROUNDS]
# Uses target/release/libmpitrace.so (cargo build --release -p pmpi-shim).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
lib=${MPITRACE_LIB:-$root/target/release/libmpitrace.so}
rounds=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH
mpicc.mpich -O2 -Wno-stringop-overflow "$here/../tests/c/bench_checks.c" -o "$work/bench"
one() { # NAME RANKS ARGS...
    name=$1; ranks=$2; shift 2
    plain=$(timeout 300 mpiexec.mpich -n "$ranks" "$work/bench" "$@")
    rm -rf "$work/t1" "$work/t2"
    traced=$(timeout 300 mpiexec.mpich -n "$ranks" env LD_PRELOAD="$lib" MPITRACE_DIR="$work/t1" MPITRACE_NO_CONVERT=1 "$work/bench" "$@")
    checked=$(timeout 300 mpiexec.mpich -n "$ranks" env LD_PRELOAD="$lib" MPITRACE_DIR="$work/t2" MPITRACE_NO_CONVERT=1 MPITRACE_CHECK_BUFFERS=1 "$work/bench" "$@")
    echo "$name: without $plain ns, shim $traced ns, shim + check-buffers $checked ns"
}
for i in $(seq "$rounds"); do
    echo "round $i (load $(cut -d' ' -f1 /proc/loadavg))"
    one "commit vector+struct" 1 commit 20000
    one "isend 8 B" 1 isend 200000 8
    one "isend 64 KiB" 1 isend 20000 65536
    one "isend 1 MiB" 1 isend 1000 1048576
    one "isendv 4 KiB (strided)" 1 isendv 50000 4096
done
