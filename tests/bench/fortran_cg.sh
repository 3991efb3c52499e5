#!/usr/bin/env bash
# A Fortran workload: tests/fortran/cg.F90 (conjugate gradients for the 2-D
# Poisson equation, `use mpi`: halo exchange with Isend/Irecv/Waitall, two
# Allreduces per iteration) built with this project's mpifort, MPICH's
# mpif90.mpich and Open MPI's mpif90.openmpi from the same source, each run
# by its own launcher at 4 and 8 ranks (both more ranks than the 2 cores
# of the machines this was written on). REPS rounds; in each, every library
# runs every rank count, in an order that rotates from round to round.
# Prints the medians of the solve time the program reports (the slowest
# rank's, after a warm-up and a barrier), the spread (min-max) and the
# ratios ours / theirs (below 1: we are faster), as a Markdown table; then
# checks that every run gave the same residual and checksum (relative
# tolerance TOL; only the order of the sums in the reductions differs
# between libraries and rank counts) and exits 1 if not.
#
#   tests/bench/fortran_cg.sh                  # REPS=5, N=1024, ITERS=100
#   REPS=9 RANKS="4" tests/bench/fortran_cg.sh
#   IMPLS="ours ompi" NOBUILD=1 tests/bench/fortran_cg.sh
#   SETSID=1 tests/bench/fortran_cg.sh     # every rank in its own session
# With the kernel's autogroup scheduling (/proc/sys/kernel/
# sched_autogroup_enabled), CPU time is shared out between sessions first.
# MPICH's hydra starts each rank in a session of its own; our mpirun and
# Open MPI's leave the ranks in the caller's, so on a machine loaded by
# other sessions all their ranks together get what one MPICH rank gets.
# SETSID=1 starts each of their ranks under `setsid -w` too, for an even
# share; it changes nothing on an otherwise idle machine.
# Needs: apt packages gfortran mpich libmpich-dev openmpi-bin libopenmpi-dev.
# Our library is copied first, so a build meanwhile does not change it.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-5}
RANKS=${RANKS:-4 8}
N=${N:-1024}
ITERS=${ITERS:-100}
TOL=${TOL:-1e-8}
IMPLS=${IMPLS:-ours mpich ompi}
. tests/bench/ours.sh
# -w: gfortran warns about the choice buffers of the implicit interfaces.
"$B/mpifort" -O2 -w -o "$W/cg.ours" tests/fortran/cg.F90
mpif90.mpich -O2 -w -o "$W/cg.mpich" tests/fortran/cg.F90
mpif90.openmpi -O2 -w -o "$W/cg.ompi" tests/fortran/cg.F90
own=()
[ -z "${SETSID:-}" ] || own=(setsid -w)
run() { # impl n
  case $1 in
    ours) timeout 600 "$W/lib/mpirun" -n "$2" "${own[@]}" "$W/cg.ours" "$N" "$ITERS" ;;
    mpich) timeout 600 mpiexec.mpich -n "$2" "$W/cg.mpich" "$N" "$ITERS" ;;
    ompi) timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe -n "$2" "${own[@]}" "$W/cg.ompi" "$N" "$ITERS" 2>/dev/null ;;
  esac
}
read -r -a impls <<< "$IMPLS"
load0=$(cut -d" " -f1-3 /proc/loadavg)
: > "$W/all"
for rep in $(seq "$REPS"); do
  for n in $RANKS; do
    k=${#impls[@]}
    for i in $(seq 0 $((k - 1))); do
      impl=${impls[$(((i + rep) % k))]}
      # A run that fails or prints no result line is recorded as such.
      line=$(run "$impl" "$n" | grep '^cg: ' || true)
      echo "$impl $n ${line:-cg: FAILED}" >> "$W/all"
    done
  done
done
load1=$(cut -d" " -f1-3 /proc/loadavg)
# Field `key=` of the result lines of implementation $1 at $2 ranks.
pick() { awk -v im="$1" -v n="$2" -v key="$3=" '$1==im && $2==n {for (f = 3; f <= NF; f++) if (index($f, key) == 1) print substr($f, length(key) + 1)}' "$W/all"; }
quant() { sort -g | awk -v q="$1" '{v[NR]=$1} END {if (NR == 0) print "nan"; else print v[int(q * (NR - 1) + 1.5)]}'; }
echo "Load average before: $load0, after: $load1; $(nproc) cores; $REPS rounds; n=$N, $ITERS iterations${SETSID:+; ranks of ours and Open MPI under setsid -w}"
echo
echo "| ranks | ours (s) | ours min-max | MPICH (s) | MPICH min-max | Open MPI (s) | Open MPI min-max | ours/MPICH | ours/Open MPI |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "nan" || b == "nan" || b + 0 == 0) print "-"; else printf "%.2f", a / b}'; }
declare -A med
for n in $RANKS; do
  row="| $n"
  for impl in ours mpich ompi; do
    med[$impl]=$(pick "$impl" "$n" time | quant 0.5)
    row+=" | ${med[$impl]} | $(pick "$impl" "$n" time | quant 0)-$(pick "$impl" "$n" time | quant 1)"
  done
  echo "$row | $(ratio "${med[ours]}" "${med[mpich]}") | $(ratio "${med[ours]}" "${med[ompi]}") |"
done
echo
# Every run against the first: the largest relative differences.
failed=$(grep -c FAILED "$W/all" || true)
awk -v tol="$TOL" -v failed="$failed" '
  function get(key,   f) {for (f = 3; f <= NF; f++) if (index($f, key "=") == 1) return substr($f, length(key) + 2); return ""}
  function rel(a, b) {d = (a - b) / b; return d < 0 ? -d : d}
  /FAILED/ {next}
  {r = get("residual"); c = get("checksum")
   if (!seen++) {r0 = r; c0 = c}
   if (rel(r, r0) > dr) dr = rel(r, r0)
   if (rel(c, c0) > dc) dc = rel(c, c0)}
  END {printf "Answers: %d runs (%d failed), residual %s, checksum %s; largest relative differences %.1e and %.1e (tolerance %s)\n",
         seen, failed, r0, c0, dr, dc, tol
       exit (failed > 0 || dr > tol || dc > tol) ? 1 : 0}' "$W/all"
