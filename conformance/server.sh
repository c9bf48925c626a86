#!/usr/bin/env bash
# Run the official MCP conformance server scenarios against a running server.
#
#   conformance/server.sh --url http://127.0.0.1:PORT/mcp --requirements 2026-07-28
#
# Options:
#   --url URL            server endpoint (use 127.0.0.1/localhost: the
#                        dns-rebinding scenario needs a loopback URL)
#   --requirements REV   requirement set, e.g. 2026-07-28 or 2025-11-25
#   --scenario S         run only S (repeatable); S need not be scored
#   --pending            also run the set's not-scored "pending" server
#                        scenarios (2026-07-28: json-schema-2020-12,
#                        http-header-validation, http-custom-header-server-validation)
#   --not-scored         also run every not-scored server scenario of the
#                        set: pending, extension (2026-07-28: tasks-*) and
#                        added-after-release (2025-11-25: server-session-lifecycle)
#   --timeout-ms MS      per-scenario harness timeout (default 30000)
#   --verbose            stream the harness output too
#
# Scenarios run one at a time; see README.md for scoring and results layout.
set -euo pipefail

# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() { sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }

URL="" REV="" PENDING=0 TIMEOUT_MS=30000
SCENARIOS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --url) [ $# -ge 2 ] || usage; URL="$2"; shift 2 ;;
        --requirements) [ $# -ge 2 ] || usage; REV="$2"; shift 2 ;;
        --scenario) [ $# -ge 2 ] || usage; SCENARIOS+=("$2"); shift 2 ;;
        --pending) PENDING=1; shift ;;
        --not-scored) PENDING=2; shift ;;
        --timeout-ms) [ $# -ge 2 ] || usage; TIMEOUT_MS="$2"; shift 2 ;;
        --verbose) CONF_VERBOSE=1; shift ;;
        -h|--help) usage ;;
        *) echo "unknown argument: $1" >&2; usage ;;
    esac
done
[ -n "$URL" ] || { echo "--url is required" >&2; usage; }
[ -n "$REV" ] || { echo "--requirements is required" >&2; usage; }
conf_check_rev "$REV"
[[ "$TIMEOUT_MS" =~ ^[0-9]+$ ]] || conf_die "--timeout-ms wants milliseconds"

conf_ensure_installed

SCORED="$(conf_list "$REV" server scored)"
[ -n "$SCORED" ] || conf_die "the harness lists no server scenarios for $REV"
if [ "$PENDING" = 2 ]; then
    PENDING_LIST="$(conf_list "$REV" server not-scored)"
else
    PENDING_LIST="$(conf_list "$REV" server pending)"
fi

run_server_scenario() {
    # Same as `server --requirements REV` does per scenario: REV's wire, forced
    # applicability, but only this one scenario.
    conf_harness server --url "$URL" --scenario "$1" --spec-version "$REV" --force \
        --timeout "$TIMEOUT_MS" -o "$2"
}

conf_begin server "$REV"
HAD_NS=no
if [ "${#SCENARIOS[@]}" -gt 0 ]; then
    for s in "${SCENARIOS[@]}"; do
        if conf_in_list "$s" "$SCORED"; then
            conf_run_scenario server "$REV" yes "$s" run_server_scenario
        else
            HAD_NS=yes
            conf_run_scenario server "$REV" no "$s" run_server_scenario
        fi
    done
else
    while IFS= read -r s; do
        conf_run_scenario server "$REV" yes "$s" run_server_scenario
    done <<<"$SCORED"
    if [ "$PENDING" != 0 ] && [ -n "$PENDING_LIST" ]; then
        HAD_NS=yes
        if [ "$PENDING" = 2 ]; then echo "-- not scored (pending, extension, added after release) --"; else echo "-- not scored (pending) --"; fi
        while IFS= read -r s; do
            conf_run_scenario server "$REV" no "$s" run_server_scenario
        done <<<"$PENDING_LIST"
    fi
fi
conf_finish server "$REV" "$HAD_NS"
