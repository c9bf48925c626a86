//! Handles bound to the authenticated principal: handshake-era
//! sessions answer 404 to any other principal, and a sealed
//! MRTR `requestState` minted for one principal is refused (-32602) for
//! another. The principal is what an authentication layer (e.g.
//! ferromcp-auth's `AuthLayer`) puts into the request extensions.
// STATE-06, LEGACY-13, MRTR-09

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{HandlerError, NoArgs, Principal, RequestContext, Server, tool};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tower::ServiceExt;

fn server() -> McpService {
    let server = Server::builder("binding", "1.0.0")
        .tool(
            tool("whoami")
                .description("Returns the caller's subject")
                .handler(|_: NoArgs, cx: RequestContext| async move {
                    cx.principal()
                        .map(|p| p.subject.clone())
                        .unwrap_or_else(|| "anonymous".into())
                }),
        )
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
        .build()
        .expect("server");
    McpService::new(server, HttpConfig::default())
}

fn who(subject: &str) -> Option<Principal> {
    Some(Principal {
        subject: subject.into(),
        scopes: vec!["mcp".into()],
        client_id: None,
    })
}

struct Reply {
    status: u16,
    session: Option<String>,
    body: Value,
}

async fn send(
    svc: &McpService,
    method: http::Method,
    headers: &[(&str, &str)],
    body: Option<Value>,
    principal: Option<Principal>,
) -> Reply {
    let mut b = http::Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (n, v) in headers {
        b = b.header(*n, *v);
    }
    let bytes = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = b
        .body(Full::new(bytes::Bytes::from(bytes)))
        .expect("request");
    if let Some(p) = principal {
        req.extensions_mut().insert(p);
    }
    let resp = svc.clone().oneshot(req).await.expect("infallible");
    let status = resp.status().as_u16();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let raw = resp.into_body().collect().await.expect("body").to_bytes();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    Reply {
        status,
        session,
        body,
    }
}

#[tokio::test]
async fn handshake_sessions_answer_only_their_principal() {
    let svc = server();
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let r = send(&svc, http::Method::POST, &[], Some(init), who("alice")).await;
    assert_eq!(r.status, 200);
    let sid = r.session.expect("session id");
    let h = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}});
    let ok = send(
        &svc,
        http::Method::POST,
        &h,
        Some(call.clone()),
        who("alice"),
    )
    .await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body["result"]["content"][0]["text"], "alice");
    // Another principal, or none, presenting alice's session id: unknown session.
    for p in [who("bob"), None] {
        let r = send(&svc, http::Method::POST, &h, Some(call.clone()), p.clone()).await;
        assert_eq!(r.status, 404, "POST as {p:?}");
        let batch = json!([call.clone()]);
        let r = send(&svc, http::Method::POST, &h, Some(batch), p.clone()).await;
        assert_ne!(r.status, 200, "batch as {p:?}");
        let r = send(&svc, http::Method::GET, &h, None, p.clone()).await;
        assert_eq!(r.status, 404, "GET as {p:?}");
        let r = send(&svc, http::Method::DELETE, &h, None, p.clone()).await;
        assert_eq!(r.status, 404, "DELETE as {p:?}");
    }
    // Bob's DELETE did not end alice's session.
    assert_eq!(svc.session_count(), 1);
    let again = send(&svc, http::Method::POST, &h, Some(call), who("alice")).await;
    assert_eq!(again.status, 200);
    let bye = send(&svc, http::Method::DELETE, &h, None, who("alice")).await;
    assert_eq!(bye.status, 200);
    assert_eq!(svc.session_count(), 0);
}

#[tokio::test]
async fn request_state_is_bound_to_the_principal() {
    let svc = server();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    });
    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "confirm"),
    ];
    let first = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm","arguments":{},"_meta":meta}});
    let r = send(&svc, http::Method::POST, &h, Some(first), who("alice")).await;
    assert_eq!(r.body["result"]["resultType"], "input_required");
    let state = r.body["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_owned();
    let retry = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"confirm","arguments":{},"_meta":meta,
        "inputResponses":{"confirm":{"action":"accept","content":{}}},
        "requestState": state}});
    // MRTR-09: minted for alice, refused for bob and for an anonymous caller.
    for p in [who("bob"), None] {
        let r = send(&svc, http::Method::POST, &h, Some(retry.clone()), p.clone()).await;
        assert_eq!(
            (r.status, r.body["error"]["code"].as_i64()),
            (400, Some(-32602)),
            "retry as {p:?}"
        );
    }
    let ok = send(&svc, http::Method::POST, &h, Some(retry), who("alice")).await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.body["result"]["resultType"], "complete");
    assert_eq!(ok.body["result"]["content"][0]["text"], "Accept");
}
