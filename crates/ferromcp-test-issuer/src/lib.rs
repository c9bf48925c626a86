//! A small but real OAuth 2.1 authorization server for tests, on
//! `127.0.0.1`, shared by `ferromcp-auth`'s end-to-end tests and the `mcp` CLI's
//! `login` tests (a dev-dependency only; `publish = false`).
//!
//! - RFC 8414 metadata at `/.well-known/oauth-authorization-server`;
//! - RFC 7591 dynamic client registration at `/register` (public clients);
//! - `/authorize` approves at once and redirects (302) to the registered
//!   `redirect_uri` with `code`, `state` and `iss` (RFC 9207), after
//!   checking `response_type=code` and a PKCE S256 challenge;
//! - `/token`: authorization code (PKCE, `redirect_uri`, `resource`
//!   checks), refresh with rotation, `client_credentials` with
//!   `private_key_jwt` or `client_secret_basic` ([`AuthServer::secrets`]), RFC 7523 JWT bearer (workload JWTs, enterprise
//!   ID-JAGs), DPoP binding (RFC 9449) when a valid proof comes along;
//!   access tokens are ES256 JWTs whose `aud` is the requested resource,
//!   living [`AuthServer::lifetime`] seconds;
//! - `/revoke`: RFC 7009 revocation (see [`Revocation`]);
//! - `/device_authorization`: RFC 8628 device codes, approved, denied or
//!   expired by the test ([`AuthServer::decide`]); the token endpoint
//!   answers `authorization_pending` until then, `slow_down` to the first
//!   [`AuthServer::device_slow_downs`] polls and to polls faster than the
//!   interval in force;
//! - `/jwks` and an enterprise IdP's RFC 8693 exchange at `/idp/token`.
//!
//! Everything it sees is recorded in [`AuthServer::log`]. Being a test
//! fixture, it panics only on a broken environment (no loopback port, no
//! randomness) or a poisoned lock; bad requests get OAuth error answers.

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

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Unpadded base64url.
pub fn b64url(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `n` random bytes, base64url-encoded.
pub fn random(n: usize) -> String {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).expect("random");
    b64url(b)
}

