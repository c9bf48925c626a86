#!/usr/bin/env bash
# Hop cost of exposing a stdio server over Streamable HTTP (issue 24).
#
#   bash bench/expose.sh            3 interleaved rounds (~4 min on 2 cores)
#   bash bench/expose.sh --quick    smoke run: 1 round, 2 s per measurement
#   bash bench/expose.sh --rounds R --secs S --window W
#   bash bench/expose.sh --baseline OLD/mcp   also "ours-before": the same
#                                   scenario with another build of mcp
#                                   (say, before a change), interleaved in
#                                   the same rounds
#
# The same client (wrk with bench/wrk/mcp.lua, a 2025-11-25 session, one
# `tools/call echo` after another, each with a fresh id) loads each
# scenario at http://127.0.0.1:PORT/mcp:
#
#   direct        everything-server --http (no hop: the baseline)
#   ours          mcp bridge --expose ADDR -- everything-server --stdio
#   supergateway  supergateway --stdio CMD --outputTransport streamableHttp
#                 --stateful   (npm)
#   mcp-proxy     mcp-proxy --port P -- CMD   (PyPI, sparfenyuk)
#   mcp-proxy-npm mcp-proxy --port P -- CMD   (npm, punkpeye)
#
# Per scenario and round: start it fresh (the server side pinned to core 0,
# wrk to core 1), `initialize` with curl and check an echo answer, warm up,
# then measure one connection (sequential calls: latency) and W
# connections (throughput). The table shows the median over rounds and
# what each hop adds over direct. Peers come from bench/peers.sh (pinned
# versions). Not part of CI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
rounds=3 secs=5 warm=1 window=16 baseline=
while (($#)); do
  case "$1" in
    --quick) rounds=1 secs=2 ;;
    --rounds) rounds="$2"; shift ;;
    --secs) secs="$2"; shift ;;
    --window) window="$2"; shift ;;
    --baseline) baseline="$2"; shift ;;
    *) echo "expose.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

work="$(mktemp -d)" tag=expose.sh
# shellcheck source=lib/hop.sh
source "$here/lib/hop.sh"
hop_prepare node wrk curl taskset

child="$bin/everything-server --stdio"
# start NAME PORT: starts the scenario in its own process group.
start() {
  local p="$2" cmd
  case "$1" in
    direct) cmd="$bin/everything-server --http 127.0.0.1:$p" ;;
    ours) cmd="$bin/mcp bridge --expose 127.0.0.1:$p -- $child" ;;
    ours-before) cmd="$baseline bridge --expose 127.0.0.1:$p -- $child" ;;
    supergateway) cmd="node $peers/npm/node_modules/supergateway/dist/index.js --stdio '$child' --outputTransport streamableHttp --stateful --port $p --logLevel none" ;;
    mcp-proxy) cmd="$peers/py/bin/mcp-proxy --host 127.0.0.1 --port $p --log-level WARNING -- $child" ;;
    mcp-proxy-npm) cmd="node $peers/npm/node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs --host 127.0.0.1 --port $p -- $child" ;;
  esac
  launch "$1" "$p" "$cmd"
}

# session URL: initialize and check an echo; prints "SID VERSION".
session() {
  local url="$1" s sid ver body
  s="$(initialize "$url")" || return 1
  read -r sid ver <<<"$s"
  [ "$sid" = - ] && sid=
  body="$(post "$url" "$sid" "$ver" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}')"
  case "$body" in
    *'"text":"hello"'*) ;;
    *) echo "expose.sh: not an echo: ${body:0:300}" >&2; return 1 ;;
  esac
  echo "$s"
}

# load URL SID VERSION CONNS SECS: one WRK_RESULT line.
load() {
  local sid="$2"; [ "$sid" = - ] && sid=
  MCP_MODE=session MCP_SESSION="$sid" MCP_VERSION="$3" \
    taskset -c "$cli_cpu" wrk -t1 -c"$4" -d"${5}s" --timeout 10s -s "$here/wrk/mcp.lua" "$1" |
    grep '^WRK_RESULT'
}

