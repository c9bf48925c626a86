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

command -v npm >/dev/null 2>&1 || { echo "ext-apps-servers-peer: npm is not on PATH" >&2; exit 2; }
src="$root/interop/ext-apps-servers"
stamp="$dir/.ferromcp-stamp"
mods="$dir/node_modules/@modelcontextprotocol"
entries=("$mods/server-basic-vanillajs/dist/index.js" "$mods/server-map/dist/index.js")
want="$( { cat "$src/package-lock.json"; node --version; } | sha256sum | cut -d' ' -f1)"
present() {
  local f
  for f in "${entries[@]}"; do [ -f "$f" ] || return 1; done
}
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && present; then
  exit 0
fi
echo "ext-apps-servers-peer: installing interop/ext-apps-servers into $dir" >&2
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
present || { echo "ext-apps-servers-peer: an example server is missing after the install" >&2; exit 1; }
printf '%s\n' "$want" >"$stamp"
