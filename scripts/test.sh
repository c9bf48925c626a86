#!/usr/bin/env bash
# The whole test suite. README's second set-up command runs this file, and
# .ci/run runs it too, so what a developer runs is exactly what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# The ferromcp-redis integration tests (and everything-server --redis) run
# against a real redis-server. CI runs as root on Debian: install it when
# missing. Elsewhere the tests skip with a loud message.
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing redis-server"
    apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
  else
    echo "!!! redis-server is not installed: the Redis integration tests will be SKIPPED" >&2
  fi
fi

# footprint: what the build has taken so far. A clean run filled the CI
# machine's disk once; the log shows where the space goes.
footprint() {
  echo "-- disk: target $(du -sh target 2>/dev/null | cut -f1), free $(df -h . | awk 'NR==2 {print $4}')"
}

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

echo "== ferromcp-auth feature combinations (rustls on, everything off)"
cargo clippy -p ferromcp-auth --all-targets --features rustls -- -D warnings
cargo clippy -p ferromcp-auth --no-default-features -- -D warnings
cargo clippy -p ferromcp-auth --all-targets --features client,rustls -- -D warnings
cargo clippy -p ferromcp-auth --all-targets --no-default-features --features client -- -D warnings

echo "== ferromcp-server feature combinations (HTTP/1.1 only, no JSON Schema validation)"
cargo clippy -p ferromcp-server --all-targets --no-default-features --features http,stdio -- -D warnings

echo "== ferromcp-client feature combinations (no JSON Schema output validation)"
cargo clippy -p ferromcp-client --all-targets --no-default-features --features stdio,http -- -D warnings
# Each transport alone, and none (the library; the tests need both).
for f in stdio http rustls output-validation ""; do
  cargo clippy -p ferromcp-client --no-default-features ${f:+--features "$f"} -- -D warnings
done

echo "== ferromcp-bridge with its fuzzing feature (the fuzz targets' entry points)"
cargo clippy -p ferromcp-bridge --all-targets --features fuzzing -- -D warnings

echo "== rust-version declarations (each at least what its dependencies declare)"
python3 scripts/check-rust-version.py

echo "== cargo package (each crate packs as crates.io would take it; no build)"
# --no-verify skips the rebuild of every package (the builds above cover the
# code); this checks the manifests: metadata, readme paths, a version on
# every internal dependency, nothing that only exists outside a crate.
# --allow-dirty: a developer's uncommitted changes are what gets checked.
cargo package --workspace --no-verify --allow-dirty --quiet

echo "== cargo doc -D warnings (every feature)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features

echo "== rustdoc cites no requirement IDs (they stay in // comments)"
# The IDs name entries of a handbook outside this repository; published
# docs must not point there. Fix: python3 scripts/req-ids-out-of-docs.py
python3 scripts/req-ids-out-of-docs.py --check

echo "== module circles: none new, none grown (scripts/module-cycles.allowed only shrinks)"
python3 scripts/module-cycles.py --check

echo "== docs/MODULES.md matches the code (regenerate: python3 scripts/module-map.py)"
python3 scripts/module-map.py --check

echo "== the transports read the server core through methods only"
python3 scripts/transport-api.py

echo "== commit subjects within 72 characters"
bash scripts/commit-subjects.sh

echo "== the redis feature (opt-in): lint it, and keep it out of default builds"
cargo clippy -p ferromcp-everything -p ferromcp-cli --all-targets --features redis -- -D warnings
for crate in ferromcp-everything ferromcp-cli ferromcp-server; do
  # Captured first: grep -q closing the pipe early would fail cargo tree
  # under pipefail and hide a match.
  tree=$(cargo tree -p "$crate" -e normal)
  if grep -qE '(^| )redis v' <<<"$tree"; then
    echo "a default build of $crate depends on the redis crate" >&2
    exit 1
  fi
done

echo "== the otel feature (opt-in): lint it with its example and test, and keep it out of default builds"
cargo clippy -p ferromcp-server -p ferromcp-client -p ferromcp-examples --all-targets \
  --features ferromcp-server/otel,ferromcp-client/otel,ferromcp-examples/otel -- -D warnings
