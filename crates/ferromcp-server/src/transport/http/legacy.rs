//! The handshake era over Streamable HTTP (2025-03-26 … 2025-11-25):
//! `initialize` opens a session, later requests carry `Mcp-Session-Id`,
//! server→client requests and request-related notifications travel on the
//! POST's SSE stream, unrelated notifications on the GET stream, and a
//! dropped stream can be resumed with `Last-Event-ID`.
// LEGACY-09…LEGACY-20

use super::McpBody;
use super::gate::{Accepts, accepts};
use super::reject::Rejection;
use super::sessions::{Event, GET_STREAM, HttpSession};
use super::sse::{SseBody, SseItem, sse_event, sse_priming};
use super::{HttpInner, json_error, json_response, sse_response};
use super::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use crate::admit::admit_handshake;
use crate::context::{ContextParts, Outbound, Principal};
use crate::dispatch::{ClientRequester, Legacy};
use crate::listen;
use crate::notify::Change;
use crate::outcome::Failure;
use crate::tool::BoxFuture;
use bytes::Bytes;
use ferromcp_protocol::header::trim_ows;
use ferromcp_protocol::jsonrpc::{
    Message, OutgoingError, OutgoingNotification, OutgoingRequest, OutgoingResult, to_vec,
};
use ferromcp_protocol::ladder::ParamsProbe;
use ferromcp_protocol::meta::RequestMeta;
use ferromcp_protocol::method::{ClientRequest, NOTIFICATIONS_CANCELLED};
use ferromcp_protocol::types::CancelledNotificationParams;
use ferromcp_protocol::{ErrorObject, ProtocolVersion, RequestId};
use http::header::HeaderValue;
use http::{Response, StatusCode};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, mpsc};

/// Writes a request's messages to its session stream.
#[derive(Clone)]
struct StreamWriter {
    session: Arc<HttpSession>,
    sid: u64,
}

impl Outbound for StreamWriter {
    fn notify(&self, message: Bytes) {
        self.session.push_now(self.sid, message);
    }
    fn close_stream(&self, retry_ms: Option<u64>) {
        self.session.close_live(self.sid, retry_ms);
    }
}

impl ClientRequester for StreamWriter {
    fn request(
        &self,
        method: &'static str,
        params: Box<serde_json::value::RawValue>,
    ) -> BoxFuture<Result<Value, ErrorObject>> {
        let w = self.clone();
        Box::pin(async move {
            let (id, rx) = w.session.expect_answer();
            let msg = Bytes::from(to_vec(&OutgoingRequest::new(&id, method, Some(&params))));
            w.session.push(w.sid, msg, false).await;
            tokio::select! {
                r = rx => r.unwrap_or_else(|_| Err(ErrorObject::internal("the session ended"))),
                _ = w.session.closed.cancelled() => Err(ErrorObject::internal("the session ended")),
            }
        })
    }
}

/// The subject of the request's authenticated principal, if any.
pub(super) fn principal_subject(parts: &http::request::Parts) -> Option<&str> {
    parts
        .extensions
        .get::<Principal>()
        .map(|p| p.subject.as_str())
}

// HTTP-08, LEGACY-13, LEGACY-11, HTTP-05
/// A JSON-RPC error answering a well-formed request in a live handshake-era
/// session: always `200 OK` with the error in the body.
///
/// The code → HTTP status table (`ErrorCode::http_status`) is a
/// 2026-07-28 rule. The 2025-xx transports define no status for JSON-RPC
/// errors, and the deployed clients read any non-2xx as a transport failure
/// (the TypeScript SDK never hands the error to the application), while a
/// 404 on a request carrying `Mcp-Session-Id` means "session expired"
/// and makes a conforming client drop a live session and
/// re-initialize. So in this era 4xx stays with what the transport itself
/// refuses (missing/unknown session, bad protocol-version header, malformed
/// body, media types), as the Python and
/// TypeScript servers do.
fn handshake_error(id: Option<&RequestId>, e: &ErrorObject) -> Response<McpBody> {
    json_response(
        StatusCode::OK,
        Bytes::from(to_vec(&OutgoingError::new(id, e))),
    )
}

fn with_session_header(mut r: Response<McpBody>, id: &str) -> Response<McpBody> {
    if let Ok(v) = HeaderValue::from_str(id) {
        r.headers_mut().insert(MCP_SESSION_ID, v);
    }
    r
}

