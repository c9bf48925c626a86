//! The retry policy against a scripted 2026-07-28 server on a loopback port
//! that fails on purpose: 503 with `Retry-After`, or a connection closed
//! before any answer. Safe requests are sent again; `tools/call` only for
//! tools the application names; nothing without a policy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_client::{ClientBuilder, RetryPolicy};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// What the scripted server does with the n-th request of a method.
#[derive(Clone, Copy)]
enum Fail {
    /// 503 with `Retry-After: 0` for the first `n`.
    Unavailable(usize),
    /// Close the connection without answering, for the first `n`.
    Hangup(usize),
}

#[derive(Default)]
struct Seen(Mutex<HashMap<String, usize>>);

impl Seen {
    fn count(&self, key: &str) -> usize {
        self.0.lock().unwrap().get(key).copied().unwrap_or(0)
    }
    fn bump(&self, key: &str) -> usize {
        let mut m = self.0.lock().unwrap();
        let n = m.entry(key.to_owned()).or_default();
        *n += 1;
        *n
    }
}

/// Starts the server; `plan` maps "method" or "tools/call:name" to a failure.
async fn server(plan: HashMap<&'static str, Fail>) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (plan, seen) = (plan.clone(), s.clone());
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                loop {
                    let mut line = String::new();
                    if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let mut len = 0usize;
                    loop {
                        let mut h = String::new();
                        stream.read_line(&mut h).await.unwrap();
                        let h = h.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        if let Some((n, v)) = h.split_once(':') {
                            if n.eq_ignore_ascii_case("content-length") {
                                len = v.trim().parse().unwrap();
                            }
                        }
                    }
                    let mut body = vec![0; len];
                    stream.read_exact(&mut body).await.unwrap();
                    let req: Value = serde_json::from_slice(&body).unwrap();
                    let method = req["method"].as_str().unwrap_or("").to_owned();
                    let key = match req["params"]["name"].as_str() {
                        Some(n) if method == "tools/call" => format!("tools/call:{n}"),
                        _ => method.clone(),
                    };
                    let n = seen.bump(&key);
                    if method == "subscriptions/listen" {
                        // The first stream breaks right after its
                        // acknowledgement; the next one carries a change.
                        let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                            "params": {"notifications": {"toolsListChanged": true}}});
                        let mut sse = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {ack}\n\n"
                        );
                        if n > 1 {
                            let change = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                            sse.push_str(&format!("data: {change}\n\n"));
                        }
                        let _ = stream.get_mut().write_all(sse.as_bytes()).await;
                        if n > 1 {
                            tokio::time::sleep(Duration::from_secs(30)).await;
                        }
                        return;
                    }
                    let fail = plan
                        .get(key.as_str())
                        .or(plan.get(method.as_str()))
                        .copied();
                    let (status, extra, out) = match fail {
                        Some(Fail::Hangup(k)) if n <= k => return,
                        Some(Fail::Unavailable(k)) if n <= k => (
                            "503 Service Unavailable",
                            "Retry-After: 0\r\n",
                            "busy".to_owned(),
                        ),
                        _ => {
                            let result = match method.as_str() {
                                "server/discover" => json!({"resultType": "complete",
                                    "supportedVersions": ["2026-07-28"],
                                    "capabilities": {"tools": {"listChanged": true}, "resources": {}}}),
                                "resources/list" => {
                                    json!({"resultType": "complete", "resources": []})
                                }
                                "tools/list" => json!({"resultType": "complete",
                                    "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
                                _ => json!({"resultType": "complete",
                                    "content": [{"type": "text", "text": "done"}]}),
                            };
                            let msg = json!({"jsonrpc": "2.0", "id": req["id"], "result": result});
                            ("200 OK", "", msg.to_string())
                        }
                    };
                    let ctype = if status.starts_with("200") {
                        "application/json"
                    } else {
                        "text/plain"
                    };
                    let resp = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{extra}\r\n{out}",
                        out.len()
                    );
                    if stream.get_mut().write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}

