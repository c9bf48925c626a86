//! Two everything-server replicas sharing a real Redis (feature `redis`):
//! a change made on one reaches listen streams on the other, and a
//! single-use `requestState` minted by one is accepted once fleet-wide.
//! Skipped with a loud message when `redis-server` is not installed.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Redis(Child, u16);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    Some(Redis(spawn_redis(port), port))
}

/// `redis-server` without persistence on `port`, once it accepts connections.
fn spawn_redis(port: u16) -> Child {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn replicas(redis: &Redis) -> (HttpServer, HttpServer) {
    let url = format!("redis://127.0.0.1:{}/0", redis.1);
    let keys = format!("{},{}", "a1".repeat(32), "b2".repeat(32));
    let env = [
        ("MCP_STATE_KEYS", keys.as_str()),
        ("MCP_STATE_SINGLE_USE", "100"),
    ];
    let args = ["--redis", url.as_str()];
    (
        HttpServer::start_with_args(&args, &env),
        HttpServer::start_with_args(&args, &env),
    )
}

#[test]
fn single_use_request_state_is_shared_by_replicas() {
    let Some(redis) = redis() else { return };
    let (one, two) = replicas(&redis);
    let tool = "test_input_required_result_tampered_state";
    let caps = json!({"elicitation": {}});
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});
    let first = request(
        1,
        "tools/call",
        json!({"name": tool, "_meta": envelope_with(caps.clone())}),
    );
    let r = one.post(&first, &[]).json();
    let token = r["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = request(
        2,
        "tools/call",
        json!({"name": tool, "inputResponses": answer, "requestState": token,
               "_meta": envelope_with(caps.clone())}),
    );
    // Opened on the other replica: accepted once, then refused everywhere.
    let r = two.post(&retry, &[]);
    assert_eq!(
        (r.status, &r.json()["result"]["resultType"]),
        (200, &json!("complete"))
    );
    for s in [&one, &two] {
        let r = s.post(&retry, &[]);
        assert_eq!((r.status, r.error_code()), (400, Some(-32602)));
    }
}

#[test]
fn a_change_on_one_replica_reaches_listeners_on_the_other() {
    let Some(redis) = redis() else { return };
    let (one, two) = replicas(&redis);
    let port = two.port;
    let listener = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut sock = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let body = request(
            77,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .to_string();
        let req = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        sock.write_all(req.as_bytes()).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut seen = String::new();
        let mut buf = [0u8; 4096];
        while !seen.contains("tools/list_changed") {
            let n = sock.read(&mut buf).unwrap_or(0);
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        seen
    });
    std::thread::sleep(Duration::from_millis(300));
    let r = one.post(
        &request(
            3,
            "tools/call",
            json!({"name": "test_trigger_tool_change", "arguments": {}}),
        ),
        &[],
    );
    assert_eq!(r.status, 200);
    let seen = listener.join().unwrap();
    assert!(
        seen.contains("notifications/subscriptions/acknowledged"),
        "{seen}"
    );
    assert!(seen.contains("notifications/tools/list_changed"), "{seen}");
}

/// A handshake-era POST (2025-11-25) on `server` for session `sid`.
fn session_post(server: &HttpServer, sid: Option<&str>, body: &serde_json::Value) -> Response {
    let mut h = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    if let Some(sid) = sid {
        h.push(("Mcp-Session-Id", sid));
    }
    server.raw("POST", "/mcp", &h, body.to_string().as_bytes())
}

fn restart(redis: &mut Redis) {
    let _ = redis.0.kill();
    let _ = redis.0.wait();
    redis.0 = spawn_redis(redis.1);
}

// LEGACY-13
/// A session created on one replica is served by the other; setLevel and
/// subscribe there succeed; DELETE on either ends it on both.
#[test]
fn a_handshake_session_roams_between_replicas_and_ends_everywhere() {
    let Some(redis) = redis() else { return };
    let (one, two) = replicas(&redis);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "roam", "version": "1"}}});
    let r = session_post(&one, None, &init);
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(session_post(&two, Some(&sid), &note).status, 202);
    for i in 1..=40 {
        let s = if i % 2 == 0 { &one } else { &two };
        let call = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": format!("hi {i}")}}});
        let r = session_post(s, Some(&sid), &call);
        assert_eq!(r.status, 200, "call {i}");
        assert_eq!(
            r.messages()[0]["result"]["content"][0]["text"],
            format!("hi {i}")
        );
    }
    let level = json!({"jsonrpc": "2.0", "id": 50, "method": "logging/setLevel", "params": {"level": "debug"}});
    assert!(session_post(&two, Some(&sid), &level).messages()[0]["result"].is_object());
    let sub = json!({"jsonrpc": "2.0", "id": 51, "method": "resources/subscribe", "params": {"uri": "test://watched-resource"}});
    assert!(session_post(&one, Some(&sid), &sub).messages()[0]["result"].is_object());
    // DELETE on two: both answer 404 from now on.
    let h = [
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", sid.as_str()),
    ];
    assert_eq!(two.raw("DELETE", "/mcp", &h, b"").status, 200);
    let call = json!({"jsonrpc": "2.0", "id": 60, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}}});
    assert_eq!(session_post(&one, Some(&sid), &call).status, 404);
    assert_eq!(session_post(&two, Some(&sid), &call).status, 404);
}

