//! Opaque tokens checked by OAuth 2.0 Token Introspection (RFC 7662).

use super::fetch::{HttpFetch, HyperFetch};
use super::metadata::ResourceUri;
use super::verifier::{
    BoxFuture, ClaimRules, TokenVerifier, VerifiedToken, VerifyError, check_claims, now_unix,
};
use super::{ConfigError, as_metadata};
use crate::core::form;
use bytes::Bytes;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// AUTH-21
/// Verifies tokens by POSTing them to the authorization server's
/// introspection endpoint with this resource server's client credentials
/// (HTTP Basic, RFC 6749 §2.3.1).
///
/// A token is accepted only when the response says `"active": true` and
/// its `aud` names this resource (RFC 8707; a response without
/// `aud` is refused unless [`IntrospectionVerifierBuilder::allow_missing_audience`]),
/// `exp`/`nbf`/`iat` hold with the clock skew, and `iss` matches when an
/// issuer is configured.
///
/// Positive results are cached under a SHA-256 of the token (never the
/// token itself) until the earlier of `exp` and the cache TTL; the cache is
/// bounded. The token is sent only to the configured endpoint.
pub struct IntrospectionVerifier {
    endpoint: String,
    authorization: String,
    rules: ClaimRules,
    cache_ttl: Duration,
    max_entries: usize,
    fetch: Arc<dyn HttpFetch>,
    cache: Mutex<HashMap<[u8; 32], (VerifiedToken, Instant)>>,
}

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.endpoint)
            .field("audiences", &self.rules.audiences)
            .finish_non_exhaustive()
    }
}

/// Builder for [`IntrospectionVerifier`].
pub struct IntrospectionVerifierBuilder {
    endpoint: String,
    client_id: String,
    client_secret: String,
    audiences: Vec<String>,
    issuer: Option<String>,
    require_audience: bool,
    leeway: Duration,
    cache_ttl: Duration,
    max_entries: usize,
    fetch: Option<Arc<dyn HttpFetch>>,
}

impl std::fmt::Debug for IntrospectionVerifierBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifierBuilder")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// Default cap on how long an introspection result is reused: 60 s.
    pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60);
    /// Default number of cached results: 10 000.
    pub const DEFAULT_MAX_CACHE_ENTRIES: usize = 10_000;
    /// Default clock skew tolerated on `exp`, `nbf` and `iat`: 60 s.
    pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(60);

    /// A builder for `endpoint`, authenticating as `client_id` /
    /// `client_secret`, accepting tokens for `resource`.
    pub fn builder(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        resource: &ResourceUri,
    ) -> IntrospectionVerifierBuilder {
        IntrospectionVerifierBuilder {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            audiences: vec![resource.as_str().to_owned()],
            issuer: None,
            require_audience: true,
            leeway: Self::DEFAULT_CLOCK_SKEW,
            cache_ttl: Self::DEFAULT_CACHE_TTL,
            max_entries: Self::DEFAULT_MAX_CACHE_ENTRIES,
            fetch: None,
        }
    }

    /// Cached results currently held.
    pub fn cached(&self) -> usize {
        self.cache.lock().map(|c| c.len()).unwrap_or(0)
    }
}

impl IntrospectionVerifierBuilder {
    /// Require `iss` in the response to equal `issuer`.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Also accept tokens whose `aud` names `audience`.
    pub fn also_accept_audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    // AUTH-21
    /// Accept active tokens whose response has no `aud` at all (some
    /// authorization servers omit it). Off by default: without an audience
    /// the token may have been minted for another resource.
    pub fn allow_missing_audience(mut self, allow: bool) -> Self {
        self.require_audience = !allow;
        self
    }

    /// Clock skew tolerated on `exp`, `nbf` and `iat`.
    pub fn clock_skew(mut self, skew: Duration) -> Self {
        self.leeway = skew;
        self
    }

    /// Longest time a result is reused (also bounded by the token's `exp`).
    /// Zero disables caching.
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// Most cached results.
    pub fn max_cache_entries(mut self, max: usize) -> Self {
        self.max_entries = max;
        self
    }

    /// The HTTP client (default: [`HyperFetch`], HTTPS only).
    pub fn fetcher(mut self, fetch: Arc<dyn HttpFetch>) -> Self {
        self.fetch = Some(fetch);
        self
    }

