//! Sealing of the multi round-trip `requestState`.
//!
//! A server answering `input_required` may hand the client an opaque
//! `requestState` that the client echoes byte-for-byte on its retry.
//! The echo is attacker-controlled, so this module seals the
//! application's own state bytes into an authenticated, encrypted token and
//! verifies every echo before the application sees it again.
//!
//! # Token format
//!
//! ```text
//! v1.<kid>.<base64url-nopad(nonce[12] || AES-256-GCM ciphertext+tag)>
//! ```
//!
//! - `kid` names the ring key that sealed the token (`[A-Za-z0-9_-]{1,64}`),
//!   so opening is an O(1) lookup and keys can rotate (a ring seals with its
//!   first key and opens with all of them).
//! - The AES-256 key is derived from the 32-byte master secret with
//!   HKDF-SHA256 (`info = "mcp-rs/request-state/v1/aes-256-gcm"`); the nonce is
//!   96 random bits from the OS CSPRNG.
//! - The associated data is `"mcp-rs/request-state/v1." || kid`, so a token
//!   cannot be moved to another format version or ring slot.
//! - Base64url is the canonical unpadded form only: any non-canonical
//!   spelling (padding, non-zero trailing bits) is refused as malformed, so
//!   every single-character change of a token is detected.
//!
//! # Claims envelope (inside the ciphertext)
//!
//! A fixed 178-byte header followed by the application's state bytes:
//!
//! | bytes     | claim                                                      |
//! |-----------|------------------------------------------------------------|
//! | 0         | envelope version (`1`)                                     |
//! | 1..9      | issued-at, seconds since the Unix epoch, big endian        |
//! | 9..17     | expiry, seconds since the Unix epoch, big endian           |
//! | 17        | flags: bit 0 principal bound, bit 1 audience bound         |
//! | 18..50    | SHA-256 tag of the method                                  |
//! | 50..82    | SHA-256 tag of the target (tool/prompt name or resource URI) |
//! | 82..114   | SHA-256 digest of the canonical arguments                  |
//! | 114..146  | SHA-256 tag of the principal (zeros when unbound)          |
//! | 146..178  | SHA-256 tag of the audience (zeros when unbound)           |
//! | 178..     | state bytes                                                |
//!
//! Tags are domain-separated hashes, so the envelope has a fixed size no
//! matter how long a resource URI or principal is. Every claim is verified on
//! [`StateSealer::open`]; presence of the principal and of the
//! audience must match in both directions (fail closed).
//!
//! # Errors on the wire
//!
//! Every [`StateError`] maps to the same JSON-RPC error, -32602
//! "Invalid or expired requestState"; the precise reason is
//! for server logs only ([`StateError::to_error_object`]).
//!
//! # Key ring and rotation
//!
//! Keys are configuration shared by every replica, never stored in a
//! backplane. A [`KeyRing`] seals with its first key and opens with all of
//! them; the token's key id selects the key, so opening costs one AEAD
//! attempt however many keys the ring holds, and replicas with different
//! rings interoperate during a rotation. [`KeyRing::from_secrets`] (and
//! [`KeyRing::from_hex_list`], the `MCP_STATE_KEYS=hex1,hex2` form) name
//! each key by a fingerprint derived from it ([`KeyRing::derived_kid`]),
//! so every replica given the same secret agrees on its id without
//! configuring one. A token under a key the ring lacks is refused like a
//! tampered one (the same wire error).
//!
//! # Single use
//!
//! Tokens are stateless, so by default an authentic token is accepted again
//! while it is fresh. [`StateSealer::with_single_use`] turns on single-use
//! enforcement ("MUST when at-most-once semantics matter"): each
//! opened token is recorded by a SHA-256 digest until it expires (plus the
//! skew allowance) and refused the second time ([`StateError::Replayed`]).
//! The in-process record ([`crate::single_use::LocalSingleUse`]) is
//! bounded; when it is full of unexpired tokens, new tokens are refused
//! ([`StateError::ReplayStoreFull`]): failing closed keeps the at-most-once
//! promise. Replicas share a record through
//! [`StateSealer::with_single_use_store`] (e.g. `ferromcp_redis::RedisSingleUse`);
//! a store that cannot answer refuses the token with
//! [`StateError::StoreUnavailable`] (-32603, HTTP 503 with `Retry-After`).
//! With a remote store, open tokens with [`StateSealer::open_async`].
// MRTR-08, MRTR-09, STATE-06, MRTR-06, MRTR-08 POLICY
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use ferromcp_protocol::base64 as b64;
use ferromcp_protocol::{ErrorCode, ErrorObject};
use hkdf::Hkdf;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::single_use::{LocalSingleUse, SingleUseStore, StoreError, TokenId};

// MRTR-08 POLICY
/// The wire message for every rejected `requestState`.
pub const INVALID_STATE_MESSAGE: &str = "Invalid or expired requestState";

// MRTR-09
/// Default lifetime of a sealed token: 10 minutes ("short expiry").
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);

/// Default clock-skew allowance between the sealing and opening server.
pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(30);

/// Default upper bound on the length of a token accepted by
/// [`StateSealer::open`] (and produced by [`StateSealer::seal`]): 64 KiB.
pub const DEFAULT_MAX_TOKEN_LEN: usize = 64 * 1024;

/// Default capacity of the single-use record
/// ([`StateSealer::with_single_use`]): 100 000 tokens (about 5 MB).
pub const DEFAULT_MAX_CONSUMED_TOKENS: usize = 100_000;

const TOKEN_PREFIX: &str = "v1.";
const AAD_PREFIX: &[u8] = b"mcp-rs/request-state/v1.";
const KDF_INFO: &[u8] = b"mcp-rs/request-state/v1/aes-256-gcm";
const KID_INFO: &[u8] = b"mcp-rs/request-state/v1/kid\0";
const METHOD_LABEL: &[u8] = b"mcp-rs/request-state/v1/method\0";
const TARGET_LABEL: &[u8] = b"mcp-rs/request-state/v1/target\0";
const PRINCIPAL_LABEL: &[u8] = b"mcp-rs/request-state/v1/principal\0";
const AUDIENCE_LABEL: &[u8] = b"mcp-rs/request-state/v1/audience\0";

const MAX_KID_LEN: usize = 64;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
const ENVELOPE_VERSION: u8 = 1;
const FLAG_PRINCIPAL: u8 = 0b01;
const FLAG_AUDIENCE: u8 = 0b10;
/// Size of the fixed claims header (see the module docs).
const HEADER_LEN: usize = 1 + 8 + 8 + 1 + 5 * 32;

// ---------------------------------------------------------------------------
// Clock
// ---------------------------------------------------------------------------

