#!/usr/bin/env bash
# Point-to-point benchmark: this project's MPI against Debian's MPICH and
# Open MPI, same source, same run. REPS rounds; in each round every library
# runs the ping-pong on 2 and 4 ranks and the ring of 8 ranks, in an order
# that rotates from round to round (none always runs first). Prints a
# Markdown table of the medians over the rounds and their ratios (ours /
# theirs: below 1 is better for latency, above 1 for bandwidth).
#
#   tests/bench/run.sh            # REPS=5
#   QUICK=1 tests/bench/run.sh    # fewer iterations
#   REPS=9 IMPLS="ours ompi" tests/bench/run.sh
#
# MPICH's ranks busy-poll, so with more ranks than cores each of its
# messages waits for a time slice (milliseconds): its oversubscribed runs
# (4-rank ping-pong, ring) use a twentieth of the iterations.
# Needs: apt packages mpich libmpich-dev openmpi-bin libopenmpi-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
REPS=${REPS:-5}
IMPLS=${IMPLS:-ours mpich ompi}
SCALE=$([ -n "${QUICK:-}" ] && echo 10 || echo 1)
LAPS=$((2000 / SCALE))
[ -n "${NOBUILD:-}" ] || cargo build --release -q -p mpi-core -p mpi-launcher
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# A copy of the library, so a build meanwhile does not change what runs.
mkdir -p "$W/lib"
cp -a "$ROOT"/target/release/{mpicc,mpirun,libmpi.so,libmpi.so.12,libmpich.so.12} "$W/lib/"
cp -a "$ROOT"/target/release/include "$W/lib/"
B=$W/lib
for p in pingpong ring; do
  "$B/mpicc" -O2 -o "$W/$p.ours" "tests/bench/$p.c"
  mpicc.mpich -O2 -o "$W/$p.mpich" "tests/bench/$p.c"
  mpicc.openmpi -O2 -o "$W/$p.ompi" "tests/bench/$p.c"
done
run() { # impl n prog args...
  local impl=$1 n=$2 prog=$3; shift 3
  case $impl in
    ours) timeout 300 "$B/mpirun" -n "$n" "$W/$prog.ours" "$@" ;;
    mpich) timeout 300 mpiexec.mpich -n "$n" "$W/$prog.mpich" "$@" ;;
    ompi) timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -n "$n" "$W/$prog.ompi" "$@" 2>/dev/null ;;
  esac
}
slow() { [ "$1" = mpich ] && [ "$2" -gt "$(nproc)" ] && echo 20 || echo 1; }
declare -A V  # key -> space-separated values, one per round
read -r -a order <<<"$IMPLS"
for ((rep = 0; rep < REPS; rep++)); do
  for ((k = 0; k < ${#order[@]}; k++)); do
    impl=${order[$(((k + rep) % ${#order[@]}))]}
    for n in 2 4; do
      while read -r size us _; do
        V[$impl,$n,$size]+=" $us"
      done < <(run "$impl" "$n" pingpong $((SCALE * $(slow "$impl" "$n"))))
    done
    us=$(run "$impl" 8 ring $((LAPS / $(slow "$impl" 8))) | awk '{print $4}')
    V[$impl,ring]+=" ${us:-nan}"
  done
done
med() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{a[NR]=$1} END{if (NR) printf "%.3f", (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; else print "nan"}'; }
cell() { [ -n "${V[$1]:-}" ] && med "${V[$1]}" || echo nan; }
ratio() { awk "BEGIN{ if ($1 + 0 > 0 && $2 + 0 > 0) printf \"%.2f\", $1 / $2; else print \"-\" }"; }
gbs() { awk "BEGIN{ if ($2 + 0 > 0) printf \"%.2f\", $1 / $2 / 1000; else print \"nan\" }"; }
echo "| measurement (median of $REPS) | ours | MPICH | Open MPI | ours/MPICH | ours/Open MPI |"
echo "| --- | --- | --- | --- | --- | --- |"
for n in 2 4; do
  for size in 8 1024 65536 4194304; do
    o=$(cell "ours,$n,$size"); m=$(cell "mpich,$n,$size"); p=$(cell "ompi,$n,$size")
    if [ "$size" -le 1024 ]; then
      echo "| $n ranks, $size B latency (us) | $o | $m | $p | $(ratio "$o" "$m") | $(ratio "$o" "$p") |"
    else
      bo=$(gbs "$size" "$o"); bm=$(gbs "$size" "$m"); bp=$(gbs "$size" "$p")
      echo "| $n ranks, $size B bandwidth (GB/s) | $bo | $bm | $bp | $(ratio "$bo" "$bm") | $(ratio "$bo" "$bp") |"
    fi
  done
done
o=$(cell ours,ring); m=$(cell mpich,ring); p=$(cell ompi,ring)
echo "| ring of 8 ranks on $(nproc) cores (us per hop) | $o | $m | $p | $(ratio "$o" "$m") | $(ratio "$o" "$p") |"
