//! The whole OAuth 2.1 story over real HTTP on 127.0.0.1, every party ours
//! except the authorization server, which is a small but real one
//! (`ferromcp-test-issuer`, shared with the CLI's `mcp login` tests):
//!
//! - the authorization server: RFC 8414 metadata, RFC 7591 dynamic client
//!   registration, an authorization endpoint that approves at once and
//!   redirects with `code`, `state` and `iss` (RFC 9207), a token endpoint
//!   that checks PKCE S256, `redirect_uri`, `resource` and client
//!   authentication, rotates refresh tokens, serves `client_credentials`
//!   with `private_key_jwt` and RFC 7523 JWT-bearer grants (workload JWTs
//!   and enterprise ID-JAGs), binds tokens to a DPoP key when the request
//!   carries a valid proof, and issues ES256 JWTs whose `aud` is the
//!   requested resource; plus its JWKS and an enterprise IdP's RFC 8693
//!   token-exchange endpoint;
//! - an MCP server (`ferromcp_server::Server`) behind `ferromcp-auth`'s `AuthLayer`
//!   with a `JwtVerifier` reading that JWKS;
//! - `ferromcp-client` with `ferromcp-auth`'s `OAuthClient` (headless authorization).
//!
//! Covers the 401 with `resource_metadata` and discovery, DCR with
//! `application_type`, scopes (403 insufficient_scope, step-up), tokens on
//! every request (audience checked), `resource` in both requests, PKCE,
//! `iss`, `state`, refresh with rotation and
//! the principal reaching handlers; plus the extension grants
//! (client_credentials with private_key_jwt, SEP-1046; workload JWT bearer,
//! SEP-1933; enterprise-managed authorization, SEP-990) and DPoP-bound
//! tokens end to end (RFC 9449, SEP-1932).
// AUTH-04/05, AUTH-10/13, AUTH-17/18/19, AUTH-20/21, AUTH-22, AUTH-23, AUTH-24/25, AUTH-26,
// AUTH-27

#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use ferromcp_test_issuer::{AuthServer, Key, RegisteredClient, now};
use http_body_util::Full;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;

// ---------------------------------------------------------------------------
// The MCP server behind AuthLayer.

use ferromcp_auth::BearerChallenge;
use ferromcp_auth::client::grants::fixed_credential;
use ferromcp_auth::client::{
    ClientCredentialsGrant, ClientSecret, DpopProver, EnterpriseManagedGrant, Es256Key,
    IdentityProvider, JwtBearerGrant, PrivateKeyJwt,
};
use ferromcp_auth::client::{
    HeadlessAuthorization, HttpClient, NetPolicy, OAuthClient, OAuthClientBuilder,
};
use ferromcp_auth::resource::{
    AuthLayer, DpopPolicy, HyperFetch, JwtVerifier, ResourceUri, ScopeLayer,
};
use ferromcp_server::transport::http::{HttpConfig, McpService, serve_layered};
use ferromcp_server::{NoArgs, RequestContext, Server, tool};
use std::net::SocketAddr;
use std::time::Duration;

struct Rs {
    addr: SocketAddr,
    resource: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Rs {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

fn ferromcp_server(scopes: ScopeLayer) -> Server {
    Server::builder("secured", "1.0.0")
        .tool(tool("whoami").description("Who is calling").handler(
            |_: NoArgs, cx: RequestContext| async move {
                let p = cx.principal().cloned().unwrap_or_default();
                let token_visible = cx
                    .http_parts()
                    .is_some_and(|h| h.headers.contains_key("authorization"));
                format!(
                    "subject={} client={} scopes={} token-visible={token_visible}",
                    p.subject,
                    p.client_id.unwrap_or_default(),
                    p.scopes.join(",")
                )
            },
        ))
        .tool(
            tool("admin")
                .description("Needs the admin scope")
                .handler(|_: NoArgs, _cx: RequestContext| async move { "admin done" }),
        )
        // AUTH-18: the per-tool scopes, on the server's middleware seam.
        .layer(scopes)
        .build()
        .expect("server")
}

async fn start_rs(issuer: &str, dpop: Option<DpopPolicy>) -> Rs {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let resource = ResourceUri::parse(&format!("http://{addr}/mcp")).expect("resource");
    let verifier = JwtVerifier::builder(issuer, &resource)
        .fetcher(Arc::new(HyperFetch::new().allow_plain_http(true)))
        .jwks_refetch_interval(Duration::ZERO)
        .clock_skew(Duration::ZERO)
        .build()
        .expect("verifier");
    let mut auth = AuthLayer::builder(resource.clone(), verifier)
        .authorization_server(issuer)
        .require_scopes(["mcp"])
        .require_tool_scopes("admin", ["admin"])
        .scopes_supported(["mcp", "admin"]);
    if let Some(policy) = dpop {
        auth = auth.dpop(policy);
    }
    let auth = auth.build().expect("layer");
    let mcp = McpService::new(ferromcp_server(auth.scope_layer()), HttpConfig::default());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = serve_layered(mcp, auth, listener, async {
            let _ = rx.await;
        })
        .await;
    });
    Rs {
        addr,
        resource: resource.to_string(),
        stop: Some(tx),
    }
}

