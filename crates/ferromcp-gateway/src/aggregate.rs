//! The client-facing catalogue: every upstream's tools and prompts under
//! `PREFIX` + separator + name (or their own name while unique, with
//! `gateway.naming` "onCollision"), resources and templates under their
//! own URIs (rewritten as `mcp-gateway://PREFIX/URI` when shared), registered in the gateway's `Server` with handlers forwarding to
//! the upstream that owns them.
//!
//! Policy is enforced by registration: a tool the upstream's filter does
//! not permit is never registered, so it is absent from `tools/list` and a
//! call to it (or to any name the gateway did not register, case variants
//! included, since names compare exactly) is refused by the server before
//! any upstream sees it.
//!
//! The catalogue is recomputed from every upstream's offer whenever one
//! changes, so naming never depends on which upstream connected first.
//! Two upstreams claiming one client-facing name after naming (a prefix
//! that ends like another's, an upstream URI that looks rewritten) are
//! decided by name order: the upstream first in name order owns it, the
//! other's item is reported and left out.

use crate::metrics::Outcome;
use crate::naming::{self, Naming};
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

/// What one upstream offers (its latest listing, tools after its filter).
struct Offer {
    up: Arc<Upstream>,
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
}

/// Who should serve a client-facing key: the upstream, its own name or
/// URI, where the definition sits in its offer, and the definition's
/// digest.
struct Want {
    upstream: String,
    own: String,
    kind: Kind,
    index: usize,
    digest: u64,
}

