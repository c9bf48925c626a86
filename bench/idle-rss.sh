#!/usr/bin/env bash
# Idle memory of HTTP servers built from our crates, measured the way
# bench-run measures "idle RSS": start the server with `--http ADDR`, send
# one 2026-07-28 `tools/call` (echo, "hello"), wait 200 ms, read
# /proc/PID/status. Also splits RssFile into the executable's own pages and
# everything else (shared libraries), from /proc/PID/smaps.
#
#   bash bench/idle-rss.sh                      # the three builds below
#   bash bench/idle-rss.sh NAME=BIN[:TOOL] ...  # any servers (TOOL: the tool to call)
#
# Default builds (made if missing, in bench/target and bench/target/lean):
#   everything-server  target/release/everything-server (every fixture)
#   sdk-default        bench ours-tools --tools 1, ferromcp-server default features
#   sdk-lean           the same without default features: HTTP/1.1 only,
#                      no JSON Schema validation (see ferromcp-server's crate docs)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
ROUNDS="${ROUNDS:-3}"

if [ $# -eq 0 ]; then
  (cd "$root" && cargo build --release --quiet --bin everything-server)
  (cd "$here" && cargo build --release --quiet -p bench-ours-peer)
  (cd "$here" && cargo build --release --quiet -p bench-ours-peer --no-default-features --target-dir "$here/target/lean")
  set -- "everything-server=$root/target/release/everything-server:echo" \
    "sdk-default=$here/target/release/ours-tools --tools 1:tool_000" \
    "sdk-lean=$here/target/lean/release/ours-tools --tools 1:tool_000"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
kb() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$2/status"; }

printf '| server | text bytes | VmRSS MB | RssAnon MB | RssFile MB | of which the executable MB |\n|---|---:|---:|---:|---:|---:|\n'
for spec in "$@"; do
  name="${spec%%=*}"
  rest="${spec#*=}"
  tool="${rest##*:}"
  cmd="${rest%:*}"
  bin="${cmd%% *}"
  text=$(size "$bin" | awk 'NR == 2 {print $1}')
  for _ in $(seq "$ROUNDS"); do
    port=$(free_port)
    # shellcheck disable=SC2086
    $cmd --http "127.0.0.1:$port" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 200); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
      sleep 0.02
    done
    meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}'
    body=$(curl -sS --max-time 5 -X POST "http://127.0.0.1:$port/mcp" \
      -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
      -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H "Mcp-Name: $tool" \
      --data-binary "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$tool\",\"arguments\":{\"text\":\"hello\"},$meta}}")
    if ! grep -q '"text":"hello"' <<<"$body"; then
      echo "$name: unexpected answer: $body" >&2
      kill "$pid"
      exit 1
    fi
    sleep 0.2
    exe=$(readlink -f "/proc/$pid/exe")
    own=$(awk -v exe="$exe" '/^[0-9a-f]+-[0-9a-f]+ / {name = $6} /^Rss:/ && name == exe {s += $2} END {print s + 0}' "/proc/$pid/smaps")
    printf '| %s | %s | %.2f | %.2f | %.2f | %.2f |\n' "$name" "$text" \
      "$(echo "$(kb VmRSS "$pid") / 1024" | bc -l)" "$(echo "$(kb RssAnon "$pid") / 1024" | bc -l)" \
      "$(echo "$(kb RssFile "$pid") / 1024" | bc -l)" "$(echo "$own / 1024" | bc -l)"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  done
done