    /// Validates the configuration.
    pub fn build(self) -> Result<IntrospectionVerifier, ConfigError> {
        if self.endpoint.parse::<http::Uri>().is_err() {
            return Err(ConfigError::new(format!(
                "invalid introspection endpoint {:?}",
                self.endpoint
            )));
        }
        let fetch: Arc<dyn HttpFetch> = match self.fetch {
            Some(f) => f,
            None => {
                let f = HyperFetch::new();
                f.check_url(&self.endpoint)
                    .map_err(|e| ConfigError::new(e.to_string()))?;
                Arc::new(f)
            }
        };
        // RFC 6749 §2.3.1: form-encode id and secret, then Basic.
        let credentials = format!(
            "{}:{}",
            form::encode_component(&self.client_id),
            form::encode_component(&self.client_secret)
        );
        let authorization = format!("Basic {}", crate::core::b64::encode(credentials));
        if http::HeaderValue::from_str(&authorization).is_err() {
            return Err(ConfigError::new("client credentials do not form a header"));
        }
        Ok(IntrospectionVerifier {
            endpoint: self.endpoint,
            authorization,
            rules: ClaimRules {
                issuer: self.issuer,
                audiences: self.audiences,
                require_audience: self.require_audience,
                require_expiry: false,
                leeway: self.leeway,
            },
            cache_ttl: self.cache_ttl,
            max_entries: self.max_entries,
            fetch,
            cache: Mutex::new(HashMap::new()),
        })
    }
}

impl IntrospectionVerifier {
    fn cached_result(&self, key: &[u8; 32]) -> Option<VerifiedToken> {
        let mut cache = self.cache.lock().ok()?;
        match cache.get(key) {
            Some((t, until)) if Instant::now() < *until => Some(t.clone()),
            Some(_) => {
                cache.remove(key);
                None
            }
            None => None,
        }
    }

    fn remember(&self, key: [u8; 32], token: &VerifiedToken) {
        if self.cache_ttl.is_zero() || self.max_entries == 0 {
            return;
        }
        let mut ttl = self.cache_ttl;
        if let Some(exp) = token.expires_at {
            ttl = ttl.min(Duration::from_secs(exp.saturating_sub(now_unix())));
        }
        if ttl.is_zero() {
            return;
        }
        let Ok(mut cache) = self.cache.lock() else {
            return;
        };
        if cache.len() >= self.max_entries {
            let now = Instant::now();
            cache.retain(|_, (_, until)| *until > now);
            if cache.len() >= self.max_entries {
                // Still full of live entries: drop an arbitrary one.
                if let Some(k) = cache.keys().next().copied() {
                    cache.remove(&k);
                }
            }
        }
        cache.insert(key, (token.clone(), Instant::now() + ttl));
    }

