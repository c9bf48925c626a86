//! Handshake-era sessions shared by replicas (scale-out).
//!
//! Without a [`SharedSessions`] store (the default) a session created by
//! `initialize` lives in the process that created it, exactly as before:
//! behind several replicas a load balancer must then pin each client.
//! With one ([`crate::Backplane::shared_sessions`]; Redis:
//! `ferromcp_redis::RedisSessions`), the session *record* (negotiated version,
//! client capabilities and info, log level, resource subscriptions, owning
//! principal) is written when the session is created, and every request
//! with an `Mcp-Session-Id` reads it (refreshing its idle TTL) before it is
//! served:
//!
//! - a replica that has not seen the session builds its local state from the
//!   record, so a session created on one replica works on every other;
//! - a record that is gone (DELETE on any replica, or idle expiry) is a 404
//!   everywhere, at once;
//! - `logging/setLevel` and `resources/subscribe`/`unsubscribe` change
//!   only their own field of the record ([`SharedSessions::update`]), in the
//!   store, before they are answered, so concurrent changes on different
//!   replicas never undo each other; the store enforces
//!   [`crate::Limits::max_subscriptions_per_session`] atomically; every
//!   replica applies the record on its next request;
//! - when the store cannot answer, the request gets 503 with `Retry-After`
//!   (and the request's id), never a 404 that would make a client drop a
//!   valid session;
//! - a DELETE ends the session in the store and announces it on the change
//!   bus ([`crate::notify::Change::SessionEnded`]): every replica closes its
//!   streams of that session at once;
//! - a `notifications/cancelled` for a request another replica runs, and
//!   the answer to a server-to-client request (elicitation, sampling,
//!   roots) another replica sent, are relayed over the change bus
//!   ([`crate::notify::Change::SessionMessage`]) to the replica that can act
//!   on them; server-to-client request ids carry a random per-process tag so
//!   replicas never issue the same one. This needs a shared bus (e.g.
//!   `ferromcp_redis::RedisChangeBus`); an answer the bus cannot confirm is 503
//!   with `Retry-After`, so the client sends it again.
//!
//! What stays per replica: the SSE event log of each stream. A
//! `Last-Event-ID` resumption must reach the replica that holds the stream
//! (another replica answers 400 for an id it does not know, and the client
//! opens a new stream); the events of a stream are produced where its
//! request runs, so replaying them elsewhere would also mean relaying every
//! later event, which is left for later.

use ferromcp_protocol::types::{ClientCapabilities, Implementation, LoggingLevel};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The shareable part of one handshake-era session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The negotiated revision (`2025-11-25`, …).
    pub version: String,
    /// The client's capabilities from `initialize`.
    pub capabilities: ClientCapabilities,
    /// The client's self-description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
    /// The level set by `logging/setLevel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LoggingLevel>,
    /// Subscribed resource URIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subscriptions: Vec<String>,
    // STATE-06
    /// The subject of the principal that initialized it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// The store could not answer (unreachable, timed out, refused).
#[derive(Debug, Clone)]
pub struct SharedSessionsError {
    message: String,
}

impl SharedSessionsError {
    /// An error with this description.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for SharedSessionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shared session store: {}", self.message)
    }
}

impl std::error::Error for SharedSessionsError {}

/// One change to the mutable part of a session record, applied by the
/// store on its own (never by rewriting the record read earlier), so that
/// changes made concurrently on different replicas all survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionUpdate<'a> {
    /// `logging/setLevel`.
    SetLogLevel(LoggingLevel),
    /// `resources/subscribe`: adds `uri` unless the session already holds
    /// `max` other subscriptions (checked atomically with the insert).
    Subscribe {
        /// The resource URI.
        uri: &'a str,
        /// Most subscriptions the session may hold.
        max: usize,
    },
    /// `resources/unsubscribe`.
    Unsubscribe(&'a str),
}

/// What [`SharedSessions::update`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpdateOutcome {
    /// The change is stored (also: subscribing to a URI already subscribed,
    /// unsubscribing from one that is not).
    Applied,
    /// There is no such session (ended or expired): nothing was stored.
    Gone,
    /// A subscribe refused: the session already holds `max` subscriptions.
    TooManySubscriptions,
}

/// Where replicas keep handshake-era session records. Every call must end
/// within a bounded time (an implementation applies its own timeouts).
pub trait SharedSessions: Send + Sync + 'static {
    /// Stores the record of a new session (or replaces it), expiring after
    /// `idle` without use.
    fn put<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), SharedSessionsError>>;

    /// The record of session `id`, its idle expiry pushed back to `idle`
    /// from now; `Ok(None)` when there is none (ended or expired).
    fn fetch<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SharedSessionsError>>;

    /// Like [`Self::fetch`], but the record's `subscriptions` may be left
    /// empty: what every request reads, since only a GET stream's filter
    /// needs them (it calls [`Self::fetch`]), so a session holding many
    /// subscriptions does not make each of its requests read them all. The
    /// default calls [`Self::fetch`].
    fn fetch_without_subscriptions<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SharedSessionsError>> {
        self.fetch(id, idle)
    }

    /// Applies one change to session `id`'s record, atomically and without
    /// touching its other fields, and pushes its idle expiry back to `idle`
    /// from now.
    fn update<'a>(
        &'a self,
        id: &'a str,
        update: SessionUpdate<'a>,
        idle: Duration,
    ) -> BoxFuture<'a, Result<UpdateOutcome, SharedSessionsError>>;

    /// Ends session `id` for every replica.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SharedSessionsError>>;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_json() {
        let r = SessionRecord {
            version: "2025-11-25".into(),
            capabilities: serde_json::from_value(serde_json::json!({"elicitation": {}})).unwrap(),
            client_info: Some(
                serde_json::from_value(serde_json::json!({"name": "c", "version": "1"})).unwrap(),
            ),
            log_level: Some(LoggingLevel::Debug),
            subscriptions: vec!["test://a".into()],
            owner: Some("alice".into()),
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<SessionRecord>(&text).unwrap(), r);
    }
}
