//! `gateway.toolMode`: how the aggregated tools are offered, and the
//! names and bounds of search mode's meta-tools.

/// How the gateway offers its upstreams' tools (`gateway.toolMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolMode {
    /// Every permitted tool in `tools/list` (`"all"`, the default).
    #[default]
    All,
    /// Only the `search_tools` and `call_tool` meta-tools (`"search"`).
    Search,
}

/// The meta-tools of search mode.
pub(crate) const META_TOOLS: [&str; 2] = [SEARCH_TOOLS, CALL_TOOL];
pub(crate) const SEARCH_TOOLS: &str = "search_tools";
pub(crate) const CALL_TOOL: &str = "call_tool";

/// Default of `gateway.maxSearchResults`.
pub(crate) const DEFAULT_MAX_RESULTS: usize = 20;
/// The largest `gateway.maxSearchResults` accepted.
pub(crate) const MAX_RESULTS_LIMIT: usize = 100;
/// How many tools `search_tools` returns when no `limit` is given (at
/// most `gateway.maxSearchResults`).
pub const DEFAULT_LIMIT: usize = 5;
