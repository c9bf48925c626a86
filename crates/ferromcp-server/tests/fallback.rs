//! `ServerBuilder::fallback`: a method the server does not implement is
//! -32601 without a fallback and is served by it with one, over HTTP and
//! stdio, on the 2026-07-28 wire and in handshake sessions; the modern
//! ladder (envelope, `Mcp-Method`) still runs first, middleware sees the
//! request, and known methods of the other era never reach the fallback.
// ERR-08, LADDER-08, LADDER-09, LADDER-12, RESULT-01, META-08, AUTH-03

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ferromcp_server::middleware::{self, RpcResponse};
use ferromcp_server::protocol::{ErrorCode, ErrorObject};
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{
    FallbackRequest, HandlerError, NoArgs, RequestContext, Server, testing, tool,
};
mod common;

use common::{handshake_post, handshake_session, message_of, stdio};
use serde_json::{Value, json};

/// A server whose fallback echoes `acme/echo` (method, params as sent) and
/// answers any other method with its own error, counting its runs; with
/// `fallback` false, the same server without one.
fn server(fallback: bool, runs: Arc<AtomicUsize>) -> Server {
    let b = Server::builder("fb", "1.0.0")
        .tool(tool("t").handler(|_: NoArgs, _: RequestContext| async { "tool" }));
    let b = if fallback {
        b.fallback(move |req: FallbackRequest, cx: RequestContext| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move {
                if req.method() == "acme/echo" {
                    Ok(json!({
                        "method": req.method(),
                        "params": req.params().cloned(),
                        "seenByContext": cx.method(),
                        "extra": {"kept": true},
                    }))
                } else {
                    Err(HandlerError::Protocol(
                        ErrorObject::new(ErrorCode(-32042), "no such acme thing")
                            .with_data(json!({"method": req.method()})),
                    ))
                }
            }
        })
    } else {
        b
    };
    b.build().expect("server")
}

async fn http_status_and_body(
    svc: &McpService,
    req: http::Request<http_body_util::Full<bytes::Bytes>>,
) -> (u16, Value) {
    let resp = svc.handle(req).await;
    let status = resp.status().as_u16();
    (status, message_of(resp).await)
}

#[tokio::test]
async fn without_a_fallback_unknown_methods_are_still_method_not_found() {
    let runs = Arc::new(AtomicUsize::new(0));
    let svc = McpService::new(server(false, runs), HttpConfig::default());
    let (status, r) =
        http_status_and_body(&svc, testing::modern_request("acme/echo", json!({"x": 1}))).await;
    assert_eq!(
        (status, r["error"]["code"].clone()),
        (404, json!(-32601)),
        "{r}"
    );
    let (session, _) = handshake_session(&svc).await;
    let r = testing::send(
        &svc,
        handshake_post(
            json!({"jsonrpc":"2.0","id":2,"method":"acme/echo","params":{"x":1}}),
            Some(&session),
        ),
    )
    .await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
}

