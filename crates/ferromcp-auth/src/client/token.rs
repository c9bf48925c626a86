//! Token requests (OAuth 2.1 §3.2) and the tokens the client keeps.

use super::client_auth::{ClientAuthentication, TokenEndpointContext};
use super::error::{OAuthError, OAuthErrorKind};
use super::http::HttpClient;
use super::proof::RequestProof;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A successful token response (RFC 6749 §5.1).
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct TokenResponse {
    /// The access token.
    pub access_token: String,
    /// `Bearer` or `DPoP`.
    #[serde(default)]
    pub token_type: String,
    /// Lifetime in seconds.
    #[serde(default)]
    pub expires_in: Option<u64>,
    // AUTH-27
    /// A refresh token, when issued (never assumed).
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// The granted scopes, when they differ from the requested ones.
    #[serde(default)]
    pub scope: Option<String>,
}

impl std::fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenResponse")
            .field("token_type", &self.token_type)
            .field("expires_in", &self.expires_in)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// A token as the client stores it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredToken {
    /// The access token.
    pub access_token: String,
    /// `Bearer` or `DPoP`.
    pub token_type: String,
    // AUTH-27
    /// The refresh token (kept confidential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes requested (or granted, when the AS said).
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("token_type", &self.token_type)
            .field("has_refresh_token", &self.refresh_token.is_some())
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl StoredToken {
    /// Builds the stored form of `resp`. A response without a refresh
    /// token keeps `previous_refresh` (RFC 6749 §6); the scopes are the
    /// granted ones when given, else `requested`.
    pub fn from_response(
        resp: TokenResponse,
        previous_refresh: Option<String>,
        requested: &[String],
    ) -> Self {
        Self {
            access_token: resp.access_token,
            token_type: if resp.token_type.is_empty() {
                "Bearer".into()
            } else {
                resp.token_type
            },
            refresh_token: resp.refresh_token.or(previous_refresh),
            expires_at: resp
                .expires_in
                .map(|s| now_secs().saturating_add(s.min(u64::from(u32::MAX)))),
            scopes: match resp.scope {
                Some(s) => s.split_whitespace().map(str::to_owned).collect(),
                None => requested.to_vec(),
            },
        }
    }

    /// Whether the token expires within `skew` from now.
    pub fn expires_within(&self, skew: Duration) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now_secs().saturating_add(skew.as_secs()))
    }
}

/// An OAuth error response (RFC 6749 §5.2).
#[derive(Debug, Deserialize)]
struct ErrorResponse {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

// AUTH-22
/// Sends one token request: `params` (grant type and its parameters,
/// including `resource`) plus the client's authentication and,
/// when given, a proof header for the token endpoint (`DPoP`).
pub async fn token_request(
    http: &HttpClient,
    ctx: &TokenEndpointContext,
    mut params: Vec<(String, String)>,
    client: &dyn ClientAuthentication,
    proof: Option<&dyn RequestProof>,
) -> Result<TokenResponse, OAuthError> {
    let mut headers = Vec::new();
    client.apply(ctx, &mut params, &mut headers)?;
    // One retry when the AS asks for a fresh proof nonce (RFC 9449 §8).
    let mut attempts = 0;
    loop {
        let mut h = headers.clone();
        if let Some(p) = proof {
            h.extend(p.proof_headers("POST", &ctx.token_endpoint, None)?);
        }
        let resp = http.post_form(&ctx.token_endpoint, &params, &h).await?;
        if let Some(p) = proof {
            p.observe(&ctx.token_endpoint, resp.status.as_u16(), &resp.headers);
        }
        if resp.status.is_success() {
            let t: TokenResponse = serde_json::from_slice(&resp.body).map_err(|e| {
                OAuthError::new(
                    OAuthErrorKind::Token { code: None },
                    format!("malformed token response: {e}"),
                )
            })?;
            if t.access_token.is_empty() {
                return Err(OAuthError::new(
                    OAuthErrorKind::Token { code: None },
                    "the token response has an empty access_token",
                ));
            }
            return Ok(t);
        }
        let err: Option<ErrorResponse> = serde_json::from_slice(&resp.body).ok();
        let code = err.as_ref().map(|e| e.error.clone());
        if attempts == 0
            && proof.is_some_and(|p| p.wants_retry(resp.status.as_u16(), code.as_deref()))
        {
            attempts += 1;
            continue;
        }
        let desc = err
            .as_ref()
            .and_then(|e| e.error_description.clone())
            .unwrap_or_default();
        return Err(OAuthError::new(
            OAuthErrorKind::Token { code: code.clone() },
            format!(
                "token endpoint {} answered {}: {} {desc}",
                ctx.token_endpoint,
                resp.status,
                code.unwrap_or_default()
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_keeps_the_old_refresh_token_when_omitted() {
        let resp = TokenResponse {
            access_token: "a2".into(),
            token_type: "bearer".into(),
            expires_in: Some(60),
            refresh_token: None,
            scope: None,
        };
        let t = StoredToken::from_response(resp, Some("r1".into()), &["s".into()]);
        assert_eq!(t.refresh_token.as_deref(), Some("r1"));
        assert_eq!(t.scopes, vec!["s".to_owned()]);
        assert!(!t.expires_within(Duration::from_secs(10)));
        assert!(t.expires_within(Duration::from_secs(120)));
        let resp = TokenResponse {
            access_token: "a3".into(),
            token_type: String::new(),
            expires_in: None,
            refresh_token: Some("r2".into()),
            scope: Some("x y".into()),
        };
        let t = StoredToken::from_response(resp, Some("r1".into()), &[]);
        assert_eq!(t.refresh_token.as_deref(), Some("r2"));
        assert_eq!(t.token_type, "Bearer");
        assert_eq!(t.scopes, vec!["x".to_owned(), "y".to_owned()]);
        assert!(!t.expires_within(Duration::from_secs(1_000_000)));
        assert!(!format!("{t:?}").contains("a3"));
    }
}
