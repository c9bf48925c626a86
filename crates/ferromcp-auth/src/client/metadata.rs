//! Discovery documents as the client reads them: Protected Resource
//! Metadata (RFC 9728) and authorization-server metadata (RFC 8414 /
//! OpenID Connect Discovery), the well-known URLs to try, and the checks
//! on what comes back.
// AUTH-05…AUTH-08
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use super::error::{OAuthError, OAuthErrorKind};
use crate::core::discovery::{self, AS_WELL_KNOWN, prm_url};
use serde::{Deserialize, Serialize};

pub use crate::core::metadata::ProtectedResourceMetadata;

/// A Protected Resource Metadata document (RFC 9728 §2), as fetched: the
/// document type the resource half serves, under the client's name.
pub type ResourceMetadata = ProtectedResourceMetadata;

/// Authorization-server metadata (RFC 8414 §2; the OpenID Connect
/// Discovery document shares these members).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthServerMetadata {
    // AUTH-08
    /// The issuer identifier; must equal the issuer used.
    pub issuer: String,
    /// The authorization endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// The token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// The dynamic client registration endpoint (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Scopes the AS supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// Grant types the AS supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    // AUTH-23
    /// PKCE methods; must list `S256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Token endpoint client authentication methods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the AS returns `iss` in authorization responses.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// The AS accepts Client ID Metadata Document URLs as `client_id`.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// Everything else (e.g. `dpop_signing_alg_values_supported`).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl AuthServerMetadata {
    /// Whether `scopes_supported` lists `scope`.
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }

    // AUTH-23
    /// PKCE `S256` must be advertised; metadata without
    /// `code_challenge_methods_supported`, or without `S256` in it, is refused.
    pub fn require_s256(&self) -> Result<(), OAuthError> {
        match &self.code_challenge_methods_supported {
            Some(m) if m.iter().any(|x| x == "S256") => Ok(()),
            Some(_) => Err(OAuthError::new(
                OAuthErrorKind::Pkce,
                format!("{} does not support PKCE S256 (AUTH-23)", self.issuer),
            )),
            None => Err(OAuthError::new(
                OAuthErrorKind::Pkce,
                format!(
                    "{} publishes no code_challenge_methods_supported; refusing (AUTH-23)",
                    self.issuer
                ),
            )),
        }
    }
}

/// Splits an absolute http(s) URL into (`scheme://authority`, path without
/// query or fragment).
pub(crate) fn split_url(url: &str) -> Result<(String, String), OAuthError> {
    discovery::split_url(url).map_err(OAuthError::config)
}

// AUTH-05
/// Where to look for the PRM document of the MCP endpoint
/// `server_url`: the `resource_metadata` URL from `WWW-Authenticate` when
/// given, else the path-inserted well-known URL (when the endpoint has a
/// path), then the root one.
pub fn prm_urls(server_url: &str, from_challenge: Option<&str>) -> Result<Vec<String>, OAuthError> {
    if let Some(u) = from_challenge {
        return Ok(vec![u.to_owned()]);
    }
    let (origin, path) = split_url(server_url)?;
    let path = path.trim_end_matches('/');
    let root = prm_url(&origin, "");
    if path.is_empty() {
        Ok(vec![root])
    } else {
        Ok(vec![prm_url(&origin, path), root])
    }
}

// AUTH-07
/// The metadata URLs for `issuer`, in order. With a path
/// (`https://as/t1`): RFC 8414 path-inserted, OIDC path-inserted, OIDC
/// path-appended. Without: RFC 8414, then OIDC.
pub fn as_metadata_urls(issuer: &str) -> Result<Vec<String>, OAuthError> {
    discovery::as_metadata_urls(issuer).map_err(OAuthError::config)
}

// LEGACY-26
/// The protocol revision whose authorization discovery the fallback follows.
pub const LEGACY_PROTOCOL_VERSION: &str = "2025-03-26";

// LEGACY-26, AUTH-03, LEGACY-27
/// Whether the 2025-03-26 discovery fallback may apply to a server known to
/// speak `version` (`None`: not known yet, as on first contact, where the
/// 401 comes before any `initialize` answer).
///
/// Revisions up to 2025-03-26 predate Protected Resource Metadata; from
/// 2025-06-18 a server MUST publish it, so without it
/// there is nothing to fall back to. A version that is not a
/// `YYYY-MM-DD` date (a draft name) counts as newer.
pub fn legacy_discovery_applies(version: Option<&str>) -> bool {
    let Some(v) = version else { return true };
    let date = v.len() == 10
        && v.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    // YYYY-MM-DD strings order like the dates they name.
    date && v <= LEGACY_PROTOCOL_VERSION
}

