//! The `otel` feature end to end (`cargo nextest run -p ferromcp-examples
//! --features otel --test otel_parent`): a client and the demo server in
//! memory, under a `tracing-opentelemetry` layer exporting to an in-memory
//! OpenTelemetry exporter. The server's `mcp.request` span must be the OTel
//! child of the client's `mcp.client.request` span (same trace id, parent
//! span id = the client span's id, remote parent), or of the explicit trace
//! context when the application gives one.

use ferromcp_client::{ClientBuilder, EraPreference, TraceContext};
use opentelemetry::Value;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Runs one `tools/call add` from a client built by `client` against the
/// demo server, with OTel spans recorded; returns the finished spans.
async fn record(
    era: EraPreference,
    client: impl FnOnce(ClientBuilder) -> ClientBuilder,
) -> Result<Vec<SpanData>, Box<dyn std::error::Error>> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    // Thread-local: the tests run on a current-thread runtime, so the
    // server's tasks record on this subscriber too.
    let _guard = tracing::subscriber::set_default(subscriber);
    let (read, write) = ferromcp_examples::demo_server()?.serve_in_memory();
    let c = client(ClientBuilder::new("otel-test", "1.0.0").era(era))
        .connect_io(read, write)
        .await?;
    c.call_tool("add", json!({"a": 1, "b": 2}).as_object().cloned())
        .await?;
    c.close().await;
    // Let the server finish its span.
    tokio::task::yield_now().await;
    provider.force_flush()?;
    Ok(exporter.get_finished_spans()?)
}

/// The span named `name` whose `method` attribute is `tools/call`.
fn tools_call<'a>(spans: &'a [SpanData], name: &str) -> Result<&'a SpanData, String> {
    let method = |s: &SpanData| {
        s.attributes
            .iter()
            .find(|kv| kv.key.as_str() == "method")
            .map(|kv| kv.value.clone())
    };
    spans
        .iter()
        .find(|s| s.name == name && method(s) == Some(Value::from("tools/call")))
        .ok_or_else(|| {
            let names: Vec<_> = spans.iter().map(|s| s.name.to_string()).collect();
            format!("no {name} span for tools/call among {names:?}")
        })
}

async fn server_is_child_of_client(era: EraPreference) -> TestResult {
    let spans = record(era, |b| b).await?;
    let client = tools_call(&spans, "mcp.client.request")?;
    let server = tools_call(&spans, "mcp.request")?;
    assert!(client.span_context.is_valid());
    assert_eq!(
        server.span_context.trace_id(),
        client.span_context.trace_id(),
        "the server span continues the client's trace"
    );
    assert_eq!(
        server.parent_span_id,
        client.span_context.span_id(),
        "the server span's parent is the client span"
    );
    assert!(
        server.parent_span_is_remote,
        "a parent from _meta is remote"
    );
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn server_span_is_the_child_of_the_client_span() -> TestResult {
    server_is_child_of_client(EraPreference::Modern).await
}

#[tokio::test(flavor = "current_thread")]
async fn server_span_is_the_child_of_the_client_span_handshake_era() -> TestResult {
    server_is_child_of_client(EraPreference::Handshake).await
}

#[tokio::test(flavor = "current_thread")]
async fn an_explicit_trace_context_wins_and_its_tracestate_is_kept() -> TestResult {
    let spans = record(EraPreference::Modern, |b| {
        b.trace_context(|| {
            Some(
                TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
                    .with_tracestate("congo=t61rcWkgMzE"),
            )
        })
    })
    .await?;
    let server = tools_call(&spans, "mcp.request")?;
    assert_eq!(
        server.span_context.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(server.parent_span_id.to_string(), "00f067aa0ba902b7");
    assert!(server.span_context.is_sampled());
    assert_eq!(
        server.span_context.trace_state().get("congo"),
        Some("t61rcWkgMzE")
    );
    Ok(())
}
