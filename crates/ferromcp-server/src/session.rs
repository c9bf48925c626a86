//! Handshake-era session state: what `initialize`
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

/// The negotiated state of one handshake-era session.
#[derive(Debug)]
pub struct SessionState {
    /// The negotiated revision.
    pub version: ProtocolVersion,
    /// The client's capabilities from `initialize`.
    pub capabilities: std::sync::Arc<ClientCapabilities>,
    /// The client's self-description.
    pub client_info: Option<Implementation>,
    log_level: Mutex<Option<LoggingLevel>>,
    subscriptions: Mutex<HashSet<String>>,
}

impl SessionState {
    pub(crate) fn new(version: ProtocolVersion, params: &InitializeRequestParams) -> Self {
        Self {
            version,
            capabilities: std::sync::Arc::new(params.capabilities.clone()),
            client_info: Some(params.client_info.clone()),
            log_level: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
        }
    }

    /// The state a shared record describes (`None`: a version this build
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

    /// The shareable record of this state, owned by `owner`.
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

    /// The level set by `logging/setLevel`, if any.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.log_level.lock().map(|g| *g).unwrap_or(None)
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        if let Ok(mut g) = self.log_level.lock() {
            *g = Some(level);
        }
    }

    pub(crate) fn subscribe(&self, uri: String) {
        if let Ok(mut g) = self.subscriptions.lock() {
            g.insert(uri);
        }
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
        let s = SessionState {
            version: ProtocolVersion::V2025_11_25,
            capabilities: Default::default(),
            client_info: None,
            log_level: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
        };
        s.subscribe("file:///a".into());
        assert!(s.is_subscribed("file:///a"));
        assert!(s.is_subscribed("file:///a/b"));
        assert!(!s.is_subscribed("file:///ab"));
        s.unsubscribe("file:///a");
        assert!(!s.is_subscribed("file:///a"));
    }
}
