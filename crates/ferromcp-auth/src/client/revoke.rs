//! Token revocation (RFC 7009), for logging out: [`revoke_token`] sends
//! one revocation request; [`revoke_stored`] finds the stored credentials
//! of an MCP server (the same discovery as the flow: RFC 9728 then RFC
//! 8414) and revokes its refresh token, then its access token.
//!
//! Revocation is best effort by design: the caller deletes the local copy
//! whatever the authorization server says, so [`revoke_stored`] reports
//! each failed revocation as a warning rather than an error.

use super::client_auth::{ClientAuthentication, TokenEndpointContext};
use super::error::{OAuthError, OAuthErrorKind};
use super::http::HttpClient;
use super::metadata::AuthServerMetadata;
use super::oauth::{discover_as, discover_resource};
use super::registration::registered_authentication;
use super::store::{StoreKey, TokenStore};

/// The `token_type_hint` of a revocation request (RFC 7009 §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenTypeHint {
    /// `refresh_token`.
    RefreshToken,
    /// `access_token`.
    AccessToken,
}

impl TokenTypeHint {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RefreshToken => "refresh_token",
            Self::AccessToken => "access_token",
        }
    }
}

/// The AS's `revocation_endpoint` (RFC 8414 §2, RFC 7009), if it has one.
pub fn revocation_endpoint(meta: &AuthServerMetadata) -> Option<&str> {
    meta.extra
        .get("revocation_endpoint")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Revokes `token` at `endpoint` (RFC 7009 §2.1), authenticating as
/// `client` the way it authenticates at the token endpoint (`ctx` names
/// the issuer and the endpoint, for assertion-based methods). A 200 answer
/// is success, including for tokens the AS did not know (§2.2); anything
/// else is an error carrying the AS's `error` code when it sent one.
pub async fn revoke_token(
    http: &HttpClient,
    ctx: &TokenEndpointContext,
    token: &str,
    hint: TokenTypeHint,
    client: &dyn ClientAuthentication,
) -> Result<(), OAuthError> {
    let mut params = vec![
        ("token".to_owned(), token.to_owned()),
        ("token_type_hint".to_owned(), hint.as_str().to_owned()),
    ];
    let mut headers = Vec::new();
    client.apply(ctx, &mut params, &mut headers)?;
    let resp = http
        .post_form(&ctx.token_endpoint, &params, &headers)
        .await?;
    if resp.status.is_success() {
        return Ok(());
    }
    let code = serde_json::from_slice::<serde_json::Value>(&resp.body)
        .ok()
        .and_then(|v| v.get("error")?.as_str().map(str::to_owned));
    Err(OAuthError::new(
        OAuthErrorKind::Token { code: code.clone() },
        format!(
            "revocation endpoint {} answered {}{}",
            ctx.token_endpoint,
            resp.status,
            code.map(|c| format!(": {c}")).unwrap_or_default()
        ),
    ))
}

/// What [`revoke_stored`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevocationReport {
    /// The store entry of the server's issuer and resource (delete it next).
    pub key: StoreKey,
    /// Whether a token was stored under it.
    pub had_token: bool,
    /// The tokens the AS confirmed revoked, in order (`refresh_token`,
    /// `access_token`).
    pub revoked: Vec<TokenTypeHint>,
    /// Why something could not be revoked (no endpoint, no client identity,
    /// an error answer); empty when everything stored was revoked.
    pub warnings: Vec<String>,
}

// LEGACY-26
/// Finds the credentials stored for the MCP endpoint `server_url` (its PRM
/// `resource` and first authorization server, as
/// [`super::OAuthClient`] keys them; for a 2025-03-26 server without PRM,
/// the server URL and its authorization base URL) and revokes the refresh token, then
/// the access token, at the AS's `revocation_endpoint`, authenticating
/// with the stored registration. Nothing is deleted: the caller removes
/// [`RevocationReport::key`] from the store afterwards.
///
/// Errors only when the key cannot be determined (discovery failed) or
/// the store cannot be read; a missing endpoint, a missing registration or
/// a refused revocation become [`RevocationReport::warnings`].
pub async fn revoke_stored(
    http: &HttpClient,
    server_url: &str,
    store: &dyn TokenStore,
) -> Result<RevocationReport, OAuthError> {
    // The server's version is not known here (LEGACY-26 may apply).
    let found = discover_resource(http, server_url, None, None).await?;
    let issuer = found.issuer.clone();
    let key = StoreKey {
        issuer: issuer.clone(),
        resource: found.resource.clone(),
    };
    let stored = store.load(&key)?.unwrap_or_default();
    let mut report = RevocationReport {
        key,
        had_token: stored.token.is_some(),
        revoked: Vec::new(),
        warnings: Vec::new(),
    };
    let Some(token) = stored.token else {
        return Ok(report);
    };
    let meta = match discover_as(http, &found, None).await {
        Ok(m) => m.meta,
        Err(e) => {
            report
                .warnings
                .push(format!("tokens not revoked: {issuer}: {e}"));
            return Ok(report);
        }
    };
    let Some(endpoint) = revocation_endpoint(&meta) else {
        report.warnings.push(format!(
            "tokens not revoked: {issuer} publishes no revocation_endpoint"
        ));
        return Ok(report);
    };
    if let Err(e) = http.policy().check_url(endpoint) {
        report
            .warnings
            .push(format!("tokens not revoked: {endpoint}: {e}"));
        return Ok(report);
    }
    let Some(client) = stored.client.as_ref().map(registered_authentication) else {
        report.warnings.push(format!(
            "tokens not revoked: no stored client registration for {issuer}"
        ));
        return Ok(report);
    };
    let ctx = TokenEndpointContext {
        issuer,
        token_endpoint: endpoint.to_owned(),
    };
    // RFC 7009 §2.1: revoking the refresh token first; an AS may revoke
    // the access tokens of the grant with it, the second request makes
    // sure of it.
    let tokens = [
        (TokenTypeHint::RefreshToken, token.refresh_token.as_deref()),
        (
            TokenTypeHint::AccessToken,
            Some(token.access_token.as_str()),
        ),
    ];
    for (hint, value) in tokens {
        let Some(value) = value else { continue };
        match revoke_token(http, &ctx, value, hint, client.as_ref()).await {
            Ok(()) => report.revoked.push(hint),
            Err(e) => report
                .warnings
                .push(format!("{} not revoked: {e}", hint.as_str())),
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_comes_from_the_metadata_extras() {
        let mut meta: AuthServerMetadata =
            serde_json::from_value(serde_json::json!({"issuer": "https://as.example"}))
                .unwrap_or_else(|_| unreachable!());
        assert_eq!(revocation_endpoint(&meta), None);
        meta.extra.insert("revocation_endpoint".into(), "".into());
        assert_eq!(revocation_endpoint(&meta), None);
        meta.extra.insert(
            "revocation_endpoint".into(),
            "https://as.example/revoke".into(),
        );
        assert_eq!(
            revocation_endpoint(&meta),
            Some("https://as.example/revoke")
        );
        assert_eq!(TokenTypeHint::RefreshToken.as_str(), "refresh_token");
        assert_eq!(TokenTypeHint::AccessToken.as_str(), "access_token");
    }
}
