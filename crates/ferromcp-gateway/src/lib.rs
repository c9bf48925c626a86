//! # ferromcp-gateway
//!
//! The core of `mcp gateway`: many Model Context Protocol servers behind
//! one endpoint.
//!
//! - The client-facing side is a ferromcp [`Server`]: both protocol eras,
//!   sessions, Host/Origin protection, limits and listen come from the
//!   server crate and its transports (the CLI serves it over Streamable
//!   HTTP or stdio).
//! - Each upstream (a stdio child or a Streamable HTTP endpoint, either
//!   era) is a ferromcp client connection owned by the gateway. Its tools
//!   and prompts appear as `PREFIX__NAME` (prefix: the server's name by
//!   default), its resources and templates under their own URIs.
//! - A tool the upstream's `allowTools`/`denyTools` do not permit is never
//!   registered: absent from `tools/list`, and refused on `tools/call`
//!   without reaching the upstream.
//! - Each upstream gets only the credentials its configuration names; the
//!   gateway's clients' headers are never forwarded.
//! - A dead upstream affects only its own items: it is retried with
//!   backoff, requests to it fail within its `timeoutMs`, and a stdio
//!   child that exits is started again.
//! - With `"gateway": {"toolMode": "search"}`, `tools/list` offers only
//!   the `search_tools` and `call_tool` meta-tools: a client finds tools by
//!   BM25 over their names and descriptions and loads a handful of
//!   schemas instead of hundreds, under the same policy.
//! - Upstreams' caching hints are honoured (`gateway.cache`): one whose
//!   lists carry a finite `ttlMs` is listed again in the background when
//!   it runs out, and `resources/read` results are cached by `ttlMs` and
//!   `cacheScope` (a private one only for the same verified token).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use ferromcp_gateway::{Config, Gateway};
//! let config = Config::parse(
//!     r#"{"mcpServers": {"everything": {"command": "everything-server", "args": ["--stdio"]}}}"#,
//!     |var| std::env::var(var).ok(),
//! )?;
//! let running = Gateway::new(config).start().await?;
//! running.server().serve_stdio().await?;
//! # Ok(()) }
//! ```

mod aggregate;
mod breaker;
mod cache;
mod config;
mod config_error;
mod credentials;
mod failure;
mod flood;
mod inbound;
mod list_hints;
mod metrics;
mod naming;
mod pushed;
mod read_cache;
mod refresh;
mod relay;
mod relay_config;
mod scopes;
mod search;
mod tool_mode;
mod trace;
mod upstream;

pub use aggregate::Report;
pub use breaker::BreakerConfig;
pub use cache::{CacheConfig, DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, DEFAULT_MIN_REFRESH};
pub use config::{
    Config, ConfigError, DEFAULT_SEPARATOR, DEFAULT_TIMEOUT, Transport, UpstreamConfig,
};
pub use credentials::UpstreamAuth;
pub use ferromcp_bridge::expose::Restart;
pub use flood::{
    DEFAULT_BURST as DEFAULT_NOTIFICATION_BURST,
    DEFAULT_PER_SECOND as DEFAULT_NOTIFICATIONS_PER_SECOND, NotificationRate,
};
pub use inbound::{InboundAuth, Introspection};
pub use metrics::{
    CONTENT_TYPE as METRICS_CONTENT_TYPE, DEFAULT_MAX_SERIES, Metrics, OTHER_TOOL, Outcome,
    UpstreamState,
};
pub use naming::{
    Naming, REWRITE_SCHEME, exposed, is_valid_tool_name, rewrite_head, rewritten_uri,
};
pub use relay_config::{
    DEFAULT_MAX_REQUESTS as DEFAULT_RELAY_MAX_REQUESTS,
    DEFAULT_MAX_ROUNDS as DEFAULT_RELAY_MAX_ROUNDS, RelayConfig,
};
pub use scopes::ScopeRule;
pub use tool_mode::{DEFAULT_LIMIT as DEFAULT_SEARCH_LIMIT, ToolMode};

use aggregate::Aggregate;
use ferromcp_server::Server;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use upstream::{Failure, Upstream};

