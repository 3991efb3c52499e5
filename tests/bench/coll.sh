#!/usr/bin/env bash
# Collectives benchmark: tests/bench/coll.c on 2, 4 and 8 ranks (4 and 8
# share the machine's cores) for this project's MPI, Debian's MPICH and Open
# MPI. On a shared, noisy machine one run says little: this makes many short
# runs, interleaved (ours, MPICH, Open MPI, then the next repetition in
# another order), and prints per case the median of each implementation and
# the ratio of the medians (theirs / ours, so above 1 means we are faster),
# with the spread of ours (first and third quartile) as a Markdown table.
#
#   tests/bench/coll.sh                      # REPS=9, 0.02 s per case and run
#   REPS=15 RANKS="2" ONLY=bcast MAXBYTES=1024 tests/bench/coll.sh
#   IMPLS="ours ompi" tests/bench/coll.sh    # leave MPICH out
#   NOBUILD=1 tests/bench/coll.sh            # the library built already
# Our library is copied first, so a build meanwhile does not change it.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-9}
BUDGET=${BUDGET:-0.02}
RANKS=${RANKS:-2 4 8}
ONLY=${ONLY:-all}
MAXBYTES=${MAXBYTES:-1073741824}
IMPLS=${IMPLS:-ours mpich ompi}
. tests/bench/ours.sh
"$B/mpicc" -O2 -o "$W/coll.ours" tests/bench/coll.c
mpicc.mpich -O2 -o "$W/coll.mpich" tests/bench/coll.c
mpicc.openmpi -O2 -o "$W/coll.ompi" tests/bench/coll.c
run() { # impl n
  local a=("$BUDGET" "$ONLY" "$MAXBYTES")
  case $1 in
    ours) timeout 600 "$W/lib/mpirun" -n "$2" "$W/coll.ours" "${a[@]}" ;;
    mpich) timeout 600 mpiexec.mpich -n "$2" "$W/coll.mpich" "${a[@]}" ;;
    ompi) timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe -n "$2" "$W/coll.ompi" "${a[@]}" 2>/dev/null ;;
  esac
}
read -r -a impls <<< "$IMPLS"
load0=$(cut -d" " -f1-3 /proc/loadavg)
for n in $RANKS; do
  for rep in $(seq "$REPS"); do
    # Rotate the order, so no implementation always runs right after another.
    k=${#impls[@]}
    for i in $(seq 0 $((k - 1))); do
      impl=${impls[$(((i + rep) % k))]}
      run "$impl" "$n" | awk -v i="$impl" -v n="$n" '{print i, n, $1, $2, $3}' >> "$W/all"
    done
  done
done
# q-quantile (0..1) of the numbers on stdin.
quant() { sort -g | awk -v q="$1" '{v[NR]=$1} END {if (NR == 0) print "nan"; else print v[int(q * (NR - 1) + 1.5)]}'; }
pick() { awk -v im="$1" -v n="$2" -v c="$3" -v b="$4" '$1==im && $2==n && $3==c && $4==b {print $5}' "$W/all"; }
echo "Load average before: $load0, after: $(cut -d" " -f1-3 /proc/loadavg); $REPS runs per implementation and case, $BUDGET s each"
echo
echo "| ranks | collective | bytes | ours (us) | ours q1-q3 | MPICH (us) | Open MPI (us) | MPICH/ours | Open MPI/ours |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
awk '{print $2, $3, $4}' "$W/all" | sort -u -k1,1n -k2,2 -k3,3n | while read -r n name bytes; do
  o=$(pick ours "$n" "$name" "$bytes" | quant 0.5)
  q1=$(pick ours "$n" "$name" "$bytes" | quant 0.25)
  q3=$(pick ours "$n" "$name" "$bytes" | quant 0.75)
  m=$(pick mpich "$n" "$name" "$bytes" | quant 0.5)
  p=$(pick ompi "$n" "$name" "$bytes" | quant 0.5)
  awk -v n="$n" -v c="$name" -v b="$bytes" -v o="$o" -v q1="$q1" -v q3="$q3" -v m="$m" -v p="$p" \
    'function r(x) { return (x == "nan" || o == "nan") ? "-" : sprintf("%.2f", x / o) }
     function t(x) { return x == "nan" ? "-" : sprintf("%.2f", x) }
     BEGIN {printf "| %s | %s | %s | %s | %s-%s | %s | %s | %s | %s |\n", n, c, b, t(o), t(q1), t(q3), t(m), t(p), r(m), r(p)}'
done
