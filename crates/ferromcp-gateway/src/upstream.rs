//! One upstream server: its client connection (a ferromcp `Client` over
//! stdio or Streamable HTTP, either era), its lists, and every request
//! sent to it bounded by its `timeoutMs`.
//!
//! The connection carries only what the upstream's configuration names:
//! its command, environment and working directory, or its URL and
//! `headers`. Nothing of the gateway's own clients' requests (headers,
//! tokens, session ids) is ever copied into it; the handlers only pass
//! the method's own parameters.

use crate::breaker::Breaker;
use crate::config::{Transport, UpstreamConfig};
use crate::credentials::UpstreamAuth;
use crate::refresh::{ListHints, Refresh};
use ferromcp_client::{Client, ClientBuilder, RequestOptions, StdioCommand};
use ferromcp_protocol::types::{
    InputRequest, JsonObject, Prompt, Resource, ResourceTemplate, Tool,
};
use ferromcp_server::RequestContext;
use serde_json::Value;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::Notify;

/// What an upstream offers, as it listed it.
#[derive(Debug, Default, Clone)]
pub(crate) struct Snapshot {
    pub(crate) tools: Vec<Tool>,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    /// The hints of every page listed.
    pub(crate) hints: ListHints,
}

impl Snapshot {
    /// A digest of what it lists (not of its hints): a re-list that finds
    /// the same changes nothing.
    pub(crate) fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for part in [
            serde_json::to_string(&self.tools),
            serde_json::to_string(&self.prompts),
            serde_json::to_string(&self.resources),
            serde_json::to_string(&self.templates),
        ] {
            part.unwrap_or_default().hash(&mut h);
        }
        h.finish()
    }
}

/// The most pages one list may have.
const MAX_PAGES: usize = 1000;

pub(crate) use crate::failure::Failure;

/// One configured upstream and its current connection.
pub(crate) struct Upstream {
    pub(crate) cfg: UpstreamConfig,
    client: RwLock<Option<Client>>,
    /// Woken when a request saw the connection broken, or the upstream
    /// said one of its lists changed.
    pub(crate) wake: Arc<Notify>,
    /// Set with `wake` when a list changed (a re-list, not a health check).
    pub(crate) relist: Arc<std::sync::atomic::AtomicBool>,
    /// Called with the URI of each `notifications/resources/updated`.
    pub(crate) updated: Arc<dyn Fn(&str) + Send + Sync>,
    /// The resource URIs of the last listing (subscribed to at the
    /// upstream when it supports subscriptions).
    pub(crate) uris: std::sync::Mutex<Vec<String>>,
    /// Told when `uris` changed: a 2026-07-28 upstream's listen stream is
    /// opened again with the new resources in its filter.
    pub(crate) uris_changed: Notify,
    /// Makes the authorization hook of a `login`/`clientCredentials`
    /// upstream.
    auth_provider: Option<crate::AuthProvider>,
    /// That hook, made at the first connection and kept (its tokens with
    /// it) across reconnections.
    auth: std::sync::OnceLock<Arc<dyn ferromcp_client::HttpAuth>>,
    /// Stops requests to it after failures in a row (`breaker`).
    breaker: Breaker,
    /// When it is listed again because its lists' `ttlMs` ran out.
    pub(crate) refresh: Refresh,
    /// The [`Snapshot::fingerprint`] of what the catalogue holds of it.
    pub(crate) listed: std::sync::atomic::AtomicU64,
    /// Where its tool calls and dropped notifications are counted.
    pub(crate) metrics: Arc<crate::metrics::Metrics>,
    /// Where dropped notifications are reported.
    report: crate::Report,
    /// Its notification rate limit.
    flood: Arc<crate::flood::Bucket>,
    /// The limits of relaying its input requests (`gateway.relay`).
    relay: crate::relay_config::RelayConfig,
    /// Its calls in flight, for relaying its server requests.
    live: Arc<crate::pushed::Live>,
}

impl Upstream {
    pub(crate) fn new(cfg: UpstreamConfig, updated: Arc<dyn Fn(&str) + Send + Sync>) -> Arc<Self> {
        Arc::new(Self {
            breaker: Breaker::new(cfg.breaker()),
            updated,
            uris: std::sync::Mutex::new(Vec::new()),
            uris_changed: Notify::new(),
            client: RwLock::new(None),
            wake: Arc::new(Notify::new()),
            relist: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            auth_provider: None,
            auth: std::sync::OnceLock::new(),
            refresh: Refresh::new(crate::cache::DEFAULT_MIN_REFRESH),
            listed: std::sync::atomic::AtomicU64::new(0),
            metrics: Arc::default(),
            report: Arc::new(|m| tracing::warn!("{m}")),
            flood: Arc::new(crate::flood::Bucket::new(cfg.notification_rate())),
            relay: crate::relay_config::RelayConfig::default(),
            live: Arc::default(),
            cfg,
        })
    }

