//! Wire tests of the OAuth client flow: `ferromcp_client::Client` with an
//! `OAuthClient` installed, against an in-test mock (hyper on 127.0.0.1)
//! playing MCP server (2026-07-28, stateless), PRM and authorization server.
//!
//! Covers PRM discovery order, resource mismatch, AS metadata and the
//! issuer check, registration (per-issuer credentials, migration), scopes,
//! step-up and its bound, the bearer on every request, `resource` in both
//! requests, PKCE S256, `iss` and `state`, refresh (keeping the old refresh
//! token), the SSRF policy and the file store, and a 2025-03-26 server
//! without PRM (AS metadata at its origin or the default endpoints,
//! `MCP-Protocol-Version` on discovery, no `resource`; no fallback for
//! servers known to be newer).
// AUTH-05, AUTH-06, AUTH-07/08, AUTH-10/13/14, AUTH-17/19, AUTH-20, AUTH-22, AUTH-23,
// AUTH-24/26, AUTH-27, AUTH-28, LEGACY-26/28

#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use ferromcp_auth::client::{
    FileStore, HeadlessAuthorization, HttpClient, NetPolicy, OAuthClient, OAuthClientBuilder,
    PreRegistered, form,
};
use ferromcp_client::{ClientBuilder, EraPreference};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Iss {
    Correct,
    Wrong,
    Missing,
}

/// What the mock does; changeable while it runs.
#[derive(Clone, Debug)]
struct Cfg {
    /// PRM at the path-inserted URL (else only at the root).
    prm_path_based: bool,
    /// PRM `resource` override.
    resource: Option<String>,
    /// `resource_metadata` in the challenge.
    rm_in_challenge: bool,
    /// Path of the current issuer ("" or "/tenant1"...).
    issuer_path: String,
    // AUTH-08
    /// Metadata `issuer` override (for the issuer-check tests).
    metadata_issuer: Option<String>,
    iss_supported: bool,
    iss: Iss,
    /// Scope every MCP request needs (403 insufficient_scope otherwise).
    required_scope: Option<String>,
    /// Scope in the 401 challenge.
    challenge_scope: Option<String>,
    prm_scopes: Option<Vec<String>>,
    as_scopes: Option<Vec<String>>,
    token_auth_methods: Vec<String>,
    registration: bool,
    cimd: bool,
    expires_in: u64,
    issue_refresh: bool,
    pkce_methods: Option<Vec<String>>,
    /// A scope the AS never grants.
    withhold: Option<String>,
    /// Publish a PRM document at all (a 2025-03-26 server does not).
    publish_prm: bool,
    /// Publish AS metadata at all (else only the default endpoints exist).
    publish_as_metadata: bool,
    /// Path prefix of the AS endpoints (default: the issuer path).
    endpoint_path: Option<String>,
    /// Speak the 2025-03-26 handshake era on /mcp (`initialize`).
    legacy_mcp: bool,
}

impl Default for Cfg {
    fn default() -> Self {
        Self {
            prm_path_based: true,
            resource: None,
            rm_in_challenge: true,
            issuer_path: String::new(),
            metadata_issuer: None,
            iss_supported: true,
            iss: Iss::Correct,
            required_scope: None,
            challenge_scope: None,
            prm_scopes: Some(vec!["mcp:read".into()]),
            as_scopes: None,
            token_auth_methods: vec!["none".into()],
            registration: true,
            cimd: false,
            expires_in: 3600,
            issue_refresh: true,
            pkce_methods: Some(vec!["S256".into()]),
            withhold: None,
            publish_prm: true,
            publish_as_metadata: true,
            endpoint_path: None,
            legacy_mcp: false,
        }
    }
}

#[derive(Default)]
struct Log {
    /// "METHOD path" of every request.
    requests: Vec<String>,
    /// The `MCP-Protocol-Version` header of every request, in order.
    protocol_versions: Vec<Option<String>>,
    /// Query of each authorization request.
    authorizations: Vec<HashMap<String, String>>,
    /// (form, authorization header) of each token request.
    token_requests: Vec<(HashMap<String, String>, Option<String>)>,
    registrations: Vec<(String, Value)>,
    /// Authorization header of each MCP POST.
    ferromcp_auth: Vec<Option<String>>,
    /// code -> (challenge, scope, client_id, issuer path)
    codes: HashMap<String, (String, String, String, String)>,
    /// token -> (scopes, issuer path)
    tokens: HashMap<String, (Vec<String>, String)>,
    counter: u32,
    /// `MCP-Protocol-Version` of each AS metadata request.
    as_metadata_versions: Vec<Option<String>>,
}

struct Mock {
    base: String,
    cfg: Mutex<Cfg>,
    log: Mutex<Log>,
}

type Resp = http::Response<Full<Bytes>>;

fn json_resp(status: u16, v: &Value) -> Resp {
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(v.to_string())))
        .unwrap()
}

