#!/usr/bin/env bash
# Oversubscribed small collectives against their floor: tests/bench/floor.c
# (the synchronization alone, no MPI) and tests/bench/switches.c on this
# project's MPI and Open MPI, interleaved, REPS times (another order each
# time). Prints per rank count the median time per call and process
# switches per call and CPU of each, and Open MPI's time over ours and
# over the floor: the most any design that yields the CPU to wait could
# reach (see BENCHMARKS.md, "The floor").
#   tests/bench/floor.sh                       # REPS=7, RANKS="4 8", alltoall
#   COLL=barrier NOBUILD=1 tests/bench/floor.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-7}
RANKS=${RANKS:-4 8}
COLL=${COLL:-alltoall}
OPS=${OPS:-100000}
. tests/bench/ours.sh
gcc -O2 -o "$W/floor" tests/bench/floor.c
"$B/mpicc" -O2 -o "$W/sw.ours" tests/bench/switches.c
mpicc.openmpi -O2 -o "$W/sw.ompi" tests/bench/switches.c
run() { # what n ops
  case $1 in
    floor) timeout 300 "$W/floor" "$2" "$3" ;;
    ours) timeout 300 "$W/lib/mpirun" -n "$2" "$W/sw.ours" "$COLL" "$3" ;;
    ompi) timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -n "$2" "$W/sw.ompi" "$COLL" "$3" 2>/dev/null ;;
  esac
}
whats=(floor ours ompi)
for n in $RANKS; do
  ops=$((OPS * 4 / n))
  for rep in $(seq "$REPS"); do
    for i in 0 1 2; do
      w=${whats[$(((i + rep) % 3))]}
      run "$w" "$n" "$ops" | awk -v w="$w" -v n="$n" '{print w, n, $3, $5}' >> "$W/all"
    done
  done
done
med() { awk -v w="$1" -v n="$2" -v c="$3" '$1==w && $2==n {print $c}' "$W/all" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "$COLL, 8 bytes; $REPS runs each, medians; load average after: $(cut -d" " -f1-3 /proc/loadavg)"
echo
echo "| ranks | floor (us) | ours (us) | Open MPI (us) | switches/op/CPU floor, ours, Open MPI | Open MPI/ours | Open MPI/floor |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for n in $RANKS; do
  f=$(med floor "$n" 3); o=$(med ours "$n" 3); m=$(med ompi "$n" 3)
  echo "$n $f $o $m $(med floor "$n" 4) $(med ours "$n" 4) $(med ompi "$n" 4)" |
    awk '{printf "| %s | %s | %s | %s | %s, %s, %s | %.2f | %.2f |\n", $1, $2, $3, $4, $5, $6, $7, $4 / $3, $4 / $2}'
done