/// `application/x-www-form-urlencoded` → pairs.
pub fn parse_form(s: &str) -> HashMap<String, String> {
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

/// Whether `requested` matches the registered redirect URI: identical,
/// or the same `http` loopback IP redirect on another port (RFC 8252 §7.3).
pub fn same_redirect(registered: &str, requested: &str) -> bool {
    if registered == requested {
        return true;
    }
    let strip = |u: &str| -> Option<(String, String)> {
        let uri: http::Uri = u.parse().ok()?;
        let host = uri.host()?;
        let rest = uri.path_and_query()?.as_str().to_owned();
        (uri.scheme_str() == Some("http") && (host == "127.0.0.1" || host == "[::1]"))
            .then(|| (host.to_owned(), rest))
    };
    matches!((strip(registered), strip(requested)), (Some(a), Some(b)) if a == b)
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn enc(s: &str) -> String {
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

/// An ES256 signing key and its public JWK (`kid` `as-key-1`).
pub struct Key {
    enc: EncodingKey,
    /// The public key as a JWK.
    pub jwk: Value,
}

impl Key {
    /// A fresh random P-256 key.
    pub fn generate() -> Self {
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

    /// Signs `claims` as an access token (`typ: at+jwt`).
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_typ("at+jwt", claims)
    }

    /// Signs `claims` with the given `typ` header.
    pub fn sign_typ(&self, typ: &str, claims: &Value) -> String {
        let mut h = Header::new(Algorithm::ES256);
        h.kid = Some("as-key-1".into());
        h.typ = Some(typ.into());
        jsonwebtoken::encode(&h, claims, &self.enc).expect("sign")
    }

    /// Verifies a JWT signed by this key, whatever its audience.
    pub fn verify_any_audience(&self, jwt: &str) -> Result<Value, String> {
        let jwk: jsonwebtoken::jwk::Jwk =
            serde_json::from_value(self.jwk.clone()).map_err(|e| e.to_string())?;
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string())?;
        let mut v = Validation::new(Algorithm::ES256);
        v.validate_aud = false;
        jsonwebtoken::decode::<Value>(jwt, &key, &v)
            .map(|d| d.claims)
            .map_err(|e| e.to_string())
    }

    /// Verifies a JWT signed by this key for audience `aud`.
    pub fn verify(&self, jwt: &str, aud: &str) -> Result<Value, String> {
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
#[derive(Clone, Debug)]
pub struct RegisteredClient {
    /// Its redirect URIs (exact match at the authorization endpoint).
    pub redirect_uris: Vec<String>,
    /// For `private_key_jwt` clients: the public key.
    pub jwk: Option<Value>,
}

/// An issued, not yet redeemed authorization code.
struct Code {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
    resource: String,
}

/// What became of a device code (RFC 8628), decided by the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceDecision {
    /// Not decided yet: polls get `authorization_pending`.
    Pending,
    /// The user approved: the next poll gets the token.
    Approved,
    /// The user denied: polls get `access_denied`.
    Denied,
    /// The code expired: polls get `expired_token`.
    Expired,
}

/// An issued device code.
struct Device {
    client_id: String,
    user_code: String,
    scope: String,
    resource: String,
    decision: DeviceDecision,
    /// The interval the client must keep now (grows with `slow_down`).
    interval: u64,
    /// When the last poll was answered.
    last_poll: Option<std::time::Instant>,
}

/// A live refresh token.
#[derive(Clone)]
struct Refresh {
    client_id: String,
    scope: String,
    resource: String,
    jkt: Option<String>,
}

/// Every request the server saw, for tests to inspect.
#[derive(Default, Debug)]
pub struct AsLog {
    /// Query parameters of every authorization request.
    pub authorize: Vec<HashMap<String, String>>,
    /// Form parameters of every token request, with the DPoP header.
    pub token: Vec<(HashMap<String, String>, Option<String>)>,
    /// Bodies of every registration request.
    pub register: Vec<Value>,
    /// Form parameters of every token exchange at the enterprise IdP.
    pub idp: Vec<HashMap<String, String>>,
    /// Form parameters of every revocation request.
    pub revoke: Vec<HashMap<String, String>>,
    /// Form parameters of every device authorization request.
    pub device: Vec<HashMap<String, String>>,
}

/// What `/revoke` does (RFC 7009).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Revocation {
    /// Advertised as `revocation_endpoint`; revokes refresh tokens (a
    /// revoked one is refused afterwards) and records access tokens.
    #[default]
    Enabled,
    /// Advertised, but every request answers 503 (for failure handling).
    Failing,
    /// Not advertised in the metadata (and the endpoint answers 404).
    Absent,
}

/// The authorization server. Start it with [`AuthServer::start`]; it
/// serves until the runtime it was started on shuts down.
pub struct AuthServer {
    /// Its issuer identifier and base URL, `http://127.0.0.1:PORT`.
    pub url: String,
    /// The key signing access tokens (published at `/jwks`).
    pub key: Key,
    /// The key of the workload identity issuer this AS trusts (WIF).
    pub workload_key: Key,
    /// The enterprise IdP's key (ID tokens and ID-JAGs).
    pub idp_key: Key,
    /// Registered clients by `client_id` (tests may add pre-registered ones).
    pub clients: Mutex<HashMap<String, RegisteredClient>>,
    /// Confidential clients of the `client_credentials` grant with
    /// `client_secret_basic`: `client_id` to `client_secret` (tests add them).
    pub secrets: Mutex<HashMap<String, String>>,
    codes: Mutex<HashMap<String, Code>>,
    refresh: Mutex<HashMap<String, Refresh>>,
    /// Access-token lifetime handed out, in seconds (default 300).
    pub lifetime: AtomicU64,
    /// When set, authorization grants only these of the requested scopes
    /// (a user consenting to less than asked).
    pub consent: Mutex<Option<Vec<String>>>,
    /// How `/revoke` behaves (default [`Revocation::Enabled`]).
    pub revocation: Mutex<Revocation>,
    /// `jti`s of access tokens revoked at `/revoke`.
    pub revoked_access: Mutex<Vec<String>>,
    /// Calls of `/introspect`.
    pub introspections: AtomicUsize,
    /// DPoP proof `jti`s seen (replay check).
    jtis: Mutex<Vec<String>>,
    /// Every request seen.
    pub log: Mutex<AsLog>,
    /// How many access tokens were issued.
    pub issued: AtomicUsize,
    /// Device codes by `device_code`.
    devices: Mutex<HashMap<String, Device>>,
    /// The `interval` of device authorization answers (default 1).
    pub device_interval: AtomicU64,
    /// How many device-code polls still get `slow_down` (default 0).
    pub device_slow_downs: AtomicUsize,
    /// Polls that came sooner than the interval in force (less one
    /// second of slack) allowed; each was answered `slow_down`.
    pub device_early_polls: AtomicUsize,
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
    /// Binds `127.0.0.1:0` and serves on the current tokio runtime.
    ///
    /// # Panics
    /// When no loopback port can be bound (a broken test environment).
    pub async fn start() -> Arc<Self> {
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
            secrets: Mutex::new(HashMap::new()),
            codes: Mutex::new(HashMap::new()),
            refresh: Mutex::new(HashMap::new()),
            lifetime: AtomicU64::new(300),
            consent: Mutex::new(None),
            revocation: Mutex::new(Revocation::default()),
            revoked_access: Mutex::new(Vec::new()),
            introspections: AtomicUsize::new(0),
            jtis: Mutex::new(Vec::new()),
            log: Mutex::new(AsLog::default()),
            issued: AtomicUsize::new(0),
            devices: Mutex::new(HashMap::new()),
            device_interval: AtomicU64::new(1),
            device_slow_downs: AtomicUsize::new(0),
            device_early_polls: AtomicUsize::new(0),
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

    /// The RFC 8414 metadata document.
    pub fn metadata(&self) -> Value {
        let u = &self.url;
        let mut m = json!({
            "issuer": u,
            "authorization_endpoint": format!("{u}/authorize"),
            "token_endpoint": format!("{u}/token"),
            "registration_endpoint": format!("{u}/register"),
            "jwks_uri": format!("{u}/jwks"),
            "response_types_supported": ["code"],
            "device_authorization_endpoint": format!("{u}/device_authorization"),
            "grant_types_supported": [
                "authorization_code", "refresh_token", "client_credentials",
                "urn:ietf:params:oauth:grant-type:device_code"
            ],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": ["ES256"],
            "authorization_response_iss_parameter_supported": true,
            "scopes_supported": ["mcp", "admin"],
            "dpop_signing_alg_values_supported": ["ES256"],
        });
        if *self.revocation.lock().unwrap() != Revocation::Absent {
            m["revocation_endpoint"] = format!("{u}/revoke").into();
            m["revocation_endpoint_auth_methods_supported"] = json!(["none"]);
        }
        m
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
        let Ok(body) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
            return oauth_error(400, "invalid_request", "unreadable body");
        };
        match (method.as_str(), path.as_str()) {
            ("GET", "/.well-known/oauth-authorization-server") => {
                json_response(200, &self.metadata())
            }
            ("GET", "/jwks") => json_response(200, &json!({"keys": [self.key.jwk]})),
            ("POST", "/register") => self.register(&body),
            ("GET", "/authorize") => self.authorize(&query),
            ("POST", "/token") => self.token(&body, &dpop, basic.as_deref()),
            ("POST", "/idp/token") => self.idp_exchange(&body),
            ("POST", "/revoke") => self.revoke(&body),
            ("POST", "/device_authorization") => self.device_authorization(&body),
            ("POST", "/introspect") => self.introspect(&body, basic.as_deref()),
            _ => json_response(404, &json!({"error": "not found"})),
        }
    }

    /// RFC 7662 token introspection at `/introspect`, for resource servers
    /// authenticating with `client_secret_basic` as a client of
    /// [`AuthServer::secrets`]: an access token this server signed, not
    /// expired and not in [`AuthServer::revoked_access`], is active with
    /// its claims; anything else is `{"active": false}`. Each call is
    /// counted in [`AuthServer::introspections`].
    fn introspect(&self, body: &[u8], basic: Option<&str>) -> http::Response<Full<Bytes>> {
        self.introspections.fetch_add(1, Ordering::SeqCst);
        let known = basic
            .and_then(|b| b.split_once(':'))
            .is_some_and(|(id, secret)| {
                self.secrets.lock().unwrap().get(id).map(String::as_str) == Some(secret)
            });
        if !known {
            return oauth_error(
                401,
                "invalid_client",
                "introspection needs client_secret_basic",
            );
        }
        let f = parse_form(&String::from_utf8_lossy(body));
        let token = f.get("token").cloned().unwrap_or_default();
        let claims = match self.key.verify_any_audience(&token) {
            Ok(c) => c,
            Err(_) => return json_response(200, &json!({"active": false})),
        };
        let revoked = claims["jti"]
            .as_str()
            .is_some_and(|j| self.revoked_access.lock().unwrap().iter().any(|r| r == j));
        if revoked || claims["exp"].as_u64().is_none_or(|e| e <= now()) {
            return json_response(200, &json!({"active": false}));
        }
        let mut answer = claims;
        answer["active"] = true.into();
        answer["token_type"] = "Bearer".into();
        json_response(200, &answer)
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
        // AUTH-28: exact redirect URI match, except the port of a loopback
        // IP redirect (RFC 8252 §7.3); never redirect elsewhere.
        if !client
            .redirect_uris
            .iter()
            .any(|r| same_redirect(r, &redirect_uri))
        {
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
        let mut scope = get("scope");
        if let Some(allowed) = self.consent.lock().unwrap().as_ref() {
            scope = scope
                .split(' ')
                .filter(|s| allowed.iter().any(|a| a == s))
                .collect::<Vec<_>>()
                .join(" ");
        }
        let code = random(16);
        self.codes.lock().unwrap().insert(
            code.clone(),
            Code {
                client_id,
                redirect_uri: redirect_uri.clone(),
                challenge: get("code_challenge"),
                scope,
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
        let Ok(location) = http::HeaderValue::from_str(&location) else {
            return oauth_error(400, "invalid_request", "redirect_uri is not a header value");
        };
        let mut r = http::Response::new(Full::new(Bytes::new()));
        *r.status_mut() = http::StatusCode::FOUND;
        r.headers_mut().insert("location", location);
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
                if let Some((id, secret)) = basic.and_then(|b| b.split_once(':')) {
                    let known = self.secrets.lock().unwrap().get(id).cloned();
                    if known.as_deref() != Some(secret) {
                        return oauth_error(
                            401,
                            "invalid_client",
                            "unknown client or wrong secret",
                        );
                    }
                    return self.issue(id, id, &get("scope"), &get("resource"), jkt, false);
                }
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
                let Some(key) = serde_json::from_value::<jsonwebtoken::jwk::Jwk>(jwk)
                    .ok()
                    .and_then(|j| DecodingKey::from_jwk(&j).ok())
                else {
                    return oauth_error(401, "invalid_client", "the client's key is unusable");
                };
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
            "urn:ietf:params:oauth:grant-type:device_code" => {
                let mut devices = self.devices.lock().unwrap();
                let Some(d) = devices.get_mut(&get("device_code")) else {
                    return oauth_error(400, "invalid_grant", "unknown device code");
                };
                if d.client_id != get("client_id") || d.resource != get("resource") {
                    return oauth_error(400, "invalid_grant", "client or resource mismatch");
                }
                // RFC 8628 §3.5: polling faster than the interval in force
                // gets `slow_down` (and 5 more seconds of interval).
                let polled = std::time::Instant::now();
                let early = d.last_poll.is_some_and(|at| {
                    polled.duration_since(at).as_secs_f64() + 1.0 < d.interval as f64
                });
                d.last_poll = Some(polled);
                if early {
                    self.device_early_polls.fetch_add(1, Ordering::SeqCst);
                    d.interval += 5;
                    return oauth_error(400, "slow_down", "polling too fast");
                }
                let slow = self
                    .device_slow_downs
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                if slow {
                    d.interval += 5;
                    return oauth_error(400, "slow_down", "poll less often");
                }
                match d.decision {
                    DeviceDecision::Pending => {
                        oauth_error(400, "authorization_pending", "not yet approved")
                    }
                    DeviceDecision::Denied => oauth_error(400, "access_denied", "the user said no"),
                    DeviceDecision::Expired => oauth_error(400, "expired_token", "too late"),
                    DeviceDecision::Approved => {
                        let Some(d) = devices.remove(&get("device_code")) else {
                            return oauth_error(400, "invalid_grant", "unknown device code");
                        };
                        drop(devices);
                        self.issue(&d.client_id, "alice", &d.scope, &d.resource, jkt, true)
                    }
                }
            }
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

    /// RFC 7009: revokes a refresh token of the authenticating (public)
    /// client, or records an access token's `jti`. Unknown tokens get 200
    /// too (§2.2); a refresh token of another client is left alone.
    fn revoke(&self, body: &[u8]) -> http::Response<Full<Bytes>> {
        let f = parse_form(&String::from_utf8_lossy(body));
        self.log.lock().unwrap().revoke.push(f.clone());
        match *self.revocation.lock().unwrap() {
            Revocation::Enabled => {}
            Revocation::Failing => {
                return oauth_error(503, "temporarily_unavailable", "revocation is down");
            }
            Revocation::Absent => return json_response(404, &json!({"error": "not found"})),
        }
        let get = |k: &str| f.get(k).cloned().unwrap_or_default();
        let (token, client_id) = (get("token"), get("client_id"));
        if token.is_empty() {
            return oauth_error(400, "invalid_request", "token is required");
        }
        if !self.clients.lock().unwrap().contains_key(&client_id) {
            return oauth_error(401, "invalid_client", "unknown client");
        }
        let mut refresh = self.refresh.lock().unwrap();
        if refresh
            .get(&token)
            .is_some_and(|r| r.client_id == client_id)
        {
            refresh.remove(&token);
        } else if let Some(jti) = self
            .key
            .verify_any_audience(&token)
            .ok()
            .and_then(|c| c["jti"].as_str().map(str::to_owned))
        {
            self.revoked_access.lock().unwrap().push(jti);
        }
        json_response(200, &json!({}))
    }

    /// RFC 8628 §3.1: a device code and a user code for a known client.
    fn device_authorization(&self, body: &[u8]) -> http::Response<Full<Bytes>> {
        let f = parse_form(&String::from_utf8_lossy(body));
        self.log.lock().unwrap().device.push(f.clone());
        let get = |k: &str| f.get(k).cloned().unwrap_or_default();
        let client_id = get("client_id");
        if !self.clients.lock().unwrap().contains_key(&client_id) {
            return oauth_error(401, "invalid_client", "unknown client");
        }
        let device_code = random(24);
        let user_code = format!("U{}", random(5)).to_uppercase();
        self.devices.lock().unwrap().insert(
            device_code.clone(),
            Device {
                client_id,
                user_code: user_code.clone(),
                scope: get("scope"),
                resource: get("resource"),
                decision: DeviceDecision::Pending,
                interval: self.device_interval.load(Ordering::SeqCst),
                last_poll: Some(std::time::Instant::now()),
            },
        );
        json_response(
            200,
            &json!({
                "device_code": device_code,
                "user_code": user_code,
                "verification_uri": format!("{}/device", self.url),
                "verification_uri_complete": format!("{}/device?user_code={}", self.url, enc(&user_code)),
                "expires_in": 600,
                "interval": self.device_interval.load(Ordering::SeqCst),
            }),
        )
    }

    /// The user codes of device codes not yet decided.
    pub fn pending_user_codes(&self) -> Vec<String> {
        self.devices
            .lock()
            .unwrap()
            .values()
            .filter(|d| d.decision == DeviceDecision::Pending)
            .map(|d| d.user_code.clone())
            .collect()
    }

    /// Decides the device code whose user code is `user_code` (the user
    /// at the verification URI); `false` when there is none.
    pub fn decide(&self, user_code: &str, decision: DeviceDecision) -> bool {
        let mut devices = self.devices.lock().unwrap();
        match devices.values_mut().find(|d| d.user_code == user_code) {
            Some(d) => {
                d.decision = decision;
                true
            }
            None => false,
        }
    }

    /// Revokes every refresh token and every access token issued so far
    /// (their `jti`s join [`AuthServer::revoked_access`]), as an
    /// administrator revoking a user's grants would.
    pub fn revoke_everything(&self, access_tokens: &[&str]) {
        self.refresh.lock().unwrap().clear();
        let mut revoked = self.revoked_access.lock().unwrap();
        for t in access_tokens {
            if let Some(jti) = self
                .key
                .verify_any_audience(t)
                .ok()
                .and_then(|c| c["jti"].as_str().map(str::to_owned))
            {
                revoked.push(jti);
            }
        }
    }

    /// Whether `refresh_token` would still be accepted.
    pub fn refresh_token_is_live(&self, refresh_token: &str) -> bool {
        self.refresh.lock().unwrap().contains_key(refresh_token)
    }

    /// A token as this issuer would mint it (subject `mallory`), for any audience.
    pub fn mint(&self, aud: &str, scope: &str) -> String {
        self.key.sign(&json!({
            "iss": self.url, "aud": aud, "sub": "mallory", "client_id": "x",
            "scope": scope, "iat": now(), "exp": now() + 300,
        }))
    }

    /// How many token requests used `grant_type`.
    pub fn grants(&self, grant_type: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .token
            .iter()
            .filter(|(f, _)| f.get("grant_type").map(String::as_str) == Some(grant_type))
            .count()
    }
}
