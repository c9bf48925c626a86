//! The server: registries and configuration, built once and shared by `Arc`.

use crate::context::RequestContext;
use crate::error::Error;
use crate::error::HandlerError;
use crate::fallback::FallbackRequest;
use crate::future::BoxFuture;
use crate::limits::Limits;
use crate::notify::{Change, ChangeBus, LocalBus};
use crate::prompt::{CompletionHandler, PromptDef};
use crate::request_state::{KeyRing, StateSealer};
use crate::resource::{ResourceDef, TemplateDef};
use crate::single_use::SingleUseStore;
use crate::state::{StateMap, StateNeed};
use crate::tool::ToolDef;
use arc_swap::ArcSwap;
use ferromcp_protocol::ProtocolVersion;
use ferromcp_protocol::header::x_mcp_header::{ParamHeaderMap, x_mcp_header_map};
use ferromcp_protocol::types::{
    CacheHint, Implementation, JsonObject, ListChangedCapability, ResourcesCapability,
    ServerCapabilities,
};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

/// A registered tool with what the server precomputes for it.
pub(crate) struct RegisteredTool {
    pub(crate) def: ToolDef,
    // TOOL-06, TOOL-09
    /// The compiled `inputSchema` (feature `schema-validation`).
    #[cfg(feature = "schema-validation")]
    pub(crate) input: Option<Arc<jsonschema::Validator>>,
    // TOOL-07
    /// The compiled `outputSchema` (feature `schema-validation`).
    #[cfg(feature = "schema-validation")]
    pub(crate) output: Option<Arc<jsonschema::Validator>>,
    pub(crate) headers: Option<Arc<ParamHeaderMap>>,
}

/// An immutable snapshot of everything registered; swapped atomically when
/// the set changes at run time.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: Vec<Arc<RegisteredTool>>,
    pub(crate) tool_index: HashMap<String, usize>,
    pub(crate) resources: Vec<ResourceDef>,
    pub(crate) resource_index: HashMap<String, usize>,
    pub(crate) templates: Vec<TemplateDef>,
    pub(crate) prompts: Vec<PromptDef>,
    pub(crate) prompt_index: HashMap<String, usize>,
    /// `tools/list` entries serialized once per sieve level (see
    /// [`crate::sieve::Sieve`]); reset whenever the registry is replaced.
    serialized: [std::sync::OnceLock<Vec<Box<serde_json::value::RawValue>>>; 3],
}

impl Clone for Registry {
    fn clone(&self) -> Self {
        Self {
            tools: self.tools.clone(),
            tool_index: self.tool_index.clone(),
            resources: self.resources.clone(),
            resource_index: self.resource_index.clone(),
            templates: self.templates.clone(),
            prompts: self.prompts.clone(),
            prompt_index: self.prompt_index.clone(),
            serialized: Default::default(),
        }
    }
}

impl Registry {
    /// The tool definitions serialized for `level`, computed once.
    pub(crate) fn serialized_tools(
        &self,
        level: crate::sieve::Sieve,
    ) -> &[Box<serde_json::value::RawValue>] {
        self.serialized[level.index()].get_or_init(|| {
            self.tools
                .iter()
                .filter_map(|t| {
                    let mut tool = t.def.tool.clone();
                    level.apply_tool(&mut tool);
                    serde_json::value::to_raw_value(&tool).ok()
                })
                .collect()
        })
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.tool_index.get(name).and_then(|i| self.tools.get(*i))
    }
    pub(crate) fn prompt(&self, name: &str) -> Option<&PromptDef> {
        self.prompt_index
            .get(name)
            .and_then(|i| self.prompts.get(*i))
    }
    pub(crate) fn resource(&self, uri: &str) -> Option<&ResourceDef> {
        self.resource_index
            .get(uri)
            .and_then(|i| self.resources.get(*i))
    }

    fn add_tool(&mut self, def: ToolDef) -> Result<(), Error> {
        let name = def.tool.name.clone();
        check_meta(&format!("tool {name:?}"), def.tool.meta.as_ref())?;
        if self.tool_index.contains_key(&name) {
            return Err(Error::config(format!("duplicate tool name {name:?}")));
        }
        let registered = compile_tool(def)?;
        self.tool_index.insert(name, self.tools.len());
        self.tools.push(Arc::new(registered));
        Ok(())
    }

    fn remove_tool(&mut self, name: &str) -> bool {
        let before = self.tools.len();
        self.tools.retain(|t| t.def.tool.name != name);
        self.reindex();
        before != self.tools.len()
    }

    fn add_prompt(&mut self, def: PromptDef) -> Result<(), Error> {
        let name = def.prompt.name.clone();
        check_meta(&format!("prompt {name:?}"), def.prompt.meta.as_ref())?;
        if self.prompt_index.contains_key(&name) {
            return Err(Error::config(format!("duplicate prompt name {name:?}")));
        }
        self.prompt_index.insert(name, self.prompts.len());
        self.prompts.push(def);
        Ok(())
    }

    fn remove_prompt(&mut self, name: &str) -> bool {
        let before = self.prompts.len();
        self.prompts.retain(|p| p.prompt.name != name);
        self.reindex();
        before != self.prompts.len()
    }

    pub(crate) fn add_resource(&mut self, def: ResourceDef) -> Result<(), Error> {
        let uri = def.resource.uri.clone();
        check_meta(&format!("resource {uri:?}"), def.resource.meta.as_ref())?;
        if self.resource_index.contains_key(&uri) {
            return Err(Error::config(format!("duplicate resource uri {uri:?}")));
        }
        self.resource_index.insert(uri, self.resources.len());
        self.resources.push(def);
        Ok(())
    }

