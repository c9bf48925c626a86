//! The in-memory pair: `Server::serve_in_memory` on one end of a duplex,
//! `ClientBuilder::connect_io` on the other. No process, no socket; both
//! eras; a server→client elicitation answered by the client's handler.

#![cfg(feature = "stdio")]

use ferromcp_client::protocol::types::{
    ContentBlock, ElicitAction, ElicitRequestParams, ElicitResult, GetPromptRequestParams,
    PromptMessage, Resource, ResourceContents, Role,
};
use ferromcp_client::{ClientBuilder, Era, EraPreference, TransportKind};
use ferromcp_server::{
    HandlerError, Json, NoArgs, PromptArgs, RequestContext, ResourceDef, ResourceRequest, Server,
    prompt, tool,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// First addend.
    a: i64,
    /// Second addend.
    b: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

/// A server with a tool, a structured tool, an eliciting tool, a prompt and
/// a resource; `runs` counts the eliciting tool's handler runs.
fn server(runs: Arc<AtomicUsize>) -> Server {
    Server::builder("in-memory", "1.0.0")
        .tool(
            tool("add")
                .description("Adds two integers")
                .output::<Sum>()
                .handler(|a: AddArgs, _cx: RequestContext| async move { Json(Sum { sum: a.a + a.b }) }),
        )
        .tool(
            tool("greet")
                .description("Asks the user's name, then greets them")
                .handler(move |_: NoArgs, cx: RequestContext| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    async move {
                        let ask: ElicitRequestParams = serde_json::from_value(json!({
                            "mode": "form",
                            "message": "What is your name?",
                            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
                        }))
                        .map_err(|e| HandlerError::Failed(e.to_string()))?;
                        let answer = cx.elicit("name", ask)?;
                        let name = answer
                            .content
                            .and_then(|c| c.get("name").map(|v| json!(v)))
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_else(|| "stranger".into());
                        Ok::<_, HandlerError>(format!("Hello, {name}!"))
                    }
                }),
        )
        .prompt(
            prompt("review")
                .description("Asks for a code review")
                .argument("code", "The code to review", true)
                .handler(|a: PromptArgs, _cx: RequestContext| async move {
                    let code = a.get("code").cloned().unwrap_or_default();
                    vec![PromptMessage::new(
                        Role::User,
                        ContentBlock::text(format!("Please review: {code}")),
                    )]
                }),
        )
        .resource(ResourceDef::new(
            Resource {
                mime_type: Some("text/plain".into()),
                ..Resource::new("memo://readme", "readme")
            },
            |r: ResourceRequest, _cx: RequestContext| async move {
                ResourceContents::text(r.uri, Some("text/plain".into()), "in memory")
            },
        ))
        .build()
        .unwrap_or_else(|e| panic!("server: {e}"))
}

fn text(blocks: &[ContentBlock]) -> String {
    blocks.iter().filter_map(ContentBlock::as_text).collect()
}

async fn exercise(era: EraPreference, expected: Era) {
    let runs = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(AtomicUsize::new(0));
    let (read, write) = server(runs.clone()).serve_in_memory();
    let a = asked.clone();
    let client = ClientBuilder::new("in-memory-test", "1.0.0")
        .era(era)
        .on_elicitation(move |req| {
            a.fetch_add(1, Ordering::SeqCst);
            async move {
                assert_eq!(req.message(), "What is your name?");
                let mut content = BTreeMap::new();
                content.insert("name".to_string(), "Ada".into());
                Ok(ElicitResult::accept(content))
            }
        })
        .connect_io(read, write)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    assert_eq!(client.era(), expected);
    assert_eq!(client.transport_kind(), TransportKind::Io);

    let tools = client.list_tools().await.unwrap_or_else(|e| panic!("{e}"));
    let mut names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "greet"]);
    let add = tools.iter().find(|t| t.name == "add");
    assert!(
        add.is_some_and(|t| t.output_schema.is_some()),
        "output::<Sum>() declares an outputSchema"
    );

    let args = json!({"a": 2, "b": 3});
    let r = client
        .call_tool("add", args.as_object().cloned())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.structured_content, Some(json!({"sum": 5})));

    // Server→client: the handler asks, the client's handler answers (an
    // elicitation/create request in the handshake era, an MRTR round in
    // 2026-07-28); the tool handler runs again from the top with the answer.
    let r = client
        .call_tool("greet", None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(text(&r.content), "Hello, Ada!");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    let prompts = client
        .list_prompts()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(prompts.len(), 1);
    let mut params = GetPromptRequestParams::new("review");
    params.arguments = Some(BTreeMap::from([("code".to_string(), "x + 1".to_string())]));
    let p = client
        .get_prompt(params, Default::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let first = p
        .messages
        .first()
        .and_then(|m| m.content.as_text().map(str::to_owned));
    assert_eq!(first.as_deref(), Some("Please review: x + 1"));

    let resources = client
        .list_resources()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resources.len(), 1);
    let read = client
        .read_resource("memo://readme")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let body = serde_json::to_value(&read).unwrap_or_default();
    assert_eq!(body["contents"][0]["text"], "in memory");

    client.close().await;
    assert!(client.is_closed());
}

