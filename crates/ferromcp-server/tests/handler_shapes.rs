//! Issue 25 point 2: one `handler(f)` takes handler functions of several
//! shapes (extractors such as `State<T>` and `Option<Principal>` first,
//! then the arguments, then optionally the `RequestContext`), as closures
//! with annotated parameters and as plain `async fn` items; a `State<T>`
//! nobody gave is still refused when the handler is registered.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_server::protocol::types::{CompleteRequestParams, Completion};
use ferromcp_server::testing::{call_tool, modern_request, request, send};
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{
    HandlerError, NoArgs, Principal, PromptArgs, RequestContext, ResourceRequest, Server, State,
    prompt, resource, resource_template, tool,
};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    name: String,
}

/// A second state type (state is looked up by type).
#[derive(Clone)]
struct Suffix(&'static str);

async fn args_only(a: Name) -> String {
    format!("hi {}", a.name)
}

async fn args_and_context(a: Name, cx: RequestContext) -> String {
    format!("{} {}", a.name, cx.method())
}

async fn state_and_args(State(k): State<u32>, a: Name) -> String {
    format!("{} x{k}", a.name)
}

async fn state_args_and_context(State(k): State<u32>, a: Name, cx: RequestContext) -> String {
    format!("{} x{k} {}", a.name, cx.method())
}

async fn two_states(State(k): State<u32>, State(s): State<Suffix>, a: Name) -> String {
    format!("{} x{k}{}", a.name, s.0)
}

fn server() -> Server {
    Server::builder("shapes", "1.0.0")
        .with_state(3_u32)
        .with_state(Suffix("!"))
        // async fn items, one per shape
        .tool(tool("fn_p").handler(args_only))
        .tool(tool("fn_p_cx").handler(args_and_context))
        .tool(tool("fn_s_p").handler(state_and_args))
        .tool(tool("fn_s_p_cx").handler(state_args_and_context))
        .tool(tool("fn_s_s_p").handler(two_states))
        // closures with annotated parameters, one per shape
        .tool(tool("cl_p").handler(|a: Name| async move { format!("hi {}", a.name) }))
        .tool(
            tool("cl_p_cx").handler(|a: Name, cx: RequestContext| async move {
                format!("{} {}", a.name, cx.method())
            }),
        )
        .tool(
            tool("cl_s_p")
                .handler(|State(k): State<u32>, a: Name| async move { format!("{} x{k}", a.name) }),
        )
        .tool(tool("cl_s_p_cx").handler(
            |State(k): State<u32>, a: Name, cx: RequestContext| async move {
                format!("{} x{k} {}", a.name, cx.method())
            },
        ))
        .tool(
            tool("whoami").handler(|who: Option<Principal>, _: NoArgs| async move {
                who.map_or_else(|| "anonymous".to_owned(), |p| p.subject)
            }),
        )
        .tool(tool("all").handler(
            |State(k): State<u32>,
             State(s): State<Suffix>,
             who: Option<Principal>,
             a: Name,
             cx: RequestContext| async move {
                let who = who.map_or_else(|| "anonymous".to_owned(), |p| p.subject);
                format!("{} x{k}{} {who} {}", a.name, s.0, cx.method())
            },
        ))
        .prompt(prompt("p_s").argument("name", "Who", true).handler(
            |State(s): State<Suffix>, a: PromptArgs| async move {
                format!(
                    "hello {}{}",
                    a.get("name").cloned().unwrap_or_default(),
                    s.0
                )
            },
        ))
        .prompt(prompt("p_fn").handler(prompt_fn))
        .resource(resource("mem://r", "r").mime_type("text/plain").handler(
            |State(k): State<u32>, r: ResourceRequest| async move { format!("{} x{k}", r.uri) },
        ))
        .resource(resource("mem://plain", "plain").handler(|_r: ResourceRequest| async { "plain" }))
        .resource_template(resource_template("mem://t/{n}", "t").handler(template_fn))
        .completion(completion_fn)
        .build()
        .expect("every state a handler takes was given")
}

async fn prompt_fn(State(k): State<u32>, _: PromptArgs, cx: RequestContext) -> String {
    format!("x{k} {}", cx.method())
}

async fn template_fn(
    State(k): State<u32>,
    who: Option<Principal>,
    r: ResourceRequest,
) -> Result<String, String> {
    let n: u32 = r
        .vars
        .get("n")
        .and_then(|n| n.parse().ok())
        .ok_or("not a number")?;
    Ok(format!("{} {}", n * k, who.is_some()))
}

async fn completion_fn(
    State(s): State<Suffix>,
    p: CompleteRequestParams,
) -> Result<Completion, HandlerError> {
    Ok(Completion {
        values: vec![format!("{}{}", p.argument.value, s.0)],
        ..Completion::default()
    })
}

fn svc() -> McpService {
    McpService::new(server(), HttpConfig::default())
}

async fn text(svc: &McpService, tool: &str, args: serde_json::Value) -> String {
    let r = call_tool(svc, tool, args).await;
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{tool}: {r}"))
        .to_owned()
}

#[tokio::test]
async fn every_tool_shape_registers_and_runs_as_fn_and_closure() {
    let svc = svc();
    let a = json!({"name": "ada"});
    for prefix in ["fn", "cl"] {
        assert_eq!(
            text(&svc, &format!("{prefix}_p"), a.clone()).await,
            "hi ada"
        );
        assert_eq!(
            text(&svc, &format!("{prefix}_p_cx"), a.clone()).await,
            "ada tools/call"
        );
        assert_eq!(
            text(&svc, &format!("{prefix}_s_p"), a.clone()).await,
            "ada x3"
        );
        assert_eq!(
            text(&svc, &format!("{prefix}_s_p_cx"), a.clone()).await,
            "ada x3 tools/call"
        );
    }
    assert_eq!(text(&svc, "fn_s_s_p", a.clone()).await, "ada x3!");
    assert_eq!(text(&svc, "all", a).await, "ada x3! anonymous tools/call");
}

#[tokio::test]
async fn the_schema_comes_from_the_params_whatever_the_shape() {
    let svc = svc();
    let r = ferromcp_server::testing::request(&svc, "tools/list", json!({})).await;
    let tools = r["result"]["tools"].as_array().expect("tools");
    for t in tools {
        let name = t["name"].as_str().unwrap_or_default();
        if name == "whoami" {
            assert_eq!(t["inputSchema"]["additionalProperties"], false, "{t}");
        } else {
            assert_eq!(t["inputSchema"]["required"], json!(["name"]), "{t}");
        }
    }
    // Bad arguments still reach the model as an isError result.
    let r = call_tool(&svc, "cl_s_p", json!({"name": 1})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
}

#[tokio::test]
async fn the_principal_extractor_sees_the_authenticated_principal() {
    let svc = svc();
    let mut req = modern_request("tools/call", json!({"name": "whoami", "arguments": {}}));
    req.extensions_mut().insert(Principal {
        subject: "alice".into(),
        scopes: vec!["mcp".into()],
        client_id: None,
    });
    let r = send(&svc, req).await;
    assert_eq!(r["result"]["content"][0]["text"], "alice", "{r}");
    assert_eq!(text(&svc, "whoami", json!({})).await, "anonymous");
}

#[test]
fn a_state_nobody_gave_is_refused_for_every_tool_shape() {
    let defs = [
        tool("s_p").handler(|State(n): State<u64>, _: NoArgs| async move { n.to_string() }),
        tool("p_s_fn").handler(two_states),
        tool("s_s_p").handler(
            |State(_): State<u32>, State(n): State<u64>, _: NoArgs| async move { n.to_string() },
        ),
    ];
    for def in defs {
        let name = def.definition().name.clone();
        let e = Server::builder("s", "1")
            .with_state(1_u32)
            .tool(def.clone())
            .build()
            .expect_err("a state type is missing");
        assert!(e.is_config(), "{name}: {e}");
        assert!(e.to_string().contains("State<"), "{name}: {e}");
        // At run time too.
        let server = Server::builder("s", "1").build().expect("server");
        assert!(server.add_tool(def).is_err(), "{name}");
    }
}

#[tokio::test]
async fn prompts_resources_templates_and_completion_take_the_shapes_too() {
    let svc = svc();
    let r = request(
        &svc,
        "prompts/get",
        json!({"name": "p_s", "arguments": {"name": "cy"}}),
    )
    .await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"], "hello cy!",
        "{r}"
    );
    let r = request(&svc, "prompts/get", json!({"name": "p_fn"})).await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"], "x3 prompts/get",
        "{r}"
    );
    let r = request(&svc, "resources/read", json!({"uri": "mem://r"})).await;
    assert_eq!(r["result"]["contents"][0]["text"], "mem://r x3", "{r}");
    // The URI read and the declared MIME type are filled in as before.
    assert_eq!(r["result"]["contents"][0]["uri"], "mem://r", "{r}");
    assert_eq!(r["result"]["contents"][0]["mimeType"], "text/plain", "{r}");
    let r = request(&svc, "resources/read", json!({"uri": "mem://plain"})).await;
    assert_eq!(r["result"]["contents"][0]["text"], "plain", "{r}");
    let r = request(&svc, "resources/read", json!({"uri": "mem://t/5"})).await;
    assert_eq!(r["result"]["contents"][0]["text"], "15 false", "{r}");
    let params = json!({
        "ref": {"type": "ref/prompt", "name": "p_s"},
        "argument": {"name": "name", "value": "a"}
    });
    let r = request(&svc, "completion/complete", params).await;
    assert_eq!(r["result"]["completion"]["values"], json!(["a!"]), "{r}");
}