/// How often a connected upstream's health is checked when nothing else
/// woke its supervisor.
const DEFAULT_HEALTH_INTERVAL: Duration = Duration::from_secs(5);

/// Makes the authorization hook of an upstream whose `auth` is
/// [`UpstreamAuth::Login`], [`UpstreamAuth::ClientCredentials`] or
/// [`UpstreamAuth::ClientKey`] (the
/// token store and the OAuth client live with the caller, e.g. the `mcp`
/// command's `mcp login` store). Called once per upstream, at its first
/// connection; an error is reported like a failed connection.
pub type AuthProvider = Arc<
    dyn Fn(&UpstreamConfig) -> Result<Arc<dyn ferromcp_client::HttpAuth>, String> + Send + Sync,
>;

/// A gateway in front of the upstreams of a [`Config`].
pub struct Gateway {
    config: Config,
    auth: Option<AuthProvider>,
    restart: Restart,
    report: Report,
    health_interval: Duration,
    server: Option<ferromcp_server::ServerBuilder>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("config", &self.config)
            .field("restart", &self.restart)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway for `config`, with default backoff and reporting through
    /// `tracing`.
    pub fn new(config: Config) -> Self {
        Self {
            config,
            auth: None,
            restart: Restart::default(),
            report: Arc::new(|m| tracing::warn!("{m}")),
            health_interval: DEFAULT_HEALTH_INTERVAL,
            server: None,
        }
    }

    /// How upstreams that failed or were lost are retried: the wait
    /// doubles from [`Restart::initial`] up to [`Restart::max`].
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// How upstreams with `{"auth": {"login": true}}` or
    /// `{"auth": {"clientCredentials": …}}` get their authorization hook.
    /// Without one, such an upstream fails to connect with a message
    /// saying so. A `bearerEnv` credential needs no provider.
    pub fn auth_provider(mut self, provider: AuthProvider) -> Self {
        self.auth = Some(provider);
        self
    }

    /// Where problems with upstreams are reported.
    pub fn report(mut self, report: Report) -> Self {
        self.report = report;
        self
    }

    /// How often a connected upstream is checked when no request found it
    /// broken (default 5 s).
    pub fn health_interval(mut self, d: Duration) -> Self {
        self.health_interval = d.max(Duration::from_millis(10));
        self
    }

    /// The server builder [`Gateway::start`] uses when [`Gateway::server`]
    /// was not called: `mcp-gateway`, both eras, tools, prompts and
    /// resource subscriptions declared. Start from it to add to the
    /// defaults (a key ring, a shared session store) instead of replacing
    /// them.
    pub fn default_server() -> ferromcp_server::ServerBuilder {
        Server::builder("mcp-gateway", env!("CARGO_PKG_VERSION"))
            .declare_tools()
            .declare_prompts()
            .resource_subscriptions(true)
    }

    /// The server builder the gateway registers into (its name, limits,
    /// eras); by default [`Gateway::default_server`].
    pub fn server(mut self, builder: ferromcp_server::ServerBuilder) -> Self {
        self.server = Some(builder);
        self
    }

