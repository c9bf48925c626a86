//! Streamable HTTP, both eras, over hyper-util's pooled client with
//! `TCP_NODELAY`.
//!
//! - Every message is its own POST with `Accept: application/json,
//!   text/event-stream` and `Content-Type: application/json`
//!   plus the MCP headers the core computed.
//! - Answers may be JSON or SSE, matched case-insensitively without
//!   parameters; SSE goes through [`crate::sse::SseParser`].
//! - A 202 to a request is an error for it; a non-2xx carrying a
//!   JSON-RPC error surfaces that error, re-keyed to the request id;
//!   any other non-2xx is a local transport error.
//! - Redirects are never followed, so credentials never reach another origin.
//! - Handshake era: `Mcp-Session-Id` is captured and echoed,
//!   404 on a session request means the session expired, a standalone GET
//!   stream carries unrelated messages, a broken POST stream is
//!   resumed with `Last-Event-ID` after the server's `retry`,
//!   and `close` DELETEs the session.
//! - Dropping an exchange aborts its HTTP request.
//! - Every request goes through [`Sender`], which applies the optional
//!   [`HttpAuth`] hook: its headers on every request, and a
//!   bounded re-send after it renewed credentials on a 401/403.
// HTTP-02, HTTP-03, HTTP-04, HTTP-07, HTTP-19, HTTP-20, ERR-07, LEGACY-13, LEGACY-15, LEGACY-17,
// LEGACY-14, HTTP-15, CANCEL-01, AUTH-20

use super::{AbortOnDrop, Exchange, Outbound, Transport, TransportKind};
use crate::auth::{AuthChallenge, AuthDecision, AuthError, AuthRequest, HttpAuth};
use crate::error::{Error, Result};
use crate::message::Inbound;
use crate::sse::SseParser;
use bytes::Bytes;
use ferromcp_protocol::RequestId;
use ferromcp_protocol::header::MCP_SESSION_ID;
use futures_util::future::BoxFuture;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

#[cfg(feature = "rustls")]
pub(crate) type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "rustls"))]
pub(crate) type Connector = HttpConnector;

/// The pooled HTTP client.
pub(crate) type Pool = HyperClient<Connector, Full<Bytes>>;

/// Sends HTTP requests through the pool, applying the authorization hook.
#[derive(Clone)]
pub(crate) struct Sender {
    pub pool: Pool,
    pub auth: Option<Arc<dyn HttpAuth>>,
    pub max_auth_retries: u32,
}

/// Response headers as lower-case name/value pairs (non-UTF-8 values skipped).
fn header_pairs(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

impl Sender {
    // AUTH-20, AUTH-19
    /// Sends the request `make` builds (called again for every re-send),
    /// with the hook's headers; on 401/403 asks the hook whether to retry,
    /// at most `max_auth_retries` times.
    pub(crate) async fn send(
        &self,
        mut make: impl FnMut() -> Result<Request<Full<Bytes>>>,
    ) -> Result<Response<Incoming>> {
        let mut retries = 0;
        loop {
            let mut req = make()?;
            let url = req.uri().to_string();
            let areq = AuthRequest {
                method: req.method().as_str().to_owned(),
                url: url.clone(),
            };
            let mut sent = Vec::new();
            if let Some(auth) = &self.auth {
                let extra = auth
                    .headers(areq.clone())
                    .await
                    .map_err(|e| Error::auth(None, e))?;
                for (n, v) in extra {
                    let name = HeaderName::from_bytes(n.as_bytes()).map_err(|e| {
                        Error::auth(
                            None,
                            AuthError::new(format!("bad header name {n:?}")).with_source(e),
                        )
                    })?;
                    let value = HeaderValue::from_str(&v).map_err(|e| {
                        Error::auth(
                            None,
                            AuthError::new(format!("bad value for header {n}")).with_source(e),
                        )
                    })?;
                    req.headers_mut().insert(name, value);
                    sent.push((n, v));
                }
            }
            let resp = self.pool.request(req).await.map_err(|e| {
                Error::transport(format!("HTTP request to {url} failed")).with_source(e)
            })?;
            let Some(auth) = &self.auth else {
                return Ok(resp);
            };
            let status = resp.status();
            if status.is_success() {
                auth.on_success(&areq, &header_pairs(resp.headers()));
                return Ok(resp);
            }
            if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
                return Ok(resp);
            }
            if retries >= self.max_auth_retries {
                // Bounded: the hook is not asked again (AUTH-19).
                return Err(Error::auth(
                    Some(status.as_u16()),
                    AuthError::new(format!(
                        "{url} still answered {status} after {retries} authorization retries"
                    )),
                ));
            }
            let challenge = AuthChallenge {
                request: areq,
                status: status.as_u16(),
                www_authenticate: resp
                    .headers()
                    .get_all(http::header::WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok().map(str::to_owned))
                    .collect(),
                headers: header_pairs(resp.headers()),
                sent,
            };
            match auth.on_challenge(challenge).await {
                AuthDecision::Proceed => return Ok(resp),
                AuthDecision::Fail(e) => return Err(Error::auth(Some(status.as_u16()), e)),
                AuthDecision::Retry => {
                    retries += 1;
                    drop(resp);
                }
            }
        }
    }
}

