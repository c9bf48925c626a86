//! The client-facing catalogue: every upstream's tools and prompts under
//! `PREFIX` + separator + name, resources and templates under their own
//! URIs, registered in the gateway's `Server` with handlers forwarding to
//! the upstream that owns them.
//!
//! Policy is enforced by registration: a tool the upstream's filter does
//! not permit is never registered, so it is absent from `tools/list` and a
//! call to it (or to any name the gateway did not register, case variants
//! included, since names compare exactly) is refused by the server before
//! any upstream sees it.
//!
//! Collisions (two upstreams claiming one client-facing name or URI) are
//! decided by name order: the upstream first in name order owns it, the
//! other's item is reported and left out, whichever connected first.

use crate::metrics::Outcome;
use crate::naming;
use crate::read_cache::{self, ReadCache};
use crate::upstream::{Failure, Snapshot, Upstream};
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::types::{
    CallToolResult, CompleteRequestParams, Completion, CompletionReference, ContentBlock,
    GetPromptResult, JsonObject, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use ferromcp_server::{
    HandlerError, PromptArgs, PromptDef, RequestContext, ResourceDef, ResourceRequest, Server,
    TemplateDef, ToolDef, prompt_from, tool_from,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Where problems are reported (the CLI prints to stderr).
pub type Report = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    Tool,
    Prompt,
    Resource,
    Template,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
            Kind::Template => "resource template",
        }
    }
}

/// One item an upstream offers, ready to register.
enum Item {
    Tool(ToolDef),
    Prompt(PromptDef),
    Resource(ResourceDef),
    Template(TemplateDef),
}

/// What one sync changes, by kind.
#[derive(Default)]
struct Parts {
    gone_tools: Vec<String>,
    gone_prompts: Vec<String>,
    gone_resources: Vec<String>,
    gone_templates: Vec<String>,
    tools: Vec<(String, ToolDef)>,
    prompts: Vec<(String, PromptDef)>,
    resources: Vec<(String, ResourceDef)>,
    templates: Vec<(String, TemplateDef)>,
}

/// A sync's changes and the owners they give.
#[derive(Default)]
struct Batch {
    parts: Parts,
    owners: Vec<((Kind, String), Owner)>,
}

impl Batch {
    fn remove(&mut self, (kind, name): (Kind, String)) {
        match kind {
            Kind::Tool => self.parts.gone_tools.push(name),
            Kind::Prompt => self.parts.gone_prompts.push(name),
            Kind::Resource => self.parts.gone_resources.push(name),
            Kind::Template => self.parts.gone_templates.push(name),
        }
    }

    fn add(&mut self, (_, name): (Kind, String), item: Item) {
        match item {
            Item::Tool(d) => self.parts.tools.push((name, d)),
            Item::Prompt(d) => self.parts.prompts.push((name, d)),
            Item::Resource(d) => self.parts.resources.push((name, d)),
            Item::Template(d) => self.parts.templates.push((name, d)),
        }
    }
}

/// Who serves a client-facing name: the upstream and its own name for it.
struct Owner {
    name: String,
    up: Arc<Upstream>,
    own: String,
    /// A tool's client-facing definition (what `search_tools` ranks).
    tool: Option<Arc<Tool>>,
    /// A digest of the upstream's definition of the item: a re-list that
    /// finds it unchanged leaves it registered as it is (no registry swap,
    /// no `list_changed` for its kind).
    digest: u64,
}

/// A digest of an upstream's definition of an item (its JSON).
fn digest<T: serde::Serialize>(item: &T) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_vec(item).unwrap_or_default().hash(&mut h);
    h.finish()
}

/// The gateway's server and who owns each client-facing name.
pub(crate) struct Aggregate {
    server: Server,
    separator: String,
    report: Report,
    /// The owner of each client-facing name.
    owners: Mutex<HashMap<(Kind, String), Owner>>,
    /// Bumped whenever the catalogue may have changed (a sync, a removed
    /// upstream): the tool search re-indexes when it moved.
    generation: AtomicU64,
    /// `resources/read` results kept by the upstreams' hints.
    reads: Arc<ReadCache>,
    /// Every configured upstream, connected or not (their list hints
    /// make the gateway's).
    ups: Mutex<BTreeMap<String, Arc<Upstream>>>,
}

