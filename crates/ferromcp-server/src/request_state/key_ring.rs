//! The master secrets that seal and open tokens, and their key ids.

use std::fmt;

use aes_gcm::{Aes256Gcm, KeyInit};
use ferromcp_protocol::base64 as b64;
use hkdf::Hkdf;
use sha2::{Digest, Sha256};

const KDF_INFO: &[u8] = b"mcp-rs/request-state/v1/aes-256-gcm";
const KID_INFO: &[u8] = b"mcp-rs/request-state/v1/kid\0";
const MAX_KID_LEN: usize = 64;

/// Why a [`KeyRing`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyRingError {
    /// A key id is empty, longer than 64 bytes, or uses characters outside
    /// `[A-Za-z0-9_-]`.
    InvalidKeyId,
    /// Two ring entries share a key id.
    DuplicateKeyId,
    /// The operating system's random number generator failed.
    Rng,
    /// HKDF refused to derive the key (cannot happen for a 32-byte output;
    /// reported rather than panicking).
    KeyDerivation,
    /// A ring needs at least one key.
    Empty,
    /// The key at this position (0-based) of a hex list is not 64 hex
    /// digits.
    InvalidHexKey {
        /// Position of the key in the list.
        index: usize,
    },
}

impl KeyRingError {
    /// True when the configuration named no key at all.
    pub fn is_empty_ring(&self) -> bool {
        matches!(self, Self::Empty)
    }

    /// True when a key is not 64 hex digits.
    pub fn is_invalid_hex(&self) -> bool {
        matches!(self, Self::InvalidHexKey { .. })
    }

    /// True when two keys share an id (for derived ids: the same secret
    /// given twice).
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Self::DuplicateKeyId)
    }
}

impl fmt::Display for KeyRingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidKeyId => f.write_str("key id must be 1-64 characters of [A-Za-z0-9_-]"),
            Self::DuplicateKeyId => f.write_str("duplicate key (or key id) in the key ring"),
            Self::Rng => f.write_str("the system random number generator failed"),
            Self::KeyDerivation => f.write_str("key derivation failed"),
            Self::Empty => f.write_str("the key ring needs at least one key"),
            Self::InvalidHexKey { index } => {
                write!(f, "key {} of the list is not 64 hex digits", index + 1)
            }
        }
    }
}

impl std::error::Error for KeyRingError {}

pub(super) struct RingKey {
    pub(super) kid: String,
    pub(super) cipher: Aes256Gcm,
}

// MRTR-08
/// The master secrets a [`StateSealer`](super::StateSealer) uses.
///
/// The first key seals; every key opens. Zero-downtime rotation, each step
/// rolled out everywhere before the next: `[old, new]` → `[new, old]` →
/// `[new]` once one TTL has passed.
///
/// Only the derived AES keys are kept; `Debug` shows key ids only.
pub struct KeyRing {
    keys: Vec<RingKey>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("kids", &self.kids().collect::<Vec<_>>())
            .finish()
    }
}

impl KeyRing {
    // STATE-06
    /// A ring whose sealing key is `secret`, named `kid`.
    ///
    /// `secret` must be 32 bytes of CSPRNG output, shared by every
    /// server instance that must open the tokens.
    pub fn new(kid: &str, secret: [u8; 32]) -> Result<Self, KeyRingError> {
        Ok(Self {
            keys: vec![RingKey::derive(kid, &secret)?],
        })
    }

    /// Adds an open-only key (an older or newer rotation key).
    pub fn with_key(mut self, kid: &str, secret: [u8; 32]) -> Result<Self, KeyRingError> {
        if self.keys.iter().any(|k| k.kid == kid) {
            return Err(KeyRingError::DuplicateKeyId);
        }
        self.keys.push(RingKey::derive(kid, &secret)?);
        Ok(self)
    }

