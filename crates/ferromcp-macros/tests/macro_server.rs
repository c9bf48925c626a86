//! A server declared with the macros lists its tools and prompts with the
//! schemas and descriptions taken from the Rust declarations, and calls
//! them (driven over the in-process Streamable HTTP service).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_server::macros::{prompt, resource, router, tool};
use ferromcp_server::protocol::types::{ContentBlock, PromptMessage, ResourceContents, Role};
use ferromcp_server::testing::{call_tool, request};
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{Json, RequestContext, ResourceRequest, Server, State};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    /// The sum.
    sum: i64,
}

/// Adds two numbers.
///
/// Exactly.
#[tool]
async fn add(
    /// The first operand.
    a: i64,
    /// The second operand.
    b: i64,
    /// Added when given.
    c: Option<i64>,
) -> Json<Sum> {
    Json(Sum {
        sum: a + b + c.unwrap_or(0),
    })
}

struct Users {
    names: Vec<String>,
}

/// Finds a user by index.
#[tool(name = "user")]
async fn find_user(
    State(users): State<Arc<Users>>,
    #[serde(rename = "index")]
    /// Zero-based.
    i: usize,
    _cx: RequestContext,
) -> Result<String, String> {
    users
        .names
        .get(i)
        .cloned()
        .ok_or_else(|| format!("no user {i}"))
}

/// Today's message: a `String`, the URI and MIME type come from here.
#[resource(uri = "motd://today", mime_type = "text/markdown")]
async fn motd() -> String {
    "*Be kind.*".into()
}

/// A word echoed back.
#[resource(uri = "echo://{word}")]
async fn echo_word(word: String) -> Result<String, String> {
    if word.is_empty() {
        return Err("no word".into());
    }
    Ok(word)
}

/// Greets: a prompt returning a `String` is one user message.
#[prompt]
async fn hello(name: String) -> String {
    format!("Say hello to {name}")
}

/// A second state value, of its own type.
#[derive(Clone)]
struct Prefix(&'static str);

/// Names a user with a prefix: two `State`s (state is a type map).
#[tool]
async fn prefixed(
    State(users): State<Arc<Users>>,
    State(Prefix(p)): State<Prefix>,
    i: usize,
) -> String {
    format!("{p}{}", users.names.get(i).cloned().unwrap_or_default())
}

fn pong_meta() -> ferromcp_server::protocol::types::JsonObject {
    let mut m = serde_json::Map::new();
    m.insert("com.example/team".into(), "net".into());
    m
}

// TOOL-08
#[tool(
    description = "Says pong",
    annotations(read_only_hint = true, destructive_hint = false, idempotent_hint),
    meta = pong_meta()
)]
async fn ping() -> &'static str {
    "pong"
}

/// Asks for a summary.
#[prompt]
async fn summarize(
    /// The text to summarize.
    text: String,
    /// At most this many words.
    words: Option<String>,
) -> Vec<PromptMessage> {
    let limit = words.unwrap_or_else(|| "50".into());
    let t = format!("Summarize in {limit} words: {text}");
    vec![PromptMessage::new(Role::User, ContentBlock::text(t))]
}

/// The user list.
#[resource(uri = "users://all", mime_type = "text/plain")]
async fn all_users(State(users): State<Arc<Users>>, req: ResourceRequest) -> ResourceContents {
    ResourceContents::text(req.uri, None, users.names.join(","))
}

/// One user, by index.
#[resource(uri = "users://{index}{?upper}", name = "user")]
async fn one_user(
    State(users): State<Arc<Users>>,
    index: String,
    upper: Option<String>,
    req: ResourceRequest,
) -> Result<ResourceContents, String> {
    let i: usize = index.parse().map_err(|_| format!("bad index {index:?}"))?;
    let name = users.names.get(i).ok_or(format!("no user {i}"))?;
    let name = match upper {
        Some(_) => name.to_uppercase(),
        None => name.clone(),
    };
    Ok(ResourceContents::text(req.uri, None, name))
}

/// A server whose tools are methods.
#[derive(Default)]
struct Counter {
    n: AtomicU64,
}

#[router]
impl Counter {
    /// Adds `by` and returns the new value.
    #[tool]
    async fn bump(
        &self,
        /// How much to add.
        by: u64,
    ) -> Json<u64> {
        Json(self.n.fetch_add(by, Ordering::Relaxed) + by)
    }

    /// Reads the counter, prefixed by the state's greeting.
    #[tool(name = "read")]
    async fn read_counter(&self, State(users): State<Arc<Users>>, cx: RequestContext) -> String {
        let first = users.names.first().cloned().unwrap_or_default();
        format!("{first} {} {}", self.n.load(Ordering::Relaxed), cx.method())
    }

    /// Fails on purpose.
    #[tool]
    async fn fail(&self) -> Result<String, String> {
        Err("it failed".into())
    }

    /// Needs no receiver.
    #[tool]
    async fn version() -> String {
        "v1".into()
    }

