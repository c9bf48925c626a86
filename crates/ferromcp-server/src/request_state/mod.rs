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
//! A server takes these settings as a [`crate::RequestStateConfig`]
//! (see [`crate::ServerBuilder::request_state`]).
// MRTR-08, MRTR-09, STATE-06, MRTR-06, MRTR-08 POLICY
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

mod binding;
mod claims;
mod clock;
mod error;
mod key_ring;
mod sealer;

use std::time::Duration;

pub use binding::{StateBinding, arguments_digest};
pub use clock::{Clock, SystemClock};
pub use error::{BindingField, SealError, StateError};
pub use key_ring::{KeyRing, KeyRingError};
pub use sealer::StateSealer;

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
