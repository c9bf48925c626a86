//! Change-notification fan-out: list changes and resource updates, delivered
//! to modern `subscriptions/listen` streams and to handshake-era session
//! streams alike (ERA-12).
//!
//! The [`ChangeBus`] trait is small so a shared backend (for many replicas
//! behind a load balancer) can replace the in-process default later.

use tokio::sync::broadcast;

/// A change worth telling subscribers about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `notifications/tools/list_changed`
    ToolsListChanged,
    /// `notifications/prompts/list_changed`
    PromptsListChanged,
    /// `notifications/resources/list_changed`
    ResourcesListChanged,
    /// `notifications/resources/updated {uri}`
    ResourceUpdated(String),
}

/// Fan-out of [`Change`]s.
pub trait ChangeBus: Send + Sync + 'static {
    /// Publishes a change to every current subscriber.
    fn publish(&self, change: Change);
    /// Subscribes; only changes published after this call are received
    /// (subscribe before acknowledging a listen, SUB-13).
    fn subscribe(&self) -> broadcast::Receiver<Change>;
}

/// The in-process bus: a bounded broadcast channel. A subscriber that falls
/// more than `backlog` changes behind is told it lagged; listen streams end
/// then (the client re-listens, SUB-11/SUB-13).
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
