//! Issue 18: application state reaches handlers through `State<T>` /
//! `RequestContext::app_state` without cloning into closures, and a tool
//! returning `Result<_, E>` for any `E: Display` (e.g. `String`) turns an
//! `Err` into an `isError` result carrying the message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_server::protocol::types::{
    CompleteRequestParams, Completion, ContentBlock, PromptMessage, ResourceContents, Role,
};
use ferromcp_server::testing::{call_tool, request};
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{
    HandlerError, NoArgs, PromptArgs, RequestContext, ResourceRequest, Server, State, prompt,
    resource, resource_template, tool,
};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Application state: shared by `Arc`, never cloned into a closure.
struct Db {
    greeting: String,
    calls: AtomicU64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    name: String,
}

/// An error type that is `Display` but not `std::error::Error`.
struct NotFound(String);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} was not found", self.0)
    }
}

/// An error type that is a `std::error::Error`.
#[derive(Debug)]
struct Denied;

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("access denied")
    }
}

impl std::error::Error for Denied {}

fn server() -> Server {
    Server::builder("state", "1.0.0")
        .with_state(Arc::new(Db {
            greeting: "Hello".into(),
            calls: AtomicU64::new(0),
        }))
        .with_state(7_u32)
        .tool(tool("greet").description("Greets").handler(
            |State(db): State<Arc<Db>>, a: Name, _cx: RequestContext| async move {
                db.calls.fetch_add(1, Ordering::Relaxed);
                format!("{}, {}!", db.greeting, a.name)
            },
        ))
        .tool(tool("calls").handler(|_: NoArgs, cx: RequestContext| async move {
            let db = cx.app_state::<Arc<Db>>().ok_or("no db")?;
            Ok::<_, &str>(db.calls.load(Ordering::Relaxed).to_string())
        }))
        .tool(
            tool("lookup").handler(|a: Name, _cx: RequestContext| async move {
                if a.name == "bob" {
                    Ok("found bob".to_string())
                } else {
                    Err(format!("no user {:?}", a.name))
                }
            }),
        )
        .tool(
            tool("custom").handler(|a: Name, _cx: RequestContext| async move {
                Err::<String, _>(NotFound(a.name))
            }),
        )
        .tool(tool("std").handler(|_: NoArgs, _cx: RequestContext| async move {
            Err::<String, _>(Denied)
        }))
        .tool(tool("protocol").handler(|_: NoArgs, _cx: RequestContext| async move {
            Err::<String, _>(ferromcp_server::protocol::ErrorObject::invalid_params("bad"))
        }))
        .prompt(prompt("hello").argument("name", "Who", true).handler(
            |State(db): State<Arc<Db>>, a: PromptArgs, _cx: RequestContext| async move {
                let name = a.get("name").cloned().unwrap_or_default();
                let text = format!("{}, {name}", db.greeting);
                vec![PromptMessage::new(Role::User, ContentBlock::text(text))]
            },
        ))
        .resource(
            resource("mem://greeting", "greeting")
                .mime_type("text/plain")
                .handler(
                    |State(db): State<Arc<Db>>, r: ResourceRequest, _cx: RequestContext| async move {
                        ResourceContents::text(r.uri, None, db.greeting.clone())
                    },
                ),
        )
        .resource_template(
            resource_template("mem://n/{n}", "numbers").handler(
                |State(k): State<u32>, r: ResourceRequest, _cx: RequestContext| async move {
                    let n: u32 = r
                        .vars
                        .get("n")
                        .and_then(|n| n.parse().ok())
                        .ok_or("not a number")?;
                    Ok::<_, &str>(ResourceContents::text(r.uri, None, (n * k).to_string()))
                },
            ),
        )
        .completion(
            |State(k): State<u32>, _p: CompleteRequestParams, _cx: RequestContext| async move {
                Ok::<_, HandlerError>(Completion {
                    values: vec![k.to_string()],
                    ..Completion::default()
                })
            },
        )
        .build()
        .expect("server")
}

fn svc() -> McpService {
    McpService::new(server(), HttpConfig::default())
}

