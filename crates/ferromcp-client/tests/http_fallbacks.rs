//! Servers that are not our everything-server, each a minimal hand-written
//! one on a loopback port:
//! - a 2024-11-05 HTTP+SSE server: POSTs on its URL are refused
//!   (405), so the client GETs the URL, waits for the `endpoint` event,
//!   POSTs messages there and reads every answer from the SSE stream;
//! - a redirecting endpoint (redirects are never followed);
//! - a modern-only server without `server/discover`;
//! - odd HTTP statuses;
//! - a handshake-era Streamable HTTP server (the per-process verdict memo).
// ERA-10, VER-06, HTTP-19, HTTP-20, ERR-07, VER-05

use ferromcp_client::{ClientBuilder, Era, ProtocolVersion, TransportKind};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Mutex, mpsc};

struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

async fn read_request(stream: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    stream.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        stream.read_line(&mut h).await.ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            if n.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; len];
    stream.read_exact(&mut body).await.ok()?;
    Some(Request { method, path, body })
}

fn answer(req: &Value) -> Option<Value> {
    let id = req.get("id")?.clone();
    let result = match req.get("method")?.as_str()? {
        "initialize" => json!({
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy-sse", "version": "1.0.0"}
        }),
        "tools/list" => {
            json!({"tools": [{"name": "legacy_tool", "inputSchema": {"type": "object"}}]})
        }
        "tools/call" => json!({"content": [{"type": "text", "text": "legacy ok"}]}),
        _ => json!({}),
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// Serves one connection; SSE frames for the open stream go through `sse`.
async fn serve(
    stream: TcpStream,
    sse: Arc<Mutex<Option<mpsc::UnboundedSender<String>>>>,
    log: mpsc::UnboundedSender<String>,
) {
    let mut stream = BufReader::new(stream);
    let Some(req) = read_request(&mut stream).await else {
        return;
    };
    let _ = log.send(format!("{} {}", req.method, req.path));
    let mut stream = stream.into_inner();
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/mcp") => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n")
                .await;
            let _ = stream
                .write_all(b"event: endpoint\r\ndata: /messages?sessionId=abc\r\n\r\n")
                .await;
            let (tx, mut rx) = mpsc::unbounded_channel();
            *sse.lock().await = Some(tx);
            while let Some(frame) = rx.recv().await {
                if stream.write_all(frame.as_bytes()).await.is_err() {
                    break;
                }
            }
        }
        ("POST", "/messages?sessionId=abc") => {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            if let Some(resp) = answer(&msg) {
                if let Some(tx) = sse.lock().await.as_ref() {
                    let _ = tx.send(format!("event: message\ndata: {resp}\n\n"));
                }
            }
        }
        ("POST", "/redirect") => {
            let _ = stream
                .write_all(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.2:1/mcp\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .await;
        }
        _ => {
            let _ = stream
                .write_all(b"HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn falls_back_to_http_sse_after_405() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let sse = Arc::new(Mutex::new(None));
    let (log_tx, mut log_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve(s, sse.clone(), log_tx.clone()));
        }
    });
    let client = ClientBuilder::new("fallback-test", "0.0.1")
        .connect_url(&url)
        .await
        .unwrap();
    assert_eq!(client.transport_kind(), TransportKind::HttpSse);
    assert_eq!(client.era(), Era::Handshake);
    assert_eq!(client.protocol_version(), ProtocolVersion::V2024_11_05);
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools[0].name, "legacy_tool");
    let r = client.call_tool("legacy_tool", None).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("legacy ok"));
    client.close().await;
    let mut seen = Vec::new();
    while let Ok(l) = log_rx.try_recv() {
        seen.push(l);
    }
    // The modern probe and the handshake POST were refused before the GET.
    assert_eq!(seen[0], "POST /mcp");
    assert!(seen.iter().any(|l| l == "GET /mcp"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_never_followed() {
    // Credentials never follow a redirect to another origin: the client
    // does not follow redirects at all.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/redirect", listener.local_addr().unwrap());
    let (log_tx, mut log_rx) = mpsc::unbounded_channel();
    let sse = Arc::new(Mutex::new(None));
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve(s, sse.clone(), log_tx.clone()));
        }
    });
    let e = ClientBuilder::new("redirect-test", "0.0.1")
        .era(ferromcp_client::EraPreference::Modern)
        .bearer_token("secret")
        .connect_url(&url)
        .await
        .unwrap_err();
    assert!(e.is_transport() || e.is_negotiation(), "{e}");
    while let Ok(l) = log_rx.try_recv() {
        assert_eq!(l, "POST /redirect");
    }
}

