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
    replicas_with(redis, &[])
}

/// Two replicas with extra environment variables (limits).
fn replicas_with(redis: &Redis, extra: &[(&str, &str)]) -> (HttpServer, HttpServer) {
    let url = format!("redis://127.0.0.1:{}/0", redis.1);
    let keys = format!("{},{}", "a1".repeat(32), "b2".repeat(32));
    let mut env = vec![
        ("MCP_STATE_KEYS", keys.as_str()),
        ("MCP_STATE_SINGLE_USE", "100"),
    ];
    env.extend_from_slice(extra);
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
    session_post_to(server.client(), sid, body)
}

/// [`session_post`] from any thread.
fn session_post_to(server: Client, sid: Option<&str>, body: &serde_json::Value) -> Response {
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
        // The answer keeps the request's id and tells the client what to
        // do; which Redis command failed is for the server log only.
        let body = r.json();
        assert_eq!(body["id"], 1, "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("retry"), "{body}");
        for internal in [
            "GETEX",
            "EVALSHA",
            "Redis",
            "redis",
            "broken pipe",
            "refused",
        ] {
            assert!(!message.contains(internal), "{body}");
        }
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

/// The record of session `sid` as the store reads it (whatever its layout
/// in Redis), `None` when there is none.
fn stored_record(
    redis: &Redis,
    sid: &str,
) -> Option<ferromcp_server::shared_sessions::SessionRecord> {
    use ferromcp_server::shared_sessions::SharedSessions;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = ferromcp_redis::RedisConfig::new(&format!("redis://127.0.0.1:{}/0", redis.1))
            .unwrap()
            .connect_sessions()
            .await
            .unwrap();
        store.fetch(sid, Duration::from_secs(600)).await.unwrap()
    })
}

/// Redis's `total_net_input_bytes` (every byte any client sent it).
fn redis_input_bytes(redis: &Redis) -> u64 {
    redis_stat(redis, "total_net_input_bytes")
}