/// The authorization server and the MCP server, wired together.
async fn setup() -> (Arc<AuthServer>, Rs) {
    let auth = AuthServer::start().await;
    let rs = start_rs(&auth.url, None).await;
    (auth, rs)
}

fn oauth(rs: &Rs) -> OAuthClientBuilder {
    let http = HttpClient::new(NetPolicy::loopback_allowed());
    OAuthClient::builder(rs.resource.clone())
        .http_client(http.clone())
        .authorization_handler(Arc::new(
            HeadlessAuthorization::new(http).redirect_uri("http://127.0.0.1:53682/callback"),
        ))
        .refresh_skew(Duration::ZERO)
}

async fn connect(rs: &Rs, oauth: Arc<OAuthClient>) -> ferromcp_client::Client {
    ferromcp_client::ClientBuilder::new("e2e", "1.0.0")
        .era(ferromcp_client::EraPreference::ModernNoProbe)
        .http_auth(oauth)
        .connect_url(&rs.resource)
        .await
        .expect("connect")
}

async fn call_text(
    c: &ferromcp_client::Client,
    tool: &str,
) -> Result<String, ferromcp_client::Error> {
    let r = c.call_tool(tool, None).await?;
    Ok(r.content
        .iter()
        .filter_map(|b| match b {
            ferromcp_client::protocol::types::ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect())
}

/// A raw HTTP exchange with the MCP server.
async fn raw_call(rs: &Rs, tool: &str, authorization: Option<&str>) -> (u16, http::HeaderMap) {
    raw_call_with(rs, tool, authorization, &[]).await
}

async fn raw_call_with(
    rs: &Rs,
    tool: &str,
    authorization: Option<&str>,
    extra: &[(&str, &str)],
) -> (u16, http::HeaderMap) {
    let stream = tokio::net::TcpStream::connect(rs.addr)
        .await
        .expect("connect");
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(conn);
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":{},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
    let mut b = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", rs.addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool);
    if let Some(a) = authorization {
        b = b.header("authorization", a);
    }
    for (n, v) in extra {
        b = b.header(*n, *v);
    }
    let resp = sender
        .send_request(
            b.body(Full::new(Bytes::from(body.to_string())))
                .expect("request"),
        )
        .await
        .expect("send");
    (resp.status().as_u16(), resp.headers().clone())
}

fn challenge(headers: &http::HeaderMap) -> BearerChallenge {
    let h = headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    BearerChallenge::parse(h).unwrap_or_else(|| panic!("no Bearer challenge in {h:?}"))
}

// ---------------------------------------------------------------------------
// The cases.

// AUTH-04/AUTH-16
/// A request without a token is refused with a challenge
/// naming the metadata document and the scopes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_request_gets_401_with_resource_metadata() {
    let (_as, rs) = setup().await;
    let (status, headers) = raw_call(&rs, "whoami", None).await;
    assert_eq!(status, 401);
    let c = challenge(&headers);
    assert_eq!(
        c.resource_metadata.as_deref(),
        Some(
            format!(
                "http://{}/.well-known/oauth-protected-resource/mcp",
                rs.addr
            )
            .as_str()
        )
    );
    assert_eq!(c.scope, ["mcp"]);
}

// AUTH-21
/// The authorization-code flow end to end: discovery, DCR, PKCE, state,
/// iss, resource, then a tool call whose handler sees the principal but
/// not the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_completes_the_flow_and_the_principal_reaches_the_handler() {
    let (authz, rs) = setup().await;
    let oauth = Arc::new(oauth(&rs).build().expect("oauth"));
    let client = connect(&rs, oauth.clone()).await;
    let text = call_text(&client, "whoami").await.expect("whoami");
    let log = authz.log.lock().unwrap();
    let client_id = log.authorize[0]["client_id"].clone();
    assert_eq!(
        text,
        format!("subject=alice client={client_id} scopes=mcp token-visible=false")
    );
    // AUTH-13: DCR with application_type.
    assert_eq!(log.register.len(), 1);
    assert_eq!(log.register[0]["application_type"], "native");
    // One authorization, scoped by the challenge (AUTH-17), with PKCE
    // S256, state and resource (AUTH-22/23/26).
    assert_eq!(log.authorize.len(), 1);
    let a = &log.authorize[0];
    assert_eq!(a["scope"], "mcp");
    assert_eq!(a["code_challenge_method"], "S256");
    assert!(a["state"].len() >= 16);
    assert_eq!(a["resource"], rs.resource);
    let (tok, _) = &log.token[0];
    assert_eq!(tok["grant_type"], "authorization_code");
    assert_eq!(tok["resource"], rs.resource);
    assert!(tok["code_verifier"].len() >= 43);
}

