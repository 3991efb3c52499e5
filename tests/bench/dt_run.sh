#!/usr/bin/env bash
# Datatype benchmark (tests/bench/dt_pack.c): this project's MPI against
# Debian's MPICH and Open MPI, same source, back to back, 2 ranks. Prints a
# Markdown table of the best time of REPS runs per case and the ratios
# ours / theirs (below 1: we are faster).
#
#   tests/bench/dt_run.sh           # full run
#   QUICK=1 tests/bench/dt_run.sh   # fewer iterations
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-3}
SCALE=$([ -n "${QUICK:-}" ] && echo 10 || echo 1)
cargo build --release -q -p mpi-core -p mpi-launcher
B=${CARGO_TARGET_DIR:-$PWD/target}/release
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$B/mpicc" -O2 -o "$W/ours" tests/bench/dt_pack.c
mpicc.mpich -O2 -o "$W/mpich" tests/bench/dt_pack.c
mpicc.openmpi -O2 -o "$W/ompi" tests/bench/dt_pack.c
declare -A BEST
CASES=()
for rep in $(seq "$REPS"); do
  for impl in ours mpich ompi; do
    case $impl in
      ours) out=$(timeout 300 "$B/mpirun" -n 2 "$W/ours" "$SCALE") ;;
      mpich) out=$(timeout 300 mpiexec.mpich -n 2 "$W/mpich" "$SCALE") ;;
      ompi) out=$(timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 "$W/ompi" "$SCALE" 2>/dev/null) ;;
    esac
    while read -r name us; do
      [ "$impl,$rep" = "ours,1" ] && CASES+=("$name")
      old=${BEST[$impl,$name]:-}
      if [ -z "$old" ] || awk "BEGIN{exit !($us < $old)}"; then BEST[$impl,$name]=$us; fi
    done <<< "$out"
  done
done
ratio() { awk "BEGIN{printf \"%.2f\", $1 / $2}"; }
echo "| case (us per operation) | ours | MPICH | Open MPI | ours/MPICH | ours/Open MPI |"
echo "| --- | --- | --- | --- | --- | --- |"
for c in "${CASES[@]}"; do
  o=${BEST[ours,$c]}; m=${BEST[mpich,$c]}; p=${BEST[ompi,$c]}
  echo "| $c | $o | $m | $p | $(ratio "$o" "$m") | $(ratio "$o" "$p") |"
done
