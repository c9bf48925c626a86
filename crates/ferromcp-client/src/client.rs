//! The client core: one request path for both eras, on any transport.
//!
//! Every modern request carries the `_meta` envelope and, for
//! HTTP, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`
//! computed with the protocol crate's codec.
//! Handshake-era requests carry no envelope; after `initialize` they carry
//! the negotiated `MCP-Protocol-Version`.
// META-03/04, HDR-01…HDR-03, HDR-15, LEGACY-11
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use crate::cache::{CacheRequest, ResponseCache};
use crate::error::{Error, ErrorKind, Result};
use crate::handlers::Handlers;
use crate::message::Inbound;
use crate::negotiate::{self, EraPreference, ProbeVerdict};
use crate::options::RequestOptions;
use crate::subscription::Subscription;
use crate::transport::{AbortOnDrop, Outbound, Transport, TransportKind};
use ferromcp_protocol::header::codec::encode_header_value;
use ferromcp_protocol::header::x_mcp_header::{ParamHeaderMap, x_mcp_header_map};
use ferromcp_protocol::header::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, name_bearing_param};
use ferromcp_protocol::jsonrpc::{
    self, OutgoingError, OutgoingNotification, OutgoingRequest, OutgoingResult,
};
use ferromcp_protocol::meta::RequestMeta;
use ferromcp_protocol::method::{self, ServerRequest};
use ferromcp_protocol::types::*;
use ferromcp_protocol::{Era, ErrorCode, ErrorObject, ProtocolVersion, RequestId};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Instant;
use tracing::Instrument;

/// A notification from the server that no request claimed: list changes,
/// log messages, resource updates (handshake era and stdio).
#[derive(Debug, Clone)]
pub struct Notice {
    /// The method, e.g. `notifications/tools/list_changed`.
    pub method: String,
    /// The params.
    pub params: Option<Value>,
}

/// Called with every unclaimed server notification.
pub type NoticeCallback = Arc<dyn Fn(&Notice) + Send + Sync>;

/// What the client learned about the server.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub era: Era,
    pub version: ProtocolVersion,
    pub capabilities: ServerCapabilities,
    /// Whether `capabilities` came from the server (initialize or
    /// `server/discover`), so a missing one means "not offered".
    pub capabilities_known: bool,
    pub server_info: Option<Implementation>,
    pub instructions: Option<String>,
}

/// Settings the builder hands to the core.
pub(crate) struct Config {
    pub handlers: Handlers,
    pub extra_capabilities: ClientCapabilities,
    pub client_info: Implementation,
    pub send_client_info: bool,
    /// Check `tools/call` results against the listed `outputSchema`.
    pub validate_output: bool,
    pub log_level: Option<LoggingLevel>,
    pub limits: crate::limits::Limits,
    pub cache: Option<Arc<ResponseCache>>,
    pub partition: String,
    pub on_notice: Option<NoticeCallback>,
    pub era: EraPreference,
    /// The revision pinned by [`crate::ClientBuilder::protocol_version`].
    pub pinned: Option<ProtocolVersion>,
    /// Which failed requests are sent again ([`crate::ClientBuilder::retry`]).
    pub retry: Option<crate::RetryPolicy>,
    /// The application's trace context ([`crate::ClientBuilder::trace_context`]).
    pub trace_context: Option<crate::trace::TraceContextProvider>,
}

pub(crate) struct Inner {
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) config: Config,
    capabilities: ClientCapabilities,
    state: RwLock<State>,
    next_id: AtomicI64,
    tool_headers: Mutex<HashMap<String, ParamHeaderMap>>,
    /// `outputSchema`s from the last `tools/list`, compiled on first use.
    pub(crate) output_schemas: crate::output::OutputSchemas,
    pump: Mutex<Option<AbortOnDrop>>,
    /// The keep-alive task, when keep-alive is on.
    keep_alive: Mutex<Option<AbortOnDrop>>,
    /// Why the connection was given up for dead (keep-alive), if it was.
    lost: Mutex<Option<String>>,
    closed: AtomicBool,
    identity: String,
    /// Permits for server→client requests being handled
    /// ([`crate::Limits::max_concurrent_server_requests`]).
    server_requests: Arc<tokio::sync::Semaphore>,
}

// META-01, META-02
/// Checks the `_meta` keys an application supplied for a request:
/// valid syntax, no non-spec key under a reserved prefix, and none
/// of the envelope keys the client sets itself (protocol version, client
/// capabilities and info, log level; `progressToken` when it asks for
/// progress). Trace context and other spec keys pass.
fn check_app_meta(
    m: JsonObject,
    version: ProtocolVersion,
    opts: &RequestOptions,
) -> Result<JsonObject> {
    use ferromcp_protocol::meta as k;
    for key in m.keys() {
        let own = matches!(
            key.as_str(),
            k::PROTOCOL_VERSION | k::CLIENT_CAPABILITIES | k::CLIENT_INFO | k::LOG_LEVEL
        ) || (key == k::PROGRESS_TOKEN && opts.on_progress.is_some());
        if own {
            return Err(Error::new(
                ErrorKind::InvalidMeta { key: key.clone() },
                format!("_meta key {key:?} is set by the client itself"),
            ));
        }
        k::validate_outgoing_key(key, version).map_err(|e| {
            Error::new(
                ErrorKind::InvalidMeta { key: key.clone() },
                format!("_meta key {key:?}: {e}"),
            )
        })?;
    }
    Ok(m)
}

/// An MCP client connected to one server. Cheap to clone; the connection
/// closes when the last clone is dropped (or on [`Client::close`]).
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.inner.identity)
            .field("state", &self.inner.state())
            .finish()
    }
}

// VER-05
/// HTTP endpoints found to be handshake-era in this process.
fn handshake_memo<R>(f: impl FnOnce(&mut std::collections::BTreeSet<String>) -> R) -> R {
    static MEMO: Mutex<std::collections::BTreeSet<String>> =
        Mutex::new(std::collections::BTreeSet::new());
    f(&mut MEMO.lock().unwrap_or_else(|p| p.into_inner()))
}

// CANCEL-02
/// The `notifications/cancelled` body for `id`.
pub(crate) fn cancelled_notification(id: &RequestId) -> Vec<u8> {
    let params = CancelledNotificationParams {
        request_id: Some(id.clone()),
        reason: Some("cancelled by the client".into()),
        meta: None,
    };
    jsonrpc::to_vec(&OutgoingNotification::new(
        method::NOTIFICATIONS_CANCELLED,
        Some(&params),
    ))
}