impl Mock {
    async fn start(cfg: Cfg) -> Arc<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let me = Arc::new(Self {
            base: format!("http://localhost:{port}"),
            cfg: Mutex::new(cfg),
            log: Mutex::new(Log::default()),
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

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn issuer(&self) -> String {
        format!("{}{}", self.base, self.cfg.lock().unwrap().issuer_path)
    }

    fn cfg(&self) -> Cfg {
        self.cfg.lock().unwrap().clone()
    }

    fn set(&self, f: impl FnOnce(&mut Cfg)) {
        f(&mut self.cfg.lock().unwrap());
    }

    fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().requests.clone()
    }

    fn next(&self, prefix: &str) -> String {
        let mut l = self.log.lock().unwrap();
        l.counter += 1;
        format!("{prefix}-{}", l.counter)
    }

    async fn handle(self: Arc<Self>, req: http::Request<hyper::body::Incoming>) -> Resp {
        let method = req.method().as_str().to_owned();
        let path = req.uri().path().to_owned();
        let query = req.uri().query().unwrap_or("").to_owned();
        let authz = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mcp_version = req
            .headers()
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = req.into_body().collect().await.unwrap().to_bytes();
        {
            let mut l = self.log.lock().unwrap();
            l.requests.push(format!("{method} {path}"));
            l.protocol_versions.push(mcp_version.clone());
        }
        let cfg = self.cfg();
        let ip = cfg.issuer_path.clone();
        // Where the AS endpoints live (codes and tokens stay per issuer).
        let ep = cfg.endpoint_path.clone().unwrap_or_else(|| ip.clone());
        let resource = cfg.resource.clone().unwrap_or_else(|| self.url());
        let prm = || {
            let mut v = json!({"resource": resource, "authorization_servers": [self.issuer()]});
            if let Some(s) = &cfg.prm_scopes {
                v["scopes_supported"] = json!(s);
            }
            json_resp(200, &v)
        };
        match (method.as_str(), path.as_str()) {
            ("GET", "/.well-known/oauth-protected-resource/mcp")
                if cfg.publish_prm && cfg.prm_path_based =>
            {
                prm()
            }
            ("GET", "/.well-known/oauth-protected-resource")
                if cfg.publish_prm && !cfg.prm_path_based =>
            {
                prm()
            }
            ("GET", p)
                if cfg.publish_as_metadata
                    && p == format!("/.well-known/oauth-authorization-server{ip}") =>
            {
                self.log
                    .lock()
                    .unwrap()
                    .as_metadata_versions
                    .push(mcp_version.clone());
                let iss = cfg.metadata_issuer.clone().unwrap_or_else(|| self.issuer());
                let b = format!("{}{ep}", self.base);
                let mut v = json!({
                    "issuer": iss,
                    "authorization_endpoint": format!("{b}/authorize"),
                    "token_endpoint": format!("{b}/token"),
                    "response_types_supported": ["code"],
                    "token_endpoint_auth_methods_supported": cfg.token_auth_methods,
                    "authorization_response_iss_parameter_supported": cfg.iss_supported,
                    "client_id_metadata_document_supported": cfg.cimd,
                });
                if cfg.registration {
                    v["registration_endpoint"] = json!(format!("{b}/register"));
                }
                if let Some(m) = &cfg.pkce_methods {
                    v["code_challenge_methods_supported"] = json!(m);
                }
                if let Some(s) = &cfg.as_scopes {
                    v["scopes_supported"] = json!(s);
                }
                json_resp(200, &v)
            }
            ("POST", p) if p == format!("{ep}/register") => {
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let id = self.next(&format!("client{ip}"));
                self.log
                    .lock()
                    .unwrap()
                    .registrations
                    .push((ip.clone(), v.clone()));
                let mut out = json!({"client_id": id, "redirect_uris": v["redirect_uris"]});
                let m = v["token_endpoint_auth_method"].as_str().unwrap_or("none");
                if m != "none" {
                    out["client_secret"] = json!("s3cret");
                    out["token_endpoint_auth_method"] = json!(m);
                }
                json_resp(201, &out)
            }
            ("GET", p) if p == format!("{ep}/authorize") => {
                let q: HashMap<String, String> = form::parse(&query).into_iter().collect();
                self.log.lock().unwrap().authorizations.push(q.clone());
                let code = self.next("code");
                self.log.lock().unwrap().codes.insert(
                    code.clone(),
                    (
                        q.get("code_challenge").cloned().unwrap_or_default(),
                        q.get("scope").cloned().unwrap_or_default(),
                        q.get("client_id").cloned().unwrap_or_default(),
                        ip.clone(),
                    ),
                );
                let mut params = vec![
                    ("code".to_owned(), code),
                    (
                        "state".to_owned(),
                        q.get("state").cloned().unwrap_or_default(),
                    ),
                ];
                match cfg.iss {
                    Iss::Correct => params.push(("iss".into(), self.issuer())),
                    Iss::Wrong => params.push(("iss".into(), format!("{}/", self.issuer()))),
                    Iss::Missing => {}
                }
                let loc = form::append_query(q.get("redirect_uri").unwrap(), &params);
                http::Response::builder()
                    .status(302)
                    .header("location", loc)
                    .body(Full::new(Bytes::new()))
                    .unwrap()
            }
            ("POST", p) if p == format!("{ep}/token") => {
                let f: HashMap<String, String> = form::parse(std::str::from_utf8(&body).unwrap())
                    .into_iter()
                    .collect();
                self.log
                    .lock()
                    .unwrap()
                    .token_requests
                    .push((f.clone(), authz.clone()));
                let scopes = match f.get("grant_type").map(String::as_str) {
                    Some("authorization_code") => {
                        let Some((challenge, scope, _client, cip)) = self
                            .log
                            .lock()
                            .unwrap()
                            .codes
                            .remove(f.get("code").map(String::as_str).unwrap_or(""))
                        else {
                            return json_resp(400, &json!({"error": "invalid_grant"}));
                        };
                        let v = f.get("code_verifier").cloned().unwrap_or_default();
                        let computed =
                            ferromcp_protocol::base64::url_encode(&Sha256::digest(v.as_bytes()));
                        if computed != challenge || cip != ip {
                            return json_resp(400, &json!({"error": "invalid_grant"}));
                        }
                        scope
                    }
                    Some("refresh_token") => {
                        let rt = f.get("refresh_token").cloned().unwrap_or_default();
                        match self.log.lock().unwrap().tokens.get(&rt) {
                            Some((s, _)) => s.join(" "),
                            None => return json_resp(400, &json!({"error": "invalid_grant"})),
                        }
                    }
                    _ => return json_resp(400, &json!({"error": "unsupported_grant_type"})),
                };
                let at = self.next("at");
                let scopes_v: Vec<String> = scopes
                    .split_whitespace()
                    .filter(|s| cfg.withhold.as_deref() != Some(*s))
                    .map(str::to_owned)
                    .collect();
                let mut out = json!({"access_token": at, "token_type": "Bearer", "expires_in": cfg.expires_in});
                {
                    let mut l = self.log.lock().unwrap();
                    l.tokens.insert(at.clone(), (scopes_v.clone(), ip.clone()));
                    // Refresh tokens are issued on the first grant only, so
                    // the client must keep the old one (AUTH-27).
                    if cfg.issue_refresh
                        && f.get("grant_type").map(String::as_str) == Some("authorization_code")
                    {
                        let rt = format!("rt-{at}");
                        l.tokens.insert(rt.clone(), (scopes_v, ip.clone()));
                        out["refresh_token"] = json!(rt);
                    }
                }
                json_resp(200, &out)
            }
            ("POST", "/mcp") => {
                self.log.lock().unwrap().ferromcp_auth.push(authz.clone());
                let challenge = |status: u16, extra: &str| {
                    let mut v = format!("Bearer {extra}");
                    if cfg.rm_in_challenge {
                        v.push_str(&format!(
                            ", resource_metadata=\"{}/.well-known/oauth-protected-resource{}\"",
                            self.base,
                            if cfg.prm_path_based { "/mcp" } else { "" }
                        ));
                    }
                    http::Response::builder()
                        .status(status)
                        .header("www-authenticate", v)
                        .body(Full::new(Bytes::new()))
                        .unwrap()
                };
                let token = authz.as_deref().and_then(|a| a.strip_prefix("Bearer "));
                let known = token.and_then(|t| self.log.lock().unwrap().tokens.get(t).cloned());
                let Some((scopes, tip)) = known.filter(|(_, tip)| *tip == ip) else {
                    let extra = match &cfg.challenge_scope {
                        Some(s) => format!("error=\"invalid_token\", scope=\"{s}\""),
                        None => "error=\"invalid_token\"".to_owned(),
                    };
                    return challenge(401, &extra);
                };
                let _ = tip;
                if let Some(req) = &cfg.required_scope
                    && !scopes.contains(req)
                {
                    return challenge(
                        403,
                        &format!("error=\"insufficient_scope\", scope=\"{req}\""),
                    );
                }
                let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let id = msg["id"].clone();
                if cfg.legacy_mcp && msg.get("id").is_none() {
                    // A notification (`notifications/initialized`).
                    return http::Response::builder()
                        .status(202)
                        .body(Full::new(Bytes::new()))
                        .unwrap();
                }
                let result = match msg["method"].as_str() {
                    Some("initialize") if cfg.legacy_mcp => json!({
                        "protocolVersion": "2025-03-26",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "legacy", "version": "1"}
                    }),
                    Some("tools/list") if cfg.legacy_mcp => json!({
                        "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]
                    }),
                    Some("tools/call") if cfg.legacy_mcp => json!({
                        "content": [{"type": "text", "text": "ok"}]
                    }),
                    Some("tools/list") => json!({
                        "tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
                        "resultType": "complete", "ttlMs": 0, "cacheScope": "private"
                    }),
                    Some("tools/call") => json!({
                        "content": [{"type": "text", "text": "ok"}], "resultType": "complete"
                    }),
                    _ => {
                        return json_resp(
                            404,
                            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "nope"}}),
                        );
                    }
                };
                json_resp(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
            }
            ("GET" | "DELETE", "/mcp") if cfg.legacy_mcp => http::Response::builder()
                .status(405)
                .header("allow", "POST")
                .body(Full::new(Bytes::new()))
                .unwrap(),
            _ => json_resp(404, &json!({"error": "not found"})),
        }
    }
}

