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

command -v npm >/dev/null 2>&1 || { echo "inspector-peer: npm is not on PATH" >&2; exit 2; }
src="$root/interop/inspector"
stamp="$dir/.ferromcp-stamp"
cli="$dir/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js"
want="$( { cat "$src/package-lock.json"; node --version; } | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$cli" ]; then
  exit 0
fi
echo "inspector-peer: installing interop/inspector into $dir" >&2
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
[ -f "$cli" ] || { echo "inspector-peer: $cli is missing after the install" >&2; exit 1; }
printf '%s\n' "$want" >"$stamp"
