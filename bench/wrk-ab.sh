#!/usr/bin/env bash
# Interleaved A/B of HTTP echo throughput between builds of a server that
# takes `--http ADDR` (everything-server): each round starts every binary
# fresh on core 0, warms up 2 s, then runs `wrk -t1` on core 1 for 8 s with
# bench/wrk/mcp.lua (2026-07-28 tools/call echo) and prints req/s and the
# server's CPU µs per request. For a change that should not move the
# request path (a build setting, say) without the full bench/run.sh.
#
#   bash bench/wrk-ab.sh CONNECTIONS ROUNDS BIN_A BIN_B [BIN…]
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../scripts/fleet.sh
source "$here/../scripts/fleet.sh" # free_port, wait_port
conn=$1 rounds=$2
shift 2
ticks=$(getconf CLK_TCK)
for r in $(seq "$rounds"); do
  for bin in "$@"; do
    port=$(free_port)
    taskset -c 0 "$bin" --http "127.0.0.1:$port" >/dev/null 2>&1 &
    pid=$!
    wait_port "$port" 60 "$pid"
    taskset -c 1 wrk -t1 -c"$conn" -d2s -s "$here/wrk/mcp.lua" "http://127.0.0.1:$port/mcp" >/dev/null 2>&1
    t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    out=$(taskset -c 1 wrk -t1 -c"$conn" -d8s -s "$here/wrk/mcp.lua" "http://127.0.0.1:$port/mcp" 2>&1)
    t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    n=$(awk '/requests in/ {print $1}' <<<"$out")
    cpu=$(awk -v a="$t0" -v b="$t1" -v n="$n" -v t="$ticks" 'BEGIN {printf "%.2f", (b - a) / t * 1e6 / n}')
    echo "round $r  $bin  conn $conn  $rps req/s  cpu $cpu µs/req"
  done
done
