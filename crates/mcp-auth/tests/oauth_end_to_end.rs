//! The whole OAuth 2.1 story over real HTTP on 127.0.0.1, every party ours
//! except the authorization server, which is a small but real one started
//! inside the test:
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
//! - an MCP server (`mcp_server::Server`) behind `mcp-auth`'s `AuthLayer`
//!   with a `JwtVerifier` reading that JWKS;
//! - `mcp-client` with `mcp-auth`'s `OAuthClient` (headless authorization).
//!
//! Covers AUTH-04/05 (401 with resource_metadata, discovery), AUTH-10/13
//! (DCR with application_type), AUTH-17/18/19 (scopes, 403
//! insufficient_scope, step-up), AUTH-20/21 (tokens on every request;
//! audience checked), AUTH-22 (resource in both requests), AUTH-23 (PKCE),
//! AUTH-24/25 (iss), AUTH-26 (state), AUTH-27 (refresh with rotation) and
//! the principal reaching handlers; plus the extension grants
//! (client_credentials with private_key_jwt, SEP-1046; workload JWT bearer,
//! SEP-1933; enterprise-managed authorization, SEP-990) and DPoP-bound
//! tokens end to end (RFC 9449, SEP-1932).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::{Value, json};
use sha2::Digest as _;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn b64url(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn random(n: usize) -> String {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).expect("random");
    b64url(b)
}

/// `application/x-www-form-urlencoded` → pairs.
fn parse_form(s: &str) -> HashMap<String, String> {
    fn dec(s: &str) -> String {
        let s = s.replace('+', " ");
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%'
                && i + 2 < b.len()
                && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
            out.push(b[i]);
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    s.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (dec(k), dec(v))
        })
        .collect()
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The issuer's signing key and its public JWK.
struct Key {
    enc: EncodingKey,
    jwk: Value,
}

impl Key {
    fn generate() -> Self {
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
        jwk["kid"] = "as-key-1".into();
        jwk["use"] = "sig".into();
        Self { enc, jwk }
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_typ("at+jwt", claims)
    }

    fn sign_typ(&self, typ: &str, claims: &Value) -> String {
        let mut h = Header::new(Algorithm::ES256);
        h.kid = Some("as-key-1".into());
        h.typ = Some(typ.into());
        jsonwebtoken::encode(&h, claims, &self.enc).expect("sign")
    }

    fn verify(&self, jwt: &str, aud: &str) -> Result<Value, String> {
        let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(self.jwk.clone()).expect("jwk");
        let key = DecodingKey::from_jwk(&jwk).expect("key");
        let mut v = Validation::new(Algorithm::ES256);
        v.set_audience(&[aud]);
        v.leeway = 0;
        v.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
        jsonwebtoken::decode::<Value>(jwt, &key, &v)
            .map(|d| d.claims)
            .map_err(|e| e.to_string())
    }
}

/// A registered client.
#[derive(Clone)]
struct RegisteredClient {
    redirect_uris: Vec<String>,
    /// For `private_key_jwt` clients: the public key.
    jwk: Option<Value>,
}

/// An issued, not yet redeemed authorization code.
struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
    resource: String,
}

/// A live refresh token.
#[derive(Clone)]
struct Refresh {
    client_id: String,
    scope: String,
    resource: String,
    jkt: Option<String>,
}

/// What the test can look at and change.
#[derive(Default)]
struct AsLog {
    /// Query parameters of every authorization request.
    authorize: Vec<HashMap<String, String>>,
    /// Form parameters of every token request, with the DPoP header.
    token: Vec<(HashMap<String, String>, Option<String>)>,
    /// Bodies of every registration request.
    register: Vec<Value>,
    /// Form parameters of every token exchange at the enterprise IdP.
    idp: Vec<HashMap<String, String>>,
}

