//! DPoP: demonstrating proof of possession of a key (RFC 9449; MCP SEP-1932
//! and the `io.modelcontextprotocol/auth/dpop` extension).
//!
//! A [`DpopProver`] owns one ES256 key for the life of a client. It signs a
//! fresh proof JWT for every HTTP request that needs one:
//!
//! - header `typ: dpop+jwt`, `alg: ES256`, `jwk` = the public key (§4.2);
//! - claims `jti` (random, never reused), `htm` (the request method), `htu`
//!   (the request URL without query and fragment), `iat`; on requests to a
//!   resource server also `ath` = base64url(SHA-256(access token)) (§7.1);
//!   and `nonce` when the server handed one out (§8, §9).
//!
//! Nonces arrive in `DPoP-Nonce` response headers from the authorization
//! server (token endpoint, §8) and from the resource server (§9). They are
//! remembered per origin (scheme, host, port) so an AS nonce is never sent
//! to the MCP server or the other way round. A `use_dpop_nonce` error (JSON
//! `error` at the token endpoint, `WWW-Authenticate: DPoP
//! error="use_dpop_nonce"` at a resource server) means "retry once with the
//! nonce just supplied": [`DpopProver`]'s `RequestProof::wants_retry` and
//! [`is_use_dpop_nonce_challenge`].
//!
//! Tokens issued with `token_type: DPoP` are sent as `Authorization: DPoP
//! <token>` (§7.1) by [`super::OAuthClient`]; the bearer-token rules still apply to them
//! (no tokens in query strings, only to the server the token was minted
//! for).
// AUTH-20

use super::error::OAuthError;
use super::es256::{Es256Key, KeyError, random_token, unix_now};
use super::proof::RequestProof;
use crate::core::b64;
use ferromcp_protocol::authority::Authority;
use serde::Serialize;
use sha2::Digest as _;
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

/// The request header carrying a proof, and the response header carrying a
/// server-supplied nonce.
pub const DPOP_HEADER: &str = "DPoP";
/// Response header with a server-supplied nonce (RFC 9449 §8.1, §9).
pub const DPOP_NONCE_HEADER: &str = "DPoP-Nonce";
/// The `typ` of a proof JWT.
pub const DPOP_JWT_TYPE: &str = "dpop+jwt";

/// Default for [`DpopLimits::max_origins`].
pub const DEFAULT_MAX_NONCE_ORIGINS: usize = 32;
/// Default for [`DpopLimits::max_nonce_len`].
pub const DEFAULT_MAX_NONCE_LEN: usize = 1024;

/// Bounds on what servers can make a [`DpopProver`] remember.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpopLimits {
    /// How many origins' nonces are kept; the oldest is dropped beyond.
    pub max_origins: usize,
    /// Longest nonce accepted; longer ones are ignored.
    pub max_nonce_len: usize,
}

impl Default for DpopLimits {
    fn default() -> Self {
        Self {
            max_origins: DEFAULT_MAX_NONCE_ORIGINS,
            max_nonce_len: DEFAULT_MAX_NONCE_LEN,
        }
    }
}

/// Why a proof could not be produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DpopError {
    /// The URL is not an absolute `http`/`https` URL.
    BadUrl(String),
    /// The method is empty or not an HTTP token.
    BadMethod(String),
    /// Signing failed.
    Key(KeyError),
}

impl fmt::Display for DpopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadUrl(u) => write!(f, "DPoP: not an absolute http(s) URL: {u:?}"),
            Self::BadMethod(m) => write!(f, "DPoP: not an HTTP method: {m:?}"),
            Self::Key(e) => write!(f, "DPoP: {e}"),
        }
    }
}

impl std::error::Error for DpopError {}

impl From<KeyError> for DpopError {
    fn from(e: KeyError) -> Self {
        Self::Key(e)
    }
}

#[derive(Serialize)]
struct ProofClaims<'a> {
    jti: String,
    htm: &'a str,
    htu: &'a str,
    iat: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ath: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce: Option<String>,
}

