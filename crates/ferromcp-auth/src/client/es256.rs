//! An ES256 (ECDSA P-256 / SHA-256) signing key for the JWTs a client
//! signs itself: DPoP proofs (RFC 9449) and `private_key_jwt` client
//! assertions (RFC 7523 §2.2).
//!
//! The key comes either from a PKCS#8 PEM (a pre-registered client's key,
//! e.g. the conformance context's `private_key_pem`) or is generated from
//! the operating system's randomness (a per-client DPoP key). Its public
//! half is available as a JWK and its RFC 7638 thumbprint is computed once.
//! `Debug` never prints the private key.

use crate::core::b64;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use serde::Serialize;
use std::fmt;

/// Why a key could not be loaded or a JWT not be signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(String);

impl KeyError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyError {}

/// A P-256 private key used to sign ES256 JWTs.
#[derive(Clone)]
pub struct Es256Key {
    enc: EncodingKey,
    jwk: Jwk,
    thumbprint: String,
}

impl fmt::Debug for Es256Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Es256Key")
            .field("thumbprint", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

impl Es256Key {
    /// A fresh key from the operating system's randomness.
    pub fn generate() -> Result<Self, KeyError> {
        // A uniformly random 32-byte string is a valid scalar unless it is
        // zero or >= the group order (probability ~2^-32); retry then.
        for _ in 0..8 {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes)
                .map_err(|e| KeyError::new(format!("no randomness for a new key: {e}")))?;
            if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
                return Self::from_secret(&secret);
            }
        }
        Err(KeyError::new("could not draw a valid P-256 scalar"))
    }

    /// Loads a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) holding a P-256
    /// key.
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, KeyError> {
        let secret = p256::SecretKey::from_pkcs8_pem(pem.trim()).map_err(|e| {
            KeyError::new(format!("not a PKCS#8 PEM with a P-256 private key: {e}"))
        })?;
        Self::from_secret(&secret)
    }

    /// Loads a DER-encoded PKCS#8 P-256 key.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<Self, KeyError> {
        let secret = p256::SecretKey::from_pkcs8_der(der)
            .map_err(|e| KeyError::new(format!("not a PKCS#8 P-256 private key: {e}")))?;
        Self::from_secret(&secret)
    }

    fn from_secret(secret: &p256::SecretKey) -> Result<Self, KeyError> {
        let der = secret
            .to_pkcs8_der()
            .map_err(|e| KeyError::new(format!("cannot encode the key: {e}")))?;
        let enc = EncodingKey::from_ec_der(der.as_bytes());
        let mut jwk = Jwk::from_encoding_key(&enc, Algorithm::ES256)
            .map_err(|e| KeyError::new(format!("cannot derive the public JWK: {e}")))?;
        if !matches!(jwk.algorithm, AlgorithmParameters::EllipticCurve(_)) {
            return Err(KeyError::new("the key is not an elliptic-curve key"));
        }
        // The JWK in a DPoP header carries only the public parameters;
        // `alg` belongs in the JWS header.
        jwk.common.key_algorithm = None;
        let thumbprint = jwk
            .thumbprint(ThumbprintHash::SHA256)
            .map_err(|e| KeyError::new(format!("cannot compute the JWK thumbprint: {e}")))?;
        Ok(Self {
            enc,
            jwk,
            thumbprint,
        })
    }

    /// The public key as a JWK (`kty`, `crv`, `x`, `y`; never `d`).
    pub fn public_jwk(&self) -> &Jwk {
        &self.jwk
    }

    /// The RFC 7638 SHA-256 thumbprint of [`Es256Key::public_jwk`],
    /// base64url without padding: the `cnf.jkt` a DPoP-bound token carries.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// Signs `claims` as a compact JWS with `alg: ES256`, the given `typ`
    /// and, when `embed_jwk` is set, the public key in the `jwk` header.
    pub fn sign<C: Serialize>(
        &self,
        typ: Option<&str>,
        embed_jwk: bool,
        claims: &C,
    ) -> Result<String, KeyError> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = typ.map(str::to_owned);
        if embed_jwk {
            header.jwk = Some(self.jwk.clone());
        }
        jsonwebtoken::encode(&header, claims, &self.enc)
            .map_err(|e| KeyError::new(format!("cannot sign the JWT: {e}")))
    }
}

