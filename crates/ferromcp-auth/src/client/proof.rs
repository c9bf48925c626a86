//! Per-request proof-of-possession headers: the extension point for DPoP
//! (RFC 9449) and similar sender-constraining schemes.

use super::error::OAuthError;

/// Adds a proof to every request made with (or for) a token.
///
/// Installed with [`super::OAuthClientBuilder::proof`]. The client calls
/// [`RequestProof::proof_headers`] for each MCP request (with the access
/// token, so a DPoP proof can carry `ath`) and for each token request
/// (without one), and shows it every response's headers so it can track
/// server-provided nonces.
pub trait RequestProof: Send + Sync + 'static {
    /// The token type to present (`DPoP`); the `Authorization` scheme.
    fn token_type(&self) -> &str;

    /// Headers proving possession for a request of `method` to `url`.
    fn proof_headers(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<Vec<(String, String)>, OAuthError>;

    // Foreign type: the OAuth HTTP plumbing speaks `http` types, like the rest of the HTTP stack
    // (hyper, the MCP client transport).
    /// Sees the status and headers of an answer from `url` (e.g. to store a
    /// `DPoP-Nonce`). Default: nothing.
    fn observe(&self, _url: &str, _status: u16, _headers: &http::HeaderMap) {}

    /// Whether a refused request should be sent once more with a new proof
    /// (e.g. `use_dpop_nonce`). `error` is the OAuth error code, if any.
    /// Default: never.
    fn wants_retry(&self, _status: u16, _error: Option<&str>) -> bool {
        false
    }
}
