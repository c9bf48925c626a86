#!/usr/bin/env bash
# Installs the pinned Python SDK peer (PyPI `mcp`, interop/python/requirements.txt)
# into a venv for the bridge interop tests (crates/ferromcp-cli/tests/bridge_python.rs).
#
#   bash scripts/python-peer.sh          # install unless already current
#   bash scripts/python-peer.sh --path   # print the venv's python and exit
#
# The venv lives in target/python-peer/ (MCP_PYTHON_PEER_DIR overrides it;
# the tests read the same variable). A stamp holds the sha256 of the
# requirements file and the interpreter's version: when both match, the
# script only checks that the venv's interpreter runs and returns.
# Needs python3 >= 3.10 with the venv module (Debian: python3-venv).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
req="$root/interop/python/requirements.txt"
dir="${MCP_PYTHON_PEER_DIR:-$root/target/python-peer}"
py="$dir/bin/python"
stamp="$dir/.ferromcp-stamp"

if [ "${1:-}" = --path ]; then
  echo "$py"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { echo "python-peer: python3 is not on PATH" >&2; exit 2; }
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  { echo "python-peer: the mcp SDK needs python3 >= 3.10, found $(python3 --version)" >&2; exit 2; }

want="$( { cat "$req"; python3 --version; } | sha256sum | cut -d' ' -f1)"
have=""
[ -f "$stamp" ] && have="$(cat "$stamp")"
if [ "$want" = "$have" ] && "$py" -c '' 2>/dev/null; then
  exit 0
fi

# Only ever remove a venv: a mistyped MCP_PYTHON_PEER_DIR must not cost a folder.
if [ -e "$dir" ]; then
  [ -f "$dir/pyvenv.cfg" ] ||
    { echo "python-peer: $dir exists and is not a venv; not touching it" >&2; exit 2; }
  rm -rf "$dir"
fi
echo "python-peer: installing the pinned Python SDK into $dir" >&2
python3 -m venv "$dir"
"$py" -m pip install --quiet --disable-pip-version-check --no-input -r "$req" >&2
"$py" -c 'import mcp, mcp.client.stdio, mcp.server.mcpserver' ||
  { echo "python-peer: the installed SDK does not import" >&2; exit 1; }
printf '%s\n' "$want" >"$stamp"
