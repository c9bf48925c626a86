//! Background re-lists: an upstream whose list results carried a finite
//! `ttlMs` is listed again when the smallest of them runs out, so that a
//! change it never announces still reaches the gateway's clients.
//!
//! - The wait is at least `gateway.cache.minRefreshMs`, and up to a tenth
//!   longer at random (jitter), so upstreams listed together are not all
//!   listed again at once.
//! - One re-list at a time per upstream: its supervisor runs them, one
//!   after the other.
//! - A re-list that fails keeps the last catalogue, and the next try waits
//!   twice as long as the one before (from `minRefreshMs`, at most
//!   [`MAX_BACKOFF`]).
//! - Pages with `ttlMs` 0, negative or absent ask for no re-list (stale at
//!   once means "no promise", not "poll me").
// CACHE-07, CACHE-09

use ferromcp_protocol::types::CacheScope;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The longest wait between failed re-lists.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// The longest `ttlMs` taken at its word (the client crate's clamp).
const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The hints of one listing: every page of every list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListHints {
    /// The smallest positive `ttlMs` of any page.
    pub(crate) min_ttl: Option<Duration>,
    /// Some page had `ttlMs` 0, negative or absent.
    pub(crate) uncached: bool,
    /// Every page said `cacheScope: "public"`.
    pub(crate) all_public: bool,
    /// When the listing was received.
    pub(crate) at: Instant,
}

impl Default for ListHints {
    fn default() -> Self {
        Self {
            min_ttl: None,
            uncached: false,
            all_public: true,
            at: Instant::now(),
        }
    }
}

impl ListHints {
    /// Takes in one page's hints.
    pub(crate) fn page(&mut self, ttl_ms: Option<u64>, scope: Option<CacheScope>) {
        match ttl_ms.filter(|t| *t > 0) {
            Some(t) => {
                let t = Duration::from_millis(t).min(MAX_TTL);
                self.min_ttl = Some(self.min_ttl.map_or(t, |m| m.min(t)));
            }
            None => self.uncached = true,
        }
        if scope != Some(CacheScope::Public) {
            self.all_public = false;
        }
    }
}

#[derive(Debug, Default)]
struct State {
    due: Option<Instant>,
    /// The last successful listing asked for a timed re-list.
    timed: bool,
    /// The hints of the last successful listing.
    last: Option<ListHints>,
    backoff: Duration,
}

/// When an upstream is listed again next.
#[derive(Debug)]
pub(crate) struct Refresh {
    min: Duration,
    state: Mutex<State>,
}

/// `d` plus up to a tenth of it, at random.
fn jittered(d: Duration) -> Duration {
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let tenth = d / 10;
    let extra_ns = u64::try_from(tenth.as_nanos()).unwrap_or(u64::MAX);
    if extra_ns == 0 {
        return d;
    }
    d + Duration::from_nanos(r % extra_ns)
}

impl Refresh {
    pub(crate) fn new(min: Duration) -> Self {
        Self {
            min,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A listing with `h` succeeded: the next re-list is due when its
    /// smallest `ttlMs` (at least `minRefreshMs`) has run out, if it gave
    /// one.
    pub(crate) fn listed(&self, h: &ListHints) {
        let mut s = self.lock();
        s.backoff = Duration::ZERO;
        s.timed = h.min_ttl.is_some();
        s.last = Some(*h);
        s.due = h.min_ttl.map(|t| h.at + jittered(t.max(self.min)));
    }

    /// A re-list failed: when timed re-lists are on, the next one waits
    /// twice as long as the last failed one did.
    pub(crate) fn failed(&self) {
        let mut s = self.lock();
        if !s.timed {
            return;
        }
        s.backoff = (s.backoff * 2).max(self.min).min(MAX_BACKOFF);
        s.due = Some(Instant::now() + jittered(s.backoff));
    }

    /// When the next timed re-list is due, if any.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.lock().due
    }

    /// The hints of the last successful listing (since the connection).
    pub(crate) fn last(&self) -> Option<ListHints> {
        self.lock().last
    }

    /// Forgets the schedule (the connection is gone).
    pub(crate) fn clear(&self) {
        *self.lock() = State::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(pages: &[(Option<u64>, Option<CacheScope>)]) -> ListHints {
        let mut h = ListHints::default();
        for (t, s) in pages {
            h.page(*t, *s);
        }
        h
    }

    #[test]
    fn the_smallest_positive_ttl_decides_and_zero_asks_for_nothing() {
        let h = hints(&[
            (Some(5000), Some(CacheScope::Public)),
            (Some(300), Some(CacheScope::Public)),
            (Some(0), Some(CacheScope::Public)),
        ]);
        assert_eq!(h.min_ttl, Some(Duration::from_millis(300)));
        assert!(h.uncached && h.all_public);
        let h = hints(&[(None, None), (Some(0), Some(CacheScope::Private))]);
        assert_eq!(h.min_ttl, None);
        assert!(!h.all_public);
        let r = Refresh::new(Duration::from_millis(1000));
        r.listed(&h);
        assert_eq!(r.due(), None, "no ttl, no timed re-list");
        r.failed();
        assert_eq!(r.due(), None, "a failure does not start polling");
    }

    #[test]
    fn the_wait_is_at_least_the_minimum_plus_jitter_and_backs_off() {
        let min = Duration::from_millis(1000);
        let r = Refresh::new(min);
        let h = hints(&[(Some(50), Some(CacheScope::Public))]);
        r.listed(&h);
        let wait = r.due().map(|d| d - h.at);
        assert!(
            wait.is_some_and(|w| w >= min && w <= min + min / 10),
            "{wait:?}"
        );
        let h = hints(&[(Some(4000), Some(CacheScope::Public))]);
        r.listed(&h);
        let wait = r.due().map(|d| d - h.at);
        assert!(
            wait.is_some_and(
                |w| w >= Duration::from_millis(4000) && w <= Duration::from_millis(4400)
            ),
            "{wait:?}"
        );
        // Failures double the wait, from the minimum, up to the cap.
        let mut last = Duration::ZERO;
        for _ in 0..20 {
            let before = Instant::now();
            r.failed();
            let w = r.due().map(|d| d - before).unwrap_or_default();
            assert!(
                w >= last.min(MAX_BACKOFF) && w >= min,
                "{w:?} after {last:?}"
            );
            assert!(w <= MAX_BACKOFF + MAX_BACKOFF / 10 + Duration::from_secs(1));
            last = w;
        }
        assert!(r.last().is_some());
        r.clear();
        assert_eq!(r.due(), None);
        assert!(r.last().is_none());
    }
}
