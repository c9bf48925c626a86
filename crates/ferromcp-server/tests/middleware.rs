//! RPC-level middleware (`ServerBuilder::layer`) sees every admitted request
//! the same way over HTTP (the general and the one-pass `tools/call` path)
//! and stdio, on the 2026-07-28 wire and in the handshake era: the method,
//! the name, the principal, the era and the id; it can refuse with a
//! JSON-RPC error (the handler never runs) and observe the answer.
// AUTH-03, AUTH-04

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ferromcp_server::middleware::{self, RpcResponse};
use ferromcp_server::protocol::{Era, ErrorCode, ErrorObject, Principal};
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{NoArgs, RequestContext, Server, testing, tool};
mod common;

use common::{handshake_post, handshake_session, stdio};
use serde_json::{Value, json};

/// What the recording layer saw: (layer, method, name, era, subject, id,
/// answered with an error code).
type Seen = (
    &'static str,
    String,
    Option<String>,
    Era,
    Option<String>,
    String,
    Option<i64>,
);

const DENIED: ErrorCode = ErrorCode(-32001);

struct Fixture {
    server: Server,
    seen: Arc<Mutex<Vec<Seen>>>,
    secret_runs: Arc<AtomicUsize>,
}

fn fixture() -> Fixture {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let secret_runs = Arc::new(AtomicUsize::new(0));
    let record = |label: &'static str, seen: Arc<Mutex<Vec<Seen>>>| {
        middleware::from_fn(move |req, next| {
            let seen = seen.clone();
            async move {
                let view = (
                    req.method().to_owned(),
                    req.name().map(str::to_owned),
                    req.era(),
                    req.principal().map(|p| p.subject.clone()),
                    req.id().to_string(),
                );
                let answer = next.run(req).await;
                let code = answer.error().map(|e| e.code.0);
                seen.lock()
                    .unwrap()
                    .push((label, view.0, view.1, view.2, view.3, view.4, code));
                answer
            }
        })
    };
    // Refuses the tool "secret" unless the principal has scope "admin".
    let policy = middleware::from_fn(|req, next| async move {
        let admin = req
            .principal()
            .is_some_and(|p| p.scopes.iter().any(|s| s == "admin"));
        if req.method() == "tools/call" && req.name() == Some("secret") && !admin {
            return RpcResponse::refuse(ErrorObject::new(DENIED, "denied by policy"));
        }
        next.run(req).await
    });
    let runs = secret_runs.clone();
    let server = Server::builder("mw", "1.0.0")
        .tool(tool("echo").handler(|_: NoArgs, _: RequestContext| async { "echoed" }))
        .tool(tool("secret").handler(move |_: NoArgs, _: RequestContext| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                "the secret"
            }
        }))
        .layer(record("outer", seen.clone()))
        .layer(policy)
        .layer(record("inner", seen.clone()))
        .build()
        .expect("server");
    Fixture {
        server,
        seen,
        secret_runs,
    }
}

