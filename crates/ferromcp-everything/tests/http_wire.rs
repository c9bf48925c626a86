//! Wire-level tests of the Streamable HTTP endpoint against a real
//! everything-server process: every status and error path of the JSON-RPC
//! code to HTTP status table, in both eras.
// The handbook's Appendix A.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

fn call(name: &str, args: Value) -> Value {
    request(1, "tools/call", json!({"name": name, "arguments": args}))
}

#[test]
fn modern_success_is_json_with_result_type_and_server_info() {
    let s = HttpServer::start();
    let r = s.post(&call("echo", json!({"text": "hi"})), &[]);
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let v = r.json();
    assert_eq!(v["id"], json!(1));
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["content"][0]["text"], "hi");
    assert!(v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());
    // No session on the modern wire (HTTP-10).
    assert!(r.header("mcp-session-id").is_none());
}

#[test]
fn progress_commits_sse_before_the_result() {
    let s = HttpServer::start();
    let mut env = envelope();
    env["progressToken"] = json!("tok");
    let body = request(
        5,
        "tools/call",
        json!({"name": "test_tool_with_progress", "_meta": env}),
    );
    let r = s.post(&body, &[]);
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert_eq!(r.header("x-accel-buffering"), Some("no"));
    let msgs = r.messages();
    let progress: Vec<_> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3);
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "tok")
    );
    assert_eq!(msgs.last().unwrap()["id"], json!(5));
}

#[test]
fn no_log_notifications_unless_requested() {
    let s = HttpServer::start();
    let r = s.post(&call("test_logging_tool", json!({})), &[]);
    assert!(
        r.messages()
            .iter()
            .all(|m| m["method"] != "notifications/message")
    );
    let mut env = envelope();
    env["io.modelcontextprotocol/logLevel"] = json!("debug");
    let r = s.post(
        &request(
            2,
            "tools/call",
            json!({"name": "test_logging_tool", "_meta": env}),
        ),
        &[],
    );
    assert!(
        r.messages()
            .iter()
            .any(|m| m["method"] == "notifications/message")
    );
    // LOG-04: an unknown level is -32602.
    let mut env = envelope();
    env["io.modelcontextprotocol/logLevel"] = json!("loud");
    let r = s.post(
        &request(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}, "_meta": env}),
        ),
        &[],
    );
    assert_eq!((r.status, r.error_code()), (400, Some(-32602)));
}

#[test]
fn notification_is_202_without_body() {
    let s = HttpServer::start();
    let n =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    let r = s.post(&n, &[]);
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
}

#[test]
fn parse_errors_and_invalid_requests_are_400_with_null_id() {
    let s = HttpServer::start();
    let h = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    for (body, code) in [
        (&b"{not json"[..], -32700),
        (b"", -32700),
        (
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}]",
            -32600,
        ),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", -32600),
        (b"{\"jsonrpc\":\"1.0\",\"method\":\"x\"}", -32600),
        (b"\"just a string\"", -32600),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"tools/list\"}",
            -32600,
        ),
    ] {
        let r = s.raw("POST", "/mcp", &h, body);
        assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(body));
        assert_eq!(
            r.error_code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(body)
        );
        assert_eq!(r.json()["id"], Value::Null);
    }
}