// VER-06
/// A modern-only server whose `server/discover` is missing: it answers
/// `initialize` with -32022 naming 2026-07-28.
async fn serve_modern_only(stream: TcpStream) {
    let mut stream = BufReader::new(stream);
    let Some(req) = read_request(&mut stream).await else {
        return;
    };
    let mut stream = stream.into_inner();
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let (status, body) = match msg.get("method").and_then(Value::as_str) {
        Some("server/discover") => (
            "404 Not Found",
            json!({"jsonrpc":"2.0","id":id,"error":{"code":-32601,"message":"Method not found"}}),
        ),
        Some("initialize") => (
            "400 Bad Request",
            json!({"jsonrpc":"2.0","id":id,"error":{"code":-32022,"message":"Unsupported protocol version",
                "data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}),
        ),
        _ => (
            "200 OK",
            json!({"jsonrpc":"2.0","id":id,"result":{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}}),
        ),
    };
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_refused_with_a_modern_version_goes_modern() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve_modern_only(s));
        }
    });
    let client = ClientBuilder::new("modern-only-test", "0.0.1")
        .connect_url(&url)
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Modern);
    assert!(client.list_tools().await.unwrap().is_empty());
    client.close().await;
}

// HTTP-19, HTTP-20
/// Answers `tools/list` with 202 and `tools/call` with a 400
/// carrying a JSON-RPC error with `id: null`; anything else with a
/// 503 and a plain body.
async fn serve_odd_statuses(stream: TcpStream) {
    let mut stream = BufReader::new(stream);
    let Some(req) = read_request(&mut stream).await else {
        return;
    };
    let mut stream = stream.into_inner();
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let (status, ctype, body) = match msg.get("method").and_then(Value::as_str) {
        Some("tools/list") => ("202 Accepted", "application/json", String::new()),
        Some("tools/call") => (
            "400 Bad Request",
            "application/json",
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Unknown tool"}})
                .to_string(),
        ),
        // PAGE-02: "" is a valid cursor; this server never ends the list.
        Some("resources/list") => (
            "200 OK",
            "application/json",
            json!({"jsonrpc":"2.0","id":msg.get("id"),"result":{"resultType":"complete","resources":[],
                "nextCursor":"","ttlMs":0,"cacheScope":"private"}})
            .to_string(),
        ),
        _ => ("503 Service Unavailable", "text/plain", "busy".to_owned()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_codes_map_to_errors() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve_odd_statuses(s));
        }
    });
    let client = ClientBuilder::new("status-test", "0.0.1")
        .era(ferromcp_client::EraPreference::ModernNoProbe)
        .limits(ferromcp_client::Limits {
            max_list_pages: 3,
            ..ferromcp_client::Limits::default()
        })
        .connect_url(&url)
        .await
        .unwrap();
    // A list that never ends is cut off, not followed forever.
    let e = client.list_resources().await.unwrap_err();
    assert!(e.is_invalid_response(), "{e}");
    assert_eq!(
        client
            .list_resources_page(Some(String::new()))
            .await
            .unwrap()
            .next_cursor
            .as_deref(),
        Some("")
    );
    // HTTP-19: a 202 to a request is an error for it, not a hang.
    let e = client.list_tools().await.unwrap_err();
    assert!(e.is_invalid_response(), "{e}");
    // HTTP-20: the JSON-RPC error in a non-2xx body is the peer's error.
    let e = client.call_tool("x", None).await.unwrap_err();
    assert_eq!(e.rpc_error().map(|o| o.code.0), Some(-32602), "{e}");
    // Anything else: a local transport error carrying the status (ERR-07).
    let e = client.list_prompts().await.unwrap_err();
    assert!(e.is_transport() && e.is_local(), "{e}");
    assert_eq!(e.status(), Some(503));
    client.close().await;
}

