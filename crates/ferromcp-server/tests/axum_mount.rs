//! The HTTP transport is a plain `tower::Service`: it mounts in an axum
//! router next to other routes.

use axum::Router;
use axum::body::Body;
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{RequestContext, Server, tool};
use http_body_util::BodyExt;
use tower::ServiceExt;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

#[tokio::test]
async fn mounts_in_an_axum_router() {
    let server = Server::builder("axum-demo", "1.0.0")
        .tool(
            tool("echo")
                .description("echo")
                .handler(|a: Echo, _cx: RequestContext| async move { a.text }),
        )
        .build()
        .expect("server");
    // Path matching is the router's job when mounted.
    let config = HttpConfig::default().any_path();
    let app: Router = Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .route_service("/mcp", McpService::new(server, config));
    let body = serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"from axum"},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
    let req = http::Request::post("/mcp")
        .header("host", "localhost:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .body(Body::from(body.to_string()))
        .expect("request");
    let resp = app.clone().oneshot(req).await.expect("infallible");
    assert_eq!(resp.status(), 200);
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(v["result"]["content"][0]["text"], "from axum");
    let health = app
        .oneshot(
            http::Request::get("/health")
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    assert_eq!(health.status(), 200);
}

/// A modern `tools/call` of `echo` posted to `uri`.
fn echo_request(uri: &str) -> http::Request<Body> {
    let body = serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"nested"},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
    http::Request::post(uri)
        .header("host", "localhost:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|e| panic!("request: {e}"))
}

/// The natural axum mount: `nest_service("/mcp", McpService::new(server,
/// HttpConfig::default()))`. axum strips the prefix, so the service sees
/// `/`; it used to answer every request 404 / -32601 because the default
/// config serves only `/mcp`.
#[tokio::test]
async fn nests_in_an_axum_router_with_the_default_config() {
    let server = Server::builder("axum-nested", "1.0.0")
        .tool(
            tool("echo")
                .description("echo")
                .handler(|a: Echo, _cx: RequestContext| async move { a.text }),
        )
        .build()
        .expect("server");
    let app: Router = Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .nest_service("/mcp", McpService::new(server, HttpConfig::default()));
    for uri in ["/mcp", "/mcp/"] {
        let resp = app
            .clone()
            .oneshot(echo_request(uri))
            .await
            .expect("infallible");
        assert_eq!(resp.status(), 200, "{uri}");
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(v["result"]["content"][0]["text"], "nested", "{uri}");
    }
    // Below the endpoint is not the endpoint.
    let resp = app
        .clone()
        .oneshot(echo_request("/mcp/other"))
        .await
        .expect("infallible");
    assert_eq!(resp.status(), 404);
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let v: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(v["error"]["code"], -32601);
    assert_eq!(v["error"]["message"], "Not Found: the MCP endpoint is /mcp");
    // The other routes are untouched.
    let health = app
        .oneshot(
            http::Request::get("/health")
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    assert_eq!(health.status(), 200);
}
