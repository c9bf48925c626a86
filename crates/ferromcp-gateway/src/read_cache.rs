//! The gateway's cache of `resources/read` results, by the upstream's
//! hints.
//!
//! - Stored only when the upstream said `ttlMs > 0` (0, negative or absent:
//!   never), for at most a day, and only complete results (an
//!   `input_required` one never is).
//! - `cacheScope: "public"` (said explicitly): one entry served to every
//!   caller until it is stale. Anything else is private: kept per caller's
//!   authorization context (the verified token's subject, client id and
//!   scopes) and served only to that same context; with no verified token
//!   (no inbound auth, stdio) a private result is not stored at all.
//! - A hit carries the time that is left of the upstream's `ttlMs`, never
//!   more, and the upstream's scope.
//! - Bounded by entries and by bytes (the result's JSON); the soonest to
//!   expire goes first. An upstream's entries go when it announces an
//!   update of the URI (that one) or a list change, when it is re-listed,
//!   lost, reloaded or removed.
// CACHE-04, CACHE-05, CACHE-07, CACHE-08, CACHE-10, MRTR-12

use crate::cache::CacheConfig;
use ferromcp_protocol::Principal;
use ferromcp_protocol::types::{CacheScope, ReadResourceResult, ResultType};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The longest `ttlMs` taken at its word (the client crate's clamp).
const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    upstream: String,
    uri: String,
    /// `None` for a public entry.
    partition: Option<String>,
}

#[derive(Debug)]
struct Entry {
    value: ReadResourceResult,
    bytes: usize,
    expires: Instant,
}

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<Key, Entry>,
    bytes: usize,
}

impl Inner {
    fn remove(&mut self, k: &Key) {
        if let Some(e) = self.map.remove(k) {
            self.bytes = self.bytes.saturating_sub(e.bytes);
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&Key, &Entry) -> bool) {
        let gone: Vec<Key> = self
            .map
            .iter()
            .filter(|(k, e)| !keep(k, e))
            .map(|(k, _)| k.clone())
            .collect();
        for k in gone {
            self.remove(&k);
        }
    }
}

/// The authorization context a private entry belongs to: everything the
/// verified token says about the caller, so that two tokens that could be
/// told apart by any policy never share an entry.
pub(crate) fn partition(p: Option<&Principal>) -> Option<String> {
    let p = p?;
    let mut scopes = p.scopes.clone();
    scopes.sort();
    scopes.dedup();
    Some(serde_json::json!([p.subject, p.client_id, scopes]).to_string())
}

/// The `resources/read` cache.
#[derive(Debug)]
pub(crate) struct ReadCache {
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Inner>,
    /// Bumped by every invalidation: a read that began before one is not
    /// stored (it may hold what the invalidation was about).
    epoch: AtomicU64,
}

impl ReadCache {
    pub(crate) fn new(c: &CacheConfig) -> Self {
        Self {
            max_entries: c.max_entries(),
            max_bytes: c.max_bytes(),
            inner: Mutex::new(Inner::default()),
            epoch: AtomicU64::new(0),
        }
    }

    /// Taken before a read is sent; given back to [`ReadCache::put`].
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh result for `uri` of `upstream`: the caller's private entry
    /// first, then a public one; its `ttlMs` is what is left.
    pub(crate) fn get(
        &self,
        upstream: &str,
        uri: &str,
        partition: Option<&str>,
    ) -> Option<ReadResourceResult> {
        let now = Instant::now();
        let mut inner = self.lock();
        let mut keys = vec![];
        if let Some(p) = partition {
            keys.push(key(upstream, uri, Some(p)));
        }
        keys.push(key(upstream, uri, None));
        for k in keys {
            let left = match inner.map.get(&k) {
                Some(e) => e.expires.saturating_duration_since(now),
                None => continue,
            };
            // Whole milliseconds left, rounded down: never more than the
            // upstream's promise.
            let left_ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
            if left_ms == 0 {
                inner.remove(&k);
                continue;
            }
            if let Some(e) = inner.map.get(&k) {
                let mut v = e.value.clone();
                v.ttl_ms = Some(left_ms);
                return Some(v);
            }
        }
        None
    }

