//! OpenTelemetry context propagation for outgoing requests (feature `otel`).
//!
//! With a [`tracing-opentelemetry`](tracing_opentelemetry) layer installed,
//! each `mcp.client.request` span ([`crate::trace`]) is an OpenTelemetry
//! span. When a request has no explicit trace context (neither
//! [`crate::RequestOptions::trace_context`] nor the client's
//! [`crate::ClientBuilder::trace_context`] hook gives one, and the
//! application's `_meta` carries no `traceparent`), the client sends that
//! span's OTel context as `_meta.traceparent` (the span's own id as the
//! parent id) and `tracestate`: the server span becomes its child in the
//! same trace. When the request span is disabled (filtered out), the
//! current `tracing` span's OTel context is used instead. An invalid
//! (empty) OTel context sends nothing.

use crate::TraceContext;
use opentelemetry::trace::TraceContextExt;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The trace context to send for a request running in `span`, from its
/// OpenTelemetry context; `None` when that context has no valid span.
pub(crate) fn current(span: &Span) -> Option<TraceContext> {
    let cx = if span.is_disabled() {
        Span::current().context()
    } else {
        span.context()
    };
    let otel_span = cx.span();
    let sc = otel_span.span_context();
    if !sc.is_valid() {
        return None;
    }
    let traceparent = format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8() & opentelemetry::TraceFlags::SAMPLED.to_u8()
    );
    let tracestate = sc.trace_state().header();
    Some(TraceContext {
        traceparent,
        tracestate: (!tracestate.is_empty()).then_some(tracestate),
    })
}
