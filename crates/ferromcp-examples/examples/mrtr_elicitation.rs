//! A tool that asks the user for input (elicitation), written once for both
//! protocol eras.
//!
//! ```sh
//! cargo run -p ferromcp-examples --example mrtr_elicitation            # demo, both eras, in memory
//! cargo run -p ferromcp-examples --example mrtr_elicitation -- --stdio # serve it on stdio
//! ```
//!
//! The handler calls `cx.elicit_form::<PartySize>(key, message)?`: the
//! form is derived from the struct (fields in declaration order, doc
//! comments as descriptions) and the answer comes back as a `PartySize`.
//! Without an answer yet, the `?` returns `HandlerError::NeedInput`, and
//! the SDK gets the answer the era's way:
//!
//! - **2026-07-28 (multi round-trip requests, MRTR)**: the server answers
//!   the `tools/call` with an `input_required` result; the client asks the
//!   user and sends the `tools/call` again with the answer attached. The
//!   handler then **runs again from the top**, and this time
//!   `cx.elicit_form` returns the answer.
//! - **2025-11-25 (handshake era)**: the server sends an
//!   `elicitation/create` request to the client on the same connection,
//!   waits for the answer, and calls the handler again with it: the same
//!   code, the same re-run.
//!
//! **Anything the handler does before asking runs twice.** Put side effects
//! after the questions, or keep their result across the round as this
//! example does with its quote: `.map_err(|e| e.keep_state(&quote))?`
//! seals it into the `requestState`, and `cx.kept_state()` reads it back
//! on the re-run.
//!
//! The demo runs the server and a client in one process over the in-memory
//! pair (`Server::serve_in_memory` + `ClientBuilder::connect_io`); its
//! elicitation handler plays the user.

use ferromcp_client::protocol::types::ElicitResult;
use ferromcp_client::{ClientBuilder, EraPreference};
use ferromcp_server::{Elicited, HandlerError, RequestContext, Server, tool};
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

/// The form the user fills in.
#[derive(Deserialize, JsonSchema)]
struct PartySize {
    /// How many people, 1 to 20.
    #[schemars(range(min = 1, max = 20))]
    people: u8,
}

/// Counts of what ran, to show the re-run; not needed in real code.
#[derive(Default)]
struct Counts {
    runs: AtomicUsize,
    quotes: AtomicUsize,
}

fn server(counts: Arc<Counts>) -> Result<Server, ferromcp_server::Error> {
    Server::builder("mrtr-elicitation", "1.0.0")
        .tool(
            tool("book_table")
                .description("Books a table, asking the user for the party size")
                .handler(move |a: BookArgs, cx: RequestContext| {
                    counts.runs.fetch_add(1, Ordering::SeqCst);
                    let counts = counts.clone();
                    async move {
                        // Work before the question: kept across the round,
                        // so the second run does not do it again.
                        let quote: u64 = match cx.kept_state::<u64>() {
                            Some(q) => q,
                            None => 1000 + counts.quotes.fetch_add(1, Ordering::SeqCst) as u64,
                        };
                        // First run: no answer yet, `?` asks for it (and
                        // keeps the quote). Next run: the answer is here.
                        let message = format!("How many people for {}?", a.restaurant);
                        let answer = cx
                            .elicit_form::<PartySize>("party_size", &message)
                            .map_err(|e| e.keep_state(&quote))?;
                        let Elicited::Accepted(party) = answer else {
                            return Ok(format!("No booking at {}.", a.restaurant));
                        };
                        // Side effects go after the questions.
                        Ok::<_, HandlerError>(format!(
                            "Booked a table for {} at {} (quote {quote}).",
                            party.people, a.restaurant
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
        let counts = Arc::new(Counts::default());
        let (read, write) = server(counts.clone())?.serve_in_memory();
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
        println!(
            "  the handler ran {} times, the quote was made {} time(s)",
            counts.runs.load(Ordering::SeqCst),
            counts.quotes.load(Ordering::SeqCst)
        );
        client.close().await;
    }
    Ok(())
}
