# shellcheck shell=bash
# Helpers shared by bench/expose.sh and bench/gateway.sh: one scenario
# process at a time on core $srv_cpu, loaded by wrk on $cli_cpu. Source it
# after setting `here`, `root`, `work` (a scratch folder) and `tag` (the
# script's name, for messages); it sets the EXIT trap.
#
#   hop_prepare TOOL...       builds the release mcp and everything-server
#                             (sets bin), installs the pinned peers of
#                             bench/peers.sh (sets peers), checks that each
#                             TOOL is on PATH, sets srv_cpu and cli_cpu
#   launch NAME PORT CMD      starts CMD (a shell command line) in its own
#                             process group, output appended to
#                             $work/NAME.log; returns once PORT accepts
#                             connections (at most 30 s)
#   stop                      ends the running scenario and its children
#   post URL SID VERSION BODY one POST to an MCP endpoint; the response
#                             headers land in $work/h, the body on stdout
#   initialize URL            a 2025-11-25 `initialize` and
#                             `notifications/initialized`; prints
#                             "SID VERSION" (SID "-" when none)
#   free_port                 a free loopback port
#   record NAME ROUND MODE RESULT
#                             one wrk WRK_RESULT line as a JSON row on
#                             stdout: rps, p50_us, p99_us

hop_prepare() { # tool...
  echo "$tag: building mcp and everything-server…" >&2
  (cd "$root" && cargo build --release --quiet --bin mcp --bin everything-server)
  bin="${CARGO_TARGET_DIR:-$root/target}/release"
  bash "$here/peers.sh"
  peers="$(bash "$here/peers.sh" --path)"
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || { echo "$tag: $t is not on PATH" >&2; exit 2; }
  done
  srv_cpu=0 cli_cpu=1
  [ "$(nproc)" -lt 2 ] && cli_cpu=0
  return 0
}

pid=
stop() {
  if [ -n "$pid" ]; then
    kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
  fi
}
trap 'stop; rm -rf "$work"' EXIT

launch() { # name port command
  setsid taskset -c "$srv_cpu" bash -c "exec $3" >>"$work/$1.log" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq 600); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$2),0.2)" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "$tag: $1 did not listen on $2" >&2
  return 1
}

post() { # url sid version body
  curl -sS -m 30 -D "$work/h" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    ${2:+-H "Mcp-Session-Id: $2"} ${3:+-H "MCP-Protocol-Version: $3"} \
    --data-binary "$4" "$1"
}

initialize() { # url
  local body sid ver
  body="$(post "$1" "" "" '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}')"
  ver="$(printf '%s' "$body" | grep -o '"protocolVersion":"[^"]*"' | head -1 | cut -d'"' -f4)"
  [ -n "$ver" ] || { echo "$tag: initialize failed: ${body:0:300}" >&2; return 1; }
  sid="$(grep -i '^mcp-session-id:' "$work/h" | head -1 | cut -d: -f2 | tr -d ' \r')"
  post "$1" "$sid" "$ver" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
  echo "${sid:--} $ver"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

record() { # name round mode wrk-result
  python3 - "$@" <<'PY'
import json, sys
kv = dict(x.split("=") for x in sys.argv[4].split()[1:])
secs = int(kv["duration_us"]) / 1e6
print(json.dumps({"name": sys.argv[1], "round": int(sys.argv[2]), "mode": sys.argv[3],
                  "rps": int(kv["requests"]) / secs, "p50_us": int(kv["p50_us"]), "p99_us": int(kv["p99_us"])}))
PY
}
