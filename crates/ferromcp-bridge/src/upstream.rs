//! The remote side: Streamable HTTP, message level.
//!
//! Every message is one POST with `Accept: application/json,
//! text/event-stream`; answers may be JSON or SSE and every message found
//! in them is handed on as raw bytes. Handshake era: `Mcp-Session-Id` from
//! the `initialize` answer and the negotiated `MCP-Protocol-Version` go on
//! every later request, the GET stream carries messages tied to no
//! request, and closing DELETEs the session. Redirects are not followed,
//! so configured credentials never reach another origin.
// HTTP-02, HTTP-03, HTTP-04, LEGACY-12, LEGACY-15

use crate::Limits;
use crate::session_setup::SessionSetup;
use bytes::Bytes;
use ferromcp_client::{AuthChallenge, AuthDecision, AuthRequest, HttpAuth};
use ferromcp_protocol::RequestId;
use ferromcp_protocol::header::MCP_SESSION_ID;
use ferromcp_protocol::sse::SseParser;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

type Pool = HyperClient<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Why an exchange with the remote failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The remote refused the request with a JSON-RPC error object (raw
    /// JSON) in a non-2xx answer.
    Rpc(String),
    /// Anything else, one sentence (never contains header values).
    Transport(String),
}

/// What the remote side hands to the relay, in arrival order.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// One message from the remote, raw, with the bridge's id of the
    /// request whose answer stream carried it (`None`: the GET stream, or
    /// an exchange of no request).
    Message(Vec<u8>, Option<RequestId>),
    /// An exchange ended; `local` is the bridge's id of the request it
    /// carried (`None` for notifications and responses).
    Ended {
        local: Option<RequestId>,
        failure: Option<Failure>,
    },
    /// The handshake-era GET stream was answered (open or refused), or the
    /// bridge stopped waiting for it: the host's held messages may go on.
    StreamSettled,
}

/// The HTTP side of one bridge.
pub(crate) struct Upstream {
    pool: Pool,
    url: Uri,
    /// The URL for messages: without any `user:password@` part.
    shown: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// Credentials hook (stored OAuth tokens); never set together with a
    /// configured `Authorization` header.
    auth: Option<Arc<dyn HttpAuth>>,
    session: Mutex<Option<HeaderValue>>,
    /// The `initialize` that opened the session, sent again when the
    /// remote forgets it.
    reinit: Mutex<Option<Bytes>>,
    /// One session renewal at a time.
    renewing: tokio::sync::Mutex<()>,
    /// The host's level and subscriptions, set up again in a renewed
    /// session.
    setup: Mutex<SessionSetup>,
    version: Mutex<Option<HeaderValue>>,
    /// Remote requests the host has not answered yet: while there are
    /// any, a quiet answer stream is waiting on the host's user (an
    /// elicitation), not stalled.
    waiting_on_host: AtomicUsize,
    /// The GET stream's state: not open yet, open, or given up on.
    get_stream: tokio::sync::watch::Sender<GetStream>,
    limits: Limits,
}

/// The state of the handshake-era GET stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GetStream {
    /// Not (or no longer) open.
    Closed,
    /// The remote accepted it: its notifications arrive from now on.
    Open,
    /// The remote offers none, or the bridge gave up on it.
    None,
}

/// Parses and checks the remote's URL.
pub(crate) fn parse_url(url: &str) -> Result<Uri, String> {
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("invalid URL {url:?}: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(s) => return Err(format!("unsupported URL scheme {s:?}")),
        None => return Err(format!("URL {url:?} has no scheme")),
    }
    if uri.authority().is_none() {
        return Err(format!("URL {url:?} has no host"));
    }
    Ok(uri)
}

fn pool() -> Result<Pool, String> {
    use hyper_rustls::ConfigBuilderExt;
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.enforce_http(false);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot configure TLS: {e}"))?
        .with_webpki_roots()
        .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(HyperClient::builder(TokioExecutor::new()).build(connector))
}

