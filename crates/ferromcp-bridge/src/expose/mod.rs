//! `mcp bridge --expose`: Streamable HTTP in front of a stdio server child.
//!
//! The HTTP side is the server crate's own transport (Host/Origin
//! protection, body limits and timeouts, both protocol eras, sessions),
//! serving a [`ferromcp_server::Server`] that mirrors the child: its
//! `serverInfo` and `instructions` come from the child's `initialize`
//! answer, and each of its tools (those the [`ToolFilter`] permits) is a
//! tool whose handler forwards `tools/call` to the child. A handshake
//! client's `initialize` and a 2026-07-28 client's `server/discover` are
//! therefore both answered from the one session the bridge holds with the
//! child. A filtered tool is never registered, so it is absent from
//! `tools/list` and a call to it is refused by the server like any unknown
//! tool; the child never sees it.
//!
//! One child serves every client; the bridge's ids towards it come from
//! one [`crate::IdMap`], so clients using the same ids cannot receive each
//! other's answers. When the child exits, every call waiting for it fails
//! at once, and the child is started again after a backoff that doubles
//! from [`Restart::initial`] up to [`Restart::max`].

mod child;
mod sessions;

use crate::ToolFilter;
use child::{Call, Link, Wait};
use ferromcp_protocol::types::InputRequest;
use ferromcp_protocol::types::{
    CompleteRequestParams, Completion, GetPromptResult, Implementation, Prompt, Resource,
    ResourceTemplate, Tool,
};
use ferromcp_protocol::{ErrorObject, RequestId};
use ferromcp_server::transport::http::{HttpConfig, McpService, serve_layered, serve_listener};
use ferromcp_server::{
    ClientNotification, FallbackRequest, HandlerError, InputRequired, PromptArgs, PromptDef,
    RawResult, RequestContext, ResourceDef, ResourceRequest, Server, TemplateDef, prompt_from,
    tool_from,
};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// Where the bridge reports what the child did wrong (garbage on stdout,
/// exits, restarts). The CLI prints to stderr.
pub type Report = Arc<dyn Fn(&str) + Send + Sync>;

/// How the child is restarted after it exits.
#[derive(Debug, Clone, Copy)]
pub struct Restart {
    /// The first wait before a restart.
    pub initial: Duration,
    /// The longest wait; the wait doubles from `initial` up to this.
    pub max: Duration,
    /// A child that ran at least this long before exiting restarts after
    /// `initial` again.
    pub reset_after: Duration,
}

impl Default for Restart {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(200),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(60),
        }
    }
}

/// Settings shared with the child link.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) max_in_flight: usize,
    pub(crate) max_message: usize,
    pub(crate) timeout: Duration,
}

/// The protocol revision the bridge offers the child in `initialize`.
const CHILD_VERSION: &str = "2025-11-25";
/// Pages of a list method read from the child at most (a child paging
/// forever is cut off here).
const MAX_LIST_PAGES: usize = 100;

/// A stdio server child exposed over Streamable HTTP.
pub struct Expose {
    program: String,
    args: Vec<String>,
    filter: ToolFilter,
    limits: crate::Limits,
    restart: Restart,
    http: HttpConfig,
    report: Report,
    /// `--child-per-session`: (most session children, idle limit).
    per_session: Option<(usize, Duration)>,
}

impl std::fmt::Debug for Expose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expose")
            .field("program", &self.program)
            .field("filter", &self.filter)
            .field("restart", &self.restart)
            .finish_non_exhaustive()
    }
}

