#!/usr/bin/env bash
# Installs the pinned third-party MCP servers the gateway tests aggregate
# (crates/ferromcp-cli/tests/gateway_peers.rs):
#
#   npm/   interop/gateway-peers/package-lock.json       npm @modelcontextprotocol/server-memory,
#                                                        server-filesystem and sdk (the TS client)
#   time/  interop/gateway-peers/requirements-time.txt  PyPI mcp-server-time (a venv)
#
#   bash scripts/gateway-peers.sh          # install what is not already current
#   bash scripts/gateway-peers.sh --path   # print the install folder
#
# The folder is target/gateway-peers/ (MCP_GATEWAY_PEERS_DIR overrides it; the
# test reads the same variable). A stamp in each part holds the sha256 of its
# pin file and of node's or python's version: when both match, nothing is
# installed. npm packages are installed without install scripts. Needs node,
# npm and python3 >= 3.10 with the venv module. The test's clients are the
# Python SDK venv of scripts/python-peer.sh and the TypeScript SDK above.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
base="${MCP_GATEWAY_PEERS_DIR:-$root/target/gateway-peers}"
src="$root/interop/gateway-peers"

if [ "${1:-}" = --path ]; then
  echo "$base"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { echo "gateway-peers: python3 is not on PATH" >&2; exit 2; }

# npm @modelcontextprotocol/server-memory and server-filesystem, and the
# TypeScript SDK the test's second client is written with
# shellcheck source=lib/npm-peer.sh
. "$root/scripts/lib/npm-peer.sh"
dir="$base/npm"
mods="$dir/node_modules/@modelcontextprotocol"
npm_peer gateway-peers "$src" "$dir" "" \
  "$mods/server-memory/dist/index.js" \
  "$mods/server-filesystem/dist/index.js" \
  "$mods/sdk/dist/esm/client/streamableHttp.js"

# PyPI mcp-server-time
dir="$base/time"
req="$src/requirements-time.txt"
want="$( { cat "$req"; python3 --version; } | sha256sum | cut -d' ' -f1)"
if ! { [ -f "$dir/.ferromcp-stamp" ] && [ "$(cat "$dir/.ferromcp-stamp")" = "$want" ] &&
       "$dir/bin/python" -c 'import mcp_server_time' 2>/dev/null; }; then
  # Only ever remove a venv: a mistyped MCP_GATEWAY_PEERS_DIR must not cost a folder.
  if [ -e "$dir" ]; then
    [ -f "$dir/pyvenv.cfg" ] ||
      { echo "gateway-peers: $dir exists and is not a venv; not touching it" >&2; exit 2; }
    rm -rf "$dir"
  fi
  echo "gateway-peers: installing $req into $dir" >&2
  mkdir -p "$base"
  python3 -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$req" >&2
  "$dir/bin/python" -c 'import mcp_server_time' ||
    { echo "gateway-peers: mcp-server-time installed in $dir does not import" >&2; exit 1; }
  printf '%s\n' "$want" >"$dir/.ferromcp-stamp"
fi