#[test]
fn ladder_rejections_map_to_their_statuses() {
    let s = HttpServer::start();
    // -32602: missing envelope (LADDER-08), id echoed.
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}});
    let r = s.post(&body, &[]);
    assert_eq!((r.status, r.error_code()), (400, Some(-32602)));
    assert_eq!(r.json()["id"], json!(7));
    // -32020: header/body mismatches (LADDER-09).
    let b = call("echo", json!({"text": "x"}));
    for extra in [
        [("MCP-Protocol-Version", "2025-11-25")],
        [("Mcp-Method", "tools/list")],
        [("Mcp-Name", "other")],
    ] {
        let r = s.post(&b, &extra);
        assert_eq!((r.status, r.error_code()), (400, Some(-32020)), "{extra:?}");
    }
    // -32020: duplicated routing header (LADDER-07).
    let r = s.raw(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
            ("Mcp-Method", "tools/list"),
        ],
        request(1, "tools/list", json!({})).to_string().as_bytes(),
    );
    assert_eq!((r.status, r.error_code()), (400, Some(-32020)));
    // -32022 with data (LADDER-10).
    let mut env = envelope();
    env["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let r = s.post(
        &request(1, "tools/list", json!({"_meta": env})),
        &[("MCP-Protocol-Version", "1999-01-01")],
    );
    assert_eq!((r.status, r.error_code()), (400, Some(-32022)));
    assert_eq!(r.json()["error"]["data"]["requested"], "1999-01-01");
    assert!(
        r.json()["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    // -32021 with requiredCapabilities (META-09).
    let r = s.post(&call("test_missing_capability", json!({})), &[]);
    assert_eq!((r.status, r.error_code()), (400, Some(-32021)));
    assert_eq!(
        r.json()["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    // -32601 → 404, also for methods removed from the modern wire.
    for m in [
        "nope/nope",
        "ping",
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
    ] {
        let r = s.post(&request(1, m, json!({})), &[]);
        assert_eq!((r.status, r.error_code()), (404, Some(-32601)), "{m}");
    }
    // -32602: unknown tool, bad cursor, unknown resource with data.uri.
    let r = s.post(&call("no_such_tool", json!({})), &[]);
    assert_eq!((r.status, r.error_code()), (400, Some(-32602)));
    let r = s.post(&request(1, "tools/list", json!({"cursor": "garbage"})), &[]);
    assert_eq!((r.status, r.error_code()), (400, Some(-32602)));
    let r = s.post(
        &request(1, "resources/read", json!({"uri": "test://missing"})),
        &[],
    );
    assert_eq!((r.status, r.error_code()), (400, Some(-32602)));
    assert_eq!(r.json()["error"]["data"]["uri"], "test://missing");
}

#[test]
fn mcp_param_headers_are_validated() {
    let s = HttpServer::start();
    let b = call("test_x_mcp_header", json!({"region": "Hello"}));
    assert_eq!(s.post(&b, &[("Mcp-Param-Region", "Hello")]).status, 200);
    assert_eq!(
        s.post(&b, &[("Mcp-Param-Region", "=?base64?SGVsbG8=?=")])
            .status,
        200
    );
    for bad in ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "Goodbye"] {
        let r = s.post(&b, &[("Mcp-Param-Region", bad)]);
        assert_eq!((r.status, r.error_code()), (400, Some(-32020)), "{bad}");
    }
    let r = s.post(&b, &[]);
    assert_eq!((r.status, r.error_code()), (400, Some(-32020)));
}

#[test]
fn invalid_arguments_are_a_tool_error_not_a_protocol_error() {
    let s = HttpServer::start();
    let r = s.post(&call("echo", json!({"text": 5})), &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["isError"], json!(true));
}

#[test]
fn http_gates_403_421_405_406_413_415() {
    let s = HttpServer::start();
    let body = request(1, "tools/list", json!({})).to_string();
    let base = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut h: Vec<(&str, &str)> = base.to_vec();
        for (n, v) in extra {
            h.retain(|(k, _)| !k.eq_ignore_ascii_case(n));
            h.push((n, v));
        }
        h
    };
    assert_eq!(
        s.raw(
            "POST",
            "/mcp",
            &with(&[("Origin", "http://evil.example.com")]),
            body.as_bytes()
        )
        .status,
        403
    );
    assert_eq!(
        s.raw(
            "POST",
            "/mcp",
            &with(&[("Origin", "null")]),
            body.as_bytes()
        )
        .status,
        403
    );
    assert_eq!(
        s.raw(
            "POST",
            "/mcp",
            &with(&[("Host", "evil.example.com")]),
            body.as_bytes()
        )
        .status,
        421
    );
    assert_eq!(
        s.raw(
            "POST",
            "/mcp",
            &with(&[("Host", "localhost.evil.com:80")]),
            body.as_bytes()
        )
        .status,
        421
    );
    assert_eq!(
        s.raw(
            "POST",
            "/mcp",
            &with(&[(
                "Origin",
                &*Box::leak(format!("http://{}", s.host()).into_boxed_str())
            )]),
            body.as_bytes()
        )
        .status,
        200
    );
    let r = s.raw("GET", "/mcp", &[("Accept", "text/event-stream")], b"");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST"));
    let r = s.raw("PUT", "/mcp", &base, body.as_bytes());
    assert_eq!(r.status, 405);
    assert!(r.header("allow").is_some());
    assert_eq!(
        s.raw(
            "POST",
            "/mcp",
            &with(&[("Accept", "text/html")]),
            body.as_bytes()
        )
        .status,
        406
    );
    assert_eq!(
        s.raw(
            "POST",
            "/mcp",
            &with(&[("Content-Type", "text/plain")]),
            body.as_bytes()
        )
        .status,
        415
    );
    // 413 by Content-Length, and by streaming a chunked body past the limit.
    let huge = vec![b' '; 5 * 1024 * 1024];
    assert_eq!(s.raw("POST", "/mcp", &base, &huge).status, 413);
    let mut chunked = Vec::new();
    for _ in 0..6 {
        chunked.extend_from_slice(format!("{:x}\r\n", 1024 * 1024).as_bytes());
        chunked.extend(std::iter::repeat_n(b' ', 1024 * 1024));
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    assert_eq!(
        s.raw(
            "POST",
            "/mcp",
            &with(&[("Transfer-Encoding", "chunked")]),
            &chunked
        )
        .status,
        413
    );
    // Other paths are not the endpoint.
    assert_eq!(s.raw("POST", "/other", &base, body.as_bytes()).status, 404);
}

#[test]
fn mrtr_round_trip_and_tampered_state() {
    let s = HttpServer::start();
    let caps = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let first = request(
        1,
        "tools/call",
        json!({"name": "test_input_required_result_tampered_state", "_meta": envelope_with(caps.clone())}),
    );
    let r = s.post(&first, &[]).json();
    assert_eq!(r["result"]["resultType"], "input_required");
    assert!(
        r["result"].get("ttlMs").is_none(),
        "MRTR-12: no cache hints"
    );
    let state = r["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});
    let retry = |st: &str| {
        request(
            2,
            "tools/call",
            json!({"name": "test_input_required_result_tampered_state", "inputResponses": answer, "requestState": st, "_meta": envelope_with(caps.clone())}),
        )
    };
    let ok = s.post(&retry(&state), &[]).json();
    assert_eq!(ok["result"]["resultType"], "complete");
    let bad = s.post(&retry(&format!("{state}-TAMPERED")), &[]);
    assert_eq!((bad.status, bad.error_code()), (400, Some(-32602)));
    // State bound to the tool: replaying it on another tool fails too.
    let other = request(
        3,
        "tools/call",
        json!({"name": "test_input_required_result_elicitation", "inputResponses": answer, "requestState": state, "_meta": envelope_with(caps)}),
    );
    assert_eq!(s.post(&other, &[]).error_code(), Some(-32602));
}

#[test]
fn listen_acknowledges_then_delivers_only_requested_changes() {
    let s = HttpServer::start();
    let port = s.port;
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
        sock.set_read_timeout(Some(std::time::Duration::from_secs(10)))
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
    std::thread::sleep(std::time::Duration::from_millis(300));
    let r = s.post(&call("test_trigger_prompt_change", json!({})), &[]);
    assert_eq!(r.status, 200);
    let r = s.post(&call("test_trigger_tool_change", json!({})), &[]);
    assert_eq!(r.status, 200);
    let seen = listener.join().unwrap();
    assert!(
        seen.contains("notifications/subscriptions/acknowledged"),
        "{seen}"
    );
    assert!(
        seen.contains("\"io.modelcontextprotocol/subscriptionId\":77"),
        "{seen}"
    );
    assert!(seen.contains("notifications/tools/list_changed"), "{seen}");
    assert!(!seen.contains("prompts/list_changed"), "{seen}");
}

#[test]
fn handshake_era_sessions() {
    let s = HttpServer::start();
    let h = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = s.raw("POST", "/mcp", &h, init.to_string().as_bytes());
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    assert!(sid.len() >= 32 && sid.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    let with_sid = |extra: &[(&'static str, &str)]| {
        let mut v: Vec<(&str, String)> = h.iter().map(|(a, b)| (*a, b.to_string())).collect();
        v.push(("Mcp-Session-Id", sid.clone()));
        v.push(("MCP-Protocol-Version", "2025-11-25".into()));
        for (n, x) in extra {
            v.push((n, x.to_string()));
        }
        v
    };
    let send = |hs: Vec<(&str, String)>, body: Value| {
        let hs: Vec<(&str, &str)> = hs.iter().map(|(a, b)| (*a, b.as_str())).collect();
        s.raw("POST", "/mcp", &hs, body.to_string().as_bytes())
    };
    let r = send(
        with_sid(&[]),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(r.status, 202);
    let r = send(
        with_sid(&[]),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    assert_eq!(r.status, 200);
    let v = r.messages().pop().unwrap();
    assert!(
        v["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    assert!(
        v["result"].get("resultType").is_none(),
        "no resultType on the handshake wire"
    );
    let r = send(
        with_sid(&[]),
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    );
    assert_eq!(r.messages().pop().unwrap()["result"], json!({}));
    // Resource not found is -32002 on handshake revisions (LEGACY-08).
    let r = send(
        with_sid(&[]),
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "test://missing"}}),
    );
    assert_eq!(r.messages().pop().unwrap()["error"]["code"], json!(-32002));
    // Missing session → 400; unknown session → 404.
    let r = s.raw(
        "POST",
        "/mcp",
        &h,
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 400);
    let r = s.raw(
        "POST",
        "/mcp",
        &[h[0], h[1], ("Mcp-Session-Id", "deadbeef")],
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 404);
    // GET opens the standalone stream only with Accept: text/event-stream.
    let r = s.raw(
        "GET",
        "/mcp",
        &[("Mcp-Session-Id", &sid), ("Accept", "application/json")],
        b"",
    );
    assert_eq!(r.status, 406);
    // DELETE ends the session; afterwards 404.
    assert_eq!(
        s.raw("DELETE", "/mcp", &[("Mcp-Session-Id", &sid)], b"")
            .status,
        200
    );
    let r = send(
        with_sid(&[]),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
    );
    assert_eq!(r.status, 404);
}

// LEGACY-13
/// Issue 13 item 1: in a live handshake-era session a JSON-RPC error is
/// `200` with the error in the body, never a 4xx: deployed clients read any
/// non-2xx as a transport failure and a 404 as "session expired".
/// Every revision, JSON and SSE answers, inline and spawned
/// handlers; the session keeps working after each.
#[test]
fn handshake_era_json_rpc_errors_are_200_and_keep_the_session() {
    let s = HttpServer::start_with(&[("MCP_HANDLER_TIMEOUT_MS", "300")]);
    for version in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        for accept in ["application/json, text/event-stream", "application/json"] {
            let ctx = format!("{version} Accept: {accept}");
            let h = [("Content-Type", "application/json"), ("Accept", accept)];
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
            let r = s.raw("POST", "/mcp", &h, init.to_string().as_bytes());
            assert_eq!(r.status, 200, "{ctx}");
            let sid = r.header("mcp-session-id").unwrap().to_owned();
            let send = |body: Value| {
                let hs = [
                    h[0],
                    h[1],
                    ("Mcp-Session-Id", sid.as_str()),
                    ("MCP-Protocol-Version", version),
                ];
                s.raw("POST", "/mcp", &hs, body.to_string().as_bytes())
            };
            let cases = [
                (
                    json!({"name": "no_such_tool", "arguments": {}}),
                    "tools/call",
                    -32602,
                ),
                (json!({}), "tools/call", -32602),
                (json!({}), "no/such/method", -32601),
                (json!({}), "server/discover", -32601),
                (json!({"uri": "test://missing"}), "resources/read", -32002),
                (
                    json!({"name": "debug_panic", "arguments": {}}),
                    "tools/call",
                    -32603,
                ),
                // Runs past its first poll, on its own task, then times out.
                (
                    json!({"name": "debug_sleep", "arguments": {"ms": 60_000}}),
                    "tools/call",
                    -32603,
                ),
            ];
            for (i, (params, method, code)) in cases.into_iter().enumerate() {
                let id = 10 + i as i64;
                let r =
                    send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
                assert_eq!(r.status, 200, "{ctx} {method} {params}");
                let reply = r.messages().pop().unwrap_or_default();
                assert_eq!(
                    reply["error"]["code"],
                    json!(code),
                    "{ctx} {method}: {reply}"
                );
                assert_eq!(reply["id"], json!(id), "{ctx} {method}");
                let r = send(json!({"jsonrpc": "2.0", "id": 100 + id, "method": "tools/list"}));
                assert_eq!(r.status, 200, "{ctx}: the session survives {method}");
            }
            // A Last-Event-ID the session never issued is the client's
            // mistake, not a lost session: 400, not 404.
            let r = s.raw(
                "GET",
                "/mcp",
                &[
                    ("Mcp-Session-Id", sid.as_str()),
                    ("Accept", "text/event-stream"),
                    ("Last-Event-ID", "999999-999"),
                ],
                b"",
            );
            assert_eq!(r.status, 400, "{ctx}");
            // What the transport refuses keeps its 4xx.
            let r = s.raw(
                "POST",
                "/mcp",
                &[h[0], h[1], ("Mcp-Session-Id", "deadbeef")],
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                    .to_string()
                    .as_bytes(),
            );
            assert_eq!(r.status, 404, "{ctx}: unknown session");
        }
    }
}

// HTTP-06
/// Issue 13 item 3: the answer is in a type the client accepts (RFC 9110 §12.5.1): SSE when only `text/event-stream` is acceptable, 406
/// when neither JSON nor SSE is (`q=0` refuses a type), JSON otherwise.
#[test]
fn accept_is_honoured_on_the_way_out() {
    let s = HttpServer::start();
    let body = call("echo", json!({"text": "hi"}));
    let hs = modern_headers(&body);
    let post = |accept: &str| {
        let mut h: Vec<(&str, &str)> = hs
            .iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case("accept"))
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        h.push(("Accept", accept));
        s.raw("POST", "/mcp", &h, body.to_string().as_bytes())
    };
    let kind = |r: &Response| r.header("content-type").unwrap_or_default().to_owned();
    for (accept, status, ctype) in [
        ("text/event-stream", 200, "text/event-stream"),
        (
            "application/json;q=0, text/event-stream",
            200,
            "text/event-stream",
        ),
        ("text/*", 200, "text/event-stream"),
        ("*/*, application/json;q=0", 200, "text/event-stream"),
        ("application/json", 200, "application/json"),
        ("application/*", 200, "application/json"),
        (
            "application/json, text/event-stream",
            200,
            "application/json",
        ),
        ("*/*;q=0, application/json", 200, "application/json"),
        ("application/json;q=0, text/event-stream;q=0", 406, ""),
        ("*/*;q=0", 406, ""),
        ("text/html", 406, ""),
    ] {
        let r = post(accept);
        assert_eq!(r.status, status, "Accept: {accept}");
        if status == 200 {
            assert!(
                kind(&r).starts_with(ctype),
                "Accept: {accept}: {}",
                kind(&r)
            );
            let reply = r.messages().pop().unwrap_or_default();
            assert_eq!(
                reply["result"]["content"][0]["text"],
                json!("hi"),
                "Accept: {accept}"
            );
        }
    }
    // The handshake era answers in an acceptable type too.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let h = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let r = s.raw("POST", "/mcp", &h, init.to_string().as_bytes());
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    for (accept, status, ctype) in [
        ("text/event-stream", 200, "text/event-stream"),
        ("application/json", 200, "application/json"),
        ("application/json;q=0, text/event-stream;q=0", 406, ""),
    ] {
        let r = s.raw(
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", accept),
                ("Mcp-Session-Id", &sid),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                .to_string()
                .as_bytes(),
        );
        assert_eq!(r.status, status, "handshake Accept: {accept}");
        if status == 200 {
            assert!(
                kind(&r).starts_with(ctype),
                "handshake Accept: {accept}: {}",
                kind(&r)
            );
            let reply = r.messages().pop().unwrap_or_default();
            assert!(
                reply["result"]["tools"].is_array(),
                "handshake Accept: {accept}: {reply}"
            );
        }
    }
}

#[test]
fn handshake_era_server_requests_travel_on_the_post_stream() {
    let s = HttpServer::start();
    let h = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = s.raw("POST", "/mcp", &h, init.to_string().as_bytes());
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let port = s.port;
    let sid2 = sid.clone();
    // The call blocks until we answer the elicitation from another connection.
    let caller = std::thread::spawn(move || {
        use std::io::{BufRead, BufReader, Write};
        let mut sock = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_elicitation", "arguments": {"message": "Name?"}}}).to_string();
        let req = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: {sid2}\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        sock.write_all(req.as_bytes()).unwrap();
        let mut rd = BufReader::new(sock);
        let mut lines = Vec::new();
        let mut line = String::new();
        while rd.read_line(&mut line).unwrap_or(0) > 0 {
            lines.push(line.clone());
            if line.contains("\"id\":2") && line.contains("result") {
                break;
            }
            line.clear();
        }
        lines
    });
    // Wait for the elicitation request to reach the caller's stream; answer it.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let answer = json!({"jsonrpc": "2.0", "id": "srv-1", "result": {"action": "accept", "content": {"response": "Ada"}}});
    let r = s.raw(
        "POST",
        "/mcp",
        &[h[0], h[1], ("Mcp-Session-Id", &sid)],
        answer.to_string().as_bytes(),
    );
    assert_eq!(r.status, 202);
    let lines = caller.join().unwrap().concat();
    assert!(lines.contains("elicitation/create"), "{lines}");
    assert!(lines.contains("Ada"), "{lines}");
}

#[test]
fn batches_only_for_2025_03_26_sessions() {
    let s = HttpServer::start();
    let h = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let open = |version: &str| {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let r = s.raw("POST", "/mcp", &h, init.to_string().as_bytes());
        assert_eq!(r.json()["result"]["protocolVersion"], version);
        r.header("mcp-session-id").unwrap().to_owned()
    };
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}}
    ]);
    let old = open("2025-03-26");
    let r = s.raw(
        "POST",
        "/mcp",
        &[h[0], h[1], ("Mcp-Session-Id", &old)],
        batch.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200);
    let arr = r.json();
    let arr = arr.as_array().expect("a batch response is an array");
    assert_eq!(arr.len(), 3);
    assert!(arr[0]["result"]["tools"].is_array());
    assert_eq!(arr[1]["result"], json!({}));
    assert_eq!(
        arr[2]["error"]["code"],
        json!(-32600),
        "initialize must not be batched"
    );
    // 2025-06-18 and later forbid batches (BASE-09).
    let new = open("2025-11-25");
    let r = s.raw(
        "POST",
        "/mcp",
        &[h[0], h[1], ("Mcp-Session-Id", &new)],
        batch.to_string().as_bytes(),
    );
    assert_eq!((r.status, r.error_code()), (400, Some(-32600)));
}

