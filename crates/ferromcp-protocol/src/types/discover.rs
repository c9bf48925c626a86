//! `server/discover`.
// DISC-*, VER-04

use super::{CacheScope, Meta, ResultType, ServerCapabilities};
use serde::{Deserialize, Serialize};

// DISC-01
/// `server/discover` params: nothing besides the envelope.
pub type DiscoverRequestParams = super::EmptyParams;

// DISC-02
/// `server/discover` result (cacheable).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// `resultType`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    // DISC-04
    /// Versions the server serves, possibly including handshake ones.
    /// Raw strings: a client must cope with versions it does not know.
    pub supported_versions: Vec<String>,
    // DISC-05
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Guidance for the model about this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Cache lifetime in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Cache scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Metadata; SHOULD carry `io.modelcontextprotocol/serverInfo`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl DiscoverResult {
    // DISC-06
    /// Whether `supportedVersions` names at least one modern revision this
    /// crate knows (otherwise it is a legacy advertisement).
    pub fn lists_modern_version(&self) -> bool {
        self.supported_versions
            .iter()
            .any(|v| crate::version::ProtocolVersion::parse(v).is_some_and(|p| p.is_modern()))
    }
}
