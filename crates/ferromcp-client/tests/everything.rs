//! The client against the everything-server as a real child process, in both
//! eras (modern 2026-07-28 and handshake 2025-11-25) over both transports
//! (stdio child process, HTTP on 127.0.0.1 with an ephemeral port).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{HttpServer, stdio_command};
use ferromcp_client::protocol::types::*;
use ferromcp_client::{
    Client, ClientBuilder, Era, EraPreference, HandlerError, Notice, ProtocolVersion,
    RequestOptions, SubscriptionEvent, TransportKind,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Copy, Debug)]
enum Wire {
    Stdio,
    Http,
}

struct Conn {
    client: Client,
    notices: Arc<Mutex<Vec<Notice>>>,
    _server: Option<HttpServer>,
}

fn answer_form(schema: &ElicitationSchema) -> BTreeMap<String, ElicitValue> {
    schema
        .properties
        .iter()
        .map(|(k, p)| {
            let v = match p {
                PrimitiveSchemaDefinition::Boolean(_) => ElicitValue::Bool(true),
                PrimitiveSchemaDefinition::Number(_) | PrimitiveSchemaDefinition::Integer(_) => {
                    ElicitValue::from(7)
                }
                _ if k == "name" => ElicitValue::from("Alice"),
                _ => ElicitValue::from(format!("answer-{k}")),
            };
            (k.clone(), v)
        })
        .collect()
}

fn builder(era: EraPreference, notices: Arc<Mutex<Vec<Notice>>>) -> ClientBuilder {
    ClientBuilder::new("integration-test", "0.0.1")
        .era(era)
        .request_timeout(Duration::from_secs(15))
        .on_elicitation(|p| async move {
            match p {
                ElicitRequestParams::Form(f) => {
                    Ok(ElicitResult::accept(answer_form(&f.requested_schema)))
                }
                ElicitRequestParams::Url(_) => Err(HandlerError::new("no URL mode here")),
            }
        })
        .on_sampling(|_p| async {
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content: SamplingContent::Single(ContentBlock::text("Paris")),
                model: "test-model".into(),
                stop_reason: Some(StopReason::EndTurn),
                meta: None,
            })
        })
        .on_roots(|| async {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///tmp/project".into(),
                    name: Some("project".into()),
                    meta: None,
                }],
                meta: None,
            })
        })
        .on_notification(move |n| notices.lock().unwrap().push(n.clone()))
}

async fn connect(wire: Wire, era: EraPreference) -> Conn {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let b = builder(era, notices.clone());
    let (client, server) = match wire {
        Wire::Stdio => (
            b.connect_command(stdio_command())
                .await
                .expect("stdio connect"),
            None,
        ),
        Wire::Http => {
            let s = HttpServer::start();
            (b.connect_url(&s.url).await.expect("http connect"), Some(s))
        }
    };
    Conn {
        client,
        notices,
        _server: server,
    }
}

fn text_of(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|b| b.as_text().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n")
}

fn args(v: serde_json::Value) -> Option<JsonObject> {
    v.as_object().cloned()
}

fn is_modern(era: EraPreference) -> bool {
    era != EraPreference::Handshake
}

async fn negotiation(wire: Wire, era: EraPreference) {
    let c = connect(wire, era).await;
    let client = &c.client;
    if is_modern(era) {
        // ERA-06: the probe finds a modern server.
        assert_eq!(client.era(), Era::Modern);
        assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
        let d = client.discover().await.unwrap();
        assert!(d.supported_versions.iter().any(|v| v == "2026-07-28"));
    } else {
        // LEGACY-01/02
        assert_eq!(client.era(), Era::Handshake);
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
        client.ping().await.unwrap();
    }
    assert_eq!(
        client.transport_kind(),
        match wire {
            Wire::Stdio => TransportKind::Stdio,
            Wire::Http => TransportKind::Http,
        }
    );
    assert!(client.server_info().is_some());
    assert!(client.server_capabilities().tools.is_some());
    assert!(client.instructions().is_some());
    client.close().await;
}

async fn tools(wire: Wire, era: EraPreference) {
    let c = connect(wire, era).await;
    let client = &c.client;
    // HDR-21: calling a header-annotated tool before listing: the server
    // rejects the missing Mcp-Param-Region (HTTP, modern) and the client
    // refreshes tools/list once and retries.
    let r = client
        .call_tool("test_x_mcp_header", args(json!({"region": "Hello, 世界"})))
        .await
        .unwrap();
    assert_eq!(text_of(&r), "region=Hello, 世界");
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "test_simple_text"));
    assert!(tools.iter().any(|t| t.name == "test_x_mcp_header"));
    let r = client.call_tool("test_simple_text", None).await.unwrap();
    assert!(!text_of(&r).is_empty());
    // HDR-06: leading/trailing spaces and control chars take the base64 form.
    let r = client
        .call_tool("test_x_mcp_header", args(json!({"region": " eu-west\n"})))
        .await
        .unwrap();
    assert_eq!(text_of(&r), "region= eu-west\n");
    let r = client.call_tool("test_error_handling", None).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    let e = client.call_tool("no_such_tool", None).await.unwrap_err();
    assert!(e.is_protocol(), "{e}");
    client.close().await;
}

