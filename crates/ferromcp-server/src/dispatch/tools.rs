//! `tools/list` and `tools/call`: the page, the call under MRTR, raw
//! results and the output-schema check.

use super::Legacy;
use super::arguments::Arguments;
use super::finish::ServerInfoMeta;
use super::mrtr::OnFailure;
use crate::context::{ContextParts, RequestContext};
use crate::future::{Dispatch, Reply};
use crate::raw_result::{Members, Object, RawResult};
use crate::registry::{RegisteredTool, Registry};
use crate::shared::Shared;
use crate::sieve::{Sieve, sieve_call_result};
#[cfg(feature = "schema-validation")]
use crate::tool::invalid_arguments;
use bytes::Bytes;
use ferromcp_protocol::jsonrpc::{OutgoingResult, RequestId, to_vec};
use ferromcp_protocol::types::{
    CacheHint, CallToolRequestParams, CallToolResult, PaginatedRequestParams, ResultType,
};
use ferromcp_protocol::{ErrorObject, ProtocolVersion};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Arc;

impl Shared {
    pub(super) fn list_tools(
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
                .then_some(self.cache_hints().tools_list.ttl_ms),
            cache_scope: version
                .is_modern()
                .then_some(self.cache_hints().tools_list.scope),
            meta: (version.is_modern() && self.stamp_server_info())
                .then_some(ServerInfoMeta { info: self.info() }),
        };
        Ok(Bytes::from(
            ferromcp_protocol::jsonrpc::to_vec_with_capacity(&OutgoingResult::new(id, &page), size),
        ))
    }

    /// `tools/call` of `tool`, the definition the admitted snapshot has
    /// under `p.name` (the one whose headers the ladder checked), with the
    /// arguments as JSON text `json` when the one-pass decode left them
    /// untyped (`p.arguments` is then `None`).
    ///
    /// Everything up to the handler's run is done here, synchronously; the
    /// one boxed future keeps only what the run and the answer need.
    pub(super) fn call_tool(
        self: Arc<Self>,
        tool: Option<Arc<RegisteredTool>>,
        p: CallToolRequestParams,
        json: Option<Bytes>,
        parts: ContextParts,
        legacy: Legacy,
    ) -> Dispatch {
        let id = parts.id.clone();
        let version = parts.version;
        let Some(tool) = tool else {
            return Dispatch::Ready(Some(Err(ErrorObject::invalid_params(format_args!(
                "Unknown tool: {}",
                p.name
            ))
            .with_data(serde_json::json!({"name": p.name}))
            .into())));
        };
        let args = match json {
            Some(text) => Arguments::Json(text),
            None => Arguments::Value(Value::Object(p.arguments.unwrap_or_default())),
        };
        // TOOL-06: arguments failing the inputSchema are a model-visible error.
        // Text the plain checker accepts as it stands needs no `Value`.
        #[cfg(feature = "schema-validation")]
        if let Some(v) = tool.input.as_ref().filter(|_| self.validate_schemas()) {
            let errors = match args.json() {
                Some(t) if v.accepts_json(t) => None,
                _ => v.argument_errors(&args.value()),
            };
            if let Some(msgs) = errors {
                return Dispatch::Ready(Some(Ok(self.finish(
                    &id,
                    sieve_call_result(version, invalid_arguments(&msgs)),
                    version,
                ))));
            }
        }
        match self.task_mode(&tool, &parts) {
            Err(e) => return Dispatch::Ready(Some(Err(e.into()))),
            Ok(Some(creation)) => {
                return Dispatch::Pending(Box::pin(self.call_tool_as_task(
                    tool,
                    args.into_value(),
                    p.input_responses,
                    p.request_state,
                    parts,
                    creation,
                )));
            }
            Ok(None) => {}
        }
        let input = (p.input_responses, p.request_state);
        if let Some(raw) = tool.def.raw.clone() {
            let runner = move |args: &Arguments, cx: RequestContext| raw.call(&args.value(), cx);
            let complete = move |s: &Self, r: RawResult| s.finish_raw_tool(&tool, &id, &r, version);
            return Dispatch::Pending(Box::pin(self.answer_mrtr(
                "tools/call",
                p.name,
                args,
                input,
                parts,
                legacy,
                runner,
                OnFailure::ToolError,
                complete,
            )));
        }
        let runner = {
            let tool = tool.clone();
            move |args: &Arguments, cx: RequestContext| match args.json() {
                Some(text) => tool.def.handler.call_json(text, cx),
                None => tool.def.handler.call(&args.value(), cx),
            }
        };
        let complete = move |s: &Self, r: CallToolResult| {
            let r = s.check_output(&tool, r)?;
            Ok(s.finish(&id, sieve_call_result(version, r), version))
        };
        Dispatch::Pending(Box::pin(self.answer_mrtr(
            "tools/call",
            p.name,
            args,
            input,
            parts,
            legacy,
            runner,
            OnFailure::ToolError,
            complete,
        )))
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
            if let Some(v) = tool.output.as_ref().filter(|_| self.validate_schemas()) {
                let Some(s) = members.get("structuredContent") else {
                    return Err(ErrorObject::internal(format_args!(
                        "tool {} declares an outputSchema but returned no structuredContent",
                        tool.def.tool.name
                    )));
                };
                let s: Value = serde_json::from_str(s.get())
                    .map_err(|e| ErrorObject::internal(e.to_string()))?;
                if let Some(why) = v.first_error(&s) {
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
    pub(super) fn splice_raw(
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
        let stamp = modern && self.stamp_server_info();
        let meta = match members.get("_meta") {
            Some(m) if stamp => {
                let mut m: serde_json::Map<String, Value> =
                    serde_json::from_str(m.get()).map_err(|e| {
                        ErrorObject::internal(format!("the result's _meta is malformed: {e}"))
                    })?;
                if !m.contains_key(ferromcp_protocol::meta::SERVER_INFO) {
                    let info = serde_json::to_value(self.info()).map_err(internal)?;
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
            bytes.extend_from_slice(self.server_info_member());
            bytes.extend_from_slice(b"}}");
        }
        Ok(Bytes::from(bytes))
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
        if let Some(v) = tool.output.as_ref().filter(|_| self.validate_schemas()) {
            match &r.structured_content {
                None => {
                    return Err(ErrorObject::internal(format_args!(
                        "tool {} declares an outputSchema but returned no structuredContent",
                        tool.def.tool.name
                    )));
                }
                Some(s) => {
                    if let Some(why) = v.first_error(s) {
                        return Err(ErrorObject::internal(format_args!(
                            "tool {} returned structuredContent not matching its outputSchema: {why}",
                            tool.def.tool.name
                        )));
                    }
                }
            }
        }
        Ok(r)
    }
}

/// A `tools/list` page serialized from pre-serialized tool definitions.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolsPage<'a> {
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
