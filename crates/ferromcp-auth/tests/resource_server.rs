//! End to end: a token issuer started inside the test (JWKS, RFC 8414
//! metadata, RFC 7662 introspection) on 127.0.0.1, and an MCP server behind
//! `AuthLayer` on 127.0.0.1, exercised over real HTTP.
//!
//! Covers the metadata at both well-known paths, 401 challenges, 403
//! insufficient_scope, no query tokens, audience, expiry and signature (the
//! token never reaches handlers), and key rotation.
// AUTH-03/04, AUTH-16, LEGACY-27, AUTH-18, AUTH-20, AUTH-21, LADDER-02

#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use ferromcp_auth::BearerChallenge;
use ferromcp_auth::resource::{
    AuthLayer, HyperFetch, IntrospectionVerifier, JwtVerifier, ResourceUri, ScopeLayer,
    TokenVerifier,
};
use ferromcp_server::transport::http::{HttpConfig, McpService, serve_layered};
use ferromcp_server::{NoArgs, RequestContext, Server, tool};
use http_body_util::{BodyExt, Full};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A P-256 key generated for this run, with its public JWK.
struct Key {
    kid: String,
    enc: EncodingKey,
    jwk: Value,
}

impl Key {
    fn generate(kid: &str) -> Self {
        use p256::pkcs8::EncodePrivateKey;
        let secret = loop {
            let mut b = [0u8; 32];
            getrandom::fill(&mut b).expect("random");
            if let Ok(k) = p256::SecretKey::from_slice(&b) {
                break k;
            }
        };
        let der = secret.to_pkcs8_der().expect("pkcs8");
        let enc = EncodingKey::from_ec_der(der.as_bytes());
        let jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&enc, Algorithm::ES256).expect("jwk");
        let mut jwk = serde_json::to_value(jwk).expect("json");
        jwk["kid"] = kid.into();
        jwk["use"] = "sig".into();
        Self {
            kid: kid.into(),
            enc,
            jwk,
        }
    }

    fn sign(&self, claims: &Value) -> String {
        let mut h = Header::new(Algorithm::ES256);
        h.kid = Some(self.kid.clone());
        h.typ = Some("at+jwt".into());
        encode(&h, claims, &self.enc).expect("sign")
    }
}

/// The in-test authorization server.
struct Issuer {
    url: String,
    jwks: Mutex<Vec<Value>>,
    jwks_fetches: AtomicUsize,
    /// opaque token → introspection response
    opaque: Mutex<HashMap<String, Value>>,
    introspections: AtomicUsize,
}

const RS_CLIENT: &str = "mcp-rs";
const RS_SECRET: &str = "rs secret";

impl Issuer {
    async fn start() -> Arc<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let me = Arc::new(Self {
            url: format!("http://{addr}"),
            jwks: Mutex::new(Vec::new()),
            jwks_fetches: AtomicUsize::new(0),
            opaque: Mutex::new(HashMap::new()),
            introspections: AtomicUsize::new(0),
        });
        let state = me.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = state.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, std::convert::Infallible>(state.handle(req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        me
    }

    async fn handle(
        &self,
        req: http::Request<hyper::body::Incoming>,
    ) -> http::Response<Full<Bytes>> {
        let json = |v: Value| {
            let mut r = http::Response::new(Full::new(Bytes::from(v.to_string())));
            r.headers_mut().insert(
                "content-type",
                http::HeaderValue::from_static("application/json"),
            );
            r
        };
        match (req.method().as_str(), req.uri().path()) {
            ("GET", "/.well-known/oauth-authorization-server") => json(json!({
                "issuer": self.url,
                "jwks_uri": format!("{}/jwks", self.url),
                "introspection_endpoint": format!("{}/introspect", self.url),
            })),
            ("GET", "/jwks") => {
                self.jwks_fetches.fetch_add(1, Ordering::SeqCst);
                let keys = self.jwks.lock().expect("lock").clone();
                json(json!({ "keys": keys }))
            }
            ("POST", "/introspect") => {
                self.introspections.fetch_add(1, Ordering::SeqCst);
                let expected = format!(
                    "Basic {}",
                    ferromcp_protocol::base64::encode(b"mcp-rs:rs+secret")
                );
                let authorized = req
                    .headers()
                    .get("authorization")
                    .is_some_and(|v| v.as_bytes() == expected.as_bytes());
                let body = req.into_body().collect().await.expect("body").to_bytes();
                if !authorized {
                    let mut r = json(json!({"error": "invalid_client"}));
                    *r.status_mut() = http::StatusCode::UNAUTHORIZED;
                    return r;
                }
                let body = String::from_utf8_lossy(&body).into_owned();
                let token = body
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("token="))
                    .unwrap_or_default()
                    .to_owned();
                let answer = self.opaque.lock().expect("lock").get(&token).cloned();
                json(answer.unwrap_or_else(|| json!({"active": false})))
            }
            _ => {
                let mut r = http::Response::new(Full::new(Bytes::new()));
                *r.status_mut() = http::StatusCode::NOT_FOUND;
                r
            }
        }
    }

