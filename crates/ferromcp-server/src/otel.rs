//! OpenTelemetry parent of the request span (feature `otel`).
//!
//! With a [`tracing-opentelemetry`](tracing_opentelemetry) layer installed,
//! each `mcp.request` span ([`crate::trace`]) becomes an OpenTelemetry span.
//! This module makes the W3C trace context of the request's `_meta`
//! (`traceparent`, `tracestate`) its OTel parent, as a remote span context:
//! the server span joins the caller's trace (same trace id) as a child of
//! the caller's span, whatever `tracing` span the request happens to run
//! under in this process.
//!
//! An invalid `traceparent` is ignored (the span then has its ordinary
//! parent), as is a `tracestate` OpenTelemetry cannot parse (the parent is
//! still set, with an empty trace state). Without an OTel layer on the
//! span's subscriber, [`set_parent`] does nothing.

use ferromcp_protocol::trace_context::{TraceParent, tracestate_is_valid};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use std::str::FromStr;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The remote span context a valid `traceparent` (and `tracestate`) name.
pub(crate) fn remote_context(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let tp = TraceParent::parse(traceparent)?;
    let state = tracestate
        .filter(|s| tracestate_is_valid(s))
        .and_then(|s| TraceState::from_str(s).ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        TraceId::from_bytes(tp.trace_id),
        SpanId::from_bytes(tp.parent_id),
        // Only the sampled bit is defined; unknown flags are not passed on.
        TraceFlags::new(tp.flags & TraceFlags::SAMPLED.to_u8()),
        true,
        state,
    ))
}

/// Sets `span`'s OpenTelemetry parent to the request's trace context, when
/// there is a valid one. Called right after the span is created, before it
/// is entered (OpenTelemetry fixes the parent when the span starts).
pub(crate) fn set_parent(span: &Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    let Some(sc) = traceparent.and_then(|tp| remote_context(tp, tracestate)) else {
        return;
    };
    let cx = opentelemetry::Context::new().with_remote_span_context(sc);
    // Err only without an OTel layer (or once the span started): nothing to do.
    let _ = span.set_parent(cx);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_the_remote_parent() {
        let Some(sc) = remote_context(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("congo=t61rcWkgMzE"),
        ) else {
            panic!("a valid traceparent");
        };
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled() && sc.is_remote() && sc.is_valid());
        assert_eq!(sc.trace_state().get("congo"), Some("t61rcWkgMzE"));
        assert!(remote_context("00-abc-def-01", None).is_none());
    }
}
