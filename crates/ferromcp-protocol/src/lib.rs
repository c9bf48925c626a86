//! # ferromcp-protocol
//!
//! The pure layer of the Model Context Protocol stack: wire types, JSON-RPC
//! framing, error codes, the per-request `_meta` envelope, the shared HTTP
//! header codec, `x-mcp-header` rules and the inbound validation ladder.
//!
//! Also the pure parsers both ends share with the fuzzers: the stdio line
//! framer ([`framing`]), the incremental SSE parser ([`sse`]) and the RFC
//! 6570 URI-template engine ([`uri_template`]), and the one `host[:port]`
//! parser ([`authority`]) behind every Host/Origin and loopback check.
//!
//! This crate performs no I/O and depends on no async runtime; the server,
//! client and transports build on it so that both ends agree by construction.
//!
//! Revisions covered: `2026-07-28` (modern, stateless) and the handshake
//! revisions `2025-11-25`, `2025-06-18`, `2025-03-26`.

pub mod authority;
pub mod base64;
pub mod envelope;
pub mod era;
pub mod error;
pub mod framing;
pub mod header;
pub mod jsonrpc;
pub mod ladder;
pub mod meta;
pub mod method;
pub mod percent;
mod principal;
mod probe;
pub mod sse;
pub mod trace_context;
pub mod types;
pub mod uri_template;
pub mod version;

pub use error::{ErrorCode, ErrorObject};
pub use jsonrpc::{Message, Notification, Request, RequestId, Response};
pub use meta::RequestMeta;
pub use principal::Principal;
pub use version::{Era, ProtocolVersion};