/// A POST in the handshake era.
pub(super) async fn post(
    inner: &Arc<HttpInner>,
    parts: http::request::Parts,
    msg: &Message<'_>,
    meta: Option<Box<RequestMeta>>,
    session_id: Option<&[u8]>,
    accept: Accepts,
    permit: OwnedSemaphorePermit,
) -> Response<McpBody> {
    let shared = &inner.shared;
    if shared.handshake_versions().is_empty() {
        // A modern-only server (VER-06): name the supported versions.
        let (id, requested) = match msg {
            Message::Request(r) => (Some(&r.id), initialize_version(r.params)),
            _ => (None, None),
        };
        let e = ErrorObject::unsupported_version(
            requested.as_deref().unwrap_or(""),
            shared.modern_versions().iter().map(|v| v.as_str()),
        );
        return json_error(id, &e);
    }
    // initialize opens a new session (LEGACY-01/02/12).
    if let Message::Request(r) = msg {
        if r.method == "initialize" {
            let typed = match ClientRequest::decode(&r.method, r.params) {
                Ok(ClientRequest::Initialize(p)) => p,
                // No session exists yet, so nothing can be mistaken for
                // "session expired": a refused initialize keeps the status
                // table, as the TypeScript server answers 400 to one it
                // cannot parse.
                Ok(_) => {
                    return json_error(Some(&r.id), &ErrorObject::internal("unexpected decode"));
                }
                Err(e) => return json_error(Some(&r.id), &e),
            };
            let (result, state) = match shared.initialize(&typed) {
                Ok(x) => x,
                Err(e) => return json_error(Some(&r.id), &e),
            };
            inner
                .sessions
                .set_event_buffer(shared.limits().session_event_buffer);
            // STATE-06: the session belongs to whoever initialized it.
            let owner = principal_subject(&parts).map(str::to_owned);
            let Ok(session) = inner.sessions.create(state, owner) else {
                return Rejection::TooManySessions.into_response();
            };
            if let Some(store) = shared.shared_sessions() {
                let record = session.handshake.to_record(session.owner.as_deref());
                let idle = shared.limits().session_idle_timeout;
                if let Err(e) = store.put(&session.id, &record, idle).await {
                    inner.sessions.remove(&session.id);
                    return shared_store_unavailable(Some(&r.id), &e);
                }
                ensure_relay(inner);
            }
            let body = Bytes::from(to_vec(&OutgoingResult::new(&r.id, &result)));
            return with_session_header(json_response(StatusCode::OK, body), &session.id);
        }
    }
    // Everything else needs a live session (LEGACY-13).
    let Some(sid) = session_id else {
        return Rejection::MissingSessionId.into_response();
    };
    let request_id = match msg {
        Message::Request(r) => Some(&r.id),
        _ => None,
    };
    let session = match find_session(inner, sid, principal_subject(&parts), request_id).await {
        Ok(Some(s)) => s,
        Ok(None) => return Rejection::SessionNotFound.into_response(),
        Err(r) => return r,
    };
    // LEGACY-11: an invalid or unsupported MCP-Protocol-Version → 400.
    if let Some(v) = parts.headers.get(MCP_PROTOCOL_VERSION) {
        let ok = std::str::from_utf8(trim_ows(v.as_bytes()))
            .ok()
            .and_then(ProtocolVersion::parse)
            .is_some_and(|v| shared.handshake_versions().contains(&v));
        if !ok {
            return Rejection::UnsupportedProtocolVersion.into_response();
        }
    }
    match msg {
        Message::Notification(_) | Message::Response(_) => {
            match deliver(inner, &session, msg).await {
                Ok(()) => accepted(),
                Err(r) => r,
            }
        }
        Message::Request(r) => {
            let meta = meta.unwrap_or_default();
            request(inner, parts, r, meta, session, accept, permit).await
        }
    }
}

/// Gives a client notification the server does not act on to the
/// [`crate::ServerBuilder::on_notification`] hook, if there is one.
pub(super) fn hand_to_hook(
    shared: &crate::shared::Shared,
    n: &ferromcp_protocol::jsonrpc::Notification<'_>,
    session: Option<&str>,
) {
    let Some(hook) = shared.on_notification() else {
        return;
    };
    if crate::client_notification::is_own(&n.method) {
        return;
    }
    // Params that are not JSON are not handed on (the message parsed, so
    // they are; the fallback keeps this total).
    let params = match n.params.map(|p| serde_json::from_str::<Value>(p.get())) {
        Some(Ok(v)) => Some(v),
        Some(Err(_)) => return,
        None => None,
    };
    hook(crate::ClientNotification::new(
        n.method.to_string(),
        params,
        session.map(str::to_owned),
    ));
}