fn oauth(mock: &Mock) -> OAuthClientBuilder {
    let http = HttpClient::new(NetPolicy::loopback_allowed());
    OAuthClient::builder(mock.url())
        .http_client(http.clone())
        .authorization_handler(Arc::new(HeadlessAuthorization::new(http)))
}

async fn run(mock: &Mock, oauth: Arc<OAuthClient>) -> Result<(), ferromcp_client::Error> {
    let client = ClientBuilder::new("t", "1")
        .era(EraPreference::ModernNoProbe)
        .http_auth(oauth)
        .connect_url(&mock.url())
        .await?;
    let tools = client.list_tools().await?;
    client.call_tool(&tools[0].name, None).await?;
    client.close().await;
    Ok(())
}

/// A 2025-03-26 server: no PRM anywhere, no `resource_metadata` in the
/// challenge (issue 13 item 10).
fn legacy(publish_as_metadata: bool) -> Cfg {
    Cfg {
        publish_prm: false,
        rm_in_challenge: false,
        publish_as_metadata,
        prm_scopes: None,
        ..Cfg::default()
    }
}

// LEGACY-26
/// No PRM → AS metadata at the authorization base URL (the
/// server URL without its path), fetched with `MCP-Protocol-Version:
/// 2025-03-26`; the flow then runs on its endpoints, without `resource`.
#[tokio::test]
async fn legacy_server_without_prm_uses_metadata_at_its_origin() {
    let mock = Mock::start(legacy(true)).await;
    let o = Arc::new(oauth(&mock).build().unwrap());
    run(&mock, o.clone()).await.unwrap();
    assert!(o.token().await.is_some());
    let reqs = mock.requests();
    assert!(reqs.contains(&"GET /.well-known/oauth-protected-resource/mcp".to_owned()));
    assert!(reqs.contains(&"GET /.well-known/oauth-authorization-server".to_owned()));
    let log = mock.log.lock().unwrap();
    assert!(
        log.as_metadata_versions
            .iter()
            .any(|v| v.as_deref() == Some("2025-03-26")),
        "{:?}",
        log.as_metadata_versions
    );
    assert_eq!(log.registrations.len(), 1);
    let a = &log.authorizations[0];
    assert_eq!(a["code_challenge_method"], "S256");
    assert!(!a.contains_key("resource"), "{a:?}");
    let (t, _) = &log.token_requests[0];
    assert_eq!(t["grant_type"], "authorization_code");
    assert!(!t.contains_key("resource"), "{t:?}");
}