async fn mrtr(wire: Wire, era: EraPreference) {
    let c = connect(wire, era).await;
    let client = &c.client;
    let r = client
        .call_tool("test_input_required_result_elicitation", None)
        .await
        .unwrap();
    assert!(text_of(&r).contains("Alice"), "{}", text_of(&r));
    let r = client
        .call_tool("test_input_required_result_sampling", None)
        .await
        .unwrap();
    assert!(text_of(&r).contains("Paris"), "{}", text_of(&r));
    let r = client
        .call_tool("test_input_required_result_list_roots", None)
        .await
        .unwrap();
    assert!(text_of(&r).contains("1 root"), "{}", text_of(&r));
    let r = client
        .call_tool("test_input_required_result_multiple_inputs", None)
        .await
        .unwrap();
    assert_eq!(text_of(&r), "All inputs received");
    let r = client
        .call_tool("test_input_required_result_multi_round", None)
        .await
        .unwrap();
    assert_eq!(text_of(&r), "Multi-round flow completed");
    let r = client
        .call_tool("test_input_required_result_request_state", None)
        .await
        .unwrap();
    assert_eq!(text_of(&r), "Request state round trip completed");
    let p = client
        .get_prompt(
            GetPromptRequestParams::new("test_input_required_result_prompt"),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert!(!p.messages.is_empty());
    if !is_modern(era) {
        // LEGACY-18: real server→client requests answered by the same handlers.
        let r = client
            .call_tool("test_elicitation", args(json!({"message": "Tell me"})))
            .await
            .unwrap();
        assert!(text_of(&r).contains("accept"), "{}", text_of(&r));
        let r = client
            .call_tool("test_sampling", args(json!({"prompt": "Capital?"})))
            .await
            .unwrap();
        assert!(text_of(&r).contains("Paris"), "{}", text_of(&r));
    }
    client.close().await;
}

async fn mrtr_manual_and_limits(wire: Wire) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let client = match wire {
        Wire::Stdio => builder(EraPreference::Auto, notices)
            .max_mrtr_rounds(1)
            .connect_command(stdio_command())
            .await
            .unwrap(),
        Wire::Http => unreachable!(),
    };
    // One round only: the multi-round tool cannot finish (MRTR-13).
    let e = client
        .call_tool("test_input_required_result_multi_round", None)
        .await
        .unwrap_err();
    assert!(e.is_too_many_rounds(), "{e}");
    // Manual rounds (MRTR-06): answer, echo the state, new request.
    let base = args(json!({"name": "test_input_required_result_request_state"})).unwrap();
    let r1 = client
        .request_round::<CallToolResult>("tools/call", base.clone(), RequestOptions::new())
        .await
        .unwrap();
    let MaybeInputRequired::InputRequired(ir) = r1 else {
        panic!("expected input_required")
    };
    let answers = client
        .fulfil(ir.input_requests.as_ref().unwrap())
        .await
        .unwrap();
    let mut p2 = base;
    p2.insert(
        "inputResponses".into(),
        serde_json::to_value(&answers).unwrap(),
    );
    p2.insert("requestState".into(), json!(ir.request_state.unwrap()));
    let r2 = client
        .request_round::<CallToolResult>("tools/call", p2, RequestOptions::new())
        .await
        .unwrap();
    assert!(matches!(r2, MaybeInputRequired::Complete(_)));
    client.close().await;
}