/// Acts on a client notification or response in `session` on this
/// replica. True when it concerns a request this process neither runs nor
/// sent (a `notifications/cancelled` for a request another replica runs,
/// or the answer to another replica's server-to-client request), so only
/// another replica can act on it.
fn act(session: &HttpSession, msg: &Message<'_>) -> bool {
    match msg {
        Message::Notification(n) if n.method == NOTIFICATIONS_CANCELLED => {
            let p = n
                .params
                .and_then(|p| serde_json::from_str::<CancelledNotificationParams>(p.get()).ok());
            p.and_then(|p| p.request_id)
                .is_some_and(|id| !session.cancel(&id))
        }
        Message::Response(r) => r.id.as_ref().is_some_and(|id| {
            let outcome = r
                .outcome
                .clone()
                .map(|raw| serde_json::from_str(raw.get()).unwrap_or(Value::Null));
            !session.answer(id, outcome)
        }),
        _ => false,
    }
}

/// The JSON-RPC text of a cancellation or an answer, for the change bus.
fn relay_text(msg: &Message<'_>) -> Option<String> {
    let text = match msg {
        Message::Notification(n) => to_vec(&OutgoingNotification::new(
            NOTIFICATIONS_CANCELLED,
            n.params,
        )),
        Message::Response(r) => {
            let id = r.id.as_ref()?;
            match &r.outcome {
                Ok(raw) => to_vec(&OutgoingResult::new(id, *raw)),
                Err(e) => to_vec(&OutgoingError::new(Some(id), e)),
            }
        }
        Message::Request(_) => return None,
    };
    String::from_utf8(text).ok()
}

/// Delivers a client notification or response: here when this process can
/// act on it, else (with shared sessions) over the change bus to the
/// replica that can. A cancellation is relayed without waiting; an answer
/// waits until the bus confirms it, and is 503 with `Retry-After` when it
/// cannot (the client sends it again rather than the request hanging).
async fn deliver(
    inner: &Arc<HttpInner>,
    session: &HttpSession,
    msg: &Message<'_>,
) -> Result<(), Response<McpBody>> {
    if let Message::Notification(n) = msg {
        hand_to_hook(&inner.shared, n, Some(&session.id));
    }
    // Without shared sessions nobody else can have it: dropped, as before.
    if !act(session, msg) || inner.shared.shared_sessions().is_none() {
        return Ok(());
    }
    let Some(message) = relay_text(msg) else {
        return Ok(());
    };
    let change = Change::SessionMessage {
        session: session.id.clone(),
        message,
    };
    if matches!(msg, Message::Notification(_)) {
        inner.shared.bus().publish(change);
        return Ok(());
    }
    inner
        .shared
        .bus()
        .publish_confirmed(change)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "an answer for another replica could not be relayed");
            let e = ErrorObject::new(
                ferromcp_protocol::ErrorCode::INTERNAL_ERROR,
                "Service Unavailable: the message could not be passed on; send it again",
            );
            super::store_unavailable(None, &e, crate::single_use::RETRY_AFTER_SECS)
        })
}

/// Starts (once per service) the task that applies messages other replicas
/// relayed for sessions this process serves: cancellations of requests it
/// runs, answers to requests it sent. It resubscribes when the bus ends
/// its subscription (a shared bus reconnecting) and stops at shutdown.
fn ensure_relay(inner: &Arc<HttpInner>) {
    use std::sync::atomic::Ordering;
    if inner.relay_started.swap(true, Ordering::AcqRel) {
        return;
    }
    let weak = Arc::downgrade(inner);
    let bus = inner.shared.bus().clone();
    let shutdown = inner.shutdown.clone();
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let mut rx = bus.subscribe();
            loop {
                let next = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    n = rx.recv() => n,
                };
                match next {
                    Ok(Change::SessionMessage { session, message }) => {
                        let Some(inner) = weak.upgrade() else { return };
                        let Some(s) = inner.sessions.get_relayed(&session) else {
                            continue;
                        };
                        if let Ok(m) =
                            ferromcp_protocol::jsonrpc::decode_message(message.as_bytes())
                        {
                            act(&s, &m); // not ours either: dropped
                        }
                    }
                    Ok(Change::SessionEnded(session)) => {
                        // A DELETE on another replica: this replica's
                        // streams of that session end now.
                        let Some(inner) = weak.upgrade() else { return };
                        inner.sessions.remove(&session);
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(n)) => {
                        tracing::warn!(missed = n, "the session relay fell behind the change bus");
                    }
                    Err(RecvError::Closed) => break,
                }
            }
            if weak.strong_count() == 0 {
                return;
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(std::time::Duration::from_millis(250)) => {}
            }
        }
    });
}

