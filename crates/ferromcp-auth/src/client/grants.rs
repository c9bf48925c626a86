//! The extension grants: token requests that need no user and no browser.
//!
//! - `client_credentials` (OAuth 2.1 §4.2; MCP extension
//!   `io.modelcontextprotocol/oauth-client-credentials`, SEP-1046): the
//!   client authenticates as itself (`client_secret_basic` or
//!   `private_key_jwt`) and gets a token for itself.
//! - JWT bearer (RFC 7523 §2.1; workload identity federation, SEP-1933,
//!   extension `io.modelcontextprotocol/auth/wif`): the client presents a
//!   JWT issued to the workload by a trusted issuer as the `assertion`.
//!   Errors (`invalid_grant`, `invalid_scope`, `unauthorized_client`) are
//!   surfaced, never retried and never answered by switching grant types.
//! - Enterprise-managed authorization (SEP-990, extension
//!   `io.modelcontextprotocol/enterprise-managed-authorization`): an RFC 8693
//!   token exchange at the enterprise IdP turns the user's ID token into an
//!   Identity Assertion JWT Authorization Grant (ID-JAG,
//!   `urn:ietf:params:oauth:token-type:id-jag`) whose `audience` is the MCP
//!   authorization server's issuer and `resource` the MCP server; the
//!   ID-JAG then goes to that server's token endpoint as a JWT-bearer grant.
//!
//! Every request carries `resource` = the MCP server's canonical URI
//! exactly as its Protected Resource Metadata publishes it. This
//! file builds the form parameters and reads the token-exchange answer; it
//! does no I/O.
// AUTH-22

use super::BoxFuture;
use super::client_auth::{ClientAuthentication, ClientSecret, TokenEndpointContext};
use super::error::{OAuthError, OAuthErrorKind};
use super::grant::{Grant, GrantContext};
use super::token::{TokenResponse, token_request};
use serde::Deserialize;
use std::fmt;
use std::sync::Arc;

/// `grant_type` of the client-credentials grant.
pub const GRANT_CLIENT_CREDENTIALS: &str = "client_credentials";
/// `grant_type` of the RFC 7523 JWT-bearer authorization grant.
pub const GRANT_JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of the RFC 8693 token exchange.
pub const GRANT_TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// RFC 8693 token type of an OpenID Connect ID token.
pub const TOKEN_TYPE_ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
/// Token type of an Identity Assertion JWT Authorization Grant.
pub const TOKEN_TYPE_ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// Form parameters of a token request.
pub type Form = Vec<(String, String)>;

fn push_opt(form: &mut Form, name: &str, value: Option<&str>) {
    if let Some(v) = value.filter(|v| !v.is_empty()) {
        form.push((name.to_owned(), v.to_owned()));
    }
}

// AUTH-22
/// `grant_type=client_credentials` with `scope` (when chosen) and
/// `resource`. Client authentication is added by the caller.
pub fn client_credentials_form(scope: Option<&str>, resource: &str) -> Form {
    let mut form = vec![("grant_type".into(), GRANT_CLIENT_CREDENTIALS.into())];
    push_opt(&mut form, "scope", scope);
    form.push(("resource".into(), resource.into()));
    form
}

// AUTH-22
/// The RFC 7523 §2.1 JWT-bearer grant with `assertion`, `scope` (when
/// chosen) and `resource`.
pub fn jwt_bearer_form(assertion: &str, scope: Option<&str>, resource: &str) -> Form {
    let mut form = vec![
        ("grant_type".into(), GRANT_JWT_BEARER.into()),
        ("assertion".into(), assertion.into()),
    ];
    push_opt(&mut form, "scope", scope);
    form.push(("resource".into(), resource.into()));
    form
}

/// An RFC 8693 token exchange at the enterprise IdP asking for an ID-JAG.
#[derive(Clone, PartialEq, Eq)]
pub struct IdJagRequest {
    /// The user's ID token from the IdP (`subject_token`).
    pub id_token: String,
    /// The MCP authorization server's issuer (`audience`).
    pub audience: String,
    /// The MCP server's canonical URI (`resource`).
    pub resource: String,
    /// Scopes to ask for, if any.
    pub scope: Option<String>,
}

impl fmt::Debug for IdJagRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdJagRequest")
            .field("id_token", &"<redacted>")
            .field("audience", &self.audience)
            .field("resource", &self.resource)
            .field("scope", &self.scope)
            .finish()
    }
}

