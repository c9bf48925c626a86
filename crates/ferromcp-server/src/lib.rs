//! # ferromcp-server
//!
//! A Model Context Protocol server: a transport-agnostic core built once and
//! shared by `Arc`, plus thin transports (stdio, Streamable HTTP).
//!
//! ```no_run
//! use ferromcp_server::{Server, tool, RequestContext};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Echo { text: String }
//!
//! # async fn run() -> Result<(), ferromcp_server::Error> {
//! let server = Server::builder("demo", "1.0.0")
//!     .tool(tool("echo").description("Echoes text").handler(|a: Echo, _cx: RequestContext| async move { a.text }))
//!     .build()?;
//! server.serve_stdio().await
//! # }
//! ```
//!
//! ## Cargo features
//!
//! All on by default except `macros` and `otel`; each one only adds code, never
//! changes a trait bound. What a feature implements is chosen at run time:
//! h2c with [`HttpConfig::http2`](crate::transport::http::HttpConfig::http2),
//! JSON Schema validation with [`ServerBuilder::validate_schemas`], both
//! on by default when their feature is built in; asking for either without
//! its feature is a configuration error, never a silent no-op.
//!
//! - `stdio`: newline-delimited JSON-RPC over stdin/stdout.
//! - `http`: Streamable HTTP as a tower `Service` plus a ready `serve(addr)`.
//! - `http2`: the HTTP/2 (h2c) code for that listener, next to HTTP/1.1,
//!   chosen per connection when `HttpConfig::http2` is on (its default with
//!   the feature). Without it the listener speaks HTTP/1.1 only (and HTTP
//!   upgrades are not offered), the usual setup behind a TLS-terminating
//!   reverse proxy.
//! - `schema-validation`: the JSON Schema code. With
//!   `ServerBuilder::validate_schemas` on (its default with the feature),
//!   tool arguments are checked against the tool's
//!   `inputSchema` before the handler runs (failures are an `isError`
//!   result), `structuredContent` against the `outputSchema`
//!   (-32603), and schemas are compiled (so invalid ones rejected)
//!   at registration. Schemas in the plain subset that schemas derived
//!   from Rust types and most hand-written tool schemas use (`type`,
//!   `properties`, `required`, `additionalProperties`, `items`, `enum`,
//!   `const`, numeric bounds, string and array length bounds,
//!   `uniqueItems`, boolean schemas and annotations such as `title`,
//!   `description`, `default`, `examples`, `format` and `x-*` keywords)
//!   are checked by a small built-in checker that runs no `jsonschema`
//!   code while arguments are valid; invalid arguments, and schemas using
//!   anything else (`$ref`, `$defs`, combinators, `pattern`, other
//!   dialects, …), go to the `jsonschema` engine, whose verdict and messages
//!   are the ones reported. Without it the SDK does no JSON Schema
//!   validation: a typed handler still rejects arguments its parameter type
//!   cannot deserialize (an `isError` result), but schema-only constraints
//!   (`pattern`, `minimum`, `enum`, …) and output shapes are the handler's
//!   job. Turning it off takes the `jsonschema` engine and its
//!   regex engines out of the binary (about 4.4 MB of a 7.8 MB text segment
//!   and ~4.5 MB of idle RSS for a one-tool server).
//! - `macros` (off by default): the `#[tool]`, `#[prompt]`, `#[resource]`
//!   and `#[router]` attribute macros in `macros`, an optional layer over the builder.
//!   Off by default because the builder is the primary API and the macros
//!   add a proc-macro crate to the build.
//! - `otel` (off by default): with a `tracing-opentelemetry` layer
//!   installed, the `mcp.request` span's OpenTelemetry parent is the W3C
//!   trace context from the request's `_meta` (`traceparent`, `tracestate`),
//!   so the server span joins the client's trace as a child of its span.
//!   Adds `opentelemetry` and `tracing-opentelemetry` (with
//!   `tracing-subscriber`'s registry) to the build. Example:
//!   `cargo run -p ferromcp-examples --features otel --example otel_stdout`.
//!
//! ## Application state
//!
//! Give shared state once with [`ServerBuilder::with_state`]; handlers take
//! it as a [`State<T>`] parameter of `handler` (before the arguments; see
//! [`FromContext`]) or read it with [`RequestContext::app_state`]. See
//! [`State`].
// TOOL-06, TOOL-07, SCHEMA-02, TOOL-09

// Without a transport the dispatch core has no caller in this crate (a
// backplane crate such as ferromcp-redis builds against the traits only).
#![cfg_attr(not(any(feature = "http", feature = "stdio")), allow(dead_code))]