// LEGACY-26
/// The *authorization base URL* of the MCP endpoint
/// `server_url`: the URL with its path (and query) removed,
/// `scheme://authority`, no trailing slash. It is the issuer of a
/// 2025-03-26 server's authorization server.
pub fn authorization_base_url(server_url: &str) -> Result<String, OAuthError> {
    Ok(split_url(server_url)?.0)
}

// LEGACY-26
/// Where a 2025-03-26 client looks for the AS metadata of the
/// authorization base URL `base`: `{base}/.well-known/oauth-authorization-server`
/// (RFC 8414 only; the OpenID Connect location came with 2025-06-18).
pub fn legacy_as_metadata_url(base: &str) -> String {
    format!("{base}{AS_WELL_KNOWN}")
}

// LEGACY-26, AUTH-23
/// The metadata a 2025-03-26 client assumes when the
/// authorization base URL `base` publishes none: `{base}/authorize`,
/// `{base}/token` and `{base}/register`, issuer `base`.
///
/// Nothing else is known: no `code_challenge_methods_supported` (the
/// client still uses PKCE `S256`, which 2025-03-26 makes mandatory, but
/// cannot check support beforehand, so the refusal of servers without `S256` does not apply),
/// no RFC 9207 `iss` support (an `iss` in the callback is still compared),
/// no CIMD, no scopes.
pub fn legacy_default_metadata(base: &str) -> AuthServerMetadata {
    AuthServerMetadata {
        issuer: base.to_owned(),
        authorization_endpoint: Some(format!("{base}/authorize")),
        token_endpoint: Some(format!("{base}/token")),
        registration_endpoint: Some(format!("{base}/register")),
        scopes_supported: None,
        grant_types_supported: None,
        code_challenge_methods_supported: None,
        token_endpoint_auth_methods_supported: None,
        authorization_response_iss_parameter_supported: false,
        client_id_metadata_document_supported: false,
        extra: serde_json::Map::new(),
    }
}

// AUTH-22
/// `scheme://host[:port]` lower-cased, default ports dropped, and the path
/// without a trailing slash (the canonical resource form, for comparison).
fn canonical(url: &str) -> Option<(String, String, Option<u16>, String)> {
    let uri: http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let host = authority.host().to_ascii_lowercase();
    let port = match (scheme.as_str(), authority.port_u16()) {
        ("https", Some(443)) | ("http", Some(80)) => None,
        (_, p) => p,
    };
    let path = uri.path().trim_end_matches('/').to_owned();
    Some((scheme, host, port, path))
}

// AUTH-06, AUTH-22
/// RFC 9728 §3.3, §7.3: whether the PRM `resource` identifies
/// the MCP endpoint `server_url`. Same scheme, host and port (compared
/// case-insensitively, default ports elided), and the resource's
/// path equal to the endpoint's path or a parent of it on a segment
/// boundary (a server may publish its origin, or `/mcp` for `/mcp`).
pub fn resource_matches(resource: &str, server_url: &str) -> bool {
    let (Some(r), Some(s)) = (canonical(resource), canonical(server_url)) else {
        return false;
    };
    if (&r.0, &r.1, r.2) != (&s.0, &s.1, s.2) {
        return false;
    }
    r.3.is_empty() || s.3 == r.3 || s.3.starts_with(&format!("{}/", r.3))
}