    /// Describes the counter.
    #[prompt(name = "describe")]
    async fn describe_prompt(&self, style: Option<String>) -> Vec<PromptMessage> {
        let t = format!(
            "{} counter at {}",
            style.unwrap_or_default(),
            self.n.load(Ordering::Relaxed)
        );
        vec![PromptMessage::new(Role::User, ContentBlock::text(t))]
    }

    /// The counter as a resource.
    #[resource(uri = "counter://value")]
    async fn value(&self, req: ResourceRequest) -> ResourceContents {
        let n = self.n.load(Ordering::Relaxed);
        ResourceContents::text(req.uri, None, n.to_string())
    }

    /// The counter plus an offset.
    #[resource(uri = "counter://plus/{k}")]
    async fn plus(&self, k: String, req: ResourceRequest) -> Result<ResourceContents, String> {
        let k: u64 = k.parse().map_err(|_| "not a number".to_string())?;
        let n = self.n.load(Ordering::Relaxed) + k;
        Ok(ResourceContents::text(req.uri, None, n.to_string()))
    }

    /// Not a tool: left alone.
    fn helper(&self) -> u64 {
        self.n.load(Ordering::Relaxed)
    }
}

fn service() -> McpService {
    let counter = Arc::new(Counter::default());
    assert_eq!(counter.helper(), 0);
    let builder = Server::builder("macros", "1.0.0")
        .with_state(Arc::new(Users {
            names: vec!["ada".into(), "bo".into()],
        }))
        .tool(add_tool())
        .tool(find_user_tool())
        .with_state(Prefix("user:"))
        .tool(prefixed_tool())
        .resource(motd_resource())
        // `.resource()` takes a template too (issue 30 item 9).
        .resource(echo_word_resource())
        .prompt(hello_prompt())
        .tool(ping_tool())
        .prompt(summarize_prompt())
        .resource(all_users_resource())
        .resource_template(one_user_resource());
    let server = counter.register(builder).build().expect("server");
    McpService::new(server, HttpConfig::default())
}

async fn listed(svc: &McpService, method: &str, key: &str) -> Vec<Value> {
    let r = request(svc, method, json!({})).await;
    r["result"][key].as_array().cloned().expect("a list")
}

fn find<'a>(items: &'a [Value], name: &str) -> &'a Value {
    items
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {items:?}"))
}

