//! Method dispatch shared by every transport and both eras: typed params in,
//! a serialized JSON-RPC response (or an error object) out.
//!
//! Result shaping happens here, in one place: `resultType`, serverInfo and
//! cache hints on modern results; nothing of
//! that, and a per-revision sieve, on handshake-era results.
//!
//! One file per concern: this file admits a call to its handler
//! (`dispatch`, `initialize`, the fallback); `tools.rs`, `prompts.rs`,
//! `resources.rs` and `completion.rs` serve each capability's list, get,
//! read or call; `pager.rs` is the one pager every list uses; `mrtr.rs`
//! runs handlers under multi round-trip rules; `finish.rs` shapes answers;
//! `arguments.rs` holds a call's arguments, typed once.
// RESULT-01, META-08, CACHE-01, LEGACY-25

pub(crate) mod arguments;
mod completion;
mod finish;
mod mrtr;
mod pager;
mod prompts;
mod resources;
mod skills;
mod tools;

use crate::admit::{Call, CallRequest};
use crate::context::{ContextParts, RequestContext};
use crate::future::{BoxFuture, Dispatch, Reply};
use crate::session::HandshakeSession;
use crate::shared::Shared;
use ferromcp_protocol::jsonrpc::RequestId;
use ferromcp_protocol::method::ClientRequest;
use ferromcp_protocol::types::{
    CacheableResult, DiscoverResult, EmptyResult, InitializeRequestParams, InitializeResult,
    InputResponses,
};
use ferromcp_protocol::{ErrorObject, ProtocolVersion};
use mrtr::OnFailure;
use serde_json::Value;
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
        let fut = match &self.rpc() {
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
    pub(super) fn dispatch_untraced(
        self: Arc<Self>,
        call: Call,
        parts: ContextParts,
        legacy: Legacy,
    ) -> Dispatch {
        let id = parts.id.clone();
        let Call {
            request,
            registry,
            arguments,
        } = call;
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
                if self.tasks().is_some() {
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
                    instructions: self.instructions().clone(),
                    ..DiscoverResult::default()
                };
                r.fill_cache_hint(self.cache_hints().discover);
                Ok(self.finish(&id, r, parts.version))
            }
            ClientRequest::ListTools(p) if self.has_tools(reg) => {
                self.list_tools(reg, &id, p, parts.version)
            }
            ClientRequest::CallTool(p) if self.has_tools(reg) => {
                let tool = reg.tool(&p.name).cloned();
                return self.call_tool(tool, p, arguments, parts, legacy);
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
            ClientRequest::Complete(p) if self.completion().is_some() => {
                return Dispatch::Pending(Box::pin(self.complete(p, parts)));
            }
            // Tasks extension (crate::tasks); the era rule (crate::admit)
            // keeps these and discover off the handshake wire, and the
            // handshake-only methods below off the modern one.
            ClientRequest::GetTask(p) if self.tasks().is_some() => {
                return Dispatch::Pending(Box::pin(self.task_get(p, parts)));
            }
            ClientRequest::UpdateTask(p) if self.tasks().is_some() => {
                return Dispatch::Pending(Box::pin(self.task_update(p, parts)));
            }
            ClientRequest::CancelTask(p) if self.tasks().is_some() => {
                return Dispatch::Pending(Box::pin(self.task_cancel(p, parts)));
            }
            // Skills extension (crate::skills), both eras.
            ClientRequest::ListSkills(p) if self.skills().is_some() => match &self.skills() {
                Some(s) => self.list_skills(s, &id, p, parts.version),
                None => Err(ErrorObject::method_not_found("skills/list").into()),
            },
            ClientRequest::GetSkill(p) if self.skills().is_some() => match &self.skills() {
                Some(s) => self.get_skill(s, &id, p, parts.version),
                None => Err(ErrorObject::method_not_found("skills/get").into()),
            },
            ClientRequest::ReadDirectory(p) if self.skills().is_some() => match &self.skills() {
                Some(s) => self.read_directory(s, &id, p, parts.version),
                None => Err(ErrorObject::method_not_found("resources/directory/read").into()),
            },
            ClientRequest::Ping(_) => Ok(self.finish(&id, EmptyResult::default(), parts.version)),
            ClientRequest::SetLevel(p) if self.logging_enabled() => {
                if let Some(s) = &legacy.session {
                    s.set_log_level(p.level);
                }
                Ok(self.finish(&id, EmptyResult::default(), parts.version))
            }
            ClientRequest::Subscribe(p) if self.declare().resource_subscribe => {
                if let Err(e) = self.check_subscription_uri(&p.uri) {
                    return Dispatch::Ready(Some(Err(e.into())));
                }
                if let Some(s) = &legacy.session {
                    let max = if legacy.shared_record {
                        usize::MAX
                    } else {
                        self.limits().max_subscriptions_per_session
                    };
                    if !s.subscribe(p.uri, max) {
                        return Dispatch::Ready(Some(Err(self.too_many_subscriptions().into())));
                    }
                }
                Ok(self.finish(&id, EmptyResult::default(), parts.version))
            }
            ClientRequest::Unsubscribe(p) if self.declare().resource_subscribe => {
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

    pub(super) fn initialize_untraced(
        &self,
        params: &InitializeRequestParams,
    ) -> Result<(InitializeResult, HandshakeSession), ErrorObject> {
        let requested = ProtocolVersion::parse(&params.protocol_version);
        let version = match requested {
            Some(v) if self.handshake_versions().contains(&v) => v,
            _ => match self.handshake_versions().first() {
                Some(v) => *v,
                None => {
                    return Err(ErrorObject::unsupported_version(
                        &params.protocol_version,
                        self.modern_versions().iter().map(|v| v.as_str()),
                    ));
                }
            },
        };
        let mut info = self.info().clone();
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
            instructions: self.instructions().clone(),
            ..Default::default()
        };
        self.check_client_metadata(params)?;
        Ok((result, HandshakeSession::new(version, params)))
    }

    /// Refuses a subscription URI longer than
    /// `Limits::max_subscription_uri_bytes`.
    pub(crate) fn check_subscription_uri(&self, uri: &str) -> Result<(), ErrorObject> {
        let max = self.limits().max_subscription_uri_bytes;
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
            self.limits().max_subscriptions_per_session
        ))
    }

    /// Refuses an `initialize` whose `capabilities` and `clientInfo` are
    /// larger than `Limits::max_client_metadata_bytes` (both are kept for
    /// the session's lifetime, and with shared sessions read back by every
    /// request).
    pub(super) fn check_client_metadata(
        &self,
        params: &InitializeRequestParams,
    ) -> Result<(), ErrorObject> {
        let max = self.limits().max_client_metadata_bytes;
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

    // ERR-08, RESULT-01, META-08
    /// Serves a method the server does not implement with the fallback
    /// handler, under MRTR rules like a tool (`inputResponses` and
    /// `requestState` are read from the params). The result is sent as
    /// the handler returned it, with `resultType` and the `serverInfo`
    /// stamp added on the modern wire when missing.
    pub(super) async fn fallback(
        self: Arc<Self>,
        u: crate::fallback::Unhandled,
        parts: ContextParts,
        legacy: Legacy,
    ) -> Reply {
        let id = parts.id.clone();
        let version = parts.version;
        let Some(handler) = self.fallback_handler().clone() else {
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
    use super::pager::{decode_cursor, encode_cursor};
    use super::*;
    use crate::error::HandlerError;
    use crate::raw_result::RawResult;
    use ferromcp_protocol::types::{CallToolRequestParams, CallToolResult};

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
            shared.cache_hints().resources_read,
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

    fn call_parts(v: ProtocolVersion) -> (CallToolRequestParams, ContextParts, Legacy) {
        let p = CallToolRequestParams {
            name: "echo".into(),
            ..Default::default()
        };
        let parts = ContextParts::new(
            RequestId::number(9),
            "tools/call",
            v,
            Box::default(),
            tokio_util::sync::CancellationToken::new(),
        );
        let legacy = Legacy {
            requester: None,
            session: None,
            shared_record: false,
        };
        (p, parts, legacy)
    }

    // MRTR-01: the one-round call of the modern wire is the hot path; its
    // future is boxed once per request and must stay off glibc's large-chunk
    // path (bench/RESULTS.md). The handshake era's later rounds are boxed
    // apart, so they do not size it either.
    #[tokio::test]
    async fn the_tools_call_future_stays_small_and_answers() {
        const BOUND: usize = 1024;
        let server = crate::Server::builder("s", "1.0")
            .tool(
                crate::tool("echo")
                    .handler(|_: crate::NoArgs, _: RequestContext| async { "hi".to_owned() }),
            )
            .build()
            .expect("build");
        for v in [ProtocolVersion::V2026_07_28, ProtocolVersion::V2025_11_25] {
            let shared = server.shared.clone();
            let tool = shared.registry().tool("echo").cloned();
            let (p, parts, legacy) = call_parts(v);
            let Dispatch::Pending(fut) = shared.call_tool(tool, p, None, parts, legacy) else {
                panic!("{v:?}: a handler-backed call is answered later");
            };
            let size = std::mem::size_of_val(&*fut);
            assert!(
                size <= BOUND,
                "{v:?}: the tools/call future is {size} bytes"
            );
            let answer: Value = serde_json::from_slice(&fut.await.expect("answer")).expect("json");
            assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
        }
    }

    struct CountingRequester(Arc<std::sync::atomic::AtomicUsize>);

    impl ClientRequester for CountingRequester {
        fn request(
            &self,
            _method: &'static str,
            _params: Box<serde_json::value::RawValue>,
        ) -> BoxFuture<Result<Value, ErrorObject>> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async { Ok(serde_json::json!({"roots": []})) })
        }
    }

    // MRTR-13: a handshake-era handler that keeps asking runs ten times,
    // each run's input requests go to the client (the last one's too), and
    // the call then fails with -32603; without a way to reach the client
    // the first request for input fails at once.
    #[tokio::test]
    async fn handshake_rounds_give_up_after_ten_runs() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let runs = Arc::new(AtomicUsize::new(0));
        let server = {
            let runs = runs.clone();
            crate::Server::builder("s", "1.0")
                .tool(crate::tool("echo").raw_result_handler(move |_a, _cx| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    async {
                        Err::<RawResult, _>(HandlerError::NeedInput(
                            crate::error::InputRequired::new().request(
                                "roots",
                                ferromcp_protocol::types::InputRequest::ListRoots(None),
                            ),
                        ))
                    }
                }))
                .build()
                .expect("build")
        };
        let sent = Arc::new(AtomicUsize::new(0));
        for requester in [true, false] {
            runs.store(0, Ordering::SeqCst);
            sent.store(0, Ordering::SeqCst);
            let shared = server.shared.clone();
            let tool = shared.registry().tool("echo").cloned();
            let (p, parts, mut legacy) = call_parts(ProtocolVersion::V2025_11_25);
            if requester {
                legacy.requester = Some(Arc::new(CountingRequester(sent.clone())));
            }
            let Dispatch::Pending(fut) = shared.call_tool(tool, p, None, parts, legacy) else {
                panic!("a handler-backed call is answered later");
            };
            let Err(crate::outcome::Failure::Error(e)) = fut.await else {
                panic!("the call must fail");
            };
            assert_eq!(e.code.0, -32603, "{e:?}");
            let (want_runs, want_sent, text) = if requester {
                (10, 10, "giving up after 10 rounds")
            } else {
                (1, 0, "cannot send requests to the client")
            };
            assert!(e.message.contains(text), "{e:?}");
            assert_eq!(runs.load(Ordering::SeqCst), want_runs);
            assert_eq!(sent.load(Ordering::SeqCst), want_sent);
        }
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