/// A source of wall-clock time in whole seconds since the Unix epoch.
///
/// Injected into [`StateSealer`] so tests (and simulations) control expiry.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Seconds since the Unix epoch.
    fn now_secs(&self) -> u64;
}

/// The system wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_secs(&self) -> u64 {
        // A clock set before 1970 reads as 0: every token then looks minted in
        // the future and is refused, which fails closed.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }
}

/// A manually driven clock; clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock reading `now_secs`.
    pub fn new(now_secs: u64) -> Self {
        Self(Arc::new(AtomicU64::new(now_secs)))
    }

    /// Sets the current time.
    pub fn set(&self, now_secs: u64) {
        self.0.store(now_secs, Ordering::SeqCst);
    }

    /// Moves the clock forward by `secs` (saturating).
    pub fn advance(&self, secs: u64) {
        // fetch_update never fails with a closure that always returns Some.
        let _ = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(secs))
            });
    }
}

impl Clock for ManualClock {
    fn now_secs(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

// ---------------------------------------------------------------------------
// Key ring
// ---------------------------------------------------------------------------

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

struct RingKey {
    kid: String,
    cipher: Aes256Gcm,
}

// MRTR-08
/// The master secrets a [`StateSealer`] uses.
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

    fn sealing_key(&self) -> Option<&RingKey> {
        self.keys.first()
    }

    fn find(&self, kid: &str) -> Option<&RingKey> {
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

fn is_valid_kid(kid: &str) -> bool {
    !kid.is_empty()
        && kid.len() <= MAX_KID_LEN
        && kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

// ---------------------------------------------------------------------------
// Binding
// ---------------------------------------------------------------------------

// MRTR-09, MRTR-06
/// The originating request a token is bound to.
///
/// Build it identically when sealing (from the request that returned
/// `input_required`) and when opening (from the retry, which carries the same
/// method and original params).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBinding<'a> {
    /// The JSON-RPC method (`tools/call`, `prompts/get`, `resources/read`).
    pub method: &'a str,
    /// The tool or prompt `name`, or the resource `uri`.
    pub target: &'a str,
    /// [`arguments_digest`] of the request's `arguments`.
    pub arguments_digest: [u8; 32],
    // STATE-06
    /// The authenticated principal, when the transport has one.
    pub principal: Option<&'a str>,
}

impl<'a> StateBinding<'a> {
    /// A binding from its parts; `arguments` is digested with
    /// [`arguments_digest`].
    pub fn new(
        method: &'a str,
        target: &'a str,
        arguments: Option<&Value>,
        principal: Option<&'a str>,
    ) -> Self {
        Self {
            method,
            target,
            arguments_digest: arguments_digest(arguments),
            principal,
        }
    }

    // MRTR-09
    /// The binding of a request from its method and `params`.
    ///
    /// An allowlist per method, so a future wire field never silently joins
    /// the binding: `resources/read` binds `uri` (and no arguments); every
    /// other method binds `name` and `arguments`. A missing or non-string
    /// target binds as `""`; such a request is rejected elsewhere anyway.
    pub fn from_request(
        method: &'a str,
        params: Option<&'a Value>,
        principal: Option<&'a str>,
    ) -> Self {
        let field = |key: &str| params.and_then(|p| p.get(key));
        if method == "resources/read" {
            let target = field("uri").and_then(Value::as_str).unwrap_or("");
            Self::new(method, target, None, principal)
        } else {
            let target = field("name").and_then(Value::as_str).unwrap_or("");
            Self::new(method, target, field("arguments"), principal)
        }
    }
}

// MRTR-09
/// SHA-256 of the canonical JSON form of a request's `arguments`.
///
/// Canonical form: compact JSON with object keys sorted by their UTF-8 bytes
/// at every depth, strings escaped as `serde_json` does, numbers written as
/// `serde_json` writes the parsed number. The sorting is done here rather
/// than relying on `serde_json::Map` being a `BTreeMap`: a dependent crate
/// enabling `serde_json/preserve_order` would otherwise change the digest.
///
/// Absent arguments and JSON `null` digest the same as `{}`: all three mean
/// "no arguments" (`arguments` is optional on the wire), so a client that
/// normalises one to another on retry is not rejected. Any other value,
/// including `[]`, `""` or `false`, digests as itself.
pub fn arguments_digest(arguments: Option<&Value>) -> [u8; 32] {
    let mut canonical = Vec::new();
    match arguments {
        None | Some(Value::Null) => canonical.extend_from_slice(b"{}"),
        Some(v) => write_canonical(v, &mut canonical),
    }
    Sha256::digest(&canonical).into()
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_string(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
    }
}

fn write_json_string(s: &str, out: &mut Vec<u8>) {
    // Serialising a &str to JSON cannot fail; the fallback keeps this total.
    match serde_json::to_vec(s) {
        Ok(bytes) => out.extend_from_slice(&bytes),
        Err(_) => out.extend_from_slice(s.as_bytes()),
    }
}

fn tag(label: &[u8], value: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(label);
    hasher.update(value.as_bytes());
    hasher.finalize().into()
}

/// Constant-time equality of two 32-byte tags.
fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

// MRTR-09
/// A bound claim that differed between the token and the retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BindingField {
    /// The JSON-RPC method.
    Method,
    /// The tool/prompt name or resource URI.
    Target,
    /// The arguments digest.
    Arguments,
    /// The authenticated principal (or its presence).
    Principal,
    /// The sealer's audience (or its presence).
    Audience,
}

impl fmt::Display for BindingField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Method => "method",
            Self::Target => "target",
            Self::Arguments => "arguments",
            Self::Principal => "principal",
            Self::Audience => "audience",
        })
    }
}

// MRTR-08
/// Why an echoed `requestState` was refused.
///
/// Every variant is answered on the wire with the same error
/// ([`StateError::to_error_object`]); `Display` gives the log-only reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StateError {
    /// Too long, wrong prefix or shape, non-canonical base64url, too short, or
    /// an envelope this version cannot read.
    Malformed,
    /// The key id names no key in the ring (rotated out, or another server).
    UnknownKey,
    /// The authentication tag does not verify: the token was modified.
    Tampered,
    /// The token's expiry (plus the skew allowance) has passed.
    Expired,
    /// The token claims to be issued later than now plus the skew allowance.
    NotYetValid,
    /// The token is authentic but bound to a different request or principal.
    Mismatch {
        /// The first claim that differed.
        field: BindingField,
    },
    /// Single use is on and this token was already opened.
    Replayed,
    /// Single use is on and its record is full of unexpired tokens.
    ReplayStoreFull,
    /// Single use is on and its store could not answer (unreachable or timed
    /// out). Not the client's fault: the token was not recorded as used,
    /// and the same retry may succeed later.
    StoreUnavailable,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed => f.write_str("malformed requestState"),
            Self::UnknownKey => f.write_str("requestState sealed under an unknown key"),
            Self::Tampered => f.write_str("requestState failed authentication"),
            Self::Expired => f.write_str("requestState expired"),
            Self::NotYetValid => f.write_str("requestState issued in the future"),
            Self::Mismatch { field } => write!(f, "requestState bound to a different {field}"),
            Self::Replayed => f.write_str("requestState already used"),
            Self::ReplayStoreFull => {
                f.write_str("requestState refused: the single-use record is full")
            }
            Self::StoreUnavailable => {
                f.write_str("requestState refused: the single-use store is unavailable")
            }
        }
    }
}

