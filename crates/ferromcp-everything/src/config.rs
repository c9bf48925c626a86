//! Deployment configuration shared by `everything-server` and `mcp serve`:
//! the `requestState` key ring and (feature `redis`) the Redis backplane.

use ferromcp_server::request_state::KeyRing;
use ferromcp_server::{Backplane, RequestStateConfig};

/// The key id `MCP_STATE_KEY` sealed under before key rings; still opened
/// (never sealed) so tokens minted by an older build stay valid.
pub const LEGACY_ENV_KID: &str = "env";

/// The `requestState` key ring from `MCP_STATE_KEY` (`key`, one key of 64
/// hex digits) or `MCP_STATE_KEYS` (`keys`, a comma-separated list; the first
/// seals, all open). `Ok(None)` when neither is set (a random per-process
/// key then). Setting both is an error rather than a silent precedence: a
/// fleet being rotated must not have replicas disagreeing about which
/// variable wins.
///
/// Each key is named by its derived id ([`KeyRing::derived_kid`]), so
/// replicas configured either way interoperate (`MCP_STATE_KEY=A` is the
/// ring `MCP_STATE_KEYS=A`, plus the old `env` id of A, open-only).
pub fn state_key_ring(key: Option<&str>, keys: Option<&str>) -> Result<Option<KeyRing>, String> {
    match (key, keys) {
        (Some(_), Some(_)) => Err(
            "set either MCP_STATE_KEY (one key) or MCP_STATE_KEYS (a key ring), not both".into(),
        ),
        (Some(hex), None) => {
            let ring = KeyRing::from_hex_list(hex)
                .map_err(|_| "MCP_STATE_KEY must be 64 hex digits".to_owned())?;
            if ring.kids().count() != 1 {
                return Err("MCP_STATE_KEY holds one key; use MCP_STATE_KEYS for a ring".into());
            }
            // The same secret under the pre-ring id, open-only.
            let secret = parse_one(hex).ok_or("MCP_STATE_KEY must be 64 hex digits")?;
            let ring = ring
                .with_key(LEGACY_ENV_KID, secret)
                .map_err(|e| format!("MCP_STATE_KEY: {e}"))?;
            Ok(Some(ring))
        }
        (None, Some(list)) => KeyRing::from_hex_list(list)
            .map(Some)
            .map_err(|e| format!("MCP_STATE_KEYS: {e}")),
        (None, None) => Ok(None),
    }
}

fn parse_one(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim().as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (out, pair) in key.iter_mut().zip(hex.chunks_exact(2)) {
        *out = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(key)
}

/// How the Redis backplane is set up (feature `redis`).
#[derive(Debug, Clone, Default)]
pub struct RedisOptions {
    /// `redis://HOST:PORT/DB`.
    pub url: String,
    /// Key and channel prefix (`None`: `ferromcp_redis::DEFAULT_KEY_PREFIX`).
    pub prefix: Option<String>,
    /// This replica's id (`None`: random).
    pub replica_id: Option<String>,
    /// Whether `requestState` is single-use (recorded in Redis then).
    pub single_use: bool,
    /// Per-subscriber backlog of the change bus (`Limits::listen_backlog`).
    pub backlog: usize,
}

/// Connects to Redis: a [`Backplane`] of the shared change bus and session
/// store and, when `opts.single_use`, `state` with the shared single-use
/// `requestState` store (replacing an in-process record). Give both to the
/// builder (`ServerBuilder::backplane`, `ServerBuilder::request_state`).
///
/// Refuses without a shared key ring (`has_shared_keys`): replicas with
/// random per-process keys cannot open each other's tokens, so Redis would
/// only hide the misconfiguration.
#[cfg(feature = "redis")]
pub async fn with_redis(
    state: RequestStateConfig,
    opts: &RedisOptions,
    has_shared_keys: bool,
) -> Result<(RequestStateConfig, Backplane), String> {
    use std::sync::Arc;
    if !has_shared_keys {
        return Err(
            "--redis needs a key ring shared by every replica: set MCP_STATE_KEYS (or MCP_STATE_KEY)"
                .into(),
        );
    }
    let mut config = ferromcp_redis::RedisConfig::new(&opts.url)
        .map_err(|e| format!("--redis: {e}"))?
        .bus_backlog(opts.backlog);
    if let Some(p) = &opts.prefix {
        config = config.key_prefix(p.clone());
    }
    if let Some(id) = &opts.replica_id {
        config = config.replica_id(id.clone());
    }
    let bus = config
        .connect_change_bus()
        .await
        .map_err(|e| format!("--redis: change bus: {e}"))?;
    let sessions = config
        .connect_sessions()
        .await
        .map_err(|e| format!("--redis: session store: {e}"))?;
    let backplane = Backplane::default()
        .change_bus(Arc::new(bus))
        .shared_sessions(Arc::new(sessions));
    let mut state = state;
    if opts.single_use {
        let store = config
            .connect_single_use()
            .await
            .map_err(|e| format!("--redis: single-use store: {e}"))?;
        state = state.single_use_store(Arc::new(store));
    }
    Ok((state, backplane))
}

/// Without the `redis` feature: always an error naming the feature.
#[cfg(not(feature = "redis"))]
pub async fn with_redis(
    _state: RequestStateConfig,
    _opts: &RedisOptions,
    _has_shared_keys: bool,
) -> Result<(RequestStateConfig, Backplane), String> {
    Err("--redis: this binary was built without the `redis` feature".into())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn key_ring_precedence_and_forms() {
        let a = "a1".repeat(32);
        let b = "b2".repeat(32);
        assert!(state_key_ring(None, None).unwrap().is_none());
        assert!(
            state_key_ring(Some(&a), Some(&b))
                .unwrap_err()
                .contains("not both")
        );
        let one = state_key_ring(Some(&a), None).unwrap().unwrap();
        let kid_a = KeyRing::derived_kid(&[0xa1; 32]).unwrap();
        assert_eq!(
            one.kids().collect::<Vec<_>>(),
            vec![kid_a.as_str(), LEGACY_ENV_KID]
        );
        let ring = state_key_ring(None, Some(&format!("{b},{a}")))
            .unwrap()
            .unwrap();
        assert_eq!(ring.kids().nth(1), Some(kid_a.as_str()));
        assert!(state_key_ring(Some("zz"), None).is_err());
        assert!(state_key_ring(Some(&format!("{a},{b}")), None).is_err());
        assert!(
            state_key_ring(None, Some(&format!("{a},xx")))
                .unwrap_err()
                .contains("key 2")
        );
    }
}