    fn publish(&self, keys: &[&Key]) {
        *self.jwks.lock().expect("lock") = keys.iter().map(|k| k.jwk.clone()).collect();
    }
}

/// The MCP server under test, behind the layer.
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

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

fn ferromcp_server(scopes: ScopeLayer) -> Server {
    Server::builder("secured", "1.0.0")
        .tool(tool("whoami").description("Who is calling").handler(
            |_: NoArgs, cx: RequestContext| async move {
                let p = cx.principal().cloned().unwrap_or_default();
                // AUTH-21: handlers never see the bearer token.
                let leaked = cx
                    .http_parts()
                    .is_some_and(|h| h.headers.contains_key("authorization"));
                format!(
                    "{} [{}] client={} token-visible={leaked}",
                    p.subject,
                    p.scopes.join(" "),
                    p.client_id.unwrap_or_default()
                )
            },
        ))
        .tool(
            tool("echo")
                .description("Echoes")
                .handler(|a: Text, _cx: RequestContext| async move { a.text }),
        )
        .tool(
            tool("admin")
                .description("Privileged")
                .handler(|_: NoArgs, _cx: RequestContext| async move { "done" }),
        )
        // AUTH-18: the per-tool scopes, on the server's middleware seam.
        .layer(scopes)
        .build()
        .expect("server")
}

async fn start_rs(
    verifier: impl FnOnce(&ResourceUri) -> Arc<dyn TokenVerifier>,
    issuer: &str,
) -> Rs {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let resource = ResourceUri::parse(&format!("http://{addr}/mcp")).expect("resource");
    let auth = AuthLayer::builder(resource.clone(), verifier(&resource))
        .authorization_server(issuer)
        .require_scopes(["mcp"])
        .require_tool_scopes("admin", ["admin"])
        .scopes_supported(["mcp", "admin"])
        .resource_name("test server")
        .build()
        .expect("layer");
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

fn jwt_verifier(issuer: &str) -> impl FnOnce(&ResourceUri) -> Arc<dyn TokenVerifier> {
    let issuer = issuer.to_owned();
    move |r: &ResourceUri| {
        // Keys discovered from the issuer's RFC 8414 metadata.
        let v = JwtVerifier::builder(issuer, r)
            .fetcher(Arc::new(HyperFetch::new().allow_plain_http(true)))
            .jwks_refetch_interval(Duration::ZERO)
            .build()
            .expect("verifier");
        Arc::new(v) as Arc<dyn TokenVerifier>
    }
}

struct Resp {
    status: u16,
    headers: http::HeaderMap,
    body: Bytes,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
    fn challenge(&self) -> BearerChallenge {
        let h = self
            .headers
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        BearerChallenge::parse(h).unwrap_or_else(|| panic!("no Bearer challenge in {h:?}"))
    }
}

async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Resp {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(conn);
    let mut b = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string());
    for (n, v) in headers {
        b = b.header(*n, *v);
    }
    let req = b
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("request");
    let resp = sender.send_request(req).await.expect("send");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    Resp {
        status,
        headers,
        body,
    }
}

const MODERN: &str = "2026-07-28";

fn call(tool: &str, args: Value) -> String {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":args,
        "_meta":{"io.modelcontextprotocol/protocolVersion":MODERN,"io.modelcontextprotocol/clientCapabilities":{}}}})
    .to_string()
}