    /// Stores `r`, read from `upstream` for a caller in `partition`, if
    /// its hints allow it and nothing was invalidated since `epoch`.
    pub(crate) fn put(
        &self,
        upstream: &str,
        uri: &str,
        partition: Option<&str>,
        r: &ReadResourceResult,
        epoch: u64,
    ) {
        // MRTR-12: an interim result is never cached.
        if !matches!(r.result_type, None | Some(ResultType::Complete)) {
            return;
        }
        // CACHE-07: 0, absent or negative (`typed` made that 0) → stale.
        let ttl = Duration::from_millis(r.ttl_ms.unwrap_or(0)).min(MAX_TTL);
        if ttl.is_zero() || self.max_entries == 0 {
            return;
        }
        // CACHE-08: a missing scope is private, the safe reading.
        let partition = match r.cache_scope {
            Some(CacheScope::Public) => None,
            _ => match partition {
                Some(p) => Some(p),
                None => return,
            },
        };
        let bytes = serde_json::to_vec(r).map(|v| v.len()).unwrap_or(usize::MAX);
        if bytes > self.max_bytes {
            return;
        }
        let now = Instant::now();
        let k = key(upstream, uri, partition);
        let mut inner = self.lock();
        if self.epoch() != epoch {
            return;
        }
        inner.remove(&k);
        let full = |i: &Inner| i.map.len() >= self.max_entries || i.bytes + bytes > self.max_bytes;
        if full(&inner) {
            inner.retain(|_, e| now < e.expires);
        }
        while full(&inner) {
            let Some(soonest) = inner
                .map
                .iter()
                .min_by_key(|(_, e)| e.expires)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            inner.remove(&soonest);
        }
        inner.bytes += bytes;
        inner.map.insert(
            k,
            Entry {
                value: r.clone(),
                bytes,
                expires: now + ttl,
            },
        );
    }

    /// Drops every entry of `uri` of `upstream`.
    pub(crate) fn drop_uri(&self, upstream: &str, uri: &str) {
        let mut inner = self.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        inner.retain(|k, _| !(k.upstream == upstream && k.uri == uri));
    }

    /// Drops every entry of `upstream`.
    pub(crate) fn drop_upstream(&self, upstream: &str) {
        let mut inner = self.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        inner.retain(|k, _| k.upstream != upstream);
    }

    #[cfg(test)]
    fn len_and_bytes(&self) -> (usize, usize) {
        let i = self.lock();
        (i.map.len(), i.bytes)
    }
}

