//! The 2026-07-28 path: a stateless request served on the connection's
//! task, answered as JSON or (when it streams) committed to SSE.

use super::gate::Accepts;
use super::reject::Rejection;
use super::sse::{Close, SseBody, SseItem, sse_event};
use super::streams::listen_stream;
use super::{
    Headers, HttpInner, McpBody, failure_response, json_error, json_response, sse_response,
};
use crate::admit::{Call, Modern, ModernInput, Text, admit_modern};
use crate::context::{ContextParts, Outbound, Principal};
use crate::dispatch::Legacy;
use crate::future::Reply;
use crate::meta_cell::MetaCell;
use bytes::Bytes;
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::jsonrpc::{Message, OutgoingError, RequestId, to_vec};
use ferromcp_protocol::ladder::ParamsProbe;
use http::{Response, StatusCode};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio_util::sync::CancellationToken;

/// Outbound for a modern request: a bounded channel read by the response.
pub(super) struct ChannelOutbound(mpsc::Sender<Bytes>);

impl Outbound for ChannelOutbound {
    fn notify(&self, message: Bytes) {
        let _ = self.0.try_send(message);
    }
}

pub(super) async fn modern(
    inner: &Arc<HttpInner>,
    parts: http::request::Parts,
    body: &Bytes,
    msg: Message<'_>,
    probe: ParamsProbe<'_>,
    accept: Accepts,
    permit: OwnedSemaphorePermit,
) -> Response<McpBody> {
    let shared = &inner.shared;
    let headers = Headers(&parts.headers);
    let req = match &msg {
        Message::Request(r) => r,
        Message::Notification(_) => {
            // LADDER-06: accept and drop (HTTP-15: never cancel by client-chosen id).
            let verdict = ferromcp_protocol::ladder::classify_inbound_request(
                &msg,
                Some(&headers),
                shared.modern_versions(),
                None,
            );
            return match verdict {
                Ok(_) => {
                    if let Message::Notification(n) = &msg {
                        super::legacy::hand_to_hook(shared, n, None);
                    }
                    let mut r = Response::new(McpBody::empty());
                    *r.status_mut() = StatusCode::ACCEPTED;
                    r
                }
                Err(rej) => json_error(None, &rej.error),
            };
        }
        Message::Response(_) => {
            return json_error(
                None,
                &ErrorObject::invalid_request("expected a request or notification, got a response"),
            );
        }
    };
    let input = ModernInput::Request {
        id: &req.id,
        method: &req.method,
        params: req.params,
        probe,
    };
    let (call, route) = match admit_modern(shared, input, Some(&headers)) {
        Ok(Modern::Call(call, route)) => (call, route),
        Ok(Modern::Listen(filter)) => {
            // Listen streams have their own cap (max_listen_streams).
            drop(permit);
            if !accept.sse {
                return Rejection::ListenNeedsSse.into_response();
            }
            return listen_stream(inner, req.id.clone(), filter);
        }
        Err(e) => return json_error(Some(&req.id), &e),
    };
    serve_typed(
        inner,
        parts,
        &req.id,
        &req.method,
        route,
        body,
        call,
        accept,
        permit,
    )
    .await
}

/// The one-pass path of the common request: a `tools/call` the protocol
/// crate decoded, probed and typed in one scan of the body
/// (`ferromcp_protocol::ladder::decode_tools_call`); then the same
/// admission and the same serving as [`modern`].
pub(super) async fn modern_call(
    inner: &Arc<HttpInner>,
    parts: http::request::Parts,
    body: &Bytes,
    call: ferromcp_protocol::ladder::ProbedCall<'_>,
    accept: Accepts,
    permit: OwnedSemaphorePermit,
) -> Response<McpBody> {
    use ferromcp_protocol::method::TOOLS_CALL;
    let headers = Headers(&parts.headers);
    let id = call.id.clone();
    let (call, route) = match admit_modern(
        &inner.shared,
        ModernInput::ToolsCall(call, Text::Shared(body)),
        Some(&headers),
    ) {
        Ok(Modern::Call(call, route)) => (call, route),
        // A tools/call is never a listen.
        Ok(Modern::Listen(_)) => {
            return json_error(Some(&id), &ErrorObject::internal("unexpected listen"));
        }
        Err(e) => return json_error(Some(&id), &e),
    };
    serve_typed(
        inner, parts, &id, TOOLS_CALL, route, body, call, accept, permit,
    )
    .await
}

