//! Request spans exported to stdout (issue 18): a client and the demo
//! server on an in-memory pair, under a small `tracing` subscriber that
//! prints every closed span as one JSON line, with its parent.
//!
//! ```sh
//! cargo run -p ferromcp-examples --example tracing_stdout
//! ```
//!
//! The client sends a W3C `traceparent` (from its
//! `ClientBuilder::trace_context` hook, standing in for an application's
//! OpenTelemetry context); the server's `mcp.request` span records it as
//! `trace_id` / `parent_span_id`, and the client's `mcp.client.request`
//! span records the same `trace_id`. In a real service, install
//! `tracing-subscriber` (or `tracing-opentelemetry`) instead of the printer
//! below; the SDK only emits `tracing` spans and has no exporter of its own.
//! The `otel_stdout` example (feature `otel`) does that with OpenTelemetry,
//! the client's OTel context propagated without a hook.

use ferromcp_client::{ClientBuilder, EraPreference, TraceContext};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A span being recorded.
struct Open {
    name: &'static str,
    parent: Option<u64>,
    fields: Map<String, Value>,
    refs: usize,
}

/// Prints closed spans as JSON lines on stdout. Single-threaded use: the
/// entered-span stack is shared (the example runs a current-thread runtime).
#[derive(Default)]
struct StdoutExporter {
    next: AtomicU64,
    spans: Mutex<HashMap<u64, Open>>,
    stack: Mutex<Vec<u64>>,
}

struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), json!(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
}

impl Subscriber for StdoutExporter {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        // Only the SDK's request spans (and events inside them).
        m.target().starts_with("ferromcp_")
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let parent = match attrs.parent() {
            Some(p) => Some(p.into_u64()),
            None if attrs.is_contextual() => self.stack.lock().ok().and_then(|s| s.last().copied()),
            None => None,
        };
        let mut fields = Map::new();
        attrs.record(&mut Fields(&mut fields));
        if let Ok(mut s) = self.spans.lock() {
            s.insert(
                id,
                Open {
                    name: attrs.metadata().name(),
                    parent,
                    fields,
                    refs: 1,
                },
            );
        }
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Ok(mut s) = self.spans.lock()
            && let Some(o) = s.get_mut(&span.into_u64())
        {
            values.record(&mut Fields(&mut o.fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, span: &Id) {
        if let Ok(mut s) = self.stack.lock() {
            s.push(span.into_u64());
        }
    }
    fn exit(&self, span: &Id) {
        if let Ok(mut s) = self.stack.lock()
            && let Some(i) = s.iter().rposition(|x| *x == span.into_u64())
        {
            s.remove(i);
        }
    }
    fn clone_span(&self, span: &Id) -> Id {
        if let Ok(mut s) = self.spans.lock()
            && let Some(o) = s.get_mut(&span.into_u64())
        {
            o.refs += 1;
        }
        span.clone()
    }
    fn try_close(&self, span: Id) -> bool {
        let Ok(mut s) = self.spans.lock() else {
            return false;
        };
        let id = span.into_u64();
        let Some(o) = s.get_mut(&id) else {
            return false;
        };
        o.refs = o.refs.saturating_sub(1);
        if o.refs > 0 {
            return false;
        }
        if let Some(o) = s.remove(&id) {
            let line = json!({"span": o.name, "id": id, "parent": o.parent, "fields": o.fields});
            println!("{line}");
        }
        true
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing::subscriber::set_global_default(StdoutExporter::default())?;
    let server = ferromcp_examples::demo_server()?;
    let (read, write) = server.serve_in_memory();
    // The application's current trace context; an OpenTelemetry service
    // would format `opentelemetry::Context::current()`'s span context here.
    let client = ClientBuilder::new("tracing-example", "1.0.0")
        .era(EraPreference::Modern)
        .trace_context(|| {
            Some(TraceContext::new(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ))
        })
        .connect_io(read, write)
        .await?;
    let r = client
        .call_tool("add", json!({"a": 2, "b": 3}).as_object().cloned())
        .await?;
    eprintln!("add(2, 3) -> {:?}", r.content);
    let missing = client.call_tool("no_such_tool", None).await;
    eprintln!("no_such_tool -> error: {}", missing.is_err());
    client.close().await;
    Ok(())
}
