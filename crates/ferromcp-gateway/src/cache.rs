//! `gateway.cache`: how the gateway honours its upstreams' `ttlMs` and
//! `cacheScope` hints.
//!
//! ```json
//! {"gateway": {"cache": {"minRefreshMs": 1000, "maxEntries": 1024, "maxBytes": 16777216}}}
//! ```
//!
//! - `minRefreshMs`: the shortest wait before an upstream whose list
//!   results carried a finite `ttlMs` is listed again in the background
//!   (see the `refresh` module).
//! - `maxEntries`, `maxBytes`: the bounds of the `resources/read` cache
//!   (see the `read_cache` module); `0` turns it off.
// CACHE-07, CACHE-09

use crate::config_error::{ConfigError, whole_number};
use serde_json::Value;
use std::time::Duration;

/// Default `gateway.cache.minRefreshMs`.
pub const DEFAULT_MIN_REFRESH: Duration = Duration::from_millis(1000);
/// Default `gateway.cache.maxEntries`.
pub const DEFAULT_MAX_ENTRIES: usize = 1024;
/// Default `gateway.cache.maxBytes` (16 MiB).
pub const DEFAULT_MAX_BYTES: usize = 16 * 1024 * 1024;

/// The smallest `minRefreshMs` accepted.
const MIN_REFRESH_FLOOR_MS: u64 = 10;
/// The largest `minRefreshMs` accepted (one day).
const MIN_REFRESH_CEILING_MS: u64 = 24 * 60 * 60 * 1000;
/// The largest `maxEntries` accepted.
const MAX_ENTRIES_CEILING: u64 = 1_000_000;
/// The largest `maxBytes` accepted (1 GiB).
const MAX_BYTES_CEILING: u64 = 1024 * 1024 * 1024;

/// The validated `gateway.cache` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    min_refresh: Duration,
    max_entries: usize,
    max_bytes: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            min_refresh: DEFAULT_MIN_REFRESH,
            max_entries: DEFAULT_MAX_ENTRIES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl CacheConfig {
    /// The shortest wait before a background re-list (`minRefreshMs`).
    pub fn min_refresh(&self) -> Duration {
        self.min_refresh
    }

    /// The most `resources/read` results kept (`maxEntries`).
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// The most bytes of `resources/read` results kept, counted as their
    /// JSON (`maxBytes`).
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }
}

/// Parses `gateway.cache`.
pub(crate) fn parse(v: &Value) -> Result<CacheConfig, ConfigError> {
    let o = v
        .as_object()
        .ok_or_else(|| ConfigError::new("gateway.cache", "must be a JSON object"))?;
    let mut c = CacheConfig::default();
    for (k, v) in o {
        match k.as_str() {
            "minRefreshMs" => {
                c.min_refresh = Duration::from_millis(whole_number(
                    v,
                    "gateway.cache.minRefreshMs",
                    MIN_REFRESH_FLOOR_MS,
                    MIN_REFRESH_CEILING_MS,
                )?);
            }
            "maxEntries" => {
                c.max_entries =
                    whole_number(v, "gateway.cache.maxEntries", 0, MAX_ENTRIES_CEILING)? as usize;
            }
            "maxBytes" => {
                c.max_bytes =
                    whole_number(v, "gateway.cache.maxBytes", 0, MAX_BYTES_CEILING)? as usize;
            }
            other => {
                return Err(ConfigError::new(
                    format!("gateway.cache.{other}"),
                    "unknown key (expected minRefreshMs, maxEntries, maxBytes)",
                ));
            }
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> String {
        match parse(&v) {
            Ok(c) => panic!("accepted: {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn defaults_and_values_parse() {
        assert_eq!(parse(&json!({})).ok(), Some(CacheConfig::default()));
        let c = parse(&json!({"minRefreshMs": 250, "maxEntries": 0, "maxBytes": 4096}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.min_refresh(), Duration::from_millis(250));
        assert_eq!((c.max_entries(), c.max_bytes()), (0, 4096));
    }

    #[test]
    fn bad_values_name_the_key() {
        assert!(err(json!([])).starts_with("gateway.cache: must be a JSON object"));
        for bad in [json!(0), json!(9), json!(-5), json!(1.5), json!("1000")] {
            let e = err(json!({ "minRefreshMs": bad }));
            assert!(
                e.starts_with("gateway.cache.minRefreshMs: must be a whole number from 10"),
                "{e}"
            );
        }
        assert!(err(json!({"maxEntries": -1})).starts_with("gateway.cache.maxEntries: must be"),);
        assert!(
            err(json!({"maxBytes": 2_000_000_000_u64}))
                .starts_with("gateway.cache.maxBytes: must be"),
        );
        assert!(err(json!({"ttlMs": 5})).starts_with("gateway.cache.ttlMs: unknown key"));
        // Through the whole file, too.
        let e = crate::Config::parse(
            r#"{"mcpServers": {}, "gateway": {"cache": {"maxBytes": "big"}}}"#,
            |_| None,
        );
        assert!(
            e.as_ref()
                .err()
                .is_some_and(|e| e.path() == "gateway.cache.maxBytes"),
            "{e:?}"
        );
        let c = crate::Config::parse(
            r#"{"mcpServers": {}, "gateway": {"cache": {"minRefreshMs": 50}}}"#,
            |_| None,
        );
        assert_eq!(
            c.ok().map(|c| c.cache().min_refresh()),
            Some(Duration::from_millis(50))
        );
    }
}
