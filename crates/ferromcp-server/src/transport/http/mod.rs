//! Streamable HTTP transport: both eras on one endpoint.
//!
//! [`McpService`] is a `tower::Service` (mount it in axum or any tower
//! stack); [`serve`] runs it on a TCP listener with TCP_NODELAY.
//!
//! Gates, in order: Origin/Host (403 / 421) → HTTP
//! method (405 + `Allow`) → `Content-Type` (415) → `Accept` (406) → body
//! size (413, enforced while streaming) and read time (408) → JSON-RPC
//! decoding (-32700 / -32600, 400) → era classification → the
//! modern ladder or the handshake-era session layer.
//!
//! A modern request is served directly on the connection's task: parse →
//! ladder → handler → serialize. A response is JSON unless the handler
//! emits a notification (progress, log) before finishing; SSE is committed
//! only then, so every 4xx is still decided before a 200 goes out.
//! A request still running after
//! [`Limits::sse_commit_after`](crate::Limits) is committed to SSE as well,
//! so keep-alives flow and a client disconnect cancels the handler.
//!
//! Files, one concern each: `gate.rs` (the gate sequence: path,
//! Host/Origin, `Content-Type`, `Accept`, the bounded body read), `reject.rs` (every transport
//! rejection with its one status), `modern.rs` (the 2026-07-28 path and its
//! JSON-or-SSE answer), `streams.rs` (listen streams), `legacy.rs` and
//! `sessions.rs` (the handshake era), `body.rs` (the response body),
//! `response_future.rs` (the service's named future),
//! `sse.rs` (the one SSE body: source, keep-alives, final event, cleanup),
//! `serve.rs` (the accept loop and drain); this file holds the
//! configuration, the service and the dispatch between them.
// LADDER-01…LADDER-04, ERA-03, LADDER-13

mod body;
mod conn_timer;
mod gate;
mod legacy;
mod modern;
mod reject;
mod response_future;
mod serve;
mod sessions;
mod sse;
mod streams;

pub use body::McpBody;
pub use response_future::ResponseFuture;
pub use serve::{serve, serve_layered, serve_listener};

use crate::outcome::Failure;
use crate::server::Server;
use crate::shared::Shared;
use crate::transport::origin::OriginPolicy;
use bytes::Bytes;
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::era::{HttpEra, SessionHint, classify_http};
use ferromcp_protocol::header::{HeaderList, trim_ows};
use ferromcp_protocol::jsonrpc::{Message, OutgoingError, RequestId, decode_message, to_vec};
use ferromcp_protocol::ladder::ParamsProbe;
use gate::read_body;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use reject::Rejection;
use sse::SseBody;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// `Mcp-Session-Id` as a ready header name: looking a header up by a
/// `&str` parses and lower-cases the name on every call.
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version` as a ready header name (see [`MCP_SESSION_ID`]).
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// HTTP transport settings: the Host/Origin policy, the endpoint path,
/// JSON-only answers and whether the listener speaks HTTP/2. Start from
/// [`HttpConfig::default`] and chain the setters.
///
/// ```
/// use ferromcp_server::transport::http::HttpConfig;
/// use ferromcp_server::transport::origin::OriginPolicy;
///
/// let config = HttpConfig::default()
///     .origin(OriginPolicy::default().allow_host("mcp:8080"))
///     .path("/rpc")
///     .json_only(true);
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
pub struct HttpConfig {
    // SEC-01, SEC-04
    origin: OriginPolicy,
    path: Option<String>,
    // HTTP-17
    json_only: bool,
    http2: bool,
}

impl Default for HttpConfig {
    /// Loopback-only Host/Origin policy, the endpoint at `/mcp` (and `/`),
    /// SSE answers allowed, h2c next to HTTP/1.1 when the crate is built
    /// with feature `http2` (see [`HttpConfig::http2`]).
    ///
    /// ```
    /// let config = ferromcp_server::transport::http::HttpConfig::default();
    /// # let _ = config;
    /// ```
    fn default() -> Self {
        Self {
            origin: OriginPolicy::default(),
            path: Some("/mcp".into()),
            json_only: false,
            http2: cfg!(feature = "http2"),
        }
    }
}