// AUTH-18/19
/// A tool needing another scope answers 403
/// insufficient_scope; the client re-authorizes with the union of scopes
/// and the call succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_scope_triggers_step_up() {
    let (authz, rs) = setup().await;
    // Without a token, "admin" is refused with both scopes named.
    let (status, headers) = raw_call(&rs, "admin", None).await;
    assert_eq!(status, 401);
    assert_eq!(challenge(&headers).scope, ["mcp", "admin"]);
    // With an mcp-only token: 403 insufficient_scope.
    let mcp_only = authz.mint(&rs.resource, "mcp");
    let (status, headers) = raw_call(&rs, "admin", Some(&format!("Bearer {mcp_only}"))).await;
    assert_eq!(status, 403);
    let c = challenge(&headers);
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scope, ["mcp", "admin"]);

    let oauth = Arc::new(oauth(&rs).build().expect("oauth"));
    let client = connect(&rs, oauth).await;
    assert!(
        call_text(&client, "whoami")
            .await
            .expect("whoami")
            .contains("scopes=mcp ")
    );
    assert_eq!(
        call_text(&client, "admin").await.expect("admin"),
        "admin done"
    );
    let log = authz.log.lock().unwrap();
    assert_eq!(log.authorize.len(), 2, "one step-up");
    let mut second: Vec<&str> = log.authorize[1]["scope"].split(' ').collect();
    second.sort_unstable();
    assert_eq!(second, ["admin", "mcp"]);
    assert_eq!(log.register.len(), 1, "the registration is reused");
}

// AUTH-27
/// An expired access token is refreshed with the (rotated)
/// refresh token, without a new authorization.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_token_is_refreshed() {
    let (authz, rs) = setup().await;
    // Expiry is judged in whole seconds of the wall clock (`expires_in` is
    // seconds), so a token issued at S.9 with a 1 s lifetime counts as
    // expired from S+1.0: 100 ms later. With 1 s this test refreshed early
    // whenever the first call crossed a second boundary (it did under load).
    // LIFETIME leaves the first call LIFETIME-1 s of margin, and the sleep
    // is past LIFETIME+1 s, so both phases hold however slow the machine.
    const LIFETIME: u64 = 5;
    authz.lifetime.store(LIFETIME, Ordering::SeqCst);
    let oauth = Arc::new(oauth(&rs).build().expect("oauth"));
    let issued = std::time::Instant::now();
    let client = connect(&rs, oauth).await;
    call_text(&client, "whoami").await.expect("first call");
    let early = authz.grants("refresh_token");
    if issued.elapsed() < Duration::from_secs(LIFETIME - 1) {
        assert_eq!(early, 0, "refreshed a token that had not expired");
    }
    authz.lifetime.store(300, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(LIFETIME * 1000 + 1100)).await;
    let text = call_text(&client, "whoami").await.expect("after expiry");
    assert!(text.starts_with("subject=alice"), "{text}");
    assert_eq!(authz.grants("refresh_token"), early + 1);
    assert_eq!(authz.grants("authorization_code"), 1);
    assert_eq!(authz.log.lock().unwrap().authorize.len(), 1);
    // The refresh request named the resource (AUTH-22).
    let log = authz.log.lock().unwrap();
    let (refresh, _) = log
        .token
        .iter()
        .find(|(f, _)| f["grant_type"] == "refresh_token")
        .expect("refresh");
    assert_eq!(refresh["resource"], rs.resource);
}

