#!/usr/bin/env bash
# Through-nginx benchmark: the 2026-07-28 echo (bench/wrk/mcp.lua) sent to
# one replica directly, and through nginx (the recipe in deploy/nginx/) to 1
# and 3 replicas, each with and without the Redis backplane. The machine has
# 2 cores: the servers, Redis and nginx share core 0, wrk runs on core 1,
# so the figures are ratios against the direct run, not fleet capacity.
#
#   bash bench/nginx.sh                 3 interleaved rounds of 10 s per scenario
#   bash bench/nginx.sh --quick         1 round of 3 s
#   bash bench/nginx.sh --rounds N --duration S --connections C
#
# Prints a Markdown table (also written to bench/results/nginx.md).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
rounds=3 duration=10 conns=16
while (($#)); do
  case "$1" in
    --quick) rounds=1 duration=3 ;;
    --rounds) rounds="$2"; shift ;;
    --duration) duration="$2"; shift ;;
    --connections) conns="$2"; shift ;;
    *) echo "usage: bash bench/nginx.sh [--quick] [--rounds N] [--duration S] [--connections C]" >&2; exit 2 ;;
  esac
  shift
done

# shellcheck source=../scripts/fleet.sh
source "$root/scripts/fleet.sh"
fleet_tools
fleet_bin

work="$(mktemp -d /tmp/bench-nginx.XXXXXX)"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  for p in "$work"/*/nginx.pid; do [ -f "$p" ] && kill -TERM "$(cat "$p")" 2>/dev/null || true; done # TERM: workers too
  rm -rf "$work"
}
trap cleanup EXIT

SERVER_CORE=(taskset -c 0)
LOAD_CORE=(taskset -c 1)
export FLEET_ACCESS_LOG=0 FLEET_PIN="taskset -c 0"
RING="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"

rport="$(free_port)"
"${SERVER_CORE[@]}" redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
pids+=($!)
wait_port "$rport" 60 "$!" "$work/redis.log"

# Two fleets of three replicas: with and without --redis.
declare -A port
for kind in plain redis; do
  for i in 1 2 3; do
    p="$(free_port)"
    port[$kind$i]="$p"
    extra=()
    [ "$kind" = redis ] && extra=(--redis "redis://127.0.0.1:$rport/0")
    MCP_STATE_KEYS="$RING" "${SERVER_CORE[@]}" "$BIN" --http "127.0.0.1:$p" "${extra[@]}" >"$work/$kind$i.log" 2>&1 &
    pids+=($!)
    wait_port "$p" 60 "$!" "$work/$kind$i.log"
  done
done

# The scenarios: name -> URL.
declare -A url
order=(direct)
url[direct]="http://127.0.0.1:${port[plain1]}/mcp"
for kind in plain redis; do
  for n in 1 3; do
    name="nginx-$n-$kind"
    lport="$(free_port)"
    ups=("${port[${kind}1]}")
    ((n == 3)) && ups=("${port[${kind}1]}" "${port[${kind}2]}" "${port[${kind}3]}")
    fleet_nginx "$work/$name" "$lport" "${ups[@]}"
    url[$name]="http://127.0.0.1:$lport/mcp"
    order+=("$name")
  done
done

run() { # url seconds -> "rps p99_us failed"
  local out
  out="$(MCP_MODE=modern "${LOAD_CORE[@]}" wrk -t1 -c"$conns" -d"$2"s --timeout 10s -s "$here/wrk/mcp.lua" "$1" | sed -n 's/^WRK_RESULT //p')"
  python3 - "$out" <<'PY'
import sys
kv = dict(t.split("=") for t in sys.argv[1].split())
failed = sum(int(kv[k]) for k in kv if k.startswith("err_"))
print(f'{int(kv["requests"]) * 1e6 / int(kv["duration_us"]):.0f} {kv["p99_us"]} {failed}')
PY
}

declare -A rps p99 failed
for name in "${order[@]}"; do run "${url[$name]}" 1 >/dev/null; done # warm-up
for ((r = 1; r <= rounds; r++)); do
  for name in "${order[@]}"; do
    read -r a b c < <(run "${url[$name]}" "$duration")
    rps[$name]+="$a " p99[$name]+="$b " failed[$name]=$((${failed[$name]:-0} + c))
    echo "bench-nginx: round $r $name: $a req/s, p99 $b us, failed $c" >&2
  done
done

median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | sed -n "$((($(wc -w <<<"$1") + 1) / 2))p"; }
base="$(median "${rps[direct]}")"
{
  echo "| Scenario (echo, $conns connections, $rounds x ${duration} s, median) | req/s | ÷ direct | p99 µs | failed |"
  echo "|---|---:|---:|---:|---:|"
  for name in "${order[@]}"; do
    m="$(median "${rps[$name]}")"
    printf '| %s | %s | %s | %s | %s |\n' "$name" "$m" "$(python3 -c "print(f'{$m/$base:.2f}×')")" "$(median "${p99[$name]}")" "${failed[$name]}"
  done
} | tee "$here/results/nginx.md"
