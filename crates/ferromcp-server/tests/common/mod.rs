//! Helpers shared by the server's integration tests.
#![allow(clippy::unwrap_used, dead_code)]

use ferromcp_server::Server;
use ferromcp_server::transport::http::{McpBody, McpService};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A handshake-era POST to `/mcp` (with the session's id and the
/// 2025-11-25 version header when `session` is given).
pub fn handshake_post(
    body: Value,
    session: Option<&str>,
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut req = http::Request::builder()
        .method(http::Method::POST)
        .uri("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    req.body(http_body_util::Full::new(bytes::Bytes::from(
        body.to_string(),
    )))
    .unwrap()
}

/// Sends `lines` over the stdio wire, returns the answers to requests.
pub async fn stdio(server: Server, lines: &[Value], answers: usize) -> Vec<Value> {
    let (read, mut write) = server.serve_in_memory();
    let mut input = String::new();
    for l in lines {
        input.push_str(&l.to_string());
        input.push('\n');
    }
    write.write_all(input.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(read).lines();
    let mut out = Vec::new();
    while out.len() < answers {
        let line = tokio::time::timeout(std::time::Duration::from_secs(10), reader.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("a line");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v.get("id").is_some() {
            out.push(v);
        }
    }
    out
}

/// The JSON-RPC message of an HTTP answer: the last SSE `data:` event
/// carrying an id, else the whole body as JSON (`Null` when neither).
pub async fn message_of(resp: http::Response<McpBody>) -> Value {
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let text = String::from_utf8_lossy(&body);
    text.lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or_else(|| serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Opens a handshake-era session (`initialize` at 2025-11-25): its
/// `Mcp-Session-Id` and the `initialize` answer.
pub async fn handshake_session(svc: &McpService) -> (String, Value) {
    let init = svc
        .handle(handshake_post(
            serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"t","version":"1"}}}),
            None,
        ))
        .await;
    let session = init
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session")
        .to_owned();
    (session, message_of(init).await)
}
