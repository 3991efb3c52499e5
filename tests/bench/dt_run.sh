#!/usr/bin/env bash
# Datatype benchmark (tests/bench/dt_pack.c): this project's MPI against
# Debian's MPICH and Open MPI, same source, same iteration counts, 2 ranks.
# The three run interleaved, REPS rounds (the order rotates every round, so
# none always runs first); prints a Markdown table of the median time per
# case over the rounds (the best in parentheses) and the ratios of the
# medians ours / theirs (below 1: we are faster).
#
#   tests/bench/dt_run.sh                                # full run
#   QUICK=1 tests/bench/dt_run.sh                        # fewer iterations
#   REPS=21 ONLY=pack_sub,unpack_sub tests/bench/dt_run.sh   # some cases
#   CPU=1 ONLY=pack_sub,unpack_sub tests/bench/dt_run.sh # thread CPU time
#   ROWS=1 tests/bench/dt_run.sh                         # also the copy floor
#
# ROWS=1 also runs tests/bench/dt_rows.c (no MPI): the rows of pack_sub /
# unpack_sub copied by memcpy, rep movsb, AVX2 loops with and without
# prefetch, non-temporal stores, and one flat memcpy of the 2 MiB; with the
# buffers 64-byte aligned, then 16 bytes past (as malloc places them).
#
# Before each run the script waits (up to 5 s) until no other process is
# running: quiet.sh stops others' compilers and test harnesses, but MPI
# programs those already started keep running for a while, and a run beside
# them measures them too.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-9}
ONLY=${ONLY:-all}
CLOCK=$([ -n "${CPU:-}" ] && echo cpu || echo wall)
SCALE=$([ -n "${QUICK:-}" ] && echo 10 || echo 1)
cargo build --release -q -p mpi-core -p mpi-launcher
B=${CARGO_TARGET_DIR:-$PWD/target}/release
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$B/mpicc" -O2 -o "$W/ours" tests/bench/dt_pack.c
mpicc.mpich -O2 -o "$W/mpich" tests/bench/dt_pack.c
mpicc.openmpi -O2 -o "$W/ompi" tests/bench/dt_pack.c
IMPLS=(ours mpich ompi)
settle() {
  for _ in $(seq 10); do
    busy=$(ps -eo pid=,stat=,comm= | awk '$2 ~ /^R/ && $3 != "ps" && $3 != "awk"' | wc -l)
    [ "$busy" -eq 0 ] && return
    sleep 0.5
  done
  echo "dt_run.sh: other programs still running:" $(ps -eo stat=,comm= | awk '$1 ~ /^R/ && $2 != "ps" && $2 != "awk" {print $2}') >&2
}
declare -A ALL
CASES=()
for rep in $(seq "$REPS"); do
  for k in 0 1 2; do
    impl=${IMPLS[$(((rep + k) % 3))]}
    settle
    case $impl in
      ours) out=$(timeout 300 "$B/mpirun" -n 2 "$W/ours" "$SCALE" "$ONLY" "$CLOCK") ;;
      mpich) out=$(timeout 300 mpiexec.mpich -n 2 "$W/mpich" "$SCALE" "$ONLY" "$CLOCK") ;;
      ompi) out=$(timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 "$W/ompi" "$SCALE" "$ONLY" "$CLOCK" 2>/dev/null) ;;
    esac
    while read -r name us; do
      [ -z "$name" ] && continue
      [ -z "${ALL[ours,$name]+x}${ALL[mpich,$name]+x}${ALL[ompi,$name]+x}" ] && CASES+=("$name")
      ALL[$impl,$name]="${ALL[$impl,$name]:-} $us"
    done <<< "$out"
  done
done
# median and minimum of a list of numbers
median() { tr ' ' '\n' <<< "$1" | grep . | sort -g | awk '{v[NR]=$1} END{printf "%.3f", NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
least() { tr ' ' '\n' <<< "$1" | grep . | sort -g | head -1; }
ratio() { awk "BEGIN{printf \"%.2f\", $1 / $2}"; }
echo "| case (us per operation, $CLOCK clock, median of $REPS (best)) | ours | MPICH | Open MPI | ours/MPICH | ours/Open MPI |"
echo "| --- | --- | --- | --- | --- | --- |"
for c in "${CASES[@]}"; do
  o=$(median "${ALL[ours,$c]}"); m=$(median "${ALL[mpich,$c]}"); p=$(median "${ALL[ompi,$c]}")
  echo "| $c | $o ($(least "${ALL[ours,$c]}")) | $m ($(least "${ALL[mpich,$c]}")) | $p ($(least "${ALL[ompi,$c]}")) | $(ratio "$o" "$m") | $(ratio "$o" "$p") |"
done
if [ -n "${ROWS:-}" ]; then
  cc -O2 -o "$W/rows" tests/bench/dt_rows.c
  echo
  echo "| row copy, no MPI (us, $CLOCK clock, median of 31 (best)) | aligned | 16 bytes off |"
  echo "| --- | --- | --- |"
  settle
  "$W/rows" 31 "$CLOCK" 16 > "$W/off16"
  "$W/rows" 31 "$CLOCK" 0 | awk -v f="$W/off16" 'BEGIN{while ((getline l < f) > 0) {split(l, a, " "); o[a[1]] = a[2] " (" a[3] ")"}}
    {printf "| %s | %s (%s) | %s |\n", $1, $2, $3, ($1 in o) ? o[$1] : "-"}'
fi