    /// Connects every upstream once (concurrently, each bounded by its
    /// `timeoutMs`), registers what they offer in name order, and starts
    /// their supervisors. An upstream that cannot be reached is reported
    /// and retried in the background; the gateway starts without it. Fails
    /// only if the server builder given to [`Gateway::server`] does.
    pub async fn start(self) -> Result<Running, ferromcp_server::Error> {
        let builder = self.server.unwrap_or_else(Self::default_server);
        // The list hints are for whole lists: a later page cannot be told
        // from a whole list on the middleware seam.
        let single_page = !builder.paginates();
        // Completion is routed to the upstream owning the prompt or
        // template; the catalogue exists once the server does.
        let cell: Arc<std::sync::OnceLock<Arc<Aggregate>>> = Arc::default();
        let route = cell.clone();
        let builder = builder.completion(
            move |p: ferromcp_protocol::types::CompleteRequestParams,
                  cx: ferromcp_server::RequestContext| {
                let agg = route.get().cloned();
                async move {
                    match agg {
                        Some(agg) => agg.complete(p, &cx).await,
                        None => Err(ferromcp_server::HandlerError::failed(
                            "the gateway is starting",
                        )),
                    }
                }
            },
        );
        // AUTH-04: the per-scope tool policy, on the RPC middleware seam.
        let owners: scopes::Route = Arc::default();
        let policy = scopes::ScopePolicy::routed(owners.clone());
        policy.set(&self.config);
        let mut builder = builder.layer(policy.clone());
        if single_page {
            builder = builder.layer(list_hints::ListHintLayer::new(cell.clone(), policy.clone()));
        }
        if self.config.tool_mode() == ToolMode::Search {
            let search = search::ToolSearch::new(
                cell.clone(),
                policy.clone(),
                self.config.max_search_results(),
            );
            builder = search::install(builder, &search);
        }
        let server = builder.build()?;
        let agg = Arc::new(
            Aggregate::new(
                server.clone(),
                self.config.separator().to_owned(),
                self.report.clone(),
            )
            .with_naming(
                self.config.naming(),
                if self.config.tool_mode() == ToolMode::Search {
                    &tool_mode::META_TOOLS
                } else {
                    &[]
                },
            )
            .with_cache(&self.config.cache()),
        );
        let _ = cell.set(agg.clone());
        let _ = owners.set(agg.clone());
        let running = Running {
            server,
            agg,
            policy,
            tool_mode: (self.config.tool_mode(), self.config.max_search_results()),
            cache: self.config.cache(),
            relay: self.config.relay(),
            auth: self.auth,
            restart: self.restart,
            report: self.report,
            health: self.health_interval,
            upstreams: tokio::sync::Mutex::new(BTreeMap::new()),
            metrics: Arc::default(),
        };
        running.add(self.config.upstreams().to_vec()).await;
        Ok(running)
    }
}

/// One upstream and its supervisor.
struct Entry {
    up: Arc<Upstream>,
    task: tokio::task::JoinHandle<()>,
}

/// A started gateway: serve [`Running::server`] on a transport; dropping
/// it (or [`Running::shutdown`]) stops the supervisors and the upstreams.
pub struct Running {
    server: Server,
    agg: Arc<Aggregate>,
    policy: scopes::ScopePolicy,
    /// `gateway.toolMode` and `gateway.maxSearchResults` (fixed at start).
    tool_mode: (ToolMode, usize),
    /// `gateway.cache` (fixed at start).
    cache: CacheConfig,
    /// `gateway.relay` (fixed at start).
    relay: relay_config::RelayConfig,
    auth: Option<AuthProvider>,
    restart: Restart,
    report: Report,
    health: Duration,
    upstreams: tokio::sync::Mutex<BTreeMap<String, Entry>>,
    /// Counted by every upstream, rendered by [`Running::metrics_text`].
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("restart", &self.restart)
            .finish_non_exhaustive()
    }
}

/// What [`Running::reload`] changed, by upstream name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Upstreams new in the configuration.
    pub added: Vec<String>,
    /// Upstreams no longer in it (stopped, their items removed).
    pub removed: Vec<String>,
    /// Upstreams whose entry changed (stopped and started again).
    pub changed: Vec<String>,
}

impl Running {
    /// The client-facing server.
    pub fn server(&self) -> Server {
        self.server.clone()
    }

    /// The gateway's metrics (also where a cache counts its hits and
    /// misses: [`Metrics::record_cache`]).
    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// Every metric in the Prometheus text format
    /// ([`METRICS_CONTENT_TYPE`]), with each configured upstream's
    /// connection and breaker state.
    pub async fn metrics_text(&self) -> String {
        let states: Vec<UpstreamState> = self
            .upstreams
            .lock()
            .await
            .values()
            .map(|e| UpstreamState {
                name: e.up.name().to_owned(),
                connected: e.up.current().is_some_and(|c| !c.is_closed()),
                breaker: e.up.breaker_gauge(),
            })
            .collect();
        self.metrics.render(&states)
    }

