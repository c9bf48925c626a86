//! Both fixtures start and refuse bad usage. Having an integration test here
//! also makes `cargo test --workspace` build the binaries, which the
//! mcp-client integration tests run as child processes.
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
