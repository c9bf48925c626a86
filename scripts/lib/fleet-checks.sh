# shellcheck shell=bash
# The load checks scripts/scale-out.sh and scripts/gateway-scale-out.sh
# share: the same fleet shape (three replicas behind nginx at $LB), the
# same verdicts. Source it after defining, in the caller:
#
#   LB, LOAD, work          nginx's URL, the kill check's load in seconds,
#                           the work folder (nginx's access.log, error.log
#                           and nginx.pid in it)
#   PID[i], PORT[i]         the replicas (i = 1..3)
#   start_replica i         starts replica i again
#   report n ok|FAILED text prints one verdict
#
# It defines:
#
#   wrk_run SECS CONNS [TOOL [ARGS]]
#                           wrk through nginx (a 2026-07-28 tools/call of
#                           TOOL, default echo, with the JSON ARGS); prints
#                           the WRK_RESULT fields
#   field NAME RESULT, failed_of RESULT
#   check_kill N ECHO OTHER [ECHO_ARGS]
#                           kill -9 of replica 2 mid-load: zero failed ECHO
#                           calls (nginx retries them), failures of OTHER at
#                           most the 8 in flight and none timing out, the
#                           restarted replica serving again
#   check_rolling N ECHO SLOW SECS [ECHO_ARGS]
#                           SIGTERM of each replica in turn under load of
#                           ECHO (8 connections) and SLOW (4), SECS seconds:
#                           zero failed requests, no connection closed under
#                           a request nginx had sent, every exit 0

wrk_run() { # seconds connections [tool [args]]
  env MCP_MODE=modern MCP_TOOL="${3:-echo}" ${4:+MCP_ARGS="$4"} \
    wrk -t1 -c"$2" -d"$1"s --timeout 10s -s "$root/bench/wrk/mcp.lua" "$LB" 2>&1 |
    sed -n 's/^WRK_RESULT //p'
}
field() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<<"$2"; }
failed_of() { # wrk result -> failed requests
  echo $(($(field err_connect "$1") + $(field err_read "$1") + $(field err_write "$1") + $(field err_status "$1") + $(field err_timeout "$1")))
}

check_kill() { # n echo other [echo-args]
  local n="$1" echo_tool="$2" other="$3" args="${4:-}" w1 w2 e o fe fo after text restarted_at
  : >"$work/access.log"; kill -USR1 "$(cat "$work/nginx.pid")"
  local t_kill=$((LOAD / 3)) t_back=$((2 * LOAD / 3))
  wrk_run "$LOAD" 8 "$echo_tool" "$args" >"$work/kill-echo" &
  w1=$!
  wrk_run "$LOAD" 8 "$other" >"$work/kill-other" &
  w2=$!
  sleep "$t_kill"
  { kill -9 "${PID[2]}" && wait "${PID[2]}"; } 2>/dev/null || true
  sleep $((t_back - t_kill))
  restarted_at="$(date +%s.%N)"
  start_replica 2
  wait "$w1" "$w2"
  e="$(cat "$work/kill-echo")" o="$(cat "$work/kill-other")"
  fe="$(failed_of "$e")" fo="$(failed_of "$o")"
  after="$(awk -v t="$restarted_at" -v p=":${PORT[2]}" '$1 > t+1 && index($3, p) {n++} END {print n+0}' "$work/access.log")"
  text="kill -9 mid-load (${LOAD}s): $echo_tool $(field requests "$e") requests, ${fe} failed; $other $(field requests "$o") requests, ${fo} failed (timeouts $(field err_timeout "$o")); restarted replica served ${after} after restart"
  if ((fe == 0 && fo <= 8 && $(field err_timeout "$o") == 0 && after > 0)); then
    report "$n" ok "$text"
  else
    report "$n" FAILED "$text (wrk: $e | $o)"
  fi
}

check_rolling() { # n echo slow seconds [echo-args]
  local n="$1" echo_tool="$2" slow="$3" secs="$4" args="${5:-}" w1 w2 e o fe fo cut text t0 code i errors_before
  errors_before="$(wc -l <"$work/error.log")"
  wrk_run "$secs" 8 "$echo_tool" "$args" >"$work/roll-echo" &
  w1=$!
  # A slow tool nginx may not retry: requests are in flight at every
  # SIGTERM, and only a drain that finishes them (and refuses new
  # connections) loses none.
  wrk_run "$secs" 4 "$slow" >"$work/roll-slow" &
  w2=$!
  sleep 2
  local codes=()
  for i in 1 2 3; do
    t0=$SECONDS
    kill -TERM "${PID[$i]}"
    code=0
    wait "${PID[$i]}" || code=$?
    codes+=("r$i:exit=$code:$((SECONDS - t0))s")
    start_replica "$i"
    # Longer than the recipe's fail_timeout (2 s), as a rolling deploy
    # waits for a replica to be healthy before taking down the next.
    sleep 3
  done
  wait "$w1" "$w2"
  e="$(cat "$work/roll-echo")" o="$(cat "$work/roll-slow")"
  fe="$(failed_of "$e")" fo="$(failed_of "$o")"
  # A connection closed under a request nginx had sent on it: a 502 for a
  # tool nginx may not retry, a silent retry for echo. Both count: the
  # drain's grace keeps idle connections open.
  cut="$(tail -n +"$((errors_before + 1))" "$work/error.log" | grep -c 'prematurely closed\|reset by peer' || true)"
  text="rolling SIGTERM: $echo_tool $(field requests "$e") requests, ${fe} failed; $slow $(field requests "$o") requests, ${fo} failed; connections closed under a request: ${cut}; ${codes[*]}"
  if ((fe == 0 && fo == 0 && cut == 0)) && [[ "${codes[*]}" != *exit=[1-9]* ]]; then
    report "$n" ok "$text"
  else
    report "$n" FAILED "$text (wrk: $e | $o)"
  fi
}
