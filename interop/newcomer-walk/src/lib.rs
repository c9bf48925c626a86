//! Newcomer walk-through: tasks 1 (macros: Json<T> tool, resource, template,
//! prompt), 3 (shared state), 4 (typed elicitation), 5 (anyhow and
//! Result<String, String> errors).
use ferromcp_server::macros::{prompt, resource, tool};
use ferromcp_server::{Elicited, Json, RequestContext, Server, ServerBuilder, State};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Serialize, JsonSchema)]
pub struct Sum {
    pub sum: i64,
}

/// Adds two integers.
#[tool(annotations(read_only_hint = true, idempotent_hint = true))]
pub async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Json<Sum> {
    Json(Sum { sum: a + b })
}

/// What this server is.
#[resource(uri = "notes://readme", mime_type = "text/plain")]
pub async fn readme() -> String {
    "Notes live at notes://{id}".into()
}

/// One note by id.
#[resource(uri = "notes://{id}", mime_type = "text/plain")]
pub async fn note(id: String) -> Result<String, String> {
    match id.as_str() {
        "1" => Ok("Buy milk.".into()),
        _ => Err(format!("no note {id}")),
    }
}

/// Asks for a review.
#[prompt]
pub async fn review(
    /// The code to review.
    code: String,
) -> String {
    format!("Please review:\n{code}")
}

// Task 3: shared state, two types.
pub struct Counter(pub AtomicU64);
pub struct Greeting(pub String);

/// Greets and counts.
#[tool]
pub async fn greet(
    State(counter): State<Arc<Counter>>,
    State(greeting): State<Arc<Greeting>>,
    /// Who.
    name: String,
) -> Result<String, String> {
    if name.is_empty() {
        return Err("a name, please".into());
    }
    let n = counter.0.fetch_add(1, Ordering::SeqCst) + 1;
    Ok(format!("{}, {name}! (#{n})", greeting.0))
}

// Task 4: typed elicitation.
#[derive(Deserialize, JsonSchema)]
pub struct Signup {
    /// Your name
    pub name: String,
    /// Your age
    pub age: u32,
    /// Plan
    pub plan: String,
    /// Newsletter?
    pub newsletter: bool,
}

/// Signs the user up.
#[tool]
pub async fn signup(cx: RequestContext) -> anyhow::Result<String> {
    match cx.elicit_form::<Signup>("signup", "Sign up")? {
        Elicited::Accepted(s) => Ok(format!("welcome {} ({}, {})", s.name, s.age, s.plan)),
        Elicited::Declined | Elicited::Cancelled => Ok("maybe later".into()),
    }
}

// Task 5: anyhow with context.
/// Reads a file.
#[tool]
pub async fn read_file(
    /// Path.
    path: String,
) -> anyhow::Result<String> {
    use anyhow::Context;
    let s = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    Ok(s)
}

pub fn builder() -> ServerBuilder {
    Server::builder("scratch", "0.1.0")
        .with_state(Arc::new(Counter(AtomicU64::new(0))))
        .with_state(Arc::new(Greeting("Hello".into())))
        .tools([add_tool(), greet_tool(), signup_tool(), read_file_tool()])
        .resource(readme_resource())
        .resource(note_resource())
        .prompt(review_prompt())
}

pub fn server() -> Result<Server, ferromcp_server::Error> {
    builder().build()
}
