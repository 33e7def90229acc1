#!/usr/bin/env bash
# A multi-machine cluster on one machine, to test multi-machine launches: N
# network namespaces on a private bridge stand for N hosts.
#
#   tools/netns_cluster.sh up N [--ray TEMP_DIR]   # hosts quarl-h1..quarl-hN
#   tools/netns_cluster.sh status
#   tools/netns_cluster.sh down                    # idempotent
#
# Host K is namespace quarl-hK, address 10.213.0.K/24 on its interface quarl0,
# a veth whose peer sits on bridge quarl-br0 in namespace quarl-hub. The host
# namespace gets no interface, only a blackhole route for 10.213.0.0/24 (a
# test-only range), so nothing addressed there ever leaves the machine; no
# existing interface or address is touched.
#
# `ip netns exec quarl-hK CMD` runs CMD on host K. Such processes share the
# filesystem and PID namespace with everything else: the run directory is
# shared storage for free.
#
# --ray starts a Ray cluster on them (Ray's files under TEMP_DIR; keep it
# short, Ray's socket paths must fit in 107 bytes): the head on h1 at
# 10.213.0.1:6379 with the Ray resources that place replay, counter,
# learner, quantizer and evaluator there, and on h2..hN (h1 when N is 1) a
# worker with quarl_actor. A driver joins it from inside a namespace (the
# host namespace cannot reach the range):
#   ip netns exec quarl-h1 python -m launch.train --launch_type=ray \
#     --ray_address=10.213.0.1:6379 ...
#
# `down` ends every process still running in the namespaces (Ray's among
# them: never `ray stop`, which would end every Ray process on the machine),
# then deletes the namespaces (and so their veths) and the blackhole route.
set -eEuo pipefail

readonly SUBNET=10.213.0.0/24 HUB=quarl-hub BRIDGE=quarl-br0 LINK=quarl0

die() { echo "netns_cluster.sh: $*" >&2; exit 2; }

namespaces() { ip netns list | awk '$1 ~ /^quarl-/ {print $1}' | sort -V; }

blackhole_present() {
  [[ -n "$(ip route show exact "$SUBNET" type blackhole)" ]]
}

ray_up() {  # N TEMP_DIR
  local n=$1 temp=$2 k group ray head=""
  ray=$(dirname "$(readlink -f "$0")")/../.venv/bin/ray
  [[ -x $ray ]] || die "up: --ray needs $ray (make the .venv first)"
  for group in replay counter learner quantizer evaluator; do
    head+="\"quarl_$group\": 1, "
  done
  ((n > 1)) || head+='"quarl_actor": 1, '
  export RAY_USAGE_STATS_ENABLED=0
  ip netns exec quarl-h1 "$ray" start --head --node-ip-address=10.213.0.1 \
    --port=6379 --temp-dir="$temp" --include-dashboard=false \
    --disable-usage-stats --resources="{${head%, }}" >/dev/null
  for ((k = 2; k <= n; k++)); do
    ip netns exec "quarl-h$k" "$ray" start --address=10.213.0.1:6379 \
      --node-ip-address="10.213.0.$k" --disable-usage-stats \
      --resources='{"quarl_actor": 1}' >/dev/null
  done
}

up() {  # N [--ray TEMP_DIR]
  local n=${1:-} temp='' k ns
  [[ $n =~ ^[1-9][0-9]*$ ]] && ((n >= 1 && n <= 254)) ||
    die "up: N must be a number from 1 to 254, not '$n'"
  if (($# == 3)) && [[ $2 == --ray ]]; then
    temp=$3
    [[ -d $temp ]] || die "up: --ray TEMP_DIR must be a directory"
  elif (($# != 1)); then
    die "usage: $0 up N [--ray TEMP_DIR]"
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
  [[ -z $temp ]] || ray_up "$n" "$temp"
  trap - ERR
  echo "netns_cluster.sh: up: quarl-h1..quarl-h$n on $SUBNET" >&2
}

down() {
  local ns pids signal
  for signal in TERM KILL; do
    pids=$(for ns in $(namespaces); do ip netns pids "$ns"; done)
    [[ -z $pids ]] && break
    kill -s "$signal" $pids 2>/dev/null || true
    for _ in {1..50}; do  # Up to 10 s each.
      pids=$(for ns in $(namespaces); do ip netns pids "$ns"; done)
      [[ -z $pids ]] && break
      sleep 0.2
    done
  done
  for ns in $(namespaces); do
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
  *) die "usage: $0 up N [--ray TEMP_DIR] | status | down" ;;
esac
