//! JWT access tokens (RFC 9068) verified against the authorization server's
//! JWKS (RFC 7517), with a cached key set that follows key rotation.

use super::fetch::{HttpFetch, HyperFetch};
use super::metadata::ResourceUri;
use super::verifier::{
    BoxFuture, ClaimRules, TokenVerifier, VerifiedToken, VerifyError, check_claims, now_unix,
};
use super::{ConfigError, as_metadata};
use crate::core::b64;
use crate::core::discovery::as_metadata_urls;
use crate::core::fetch::json_get;
use bytes::Bytes;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use serde_json::{Map, Value};
use std::str::FromStr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// Where the verification keys come from.
#[derive(Debug, Clone)]
enum JwksSource {
    /// `jwks_uri` of the issuer's RFC 8414 / OIDC metadata.
    Discover,
    /// A fixed JWKS URL.
    Url(String),
    /// A fixed key set (JSON), never refetched.
    Static(String),
}

// AUTH-21
/// Verifies JWT access tokens: signature with a key from the issuer's JWKS,
/// then issuer, audience (this resource, RFC 8707), `exp`, `nbf`, `iat`
/// with a configurable clock skew.
///
/// - Only asymmetric algorithms from a configured allow-list are accepted;
///   `none` cannot be expressed and HS* is refused at build time, so a
///   public key can never be used as an HMAC secret.
/// - Header-supplied keys (`jwk`, `jku`, `x5u`, `x5c`) are ignored; tokens
///   with a `crit` header are rejected.
/// - The key set is cached for [`JwtVerifierBuilder::jwks_cache_ttl`]; a
///   token naming an unknown `kid` triggers a refetch (key rotation), at
///   most once per [`JwtVerifierBuilder::jwks_refetch_interval`].
///   Concurrent misses share one fetch. When a refetch fails the previous
///   keys stay in use.
/// - Scopes come from `scope` (space-separated) or `scp`; the subject from
///   `sub`; the client from `client_id` or `azp`.
///
/// One verifier trusts one issuer. The principal's subject is the token's
/// `sub` as is, so sessions and `requestState` are bound per subject: do
/// not put issuers whose subject namespaces overlap behind one server.
pub struct JwtVerifier {
    rules: ClaimRules,
    algorithms: Vec<Algorithm>,
    source: JwksSource,
    issuer: String,
    cache_ttl: Duration,
    refetch_interval: Duration,
    max_keys: usize,
    require_at_jwt: bool,
    fetch: Arc<dyn HttpFetch>,
    cache: RwLock<Cache>,
    refresh: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("audiences", &self.rules.audiences)
            .field("algorithms", &self.algorithms)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

struct Key {
    kid: Option<String>,
    alg: Option<Algorithm>,
    family: AlgorithmFamily,
    key: DecodingKey,
}

#[derive(Default)]
struct Cache {
    keys: Arc<Vec<Key>>,
    /// Last successful fetch.
    fetched_at: Option<Instant>,
    /// Last fetch attempt, successful or not (rate limit).
    attempted_at: Option<Instant>,
    /// `jwks_uri` found by discovery.
    jwks_uri: Option<String>,
}

/// Builder for [`JwtVerifier`].
pub struct JwtVerifierBuilder {
    issuer: String,
    audiences: Vec<String>,
    source: JwksSource,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    cache_ttl: Duration,
    refetch_interval: Duration,
    max_keys: usize,
    fetch: Option<Arc<dyn HttpFetch>>,
    require_at_jwt: bool,
}

impl std::fmt::Debug for JwtVerifierBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifierBuilder")
            .field("issuer", &self.issuer)
            .field("audiences", &self.audiences)
            .finish_non_exhaustive()
    }
}

