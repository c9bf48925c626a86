//! Unit-testing handlers: a [`RequestContext`] built without a transport,
//! and a [`ManualClock`] for code that reads the time through a
//! [`Clock`](crate::request_state::Clock).
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

mod clock;

pub use clock::ManualClock;

use crate::Server;
use crate::context::{ContextParts, RequestContext};
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
            capabilities: Some(std::sync::Arc::new(self.capabilities)),
            log_level: self.log_level,
            ..ContextParts::new(
                self.id,
                &self.method,
                self.version,
                Box::default(),
                self.cancel,
            )
        };
        RequestContext::new(parts, self.input, self.state, self.server.shared.clone())
    }
}

/// Sends one 2026-07-28 JSON-RPC request to `service` as a Streamable HTTP
/// `POST /mcp` (with the `_meta` envelope and the `MCP-Protocol-Version`,
/// `Mcp-Method` and `Mcp-Name` headers a client sends) and returns the
/// JSON-RPC response: `{"result": …}` or `{"error": …}`. Nothing is
/// listened on; the request goes straight through
/// [`McpService::handle`](crate::transport::http::McpService::handle).
/// A response sent as an event stream (when the handler sent progress or
/// logs first) is reduced to its final response.
///
/// For integration tests of a server's own tools, prompts and resources,
/// and of what its HTTP layer (auth, limits) makes of a plain request.
/// `_meta` keys already in `params` are kept (the envelope is added to them).
/// To change the request first (say, insert an authenticated
/// [`Principal`](crate::Principal) as an extension), build it with
/// [`modern_request`] and pass it to [`send`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use ferromcp_server::transport::http::{HttpConfig, McpService};
/// use ferromcp_server::{NoArgs, RequestContext, Server, testing, tool};
/// use serde_json::json;
///
/// let server = Server::builder("demo", "1.0.0")
///     .tool(tool("ping").handler(|_: NoArgs, _cx: RequestContext| async { "pong".to_owned() }))
///     .build()
///     .unwrap();
/// let service = McpService::new(server, HttpConfig::default());
/// let r = testing::call_tool(&service, "ping", json!({})).await;
/// assert_eq!(r["result"]["content"][0]["text"], "pong");
/// let r = testing::request(&service, "tools/list", json!({})).await;
/// assert_eq!(r["result"]["tools"][0]["name"], "ping");
/// # }
/// ```
///
/// # Panics
///
/// As [`send`].
#[cfg(feature = "http")]
pub async fn request(
    service: &crate::transport::http::McpService,
    method: &str,
    params: serde_json::Value,
) -> serde_json::Value {
    send(service, modern_request(method, params)).await
}

/// The request [`request`] sends, unsent: a 2026-07-28 `POST /mcp` of
/// `method` with `params` (id 1), the `_meta` envelope added to `params`
/// (keys already in its `_meta` are kept) and the headers a client sends.
///
/// # Panics
///
/// When `method` or the `Mcp-Name` value cannot be an HTTP header value.
#[cfg(feature = "http")]
pub fn modern_request(
    method: &str,
    mut params: serde_json::Value,
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    use ferromcp_protocol::header::codec::encode_header_value;
    use ferromcp_protocol::header::name_bearing_param;
    use serde_json::{Value, json};

    let version = ProtocolVersion::V2026_07_28.as_str();
    let envelope = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "ferromcp-server-testing", "version": "1"}
    });
    if let Value::Object(p) = &mut params {
        match p.get_mut("_meta") {
            Some(Value::Object(m)) => {
                if let Value::Object(e) = envelope {
                    for (k, v) in e {
                        m.entry(k).or_insert(v);
                    }
                }
            }
            _ => {
                p.insert("_meta".into(), envelope);
            }
        }
    }
    let name = name_bearing_param(method)
        .and_then(|k| params.get(k))
        .and_then(Value::as_str)
        .map(|n| encode_header_value(n).into_owned());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut req = http::Request::builder()
        .method(http::Method::POST)
        .uri("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .header("mcp-method", method);
    if let Some(name) = name {
        req = req.header("mcp-name", name);
    }
    req.body(http_body_util::Full::new(bytes::Bytes::from(
        body.to_string(),
    )))
    .unwrap_or_else(|e| panic!("testing::modern_request: cannot build the request: {e}"))
}

/// Sends `req` (built by [`modern_request`], then changed as the test
/// needs) through [`McpService::handle`](crate::transport::http::McpService::handle)
/// and returns the JSON-RPC response, as [`request`] does.
///
/// # Panics
///
/// When the response is not a JSON-RPC message (an HTTP-level refusal
/// such as 401 or 413 has no JSON-RPC body: test those with
/// [`McpService::handle`](crate::transport::http::McpService::handle) directly).
#[cfg(feature = "http")]
pub async fn send(
    service: &crate::transport::http::McpService,
    req: http::Request<http_body_util::Full<bytes::Bytes>>,
) -> serde_json::Value {
    use http_body_util::BodyExt;
    use serde_json::Value;

    let method = req
        .headers()
        .get("mcp-method")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("the request")
        .to_owned();
    let resp = service.handle(req).await;
    let status = resp.status();
    let raw = match resp.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => panic!("testing::send: reading the {status} response failed: {e}"),
    };
    let text = String::from_utf8_lossy(&raw);
    // An event stream: its last `data:` line carrying an `id` is the answer.
    let message = text
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some());
    match message {
        Some(v) => v,
        None => serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("testing::send: {method} got {status} with no JSON-RPC body ({e}): {text}")
        }),
    }
}

/// `tools/call` of `name` with `arguments` through [`request`]; returns the
/// JSON-RPC response (the tool's result under `"result"`).
#[cfg(feature = "http")]
pub async fn call_tool(
    service: &crate::transport::http::McpService,
    name: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let params = serde_json::json!({"name": name, "arguments": arguments});
    request(service, "tools/call", params).await
}

/// The names of `server`'s tools whose `inputSchema` or `outputSchema`
/// is outside the plain subset the built-in checker handles (those are
/// checked by the `jsonschema` engine), sorted. For tests that pin which
/// tools take the full engine.
#[cfg(feature = "schema-validation")]
#[doc(hidden)]
#[must_use]
pub fn tools_outside_plain_schemas(server: &Server) -> Vec<String> {
    let reg = server.shared.registry();
    let mut names: Vec<String> = reg
        .tools
        .iter()
        .filter(|t| {
            let plain = |s: &Option<std::sync::Arc<crate::schema_check::CompiledSchema>>| {
                s.as_ref().is_none_or(|s| s.is_plain())
            };
            !(plain(&t.input) && plain(&t.output))
        })
        .map(|t| t.def.tool.name.clone())
        .collect();
    names.sort();
    names
}
