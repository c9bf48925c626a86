#!/usr/bin/env bash
# Installs the pinned Python SDK peers (PyPI `mcp`) for the bridge interop
# tests (crates/ferromcp-cli/tests/bridge_python.rs), one venv each:
#
#   v2/  interop/python/requirements-v2.txt  mcp 2.3.0: both eras
#   v1/  interop/python/requirements-v1.txt  mcp 1.30.0: handshake era only
#
#   bash scripts/python-peer.sh          # install what is not already current
#   bash scripts/python-peer.sh --path   # print the folder of the venvs
#
# The venvs live in target/python-peer/ (MCP_PYTHON_PEER_DIR overrides it;
# the tests read the same variable). A stamp in each holds the sha256 of its
# requirements file and the interpreter's version: when both match, the
# script only checks that the venv's interpreter runs (well under a second).
# Needs python3 >= 3.10 with the venv module (Debian: python3-venv).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
base="${MCP_PYTHON_PEER_DIR:-$root/target/python-peer}"

if [ "${1:-}" = --path ]; then
  echo "$base"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { echo "python-peer: python3 is not on PATH" >&2; exit 2; }
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  { echo "python-peer: the mcp SDK needs python3 >= 3.10, found $(python3 --version)" >&2; exit 2; }

# install NAME: the venv $base/NAME from interop/python/requirements-NAME.txt.
install() {
  local dir="$base/$1" req="$root/interop/python/requirements-$1.txt"
  local py="$dir/bin/python" stamp="$dir/.ferromcp-stamp" want have=""
  want="$( { cat "$req"; python3 --version; } | sha256sum | cut -d' ' -f1)"
  [ -f "$stamp" ] && have="$(cat "$stamp")"
  if [ "$want" = "$have" ] && "$py" -c '' 2>/dev/null; then
    return 0
  fi
  # Only ever remove a venv: a mistyped MCP_PYTHON_PEER_DIR must not cost a folder.
  if [ -e "$dir" ]; then
    [ -f "$dir/pyvenv.cfg" ] ||
      { echo "python-peer: $dir exists and is not a venv; not touching it" >&2; return 2; }
    rm -rf "$dir"
  fi
  echo "python-peer: installing $req into $dir" >&2
  mkdir -p "$base"
  python3 -m venv "$dir"
  "$py" -m pip install --quiet --disable-pip-version-check --no-input -r "$req" >&2
  "$py" -c 'import mcp, mcp.client.stdio' ||
    { echo "python-peer: the SDK installed in $dir does not import" >&2; return 1; }
  printf '%s\n' "$want" >"$stamp"
}

install v2
install v1