/// Redis down: a session request is 503 with Retry-After (never 404, which
/// would make the client drop a valid session); stateless requests are
/// served; once Redis is back the same session works again (its record is
/// gone with a non-persistent Redis, so it is a 404 then, and a new session
/// works).
#[test]
fn session_requests_are_503_while_redis_is_down_and_recover() {
    let Some(mut redis) = redis() else { return };
    let (one, two) = replicas(&redis);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "outage", "version": "1"}}});
    let sid = session_post(&one, None, &init)
        .header("mcp-session-id")
        .unwrap()
        .to_owned();
    let _ = redis.0.kill();
    let _ = redis.0.wait();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}}});
    for s in [&one, &two] {
        let r = session_post(s, Some(&sid), &call);
        assert_eq!(r.status, 503, "{:?}", String::from_utf8_lossy(&r.body));
        assert!(r.header("retry-after").is_some());
    }
    // A stateless (2026-07-28) request needs no Redis.
    let r = one.post(
        &request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "y"}}),
        ),
        &[],
    );
    assert_eq!(r.status, 200);
    restart(&mut redis);
    let ok = eventually(Duration::from_secs(20), || {
        session_post(&two, None, &init).status == 200
    });
    assert!(ok, "sessions did not recover after Redis came back");
    let sid = session_post(&two, None, &init)
        .header("mcp-session-id")
        .unwrap()
        .to_owned();
    assert_eq!(session_post(&one, Some(&sid), &call).status, 200);
}

/// Sends a handshake-era POST on a raw socket and returns it, to read the
/// SSE answer as it comes (`Connection: close`, so the read ends with it).
fn stream_post(port: u16, sid: &str, body: &serde_json::Value) -> std::net::TcpStream {
    use std::io::Write;
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = body.to_string();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {sid}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(req.as_bytes()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    sock
}

/// Reads from `sock` until `needle` has arrived, the response ended, or
/// 20 s passed (keep-alive comments would otherwise hold it open).
fn read_until(sock: &mut std::net::TcpStream, seen: &mut String, needle: &str) {
    use std::io::Read;
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(20);
    while !seen.contains(needle) && Instant::now() < deadline {
        let n = sock.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

/// The JSON-RPC messages in the `data:` lines of an SSE text.
fn sse_messages(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

fn init_session(server: &HttpServer, caps: serde_json::Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps,
        "clientInfo": {"name": "relay", "version": "1"}}});
    let r = session_post(server, None, &init);
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(session_post(server, Some(&sid), &note).status, 202);
    sid
}

/// A `notifications/cancelled` posted to the replica that does not run the
/// request reaches the one that does, over the shared bus: the request ends
/// at once and the handler saw the cancellation.
#[test]
fn a_cancellation_posted_to_another_replica_reaches_the_request() {
    let Some(redis) = redis() else { return };
    let (one, two) = replicas(&redis);
    let sid = init_session(&one, json!({}));
    let started = Instant::now();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "debug_sleep", "arguments": {"ms": 20000}}});
    let mut sock = stream_post(one.port, &sid, &call);
    std::thread::sleep(Duration::from_millis(300));
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "changed my mind"}});
    assert_eq!(session_post(&two, Some(&sid), &cancel).status, 202);
    let mut seen = String::new();
    read_until(&mut sock, &mut seen, "\"result\"");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the request ran on after the cancellation: {seen}"
    );
    let count = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "debug_cancellations", "arguments": {}}});
    let r = session_post(&one, Some(&sid), &count);
    assert_eq!(r.messages()[0]["result"]["content"][0]["text"], "1");
}

/// The answer to a server-to-client request (an elicitation sent on one
/// replica's stream) posted to the other replica reaches the handler
/// waiting for it; the tool's result then arrives on the first stream.
#[test]
fn an_elicitation_answer_posted_to_another_replica_reaches_the_handler() {
    let Some(redis) = redis() else { return };
    let (one, two) = replicas(&redis);
    let sid = init_session(&one, json!({"elicitation": {"form": {}}}));
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "test_elicitation", "arguments": {"message": "Your name?"}}});
    let mut sock = stream_post(one.port, &sid, &call);
    let mut seen = String::new();
    read_until(&mut sock, &mut seen, "elicitation/create");
    let ask = sse_messages(&seen)
        .into_iter()
        .find(|m| m["method"] == "elicitation/create")
        .unwrap_or_else(|| panic!("no elicitation request: {seen}"));
    let id = ask["id"].clone();
    assert!(id.as_str().is_some_and(|s| s.starts_with("srv-")), "{id}");
    let answer = json!({"jsonrpc": "2.0", "id": id,
        "result": {"action": "accept", "content": {"response": "Ada"}}});
    assert_eq!(session_post(&two, Some(&sid), &answer).status, 202);
    read_until(&mut sock, &mut seen, "\"id\":3");
    let result = sse_messages(&seen)
        .into_iter()
        .find(|m| m["id"] == 3)
        .unwrap_or_else(|| panic!("no result: {seen}"));
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("accept") && text.contains("Ada"), "{result}");
}
