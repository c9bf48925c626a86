//! Issue 30 item 1: the fields of a derived tool input schema and of a
//! typed elicitation form arrive on the wire in the struct's declaration
//! order, in a program where `serde_json`'s `Map` is sorted (no
//! `preserve_order` anywhere in the graph; `only_if_maps_are_sorted`
//! checks that, so the test cannot pass vacuously).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_server::transport::http::{HttpConfig, McpService, serve_listener};
use ferromcp_server::{Elicited, HandlerError, RequestContext, Server, tool};
use serde_json::json;
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Declared out of alphabetical order (alphabetical: age, name,
/// newsletter, plan).
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Signup {
    name: String,
    age: u8,
    newsletter: bool,
    plan: Option<String>,
}

fn server() -> Server {
    Server::builder("order", "1.0.0")
        .tool(
            tool("signup").handler(|a: Signup, cx: RequestContext| async move {
                Ok::<_, HandlerError>(match cx.elicit_form::<Signup>("form", "Sign up")? {
                    Elicited::Accepted(s) => format!("{} {}", a.name, s.name),
                    _ => "no".to_owned(),
                })
            }),
        )
        .build()
        .expect("server")
}

/// One JSON-RPC request over a real TCP connection; the raw response text.
async fn post(addr: SocketAddr, method: &str, params: serde_json::Value) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let name = params.get("name").and_then(|n| n.as_str());
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\
         content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         mcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\ncontent-length: {}\r\n",
        body.len()
    );
    if let Some(n) = name {
        head.push_str(&format!("mcp-name: {n}\r\n"));
    }
    let mut conn = tokio::net::TcpStream::connect(addr).await.expect("connect");
    conn.write_all(format!("{head}\r\n{body}").as_bytes())
        .await
        .expect("write");
    let mut out = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        conn.read_to_end(&mut out),
    )
    .await
    .expect("answered in time")
    .expect("read");
    String::from_utf8(out).expect("utf-8")
}

fn meta() -> serde_json::Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    })
}

/// Positions of `"name"`, `"age"`, `"newsletter"`, `"plan"` after `anchor`.
fn positions(text: &str, anchor: &str) -> Vec<usize> {
    let from = text
        .find(anchor)
        .unwrap_or_else(|| panic!("no {anchor} in {text}"));
    let rest = &text[from..];
    ["name", "age", "newsletter", "plan"]
        .iter()
        .map(|k| {
            rest.find(&format!("\"{k}\":"))
                .unwrap_or_else(|| panic!("no {k} in {rest}"))
        })
        .collect()
}

fn only_if_maps_are_sorted() {
    // The condition the issue describes: without `preserve_order` a
    // `serde_json::Map` sorts its keys.
    assert_eq!(
        json!({"b": 1, "a": 2}).to_string(),
        r#"{"a":2,"b":1}"#,
        "serde_json/preserve_order is on in this build: the test would prove nothing"
    );
}

// TOOL-03, ELICIT-04
#[tokio::test]
async fn schema_and_form_fields_arrive_in_declaration_order() {
    only_if_maps_are_sorted();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(serve_listener(
        McpService::new(server(), HttpConfig::default()),
        listener,
        async move {
            let _ = stopped.await;
        },
    ));

    let list = post(addr, "tools/list", json!({"_meta": meta()})).await;
    let p = positions(&list, "\"inputSchema\"");
    assert!(p.windows(2).all(|w| w[0] < w[1]), "{list}");

    let call = post(
        addr,
        "tools/call",
        json!({"name": "signup", "arguments": {"name": "a", "age": 1, "newsletter": true},
               "_meta": meta()}),
    )
    .await;
    assert!(call.contains("input_required"), "{call}");
    let p = positions(&call, "\"requestedSchema\"");
    assert!(p.windows(2).all(|w| w[0] < w[1]), "{call}");

    let _ = stop.send(());
    serving.await.expect("join").expect("served");
}

/// Reads newline-delimited messages until one contains `needle`.
async fn read_until<R: tokio::io::AsyncBufRead + Unpin>(lines: &mut R, needle: &str) -> String {
    use tokio::io::AsyncBufReadExt;
    loop {
        let mut line = String::new();
        let n = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            lines.read_line(&mut line),
        )
        .await
        .expect("a message in time")
        .expect("read");
        assert!(n > 0, "the server closed before sending {needle}");
        if line.contains(needle) {
            return line;
        }
    }
}

// ELICIT-04, LEGACY-22: the handshake era pushes `elicitation/create` to
// the client; its form keeps the declaration order too (it was built
// through a sorted `Value` before).
#[tokio::test]
async fn a_pushed_handshake_form_keeps_declaration_order() {
    only_if_maps_are_sorted();
    let (read, mut write) = server().serve_in_memory();
    let mut lines = tokio::io::BufReader::new(read);
    let send = |v: serde_json::Value| format!("{v}\n");
    write
        .write_all(
            send(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "t", "version": "1"}}}),
            )
            .as_bytes(),
        )
        .await
        .expect("write");
    read_until(&mut lines, "\"protocolVersion\"").await;
    write
        .write_all(
            send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).as_bytes(),
        )
        .await
        .expect("write");
    write
        .write_all(
            send(
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "signup", "arguments": {"name": "a", "age": 1, "newsletter": true}}}),
            )
            .as_bytes(),
        )
        .await
        .expect("write");
    let pushed = read_until(&mut lines, "elicitation/create").await;
    let p = positions(&pushed, "\"requestedSchema\"");
    assert!(p.windows(2).all(|w| w[0] < w[1]), "{pushed}");
}
