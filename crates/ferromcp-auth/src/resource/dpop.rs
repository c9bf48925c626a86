//! DPoP-bound access tokens at the resource server (RFC 9449 §7; MCP
//! SEP-1932, extension `io.modelcontextprotocol/auth/dpop`).
//!
//! Enabled with [`super::AuthLayerBuilder::dpop`]. A token whose claims
//! carry `cnf.jkt` is *bound* to a key; then, per RFC 9449 §7.1/§7.2:
//!
//! - it must be presented as `Authorization: DPoP <token>` (a bound token
//!   sent as `Bearer` is refused, and so is an unbound token sent as
//!   `DPoP`);
//! - the request must carry exactly one `DPoP` header: a proof JWT with
//!   `typ: dpop+jwt`, an asymmetric `alg` from [`DpopPolicy::algorithms`],
//!   a public `jwk` (no private members) that verifies the signature and
//!   whose RFC 7638 thumbprint equals `cnf.jkt`, `htm` = the request
//!   method, `htu` = the request URL without query and fragment, `iat`
//!   within [`DpopPolicy::max_proof_age`] (and at most
//!   [`DpopPolicy::clock_skew`] in the future), `ath` = base64url(SHA-256
//!   (token)), and a `jti` not seen within the proof window (replay cache
//!   bounded by [`DpopPolicy::max_replay_entries`]).
//!
//! Failures answer 401 with `WWW-Authenticate: DPoP
//! error="invalid_dpop_proof"` (or `invalid_token` for scheme mismatches)
//! next to the usual Bearer challenge.
//!
//! With [`DpopPolicy::nonce_lifetime`] set, proofs must also carry a nonce
//! this server issued (RFC 9449 §9): a proof without one, or with a stale
//! one, gets 401 `WWW-Authenticate: DPoP error="use_dpop_nonce"` and a
//! fresh `DPoP-Nonce` header; the client retries once with it. Nonces are
//! random, rotate every `nonce_lifetime`, and the previous one stays valid
//! for one more period.

use crate::core::b64;
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use sha2::Digest as _;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// Default for [`DpopPolicy::max_proof_age`].
pub const DEFAULT_MAX_PROOF_AGE: Duration = Duration::from_secs(60);
/// Default for [`DpopPolicy::clock_skew`].
pub const DEFAULT_PROOF_CLOCK_SKEW: Duration = Duration::from_secs(5);
/// Default for [`DpopPolicy::max_replay_entries`].
pub const DEFAULT_MAX_REPLAY_ENTRIES: usize = 65_536;
/// Default for [`DpopPolicy::max_proof_bytes`].
pub const DEFAULT_MAX_PROOF_BYTES: usize = 8 * 1024;

/// What the resource server accepts as a DPoP proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpopPolicy {
    // Foreign type: the JOSE algorithm names of jsonwebtoken, which verifies; re-exported as
    // `resource::Algorithm`.
    /// Accepted proof algorithms (default ES256, ES384, PS256, PS384,
    /// PS512, RS256, RS384, RS512, EdDSA: asymmetric only).
    pub algorithms: Vec<Algorithm>,
    /// How old a proof's `iat` may be.
    pub max_proof_age: Duration,
    /// How far in the future a proof's `iat` may be.
    pub clock_skew: Duration,
    /// How many `jti`s the replay cache holds; beyond it the oldest go.
    pub max_replay_entries: usize,
    /// Longest proof accepted.
    pub max_proof_bytes: usize,
    /// Require server-issued nonces, rotated this often (`None`: no
    /// nonces, the default).
    pub nonce_lifetime: Option<Duration>,
}

impl Default for DpopPolicy {
    fn default() -> Self {
        Self {
            algorithms: vec![
                Algorithm::ES256,
                Algorithm::ES384,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::EdDSA,
            ],
            max_proof_age: DEFAULT_MAX_PROOF_AGE,
            clock_skew: DEFAULT_PROOF_CLOCK_SKEW,
            max_replay_entries: DEFAULT_MAX_REPLAY_ENTRIES,
            max_proof_bytes: DEFAULT_MAX_PROOF_BYTES,
            nonce_lifetime: None,
        }
    }
}

