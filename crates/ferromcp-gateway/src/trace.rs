//! The trace context of an upstream call: each request the gateway sends
//! on behalf of a client's request continues that request's W3C trace (the
//! `traceparent` and `tracestate` of its `_meta`) with a span id of the
//! gateway's own, and runs in a `tracing` span `mcp.gateway.upstream`
//! (target `ferromcp_gateway::upstream`) nested in the server's
//! `mcp.request` span, with the fields `upstream`, `method`, `name` (the
//! upstream's own tool or prompt name, or the resource URI), `trace_id`,
//! `span_id` and, recorded at the end, `outcome`.

use ferromcp_protocol::trace_context::{TraceParent, tracestate_is_valid};
use ferromcp_server::RequestContext;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::Span;
use tracing::field::Empty;

/// The trace context to send upstream for a request made on behalf of
/// `cx`, and the span id it names (none when `cx` carries no valid
/// `traceparent`).
pub(crate) fn continued(
    cx: Option<&RequestContext>,
) -> Option<(ferromcp_client::TraceContext, TraceParent)> {
    let meta = cx?.meta();
    let tp = TraceParent::parse(meta.traceparent.as_deref()?)?.with_parent(span_id());
    let mut tc = ferromcp_client::TraceContext::new(tp.to_string());
    if let Some(ts) = meta
        .tracestate
        .as_deref()
        .filter(|s| tracestate_is_valid(s))
    {
        tc = tc.with_tracestate(ts);
    }
    Some((tc, tp))
}

/// The span of one upstream request.
pub(crate) fn span(
    upstream: &str,
    method: &str,
    name: Option<&str>,
    tp: Option<&TraceParent>,
) -> Span {
    let span = tracing::info_span!(
        target: "ferromcp_gateway::upstream",
        "mcp.gateway.upstream",
        upstream,
        method,
        name = Empty,
        trace_id = Empty,
        span_id = Empty,
        outcome = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(n) = name {
        span.record("name", n);
    }
    if let Some(tp) = tp {
        span.record("trace_id", tp.trace_id_hex());
        span.record("span_id", tp.parent_id_hex());
    }
    span
}

/// A fresh, non-zero span id: a randomly keyed hash of a process-wide
/// counter (unique within the process, unpredictable across processes).
fn span_id() -> [u8; 8] {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(NEXT.fetch_add(1, Ordering::Relaxed));
    h.finish().max(1).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_ids_are_non_zero_and_distinct() {
        let ids: std::collections::HashSet<[u8; 8]> = (0..1000).map(|_| span_id()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(!ids.contains(&[0; 8]));
    }
}
