// Task 2: the same server over HTTP, mounted in axum next to /health.
use axum::Router;
use axum::routing::get;
use ferromcp_server::transport::http::{HttpConfig, McpService};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mcp = McpService::new(newcomer_walk::server()?, HttpConfig::default());
    let app = Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .nest_service("/mcp", mcp.clone());
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3000".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            mcp.shutdown_streams();
        })
        .await?;
    Ok(())
}