/// Serves an admitted, typed modern request (read from `body`): JSON, or
/// SSE when it streams.
#[allow(clippy::too_many_arguments)]
async fn serve_typed(
    inner: &Arc<HttpInner>,
    parts: http::request::Parts,
    id: &RequestId,
    method: &str,
    route: ferromcp_protocol::ladder::ModernRoute,
    body: &Bytes,
    call: Call,
    accept: Accepts,
    permit: OwnedSemaphorePermit,
) -> Response<McpBody> {
    let shared = &inner.shared;
    let meta = MetaCell::admitted(route.meta, body);
    let wants_notifications = meta.progress_token().is_some() || meta.log_level().is_some();
    let sse_allowed = accept.sse_allowed(inner.config.json_only);
    let (tx, rx) = if wants_notifications && sse_allowed {
        let (tx, rx) = mpsc::channel::<Bytes>(64);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let log_level = meta.log_level();
    let principal = parts.extensions.get::<Principal>().cloned();
    let cancel = CancellationToken::new();
    let ctx = ContextParts {
        log_level,
        outbound: tx.map(|t| Arc::new(ChannelOutbound(t)) as Arc<dyn Outbound>),
        principal,
        http: Some(Arc::new(parts)),
        ..ContextParts::new(id.clone(), method, route.version, meta, cancel.clone())
    };
    let fut = shared.clone().dispatch(call, ctx, Legacy::default());
    let limits = shared.limits();
    answer_or_stream(
        id.clone(),
        fut,
        rx,
        Accepts {
            json: accept.json,
            sse: sse_allowed,
        },
        cancel,
        SseTimes {
            commit_after: limits.sse_commit_after,
            keepalive: limits.sse_keepalive,
        },
        permit,
    )
    .await
}

// HTTP-06, HTTP-08
/// The answer of a handler that finished before anything was streamed: JSON,
/// or (when the client accepts only `text/event-stream`) an SSE stream of
/// that one message. A JSON-RPC error keeps its status and JSON
/// body from the one table: error responses are not negotiated.
pub(super) fn reply_response(id: &RequestId, reply: Reply, json_ok: bool) -> Response<McpBody> {
    match reply {
        Ok(bytes) if json_ok => json_response(StatusCode::OK, bytes),
        Ok(bytes) => sse_response(SseBody::new().event(sse_event(None, &bytes))),
        Err(f) => failure_response(Some(id), &f),
    }
}

pub(super) fn reply_bytes(id: &RequestId, reply: Reply) -> Bytes {
    match reply {
        Ok(b) => b,
        Err(f) => Bytes::from(to_vec(&OutgoingError::new(Some(id), f.error()))),
    }
}

/// The two limits [`answer_or_stream`] reads, copied out of `Limits` so the
/// request's future does not carry all of them.
#[derive(Clone, Copy)]
struct SseTimes {
    /// `Limits::sse_commit_after`.
    commit_after: Duration,
    /// `Limits::sse_keepalive`.
    keepalive: Duration,
}

// LADDER-13
/// Waits for the handler; commits to SSE only when a notification arrives
/// first or the handler runs long.
async fn answer_or_stream(
    id: RequestId,
    mut fut: crate::trace::Traced,
    rx: Option<mpsc::Receiver<Bytes>>,
    answer_as: Accepts,
    cancel: CancellationToken,
    limits: SseTimes,
    permit: OwnedSemaphorePermit,
) -> Response<McpBody> {
    // `answer_as.sse`: the server may stream; `answer_as.json`: a plain
    // JSON answer is acceptable to the client.
    let (sse_allowed, json_ok) = (answer_as.sse, answer_as.json);
    let guard = cancel.drop_guard();
    let Some(mut rx) = rx else {
        if !sse_allowed {
            let r = fut.await;
            guard.disarm();
            return reply_response(&id, r, json_ok);
        }
        // Most handlers finish on their first poll: answer without arming a timer.
        if let Poll::Ready(r) = futures_util::poll!(&mut fut) {
            guard.disarm();
            return reply_response(&id, r, json_ok);
        }
        // No notifications possible, but keep the option of going SSE for long handlers.
        tokio::select! {
            r = &mut fut => { guard.disarm(); return reply_response(&id, r, json_ok); }
            _ = tokio::time::sleep(limits.commit_after) => {}
        }
        return sse_response(sse_body(
            id,
            fut,
            None,
            None,
            guard,
            limits.keepalive,
            permit,
        ));
    };
    // Biased to the handler: when it finished it answers as it is (a
    // refusal keeps its status, e.g. 403 insufficient_scope). A channel
    // closed because the handler dropped its context is not a
    // notification: that branch waits for a real one (it was picked at
    // random beside a finished handler, committing its answer to SSE).
    let first = tokio::select! {
        biased;
        r = &mut fut => {
            // Finished: anything already queued still goes out, via SSE.
            match rx.try_recv() {
                Ok(n) => {
                    let rest = std::iter::from_fn(|| rx.try_recv().ok()).collect::<Vec<_>>();
                    let mut events: Vec<Bytes> = std::iter::once(n).chain(rest).map(|b| sse_event(None, &b)).collect();
                    events.push(sse_event(None, &reply_bytes(&id, r)));
                    guard.disarm();
                    return sse_response(SseBody::new().events(events));
                }
                Err(_) => { guard.disarm(); return reply_response(&id, r, json_ok); }
            }
        }
        Some(n) = rx.recv() => Some(n),
        _ = tokio::time::sleep(limits.commit_after) => None,
    };
    sse_response(sse_body(
        id,
        fut,
        Some(rx),
        first,
        guard,
        limits.keepalive,
        permit,
    ))
}

// SSE-03, CANCEL-01
/// The SSE body of a committed request: queued notifications, keep-alives,
/// then the final response, which ends the stream. Dropping the
/// body (client gone) drops the handler and cancels its token.
fn sse_body(
    id: RequestId,
    fut: crate::trace::Traced,
    rx: Option<mpsc::Receiver<Bytes>>,
    first: Option<Bytes>,
    guard: tokio_util::sync::DropGuard,
    keepalive: Duration,
    permit: OwnedSemaphorePermit,
) -> SseBody {
    let finish = async move {
        let r = fut.await;
        drop(permit); // the handler is done
        Some(sse_event(None, &reply_bytes(&id, r)))
    };
    let mut body = SseBody::new()
        .events(first.map(|f| sse_event(None, &f)))
        .finish(finish)
        .keep_alive(keepalive)
        .on_close(move |how| match how {
            Close::Finished => {
                guard.disarm();
            }
            // The handler was dropped first; this cancels its token.
            Close::Abandoned => drop(guard),
        });
    if let Some(mut rx) = rx {
        // The channel closes when the handler drops its context: not the
        // end of the answer, which is the handler's result.
        let mut closed = false;
        body = body.source(futures_util::stream::poll_fn(move |cx| {
            if closed {
                return Poll::Pending;
            }
            match rx.poll_recv(cx) {
                Poll::Ready(Some(n)) => Poll::Ready(Some(SseItem::Event(sse_event(None, &n)))),
                Poll::Ready(None) => {
                    closed = true;
                    Poll::Pending
                }
                Poll::Pending => Poll::Pending,
            }
        }));
    }
    body
}

#[cfg(test)]
mod tests {
    use super::super::{HttpConfig, McpService};
    use crate::{NoArgs, RequestContext, Server, tool};
    use bytes::Bytes;
    use http::Request;
    use http_body_util::BodyExt;
    use std::time::Duration;

    /// Regression: a zero `sse_keepalive` panicked (`tokio::time::interval`
    /// refuses a zero period) as soon as an answer was committed to SSE;
    /// zero now means no keep-alive comments.
    // SSE-05
    #[tokio::test]
    async fn a_zero_keep_alive_interval_streams_without_keep_alives() {
        let limits = crate::Limits {
            sse_keepalive: Duration::ZERO,
            ..crate::Limits::default()
        };
        let server = Server::builder("t", "1")
            .limits(limits)
            .tool(
                tool("step").handler(|_: NoArgs, cx: RequestContext| async move {
                    cx.progress(1.0, None, None);
                    // Pending after the notification: the answer commits
                    // to SSE.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    "done"
                }),
            )
            .build()
            .unwrap_or_else(|e| panic!("build: {e}"));
        let svc = McpService::new(server, HttpConfig::default());
        let meta = serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "progressToken": "p"
        });
        let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "step", "_meta": meta}});
        let req = Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "step")
            .body(http_body_util::Full::new(Bytes::from(call.to_string())))
            .unwrap_or_else(|e| panic!("request: {e}"));
        let resp = svc.handle(req).await;
        assert_eq!(
            resp.headers()
                .get(http::header::CONTENT_TYPE)
                .map(|v| v.as_bytes()),
            Some(&b"text/event-stream"[..])
        );
        let body = tokio::time::timeout(Duration::from_secs(10), resp.into_body().collect())
            .await
            .unwrap_or_else(|_| panic!("the stream did not end"))
            .map(|c| c.to_bytes())
            .unwrap_or_else(|e| match e {});
        let text = String::from_utf8_lossy(&body);
        let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 2, "{text}");
        assert!(events[0].contains("notifications/progress"), "{text}");
        assert!(
            events[1].contains("\"id\":1") && events[1].contains("done"),
            "{text}"
        );
        assert!(!text.contains(": ping"), "{text}");
    }
}
