#!/usr/bin/env bash
# A multi-host cluster on one machine, to test multi-host launches: N network
# namespaces on a private bridge stand for N hosts.
#
#   tools/netns_cluster.sh up N [--hosts-file PATH]   # hosts quarl-h1..quarl-hN
#   tools/netns_cluster.sh status
#   tools/netns_cluster.sh down                       # idempotent
#
# Host K is namespace quarl-hK, address 10.213.0.K/24 on its interface quarl0,
# a veth whose peer sits on bridge quarl-br0 in namespace quarl-hub. The host
# namespace gets no interface, only a blackhole route for 10.213.0.0/24 (a
# test-only range), so nothing addressed there ever leaves the machine; no
# existing interface or address is touched.
#
# `ip netns exec quarl-hK CMD` runs CMD on host K. Such processes share the
# filesystem and PID namespace with everything else: the run directory is
# shared storage for free. --hosts-file writes a hosts file for
# launch/runtime/hosts.py (PATH ending .yaml or .yml; - for stdout): h1 runs replay,
# counter, learner, quantizer and evaluator; actors go round-robin over
# h2..hN (h1 when N is 1).
#
# `down` deletes the namespaces (and so their veths) and the blackhole route;
# processes still running in a namespace keep its network alive until they
# exit, and it warns about them.
set -eEuo pipefail

readonly SUBNET=10.213.0.0/24 HUB=quarl-hub BRIDGE=quarl-br0 LINK=quarl0

die() { echo "netns_cluster.sh: $*" >&2; exit 2; }

namespaces() { ip netns list | awk '$1 ~ /^quarl-/ {print $1}' | sort -V; }

blackhole_present() {
  [[ -n "$(ip route show exact "$SUBNET" type blackhole)" ]]
}

hosts_file() {  # N
  local n=$1 k actors=() group list
  for ((k = 2; k <= n; k++)); do actors+=("h$k"); done
  ((n > 1)) || actors=(h1)
  echo "# tools/netns_cluster.sh up $n: namespaces on this machine only."
  echo 'hosts:'
  for ((k = 1; k <= n; k++)); do
    echo "  h$k: {address: 10.213.0.$k, prefix: \"ip netns exec quarl-h$k\"}"
  done
  echo 'groups:'
  for group in replay counter learner quantizer evaluator; do
    echo "  $group: h1"
  done
  list=$(printf '%s, ' "${actors[@]}")
  echo "  actor: [${list%, }]"
}

up() {  # N [--hosts-file PATH]
  local n=${1:-} path='' k ns
  [[ $n =~ ^[1-9][0-9]*$ ]] && ((n >= 1 && n <= 254)) ||
    die "up: N must be a number from 1 to 254, not '$n'"
  if (($# == 3)) && [[ $2 == --hosts-file ]]; then
    path=$3
    [[ $path == - || $path == *.yaml || $path == *.yml ]] ||
      die "up: --hosts-file PATH must end in .yaml or .yml (or be -)"
  elif (($# != 1)); then
    die "usage: $0 up N [--hosts-file PATH]"
  fi
  [[ -z "$(namespaces)" ]] ||
    die "quarl-* namespaces exist already; run '$0 down' first"
  trap 'echo "netns_cluster.sh: up failed; tearing down" >&2; down' ERR
  ip netns add "$HUB"
  ip -n "$HUB" link set lo up
  ip -n "$HUB" link add "$BRIDGE" type bridge
  ip -n "$HUB" link set "$BRIDGE" up
  for ((k = 1; k <= n; k++)); do
    ns=quarl-h$k
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$HUB" link add "$ns" type veth peer name "$LINK" netns "$ns"
    ip -n "$HUB" link set "$ns" master "$BRIDGE" up
    ip -n "$ns" addr add "10.213.0.$k/24" dev "$LINK"
    ip -n "$ns" link set "$LINK" up
  done
  blackhole_present || ip route add blackhole "$SUBNET"
  if [[ $path == - ]]; then
    hosts_file "$n"
  elif [[ -n $path ]]; then
    hosts_file "$n" >"$path"
  fi
  trap - ERR
  echo "netns_cluster.sh: up: quarl-h1..quarl-h$n on $SUBNET" >&2
}

down() {
  local ns pids
  for ns in $(namespaces); do
    pids=$(ip netns pids "$ns" | wc -l)
    ((pids == 0)) || echo "netns_cluster.sh: warning: $pids processes still" \
      "run in $ns; its network lives until they exit" >&2
    ip netns delete "$ns"
  done
  if blackhole_present; then ip route del blackhole "$SUBNET"; fi
}

status() {
  local ns
  [[ -n "$(namespaces)" ]] || echo 'no quarl-* namespaces'
  for ns in $(namespaces); do
    echo "$ns:"
    ip -n "$ns" -br addr | awk '$1 != "lo" {print "  " $0}'
  done
  if blackhole_present; then
    echo "host namespace: blackhole route $SUBNET"
  else
    echo "host namespace: no blackhole route for $SUBNET"
  fi
}

[[ $(id -u) == 0 ]] || die "needs root (network namespaces, bridge, route)"
case ${1:-} in
  up) shift; up "$@" ;;
  down) (($# == 1)) || die "usage: $0 down"; down ;;
  status) (($# == 1)) || die "usage: $0 status"; status ;;
  *) die "usage: $0 up N [--hosts-file PATH] | status | down" ;;
esac
