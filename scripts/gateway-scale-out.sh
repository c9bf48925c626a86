#!/usr/bin/env bash
# Scale-out check for gateways: three `mcp gateway --http` replicas with the
# same config (one upstream, `everything-server --stdio`: each replica
# starts its own child) sharing a real Redis, behind a real nginx running
# the recipe in deploy/nginx/, under load. The server's own check is
# scripts/scale-out.sh; this one reuses its helpers (scripts/fleet.sh) and
# probes (scripts/scale_probe.py --prefix everything__).
#
#   bash scripts/gateway-scale-out.sh            full durations
#   bash scripts/gateway-scale-out.sh --quick    shorter loads (CI)
#   bash scripts/gateway-scale-out.sh --only 1,3 some checks (numbers below)
#   bash scripts/gateway-scale-out.sh --keep     leave the work folder (logs)
#
# nginx gets the recipe as committed plus one line an operator adds for a
# gateway: `"POST:tools/call:everything__echo" retry;` (the gateway's name
# for the upstream's idempotent echo). Checks:
#   1. kill -9 of one replica mid-load: zero failed requests for
#      everything__echo (retried by nginx); for a tool nginx may not retry,
#      failures at most the requests in flight, none timing out; the
#      restarted replica takes traffic again;
#   2. rolling SIGTERM of all three replicas under load: zero failed
#      requests, no connection closed under a request nginx had sent, each
#      replica exits 0;
#   3. a handshake-era session roams: initialize on one replica, calls on
#      the others with no 404, subscribe elsewhere, a
#      cancellation posted to another replica than the one running the
#      request reaches it (and the upstream), DELETE on one ends it
#      everywhere (no setLevel or elicitation check: a gateway has no
#      logging and refuses its upstreams' input requests, docs/GATEWAY.md);
#   4. listen fan-out: each tool list change in one replica's upstream
#      child (which the others' children do not share) reaches listeners on
#      the two others exactly once, in order, through the Redis change bus.
# Prints one `gateway-scale-out: N ok|FAILED ...` line per check, exits 1
# on any failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

quick=0 keep=0 only=""
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --only) only="$2"; shift ;;
    *) echo "usage: bash scripts/gateway-scale-out.sh [--quick] [--only 1,2,...] [--keep]" >&2; exit 2 ;;
  esac
  shift
done
wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
if ((quick)); then LOAD=12 CALLS=300 FANOUT=10; else LOAD=30 CALLS=1000 FANOUT=40; fi

# ---------------------------------------------------------------- setup
# shellcheck source=fleet.sh
source "$root/scripts/fleet.sh"
fleet_tools
# The debug build scripts/test.sh already made for the redis tests.
echo "gateway-scale-out: building mcp and everything-server --features redis" >&2
cargo build --quiet -p ferromcp-everything -p ferromcp-cli --features redis \
  --bin mcp --bin everything-server
tdir="$(fleet_target_dir)"
MCP="$tdir/debug/mcp" UPSTREAM="$tdir/debug/everything-server"
PROBE=(python3 "$root/scripts/scale_probe.py" --prefix everything__)
ECHO=everything__echo

work="$(mktemp -d /tmp/gateway-scale-out.XXXXXX)"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  [ -f "$work/nginx.pid" ] && kill -TERM "$(cat "$work/nginx.pid")" 2>/dev/null || true
  if ((keep)); then echo "gateway-scale-out: logs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

RING="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
RPORT="$(free_port)"
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
pids+=("$!")
wait_port "$RPORT" 60 "$!" "$work/redis.log"
REDIS_URL="redis://127.0.0.1:$RPORT/0"

python3 -c 'import json,sys; print(json.dumps({"mcpServers": {"everything": {"command": sys.argv[1], "args": ["--stdio"]}}}))' \
  "$UPSTREAM" >"$work/gateway.json"

declare -a PORT PID
for i in 1 2 3; do PORT[$i]="$(free_port)"; done
start_replica() { # i
  local i="$1" deadline=$((SECONDS + 60))
  : >"$work/r$i.log.new"
  MCP_STATE_KEYS="$RING" "$MCP" gateway --config "$work/gateway.json" --no-watch \
    --http "127.0.0.1:${PORT[$i]}" --redis "$REDIS_URL" --redis-prefix gw: \
    2>"$work/r$i.log.new" &
  PID[$i]=$!
  pids+=("${PID[$i]}")
  # Ready once its upstream is connected and it serves (it binds first).
  until grep -q "listening on" "$work/r$i.log.new"; do
    if ! kill -0 "${PID[$i]}" 2>/dev/null || ((SECONDS >= deadline)); then
      echo "gateway-scale-out: replica $i did not start" >&2
      fleet_show_log "$work/r$i.log.new"
      return 1
    fi
    sleep 0.05
  done
  grep -q "1 of 1 upstream(s) connected" "$work/r$i.log.new" ||
    { echo "gateway-scale-out: replica $i started without its upstream" >&2; fleet_show_log "$work/r$i.log.new"; return 1; }
  cat "$work/r$i.log.new" >>"$work/r$i.log"
}
for i in 1 2 3; do start_replica "$i"; done
URL1="http://127.0.0.1:${PORT[1]}/mcp" URL2="http://127.0.0.1:${PORT[2]}/mcp" URL3="http://127.0.0.1:${PORT[3]}/mcp"

NPORT="$(free_port)"
FLEET_IDEMPOTENT="$ECHO" fleet_nginx "$work" "$NPORT" "${PORT[1]}" "${PORT[2]}" "${PORT[3]}"
LB="http://127.0.0.1:$NPORT/mcp"
echo "gateway-scale-out: redis :$RPORT, gateways :${PORT[1]} :${PORT[2]} :${PORT[3]}, nginx :$NPORT (work $work)" >&2

failures=0
report() { # n ok|FAILED text
  echo "gateway-scale-out: $1 $2 $3"
  [ "$2" = ok ] || failures=$((failures + 1))
}
# shellcheck source=lib/fleet-checks.sh
source "$root/scripts/lib/fleet-checks.sh"
ECHO_ARGS='{"text":"hello"}'

# ---------------------------------------------------------------- 1
wanted 1 && check_kill 1 "$ECHO" everything__test_simple_text "$ECHO_ARGS"

# ---------------------------------------------------------------- 2
wanted 2 && check_rolling 2 "$ECHO" everything__test_tool_with_progress $((3 * 5 + 4)) "$ECHO_ARGS"

# ---------------------------------------------------------------- 3
if wanted 3; then
  if out="$("${PROBE[@]}" roam --replica "$URL1" --replica "$URL2" --replica "$URL3" --calls "$CALLS" \
    --skip setLevel --skip elicitation 2>&1)"; then
    report 3 ok "$(grep PROBE <<<"$out")"
  else
    report 3 FAILED "$(tr '\n' ' ' <<<"$out")"
  fi
fi

# ---------------------------------------------------------------- 4
if wanted 4; then
  # One change at a time: a gateway re-lists its upstream after each
  # list_changed, and two changes inside one re-list are one change to it.
  if out="$("${PROBE[@]}" fanout --listen "$URL2" --listen "$URL3" --publish "$URL1" \
    --count "$FANOUT" --gap 0.2 --tools-only --p99-goal 0 2>&1)"; then
    report 4 ok "$(grep PROBE <<<"$out")"
  else
    report 4 FAILED "$(tr '\n' ' ' <<<"$out")"
  fi
fi

if ((failures)); then
  echo "gateway-scale-out: $failures check(s) FAILED (logs: rerun with --keep)" >&2
  exit 1
fi
echo "gateway-scale-out: all checks passed"