#[tokio::test(flavor = "current_thread")]
async fn tools_are_listed_with_schemas_and_descriptions_from_the_declaration() {
    let svc = service();
    let tools = listed(&svc, "tools/list", "tools").await;
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "add", "bump", "fail", "ping", "prefixed", "read", "user", "version"
        ]
    );

    let add = find(&tools, "add");
    assert_eq!(add["description"], "Adds two numbers.\n\nExactly.", "{add}");
    let input = &add["inputSchema"];
    assert_eq!(input["type"], "object", "{input}");
    assert_eq!(
        input["properties"]["a"]["description"],
        "The first operand."
    );
    assert_eq!(
        input["properties"]["b"]["description"],
        "The second operand."
    );
    assert_eq!(input["properties"]["c"]["description"], "Added when given.");
    let mut required: Vec<&str> = input["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["a", "b"], "{input}");
    let output = &add["outputSchema"];
    assert_eq!(
        output["properties"]["sum"]["description"], "The sum.",
        "{add}"
    );

    let user = find(&tools, "user");
    assert_eq!(user["description"], "Finds a user by index.");
    assert!(
        user["inputSchema"]["properties"]["index"].is_object(),
        "{user}"
    );
    assert!(user.get("outputSchema").is_none(), "{user}");

    let ping = find(&tools, "ping");
    assert_eq!(ping["description"], "Says pong");
    assert_eq!(ping["inputSchema"]["type"], "object", "{ping}");
    assert_eq!(ping["inputSchema"]["additionalProperties"], false, "{ping}");
    assert_eq!(
        ping["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true}),
        "{ping}"
    );
    assert_eq!(ping["_meta"]["com.example/team"], "net", "{ping}");

    let bump = find(&tools, "bump");
    assert_eq!(bump["description"], "Adds `by` and returns the new value.");
    assert_eq!(
        bump["inputSchema"]["properties"]["by"]["description"],
        "How much to add."
    );
    assert_eq!(bump["outputSchema"]["type"], "integer", "{bump}");
}

#[tokio::test(flavor = "current_thread")]
async fn free_function_tools_are_called() {
    let svc = service();
    let r = call_tool(&svc, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(r["result"]["structuredContent"], json!({"sum": 5}), "{r}");
    let r = call_tool(&svc, "add", json!({"a": 2, "b": 3, "c": 10})).await;
    assert_eq!(r["result"]["structuredContent"], json!({"sum": 15}), "{r}");
    let r = call_tool(&svc, "add", json!({"a": "two", "b": 3})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");

    let r = call_tool(&svc, "user", json!({"index": 1})).await;
    assert_eq!(r["result"]["content"][0]["text"], "bo", "{r}");
    let r = call_tool(&svc, "user", json!({"index": 9})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "no user 9", "{r}");

    let r = call_tool(&svc, "ping", json!({})).await;
    assert_eq!(r["result"]["content"][0]["text"], "pong", "{r}");
}

#[tokio::test(flavor = "current_thread")]
async fn router_methods_share_the_server_value() {
    let svc = service();
    let r = call_tool(&svc, "bump", json!({"by": 2})).await;
    assert_eq!(r["result"]["structuredContent"], 2, "{r}");
    let r = call_tool(&svc, "bump", json!({"by": 5})).await;
    assert_eq!(r["result"]["structuredContent"], 7, "{r}");
    let r = call_tool(&svc, "read", json!({})).await;
    assert_eq!(r["result"]["content"][0]["text"], "ada 7 tools/call", "{r}");
    let r = call_tool(&svc, "fail", json!({})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "it failed", "{r}");
    let r = call_tool(&svc, "version", json!({})).await;
    assert_eq!(r["result"]["content"][0]["text"], "v1", "{r}");
}

#[tokio::test(flavor = "current_thread")]
async fn prompts_are_listed_with_their_arguments_and_rendered() {
    let svc = service();
    let prompts = listed(&svc, "prompts/list", "prompts").await;
    let s = find(&prompts, "summarize");
    assert_eq!(s["description"], "Asks for a summary.");
    assert_eq!(
        s["arguments"],
        json!([
            {"name": "text", "description": "The text to summarize.", "required": true},
            {"name": "words", "description": "At most this many words.", "required": false}
        ])
    );
    let d = find(&prompts, "describe");
    assert_eq!(d["arguments"][0]["name"], "style", "{d}");

    let params = json!({"name": "summarize", "arguments": {"text": "hi"}});
    let r = request(&svc, "prompts/get", params).await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"], "Summarize in 50 words: hi",
        "{r}"
    );
    // A required argument missing is refused before the handler runs.
    let params = json!({"name": "summarize", "arguments": {}});
    let r = request(&svc, "prompts/get", params).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");

    let params = json!({"name": "describe", "arguments": {"style": "a fine"}});
    let r = request(&svc, "prompts/get", params).await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"], "a fine counter at 0",
        "{r}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn resources_and_templates_are_listed_and_read() {
    let svc = service();
    let resources = listed(&svc, "resources/list", "resources").await;
    let all = find(&resources, "all_users");
    assert_eq!(all["uri"], "users://all", "{all}");
    assert_eq!(all["description"], "The user list.", "{all}");
    assert_eq!(all["mimeType"], "text/plain", "{all}");
    assert_eq!(find(&resources, "value")["uri"], "counter://value");
    let templates = listed(&svc, "resources/templates/list", "resourceTemplates").await;
    let user = find(&templates, "user");
    assert_eq!(user["uriTemplate"], "users://{index}{?upper}", "{user}");
    assert_eq!(user["description"], "One user, by index.", "{user}");
    assert_eq!(
        find(&templates, "plus")["uriTemplate"],
        "counter://plus/{k}"
    );

    let read = |uri: &'static str| {
        let svc = svc.clone();
        async move { request(&svc, "resources/read", json!({"uri": uri})).await }
    };
    let r = read("users://all").await;
    assert_eq!(r["result"]["contents"][0]["text"], "ada,bo", "{r}");
    let r = read("users://1").await;
    assert_eq!(r["result"]["contents"][0]["text"], "bo", "{r}");
    let r = read("users://0?upper=1").await;
    assert_eq!(r["result"]["contents"][0]["text"], "ADA", "{r}");
    let r = read("users://7").await;
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("no user 7"),
        "{r}"
    );
    call_tool(&svc, "bump", json!({"by": 3})).await;
    let r = read("counter://value").await;
    assert_eq!(r["result"]["contents"][0]["text"], "3", "{r}");
    let r = read("counter://plus/4").await;
    assert_eq!(r["result"]["contents"][0]["text"], "7", "{r}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_handler_takes_several_states() {
    let svc = service();
    let r = call_tool(&svc, "prefixed", json!({"i": 1})).await;
    assert_eq!(r["result"]["content"][0]["text"], "user:bo", "{r}");
}

#[test]
fn a_missing_second_state_is_a_configuration_error() {
    let e = Server::builder("macros", "1.0.0")
        .with_state(Arc::new(Users { names: Vec::new() }))
        .tool(prefixed_tool())
        .build()
        .expect_err("Prefix was never given");
    assert!(e.is_config(), "{e}");
    assert!(e.to_string().contains("Prefix"), "{e}");
}

#[tokio::test(flavor = "current_thread")]
async fn resources_and_prompts_may_return_a_string() {
    let svc = service();
    let r = request(&svc, "resources/read", json!({"uri": "motd://today"})).await;
    assert_eq!(
        r["result"]["contents"],
        json!([{"uri": "motd://today", "mimeType": "text/markdown", "text": "*Be kind.*"}]),
        "{r}"
    );
    let r = request(&svc, "resources/read", json!({"uri": "echo://hi"})).await;
    assert_eq!(
        r["result"]["contents"],
        json!([{"uri": "echo://hi", "text": "hi"}]),
        "{r}"
    );
    let params = json!({"name": "hello", "arguments": {"name": "Ada"}});
    let r = request(&svc, "prompts/get", params).await;
    assert_eq!(
        r["result"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Say hello to Ada"}}]),
        "{r}"
    );
}
