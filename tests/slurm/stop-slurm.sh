#!/usr/bin/env bash
# Stops the one-node Slurm cluster of tests/slurm/start-slurm.sh: cancels its
# jobs, stops slurmd and slurmctld (and munged, if start-slurm.sh started
# it, and unless given `--keep-munge`). `--purge` also removes its directory
# ($MPICORE_SLURM_DIR, default /tmp/mpicore-slurm). Stopping a cluster that
# is not running is not an error.
set -uo pipefail

DIR=${MPICORE_SLURM_DIR:-/tmp/mpicore-slurm}
export SLURM_CONF=$DIR/slurm.conf

purge=0 keep_munge=0
for a in "$@"; do
  case "$a" in
    --purge) purge=1 ;;
    --keep-munge) keep_munge=1 ;;
    *) echo "stop-slurm.sh: unknown argument $a (--purge, --keep-munge)" >&2; exit 2 ;;
  esac
done

# Is the process of pid file $1 alive and running program $2? Prints its pid.
alive() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && ! zombie "$pid" && echo "$pid"
}

# Has process $1 exited, waiting to be reaped?
zombie() {
  [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" = Z ]
}

# Ends the process of pid file $1 (program $2): SIGTERM, then SIGKILL after 10 s.
stop() {
  local pid i
  pid=$(alive "$1" "$2") || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 50); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && ! zombie "$pid" || return 0
    sleep 0.2
  done
  echo "stop-slurm.sh: $2 (pid $pid) ignores SIGTERM, killing it" >&2
  kill -KILL "$pid" 2>/dev/null
}

if [ -f "$SLURM_CONF" ] && alive "$DIR/slurmctld.pid" slurmctld >/dev/null; then
  jobs=$(squeue -h -o %i 2>/dev/null)
  if [ -n "$jobs" ]; then
    # shellcheck disable=SC2086
    scancel $jobs 2>/dev/null
    for i in $(seq 50); do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
fi
stop "$DIR/slurmd.pid" slurmd
stop "$DIR/slurmctld.pid" slurmctld
if [ $keep_munge = 0 ] && [ -e "$DIR/munged.started" ]; then
  stop /run/munge/munged.pid munged
  rm -f "$DIR/munged.started"
fi
if [ $purge = 1 ]; then
  rm -rf "$DIR"
fi
exit 0