impl JwtVerifier {
    /// Default clock skew tolerated on `exp`, `nbf` and `iat`: 60 s.
    pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(60);
    /// Default lifetime of a fetched key set: 10 minutes.
    pub const DEFAULT_JWKS_CACHE_TTL: Duration = Duration::from_secs(600);
    /// Default minimum time between two fetches of the key set (the
    /// unknown-`kid` refetch rate limit): 30 s.
    pub const DEFAULT_JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
    /// Default cap on keys kept from one key set: 32.
    pub const DEFAULT_MAX_KEYS: usize = 32;
    // Foreign type: the JOSE algorithm names of jsonwebtoken, which verifies; re-exported as
    // `resource::Algorithm`.
    /// Algorithms accepted by default: RSA (PKCS#1 v1.5 and PSS), ECDSA
    /// P-256/P-384, Ed25519.
    pub const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
        Algorithm::RS256,
        Algorithm::RS384,
        Algorithm::RS512,
        Algorithm::PS256,
        Algorithm::PS384,
        Algorithm::PS512,
        Algorithm::ES256,
        Algorithm::ES384,
        Algorithm::EdDSA,
    ];

    /// A builder for tokens issued by `issuer` (compared exactly with
    /// `iss`) for `resource` (the required audience). Keys are discovered
    /// from the issuer's metadata unless [`JwtVerifierBuilder::jwks_uri`]
    /// or [`JwtVerifierBuilder::static_jwks`] is set.
    pub fn builder(issuer: impl Into<String>, resource: &ResourceUri) -> JwtVerifierBuilder {
        JwtVerifierBuilder {
            issuer: issuer.into(),
            audiences: vec![resource.as_str().to_owned()],
            source: JwksSource::Discover,
            algorithms: Self::DEFAULT_ALGORITHMS.to_vec(),
            leeway: Self::DEFAULT_CLOCK_SKEW,
            cache_ttl: Self::DEFAULT_JWKS_CACHE_TTL,
            refetch_interval: Self::DEFAULT_JWKS_REFETCH_INTERVAL,
            max_keys: Self::DEFAULT_MAX_KEYS,
            fetch: None,
            require_at_jwt: false,
        }
    }
}

impl JwtVerifierBuilder {
    /// Fetch keys from this JWKS URL instead of discovering `jwks_uri`.
    pub fn jwks_uri(mut self, url: impl Into<String>) -> Self {
        self.source = JwksSource::Url(url.into());
        self
    }

    /// Use this fixed JWKS document (JSON) and never fetch.
    pub fn static_jwks(mut self, jwks_json: impl Into<String>) -> Self {
        self.source = JwksSource::Static(jwks_json.into());
        self
    }

    /// Also accept tokens whose `aud` names `audience` (e.g. a legacy
    /// identifier of the same resource). The canonical URI is always
    /// accepted.
    pub fn also_accept_audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    // Foreign type: the JOSE algorithm names of jsonwebtoken, which verifies; re-exported as
    // `resource::Algorithm`.
    /// The accepted signature algorithms (asymmetric only).
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// Clock skew tolerated on `exp`, `nbf` and `iat`.
    pub fn clock_skew(mut self, skew: Duration) -> Self {
        self.leeway = skew;
        self
    }

    /// How long a fetched key set is used before it is fetched again.
    pub fn jwks_cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// Minimum time between two fetches (bounds refetches caused by
    /// unknown `kid`s, so forged tokens cannot hammer the JWKS endpoint).
    pub fn jwks_refetch_interval(mut self, interval: Duration) -> Self {
        self.refetch_interval = interval;
        self
    }

    /// Most keys kept from one key set.
    pub fn max_keys(mut self, max: usize) -> Self {
        self.max_keys = max;
        self
    }

    /// The HTTP client for metadata and JWKS fetches (default:
    /// [`HyperFetch`], HTTPS only).
    pub fn fetcher(mut self, fetch: Arc<dyn HttpFetch>) -> Self {
        self.fetch = Some(fetch);
        self
    }

    /// Require the RFC 9068 access-token type (`typ` of `at+jwt` or
    /// `application/at+jwt`). Off by default because many authorization
    /// servers still issue `typ: JWT` access tokens; turn it on when yours
    /// follows RFC 9068, so no other kind of JWT it signs (an ID token, a
    /// logout token) can pass as an access token.
    pub fn require_access_token_type(mut self, on: bool) -> Self {
        self.require_at_jwt = on;
        self
    }

