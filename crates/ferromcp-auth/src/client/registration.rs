//! Client identity: pre-registered credentials, Client ID Metadata
//! Documents and Dynamic Client Registration.
// AUTH-10…AUTH-15
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use super::client_auth::{self, ClientAuthentication, ClientSecret};
use super::error::OAuthError;
use super::http::HttpClient;
use super::metadata::AuthServerMetadata;
use super::store::StoredClient;
use serde::Deserialize;
use std::sync::Arc;

// AUTH-15
/// Credentials configured for one issuer.
#[derive(Clone)]
pub enum PreRegistered {
    /// A client id and secret; the method is chosen from the AS metadata
    /// (`client_secret_basic` unless only `client_secret_post` is listed).
    Secret {
        /// The `client_id`.
        client_id: String,
        /// The `client_secret`.
        client_secret: String,
    },
    /// A public client id (`none`).
    Public {
        /// The `client_id`.
        client_id: String,
    },
    /// Any other authentication method (e.g. `private_key_jwt`).
    Custom(Arc<dyn ClientAuthentication>),
}

impl std::fmt::Debug for PreRegistered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Secret { client_id, .. } => f
                .debug_struct("Secret")
                .field("client_id", client_id)
                .finish_non_exhaustive(),
            Self::Public { client_id } => f
                .debug_struct("Public")
                .field("client_id", client_id)
                .finish(),
            Self::Custom(c) => f
                .debug_struct("Custom")
                .field("client_id", &c.client_id())
                .field("method", &c.method())
                .finish(),
        }
    }
}

impl PreRegistered {
    /// The authentication to use with an AS publishing `meta`.
    pub fn authentication(&self, meta: &AuthServerMetadata) -> Arc<dyn ClientAuthentication> {
        match self {
            Self::Secret {
                client_id,
                client_secret,
            } => Arc::new(ClientSecret {
                client_id: client_id.clone(),
                client_secret: Some(client_secret.clone()),
                method: client_auth::choose_secret_method(
                    meta.token_endpoint_auth_methods_supported.as_deref(),
                )
                .into(),
            }),
            Self::Public { client_id } => Arc::new(ClientSecret::public(client_id.clone())),
            Self::Custom(c) => c.clone(),
        }
    }
}

/// What the client sends to a registration endpoint (RFC 7591 §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationRequest {
    /// `client_name`.
    pub client_name: String,
    /// `redirect_uris`.
    pub redirect_uris: Vec<String>,
    // AUTH-13
    /// `application_type`: `native` or `web`.
    pub application_type: String,
    /// `token_endpoint_auth_method`.
    pub token_endpoint_auth_method: String,
    /// `scope`, when known.
    pub scope: Option<String>,
}

impl RegistrationRequest {
    // AUTH-27
    /// The JSON body: `grant_types` always includes `refresh_token`
    /// (SHOULD request it; never assumed to be granted).
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "client_name": self.client_name,
            "redirect_uris": self.redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
            "application_type": self.application_type,
        });
        if let (Some(s), Some(o)) = (&self.scope, v.as_object_mut()) {
            o.insert("scope".into(), s.clone().into());
        }
        v
    }
}

#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    redirect_uris: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct RegistrationError {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

// AUTH-13
/// Registers at `endpoint` (RFC 7591). A refusal names the AS's reason; a
/// redirect-URI refusal says so.
pub async fn register(
    http: &HttpClient,
    endpoint: &str,
    req: &RegistrationRequest,
) -> Result<StoredClient, OAuthError> {
    let resp = http.post_json(endpoint, &req.to_json()).await?;
    if !resp.status.is_success() {
        let why = serde_json::from_slice::<RegistrationError>(&resp.body)
            .map(|e| {
                let hint = if e.error == "invalid_redirect_uri" {
                    format!(
                        " (the AS refused the redirect URIs {:?}; configure a redirect it accepts)",
                        req.redirect_uris
                    )
                } else {
                    String::new()
                };
                format!(
                    "{}: {}{hint}",
                    e.error,
                    e.error_description.unwrap_or_default()
                )
            })
            .unwrap_or_else(|_| format!("HTTP {}", resp.status));
        return Err(OAuthError::registration(format!(
            "dynamic client registration at {endpoint} failed: {why}"
        )));
    }
    let r: RegistrationResponse = serde_json::from_slice(&resp.body).map_err(|e| {
        OAuthError::registration(format!(
            "malformed registration response from {endpoint}: {e}"
        ))
    })?;
    if r.client_id.is_empty() {
        return Err(OAuthError::registration(format!(
            "{endpoint} registered an empty client_id"
        )));
    }
    let method = r
        .token_endpoint_auth_method
        .unwrap_or_else(|| req.token_endpoint_auth_method.clone());
    // A secret-based method without a secret cannot work; fall back to none.
    let method = if method != client_auth::NONE && r.client_secret.is_none() {
        client_auth::NONE.to_owned()
    } else {
        method
    };
    Ok(StoredClient {
        client_id: r.client_id,
        client_secret: r.client_secret,
        token_endpoint_auth_method: method,
        redirect_uris: r.redirect_uris.unwrap_or_else(|| req.redirect_uris.clone()),
    })
}

/// The authentication for a registered client.
pub fn registered_authentication(c: &StoredClient) -> Arc<dyn ClientAuthentication> {
    Arc::new(ClientSecret {
        client_id: c.client_id.clone(),
        client_secret: c.client_secret.clone(),
        method: c.token_endpoint_auth_method.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_body_has_application_type_and_refresh_grant() {
        // AUTH-13, AUTH-27
        let r = RegistrationRequest {
            client_name: "n".into(),
            redirect_uris: vec!["http://127.0.0.1/callback".into()],
            application_type: "native".into(),
            token_endpoint_auth_method: "none".into(),
            scope: Some("a b".into()),
        };
        let v = r.to_json();
        assert_eq!(v["application_type"], "native");
        assert_eq!(v["scope"], "a b");
        assert!(
            v["grant_types"]
                .as_array()
                .is_some_and(|g| g.iter().any(|x| x == "refresh_token"))
        );
    }
}
