//! `private_key_jwt` client authentication (RFC 7523 §2.2 and §3, OpenID
//! Connect Core §9): the client proves its identity at the token endpoint
//! with a short-lived JWT signed by its own key instead of a shared secret.
//! Used by the `io.modelcontextprotocol/oauth-client-credentials` extension
//! (SEP-1046, conformance `auth/client-credentials-jwt`) and available to
//! every grant; the specification allows it for CIMD clients too.
//!
//! The assertion's claims: `iss` = `sub` = the client id, `aud` = the
//! authorization server's issuer identifier (RFC 7523bis; the token
//! endpoint URL is available through [`AssertionAudience::TokenEndpoint`]
//! for servers that want the older form), `jti` random, `iat` now and `exp`
//! [`PrivateKeyJwt::lifetime`] later (default
//! [`DEFAULT_ASSERTION_LIFETIME`]).
// AUTH-11

use super::client_auth::{ClientAuthentication, TokenEndpointContext};
use super::error::OAuthError;
use super::es256::{Es256Key, KeyError, random_token, unix_now};
use serde::Serialize;
use std::time::Duration;

/// `client_assertion_type` for a JWT assertion (RFC 7523 §2.2).
pub const CLIENT_ASSERTION_TYPE_JWT: &str =
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The `token_endpoint_auth_method` name.
pub const PRIVATE_KEY_JWT: &str = "private_key_jwt";

/// Default for [`PrivateKeyJwt::lifetime`]: one minute.
pub const DEFAULT_ASSERTION_LIFETIME: Duration = Duration::from_secs(60);

/// Which value the assertion's `aud` claim takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AssertionAudience {
    /// The authorization server's `issuer` (the default; what RFC 7523bis
    /// and the MCP client-credentials extension expect).
    #[default]
    Issuer,
    /// The token endpoint URL (RFC 7523 §3 also allows it).
    TokenEndpoint,
}

/// A client that authenticates with a signed JWT.
#[derive(Debug, Clone)]
pub struct PrivateKeyJwt {
    client_id: String,
    key: Es256Key,
    lifetime: Duration,
    audience: AssertionAudience,
}

#[derive(Serialize)]
struct AssertionClaims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    jti: String,
    iat: u64,
    exp: u64,
}

impl PrivateKeyJwt {
    /// `client_id` signing with `key`.
    pub fn new(client_id: impl Into<String>, key: Es256Key) -> Self {
        Self {
            client_id: client_id.into(),
            key,
            lifetime: DEFAULT_ASSERTION_LIFETIME,
            audience: AssertionAudience::default(),
        }
    }

    /// `client_id` signing with a PKCS#8 PEM P-256 key.
    pub fn from_pem(client_id: impl Into<String>, pem: &str) -> Result<Self, KeyError> {
        Ok(Self::new(client_id, Es256Key::from_pkcs8_pem(pem)?))
    }

    /// Sets how long each assertion is valid (clamped to 1 s … 10 min).
    pub fn lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime.clamp(Duration::from_secs(1), Duration::from_secs(600));
        self
    }

    /// Sets which value `aud` takes.
    pub fn audience(mut self, audience: AssertionAudience) -> Self {
        self.audience = audience;
        self
    }

    /// The client id.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// A fresh assertion for the authorization server `issuer` whose token
    /// endpoint is `token_endpoint`.
    pub fn assertion(&self, issuer: &str, token_endpoint: &str) -> Result<String, KeyError> {
        let aud = match self.audience {
            AssertionAudience::Issuer => issuer,
            AssertionAudience::TokenEndpoint => token_endpoint,
        };
        let iat = unix_now();
        let claims = AssertionClaims {
            iss: &self.client_id,
            sub: &self.client_id,
            aud,
            jti: random_token(16)?,
            iat,
            exp: iat + self.lifetime.as_secs(),
        };
        self.key.sign(Some("JWT"), false, &claims)
    }

    /// The form parameters that authenticate the client in a token
    /// request: `client_id`, `client_assertion_type`, `client_assertion`.
    pub fn form_params(
        &self,
        issuer: &str,
        token_endpoint: &str,
    ) -> Result<Vec<(String, String)>, KeyError> {
        Ok(vec![
            ("client_id".into(), self.client_id.clone()),
            (
                "client_assertion_type".into(),
                CLIENT_ASSERTION_TYPE_JWT.into(),
            ),
            (
                "client_assertion".into(),
                self.assertion(issuer, token_endpoint)?,
            ),
        ])
    }
}

impl ClientAuthentication for PrivateKeyJwt {
    fn client_id(&self) -> &str {
        &self.client_id
    }