// AUTH-08
/// The document's `issuer` must equal the issuer used to build
/// the URL, by exact string comparison.
pub fn check_issuer(meta: &AuthServerMetadata, expected: &str) -> Result<(), OAuthError> {
    if meta.issuer == expected {
        Ok(())
    } else {
        Err(OAuthError::new(
            OAuthErrorKind::IssuerMismatch,
            format!(
                "authorization-server metadata names issuer {:?}, expected {expected:?} (AUTH-08)",
                meta.issuer
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn prm_urls_prefer_header_then_path_then_root() {
        // AUTH-05
        assert_eq!(
            prm_urls("http://localhost:3000/mcp", None).unwrap(),
            vec![
                "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            prm_urls("https://h.example/", None).unwrap(),
            vec!["https://h.example/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            prm_urls("https://h.example/a/b?x=1", None).unwrap()[0],
            "https://h.example/.well-known/oauth-protected-resource/a/b"
        );
        assert_eq!(
            prm_urls("https://h.example/mcp", Some("https://h.example/custom")).unwrap(),
            vec!["https://h.example/custom"]
        );
    }

    #[test]
    fn as_metadata_urls_follow_auth_07_order() {
        assert_eq!(
            as_metadata_urls("https://as.example/tenant1").unwrap(),
            vec![
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            as_metadata_urls("https://as.example").unwrap(),
            vec![
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ]
        );
        assert_eq!(as_metadata_urls("https://as.example/").unwrap().len(), 2);
    }

    #[test]
    fn legacy_fallback_is_for_2025_03_26_and_unknown_versions() {
        // LEGACY-26 / LEGACY-27
        assert!(legacy_discovery_applies(None));
        assert!(legacy_discovery_applies(Some("2025-03-26")));
        assert!(legacy_discovery_applies(Some("2024-11-05")));
        assert!(!legacy_discovery_applies(Some("2025-06-18")));
        assert!(!legacy_discovery_applies(Some("2025-11-25")));
        assert!(!legacy_discovery_applies(Some("2026-07-28")));
        assert!(!legacy_discovery_applies(Some("DRAFT-2026-v1")));
        assert!(!legacy_discovery_applies(Some("2025-3-26")));
        assert!(!legacy_discovery_applies(Some("")));
    }

    #[test]
    fn legacy_urls_use_the_authorization_base_url() {
        // LEGACY-26: the server URL with the path removed.
        let base = authorization_base_url("https://api.example.com:8443/v1/mcp?x=1").unwrap();
        assert_eq!(base, "https://api.example.com:8443");
        assert_eq!(
            legacy_as_metadata_url(&base),
            "https://api.example.com:8443/.well-known/oauth-authorization-server"
        );
        let m = legacy_default_metadata(&base);
        assert_eq!(m.issuer, base);
        assert_eq!(
            m.authorization_endpoint.as_deref(),
            Some("https://api.example.com:8443/authorize")
        );
        assert_eq!(
            m.token_endpoint.as_deref(),
            Some("https://api.example.com:8443/token")
        );
        assert_eq!(
            m.registration_endpoint.as_deref(),
            Some("https://api.example.com:8443/register")
        );
        assert!(!m.authorization_response_iss_parameter_supported);
        assert!(!m.client_id_metadata_document_supported);
        assert!(authorization_base_url("not a url").is_err());
    }

    #[test]
    fn resource_must_identify_the_server() {
        // AUTH-06
        assert!(resource_matches(
            "http://localhost:3000/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(resource_matches(
            "http://localhost:3000/mcp/",
            "http://localhost:3000/mcp"
        ));
        assert!(resource_matches(
            "http://localhost:3000",
            "http://localhost:3000/mcp"
        ));
        assert!(resource_matches(
            "HTTPS://Example.COM:443/mcp",
            "https://example.com/mcp"
        ));
        assert!(!resource_matches(
            "https://evil.example.com/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches(
            "http://localhost:3001/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches(
            "https://localhost:3000/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches(
            "http://localhost:3000/other",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches(
            "http://localhost:3000/mc",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches(
            "http://localhost:3000/mcp/x",
            "http://localhost:3000/mcp"
        ));
        assert!(!resource_matches("not a url", "http://localhost:3000/mcp"));
    }

    #[test]
    fn issuer_and_pkce_checks() {
        let meta: AuthServerMetadata = serde_json::from_value(serde_json::json!({
            "issuer": "https://as.example/",
            "code_challenge_methods_supported": ["plain"]
        }))
        .unwrap();
        // AUTH-08: exact string, a trailing slash matters.
        assert!(check_issuer(&meta, "https://as.example/").is_ok());
        assert!(check_issuer(&meta, "https://as.example").is_err());
        // AUTH-23
        assert_eq!(
            meta.require_s256().unwrap_err().kind(),
            &OAuthErrorKind::Pkce
        );
        let mut m = meta.clone();
        m.code_challenge_methods_supported = None;
        assert!(m.require_s256().is_err());
        m.code_challenge_methods_supported = Some(vec!["plain".into(), "S256".into()]);
        assert!(m.require_s256().is_ok());
    }
}
