//! An OAuth-protected MCP server (the demo server of `src/lib.rs` plus a
//! `whoami` tool) behind `ferromcp_auth::resource::AuthLayer`: bearer tokens are
//! required, checked by a JWT/JWKS verifier or by RFC 7662 introspection,
//! and the Protected Resource Metadata (RFC 9728) that tells clients where
//! to get a token is served at
//! `/.well-known/oauth-protected-resource/mcp`.
//!
//! Configuration (environment variables):
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `MCP_ISSUER` | the authorization server's issuer URL | required |
//! | `MCP_RESOURCE` | this server's URL, the audience tokens must carry | `http://127.0.0.1:8080/mcp` |
//! | `MCP_ADDR` | where to listen | `127.0.0.1:8080` |
//! | `MCP_SCOPES` | scopes every request needs, space-separated | `mcp` |
//! | `MCP_JWKS_URI` | JWT verification keys (else from the issuer's metadata) | |
//! | `MCP_INTROSPECTION_URL` | use RFC 7662 introspection instead of JWTs | |
//! | `MCP_CLIENT_ID`, `MCP_CLIENT_SECRET` | this server's credentials at the introspection endpoint | |
//! | `MCP_ALLOW_PLAIN_HTTP` | set (to anything) to reach an `http://` issuer, e.g. a local test one | HTTPS only |
//!
//! ```sh
//! MCP_ISSUER=https://auth.example.com cargo run -p ferromcp-examples --example oauth_server
//! curl -i -X POST http://127.0.0.1:8080/mcp          # 401 + WWW-Authenticate: Bearer resource_metadata=…
//! mcp login http://127.0.0.1:8080/mcp && mcp tools http://127.0.0.1:8080/mcp
//! ```
//!
//! `cargo test -p ferromcp-examples --example oauth_server` runs it against a
//! real (test) authorization server.
//!
//! Handlers see the caller as `cx.principal()` (subject, scopes, client id),
//! never the token. The `add` tool additionally needs the `mcp:math` scope
//! (a 403 `insufficient_scope` names it), to show per-tool scopes: the
//! bearer layer declares them and hands out `auth.scope_layer()`, RPC
//! middleware installed on the server (`ServerBuilder::layer`) that checks
//! each request after the server has read it.

use ferromcp_auth::resource::{
    AuthLayer, HyperFetch, IntrospectionVerifier, JwtVerifier, ResourceUri, ScopeLayer,
    TokenVerifier,
};
use ferromcp_server::transport::http::{HttpConfig, McpService, serve_layered};
use ferromcp_server::{NoArgs, RequestContext, Server, tool};
use std::sync::Arc;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The bearer layer configured from `var` (the environment in `main`).
fn auth_layer(var: impl Fn(&str) -> Option<String>) -> Result<(AuthLayer, ResourceUri), BoxError> {
    let issuer =
        var("MCP_ISSUER").ok_or("set MCP_ISSUER to the authorization server's issuer URL")?;
    let resource = ResourceUri::parse(
        &var("MCP_RESOURCE").unwrap_or_else(|| "http://127.0.0.1:8080/mcp".into()),
    )?;
    let scopes: Vec<String> = var("MCP_SCOPES")
        .unwrap_or_else(|| "mcp".into())
        .split_whitespace()
        .map(str::to_owned)
        .collect();

    let verifier = token_verifier(&var, &issuer, &resource)?;
    let auth = AuthLayer::builder(resource.clone(), verifier)
        .authorization_server(issuer)
        .require_scopes(scopes)
        .require_tool_scopes("add", ["mcp:math"])
        .build()?;
    Ok((auth, resource))
}

/// The token verifier: RFC 7662 introspection when `MCP_INTROSPECTION_URL`
/// is set, else signed JWTs checked with the issuer's keys.
fn token_verifier(
    var: &impl Fn(&str) -> Option<String>,
    issuer: &str,
    resource: &ResourceUri,
) -> Result<Box<dyn TokenVerifier>, BoxError> {
    // HTTPS only for the authorization server, unless told otherwise (a
    // local test issuer on http://127.0.0.1).
    let fetch = HyperFetch::new().allow_plain_http(var("MCP_ALLOW_PLAIN_HTTP").is_some());
    // Fail at start-up, not on the first request, when the issuer cannot
    // be reached under this policy.
    fetch.check_url(issuer)?;
    let fetch = Arc::new(fetch);
    let verifier: Box<dyn TokenVerifier> = match var("MCP_INTROSPECTION_URL") {
        Some(url) => {
            let id = var("MCP_CLIENT_ID").ok_or("MCP_INTROSPECTION_URL needs MCP_CLIENT_ID")?;
            let secret =
                var("MCP_CLIENT_SECRET").ok_or("MCP_INTROSPECTION_URL needs MCP_CLIENT_SECRET")?;
            Box::new(
                IntrospectionVerifier::builder(url, id, secret, resource)
                    .issuer(issuer)
                    .fetcher(fetch)
                    .build()?,
            )
        }
        None => {
            // Keys from MCP_JWKS_URI, else from the issuer's metadata.
            let mut b = JwtVerifier::builder(issuer, resource).fetcher(fetch);
            if let Some(jwks) = var("MCP_JWKS_URI") {
                b = b.jwks_uri(jwks);
            }
            Box::new(b.build()?)
        }
    };
    Ok(verifier)
}

