//! The wall clock a sealer reads token times from.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in whole seconds since the Unix epoch.
///
/// Injected into [`StateSealer`](super::StateSealer) so tests (and simulations) control expiry;
/// [`ManualClock`](crate::testing::ManualClock) is the one tests drive.
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
