//! The inbound validation ladder for modern (2026-07-28) requests, as a pure
//! function.
//!
//! Input: an already-decoded JSON-RPC message, an optional raw header list
//! (HTTP; `None` on stdio, which skips the header rungs) and the set of
//! modern versions served. Output: the accepted [`ModernRoute`] carrying the
//! typed envelope, or the first failing rung as a [`Rejection`].
//!
//! Rung order (first failure wins):
//! 1. A response object is not a request → -32600.
//! 2. A routing header (`MCP-Protocol-Version`, `Mcp-Method`,
//!    `Mcp-Name`) present more than once → -32020.
//! 3. A notification is accepted (202) unless its
//!    `MCP-Protocol-Version` header names an unsupported version → -32022.
//! 4. `params._meta` must be an object with
//!    `io.modelcontextprotocol/protocolVersion` and
//!    `io.modelcontextprotocol/clientCapabilities` (a valid capabilities
//!    object) → else -32602.
//! 5. HTTP only: `MCP-Protocol-Version` byte-equal to the
//!    envelope version, `Mcp-Method` equal to `method`, decoded `Mcp-Name`
//!    equal to `params.name` / `params.uri` → else -32020. Runs before the
//!    version rung so a self-contradicting client gets HeaderMismatch.
//! 6. The envelope version must be a string (-32602) naming a
//!    supported version (-32022 `{supported, requested}`).
//! 7. Other envelope members with a wrong shape (`logLevel`,
//!    `progressToken`, `clientInfo`) → -32602.
//! 8. HTTP, `tools/call` only: `Mcp-Param-*` headers against the
//!    called tool's `x-mcp-header` map → -32020. The tool lookup is supplied
//!    by the caller through [`ToolParamHeaders`]; an unknown tool or one
//!    without annotations skips the rung (fail-open).
// LADDER-05…LADDER-11, LADDER-14. Rungs 1-8: LADDER-05, LADDER-07, LADDER-06, LADDER-08,
// LADDER-09, LADDER-10, LADDER-12 (with LOG-04), LADDER-11 (HDR-19 fail-open).
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use crate::envelope::Envelope;
use crate::error::ErrorObject;
use crate::header::codec::decode_header_value;
use crate::header::x_mcp_header::ParamHeaderMap;
use crate::header::{self, HeaderList, trim_ows};
use crate::jsonrpc::{Message, RequestId};
use crate::meta;
use crate::probe::ProbeSeed;
pub use crate::probe::{ParamsProbe, ProbedMembers};
use crate::types::tagged::Str;
use crate::version::ProtocolVersion;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Which rung rejected the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    // LADDER-05
    /// Not a request.
    NotARequest,
    // LADDER-07
    /// Duplicated routing header.
    DuplicateHeader,
    // LADDER-08
    /// Missing or malformed envelope.
    Envelope,
    // LADDER-09
    /// Headers disagree with the body.
    HeaderMatch,
    // LADDER-10
    /// Version not a string or unsupported.
    Version,
    // LADDER-12
    /// Another envelope member is malformed.
    EnvelopeMember,
    // LADDER-11
    /// `Mcp-Param-*` validation.
    ParamHeaders,
}

/// A rejection: the rung and the JSON-RPC error to answer with.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The failing rung.
    pub rung: Rung,
    /// The error; its code maps to the HTTP status via [`ErrorObject::http_status`].
    pub error: ErrorObject,
}

