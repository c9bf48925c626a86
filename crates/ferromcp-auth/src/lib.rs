//! # ferromcp-auth
//!
//! OAuth 2.1 authorization for the Model Context Protocol's HTTP transport
//! (the MCP specification's *Authorization* section, basic protocol).
//!
//! - [`challenge`]: the `WWW-Authenticate: Bearer …` challenge, formatted by
//!   resource servers and parsed by clients (RFC 6750 §3, RFC 9728 §5.1).
//! - [`resource`] (feature `resource`, on by default): the resource-server
//!   half. Serves the Protected Resource Metadata document (RFC 9728),
//!   guards the MCP endpoint with bearer tokens as a tower `Layer`, verifies
//!   tokens as JWTs against the authorization server's JWKS or by RFC 7662
//!   introspection, and enforces per-endpoint, per-method and per-tool
//!   scopes. See the module docs for how to wrap an `McpService`.
//!
//! - [`client`] (feature `client`): the OAuth 2.1 client flow behind
//!   `ferromcp-client`'s `HttpAuth` hook: discovery, registration, PKCE
//!   authorization code, refresh, step-up, token stores, SSRF guards.
//!
//! Feature `rustls` adds HTTPS to the built-in fetcher used for JWKS,
//! authorization-server metadata and introspection; without it, supply your
//! own [`resource::HttpFetch`] (or use plain HTTP on a trusted network,
//! which must be enabled explicitly).
// AUTH-28

pub mod challenge;
#[cfg(feature = "client")]
pub mod client;
// One OAuth core for both halves (issue 15): the PRM document, discovery
// URLs, the bounded fetcher, base64. Public items are re-exported from
// `resource::` and `client::`.
#[cfg(any(feature = "client", feature = "resource"))]
mod core;
#[cfg(feature = "resource")]
pub mod resource;

pub use challenge::BearerChallenge;
