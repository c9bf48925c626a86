//! Tasks are bound to the principal that created them (docs/TASKS.md):
//! another principal, or an anonymous caller, gets the not-found error for
//! `tasks/get` and `tasks/cancel`, its `tasks/update` answers are dropped,
//! and it never sees the result. The principal is what an authentication
//! layer puts into the request extensions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{
    HandlerError, NoArgs, Principal, RequestContext, Server, TaskSupport, testing, tool,
};
use serde_json::{Value, json};

const EXT: &str = "io.modelcontextprotocol/tasks";

fn server() -> McpService {
    let server = Server::builder("tasks", "1.0.0")
        .tool(
            tool("ask")
                .description("Asks for confirmation, then answers who asked")
                .task_support(TaskSupport::Optional)
                .handler(|_: NoArgs, cx: RequestContext| async move {
                    let params = serde_json::from_value(json!({
                        "mode": "form",
                        "message": "Sure?",
                        "requestedSchema": {"type": "object", "properties": {}}
                    }))
                    .map_err(|e| HandlerError::Failed(e.to_string()))?;
                    cx.elicit("confirm", params)?;
                    Ok::<_, HandlerError>(
                        cx.principal()
                            .map(|p| p.subject.clone())
                            .unwrap_or_default(),
                    )
                }),
        )
        .build()
        .expect("server");
    McpService::new(server, HttpConfig::default())
}

fn who(subject: &str) -> Option<Principal> {
    Some(Principal {
        subject: subject.into(),
        scopes: vec![],
        client_id: None,
    })
}

async fn send(svc: &McpService, method: &str, params: Value, p: Option<Principal>) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}, "elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    });
    let mut req = testing::modern_request(method, params);
    if let Some(p) = p {
        req.extensions_mut().insert(p);
    }
    testing::send(svc, req).await
}

#[tokio::test]
async fn another_principal_sees_not_found_and_cannot_answer() {
    let svc = server();
    let created = send(
        &svc,
        "tools/call",
        json!({"name": "ask", "arguments": {}}),
        who("alice"),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let tid = json!({"taskId": id});

    // Alice's task parks for input.
    let mut status = Value::Null;
    for _ in 0..500 {
        status = send(&svc, "tasks/get", tid.clone(), who("alice")).await;
        if status["result"]["status"] == "input_required" {
            break;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(status["result"]["status"], "input_required", "{status}");

    for other in [who("bob"), None] {
        let v = send(&svc, "tasks/get", tid.clone(), other.clone()).await;
        assert_eq!(v["error"]["code"], -32602, "get as {other:?}: {v}");
        let v = send(&svc, "tasks/cancel", tid.clone(), other.clone()).await;
        assert_eq!(v["error"]["code"], -32602, "cancel as {other:?}: {v}");
        // The update is acknowledged (as for any id) but not applied.
        let v = send(
            &svc,
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {}}}}),
            other.clone(),
        )
        .await;
        assert_eq!(v["result"]["resultType"], "complete", "{v}");
    }
    let v = send(&svc, "tasks/get", tid.clone(), who("alice")).await;
    assert_eq!(
        v["result"]["status"], "input_required",
        "bob's answer was dropped"
    );

    // Alice answers; only she sees the result.
    send(
        &svc,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {}}}}),
        who("alice"),
    )
    .await;
    let mut done = Value::Null;
    for _ in 0..500 {
        done = send(&svc, "tasks/get", tid.clone(), who("alice")).await;
        if done["result"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "alice",
        "{done}"
    );
    let v = send(&svc, "tasks/get", tid, who("bob")).await;
    assert_eq!(v["error"]["code"], -32602);
}
