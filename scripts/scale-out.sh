#!/usr/bin/env bash
# Scale-out check: three everything-server replicas sharing a real Redis,
# behind a real nginx running the recipe in deploy/nginx/, under load.
#
#   bash scripts/scale-out.sh            every check, full durations (~3 min)
#   bash scripts/scale-out.sh --quick    every check, shorter loads (CI)
#   bash scripts/scale-out.sh --only 1,4 some checks (numbers below)
#   bash scripts/scale-out.sh --keep     leave the work folder (logs) behind
#   bash scripts/scale-out.sh --strict   also fail check 1 when the ratio is below 0.95
#
# It installs redis-server, nginx and wrk (Debian packages) when missing,
# builds the release everything-server with the `redis` feature, starts Redis
# (no persistence, a random free port), three replicas and nginx on loopback,
# and checks:
#   1. hot path: a stateless echo through nginx costs Redis nothing (zero
#      commands during the load: the check), and the throughput ratio
#      against the same fleet without --redis is printed (a figure, not a
#      gate: timings on a shared 2-core machine are noise; --strict fails
#      below 0.95; bench/nginx.sh measures it properly);
#   2. kill -9 of one replica mid-load: zero failed requests for a tool the
#      recipe marks idempotent (echo); for a tool it does not, failures at
#      most the requests in flight, none timing out; the restarted replica
#      takes traffic again;
#   3. rolling SIGTERM of all three replicas under load: zero failed
#      requests, no connection closed under a request nginx had sent (not
#      even one nginx retried), each replica exits 0 within its drain
#      deadline;
#   4. listen fan-out: listeners on two replicas see every change made on
#      the third, in order (publish -> receipt p50/p99 printed);
#   5. MRTR across replicas: retries on another replica complete; one
#      single-use token sent at once to all three succeeds exactly once per
#      trial; after a key rotation (mixed rings) tokens still open anywhere;
#   6. a handshake-era session roams: initialize on one replica, calls on
#      the others with no 404, setLevel and subscribe elsewhere, a
#      cancellation and an elicitation answer posted to another replica than
#      the one running the request reach it, DELETE on one ends it
#      everywhere;
#   7. Redis stopped mid-run: stateless requests keep working, requests
#      needing Redis answer 503 with Retry-After promptly, open listen
#      streams end, and everything recovers when Redis is back;
#   8. a default build has no Redis client in its dependency tree.
# Prints one `scale-out: N ok|FAILED ...` line per check, exits 1 on any
# failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

quick=0 keep=0 strict=0 only=""
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --strict) strict=1 ;;
    --only) only="$2"; shift ;;
    *) echo "usage: bash scripts/scale-out.sh [--quick] [--only 1,2,...] [--keep] [--strict]" >&2; exit 2 ;;
  esac
  shift
done
wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
if ((quick)); then
  LOAD=12 FANOUT=1000 TRIALS=300 CALLS=300 HOT=3 ROUNDS=1
else
  LOAD=30 FANOUT=1000 TRIALS=1000 CALLS=1000 HOT=5 ROUNDS=3
fi

# ---------------------------------------------------------------- setup
# shellcheck source=fleet.sh
source "$root/scripts/fleet.sh"
fleet_tools
fleet_bin
PROBE=(python3 "$root/scripts/scale_probe.py")

work="$(mktemp -d /tmp/scale-out.XXXXXX)"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  # TERM: the master stops its workers too (after -9 they would linger).
  [ -f "$work/nginx.pid" ] && kill -TERM "$(cat "$work/nginx.pid")" 2>/dev/null || true
  [ -f "$work/plain/nginx.pid" ] && kill -TERM "$(cat "$work/plain/nginx.pid")" 2>/dev/null || true
  if ((keep)); then echo "scale-out: logs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

KEY_A="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
KEY_B="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
RING="$KEY_A,$KEY_B"

RPORT="$(free_port)"
start_redis() {
  redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no \
    >"$work/redis.log" 2>&1 &
  REDIS_PID=$!
  pids+=("$REDIS_PID")
  wait_port "$RPORT" 60 "$REDIS_PID" "$work/redis.log"
}
start_redis
REDIS_URL="redis://127.0.0.1:$RPORT/0"

