//! Bearer protection for an HTTP endpoint the CLI serves: the `--auth-…`
//! flags and the resource-server layer (`ferromcp_auth::resource`) built
//! from them. Tokens are JWTs from one authorization server, checked
//! against its keys, for this endpoint as audience; the Protected Resource
//! Metadata document is served and every refusal is a 401/403 with
//! `WWW-Authenticate`.

use crate::exit::Failure;
use clap::Args;
use ferromcp_auth::resource::{AuthLayer, HyperFetch, JwtVerifier, ResourceUri};
use std::net::SocketAddr;
use std::sync::Arc;

/// The `--auth-…` flags of an HTTP endpoint.
#[derive(Debug, Args, Default)]
pub struct ResourceAuthArgs {
    /// Require a bearer token (a JWT) issued by this authorization server
    /// on every request; its keys come from the server's metadata.
    #[arg(long, value_name = "URL")]
    pub auth_issuer: Option<String>,
    /// The resource URI tokens must be issued for (their audience), as
    /// clients reach this endpoint; default http://HOST:PORT/mcp.
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_resource: Option<String>,
    /// A scope every request's token must carry (repeatable).
    #[arg(long = "auth-scope", value_name = "SCOPE", requires = "auth_issuer")]
    pub auth_scopes: Vec<String>,
    /// Fetch the issuer's keys from this JWKS URL instead of discovering it.
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_jwks_uri: Option<String>,
    /// Allow http:// (not https) for the issuer's metadata and keys; for
    /// development against a local authorization server only.
    #[arg(long, requires = "auth_issuer")]
    pub auth_allow_http: bool,
}

impl ResourceAuthArgs {
    /// Whether bearer protection was asked for.
    pub fn enabled(&self) -> bool {
        self.auth_issuer.is_some()
    }

    /// The layer for an endpoint listening on `local` (`None` without
    /// `--auth-issuer`).
    pub fn layer(&self, local: SocketAddr) -> Result<Option<AuthLayer>, Failure> {
        let Some(issuer) = &self.auth_issuer else {
            return Ok(None);
        };
        let bad = |what: &str, e: &dyn std::fmt::Display| Failure::usage(format!("{what}: {e}"));
        let resource = match &self.auth_resource {
            Some(r) => r.clone(),
            None => format!("http://{local}/mcp"),
        };
        let resource = ResourceUri::parse(&resource).map_err(|e| bad("--auth-resource", &e))?;
        let fetch = HyperFetch::new().allow_plain_http(self.auth_allow_http);
        fetch
            .check_url(issuer)
            .map_err(|e| bad("--auth-issuer", &e))?;
        let mut verifier = JwtVerifier::builder(issuer.clone(), &resource).fetcher(Arc::new(fetch));
        if let Some(j) = &self.auth_jwks_uri {
            verifier = verifier.jwks_uri(j.clone());
        }
        let verifier = verifier.build().map_err(|e| bad("--auth-issuer", &e))?;
        let mut layer = AuthLayer::builder(resource, verifier).authorization_server(issuer.clone());
        if !self.auth_scopes.is_empty() {
            layer = layer
                .require_scopes(self.auth_scopes.iter().cloned())
                .scopes_supported(self.auth_scopes.iter().cloned());
        }
        layer
            .build()
            .map(Some)
            .map_err(|e| bad("--auth-issuer", &e))
    }
}
