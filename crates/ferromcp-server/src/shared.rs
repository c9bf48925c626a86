//! The server core every request, connection and transport shares:
//! registry, limits, versions, sealer, change bus and hooks.

use crate::cache_hints::CacheHints;
use crate::error::Error;
use crate::handler::FallbackHandler;
use crate::limits::Limits;
use crate::notify::{Change, ChangeBus};
use crate::prompt::CompletionHandler;
use crate::registry::Registry;
use crate::request_state::StateSealer;
use crate::state::StateMap;
use arc_swap::ArcSwap;
use ferromcp_protocol::ProtocolVersion;
use ferromcp_protocol::types::{
    Implementation, JsonObject, ListChangedCapability, ResourcesCapability, ServerCapabilities,
};
use std::sync::Arc;

/// State shared by every request, connection and transport.
pub(crate) struct Shared {
    info: Implementation,
    /// `,"_meta":{"io.modelcontextprotocol/serverInfo":<info>}`, serialized once.
    server_info_member: Vec<u8>,
    instructions: Option<String>,
    registry: ArcSwap<Registry>,
    completion: Option<Arc<dyn CompletionHandler>>,
    limits: Limits,
    modern_versions: Vec<ProtocolVersion>,
    handshake_versions: Vec<ProtocolVersion>,
    cache_hints: CacheHints,
    sealer: StateSealer,
    bus: Arc<dyn ChangeBus>,
    logging_enabled: bool,
    /// [`ServerBuilder::validate_schemas`]; only ever `true` with the
    /// `schema-validation` feature, whose code reads it.
    #[cfg_attr(not(feature = "schema-validation"), allow(dead_code))]
    validate_schemas: bool,
    stamp_server_info: bool,
    page_size: Option<usize>,
    declare: Declared,
    extensions: Option<JsonObject>,
    /// The tasks extension, when enabled.
    tasks: Option<Arc<crate::tasks::Tasks>>,
    /// Handshake-era session records shared with other replicas.
    shared_sessions: Option<Arc<dyn crate::shared_sessions::SharedSessions>>,
    /// Application state given to [`ServerBuilder::with_state`].
    app_state: StateMap,
    /// The middleware stack around the dispatcher ([`ServerBuilder::layer`]);
    /// `None` without middleware.
    rpc: Option<Arc<dyn crate::middleware::RpcService>>,
    /// The skills extension, when skills are served.
    skills: Option<Arc<crate::skills::wire::ServedSkills>>,
    /// The handler of methods the server does not implement
    /// ([`ServerBuilder::fallback`]); `None`: they are -32601.
    fallback: Option<Arc<dyn FallbackHandler>>,
    /// The hook for client notifications the server does not act on
    /// ([`ServerBuilder::on_notification`]).
    on_notification: Option<crate::client_notification::NotificationHook>,
}

/// What the builder hands the core, moved in by [`Shared::new`]: the same
/// fields, with the registry not yet behind its swap.
pub(crate) struct SharedParts {
    pub(crate) info: Implementation,
    /// `,"_meta":{"io.modelcontextprotocol/serverInfo":<info>}`, serialized once.
    pub(crate) server_info_member: Vec<u8>,
    pub(crate) instructions: Option<String>,
    pub(crate) registry: Registry,
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
    pub(crate) skills: Option<Arc<crate::skills::wire::ServedSkills>>,
    /// The handler of methods the server does not implement
    /// ([`ServerBuilder::fallback`]); `None`: they are -32601.
    pub(crate) fallback: Option<Arc<dyn FallbackHandler>>,
    /// The hook for client notifications the server does not act on
    /// ([`ServerBuilder::on_notification`]).
    pub(crate) on_notification: Option<crate::client_notification::NotificationHook>,
}

impl Shared {
    /// The core built from `p`.
    pub(crate) fn new(p: SharedParts) -> Self {
        Self {
            info: p.info,
            server_info_member: p.server_info_member,
            instructions: p.instructions,
            registry: ArcSwap::from_pointee(p.registry),
            completion: p.completion,
            limits: p.limits,
            modern_versions: p.modern_versions,
            handshake_versions: p.handshake_versions,
            cache_hints: p.cache_hints,
            sealer: p.sealer,
            bus: p.bus,
            logging_enabled: p.logging_enabled,
            validate_schemas: p.validate_schemas,
            stamp_server_info: p.stamp_server_info,
            page_size: p.page_size,
            declare: p.declare,
            extensions: p.extensions,
            tasks: p.tasks,
            shared_sessions: p.shared_sessions,
            app_state: p.app_state,
            rpc: p.rpc,
            skills: p.skills,
            fallback: p.fallback,
            on_notification: p.on_notification,
        }
    }
}