    fn remove_resource(&mut self, uri: &str) -> bool {
        let before = self.resources.len();
        self.resources.retain(|r| r.resource.uri != uri);
        let removed = before != self.resources.len();
        if removed {
            self.reindex();
        }
        removed
    }

    fn add_template(&mut self, def: TemplateDef) -> Result<(), Error> {
        if let Some(e) = &def.error {
            return Err(Error::config(e.clone()));
        }
        check_meta(
            &format!("resource template {:?}", def.template.uri_template),
            def.template.meta.as_ref(),
        )?;
        self.templates.push(def);
        Ok(())
    }

    fn reindex(&mut self) {
        self.tool_index = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.def.tool.name.clone(), i))
            .collect();
        self.prompt_index = self
            .prompts
            .iter()
            .enumerate()
            .map(|(i, p)| (p.prompt.name.clone(), i))
            .collect();
        self.resource_index = self
            .resources
            .iter()
            .enumerate()
            .map(|(i, r)| (r.resource.uri.clone(), i))
            .collect();
    }
}

// META-01, META-02
/// The `_meta` an application gives a tool, prompt, resource or template
/// must follow the key rules of every revision it may be served under
/// (no non-spec key under a reserved prefix such as
/// `io.modelcontextprotocol/`): refused at registration, where the mistake
/// is made, rather than sent to clients.
fn check_meta(what: &str, meta: Option<&ferromcp_protocol::types::Meta>) -> Result<(), Error> {
    let Some(meta) = meta.filter(|m| !m.is_empty()) else {
        return Ok(());
    };
    ferromcp_protocol::meta::validate_outgoing_meta(
        meta.keys(),
        ferromcp_protocol::meta::KEY_RULE_REVISIONS,
    )
    .map_err(|(key, e)| Error::config(format!("{what}: _meta key {key:?}: {e}")))
}

/// A configuration error unless every state type in `needs` is in `map`.
fn check_needs(needs: &[StateNeed], map: &StateMap, what: &str) -> Result<(), Error> {
    needs.iter().try_for_each(|n| n.check(map, what))
}

fn compile_tool(def: ToolDef) -> Result<RegisteredTool, Error> {
    let name = &def.tool.name;
    let schema = serde_json::Value::Object(def.tool.input_schema.clone());
    if def.tool.input_schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(Error::config(format!(
            "tool {name:?}: inputSchema must have \"type\": \"object\" (TOOL-03)"
        )));
    }
    // SCHEMA-02: schemas are compiled (and so checked) once, at registration.
    #[cfg(feature = "schema-validation")]
    let input = jsonschema::validator_for(&schema)
        .map_err(|e| Error::config(format!("tool {name:?}: invalid inputSchema: {e}")))?;
    #[cfg(feature = "schema-validation")]
    let output = match &def.tool.output_schema {
        None => None,
        Some(o) => Some(Arc::new(
            jsonschema::validator_for(&serde_json::Value::Object(o.clone()))
                .map_err(|e| Error::config(format!("tool {name:?}: invalid outputSchema: {e}")))?,
        )),
    };
    let headers = x_mcp_header_map(&schema).map_err(|e| {
        Error::config(format!(
            "tool {name:?}: invalid x-mcp-header annotation: {e}"
        ))
    })?;
    let headers = if headers.is_empty() {
        None
    } else {
        Some(Arc::new(headers))
    };
    Ok(RegisteredTool {
        def,
        #[cfg(feature = "schema-validation")]
        input: Some(Arc::new(input)),
        #[cfg(feature = "schema-validation")]
        output,
        headers,
    })
}

// CACHE-12
/// Caching hints per cacheable method, used when a handler sets none.
#[derive(Debug, Clone)]
pub struct CacheHints {
    /// `server/discover`.
    pub discover: CacheHint,
    /// `tools/list`.
    pub tools_list: CacheHint,
    /// `prompts/list`.
    pub prompts_list: CacheHint,
    /// `resources/list`.
    pub resources_list: CacheHint,
    /// `resources/templates/list`.
    pub templates_list: CacheHint,
    /// `resources/read`.
    pub resources_read: CacheHint,
}

impl Default for CacheHints {
    /// Everything `{ttlMs: 0, cacheScope: "private"}`: always correct, never
    /// shared (the Python SDK's default).
    fn default() -> Self {
        Self {
            discover: CacheHint::UNCACHED,
            tools_list: CacheHint::UNCACHED,
            prompts_list: CacheHint::UNCACHED,
            resources_list: CacheHint::UNCACHED,
            templates_list: CacheHint::UNCACHED,
            resources_read: CacheHint::UNCACHED,
        }
    }
}

/// A handler for the methods the server does not implement (see
/// [`crate::fallback`]). Implemented for every
/// `Fn(FallbackRequest, RequestContext) -> impl Future<Output =
/// Result<serde_json::Value, HandlerError>>`.
pub trait FallbackHandler: Send + Sync + 'static {
    /// Serves one request; resolves with its `result` object.
    fn call(
        &self,
        req: FallbackRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<serde_json::Value, HandlerError>>;
}

