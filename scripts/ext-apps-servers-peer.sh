#!/usr/bin/env bash
# Installs two pinned example servers of the MCP Apps package (npm
# `@modelcontextprotocol/server-basic-vanillajs` and `server-map`, both from
# the modelcontextprotocol/ext-apps repository; interop/ext-apps-servers/
# package-lock.json) that our client and the `mcp` CLI read in
# crates/ferromcp-cli/tests/ext_apps_servers.rs.
#
#   bash scripts/ext-apps-servers-peer.sh          # install unless current
#   bash scripts/ext-apps-servers-peer.sh --path   # print the install folder
#
# The folder is target/ext-apps-servers-peer/ (MCP_EXT_APPS_SERVERS_PEER_DIR
# overrides it; the test reads the same variable). A stamp holds the sha256
# of the lockfile and node's version: when both match, nothing is done.
# Installed without install scripts. Needs node and npm.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${MCP_EXT_APPS_SERVERS_PEER_DIR:-$root/target/ext-apps-servers-peer}"

if [ "${1:-}" = --path ]; then
  echo "$dir"
  exit 0
fi

# shellcheck source=lib/npm-peer.sh
. "$root/scripts/lib/npm-peer.sh"
npm_peer ext-apps-servers-peer "$root/interop/ext-apps-servers" "$dir" "" \
  "$dir/node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js" \
  "$dir/node_modules/@modelcontextprotocol/server-map/dist/index.js"
