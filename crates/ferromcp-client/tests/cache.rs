//! Caching against an in-process server that sends `ttlMs > 0`
//! (the everything-server sends `ttlMs: 0`, which is never cached):
//! a fresh entry is reused, a `list_changed` notification on a listen
//! stream invalidates it, and results of MRTR retries
//! are never cached.
// CACHE-05…CACHE-10, CACHE-06
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_client::protocol::types::{CacheHint, CacheScope, SubscriptionFilter};
use ferromcp_client::{ClientBuilder, EraPreference, ResponseCache, SubscriptionEvent};
use ferromcp_server::transport::http::{HttpConfig, McpService, serve_listener};
use ferromcp_server::{CacheHints, NoArgs, RequestContext, Server, tool};
use std::sync::Arc;
use std::time::Duration;

fn server() -> Server {
    let hint = CacheHint {
        ttl_ms: 60_000,
        scope: CacheScope::Private,
    };
    Server::builder("cache-test", "0.0.1")
        .cache_hints(CacheHints {
            tools_list: hint,
            ..CacheHints::default()
        })
        .tool(
            tool("first")
                .description("first")
                .handler(|_: NoArgs, _cx: RequestContext| async { "one" }),
        )
        .build()
        .unwrap()
}

async fn serve(server: Server) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let svc = McpService::new(server, HttpConfig::default());
    tokio::spawn(async move {
        let _ = serve_listener(svc, listener, async {
            let _ = rx.await;
        })
        .await;
    });
    (format!("http://{addr}/mcp"), tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_entries_are_reused_and_list_changed_invalidates() {
    let srv = server();
    let (url, _stop) = serve(srv.clone()).await;
    let cache = Arc::new(ResponseCache::default());
    let client = ClientBuilder::new("cache-test-client", "0.0.1")
        .era(EraPreference::Modern)
        .cache(Some(cache.clone()))
        .connect_url(&url)
        .await
        .unwrap();
    let names = |t: Vec<ferromcp_client::protocol::types::Tool>| {
        t.into_iter().map(|t| t.name).collect::<Vec<_>>()
    };
    assert_eq!(names(client.list_tools().await.unwrap()), ["first"]);
    assert_eq!(cache.len(), 1);
    // Changed behind the client's back, with nobody listening: the fresh
    // entry is still served (CACHE-07).
    srv.add_tool(
        tool("second")
            .description("second")
            .handler(|_: NoArgs, _cx: RequestContext| async { "two" }),
    )
    .unwrap();
    assert_eq!(names(client.list_tools().await.unwrap()), ["first"]);
    // A listen stream delivers list_changed, which drops the entry (CACHE-10).
    let mut sub = client
        .listen(SubscriptionFilter {
            tools_list_changed: Some(true),
            ..SubscriptionFilter::default()
        })
        .await
        .unwrap();
    srv.remove_tool("second");
    srv.add_tool(
        tool("third")
            .description("third")
            .handler(|_: NoArgs, _cx: RequestContext| async { "three" }),
    )
    .unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(5), sub.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ev, SubscriptionEvent::ToolsListChanged);
    let mut got = names(client.list_tools().await.unwrap());
    got.sort();
    assert!(got.contains(&"third".to_string()), "{got:?}");
    // A second client with another credential partition does not see the
    // first one's private entry (CACHE-08).
    let other = ClientBuilder::new("cache-test-client", "0.0.1")
        .era(EraPreference::Modern)
        .cache(Some(cache.clone()))
        .bearer_token("someone-else")
        .connect_url(&url)
        .await
        .unwrap();
    let before = cache.len();
    other.list_tools().await.unwrap();
    assert_eq!(cache.len(), before + 1);
    drop(sub);
    client.close().await;
    other.close().await;
}