impl<F, Fut> FallbackHandler for F
where
    F: Fn(FallbackRequest, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<serde_json::Value, HandlerError>> + Send + 'static,
{
    fn call(
        &self,
        req: FallbackRequest,
        cx: RequestContext,
    ) -> BoxFuture<Result<serde_json::Value, HandlerError>> {
        Box::pin(self(req, cx))
    }
}

/// State shared by every request, connection and transport.
pub(crate) struct Shared {
    pub(crate) info: Implementation,
    /// `,"_meta":{"io.modelcontextprotocol/serverInfo":<info>}`, serialized once.
    pub(crate) server_info_member: Vec<u8>,
    pub(crate) instructions: Option<String>,
    pub(crate) registry: ArcSwap<Registry>,
    pub(crate) completion: Option<Arc<dyn CompletionHandler>>,
    pub(crate) limits: Limits,
    pub(crate) modern_versions: Vec<ProtocolVersion>,
    pub(crate) handshake_versions: Vec<ProtocolVersion>,
    pub(crate) cache_hints: CacheHints,
    pub(crate) sealer: StateSealer,
    pub(crate) bus: Arc<dyn ChangeBus>,
    pub(crate) logging_enabled: bool,
    /// [`ServerBuilder::validate_schemas`]; only ever `true` with the
    /// `schema-validation` feature, whose code reads it.
    #[cfg_attr(not(feature = "schema-validation"), allow(dead_code))]
    pub(crate) validate_schemas: bool,
    pub(crate) stamp_server_info: bool,
    pub(crate) page_size: Option<usize>,
    pub(crate) declare: Declared,
    pub(crate) extensions: Option<JsonObject>,
    /// The tasks extension, when enabled.
    pub(crate) tasks: Option<Arc<crate::tasks::Tasks>>,
    /// Handshake-era session records shared with other replicas.
    pub(crate) shared_sessions: Option<Arc<dyn crate::shared_sessions::SharedSessions>>,
    /// Application state given to [`ServerBuilder::with_state`].
    pub(crate) app_state: StateMap,
    /// The middleware stack around the dispatcher ([`ServerBuilder::layer`]);
    /// `None` without middleware.
    pub(crate) rpc: Option<Arc<dyn crate::middleware::RpcService>>,
    /// The skills extension, when skills are served.
    pub(crate) skills: Option<Arc<crate::skills::wire::SkillsState>>,
    /// The handler of methods the server does not implement
    /// ([`ServerBuilder::fallback`]); `None`: they are -32601.
    pub(crate) fallback: Option<Arc<dyn FallbackHandler>>,
    /// The hook for client notifications the server does not act on
    /// ([`ServerBuilder::on_notification`]).
    pub(crate) on_notification: Option<crate::client_notification::NotificationHook>,
}

/// Which capabilities were declared explicitly (beyond what registrations imply).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Declared {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) resource_subscribe: bool,
}

impl Shared {
    pub(crate) fn registry(&self) -> arc_swap::Guard<Arc<Registry>> {
        self.registry.load()
    }

    // DISC-05
    /// The capabilities this server declares: derived from what is
    /// registered so declared capabilities always match behaviour.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        self.capabilities_of(&self.registry())
    }

    /// [`Shared::capabilities`] for registry snapshot `reg`.
    pub(crate) fn capabilities_of(&self, reg: &Registry) -> ServerCapabilities {
        let mut caps = ServerCapabilities::default();
        if self.declare.tools || !reg.tools.is_empty() {
            caps.tools = Some(ListChangedCapability {
                list_changed: Some(true),
                ..Default::default()
            });
        }
        if self.declare.prompts || !reg.prompts.is_empty() {
            caps.prompts = Some(ListChangedCapability {
                list_changed: Some(true),
                ..Default::default()
            });
        }
        if self.declare.resources || !reg.resources.is_empty() || !reg.templates.is_empty() {
            caps.resources = Some(ResourcesCapability {
                list_changed: Some(true),
                subscribe: Some(self.declare.resource_subscribe),
                ..Default::default()
            });
        }
        if self.completion.is_some() {
            caps.completions = Some(JsonObject::new());
        }
        if self.logging_enabled {
            caps.logging = Some(JsonObject::new());
        }
        caps.extensions.clone_from(&self.extensions);
        caps
    }

    pub(crate) fn has_tools(&self, r: &Registry) -> bool {
        self.declare.tools || !r.tools.is_empty()
    }
    pub(crate) fn has_prompts(&self, r: &Registry) -> bool {
        self.declare.prompts || !r.prompts.is_empty()
    }
    pub(crate) fn has_resources(&self, r: &Registry) -> bool {
        self.declare.resources || !r.resources.is_empty() || !r.templates.is_empty()
    }

    /// Every version served, modern first (the `supportedVersions` list).
    pub(crate) fn all_versions(&self) -> impl Iterator<Item = ProtocolVersion> + '_ {
        self.modern_versions
            .iter()
            .chain(self.handshake_versions.iter())
            .copied()
    }

    fn update(
        &self,
        f: impl FnOnce(&mut Registry) -> Result<bool, Error>,
        change: Change,
    ) -> Result<bool, Error> {
        let mut next = Registry::clone(&self.registry.load());
        let changed = f(&mut next)?;
        if changed {
            self.registry.store(Arc::new(next));
            self.bus.publish(change);
        }
        Ok(changed)
    }
}

