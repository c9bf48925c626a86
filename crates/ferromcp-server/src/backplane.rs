//! [`Backplane`]: what the replicas of a fleet share, given to
//! [`ServerBuilder::backplane`](crate::ServerBuilder::backplane).

use crate::notify::{ChangeBus, LocalBus};
use crate::shared_sessions::SharedSessions;
use std::fmt;
use std::sync::Arc;

/// What the replicas of a fleet share so that any of them can serve any
/// request: the bus that carries list-changed and resource-updated
/// notifications, and the store of handshake-era sessions.
///
/// The default is a single process: an in-process change bus (its backlog
/// is the `listen_backlog` of [`Limits`](crate::Limits)) and sessions kept in this
/// process. `ferromcp-redis` provides both shared forms.
///
/// The single-use record of `requestState` is not part of the backplane,
/// although a shared one is fleet state too: it is one form of a
/// `requestState` policy, set with
/// [`RequestStateConfig::single_use_store`](crate::RequestStateConfig::single_use_store)
/// next to the in-process form, so it has exactly one place.
///
/// ```
/// use ferromcp_server::{Backplane, Server};
/// use ferromcp_server::notify::LocalBus;
/// use std::sync::Arc;
///
/// // A bus shared by two servers of this process; a fleet would pass
/// // ferromcp_redis's bus and session store instead.
/// let bus = Arc::new(LocalBus::new(64));
/// let a = Server::builder("a", "1").backplane(Backplane::default().change_bus(bus.clone())).build();
/// let b = Server::builder("b", "1").backplane(Backplane::default().change_bus(bus)).build();
/// assert!(a.is_ok() && b.is_ok());
/// ```
#[derive(Default)]
pub struct Backplane {
    change_bus: Option<Arc<dyn ChangeBus>>,
    shared_sessions: Option<Arc<dyn SharedSessions>>,
}

impl fmt::Debug for Backplane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = |shared: bool| if shared { "given" } else { "in-process" };
        f.debug_struct("Backplane")
            .field("change_bus", &place(self.change_bus.is_some()))
            .field("shared_sessions", &place(self.shared_sessions.is_some()))
            .finish()
    }
}

impl Backplane {
    /// Replaces the in-process change bus: notifications published on one
    /// server reach the listeners of every server sharing `bus`.
    pub fn change_bus(mut self, bus: Arc<dyn ChangeBus>) -> Self {
        self.change_bus = Some(bus);
        self
    }

    /// Shares handshake-era sessions with other replicas through `store`
    /// (see [`crate::shared_sessions`]): a session created on one replica
    /// is served by all, DELETE ends it everywhere, and a store that cannot
    /// answer turns session requests into 503 with `Retry-After`. Without
    /// it (the default) sessions live in this process only.
    pub fn shared_sessions(mut self, store: Arc<dyn SharedSessions>) -> Self {
        self.shared_sessions = Some(store);
        self
    }

    /// The change bus: the one given, else a new in-process bus with
    /// `backlog` (for the builder).
    pub(crate) fn take_change_bus(&mut self, backlog: usize) -> Arc<dyn ChangeBus> {
        self.change_bus
            .take()
            .unwrap_or_else(|| Arc::new(LocalBus::new(backlog)))
    }

    /// The shared session store, if given (for the builder).
    pub(crate) fn take_shared_sessions(&mut self) -> Option<Arc<dyn SharedSessions>> {
        self.shared_sessions.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Server;
    use crate::shared::Shared;
    use crate::shared_sessions::{
        SessionRecord, SessionUpdate, SharedSessionsError, UpdateOutcome,
    };
    use futures_util::future::BoxFuture;
    use std::time::Duration;

    /// A session store that is never reached in these tests.
    struct Unreachable;

    impl SharedSessions for Unreachable {
        fn put<'a>(
            &'a self,
            _: &'a str,
            _: &'a SessionRecord,
            _: Duration,
        ) -> BoxFuture<'a, Result<(), SharedSessionsError>> {
            Box::pin(async { Err(SharedSessionsError::new("unreachable")) })
        }
        fn fetch<'a>(
            &'a self,
            _: &'a str,
            _: Duration,
        ) -> BoxFuture<'a, Result<Option<SessionRecord>, SharedSessionsError>> {
            Box::pin(async { Err(SharedSessionsError::new("unreachable")) })
        }
        fn update<'a>(
            &'a self,
            _: &'a str,
            _: SessionUpdate<'a>,
            _: Duration,
        ) -> BoxFuture<'a, Result<UpdateOutcome, SharedSessionsError>> {
            Box::pin(async { Err(SharedSessionsError::new("unreachable")) })
        }
        fn remove<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), SharedSessionsError>> {
            Box::pin(async { Err(SharedSessionsError::new("unreachable")) })
        }
    }

    fn built(backplane: Backplane) -> Arc<Shared> {
        match Server::builder("s", "1").backplane(backplane).build() {
            Ok(server) => server.shared,
            Err(e) => panic!("build failed: {e}"),
        }
    }

    #[test]
    fn the_default_keeps_sessions_and_notifications_in_process() {
        let a = built(Backplane::default());
        let b = built(Backplane::default());
        assert!(a.shared_sessions().is_none());
        assert!(
            !std::ptr::addr_eq(Arc::as_ptr(a.bus()), Arc::as_ptr(b.bus())),
            "each server has its own bus"
        );
    }

    #[test]
    fn change_bus_is_the_servers_bus() {
        let bus: Arc<dyn ChangeBus> = Arc::new(LocalBus::new(8));
        let s = built(Backplane::default().change_bus(bus.clone()));
        assert!(std::ptr::addr_eq(Arc::as_ptr(s.bus()), Arc::as_ptr(&bus)));
        assert!(s.shared_sessions().is_none());
    }

    #[test]
    fn shared_sessions_is_the_servers_session_store() {
        let store: Arc<dyn SharedSessions> = Arc::new(Unreachable);
        let s = built(Backplane::default().shared_sessions(store.clone()));
        let given = s.shared_sessions().map(Arc::as_ptr);
        assert!(given.is_some_and(|p| std::ptr::addr_eq(p, Arc::as_ptr(&store))));
    }

    #[test]
    fn debug_says_what_is_shared() {
        let shown = format!(
            "{:?}",
            Backplane::default().shared_sessions(Arc::new(Unreachable))
        );
        assert_eq!(
            shown,
            "Backplane { change_bus: \"in-process\", shared_sessions: \"given\" }"
        );
    }
}