    /// Validates the configuration.
    pub fn build(self) -> Result<JwtVerifier, ConfigError> {
        if self.algorithms.is_empty() {
            return Err(ConfigError::new("no JWT algorithms allowed"));
        }
        if let Some(a) = self
            .algorithms
            .iter()
            .find(|a| a.family() == AlgorithmFamily::Hmac)
        {
            return Err(ConfigError::new(format!(
                "{a:?} is symmetric; a resource server verifies with public keys only"
            )));
        }
        if self.issuer.is_empty() {
            return Err(ConfigError::new("empty issuer"));
        }
        let fetch: Arc<dyn HttpFetch> = match self.fetch {
            Some(f) => f,
            None => {
                let check = match &self.source {
                    JwksSource::Url(u) => Some(u.as_str()),
                    JwksSource::Discover => Some(self.issuer.as_str()),
                    JwksSource::Static(_) => None,
                };
                let default = HyperFetch::new();
                if let Some(u) = check {
                    default
                        .check_url(u)
                        .map_err(|e| ConfigError::new(e.to_string()))?;
                }
                Arc::new(default)
            }
        };
        let mut cache = Cache::default();
        if let JwksSource::Static(json) = &self.source {
            let keys = parse_jwks(json.as_bytes(), self.max_keys)
                .map_err(|e| ConfigError::new(format!("static JWKS: {e}")))?;
            cache.keys = Arc::new(keys);
            cache.fetched_at = Some(Instant::now());
        }
        Ok(JwtVerifier {
            rules: ClaimRules {
                issuer: Some(self.issuer.clone()),
                audiences: self.audiences,
                require_audience: true,
                require_expiry: true,
                leeway: self.leeway,
            },
            algorithms: self.algorithms,
            source: self.source,
            issuer: self.issuer,
            cache_ttl: self.cache_ttl,
            refetch_interval: self.refetch_interval,
            max_keys: self.max_keys,
            require_at_jwt: self.require_at_jwt,
            fetch,
            cache: RwLock::new(cache),
            refresh: tokio::sync::Mutex::new(()),
        })
    }
}

/// Parses a JWKS document, keeping usable signature-verification keys:
/// asymmetric (`oct` keys are dropped), `use` absent or `sig`, `key_ops`
/// absent or containing `verify`, `alg` absent or a known signature
/// algorithm. Keys that fail to parse are skipped, not fatal.
fn parse_jwks(bytes: &[u8], max_keys: usize) -> Result<Vec<Key>, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let Some(keys) = doc.get("keys").and_then(Value::as_array) else {
        return Err("no \"keys\" array".into());
    };
    let mut out = Vec::new();
    for k in keys {
        if out.len() >= max_keys {
            break;
        }
        if k.get("kty").and_then(Value::as_str) == Some("oct") {
            continue;
        }
        if k.get("use").is_some_and(|u| u.as_str() != Some("sig")) {
            continue;
        }
        if let Some(ops) = k.get("key_ops") {
            let verify = ops
                .as_array()
                .is_some_and(|a| a.iter().any(|o| o.as_str() == Some("verify")));
            if !verify {
                continue;
            }
        }
        let alg = match k.get("alg") {
            None => None,
            Some(a) => match a.as_str().map(Algorithm::from_str) {
                Some(Ok(a)) => Some(a),
                _ => continue,
            },
        };
        let Ok(jwk) = serde_json::from_value::<jsonwebtoken::jwk::Jwk>(k.clone()) else {
            continue;
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        let family = key.family();
        if family == AlgorithmFamily::Hmac || alg.is_some_and(|a| a.family() != family) {
            continue;
        }
        out.push(Key {
            kid: jwk.common.key_id.clone(),
            alg,
            family,
            key,
        });
    }
    Ok(out)
}

/// The JWT header members this verifier looks at.
struct Header {
    alg: Algorithm,
    kid: Option<String>,
    typ: Option<String>,
}