impl Rejection {
    fn new(rung: Rung, error: ErrorObject) -> Self {
        Self { rung, error }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

/// An accepted modern request.
#[derive(Debug, Clone)]
pub struct ModernRoute {
    /// The request id.
    pub id: RequestId,
    /// The negotiated-per-request version.
    pub version: ProtocolVersion,
    /// The envelope: decoded, or checked and kept raw until asked for.
    pub meta: Envelope,
}

/// The ladder's verdict.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// A request to dispatch.
    Request(ModernRoute),
    /// A notification to accept (HTTP 202) and hand to the notification path.
    Notification,
}

// HDR-19
/// Looks up the `x-mcp-header` map of a tool as this caller would see it in
/// `tools/list`. `None` skips the `Mcp-Param-*` rung.
pub trait ToolParamHeaders {
    /// The tool's header map, if it has a valid, non-empty one.
    fn param_headers(&self, tool: &str) -> Option<Arc<ParamHeaderMap>>;
}

impl<F: Fn(&str) -> Option<Arc<ParamHeaderMap>>> ToolParamHeaders for F {
    fn param_headers(&self, tool: &str) -> Option<Arc<ParamHeaderMap>> {
        self(tool)
    }
}

/// A `tools/call` request decoded in one pass over the body: the envelope,
/// the params members the ladder needs (with `_meta` decoded in place) and
/// the typed params, without first holding `params` as a raw value (which
/// costs a second scan of it). See [`decode_tools_call`].
#[derive(Debug)]
pub struct ProbedCall<'a> {
    /// The request id.
    pub id: RequestId,
    /// The probed params members, exactly as [`ParamsProbe::parse`] gives
    /// them for the same params.
    pub probe: ParamsProbe<'a>,
    /// The typed params, exactly as the full decode types them except
    /// for `arguments`, which is left `None`: they are
    /// [`arguments`](Self::arguments), for the consumer to type once.
    pub params: crate::types::CallToolRequestParams,
    /// The `arguments` object as JSON text, checked to type as the
    /// `JsonObject` the full decode would make of it (`None` when absent
    /// or `null`, as there).
    pub arguments: Option<&'a RawValue>,
}

/// The one-pass decode of the common request, a well-formed `tools/call`
/// whose `method` precedes its `params` and whose params type at once.
/// `None` means "take the general path" (`decode_message`, then
/// [`ParamsProbe::parse`] and the typed decode), which owns every error
/// text: anything unusual (invalid JSON, an error of any kind, another
/// method, `params` before `method`, a duplicate, a member that does not
/// type) gives `None`, never a different answer. Property tests pin that.
pub fn decode_tools_call(bytes: &[u8]) -> Option<ProbedCall<'_>> {
    // Other methods leave at once, not after a partial parse.
    memchr::memmem::find(bytes, b"\"tools/call\"")?;
    let text = std::str::from_utf8(bytes).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let call = de.deserialize_map(CallEnvelope).ok()?;
    de.end().ok()?;
    call
}

/// The envelope visitor of [`decode_tools_call`]: `Ok(None)` or an error
/// both mean "not the fast case".
struct CallEnvelope;

impl<'de> Visitor<'de> for CallEnvelope {
    type Value = Option<ProbedCall<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use crate::jsonrpc::{IdField, MaybeStr};
        let (mut version_ok, mut id, mut method_ok, mut probe) = (false, None, false, None);
        let bail = || serde::de::Error::custom("not the fast case");
        while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
            match &*key {
                "jsonrpc" if !version_ok => match map.next_value::<MaybeStr<'de>>()? {
                    MaybeStr::Str(v) if v == crate::jsonrpc::JSONRPC_VERSION => version_ok = true,
                    _ => return Err(bail()),
                },
                "id" if id.is_none() => match map.next_value::<IdField>()? {
                    IdField::Valid(v) => id = Some(v),
                    IdField::Invalid(_) => return Err(bail()),
                },
                "method" if !method_ok => match map.next_value::<MaybeStr<'de>>()? {
                    MaybeStr::Str(m) if m == crate::method::TOOLS_CALL => method_ok = true,
                    _ => return Err(bail()),
                },
                // Only once the method is known to be `tools/call`: then the
                // params are probed where they stand.
                "params" if method_ok && probe.is_none() => {
                    probe = Some(map.next_value_seed(ProbeSeed)?.out);
                }
                "jsonrpc" | "id" | "method" | "params" | "result" | "error" => {
                    return Err(bail());
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let (true, Some(id), Some(probe)) = (version_ok, id, probe) else {
            return Ok(None);
        };
        let members = probe.members();
        if !members.usable {
            return Ok(None);
        }
        let Some((params, arguments)) = crate::method::call_tool_deferring_arguments(&members)
        else {
            return Ok(None);
        };
        Ok(Some(ProbedCall {
            id,
            probe,
            params,
            arguments,
        }))
    }
}

/// The routing headers, borrowed from the header list.
#[derive(Default, Debug)]
struct Routing<'h> {
    version: Option<&'h [u8]>,
    method: Option<&'h [u8]>,
    name: Option<&'h [u8]>,
    duplicate: Option<&'static str>,
}

