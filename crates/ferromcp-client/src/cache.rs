//! A response cache honouring the server's `ttlMs` / `cacheScope` hints.
//!
//! - Key: server identity + protocol version + method + the result-affecting
//!   params (`cursor`, `uri`, ...; `_meta` excluded); each page is
//!   its own entry.
//! - `"private"` entries carry the caller's authorization partition and are
//!   reused only within it; `"public"` ones are shared.
//! - Fresh while `now < received + ttlMs`; absent or zero TTL → not stored;
//!   TTLs are clamped.
//! - `list_changed` / `resources/updated` notifications drop the matching
//!   entries.
//! - The client never stores results of retries carrying `inputResponses`
//!   or `requestState`, nor `input_required` results.
//!
//! One cache may be shared by several clients (`Arc<ResponseCache>`).
// CACHE-05…CACHE-12, CACHE-05, CACHE-11, CACHE-08, CACHE-07, CACHE-12, CACHE-10, CACHE-06, MRTR-12

use ferromcp_protocol::types::CacheScope;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Default number of entries a cache holds.
pub const DEFAULT_MAX_CACHE_ENTRIES: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    server: String,
    version: String,
    method: String,
    params: String,
    /// `None` for public entries.
    partition: Option<String>,
}

#[derive(Debug)]
struct Entry {
    value: Box<RawValue>,
    expires: Instant,
    uri: Option<String>,
}

/// What identifies one cacheable request, minus the partition.
#[derive(Debug, Clone)]
pub(crate) struct CacheRequest<'a> {
    pub server: &'a str,
    pub version: &'a str,
    pub method: &'a str,
    /// The params without `_meta`, serialized.
    pub params: String,
    /// `params.uri` of a `resources/read`.
    pub uri: Option<String>,
}

impl CacheRequest<'_> {
    fn key(&self, partition: Option<&str>) -> Key {
        Key {
            server: self.server.to_owned(),
            version: self.version.to_owned(),
            method: self.method.to_owned(),
            params: self.params.clone(),
            partition: partition.map(str::to_owned),
        }
    }
}

/// The response cache.
#[derive(Debug)]
pub struct ResponseCache {
    entries: Mutex<HashMap<Key, Entry>>,
    max_ttl: Duration,
    max_entries: usize,
}

impl Default for ResponseCache {
    fn default() -> Self {
        Self::new(
            crate::limits::DEFAULT_MAX_CACHE_TTL,
            DEFAULT_MAX_CACHE_ENTRIES,
        )
    }
}

