//! The `HttpAuth` hook on the wire: headers on every request,
//! bounded re-sends after 401/403, `is_auth` errors, and the private-cache
//! partition following the credentials. The server is a tiny
//! HTTP/1.1 responder on 127.0.0.1 written for this test.
// AUTH-20, CACHE-08

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_client::{
    AuthChallenge, AuthDecision, AuthError, AuthRequest, ClientBuilder, EraPreference, HttpAuth,
};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the test server saw: (authorization header, JSON-RPC method).
type Seen = Arc<Mutex<Vec<(Option<String>, String)>>>;

/// Serves: 401 unless `Authorization: Bearer good-*`; else a cacheable
/// private `tools/list` result.
async fn server() -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                continue;
            };
            let s = s.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head_end, len) = loop {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..i]).to_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (i + 4, len);
                    }
                };
                while buf.len() < head_end + len {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let auth = head.lines().find_map(|l| {
                    let (n, v) = l.split_once(':')?;
                    n.eq_ignore_ascii_case("authorization")
                        .then(|| v.trim().to_owned())
                });
                let body: Value =
                    serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null);
                let method = body["method"].as_str().unwrap_or("").to_owned();
                s.lock().unwrap().push((auth.clone(), method.clone()));
                let resp = if auth
                    .as_deref()
                    .is_some_and(|a| a.starts_with("Bearer good-"))
                {
                    let result = match method.as_str() {
                        "tools/list" => json!({
                            "tools": [{"name": "t", "inputSchema": {"type": "object"}}],
                            "resultType": "complete", "ttlMs": 600000, "cacheScope": "private"
                        }),
                        _ => json!({"resultType": "complete"}),
                    };
                    let b =
                        json!({"jsonrpc": "2.0", "id": body["id"], "result": result}).to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
                        b.len()
                    )
                } else {
                    "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer error=\"invalid_token\", scope=\"a\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned()
                };
                let _ = stream.write_all(resp.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (url, seen)
}

/// A hook with a switchable token and a fixed answer to challenges.
struct Hook {
    token: Mutex<Option<String>>,
    decision: fn(&Hook) -> AuthDecision,
    challenges: Mutex<Vec<AuthChallenge>>,
    header_calls: AtomicUsize,
}

impl Hook {
    fn new(token: Option<&str>, decision: fn(&Hook) -> AuthDecision) -> Arc<Self> {
        Arc::new(Self {
            token: Mutex::new(token.map(str::to_owned)),
            decision,
            challenges: Mutex::default(),
            header_calls: AtomicUsize::new(0),
        })
    }
}

impl HttpAuth for Hook {
    fn headers(
        &self,
        request: AuthRequest,
    ) -> BoxFuture<'_, Result<Vec<(String, String)>, AuthError>> {
        self.header_calls.fetch_add(1, Ordering::SeqCst);
        assert!(request.url.ends_with("/mcp"));
        let t = self.token.lock().unwrap().clone();
        Box::pin(async move {
            Ok(
                t.map(|t| vec![("Authorization".to_owned(), format!("Bearer {t}"))])
                    .unwrap_or_default(),
            )
        })
    }

    fn on_challenge(&self, challenge: AuthChallenge) -> BoxFuture<'_, AuthDecision> {
        self.challenges.lock().unwrap().push(challenge);
        let d = (self.decision)(self);
        Box::pin(async move { d })
    }

    fn cache_partition(&self) -> Option<String> {
        self.token.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn retries_are_bounded_and_fail_as_auth_errors() {
    let (url, seen) = server().await;
    let hook = Hook::new(None, |_| AuthDecision::Retry);
    let client = ClientBuilder::new("t", "1")
        .era(EraPreference::ModernNoProbe)
        .max_auth_retries(2)
        .http_auth(hook.clone())
        .connect_url(&url)
        .await
        .unwrap();
    let e = client.list_tools().await.unwrap_err();
    assert!(e.is_auth(), "{e}");
    assert_eq!(e.status(), Some(401));
    // One send plus two re-sends; the hook is not asked after the bound.
    assert_eq!(seen.lock().unwrap().len(), 3);
    let ch = hook.challenges.lock().unwrap();
    assert_eq!(ch.len(), 2);
    assert_eq!(ch[0].status, 401);
    assert_eq!(ch[0].request.method, "POST");
    assert_eq!(
        ch[0].www_authenticate,
        vec!["Bearer error=\"invalid_token\", scope=\"a\""]
    );
    assert!(ch[0].sent.is_empty());
}

#[tokio::test]
async fn fail_and_proceed_decisions() {
    let (url, _) = server().await;
    let hook = Hook::new(None, |_| {
        AuthDecision::Fail(AuthError::new("user declined"))
    });
    let client = ClientBuilder::new("t", "1")
        .era(EraPreference::ModernNoProbe)
        .http_auth(hook)
        .connect_url(&url)
        .await
        .unwrap();
    let e = client.list_tools().await.unwrap_err();
    assert!(e.is_auth() && !e.is_transport());
    assert!(format!("{e}").contains("user declined"));
    let hook = Hook::new(None, |_| AuthDecision::Proceed);
    let client = ClientBuilder::new("t", "1")
        .era(EraPreference::ModernNoProbe)
        .http_auth(hook)
        .connect_url(&url)
        .await
        .unwrap();
    let e = client.list_tools().await.unwrap_err();
    assert!(!e.is_auth() && e.is_transport());
    assert_eq!(e.status(), Some(401));
}

#[tokio::test]
async fn renewed_credentials_are_sent_and_partition_the_cache() {
    let (url, seen) = server().await;
    // The first challenge "renews" the token, then the request succeeds.
    let hook = Hook::new(None, |h| {
        *h.token.lock().unwrap() = Some("good-1".into());
        AuthDecision::Retry
    });
    let client = ClientBuilder::new("t", "1")
        .era(EraPreference::ModernNoProbe)
        .http_auth(hook.clone())
        .connect_url(&url)
        .await
        .unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    let n = seen.lock().unwrap().len();
    assert_eq!(
        seen.lock().unwrap()[n - 1].0.as_deref(),
        Some("Bearer good-1")
    );
    // Private entry cached under good-1: no request.
    client.list_tools().await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), n);
    // Other credentials: the private entry is not reused (CACHE-08).
    *hook.token.lock().unwrap() = Some("good-2".into());
    client.list_tools().await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), n + 1);
    assert_eq!(seen.lock().unwrap()[n].0.as_deref(), Some("Bearer good-2"));
    assert!(hook.header_calls.load(Ordering::SeqCst) >= 3);
}
