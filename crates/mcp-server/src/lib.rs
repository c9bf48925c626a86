//! # mcp-server
//!
//! A Model Context Protocol server: a transport-agnostic core built once and
//! shared by `Arc`, plus thin transports (stdio, Streamable HTTP).
//!
//! ```no_run
//! use mcp_server::{Server, tool, RequestContext};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Echo { text: String }
//!
//! # async fn run() -> Result<(), mcp_server::Error> {
//! let server = Server::builder("demo", "1.0.0")
//!     .tool(tool("echo").description("Echoes text").handler(|a: Echo, _cx: RequestContext| async move { a.text }))
//!     .build()?;
//! server.serve_stdio().await
//! # }
//! ```
//!
//! ## Cargo features
//!
//! All on by default; each one only adds code, never changes a trait bound.
//!
//! - `stdio`: newline-delimited JSON-RPC over stdin/stdout.
//! - `http`: Streamable HTTP as a tower `Service` plus a ready `serve(addr)`.
//! - `http2`: HTTP/2 (h2c) next to HTTP/1.1 on that listener, chosen per
//!   connection. Without it the listener speaks HTTP/1.1 only (and HTTP
//!   upgrades are not offered), the usual setup behind a TLS-terminating
//!   reverse proxy.
//! - `schema-validation`: tool arguments are checked against the tool's
//!   `inputSchema` before the handler runs (failures are an `isError`
//!   result, TOOL-06), `structuredContent` against the `outputSchema`
//!   (-32603, TOOL-07), and schemas are compiled (so invalid ones rejected)
//!   at registration (SCHEMA-02). Without it the SDK does no JSON Schema
//!   validation: a typed handler still rejects arguments its parameter type
//!   cannot deserialize (an `isError` result), but schema-only constraints
//!   (`pattern`, `minimum`, `enum`, …) and output shapes are the handler's
//!   job (TOOL-09). Turning it off takes the `jsonschema` engine and its
//!   regex engines out of the binary (about 4.4 MB of a 7.8 MB text segment
//!   and ~4.5 MB of idle RSS for a one-tool server).

// Without a transport the dispatch core has no caller in this crate (a
// backplane crate such as mcp-redis builds against the traits only).
#![cfg_attr(not(any(feature = "http", feature = "stdio")), allow(dead_code))]

mod admit;
mod context;
mod dispatch;
mod error;
mod limits;
mod listen;
pub mod notify;
mod prompt;
pub mod request_state;
mod resource;
mod server;
mod session;
pub mod shared_sessions;
pub mod single_use;
pub mod tasks;
mod tool;
pub mod transport;
pub use mcp_protocol::uri_template;

pub use context::{Principal, RequestContext};
pub use error::{Error, ErrorKind, HandlerError, InputRequired};
pub use limits::Limits;
pub use prompt::{
    CompletionHandler, IntoPromptResult, PromptArgs, PromptBuilder, PromptDef, PromptHandler,
    prompt,
};
pub use resource::{IntoReadResult, ResourceDef, ResourceHandler, ResourceRequest, TemplateDef};
pub use server::{CacheHints, Server, ServerBuilder};
pub use session::SessionState;
pub use tasks::{TaskConfig, TaskCreation, TaskSupport};
pub use tool::{BoxFuture, IntoToolResult, Json, NoArgs, ToolBuilder, ToolDef, ToolHandler, tool};

/// Re-export of the protocol crate.
pub use mcp_protocol as protocol;