impl Aggregate {
    pub(crate) fn new(server: Server, separator: String, report: Report) -> Self {
        Self {
            server,
            separator,
            report,
            owners: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
            reads: Arc::new(ReadCache::new(&crate::cache::CacheConfig::default())),
            ups: Mutex::new(BTreeMap::new()),
        }
    }

    /// Bounds its `resources/read` cache by `c`.
    pub(crate) fn with_cache(mut self, c: &crate::cache::CacheConfig) -> Self {
        self.reads = Arc::new(ReadCache::new(c));
        self
    }

    /// The catalogue's generation and its tools (client-facing
    /// definitions), in name order.
    pub(crate) fn tools(&self) -> (u64, Vec<Arc<Tool>>) {
        let owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        let generation = self.generation.load(Ordering::Acquire);
        let mut tools: Vec<Arc<Tool>> = owners.values().filter_map(|o| o.tool.clone()).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        (generation, tools)
    }

    /// The upstream serving the client-facing tool `name` (compared
    /// exactly, like the server's own registry) and its own name for it.
    pub(crate) fn tool_route(&self, name: &str) -> Option<(Arc<Upstream>, String)> {
        let owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        owners
            .get(&(Kind::Tool, name.to_owned()))
            .map(|o| (o.up.clone(), o.own.clone()))
    }