    /// Sets the shortest wait before a timed re-list (before it is shared).
    pub(crate) fn with_min_refresh(mut self: Arc<Self>, min: Duration) -> Arc<Self> {
        if let Some(me) = Arc::get_mut(&mut self) {
            me.refresh = Refresh::new(min);
        }
        self
    }

    /// Sets where its tool calls are counted and its problems reported
    /// (before it is shared).
    pub(crate) fn with_observers(
        mut self: Arc<Self>,
        m: Arc<crate::metrics::Metrics>,
        report: crate::Report,
    ) -> Arc<Self> {
        if let Some(me) = Arc::get_mut(&mut self) {
            me.metrics = m;
            me.report = report;
        }
        self
    }

    /// Sets the limits of relaying its input requests (before it is
    /// shared).
    pub(crate) fn with_relay(
        mut self: Arc<Self>,
        relay: crate::relay_config::RelayConfig,
    ) -> Arc<Self> {
        if let Some(me) = Arc::get_mut(&mut self) {
            me.relay = relay;
        }
        self
    }

    /// Its calls in flight, for relaying its server requests.
    pub(crate) fn live(&self) -> &Arc<crate::pushed::Live> {
        &self.live
    }

    /// The limits of relaying its input requests.
    pub(crate) fn relay(&self) -> crate::relay_config::RelayConfig {
        self.relay
    }

    /// Its breaker's state as a gauge (0 closed, 1 open, 2 trial).
    pub(crate) fn breaker_gauge(&self) -> u8 {
        self.breaker.gauge()
    }

    /// Sets the provider of its authorization hook (before it is shared).
    pub(crate) fn with_auth(
        mut self: Arc<Self>,
        provider: Option<crate::AuthProvider>,
    ) -> Arc<Self> {
        if let Some(me) = Arc::get_mut(&mut self) {
            me.auth_provider = provider;
        }
        self
    }

    /// The authorization hook of a `login`/`clientCredentials` upstream.
    fn http_auth(&self) -> Result<Arc<dyn ferromcp_client::HttpAuth>, Failure> {
        if let Some(a) = self.auth.get() {
            return Ok(a.clone());
        }
        let Some(p) = &self.auth_provider else {
            return Err(Failure::Other(format!(
                "mcpServers.{}.auth needs an OAuth client, which this gateway was built without",
                self.name()
            )));
        };
        let a = p(&self.cfg).map_err(Failure::Other)?;
        Ok(self.auth.get_or_init(|| a).clone())
    }

    pub(crate) fn name(&self) -> &str {
        self.cfg.name()
    }

