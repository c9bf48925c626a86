#!/usr/bin/env bash
# Installs the pinned MCP Inspector (npm `@modelcontextprotocol/inspector`,
# interop/inspector/package-lock.json) whose `--cli` mode drives our skills
# server (`mcp serve skills`) and the MCP Apps example in
# crates/ferromcp-cli/tests/inspector.rs.
#
#   bash scripts/inspector-peer.sh          # install unless already current
#   bash scripts/inspector-peer.sh --path   # print the install folder
#
# The folder is target/inspector-peer/ (MCP_INSPECTOR_PEER_DIR overrides it;
# the test reads the same variable). A stamp holds the sha256 of the
# lockfile and node's version: when both match, nothing is done. Installed
# without install scripts. Needs node and npm.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${MCP_INSPECTOR_PEER_DIR:-$root/target/inspector-peer}"

if [ "${1:-}" = --path ]; then
  echo "$dir"
  exit 0
fi

# shellcheck source=lib/npm-peer.sh
. "$root/scripts/lib/npm-peer.sh"
npm_peer inspector-peer "$root/interop/inspector" "$dir" "" \
  "$dir/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js"
