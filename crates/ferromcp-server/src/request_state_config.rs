//! [`RequestStateConfig`]: how a server seals and opens the `requestState`
//! of multi round-trip requests, given to
//! [`ServerBuilder::request_state`](crate::ServerBuilder::request_state).

use crate::error::Error;
use crate::request_state::{DEFAULT_TTL, KeyRing, StateSealer};
use crate::single_use::SingleUseStore;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How a server seals and opens `requestState` (the state a tool, prompt
/// or resource hands the client with `input_required` and gets back on
/// the retry): the keys, the token lifetime and whether a token may be
/// used once only.
///
/// The default is right for a single process: a random key made at build
/// time, a 10-minute lifetime ([`DEFAULT_TTL`]), tokens accepted as often as
/// they are presented while fresh. Replicas behind a load balancer must
/// share [`keys`](Self::keys); tools with at-most-once semantics want
/// [`single_use`](Self::single_use), or across a fleet
/// [`single_use_store`](Self::single_use_store).
///
/// The single-use store is configured here, not in
/// [`Backplane`](crate::Backplane), although a shared one is fleet state
/// like the backplane: whether a token may be replayed is a policy of
/// `requestState` that a single process may want too, and the in-process
/// record and a shared store are two forms of that one setting, so they
/// live side by side and the last call decides.
///
/// `Debug` shows the key ids, never key material.
///
/// ```
/// use ferromcp_server::{RequestStateConfig, Server};
/// use ferromcp_server::request_state::KeyRing;
/// use std::time::Duration;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Every replica is given the same keys, e.g. from MCP_STATE_KEYS.
/// let keys = KeyRing::new("k1", [7u8; 32])?;
/// let config = RequestStateConfig::default()
///     .keys(keys)
///     .ttl(Duration::from_secs(120))
///     .single_use(10_000);
/// assert!(!format!("{config:?}").contains("[7, 7"));
/// let server = Server::builder("s", "1").request_state(config).build()?;
/// # drop(server);
/// # Ok(())
/// # }
/// ```
pub struct RequestStateConfig {
    keys: Option<KeyRing>,
    ttl: Duration,
    single_use: SingleUse,
}

/// Whether tokens are single-use, and where their use is recorded.
enum SingleUse {
    Off,
    /// In this process, at most this many unexpired tokens.
    Local(usize),
    /// In a store, possibly shared by every replica.
    Store(Arc<dyn SingleUseStore>),
}

impl Default for RequestStateConfig {
    fn default() -> Self {
        Self {
            keys: None,
            ttl: DEFAULT_TTL,
            single_use: SingleUse::Off,
        }
    }
}

impl fmt::Debug for RequestStateConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // KeyRing's own Debug prints key ids only.
        let keys: &dyn fmt::Debug = match &self.keys {
            Some(ring) => ring,
            None => &"random at build",
        };
        let mut s = f.debug_struct("RequestStateConfig");
        s.field("keys", keys).field("ttl", &self.ttl);
        match &self.single_use {
            SingleUse::Off => s.field("single_use", &"off"),
            SingleUse::Local(max) => s.field("single_use_max_tokens", max),
            SingleUse::Store(store) => s.field("single_use_store", store),
        };
        s.finish()
    }
}

impl RequestStateConfig {
    /// The keys that seal and open tokens (the first seals, all open:
    /// rotation). Without this a random key is generated at build time,
    /// which is right for a single process; replicas behind a load balancer
    /// must share keys.
    pub fn keys(mut self, keys: KeyRing) -> Self {
        self.keys = Some(keys);
        self
    }

    /// How long a sealed token stays valid, in whole seconds (at least
    /// one). Default [`DEFAULT_TTL`], 10 minutes.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Makes every token single-use (for tools with at-most-once
    /// semantics): a token is accepted once, remembering at most
    /// `max_tokens` unexpired ones in this process; when the record is full
    /// new tokens are refused (fail closed). Default off; see
    /// [`StateSealer::with_single_use`] and
    /// [`DEFAULT_MAX_CONSUMED_TOKENS`](crate::request_state::DEFAULT_MAX_CONSUMED_TOKENS).
    /// Replaces an earlier [`single_use_store`](Self::single_use_store).
    pub fn single_use(mut self, max_tokens: usize) -> Self {
        // MRTR-09
        self.single_use = SingleUse::Local(max_tokens);
        self
    }

