//! The default caching hints of cacheable methods.

use ferromcp_protocol::types::CacheHint;

// CACHE-12
/// Caching hints per cacheable method, used when a handler sets none.
#[derive(Debug, Clone)]
pub struct CacheHints {
    /// `server/discover`.
    pub discover: CacheHint,
    /// `tools/list`.
    pub tools_list: CacheHint,
    /// `prompts/list`.
    pub prompts_list: CacheHint,
    /// `resources/list`.
    pub resources_list: CacheHint,
    /// `resources/templates/list`.
    pub templates_list: CacheHint,
    /// `resources/read`.
    pub resources_read: CacheHint,
}

impl Default for CacheHints {
    /// Everything `{ttlMs: 0, cacheScope: "private"}`: always correct, never
    /// shared (the Python SDK's default).
    fn default() -> Self {
        Self {
            discover: CacheHint::UNCACHED,
            tools_list: CacheHint::UNCACHED,
            prompts_list: CacheHint::UNCACHED,
            resources_list: CacheHint::UNCACHED,
            templates_list: CacheHint::UNCACHED,
            resources_read: CacheHint::UNCACHED,
        }
    }
}