impl IdJagRequest {
    /// The form: `grant_type` token-exchange, `requested_token_type` id-jag,
    /// `subject_token` + `subject_token_type` id_token, `audience`,
    /// `resource`, `scope`.
    pub fn form(&self) -> Form {
        let mut form = vec![
            ("grant_type".into(), GRANT_TOKEN_EXCHANGE.into()),
            ("requested_token_type".into(), TOKEN_TYPE_ID_JAG.into()),
            ("subject_token".into(), self.id_token.clone()),
            ("subject_token_type".into(), TOKEN_TYPE_ID_TOKEN.into()),
            ("audience".into(), self.audience.clone()),
            ("resource".into(), self.resource.clone()),
        ];
        push_opt(&mut form, "scope", self.scope.as_deref());
        form
    }
}

/// Why a token-exchange answer is not a usable ID-JAG.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeError(String);

impl fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExchangeError {}

#[derive(Deserialize)]
struct ExchangeResponse {
    access_token: Option<String>,
    issued_token_type: Option<String>,
}

/// Longest ID-JAG accepted from an IdP (it is a JWT; 16 KiB is generous).
pub const MAX_ID_JAG_LEN: usize = 16 * 1024;

/// Reads a successful RFC 8693 §2.2.1 answer and returns the ID-JAG: the
/// `access_token` member, which must be present, and `issued_token_type`,
/// which must be the ID-JAG type. (`token_type` is `N_A` and ignored.)
pub fn parse_id_jag_response(body: &[u8]) -> Result<String, ExchangeError> {
    let r: ExchangeResponse = serde_json::from_slice(body)
        .map_err(|e| ExchangeError(format!("token exchange answer is not JSON: {e}")))?;
    match r.issued_token_type.as_deref() {
        Some(TOKEN_TYPE_ID_JAG) => {}
        Some(other) => {
            return Err(ExchangeError(format!(
                "token exchange issued {other:?}, not an ID-JAG"
            )));
        }
        None => {
            return Err(ExchangeError(
                "token exchange answer lacks issued_token_type".into(),
            ));
        }
    }
    let token = r
        .access_token
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ExchangeError("token exchange answer lacks access_token".into()))?;
    if token.len() > MAX_ID_JAG_LEN || token.split('.').count() != 3 {
        return Err(ExchangeError(
            "the ID-JAG is not a compact JWT of acceptable size".into(),
        ));
    }
    Ok(token)
}

/// Supplies a credential each time a grant runs (a workload JWT re-read
/// from its file, an ID token from the enterprise login, …).
pub type CredentialSource = Arc<dyn Fn() -> Result<String, OAuthError> + Send + Sync>;

/// A [`CredentialSource`] always answering `value`.
pub fn fixed_credential(value: impl Into<String>) -> CredentialSource {
    let value = value.into();
    Arc::new(move || Ok(value.clone()))
}

/// The client identity and issuer binding shared by the grants below.
#[derive(Clone)]
struct Identity {
    client: Arc<dyn ClientAuthentication>,
    issuer: Option<String>,
}

impl Identity {
    // AUTH-14
    /// Credentials configured for one issuer are never presented
    /// to another.
    fn check(&self, ctx: &GrantContext<'_>) -> Result<(), OAuthError> {
        match &self.issuer {
            Some(i) if *i != ctx.metadata.issuer => Err(OAuthError::new(
                OAuthErrorKind::Registration,
                format!(
                    "client {} is configured for {i}, but the resource names {} (AUTH-14)",
                    self.client.client_id(),
                    ctx.metadata.issuer
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Sends `form` to the token endpoint, authenticated as this client and
    /// with the context's proof (DPoP), if any.
    async fn exchange(
        &self,
        ctx: &GrantContext<'_>,
        form: Form,
    ) -> Result<TokenResponse, OAuthError> {
        token_request(
            ctx.http,
            &ctx.token_endpoint,
            form,
            self.client.as_ref(),
            ctx.proof,
        )
        .await
    }
}

fn scope_param(ctx: &GrantContext<'_>) -> Option<String> {
    ctx.scopes.filter(|s| !s.is_empty()).map(|s| s.join(" "))
}

/// The `client_credentials` grant (SEP-1046): the client's own
/// authentication (`client_secret_basic`, `client_secret_post` or
/// [`super::assertion::PrivateKeyJwt`]) is the whole proof.
pub struct ClientCredentialsGrant {
    id: Identity,
}

impl fmt::Debug for ClientCredentialsGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentialsGrant")
            .field("client_id", &self.id.client.client_id())
            .field("method", &self.id.client.method())
            .field("issuer", &self.id.issuer)
            .finish()
    }
}

impl ClientCredentialsGrant {
    /// The grant for `client`, usable with any authorization server the
    /// resource names (see [`Self::only_for_issuer`]).
    pub fn new(client: Arc<dyn ClientAuthentication>) -> Self {
        Self {
            id: Identity {
                client,
                issuer: None,
            },
        }
    }

    // AUTH-14
    /// Refuses to present the credentials to any issuer but `issuer`.
    pub fn only_for_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.id.issuer = Some(issuer.into());
        self
    }
}

impl Grant for ClientCredentialsGrant {
    fn client(&self) -> Option<Arc<dyn ClientAuthentication>> {
        Some(self.id.client.clone())
    }

    fn obtain<'a>(
        &'a self,
        ctx: GrantContext<'a>,
    ) -> BoxFuture<'a, Result<TokenResponse, OAuthError>> {
        Box::pin(async move {
            self.id.check(&ctx)?;
            let form = client_credentials_form(scope_param(&ctx).as_deref(), ctx.resource);
            self.id.exchange(&ctx, form).await
        })
    }
}