    /// A ring with one fresh random key, held only by this process.
    ///
    /// Suits single-instance deployments (stdio, one HTTP worker): tokens
    /// sealed before a restart or by another instance are refused. The key
    /// id is derived from the key (a non-secret fingerprint).
    pub fn random() -> Result<Self, KeyRingError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|_| KeyRingError::Rng)?;
        Self::from_secrets([secret])
    }

    /// A ring of `secrets` in order (the first seals), each named by its
    /// [`derived_kid`](Self::derived_kid).
    ///
    /// Every replica given the same secrets derives the same ids, so a
    /// fleet rotates by configuration alone: `[A]` → `[A, B]` → `[B, A]` →
    /// `[B]`, each step rolled out everywhere before the next and the last
    /// one at least one TTL after the previous. The same secret twice is
    /// [`KeyRingError::DuplicateKeyId`]; no secret is [`KeyRingError::Empty`].
    pub fn from_secrets(secrets: impl IntoIterator<Item = [u8; 32]>) -> Result<Self, KeyRingError> {
        let mut keys: Vec<RingKey> = Vec::new();
        for secret in secrets {
            let kid = Self::derived_kid(&secret)?;
            if keys.iter().any(|k| k.kid == kid) {
                return Err(KeyRingError::DuplicateKeyId);
            }
            keys.push(RingKey::derive(&kid, &secret)?);
        }
        if keys.is_empty() {
            return Err(KeyRingError::Empty);
        }
        Ok(Self { keys })
    }

    /// A ring from a comma-separated list of 32-byte keys written as 64 hex
    /// digits each (the `MCP_STATE_KEYS=hex1,hex2` form; surrounding
    /// whitespace is ignored), as [`from_secrets`](Self::from_secrets).
    pub fn from_hex_list(list: &str) -> Result<Self, KeyRingError> {
        if list.trim().is_empty() {
            return Err(KeyRingError::Empty);
        }
        let mut secrets = Vec::new();
        for (index, item) in list.split(',').enumerate() {
            secrets.push(parse_hex_key(item.trim()).ok_or(KeyRingError::InvalidHexKey { index })?);
        }
        Self::from_secrets(secrets)
    }

    /// The key id [`from_secrets`](Self::from_secrets) gives `secret`: 8
    /// base64url characters (48 bits) of a domain-separated SHA-256 of the
    /// derived AES key. Not secret; it lets an opener pick the key in one
    /// lookup. Two different secrets sharing an id would only make tokens
    /// fail to open (the AEAD tag decides), never open under the wrong key.
    pub fn derived_kid(secret: &[u8; 32]) -> Result<String, KeyRingError> {
        let key = derive_aes_key(secret)?;
        let mut hasher = Sha256::new();
        hasher.update(KID_INFO);
        hasher.update(key);
        let fingerprint = hasher.finalize();
        Ok(b64::url_encode(fingerprint.get(..6).unwrap_or_default()))
    }

    /// The key ids in ring order; the first one seals.
    pub fn kids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.kid.as_str())
    }

    pub(super) fn sealing_key(&self) -> Option<&RingKey> {
        self.keys.first()
    }

    pub(super) fn find(&self, kid: &str) -> Option<&RingKey> {
        self.keys.iter().find(|k| k.kid == kid)
    }
}

impl RingKey {
    fn derive(kid: &str, secret: &[u8; 32]) -> Result<Self, KeyRingError> {
        if !is_valid_kid(kid) {
            return Err(KeyRingError::InvalidKeyId);
        }
        let key = derive_aes_key(secret)?;
        let cipher = Aes256Gcm::new_from_slice(&key).map_err(|_| KeyRingError::KeyDerivation)?;
        Ok(Self {
            kid: kid.to_owned(),
            cipher,
        })
    }
}

fn derive_aes_key(secret: &[u8]) -> Result<[u8; 32], KeyRingError> {
    let mut key = [0u8; 32];
    Hkdf::<Sha256>::new(None, secret)
        .expand(KDF_INFO, &mut key)
        .map_err(|_| KeyRingError::KeyDerivation)?;
    Ok(key)
}

/// 64 hex digits (either case) to 32 bytes.
fn parse_hex_key(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (out, pair) in key.iter_mut().zip(hex.chunks_exact(2)) {
        let digit = |c: u8| char::from(c).to_digit(16);
        let (hi, lo) = (
            digit(pair.first().copied()?)?,
            digit(pair.get(1).copied()?)?,
        );
        *out = u8::try_from(hi * 16 + lo).ok()?;
    }
    Some(key)
}

pub(super) fn is_valid_kid(kid: &str) -> bool {
    !kid.is_empty()
        && kid.len() <= MAX_KID_LEN
        && kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn hex(secret: [u8; 32]) -> String {
        secret.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn hex_list_errors() {
        let a = hex([1; 32]);
        assert!(KeyRing::from_hex_list("").unwrap_err().is_empty_ring());
        assert!(KeyRing::from_hex_list("  ").unwrap_err().is_empty_ring());
        assert_eq!(
            KeyRing::from_hex_list(&format!("{a},")).unwrap_err(),
            KeyRingError::InvalidHexKey { index: 1 }
        );
        let e = KeyRing::from_hex_list(&a[..63]).unwrap_err();
        assert!(e.is_invalid_hex());
        assert_eq!(e.to_string(), "key 1 of the list is not 64 hex digits");
        let bad = format!("{}zz", &a[..62]);
        assert!(KeyRing::from_hex_list(&bad).unwrap_err().is_invalid_hex());
        let plus = format!("+{}", &a[..63]);
        assert!(KeyRing::from_hex_list(&plus).unwrap_err().is_invalid_hex());
        assert!(
            KeyRing::from_hex_list(&format!("{a},{}", a.to_uppercase()))
                .unwrap_err()
                .is_duplicate()
        );
        assert!(KeyRing::from_secrets([]).unwrap_err().is_empty_ring());
        let ring = KeyRing::from_hex_list(&format!("{a},{}", hex([2; 32]))).unwrap();
        assert_eq!(ring.kids().count(), 2);
        assert!(!format!("{ring:?}").contains(&a));
    }
}
