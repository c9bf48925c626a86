//! The client flow's error type.

use std::fmt;

/// Which step of the client flow failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthErrorKind {
    // AUTH-28
    /// A URL was refused by the network policy (scheme, destination
    /// address class), before any connection was made.
    Policy,
    /// The HTTP exchange failed (connect, timeout, size cap, redirect).
    Network,
    // AUTH-05, AUTH-07
    /// Protected-resource or authorization-server metadata could not be
    /// found or was unusable.
    Discovery,
    // AUTH-06
    /// The PRM `resource` does not identify the server.
    ResourceMismatch,
    // AUTH-08
    /// The AS metadata `issuer` differs from the issuer used.
    IssuerMismatch,
    // AUTH-23
    /// The authorization server does not support PKCE `S256`.
    Pkce,
    // AUTH-10…AUTH-15
    /// No client identity could be obtained.
    Registration,
    // AUTH-24, AUTH-26
    /// The authorization step failed: the user agent, a `state` or `iss`
    /// mismatch, or an error response from the AS.
    Authorization,
    /// The token endpoint refused or answered badly; `code` is the OAuth
    /// `error` when the AS sent one.
    Token {
        /// The OAuth error code (`invalid_grant`, …).
        code: Option<String>,
    },
    // AUTH-19
    /// The step-up attempt limit was reached.
    StepUpLimit,
    /// The token store failed.
    Storage,
    /// The client was configured wrongly.
    Config,
}

/// An error of the OAuth client flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    kind: OAuthErrorKind,
    message: String,
}

impl OAuthError {
    /// An error of `kind` described by `message`.
    pub fn new(kind: OAuthErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// What failed.
    pub fn kind(&self) -> &OAuthErrorKind {
        &self.kind
    }

    /// The description.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether a URL was refused by the network policy.
    pub fn is_policy(&self) -> bool {
        self.kind == OAuthErrorKind::Policy
    }

    /// Whether the HTTP exchange failed.
    pub fn is_network(&self) -> bool {
        self.kind == OAuthErrorKind::Network
    }

    /// Whether metadata could not be found or was unusable.
    pub fn is_discovery(&self) -> bool {
        self.kind == OAuthErrorKind::Discovery
    }

    // AUTH-06
    /// Whether the PRM `resource` does not identify the server.
    pub fn is_resource_mismatch(&self) -> bool {
        self.kind == OAuthErrorKind::ResourceMismatch
    }

    // AUTH-08
    /// Whether the AS metadata `issuer` differs from the issuer used.
    pub fn is_issuer_mismatch(&self) -> bool {
        self.kind == OAuthErrorKind::IssuerMismatch
    }

    // AUTH-23
    /// Whether the authorization server lacks PKCE `S256`.
    pub fn is_pkce(&self) -> bool {
        self.kind == OAuthErrorKind::Pkce
    }

    /// Whether no client identity could be obtained.
    pub fn is_registration(&self) -> bool {
        self.kind == OAuthErrorKind::Registration
    }

    /// Whether the authorization step failed.
    pub fn is_authorization(&self) -> bool {
        self.kind == OAuthErrorKind::Authorization
    }

    /// Whether the token endpoint refused or answered badly.
    pub fn is_token(&self) -> bool {
        matches!(self.kind, OAuthErrorKind::Token { .. })
    }

    // AUTH-19
    /// Whether the step-up attempt limit was reached.
    pub fn is_step_up_limit(&self) -> bool {
        self.kind == OAuthErrorKind::StepUpLimit
    }

    /// Whether the token store failed.
    pub fn is_storage(&self) -> bool {
        self.kind == OAuthErrorKind::Storage
    }

    /// Whether the client was configured wrongly.
    pub fn is_config(&self) -> bool {
        self.kind == OAuthErrorKind::Config
    }

    pub(crate) fn policy(m: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::Policy, m)
    }
    pub(crate) fn network(m: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::Network, m)
    }
    pub(crate) fn discovery(m: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::Discovery, m)
    }
    pub(crate) fn authorization(m: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::Authorization, m)
    }
    pub(crate) fn registration(m: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::Registration, m)
    }
    pub(crate) fn storage(m: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::Storage, m)
    }
    pub(crate) fn config(m: impl Into<String>) -> Self {
        Self::new(OAuthErrorKind::Config, m)
    }
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OAuthError {}

impl From<OAuthError> for ferromcp_client::AuthError {
    fn from(e: OAuthError) -> Self {
        ferromcp_client::AuthError::new(e.message.clone()).with_source(e)
    }
}
