#!/bin/sh
# Overhead of call paths (MPITRACE_CALLPATH=8, DWARF and frame-pointer
# unwinding) and hardware counters (MPITRACE_COUNTERS) on Debian's MPICH:
# ns per intercepted cheap call (MPI_Comm_rank in a tight loop, 11 frames
# below main, tests/c/bench_depth.c built -O2 -fno-omit-frame-pointer), one
# rank, journals not converted. Each round runs every configuration once,
# in turn; the medians over the rounds are printed last.
#   pmpi-shim/benches/depth.sh [CALLS] [ROUNDS] [COUNTERS]
# COUNTERS defaults to cycles,instructions (where the kernel refuses them,
# the shim says so and the run measures no counters: give e.g. task-clock).
# Uses target/release/libmpitrace.so (cargo build --release -p pmpi-shim).
. "$(dirname "$0")/common.sh"
calls=${1:-1000000}
rounds=${2:-5}
counters=${3:-cycles,instructions}
mpicc.mpich -O2 -fno-omit-frame-pointer "$here/../tests/c/bench_depth.c" -o "$work/bench"
configs="plain shim path8-dwarf path8-fp counters path8-dwarf+counters"
run() {
    rm -rf "$work/trace"
    case $1 in
        plain) pre="" ;;
        shim) pre="LD_PRELOAD=$lib" ;;
        path8-dwarf) pre="LD_PRELOAD=$lib MPITRACE_CALLPATH=8" ;;
        path8-fp) pre="LD_PRELOAD=$lib MPITRACE_CALLPATH=8 MPITRACE_UNWIND=fp" ;;
        counters) pre="LD_PRELOAD=$lib MPITRACE_COUNTERS=$counters" ;;
        path8-dwarf+counters) pre="LD_PRELOAD=$lib MPITRACE_CALLPATH=8 MPITRACE_COUNTERS=$counters" ;;
    esac
    # shellcheck disable=SC2086
    timeout 300 mpiexec.mpich -n 1 env $pre MPITRACE_DIR="$work/trace" MPITRACE_NO_CONVERT=1 "$work/bench" "$calls" \
        | sed -n 's/^call_ns //p'
}
for i in $(seq "$rounds"); do
    line="round $i:"
    for c in $configs; do
        ns=$(run "$c")
        echo "$c $ns" >>"$work/all"
        line="$line $c $ns"
    done
    echo "$line"
done
echo "medians (ns per call) over $rounds rounds:"
for c in $configs; do
    printf '  %-22s %s\n' "$c" "$(awk -v c="$c" '$1 == c { print $2 }' "$work/all" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
done