declare -a PORT PID PLAIN_PORT PLAIN_PID
for i in 1 2 3; do PORT[$i]="$(free_port)"; PLAIN_PORT[$i]="$(free_port)"; done
start_replica() { # i [ring]
  local i="$1" ring="${2:-$RING}"
  MCP_STATE_KEYS="$ring" MCP_STATE_SINGLE_USE=1000000 MCP_REPLICA_ID="r$i" \
    MCP_DRAIN_TIMEOUT_MS=5000 \
    "$BIN" --http "127.0.0.1:${PORT[$i]}" --redis "$REDIS_URL" >>"$work/r$i.log" 2>&1 &
  PID[$i]=$!
  pids+=("${PID[$i]}")
  wait_port "${PORT[$i]}" 60 "${PID[$i]}" "$work/r$i.log"
}
for i in 1 2 3; do start_replica "$i"; done
URL1="http://127.0.0.1:${PORT[1]}/mcp" URL2="http://127.0.0.1:${PORT[2]}/mcp" URL3="http://127.0.0.1:${PORT[3]}/mcp"

NPORT="$(free_port)"
fleet_nginx "$work" "$NPORT" "${PORT[1]}" "${PORT[2]}" "${PORT[3]}"
LB="http://127.0.0.1:$NPORT/mcp"
echo "scale-out: redis :$RPORT, replicas :${PORT[1]} :${PORT[2]} :${PORT[3]}, nginx :$NPORT (work $work)" >&2

failures=0
report() { # n ok|FAILED text
  echo "scale-out: $1 $2 $3"
  [ "$2" = ok ] || failures=$((failures + 1))
}

# shellcheck source=lib/fleet-checks.sh
source "$root/scripts/lib/fleet-checks.sh"
redis_commands() {
  redis-cli -p "$RPORT" INFO stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p'
}

# ---------------------------------------------------------------- 1
if wanted 1; then
  # The same fleet without --redis, behind its own nginx, for the ratio.
  for i in 1 2 3; do
    MCP_STATE_KEYS="$RING" "$BIN" --http "127.0.0.1:${PLAIN_PORT[$i]}" >>"$work/plain$i.log" 2>&1 &
    PLAIN_PID[$i]=$!
    pids+=("${PLAIN_PID[$i]}")
    wait_port "${PLAIN_PORT[$i]}" 60 "${PLAIN_PID[$i]}" "$work/plain$i.log"
  done
  PPORT="$(free_port)"
  fleet_nginx "$work/plain" "$PPORT" "${PLAIN_PORT[1]}" "${PLAIN_PORT[2]}" "${PLAIN_PORT[3]}"
  wrk_run 1 8 >/dev/null # warm both paths
  LB_SAVED="$LB"
  LB="http://127.0.0.1:$PPORT/mcp" wrk_run 1 8 >/dev/null
  with=() without=() idle0="$(redis_commands)"
  sleep "$HOT"
  idle1="$(redis_commands)"
  cmds=0
  for ((r = 0; r < ROUNDS; r++)); do
    c0="$(redis_commands)"
    res="$(wrk_run "$HOT" 16)"
    c1="$(redis_commands)"
    cmds=$((cmds + c1 - c0 - 1))
    with+=("$(($(field requests "$res") * 1000000 / $(field duration_us "$res")))")
    res="$(LB="http://127.0.0.1:$PPORT/mcp" wrk_run "$HOT" 16)"
    without+=("$(($(field requests "$res") * 1000000 / $(field duration_us "$res")))")
  done
  LB="$LB_SAVED"
  for i in 1 2 3; do { kill -9 "${PLAIN_PID[$i]}" && wait "${PLAIN_PID[$i]}"; } 2>/dev/null || true; done
  kill "$(cat "$work/plain/nginx.pid")" 2>/dev/null || true
  idle=$((idle1 - idle0 - 1))
  median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
  mw="$(median "${with[@]}")" mo="$(median "${without[@]}")"
  ratio="$(python3 -c "print(f'{$mw/$mo:.3f}')")"
  # Background traffic of the backplane itself (keep-alive pings), if any,
  # is measured over an idle interval of the same length per round.
  extra=$((cmds - idle * ROUNDS))
  text="echo via nginx: ${mw} req/s with --redis, ${mo} without (ratio ${ratio}, rounds ${ROUNDS}x${HOT}s); Redis commands during the load: ${cmds} (idle baseline ${idle}/interval)"
  if ((extra > ROUNDS)); then
    report 1 FAILED "$text: a stateless request touched Redis"
  elif ((strict)) && ! python3 -c "import sys; sys.exit(0 if $ratio >= 0.95 else 1)"; then
    report 1 FAILED "$text: below 0.95 (--strict)"
  else
    report 1 ok "$text"
  fi