    /// Makes the server's items of `up` match `snap`: new ones added,
    /// changed ones replaced (one registry swap each), vanished ones
    /// removed; each name checked for policy, validity and collisions.
    pub(crate) fn sync(&self, up: &Arc<Upstream>, snap: Snapshot) {
        up.listed.store(snap.fingerprint(), Ordering::Release);
        // CACHE-10: what it offers may have changed; its reads too.
        self.reads.drop_upstream(up.name());
        *up.uris.lock().unwrap_or_else(|p| p.into_inner()) =
            snap.resources.iter().map(|r| r.uri.clone()).collect();
        let mut items: BTreeMap<(Kind, String), (Item, u64)> = BTreeMap::new();
        let mut own_names: HashMap<(Kind, String), String> = HashMap::new();
        let name = up.name().to_owned();
        for t in snap.tools {
            if !up.cfg.filter().permits(&t.name) {
                continue;
            }
            let exposed = naming::exposed(up.cfg.prefix(), &self.separator, &t.name);
            if !naming::is_valid_tool_name(&exposed) {
                (self.report)(&format!(
                    "upstream {name:?}: tool {:?} would be exposed as {exposed:?}, which breaks the tool-name rules (1-128 characters of A-Z a-z 0-9 _ . -); skipped",
                    t.name
                ));
                continue;
            }
            own_names.insert((Kind::Tool, exposed.clone()), t.name.clone());
            let d = digest(&t);
            items.insert(
                (Kind::Tool, exposed.clone()),
                (Item::Tool(tool_def(exposed, t, up)), d),
            );
        }
        for p in snap.prompts {
            let exposed = naming::exposed(up.cfg.prefix(), &self.separator, &p.name);
            own_names.insert((Kind::Prompt, exposed.clone()), p.name.clone());
            let d = digest(&p);
            items.insert(
                (Kind::Prompt, exposed.clone()),
                (Item::Prompt(prompt_def(exposed, p, up)), d),
            );
        }
        for r in snap.resources {
            let d = digest(&r);
            items.insert(
                (Kind::Resource, r.uri.clone()),
                (Item::Resource(resource_def(r, up, &self.reads)), d),
            );
        }
        for t in snap.templates {
            if let Err(e) = ferromcp_server::uri_template::UriTemplate::parse(&t.uri_template) {
                (self.report)(&format!(
                    "upstream {name:?}: resource template {:?} is invalid ({e}); skipped",
                    t.uri_template
                ));
                continue;
            }
            let d = digest(&t);
            items.insert(
                (Kind::Template, t.uri_template.clone()),
                (Item::Template(template_def(t, up, &self.reads)), d),
            );
        }
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        // Gone: what this upstream owned and no longer lists.
        let gone: Vec<(Kind, String)> = owners
            .iter()
            .filter(|(k, r)| r.name == name && !items.contains_key(*k))
            .map(|(k, _)| k.clone())
            .collect();
        for key in &gone {
            owners.remove(key);
        }
        // Accepted items, by kind, applied in one registry swap (and one
        // list_changed) per kind.
        let mut batch = Batch::default();
        for key in gone {
            batch.remove(key);
        }
        for (key, (item, digest)) in items {
            // Unchanged since the last sync (same upstream connection, same
            // definition): left as it is.
            if owners
                .get(&key)
                .is_some_and(|o| Arc::ptr_eq(&o.up, up) && o.digest == digest)
            {
                continue;
            }
            match owners.get(&key).map(|o| o.name.as_str()) {
                Some(r) if r < name.as_str() => {
                    (self.report)(&format!(
                        "upstream {name:?}: {} {:?} collides with one of an upstream earlier in name order; skipped",
                        key.0.noun(),
                        key.1
                    ));
                    continue;
                }
                Some(r) if r > name.as_str() => {
                    (self.report)(&format!(
                        "upstream {name:?}: {} {:?} collides with one of an upstream later in name order, which loses it",
                        key.0.noun(),
                        key.1
                    ));
                }
                _ => {}
            }
            let own = match &item {
                Item::Tool(_) | Item::Prompt(_) => own_names.remove(&key).unwrap_or_default(),
                Item::Resource(_) | Item::Template(_) => key.1.clone(),
            };
            let tool = match &item {
                Item::Tool(d) => Some(Arc::new(d.definition().clone())),
                _ => None,
            };
            batch.owners.push((
                key.clone(),
                Owner {
                    name: name.clone(),
                    up: up.clone(),
                    own,
                    tool,
                    digest,
                },
            ));
            batch.add(key, item);
        }
        let mut refused_keys = std::collections::HashSet::new();
        for (key, refused) in self.apply(batch.parts) {
            (self.report)(&format!(
                "upstream {name:?}: {} {:?} cannot be served ({refused}); skipped",
                key.0.noun(),
                key.1
            ));
            refused_keys.insert(key);
        }
        for (key, owner) in batch.owners {
            if !refused_keys.contains(&key) {
                owners.insert(key, owner);
            }
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Applies one batch: per kind, removals and additions in one swap;
    /// when the swap is refused (one definition the server will not take)
    /// the items are registered one by one instead. Returns the refused
    /// ones.
    fn apply(&self, p: Parts) -> Vec<((Kind, String), ferromcp_server::Error)> {
        let mut refused = Vec::new();
        let keys = |v: &[(String, ToolDef)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        let tool_names: Vec<String> = p.gone_tools.iter().cloned().chain(keys(&p.tools)).collect();
        let defs: Vec<ToolDef> = p.tools.iter().map(|(_, d)| d.clone()).collect();
        if (!tool_names.is_empty())
            && self
                .server
                .update_tools(tool_names.iter().map(String::as_str), defs)
                .is_err()
        {
            for n in &p.gone_tools {
                self.server.remove_tool(n);
            }
            for (k, d) in p.tools {
                if let Err(e) = self.server.replace_tool(d) {
                    refused.push(((Kind::Tool, k), e));
                }
            }
        }
        let prompt_names: Vec<String> = p
            .gone_prompts
            .iter()
            .cloned()
            .chain(p.prompts.iter().map(|(k, _)| k.clone()))
            .collect();
        let defs: Vec<PromptDef> = p.prompts.iter().map(|(_, d)| d.clone()).collect();
        if (!prompt_names.is_empty())
            && self
                .server
                .update_prompts(prompt_names.iter().map(String::as_str), defs)
                .is_err()
        {
            for n in &p.gone_prompts {
                self.server.remove_prompt(n);
            }
            for (k, d) in p.prompts {
                if let Err(e) = self.server.replace_prompt(d) {
                    refused.push(((Kind::Prompt, k), e));
                }
            }
        }
        let uris: Vec<String> = p
            .gone_resources
            .iter()
            .cloned()
            .chain(p.resources.iter().map(|(k, _)| k.clone()))
            .collect();
        let defs: Vec<ResourceDef> = p.resources.iter().map(|(_, d)| d.clone()).collect();
        if (!uris.is_empty())
            && self
                .server
                .update_resources(uris.iter().map(String::as_str), defs)
                .is_err()
        {
            for u in &p.gone_resources {
                self.server.remove_resource(u);
            }
            for (k, d) in p.resources {
                if let Err(e) = self.server.update_resources([k.as_str()], vec![d]) {
                    refused.push(((Kind::Resource, k), e));
                }
            }
        }
        for t in &p.gone_templates {
            self.server.remove_resource_template(t);
        }
        for (k, d) in p.templates {
            self.server.remove_resource_template(&k);
            if let Err(e) = self.server.add_resource_template(d) {
                refused.push(((Kind::Template, k), e));
            }
        }
        refused
    }

    /// Removes every item the upstream called `name` owns.
    pub(crate) fn forget(&self, name: &str) {
        self.reads.drop_upstream(name);
        self.ups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        let gone: Vec<(Kind, String)> = owners
            .iter()
            .filter(|(_, r)| r.name == name)
            .map(|(k, _)| k.clone())
            .collect();
        for key in gone {
            owners.remove(&key);
            self.remove(&key);
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Passes an upstream's `notifications/resources/updated` on to the
    /// gateway's subscribers, unless the URI is another upstream's (an
    /// upstream cannot announce updates of resources it does not serve).
    pub(crate) fn resource_updated(&self, upstream: &str, uri: &str) {
        // CACHE-10: its cached reads of the URI are stale now.
        self.reads.drop_uri(upstream, uri);
        let theirs = {
            let owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            owners
                .get(&(Kind::Resource, uri.to_owned()))
                .is_some_and(|o| o.name != upstream)
        };
        if theirs {
            (self.report)(&format!(
                "upstream {upstream:?} announced an update of {uri:?}, which another upstream serves; dropped"
            ));
            return;
        }
        self.server.notify_resource_updated(uri);
    }

    /// Forwards `completion/complete` to the upstream owning the prompt
    /// or resource template it is about, under its own prompt name.
    pub(crate) async fn complete(
        &self,
        p: CompleteRequestParams,
        cx: &RequestContext,
    ) -> Result<Completion, HandlerError> {
        let (kind, key) = match &p.reference {
            CompletionReference::Prompt(r) => (Kind::Prompt, r.name.clone()),
            CompletionReference::ResourceTemplate(r) => (Kind::Template, r.uri.clone()),
        };
        let route = {
            let owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            owners
                .get(&(kind, key.clone()))
                .map(|o| (o.up.clone(), o.own.clone()))
        };
        let Some((up, own)) = route else {
            return Err(HandlerError::invalid_params(format!(
                "no {} {key:?} to complete",
                kind.noun()
            )));
        };
        let mut p = p;
        if let CompletionReference::Prompt(r) = &mut p.reference {
            r.name = own;
        }
        let params = match serde_json::to_value(&p) {
            Ok(Value::Object(m)) => m,
            _ => JsonObject::new(),
        };
        let v = up
            .request_for("completion/complete", params, Some(cx))
            .await
            .map_err(|f| protocol_error(&up, "completion/complete", f))?;
        serde_json::from_value::<Completion>(v.get("completion").cloned().unwrap_or(Value::Null))
            .map_err(|e| {
                HandlerError::Protocol(ErrorObject::internal(format!(
                    "upstream {:?} sent a malformed completion/complete result: {e}",
                    up.name()
                )))
            })
    }

    /// Counts `up` among the upstreams whose list hints make the
    /// gateway's (until [`Aggregate::forget`]).
    pub(crate) fn register(&self, up: &Arc<Upstream>) {
        self.ups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(up.name().to_owned(), up.clone());
    }

    // CACHE-01, CACHE-04
    /// The hints the gateway's lists may carry now: the smallest time left
    /// of every upstream's smallest list `ttlMs`, `public` when every
    /// upstream's pages were; the default (0, private) when any upstream
    /// is down, not listed, or gave a page without a positive `ttlMs`.
    pub(crate) fn list_hint(&self) -> ferromcp_protocol::types::CacheHint {
        use ferromcp_protocol::types::{CacheHint, CacheScope};
        let ups = self.ups.lock().unwrap_or_else(|p| p.into_inner());
        if ups.is_empty() {
            return CacheHint::UNCACHED;
        }
        let now = tokio::time::Instant::now();
        let mut left = std::time::Duration::MAX;
        let mut public = true;
        for u in ups.values() {
            if u.current().is_none() {
                return CacheHint::UNCACHED;
            }
            let Some(h) = u.refresh.last() else {
                return CacheHint::UNCACHED;
            };
            let Some(ttl) = h.min_ttl.filter(|_| !h.uncached) else {
                return CacheHint::UNCACHED;
            };
            left = left.min((h.at + ttl).saturating_duration_since(now));
            public &= h.all_public;
        }
        let ttl_ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
        if ttl_ms == 0 {
            return CacheHint::UNCACHED;
        }
        CacheHint {
            ttl_ms,
            scope: if public {
                CacheScope::Public
            } else {
                CacheScope::Private
            },
        }
    }

    /// Drops every cached read of the upstream called `name` (it was lost).
    pub(crate) fn drop_reads(&self, name: &str) {
        self.reads.drop_upstream(name);
    }

    /// What joins a prefix and a name.
    pub(crate) fn separator(&self) -> &str {
        &self.separator
    }

    fn remove(&self, key: &(Kind, String)) {
        match key.0 {
            Kind::Tool => drop(self.server.remove_tool(&key.1)),
            Kind::Prompt => drop(self.server.remove_prompt(&key.1)),
            Kind::Resource => drop(self.server.remove_resource(&key.1)),
            Kind::Template => drop(self.server.remove_resource_template(&key.1)),
        }
    }
}

/// The JSON-RPC error for a failed forward of anything but a tool call.
fn protocol_error(up: &Upstream, method: &str, f: Failure) -> HandlerError {
    match f {
        Failure::Rpc(mut e) => {
            e.message = up.explain(method, &Failure::Rpc(e.clone()));
            HandlerError::Protocol(e)
        }
        other => HandlerError::Protocol(ErrorObject::internal(up.explain(method, &other))),
    }
}

fn params(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn typed<T: serde::de::DeserializeOwned>(
    up: &Upstream,
    method: &str,
    mut v: Value,
) -> Result<T, HandlerError> {
    // The upstream's protocol keys (its serverInfo, …) describe the
    // upstream, not the gateway: the gateway's server stamps its own.
    if let Some(Value::Object(meta)) = v.get_mut("_meta") {
        meta.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
        if meta.is_empty()
            && let Value::Object(o) = &mut v
        {
            o.remove("_meta");
        }
    }
    // CACHE-07: a negative ttlMs counts as 0 (it would not parse).
    if let Some(t) = v.get_mut("ttlMs")
        && t.as_u64().is_none()
        && t.is_number()
    {
        *t = Value::from(0);
    }
    if v.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return Err(HandlerError::Protocol(ErrorObject::internal(format!(
            "upstream {:?} asked for input during {method}, which the gateway relays only for tools/call, prompts/get and resources/read",
            up.name()
        ))));
    }
    serde_json::from_value(v).map_err(|e| {
        HandlerError::Protocol(ErrorObject::internal(format!(
            "upstream {:?} sent a malformed {method} result: {e}",
            up.name()
        )))
    })
}

/// Forwards a `tools/call` to `up` under its own name `own`.
pub(crate) async fn call_tool(
    up: Arc<Upstream>,
    own: String,
    args: JsonObject,
    cx: RequestContext,
) -> Result<CallToolResult, HandlerError> {
    let start = std::time::Instant::now();
    let sent = params(json!({"name": &own, "arguments": args}));
    let r = match crate::relay::request(&up, "tools/call", sent, &cx).await {
        Ok(r) => r,
        // An input round is not a call's end (the retry is counted); a
        // refused relay is.
        Err(e) => {
            if !e.is_need_input() {
                up.metrics
                    .record_call(up.name(), &own, Outcome::Other, start.elapsed());
            }
            return Err(e);
        }
    };
    let (outcome, answer) = match r {
        Ok(v) => match typed::<CallToolResult>(&up, "tools/call", v) {
            Ok(res) if res.is_error == Some(true) => (Outcome::ToolError, Ok(res)),
            Ok(res) => (Outcome::Ok, Ok(res)),
            Err(e) => (Outcome::Other, Err(e)),
        },
        // The upstream's own JSON-RPC errors (unknown tool, bad
        // arguments) stay JSON-RPC errors, naming the upstream.
        Err(f @ Failure::Rpc(_)) => (Outcome::RpcError, Err(protocol_error(&up, "tools/call", f))),
        // Everything else is a tool error the model can read.
        Err(f) => (
            outcome_of(&f),
            Ok(CallToolResult::error(vec![ContentBlock::text(
                up.explain("tools/call", &f),
            )])),
        ),
    };
    up.metrics
        .record_call(up.name(), &own, outcome, start.elapsed());
    answer
}

/// The metrics outcome of a failed forward.
fn outcome_of(f: &Failure) -> Outcome {
    match f {
        Failure::Down => Outcome::Down,
        Failure::Timeout => Outcome::Timeout,
        Failure::Auth(_) => Outcome::Auth,
        Failure::Rpc(_) => Outcome::RpcError,
        Failure::Broken(_) => Outcome::Broken,
        Failure::Other(_) => Outcome::Other,
        Failure::Open(_) => Outcome::BreakerOpen,
    }
}

/// A tool whose handler forwards `tools/call` under the upstream's own name.
fn tool_def(exposed: String, t: Tool, up: &Arc<Upstream>) -> ToolDef {
    let own = t.name.clone();
    let b = tool_from(exposed, t);
    let up = up.clone();
    b.raw_handler(move |args: JsonObject, cx: RequestContext| {
        call_tool(up.clone(), own.clone(), args, cx)
    })
}

/// A prompt whose handler forwards `prompts/get` under the upstream's own name.
fn prompt_def(exposed: String, p: Prompt, up: &Arc<Upstream>) -> PromptDef {
    let own = p.name.clone();
    let b = prompt_from(exposed, p);
    let up = up.clone();
    b.handler(move |args: PromptArgs, cx: RequestContext| {
        let up = up.clone();
        let own = own.clone();
        async move {
            let sent = params(json!({"name": own, "arguments": args}));
            let v = crate::relay::request(&up, "prompts/get", sent, &cx)
                .await?
                .map_err(|f| protocol_error(&up, "prompts/get", f))?;
            typed::<GetPromptResult>(&up, "prompts/get", v)
        }
    })
}

/// Forwards a `resources/read`, through the read cache: a fresh entry the
/// caller may see is served without asking the upstream.
async fn read(
    up: Arc<Upstream>,
    reads: Arc<ReadCache>,
    uri: String,
    cx: RequestContext,
) -> Result<ReadResourceResult, HandlerError> {
    // CACHE-06: a retry carrying input responses or state is never
    // answered from, nor stored in, the cache.
    let cacheable = cx.input_responses().is_none() && cx.state().is_none();
    // CACHE-08: private entries belong to the caller's verified token.
    let partition = read_cache::partition(cx.principal());
    if cacheable {
        let hit = reads.get(up.name(), &uri, partition.as_deref());
        up.metrics.record_cache(up.name(), hit.is_some());
        if let Some(hit) = hit {
            return Ok(hit);
        }
    }
    let epoch = reads.epoch();
    let v = crate::relay::request(&up, "resources/read", params(json!({"uri": uri})), &cx)
        .await?
        .map_err(|f| protocol_error(&up, "resources/read", f))?;
    let r = typed::<ReadResourceResult>(&up, "resources/read", v)?;
    if cacheable {
        reads.put(up.name(), &uri, partition.as_deref(), &r, epoch);
    }
    Ok(r)
}

fn resource_def(r: Resource, up: &Arc<Upstream>, reads: &Arc<ReadCache>) -> ResourceDef {
    let (up, reads) = (up.clone(), reads.clone());
    ResourceDef::new(r, move |req: ResourceRequest, cx: RequestContext| {
        read(up.clone(), reads.clone(), req.uri, cx)
    })
}

fn template_def(t: ResourceTemplate, up: &Arc<Upstream>, reads: &Arc<ReadCache>) -> TemplateDef {
    let (up, reads) = (up.clone(), reads.clone());
    TemplateDef::new(t, move |req: ResourceRequest, cx: RequestContext| {
        read(up.clone(), reads.clone(), req.uri, cx)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    fn upstreams(json: &str) -> Vec<Arc<Upstream>> {
        let c = Config::parse(json, |_| None).unwrap_or_else(|e| panic!("{e}"));
        c.upstreams()
            .iter()
            .map(|u| Upstream::new(u.clone(), Arc::new(|_| {})))
            .collect()
    }

    fn snap(tools: &[&str], uris: &[&str]) -> Snapshot {
        Snapshot {
            tools: tools
                .iter()
                .map(|t| Tool::new(*t, Tool::no_arguments_schema()))
                .collect(),
            resources: uris.iter().map(|u| Resource::new(*u, *u)).collect(),
            ..Snapshot::default()
        }
    }

    fn owners(agg: &Aggregate) -> Vec<(String, String)> {
        let o = agg.owners.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<(String, String)> = o
            .iter()
            .map(|((_, k), r)| (k.clone(), r.name.clone()))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn the_first_in_name_order_wins_whoever_syncs_first() {
        let reports = Arc::new(Mutex::new(Vec::<String>::new()));
        let r = reports.clone();
        let report: Report = Arc::new(move |m| {
            r.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(m.to_owned())
        });
        let server = Server::builder("t", "1")
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let agg = Aggregate::new(server.clone(), "__".into(), report);
        let ups = upstreams(
            r#"{"mcpServers": {"b": {"command": "x", "denyTools": ["rm"]},
                               "a": {"command": "y", "prefix": "b__x"}}}"#,
        );
        let (a, b) = (&ups[0], &ups[1]);
        assert_eq!((a.name(), b.name()), ("a", "b"));
        // b first: its tool b__x__y and resource r://1.
        agg.sync(b, snap(&["x__y", "rm", "ok"], &["r://1", "r://b"]));
        // a then claims the same client-facing tool name (prefix "b__x" +
        // "__" + "y") and URI: a is first in name order and wins.
        agg.sync(a, snap(&["y"], &["r://1"]));
        assert_eq!(
            owners(&agg),
            [
                ("b__ok".into(), "b".into()),
                ("b__x__y".into(), "a".into()),
                ("r://1".into(), "a".into()),
                ("r://b".into(), "b".into()),
            ]
        );
        // b syncing again does not take them back, and says so.
        reports.lock().unwrap_or_else(|p| p.into_inner()).clear();
        agg.sync(b, snap(&["x__y", "ok"], &["r://1", "r://b"]));
        let said = reports.lock().unwrap_or_else(|p| p.into_inner()).join("\n");
        assert!(
            said.contains("\"b__x__y\" collides") && said.contains("\"r://1\" collides"),
            "{said}"
        );
        assert_eq!(owners(&agg).iter().filter(|(_, o)| o == "a").count(), 2);
        // A vanished item is removed; forgetting an upstream removes all of its.
        agg.sync(b, snap(&["x__y"], &["r://1"]));
        assert!(!server.remove_tool("b__ok"), "b__ok was not removed");
        agg.forget("a");
        assert!(!server.remove_tool("b__x__y"));
        assert!(!server.remove_resource("r://1"));
        assert!(owners(&agg).is_empty(), "{:?}", owners(&agg));
    }

    /// A server on a change bus, a subscriber of that bus, and an
    /// aggregate into the server of one upstream `a`.
    fn on_bus() -> (
        Server,
        tokio::sync::broadcast::Receiver<ferromcp_server::notify::Change>,
        Aggregate,
        Vec<Arc<Upstream>>,
    ) {
        use ferromcp_server::notify::{ChangeBus, LocalBus};
        let bus = Arc::new(LocalBus::new(64));
        let server = Server::builder("t", "1")
            .change_bus(bus.clone())
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let rx = bus.subscribe();
        let agg = Aggregate::new(server.clone(), "__".into(), Arc::new(|_| {}));
        let ups = upstreams(r#"{"mcpServers": {"a": {"command": "x"}}}"#);
        (server, rx, agg, ups)
    }

    /// The changes `rx` has received so far.
    fn drain(
        rx: &mut tokio::sync::broadcast::Receiver<ferromcp_server::notify::Change>,
    ) -> Vec<ferromcp_server::notify::Change> {
        let mut v = Vec::new();
        while let Ok(c) = rx.try_recv() {
            v.push(c);
        }
        v
    }

    #[test]
    fn one_sync_is_one_list_change_per_kind() {
        use ferromcp_server::notify::Change;
        let (server, mut rx, agg, ups) = on_bus();
        let mut s = snap(&["t1", "t2", "t3", "t4"], &["r://1", "r://2", "r://3"]);
        s.prompts = ["p1", "p2"]
            .iter()
            .map(|p| Prompt {
                name: (*p).to_owned(),
                ..Prompt::default()
            })
            .collect();
        agg.sync(&ups[0], s);
        assert_eq!(
            drain(&mut rx),
            [
                Change::ToolsListChanged,
                Change::PromptsListChanged,
                Change::ResourcesListChanged
            ]
        );
        // Re-listing with two tools gone: one change again, and they are gone.
        agg.sync(&ups[0], snap(&["t1", "t2"], &["r://1", "r://2", "r://3"]));
        let changes = drain(&mut rx);
        assert_eq!(
            changes
                .iter()
                .filter(|c| **c == Change::ToolsListChanged)
                .count(),
            1
        );
        assert!(!server.remove_tool("a__t3") && server.remove_tool("a__t1"));
    }

    #[test]
    fn a_relist_announces_only_the_kinds_that_changed() {
        use ferromcp_server::notify::Change;
        let (_server, mut rx, agg, ups) = on_bus();
        let with_prompts = |mut s: Snapshot| {
            s.prompts = vec![Prompt {
                name: "p1".to_owned(),
                ..Prompt::default()
            }];
            s
        };
        agg.sync(&ups[0], with_prompts(snap(&["t1", "t2"], &["r://1"])));
        assert_eq!(drain(&mut rx).len(), 3);
        // The same lists again: nothing to announce.
        agg.sync(&ups[0], with_prompts(snap(&["t1", "t2"], &["r://1"])));
        assert_eq!(drain(&mut rx), []);
        // One tool's description changed: tools only, and the new
        // definition is served.
        let mut s = with_prompts(snap(&["t1", "t2"], &["r://1"]));
        s.tools[1].description = Some("changed".into());
        agg.sync(&ups[0], s);
        assert_eq!(drain(&mut rx), [Change::ToolsListChanged]);
        let (_, tools) = agg.tools();
        let t2 = tools.iter().find(|t| t.name == "a__t2");
        assert_eq!(t2.and_then(|t| t.description.as_deref()), Some("changed"));
    }

    #[test]
    fn a_negative_ttl_reads_as_zero() {
        // CACHE-07
        let ups = upstreams(r#"{"mcpServers": {"a": {"command": "x"}}}"#);
        let r = typed::<ReadResourceResult>(
            &ups[0],
            "resources/read",
            json!({"contents": [], "ttlMs": -5, "cacheScope": "public"}),
        );
        assert_eq!(r.ok().and_then(|r| r.ttl_ms), Some(0));
    }

    #[test]
    fn an_upstream_cannot_announce_updates_of_another_upstreams_resource() {
        use ferromcp_server::notify::{Change, ChangeBus, LocalBus};
        let bus = Arc::new(LocalBus::new(16));
        let server = Server::builder("t", "1")
            .change_bus(bus.clone())
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let said = Arc::new(Mutex::new(String::new()));
        let s2 = said.clone();
        let agg = Aggregate::new(
            server,
            "__".into(),
            Arc::new(move |m| s2.lock().unwrap_or_else(|p| p.into_inner()).push_str(m)),
        );
        let ups = upstreams(r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}"#);
        agg.sync(&ups[0], snap(&[], &["r://a"]));
        let mut rx = bus.subscribe();
        agg.resource_updated("b", "r://a");
        assert!(rx.try_recv().is_err(), "b's spoofed update went out");
        assert!(
            said.lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains("dropped")
        );
        agg.resource_updated("a", "r://a");
        // A URI no upstream lists statically (a template's) passes too.
        agg.resource_updated("b", "r://b/1");
        let mut got = Vec::new();
        while let Ok(c) = rx.try_recv() {
            got.push(c);
        }
        assert_eq!(
            got,
            [
                Change::ResourceUpdated("r://a".into()),
                Change::ResourceUpdated("r://b/1".into())
            ]
        );
    }
}
