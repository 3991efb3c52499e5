#!/usr/bin/env bash
# A/B benchmark of two builds of this project's MPI (a change must not make
# it slower), with Open MPI in the same run as the yardstick: the ping-pong
# (2 ranks, 8 B to 4 MiB) and the collectives of tests/bench/coll.c (2 and 4
# ranks, up to 64 KiB), REPS rounds, the order of A, B and Open MPI rotating
# from round to round. Prints per case the median of each and B/A (below 1:
# B is faster).
#
#   tests/bench/ab.sh A_DIR B_DIR      # each a target/release directory
#   REPS=9 tests/bench/ab.sh /work/old/target/release target/release
#
# Both builds run the same binaries (built once with B's mpicc: the ABI is
# the same); each build's mpirun puts its own directory first on the ranks'
# library path. Needs: apt packages openmpi-bin libopenmpi-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
A=$(realpath "$1")
B=$(realpath "$2")
REPS=${REPS:-7}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
for side in A B; do
  dir=${!side}
  mkdir -p "$W/$side"
  cp -a "$dir"/{mpicc,mpirun,libmpi.so} "$W/$side/"
  cp -a "$dir/include" "$W/$side/"
  ln -s libmpi.so "$W/$side/libmpi.so.12"
  ln -s libmpi.so "$W/$side/libmpich.so.12"
done
for p in pingpong coll; do
  "$W/B/mpicc" -O2 -o "$W/$p.ours" "tests/bench/$p.c"
  mpicc.openmpi -O2 -o "$W/$p.ompi" "tests/bench/$p.c"
done
run() { # side n prog args...
  local side=$1 n=$2 prog=$3
  shift 3
  case $side in
    A | B) timeout 300 "$W/$side/mpirun" -n "$n" "$W/$prog.ours" "$@" ;;
    ompi) timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -n "$n" "$W/$prog.ompi" "$@" 2>/dev/null ;;
  esac
}
sides=(A B ompi)
for ((rep = 0; rep < REPS; rep++)); do
  for ((k = 0; k < 3; k++)); do
    s=${sides[$(((k + rep) % 3))]}
    run "$s" 2 pingpong | awk -v s="$s" '$1 <= 4194304 {print s, "pingpong-2", $1, $2}' >>"$W/results"
    for n in 2 4; do
      run "$s" "$n" coll 0.02 all 65536 | awk -v s="$s" -v n="$n" '{print s, $1 "-" n, $2, $3}' >>"$W/results"
    done
  done
done
python3 - "$W/results" <<'EOF'
import sys, statistics
vals = {}
for line in open(sys.argv[1]):
    side, case, size, us = line.split()
    vals.setdefault((case, int(size)), {}).setdefault(side, []).append(float(us))
print("| case | bytes | A us | B us | Open MPI us | B/A |")
print("| --- | --- | --- | --- | --- | --- |")
for (case, size), v in sorted(vals.items()):
    med = {s: statistics.median(x) for s, x in v.items()}
    a, b, o = med.get("A"), med.get("B"), med.get("ompi")
    ratio = f"{b / a:.2f}" if a and b else "-"
    fmt = lambda x: f"{x:.3f}" if x is not None else "-"
    print(f"| {case} | {size} | {fmt(a)} | {fmt(b)} | {fmt(o)} | {ratio} |")
EOF
