//! Where single-use `requestState` tokens are recorded.
//!
//! A [`crate::request_state::StateSealer`] with single use on asks a
//! [`SingleUseStore`] to record each authentic, fresh, correctly bound token
//! it opens; the store answers whether this was the token's first use. The
//! in-process default is [`LocalSingleUse`] (a bounded record per process);
//! a shared store (e.g. `ferromcp_redis::RedisSingleUse`) makes a token single-use
//! across every replica behind a load balancer.
//!
//! The store is only consulted on MRTR retry legs that carry a
//! `requestState`: a request without one never touches it. Its call is
//! awaited inline on the request's own task (no spawn); an in-process store
//! answers with a ready future.
//!
//! # Errors
//!
//! A store that cannot answer ([`StoreError::is_unavailable`],
//! [`StoreError::is_timeout`]) fails closed: the token is refused with
//! [`crate::request_state::StateError::StoreUnavailable`], which the wire
//! sees as -32603 "Service temporarily unavailable" with
//! `data: {"reason": "state_store_unavailable"}` and, on HTTP, status 503 with
//! `Retry-After` ([`RETRY_AFTER_SECS`]). The client may retry the same leg
//! later: the token was not recorded as used. A full store
//! ([`StoreError::is_full`]) keeps its historic answer,
//! [`crate::request_state::StateError::ReplayStoreFull`].
// MRTR-09

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::Mutex;

use futures_util::future::BoxFuture;

/// The identifier of a sealed token: a SHA-256 digest of its authenticated
/// bytes (unique per token, reveals nothing about its contents).
pub type TokenId = [u8; 32];

/// The `Retry-After` (seconds) an HTTP answer carries when the single-use
/// store is unavailable.
pub const RETRY_AFTER_SECS: u32 = 1;

// MRTR-09
/// A record of consumed single-use tokens.
///
/// Implementations must be atomic: of any number of concurrent
/// [`consume`](SingleUseStore::consume) calls for one token, across every
/// server sharing the store, exactly one may answer `Ok(true)`.
pub trait SingleUseStore: Send + Sync + fmt::Debug + 'static {
    /// Records `token` as used until `forget_after` (seconds since the Unix
    /// epoch; the token's expiry plus the clock-skew allowance, after which
    /// the sealer refuses it anyway). `now` is the sealer's clock reading.
    ///
    /// `Ok(true)`: first use. `Ok(false)`: the token was used before.
    fn consume(
        &self,
        token: &TokenId,
        forget_after: u64,
        now: u64,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;
}

/// What went wrong in a [`SingleUseStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The store is at capacity with unexpired tokens.
    Full,
    /// The store did not answer within its time limit.
    Timeout,
    /// The store could not be reached or refused the command.
    Unavailable,
}

/// Why a [`SingleUseStore`] could not answer.
#[derive(Debug)]
pub struct StoreError {
    kind: StoreErrorKind,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl StoreError {
    /// The store is full of unexpired tokens.
    pub fn full() -> Self {
        Self {
            kind: StoreErrorKind::Full,
            source: None,
        }
    }

    /// The store did not answer in time.
    pub fn timeout() -> Self {
        Self {
            kind: StoreErrorKind::Timeout,
            source: None,
        }
    }

    /// The store is unreachable or failed; `source` says why.
    pub fn unavailable(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            kind: StoreErrorKind::Unavailable,
            source: Some(source.into()),
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// True when the store is at capacity.
    pub fn is_full(&self) -> bool {
        self.kind == StoreErrorKind::Full
    }

    /// True when the store did not answer in time.
    pub fn is_timeout(&self) -> bool {
        self.kind == StoreErrorKind::Timeout
    }

    /// True when the store could not be reached or failed.
    pub fn is_unavailable(&self) -> bool {
        self.kind == StoreErrorKind::Unavailable
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            StoreErrorKind::Full => f.write_str("the single-use record is full"),
            StoreErrorKind::Timeout => f.write_str("the single-use store timed out"),
            StoreErrorKind::Unavailable => match &self.source {
                Some(e) => write!(f, "the single-use store is unavailable: {e}"),
                None => f.write_str("the single-use store is unavailable"),
            },
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// The in-process single-use record: bounded, per process.
///
/// Remembers at most `max_tokens` unexpired tokens; when full, new tokens
/// are refused ([`StoreError::full`]): failing closed keeps the at-most-once
/// promise. Replicas need a shared store instead (or sticky routing).
pub struct LocalSingleUse {
    max: usize,
    records: Mutex<LocalRecords>,
}

#[derive(Default)]
struct LocalRecords {
    seen: HashSet<TokenId>,
    /// `(forget after, id)` in the order recorded. Expiry is (nearly)
    /// monotonic in that order, so purging from the front is amortized
    /// O(1); an entry is never forgotten before its own expiry.
    order: VecDeque<(u64, TokenId)>,
}

impl fmt::Debug for LocalSingleUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSingleUse")
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl LocalSingleUse {
    /// A record of at most `max_tokens` unexpired tokens (see
    /// [`crate::request_state::DEFAULT_MAX_CONSUMED_TOKENS`]).
    pub fn new(max_tokens: usize) -> Self {
        Self {
            max: max_tokens,
            records: Mutex::new(LocalRecords::default()),
        }
    }

    /// The synchronous form of [`SingleUseStore::consume`].
    pub fn consume_now(
        &self,
        token: &TokenId,
        forget_after: u64,
        now: u64,
    ) -> Result<bool, StoreError> {
        let mut st = self.records.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(&(t, d)) = st.order.front() {
            if t > now {
                break;
            }
            st.order.pop_front();
            st.seen.remove(&d);
        }
        if st.seen.contains(token) {
            return Ok(false);
        }
        if st.seen.len() >= self.max {
            return Err(StoreError::full());
        }
        st.seen.insert(*token);
        st.order.push_back((forget_after, *token));
        Ok(true)
    }
}

impl SingleUseStore for LocalSingleUse {
    fn consume(
        &self,
        token: &TokenId,
        forget_after: u64,
        now: u64,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(std::future::ready(self.consume_now(
            token,
            forget_after,
            now,
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn local_store_records_once_and_forgets_after_expiry() {
        let s = LocalSingleUse::new(2);
        assert!(s.consume_now(&[1; 32], 100, 10).unwrap());
        assert!(!s.consume_now(&[1; 32], 100, 11).unwrap());
        assert!(s.consume_now(&[2; 32], 100, 12).unwrap());
        let full = s.consume_now(&[3; 32], 100, 13).unwrap_err();
        assert!(full.is_full() && !full.is_timeout() && !full.is_unavailable());
        // At 100 both entries are forgotten.
        assert!(s.consume_now(&[3; 32], 200, 100).unwrap());
        assert!(s.consume_now(&[1; 32], 200, 100).unwrap());
    }

    #[test]
    fn async_form_is_ready_at_once() {
        use futures_util::FutureExt;
        let s = LocalSingleUse::new(1);
        let r = s.consume(&[9; 32], 10, 0).now_or_never();
        assert!(matches!(r, Some(Ok(true))));
    }

    #[test]
    fn error_kinds_and_messages() {
        let e = StoreError::unavailable("connection refused");
        assert!(e.is_unavailable());
        assert_eq!(e.kind(), StoreErrorKind::Unavailable);
        assert!(e.to_string().contains("connection refused"));
        assert!(e.source().is_some());
        assert!(StoreError::timeout().is_timeout());
        assert!(StoreError::timeout().source().is_none());
    }
}
