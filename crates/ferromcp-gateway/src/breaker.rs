//! A circuit breaker per upstream. After `failures` requests in a row
//! that found the upstream stalled or broken (no answer within its
//! `timeoutMs`, a connection lost during the request), requests to it are
//! refused at once for `openMs`, without reaching it: a dead upstream
//! costs its callers nothing and is not hammered while it recovers. Then
//! one trial request goes through; an answer closes the breaker, another
//! such failure opens it again. Any answer counts as one (a JSON-RPC
//! error too: the upstream is alive). Configured per server:
//!
//! ```json
//! {"mcpServers": {"slow": {"url": "https://…", "breaker": {"failures": 5, "openMs": 30000}}}}
//! ```
//!
//! `{"failures": 0}` turns it off.

use crate::config_error::ConfigError;
use serde_json::Value;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Default of `breaker.failures`.
pub const DEFAULT_FAILURES: u32 = 5;
/// Default of `breaker.openMs`.
pub const DEFAULT_OPEN: Duration = Duration::from_secs(30);
/// The largest `breaker.openMs` accepted (one hour).
const MAX_OPEN_MS: u64 = 3_600_000;
/// The largest `breaker.failures` accepted.
const MAX_FAILURES: u64 = 10_000;

/// A server's `breaker` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerConfig {
    failures: u32,
    open: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            failures: DEFAULT_FAILURES,
            open: DEFAULT_OPEN,
        }
    }
}

impl BreakerConfig {
    /// Failures in a row that open the breaker (`0`: never).
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// How long it stays open before a trial request.
    pub fn open(&self) -> Duration {
        self.open
    }
}

/// Parses `{"failures": N, "openMs": M}` at `path`.
pub(crate) fn parse(v: &Value, path: &str) -> Result<BreakerConfig, ConfigError> {
    let Some(o) = v.as_object() else {
        return Err(ConfigError::new(path, "must be an object"));
    };
    let mut cfg = BreakerConfig::default();
    for (k, v) in o {
        let at = format!("{path}.{k}");
        match k.as_str() {
            "failures" => match v.as_u64() {
                Some(n) if n <= MAX_FAILURES => cfg.failures = n as u32,
                _ => {
                    return Err(ConfigError::new(
                        at,
                        format!("must be a whole number from 0 (off) to {MAX_FAILURES}"),
                    ));
                }
            },
            "openMs" => match v.as_u64() {
                Some(ms) if (1..=MAX_OPEN_MS).contains(&ms) => cfg.open = Duration::from_millis(ms),
                _ => {
                    return Err(ConfigError::new(
                        at,
                        format!("must be a whole number of milliseconds from 1 to {MAX_OPEN_MS}"),
                    ));
                }
            },
            _ => {
                return Err(ConfigError::new(
                    at,
                    "unknown key (expected one of: failures, openMs)",
                ));
            }
        }
    }
    Ok(cfg)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Requests go through; `failures` in a row so far.
    Closed { failures: u32 },
    /// Requests are refused until `until`.
    Open { until: Instant },
    /// One trial request is out; the others are refused.
    Trial,
}

/// The breaker of one upstream.
#[derive(Debug)]
pub(crate) struct Breaker {
    cfg: BreakerConfig,
    state: Mutex<State>,
}

/// Why a request was refused: how long the breaker stays open (zero
/// while a trial request is out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) retry_in: Duration,
    pub(crate) failures: u32,
}

/// A request let through; [`Permit::record`] tells how it went. A permit
/// dropped unrecorded (the caller gave up) leaves a trial to the next
/// request and counts nothing.
#[must_use]
pub(crate) struct Permit<'a> {
    breaker: &'a Breaker,
    trial: bool,
    recorded: bool,
}

