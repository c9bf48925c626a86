//! Notification-flood limits: each upstream's notifications (progress,
//! log messages, list changes, resource updates) pass a token bucket of
//! its own (`notificationRate`: `perSecond`, `burst`). What exceeds it is
//! dropped before the gateway does any work for it, counted
//! (`mcp_gateway_notifications_dropped_total`) and reported at most once
//! per [`REPORT_EVERY`]. List changes are coalesced besides: any number in
//! a row make one re-list.

use crate::config_error::{ConfigError, whole_number};
use serde_json::Value;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The default `notificationRate.perSecond`.
pub const DEFAULT_PER_SECOND: u32 = 100;
/// The default `notificationRate.burst`.
pub const DEFAULT_BURST: u32 = 500;
/// The largest `perSecond` and `burst` accepted.
const MAX_RATE: u64 = 1_000_000;
/// The shortest interval between two reports of dropped notifications.
pub(crate) const REPORT_EVERY: Duration = Duration::from_secs(10);

/// How many notifications an upstream may send: `burst` at once, then
/// `per_second` on average.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotificationRate {
    per_second: u32,
    burst: u32,
}

impl Default for NotificationRate {
    fn default() -> Self {
        Self {
            per_second: DEFAULT_PER_SECOND,
            burst: DEFAULT_BURST,
        }
    }
}

impl NotificationRate {
    /// Notifications per second on average.
    pub fn per_second(&self) -> u32 {
        self.per_second
    }

    /// Notifications accepted at once after a quiet period.
    pub fn burst(&self) -> u32 {
        self.burst
    }
}

/// Parses `{"perSecond": N, "burst": M}` at `path`; a key left out keeps
/// its value in `base` (the built-in defaults for `gateway.notificationRate`,
/// that one for a server's own).
pub(crate) fn parse(
    v: &Value,
    path: &str,
    base: NotificationRate,
) -> Result<NotificationRate, ConfigError> {
    let Some(o) = v.as_object() else {
        return Err(ConfigError::new(path, "must be an object"));
    };
    let mut cfg = base;
    for (k, v) in o {
        let at = format!("{path}.{k}");
        // MAX_RATE fits a u32.
        let n = whole_number(v, &at, 1, MAX_RATE)? as u32;
        match k.as_str() {
            "perSecond" => cfg.per_second = n,
            "burst" => cfg.burst = n,
            _ => {
                return Err(ConfigError::new(
                    at,
                    "unknown key (expected one of: perSecond, burst)",
                ));
            }
        }
    }
    Ok(cfg)
}

#[derive(Debug)]
struct State {
    tokens: f64,
    last: Instant,
    /// Dropped since the last report.
    unreported: u64,
    last_report: Option<Instant>,
}

/// One upstream's bucket.
#[derive(Debug)]
pub(crate) struct Bucket {
    rate: NotificationRate,
    state: Mutex<State>,
}

/// What to do with one notification.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Within the rate: handle it.
    Pass,
    /// Over the rate: drop it; `Some(n)`: report that `n` were dropped
    /// since the last report.
    Drop(Option<u64>),
}

impl Bucket {
    pub(crate) fn new(rate: NotificationRate) -> Self {
        Self {
            rate,
            state: Mutex::new(State {
                tokens: f64::from(rate.burst),
                last: Instant::now(),
                unreported: 0,
                last_report: None,
            }),
        }
    }

    /// Takes a token for a notification arriving at `now`.
    pub(crate) fn admit(&self, now: Instant) -> Verdict {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let elapsed = now.saturating_duration_since(s.last).as_secs_f64();
        s.last = now;
        s.tokens =
            (s.tokens + elapsed * f64::from(self.rate.per_second)).min(f64::from(self.rate.burst));
        if s.tokens >= 1.0 {
            s.tokens -= 1.0;
            return Verdict::Pass;
        }
        s.unreported += 1;
        let due = s
            .last_report
            .is_none_or(|t| now.saturating_duration_since(t) >= REPORT_EVERY);
        if due {
            s.last_report = Some(now);
            let n = std::mem::take(&mut s.unreported);
            return Verdict::Drop(Some(n));
        }
        Verdict::Drop(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(per_second: u32, burst: u32) -> NotificationRate {
        NotificationRate { per_second, burst }
    }

    #[test]
    fn a_burst_then_the_rate_and_reports_are_rate_limited() {
        let b = Bucket::new(rate(10, 3));
        let t0 = Instant::now();
        let verdicts: Vec<Verdict> = (0..6).map(|_| b.admit(t0)).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Pass,
                Verdict::Pass,
                Verdict::Pass,
                Verdict::Drop(Some(1)),
                Verdict::Drop(None),
                Verdict::Drop(None),
            ]
        );
        // 100 ms later: one token (10 per second).
        let t1 = t0 + Duration::from_millis(100);
        assert_eq!(b.admit(t1), Verdict::Pass);
        assert_eq!(b.admit(t1), Verdict::Drop(None));
        // After the report interval, the count since the last report.
        let t2 = t0 + REPORT_EVERY;
        for _ in 0..3 {
            assert_eq!(b.admit(t2), Verdict::Pass);
        }
        assert_eq!(b.admit(t2), Verdict::Drop(Some(4)));
    }

    #[test]
    fn settings_are_validated_naming_the_key() {
        let p = |v: &str| {
            parse(
                &serde_json::from_str(v).unwrap(),
                "x.notificationRate",
                NotificationRate::default(),
            )
        };
        assert_eq!(p(r#"{"perSecond": 5, "burst": 7}"#).unwrap(), rate(5, 7));
        assert_eq!(p("{}").unwrap(), NotificationRate::default());
        let e = |v: &str| p(v).unwrap_err().to_string();
        assert!(e(r#"{"perSecond": 0}"#).starts_with("x.notificationRate.perSecond: must be"));
        assert!(e(r#"{"burst": -1}"#).starts_with("x.notificationRate.burst: must be"));
        assert!(e(r#"{"rate": 1}"#).starts_with("x.notificationRate.rate: unknown key"));
        assert!(e("3").starts_with("x.notificationRate: must be"));
    }
}