/// A counter of Redis's `INFO stats`.
fn redis_stat(redis: &Redis, name: &str) -> u64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", redis.1)).unwrap();
    s.write_all(b"INFO stats\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 8192];
    let field = format!("{name}:");
    while !text.contains(&field) || !text.ends_with("\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "INFO ended early");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    text.lines()
        .find_map(|l| l.strip_prefix(field.as_str()))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

fn subscribe(id: u64, uri: &str) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": uri}})
}

fn acknowledged(r: &Response) -> bool {
    r.status == 200
        && r.messages()
            .first()
            .is_some_and(|m| m["result"].is_object())
}

// LEGACY-13, ISSUE-23 item 4
/// 1,000 concurrent subscribes with distinct URIs, spread over two replicas
/// sharing one Redis, are all acknowledged and all kept; each writes a
/// bounded number of bytes to Redis, not the whole record again. Then a
/// `logging/setLevel` on one replica racing subscribes on the other, 30
/// times: the acknowledged level is what the record holds every time.
#[test]
fn concurrent_session_updates_on_two_replicas_are_all_kept() {
    let Some(redis) = redis() else { return };
    // Room for all of them (the default cap is 1,000).
    let (one, two) = replicas_with(&redis, &[("MCP_MAX_SUBSCRIPTIONS_PER_SESSION", "5000")]);
    let sid = init_session(&one, json!({}));
    let clients = [one.client(), two.client()];
    let before = redis_input_bytes(&redis);
    let threads: Vec<_> = (0..20u64)
        .map(|t| {
            let sid = sid.clone();
            std::thread::spawn(move || {
                (0..50u64)
                    .filter(|i| {
                        let uri = format!("test://race/{t}/{i}");
                        let c = clients[usize::from((t + i) % 2 == 0)];
                        acknowledged(&session_post_to(
                            c,
                            Some(&sid),
                            &subscribe(t * 100 + i, &uri),
                        ))
                    })
                    .count()
            })
        })
        .collect();
    let acked: usize = threads.into_iter().map(|h| h.join().unwrap()).sum();
    let written = redis_input_bytes(&redis) - before;
    let kept = stored_record(&redis, &sid).unwrap().subscriptions.len();
    let levels = ["error", "warning", "notice", "critical", "alert", "debug"];
    let mut lost = 0;
    for round in 0..30u64 {
        let level = levels[round as usize % levels.len()];
        let subs: Vec<_> = (0..4u64)
            .map(|t| {
                let sid = sid.clone();
                let c = clients[1];
                std::thread::spawn(move || {
                    for i in 0..5u64 {
                        let uri = format!("test://level/{round}/{t}/{i}");
                        let id = 10_000 + round * 100 + t * 10 + i;
                        let r = session_post_to(c, Some(&sid), &subscribe(id, &uri));
                        assert!(acknowledged(&r));
                    }
                })
            })
            .collect();
        let set = json!({"jsonrpc": "2.0", "id": 9000 + round, "method": "logging/setLevel",
            "params": {"level": level}});
        assert!(acknowledged(&session_post(&one, Some(&sid), &set)));
        for h in subs {
            h.join().unwrap();
        }
        let record = stored_record(&redis, &sid).unwrap();
        if serde_json::to_value(record.log_level).unwrap() != json!(level) {
            lost += 1;
        }
    }
    let record = stored_record(&redis, &sid).unwrap();
    // The session read plus the one-field change per subscribe: bounded,
    // whatever the session already holds (not the whole record again).
    let bytes_per_subscribe_bounded = written < 1000 * 2048;
    assert_eq!(
        (
            acked,
            kept,
            bytes_per_subscribe_bounded,
            lost,
            record.subscriptions.len()
        ),
        (1000, 1000, true, 0, kept + 30 * 20),
        "(subscribes acknowledged, kept, bytes per subscribe bounded ({written} \
         bytes sent to Redis for 1,000), acknowledged setLevel lost in 30 races, \
         subscriptions kept after the races)"
    );
}

// LEGACY-13, ISSUE-23 item 5
/// A DELETE on one replica ends the session's GET stream held open by the
/// other replica, promptly (not at its next request, which never comes).
#[test]
fn a_delete_on_one_replica_ends_the_get_stream_on_the_other() {
    use std::io::{Read, Write};
    let Some(redis) = redis() else { return };
    let (one, two) = replicas(&redis);
    let sid = init_session(&one, json!({}));
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", two.port)).unwrap();
    let req = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {sid}\r\nConnection: close\r\n\r\n",
        two.port
    );
    sock.write_all(req.as_bytes()).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.contains("\r\n\r\n") && Instant::now() < deadline {
        if let Ok(n) = sock.read(&mut buf) {
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    let h = [
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", sid.as_str()),
    ];
    assert_eq!(one.raw("DELETE", "/mcp", &h, b"").status, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut ended = false;
    while Instant::now() < deadline {
        match sock.read(&mut buf) {
            Ok(0) => {
                ended = true;
                break;
            }
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(_) => {} // nothing yet
        }
    }
    assert!(
        ended,
        "the GET stream on the other replica is still open: {seen}"
    );
}

// ISSUE-23 item 6
/// With Redis, the session limits hold fleet-wide: concurrent subscribes on
/// both replicas stop at `MCP_MAX_SUBSCRIPTIONS_PER_SESSION`, each refusal
/// a -32602 naming the limit; a long URI and an oversized `clientInfo` are
/// refused too.
#[test]
fn session_limits_hold_across_replicas() {
    let Some(redis) = redis() else { return };
    let (one, two) = replicas_with(
        &redis,
        &[
            ("MCP_MAX_SUBSCRIPTIONS_PER_SESSION", "5"),
            ("MCP_MAX_SUBSCRIPTION_URI_BYTES", "64"),
            ("MCP_MAX_CLIENT_METADATA_BYTES", "1024"),
        ],
    );
    let sid = init_session(&one, json!({}));
    let clients = [one.client(), two.client()];
    let answers: Vec<Response> = (0..12u64)
        .map(|i| {
            let sid = sid.clone();
            let c = clients[(i % 2) as usize];
            std::thread::spawn(move || {
                session_post_to(c, Some(&sid), &subscribe(i, &format!("test://cap/{i}")))
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let accepted: Vec<u64> = (0..12u64)
        .filter(|i| acknowledged(&answers[*i as usize]))
        .collect();
    assert_eq!(accepted.len(), 5, "accepted {accepted:?}");
    for r in answers.iter().filter(|r| !acknowledged(r)) {
        assert_eq!((r.status, r.error_code()), (200, Some(-32602)));
        let m = r.messages()[0]["error"]["message"].to_string();
        assert!(m.contains("max_subscriptions_per_session"), "{m}");
    }
    assert_eq!(stored_record(&redis, &sid).unwrap().subscriptions.len(), 5);
    // A URI already held is fine; after an unsubscribe on the other
    // replica there is room for a new one.
    let held = format!("test://cap/{}", accepted[0]);
    assert!(acknowledged(&session_post(
        &two,
        Some(&sid),
        &subscribe(20, &held)
    )));
    let unsub = json!({"jsonrpc": "2.0", "id": 21, "method": "resources/unsubscribe",
        "params": {"uri": held}});
    assert!(acknowledged(&session_post(&two, Some(&sid), &unsub)));
    assert!(acknowledged(&session_post(
        &one,
        Some(&sid),
        &subscribe(22, "test://cap/new")
    )));
    assert!(!acknowledged(&session_post(
        &two,
        Some(&sid),
        &subscribe(23, "test://cap/newer")
    )));
    let long = format!("test://{}", "u".repeat(60));
    let r = session_post(&two, Some(&sid), &subscribe(24, &long));
    assert_eq!(r.error_code(), Some(-32602));
    assert!(
        r.messages()[0]["error"]["message"]
            .to_string()
            .contains("max_subscription_uri_bytes")
    );
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "x".repeat(2000), "version": "1"}}});
    let r = session_post(&one, None, &init);
    assert_eq!(
        r.error_code(),
        Some(-32602),
        "{:?}",
        String::from_utf8_lossy(&r.body)
    );
    assert!(
        r.json()["error"]["message"]
            .to_string()
            .contains("max_client_metadata_bytes")
    );
    assert!(r.header("mcp-session-id").is_none());
}

// ISSUE-23 item 6
/// A subscribe sends Redis its one change, not the session's whole record
/// again: 500 subscribes one after the other on one session cost a bounded
/// number of bytes each, however many the session already holds. And a
/// later request on the session does not read all 500 back.
#[test]
fn session_traffic_to_redis_does_not_grow_with_its_subscriptions() {
    let Some(redis) = redis() else { return };
    let (one, _two) = replicas(&redis);
    let sid = init_session(&one, json!({}));
    let before = redis_input_bytes(&redis);
    for i in 0..500u64 {
        let uri = format!("test://many/{i:04}/{}", "p".repeat(40));
        assert!(acknowledged(&session_post(
            &one,
            Some(&sid),
            &subscribe(i + 1, &uri)
        )));
    }
    let written = redis_input_bytes(&redis) - before;
    assert_eq!(
        stored_record(&redis, &sid).unwrap().subscriptions.len(),
        500
    );
    // ~60 bytes of URI; the read of the session and the change itself need
    // a few hundred more. Rewriting the record averaged ~15 KiB here.
    assert!(
        written < 500 * 2048,
        "{written} bytes sent to Redis for 500 subscribes"
    );
    // 50 calls on the session, on both replicas: the record they read is
    // its fixed part and log level, not the ~30 KB of subscriptions.
    let before = redis_stat(&redis, "total_net_output_bytes");
    for i in 0..50u64 {
        let s = if i % 2 == 0 { &one } else { &_two };
        let call = json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x"}}});
        assert!(acknowledged(&session_post(s, Some(&sid), &call)));
    }
    let read = redis_stat(&redis, "total_net_output_bytes") - before;
    assert!(
        read < 50 * 4096,
        "{read} bytes read from Redis for 50 calls"
    );
}