/// A modern tools/call with the standard headers and `auth` (if any).
async fn call_tool(rs: &Rs, tool: &str, auth: Option<&str>) -> Resp {
    let bearer = auth.map(|t| format!("Bearer {t}"));
    let mut h = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ];
    if let Some(b) = &bearer {
        h.push(("authorization", b.as_str()));
    }
    http(rs.addr, "POST", "/mcp", &h, &call(tool, json!({}))).await
}

fn claims(issuer: &Issuer, rs: &Rs, scope: &str) -> Value {
    json!({"iss": issuer.url, "aud": rs.resource, "sub": "alice", "client_id": "app",
           "exp": now() + 300, "iat": now(), "scope": scope})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_and_challenges() {
    let issuer = Issuer::start().await;
    let rs = start_rs(jwt_verifier(&issuer.url), &issuer.url).await;
    let prm_url = format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        rs.resource.trim_end_matches("/mcp")
    );
    // AUTH-03/04: the document at the path-inserted and the root well-known URIs.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = http(rs.addr, "GET", path, &[], "").await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(
            r.json(),
            json!({
                "resource": rs.resource,
                "authorization_servers": [issuer.url],
                "scopes_supported": ["mcp", "admin"],
                "bearer_methods_supported": ["header"],
                "resource_name": "test server",
            })
        );
        assert_eq!(
            r.headers
                .get("access-control-allow-origin")
                .map(|v| v.as_bytes()),
            Some(&b"*"[..])
        );
    }
    // No token: 401 with resource_metadata and scope, no error code (AUTH-16, LEGACY-27).
    let r = call_tool(&rs, "echo", None).await;
    assert_eq!(r.status, 401);
    let c = r.challenge();
    assert_eq!(c.resource_metadata.as_deref(), Some(prm_url.as_str()));
    assert_eq!(c.scope, ["mcp"]);
    assert_eq!(c.error, None);
    // The challenge names the scopes of the operation the headers announce.
    let r = call_tool(&rs, "admin", None).await;
    assert_eq!(
        (r.status, r.challenge().scope),
        (401, vec!["mcp".to_owned(), "admin".to_owned()])
    );
    // GET and DELETE need a token too.
    assert_eq!(
        http(
            rs.addr,
            "GET",
            "/mcp",
            &[("accept", "text/event-stream")],
            ""
        )
        .await
        .status,
        401
    );
    // AUTH-20: a token in the query string is a malformed request.
    let key = Key::generate("k1");
    issuer.publish(&[&key]);
    let token = key.sign(&claims(&issuer, &rs, "mcp"));
    let r = http(
        rs.addr,
        "POST",
        &format!("/mcp?access_token={token}"),
        &[("content-type", "application/json")],
        "{}",
    )
    .await;
    assert_eq!(
        (r.status, r.challenge().error.as_deref()),
        (400, Some("invalid_request"))
    );
    // Another scheme is "no token" (RFC 6750 §3.1).
    let r = http(
        rs.addr,
        "POST",
        "/mcp",
        &[("authorization", "Basic YTpi")],
        "{}",
    )
    .await;
    assert_eq!((r.status, r.challenge().error), (401, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_token_reaches_the_handler_as_a_principal() {
    let issuer = Issuer::start().await;
    let key = Key::generate("k1");
    issuer.publish(&[&key]);
    let rs = start_rs(jwt_verifier(&issuer.url), &issuer.url).await;
    let token = key.sign(&claims(&issuer, &rs, "mcp"));
    let r = call_tool(&rs, "whoami", Some(&token)).await;
    assert_eq!(r.status, 200, "{:?}", r.json());
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "alice [mcp] client=app token-visible=false"
    );
    // Handshake era on the same endpoint: initialize, then call with the session.
    let bearer = format!("Bearer {token}");
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let base = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("authorization", bearer.as_str()),
    ];
    let r = http(rs.addr, "POST", "/mcp", &base, &init.to_string()).await;
    assert_eq!(r.status, 200);
    let sid = r
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut h = base.to_vec();
    h.push(("mcp-session-id", &sid));
    h.push(("mcp-protocol-version", "2025-11-25"));
    let whoami = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}});
    let r = http(rs.addr, "POST", "/mcp", &h, &whoami.to_string()).await;
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "alice [mcp] client=app token-visible=false"
    );
    // Keys were fetched once (via discovery) and then cached.
    assert_eq!(issuer.jwks_fetches.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_get_invalid_token() {
    let issuer = Issuer::start().await;
    let key = Key::generate("k1");
    issuer.publish(&[&key]);
    let rs = start_rs(jwt_verifier(&issuer.url), &issuer.url).await;
    let with = |k: &str, v: Value| {
        let mut c = claims(&issuer, &rs, "mcp");
        c[k] = v;
        key.sign(&c)
    };
    let good = key.sign(&claims(&issuer, &rs, "mcp"));
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    parts[1] = with("sub", "mallory".into())
        .split('.')
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let tampered = parts.join(".");
    let other_key = Key::generate("k1").sign(&claims(&issuer, &rs, "mcp"));
    let cases = [
        (
            "wrong audience",
            with("aud", "http://127.0.0.1:1/mcp".into()),
        ),
        ("expired", with("exp", (now() - 3600).into())),
        ("not yet valid", with("nbf", (now() + 3600).into())),
        ("wrong issuer", with("iss", "http://evil.example".into())),
        ("tampered", tampered),
        ("forged with another key", other_key),
        ("garbage", "not-a-jwt".into()),
    ];
    for (what, token) in cases {
        let r = call_tool(&rs, "echo", Some(&token)).await;
        assert_eq!(r.status, 401, "{what}");
        let c = r.challenge();
        assert_eq!(c.error.as_deref(), Some("invalid_token"), "{what}");
        assert!(
            c.resource_metadata
                .is_some_and(|u| u.ends_with("/.well-known/oauth-protected-resource/mcp"))
        );
        assert_eq!(c.scope, ["mcp"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_tool_scope_is_insufficient_scope() {
    let issuer = Issuer::start().await;
    let key = Key::generate("k1");
    issuer.publish(&[&key]);
    let rs = start_rs(jwt_verifier(&issuer.url), &issuer.url).await;
    let basic = key.sign(&claims(&issuer, &rs, "mcp"));
    // AUTH-18: 403 naming every scope the operation needs.
    let r = call_tool(&rs, "admin", Some(&basic)).await;
    assert_eq!(r.status, 403);
    let c = r.challenge();
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scope, ["mcp", "admin"]);
    assert!(c.resource_metadata.is_some());
    // Other tools are fine with the basic scope; admin with the admin scope.
    assert_eq!(call_tool(&rs, "whoami", Some(&basic)).await.status, 200);
    let full = key.sign(&claims(&issuer, &rs, "mcp admin"));
    let r = call_tool(&rs, "admin", Some(&full)).await;
    assert_eq!(
        (r.status, r.json()["result"]["content"][0]["text"].clone()),
        (200, json!("done"))
    );
    // A token without even the endpoint scope.
    let none = key.sign(&claims(&issuer, &rs, "other"));
    let r = call_tool(&rs, "whoami", Some(&none)).await;
    assert_eq!(
        (r.status, r.challenge().scope),
        (403, vec!["mcp".to_owned()])
    );

    // Lying routing headers cannot smuggle a privileged call: the server's
    // ladder rejects headers that disagree with the body (LADDER-09).
    let bearer = format!("Bearer {basic}");
    let h = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "whoami"),
        ("authorization", bearer.as_str()),
    ];
    let r = http(rs.addr, "POST", "/mcp", &h, &call("admin", json!({}))).await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32020))
    );

    // Handshake era: no routing headers; the scope policy on the server's
    // middleware seam sees the tool the server read from the body.
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let base = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("authorization", bearer.as_str()),
    ];
    let r = http(rs.addr, "POST", "/mcp", &base, &init.to_string()).await;
    let sid = r
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut h = base.to_vec();
    h.push(("mcp-session-id", &sid));
    let admin = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"admin","arguments":{}}});
    let r = http(rs.addr, "POST", "/mcp", &h, &admin.to_string()).await;
    assert_eq!(
        (r.status, r.challenge().scope),
        (403, vec!["mcp".to_owned(), "admin".to_owned()])
    );
    // …also inside a 2025-03-26 batch, even with modern-looking headers:
    // the scope policy sees each request of the batch, so the refused one
    // gets its JSON-RPC error in the batch's answer and the others are
    // served.
    let mut hb = h.clone();
    hb.push(("mcp-protocol-version", MODERN));
    hb.push(("mcp-method", "ping"));
    let batch = json!([{"jsonrpc":"2.0","id":3,"method":"ping"}, admin]);
    let r = http(rs.addr, "POST", "/mcp", &hb, &batch.to_string()).await;
    assert_eq!(r.status, 200);
    let answers = r.json();
    assert_eq!(answers[0]["id"], 3);
    assert!(answers[0]["result"].is_object(), "{answers}");
    assert_eq!(answers[1]["id"], 2);
    assert_eq!(answers[1]["error"]["data"]["error"], "insufficient_scope");
    assert_eq!(answers[1]["error"]["data"]["scope"], "mcp admin");
    assert!(answers[1].get("result").is_none(), "{answers}");
    let whoami = json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"whoami","arguments":{}}});
    let r = http(rs.addr, "POST", "/mcp", &h, &whoami.to_string()).await;
    assert_eq!(r.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotated_keys_are_fetched_on_unknown_kid() {
    let issuer = Issuer::start().await;
    let k1 = Key::generate("k1");
    issuer.publish(&[&k1]);
    let rs = start_rs(jwt_verifier(&issuer.url), &issuer.url).await;
    assert_eq!(
        call_tool(&rs, "whoami", Some(&k1.sign(&claims(&issuer, &rs, "mcp"))))
            .await
            .status,
        200
    );
    assert_eq!(issuer.jwks_fetches.load(Ordering::SeqCst), 1);
    let k2 = Key::generate("k2");
    issuer.publish(&[&k1, &k2]);
    let r = call_tool(&rs, "whoami", Some(&k2.sign(&claims(&issuer, &rs, "mcp")))).await;
    assert_eq!(r.status, 200);
    assert_eq!(issuer.jwks_fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspection_verifier() {
    let issuer = Issuer::start().await;
    let endpoint = format!("{}/introspect", issuer.url);
    let iss = issuer.url.clone();
    let rs = start_rs(
        move |r: &ResourceUri| {
            let v = IntrospectionVerifier::builder(endpoint, RS_CLIENT, RS_SECRET, r)
                .issuer(iss)
                .fetcher(Arc::new(HyperFetch::new().allow_plain_http(true)))
                .build()
                .expect("verifier");
            Arc::new(v) as Arc<dyn TokenVerifier>
        },
        &issuer.url,
    )
    .await;
    {
        let mut o = issuer.opaque.lock().expect("lock");
        o.insert(
            "opaque-good".into(),
            json!({"active": true, "sub": "bob", "scope": "mcp admin", "client_id": "cli",
                   "aud": rs.resource, "iss": issuer.url, "exp": now() + 300}),
        );
        o.insert(
            "opaque-other-aud".into(),
            json!({"active": true, "sub": "bob", "scope": "mcp", "aud": "https://elsewhere/mcp",
                   "iss": issuer.url, "exp": now() + 300}),
        );
        o.insert(
            "opaque-narrow".into(),
            json!({"active": true, "sub": "bob", "scope": "mcp", "aud": rs.resource, "iss": issuer.url}),
        );
    }
    let r = call_tool(&rs, "whoami", Some("opaque-good")).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "bob [mcp admin] client=cli token-visible=false"
    );
    assert_eq!(
        call_tool(&rs, "admin", Some("opaque-good")).await.status,
        200
    );
    assert_eq!(
        issuer.introspections.load(Ordering::SeqCst),
        1,
        "second use served from the cache"
    );
    for (token, status) in [("opaque-unknown", 401), ("opaque-other-aud", 401)] {
        let r = call_tool(&rs, "whoami", Some(token)).await;
        assert_eq!(
            (r.status, r.challenge().error.as_deref()),
            (status, Some("invalid_token")),
            "{token}"
        );
    }
    let r = call_tool(&rs, "admin", Some("opaque-narrow")).await;
    assert_eq!(
        (r.status, r.challenge().error.as_deref()),
        (403, Some("insufficient_scope"))
    );
}
