//! The fallback: one handler for every request method the server does not
//! implement (an extension or vendor method, a method from a newer
//! revision), registered with
//! [`ServerBuilder::fallback`](crate::ServerBuilder::fallback).
//!
//! Without a fallback such a method is answered with -32601, as before.
//! With one, the request is admitted like any other: on the 2026-07-28
//! wire it passes the whole validation ladder first (the `_meta`
//! envelope, the version, and on HTTP the `MCP-Protocol-Version` and
//! `Mcp-Method` headers), and it goes through the middleware stack
//! ([`crate::middleware`]), which sees its method; only then is the
//! handler (a [`FallbackHandler`](crate::FallbackHandler)) called, with
//! the method, the params as sent (`_meta` included) and the
//! [`RequestContext`](crate::RequestContext).
//!
//! The handler answers with the JSON `result` object. On the 2026-07-28
//! wire the server adds `resultType: "complete"` and the
//! `serverInfo` entry of `_meta` when the result lacks them; on handshake
//! revisions the result is sent as the handler returned it. A
//! [`HandlerError::Protocol`](crate::HandlerError::Protocol) is answered
//! as that JSON-RPC error, unchanged; a
//! [`HandlerError::NeedInput`](crate::HandlerError::NeedInput) is served
//! like a tool's (the
//! server asks the client in the handshake era; an `input_required`
//! result on the 2026-07-28 wire). The params' `inputResponses` and
//! `requestState` members are read as a tool call's are: on the
//! 2026-07-28 wire a `requestState` this server did not seal is refused
//! with -32602 before the handler runs.
//!
//! Methods the server knows keep their meaning: a method of the other era
//! (`ping` on the 2026-07-28 wire, `server/discover` in a handshake
//! session), `initialize` and `subscriptions/listen` never reach the
//! fallback, and neither do known methods whose capability the server
//! did not declare.
//!
//! ```
//! use ferromcp_server::{FallbackRequest, HandlerError, RequestContext, Server};
//! use serde_json::json;
//!
//! let server = Server::builder("demo", "1.0.0")
//!     .fallback(|req: FallbackRequest, _cx: RequestContext| async move {
//!         match req.method() {
//!             "acme/echo" => Ok(json!({ "echo": req.params().cloned() })),
//!             other => Err(HandlerError::Protocol(
//!                 ferromcp_server::protocol::ErrorObject::method_not_found(other),
//!             )),
//!         }
//!     })
//!     .build()?;
//! # let _ = server;
//! # Ok::<(), ferromcp_server::Error>(())
//! ```
// ERR-08, RESULT-01, META-08

use serde_json::Value;
use serde_json::value::RawValue;

/// A request for a method the server does not implement, as the client
/// sent it.
#[derive(Debug, Clone)]
pub struct FallbackRequest {
    method: String,
    params: Option<Value>,
}

impl FallbackRequest {
    pub(crate) fn new(method: String, params: Option<Value>) -> Self {
        Self { method, params }
    }

    /// The JSON-RPC method, e.g. `acme/ping`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params as sent, `_meta` included; `None` when the request had
    /// none.
    pub fn params(&self) -> Option<&Value> {
        self.params.as_ref()
    }

    /// The method and the params, owned.
    pub fn into_parts(self) -> (String, Option<Value>) {
        (self.method, self.params)
    }
}

/// An admitted request for the fallback: the method and the raw params,
/// owned (the transport's buffer is gone by the time it is served).
#[derive(Debug)]
pub(crate) struct Unhandled {
    pub(crate) method: String,
    pub(crate) params: Option<Box<RawValue>>,
}

impl Unhandled {
    /// The params as the handler receives them, and the members the MRTR
    /// round reads (`inputResponses`, `requestState`).
    pub(crate) fn params_value(&self) -> Option<Value> {
        // The params already parsed as JSON once (framing); a failure here
        // is impossible in practice and gives no params rather than a panic.
        self.params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
    }
}
