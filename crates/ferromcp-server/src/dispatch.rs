//! Method dispatch shared by every transport and both eras: typed params in,
//! a serialized JSON-RPC response (or an error object) out.
//!
//! Result shaping happens here, in one place: `resultType`, serverInfo and
//! cache hints on modern results; nothing of
//! that, and a per-revision sieve, on handshake-era results.
// RESULT-01, META-08, CACHE-01, LEGACY-25

use crate::admit::{Call, CallRequest};
use crate::context::{ContextParts, RequestContext};
use crate::error::{HandlerError, InputRequired};
use crate::future::{BoxFuture, Dispatch, Reply};
use crate::outcome::Failure;
use crate::prompt::PromptDef;
use crate::raw_result::{Members, Object, RawResult};
use crate::registry::{RegisteredTool, Registry};
use crate::request_state::StateBinding;
use crate::session::HandshakeSession;
use crate::shared::Shared;
use crate::sieve::{Sieve, sieve_call_result, sieve_icons_title};
#[cfg(feature = "schema-validation")]
use crate::tool::invalid_arguments;
use bytes::Bytes;
use ferromcp_protocol::jsonrpc::{OutgoingResult, RequestId, to_vec};
use ferromcp_protocol::method::ClientRequest;
use ferromcp_protocol::types::{
    CacheHint, CacheableResult, CallToolRequestParams, CallToolResult, CompleteRequestParams,
    CompleteResult, ContentBlock, DiscoverResult, EmptyResult, GetPromptRequestParams,
    InitializeRequestParams, InitializeResult, InputRequiredResult, InputResponses,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, McpResult,
    PaginatedRequestParams, ReadResourceRequestParams, ResultType,
};
use ferromcp_protocol::{ErrorObject, ProtocolVersion};
use futures_util::FutureExt;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

// LEGACY-18
/// Sends requests to the client and awaits the answers (handshake era only:
/// sampling, elicitation, roots on the request's stream).
pub(crate) trait ClientRequester: Send + Sync {
    /// Sends `method` with `params`; resolves with the client's result.
    /// The params arrive serialized, so their members keep the order they
    /// were written in (a form's fields in declaration order) whatever
    /// `serde_json` features the program has.
    fn request(
        &self,
        method: &'static str,
        params: Box<serde_json::value::RawValue>,
    ) -> BoxFuture<Result<Value, ErrorObject>>;
}

/// Handshake-era extras for a call.
#[derive(Clone, Default)]
pub(crate) struct Legacy {
    pub(crate) requester: Option<Arc<dyn ClientRequester>>,
    pub(crate) session: Option<Arc<HandshakeSession>>,
    /// The session's record is shared and the store already checked the
    /// subscription cap for this request, fleet-wide: this replica's copy
    /// may be behind, so it does not judge again.
    pub(crate) shared_record: bool,
}

/// An admitted request on its way through the middleware stack
/// ([`crate::middleware`]) to [`Shared::dispatch_untraced`].
struct ThroughMiddleware {
    shared: Arc<Shared>,
    call: Call,
    parts: ContextParts,
    legacy: Legacy,
}

impl crate::middleware::Admitted for ThroughMiddleware {
    fn method(&self) -> &str {
        self.call.request.method()
    }
    fn name(&self) -> Option<&str> {
        match self.call.request.known()? {
            ClientRequest::CallTool(p) => Some(&p.name),
            ClientRequest::GetPrompt(p) => Some(&p.name),
            ClientRequest::ReadResource(p) => Some(&p.uri),
            ClientRequest::Subscribe(p) => Some(&p.uri),
            ClientRequest::Unsubscribe(p) => Some(&p.uri),
            _ => None,
        }
    }
    fn principal(&self) -> Option<&ferromcp_protocol::Principal> {
        self.parts.principal.as_ref()
    }
    fn version(&self) -> ProtocolVersion {
        self.parts.version
    }
    fn id(&self) -> &RequestId {
        &self.parts.id
    }
    fn dispatch(self: Box<Self>) -> BoxFuture<Reply> {
        let Self {
            shared,
            call,
            parts,
            legacy,
        } = *self;
        Box::pin(shared.dispatch_untraced(call, parts, legacy))
    }
}

impl Shared {
    /// Serves one request. `parts.version` decides the era's shaping.
    ///
    /// Methods answered synchronously (lists, discover, ping) come back
    /// ready, without an allocation; handler-backed methods come back as one
    /// boxed future of just that method's state machine, so callers move a
    /// pointer around rather than a large future (bench/RESULTS.md profile).
    ///
    /// The request runs inside its `mcp.request` span ([`crate::trace`]).
    pub(crate) fn dispatch(
        self: Arc<Self>,
        call: Call,
        parts: ContextParts,
        legacy: Legacy,
    ) -> crate::trace::Traced {
        let span = crate::trace::request_span(&call.request, &parts);
        let fut = match &self.rpc {
            None => self.dispatch_untraced(call, parts, legacy),
            Some(stack) => {
                let stack = stack.clone();
                let req = Box::new(ThroughMiddleware {
                    shared: self,
                    call,
                    parts,
                    legacy,
                });
                Dispatch::Pending(crate::middleware::serve(&stack, req))
            }
        };
        crate::trace::Traced::new(fut, span)
    }