/// The RFC 7523 JWT-bearer grant with a workload's JWT (SEP-1933). The
/// client authenticates as configured (`none` by default: the assertion
/// is the credential). A refusal is final: no retry, no other grant.
pub struct JwtBearerGrant {
    id: Identity,
    assertion: CredentialSource,
}

impl fmt::Debug for JwtBearerGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtBearerGrant")
            .field("client_id", &self.id.client.client_id())
            .field("issuer", &self.id.issuer)
            .finish_non_exhaustive()
    }
}

impl JwtBearerGrant {
    /// A public client `client_id` presenting what `assertion` supplies.
    pub fn new(client_id: impl Into<String>, assertion: CredentialSource) -> Self {
        Self {
            id: Identity {
                client: Arc::new(ClientSecret::public(client_id)),
                issuer: None,
            },
            assertion,
        }
    }

    /// Authenticates the client with `client` instead of `none`.
    pub fn client_authentication(mut self, client: Arc<dyn ClientAuthentication>) -> Self {
        self.id.client = client;
        self
    }

    // AUTH-14
    /// Refuses every issuer but `issuer`.
    pub fn only_for_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.id.issuer = Some(issuer.into());
        self
    }
}

impl Grant for JwtBearerGrant {
    fn client(&self) -> Option<Arc<dyn ClientAuthentication>> {
        Some(self.id.client.clone())
    }

    fn obtain<'a>(
        &'a self,
        ctx: GrantContext<'a>,
    ) -> BoxFuture<'a, Result<TokenResponse, OAuthError>> {
        Box::pin(async move {
            self.id.check(&ctx)?;
            let assertion = (self.assertion)()?;
            let form = jwt_bearer_form(&assertion, scope_param(&ctx).as_deref(), ctx.resource);
            self.id.exchange(&ctx, form).await
        })
    }
}

/// Where the enterprise IdP's token exchange happens.
#[derive(Clone)]
pub struct IdentityProvider {
    /// The IdP's issuer identifier.
    pub issuer: String,
    /// Its token endpoint (RFC 8693 exchanges go here).
    pub token_endpoint: String,
    /// How the client authenticates to the IdP (default `none` with the
    /// IdP client id).
    pub client: Arc<dyn ClientAuthentication>,
}

impl fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client.client_id())
            .finish()
    }
}

/// Enterprise-managed authorization (SEP-990): ID token → ID-JAG at the
/// IdP (RFC 8693), ID-JAG → access token at the MCP authorization server
/// (RFC 7523), with the client's credentials for that server.
pub struct EnterpriseManagedGrant {
    id: Identity,
    idp: IdentityProvider,
    id_token: CredentialSource,
}

impl fmt::Debug for EnterpriseManagedGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterpriseManagedGrant")
            .field("client_id", &self.id.client.client_id())
            .field("idp", &self.idp)
            .finish_non_exhaustive()
    }
}

impl EnterpriseManagedGrant {
    /// `client` authenticates at the MCP authorization server; `idp`
    /// exchanges what `id_token` supplies.
    pub fn new(
        client: Arc<dyn ClientAuthentication>,
        idp: IdentityProvider,
        id_token: CredentialSource,
    ) -> Self {
        Self {
            id: Identity {
                client,
                issuer: None,
            },
            idp,
            id_token,
        }
    }

