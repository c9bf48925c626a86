//! `mcp gateway --redis URL`: refused without a shared requestState key
//! ring (or, built without the `redis` feature, refused as such); with the
//! feature and a real `redis-server`, a handshake-era session opened on one
//! gateway replica is served by another, and a list change seen by one
//! replica reaches a listener on the other. The fleet under load behind
//! nginx is scripts/gateway-scale-out.sh.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{MCP, scratch};
use serde_json::json;
use std::process::{Command, Stdio};

#[test]
fn gateway_with_redis_needs_a_shared_key_ring() {
    let dir = scratch("gateway-redis-keys");
    let file = dir.join("gateway.json");
    std::fs::write(&file, json!({"mcpServers": {}}).to_string()).unwrap();
    let out = Command::new(MCP)
        .args(["gateway", "--stdio", "--config"])
        .arg(&file)
        .args(["--redis", "redis://127.0.0.1:1/0"])
        .env_remove("MCP_STATE_KEY")
        .env_remove("MCP_STATE_KEYS")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    common::assert_redis_needs_a_key_ring(&out);
}

#[cfg(feature = "redis")]
mod fleet {
    use super::common::gateway::Gateway;
    use super::common::raw::{Client, HANDSHAKE, MODERN, WAIT, text_of};
    use super::common::{MCP, scratch};
    use serde_json::{Value, json};
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    struct Redis(Child, u16);

    impl Drop for Redis {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// A `redis-server` without persistence, or `None` (said loudly) when
    /// it is not installed.
    fn redis() -> Option<Redis> {
        if Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            eprintln!(
                "\n!!! SKIPPED: redis-server is not installed (apt-get install redis-server) !!!\n"
            );
            return None;
        }
        let port = super::common::free_port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Redis(child, port))
    }

    /// Two replicas with the same config (the everything-server over
    /// stdio: each replica starts its own) and the same Redis.
    fn replicas(redis: &Redis, name: &str) -> (Gateway, Gateway) {
        let url = format!("redis://127.0.0.1:{}/0", redis.1);
        let keys = format!("{},{}", "a1".repeat(32), "b2".repeat(32));
        let config =
            json!({"mcpServers": {"everything": {"command": MCP, "args": ["serve", "--stdio"]}}});
        let env = [("MCP_STATE_KEYS", keys.as_str())];
        let args = ["--redis", url.as_str()];
        let a = Gateway::start_with(&scratch(&format!("{name}-a")), &config, &env, &args);
        let b = Gateway::start_with(&scratch(&format!("{name}-b")), &config, &env, &args);
        (a, b)
    }

    /// A DELETE of the session at `addr`; the status.
    fn delete(addr: &str, session: &str) -> u16 {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        write!(
            s,
            "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMCP-Protocol-Version: {HANDSHAKE}\r\nMcp-Session-Id: {session}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = String::new();
        let _ = s.read_to_string(&mut raw);
        raw.split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    }

    // LEGACY-12, LEGACY-13, LEGACY-14: the session id a replica minted is
    // known to every replica, and its DELETE ends it everywhere.
    #[test]
    fn a_session_opened_on_one_gateway_replica_is_served_by_another() {
        let Some(redis) = redis() else { return };
        let (a, b) = replicas(&redis, "gateway-roam");
        let mut c = Client::new(&a.addr, HANDSHAKE);
        let session = c.session.clone().unwrap();
        c.addr = b.addr.clone();
        let r = c.call(json!(2), "everything__echo", json!({"text": "roamed"}));
        assert!(text_of(&r).contains("roamed"), "{r}");
        // Ended on B, gone on A too.
        assert!(matches!(delete(&b.addr, &session), 200 | 204));
        c.addr = a.addr.clone();
        let (status, _, body) = c.send_raw(
            "tools/call",
            None,
            &json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
                    "params":{"name":"everything__echo","arguments":{"text":"x"}}}),
        );
        assert_eq!(status, 404, "{body}");
    }

    /// A 2026-07-28 listen stream on `addr` for tool list changes; the
    /// reader of its events, once acknowledged.
    fn listen(addr: &str) -> BufReader<TcpStream> {
        let body = json!({"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{
            "notifications": {"toolsListChanged": true},
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut r = BufReader::new(s);
        assert!(
            next_method(&mut r, "notifications/subscriptions/acknowledged"),
            "no acknowledgement"
        );
        r
    }

    /// Reads SSE lines until a message with `method`; false at the end.
    fn next_method(r: &mut BufReader<TcpStream>, method: &str) -> bool {
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return false,
                Ok(_) => {}
            }
            let Some(data) = line.trim().strip_prefix("data:") else {
                continue;
            };
            if let Ok(v) = serde_json::from_str::<Value>(data.trim())
                && v["method"] == method
            {
                return true;
            }
        }
    }

    // SUB-12: listen fan-out across gateway replicas. Each replica has its
    // own everything-server child: the change happens in A's child only,
    // so only the bus can tell B's listener.
    #[test]
    fn a_list_change_seen_by_one_gateway_replica_reaches_listeners_on_another() {
        let Some(redis) = redis() else { return };
        let (a, b) = replicas(&redis, "gateway-fanout");
        let mut on_b = listen(&b.addr);
        let c = Client::new(&a.addr, MODERN);
        let r = c.call(json!(1), "everything__test_trigger_tool_change", json!({}));
        assert!(r.get("result").is_some(), "{r}");
        assert!(
            next_method(&mut on_b, "notifications/tools/list_changed"),
            "the listener on the other replica saw no tools/list_changed"
        );
    }
}
