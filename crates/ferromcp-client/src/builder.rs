//! [`ClientBuilder`]: identity, handlers, limits, era preference, cache, and
//! the connect calls for each transport.

use crate::cache::ResponseCache;
use crate::client::Client;
use crate::core::{Config, Notice, NoticeCallback};
use crate::error::Result;
use crate::handlers::{HandlerError, Handlers};
use crate::limits::Limits;
use crate::negotiate::EraPreference;
use ferromcp_protocol::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, JsonObject, ListRootsResult, LoggingLevel,
};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

/// Builds and connects a [`Client`].
pub struct ClientBuilder {
    client_info: Implementation,
    send_client_info: bool,
    validate_output: bool,
    handlers: Handlers,
    extra_capabilities: ClientCapabilities,
    limits: Limits,
    era: EraPreference,
    pinned: Option<ferromcp_protocol::ProtocolVersion>,
    retry: Option<crate::RetryPolicy>,
    trace_context: Option<crate::TraceContextProvider>,
    cache: Option<Arc<ResponseCache>>,
    partition: Option<String>,
    headers: Vec<(String, String)>,
    auth: Option<Arc<dyn crate::auth::HttpAuth>>,
    get_stream: bool,
    on_notice: Option<NoticeCallback>,
    log_level: Option<LoggingLevel>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("client_info", &self.client_info)
            .field("handlers", &self.handlers)
            .field("limits", &self.limits)
            .field("era", &self.era)
            .field("pinned", &self.pinned)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    // META-04
    /// A builder for a client named `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            client_info: Implementation::new(name, version),
            send_client_info: true,
            validate_output: true,
            handlers: Handlers::default(),
            extra_capabilities: ClientCapabilities::default(),
            limits: Limits::default(),
            era: EraPreference::Auto,
            pinned: None,
            retry: None,
            trace_context: None,
            cache: Some(Arc::new(ResponseCache::default())),
            partition: None,
            headers: Vec::new(),
            auth: None,
            get_stream: true,
            on_notice: None,
            log_level: None,
        }
    }

    /// The full `clientInfo`.
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.client_info = info;
        self
    }

    /// Whether `tools/call` results are checked against the tool's
    /// `outputSchema` from the last `tools/list` (default on): a result
    /// without `structuredContent`, or whose `structuredContent` breaks the
    /// schema, fails with [`crate::Error::is_output_schema_mismatch`].
    /// Schema checks need the `output-validation` feature (default); the
    /// missing-`structuredContent` check needs nothing.
    pub fn validate_output(mut self, on: bool) -> Self {
        self.validate_output = on;
        self
    }

    // META-04
    /// Leave `clientInfo` out of modern request envelopes.
    pub fn without_client_info(mut self) -> Self {
        self.send_client_info = false;
        self
    }

    /// Answers form-mode elicitation (declares `elicitation: {form: {}}`).
    pub fn on_elicitation<F, Fut>(self, f: F) -> Self
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, HandlerError>> + Send + 'static,
    {
        self.on_elicitation_modes(true, false, f)
    }

    // ELICIT-01
    /// Answers elicitation in the given modes (at least form
    /// when neither is set).
    pub fn on_elicitation_modes<F, Fut>(mut self, form: bool, url: bool, f: F) -> Self
    where
        F: Fn(ElicitRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, HandlerError>> + Send + 'static,
    {
        self.handlers.set_elicitation(form, url, f);
        self
    }

    /// Answers sampling requests (declares `sampling: {}`).
    pub fn on_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, HandlerError>> + Send + 'static,
    {
        self.handlers.set_sampling(f);
        self
    }

    /// Answers roots requests (declares `roots: {}`).
    pub fn on_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, HandlerError>> + Send + 'static,
    {
        self.handlers.set_roots(f);
        self
    }

    /// Called with every server notification no request claimed.
    pub fn on_notification(mut self, f: impl Fn(&Notice) + Send + Sync + 'static) -> Self {
        self.on_notice = Some(Arc::new(f));
        self
    }

    // VER-07
    /// Extensions to declare in `capabilities.extensions`.
    pub fn extensions(mut self, extensions: JsonObject) -> Self {
        self.extra_capabilities.extensions = Some(extensions);
        self
    }

    /// Declares MCP Apps support (`io.modelcontextprotocol/ui` with
    /// `mimeTypes: ["text/html;profile=mcp-app"]`), in both eras, beside
    /// any extension given to [`Self::extensions`] (call this after it).
    /// Servers may then offer tools with HTML apps: read a tool's link with
    /// [`Tool::ui`](crate::protocol::types::Tool::ui) and keep app-only
    /// tools from the model with
    /// [`Tool::visible_to_model`](crate::protocol::types::Tool::visible_to_model).
    pub fn mcp_apps(mut self) -> Self {
        use ferromcp_protocol::types::{UI_EXTENSION, UiClientCapability};
        self.extra_capabilities
            .extensions
            .get_or_insert_with(JsonObject::new)
            .insert(
                UI_EXTENSION.to_owned(),
                serde_json::Value::Object(UiClientCapability::html().to_settings()),
            );
        self
    }

    /// Declares the skills extension (`io.modelcontextprotocol/skills`,
    /// `{}`) in both eras, for servers that adapt to hosts supporting it.
    /// The skills methods ([`Client::list_skills`](crate::Client::list_skills),
    /// [`Client::get_skill`](crate::Client::get_skill), …) work without it:
    /// what they need is the server's declaration.
    pub fn skills(mut self) -> Self {
        use ferromcp_protocol::types::SKILLS_EXTENSION;
        self.extra_capabilities
            .extensions
            .get_or_insert_with(JsonObject::new)
            .insert(
                SKILLS_EXTENSION.to_owned(),
                serde_json::Value::Object(JsonObject::new()),
            );
        self
    }

    /// Experimental capabilities to declare.
    pub fn experimental(mut self, experimental: JsonObject) -> Self {
        self.extra_capabilities.experimental = Some(experimental);
        self
    }

    // META-05, LOG-07
    /// Ask for log notifications at `level` on modern requests (off unless set).
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// All limits at once.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Per-request timeout (default [`crate::limits::DEFAULT_REQUEST_TIMEOUT`]).
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.limits.request_timeout = d;
        self
    }

    // LEGACY-06
    /// Keep-alive (off by default): in the handshake era (stdio
    /// or an HTTP session) a `ping` goes out every `interval`; one left
    /// unanswered for `timeout` means the peer is gone, and the connection
    /// is closed: pending and later requests fail with a transport error
    /// saying so ([`crate::Client::lost_reason`]). Any answer, an error
    /// included, proves the peer alive. The 2026-07-28 era has no `ping`:
    /// each request stands alone, and a dead stdio server is seen at EOF.
    pub fn keep_alive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.limits.keep_alive_interval = Some(interval.max(Duration::from_millis(1)));
        self.limits.keep_alive_timeout = timeout;
        self
    }

    /// Sends safe requests again after a connection failure or a 502, 503
    /// or 504 answer (HTTP only; off by default): see [`crate::retry`] for
    /// which requests, how often and how long. `tools/call` is repeated
    /// only for the tools the policy names.
    pub fn retry(mut self, policy: crate::RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// The application's current W3C trace context, asked for each request
    /// sent: when it returns one (with a valid `traceparent`), the request's
    /// `_meta` carries its `traceparent` and `tracestate`, so the server's
    /// span continues the trace. This is where an OpenTelemetry application
    /// formats `opentelemetry::Context::current()`'s span context.
    /// [`RequestOptions::trace_context`](crate::RequestOptions::trace_context)
    /// and a `traceparent` in the request's own `_meta` take precedence.
    pub fn trace_context(
        mut self,
        f: impl Fn() -> Option<crate::TraceContext> + Send + Sync + 'static,
    ) -> Self {
        self.trace_context = Some(Arc::new(f));
        self
    }

    /// Hard maximum per request (default [`crate::limits::DEFAULT_MAX_TOTAL_TIMEOUT`]).
    pub fn max_total_timeout(mut self, d: Duration) -> Self {
        self.limits.max_total_timeout = d;
        self
    }

    /// Whether progress restarts the request timeout (default on).
    pub fn reset_timeout_on_progress(mut self, yes: bool) -> Self {
        self.limits.reset_timeout_on_progress = yes;
        self
    }

    /// MRTR round limit (default [`crate::limits::DEFAULT_MAX_MRTR_ROUNDS`]).
    pub fn max_mrtr_rounds(mut self, n: u32) -> Self {
        self.limits.max_mrtr_rounds = n;
        self
    }

    /// Largest SSE event (default [`crate::limits::DEFAULT_MAX_SSE_EVENT_BYTES`]).
    pub fn max_sse_event_bytes(mut self, n: usize) -> Self {
        self.limits.max_sse_event_bytes = n;
        self
    }

    /// Cap on the server's SSE `retry` (default [`crate::limits::DEFAULT_SSE_RETRY_CAP`]).
    pub fn sse_retry_cap(mut self, d: Duration) -> Self {
        self.limits.sse_retry_cap = d;
        self
    }

    /// Largest JSON response body (default [`crate::limits::DEFAULT_MAX_RESPONSE_BYTES`]).
    pub fn max_response_bytes(mut self, n: usize) -> Self {
        self.limits.max_response_bytes = n;
        self
    }

    /// Floor on SSE reconnection delays, whatever `retry` the server sent
    /// (default [`crate::limits::DEFAULT_SSE_MIN_RETRY`]).
    pub fn sse_min_retry(mut self, d: Duration) -> Self {
        self.limits.sse_min_retry = d;
        self
    }

    /// Server→client requests handled at once; more arriving meanwhile are
    /// dropped (default [`crate::limits::DEFAULT_MAX_CONCURRENT_SERVER_REQUESTS`]).
    pub fn max_concurrent_server_requests(mut self, n: usize) -> Self {
        self.limits.max_concurrent_server_requests = n;
        self
    }

    /// Largest stdio line from the server, also for captured stderr
    /// (default [`crate::limits::DEFAULT_MAX_LINE_BYTES`]).
    pub fn max_line_bytes(mut self, n: usize) -> Self {
        self.limits.max_line_bytes = n;
        self
    }

    /// Messages queued for a stdio server's stdin
    /// (default [`crate::limits::DEFAULT_STDIO_WRITE_QUEUE`]).
    pub fn stdio_write_queue(mut self, n: usize) -> Self {
        self.limits.stdio_write_queue = n;
        self
    }

    /// Messages queued from a transport to the client core, per stream
    /// (default [`crate::limits::DEFAULT_MESSAGE_QUEUE`]).
    pub fn message_queue(mut self, n: usize) -> Self {
        self.limits.message_queue = n;
        self
    }

    /// Which era to speak (default: probe, then fall back).
    pub fn era(mut self, era: EraPreference) -> Self {
        self.era = era;
        self
    }

    /// Pins the protocol revision (default: none, negotiate). A handshake
    /// revision (`2025-11-25`, `2025-06-18`, `2025-03-26`, `2024-11-05`)
    /// skips the `server/discover` probe, offers exactly that version in
    /// `initialize` and accepts only it in the answer; a server choosing
    /// another fails the connection with a negotiation error. A modern
    /// revision (`2026-07-28`) probes and never falls back to `initialize`,
    /// like [`EraPreference::Modern`]. The pin overrides [`Self::era`].
    pub fn protocol_version(mut self, version: ferromcp_protocol::ProtocolVersion) -> Self {
        self.pinned = Some(version);
        self
    }

    /// Use `cache` (possibly shared), or `None` to disable caching.
    pub fn cache(mut self, cache: Option<Arc<ResponseCache>>) -> Self {
        self.cache = cache;
        self
    }

    // CACHE-08
    /// The authorization partition for `"private"` cache entries;
    /// set automatically from a bearer token.
    pub fn cache_partition(mut self, partition: impl Into<String>) -> Self {
        self.partition = Some(partition.into());
        self
    }

    // AUTH-20
    /// Sends `Authorization: Bearer <token>` on every HTTP request
    /// and partitions private cache entries by it.
    pub fn bearer_token(mut self, token: &str) -> Self {
        let mut h = std::hash::DefaultHasher::new();
        token.hash(&mut h);
        self.partition
            .get_or_insert_with(|| format!("bearer:{:016x}", h.finish()));
        self.headers
            .push(("Authorization".into(), format!("Bearer {token}")));
        self
    }

    // AUTH-20, CACHE-08
    /// Authorizes every HTTP request through `auth`: its headers
    /// go on each request, and it is asked what to do on 401/403 (bounded
    /// by [`Limits::max_auth_retries`]). Private cache entries are then
    /// partitioned by its [`crate::HttpAuth::cache_partition`].
    pub fn http_auth(mut self, auth: Arc<dyn crate::auth::HttpAuth>) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Re-sends of one HTTP request after the authorization hook renewed
    /// credentials (default [`crate::limits::DEFAULT_MAX_AUTH_RETRIES`]).
    pub fn max_auth_retries(mut self, n: u32) -> Self {
        self.limits.max_auth_retries = n;
        self
    }

    /// An extra header on every HTTP request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Whether to open the handshake-era standalone GET stream (default on).
    pub fn standalone_stream(mut self, yes: bool) -> Self {
        self.get_stream = yes;
        self
    }

    #[allow(clippy::type_complexity)]
    fn config(
        self,
    ) -> (
        Config,
        Vec<(String, String)>,
        bool,
        Option<Arc<dyn crate::auth::HttpAuth>>,
    ) {
        let partition = self.partition.unwrap_or_else(|| "anonymous".into());
        (
            Config {
                handlers: self.handlers,
                extra_capabilities: self.extra_capabilities,
                client_info: self.client_info,
                send_client_info: self.send_client_info,
                validate_output: self.validate_output,
                log_level: self.log_level,
                limits: self.limits,
                cache: self.cache,
                partition,
                on_notice: self.on_notice,
                era: self.era,
                pinned: self.pinned,
                retry: self.retry,
                trace_context: self.trace_context,
            },
            self.headers,
            self.get_stream,
            self.auth,
        )
    }

    /// Starts `cmd` as a child process and negotiates over its stdio.
    #[cfg(feature = "stdio")]
    pub async fn connect_command(self, cmd: crate::StdioCommand) -> Result<Client> {
        let (config, _, _, _) = self.config();
        let t = crate::transport::stdio::StdioTransport::spawn(
            &cmd,
            crate::transport::stdio::StdioLimits {
                max_line: config.limits.max_line_bytes,
                grace: config.limits.shutdown_grace,
                write_queue: config.limits.stdio_write_queue,
                queue: config.limits.message_queue,
            },
        )?;
        Client::from_transport(Arc::new(t), config).start().await
    }

    // Foreign type: the transports are tokio I/O; any tokio byte stream (pipe, socket, in-memory
    // duplex) works.
    /// Speaks newline-delimited JSON-RPC (the stdio wire) over `reader` and
    /// `writer` and negotiates, like [`Self::connect_command`] without a
    /// child process. The usual pairing is a server in the same process:
    /// `ferromcp_server::Server::serve_io` on the other end of a
    /// [`tokio::io::duplex`], so tests need neither processes nor sockets.
    /// Both eras work: the era preference ([`Self::era`]) decides, as over
    /// stdio. [`Client::close`] shuts `writer` down, which ends the server's
    /// input.
    ///
    /// ```no_run
    /// # async fn demo() -> ferromcp_client::Result<()> {
    /// let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    /// // On the server side: `server.serve_io(read_half, write_half)`.
    /// # let _ = server_end;
    /// let (read, write) = tokio::io::split(client_end);
    /// let client = ferromcp_client::ClientBuilder::new("tests", "1.0.0")
    ///     .connect_io(read, write)
    ///     .await?;
    /// # let _ = client; Ok(()) }
    /// ```
    #[cfg(feature = "stdio")]
    pub async fn connect_io<R, W>(self, reader: R, writer: W) -> Result<Client>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        use std::sync::atomic::{AtomicU64, Ordering};
        // Each pair is its own server: a distinct identity keeps cache
        // entries of one in-memory server from answering for another.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let (config, _, _, _) = self.config();
        let t = crate::transport::stdio::StdioTransport::from_io(
            reader,
            writer,
            format!("io:{}", NEXT.fetch_add(1, Ordering::Relaxed)),
            crate::transport::stdio::StdioLimits {
                max_line: config.limits.max_line_bytes,
                grace: config.limits.shutdown_grace,
                write_queue: config.limits.stdio_write_queue,
                queue: config.limits.message_queue,
            },
        );
        Client::from_transport(Arc::new(t), config).start().await
    }

    // ERA-10
    /// Connects to a Streamable HTTP endpoint and negotiates; falls back to
    /// the 2024-11-05 HTTP+SSE transport when the handshake POST is refused
    /// with 400/404/405.
    #[cfg(feature = "http")]
    pub async fn connect_url(self, url: &str) -> Result<Client> {
        use crate::error::Error;
        use crate::transport::http::{HttpLimits, HttpTransport, Sender, parse_url, pool};
        use crate::transport::http_sse::HttpSseTransport;
        use http::header::{HeaderName, HeaderValue};
        let uri = parse_url(url)?;
        let (config, headers, get_stream, auth) = self.config();
        let mut extra = Vec::new();
        for (n, v) in headers {
            let name = HeaderName::from_bytes(n.as_bytes())
                .map_err(|e| Error::config(format!("bad header name {n:?}")).with_source(e))?;
            let value = HeaderValue::from_str(&v)
                .map_err(|e| Error::config(format!("bad value for header {n}")).with_source(e))?;
            extra.push((name, value));
        }
        let limits = HttpLimits {
            max_body: config.limits.max_response_bytes,
            max_event: config.limits.max_sse_event_bytes,
            retry_cap: config.limits.sse_retry_cap,
            default_retry: config.limits.sse_default_retry,
            min_retry: config.limits.sse_min_retry,
            queue: config.limits.message_queue,
            max_resumes: config.limits.max_sse_resumes,
        };
        let sender = Sender {
            pool: pool()?,
            auth,
            max_auth_retries: config.limits.max_auth_retries,
        };
        let t = HttpTransport::new(
            sender.clone(),
            uri.clone(),
            extra.clone(),
            limits.clone(),
            get_stream,
        );
        let fallback_config = Config {
            handlers: config.handlers.clone(),
            extra_capabilities: config.extra_capabilities.clone(),
            client_info: config.client_info.clone(),
            send_client_info: config.send_client_info,
            validate_output: config.validate_output,
            log_level: config.log_level,
            limits: config.limits.clone(),
            cache: config.cache.clone(),
            partition: config.partition.clone(),
            on_notice: config.on_notice.clone(),
            era: EraPreference::Handshake,
            pinned: config.pinned,
            retry: config.retry.clone(),
            trace_context: config.trace_context.clone(),
        };
        // ERA-10's fallback is a handshake-era move: not for a modern pin.
        let auto =
            config.era == EraPreference::Auto && config.pinned.is_none_or(|v| !v.is_modern());
        match Client::from_transport(Arc::new(t), config).start().await {
            Err(e) if auto && matches!(e.status(), Some(400 | 404 | 405)) && !e.is_protocol() => {
                tracing::debug!(error = %e, "Streamable HTTP refused; trying the HTTP+SSE transport (ERA-10)");
                let t = HttpSseTransport::connect(sender, uri, extra, limits)
                    .await
                    .map_err(|_| e)?;
                Client::from_transport(Arc::new(t), fallback_config)
                    .start()
                    .await
            }
            r => r,
        }
    }
}
