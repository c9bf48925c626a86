//! Change-notification fan-out: list changes and resource updates, delivered
//! to modern `subscriptions/listen` streams and to handshake-era session
//! streams alike.
//!
//! The [`ChangeBus`] trait is small so a shared backend (for many replicas
//! behind a load balancer) can replace the in-process default later.
// ERA-12

use futures_util::future::BoxFuture;
use std::fmt;
use tokio::sync::broadcast;

/// A change worth telling subscribers about, or a message between replicas
/// about one handshake-era session.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// `notifications/tools/list_changed`
    ToolsListChanged,
    /// `notifications/prompts/list_changed`
    PromptsListChanged,
    /// `notifications/resources/list_changed`
    ResourcesListChanged,
    /// `notifications/resources/updated {uri}`
    ResourceUpdated(String),
    /// A client message for handshake-era session `session` that the
    /// replica which received it could not act on: a
    /// `notifications/cancelled` for a request another replica runs, or the
    /// answer to a server-to-client request another replica sent. `message`
    /// is the JSON-RPC message text. Replicas sharing sessions
    /// ([`crate::shared_sessions`]) relay it over a shared bus so it reaches
    /// the replica that can act on it; it is never shown to listeners.
    SessionMessage {
        /// The `Mcp-Session-Id`.
        session: String,
        /// One JSON-RPC notification or response, as text.
        message: String,
    },
    /// Handshake-era session `0` (its `Mcp-Session-Id`) was ended by a
    /// DELETE on one replica: every replica sharing sessions closes its
    /// streams of that session. Never shown to listeners.
    SessionEnded(String),
}

/// A publish the bus could not confirm (the shared backend is unreachable
/// or slow).
#[derive(Debug, Clone)]
pub struct PublishError {
    message: String,
}

impl PublishError {
    /// An error with this description.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "change bus: {}", self.message)
    }
}

impl std::error::Error for PublishError {}

/// Fan-out of [`Change`]s.
pub trait ChangeBus: Send + Sync + 'static {
    /// Publishes a change to every current subscriber.
    fn publish(&self, change: Change);
    // Foreign type: the bus contract is tokio broadcast's: bounded, and a lagging subscriber is
    // told (`RecvError::Lagged`); ferromcp-redis implements it.
    // SUB-13
    /// Subscribes; only changes published after this call are received
    /// (subscribe before acknowledging a listen).
    fn subscribe(&self) -> broadcast::Receiver<Change>;
    /// Publishes and waits until the change has left this process (a
    /// shared bus: the backend accepted it), within a bounded time. The
    /// default publishes and reports success: an in-process bus cannot
    /// fail.
    fn publish_confirmed(&self, change: Change) -> BoxFuture<'_, Result<(), PublishError>> {
        self.publish(change);
        Box::pin(async { Ok(()) })
    }
}

// SUB-11/SUB-13
/// The in-process bus: a bounded broadcast channel. A subscriber that falls
/// more than `backlog` changes behind is told it lagged; listen streams end
/// then (the client re-listens).
#[derive(Debug)]
pub struct LocalBus {
    tx: broadcast::Sender<Change>,
}

impl LocalBus {
    /// A bus keeping at most `backlog` undelivered changes per subscriber.
    pub fn new(backlog: usize) -> Self {
        let (tx, _) = broadcast::channel(backlog.max(1));
        Self { tx }
    }
}

impl ChangeBus for LocalBus {
    fn publish(&self, change: Change) {
        // No subscribers is not an error.
        let _ = self.tx.send(change);
    }
    fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.tx.subscribe()
    }
}
