//! # ferromcp-client
//!
//! A Model Context Protocol client for the modern revision (2026-07-28) and
//! the handshake revisions (2025-11-25, 2025-06-18, 2025-03-26, and
//! 2024-11-05 through the deprecated HTTP+SSE fallback).
//!
//! ```no_run
//! # async fn demo() -> ferromcp_client::Result<()> {
//! use ferromcp_client::{ClientBuilder, StdioCommand};
//! let client = ClientBuilder::new("my-app", "1.0.0")
//!     .connect_command(StdioCommand::new("my-server", ["--stdio"]))
//!     .await?;
//! let tools = client.list_tools().await?;
//! let result = client.call_tool(&tools[0].name, None).await?;
//! # let _ = result; Ok(()) }
//! ```
//!
//! Layering: the core ([`Client`]: era negotiation, the request path with
//! the `_meta` envelope and MCP headers, the MRTR driver, the cache,
//! subscriptions) talks to a transport through one internal trait and
//! knows nothing of sockets or processes. Transports are thin modules
//! behind the additive features `stdio` and `http` (both default), with
//! TLS for `https` URLs behind `rustls` (default). Everything wire-related
//! comes from `ferromcp-protocol`, including the header codec the server
//! validates with.
//!
//! ## Cargo features
//!
//! - `stdio` (default): spawn the server as a child process.
//! - `http` (default): Streamable HTTP (both eras) and the deprecated
//!   HTTP+SSE fallback.
//! - `rustls` (default): `https` URLs through rustls.
//! - `output-validation` (default): check `tools/call` results against the
//!   tool's `outputSchema` with `jsonschema`.
//! - `otel` (off by default): with a `tracing-opentelemetry` layer
//!   installed and no explicit trace context, send the `mcp.client.request`
//!   span's OpenTelemetry context as `_meta.traceparent` / `tracestate`, so
//!   the server's span continues the client's trace. Example:
//!   `cargo run -p ferromcp-examples --features otel --example otel_stdout`.

// With a transport feature off, some of the core's helpers have no caller.
#![cfg_attr(
    not(all(feature = "stdio", feature = "http")),
    allow(dead_code, unused_imports)
)]

mod auth;
mod builder;
mod cache;
mod client;
mod core;
mod error;
mod handlers;
pub mod limits;
mod message;
mod mrtr;
mod negotiate;
mod options;
#[cfg(feature = "otel")]
mod otel;
mod output;
pub mod retry;
pub use ferromcp_protocol::sse;
mod skills;
mod subscription;
mod tasks;
mod trace;
mod transport;

pub use auth::{AuthChallenge, AuthDecision, AuthError, AuthRequest, HttpAuth};
pub use builder::ClientBuilder;
pub use cache::{DEFAULT_MAX_CACHE_ENTRIES, ResponseCache};
pub use client::Client;
pub use core::Notice;
pub use error::{Error, ErrorKind, Result};
pub use handlers::HandlerError;
pub use limits::Limits;
pub use negotiate::EraPreference;
pub use options::RequestOptions;
pub use retry::RetryPolicy;
pub use subscription::{ResilientSubscription, Subscription, SubscriptionEnd, SubscriptionEvent};
pub use tasks::{ToolCallOutcome, task_outcome};
pub use trace::{TraceContext, TraceContextProvider};
pub use transport::TransportKind;
#[cfg(feature = "stdio")]
pub use transport::stdio::{StderrMode, StdioCommand};

pub use ferromcp_protocol as protocol;
pub use ferromcp_protocol::{Era, ProtocolVersion};