names=(direct ours supergateway mcp-proxy mcp-proxy-npm)
if [ -n "$baseline" ]; then
  [ -x "$baseline" ] || { echo "expose.sh: --baseline $baseline is not executable" >&2; exit 2; }
  names=(direct ours-before ours supergateway mcp-proxy mcp-proxy-npm)
fi
results="$work/results.jsonl"
for r in $(seq "$rounds"); do
  for name in "${names[@]}"; do
    port="$(free_port)"
    url="http://127.0.0.1:$port/mcp"
    if ! start "$name" "$port" || ! s="$(session "$url")"; then
      echo "round $r $name: FAILED (log: $work/$name.log)" >&2
      tail -5 "$work/$name.log" >&2 || true
      stop; continue
    fi
    read -r sid ver <<<"$s"
    load "$url" "$sid" "$ver" "$window" "$warm" >/dev/null || true
    for mode in seq window; do
      c=1; [ "$mode" = window ] && c=$window
      if out="$(load "$url" "$sid" "$ver" "$c" "$secs")" && ! grep -Eq 'err_[a-z]+=[1-9]' <<<"$out" &&
          ! grep -q 'requests=0 ' <<<"$out"; then
        echo "round $r $name $mode: $out" >&2
        record "$name" "$r" "$mode" "$out" >>"$results"
      else
        echo "round $r $name $mode: FAILED: ${out:-no output} (log: $work/$name.log)" >&2
      fi
    done
    stop
  done
done

python3 - "$results" "$rounds" "$window" "$secs" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rounds, window, secs = sys.argv[2], sys.argv[3], sys.argv[4]
names = [n for n in ["direct", "ours-before", "ours", "supergateway", "mcp-proxy", "mcp-proxy-npm"]
         if any(r["name"] == n for r in rows)]
def med(name, mode, key):
    xs = [r[key] for r in rows if r["name"] == name and r["mode"] == mode]
    return statistics.median(xs) if xs else None
def f(x, nd=0):
    return "failed" if x is None else f"{x:,.{nd}f}"
def add(n, key):
    a, b = med(n, "seq", key), med("direct", "seq", key)
    return "–" if a is None or b is None or n == "direct" else f"{a - b:+,.0f}"
def ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.2f}×"
print(f"\nMedian of {rounds} round(s), {secs} s per measurement; window = {window} connections.\n")
print("| Scenario | 1 conn req/s | p50 µs | p99 µs | added p50 µs | added p99 µs | window req/s | window ×direct | ours ÷ this (window) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for n in names:
    s, w = med(n, "seq", "rps"), med(n, "window", "rps")
    print(f"| {n} | {f(s)} | {f(med(n,'seq','p50_us'))} | {f(med(n,'seq','p99_us'))} | {add(n,'p50_us')} | {add(n,'p99_us')} | "
          f"{f(w)} | {ratio(w, med('direct','window','rps'))} | {ratio(med('ours','window','rps'), w)} |")
def one(name, rnd, mode, key):
    xs = [r[key] for r in rows if r["name"] == name and r["round"] == rnd and r["mode"] == mode]
    return xs[0] if xs else None
print("\nPer round (window rate over supergateway's; added p50 at one connection over direct's):\n")
for n in [n for n in ("ours-before", "ours") if n in names]:
    per = []
    for rnd in sorted({r["round"] for r in rows}):
        a, b = one(n, rnd, "window", "rps"), one("supergateway", rnd, "window", "rps")
        p, d = one(n, rnd, "seq", "p50_us"), one("direct", rnd, "seq", "p50_us")
        added = "–" if p is None or d is None else f"{p - d:+,} µs"
        per.append(f"round {rnd}: {ratio(a, b)}, {added}")
    print(f"- {n}: " + "; ".join(per))
PY
