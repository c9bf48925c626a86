//! Shapes shared by many methods: empty and notification params, pagination,
//! the empty result, cache hints, and traits through which a server stamps
//! `resultType`, `_meta` and cache hints on any result without knowing its
//! concrete type.
// RESULT-01, META-08, CACHE-01

use super::{CacheScope, Cursor, Implementation, Meta, ResultType};
use crate::meta::SERVER_INFO;
use serde::{Deserialize, Serialize};

/// Params of a request that takes nothing besides the `_meta` envelope
/// (`server/discover`, `ping`, `roots/list`). Written as `{}`; any member is
/// ignored when read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct EmptyParams {}

/// Params of a notification that carries nothing but `_meta`
/// (`notifications/*/list_changed`, `notifications/initialized`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NotificationParams {
    // META-11
    /// Open metadata; on a listen stream it carries the subscription id.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

// PAGE-01
/// Params of a paginated list request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// Opaque cursor from a previous page's `nextCursor`; absent for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
}

/// A result with no content (`ping`, `logging/setLevel`,
/// `resources/subscribe`, `resources/unsubscribe`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmptyResult {
    /// `resultType` (modern wire only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Open metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

// CACHE-01
/// Caching hints of a cacheable result: `ttlMs` and `cacheScope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheHint {
    /// Freshness lifetime in milliseconds; `0` means stale immediately.
    pub ttl_ms: u64,
    /// Who may share the cached result.
    pub scope: CacheScope,
}

impl CacheHint {
    // CACHE-12
    /// `ttlMs: 0, cacheScope: "private"`: the conservative default.
    pub const UNCACHED: CacheHint = CacheHint {
        ttl_ms: 0,
        scope: CacheScope::Private,
    };
}

impl Default for CacheHint {
    fn default() -> Self {
        Self::UNCACHED
    }
}

/// Members every result type has: `resultType` and `_meta`.
pub trait McpResult {
    /// The `resultType` member, if set.
    fn result_type(&self) -> Option<&ResultType>;
    /// Sets `resultType`.
    fn set_result_type(&mut self, result_type: Option<ResultType>);
    /// The `_meta` object, if any.
    fn meta(&self) -> Option<&Meta>;
    /// The `_meta` object, created empty when absent.
    fn meta_mut(&mut self) -> &mut Meta;

    // RESULT-01
    /// Puts `resultType: "complete"` on a result lacking one.
    fn ensure_result_type(&mut self) {
        if self.result_type().is_none() {
            self.set_result_type(Some(ResultType::Complete));
        }
    }

    // META-08
    /// Adds `_meta["io.modelcontextprotocol/serverInfo"]` unless the result
    /// already has one (a handler-provided value wins).
    fn stamp_server_info(&mut self, info: &Implementation) {
        if self.meta().is_some_and(|m| m.contains_key(SERVER_INFO)) {
            return;
        }
        if let Ok(v) = serde_json::to_value(info) {
            self.meta_mut().insert(SERVER_INFO.to_owned(), v);
        }
    }
}

// CACHE-01
/// A result that carries caching hints: `server/discover`, the
/// four lists and `resources/read`.
pub trait CacheableResult: McpResult {
    /// `ttlMs`, if set.
    fn ttl_ms(&self) -> Option<u64>;
    /// `cacheScope`, if set.
    fn cache_scope(&self) -> Option<CacheScope>;
    /// Sets both hints.
    fn set_cache_hint(&mut self, hint: CacheHint);

    /// Both hints, when both are present.
    fn cache_hint(&self) -> Option<CacheHint> {
        Some(CacheHint {
            ttl_ms: self.ttl_ms()?,
            scope: self.cache_scope()?,
        })
    }

    // CACHE-12
    /// Fills hints from `hint` when the handler set none.
    fn fill_cache_hint(&mut self, hint: CacheHint) {
        if self.ttl_ms().is_none() || self.cache_scope().is_none() {
            let h = CacheHint {
                ttl_ms: self.ttl_ms().unwrap_or(hint.ttl_ms),
                scope: self.cache_scope().unwrap_or(hint.scope),
            };
            self.set_cache_hint(h);
        }
    }
}

// PAGE-01
/// A paginated result.
pub trait PaginatedResult {
    /// The cursor of the next page; `None` at the end.
    fn next_cursor(&self) -> Option<&str>;
}

macro_rules! impl_result {
    ($($t:ty),* $(,)?) => {$(
        impl McpResult for $t {
            fn result_type(&self) -> Option<&ResultType> {
                self.result_type.as_ref()
            }
            fn set_result_type(&mut self, result_type: Option<ResultType>) {
                self.result_type = result_type;
            }
            fn meta(&self) -> Option<&Meta> {
                self.meta.as_ref()
            }
            fn meta_mut(&mut self) -> &mut Meta {
                self.meta.get_or_insert_with(Meta::new)
            }
        }
    )*};
}

macro_rules! impl_cacheable {
    ($($t:ty),* $(,)?) => {$(
        impl CacheableResult for $t {
            fn ttl_ms(&self) -> Option<u64> {
                self.ttl_ms
            }
            fn cache_scope(&self) -> Option<CacheScope> {
                self.cache_scope
            }
            fn set_cache_hint(&mut self, hint: CacheHint) {
                self.ttl_ms = Some(hint.ttl_ms);
                self.cache_scope = Some(hint.scope);
            }
        }
    )*};
}

macro_rules! impl_paginated {
    ($($t:ty),* $(,)?) => {$(
        impl PaginatedResult for $t {
            fn next_cursor(&self) -> Option<&str> {
                self.next_cursor.as_deref()
            }
        }
    )*};
}

use super::skills::{GetSkillResult, ListSkillsResult, ReadDirectoryResult};
use super::tasks::{CreateTaskResult, GetTaskResult};
use super::{
    CallToolResult, CompleteResult, DiscoverResult, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, ReadResourceResult,
    SubscriptionsListenResult,
};

impl_result!(
    EmptyResult,
    DiscoverResult,
    ListToolsResult,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    ListPromptsResult,
    GetPromptResult,
    CompleteResult,
    SubscriptionsListenResult,
    CreateTaskResult,
    GetTaskResult,
    ListSkillsResult,
    GetSkillResult,
    ReadDirectoryResult,
);

impl_cacheable!(
    DiscoverResult,
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    ListPromptsResult,
    ListSkillsResult,
    GetSkillResult,
    ReadDirectoryResult,
);

impl_paginated!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    ListSkillsResult,
    ReadDirectoryResult,
);