#[tokio::test]
async fn the_2026_07_28_era_in_memory() {
    exercise(EraPreference::Modern, Era::Modern).await;
}

#[tokio::test]
async fn the_handshake_era_in_memory() {
    exercise(EraPreference::Handshake, Era::Handshake).await;
}

#[tokio::test]
async fn auto_negotiates_the_2026_07_28_era_in_memory() {
    exercise(EraPreference::Auto, Era::Modern).await;
}

#[tokio::test]
async fn declining_an_elicitation_in_memory() {
    let (read, write) = server(Arc::new(AtomicUsize::new(0))).serve_in_memory();
    let client = ClientBuilder::new("t", "1")
        .era(EraPreference::Handshake)
        .on_elicitation(|_| async { Ok(ElicitResult::new(ElicitAction::Decline)) })
        .connect_io(read, write)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let r = client
        .call_tool("greet", None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(text(&r.content), "Hello, stranger!");
    client.close().await;
}

#[tokio::test]
async fn closing_the_client_ends_the_server() {
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (sr, sw) = tokio::io::split(server_end);
    let serving = tokio::spawn(server(Arc::new(AtomicUsize::new(0))).serve_io(sr, sw));
    let (cr, cw) = tokio::io::split(client_end);
    let client = ClientBuilder::new("t", "1")
        .era(EraPreference::Handshake)
        .connect_io(cr, cw)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    assert!(client.list_tools().await.is_ok());
    client.close().await;
    // The client shut its write half down: the server saw end of input.
    let ended = tokio::time::timeout(std::time::Duration::from_secs(5), serving).await;
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "the server did not stop: {ended:?}"
    );
    assert!(client.list_tools().await.is_err());
}

// A panicking elicitation handler in the application is answered as an
// error, in both eras: the call ends with an error instead of waiting for
// the server's timeout (60 s by default; the 20 s bound here catches it).
#[tokio::test]
async fn a_panicking_input_handler_fails_the_call_without_a_hang() {
    for era in [EraPreference::Handshake, EraPreference::Modern] {
        let (read, write) = server(Arc::new(AtomicUsize::new(0))).serve_in_memory();
        let client = ClientBuilder::new("t", "1")
            .era(era)
            .on_elicitation(|_req: ElicitRequestParams| async move {
                if true {
                    panic!("the application's bug");
                }
                Ok(ElicitResult::new(ElicitAction::Decline))
            })
            .connect_io(read, write)
            .await
            .expect("connect");
        let outcome = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            client.call_tool("greet", None),
        )
        .await
        .unwrap_or_else(|_| panic!("{era:?}: the call hung after the handler panicked"));
        match outcome {
            Err(_) => {}
            Ok(r) => assert_eq!(r.is_error, Some(true), "{era:?}: {r:?}"),
        }
        // The connection lives on.
        let sum = client
            .call_tool(
                "add",
                Some(
                    json!({"a": 1, "b": 2})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
            )
            .await
            .expect("the connection still serves calls");
        assert_eq!(sum.is_error, None, "{era:?}");
        client.close().await;
    }
}
