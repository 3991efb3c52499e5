#!/bin/sh
# Launch agent for the multi-host tests, used as
#   mpirun -launcher-exec tests/netns/agent.sh -host mpins1,mpins2 ...
#   mpiexec.mpich -launcher ssh -launcher-exec tests/netns/agent.sh -hosts ...
# It is called as `agent.sh HOST COMMAND ARGS...` (like ssh) and runs the
# command in network namespace HOST, in a UTS namespace of its own whose host
# name is HOST (the MPI library tells hosts apart by name). Like ssh, it
# joins the words of the command with spaces and lets a shell split them.
# Options before the host, as hydra's ssh launcher passes (-x), are ignored.
set -eu
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0"; eval "exec $*"' "$host" "$@"