async fn progress_timeout_cancel(wire: Wire, era: EraPreference) {
    let c = connect(wire, era).await;
    let client = &c.client;
    // PROG-01: progress callbacks.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let opts = RequestOptions::new().on_progress(move |p| s2.lock().unwrap().push(p.progress));
    let r = client
        .call_tool_with(
            CallToolRequestParams::new("test_tool_with_progress", None),
            opts,
        )
        .await
        .unwrap();
    assert_eq!(text_of(&r), "Progress test completed");
    assert_eq!(*seen.lock().unwrap(), vec![0.0, 50.0, 100.0]);
    // CANCEL-08: a timeout that progress does not reset.
    let opts = RequestOptions::new()
        .timeout(Duration::from_millis(60))
        .reset_timeout_on_progress(false)
        .on_progress(|_| {});
    let e = client
        .call_tool_with(
            CallToolRequestParams::new("test_tool_with_progress", None),
            opts,
        )
        .await
        .unwrap_err();
    assert!(e.is_timeout() && e.is_local(), "{e}");
    // Progress resets the timeout, within the hard maximum.
    let opts = RequestOptions::new()
        .timeout(Duration::from_millis(40))
        .max_total_timeout(Duration::from_millis(70))
        .on_progress(|_| {});
    let e = client
        .call_tool_with(
            CallToolRequestParams::new("test_tool_with_progress", None),
            opts,
        )
        .await
        .unwrap_err();
    assert!(e.is_timeout(), "{e}");
    // Cancellation by dropping the call's future after the first progress.
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = Mutex::new(Some(tx));
    let opts = RequestOptions::new().on_progress(move |_| {
        if let Some(tx) = tx.lock().unwrap().take() {
            let _ = tx.send(());
        }
    });
    let call = client.call_tool_with(
        CallToolRequestParams::new("test_tool_with_progress", None),
        opts,
    );
    // `biased`: when the machine stalls long enough for the result to
    // arrive too, both branches are ready; the first progress still wins,
    // so the future is dropped either way instead of the test flipping a
    // coin over which branch `select!` polls first.
    tokio::select! {
        biased;
        _ = rx => {}
        _ = call => panic!("the call should have been cancelled first"),
    }
    // The connection stays usable; the late response is ignored (CANCEL-06).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = client.call_tool("test_simple_text", None).await.unwrap();
    assert!(!text_of(&r).is_empty());
    client.close().await;
}

async fn resources_prompts_completion(wire: Wire, era: EraPreference) {
    let c = connect(wire, era).await;
    let client = &c.client;
    let res = client.list_resources().await.unwrap();
    assert!(res.iter().any(|r| r.uri == "test://static-text"));
    let r = client.read_resource("test://static-text").await.unwrap();
    assert_eq!(r.contents.len(), 1);
    let t = client.list_resource_templates().await.unwrap();
    assert!(
        t.iter()
            .any(|t| t.uri_template == "test://template/{id}/data")
    );
    let r = client
        .read_resource("test://template/123/data")
        .await
        .unwrap();
    assert!(serde_json::to_string(&r.contents).unwrap().contains("123"));
    let e = client
        .read_resource("test://nonexistent-resource-for-conformance-testing")
        .await
        .unwrap_err();
    assert!(e.is_protocol(), "{e}");
    let prompts = client.list_prompts().await.unwrap();
    assert!(
        prompts
            .iter()
            .any(|p| p.name == "test_prompt_with_arguments")
    );
    let mut gp = GetPromptRequestParams::new("test_prompt_with_arguments");
    gp.arguments = Some(
        [
            ("arg1".to_string(), "one".to_string()),
            ("arg2".to_string(), "two".to_string()),
        ]
        .into_iter()
        .collect(),
    );
    let p = client.get_prompt(gp, RequestOptions::new()).await.unwrap();
    let s = serde_json::to_string(&p.messages).unwrap();
    assert!(s.contains("one") && s.contains("two"), "{s}");
    let params: CompleteRequestParams = serde_json::from_value(json!({
        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "test"}
    }))
    .unwrap();
    let done = client.complete(params).await.unwrap();
    assert!(done.completion.values.contains(&"test1".to_string()));
    client.close().await;
}

async fn list_changed(wire: Wire, era: EraPreference) {
    let c = connect(wire, era).await;
    let client = &c.client;
    let before = client.list_tools().await.unwrap();
    assert!(!before.iter().any(|t| t.name == "dynamic_tool"));
    if is_modern(era) {
        // SUB-01..SUB-04: listen, ack, demultiplexed notification.
        let mut sub = client
            .listen(SubscriptionFilter {
                tools_list_changed: Some(true),
                ..SubscriptionFilter::default()
            })
            .await
            .unwrap();
        assert_eq!(sub.acknowledged().tools_list_changed, Some(true));
        let mut prompts = client
            .listen(SubscriptionFilter {
                prompts_list_changed: Some(true),
                ..SubscriptionFilter::default()
            })
            .await
            .unwrap();
        client
            .call_tool("test_trigger_tool_change", None)
            .await
            .unwrap();
        let ev = tokio::time::timeout(Duration::from_secs(5), sub.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ev, SubscriptionEvent::ToolsListChanged);
        // SUB-02: the prompts stream did not get the tools change.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), prompts.next())
                .await
                .is_err()
        );
        drop(sub);
        drop(prompts);
    } else {
        client
            .call_tool("test_trigger_tool_change", None)
            .await
            .unwrap();
        // The session's stream (HTTP GET stream or stdio) carries it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            if c.notices
                .lock()
                .unwrap()
                .iter()
                .any(|n| n.method == "notifications/tools/list_changed")
            {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no list_changed notice"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Resource subscriptions exist only in the handshake era.
        client
            .subscribe_resource("test://watched-resource")
            .await
            .unwrap();
        client
            .unsubscribe_resource("test://watched-resource")
            .await
            .unwrap();
        client.set_log_level(LoggingLevel::Debug).await.unwrap();
    }
    let after = client.list_tools().await.unwrap();
    assert!(after.iter().any(|t| t.name == "dynamic_tool"));
    client.close().await;
}

