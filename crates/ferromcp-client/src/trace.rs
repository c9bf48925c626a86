//! Tracing for outgoing requests (issue 18): one `mcp.client.request` span
//! per request (target `ferromcp_client::request`, retries included) and W3C
//! trace-context propagation in `_meta`.
//!
//! The span's fields: `method`, `name` (tool or prompt name, resource URI,
//! when there is one), `era` (`modern` / `handshake`), `request_id` (of the
//! last attempt), `trace_id` (of the injected `traceparent`), and at the
//! end `outcome` (`ok`, `input_required`, `error`, `cancelled` when the
//! request future is dropped unfinished), `error_code` (a JSON-RPC error)
//! and `duration_us`. With no subscriber interested, the span costs one
//! interest check: no field is formatted and no clock is read.
//!
//! Propagation: a [`TraceContext`] given per request
//! ([`crate::RequestOptions::trace_context`]) or by the client's hook
//! ([`crate::ClientBuilder::trace_context`], e.g. reading the application's
//! OpenTelemetry context) is sent as `_meta.traceparent` (and
//! `tracestate`). A `traceparent` the application put in `_meta` itself
//! wins; an invalid one from the options or the hook is not sent. With
//! neither, the `otel` feature sends the span's OpenTelemetry context
//! ([`crate::otel`]).

use ferromcp_protocol::trace_context::{TraceParent, tracestate_is_valid};
use ferromcp_protocol::types::JsonObject;
use std::sync::Arc;
use std::time::Instant;
use tracing::Span;
use tracing::field::{Empty, display};

/// A W3C trace context to continue on the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    /// The `traceparent` value: `00-<trace id>-<parent span id>-<flags>`.
    pub traceparent: String,
    /// The optional vendor `tracestate`.
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// A context with `traceparent` and no `tracestate`.
    pub fn new(traceparent: impl Into<String>) -> Self {
        Self {
            traceparent: traceparent.into(),
            tracestate: None,
        }
    }

    /// Adds a `tracestate`.
    pub fn with_tracestate(mut self, tracestate: impl Into<String>) -> Self {
        self.tracestate = Some(tracestate.into());
        self
    }

    /// The parsed `traceparent` and the `tracestate` to send, or `None`
    /// when the `traceparent` is not valid (an invalid `tracestate` is
    /// dropped on its own).
    pub(crate) fn validated(&self) -> Option<(TraceParent, Option<&str>)> {
        let tp = TraceParent::parse(&self.traceparent)?;
        let ts = self
            .tracestate
            .as_deref()
            .filter(|s| tracestate_is_valid(s));
        Some((tp, ts))
    }
}

/// The client-wide trace-context hook: called for each request sent, it
/// returns the application's current context, if any.
pub type TraceContextProvider = Arc<dyn Fn() -> Option<TraceContext> + Send + Sync>;

/// The tool or prompt name, or resource URI, of a request.
fn target_name<'a>(method: &str, params: &'a JsonObject) -> Option<&'a str> {
    use ferromcp_protocol::method as m;
    match method {
        m::TOOLS_CALL | m::PROMPTS_GET => params.get("name"),
        m::RESOURCES_READ => params.get("uri"),
        _ => None,
    }
    .and_then(serde_json::Value::as_str)
}

/// Creates the request span. Disabled and free without a subscriber: the
/// field expressions (the name lookup, `modern`) run only for an enabled
/// span.
pub(crate) fn request_span(
    method: &str,
    params: &JsonObject,
    modern: impl FnOnce() -> bool,
) -> Span {
    tracing::info_span!(
        target: "ferromcp_client::request",
        "mcp.client.request",
        method = method,
        name = target_name(method, params),
        era = if modern() { "modern" } else { "handshake" },
        request_id = Empty,
        trace_id = Empty,
        outcome = Empty,
        error_code = Empty,
        duration_us = Empty,
    )
}

/// Records the outcome and duration on drop, `cancelled` unless
/// [`SpanGuard::finish`] ran first.
pub(crate) struct SpanGuard {
    pub(crate) span: Span,
    start: Option<Instant>,
    done: bool,
}

impl SpanGuard {
    /// Starts timing `span` (only when it is enabled).
    pub(crate) fn new(span: Span) -> Self {
        let start = (!span.is_disabled()).then(Instant::now);
        Self {
            span,
            start,
            done: false,
        }
    }

    /// Records the result of the request.
    pub(crate) fn finish(&mut self, result: &crate::Result<Box<serde_json::value::RawValue>>) {
        if self.start.is_none() {
            self.done = true;
            return;
        }
        let outcome = match result {
            Ok(raw) if is_input_required(raw) => "input_required",
            Ok(_) => "ok",
            Err(e) => {
                if let Some(obj) = e.rpc_error() {
                    self.span.record("error_code", obj.code.0);
                }
                "error"
            }
        };
        self.record(outcome);
    }

    /// Records the id of an attempt.
    pub(crate) fn attempt(&self, id: &ferromcp_protocol::RequestId) {
        if self.start.is_some() {
            self.span.record("request_id", display(id));
        }
    }

    fn record(&mut self, outcome: &'static str) {
        self.done = true;
        self.span.record("outcome", outcome);
        if let Some(start) = self.start {
            let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.span.record("duration_us", us);
        }
    }
}

impl Drop for SpanGuard {
    fn drop(&mut self) {
        if !self.done && self.start.is_some() {
            self.record("cancelled");
        }
    }
}

/// Whether a result is an interim MRTR `input_required` one.
fn is_input_required(raw: &serde_json::value::RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "resultType", borrow, default)]
        result_type: Option<&'a str>,
    }
    serde_json::from_str::<Probe<'_>>(raw.get())
        .ok()
        .and_then(|p| p.result_type)
        == Some("input_required")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_contexts_are_not_sent() {
        assert!(TraceContext::new("00-abc-def-01").validated().is_none());
        let ok = TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            .with_tracestate("bad\nstate");
        let Some((_, ts)) = ok.validated() else {
            panic!("valid traceparent");
        };
        assert_eq!(ts, None, "an invalid tracestate is dropped on its own");
    }

    #[test]
    fn input_required_is_recognised() {
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.to_owned()).ok();
        let Some(ir) = raw(r#"{"resultType":"input_required","inputRequests":{}}"#) else {
            panic!("raw");
        };
        assert!(is_input_required(&ir));
        let Some(done) = raw(r#"{"resultType":"complete","content":[]}"#) else {
            panic!("raw");
        };
        assert!(!is_input_required(&done));
    }
}