// AUTH-21
/// A token minted by the right issuer for another resource is
/// refused, and so is one for this resource signed by another key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_for_another_audience_are_rejected() {
    let (authz, rs) = setup().await;
    let good = authz.mint(&rs.resource, "mcp");
    let (status, _) = raw_call(&rs, "whoami", Some(&format!("Bearer {good}"))).await;
    assert_eq!(status, 200, "control: the right audience passes");
    let other = authz.mint("http://127.0.0.1:1/mcp", "mcp");
    let (status, headers) = raw_call(&rs, "whoami", Some(&format!("Bearer {other}"))).await;
    assert_eq!(status, 401);
    assert_eq!(challenge(&headers).error.as_deref(), Some("invalid_token"));
    let forged = Key::generate().sign(&json!({
        "iss": authz.url, "aud": rs.resource, "sub": "eve", "scope": "mcp",
        "iat": now(), "exp": now() + 300,
    }));
    let (status, _) = raw_call(&rs, "whoami", Some(&format!("Bearer {forged}"))).await;
    assert_eq!(status, 401);
}

/// SEP-1046: client_credentials with a private_key_jwt assertion; the grant
/// brings its own identity, so nothing is registered and no user is
/// involved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_with_private_key_jwt() {
    let (authz, rs) = setup().await;
    let key = Es256Key::generate().expect("key");
    authz.clients.lock().unwrap().insert(
        "svc".into(),
        RegisteredClient {
            redirect_uris: Vec::new(),
            jwk: Some(serde_json::to_value(key.public_jwk()).expect("jwk")),
        },
    );
    let grant = ClientCredentialsGrant::new(Arc::new(PrivateKeyJwt::new("svc", key)))
        .only_for_issuer(authz.url.clone());
    let oauth = Arc::new(oauth(&rs).grant(Arc::new(grant)).build().expect("oauth"));
    let client = connect(&rs, oauth).await;
    let text = call_text(&client, "whoami").await.expect("whoami");
    assert_eq!(
        text,
        "subject=svc client=svc scopes=mcp token-visible=false"
    );
    let log = authz.log.lock().unwrap();
    assert!(log.register.is_empty() && log.authorize.is_empty());
    let (f, _) = &log.token[0];
    assert_eq!(f["grant_type"], "client_credentials");
    assert_eq!(f["resource"], rs.resource);
    assert_eq!(f["scope"], "mcp");
}

// AUTH-14
/// A grant bound to one issuer refuses to present its
/// credentials to another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grant_credentials_stay_with_their_issuer() {
    let (authz, rs) = setup().await;
    let key = Es256Key::generate().expect("key");
    let grant = ClientCredentialsGrant::new(Arc::new(PrivateKeyJwt::new("svc", key)))
        .only_for_issuer("https://other-issuer.example");
    let oauth = Arc::new(oauth(&rs).grant(Arc::new(grant)).build().expect("oauth"));
    let client = ferromcp_client::ClientBuilder::new("e2e", "1.0.0")
        .era(ferromcp_client::EraPreference::ModernNoProbe)
        .http_auth(oauth)
        .connect_url(&rs.resource)
        .await;
    let err = match client {
        Err(e) => e,
        Ok(c) => call_text(&c, "whoami").await.expect_err("must fail"),
    };
    assert!(err.is_auth(), "{err}");
    assert!(
        authz.log.lock().unwrap().token.is_empty(),
        "no token request"
    );
}

