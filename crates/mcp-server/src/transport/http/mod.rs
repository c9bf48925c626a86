//! Streamable HTTP transport: both eras on one endpoint.
//!
//! [`McpService`] is a `tower::Service` (mount it in axum or any tower
//! stack); [`serve`] runs it on a TCP listener with TCP_NODELAY.
//!
//! Gates, in order (LADDER-01…LADDER-04): Origin/Host (403 / 421) → HTTP
//! method (405 + `Allow`) → `Content-Type` (415) → `Accept` (406) → body
//! size (413, enforced while streaming) and read time (408) → JSON-RPC
//! decoding (-32700 / -32600, 400) → era classification (ERA-03) → the
//! modern ladder or the handshake-era session layer.
//!
//! A modern request is served directly on the connection's task: parse →
//! ladder → handler → serialize. A response is JSON unless the handler
//! emits a notification (progress, log) before finishing; SSE is committed
//! only then, so every 4xx is still decided before a 200 goes out
//! (LADDER-13). A request still running after
//! [`Limits::sse_commit_after`](crate::Limits) is committed to SSE as well,
//! so keep-alives flow and a client disconnect cancels the handler.

mod body;
mod legacy;
mod sessions;

pub use body::McpBody;

use crate::context::{ContextParts, Outbound, Principal};
use crate::dispatch::{Legacy, Reply, into_owned};
use crate::error::Error;
use crate::listen;
use crate::server::{Server, Shared};
use crate::transport::origin::{OriginPolicy, OriginVerdict};
use body::{sse_event, sse_keepalive};
use bytes::Bytes;
use futures_util::StreamExt;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use mcp_protocol::ErrorObject;
use mcp_protocol::era::{HttpEra, SessionHint, classify_http};
use mcp_protocol::header::{HeaderList, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, trim_ows};
use mcp_protocol::jsonrpc::{Message, OutgoingError, RequestId, decode_message, to_vec};
use mcp_protocol::ladder::{ParamsProbe, Verdict, classify_probed};
use mcp_protocol::method::ClientRequest;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

/// HTTP transport settings.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Origin/Host policy; loopback only by default (SEC-01, SEC-04).
    pub origin: OriginPolicy,
    /// Serve only this path (others get 404); `None` serves any path.
    ///
    /// The root `/` is served as well: a router that strips its mount
    /// prefix before calling a nested service (axum's
    /// `Router::nest_service("/mcp", service)`) hands the service `/`, so
    /// the default config works both standalone at `/mcp` and nested.
    pub path: Option<String>,
    /// Never answer with SSE except for `subscriptions/listen`; progress and
    /// log notifications are then dropped (HTTP-17).
    pub json_only: bool,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            origin: OriginPolicy::default(),
            path: Some("/mcp".into()),
            json_only: false,
        }
    }
}

pub(crate) struct HttpInner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) config: HttpConfig,
    pub(crate) sessions: sessions::SessionStore,
    pub(crate) permits: Arc<Semaphore>,
    pub(crate) shutdown: CancellationToken,
    /// Whether the session relay task runs (shared sessions only).
    pub(crate) relay_started: std::sync::atomic::AtomicBool,
}

/// The MCP endpoint as a `tower::Service`. Cheap to clone.
#[derive(Clone)]
pub struct McpService {
    inner: Arc<HttpInner>,
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl McpService {
    /// A service for `server` with `config`.
    pub fn new(server: Server, config: HttpConfig) -> Self {
        let limits = &server.shared.limits;
        let sessions =
            sessions::SessionStore::new(limits.max_sessions, limits.session_idle_timeout);
        let permits = Arc::new(Semaphore::new(limits.max_concurrent_requests.max(1)));
        if server.shared.shared_sessions.is_some() {
            sessions.tag_request_ids();
        }
        Self {
            inner: Arc::new(HttpInner {
                shared: server.shared,
                config,
                sessions,
                permits,
                shutdown: CancellationToken::new(),
                relay_started: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// Ends every open stream (listen streams get their final result,
    /// SUB-10) and session; new requests are still served.
    pub fn shutdown_streams(&self) {
        self.inner.shutdown.cancel();
        self.inner.sessions.clear();
    }

    /// Frees sessions idle longer than the configured timeout; returns how
    /// many were freed. [`serve`] calls this periodically.
    pub fn sweep_sessions(&self) -> usize {
        self.inner.sessions.sweep()
    }

    /// Live handshake-era sessions.
    pub fn session_count(&self) -> usize {
        self.inner.sessions.len()
    }

    /// Serves one request.
    pub async fn handle<B>(&self, req: Request<B>) -> Response<McpBody>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        handle(self.inner.clone(), req).await
    }
}

impl<B> tower_service::Service<Request<B>> for McpService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<McpBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move { Ok(handle(inner, req).await) })
    }
}

/// Raw header lines of an `http::HeaderMap`, duplicates kept (LADDER-07).
pub(crate) struct Headers<'a>(pub(crate) &'a HeaderMap);

impl HeaderList for Headers<'_> {
    fn visit<'h>(&'h self, f: &mut dyn FnMut(&'h str, &'h [u8])) {
        for (n, v) in self.0 {
            f(n.as_str(), v.as_bytes());
        }
    }
}

