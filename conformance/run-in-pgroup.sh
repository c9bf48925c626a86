#!/usr/bin/env bash
# run-in-pgroup.sh SECONDS COMMAND [ARGS...]
#
# Run COMMAND in a new session / process group and make sure nothing of it
# survives: after SECONDS the whole group gets SIGTERM, then SIGKILL 3 s later
# (`timeout --kill-after`); when COMMAND exits on its own, stragglers left in
# its group (background children still holding the harness's stdout/stderr
# pipes) are killed too; if this wrapper is itself terminated, or orphaned
# because the harness's --timeout killed the `sh -c` it started, it takes the
# group down with it.
#
# client.sh passes it to the harness as the client command; the harness
# appends the mock server URL as the last argument, which reaches COMMAND.
# Exit status: COMMAND's, or 124 on timeout (137 if it had to be SIGKILLed).
set -euo pipefail

if [ $# -lt 2 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
    echo "usage: run-in-pgroup.sh SECONDS COMMAND [ARGS...]" >&2
    exit 2
fi
secs="$1"
shift

# A background job of a non-interactive shell is not a process-group leader,
# so setsid does not fork: $! is the new session's (and group's) leader.
setsid timeout --kill-after=3 "$secs" "$@" &
pgid=$!

kill_group() {
    kill -TERM -- "-$pgid" 2>/dev/null || true
    sleep 0.5
    kill -KILL -- "-$pgid" 2>/dev/null || true
}
trap 'kill_group; exit 143' TERM INT HUP

# Watchdog: the harness's own timeout kills only its `sh -c`; when the shell
# does not exec us, that leaves this wrapper orphaned (reparented) while the
# client keeps the harness's pipes open. Notice the reparenting and terminate
# (our TERM trap then takes the group down). Its stdio is /dev/null so it
# never holds the harness's pipes itself.
self=$$
parent=$PPID
(
    while [ "$(awk '{print $4}' "/proc/$self/stat" 2>/dev/null)" = "$parent" ]; do
        sleep 0.5
    done
    kill -TERM "$self" 2>/dev/null || true
) </dev/null >/dev/null 2>&1 &
watchdog=$!

rc=0
wait "$pgid" || rc=$?
kill "$watchdog" 2>/dev/null || true
# COMMAND is gone; make sure its group is too.
kill -KILL -- "-$pgid" 2>/dev/null || true
exit "$rc"