impl Expose {
    /// Exposes the stdio server started as `program args…`.
    pub fn new(program: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            program: program.into(),
            args,
            filter: ToolFilter::new(),
            limits: crate::Limits::default(),
            restart: Restart::default(),
            http: HttpConfig::default(),
            report: Arc::new(|m| tracing::warn!("{m}")),
            per_session: None,
        }
    }

    /// Sets the tool filter.
    pub fn filter(mut self, filter: ToolFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Sets the limits (in flight towards the child, message size, the
    /// time a call waits for the child's answer).
    pub fn limits(mut self, limits: crate::Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the restart backoff.
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// Sets the HTTP configuration (Origin/Host policy; loopback only by
    /// default).
    pub fn http(mut self, config: HttpConfig) -> Self {
        self.http = config;
        self
    }

    /// Starts one child per handshake-era session (for stdio servers that
    /// keep state per connection), at most `max` at once; a session child
    /// idle for `idle` is stopped. Requests without a session (2026-07-28)
    /// go to the shared child, which also provides the lists.
    pub fn child_per_session(mut self, max: usize, idle: Duration) -> Self {
        self.per_session = Some((max, idle));
        self
    }

    /// Sets where problems with the child are reported.
    pub fn report(mut self, report: Report) -> Self {
        self.report = report;
        self
    }

    /// Starts the child, initializes it, and serves HTTP on `listener`
    /// until `shutdown` completes. Fails if the child cannot be started
    /// or initialized the first time.
    pub async fn run(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), crate::Error> {
        let (service, running) = self.start().await?;
        let r = serve_listener(service, listener, shutdown).await;
        running.stop();
        r.map_err(crate::Error::config)
    }

    /// Like [`Expose::run`], with `layer` wrapped around the HTTP service:
    /// every request passes through it before the mirror sees it (for
    /// example `ferromcp_auth::resource::AuthLayer` for bearer protection).
    pub async fn run_layered<L, S, RB>(
        self,
        listener: tokio::net::TcpListener,
        layer: L,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), crate::Error>
    where
        L: tower_layer::Layer<McpService, Service = S>,
        S: tower_service::Service<
                http::Request<hyper::body::Incoming>,
                Response = http::Response<RB>,
            > + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
        S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
        RB: http_body::Body + Send + 'static,
        RB::Data: Send,
        RB::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (service, running) = self.start().await?;
        let r = serve_layered(service, layer, listener, shutdown).await;
        running.stop();
        r.map_err(crate::Error::config)
    }

    /// Starts and initializes the child, builds the mirror server and its
    /// background tasks; the HTTP service is ready to serve.
    async fn start(self) -> Result<(McpService, Running), crate::Error> {
        let settings = Settings {
            max_in_flight: self.limits.max_in_flight,
            max_message: self.limits.max_message,
            timeout: self.limits.timeout,
        };
        let link = Link::new(settings.clone(), self.report.clone());
        let x = Arc::new(Shared {
            link: link.clone(),
            parked: Parked::new(self.limits.max_server_requests, self.limits.timeout),
            sessions: self.per_session.map(|(max, idle)| {
                sessions::Sessions::new(
                    self.program.clone(),
                    self.args.clone(),
                    settings.clone(),
                    self.report.clone(),
                    max,
                    idle,
                )
            }),
        });
        let mut exited = link
            .spawn(&self.program, &self.args)
            .map_err(crate::Error::config)?;
        let init = match handshake(&link).await {
            Ok(i) => i,
            Err(e) => {
                // Say how the child ended when it did (a wrong command, a
                // crash at start) rather than only that it did not answer.
                let how = tokio::time::timeout(Duration::from_secs(1), &mut exited).await;
                let how = match how {
                    Ok(Ok(status)) => format!(" (it exited: {status})"),
                    _ => String::new(),
                };
                return Err(crate::Error::config(format!(
                    "the stdio server did not initialize: {e}{how}"
                )));
            }
        };
        let tools = list_tools(&link)
            .await
            .map_err(|e| crate::Error::config(format!("tools/list failed: {e}")))?;
        let mut b = Server::builder(init.name.clone(), init.version.clone())
            .info(init.clone_info())
            .handshake_era(true)
            .declare_tools();
        if let Some(i) = &init.instructions {
            b = b.instructions(i.clone());
        }
        let mut registered = HashSet::new();
        let mut prompt_names = HashSet::new();
        let cfg = |e: String| crate::Error::config(e);
        let subscribe = init.capabilities["resources"]["subscribe"] == json!(true);
        if subscribe {
            b = b.resource_subscriptions(true);
        }
        let mut resource_uris = HashSet::new();
        if init.capabilities.get("resources").is_some() {
            let resources = list_all(&link, "resources/list", "resources")
                .await
                .map_err(cfg)?;
            for r in typed::<Resource>(resources, "resources/list", &self.report) {
                resource_uris.insert(r.uri.clone());
                b = b.resource(resource_forwarder(r, &x));
            }
            let templates = list_all(&link, "resources/templates/list", "resourceTemplates")
                .await
                .map_err(cfg)?;
            for t in typed::<ResourceTemplate>(templates, "resources/templates/list", &self.report)
            {
                // An invalid template would stop the whole mirror from
                // building: it is reported and left out instead.
                if let Err(e) = ferromcp_server::uri_template::UriTemplate::parse(&t.uri_template) {
                    (self.report)(&format!(
                        "the stdio server's resource template {:?} is invalid ({e}); not served",
                        t.uri_template
                    ));
                    continue;
                }
                b = b.resource_template(template_forwarder(t, &x));
            }
        }
        if init.capabilities.get("prompts").is_some() {
            let prompts = list_all(&link, "prompts/list", "prompts")
                .await
                .map_err(cfg)?;
            for p in typed::<Prompt>(prompts, "prompts/list", &self.report) {
                prompt_names.insert(p.name.clone());
                b = b.prompt(prompt_forwarder(p, &x));
            }
        }
        if init.capabilities.get("completions").is_some() {
            let x = x.clone();
            b = b.completion(move |p: CompleteRequestParams, cx: RequestContext| {
                let x = x.clone();
                async move {
                    let params = serde_json::to_value(p).map_err(|e| {
                        HandlerError::Protocol(ErrorObject::internal(e.to_string()))
                    })?;
                    let r: Value = forward(&x, "completion/complete", params, &cx, None).await?;
                    serde_json::from_value::<Completion>(r["completion"].clone()).map_err(|e| {
                        HandlerError::Protocol(ErrorObject::internal(format!(
                            "the stdio server's completion/complete result is malformed: {e}"
                        )))
                    })
                }
            });
        }
        // Methods the mirror does not implement (extension and vendor
        // methods, methods of newer revisions) go to the child as sent;
        // not with a tool filter, which the bridge enforces only on the
        // methods it understands (an extension may run tools by another
        // route).
        if self.filter.is_open() {
            let fx = x.clone();
            b = b.fallback(move |req: FallbackRequest, cx: RequestContext| {
                let x = fx.clone();
                async move { passthrough(&x, req, cx).await }
            });
        }
        let nx = x.clone();
        let open = self.filter.is_open();
        b = b.on_notification(move |n: ClientNotification| {
            let x = nx.clone();
            tokio::spawn(async move { pass_notification(&x, n, open).await });
        });
        let server = b.build().map_err(crate::Error::config)?;
        // Tools are added one by one, so one the server refuses (an
        // invalid schema) is reported and left out instead of stopping
        // the bridge.
        for t in tools {
            if self.filter.permits(&t.name) {
                let name = t.name.clone();
                match server.add_tool(forwarder(t, &x)) {
                    Ok(()) => {
                        registered.insert(name);
                    }
                    Err(e) => (self.report)(&format!(
                        "the stdio server's tool {name:?} cannot be served ({e}); left out"
                    )),
                }
            }
        }
        let handle = server.clone();
        let supervisor = tokio::spawn(supervise(
            link.clone(),
            self.program.clone(),
            self.args.clone(),
            self.restart,
            self.report.clone(),
            exited,
        ));
        let refresher = tokio::spawn(refresh_tools(
            x.clone(),
            handle,
            self.filter.clone(),
            registered,
        ));
        if subscribe {
            subscribe_all(&link, &resource_uris).await;
        }
        let others = tokio::spawn(refresh_others(
            x.clone(),
            server.clone(),
            resource_uris,
            prompt_names,
            subscribe,
        ));
        let running = Running {
            tasks: [supervisor, refresher, others],
            shared: x,
            link,
        };
        Ok((McpService::new(server, self.http), running))
    }
}

/// The background tasks and the child of a started [`Expose`].
struct Running {
    tasks: [tokio::task::JoinHandle<()>; 3],
    shared: Arc<Shared>,
    link: Arc<Link>,
}

impl Running {
    /// Stops the tasks and the children once HTTP serving has ended.
    fn stop(self) {
        for t in &self.tasks {
            t.abort();
        }
        if let Some(s) = &self.shared.sessions {
            s.stop_all();
        }
        self.link.stop();
    }
}

/// What the child said in its `initialize` answer.
struct Init {
    name: String,
    version: String,
    info: Value,
    instructions: Option<String>,
    capabilities: Value,
}

impl Init {
    fn clone_info(&self) -> Implementation {
        serde_json::from_value(self.info.clone())
            .unwrap_or_else(|_| Implementation::new(self.name.clone(), self.version.clone()))
    }
}

/// The handshake with the child: `initialize`, then `notifications/initialized`.
async fn handshake(link: &Arc<Link>) -> Result<Init, String> {
    let params = json!({
        "protocolVersion": CHILD_VERSION,
        // What the bridge can pass on to the client whose call the request
        // belongs to (the client's own capabilities are checked then).
        "capabilities": child::CLIENT_CAPABILITIES.clone(),
        "clientInfo": child::CLIENT_INFO.clone(),
    });
    let r = match link.request("initialize", params, None, None).await {
        Ok(r) => r,
        Err(e) => {
            // A child that only speaks 2026-07-28 refuses the handshake;
            // it answers server/discover, and every request then carries
            // the _meta envelope (the link adds it).
            link.set_modern(true);
            match link.request("server/discover", json!({}), None, None).await {
                Ok(r) => {
                    let info = r["_meta"][ferromcp_protocol::meta::SERVER_INFO].clone();
                    return Ok(Init {
                        name: info["name"].as_str().unwrap_or("stdio-server").to_owned(),
                        version: info["version"].as_str().unwrap_or("0").to_owned(),
                        info,
                        instructions: r["instructions"].as_str().map(str::to_owned),
                        capabilities: r.get("capabilities").cloned().unwrap_or(Value::Null),
                    });
                }
                Err(d) => {
                    link.set_modern(false);
                    return Err(format!(
                        "initialize: {}; server/discover: {}",
                        e.message, d.message
                    ));
                }
            }
        }
    };
    link.notify("notifications/initialized", json!({})).await;
    let info = r.get("serverInfo").cloned().unwrap_or(Value::Null);
    Ok(Init {
        name: info["name"].as_str().unwrap_or("stdio-server").to_owned(),
        version: info["version"].as_str().unwrap_or("0").to_owned(),
        info,
        instructions: r["instructions"].as_str().map(str::to_owned),
        capabilities: r.get("capabilities").cloned().unwrap_or(Value::Null),
    })
}

/// Every item of a list method (`tools/list`, `resources/list`, …) the
/// child answers, following cursors up to [`MAX_LIST_PAGES`] pages.
async fn list_all(link: &Arc<Link>, method: &str, key: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let mut r = link
            .request(method, params, None, None)
            .await
            .map_err(|e| e.message.clone())?;
        if let Some(Value::Array(items)) = r.get_mut(key).map(Value::take) {
            out.extend(items);
        }
        cursor = r["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    Ok(out)
}

/// Items of a list, typed; a malformed one is reported and left out.
fn typed<T: serde::de::DeserializeOwned>(
    items: Vec<Value>,
    method: &str,
    report: &Report,
) -> Vec<T> {
    items
        .into_iter()
        .filter_map(|v| match serde_json::from_value(v) {
            Ok(t) => Some(t),
            Err(e) => {
                report(&format!(
                    "an item of the stdio server's {method} answer is malformed ({e}); left out"
                ));
                None
            }
        })
        .collect()
}

/// Every tool the child lists.
async fn list_tools(link: &Arc<Link>) -> Result<Vec<Tool>, String> {
    Ok(typed(
        list_all(link, "tools/list", "tools").await?,
        "tools/list",
        &link.report(),
    ))
}

/// Forwards a request to the child and types its result (see
/// [`forward_raw`]).
async fn forward<T: serde::de::DeserializeOwned>(
    x: &Shared,
    method: &str,
    params: Value,
    cx: &RequestContext,
    progress: Option<child::ProgressSink>,
) -> Result<T, HandlerError> {
    let r = forward_raw(x, method, params, cx, progress).await?;
    serde_json::from_str::<T>(r.get()).map_err(|e| {
        HandlerError::Protocol(ErrorObject::internal(format!(
            "the stdio server's {method} result is malformed: {e}"
        )))
    })
}

/// Whether a child's result is an `input_required` round (2026-07-28).
fn is_input_required(r: &serde_json::value::RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(rename = "resultType", borrow, default)]
        result_type: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_str::<Peek<'_>>(r.get())
        .is_ok_and(|p| p.result_type.as_deref() == Some("input_required"))
}

/// Forwards a request to the child and returns its result as the child
/// wrote it. A request the child sends meanwhile (elicitation, sampling, roots) is asked of this
/// caller: the handler returns it as input required, the call waits in
/// [`Parked`], and the handler's next run (with the caller's answer and
/// the server-sealed state naming the parked call) answers the child and
/// goes on waiting.
async fn forward_raw(
    x: &Shared,
    method: &str,
    params: Value,
    cx: &RequestContext,
    progress: Option<child::ProgressSink>,
) -> Result<Box<serde_json::value::RawValue>, HandlerError> {
    let cancel = cx.cancellation_token();
    let mut params = params;
    pass_meta(&mut params, cx);
    let resumed = cx
        .state()
        .and_then(|s| std::str::from_utf8(s).ok())
        .map(str::to_owned);
    let mut call = match resumed {
        Some(state) if state.starts_with(CHILD_STATE) => {
            // The retry of a 2026-07-28 child's input_required round: the
            // same request again, with the client's answers and the
            // child's requestState.
            if let Value::Object(p) = &mut params {
                let answers = cx.input_responses().map(|i| Value::Object(i.0.clone()));
                p.insert(
                    "inputResponses".into(),
                    answers.unwrap_or_else(|| json!({})),
                );
                p.insert(
                    "requestState".into(),
                    Value::String(state[CHILD_STATE.len()..].to_owned()),
                );
            }
            x.link_for(cx)
                .await
                .map_err(HandlerError::Protocol)?
                .start(method, params, progress, true)
                .await
                .map_err(HandlerError::Protocol)?
        }
        Some(key) => {
            let Some((call, ask_id)) = x.parked.take(&key) else {
                return Err(HandlerError::Protocol(ErrorObject::invalid_params(
                    "this input answer belongs to a call the bridge no longer holds (expired or already answered); call again",
                )));
            };
            let answer = cx
                .input_responses()
                .and_then(|i| i.get(&key))
                .cloned()
                .ok_or_else(|| ErrorObject::internal("the client did not answer"));
            call.link().respond(&ask_id, answer).await;
            call
        }
        None => x
            .link_for(cx)
            .await
            .map_err(HandlerError::Protocol)?
            .start(method, params, progress, true)
            .await
            .map_err(HandlerError::Protocol)?,
    };
    loop {
        match call.wait(Some(&cancel)).await {
            Wait::Answer(r) => {
                let r = r.map_err(HandlerError::Protocol)?;
                if is_input_required(&r) {
                    let r: Value = serde_json::from_str(r.get()).unwrap_or(Value::Null);
                    return Err(child_input_required(&r, cx));
                }
                return Ok(r);
            }
            Wait::Ask(ask) => match input_request(&ask) {
                Ok(req) if req.is_allowed_by(cx.client_capabilities()) => {
                    let id = ask.id.clone();
                    let key = x.parked.put(call, id).map_err(HandlerError::Protocol)?;
                    return Err(HandlerError::NeedInput(
                        InputRequired::new()
                            .request(key.clone(), req)
                            .state(key.into_bytes()),
                    ));
                }
                Ok(_) => {
                    let e = ErrorObject::internal(format!(
                        "the client behind the bridge does not support {}",
                        ask.method
                    ));
                    call.link().respond(&ask.id, Err(e)).await;
                }
                Err(e) => call.link().respond(&ask.id, Err(e)).await,
            },
        }
    }
}

/// Adds the caller's own `_meta` entries (those the protocol does not
/// define, and the W3C trace context) to `params`' `_meta`, keeping any
/// entry `params` already has: the mirror's typed params carry no
/// `_meta`, so without this a vendor entry a client put on `tools/call`
/// would not reach the child.
fn pass_meta(params: &mut Value, cx: &RequestContext) {
    let m = cx.meta();
    let trace = [
        ("traceparent", &m.traceparent),
        ("tracestate", &m.tracestate),
        ("baggage", &m.baggage),
    ];
    if m.other.is_empty() && trace.iter().all(|(_, v)| v.is_none()) {
        return;
    }
    let Value::Object(p) = params else {
        return;
    };
    let meta = p
        .entry("_meta")
        .or_insert_with(|| Value::Object(Default::default()));
    let Value::Object(meta) = meta else {
        return;
    };
    for (k, v) in &m.other {
        meta.entry(k.clone()).or_insert_with(|| v.clone());
    }
    for (k, v) in trace {
        if let Some(v) = v {
            meta.entry(k).or_insert_with(|| Value::String(v.clone()));
        }
    }
}

/// Marks a sealed state that is a 2026-07-28 child's own `requestState`.
const CHILD_STATE: &str = "child-state:";

/// A 2026-07-28 child's `input_required` result as the mirror's own: the
/// same keys and requests, and the child's state carried in the
/// server-sealed state, so the retry can be sent to the child as is.
fn child_input_required(r: &Value, cx: &RequestContext) -> HandlerError {
    let requests: ferromcp_protocol::types::InputRequests =
        match serde_json::from_value(r["inputRequests"].clone()) {
            Ok(v) => v,
            Err(e) => {
                return HandlerError::Protocol(ErrorObject::internal(format!(
                    "the stdio server's inputRequests are malformed: {e}"
                )));
            }
        };
    let mut ir = InputRequired::new();
    for (key, req) in requests {
        if !req.is_allowed_by(cx.client_capabilities()) {
            return HandlerError::Protocol(ErrorObject::internal(format!(
                "the client behind the bridge does not support {}",
                req.method()
            )));
        }
        ir = ir.request(key, req);
    }
    let state = r["requestState"].as_str().unwrap_or_default();
    HandlerError::NeedInput(ir.state(format!("{CHILD_STATE}{state}").into_bytes()))
}

/// The input request for a request of the child's.
fn input_request(ask: &child::Ask) -> Result<InputRequest, ErrorObject> {
    let bad = |e: serde_json::Error| ErrorObject::invalid_params(format!("{}: {e}", ask.method));
    match ask.method.as_str() {
        "elicitation/create" => Ok(InputRequest::Elicitation(
            serde_json::from_value(ask.params.clone()).map_err(bad)?,
        )),
        "sampling/createMessage" => Ok(InputRequest::Sampling(
            serde_json::from_value(ask.params.clone()).map_err(bad)?,
        )),
        "roots/list" => Ok(InputRequest::ListRoots(
            serde_json::from_value(ask.params.clone()).ok(),
        )),
        other => Err(ErrorObject::method_not_found(other)),
    }
}

/// Calls waiting for their caller's answer to a request of the child's,
/// by input key. Bounded; entries older than the call timeout are dropped
/// (which cancels their call at the child).
pub(crate) struct Parked {
    calls: std::sync::Mutex<
        std::collections::HashMap<String, (Call, RequestId, tokio::time::Instant)>,
    >,
    next: std::sync::atomic::AtomicU64,
    max: usize,
    ttl: Duration,
}

impl Parked {
    fn new(max: usize, ttl: Duration) -> Self {
        Self {
            calls: Default::default(),
            next: std::sync::atomic::AtomicU64::new(1),
            max: max.max(1),
            ttl,
        }
    }

    fn put(&self, call: Call, ask: RequestId) -> Result<String, ErrorObject> {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let key = format!("bridge-{n}");
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let ttl = self.ttl;
        calls.retain(|_, (_, _, at)| at.elapsed() < ttl);
        if calls.len() >= self.max {
            return Err(ErrorObject::internal(format!(
                "too many calls are waiting for their client's input (the limit is {})",
                self.max
            )));
        }
        calls.insert(key.clone(), (call, ask, tokio::time::Instant::now()));
        Ok(key)
    }

    fn take(&self, key: &str) -> Option<(Call, RequestId)> {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.remove(key).map(|(c, a, _)| (c, a))
    }
}

/// What every forwarding handler shares.
pub(crate) struct Shared {
    link: Arc<Link>,
    parked: Parked,
    /// With `--child-per-session`, the children of handshake sessions.
    sessions: Option<sessions::Sessions>,
}

impl Shared {
    /// The child serving `cx`: its session's with `--child-per-session`,
    /// else the shared one.
    async fn link_for(&self, cx: &RequestContext) -> Result<Arc<Link>, ErrorObject> {
        let session = cx
            .http_parts()
            .and_then(|p| p.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok());
        match (&self.sessions, session) {
            (Some(s), Some(id)) => s.link(id).await,
            _ => Ok(self.link.clone()),
        }
    }
}

/// A resource of the mirror server, read from the child.
fn resource_forwarder(r: Resource, x: &Arc<Shared>) -> ResourceDef {
    let x = x.clone();
    ResourceDef::raw(r, move |req: ResourceRequest, cx: RequestContext| {
        let x = x.clone();
        async move { read(&x, req, cx).await }
    })
}

/// A resource template of the mirror server, read from the child.
fn template_forwarder(t: ResourceTemplate, x: &Arc<Shared>) -> TemplateDef {
    let x = x.clone();
    TemplateDef::raw(t, move |req: ResourceRequest, cx: RequestContext| {
        let x = x.clone();
        async move { read(&x, req, cx).await }
    })
}

/// Forwards one `resources/read` to the child; its result goes to the
/// client as the child wrote it (as for [`call`]).
async fn read(
    x: &Shared,
    req: ResourceRequest,
    cx: RequestContext,
) -> Result<RawResult, HandlerError> {
    let r = forward_raw(x, "resources/read", json!({"uri": req.uri}), &cx, None).await?;
    raw_result(r, "resources/read")
}

/// The child's result of `method` as a [`RawResult`]: a JSON object, or
/// an internal error for the client.
fn raw_result(
    r: Box<serde_json::value::RawValue>,
    method: &str,
) -> Result<RawResult, HandlerError> {
    RawResult::new(r).map_err(|e| {
        HandlerError::Protocol(ErrorObject::internal(format!(
            "the stdio server's {method} result is malformed: {}",
            e.message
        )))
    })
}

/// A prompt of the mirror server, got from the child.
fn prompt_forwarder(p: Prompt, x: &Arc<Shared>) -> PromptDef {
    let name = p.name.clone();
    let b = prompt_from(p.name.clone(), p);
    let x = x.clone();
    b.handler(move |args: PromptArgs, cx: RequestContext| {
        let x = x.clone();
        let name = name.clone();
        async move {
            forward::<GetPromptResult>(
                &x,
                "prompts/get",
                json!({"name": name, "arguments": args}),
                &cx,
                None,
            )
            .await
        }
    })
}

/// A tool of the mirror server whose handler forwards the call to the child.
fn forwarder(t: Tool, x: &Arc<Shared>) -> ferromcp_server::ToolDef {
    let name = t.name.clone();
    let b = tool_from(t.name.clone(), t);
    let x = x.clone();
    b.raw_result_handler(move |args, cx: RequestContext| {
        let x = x.clone();
        let name = name.clone();
        async move { call(&x, &name, args, cx).await }
    })
}

/// Forwards one `tools/call` to the child; its result goes to the client
/// as the child wrote it (unknown members included), the server adding
/// only what it adds to every result.
async fn call(
    x: &Shared,
    name: &str,
    args: ferromcp_protocol::types::JsonObject,
    cx: RequestContext,
) -> Result<RawResult, HandlerError> {
    let progress = progress_sink(&cx);
    let r = forward_raw(
        x,
        "tools/call",
        json!({"name": name, "arguments": args}),
        &cx,
        progress,
    )
    .await?;
    raw_result(r, "tools/call")
}

/// The `_meta` keys of the 2026-07-28 envelope: the mirror answers for
/// them (the link writes its own for a 2026-07-28 child; a handshake
/// child has no use for them).
const ENVELOPE_KEYS: [&str; 4] = [
    ferromcp_protocol::meta::PROTOCOL_VERSION,
    ferromcp_protocol::meta::CLIENT_CAPABILITIES,
    ferromcp_protocol::meta::CLIENT_INFO,
    ferromcp_protocol::meta::LOG_LEVEL,
];

/// Forwards a method the mirror does not implement to the child: the
/// params as the client sent them (unknown members and `_meta` entries
/// included; the envelope is the link's), and the child's result or error
/// back unchanged. The child's requests meanwhile reach this caller as
/// for a tool call.
async fn passthrough(
    x: &Shared,
    req: FallbackRequest,
    cx: RequestContext,
) -> Result<Value, HandlerError> {
    let (method, params) = req.into_parts();
    if is_disguised(&method) {
        return Err(HandlerError::Protocol(ErrorObject::method_not_found(
            &method,
        )));
    }
    // JSON-RPC params are an object or an array; none becomes `{}`.
    let mut params = params.unwrap_or_else(|| json!({}));
    strip_envelope(&mut params);
    let progress = progress_sink(&cx);
    forward(x, &method, params, &cx, progress).await
}

/// Removes the 2026-07-28 envelope's `_meta` entries from `params` (and
/// `_meta` when nothing else is left in it).
fn strip_envelope(params: &mut Value) {
    if let Some(Value::Object(meta)) = params.get_mut("_meta") {
        for k in ENVELOPE_KEYS {
            meta.remove(k);
        }
        if meta.is_empty() {
            if let Value::Object(p) = params {
                p.remove("_meta");
            }
        }
    }
}

/// Passes a client's notification on to the child, by this rule:
/// `notifications/roots/list_changed` only to the client's own session
/// child (`--child-per-session`, once that child runs): a shared child
/// serves many clients, each with its own roots, and asks for roots
/// within a call (the bridge routes that `roots/list` to the caller), so
/// one client's change says nothing about the roots the next call will
/// see; an extension notification (a method the protocol does not
/// define) to the child serving the session (its own with
/// `--child-per-session`, else the shared one), params as sent minus the
/// 2026-07-28 envelope, unless a tool filter is set (as for extension
/// requests); `notifications/progress` and any other protocol
/// notification is the mirror's and stays there.
async fn pass_notification(x: &Shared, n: ClientNotification, open: bool) {
    let method = n.method();
    let link = if method == ferromcp_protocol::method::NOTIFICATIONS_ROOTS_LIST_CHANGED {
        match (&x.sessions, n.session_id()) {
            (Some(s), Some(id)) => s.existing(id),
            _ => None,
        }
    } else if !open || is_protocol_notification(method) {
        None
    } else {
        match (&x.sessions, n.session_id()) {
            (Some(s), Some(id)) => s.link(id).await.ok(),
            _ => Some(x.link.clone()),
        }
    };
    let Some(link) = link else {
        return;
    };
    let (method, params) = n.into_parts();
    let mut params = params.unwrap_or_else(|| json!({}));
    strip_envelope(&mut params);
    link.notify(&method, params).await;
}

/// Whether `method` is (a disguise of) a notification the protocol
/// defines for clients.
fn is_protocol_notification(method: &str) -> bool {
    use ferromcp_protocol::method as m;
    let plain = method.trim().to_ascii_lowercase();
    [
        m::NOTIFICATIONS_CANCELLED,
        m::NOTIFICATIONS_INITIALIZED,
        m::NOTIFICATIONS_PROGRESS,
        m::NOTIFICATIONS_ROOTS_LIST_CHANGED,
    ]
    .contains(&plain.as_str())
}

/// Whether `method` is a method the mirror serves itself in disguise
/// (`TOOLS/CALL`, `tools/call `): not an extension, and not passed on,
/// since a lenient child could serve it past the mirror's own checks.
fn is_disguised(method: &str) -> bool {
    let plain = method.trim().to_ascii_lowercase();
    ferromcp_protocol::method::known_client_method(&plain).is_some()
}

/// A sink passing the child's progress on to `cx`'s caller, when it asked
/// for progress.
fn progress_sink(cx: &RequestContext) -> Option<child::ProgressSink> {
    cx.progress_token().is_some().then(|| {
        let cx = cx.clone();
        Box::new(move |p: f64, total: Option<f64>, message: Option<String>| {
            cx.progress(p, total, message.as_deref());
        }) as child::ProgressSink
    })
}

/// Restarts the child whenever it exits, with backoff, and initializes it
/// again.
async fn supervise(
    link: Arc<Link>,
    program: String,
    args: Vec<String>,
    restart: Restart,
    report: Report,
    mut exited: tokio::sync::oneshot::Receiver<String>,
) {
    let mut wait = restart.initial;
    let mut started = tokio::time::Instant::now();
    loop {
        let why = (&mut exited)
            .await
            .unwrap_or_else(|_| "its reader stopped".to_owned());
        if started.elapsed() >= restart.reset_after {
            wait = restart.initial;
        }
        report(&format!(
            "the stdio server exited ({why}); restarting in {} ms",
            wait.as_millis()
        ));
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(restart.max);
        started = tokio::time::Instant::now();
        match link.spawn(&program, &args) {
            Ok(rx) => {
                exited = rx;
                match handshake(&link).await {
                    Ok(_) => {
                        report("the stdio server was restarted");
                        link.tools_changed.notify_one();
                        link.resources_changed.notify_one();
                        link.prompts_changed.notify_one();
                    }
                    Err(e) => report(&format!(
                        "the restarted stdio server did not initialize: {e}"
                    )),
                }
            }
            Err(e) => {
                report(&e);
                let (tx, rx) = tokio::sync::oneshot::channel();
                let _ = tx.send(e);
                exited = rx;
            }
        }
    }
}

/// Keeps the mirror's tools in step with the child's after
/// `notifications/tools/list_changed` or a restart.
async fn refresh_tools(
    x: Arc<Shared>,
    server: Server,
    filter: ToolFilter,
    mut registered: HashSet<String>,
) {
    loop {
        x.link.tools_changed.notified().await;
        let Ok(tools) = list_tools(&x.link).await else {
            continue;
        };
        let mut now = HashSet::new();
        for t in tools {
            if !filter.permits(&t.name) {
                continue;
            }
            now.insert(t.name.clone());
            let name = t.name.clone();
            // One registry swap: a call arriving during the refresh (a
            // client retrying right after a restart) never finds the tool
            // missing.
            if let Err(e) = server.replace_tool(forwarder(t, &x)) {
                (x.link.report())(&format!(
                    "the stdio server's tool {name:?} cannot be served ({e}); left out"
                ));
            }
        }
        for gone in registered.difference(&now) {
            server.remove_tool(gone);
        }
        registered = now;
    }
}

/// Subscribes at the child to every resource in `uris` (clients subscribe
/// at the mirror, which passes the child's updates to its subscribers).
async fn subscribe_all(link: &Arc<Link>, uris: &HashSet<String>) {
    for uri in uris {
        let _ = link
            .request("resources/subscribe", json!({"uri": uri}), None, None)
            .await;
    }
}

/// Keeps the mirror's resources and prompts in step with the child's
/// (after list changes and restarts) and passes resource updates on to
/// the mirror's subscribers and listeners.
async fn refresh_others(
    x: Arc<Shared>,
    server: Server,
    mut resources: HashSet<String>,
    mut prompts: HashSet<String>,
    subscribe: bool,
) {
    let updates = x
        .link
        .updates_rx
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    let Some(mut updates) = updates else {
        return;
    };
    loop {
        tokio::select! {
            Some(uri) = updates.recv() => server.notify_resource_updated(uri),
            _ = x.link.resources_changed.notified() => {
                let Ok(items) = list_all(&x.link, "resources/list", "resources").await else {
                    continue;
                };
                let items = typed::<Resource>(items, "resources/list", &x.link.report());
                let mut now = HashSet::new();
                for r in items {
                    let uri = r.uri.clone();
                    now.insert(uri.clone());
                    // One registry swap per resource (never missing).
                    let _ = server.update_resources([uri.as_str()], vec![resource_forwarder(r, &x)]);
                }
                for gone in resources.difference(&now) {
                    server.remove_resource(gone);
                }
                if subscribe {
                    subscribe_all(&x.link, &now).await;
                }
                resources = now;
            }
            _ = x.link.prompts_changed.notified() => {
                let Ok(items) = list_all(&x.link, "prompts/list", "prompts").await else {
                    continue;
                };
                let items = typed::<Prompt>(items, "prompts/list", &x.link.report());
                let mut now = HashSet::new();
                for p in items {
                    now.insert(p.name.clone());
                    let _ = server.replace_prompt(prompt_forwarder(p, &x));
                }
                for gone in prompts.difference(&now) {
                    server.remove_prompt(gone);
                }
                prompts = now;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(method: &str, params: Value) -> child::Ask {
        child::Ask {
            id: RequestId::number(1),
            method: method.to_owned(),
            params,
        }
    }

    #[test]
    fn known_methods_in_disguise_are_not_extensions() {
        for m in [
            "TOOLS/CALL",
            "tools/call ",
            " Tools/List",
            "INITIALIZE",
            "Ping",
        ] {
            assert!(is_disguised(m), "{m}");
        }
        for m in ["acme/ping", "io.example/thing", "tools/callx", "tools"] {
            assert!(!is_disguised(m), "{m}");
        }
    }

    #[test]
    fn the_childs_requests_map_to_input_requests() {
        let e = input_request(&ask(
            "elicitation/create",
            json!({"mode": "form", "message": "m", "requestedSchema": {"type": "object", "properties": {}}}),
        ));
        assert!(matches!(e, Ok(InputRequest::Elicitation(_))), "{e:?}");
        let r = input_request(&ask("roots/list", Value::Null));
        assert!(matches!(r, Ok(InputRequest::ListRoots(None))), "{r:?}");
        let bad = input_request(&ask("sampling/createMessage", json!({"messages": 3})));
        assert_eq!(
            bad.err().map(|e| e.code),
            Some(ferromcp_protocol::ErrorCode::INVALID_PARAMS)
        );
        let unknown = input_request(&ask("x/unknown", json!({})));
        assert_eq!(
            unknown.err().map(|e| e.code),
            Some(ferromcp_protocol::ErrorCode::METHOD_NOT_FOUND)
        );
    }

    #[tokio::test]
    async fn parked_calls_are_bounded_single_use_and_expire() {
        let settings = Settings {
            max_in_flight: 8,
            max_message: 1024,
            timeout: Duration::from_secs(30),
        };
        let (link, mut rx) = Link::fake(settings);
        let mut calls = Vec::new();
        for _ in 0..3 {
            match link.start("tools/call", json!({}), None, true).await {
                Ok(c) => calls.push(c),
                Err(e) => panic!("{e:?}"),
            }
        }
        while rx.try_recv().is_ok() {}
        let parked = Parked::new(2, Duration::from_secs(60));
        let mut keys = Vec::new();
        for c in calls.drain(..2) {
            keys.push(
                parked
                    .put(c, RequestId::number(9))
                    .unwrap_or_else(|e| panic!("{e:?}")),
            );
        }
        let third = calls.pop().unwrap_or_else(|| panic!("no third call"));
        assert!(
            parked.put(third, RequestId::number(9)).is_err(),
            "the bound"
        );
        assert!(parked.take(&keys[0]).is_some());
        assert!(parked.take(&keys[0]).is_none(), "single use");
        // An entry past its time is dropped, and its call cancelled at the child.
        let short = Parked::new(4, Duration::ZERO);
        let c = match link.start("tools/call", json!({}), None, true).await {
            Ok(c) => c,
            Err(e) => panic!("{e:?}"),
        };
        while rx.try_recv().is_ok() {}
        let key = short
            .put(c, RequestId::number(1))
            .unwrap_or_else(|e| panic!("{e:?}"));
        let other = match link.start("tools/call", json!({}), None, true).await {
            Ok(c) => c,
            Err(e) => panic!("{e:?}"),
        };
        while rx.try_recv().is_ok() {}
        let _ = short.put(other, RequestId::number(2));
        assert!(short.take(&key).is_none());
        let cancel = rx.try_recv().unwrap_or_default();
        assert!(String::from_utf8_lossy(&cancel).contains("notifications/cancelled"));
    }
}
