//! The handshake: `initialize`, `notifications/initialized` and `ping`.
//! None of these exist on the modern wire.
// LEGACY-01…06, BASE-12

use super::{ClientCapabilities, Implementation, Meta, ServerCapabilities};
use serde::{Deserialize, Serialize};

// LEGACY-01
/// `initialize` params.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The version the client offers, as sent; may be one this crate does not know.
    pub protocol_version: String,
    /// What the client supports for the session.
    pub capabilities: ClientCapabilities,
    /// The client's self-description.
    pub client_info: Implementation,
}

// LEGACY-02
/// `initialize` result. Handshake-era: no `resultType`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose.
    pub protocol_version: String,
    /// What the server supports for the session.
    pub capabilities: ServerCapabilities,
    /// The server's self-description.
    pub server_info: Implementation,
    /// Guidance for the model about this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `notifications/initialized` params.
pub type InitializedNotificationParams = super::NotificationParams;

/// `ping` params.
pub type PingRequestParams = super::EmptyParams;
