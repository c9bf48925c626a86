//! # ferromcp-redis
//!
//! A Redis backplane for `ferromcp-server` replicas behind a load balancer. It
//! implements three of the server's pluggable traits:
//!
//! - [`RedisChangeBus`] ([`ferromcp_server::notify::ChangeBus`]): list changes and
//!   resource updates published on any replica reach the
//!   `subscriptions/listen` streams (and handshake-era sessions) of every
//!   replica, through `PUBLISH`/`SUBSCRIBE` on one prefixed channel.
//! - [`RedisSingleUse`] ([`ferromcp_server::single_use::SingleUseStore`]):
//!   single-use `requestState` across the fleet, with one atomic
//!   `SET key 1 NX PX ttl` per consumed token, so a token replayed on any
//!   replica, even concurrently, is accepted exactly once.
//! - [`RedisSessions`] ([`ferromcp_server::shared_sessions::SharedSessions`]):
//!   handshake-era session records (`SET`/`GETEX … PX idle`/`DEL` on
//!   `<prefix>session:<id>`), so a session created on one replica is served
//!   by every other and `DELETE` ends it everywhere.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use ferromcp_server::{Backplane, RequestStateConfig, Server, request_state::KeyRing};
//!
//! let redis = ferromcp_redis::RedisConfig::new("redis://127.0.0.1:6379/0")?
//!     .key_prefix("myapp:mcp:");
//! let server = Server::builder("demo", "1.0.0")
//!     .request_state(
//!         RequestStateConfig::default()
//!             // Keys are configuration shared by every replica, never stored in Redis.
//!             .keys(KeyRing::from_hex_list(&std::env::var("MCP_STATE_KEYS")?)?)
//!             .single_use_store(Arc::new(redis.connect_single_use().await?)),
//!     )
//!     .backplane(
//!         Backplane::default()
//!             .change_bus(Arc::new(redis.connect_change_bus().await?))
//!             .shared_sessions(Arc::new(redis.connect_sessions().await?)),
//!     )
//!     .build()?;
//! # let _ = server; Ok(()) }
//! ```
//!
//! Sealing keys are deliberately not part of this crate: they are
//! configuration (`KeyRing`), and a backplane that held them would turn a
//! Redis compromise into a token-forgery one.
//!
//! # Failure behaviour
//!
//! Every Redis call is bounded ([`DEFAULT_COMMAND_TIMEOUT`],
//! [`DEFAULT_CONNECT_TIMEOUT`], set through [`RedisConfig`]). When the bus
//! loses its subscription, every local receiver is closed, so listen
//! streams end and clients re-listen and refetch instead of
//! silently missing changes; while it is down new receivers are closed at
//! once; it reconnects and resubscribes by itself with capped exponential
//! backoff. The single-use store fails closed: an unanswered `SET` refuses
//! the retry leg with a retryable error (HTTP 503, see
//! [`ferromcp_server::single_use`]). The session store fails the same way: a
//! request for a session while Redis cannot answer gets 503 with
//! `Retry-After`, never a 404 that would make a client drop a valid
//! session. Redis runs without persistence in our recipe, so sessions do
//! not survive a Redis restart: clients get 404 and re-initialize,
//! as after a server restart.
//!
//! # Why the `redis` crate
//!
//! `redis` (redis-rs) with only `tokio-comp` and `connection-manager` is the
//! reference Rust client: its `ConnectionManager` reconnects by itself and
//! is cheap to clone, and its dedicated async `PubSub` connection ends its
//! message stream when the connection drops, which is the signal the bus
//! needs. `fred` is a capable alternative but larger (its own reconnect
//! policies, pools, metrics and more dependencies) for the two commands
//! used here. Default features (`acl`, `streams`, `geospatial`, `script`,
//! `num-bigint`) are off; no TLS backend is compiled in (add a
//! `redis/tokio-rustls-comp` feature in the application if `rediss://` is
//! needed). The crate needs Rust 1.88 (the `redis` crate's minimum).
// MRTR-09, SUB-11, LEGACY-13

use std::fmt;
use std::time::Duration;

mod bus;
mod sessions;
mod single_use;

pub use bus::RedisChangeBus;
pub use sessions::RedisSessions;
pub use single_use::RedisSingleUse;

