//! Sealing and opening tokens: the token format, the claim checks and
//! the single-use record.

use std::sync::Arc;
use std::time::Duration;

use aes_gcm::Nonce;
use aes_gcm::aead::{Aead, Payload};
use ferromcp_protocol::base64 as b64;
use sha2::{Digest, Sha256};

use super::binding::{AUDIENCE_LABEL, METHOD_LABEL, PRINCIPAL_LABEL, TARGET_LABEL, ct_eq, tag};
use super::claims::{Claims, ENVELOPE_VERSION, FLAG_AUDIENCE, FLAG_PRINCIPAL, HEADER_LEN};
use super::key_ring::is_valid_kid;
use super::{
    BindingField, Clock, DEFAULT_CLOCK_SKEW, DEFAULT_MAX_TOKEN_LEN, DEFAULT_TTL, KeyRing,
    SealError, StateBinding, StateError, SystemClock,
};
use crate::single_use::{LocalSingleUse, SingleUseStore, StoreError, TokenId};

const TOKEN_PREFIX: &str = "v1.";
const AAD_PREFIX: &[u8] = b"mcp-rs/request-state/v1.";
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

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
    /// unexpired ones in this process (see [`DEFAULT_MAX_CONSUMED_TOKENS`](super::DEFAULT_MAX_CONSUMED_TOKENS);
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

    /// The token lifetime in seconds.
    #[cfg(test)]
    pub(crate) fn ttl_secs(&self) -> u64 {
        self.ttl_secs
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::atomic::Ordering;

    use ferromcp_protocol::ErrorCode;

    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::request_state::KeyRingError;
    use crate::testing::ManualClock;

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
