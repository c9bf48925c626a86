//! One admission step per era for every transport: after the transport
//! has framed a request, it is admitted here or refused with the JSON-RPC
//! error to send.
//!
//! [`admit_modern`] runs the modern ladder (envelope, versions and, on
//! HTTP, the routing headers and the tool's `x-mcp-header` map), then the
//! era rule and the typed decode; it serves the HTTP general path, the
//! HTTP one-pass `tools/call` path (whose params arrive already typed) and
//! stdio alike. [`admit_handshake`] is the handshake era's step. Both load
//! the tool registry once and hand that snapshot on with the request, so
//! the definition whose headers were checked is the one dispatched.
//!
//! The era rule for methods ([`client_method_exists_in`]) is
//! applied before the params are typed, so a method that does not exist on
//! this wire is -32601 whatever its params; then the params are decoded
//! (with the ladder's probed members when there are any), unknown methods
//! are -32601, and `subscriptions/listen` is split from calls: only the
//! modern admission ([`Modern::Listen`]) can express it.
//! Adding a method rule touches `ferromcp_protocol::method` only.
// BASE-12, ERR-08, ERA-04, LADDER-09

use std::sync::Arc;

use bytes::Bytes;
use ferromcp_protocol::Era;
use ferromcp_protocol::ErrorObject;
use ferromcp_protocol::header::HeaderList;
use ferromcp_protocol::jsonrpc::RequestId;
use ferromcp_protocol::ladder::{
    ModernRoute, ParamsProbe, ProbedCall, ProbedMembers, Verdict, classify_probed,
};
use ferromcp_protocol::method::{ClientRequest, client_method_exists_in};
use ferromcp_protocol::types::SubscriptionFilter;
use serde_json::value::RawValue;

use crate::registry::Registry;
use crate::shared::Shared;

/// A request admitted for the dispatcher, with the registry snapshot it
/// was admitted against (and is served from).
pub(crate) struct Call {
    /// The typed request.
    pub(crate) request: CallRequest,
    /// The registry as loaded once for this request.
    pub(crate) registry: Arc<Registry>,
    /// The `tools/call` arguments as JSON text, when the one-pass decode
    /// left them untyped (the request's `arguments` is then `None`).
    pub(crate) arguments: Option<Bytes>,
}

/// What an admitted request is: a method the server knows, typed, or one
/// for the fallback handler ([`crate::fallback`]).
#[derive(Debug)]
pub(crate) enum CallRequest {
    /// A method of this wire, with typed params.
    Known(ClientRequest<'static>),
    /// A method the protocol crate does not know, admitted because the
    /// server has a fallback.
    Unhandled(crate::fallback::Unhandled),
}

impl CallRequest {
    /// The JSON-RPC method.
    pub(crate) fn method(&self) -> &str {
        match self {
            Self::Known(r) => r.method(),
            Self::Unhandled(u) => &u.method,
        }
    }

    /// The typed request, for a known method.
    pub(crate) fn known(&self) -> Option<&ClientRequest<'static>> {
        match self {
            Self::Known(r) => Some(r),
            Self::Unhandled(_) => None,
        }
    }
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

/// What the modern wire admits.
#[derive(Debug)]
pub(crate) enum Modern {
    /// A request for the dispatcher, and the route the ladder accepted.
    Call(Call, ModernRoute),
    /// `subscriptions/listen`, served by the transport's stream.
    Listen(SubscriptionFilter),
}

/// A modern request as the transport framed it.
pub(crate) enum ModernInput<'a> {
    /// A request decoded by the general path.
    Request {
        /// Its id.
        id: &'a RequestId,
        /// Its method.
        method: &'a str,
        /// Its raw params.
        params: Option<&'a RawValue>,
        /// The params' probed members.
        probe: ParamsProbe<'a>,
    },
    /// A `tools/call` decoded, probed and typed in one scan
    /// (`ferromcp_protocol::ladder::decode_tools_call`) of `text`.
    ToolsCall(ProbedCall<'a>, Text<'a>),
}

