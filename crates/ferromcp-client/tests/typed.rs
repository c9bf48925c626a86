//! Issue 30 item 8: the typed client calls over the in-memory pair: typed
//! arguments and results, a typed elicitation answer, the prompt call
//! shaped like the tool call, the text of a resource read.

#![cfg(feature = "stdio")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_client::protocol::types::ElicitResult;
use ferromcp_client::{Client, ClientBuilder};
use ferromcp_server::{
    Elicited, HandlerError, Json, NoArgs, PromptArgs, RequestContext, Server, prompt, resource,
    tool,
};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
struct Sum {
    sum: i64,
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Signup {
    name: String,
    age: i64,
    newsletter: bool,
    plan: Option<String>,
}

fn server() -> Server {
    Server::builder("typed", "1.0.0")
        .tool(
            tool("add")
                .output::<Sum>()
                .handler(|a: Add, _cx: RequestContext| async move { Json(Sum { sum: a.a + a.b }) }),
        )
        .tool(tool("hello").handler(|_: NoArgs, _cx: RequestContext| async { "hello" }))
        .tool(
            tool("refuse")
                .handler(|_: NoArgs, _cx: RequestContext| async { Err::<String, _>("not today") }),
        )
        .tool(
            tool("signup").handler(|_: NoArgs, cx: RequestContext| async move {
                Ok::<_, HandlerError>(match cx.elicit_form::<Signup>("form", "Sign up")? {
                    Elicited::Accepted(s) => {
                        format!("{} {} {} {:?}", s.name, s.age, s.newsletter, s.plan)
                    }
                    _ => "declined".into(),
                })
            }),
        )
        .prompt(prompt("review").argument("code", "The code", true).handler(
            |a: PromptArgs, _cx: RequestContext| async move {
                format!("Review {}", a.get("code").cloned().unwrap_or_default())
            },
        ))
        .resource(
            resource("mem://motd", "motd")
                .mime_type("text/plain")
                .handler(|_, _cx: RequestContext| async { "Be kind." }),
        )
        .build()
        .expect("server")
}

async fn client() -> Client {
    let (read, write) = server().serve_in_memory();
    ClientBuilder::new("typed", "1.0.0")
        .on_elicitation(|_req| async {
            let answer = Signup {
                name: "Ada".into(),
                age: 36,
                newsletter: true,
                plan: None,
            };
            Ok(ElicitResult::accept_from(&answer).expect("a flat form answer"))
        })
        .connect_io(read, write)
        .await
        .expect("connect")
}

#[tokio::test]
async fn typed_calls_prompts_reads_and_answers() {
    let c = client().await;
    let s: Sum = c.call_typed("add", &Add { a: 2, b: 3 }).await.unwrap();
    assert_eq!(s, Sum { sum: 5 });
    let text: String = c.call_typed("hello", &()).await.unwrap();
    assert_eq!(text, "hello");
    let e = c.call_typed::<_, String>("refuse", &()).await.unwrap_err();
    assert!(e.is_tool_error(), "{e}");
    assert!(e.to_string().contains("not today"), "{e}");

    let r: String = c.call_typed("signup", &()).await.unwrap();
    assert_eq!(r, "Ada 36 true None");

    let p = c
        .prompt("review", [("code", "fn main() {}")])
        .await
        .unwrap();
    assert_eq!(p.messages[0].content.as_text(), Some("Review fn main() {}"));
    let read = c.read_resource("mem://motd").await.unwrap();
    assert_eq!(read.text(), Some("Be kind."));
    assert_eq!(read.contents[0].mime_type(), Some("text/plain"));
    c.close().await;
}

#[test]
fn a_typed_answer_that_is_not_a_flat_form_is_refused_with_the_field() {
    #[derive(serde::Serialize)]
    struct Nested {
        inner: Sum,
    }
    let e = ElicitResult::accept_from(&Nested {
        inner: Sum { sum: 1 },
    })
    .unwrap_err();
    assert!(e.contains("\"inner\""), "{e}");
}
