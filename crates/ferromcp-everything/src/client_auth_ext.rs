//! The authorization *extension* scenarios of the conformance suite (not
//! scored): included by the `everything-client` binary.
//!
//! | scenario | how the token is obtained |
//! |---|---|
//! | `auth/client-credentials-basic` | `client_credentials`, `client_secret_basic` (SEP-1046) |
//! | `auth/client-credentials-jwt` | `client_credentials`, `private_key_jwt` ES256 (RFC 7523 §2.2) |
//! | `auth/enterprise-managed-authorization` | RFC 8693 ID-JAG exchange at the IdP, then RFC 7523 JWT bearer (SEP-990) |
//! | `auth/wif-jwt-bearer` | RFC 7523 JWT bearer with the workload JWT (SEP-1933) |
//! | `auth/dpop`, `auth/dpop-nonce` | authorization code + PKCE with DPoP proofs and nonces (RFC 9449, SEP-1932) |
//!
//! Credentials come from `MCP_CONFORMANCE_CONTEXT`. After authorization the
//! flow is the common one: `tools/list`, then `tools/call` of the first
//! tool. A refused grant ends the run (no retry, no other grant type).

use ferromcp_auth::client::client_auth::CLIENT_SECRET_BASIC;
use ferromcp_auth::client::grants::fixed_credential;
use ferromcp_auth::client::{
    ClientCredentialsGrant, ClientSecret, DpopProver, EnterpriseManagedGrant,
    HeadlessAuthorization, HttpClient, IdentityProvider, JwtBearerGrant, NetPolicy, OAuthClient,
    OAuthClientBuilder, PrivateKeyJwt,
};
use ferromcp_client::{ClientBuilder, EraPreference};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The scenarios this module runs.
pub(crate) fn handles(scenario: &str) -> bool {
    matches!(
        scenario,
        "auth/client-credentials-basic"
            | "auth/client-credentials-jwt"
            | "auth/enterprise-managed-authorization"
            | "auth/wif-jwt-bearer"
            | "auth/dpop"
            | "auth/dpop-nonce"
    )
}

fn context() -> Result<Value, String> {
    let raw = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .map_err(|_| "MCP_CONFORMANCE_CONTEXT is not set".to_owned())?;
    serde_json::from_str(&raw).map_err(|e| format!("MCP_CONFORMANCE_CONTEXT is not JSON: {e}"))
}

fn field<'a>(ctx: &'a Value, name: &str) -> Result<&'a str, String> {
    ctx.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("MCP_CONFORMANCE_CONTEXT lacks {name:?}"))
}

fn basic(client_id: &str, secret: &str) -> Arc<ClientSecret> {
    Arc::new(ClientSecret {
        client_id: client_id.to_owned(),
        client_secret: Some(secret.to_owned()),
        method: CLIENT_SECRET_BASIC.to_owned(),
    })
}

/// The OAuth client configured for `scenario`. The mock servers listen on
/// localhost over plain HTTP, so loopback destinations are allowed.
fn oauth_for(scenario: &str, url: &str) -> Result<OAuthClient, String> {
    let http = HttpClient::new(NetPolicy::loopback_allowed());
    let builder: OAuthClientBuilder = OAuthClient::builder(url).http_client(http.clone());
    let builder = match scenario {
        "auth/client-credentials-basic" => {
            let ctx = context()?;
            let client = basic(field(&ctx, "client_id")?, field(&ctx, "client_secret")?);
            builder.grant(Arc::new(ClientCredentialsGrant::new(client)))
        }
        "auth/client-credentials-jwt" => {
            let ctx = context()?;
            let alg = ctx
                .get("signing_algorithm")
                .and_then(Value::as_str)
                .unwrap_or("ES256");
            if alg != "ES256" {
                return Err(format!(
                    "unsupported signing_algorithm {alg:?} (ES256 only)"
                ));
            }
            let client =
                PrivateKeyJwt::from_pem(field(&ctx, "client_id")?, field(&ctx, "private_key_pem")?)
                    .map_err(|e| e.to_string())?;
            builder.grant(Arc::new(ClientCredentialsGrant::new(Arc::new(client))))
        }
        "auth/enterprise-managed-authorization" => {
            let ctx = context()?;
            let client = basic(field(&ctx, "client_id")?, field(&ctx, "client_secret")?);
            let idp = IdentityProvider {
                issuer: field(&ctx, "idp_issuer")?.to_owned(),
                token_endpoint: field(&ctx, "idp_token_endpoint")?.to_owned(),
                client: Arc::new(ClientSecret::public(field(&ctx, "idp_client_id")?)),
            };
            let id_token = fixed_credential(field(&ctx, "idp_id_token")?);
            builder.grant(Arc::new(EnterpriseManagedGrant::new(client, idp, id_token)))
        }
        "auth/wif-jwt-bearer" => {
            let ctx = context()?;
            // Only the valid workload JWT is presented; the context's
            // wrong-audience and expired ones exist to be left alone.
            let grant = JwtBearerGrant::new(
                field(&ctx, "client_id")?,
                fixed_credential(field(&ctx, "valid_jwt")?),
            );
            builder.grant(Arc::new(grant))
        }
        "auth/dpop" | "auth/dpop-nonce" => {
            let prover = DpopProver::generate().map_err(|e| e.to_string())?;
            builder
                .authorization_handler(Arc::new(HeadlessAuthorization::new(http)))
                .proof(Arc::new(prover))
        }
        other => return Err(format!("not an extension scenario: {other}")),
    };
    builder.build().map_err(|e| e.to_string())
}

/// Authorizes as `scenario` says, then lists tools and calls the first.
pub(crate) async fn run(scenario: &str, version: &str, url: &str) -> Result<(), String> {
    let oauth = Arc::new(oauth_for(scenario, url)?);
    let era = if version == "2026-07-28" {
        EraPreference::ModernNoProbe
    } else {
        EraPreference::Handshake
    };
    let client = ClientBuilder::new("mcp-rs-everything-client", env!("CARGO_PKG_VERSION"))
        .era(era)
        .request_timeout(Duration::from_secs(20))
        .http_auth(oauth)
        .connect_url(url)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let result = async {
        let tools = client
            .list_tools()
            .await
            .map_err(|e| format!("tools/list: {e}"))?;
        if let Some(t) = tools.first() {
            let r = client
                .call_tool(&t.name, None)
                .await
                .map_err(|e| format!("tools/call {}: {e}", t.name))?;
            eprintln!("tools/call {}: isError={:?}", t.name, r.is_error);
        }
        Ok(())
    }
    .await;
    client.close().await;
    result
}
