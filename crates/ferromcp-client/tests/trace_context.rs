//! W3C trace-context injection (issue 18): the client puts `traceparent`
//! and `tracestate` into the `_meta` of outgoing requests, from
//! `RequestOptions::trace_context` or the `ClientBuilder::trace_context`
//! hook; the application's own `_meta.traceparent` wins; an invalid one from
//! the hook is not sent. The requests are read on the wire, between the
//! client and an in-memory server.

#![cfg(feature = "stdio")]

use ferromcp_client::{ClientBuilder, EraPreference, RequestOptions, TraceContext};
use ferromcp_server::{NoArgs, RequestContext, Server, tool};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TP2: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

/// Connects a client (built by `b`) to a server through a tap that records
/// every client→server line.
async fn tapped(b: ClientBuilder) -> (ferromcp_client::Client, Arc<Mutex<Vec<Value>>>) {
    let server = Server::builder("s", "1")
        .tool(tool("echo").handler(|_: NoArgs, _cx: RequestContext| async { "ok" }))
        .build()
        .unwrap_or_else(|e| panic!("build: {e}"));
    let (server_read, mut server_write) = server.serve_in_memory();
    let (client_side, tap_side) = tokio::io::duplex(64 * 1024);
    let (tap_read, mut tap_write) = tokio::io::split(tap_side);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(tap_read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(mut l) = log.lock() {
                l.push(serde_json::from_str(&line).unwrap_or(Value::Null));
            }
            if server_write.write_all(line.as_bytes()).await.is_err()
                || server_write.write_all(b"\n").await.is_err()
            {
                break;
            }
        }
    });
    tokio::spawn(async move {
        let mut r = server_read;
        let _ = tokio::io::copy(&mut r, &mut tap_write).await;
    });
    let (cr, cw) = tokio::io::split(client_side);
    let client = b
        .connect_io(cr, cw)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    (client, seen)
}

/// The `_meta` of the recorded `tools/call` requests, in order.
fn call_metas(seen: &Arc<Mutex<Vec<Value>>>) -> Vec<Value> {
    seen.lock()
        .map(|l| {
            l.iter()
                .filter(|v| v["method"] == "tools/call")
                .map(|v| v["params"]["_meta"].clone())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn traceparent_is_injected_in_both_eras() {
    for era in [EraPreference::Modern, EraPreference::Handshake] {
        let (client, seen) = tapped(ClientBuilder::new("c", "1").era(era)).await;
        let opts = RequestOptions::new()
            .trace_context(TraceContext::new(TP).with_tracestate("rojo=00f067aa0ba902b7"));
        client
            .request(
                "tools/call",
                json!({"name": "echo", "arguments": {}})
                    .as_object()
                    .cloned(),
                opts,
            )
            .await
            .unwrap_or_else(|e| panic!("{era:?}: {e}"));
        let metas = call_metas(&seen);
        let [m] = metas.as_slice() else {
            panic!("{era:?}: one tools/call: {metas:?}");
        };
        assert_eq!(m["traceparent"], TP, "{era:?}: {m}");
        assert_eq!(m["tracestate"], "rojo=00f067aa0ba902b7", "{era:?}");
        client.close().await;
    }
}

#[tokio::test]
async fn the_hook_supplies_the_context_and_the_application_meta_wins() {
    let hook_value = Arc::new(Mutex::new(Some(TraceContext::new(TP))));
    let h = hook_value.clone();
    let b = ClientBuilder::new("c", "1")
        .era(EraPreference::Modern)
        .trace_context(move || h.lock().ok().and_then(|v| v.clone()));
    let (client, seen) = tapped(b).await;
    let args = || {
        json!({"name": "echo", "arguments": {}})
            .as_object()
            .cloned()
    };
    // 1: from the hook.
    client
        .request("tools/call", args(), RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // 2: the application's own _meta traceparent wins over the hook.
    let mut own = serde_json::Map::new();
    own.insert("traceparent".into(), json!(TP2));
    client
        .request("tools/call", args(), RequestOptions::new().meta(own))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // 3: an invalid context from the hook is not sent.
    if let Ok(mut v) = hook_value.lock() {
        *v = Some(TraceContext::new("00-not-a-trace-01"));
    }
    client
        .request("tools/call", args(), RequestOptions::new())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let metas = call_metas(&seen);
    let [a, b, c] = metas.as_slice() else {
        panic!("three tools/call: {metas:?}");
    };
    assert_eq!(a["traceparent"], TP);
    assert_eq!(b["traceparent"], TP2);
    assert!(c.get("traceparent").is_none(), "{c}");
    // No context at all: no traceparent key (and the envelope unchanged).
    assert!(c.get("io.modelcontextprotocol/protocolVersion").is_some());
    client.close().await;
}

/// Spans by id: name and fields (a minimal recording subscriber).
type SpanFields = std::collections::HashMap<String, String>;

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(String, SpanFields)>>>);

struct Fields<'a>(&'a mut std::collections::HashMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
        self.0.insert(f.name().to_owned(), format!("{v:?}"));
    }
    fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
        self.0.insert(f.name().to_owned(), v.to_owned());
    }
}

impl tracing::Subscriber for Spans {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut fields = std::collections::HashMap::new();
        attrs.record(&mut Fields(&mut fields));
        let Ok(mut v) = self.0.lock() else {
            return tracing::span::Id::from_u64(u64::MAX);
        };
        v.push((attrs.metadata().name().to_owned(), fields));
        tracing::span::Id::from_u64(v.len() as u64)
    }
    fn record(&self, span: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let i = span.into_u64() as usize;
        if let Ok(mut v) = self.0.lock() {
            if let Some((_, f)) = i.checked_sub(1).and_then(|i| v.get_mut(i)) {
                values.record(&mut Fields(f));
            }
        }
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn the_client_span_records_the_request() {
    let spans = Spans::default();
    tracing::subscriber::with_default(spans.clone(), || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        rt.block_on(async {
            let (client, _) = tapped(ClientBuilder::new("c", "1").era(EraPreference::Modern)).await;
            let _ = client
                .request(
                    "tools/call",
                    json!({"name": "echo", "arguments": {}})
                        .as_object()
                        .cloned(),
                    RequestOptions::new().traceparent(TP),
                )
                .await;
            client.close().await;
        });
    });
    let v = spans.0.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_, f)) = v.iter().find(|(n, f)| {
        n == "mcp.client.request" && f.get("method").map(String::as_str) == Some("tools/call")
    }) else {
        panic!("a client span for tools/call: {v:?}");
    };
    let get = |k: &str| f.get(k).map(String::as_str);
    assert_eq!(get("name"), Some("echo"));
    assert_eq!(get("era"), Some("modern"));
    assert_eq!(get("outcome"), Some("ok"));
    assert_eq!(get("trace_id"), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    assert!(
        get("request_id").is_some() && get("duration_us").is_some(),
        "{f:?}"
    );
}