/// The demo server's builder, plus a tool that reads the caller; `scopes`
/// (the bearer layer's `scope_layer()`) enforces the per-tool scopes.
fn server(scopes: ScopeLayer) -> Result<Server, ferromcp_server::Error> {
    ferromcp_examples::demo_builder()
        .tool(
            tool("whoami")
                .description("Who is calling, as the verified token says")
                .handler(|_: NoArgs, cx: RequestContext| async move {
                    match cx.principal() {
                        Some(p) => format!("{} (scopes: {})", p.subject, p.scopes.join(" ")),
                        None => "anonymous".to_owned(),
                    }
                }),
        )
        .layer(scopes)
        .build()
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let (auth, resource) = auth_layer(env)?;
    let addr = env("MCP_ADDR").unwrap_or_else(|| "127.0.0.1:8080".into());
    let mcp = McpService::new(server(auth.scope_layer())?, HttpConfig::default());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!(
        "oauth_server: {} on {addr} (Ctrl-C stops)",
        resource.as_str()
    );
    serve_layered(mcp, auth, listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! `cargo test -p ferromcp-examples --example oauth_server`: the example's
    //! configuration against a real (test) authorization server.
    use super::*;
    use ferromcp_client::ClientBuilder;
    use ferromcp_test_issuer::AuthServer;
    use std::collections::HashMap;

    type TestResult = Result<(), BoxError>;

    // Two workers: the issuer, the verifier's key fetches and the MCP
    // server all run on this runtime.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tokens_from_the_issuer_are_required_and_scoped() -> TestResult {
        let issuer = AuthServer::start().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/mcp", listener.local_addr()?);
        let vars = HashMap::from([
            ("MCP_ISSUER", issuer.url.clone()),
            ("MCP_RESOURCE", url.clone()),
            ("MCP_ALLOW_PLAIN_HTTP", "1".to_owned()),
        ]);
        let (auth, _) = auth_layer(|k| vars.get(k).cloned())?;
        let mcp = McpService::new(server(auth.scope_layer())?, HttpConfig::default());
        tokio::spawn(serve_layered(mcp, auth, listener, std::future::pending()));

        // No token: 401 at connect.
        let err = ClientBuilder::new("t", "1").connect_url(&url).await.err();
        assert!(
            err.as_ref().is_some_and(|e| e.status() == Some(401)),
            "{err:?}"
        );

        // A token for this resource with the `mcp` scope.
        let client = ClientBuilder::new("t", "1")
            .bearer_token(&issuer.mint(&url, "mcp"))
            .connect_url(&url)
            .await?;
        let r = client.call_tool("whoami", None).await?;
        let text = r
            .content
            .first()
            .and_then(|b| b.as_text())
            .unwrap_or_default();
        assert_eq!(text, "mallory (scopes: mcp)");
        // `add` needs `mcp:math` too: 403 insufficient_scope.
        let args = serde_json::json!({"a": 1, "b": 2});
        let err = client
            .call_tool("add", args.as_object().cloned())
            .await
            .err();
        assert!(
            err.as_ref().is_some_and(|e| e.status() == Some(403)),
            "{err:?}"
        );
        client.close().await;

        // With both scopes, `add` works.
        let client = ClientBuilder::new("t", "1")
            .bearer_token(&issuer.mint(&url, "mcp mcp:math"))
            .connect_url(&url)
            .await?;
        let r = client.call_tool("add", args.as_object().cloned()).await?;
        assert_eq!(r.structured_content, Some(serde_json::json!({"sum": 3})));
        client.close().await;

        // A token minted for another resource is refused.
        let err = ClientBuilder::new("t", "1")
            .bearer_token(&issuer.mint("http://elsewhere.example/mcp", "mcp"))
            .connect_url(&url)
            .await
            .err();
        assert!(
            err.as_ref().is_some_and(|e| e.status() == Some(401)),
            "{err:?}"
        );
        Ok(())
    }
}