    /// [`Shared::dispatch`] without the span. Everything the request reads
    /// from the registry comes from the admitted snapshot `call.registry`.
    fn dispatch_untraced(
        self: Arc<Self>,
        call: Call,
        parts: ContextParts,
        legacy: Legacy,
    ) -> Dispatch {
        let id = parts.id.clone();
        let Call { request, registry } = call;
        let request = match request {
            CallRequest::Known(r) => r,
            CallRequest::Unhandled(u) => {
                return Dispatch::Pending(Box::pin(self.fallback(u, parts, legacy)));
            }
        };
        let reg = &*registry;
        Dispatch::Ready(Some(match request {
            ClientRequest::Discover(_) => {
                let mut capabilities = self.capabilities_of(reg);
                if self.tasks.is_some() {
                    // Modern wire only: handshake revisions get no tasks.
                    capabilities
                        .extensions
                        .get_or_insert_with(Default::default)
                        .insert(
                            ferromcp_protocol::types::TASKS_EXTENSION.to_owned(),
                            Value::Object(Default::default()),
                        );
                }
                let mut r = DiscoverResult {
                    supported_versions: self
                        .all_versions()
                        .map(|v| v.as_str().to_owned())
                        .collect(),
                    capabilities,
                    instructions: self.instructions.clone(),
                    ..DiscoverResult::default()
                };
                r.fill_cache_hint(self.cache_hints.discover);
                Ok(self.finish(&id, r, parts.version))
            }
            ClientRequest::ListTools(p) if self.has_tools(reg) => {
                self.list_tools(reg, &id, p, parts.version)
            }
            ClientRequest::CallTool(p) if self.has_tools(reg) => {
                let tool = reg.tool(&p.name).cloned();
                return Dispatch::Pending(Box::pin(self.call_tool(tool, p, parts, legacy)));
            }
            ClientRequest::ListPrompts(p) if self.has_prompts(reg) => {
                self.list_prompts(reg, &id, p, parts.version)
            }
            ClientRequest::GetPrompt(p) if self.has_prompts(reg) => {
                let def = reg.prompt(&p.name).cloned();
                return Dispatch::Pending(Box::pin(self.get_prompt(def, p, parts, legacy)));
            }
            ClientRequest::ListResources(p) if self.has_resources(reg) => {
                self.list_resources(reg, &id, p, parts.version)
            }
            ClientRequest::ListResourceTemplates(p) if self.has_resources(reg) => {
                self.list_templates(reg, &id, p, parts.version)
            }
            ClientRequest::ReadResource(p) if self.has_resources(reg) => {
                return Dispatch::Pending(Box::pin(self.read_resource(
                    registry.clone(),
                    p,
                    parts,
                    legacy,
                )));
            }
            ClientRequest::Complete(p) if self.completion.is_some() => {
                return Dispatch::Pending(Box::pin(self.complete(p, parts)));
            }
            // Tasks extension (crate::tasks); the era rule (crate::admit)
            // keeps these and discover off the handshake wire, and the
            // handshake-only methods below off the modern one.
            ClientRequest::GetTask(p) if self.tasks.is_some() => {
                return Dispatch::Pending(Box::pin(self.task_get(p, parts)));
            }
            ClientRequest::UpdateTask(p) if self.tasks.is_some() => {
                return Dispatch::Pending(Box::pin(self.task_update(p, parts)));
            }
            ClientRequest::CancelTask(p) if self.tasks.is_some() => {
                return Dispatch::Pending(Box::pin(self.task_cancel(p, parts)));
            }
            // Skills extension (crate::skills), both eras.
            ClientRequest::ListSkills(p) if self.skills.is_some() => match &self.skills {
                Some(s) => self.list_skills(s, &id, p, parts.version),
                None => Err(ErrorObject::method_not_found("skills/list").into()),
            },
            ClientRequest::GetSkill(p) if self.skills.is_some() => match &self.skills {
                Some(s) => self.get_skill(s, &id, p, parts.version),
                None => Err(ErrorObject::method_not_found("skills/get").into()),
            },
            ClientRequest::ReadDirectory(p) if self.skills.is_some() => match &self.skills {
                Some(s) => self.read_directory(s, &id, p, parts.version),
                None => Err(ErrorObject::method_not_found("resources/directory/read").into()),
            },
            ClientRequest::Ping(_) => Ok(self.finish(&id, EmptyResult::default(), parts.version)),
            ClientRequest::SetLevel(p) if self.logging_enabled => {
                if let Some(s) = &legacy.session {
                    s.set_log_level(p.level);
                }
                Ok(self.finish(&id, EmptyResult::default(), parts.version))
            }
            ClientRequest::Subscribe(p) if self.declare.resource_subscribe => {
                if let Err(e) = self.check_subscription_uri(&p.uri) {
                    return Dispatch::Ready(Some(Err(e.into())));
                }
                if let Some(s) = &legacy.session {
                    let max = if legacy.shared_record {
                        usize::MAX
                    } else {
                        self.limits.max_subscriptions_per_session
                    };
                    if !s.subscribe(p.uri, max) {
                        return Dispatch::Ready(Some(Err(self.too_many_subscriptions().into())));
                    }
                }
                Ok(self.finish(&id, EmptyResult::default(), parts.version))
            }
            ClientRequest::Unsubscribe(p) if self.declare.resource_subscribe => {
                if let Some(s) = &legacy.session {
                    s.unsubscribe(&p.uri);
                }
                Ok(self.finish(&id, EmptyResult::default(), parts.version))
            }
            other => Err(ErrorObject::method_not_found(other.method()).into()),
        }))
    }

    // LEGACY-02
    /// Answers `initialize`: echo the requested version when
    /// served, else offer the newest handshake revision we serve.
    pub(crate) fn initialize(
        &self,
        params: &InitializeRequestParams,
    ) -> Result<(InitializeResult, HandshakeSession), ErrorObject> {
        let span = crate::trace::initialize_span(&params.protocol_version);
        let _entered = span.enter();
        let r = self.initialize_untraced(params);
        let version = match &r {
            Ok((result, _)) => Ok(result.protocol_version.as_str()),
            Err(e) => Err(e.code.0),
        };
        crate::trace::finish_initialize(&span, version);
        r
    }