    /// The names of the upstreams connected right now, in name order.
    pub async fn connected(&self) -> Vec<String> {
        self.upstreams
            .lock()
            .await
            .values()
            .filter(|e| e.up.current().is_some())
            .map(|e| e.up.name().to_owned())
            .collect()
    }

    /// Applies a new configuration without dropping the upstreams whose
    /// entries did not change: removed ones are stopped and their items
    /// withdrawn, added and changed ones (re)connected, and clients get
    /// `list_changed` for what changed. `gateway.separator` cannot change
    /// on a reload (it is reported and the old one kept).
    pub async fn reload(&self, config: Config) -> Reloaded {
        // Scope rules apply at once, before upstreams are restarted.
        self.policy.set(&config);
        if config.separator() != self.agg.separator() {
            (self.report)(&format!(
                "gateway.separator cannot change on a reload (still {:?}); restart the gateway to change it",
                self.agg.separator()
            ));
        }
        if config.naming() != self.agg.naming() {
            (self.report)(&format!(
                "gateway.naming cannot change on a reload (still {:?}); restart the gateway to change it",
                self.agg.naming()
            ));
        }
        if (config.tool_mode(), config.max_search_results()) != self.tool_mode {
            (self.report)(&format!(
                "gateway.toolMode and gateway.maxSearchResults cannot change on a reload (still {:?}, {}); restart the gateway to change them",
                self.tool_mode.0, self.tool_mode.1
            ));
        }
        if config.relay() != self.relay {
            (self.report)(
                "gateway.relay cannot change on a reload; restart the gateway to change it",
            );
        }
        if config.cache() != self.cache {
            (self.report)(
                "gateway.cache cannot change on a reload; restart the gateway to change it",
            );
        }
        let mut out = Reloaded::default();
        let mut start = Vec::new();
        {
            let mut ups = self.upstreams.lock().await;
            let wanted: BTreeMap<&str, &UpstreamConfig> =
                config.upstreams().iter().map(|u| (u.name(), u)).collect();
            let names: Vec<String> = ups.keys().cloned().collect();
            for name in names {
                let keep = wanted
                    .get(name.as_str())
                    .is_some_and(|c| ups.get(&name).is_some_and(|e| e.up.cfg == **c));
                if keep {
                    continue;
                }
                if let Some(e) = ups.remove(&name) {
                    stop(e, &self.agg).await;
                }
                if wanted.contains_key(name.as_str()) {
                    out.changed.push(name);
                } else {
                    out.removed.push(name);
                }
            }
            for c in config.upstreams() {
                if !ups.contains_key(c.name()) {
                    if !out.changed.iter().any(|n| n == c.name()) {
                        out.added.push(c.name().to_owned());
                    }
                    start.push(c.clone());
                }
            }
            // Items a removed upstream owned may be offered by another
            // (which lost the collision): every upstream lists again.
            for e in ups.values() {
                e.up.relist
                    .store(true, std::sync::atomic::Ordering::Release);
                e.up.wake.notify_one();
            }
        }
        self.add(start).await;
        out
    }

    /// Connects `configs` once (concurrently), registers what they offer
    /// in name order, and starts their supervisors.
    async fn add(&self, configs: Vec<UpstreamConfig>) {
        let first = configs.into_iter().map(|c| {
            let agg = Arc::downgrade(&self.agg);
            let name = c.name().to_owned();
            let updated: Arc<dyn Fn(&str) + Send + Sync> = Arc::new(move |uri: &str| {
                if let Some(agg) = agg.upgrade() {
                    agg.resource_updated(&name, uri);
                }
            });
            let auth = self.auth.clone();
            let min_refresh = self.cache.min_refresh();
            let metrics = self.metrics.clone();
            let report = self.report.clone();
            let relay = self.relay;
            async move {
                let u = Upstream::new(c, updated)
                    .with_relay(relay)
                    .with_auth(auth)
                    .with_min_refresh(min_refresh)
                    .with_observers(metrics, report);
                let r = first_contact(&u).await;
                (u, r)
            }
        });
        let results = join_all(first.collect()).await;
        let mut ups = self.upstreams.lock().await;
        for (u, r) in results {
            self.agg.register(&u);
            let connected = match r {
                Ok((client, snap)) => {
                    self.agg.sync(&u, snap);
                    u.subscribe_all(&client).await;
                    u.set(Some(client));
                    true
                }
                Err(f) => {
                    (self.report)(&format!(
                        "{}; its tools are absent until it answers (retrying in {} ms)",
                        u.explain("the connection", &f),
                        self.restart.initial.as_millis()
                    ));
                    false
                }
            };
            let task = tokio::spawn(supervise(
                u.clone(),
                self.agg.clone(),
                self.restart,
                self.report.clone(),
                self.health,
                connected,
            ));
            ups.insert(u.name().to_owned(), Entry { up: u, task });
        }
    }