/// Limits that apply to HTTP bodies and SSE streams.
#[derive(Debug, Clone)]
pub(crate) struct HttpLimits {
    pub max_body: usize,
    pub max_event: usize,
    pub retry_cap: Duration,
    pub default_retry: Duration,
    pub min_retry: Duration,
    pub max_resumes: u32,
    /// Messages queued per exchange and for the GET stream.
    pub queue: usize,
}

impl HttpLimits {
    // LEGACY-17
    /// The delay before reconnecting: the server's `retry` (already capped
    /// by the parser) or the default, never below the floor.
    fn reconnect_delay(&self, parser: &SseParser) -> Duration {
        parser
            .retry()
            .unwrap_or(self.default_retry)
            .max(self.min_retry)
    }
}

/// Builds the pooled client: TCP_NODELAY, and TLS through rustls (ring,
/// webpki roots) when the `rustls` feature is on.
pub(crate) fn pool() -> Result<Pool> {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    #[cfg(feature = "rustls")]
    let connector = {
        use hyper_rustls::ConfigBuilderExt;
        http.enforce_http(false);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::config("cannot configure TLS").with_source(e))?
            .with_webpki_roots()
            .with_no_client_auth();
        hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http)
    };
    #[cfg(not(feature = "rustls"))]
    let connector = http;
    Ok(HyperClient::builder(TokioExecutor::new()).build(connector))
}

/// Parses and checks an endpoint URL.
pub(crate) fn parse_url(url: &str) -> Result<Uri> {
    let uri: Uri = url
        .parse()
        .map_err(|e| Error::config(format!("invalid URL {url:?}")).with_source(e))?;
    match uri.scheme_str() {
        Some("http") => {}
        #[cfg(feature = "rustls")]
        Some("https") => {}
        Some(s) => return Err(Error::config(format!("unsupported URL scheme {s:?}"))),
        None => return Err(Error::config(format!("URL {url:?} has no scheme"))),
    }
    if uri.authority().is_none() {
        return Err(Error::config(format!("URL {url:?} has no host")));
    }
    Ok(uri)
}

/// `scheme://authority` of a URI.
pub(crate) fn origin(uri: &Uri) -> String {
    format!(
        "{}://{}",
        uri.scheme_str().unwrap_or("http"),
        uri.authority().map(|a| a.as_str()).unwrap_or("")
    )
}

// HTTP-07
/// Whether a `Content-Type` value names `mime` (case-insensitive, parameters
/// ignored).
pub(crate) fn is_media_type(value: Option<&HeaderValue>, mime: &str) -> bool {
    value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(mime))
}