    // AUTH-14
    /// Refuses every MCP authorization server but `issuer`.
    pub fn only_for_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.id.issuer = Some(issuer.into());
        self
    }

    /// Step 1: the token exchange at the IdP; returns the ID-JAG.
    async fn id_jag(
        &self,
        ctx: &GrantContext<'_>,
        scope: Option<&str>,
    ) -> Result<String, OAuthError> {
        let request = IdJagRequest {
            id_token: (self.id_token)()?,
            audience: ctx.metadata.issuer.clone(),
            resource: ctx.resource.to_owned(),
            scope: scope.map(str::to_owned),
        };
        let mut form = request.form();
        let mut headers = Vec::new();
        self.idp.client.apply(
            &TokenEndpointContext {
                issuer: self.idp.issuer.clone(),
                token_endpoint: self.idp.token_endpoint.clone(),
            },
            &mut form,
            &mut headers,
        )?;
        let resp = ctx
            .http
            .post_form(&self.idp.token_endpoint, &form, &headers)
            .await?;
        if !resp.status.is_success() {
            let code = serde_json::from_slice::<serde_json::Value>(&resp.body)
                .ok()
                .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned));
            return Err(OAuthError::new(
                OAuthErrorKind::Token { code: code.clone() },
                format!(
                    "the IdP refused the token exchange: HTTP {} {}",
                    resp.status.as_u16(),
                    code.unwrap_or_default()
                ),
            ));
        }
        parse_id_jag_response(&resp.body)
            .map_err(|e| OAuthError::new(OAuthErrorKind::Token { code: None }, e.to_string()))
    }
}

impl Grant for EnterpriseManagedGrant {
    fn client(&self) -> Option<Arc<dyn ClientAuthentication>> {
        Some(self.id.client.clone())
    }

    fn obtain<'a>(
        &'a self,
        ctx: GrantContext<'a>,
    ) -> BoxFuture<'a, Result<TokenResponse, OAuthError>> {
        Box::pin(async move {
            self.id.check(&ctx)?;
            let scope = scope_param(&ctx);
            let id_jag = self.id_jag(&ctx, scope.as_deref()).await?;
            let form = jwt_bearer_form(&id_jag, scope.as_deref(), ctx.resource);
            self.id.exchange(&ctx, form).await
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn get<'a>(form: &'a Form, k: &str) -> Option<&'a str> {
        form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn client_credentials_form_has_grant_scope_and_resource() {
        let f = client_credentials_form(Some("a b"), "http://localhost:3000/mcp");
        assert_eq!(get(&f, "grant_type"), Some("client_credentials"));
        assert_eq!(get(&f, "scope"), Some("a b"));
        assert_eq!(get(&f, "resource"), Some("http://localhost:3000/mcp"));
        let f = client_credentials_form(None, "r");
        assert_eq!(get(&f, "scope"), None);
        let f = client_credentials_form(Some(""), "r");
        assert_eq!(get(&f, "scope"), None, "an empty scope is omitted");
    }

    #[test]
    fn jwt_bearer_form_carries_the_assertion() {
        let f = jwt_bearer_form("a.b.c", None, "https://mcp.example/mcp");
        assert_eq!(
            get(&f, "grant_type"),
            Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
        );
        assert_eq!(get(&f, "assertion"), Some("a.b.c"));
        assert_eq!(get(&f, "resource"), Some("https://mcp.example/mcp"));
        assert_eq!(get(&f, "client_id"), None);
    }

    #[test]
    fn id_jag_request_has_the_rfc8693_parameters() {
        let r = IdJagRequest {
            id_token: "id.tok.en".into(),
            audience: "http://as.example".into(),
            resource: "http://mcp.example/mcp".into(),
            scope: Some("s".into()),
        };
        let f = r.form();
        assert_eq!(
            get(&f, "grant_type"),
            Some("urn:ietf:params:oauth:grant-type:token-exchange")
        );
        assert_eq!(
            get(&f, "requested_token_type"),
            Some("urn:ietf:params:oauth:token-type:id-jag")
        );
        assert_eq!(
            get(&f, "subject_token_type"),
            Some("urn:ietf:params:oauth:token-type:id_token")
        );
        assert_eq!(get(&f, "subject_token"), Some("id.tok.en"));
        assert_eq!(get(&f, "audience"), Some("http://as.example"));
        assert_eq!(get(&f, "resource"), Some("http://mcp.example/mcp"));
        assert_eq!(get(&f, "scope"), Some("s"));
        assert!(!format!("{r:?}").contains("id.tok.en"), "token redacted");
    }

    #[test]
    fn id_jag_answer_is_checked() {
        let ok = br#"{"access_token":"h.p.s","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#;
        assert_eq!(parse_id_jag_response(ok).unwrap(), "h.p.s");
        for bad in [
            &br#"{"access_token":"h.p.s","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#[..],
            br#"{"access_token":"h.p.s"}"#,
            br#"{"issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}"#,
            br#"{"access_token":"opaque","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}"#,
            b"[1,2]",
            b"",
        ] {
            assert!(parse_id_jag_response(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
