//! OpenTelemetry spans exported to stdout (feature `otel`): a client and
//! the demo server on an in-memory pair, under a `tracing-opentelemetry`
//! layer whose tracer provider prints every finished span with
//! `opentelemetry-stdout`.
//!
//! ```sh
//! cargo run -p ferromcp-examples --features otel --example otel_stdout
//! ```
//!
//! The client's `mcp.client.request` span for `tools/call add` is an OTel
//! span; with no explicit trace context, the client sends its context as
//! `_meta.traceparent`. The server continues it: its `mcp.request` span
//! has the same `TraceId` and, as `ParentSpanId`, the client span's
//! `SpanId` (and is marked as having a remote parent). In a real service,
//! swap the stdout exporter for an OTLP one (`opentelemetry-otlp`) and add
//! a `TraceContextPropagator` for HTTP headers; the MCP `_meta` propagation
//! needs nothing more than the `otel` features of ferromcp-server and
//! ferromcp-client.

use ferromcp_client::{ClientBuilder, EraPreference};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The OTel pipeline: spans go to stdout as each one ends.
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();
    let tracer = provider.tracer("otel_stdout");
    // `tracing` spans become OTel spans through the layer.
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
    tracing::subscriber::set_global_default(subscriber)?;

    let server = ferromcp_examples::demo_server()?;
    let (read, write) = server.serve_in_memory();
    let client = ClientBuilder::new("otel-example", "1.0.0")
        .era(EraPreference::Modern)
        .connect_io(read, write)
        .await?;
    let r = client
        .call_tool("add", json!({"a": 2, "b": 3}).as_object().cloned())
        .await?;
    eprintln!("add(2, 3) -> {:?}", r.structured_content);
    client.close().await;

    // Flushes and stops the exporter.
    provider.shutdown()?;
    Ok(())
}