/// Reads a whole body, refusing more than `max` bytes.
pub(crate) async fn read_body(body: Incoming, max: usize) -> Result<Vec<u8>> {
    let mut body = body;
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|e| Error::transport("reading the response body failed").with_source(e))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > max {
                return Err(Error::too_large(
                    max,
                    format!("response body larger than {max} bytes"),
                ));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

pub(crate) struct Inner {
    sender: Sender,
    url: Uri,
    extra: Vec<(HeaderName, HeaderValue)>,
    session: Mutex<Option<String>>,
    limits: HttpLimits,
    unsolicited_tx: Mutex<Option<mpsc::Sender<Inbound>>>,
}

/// The Streamable HTTP transport.
pub(crate) struct HttpTransport {
    inner: Arc<Inner>,
    unsolicited_rx: Mutex<Option<mpsc::Receiver<Inbound>>>,
    get_stream: Mutex<Option<AbortOnDrop>>,
    open_get_stream: bool,
}

impl HttpTransport {
    // AUTH-20
    /// A transport for `url`; `extra` headers go on every request
    /// (e.g. `Authorization`).
    pub(crate) fn new(
        sender: Sender,
        url: Uri,
        extra: Vec<(HeaderName, HeaderValue)>,
        limits: HttpLimits,
        open_get_stream: bool,
    ) -> Self {
        let (tx, rx) = mpsc::channel(limits.queue.max(1));
        Self {
            inner: Arc::new(Inner {
                sender,
                url,
                extra,
                session: Mutex::new(None),
                limits,
                unsolicited_tx: Mutex::new(Some(tx)),
            }),
            unsolicited_rx: Mutex::new(Some(rx)),
            get_stream: Mutex::new(None),
            open_get_stream,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    fn session(&self) -> Option<String> {
        lock(&self.session).clone()
    }

    fn build(
        &self,
        method: Method,
        headers: &[(String, String)],
        body: Bytes,
        last_event_id: Option<&str>,
    ) -> Result<(Request<Full<Bytes>>, bool)> {
        let mut b = Request::builder()
            .method(method.clone())
            .uri(self.url.clone());
        if method == Method::POST {
            b = b
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "application/json, text/event-stream");
        } else if method == Method::GET {
            b = b.header(ACCEPT, "text/event-stream");
        }
        for (n, v) in &self.extra {
            b = b.header(n, v);
        }
        for (n, v) in headers {
            let name = HeaderName::from_bytes(n.as_bytes())
                .map_err(|e| Error::invalid(format!("bad header name {n:?}")).with_source(e))?;
            let value = HeaderValue::from_str(v)
                .map_err(|e| Error::invalid(format!("bad value for header {n}")).with_source(e))?;
            b = b.header(name, value);
        }
        let session = self.session();
        if let Some(s) = &session {
            b = b.header(MCP_SESSION_ID, s);
        }
        if let Some(id) = last_event_id {
            b = b.header("Last-Event-ID", id);
        }
        let req = b
            .body(Full::new(body))
            .map_err(|e| Error::invalid("cannot build the HTTP request").with_source(e))?;
        Ok((req, session.is_some()))
    }

    async fn send(
        &self,
        method: Method,
        headers: &[(String, String)],
        body: Bytes,
        last_event_id: Option<&str>,
    ) -> Result<(Response<Incoming>, bool)> {
        let mut had_session = false;
        let resp = self
            .sender
            .send(|| {
                let (req, h) = self.build(method.clone(), headers, body.clone(), last_event_id)?;
                had_session = h;
                Ok(req)
            })
            .await?;
        if let Some(sid) = resp
            .headers()
            .get(MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
        {
            // LEGACY-12: visible ASCII only.
            if !sid.is_empty() && sid.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
                *lock(&self.session) = Some(sid.to_owned());
            }
        }
        Ok((resp, had_session))
    }

    // HTTP-20, LEGACY-13
    /// Turns a non-2xx answer into the error to report.
    async fn failure(
        &self,
        resp: Response<Incoming>,
        had_session: bool,
        id: Option<&RequestId>,
    ) -> Result<Inbound> {
        let status = resp.status();
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(Error::new(
                crate::error::ErrorKind::SessionExpired,
                "the server no longer knows this session (404)",
            ));
        }
        let json = is_media_type(resp.headers().get(CONTENT_TYPE), "application/json");
        let retry_after = resp
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| crate::retry::parse_retry_after(v, std::time::SystemTime::now()));
        let body = read_body(resp.into_body(), self.limits.max_body)
            .await
            .unwrap_or_default();
        if json || body.first() == Some(&b'{') {
            if let Ok(Inbound::Response {
                id: rid,
                outcome: Err(e),
            }) = Inbound::decode(&body)
            {
                return Ok(Inbound::Response {
                    id: rid.or_else(|| id.cloned()),
                    outcome: Err(e),
                });
            }
        }
        let text = String::from_utf8_lossy(&body);
        let snippet: String = text.chars().take(200).collect();
        Err(Error::http_status(
            status.as_u16(),
            format!("HTTP {status} from {}: {snippet}", self.url),
        )
        .with_retry_after(retry_after))
    }

    /// Reads an SSE body, forwarding messages; returns whether the response
    /// to `id` was seen. On a request's stream, an event that is not a valid
    /// JSON-RPC message is remembered: if the stream then ends without the
    /// response, that malformed event was the answer and the request fails
    /// with it (rather than as a lost stream).
    async fn read_sse(
        &self,
        body: Incoming,
        parser: &mut SseParser,
        id: Option<&RequestId>,
        tx: &mpsc::Sender<Result<Inbound>>,
    ) -> Result<bool> {
        let mut body = body;
        let mut malformed: Option<Error> = None;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                // A broken stream; the caller may resume.
                return malformed.map_or(Ok(false), Err);
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let events = parser.feed(&data).map_err(|e| {
                Error::too_large(self.limits.max_event, "unacceptable SSE stream").with_source(e)
            })?;
            for ev in events {
                if !ev.is_message() || ev.data.trim().is_empty() {
                    continue;
                }
                let msg = match Inbound::decode(ev.data.as_bytes()) {
                    Ok(m) => m,
                    Err(e) => {
                        tracing::warn!(error = %e, "ignoring a malformed SSE message");
                        if id.is_some() {
                            malformed = Some(e);
                        }
                        continue;
                    }
                };
                let done = matches!(&msg, Inbound::Response { id: Some(r), .. } if Some(r) == id);
                // Waits while the consumer is behind: backpressure on
                // this connection, never unbounded buffering.
                if tx.send(Ok(msg)).await.is_err() {
                    return Ok(false);
                }
                if done {
                    return Ok(true); // SSE-03: the response ends the stream
                }
            }
        }
        malformed.map_or(Ok(false), Err)
    }

    async fn exchange(self: Arc<Self>, out: Outbound, tx: mpsc::Sender<Result<Inbound>>) {
        if let Err(e) = self.clone().exchange_inner(&out, &tx).await {
            let _ = tx.send(Err(e)).await;
        }
    }

    async fn exchange_inner(
        self: Arc<Self>,
        out: &Outbound,
        tx: &mpsc::Sender<Result<Inbound>>,
    ) -> Result<()> {
        let id = out.id.as_ref();
        let (resp, had_session) = self
            .send(
                Method::POST,
                &out.headers,
                Bytes::from(out.body.clone()),
                None,
            )
            .await?;
        let status = resp.status();
        if status == StatusCode::ACCEPTED {
            return Err(Error::invalid(
                "the server answered a request with 202 Accepted; no response will follow",
            )); // HTTP-19
        }
        if !status.is_success() {
            let msg = self.failure(resp, had_session, id).await?;
            let _ = tx.send(Ok(msg)).await;
            return Ok(());
        }
        let ct = resp.headers().get(CONTENT_TYPE).cloned();
        if is_media_type(ct.as_ref(), "application/json") {
            let body = read_body(resp.into_body(), self.limits.max_body).await?;
            // A JSON answer is exactly one response, to this request.
            let msg = match Inbound::decode(&body)? {
                Inbound::Response { id: rid, outcome } => match rid {
                    None => Inbound::Response {
                        id: id.cloned(),
                        outcome,
                    },
                    Some(r) if Some(&r) == id => Inbound::Response {
                        id: Some(r),
                        outcome,
                    },
                    Some(other) => {
                        return Err(Error::invalid(format!(
                            "the JSON answer is the response to id {other}, not to this request"
                        )));
                    }
                },
                _ => {
                    return Err(Error::invalid(
                        "the JSON answer to a request is not a JSON-RPC response",
                    ));
                }
            };
            let _ = tx.send(Ok(msg)).await;
            return Ok(());
        }
        if !is_media_type(ct.as_ref(), "text/event-stream") {
            return Err(Error::invalid(format!(
                "unexpected response content type {:?}",
                ct.as_ref().and_then(|v| v.to_str().ok()).unwrap_or("")
            )));
        }
        let mut parser = SseParser::new(self.limits.max_event, self.limits.retry_cap);
        if self.read_sse(resp.into_body(), &mut parser, id, tx).await? {
            return Ok(());
        }
        // LEGACY-17: resume a broken handshake-era stream with Last-Event-ID.
        let mut attempts = 0;
        while out.resumable && attempts < self.limits.max_resumes {
            let Some(last) = parser.last_event_id().map(str::to_owned) else {
                break;
            };
            attempts += 1;
            tokio::time::sleep(self.limits.reconnect_delay(&parser)).await;
            let (resp, had_session) = match self
                .send(Method::GET, &out.headers, Bytes::new(), Some(&last))
                .await
            {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(error = %e, "resuming the SSE stream failed");
                    continue;
                }
            };
            if !resp.status().is_success() {
                let msg = self.failure(resp, had_session, id).await?;
                let _ = tx.send(Ok(msg)).await;
                return Ok(());
            }
            if !is_media_type(resp.headers().get(CONTENT_TYPE), "text/event-stream") {
                break;
            }
            if self.read_sse(resp.into_body(), &mut parser, id, tx).await? {
                return Ok(());
            }
        }
        Ok(()) // the channel closes without a response: the request is lost (HTTP-13)
    }

    // LEGACY-15
    /// The handshake-era standalone GET stream, reconnecting
    /// after `retry` with `Last-Event-ID` while the server keeps it open.
    /// `ready` is told once the first GET was answered or failed.
    async fn get_stream(
        self: Arc<Self>,
        headers: Vec<(String, String)>,
        ready: tokio::sync::oneshot::Sender<()>,
    ) {
        let mut ready = Some(ready);
        let mut parser = SseParser::new(self.limits.max_event, self.limits.retry_cap);
        let mut failures = 0;
        loop {
            let last = parser.last_event_id().map(str::to_owned);
            let sent = self
                .send(Method::GET, &headers, Bytes::new(), last.as_deref())
                .await;
            if let Some(r) = ready.take() {
                let _ = r.send(());
            }
            let (resp, _) = match sent {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(error = %e, "GET stream failed");
                    failures += 1;
                    if failures > self.limits.max_resumes {
                        return;
                    }
                    tokio::time::sleep(self.limits.reconnect_delay(&parser)).await;
                    continue;
                }
            };
            if !resp.status().is_success()
                || !is_media_type(resp.headers().get(CONTENT_TYPE), "text/event-stream")
            {
                tracing::debug!(status = %resp.status(), "no standalone GET stream");
                return; // 405: the server offers none
            }
            let (tx, mut rx) = mpsc::channel(self.limits.queue.max(1));
            let fwd = {
                let unsolicited = lock(&self.unsolicited_tx).clone();
                tokio::spawn(async move {
                    let mut forwarded = 0usize;
                    while let Some(Ok(m)) = rx.recv().await {
                        forwarded += 1;
                        if let Some(u) = &unsolicited {
                            let _ = u.send(m).await;
                        }
                    }
                    forwarded
                })
            };
            let r = self
                .read_sse(resp.into_body(), &mut parser, None, &tx)
                .await;
            drop(tx);
            let forwarded = fwd.await.unwrap_or(0);
            if r.is_err() {
                return;
            }
            // A stream that carried messages was worth reopening; one that
            // ended empty counts as a failure, so a server answering every
            // GET with an empty stream is given up on.
            if forwarded > 0 {
                failures = 0;
            } else {
                failures += 1;
                if failures > self.limits.max_resumes {
                    return;
                }
            }
            tokio::time::sleep(self.limits.reconnect_delay(&parser)).await;
        }
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        // Dropped without `close`: still end the handshake-era session
        // (LEGACY-14), best effort, when a runtime is there to do it.
        let Some(session) = lock(&self.inner.session).take() else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let inner = self.inner.clone();
        rt.spawn(async move {
            *lock(&inner.session) = Some(session);
            let _ = inner.send(Method::DELETE, &[], Bytes::new(), None).await;
        });
    }
}