/// Default prefix of every key and channel name.
pub const DEFAULT_KEY_PREFIX: &str = "mcp:";
/// Default upper bound on one Redis command (`PUBLISH`, `SET`, `PING`).
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_millis(500);
/// Default upper bound on opening a connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Default first delay before reconnecting the bus subscription (doubles
/// up to [`DEFAULT_RECONNECT_MAX_DELAY`]).
pub const DEFAULT_RECONNECT_MIN_DELAY: Duration = Duration::from_millis(100);
/// Default cap on the delay between reconnection attempts.
pub const DEFAULT_RECONNECT_MAX_DELAY: Duration = Duration::from_secs(2);
/// Default interval of the `PING` that detects a silently dead subscription
/// connection.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(5);
/// Default number of changes waiting to be published before `publish`
/// drops (and logs) new ones.
pub const DEFAULT_PUBLISH_QUEUE: usize = 1024;
// SUB-13
/// Default per-subscriber backlog of the local fan-out; a subscriber that
/// falls further behind is told it lagged (its listen stream ends).
pub const DEFAULT_BUS_BACKLOG: usize = 256;
/// Longest accepted replica id.
pub const MAX_REPLICA_ID_LEN: usize = 64;

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The configuration is invalid (URL, replica id).
    Config,
    /// Redis did not answer in time.
    Timeout,
    /// Redis could not be reached or the connection broke.
    Connection,
    /// Redis answered with an error.
    Command,
    /// The backplane's background task is gone (the bus was dropped).
    Closed,
}

/// A Redis backplane failure.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<redis::RedisError>,
}

impl Error {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    fn timeout(what: &str, limit: Duration) -> Self {
        Self::new(
            ErrorKind::Timeout,
            format!("{what}: no answer from Redis within {limit:?}"),
        )
    }

