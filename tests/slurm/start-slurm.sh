#!/usr/bin/env bash
# Starts a one-node Slurm cluster on this machine, for tests/tests/slurm.rs
# (srun --mpi=pmi2 launching this project's MPI library). Idempotent: a
# cluster already started by this script with the same configuration is left
# running; a changed configuration restarts the daemons.
#
# Needs root and Debian's packages: slurmctld slurmd slurm-client munge
# (tests/run-all.sh installs them). No systemd, no cgroups: the daemons are
# started directly, processes are tracked with proctrack/linuxproc.
#
# Everything lives in $MPICORE_SLURM_DIR (default /tmp/mpicore-slurm):
# slurm.conf, state and spool directories, pid files and the daemons' logs.
# The daemons use their own ports (MPICORE_SLURM_PORT, default 16817 for
# slurmctld and the next one for slurmd), so they do not collide with a
# system Slurm. Clients find the cluster through SLURM_CONF:
#
#   tests/slurm/start-slurm.sh
#   export SLURM_CONF=/tmp/mpicore-slurm/slurm.conf
#   srun --mpi=pmi2 -n 4 --overcommit ./app
#
# Stop with tests/slurm/stop-slurm.sh.
set -euo pipefail

DIR=${MPICORE_SLURM_DIR:-/tmp/mpicore-slurm}
PORT=${MPICORE_SLURM_PORT:-16817}
TIMEOUT=${MPICORE_SLURM_TIMEOUT:-60}
CONF=$DIR/slurm.conf
export SLURM_CONF=$CONF

die() {
  echo "start-slurm.sh: $*" >&2
  exit 1
}

for tool in slurmctld slurmd sinfo srun scontrol munged munge unmunge; do
  command -v "$tool" >/dev/null || die "'$tool' not found: install Slurm and munge (apt-get install -y slurmctld slurmd slurm-client munge; tests/run-all.sh does it)"
done
[ "$(id -u)" = 0 ] || die "must run as root (it starts munged, slurmctld and slurmd)"

# Runs "$@" in the background, detached from our stdin/stdout/stderr (a
# caller that collects our output through pipes must not wait for the
# daemons), its output appended to $1's log file.
detached() {
  local log=$1
  shift
  setsid "$@" </dev/null >>"$log" 2>&1 &
}

# Is the process of pid file $1 alive and running program $2?
alive() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] && ! zombie "$pid"
}