mod admit;
mod apps;
mod backplane;
mod builder;
mod cache_hints;
mod client_notification;
mod context;
mod dispatch;
mod elicit;
mod error;
pub mod fallback;
mod field_order;
mod future;
mod handler;
mod limits;
mod listen;
mod meta_cell;
pub mod middleware;
pub mod notify;
#[cfg(feature = "otel")]
mod otel;
mod outcome;
mod prompt;
mod raw_result;
mod registry;
pub mod request_state;
mod request_state_config;
mod resource;
#[cfg(feature = "fs")]
pub mod safe_fs;
#[cfg(feature = "schema-validation")]
mod schema_check;
#[cfg(feature = "http")]
mod serve_http;
mod server;
mod session;
mod shared;
pub mod shared_sessions;
mod sieve;
pub mod single_use;
pub mod skills;
mod state;
pub mod tasks;
mod tool;
mod trace;
pub mod transport;
pub use ferromcp_protocol::uri_template;

pub use apps::{UiResourceBuilder, ui_resource};
pub use backplane::Backplane;
pub use builder::ServerBuilder;
pub use cache_hints::CacheHints;
pub use client_notification::ClientNotification;
pub use context::{Principal, RequestContext};
pub use elicit::Elicited;
pub use error::{Error, ErrorKind, HandlerError, InputRequired, IntoHandlerError};
pub use fallback::FallbackRequest;
pub use handler::FallbackHandler;
pub use handler::{CompletionFn, FromContext, PromptFn, ResourceFn, ToolFn};
pub use limits::Limits;
pub use prompt::{
    CompletionHandler, IntoPromptResult, PromptArgs, PromptBuilder, PromptDef, PromptHandler,
    prompt, prompt_from,
};
pub use raw_result::RawResult;
pub use request_state_config::RequestStateConfig;
pub use resource::{
    IntoReadResult, ResourceBuilder, ResourceDef, ResourceHandler, ResourceRequest,
    TemplateBuilder, TemplateDef, resource, resource_template,
};
#[cfg(feature = "http")]
pub use serve_http::shutdown_signal;
pub use server::{AnyResourceDef, Server};
pub use session::HandshakeSession;
pub use state::State;
pub use tasks::{TaskConfig, TaskCreation, TaskSupport};
pub use tool::{
    BoxFuture, IntoToolResult, Json, NoArgs, ToolBuilder, ToolDef, ToolHandler, tool, tool_from,
};

/// Attribute macros over the builder API (feature `macros`).
///
/// They live here rather than at the crate root because the root already
/// has the [`tool()`] and [`prompt()`] builder functions; write
/// `use ferromcp_server::macros::{tool, router};` (or the full path
/// `#[ferromcp_server::macros::tool]`). Every macro expands to the public
/// builder calls ([`tool()`], [`prompt()`], [`ToolBuilder::handler`],
/// [`ServerBuilder::tools`], …); there is no hidden runtime. The expansion
/// refers to this crate as `::ferromcp_server`, so depend on it under that name.
///
/// - [`macros::tool`]: on an `async fn`, generates `<fn>_tool() -> ToolDef`;
///   on a method of a `#[router]` impl block, the method joins the block's
///   `tool_defs`.
/// - [`macros::prompt`]: the same for prompts (`<fn>_prompt() -> PromptDef`).
/// - [`macros::resource`]: the same for resources and resource templates
///   (`<fn>_resource() -> ResourceDef` or `TemplateDef`).
/// - [`macros::router`]: on an `impl` block, collects its `#[tool]`,
///   `#[prompt]` and `#[resource]` methods into `tool_defs`, `prompt_defs`,
///   `resource_defs`, `resource_template_defs` and `register`, with `&self`
///   shared by `Arc`.
#[cfg(feature = "macros")]
pub mod macros {
    pub use ferromcp_macros::{prompt, resource, router, tool};
}

/// Implementation details of the macros; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;

    /// What a `#[tool]` parameter must be; the macro checks each parameter
    /// type against it, so that a missing derive is reported at the
    /// parameter with how to fix it.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a `#[tool]` parameter: it must implement `serde::Deserialize` and `schemars::JsonSchema`",
        label = "this parameter's type",
        note = "derive both on the type: `#[derive(serde::Deserialize, schemars::JsonSchema)]`, or take a type that has them"
    )]
    pub trait ToolParam {}
    impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> ToolParam for T {}

    pub use crate::state::NeedsState;

    /// `State<T>` out of the request context (a handler's second and
    /// further `State` parameters).
    pub fn extract_state<T: Clone + Send + Sync + 'static>(
        cx: &crate::RequestContext,
    ) -> Result<crate::State<T>, crate::HandlerError> {
        crate::context::extract_state::<T>(cx)
    }
}

/// Re-export of the protocol crate.
pub use ferromcp_protocol as protocol;

/// The `schemars` this crate derives tool schemas with, so a server's
/// `#[derive(JsonSchema)]` types match its version. Depend on `schemars` 1.x
/// directly for the derive macro, or point it here with
/// `#[schemars(crate = "ferromcp_server::schemars")]`.
pub use schemars;

/// What most servers import: `use ferromcp_server::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Elicited, HandlerError, IntoToolResult, Json, NoArgs, RequestContext, Server,
        ServerBuilder, State, prompt, resource, resource_template, tool,
    };
    pub use ferromcp_protocol::types::{
        CallToolResult, ContentBlock, GetPromptResult, ReadResourceResult,
    };
    pub use schemars::JsonSchema;
}

pub mod testing;
