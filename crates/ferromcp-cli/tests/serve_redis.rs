//! `mcp serve --redis URL`: refused without a shared requestState key ring
//! (or, built without the `redis` feature, refused as such), and a
//! conflicting key configuration is a usage error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::MCP;
use std::process::Command;

#[test]
fn serve_with_redis_needs_a_shared_key_ring() {
    let out = Command::new(MCP)
        .args(["serve", "--stdio", "--redis", "redis://127.0.0.1:1/0"])
        .env_remove("MCP_STATE_KEY")
        .env_remove("MCP_STATE_KEYS")
        .output()
        .unwrap();
    common::assert_redis_needs_a_key_ring(&out);
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
