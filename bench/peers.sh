#!/usr/bin/env bash
# Installs the pinned third-party bridges for bench/bridge.sh and
# bench/expose.sh, never vendored:
#
#   npm/   supergateway 4.0.0, mcp-remote 0.15.1 and mcp-proxy 6.7.19
#          (npm, punkpeye; --ignore-scripts)
#   py/    mcp-proxy 0.13.0 (PyPI, sparfenyuk), in a venv
#   fastmcp/  fastmcp 4.2.3 (PyPI; its proxy, for bench/gateway.sh), in a venv
#
#   bash bench/peers.sh          # install what is missing
#   bash bench/peers.sh --path   # print the folder
#
# The folder is bench/target/bridge-peers/ (BENCH_PEERS_DIR overrides it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
base="${BENCH_PEERS_DIR:-$here/target/bridge-peers}"
SUPERGATEWAY=4.0.0
MCP_REMOTE=0.15.1
MCP_PROXY=0.13.0
MCP_PROXY_NPM=6.7.19
FASTMCP=4.2.3

if [ "${1:-}" = --path ]; then echo "$base"; exit 0; fi
mkdir -p "$base/npm"
stamp="$base/npm/.stamp" want="supergateway@$SUPERGATEWAY mcp-remote@$MCP_REMOTE mcp-proxy@$MCP_PROXY_NPM"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  command -v npm >/dev/null || { echo "peers.sh: npm is not on PATH" >&2; exit 2; }
  echo "peers.sh: installing $want into $base/npm" >&2
  (cd "$base/npm" && [ -f package.json ] || echo '{"private":true}' >"$base/npm/package.json")
  (cd "$base/npm" && npm install --silent --no-audit --no-fund --ignore-scripts $want >&2)
  echo "$want" >"$stamp"
fi

# venv DIR REQUIREMENT: a venv in $base/DIR holding REQUIREMENT.
venv() {
  local dir="$base/$1" want="$2"
  local py="$dir/bin/python" stamp="$dir/.stamp"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$py" -c '' 2>/dev/null; then
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
      { echo "peers.sh: $want needs python3 >= 3.10" >&2; exit 2; }
    echo "peers.sh: installing $want into $dir" >&2
    [ -e "$dir" ] && { [ -f "$dir/pyvenv.cfg" ] && rm -rf "$dir" || { echo "peers.sh: $dir is not a venv" >&2; exit 2; }; }
    python3 -m venv "$dir"
    "$py" -m pip install --quiet --disable-pip-version-check --no-input "$want" >&2
    echo "$want" >"$stamp"
  fi
}
venv py "mcp-proxy==$MCP_PROXY"
venv fastmcp "fastmcp==$FASTMCP"
