#!/usr/bin/env bash
# What `mcp gateway` costs a client (issue 26), side by side with FastMCP's
# proxy (PyPI fastmcp, pinned in bench/peers.sh) in front of the same
# upstreams.
#
#   bash bench/gateway.sh            3 interleaved rounds (~4 min on 2 cores)
#   bash bench/gateway.sh --quick    smoke run: 1 round, 2 s per measurement
#   bash bench/gateway.sh --rounds R --secs S --window W --upstreams N
#
# Part 1, the hop: one upstream (`everything-server --stdio`) behind
#
#   direct   everything-server --http (no gateway: the baseline)
#   ours     mcp gateway --config ONE --http ADDR   (the tool is ev__echo)
#   fastmcp  fastmcp's create_proxy(ONE) over Streamable HTTP (ev_echo)
#
# each loaded by wrk with bench/wrk/mcp.lua (a 2025-11-25 session, one
# `tools/call` of the echo tool after another, a fresh id each): one
# connection (latency) and W connections (throughput).
#
# Part 2, lists: N upstreams (default 10, each `everything-server --stdio`)
# behind ours and fastmcp. Cold: from starting the process to the first
# `tools/list` answer (initialize included), and that first answer's own
# time; warm: `tools/list` on one connection under wrk.
#
# Per scenario and round the process is started fresh, pinned to core 0
# (its children with it), wrk to core 1. Median over rounds. Not in CI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
rounds=3 secs=5 warm=1 window=16 upstreams=10
while (($#)); do
  case "$1" in
    --quick) rounds=1 secs=2 ;;
    --rounds) rounds="$2"; shift ;;
    --secs) secs="$2"; shift ;;
    --window) window="$2"; shift ;;
    --upstreams) upstreams="$2"; shift ;;
    *) echo "gateway.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

work="$(mktemp -d)" tag=gateway.sh
# shellcheck source=lib/hop.sh
source "$here/lib/hop.sh"
hop_prepare wrk curl taskset python3

# config FILE N: an mcpServers file with N everything-server upstreams,
# "ev" for one, "ev0".."ev{N-1}" for more.
config() {
  python3 - "$1" "$2" "$bin/everything-server" <<'PY'
import json, sys
path, n, server = sys.argv[1], int(sys.argv[2]), sys.argv[3]
names = ["ev"] if n == 1 else [f"ev{i}" for i in range(n)]
json.dump({"mcpServers": {k: {"command": server, "args": ["--stdio"]} for k in names}},
          open(path, "w"))
PY
}
config "$work/one.json" 1
config "$work/many.json" "$upstreams"

# start NAME PORT CONFIG: the scenario in its own process group; returns
# once its port accepts connections.
start() {
  local p="$2" cmd
  case "$1" in
    direct) cmd="$bin/everything-server --http 127.0.0.1:$p" ;;
    ours) cmd="$bin/mcp gateway --config $3 --http 127.0.0.1:$p" ;;
    fastmcp) cmd="$peers/fastmcp/bin/python $here/fastmcp_proxy.py $3 $p" ;;
  esac
  launch "$1" "$p" "$cmd"
}

# session URL: initialize, then tools/list; prints "SID VERSION ECHO TOOLS"
# (the echo tool's name as listed, the number of tools) and checks an echo.
session() {
  local url="$1" s body sid ver tool count
  s="$(initialize "$url")" || return 1
  read -r sid ver <<<"$s"
  [ "$sid" = - ] && sid=
  body="$(post "$url" "$sid" "$ver" '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')"
  read -r tool count < <(printf '%s' "$body" | python3 -c '
import json, sys
for line in sys.stdin.read().splitlines():
    line = line[5:].strip() if line.startswith("data:") else line.strip()
    if line.startswith("{"):
        names = [t["name"] for t in json.loads(line)["result"]["tools"]]
        echo = [n for n in names if n == "echo" or n.endswith("_echo")]
        print(echo[0] if echo else "-", len(names))
        break
') || { echo "gateway.sh: tools/list failed: ${body:0:300}" >&2; return 1; }
  body="$(post "$url" "$sid" "$ver" "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"$tool\",\"arguments\":{\"text\":\"hello\"}}}")"
  case "$body" in
    *'"text":"hello"'*) ;;
    *) echo "gateway.sh: not an echo ($tool): ${body:0:300}" >&2; return 1 ;;
  esac
  echo "${sid:--} $ver $tool $count"
}

