//! `ours-tools --http 127.0.0.1:PORT [--tools N]` or `ours-tools --stdio
//! [--tools N]`: our server with N (default 100) copies of the everything
//! server's echo tool, named `tool_000`…, for the tools/list benchmark. Same
//! runtime and transport entry points as `everything-server`.

use ferromcp_server::{RequestContext, Server, tool};
use std::process::ExitCode;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

fn arg_after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(String::as_str)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = arg_after(&args, "--tools").and_then(|n| n.parse().ok()).unwrap_or(100);
    let http = arg_after(&args, "--http").map(|a| a.parse::<std::net::SocketAddr>());
    let stdio = args.iter().any(|a| a == "--stdio");
    let mut b = Server::builder("mcp-rs-bench-tools", "0.1.0");
    for i in 0..n {
        b = b.tool(
            tool(format!("tool_{i:03}"))
                .description("Echoes the text back")
                .handler(|a: EchoArgs, _cx: RequestContext| async move { a.text }),
        );
    }
    let server = match b.build() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ours-tools: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let r = rt.block_on(async move {
        match (http, stdio) {
            (Some(Ok(addr)), false) => {
                eprintln!("ours-tools listening on http://{addr}/mcp");
                ferromcp_server::transport::http::serve(server, addr, async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await
                .map_err(|e| e.to_string())
            }
            (None, true) => server.serve_stdio().await.map_err(|e| e.to_string()),
            _ => Err("usage: ours-tools --http HOST:PORT [--tools N] | --stdio [--tools N]".into()),
        }
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ours-tools: {e}");
            ExitCode::FAILURE
        }
    }
}