impl Want {
    fn new(upstream: &str, own: &str, kind: Kind, index: usize, digest: u64) -> Self {
        Self {
            upstream: upstream.to_owned(),
            own: own.to_owned(),
            kind,
            index,
            digest,
        }
    }
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
    naming: Naming,
    /// Tool names the gateway itself serves (the search mode's
    /// meta-tools): an upstream's tool of that name counts as colliding.
    reserved: Vec<String>,
    /// What every upstream offers, by upstream name.
    offers: Mutex<BTreeMap<String, Offer>>,
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
            naming: Naming::Prefix,
            reserved: Vec::new(),
            offers: Mutex::new(BTreeMap::new()),
            report,
            owners: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
            reads: Arc::new(ReadCache::new(&crate::cache::CacheConfig::default())),
            ups: Mutex::new(BTreeMap::new()),
        }
    }

    /// Names tools and prompts by `naming`; `reserved` are tool names the
    /// gateway serves itself.
    pub(crate) fn with_naming(mut self, naming: Naming, reserved: &[&str]) -> Self {
        self.naming = naming;
        self.reserved = reserved.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// How tools and prompts are named.
    pub(crate) fn naming(&self) -> Naming {
        self.naming
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
    /// Other upstreams' items whose client-facing name depends on this
    /// one's (a collision that appears or goes away) move with it.
    pub(crate) fn sync(&self, up: &Arc<Upstream>, snap: Snapshot) {
        up.listed.store(snap.fingerprint(), Ordering::Release);
        // CACHE-10: what it offers may have changed; its reads too.
        self.reads.drop_upstream(up.name());
        let uris: Vec<String> = snap.resources.iter().map(|r| r.uri.clone()).collect();
        let changed = {
            let mut held = up.uris.lock().unwrap_or_else(|p| p.into_inner());
            let changed = *held != uris;
            *held = uris;
            changed
        };
        if changed {
            // Kept as a permit if its listen loop is busy right now.
            up.uris_changed.notify_one();
        }
        let name = up.name().to_owned();
        let mut offer = Offer {
            up: up.clone(),
            tools: Vec::new(),
            prompts: snap.prompts,
            resources: snap.resources,
            templates: Vec::new(),
        };
        for t in snap.tools {
            if up.cfg.filter().permits(&t.name) {
                offer.tools.push(t);
            }
        }
        for t in snap.templates {
            if let Err(e) = ferromcp_server::uri_template::UriTemplate::parse(&t.uri_template) {
                (self.report)(&format!(
                    "upstream {name:?}: resource template {:?} is invalid ({e}); skipped",
                    t.uri_template
                ));
                continue;
            }
            offer.templates.push(t);
        }
        let mut offers = self.offers.lock().unwrap_or_else(|p| p.into_inner());
        offers.insert(name.clone(), offer);
        self.reconcile(&offers, Some(&name));
    }

    /// The client-facing catalogue every upstream's offer gives together:
    /// each key with the upstream serving it, its own name for it, and a
    /// digest of the definition. Problems of the upstream `focus` (or of
    /// every upstream when `None`) are reported.
    fn desired(
        &self,
        offers: &BTreeMap<String, Offer>,
        focus: Option<&str>,
    ) -> BTreeMap<(Kind, String), Want> {
        let says = |up: &str| focus.is_none_or(|f| f == up);
        // How many upstreams claim each own name (tools and prompts) or
        // URI (resources and templates).
        let mut claims: HashMap<(Kind, &str), usize> = HashMap::new();
        for o in offers.values() {
            let mut seen = std::collections::HashSet::new();
            let own = o
                .tools
                .iter()
                .map(|t| (Kind::Tool, t.name.as_str()))
                .chain(o.prompts.iter().map(|p| (Kind::Prompt, p.name.as_str())))
                .chain(o.resources.iter().map(|r| (Kind::Resource, r.uri.as_str())))
                .chain(
                    o.templates
                        .iter()
                        .map(|t| (Kind::Template, t.uri_template.as_str())),
                );
            for key in own {
                if seen.insert(key) {
                    *claims.entry(key).or_default() += 1;
                }
            }
        }
        // The search mode's meta-tools are claimed by the gateway itself.
        for meta in &self.reserved {
            *claims.entry((Kind::Tool, meta.as_str())).or_default() += 1;
        }
        let shared = |k: Kind, own: &str| claims.get(&(k, own)).copied().unwrap_or(0) > 1;
        let mut want: BTreeMap<(Kind, String), Want> = BTreeMap::new();
        let claim = |want: &mut BTreeMap<(Kind, String), Want>, key: (Kind, String), w: Want| {
            if let Some(first) = want.get(&key) {
                if says(&w.upstream) || says(&first.upstream) {
                    (self.report)(&format!(
                        "upstream {:?}: {} {:?} collides with one of upstream {:?}, earlier in name order, which keeps it; skipped",
                        w.upstream,
                        key.0.noun(),
                        key.1,
                        first.upstream
                    ));
                }
                return;
            }
            want.insert(key, w);
        };
        for (name, o) in offers {
            let prefix = o.up.cfg.prefix();
            for (i, t) in o.tools.iter().enumerate() {
                let exposed = match self.naming {
                    Naming::OnCollision if !shared(Kind::Tool, &t.name) => t.name.clone(),
                    _ => naming::exposed(prefix, &self.separator, &t.name),
                };
                if !naming::is_valid_tool_name(&exposed) {
                    if says(name) {
                        (self.report)(&format!(
                            "upstream {name:?}: tool {:?} would be exposed as {exposed:?}, which breaks the tool-name rules (1-128 characters of A-Z a-z 0-9 _ . -); skipped",
                            t.name
                        ));
                    }
                    continue;
                }
                let w = Want::new(name, &t.name, Kind::Tool, i, digest(t));
                claim(&mut want, (Kind::Tool, exposed), w);
            }
            for (i, p) in o.prompts.iter().enumerate() {
                let exposed = match self.naming {
                    Naming::OnCollision if !shared(Kind::Prompt, &p.name) => p.name.clone(),
                    _ => naming::exposed(prefix, &self.separator, &p.name),
                };
                let w = Want::new(name, &p.name, Kind::Prompt, i, digest(p));
                claim(&mut want, (Kind::Prompt, exposed), w);
            }
            for (i, r) in o.resources.iter().enumerate() {
                let exposed = if shared(Kind::Resource, &r.uri) {
                    naming::rewritten_uri(prefix, &r.uri)
                } else {
                    r.uri.clone()
                };
                let w = Want::new(name, &r.uri, Kind::Resource, i, digest(r));
                claim(&mut want, (Kind::Resource, exposed), w);
            }
            for (i, t) in o.templates.iter().enumerate() {
                let exposed = if shared(Kind::Template, &t.uri_template) {
                    naming::rewritten_uri(prefix, &t.uri_template)
                } else {
                    t.uri_template.clone()
                };
                if exposed != t.uri_template
                    && let Err(e) = ferromcp_server::uri_template::UriTemplate::parse(&exposed)
                {
                    if says(name) {
                        (self.report)(&format!(
                            "upstream {name:?}: resource template {:?} collides and its rewritten form {exposed:?} is invalid ({e}); skipped",
                            t.uri_template
                        ));
                    }
                    continue;
                }
                let w = Want::new(name, &t.uri_template, Kind::Template, i, digest(t));
                claim(&mut want, (Kind::Template, exposed), w);
            }
        }
        want
    }

    /// Makes the server's registrations and the owners table match what
    /// the offers give together ([`Aggregate::desired`]): one registry
    /// swap (and one `list_changed`) per kind that changed.
    fn reconcile(&self, offers: &BTreeMap<String, Offer>, focus: Option<&str>) {
        let want = self.desired(offers, focus);
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        let mut batch = Batch::default();
        // Gone: keys nobody offers any more.
        let gone: Vec<(Kind, String)> = owners
            .keys()
            .filter(|k| !want.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            owners.remove(&key);
            batch.remove(key);
        }
        for (key, w) in want {
            let Some(o) = offers.get(&w.upstream) else {
                continue;
            };
            // Unchanged since the last reconcile (same upstream connection,
            // same definition under the same name): left as it is.
            if owners.get(&key).is_some_and(|cur| {
                Arc::ptr_eq(&cur.up, &o.up) && cur.digest == w.digest && cur.own == w.own
            }) {
                continue;
            }
            let exposed = key.1.clone();
            let up = &o.up;
            let item = match w.kind {
                Kind::Tool => o
                    .tools
                    .get(w.index)
                    .map(|t| Item::Tool(tool_def(exposed.clone(), t.clone(), up))),
                Kind::Prompt => o
                    .prompts
                    .get(w.index)
                    .map(|p| Item::Prompt(prompt_def(exposed.clone(), p.clone(), up))),
                Kind::Resource => o.resources.get(w.index).map(|r| {
                    Item::Resource(resource_def(exposed.clone(), r.clone(), up, &self.reads))
                }),
                Kind::Template => o.templates.get(w.index).map(|t| {
                    Item::Template(template_def(exposed.clone(), t.clone(), up, &self.reads))
                }),
            };
            let Some(item) = item else {
                continue;
            };
            let tool = match &item {
                Item::Tool(d) => Some(Arc::new(d.definition().clone())),
                _ => None,
            };
            batch.owners.push((
                key.clone(),
                Owner {
                    name: w.upstream.clone(),
                    up: up.clone(),
                    own: w.own,
                    tool,
                    digest: w.digest,
                },
            ));
            batch.add(key, item);
        }
        let mut refused_keys = std::collections::HashSet::new();
        for (key, refused) in self.apply(batch.parts) {
            let who = batch
                .owners
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, o)| o.name.clone())
                .unwrap_or_default();
            (self.report)(&format!(
                "upstream {who:?}: {} {:?} cannot be served ({refused}); skipped",
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

    /// Removes every item the upstream called `name` owns (and gives its
    /// former rivals their plain names back where a collision is gone).
    pub(crate) fn forget(&self, name: &str) {
        self.reads.drop_upstream(name);
        self.ups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        let mut offers = self.offers.lock().unwrap_or_else(|p| p.into_inner());
        offers.remove(name);
        self.reconcile(&offers, Some(name));
    }

    /// Passes an upstream's `notifications/resources/updated` on to the
    /// gateway's subscribers, unless the URI is another upstream's (an
    /// upstream cannot announce updates of resources it does not serve).
    pub(crate) fn resource_updated(&self, upstream: &str, uri: &str) {
        // CACHE-10: its cached reads of the URI are stale now.
        self.reads.drop_uri(upstream, uri);
        // The offers lock is taken and let go before the owners lock:
        // reconcile holds offers while it takes owners, so holding owners
        // while taking offers here would deadlock against a sync.
        let prefix = self
            .offers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(upstream)
            .map(|o| o.up.cfg.prefix().to_owned());
        let exposed = {
            let owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            let mine = |key: &str| {
                owners
                    .get(&(Kind::Resource, key.to_owned()))
                    .is_some_and(|o| o.name == upstream && o.own == uri)
            };
            let rewritten = prefix.as_deref().map(|p| naming::rewritten_uri(p, uri));
            if mine(uri) {
                Some(uri.to_owned())
            } else if let Some(r) = rewritten.filter(|r| mine(r)) {
                // A colliding URI: its subscribers know it rewritten.
                Some(r)
            } else if owners.contains_key(&(Kind::Resource, uri.to_owned())) {
                // Another upstream's resource.
                None
            } else {
                // Not listed (a template's): rewritten when it falls under
                // one of the upstream's rewritten templates.
                let under_rewritten = owners.iter().any(|((k, key), o)| {
                    *k == Kind::Template
                        && o.name == upstream
                        && *key != o.own
                        && ferromcp_server::uri_template::UriTemplate::parse(&o.own)
                            .is_ok_and(|t| t.match_uri(uri).is_some())
                });
                Some(match (under_rewritten, prefix) {
                    (true, Some(p)) => naming::rewritten_uri(&p, uri),
                    _ => uri.to_owned(),
                })
            }
        };
        let Some(exposed) = exposed else {
            (self.report)(&format!(
                "upstream {upstream:?} announced an update of {uri:?}, which another upstream serves; dropped"
            ));
            return;
        };
        self.server.notify_resource_updated(exposed);
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
        match &mut p.reference {
            CompletionReference::Prompt(r) => r.name = own,
            CompletionReference::ResourceTemplate(r) => r.uri = own,
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
}

impl crate::scopes::ToolOwner for Aggregate {
    fn owner(&self, exposed: &str) -> Option<(String, String)> {
        self.tool_route(exposed)
            .map(|(up, own)| (up.name().to_owned(), own))
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
    // CACHE-07: a negative ttlMs counts as 0 (the wire type holds no
    // negative, so the result would not parse).
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

/// A resource registered under `exposed` whose reads ask the upstream for
/// its own URI; contents naming the own URI name the exposed one.
fn resource_def(
    exposed: String,
    mut r: Resource,
    up: &Arc<Upstream>,
    reads: &Arc<ReadCache>,
) -> ResourceDef {
    let own = std::mem::replace(&mut r.uri, exposed);
    let (up, reads) = (up.clone(), reads.clone());
    let exposed = r.uri.clone();
    ResourceDef::new(r, move |_req: ResourceRequest, cx: RequestContext| {
        let (up, reads, own, exposed) = (up.clone(), reads.clone(), own.clone(), exposed.clone());
        async move {
            let r = read(up, reads, own.clone(), cx).await?;
            Ok::<_, HandlerError>(rename_contents(r, &own, &exposed, None))
        }
    })
}

/// A resource template registered under `exposed`; a read of a URI it
/// matches asks the upstream for the URI without the gateway's rewrite.
fn template_def(
    exposed: String,
    mut t: ResourceTemplate,
    up: &Arc<Upstream>,
    reads: &Arc<ReadCache>,
) -> TemplateDef {
    let own = std::mem::replace(&mut t.uri_template, exposed);
    let prefix = (own != t.uri_template).then(|| naming::rewrite_head(up.cfg.prefix()));
    let (up, reads) = (up.clone(), reads.clone());
    TemplateDef::new(t, move |req: ResourceRequest, cx: RequestContext| {
        let (up, reads, prefix) = (up.clone(), reads.clone(), prefix.clone());
        async move {
            let Some(head) = prefix else {
                return read(up, reads, req.uri, cx).await;
            };
            let Some(own) = req.uri.strip_prefix(head.as_str()).map(str::to_owned) else {
                return Err(HandlerError::Protocol(ErrorObject::invalid_params(
                    format_args!("{:?} is not a URI of this resource template", req.uri),
                )));
            };
            let r = read(up, reads, own.clone(), cx).await?;
            Ok(rename_contents(r, &own, &req.uri, Some(&head)))
        }
    })
}

/// Contents of a read of `own` that name `own` name `exposed`; with
/// `head` (a rewritten template's), other URIs get the same rewrite.
fn rename_contents(
    mut r: ReadResourceResult,
    own: &str,
    exposed: &str,
    head: Option<&str>,
) -> ReadResourceResult {
    if own == exposed {
        return r;
    }
    for c in &mut r.contents {
        let uri = match c {
            ferromcp_protocol::types::ResourceContents::Text(t) => &mut t.uri,
            ferromcp_protocol::types::ResourceContents::Blob(b) => &mut b.uri,
        };
        if uri == own {
            *uri = exposed.to_owned();
        } else if let Some(head) = head {
            *uri = format!("{head}{uri}");
        }
    }
    r
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

    fn reporting() -> (Arc<Mutex<Vec<String>>>, Report) {
        let reports = Arc::new(Mutex::new(Vec::<String>::new()));
        let r = reports.clone();
        let report: Report = Arc::new(move |m| {
            r.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(m.to_owned())
        });
        (reports, report)
    }

    #[test]
    fn the_first_in_name_order_wins_whoever_syncs_first() {
        let (reports, report) = reporting();
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
        // "__" + "y"): a is first in name order and wins. The URI both
        // serve is rewritten for both.
        agg.sync(a, snap(&["y"], &["r://1"]));
        assert_eq!(
            owners(&agg),
            [
                ("b__ok".into(), "b".into()),
                ("b__x__y".into(), "a".into()),
                ("mcp-gateway://b/r://1".into(), "b".into()),
                ("mcp-gateway://b__x/r://1".into(), "a".into()),
                ("r://b".into(), "b".into()),
            ]
        );
        assert!(!server.remove_resource("r://1"), "the shared URI stayed");
        // b syncing again does not take the tool back, and says so.
        reports.lock().unwrap_or_else(|p| p.into_inner()).clear();
        agg.sync(b, snap(&["x__y", "ok"], &["r://1", "r://b"]));
        let said = reports.lock().unwrap_or_else(|p| p.into_inner()).join("\n");
        assert!(said.contains("\"b__x__y\" collides"), "{said}");
        assert_eq!(owners(&agg).iter().filter(|(_, o)| o == "a").count(), 2);
        // A vanished item is removed.
        agg.sync(b, snap(&["x__y"], &["r://1"]));
        assert!(!server.remove_tool("b__ok"), "b__ok was not removed");
        // Forgetting a removes all of its items and ends both collisions:
        // b's tool and its plain URI are served.
        agg.forget("a");
        assert_eq!(
            owners(&agg),
            [("b__x__y".into(), "b".into()), ("r://1".into(), "b".into())]
        );
        assert!(!server.remove_resource("mcp-gateway://b/r://1"));
        assert!(server.remove_tool("b__x__y") && server.remove_resource("r://1"));
    }

    #[test]
    fn on_collision_only_shared_names_are_prefixed_whoever_syncs_first() {
        let ups = upstreams(
            r#"{"gateway": {"naming": "onCollision"},
                "mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}"#,
        );
        let (a, b) = (&ups[0], &ups[1]);
        let catalogue = |first: &Arc<Upstream>, second: &Arc<Upstream>| {
            let server = Server::builder("t", "1")
                .build()
                .unwrap_or_else(|e| panic!("{e}"));
            let agg = Aggregate::new(server, "__".into(), Arc::new(|_| {}))
                .with_naming(Naming::OnCollision, &["search_tools"]);
            let s = |up: &Arc<Upstream>| {
                if up.name() == "a" {
                    snap(&["read", "only_a", "search_tools"], &[])
                } else {
                    snap(&["read", "only_b"], &[])
                }
            };
            agg.sync(first, s(first));
            agg.sync(second, s(second));
            let route = |n: &str| agg.tool_route(n).map(|(u, own)| (u.name().to_owned(), own));
            (
                owners(&agg),
                route("read"),
                route("a__read"),
                route("b__read"),
            )
        };
        let (ab, read, a_read, b_read) = catalogue(a, b);
        assert_eq!(
            ab,
            [
                ("a__read".into(), "a".into()),
                // The meta-tool's name is the gateway's own.
                ("a__search_tools".into(), "a".into()),
                ("b__read".into(), "b".into()),
                ("only_a".into(), "a".into()),
                ("only_b".into(), "b".into()),
            ]
        );
        // The shared name routes nowhere: never silently to one of them.
        assert_eq!(read, None);
        assert_eq!(a_read, Some(("a".into(), "read".into())));
        assert_eq!(b_read, Some(("b".into(), "read".into())));
        assert_eq!(catalogue(b, a).0, ab, "depends on the order of syncs");
    }

    #[test]
    fn a_collision_that_appears_and_goes_renames_both_sides() {
        use ferromcp_server::notify::{ChangeBus, LocalBus};
        let bus = Arc::new(LocalBus::new(64));
        let server = Server::builder("t", "1")
            .backplane(ferromcp_server::Backplane::default().change_bus(bus.clone()))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let mut rx = bus.subscribe();
        let agg = Aggregate::new(server.clone(), "__".into(), Arc::new(|_| {}))
            .with_naming(Naming::OnCollision, &[]);
        let ups = upstreams(r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}"#);
        agg.sync(&ups[0], snap(&["read"], &["file:///x"]));
        agg.sync(&ups[1], snap(&[], &[]));
        assert_eq!(
            owners(&agg),
            [
                ("file:///x".into(), "a".into()),
                ("read".into(), "a".into())
            ]
        );
        drain(&mut rx);
        // b starts offering the same tool and URI: both sides renamed,
        // clients told.
        agg.sync(&ups[1], snap(&["read"], &["file:///x"]));
        assert_eq!(
            owners(&agg),
            [
                ("a__read".into(), "a".into()),
                ("b__read".into(), "b".into()),
                ("mcp-gateway://a/file:///x".into(), "a".into()),
                ("mcp-gateway://b/file:///x".into(), "b".into()),
            ]
        );
        let changes = drain(&mut rx);
        assert!(
            changes.contains(&ferromcp_server::notify::Change::ToolsListChanged)
                && changes.contains(&ferromcp_server::notify::Change::ResourcesListChanged),
            "{changes:?}"
        );
        assert!(!server.remove_tool("read") && !server.remove_resource("file:///x"));
        // Updates of the shared URI reach subscribers of the sender's form.
        agg.resource_updated("b", "file:///x");
        assert_eq!(
            drain(&mut rx),
            [ferromcp_server::notify::Change::ResourceUpdated(
                "mcp-gateway://b/file:///x".into()
            )]
        );
        // b goes: a's names are plain again.
        agg.forget("b");
        assert_eq!(
            owners(&agg),
            [
                ("file:///x".into(), "a".into()),
                ("read".into(), "a".into())
            ]
        );
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
            .backplane(ferromcp_server::Backplane::default().change_bus(bus.clone()))
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
    fn updates_and_syncs_at_once_never_deadlock() {
        // resource_updated and sync (through reconcile) take the offers
        // and the owners locks; taken in opposite orders they deadlock.
        let server = Server::builder("t", "1")
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let agg = Arc::new(Aggregate::new(server, "__".into(), Arc::new(|_| {})));
        let ups = upstreams(r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}"#);
        agg.sync(&ups[1], snap(&[], &["r://1"]));
        let (tx, rx) = std::sync::mpsc::channel();
        let (a1, up) = (agg.clone(), ups[0].clone());
        let t1 = tx.clone();
        std::thread::spawn(move || {
            for i in 0..2000 {
                let uris: &[&str] = if i % 2 == 0 { &["r://1"] } else { &["r://2"] };
                a1.sync(&up, snap(&[], uris));
            }
            let _ = t1.send(());
        });
        let a2 = agg.clone();
        std::thread::spawn(move || {
            for _ in 0..2000 {
                a2.resource_updated("a", "r://1");
                a2.resource_updated("b", "r://x/7");
            }
            let _ = tx.send(());
        });
        for _ in 0..2 {
            assert!(
                rx.recv_timeout(std::time::Duration::from_secs(60)).is_ok(),
                "sync and resource_updated deadlocked"
            );
        }
    }

    #[test]
    fn an_upstream_cannot_announce_updates_of_another_upstreams_resource() {
        use ferromcp_server::notify::{Change, ChangeBus, LocalBus};
        let bus = Arc::new(LocalBus::new(16));
        let server = Server::builder("t", "1")
            .backplane(ferromcp_server::Backplane::default().change_bus(bus.clone()))
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
    #[test]
    fn an_unprefixed_name_needs_the_scopes_of_the_upstream_serving_it() {
        use crate::scopes::{Route, ScopePolicy};
        use ferromcp_protocol::Principal;
        let config = crate::Config::parse(
            r#"{"gateway": {"naming": "onCollision"},
                "mcpServers": {"fs": {"command": "x", "scopes": {"write_*": ["w"]}},
                               "other": {"command": "y"}}}"#,
            |_| None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let server = ferromcp_server::Server::builder("t", "1")
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let agg = Arc::new(
            Aggregate::new(server, "__".into(), Arc::new(|_| {}))
                .with_naming(Naming::OnCollision, &[]),
        );
        let route: Route = Arc::default();
        let _ = route.set(agg.clone());
        let who = |scopes: &[&str]| Principal {
            subject: "u".into(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            client_id: None,
        };
        let p = ScopePolicy::routed(route);
        p.set(&config);
        let up = crate::upstream::Upstream::new(config.upstreams()[0].clone(), Arc::new(|_| {}));
        agg.sync(
            &up,
            crate::upstream::Snapshot {
                tools: ["write_file", "read_file"]
                    .iter()
                    .map(|n| Tool::new(*n, Tool::no_arguments_schema()))
                    .collect(),
                ..Default::default()
            },
        );
        // Exposed unprefixed (no other upstream has them), still fs's.
        assert!(agg.tool_route("write_file").is_some());
        assert!(!p.permits("write_file", None));
        assert!(!p.permits("write_file", Some(&who(&["r"]))));
        assert!(p.permits("write_file", Some(&who(&["w"]))));
        assert!(p.permits("read_file", None));
        // The prefixed form (a collision) needs the same.
        assert!(!p.permits("fs__write_file", None));
    }
}
