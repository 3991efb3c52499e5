#!/usr/bin/env bash
# The microbenchmarks as users run them (tests/bench/osu.c: the OSU
# micro-benchmarks' method) on this project's MPI, Debian's MPICH and Open
# MPI, same source, same run: REPS rounds, in each every library runs every
# case, in an order that rotates from round to round. Prints a Markdown
# table of the medians over the rounds and the ratios ours / theirs (below
# 1 is better for times, above 1 for bandwidth and message rate), and keeps
# every raw line in $OUT (default target/osu-results.txt).
#
#   tests/bench/osu.sh              # REPS=5
#   REPS=9 IMPLS="ours ompi" tests/bench/osu.sh
#   QUICK=1 tests/bench/osu.sh      # a tenth of the iterations
#
# MPICH's ranks busy-poll, so with more ranks than cores each message waits
# for a time slice: its oversubscribed cases (8 ranks on 2 cores) run a
# twentieth of the iterations (the figures are per operation either way).
# Needs: apt packages mpich libmpich-dev openmpi-bin libopenmpi-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
REPS=${REPS:-5}
IMPLS=${IMPLS:-ours mpich ompi}
SCALE=$([ -n "${QUICK:-}" ] && echo 10 || echo 1)
OUT=${OUT:-$ROOT/target/osu-results.txt}
[ -n "${NOBUILD:-}" ] || cargo build --release -q -p mpi-core -p mpi-launcher
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# A copy of the library, so a build meanwhile does not change what runs.
mkdir -p "$W/lib"
cp -a "$ROOT"/target/release/{mpicc,mpirun,libmpi.so,libmpi.so.12,libmpich.so.12} "$W/lib/"
cp -a "$ROOT"/target/release/include "$W/lib/"
"$W/lib/mpicc" -O2 -o "$W/osu.ours" tests/bench/osu.c
mpicc.mpich -O2 -Wno-stringop-overflow -o "$W/osu.mpich" tests/bench/osu.c
mpicc.openmpi -O2 -o "$W/osu.ompi" tests/bench/osu.c

# mode ranks max_bytes
CASES=(
  "latency 2 4194304"
  "bw 2 4194304"
  "bcast 4 1024" "bcast 8 1024"
  "allreduce 4 1024" "allreduce 8 1024"
  "alltoall 4 1024" "alltoall 8 1024"
  "reduce 4 1024"
  "barrier 4 0" "barrier 8 0"
)
run() { # impl ranks mode max
  local impl=$1 n=$2 mode=$3 max=$4 scale=$SCALE
  case $impl in
    ours) timeout 600 "$W/lib/mpirun" -n "$n" "$W/osu.ours" "$mode" "$max" "$scale" ;;
    mpich)
      [ "$n" -gt "$(nproc)" ] && scale=$((scale * 20))
      timeout 600 mpiexec.mpich -n "$n" "$W/osu.mpich" "$mode" "$max" "$scale"
      ;;
    ompi) timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe -n "$n" "$W/osu.ompi" "$mode" "$max" "$scale" 2>/dev/null ;;
  esac
}
: >"$OUT"
read -r -a impls <<<"$IMPLS"
for ((round = 0; round < REPS; round++)); do
  for ((k = 0; k < ${#impls[@]}; k++)); do
    impl=${impls[$(((k + round) % ${#impls[@]}))]}
    for c in "${CASES[@]}"; do
      read -r mode n max <<<"$c"
      run "$impl" "$n" "$mode" "$max" | sed "s/^/$round $impl $n /" >>"$OUT" || echo "$impl $c failed" >&2
    done
  done
done
echo "# $(date -u '+%F %H:%M') UTC, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), REPS=$REPS, SCALE=$SCALE"
python3 - "$OUT" "$IMPLS" <<'EOF'
import sys, statistics
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 6:
        continue
    _, impl, n, mode, size = f[:5]
    vals = [float(x) for x in f[5:]]
    rows[(mode, int(n), int(size), impl)].append(vals)
impls = sys.argv[2].split()
picks = {
    "latency": [8, 1024, 4194304], "bw": [8, 4194304], "bcast": [8, 1024], "allreduce": [8, 1024],
    "alltoall": [8, 1024], "reduce": [8, 1024], "barrier": [0],
}
others = [i for i in impls if i != "ours"]
print("| case | " + " | ".join(impls) + " | " + " | ".join(f"ours/{o}" for o in others) + " |")
print("|---" * (1 + len(impls) + len(others)) + "|")
for (mode, n, size) in sorted({k[:3] for k in rows}, key=lambda k: (list(picks).index(k[0]), k[1], k[2])):
    if size not in picks.get(mode, []):
        continue
    # bw: MB/s and messages/s (higher is better); the rest: average us.
    cols = [0, 1] if mode == "bw" else [0]
    for col in cols:
        med = {}
        for impl in impls:
            v = rows.get((mode, n, size, impl))
            if v:
                med[impl] = statistics.median(x[col] for x in v)
        what = {0: "MB/s", 1: "msg/s"}[col] if mode == "bw" else "us"
        cells = [f"{med[i]:.3f}" if i in med else "-" for i in impls]
        ratios = [f"{med['ours'] / med[o]:.2f}" if "ours" in med and o in med and med[o] else "-" for o in others]
        print(f"| {mode} {size} B, {n} ranks ({what}) | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
EOF