fn fast() -> RetryPolicy {
    RetryPolicy::new().backoff(Duration::from_millis(5), Duration::from_millis(20))
}

#[tokio::test]
async fn safe_requests_are_retried_after_503_and_hangups() {
    let plan = HashMap::from([
        ("tools/list", Fail::Unavailable(2)),
        ("resources/list", Fail::Hangup(1)),
    ]);
    let (url, seen) = server(plan).await;
    let client = ClientBuilder::new("retry-test", "0.0.1")
        .retry(fast())
        .connect_url(&url)
        .await
        .unwrap();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(seen.count("tools/list"), 3, "two 503s, then the answer");
    // The connection closed before any answer: sent again.
    assert!(client.list_resources().await.unwrap().is_empty());
    assert_eq!(
        seen.count("resources/list"),
        2,
        "a hang-up, then the answer"
    );
}

#[tokio::test]
async fn without_a_policy_nothing_is_retried() {
    let plan = HashMap::from([("tools/list", Fail::Unavailable(1))]);
    let (url, seen) = server(plan).await;
    let client = ClientBuilder::new("retry-test", "0.0.1")
        .connect_url(&url)
        .await
        .unwrap();
    let e = client.list_tools().await.unwrap_err();
    assert_eq!(e.status(), Some(503), "{e}");
    assert_eq!(e.retry_after(), Some(Duration::ZERO));
    assert_eq!(seen.count("tools/list"), 1);
}

#[tokio::test]
async fn tool_calls_are_retried_only_for_tools_the_application_names() {
    let plan = HashMap::from([
        ("tools/call:write", Fail::Unavailable(5)),
        ("tools/call:echo", Fail::Unavailable(1)),
    ]);
    let (url, seen) = server(plan).await;
    let policy = fast().max_attempts(3).idempotent_tools(["echo"]);
    let client = ClientBuilder::new("retry-test", "0.0.1")
        .retry(policy)
        .connect_url(&url)
        .await
        .unwrap();
    // Not named: one attempt, the failure reported.
    let e = client.call_tool("write", None).await.unwrap_err();
    assert_eq!(e.status(), Some(503), "{e}");
    assert_eq!(seen.count("tools/call:write"), 1);
    // Named idempotent: retried, then answered.
    let r = client.call_tool("echo", None).await.unwrap();
    assert!(format!("{r:?}").contains("done"));
    assert_eq!(seen.count("tools/call:echo"), 2);
}

#[tokio::test]
async fn attempts_are_bounded() {
    let plan = HashMap::from([("tools/list", Fail::Unavailable(100))]);
    let (url, seen) = server(plan).await;
    let client = ClientBuilder::new("retry-test", "0.0.1")
        .retry(fast().max_attempts(4))
        .connect_url(&url)
        .await
        .unwrap();
    let e = client.list_tools().await.unwrap_err();
    assert_eq!(e.status(), Some(503));
    assert_eq!(seen.count("tools/list"), 4);
}

#[tokio::test]
async fn a_resilient_listen_listens_again_after_an_abrupt_loss() {
    use ferromcp_client::SubscriptionEvent;
    use ferromcp_client::protocol::types::SubscriptionFilter;
    let (url, seen) = server(HashMap::new()).await;
    let client = ClientBuilder::new("retry-test", "0.0.1")
        .connect_url(&url)
        .await
        .unwrap();
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..Default::default()
    };
    let mut sub = client.listen_resilient(filter, fast()).await.unwrap();
    assert_eq!(
        sub.next().await.unwrap(),
        SubscriptionEvent::Relistened { after_loss: true }
    );
    assert_eq!(
        sub.next().await.unwrap(),
        SubscriptionEvent::ToolsListChanged
    );
    assert_eq!(seen.count("subscriptions/listen"), 2);
}