impl std::error::Error for StateError {}

impl StateError {
    // MRTR-08 POLICY
    /// The wire error: -32602 "Invalid or expired requestState" with
    /// `data: {"reason": "invalid_request_state"}` for every variant but
    /// [`StateError::StoreUnavailable`] (as the Python SDK).
    /// The specific reason is not included; log `self` instead. A wrong or
    /// unknown key, a tampered token and a replay all look the same.
    ///
    /// [`StateError::StoreUnavailable`] is -32603 "Service temporarily
    /// unavailable" with `data: {"reason": "state_store_unavailable"}`. The
    /// server's transports answer that variant (known from the type, not
    /// from this object) on HTTP with 503 and `Retry-After`
    /// ([`crate::single_use::RETRY_AFTER_SECS`]).
    pub fn to_error_object(&self) -> ErrorObject {
        if self.is_store_unavailable() {
            return store_unavailable_error();
        }
        ErrorObject::new(ErrorCode::INVALID_PARAMS, INVALID_STATE_MESSAGE)
            .with_data(serde_json::json!({ "reason": "invalid_request_state" }))
    }

    /// True when the single-use store could not answer (retryable).
    pub fn is_store_unavailable(&self) -> bool {
        matches!(self, Self::StoreUnavailable)
    }

    /// True when a single-use token was presented again.
    pub fn is_replayed(&self) -> bool {
        matches!(self, Self::Replayed)
    }
}

fn store_unavailable_error() -> ErrorObject {
    ErrorObject::new(ErrorCode::INTERNAL_ERROR, "Service temporarily unavailable")
        .with_data(serde_json::json!({ "reason": "state_store_unavailable" }))
}

/// Why [`StateSealer::seal`] could not produce a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SealError {
    /// The token would exceed the sealer's maximum token length, so the
    /// retry carrying it would be refused.
    TooLarge {
        /// The length the token would have.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The operating system's random number generator failed.
    Rng,
    /// The AEAD refused to encrypt (only for absurdly large inputs).
    Crypto,
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { len, max } => {
                write!(f, "sealed requestState would be {len} bytes (max {max})")
            }
            Self::Rng => f.write_str("the system random number generator failed"),
            Self::Crypto => f.write_str("requestState encryption failed"),
        }
    }
}

impl std::error::Error for SealError {}

impl SealError {
    /// The wire error: -32603 "Internal error" without details (the reason
    /// belongs in the server log).
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(ErrorCode::INTERNAL_ERROR, "Internal error")
    }
}

// ---------------------------------------------------------------------------
// Sealer
// ---------------------------------------------------------------------------

// MRTR-08, MRTR-09
/// Seals and opens `requestState` tokens.
///
/// Cheap to share behind an `Arc`; all methods take `&self`.
#[derive(Debug)]
pub struct StateSealer {
    ring: KeyRing,
    ttl_secs: u64,
    skew_secs: u64,
    max_token_len: usize,
    audience: Option<String>,
    clock: Arc<dyn Clock>,
    single_use: Option<Arc<dyn SingleUseStore>>,
}

impl StateSealer {
    /// A sealer over `ring` with the defaults: 10-minute TTL, 30 s clock
    /// skew, 64 KiB maximum token, no audience, the system clock.
    pub fn new(ring: KeyRing) -> Self {
        Self {
            ring,
            ttl_secs: DEFAULT_TTL.as_secs(),
            skew_secs: DEFAULT_CLOCK_SKEW.as_secs(),
            max_token_len: DEFAULT_MAX_TOKEN_LEN,
            audience: None,
            clock: Arc::new(SystemClock),
            single_use: None,
        }
    }

    /// Makes every token single-use: `open` refuses a token it has opened
    /// before ([`StateError::Replayed`]), remembering at most `max_tokens`
    /// unexpired ones in this process (see [`DEFAULT_MAX_CONSUMED_TOKENS`];
    /// when full, new tokens are refused with [`StateError::ReplayStoreFull`]).
    /// Only an authentic, fresh, correctly bound token is recorded, so forged
    /// or expired ones cannot fill the record.
    pub fn with_single_use(self, max_tokens: usize) -> Self {
        self.with_single_use_store(Arc::new(LocalSingleUse::new(max_tokens)))
    }

    /// Makes every token single-use, recorded in `store` (shared by every
    /// replica for fleet-wide at-most-once). Open with
    /// [`open_async`](Self::open_async) when the store is remote.
    pub fn with_single_use_store(mut self, store: Arc<dyn SingleUseStore>) -> Self {
        self.single_use = Some(store);
        self
    }

