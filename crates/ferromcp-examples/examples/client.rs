//! A client that lists a server's tools and calls one, over stdio (spawning
//! the server as a child process) or Streamable HTTP (a URL).
//!
//! ```sh
//! # stdio: everything after the options is the command to spawn
//! cargo build -p ferromcp-examples --example stdio_server
//! cargo run -p ferromcp-examples --example client -- --call add --args '{"a":2,"b":3}' target/debug/examples/stdio_server
//!
//! # HTTP: a URL (start `cargo run -p ferromcp-examples --example http_server` first)
//! cargo run -p ferromcp-examples --example client -- --call word_count --args '{"text":"a b c"}' http://127.0.0.1:8080/mcp
//! ```
//!
//! The client negotiates the era itself: it probes with `server/discover`
//! (2026-07-28) and falls back to the `initialize` handshake for older
//! servers. `--era modern|handshake` pins one.

use ferromcp_client::protocol::types::JsonObject;
use ferromcp_client::{ClientBuilder, EraPreference, StdioCommand};

const USAGE: &str =
    "usage: client [--era modern|handshake] [--call TOOL [--args JSON]] (URL | COMMAND [ARGS...])";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    let (mut call, mut call_args, mut era) = (None, JsonObject::new(), EraPreference::Auto);
    while let Some(flag) = args.next_if(|a| a.starts_with("--")) {
        let value = args.next().ok_or(USAGE)?;
        match flag.as_str() {
            "--call" => call = Some(value),
            "--args" => call_args = serde_json::from_str(&value)?,
            "--era" => {
                era = match value.as_str() {
                    "modern" => EraPreference::Modern,
                    "handshake" => EraPreference::Handshake,
                    _ => return Err(USAGE.into()),
                }
            }
            _ => return Err(USAGE.into()),
        }
    }
    let target: Vec<String> = args.collect();
    let first = target.first().ok_or(USAGE)?;
    let builder = ClientBuilder::new("mcp-examples-client", env!("CARGO_PKG_VERSION")).era(era);
    let client = if first.starts_with("http://") || first.starts_with("https://") {
        builder.connect_url(first).await?
    } else {
        builder
            .connect_command(StdioCommand::new(first, &target[1..]))
            .await?
    };
    println!(
        "connected: {:?} era, protocol {}",
        client.era(),
        client.protocol_version()
    );

    for t in client.list_tools().await? {
        println!(
            "tool {:<12} {}",
            t.name,
            t.description.as_deref().unwrap_or("")
        );
    }
    if let Some(name) = call {
        let result = client.call_tool(&name, Some(call_args)).await?;
        for block in &result.content {
            if let Some(text) = block.as_text() {
                println!("{name} → {text}");
            }
        }
        if let Some(structured) = &result.structured_content {
            println!("{name} → structured: {structured}");
        }
        if result.is_error == Some(true) {
            println!("({name} reported an error)");
        }
    }
    client.close().await;
    Ok(())
}
