//! Roots: `roots/list`, asked through MRTR on the modern wire and
//! as a server→client request on handshake revisions, plus the legacy
//! `notifications/roots/list_changed`.
// ROOTS-*, LEGACY-21

use super::Meta;
use serde::{Deserialize, Serialize};

/// `roots/list` params: nothing besides `_meta`.
pub type ListRootsRequestParams = super::EmptyParams;

// ROOTS-02
/// A root the client exposes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Root {
    /// A root at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            ..Self::default()
        }
    }
}

// RESULT-05
/// The client's answer to `roots/list`. An input response on the modern
/// wire, so it carries no `resultType`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
    /// Open metadata (handshake revisions).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}