# load URL SID VERSION TOOL CONNS SECS [LIST]: one WRK_RESULT line.
load() {
  local sid="$2"; [ "$sid" = - ] && sid=
  MCP_MODE=session MCP_SESSION="$sid" MCP_VERSION="$3" MCP_TOOL="$4" MCP_LIST="${7:-0}" \
    taskset -c "$cli_cpu" wrk -t1 -c"$5" -d"${6}s" --timeout 10s -s "$here/wrk/mcp.lua" "$1" |
    grep '^WRK_RESULT'
}

results="$work/results.jsonl"
measure() { # NAME ROUND MODE URL SID VER TOOL CONNS [LIST]
  local out
  if out="$(load "$4" "$5" "$6" "$7" "$8" "$secs" "${9:-0}")" && ! grep -Eq 'err_[a-z]+=[1-9]' <<<"$out" &&
      ! grep -q 'requests=0 ' <<<"$out"; then
    echo "round $2 $1 $3: $out" >&2
    record "$1" "$2" "$3" "$out" >>"$results"
  else
    echo "round $2 $1 $3: FAILED: ${out:-no output} (log: $work/$1.log)" >&2
  fi
}

for r in $(seq "$rounds"); do
  # Part 1: the hop.
  for name in direct ours fastmcp; do
    p="$(free_port)"
    url="http://127.0.0.1:$p/mcp"
    if ! start "$name" "$p" "$work/one.json" || ! s="$(session "$url")"; then
      echo "round $r $name: FAILED (log: $work/$name.log)" >&2
      tail -5 "$work/$name.log" >&2 || true
      stop; continue
    fi
    read -r sid ver tool _ <<<"$s"
    load "$url" "$sid" "$ver" "$tool" "$window" "$warm" >/dev/null || true
    measure "$name" "$r" seq "$url" "$sid" "$ver" "$tool" 1
    measure "$name" "$r" window "$url" "$sid" "$ver" "$tool" "$window"
    stop
  done
  # Part 2: lists over many upstreams.
  for name in ours fastmcp; do
    p="$(free_port)"
    url="http://127.0.0.1:$p/mcp"
    t0="$(date +%s%N)"
    if ! start "$name" "$p" "$work/many.json"; then stop; continue; fi
    # The first tools/list, timed on its own, right after initialize.
    read -r sid _ < <(initialize "$url") || { stop; continue; }
    [ "$sid" = - ] && sid=
    t1="$(date +%s%N)"
    body="$(post "$url" "$sid" 2025-11-25 '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')"
    t2="$(date +%s%N)"
    n="$(printf '%s' "$body" | grep -o '"inputSchema"' | wc -l)"
    echo "round $r $name cold: ready+first list $(((t2 - t0) / 1000000)) ms, first list $(((t2 - t1) / 1000)) µs, $n tools" >&2
    printf '{"name":"%s","round":%d,"mode":"cold","start_ms":%d,"first_us":%d,"tools":%d}\n' \
      "$name" "$r" $(((t2 - t0) / 1000000)) $(((t2 - t1) / 1000)) "$n" >>"$results"
    measure "$name" "$r" list "$url" "$sid" 2025-11-25 - 1 1
    stop
  done
done

python3 - "$results" "$rounds" "$window" "$secs" "$upstreams" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rounds, window, secs, ups = sys.argv[2:6]
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
for n in ["direct", "ours", "fastmcp"]:
    s, w = med(n, "seq", "rps"), med(n, "window", "rps")
    print(f"| {n} | {f(s)} | {f(med(n,'seq','p50_us'))} | {f(med(n,'seq','p99_us'))} | {add(n,'p50_us')} | {add(n,'p99_us')} | "
          f"{f(w)} | {ratio(w, med('direct','window','rps'))} | {ratio(med('ours','window','rps'), w)} |")
print(f"\n`tools/list` with {ups} upstreams:\n")
print("| Scenario | tools | start to first list ms | first list µs | warm list req/s (1 conn) | warm p50 µs | warm p99 µs |")
print("|---|---:|---:|---:|---:|---:|---:|")
for n in ["ours", "fastmcp"]:
    print(f"| {n} | {f(med(n,'cold','tools'))} | {f(med(n,'cold','start_ms'))} | {f(med(n,'cold','first_us'))} | "
          f"{f(med(n,'list','rps'))} | {f(med(n,'list','p50_us'))} | {f(med(n,'list','p99_us'))} |")
PY
