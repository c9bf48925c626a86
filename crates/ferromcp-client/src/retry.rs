//! Retrying safe requests after a connection failure (HTTP).
//!
//! Off by default: a library must not repeat a request behind the
//! application's back. With [`crate::ClientBuilder::retry`], a request that
//! failed because the connection failed (refused, reset, closed before the
//! answer) or because a proxy or server said it is unavailable (HTTP 502,
//! 503, 504 without a JSON-RPC answer) is sent again, with exponential
//! backoff and jitter (a `Retry-After` from the server is honoured, capped
//! by the backoff ceiling), at most [`RetryPolicy::max_attempts`] times and
//! within [`RetryPolicy::max_total`], but only when repeating it is safe:
//!
//! - the read-only methods: `server/discover`, `ping`, `tools/list`,
//!   `prompts/list`, `prompts/get`, `resources/list`,
//!   `resources/templates/list`, `resources/read`, `completion/complete`;
//! - `tools/call` of a tool the application names in
//!   [`RetryPolicy::idempotent_tools`]. Never any other tool call, whatever
//!   the tool's `idempotentHint` says: the hint is the server's claim, the
//!   decision to repeat a side effect is the application's.
//!
//! A JSON-RPC error answer is never retried here (the server did answer),
//! and stdio is never retried (a dead child process does not come back).

use std::collections::HashSet;
use std::time::Duration;

/// Default for [`RetryPolicy::max_attempts`]: 3 attempts in all.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// Default first backoff: 100 ms (doubled each time, with jitter).
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(100);
/// Default backoff ceiling (also caps a server's `Retry-After`): 2 s.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Default budget for all attempts of one request: 10 s.
pub const DEFAULT_MAX_TOTAL: Duration = Duration::from_secs(10);

/// Methods whose repetition has no effect beyond the first.
const SAFE_METHODS: &[&str] = &[
    "server/discover",
    "ping",
    "tools/list",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "completion/complete",
];

/// Which failed requests are sent again, and how (see the module docs).
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    max_total: Duration,
    idempotent_tools: HashSet<String>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
            max_total: DEFAULT_MAX_TOTAL,
            idempotent_tools: HashSet::new(),
        }
    }
}

impl RetryPolicy {
    /// The safe methods, with the named defaults; no tool calls.
    pub fn new() -> Self {
        Self::default()
    }

    /// Attempts in all, the first included (at least 1; default
    /// [`DEFAULT_MAX_ATTEMPTS`]).
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// First backoff and ceiling (defaults [`DEFAULT_INITIAL_BACKOFF`],
    /// [`DEFAULT_MAX_BACKOFF`]).
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// Time budget for all attempts of one request (default
    /// [`DEFAULT_MAX_TOTAL`]): no retry starts that would end past it.
    pub fn max_total(mut self, d: Duration) -> Self {
        self.max_total = d;
        self
    }

    /// Tools whose `tools/call` may be repeated: the application knows they
    /// are idempotent.
    pub fn idempotent_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.idempotent_tools
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Whether a request for `method` (and `tool`, for `tools/call`) may be
    /// repeated.
    pub fn allows(&self, method: &str, tool: Option<&str>) -> bool {
        if method == "tools/call" {
            return tool.is_some_and(|t| self.idempotent_tools.contains(t));
        }
        SAFE_METHODS.contains(&method)
    }

    pub(crate) fn attempts(&self) -> u32 {
        self.max_attempts
    }

    pub(crate) fn budget(&self) -> Duration {
        self.max_total
    }

    /// The wait before retry number `retry` (1 = the first retry): the
    /// server's `Retry-After` if it sent one, else exponential backoff with
    /// "equal jitter" (half fixed, half random), capped by the ceiling.
    pub(crate) fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d.min(self.max_backoff);
        }
        let exp = self
            .initial_backoff
            .saturating_mul(
                1u32.checked_shl(retry.saturating_sub(1))
                    .unwrap_or(u32::MAX),
            )
            .min(self.max_backoff);
        let half = exp / 2;
        half + half.mul_f64(jitter())
    }
}

/// A number in [0, 1) that differs between calls and processes (std's
/// randomly keyed hasher over a counter and the clock); spreading retries
/// needs no cryptographic quality.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_safe_methods_and_named_tools() {
        let p = RetryPolicy::new().idempotent_tools(["echo"]);
        assert!(p.allows("tools/list", None));
        assert!(p.allows("resources/read", None));
        assert!(p.allows("tools/call", Some("echo")));
        assert!(!p.allows("tools/call", Some("delete_file")));
        assert!(!p.allows("tools/call", None));
        assert!(!p.allows("resources/subscribe", None));
        assert!(!p.allows("logging/setLevel", None));
        assert!(!RetryPolicy::new().allows("tools/call", Some("echo")));
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let p = RetryPolicy::new().backoff(Duration::from_millis(100), Duration::from_millis(500));
        for retry in 1..10 {
            let exp = Duration::from_millis(100 * (1 << (retry - 1).min(10)))
                .min(Duration::from_millis(500));
            let d = p.delay(retry, None);
            assert!(
                d >= exp / 2 && d <= exp,
                "retry {retry}: {d:?} not in [{:?}, {exp:?}]",
                exp / 2
            );
        }
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(60))),
            Duration::from_millis(500)
        );
        assert_eq!(p.delay(1, Some(Duration::ZERO)), Duration::ZERO);
        assert_eq!(RetryPolicy::new().max_attempts(0).attempts(), 1);
    }
}
