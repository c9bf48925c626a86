//! The resource-server half of MCP authorization (MCP specification,
//! *Authorization*).
//!
//! An MCP server behind [`AuthLayer`]:
//!
//! - serves its Protected Resource Metadata (RFC 9728) at
//!   `/.well-known/oauth-protected-resource` and at the path-inserted form
//!   `/.well-known/oauth-protected-resource/<mcp path>`;
//! - answers requests without a valid bearer token with 401 and
//!   `WWW-Authenticate: Bearer resource_metadata="…", scope="…"`
//!   (`error="invalid_token"` when a token was presented),
//!   and requests lacking scopes with 403
//!   `error="insufficient_scope"` naming every scope the operation needs
//!   (the endpoint's scopes are checked by the [`AuthLayer`] before the
//!   body is read; per-method and per-tool scopes by its [`ScopeLayer`],
//!   RPC middleware installed on the server, which sees each request
//!   after the server read and admitted it: the bearer layer never reads
//!   the body);
//! - hands handlers the caller as `ctx.principal()` (a
//!   [`ferromcp_protocol::Principal`], re-exported as `ferromcp_server::Principal`,
//!   with the token's subject, scopes and client id), never the token
//!   itself. The server binds MRTR
//!   `requestState` and handshake-era sessions to `principal.subject`.
//!
//! Tokens are checked by a [`TokenVerifier`]: [`JwtVerifier`] (signed JWTs,
//! keys from the issuer's JWKS) or [`IntrospectionVerifier`] (RFC 7662), or
//! your own.
//!
//! ```no_run
//! use ferromcp_auth::resource::{AuthLayer, HyperFetch, JwtVerifier, ResourceUri};
//! use ferromcp_server::transport::http::{HttpConfig, McpService, serve_layered};
//! use ferromcp_server::{RequestContext, Server, tool, NoArgs};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // The URI clients connect to: the audience every token must carry.
//! let resource = ResourceUri::parse("https://mcp.example.com/mcp")?;
//! let issuer = "https://auth.example.com";
//! // Keys come from the issuer's metadata (`jwks_uri`); HTTPS needs the
//! // `rustls` feature or your own `HttpFetch`.
//! let verifier = JwtVerifier::builder(issuer, &resource).build()?;
//! let auth = AuthLayer::builder(resource, verifier)
//!     .authorization_server(issuer)
//!     .require_scopes(["mcp"])
//!     .require_tool_scopes("deploy", ["mcp:deploy"])
//!     .build()?;
//!
//! let server = Server::builder("secure", "1.0.0")
//!     .tool(tool("whoami").description("Who is calling").handler(
//!         |_: NoArgs, cx: RequestContext| async move {
//!             cx.principal().map(|p| p.subject.clone()).unwrap_or_default()
//!         },
//!     ))
//!     // The per-tool (and per-method) scopes are checked here, on the
//!     // server's middleware seam, once the server has read the request.
//!     .layer(auth.scope_layer())
//!     .build()?;
//!
//! let mcp = McpService::new(server, HttpConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! // Equivalent to serving `tower::Layer::layer(&auth, mcp)`, plus the
//! // MCP service's session sweeping and graceful shutdown.
//! serve_layered(mcp, auth, listener, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! To mount in axum instead, wrap the service yourself:
//! `Router::new().route_service("/mcp", auth.layer(mcp))` and route the
//! two well-known paths to the same layered service (or turn
//! [`AuthLayerBuilder::serve_metadata`] off and serve
//! [`AuthLayer::metadata_response`] from your own route).
// AUTH-03, AUTH-04, AUTH-16, AUTH-21, LEGACY-27, AUTH-18, STATE-06, MRTR-09

mod dpop;
mod fetch;
mod introspection;
mod jwt;
mod layer;
mod metadata;
mod scopes;
mod verifier;

pub use dpop::{
    DEFAULT_MAX_PROOF_AGE, DEFAULT_MAX_PROOF_BYTES, DEFAULT_MAX_REPLAY_ENTRIES,
    DEFAULT_PROOF_CLOCK_SKEW, DpopPolicy,
};
pub use fetch::{FetchError, HttpFetch, HyperFetch};
pub use introspection::{IntrospectionVerifier, IntrospectionVerifierBuilder};
pub use jsonwebtoken::Algorithm;
pub use jwt::{JwtVerifier, JwtVerifierBuilder};
pub use layer::{AuthLayer, AuthLayerBuilder, GuardBody, RequireBearer};
pub use metadata::{PRM_WELL_KNOWN, ProtectedResourceMetadata, ResourceUri};
pub use scopes::ScopeLayer;
pub use verifier::{BoxFuture, TokenVerifier, VerifiedToken, VerifyError};

/// A configuration mistake, reported when a builder's `build` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(String);

impl ConfigError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// A JSON object, or `None`.
pub(crate) fn as_metadata(body: &[u8]) -> Option<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_slice(body).ok()? {
        serde_json::Value::Object(m) => Some(m),
        _ => None,
    }
}
