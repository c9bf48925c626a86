//! A skills server: every directory under the folder given as argument
//! that holds a `SKILL.md` is served as a skill (`skill://` resources,
//! `skills/list`, `skills/get`, `resources/directory/read`), and the
//! folder is watched, so edits show up live
//! (`notifications/resources/list_changed`).
//!
//! Over stdio by default, or Streamable HTTP with `--http ADDR`; both
//! protocol eras either way.
//!
//! ```sh
//! cargo build -p ferromcp-examples --example skills_server
//! mcp skills -- target/debug/examples/skills_server crates/ferromcp-examples/skills
//! mcp skill git-workflow --save /tmp/skills -- target/debug/examples/skills_server crates/ferromcp-examples/skills
//! cargo run -p ferromcp-examples --example skills_server -- crates/ferromcp-examples/skills --http 127.0.0.1:8080
//! ```

use ferromcp_server::Server;
use ferromcp_server::skills;
use std::net::SocketAddr;
use std::time::Duration;

const USAGE: &str = "usage: skills_server DIR [--http ADDR]";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, http) = match args.as_slice() {
        [dir] => (dir, None),
        [dir, flag, addr] if flag == "--http" => (dir, Some(addr.parse::<SocketAddr>()?)),
        _ => return Err(USAGE.into()),
    };
    let server = Server::builder("skills", env!("CARGO_PKG_VERSION"))
        .skills_dir(dir)
        .build()?;
    // Dropping the watcher stops it: keep it until the server ends.
    let _watch = skills::watch(server.clone(), dir, Duration::from_millis(200))?;
    match http {
        None => {
            eprintln!("skills_server: serving {dir} on stdin/stdout until stdin closes");
            server.serve_stdio().await?;
        }
        Some(addr) => {
            eprintln!("skills_server: serving {dir} at http://{addr}/mcp (Ctrl-C stops)");
            server.serve_http(addr).await?;
        }
    }
    Ok(())
}