    /// Makes every token single-use, recorded in `store` instead of the
    /// in-process record: with a store shared by every replica (e.g.
    /// `ferromcp_redis::RedisSingleUse`) a token is accepted once
    /// fleet-wide. A store that cannot answer refuses the retry with -32603
    /// (HTTP 503 with `Retry-After`); see [`crate::single_use`]. Replaces an
    /// earlier [`single_use`](Self::single_use).
    pub fn single_use_store(mut self, store: Arc<dyn SingleUseStore>) -> Self {
        // MRTR-09
        self.single_use = SingleUse::Store(store);
        self
    }

    /// The sealer this configuration describes; without keys, over a
    /// fresh random ring (a configuration error when the system cannot
    /// supply randomness).
    pub(crate) fn into_sealer(self) -> Result<StateSealer, Error> {
        let keys = match self.keys {
            Some(k) => k,
            None => KeyRing::random()
                .map_err(|e| Error::config(format!("cannot generate a requestState key: {e}")))?,
        };
        let sealer = StateSealer::new(keys).with_ttl(self.ttl);
        Ok(match self.single_use {
            SingleUse::Off => sealer,
            SingleUse::Local(max) => sealer.with_single_use(max),
            SingleUse::Store(store) => sealer.with_single_use_store(store),
        })
    }
}

#[cfg(test)]
mod tests {
    // MRTR-08, MRTR-09, STATE-06
    use super::*;
    use crate::Server;
    use crate::request_state::{StateBinding, StateError};
    use crate::single_use::{LocalSingleUse, StoreError, TokenId};
    use futures_util::future::BoxFuture;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn sealer_of(config: RequestStateConfig) -> Arc<crate::shared::Shared> {
        match Server::builder("s", "1").request_state(config).build() {
            Ok(server) => server.shared,
            Err(e) => panic!("build failed: {e}"),
        }
    }