/// The in-test authorization server.
struct AuthServer {
    url: String,
    key: Key,
    /// The key of the workload identity issuer this AS trusts (WIF).
    workload_key: Key,
    /// The enterprise IdP's key (ID tokens and ID-JAGs).
    idp_key: Key,
    clients: Mutex<HashMap<String, RegisteredClient>>,
    codes: Mutex<HashMap<String, Code>>,
    refresh: Mutex<HashMap<String, Refresh>>,
    /// Access-token lifetime handed out, in seconds.
    lifetime: AtomicU64,
    /// DPoP proof `jti`s seen (replay check).
    jtis: Mutex<Vec<String>>,
    log: Mutex<AsLog>,
    issued: AtomicUsize,
}

fn json_response(status: u16, v: &Value) -> http::Response<Full<Bytes>> {
    let mut r = http::Response::new(Full::new(Bytes::from(v.to_string())));
    *r.status_mut() = http::StatusCode::from_u16(status).expect("status");
    r.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("application/json"),
    );
    r.headers_mut()
        .insert("cache-control", http::HeaderValue::from_static("no-store"));
    r
}

fn oauth_error(status: u16, code: &str, why: &str) -> http::Response<Full<Bytes>> {
    json_response(status, &json!({"error": code, "error_description": why}))
}