#[test]
fn a_state_nobody_gave_is_refused_for_prompts_resources_templates_and_completion() {
    let only_u32 = || Server::builder("s", "1").with_state(1_u32);
    let e = only_u32()
        .prompt(prompt("p").handler(|State(_): State<u64>, _: PromptArgs| async { "p" }))
        .build()
        .expect_err("no u64 state");
    assert!(e.is_config() && e.to_string().contains("State<u64>"), "{e}");
    let e =
        only_u32()
            .resource(resource("mem://r", "r").handler(
                |State(_): State<u64>, _: ResourceRequest, _cx: RequestContext| async { "r" },
            ))
            .build()
            .expect_err("no u64 state");
    assert!(e.is_config() && e.to_string().contains("State<u64>"), "{e}");
    let e = only_u32()
        .resource_template(resource_template("mem://t/{n}", "t").handler(template_fn))
        .build();
    assert!(e.is_ok(), "u32 was given");
    let e = Server::builder("s", "1")
        .resource_template(resource_template("mem://t/{n}", "t").handler(template_fn))
        .build()
        .expect_err("no u32 state");
    assert!(e.is_config() && e.to_string().contains("State<u32>"), "{e}");
    let e = only_u32()
        .completion(completion_fn)
        .build()
        .expect_err("no Suffix state");
    assert!(e.to_string().contains("completion"), "{e}");
}