    fn binding() -> StateBinding<'static> {
        StateBinding::new("tools/call", "t", None, None)
    }

    fn seal(shared: &crate::shared::Shared) -> String {
        match shared.sealer().seal(&binding(), b"x") {
            Ok(t) => t,
            Err(e) => panic!("seal failed: {e:?}"),
        }
    }

    /// Counts the tokens it is asked to record, then records them in an
    /// in-process record of `max` tokens.
    #[derive(Debug)]
    struct Counting {
        calls: AtomicUsize,
        inner: LocalSingleUse,
    }

    impl Counting {
        fn new(max: usize) -> Arc<Self> {
            Arc::new(Self {
                calls: AtomicUsize::new(0),
                inner: LocalSingleUse::new(max),
            })
        }
    }

    impl SingleUseStore for Counting {
        fn consume(
            &self,
            token: &TokenId,
            forget_after: u64,
            now: u64,
        ) -> BoxFuture<'_, Result<bool, StoreError>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.inner.consume(token, forget_after, now)
        }
    }

    #[test]
    fn the_default_is_a_random_key_ten_minutes_and_replayable_tokens() {
        let a = sealer_of(RequestStateConfig::default());
        let b = sealer_of(RequestStateConfig::default());
        assert_eq!(a.sealer().ttl_secs(), 600);
        let kids = |s: &crate::shared::Shared| -> Vec<String> {
            s.sealer().key_ring().kids().map(str::to_owned).collect()
        };
        assert_ne!(kids(&a), kids(&b), "each build makes its own key");
        let token = seal(&a);
        assert_eq!(a.sealer().open(&token, &binding()), Ok(b"x".to_vec()));
        assert_eq!(a.sealer().open(&token, &binding()), Ok(b"x".to_vec()));
        assert_eq!(
            b.sealer().open(&token, &binding()),
            Err(StateError::UnknownKey)
        );
    }

    #[test]
    fn keys_are_shared_by_servers_given_the_same_ring() {
        let ring = || KeyRing::new("k1", [3u8; 32]).unwrap_or_else(|e| panic!("{e}"));
        let a = sealer_of(RequestStateConfig::default().keys(ring()));
        let b = sealer_of(RequestStateConfig::default().keys(ring()));
        assert_eq!(a.sealer().key_ring().kids().collect::<Vec<_>>(), ["k1"]);
        let token = seal(&a);
        assert_eq!(b.sealer().open(&token, &binding()), Ok(b"x".to_vec()));
    }

    #[test]
    fn ttl_sets_the_lifetime_in_whole_seconds_of_at_least_one() {
        let s = sealer_of(RequestStateConfig::default().ttl(Duration::from_secs(42)));
        assert_eq!(s.sealer().ttl_secs(), 42);
        let s = sealer_of(RequestStateConfig::default().ttl(Duration::ZERO));
        assert_eq!(s.sealer().ttl_secs(), 1);
    }

    #[test]
    fn single_use_refuses_replays_and_a_full_record_fails_closed() {
        let s = sealer_of(RequestStateConfig::default().single_use(1));
        let (t1, t2) = (seal(&s), seal(&s));
        assert_eq!(s.sealer().open(&t1, &binding()), Ok(b"x".to_vec()));
        assert_eq!(s.sealer().open(&t1, &binding()), Err(StateError::Replayed));
        assert_eq!(
            s.sealer().open(&t2, &binding()),
            Err(StateError::ReplayStoreFull)
        );
        // A record of 0 tokens accepts none (as before the grouping).
        let s = sealer_of(RequestStateConfig::default().single_use(0));
        assert_eq!(
            s.sealer().open(&seal(&s), &binding()),
            Err(StateError::ReplayStoreFull)
        );
    }

    #[test]
    fn single_use_store_records_tokens_in_the_given_store() {
        let store = Counting::new(10);
        let s = sealer_of(RequestStateConfig::default().single_use_store(store.clone()));
        let token = seal(&s);
        assert_eq!(s.sealer().open(&token, &binding()), Ok(b"x".to_vec()));
        assert_eq!(
            s.sealer().open(&token, &binding()),
            Err(StateError::Replayed)
        );
        assert_eq!(store.calls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn the_last_single_use_call_decides() {
        let store = Counting::new(10);
        let s = sealer_of(
            RequestStateConfig::default()
                .single_use_store(store.clone())
                .single_use(10),
        );
        let token = seal(&s);
        assert_eq!(s.sealer().open(&token, &binding()), Ok(b"x".to_vec()));
        assert_eq!(
            s.sealer().open(&token, &binding()),
            Err(StateError::Replayed)
        );
        assert_eq!(
            store.calls.load(Ordering::SeqCst),
            0,
            "the store was replaced"
        );

        let s = sealer_of(
            RequestStateConfig::default()
                .single_use(10)
                .single_use_store(store.clone()),
        );
        assert_eq!(s.sealer().open(&seal(&s), &binding()), Ok(b"x".to_vec()));
        assert_eq!(store.calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn debug_shows_key_ids_and_never_key_material() {
        let ring = KeyRing::new("kid-x", [0xAB; 32]).unwrap_or_else(|e| panic!("{e}"));
        let shown = format!(
            "{:?}",
            RequestStateConfig::default().keys(ring).single_use(7)
        );
        assert!(shown.contains("kid-x"), "{shown}");
        assert!(shown.contains("single_use_max_tokens: 7"), "{shown}");
        for leak in ["171", "ab, ab", "abab", "ABAB", "0xab"] {
            assert!(!shown.contains(leak), "{leak} in {shown}");
        }
        let shown = format!("{:?}", RequestStateConfig::default());
        assert!(shown.contains("random at build"), "{shown}");
        assert!(shown.contains("\"off\""), "{shown}");
    }
}