    fn method(&self) -> &str {
        PRIVATE_KEY_JWT
    }

    fn apply(
        &self,
        ctx: &TokenEndpointContext,
        form: &mut Vec<(String, String)>,
        _headers: &mut Vec<(String, String)>,
    ) -> Result<(), OAuthError> {
        let params = self
            .form_params(&ctx.issuer, &ctx.token_endpoint)
            .map_err(|e| OAuthError::config(format!("private_key_jwt: {e}")))?;
        form.extend(params);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
    use p256::pkcs8::EncodePrivateKey;
    use serde_json::Value;

    /// A PKCS#8 PEM (what a client is configured with) and its public key.
    fn pem_and_public() -> (String, DecodingKey) {
        let secret = p256::SecretKey::from_slice(&[42u8; 32]).unwrap();
        let pem = secret
            .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
            .unwrap()
            .to_string();
        let key = Es256Key::from_pkcs8_pem(&pem).unwrap();
        (pem, DecodingKey::from_jwk(key.public_jwk()).unwrap())
    }

    fn claims(jwt: &str, key: &DecodingKey, aud: &str) -> Value {
        let mut v = Validation::new(Algorithm::ES256);
        v.set_audience(&[aud]);
        v.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
        decode::<Value>(jwt, key, &v).unwrap().claims
    }

    #[test]
    fn assertion_is_signed_with_iss_sub_client_id_and_issuer_audience() {
        let (pem, public) = pem_and_public();
        let c = PrivateKeyJwt::from_pem("conformance-test-client", &pem).unwrap();
        let jwt = c
            .assertion("http://localhost:4000", "http://localhost:4000/token")
            .unwrap();
        let cl = claims(&jwt, &public, "http://localhost:4000");
        assert_eq!(cl["iss"], "conformance-test-client");
        assert_eq!(cl["sub"], "conformance-test-client");
        let iat = cl["iat"].as_u64().unwrap();
        let exp = cl["exp"].as_u64().unwrap();
        assert_eq!(exp - iat, 60);
        assert!(cl["jti"].as_str().unwrap().len() >= 16);
    }

    #[test]
    fn token_endpoint_audience_on_request_and_lifetime_clamped() {
        let (pem, public) = pem_and_public();
        let c = PrivateKeyJwt::from_pem("c", &pem)
            .unwrap()
            .audience(AssertionAudience::TokenEndpoint)
            .lifetime(Duration::from_secs(100_000));
        let jwt = c.assertion("https://as", "https://as/token").unwrap();
        let cl = claims(&jwt, &public, "https://as/token");
        assert_eq!(
            cl["exp"].as_u64().unwrap() - cl["iat"].as_u64().unwrap(),
            600
        );
    }

    #[test]
    fn form_params_name_the_assertion_type_and_differ_each_time() {
        let (pem, _) = pem_and_public();
        let c = PrivateKeyJwt::from_pem("cid", &pem).unwrap();
        let a = c.form_params("https://as", "https://as/token").unwrap();
        let b = c.form_params("https://as", "https://as/token").unwrap();
        assert_eq!(a[0], ("client_id".into(), "cid".into()));
        assert_eq!(a[1].1, CLIENT_ASSERTION_TYPE_JWT);
        assert_ne!(a[2].1, b[2].1, "fresh jti per assertion");
    }

    /// The `ClientAuthentication` side: only form parameters, `aud` = the
    /// issuer of the token endpoint context.
    #[test]
    fn client_authentication_hook_signs_for_the_issuer() {
        let (pem, public) = pem_and_public();
        let c = PrivateKeyJwt::from_pem("cid", &pem).unwrap();
        assert_eq!(c.method(), PRIVATE_KEY_JWT);
        assert_eq!(ClientAuthentication::client_id(&c), "cid");
        let ctx = TokenEndpointContext {
            issuer: "https://as.example".into(),
            token_endpoint: "https://as.example/oauth/token".into(),
        };
        let mut form = vec![("grant_type".to_owned(), "client_credentials".to_owned())];
        let mut headers = Vec::new();
        c.apply(&ctx, &mut form, &mut headers).unwrap();
        assert!(headers.is_empty());
        assert_eq!(form.len(), 4);
        let assertion = &form
            .iter()
            .find(|(k, _)| k == "client_assertion")
            .unwrap()
            .1;
        assert_eq!(
            claims(assertion, &public, "https://as.example")["sub"],
            "cid"
        );
    }

    #[test]
    fn a_wrong_pem_is_an_error() {
        assert!(
            PrivateKeyJwt::from_pem(
                "c",
                "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----"
            )
            .is_err()
        );
    }
}