// LEGACY-26
/// No PRM and no AS metadata → the default endpoints
/// `/authorize`, `/token`, `/register` at the base, full flow.
#[tokio::test]
async fn legacy_server_without_any_metadata_uses_the_default_endpoints() {
    let mock = Mock::start(legacy(false)).await;
    let o = Arc::new(oauth(&mock).build().unwrap());
    run(&mock, o.clone()).await.unwrap();
    assert!(o.token().await.is_some());
    let reqs = mock.requests();
    for r in ["POST /register", "GET /authorize", "POST /token"] {
        assert!(reqs.contains(&r.to_owned()), "{r}: {reqs:?}");
    }
    let log = mock.log.lock().unwrap();
    assert_eq!(log.authorizations[0]["code_challenge_method"], "S256");
}

/// The fallback is only for a missing PRM: metadata at the base naming
/// another issuer is refused (RFC 8414 §3.3), and a PRM naming another
/// resource is still a mismatch, never a reason to fall back.
#[tokio::test]
async fn legacy_fallback_keeps_the_issuer_and_resource_checks() {
    let mut cfg = legacy(true);
    cfg.metadata_issuer = Some("http://evil.example".into());
    let mock = Mock::start(cfg).await;
    let o = Arc::new(oauth(&mock).build().unwrap());
    let e = run(&mock, o.clone()).await.unwrap_err();
    assert!(e.is_auth(), "{e:?}");
    assert!(mock.log.lock().unwrap().authorizations.is_empty());
    let mock = Mock::start(Cfg {
        resource: Some("http://localhost:1/other".into()),
        ..Cfg::default()
    })
    .await;
    let o = Arc::new(oauth(&mock).build().unwrap());
    assert!(run(&mock, o).await.is_err());
    assert!(
        !mock
            .requests()
            .contains(&"GET /.well-known/oauth-authorization-server".to_owned())
    );
}

#[tokio::test]
async fn full_flow_with_registration_pkce_and_resource() {
    let mock = Mock::start(Cfg::default()).await;
    let o = Arc::new(oauth(&mock).build().unwrap());
    run(&mock, o.clone()).await.unwrap();
    let token = o.token().await;
    assert!(token.is_some());
    let reqs = mock.requests();
    // AUTH-05: the path-inserted PRM first (given in the challenge here).
    assert!(reqs.contains(&"GET /.well-known/oauth-protected-resource/mcp".to_owned()));
    assert!(!reqs.contains(&"GET /.well-known/oauth-protected-resource".to_owned()));
    let log = mock.log.lock().unwrap();
    // AUTH-13: DCR with application_type and the refresh_token grant.
    assert_eq!(log.registrations.len(), 1);
    let reg = &log.registrations[0].1;
    assert_eq!(reg["application_type"], "native");
    assert!(
        reg["grant_types"]
            .as_array()
            .unwrap()
            .contains(&json!("refresh_token"))
    );
    // AUTH-22/23/17: the authorization request.
    let a = &log.authorizations[0];
    assert_eq!(a["response_type"], "code");
    assert_eq!(a["code_challenge_method"], "S256");
    assert_eq!(a["resource"], mock.url());
    assert_eq!(a["scope"], "mcp:read");
    assert!(!a["state"].is_empty());
    // The token request: verifier, resource, redirect_uri, public client.
    let (t, authz) = &log.token_requests[0];
    assert_eq!(t["grant_type"], "authorization_code");
    assert_eq!(t["resource"], mock.url());
    assert_eq!(t["redirect_uri"], a["redirect_uri"]);
    assert_eq!(t["client_id"], a["client_id"]);
    assert!(authz.is_none());
    // AUTH-20: after the first 401, every MCP request carried the token.
    assert_eq!(log.ferromcp_auth[0], None);
    assert!(
        log.ferromcp_auth[1..]
            .iter()
            .all(|h| h.as_deref().is_some_and(|v| v.starts_with("Bearer at-")))
    );
    assert!(log.ferromcp_auth.len() >= 3);
}