/// The session `sid` for `principal`: the local one, or (with shared
/// sessions) one another replica created, adopted from its record. With a
/// shared store the record decides: gone means ended everywhere (404), and
/// a store that cannot answer is 503 with `Retry-After`, never a 404 a
/// client would drop a valid session for.
pub(super) async fn find_session(
    inner: &Arc<HttpInner>,
    sid: &[u8],
    principal: Option<&str>,
    request_id: Option<&RequestId>,
) -> Result<Option<Arc<HttpSession>>, Response<McpBody>> {
    let local = inner.sessions.get(sid, principal);
    let Some(store) = inner.shared.shared_sessions() else {
        return Ok(local);
    };
    ensure_relay(inner);
    let Ok(id) = std::str::from_utf8(sid) else {
        return Ok(None);
    };
    let idle = inner.shared.limits().session_idle_timeout;
    // Without the subscriptions: the GET stream's filter reads them.
    let record = match store.fetch_without_subscriptions(id, idle).await {
        Ok(r) => r,
        Err(e) => return Err(shared_store_unavailable(request_id, &e)),
    };
    let Some(record) = record else {
        if local.is_some() {
            inner.sessions.remove(id); // ended on another replica
        }
        return Ok(None);
    };
    if record.owner.as_deref() != principal {
        return Ok(None);
    }
    if let Some(s) = local {
        s.handshake.apply_level(&record);
        return Ok(Some(s));
    }
    let Some(state) = crate::session::HandshakeSession::from_record(&record) else {
        return Ok(None);
    };
    inner
        .sessions
        .set_event_buffer(inner.shared.limits().session_event_buffer);
    match inner.sessions.adopt(id, state, record.owner.clone()) {
        Ok(s) => Ok(Some(s)),
        Err(_) => Err(Rejection::TooManySessions.into_response()),
    }
}

/// 503 with `Retry-After`, answering request `id` (when the message was
/// one): the shared session store did not answer. The client is told what
/// to do; what failed goes to the server log only.
fn shared_store_unavailable(
    id: Option<&RequestId>,
    e: &crate::shared_sessions::SharedSessionsError,
) -> Response<McpBody> {
    tracing::warn!(error = %e, "the shared session store did not answer; 503");
    let e = ErrorObject::new(
        ferromcp_protocol::ErrorCode::INTERNAL_ERROR,
        "Service Unavailable: session store temporarily unavailable; retry",
    );
    super::store_unavailable(id, &e, crate::single_use::RETRY_AFTER_SECS)
}

/// Why a change to the shared session record was not made.
enum RecordRefusal {
    /// Refused by a limit: the answer to the request.
    Refused(ErrorObject),
    /// The session ended on another replica.
    Gone,
    /// The store did not answer.
    Unavailable(crate::shared_sessions::SharedSessionsError),
}