fn principal(subject: &str, scopes: &[&str]) -> Principal {
    Principal {
        subject: subject.to_owned(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        client_id: None,
    }
}

#[tokio::test]
async fn http_modern_requests_pass_through_the_layers_with_their_principal() {
    let f = fixture();
    let svc = McpService::new(f.server.clone(), HttpConfig::default());
    // tools/call takes the one-pass path; tools/list the general one.
    let mut call = testing::modern_request("tools/call", json!({"name": "echo"}));
    call.extensions_mut().insert(principal("ann", &[]));
    let r = testing::send(&svc, call).await;
    assert_eq!(r["result"]["content"][0]["text"], "echoed", "{r}");
    let r = testing::request(&svc, "tools/list", json!({})).await;
    assert!(r["result"]["tools"].is_array(), "{r}");
    let seen = f.seen.lock().unwrap().clone();
    let tools_call = |label| {
        (
            label,
            "tools/call".to_owned(),
            Some("echo".to_owned()),
            Era::Modern,
            Some("ann".to_owned()),
            "1".to_owned(),
            None,
        )
    };
    let tools_list = |label| {
        (
            label,
            "tools/list".to_owned(),
            None,
            Era::Modern,
            None,
            "1".to_owned(),
            None,
        )
    };
    // The innermost layer sees the answer first.
    assert_eq!(
        seen,
        vec![
            tools_call("inner"),
            tools_call("outer"),
            tools_list("inner"),
            tools_list("outer"),
        ]
    );
}

#[tokio::test]
async fn a_refusal_is_answered_over_http_and_the_handler_does_not_run() {
    let f = fixture();
    let svc = McpService::new(f.server.clone(), HttpConfig::default());
    let mut call = testing::modern_request("tools/call", json!({"name": "secret"}));
    call.extensions_mut().insert(principal("bob", &["read"]));
    let resp = svc.handle(call).await;
    // -32001 is not in the status table: 200, the error in the body.
    assert_eq!(resp.status(), 200);
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let r: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(r["error"]["code"], -32001, "{r}");
    assert_eq!(r["error"]["message"], "denied by policy");
    assert_eq!(f.secret_runs.load(Ordering::SeqCst), 0);
    // Only the outer layer saw it (the inner one is below the refusal),
    // and it saw the refusal.
    let seen = f.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].0, "outer");
    assert_eq!(seen[0].6, Some(-32001));
    // With the scope, the same call runs.
    let mut call = testing::modern_request("tools/call", json!({"name": "secret"}));
    call.extensions_mut().insert(principal("bob", &["admin"]));
    let r = testing::send(&svc, call).await;
    assert_eq!(r["result"]["content"][0]["text"], "the secret", "{r}");
    assert_eq!(f.secret_runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn stdio_in_both_eras_goes_through_the_same_layers() {
    let envelope = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    // The 2026-07-28 wire.
    let f = fixture();
    let out = stdio(
        f.server.clone(),
        &[
            json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
                "params":{"name":"echo","_meta":envelope}}),
            json!({"jsonrpc":"2.0","id":8,"method":"tools/call",
                "params":{"name":"secret","_meta":envelope}}),
        ],
        2,
    )
    .await;
    assert_eq!(out[0]["result"]["content"][0]["text"], "echoed");
    assert_eq!(out[1]["error"]["code"], -32001);
    assert_eq!(f.secret_runs.load(Ordering::SeqCst), 0);
    let seen = f.seen.lock().unwrap().clone();
    let outer: Vec<_> = seen.iter().filter(|s| s.0 == "outer").collect();
    assert_eq!(outer.len(), 2, "{seen:?}");
    assert!(outer.iter().all(|s| s.3 == Era::Modern && s.4.is_none()));
    assert_eq!(
        outer
            .iter()
            .map(|s| (s.5.as_str(), s.6))
            .collect::<Vec<_>>(),
        vec![("7", None), ("8", Some(-32001))]
    );

    // The handshake era: initialize is the transport's, not the layers'.
    let f = fixture();
    let out = stdio(
        f.server.clone(),
        &[
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"t","version":"1"}}}),
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            json!({"jsonrpc":"2.0","id":"p","method":"prompts/list"}),
            json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret"}}),
        ],
        3,
    )
    .await;
    assert!(out[0]["result"]["protocolVersion"].is_string(), "{out:?}");
    assert_eq!(out[2]["error"]["code"], -32001, "{out:?}");
    let seen = f.seen.lock().unwrap().clone();
    let outer: Vec<_> = seen.iter().filter(|s| s.0 == "outer").collect();
    assert_eq!(
        outer
            .iter()
            .map(|s| (s.1.as_str(), s.2.as_deref(), s.3, s.5.as_str()))
            .collect::<Vec<_>>(),
        vec![
            ("prompts/list", None, Era::Handshake, "\"p\""),
            ("tools/call", Some("secret"), Era::Handshake, "2"),
        ],
        "{seen:?}"
    );
    assert_eq!(f.secret_runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn http_handshake_sessions_go_through_the_same_layers() {
    let f = fixture();
    let svc = McpService::new(f.server.clone(), HttpConfig::default());
    let mut init = handshake_post(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"t","version":"1"}}}),
        None,
    );
    // Sessions are bound to the principal that opened them.
    init.extensions_mut().insert(principal("cy", &["admin"]));
    let init = svc.handle(init).await;
    let session = init
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session")
        .to_owned();
    let mut call = handshake_post(
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"secret"}}),
        Some(&session),
    );
    call.extensions_mut().insert(principal("cy", &["admin"]));
    let r = testing::send(&svc, call).await;
    assert_eq!(r["result"]["content"][0]["text"], "the secret", "{r}");
    let seen = f.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        ["inner", "outer"]
            .map(|label| (
                label,
                "tools/call".to_owned(),
                Some("secret".to_owned()),
                Era::Handshake,
                Some("cy".to_owned()),
                "5".to_owned(),
                None,
            ))
            .to_vec()
    );
}