    /// Sets the token lifetime, in whole seconds (at least one second).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl_secs = ttl.as_secs().max(1);
        self
    }

    /// Sets the clock-skew allowance (whole seconds) applied to both the
    /// issued-at and the expiry check.
    pub fn with_clock_skew(mut self, skew: Duration) -> Self {
        self.skew_secs = skew.as_secs();
        self
    }

    /// Sets the maximum token length accepted by `open` and produced by
    /// `seal`.
    pub fn with_max_token_len(mut self, max: usize) -> Self {
        self.max_token_len = max;
        self
    }

    /// Binds tokens to a service identity (e.g. the server name), so state
    /// minted by another service sharing the same keys is refused.
    pub fn with_audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    /// Replaces the clock (tests, simulations).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The key ring.
    pub fn key_ring(&self) -> &KeyRing {
        &self.ring
    }

    // MRTR-08, MRTR-09
    /// Seals `state` (the application's own bytes, possibly empty) bound to
    /// `binding`, expiring one TTL from now.
    pub fn seal(&self, binding: &StateBinding<'_>, state: &[u8]) -> Result<String, SealError> {
        let key = self.ring.sealing_key().ok_or(SealError::Crypto)?;
        let sealed_len = NONCE_LEN + HEADER_LEN + state.len() + TAG_LEN;
        let len = TOKEN_PREFIX.len() + key.kid.len() + 1 + (sealed_len * 4).div_ceil(3);
        if len > self.max_token_len {
            return Err(SealError::TooLarge {
                len,
                max: self.max_token_len,
            });
        }

        let now = self.clock.now_secs();
        let mut plaintext = Vec::with_capacity(HEADER_LEN + state.len());
        plaintext.push(ENVELOPE_VERSION);
        plaintext.extend_from_slice(&now.to_be_bytes());
        plaintext.extend_from_slice(&now.saturating_add(self.ttl_secs).to_be_bytes());
        let mut flags = 0u8;
        if binding.principal.is_some() {
            flags |= FLAG_PRINCIPAL;
        }
        if self.audience.is_some() {
            flags |= FLAG_AUDIENCE;
        }
        plaintext.push(flags);
        plaintext.extend_from_slice(&tag(METHOD_LABEL, binding.method));
        plaintext.extend_from_slice(&tag(TARGET_LABEL, binding.target));
        plaintext.extend_from_slice(&binding.arguments_digest);
        plaintext.extend_from_slice(
            &binding
                .principal
                .map_or([0; 32], |p| tag(PRINCIPAL_LABEL, p)),
        );
        plaintext.extend_from_slice(
            &self
                .audience
                .as_deref()
                .map_or([0; 32], |a| tag(AUDIENCE_LABEL, a)),
        );
        plaintext.extend_from_slice(state);

        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| SealError::Rng)?;
        let aad = aad(&key.kid);
        let ciphertext = key
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: &plaintext,
                    aad: &aad,
                },
            )
            .map_err(|_| SealError::Crypto)?;

        let mut body = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        body.extend_from_slice(&nonce);
        body.extend_from_slice(&ciphertext);
        let mut token = String::with_capacity(len);
        token.push_str(TOKEN_PREFIX);
        token.push_str(&key.kid);
        token.push('.');
        token.push_str(&b64::url_encode(&body));
        Ok(token)
    }

    // MRTR-08, MRTR-09
    /// Verifies an echoed token against the retry's `binding` and returns the
    /// state bytes it carries.
    ///
    /// Checks, in order: length bound, format, key id, AEAD tag, envelope
    /// version, issued-at/expiry (with the skew allowance), then method,
    /// target, arguments, principal and audience; with single use on, the
    /// token is then recorded.
    ///
    /// Synchronous: a single-use store must answer at once (the in-process
    /// one does). A store that would wait (a remote one) is not waited for:
    /// the token is refused with [`StateError::StoreUnavailable`]; use
    /// [`open_async`](Self::open_async) with such stores.
    pub fn open(&self, token: &str, binding: &StateBinding<'_>) -> Result<Vec<u8>, StateError> {
        use futures_util::FutureExt;
        let opened = self.verify(token, binding)?;
        if let Some(store) = &self.single_use {
            let answer = store
                .consume(&opened.id, opened.forget_after, opened.now)
                .now_or_never()
                .unwrap_or_else(|| {
                    Err(StoreError::unavailable(
                        "the store cannot answer synchronously; use StateSealer::open_async",
                    ))
                });
            single_use_verdict(answer)?;
        }
        Ok(opened.state)
    }

    /// [`open`](Self::open) for any single-use store: the store's answer is
    /// awaited on the caller's task (no spawn). Without single use, or with
    /// the in-process store, it completes without waiting.
    pub async fn open_async(
        &self,
        token: &str,
        binding: &StateBinding<'_>,
    ) -> Result<Vec<u8>, StateError> {
        let opened = self.verify(token, binding)?;
        if let Some(store) = &self.single_use {
            let answer = store
                .consume(&opened.id, opened.forget_after, opened.now)
                .await;
            single_use_verdict(answer)?;
        }
        Ok(opened.state)
    }

    /// Every check of `open` except the single-use record.
    fn verify(&self, token: &str, binding: &StateBinding<'_>) -> Result<Opened, StateError> {
        // Bound the work before decoding anything attacker-supplied.
        if token.len() > self.max_token_len {
            return Err(StateError::Malformed);
        }
        let rest = token
            .strip_prefix(TOKEN_PREFIX)
            .ok_or(StateError::Malformed)?;
        let (kid, body) = rest.split_once('.').ok_or(StateError::Malformed)?;
        if !is_valid_kid(kid) {
            return Err(StateError::Malformed);
        }
        let key = self.ring.find(kid).ok_or(StateError::UnknownKey)?;
        let raw = b64::url_decode(body.as_bytes()).ok_or(StateError::Malformed)?;
        if raw.len() < NONCE_LEN + TAG_LEN {
            return Err(StateError::Malformed);
        }
        let (nonce, ciphertext) = raw.split_at(NONCE_LEN);
        let aad = aad(kid);
        let plaintext = key
            .cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| StateError::Tampered)?;

        let claims = Claims::parse(&plaintext).ok_or(StateError::Malformed)?;
        let now = self.clock.now_secs();
        // Stated positively: accept only inside [iat - skew, exp + skew).
        if claims.issued_at > now.saturating_add(self.skew_secs) {
            return Err(StateError::NotYetValid);
        }
        if now >= claims.expires_at.saturating_add(self.skew_secs) {
            return Err(StateError::Expired);
        }
        let mismatch = |field| Err(StateError::Mismatch { field });
        if !ct_eq(&claims.method, &tag(METHOD_LABEL, binding.method)) {
            return mismatch(BindingField::Method);
        }
        if !ct_eq(&claims.target, &tag(TARGET_LABEL, binding.target)) {
            return mismatch(BindingField::Target);
        }
        if !ct_eq(&claims.arguments, &binding.arguments_digest) {
            return mismatch(BindingField::Arguments);
        }
        // Presence must agree in both directions (fail closed).
        match (claims.principal, binding.principal) {
            (None, None) => {}
            (Some(sealed), Some(p)) if ct_eq(&sealed, &tag(PRINCIPAL_LABEL, p)) => {}
            _ => return mismatch(BindingField::Principal),
        }
        match (claims.audience, self.audience.as_deref()) {
            (None, None) => {}
            (Some(sealed), Some(a)) if ct_eq(&sealed, &tag(AUDIENCE_LABEL, a)) => {}
            _ => return mismatch(BindingField::Audience),
        }
        // The authenticated bytes identify the token (the nonce alone would
        // do; hashing everything costs little and assumes less). Only
        // computed when a store will record it.
        let id = if self.single_use.is_some() {
            Sha256::digest(&raw).into()
        } else {
            [0; 32]
        };
        Ok(Opened {
            state: plaintext.get(HEADER_LEN..).unwrap_or_default().to_vec(),
            id,
            forget_after: claims.expires_at.saturating_add(self.skew_secs),
            now,
        })
    }
}

/// A verified token, before the single-use record.
struct Opened {
    state: Vec<u8>,
    id: TokenId,
    forget_after: u64,
    now: u64,
}

