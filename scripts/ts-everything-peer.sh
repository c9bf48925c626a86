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

command -v npm >/dev/null 2>&1 || { echo "ts-everything-peer: npm is not on PATH" >&2; exit 2; }
src="$root/interop/server-everything"
stamp="$dir/.ferromcp-stamp"
entry="$dir/node_modules/@modelcontextprotocol/server-everything/package.json"
want="$( { cat "$src/package-lock.json"; node --version; } | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$entry" ]; then
  exit 0
fi
echo "ts-everything-peer: installing interop/server-everything into $dir" >&2
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
[ -f "$entry" ] || { echo "ts-everything-peer: $entry is missing after the install" >&2; exit 1; }
printf '%s\n' "$want" >"$stamp"