impl DpopPolicy {
    /// The `algs` parameter of the `DPoP` challenge.
    pub(crate) fn algs(&self) -> String {
        self.algorithms
            .iter()
            .map(|a| format!("{a:?}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `jti`s seen recently, expiring with the proof window.
#[derive(Default)]
struct ReplayCache {
    expiry: HashMap<String, u64>,
    order: VecDeque<(String, u64)>,
}

impl ReplayCache {
    /// Records `jti` until `until`; false when it is already live.
    fn insert(&mut self, jti: &str, until: u64, now: u64, cap: usize) -> bool {
        while let Some((j, exp)) = self.order.front() {
            if *exp > now && self.order.len() < cap.max(1) {
                break;
            }
            if self.expiry.get(j) == Some(exp) {
                self.expiry.remove(j);
            }
            self.order.pop_front();
        }
        if self.expiry.get(jti).is_some_and(|exp| *exp > now) {
            return false;
        }
        self.expiry.insert(jti.to_owned(), until);
        self.order.push_back((jti.to_owned(), until));
        true
    }
}

/// Why a proof was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProofRejection {
    /// `invalid_dpop_proof`, with the reason.
    Invalid(String),
    /// `use_dpop_nonce`: retry with this nonce.
    UseNonce(String),
}

impl std::fmt::Display for ProofRejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(why) => f.write_str(why),
            Self::UseNonce(_) => f.write_str("a server-issued DPoP nonce is required"),
        }
    }
}

impl From<String> for ProofRejection {
    fn from(why: String) -> Self {
        Self::Invalid(why)
    }
}

impl From<&str> for ProofRejection {
    fn from(why: &str) -> Self {
        Self::Invalid(why.to_owned())
    }
}

/// The server's current and previous nonce.
struct Nonces {
    current: String,
    previous: Option<String>,
    minted_at: u64,
}

fn fresh_nonce() -> String {
    let mut b = [0u8; 18];
    // Without randomness the nonce is still unpredictable enough to be
    // a freshness signal only if it changes; fall back to the time.
    if getrandom::fill(&mut b).is_err() {
        b[..8].copy_from_slice(&super::verifier::now_unix().to_be_bytes());
    }
    b64::url_encode(b)
}

/// Checks proofs against one policy, with its replay cache and nonces.
pub(crate) struct DpopChecker {
    pub(crate) policy: DpopPolicy,
    seen: Mutex<ReplayCache>,
    nonces: Mutex<Nonces>,
}

/// The request a proof must match.
pub(crate) struct ProofTarget<'a> {
    pub(crate) method: &'a str,
    /// The request URL without query and fragment.
    pub(crate) url: &'a str,
    pub(crate) access_token: &'a str,
    pub(crate) jkt: &'a str,
}

/// `scheme://authority/path`, lower-cased scheme and authority, query and
/// fragment removed, trailing slash trimmed: what `htu` comparisons use.
pub(crate) fn normalize_htu(url: &str) -> Option<String> {
    let (scheme, authority, path) = crate::core::uri::split(url)?;
    if authority.is_empty() {
        return None;
    }
    Some(format!(
        "{}://{}{}",
        scheme.to_ascii_lowercase(),
        authority.to_ascii_lowercase(),
        path.trim_end_matches('/')
    ))
}

impl DpopChecker {
    pub(crate) fn new(policy: DpopPolicy) -> Self {
        Self {
            policy,
            seen: Mutex::new(ReplayCache::default()),
            nonces: Mutex::new(Nonces {
                current: fresh_nonce(),
                previous: None,
                minted_at: super::verifier::now_unix(),
            }),
        }
    }

    /// The nonce to hand out now (rotated when its lifetime is over), and
    /// whether `presented` is still acceptable.
    fn nonce(&self, presented: Option<&str>, now: u64) -> (String, bool) {
        let lifetime = self
            .policy
            .nonce_lifetime
            .map_or(u64::MAX, |d| d.as_secs().max(1));
        let mut n = self.nonces.lock().unwrap_or_else(|p| p.into_inner());
        if now.saturating_sub(n.minted_at) >= lifetime {
            let old = std::mem::replace(&mut n.current, fresh_nonce());
            n.previous = Some(old);
            n.minted_at = now;
        }
        let ok = presented.is_some_and(|p| p == n.current || n.previous.as_deref() == Some(p));
        (n.current.clone(), ok)
    }