/// The sealer's answer for a single-use store's answer; store failures
/// are logged here (the wire error is generic).
fn single_use_verdict(answer: Result<bool, StoreError>) -> Result<(), StateError> {
    match answer {
        Ok(true) => Ok(()),
        Ok(false) => Err(StateError::Replayed),
        Err(e) if e.is_full() => Err(StateError::ReplayStoreFull),
        Err(e) => {
            tracing::warn!(error = %e, "single-use requestState store failed; refusing the token");
            Err(StateError::StoreUnavailable)
        }
    }
}

fn aad(kid: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(AAD_PREFIX.len() + kid.len());
    aad.extend_from_slice(AAD_PREFIX);
    aad.extend_from_slice(kid.as_bytes());
    aad
}

struct Claims {
    issued_at: u64,
    expires_at: u64,
    method: [u8; 32],
    target: [u8; 32],
    arguments: [u8; 32],
    principal: Option<[u8; 32]>,
    audience: Option<[u8; 32]>,
}

impl Claims {
    fn parse(plaintext: &[u8]) -> Option<Self> {
        let header = plaintext.get(..HEADER_LEN)?;
        let (&version, rest) = header.split_first()?;
        if version != ENVELOPE_VERSION {
            return None;
        }
        let (issued_at, rest) = split_array::<8>(rest)?;
        let (expires_at, rest) = split_array::<8>(rest)?;
        let (&flags, rest) = rest.split_first()?;
        if flags & !(FLAG_PRINCIPAL | FLAG_AUDIENCE) != 0 {
            return None;
        }
        let (method, rest) = split_array::<32>(rest)?;
        let (target, rest) = split_array::<32>(rest)?;
        let (arguments, rest) = split_array::<32>(rest)?;
        let (principal, rest) = split_array::<32>(rest)?;
        let (audience, _) = split_array::<32>(rest)?;
        Some(Self {
            issued_at: u64::from_be_bytes(issued_at),
            expires_at: u64::from_be_bytes(expires_at),
            method,
            target,
            arguments,
            principal: (flags & FLAG_PRINCIPAL != 0).then_some(principal),
            audience: (flags & FLAG_AUDIENCE != 0).then_some(audience),
        })
    }
}