// AUTH-18
/// A layer that refuses every `tools/call` for lack of a scope.
fn scope_refusing_server() -> Server {
    Server::builder("scoped", "1.0.0")
        .tool(tool("secret").handler(|_: NoArgs, _: RequestContext| async { "the secret" }))
        .layer(middleware::from_fn(|req, next| async move {
            if req.method() == "tools/call" {
                return RpcResponse::insufficient_scope(
                    ErrorObject::invalid_request("insufficient_scope"),
                    r#"Bearer error="insufficient_scope", scope="mcp admin""#,
                );
            }
            next.run(req).await
        }))
        .build()
        .unwrap()
}

// AUTH-18
#[tokio::test]
async fn an_insufficient_scope_refusal_is_403_with_its_challenge_in_both_eras() {
    let challenge = r#"Bearer error="insufficient_scope", scope="mcp admin""#;
    let svc = McpService::new(scope_refusing_server(), HttpConfig::default());
    let read = |resp: http::Response<_>| async move {
        let status = resp.status();
        let www = resp
            .headers()
            .get("www-authenticate")
            .and_then(|v: &http::HeaderValue| v.to_str().ok())
            .map(str::to_owned);
        let body = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .unwrap()
            .to_bytes();
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        (status, www, v)
    };
    // The 2026-07-28 wire.
    let call = testing::modern_request("tools/call", json!({"name": "secret"}));
    let (status, www, v) = read(svc.handle(call).await).await;
    assert_eq!(status, 403, "{v}");
    assert_eq!(www.as_deref(), Some(challenge));
    // The body of a bearer-token refusal (RFC 6750 §3), not JSON-RPC.
    assert_eq!(v["error"], "insufficient_scope", "{v}");
    assert_eq!(
        v["error_description"],
        "Invalid Request: insufficient_scope"
    );
    // A handshake-era session: the same 403, not a 200 with the error.
    let (session, _) = handshake_session(&svc).await;
    let call = handshake_post(
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"secret"}}),
        Some(&session),
    );
    let (status, www, v) = read(svc.handle(call).await).await;
    assert_eq!(status, 403, "{v}");
    assert_eq!(www.as_deref(), Some(challenge));
    assert_eq!(v["error"], "insufficient_scope", "{v}");
    // The session still serves what the layer lets through.
    let list = handshake_post(
        json!({"jsonrpc":"2.0","id":6,"method":"tools/list"}),
        Some(&session),
    );
    let r = testing::send(&svc, list).await;
    assert_eq!(r["result"]["tools"][0]["name"], "secret", "{r}");
    // stdio: the JSON-RPC error alone.
    let out = stdio(
        scope_refusing_server(),
        &[
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"t","version":"1"}}}),
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret"}}),
        ],
        2,
    )
    .await;
    assert_eq!(out[1]["error"]["code"], -32600, "{out:?}");
    assert!(
        out[1]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("insufficient_scope")),
        "{out:?}"
    );
}

#[test]
fn an_invalid_challenge_is_an_internal_error_not_a_bare_403() {
    let r = RpcResponse::insufficient_scope(ErrorObject::invalid_request("x"), "Bearer\r\nX: y");
    assert_eq!(r.error().map(|e| e.code), Some(ErrorCode::INTERNAL_ERROR));
}

// AUTH-18: the refusal comes after an outer layer awaited (the handler is
// then served from its own task in the handshake era): still a 403.
#[tokio::test]
async fn a_late_insufficient_scope_refusal_is_still_403_in_a_handshake_session() {
    let server = Server::builder("scoped", "1.0.0")
        .tool(tool("secret").handler(|_: NoArgs, _: RequestContext| async { "the secret" }))
        .layer(middleware::from_fn(|req, next| async move {
            tokio::task::yield_now().await;
            next.run(req).await
        }))
        .layer(middleware::from_fn(|req, next| async move {
            if req.method() == "tools/call" {
                return RpcResponse::insufficient_scope(
                    ErrorObject::invalid_request("insufficient_scope"),
                    r#"Bearer error="insufficient_scope""#,
                );
            }
            next.run(req).await
        }))
        .build()
        .unwrap();
    let svc = McpService::new(server, HttpConfig::default());
    let (session, _) = handshake_session(&svc).await;
    let call = handshake_post(
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"secret"}}),
        Some(&session),
    );
    let resp = svc.handle(call).await;
    assert_eq!(resp.status(), 403);
    assert!(resp.headers().contains_key("www-authenticate"));
    // The session serves the next request as usual.
    let list = handshake_post(
        json!({"jsonrpc":"2.0","id":6,"method":"tools/list"}),
        Some(&session),
    );
    let r = testing::send(&svc, list).await;
    assert_eq!(r["result"]["tools"][0]["name"], "secret", "{r}");
}