    /// Verifies `proof` for `target` at time `now` (seconds).
    pub(crate) fn check(
        &self,
        proof: &str,
        target: &ProofTarget<'_>,
        now: u64,
    ) -> Result<(), ProofRejection> {
        if proof.len() > self.policy.max_proof_bytes {
            return Err("DPoP proof too large".into());
        }
        let header =
            jsonwebtoken::decode_header(proof).map_err(|_| "DPoP proof is not a JWT".to_owned())?;
        if header.typ.as_deref() != Some("dpop+jwt") {
            return Err("DPoP proof typ must be dpop+jwt".into());
        }
        if !self.policy.algorithms.contains(&header.alg) {
            return Err("DPoP proof algorithm not accepted".into());
        }
        let jwk: Jwk = header
            .jwk
            .ok_or_else(|| "DPoP proof lacks the jwk header".to_owned())?;
        // A private key in the header is a client bug we refuse to accept;
        // the parsed `Jwk` drops unknown members, so look at the raw JSON.
        let raw = proof
            .split('.')
            .next()
            .and_then(b64::url_decode)
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .unwrap_or(Value::Null);
        if ["d", "p", "q", "dp", "dq", "qi", "k"]
            .iter()
            .any(|m| raw["jwk"].get(m).is_some())
        {
            return Err("DPoP proof jwk must be a public key".into());
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| "DPoP proof jwk unusable".to_owned())?;
        let mut v = Validation::new(header.alg);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        v.validate_aud = false;
        v.validate_nbf = false;
        let claims = jsonwebtoken::decode::<Value>(proof, &key, &v)
            .map_err(|_| "DPoP proof signature does not verify".to_owned())?
            .claims;
        let thumbprint = jwk
            .thumbprint(ThumbprintHash::SHA256)
            .map_err(|_| "DPoP proof jwk has no thumbprint".to_owned())?;
        if thumbprint != target.jkt {
            return Err("DPoP proof key is not the key the token is bound to".into());
        }
        let text = |name: &str| claims.get(name).and_then(Value::as_str);
        if text("htm") != Some(target.method) {
            return Err("DPoP proof htm does not match the request method".into());
        }
        let htu = text("htu").ok_or_else(|| "DPoP proof lacks htu".to_owned())?;
        if htu.contains(['?', '#']) || normalize_htu(htu) != normalize_htu(target.url) {
            return Err("DPoP proof htu does not match the request URL".into());
        }
        let iat = claims
            .get("iat")
            .and_then(Value::as_u64)
            .ok_or_else(|| "DPoP proof lacks iat".to_owned())?;
        if iat > now.saturating_add(self.policy.clock_skew.as_secs())
            || now > iat.saturating_add(self.policy.max_proof_age.as_secs())
        {
            return Err("DPoP proof iat outside the acceptable window".into());
        }
        let ath = b64::url_encode(sha2::Sha256::digest(target.access_token.as_bytes()));
        if text("ath") != Some(ath.as_str()) {
            return Err("DPoP proof ath does not match the access token".into());
        }
        let jti = text("jti")
            .filter(|j| !j.is_empty() && j.len() <= 256)
            .ok_or_else(|| "DPoP proof lacks a usable jti".to_owned())?;
        if self.policy.nonce_lifetime.is_some() {
            let (current, ok) = self.nonce(text("nonce"), now);
            if !ok {
                return Err(ProofRejection::UseNonce(current));
            }
        }
        let until = iat
            .saturating_add(self.policy.max_proof_age.as_secs())
            .saturating_add(self.policy.clock_skew.as_secs())
            .saturating_add(1);
        let fresh = self.seen.lock().unwrap_or_else(|p| p.into_inner()).insert(
            &format!("{thumbprint}:{jti}"),
            until,
            now,
            self.policy.max_replay_entries,
        );
        if !fresh {
            return Err("DPoP proof replayed (jti already used)".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use jsonwebtoken::{EncodingKey, Header};
    use p256::pkcs8::EncodePrivateKey;
    use serde_json::json;

    struct K {
        enc: EncodingKey,
        jwk: Jwk,
    }

    fn key(seed: u8) -> K {
        let secret = p256::SecretKey::from_slice(&[seed; 32]).unwrap();
        let der = secret.to_pkcs8_der().unwrap();
        let enc = EncodingKey::from_ec_der(der.as_bytes());
        let mut jwk = Jwk::from_encoding_key(&enc, Algorithm::ES256).unwrap();
        jwk.common.key_algorithm = None;
        K { enc, jwk }
    }

    fn proof(k: &K, typ: &str, claims: Value) -> String {
        let mut h = Header::new(Algorithm::ES256);
        h.typ = Some(typ.into());
        h.jwk = Some(k.jwk.clone());
        jsonwebtoken::encode(&h, &claims, &k.enc).unwrap()
    }

    const NOW: u64 = 1_800_000_000;

    fn claims(jti: &str) -> Value {
        json!({"jti": jti, "htm": "POST", "htu": "https://rs.example/mcp", "iat": NOW,
               "ath": b64::url_encode(sha2::Sha256::digest(b"tok"))})
    }

    fn target<'a>(jkt: &'a str) -> ProofTarget<'a> {
        ProofTarget {
            method: "POST",
            url: "https://rs.example/mcp",
            access_token: "tok",
            jkt,
        }
    }

    #[test]
    fn a_good_proof_passes_once() {
        let k = key(3);
        let jkt = k.jwk.thumbprint(ThumbprintHash::SHA256).unwrap();
        let c = DpopChecker::new(DpopPolicy::default());
        let p = proof(&k, "dpop+jwt", claims("j1"));
        assert_eq!(c.check(&p, &target(&jkt), NOW), Ok(()));
        let again = c.check(&p, &target(&jkt), NOW + 1).unwrap_err().to_string();
        assert!(again.contains("replayed"), "{again}");
        // Another jti is fine.
        let p2 = proof(&k, "dpop+jwt", claims("j2"));
        assert_eq!(c.check(&p2, &target(&jkt), NOW + 1), Ok(()));
    }

    #[test]
    fn each_rule_is_enforced() {
        let k = key(4);
        let jkt = k.jwk.thumbprint(ThumbprintHash::SHA256).unwrap();
        let other = key(5).jwk.thumbprint(ThumbprintHash::SHA256).unwrap();
        let c = DpopChecker::new(DpopPolicy::default());
        let with = |f: &dyn Fn(&mut Value)| {
            let mut v = claims(&format!("{:?}", std::time::Instant::now()));
            f(&mut v);
            proof(&k, "dpop+jwt", v)
        };
        let cases: Vec<(String, ProofTarget<'_>, &str)> = vec![
            (proof(&k, "jwt", claims("a")), target(&jkt), "typ"),
            (with(&|v| v["htm"] = "GET".into()), target(&jkt), "htm"),
            (
                with(&|v| v["htu"] = "https://rs.example/other".into()),
                target(&jkt),
                "htu",
            ),
            (
                with(&|v| v["htu"] = "https://rs.example/mcp?x=1".into()),
                target(&jkt),
                "htu",
            ),
            (
                with(&|v| v["iat"] = (NOW - 120).into()),
                target(&jkt),
                "iat",
            ),
            (with(&|v| v["iat"] = (NOW + 60).into()), target(&jkt), "iat"),
            (with(&|v| v["ath"] = "wrong".into()), target(&jkt), "ath"),
            (
                with(&|v| {
                    v.as_object_mut().unwrap().remove("ath");
                }),
                target(&jkt),
                "ath",
            ),
            (
                with(&|v| {
                    v.as_object_mut().unwrap().remove("jti");
                }),
                target(&jkt),
                "jti",
            ),
            (with(&|_| {}), target(&other), "bound"),
            ("not.a.jwt".into(), target(&jkt), "JWT"),
        ];
        for (p, t, want) in cases {
            let err = c.check(&p, &t, NOW).unwrap_err().to_string();
            assert!(err.contains(want), "{want}: {err}");
        }
        // The URL comparison ignores case of scheme/host and a trailing slash.
        let p = with(&|v| v["htu"] = "HTTPS://RS.example/mcp/".into());
        assert_eq!(c.check(&p, &target(&jkt), NOW), Ok(()));
    }

    #[test]
    fn private_keys_and_symmetric_algorithms_are_refused() {
        let k = key(6);
        let jkt = k.jwk.thumbprint(ThumbprintHash::SHA256).unwrap();
        let c = DpopChecker::new(DpopPolicy::default());
        // HS256 with a symmetric key.
        let mut h = Header::new(Algorithm::HS256);
        h.typ = Some("dpop+jwt".into());
        h.jwk = Some(k.jwk.clone());
        let p = jsonwebtoken::encode(&h, &claims("h"), &EncodingKey::from_secret(b"s")).unwrap();
        assert!(
            c.check(&p, &target(&jkt), NOW)
                .unwrap_err()
                .to_string()
                .contains("algorithm")
        );
        // A jwk with the private scalar: build the header by hand.
        let mut jwk = serde_json::to_value(&k.jwk).unwrap();
        jwk["d"] = "AAAA".into();
        let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk});
        let forged = format!(
            "{}.{}.{}",
            b64::url_encode(header.to_string()),
            b64::url_encode(claims("d").to_string()),
            "sig"
        );
        let err = c
            .check(&forged, &target(&jkt), NOW)
            .unwrap_err()
            .to_string();
        assert!(err.contains("public"), "{err}");
    }

    /// RFC 9449 §9: with nonces on, a proof without the server's nonce
    /// gets `use_dpop_nonce` and the nonce; with it, it passes; nonces
    /// rotate and the previous one stays valid for one more period.
    #[test]
    fn server_nonces() {
        let k = key(7);
        let jkt = k.jwk.thumbprint(ThumbprintHash::SHA256).unwrap();
        let c = DpopChecker::new(DpopPolicy {
            nonce_lifetime: Some(Duration::from_secs(10)),
            max_proof_age: Duration::from_secs(1_000_000_000),
            ..DpopPolicy::default()
        });
        let t0 = super::super::verifier::now_unix();
        let at = |jti: &str, nonce: Option<&str>, t: u64| {
            let mut v = claims(jti);
            v["iat"] = t.into();
            if let Some(n) = nonce {
                v["nonce"] = n.into();
            }
            proof(&k, "dpop+jwt", v)
        };
        let Err(ProofRejection::UseNonce(n1)) = c.check(&at("a", None, t0), &target(&jkt), t0)
        else {
            panic!("nonce demanded")
        };
        assert!(matches!(
            c.check(&at("b", Some("guess"), t0), &target(&jkt), t0),
            Err(ProofRejection::UseNonce(_))
        ));
        assert_eq!(c.check(&at("c", Some(&n1), t0), &target(&jkt), t0), Ok(()));
        // After one period a new nonce is issued; the old one still works.
        let Err(ProofRejection::UseNonce(n2)) =
            c.check(&at("d", None, t0 + 10), &target(&jkt), t0 + 10)
        else {
            panic!("nonce demanded")
        };
        assert_ne!(n1, n2);
        assert_eq!(
            c.check(&at("e", Some(&n1), t0 + 11), &target(&jkt), t0 + 11),
            Ok(())
        );
        // Two periods on, the first nonce is gone.
        assert!(matches!(
            c.check(&at("f", Some(&n1), t0 + 25), &target(&jkt), t0 + 25),
            Err(ProofRejection::UseNonce(_))
        ));
    }

    #[test]
    fn replay_cache_is_bounded_and_expires() {
        let mut r = ReplayCache::default();
        assert!(r.insert("a", 10, 0, 2));
        assert!(!r.insert("a", 10, 5, 2));
        assert!(r.insert("b", 10, 5, 2));
        assert!(r.insert("c", 10, 5, 2), "oldest evicted at capacity");
        assert!(r.order.len() <= 2);
        assert!(r.insert("b", 30, 11, 2), "expired entries may come back");
    }

    #[test]
    fn htu_normalization() {
        assert_eq!(
            normalize_htu("HTTP://Host:8080/a/?q#f").as_deref(),
            Some("http://host:8080/a")
        );
        assert_eq!(normalize_htu("nope"), None);
    }

    proptest::proptest! {
        // Each case signs (or verifies) an ES256 JWT: keep the count modest.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Arbitrary `DPoP` header values and URLs are refused with a
        /// reason, never a panic.
        #[test]
        fn arbitrary_proofs_never_panic(proof in ".{0,400}", url in ".{0,80}") {
            let c = DpopChecker::new(DpopPolicy::default());
            let t = ProofTarget { method: "POST", url: &url, access_token: "t", jkt: "j" };
            proptest::prop_assert!(c.check(&proof, &t, NOW).is_err());
            let _ = normalize_htu(&url);
        }

        /// Well-formed JWTs with arbitrary claims are refused unless every
        /// rule holds (here the key never matches the binding).
        #[test]
        fn arbitrary_claims_never_panic(htm in ".{0,10}", htu in ".{0,40}", iat in proptest::num::i64::ANY) {
            let k = key(8);
            let c = DpopChecker::new(DpopPolicy::default());
            let p = proof(&k, "dpop+jwt", json!({"jti": "x", "htm": htm, "htu": htu, "iat": iat}));
            proptest::prop_assert!(c.check(&p, &target("not-the-thumbprint"), NOW).is_err());
        }
    }
}
