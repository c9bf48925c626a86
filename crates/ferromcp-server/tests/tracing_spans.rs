//! The per-request `mcp.request` span (issue 18): its fields for a
//! `tools/call` in both eras, the continued W3C trace context, and the
//! handler's own events nesting under it. A small recording subscriber
//! stands in for `tracing-subscriber`.
#![cfg(feature = "stdio")]

use ferromcp_server::{NoArgs, RequestContext, Server, tool};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One recorded span: its name and its fields as strings.
#[derive(Clone, Debug, Default)]
struct SpanRec {
    name: String,
    fields: HashMap<String, String>,
}

/// Spans by id, and for each event its message and the span it was in.
#[derive(Default)]
struct Recorded {
    spans: HashMap<u64, SpanRec>,
    events: Vec<(String, Option<u64>)>,
}

#[derive(Clone, Default)]
struct Recorder {
    next: Arc<AtomicU64>,
    rec: Arc<Mutex<Recorded>>,
    /// The entered spans on this (single) thread.
    stack: Arc<Mutex<Vec<u64>>>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut s = SpanRec {
            name: attrs.metadata().name().to_owned(),
            ..SpanRec::default()
        };
        attrs.record(&mut Fields(&mut s.fields));
        if let Ok(mut r) = self.rec.lock() {
            r.spans.insert(id, s);
        }
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Ok(mut r) = self.rec.lock() {
            if let Some(s) = r.spans.get_mut(&span.into_u64()) {
                values.record(&mut Fields(&mut s.fields));
            }
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut f = HashMap::new();
        event.record(&mut Fields(&mut f));
        let parent = self.stack.lock().ok().and_then(|s| s.last().copied());
        if let Ok(mut r) = self.rec.lock() {
            r.events
                .push((f.remove("message").unwrap_or_default(), parent));
        }
    }
    fn enter(&self, span: &Id) {
        if let Ok(mut s) = self.stack.lock() {
            s.push(span.into_u64());
        }
    }
    fn exit(&self, span: &Id) {
        if let Ok(mut s) = self.stack.lock() {
            if let Some(i) = s.iter().rposition(|x| *x == span.into_u64()) {
                s.remove(i);
            }
        }
    }
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn server() -> Server {
    Server::builder("t", "1")
        .tool(
            tool("echo").handler(|_: NoArgs, _cx: RequestContext| async {
                tracing::info!("inside the handler");
                "ok"
            }),
        )
        .tool(
            tool("refuse")
                .handler(|_: NoArgs, _cx: RequestContext| async { Err::<String, _>("not today") }),
        )
        .build()
        .unwrap_or_else(|e| panic!("build: {e}"))
}

/// Sends `lines` to a fresh in-memory server and reads `answers` lines.
async fn exchange(lines: &[String], answers: usize) -> Vec<serde_json::Value> {
    let (read, mut write) = server().serve_in_memory();
    for l in lines {
        write.write_all(l.as_bytes()).await.ok();
        write.write_all(b"\n").await.ok();
    }
    let mut r = BufReader::new(read).lines();
    let mut out = Vec::new();
    for _ in 0..answers {
        let line = tokio::time::timeout(Duration::from_secs(5), r.next_line())
            .await
            .ok()
            .and_then(Result::ok)
            .flatten()
            .unwrap_or_default();
        out.push(serde_json::from_str(&line).unwrap_or_default());
    }
    out
}

/// Runs `lines` under the recorder; returns the `mcp.request` spans and
/// the recording.
fn record(lines: Vec<String>, answers: usize) -> (Vec<SpanRec>, Recorder) {
    let rec = Recorder::default();
    tracing::subscriber::with_default(rec.clone(), || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let out = rt.block_on(exchange(&lines, answers));
        assert!(out.iter().all(|v| v.get("result").is_some()), "{out:?}");
    });
    let spans = rec
        .rec
        .lock()
        .map(|r| {
            let mut v: Vec<_> = r
                .spans
                .iter()
                .filter(|(_, s)| s.name == "mcp.request")
                .collect();
            v.sort_by_key(|(id, _)| **id);
            v.into_iter().map(|(_, s)| s.clone()).collect()
        })
        .unwrap_or_default();
    (spans, rec)
}

fn modern_call(id: u64, extra_meta: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}{extra_meta}}}}}}}"#
    )
}

fn field<'a>(s: &'a SpanRec, k: &str) -> Option<&'a str> {
    s.fields.get(k).map(String::as_str)
}