impl AuthServer {
    async fn start() -> Arc<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let me = Arc::new(Self {
            url: format!("http://{addr}"),
            key: Key::generate(),
            workload_key: Key::generate(),
            idp_key: Key::generate(),
            clients: Mutex::new(HashMap::new()),
            codes: Mutex::new(HashMap::new()),
            refresh: Mutex::new(HashMap::new()),
            lifetime: AtomicU64::new(300),
            jtis: Mutex::new(Vec::new()),
            log: Mutex::new(AsLog::default()),
            issued: AtomicUsize::new(0),
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

    fn metadata(&self) -> Value {
        let u = &self.url;
        json!({
            "issuer": u,
            "authorization_endpoint": format!("{u}/authorize"),
            "token_endpoint": format!("{u}/token"),
            "registration_endpoint": format!("{u}/register"),
            "jwks_uri": format!("{u}/jwks"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": ["ES256"],
            "authorization_response_iss_parameter_supported": true,
            "scopes_supported": ["mcp", "admin"],
            "dpop_signing_alg_values_supported": ["ES256"],
        })
    }

    async fn handle(
        &self,
        req: http::Request<hyper::body::Incoming>,
    ) -> http::Response<Full<Bytes>> {
        let method = req.method().clone();
        let path = req.uri().path().to_owned();
        let query = req.uri().query().unwrap_or("").to_owned();
        let basic = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        let dpop = req
            .headers()
            .get_all("dpop")
            .iter()
            .map(|v| v.to_str().unwrap_or("").to_owned())
            .collect::<Vec<_>>();
        let body = req.into_body().collect().await.expect("body").to_bytes();
        match (method.as_str(), path.as_str()) {
            ("GET", "/.well-known/oauth-authorization-server") => {
                json_response(200, &self.metadata())
            }
            ("GET", "/jwks") => json_response(200, &json!({"keys": [self.key.jwk]})),
            ("POST", "/register") => self.register(&body),
            ("GET", "/authorize") => self.authorize(&query),
            ("POST", "/token") => self.token(&body, &dpop, basic.as_deref()),
            ("POST", "/idp/token") => self.idp_exchange(&body),
            _ => json_response(404, &json!({"error": "not found"})),
        }
    }

    /// RFC 7591: public clients only (`none`), loopback redirect URIs.
    fn register(&self, body: &[u8]) -> http::Response<Full<Bytes>> {
        let Ok(req) = serde_json::from_slice::<Value>(body) else {
            return oauth_error(400, "invalid_client_metadata", "not JSON");
        };
        self.log.lock().unwrap().register.push(req.clone());
        let redirect_uris: Vec<String> = req["redirect_uris"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if redirect_uris.is_empty() {
            return oauth_error(400, "invalid_redirect_uri", "redirect_uris required");
        }
        let client_id = format!("dcr-{}", random(8));
        self.clients.lock().unwrap().insert(
            client_id.clone(),
            RegisteredClient {
                redirect_uris: redirect_uris.clone(),
                jwk: None,
            },
        );
        json_response(
            201,
            &json!({
                "client_id": client_id,
                "redirect_uris": redirect_uris,
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "client_name": req["client_name"],
            }),
        )
    }

    /// Approves at once: redirects with code, state and iss.
    fn authorize(&self, query: &str) -> http::Response<Full<Bytes>> {
        let q = parse_form(query);
        self.log.lock().unwrap().authorize.push(q.clone());
        let get = |k: &str| q.get(k).cloned().unwrap_or_default();
        let client_id = get("client_id");
        let redirect_uri = get("redirect_uri");
        let Some(client) = self.clients.lock().unwrap().get(&client_id).cloned() else {
            return oauth_error(400, "invalid_client", "unknown client_id");
        };
        // AUTH-28: exact redirect URI match; never redirect elsewhere.
        if !client.redirect_uris.contains(&redirect_uri) {
            return oauth_error(400, "invalid_request", "unregistered redirect_uri");
        }
        if get("response_type") != "code"
            || get("code_challenge_method") != "S256"
            || get("code_challenge").len() < 43
        {
            return oauth_error(
                400,
                "invalid_request",
                "PKCE S256 and response_type=code required",
            );
        }
        let code = random(16);
        self.codes.lock().unwrap().insert(
            code.clone(),
            Code {
                client_id,
                redirect_uri: redirect_uri.clone(),
                challenge: get("code_challenge"),
                scope: get("scope"),
                resource: get("resource"),
            },
        );
        let sep = if redirect_uri.contains('?') { '&' } else { '?' };
        let location = format!(
            "{redirect_uri}{sep}code={}&state={}&iss={}",
            enc(&code),
            enc(&get("state")),
            enc(&self.url)
        );
        let mut r = http::Response::new(Full::new(Bytes::new()));
        *r.status_mut() = http::StatusCode::FOUND;
        r.headers_mut().insert(
            "location",
            http::HeaderValue::from_str(&location).expect("location"),
        );
        r
    }

    /// Validates a DPoP proof for the token endpoint (RFC 9449 §4.3) and
    /// returns the key's thumbprint.
    fn check_dpop(&self, proofs: &[String]) -> Result<Option<String>, String> {
        let proof = match proofs {
            [] => return Ok(None),
            [one] => one,
            _ => return Err("more than one DPoP header".into()),
        };
        let header = jsonwebtoken::decode_header(proof).map_err(|e| e.to_string())?;
        if header.typ.as_deref() != Some("dpop+jwt") || header.alg != Algorithm::ES256 {
            return Err("typ/alg".into());
        }
        let jwk = header.jwk.ok_or("no jwk")?;
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string())?;
        let mut v = Validation::new(Algorithm::ES256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        v.validate_aud = false;
        let claims = jsonwebtoken::decode::<Value>(proof, &key, &v)
            .map_err(|e| e.to_string())?
            .claims;
        if claims["htm"] != "POST" || claims["htu"] != format!("{}/token", self.url) {
            return Err(format!("htm/htu: {claims}"));
        }
        if claims["iat"]
            .as_u64()
            .is_none_or(|iat| iat.abs_diff(now()) > 60)
        {
            return Err("iat".into());
        }
        let jti = claims["jti"].as_str().ok_or("jti")?.to_owned();
        let mut jtis = self.jtis.lock().unwrap();
        if jtis.contains(&jti) {
            return Err("replayed jti".into());
        }
        jtis.push(jti);
        Ok(Some(
            jwk.thumbprint(jsonwebtoken::jwk::ThumbprintHash::SHA256)
                .map_err(|e| e.to_string())?,
        ))
    }

    /// The enterprise IdP's RFC 8693 endpoint: ID token → ID-JAG.
    fn idp_exchange(&self, body: &[u8]) -> http::Response<Full<Bytes>> {
        let f = parse_form(&String::from_utf8_lossy(body));
        self.log.lock().unwrap().idp.push(f.clone());
        let get = |k: &str| f.get(k).cloned().unwrap_or_default();
        if get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange"
            || get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag"
            || get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token"
            || get("audience") != self.url
            || get("resource").is_empty()
        {
            return oauth_error(400, "invalid_request", "bad token exchange parameters");
        }
        let id_token = match self.idp_key.verify(&get("subject_token"), "idp-client") {
            Ok(c) => c,
            Err(e) => return oauth_error(400, "invalid_grant", &e),
        };
        let jag = self.idp_key.sign_typ(
            "oauth-id-jag+jwt",
            &json!({"iss": format!("{}/idp", self.url), "sub": id_token["sub"], "aud": self.url,
                    "resource": get("resource"), "client_id": "ema-client",
                    "iat": now(), "exp": now() + 300, "jti": random(8)}),
        );
        json_response(
            200,
            &json!({"access_token": jag, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}),
        )
    }

    /// RFC 7523: an ID-JAG from the enterprise IdP (client must
    /// authenticate) or a workload JWT from the trusted workload issuer.
    fn jwt_bearer(
        &self,
        f: &HashMap<String, String>,
        basic: Option<&str>,
        jkt: Option<String>,
    ) -> http::Response<Full<Bytes>> {
        let get = |k: &str| f.get(k).cloned().unwrap_or_default();
        let assertion = get("assertion");
        let typ = jsonwebtoken::decode_header(&assertion)
            .ok()
            .and_then(|h| h.typ)
            .unwrap_or_default();
        if typ == "oauth-id-jag+jwt" {
            if basic != Some("ema-client:ema-secret") {
                return oauth_error(401, "invalid_client", "client authentication required");
            }
            let claims = match self.idp_key.verify(&assertion, &self.url) {
                Ok(c) => c,
                Err(e) => return oauth_error(400, "invalid_grant", &e),
            };
            if claims["client_id"] != "ema-client" || claims["resource"] != get("resource").as_str()
            {
                return oauth_error(400, "invalid_grant", "ID-JAG client or resource mismatch");
            }
            let sub = claims["sub"].as_str().unwrap_or_default().to_owned();
            return self.issue(
                "ema-client",
                &sub,
                &get("scope"),
                &get("resource"),
                jkt,
                false,
            );
        }
        match self.workload_key.verify(&assertion, &self.url) {
            Ok(claims) => {
                let sub = claims["sub"].as_str().unwrap_or_default().to_owned();
                self.issue(
                    &get("client_id"),
                    &sub,
                    &get("scope"),
                    &get("resource"),
                    jkt,
                    false,
                )
            }
            Err(e) => oauth_error(400, "invalid_grant", &e),
        }
    }

    fn token(
        &self,
        body: &[u8],
        dpop: &[String],
        basic: Option<&str>,
    ) -> http::Response<Full<Bytes>> {
        let f = parse_form(&String::from_utf8_lossy(body));
        self.log
            .lock()
            .unwrap()
            .token
            .push((f.clone(), dpop.first().cloned()));
        let jkt = match self.check_dpop(dpop) {
            Ok(j) => j,
            Err(e) => return oauth_error(400, "invalid_dpop_proof", &e),
        };
        let get = |k: &str| f.get(k).cloned().unwrap_or_default();
        match get("grant_type").as_str() {
            "authorization_code" => {
                let Some(code) = self.codes.lock().unwrap().remove(&get("code")) else {
                    return oauth_error(400, "invalid_grant", "unknown or used code");
                };
                if code.client_id != get("client_id") || code.redirect_uri != get("redirect_uri") {
                    return oauth_error(400, "invalid_grant", "client or redirect_uri mismatch");
                }
                // AUTH-23: PKCE S256.
                if b64url(sha2::Sha256::digest(get("code_verifier").as_bytes())) != code.challenge {
                    return oauth_error(400, "invalid_grant", "PKCE verification failed");
                }
                // AUTH-22: the same resource in both requests.
                if code.resource != get("resource") {
                    return oauth_error(
                        400,
                        "invalid_target",
                        "resource differs from the authorization request",
                    );
                }
                self.issue(
                    &code.client_id,
                    "alice",
                    &code.scope,
                    &code.resource,
                    jkt,
                    true,
                )
            }
            "refresh_token" => {
                let Some(r) = self.refresh.lock().unwrap().remove(&get("refresh_token")) else {
                    return oauth_error(400, "invalid_grant", "unknown refresh token");
                };
                if r.client_id != get("client_id") {
                    return oauth_error(400, "invalid_grant", "refresh token of another client");
                }
                if r.jkt.is_some() && r.jkt != jkt {
                    return oauth_error(400, "invalid_grant", "refresh token bound to another key");
                }
                let resource = if get("resource").is_empty() {
                    r.resource.clone()
                } else {
                    get("resource")
                };
                self.issue(&r.client_id, "alice", &r.scope, &resource, jkt, true)
            }
            "client_credentials" => {
                let client_id = get("client_id");
                let Some(client) = self.clients.lock().unwrap().get(&client_id).cloned() else {
                    return oauth_error(401, "invalid_client", "unknown client");
                };
                let Some(jwk) = client.jwk else {
                    return oauth_error(401, "invalid_client", "client has no key");
                };
                if get("client_assertion_type")
                    != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
                {
                    return oauth_error(401, "invalid_client", "client_assertion_type");
                }
                let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(jwk).expect("jwk");
                let key = DecodingKey::from_jwk(&jwk).expect("key");
                let mut v = Validation::new(Algorithm::ES256);
                v.set_audience(&[&self.url]);
                v.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
                let claims = match jsonwebtoken::decode::<Value>(&get("client_assertion"), &key, &v)
                {
                    Ok(d) => d.claims,
                    Err(e) => return oauth_error(401, "invalid_client", &e.to_string()),
                };
                if claims["iss"] != client_id.as_str() || claims["sub"] != client_id.as_str() {
                    return oauth_error(401, "invalid_client", "iss/sub must be the client_id");
                }
                let scope = get("scope");
                self.issue(&client_id, &client_id, &scope, &get("resource"), jkt, false)
            }
            "urn:ietf:params:oauth:grant-type:jwt-bearer" => self.jwt_bearer(&f, basic, jkt),
            other => oauth_error(400, "unsupported_grant_type", other),
        }
    }

    fn issue(
        &self,
        client_id: &str,
        sub: &str,
        scope: &str,
        resource: &str,
        jkt: Option<String>,
        with_refresh: bool,
    ) -> http::Response<Full<Bytes>> {
        let lifetime = self.lifetime.load(Ordering::SeqCst);
        let mut claims = json!({
            "iss": self.url, "aud": resource, "sub": sub, "client_id": client_id,
            "scope": scope, "iat": now(), "exp": now() + lifetime, "jti": random(8),
        });
        if let Some(j) = &jkt {
            claims["cnf"] = json!({"jkt": j});
        }
        self.issued.fetch_add(1, Ordering::SeqCst);
        let mut answer = json!({
            "access_token": self.key.sign(&claims),
            "token_type": if jkt.is_some() { "DPoP" } else { "Bearer" },
            "expires_in": lifetime,
            "scope": scope,
        });
        if with_refresh {
            let rt = random(24);
            self.refresh.lock().unwrap().insert(
                rt.clone(),
                Refresh {
                    client_id: client_id.into(),
                    scope: scope.into(),
                    resource: resource.into(),
                    jkt,
                },
            );
            answer["refresh_token"] = rt.into();
        }
        json_response(200, &answer)
    }

    /// A token as this issuer would mint it, for any audience.
    fn mint(&self, aud: &str, scope: &str) -> String {
        self.key.sign(&json!({
            "iss": self.url, "aud": aud, "sub": "mallory", "client_id": "x",
            "scope": scope, "iat": now(), "exp": now() + 300,
        }))
    }

    fn grants(&self, grant_type: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .token
            .iter()
            .filter(|(f, _)| f.get("grant_type").map(String::as_str) == Some(grant_type))
            .count()
    }
}

// ---------------------------------------------------------------------------
// The MCP server behind AuthLayer.

use mcp_auth::BearerChallenge;
use mcp_auth::client::grants::fixed_credential;
use mcp_auth::client::{
    ClientCredentialsGrant, ClientSecret, DpopProver, EnterpriseManagedGrant, Es256Key,
    IdentityProvider, JwtBearerGrant, PrivateKeyJwt,
};
use mcp_auth::client::{
    HeadlessAuthorization, HttpClient, NetPolicy, OAuthClient, OAuthClientBuilder,
};
use mcp_auth::resource::{AuthLayer, DpopPolicy, HyperFetch, JwtVerifier, ResourceUri};
use mcp_server::transport::http::{HttpConfig, McpService, serve_layered};
use mcp_server::{NoArgs, RequestContext, Server, tool};
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

fn mcp_server() -> Server {
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
    let mcp = McpService::new(mcp_server(), HttpConfig::default());
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

async fn connect(rs: &Rs, oauth: Arc<OAuthClient>) -> mcp_client::Client {
    mcp_client::ClientBuilder::new("e2e", "1.0.0")
        .era(mcp_client::EraPreference::ModernNoProbe)
        .http_auth(oauth)
        .connect_url(&rs.resource)
        .await
        .expect("connect")
}

async fn call_text(c: &mcp_client::Client, tool: &str) -> Result<String, mcp_client::Error> {
    let r = c.call_tool(tool, None).await?;
    Ok(r.content
        .iter()
        .filter_map(|b| match b {
            mcp_client::protocol::types::ContentBlock::Text(t) => Some(t.text.clone()),
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

/// AUTH-04/AUTH-16: a request without a token is refused with a challenge
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

/// The authorization-code flow end to end: discovery, DCR, PKCE, state,
/// iss, resource, then a tool call whose handler sees the principal but
/// not the token (AUTH-21).
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

/// AUTH-18/19: a tool needing another scope answers 403
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

/// AUTH-27: an expired access token is refreshed with the (rotated)
/// refresh token, without a new authorization.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_token_is_refreshed() {
    let (authz, rs) = setup().await;
    authz.lifetime.store(1, Ordering::SeqCst);
    let oauth = Arc::new(oauth(&rs).build().expect("oauth"));
    let client = connect(&rs, oauth).await;
    call_text(&client, "whoami").await.expect("first call");
    assert_eq!(authz.grants("refresh_token"), 0);
    authz.lifetime.store(300, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let text = call_text(&client, "whoami").await.expect("after expiry");
    assert!(text.starts_with("subject=alice"), "{text}");
    assert_eq!(authz.grants("refresh_token"), 1);
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

/// AUTH-21: a token minted by the right issuer for another resource is
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

/// AUTH-14: a grant bound to one issuer refuses to present its
/// credentials to another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grant_credentials_stay_with_their_issuer() {
    let (authz, rs) = setup().await;
    let key = Es256Key::generate().expect("key");
    let grant = ClientCredentialsGrant::new(Arc::new(PrivateKeyJwt::new("svc", key)))
        .only_for_issuer("https://other-issuer.example");
    let oauth = Arc::new(oauth(&rs).grant(Arc::new(grant)).build().expect("oauth"));
    let client = mcp_client::ClientBuilder::new("e2e", "1.0.0")
        .era(mcp_client::EraPreference::ModernNoProbe)
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
        &URL_SAFE_NO_PAD
            .decode(token.access_token.split('.').nth(1).expect("jwt"))
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
    let client = mcp_client::ClientBuilder::new("e2e", "1.0.0")
        .era(mcp_client::EraPreference::ModernNoProbe)
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
