#!/usr/bin/env bash
# Point-to-point over TCP between two "hosts": network namespaces mpins1 and
# mpins2 on one machine (tests/netns/setup.sh), one rank in each, joined by
# veth pairs through the bridge mpibr0. This project's MPI against Debian's
# MPICH and Open MPI, the same tests/bench/pingpong.c, in the same run (the
# implementations take turns within each repetition, in an order that
# rotates from one repetition to the next). Prints a Markdown table of the
# median of REPS runs, the best in parentheses, with ratios of the medians
# (ours / theirs: below 1 is better for latency, above 1 for bandwidth).
#
#   tests/bench/tcp.sh            # full run (needs root for the namespaces)
#   QUICK=1 tests/bench/tcp.sh    # a tenth of the iterations
#   REPS=5 tests/bench/tcp.sh     # 5 repetitions (default 3)
#   NICE=-20 tests/bench/tcp.sh   # every implementation at this niceness:
#                                 # builds and benchmarks of others on a
#                                 # shared machine disturb less
#   NOBUILD=1 tests/bench/tcp.sh  # the library built already
# Our library is copied first, so a build meanwhile does not change it.
#
# How each one is made to use TCP over the veth link (and nothing else):
# * ours: mpirun -launcher-exec tests/netns/agent.sh -host mpins1,mpins2;
#   ranks on different hosts always talk TCP.
# * MPICH (Debian: ch4:ucx): hydra with the same agent; UCX_TLS=tcp,self and
#   UCX_NET_DEVICES=eth0, because UCX otherwise notices that the two
#   "hosts" share memory and uses shared memory (0.1 us latency).
# * Open MPI: plm_rsh_agent = the agent, btl tcp,self, and the TCP btl and
#   oob restricted to 10.77.0.0/24.
# Nobody binds ranks to cores (each "host" would pin its one rank to core
# 0, the same core): ours MPICORE_BIND=none, Open MPI --bind-to none, hydra
# does not bind by default. After each run the script checks the byte
# counters of veth-mpins1: at least the 4 MiB ping-pong's payload must have
# crossed the link, or it stops with an error.
#
# Needs: root, iproute2, apt packages mpich libmpich-dev openmpi-bin
# libopenmpi-dev.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
REPS=${REPS:-3}
SCALE=$([ -n "${QUICK:-}" ] && echo 10 || echo 1)
AGENT=$ROOT/tests/netns/agent.sh
LINK=/sys/class/net/veth-mpins1/statistics
for tool in mpicc.mpich mpiexec.mpich mpicc.openmpi mpirun.openmpi; do
  command -v "$tool" >/dev/null || { echo "tcp.sh: $tool not found (apt-get install mpich libmpich-dev openmpi-bin libopenmpi-dev)" >&2; exit 1; }
done
sh tests/netns/setup.sh 2
. tests/bench/ours.sh
for prog in pingpong tcp_lat; do
  "$B/mpicc" -O2 -o "$W/$prog.ours" "tests/bench/$prog.c" -Wl,-rpath,"$W/lib"
  mpicc.mpich -O2 -o "$W/$prog.mpich" "tests/bench/$prog.c"
  mpicc.openmpi -O2 -o "$W/$prog.ompi" "tests/bench/$prog.c"
done
PRIO=()
[ -z "${NICE:-}" ] || PRIO=(nice -n "$NICE")
LATN=$((5000 / SCALE))

run() { # impl program argument
  case $1 in
    ours) timeout 600 "${PRIO[@]}" "$W/lib/mpirun" -launcher-exec "$AGENT" -host mpins1,mpins2 -n 2 \
            -genv MPICORE_BIND none "$W/$2.ours" "$3" ;;
    mpich) timeout 600 "${PRIO[@]}" mpiexec.mpich -launcher ssh -launcher-exec "$AGENT" -iface mpibr0 -hosts mpins1,mpins2 -n 2 \
             -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0 "$W/$2.mpich" "$3" ;;
    ompi) timeout 600 "${PRIO[@]}" mpirun.openmpi --allow-run-as-root --bind-to none --mca plm_rsh_agent "$AGENT" \
            -H mpins1,mpins2 -np 2 --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
            --mca oob_tcp_if_include 10.77.0.0/24 "$W/$2.ompi" "$3" ;;
  esac
}
link_bytes() { echo $(($(cat "$LINK/rx_bytes") + $(cat "$LINK/tx_bytes"))); }
# The 4 MiB ping-pong alone: two messages per iteration (as in pingpong.c).
iters=$((400 / SCALE > 10 ? 400 / SCALE : 10))
min_bytes=$((4194304 * 2 * iters))