    fn initialize_untraced(
        &self,
        params: &InitializeRequestParams,
    ) -> Result<(InitializeResult, HandshakeSession), ErrorObject> {
        let requested = ProtocolVersion::parse(&params.protocol_version);
        let version = match requested {
            Some(v) if self.handshake_versions.contains(&v) => v,
            _ => match self.handshake_versions.first() {
                Some(v) => *v,
                None => {
                    return Err(ErrorObject::unsupported_version(
                        &params.protocol_version,
                        self.modern_versions.iter().map(|v| v.as_str()),
                    ));
                }
            },
        };
        let mut info = self.info.clone();
        if crate::sieve::Sieve::for_version(version) != crate::sieve::Sieve::Full {
            info.icons = None;
            info.website_url = None;
            info.description = None;
        }
        if version == ProtocolVersion::V2025_03_26 {
            info.title = None;
        }
        let mut capabilities = self.capabilities();
        capabilities.extensions = handshake_extensions(capabilities.extensions.take());
        let result = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities,
            server_info: info,
            instructions: self.instructions.clone(),
            ..Default::default()
        };
        self.check_client_metadata(params)?;
        Ok((result, HandshakeSession::new(version, params)))
    }

    /// Refuses a subscription URI longer than
    /// `Limits::max_subscription_uri_bytes`.
    pub(crate) fn check_subscription_uri(&self, uri: &str) -> Result<(), ErrorObject> {
        let max = self.limits.max_subscription_uri_bytes;
        if uri.len() > max {
            return Err(ErrorObject::invalid_params(format_args!(
                "the resource URI is {} bytes, more than this server's limit of {max} \
                 (max_subscription_uri_bytes)",
                uri.len()
            )));
        }
        Ok(())
    }

    /// The refusal of a subscribe beyond
    /// `Limits::max_subscriptions_per_session`.
    pub(crate) fn too_many_subscriptions(&self) -> ErrorObject {
        ErrorObject::invalid_params(format_args!(
            "this session already holds {} resource subscriptions, this server's limit \
             (max_subscriptions_per_session); unsubscribe from one first",
            self.limits.max_subscriptions_per_session
        ))
    }

    /// Refuses an `initialize` whose `capabilities` and `clientInfo` are
    /// larger than `Limits::max_client_metadata_bytes` (both are kept for
    /// the session's lifetime, and with shared sessions read back by every
    /// request).
    fn check_client_metadata(&self, params: &InitializeRequestParams) -> Result<(), ErrorObject> {
        let max = self.limits.max_client_metadata_bytes;
        let size = serde_json::to_vec(&params.capabilities).map_or(usize::MAX, |v| v.len())
            + serde_json::to_vec(&params.client_info).map_or(usize::MAX, |v| v.len());
        if size > max {
            return Err(ErrorObject::invalid_params(format_args!(
                "capabilities and clientInfo take {size} bytes, more than this server's \
                 limit of {max} (max_client_metadata_bytes)"
            )));
        }
        Ok(())
    }

    /// Stamps and serializes a result for the request's era.
    pub(crate) fn finish<R: McpResult + Serialize>(
        &self,
        id: &RequestId,
        mut r: R,
        version: ProtocolVersion,
    ) -> Bytes {
        if !version.is_modern() {
            r.set_result_type(None);
            return Bytes::from(to_vec(&OutgoingResult::new(id, &r)));
        }
        r.ensure_result_type();
        if !self.stamp_server_info {
            return Bytes::from(to_vec(&OutgoingResult::new(id, &r)));
        }
        if r.meta().is_some() {
            r.stamp_server_info(&self.info);
            return Bytes::from(to_vec(&OutgoingResult::new(id, &r)));
        }
        // Fast path (META-08): the result has no `_meta`, so append the
        // pre-serialized `"_meta":{"…/serverInfo":…}` member just before the
        // result object's closing brace. The response ends with `}}` (result,
        // then envelope) and the result always has `resultType`, so a comma
        // is correct.
        let mut out = to_vec(&OutgoingResult::new(id, &r));
        if out.ends_with(b"}}") {
            out.truncate(out.len() - 2);
            out.extend_from_slice(&self.server_info_member);
            out.extend_from_slice(b"}}");
        }
        Bytes::from(out)
    }

    // MRTR-12
    /// Serializes an interim MRTR result: never cache hints.
    pub(crate) fn finish_input_required(
        &self,
        id: &RequestId,
        mut r: InputRequiredResult,
    ) -> Bytes {
        crate::trace::note_input_required();
        if self.stamp_server_info {
            if let Ok(v) = serde_json::to_value(&self.info) {
                r.meta
                    .get_or_insert_with(Default::default)
                    .insert(ferromcp_protocol::meta::SERVER_INFO.to_owned(), v);
            }
        }
        Bytes::from(to_vec(&OutgoingResult::new(id, &r)))
    }

    pub(crate) fn finish_cacheable<R: CacheableResult + Serialize>(
        &self,
        id: &RequestId,
        mut r: R,
        hint: CacheHint,
        version: ProtocolVersion,
    ) -> Bytes {
        if version.is_modern() && r.result_type().is_none_or(|t| *t == ResultType::Complete) {
            r.fill_cache_hint(hint);
        }
        self.finish(id, r, version)
    }

    fn page_bounds(
        &self,
        len: usize,
        cursor: Option<&str>,
    ) -> Result<(usize, usize, Option<String>), ErrorObject> {
        let start = match cursor {
            None => 0,
            Some(c) => decode_cursor(c)
                .filter(|s| *s <= len)
                .ok_or_else(|| ErrorObject::invalid_params("invalid cursor"))?,
        };
        let end = match self.page_size {
            Some(n) => (start + n).min(len),
            None => len,
        };
        let next = (end < len).then(|| encode_cursor(end));
        Ok((start, end, next))
    }

    fn list_tools(
        &self,
        reg: &Registry,
        id: &RequestId,
        p: PaginatedRequestParams,
        version: ProtocolVersion,
    ) -> Reply {
        let (start, end, next) = self.page_bounds(reg.tools.len(), p.cursor.as_deref())?;
        let level = Sieve::for_version(version);
        let all = reg.serialized_tools(level);
        let tools = all.get(start..end).unwrap_or_default();
        // The page's size is known: one buffer, never grown (tools/list
        // answers run to tens of KB).
        let size: usize = tools.iter().map(|t| t.get().len() + 1).sum::<usize>() + 512;
        let page = ToolsPage {
            result_type: version.is_modern().then_some(ResultType::Complete),
            tools,
            next_cursor: next,
            ttl_ms: version
                .is_modern()
                .then_some(self.cache_hints.tools_list.ttl_ms),
            cache_scope: version
                .is_modern()
                .then_some(self.cache_hints.tools_list.scope),
            meta: (version.is_modern() && self.stamp_server_info)
                .then_some(ServerInfoMeta { info: &self.info }),
        };
        Ok(Bytes::from(
            ferromcp_protocol::jsonrpc::to_vec_with_capacity(&OutgoingResult::new(id, &page), size),
        ))
    }

    // LEGACY-25
    /// One page of registered definitions: `item` copies a definition out
    /// (and sieves it for the request's revision).
    pub(crate) fn page<D, T>(
        &self,
        all: &[D],
        cursor: Option<&str>,
        item: impl Fn(&D) -> T,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let (start, end, next) = self.page_bounds(all.len(), cursor)?;
        let items = all.get(start..end).unwrap_or_default();
        Ok((items.iter().map(item).collect(), next))
    }

    fn list_prompts(
        &self,
        reg: &Registry,
        id: &RequestId,
        p: PaginatedRequestParams,
        version: ProtocolVersion,
    ) -> Reply {
        let (prompts, next_cursor) = self.page(&reg.prompts, p.cursor.as_deref(), |d| {
            let mut pr = d.prompt.clone();
            sieve_icons_title(version, &mut pr.icons, &mut pr.title);
            pr
        })?;
        let r = ListPromptsResult {
            prompts,
            next_cursor,
            ..Default::default()
        };
        Ok(self.finish_cacheable(id, r, self.cache_hints.prompts_list, version))
    }

    fn list_resources(
        &self,
        reg: &Registry,
        id: &RequestId,
        p: PaginatedRequestParams,
        version: ProtocolVersion,
    ) -> Reply {
        let (resources, next_cursor) = self.page(&reg.resources, p.cursor.as_deref(), |d| {
            let mut r = d.resource.clone();
            sieve_icons_title(version, &mut r.icons, &mut r.title);
            r
        })?;
        let r = ListResourcesResult {
            resources,
            next_cursor,
            ..Default::default()
        };
        Ok(self.finish_cacheable(id, r, self.cache_hints.resources_list, version))
    }

    fn list_templates(
        &self,
        reg: &Registry,
        id: &RequestId,
        p: PaginatedRequestParams,
        version: ProtocolVersion,
    ) -> Reply {
        let (resource_templates, next_cursor) =
            self.page(&reg.templates, p.cursor.as_deref(), |d| {
                let mut t = d.template.clone();
                sieve_icons_title(version, &mut t.icons, &mut t.title);
                t
            })?;
        let r = ListResourceTemplatesResult {
            resource_templates,
            next_cursor,
            ..Default::default()
        };
        Ok(self.finish_cacheable(id, r, self.cache_hints.templates_list, version))
    }

    /// `tools/call` of `tool`, the definition the admitted snapshot has
    /// under `p.name` (the one whose headers the ladder checked).
    async fn call_tool(
        self: Arc<Self>,
        tool: Option<Arc<RegisteredTool>>,
        p: CallToolRequestParams,
        parts: ContextParts,
        legacy: Legacy,
    ) -> Reply {
        let id = parts.id.clone();
        let version = parts.version;
        let Some(tool) = tool else {
            return Err(
                ErrorObject::invalid_params(format_args!("Unknown tool: {}", p.name))
                    .with_data(serde_json::json!({"name": p.name}))
                    .into(),
            );
        };
        let args = Value::Object(p.arguments.unwrap_or_default());
        // TOOL-06: arguments failing the inputSchema are a model-visible error.
        #[cfg(feature = "schema-validation")]
        if let Some(v) = tool.input.as_ref().filter(|_| self.validate_schemas) {
            if !v.is_valid(&args) {
                let msgs: Vec<String> = v
                    .iter_errors(&args)
                    .take(8)
                    .map(|e| {
                        let at = crate::tool::argument_location(&e.instance_path().to_string());
                        format!("{e} at {at}")
                    })
                    .collect();
                return Ok(self.finish(
                    &id,
                    sieve_call_result(version, invalid_arguments(&msgs.join("; "))),
                    version,
                ));
            }
        }
        if let Some(creation) = self.task_mode(&tool, &parts)? {
            // Boxed: the rare branch must not size every call's future.
            return Box::pin(self.call_tool_as_task(
                tool,
                args,
                p.input_responses,
                p.request_state,
                parts,
                creation,
            ))
            .await;
        }
        let (input, state) = (p.input_responses, p.request_state);
        if let Some(raw) = tool.def.raw.clone() {
            let runner = move |args: &Value, cx: RequestContext| raw.call(args, cx);
            let complete = |s: &Self, r: RawResult| s.finish_raw_tool(&tool, &id, &r, version);
            return self
                .answer_mrtr(
                    "tools/call",
                    &p.name,
                    args,
                    (input, state),
                    parts,
                    legacy,
                    runner,
                    OnFailure::ToolError,
                    complete,
                )
                .await;
        }
        let runner = {
            let tool = tool.clone();
            move |args: &Value, cx: RequestContext| tool.def.handler.call(args, cx)
        };
        let complete = |s: &Self, r: CallToolResult| {
            let r = s.check_output(&tool, r)?;
            Ok(s.finish(&id, sieve_call_result(version, r), version))
        };
        self.answer_mrtr(
            "tools/call",
            &p.name,
            args,
            (input, state),
            parts,
            legacy,
            runner,
            OnFailure::ToolError,
            complete,
        )
        .await
    }

    /// The answer to a `tools/call` whose result is already JSON text:
    /// the same checks and additions as [`Self::check_output`],
    /// [`sieve_call_result`] and [`Self::finish`] make on a typed result,
    /// made on its top-level members; every other member is copied as is.
    #[cfg_attr(not(feature = "schema-validation"), allow(unused_variables))]
    pub(crate) fn finish_raw_tool(
        &self,
        tool: &RegisteredTool,
        id: &RequestId,
        r: &RawResult,
        version: ProtocolVersion,
    ) -> Result<Bytes, ErrorObject> {
        let members = Members::of(r.get())?;
        // TOOL-07: isError results skip the outputSchema check.
        if members.get("isError").is_some_and(|v| v.get() == "true") {
            crate::trace::note_tool_error();
        } else {
            #[cfg(feature = "schema-validation")]
            if let Some(v) = tool.output.as_ref().filter(|_| self.validate_schemas) {
                let Some(s) = members.get("structuredContent") else {
                    return Err(ErrorObject::internal(format_args!(
                        "tool {} declares an outputSchema but returned no structuredContent",
                        tool.def.tool.name
                    )));
                };
                let s: Value = serde_json::from_str(s.get())
                    .map_err(|e| ErrorObject::internal(e.to_string()))?;
                if !v.is_valid(&s) {
                    let why = v
                        .iter_errors(&s)
                        .next()
                        .map(|e| e.to_string())
                        .unwrap_or_default();
                    return Err(ErrorObject::internal(format_args!(
                        "tool {} returned structuredContent not matching its outputSchema: {why}",
                        tool.def.tool.name
                    )));
                }
            }
        }
        let minimal = Sieve::for_version(version) == Sieve::Minimal;
        // What an old revision does not know goes, as in sieve_call_result.
        let content = match members.get("content") {
            Some(c) if minimal => {
                let mut blocks: Vec<Value> = serde_json::from_str(c.get()).map_err(|e| {
                    ErrorObject::internal(format!("the tool's result content is malformed: {e}"))
                })?;
                blocks.retain(|b| b["type"] != "resource_link");
                Some(
                    serde_json::value::to_raw_value(&blocks)
                        .map_err(|e| ErrorObject::internal(e.to_string()))?,
                )
            }
            _ => None,
        };
        self.splice_raw(id, &members, version, content, minimal, None)
    }

    /// The answer for a result already JSON text, from its top-level
    /// `members`: `content` replaces the `content` member when given,
    /// `structuredContent` goes when `drop_structured`; for a 2026-07-28
    /// client `resultType` is added when missing, `serverInfo` stamped into
    /// `_meta` (unless there), and the missing cache hints of `hint` added
    /// to a complete result, as [`Self::finish_cacheable`] does; for a
    /// handshake client `resultType` goes. Everything else is copied.
    fn splice_raw(
        &self,
        id: &RequestId,
        members: &Members<'_>,
        version: ProtocolVersion,
        content: Option<Box<RawValue>>,
        drop_structured: bool,
        hint: Option<CacheHint>,
    ) -> Result<Bytes, ErrorObject> {
        let modern = version.is_modern();
        let internal = |e: serde_json::Error| ErrorObject::internal(e.to_string());
        // META-08: serverInfo goes into the result's _meta, unless it has one.
        let stamp = modern && self.stamp_server_info;
        let meta = match members.get("_meta") {
            Some(m) if stamp => {
                let mut m: serde_json::Map<String, Value> =
                    serde_json::from_str(m.get()).map_err(|e| {
                        ErrorObject::internal(format!("the result's _meta is malformed: {e}"))
                    })?;
                if !m.contains_key(ferromcp_protocol::meta::SERVER_INFO) {
                    let info = serde_json::to_value(&self.info).map_err(internal)?;
                    m.insert(ferromcp_protocol::meta::SERVER_INFO.to_owned(), info);
                }
                Some(serde_json::value::to_raw_value(&m).map_err(internal)?)
            }
            _ => None,
        };
        let complete: &RawValue = serde_json::from_str("\"complete\"").map_err(internal)?;
        // CACHE-01: the server's hints fill what a complete result lacks.
        let result_type = members.get("resultType");
        let mut hints: Vec<(&str, Box<RawValue>)> = Vec::new();
        if let Some(h) = hint.filter(|_| modern) {
            if result_type.is_none_or(|t| t.get() == "\"complete\"") {
                if members.get("ttlMs").is_none() {
                    hints.push((
                        "ttlMs",
                        serde_json::value::to_raw_value(&h.ttl_ms).map_err(internal)?,
                    ));
                }
                if members.get("cacheScope").is_none() {
                    hints.push((
                        "cacheScope",
                        serde_json::value::to_raw_value(&h.scope).map_err(internal)?,
                    ));
                }
            }
        }
        let mut out = Vec::with_capacity(members.0.len() + 1 + hints.len());
        for (k, v) in &members.0 {
            let v = match k.as_ref() {
                "resultType" if !modern => continue,
                "structuredContent" if drop_structured => continue,
                "content" => content.as_deref().unwrap_or(v),
                "_meta" => meta.as_deref().unwrap_or(v),
                _ => v,
            };
            out.push((k.as_ref(), v));
        }
        if modern && result_type.is_none() {
            out.push(("resultType", complete));
        }
        out.extend(hints.iter().map(|(k, v)| (*k, &**v)));
        let mut bytes = to_vec(&OutgoingResult::new(id, Object(out)));
        // As in finish: the result is not empty (it has resultType), so the
        // pre-serialized `,"_meta":{…}` member goes before its closing brace.
        if stamp && members.get("_meta").is_none() && bytes.ends_with(b"}}") {
            bytes.truncate(bytes.len() - 2);
            bytes.extend_from_slice(&self.server_info_member);
            bytes.extend_from_slice(b"}}");
        }
        Ok(Bytes::from(bytes))
    }

    /// The answer to a `resources/read` whose result is already JSON text
    /// (see [`Self::splice_raw`]); it must be an object with distinct
    /// member names.
    pub(crate) fn finish_raw_read(
        &self,
        id: &RequestId,
        r: &RawResult,
        version: ProtocolVersion,
    ) -> Result<Bytes, ErrorObject> {
        let members = Members::of(r.get())?;
        self.splice_raw(
            id,
            &members,
            version,
            None,
            false,
            Some(self.cache_hints.resources_read),
        )
    }

    #[cfg_attr(not(feature = "schema-validation"), allow(unused_variables))]
    pub(crate) fn check_output(
        &self,
        tool: &RegisteredTool,
        r: CallToolResult,
    ) -> Result<CallToolResult, ErrorObject> {
        if r.is_error() {
            crate::trace::note_tool_error();
            return Ok(r);
        }
        #[cfg(feature = "schema-validation")]
        if let Some(v) = tool.output.as_ref().filter(|_| self.validate_schemas) {
            match &r.structured_content {
                None => {
                    return Err(ErrorObject::internal(format_args!(
                        "tool {} declares an outputSchema but returned no structuredContent",
                        tool.def.tool.name
                    )));
                }
                Some(s) if !v.is_valid(s) => {
                    let why = v
                        .iter_errors(s)
                        .next()
                        .map(|e| e.to_string())
                        .unwrap_or_default();
                    return Err(ErrorObject::internal(format_args!(
                        "tool {} returned structuredContent not matching its outputSchema: {why}",
                        tool.def.tool.name
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(r)
    }

    async fn get_prompt(
        self: Arc<Self>,
        def: Option<PromptDef>,
        p: GetPromptRequestParams,
        parts: ContextParts,
        legacy: Legacy,
    ) -> Reply {
        let id = parts.id.clone();
        let version = parts.version;
        let Some(def) = def else {
            return Err(
                ErrorObject::invalid_params(format_args!("Unknown prompt: {}", p.name)).into(),
            );
        };
        let args = p.arguments.unwrap_or_default();
        for a in def.prompt.arguments.iter().flatten() {
            if a.required == Some(true) && !args.contains_key(&a.name) {
                return Err(ErrorObject::invalid_params(format_args!(
                    "missing required argument {:?}",
                    a.name
                ))
                .into());
            }
        }
        let args_value = serde_json::to_value(&args).unwrap_or(Value::Null);
        let handler = def.handler.clone();
        let runner = move |_v: &Value,
                           cx: RequestContext|
              -> BoxFuture<
            Result<ferromcp_protocol::types::GetPromptResult, HandlerError>,
        > { handler.get(args.clone(), cx) };
        self.answer_mrtr(
            "prompts/get",
            &p.name,
            args_value,
            (p.input_responses, p.request_state),
            parts,
            legacy,
            runner,
            OnFailure::InternalError,
            |s: &Self, r| Ok(s.finish(&id, r, version)),
        )
        .await
    }

    async fn read_resource(
        self: Arc<Self>,
        reg: Arc<Registry>,
        p: ReadResourceRequestParams,
        parts: ContextParts,
        legacy: Legacy,
    ) -> Reply {
        let id = parts.id.clone();
        let version = parts.version;
        let (handler, raw, vars) = {
            if let Some(d) = reg.resource(&p.uri) {
                (d.handler.clone(), d.raw.clone(), Default::default())
            } else {
                let found = reg.templates.iter().find_map(|t| {
                    let vars = t.compiled.as_ref()?.match_uri(&p.uri)?;
                    Some((t.handler.clone(), t.raw.clone(), vars))
                });
                match found {
                    Some(f) => f,
                    None => return Err(resource_not_found(&p.uri, version).into()),
                }
            }
        };
        if let Some(raw) = raw {
            let uri = p.uri.clone();
            let runner = move |_v: &Value, cx: RequestContext| {
                raw.read(
                    crate::resource::ResourceRequest {
                        uri: uri.clone(),
                        vars: vars.clone(),
                    },
                    cx,
                )
            };
            return self
                .answer_mrtr(
                    "resources/read",
                    &p.uri,
                    Value::Null,
                    (p.input_responses, p.request_state),
                    parts,
                    legacy,
                    runner,
                    OnFailure::InternalError,
                    |s: &Self, r: RawResult| s.finish_raw_read(&id, &r, version),
                )
                .await;
        }
        let uri = p.uri.clone();
        let runner = move |_v: &Value, cx: RequestContext| {
            handler.read(
                crate::resource::ResourceRequest {
                    uri: uri.clone(),
                    vars: vars.clone(),
                },
                cx,
            )
        };
        self.answer_mrtr(
            "resources/read",
            &p.uri,
            Value::Null,
            (p.input_responses, p.request_state),
            parts,
            legacy,
            runner,
            OnFailure::InternalError,
            |s: &Self, r| Ok(s.finish_cacheable(&id, r, s.cache_hints.resources_read, version)),
        )
        .await
    }

    // ERR-08, RESULT-01, META-08
    /// Serves a method the server does not implement with the fallback
    /// handler, under MRTR rules like a tool (`inputResponses` and
    /// `requestState` are read from the params). The result is sent as
    /// the handler returned it, with `resultType` and the `serverInfo`
    /// stamp added on the modern wire when missing.
    async fn fallback(
        self: Arc<Self>,
        u: crate::fallback::Unhandled,
        parts: ContextParts,
        legacy: Legacy,
    ) -> Reply {
        let id = parts.id.clone();
        let version = parts.version;
        let Some(handler) = self.fallback.clone() else {
            return Err(ErrorObject::method_not_found(&u.method).into());
        };
        let params = u.params_value();
        let member = |k: &str| match &params {
            Some(Value::Object(m)) => m.get(k),
            _ => None,
        };
        let input = member("inputResponses")
            .and_then(|v| serde_json::from_value::<InputResponses>(v.clone()).ok());
        let state = member("requestState")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let method = u.method.clone();
        let runner = move |_v: &Value, cx: RequestContext| {
            handler.call(
                crate::fallback::FallbackRequest::new(method.clone(), params.clone()),
                cx,
            )
        };
        self.answer_mrtr(
            &u.method,
            "",
            Value::Null,
            (input, state),
            parts,
            legacy,
            runner,
            OnFailure::InternalError,
            |s: &Self, r| Ok(s.finish_value(&id, r, version)),
        )
        .await
    }

    // RESULT-01, META-08
    /// Serializes a fallback handler's result: on the modern wire an
    /// object gets `resultType: "complete"` and the `serverInfo` stamp
    /// when it has neither; anything else is sent as is.
    fn finish_value(&self, id: &RequestId, mut r: Value, version: ProtocolVersion) -> Bytes {
        if version.is_modern() {
            if let Value::Object(m) = &mut r {
                m.entry("resultType")
                    .or_insert_with(|| Value::from("complete"));
                if self.stamp_server_info {
                    let meta = m
                        .entry("_meta")
                        .or_insert_with(|| Value::Object(Default::default()));
                    if let Value::Object(meta) = meta {
                        if !meta.contains_key(ferromcp_protocol::meta::SERVER_INFO) {
                            if let Ok(info) = serde_json::to_value(&self.info) {
                                meta.insert(ferromcp_protocol::meta::SERVER_INFO.to_owned(), info);
                            }
                        }
                    }
                }
            }
        }
        Bytes::from(to_vec(&OutgoingResult::new(id, &r)))
    }

    async fn complete(self: Arc<Self>, p: CompleteRequestParams, parts: ContextParts) -> Reply {
        let id = parts.id.clone();
        let version = parts.version;
        let Some(h) = self.completion.clone() else {
            return Err(ErrorObject::method_not_found("completion/complete").into());
        };
        let cx = RequestContext::new(parts, None, None, self.clone());
        let timeout = self.limits.handler_timeout;
        match guarded(h.complete(p, cx.clone()), timeout, &cx).await {
            Ok(mut completion) => {
                completion.values.truncate(100); // CMPL-02
                let r = CompleteResult {
                    completion,
                    ..Default::default()
                };
                Ok(self.finish(&id, r, version))
            }
            Err(HandlerError::Protocol(e)) => Err(e.into()),
            Err(HandlerError::Failed(m)) => Err(ErrorObject::internal(m).into()),
            Err(HandlerError::NeedInput(_)) => Err(ErrorObject::internal(
                "completion handlers cannot request input (MRTR-01)",
            )
            .into()),
        }
    }

    /// Runs `run` under MRTR rules ([`Self::run_mrtr`]) with the
    /// `inputResponses` and `requestState` of `input` and answers: a result
    /// through `complete`, an input request as an `InputRequiredResult`, a
    /// handler failure as `on_failure` says.
    #[allow(clippy::too_many_arguments)]
    async fn answer_mrtr<T, F, C>(
        self: Arc<Self>,
        method: &str,
        target: &str,
        args: Value,
        input: (Option<InputResponses>, Option<String>),
        parts: ContextParts,
        legacy: Legacy,
        run: F,
        on_failure: OnFailure,
        complete: C,
    ) -> Reply
    where
        F: Fn(&Value, RequestContext) -> BoxFuture<Result<T, HandlerError>>,
        C: FnOnce(&Self, T) -> Result<Bytes, ErrorObject>,
    {
        let id = parts.id.clone();
        let version = parts.version;
        let (input, state) = input;
        let out = self
            .clone()
            .run_mrtr(method, target, args, input, state, parts, legacy, run)
            .await?;
        match out {
            Mrtr::Complete(r) => Ok(complete(&self, r)?),
            Mrtr::Failed(msg) => match on_failure {
                OnFailure::ToolError => {
                    crate::trace::note_tool_error();
                    Ok(self.finish(
                        &id,
                        CallToolResult::error(vec![ContentBlock::text(msg)]),
                        version,
                    ))
                }
                OnFailure::InternalError => Err(ErrorObject::internal(msg).into()),
            },
            Mrtr::InputRequired(r) => Ok(self.finish_input_required(&id, r)),
        }
    }

    // MRTR-01…MRTR-15, MRTR-15
    /// Runs a handler under MRTR rules.
    ///
    /// Modern: one round; an incoming `requestState` is verified and
    /// unsealed first (tampered, expired or mismatched → -32602); a
    /// `NeedInput` becomes an `InputRequiredResult` with freshly sealed state.
    /// Handshake era: the server fulfils `NeedInput` itself by sending the
    /// input requests to the client and calling the handler again, up to
    /// ten rounds.
    #[allow(clippy::too_many_arguments)]
    async fn run_mrtr<T, F>(
        self: Arc<Self>,
        method: &str,
        target: &str,
        args: Value,
        input: Option<InputResponses>,
        request_state: Option<String>,
        parts: ContextParts,
        legacy: Legacy,
        run: F,
    ) -> Result<Mrtr<T>, Failure>
    where
        F: Fn(&Value, RequestContext) -> BoxFuture<Result<T, HandlerError>>,
    {
        let modern = parts.version.is_modern();
        let principal = parts.principal.as_ref().map(|p| p.subject.clone());
        // The binding (and the SHA-256 of the arguments in it) is only needed
        // when a requestState arrives or has to be sealed.
        let binding = |args: &Value| StateBinding {
            method,
            target,
            arguments_digest: crate::request_state::arguments_digest(Some(args)),
            principal: principal.as_deref(),
        };
        let mut state = match request_state {
            Some(token) if modern => {
                // Awaited inline: no store, or the in-process one, answers
                // at once; a shared store costs one round trip (no spawn).
                Some(
                    Box::pin(self.sealer.open_async(&token, &binding(&args)))
                        .await
                        .map_err(|e| {
                            tracing::debug!(reason = %e, "rejected requestState");
                            Failure::from(e)
                        })?,
                )
            }
            _ => None,
        };
        let mut input = input;
        let timeout = self.limits.handler_timeout;
        let max_rounds = if modern { 1 } else { 10 };
        let mut parts = Some(parts);
        for round in 0..max_rounds {
            // The last possible round (the only one on the modern wire)
            // takes the context parts instead of a copy.
            let round_parts = if round + 1 == max_rounds {
                parts.take()
            } else {
                parts.clone()
            };
            let Some(round_parts) = round_parts else {
                break;
            };
            let cx = RequestContext::new(round_parts, input.clone(), state.clone(), self.clone());
            match guarded(run(&args, cx.clone()), timeout, &cx).await {
                Ok(t) => return Ok(Mrtr::Complete(t)),
                Err(HandlerError::Failed(m)) => return Ok(Mrtr::Failed(m)),
                Err(HandlerError::Protocol(e)) => return Err(e.into()),
                Err(HandlerError::NeedInput(ir)) if modern => {
                    let sealed = self
                        .sealer
                        .seal(&binding(&args), ir.state.as_deref().unwrap_or_default())
                        .map_err(|e| e.to_error_object())?;
                    let r = InputRequiredResult {
                        input_requests: (!ir.requests.is_empty()).then_some(ir.requests),
                        request_state: Some(sealed),
                        meta: None,
                    };
                    return Ok(Mrtr::InputRequired(r));
                }
                Err(HandlerError::NeedInput(ir)) => {
                    let Some(req) = legacy.requester.clone() else {
                        return Err(ErrorObject::internal(
                            "this transport cannot send requests to the client",
                        )
                        .into());
                    };
                    let answers =
                        Box::pin(fulfil(req, &ir, self.limits.client_request_timeout)).await?;
                    let mut merged = input.take().unwrap_or_default();
                    for (k, v) in answers {
                        merged.insert_raw(k, v);
                    }
                    input = Some(merged);
                    if ir.state.is_some() {
                        state = ir.state;
                    }
                }
            }
        }
        Err(
            ErrorObject::internal("the handler kept asking for input; giving up after 10 rounds")
                .into(),
        )
    }
}

/// Outcome of a handler under MRTR.
enum Mrtr<T> {
    Complete(T),
    Failed(String),
    InputRequired(InputRequiredResult),
}

/// What a handler's failure becomes in [`Shared::answer_mrtr`].
#[derive(Clone, Copy)]
enum OnFailure {
    /// A `CallToolResult` with `isError` (`tools/call`).
    ToolError,
    /// A JSON-RPC internal error (every other method).
    InternalError,
}

// MRTR-13
/// Sends every input request to the client concurrently and
/// collects the answers by key.
async fn fulfil(
    req: Arc<dyn ClientRequester>,
    ir: &InputRequired,
    timeout: std::time::Duration,
) -> Result<Vec<(String, Value)>, ErrorObject> {
    let futs = ir.requests.iter().map(|(k, r)| {
        // Serialized straight to text, not through `Value`: a `Value` map is
        // sorted unless serde_json's `preserve_order` is on somewhere in the
        // program, which would put a form's fields in alphabetical order.
        // ELICIT-04
        use serde_json::value::to_raw_value;
        let params = match r {
            ferromcp_protocol::types::InputRequest::Elicitation(p) => to_raw_value(p),
            ferromcp_protocol::types::InputRequest::Sampling(p) => to_raw_value(p),
            ferromcp_protocol::types::InputRequest::ListRoots(p) => {
                to_raw_value(&(*p).unwrap_or_default())
            }
        };
        let params = match params {
            Ok(p) => p,
            Err(e) => {
                let e = ErrorObject::internal(format!("cannot serialize an input request: {e}"));
                return futures_util::future::Either::Left(std::future::ready(Err(e)));
            }
        };
        let fut = req.request(r.method(), params);
        let k = k.clone();
        futures_util::future::Either::Right(async move {
            match tokio::time::timeout(timeout, fut).await {
                Ok(Ok(v)) => Ok((k, v)),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(ErrorObject::internal("the client did not answer in time")),
            }
        })
    });
    futures_util::future::try_join_all(futs).await
}

/// Runs a handler future with a timeout, turning a panic into -32603 so one
/// bad handler never takes the connection down.
pub(crate) async fn guarded<T>(
    fut: BoxFuture<Result<T, HandlerError>>,
    timeout: std::time::Duration,
    cx: &RequestContext,
) -> Result<T, HandlerError> {
    let mut fut = AssertUnwindSafe(fut).catch_unwind();
    // Most handlers finish on their first poll: answer without reading the
    // clock or arming a timer (the timeout counts from the first pending poll).
    let outcome = match futures_util::poll!(&mut fut) {
        std::task::Poll::Ready(r) => Ok(r),
        std::task::Poll::Pending => tokio::time::timeout(timeout, fut).await,
    };
    match outcome {
        Ok(Ok(r)) => r,
        Ok(Err(panic)) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "handler panicked".into());
            tracing::error!(method = %cx.method(), "handler panicked: {msg}");
            Err(HandlerError::Protocol(ErrorObject::internal(
                "the handler failed unexpectedly",
            )))
        }
        Err(_) => {
            cx.inner.cancel.cancel();
            Err(HandlerError::Protocol(ErrorObject::internal(
                "the handler timed out",
            )))
        }
    }
}

fn resource_not_found(uri: &str, version: ProtocolVersion) -> ErrorObject {
    let data = serde_json::json!({ "uri": uri });
    if version.is_modern() {
        // RES-03: -32602 on the modern wire (never -32002, ERR-05).
        ErrorObject::invalid_params(format_args!("Resource not found: {uri}")).with_data(data)
    } else {
        // LEGACY-08: -32002 on handshake revisions.
        ErrorObject::new(
            ferromcp_protocol::ErrorCode::LEGACY_RESOURCE_NOT_FOUND,
            "Resource not found",
        )
        .with_data(data)
    }
}

fn encode_cursor(offset: usize) -> String {
    format!("c{offset:x}")
}

fn decode_cursor(c: &str) -> Option<usize> {
    let hex = c.strip_prefix('c')?;
    if hex.is_empty() || hex.len() > 16 {
        return None;
    }
    usize::from_str_radix(hex, 16).ok()
}

/// A `tools/list` page serialized from pre-serialized tool definitions.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolsPage<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<ResultType>,
    tools: &'a [Box<RawValue>],
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_scope: Option<ferromcp_protocol::types::CacheScope>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<ServerInfoMeta<'a>>,
}

#[derive(Serialize)]
struct ServerInfoMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    info: &'a ferromcp_protocol::types::Implementation,
}

/// The extensions a handshake-era `initialize` result declares: only
/// MCP Apps and Skills, which hosts negotiate on those revisions
/// (capabilities are an open set there); the others are modern-era only.
pub(crate) fn handshake_extensions(
    all: Option<ferromcp_protocol::types::JsonObject>,
) -> Option<ferromcp_protocol::types::JsonObject> {
    const HANDSHAKE_EXTENSIONS: [&str; 2] = [
        ferromcp_protocol::types::UI_EXTENSION,
        ferromcp_protocol::types::SKILLS_EXTENSION,
    ];
    let mut all = all?;
    let mut m = ferromcp_protocol::types::JsonObject::new();
    for id in HANDSHAKE_EXTENSIONS {
        if let Some(v) = all.remove(id) {
            m.insert(id.to_owned(), v);
        }
    }
    (!m.is_empty()).then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_server_info_stamp_matches_the_slow_path() {
        let server = crate::Server::builder("s", "1.0").build().expect("build");
        let shared = &server.shared;
        let id = RequestId::number(7);
        let v = ProtocolVersion::V2026_07_28;
        let fast: Value =
            serde_json::from_slice(&shared.finish(&id, CallToolResult::text("hi"), v))
                .expect("json");
        let mut with_meta = CallToolResult::text("hi");
        with_meta.meta = Some(serde_json::Map::from_iter([(
            "k".to_string(),
            Value::from(1),
        )]));
        let slow: Value = serde_json::from_slice(&shared.finish(&id, with_meta, v)).expect("json");
        assert_eq!(
            fast["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
            serde_json::json!({"name":"s","version":"1.0"})
        );
        assert_eq!(
            slow["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
            fast["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]
        );
        assert_eq!(slow["result"]["_meta"]["k"], Value::from(1));
        assert_eq!(fast["result"]["resultType"], "complete");
        // Handshake era: neither resultType nor serverInfo.
        let old: Value = serde_json::from_slice(&shared.finish(
            &id,
            CallToolResult::text("hi"),
            ProtocolVersion::V2025_11_25,
        ))
        .expect("json");
        assert!(old["result"].get("resultType").is_none() && old["result"].get("_meta").is_none());
    }

    fn raw_tool_server(output: Option<Value>) -> crate::Server {
        let mut b = crate::tool("relay");
        if let Some(Value::Object(o)) = output {
            b = b.output_schema(o);
        }
        let t = b.raw_result_handler(|_a, _cx: RequestContext| async move {
            Err::<RawResult, _>(HandlerError::Protocol(ErrorObject::internal("unused")))
        });
        crate::Server::builder("s", "1.0")
            .tool(t)
            .build()
            .expect("build")
    }

    fn raw_answer(server: &crate::Server, json: &str, v: ProtocolVersion) -> Result<Value, i64> {
        let shared = &server.shared;
        let reg = shared.registry();
        let tool = reg.tool("relay").expect("tool");
        let raw = RawResult::from_string(json.to_owned()).map_err(|e| e.code.0)?;
        let bytes = shared
            .finish_raw_tool(tool, &RequestId::number(7), &raw, v)
            .map_err(|e| e.code.0)?;
        Ok(serde_json::from_slice(&bytes).expect("the answer is JSON"))
    }

    // META-08, TOOL-07
    #[test]
    fn raw_tool_results_keep_unknown_members_and_get_what_typed_ones_get() {
        let server = raw_tool_server(None);
        let json = r#"{"content":[{"type":"text","text":"hi","x-block":1},{"type":"resource_link","uri":"a:b","name":"b"}],"structuredContent":{"k":1},"x-new":{"deep":[1,2]},"_meta":{"acme/trace":"t1"}}"#;
        let modern = raw_answer(&server, json, ProtocolVersion::V2026_07_28).expect("ok");
        let r = &modern["result"];
        assert_eq!(modern["id"], 7);
        assert_eq!(r["x-new"], serde_json::json!({"deep":[1,2]}));
        assert_eq!(r["content"][0]["x-block"], 1);
        assert_eq!(r["_meta"]["acme/trace"], "t1");
        assert_eq!(r["resultType"], "complete");
        assert_eq!(
            r["_meta"]["io.modelcontextprotocol/serverInfo"],
            serde_json::json!({"name":"s","version":"1.0"})
        );
        // Without _meta the pre-serialized member is appended, as typed.
        let bare = raw_answer(
            &server,
            r#"{"content":[],"x":true}"#,
            ProtocolVersion::V2026_07_28,
        )
        .expect("ok");
        let typed: Value = serde_json::from_slice(&server.shared.finish(
            &RequestId::number(7),
            CallToolResult::success(vec![]),
            ProtocolVersion::V2026_07_28,
        ))
        .expect("json");
        assert_eq!(bare["result"]["_meta"], typed["result"]["_meta"]);
        assert_eq!(bare["result"]["x"], true);
        // Handshake era: no resultType, no serverInfo, the child's _meta as is.
        let old = raw_answer(
            &server,
            &json.replace("\"content\"", "\"resultType\":\"complete\",\"content\""),
            ProtocolVersion::V2025_11_25,
        )
        .expect("ok");
        assert!(old["result"].get("resultType").is_none());
        assert_eq!(
            old["result"]["_meta"],
            serde_json::json!({"acme/trace":"t1"})
        );
        assert_eq!(old["result"]["content"][1]["type"], "resource_link");
        // The oldest revisions lose structuredContent and resource links.
        let minimal = raw_answer(&server, json, ProtocolVersion::V2025_03_26).expect("ok");
        assert!(minimal["result"].get("structuredContent").is_none());
        assert_eq!(
            minimal["result"]["content"].as_array().map(Vec::len),
            Some(1)
        );
        assert_eq!(minimal["result"]["x-new"]["deep"][1], 2);
    }

    // CACHE-01, META-08
    #[test]
    fn raw_read_results_get_the_missing_cache_hints_and_keep_the_rest() {
        let server = raw_tool_server(None);
        let shared = &server.shared;
        let id = RequestId::number(3);
        let read = |json: &str, v| -> Value {
            let raw = RawResult::from_string(json.to_owned()).expect("object");
            let bytes = shared.finish_raw_read(&id, &raw, v).expect("answer");
            serde_json::from_slice(&bytes).expect("json")
        };
        let json = r#"{"contents":[{"uri":"a:b","text":"t","x-item":1}],"x-read":2,"ttlMs":5}"#;
        let typed: Value = serde_json::from_slice(&shared.finish_cacheable(
            &id,
            ferromcp_protocol::types::ReadResourceResult {
                contents: vec![],
                ttl_ms: Some(5),
                ..Default::default()
            },
            shared.cache_hints.resources_read,
            ProtocolVersion::V2026_07_28,
        ))
        .expect("json");
        let modern = read(json, ProtocolVersion::V2026_07_28);
        let r = &modern["result"];
        assert_eq!(r["ttlMs"], 5, "the child's own hint kept: {r}");
        assert_eq!(r["cacheScope"], typed["result"]["cacheScope"], "{r}");
        assert_eq!(r["x-read"], 2);
        assert_eq!(r["contents"][0]["x-item"], 1);
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["_meta"], typed["result"]["_meta"]);
        let old = read(json, ProtocolVersion::V2025_11_25);
        assert!(old["result"].get("cacheScope").is_none(), "{old}");
        assert!(old["result"].get("_meta").is_none(), "{old}");
        assert_eq!(old["result"]["x-read"], 2);
    }

    #[test]
    fn raw_tool_results_that_are_not_sound_objects_are_internal_errors() {
        let server = raw_tool_server(None);
        let v = ProtocolVersion::V2026_07_28;
        for bad in [
            "[1]",
            "\"x\"",
            "{\"content\":[],\"content\":[]}",
            "{\"_meta\":3}",
        ] {
            assert_eq!(raw_answer(&server, bad, v).err(), Some(-32603), "{bad}");
        }
    }

    #[cfg(feature = "schema-validation")]
    #[test]
    fn raw_tool_results_are_checked_against_the_output_schema() {
        let schema = serde_json::json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]});
        let server = raw_tool_server(Some(schema));
        let v = ProtocolVersion::V2026_07_28;
        assert!(raw_answer(&server, r#"{"content":[],"structuredContent":{"n":1}}"#, v).is_ok());
        for bad in [
            r#"{"content":[],"structuredContent":{"n":"x"}}"#,
            r#"{"content":[]}"#,
        ] {
            assert_eq!(raw_answer(&server, bad, v).err(), Some(-32603), "{bad}");
        }
        // An error result is not checked.
        assert!(raw_answer(&server, r#"{"content":[],"isError":true}"#, v).is_ok());
    }

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        for n in [0usize, 1, 99, 1 << 40] {
            assert_eq!(decode_cursor(&encode_cursor(n)), Some(n));
        }
        for bad in ["", "c", "x1", "c-1", "cg", "c11111111111111111", "1"] {
            assert_eq!(decode_cursor(bad), None, "{bad}");
        }
    }
}