// ISSUE-23 item 6
/// Without Redis a session's stored state is bounded too: subscriptions
/// stop at `MCP_MAX_SUBSCRIPTIONS_PER_SESSION` (a -32602 naming the limit;
/// a URI already held is still fine), a URI longer than
/// `MCP_MAX_SUBSCRIPTION_URI_BYTES` and `capabilities` + `clientInfo` over
/// `MCP_MAX_CLIENT_METADATA_BYTES` are refused.
#[test]
fn session_state_is_limited() {
    let s = HttpServer::start_with(&[
        ("MCP_MAX_SUBSCRIPTIONS_PER_SESSION", "3"),
        ("MCP_MAX_SUBSCRIPTION_URI_BYTES", "64"),
        ("MCP_MAX_CLIENT_METADATA_BYTES", "1024"),
    ]);
    let post = |sid: Option<&str>, body: Value| {
        let mut h = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        if let Some(sid) = sid {
            h.push(("Mcp-Session-Id", sid));
        }
        s.raw("POST", "/mcp", &h, body.to_string().as_bytes())
    };
    let init = |name: String| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": name, "version": "1"}}})
    };
    let r = post(None, init("x".repeat(2000)));
    assert_eq!(r.error_code(), Some(-32602), "{:?}", r.json());
    assert!(
        r.json()["error"]["message"]
            .to_string()
            .contains("max_client_metadata_bytes")
    );
    assert!(r.header("mcp-session-id").is_none());
    let r = post(None, init("t".into()));
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let sub = |id: u64, uri: &str| {
        post(
            Some(&sid),
            json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": uri}}),
        )
    };
    for i in 0..3 {
        assert!(sub(10 + i, &format!("test://cap/{i}")).messages()[0]["result"].is_object());
    }
    let r = sub(20, "test://cap/3");
    assert_eq!((r.status, r.error_code()), (200, Some(-32602)));
    assert!(
        r.messages()[0]["error"]["message"]
            .to_string()
            .contains("max_subscriptions_per_session")
    );
    assert!(sub(21, "test://cap/0").messages()[0]["result"].is_object());
    let r = sub(22, &format!("test://{}", "u".repeat(60)));
    assert_eq!(r.error_code(), Some(-32602));
    assert!(
        r.messages()[0]["error"]["message"]
            .to_string()
            .contains("max_subscription_uri_bytes")
    );
}
