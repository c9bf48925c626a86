//! The pure hot path of a modern request: decode a typical `tools/call`,
//! run the validation ladder (with HTTP headers), decode the typed params,
//! and encode the response. Run with
//! `cargo bench -p ferromcp-protocol --bench tools_call`.

use criterion::{Criterion, criterion_group, criterion_main};
use ferromcp_protocol::jsonrpc::{Message, OutgoingResult, decode_message, to_vec};
use ferromcp_protocol::ladder::{Verdict, classify_inbound_request};
use ferromcp_protocol::method::ClientRequest;
use ferromcp_protocol::types::{CallToolResult, McpResult};
use ferromcp_protocol::{ProtocolVersion, types::Implementation};
use std::hint::black_box;

const BODY: &[u8] = br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}}}}"#;

fn headers() -> Vec<(&'static str, &'static [u8])> {
    vec![
        ("host", b"127.0.0.1:8080"),
        ("content-type", b"application/json"),
        ("accept", b"application/json, text/event-stream"),
        ("mcp-protocol-version", b"2026-07-28"),
        ("mcp-method", b"tools/call"),
        ("mcp-name", b"echo"),
        ("content-length", b"300"),
    ]
}

fn full_path(c: &mut Criterion) {
    let headers = headers();
    let supported = [ProtocolVersion::V2026_07_28];
    let info = Implementation::new("bench-server", "1.0.0");
    c.bench_function("tools_call: decode + ladder + params + encode", |b| {
        b.iter(|| {
            let msg = decode_message(black_box(BODY)).ok();
            let Some(msg @ Message::Request(_)) = msg else {
                return 0;
            };
            let Ok(Verdict::Request(route)) =
                classify_inbound_request(&msg, Some(&headers), &supported, None)
            else {
                return 0;
            };
            let Message::Request(req) = &msg else {
                return 0;
            };
            let Ok(ClientRequest::CallTool(p)) = ClientRequest::decode(&req.method, req.params)
            else {
                return 0;
            };
            let text = p
                .arguments
                .as_ref()
                .and_then(|a| a.get("text"))
                .and_then(|t| t.as_str())
                .unwrap_or_default()
                .to_owned();
            let mut result = CallToolResult::text(text);
            result.ensure_result_type();
            result.stamp_server_info(&info);
            let out = to_vec(&OutgoingResult::new(&route.id, &result));
            black_box(out.len())
        })
    });
    c.bench_function("tools_call: decode_message only", |b| {
        b.iter(|| black_box(decode_message(black_box(BODY)).is_ok()))
    });
}

criterion_group!(benches, full_path);
criterion_main!(benches);
