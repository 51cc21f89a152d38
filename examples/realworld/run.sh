#!/usr/bin/env bash
# Runs examples/realworld/tap-ping.ndl and pings its simulated server from
# the Linux namespace elvis makes (needs root, /dev/net/tun, iproute2 and
# ping). elvis removes the namespace when the run ends.
set -euo pipefail
cd "$(dirname "$0")/../.."
elvis=${ELVIS:-target/release/elvis}
"$elvis" run examples/realworld/tap-ping.ndl --until 6s &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
# Wait for the namespace and its device.
for _ in $(seq 50); do
  ip netns exec elvis-linux1 ip link show tap-linux1 >/dev/null 2>&1 && break
  sleep 0.1
done
ip netns exec elvis-linux1 ping -n -c 5 -i 0.2 10.6.5.2
wait $pid
trap - EXIT