fi

# ---------------------------------------------------------------- 2
wanted 2 && check_kill 2 echo test_simple_text

# ---------------------------------------------------------------- 3
wanted 3 && check_rolling 3 echo test_tool_with_progress $((3 * 4 + 4))

# ---------------------------------------------------------------- 4
if wanted 4; then
  if out="$("${PROBE[@]}" fanout --listen "$URL1" --listen "$URL2" --publish "$URL3" --count "$FANOUT" 2>&1)"; then
    report 4 ok "$(grep PROBE <<<"$out")"
  else
    report 4 FAILED "$(tr '\n' ' ' <<<"$out")"
  fi
fi

# ---------------------------------------------------------------- 5
if wanted 5; then
  if out="$("${PROBE[@]}" mrtr --replica "$URL1" --replica "$URL2" --replica "$URL3" --trials "$TRIALS" 2>&1)"; then
    # Rotation, mid-way: r3 now seals with B ([B,A]), r1 and r2 still with
    # A ([A,B]); tokens of either open on every replica.
    kill -TERM "${PID[3]}"; wait "${PID[3]}" || true
    start_replica 3 "$KEY_B,$KEY_A"
    if out2="$("${PROBE[@]}" mrtr --replica "$URL1" --replica "$URL2" --replica "$URL3" --cross 60 --trials 60 2>&1)"; then
      report 5 ok "$(grep PROBE <<<"$out"); mixed key rings: $(grep PROBE <<<"$out2")"
    else
      report 5 FAILED "mixed key rings: $(tr '\n' ' ' <<<"$out2")"
    fi
    kill -TERM "${PID[3]}"; wait "${PID[3]}" || true
    start_replica 3
  else
    report 5 FAILED "$(tr '\n' ' ' <<<"$out")"
  fi
fi

# ---------------------------------------------------------------- 6
if wanted 6; then
  if out="$("${PROBE[@]}" roam --replica "$URL1" --replica "$URL2" --replica "$URL3" --calls "$CALLS" 2>&1)"; then
    report 6 ok "$(grep PROBE <<<"$out")"
  else
    report 6 FAILED "$(tr '\n' ' ' <<<"$out")"
  fi
fi

# ---------------------------------------------------------------- 7
if wanted 7; then
  "${PROBE[@]}" listen-ends --url "$URL1" --within 10 >"$work/listen-ends" 2>&1 &
  wl=$!
  "${PROBE[@]}" stateless --url "$LB" --seconds 10 >"$work/stateless" 2>&1 &
  ws=$!
  sleep 1.5
  { kill -9 "$REDIS_PID" && wait "$REDIS_PID"; } 2>/dev/null || true
  down_ok=1
  down="$("${PROBE[@]}" redis-down --replica "$URL1" --replica "$URL2" --replica "$URL3" --within 5 2>&1)" || down_ok=0
  lok=1
  wait "$wl" || lok=0
  sleep 2
  start_redis
  up_ok=1
  up="$("${PROBE[@]}" redis-up --replica "$URL1" --replica "$URL2" --replica "$URL3" --within 30 2>&1)" || up_ok=0
  sok=1
  wait "$ws" || sok=0
  text="Redis killed and restarted: $(grep -h PROBE "$work/stateless" | tr '\n' ' ')| $(tr '\n' ' ' <<<"$down")| $(tr '\n' ' ' <"$work/listen-ends")| $(tr '\n' ' ' <<<"$up")"
  if ((down_ok && lok && up_ok && sok)); then report 7 ok "$text"; else report 7 FAILED "$text"; fi
fi

# ---------------------------------------------------------------- 8
if wanted 8; then
  bad=""
  for crate in ferromcp-everything ferromcp-cli ferromcp-server; do
    if cargo tree -p "$crate" -e normal,build --prefix none 2>/dev/null | grep -qE '^redis v'; then bad+=" $crate"; fi
  done
  if [ -z "$bad" ]; then
    report 8 ok "default builds of ferromcp-everything, ferromcp-cli and ferromcp-server have no redis crate in their tree"
  else
    report 8 FAILED "the redis crate is in the default tree of:$bad"
  fi
fi

if ((failures)); then
  echo "scale-out: $failures check(s) FAILED (logs: rerun with --keep)" >&2
  exit 1
fi
echo "scale-out: all checks passed"
