//! Helpers shared by the server's integration tests.
#![allow(clippy::unwrap_used, dead_code)]

use ferromcp_server::Server;
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
