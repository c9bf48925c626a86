//! An OAuth-protected MCP server (the demo server of `src/lib.rs` plus a
//! `whoami` tool) behind `mcp_auth::resource::AuthLayer`: bearer tokens are
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
//!
//! ```sh
//! MCP_ISSUER=https://auth.example.com cargo run -p mcp-examples --example oauth_server
//! curl -i -X POST http://127.0.0.1:8080/mcp          # 401 + WWW-Authenticate: Bearer resource_metadata=…
//! mcp login http://127.0.0.1:8080/mcp && mcp tools http://127.0.0.1:8080/mcp
//! ```
//!
//! Handlers see the caller as `cx.principal()` (subject, scopes, client id),
//! never the token. The `add` tool additionally needs the `mcp:math` scope
//! (a 403 `insufficient_scope` names it), to show per-tool scopes.

use mcp_auth::resource::{
    AuthLayer, IntrospectionVerifier, JwtVerifier, ResourceUri, TokenVerifier,
};
use mcp_server::transport::http::{HttpConfig, McpService, serve_layered};
use mcp_server::{NoArgs, RequestContext, tool};

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let issuer =
        env("MCP_ISSUER").ok_or("set MCP_ISSUER to the authorization server's issuer URL")?;
    let resource = ResourceUri::parse(
        &env("MCP_RESOURCE").unwrap_or_else(|| "http://127.0.0.1:8080/mcp".into()),
    )?;
    let addr = env("MCP_ADDR").unwrap_or_else(|| "127.0.0.1:8080".into());
    let scopes: Vec<String> = env("MCP_SCOPES")
        .unwrap_or_else(|| "mcp".into())
        .split_whitespace()
        .map(str::to_owned)
        .collect();

    let verifier: Box<dyn TokenVerifier> = match env("MCP_INTROSPECTION_URL") {
        Some(url) => {
            let id = env("MCP_CLIENT_ID").ok_or("MCP_INTROSPECTION_URL needs MCP_CLIENT_ID")?;
            let secret =
                env("MCP_CLIENT_SECRET").ok_or("MCP_INTROSPECTION_URL needs MCP_CLIENT_SECRET")?;
            Box::new(
                IntrospectionVerifier::builder(url, id, secret, &resource)
                    .issuer(issuer.clone())
                    .build()?,
            )
        }
        None => {
            let mut b = JwtVerifier::builder(issuer.clone(), &resource);
            if let Some(jwks) = env("MCP_JWKS_URI") {
                b = b.jwks_uri(jwks);
            }
            Box::new(b.build()?)
        }
    };
    let auth = AuthLayer::builder(resource.clone(), verifier)
        .authorization_server(issuer)
        .require_scopes(scopes)
        .require_tool_scopes("add", ["mcp:math"])
        .build()?;

    // The demo server's builder, plus a tool that reads the caller.
    let server = mcp_examples::demo_builder()
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
        .build()?;
    let mcp = McpService::new(server, HttpConfig::default());
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
