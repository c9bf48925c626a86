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
use std::time::{Duration, SystemTime};

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

// RFC 9110 section 10.2.3: Retry-After = HTTP-date / delay-seconds.
/// The wait a `Retry-After` header value asks for, counted from `now`:
/// either delay-seconds (`120`) or an HTTP date (`Fri, 27 Nov 2026
/// 23:30:00 GMT`, and the obsolete RFC 850 and asctime forms). A date in
/// the past asks for no wait; a number of seconds too large to represent
/// saturates (callers cap it by their own maximum). `None` when the value
/// is neither form.
///
/// ```
/// use ferromcp_client::retry::parse_retry_after;
/// use std::time::{Duration, SystemTime};
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
/// assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
/// // 2001-09-09T01:46:40Z is `now`: ten seconds later.
/// let date = "Sun, 09 Sep 2001 01:46:50 GMT";
/// assert_eq!(parse_retry_after(date, now), Some(Duration::from_secs(10)));
/// assert_eq!(parse_retry_after("Sun, 09 Sep 2001 01:46:00 GMT", now), Some(Duration::ZERO));
/// assert_eq!(parse_retry_after("soon", now), None);
/// ```
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // Only digits: the parse fails on overflow alone.
        return Some(Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
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

    #[test]
    fn retry_after_is_read_in_both_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let at = |s| parse_retry_after(s, now);
        assert_eq!(at(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(at("0"), Some(Duration::ZERO));
        // Larger than u64 seconds: saturates, never wraps to a short wait.
        assert_eq!(
            at("99999999999999999999999999"),
            Some(Duration::from_secs(u64::MAX))
        );
        // IMF-fixdate, RFC 850 and asctime, all ten seconds after `now`.
        for date in [
            "Sun, 09 Sep 2001 01:46:50 GMT",
            "Sunday, 09-Sep-01 01:46:50 GMT",
            "Sun Sep  9 01:46:50 2001",
        ] {
            assert_eq!(at(date), Some(Duration::from_secs(10)), "{date}");
        }
        for bad in [
            "",
            "-1",
            "+5",
            "1.5",
            "5 s",
            "soon",
            "Sun, 32 Sep 2001 01:46:50 GMT",
        ] {
            assert_eq!(at(bad), None, "{bad:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn retry_after_never_panics(value in ".{0,64}", now in 0u64..8_000_000_000) {
            let _ = parse_retry_after(&value, SystemTime::UNIX_EPOCH + Duration::from_secs(now));
        }

        #[test]
        fn retry_after_dates_give_the_time_until_them(
            date in 0u64..250_000_000_000,
            now in 0u64..250_000_000_000,
        ) {
            let when = SystemTime::UNIX_EPOCH + Duration::from_secs(date);
            let now_t = SystemTime::UNIX_EPOCH + Duration::from_secs(now);
            let text = httpdate::fmt_http_date(when);
            // A past date (or now) is no wait, a future one the difference.
            proptest::prop_assert_eq!(
                parse_retry_after(&text, now_t),
                Some(Duration::from_secs(date.saturating_sub(now)))
            );
        }

        #[test]
        fn retry_after_seconds_are_taken_as_given(secs: u64) {
            proptest::prop_assert_eq!(
                parse_retry_after(&secs.to_string(), SystemTime::UNIX_EPOCH),
                Some(Duration::from_secs(secs))
            );
        }
    }
}
