//! The OAuth 2.1 client flow (the MCP specification's *Authorization* section, client side),
//! plugged into `ferromcp-client` through its [`ferromcp_client::HttpAuth`] hook.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use ferromcp_auth::client::{FileStore, LoopbackAuthorization, OAuthClient};
//! use std::sync::Arc;
//! let url = "https://mcp.example.com/mcp";
//! let oauth = OAuthClient::builder(url)
//!     .authorization_handler(Arc::new(LoopbackAuthorization::new(Arc::new(|u: &str| {
//!         eprintln!("open {u}");
//!         Ok(())
//!     }))))
//!     .store(Arc::new(FileStore::new("/home/me/.config/mcp/tokens")))
//!     .build()?;
//! let client = ferromcp_client::ClientBuilder::new("app", "1.0")
//!     .http_auth(Arc::new(oauth))
//!     .connect_url(url)
//!     .await?;
//! # let _ = client; Ok(()) }
//! ```
//!
//! The flow, in [`OAuthClient`]: on a 401, RFC 9728 discovery
//! ([`metadata`]: `resource_metadata` from the challenge, else the
//! path-inserted then root well-known URL; the PRM `resource` must identify
//! the server), AS metadata (RFC 8414 / OIDC with path insertion, exact
//! `issuer`; for a 2025-03-26 server without PRM: RFC 8414
//! metadata at the server's origin, else the default `/authorize`,
//! `/token`, `/register` there, see
//! [`OAuthClientBuilder::protocol_version`]), client identity ([`registration`]: pre-registered → CIMD →
//! stored/dynamic registration), the authorization-code grant with PKCE
//! `S256` ([`pkce`]) through an [`AuthorizationHandler`] ([`authorize`]:
//! headless or loopback + browser), `state` and RFC 9207 `iss` checks, the
//! token request with `resource` ([`token`]), then refresh, step-up on
//! `insufficient_scope` ([`scope`]) and AS migration. Everything fetched
//! goes through [`http::HttpClient`] under a [`net::NetPolicy`] (SSRF
//! guards, https, no redirects, size and time caps). Credentials persist in
//! a [`store::TokenStore`] keyed by issuer and resource.
//!
//! # Extension points
//!
//! - **Grant types** ([`grant::Grant`], installed with
//!   [`OAuthClientBuilder::grant`]): replaces the authorization-code step
//!   (client credentials, RFC 7523 JWT bearer, RFC 8693 token exchange).
//!   It gets the validated metadata, the `resource`, the scopes, the
//!   client's authentication and the proof provider, and returns a
//!   [`token::TokenResponse`]; [`token::token_request`] sends the request.
//! - **Client authentication methods** ([`client_auth::ClientAuthentication`],
//!   installed per issuer with [`OAuthClientBuilder::pre_registered`] and
//!   [`registration::PreRegistered::Custom`]): adds form parameters or
//!   headers to every token request (`private_key_jwt` signs an assertion
//!   for the [`client_auth::TokenEndpointContext`]). Built in:
//!   `client_secret_basic`, `client_secret_post`, `none`.
//! - **Per-request proof headers** ([`proof::RequestProof`], installed with
//!   [`OAuthClientBuilder::proof`]): called for every MCP request (method,
//!   URL, access token) and every token request, sees every answer's
//!   headers (nonces) and may ask for one retry (`use_dpop_nonce`); the
//!   `Authorization` scheme follows the token's `token_type` (`DPoP`).
//!
//! # Built-in extensions
//!
//! - [`dpop::DpopProver`] (a [`proof::RequestProof`]): RFC 9449 proofs
//!   with an ES256 key ([`es256::Es256Key`]), per-origin nonces, one retry
//!   on `use_dpop_nonce`.
//! - [`assertion::PrivateKeyJwt`] (a [`client_auth::ClientAuthentication`]):
//!   `private_key_jwt` (RFC 7523 §2.2).
//! - [`grants`]: [`grants::ClientCredentialsGrant`] (SEP-1046),
//!   [`grants::JwtBearerGrant`] (workload identity federation, SEP-1933)
//!   and [`grants::EnterpriseManagedGrant`] (RFC 8693 ID-JAG exchange then
//!   RFC 7523, SEP-990); [`device::DeviceGrant`] (RFC 8628 device
//!   authorization, for hosts without a browser).
// AUTH-05…AUTH-28, LEGACY-26

pub mod assertion;
pub mod authorize;
pub mod client_auth;
pub mod device;
pub mod dpop;
mod error;
pub mod es256;
pub mod form;
pub mod grant;
pub mod grants;
pub mod http;
pub mod metadata;
pub mod net;
mod oauth;
pub mod pkce;
pub mod proof;
pub mod registration;
pub mod revoke;
pub mod scope;
pub mod store;
pub mod token;

pub use assertion::PrivateKeyJwt;
pub use authorize::{
    AuthorizationHandler, AuthorizationSession, BrowserOpener, CallbackParams,
    HeadlessAuthorization, LoopbackAuthorization,
};
pub use client_auth::{ClientAuthentication, ClientSecret, TokenEndpointContext};
pub use device::{DeviceCodePrompt, DeviceGrant, DevicePrompt};
pub use dpop::DpopProver;
pub use error::{OAuthError, OAuthErrorKind};
pub use es256::Es256Key;
pub use grant::{Grant, GrantContext};
pub use grants::{
    ClientCredentialsGrant, EnterpriseManagedGrant, IdentityProvider, JwtBearerGrant,
};
pub use http::{HttpClient, HttpResponse};
pub use metadata::{AuthServerMetadata, ProtectedResourceMetadata, ResourceMetadata};
pub use net::NetPolicy;
pub use oauth::{
    DEFAULT_AUTHORIZATION_LOCK_WAIT, DEFAULT_CLIENT_NAME, DEFAULT_MAX_STEP_UPS,
    DEFAULT_REFRESH_LOCK_WAIT, DEFAULT_REFRESH_SKEW, OAuthClient, OAuthClientBuilder,
};
pub use proof::RequestProof;
pub use registration::PreRegistered;
pub use revoke::{RevocationReport, TokenTypeHint, revoke_stored, revoke_token};
pub use store::{
    FileStore, LockAttempt, MemoryStore, StoreKey, StoreLock, StoredCredentials, TokenStore,
};
pub use token::{StoredToken, TokenResponse};

pub use crate::core::BoxFuture;