fn key(upstream: &str, uri: &str, partition: Option<&str>) -> Key {
    Key {
        upstream: upstream.to_owned(),
        uri: uri.to_owned(),
        partition: partition.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache;
    use serde_json::json;

    fn result(text: &str, ttl: Option<u64>, scope: Option<&str>) -> ReadResourceResult {
        let mut v = json!({"contents": [{"uri": "r://x", "text": text}]});
        if let Some(t) = ttl {
            v["ttlMs"] = json!(t);
        }
        if let Some(s) = scope {
            v["cacheScope"] = json!(s);
        }
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    fn text(r: &ReadResourceResult) -> String {
        serde_json::to_value(&r.contents).unwrap_or_default()[0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn cache(json: serde_json::Value) -> ReadCache {
        ReadCache::new(&cache::parse(&json).unwrap_or_else(|e| panic!("{e}")))
    }

    #[test]
    fn public_is_shared_private_is_not_and_zero_is_never_stored() {
        let c = cache(json!({}));
        let (alice, bob) = (Some("alice"), Some("bob"));
        c.put(
            "u",
            "r://pub",
            alice,
            &result("p", Some(60_000), Some("public")),
            0,
        );
        let hit = c.get("u", "r://pub", bob).map(|r| (text(&r), r.ttl_ms));
        assert!(
            hit.as_ref()
                .is_some_and(|(t, ttl)| t == "p" && ttl.is_some_and(|t| t <= 60_000 && t > 0)),
            "{hit:?}"
        );
        assert!(c.get("u", "r://pub", None).is_some());
        assert!(
            c.get("other", "r://pub", None).is_none(),
            "keyed by upstream"
        );
        // Private: only the same partition; without one, not stored.
        c.put(
            "u",
            "r://priv",
            alice,
            &result("a", Some(60_000), Some("private")),
            0,
        );
        c.put(
            "u",
            "r://noscope",
            alice,
            &result("a", Some(60_000), None),
            0,
        );
        assert!(c.get("u", "r://priv", alice).is_some());
        assert!(c.get("u", "r://priv", bob).is_none());
        assert!(c.get("u", "r://priv", None).is_none());
        assert!(c.get("u", "r://noscope", bob).is_none());
        assert!(c.get("u", "r://noscope", alice).is_some());
        c.put(
            "u",
            "r://anon",
            None,
            &result("x", Some(60_000), Some("private")),
            0,
        );
        assert!(c.get("u", "r://anon", None).is_none());
        // ttlMs 0 or absent: never stored.
        c.put(
            "u",
            "r://zero",
            alice,
            &result("z", Some(0), Some("public")),
            0,
        );
        c.put(
            "u",
            "r://none",
            alice,
            &result("n", None, Some("public")),
            0,
        );
        assert!(c.get("u", "r://zero", alice).is_none());
        assert!(c.get("u", "r://none", alice).is_none());
        // MRTR-12: an interim result is never stored.
        let mut interim = result("i", Some(60_000), Some("public"));
        interim.result_type = Some(ResultType::InputRequired);
        c.put("u", "r://interim", alice, &interim, 0);
        assert!(c.get("u", "r://interim", alice).is_none());
        // Invalidation by URI and by upstream.
        c.drop_uri("u", "r://pub");
        assert!(c.get("u", "r://pub", alice).is_none());
        assert!(c.get("u", "r://priv", alice).is_some());
        c.drop_upstream("u");
        assert_eq!(c.len_and_bytes(), (0, 0));
        // A read that began before an invalidation is not stored.
        let before = c.epoch();
        c.drop_uri("u", "r://late");
        c.put(
            "u",
            "r://late",
            None,
            &result("old", Some(60_000), Some("public")),
            before,
        );
        assert!(c.get("u", "r://late", None).is_none());
        c.put(
            "u",
            "r://late",
            None,
            &result("new", Some(60_000), Some("public")),
            c.epoch(),
        );
        assert!(c.get("u", "r://late", None).is_some());
    }

    #[test]
    fn entries_and_bytes_are_bounded() {
        let one = serde_json::to_vec(&result("0", Some(60_000), Some("public")))
            .map(|v| v.len())
            .unwrap_or_default();
        let c = cache(json!({"maxEntries": 3, "maxBytes": one * 10}));
        for i in 0..10 {
            c.put(
                "u",
                &format!("r://{i}"),
                None,
                &result(&i.to_string(), Some(60_000 + i), Some("public")),
                0,
            );
        }
        let (n, bytes) = c.len_and_bytes();
        assert_eq!(n, 3);
        assert_eq!(bytes, one * 3);
        // The soonest to expire went first: the last three stay.
        assert!(c.get("u", "r://9", None).is_some() && c.get("u", "r://6", None).is_none());
        let c = cache(json!({"maxEntries": 100, "maxBytes": one * 2}));
        for i in 0..5 {
            c.put(
                "u",
                &format!("r://{i}"),
                None,
                &result(&i.to_string(), Some(60_000 + i), Some("public")),
                0,
            );
        }
        assert_eq!(c.len_and_bytes(), (2, one * 2));
        let big = result(&"x".repeat(one * 3), Some(60_000), Some("public"));
        c.put("u", "r://big", None, &big, 0);
        assert!(
            c.get("u", "r://big", None).is_none(),
            "larger than maxBytes"
        );
        let off = cache(json!({"maxEntries": 0}));
        off.put(
            "u",
            "r://0",
            None,
            &result("0", Some(60_000), Some("public")),
            0,
        );
        assert_eq!(off.len_and_bytes(), (0, 0));
    }
}
