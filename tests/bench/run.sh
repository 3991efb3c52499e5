#!/usr/bin/env bash
# Point-to-point benchmark: this project's MPI against Debian's MPICH and
# Open MPI, same source, same run, back to back. Prints a Markdown table of
# ratios (ours / theirs: below 1 is better for latency, above 1 for bandwidth).
#
#   tests/bench/run.sh            # full run
#   QUICK=1 tests/bench/run.sh    # fewer iterations
#
# Needs: apt packages mpich libmpich-dev openmpi-bin libopenmpi-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
REPS=${REPS:-3}
SCALE=$([ -n "${QUICK:-}" ] && echo 10 || echo 1)
cargo build --release -q -p mpi-core -p mpi-launcher
B=$ROOT/target/release
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
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
# best (minimum) half round trip per size over REPS runs
declare -A LAT
for n in 2 4; do
  for impl in ours mpich ompi; do
    for rep in $(seq "$REPS"); do
      while read -r size us gbs; do
        key="$impl,$n,$size"
        old=${LAT[$key]:-}
        if [ -z "$old" ] || awk "BEGIN{exit !($us < $old)}"; then LAT[$key]=$us; fi
      done < <(run "$impl" "$n" pingpong "$SCALE")
    done
  done
done
declare -A RING
for impl in ours mpich ompi; do
  for rep in $(seq "$REPS"); do
    us=$(run "$impl" 8 ring $((2000 / SCALE)) | awk '{print $4}')
    old=${RING[$impl]:-}
    if [ -z "$old" ] || awk "BEGIN{exit !($us < $old)}"; then RING[$impl]=$us; fi
  done
done
ratio() { awk "BEGIN{printf \"%.2f\", $1 / $2}"; }
echo "| measurement | ours | MPICH | Open MPI | ours/MPICH | ours/Open MPI |"
echo "| --- | --- | --- | --- | --- | --- |"
for n in 2 4; do
  for size in 8 1024 65536 4194304; do
    o=${LAT[ours,$n,$size]}; m=${LAT[mpich,$n,$size]}; p=${LAT[ompi,$n,$size]}
    if [ "$size" -le 1024 ]; then
      echo "| $n ranks, $size B latency (us) | $o | $m | $p | $(ratio "$o" "$m") | $(ratio "$o" "$p") |"
    else
      bo=$(awk "BEGIN{printf \"%.2f\", $size / $o / 1000}"); bm=$(awk "BEGIN{printf \"%.2f\", $size / $m / 1000}"); bp=$(awk "BEGIN{printf \"%.2f\", $size / $p / 1000}")
      echo "| $n ranks, $size B bandwidth (GB/s) | $bo | $bm | $bp | $(ratio "$bo" "$bm") | $(ratio "$bo" "$bp") |"
    fi
  done
done
echo "| ring of 8 ranks on $(nproc) cores (us per hop) | ${RING[ours]} | ${RING[mpich]} | ${RING[ompi]} | $(ratio "${RING[ours]}" "${RING[mpich]}") | $(ratio "${RING[ours]}" "${RING[ompi]}") |"