#[tokio::test]
async fn state_reaches_tools_through_the_extractor_and_the_accessor() {
    let svc = svc();
    let r = call_tool(&svc, "greet", json!({"name": "Ada"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "Hello, Ada!", "{r}");
    let r = call_tool(&svc, "greet", json!({"name": "Bo"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "Hello, Bo!", "{r}");
    // The same value (one Arc) is seen by every handler.
    let r = call_tool(&svc, "calls", json!({})).await;
    assert_eq!(r["result"]["content"][0]["text"], "2", "{r}");
}

#[tokio::test]
async fn state_reaches_prompts_resources_templates_and_completion() {
    let svc = svc();
    let params = json!({"name": "hello", "arguments": {"name": "Cy"}});
    let r = request(&svc, "prompts/get", params).await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"], "Hello, Cy",
        "{r}"
    );
    let params = json!({"uri": "mem://greeting"});
    let r = request(&svc, "resources/read", params).await;
    assert_eq!(r["result"]["contents"][0]["text"], "Hello", "{r}");
    let params = json!({"uri": "mem://n/6"});
    let r = request(&svc, "resources/read", params).await;
    assert_eq!(r["result"]["contents"][0]["text"], "42", "{r}");
    let params = json!({
        "ref": {"type": "ref/prompt", "name": "hello"},
        "argument": {"name": "name", "value": ""}
    });
    let r = request(&svc, "completion/complete", params).await;
    assert_eq!(r["result"]["completion"]["values"][0], "7", "{r}");
}

#[tokio::test]
async fn err_of_a_string_is_an_is_error_result_with_the_message() {
    let svc = svc();
    let r = call_tool(&svc, "lookup", json!({"name": "bob"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "found bob", "{r}");
    assert_ne!(r["result"]["isError"], true, "{r}");
    let r = call_tool(&svc, "lookup", json!({"name": "eve"})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "no user \"eve\"", "{r}");
}

#[tokio::test]
async fn err_of_any_display_type_is_an_is_error_result() {
    let svc = svc();
    let r = call_tool(&svc, "custom", json!({"name": "x"})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "x was not found", "{r}");
    let r = call_tool(&svc, "std", json!({})).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "access denied", "{r}");
    // A JSON-RPC error object stays a JSON-RPC error.
    let r = call_tool(&svc, "protocol", json!({})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[test]
fn a_handler_taking_state_nobody_gave_is_a_config_error() {
    let def = tool("t").handler(
        |State(n): State<u64>, _: NoArgs, _cx: RequestContext| async move { n.to_string() },
    );
    let e = Server::builder("s", "1")
        .tool(def.clone())
        .build()
        .expect_err("no u64 state");
    assert!(e.is_config(), "{e}");
    assert!(e.to_string().contains("State<u64>"), "{e}");
    assert!(
        Server::builder("s", "1")
            .with_state(1_u64)
            .tool(def.clone())
            .build()
            .is_ok()
    );
    // At run time too.
    let server = Server::builder("s", "1").build().expect("server");
    let e = server.add_tool(def).expect_err("no u64 state");
    assert!(e.is_config(), "{e}");
    let e = Server::builder("s", "1")
        .completion(
            |State(_n): State<u64>, _p: CompleteRequestParams, _cx: RequestContext| async move {
                Ok(Completion::default())
            },
        )
        .build()
        .expect_err("no u64 state");
    assert!(e.to_string().contains("completion"), "{e}");
}

/// Since `handler` takes several shapes (issue 25), the shape is chosen
/// from the closure's parameter types: the context is annotated like the
/// rest (an unannotated `cx` is E0282, "type annotations needed").
#[test]
fn closures_choose_their_shape_from_annotated_parameters() {
    let a = tool("a").handler(|a: Name, cx: RequestContext| async move {
        format!("{} {}", a.name, cx.method())
    });
    let b = tool("b").handler(
        |State(n): State<u32>, _: NoArgs, cx: RequestContext| async move {
            format!("{n} {}", cx.method())
        },
    );
    assert!(
        Server::builder("s", "1")
            .with_state(1_u32)
            .tools([a, b])
            .build()
            .is_ok()
    );
}

/// Issue 30 item 2: anyhow and error chains.
#[cfg(feature = "anyhow")]
mod chains {
    use super::*;
    use anyhow::Context;
    use ferromcp_server::Elicited;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Confirm {
        sure: bool,
    }

    /// An error with a cause, as thiserror's `#[source]` makes one.
    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("loading the profile")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    fn missing() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory")
    }

    fn svc() -> McpService {
        let server = Server::builder("chains", "1.0.0")
            .tool(
                tool("read").handler(|_: NoArgs, _cx: RequestContext| async move {
                    let text = Err::<String, _>(missing()).context("reading /nonexistent")?;
                    anyhow::Ok(text)
                }),
            )
            .tool(
                tool("wipe").handler(|_: NoArgs, cx: RequestContext| async move {
                    // `?` on the SDK's call inside an anyhow handler, also
                    // under added context.
                    let answer = cx
                        .elicit_form::<Confirm>("confirm", "Really?")
                        .map_err(anyhow::Error::from)
                        .context("asking")?;
                    anyhow::Ok(match answer {
                        Elicited::Accepted(Confirm { sure: true }) => "wiped",
                        _ => "kept",
                    })
                }),
            )
            .tool(
                tool("profile").handler(|_: NoArgs, _cx: RequestContext| async move {
                    Err::<String, _>(Outer(missing()))?;
                    Ok::<_, HandlerError>("unreachable".to_string())
                }),
            )
            .build()
            .expect("server");
        McpService::new(server, HttpConfig::default())
    }

    #[tokio::test]
    async fn an_anyhow_error_reaches_the_model_with_its_cause() {
        let r = call_tool(&svc(), "read", json!({})).await;
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert_eq!(
            r["result"]["content"][0]["text"], "reading /nonexistent: No such file or directory",
            "{r}"
        );
    }

    #[tokio::test]
    async fn a_std_error_given_to_question_mark_keeps_its_source() {
        let r = call_tool(&svc(), "profile", json!({})).await;
        assert_eq!(
            r["result"]["content"][0]["text"], "loading the profile: No such file or directory",
            "{r}"
        );
    }

    #[tokio::test]
    async fn an_elicitation_through_anyhow_still_asks_the_client() {
        let meta =
            json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}});
        let r = request(
            &svc(),
            "tools/call",
            json!({"name": "wipe", "arguments": {}, "_meta": meta}),
        )
        .await;
        assert_eq!(r["result"]["resultType"], "input_required", "{r}");
        let schema = &r["result"]["inputRequests"]["confirm"]["params"]["requestedSchema"];
        assert_eq!(schema["properties"]["sure"]["type"], "boolean", "{r}");
    }
}

/// Issue 30 item 6: work done before a question is kept across the round
/// instead of being done again.
mod kept {
    use super::*;
    use ferromcp_server::Elicited;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Confirm {
        sure: bool,
    }

    fn svc(reservations: Arc<AtomicU64>) -> McpService {
        let server = Server::builder("kept", "1.0.0")
            .tool(
                tool("reserve").handler(move |_: NoArgs, cx: RequestContext| {
                    let reservations = reservations.clone();
                    async move {
                        let id: u64 = match cx.kept_state::<u64>() {
                            Some(id) => id,
                            // The side effect before the question.
                            None => reservations.fetch_add(1, Ordering::SeqCst) + 1,
                        };
                        let answer = cx
                            .elicit_form::<Confirm>("confirm", "Keep the seat?")
                            .map_err(|e| e.keep_state(&id))?;
                        Ok::<_, HandlerError>(match answer {
                            Elicited::Accepted(Confirm { sure: true }) => format!("seat {id}"),
                            _ => "released".to_string(),
                        })
                    }
                }),
            )
            .build()
            .expect("server");
        McpService::new(server, HttpConfig::default())
    }

    // MRTR-08
    #[tokio::test]
    async fn work_kept_before_a_question_is_not_done_again() {
        let reservations = Arc::new(AtomicU64::new(0));
        let svc = svc(reservations.clone());
        let meta =
            json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}});
        let first = request(
            &svc,
            "tools/call",
            json!({"name": "reserve", "arguments": {}, "_meta": meta}),
        )
        .await;
        assert_eq!(first["result"]["resultType"], "input_required", "{first}");
        let state = first["result"]["requestState"]
            .as_str()
            .expect("a requestState");
        let second = request(
            &svc,
            "tools/call",
            json!({"name": "reserve", "arguments": {}, "_meta": meta,
                   "inputResponses": {"confirm": {"action": "accept", "content": {"sure": true}}},
                   "requestState": state}),
        )
        .await;
        assert_eq!(second["result"]["content"][0]["text"], "seat 1", "{second}");
        // Reserved once, although the handler ran twice.
        assert_eq!(reservations.load(Ordering::SeqCst), 1);
    }
}
