#!/usr/bin/env bash
# Runs the official conformance suites (pinned in conformance/) against our
# release binaries: the server suite at both requirement sets plus every
# not-scored server scenario the harness lists for them (pending, extension
# such as the tasks-* scenarios, added-after-release), and (once everything-client exists) the
# client suite at both requirement sets, auth/* scenarios included. Scenarios that may fail are listed, with a reason, in
# conformance/expected-failures.txt.
#
#   bash scripts/conformance.sh            # everything
#   bash scripts/conformance.sh server     # server suites only
#   bash scripts/conformance.sh client     # client suites (incl. the not-scored
#                                          # auth extension scenarios) only
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"

cargo build --release --bin everything-server
[ -f crates/ferromcp-everything/src/bin/everything-client.rs ] && cargo build --release --bin everything-client
# Where cargo put them: CARGO_TARGET_DIR (or a config's build.target-dir)
# moves the release folder away from target/.
release="$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/release"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

status=0
if [ "$what" = all ] || [ "$what" = server ]; then
  port="$(free_port)"
  "$release/everything-server" --http "127.0.0.1:$port" 2>conformance-server.log &
  pid=$!
  trap 'kill "$pid" 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then break; fi
    sleep 0.1
  done
  for rev in 2026-07-28 2025-11-25; do
    bash conformance/server.sh --url "http://127.0.0.1:$port/mcp" --requirements "$rev" --not-scored || status=1
  done
  # A real TypeScript SDK client (the harness's own @modelcontextprotocol/sdk)
  # against the same server: handshake-era JSON-RPC errors reach the
  # application as McpError and the session survives them.
  echo "== TypeScript SDK client interop"
  # shellcheck source=../conformance/lib.sh
  (source conformance/lib.sh && conf_ensure_installed &&
    "$CONF_NODE_BIN/node" conformance/ts-client-interop.mjs "http://127.0.0.1:$port/mcp") || status=1
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  trap - EXIT
fi
if { [ "$what" = all ] || [ "$what" = client ]; } && [ -x "$release/everything-client" ]; then
  for rev in 2026-07-28 2025-11-25; do
    # Scored scenarios including auth/* (the OAuth client flow, ferromcp-auth
    # feature `client`); the not-scored extension scenarios run below.
    bash conformance/client.sh --client-cmd "$release/everything-client" --requirements "$rev" --include-auth || status=1
  done
fi
# Every not-scored client scenario of the pinned harness's own list, for both
# revisions: the authorization extensions (client credentials,
# enterprise-managed authorization, workload identity federation, DPoP) and
# json-schema-2020-12-preservation (SEP-1613/SEP-2106).
if { [ "$what" = all ] || [ "$what" = client ]; } && [ -x "$release/everything-client" ]; then
  for rev in 2026-07-28 2025-11-25; do
    mapfile -t not_scored < <(
      # shellcheck source=../conformance/lib.sh
      source conformance/lib.sh && conf_ensure_installed && conf_list "$rev" client not-scored
    )
    if [ "${#not_scored[@]}" -eq 0 ]; then
      echo "conformance: no not-scored client scenarios listed for $rev" >&2
      status=1
      continue
    fi
    args=()
    for s in "${not_scored[@]}"; do args+=(--scenario "$s"); done
    bash conformance/client.sh --client-cmd "$release/everything-client" --requirements "$rev" "${args[@]}" || status=1
  done
fi
exit "$status"
