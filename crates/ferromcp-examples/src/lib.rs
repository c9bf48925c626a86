//! The demo server the examples share: a few tools (typed arguments with
//! `schemars`, a [`Json`] structured result), a resource, a resource
//! template and a prompt. `examples/stdio_server.rs` serves it on stdio,
//! `examples/http_server.rs` over Streamable HTTP, `examples/axum_mount.rs`
//! inside an axum router, and `examples/in_memory_test.rs` tests it with
//! the in-memory client/server pair.
//!
//! Run one with `cargo run -p ferromcp-examples --example <name>`; each example
//! starts with a comment on how to run and talk to it.

// The README's Rust blocks are this crate's doctests, so what a new user
// copies first always builds.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

use ferromcp_server::protocol::types::{
    ContentBlock, PromptMessage, Resource, ResourceContents, ResourceTemplate, Role,
};
use ferromcp_server::{
    HandlerError, Json, PromptArgs, RequestContext, ResourceDef, ResourceRequest, Server,
    ServerBuilder, TemplateDef, prompt, tool,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of the `add` tool. Doc comments become the schema's
/// descriptions, which clients show to the model.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The first addend.
    pub a: i64,
    /// The second addend.
    pub b: i64,
}

/// The `add` tool's structured result (its `outputSchema`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Sum {
    /// `a + b`.
    pub sum: i64,
}

/// Arguments of the `word_count` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TextArgs {
    /// The text to look at.
    pub text: String,
}

/// The `word_count` tool's structured result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Counts {
    /// Words separated by whitespace.
    pub words: usize,
    /// Unicode scalar values.
    pub chars: usize,
}

/// Notes served by the `notes://{id}` template.
const NOTES: &[(&str, &str)] = &[
    ("1", "Buy milk."),
    ("2", "The in-memory pair needs no process and no socket."),
];

/// Builds the demo server.
pub fn demo_server() -> Result<Server, ferromcp_server::Error> {
    demo_builder().build()
}

/// The demo server's builder, to add more before building.
pub fn demo_builder() -> ServerBuilder {
    Server::builder("ferromcp-examples", env!("CARGO_PKG_VERSION"))
        .instructions("A demo server: arithmetic, text statistics, notes and a review prompt.")
        // A typed tool: arguments are deserialized into `AddArgs` (a bad
        // call is an `isError` result the model can read) and `Json<T>`
        // returns `structuredContent`; `output::<Sum>()` declares the schema.
        .tool(
            tool("add")
                .description("Adds two integers")
                .output::<Sum>()
                .handler(
                    |a: AddArgs, _cx: RequestContext| async move { Json(Sum { sum: a.a + a.b }) },
                ),
        )
        .tool(
            tool("word_count")
                .description("Counts the words and characters of a text")
                .output::<Counts>()
                .handler(|a: TextArgs, _cx: RequestContext| async move {
                    Json(Counts {
                        words: a.text.split_whitespace().count(),
                        chars: a.text.chars().count(),
                    })
                }),
        )
        // A plain string is a text result; an `Err` is an `isError` result.
        .tool(tool("shout").description("Upper-cases a text").handler(
            |a: TextArgs, _cx: RequestContext| async move {
                if a.text.is_empty() {
                    return Err(HandlerError::Failed("nothing to shout".into()));
                }
                Ok(a.text.to_uppercase())
            },
        ))
        // A fixed resource.
        .resource(ResourceDef::new(
            Resource {
                mime_type: Some("text/plain".into()),
                description: Some("What this server is".into()),
                ..Resource::new("notes://readme", "readme")
            },
            |r: ResourceRequest, _cx: RequestContext| async move {
                ResourceContents::text(
                    r.uri,
                    Some("text/plain".into()),
                    "Notes live at notes://{id}; try notes://1.",
                )
            },
        ))
        // A template: `{id}` arrives in `r.vars`.
        .resource_template(TemplateDef::new(
            ResourceTemplate {
                uri_template: "notes://{id}".into(),
                name: "note".into(),
                description: Some("One note by id".into()),
                mime_type: Some("text/plain".into()),
                ..Default::default()
            },
            |r: ResourceRequest, _cx: RequestContext| async move {
                let id = r.vars.get("id").map(String::as_str).unwrap_or_default();
                match NOTES.iter().find(|(k, _)| *k == id) {
                    Some((_, text)) => Ok(ResourceContents::text(
                        r.uri,
                        Some("text/plain".into()),
                        *text,
                    )),
                    None => Err(HandlerError::Failed(format!("no note {id:?}"))),
                }
            },
        ))
        // A prompt with one required argument.
        .prompt(
            prompt("review")
                .description("Asks the model to review some code")
                .argument("code", "The code to review", true)
                .handler(|a: PromptArgs, _cx: RequestContext| async move {
                    let code = a.get("code").cloned().unwrap_or_default();
                    vec![PromptMessage::new(
                        Role::User,
                        ContentBlock::text(format!("Please review this code:\n\n{code}")),
                    )]
                }),
        )
}