echo "tcp.sh: start $(date -u '+%F %H:%M') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg), REPS=$REPS SCALE=$SCALE NICE=${NICE:-}" >&2
declare -A LAT MOVED P10 P50
IMPLS=(ours mpich ompi)
for rep in $(seq "$REPS"); do
  for k in 0 1 2; do
    impl=${IMPLS[$(((rep + k) % 3))]}
    before=$(link_bytes)
    if ! run "$impl" pingpong "$SCALE" >"$W/out" 2>"$W/err"; then
      echo "tcp.sh: $impl failed (run $rep):" >&2
      cat "$W/out" "$W/err" >&2
      exit 1
    fi
    moved=$(($(link_bytes) - before))
    if [ "$moved" -lt "$min_bytes" ]; then
      echo "tcp.sh: $impl moved only $moved bytes over veth-mpins1 (at least $min_bytes expected): not over TCP" >&2
      exit 1
    fi
    MOVED[$impl]=$moved
    while read -r size us _; do
      LAT[$impl,$size]="${LAT[$impl,$size]:-} $us"
    done <"$W/out"
    echo "tcp.sh: run $rep $impl: $(tr '\n' ' ' <"$W/out")" >&2
    if ! run "$impl" tcp_lat "$LATN" >"$W/out" 2>"$W/err"; then
      echo "tcp.sh: $impl failed (tcp_lat, run $rep):" >&2
      cat "$W/out" "$W/err" >&2
      exit 1
    fi
    while read -r size p10 p50; do
      P10[$impl,$size]="${P10[$impl,$size]:-} $p10"
      P50[$impl,$size]="${P50[$impl,$size]:-} $p50"
    done <"$W/out"
    echo "tcp.sh: run $rep $impl tcp_lat: $(tr '\n' ' ' <"$W/out")" >&2
  done
done
echo "tcp.sh: end $(date -u '+%F %H:%M') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

ratio() { awk "BEGIN{printf \"%.2f\", $1 / $2}"; }
# median / best of a list of latencies in us (best = smallest)
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
best() { tr ' ' '\n' <<<"$1" | grep . | sort -g | head -1; }
gbps() { awk "BEGIN{printf \"%.3f\", $1 / $2 / 1000}"; }
echo "| measurement | ours | MPICH | Open MPI | ours/MPICH | ours/Open MPI |"
echo "| --- | --- | --- | --- | --- | --- |"
for size in 8 1024 65536 4194304; do
  declare -A MED=() BEST=()
  for impl in ours mpich ompi; do
    MED[$impl]=$(median "${LAT[$impl,$size]}")
    BEST[$impl]=$(best "${LAT[$impl,$size]}")
  done
  o=${MED[ours]}; m=${MED[mpich]}; p=${MED[ompi]}
  if [ "$size" -le 1024 ]; then
    cell() { printf '%.3f (%.3f)' "${MED[$1]}" "${BEST[$1]}"; }
    echo "| $size B latency (us) | $(cell ours) | $(cell mpich) | $(cell ompi) | $(ratio "$o" "$m") | $(ratio "$o" "$p") |"
  else
    cell() { echo "$(gbps "$size" "${MED[$1]}") ($(gbps "$size" "${BEST[$1]}"))"; }
    bo=$(gbps "$size" "$o"); bm=$(gbps "$size" "$m"); bp=$(gbps "$size" "$p")
    echo "| $size B bandwidth (GB/s) | $(cell ours) | $(cell mpich) | $(cell ompi) | $(ratio "$bo" "$bm") | $(ratio "$bo" "$bp") |"
  fi
done
mb() { awk "BEGIN{printf \"%.0f\", $1 / 1e6}"; }
echo "| MB over veth-mpins1 (last run) | $(mb "${MOVED[ours]}") | $(mb "${MOVED[mpich]}") | $(mb "${MOVED[ompi]}") | | |"
echo
echo "Single round trips (tests/bench/tcp_lat.c, $LATN per size and run): 10th percentile and median of half round trips in us, each the median over the runs; ratios of the 10th percentiles."
echo
echo "| size | ours p10 / p50 | MPICH p10 / p50 | Open MPI p10 / p50 | ours/MPICH | ours/Open MPI |"
echo "| --- | --- | --- | --- | --- | --- |"
for size in 8 1024 65536; do
  declare -A Q=() H=()
  for impl in ours mpich ompi; do
    Q[$impl]=$(median "${P10[$impl,$size]}")
    H[$impl]=$(median "${P50[$impl,$size]}")
  done
  pair() { printf '%.3f / %.3f' "${Q[$1]}" "${H[$1]}"; }
  echo "| $size B | $(pair ours) | $(pair mpich) | $(pair ompi) | $(ratio "${Q[ours]}" "${Q[mpich]}") | $(ratio "${Q[ours]}" "${Q[ompi]}") |"
done