#[tokio::test]
async fn the_fallback_serves_unknown_methods_on_the_modern_wire_unchanged() {
    let runs = Arc::new(AtomicUsize::new(0));
    let svc = McpService::new(server(true, runs.clone()), HttpConfig::default());
    let params = json!({
        "x": 1,
        "nested": {"y": [1, 2]},
        "_meta": {"com.example/trace": "abc"}
    });
    let (status, r) =
        http_status_and_body(&svc, testing::modern_request("acme/echo", params)).await;
    assert_eq!(status, 200, "{r}");
    let result = &r["result"];
    assert_eq!(result["method"], "acme/echo");
    // The params as sent: unknown members and every `_meta` entry.
    assert_eq!(result["params"]["x"], 1, "{r}");
    assert_eq!(result["params"]["nested"], json!({"y": [1, 2]}));
    assert_eq!(result["params"]["_meta"]["com.example/trace"], "abc");
    assert_eq!(
        result["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(result["seenByContext"], "acme/echo");
    assert_eq!(result["extra"], json!({"kept": true}));
    // RESULT-01 and META-08: the modern shaping is added.
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "fb"
    );
    // The handler's error is answered as it is.
    let (_, r) =
        http_status_and_body(&svc, testing::modern_request("io.example/thing", json!({}))).await;
    assert_eq!(r["error"]["code"], -32042, "{r}");
    assert_eq!(r["error"]["message"], "no such acme thing");
    assert_eq!(r["error"]["data"]["method"], "io.example/thing");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_modern_ladder_runs_before_the_fallback() {
    let runs = Arc::new(AtomicUsize::new(0));
    let svc = McpService::new(server(true, runs.clone()), HttpConfig::default());
    // Mcp-Method naming another method: -32020, 400 (LADDER-09).
    let mut req = testing::modern_request("acme/echo", json!({}));
    req.headers_mut()
        .insert("mcp-method", http::HeaderValue::from_static("acme/other"));
    let (status, r) = http_status_and_body(&svc, req).await;
    assert_eq!(
        (status, r["error"]["code"].clone()),
        (400, json!(-32020)),
        "{r}"
    );
    // No Mcp-Method at all: refused too.
    let mut req = testing::modern_request("acme/echo", json!({}));
    req.headers_mut().remove("mcp-method");
    let (status, r) = http_status_and_body(&svc, req).await;
    assert_eq!(status, 400, "{r}");
    // No `_meta` envelope: -32602, 400 (LADDER-08).
    let body = json!({"jsonrpc":"2.0","id":1,"method":"acme/echo","params":{}});
    let mut req = testing::modern_request("acme/echo", json!({}));
    *req.body_mut() = http_body_util::Full::new(bytes::Bytes::from(body.to_string()));
    let (status, r) = http_status_and_body(&svc, req).await;
    assert_eq!(
        (status, r["error"]["code"].clone()),
        (400, json!(-32602)),
        "{r}"
    );
    // A handshake-only method on this wire is unknown here, not the
    // fallback's (the era rule).
    let (status, r) = http_status_and_body(&svc, testing::modern_request("ping", json!({}))).await;
    assert_eq!(
        (status, r["error"]["code"].clone()),
        (404, json!(-32601)),
        "{r}"
    );
    // A `requestState` this server did not seal: -32602 (MRTR-08).
    let (status, r) = http_status_and_body(
        &svc,
        testing::modern_request("acme/echo", json!({"requestState": "forged"})),
    )
    .await;
    assert_eq!(
        (status, r["error"]["code"].clone()),
        (400, json!(-32602)),
        "{r}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler never ran");
}

#[tokio::test]
async fn handshake_sessions_reach_the_fallback_and_results_pass_as_returned() {
    let runs = Arc::new(AtomicUsize::new(0));
    let svc = McpService::new(server(true, runs.clone()), HttpConfig::default());
    let (session, _) = handshake_session(&svc).await;
    let r = testing::send(
        &svc,
        handshake_post(
            json!({"jsonrpc":"2.0","id":"e","method":"acme/echo",
                "params":{"x":[true],"_meta":{"progressToken":"p1","k":"v"}}}),
            Some(&session),
        ),
    )
    .await;
    assert_eq!(r["id"], "e", "{r}");
    assert_eq!(r["result"]["params"]["x"], json!([true]), "{r}");
    assert_eq!(
        r["result"]["params"]["_meta"],
        json!({"progressToken":"p1","k":"v"})
    );
    // Nothing added on a handshake revision.
    assert!(r["result"].get("resultType").is_none(), "{r}");
    assert!(r["result"].get("_meta").is_none(), "{r}");
    let r = testing::send(
        &svc,
        handshake_post(
            json!({"jsonrpc":"2.0","id":3,"method":"acme/nope"}),
            Some(&session),
        ),
    )
    .await;
    assert_eq!(r["error"]["code"], -32042, "{r}");
    // A modern-only method is not the fallback's in a handshake session.
    let r = testing::send(
        &svc,
        handshake_post(
            json!({"jsonrpc":"2.0","id":4,"method":"server/discover","params":{}}),
            Some(&session),
        ),
    )
    .await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn stdio_serves_the_fallback_in_both_eras_and_not_without_one() {
    let envelope = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let modern = json!({"jsonrpc":"2.0","id":7,"method":"acme/echo",
        "params":{"z":"zz","_meta":envelope}});
    for with in [true, false] {
        let runs = Arc::new(AtomicUsize::new(0));
        let out = stdio(server(with, runs.clone()), std::slice::from_ref(&modern), 1).await;
        if with {
            assert_eq!(out[0]["result"]["params"]["z"], "zz", "{out:?}");
            assert_eq!(out[0]["result"]["resultType"], "complete");
        } else {
            assert_eq!(out[0]["error"]["code"], -32601, "{out:?}");
        }
        let out = stdio(
            server(with, runs.clone()),
            &[
                json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                    "protocolVersion":"2025-11-25","capabilities":{},
                    "clientInfo":{"name":"t","version":"1"}}}),
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
                json!({"jsonrpc":"2.0","id":2,"method":"acme/echo","params":{"z":1}}),
            ],
            2,
        )
        .await;
        if with {
            assert_eq!(out[1]["result"]["params"], json!({"z": 1}), "{out:?}");
            assert_eq!(runs.load(Ordering::SeqCst), 2);
        } else {
            assert_eq!(out[1]["error"]["code"], -32601, "{out:?}");
            assert_eq!(runs.load(Ordering::SeqCst), 0);
        }
    }
}

/// What the recording layer saw: (method, name).
type Seen = (String, Option<String>);

#[tokio::test]
async fn middleware_sees_and_can_refuse_fallback_requests() {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let record = seen.clone();
    let layer = middleware::from_fn(move |req, next| {
        let record = record.clone();
        async move {
            record
                .lock()
                .unwrap()
                .push((req.method().to_owned(), req.name().map(str::to_owned)));
            if req.method() == "acme/secret" {
                return RpcResponse::refuse(ErrorObject::new(ErrorCode(-32001), "denied"));
            }
            next.run(req).await
        }
    });
    let counter = runs.clone();
    let server = Server::builder("fb", "1.0.0")
        .fallback(move |req: FallbackRequest, _cx: RequestContext| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok(json!({"m": req.method()})) }
        })
        .layer(layer)
        .build()
        .expect("server");
    let svc = McpService::new(server, HttpConfig::default());
    let r = testing::request(&svc, "acme/echo", json!({})).await;
    assert_eq!(r["result"]["m"], "acme/echo", "{r}");
    let r = testing::request(&svc, "acme/secret", json!({})).await;
    assert_eq!(r["error"]["code"], -32001, "{r}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the refused one never ran");
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            ("acme/echo".to_owned(), None),
            ("acme/secret".to_owned(), None)
        ]
    );
}
