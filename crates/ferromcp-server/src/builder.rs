//! [`ServerBuilder`]: every limit and policy of a server, with named
//! defaults, checked once by `build`.

use crate::backplane::Backplane;
use crate::cache_hints::CacheHints;
use crate::error::Error;
use crate::handler::FallbackHandler;
use crate::limits::Limits;
use crate::prompt::{CompletionHandler, PromptDef};
use crate::registry::{Registry, check_needs};
use crate::request_state_config::RequestStateConfig;
use crate::resource::TemplateDef;
use crate::server::{AnyResourceDef, Server};
use crate::shared::{Declared, Shared, SharedParts};
use crate::state::{StateMap, StateNeed};
use crate::tool::ToolDef;
use ferromcp_protocol::ProtocolVersion;
use ferromcp_protocol::types::{Implementation, JsonObject};
use std::sync::Arc;

/// Builds a [`Server`]. Every limit and policy has a named default.
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    registry: Registry,
    errors: Vec<Error>,
    completion: Option<Arc<dyn CompletionHandler>>,
    limits: Limits,
    cache_hints: CacheHints,
    request_state: RequestStateConfig,
    backplane: Backplane,
    logging: bool,
    validate_schemas: bool,
    stamp_server_info: bool,
    page_size: Option<usize>,
    declare: Declared,
    extensions: Option<JsonObject>,
    handshake: bool,
    modern: bool,
    tasks: Option<crate::tasks::TaskConfig>,
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
    pub(crate) fn new(info: Implementation) -> Self {
        Self {
            info,
            instructions: None,
            registry: Registry::default(),
            errors: Vec::new(),
            completion: None,
            limits: Limits::default(),
            cache_hints: CacheHints::default(),
            request_state: RequestStateConfig::default(),
            backplane: Backplane::default(),
            logging: false,
            validate_schemas: cfg!(feature = "schema-validation"),
            stamp_server_info: true,
            page_size: None,
            declare: Declared::default(),
            extensions: None,
            handshake: true,
            modern: true,
            tasks: None,
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
    /// [`RequestContext::app_state`](crate::RequestContext::app_state). One value per type (a second call with
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
    /// [`ResourceDef`](crate::ResourceDef) or a [`TemplateDef`](crate::TemplateDef) (what `#[resource]` makes
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
    /// How `requestState` is sealed and opened: keys, lifetime, single
    /// use (see [`RequestStateConfig`]; the default suits one process). A
    /// second call replaces the whole group.
    ///
    /// ```
    /// use ferromcp_server::{RequestStateConfig, Server};
    /// use std::time::Duration;
    ///
    /// let server = Server::builder("s", "1")
    ///     .request_state(RequestStateConfig::default().ttl(Duration::from_secs(60)).single_use(1000))
    ///     .build();
    /// assert!(server.is_ok());
    /// ```
    pub fn request_state(mut self, config: RequestStateConfig) -> Self {
        self.request_state = config;
        self
    }
    /// What this server shares with the other replicas of its fleet: the
    /// change bus and the handshake-era session store (see [`Backplane`];
    /// the default is in-process). A second call replaces the whole group.
    pub fn backplane(mut self, backplane: Backplane) -> Self {
        self.backplane = backplane;
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
        let skills = crate::skills::wire::build_skills(
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
        let sealer = self.request_state.into_sealer()?;
        let bus = self.backplane.take_change_bus(self.limits.listen_backlog);
        let shared_sessions = self.backplane.take_shared_sessions();
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
            shared: Arc::new(Shared::new(SharedParts {
                skills,
                tasks,
                shared_sessions,
                app_state: self.app_state,
                rpc: crate::middleware::stack(&self.layers),
                fallback: self.fallback,
                on_notification: self.on_notification,
                server_info_member,
                info: self.info,
                instructions: self.instructions,
                registry: self.registry,
                completion: self.completion,
                modern_versions: if self.modern {
                    ProtocolVersion::MODERN.to_vec()
                } else {
                    Vec::new()
                },
                handshake_versions,
                cache_hints: self.cache_hints,
                sealer,
                bus,
                logging_enabled: self.logging,
                validate_schemas: self.validate_schemas,
                stamp_server_info: self.stamp_server_info,
                page_size: self.page_size,
                declare: self.declare,
                extensions: self.extensions,
                limits: self.limits,
            })),
        })
    }
}

/// The skills extension's builder methods (SEP-2640).
impl ServerBuilder {
    /// Serves `skill` (see [`crate::skills`]). The server declares the
    /// skills extension and answers `skills/list`, `skills/get` and
    /// `resources/directory/read`; [`ServerBuilder::build`] fails when a
    /// skill breaks a naming or front-matter rule or a [`SkillsLimits`](crate::skills::SkillsLimits)
    /// bound.
    pub fn skill(mut self, skill: crate::skills::Skill) -> Self {
        let c = self.skills_config();
        c.enabled = true;
        c.skills.push(skill);
        self
    }

    /// Serves every skill of `skills`.
    pub fn skills(mut self, skills: impl IntoIterator<Item = crate::skills::Skill>) -> Self {
        let c = self.skills_config();
        c.enabled = true;
        c.skills.extend(skills);
        self
    }

    /// The bounds applied to the skills (default [`SkillsLimits::default`](crate::skills::SkillsLimits::default)).
    pub fn skills_limits(mut self, limits: crate::skills::SkillsLimits) -> Self {
        self.skills_config().limits = limits;
        self
    }

    /// Serves the skills found in the folder `dir` (each a directory
    /// holding a `SKILL.md`; see [`crate::skills::load_dir`]), read with
    /// the limits given so far. Keep it current with
    /// [`crate::skills::watch`].
    #[cfg(feature = "fs")]
    pub fn skills_dir(mut self, dir: impl AsRef<std::path::Path>) -> Self {
        let limits = self.skills_config().limits.clone();
        match crate::skills::load_dir(dir.as_ref(), &limits) {
            Ok(skills) => self.skills(skills),
            Err(e) => self.push_error(e),
        }
    }
}

impl Server {
    /// Starts a builder for a server identified as `name` `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(Implementation::new(name, version))
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
