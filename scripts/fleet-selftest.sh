#!/usr/bin/env bash
# Self-test of scripts/fleet.sh's wait_port (what scale-out.sh and
# bench/nginx.sh wait on at every replica start):
#   1. a process that exits before it listens fails the wait at once (well
#      within the bound) and the end of its log is printed;
#   2. a process that takes longer than the old 20 s bound to listen is
#      waited for (the bound is 60 s by default);
#   3. a process still running but never listening fails at the bound, with
#      its log.
# Takes about 25 s. Prints `fleet-selftest: ok` or the failed check; exit 1
# on failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=fleet.sh
source "$root/scripts/fleet.sh"
work="$(mktemp -d /tmp/fleet-selftest.XXXXXX)"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "fleet-selftest: FAILED: $*" >&2; exit 1; }

# 1. Exits at once: reported within 5 s (the bound is 60), with its log.
port="$(free_port)"
(echo "replica: cannot bind 127.0.0.1:$port: marker-1" >&2; exit 3) 2>"$work/dead.log" &
dead=$!
start=$SECONDS
if wait_port "$port" 60 "$dead" "$work/dead.log" 2>"$work/out1"; then fail "1: a dead process counted as listening"; fi
((SECONDS - start < 5)) || fail "1: took $((SECONDS - start)) s to notice the process had exited"
grep -q 'exited before it listened' "$work/out1" || fail "1: no exit message: $(cat "$work/out1")"
grep -q 'marker-1' "$work/out1" || fail "1: the log was not printed: $(cat "$work/out1")"

# 2. Listens after 21 s (longer than the old 20 s bound): waited for.
port="$(free_port)"
python3 -c 'import socket,sys,time; time.sleep(21); s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(60)' "$port" &
slow=$!
pids+=("$slow")
wait_port "$port" 60 "$slow" 2>"$work/out2" || fail "2: a slow start was not waited for: $(cat "$work/out2")"

# 3. Running but never listening: fails at the bound, with its log.
port="$(free_port)"
(echo "replica: still loading marker-3" >&2; exec sleep 30) 2>"$work/hung.log" &
hung=$!
pids+=("$hung")
if wait_port "$port" 2 "$hung" "$work/hung.log" 2>"$work/out3"; then fail "3: nothing listens, yet the wait succeeded"; fi
grep -q 'still running' "$work/out3" || fail "3: no timeout message: $(cat "$work/out3")"
grep -q 'marker-3' "$work/out3" || fail "3: the log was not printed: $(cat "$work/out3")"

echo "fleet-selftest: ok"
