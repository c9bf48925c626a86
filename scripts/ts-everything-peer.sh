#!/usr/bin/env bash
# Installs the pinned TypeScript SDK everything server (npm
# `@modelcontextprotocol/server-everything`, interop/server-everything/
# package-lock.json), the third-party stdio child behind `mcp bridge
# --expose` in crates/ferromcp-cli/tests/bridge_expose.rs
# (a_typescript_sdk_child_serves_both_eras_behind_expose).
#
#   bash scripts/ts-everything-peer.sh          # install unless already current
#   bash scripts/ts-everything-peer.sh --path   # print the install folder
#
# The folder is target/ts-everything-peer/ (MCP_TS_EVERYTHING_PEER_DIR
# overrides it; the test reads the same variable). A stamp holds the sha256
# of the lockfile and node's version: when both match, nothing is done.
# Installed without install scripts. Needs node and npm.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${MCP_TS_EVERYTHING_PEER_DIR:-$root/target/ts-everything-peer}"

if [ "${1:-}" = --path ]; then
  echo "$dir"
  exit 0
fi

# shellcheck source=lib/npm-peer.sh
. "$root/scripts/lib/npm-peer.sh"
npm_peer ts-everything-peer "$root/interop/server-everything" "$dir" "" \
  "$dir/node_modules/@modelcontextprotocol/server-everything/package.json"
