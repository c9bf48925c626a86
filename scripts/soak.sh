#!/usr/bin/env bash
# Soak test (not run in CI): SOAK_SECONDS (default 600) of steady mixed load
# against release builds of the everything-server — modern and handshake-era
# HTTP, SSE progress, MRTR round trips, listen streams and hanging calls
# opened and dropped, hostile requests (parse errors, 413s, bad Origin, bad
# sentinels, panics, half-sent headers), and a stdio server — with the
# resident memory (VmRSS) of both servers sampled every second.
#
# Writes the samples to SOAK_CSV (default target/soak-rss.csv), prints the
# post-warm-up min/median/max, and fails if any operation failed or any
# sample after the warm-up (first 10%, at least 30 s) strays more than 5%
# from the post-warm-up median. The load generator is the `soak` test in
# crates/ferromcp-everything/tests/abuse_http.rs (ignored in normal runs).
#
#   bash scripts/soak.sh                 # 10 minutes
#   SOAK_SECONDS=120 bash scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."

export SOAK_SECONDS="${SOAK_SECONDS:-600}"
export SOAK_CSV="${SOAK_CSV:-$PWD/target/soak-rss.csv}"
# Run the servers as in production: no backtrace capture on panics.
unset RUST_BACKTRACE

echo "== building (release)"
cargo test --release -p ferromcp-everything --test abuse_http --no-run

echo "== soak: ${SOAK_SECONDS}s"
cargo test --release -p ferromcp-everything --test abuse_http -- \
  --ignored --exact soak --nocapture --test-threads=1
echo "== RSS samples: $SOAK_CSV"
