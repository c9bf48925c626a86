#!/usr/bin/env bash
# Run the official MCP conformance client scenarios against a client command.
#
#   conformance/client.sh --client-cmd 'path/to/client --flag' --requirements 2026-07-28
#
# Options:
#   --client-cmd CMD     client command line; the harness appends the mock
#                        server URL as its last argument and sets
#                        MCP_CONFORMANCE_SCENARIO / _PROTOCOL_VERSION / _CONTEXT
#   --requirements REV   requirement set, e.g. 2026-07-28 or 2025-11-25
#   --scenario S         run only S (repeatable); S need not be scored
#   --include-auth       also run the scored auth/* scenarios
#   --auth-only          run only the scored auth/* scenarios
#   --extensions         also run the set's not-scored client scenarios
#                        (extension + added-after-release), with the same
#                        auth/non-auth selection as above
#   --client-timeout S   seconds before the client's process group is killed
#                        (default 30; the harness gets S+10)
#   --verbose            stream the harness output too
#
# Default: the scored scenarios whose name does not start with auth/.
# Scenarios run one at a time; see README.md for scoring and results layout.
set -euo pipefail

# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() { sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }

CMD="" REV="" AUTH=no EXT=0 CLIENT_TIMEOUT=30
SCENARIOS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --client-cmd) [ $# -ge 2 ] || usage; CMD="$2"; shift 2 ;;
        --requirements) [ $# -ge 2 ] || usage; REV="$2"; shift 2 ;;
        --scenario) [ $# -ge 2 ] || usage; SCENARIOS+=("$2"); shift 2 ;;
        --include-auth) [ "$AUTH" != only ] || conf_die "--include-auth and --auth-only exclude each other"; AUTH=also; shift ;;
        --auth-only) [ "$AUTH" != also ] || conf_die "--include-auth and --auth-only exclude each other"; AUTH=only; shift ;;
        --extensions) EXT=1; shift ;;
        --client-timeout) [ $# -ge 2 ] || usage; CLIENT_TIMEOUT="$2"; shift 2 ;;
        --verbose) CONF_VERBOSE=1; shift ;;
        -h|--help) usage ;;
        *) echo "unknown argument: $1" >&2; usage ;;
    esac
done
[ -n "$CMD" ] || { echo "--client-cmd is required" >&2; usage; }
[ -n "$REV" ] || { echo "--requirements is required" >&2; usage; }
conf_check_rev "$REV"
[[ "$CLIENT_TIMEOUT" =~ ^[0-9]+$ ]] && [ "$CLIENT_TIMEOUT" -gt 0 ] || conf_die "--client-timeout wants whole seconds"
case "$CONF_DIR" in
    *"'"*) conf_die "the checkout path must not contain a single quote: $CONF_DIR" ;;
esac

conf_ensure_installed
conf_need setsid timeout awk

SCORED="$(conf_list "$REV" client scored)"
[ -n "$SCORED" ] || conf_die "the harness lists no client scenarios for $REV"
NOT_SCORED="$(conf_list "$REV" client not-scored)"

# select_auth LIST -> the names matching the --include-auth/--auth-only choice
select_auth() {
    local s
    while IFS= read -r s; do
        [ -n "$s" ] || continue
        if [[ "$s" == auth/* ]]; then
            if [ "$AUTH" != no ]; then printf '%s\n' "$s"; fi
        else
            if [ "$AUTH" != only ]; then printf '%s\n' "$s"; fi
        fi
    done <<<"$1"
}

HARNESS_TIMEOUT_MS=$(( (CLIENT_TIMEOUT + 10) * 1000 ))
# The harness splits --command on spaces, appends the URL and runs it through
# `sh -c`; the wrapper puts the client in its own process group.
WRAPPED="'$CONF_DIR/run-in-pgroup.sh' $CLIENT_TIMEOUT $CMD"

run_client_scenario() {
    # Same as `client --requirements REV` does per scenario: REV's wire and
    # forced applicability, but only this one scenario (no parallel clients).
    conf_harness client --command "$WRAPPED" --scenario "$1" --spec-version "$REV" --force \
        --timeout "$HARNESS_TIMEOUT_MS" -o "$2"
}

conf_begin client "$REV"
HAD_NS=no
if [ "${#SCENARIOS[@]}" -gt 0 ]; then
    for s in "${SCENARIOS[@]}"; do
        if conf_in_list "$s" "$SCORED"; then
            conf_run_scenario client "$REV" yes "$s" run_client_scenario
        else
            HAD_NS=yes
            conf_run_scenario client "$REV" no "$s" run_client_scenario
        fi
    done
else
    SELECTED="$(select_auth "$SCORED")"
    [ -n "$SELECTED" ] || conf_die "no client scenarios selected for $REV"
    while IFS= read -r s; do
        conf_run_scenario client "$REV" yes "$s" run_client_scenario
    done <<<"$SELECTED"
    if [ "$EXT" = 1 ]; then
        EXTRA="$(select_auth "$NOT_SCORED")"
        if [ -n "$EXTRA" ]; then
            HAD_NS=yes
            echo "-- not scored (extension / added-after-release) --"
            while IFS= read -r s; do
                conf_run_scenario client "$REV" no "$s" run_client_scenario
            done <<<"$EXTRA"
        fi
    fi
fi
conf_finish client "$REV" "$HAD_NS"