impl Breaker {
    pub(crate) fn new(cfg: BreakerConfig) -> Self {
        Self {
            cfg,
            state: Mutex::new(State::Closed { failures: 0 }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets a request through, or says why not.
    pub(crate) fn admit(&self, now: Instant) -> Result<Permit<'_>, Refused> {
        let refused = |retry_in| Refused {
            retry_in,
            failures: self.cfg.failures,
        };
        let mut s = self.state();
        let trial = match *s {
            State::Closed { .. } => false,
            State::Open { until } if now < until => return Err(refused(until - now)),
            State::Open { .. } => {
                *s = State::Trial;
                true
            }
            State::Trial => return Err(refused(Duration::ZERO)),
        };
        Ok(Permit {
            breaker: self,
            trial,
            recorded: false,
        })
    }

    /// The upstream was connected again: whatever failed before, its new
    /// connection is tried.
    pub(crate) fn reset(&self) {
        *self.state() = State::Closed { failures: 0 };
    }

    /// The state as a gauge: 0 closed, 1 open, 2 one trial request out.
    pub(crate) fn gauge(&self) -> u8 {
        match *self.state() {
            State::Closed { .. } => 0,
            State::Open { .. } => 1,
            State::Trial => 2,
        }
    }

    #[cfg(test)]
    fn is_open(&self) -> bool {
        !matches!(*self.state(), State::Closed { .. })
    }
}

impl Permit<'_> {
    /// `alive`: the upstream answered (a result or any JSON-RPC error);
    /// `false`: no answer in time, or the connection was lost.
    pub(crate) fn record(mut self, alive: bool, now: Instant) {
        self.recorded = true;
        let b = self.breaker;
        let mut s = b.state();
        *s = match (alive, *s) {
            (true, _) => State::Closed { failures: 0 },
            (false, _) if b.cfg.failures == 0 => State::Closed { failures: 0 },
            (false, State::Closed { failures }) if failures + 1 < b.cfg.failures => State::Closed {
                failures: failures + 1,
            },
            (false, _) => State::Open {
                until: now + b.cfg.open,
            },
        };
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.trial && !self.recorded {
            let mut s = self.breaker.state();
            if *s == State::Trial {
                // Open, but due: the next request is the trial.
                *s = State::Open {
                    until: Instant::now(),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn breaker(failures: u32, open_ms: u64) -> Breaker {
        Breaker::new(BreakerConfig {
            failures,
            open: Duration::from_millis(open_ms),
        })
    }

    #[test]
    fn opens_after_failures_in_a_row_and_an_answer_resets_the_count() {
        let b = breaker(3, 1000);
        let t = Instant::now();
        for _ in 0..2 {
            b.admit(t).unwrap().record(false, t);
        }
        b.admit(t).unwrap().record(true, t);
        for _ in 0..2 {
            b.admit(t).unwrap().record(false, t);
        }
        assert!(!b.is_open(), "2 failures after an answer");
        b.admit(t).unwrap().record(false, t);
        let r = b.admit(t + Duration::from_millis(400)).err().unwrap();
        assert_eq!(r.retry_in, Duration::from_millis(600));
        assert_eq!(r.failures, 3);
    }

    #[test]
    fn one_trial_after_the_open_period_decides() {
        let b = breaker(1, 1000);
        let t = Instant::now();
        b.admit(t).unwrap().record(false, t);
        let later = t + Duration::from_millis(1000);
        let trial = b.admit(later).unwrap();
        assert_eq!(
            b.admit(later).err().unwrap().retry_in,
            Duration::ZERO,
            "one trial at a time"
        );
        trial.record(false, later);
        assert!(
            b.admit(later + Duration::from_millis(999)).is_err(),
            "open again"
        );
        let again = later + Duration::from_millis(1000);
        b.admit(again).unwrap().record(true, again);
        assert!(!b.is_open());
        assert!(b.admit(again).is_ok());
    }

    #[test]
    fn an_abandoned_trial_leaves_the_next_request_a_trial() {
        let b = breaker(1, 10);
        let t = Instant::now();
        b.admit(t).unwrap().record(false, t);
        let later = t + Duration::from_millis(10);
        drop(b.admit(later).unwrap());
        let next = b.admit(Instant::now() + Duration::from_millis(20)).unwrap();
        next.record(true, t);
        assert!(!b.is_open());
    }

    #[test]
    fn zero_failures_never_opens_and_reset_closes() {
        let b = breaker(0, 1000);
        let t = Instant::now();
        for _ in 0..100 {
            b.admit(t).unwrap().record(false, t);
        }
        assert!(!b.is_open());
        let b = breaker(1, 1000);
        b.admit(t).unwrap().record(false, t);
        assert!(b.admit(t).is_err());
        b.reset();
        assert!(b.admit(t).is_ok());
    }

    #[test]
    fn settings_are_validated_naming_the_key() {
        let p = |v| parse(&v, "mcpServers.a.breaker");
        assert_eq!(
            p(json!({"failures": 2, "openMs": 500})).unwrap(),
            BreakerConfig {
                failures: 2,
                open: Duration::from_millis(500)
            }
        );
        assert_eq!(p(json!({})).unwrap(), BreakerConfig::default());
        let e = |v| p(v).unwrap_err().to_string();
        assert!(e(json!(3)).starts_with("mcpServers.a.breaker: must be an object"));
        assert!(e(json!({"failures": -1})).starts_with("mcpServers.a.breaker.failures:"));
        assert!(e(json!({"openMs": 0})).starts_with("mcpServers.a.breaker.openMs:"));
        assert!(e(json!({"openMS": 5})).starts_with("mcpServers.a.breaker.openMS: unknown key"));
    }
}