    pub(crate) fn current(&self) -> Option<Client> {
        self.client
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn set(&self, c: Option<Client>) {
        if c.is_some() {
            // A new connection is tried whatever the old one did.
            self.breaker.reset();
        }
        *self.client.write().unwrap_or_else(|p| p.into_inner()) = c;
    }

    /// Connects (bounded by the upstream's timeout) and negotiates.
    pub(crate) async fn connect(&self) -> Result<Client, Failure> {
        let wake = self.wake.clone();
        let relist = self.relist.clone();
        let updated = self.updated.clone();
        let flood = self.flood_gate();
        let b = ClientBuilder::new("mcp-gateway", env!("CARGO_PKG_VERSION"))
            .validate_output(false)
            // The gateway keeps what it lists in its catalogue and caches
            // reads itself, per caller (read_cache.rs); a client cache
            // would share private reads between callers and hide expiry.
            .cache(None)
            .request_timeout(self.cfg.timeout())
            .max_total_timeout(self.cfg.timeout())
            // Declares elicitation (form and URL), sampling and roots: the
            // gateway relays them to the client that made the call when
            // that client declared them (relay.rs).
            .on_elicitation_modes(true, true, {
                let (live, t) = (self.live.clone(), self.cfg.timeout());
                move |p| relayed(live.clone(), t, InputRequest::Elicitation(p))
            })
            .on_sampling({
                let (live, t) = (self.live.clone(), self.cfg.timeout());
                move |p| relayed(live.clone(), t, InputRequest::Sampling(p))
            })
            .on_roots({
                let (live, t) = (self.live.clone(), self.cfg.timeout());
                move || relayed(live.clone(), t, InputRequest::ListRoots(None))
            })
            .on_notification(move |n| {
                // Over its rate: dropped before any work is done for it.
                if !flood.admit(&n.method) {
                    return;
                }
                if n.method == "notifications/resources/updated" {
                    if let Some(uri) = n
                        .params
                        .as_ref()
                        .and_then(|p| p.get("uri"))
                        .and_then(Value::as_str)
                    {
                        updated(uri);
                    }
                } else if n.method.ends_with("/list_changed") {
                    relist.store(true, std::sync::atomic::Ordering::Release);
                    wake.notify_one();
                }
            });
        let fut = async {
            match self.cfg.transport() {
                Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let mut cmd = StdioCommand::new(command, args);
                    cmd.env = env.iter().map(|(k, v)| (k.into(), v.into())).collect();
                    cmd.cwd.clone_from(cwd);
                    b.connect_command(cmd).await.map_err(failure)
                }
                Transport::Http { url, headers } => {
                    let mut b = b;
                    for (k, v) in headers {
                        b = b.header(k, v);
                    }
                    // AUTH-20: only this upstream's own credential.
                    match self.cfg.auth() {
                        None => {}
                        Some(UpstreamAuth::Bearer { token, .. }) => b = b.bearer_token(token),
                        Some(
                            UpstreamAuth::Login
                            | UpstreamAuth::ClientCredentials { .. }
                            | UpstreamAuth::ClientKey { .. },
                        ) => {
                            b = b.http_auth(self.http_auth()?);
                        }
                    }
                    b.connect_url(url).await.map_err(failure)
                }
            }
        };
        match tokio::time::timeout(self.cfg.timeout(), fut).await {
            Ok(r) => r,
            Err(_) => Err(Failure::Timeout),
        }
    }

    /// Its notification gate: admits a notification, or drops, counts and
    /// (at most every few seconds) reports it.
    pub(crate) fn flood_gate(&self) -> FloodGate {
        FloodGate {
            bucket: self.flood.clone(),
            metrics: self.metrics.clone(),
            report: self.report.clone(),
            name: self.name().to_owned(),
            rate: self.cfg.notification_rate(),
        }
    }

    /// Every tool, prompt, resource and template the upstream lists (what
    /// its capabilities offer).
    /// Each list is bounded by the upstream's timeout; the hints of every
    /// page are kept, and set when it is listed again.
    pub(crate) async fn snapshot(&self, c: &Client) -> Result<Snapshot, Failure> {
        let caps = c.server_capabilities();
        let t = self.cfg.timeout();
        let mut s = Snapshot::default();
        let h = &mut s.hints;
        if caps.tools.is_some() {
            s.tools = pages(t, h, |cur| async move {
                let p = c.list_tools_page(cur).await?;
                Ok((p.tools, p.next_cursor, p.ttl_ms, p.cache_scope))
            })
            .await?;
        }
        if caps.prompts.is_some() {
            s.prompts = pages(t, h, |cur| async move {
                let p = c.list_prompts_page(cur).await?;
                Ok((p.prompts, p.next_cursor, p.ttl_ms, p.cache_scope))
            })
            .await?;
        }
        if caps.resources.is_some() {
            s.resources = pages(t, h, |cur| async move {
                let p = c.list_resources_page(cur).await?;
                Ok((p.resources, p.next_cursor, p.ttl_ms, p.cache_scope))
            })
            .await?;
            s.templates = pages(t, h, |cur| async move {
                let p = c.list_resource_templates_page(cur).await?;
                Ok((p.resource_templates, p.next_cursor, p.ttl_ms, p.cache_scope))
            })
            .await?;
        }
        // `at` stays when the listing began: the ttl is counted from
        // before the first page came, never from after.
        self.refresh.listed(&s.hints);
        Ok(s)
    }

    /// Sends `method` with `params` and returns the raw result, within
    /// the upstream's timeout. A broken connection wakes the supervisor.
    pub(crate) async fn request(&self, method: &str, params: JsonObject) -> Result<Value, Failure> {
        self.request_for(method, params, None).await
    }