impl ResponseCache {
    /// A cache clamping TTLs to `max_ttl` and holding at most `max_entries`.
    pub fn new(max_ttl: Duration, max_entries: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            max_ttl,
            max_entries,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Number of entries (fresh or not).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Drops everything.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// A fresh entry for `req`: the caller's private one first, then a
    /// public one.
    pub(crate) fn get(&self, req: &CacheRequest<'_>, partition: &str) -> Option<Box<RawValue>> {
        let now = Instant::now();
        let mut map = self.lock();
        for key in [req.key(Some(partition)), req.key(None)] {
            match map.get(&key) {
                Some(e) if now < e.expires => return Some(e.value.clone()),
                Some(_) => {
                    map.remove(&key);
                }
                None => {}
            }
        }
        None
    }

    // CACHE-07
    /// Stores a complete result with its hints; a missing or zero TTL
    /// stores nothing.
    pub(crate) fn put(
        &self,
        req: &CacheRequest<'_>,
        partition: &str,
        value: &RawValue,
        ttl_ms: Option<u64>,
        scope: Option<CacheScope>,
    ) {
        let ttl = Duration::from_millis(ttl_ms.unwrap_or(0)).min(self.max_ttl);
        if ttl.is_zero() || self.max_entries == 0 {
            return;
        }
        let now = Instant::now();
        let Some(expires) = now.checked_add(ttl) else {
            return;
        };
        // A missing scope is treated as private, the safe reading.
        let key = match scope {
            Some(CacheScope::Public) => req.key(None),
            _ => req.key(Some(partition)),
        };
        let mut map = self.lock();
        if map.len() >= self.max_entries {
            map.retain(|_, e| now < e.expires);
            if map.len() >= self.max_entries {
                if let Some(k) = map
                    .iter()
                    .min_by_key(|(_, e)| e.expires)
                    .map(|(k, _)| k.clone())
                {
                    map.remove(&k);
                }
            }
        }
        map.insert(
            key,
            Entry {
                value: value.to_owned(),
                expires,
                uri: req.uri.clone(),
            },
        );
    }

    // CACHE-10, CACHE-11
    /// Drops every entry of `methods` for `server` (a list_changed
    /// notification; a bad cursor drops all pages).
    pub(crate) fn invalidate_methods(&self, server: &str, methods: &[&str]) {
        self.lock()
            .retain(|k, _| !(k.server == server && methods.contains(&k.method.as_str())));
    }

    /// Drops cached reads of `uri` for `server` (`notifications/resources/updated`).
    pub(crate) fn invalidate_resource(&self, server: &str, uri: &str) {
        self.lock().retain(|k, e| {
            !(k.server == server && k.method == "resources/read" && e.uri.as_deref() == Some(uri))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap_or_else(|_| Box::<RawValue>::default())
    }

    fn req(params: &str) -> CacheRequest<'static> {
        CacheRequest {
            server: "http://s",
            version: "2026-07-28",
            method: "tools/list",
            params: params.to_owned(),
            uri: None,
        }
    }

    #[test]
    fn key_includes_params_and_partition() {
        // CACHE-05, CACHE-08
        let c = ResponseCache::default();
        let v = raw(r#"{"tools":[]}"#);
        c.put(
            &req("{}"),
            "alice",
            &v,
            Some(60_000),
            Some(CacheScope::Private),
        );
        assert!(c.get(&req("{}"), "alice").is_some());
        assert!(c.get(&req("{}"), "bob").is_none());
        assert!(c.get(&req(r#"{"cursor":"x"}"#), "alice").is_none());
        c.put(
            &req(r#"{"cursor":"x"}"#),
            "alice",
            &v,
            Some(60_000),
            Some(CacheScope::Public),
        );
        assert!(c.get(&req(r#"{"cursor":"x"}"#), "bob").is_some());
    }

    #[test]
    fn zero_or_missing_ttl_is_not_stored() {
        // CACHE-07
        let c = ResponseCache::default();
        let v = raw("{}");
        c.put(&req("{}"), "p", &v, Some(0), Some(CacheScope::Public));
        c.put(&req("{}"), "p", &v, None, Some(CacheScope::Public));
        assert!(c.is_empty());
    }

    #[test]
    fn expiry_and_invalidation() {
        // CACHE-10
        let c = ResponseCache::new(Duration::from_millis(1), 8);
        let v = raw("{}");
        c.put(
            &req("{}"),
            "p",
            &v,
            Some(10_000_000),
            Some(CacheScope::Public),
        );
        std::thread::sleep(Duration::from_millis(5));
        assert!(c.get(&req("{}"), "p").is_none(), "TTL clamped to 1 ms");
        let c = ResponseCache::default();
        c.put(&req("{}"), "p", &v, Some(60_000), Some(CacheScope::Public));
        c.invalidate_methods("http://other", &["tools/list"]);
        assert!(c.get(&req("{}"), "p").is_some());
        c.invalidate_methods("http://s", &["tools/list"]);
        assert!(c.get(&req("{}"), "p").is_none());
        let mut r = req(r#"{"uri":"a://b"}"#);
        r.method = "resources/read";
        r.uri = Some("a://b".into());
        c.put(&r, "p", &v, Some(60_000), None);
        assert!(c.get(&r, "p").is_some());
        c.invalidate_resource("http://s", "a://b");
        assert!(c.get(&r, "p").is_none());
    }

    #[test]
    fn bounded_entries() {
        let c = ResponseCache::new(Duration::from_secs(60), 2);
        let v = raw("{}");
        for i in 0..5 {
            c.put(
                &req(&format!("{{\"cursor\":\"{i}\"}}")),
                "p",
                &v,
                Some(60_000),
                None,
            );
        }
        assert_eq!(c.len(), 2);
    }
}