fn collect_routing<'h>(headers: &'h dyn HeaderList) -> Routing<'h> {
    let mut r = Routing::default();
    headers.visit(&mut |n, v| {
        let (slot, label) = if n.eq_ignore_ascii_case(header::MCP_PROTOCOL_VERSION) {
            (&mut r.version, header::MCP_PROTOCOL_VERSION)
        } else if n.eq_ignore_ascii_case(header::MCP_METHOD) {
            (&mut r.method, header::MCP_METHOD)
        } else if n.eq_ignore_ascii_case(header::MCP_NAME) {
            (&mut r.name, header::MCP_NAME)
        } else {
            return;
        };
        if slot.is_some() {
            r.duplicate.get_or_insert(label);
        } else {
            *slot = Some(trim_ows(v));
        }
    });
    r
}

/// A raw member's value when it is a JSON string.
fn json_str(raw: Option<&serde_json::value::RawValue>) -> Option<Cow<'_, str>> {
    raw.and_then(|r| serde_json::from_str::<Str<'_>>(r.get()).ok().map(|k| k.0))
}

fn show(v: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(v)
}

// LADDER-14
/// Runs the ladder on a decoded message.
///
/// `headers` is `None` on stdio and in-memory transports.
/// `supported` lists the modern versions served; it is also the `supported`
/// member of a -32022 error. `tools` resolves `x-mcp-header` maps for the
/// `Mcp-Param-*` rung (HTTP only).
pub fn classify_inbound_request(
    message: &Message<'_>,
    headers: Option<&dyn HeaderList>,
    supported: &[ProtocolVersion],
    tools: Option<&dyn ToolParamHeaders>,
) -> Result<Verdict, Rejection> {
    let (id, method, params) = match message {
        Message::Response(_) => {
            return Err(Rejection::new(
                Rung::NotARequest,
                ErrorObject::invalid_request("expected a request or notification, got a response"),
            ));
        }
        Message::Notification(n) => {
            if let Some(h) = headers {
                let r = collect_routing(h);
                if let Some(dup) = r.duplicate {
                    return Err(dup_rejection(dup));
                }
                if let Some(v) = r.version {
                    if !version_supported(v, supported) {
                        return Err(unsupported(&show(v), supported));
                    }
                }
            }
            let _ = n;
            return Ok(Verdict::Notification);
        }
        Message::Request(r) => (&r.id, &*r.method, r.params),
    };
    let probe = ParamsProbe::parse(params);
    classify_probed(id, method, probe, headers, supported, tools)
}

