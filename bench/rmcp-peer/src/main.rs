//! `rmcp-server --http 127.0.0.1:PORT [--sessions] [--tools N]` or
//! `rmcp-server --stdio [--tools N]`.
//!
//! An `echo` tool on rmcp 3.9, configured the way its docs recommend for a
//! fast stateless server: Streamable HTTP with `legacy_session_mode = false`
//! and `json_response = true`, served by hyper-util's auto (HTTP/1.1 + h2)
//! connection builder, the one `axum::serve` uses, with TCP_NODELAY on every
//! accepted socket. `--sessions` turns `legacy_session_mode` on for the
//! 2025-11-25 session path. `--tools N` registers N copies of the echo tool
//! named `tool_000`… instead (the tools/list benchmark). stdio uses
//! `stdio_pipes`, rmcp's non-blocking transport for FIFOs.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Clone)]
struct Echo {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Echo {
    #[tool(description = "Echoes the text back")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// The router: the echo tool alone, or `n` renamed copies of it.
fn router(tools: Option<usize>) -> ToolRouter<Echo> {
    let base = Echo::tool_router();
    let Some(n) = tools else { return base };
    let echo = base.into_iter().next().expect("the echo route");
    let mut r = ToolRouter::new();
    for i in 0..n {
        let mut route = echo.clone();
        route.attr.name = format!("tool_{i:03}").into();
        r.add_route(route);
    }
    r
}

fn arg_after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(String::as_str)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tools = arg_after(&args, "--tools").and_then(|n| n.parse().ok());
    let sessions = args.iter().any(|a| a == "--sessions");
    let http = arg_after(&args, "--http").map(|a| a.parse::<std::net::SocketAddr>());
    let stdio = args.iter().any(|a| a == "--stdio");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    // Built once; the stateless service clones it for every request.
    let router = router(tools);
    let r: Result<(), Box<dyn std::error::Error>> = rt.block_on(async move {
        match (http, stdio) {
            (Some(Ok(addr)), false) => serve_http(addr, router, sessions).await,
            (None, true) => {
                let service = Echo { tool_router: router }.serve(rmcp::transport::io::stdio_pipes()).await?;
                service.waiting().await?;
                Ok(())
            }
            _ => Err("usage: rmcp-server --http HOST:PORT [--sessions] [--tools N] | --stdio [--tools N]".into()),
        }
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp-server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_http(addr: std::net::SocketAddr, router: ToolRouter<Echo>, sessions: bool) -> Result<(), Box<dyn std::error::Error>> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;
    use hyper_util::service::TowerToHyperService;
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(sessions)
        .with_json_response(true);
    let service = StreamableHttpService::new(
        move || Ok(Echo { tool_router: router.clone() }),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!("rmcp-server listening on http://{addr}/mcp");
    let builder = Arc::new(Builder::new(TokioExecutor::new()));
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        let svc = TowerToHyperService::new(service.clone());
        let builder = builder.clone();
        tokio::spawn(async move {
            let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}