#[tokio::test]
async fn prm_root_fallback_without_challenge_url() {
    // AUTH-05: no resource_metadata → path-inserted, then root.
    let mock = Mock::start(Cfg {
        prm_path_based: false,
        rm_in_challenge: false,
        resource: None,
        ..Cfg::default()
    })
    .await;
    mock.set(|c| c.resource = Some(mock.base.clone()));
    run(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap();
    let reqs = mock.requests();
    let p = reqs
        .iter()
        .position(|r| r == "GET /.well-known/oauth-protected-resource/mcp")
        .unwrap();
    let r = reqs
        .iter()
        .position(|r| r == "GET /.well-known/oauth-protected-resource")
        .unwrap();
    assert!(p < r);
    // The resource is sent exactly as published (no trailing slash added).
    assert_eq!(
        mock.log.lock().unwrap().authorizations[0]["resource"],
        mock.base
    );
}

#[tokio::test]
async fn resource_mismatch_aborts_before_authorization() {
    // AUTH-06
    let mock = Mock::start(Cfg {
        resource: Some("https://evil.example.com/mcp".into()),
        ..Cfg::default()
    })
    .await;
    let e = run(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap_err();
    assert!(e.is_auth(), "{e}");
    assert_eq!(e.status(), Some(401));
    assert!(mock.log.lock().unwrap().authorizations.is_empty());
    assert!(
        !mock
            .requests()
            .iter()
            .any(|r| r.contains("authorization-server"))
    );
}

#[tokio::test]
async fn issuer_mismatch_discards_metadata() {
    // AUTH-08
    let mock = Mock::start(Cfg::default()).await;
    mock.set(|c| c.metadata_issuer = Some(format!("{}/other", mock.base)));
    let e = run(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap_err();
    assert!(e.is_auth());
    assert!(mock.log.lock().unwrap().authorizations.is_empty());
    assert!(mock.log.lock().unwrap().registrations.is_empty());
}

#[tokio::test]
async fn issuer_with_path_uses_path_insertion() {
    // AUTH-07
    let mock = Mock::start(Cfg {
        issuer_path: "/tenant1".into(),
        ..Cfg::default()
    })
    .await;
    run(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap();
    let reqs = mock.requests();
    assert!(reqs.contains(&"GET /.well-known/oauth-authorization-server/tenant1".to_owned()));
    assert!(!reqs.contains(&"GET /.well-known/oauth-authorization-server".to_owned()));
}

#[tokio::test]
async fn wrong_or_missing_iss_stops_before_the_token_request() {
    // AUTH-24
    for (iss, supported) in [
        (Iss::Wrong, true),
        (Iss::Missing, true),
        (Iss::Wrong, false),
    ] {
        let mock = Mock::start(Cfg {
            iss,
            iss_supported: supported,
            ..Cfg::default()
        })
        .await;
        let e = run(&mock, Arc::new(oauth(&mock).build().unwrap()))
            .await
            .unwrap_err();
        assert!(e.is_auth());
        let log = mock.log.lock().unwrap();
        assert_eq!(log.authorizations.len(), 1, "{iss:?}");
        assert!(log.token_requests.is_empty(), "{iss:?}/{supported}");
    }
    // Not advertised and absent: proceed.
    let mock = Mock::start(Cfg {
        iss: Iss::Missing,
        iss_supported: false,
        ..Cfg::default()
    })
    .await;
    run(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap();
}

#[tokio::test]
async fn as_without_s256_is_refused() {
    // AUTH-23
    for methods in [None, Some(vec!["plain".to_owned()])] {
        let mock = Mock::start(Cfg {
            pkce_methods: methods,
            ..Cfg::default()
        })
        .await;
        let e = run(&mock, Arc::new(oauth(&mock).build().unwrap()))
            .await
            .unwrap_err();
        assert!(e.is_auth());
        assert!(mock.log.lock().unwrap().authorizations.is_empty());
    }
}

#[tokio::test]
async fn step_up_requests_the_union_of_scopes() {
    // AUTH-17 (challenge scope first), AUTH-19
    let mock = Mock::start(Cfg {
        challenge_scope: Some("mcp:read".into()),
        required_scope: Some("mcp:write".into()),
        ..Cfg::default()
    })
    .await;
    run(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap();
    let log = mock.log.lock().unwrap();
    assert_eq!(log.authorizations.len(), 2);
    assert_eq!(log.authorizations[0]["scope"], "mcp:read");
    assert_eq!(log.authorizations[1]["scope"], "mcp:read mcp:write");
}

#[tokio::test]
async fn endless_insufficient_scope_is_bounded() {
    // AUTH-19: a server that never accepts gets at most 3 authorizations.
    let mock = Mock::start(Cfg {
        required_scope: Some("admin".into()),
        withhold: Some("admin".into()),
        ..Cfg::default()
    })
    .await;
    let started = std::time::Instant::now();
    let e = run(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap_err();
    assert!(e.is_auth());
    assert_eq!(e.status(), Some(403));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let n = mock.log.lock().unwrap().authorizations.len();
    assert_eq!(n, 3, "{n} authorizations");
}

#[tokio::test]
async fn offline_access_only_when_the_as_lists_it() {
    // AUTH-27
    let mock = Mock::start(Cfg {
        as_scopes: Some(vec!["mcp:read".into(), "offline_access".into()]),
        ..Cfg::default()
    })
    .await;
    run(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap();
    assert_eq!(
        mock.log.lock().unwrap().authorizations[0]["scope"],
        "mcp:read offline_access"
    );
    let mock = Mock::start(Cfg::default()).await;
    mock.set(|c| c.prm_scopes = Some(vec!["mcp:read".into(), "offline_access".into()]));
    run(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap();
    assert_eq!(
        mock.log.lock().unwrap().authorizations[0]["scope"],
        "mcp:read"
    );
}

#[tokio::test]
async fn expired_tokens_are_refreshed_keeping_the_refresh_token() {
    // AUTH-27: the refresh response carries no refresh token; the old one stays.
    let mock = Mock::start(Cfg {
        expires_in: 0,
        ..Cfg::default()
    })
    .await;
    let o = Arc::new(oauth(&mock).build().unwrap());
    run(&mock, o.clone()).await.unwrap();
    let log = mock.log.lock().unwrap();
    let refreshes: Vec<_> = log
        .token_requests
        .iter()
        .filter(|(f, _)| f["grant_type"] == "refresh_token")
        .collect();
    assert!(refreshes.len() >= 2, "{}", refreshes.len());
    // Same refresh token each time, resource included.
    assert!(
        refreshes
            .iter()
            .all(|(f, _)| f["refresh_token"] == refreshes[0].0["refresh_token"])
    );
    assert!(refreshes.iter().all(|(f, _)| f["resource"] == mock.url()));
    assert_eq!(log.authorizations.len(), 1);
}

#[tokio::test]
async fn secret_methods_follow_the_as() {
    for (method, basic) in [("client_secret_basic", true), ("client_secret_post", false)] {
        let mock = Mock::start(Cfg {
            token_auth_methods: vec![method.into()],
            ..Cfg::default()
        })
        .await;
        run(&mock, Arc::new(oauth(&mock).build().unwrap()))
            .await
            .unwrap();
        let log = mock.log.lock().unwrap();
        let (f, authz) = &log.token_requests[0];
        assert_eq!(
            authz.as_deref().is_some_and(|a| a.starts_with("Basic ")),
            basic
        );
        assert_eq!(f.get("client_secret").is_some(), !basic);
    }
}

#[tokio::test]
async fn pre_registered_and_cimd_identities() {
    // AUTH-15: pre-registered credentials for this issuer; no DCR.
    let mock = Mock::start(Cfg {
        registration: false,
        token_auth_methods: vec!["client_secret_post".into()],
        ..Cfg::default()
    })
    .await;
    let o = oauth(&mock)
        .pre_registered(
            mock.issuer(),
            PreRegistered::Secret {
                client_id: "pre".into(),
                client_secret: "sec".into(),
            },
        )
        .build()
        .unwrap();
    run(&mock, Arc::new(o)).await.unwrap();
    {
        let log = mock.log.lock().unwrap();
        assert_eq!(log.authorizations[0]["client_id"], "pre");
        assert_eq!(log.token_requests[0].0["client_secret"], "sec");
    }
    // AUTH-14: credentials for another issuer are not used; no way left.
    let mock = Mock::start(Cfg {
        registration: false,
        ..Cfg::default()
    })
    .await;
    let o = oauth(&mock)
        .pre_registered(
            "https://other-as.example",
            PreRegistered::Public {
                client_id: "pre".into(),
            },
        )
        .build()
        .unwrap();
    let e = run(&mock, Arc::new(o)).await.unwrap_err();
    assert!(e.is_auth());
    assert!(mock.log.lock().unwrap().authorizations.is_empty());
    // AUTH-11: CIMD when supported.
    let mock = Mock::start(Cfg {
        cimd: true,
        ..Cfg::default()
    })
    .await;
    let cimd = "https://app.example/client.json";
    run(
        &mock,
        Arc::new(oauth(&mock).client_metadata_url(cimd).build().unwrap()),
    )
    .await
    .unwrap();
    let log = mock.log.lock().unwrap();
    assert!(log.registrations.is_empty());
    assert_eq!(log.authorizations[0]["client_id"], cimd);
}

#[tokio::test]
async fn authorization_server_migration_re_registers() {
    // AUTH-09/14: after migration, AS2 never sees AS1's client.
    let mock = Mock::start(Cfg::default()).await;
    let o = Arc::new(oauth(&mock).build().unwrap());
    run(&mock, o.clone()).await.unwrap();
    mock.set(|c| c.issuer_path = "/as2".into());
    run(&mock, o.clone()).await.unwrap();
    let issuer = o.issuer().await;
    assert_eq!(issuer, Some(format!("{}/as2", mock.base)));
    let log = mock.log.lock().unwrap();
    assert_eq!(log.registrations.len(), 2);
    assert_eq!(log.registrations[1].0, "/as2");
    let last = log.authorizations.last().unwrap();
    assert!(last["client_id"].starts_with("client/as2"), "{last:?}");
}

#[tokio::test]
async fn file_store_lets_a_new_process_skip_authorization() {
    let dir = std::env::temp_dir().join(format!(
        "mcp-auth-oauth-test-{}-{}",
        std::process::id(),
        ferromcp_auth::client::pkce::random_token(6).unwrap()
    ));
    let mock = Mock::start(Cfg::default()).await;
    let store = Arc::new(FileStore::new(&dir));
    run(
        &mock,
        Arc::new(oauth(&mock).store(store.clone()).build().unwrap()),
    )
    .await
    .unwrap();
    run(&mock, Arc::new(oauth(&mock).store(store).build().unwrap()))
        .await
        .unwrap();
    let log = mock.log.lock().unwrap();
    assert_eq!(log.authorizations.len(), 1);
    assert_eq!(log.registrations.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn login_and_logout() {
    let mock = Mock::start(Cfg::default()).await;
    let o = oauth(&mock).build().unwrap();
    o.login().await.unwrap();
    assert!(o.token().await.is_some());
    o.login().await.unwrap(); // a valid token: nothing new
    assert_eq!(mock.log.lock().unwrap().authorizations.len(), 1);
    o.logout().await.unwrap();
    assert!(o.token().await.is_none());
}

#[tokio::test]
async fn ssrf_policy_blocks_metadata_urls() {
    // AUTH-28: the strict policy refuses http and loopback destinations.
    let mock = Mock::start(Cfg::default()).await;
    let strict = HttpClient::new(NetPolicy::strict());
    let o = OAuthClient::builder(mock.url())
        .http_client(strict.clone())
        .authorization_handler(Arc::new(HeadlessAuthorization::new(strict)))
        .build()
        .unwrap();
    let e = run(&mock, Arc::new(o)).await.unwrap_err();
    assert!(e.is_auth());
    // Only the MCP request reached the mock.
    assert!(mock.requests().iter().all(|r| r == "POST /mcp"));
    // A challenge pointing at link-local metadata is refused before connecting.
    let http = HttpClient::new(NetPolicy::loopback_allowed());
    let e = http
        .get("http://169.254.169.254/latest/meta-data")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), &ferromcp_auth::client::OAuthErrorKind::Policy);
    // Size cap.
    let small = HttpClient::new(NetPolicy::loopback_allowed()).max_response_bytes(16);
    assert!(
        small
            .get(&format!(
                "{}/.well-known/oauth-authorization-server",
                mock.base
            ))
            .await
            .is_err()
    );
}

/// A 2025-03-26 server: no PRM anywhere, no `resource_metadata` in the
/// challenge, the handshake era on /mcp.
fn legacy_cfg() -> Cfg {
    Cfg {
        legacy_mcp: true,
        ..legacy(true)
    }
}

/// Like [`run`], in the handshake era (`initialize` first, as a 2025-03-26
/// server expects).
async fn run_legacy(mock: &Mock, oauth: Arc<OAuthClient>) -> Result<(), ferromcp_client::Error> {
    let client = ClientBuilder::new("t", "1")
        .era(EraPreference::Handshake)
        .http_auth(oauth)
        .connect_url(&mock.url())
        .await?;
    let tools = client.list_tools().await?;
    client.call_tool(&tools[0].name, None).await?;
    client.close().await;
    Ok(())
}

/// The index of `line` in the mock's request log.
fn position(mock: &Mock, line: &str) -> Option<usize> {
    mock.requests().iter().position(|r| r == line)
}

#[tokio::test]
async fn legacy_server_with_as_metadata_at_its_origin() {
    // LEGACY-26: no PRM → RFC 8414 metadata at the authorization base URL
    // (the server URL without /mcp), whose endpoints are then used.
    let mock = Mock::start(Cfg {
        endpoint_path: Some("/oauth".into()),
        ..legacy_cfg()
    })
    .await;
    let o = Arc::new(oauth(&mock).build().unwrap());
    run_legacy(&mock, o.clone()).await.unwrap();
    assert_eq!(o.issuer().await.as_deref(), Some(mock.base.as_str()));
    // PRM first (path-inserted, then root), then the AS metadata at the root.
    let path_prm = position(&mock, "GET /.well-known/oauth-protected-resource/mcp").unwrap();
    let root_prm = position(&mock, "GET /.well-known/oauth-protected-resource").unwrap();
    let meta = position(&mock, "GET /.well-known/oauth-authorization-server").unwrap();
    assert!(path_prm < root_prm && root_prm < meta);
    // Only the RFC 8414 location (2025-03-26 knows no OIDC discovery).
    assert!(
        !mock
            .requests()
            .iter()
            .any(|r| r.contains("openid-configuration"))
    );
    // The metadata's endpoints, not the defaults.
    for line in [
        "POST /oauth/register",
        "GET /oauth/authorize",
        "POST /oauth/token",
    ] {
        assert!(position(&mock, line).is_some(), "{line}");
    }
    for line in ["POST /register", "GET /authorize", "POST /token"] {
        assert!(position(&mock, line).is_none(), "{line}");
    }
    let log = mock.log.lock().unwrap();
    // PKCE S256 as always (the mock checks the verifier); LEGACY-28: no
    // PRM, so no RFC 8707 resource in either request.
    let a = &log.authorizations[0];
    assert_eq!(a["code_challenge_method"], "S256");
    assert!(!a.contains_key("resource"), "{a:?}");
    assert!(!a.contains_key("scope"), "{a:?}");
    assert!(!log.token_requests[0].0.contains_key("resource"));
    // Every MCP request after the first 401 carried the token (AUTH-20).
    assert_eq!(log.ferromcp_auth[0], None);
    assert!(
        log.ferromcp_auth[1..]
            .iter()
            .all(|h| h.as_deref().is_some_and(|v| v.starts_with("Bearer at-")))
    );
}

#[tokio::test]
async fn legacy_login_with_default_endpoints_is_stored_and_revocable() {
    // LEGACY-26: no PRM and no AS metadata → {base}/register (DCR),
    // {base}/authorize and {base}/token; `mcp login`'s path (login()), then
    // the stored token is used and found again for revocation.
    let mock = Mock::start(Cfg {
        publish_as_metadata: false,
        ..legacy_cfg()
    })
    .await;
    let store = Arc::new(ferromcp_auth::client::MemoryStore::new());
    let o = oauth(&mock).store(store.clone()).build().unwrap();
    o.login().await.unwrap();
    assert_eq!(o.issuer().await.as_deref(), Some(mock.base.as_str()));
    let meta = position(&mock, "GET /.well-known/oauth-authorization-server").unwrap();
    let register = position(&mock, "POST /register").unwrap();
    let authorize = position(&mock, "GET /authorize").unwrap();
    let token = position(&mock, "POST /token").unwrap();
    assert!(meta < register && register < authorize && authorize < token);
    {
        let log = mock.log.lock().unwrap();
        assert_eq!(log.registrations.len(), 1);
        assert_eq!(log.registrations[0].1["application_type"], "native");
        let a = &log.authorizations[0];
        assert_eq!(a["code_challenge_method"], "S256");
        assert!(!a["code_challenge"].is_empty());
        assert!(a["client_id"].starts_with("client"));
        assert!(!a.contains_key("resource"));
        let (t, _) = &log.token_requests[0];
        assert_eq!(t["grant_type"], "authorization_code");
        assert!(!t.contains_key("resource"));
    }
    // The stored credentials serve the MCP session without a new login.
    let o = Arc::new(oauth(&mock).store(store.clone()).build().unwrap());
    run_legacy(&mock, o).await.unwrap();
    assert_eq!(mock.log.lock().unwrap().authorizations.len(), 1);
    // Revocation finds the same store entry (issuer = the origin).
    let http = HttpClient::new(NetPolicy::loopback_allowed());
    let report = ferromcp_auth::client::revoke_stored(&http, &mock.url(), store.as_ref())
        .await
        .unwrap();
    assert_eq!(report.key.issuer, mock.base);
    assert_eq!(report.key.resource, mock.url());
    assert!(report.had_token);
    // No metadata, so no revocation endpoint: a warning, not an error.
    assert!(report.revoked.is_empty());
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
}

#[tokio::test]
async fn legacy_discovery_sends_mcp_protocol_version() {
    // LEGACY-26: MCP-Protocol-Version on the metadata discovery request:
    // 2025-03-26 when the server's version is unknown, else the known one.
    for (known, expected) in [(None, "2025-03-26"), (Some("2025-03-26"), "2025-03-26")] {
        let mock = Mock::start(legacy_cfg()).await;
        let mut b = oauth(&mock);
        if let Some(v) = known {
            b = b.protocol_version(v);
        }
        b.build().unwrap().login().await.unwrap();
        let log = mock.log.lock().unwrap();
        let i = log
            .requests
            .iter()
            .position(|r| r == "GET /.well-known/oauth-authorization-server")
            .unwrap();
        assert_eq!(log.protocol_versions[i].as_deref(), Some(expected));
    }
    // Without metadata too (the request that finds none carries it).
    let mock = Mock::start(Cfg {
        publish_as_metadata: false,
        ..legacy_cfg()
    })
    .await;
    run_legacy(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap();
    let log = mock.log.lock().unwrap();
    let i = log
        .requests
        .iter()
        .position(|r| r == "GET /.well-known/oauth-authorization-server")
        .unwrap();
    assert_eq!(log.protocol_versions[i].as_deref(), Some("2025-03-26"));
}

#[tokio::test]
async fn legacy_metadata_issuer_must_be_the_origin() {
    // LEGACY-26 + AUTH-08 (RFC 8414 §3.3): the origin's metadata naming
    // another issuer is refused; the defaults are not tried instead.
    let mock = Mock::start(legacy_cfg()).await;
    mock.set(|c| c.metadata_issuer = Some(format!("{}/", mock.base)));
    let e = oauth(&mock).build().unwrap().login().await.unwrap_err();
    assert!(e.is_issuer_mismatch(), "{e}");
    assert!(mock.log.lock().unwrap().registrations.is_empty());
    assert!(mock.log.lock().unwrap().authorizations.is_empty());
}

#[tokio::test]
async fn no_fallback_for_modern_servers_without_prm() {
    // LEGACY-26 applies only to 2025-03-26 (or not yet known) servers: a
    // server known to speak 2025-06-18+ must have PRM (AUTH-03, LEGACY-27),
    // and so must one naming a PRM URL in its challenge. The same server
    // with an unknown version is taken for a 2025-03-26 one.
    let mock = Mock::start(legacy_cfg()).await;
    for v in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        let e = oauth(&mock)
            .protocol_version(v)
            .build()
            .unwrap()
            .login()
            .await
            .unwrap_err();
        assert!(e.is_discovery(), "{e}");
        assert_eq!(
            e.message(),
            format!(
                "{}/.well-known/oauth-protected-resource answered 404 Not Found",
                mock.base
            )
        );
    }
    let stateless = oauth(&mock).protocol_version("2026-07-28").build().unwrap();
    mock.set(|c| c.legacy_mcp = false);
    let e = run(&mock, Arc::new(stateless)).await.unwrap_err();
    assert!(e.is_auth(), "{e}");
    assert!(
        !mock
            .requests()
            .iter()
            .any(|r| r.contains("authorization-server") || r.contains("authorize"))
    );
    // A PRM URL in the challenge that answers 404: no fallback either.
    mock.set(|c| c.rm_in_challenge = true);
    let e = run(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap_err();
    assert!(e.is_auth(), "{e}");
    assert!(
        !mock
            .requests()
            .iter()
            .any(|r| r.contains("authorization-server") || r.contains("authorize"))
    );
    // Version unknown, no PRM: LEGACY-26.
    mock.set(|c| {
        c.rm_in_challenge = false;
        c.legacy_mcp = true;
    });
    run_legacy(&mock, Arc::new(oauth(&mock).build().unwrap()))
        .await
        .unwrap();
    assert_eq!(mock.log.lock().unwrap().authorizations.len(), 1);
}