/// Like [`classify_inbound_request`] for a request whose params were already
/// probed (so era classification and the ladder share one parse).
pub fn classify_probed(
    id: &RequestId,
    method: &str,
    mut probe: ParamsProbe<'_>,
    headers: Option<&dyn HeaderList>,
    supported: &[ProtocolVersion],
    tools: Option<&dyn ToolParamHeaders>,
) -> Result<Verdict, Rejection> {
    // LADDER-07: duplicated routing headers.
    let routing = headers.map(collect_routing);
    if let Some(dup) = routing.as_ref().and_then(|r| r.duplicate) {
        return Err(dup_rejection(dup));
    }

    // LADDER-08: the envelope.
    if let Some(e) = &probe.params_error {
        return Err(Rejection::new(
            Rung::Envelope,
            ErrorObject::invalid_params(format_args!("malformed params: {e}")),
        ));
    }
    // A checked envelope passed every envelope check below already.
    let checked = probe.checked_meta.take();
    let decoded = probe.meta.take();
    if checked.is_none() {
        if let Some(e) = &probe.meta_error {
            return Err(Rejection::new(
                Rung::Envelope,
                ErrorObject::invalid_params(format_args!("malformed _meta: {e}")),
            ));
        }
        let Some(meta) = &decoded else {
            return Err(Rejection::new(
                Rung::Envelope,
                ErrorObject::invalid_params(format_args!(
                    "missing params._meta with {} and {}",
                    meta::PROTOCOL_VERSION,
                    meta::CLIENT_CAPABILITIES
                )),
            ));
        };
        if !meta.has_protocol_version_key {
            return Err(missing_key(meta::PROTOCOL_VERSION));
        }
        if let Some(p) = meta
            .problems
            .iter()
            .find(|p| p.key == meta::CLIENT_CAPABILITIES)
        {
            return Err(Rejection::new(
                Rung::Envelope,
                ErrorObject::invalid_params(format_args!("invalid {}: {}", p.key, p.reason)),
            ));
        }
        if meta.client_capabilities.is_none() {
            return Err(missing_key(meta::CLIENT_CAPABILITIES));
        }
    }
    let body_version: Option<&str> = match (&checked, &decoded) {
        (Some(c), _) => Some(c.protocol_version()),
        (None, Some(m)) => m.protocol_version.as_deref(),
        (None, None) => None,
    };

    // `params.name` as a string, parsed once for the Mcp-Name rung and the
    // Mcp-Param-* rung.
    let parse_name = || json_str(probe.name);
    let mut name: Option<Option<Cow<'_, str>>> = None;

    // LADDER-09: headers must agree with the body.
    if let Some(r) = &routing {
        match (&r.version, body_version) {
            (None, _) => {
                return Err(mismatch(format_args!(
                    "missing {} header",
                    header::MCP_PROTOCOL_VERSION
                )));
            }
            (Some(h), Some(b)) if *h == b.as_bytes() => {}
            (Some(h), b) => {
                return Err(mismatch(format_args!(
                    "{} header value '{}' does not match body value '{}'",
                    header::MCP_PROTOCOL_VERSION,
                    show(h),
                    b.unwrap_or("(not a string)")
                )));
            }
        }
        match &r.method {
            None => {
                return Err(mismatch(format_args!(
                    "missing {} header",
                    header::MCP_METHOD
                )));
            }
            Some(h) if *h == method.as_bytes() => {}
            Some(h) => {
                return Err(mismatch(format_args!(
                    "{} header value '{}' does not match body value '{method}'",
                    header::MCP_METHOD,
                    show(h)
                )));
            }
        }
        if let Some(member) = header::name_bearing_param(method) {
            let body: Option<Cow<'_, str>> = match member {
                "uri" => json_str(probe.uri),
                "taskId" => json_str(probe.task_id),
                _ => name.get_or_insert_with(parse_name).clone(),
            };
            match (&r.name, body) {
                (None, _) => {
                    return Err(mismatch(format_args!(
                        "missing {} header",
                        header::MCP_NAME
                    )));
                }
                (Some(_), None) => {
                    return Err(mismatch(format_args!(
                        "{} header present but params.{member} is not a string",
                        header::MCP_NAME
                    )));
                }
                (Some(h), Some(b)) => match decode_header_value(h) {
                    Some(d) if *d == *b => {}
                    Some(d) => {
                        return Err(mismatch(format_args!(
                            "{} header value '{}' does not match body value '{b}'",
                            header::MCP_NAME,
                            d.escape_debug()
                        )));
                    }
                    None => {
                        return Err(mismatch(format_args!(
                            "invalid {} header value '{}'",
                            header::MCP_NAME,
                            show(h).escape_debug()
                        )));
                    }
                },
            }
        }
    }

    // LADDER-10: the version.
    let Some(requested) = body_version else {
        return Err(Rejection::new(
            Rung::Version,
            ErrorObject::invalid_params(format_args!(
                "{} must be a string",
                meta::PROTOCOL_VERSION
            )),
        ));
    };
    let version = match ProtocolVersion::parse(requested) {
        Some(v) if supported.contains(&v) => v,
        _ => return Err(unsupported(requested, supported)),
    };

    // LADDER-12 (envelope part): other malformed members.
    if let Some(p) = decoded.as_ref().and_then(|m| m.problems.first()) {
        return Err(Rejection::new(
            Rung::EnvelopeMember,
            ErrorObject::invalid_params(format_args!("invalid {}: {}", p.key, p.reason)),
        ));
    }

    // LADDER-11: Mcp-Param-* against the tool's schema.
    if let (Some(h), Some(tools), "tools/call") = (headers, tools, method) {
        let tool = name.unwrap_or_else(parse_name);
        if let Some(map) = tool.and_then(|t| tools.param_headers(&t)) {
            // Not an object: params validation reports it at dispatch (-32602).
            let args = probe.arguments.and_then(|raw| {
                serde_json::from_str::<Option<serde_json::Map<String, serde_json::Value>>>(
                    raw.get(),
                )
                .unwrap_or_default()
            });
            map.validate(args.as_ref(), h)
                .map_err(|e| Rejection::new(Rung::ParamHeaders, e))?;
        }
    }

    let meta = match (checked, decoded) {
        (Some(c), _) => c.into_envelope(),
        (None, m) => Envelope::decoded(m.unwrap_or_default()),
    };
    Ok(Verdict::Request(ModernRoute {
        id: id.clone(),
        version,
        meta,
    }))
}

fn version_supported(v: &[u8], supported: &[ProtocolVersion]) -> bool {
    std::str::from_utf8(v)
        .ok()
        .and_then(ProtocolVersion::parse)
        .is_some_and(|v| supported.contains(&v))
}