pub(crate) fn json_response(status: StatusCode, body: Bytes) -> Response<McpBody> {
    let mut r = Response::new(McpBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub(crate) fn json_error(id: Option<&RequestId>, e: &ErrorObject) -> Response<McpBody> {
    if crate::request_state::is_store_unavailable_error(e) {
        return store_unavailable(id, e);
    }
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(status, Bytes::from(to_vec(&OutgoingError::new(id, e))))
}

/// A shared store (single-use `requestState`, shared sessions) could not
/// answer: 503 with `Retry-After` (the request may be sent again; see
/// `single_use` and `shared_sessions`).
pub(crate) fn store_unavailable(id: Option<&RequestId>, e: &ErrorObject) -> Response<McpBody> {
    let body = Bytes::from(to_vec(&OutgoingError::new(id, e)));
    let mut r = json_response(StatusCode::SERVICE_UNAVAILABLE, body);
    r.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(crate::single_use::RETRY_AFTER_SECS),
    );
    r
}

/// A transport-level rejection with a fixed status and an id-less JSON-RPC
/// error body (the body is optional per spec; it helps clients).
pub(crate) fn rejection(status: StatusCode, code: i64, msg: &str) -> Response<McpBody> {
    let e = ErrorObject::new(mcp_protocol::ErrorCode(code), msg);
    json_response(status, Bytes::from(to_vec(&OutgoingError::new(None, &e))))
}

pub(crate) fn method_not_allowed(allow: &'static str) -> Response<McpBody> {
    let mut r = rejection(StatusCode::METHOD_NOT_ALLOWED, -32600, "Method Not Allowed");
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    r
}

pub(crate) fn sse_response(
    stream: impl futures_util::Stream<Item = Bytes> + Send + 'static,
) -> Response<McpBody> {
    let mut r = Response::new(McpBody::stream(stream));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// What the client's `Accept` header allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) sse: bool,
}

impl Accepts {
    /// Whether a response may be an SSE stream: the client accepts it, and
    /// either the server is not configured for JSON only or JSON is not
    /// acceptable (then SSE is the one answer left, HTTP-06).
    pub(crate) fn sse_allowed(self, json_only: bool) -> bool {
        self.sse && (!json_only || !self.json)
    }
}

pub(crate) fn accepts(headers: &HeaderMap) -> Accepts {
    // For each type we can produce, the most specific matching range wins
    // (RFC 9110 §12.5.1: `type/subtype` over `type/*` over `*/*`), and
    // `q=0` means "not acceptable". Among ranges equally specific, any
    // non-zero weight makes the type acceptable.
    #[derive(Clone, Copy)]
    struct Best {
        level: u8,
        ok: bool,
    }
    fn note(b: &mut Best, level: u8, ok: bool) {
        if level > b.level {
            *b = Best { level, ok };
        } else if level == b.level {
            b.ok |= ok;
        }
    }
    let mut json = Best {
        level: 0,
        ok: false,
    };
    let mut sse = Best {
        level: 0,
        ok: false,
    };
    let mut seen = false;
    for v in headers.get_all(header::ACCEPT) {
        seen = true;
        for item in v.as_bytes().split(|b| *b == b',') {
            let mut fields = item.split(|b| *b == b';');
            let media = fields.next().map(trim_ows).unwrap_or_default();
            if media.is_empty() {
                continue;
            }
            let ok = !fields.any(|p| {
                let p = trim_ows(p);
                match p.split_first() {
                    Some((q, rest)) if q.eq_ignore_ascii_case(&b'q') => {
                        let w = trim_ows(rest);
                        w.first() == Some(&b'=') && is_zero_weight(trim_ows(&w[1..]))
                    }
                    _ => false,
                }
            });
            let is = |m: &str| media.eq_ignore_ascii_case(m.as_bytes());
            if is("application/json") {
                note(&mut json, 3, ok);
            } else if is("text/event-stream") {
                note(&mut sse, 3, ok);
            } else if is("application/*") {
                note(&mut json, 2, ok);
            } else if is("text/*") {
                note(&mut sse, 2, ok);
            } else if is("*/*") {
                note(&mut json, 1, ok);
                note(&mut sse, 1, ok);
            }
        }
    }
    if !seen {
        // No Accept header: anything goes (RFC 9110 §12.5.1).
        return Accepts {
            json: true,
            sse: true,
        };
    }
    Accepts {
        json: json.ok,
        sse: sse.ok,
    }
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`: whether
/// the weight is zero. A malformed weight is not taken as a refusal.
fn is_zero_weight(w: &[u8]) -> bool {
    match w.split_first() {
        Some((b'0', rest)) => match rest.split_first() {
            None => true,
            Some((b'.', digits)) => digits.len() <= 3 && digits.iter().all(|d| *d == b'0'),
            Some(_) => false,
        },
        _ => false,
    }
}

fn is_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// Why a request body could not be read.
#[derive(Debug, PartialEq, Eq)]
enum BodyError {
    TooLarge,
    TimedOut,
    Io,
}

/// Reads a whole request body, at most `limit` bytes, within `timeout`.
///
/// Every frame is copied into one buffer as it arrives and then freed, so
/// memory is the body size plus one frame. Collecting the frames themselves
/// (as `http_body_util::Collected` does) keeps one `Bytes` handle per frame,
/// and the read buffers they point into, until the end: a 4 MiB body sent as
/// one-byte chunks cost about 150 MB that way.
async fn collect_body<B>(body: B, limit: usize, timeout: Duration) -> Result<Bytes, BodyError>
where
    B: http_body::Body,
{
    use bytes::{Buf, BufMut};
    let read = async move {
        let mut body = std::pin::pin!(body);
        let mut buf: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(|_| BodyError::Io)?.into_data() else {
                continue; // trailers
            };
            if data.remaining() > limit.saturating_sub(buf.len()) {
                return Err(BodyError::TooLarge);
            }
            buf.put(data);
        }
        Ok(Bytes::from(buf))
    };
    tokio::time::timeout(timeout, read)
        .await
        .unwrap_or(Err(BodyError::TimedOut))
}

async fn read_body<B>(body: B, limit: usize, timeout: Duration) -> Result<Bytes, Response<McpBody>>
where
    B: http_body::Body + Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    collect_body(body, limit, timeout)
        .await
        .map_err(|e| match e {
            BodyError::TimedOut => rejection(
                StatusCode::REQUEST_TIMEOUT,
                -32600,
                "Request body not received in time",
            ),
            BodyError::TooLarge => rejection(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                "Request body too large",
            ),
            BodyError::Io => rejection(
                StatusCode::BAD_REQUEST,
                -32700,
                "Request body could not be read",
            ),
        })
}

/// A request that names its host or origin more than once is refused before
/// the Origin/Host check: components reading the first and the last copy
/// would disagree, so one `Host: localhost` line could carry a foreign
/// `Host` past the DNS-rebinding check (RFC 9112 §3.2: more than one Host →
/// 400). Browsers never send two `Origin` lines.
fn ambiguous_host_or_origin(parts: &http::request::Parts) -> Option<Response<McpBody>> {
    // RFC 9112 §3.2: 400 to an HTTP/1.1 request without Host, to one with
    // more than one Host line, and to an invalid Host value. HTTP/1.0 may
    // omit it; HTTP/2 and HTTP/3 carry `:authority` instead.
    let mut hosts = parts.headers.get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (_, Some(_)) => {
            return Some(rejection(
                StatusCode::BAD_REQUEST,
                -32600,
                "Bad Request: more than one Host header",
            ));
        }
        (None, None) if parts.version == http::Version::HTTP_11 => {
            return Some(rejection(
                StatusCode::BAD_REQUEST,
                -32600,
                "Bad Request: HTTP/1.1 request without a Host header",
            ));
        }
        (Some(h), None) if !valid_host_value(h.as_bytes()) => {
            return Some(rejection(
                StatusCode::BAD_REQUEST,
                -32600,
                "Bad Request: invalid Host header",
            ));
        }
        _ => {}
    }
    if parts
        .headers
        .get_all(header::ORIGIN)
        .iter()
        .nth(1)
        .is_some()
    {
        return Some(rejection(
            StatusCode::FORBIDDEN,
            -32600,
            "Origin not allowed",
        ));
    }
    None
}

/// `Host = uri-host [ ":" port ]` (RFC 9110 §7.2): an authority without
/// userinfo. Empty is allowed (RFC 9112 §3.2: a target without authority).
fn valid_host_value(v: &[u8]) -> bool {
    let (host, port) = if v.first() == Some(&b'[') {
        // IP-literal: `[` IPv6address / IPvFuture `]`.
        let Some(end) = v.iter().position(|b| *b == b']') else {
            return false;
        };
        let (lit, rest) = v.split_at(end + 1);
        let inner = &lit[1..lit.len() - 1];
        if inner.is_empty()
            || !inner
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'.' | b'-' | b'_' | b'~'))
        {
            return false;
        }
        match rest.split_first() {
            None => return true,
            Some((b':', port)) => (&[][..], port),
            Some(_) => return false,
        }
    } else {
        match v.iter().rposition(|b| *b == b':') {
            Some(i) => (&v[..i], &v[i + 1..]),
            None => (v, &[][..]),
        }
    };
    // reg-name / IPv4address: unreserved, pct-encoded, sub-delims.
    host.iter().all(|b| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'%'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
            )
    }) && port.iter().all(u8::is_ascii_digit)
}

/// The host the request is addressed to: the authority of an absolute-form
/// target (or HTTP/2 `:authority`), which RFC 9112 §3.2.2 says wins over
/// `Host`, else the `Host` header.
fn host_of(parts: &http::request::Parts) -> Option<&[u8]> {
    parts
        .uri
        .authority()
        .map(|a| a.as_str().as_bytes())
        .or_else(|| parts.headers.get(header::HOST).map(HeaderValue::as_bytes))
}

/// Whether the endpoint configured at `configured` answers `path`: that
/// path, or the root a prefix-stripping router (axum's `nest_service`)
/// leaves after removing the mount point.
fn serves_path(configured: &str, path: &str) -> bool {
    path == configured || path.is_empty() || path == "/"
}

async fn handle<B>(inner: Arc<HttpInner>, req: Request<B>) -> Response<McpBody>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = req.into_parts();
    if let Some(p) = &inner.config.path {
        if !serves_path(p, parts.uri.path()) {
            tracing::debug!(
                path = parts.uri.path(),
                endpoint = %p,
                "404: not the MCP endpoint; when the service is routed at another path, set HttpConfig::path to it (or None)"
            );
            return rejection(
                StatusCode::NOT_FOUND,
                -32601,
                &format!("Not Found: the MCP endpoint is {p}"),
            );
        }
    }
    // LADDER-01: Origin / Host.
    if let Some(r) = ambiguous_host_or_origin(&parts) {
        return r;
    }
    let host = host_of(&parts);
    match inner.config.origin.check(
        host,
        parts.headers.get(header::ORIGIN).map(HeaderValue::as_bytes),
    ) {
        OriginVerdict::Allowed => {}
        OriginVerdict::BadHost => {
            return rejection(StatusCode::MISDIRECTED_REQUEST, -32600, "Host not allowed");
        }
        OriginVerdict::BadOrigin => {
            return rejection(StatusCode::FORBIDDEN, -32600, "Origin not allowed");
        }
    }
    let session_id = parts
        .headers
        .get(MCP_SESSION_ID)
        .map(|v| trim_ows(v.as_bytes()).to_vec());
    match parts.method {
        Method::POST => {}
        Method::GET | Method::DELETE => {
            return match session_id {
                Some(id) => legacy::get_or_delete(&inner, parts, &id).await,
                None => method_not_allowed("POST"),
            };
        }
        _ => return method_not_allowed("GET, POST, DELETE"),
    }
    if !is_json_content_type(&parts.headers) {
        return rejection(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32600,
            "Content-Type must be application/json",
        );
    }
    let accept = accepts(&parts.headers);
    if !accept.json && !accept.sse {
        return rejection(
            StatusCode::NOT_ACCEPTABLE,
            -32600,
            "Accept must include application/json or text/event-stream",
        );
    }
    let limits = &inner.shared.limits;
    if let Some(len) = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > limits.max_body_bytes as u64 {
            return rejection(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                "Request body too large",
            );
        }
    }
    // The permit is held until the handler finishes, also when the answer
    // is an SSE stream or the handler runs on its own task (handshake era).
    let Ok(permit) = inner.permits.clone().acquire_owned().await else {
        return rejection(
            StatusCode::SERVICE_UNAVAILABLE,
            -32603,
            "Server shutting down",
        );
    };
    let bytes = match read_body(body, limits.max_body_bytes, limits.body_read_timeout).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    // LEGACY-24: a 2025-03-26 session may send JSON-RPC batches.
    if let Some(Ok(elements)) = mcp_protocol::jsonrpc::split_batch(&bytes) {
        let session = match session_id.as_deref() {
            Some(id) => {
                match legacy::find_session(&inner, id, legacy::principal_subject(&parts)).await {
                    Ok(s) => s,
                    Err(r) => return r,
                }
            }
            None => None,
        };
        if let Some(session) = session {
            if !session.state.version.forbids_batches() {
                return legacy::batch(&inner, parts, elements, session).await;
            }
        }
    }
    let msg = match decode_message(&bytes) {
        Ok(m) => m,
        Err(e) => return json_error(e.id.as_ref(), &e.error),
    };
    let params = match &msg {
        Message::Request(r) => r.params,
        Message::Notification(n) => n.params,
        Message::Response(_) => None,
    };
    let probe = ParamsProbe::parse(params);
    let hint = match &session_id {
        None => SessionHint::Absent,
        Some(id)
            if inner
                .sessions
                .get(id, legacy::principal_subject(&parts))
                .is_some() =>
        {
            SessionHint::Live
        }
        Some(_) => SessionHint::Unknown,
    };
    let header_version = parts
        .headers
        .get(MCP_PROTOCOL_VERSION)
        .map(|v| trim_ows(v.as_bytes()));
    match classify_http(hint, header_version, probe.has_modern_envelope()) {
        HttpEra::Modern => modern(&inner, parts, msg, probe, accept, permit).await,
        HttpEra::Handshake { .. } => {
            legacy::post(
                &inner,
                parts,
                &msg,
                probe.meta,
                session_id.as_deref(),
                accept,
                permit,
            )
            .await
        }
    }
}

/// Outbound for a modern request: a bounded channel read by the response.
struct ChannelOutbound(mpsc::Sender<Bytes>);

impl Outbound for ChannelOutbound {
    fn notify(&self, message: Bytes) {
        let _ = self.0.try_send(message);
    }
}

async fn modern(
    inner: &Arc<HttpInner>,
    parts: http::request::Parts,
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
            let verdict = mcp_protocol::ladder::classify_inbound_request(
                &msg,
                Some(&headers),
                &shared.modern_versions,
                None,
            );
            return match verdict {
                Ok(_) => {
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
    let registry = shared.registry();
    let lookup = |name: &str| registry.tool(name).and_then(|t| t.headers.clone());
    let members = probe.members();
    let route = match classify_probed(
        &req.id,
        &req.method,
        probe,
        Some(&headers),
        &shared.modern_versions,
        Some(&lookup),
    ) {
        Ok(Verdict::Request(r)) => r,
        Ok(Verdict::Notification) => {
            return json_error(
                Some(&req.id),
                &ErrorObject::invalid_request("unexpected notification"),
            );
        }
        Err(rej) => return json_error(Some(&req.id), &rej.error),
    };
    drop(registry);
    // BASE-12: methods removed from the modern wire are unknown there (-32601, 404).
    if mcp_protocol::method::HANDSHAKE_ONLY_CLIENT_METHODS.contains(&req.method.as_ref()) {
        return json_error(Some(&req.id), &ErrorObject::method_not_found(&req.method));
    }
    let typed = match ClientRequest::decode_probed(&req.method, req.params, &members)
        .and_then(into_owned)
    {
        Ok(t) => t,
        Err(e) => return json_error(Some(&req.id), &e),
    };
    if let ClientRequest::Listen(p) = typed {
        // Listen streams have their own cap (max_listen_streams).
        drop(permit);
        if !accept.sse {
            return rejection(
                StatusCode::NOT_ACCEPTABLE,
                -32600,
                "subscriptions/listen requires Accept: text/event-stream",
            );
        }
        return listen_stream(inner, req.id.clone(), p.notifications);
    }
    let wants_notifications = route.meta.progress_token.is_some() || route.meta.log_level.is_some();
    let sse_allowed = accept.sse_allowed(inner.config.json_only);
    let (tx, rx) = if wants_notifications && sse_allowed {
        let (tx, rx) = mpsc::channel::<Bytes>(64);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let caps = route.meta.client_capabilities.clone().unwrap_or_default();
    let log_level = route.meta.log_level;
    let principal = parts.extensions.get::<Principal>().cloned();
    let cancel = CancellationToken::new();
    let ctx = ContextParts {
        id: req.id.clone(),
        method: crate::context::method_name(&req.method),
        version: route.version,
        meta: route.meta,
        capabilities: caps,
        log_level,
        cancel: cancel.clone(),
        outbound: tx.map(|t| Arc::new(ChannelOutbound(t)) as Arc<dyn Outbound>),
        principal,
        http: Some(Arc::new(parts)),
    };
    let fut = shared.clone().dispatch(typed, ctx, Legacy::default());
    respond(
        req.id.clone(),
        fut,
        rx,
        Accepts {
            json: accept.json,
            sse: sse_allowed,
        },
        cancel,
        shared.limits.clone(),
        permit,
    )
    .await
}

/// The answer of a handler that finished before anything was streamed: JSON,
/// or (when the client accepts only `text/event-stream`) an SSE stream of
/// that one message (HTTP-06). A JSON-RPC error keeps its status and JSON
/// body from the one table (HTTP-08): error responses are not negotiated.
fn reply_response(id: &RequestId, reply: Reply, json_ok: bool) -> Response<McpBody> {
    match reply {
        Ok(bytes) if json_ok => json_response(StatusCode::OK, bytes),
        Ok(bytes) => sse_response(futures_util::stream::iter([sse_event(None, &bytes)])),
        Err(e) => json_error(Some(id), &e),
    }
}

fn reply_bytes(id: &RequestId, reply: Reply) -> Bytes {
    match reply {
        Ok(b) => b,
        Err(e) => Bytes::from(to_vec(&OutgoingError::new(Some(id), &e))),
    }
}

/// Waits for the handler; commits to SSE only when a notification arrives
/// first or the handler runs long (LADDER-13).
async fn respond(
    id: RequestId,
    mut fut: crate::dispatch::Dispatch,
    rx: Option<mpsc::Receiver<Bytes>>,
    answer_as: Accepts,
    cancel: CancellationToken,
    limits: crate::Limits,
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
            _ = tokio::time::sleep(limits.sse_commit_after) => {}
        }
        return sse_response(sse_body(
            id,
            fut,
            None,
            None,
            guard,
            limits.sse_keepalive,
            permit,
        ));
    };
    let first = tokio::select! {
        r = &mut fut => {
            // Finished: anything already queued still goes out, via SSE.
            match rx.try_recv() {
                Ok(n) => {
                    let rest = std::iter::from_fn(|| rx.try_recv().ok()).collect::<Vec<_>>();
                    let mut events: Vec<Bytes> = std::iter::once(n).chain(rest).map(|b| sse_event(None, &b)).collect();
                    events.push(sse_event(None, &reply_bytes(&id, r)));
                    guard.disarm();
                    return sse_response(futures_util::stream::iter(events));
                }
                Err(_) => { guard.disarm(); return reply_response(&id, r, json_ok); }
            }
        }
        n = rx.recv() => n,
        _ = tokio::time::sleep(limits.sse_commit_after) => None,
    };
    sse_response(sse_body(
        id,
        fut,
        Some(rx),
        first,
        guard,
        limits.sse_keepalive,
        permit,
    ))
}

/// The SSE body of a committed request: queued notifications, keep-alives,
/// then the final response, which ends the stream (SSE-03). Dropping the
/// body (client gone) drops the handler and cancels its token (CANCEL-01).
fn sse_body(
    id: RequestId,
    fut: crate::dispatch::Dispatch,
    rx: Option<mpsc::Receiver<Bytes>>,
    first: Option<Bytes>,
    guard: tokio_util::sync::DropGuard,
    keepalive: Duration,
    permit: OwnedSemaphorePermit,
) -> impl futures_util::Stream<Item = Bytes> + Send {
    struct St {
        id: RequestId,
        fut: Option<crate::dispatch::Dispatch>,
        rx: Option<mpsc::Receiver<Bytes>>,
        first: Option<Bytes>,
        guard: Option<tokio_util::sync::DropGuard>,
        tick: tokio::time::Interval,
        permit: Option<OwnedSemaphorePermit>,
    }
    let mut tick = tokio::time::interval(keepalive);
    tick.reset();
    let st = St {
        id,
        fut: Some(fut),
        rx,
        first,
        guard: Some(guard),
        tick,
        permit: Some(permit),
    };
    fn final_event(st: &mut St, r: Reply) -> Bytes {
        // Flush notifications that raced the result, then the result.
        let mut out = Vec::new();
        if let Some(rx) = st.rx.as_mut() {
            while let Ok(n) = rx.try_recv() {
                out.extend_from_slice(&sse_event(None, &n));
            }
        }
        out.extend_from_slice(&sse_event(None, &reply_bytes(&st.id, r)));
        if let Some(g) = st.guard.take() {
            g.disarm();
        }
        st.permit = None; // the handler is done
        Bytes::from(out)
    }
    futures_util::stream::unfold(st, |mut st| async move {
        if let Some(f) = st.first.take() {
            return Some((sse_event(None, &f), st));
        }
        let fut = st.fut.as_mut()?;
        let out = match st.rx.as_mut() {
            Some(rx) => tokio::select! {
                biased;
                n = rx.recv() => match n {
                    Some(n) => sse_event(None, &n),
                    None => { st.rx = None; sse_keepalive() }
                },
                r = fut => { st.fut = None; final_event(&mut st, r) }
                _ = st.tick.tick() => sse_keepalive(),
            },
            None => tokio::select! {
                r = fut => { st.fut = None; final_event(&mut st, r) }
                _ = st.tick.tick() => sse_keepalive(),
            },
        };
        Some((out, st))
    })
}

/// A `subscriptions/listen` stream (SUB-*, HTTP-16): acknowledgement first,
/// then matching changes tagged with the subscription id, keep-alives, and
/// the listen result on server shutdown.
fn listen_stream(
    inner: &Arc<HttpInner>,
    id: RequestId,
    requested: mcp_protocol::types::SubscriptionFilter,
) -> Response<McpBody> {
    let shared = inner.shared.clone();
    let Some(slot) = ListenSlot::acquire(
        &inner.sessions.listen_count,
        shared.limits.max_listen_streams,
    ) else {
        return rejection(
            StatusCode::SERVICE_UNAVAILABLE,
            -32603,
            "Too many open subscriptions",
        );
    };
    let filter = listen::honoured(&shared, &requested);
    // Subscribe before acknowledging (SUB-13).
    let rx = shared.bus.subscribe();
    let ack = sse_event(None, &listen::acknowledgement(&id, &filter));
    let mut tick = tokio::time::interval(shared.limits.sse_keepalive);
    tick.reset();
    let shutdown = inner.shutdown.clone();
    struct St {
        rx: tokio::sync::broadcast::Receiver<crate::notify::Change>,
        filter: mcp_protocol::types::SubscriptionFilter,
        id: RequestId,
        tick: tokio::time::Interval,
        shutdown: CancellationToken,
        done: bool,
        _slot: ListenSlot,
    }
    let st = St {
        rx,
        filter,
        id,
        tick,
        shutdown,
        done: false,
        _slot: slot,
    };
    let rest = futures_util::stream::unfold(st, |mut st| async move {
        if st.done {
            return None;
        }
        loop {
            tokio::select! {
                _ = st.shutdown.cancelled() => {
                    st.done = true;
                    let b = sse_event(None, &listen::ended(&st.id));
                    return Some((b, st));
                }
                c = st.rx.recv() => match c {
                    Ok(c) => {
                        if let Some(m) = listen::render_for_listen(&c, &st.filter, &st.id) {
                            return Some((sse_event(None, &m), st));
                        }
                    }
                    // Lagged past the backlog, or bus closed: end the stream (SUB-13).
                    Err(_) => return None,
                },
                _ = st.tick.tick() => return Some((sse_keepalive(), st)),
            }
        }
    });
    sse_response(futures_util::stream::once(async move { ack }).chain(rest))
}

/// A counted slot for an open listen stream, released on drop.
pub(crate) struct ListenSlot(Arc<std::sync::atomic::AtomicUsize>);

impl ListenSlot {
    fn acquire(counter: &Arc<std::sync::atomic::AtomicUsize>, max: usize) -> Option<Self> {
        use std::sync::atomic::Ordering;
        if counter.fetch_add(1, Ordering::AcqRel) >= max {
            counter.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Self(counter.clone()))
    }
}

impl Drop for ListenSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Waits, at most `limit`, until the client has sent enough bytes to tell
/// HTTP/1 from HTTP/2: a byte that differs from the HTTP/2 preface, or the
/// whole preface. False on timeout, end of stream or error.
///
/// hyper's header read timeout starts only once the version is known, and
/// version detection itself waits forever: a client that connects and stays
/// silent (or sends a partial preface such as `P`) held its connection and
/// task indefinitely.
async fn version_bytes_arrived(stream: &tokio::net::TcpStream, limit: Duration) -> bool {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let wait = async {
        let mut buf = [0u8; PREFACE.len()];
        loop {
            let n = stream.peek(&mut buf).await.ok()?;
            let seen = buf.get(..n)?;
            if n == 0 {
                return None;
            }
            if n == PREFACE.len() || PREFACE.get(..n) != Some(seen) {
                return Some(());
            }
            // A prefix of the preface: the rest is on its way, or never comes.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    matches!(tokio::time::timeout(limit, wait).await, Ok(Some(())))
}

/// Serves `server` on `addr` at `/mcp` until `shutdown` completes.
pub async fn serve(
    server: Server,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(Error::io)?;
    serve_listener(
        McpService::new(server, HttpConfig::default()),
        listener,
        shutdown,
    )
    .await
}

/// Serves `service` on an already bound listener until `shutdown` completes:
/// TCP_NODELAY on every connection, HTTP/1.1 and HTTP/2, header read
/// timeout, then a graceful drain: the listener closes (new connections are
/// refused), listen streams end with their final result, in-flight
/// requests finish within [`crate::Limits::drain_timeout`], and the function
/// returns.
pub async fn serve_listener(
    service: McpService,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    serve_wrapped(service.clone(), service, listener, shutdown).await
}

/// Like [`serve_listener`], with `layer` wrapped around the MCP service
/// (for example `mcp_auth::resource::AuthLayer`, or any tower layer).
///
/// The listener, timeouts, session sweeping and graceful shutdown are the
/// MCP service's; every request goes through `layer.layer(service)`.
pub async fn serve_layered<L, S, RB>(
    service: McpService,
    layer: L,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error>
where
    L: tower_layer::Layer<McpService, Service = S>,
    S: tower_service::Service<Request<hyper::body::Incoming>, Response = Response<RB>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    RB: http_body::Body + Send + 'static,
    RB::Data: Send,
    RB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let wrapped = layer.layer(service.clone());
    serve_wrapped(wrapped, service, listener, shutdown).await
}

async fn serve_wrapped<S, RB>(
    wrapped: S,
    service: McpService,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error>
where
    S: tower_service::Service<Request<hyper::body::Incoming>, Response = Response<RB>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    RB: http_body::Body + Send + 'static,
    RB::Data: Send,
    RB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    #[cfg(feature = "http2")]
    use hyper_util::rt::TokioExecutor;
    use hyper_util::rt::{TokioIo, TokioTimer};
    let limits = service.inner.shared.limits.clone();
    // Feature `http2`: HTTP/1.1 or h2c per connection; otherwise HTTP/1.1 only.
    #[cfg(feature = "http2")]
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    #[cfg(feature = "http2")]
    let mut h1 = builder.http1();
    #[cfg(not(feature = "http2"))]
    let mut builder = hyper::server::conn::http1::Builder::new();
    #[cfg(not(feature = "http2"))]
    let h1 = &mut builder;
    h1.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(limits.max_headers);
    let builder = Arc::new(builder);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let sweeper = {
        let s = service.clone();
        tokio::spawn(async move {
            let mut t = tokio::time::interval(Duration::from_secs(30));
            loop {
                t.tick().await;
                s.sweep_sessions();
            }
        })
    };
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // EMFILE and friends: back off briefly instead of spinning.
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let svc = wrapped.clone();
                let hyper_svc = hyper::service::service_fn(move |req| {
                    let mut svc = svc.clone();
                    async move {
                        futures_util::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
                        svc.call(req).await
                    }
                });
                let builder = builder.clone();
                let watcher = graceful.watcher();
                let first_bytes_timeout = limits.header_read_timeout;
                tokio::spawn(async move {
                    if !version_bytes_arrived(&stream, first_bytes_timeout).await {
                        return;
                    }
                    #[cfg(feature = "http2")]
                    let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), hyper_svc).into_owned();
                    #[cfg(not(feature = "http2"))]
                    let conn = builder.serve_connection(TokioIo::new(stream), hyper_svc);
                    let _ = watcher.watch(conn).await;
                });
            }
            _ = &mut shutdown => break,
        }
    }
    // Graceful drain. Closing the listener first makes new connections
    // fail at once (refused), so a load balancer retries them elsewhere
    // before they were sent; a listener kept open until exit would queue
    // them in the backlog and reset them after the request was written.
    drop(listener);
    sweeper.abort();
    // Listen streams end with their final result (SUB-10), handshake-era
    // GET streams close; in-flight requests finish (their connections
    // answer with `connection: close`, idle ones close now), within the
    // drain deadline.
    service.shutdown_streams();
    if tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            deadline = ?limits.drain_timeout,
            "drain deadline passed: closing the connections still open"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn accept_of(values: &[&str]) -> (bool, bool) {
        let mut h = HeaderMap::new();
        for v in values {
            if let Ok(v) = HeaderValue::from_str(v) {
                h.append(header::ACCEPT, v);
            }
        }
        let a = accepts(&h);
        (a.json, a.sse)
    }

    #[test]
    fn the_endpoint_path_or_a_nested_root_is_served() {
        assert!(serves_path("/mcp", "/mcp"));
        // axum's nest_service("/mcp", ..) strips the prefix.
        assert!(serves_path("/mcp", "/"));
        assert!(serves_path("/mcp", ""));
        assert!(!serves_path("/mcp", "/other"));
        assert!(!serves_path("/mcp", "/mcp/"));
        assert!(!serves_path("/mcp", "/mcp/x"));
    }

    #[test]
    fn accept_honours_weights_and_specificity() {
        // (Accept lines, JSON acceptable, SSE acceptable)
        let cases: &[(&[&str], bool, bool)] = &[
            (&[], true, true),
            (&["application/json, text/event-stream"], true, true),
            (&["text/event-stream"], false, true),
            (&["application/json"], true, false),
            (&["APPLICATION/JSON; charset=utf-8"], true, false),
            (
                &["application/json;q=0, text/event-stream;q=0"],
                false,
                false,
            ),
            (
                &["application/json;q=0.000, text/event-stream"],
                false,
                true,
            ),
            (&["application/json; q=0.001"], true, false),
            (&["application/json;Q=0"], false, false),
            (&["application/json;q = 0"], false, false),
            (&["*/*"], true, true),
            (&["*/*;q=0"], false, false),
            (&["*/*;q=0, application/json"], true, false),
            (&["*/*, application/json;q=0"], false, true),
            (&["text/*"], false, true),
            (&["application/*;q=0.5"], true, false),
            (&["application/*;q=0, application/json"], true, false),
            (&["application/json", "text/event-stream"], true, true),
            (&["application/json;q=0", "application/json"], true, false),
            (&["image/png"], false, false),
            (&["application/json;q=bogus"], true, false),
            (&[",,, ;q=0"], false, false),
        ];
        for (lines, json, sse) in cases {
            assert_eq!(accept_of(lines), (*json, *sse), "{lines:?}");
        }
    }

    proptest::proptest! {
        /// The outcome does not depend on the order of the ranges, and any
        /// bytes parse without panicking.
        #[test]
        fn accept_is_order_independent(
            items in proptest::collection::vec(
                proptest::sample::select(vec![
                    "application/json", "text/event-stream", "*/*", "application/*",
                    "text/*", "text/html", "application/json;q=0", "text/event-stream;q=0",
                    "*/*;q=0", "application/*;q=0", "text/*;q=0.0", "application/json;q=0.5",
                ]),
                0..6,
            ),
            noise in ".{0,40}",
        ) {
            let joined = items.join(", ");
            let mut reversed = items.clone();
            reversed.reverse();
            proptest::prop_assert_eq!(accept_of(&[&joined]), accept_of(&[&reversed.join(",")]));
            let _ = accept_of(&[&noise]);
        }
    }

    #[test]
    fn host_values_follow_rfc_9110() {
        for ok in [
            "",
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:443",
            "EXAMPLE.com",
            "2130706433",
        ] {
            assert!(valid_host_value(ok.as_bytes()), "{ok:?}");
        }
        for bad in [
            "localhost:80@evil.com",
            "user@localhost",
            "evil.com#@localhost",
            "[::1",
            "local host",
            "localhost/path",
            "localhost:-1",
        ] {
            assert!(!valid_host_value(bad.as_bytes()), "{bad:?}");
        }
    }

    /// A one-byte frame buffer that counts itself live until dropped.
    struct Tracked(Arc<AtomicUsize>, [u8; 1]);

    impl AsRef<[u8]> for Tracked {
        fn as_ref(&self) -> &[u8] {
            &self.1
        }
    }

    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    type FrameStream = std::pin::Pin<
        Box<dyn futures_util::Stream<Item = Result<http_body::Frame<Bytes>, Infallible>> + Send>,
    >;

    /// A body of `n` one-byte frames that records the most frames alive at once.
    fn one_byte_frames(
        n: usize,
        live: Arc<AtomicUsize>,
        peak: Arc<AtomicUsize>,
    ) -> http_body_util::StreamBody<FrameStream> {
        let frames = futures_util::stream::iter(0..n).map(move |_| {
            let now = live.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            Ok(http_body::Frame::data(Bytes::from_owner(Tracked(
                live.clone(),
                [b' '],
            ))))
        });
        http_body_util::StreamBody::new(Box::pin(frames) as FrameStream)
    }

    /// Regression: a chunked body of one-byte chunks used to be collected
    /// frame by frame (one `Bytes` per chunk held until the end, ~40x the
    /// body size in memory). Frames are now copied and freed one at a time.
    #[tokio::test]
    async fn body_frames_are_copied_not_accumulated() {
        let live = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let body = one_byte_frames(10_000, live.clone(), peak.clone());
        let got = collect_body(body, 10_000, Duration::from_secs(5)).await;
        assert_eq!(got.map(|b| b.len()), Ok(10_000));
        assert_eq!(live.load(Ordering::SeqCst), 0);
        assert!(peak.load(Ordering::SeqCst) <= 2, "frames were accumulated");
    }

    /// Regression: a connection that sent nothing, or only part of the
    /// HTTP/2 preface, was never timed out (hyper's header timeout starts
    /// after version detection).
    #[tokio::test]
    async fn silent_and_partial_preface_connections_time_out() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await;
        let listener = listener.unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("addr: {e}"));
        let limit = Duration::from_millis(200);
        for prefix in [&b""[..], b"P", b"PRI * HTTP/2.0\r\n"] {
            let mut client = tokio::net::TcpStream::connect(addr).await;
            let client = client.as_mut().unwrap_or_else(|e| panic!("connect: {e}"));
            client.write_all(prefix).await.ok();
            let (server, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
            let started = std::time::Instant::now();
            assert!(!version_bytes_arrived(&server, limit).await, "{prefix:?}");
            assert!(started.elapsed() >= limit);
        }
        for prefix in [
            &b"G"[..],
            b"POST / HTTP/1.1\r\n",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        ] {
            let mut client = tokio::net::TcpStream::connect(addr).await;
            let client = client.as_mut().unwrap_or_else(|e| panic!("connect: {e}"));
            client.write_all(prefix).await.ok();
            let (server, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
            assert!(version_bytes_arrived(&server, limit).await, "{prefix:?}");
        }
    }

    fn post(
        body: serde_json::Value,
        extra: &[(&str, &str)],
    ) -> Request<http_body_util::Full<Bytes>> {
        let mut b = Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (n, v) in extra {
            b = b.header(*n, *v);
        }
        b.body(http_body_util::Full::new(Bytes::from(body.to_string())))
            .unwrap_or_else(|e| panic!("request: {e}"))
    }

    /// Regression: the `max_concurrent_requests` permit was released when
    /// the response head was ready, so handlers answered over SSE (modern
    /// wire) or running on their own task (handshake era) were not counted
    /// and one client could start any number of them.
    #[tokio::test]
    async fn sse_and_handshake_handlers_hold_their_concurrency_permit() {
        use crate::{NoArgs, RequestContext, tool};
        let limits = crate::Limits {
            max_concurrent_requests: 1,
            sse_commit_after: Duration::from_millis(10),
            ..crate::Limits::default()
        };
        let server = Server::builder("t", "1")
            .limits(limits)
            .tool(
                tool("wait").handler(|_: NoArgs, cx: RequestContext| async move {
                    cx.progress(1.0, None, None);
                    tokio::select! {
                        _ = cx.cancelled() => {}
                        _ = tokio::time::sleep(Duration::from_millis(300)) => {}
                    }
                    "done"
                }),
            )
            .build()
            .unwrap_or_else(|e| panic!("build: {e}"));
        let svc = McpService::new(server, HttpConfig::default());
        let free = || svc.inner.permits.available_permits();
        // Modern wire: the handler commits SSE with its progress notification.
        let meta = serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "progressToken": "p"
        });
        let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "wait", "_meta": meta}});
        let headers = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "wait"),
        ];
        let resp = svc.handle(post(call, &headers)).await;
        assert_eq!(
            resp.headers()
                .get(header::CONTENT_TYPE)
                .map(|v| v.as_bytes()),
            Some(&b"text/event-stream"[..])
        );
        assert_eq!(free(), 0, "a running SSE handler holds its permit");
        drop(resp); // client gone: the handler is cancelled
        assert_eq!(free(), 1);
        // Handshake era: the handler runs on its own task.
        let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
        let resp = svc.handle(post(init, &[])).await;
        let sid = resp
            .headers()
            .get(MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(!sid.is_empty());
        let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "wait", "_meta": {"progressToken": "p"}}});
        let resp = svc.handle(post(call, &[("mcp-session-id", &sid)])).await;
        assert_eq!(resp.status(), StatusCode::OK);
        drop(resp); // not a cancellation in the handshake era (LEGACY-19)
        assert_eq!(free(), 0, "the spawned handler holds its permit");
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(free(), 1);
    }

    fn parts(req: http::request::Builder) -> http::request::Parts {
        req.body(())
            .map(|r| r.into_parts().0)
            .unwrap_or_else(|e| panic!("request: {e}"))
    }

    /// Regression: with two `Host` lines the first was checked, so
    /// `Host: 127.0.0.1` + `Host: evil.example` passed the DNS-rebinding
    /// check; two `Origin` lines likewise. An absolute-form target's
    /// authority was ignored in favour of `Host`.
    #[test]
    fn duplicate_host_or_origin_and_absolute_form() {
        let p = parts(
            Request::post("/mcp")
                .header("host", "127.0.0.1")
                .header("host", "evil.example"),
        );
        let r = ambiguous_host_or_origin(&p).map(|r| r.status());
        assert_eq!(r, Some(StatusCode::BAD_REQUEST));
        let p = parts(
            Request::post("/mcp")
                .header("host", "127.0.0.1")
                .header("origin", "http://localhost")
                .header("origin", "http://evil.example"),
        );
        let r = ambiguous_host_or_origin(&p).map(|r| r.status());
        assert_eq!(r, Some(StatusCode::FORBIDDEN));
        let p = parts(Request::post("/mcp").header("host", "127.0.0.1"));
        assert!(ambiguous_host_or_origin(&p).is_none());
        assert_eq!(host_of(&p), Some(&b"127.0.0.1"[..]));
        let p = parts(Request::post("http://evil.example/mcp").header("host", "127.0.0.1"));
        assert_eq!(host_of(&p), Some(&b"evil.example"[..]));
        let policy = OriginPolicy::default();
        assert_eq!(policy.check(host_of(&p), None), OriginVerdict::BadHost);
    }

    #[tokio::test]
    async fn body_limit_and_timeout() {
        let live = Arc::new(AtomicUsize::new(0));
        let body = one_byte_frames(101, live.clone(), live);
        let got = collect_body(body, 100, Duration::from_secs(5)).await;
        assert_eq!(got, Err(BodyError::TooLarge));
        let never: FrameStream = Box::pin(futures_util::stream::pending());
        let got = collect_body(
            http_body_util::StreamBody::new(never),
            100,
            Duration::from_millis(20),
        )
        .await;
        assert_eq!(got, Err(BodyError::TimedOut));
    }
}
