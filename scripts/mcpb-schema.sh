#!/usr/bin/env bash
# Fetches the MCPB manifest JSON Schemas published in the npm package
# @anthropic-ai/mcpb (pinned below) for the `mcp pack` tests
# (crates/ferromcp-cli/tests/dist.rs), which validate the manifests `mcp
# pack` writes against them. Only the tarball is downloaded (`npm pack`, no
# install, no scripts) and only its schemas/, package.json and LICENSE are
# kept; nothing of it is committed to this repository.
#
#   bash scripts/mcpb-schema.sh          # fetch unless already current
#   bash scripts/mcpb-schema.sh --path   # print the folder
#
# The files live in target/mcpb-schema/ (MCP_MCPB_SCHEMA_DIR overrides it;
# the tests read the same variable).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${MCP_MCPB_SCHEMA_DIR:-$root/target/mcpb-schema}"
pkg="@anthropic-ai/mcpb@2.1.2"
# The tarball's SHA-1 as npm publishes it (`npm view $pkg dist.shasum`).
shasum_want="cf02801929734b8810961f22e2eb72758c27d527"

if [ "${1:-}" = --path ]; then
  echo "$dir"
  exit 0
fi
stamp="$dir/.ferromcp-stamp"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pkg $shasum_want" ] &&
  [ -f "$dir/package/schemas/mcpb-manifest-v0.3.schema.json" ]; then
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "mcpb-schema: npm is not on PATH" >&2; exit 2; }
if [ -e "$dir" ]; then
  [ -f "$stamp" ] || [ -z "$(ls -A "$dir")" ] ||
    { echo "mcpb-schema: $dir exists and is not ours; not touching it" >&2; exit 2; }
  rm -rf "$dir"
fi
mkdir -p "$dir"
echo "mcpb-schema: fetching $pkg into $dir" >&2
tarball="$(cd "$dir" && npm pack --silent "$pkg")"
have="$(sha1sum "$dir/$tarball" | cut -d' ' -f1)"
[ "$have" = "$shasum_want" ] ||
  { echo "mcpb-schema: $tarball has SHA-1 $have, expected $shasum_want" >&2; exit 1; }
tar -xzf "$dir/$tarball" -C "$dir" package/schemas package/package.json package/LICENSE
rm -f "$dir/$tarball"
printf '%s\n' "$pkg $shasum_want" >"$stamp"