/// RFC 9449 end to end: the token request carries a proof, the AS binds
/// the token to the key (`cnf.jkt`, `token_type: DPoP`), and the MCP
/// server accepts it only as `Authorization: DPoP` with a fresh proof
/// carrying `ath`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpop_bound_tokens_end_to_end() {
    let authz = AuthServer::start().await;
    let rs = start_rs(&authz.url, Some(DpopPolicy::default())).await;
    let prover = Arc::new(DpopProver::generate().expect("key"));
    let oauth = Arc::new(oauth(&rs).proof(prover.clone()).build().expect("oauth"));
    let client = connect(&rs, oauth.clone()).await;
    let text = call_text(&client, "whoami").await.expect("whoami");
    assert!(text.starts_with("subject=alice"), "{text}");
    // The token request carried a proof; the token is bound to our key.
    let (_, proof) = authz.log.lock().unwrap().token[0].clone();
    assert!(proof.is_some(), "DPoP proof at the token endpoint");
    let token = oauth.token().await.expect("token");
    assert_eq!(token.token_type, "DPoP");
    let payload: Value = serde_json::from_slice(
        &ferromcp_protocol::base64::url_decode(
            token
                .access_token
                .split('.')
                .nth(1)
                .expect("jwt")
                .as_bytes(),
        )
        .expect("b64"),
    )
    .expect("json");
    assert_eq!(payload["cnf"]["jkt"], prover.jkt());

    // The same token as a bearer token is refused (RFC 9449 §7.2).
    let at = token.access_token.clone();
    let (status, headers) = raw_call(&rs, "whoami", Some(&format!("Bearer {at}"))).await;
    assert_eq!(status, 401);
    assert_eq!(challenge(&headers).error.as_deref(), Some("invalid_token"));
    // As DPoP with a fresh proof: accepted; the same proof again: replay.
    let url = rs.resource.clone();
    let proof = prover.proof("POST", &url, Some(&at)).expect("proof");
    let auth = format!("DPoP {at}");
    let (status, _) = raw_call_with(&rs, "whoami", Some(&auth), &[("dpop", &proof)]).await;
    assert_eq!(status, 200);
    let (status, headers) = raw_call_with(&rs, "whoami", Some(&auth), &[("dpop", &proof)]).await;
    assert_eq!(status, 401);
    let dpop_challenge = headers
        .get_all("www-authenticate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("DPoP"))
        .expect("DPoP challenge")
        .to_owned();
    assert!(
        dpop_challenge.contains("invalid_dpop_proof"),
        "{dpop_challenge}"
    );
    // A proof without ath, or from another key, or none at all: refused.
    let no_ath = prover.proof("POST", &url, None).expect("proof");
    let other = DpopProver::generate()
        .expect("key")
        .proof("POST", &url, Some(&at))
        .expect("proof");
    for p in [no_ath.as_str(), other.as_str()] {
        let (status, _) = raw_call_with(&rs, "whoami", Some(&auth), &[("dpop", p)]).await;
        assert_eq!(status, 401);
    }
    assert_eq!(raw_call(&rs, "whoami", Some(&auth)).await.0, 401);
    // An unbound token presented with the DPoP scheme is refused too.
    let unbound = authz.mint(&rs.resource, "mcp");
    let p = prover.proof("POST", &url, Some(&unbound)).expect("proof");
    let (status, _) = raw_call_with(
        &rs,
        "whoami",
        Some(&format!("DPoP {unbound}")),
        &[("dpop", &p)],
    )
    .await;
    assert_eq!(status, 401);
}

fn workload_jwt(authz: &AuthServer, exp: u64) -> String {
    authz.workload_key.sign_typ(
        "JWT",
        &json!({"iss": "https://workload-issuer.example", "sub": "spiffe://example/ns/app",
                "aud": authz.url, "iat": now(), "exp": exp}),
    )
}

/// SEP-1933: the workload's JWT is the grant; no registration, no user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_identity_jwt_bearer_grant() {
    let (authz, rs) = setup().await;
    let jwt = workload_jwt(&authz, now() + 300);
    let grant = JwtBearerGrant::new("workload-1", fixed_credential(jwt.clone()));
    let oauth = Arc::new(oauth(&rs).grant(Arc::new(grant)).build().expect("oauth"));
    let client = connect(&rs, oauth).await;
    let text = call_text(&client, "whoami").await.expect("whoami");
    assert_eq!(
        text,
        "subject=spiffe://example/ns/app client=workload-1 scopes=mcp token-visible=false"
    );
    let log = authz.log.lock().unwrap();
    assert!(log.register.is_empty() && log.authorize.is_empty());
    let (f, _) = &log.token[0];
    assert_eq!(
        f["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(f["assertion"], jwt);
    assert_eq!(f["resource"], rs.resource);
}

/// SEP-1933: a refused assertion is surfaced as an authorization error,
/// once: no retry and no fallback to another grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_workload_assertion_is_final() {
    let (authz, rs) = setup().await;
    let expired = workload_jwt(&authz, now().saturating_sub(60));
    let grant = JwtBearerGrant::new("workload-1", fixed_credential(expired));
    let oauth = Arc::new(oauth(&rs).grant(Arc::new(grant)).build().expect("oauth"));
    let client = ferromcp_client::ClientBuilder::new("e2e", "1.0.0")
        .era(ferromcp_client::EraPreference::ModernNoProbe)
        .http_auth(oauth)
        .connect_url(&rs.resource)
        .await;
    let err = match client {
        Err(e) => e,
        Ok(c) => call_text(&c, "whoami").await.expect_err("must fail"),
    };
    assert!(err.is_auth(), "{err}");
    assert!(err.to_string().contains("invalid_grant"), "{err}");
    let log = authz.log.lock().unwrap();
    assert_eq!(log.token.len(), 1, "exactly one token request");
    assert!(log.authorize.is_empty() && log.register.is_empty());
}

