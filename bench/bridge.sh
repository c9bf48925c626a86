#!/usr/bin/env bash
# Hop cost of a stdio→Streamable-HTTP bridge for a stdio host (issue 24).
#
#   bash bench/bridge.sh            3 interleaved rounds (~3–5 min on 2 cores)
#   bash bench/bridge.sh --quick    smoke run: 1 round, few calls
#   bash bench/bridge.sh --rounds R --seq-n N --win-n N --window W
#
# One everything-server --http serves every bridge; the same driver
# (bench/bridge-driver.py) talks stdio to each scenario, as a host would:
#
#   direct        everything-server --stdio (no hop: the baseline)
#   ours          mcp bridge URL
#   supergateway  supergateway --streamableHttp URL   (npm)
#   mcp-proxy     mcp-proxy --transport streamablehttp URL   (PyPI, sparfenyuk)
#   mcp-remote    mcp-remote URL --transport http-only   (npm)
#
# Each round runs every scenario once, sequential calls then a window of W
# in flight; the table shows the median over rounds. Peers come from
# bench/peers.sh (pinned versions). Not part of CI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
rounds=3 seq_n=2000 win_n=4000 window=16 warmup=200
while (($#)); do
  case "$1" in
    --quick) rounds=1 seq_n=200 win_n=500 warmup=20 ;;
    --rounds) rounds="$2"; shift ;;
    --seq-n) seq_n="$2"; shift ;;
    --win-n) win_n="$2"; shift ;;
    --window) window="$2"; shift ;;
    *) echo "bridge.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

echo "bridge.sh: building mcp and everything-server…" >&2
(cd "$root" && cargo build --release --quiet --bin mcp --bin everything-server)
bin="${CARGO_TARGET_DIR:-$root/target}/release"
bash "$here/peers.sh"
peers="$(bash "$here/peers.sh" --path)"
command -v node >/dev/null || { echo "bridge.sh: node is not on PATH" >&2; exit 2; }

work="$(mktemp -d)"
srv_pid=
cleanup() {
  [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port/mcp"
"$bin/everything-server" --http "127.0.0.1:$port" 2>"$work/server.log" &
srv_pid=$!
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.1
done

# scenario NAME: the command a host would start.
scenario() {
  case "$1" in
    direct) echo "$bin/everything-server --stdio" ;;
    ours) echo "$bin/mcp bridge $url" ;;
    supergateway) echo "node $peers/npm/node_modules/supergateway/dist/index.js --streamableHttp $url --logLevel none" ;;
    mcp-proxy) echo "$peers/py/bin/mcp-proxy --transport streamablehttp $url" ;;
    mcp-remote) echo "node $peers/npm/node_modules/mcp-remote/dist/proxy.js $url --transport http-only" ;;
  esac
}
names=(direct ours supergateway mcp-proxy mcp-remote)
export MCP_REMOTE_CONFIG_DIR="$work/mcp-remote"
results="$work/results.jsonl"
for r in $(seq "$rounds"); do
  for name in "${names[@]}"; do
    for mode in seq window; do
      n=$seq_n; [ "$mode" = window ] && n=$win_n
      # shellcheck disable=SC2046
      if out="$(python3 "$here/bridge-driver.py" --mode "$mode" --n "$n" --window "$window" --warmup "$warmup" \
          -- $(scenario "$name") 2>>"$work/$name.log")"; then
        echo "{\"name\":\"$name\",\"round\":$r,${out#\{}" >>"$results"
        echo "round $r $name $mode: $out" >&2
      else
        echo "round $r $name $mode: FAILED (stderr: $work/$name.log)" >&2
        tail -5 "$work/$name.log" >&2 || true
      fi
    done
  done
done

python3 - "$results" "$rounds" "$window" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rounds, window = sys.argv[2], sys.argv[3]
names = ["direct", "ours", "supergateway", "mcp-proxy", "mcp-remote"]
def med(name, mode, key):
    xs = [r[key] for r in rows if r["name"] == name and r["mode"] == mode]
    return statistics.median(xs) if xs else None
def f(x, nd=0):
    return "failed" if x is None else f"{x:,.{nd}f}"
def ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.2f}×"
print(f"\nMedian of {rounds} round(s); window = {window} in flight.\n")
print("| Scenario | seq req/s | seq p50 µs | seq p99 µs | window req/s | window p50 µs | window p99 µs | seq ×direct | seq ×ours | window ×direct | window ×ours | peak RSS MB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for n in names:
    s, w = med(n, "seq", "rps"), med(n, "window", "rps")
    rss = max([r["peak_rss_kb"] for r in rows if r["name"] == n] or [0]) / 1024
    print(f"| {n} | {f(s)} | {f(med(n,'seq','p50_us'),1)} | {f(med(n,'seq','p99_us'),1)} | {f(w)} | "
          f"{f(med(n,'window','p50_us'),1)} | {f(med(n,'window','p99_us'),1)} | "
          f"{ratio(s, med('direct','seq','rps'))} | {ratio(s, med('ours','seq','rps'))} | "
          f"{ratio(w, med('direct','window','rps'))} | {ratio(w, med('ours','window','rps'))} | "
          f"{'–' if not rss else f'{rss:.1f}'} |")
PY