/// Decodes a raw result into `T`.
pub(crate) fn decode<T: DeserializeOwned>(raw: &RawValue, what: &str) -> Result<T> {
    serde_json::from_str(raw.get())
        .map_err(|e| Error::invalid(format!("malformed {what} result")).with_source(e))
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

fn to_object<T: serde::Serialize>(p: &T) -> Result<JsonObject> {
    serde_json::to_value(p)
        .map(object)
        .map_err(|e| Error::invalid("cannot serialize request params").with_source(e))
}

impl Inner {
    pub(crate) fn state(&self) -> State {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_state(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.state.write().unwrap_or_else(|p| p.into_inner()));
    }

    fn next_id(&self) -> RequestId {
        RequestId::number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn modern(&self) -> bool {
        self.state().era == Era::Modern
    }

    fn is_http(&self) -> bool {
        self.transport.kind() == TransportKind::Http
    }

    // META-03, META-04, META-05
    /// The envelope for a modern request.
    fn envelope(&self, version: ProtocolVersion) -> RequestMeta {
        let mut meta = RequestMeta::modern(version, self.capabilities.clone());
        if self.config.send_client_info {
            meta.client_info = Some(self.config.client_info.clone());
        }
        meta.log_level = self.config.log_level;
        meta
    }

    /// The envelope as a JSON value.
    pub(crate) fn envelope_value(&self, version: ProtocolVersion) -> Result<Value> {
        serde_json::to_value(self.envelope(version))
            .map_err(|e| Error::invalid("cannot serialize _meta").with_source(e))
    }

    /// The headers of a non-initialize request.
    pub(crate) fn headers_for(
        &self,
        st: &State,
        method: &str,
        params: &JsonObject,
    ) -> Vec<(String, String)> {
        self.headers(st, method, params, false)
    }

    // HDR-01…HDR-03, HDR-15, LEGACY-11
    /// The MCP headers of a request or, in the
    /// handshake era, the negotiated version header.
    fn headers(
        &self,
        st: &State,
        method: &str,
        params: &JsonObject,
        initialize: bool,
    ) -> Vec<(String, String)> {
        let mut h = Vec::new();
        if st.era == Era::Handshake {
            if !initialize {
                h.push((
                    MCP_PROTOCOL_VERSION.to_owned(),
                    st.version.as_str().to_owned(),
                ));
            }
            return h;
        }
        h.push((
            MCP_PROTOCOL_VERSION.to_owned(),
            st.version.as_str().to_owned(),
        ));
        h.push((MCP_METHOD.to_owned(), method.to_owned()));
        if let Some(member) = name_bearing_param(method) {
            if let Some(name) = params.get(member).and_then(Value::as_str) {
                h.push((MCP_NAME.to_owned(), encode_header_value(name).into_owned()));
            }
        }
        if method == method::TOOLS_CALL {
            if let Some(name) = params.get("name").and_then(Value::as_str) {
                let map = self.tool_headers.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(m) = map.get(name) {
                    let args = params.get("arguments").and_then(Value::as_object);
                    h.extend(m.emit(args));
                }
            }
        }
        h
    }

    /// One JSON-RPC exchange: send, then wait for the response while
    /// serving progress, notifications and server requests.
    async fn round(
        self: &Arc<Self>,
        method: &str,
        params: &JsonObject,
        opts: &RequestOptions,
        id: RequestId,
        span: &tracing::Span,
    ) -> Result<Box<RawValue>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::closed());
        }
        let st = self.state();
        let initialize = method == method::INITIALIZE;
        let mut params = params.clone();
        // `_meta` the application put in the params: checked, then merged
        // under the envelope instead of being replaced by it.
        let supplied = match (params.remove("_meta"), &opts.meta) {
            (Some(Value::Object(mut m)), Some(extra)) => {
                m.extend(extra.clone());
                Some(Value::Object(m))
            }
            (None, Some(extra)) => Some(Value::Object(extra.clone())),
            (p, _) => p,
        };
        let app_meta = match supplied {
            None => None,
            Some(Value::Object(m)) if m.is_empty() => None,
            Some(Value::Object(m)) => Some(check_app_meta(m, st.version, opts)?),
            Some(_) => {
                return Err(Error::new(
                    ErrorKind::InvalidMeta { key: String::new() },
                    "the request's _meta must be a JSON object",
                ));
            }
        };
        let mut meta = if st.era == Era::Modern {
            self.envelope(st.version)
        } else {
            RequestMeta::default()
        };
        if opts.tasks {
            if let Some(caps) = meta.client_capabilities.as_mut() {
                caps.extensions.get_or_insert_with(JsonObject::new).insert(
                    ferromcp_protocol::types::TASKS_EXTENSION.to_owned(),
                    Value::Object(JsonObject::new()),
                );
            }
        }
        if opts.on_progress.is_some() {
            meta.progress_token = Some(id.clone()); // PROG-01: unique, = the request id
        }
        // W3C trace context (issue 18): the options' or the hook's, unless
        // the application's own `_meta` carries a traceparent.
        let own_trace = app_meta
            .as_ref()
            .is_some_and(|m| m.contains_key(ferromcp_protocol::meta::TRACEPARENT));
        if !own_trace {
            let cx = match &opts.trace_context {
                Some(cx) => Some(cx.clone()),
                None => self.config.trace_context.as_ref().and_then(|f| f()),
            };
            // Feature `otel`: the request span's OpenTelemetry context.
            #[cfg(feature = "otel")]
            let cx = cx.or_else(|| crate::otel::current(span));
            if let Some((tp, ts)) = cx.as_ref().and_then(crate::TraceContext::validated) {
                if !span.is_disabled() {
                    span.record("trace_id", tracing::field::display(tp.trace_id_hex()));
                }
                meta.traceparent = Some(tp.to_string());
                meta.tracestate = ts.map(str::to_owned);
            }
        }
        if !meta.is_empty() || app_meta.is_some() {
            let mut v = serde_json::to_value(&meta)
                .map_err(|e| Error::invalid("cannot serialize _meta").with_source(e))?;
            if let (Some(app), Value::Object(out)) = (app_meta, &mut v) {
                for (k, x) in app {
                    out.entry(k).or_insert(x);
                }
            }
            params.insert("_meta".into(), v);
        }
        let headers = self.headers(&st, method, &params, initialize);
        let body = jsonrpc::to_vec(&OutgoingRequest::new(&id, method, Some(&params)));
        let out = Outbound {
            id: Some(id.clone()),
            body,
            headers,
            // LEGACY-05, DISC-07
            cancellable: !initialize && method != method::SERVER_DISCOVER,
            resumable: st.era == Era::Handshake,
        };
        // Sending is bounded by the request timeout too (the HTTP+SSE
        // transport POSTs before the exchange starts).
        let timeout = opts.timeout.unwrap_or(self.config.limits.request_timeout);
        let exchange = tokio::time::timeout(timeout, self.transport.request(out))
            .await
            .map_err(|_| {
                Error::new(
                    ErrorKind::Timeout { elapsed: timeout },
                    "sending the request timed out",
                )
            })??;
        self.await_response(exchange, &id, opts).await
    }

    async fn await_response(
        self: &Arc<Self>,
        mut exchange: crate::transport::Exchange,
        id: &RequestId,
        opts: &RequestOptions,
    ) -> Result<Box<RawValue>> {
        let limits = &self.config.limits;
        let timeout = opts.timeout.unwrap_or(limits.request_timeout);
        let max_total = opts.max_total_timeout.unwrap_or(limits.max_total_timeout);
        let reset = opts
            .reset_on_progress
            .unwrap_or(limits.reset_timeout_on_progress);
        let start = Instant::now();
        let hard = start + max_total;
        let mut deadline = (start + timeout).min(hard);
        loop {
            let msg = tokio::select! {
                m = exchange.rx.recv() => m,
                _ = tokio::time::sleep_until(deadline.into()) => {
                    // CANCEL-08: dropping the exchange cancels the transport's way.
                    drop(exchange);
                    return Err(Error::new(
                        ErrorKind::Timeout { elapsed: start.elapsed() },
                        format!("request timed out after {:?}", start.elapsed()),
                    ));
                }
            };
            match msg {
                None => {
                    return Err(Error::transport(
                        "the response stream ended before the response; the request is lost",
                    )); // HTTP-13
                }
                Some(Err(e)) => return Err(e),
                Some(Ok(Inbound::Response { id: rid, outcome })) => {
                    if rid.as_ref() != Some(id) {
                        tracing::debug!(?rid, "ignoring a response for another request");
                        continue;
                    }
                    return outcome.map_err(Error::protocol);
                }
                Some(Ok(n @ Inbound::Notification { .. })) => {
                    if n.progress_token().as_ref() == Some(id) {
                        if let (
                            Some(cb),
                            Inbound::Notification {
                                params: Some(p), ..
                            },
                        ) = (&opts.on_progress, &n)
                        {
                            if let Ok(p) =
                                serde_json::from_str::<ProgressNotificationParams>(p.get())
                            {
                                cb(&p);
                            }
                        }
                        if reset {
                            deadline = (Instant::now() + timeout).min(hard);
                        }
                    } else {
                        self.on_notification(n);
                    }
                }
                Some(Ok(r @ Inbound::Request { .. })) => self.clone().spawn_server_request(r),
            }
        }
    }

    /// Why the connection was given up for dead, if it was.
    pub(crate) fn lost_reason(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    // LEGACY-06
    /// Starts the keep-alive task when it is configured and the
    /// negotiated era has `ping`. It holds only a weak reference: dropping
    /// the last `Client` stops it.
    fn start_keep_alive(self: &Arc<Self>) {
        let Some(interval) = self.config.limits.keep_alive_interval else {
            return;
        };
        if self.modern() {
            return;
        }
        let timeout = self.config.limits.keep_alive_timeout;
        let weak = Arc::downgrade(self);
        let task = tokio::spawn(async move {
            let mut tick =
                tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                if inner.closed.load(Ordering::Acquire) {
                    return;
                }
                let opts = RequestOptions::new()
                    .timeout(timeout)
                    .max_total_timeout(timeout);
                let answered = match tokio::time::timeout(
                    timeout,
                    inner.request_raw(method::PING, &JsonObject::new(), &opts),
                )
                .await
                {
                    Ok(Ok(_)) => true,
                    // Any JSON-RPC answer proves the peer alive.
                    Ok(Err(e)) => e.is_protocol(),
                    Err(_) => false,
                };
                if !answered {
                    let reason = format!(
                        "connection lost: the server did not answer a keep-alive ping within {timeout:?}"
                    );
                    tracing::warn!(%reason);
                    *inner.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
                    if !inner.closed.swap(true, Ordering::AcqRel) {
                        inner.transport.close().await;
                    }
                    return;
                }
            }
        });
        *self.keep_alive.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(AbortOnDrop(task.abort_handle()));
    }

    // LEGACY-04
    /// Refuses, without sending it, a request for a feature the server's
    /// capabilities do not offer (only negotiated capabilities;
    /// in the modern era the `server/discover` answer). Unknown
    /// capabilities (no discovery made) let everything through.
    fn check_offered(&self, method: &str) -> Result<()> {
        let st = self.state();
        if !st.capabilities_known {
            return Ok(());
        }
        let caps = &st.capabilities;
        let (offered, capability) = match method {
            method::TOOLS_LIST | method::TOOLS_CALL => (caps.tools.is_some(), "tools"),
            method::PROMPTS_LIST | method::PROMPTS_GET => (caps.prompts.is_some(), "prompts"),
            method::RESOURCES_LIST | method::RESOURCES_TEMPLATES_LIST | method::RESOURCES_READ => {
                (caps.resources.is_some(), "resources")
            }
            method::RESOURCES_SUBSCRIBE | method::RESOURCES_UNSUBSCRIBE => (
                caps.resources
                    .as_ref()
                    .is_some_and(|r| r.subscribe == Some(true)),
                "resources.subscribe",
            ),
            method::COMPLETION_COMPLETE => (caps.completions.is_some(), "completions"),
            method::LOGGING_SET_LEVEL => (caps.logging.is_some(), "logging"),
            _ => return Ok(()),
        };
        if offered {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::NotOffered { capability },
                format!(
                    "the server does not offer {capability} (no `{capability}` capability), so {method} was not sent"
                ),
            ))
        }
    }

    // LEGACY-13, VER-03, HDR-21
    /// A request with the protocol-level retries: a new session after 404,
    /// a mutual version after -32022, refreshed
    /// tool headers after an `Mcp-Param` -32020.
    pub(crate) async fn request_raw(
        self: &Arc<Self>,
        method: &str,
        params: &JsonObject,
        opts: &RequestOptions,
    ) -> Result<Box<RawValue>> {
        self.check_offered(method)?;
        let span = crate::trace::request_span(method, params, || self.modern());
        let mut guard = crate::trace::SpanGuard::new(span.clone());
        let result = self
            .request_untraced(method, params, opts, &guard)
            .instrument(span)
            .await;
        guard.finish(&result);
        result
    }

    /// [`Inner::request_raw`] inside its span.
    async fn request_untraced(
        self: &Arc<Self>,
        method: &str,
        params: &JsonObject,
        opts: &RequestOptions,
        guard: &crate::trace::SpanGuard,
    ) -> Result<Box<RawValue>> {
        let (mut session_retry, mut version_retry, mut header_retry) = (false, false, false);
        let (started, mut retries) = (std::time::Instant::now(), 0u32);
        loop {
            let id = self.next_id();
            guard.attempt(&id);
            let err = match self.round(method, params, opts, id, &guard.span).await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            // A connection given up for dead says why, not just "closed".
            if let Some(reason) = self.lost_reason() {
                return Err(Error::new(ErrorKind::Transport { status: None }, reason));
            }
            // The application's retry policy: safe requests only, after a
            // failure that left no answer (see `retry`).
            if let Some(policy) = &self.config.retry {
                let tool = params.get("name").and_then(Value::as_str);
                let transient = matches!(
                    err.kind(),
                    ErrorKind::Transport {
                        status: None | Some(502..=504)
                    }
                );
                if transient
                    && self.is_http()
                    && retries + 1 < policy.attempts()
                    && policy.allows(method, tool)
                {
                    let wait = policy.delay(retries + 1, err.retry_after());
                    if started.elapsed() + wait < policy.budget() {
                        retries += 1;
                        tracing::debug!(%method, retry = retries, ?wait, error = %err, "retrying a safe request");
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                }
            }
            if err.is_session_expired() && !session_retry && method != method::INITIALIZE {
                session_retry = true;
                self.transport.reset_session();
                Box::pin(self.initialize()).await?;
                continue;
            }
            let Some(obj) = err.rpc_error() else {
                return Err(err);
            };
            if self.modern() {
                if obj.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION && !version_retry {
                    let current = self.state().version;
                    let supported = negotiate::supported_versions(obj);
                    if let Some(v) = negotiate::mutual_modern(supported.iter().map(String::as_str))
                    {
                        version_retry = true;
                        if v != current {
                            self.set_state(|s| s.version = v);
                        }
                        continue;
                    }
                }
                if obj.code == ErrorCode::HEADER_MISMATCH
                    && method == method::TOOLS_CALL
                    && !header_retry
                    && self.is_http()
                    && self.param_header_caused(obj, params)
                {
                    header_retry = true;
                    tracing::debug!("Mcp-Param mismatch: refreshing tools/list once (HDR-21)");
                    Box::pin(self.refresh_tool_headers()).await?;
                    continue;
                }
            }
            return Err(err);
        }
    }

    // HDR-21
    /// Whether a -32020 was caused by `Mcp-Param-*`: the server
    /// names such a header, or the tool's schema is unknown here.
    fn param_header_caused(&self, obj: &ErrorObject, params: &JsonObject) -> bool {
        if obj.message.to_ascii_lowercase().contains("mcp-param") {
            return true;
        }
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        !self
            .tool_headers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(name)
    }

    async fn refresh_tool_headers(self: &Arc<Self>) -> Result<()> {
        let mut cursor: Option<String> = None;
        for _ in 0..self.config.limits.max_list_pages {
            let mut p = JsonObject::new();
            if let Some(c) = &cursor {
                p.insert("cursor".into(), Value::String(c.clone()));
            }
            let raw = self
                .request_raw(method::TOOLS_LIST, &p, &RequestOptions::default())
                .await?;
            let page: ListToolsResult = decode(&raw, "tools/list")?;
            self.cache_put(method::TOOLS_LIST, &p, &raw);
            let _ = self.filter_tools(page.tools);
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(()),
            }
        }
        Ok(())
    }

    // HDR-14
    /// Records each tool's header map and drops tools with invalid
    /// `x-mcp-header` annotations (HTTP only, modern era).
    pub(crate) fn filter_tools(&self, tools: Vec<Tool>) -> Vec<Tool> {
        let filter = self.is_http() && self.modern();
        let mut map = self.tool_headers.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::with_capacity(tools.len());
        for t in &tools {
            self.output_schemas
                .remember(&t.name, t.output_schema.as_ref());
        }
        for t in tools {
            match x_mcp_header_map(&Value::Object(t.input_schema.clone())) {
                Ok(m) => {
                    map.insert(t.name.clone(), m);
                    out.push(t);
                }
                Err(reason) => {
                    map.remove(&t.name);
                    if filter {
                        tracing::warn!(tool = %t.name, %reason, "leaving out a tool with an invalid x-mcp-header annotation (HDR-14)");
                    } else {
                        out.push(t);
                    }
                }
            }
        }
        out
    }

    fn cache_request<'a>(
        &'a self,
        st: &'a State,
        method: &'a str,
        params: &JsonObject,
    ) -> CacheRequest<'a> {
        CacheRequest {
            server: &self.identity,
            version: st.version.as_str(),
            method,
            params: Value::Object(params.clone()).to_string(),
            uri: params.get("uri").and_then(Value::as_str).map(str::to_owned),
        }
    }

    fn cacheable(&self, method: &str, params: &JsonObject, opts: &RequestOptions) -> bool {
        self.config.cache.is_some()
            && !opts.bypass_cache
            && method::is_cacheable(method)
            && !params.contains_key("inputResponses") // CACHE-06
            && !params.contains_key("requestState")
    }

    fn cache_put(&self, method: &str, params: &JsonObject, raw: &RawValue) {
        let Some(cache) = &self.config.cache else {
            return;
        };
        if params.contains_key("inputResponses") || params.contains_key("requestState") {
            return; // CACHE-06
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Hints {
            result_type: Option<ResultType>,
            ttl_ms: Option<u64>,
            cache_scope: Option<CacheScope>,
        }
        let Ok(h) = serde_json::from_str::<Hints>(raw.get()) else {
            return;
        };
        if matches!(
            h.result_type,
            Some(ResultType::InputRequired | ResultType::Other(_))
        ) {
            return; // MRTR-12
        }
        let st = self.state();
        let req = self.cache_request(&st, method, params);
        cache.put(&req, &self.partition(), raw, h.ttl_ms, h.cache_scope);
    }

    // CACHE-08
    /// The partition for `"private"` cache entries: the one the
    /// authorization hook derives from its current credentials, else the
    /// configured one.
    fn partition(&self) -> String {
        self.transport
            .auth_partition()
            .map(|p| format!("auth:{p}"))
            .unwrap_or_else(|| self.config.partition.clone())
    }

    // CACHE-05…CACHE-08
    /// A request through the cache.
    pub(crate) async fn request_cached(
        self: &Arc<Self>,
        method: &str,
        params: &JsonObject,
        opts: &RequestOptions,
    ) -> Result<Box<RawValue>> {
        let cacheable = self.cacheable(method, params, opts);
        if cacheable {
            if let Some(cache) = &self.config.cache {
                let st = self.state();
                if let Some(hit) =
                    cache.get(&self.cache_request(&st, method, params), &self.partition())
                {
                    return Ok(hit);
                }
            }
        }
        let raw = match self.request_raw(method, params, opts).await {
            Ok(r) => r,
            Err(e) => {
                // CACHE-11: an invalid cursor drops every page of that list.
                if params.contains_key("cursor")
                    && e.rpc_error()
                        .is_some_and(|o| o.code == ErrorCode::INVALID_PARAMS)
                {
                    if let Some(cache) = &self.config.cache {
                        cache.invalidate_methods(&self.identity, &[method]);
                    }
                }
                return Err(e);
            }
        };
        if cacheable {
            self.cache_put(method, params, &raw);
        }
        Ok(raw)
    }

    // CACHE-10
    /// Applies a notification's side effects and hands it to the
    /// user's callback.
    fn on_notification(&self, n: Inbound) {
        let Inbound::Notification { method, params } = n else {
            return;
        };
        let params: Option<Value> = params.and_then(|p| serde_json::from_str(p.get()).ok());
        self.invalidate_for(&method, params.as_ref());
        if method == method::NOTIFICATIONS_MESSAGE {
            tracing::debug!(?params, "server log message");
        }
        if let Some(cb) = &self.config.on_notice {
            cb(&Notice { method, params });
        }
    }

    // CACHE-10
    /// Drops cache entries a change notification makes stale.
    pub(crate) fn invalidate_for(&self, method: &str, params: Option<&Value>) {
        let Some(cache) = &self.config.cache else {
            return;
        };
        let id = &self.identity;
        match method {
            method::NOTIFICATIONS_TOOLS_LIST_CHANGED => {
                cache.invalidate_methods(id, &[method::TOOLS_LIST])
            }
            method::NOTIFICATIONS_PROMPTS_LIST_CHANGED => {
                cache.invalidate_methods(id, &[method::PROMPTS_LIST])
            }
            method::NOTIFICATIONS_RESOURCES_LIST_CHANGED => cache.invalidate_methods(
                id,
                &[method::RESOURCES_LIST, method::RESOURCES_TEMPLATES_LIST],
            ),
            method::NOTIFICATIONS_RESOURCES_UPDATED => {
                if let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str) {
                    cache.invalidate_resource(id, uri);
                }
            }
            _ => {}
        }
    }

    // LEGACY-18, MRTR-15
    /// Answers a handshake-era server request with the user's handlers,
    /// concurrently with everything else, at most
    /// [`crate::Limits::max_concurrent_server_requests`] at a time: a request
    /// arriving while all are busy is dropped (a flooding server must not
    /// make the client run unbounded handlers or queue unbounded answers).
    fn spawn_server_request(self: Arc<Self>, r: Inbound) {
        let Ok(permit) = self.server_requests.clone().try_acquire_owned() else {
            if let Inbound::Request { id, method, .. } = &r {
                tracing::warn!(%id, %method, "dropping a server request: too many being handled");
            }
            return;
        };
        tokio::spawn(async move {
            let _permit = permit; // held until the answer is sent
            let Inbound::Request { id, method, params } = r else {
                return;
            };
            let outcome: std::result::Result<Value, ErrorObject> =
                match ServerRequest::decode(&method, params.as_deref()) {
                    Err(e) => Err(e),
                    Ok(ServerRequest::Ping(_)) => Ok(json!({})),
                    Ok(ServerRequest::Custom { method, .. }) => {
                        Err(ErrorObject::method_not_found(method))
                    }
                    Ok(req) => {
                        let input = match req {
                            ServerRequest::CreateMessage(p) => InputRequest::Sampling(p),
                            ServerRequest::Elicit(p) => InputRequest::Elicitation(p),
                            _ => InputRequest::ListRoots(None),
                        };
                        self.config.handlers.fulfil(input).await.map_err(|e| {
                            // No handler installed: the method is not
                            // implemented here, which -32601 says.
                            let code = if matches!(e.kind(), ErrorKind::Unsupported) {
                                ErrorCode::METHOD_NOT_FOUND
                            } else {
                                ErrorCode::INTERNAL_ERROR
                            };
                            ErrorObject::new(code, e.to_string())
                        })
                    }
                };
            let body = match &outcome {
                Ok(v) => jsonrpc::to_vec(&OutgoingResult::new(&id, v)),
                Err(e) => jsonrpc::to_vec(&OutgoingError::new(Some(&id), e)),
            };
            let st = self.state();
            let headers = self.headers(&st, "", &JsonObject::new(), false);
            let out = Outbound {
                id: None,
                body,
                headers,
                cancellable: false,
                resumable: false,
            };
            if let Err(e) = self.transport.send(out).await {
                tracing::warn!(error = %e, %method, "could not answer a server request");
            }
        });
    }

    /// Sends a notification (handshake era).
    async fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        let st = self.state();
        let body = jsonrpc::to_vec(&OutgoingNotification::new(method, params.as_ref()));
        let headers = self.headers(&st, method, &JsonObject::new(), false);
        self.transport
            .send(Outbound {
                id: None,
                body,
                headers,
                cancellable: false,
                resumable: false,
            })
            .await
    }

    // LEGACY-01…LEGACY-04
    /// The handshake.
    pub(crate) async fn initialize(self: &Arc<Self>) -> Result<()> {
        // A pinned handshake revision is offered instead of the newest.
        let pinned = self.config.pinned.filter(|v| !v.is_modern());
        let offered = pinned.unwrap_or(ProtocolVersion::LATEST_HANDSHAKE);
        self.set_state(|s| {
            s.era = Era::Handshake;
            s.version = offered;
        });
        let params = InitializeRequestParams {
            protocol_version: offered.as_str().to_owned(),
            capabilities: self.capabilities.clone(),
            client_info: self.config.client_info.clone(),
        };
        let params = to_object(&params)?;
        let opts = RequestOptions::default().timeout(self.config.limits.request_timeout);
        let raw = self.request_raw(method::INITIALIZE, &params, &opts).await?;
        let result: InitializeResult = decode(&raw, "initialize")?;
        let version = ProtocolVersion::parse(&result.protocol_version)
            .filter(|v| !v.is_modern())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Negotiation,
                    format!(
                        "the server chose protocol version {:?}, which this client does not speak",
                        result.protocol_version
                    ),
                )
            })?;
        if pinned.is_some_and(|p| p != version) {
            return Err(Error::new(
                ErrorKind::Negotiation,
                format!("the server chose protocol version {version}, but {offered} is pinned"),
            ));
        }
        self.set_state(|s| {
            s.version = version;
            s.capabilities = result.capabilities;
            s.capabilities_known = true;
            s.server_info = Some(result.server_info);
            s.instructions = result.instructions;
        });
        self.notify(method::NOTIFICATIONS_INITIALIZED, None).await?;
        let st = self.state();
        self.transport
            .session_started(self.headers(&st, "", &JsonObject::new(), false));
        Ok(())
    }

    /// The `server/discover` probe and its one re-probe.
    async fn probe(self: &Arc<Self>) -> Result<ProbeVerdict> {
        let mut version = self
            .config
            .pinned
            .filter(|v| v.is_modern())
            .unwrap_or(ProtocolVersion::LATEST);
        let mut retried = false;
        loop {
            self.set_state(|s| {
                s.era = Era::Modern;
                s.version = version;
            });
            let mut opts = RequestOptions::default().bypass_cache();
            if matches!(
                self.transport.kind(),
                TransportKind::Stdio | TransportKind::Io
            ) {
                opts = opts.timeout(self.config.limits.probe_timeout); // ERA-06
            }
            let id = self.next_id();
            let outcome = self
                .round(
                    method::SERVER_DISCOVER,
                    &JsonObject::new(),
                    &opts,
                    id,
                    &tracing::Span::none(),
                )
                .await;
            match negotiate::judge_probe(outcome, version, retried) {
                ProbeVerdict::RetryAt(v) => {
                    version = v;
                    retried = true;
                }
                v => return Ok(v),
            }
        }
    }

    // ERA-06…ERA-10
    /// Negotiates the era per the caller's preference.
    pub(crate) async fn negotiate(self: &Arc<Self>) -> Result<()> {
        let era = match self.config.pinned {
            Some(v) if !v.is_modern() => return self.initialize().await,
            Some(_) => EraPreference::Modern,
            None => self.config.era,
        };
        match era {
            EraPreference::Handshake => return self.initialize().await,
            EraPreference::ModernNoProbe => {
                self.set_state(|s| {
                    s.era = Era::Modern;
                    s.version = ProtocolVersion::LATEST;
                });
                return Ok(());
            }
            EraPreference::Auto | EraPreference::Modern => {}
        }
        // VER-05: an HTTP endpoint known to be handshake-era skips the
        // probe; if that assumption fails, forget it and probe (ERA-11:
        // never for stdio, each process is probed anew).
        let memo = self.is_http() && era == EraPreference::Auto;
        if memo && handshake_memo(|m| m.contains(&self.identity)) {
            match self.initialize().await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    tracing::debug!(error = %e, "the remembered handshake verdict failed; probing again");
                    handshake_memo(|m| m.remove(&self.identity));
                    self.transport.reset_session();
                }
            }
        }
        let verdict = self.probe().await?;
        if memo {
            let handshake = matches!(verdict, ProbeVerdict::Handshake);
            handshake_memo(|m| {
                if handshake {
                    m.insert(self.identity.clone())
                } else {
                    m.remove(&self.identity)
                }
            });
        }
        match verdict {
            ProbeVerdict::Modern { version, .. }
                if self.config.pinned.is_some_and(|p| p != version) =>
            {
                Err(Error::new(
                    ErrorKind::Negotiation,
                    format!("the server speaks {version}, but another revision is pinned"),
                ))
            }
            ProbeVerdict::Modern { version, discover } => {
                self.set_state(|s| {
                    s.era = Era::Modern;
                    s.version = version;
                    s.capabilities = discover.capabilities.clone();
                    s.capabilities_known = true;
                    s.instructions = discover.instructions.clone();
                    s.server_info = discover
                        .meta
                        .as_ref()
                        .and_then(|m| m.get(ferromcp_protocol::meta::SERVER_INFO))
                        .and_then(|v| serde_json::from_value(v.clone()).ok());
                });
                Ok(())
            }
            ProbeVerdict::Fatal(e) => Err(e),
            ProbeVerdict::Handshake | ProbeVerdict::RetryAt(_) => {
                if era == EraPreference::Modern {
                    return Err(Error::new(
                        ErrorKind::Negotiation,
                        "the server does not speak the modern protocol (2026-07-28)",
                    ));
                }
                let err = match self.initialize().await {
                    Ok(()) => return Ok(()),
                    Err(e) => e,
                };
                // VER-06: a modern-only server without a usable discover
                // answers initialize with -32022 naming its versions.
                let modern = err
                    .rpc_error()
                    .filter(|o| o.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION)
                    .and_then(|o| {
                        let supported = negotiate::supported_versions(o);
                        negotiate::mutual_modern(supported.iter().map(String::as_str))
                    });
                match modern {
                    Some(v) => {
                        self.set_state(|s| {
                            s.era = Era::Modern;
                            s.version = v;
                        });
                        Ok(())
                    }
                    None => Err(err),
                }
            }
        }
    }

    fn start_pump(self: &Arc<Self>) {
        let Some(mut rx) = self.transport.take_unsolicited() else {
            return;
        };
        let weak: Weak<Inner> = Arc::downgrade(self);
        let task = tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                let Some(inner) = weak.upgrade() else { return };
                match msg {
                    n @ Inbound::Notification { .. } => inner.on_notification(n),
                    r @ Inbound::Request { .. } => inner.spawn_server_request(r),
                    Inbound::Response { id, .. } => {
                        tracing::debug!(?id, "ignoring an unsolicited response");
                    }
                }
            }
        });
        *self.pump.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(AbortOnDrop(task.abort_handle()));
    }
}