impl HttpConfig {
    /// The Origin/Host policy (DNS rebinding protection); loopback only by
    /// default.
    ///
    /// ```
    /// use ferromcp_server::transport::http::HttpConfig;
    /// use ferromcp_server::transport::origin::OriginPolicy;
    ///
    /// // In a container reached as http://mcp:8080/mcp by other services.
    /// let config = HttpConfig::default().origin(OriginPolicy::default().allow_host("mcp:8080"));
    /// # let _ = config;
    /// ```
    pub fn origin(mut self, policy: OriginPolicy) -> Self {
        self.origin = policy;
        self
    }

    /// Serves only this path (others get 404); `/mcp` by default.
    ///
    /// The root `/` is served as well: a router that strips its mount
    /// prefix before calling a nested service (axum's
    /// `Router::nest_service("/mcp", service)`) hands the service `/`, so
    /// the default config works both standalone at `/mcp` and nested.
    ///
    /// ```
    /// let config = ferromcp_server::transport::http::HttpConfig::default().path("/rpc");
    /// # let _ = config;
    /// ```
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Serves any path: path matching is left to the router the service
    /// is mounted in (axum's `route_service` at a custom mount point).
    ///
    /// ```
    /// let config = ferromcp_server::transport::http::HttpConfig::default().any_path();
    /// # let _ = config;
    /// ```
    pub fn any_path(mut self) -> Self {
        self.path = None;
        self
    }

    /// With `true`, never answers with SSE except for
    /// `subscriptions/listen`; progress and log notifications are then
    /// dropped. `false` by default.
    ///
    /// ```
    /// let config = ferromcp_server::transport::http::HttpConfig::default().json_only(true);
    /// # let _ = config;
    /// ```
    pub fn json_only(mut self, on: bool) -> Self {
        self.json_only = on;
        self
    }

