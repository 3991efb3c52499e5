#!/bin/sh
# Creates the "hosts" of the multi-host tests on this machine (needs root):
# network namespaces mpins1..mpinsN (N = $1, default 3), each joined to the
# bridge mpibr0 of the root namespace by a veth pair, with address
# 10.77.0.(10+i)/24 and loopback up; the bridge has 10.77.0.1 (so processes
# in a namespace can reach mpirun or mpiexec in the root namespace).
# Idempotent: what exists already is left as it is. `setup.sh --remove`
# deletes everything it creates.
set -eu
n=${1:-3}
if [ "$n" = "--remove" ]; then
  for ns in $(ip netns list | awk '/^mpins[0-9]/ {print $1}'); do ip netns delete "$ns"; done
  ip link delete mpibr0 2>/dev/null || true
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "tests/netns/setup.sh: network namespaces need root (or CAP_NET_ADMIN + CAP_SYS_ADMIN)" >&2
  exit 1
fi
command -v ip >/dev/null || { echo "tests/netns/setup.sh: 'ip' not found (apt-get install iproute2)" >&2; exit 1; }

if ! ip link show mpibr0 >/dev/null 2>&1; then
  ip link add mpibr0 type bridge
fi
ip addr show dev mpibr0 | grep -q '10\.77\.0\.1/' || ip addr add 10.77.0.1/24 dev mpibr0
ip link set mpibr0 up
i=1
while [ "$i" -le "$n" ]; do
  ns=mpins$i
  ip netns list | grep -qw "^$ns" || ip netns add "$ns"
  if ! ip link show veth-mpins$i >/dev/null 2>&1; then
    ip link add veth-mpins$i type veth peer name eth0 netns "$ns"
    ip link set veth-mpins$i master mpibr0
  fi
  ip link set veth-mpins$i up
  ip -n "$ns" addr show dev eth0 | grep -q "10\.77\.0\.$((10 + i))/" || ip -n "$ns" addr add 10.77.0.$((10 + i))/24 dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  i=$((i + 1))
done
# Bridged traffic must not be dropped by a host firewall.
if [ -w /proc/sys/net/bridge/bridge-nf-call-iptables ]; then echo 0 > /proc/sys/net/bridge/bridge-nf-call-iptables; fi
