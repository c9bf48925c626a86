// Tasks 6 (handler unit test, in-memory in both eras) and 7 (client over
// HTTP and stdio, typed).
use ferromcp_client::protocol::types::ElicitResult;
use ferromcp_client::{ClientBuilder, EraPreference, StdioCommand};
use ferromcp_server::State;
use newcomer_walk::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

#[tokio::test]
async fn handler_unit_test() {
    let Json(s) = add(2, 3).await;
    assert_eq!(s.sum, 5);
    let out = greet(
        State(Arc::new(Counter(AtomicU64::new(0)))),
        State(Arc::new(Greeting("Hi".into()))),
        "Ann".into(),
    )
    .await;
    assert_eq!(out, Ok("Hi, Ann! (#1)".to_string()));
}
use ferromcp_server::Json;

#[derive(Deserialize, Debug)]
struct SumOut {
    sum: i64,
}
#[derive(Serialize)]
struct AddIn {
    a: i64,
    b: i64,
}
#[derive(Serialize)]
struct Answer {
    name: String,
    age: u32,
    plan: String,
    newsletter: bool,
}

async fn exercise(client: &ferromcp_client::Client) {
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 4);
    let s: SumOut = client.call_typed("add", &AddIn { a: 2, b: 40 }).await.unwrap();
    assert_eq!(s.sum, 42);
    let r = client.call_tool("read_file", Some(serde_json::json!({"path": "/nonexistent"}).as_object().unwrap().clone())).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    let text = r.content[0].as_text().unwrap();
    assert!(text.contains("No such file"), "{text}");
    let r = client.call_tool("signup", None).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("welcome Ann (30, pro)"));
    let note = client.read_resource("notes://1").await.unwrap();
    assert_eq!(note.contents[0].as_text(), Some("Buy milk."));
    let p = client.prompt("review", [("code", "fn main() {}")]).await.unwrap();
    assert_eq!(p.messages.len(), 1);
}

fn builder(era: EraPreference) -> ClientBuilder {
    ClientBuilder::new("walk", "0.1.0").era(era).on_elicitation(|req| async move {
        // Field order of the form.
        let ferromcp_client::protocol::types::ElicitRequestParams::Form(form) = &req else { panic!("url mode") };
        let props: Vec<&String> = form.requested_schema.properties.keys().collect();
        assert_eq!(props, ["name", "age", "plan", "newsletter"]);
        Ok(ElicitResult::accept_from(&Answer { name: "Ann".into(), age: 30, plan: "pro".into(), newsletter: true }).unwrap())
    })
}

#[tokio::test]
async fn in_memory_both_eras() {
    for era in [EraPreference::Modern, EraPreference::Handshake] {
        let (r, w) = server().unwrap().serve_in_memory();
        let client = builder(era).connect_io(r, w).await.unwrap();
        exercise(&client).await;
        client.close().await;
    }
}

#[tokio::test]
async fn client_over_stdio() {
    let bin = env!("CARGO_BIN_EXE_stdio");
    for era in [EraPreference::Modern, EraPreference::Handshake] {
        let client = builder(era).connect_command(StdioCommand::new(bin, &[] as &[String])).await.unwrap();
        exercise(&client).await;
        client.close().await;
    }
}

#[tokio::test]
async fn client_over_http() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_http")).arg(format!("127.0.0.1:{port}")).spawn().unwrap();
    // Wait until it listens (at most 30 s).
    for _ in 0..300 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for era in [EraPreference::Modern, EraPreference::Handshake] {
        let client = builder(era).connect_url(&format!("http://127.0.0.1:{port}/mcp")).await.unwrap();
        exercise(&client).await;
        client.close().await;
    }
    let health = std::process::Command::new("curl").args(["-s", &format!("http://127.0.0.1:{port}/health")]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&health.stdout), "ok\n");
    child.kill().unwrap();
}
