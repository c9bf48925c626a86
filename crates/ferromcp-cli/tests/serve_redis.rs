//! `mcp serve --redis URL`: refused without a shared requestState key ring
//! (or, built without the `redis` feature, refused as such), and a
//! conflicting key configuration is a usage error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

const MCP: &str = env!("CARGO_BIN_EXE_mcp");

#[test]
fn serve_with_redis_needs_a_shared_key_ring() {
    let out = Command::new(MCP)
        .args(["serve", "--stdio", "--redis", "redis://127.0.0.1:1/0"])
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
}

#[test]
fn serve_refuses_both_key_variables() {
    let out = Command::new(MCP)
        .args(["serve", "--stdio"])
        .env("MCP_STATE_KEY", "11".repeat(32))
        .env("MCP_STATE_KEYS", "22".repeat(32))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not both"));
}
