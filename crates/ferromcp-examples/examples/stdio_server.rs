//! A stdio MCP server: the demo server of `src/lib.rs` (tools with typed
//! arguments and a `Json<T>` structured result, a resource, a resource
//! template, a prompt) on stdin/stdout.
//!
//! Run it under a client, which spawns it and speaks newline-delimited
//! JSON-RPC on its stdio:
//!
//! ```sh
//! cargo build -p ferromcp-examples --example stdio_server
//! mcp tools -- target/debug/examples/stdio_server
//! mcp call add a=2 b=3 -- target/debug/examples/stdio_server
//! cargo run -p ferromcp-examples --example client -- target/debug/examples/stdio_server
//! ```
//!
//! (`mcp` is this workspace's CLI: `cargo install --path crates/ferromcp-cli`.)
//! Logs go to stderr; stdout carries only protocol messages (the SDK points
//! file descriptor 1 at stderr, so a stray `println!` cannot corrupt it).

#[tokio::main]
async fn main() -> Result<(), ferromcp_server::Error> {
    let server = ferromcp_examples::demo_server()?;
    eprintln!("stdio_server: serving on stdin/stdout until stdin closes");
    server.serve_stdio().await
}
