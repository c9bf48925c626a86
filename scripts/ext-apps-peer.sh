#!/usr/bin/env bash
# Installs the pinned MCP Apps TypeScript package (npm
# `@modelcontextprotocol/ext-apps`, interop/ext-apps/package-lock.json) for
# the schema check of our `_meta.ui` metadata against the package's own JSON
# Schema (crates/ferromcp-examples/tests/examples_run.rs,
# the_apps_example_metadata_matches_the_ext_apps_schema).
#
#   bash scripts/ext-apps-peer.sh          # install unless already current
#   bash scripts/ext-apps-peer.sh --path   # print the install folder
#
# The folder is target/ext-apps-peer/ (MCP_EXT_APPS_PEER_DIR overrides it;
# the test reads the same variable). A stamp holds the sha256 of the
# lockfile and node's version: when both match, nothing is done. Only the
# package and its dependencies are installed (not its peers: React, the
# TypeScript SDK), without install scripts. Needs node and npm.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${MCP_EXT_APPS_PEER_DIR:-$root/target/ext-apps-peer}"

if [ "${1:-}" = --path ]; then
  echo "$dir"
  exit 0
fi

# shellcheck source=lib/npm-peer.sh
. "$root/scripts/lib/npm-peer.sh"
npm_peer ext-apps-peer "$root/interop/ext-apps" "$dir" "--omit=peer" \
  "$dir/node_modules/@modelcontextprotocol/ext-apps/dist/src/generated/schema.json"