/// With shared sessions, stores the change a `logging/setLevel` or
/// `resources/subscribe`/`unsubscribe` makes to the session record, in the
/// store and before the request runs here: only that field changes, so
/// changes made concurrently on other replicas survive, and the store
/// enforces the subscription cap fleet-wide. Nothing to do for any other
/// request, or without shared sessions.
async fn update_shared_record(
    inner: &Arc<HttpInner>,
    session: &HttpSession,
    typed: &crate::admit::CallRequest,
) -> Result<(), RecordRefusal> {
    use crate::shared_sessions::{SessionUpdate, UpdateOutcome};
    let shared = &inner.shared;
    let Some(store) = shared.shared_sessions() else {
        return Ok(());
    };
    // A fallback method changes nothing the session record holds.
    let Some(typed) = typed.known() else {
        return Ok(());
    };
    let update = match typed {
        ClientRequest::SetLevel(p) if shared.logging_enabled() => {
            SessionUpdate::SetLogLevel(p.level)
        }
        ClientRequest::Subscribe(p) if shared.subscriptions_declared() => {
            shared
                .check_subscription_uri(&p.uri)
                .map_err(RecordRefusal::Refused)?;
            SessionUpdate::Subscribe {
                uri: &p.uri,
                max: shared.limits().max_subscriptions_per_session,
            }
        }
        ClientRequest::Unsubscribe(p) if shared.subscriptions_declared() => {
            SessionUpdate::Unsubscribe(&p.uri)
        }
        _ => return Ok(()),
    };
    let idle = shared.limits().session_idle_timeout;
    match store.update(&session.id, update, idle).await {
        Ok(UpdateOutcome::Applied) => Ok(()),
        Ok(UpdateOutcome::TooManySubscriptions) => {
            Err(RecordRefusal::Refused(shared.too_many_subscriptions()))
        }
        Ok(_) => {
            inner.sessions.remove(&session.id); // ended on another replica
            Err(RecordRefusal::Gone)
        }
        Err(e) => Err(RecordRefusal::Unavailable(e)),
    }
}

