//! Both fixtures start and refuse bad usage. Having an integration test here
//! also makes `cargo test --workspace` build the binaries, which the
//! ferromcp-client integration tests run as child processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn everything_server_rejects_bad_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_everything-server"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn everything_client_needs_a_url() {
    let out = Command::new(env!("CARGO_BIN_EXE_everything-client"))
        .env_remove("MCP_CONFORMANCE_SCENARIO")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn everything_client_fails_fast_against_a_dead_url() {
    // Nothing listens on port 9 of loopback: a prompt failure, never a hang.
    let start = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_everything-client"))
        .env("MCP_CONFORMANCE_SCENARIO", "tools_call")
        .env("MCP_CONFORMANCE_PROTOCOL_VERSION", "2026-07-28")
        .arg("http://127.0.0.1:9/mcp")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn everything_server_redis_flag_needs_the_feature_and_a_shared_key_ring() {
    // No key ring: refused before any connection attempt (port 1 is never
    // reached); without the `redis` feature the flag itself is refused.
    let out = Command::new(env!("CARGO_BIN_EXE_everything-server"))
        .args(["--stdio", "--redis", "redis://127.0.0.1:1/0"])
        .env_remove("MCP_STATE_KEY")
        .env_remove("MCP_STATE_KEYS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "redis") {
        assert!(
            err.contains("needs a key ring shared by every replica"),
            "{err}"
        );
    } else {
        assert!(err.contains("without the `redis` feature"), "{err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_everything-server"))
        .args(["--stdio", "--redis"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