fn dup_rejection(name: &str) -> Rejection {
    Rejection::new(
        Rung::DuplicateHeader,
        ErrorObject::header_mismatch(format_args!("{name} header must appear only once")),
    )
}

fn mismatch(detail: impl fmt::Display) -> Rejection {
    Rejection::new(Rung::HeaderMatch, ErrorObject::header_mismatch(detail))
}

fn missing_key(key: &str) -> Rejection {
    Rejection::new(
        Rung::Envelope,
        ErrorObject::invalid_params(format_args!("missing required _meta key {key}")),
    )
}

fn unsupported(requested: &str, supported: &[ProtocolVersion]) -> Rejection {
    Rejection::new(
        Rung::Version,
        ErrorObject::unsupported_version(requested, supported.iter().map(|v| v.as_str())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::decode_message;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// JSON values of every kind, nested a little.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z\\\\\"é]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,3}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// `_meta` values: well-formed envelopes, envelopes with wrongly typed
    /// members, and arbitrary JSON.
    fn any_meta() -> impl Strategy<Value = Value> {
        let member = prop_oneof![
            Just(json!("2026-07-28")),
            Just(json!({})),
            Just(json!({"name": "c", "version": "1"})),
            Just(json!({"name": 1})),
            Just(json!({"elicitation": {}, "x": [1]})),
            Just(json!({"sampling": "no"})),
            Just(json!("debug")),
            any_json(),
        ];
        let key = prop_oneof![
            Just(meta::PROTOCOL_VERSION.to_owned()),
            Just(meta::CLIENT_INFO.to_owned()),
            Just(meta::CLIENT_CAPABILITIES.to_owned()),
            Just(meta::LOG_LEVEL.to_owned()),
            Just(meta::PROGRESS_TOKEN.to_owned()),
            Just(meta::TRACEPARENT.to_owned()),
            "[a-z/.]{1,8}",
        ];
        prop_oneof![
            prop::collection::vec((key, member), 0..5)
                .prop_map(|v| Value::Object(v.into_iter().collect())),
            any_json(),
        ]
    }

    /// What the general path makes of a body: the request, its probe and
    /// its typed params, as comparable text.
    fn general(body: &str) -> Option<(String, String, String)> {
        let Ok(Message::Request(r)) = decode_message(body.as_bytes()) else {
            return None;
        };
        let probe = ParamsProbe::parse(r.params);
        let typed =
            crate::method::ClientRequest::decode_probed(&r.method, r.params, &probe.members());
        let Ok(crate::method::ClientRequest::CallTool(p)) = typed else {
            return None;
        };
        Some((
            format!("{:?}", r.id),
            format!("{probe:?}"),
            format!("{p:?}"),
        ))
    }

    /// The fast path's params with the deferred arguments typed, as the
    /// general path types them.
    fn typed_params(fast: &ProbedCall<'_>) -> String {
        let mut p = fast.params.clone();
        assert!(p.arguments.is_none(), "arguments are deferred");
        p.arguments = fast
            .arguments
            .map(|a| serde_json::from_str(a.get()).expect("checked to type"));
        format!("{p:?}")
    }

    /// A probe as the general path shows it: a checked envelope decoded.
    fn shown(mut probe: ParamsProbe<'_>, body: &str) -> String {
        if let Some(c) = probe.checked_meta.take() {
            probe.meta = c.into_envelope().decode_from(body.as_bytes()).map(Box::new);
        }
        format!("{probe:?}")
    }

    #[test]
    fn the_common_tools_call_takes_the_one_pass_decode() {
        let bodies = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}"#,
            r#" {"method":"tools/call","params":{"_meta":{"progressToken":"p","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"a"},"jsonrpc":"2.0","id":"x","extra":[1,{}]} "#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"e\u0041","inputResponses":{},"requestState":"s"}}"#,
        ];
        for (i, body) in bodies.into_iter().enumerate() {
            let fast = decode_tools_call(body.as_bytes()).expect(body);
            // A plain modern envelope is checked, not decoded.
            assert_eq!(fast.probe.checked_meta.is_some(), i < 2, "{body}");
            let (id, probe, params) = general(body).expect(body);
            assert_eq!(format!("{:?}", fast.id), id);
            assert_eq!(typed_params(&fast), params);
            assert_eq!(shown(fast.probe, body), probe);
        }
        // Not the fast case: the general path answers these.
        for body in [
            r#"{"jsonrpc":"2.0","id":2,"method":"tools\/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"params":{"name":"a"},"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"id":2}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}} x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"result":{}}"#,
            // A `_meta` that is not a plain modern envelope (handshake era,
            // or with a problem the ladder reports).
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":"p"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}}}"#,
        ] {
            assert!(decode_tools_call(body.as_bytes()).is_none(), "{body}");
        }
    }

    /// Envelope members in any order, of any shape, sometimes twice.
    fn any_envelope_member() -> impl Strategy<Value = String> {
        let params = (
            prop::option::of(any_meta()),
            prop::option::of(prop_oneof![Just(json!("echo")), any_json()]),
            prop::option::of(prop_oneof![Just(json!({"text": "hi"})), any_json()]),
            prop::option::of(any_json()),
        )
            .prop_map(|(meta, name, arguments, responses)| {
                let mut m = serde_json::Map::new();
                if let Some(v) = meta {
                    m.insert("_meta".into(), v);
                }
                if let Some(v) = name {
                    m.insert("name".into(), v);
                }
                if let Some(v) = arguments {
                    m.insert("arguments".into(), v);
                }
                if let Some(v) = responses {
                    m.insert("inputResponses".into(), v);
                }
                Value::Object(m)
            });
        prop_oneof![
            Just(r#""jsonrpc":"2.0""#.to_string()),
            Just(r#""jsonrpc":"1.0""#.to_string()),
            Just(r#""method":"tools/call""#.to_string()),
            Just(r#""method":"tools/list""#.to_string()),
            any_json().prop_map(|v| format!(r#""id":{v}"#)),
            Just(r#""id":7"#.to_string()),
            params.prop_map(|p| format!(r#""params":{p}"#)),
            any_json().prop_map(|v| format!(r#""params":{v}"#)),
            any_json().prop_map(|v| format!(r#""result":{v}"#)),
            any_json().prop_map(|v| format!(r#""other":{v}"#)),
        ]
    }

    proptest! {
        /// The one-pass `tools/call` decode answers only what the general
        /// path answers the same way: same id, same probe, same params.
        #[test]
        fn one_pass_tools_call_equals_the_general_path(
            members in prop::collection::vec(any_envelope_member(), 0..7),
            valid in (prop::option::of(any_meta()), any_json().prop_map(|v| format!(r#""other":{v}"#)))
                .prop_map(|(meta, extra)| {
                    let mut params = json!({"name": "echo", "arguments": {"text": "hi"}});
                    if let Some(m) = meta {
                        params["_meta"] = m;
                    }
                    vec![
                        r#""jsonrpc":"2.0""#.to_string(),
                        r#""id":7"#.to_string(),
                        r#""method":"tools/call""#.to_string(),
                        format!(r#""params":{params}"#),
                        extra,
                    ]
                })
                .prop_shuffle(),
            near_valid in any::<bool>(),
        ) {
            // Half the cases start from a valid request's members, shuffled,
            // so the fast path is taken often.
            let members = if near_valid { valid } else { members };
            let body = format!("{{{}}}", members.join(","));
            if let Some(fast) = decode_tools_call(body.as_bytes()) {
                let general = general(&body);
                prop_assert!(general.is_some(), "fast path took {}", body);
                let (id, probe, params) = general.unwrap();
                prop_assert_eq!(format!("{:?}", fast.id), id);
                prop_assert_eq!(typed_params(&fast), params);
                prop_assert_eq!(shown(fast.probe, &body), probe);
            }
        }

        /// The one-pass probe (meta decoded in place) and the
        /// member-by-member path agree on every input, problems included.
        #[test]
        fn probe_fast_path_equals_slow_path(
            meta in prop::option::of(any_meta()),
            name in prop::option::of(any_json()),
            arguments in prop::option::of(any_json()),
            extra in prop::option::of(any_json()),
            dup_meta in any::<bool>(),
        ) {
            let mut members: Vec<String> = Vec::new();
            if let Some(m) = &meta {
                members.push(format!("\"_meta\":{m}"));
                if dup_meta {
                    members.push(format!("\"_meta\":{m}"));
                }
            }
            if let Some(n) = &name {
                members.push(format!("\"name\":{n}"));
            }
            if let Some(a) = &arguments {
                members.push(format!("\"arguments\":{a}"));
            }
            if let Some(x) = &extra {
                members.push(format!("\"extra\":{x}"));
            }
            let text = format!("{{{}}}", members.join(","));
            let raw: Box<serde_json::value::RawValue> = serde_json::from_str(&text).unwrap();
            let fast = format!("{:?}", ParamsProbe::parse(Some(&raw)));
            let slow = format!("{:?}", ParamsProbe::parse_slow(&raw));
            prop_assert_eq!(fast, slow);
        }
    }

    const SUP: &[ProtocolVersion] = &[ProtocolVersion::V2026_07_28];

    fn body(method: &str, params: Value) -> String {
        json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}).to_string()
    }

    fn env() -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        })
    }

    fn std_headers(method: &str, name: Option<&str>) -> Vec<(String, Vec<u8>)> {
        let mut h = vec![
            ("content-type".to_string(), b"application/json".to_vec()),
            ("MCP-Protocol-Version".to_string(), b"2026-07-28".to_vec()),
            ("Mcp-Method".to_string(), method.as_bytes().to_vec()),
        ];
        if let Some(n) = name {
            h.push(("Mcp-Name".to_string(), n.as_bytes().to_vec()));
        }
        h
    }

    fn run(b: &str, headers: Option<&Vec<(String, Vec<u8>)>>) -> Result<Verdict, Rejection> {
        let msg = match decode_message(b.as_bytes()) {
            Ok(m) => m,
            Err(e) => return Err(Rejection::new(Rung::NotARequest, e.error)),
        };
        classify_inbound_request(&msg, headers.map(|h| h as &dyn HeaderList), SUP, None)
    }

    fn code(r: Result<Verdict, Rejection>) -> i64 {
        match r {
            Ok(_) => 0,
            Err(e) => e.error.code.0,
        }
    }

    #[test]
    fn accepts_a_well_formed_request_on_both_transports() {
        let b = body(
            "tools/call",
            json!({"name":"echo","arguments":{"text":"hi"},"_meta":env()}),
        );
        let h = std_headers("tools/call", Some("echo"));
        for headers in [None, Some(&h)] {
            match run(&b, headers) {
                Ok(Verdict::Request(r)) => {
                    assert_eq!(r.version, ProtocolVersion::V2026_07_28);
                    let m = r.meta.decode_from(b.as_bytes());
                    assert!(m.is_some_and(|m| m.client_capabilities.is_some()));
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn responses_are_invalid_requests() {
        assert_eq!(
            code(run(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, None)),
            -32600
        );
    }

    #[test]
    fn envelope_rung() {
        // No params, no _meta, _meta not an object, missing either key.
        for p in [
            json!({}),
            json!({"_meta": 5}),
            json!({"_meta": {}}),
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
            json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": {"sampling": 7}}}),
        ] {
            let r = run(&body("tools/list", p.clone()), None);
            assert!(
                matches!(&r, Err(e) if e.rung == Rung::Envelope && e.error.code.0 == -32602),
                "{p}: {r:?}"
            );
        }
        let r = run(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, None);
        assert!(matches!(&r, Err(e) if e.rung == Rung::Envelope), "{r:?}");
    }

    #[test]
    fn envelope_is_checked_before_headers_and_headers_before_version() {
        // Missing envelope and bad headers: envelope wins.
        let h = std_headers("tools/list", None);
        let mut bad = h.clone();
        bad[1].1 = b"2025-11-25".to_vec();
        assert_eq!(
            code(run(&body("tools/list", json!({})), Some(&bad))),
            -32602
        );
        // Unsupported version and header mismatch: header rung wins (-32020).
        let mut e = env();
        e["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
        assert_eq!(
            code(run(
                &body("tools/list", json!({"_meta": e.clone()})),
                Some(&h)
            )),
            -32020
        );
        // Header agreeing with an unsupported version: -32022 with data.
        let mut agree = h.clone();
        agree[1].1 = b"1999-01-01".to_vec();
        let r = run(&body("tools/list", json!({"_meta": e})), Some(&agree));
        match r {
            Err(rej) => {
                assert_eq!(rej.rung, Rung::Version);
                assert_eq!(
                    rej.error.data,
                    Some(json!({"supported":["2026-07-28"],"requested":"1999-01-01"}))
                );
                assert_eq!(rej.error.http_status(), 400);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn header_rung_cases() {
        let b = body("tools/call", json!({"name":"echo","_meta":env()}));
        let good = std_headers("tools/call", Some("echo"));
        assert_eq!(code(run(&b, Some(&good))), 0);
        // OWS is stripped; names are case-insensitive.
        let mut ows = good.clone();
        ows[3].1 = b"  echo  ".to_vec();
        ows[2].0 = "MCP-METHOD".into();
        assert_eq!(code(run(&b, Some(&ows))), 0);
        // Values are case-sensitive.
        let mut upper = good.clone();
        upper[2].1 = b"TOOLS/CALL".to_vec();
        assert_eq!(code(run(&b, Some(&upper))), -32020);
        // Missing each header.
        for i in 1..4 {
            let mut m = good.clone();
            m.remove(i);
            assert_eq!(code(run(&b, Some(&m))), -32020, "without header {i}");
        }
        // Wrong name.
        let mut n = good.clone();
        n[3].1 = b"other".to_vec();
        assert_eq!(code(run(&b, Some(&n))), -32020);
        // Duplicated routing header.
        let mut d = good.clone();
        d.push(("mcp-method".into(), b"tools/call".to_vec()));
        let r = run(&b, Some(&d));
        assert!(
            matches!(&r, Err(e) if e.rung == Rung::DuplicateHeader && e.error.code.0 == -32020)
        );
        // resources/read compares the uri.
        let rb = body("resources/read", json!({"uri":"test://x","_meta":env()}));
        assert_eq!(
            code(run(
                &rb,
                Some(&std_headers("resources/read", Some("test://x")))
            )),
            0
        );
        assert_eq!(
            code(run(
                &rb,
                Some(&std_headers("resources/read", Some("test://y")))
            )),
            -32020
        );
        // Non-name-bearing methods need no Mcp-Name.
        let lb = body("tools/list", json!({"_meta":env()}));
        assert_eq!(code(run(&lb, Some(&std_headers("tools/list", None)))), 0);
    }

    #[test]
    fn version_rung_type_and_member_problems() {
        let mut e = env();
        e["io.modelcontextprotocol/protocolVersion"] = json!(20260728);
        assert_eq!(
            code(run(&body("tools/list", json!({"_meta": e})), None)),
            -32602
        );
        let mut e = env();
        e["io.modelcontextprotocol/logLevel"] = json!("loud");
        let r = run(&body("tools/list", json!({"_meta": e})), None);
        assert!(matches!(&r, Err(x) if x.rung == Rung::EnvelopeMember && x.error.code.0 == -32602));
    }

    #[test]
    fn notifications_are_accepted_unless_version_header_unsupported() {
        let n = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
        assert!(matches!(run(n, None), Ok(Verdict::Notification)));
        let mut h = std_headers("notifications/cancelled", None);
        assert!(matches!(run(n, Some(&h)), Ok(Verdict::Notification)));
        h[1].1 = b"1999-01-01".to_vec();
        assert_eq!(code(run(n, Some(&h))), -32022);
    }

    #[test]
    fn param_header_rung_runs_last_and_only_for_annotated_tools() {
        let schema = json!({"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}});
        let map =
            Arc::new(crate::header::x_mcp_header::x_mcp_header_map(&schema).unwrap_or_default());
        let lookup = move |t: &str| (t == "geo").then(|| map.clone());
        let run_with = |args: Value, extra: Option<(&str, &str)>| {
            let b = body(
                "tools/call",
                json!({"name":"geo","arguments":args,"_meta":env()}),
            );
            let mut h = std_headers("tools/call", Some("geo"));
            if let Some((n, v)) = extra {
                h.push((n.to_string(), v.as_bytes().to_vec()));
            }
            let msg = decode_message(b.as_bytes()).map_err(|e| e.error)?;
            classify_inbound_request(&msg, Some(&h as &dyn HeaderList), SUP, Some(&lookup))
                .map_err(|r| r.error)
        };
        assert!(run_with(json!({"region":"eu"}), Some(("Mcp-Param-Region", "eu"))).is_ok());
        assert!(
            run_with(
                json!({"region":"Hello"}),
                Some(("mcp-param-region", "=?base64?SGVsbG8=?="))
            )
            .is_ok()
        );
        let e = run_with(json!({"region":"eu"}), None).err();
        assert_eq!(e.map(|e| e.code.0), Some(-32020));
        let e = run_with(
            json!({"region":"Hello"}),
            Some(("Mcp-Param-Region", "=?base64?SGVsbG8?=")),
        )
        .err();
        assert_eq!(e.map(|e| e.code.0), Some(-32020));
        // On stdio (no headers) the rung is skipped.
        let b = body(
            "tools/call",
            json!({"name":"geo","arguments":{"region":"eu"},"_meta":env()}),
        );
        let msg = decode_message(b.as_bytes()).map_err(|e| e.error);
        assert!(msg.is_ok_and(|m| classify_inbound_request(&m, None, SUP, Some(&lookup)).is_ok()));
    }
}