/// Aborts the exchange when dropped; in the handshake era also tells the
/// server, when the exchange had not finished.
struct HttpGuard {
    _abort: AbortOnDrop,
    done: Arc<AtomicBool>,
    cancel: Option<PendingCancel>,
}

/// What a handshake-era cancellation needs: the connection, the id, the headers.
type PendingCancel = (Arc<Inner>, RequestId, Vec<(String, String)>);

impl Drop for HttpGuard {
    fn drop(&mut self) {
        if self.done.load(Ordering::Acquire) {
            return;
        }
        if let Some((inner, id, headers)) = self.cancel.take() {
            let body = Bytes::from(crate::core::cancelled_notification(&id));
            tokio::spawn(async move {
                let _ = inner.send(Method::POST, &headers, body, None).await;
            });
        }
    }
}

impl Transport for HttpTransport {
    fn request(&self, out: Outbound) -> BoxFuture<'_, Result<Exchange>> {
        Box::pin(async move {
            let (tx, rx) = mpsc::channel(self.inner.limits.queue.max(1));
            let done = Arc::new(AtomicBool::new(false));
            // Handshake era: an aborted exchange is not a cancellation
            // (LEGACY-19), so also POST notifications/cancelled (LEGACY-07).
            let cancel = match (&out.id, out.cancellable && out.resumable) {
                (Some(id), true) => Some((self.inner.clone(), id.clone(), out.headers.clone())),
                _ => None,
            };
            let inner = self.inner.clone();
            let d = done.clone();
            let task = tokio::spawn(async move {
                inner.exchange(out, tx).await;
                d.store(true, Ordering::Release);
            });
            Ok(Exchange {
                rx,
                _guard: Box::new(HttpGuard {
                    _abort: AbortOnDrop(task.abort_handle()),
                    done,
                    cancel,
                }),
            })
        })
    }

    fn send(&self, out: Outbound) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let (resp, had_session) = self
                .inner
                .send(Method::POST, &out.headers, Bytes::from(out.body), None)
                .await?;
            if resp.status().is_success() {
                return Ok(());
            }
            match self.inner.failure(resp, had_session, None).await? {
                Inbound::Response {
                    outcome: Err(e), ..
                } => Err(Error::protocol(e)),
                _ => Err(Error::transport("the server refused the message")),
            }
        })
    }

    fn take_unsolicited(&self) -> Option<mpsc::Receiver<Inbound>> {
        lock(&self.unsolicited_rx).take()
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Http
    }

    fn identity(&self) -> String {
        origin(&self.inner.url) + self.inner.url.path()
    }

    fn auth_partition(&self) -> Option<String> {
        self.inner.sender.auth.as_ref()?.cache_partition()
    }

    fn session_started(&self, headers: Vec<(String, String)>) -> BoxFuture<'_, ()> {
        if !self.open_get_stream {
            return Box::pin(async {});
        }
        let (ready, answered) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(self.inner.clone().get_stream(headers, ready));
        *lock(&self.get_stream) = Some(AbortOnDrop(task.abort_handle()));
        // Ends when the server answered the GET (or it failed, or the task
        // ended: the sender is dropped).
        Box::pin(async move {
            let _ = answered.await;
        })
    }

    fn reset_session(&self) {
        lock(&self.get_stream).take();
        lock(&self.inner.session).take();
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            lock(&self.get_stream).take();
            lock(&self.inner.unsolicited_tx).take();
            if self.inner.session().is_some() {
                // LEGACY-14; a 405 is fine.
                let _ = self
                    .inner
                    .send(Method::DELETE, &[], Bytes::new(), None)
                    .await;
                lock(&self.inner.session).take();
            }
        })
    }
}