/// `n` random bytes from the operating system, base64url without padding
/// (a JWT `jti`).
pub(crate) fn random_token(n: usize) -> Result<String, KeyError> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| KeyError::new(format!("no randomness: {e}")))?;
    Ok(b64::url_encode(bytes))
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation, decode, decode_header};
    use serde_json::{Value, json};

    fn verify(jwt: &str, key: &Es256Key) -> Value {
        let dk = DecodingKey::from_jwk(key.public_jwk()).unwrap();
        let mut v = Validation::new(Algorithm::ES256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        v.validate_aud = false;
        decode::<Value>(jwt, &dk, &v).unwrap().claims
    }

    #[test]
    fn generated_key_signs_verifiable_es256_jwts_with_embedded_public_jwk() {
        let key = Es256Key::generate().unwrap();
        let jwt = key.sign(Some("dpop+jwt"), true, &json!({"a": 1})).unwrap();
        let header = decode_header(&jwt).unwrap();
        assert_eq!(header.alg, Algorithm::ES256);
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        let embedded = serde_json::to_value(header.jwk.unwrap()).unwrap();
        assert_eq!(embedded["kty"], "EC");
        assert_eq!(embedded["crv"], "P-256");
        assert!(embedded.get("d").is_none(), "no private part: {embedded}");
        assert_eq!(verify(&jwt, &key)["a"], 1);
    }

    #[test]
    fn two_generated_keys_differ() {
        let a = Es256Key::generate().unwrap();
        let b = Es256Key::generate().unwrap();
        assert_ne!(a.thumbprint(), b.thumbprint());
    }

    #[test]
    fn pkcs8_pem_round_trip_keeps_the_key() {
        let secret = p256::SecretKey::from_slice(&[7u8; 32]).unwrap();
        let pem = secret.to_pkcs8_pem(p256::pkcs8::LineEnding::LF).unwrap();
        let a = Es256Key::from_pkcs8_pem(&pem).unwrap();
        let der = secret.to_pkcs8_der().unwrap();
        let b = Es256Key::from_pkcs8_der(der.as_bytes()).unwrap();
        assert_eq!(a.thumbprint(), b.thumbprint());
        let jwt = a.sign(None, false, &json!({"x": "y"})).unwrap();
        assert_eq!(verify(&jwt, &b)["x"], "y");
        assert!(decode_header(&jwt).unwrap().jwk.is_none());
    }

    #[test]
    fn garbage_pem_is_an_error_not_a_panic() {
        for bad in [
            "",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
            "not a key",
        ] {
            let err = Es256Key::from_pkcs8_pem(bad).unwrap_err();
            assert!(err.to_string().contains("PKCS#8"), "{err}");
        }
        assert!(Es256Key::from_pkcs8_der(&[0x30, 0x00]).is_err());
    }

    /// RFC 7638 §3.1 defines the thumbprint input as the required members
    /// in lexicographic order; recompute it by hand.
    #[test]
    fn thumbprint_is_rfc7638_sha256_of_the_canonical_members() {
        use sha2::Digest as _;
        let key = Es256Key::generate().unwrap();
        let jwk = serde_json::to_value(key.public_jwk()).unwrap();
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap(),
            jwk["y"].as_str().unwrap()
        );
        let want = b64::url_encode(sha2::Sha256::digest(canonical.as_bytes()));
        assert_eq!(key.thumbprint(), want);
    }

    #[test]
    fn debug_does_not_print_the_private_key() {
        let key = Es256Key::generate().unwrap();
        let shown = format!("{key:?}");
        assert!(shown.contains(key.thumbprint()));
        assert!(!shown.contains("enc"));
    }

    #[test]
    fn random_tokens_are_distinct_and_url_safe() {
        let a = random_token(16).unwrap();
        let b = random_token(16).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 22);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
    }
}
