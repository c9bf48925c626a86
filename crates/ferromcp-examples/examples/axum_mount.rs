//! Mounting the MCP endpoint inside an existing axum application, next to
//! its other routes.
//!
//! ```sh
//! cargo run -p ferromcp-examples --example axum_mount               # or: -- 127.0.0.1:9000
//! curl http://127.0.0.1:3000/health                     # another terminal
//! mcp tools http://127.0.0.1:3000/mcp
//! cargo run -p ferromcp-examples --example client -- http://127.0.0.1:3000/mcp
//! ```
//!
//! `McpService` is a plain `tower::Service`. Both mounts below work with
//! the default `HttpConfig`:
//!
//! - `nest_service("/mcp", svc)`: axum strips the prefix, so the service
//!   sees `/`, which it serves as its endpoint too;
//! - `route_service("/mcp", svc)`: the service sees `/mcp`, its default path.
//!
//! (With a custom mount point and `route_service`, set `HttpConfig::path`
//! to that point, or use `HttpConfig::any_path` to leave path matching to
//! the router.)

use axum::Router;
use axum::routing::get;
use ferromcp_server::transport::http::{HttpConfig, McpService};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mcp = McpService::new(ferromcp_examples::demo_server()?, HttpConfig::default());
    let app = Router::new()
        .route(
            "/",
            get(|| async { "an application that also speaks MCP at /mcp\n" }),
        )
        .route("/health", get(|| async { "ok\n" }))
        .nest_service("/mcp", mcp.clone());
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("axum_mount: http://{addr}/ (MCP at /mcp; Ctrl-C stops)");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            // End open SSE streams (listen, handshake-era GET) so the
            // graceful shutdown does not wait on them.
            mcp.shutdown_streams();
        })
        .await?;
    Ok(())
}
