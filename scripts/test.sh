#!/usr/bin/env bash
# The whole test suite. README's second set-up command runs this file, and
# .ci/run runs it too, so what a developer runs is exactly what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

echo "== mcp-auth feature combinations (rustls on, everything off)"
cargo clippy -p mcp-auth --all-targets --features rustls -- -D warnings
cargo clippy -p mcp-auth --no-default-features -- -D warnings
cargo clippy -p mcp-auth --all-targets --features client,rustls -- -D warnings
cargo clippy -p mcp-auth --all-targets --no-default-features --features client -- -D warnings

echo "== mcp-server feature combinations (HTTP/1.1 only, no JSON Schema validation)"
cargo clippy -p mcp-server --all-targets --no-default-features --features http,stdio -- -D warnings

echo "== mcp-client feature combinations (no JSON Schema output validation)"
cargo clippy -p mcp-client --all-targets --no-default-features --features stdio,http -- -D warnings

echo "== rust-version declarations (each at least what its dependencies declare)"
python3 scripts/check-rust-version.py

echo "== cargo doc -D warnings (every feature)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features

echo "== unit, integration and property tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
  # What turning schema-validation off changes, pinned (defaults ran above).
  cargo nextest run -p mcp-server --no-default-features --features http,stdio --test schema_validation
else
  cargo test --workspace --no-fail-fast
  cargo test -p mcp-server --no-default-features --features http,stdio --test schema_validation
fi

echo "== doc tests"
cargo test --workspace --doc

# Benchmarks are type-checked by clippy --all-targets above; building them in
# the release profile here would double CI's compile time.

echo "== fuzz smoke (each cargo-fuzz target for 10 s)"
# With CARGO_TARGET_DIR set (a shared build cache), the targets build there
# and the script must find them there; CI sets it to a folder of its own so
# that path is the one exercised on every run, not fuzz/target.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/fuzz}" bash scripts/fuzz-smoke.sh

echo "== official conformance suites"
bash scripts/conformance.sh