#[test]
fn modern_tools_call_span_continues_the_traceparent() {
    let meta = format!(r#","traceparent":"{TRACEPARENT}","tracestate":"rojo=00f067aa0ba902b7""#);
    let (spans, rec) = record(vec![modern_call(7, &meta)], 1);
    let [s] = spans.as_slice() else {
        panic!("one request span: {spans:?}");
    };
    assert_eq!(field(s, "method"), Some("tools/call"));
    assert_eq!(field(s, "name"), Some("echo"));
    assert_eq!(field(s, "era"), Some("modern"));
    assert_eq!(field(s, "protocol_version"), Some("2026-07-28"));
    assert_eq!(field(s, "request_id"), Some("7"));
    assert_eq!(field(s, "outcome"), Some("ok"));
    assert!(field(s, "duration_us").is_some(), "{s:?}");
    assert_eq!(
        field(s, "trace_id"),
        Some("4bf92f3577b34da6a3ce929d0e0e4736")
    );
    assert_eq!(field(s, "parent_span_id"), Some("00f067aa0ba902b7"));
    assert_eq!(field(s, "sampled"), Some("true"));
    assert_eq!(field(s, "tracestate"), Some("rojo=00f067aa0ba902b7"));
    // The handler's event nests under the request span.
    let r = rec.rec.lock().unwrap_or_else(|e| e.into_inner());
    let Some((_, Some(parent))) = r.events.iter().find(|(m, _)| m == "inside the handler") else {
        panic!("handler event inside a span: {:?}", r.events);
    };
    assert_eq!(
        r.spans.get(parent).map(|s| s.name.as_str()),
        Some("mcp.request")
    );
}

#[test]
fn handshake_tools_call_span_and_an_invalid_traceparent_is_ignored() {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let call = r#"{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"traceparent":"00-zz-not-valid"}}}"#;
    let call2 = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"echo","arguments":{{}},"_meta":{{"traceparent":"{TRACEPARENT}"}}}}}}"#
    );
    let (spans, _) = record(vec![init.into(), initialized.into(), call.into(), call2], 3);
    let calls: Vec<_> = spans
        .iter()
        .filter(|s| field(s, "method") == Some("tools/call"))
        .collect();
    let [bad, good] = calls.as_slice() else {
        panic!("two tools/call spans: {spans:?}");
    };
    for s in [bad, good] {
        assert_eq!(field(s, "era"), Some("handshake"));
        assert_eq!(field(s, "name"), Some("echo"));
        assert_eq!(field(s, "outcome"), Some("ok"));
    }
    // A string id keeps its JSON quotes: "1" and 1 stay apart.
    assert_eq!(field(bad, "request_id"), Some("\"two\""));
    assert_eq!(field(bad, "trace_id"), None, "invalid traceparent ignored");
    assert_eq!(
        field(good, "trace_id"),
        Some("4bf92f3577b34da6a3ce929d0e0e4736")
    );
}

#[test]
fn an_error_outcome_records_its_code() {
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"missing","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let rec = Recorder::default();
    tracing::subscriber::with_default(rec.clone(), || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let out = rt.block_on(exchange(&[call.to_owned()], 1));
        assert!(out[0].get("error").is_some(), "{out:?}");
    });
    let r = rec.rec.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = r.spans.values().find(|s| s.name == "mcp.request") else {
        panic!("a request span");
    };
    assert_eq!(field(s, "outcome"), Some("error"));
    assert_eq!(field(s, "error_code"), Some("-32602"));
    assert_eq!(field(s, "name"), Some("missing"));
}

// Issue 30 item 7: a tool result with `isError: true` is not an `ok`.
#[test]
fn an_is_error_tool_result_is_a_tool_error_outcome() {
    let call = modern_call(1, "").replace("\"echo\"", "\"refuse\"");
    let (spans, _) = record(vec![call], 1);
    let [s] = spans.as_slice() else {
        panic!("one request span: {spans:?}");
    };
    assert_eq!(field(s, "name"), Some("refuse"));
    assert_eq!(field(s, "outcome"), Some("tool_error"));
    assert_eq!(field(s, "error_code"), None, "{s:?}");
}

// Issue 30 item 7: `initialize` has its span.
#[test]
fn initialize_has_a_request_span() {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
    let (spans, _) = record(vec![init.into()], 1);
    let Some(s) = spans
        .iter()
        .find(|s| field(s, "method") == Some("initialize"))
    else {
        panic!("an initialize span: {spans:?}");
    };
    assert_eq!(field(s, "era"), Some("handshake"));
    assert_eq!(field(s, "requested_version"), Some("2025-06-18"));
    assert_eq!(field(s, "protocol_version"), Some("2025-06-18"));
    assert_eq!(field(s, "outcome"), Some("ok"));
}
