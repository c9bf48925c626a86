//! The grant extension point: how a token is obtained once the
//! authorization server, resource, scopes and client identity are known.
//!
//! Without a [`Grant`], [`super::OAuthClient`] runs the authorization-code
//! flow with PKCE through its [`super::AuthorizationHandler`]. A [`Grant`]
//! replaces that step (client credentials, RFC 7523 JWT bearer, RFC 8693
//! token exchange, …); discovery, registration, refresh, step-up and
//! storage stay the same.

use super::BoxFuture;
use super::client_auth::{ClientAuthentication, TokenEndpointContext};
use super::error::OAuthError;
use super::http::HttpClient;
use super::metadata::AuthServerMetadata;
use super::proof::RequestProof;
use super::token::TokenResponse;

/// Everything a grant needs.
pub struct GrantContext<'a> {
    /// The SSRF-guarded HTTP client.
    pub http: &'a HttpClient,
    /// The validated AS metadata.
    pub metadata: &'a AuthServerMetadata,
    /// Where token requests go.
    pub token_endpoint: TokenEndpointContext,
    // AUTH-22, LEGACY-26, LEGACY-28
    /// The `resource` to send (PRM `resource`, exactly as published).
    /// For a 2025-03-26 server without PRM it is the MCP
    /// server URL; the authorization-code flow then sends no `resource`,
    /// a grant decides for itself (the built-in ones, later
    /// extensions, always send it).
    pub resource: &'a str,
    // AUTH-22, LEGACY-28
    /// The RFC 8707 `resource` the authorization-code flow would send:
    /// the PRM `resource`, `None` for a 2025-03-26 server without PRM.
    pub resource_indicator: Option<&'a str>,
    /// The scopes to request (`None`: leave `scope` out).
    pub scopes: Option<&'a [String]>,
    /// The client's authentication at the token endpoint.
    pub client: &'a dyn ClientAuthentication,
    /// The proof provider, when one is installed.
    pub proof: Option<&'a dyn RequestProof>,
}

/// Obtains a token without the authorization-code flow.
pub trait Grant: Send + Sync + 'static {
    /// The client identity this grant brings with it (a workload's or a
    /// service's configured credentials). When `Some`, the client flow
    /// uses it instead of pre-registration, CIMD or dynamic registration.
    /// Default: `None`.
    fn client(&self) -> Option<std::sync::Arc<dyn ClientAuthentication>> {
        None
    }

    /// Runs the grant.
    fn obtain<'a>(
        &'a self,
        ctx: GrantContext<'a>,
    ) -> BoxFuture<'a, Result<TokenResponse, OAuthError>>;
}
