//! What a handshake host set up in its session with the remote: its log
//! level and its resource subscriptions. When the remote forgets the
//! session and the bridge opens a new one, the same set-up is sent again
//! before the host's request is, so the host keeps its updates and its
//! log level without knowing the session changed.

use serde_json::Value;
use std::collections::BTreeSet;

/// The host's session set-up, as sent to the remote.
pub(crate) struct SessionSetup {
    level: Option<Value>,
    subscribed: BTreeSet<String>,
    max_subscribed: usize,
}

impl SessionSetup {
    /// An empty set-up remembering at most `max_subscribed` resources.
    pub(crate) fn new(max_subscribed: usize) -> Self {
        Self {
            level: None,
            subscribed: BTreeSet::new(),
            max_subscribed,
        }
    }

    /// The params member [`SessionSetup::note`] needs for `method`: the
    /// level of `logging/setLevel`, the uri of a (un)subscription; `None`
    /// for a method that sets nothing up.
    pub(crate) fn member(method: &str) -> Option<&'static str> {
        match method {
            "logging/setLevel" => Some("level"),
            "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
            _ => None,
        }
    }

    /// Notes a host request as it is sent, with the string value of its
    /// [`SessionSetup::member`]: `logging/setLevel` (the level),
    /// `resources/subscribe` and `resources/unsubscribe` (the uri). Other
    /// methods and a missing value change nothing. `false` when a
    /// subscription is not remembered because the limit is reached.
    pub(crate) fn note(&mut self, method: &str, value: Option<&str>) -> bool {
        let Some(value) = value else {
            return true;
        };
        match method {
            "logging/setLevel" => self.level = Some(Value::String(value.to_owned())),
            "resources/subscribe" => {
                if self.subscribed.len() >= self.max_subscribed && !self.subscribed.contains(value)
                {
                    return false;
                }
                self.subscribed.insert(value.to_owned());
            }
            "resources/unsubscribe" => {
                self.subscribed.remove(value);
            }
            _ => {}
        }
        true
    }

    /// The requests that set a new session up the same way: the level
    /// first, then one subscription per resource, with the bridge's own
    /// ids (their answers never reach the host).
    pub(crate) fn replay(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(self.subscribed.len() + 1);
        let mut n = 0;
        let mut id = || {
            n += 1;
            format!("ferromcp-bridge/setup-{n}")
        };
        if let Some(level) = &self.level {
            let m = serde_json::json!({"jsonrpc": "2.0", "id": id(), "method": "logging/setLevel", "params": {"level": level}});
            out.push(m.to_string().into_bytes());
        }
        for uri in &self.subscribed {
            let m = serde_json::json!({"jsonrpc": "2.0", "id": id(), "method": "resources/subscribe", "params": {"uri": uri}});
            out.push(m.to_string().into_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replayed(s: &SessionSetup) -> Vec<Value> {
        s.replay()
            .iter()
            .filter_map(|b| serde_json::from_slice(b).ok())
            .collect()
    }

    #[test]
    fn the_last_level_and_the_live_subscriptions_are_replayed() {
        let mut s = SessionSetup::new(8);
        assert!(s.replay().is_empty());
        s.note("logging/setLevel", Some("info"));
        s.note("logging/setLevel", Some("error"));
        for uri in ["file:///b", "file:///a", "file:///c"] {
            s.note("resources/subscribe", Some(uri));
        }
        s.note("resources/unsubscribe", Some("file:///c"));
        s.note("tools/call", Some("x"));
        let got = replayed(&s);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0]["method"], "logging/setLevel");
        assert_eq!(got[0]["params"]["level"], "error");
        assert_eq!(got[1]["params"]["uri"], "file:///a");
        assert_eq!(got[2]["params"]["uri"], "file:///b");
        let ids: BTreeSet<String> = got.iter().map(|m| m["id"].to_string()).collect();
        assert_eq!(ids.len(), 3, "distinct ids: {got:?}");
        assert!(got.iter().all(|m| {
            m["id"]
                .as_str()
                .is_some_and(|i| i.starts_with("ferromcp-bridge/"))
        }));
    }

    #[test]
    fn missing_values_change_nothing_and_the_limit_holds() {
        let mut s = SessionSetup::new(2);
        s.note("logging/setLevel", None);
        s.note("resources/subscribe", None);
        assert!(s.replay().is_empty());
        assert_eq!(SessionSetup::member("tools/call"), None);
        assert_eq!(SessionSetup::member("logging/setLevel"), Some("level"));
        assert!(s.note("resources/subscribe", Some("a")));
        assert!(s.note("resources/subscribe", Some("b")));
        assert!(s.note("resources/subscribe", Some("a")));
        assert!(!s.note("resources/subscribe", Some("c")));
        assert_eq!(replayed(&s).len(), 2);
    }
}
