//! A clock tests drive by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::request_state::Clock;

/// A manually driven [`Clock`] for tests and simulations (for example of
/// `requestState` expiry); clones share the same time.
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