    async fn introspect(&self, token: &str) -> Result<VerifiedToken, VerifyError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(t) = self.cached_result(&key)
            && t.expires_at
                .is_none_or(|exp| now_unix() < exp.saturating_add(self.rules.leeway.as_secs()))
        {
            return Ok(t);
        }
        let body = format!(
            "token={}&token_type_hint=access_token",
            form::encode_component(token)
        );
        let req = http::Request::post(&self.endpoint)
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::AUTHORIZATION, &self.authorization)
            .body(Bytes::from(body))
            .map_err(|_| VerifyError::unavailable("cannot build the introspection request"))?;
        let resp = self
            .fetch
            .fetch(req)
            .await
            .map_err(|e| VerifyError::unavailable(format!("introspection: {e}")))?;
        if resp.status() != http::StatusCode::OK {
            tracing::warn!(
                status = resp.status().as_u16(),
                "introspection endpoint refused"
            );
            return Err(VerifyError::unavailable(format!(
                "introspection: HTTP {}",
                resp.status().as_u16()
            )));
        }
        let Some(claims) = as_metadata(resp.body()) else {
            return Err(VerifyError::unavailable("introspection: not a JSON object"));
        };
        if claims.get("active") != Some(&Value::Bool(true)) {
            return Err(VerifyError::invalid("token is not active"));
        }
        let t = check_claims(&claims, &self.rules, now_unix())?;
        self.remember(key, &t);
        Ok(t)
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>> {
        Box::pin(self.introspect(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::fetch::FetchError;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Answers every introspection with a fixed JSON body and counts calls.
    struct Canned {
        body: Value,
        calls: AtomicUsize,
        seen: Mutex<Vec<(String, String)>>,
    }

    impl HttpFetch for Canned {
        fn fetch(
            &self,
            request: http::Request<Bytes>,
        ) -> BoxFuture<'_, Result<http::Response<Bytes>, FetchError>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let auth = request
                .headers()
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let body = String::from_utf8_lossy(request.body()).into_owned();
            if let Ok(mut s) = self.seen.lock() {
                s.push((auth, body));
            }
            let out = Bytes::from(self.body.to_string());
            Box::pin(async move { Ok(http::Response::new(out)) })
        }
    }

    fn verifier(body: Value) -> (IntrospectionVerifier, Arc<Canned>) {
        let canned = Arc::new(Canned {
            body,
            calls: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
        });
        let r = ResourceUri::parse("https://rs.example/mcp").unwrap_or_else(|e| panic!("{e}"));
        let v = IntrospectionVerifier::builder(
            "https://as.example/introspect",
            "rs client",
            "s3cr:t",
            &r,
        )
        .issuer("https://as.example")
        .fetcher(canned.clone())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
        (v, canned)
    }

    #[tokio::test]
    async fn active_token_is_accepted_and_cached() {
        let (v, canned) = verifier(serde_json::json!({
            "active": true, "sub": "alice", "scope": "mcp tools", "client_id": "app",
            "aud": ["https://rs.example/mcp"], "iss": "https://as.example", "exp": now_unix() + 600,
        }));
        let t = v.verify("opaque-1").await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((t.subject.as_str(), t.scopes.len()), ("alice", 2));
        let again = v.verify("opaque-1").await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again, t);
        assert_eq!(
            canned.calls.load(Ordering::SeqCst),
            1,
            "second check served from cache"
        );
        assert_eq!(v.cached(), 1);
        let seen = canned.seen.lock().map(|s| s.clone()).unwrap_or_default();
        // Basic over form-encoded credentials; the token form-encoded in the body.
        // base64("rs+client:s3cr%3At"), computed independently.
        let expected = "Basic cnMrY2xpZW50OnMzY3IlM0F0";
        assert_eq!(seen[0].0, expected);
        assert_eq!(seen[0].1, "token=opaque-1&token_type_hint=access_token");
    }

    #[tokio::test]
    async fn inactive_wrong_audience_and_expired_are_rejected() {
        let (v, _) = verifier(serde_json::json!({"active": false}));
        assert_eq!(
            v.verify("t").await,
            Err(VerifyError::invalid("token is not active"))
        );
        let (v, _) = verifier(
            serde_json::json!({"active": "true", "sub": "a", "aud": "https://rs.example/mcp"}),
        );
        assert!(v.verify("t").await.is_err());
        let (v, _) = verifier(
            serde_json::json!({"active": true, "sub": "a", "aud": "https://other/mcp", "iss": "https://as.example"}),
        );
        assert!(matches!(v.verify("t").await, Err(VerifyError::Invalid(_))));
        let (v, _) =
            verifier(serde_json::json!({"active": true, "sub": "a", "iss": "https://as.example"}));
        assert_eq!(
            v.verify("t").await,
            Err(VerifyError::invalid("missing audience"))
        );
        let (v, _) = verifier(
            serde_json::json!({"active": true, "sub": "a", "aud": "https://rs.example/mcp", "iss": "https://as.example", "exp": now_unix() - 3600}),
        );
        assert_eq!(
            v.verify("t").await,
            Err(VerifyError::invalid("token expired"))
        );
        let (v, _) = verifier(
            serde_json::json!({"active": true, "sub": "a", "aud": "https://rs.example/mcp", "iss": "https://evil"}),
        );
        assert_eq!(
            v.verify("t").await,
            Err(VerifyError::invalid("wrong issuer"))
        );
        let (v, c) = verifier(serde_json::json!([]));
        assert!(matches!(
            v.verify("t").await,
            Err(VerifyError::Unavailable(_))
        ));
        assert!(matches!(
            v.verify("t").await,
            Err(VerifyError::Unavailable(_))
        ));
        assert_eq!(c.calls.load(Ordering::SeqCst), 2, "failures are not cached");
    }

    #[tokio::test]
    async fn cache_is_bounded_by_exp_and_size() {
        let (v, canned) = verifier(serde_json::json!({
            "active": true, "sub": "a", "aud": "https://rs.example/mcp", "iss": "https://as.example", "exp": now_unix(),
        }));
        // exp is now: valid within the skew, but never cached past it.
        assert!(v.verify("t").await.is_ok());
        assert_eq!(v.cached(), 0);
        assert_eq!(canned.calls.load(Ordering::SeqCst), 1);
        let (mut v, _) = verifier(serde_json::json!({
            "active": true, "sub": "a", "aud": "https://rs.example/mcp", "iss": "https://as.example",
        }));
        v.max_entries = 2;
        for t in ["1", "2", "3", "4"] {
            assert!(v.verify(t).await.is_ok());
        }
        assert_eq!(v.cached(), 2);
    }
}
