//! One handshake-era session: what `initialize`
//! negotiated and what later requests changed (`logging/setLevel`,
//! `resources/subscribe`). Shared by the stdio transport (one session per
//! process) and the HTTP transport (one per `Mcp-Session-Id`).
// LEGACY-01…LEGACY-21

use ferromcp_protocol::ProtocolVersion;
use ferromcp_protocol::types::{
    ClientCapabilities, Implementation, InitializeRequestParams, LoggingLevel,
};
use std::collections::HashSet;
use std::sync::Mutex;

/// One handshake-era session: what `initialize` negotiated (revision,
/// client capabilities and description) and what the client set since
/// (log level, resource subscriptions).
#[derive(Debug)]
pub struct HandshakeSession {
    /// The negotiated revision.
    pub version: ProtocolVersion,
    /// The client's capabilities from `initialize`.
    pub capabilities: std::sync::Arc<ClientCapabilities>,
    /// The client's self-description.
    pub client_info: Option<Implementation>,
    log_level: Mutex<Option<LoggingLevel>>,
    subscriptions: Mutex<HashSet<String>>,
}

impl HandshakeSession {
    pub(crate) fn new(version: ProtocolVersion, params: &InitializeRequestParams) -> Self {
        Self {
            version,
            capabilities: std::sync::Arc::new(params.capabilities.clone()),
            client_info: Some(params.client_info.clone()),
            log_level: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
        }
    }

    /// The session a shared record describes (`None`: a version this build
    /// does not know).
    pub(crate) fn from_record(r: &crate::shared_sessions::SessionRecord) -> Option<Self> {
        let s = Self {
            version: ProtocolVersion::parse(&r.version)?,
            capabilities: std::sync::Arc::new(r.capabilities.clone()),
            client_info: r.client_info.clone(),
            log_level: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
        };
        s.apply(r);
        Some(s)
    }

    /// The shareable record of this session, owned by `owner`.
    pub(crate) fn to_record(&self, owner: Option<&str>) -> crate::shared_sessions::SessionRecord {
        let mut subscriptions: Vec<String> = self
            .subscriptions
            .lock()
            .map(|g| g.iter().cloned().collect())
            .unwrap_or_default();
        subscriptions.sort();
        crate::shared_sessions::SessionRecord {
            version: self.version.as_str().to_owned(),
            capabilities: ClientCapabilities::clone(&self.capabilities),
            client_info: self.client_info.clone(),
            log_level: self.log_level(),
            subscriptions,
            owner: owner.map(str::to_owned),
        }
    }

    /// Takes the mutable parts (log level, subscriptions) from a shared
    /// record another replica may have changed.
    pub(crate) fn apply(&self, r: &crate::shared_sessions::SessionRecord) {
        if let Ok(mut g) = self.log_level.lock() {
            *g = r.log_level;
        }
        if let Ok(mut g) = self.subscriptions.lock() {
            if g.len() != r.subscriptions.len() || r.subscriptions.iter().any(|u| !g.contains(u)) {
                *g = r.subscriptions.iter().cloned().collect();
            }
        }
    }

    /// Takes the log level from a shared record read without its
    /// subscriptions (those are read where they are used: the GET stream's
    /// filter).
    pub(crate) fn apply_level(&self, r: &crate::shared_sessions::SessionRecord) {
        if let Ok(mut g) = self.log_level.lock() {
            *g = r.log_level;
        }
    }

    /// The level set by `logging/setLevel`, if any.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.log_level.lock().map(|g| *g).unwrap_or(None)
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        if let Ok(mut g) = self.log_level.lock() {
            *g = Some(level);
        }
    }

    /// Adds a subscription unless the session already holds `max` others
    /// (checked and inserted under one lock, so concurrent subscribes
    /// cannot overshoot); `false` when refused.
    pub(crate) fn subscribe(&self, uri: String, max: usize) -> bool {
        let mut g = match self.subscriptions.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if !g.contains(&uri) && g.len() >= max {
            return false;
        }
        g.insert(uri);
        true
    }

    /// How many subscriptions the session holds.
    #[cfg(test)]
    pub(crate) fn subscription_count(&self) -> usize {
        self.subscriptions.lock().map(|g| g.len()).unwrap_or(0)
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        if let Ok(mut g) = self.subscriptions.lock() {
            g.remove(uri);
        }
    }

    // SUB-12
    /// Whether an update of `uri` should reach this session: subscribed to it
    /// or to a parent (the uri may be a sub-resource).
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions
            .lock()
            .map(|g| {
                g.iter().any(|s| {
                    uri == s
                        || (uri.starts_with(s.as_str())
                            && (s.ends_with('/') || uri[s.len()..].starts_with('/')))
                })
            })
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_resource_matching() {
        let s = HandshakeSession {
            version: ProtocolVersion::V2025_11_25,
            capabilities: Default::default(),
            client_info: None,
            log_level: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
        };
        assert!(s.subscribe("file:///a".into(), 10));
        assert!(s.is_subscribed("file:///a"));
        assert!(s.is_subscribed("file:///a/b"));
        assert!(!s.is_subscribed("file:///ab"));
        s.unsubscribe("file:///a");
        assert!(!s.is_subscribed("file:///a"));
    }

    #[test]
    fn subscriptions_stop_at_the_cap_from_many_threads() {
        // Limits::max_subscriptions_per_session, in-process sessions.
        let s = std::sync::Arc::new(HandshakeSession::new(
            ProtocolVersion::V2025_11_25,
            &InitializeRequestParams::default(),
        ));
        let accepted: usize = (0..8)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    (0..50)
                        .filter(|i| s.subscribe(format!("test://{t}/{i}"), 100))
                        .count()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap_or(0))
            .sum();
        assert_eq!((accepted, s.subscription_count()), (100, 100));
        // At the cap, a URI already held is still accepted (idempotent),
        // a new one is not; after an unsubscribe there is room again.
        assert!(!s.subscribe("test://new".into(), 100));
        let held = (0..8)
            .flat_map(|t| (0..50).map(move |i| format!("test://{t}/{i}")))
            .find(|u| s.is_subscribed(u))
            .unwrap_or_default();
        assert!(s.subscribe(held.clone(), 100));
        s.unsubscribe(&held);
        assert!(s.subscribe("test://new".into(), 100));
    }
}