fn read_header(token: &str) -> Result<Header, VerifyError> {
    let malformed = || VerifyError::invalid("malformed token");
    let mut parts = token.split('.');
    let (Some(h), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed());
    };
    let raw = b64::url_decode(h).ok_or_else(malformed)?;
    let v: Map<String, Value> = serde_json::from_slice(&raw).map_err(|_| malformed())?;
    if v.get("crit").is_some() {
        // RFC 7515 §4.1.11: we understand no extensions.
        return Err(VerifyError::invalid("unsupported critical header"));
    }
    let alg = v.get("alg").and_then(Value::as_str).ok_or_else(malformed)?;
    let alg = Algorithm::from_str(alg)
        .map_err(|_| VerifyError::invalid(format!("algorithm {alg:?} not allowed")))?;
    let kid = match v.get("kid") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(malformed()),
    };
    let typ = match v.get("typ") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(malformed()),
    };
    Ok(Header { alg, kid, typ })
}

impl JwtVerifier {
    fn snapshot(&self) -> (Arc<Vec<Key>>, Option<Instant>, Option<Instant>) {
        match self.cache.read() {
            Ok(c) => (c.keys.clone(), c.fetched_at, c.attempted_at),
            Err(p) => {
                let c = p.into_inner();
                (c.keys.clone(), c.fetched_at, c.attempted_at)
            }
        }
    }

