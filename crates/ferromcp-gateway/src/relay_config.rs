//! The validated `gateway.relay` settings (limits of relayed input
//! rounds; the relay itself is `relay.rs`).
//!
//! ```json
//! {"gateway": {"relay": {"maxRounds": 10, "maxRequests": 16}}}
//! ```

use crate::config_error::{ConfigError, whole_number};
use serde_json::Value;

/// Default `gateway.relay.maxRounds`.
pub const DEFAULT_MAX_ROUNDS: u32 = 10;
/// Default `gateway.relay.maxRequests`.
pub const DEFAULT_MAX_REQUESTS: usize = 16;
/// The largest `maxRounds` accepted.
const MAX_ROUNDS_CEILING: u64 = 1000;
/// The largest `maxRequests` accepted.
const MAX_REQUESTS_CEILING: u64 = 1000;

/// The validated `gateway.relay` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayConfig {
    max_rounds: u32,
    max_requests: usize,
}

impl Default for RelayConfig {
    fn default() -> Self {
        Self {
            max_rounds: DEFAULT_MAX_ROUNDS,
            max_requests: DEFAULT_MAX_REQUESTS,
        }
    }
}

impl RelayConfig {
    /// The most input rounds one call may take (`maxRounds`).
    pub fn max_rounds(&self) -> u32 {
        self.max_rounds
    }

    /// The most input requests one round may carry (`maxRequests`).
    pub fn max_requests(&self) -> usize {
        self.max_requests
    }
}

/// Parses `gateway.relay`.
pub(crate) fn parse(v: &Value) -> Result<RelayConfig, ConfigError> {
    let o = v
        .as_object()
        .ok_or_else(|| ConfigError::new("gateway.relay", "must be a JSON object"))?;
    let mut c = RelayConfig::default();
    let number = |v: &Value, path: &str, hi: u64| whole_number(v, path, 1, hi);
    for (k, v) in o {
        match k.as_str() {
            "maxRounds" => {
                c.max_rounds =
                    u32::try_from(number(v, "gateway.relay.maxRounds", MAX_ROUNDS_CEILING)?)
                        .unwrap_or(DEFAULT_MAX_ROUNDS);
            }
            "maxRequests" => {
                c.max_requests = usize::try_from(number(
                    v,
                    "gateway.relay.maxRequests",
                    MAX_REQUESTS_CEILING,
                )?)
                .unwrap_or(DEFAULT_MAX_REQUESTS);
            }
            other => {
                return Err(ConfigError::new(
                    format!("gateway.relay.{other}"),
                    "unknown key (expected maxRounds, maxRequests)",
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
    fn limits_parse_with_defaults_and_bounds() {
        assert_eq!(parse(&json!({})).ok(), Some(RelayConfig::default()));
        let c = parse(&json!({"maxRounds": 3, "maxRequests": 2})).unwrap_or_default();
        assert_eq!((c.max_rounds(), c.max_requests()), (3, 2));
        assert!(err(json!({"maxRounds": 0})).starts_with("gateway.relay.maxRounds: must be"));
        assert!(err(json!({"maxRequests": 1001})).starts_with("gateway.relay.maxRequests:"));
        assert!(err(json!({"rounds": 1})).starts_with("gateway.relay.rounds: unknown key"));
        assert!(err(json!([])).starts_with("gateway.relay: must be"));
    }
}