// META-01, META-02
/// Issue 13 item 12: application `_meta` reaches the server next to the
/// envelope (it used to be replaced by it), and keys the rules forbid
/// or the client sets itself are refused before sending.
async fn application_meta(wire: Wire, era: EraPreference) {
    let c = connect(wire, era).await;
    let client = &c.client;
    let mine = serde_json::json!({
        "com.example/request": "r-1",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    });
    let serde_json::Value::Object(mine) = mine else {
        unreachable!()
    };
    let r = client
        .call_tool_with(
            CallToolRequestParams::new("debug_request_meta", None),
            RequestOptions::new().meta(mine.clone()),
        )
        .await
        .expect("call with application _meta");
    let seen: serde_json::Value = serde_json::from_str(&text_of(&r)).expect("JSON");
    assert_eq!(
        seen["com.example/request"], "r-1",
        "{wire:?} {era:?}: {seen}"
    );
    assert_eq!(
        seen["traceparent"], mine["traceparent"],
        "{wire:?} {era:?}: {seen}"
    );
    for bad in [
        "io.modelcontextprotocol/custom",
        "dev.mcp/x",
        "io.modelcontextprotocol/protocolVersion",
        "not a key",
    ] {
        let mut m = JsonObject::new();
        m.insert(bad.to_owned(), serde_json::json!(1));
        let e = client
            .call_tool_with(
                CallToolRequestParams::new("debug_request_meta", None),
                RequestOptions::new().meta(m),
            )
            .await
            .expect_err(bad);
        assert!(e.is_invalid_meta(), "{bad}: {e:?}");
        assert!(e.to_string().contains(bad), "{bad}: {e}");
    }
    // Nothing was sent: the connection is as good as before.
    let r = client.call_tool("test_simple_text", None).await.unwrap();
    assert!(!text_of(&r).is_empty());
    client.close().await;
}

macro_rules! matrix {
    ($($name:ident: $wire:expr, $era:expr;)*) => {
        mod matrix {
            use super::*;
            $(
                mod $name {
                    use super::*;
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn negotiation() { super::super::negotiation($wire, $era).await }
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn tools() { super::super::tools($wire, $era).await }
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn mrtr() { super::super::mrtr($wire, $era).await }
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn progress_timeout_cancel() { super::super::progress_timeout_cancel($wire, $era).await }
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn resources_prompts_completion() { super::super::resources_prompts_completion($wire, $era).await }
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn list_changed() { super::super::list_changed($wire, $era).await }
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn application_meta() { super::super::application_meta($wire, $era).await }
                }
            )*
        }
    };
}

matrix! {
    stdio_modern: Wire::Stdio, EraPreference::Auto;
    stdio_handshake: Wire::Stdio, EraPreference::Handshake;
    http_modern: Wire::Http, EraPreference::Auto;
    http_handshake: Wire::Http, EraPreference::Handshake;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mrtr_round_limit_and_manual_rounds() {
    mrtr_manual_and_limits(Wire::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_server_restart_new_session_or_stateless() {
    // LEGACY-13: a 404 for the session → initialize again and retry once.
    let mut server = HttpServer::start();
    let notices = Arc::new(Mutex::new(Vec::new()));
    let legacy = builder(EraPreference::Handshake, notices.clone())
        .connect_url(&server.url)
        .await
        .unwrap();
    let modern = builder(EraPreference::Auto, notices)
        .connect_url(&server.url)
        .await
        .unwrap();
    legacy.call_tool("test_simple_text", None).await.unwrap();
    modern.call_tool("test_simple_text", None).await.unwrap();
    server.restart();
    let r = legacy.call_tool("test_simple_text", None).await.unwrap();
    assert!(!text_of(&r).is_empty());
    assert_eq!(legacy.era(), Era::Handshake);
    // The modern wire is stateless: nothing to re-establish.
    modern.call_tool("test_simple_text", None).await.unwrap();
    legacy.close().await;
    modern.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_only_preference_and_closed_client() {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let client = builder(EraPreference::Modern, notices)
        .connect_command(stdio_command())
        .await
        .unwrap();
    assert_eq!(client.era(), Era::Modern);
    // Handshake-only methods are refused locally in the modern era.
    assert!(client.ping().await.is_err_and(|e| e.is_local()));
    client.close().await;
    let e = client
        .call_tool("test_simple_text", None)
        .await
        .unwrap_err();
    assert!(e.is_closed(), "{e}");
}
