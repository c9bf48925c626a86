//! `server/discover` (DISC-*, VER-04).

use super::{CacheScope, Meta, ResultType, ServerCapabilities};
use serde::{Deserialize, Serialize};

/// `server/discover` params: nothing besides the envelope (DISC-01).
pub type DiscoverRequestParams = super::EmptyParams;

/// `server/discover` result (DISC-02; cacheable).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// `resultType`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Versions the server serves, possibly including handshake ones (DISC-04).
    /// Raw strings: a client must cope with versions it does not know.
    pub supported_versions: Vec<String>,
    /// What the server offers (DISC-05).
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
    /// Whether `supportedVersions` names at least one modern revision this
    /// crate knows (DISC-06: otherwise it is a legacy advertisement).
    pub fn lists_modern_version(&self) -> bool {
        self.supported_versions
            .iter()
            .any(|v| crate::version::ProtocolVersion::parse(v).is_some_and(|p| p.is_modern()))
    }
}