/// Which capabilities were declared explicitly (beyond what registrations imply).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Declared {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) resource_subscribe: bool,
}

/// What the transports read of the core: these methods, never its fields
/// (`scripts/transport-api.py` checks `src/transport/`).
impl Shared {
    /// Every size, count and time limit.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Where list changes and resource updates are published.
    pub(crate) fn bus(&self) -> &Arc<dyn ChangeBus> {
        &self.bus
    }

    /// The 2026-07-28-era revisions served, newest first (empty: that era
    /// is off).
    pub(crate) fn modern_versions(&self) -> &[ProtocolVersion] {
        &self.modern_versions
    }

    /// The handshake-era revisions served, newest first (empty: that era
    /// is off).
    pub(crate) fn handshake_versions(&self) -> &[ProtocolVersion] {
        &self.handshake_versions
    }

    /// The handshake-era session records shared with other replicas, if
    /// configured.
    pub(crate) fn shared_sessions(
        &self,
    ) -> Option<&Arc<dyn crate::shared_sessions::SharedSessions>> {
        self.shared_sessions.as_ref()
    }

    /// The hook for client notifications the server does not act on.
    pub(crate) fn on_notification(&self) -> Option<&crate::client_notification::NotificationHook> {
        self.on_notification.as_ref()
    }

    /// Whether `logging/setLevel` is served.
    pub(crate) fn logging_enabled(&self) -> bool {
        self.logging_enabled
    }

    /// Whether resource subscriptions were declared.
    pub(crate) fn subscriptions_declared(&self) -> bool {
        self.declare.resource_subscribe
    }
}

/// What the core's own files (dispatch, admission, listen streams, tasks,
/// skills, the facade) read of it: the fields stay private to this file.
impl Shared {
    /// The server's self-description.
    pub(crate) fn info(&self) -> &Implementation {
        &self.info
    }

    /// `,"_meta":{"io.modelcontextprotocol/serverInfo":<info>}`, serialized once.
    pub(crate) fn server_info_member(&self) -> &[u8] {
        &self.server_info_member
    }

    /// The `instructions` of the initialize/discover answer.
    pub(crate) fn instructions(&self) -> &Option<String> {
        &self.instructions
    }

    /// The registry as it is now, kept by the caller (one snapshot per
    /// call: the handler run is the one looked up).
    pub(crate) fn registry_snapshot(&self) -> Arc<Registry> {
        self.registry.load_full()
    }

    /// The completion handler, if any.
    pub(crate) fn completion(&self) -> &Option<Arc<dyn CompletionHandler>> {
        &self.completion
    }

    /// The cache hints of list and read answers (2026-07-28).
    pub(crate) fn cache_hints(&self) -> &CacheHints {
        &self.cache_hints
    }

    /// Seals and opens `requestState`.
    pub(crate) fn sealer(&self) -> &StateSealer {
        &self.sealer
    }

    /// Whether results are validated against the tools' schemas.
    #[cfg_attr(not(feature = "schema-validation"), allow(dead_code))]
    pub(crate) fn validate_schemas(&self) -> bool {
        self.validate_schemas
    }

    /// Whether results carry the server's self-description in `_meta`.
    pub(crate) fn stamp_server_info(&self) -> bool {
        self.stamp_server_info
    }

    /// The page size of list answers (`None`: one page).
    pub(crate) fn page_size(&self) -> Option<usize> {
        self.page_size
    }

    /// Which capabilities were declared explicitly.
    pub(crate) fn declare(&self) -> Declared {
        self.declare
    }

    /// The tasks extension, when enabled.
    pub(crate) fn tasks(&self) -> &Option<Arc<crate::tasks::Tasks>> {
        &self.tasks
    }

    /// The application state given to `ServerBuilder::with_state`.
    pub(crate) fn app_state(&self) -> &StateMap {
        &self.app_state
    }

    /// The middleware stack around the dispatcher, if any.
    pub(crate) fn rpc(&self) -> &Option<Arc<dyn crate::middleware::RpcService>> {
        &self.rpc
    }

    /// The skills extension, when skills are served.
    pub(crate) fn skills(&self) -> &Option<Arc<crate::skills::wire::ServedSkills>> {
        &self.skills
    }

    /// The handler of methods the server does not implement, if any.
    pub(crate) fn fallback_handler(&self) -> &Option<Arc<dyn FallbackHandler>> {
        &self.fallback
    }
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

    pub(crate) fn update(
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

/// The handler-facing seam: what a request context reads of the core.
impl crate::context::ServerCore for Shared {
    fn logging_enabled(&self) -> bool {
        self.logging_enabled
    }
    fn bus(&self) -> &Arc<dyn ChangeBus> {
        &self.bus
    }
    fn app_state(&self) -> &StateMap {
        &self.app_state
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}