    fn candidates<'k>(&self, keys: &'k [Key], h: &Header) -> Vec<&'k Key> {
        keys.iter()
            .filter(|k| match (&h.kid, &k.kid) {
                (Some(want), Some(have)) => want == have,
                (Some(_), None) => false,
                (None, _) => true,
            })
            .filter(|k| k.family == h.alg.family() && k.alg.is_none_or(|a| a == h.alg))
            .collect()
    }

    /// Refetches the key set unless another task just did, or the last
    /// attempt was less than the refetch interval ago.
    async fn refresh(&self, seen_attempt: Option<Instant>) -> Result<(), VerifyError> {
        if matches!(self.source, JwksSource::Static(_)) {
            return Ok(());
        }
        let _guard = self.refresh.lock().await;
        let (_, _, attempted) = self.snapshot();
        if attempted != seen_attempt {
            return Ok(()); // someone else refreshed while we waited
        }
        if attempted.is_some_and(|t| t.elapsed() < self.refetch_interval) {
            return Ok(());
        }
        if let Ok(mut c) = self.cache.write() {
            c.attempted_at = Some(Instant::now());
        }
        match self.fetch_keys().await {
            Ok(keys) => {
                if let Ok(mut c) = self.cache.write() {
                    c.keys = Arc::new(keys);
                    c.fetched_at = Some(Instant::now());
                }
                Ok(())
            }
            Err(e) => {
                tracing::warn!(issuer = %self.issuer, error = %e, "JWKS fetch failed");
                Err(e)
            }
        }
    }

    async fn fetch_keys(&self) -> Result<Vec<Key>, VerifyError> {
        let url = match &self.source {
            JwksSource::Url(u) => u.clone(),
            JwksSource::Static(_) => return Err(VerifyError::unavailable("static key set")),
            JwksSource::Discover => {
                let known = self.cache.read().ok().and_then(|c| c.jwks_uri.clone());
                match known {
                    Some(u) => u,
                    None => {
                        let meta = discover(&*self.fetch, &self.issuer).await?;
                        let uri = meta
                            .get("jwks_uri")
                            .and_then(Value::as_str)
                            .ok_or_else(|| {
                                VerifyError::unavailable("issuer metadata has no jwks_uri")
                            })?
                            .to_owned();
                        if let Ok(mut c) = self.cache.write() {
                            c.jwks_uri = Some(uri.clone());
                        }
                        uri
                    }
                }
            }
        };
        let body = get_json(&*self.fetch, &url).await?;
        parse_jwks(&body, self.max_keys).map_err(|e| VerifyError::unavailable(format!("JWKS: {e}")))
    }

    async fn verify_jwt(&self, token: &str) -> Result<VerifiedToken, VerifyError> {
        let header = read_header(token)?;
        if self.require_at_jwt
            && !header.typ.as_deref().is_some_and(|t| {
                t.eq_ignore_ascii_case("at+jwt") || t.eq_ignore_ascii_case("application/at+jwt")
            })
        {
            return Err(VerifyError::invalid("not an access token (typ)"));
        }
        if !self.algorithms.contains(&header.alg) {
            return Err(VerifyError::invalid(format!(
                "algorithm {:?} not allowed",
                header.alg
            )));
        }
        let (mut keys, mut fetched, attempted) = self.snapshot();
        let stale = fetched.is_none_or(|t| t.elapsed() >= self.cache_ttl);
        let mut refreshed = false;
        if stale {
            // A failure here is tolerated while old keys exist.
            let r = self.refresh(attempted).await;
            refreshed = true;
            (keys, fetched, _) = self.snapshot();
            if fetched.is_none() {
                r?;
                return Err(VerifyError::unavailable("no signing keys available"));
            }
        }
        if self.candidates(&keys, &header).is_empty() && !refreshed {
            // Unknown kid: the issuer may have rotated its keys.
            let (_, _, attempted) = self.snapshot();
            let _ = self.refresh(attempted).await;
            (keys, _, _) = self.snapshot();
        }
        let candidates = self.candidates(&keys, &header);
        if candidates.is_empty() {
            return Err(VerifyError::invalid("no key matches the token"));
        }
        let mut validation = Validation::new(header.alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        for k in candidates {
            match jsonwebtoken::decode::<Map<String, Value>>(token, &k.key, &validation) {
                Ok(data) => return check_claims(&data.claims, &self.rules, now_unix()),
                Err(e) => match e.kind() {
                    jsonwebtoken::errors::ErrorKind::InvalidSignature
                    | jsonwebtoken::errors::ErrorKind::InvalidEcdsaKey
                    | jsonwebtoken::errors::ErrorKind::InvalidRsaKey(_)
                    | jsonwebtoken::errors::ErrorKind::InvalidKeyFormat => continue,
                    _ => return Err(VerifyError::invalid("malformed token")),
                },
            }
        }
        Err(VerifyError::invalid("bad signature"))
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>> {
        Box::pin(self.verify_jwt(token))
    }
}

/// GETs `url` expecting a 200 JSON body.
pub(crate) async fn get_json(fetch: &dyn HttpFetch, url: &str) -> Result<Bytes, VerifyError> {
    let req =
        json_get(url, &[]).map_err(|_| VerifyError::unavailable(format!("invalid URL {url:?}")))?;
    let resp = fetch
        .fetch(req)
        .await
        .map_err(|e| VerifyError::unavailable(format!("{url}: {e}")))?;
    if resp.status() != http::StatusCode::OK {
        return Err(VerifyError::unavailable(format!(
            "{url}: HTTP {}",
            resp.status().as_u16()
        )));
    }
    Ok(resp.into_body())
}

// AUTH-07, AUTH-08
/// Authorization-server metadata for `issuer`: RFC 8414 then OpenID
/// Connect discovery, path-inserted first; the document's
/// `issuer` must equal `issuer` exactly.
pub(crate) async fn discover(
    fetch: &dyn HttpFetch,
    issuer: &str,
) -> Result<Map<String, Value>, VerifyError> {
    let urls = as_metadata_urls(issuer).map_err(VerifyError::unavailable)?;
    let mut last = VerifyError::unavailable("no metadata URL");
    for url in urls {
        match get_json(fetch, &url).await {
            Ok(body) => match as_metadata(&body) {
                Some(m) if m.get("issuer").and_then(Value::as_str) == Some(issuer) => return Ok(m),
                Some(_) => last = VerifyError::unavailable(format!("{url}: issuer mismatch")),
                None => last = VerifyError::unavailable(format!("{url}: not a JSON object")),
            },
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_rules() {
        let enc = |json: &str| format!("{}.e30.c2ln", b64::url_encode(json));
        assert!(
            read_header(&enc(r#"{"alg":"ES256","kid":"k"}"#))
                .is_ok_and(|h| h.kid.as_deref() == Some("k"))
        );
        // alg none is not an algorithm at all.
        assert_eq!(
            read_header(&enc(r#"{"alg":"none"}"#)).err(),
            Some(VerifyError::invalid("algorithm \"none\" not allowed"))
        );
        assert!(read_header(&enc(r#"{"alg":"ES256","crit":["exp"]}"#)).is_err());
        assert!(read_header(&enc(r#"{"alg":"ES256","kid":5}"#)).is_err());
        assert!(read_header("a.b").is_err());
        assert!(read_header("a.b.c.d").is_err());
    }

    #[test]
    fn jwks_parsing_keeps_only_signature_keys() {
        let ec = r#"{"kty":"EC","crv":"P-256","x":"WKn-ZIGevcwGIyyrzFoZNBdaq9_TsqzGl96oc0CWuis","y":"y77t-RvAHRKTsSGdIYUfweuOvwrvDD-Q3Hv5J0fSKbE"}"#;
        let doc = format!(
            r#"{{"keys":[
                {{"kty":"oct","k":"c2VjcmV0","kid":"hmac"}},
                {},
                {}, {}, {}, {}, {{"kty":"weird"}}
            ]}}"#,
            ec.replacen('{', r#"{"kid":"ok","alg":"ES256","#, 1),
            ec.replacen('{', r#"{"kid":"enc","use":"enc","#, 1),
            ec.replacen('{', r#"{"kid":"ops","key_ops":["encrypt"],"#, 1),
            ec.replacen('{', r#"{"kid":"rsa-alg","alg":"RS256","#, 1),
            ec.replacen('{', r#"{"kid":"oaep","alg":"RSA-OAEP","#, 1),
        );
        let keys = parse_jwks(doc.as_bytes(), 10).unwrap_or_default();
        assert_eq!(
            keys.iter()
                .map(|k| k.kid.clone().unwrap_or_default())
                .collect::<Vec<_>>(),
            ["ok"]
        );
        assert!(parse_jwks(b"[]", 10).is_err());
        assert!(parse_jwks(b"{", 10).is_err());
    }

    use crate::resource::fetch::FetchError;
    use jsonwebtoken::{EncodingKey, Header as JwtHeader, encode};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh P-256 signing key and its public JWK (kid set).
    fn keypair(kid: &str) -> (EncodingKey, Value) {
        use p256::pkcs8::EncodePrivateKey;
        let secret = loop {
            let mut b = [0u8; 32];
            getrandom::fill(&mut b).unwrap_or_else(|e| panic!("{e}"));
            if let Ok(k) = p256::SecretKey::from_slice(&b) {
                break k;
            }
        };
        let der = secret.to_pkcs8_der().unwrap_or_else(|e| panic!("{e}"));
        let key = EncodingKey::from_ec_der(der.as_bytes());
        let jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&key, Algorithm::ES256)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut v = serde_json::to_value(jwk).unwrap_or_default();
        v["kid"] = kid.into();
        (key, v)
    }

    fn sign(key: &EncodingKey, kid: &str, claims: &Value) -> String {
        let mut h = JwtHeader::new(Algorithm::ES256);
        h.kid = Some(kid.into());
        encode(&h, claims, key).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Serves a swappable JWKS document and counts fetches.
    struct Jwks {
        doc: Mutex<Option<Value>>,
        calls: AtomicUsize,
    }

    impl HttpFetch for Jwks {
        fn fetch(
            &self,
            request: http::Request<Bytes>,
        ) -> BoxFuture<'_, Result<http::Response<Bytes>, FetchError>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let doc = self.doc.lock().ok().and_then(|d| d.clone());
            let uri = request.uri().to_string();
            Box::pin(async move {
                assert_eq!(uri, "https://as.example/jwks");
                match doc {
                    Some(d) => Ok(http::Response::new(Bytes::from(d.to_string()))),
                    None => Err(FetchError::new("down")),
                }
            })
        }
    }

    const RS: &str = "https://rs.example/mcp";
    const ISS: &str = "https://as.example";

    fn claims() -> Value {
        serde_json::json!({"iss": ISS, "aud": RS, "sub": "alice", "exp": now_unix() + 300, "scope": "mcp tools", "azp": "app"})
    }

    fn setup(keys: Vec<Value>) -> (JwtVerifier, Arc<Jwks>) {
        let jwks = Arc::new(Jwks {
            doc: Mutex::new(Some(serde_json::json!({ "keys": keys }))),
            calls: AtomicUsize::new(0),
        });
        let r = ResourceUri::parse(RS).unwrap_or_else(|e| panic!("{e}"));
        let v = JwtVerifier::builder(ISS, &r)
            .jwks_uri("https://as.example/jwks")
            .fetcher(jwks.clone())
            .clock_skew(Duration::from_secs(5))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        (v, jwks)
    }

    fn set_keys(j: &Jwks, keys: Option<Vec<Value>>) {
        if let Ok(mut d) = j.doc.lock() {
            *d = keys.map(|k| serde_json::json!({ "keys": k }));
        }
    }

    #[tokio::test]
    async fn valid_token_and_claim_failures() {
        let (key, jwk) = keypair("k1");
        let (v, jwks) = setup(vec![jwk]);
        let t = v
            .verify(&sign(&key, "k1", &claims()))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.subject, "alice");
        assert_eq!(t.scopes, ["mcp", "tools"]);
        assert_eq!(t.client_id.as_deref(), Some("app"));
        let bad = |k: &str, val: Value| {
            let mut c = claims();
            c[k] = val;
            sign(&key, "k1", &c)
        };
        // AUTH-21: wrong audience, expired, not yet valid, wrong issuer.
        assert_eq!(
            v.verify(&bad("aud", "https://rs.example/other".into()))
                .await,
            Err(VerifyError::invalid("token audience is not this resource"))
        );
        assert_eq!(
            v.verify(&bad("exp", (now_unix() - 60).into())).await,
            Err(VerifyError::invalid("token expired"))
        );
        assert_eq!(
            v.verify(&bad("nbf", (now_unix() + 600).into())).await,
            Err(VerifyError::invalid("token not yet valid"))
        );
        assert_eq!(
            v.verify(&bad("iss", "https://evil".into())).await,
            Err(VerifyError::invalid("wrong issuer"))
        );
        // Tampered payload: same header and signature, different claims.
        let good = sign(&key, "k1", &claims());
        let other = bad("sub", "mallory".into());
        let mut p: Vec<&str> = good.split('.').collect();
        p[1] = other.split('.').nth(1).unwrap_or_default();
        assert_eq!(
            v.verify(&p.join(".")).await,
            Err(VerifyError::invalid("bad signature"))
        );
        assert_eq!(
            jwks.calls.load(Ordering::SeqCst),
            1,
            "keys fetched once and cached"
        );
    }

    #[tokio::test]
    async fn alg_none_and_hs256_are_rejected() {
        let (key, jwk) = keypair("k1");
        let (v, _) = setup(vec![jwk.clone()]);
        let enc = |s: &str| b64::url_encode(s);
        let payload = enc(&claims().to_string());
        let none = format!("{}.{payload}.", enc(r#"{"alg":"none","kid":"k1"}"#));
        assert!(matches!(
            v.verify(&none).await,
            Err(VerifyError::Invalid(_))
        ));
        // Key confusion: HMAC "signed" with the public key's coordinates.
        let secret = format!(
            "{}{}",
            jwk["x"].as_str().unwrap_or_default(),
            jwk["y"].as_str().unwrap_or_default()
        );
        let mut h = JwtHeader::new(Algorithm::HS256);
        h.kid = Some("k1".into());
        let hs =
            encode(&h, &claims(), &EncodingKey::from_secret(secret.as_bytes())).unwrap_or_default();
        assert_eq!(
            v.verify(&hs).await,
            Err(VerifyError::invalid("algorithm HS256 not allowed"))
        );
        // An allowed algorithm that the key does not fit.
        let mut h = JwtHeader::new(Algorithm::ES384);
        h.kid = Some("k1".into());
        let forged = format!(
            "{}.{payload}.AAAA",
            enc(&serde_json::to_string(&h).unwrap_or_default())
        );
        assert_eq!(
            v.verify(&forged).await,
            Err(VerifyError::invalid("no key matches the token"))
        );
        assert!(v.verify(&sign(&key, "k1", &claims())).await.is_ok());
    }

    #[tokio::test]
    async fn access_token_type_when_required() {
        let (key, jwk) = keypair("k1");
        let (jwks, r) = (
            Arc::new(Jwks {
                doc: Mutex::new(Some(serde_json::json!({ "keys": [jwk] }))),
                calls: AtomicUsize::new(0),
            }),
            ResourceUri::parse(RS).unwrap_or_else(|e| panic!("{e}")),
        );
        let v = JwtVerifier::builder(ISS, &r)
            .jwks_uri("https://as.example/jwks")
            .fetcher(jwks)
            .require_access_token_type(true)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        // typ: JWT (jsonwebtoken's default) is refused; at+jwt passes (RFC 9068 §4).
        assert_eq!(
            v.verify(&sign(&key, "k1", &claims())).await,
            Err(VerifyError::invalid("not an access token (typ)"))
        );
        let mut h = JwtHeader::new(Algorithm::ES256);
        h.kid = Some("k1".into());
        h.typ = Some("at+jwt".into());
        let t = encode(&h, &claims(), &key).unwrap_or_default();
        assert!(v.verify(&t).await.is_ok());
    }

    #[tokio::test]
    async fn unknown_kid_refetches_once_per_interval() {
        let (k1, j1) = keypair("k1");
        let (k2, j2) = keypair("k2");
        let (v, jwks) = setup(vec![j1.clone()]);
        assert!(v.verify(&sign(&k1, "k1", &claims())).await.is_ok());
        assert_eq!(jwks.calls.load(Ordering::SeqCst), 1);
        // The issuer rotates to k2: the unknown kid triggers one refetch.
        set_keys(&jwks, Some(vec![j1, j2]));
        // Pretend the last fetch is older than the refetch interval.
        if let Ok(mut c) = v.cache.write() {
            c.attempted_at = Instant::now().checked_sub(Duration::from_secs(60));
        }
        let t = v.verify(&sign(&k2, "k2", &claims())).await;
        assert!(t.is_ok(), "{t:?}");
        assert_eq!(jwks.calls.load(Ordering::SeqCst), 2);
        // Forged kids cannot hammer the endpoint: rate-limited.
        let (k3, _) = keypair("k3");
        for _ in 0..5 {
            assert_eq!(
                v.verify(&sign(&k3, "k3", &claims())).await,
                Err(VerifyError::invalid("no key matches the token"))
            );
        }
        assert_eq!(jwks.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn stale_keys_survive_a_failing_endpoint() {
        let (k1, j1) = keypair("k1");
        let jwks = Arc::new(Jwks {
            doc: Mutex::new(Some(serde_json::json!({ "keys": [j1] }))),
            calls: AtomicUsize::new(0),
        });
        let r = ResourceUri::parse(RS).unwrap_or_else(|e| panic!("{e}"));
        let v = JwtVerifier::builder(ISS, &r)
            .jwks_uri("https://as.example/jwks")
            .fetcher(jwks.clone())
            .jwks_cache_ttl(Duration::ZERO)
            .jwks_refetch_interval(Duration::ZERO)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(v.verify(&sign(&k1, "k1", &claims())).await.is_ok());
        set_keys(&jwks, None);
        assert!(v.verify(&sign(&k1, "k1", &claims())).await.is_ok());
        assert_eq!(
            jwks.calls.load(Ordering::SeqCst),
            2,
            "expired cache refetched, failure tolerated"
        );
        // With no keys ever fetched, the verifier is unavailable, not "invalid".
        let (v2, j2) = setup(vec![]);
        set_keys(&j2, None);
        assert!(matches!(
            v2.verify(&sign(&k1, "k1", &claims())).await,
            Err(VerifyError::Unavailable(_))
        ));
    }

    #[test]
    fn build_refuses_symmetric_algorithms() {
        let r = ResourceUri::parse("https://rs/mcp").unwrap_or_else(|e| panic!("{e}"));
        let e = JwtVerifier::builder("https://as", &r)
            .static_jwks(r#"{"keys":[]}"#)
            .algorithms([Algorithm::HS256])
            .build()
            .err();
        assert!(e.is_some_and(|e| e.to_string().contains("symmetric")));
        assert!(
            JwtVerifier::builder("https://as", &r)
                .static_jwks(r#"{"keys":[]}"#)
                .algorithms([])
                .build()
                .is_err()
        );
        // Default fetcher: plain-HTTP JWKS refused at build time (AUTH-28).
        assert!(
            JwtVerifier::builder("https://as", &r)
                .jwks_uri("http://as/jwks")
                .build()
                .is_err()
        );
    }
}