/// SEP-990: ID token → ID-JAG at the IdP (RFC 8693), then the ID-JAG as a
/// JWT-bearer grant with the client's own credentials (RFC 7523).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enterprise_managed_authorization() {
    let (authz, rs) = setup().await;
    let id_token = authz.idp_key.sign_typ(
        "JWT",
        &json!({"iss": format!("{}/idp", authz.url), "sub": "bob@corp.example", "aud": "idp-client",
                "iat": now(), "exp": now() + 300}),
    );
    let idp = IdentityProvider {
        issuer: format!("{}/idp", authz.url),
        token_endpoint: format!("{}/idp/token", authz.url),
        client: Arc::new(ClientSecret::public("idp-client")),
    };
    let client_auth = Arc::new(ClientSecret {
        client_id: "ema-client".into(),
        client_secret: Some("ema-secret".into()),
        method: "client_secret_basic".into(),
    });
    let grant = EnterpriseManagedGrant::new(client_auth, idp, fixed_credential(id_token))
        .only_for_issuer(authz.url.clone());
    let oauth = Arc::new(oauth(&rs).grant(Arc::new(grant)).build().expect("oauth"));
    let client = connect(&rs, oauth).await;
    let text = call_text(&client, "whoami").await.expect("whoami");
    assert_eq!(
        text,
        "subject=bob@corp.example client=ema-client scopes=mcp token-visible=false"
    );
    let log = authz.log.lock().unwrap();
    assert_eq!(log.idp.len(), 1);
    assert_eq!(log.idp[0]["audience"], authz.url);
    assert_eq!(log.idp[0]["resource"], rs.resource);
    assert_eq!(log.idp[0]["client_id"], "idp-client");
    let (f, _) = &log.token[0];
    assert_eq!(
        f["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert!(log.register.is_empty() && log.authorize.is_empty());
}

/// RFC 9449 §9: the MCP server demands its own nonce; the client picks it
/// up from the `use_dpop_nonce` challenge and retries once per request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpop_server_nonce_is_honoured() {
    let authz = AuthServer::start().await;
    let policy = DpopPolicy {
        nonce_lifetime: Some(Duration::from_secs(300)),
        ..DpopPolicy::default()
    };
    let rs = start_rs(&authz.url, Some(policy)).await;
    let prover = Arc::new(DpopProver::generate().expect("key"));
    let oauth = Arc::new(oauth(&rs).proof(prover.clone()).build().expect("oauth"));
    let client = connect(&rs, oauth.clone()).await;
    let text = call_text(&client, "whoami").await.expect("whoami");
    assert!(text.starts_with("subject=alice"), "{text}");
    // The nonce is remembered for the MCP server's origin only.
    let nonce = prover.nonce_for(&rs.resource).expect("RS nonce");
    assert!(prover.nonce_for(&authz.url).is_none());
    // A proof without it is refused with a fresh DPoP-Nonce.
    let at = oauth.token().await.expect("token").access_token;
    let p = prover
        .proof("POST", &rs.resource, Some(&at))
        .expect("proof");
    let (status, _) =
        raw_call_with(&rs, "whoami", Some(&format!("DPoP {at}")), &[("dpop", &p)]).await;
    assert_eq!(status, 200, "the remembered nonce is accepted");
    prover.record_nonce(&rs.resource, "stale-nonce");
    let p = prover
        .proof("POST", &rs.resource, Some(&at))
        .expect("proof");
    let (status, headers) =
        raw_call_with(&rs, "whoami", Some(&format!("DPoP {at}")), &[("dpop", &p)]).await;
    assert_eq!(status, 401);
    assert_eq!(
        headers.get("dpop-nonce").and_then(|v| v.to_str().ok()),
        Some(nonce.as_str())
    );
    assert!(
        headers
            .get_all("www-authenticate")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.starts_with("DPoP") && v.contains("use_dpop_nonce"))
    );
}