# Has process $1 exited, waiting to be reaped? (Where init does not reap
# promptly, a killed daemon stays a zombie under its name for a while.)
zombie() {
  [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" = Z ]
}

# Waits up to $TIMEOUT seconds for "$@" to succeed.
wait_for() {
  local end=$((SECONDS + TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.2
  done
}

mkdir -p "$DIR"

# --- munge ---------------------------------------------------------------
munge_ok() { munge -n </dev/null | unmunge >/dev/null; }
if ! munge_ok 2>/dev/null; then
  MUNGE_USER=munge
  id "$MUNGE_USER" >/dev/null 2>&1 || MUNGE_USER=root
  mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
  if [ ! -s /etc/munge/munge.key ]; then
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile=/etc/munge/munge.key
    else
      dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    fi
  fi
  chown "$MUNGE_USER:$MUNGE_USER" /etc/munge /etc/munge/munge.key /var/lib/munge /var/log/munge /run/munge
  chmod 700 /etc/munge /var/lib/munge /var/log/munge
  chmod 600 /etc/munge/munge.key
  chmod 755 /run/munge
  # A munged that died leaves its pid file and socket lock behind.
  if [ -s /run/munge/munged.pid ] && ! alive /run/munge/munged.pid munged; then
    rm -f /run/munge/munged.pid /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
  fi
  if [ "$MUNGE_USER" = root ]; then
    detached "$DIR/munged.out" munged --force
  else
    detached "$DIR/munged.out" runuser -u "$MUNGE_USER" -- munged
  fi
  touch "$DIR/munged.started"  # stop-slurm.sh stops only a munged started here
  wait_for munge_ok || die "munged did not start within ${TIMEOUT}s:
$(tail -n 20 "$DIR/munged.out" /var/log/munge/munged.log 2>/dev/null)"
fi

# --- slurm.conf ----------------------------------------------------------
HOST=$(hostname -s)
# This node as slurmd sees it (CPUs, sockets, cores, threads, memory), so
# slurmctld does not drain it for a configuration it does not have.
NODE_LINE=$(slurmd -C 2>/dev/null | grep '^NodeName=' | head -n 1) || true
[ -n "$NODE_LINE" ] || NODE_LINE="NodeName=$HOST CPUs=$(nproc) RealMemory=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))"
NODE_LINE=$(echo "$NODE_LINE" | sed "s/^NodeName=[^ ]*/NodeName=$HOST/")

NEW=$DIR/slurm.conf.new
cat >"$NEW" <<EOF
# Written by tests/slurm/start-slurm.sh: a one-node cluster on $HOST.
ClusterName=mpicore
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: processes are tracked through /proc, tasks are not bound.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=30
$NODE_LINE NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF

CHANGED=0
if ! cmp -s "$NEW" "$CONF"; then
  CHANGED=1
  if alive "$DIR/slurmctld.pid" slurmctld || alive "$DIR/slurmd.pid" slurmd; then
    echo "start-slurm.sh: configuration changed, restarting the daemons" >&2
    "$(dirname "$0")/stop-slurm.sh" --keep-munge
  fi
  mv "$NEW" "$CONF"
else
  rm -f "$NEW"
fi
mkdir -p "$DIR/state" "$DIR/spool"
# Slurm's own cgroup.conf is not read with these plugins, but an empty one
# next to slurm.conf keeps slurmd from looking for a system-wide file.
[ -e "$DIR/cgroup.conf" ] || : >"$DIR/cgroup.conf"

# --- daemons -------------------------------------------------------------
if ! alive "$DIR/slurmctld.pid" slurmctld; then
  # -c: forget the jobs and node states of an earlier slurmctld (one that
  # was killed did not save that its last jobs ended).
  detached "$DIR/slurmctld.out" slurmctld -f "$CONF" -c
fi
wait_for sinfo -h || die "slurmctld does not answer after ${TIMEOUT}s:
$(tail -n 30 "$DIR/slurmctld.out" "$DIR/slurmctld.log" 2>/dev/null)"

if ! alive "$DIR/slurmd.pid" slurmd; then
  detached "$DIR/slurmd.out" slurmd -f "$CONF" -N "$HOST"
fi
wait_for scontrol show slurmd || die "slurmd does not answer after ${TIMEOUT}s:
$(tail -n 30 "$DIR/slurmd.out" "$DIR/slurmd.log" 2>/dev/null)"

# --- wait until the node takes jobs --------------------------------------
state() { sinfo -h -n "$HOST" -o %T 2>/dev/null | head -n 1; }
end=$((SECONDS + TIMEOUT))
resumed=0
while :; do
  s=$(state)
  case "$s" in
    idle | mixed | allocated | completing) break ;;
    drain* | down* | fail*)
      # Left drained/down by an earlier run (e.g. a daemon killed): resume once.
      if [ $resumed = 0 ]; then
        scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true
        resumed=1
      fi
      ;;
  esac
  if [ $SECONDS -ge $end ]; then
    reason=$(sinfo -h -n "$HOST" -o '%T %E' 2>/dev/null || true)
    die "node $HOST is not idle after ${TIMEOUT}s (state: '${reason:-unknown}')
--- slurmctld ---
$(tail -n 20 "$DIR/slurmctld.log" "$DIR/slurmctld.out" 2>/dev/null)
--- slurmd ---
$(tail -n 20 "$DIR/slurmd.log" "$DIR/slurmd.out" 2>/dev/null)"
  fi
  sleep 0.3
done
if [ $CHANGED = 1 ]; then
  echo "start-slurm.sh: node $HOST is $s (SLURM_CONF=$CONF)" >&2
fi
echo "$CONF"
