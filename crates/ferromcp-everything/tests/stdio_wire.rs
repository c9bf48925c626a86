//! Wire-level tests of the stdio transport against a real everything-server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::json;

#[test]
fn modern_requests_and_errors() {
    let mut s = StdioServer::start();
    s.send(&request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    ));
    let r = s.recv();
    assert_eq!(r["id"], json!(1));
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["content"][0]["text"], "hi");
    // Parse error: id null, connection stays usable.
    s.send_raw(b"{oops");
    let r = s.recv();
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!(null), json!(-32700))
    );
    // Missing envelope → -32602 with the id.
    s.send(&json!({"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": {}}));
    let r = s.recv();
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!("a"), json!(-32602))
    );
    // ERA-04: initialize on a modern process → -32022 naming the supported versions.
    s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}));
    let r = s.recv();
    assert_eq!(r["error"]["code"], json!(-32022));
    assert!(
        r["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    // Unknown method → -32601.
    s.send(&request(3, "nope", json!({})));
    assert_eq!(s.recv()["error"]["code"], json!(-32601));
}

#[test]
fn handshake_era_on_stdio() {
    let mut s = StdioServer::start();
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}));
    let r = s.recv();
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let r = s.recv();
    assert!(r["result"].get("resultType").is_none());
    // Enveloped (modern) requests on a handshake process → -32600.
    s.send(&request(3, "tools/list", json!({})));
    assert_eq!(s.recv()["error"]["code"], json!(-32600));
}

#[test]
fn over_long_line_is_rejected_and_reading_resumes() {
    let mut s = StdioServer::start();
    let big = format!("{{\"x\":\"{}\"}}", "a".repeat(5 * 1024 * 1024));
    s.send_raw(big.as_bytes());
    let r = s.recv();
    assert_eq!(r["error"]["code"], json!(-32600));
    s.send(&request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "after"}}),
    ));
    assert_eq!(s.recv()["result"]["content"][0]["text"], "after");
}

#[test]
fn cancellation_suppresses_the_response() {
    let mut s = StdioServer::start();
    s.send(&request(
        1,
        "tools/call",
        json!({"name": "debug_sleep", "arguments": {"ms": 5000}}),
    ));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "test"}}));
    s.send(&request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "next"}}),
    ));
    let r = s.recv();
    assert_eq!(
        r["id"],
        json!(2),
        "no response for the cancelled request (CANCEL-03)"
    );
}

#[test]
fn stdout_stays_clean_and_panics_are_contained() {
    let mut s = StdioServer::start();
    s.send(&request(
        1,
        "tools/call",
        json!({"name": "debug_print_stdout"}),
    ));
    let r = s.recv();
    assert_eq!(r["result"]["content"][0]["text"], "printed");
    s.send(&request(2, "tools/call", json!({"name": "debug_panic"})));
    let r = s.recv();
    assert_eq!(r["error"]["code"], json!(-32603));
    s.send(&request(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "alive"}}),
    ));
    assert_eq!(s.recv()["result"]["content"][0]["text"], "alive");
}

#[test]
fn pipelined_requests_all_answered() {
    let mut s = StdioServer::start();
    let n = 2000;
    let mut batch = Vec::new();
    for i in 0..n {
        batch.extend_from_slice(
            request(
                i,
                "tools/call",
                json!({"name": "echo", "arguments": {"text": i.to_string()}}),
            )
            .to_string()
            .as_bytes(),
        );
        batch.push(b'\n');
    }
    let mut stdin = s.stdin.try_clone_hack();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&batch).unwrap();
        stdin.flush().unwrap();
        stdin
    });
    let mut seen = std::collections::HashSet::new();
    for _ in 0..n {
        let r = s.recv();
        seen.insert(r["id"].as_i64().unwrap());
    }
    let _stdin = writer.join().unwrap();
    assert_eq!(seen.len(), n as usize);
}

trait CloneHack {
    fn try_clone_hack(&mut self) -> std::fs::File;
}

impl CloneHack for std::process::ChildStdin {
    fn try_clone_hack(&mut self) -> std::fs::File {
        use std::os::fd::AsFd;
        std::fs::File::from(self.as_fd().try_clone_to_owned().unwrap())
    }
}
