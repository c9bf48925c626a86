//! One `tracing` span per served request (issue 18).
//!
//! [`Shared::dispatch`](crate::shared::Shared) wraps every transport's call in a
//! [`Traced`] future: an `INFO` span named `mcp.request` (target
//! `ferromcp_server::request`) that is entered on each poll, so the handler's own
//! events nest under it. Its fields:
//!
//! - `method`, `name` (tool or prompt name, resource URI, when there is one),
//!   `era` (`modern` / `handshake`), `protocol_version`, `request_id` (in its
//!   JSON form: a string id keeps its quotes);
//! - `trace_id`, `parent_span_id`, `sampled`, `tracestate`: the W3C trace
//!   context continued from the request's `_meta` (an invalid `traceparent`
//!   is ignored, never an error);
//! - recorded at the end: `outcome` (`ok`, `tool_error` for a tool result
//!   with `isError: true`, `error`, `input_required`, `cancelled`),
//!   `error_code` (on `error`), `duration_us`.
//!
//! `initialize` (handshake era) has an `mcp.request` span too, with
//! `method`, `era`, the `requested_version`, the negotiated
//! `protocol_version` and the outcome.
//!
//! To see the spans with `tracing-subscriber`'s fmt layer, print them when
//! they close (the fields recorded at the end are in that line):
//! `tracing_subscriber::fmt().with_span_events(FmtSpan::CLOSE)`.
//!
//! With the `otel` feature, that trace context is also the span's
//! OpenTelemetry parent ([`crate::otel`]).
//!
//! With no subscriber interested in the span, creating it is one callsite
//! interest check; no field is formatted, nothing is allocated and no clock
//! is read.

use crate::context::ContextParts;
use crate::future::{Dispatch, Reply};
use ferromcp_protocol::method::ClientRequest;
use ferromcp_protocol::trace_context::{TraceParent, tracestate_is_valid};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;
use tracing::Span;
use tracing::field::{Empty, display};

thread_local! {
    /// Set by [`note_input_required`] while a [`Traced`] future is polled.
    static INPUT_REQUIRED: Cell<bool> = const { Cell::new(false) };
    /// Set by [`note_tool_error`] while a [`Traced`] future is polled.
    static TOOL_ERROR: Cell<bool> = const { Cell::new(false) };
}

/// Marks the request being polled on this thread as answered with a tool
/// result carrying `isError: true` (outcome `tool_error`, not `ok`).
pub(crate) fn note_tool_error() {
    TOOL_ERROR.with(|c| c.set(true));
}

/// The span of a handshake-era `initialize` (answered outside
/// [`Traced`], synchronously).
pub(crate) fn initialize_span(requested_version: &str) -> Span {
    tracing::info_span!(
        target: "ferromcp_server::request",
        "mcp.request",
        method = "initialize",
        era = "handshake",
        requested_version = requested_version,
        protocol_version = Empty,
        outcome = Empty,
        error_code = Empty,
    )
}

/// Records how `initialize` ended on its span.
pub(crate) fn finish_initialize(span: &Span, version: Result<&str, i64>) {
    match version {
        Ok(v) => {
            span.record("protocol_version", v);
            span.record("outcome", "ok");
        }
        Err(code) => {
            span.record("error_code", code);
            span.record("outcome", "error");
        }
    }
}

/// Marks the request being polled on this thread as answered with an
/// interim `input_required` result (called where that result is built).
pub(crate) fn note_input_required() {
    INPUT_REQUIRED.with(|c| c.set(true));
}

/// The era's name for the `era` field.
fn era_name(modern: bool) -> &'static str {
    if modern { "modern" } else { "handshake" }
}

/// Creates the request span for `req` (disabled, and free, without an
/// interested subscriber).
pub(crate) fn request_span(req: &crate::admit::CallRequest, parts: &ContextParts) -> Span {
    let name: Option<&str> = match req.known() {
        Some(ClientRequest::CallTool(p)) => Some(&p.name),
        Some(ClientRequest::GetPrompt(p)) => Some(&p.name),
        Some(ClientRequest::ReadResource(p)) => Some(&p.uri),
        _ => None,
    };
    let span = tracing::info_span!(
        target: "ferromcp_server::request",
        "mcp.request",
        method = &*parts.method,
        name = name,
        era = era_name(parts.version.is_modern()),
        protocol_version = parts.version.as_str(),
        request_id = %parts.id,
        trace_id = Empty,
        parent_span_id = Empty,
        sampled = Empty,
        tracestate = Empty,
        outcome = Empty,
        error_code = Empty,
        duration_us = Empty,
    );
    if !span.is_disabled() {
        // Decodes a kept envelope (once: the context keeps it), only when
        // someone records spans.
        let meta = parts.meta.get();
        let (tp, ts) = (meta.traceparent.as_deref(), meta.tracestate.as_deref());
        record_trace_context(&span, tp, ts);
        #[cfg(feature = "otel")]
        crate::otel::set_parent(&span, tp, ts);
    }
    span
}

/// Records a valid incoming trace context on `span`; ignores invalid ones.
fn record_trace_context(span: &Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    let Some(tp) = traceparent.and_then(TraceParent::parse) else {
        return;
    };
    span.record("trace_id", display(tp.trace_id_hex()));
    span.record("parent_span_id", display(tp.parent_id_hex()));
    span.record("sampled", tp.sampled());
    if let Some(ts) = tracestate.filter(|s| tracestate_is_valid(s)) {
        span.record("tracestate", ts);
    }
}

/// A dispatched request inside its span: entered on every poll, the outcome
/// and duration recorded when it completes, `cancelled` when it is dropped
/// first.
pub(crate) struct Traced {
    inner: Dispatch,
    span: Span,
    /// `Some` only when the span is enabled.
    start: Option<Instant>,
    done: bool,
}

impl Traced {
    /// Wraps `inner` in `span`.
    pub(crate) fn new(inner: Dispatch, span: Span) -> Self {
        let start = (!span.is_disabled()).then(Instant::now);
        Self {
            inner,
            span,
            start,
            done: false,
        }
    }

    fn finish(&mut self, outcome: &'static str) {
        self.done = true;
        self.span.record("outcome", outcome);
        if let Some(start) = self.start {
            let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.span.record("duration_us", us);
        }
    }
}

impl Future for Traced {
    type Output = Reply;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        let this = self.get_mut();
        if this.start.is_none() {
            // No subscriber wants the span: poll straight through.
            return Pin::new(&mut this.inner).poll(cx);
        }
        let outer = INPUT_REQUIRED.with(|c| c.replace(false));
        let outer_tool_error = TOOL_ERROR.with(|c| c.replace(false));
        let polled = {
            let _entered = this.span.enter();
            Pin::new(&mut this.inner).poll(cx)
        };
        let input_required = INPUT_REQUIRED.with(|c| c.replace(outer));
        let tool_error = TOOL_ERROR.with(|c| c.replace(outer_tool_error));
        let Poll::Ready(reply) = polled else {
            return Poll::Pending;
        };
        match &reply {
            Ok(_) if input_required => this.finish("input_required"),
            Ok(_) if tool_error => this.finish("tool_error"),
            Ok(_) => this.finish("ok"),
            Err(e) => {
                this.span.record("error_code", e.error().code.0);
                this.finish("error");
            }
        }
        Poll::Ready(reply)
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        if !self.done && self.start.is_some() {
            self.finish("cancelled");
        }
    }
}