    /// Whether this crate's listener ([`serve`], [`serve_listener`],
    /// [`serve_layered`], `Server::serve_http`) also speaks HTTP/2 over
    /// cleartext (h2c, prior knowledge), chosen per connection; off, it
    /// speaks HTTP/1.1 only, and a connection opening with the HTTP/2
    /// preface is closed unanswered (the usual setup behind a
    /// TLS-terminating reverse proxy). A service mounted in another server
    /// (axum) speaks whatever that server speaks.
    ///
    /// The HTTP/2 code is the `http2` feature (a default feature): with it
    /// the default is on; without it the default is off, and asking for
    /// `true` makes serving fail at once with a configuration error
    /// ([`Error::is_config`](crate::Error::is_config)) rather than serve HTTP/1.1 only.
    ///
    /// ```
    /// let config = ferromcp_server::transport::http::HttpConfig::default().http2(false);
    /// # let _ = config;
    /// ```
    pub fn http2(mut self, on: bool) -> Self {
        self.http2 = on;
        self
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
    /// Set by [`McpService::shutdown_streams`]: HTTP/1 answers carry
    /// `connection: close` from then on. The same moment as `shutdown`'s
    /// cancellation, kept apart because every answer reads it and
    /// `CancellationToken::is_cancelled` takes a lock.
    pub(crate) draining: std::sync::atomic::AtomicBool,
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
        let limits = &server.shared.limits();
        let sessions =
            sessions::SessionStore::new(limits.max_sessions, limits.session_idle_timeout);
        let permits = Arc::new(Semaphore::new(limits.max_concurrent_requests.max(1)));
        if server.shared.shared_sessions().is_some() {
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
                draining: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    // SUB-10
    /// Ends every open stream (listen streams get their final result)
    /// and session; new requests are still served, and from now on every
    /// HTTP/1 answer carries `connection: close`, so a keep-alive peer (a
    /// load balancer's connection pool) closes its connection after the
    /// answer instead of sending more there.
    pub fn shutdown_streams(&self) {
        self.inner
            .draining
            .store(true, std::sync::atomic::Ordering::Relaxed);
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

    // Foreign type: this is an HTTP transport; `http`/`http-body` are the shared vocabulary of
    // hyper, axum and tower, so it plugs into them without conversion.
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

// Foreign type: tower `Service`/`Layer` is how HTTP middleware (auth, CORS, limits) composes with
// hyper and axum.
impl<B> tower_service::Service<Request<B>> for McpService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        ResponseFuture::new(handle(inner, req))
    }
}

// LADDER-07
/// Raw header lines of an `http::HeaderMap`, duplicates kept.
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
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(status, Bytes::from(to_vec(&OutgoingError::new(id, e))))
}

/// The answer for a request that failed: a JSON-RPC error with the status
/// of the error table; when a store could not answer, 503 with
/// `Retry-After`; when the caller's token lacks a scope, 403 with the
/// middleware's `WWW-Authenticate` challenge.
pub(crate) fn failure_response(id: Option<&RequestId>, f: &Failure) -> Response<McpBody> {
    match f {
        Failure::Error(e) => json_error(id, e),
        Failure::Unavailable {
            error,
            retry_after_secs,
        } => store_unavailable(id, error, *retry_after_secs),
        Failure::InsufficientScope { error, challenge } => insufficient_scope(error, challenge),
    }
}

// AUTH-18
/// 403 with `WWW-Authenticate: challenge`, and the body a bearer-token
/// refusal has (RFC 6750 §3: `{"error":"insufficient_scope",
/// "error_description":…}`), as the HTTP layer in front answers the same
/// refusal for the endpoint's scopes: clients see one shape whichever layer
/// refused. Not a JSON-RPC body: OAuth clients read this answer.
pub(crate) fn insufficient_scope(e: &ErrorObject, challenge: &str) -> Response<McpBody> {
    let body = serde_json::json!({
        "error": "insufficient_scope",
        "error_description": e.message,
    });
    let mut r = json_response(StatusCode::FORBIDDEN, Bytes::from(body.to_string()));
    let h = r.headers_mut();
    // Checked when the refusal was made (`RpcResponse::insufficient_scope`).
    if let Ok(v) = HeaderValue::from_str(challenge) {
        h.insert(header::WWW_AUTHENTICATE, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A shared store (single-use `requestState`, shared sessions) could not
/// answer: 503 with `Retry-After` (the request may be sent again; see
/// `single_use` and `shared_sessions`).
pub(crate) fn store_unavailable(
    id: Option<&RequestId>,
    e: &ErrorObject,
    retry_after_secs: u32,
) -> Response<McpBody> {
    let body = Bytes::from(to_vec(&OutgoingError::new(id, e)));
    let mut r = json_response(StatusCode::SERVICE_UNAVAILABLE, body);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    r
}

pub(crate) fn sse_response(body: SseBody) -> Response<McpBody> {
    let mut r = Response::new(McpBody::stream(body));
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
    let http1 = req.version() < http::Version::HTTP_2;
    let mut response = respond(&inner, req).await;
    // Draining: the peer must not reuse this connection (closing it under
    // a request the peer just sent would lose that request). Checked when
    // the answer is ready, so a request in flight when the drain began is
    // covered too. HTTP/2 has GOAWAY for this, and forbids the header.
    if http1 && inner.draining.load(std::sync::atomic::Ordering::Relaxed) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

async fn respond<B>(inner: &Arc<HttpInner>, req: Request<B>) -> Response<McpBody>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = req.into_parts();
    if let Err(r) = gate::front(inner, &parts) {
        return match (r, &inner.config.path) {
            (Rejection::NotFound, Some(p)) => {
                r.into_response_saying(&format!("Not Found: the MCP endpoint is {p}"))
            }
            _ => r.into_response(),
        };
    }
    let session_id = parts
        .headers
        .get(MCP_SESSION_ID)
        .map(|v| trim_ows(v.as_bytes()).to_vec());
    match parts.method {
        Method::POST => {}
        Method::GET | Method::DELETE => {
            return match session_id {
                Some(id) => legacy::get_or_delete(inner, parts, &id).await,
                None => Rejection::MethodNotAllowed("POST").into_response(),
            };
        }
        _ => return Rejection::MethodNotAllowed("GET, POST, DELETE").into_response(),
    }
    let limits = &inner.shared.limits();
    let accept = match gate::post(&parts.headers, limits.max_body_bytes) {
        Ok(a) => a,
        Err(r) => return r.into_response(),
    };
    // The permit is held until the handler finishes, also when the answer
    // is an SSE stream or the handler runs on its own task (handshake era).
    let Ok(permit) = inner.permits.clone().acquire_owned().await else {
        return Rejection::ShuttingDown.into_response();
    };
    let bytes = match read_body(body, limits.max_body_bytes, limits.body_read_timeout).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    // LEGACY-24: a 2025-03-26 session may send JSON-RPC batches.
    if let Some(Ok(elements)) = ferromcp_protocol::jsonrpc::split_batch(&bytes) {
        let session = match session_id.as_deref() {
            Some(id) => {
                match legacy::find_session(inner, id, legacy::principal_subject(&parts), None).await
                {
                    Ok(s) => s,
                    Err(r) => return r,
                }
            }
            None => None,
        };
        if let Some(session) = session {
            if !session.handshake.version.forbids_batches() {
                return legacy::batch(inner, parts, elements, session).await;
            }
        }
    }
    let header_version = parts
        .headers
        .get(MCP_PROTOCOL_VERSION)
        .map(|v| trim_ows(v.as_bytes()));
    // The common request, a sessionless 2026-07-28 `tools/call`, is decoded,
    // probed and typed in one scan of the body; anything else (or anything
    // unusual about it) takes the general path below, which answers it
    // exactly as before.
    if session_id.is_none() {
        if let Some(call) = ferromcp_protocol::ladder::decode_tools_call(&bytes) {
            let era = classify_http(
                SessionHint::Absent,
                header_version,
                call.probe.has_modern_envelope(),
            );
            if era == HttpEra::Modern {
                return modern::modern_call(inner, parts, &bytes, call, accept, permit).await;
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
    match classify_http(hint, header_version, probe.has_modern_envelope()) {
        HttpEra::Modern => modern::modern(inner, parts, &bytes, msg, probe, accept, permit).await,
        HttpEra::Handshake { .. } => {
            legacy::post(
                inner,
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

#[cfg(test)]
mod tests {
    use super::gate::{
        BodyError, accepts, addressed_host, checked_host_and_origin, collect_body, host_value,
    };
    use super::serve::{Detected, version_bytes_arrived};
    use super::*;
    use crate::transport::origin::OriginVerdict;
    use futures_util::StreamExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

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
            assert!(host_value(ok.as_bytes()).is_some(), "{ok:?}");
        }
        for bad in [
            "localhost:80@evil.com",
            "user@localhost",
            "evil.com#@localhost",
            "[::1",
            "local host",
            "localhost/path",
            "localhost:-1",
            // Regression (issue 25): the gate's own copy of the parser let
            // these through to the allow-list as "valid" Host values.
            "localhost:",
            "localhost:65536",
            "[::1]:",
            "[v1.fe]",
            "[not-ipv6]",
        ] {
            assert!(host_value(bad.as_bytes()).is_none(), "{bad:?}");
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
            assert_eq!(
                version_bytes_arrived(&server, limit).await,
                None,
                "{prefix:?}"
            );
            assert!(started.elapsed() >= limit);
        }
        for (prefix, detected) in [
            (&b"G"[..], Detected::Http1),
            (b"POST / HTTP/1.1\r\n", Detected::Http1),
            (b"PRI * HTTP/1.1\r\n", Detected::Http1),
            (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Detected::Http2),
        ] {
            let mut client = tokio::net::TcpStream::connect(addr).await;
            let client = client.as_mut().unwrap_or_else(|e| panic!("connect: {e}"));
            client.write_all(prefix).await.ok();
            let (server, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                version_bytes_arrived(&server, limit).await,
                Some(detected),
                "{prefix:?}"
            );
        }
    }

    // The builder's path setters decide which paths are the endpoint.
    #[tokio::test]
    async fn path_setters_move_or_drop_the_endpoint_check() {
        let server = Server::builder("t", "1")
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let status = |svc: McpService, path: &'static str| async move {
            let req = Request::get(path)
                .header("host", "127.0.0.1")
                .body(http_body_util::Empty::<Bytes>::new())
                .unwrap_or_else(|e| panic!("request: {e}"));
            svc.handle(req).await.status()
        };
        let moved = McpService::new(server.clone(), HttpConfig::default().path("/rpc"));
        assert_eq!(status(moved.clone(), "/mcp").await, StatusCode::NOT_FOUND);
        assert_ne!(status(moved, "/rpc").await, StatusCode::NOT_FOUND);
        let default = McpService::new(server.clone(), HttpConfig::default());
        assert_eq!(status(default, "/elsewhere").await, StatusCode::NOT_FOUND);
        let any = McpService::new(server, HttpConfig::default().any_path());
        assert_ne!(status(any, "/elsewhere").await, StatusCode::NOT_FOUND);
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
        let r = checked_host_and_origin(&p).err().map(|r| r.status());
        assert_eq!(r, Some(StatusCode::BAD_REQUEST));
        let p = parts(
            Request::post("/mcp")
                .header("host", "127.0.0.1")
                .header("origin", "http://localhost")
                .header("origin", "http://evil.example"),
        );
        let r = checked_host_and_origin(&p).err().map(|r| r.status());
        assert_eq!(r, Some(StatusCode::FORBIDDEN));
        let p = parts(Request::post("/mcp").header("host", "127.0.0.1"));
        // The host the policy decides on, as `gate::front` computes it.
        let host_of = |p: &http::request::Parts| {
            let header = checked_host_and_origin(p).ok().flatten();
            addressed_host(p, header)
                .flatten()
                .map(|a| a.host().to_owned())
        };
        assert!(checked_host_and_origin(&p).err().is_none());
        assert_eq!(host_of(&p).as_deref(), Some("127.0.0.1"));
        let p = parts(Request::post("http://evil.example/mcp").header("host", "127.0.0.1"));
        assert_eq!(host_of(&p).as_deref(), Some("evil.example"));
        let policy = OriginPolicy::default();
        let header = checked_host_and_origin(&p).ok().flatten();
        assert_eq!(
            policy.verdict(addressed_host(&p, header), None),
            OriginVerdict::BadHost
        );
    }

    /// Regression (issue 23, item 2): an HTTP/2 request with neither
    /// `:authority` nor `Host` was served, so the DNS-rebinding check had
    /// nothing to check; a `Host` differing from `:authority` was served
    /// on `:authority` alone. Both are malformed (RFC 9113 §8.3.1).
    // SEC-04, LADDER-01
    #[test]
    fn http2_needs_one_consistent_authority() {
        let h2 = |b: http::request::Builder| parts(b.version(http::Version::HTTP_2));
        let status =
            |p: &http::request::Parts| checked_host_and_origin(p).err().map(|r| r.status());
        // Neither :authority nor Host.
        assert_eq!(
            status(&h2(Request::post("/mcp"))),
            Some(StatusCode::BAD_REQUEST)
        );
        // Host differing from :authority.
        let p = h2(Request::post("http://127.0.0.1:8080/mcp").header("host", "evil.example"));
        assert_eq!(status(&p), Some(StatusCode::BAD_REQUEST));
        // Either alone, or both the same (case-insensitively), is served.
        for p in [
            h2(Request::post("http://127.0.0.1:8080/mcp")),
            h2(Request::post("/mcp").header("host", "127.0.0.1:8080")),
            h2(Request::post("http://LocalHost:8080/mcp").header("host", "localhost:8080")),
        ] {
            assert_eq!(status(&p), None, "{p:?}");
        }
        // HTTP/1.1 absolute form: the target wins, Host is ignored (RFC 9112 §3.2.2).
        let p = parts(Request::post("http://127.0.0.1:8080/mcp").header("host", "other"));
        assert_eq!(status(&p), None);
    }

    /// A body in one frame is that frame (no copy); frames after the first
    /// are joined in order, within the limit.
    #[tokio::test]
    async fn one_frame_is_kept_and_more_are_joined() {
        let frame = Bytes::from_static(br#"{"jsonrpc":"2.0"}"#);
        let got = collect_body(
            http_body_util::Full::new(frame.clone()),
            100,
            Duration::from_secs(5),
        )
        .await;
        let got = got.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(got, frame);
        assert_eq!(got.as_ptr(), frame.as_ptr(), "copied");
        let frames = |parts: &[&'static [u8]]| {
            let frames: Vec<_> = parts
                .iter()
                .map(|p| Ok(http_body::Frame::data(Bytes::from_static(p))))
                .collect();
            let s = futures_util::stream::iter(frames);
            http_body_util::StreamBody::new(Box::pin(s) as FrameStream)
        };
        // Frames, limit, result.
        type Case = (
            &'static [&'static [u8]],
            usize,
            Result<&'static [u8], BodyError>,
        );
        let cases: [Case; 4] = [
            (&[b"ab", b"", b"cd", b"e"], 5, Ok(b"abcde")),
            (&[b"", b"", b"xyz"], 3, Ok(b"xyz")),
            (&[b"abc", b"de"], 4, Err(BodyError::TooLarge)),
            (&[b"abcde"], 4, Err(BodyError::TooLarge)),
        ];
        for (parts, limit, want) in cases {
            let got = collect_body(frames(parts), limit, Duration::from_secs(5)).await;
            assert_eq!(got.as_deref(), want.as_ref().copied(), "{parts:?}");
        }
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