    fn redis(what: &str, e: redis::RedisError) -> Self {
        let kind = if e.is_timeout() {
            ErrorKind::Timeout
        } else if e.is_io_error() || e.is_connection_refusal() || e.is_connection_dropped() {
            ErrorKind::Connection
        } else {
            ErrorKind::Command
        };
        Self {
            kind,
            message: what.to_owned(),
            source: Some(e),
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// True for an invalid configuration.
    pub fn is_config(&self) -> bool {
        self.kind == ErrorKind::Config
    }
    /// True when Redis did not answer in time.
    pub fn is_timeout(&self) -> bool {
        self.kind == ErrorKind::Timeout
    }
    /// True when Redis could not be reached or the connection broke.
    pub fn is_connection(&self) -> bool {
        self.kind == ErrorKind::Connection
    }
    /// True when Redis answered with an error.
    pub fn is_command(&self) -> bool {
        self.kind == ErrorKind::Command
    }
    /// True when the backplane's background task is gone.
    pub fn is_closed(&self) -> bool {
        self.kind == ErrorKind::Closed
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(e) => write!(f, "{}: {e}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Where Redis is and how to talk to it; builds the backplane parts.
///
/// Every limit has a named default (`DEFAULT_*`); setters override them.
#[derive(Clone)]
pub struct RedisConfig {
    client: redis::Client,
    key_prefix: String,
    replica_id: String,
    command_timeout: Duration,
    connect_timeout: Duration,
    reconnect_min_delay: Duration,
    reconnect_max_delay: Duration,
    ping_interval: Duration,
    publish_queue: usize,
    bus_backlog: usize,
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may hold a password: never printed.
        f.debug_struct("RedisConfig")
            .field("key_prefix", &self.key_prefix)
            .field("replica_id", &self.replica_id)
            .field("command_timeout", &self.command_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

impl RedisConfig {
    /// A configuration for the Redis at `url` (`redis://[user:pass@]host:port/db`),
    /// with the defaults and a random replica id. Nothing is connected yet.
    pub fn new(url: &str) -> Result<Self, Error> {
        let client = redis::Client::open(url).map_err(|e| Error {
            kind: ErrorKind::Config,
            message: "invalid Redis URL".into(),
            source: Some(e),
        })?;
        Ok(Self {
            client,
            key_prefix: DEFAULT_KEY_PREFIX.to_owned(),
            replica_id: random_replica_id()?,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            reconnect_min_delay: DEFAULT_RECONNECT_MIN_DELAY,
            reconnect_max_delay: DEFAULT_RECONNECT_MAX_DELAY,
            ping_interval: DEFAULT_PING_INTERVAL,
            publish_queue: DEFAULT_PUBLISH_QUEUE,
            bus_backlog: DEFAULT_BUS_BACKLOG,
        })
    }

    /// Prefix of every key and channel (default [`DEFAULT_KEY_PREFIX`]); use
    /// one per application sharing a Redis.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// This replica's id, unique in the fleet (default: 16 random hex
    /// digits). The bus skips its own messages by it. 1 to
    /// [`MAX_REPLICA_ID_LEN`] characters of `[A-Za-z0-9_.:-]`; checked when
    /// connecting.
    pub fn replica_id(mut self, id: impl Into<String>) -> Self {
        self.replica_id = id.into();
        self
    }

    /// This replica's id.
    pub fn replica(&self) -> &str {
        &self.replica_id
    }

    /// The key and channel prefix.
    pub fn prefix(&self) -> &str {
        &self.key_prefix
    }

    /// Upper bound on one command (default [`DEFAULT_COMMAND_TIMEOUT`]).
    pub fn command_timeout(mut self, limit: Duration) -> Self {
        self.command_timeout = limit;
        self
    }

    /// Upper bound on opening a connection (default
    /// [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// Reconnection backoff of the bus subscription: first delay and cap
    /// (defaults [`DEFAULT_RECONNECT_MIN_DELAY`],
    /// [`DEFAULT_RECONNECT_MAX_DELAY`]).
    pub fn reconnect_delay(mut self, min: Duration, max: Duration) -> Self {
        self.reconnect_min_delay = min;
        self.reconnect_max_delay = max.max(min);
        self
    }

    /// Interval of the health `PING` on the subscription connection
    /// (default [`DEFAULT_PING_INTERVAL`]).
    pub fn ping_interval(mut self, every: Duration) -> Self {
        self.ping_interval = every.max(Duration::from_millis(10));
        self
    }

    /// Changes that may wait to be published (default
    /// [`DEFAULT_PUBLISH_QUEUE`]).
    pub fn publish_queue(mut self, n: usize) -> Self {
        self.publish_queue = n.max(1);
        self
    }

    /// Per-subscriber backlog of the local fan-out (default
    /// [`DEFAULT_BUS_BACKLOG`]; `ferromcp-server`'s `Limits::listen_backlog` is
    /// the natural value).
    pub fn bus_backlog(mut self, n: usize) -> Self {
        self.bus_backlog = n.max(1);
        self
    }

    /// Connects the change bus: subscribes to `<prefix>changes` before
    /// returning (so a Redis that is down at start-up is an error here),
    /// then keeps the subscription alive in a background task.
    pub async fn connect_change_bus(&self) -> Result<RedisChangeBus, Error> {
        self.check()?;
        RedisChangeBus::connect(self).await
    }

    /// Connects the single-use store (keys `<prefix>su:<hex token id>`).
    pub async fn connect_single_use(&self) -> Result<RedisSingleUse, Error> {
        self.check()?;
        RedisSingleUse::connect(self).await
    }

    /// Connects the shared handshake-era session store (keys
    /// `<prefix>session:<id>`).
    pub async fn connect_sessions(&self) -> Result<RedisSessions, Error> {
        self.check()?;
        RedisSessions::connect(self).await
    }

    fn check(&self) -> Result<(), Error> {
        let id = &self.replica_id;
        let ok = !id.is_empty()
            && id.len() <= MAX_REPLICA_ID_LEN
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b));
        if ok {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Config,
                format!(
                    "replica id must be 1-{MAX_REPLICA_ID_LEN} characters of [A-Za-z0-9_.:-], got {id:?}"
                ),
            ))
        }
    }

    /// A connection manager (auto-reconnecting, cloneable) with this
    /// configuration's bounds.
    async fn connection_manager(&self) -> Result<redis::aio::ConnectionManager, Error> {
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.command_timeout))
            .set_number_of_retries(2)
            .set_min_delay(self.reconnect_min_delay)
            .set_max_delay(self.reconnect_max_delay);
        let connect = redis::aio::ConnectionManager::new_with_config(self.client.clone(), config);
        // The manager retries internally; the whole attempt stays bounded.
        let limit = self.connect_timeout.saturating_mul(2);
        match tokio::time::timeout(limit, connect).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(Error::redis("cannot connect to Redis", e)),
            Err(_) => Err(Error::timeout("cannot connect to Redis", limit)),
        }
    }
}

fn random_replica_id() -> Result<String, Error> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("cannot draw a replica id from the system random number generator: {e}"),
        )
    })?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_validation() {
        let c = RedisConfig::new("redis://127.0.0.1:1/0").unwrap();
        assert_eq!(c.prefix(), DEFAULT_KEY_PREFIX);
        assert_eq!(c.replica().len(), 16);
        assert!(c.check().is_ok());
        let other = RedisConfig::new("redis://127.0.0.1:1/0").unwrap();
        assert_ne!(c.replica(), other.replica());
        for bad in ["", "a b", "a\nb", &"x".repeat(65)] {
            let e = c.clone().replica_id(bad).check().unwrap_err();
            assert!(e.is_config(), "{bad:?}");
        }
        assert!(c.clone().replica_id("eu-1.pod:7").check().is_ok());
        let e = RedisConfig::new("not a url").unwrap_err();
        assert!(e.is_config() && !e.is_timeout());
        // The password never shows in Debug.
        let c = RedisConfig::new("redis://user:hunter2@127.0.0.1:1/0").unwrap();
        assert!(!format!("{c:?}").contains("hunter2"));
        assert_eq!(hex(&[0, 15, 255]), "000fff");
    }
}