/// RFC 7009: `revoke_stored` finds the stored credentials through the
/// same discovery and revokes the refresh token, then the access token,
/// authenticating as the registered client; the AS refuses the revoked
/// refresh token afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_tokens_are_revoked_at_the_revocation_endpoint() {
    use ferromcp_auth::client::{MemoryStore, TokenStore, TokenTypeHint, revoke_stored};
    let (authz, rs) = setup().await;
    let store = Arc::new(MemoryStore::new());
    let oauth = Arc::new(oauth(&rs).store(store.clone()).build().expect("oauth"));
    let client = connect(&rs, oauth.clone()).await;
    call_text(&client, "whoami").await.expect("whoami");
    let token = oauth.token().await.expect("token");
    let refresh = token.refresh_token.clone().expect("refresh token");
    assert!(authz.refresh_token_is_live(&refresh));

    let http = HttpClient::new(NetPolicy::loopback_allowed());
    let report = revoke_stored(&http, &rs.resource, store.as_ref())
        .await
        .expect("revoke");
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert!(report.had_token);
    assert_eq!(
        report.revoked,
        [TokenTypeHint::RefreshToken, TokenTypeHint::AccessToken]
    );
    assert_eq!(report.key.issuer, authz.url);
    assert_eq!(report.key.resource, rs.resource);
    assert!(
        store.load(&report.key).expect("load").is_some(),
        "nothing deleted"
    );
    let log = authz.log.lock().unwrap().revoke.clone();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0]["token"], refresh);
    assert_eq!(log[0]["token_type_hint"], "refresh_token");
    assert_eq!(log[1]["token"], token.access_token);
    assert_eq!(log[1]["token_type_hint"], "access_token");
    assert_eq!(
        log[0]["client_id"],
        authz.log.lock().unwrap().authorize[0]["client_id"]
    );
    assert!(!authz.refresh_token_is_live(&refresh));
    assert_eq!(authz.revoked_access.lock().unwrap().len(), 1);

    // The revoked refresh token is refused at the token endpoint.
    let resp = http
        .post_form(
            &format!("{}/token", authz.url),
            &[
                ("grant_type".into(), "refresh_token".into()),
                ("refresh_token".into(), refresh),
                ("client_id".into(), log[0]["client_id"].clone()),
            ],
            &[],
        )
        .await
        .expect("token request");
    assert_eq!(resp.status.as_u16(), 400);
    let body: Value = resp.json().expect("json");
    assert_eq!(body["error"], "invalid_grant");
}

/// Revocation is best effort: an AS without a revocation endpoint, or one
/// that fails, yields warnings, not errors; with nothing stored, nothing
/// is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_failures_are_warnings() {
    use ferromcp_auth::client::{MemoryStore, revoke_stored};
    use ferromcp_test_issuer::Revocation;
    let (authz, rs) = setup().await;
    let http = HttpClient::new(NetPolicy::loopback_allowed());
    let empty = MemoryStore::new();
    let report = revoke_stored(&http, &rs.resource, &empty)
        .await
        .expect("report");
    assert!(!report.had_token && report.revoked.is_empty() && report.warnings.is_empty());

    let store = Arc::new(MemoryStore::new());
    let oauth = Arc::new(oauth(&rs).store(store.clone()).build().expect("oauth"));
    let client = connect(&rs, oauth).await;
    call_text(&client, "whoami").await.expect("whoami");

    *authz.revocation.lock().unwrap() = Revocation::Failing;
    let report = revoke_stored(&http, &rs.resource, store.as_ref())
        .await
        .expect("report");
    assert!(report.revoked.is_empty());
    assert_eq!(report.warnings.len(), 2, "{:?}", report.warnings);
    assert!(report.warnings[0].contains("503"), "{:?}", report.warnings);

    *authz.revocation.lock().unwrap() = Revocation::Absent;
    let report = revoke_stored(&http, &rs.resource, store.as_ref())
        .await
        .expect("report");
    assert!(report.revoked.is_empty());
    assert_eq!(report.warnings.len(), 1);
    assert!(report.warnings[0].contains("no revocation_endpoint"));
    assert_eq!(
        authz.log.lock().unwrap().revoke.len(),
        2,
        "only the failing ones"
    );
}
