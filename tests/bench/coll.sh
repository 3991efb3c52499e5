#!/usr/bin/env bash
# Collectives benchmark: tests/bench/coll.c on 2, 4 and 8 ranks (4 and 8
# share the machine's cores) for this project's MPI, Debian's MPICH and Open
# MPI, runs interleaved, median of REPS runs per case. Prints a Markdown table;
# ratios are theirs / ours, so above 1 means we are faster.
#
#   tests/bench/coll.sh            # REPS=3, 0.1 s per case and run
#   BUDGET=0.3 REPS=5 tests/bench/coll.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-3}
BUDGET=${BUDGET:-0.1}
RANKS=${RANKS:-2 4 8}
cargo build --release -q -p mpi-core -p mpi-launcher
B=$PWD/target/release
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$B/mpicc" -O2 -o "$W/coll.ours" tests/bench/coll.c
mpicc.mpich -O2 -o "$W/coll.mpich" tests/bench/coll.c
mpicc.openmpi -O2 -o "$W/coll.ompi" tests/bench/coll.c
run() { # impl n
  case $1 in
    ours) timeout 600 "$B/mpirun" -n "$2" "$W/coll.ours" "$BUDGET" ;;
    mpich) timeout 600 mpiexec.mpich -n "$2" "$W/coll.mpich" "$BUDGET" ;;
    ompi) timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe -n "$2" "$W/coll.ompi" "$BUDGET" 2>/dev/null ;;
  esac
}
for n in $RANKS; do
  for rep in $(seq "$REPS"); do
    for impl in ours mpich ompi; do
      run "$impl" "$n" | awk -v i="$impl" -v n="$n" '{print i, n, $1, $2, $3}' >> "$W/all"
    done
  done
done
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "| ranks | collective | bytes | ours (us) | MPICH/ours | Open MPI/ours |"
echo "| --- | --- | --- | --- | --- | --- |"
awk '{print $2, $3, $4}' "$W/all" | sort -u -k1,1n -k2,2 -k3,3n | while read -r n name bytes; do
  o=$(awk -v n="$n" -v c="$name" -v b="$bytes" '$1=="ours" && $2==n && $3==c && $4==b {print $5}' "$W/all" | median)
  m=$(awk -v n="$n" -v c="$name" -v b="$bytes" '$1=="mpich" && $2==n && $3==c && $4==b {print $5}' "$W/all" | median)
  p=$(awk -v n="$n" -v c="$name" -v b="$bytes" '$1=="ompi" && $2==n && $3==c && $4==b {print $5}' "$W/all" | median)
  awk -v n="$n" -v c="$name" -v b="$bytes" -v o="$o" -v m="$m" -v p="$p" \
    'BEGIN {printf "| %s | %s | %s | %.2f | %.2f | %.2f |\n", n, c, b, o, m / o, p / o}'
done
