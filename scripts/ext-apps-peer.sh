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

command -v npm >/dev/null 2>&1 || { echo "ext-apps-peer: npm is not on PATH" >&2; exit 2; }
src="$root/interop/ext-apps"
stamp="$dir/.ferromcp-stamp"
schema="$dir/node_modules/@modelcontextprotocol/ext-apps/dist/src/generated/schema.json"
want="$( { cat "$src/package-lock.json"; node --version; } | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$schema" ]; then
  exit 0
fi
echo "ext-apps-peer: installing interop/ext-apps into $dir" >&2
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
(cd "$dir" && npm ci --ignore-scripts --omit=peer --no-audit --no-fund --loglevel=error >&2)
[ -f "$schema" ] || { echo "ext-apps-peer: $schema is missing after the install" >&2; exit 1; }
printf '%s\n' "$want" >"$stamp"
