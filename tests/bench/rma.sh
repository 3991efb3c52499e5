#!/usr/bin/env bash
# One-sided communication benchmark: tests/bench/rma.c on 2 ranks for this
# project's MPI, Debian's MPICH and Open MPI. Many short runs, interleaved
# (the order rotates each repetition); per case the median of each
# implementation and the ratio of the medians (theirs / ours, so above 1
# means we are faster), with the spread of ours (first and third quartile),
# as a Markdown table.
#
#   tests/bench/rma.sh                 # REPS=9, 0.05 s per case and run
#   REPS=15 BUDGET=0.1 tests/bench/rma.sh
#   IMPLS="ours mpich" NOBUILD=1 tests/bench/rma.sh
# Our library is copied first, so a build meanwhile does not change it.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-9}
BUDGET=${BUDGET:-0.05}
IMPLS=${IMPLS:-ours mpich ompi}
[ -n "${NOBUILD:-}" ] || nice -n 15 cargo build --release -q -p mpi-core -p mpi-launcher
B=${CARGO_TARGET_DIR:-$PWD/target}/release
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir "$W/lib"
cp "$B/libmpi.so" "$W/lib/libmpi.so.12"
"$B/mpicc" -O2 -o "$W/rma.ours" tests/bench/rma.c
mpicc.mpich -O2 -o "$W/rma.mpich" tests/bench/rma.c
mpicc.openmpi -O2 -o "$W/rma.ompi" tests/bench/rma.c
run() { # impl
  case $1 in
    ours) LD_LIBRARY_PATH="$W/lib" timeout 300 "$B/mpirun" -n 2 "$W/rma.ours" "$BUDGET" ;;
    mpich) timeout 300 mpiexec.mpich -n 2 "$W/rma.mpich" "$BUDGET" ;;
    ompi) timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 "$W/rma.ompi" "$BUDGET" 2>/dev/null ;;
  esac
}
read -r -a impls <<< "$IMPLS"
load0=$(cut -d" " -f1-3 /proc/loadavg)
for rep in $(seq "$REPS"); do
  k=${#impls[@]}
  for i in $(seq 0 $((k - 1))); do
    impl=${impls[$(((i + rep) % k))]}
    run "$impl" | awk -v i="$impl" '{print i, $1, $2, $3}' >> "$W/all"
  done
done
quant() { sort -g | awk -v q="$1" '{v[NR]=$1} END {if (NR == 0) print "nan"; else print v[int(q * (NR - 1) + 1.5)]}'; }
pick() { awk -v im="$1" -v c="$2" -v b="$3" '$1==im && $2==c && $3==b {print $4}' "$W/all"; }
echo "Load average before: $load0, after: $(cut -d" " -f1-3 /proc/loadavg); $REPS runs per implementation, $BUDGET s per case and run"
echo
echo "| case | bytes | ours (us) | ours q1-q3 | MPICH (us) | Open MPI (us) | MPICH/ours | Open MPI/ours |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
awk '$1=="ours" {print $2, $3}' "$W/all" | awk '!seen[$0]++' | while read -r name bytes; do
  o=$(pick ours "$name" "$bytes" | quant 0.5)
  q1=$(pick ours "$name" "$bytes" | quant 0.25)
  q3=$(pick ours "$name" "$bytes" | quant 0.75)
  m=$(pick mpich "$name" "$bytes" | quant 0.5)
  p=$(pick ompi "$name" "$bytes" | quant 0.5)
  awk -v c="$name" -v b="$bytes" -v o="$o" -v q1="$q1" -v q3="$q3" -v m="$m" -v p="$p" \
    'function r(x) { return (x == "nan" || o == "nan") ? "-" : sprintf("%.2f", x / o) }
     function t(x) { return x == "nan" ? "-" : sprintf("%.3f", x) }
     BEGIN {printf "| %s | %s | %s | %s-%s | %s | %s | %s | %s |\n", c, b, t(o), t(q1), t(q3), t(m), t(p), r(m), r(p)}'
done