    /// [`Self::request`] on behalf of a client's request: its progress
    /// notifications are passed on to it, and its cancellation cancels
    /// the upstream's request (the exchange is dropped, which the client
    /// connection turns into `notifications/cancelled` or an aborted HTTP
    /// exchange).
    pub(crate) async fn request_for(
        &self,
        method: &str,
        params: JsonObject,
        cx: Option<&RequestContext>,
    ) -> Result<Value, Failure> {
        // The client's trace continues upstream, in a span of its own.
        let traced = crate::trace::continued(cx);
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str);
        let span = crate::trace::span(self.name(), method, name, traced.as_ref().map(|t| &t.1));
        let r = tracing::Instrument::instrument(
            self.request_traced(method, params, cx, traced.map(|t| t.0)),
            span.clone(),
        )
        .await;
        span.record("outcome", outcome_label(&r));
        r
    }

    async fn request_traced(
        &self,
        method: &str,
        params: JsonObject,
        cx: Option<&RequestContext>,
        trace: Option<ferromcp_client::TraceContext>,
    ) -> Result<Value, Failure> {
        let Some(c) = self.current() else {
            return Err(Failure::Down);
        };
        let permit = self
            .breaker
            .admit(std::time::Instant::now())
            .map_err(Failure::Open)?;
        let t = self.cfg.timeout();
        let mut opts = RequestOptions::new().timeout(t).max_total_timeout(t);
        if let Some(tc) = trace {
            opts = opts.trace_context(tc);
        }
        if let Some(cx) = cx.filter(|cx| cx.progress_token().is_some()) {
            let cx = cx.clone();
            let gate = self.flood_gate();
            opts = opts.on_progress(move |p| {
                if gate.admit("notifications/progress") {
                    cx.progress(p.progress, p.total, p.message.as_deref());
                }
            });
        }
        let cancel = cx.map(RequestContext::cancellation_token);
        let cancelled = async {
            match &cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let r = tokio::select! {
            r = tokio::time::timeout(t, c.request(method, Some(params), opts)) => match r {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(failure(e)),
                Err(_) => Err(Failure::Timeout),
            },
            _ = cancelled => Err(Failure::Other("cancelled by the client".to_owned())),
        };
        if matches!(r, Err(Failure::Broken(_))) {
            self.wake.notify_one();
        }
        match &r {
            // Cancelled by the client: says nothing about the upstream.
            Err(Failure::Other(_)) if cancel.as_ref().is_some_and(|c| c.is_cancelled()) => {}
            Err(Failure::Timeout | Failure::Broken(_)) => {
                permit.record(false, std::time::Instant::now());
            }
            _ => permit.record(true, std::time::Instant::now()),
        }
        r
    }

    /// Subscribes at a handshake-era upstream that supports it to every
    /// resource of its last listing (a 2026-07-28 one gets them in its
    /// listen filter instead).
    pub(crate) async fn subscribe_all(&self, c: &Client) {
        let subscribable = c
            .server_capabilities()
            .resources
            .is_some_and(|r| r.subscribe == Some(true));
        if !subscribable || c.era() == ferromcp_protocol::Era::Modern {
            return;
        }
        let uris = self.uris.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for uri in uris {
            let _ = tokio::time::timeout(self.cfg.timeout(), c.subscribe_resource(&uri)).await;
        }
    }

    /// A sentence for `f` naming this upstream and what to do.
    pub(crate) fn explain(&self, method: &str, f: &Failure) -> String {
        let name = self.name();
        match f {
            Failure::Down => format!(
                "upstream {name:?} is not connected (the gateway keeps retrying it); try again later"
            ),
            Failure::Timeout => format!(
                "upstream {name:?} did not answer {method} within {} ms (its timeoutMs)",
                self.cfg.timeout().as_millis()
            ),
            Failure::Auth(status) => {
                let status = status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
                let target = self.cfg.target();
                match self.cfg.auth() {
                    Some(a) => format!(
                        "upstream {name:?} refused the gateway's credentials{status}: {}",
                        a.remedy(name, &target)
                    ),
                    None => format!(
                        "upstream {name:?} refused the gateway's credentials{status}: run `mcp login {target}` and set mcpServers.{name}.auth to {{\"login\": true}} (or give a token with auth.bearerEnv)"
                    ),
                }
            }
            Failure::Rpc(e) => format!("upstream {name:?}: {}", e.message),
            Failure::Broken(m) => format!("upstream {name:?} connection failed: {m}"),
            Failure::Other(m) => format!("upstream {name:?}: {m}"),
            Failure::Open(r) if r.retry_in.is_zero() => format!(
                "upstream {name:?} failed {} requests in a row (no answer within its timeoutMs, or a lost connection); a trial request is under way, the others are refused until it answers",
                r.failures
            ),
            Failure::Open(r) => format!(
                "upstream {name:?} failed {} requests in a row (no answer within its timeoutMs, or a lost connection); requests to it are refused for {} ms more (its breaker)",
                r.failures,
                r.retry_in.as_millis().max(1)
            ),
        }
    }
}

