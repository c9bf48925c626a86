//! A tool that asks the user for input (elicitation), written once for both
//! protocol eras.
//!
//! ```sh
//! cargo run -p ferromcp-examples --example mrtr_elicitation            # demo, both eras, in memory
//! cargo run -p ferromcp-examples --example mrtr_elicitation -- --stdio # serve it on stdio
//! ```
//!
//! The handler calls `cx.elicit(key, request)?`. Without an answer yet, the
//! `?` returns `HandlerError::NeedInput`, and the SDK gets the answer the
//! era's way:
//!
//! - **2026-07-28 (multi round-trip requests, MRTR)**: the server answers
//!   the `tools/call` with an `input_required` result; the client asks the
//!   user and sends the `tools/call` again with the answer attached. The
//!   handler then **runs again from the top**, and this time `cx.elicit`
//!   returns the answer. Anything the handler did before asking runs twice,
//!   so keep side effects after the questions (or carry progress in
//!   `InputRequired::state`, which the server seals and hands back through
//!   `cx.state()`).
//! - **2025-11-25 (handshake era)**: the server sends an
//!   `elicitation/create` request to the client on the same connection,
//!   waits for the answer, and calls the handler again with it: the same
//!   code, the same re-run.
//!
//! The demo runs the server and a client in one process over the in-memory
//! pair (`Server::serve_in_memory` + `ClientBuilder::connect_io`); its
//! elicitation handler plays the user.

use ferromcp_client::protocol::types::{ElicitAction, ElicitRequestParams, ElicitResult};
use ferromcp_client::{ClientBuilder, EraPreference};
use ferromcp_server::{HandlerError, RequestContext, Server, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Deserialize, JsonSchema)]
struct BookArgs {
    /// The restaurant to book.
    restaurant: String,
}

fn server(runs: Arc<AtomicUsize>) -> Result<Server, ferromcp_server::Error> {
    Server::builder("mrtr-elicitation", "1.0.0")
        .tool(
            tool("book_table")
                .description("Books a table, asking the user for the party size")
                .handler(move |a: BookArgs, cx: RequestContext| {
                    // Counted to show the re-run; not needed in real code.
                    runs.fetch_add(1, Ordering::SeqCst);
                    async move {
                        let ask: ElicitRequestParams = serde_json::from_value(json!({
                            "mode": "form",
                            "message": format!("How many people for {}?", a.restaurant),
                            "requestedSchema": {
                                "type": "object",
                                "properties": {"people": {"type": "integer", "minimum": 1, "maximum": 20}},
                                "required": ["people"]
                            }
                        }))?;
                        // First run: no answer yet, `?` asks for it. Next
                        // run (from the top): the answer is here.
                        let answer = cx.elicit("party_size", ask)?;
                        if answer.action != ElicitAction::Accept {
                            return Ok(format!("No booking at {}.", a.restaurant));
                        }
                        let people = answer
                            .content
                            .as_ref()
                            .and_then(|c| c.get("people"))
                            .and_then(|v| serde_json::to_value(v).ok())
                            .and_then(|v| v.as_u64())
                            .ok_or_else(|| HandlerError::failed("the answer had no party size"))?;
                        // Side effects go after the questions.
                        Ok::<_, HandlerError>(format!(
                            "Booked a table for {people} at {}.",
                            a.restaurant
                        ))
                    }
                }),
        )
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "--stdio") {
        return Ok(server(Arc::default())?.serve_stdio().await?);
    }
    for era in [EraPreference::Modern, EraPreference::Handshake] {
        let runs = Arc::new(AtomicUsize::new(0));
        let (read, write) = server(runs.clone())?.serve_in_memory();
        let client = ClientBuilder::new("mrtr-demo", "1.0.0")
            .era(era)
            .on_elicitation(|req| async move {
                println!("  user asked: {}", req.message());
                let mut content = BTreeMap::new();
                content.insert("people".to_string(), 4i64.into());
                Ok(ElicitResult::accept(content))
            })
            .connect_io(read, write)
            .await?;
        println!("{:?} era ({}):", client.era(), client.protocol_version());
        let args = json!({"restaurant": "Chez Rust"});
        let result = client
            .call_tool("book_table", args.as_object().cloned())
            .await?;
        for block in &result.content {
            if let Some(text) = block.as_text() {
                println!("  result: {text}");
            }
        }
        println!("  the handler ran {} times", runs.load(Ordering::SeqCst));
        client.close().await;
    }
    Ok(())
}
