//! The HTTP authorization hook: how credentials reach the wire without the
//! client knowing anything about OAuth.
//!
//! An [`HttpAuth`] implementation (for instance `ferromcp_auth::client::OAuthClient`)
//! is installed with [`crate::ClientBuilder::http_auth`]. The HTTP transports
//! then, for every HTTP request they send (request POSTs, the initialize
//! handshake, the `server/discover` probe, GET streams and their
//! resumptions, DELETE, the HTTP+SSE stream and its POSTs):
//!
//! 1. ask [`HttpAuth::headers`] for the headers to add, given the request's
//!    method and URL (`Authorization: Bearer …`, and any per-request
//!    proof such as `DPoP`);
//! 2. on a `401` or `403` answer, hand the `WWW-Authenticate` values and the
//!    other response headers to [`HttpAuth::on_challenge`], which answers
//!    [`AuthDecision::Retry`] (new credentials are ready: send again),
//!    [`AuthDecision::Proceed`] (not an authorization problem: report the
//!    answer as usual) or [`AuthDecision::Fail`] (the caller sees an
//!    [`crate::Error`] for which [`crate::Error::is_auth`] holds).
//!
//! Retries of one HTTP request are bounded by
//! [`crate::Limits::max_auth_retries`]. Private cache entries
//! are partitioned by [`HttpAuth::cache_partition`], so a change of
//! credentials (another issuer, client or subject) never reuses entries
//! cached under the old ones.
// AUTH-20, CACHE-08

use futures_util::future::BoxFuture;
use std::fmt;
use std::sync::Arc;

/// One HTTP request about to be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRequest {
    /// The HTTP method (`POST`, `GET`, `DELETE`).
    pub method: String,
    /// The absolute request URL.
    pub url: String,
}

/// A `401` or `403` answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    /// The request that was refused.
    pub request: AuthRequest,
    /// The HTTP status (401 or 403).
    pub status: u16,
    /// Every `WWW-Authenticate` header value, in order.
    pub www_authenticate: Vec<String>,
    /// All response headers (lower-case names), e.g. for `DPoP-Nonce`.
    pub headers: Vec<(String, String)>,
    /// The headers [`HttpAuth::headers`] supplied for the refused attempt,
    /// so an implementation can tell whether its credentials changed since
    /// (a concurrent request may already have renewed them).
    pub sent: Vec<(String, String)>,
}

/// What the transport should do after a challenge.
#[derive(Debug, Clone)]
pub enum AuthDecision {
    /// New credentials are in place: send the request again.
    Retry,
    /// Not an authorization matter: handle the answer as any other non-2xx.
    Proceed,
    /// Give up; the request fails with this error.
    Fail(AuthError),
}

/// Why the authorization hook could not supply or renew credentials.
#[derive(Clone)]
pub struct AuthError {
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl AuthError {
    /// An error described by `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// The description.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Debug for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthError")
            .field("message", &self.message)
            .field("source", &self.source.as_ref().map(|s| s.to_string()))
            .finish()
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        // A source that says the same (a wrapped error whose message was
        // copied) is not repeated.
        if let Some(s) = &self.source {
            let s = s.to_string();
            if s != self.message {
                write!(f, ": {s}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for AuthError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|s| s.as_ref() as &(dyn std::error::Error + 'static))
    }
}

/// Supplies credentials for HTTP requests and reacts to challenges.
///
/// Object safe: the transports hold an `Arc<dyn HttpAuth>`. Implementations
/// must be cheap in [`HttpAuth::headers`] when they already hold a valid
/// token, since it runs for every HTTP request.
pub trait HttpAuth: Send + Sync + 'static {
    // AUTH-20
    /// Headers to add to `request` (`Authorization`; also any
    /// proof header such as `DPoP`). An empty list sends the request
    /// unauthenticated (the server's 401 then starts the flow). An error
    /// fails the request with [`crate::Error::is_auth`].
    fn headers(
        &self,
        request: AuthRequest,
    ) -> BoxFuture<'_, Result<Vec<(String, String)>, AuthError>>;

    // Foreign type: an alias of `Pin<Box<dyn Future + Send>>`; nothing beyond std is exposed.
    /// The server refused `challenge.request` with 401 or 403.
    fn on_challenge(&self, challenge: AuthChallenge) -> BoxFuture<'_, AuthDecision>;

    /// A 2xx answer arrived for `request` with these headers (lower-case
    /// names); e.g. to pick up a fresh `DPoP-Nonce`. Default: nothing.
    fn on_success(&self, _request: &AuthRequest, _headers: &[(String, String)]) {}

    // CACHE-08
    /// The partition for `"private"` cache entries, derived from
    /// the current credentials (e.g. issuer + client + subject); `None`
    /// while there are none.
    fn cache_partition(&self) -> Option<String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_repeating_the_message_is_shown_once() {
        let inner = std::io::Error::other("not logged in");
        let e = AuthError::new("not logged in").with_source(inner);
        assert_eq!(e.to_string(), "not logged in");
        let e = AuthError::new("refused").with_source(std::io::Error::other("invalid_grant"));
        assert_eq!(e.to_string(), "refused: invalid_grant");
    }
}
