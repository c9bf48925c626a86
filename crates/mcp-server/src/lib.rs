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
mod tool;
pub mod transport;
pub mod uri_template;

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
pub use tool::{BoxFuture, IntoToolResult, Json, NoArgs, ToolBuilder, ToolDef, ToolHandler, tool};

/// Re-export of the protocol crate.
pub use mcp_protocol as protocol;