/// Signs DPoP proofs with one key and remembers server nonces.
pub struct DpopProver {
    key: Es256Key,
    limits: DpopLimits,
    /// origin → (nonce, insertion counter for eviction)
    nonces: Mutex<NonceBook>,
}

#[derive(Default)]
struct NonceBook {
    by_origin: HashMap<String, (String, u64)>,
    counter: u64,
}

impl fmt::Debug for DpopProver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopProver")
            .field("jkt", &self.key.thumbprint())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl DpopProver {
    /// A prover with a freshly generated key and default limits.
    pub fn generate() -> Result<Self, KeyError> {
        Ok(Self::new(Es256Key::generate()?))
    }

    /// A prover signing with `key`.
    pub fn new(key: Es256Key) -> Self {
        Self {
            key,
            limits: DpopLimits::default(),
            nonces: Mutex::new(NonceBook::default()),
        }
    }

    /// Replaces the limits.
    pub fn with_limits(mut self, limits: DpopLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The key's RFC 7638 thumbprint: the `cnf.jkt` of tokens bound to it.
    pub fn jkt(&self) -> &str {
        self.key.thumbprint()
    }

    /// A fresh proof for `method url`. Pass the access token when calling a
    /// resource server with a DPoP-bound token (adds `ath`); `None` at the
    /// token endpoint. The nonce last supplied by `url`'s origin is
    /// included.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, DpopError> {
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(DpopError::BadMethod(method.to_owned()));
        }
        let htu = htu(url)?;
        let nonce = self.nonce_for(url);
        let claims = ProofClaims {
            jti: random_token(16)?,
            htm: method,
            htu: &htu,
            iat: unix_now(),
            ath: access_token.map(ath),
            nonce,
        };
        Ok(self.key.sign(Some(DPOP_JWT_TYPE), true, &claims)?)
    }

    /// Records the `DPoP-Nonce` value a response from `url` carried.
    /// Values that are not RFC 9449 `NQCHAR` strings, or too long, are
    /// ignored. Returns whether a nonce was stored.
    pub fn record_nonce(&self, url: &str, nonce: &str) -> bool {
        let Some(origin) = origin(url) else {
            return false;
        };
        let nonce = nonce.trim();
        // nonce = 1*NQCHAR; NQCHAR = %x21 / %x23-5B / %x5D-7E
        let valid = !nonce.is_empty()
            && nonce.len() <= self.limits.max_nonce_len
            && nonce
                .bytes()
                .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
        if !valid || self.limits.max_origins == 0 {
            return false;
        }
        let mut book = self.nonces.lock().unwrap_or_else(|p| p.into_inner());
        book.counter += 1;
        let n = book.counter;
        if !book.by_origin.contains_key(&origin)
            && book.by_origin.len() >= self.limits.max_origins
            && let Some(oldest) = book
                .by_origin
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
        {
            book.by_origin.remove(&oldest);
        }
        book.by_origin.insert(origin, (nonce.to_owned(), n));
        true
    }

    /// The nonce remembered for `url`'s origin.
    pub fn nonce_for(&self, url: &str) -> Option<String> {
        let origin = origin(url)?;
        let book = self.nonces.lock().unwrap_or_else(|p| p.into_inner());
        book.by_origin.get(&origin).map(|(n, _)| n.clone())
    }
}

/// Plugs DPoP into [`super::OAuthClient`]: a proof on every token request
/// (RFC 9449 §5) and on every MCP request with `ath` (§7.1), nonces taken
/// from every answer, one retry on `use_dpop_nonce` (§8, §9).
impl RequestProof for DpopProver {
    fn token_type(&self) -> &str {
        "DPoP"
    }