cargo clippy -p ferromcp-client --no-default-features --features otel -- -D warnings
for crate in ferromcp-server ferromcp-client; do
  tree=$(cargo tree -p "$crate" -e normal)
  if grep -qE '(^| )(opentelemetry|tracing-opentelemetry) v' <<<"$tree"; then
    echo "a default build of $crate depends on OpenTelemetry" >&2
    exit 1
  fi
done

# peer SCRIPT FAILURE SKIPPED: runs a pinned third-party peer's install
# script. In CI a failed install fails the run with FAILURE; elsewhere the
# run goes on and says loudly what is SKIPPED.
peer() {
  if ! bash "$1"; then
    if [ -n "${CI:-}" ] && [ "${CI}" != false ]; then
      echo "$2" >&2
      exit 1
    fi
    echo "!!! $3" >&2
  fi
}

echo "== the Python SDK peers of the bridge interop tests (scripts/python-peer.sh)"
# PyPI `mcp` 2.3.0 and 1.30.0, pinned in interop/python/, in two venvs under
# target/python-peer/ (about a minute the first time, under a second once
# installed).
# crates/ferromcp-cli/tests/bridge_python.rs needs it: those tests fail in CI
# without it and skip with a loud message elsewhere.
peer scripts/python-peer.sh "the Python SDK peers could not be installed" \
  "the Python SDK peers are not installed: the bridge's Python interop tests will be SKIPPED"

echo "== the gateway's third-party upstreams (scripts/gateway-peers.sh)"
# npm @modelcontextprotocol/server-memory 2026.8.31 and PyPI mcp-server-time
# 2026.10.19, pinned in interop/gateway-peers/, in target/gateway-peers/
# (about 30 s the first time, under a second once installed).
# crates/ferromcp-cli/tests/gateway_peers.rs needs them (and the Python SDK
# peer above): it fails in CI without them and skips loudly elsewhere.
peer scripts/gateway-peers.sh "the gateway's third-party upstreams could not be installed" \
  "the gateway's third-party upstreams are not installed: the gateway interop test will be SKIPPED"

echo "== the MCPB manifest schema for the mcp pack tests (scripts/mcpb-schema.sh)"
# The JSON Schemas of the npm package @anthropic-ai/mcpb 2.1.2 (one small
# tarball, checksum-pinned) in target/mcpb-schema/. Needed by
# crates/ferromcp-cli/tests/dist.rs: it fails in CI without them and skips
# the schema checks with a loud message elsewhere.
peer scripts/mcpb-schema.sh "the MCPB manifest schema could not be fetched" \
  "the MCPB manifest schema is not fetched: the mcp pack schema checks will be SKIPPED"

echo "== the MCP Apps package for the schema check (scripts/ext-apps-peer.sh)"
# npm @modelcontextprotocol/ext-apps 2.0.4, pinned in interop/ext-apps/, in
# target/ext-apps-peer/ (about a second; nothing once installed). Its JSON
# Schema checks our _meta.ui (examples_run.rs): the test fails in CI without
# it and skips with a loud message elsewhere.
peer scripts/ext-apps-peer.sh "the ext-apps package could not be installed" \
  "the ext-apps package is not installed: the MCP Apps schema check will be SKIPPED"

echo "== the MCP Inspector for the skills interop (scripts/inspector-peer.sh)"
# npm @modelcontextprotocol/inspector 2.12.0, pinned in interop/inspector/,
# in target/inspector-peer/ (about 40 s the first time; nothing once
# installed). Its --cli drives `mcp serve skills` and the apps example
# (crates/ferromcp-cli/tests/inspector.rs): the test fails in CI without it
# and skips with a loud message elsewhere.
peer scripts/inspector-peer.sh "the MCP Inspector could not be installed" \
  "the MCP Inspector is not installed: the skills interop test will be SKIPPED"