/// The text a request was decoded from, for keeping part of it.
#[derive(Clone, Copy)]
pub(crate) enum Text<'a> {
    /// A shared buffer (an HTTP body): parts of it are kept without a copy.
    Shared(&'a Bytes),
    /// A borrowed line (stdio): parts of it are copied.
    Line,
}

impl Text<'_> {
    /// `part`, a slice of this text, as its own buffer.
    fn keep(self, part: &str) -> Bytes {
        match self {
            Self::Shared(b) => {
                let range = b.as_ptr_range();
                let p = part.as_bytes().as_ptr_range();
                if range.start <= p.start && p.end <= range.end {
                    b.slice_ref(part.as_bytes())
                } else {
                    Bytes::copy_from_slice(part.as_bytes())
                }
            }
            Self::Line => Bytes::copy_from_slice(part.as_bytes()),
        }
    }
}

// LADDER-01…LADDER-13, HDR-19
/// Admits one modern request: the ladder (with `headers` on HTTP, none on
/// stdio), the era rule and the typed decode, against one registry
/// snapshot.
pub(crate) fn admit_modern(
    shared: &Shared,
    input: ModernInput<'_>,
    headers: Option<&dyn HeaderList>,
) -> Result<Modern, ErrorObject> {
    let registry = shared.registry_snapshot();
    let lookup = |name: &str| registry.tool(name).and_then(|t| t.headers.clone());
    let ladder = |id: &RequestId, method: &str, probe: ParamsProbe<'_>| match classify_probed(
        id,
        method,
        probe,
        headers,
        shared.modern_versions(),
        Some(&lookup),
    ) {
        Ok(Verdict::Request(r)) => Ok(r),
        Ok(Verdict::Notification) => Err(ErrorObject::invalid_request("unexpected notification")),
        Err(rej) => Err(rej.error),
    };
    let (request, route, arguments) = match input {
        ModernInput::Request {
            id,
            method,
            params,
            probe,
        } => {
            let members = probe.members();
            let route = ladder(id, method, probe)?;
            let fallback = shared.fallback_handler().is_some();
            match admit(method, params, Some(&members), Era::Modern, fallback)? {
                CallRequest::Known(ClientRequest::Listen(p)) => {
                    return Ok(Modern::Listen(p.notifications));
                }
                other => (other, route, None),
            }
        }
        ModernInput::ToolsCall(call, text) => {
            let route = ladder(&call.id, ferromcp_protocol::method::TOOLS_CALL, call.probe)?;
            let arguments = call.arguments.map(|a| text.keep(a.get()));
            let request = CallRequest::Known(ClientRequest::CallTool(call.params));
            (request, route, arguments)
        }
    };
    Ok(Modern::Call(
        Call {
            request,
            registry,
            arguments,
        },
        route,
    ))
}

/// Admits one handshake-era request: the era rule and the typed decode.
/// `subscriptions/listen` does not exist on this wire, so every admitted
/// request is a call.
pub(crate) fn admit_handshake(
    shared: &Shared,
    method: &str,
    params: Option<&RawValue>,
) -> Result<Call, ErrorObject> {
    match admit(
        method,
        params,
        None,
        Era::Handshake,
        shared.fallback_handler().is_some(),
    )? {
        // Unreachable: the era rule refuses it first.
        CallRequest::Known(ClientRequest::Listen(_)) => Err(ErrorObject::method_not_found(method)),
        request => Ok(Call {
            request,
            registry: shared.registry_snapshot(),
            arguments: None,
        }),
    }
}

