#!/usr/bin/env bash
# One command for the whole benchmark: installs what is missing (wrk, curl,
# taskset), builds our everything-server (root workspace) and the bench
# workspace (peers, stdio driver, runner), then runs bench-run.
#
#   bash bench/run.sh            full run: 3 interleaved rounds of 10 s (~15 min)
#   bash bench/run.sh --quick    smoke test: 1 round of 3 s
#   bash bench/run.sh --update   full run, then rewrite the table in RESULTS.md
#   any other bench-run option passes through (--only, --peers, --rounds, …)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v curl >/dev/null || need+=(curl)
command -v taskset >/dev/null || need+=(util-linux)
if ((${#need[@]})); then
  echo "installing ${need[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ "$(nproc)" -lt 2 ]; then
  echo "bench/run.sh: needs 2 cores (server on core 0, load generator on core 1)" >&2
  exit 1
fi

echo "building everything-server (root workspace)…" >&2
(cd "$root" && cargo build --release --quiet --bin everything-server)
echo "building the bench workspace…" >&2
(cd "$here" && cargo build --release --quiet)

args=()
for a in "$@"; do
  if [ "$a" = "--update" ]; then args+=(--update "$here/RESULTS.md"); else args+=("$a"); fi
done
cd "$here"
exec "$here/target/release/bench-run" "${args[@]}"
