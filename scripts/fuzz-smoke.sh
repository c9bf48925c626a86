#!/usr/bin/env bash
# Fuzz smoke test: builds every cargo-fuzz target in fuzz/ and runs each one
# for FUZZ_SECONDS (default 10) seconds from its committed seeds
# (fuzz/seeds/<target>/, spec examples) plus whatever corpus earlier runs
# left in fuzz/corpus/<target>/ (git-ignored). Prints the executions per
# target and exits non-zero if any target crashes, panics, times out or
# runs out of memory; the failing input is kept in fuzz/artifacts/<target>/.
# A crash found here becomes a named regression test next to the code.
#
# Works on stable Rust: the targets are built without a sanitizer
# (`-s none`; the fuzzed crates forbid `unsafe`), which needs no nightly
# flags. cargo-fuzz is installed on first use.
#
#   bash scripts/fuzz-smoke.sh                 # all targets, 10 s each
#   FUZZ_SECONDS=300 bash scripts/fuzz-smoke.sh ladder   # one target, longer
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${FUZZ_SECONDS:-10}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

echo "== building fuzz targets"
cargo fuzz build -s none

if [ "$#" -gt 0 ]; then
  targets="$*"
else
  targets="$(cargo fuzz list)"
fi
triple="$(rustc -vV | sed -n 's/^host: //p')"
# Ask cargo where it put the binaries instead of assuming fuzz/target:
# CARGO_TARGET_DIR, CARGO_BUILD_TARGET_DIR or a config's build.target-dir
# move them (a shared build cache is a common setup).
target_dir="$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
bin_dir="$target_dir/$triple/release"

failed=""
summary=""
for t in $targets; do
  mkdir -p "corpus/$t" "artifacts/$t"
  log="$(mktemp)"
  echo "== fuzzing $t for ${seconds}s"
  # The first directory receives new corpus entries; seeds are read-only.
  if "$bin_dir/$t" "corpus/$t" "seeds/$t" \
      -max_total_time="$seconds" \
      -timeout=10 \
      -rss_limit_mb=2048 \
      -print_final_stats=1 \
      -artifact_prefix="artifacts/$t/" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed="$failed $t"
    tail -n 60 "$log"
  fi
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  summary="$summary$(printf '%-16s %12s executions  %s' "$t" "${execs:-?}" "$status")"$'\n'
  rm -f "$log"
done

echo "== fuzz smoke summary (${seconds}s per target)"
printf '%s' "$summary"
if [ -n "$failed" ]; then
  echo "fuzz smoke FAILED:$failed (inputs in fuzz/artifacts/)" >&2
  exit 1
fi
