//! Unit-testing handlers: a [`RequestContext`] built without a transport.
//!
//! ```
//! use ferromcp_server::testing::ContextBuilder;
//! use ferromcp_server::{Elicited, Server};
//! use ferromcp_server::protocol::types::{ClientCapabilities, ElicitationCapability};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Name { name: String }
//!
//! let server = Server::builder("demo", "1.0.0").build().unwrap();
//! let caps = ClientCapabilities { elicitation: Some(ElicitationCapability::default()), ..Default::default() };
//! // First run: no answer yet, so the handler asks (an `input_required`).
//! let cx = ContextBuilder::new(&server).client_capabilities(caps.clone()).build();
//! assert!(cx.elicit_form::<Name>("who", "Your name?").is_err());
//! // Second run: the client's answer is in the request.
//! let cx = ContextBuilder::new(&server)
//!     .client_capabilities(caps)
//!     .input("who", serde_json::json!({"action": "accept", "content": {"name": "Ada"}}))
//!     .build();
//! let Ok(Elicited::Accepted(n)) = cx.elicit_form::<Name>("who", "Your name?") else { panic!() };
//! assert_eq!(n.name, "Ada");
//! ```
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use crate::Server;
use crate::context::{ContextParts, RequestContext};
use ferromcp_protocol::meta::RequestMeta;
use ferromcp_protocol::types::{ClientCapabilities, InputResponses, LoggingLevel};
use ferromcp_protocol::{ProtocolVersion, RequestId};
use tokio_util::sync::CancellationToken;

/// Builds the [`RequestContext`] a handler would get for one request of
/// `server`: by default a 2026-07-28 `tools/call` with id 1, no client
/// capabilities, no input responses and no principal. Notifications the
/// handler sends (progress, logs) go nowhere.
#[derive(Debug)]
pub struct ContextBuilder {
    server: Server,
    id: RequestId,
    method: String,
    version: ProtocolVersion,
    capabilities: ClientCapabilities,
    log_level: Option<LoggingLevel>,
    input: Option<InputResponses>,
    state: Option<Vec<u8>>,
    cancel: CancellationToken,
}

impl ContextBuilder {
    /// A context for a request to `server`.
    pub fn new(server: &Server) -> Self {
        Self {
            server: server.clone(),
            id: RequestId::number(1),
            method: "tools/call".into(),
            version: ProtocolVersion::V2026_07_28,
            capabilities: ClientCapabilities::default(),
            log_level: None,
            input: None,
            state: None,
            cancel: CancellationToken::new(),
        }
    }

    /// The request id.
    pub fn id(mut self, id: RequestId) -> Self {
        self.id = id;
        self
    }

    /// The method (default `tools/call`).
    pub fn method(mut self, method: impl Into<String>) -> Self {
        self.method = method.into();
        self
    }

    /// The negotiated revision (default `2026-07-28`).
    pub fn protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.version = version;
        self
    }

    /// The client's capabilities for this request (what it may be asked).
    pub fn client_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The log level the request asked for.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// An answer the client gives to input request `key` (what the
    /// handler's `cx.elicit`, `cx.sample`, `cx.roots` or `cx.input` read).
    pub fn input(mut self, key: impl Into<String>, answer: serde_json::Value) -> Self {
        self.input
            .get_or_insert_with(InputResponses::new)
            .0
            .insert(key.into(), answer);
        self
    }

    /// The `requestState` the handler reads with `cx.state()`.
    pub fn state(mut self, state: impl Into<Vec<u8>>) -> Self {
        self.state = Some(state.into());
        self
    }

    // Foreign type: the server runs on tokio; handlers `select!` on this token and hand it to
    // tokio-based code.
    /// The token the context reports as cancelled once cancelled.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// The context.
    pub fn build(self) -> RequestContext {
        let parts = ContextParts {
            id: self.id,
            method: crate::context::method_name(&self.method),
            version: self.version,
            meta: Box::new(RequestMeta::default()),
            capabilities: Some(std::sync::Arc::new(self.capabilities)),
            log_level: self.log_level,
            cancel: self.cancel,
            outbound: None,
            principal: None,
            #[cfg(feature = "http")]
            http: None,
        };
        RequestContext::new(parts, self.input, self.state, self.server.shared.clone())
    }
}