    fn proof_headers(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<Vec<(String, String)>, OAuthError> {
        let proof = self
            .proof(method, url, access_token)
            .map_err(|e| OAuthError::config(e.to_string()))?;
        Ok(vec![(DPOP_HEADER.to_owned(), proof)])
    }

    fn observe(&self, url: &str, _status: u16, headers: &http::HeaderMap) {
        if let Some(v) = headers
            .get_all(DPOP_NONCE_HEADER)
            .iter()
            .next_back()
            .and_then(|v| v.to_str().ok())
        {
            self.record_nonce(url, v);
        }
    }

    fn wants_retry(&self, status: u16, error: Option<&str>) -> bool {
        (status == 400 || status == 401) && error == Some("use_dpop_nonce")
    }
}

/// `ath`: base64url(SHA-256(ASCII access token)), RFC 9449 §4.2.
pub fn ath(access_token: &str) -> String {
    b64::url_encode(sha2::Sha256::digest(access_token.as_bytes()))
}

/// `htu`: the request URL without query and fragment (RFC 9449 §4.2).
/// Scheme and host are lower-cased (RFC 3986 §6.2.2.1); the rest is kept.
pub fn htu(url: &str) -> Result<String, DpopError> {
    let bad = || DpopError::BadUrl(url.to_owned());
    let (scheme, authority, path) = crate::core::uri::split(url).ok_or_else(bad)?;
    let scheme = scheme.to_ascii_lowercase();
    if crate::core::uri::default_port_suffix(&scheme).is_none() {
        return Err(bad());
    }
    // No userinfo, a host, a port that fits: the workspace's one parser.
    if Authority::parse(authority).is_err() {
        return Err(bad());
    }
    let path = if path.is_empty() { "/" } else { path };
    Ok(format!(
        "{scheme}://{}{path}",
        authority.to_ascii_lowercase()
    ))
}

/// `scheme://host[:port]`, lower-cased, of an absolute http(s) URL.
fn origin(url: &str) -> Option<String> {
    let h = htu(url).ok()?;
    let (scheme, rest) = h.split_once("://")?;
    let authority = rest.split('/').next()?;
    Some(format!("{scheme}://{authority}"))
}

/// Whether `WWW-Authenticate` values from a resource server ask for a DPoP
/// nonce: a `DPoP` challenge with `error="use_dpop_nonce"` (RFC 9449 §9).
pub fn is_use_dpop_nonce_challenge<S: AsRef<str>>(www_authenticate: &[S]) -> bool {
    www_authenticate.iter().any(|v| {
        let v = v.as_ref().trim_start();
        let scheme_is_dpop = v
            .split([' ', '\t', ','])
            .next()
            .is_some_and(|s| s.eq_ignore_ascii_case("dpop"));
        scheme_is_dpop && challenge_error(v).as_deref() == Some("use_dpop_nonce")
    })
}

/// The `error` auth-param of one challenge (quoted or token form).
fn challenge_error(challenge: &str) -> Option<String> {
    let lower = challenge.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("error") {
        let at = from + i;
        from = at + 5;
        let before_ok =
            at == 0 || matches!(lower.as_bytes().get(at - 1), Some(b' ' | b',' | b'\t'));
        let rest = challenge[at + 5..].trim_start();
        if !before_ok || !rest.starts_with('=') {
            continue;
        }
        let value = rest[1..].trim_start();
        return Some(if let Some(q) = value.strip_prefix('"') {
            q.split('"').next().unwrap_or("").to_owned()
        } else {
            value
                .split([',', ' ', '\t'])
                .next()
                .unwrap_or("")
                .to_owned()
        });
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use jsonwebtoken::jwk::Jwk;
    use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
    use serde_json::Value;

    /// Verifies a proof the way a server does (RFC 9449 §4.3 steps that
    /// do not need server state) and returns its claims.
    fn check(proof: &str) -> (Value, Jwk) {
        let header = decode_header(proof).unwrap();
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        assert_eq!(header.alg, Algorithm::ES256);
        let jwk = header.jwk.unwrap();
        let dk = DecodingKey::from_jwk(&jwk).unwrap();
        let mut v = Validation::new(Algorithm::ES256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        v.validate_aud = false;
        (decode::<Value>(proof, &dk, &v).unwrap().claims, jwk)
    }

    #[test]
    fn token_endpoint_proof_has_the_rfc9449_claims_and_no_ath() {
        let p = DpopProver::generate().unwrap();
        let proof = p
            .proof("POST", "https://as.example/token?x=1#frag", None)
            .unwrap();
        let (c, jwk) = check(&proof);
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["htu"], "https://as.example/token");
        assert!(c["jti"].as_str().unwrap().len() >= 16);
        let iat = c["iat"].as_u64().unwrap();
        assert!(iat.abs_diff(unix_now()) <= 5);
        assert!(c.get("ath").is_none());
        assert!(c.get("nonce").is_none());
        assert_eq!(
            jwk.thumbprint(jsonwebtoken::jwk::ThumbprintHash::SHA256)
                .unwrap(),
            p.jkt()
        );
    }

    #[test]
    fn resource_proof_carries_ath_of_the_token() {
        let p = DpopProver::generate().unwrap();
        let proof = p
            .proof("POST", "http://127.0.0.1:8080/mcp", Some("tok.en"))
            .unwrap();
        let (c, _) = check(&proof);
        // base64url(SHA-256("tok.en")), computed independently.
        let want = b64::url_encode(sha2::Sha256::digest(b"tok.en"));
        assert_eq!(c["ath"], want);
        assert_eq!(c["htu"], "http://127.0.0.1:8080/mcp");
    }

    #[test]
    fn every_proof_has_a_fresh_jti() {
        let p = DpopProver::generate().unwrap();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..50 {
            let (c, _) = check(&p.proof("GET", "https://rs.example/mcp", None).unwrap());
            assert!(seen.insert(c["jti"].as_str().unwrap().to_owned()));
        }
    }

    #[test]
    fn nonces_are_kept_per_origin() {
        let p = DpopProver::generate().unwrap();
        assert!(p.record_nonce("https://AS.example/token", "as-nonce"));
        assert!(p.record_nonce("http://rs.example:9000/mcp", " rs-nonce "));
        let (c, _) = check(&p.proof("POST", "https://as.example/other", None).unwrap());
        assert_eq!(c["nonce"], "as-nonce");
        let (c, _) = check(
            &p.proof("POST", "http://rs.example:9000/mcp", Some("t"))
                .unwrap(),
        );
        assert_eq!(c["nonce"], "rs-nonce");
        // A different port is a different origin.
        let (c, _) = check(&p.proof("POST", "http://rs.example:9001/mcp", None).unwrap());
        assert!(c.get("nonce").is_none());
        // A newer nonce replaces the old one.
        assert!(p.record_nonce("https://as.example/token", "second"));
        assert_eq!(p.nonce_for("https://as.example/x").unwrap(), "second");
    }

    #[test]
    fn invalid_or_oversized_nonces_are_ignored() {
        let p = DpopProver::generate().unwrap().with_limits(DpopLimits {
            max_origins: 4,
            max_nonce_len: 8,
        });
        for bad in ["", "has space", "quo\"te", "back\\slash", "123456789", "é"] {
            assert!(!p.record_nonce("https://as.example/", bad), "{bad:?}");
        }
        assert!(!p.record_nonce("ftp://as.example/", "ok"));
        assert!(p.nonce_for("https://as.example/").is_none());
    }

    #[test]
    fn nonce_book_is_bounded() {
        let p = DpopProver::generate().unwrap().with_limits(DpopLimits {
            max_origins: 2,
            max_nonce_len: 64,
        });
        assert!(p.record_nonce("https://a.example/", "a"));
        assert!(p.record_nonce("https://b.example/", "b"));
        assert!(p.record_nonce("https://c.example/", "c"));
        assert!(
            p.nonce_for("https://a.example/").is_none(),
            "oldest evicted"
        );
        assert_eq!(p.nonce_for("https://b.example/").unwrap(), "b");
        assert_eq!(p.nonce_for("https://c.example/").unwrap(), "c");
    }

    #[test]
    fn htu_strips_query_and_fragment_and_rejects_non_http() {
        assert_eq!(
            htu("HTTPS://Host.Example:443/a/B?q#f").unwrap(),
            "https://host.example:443/a/B"
        );
        assert_eq!(htu("http://h").unwrap(), "http://h/");
        assert_eq!(htu("http://h#x").unwrap(), "http://h/");
        for bad in [
            "",
            "/relative",
            "mailto:x",
            "ftp://h/",
            "http://",
            "http://u@h/",
            "http:// h/",
            // Regression (issue 25): a proof must not name an authority
            // no request can have been sent to.
            "http://h:99999/",
            "http://h:+1/",
            "http://[::1/",
        ] {
            assert!(htu(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bad_method_is_refused() {
        let p = DpopProver::generate().unwrap();
        for m in ["", "PO ST", "GET\r\n"] {
            assert!(matches!(
                p.proof(m, "https://h/", None),
                Err(DpopError::BadMethod(_))
            ));
        }
    }

    /// The `RequestProof` side: one `DPoP` header per request, nonces
    /// taken from any answer, a retry only on `use_dpop_nonce`.
    #[test]
    fn request_proof_hook() {
        let p = DpopProver::generate().unwrap();
        assert_eq!(RequestProof::token_type(&p), "DPoP");
        let h = p
            .proof_headers("POST", "https://as.example/token", None)
            .unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].0, "DPoP");
        let (c, _) = check(&h[0].1);
        assert_eq!(c["htu"], "https://as.example/token");
        let mut map = http::HeaderMap::new();
        map.insert("dpop-nonce", http::HeaderValue::from_static("n1"));
        p.observe("https://as.example/token", 400, &map);
        assert_eq!(p.nonce_for("https://as.example/x").as_deref(), Some("n1"));
        assert!(p.wants_retry(400, Some("use_dpop_nonce")));
        assert!(p.wants_retry(401, Some("use_dpop_nonce")));
        assert!(!p.wants_retry(400, Some("invalid_grant")));
        assert!(!p.wants_retry(401, None));
        assert!(!p.wants_retry(500, Some("use_dpop_nonce")));
        assert!(p.proof_headers("POST", "not a url", None).is_err());
    }

    #[test]
    fn use_dpop_nonce_is_recognised_in_challenges() {
        assert!(is_use_dpop_nonce_challenge(&[
            r#"DPoP error="use_dpop_nonce", resource_metadata="https://x/""#
        ]));
        assert!(is_use_dpop_nonce_challenge(&[
            "Bearer realm=\"x\"",
            "dpop algs=\"ES256\", error=use_dpop_nonce"
        ]));
        assert!(!is_use_dpop_nonce_challenge(&[
            r#"Bearer error="use_dpop_nonce""#
        ]));
        assert!(!is_use_dpop_nonce_challenge(&[
            r#"DPoP error="invalid_token", xerror="use_dpop_nonce""#
        ]));
        assert!(!is_use_dpop_nonce_challenge::<&str>(&[]));
    }

    proptest::proptest! {
        // Each case signs (or verifies) an ES256 JWT: keep the count modest.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever servers send (challenges, nonces) and whatever URL a
        /// caller passes, the prover answers or refuses; it never panics.
        #[test]
        fn untrusted_inputs_never_panic(
            challenge in ".{0,200}",
            nonce in ".{0,80}",
            url in "(https?://)?[a-zA-Z0-9.:@/?#%é -]{0,60}",
        ) {
            let _ = is_use_dpop_nonce_challenge(&[challenge.as_str()]);
            let _ = htu(&url);
            let p = DpopProver::new(Es256Key::from_pkcs8_der(&fixed_key_der()).unwrap());
            let stored = p.record_nonce(&url, &nonce);
            if stored {
                proptest::prop_assert_eq!(p.nonce_for(&url), Some(nonce.trim().to_owned()));
            }
            let _ = p.proof("POST", &url, Some(&nonce));
        }
    }

    fn fixed_key_der() -> Vec<u8> {
        use p256::pkcs8::EncodePrivateKey;
        p256::SecretKey::from_slice(&[9u8; 32])
            .unwrap()
            .to_pkcs8_der()
            .unwrap()
            .as_bytes()
            .to_vec()
    }
}