/// A configured MCP server. Cheap to clone; every clone serves the same
/// registries. Hand it to a transport: [`Server::serve_stdio`] or the HTTP
/// service in [`crate::transport::http`].
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.shared.info)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts a builder for a server identified as `name` `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(Implementation::new(name, version))
    }

    /// The server's self-description.
    pub fn info(&self) -> &Implementation {
        &self.shared.info
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.shared.limits
    }

    // TOOL-01, SUB-12
    /// Adds a tool at run time and notifies subscribers.
    pub fn add_tool(&self, def: ToolDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            &self.shared.app_state,
            &format!("tool {:?}", def.tool.name),
        )?;
        self.shared
            .update(|r| r.add_tool(def).map(|_| true), Change::ToolsListChanged)
            .map(|_| ())
    }

    /// Adds a tool at run time, replacing a tool of the same name in the
    /// same registry swap (a request arriving meanwhile finds the old
    /// definition or the new one, never neither), and notifies
    /// subscribers. Nothing changes when the new definition is refused.
    pub fn replace_tool(&self, def: ToolDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            &self.shared.app_state,
            &format!("tool {:?}", def.tool.name),
        )?;
        let name = def.tool.name.clone();
        self.shared
            .update(
                |r| {
                    r.remove_tool(&name);
                    r.add_tool(def).map(|_| true)
                },
                Change::ToolsListChanged,
            )
            .map(|_| ())
    }

    /// Removes a tool at run time; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.shared
            .update(|r| Ok(r.remove_tool(name)), Change::ToolsListChanged)
            .unwrap_or(false)
    }

    /// Removes the tools named in `remove`, then adds `add` (a name in
    /// both is replaced), as one registry swap with a single
    /// `tools/list_changed` (an aggregator applying a changed list).
    /// Nothing changes when any addition is refused; returns whether the
    /// set changed.
    pub fn update_tools<'a>(
        &self,
        remove: impl IntoIterator<Item = &'a str>,
        add: Vec<ToolDef>,
    ) -> Result<bool, Error> {
        for def in &add {
            check_needs(
                &def.state_needs,
                &self.shared.app_state,
                &format!("tool {:?}", def.tool.name),
            )?;
        }
        self.shared.update(
            |r| {
                let gone: std::collections::HashSet<&str> = remove.into_iter().collect();
                let before = r.tools.len();
                if !gone.is_empty() {
                    r.tools.retain(|t| !gone.contains(t.def.tool.name.as_str()));
                    r.reindex();
                }
                let mut changed = before != r.tools.len();
                for def in add {
                    r.add_tool(def)?;
                    changed = true;
                }
                Ok(changed)
            },
            Change::ToolsListChanged,
        )
    }

    /// Removes the prompts named in `remove`, then adds `add`, as one
    /// registry swap with a single `prompts/list_changed` (see
    /// [`Server::update_tools`]).
    pub fn update_prompts<'a>(
        &self,
        remove: impl IntoIterator<Item = &'a str>,
        add: Vec<PromptDef>,
    ) -> Result<bool, Error> {
        for def in &add {
            check_needs(
                &def.state_needs,
                &self.shared.app_state,
                &format!("prompt {:?}", def.prompt.name),
            )?;
        }
        self.shared.update(
            |r| {
                let gone: std::collections::HashSet<&str> = remove.into_iter().collect();
                let before = r.prompts.len();
                if !gone.is_empty() {
                    r.prompts.retain(|p| !gone.contains(p.prompt.name.as_str()));
                    r.reindex();
                }
                let mut changed = before != r.prompts.len();
                for def in add {
                    r.add_prompt(def)?;
                    changed = true;
                }
                Ok(changed)
            },
            Change::PromptsListChanged,
        )
    }

    /// Adds a prompt at run time and notifies subscribers.
    pub fn add_prompt(&self, def: PromptDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            &self.shared.app_state,
            &format!("prompt {:?}", def.prompt.name),
        )?;
        self.shared
            .update(
                |r| r.add_prompt(def).map(|_| true),
                Change::PromptsListChanged,
            )
            .map(|_| ())
    }

    /// Adds a prompt at run time, replacing a prompt of the same name in
    /// the same registry swap (see [`Server::replace_tool`]), and notifies
    /// subscribers. Nothing changes when the new definition is refused.
    pub fn replace_prompt(&self, def: PromptDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            &self.shared.app_state,
            &format!("prompt {:?}", def.prompt.name),
        )?;
        let name = def.prompt.name.clone();
        self.shared
            .update(
                |r| {
                    r.remove_prompt(&name);
                    r.add_prompt(def).map(|_| true)
                },
                Change::PromptsListChanged,
            )
            .map(|_| ())
    }

    /// Removes a prompt at run time; returns whether it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.shared
            .update(|r| Ok(r.remove_prompt(name)), Change::PromptsListChanged)
            .unwrap_or(false)
    }

    /// Adds a static resource at run time and notifies subscribers.
    pub fn add_resource(&self, def: ResourceDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            &self.shared.app_state,
            &format!("resource {:?}", def.resource.uri),
        )?;
        self.shared
            .update(
                |r| r.add_resource(def).map(|_| true),
                Change::ResourcesListChanged,
            )
            .map(|_| ())
    }

    /// Removes a static resource at run time; returns whether it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.shared
            .update(|r| Ok(r.remove_resource(uri)), Change::ResourcesListChanged)
            .unwrap_or(false)
    }

    /// Adds a resource template at run time and notifies subscribers.
    pub fn add_resource_template(&self, def: TemplateDef) -> Result<(), Error> {
        check_needs(
            &def.state_needs,
            &self.shared.app_state,
            &format!("resource template {:?}", def.template.uri_template),
        )?;
        self.shared
            .update(
                |r| r.add_template(def).map(|_| true),
                Change::ResourcesListChanged,
            )
            .map(|_| ())
    }

    /// Removes every resource template whose `uriTemplate` is
    /// `uri_template`; returns whether one existed.
    pub fn remove_resource_template(&self, uri_template: &str) -> bool {
        self.shared
            .update(
                |r| {
                    let before = r.templates.len();
                    r.templates
                        .retain(|t| t.template.uri_template != uri_template);
                    Ok(before != r.templates.len())
                },
                Change::ResourcesListChanged,
            )
            .unwrap_or(false)
    }

    /// Removes the static resources at `remove`, then adds `add` (a URI in
    /// both is replaced), as one registry swap with a single
    /// `resources/list_changed` (a watcher applying a batch of file
    /// changes). Nothing changes when any addition is refused; returns
    /// whether the set changed.
    pub fn update_resources<'a>(
        &self,
        remove: impl IntoIterator<Item = &'a str>,
        add: Vec<ResourceDef>,
    ) -> Result<bool, Error> {
        self.shared.update(
            |r| {
                let gone: std::collections::HashSet<&str> = remove.into_iter().collect();
                let before = r.resources.len();
                if !gone.is_empty() {
                    r.resources
                        .retain(|d| !gone.contains(d.resource.uri.as_str()));
                    r.reindex();
                }
                let mut changed = before != r.resources.len();
                for def in add {
                    r.add_resource(def)?;
                    changed = true;
                }
                Ok(changed)
            },
            Change::ResourcesListChanged,
        )
    }

    // SUB-12
    /// Tells subscribers that the resource at `uri` changed.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.shared.bus.publish(Change::ResourceUpdated(uri.into()));
    }

    /// Publishes any change to subscribers.
    pub fn publish(&self, change: Change) {
        self.shared.bus.publish(change);
    }
}

impl RequestContext {
    /// The server serving this request, to change its registries from a
    /// handler (e.g. a tool that installs another tool).
    pub fn server(&self) -> Server {
        Server {
            shared: self.inner.shared.clone(),
        }
    }
}

/// A static resource or a resource template, for
/// [`ServerBuilder::resource`], which takes either.
#[derive(Debug, Clone)]
pub enum AnyResourceDef {
    /// A fixed URI.
    Resource(ResourceDef),
    /// An RFC 6570 URI template.
    Template(TemplateDef),
}

impl From<ResourceDef> for AnyResourceDef {
    fn from(d: ResourceDef) -> Self {
        Self::Resource(d)
    }
}

impl From<TemplateDef> for AnyResourceDef {
    fn from(d: TemplateDef) -> Self {
        Self::Template(d)
    }
}
/// Builds a [`Server`]. Every limit and policy has a named default.
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    registry: Registry,
    errors: Vec<Error>,
    completion: Option<Arc<dyn CompletionHandler>>,
    limits: Limits,
    cache_hints: CacheHints,
    keys: Option<KeyRing>,
    state_ttl: std::time::Duration,
    state_single_use: Option<usize>,
    state_single_use_store: Option<Arc<dyn SingleUseStore>>,
    bus: Option<Arc<dyn ChangeBus>>,
    logging: bool,
    validate_schemas: bool,
    stamp_server_info: bool,
    page_size: Option<usize>,
    declare: Declared,
    extensions: Option<JsonObject>,
    handshake: bool,
    modern: bool,
    tasks: Option<crate::tasks::TaskConfig>,
    shared_sessions: Option<Arc<dyn crate::shared_sessions::SharedSessions>>,
    app_state: StateMap,
    completion_needs: Vec<StateNeed>,
    layers: Vec<Arc<dyn crate::middleware::RpcLayer>>,
    skills: crate::skills::wire::SkillsConfig,
    fallback: Option<Arc<dyn FallbackHandler>>,
    on_notification: Option<crate::client_notification::NotificationHook>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    fn new(info: Implementation) -> Self {
        Self {
            info,
            instructions: None,
            registry: Registry::default(),
            errors: Vec::new(),
            completion: None,
            limits: Limits::default(),
            cache_hints: CacheHints::default(),
            keys: None,
            state_ttl: std::time::Duration::from_secs(600),
            state_single_use: None,
            state_single_use_store: None,
            bus: None,
            logging: false,
            validate_schemas: cfg!(feature = "schema-validation"),
            stamp_server_info: true,
            page_size: None,
            declare: Declared::default(),
            extensions: None,
            handshake: true,
            modern: true,
            tasks: None,
            shared_sessions: None,
            app_state: StateMap::new(),
            completion_needs: Vec::new(),
            layers: Vec::new(),
            skills: crate::skills::wire::SkillsConfig::default(),
            fallback: None,
            on_notification: None,
        }
    }

    /// The skills configuration (see [`crate::skills`]).
    pub(crate) fn skills_config(&mut self) -> &mut crate::skills::wire::SkillsConfig {
        &mut self.skills
    }

    /// Adds RPC-level middleware around the dispatcher: it sees every
    /// admitted request on every transport and era (see
    /// [`crate::middleware`]). Layers added first are outermost: they see
    /// a request first and its answer last.
    pub fn layer(mut self, layer: impl crate::middleware::RpcLayer) -> Self {
        self.layers.push(Arc::new(layer));
        self
    }

    /// Serves every request method the server does not implement (an
    /// extension or vendor method) with `handler`, instead of answering
    /// -32601. The request is admitted like any other first (on the
    /// 2026-07-28 wire, the whole validation ladder and the routing
    /// headers), and middleware sees it; see [`crate::fallback`]. A second
    /// call replaces the handler.
    pub fn fallback(mut self, handler: impl FallbackHandler) -> Self {
        self.fallback = Some(Arc::new(handler));
        self
    }

    /// Calls `hook` with each client notification the server does not act
    /// on itself (every one but `notifications/cancelled` and
    /// `notifications/initialized`) that arrives over Streamable HTTP,
    /// instead of dropping it; see [`crate::ClientNotification`]. A
    /// second call replaces the hook.
    pub fn on_notification(
        mut self,
        hook: impl Fn(crate::ClientNotification) + Send + Sync + 'static,
    ) -> Self {
        self.on_notification = Some(Arc::new(hook));
        self
    }

    /// Replaces the server's self-description (title, icons, …).
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }
    /// Instructions for the client's model.
    pub fn instructions(mut self, s: impl Into<String>) -> Self {
        self.instructions = Some(s.into());
        self
    }
    /// Registers a tool. Problems (duplicate name, invalid schema or
    /// `x-mcp-header`) are reported by [`Self::build`].
    pub fn tool(mut self, def: ToolDef) -> Self {
        if let Err(e) = self.registry.add_tool(def) {
            self.errors.push(e);
        }
        self
    }
    /// Registers several tools, e.g. those a `#[router]` impl block
    /// collected (feature `macros`).
    ///
    /// ```
    /// use ferromcp_server::{Server, tool, NoArgs, RequestContext};
    ///
    /// let defs = ["a", "b"].map(|n| tool(n).handler(|_: NoArgs, _cx: RequestContext| async { "ok" }));
    /// assert!(Server::builder("s", "1").tools(defs).build().is_ok());
    /// ```
    pub fn tools(self, defs: impl IntoIterator<Item = ToolDef>) -> Self {
        defs.into_iter().fold(self, Self::tool)
    }
    /// Registers several prompts (like [`Self::tools`]).
    pub fn prompts(self, defs: impl IntoIterator<Item = PromptDef>) -> Self {
        defs.into_iter().fold(self, Self::prompt)
    }
    /// Registers several static resources.
    ///
    /// ```
    /// use ferromcp_server::{Server, resource, resource_template, ResourceRequest, RequestContext};
    /// use ferromcp_server::protocol::types::ResourceContents;
    ///
    /// let read = |r: ResourceRequest, _cx: RequestContext| async move {
    ///     ResourceContents::text(r.uri, None, "x")
    /// };
    /// let server = Server::builder("s", "1")
    ///     .resources([resource("mem://a", "a").handler(read), resource("mem://b", "b").handler(read)])
    ///     .resource_templates([resource_template("mem://c/{n}", "c").handler(read)])
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn resources<D: Into<AnyResourceDef>>(self, defs: impl IntoIterator<Item = D>) -> Self {
        defs.into_iter().fold(self, |b, d| b.resource(d))
    }
    /// Registers several resource templates (see [`Self::resources`]).
    pub fn resource_templates(self, defs: impl IntoIterator<Item = TemplateDef>) -> Self {
        defs.into_iter().fold(self, Self::resource_template)
    }
    /// Gives handlers shared application state of type `T`, which they take
    /// as a [`State<T>`](crate::State) parameter of their `handler` or read with
    /// [`RequestContext::app_state`]. One value per type (a second call with
    /// the same type replaces the first); `T` is cloned for each call, so
    /// share heavy state behind an `Arc`. See [`crate::State`].
    ///
    /// ```
    /// use ferromcp_server::{Server, State, tool, NoArgs, RequestContext};
    /// use std::sync::Arc;
    ///
    /// let server = Server::builder("s", "1")
    ///     .with_state(Arc::new(String::from("v1.2")))
    ///     .tool(tool("version").handler(
    ///         |State(v): State<Arc<String>>, _: NoArgs, _cx: RequestContext| async move { v.to_string() },
    ///     ))
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn with_state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.app_state
            .insert(std::any::TypeId::of::<T>(), Arc::new(value));
        self
    }
    /// Registers a prompt.
    pub fn prompt(mut self, def: PromptDef) -> Self {
        if let Err(e) = self.registry.add_prompt(def) {
            self.errors.push(e);
        }
        self
    }
    /// Registers a static resource or a resource template: a
    /// [`ResourceDef`] or a [`TemplateDef`] (what `#[resource]` makes
    /// depends on whether its URI has `{variables}`; this takes either).
    ///
    /// ```
    /// use ferromcp_server::{Server, resource, resource_template, ResourceRequest, RequestContext};
    ///
    /// let server = Server::builder("s", "1")
    ///     .resource(resource("mem://a", "a").handler(|_, _cx: RequestContext| async { "a" }))
    ///     .resource(resource_template("mem://n/{n}", "n").handler(
    ///         |r: ResourceRequest, _cx: RequestContext| async move { r.vars["n"].clone() },
    ///     ))
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn resource(mut self, def: impl Into<AnyResourceDef>) -> Self {
        let added = match def.into() {
            AnyResourceDef::Resource(d) => self.registry.add_resource(d),
            AnyResourceDef::Template(d) => self.registry.add_template(d),
        };
        if let Err(e) = added {
            self.errors.push(e);
        }
        self
    }
    /// Registers a resource template.
    pub fn resource_template(mut self, def: TemplateDef) -> Self {
        if let Err(e) = self.registry.add_template(def) {
            self.errors.push(e);
        }
        self
    }
    /// Sets the `completion/complete` handler (declares `completions`);
    /// see [`CompletionFn`](crate::CompletionFn) for the shapes it may
    /// have: `async fn(CompleteRequestParams, RequestContext)`,
    /// `async fn(CompleteRequestParams)`, or either with extractors such
    /// as [`State<S>`](crate::State) first. A `State<S>` whose `S` was not
    /// given to [`Self::with_state`] makes [`Self::build`] fail.
    ///
    /// ```
    /// use ferromcp_server::{HandlerError, RequestContext, Server, State};
    /// use ferromcp_server::protocol::types::{CompleteRequestParams, Completion};
    /// use std::sync::Arc;
    ///
    /// let languages: Arc<Vec<String>> = Arc::new(vec!["rust".into(), "ruby".into()]);
    /// let server = Server::builder("s", "1")
    ///     .with_state(languages)
    ///     .completion(
    ///         |State(langs): State<Arc<Vec<String>>>, p: CompleteRequestParams, _cx: RequestContext| async move {
    ///             let values = langs.iter().filter(|l| l.starts_with(&p.argument.value)).cloned().collect();
    ///             Ok::<_, HandlerError>(Completion { values, ..Completion::default() })
    ///         },
    ///     )
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn completion<T: 'static, H: crate::handler::CompletionFn<T>>(mut self, f: H) -> Self {
        self.completion = Some(Arc::new(crate::handler::ErasedCompletion::new(f)));
        self.completion_needs = crate::handler::needs(H::declare);
        self
    }
    // LOG-03
    /// Declares the `logging` capability so handlers may emit log
    /// notifications to clients that ask for them.
    pub fn logging(mut self, on: bool) -> Self {
        self.logging = on;
        self
    }
    /// Declares `resources.subscribe` (resource-updated notifications).
    pub fn resource_subscriptions(mut self, on: bool) -> Self {
        self.declare.resource_subscribe = on;
        self.declare.resources |= on;
        self
    }
    /// Declares `tools` even while no tool is registered.
    pub fn declare_tools(mut self) -> Self {
        self.declare.tools = true;
        self
    }
    /// Declares `prompts` even while no prompt is registered.
    pub fn declare_prompts(mut self) -> Self {
        self.declare.prompts = true;
        self
    }
    // VER-07
    /// Advertises an extension in `capabilities.extensions`.
    pub fn extension(mut self, id: impl Into<String>, settings: JsonObject) -> Self {
        self.extensions
            .get_or_insert_with(JsonObject::new)
            .insert(id.into(), serde_json::Value::Object(settings));
        self
    }
    /// Sets every limit at once.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
    /// Caching hints per cacheable method.
    pub fn cache_hints(mut self, hints: CacheHints) -> Self {
        self.cache_hints = hints;
        self
    }
    /// Keys for sealing `requestState` (first seals, all open: rotation).
    /// Without this a random key is generated at build time, which is right
    /// for a single process; replicas behind a load balancer must share keys.
    pub fn state_keys(mut self, keys: KeyRing) -> Self {
        self.keys = Some(keys);
        self
    }
    /// How long a sealed `requestState` stays valid. Default 10 minutes.
    pub fn state_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.state_ttl = ttl;
        self
    }
    // MRTR-09
    /// Makes every `requestState` single-use (for tools with
    /// at-most-once semantics): a token is accepted once, remembering at most
    /// `max_tokens` unexpired ones per process (default off; see
    /// [`crate::request_state::StateSealer::with_single_use`] and
    /// [`crate::request_state::DEFAULT_MAX_CONSUMED_TOKENS`]).
    pub fn state_single_use(mut self, max_tokens: usize) -> Self {
        self.state_single_use = Some(max_tokens);
        self
    }
    // MRTR-09
    /// Makes every `requestState` single-use, recorded in `store` instead of
    /// the in-process record: with a store shared by every replica (e.g.
    /// `ferromcp_redis::RedisSingleUse`) a token is accepted once fleet-wide.
    /// Takes precedence over [`Self::state_single_use`]. A store
    /// that cannot answer refuses the retry with -32603 (HTTP 503 with
    /// `Retry-After`); see [`crate::single_use`].
    pub fn state_single_use_store(mut self, store: Arc<dyn SingleUseStore>) -> Self {
        self.state_single_use_store = Some(store);
        self
    }
    /// Shares handshake-era sessions with other replicas through `store`
    /// (see [`crate::shared_sessions`]): a session created on one replica
    /// is served by all, DELETE ends it everywhere, and a store that cannot
    /// answer turns session requests into 503 with `Retry-After`. Without
    /// it (the default) sessions live in this process only.
    pub fn shared_sessions(
        mut self,
        store: Arc<dyn crate::shared_sessions::SharedSessions>,
    ) -> Self {
        self.shared_sessions = Some(store);
        self
    }
    /// Replaces the in-process change bus.
    pub fn change_bus(mut self, bus: Arc<dyn ChangeBus>) -> Self {
        self.bus = Some(bus);
        self
    }
    // META-08
    /// Whether to stamp `_meta["io.modelcontextprotocol/serverInfo"]` on
    /// modern results. Default on.
    pub fn stamp_server_info(mut self, on: bool) -> Self {
        self.stamp_server_info = on;
        self
    }
    // TOOL-06, TOOL-07, TOOL-09
    /// Whether `tools/call` checks the arguments against the tool's
    /// `inputSchema` (a failing call is an `isError` result and never
    /// reaches the handler) and `structuredContent` against its
    /// `outputSchema` (a mismatch is a -32603).
    ///
    /// The checking is done by the `schema-validation` feature (a default
    /// feature): with it, the default is on, and off leaves schema-only
    /// constraints (`pattern`, `minimum`, `enum`, …) to the handler (typed
    /// handlers still reject arguments their parameter type cannot
    /// deserialize; schemas are still compiled, and so checked, at
    /// registration). Without the feature the default is off, and asking
    /// for `true` makes [`Self::build`] fail with a configuration error
    /// ([`Error::is_config`]) rather than serve unchecked.
    ///
    /// ```
    /// use ferromcp_server::{NoArgs, RequestContext, Server, tool};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(tool("t").handler(|_: NoArgs, _cx: RequestContext| async { "ok" }))
    ///     .validate_schemas(false)
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn validate_schemas(mut self, on: bool) -> Self {
        self.validate_schemas = on;
        self
    }
    /// Page size for the four list methods; default: one page.
    pub fn page_size(mut self, n: usize) -> Self {
        self.page_size = Some(n.max(1));
        self
    }
    /// Whether the list methods answer in pages ([`ServerBuilder::page_size`]
    /// was set).
    pub fn paginates(&self) -> bool {
        self.page_size.is_some()
    }
    /// Enables the tasks extension (`io.modelcontextprotocol/tasks`, advertised
    /// in `capabilities.extensions`) with these settings: store, TTL, poll
    /// interval. Registering a tool with task support enables it with
    /// [`crate::TaskConfig::default`] when this is not called.
    pub fn tasks(mut self, config: crate::tasks::TaskConfig) -> Self {
        self.tasks = Some(config);
        self
    }
    /// Whether to serve the handshake-era revisions too. Default on.
    pub fn handshake_era(mut self, on: bool) -> Self {
        self.handshake = on;
        self
    }

    /// Whether to serve the 2026-07-28 revision. Default on; off makes a
    /// handshake-only server (as servers written before 2026-07-28 are),
    /// mostly to test clients and bridges against one. At least one era
    /// must stay on.
    pub fn modern_era(mut self, on: bool) -> Self {
        self.modern = on;
        self
    }

    /// Every `State<T>` a registered handler takes must have been given.
    fn check_state_needs(&self) -> Result<(), Error> {
        let map = &self.app_state;
        let r = &self.registry;
        for t in &r.tools {
            check_needs(
                &t.def.state_needs,
                map,
                &format!("tool {:?}", t.def.tool.name),
            )?;
        }
        for p in &r.prompts {
            check_needs(&p.state_needs, map, &format!("prompt {:?}", p.prompt.name))?;
        }
        for d in &r.resources {
            check_needs(
                &d.state_needs,
                map,
                &format!("resource {:?}", d.resource.uri),
            )?;
        }
        for d in &r.templates {
            let what = format!("resource template {:?}", d.template.uri_template);
            check_needs(&d.state_needs, map, &what)?;
        }
        check_needs(&self.completion_needs, map, "the completion handler")
    }

    /// Records a registration problem for [`Self::build`] to report.
    pub(crate) fn push_error(mut self, e: Error) -> Self {
        self.errors.push(e);
        self
    }

    /// Builds the server, reporting the first registration problem.
    pub fn build(mut self) -> Result<Server, Error> {
        if let Some(e) = self.errors.drain(..).next() {
            return Err(e);
        }
        self.check_state_needs()?;
        let skills = Self::build_skills(
            std::mem::take(&mut self.skills),
            &mut self.registry,
            &mut self.extensions,
        )?;
        if skills.is_some() {
            self.declare.resources = true;
        }
        let reg = &self.registry;
        let registered = |uri: &str| {
            reg.resource_index.contains_key(uri)
                || reg.templates.iter().any(|d| {
                    d.compiled
                        .as_ref()
                        .is_some_and(|c| c.match_uri(uri).is_some())
                })
        };
        let tools = reg.tools.iter().map(|t| &t.def.tool);
        let resources = reg.resources.iter().map(|d| &d.resource);
        if crate::apps::wire::check(tools, resources, registered)? {
            crate::apps::wire::declare(&mut self.extensions);
        }
        if !self.modern && !self.handshake {
            return Err(Error::config("a server must serve at least one era"));
        }
        if self.validate_schemas && !cfg!(feature = "schema-validation") {
            return Err(Error::config(
                "validate_schemas(true) needs ferromcp-server's `schema-validation` feature, \
                 which this build leaves out",
            ));
        }
        let keys = match self.keys {
            Some(k) => k,
            None => KeyRing::random()
                .map_err(|e| Error::config(format!("cannot generate a requestState key: {e}")))?,
        };
        let bus = self
            .bus
            .unwrap_or_else(|| Arc::new(LocalBus::new(self.limits.listen_backlog)));
        let handshake_versions = if self.handshake {
            vec![
                ProtocolVersion::V2025_11_25,
                ProtocolVersion::V2025_06_18,
                ProtocolVersion::V2025_03_26,
            ]
        } else {
            Vec::new()
        };
        let server_info_member = {
            let mut m = b",\"_meta\":{\"".to_vec();
            m.extend_from_slice(ferromcp_protocol::meta::SERVER_INFO.as_bytes());
            m.extend_from_slice(b"\":");
            m.extend_from_slice(
                &serde_json::to_vec(&self.info)
                    .map_err(|e| Error::config(format!("serverInfo does not serialize: {e}")))?,
            );
            m.push(b'}');
            m
        };
        let tasks = match self.tasks {
            Some(c) => Some(c),
            None if self
                .registry
                .tools
                .iter()
                .any(|t| t.def.task_support != crate::tasks::TaskSupport::Forbidden) =>
            {
                Some(crate::tasks::TaskConfig::default())
            }
            None => None,
        }
        .map(|c| Arc::new(crate::tasks::Tasks::new(c)));
        Ok(Server {
            shared: Arc::new(Shared {
                skills,
                tasks,
                shared_sessions: self.shared_sessions,
                app_state: self.app_state,
                rpc: crate::middleware::stack(&self.layers),
                fallback: self.fallback,
                on_notification: self.on_notification,
                server_info_member,
                info: self.info,
                instructions: self.instructions,
                registry: ArcSwap::from_pointee(self.registry),
                completion: self.completion,
                modern_versions: if self.modern {
                    ProtocolVersion::MODERN.to_vec()
                } else {
                    Vec::new()
                },
                handshake_versions,
                cache_hints: self.cache_hints,
                sealer: {
                    let sealer = StateSealer::new(keys).with_ttl(self.state_ttl);
                    match (self.state_single_use_store, self.state_single_use) {
                        (Some(store), _) => sealer.with_single_use_store(store),
                        (None, Some(max)) => sealer.with_single_use(max),
                        (None, None) => sealer,
                    }
                },
                bus,
                logging_enabled: self.logging,
                validate_schemas: self.validate_schemas,
                stamp_server_info: self.stamp_server_info,
                page_size: self.page_size,
                declare: self.declare,
                extensions: self.extensions,
                limits: self.limits,
            }),
        })
    }
}

#[cfg(test)]
mod era_tests {
    use super::*;

    #[test]
    fn a_server_must_serve_some_era() {
        let none = Server::builder("s", "1")
            .modern_era(false)
            .handshake_era(false)
            .build();
        assert!(none.is_err());
        let legacy = Server::builder("s", "1").modern_era(false).build();
        let versions: Vec<ProtocolVersion> = legacy
            .map(|s| s.shared.all_versions().collect())
            .unwrap_or_default();
        assert!(!versions.is_empty());
        assert!(versions.iter().all(|v| !v.is_modern()), "{versions:?}");
    }
}