fn accepted() -> Response<McpBody> {
    let mut r = Response::new(McpBody::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

fn initialize_version(params: Option<&serde_json::value::RawValue>) -> Option<String> {
    let v: Value = serde_json::from_str(params?.get()).ok()?;
    v.get("protocolVersion")?.as_str().map(str::to_owned)
}

async fn request(
    inner: &Arc<HttpInner>,
    parts: http::request::Parts,
    r: &ferromcp_protocol::Request<'_>,
    meta: Box<RequestMeta>,
    session: Arc<HttpSession>,
    accept: Accepts,
    permit: OwnedSemaphorePermit,
) -> Response<McpBody> {
    let shared = inner.shared.clone();
    let call = match admit_handshake(&shared, &r.method, r.params) {
        Ok(c) => c,
        Err(e) => return handshake_error(Some(&r.id), &e),
    };
    match update_shared_record(inner, &session, &call.request).await {
        Ok(()) => {}
        Err(RecordRefusal::Refused(e)) => return handshake_error(Some(&r.id), &e),
        Err(RecordRefusal::Gone) => return Rejection::SessionNotFound.into_response(),
        Err(RecordRefusal::Unavailable(e)) => return shared_store_unavailable(Some(&r.id), &e),
    }
    let Some(cancel) = session.register(&r.id) else {
        return handshake_error(
            Some(&r.id),
            &ErrorObject::invalid_request(format_args!("request id {} is already in flight", r.id)),
        );
    };
    let state = session.handshake.clone();
    let use_sse = accept.sse_allowed(inner.config.json_only);
    let (sid, mut rx) = session.open_stream();
    let writer = StreamWriter {
        session: session.clone(),
        sid,
    };
    let ctx = ContextParts {
        capabilities: Some(state.capabilities.clone()),
        log_level: state.log_level(),
        outbound: use_sse.then(|| Arc::new(writer.clone()) as Arc<dyn Outbound>),
        principal: parts.extensions.get::<Principal>().cloned(),
        http: Some(Arc::new(parts)),
        ..ContextParts::new(r.id.clone(), &r.method, state.version, meta, cancel.clone())
    };
    let legacy = Legacy {
        requester: use_sse.then(|| Arc::new(writer.clone()) as Arc<dyn ClientRequester>),
        session: Some(state.clone()),
        // update_shared_record checked the cap in the store.
        shared_record: shared.shared_sessions().is_some(),
    };
    let id = r.id.clone();
    let mut fut = shared.dispatch(call, ctx, legacy);
    // Most handlers finish on their first poll: then the answer is pushed
    // here, with no task spawned (nothing can cancel a request between
    // reading and answering it).
    let refused = if let std::task::Poll::Ready(reply) = futures_util::poll!(&mut fut) {
        writer.session.unregister(&id);
        let bytes = match reply {
            Ok(b) => b,
            // AUTH-18: a scope refusal keeps its 403 and challenge in this
            // era too when nothing was sent on the stream, which is closed.
            Err(f @ Failure::InsufficientScope { .. }) if rx.is_empty() => {
                writer.session.detach(writer.sid);
                return super::failure_response(Some(&id), &f);
            }
            Err(f) => Bytes::from(to_vec(&OutgoingError::new(Some(&id), f.error()))),
        };
        if rx.is_empty() {
            // Nothing queued before it: the push cannot wait on the channel.
            writer.session.push(writer.sid, bytes, true).await;
            drop(permit);
        } else {
            // Notifications came first and may fill the live channel, which
            // is read below: push from a task, as for a pending handler.
            tokio::spawn(async move {
                let _permit = permit;
                writer.session.push(writer.sid, bytes, true).await;
            });
        }
        None
    } else {
        // AUTH-18: a scope refusal that comes later (a layer above the scope
        // check awaited first) still gets its 403 while the answer's head is
        // not sent; after that it is an error message on the stream.
        let (refused_tx, refused_rx) = tokio::sync::oneshot::channel::<Failure>();
        // The handler runs on its own task: in the handshake era a dropped
        // stream is not a cancellation (LEGACY-19); the client may resume.
        // It keeps the request's concurrency permit until it finishes.
        let task_id = id.clone();
        tokio::spawn(async move {
            let id = task_id;
            let _permit = permit;
            let reply = tokio::select! {
                r = fut => Some(r),
                _ = cancel.cancelled() => None,
            };
            writer.session.unregister(&id);
            let bytes = match reply {
                Some(Ok(b)) => b,
                Some(Err(f @ Failure::InsufficientScope { .. })) => match refused_tx.send(f) {
                    // The request's answer is the 403: close the stream.
                    Ok(()) => return,
                    Err(f) => Bytes::from(to_vec(&OutgoingError::new(Some(&id), f.error()))),
                },
                Some(Err(f)) => Bytes::from(to_vec(&OutgoingError::new(Some(&id), f.error()))),
                // CANCEL-03: nothing after a cancellation; close the stream.
                None => {
                    writer.session.detach(writer.sid);
                    return;
                }
            };
            writer.session.push(writer.sid, bytes, true).await;
        });
        Some(refused_rx)
    };
    let first = match refused {
        None => rx.recv().await,
        Some(mut refused) => {
            let first = tokio::select! {
                biased;
                Ok(f) = &mut refused => {
                    session.detach(sid);
                    return super::failure_response(Some(&id), &f);
                }
                first = rx.recv() => first,
            };
            // Committed to this answer: a refusal that raced in goes out on
            // the stream as a JSON-RPC error instead.
            refused.close();
            if let Ok(f) = refused.try_recv() {
                let bytes = Bytes::from(to_vec(&OutgoingError::new(Some(&id), f.error())));
                let session = session.clone();
                tokio::spawn(async move { session.push(sid, bytes, true).await });
            }
            first
        }
    };
    let Some(first) = first else {
        return accepted_none();
    };
    if let Some(retry) = first.close_retry {
        // Closed before anything else: prime, hint the retry, end (SEP-1699).
        return sse_response(SseBody::new().event(sse_priming(&format!("{sid}-0"), retry)));
    }
    if !use_sse || (first.last && accept.json) {
        // Nothing but the result: answer with plain JSON, `200 OK` for an
        // error too (see `handshake_error`). A client that accepts only
        // `text/event-stream` gets the one message as a stream (HTTP-06).
        return json_response(StatusCode::OK, first.data.clone());
    }
    let priming = (session.handshake.version == ProtocolVersion::V2025_11_25)
        .then(|| sse_priming(&format!("{sid}-0"), None));
    sse_response(session_stream(
        priming,
        vec![first],
        Some(rx),
        session.clone(),
        sid,
        inner.shared.limits().sse_keepalive,
    ))
}

fn accepted_none() -> Response<McpBody> {
    // The request was cancelled before producing anything.
    let mut r = Response::new(McpBody::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

/// An SSE body over a session stream: optional priming event, replayed
/// events, then live events until the stream's last message, keep-alives
/// in between. Ends when the session ends. When the body goes away, live
/// events stop being forwarded to it; they stay in the log for
/// `Last-Event-ID` resumption.
fn session_stream(
    priming: Option<Bytes>,
    replay: Vec<Event>,
    live: Option<mpsc::Receiver<Event>>,
    session: Arc<HttpSession>,
    sid: u64,
    keepalive: std::time::Duration,
) -> SseBody {
    let ended = replay.iter().any(|e| e.last);
    let body = SseBody::new()
        .events(priming)
        .events(replay.iter().map(|e| sse_event(Some(&e.id), &e.data)));
    let body = match live {
        Some(mut rx) if !ended => {
            let closed = session.closed.clone();
            body.source(futures_util::stream::poll_fn(move |cx| {
                rx.poll_recv(cx).map(|ev| {
                    ev.map(|ev| match ev {
                        Event {
                            close_retry: Some(retry),
                            ..
                        } => SseItem::Last(match retry {
                            Some(ms) => Bytes::from(format!("retry: {ms}\n\n")),
                            None => Bytes::new(),
                        }),
                        ev if ev.last => SseItem::Last(sse_event(Some(&ev.id), &ev.data)),
                        ev => SseItem::Event(sse_event(Some(&ev.id), &ev.data)),
                    })
                })
            }))
            .finish(async move {
                closed.cancelled_owned().await;
                None
            })
            .keep_alive(keepalive)
        }
        _ => body,
    };
    body.on_close(move |_| {
        if sid != GET_STREAM {
            session.detach(sid);
        }
    })
}

// LEGACY-24
/// A JSON-RPC batch from a 2025-03-26 session: every request in
/// it is answered in one JSON array; notifications and responses are
/// handled as usual. `initialize` may not be batched. Server-to-client
/// requests cannot ride a batch response, so handlers that need client input
/// fail with -32603 here.
pub(super) async fn batch(
    inner: &Arc<HttpInner>,
    parts: http::request::Parts,
    elements: Vec<&serde_json::value::RawValue>,
    session: Arc<HttpSession>,
) -> Response<McpBody> {
    let parts = Arc::new(parts);
    let mut out: Vec<Bytes> = Vec::new();
    for el in elements {
        let msg = match ferromcp_protocol::jsonrpc::decode_message(el.get().as_bytes()) {
            Ok(m) => m,
            Err(e) => {
                out.push(Bytes::from(to_vec(&OutgoingError::new(
                    e.id.as_ref(),
                    &e.error,
                ))));
                continue;
            }
        };
        match msg {
            Message::Notification(_) | Message::Response(_) => {
                // A relay that could not be confirmed loses nothing here:
                // the batch answers what it can, and the client's answer
                // to a server request times out on the asking replica.
                if let Err(r) = deliver(inner, &session, &msg).await {
                    tracing::warn!(status = %r.status(), "a batched message could not be relayed");
                }
            }
            Message::Request(r) => {
                let typed = if r.method == ferromcp_protocol::method::INITIALIZE {
                    Err(ErrorObject::invalid_request(
                        "initialize must not be part of a batch",
                    ))
                } else {
                    admit_handshake(&inner.shared, &r.method, r.params)
                };
                let typed = match typed {
                    Ok(t) => match update_shared_record(inner, &session, &t.request).await {
                        Ok(()) => Ok(t),
                        Err(RecordRefusal::Refused(e)) => Err(e),
                        Err(RecordRefusal::Gone) => Err(ErrorObject::invalid_request(
                            "the session has ended; initialize a new one",
                        )),
                        Err(RecordRefusal::Unavailable(e)) => {
                            tracing::warn!(error = %e, "the shared session store did not answer");
                            Err(ErrorObject::internal(
                                "session store temporarily unavailable; retry",
                            ))
                        }
                    },
                    Err(e) => Err(e),
                };
                let reply = match typed {
                    Err(e) => Err(crate::outcome::Failure::from(e)),
                    Ok(typed) => {
                        let state = session.handshake.clone();
                        let ctx = ContextParts {
                            capabilities: Some(state.capabilities.clone()),
                            principal: parts.extensions.get::<Principal>().cloned(),
                            http: Some(parts.clone()),
                            ..ContextParts::new(
                                r.id.clone(),
                                &r.method,
                                state.version,
                                ParamsProbe::parse(r.params).meta.unwrap_or_default(),
                                session.closed.child_token(),
                            )
                        };
                        let legacy = Legacy {
                            requester: None,
                            session: Some(state),
                            shared_record: inner.shared.shared_sessions().is_some(),
                        };
                        inner.shared.clone().dispatch(typed, ctx, legacy).await
                    }
                };
                out.push(match reply {
                    Ok(b) => b,
                    Err(f) => Bytes::from(to_vec(&OutgoingError::new(Some(&r.id), f.error()))),
                });
            }
        }
    }
    if out.is_empty() {
        return accepted();
    }
    let mut body = Vec::with_capacity(out.iter().map(Bytes::len).sum::<usize>() + out.len() + 2);
    body.push(b'[');
    for (i, b) in out.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(b);
    }
    body.push(b']');
    json_response(StatusCode::OK, Bytes::from(body))
}

/// GET (standalone stream or resumption) and DELETE with a session id.
pub(super) async fn get_or_delete(
    inner: &Arc<HttpInner>,
    parts: http::request::Parts,
    sid: &[u8],
) -> Response<McpBody> {
    let session = match find_session(inner, sid, principal_subject(&parts), None).await {
        Ok(Some(s)) => s,
        Ok(None) => return Rejection::SessionNotFound.into_response(),
        Err(r) => return r,
    };
    if parts.method == http::Method::DELETE {
        if let Some(store) = inner.shared.shared_sessions() {
            if let Err(e) = store.remove(&session.id).await {
                return shared_store_unavailable(None, &e);
            }
            // LEGACY-13: ended everywhere, so the other replicas' streams of
            // this session end too (their next request would find no record;
            // an open stream makes none).
            inner
                .shared
                .bus()
                .publish(Change::SessionEnded(session.id.clone()));
        }
        inner.sessions.remove(&session.id);
        let mut r = Response::new(McpBody::empty());
        *r.status_mut() = StatusCode::OK;
        return r;
    }
    if !accepts(&parts.headers).sse {
        return Rejection::GetNeedsSse.into_response();
    }
    let keepalive = inner.shared.limits().sse_keepalive;
    if let Some(last) = parts
        .headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
    {
        return match session.resume(last.trim()) {
            Some((replay, live)) => {
                let sid = last
                    .split_once('-')
                    .and_then(|(s, _)| s.parse().ok())
                    .unwrap_or(GET_STREAM);
                sse_response(session_stream(
                    None,
                    replay,
                    live,
                    session.clone(),
                    sid,
                    keepalive,
                ))
            }
            // Not 404: on a request with a live Mcp-Session-Id that means
            // "session expired" (LEGACY-13) and the client would drop a
            // session that is fine; the event id is what is wrong.
            None => Rejection::UnknownLastEventId.into_response(),
        };
    }
    let Some(rx) = session.open_get_stream() else {
        return Rejection::GetStreamOpen.into_response();
    };
    start_forwarder(inner, &session);
    sse_response(session_stream(
        None,
        Vec::new(),
        Some(rx),
        session.clone(),
        GET_STREAM,
        keepalive,
    ))
}

// ERA-12
/// Forwards list-changed and resource-updated notifications to the
/// session's GET stream, for as long as the session lives.
fn start_forwarder(inner: &Arc<HttpInner>, session: &Arc<HttpSession>) {
    use std::sync::atomic::Ordering;
    if session.forwarding.swap(true, Ordering::AcqRel) {
        return;
    }
    let shared = inner.shared.clone();
    let session = session.clone();
    let mut rx = shared.bus().subscribe();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = session.closed.cancelled() => break,
                c = rx.recv() => match c {
                    Ok(c) => {
                        // With shared sessions a subscription may have been
                        // made on another replica: read the record first.
                        if let (crate::notify::Change::ResourceUpdated(_), Some(store)) =
                            (&c, shared.shared_sessions())
                        {
                            let idle = shared.limits().session_idle_timeout;
                            match store.fetch(&session.id, idle).await {
                                Ok(Some(record)) => session.handshake.apply(&record),
                                Ok(None) => break, // ended on another replica
                                Err(e) => {
                                    tracing::warn!(error = %e, "shared session record unavailable; using the local subscriptions");
                                }
                            }
                        }
                        if let Some(m) = listen::render_for_session(&shared, &c, &session.handshake) {
                            session.push(GET_STREAM, m, false).await;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        // The bus ended the subscription (a shared bus lost
                        // its backend): end the GET stream rather than keep
                        // it open and silent; the client reconnects
                        // (LEGACY-16), which forwards again.
                        session.forwarding.store(false, Ordering::Release);
                        session.close_live(GET_STREAM, Some(BUS_LOST_RETRY_MS));
                        break;
                    }
                },
            }
        }
    });
}

/// The `retry` hint ending a GET stream whose change feed was lost.
const BUS_LOST_RETRY_MS: u64 = 1000;
