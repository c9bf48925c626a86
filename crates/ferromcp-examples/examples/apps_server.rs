//! An MCP Apps server: a `roll` tool whose results a host shows in a small
//! HTML view (`ui://dice/view.html`), and a `reroll` tool only that view
//! calls (visibility `["app"]`: hosts keep it out of the model's tool list).
//!
//! Over stdio by default, or Streamable HTTP with `--http ADDR`; both
//! protocol eras either way.
//!
//! ```sh
//! cargo build -p ferromcp-examples --example apps_server
//! mcp tools -- target/debug/examples/apps_server            # `roll` is marked as having an app
//! mcp read ui://dice/view.html --save view.html -- target/debug/examples/apps_server
//! cargo run -p ferromcp-examples --example apps_server -- --http 127.0.0.1:8080
//! ```

use ferromcp_server::protocol::types::{UiToolMeta, UiVisibility};
use ferromcp_server::{Json, RequestContext, Server, tool, ui_resource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

const VIEW: &str = "ui://dice/view.html";
const USAGE: &str = "usage: apps_server [--http ADDR]";

#[derive(Deserialize, JsonSchema)]
struct Roll {
    /// How many sides the die has (2 to 100).
    sides: u32,
}

#[derive(Serialize, JsonSchema)]
struct Rolled {
    /// The face that came up.
    value: u32,
}

/// A face from 1 to `sides`, from the clock (no randomness crate needed
/// for a demo).
fn roll(sides: u32) -> Result<Json<Rolled>, String> {
    if !(2..=100).contains(&sides) {
        return Err(format!("sides must be 2 to 100, not {sides}"));
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    Ok(Json(Rolled {
        value: nanos % sides + 1,
    }))
}

fn server() -> Result<Server, ferromcp_server::Error> {
    Server::builder("dice", env!("CARGO_PKG_VERSION"))
        .ui_resource(
            ui_resource(VIEW, "dice_view")
                .title("Dice")
                .description("Shows the die and rolls it again")
                .html(include_str!("apps_server.html"))
                .prefers_border(true),
        )
        .tool(
            tool("roll")
                .description("Rolls a die with the given number of sides")
                .handler(|a: Roll, _cx: RequestContext| async move { roll(a.sides) })
                .with_ui(VIEW),
        )
        .tool(
            tool("reroll")
                .description("Rolls again (called by the dice view)")
                .handler(|a: Roll, _cx: RequestContext| async move { roll(a.sides) })
                .with_ui(UiToolMeta::new(VIEW).visibility([UiVisibility::App])),
        )
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = server()?;
    match args.as_slice() {
        [] => {
            eprintln!("apps_server: serving on stdin/stdout until stdin closes");
            server.serve_stdio().await?;
        }
        [flag, addr] if flag == "--http" => {
            let addr: SocketAddr = addr.parse()?;
            eprintln!("apps_server: http://{addr}/mcp (Ctrl-C stops)");
            server.serve_http(addr).await?;
        }
        _ => return Err(USAGE.into()),
    }
    Ok(())
}
