//! The caching hints of the gateway's own lists, from its upstreams'.
//!
//! A list the gateway answers is as fresh as the least fresh upstream
//! listing it was made of, so its `ttlMs` is the smallest time left of
//! every upstream's smallest list `ttlMs`, and it is `public` only when
//! every upstream said `public` and no per-scope policy filters the list
//! per caller. Anything that cannot be vouched for gives the server's
//! default, `ttlMs: 0` and `cacheScope: "private"`:
//!
//! - an upstream not connected (its items may appear any moment), not
//!   listed yet, or one of whose pages had `ttlMs` 0 or none;
//! - `scopes` configured on any upstream (lists differ per caller);
//! - a result with `nextCursor` (one page of several: every page of a list
//!   must have one scope, and a later page cannot be told from a whole
//!   list here), and a gateway whose server builder paginates;
//! - a result that carries no hints (a handshake-era answer).
// CACHE-01, CACHE-03, CACHE-04

use crate::aggregate::Aggregate;
use crate::scopes::ScopePolicy;
use ferromcp_protocol::types::{CacheHint, CacheScope};
use ferromcp_server::middleware::{Next, RpcLayer, RpcRequest, RpcResponse, RpcService};
use serde_json::Value;
use std::sync::{Arc, OnceLock};

/// The list methods whose hints come from the upstreams'.
const LISTS: [&str; 4] = [
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
];

/// The [`RpcLayer`] setting the hints of the gateway's list answers.
#[derive(Clone)]
pub(crate) struct ListHintLayer {
    agg: Arc<OnceLock<Arc<Aggregate>>>,
    policy: ScopePolicy,
}

impl ListHintLayer {
    pub(crate) fn new(agg: Arc<OnceLock<Arc<Aggregate>>>, policy: ScopePolicy) -> Self {
        Self { agg, policy }
    }

    /// The hint a list answer may carry now.
    fn hint(&self) -> CacheHint {
        if !self.policy.is_empty() {
            return CacheHint::UNCACHED;
        }
        match self.agg.get() {
            Some(agg) => agg.list_hint(),
            None => CacheHint::UNCACHED,
        }
    }
}

impl RpcLayer for ListHintLayer {
    fn layer(&self, inner: Next) -> Arc<dyn RpcService> {
        Arc::new(SetHints {
            hints: self.clone(),
            next: inner,
        })
    }
}

struct SetHints {
    hints: ListHintLayer,
    next: Next,
}

impl RpcService for SetHints {
    fn call(&self, req: RpcRequest) -> ferromcp_server::BoxFuture<RpcResponse> {
        let hints = self.hints.clone();
        let next = self.next.clone();
        Box::pin(async move {
            if !LISTS.contains(&req.method()) {
                return next.run(req).await;
            }
            let answer = next.run(req).await;
            let hint = hints.hint();
            if hint == CacheHint::UNCACHED {
                return answer;
            }
            answer.map_result(|r| set(r, hint))
        })
    }
}

/// Puts `hint` on a complete, single-page list result that has hints.
fn set(r: &mut Value, hint: CacheHint) {
    let Some(o) = r.as_object_mut() else { return };
    let complete = o
        .get("resultType")
        .is_none_or(|t| t.as_str() == Some("complete"));
    if !complete || o.contains_key("nextCursor") || !o.contains_key("ttlMs") {
        return;
    }
    o.insert("ttlMs".into(), Value::from(hint.ttl_ms));
    let scope = match hint.scope {
        CacheScope::Public => "public",
        _ => "private",
    };
    o.insert("cacheScope".into(), Value::from(scope));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_complete_single_pages_with_hints_get_them() {
        let hint = CacheHint {
            ttl_ms: 500,
            scope: CacheScope::Public,
        };
        let mut r =
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"});
        set(&mut r, hint);
        assert_eq!(
            (&r["ttlMs"], &r["cacheScope"]),
            (&json!(500), &json!("public"))
        );
        for mut r in [
            json!({"tools": [], "nextCursor": "2", "ttlMs": 0, "cacheScope": "private"}),
            json!({"tools": []}),
            json!({"resultType": "input_required", "ttlMs": 0}),
        ] {
            let before = r.clone();
            set(&mut r, hint);
            assert_eq!(r, before);
        }
    }
}
