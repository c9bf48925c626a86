//! Helpers shared by the server's integration tests.
#![allow(clippy::unwrap_used, dead_code)]

use serde_json::Value;

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