/// The era rule, then the typed decode of request `method` with `params`
/// on `era`'s wire. A method the protocol crate does not know is -32601,
/// or, when the server has a `fallback`, admitted for it with its params
/// as sent.
fn admit(
    method: &str,
    params: Option<&RawValue>,
    members: Option<&ProbedMembers<'_>>,
    era: Era,
    fallback: bool,
) -> Result<CallRequest, ErrorObject> {
    if !client_method_exists_in(method, era) {
        return Err(ErrorObject::method_not_found(method));
    }
    let typed = match members {
        Some(m) => ClientRequest::decode_probed(method, params, m)?,
        None => ClientRequest::decode(method, params)?,
    };
    if fallback && typed.is_custom() {
        return Ok(CallRequest::Unhandled(crate::fallback::Unhandled {
            method: method.to_owned(),
            params: params.map(ToOwned::to_owned),
        }));
    }
    typed.into_owned().map(CallRequest::Known)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Option<&RawValue> {
        serde_json::from_str::<&RawValue>(s).ok()
    }

    #[test]
    fn kept_text_is_shared_from_a_body_and_copied_from_a_line() {
        let body = Bytes::from_static(br#"{"arguments":{"a":1}}"#);
        let Ok(text) = std::str::from_utf8(&body) else {
            panic!("utf-8")
        };
        let part = &text[13..20];
        let shared = Text::Shared(&body).keep(part);
        assert_eq!(&shared[..], br#"{"a":1}"#);
        assert_eq!(shared.as_ptr(), part.as_ptr(), "a slice of the body");
        let copied = Text::Line.keep(part);
        assert_eq!(copied, shared);
        assert_ne!(copied.as_ptr(), part.as_ptr(), "a copy");
        // Text from elsewhere is copied, never sliced out of bounds.
        let elsewhere = String::from(r#"{"b":2}"#);
        assert_eq!(
            &Text::Shared(&body).keep(&elsewhere)[..],
            elsewhere.as_bytes()
        );
    }

    #[test]
    fn each_wire_refuses_the_other_eras_methods_before_reading_params() {
        // Bad params would be -32602: the era rule comes first (-32601).
        let junk = raw(r#"{"level": 7}"#);
        for m in [
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
        ] {
            let e = admit(m, junk, None, Era::Modern, true).unwrap_err();
            assert_eq!(
                e.code,
                ferromcp_protocol::ErrorCode::METHOD_NOT_FOUND,
                "{m}"
            );
        }
        for m in ["server/discover", "subscriptions/listen", "tasks/get"] {
            let e = admit(m, junk, None, Era::Handshake, true).unwrap_err();
            assert_eq!(
                e.code,
                ferromcp_protocol::ErrorCode::METHOD_NOT_FOUND,
                "{m}"
            );
        }
    }

    #[test]
    fn unknown_methods_are_not_found_and_listen_is_typed() {
        let e = admit("vendor/thing", None, None, Era::Modern, false).unwrap_err();
        assert_eq!(e.code, ferromcp_protocol::ErrorCode::METHOD_NOT_FOUND);
        let l = admit(
            "subscriptions/listen",
            raw(r#"{"notifications":{"toolsListChanged":true}}"#),
            None,
            Era::Modern,
            false,
        );
        assert!(
            matches!(l, Ok(CallRequest::Known(ClientRequest::Listen(_)))),
            "{l:?}"
        );
        // With a fallback, an unknown method is admitted for it with its
        // params as sent; a known one is typed as before.
        match admit("vendor/thing", raw(r#"{"a":[1]}"#), None, Era::Modern, true) {
            Ok(CallRequest::Unhandled(u)) => {
                assert_eq!(u.method, "vendor/thing");
                assert_eq!(u.params.as_deref().map(RawValue::get), Some(r#"{"a":[1]}"#));
            }
            other => panic!("not for the fallback: {other:?}"),
        }
        let c = admit("tools/list", None, None, Era::Handshake, false);
        assert!(matches!(
            c,
            Ok(CallRequest::Known(ClientRequest::ListTools(_)))
        ));
        let e = admit("tools/call", raw(r#"{"name": 5}"#), None, Era::Modern, true).unwrap_err();
        assert_eq!(e.code, ferromcp_protocol::ErrorCode::INVALID_PARAMS);
    }

    fn server(answer: &'static str) -> crate::Server {
        crate::Server::builder("admit", "1")
            .tool(
                crate::tool("t").handler(
                    move |_: crate::NoArgs, _: crate::RequestContext| async move { answer },
                ),
            )
            .build()
            .unwrap_or_else(|e| panic!("build: {e}"))
    }

    fn envelope_call(name: &str) -> String {
        format!(
            r#"{{"name":"{name}","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}"#
        )
    }

    fn admit_call(shared: &Shared, id: &RequestId, params: &RawValue) -> (Call, ModernRoute) {
        let input = ModernInput::Request {
            id,
            method: "tools/call",
            params: Some(params),
            probe: ParamsProbe::parse(Some(params)),
        };
        match admit_modern(shared, input, None) {
            Ok(Modern::Call(c, r)) => (c, r),
            other => panic!("not admitted as a call: {other:?}"),
        }
    }

    // HDR-19
    #[tokio::test]
    async fn the_tool_admitted_is_the_tool_dispatched_after_a_swap() {
        // The registry is loaded once, at admission: a swap between
        // admission (where the tool's header map is checked) and dispatch
        // does not change which definition runs.
        let server = server("first");
        let shared = server.shared.clone();
        let id = RequestId::from(1);
        let params = envelope_call("t");
        let params = serde_json::from_str::<&RawValue>(&params).unwrap_or_else(|e| panic!("{e}"));
        let (call, route) = admit_call(&shared, &id, params);
        server
            .replace_tool(
                crate::tool("t")
                    .handler(|_: crate::NoArgs, _: crate::RequestContext| async { "second" }),
            )
            .unwrap_or_else(|e| panic!("replace: {e}"));
        let parts = crate::context::ContextParts::new(
            id.clone(),
            "tools/call",
            route.version,
            crate::meta_cell::MetaCell::admitted(route.meta, &bytes::Bytes::new()),
            tokio_util::sync::CancellationToken::new(),
        );
        let reply = shared
            .clone()
            .dispatch(call, parts, crate::dispatch::Legacy::default())
            .await
            .unwrap_or_else(|f| panic!("{f:?}"));
        let text = String::from_utf8_lossy(&reply);
        assert!(text.contains("first") && !text.contains("second"), "{text}");
        // A request admitted after the swap sees the new definition.
        let (call, route) = admit_call(&shared, &id, params);
        let parts = crate::context::ContextParts::new(
            id,
            "tools/call",
            route.version,
            crate::meta_cell::MetaCell::admitted(route.meta, &bytes::Bytes::new()),
            tokio_util::sync::CancellationToken::new(),
        );
        let reply = shared
            .dispatch(call, parts, crate::dispatch::Legacy::default())
            .await
            .unwrap_or_else(|f| panic!("{f:?}"));
        assert!(String::from_utf8_lossy(&reply).contains("second"));
    }

    #[test]
    fn listen_is_admitted_only_on_the_modern_wire() {
        // ERA-04: the handshake admission has no listen to return; the era
        // rule refuses the method before its params are read.
        let server = server("x");
        let e = admit_handshake(
            &server.shared,
            "subscriptions/listen",
            raw(r#"{"notifications":{"toolsListChanged":true}}"#),
        )
        .unwrap_err();
        assert_eq!(e.code, ferromcp_protocol::ErrorCode::METHOD_NOT_FOUND);
        let params = r#"{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#;
        let id = RequestId::from(2);
        let input = ModernInput::Request {
            id: &id,
            method: "subscriptions/listen",
            params: raw(params),
            probe: ParamsProbe::parse(raw(params)),
        };
        let l = admit_modern(&server.shared, input, None);
        assert!(matches!(l, Ok(Modern::Listen(_))), "{l:?}");
        let c = admit_handshake(&server.shared, "tools/list", None);
        assert!(matches!(
            c,
            Ok(Call {
                request: CallRequest::Known(ClientRequest::ListTools(_)),
                ..
            })
        ));
    }
}
