//! A pluggable single-use `requestState` store behind the HTTP
//! transport: only retry legs carrying a `requestState` reach it, a replay
//! is refused like tampering (-32602, 400), and a store that cannot answer
//! refuses the leg with -32603 and HTTP 503 + `Retry-After` without
//! recording the token, so the same leg succeeds once the store is back.
// MRTR-09

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ferromcp_server::single_use::{SingleUseStore, StoreError, TokenId};
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{HandlerError, NoArgs, RequestContext, Server, tool};
use futures_util::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tower::ServiceExt;

#[derive(Debug, Default)]
struct FlakyStore {
    down: AtomicBool,
    calls: AtomicUsize,
    seen: Mutex<HashSet<TokenId>>,
}

impl SingleUseStore for FlakyStore {
    fn consume(
        &self,
        token: &TokenId,
        _forget_after: u64,
        _now: u64,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let token = *token;
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            if self.down.load(Ordering::SeqCst) {
                return Err(StoreError::timeout());
            }
            Ok(self.seen.lock().unwrap().insert(token))
        })
    }
}

fn service(store: Arc<FlakyStore>) -> McpService {
    let server = Server::builder("single-use", "1.0.0")
        .tool(
            tool("confirm")
                .description("Asks the user to confirm")
                .handler(|_: NoArgs, cx: RequestContext| async move {
                    let params = serde_json::from_value(json!({
                        "mode": "form",
                        "message": "Sure?",
                        "requestedSchema": {"type": "object", "properties": {}}
                    }))
                    .map_err(|e| HandlerError::Failed(e.to_string()))?;
                    let r = cx.elicit("confirm", params)?;
                    Ok::<_, HandlerError>(format!("{:?}", r.action))
                }),
        )
        .tool(
            tool("lookalike")
                .description("Fails with the store outage's error object")
                .handler(|_: NoArgs, _: RequestContext| async move {
                    let e = ferromcp_server::protocol::ErrorObject::new(
                        ferromcp_server::protocol::ErrorCode::INTERNAL_ERROR,
                        "Service temporarily unavailable",
                    )
                    .with_data(json!({"reason": "state_store_unavailable"}));
                    Err::<String, _>(HandlerError::Protocol(e))
                }),
        )
        .request_state(ferromcp_server::RequestStateConfig::default().single_use_store(store))
        .build()
        .expect("server");
    McpService::new(server, HttpConfig::default())
}

async fn post(svc: &McpService, body: Value) -> (u16, Option<String>, Value) {
    let name = body["params"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let req = http::Request::builder()
        .method(http::Method::POST)
        .uri("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(Full::new(bytes::Bytes::from(body.to_string())))
        .expect("request");
    let resp = svc.clone().oneshot(req).await.expect("response");
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        retry_after,
        serde_json::from_slice(&bytes).expect("json"),
    )
}

#[tokio::test]
async fn store_errors_are_503_with_retry_after_and_replays_400() {
    let store = Arc::new(FlakyStore::default());
    let svc = service(store.clone());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    });
    let first = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"confirm","arguments":{},"_meta":meta}});
    let (status, _, body) = post(&svc, first).await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["resultType"], "input_required");
    // A request without requestState never touches the store.
    assert_eq!(store.calls.load(Ordering::SeqCst), 0);
    let state = body["result"]["requestState"].as_str().expect("state");
    let retry = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"confirm","arguments":{},"_meta":meta,
        "inputResponses":{"confirm":{"action":"accept","content":{}}},
        "requestState": state}});

    store.down.store(true, Ordering::SeqCst);
    let (status, retry_after, body) = post(&svc, retry.clone()).await;
    assert_eq!(status, 503);
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(body["id"], 2);
    assert_eq!(body["error"]["code"], -32603);
    assert_eq!(body["error"]["data"]["reason"], "state_store_unavailable");

    // Back up: the same leg succeeds once, then is a replay.
    store.down.store(false, Ordering::SeqCst);
    let (status, _, body) = post(&svc, retry.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "Accept");
    let (status, retry_after, body) = post(&svc, retry).await;
    assert_eq!((status, retry_after), (400, None));
    assert_eq!(body["error"]["code"], -32602);
    assert_eq!(store.calls.load(Ordering::SeqCst), 3);
}

// MRTR-09
#[tokio::test]
async fn a_handler_error_with_the_outage_data_is_not_a_503() {
    // Only the store's own outage is retryable: the transport knows it from
    // the outcome's type, not by reading `data.reason`, so a handler whose
    // error carries the same code and data keeps the error table's status.
    let store = Arc::new(FlakyStore::default());
    let svc = service(store.clone());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let call = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"lookalike","arguments":{},"_meta":meta}});
    let (status, retry_after, body) = post(&svc, call).await;
    assert_eq!(
        body["error"]["data"]["reason"], "state_store_unavailable",
        "{body}"
    );
    assert_eq!((status, retry_after), (200, None), "{body}");
    assert_eq!(store.calls.load(Ordering::SeqCst), 0);
}