/// The media type of a response, lower-case, without parameters.
fn media_type(resp: &http::Response<Incoming>) -> String {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

impl Upstream {
    pub(crate) fn new(
        url: Uri,
        headers: Vec<(HeaderName, HeaderValue)>,
        auth: Option<Arc<dyn HttpAuth>>,
        limits: Limits,
    ) -> Result<Self, String> {
        // A configured Authorization header is the only credential sent.
        let auth = auth.filter(|_| {
            !headers
                .iter()
                .any(|(n, _)| n == http::header::AUTHORIZATION)
        });
        let shown = format!(
            "{}://{}{}",
            url.scheme_str().unwrap_or("http"),
            url.authority()
                .map(|a| a.as_str().rsplit('@').next().unwrap_or_default())
                .unwrap_or_default(),
            url.path()
        );
        Ok(Self {
            pool: pool()?,
            url,
            shown,
            headers,
            auth,
            session: Mutex::new(None),
            reinit: Mutex::new(None),
            renewing: tokio::sync::Mutex::new(()),
            setup: Mutex::new(SessionSetup::new(limits.max_resource_subscriptions)),
            version: Mutex::new(None),
            waiting_on_host: AtomicUsize::new(0),
            get_stream: tokio::sync::watch::Sender::new(GetStream::Closed),
            limits,
        })
    }

    /// Notes a handshake host's request that sets its session up (level,
    /// subscriptions) as it is sent, for a renewed session.
    pub(crate) fn note_setup(&self, method: &str, value: Option<&str>) {
        let kept = self.setup.lock().map(|mut s| s.note(method, value));
        if matches!(kept, Ok(false)) {
            tracing::warn!("too many subscriptions to remember; a renewed session will miss some");
        }
    }

    /// Whether a handshake-era session is open.
    pub(crate) fn has_session(&self) -> bool {
        self.session.lock().map(|s| s.is_some()).unwrap_or(false)
    }

    /// Records how many remote requests wait for the host's answer.
    pub(crate) fn set_waiting_on_host(&self, n: usize) {
        self.waiting_on_host.store(n, Ordering::Relaxed);
    }

    /// Whether the stream timed out only because the host is slow to
    /// answer one of the remote's requests.
    fn host_is_answering(&self) -> bool {
        self.waiting_on_host.load(Ordering::Relaxed) > 0
    }

    /// Records the version the `initialize` answer negotiated.
    pub(crate) fn set_version(&self, version: &str) {
        if let (Ok(v), Ok(mut slot)) = (HeaderValue::from_str(version), self.version.lock()) {
            *slot = Some(v);
        }
    }

    /// The hook's headers for one HTTP request (none without a hook).
    async fn auth_headers(&self, method: &Method) -> Result<Vec<(String, String)>, Failure> {
        let Some(auth) = &self.auth else {
            return Ok(Vec::new());
        };
        auth.headers(self.auth_request(method))
            .await
            .map_err(|e| Failure::Transport(format!("the remote requires authorization: {e}")))
    }

    fn auth_request(&self, method: &Method) -> AuthRequest {
        AuthRequest {
            method: method.as_str().to_owned(),
            url: self.url.to_string(),
        }
    }

    /// Asks the hook what to do about a 401/403 answer; `Ok(true)` means
    /// new credentials are ready.
    async fn challenged(
        &self,
        method: &Method,
        resp: &http::Response<Incoming>,
        sent: Vec<(String, String)>,
    ) -> Result<bool, Failure> {
        let Some(auth) = &self.auth else {
            return Ok(false);
        };
        let text = |v: &HeaderValue| v.to_str().ok().map(str::to_owned);
        let challenge = AuthChallenge {
            request: self.auth_request(method),
            status: resp.status().as_u16(),
            www_authenticate: resp
                .headers()
                .get_all(http::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(text)
                .collect(),
            headers: resp
                .headers()
                .iter()
                .filter_map(|(n, v)| Some((n.as_str().to_owned(), text(v)?)))
                .collect(),
            sent,
        };
        match auth.on_challenge(challenge).await {
            AuthDecision::Retry => Ok(true),
            AuthDecision::Proceed => Ok(false),
            AuthDecision::Fail(e) => Err(Failure::Transport(format!(
                "the remote requires authorization: {e}"
            ))),
        }
    }

    /// Builds a request with the hook's headers and sends it; on 401/403
    /// the hook may renew the credentials, and the request is sent again
    /// (at most `Limits::max_auth_retries` times).
    async fn send_authorized(
        &self,
        method: Method,
        body: Bytes,
        mcp: &[(String, String)],
        accept: &'static str,
    ) -> Result<http::Response<Incoming>, SendError> {
        let mut retries = 0;
        loop {
            let sent = self.auth_headers(&method).await?;
            let mut req = self.request(method.clone(), body.clone(), mcp, accept)?;
            add_auth(req.headers_mut(), &sent)?;
            let resp = self.send(req).await?;
            let status = resp.status();
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                if retries < self.limits.max_auth_retries
                    && self.challenged(&method, &resp, sent).await?
                {
                    retries += 1;
                    continue;
                }
            } else if status.is_success() {
                if let Some(auth) = &self.auth {
                    let headers: Vec<(String, String)> = resp
                        .headers()
                        .iter()
                        .filter_map(|(n, v)| {
                            Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned()))
                        })
                        .collect();
                    auth.on_success(&self.auth_request(&method), &headers);
                }
            }
            return Ok(resp);
        }
    }

    fn request(
        &self,
        method: Method,
        body: Bytes,
        mcp: &[(String, String)],
        accept: &'static str,
    ) -> Result<Request<Full<Bytes>>, Failure> {
        let mut req = Request::builder()
            .method(method.clone())
            .uri(self.url.clone())
            .header(ACCEPT, accept);
        if method == Method::POST {
            req = req.header(CONTENT_TYPE, "application/json");
        }
        let mut req = req
            .body(Full::new(body))
            .map_err(|e| Failure::Transport(format!("cannot build the HTTP request: {e}")))?;
        let h = req.headers_mut();
        for (n, v) in &self.headers {
            h.append(n.clone(), v.clone());
        }
        if let Ok(Some(s)) = self.session.lock().as_deref() {
            h.insert(HeaderName::from_static("mcp-session-id"), s.clone());
        }
        if let Ok(Some(v)) = self.version.lock().as_deref() {
            h.insert(HeaderName::from_static("mcp-protocol-version"), v.clone());
        }
        for (n, v) in mcp {
            let name = HeaderName::from_bytes(n.as_bytes())
                .map_err(|_| Failure::Transport(format!("{n} is not a valid header name")))?;
            let value = HeaderValue::from_str(v).map_err(|_| {
                Failure::Transport(format!("the value for {n} is not a valid header value"))
            })?;
            h.insert(name, value);
        }
        Ok(req)
    }

    async fn send(&self, req: Request<Full<Bytes>>) -> Result<http::Response<Incoming>, SendError> {
        match tokio::time::timeout(self.limits.timeout, self.pool.request(req)).await {
            Ok(Ok(r)) => Ok(r),
            // No answer at all (refused, reset): safe to send again for a
            // read-only method.
            Ok(Err(e)) => Err(SendError {
                failure: Failure::Transport(format!(
                    "the HTTP request to {} failed: {e}",
                    self.shown
                )),
                connection: true,
                timeout: false,
            }),
            // The remote may still be working on it: sent again only for
            // a read-only method (`Retries::on_timeout`).
            Err(_) => Err(SendError {
                failure: Failure::Transport(format!(
                    "no answer from {} within {:?}",
                    self.shown, self.limits.timeout
                )),
                connection: false,
                timeout: true,
            }),
        }
    }

    /// POSTs one message and hands every message of the answer to `tx`.
    /// `initialize` captures the session id; `Ok` means the answer ended
    /// normally (which need not have carried a response).
    /// `retries`: when the POST may be sent again (see [`Retries`]).
    pub(crate) async fn post(
        &self,
        body: Vec<u8>,
        mcp: &[(String, String)],
        initialize: bool,
        origin: Option<&RequestId>,
        tx: &mpsc::Sender<Inbound>,
        retries: Retries,
    ) -> Result<(), Failure> {
        let how = Post {
            initialize,
            idle_timeout: true,
            retries,
            renew: true,
        };
        self.post_inner(body, mcp, origin, tx, how).await
    }

    /// A 2026-07-28 `subscriptions/listen`: like [`Upstream::post`], but
    /// its answer stream may stay quiet for as long as nothing changes.
    pub(crate) async fn post_listen(
        &self,
        body: Vec<u8>,
        mcp: &[(String, String)],
        tx: &mpsc::Sender<Inbound>,
    ) -> Result<(), Failure> {
        let how = Post {
            initialize: false,
            idle_timeout: false,
            retries: Retries::NONE,
            renew: true,
        };
        self.post_inner(body, mcp, None, tx, how).await
    }

    /// Sends one POST, again after a connection error, a 429, 502, 503
    /// or 504 answer, or (`retries.on_timeout`) no answer within the
    /// timeout, at most `retries.max` times in all (see [`Retries`]).
    async fn send_retrying(
        &self,
        body: &Bytes,
        mcp: &[(String, String)],
        retries: Retries,
    ) -> Result<http::Response<Incoming>, Failure> {
        let Retries {
            max: retries,
            on_timeout,
        } = retries;
        let mut attempt = 0u32;
        loop {
            let sent = self
                .send_authorized(
                    Method::POST,
                    body.clone(),
                    mcp,
                    "application/json, text/event-stream",
                )
                .await;
            // Decided before any byte of the answer is read, so nothing of
            // it has reached the host.
            let again = match &sent {
                Ok(r) if RETRY_STATUSES.contains(&r.status().as_u16()) => {
                    Some((format!("HTTP {}", r.status()), retry_after(r)))
                }
                Err(e) if e.connection => Some(("a connection error".to_owned(), None)),
                // The same budget as the other causes.
                Err(e) if e.timeout && on_timeout => {
                    Some(("no answer within the timeout".to_owned(), None))
                }
                _ => None,
            };
            let wait = again.as_ref().and_then(|(_, after)| {
                (attempt < retries).then(|| self.backoff(attempt, *after))?
            });
            match (again, wait) {
                (Some((why, _)), Some(wait)) => {
                    attempt += 1;
                    tracing::info!(
                        "the remote answered with {why}; sending the request again ({attempt} of {retries}) in {wait:?}"
                    );
                    drop(sent);
                    tokio::time::sleep(wait).await;
                }
                _ => return sent.map_err(|e| e.failure),
            }
        }
    }

    /// The session id in use, if any.
    fn session_value(&self) -> Option<HeaderValue> {
        self.session.lock().ok().and_then(|s| s.clone())
    }

    // LEGACY-12
    /// The remote forgot the session `stale`: `initialize` is sent again
    /// with the parameters of the one that opened it (the host's, or the
    /// bridge's own), then `notifications/initialized`; the GET stream
    /// follows by itself. `true` when a live session is in place (also
    /// when another request renewed it meanwhile).
    async fn renew_session(&self, stale: Option<&HeaderValue>) -> bool {
        let _one_at_a_time = self.renewing.lock().await;
        let current = self.session_value();
        if current.is_some() && current.as_ref() != stale {
            return true;
        }
        let Some(init) = self.reinit.lock().ok().and_then(|g| g.clone()) else {
            return false;
        };
        tracing::warn!("the remote's session expired (HTTP 404); initializing a new one");
        if let Ok(mut s) = self.session.lock() {
            *s = None;
        }
        let plain = |initialize| Post {
            initialize,
            idle_timeout: true,
            retries: Retries::NONE,
            renew: false,
        };
        let answers = self.gather(init.to_vec(), &[], plain(true)).await;
        let ok = answers.as_ref().is_ok_and(|a| {
            a.iter()
                .any(|m| crate::message::classify(m).is_ok_and(|c| c.member("result").is_some()))
        }) && self.has_session();
        if !ok {
            tracing::warn!("the remote refused the new session");
            return false;
        }
        let done = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
        if self.gather(done, &[], plain(false)).await.is_err() {
            tracing::warn!("the remote refused notifications/initialized");
        }
        // The host's level and subscriptions were the old session's: the
        // new one gets them before the host's request is sent again.
        let setup = self.setup.lock().map(|s| s.replay()).unwrap_or_default();
        for body in setup {
            if self.gather(body, &[], plain(false)).await.is_err() {
                tracing::warn!(
                    "the remote refused the host's level or a subscription in the new session"
                );
            }
        }
        tracing::warn!("a new session with the remote is open; the request is sent again");
        true
    }

    async fn post_inner(
        &self,
        body: Vec<u8>,
        mcp: &[(String, String)],
        origin: Option<&RequestId>,
        tx: &mpsc::Sender<Inbound>,
        how: Post,
    ) -> Result<(), Failure> {
        let Post {
            initialize,
            idle_timeout,
            retries,
            renew,
        } = how;
        let body = Bytes::from(body);
        let mut renewed = false;
        let (resp, had_session) = loop {
            let stale = self.session_value();
            let resp = self.send_retrying(&body, mcp, retries).await?;
            // LEGACY-12: a 404 to a request carrying a session id means the
            // session is gone: a new one is initialized (once) and the
            // request sent again in it.
            if resp.status() == StatusCode::NOT_FOUND
                && stale.is_some()
                && renew
                && !initialize
                && !renewed
            {
                drop(resp);
                renewed = true;
                if Box::pin(self.renew_session(stale.as_ref())).await {
                    continue;
                }
                return Err(Failure::Transport(
                    "the remote's session has expired (HTTP 404) and a new one could not be initialized"
                        .to_owned(),
                ));
            }
            break (resp, stale.is_some());
        };
        let status = resp.status();
        if initialize && status.is_success() {
            if let Some(s) = resp.headers().get(MCP_SESSION_ID) {
                if let Ok(mut slot) = self.session.lock() {
                    *slot = Some(s.clone());
                }
                // Kept to open a new session like it if this one expires.
                if let Ok(mut slot) = self.reinit.lock() {
                    *slot = Some(body.clone());
                }
            }
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Ok(());
        }
        if !status.is_success() {
            if status == StatusCode::NOT_FOUND && had_session {
                return Err(Failure::Transport(
                    "the remote's session has expired (HTTP 404); restart the bridge's host session"
                        .to_owned(),
                ));
            }
            let body = self.read_body(resp).await.unwrap_or_default();
            return Err(rpc_error_of(&body).map_or_else(
                || Failure::Transport(format!("the remote answered HTTP {status}")),
                Failure::Rpc,
            ));
        }
        match media_type(&resp).as_str() {
            "text/event-stream" => self.relay_sse(resp, origin, tx, idle_timeout).await,
            "application/json" => {
                let body = self.read_body(resp).await?;
                if !body.is_empty() {
                    let _ = tx.send(Inbound::Message(body, origin.cloned())).await;
                }
                Ok(())
            }
            other => Err(Failure::Transport(format!(
                "the remote answered with unexpected content type {other:?}"
            ))),
        }
    }

    /// POSTs one message and returns the messages of the answer (at most
    /// 64; the bridge's own probes get one answer).
    /// `initialize` captures the session id, as in [`Upstream::post`].
    pub(crate) async fn collect(
        &self,
        body: Vec<u8>,
        mcp: &[(String, String)],
        initialize: bool,
    ) -> Result<Vec<Vec<u8>>, Failure> {
        let how = Post {
            initialize,
            idle_timeout: true,
            retries: Retries::NONE,
            renew: true,
        };
        self.gather(body, mcp, how).await
    }

    async fn gather(
        &self,
        body: Vec<u8>,
        mcp: &[(String, String)],
        how: Post,
    ) -> Result<Vec<Vec<u8>>, Failure> {
        let (tx, mut rx) = mpsc::channel(16);
        let post = async move { self.post_inner(body, mcp, None, &tx, how).await };
        let gather = async {
            let mut out = Vec::new();
            while let Some(m) = rx.recv().await {
                if let (Inbound::Message(m, _), true) = (m, out.len() < 64) {
                    out.push(m);
                }
            }
            out
        };
        let (r, out) = tokio::join!(post, gather);
        r.map(|()| out)
    }

    async fn read_body(&self, resp: http::Response<Incoming>) -> Result<Vec<u8>, Failure> {
        let mut body = resp.into_body();
        let mut out = Vec::new();
        loop {
            let frame = match tokio::time::timeout(self.limits.timeout, body.frame()).await {
                Err(_) => return Err(Failure::Transport("the remote's answer stalled".to_owned())),
                Ok(None) => return Ok(out),
                Ok(Some(Err(e))) => {
                    return Err(Failure::Transport(format!(
                        "the remote's answer broke off: {e}"
                    )));
                }
                Ok(Some(Ok(f))) => f,
            };
            if let Ok(data) = frame.into_data() {
                if out.len() + data.len() > self.limits.max_message {
                    return Err(Failure::Transport(format!(
                        "the remote's answer is larger than {} bytes",
                        self.limits.max_message
                    )));
                }
                out.extend_from_slice(&data);
            }
        }
    }

    /// Relays the `message` events of an SSE answer; any event restarts
    /// the idle timeout (progress keeps a long call alive).
    async fn relay_sse(
        &self,
        resp: http::Response<Incoming>,
        origin: Option<&RequestId>,
        tx: &mpsc::Sender<Inbound>,
        idle_timeout: bool,
    ) -> Result<(), Failure> {
        let mut body = resp.into_body();
        let mut parser = SseParser::new(self.limits.max_message, Duration::from_secs(60));
        // Only a message restarts the timeout: a remote sending keep-alive
        // comments (or any bytes that never make a message) forever, and
        // no answer, still fails the request in time.
        let mut deadline = tokio::time::Instant::now() + self.limits.timeout;
        loop {
            let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) if self.host_is_answering() || !idle_timeout => {
                    deadline = tokio::time::Instant::now() + self.limits.timeout;
                    continue;
                }
                Err(_) => {
                    return Err(Failure::Transport(format!(
                        "the remote's stream sent no message within {:?}",
                        self.limits.timeout
                    )));
                }
                Ok(None) => return Ok(()),
                Ok(Some(Err(e))) => {
                    return Err(Failure::Transport(format!(
                        "the remote's stream broke off: {e}"
                    )));
                }
                Ok(Some(Ok(f))) => f,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let events = parser.feed(&data).map_err(|e| {
                Failure::Transport(format!("bad event stream from the remote: {e}"))
            })?;
            for ev in events {
                if ev.is_message() && !ev.data.trim().is_empty() {
                    deadline = tokio::time::Instant::now() + self.limits.timeout;
                    if tx
                        .send(Inbound::Message(ev.data.into_bytes(), origin.cloned()))
                        .await
                        .is_err()
                    {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Handshake era: the GET stream for messages tied to no request,
    /// reopened after it ends, until `tx` closes or the remote says it
    /// offers none.
    pub(crate) async fn listen(&self, tx: mpsc::Sender<Inbound>) {
        let mut failures = 0u32;
        // A renewal for the GET stream's sake, at most once until a stream
        // opens: a remote answering every GET with 404 is not given a new
        // session each time.
        let mut renewed = false;
        while !tx.is_closed() {
            let Ok(sent) = self.auth_headers(&Method::GET).await else {
                return;
            };
            let stale = self.session_value();
            let req = match self.request(Method::GET, Bytes::new(), &[], "text/event-stream") {
                Ok(mut r) => match add_auth(r.headers_mut(), &sent) {
                    Ok(()) => r,
                    Err(_) => return,
                },
                Err(_) => return,
            };
            let ended_well = match self.pool.request(req).await {
                Ok(resp)
                    if resp.status() == StatusCode::UNAUTHORIZED
                        || resp.status() == StatusCode::FORBIDDEN =>
                {
                    // Renewed credentials are used on the next attempt.
                    let renewed = self.challenged(&Method::GET, &resp, sent).await;
                    tracing::debug!(status = %resp.status(), renewed = matches!(renewed, Ok(true)), "the GET stream was refused");
                    false
                }
                // LEGACY-12: the session is gone; a new one, then the GET
                // again (a failure when it cannot be had).
                Ok(resp)
                    if resp.status() == StatusCode::NOT_FOUND && stale.is_some() && !renewed =>
                {
                    drop(resp);
                    renewed = true;
                    Box::pin(self.renew_session(stale.as_ref())).await
                }
                Ok(resp) if resp.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!("the remote offers no GET stream");
                    self.get_stream.send_replace(GetStream::None);
                    return;
                }
                Ok(resp)
                    if resp.status().is_success() && media_type(&resp) == "text/event-stream" =>
                {
                    failures = 0;
                    renewed = false;
                    self.get_stream.send_replace(GetStream::Open);
                    let mut body = resp.into_body();
                    let mut parser =
                        SseParser::new(self.limits.max_message, Duration::from_secs(60));
                    loop {
                        match body.frame().await {
                            None => break true,
                            Some(Err(_)) => break false,
                            Some(Ok(f)) => {
                                let Ok(data) = f.into_data() else { continue };
                                let Ok(events) = parser.feed(&data) else {
                                    break false;
                                };
                                for ev in events {
                                    if ev.is_message() && !ev.data.trim().is_empty() {
                                        let _ = tx
                                            .send(Inbound::Message(ev.data.into_bytes(), None))
                                            .await;
                                    }
                                }
                            }
                        }
                    }
                }
                Ok(resp) => {
                    tracing::debug!(status = %resp.status(), "the GET stream was refused");
                    false
                }
                Err(e) => {
                    tracing::debug!(error = %e, "the GET stream failed");
                    false
                }
            };
            self.get_stream.send_replace(GetStream::Closed);
            if !ended_well {
                failures += 1;
                if failures > self.limits.max_listen_retries {
                    tracing::warn!("giving up on the remote's GET stream");
                    self.get_stream.send_replace(GetStream::None);
                    return;
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    // SUB-13
    /// Waits (at most the exchange timeout) until the GET stream is open
    /// or known to be unavailable; what the remote publishes after that
    /// reaches the bridge. `false` when it is not open.
    pub(crate) async fn wait_get_stream(&self) -> bool {
        let mut rx = self.get_stream.subscribe();
        let open = tokio::time::timeout(
            self.limits.timeout,
            rx.wait_for(|s| *s != GetStream::Closed),
        )
        .await;
        matches!(open, Ok(Ok(s)) if *s == GetStream::Open)
    }

    /// Handshake era: ends the session (DELETE), best effort.
    pub(crate) async fn close(&self) {
        if !self.has_session() {
            return;
        }
        let Ok(sent) = self.auth_headers(&Method::DELETE).await else {
            return;
        };
        if let Ok(mut req) = self.request(Method::DELETE, Bytes::new(), &[], "application/json") {
            if add_auth(req.headers_mut(), &sent).is_ok() {
                let _ = tokio::time::timeout(Duration::from_secs(5), self.pool.request(req)).await;
            }
        }
    }
}

/// The statuses after which a request that is safe to repeat is sent
/// again: too many requests and the gateway errors.
const RETRY_STATUSES: [u16; 4] = [429, 502, 503, 504];

/// How one POST is made.
#[derive(Debug, Clone, Copy)]
struct Post {
    /// `initialize`: the answer's session id is kept.
    initialize: bool,
    /// The answer stream fails after `Limits::timeout` without bytes.
    idle_timeout: bool,
    /// When it may be sent again.
    retries: Retries,
    /// A 404 for the session re-initializes it and sends the POST again.
    renew: bool,
}

/// When a POST may be sent again: at most `max` times in all after a
/// connection error (no answer came) or a 429, 502, 503 or 504 answer
/// (for requests that are safe to repeat), and, with `on_timeout`, also
/// after no answer came within `Limits::timeout` (read-only methods only:
/// the remote may still be working on the first one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retries {
    pub(crate) max: u32,
    pub(crate) on_timeout: bool,
}

impl Retries {
    /// Sent once.
    pub(crate) const NONE: Self = Self {
        max: 0,
        on_timeout: false,
    };
}

/// A failed HTTP exchange; `connection`: no answer came at all (refused,
/// reset); `timeout`: none came within `Limits::timeout`.
#[derive(Debug)]
struct SendError {
    failure: Failure,
    connection: bool,
    timeout: bool,
}

impl From<Failure> for SendError {
    fn from(failure: Failure) -> Self {
        Self {
            failure,
            connection: false,
            timeout: false,
        }
    }
}

// RFC 9110 section 10.2.3: delay-seconds or an HTTP-date.
/// The wait the answer's `Retry-After` asks for, in either form (a date
/// in the past is no wait).
fn retry_after(resp: &http::Response<Incoming>) -> Option<Duration> {
    let value = resp
        .headers()
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?;
    ferromcp_client::retry::parse_retry_after(value, std::time::SystemTime::now())
}

impl Upstream {
    /// How long to wait before attempt `attempt + 1`: the remote's
    /// `Retry-After` when it gave one (`None` when it asks for longer than
    /// `Limits::retry_max_wait`: the answer then stands), else an
    /// exponential backoff from 100 ms with up to 50 % random jitter,
    /// bounded by `Limits::retry_max_wait`.
    fn backoff(&self, attempt: u32, after: Option<Duration>) -> Option<Duration> {
        let cap = self.limits.retry_max_wait;
        if let Some(after) = after {
            return (after <= cap).then_some(after);
        }
        let base = Duration::from_millis(100)
            .saturating_mul(1u32 << attempt.min(16))
            .min(cap);
        let mut b = [0u8; 2];
        let jitter = match getrandom::fill(&mut b) {
            Ok(()) => base.mul_f64(f64::from(u16::from_le_bytes(b)) / f64::from(u16::MAX) / 2.0),
            Err(_) => Duration::ZERO,
        };
        Some((base + jitter).min(cap))
    }
}

/// Adds the credentials hook's headers (marked sensitive, so they are
/// never printed).
fn add_auth(h: &mut http::HeaderMap, sent: &[(String, String)]) -> Result<(), Failure> {
    for (n, v) in sent {
        let name = HeaderName::from_bytes(n.as_bytes()).map_err(|_| {
            Failure::Transport(format!(
                "the credentials hook gave an invalid header name {n:?}"
            ))
        })?;
        let mut value = HeaderValue::from_str(v).map_err(|_| {
            Failure::Transport(format!(
                "the credentials hook gave an invalid value for {n}"
            ))
        })?;
        value.set_sensitive(true);
        h.insert(name, value);
    }
    Ok(())
}

/// The `error` object of a JSON-RPC error response, raw.
fn rpc_error_of(body: &[u8]) -> Option<String> {
    let c = crate::message::classify(body).ok()?;
    c.member("error").map(|e| e.get().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_is_bounded_and_a_long_retry_after_is_not_waited_for() {
        let limits = Limits::default().retry_max_wait(Duration::from_secs(1));
        let url = parse_url("http://127.0.0.1:1/mcp").unwrap_or_else(|e| panic!("{e}"));
        let up = Upstream::new(url, Vec::new(), None, limits).unwrap_or_else(|e| panic!("{e}"));
        for attempt in 0..40 {
            let wait = up
                .backoff(attempt, None)
                .unwrap_or_else(|| panic!("{attempt}"));
            assert!(wait <= Duration::from_secs(1), "{attempt}: {wait:?}");
            assert!(wait >= Duration::from_millis(100).min(Duration::from_secs(1)));
        }
        let given = Some(Duration::from_secs(1));
        assert_eq!(up.backoff(0, given), given);
        assert_eq!(up.backoff(0, Some(Duration::from_secs(2))), None);
    }
}