    /// Stops the supervisors and closes every upstream connection (stdio
    /// children are stopped).
    pub async fn shutdown(self) {
        let mut ups = self.upstreams.lock().await;
        for (_, e) in std::mem::take(&mut *ups) {
            e.task.abort();
            if let Some(c) = e.up.current() {
                e.up.set(None);
                c.close_within(Duration::from_secs(2)).await;
            }
        }
    }
}

/// Stops one upstream: its supervisor, its connection, its items.
async fn stop(e: Entry, agg: &Aggregate) {
    e.task.abort();
    agg.forget(e.up.name());
    if let Some(c) = e.up.current() {
        e.up.set(None);
        c.close_within(Duration::from_secs(2)).await;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(ups) = self.upstreams.try_lock() {
            for e in ups.values() {
                e.task.abort();
            }
        }
    }
}

/// Awaits every future (they run concurrently), in order.
async fn join_all<F: std::future::Future + Send + 'static>(futs: Vec<F>) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        if let Ok(v) = h.await {
            out.push(v);
        }
    }
    out
}

/// Connects and lists.
async fn first_contact(
    u: &Arc<Upstream>,
) -> Result<(ferromcp_client::Client, upstream::Snapshot), Failure> {
    let c = u.connect().await?;
    match u.snapshot(&c).await {
        Ok(s) => Ok((c, s)),
        Err(f) => {
            c.close_within(Duration::from_secs(1)).await;
            Err(f)
        }
    }
}