/// One upstream's notification rate limit, as its hooks use it.
pub(crate) struct FloodGate {
    bucket: Arc<crate::flood::Bucket>,
    metrics: Arc<crate::metrics::Metrics>,
    report: crate::Report,
    name: String,
    rate: crate::flood::NotificationRate,
}

impl FloodGate {
    /// Whether a notification `method` is within the rate (else it was
    /// dropped and counted).
    pub(crate) fn admit(&self, method: &str) -> bool {
        use crate::flood::Verdict;
        match self.bucket.admit(std::time::Instant::now()) {
            Verdict::Pass => true,
            Verdict::Drop(report) => {
                self.metrics.record_dropped(&self.name, 1);
                if let Some(n) = report {
                    (self.report)(&format!(
                        "upstream {:?} sends notifications faster than its notificationRate ({} per second, burst {}); {n} dropped (last: {method}); further drops are reported every {} s",
                        self.name,
                        self.rate.per_second(),
                        self.rate.burst(),
                        crate::flood::REPORT_EVERY.as_secs()
                    ));
                }
                false
            }
        }
    }
}

/// The `outcome` of an upstream request's span.
fn outcome_label(r: &Result<Value, Failure>) -> &'static str {
    match r {
        Ok(v) if v.get("isError").and_then(Value::as_bool) == Some(true) => "tool_error",
        Ok(_) => "ok",
        Err(Failure::Down) => "down",
        Err(Failure::Timeout) => "timeout",
        Err(Failure::Auth(_)) => "auth",
        Err(Failure::Rpc(_)) => "rpc_error",
        Err(Failure::Broken(_)) => "broken",
        Err(Failure::Other(_)) => "other",
        Err(Failure::Open(_)) => "breaker_open",
    }
}

/// One page: its items, next cursor, `ttlMs` and `cacheScope`.
type Page<T> = (
    Vec<T>,
    Option<String>,
    Option<u64>,
    Option<ferromcp_protocol::types::CacheScope>,
);

/// Every page of one list (following `nextCursor`, at most
/// [`MAX_PAGES`]), within `t`; each page's hints go into `hints`.
async fn pages<T, F, Fut>(
    t: Duration,
    hints: &mut ListHints,
    mut page: F,
) -> Result<Vec<T>, Failure>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: std::future::Future<Output = ferromcp_client::Result<Page<T>>>,
{
    let all = async {
        let mut all = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let (items, next, ttl, scope) = page(cursor.take()).await.map_err(failure)?;
            hints.page(ttl, scope);
            all.extend(items);
            match next {
                Some(c) => cursor = Some(c),
                None => return Ok(all),
            }
        }
        Err(Failure::Other(format!(
            "a list did not end within {MAX_PAGES} pages"
        )))
    };
    match tokio::time::timeout(t, all).await {
        Ok(r) => r,
        Err(_) => Err(Failure::Timeout),
    }
}

/// A handshake-era upstream's server request, relayed to the calling
/// client (pushed.rs) and its answer read as `T`.
async fn relayed<T: serde::de::DeserializeOwned>(
    live: Arc<crate::pushed::Live>,
    timeout: Duration,
    request: InputRequest,
) -> Result<T, ferromcp_client::HandlerError> {
    let what = request.method();
    let v = live
        .ask(request, timeout)
        .await
        .map_err(ferromcp_client::HandlerError::new)?;
    serde_json::from_value(v).map_err(|e| {
        ferromcp_client::HandlerError::new(format!(
            "the calling client's answer to {what} is malformed: {e}"
        ))
    })
}

/// Sorts a client error into what the gateway tells its client.
fn failure(e: ferromcp_client::Error) -> Failure {
    if let Some(rpc) = e.rpc_error() {
        return Failure::Rpc(rpc.clone());
    }
    if e.is_auth() || matches!(e.status(), Some(401 | 403)) {
        return Failure::Auth(e.status());
    }
    if e.is_timeout() {
        return Failure::Timeout;
    }
    if e.is_transport() || e.is_closed() {
        return Failure::Broken(e.to_string());
    }
    Failure::Other(e.to_string())
}
