//! The request path: the `_meta` envelope, the HTTP headers, timeouts and
//! progress, the protocol-level retries and the response cache.

use super::{Inner, State, decode};
use crate::cache::CacheRequest;
use crate::error::{Error, ErrorKind, Result};
use crate::message::Inbound;
use crate::negotiate;
use crate::options::RequestOptions;
use crate::transport::Outbound;
use ferromcp_protocol::header::codec::encode_header_value;
use ferromcp_protocol::header::x_mcp_header::x_mcp_header_map;
use ferromcp_protocol::header::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, name_bearing_param};
use ferromcp_protocol::jsonrpc::{self, OutgoingRequest};
use ferromcp_protocol::meta::RequestMeta;
use ferromcp_protocol::method;
use ferromcp_protocol::types::*;
use ferromcp_protocol::{Era, ErrorCode, ErrorObject, ProtocolVersion, RequestId};
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use tracing::Instrument;

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

impl Inner {
    // META-03, META-04, META-05
    /// The envelope for a modern request.
    pub(crate) fn envelope(&self, version: ProtocolVersion) -> RequestMeta {
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
    pub(crate) fn headers(
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
    pub(crate) async fn round(
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

    pub(crate) async fn await_response(
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

    // LEGACY-04
    /// Refuses, without sending it, a request for a feature the server's
    /// capabilities do not offer (only negotiated capabilities;
    /// in the modern era the `server/discover` answer). Unknown
    /// capabilities (no discovery made) let everything through.
    pub(crate) fn check_offered(&self, method: &str) -> Result<()> {
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
    pub(crate) async fn request_untraced(
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
    pub(crate) fn param_header_caused(&self, obj: &ErrorObject, params: &JsonObject) -> bool {
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

    pub(crate) async fn refresh_tool_headers(self: &Arc<Self>) -> Result<()> {
        let mut cursor: Option<String> = None;
        for _ in 0..self.config.limits.max_list_pages {
            let mut p = JsonObject::new();
            if let Some(c) = &cursor {
                p.insert("cursor".into(), Value::String(c.clone()));
            }
            let raw = super::ttl::zero_unusable_ttl(
                self.request_raw(method::TOOLS_LIST, &p, &RequestOptions::default())
                    .await?,
            );
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

    pub(crate) fn cache_request<'a>(
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

    pub(crate) fn cacheable(
        &self,
        method: &str,
        params: &JsonObject,
        opts: &RequestOptions,
    ) -> bool {
        self.config.cache.is_some()
            && !opts.bypass_cache
            && method::is_cacheable(method)
            && !params.contains_key("inputResponses") // CACHE-06
            && !params.contains_key("requestState")
    }

    pub(crate) fn cache_put(&self, method: &str, params: &JsonObject, raw: &RawValue) {
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
    pub(crate) fn partition(&self) -> String {
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
        // CACHE-07: read before both the cache and the typed decode.
        let raw = if method::is_cacheable(method) {
            super::ttl::zero_unusable_ttl(raw)
        } else {
            raw
        };
        if cacheable {
            self.cache_put(method, params, &raw);
        }
        Ok(raw)
    }
}