/// A handshake-era Streamable HTTP server: `server/discover` before
/// `initialize` is refused like an unknown session (-32000, 400).
async fn serve_handshake_only(stream: TcpStream, log: mpsc::UnboundedSender<String>) {
    let mut stream = BufReader::new(stream);
    let Some(req) = read_request(&mut stream).await else {
        return;
    };
    let mut stream = stream.into_inner();
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let method = msg
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let _ = log.send(format!("{} {method}", req.method));
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let (status, body) = match (req.method.as_str(), method.as_str()) {
        ("GET", _) | ("DELETE", _) => ("405 Method Not Allowed", String::new()),
        (_, "server/discover") => (
            "400 Bad Request",
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}).to_string(),
        ),
        (_, "initialize") => (
            "200 OK",
            json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},
                "serverInfo":{"name":"handshake-only","version":"1"}}}).to_string(),
        ),
        (_, "notifications/initialized") => ("202 Accepted", String::new()),
        _ => ("200 OK", json!({"jsonrpc":"2.0","id":id,"result":{"tools":[]}}).to_string()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_verdict_is_remembered_per_endpoint() {
    // VER-05: the second connection to a handshake-era endpoint skips the probe.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (log_tx, mut log_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve_handshake_only(s, log_tx.clone()));
        }
    });
    for _ in 0..2 {
        let client = ClientBuilder::new("memo-test", "0.0.1")
            .connect_url(&url)
            .await
            .unwrap();
        assert_eq!(client.era(), Era::Handshake);
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_06_18);
        client.list_tools().await.unwrap();
        client.close().await;
    }
    let mut probes = 0;
    let mut deletes = 0;
    while let Ok(l) = log_rx.try_recv() {
        probes += usize::from(l == "POST server/discover");
        deletes += usize::from(l.starts_with("DELETE"));
    }
    assert_eq!(probes, 1);
    assert_eq!(deletes, 2, "close() ends the session (LEGACY-14)");
    // Dropped without close(): the session is still ended, best effort.
    let client = ClientBuilder::new("memo-test", "0.0.1")
        .connect_url(&url)
        .await
        .unwrap();
    drop(client);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        if let Ok(l) = log_rx.try_recv() {
            if l.starts_with("DELETE") {
                break;
            }
            continue;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no DELETE after drop"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// What the "drops a push with no stream open" server shares between its
/// connections.
#[derive(Default)]
struct PushState {
    get: Mutex<Option<mpsc::UnboundedSender<String>>>,
    answer: Mutex<Option<tokio::sync::oneshot::Sender<Value>>>,
    dropped: std::sync::atomic::AtomicUsize,
}

/// A handshake-era server that behaves like the TypeScript SDK's when a
/// tool asks for input without a related request: the `elicitation/create`
/// goes to the standalone GET stream, and is dropped when none is open.
/// Its GET is answered after `get_delay` (a loaded server).
async fn serve_push_on_get(stream: TcpStream, st: Arc<PushState>, get_delay: std::time::Duration) {
    let mut stream = BufReader::new(stream);
    let Some(req) = read_request(&mut stream).await else {
        return;
    };
    let mut stream = stream.into_inner();
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let json = |status: &str, body: String| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    const SSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nMcp-Session-Id: s-1\r\nConnection: close\r\n\r\n";
    match (req.method.as_str(), method) {
        ("GET", _) => {
            tokio::time::sleep(get_delay).await;
            if stream.write_all(SSE).await.is_err() {
                return;
            }
            let (tx, mut rx) = mpsc::unbounded_channel();
            *st.get.lock().await = Some(tx);
            while let Some(frame) = rx.recv().await {
                if stream.write_all(frame.as_bytes()).await.is_err() {
                    break;
                }
            }
        }
        ("DELETE", _) => {
            let _ = stream
                .write_all(json("200 OK", String::new()).as_bytes())
                .await;
        }
        (_, "server/discover") => {
            let body = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}});
            let _ = stream
                .write_all(json("400 Bad Request", body.to_string()).as_bytes())
                .await;
        }
        (_, "initialize") => {
            let body = json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":"2025-11-25",
                "capabilities":{"tools":{}},"serverInfo":{"name":"push-on-get","version":"1"}}});
            let _ = stream
                .write_all(json("200 OK", body.to_string()).as_bytes())
                .await;
        }
        (_, "tools/call") => {
            if stream.write_all(SSE).await.is_err() {
                return;
            }
            let (tx, rx) = tokio::sync::oneshot::channel();
            *st.answer.lock().await = Some(tx);
            let push = json!({"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{
                "message":"name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}});
            match st.get.lock().await.as_ref() {
                Some(get) => {
                    let _ = get.send(format!("event: message\ndata: {push}\n\n"));
                }
                None => {
                    st.dropped.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
            let text = match tokio::time::timeout(std::time::Duration::from_secs(10), rx).await {
                Ok(Ok(answer)) => answer.to_string(),
                _ => return,
            };
            let result =
                json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":text}]}});
            let _ = stream
                .write_all(format!("event: message\ndata: {result}\n\n").as_bytes())
                .await;
        }
        _ => {
            // The client's answer to the pushed request, or a notification.
            if msg.get("id") == Some(&json!("e1")) {
                if let Some(tx) = st.answer.lock().await.take() {
                    let _ = tx.send(msg.get("result").cloned().unwrap_or(Value::Null));
                }
            }
            let _ = stream
                .write_all(json("202 Accepted", String::new()).as_bytes())
                .await;
        }
    }
}

// LEGACY-15: a request the server pushes on the GET stream right after the
// handshake reaches the client even when the server is slow to answer the
// GET (the conformance flake of elicitation-sep1034-client-defaults: the
// tools/call overtook the GET and the TypeScript server dropped the push).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_pushed_on_the_get_stream_right_after_connect_is_not_lost() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let st = Arc::new(PushState::default());
    let server_state = st.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(serve_push_on_get(
                s,
                server_state.clone(),
                std::time::Duration::from_millis(300),
            ));
        }
    });
    let client = ClientBuilder::new("push-test", "0.0.1")
        .request_timeout(std::time::Duration::from_secs(5))
        .on_elicitation(|_| async {
            let mut content = std::collections::BTreeMap::new();
            content.insert(
                "name".to_owned(),
                ferromcp_client::protocol::types::ElicitValue::from("Ada"),
            );
            Ok(ferromcp_client::protocol::types::ElicitResult::accept(
                content,
            ))
        })
        .connect_url(&url)
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Handshake);
    let r = client.call_tool("ask", None).await;
    assert_eq!(
        st.dropped.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the push found no GET stream open"
    );
    let r = r.unwrap();
    let text = serde_json::to_string(&r.content).unwrap();
    assert!(text.contains("Ada") && text.contains("accept"), "{text}");
    client.close().await;
}
