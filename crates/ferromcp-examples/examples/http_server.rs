//! The demo server of `src/lib.rs` over Streamable HTTP: both protocol eras
//! (2026-07-28 stateless requests and the 2025-11-25 `initialize`
//! handshake with sessions) on one endpoint, `http://127.0.0.1:8080/mcp`.
//!
//! ```sh
//! cargo run -p ferromcp-examples --example http_server            # or: -- 127.0.0.1:9000
//! mcp tools http://127.0.0.1:8080/mcp                         # another terminal
//! mcp call  http://127.0.0.1:8080/mcp word_count text="hello there"
//! cargo run -p ferromcp-examples --example client -- http://127.0.0.1:8080/mcp
//! ```
//!
//! Only loopback `Host`/`Origin` values are accepted by default (DNS
//! rebinding protection); `Server::serve_http_with` and an `OriginPolicy`
//! serve other names (see the README). Ctrl-C or SIGTERM drains in-flight
//! requests and stops (exit status 0).

use std::net::SocketAddr;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into())
        .parse()?;
    let server = ferromcp_examples::demo_server()?;
    eprintln!("http_server: http://{addr}/mcp (Ctrl-C stops)");
    server.serve_http(addr).await?;
    Ok(())
}