impl Client {
    /// A client over `transport`, before negotiation.
    pub(crate) fn from_transport(transport: Arc<dyn Transport>, config: Config) -> Self {
        let mut capabilities = config.handlers.capabilities();
        let extra = &config.extra_capabilities;
        capabilities.experimental = extra.experimental.clone();
        capabilities.extensions = extra.extensions.clone();
        let identity = transport.identity();
        let inner = Arc::new(Inner {
            transport,
            capabilities,
            state: RwLock::new(State {
                era: Era::Modern,
                version: ProtocolVersion::LATEST,
                capabilities: ServerCapabilities::default(),
                capabilities_known: false,
                server_info: None,
                instructions: None,
            }),
            next_id: AtomicI64::new(1),
            tool_headers: Mutex::new(HashMap::new()),
            output_schemas: crate::output::OutputSchemas::default(),
            pump: Mutex::new(None),
            keep_alive: Mutex::new(None),
            lost: Mutex::new(None),
            closed: AtomicBool::new(false),
            identity,
            server_requests: Arc::new(tokio::sync::Semaphore::new(
                config
                    .limits
                    .max_concurrent_server_requests
                    .min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
            config,
        });
        inner.start_pump();
        Client { inner }
    }

    /// Negotiates; on failure the transport is closed.
    pub(crate) async fn start(self) -> Result<Self> {
        match self.inner.negotiate().await {
            Ok(()) => {
                self.inner.start_keep_alive();
                Ok(self)
            }
            Err(e) => {
                self.close().await;
                Err(e)
            }
        }
    }

    /// The negotiated era.
    pub fn era(&self) -> Era {
        self.inner.state().era
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.state().version
    }

    /// The server's capabilities (from `server/discover` or `initialize`).
    pub fn server_capabilities(&self) -> ServerCapabilities {
        self.inner.state().capabilities
    }

    /// The server's self-description, when it sent one.
    pub fn server_info(&self) -> Option<Implementation> {
        self.inner.state().server_info
    }

    /// The server's instructions, when it sent some.
    pub fn instructions(&self) -> Option<String> {
        self.inner.state().instructions
    }

    /// The kind of transport in use.
    pub fn transport_kind(&self) -> TransportKind {
        self.inner.transport.kind()
    }

    /// The capabilities this client declares.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// Sends any request and returns its raw result (custom methods;
    /// protocol retries apply, MRTR does not).
    pub async fn request(
        &self,
        method: &str,
        params: Option<JsonObject>,
        opts: RequestOptions,
    ) -> Result<Value> {
        let raw = self
            .inner
            .request_cached(method, &params.unwrap_or_default(), &opts)
            .await?;
        decode(&raw, method)
    }

    /// `server/discover` (modern era; cached per its hints).
    pub async fn discover(&self) -> Result<DiscoverResult> {
        self.require_modern("server/discover")?;
        let raw = self
            .inner
            .request_cached(
                method::SERVER_DISCOVER,
                &JsonObject::new(),
                &RequestOptions::default(),
            )
            .await?;
        decode(&raw, "server/discover")
    }

    pub(crate) fn require_modern(&self, what: &str) -> Result<()> {
        if self.inner.modern() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Unsupported,
                format!("{what} exists only in the modern era (2026-07-28)"),
            ))
        }
    }

    pub(crate) fn require_handshake(&self, what: &str) -> Result<()> {
        if self.inner.modern() {
            Err(Error::new(
                ErrorKind::Unsupported,
                format!("{what} exists only in the handshake era"),
            ))
        } else {
            Ok(())
        }
    }

    // PAGE-04, PAGE-02
    /// Follows `nextCursor` to the end, bounded by
    /// [`crate::Limits::max_list_pages`] (a server repeating a cursor must
    /// not loop the client forever; the specification allows any string, even "").
    async fn all_pages<T, Fut>(&self, mut page: impl FnMut(Option<String>) -> Fut) -> Result<Vec<T>>
    where
        Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>)>>,
    {
        let max = self.inner.config.limits.max_list_pages;
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..max {
            let (items, next) = page(cursor).await?;
            all.extend(items);
            match next {
                Some(c) => cursor = Some(c),
                None => return Ok(all),
            }
        }
        Err(Error::invalid(format!(
            "the list did not end within {max} pages"
        )))
    }

    async fn page<T: DeserializeOwned>(
        &self,
        method: &str,
        cursor: Option<String>,
        opts: &RequestOptions,
    ) -> Result<T> {
        let mut p = JsonObject::new();
        if let Some(c) = cursor {
            p.insert("cursor".into(), Value::String(c)); // PAGE-02: opaque
        }
        let raw = self.inner.request_cached(method, &p, opts).await?;
        decode(&raw, method)
    }

    // HDR-14
    /// One page of `tools/list`; tools with invalid `x-mcp-header`
    /// annotations are left out on HTTP.
    pub async fn list_tools_page(&self, cursor: Option<String>) -> Result<ListToolsResult> {
        let mut page: ListToolsResult = self
            .page(method::TOOLS_LIST, cursor, &RequestOptions::default())
            .await?;
        page.tools = self.inner.filter_tools(std::mem::take(&mut page.tools));
        Ok(page)
    }

    // PAGE-04
    /// Every tool, following `nextCursor`.
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        self.all_pages(|c| async move {
            let p = self.list_tools_page(c).await?;
            Ok((p.tools, p.next_cursor))
        })
        .await
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts_page(&self, cursor: Option<String>) -> Result<ListPromptsResult> {
        self.page(method::PROMPTS_LIST, cursor, &RequestOptions::default())
            .await
    }

    /// Every prompt.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        self.all_pages(|c| async move {
            let p = self.list_prompts_page(c).await?;
            Ok((p.prompts, p.next_cursor))
        })
        .await
    }

    /// One page of `resources/list`.
    pub async fn list_resources_page(&self, cursor: Option<String>) -> Result<ListResourcesResult> {
        self.page(method::RESOURCES_LIST, cursor, &RequestOptions::default())
            .await
    }

    /// Every resource.
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        self.all_pages(|c| async move {
            let p = self.list_resources_page(c).await?;
            Ok((p.resources, p.next_cursor))
        })
        .await
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult> {
        self.page(
            method::RESOURCES_TEMPLATES_LIST,
            cursor,
            &RequestOptions::default(),
        )
        .await
    }

    /// Every resource template.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.all_pages(|c| async move {
            let p = self.list_resource_templates_page(c).await?;
            Ok((p.resource_templates, p.next_cursor))
        })
        .await
    }

    /// `tools/call`, with MRTR rounds fulfilled by the handlers.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult> {
        self.call_tool_with(
            CallToolRequestParams::new(name, arguments),
            RequestOptions::default(),
        )
        .await
    }

    /// `tools/call` with explicit params and options.
    pub async fn call_tool_with(
        &self,
        params: CallToolRequestParams,
        opts: RequestOptions,
    ) -> Result<CallToolResult> {
        let name = params.name.clone();
        let r: CallToolResult =
            crate::mrtr::drive(self, method::TOOLS_CALL, to_object(&params)?, &opts).await?;
        if self.inner.config.validate_output {
            self.inner.output_schemas.check(&name, &r)?;
        }
        Ok(r)
    }

    /// `prompts/get`, with MRTR.
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        opts: RequestOptions,
    ) -> Result<GetPromptResult> {
        crate::mrtr::drive(self, method::PROMPTS_GET, to_object(&params)?, &opts).await
    }

    /// `resources/read`, with MRTR; complete first-round results are cached.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        let params = to_object(&ReadResourceRequestParams::new(uri))?;
        crate::mrtr::drive(
            self,
            method::RESOURCES_READ,
            params,
            &RequestOptions::default(),
        )
        .await
    }

    /// `completion/complete`.
    pub async fn complete(&self, params: CompleteRequestParams) -> Result<CompleteResult> {
        let raw = self
            .inner
            .request_cached(
                method::COMPLETION_COMPLETE,
                &to_object(&params)?,
                &RequestOptions::default(),
            )
            .await?;
        decode(&raw, "completion/complete")
    }

    /// One round of an MRTR-capable request (`tools/call`, `prompts/get`,
    /// `resources/read`), for callers driving input requests themselves:
    /// fill `inputResponses`/`requestState` in `params` from the previous
    /// round.
    pub async fn request_round<T: DeserializeOwned>(
        &self,
        method: &str,
        params: JsonObject,
        opts: RequestOptions,
    ) -> Result<MaybeInputRequired<T>> {
        let raw = self.inner.request_cached(method, &params, &opts).await?;
        crate::mrtr::classify(method, &raw)
    }

    /// Answers input requests with the installed handlers, concurrently.
    pub async fn fulfil(&self, requests: &InputRequests) -> Result<InputResponses> {
        crate::mrtr::fulfil(&self.inner.config.handlers, requests).await
    }

    /// `subscriptions/listen` (modern): returns once the server acknowledged.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription> {
        self.require_modern("subscriptions/listen")?; // SUB-14
        Subscription::open(self.inner.clone(), filter).await
    }

    // SUB-11
    /// `subscriptions/listen` that survives the loss of its stream: when the
    /// stream breaks (or the server ends it, e.g. draining for a restart
    /// behind a load balancer), it listens again with `policy`'s backoff
    /// and yields [`crate::SubscriptionEvent::Relistened`], telling the
    /// application to refetch. Opt-in; [`Client::listen`] keeps
    /// ending at the first loss.
    pub async fn listen_resilient(
        &self,
        filter: SubscriptionFilter,
        policy: crate::RetryPolicy,
    ) -> Result<crate::ResilientSubscription> {
        self.require_modern("subscriptions/listen")?; // SUB-14
        crate::subscription::ResilientSubscription::open(self.inner.clone(), filter, policy).await
    }

    /// `resources/subscribe` (handshake era; updates arrive as [`Notice`]s).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<()> {
        self.require_handshake("resources/subscribe")?;
        let p = to_object(&SubscribeRequestParams {
            uri: uri.to_owned(),
        })?;
        self.inner
            .request_raw(method::RESOURCES_SUBSCRIBE, &p, &RequestOptions::default())
            .await
            .map(drop)
    }

    /// `resources/unsubscribe` (handshake era).
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<()> {
        self.require_handshake("resources/unsubscribe")?;
        let p = to_object(&UnsubscribeRequestParams {
            uri: uri.to_owned(),
        })?;
        self.inner
            .request_raw(
                method::RESOURCES_UNSUBSCRIBE,
                &p,
                &RequestOptions::default(),
            )
            .await
            .map(drop)
    }

    /// `ping` (handshake era).
    pub async fn ping(&self) -> Result<()> {
        self.require_handshake("ping")?;
        self.inner
            .request_raw(method::PING, &JsonObject::new(), &RequestOptions::default())
            .await
            .map(drop)
    }

    /// `logging/setLevel` (handshake era; modern requests use the builder's
    /// log level instead).
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<()> {
        self.require_handshake("logging/setLevel")?;
        let p = to_object(&SetLevelRequestParams { level })?;
        self.inner
            .request_raw(method::LOGGING_SET_LEVEL, &p, &RequestOptions::default())
            .await
            .map(drop)
    }

    /// Closes the connection: DELETE the session (HTTP), stop the child
    /// (stdio). Pending requests fail.
    pub async fn close(&self) {
        self.close_inner(None).await;
    }

    /// Closes like [`Self::close`], but a stdio child gets at most `grace`
    /// at each step (stdin closed, then SIGTERM, then SIGKILL) instead of
    /// [`crate::Limits::shutdown_grace`]: for when the application already
    /// cancelled what the server was doing (after Ctrl-C) and waiting the
    /// full grace for a busy server helps nobody.
    pub async fn close_within(&self, grace: std::time::Duration) {
        self.close_inner(Some(grace)).await;
    }

    /// Why the connection was given up for dead, when the keep-alive
    /// ([`crate::ClientBuilder::keep_alive`]) found the server gone; every
    /// request fails after that.
    pub fn lost_reason(&self) -> Option<String> {
        self.inner.lost_reason()
    }

    /// Whether the client is closed (by [`Self::close`] or because the
    /// connection was lost).
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    async fn close_inner(&self, grace: Option<std::time::Duration>) {
        self.inner
            .keep_alive
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        match grace {
            Some(g) => self.inner.transport.close_within(g).await,
            None => self.inner.transport.close().await,
        }
        self.inner
            .pump
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }
}