/// Keeps one upstream connected: reconnects with backoff when it is lost
/// or never came up, re-lists when it says a list changed.
async fn supervise(
    u: Arc<Upstream>,
    agg: Arc<Aggregate>,
    restart: Restart,
    report: Report,
    health: Duration,
    mut connected: bool,
) {
    let mut wait = restart.initial;
    loop {
        if connected {
            let since = tokio::time::Instant::now();
            watch(&u, &agg, health).await;
            u.set(None);
            // Nothing it said holds once it is gone.
            u.refresh.clear();
            agg.drop_reads(u.name());
            if since.elapsed() >= restart.reset_after {
                wait = restart.initial;
            }
            report(&format!(
                "upstream {:?} was lost; reconnecting in {} ms",
                u.name(),
                wait.as_millis()
            ));
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(restart.max);
        match first_contact(&u).await {
            Ok((c, snap)) => {
                agg.sync(&u, snap);
                u.subscribe_all(&c).await;
                u.set(Some(c));
                report(&format!("upstream {:?} is connected", u.name()));
                connected = true;
            }
            Err(f) => {
                report(&format!(
                    "{} (retrying in {} ms)",
                    u.explain("the connection", &f),
                    wait.as_millis()
                ));
                connected = false;
            }
        }
    }
}

/// Aborts the task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How long to wait before listening again after a listen stream ended.
const RELISTEN_WAIT: Duration = Duration::from_secs(1);

/// Listens for a modern upstream's list changes and asks for a re-list on
/// each (and after a lost stream, when changes may have been missed).
async fn listen_for_changes(c: ferromcp_client::Client, u: Arc<Upstream>) {
    use ferromcp_client::{SubscriptionEnd, SubscriptionEvent};
    let subscribable = c
        .server_capabilities()
        .resources
        .is_some_and(|r| r.subscribe == Some(true));
    let relist = || {
        u.relist.store(true, std::sync::atomic::Ordering::Release);
        u.wake.notify_one();
    };
    let gate = u.flood_gate();
    loop {
        let uris = u.uris.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let filter = ferromcp_protocol::types::SubscriptionFilter {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(true),
            resources_list_changed: Some(true),
            resource_subscriptions: (subscribable && !uris.is_empty()).then_some(uris),
        };
        let Ok(mut sub) = c.listen(filter).await else {
            return;
        };
        let mut refiltered = false;
        loop {
            let event = tokio::select! {
                e = sub.next() => e,
                // Its resources changed: listen again at once, with them
                // in the filter (SUB-12).
                () = u.uris_changed.notified() => {
                    refiltered = true;
                    break;
                }
            };
            let method = match &event {
                Ok(SubscriptionEvent::ResourceUpdated { .. }) => "notifications/resources/updated",
                Ok(
                    SubscriptionEvent::ToolsListChanged
                    | SubscriptionEvent::PromptsListChanged
                    | SubscriptionEvent::ResourcesListChanged,
                ) => "notifications/list_changed",
                _ => "",
            };
            // Over its rate: dropped before any work is done for it.
            if !method.is_empty() && !gate.admit(method) {
                continue;
            }
            match event {
                Ok(
                    SubscriptionEvent::ToolsListChanged
                    | SubscriptionEvent::PromptsListChanged
                    | SubscriptionEvent::ResourcesListChanged
                    | SubscriptionEvent::Relistened { .. },
                ) => relist(),
                Ok(SubscriptionEvent::ResourceUpdated { uri }) => (u.updated)(&uri),
                Ok(_) => {}
                Err(SubscriptionEnd::Lost(_) | SubscriptionEnd::Completed) => {
                    relist();
                    break;
                }
                Err(_) => return,
            }
        }
        if c.is_closed() {
            return;
        }
        if !refiltered {
            tokio::time::sleep(RELISTEN_WAIT).await;
        }
    }
}

/// Returns when the upstream's connection is gone; re-lists on list
/// changes meanwhile.
async fn watch(u: &Arc<Upstream>, agg: &Aggregate, health: Duration) {
    // A 2026-07-28 upstream tells of list changes only on a listen
    // stream (a handshake-era one sends notifications, seen by the
    // client's notification hook).
    let listener = u
        .current()
        .filter(|c| c.era() == ferromcp_protocol::Era::Modern)
        .map(|c| AbortOnDrop(tokio::spawn(listen_for_changes(c, u.clone()))));
    let _listener = listener;
    loop {
        // CACHE-07, CACHE-09: listed again when its lists' ttlMs ran out
        // (refresh.rs: at least minRefreshMs, jittered, backing off).
        let due = u.refresh.due();
        let timed = async {
            match due {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let mut expired = false;
        tokio::select! {
            _ = u.wake.notified() => {}
            _ = tokio::time::sleep(health) => {}
            _ = timed => expired = true,
        }
        let Some(c) = u.current() else { return };
        if c.is_closed() {
            return;
        }
        let announced = u.relist.swap(false, std::sync::atomic::Ordering::AcqRel);
        if announced || expired {
            match u.snapshot(&c).await {
                // A timed re-list that finds what the catalogue holds
                // changes nothing (no list_changed for the clients).
                Ok(s)
                    if !announced
                        && s.fingerprint()
                            == u.listed.load(std::sync::atomic::Ordering::Acquire) => {}
                Ok(s) => {
                    agg.sync(u, s);
                    u.subscribe_all(&c).await;
                }
                Err(Failure::Broken(_)) => return,
                // The last catalogue stays (CACHE-07: stale on errors).
                Err(_) => u.refresh.failed(),
            }
            continue;
        }
        // A probe: any answer, an error included, proves it alive; a
        // broken connection does not.
        if let Err(Failure::Broken(_)) = u.request("ping", Default::default()).await {
            return;
        }
        if c.is_closed() {
            return;
        }
    }
}
