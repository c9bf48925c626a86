#!/usr/bin/env bash
# One command for the whole benchmark: installs what is missing (wrk, curl,
# taskset), builds our everything-server (root workspace) and the bench
# workspace (peers, stdio driver, runner), then runs bench-run.
#
#   bash bench/run.sh            full run: 3 interleaved rounds of 10 s (~15 min)
#   bash bench/run.sh --quick    smoke test: 1 round of 3 s
#   bash bench/run.sh --update   full run, then rewrite the table in RESULTS.md
#   bash bench/run.sh --only nginx   only the through-nginx scale-out scenario
#   bash bench/run.sh --no-nginx     skip it
#   any other bench-run option passes through (--only, --peers, --rounds, …)
#
# After bench-run, the through-nginx scenario (bench/nginx.sh: echo direct,
# and via nginx to 1 and 3 replicas, with and without the Redis backplane)
# runs too, unless --no-nginx or an --only list without `nginx`.
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

args=() nginx=1 quick=0 bench=1
while (($#)); do
  case "$1" in
    --update) args+=(--update "$here/RESULTS.md") ;;
    --no-nginx) nginx=0 ;;
    --quick) quick=1; args+=(--quick) ;;
    --only)
      list=",${2:-},"
      [[ "$list" == *",nginx,"* ]] || nginx=0
      list="${list//,nginx,/,}"; list="${list#,}"; list="${list%,}"
      if [ -n "$list" ]; then args+=(--only "$list"); else bench=0; fi
      shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
cd "$here"
if ((bench)); then
  "$here/target/release/bench-run" "${args[@]}"
fi
if ((nginx)); then
  if ((quick)); then bash "$here/nginx.sh" --quick; else bash "$here/nginx.sh"; fi
fi
