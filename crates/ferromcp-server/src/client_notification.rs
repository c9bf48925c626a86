//! Client notifications the server does not act on itself (extension
//! notifications, `notifications/roots/list_changed`, `notifications/progress`),
//! handed to a hook set with
//! [`ServerBuilder::on_notification`](crate::ServerBuilder::on_notification):
//! a relay passes them on to the server behind it.
//!
//! `notifications/cancelled` and `notifications/initialized` are the
//! server's own and never reach the hook. Notifications have no answer,
//! so the hook cannot fail one; it is called synchronously on the
//! request's task and should hand slow work to a task of its own.

use serde_json::Value;
use std::sync::Arc;

/// A client notification, as the client sent it.
#[derive(Debug, Clone)]
pub struct ClientNotification {
    method: String,
    params: Option<Value>,
    session: Option<String>,
}

impl ClientNotification {
    pub(crate) fn new(method: String, params: Option<Value>, session: Option<String>) -> Self {
        Self {
            method,
            params,
            session,
        }
    }

    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params as sent (unknown members and `_meta` included).
    pub fn params(&self) -> Option<&Value> {
        self.params.as_ref()
    }

    /// The Streamable HTTP session it arrived on (handshake era), if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The method and params.
    pub fn into_parts(self) -> (String, Option<Value>) {
        (self.method, self.params)
    }
}

/// The hook [`ServerBuilder::on_notification`](crate::ServerBuilder::on_notification) sets.
pub(crate) type NotificationHook = Arc<dyn Fn(ClientNotification) + Send + Sync>;

/// Whether the server handles `method` itself (never given to the hook).
pub(crate) fn is_own(method: &str) -> bool {
    method == ferromcp_protocol::method::NOTIFICATIONS_CANCELLED
        || method == ferromcp_protocol::method::NOTIFICATIONS_INITIALIZED
}