fn split_array<const N: usize>(bytes: &[u8]) -> Option<([u8; N], &[u8])> {
    let head = bytes.get(..N)?;
    let tail = bytes.get(N..)?;
    Some((head.try_into().ok()?, tail))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const T0: u64 = 1_800_000_000;

    fn ring(kid: &str, fill: u8) -> KeyRing {
        KeyRing::new(kid, [fill; 32]).unwrap()
    }

    fn sealer_with(ring: KeyRing) -> (StateSealer, ManualClock) {
        let clock = ManualClock::new(T0);
        let sealer = StateSealer::new(ring).with_clock(Arc::new(clock.clone()));
        (sealer, clock)
    }

    fn sealer() -> (StateSealer, ManualClock) {
        sealer_with(ring("a", 1))
    }

    fn args() -> Value {
        json!({"city": "Paris", "days": 3})
    }

    fn binding(args: &Value) -> StateBinding<'_> {
        StateBinding::new("tools/call", "weather", Some(args), Some("alice"))
    }

    #[test]
    fn round_trip() {
        let (s, _) = sealer();
        let a = args();
        let b = binding(&a);
        for state in [&b""[..], b"x", b"{\"step\":2}", &[0u8; 1000][..]] {
            let token = s.seal(&b, state).unwrap();
            assert!(token.starts_with("v1.a."));
            assert_eq!(s.open(&token, &b).unwrap(), state);
        }
    }

    #[test]
    fn single_use_refuses_replays_and_forgets_expired_tokens() {
        // MRTR-09: at-most-once.
        let (s, clock) = sealer();
        let s = s.with_single_use(2);
        let a = args();
        let b = binding(&a);
        let t1 = s.seal(&b, b"one").unwrap();
        let t2 = s.seal(&b, b"two").unwrap();
        let t3 = s.seal(&b, b"three").unwrap();
        // A failed open (wrong binding, tampered) records nothing.
        let other = json!({"city": "Oslo"});
        assert!(matches!(
            s.open(&t1, &binding(&other)),
            Err(StateError::Mismatch { .. })
        ));
        assert_eq!(s.open(&t1, &b).unwrap(), b"one");
        assert_eq!(s.open(&t1, &b), Err(StateError::Replayed));
        assert_eq!(s.open(&t2, &b).unwrap(), b"two");
        // Full of unexpired tokens: fail closed.
        assert_eq!(s.open(&t3, &b), Err(StateError::ReplayStoreFull));
        assert_eq!(
            StateError::Replayed.to_error_object(),
            StateError::Tampered.to_error_object()
        );
        // After expiry (+ skew) the record frees itself; the old tokens are
        // refused as expired, a new one is accepted once.
        clock.advance(DEFAULT_TTL.as_secs() + DEFAULT_CLOCK_SKEW.as_secs());
        assert_eq!(s.open(&t1, &b), Err(StateError::Expired));
        let t4 = s.seal(&b, b"four").unwrap();
        assert_eq!(s.open(&t4, &b).unwrap(), b"four");
        assert_eq!(s.open(&t4, &b), Err(StateError::Replayed));
        // Without single use, replays are accepted (stateless by default).
        let (plain, _) = sealer();
        let t = plain.seal(&b, b"x").unwrap();
        assert!(plain.open(&t, &b).is_ok() && plain.open(&t, &b).is_ok());
    }

    #[test]
    fn seals_differ_by_nonce() {
        let (s, _) = sealer();
        let a = args();
        let b = binding(&a);
        let t1 = s.seal(&b, b"same").unwrap();
        let t2 = s.seal(&b, b"same").unwrap();
        assert_ne!(t1, t2);
        assert_eq!(s.open(&t1, &b).unwrap(), b"same");
        assert_eq!(s.open(&t2, &b).unwrap(), b"same");
    }

    #[test]
    fn state_is_not_readable_in_token() {
        let (s, _) = sealer();
        let a = args();
        let token = s.seal(&binding(&a), b"secret-plan-secret-plan").unwrap();
        let body = token.rsplit('.').next().unwrap();
        let raw = b64::url_decode(body.as_bytes()).unwrap();
        assert!(!raw.windows(11).any(|w| w == b"secret-plan"));
    }

    #[test]
    fn every_single_character_change_is_rejected() {
        let (s, _) = sealer();
        let a = args();
        let b = binding(&a);
        let token = s.seal(&b, b"state").unwrap();
        let bytes = token.as_bytes();
        for i in 0..bytes.len() {
            for replacement in [b'A', b'b', b'-', b'_', b'.', b'0'] {
                if bytes[i] == replacement {
                    continue;
                }
                let mut changed = bytes.to_vec();
                changed[i] = replacement;
                let changed = String::from_utf8(changed).unwrap();
                assert!(s.open(&changed, &b).is_err(), "accepted change at {i}");
            }
        }
    }

    #[test]
    fn appended_and_truncated_tokens_are_rejected() {
        let (s, _) = sealer();
        let a = args();
        let b = binding(&a);
        let token = s.seal(&b, b"state").unwrap();
        for suffix in ["-TAMPERED", "A", "AA", "AAA", "AAAA", "."] {
            let result = s.open(&format!("{token}{suffix}"), &b);
            assert!(
                matches!(result, Err(StateError::Malformed | StateError::Tampered)),
                "{suffix}: {result:?}"
            );
        }
        assert_eq!(
            s.open(&format!("{token}AAAA"), &b),
            Err(StateError::Tampered)
        );
        for cut in 0..token.len() {
            assert!(s.open(&token[..cut], &b).is_err(), "accepted prefix {cut}");
        }
        assert_eq!(s.open(&format!("{token}="), &b), Err(StateError::Malformed));
        assert_eq!(s.open(&format!(" {token}"), &b), Err(StateError::Malformed));
    }

    #[test]
    fn specific_tamper_reasons() {
        let (s, _) = sealer();
        let a = args();
        let b = binding(&a);
        assert_eq!(s.open("", &b), Err(StateError::Malformed));
        assert_eq!(s.open("v2.a.AAAA", &b), Err(StateError::Malformed));
        assert_eq!(s.open("v1.a", &b), Err(StateError::Malformed));
        assert_eq!(s.open("v1.a.AAAA", &b), Err(StateError::Malformed));
        assert_eq!(s.open("v1.a!.AAAA", &b), Err(StateError::Malformed));
        assert_eq!(s.open("v1.zz.AAAA", &b), Err(StateError::UnknownKey));
        let junk = b64::url_encode(&[7u8; 64]);
        assert_eq!(
            s.open(&format!("v1.a.{junk}"), &b),
            Err(StateError::Tampered)
        );

        // Flip one ciphertext bit: the tag no longer verifies.
        let token = s.seal(&b, b"state").unwrap();
        let (head, body) = token.rsplit_once('.').unwrap();
        let mut raw = b64::url_decode(body.as_bytes()).unwrap();
        raw[NONCE_LEN + 3] ^= 0x01;
        let flipped = format!("{head}.{}", b64::url_encode(&raw));
        assert_eq!(s.open(&flipped, &b), Err(StateError::Tampered));
    }

    #[test]
    fn kid_is_bound_into_aad() {
        // Same secret under two key ids: a token cannot be relabelled.
        let ring = KeyRing::new("a", [1; 32])
            .unwrap()
            .with_key("b", [1; 32])
            .unwrap();
        let (s, _) = sealer_with(ring);
        let a = args();
        let b = binding(&a);
        let token = s.seal(&b, b"state").unwrap();
        let relabelled = token.replacen("v1.a.", "v1.b.", 1);
        assert_eq!(s.open(&relabelled, &b), Err(StateError::Tampered));
    }

    #[test]
    fn expiry_and_skew() {
        let (s, clock) = sealer();
        let a = args();
        let b = binding(&a);
        let token = s.seal(&b, b"state").unwrap();
        let ttl = DEFAULT_TTL.as_secs();
        let skew = DEFAULT_CLOCK_SKEW.as_secs();
        clock.set(T0 + ttl + skew - 1);
        assert!(s.open(&token, &b).is_ok());
        clock.set(T0 + ttl + skew);
        assert_eq!(s.open(&token, &b), Err(StateError::Expired));
        clock.set(u64::MAX);
        assert_eq!(s.open(&token, &b), Err(StateError::Expired));

        // Issued "in the future" from the opener's point of view.
        clock.set(T0 - skew);
        assert!(s.open(&token, &b).is_ok());
        clock.set(T0 - skew - 1);
        assert_eq!(s.open(&token, &b), Err(StateError::NotYetValid));
    }

    #[test]
    fn custom_ttl_and_zero_skew() {
        let clock = ManualClock::new(T0);
        let s = StateSealer::new(ring("a", 1))
            .with_ttl(Duration::from_secs(5))
            .with_clock_skew(Duration::ZERO)
            .with_clock(Arc::new(clock.clone()));
        let a = args();
        let b = binding(&a);
        let token = s.seal(&b, b"").unwrap();
        clock.advance(4);
        assert!(s.open(&token, &b).is_ok());
        clock.advance(1);
        assert_eq!(s.open(&token, &b), Err(StateError::Expired));
    }

    #[test]
    fn binding_mismatches() {
        let (s, _) = sealer();
        let a = args();
        let b = binding(&a);
        let token = s.seal(&b, b"state").unwrap();
        let mismatch = |field| Err(StateError::Mismatch { field });

        let other = StateBinding {
            method: "prompts/get",
            ..b
        };
        assert_eq!(s.open(&token, &other), mismatch(BindingField::Method));
        let other = StateBinding {
            target: "weather2",
            ..b
        };
        assert_eq!(s.open(&token, &other), mismatch(BindingField::Target));
        let other_args = json!({"city": "Lyon", "days": 3});
        let other = StateBinding::new("tools/call", "weather", Some(&other_args), Some("alice"));
        assert_eq!(s.open(&token, &other), mismatch(BindingField::Arguments));
        let other = StateBinding {
            principal: Some("mallory"),
            ..b
        };
        assert_eq!(s.open(&token, &other), mismatch(BindingField::Principal));
        let other = StateBinding {
            principal: None,
            ..b
        };
        assert_eq!(s.open(&token, &other), mismatch(BindingField::Principal));

        // Unbound token presented by an authenticated caller: also refused.
        let anon = StateBinding {
            principal: None,
            ..b
        };
        let token = s.seal(&anon, b"state").unwrap();
        assert_eq!(s.open(&token, &b), mismatch(BindingField::Principal));
        assert_eq!(s.open(&token, &anon).unwrap(), b"state");
    }

    #[test]
    fn audience_binding() {
        let clock = ManualClock::new(T0);
        let make = |aud: Option<&str>| {
            let s = StateSealer::new(ring("a", 1)).with_clock(Arc::new(clock.clone()));
            match aud {
                Some(a) => s.with_audience(a),
                None => s,
            }
        };
        let (one, two, none) = (make(Some("one")), make(Some("two")), make(None));
        let a = args();
        let b = binding(&a);
        let token = one.seal(&b, b"s").unwrap();
        assert_eq!(one.open(&token, &b).unwrap(), b"s");
        let mismatch = Err(StateError::Mismatch {
            field: BindingField::Audience,
        });
        assert_eq!(two.open(&token, &b), mismatch);
        assert_eq!(none.open(&token, &b), mismatch);
        let token = none.seal(&b, b"s").unwrap();
        assert_eq!(one.open(&token, &b), mismatch);
    }

    #[test]
    fn rotation() {
        let a = args();
        let b = binding(&a);
        let (old, clock) = sealer_with(ring("A", 1));
        let token = old.seal(&b, b"state").unwrap();

        let rotated = KeyRing::new("B", [2; 32])
            .unwrap()
            .with_key("A", [1; 32])
            .unwrap();
        let s = StateSealer::new(rotated).with_clock(Arc::new(clock.clone()));
        assert_eq!(s.open(&token, &b).unwrap(), b"state");
        let fresh = s.seal(&b, b"new").unwrap();
        assert!(fresh.starts_with("v1.B."));
        assert_eq!(old.open(&fresh, &b), Err(StateError::UnknownKey));

        let (only_b, _) = sealer_with(ring("B", 2));
        assert_eq!(only_b.open(&token, &b), Err(StateError::UnknownKey));
        assert_eq!(only_b.open(&fresh, &b).unwrap(), b"new");

        // Same kid, different secret: the tag fails.
        let (impostor, _) = sealer_with(ring("A", 9));
        assert_eq!(impostor.open(&token, &b), Err(StateError::Tampered));
    }

    fn hex(secret: [u8; 32]) -> String {
        secret.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn derived_sealer(list: &str, clock: &ManualClock) -> StateSealer {
        StateSealer::new(KeyRing::from_hex_list(list).unwrap()).with_clock(Arc::new(clock.clone()))
    }

    #[test]
    fn fleet_rotation_with_derived_key_ids() {
        // Replicas configured with MCP_STATE_KEYS-style lists: the key id
        // travels in the token, so mixed rings interoperate mid-rotation.
        let (a, b) = (hex([0xA1; 32]), hex([0xB2; 32]));
        let clock = ManualClock::new(T0);
        let only_a = derived_sealer(&a, &clock);
        let a_then_b = derived_sealer(&format!("{a},{b}"), &clock);
        let b_then_a = derived_sealer(&format!(" {b} , {a} "), &clock);
        let only_b = derived_sealer(&b.to_uppercase(), &clock);
        let args = args();
        let bind = binding(&args);

        // Step 1: [A] and [A, B] both seal with A, open each other's.
        let t_a = only_a.seal(&bind, b"from-a").unwrap();
        assert_eq!(a_then_b.open(&t_a, &bind).unwrap(), b"from-a");
        assert_eq!(b_then_a.open(&t_a, &bind).unwrap(), b"from-a");
        // Step 2: [B, A] seals with B; [A, B] opens it, [A] alone does not.
        let t_b = b_then_a.seal(&bind, b"from-b").unwrap();
        assert_eq!(a_then_b.open(&t_b, &bind).unwrap(), b"from-b");
        assert_eq!(only_b.open(&t_b, &bind).unwrap(), b"from-b");
        // Step 3: rotation finished, [B] alone refuses A's tokens, and [A]
        // refuses B's, with the same wire error as tampering.
        for (sealer, token) in [(&only_b, &t_a), (&only_a, &t_b)] {
            let e = sealer.open(token, &bind).unwrap_err();
            assert_eq!(e, StateError::UnknownKey);
            assert_eq!(e.to_error_object(), StateError::Tampered.to_error_object());
        }
        // Key ids are derived from the key alone: same id on every replica.
        let kid_a = KeyRing::derived_kid(&[0xA1; 32]).unwrap();
        assert!(t_a.starts_with(&format!("v1.{kid_a}.")));
        assert_eq!(
            only_a.key_ring().kids().collect::<Vec<_>>(),
            vec![kid_a.as_str()]
        );
        assert_eq!(b_then_a.key_ring().kids().nth(1), Some(kid_a.as_str()));
    }

    #[test]
    fn wrong_key_under_a_known_id_is_tampering() {
        // A ring claiming A's id with another secret: refused as tampered.
        let clock = ManualClock::new(T0);
        let honest = derived_sealer(&hex([0xA1; 32]), &clock);
        let kid_a = KeyRing::derived_kid(&[0xA1; 32]).unwrap();
        let forger = StateSealer::new(KeyRing::new(&kid_a, [0x66; 32]).unwrap())
            .with_clock(Arc::new(clock.clone()));
        let args = args();
        let bind = binding(&args);
        let forged = forger.seal(&bind, b"x").unwrap();
        assert_eq!(honest.open(&forged, &bind), Err(StateError::Tampered));
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

    /// A store that never answers at once and can be made to fail.
    #[derive(Debug, Default)]
    struct SlowStore {
        fail: std::sync::atomic::AtomicBool,
        inner: std::sync::Mutex<std::collections::HashSet<TokenId>>,
    }

    impl SingleUseStore for SlowStore {
        fn consume(
            &self,
            token: &TokenId,
            _forget_after: u64,
            _now: u64,
        ) -> futures_util::future::BoxFuture<'_, Result<bool, StoreError>> {
            let token = *token;
            Box::pin(async move {
                tokio::task::yield_now().await;
                if self.fail.load(Ordering::SeqCst) {
                    return Err(StoreError::unavailable("down"));
                }
                Ok(self.inner.lock().unwrap().insert(token))
            })
        }
    }

    #[tokio::test]
    async fn async_single_use_store() {
        let store = Arc::new(SlowStore::default());
        let (s, _) = sealer();
        let s = s.with_single_use_store(store.clone());
        let a = args();
        let b = binding(&a);
        let t1 = s.seal(&b, b"one").unwrap();
        // Sync open cannot wait for a remote store: fails closed.
        assert_eq!(s.open(&t1, &b), Err(StateError::StoreUnavailable));
        let t2 = s.seal(&b, b"two").unwrap();
        assert_eq!(s.open_async(&t2, &b).await.unwrap(), b"two");
        assert_eq!(s.open_async(&t2, &b).await, Err(StateError::Replayed));
        // A failed verification never reaches the store.
        let other = json!({"city": "Oslo"});
        let t3 = s.seal(&b, b"three").unwrap();
        assert!(matches!(
            s.open_async(&t3, &binding(&other)).await,
            Err(StateError::Mismatch { .. })
        ));
        // The store is down: a distinct, retryable error; once it is back
        // the same token is accepted (it was not recorded).
        store.fail.store(true, Ordering::SeqCst);
        let e = s.open_async(&t3, &b).await.unwrap_err();
        assert!(e.is_store_unavailable() && !e.is_replayed());
        let obj = e.to_error_object();
        assert_eq!(obj.code, ErrorCode::INTERNAL_ERROR);
        assert_ne!(obj, StateError::Tampered.to_error_object());
        store.fail.store(false, Ordering::SeqCst);
        assert_eq!(s.open_async(&t3, &b).await.unwrap(), b"three");
    }

    #[tokio::test]
    async fn open_async_with_the_local_store_matches_open() {
        let (s, _) = sealer();
        let s = s.with_single_use(1);
        let a = args();
        let b = binding(&a);
        let t1 = s.seal(&b, b"one").unwrap();
        let t2 = s.seal(&b, b"two").unwrap();
        assert_eq!(s.open_async(&t1, &b).await.unwrap(), b"one");
        assert_eq!(s.open(&t1, &b), Err(StateError::Replayed));
        assert_eq!(
            s.open_async(&t2, &b).await,
            Err(StateError::ReplayStoreFull)
        );
    }

    #[test]
    fn key_ring_validation_and_random() {
        assert_eq!(
            KeyRing::new("", [0; 32]).err(),
            Some(KeyRingError::InvalidKeyId)
        );
        assert_eq!(
            KeyRing::new("a.b", [0; 32]).err(),
            Some(KeyRingError::InvalidKeyId)
        );
        assert_eq!(
            KeyRing::new(&"k".repeat(65), [0; 32]).err(),
            Some(KeyRingError::InvalidKeyId)
        );
        assert_eq!(
            ring("a", 1).with_key("a", [2; 32]).err(),
            Some(KeyRingError::DuplicateKeyId)
        );
        let r = KeyRing::random().unwrap();
        let kids: Vec<&str> = r.kids().collect();
        assert_eq!(kids.len(), 1);
        assert_eq!(kids[0].len(), 8);
        assert!(!format!("{r:?}").contains("cipher"));

        let r2 = KeyRing::random().unwrap();
        let (s1, _) = sealer_with(r);
        let (s2, _) = sealer_with(r2);
        let a = args();
        let b = binding(&a);
        let token = s1.seal(&b, b"x").unwrap();
        assert!(s2.open(&token, &b).is_err());
    }

    #[test]
    fn size_bounds() {
        let (s, _) = sealer();
        let s = s.with_max_token_len(400);
        let a = args();
        let b = binding(&a);
        let ok = s.seal(&b, &[1u8; 50]).unwrap();
        assert!(ok.len() <= 400);
        assert!(matches!(
            s.seal(&b, &[1u8; 200]),
            Err(SealError::TooLarge { max: 400, .. })
        ));
        let long = format!("v1.a.{}", "A".repeat(400));
        assert_eq!(s.open(&long, &b), Err(StateError::Malformed));

        // The predicted length is exact.
        let clock = ManualClock::new(T0);
        let with_max = |max: usize| {
            StateSealer::new(ring("a", 1))
                .with_clock(Arc::new(clock.clone()))
                .with_max_token_len(max)
        };
        let s = with_max(DEFAULT_MAX_TOKEN_LEN);
        for n in 0..8 {
            let state = vec![0u8; n];
            let token = s.seal(&b, &state).unwrap();
            assert!(with_max(token.len()).seal(&b, &state).is_ok());
            assert!(with_max(token.len() - 1).seal(&b, &state).is_err());
        }
    }

    #[test]
    fn error_objects() {
        for e in [
            StateError::Malformed,
            StateError::UnknownKey,
            StateError::Tampered,
            StateError::Expired,
            StateError::NotYetValid,
            StateError::Mismatch {
                field: BindingField::Principal,
            },
        ] {
            let obj = e.to_error_object();
            assert_eq!(obj.code, ErrorCode::INVALID_PARAMS);
            assert_eq!(obj.message, "Invalid or expired requestState");
            assert!(!e.to_string().is_empty());
        }
        assert_eq!(
            StateError::Mismatch {
                field: BindingField::Arguments
            }
            .to_string(),
            "requestState bound to a different arguments"
        );
        let obj = SealError::Rng.to_error_object();
        assert_eq!(obj.code, ErrorCode::INTERNAL_ERROR);
    }

    #[test]
    fn arguments_digest_is_canonical() {
        let x: Value = serde_json::from_str(r#"{"b":1,"a":{"d":[1,2],"c":"é"}}"#).unwrap();
        let y: Value = serde_json::from_str(r#"{"a":{"c":"é","d":[1,2]},"b":1}"#).unwrap();
        assert_eq!(arguments_digest(Some(&x)), arguments_digest(Some(&y)));

        let mut canonical = Vec::new();
        write_canonical(&x, &mut canonical);
        assert_eq!(canonical, r#"{"a":{"c":"é","d":[1,2]},"b":1}"#.as_bytes());

        let empty = arguments_digest(Some(&json!({})));
        assert_eq!(arguments_digest(None), empty);
        assert_eq!(arguments_digest(Some(&Value::Null)), empty);
        assert_ne!(arguments_digest(Some(&json!([]))), empty);
        assert_ne!(arguments_digest(Some(&json!(false))), empty);
        assert_ne!(
            arguments_digest(Some(&json!({"a": [1, 2]}))),
            arguments_digest(Some(&json!({"a": [2, 1]})))
        );
        let expected: [u8; 32] = Sha256::digest(b"{}").into();
        assert_eq!(empty, expected);
    }

    #[test]
    fn binding_from_request() {
        let params = json!({"name": "weather", "arguments": {"days": 3, "city": "Paris"},
                            "_meta": {"x": 1}, "requestState": "ignored"});
        let b = StateBinding::from_request("tools/call", Some(&params), Some("alice"));
        assert_eq!(b, binding(&args()));

        let params = json!({"uri": "file:///a.txt", "arguments": {"ignored": true}});
        let b = StateBinding::from_request("resources/read", Some(&params), None);
        assert_eq!(b.target, "file:///a.txt");
        assert_eq!(b.arguments_digest, arguments_digest(None));

        let b = StateBinding::from_request("prompts/get", None, None);
        assert_eq!(b.target, "");
    }

    proptest! {
        #[test]
        fn open_never_panics(token in ".{0,300}") {
            let (s, _) = sealer();
            let a = args();
            let _ = s.open(&token, &binding(&a));
            let _ = s.open(&format!("v1.a.{token}"), &binding(&a));
        }

        #[test]
        fn open_rejects_mutated_tokens(state in proptest::collection::vec(any::<u8>(), 0..64),
                                       pos in any::<prop::sample::Index>(),
                                       byte in 0x21u8..0x7f) {
            let (s, _) = sealer();
            let a = args();
            let b = binding(&a);
            let token = s.seal(&b, &state).unwrap();
            prop_assert_eq!(s.open(&token, &b).unwrap(), state);
            let i = pos.index(token.len());
            prop_assume!(token.as_bytes()[i] != byte);
            let mut changed = token.into_bytes();
            changed[i] = byte;
            let changed = String::from_utf8(changed).unwrap();
            prop_assert!(s.open(&changed, &b).is_err());
        }
    }
}
