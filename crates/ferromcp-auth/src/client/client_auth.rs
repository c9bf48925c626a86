//! Client authentication at the token endpoint (OAuth 2.1 §2.4): the
//! [`ClientAuthentication`] extension point and the built-in methods
//! `client_secret_basic`, `client_secret_post` and `none`.

use super::error::OAuthError;
use super::form::encode_component;
use crate::core::b64;
use std::sync::Arc;

/// `client_secret_basic`.
pub const CLIENT_SECRET_BASIC: &str = "client_secret_basic";
/// `client_secret_post`.
pub const CLIENT_SECRET_POST: &str = "client_secret_post";
/// `none` (public client).
pub const NONE: &str = "none";

/// Where a token request goes, for methods that sign assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenEndpointContext {
    /// The AS issuer.
    pub issuer: String,
    /// The token endpoint URL (an assertion's `aud`).
    pub token_endpoint: String,
}

/// How the client proves its identity at the token endpoint.
///
/// Extension point: `private_key_jwt` (RFC 7523 §2.2) and other methods
/// implement this and are installed as a pre-registered client
/// ([`super::PreRegistered::Custom`] through
/// [`super::OAuthClientBuilder::pre_registered`]) or on an extension grant
/// ([`super::JwtBearerGrant::client_authentication`]).
pub trait ClientAuthentication: Send + Sync + 'static {
    /// The `client_id`.
    fn client_id(&self) -> &str;
    /// The `token_endpoint_auth_method` name.
    fn method(&self) -> &str;
    /// Adds form parameters and/or headers to a token request.
    fn apply(
        &self,
        ctx: &TokenEndpointContext,
        form: &mut Vec<(String, String)>,
        headers: &mut Vec<(String, String)>,
    ) -> Result<(), OAuthError>;
}

/// A client id with an optional secret, authenticated by one of the
/// built-in methods.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret {
    /// The `client_id`.
    pub client_id: String,
    /// The `client_secret` (absent for public clients).
    pub client_secret: Option<String>,
    /// [`CLIENT_SECRET_BASIC`], [`CLIENT_SECRET_POST`] or [`NONE`].
    pub method: String,
}

impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSecret")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("method", &self.method)
            .finish()
    }
}

impl ClientSecret {
    /// A public client (`none`).
    pub fn public(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: None,
            method: NONE.into(),
        }
    }
}

impl ClientAuthentication for ClientSecret {
    fn client_id(&self) -> &str {
        &self.client_id
    }

    fn method(&self) -> &str {
        &self.method
    }

    fn apply(
        &self,
        _ctx: &TokenEndpointContext,
        form: &mut Vec<(String, String)>,
        headers: &mut Vec<(String, String)>,
    ) -> Result<(), OAuthError> {
        let secret = || {
            self.client_secret
                .clone()
                .ok_or_else(|| OAuthError::config(format!("{} needs a client secret", self.method)))
        };
        match self.method.as_str() {
            CLIENT_SECRET_BASIC => {
                // RFC 6749 §2.3.1: form-encode both before base64.
                let pair = format!(
                    "{}:{}",
                    encode_component(&self.client_id),
                    encode_component(&secret()?)
                );
                headers.push((
                    "authorization".into(),
                    format!("Basic {}", b64::encode(pair)),
                ));
            }
            CLIENT_SECRET_POST => {
                form.push(("client_id".into(), self.client_id.clone()));
                form.push(("client_secret".into(), secret()?));
            }
            NONE => form.push(("client_id".into(), self.client_id.clone())),
            other => {
                return Err(OAuthError::config(format!(
                    "unsupported client authentication method {other:?}"
                )));
            }
        }
        Ok(())
    }
}

/// Picks the method for a client holding a secret from what the AS
/// advertises (RFC 8414 default when absent: `client_secret_basic`).
pub fn choose_secret_method(advertised: Option<&[String]>) -> &'static str {
    match advertised {
        None => CLIENT_SECRET_BASIC,
        Some(m) if m.iter().any(|x| x == CLIENT_SECRET_BASIC) => CLIENT_SECRET_BASIC,
        Some(m) if m.iter().any(|x| x == CLIENT_SECRET_POST) => CLIENT_SECRET_POST,
        Some(_) => CLIENT_SECRET_BASIC,
    }
}

/// The method to ask for when registering (RFC 7591): `none` when the AS
/// accepts public clients (native apps cannot keep secrets), else the
/// first secret method it lists.
pub fn choose_registration_method(advertised: Option<&[String]>) -> &'static str {
    match advertised {
        None => NONE,
        Some(m) if m.iter().any(|x| x == NONE) => NONE,
        Some(m) => choose_secret_method(Some(m)),
    }
}

/// A shared authentication method.
pub type SharedClientAuthentication = Arc<dyn ClientAuthentication>;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ctx() -> TokenEndpointContext {
        TokenEndpointContext {
            issuer: "https://as".into(),
            token_endpoint: "https://as/token".into(),
        }
    }

    #[test]
    fn built_in_methods_place_credentials() {
        let mut form = Vec::new();
        let mut headers = Vec::new();
        let basic = ClientSecret {
            client_id: "id:1".into(),
            client_secret: Some("s e".into()),
            method: CLIENT_SECRET_BASIC.into(),
        };
        basic.apply(&ctx(), &mut form, &mut headers).unwrap();
        assert!(form.is_empty());
        // base64("id%3A1:s+e"), computed independently.
        assert_eq!(headers[0].1, "Basic aWQlM0ExOnMrZQ==");
        let post = ClientSecret {
            method: CLIENT_SECRET_POST.into(),
            ..basic.clone()
        };
        let (mut form, mut headers) = (Vec::new(), Vec::new());
        post.apply(&ctx(), &mut form, &mut headers).unwrap();
        assert!(headers.is_empty());
        assert_eq!(
            form,
            vec![
                ("client_id".to_owned(), "id:1".to_owned()),
                ("client_secret".to_owned(), "s e".to_owned())
            ]
        );
        let (mut form, mut headers) = (Vec::new(), Vec::new());
        ClientSecret::public("pub")
            .apply(&ctx(), &mut form, &mut headers)
            .unwrap();
        assert_eq!(form, vec![("client_id".to_owned(), "pub".to_owned())]);
        let no_secret = ClientSecret {
            client_secret: None,
            ..basic
        };
        assert!(no_secret.apply(&ctx(), &mut form, &mut headers).is_err());
        assert!(!format!("{no_secret:?}").contains("s e"));
    }

    #[test]
    fn method_choice_follows_advertisement() {
        let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(choose_secret_method(None), CLIENT_SECRET_BASIC);
        assert_eq!(
            choose_secret_method(Some(&v(&[CLIENT_SECRET_POST]))),
            CLIENT_SECRET_POST
        );
        assert_eq!(
            choose_secret_method(Some(&v(&[CLIENT_SECRET_POST, CLIENT_SECRET_BASIC]))),
            CLIENT_SECRET_BASIC
        );
        assert_eq!(choose_registration_method(Some(&v(&[NONE]))), NONE);
        assert_eq!(
            choose_registration_method(Some(&v(&[CLIENT_SECRET_POST]))),
            CLIENT_SECRET_POST
        );
        assert_eq!(choose_registration_method(None), NONE);
    }
}