echo "== the ext-apps example servers (scripts/ext-apps-servers-peer.sh)"
# npm @modelcontextprotocol/server-basic-vanillajs and server-map 2.0.3,
# pinned in interop/ext-apps-servers/, in target/ext-apps-servers-peer/
# (about 5 s the first time, nothing once installed). Read by our client and
# `mcp` in crates/ferromcp-cli/tests/ext_apps_servers.rs: the test fails in
# CI without them and skips with a loud message elsewhere.
peer scripts/ext-apps-servers-peer.sh "the ext-apps example servers could not be installed" \
  "the ext-apps example servers are not installed: their interop test will be SKIPPED"

echo "== the TypeScript everything server behind --expose (scripts/ts-everything-peer.sh)"
# npm @modelcontextprotocol/server-everything 2026.8.31, pinned in
# interop/server-everything/, in target/ts-everything-peer/ (about 15 s the
# first time, nothing once installed). The stdio child of
# a_typescript_sdk_child_serves_both_eras_behind_expose (bridge_expose.rs):
# the test fails in CI without it and skips with a loud message elsewhere.
peer scripts/ts-everything-peer.sh "the TypeScript everything server could not be installed" \
  "the TypeScript everything server is not installed: its --expose test will be SKIPPED"

echo "== unit, integration and property tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
  # What building without schema-validation and http2 changes, pinned
  # (defaults ran above).
  cargo nextest run -p ferromcp-server --no-default-features --features http,stdio \
    --test schema_validation --test http2_setting
  # The otel feature: the server's remote parent, and the client-to-server
  # parent relationship through an in-memory OpenTelemetry exporter.
  cargo nextest run -p ferromcp-server --features otel --lib -E 'test(otel::)'
  cargo nextest run -p ferromcp-examples --features otel \
    -E 'binary(otel_parent) | test(the_otel_example_prints_spans)'
  # The binaries with the Redis backplane (ferromcp-redis itself ran above).
  cargo nextest run -p ferromcp-everything -p ferromcp-cli --features redis \
    -E 'binary(redis_replicas) | binary(bins) | binary(serve_redis) | binary(gateway_redis)'
else
  cargo test --workspace --no-fail-fast
  cargo test -p ferromcp-server --no-default-features --features http,stdio \
    --test schema_validation --test http2_setting
  cargo test -p ferromcp-server --features otel --lib otel::
  cargo test -p ferromcp-examples --features otel --test otel_parent
  cargo test -p ferromcp-examples --features otel --test examples_run the_otel_example_prints_spans
  cargo test -p ferromcp-everything --features redis --test redis_replicas --test bins
  cargo test -p ferromcp-cli --features redis --test serve_redis --test gateway_redis
fi

footprint
echo "== doc tests"
cargo test --workspace --doc

echo "== docs ranking evaluation (quick: project docs + ../shared/spec + 60 crates' READMEs)"
# Fails when the ranking falls below the plain BM25 baseline. Full run and
# figures: cargo run -p ferromcp-docs --release --example eval
cargo run -q -p ferromcp-docs --example eval -- --quick

# Benchmarks are type-checked by clippy --all-targets above; building them in
# the release profile here would double CI's compile time.

echo "== fuzz smoke (each cargo-fuzz target for 10 s)"
# With CARGO_TARGET_DIR set (a shared build cache), the targets build there
# and the script must find them there; CI sets it to a folder of its own so
# that path is the one exercised on every run, not fuzz/target.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/fuzz}" bash scripts/fuzz-smoke.sh

footprint
echo "== official conformance suites"
bash scripts/conformance.sh

echo "== link order: everything-server's start-up and request code packed (scripts/link-order/cc)"
# conformance.sh built the release everything-server. Fails when the list no
# longer matches the code (write it again: python3 scripts/link-order.py) or
# the wrapper did not run; only warns when another rustc wrote the list.
python3 scripts/link-order.py --check

echo "== fleet.sh self-test (wait_port: dead, slow and silent replicas)"
bash scripts/fleet-selftest.sh

footprint
echo "== scale-out: three replicas, Redis and nginx under load (scripts/scale-out.sh)"
bash scripts/scale-out.sh --quick
echo "== gateway scale-out: three mcp gateway replicas, Redis and nginx (scripts/gateway-scale-out.sh)"
bash scripts/gateway-scale-out.sh --quick
footprint
