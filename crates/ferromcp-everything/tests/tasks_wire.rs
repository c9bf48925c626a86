//! Wire-level tests of the tasks extension (SEP-2663, docs/TASKS.md)
//! against a real everything-server process over HTTP: every error path,
//! caps under a flood of creations, cancel racing completion, TTL expiry,
//! and a finished result read twice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use std::time::Duration;

const EXT: &str = "io.modelcontextprotocol/tasks";

fn with_ext() -> Value {
    envelope_with(json!({"extensions": {EXT: {}}, "elicitation": {}}))
}

fn call(c: &Client, name: &str, args: Value) -> Value {
    let r = c.post(
        &request(
            1,
            "tools/call",
            json!({"name": name, "arguments": args, "_meta": with_ext()}),
        ),
        &[],
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.messages().pop().unwrap()
}

fn task_req(c: &Client, method: &str, params: Value, meta: Value) -> Response {
    let id = params["taskId"].as_str().unwrap_or_default().to_owned();
    let mut p = params;
    p["_meta"] = meta;
    c.post(&request(2, method, p), &[("Mcp-Name", &id)])
}

fn get(c: &Client, id: &str) -> Value {
    task_req(c, "tasks/get", json!({"taskId": id}), with_ext()).json()
}

fn cancel(c: &Client, id: &str) -> Value {
    task_req(c, "tasks/cancel", json!({"taskId": id}), with_ext()).json()
}

/// Polls until the task is terminal (or `within` passes); returns its last state.
fn settle(c: &Client, id: &str, within: Duration) -> Value {
    let mut last = Value::Null;
    eventually(within, || {
        last = get(c, id);
        matches!(
            last["result"]["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        )
    });
    last
}

fn create(c: &Client, name: &str, args: Value) -> String {
    let v = call(c, name, args);
    assert_eq!(v["result"]["resultType"], "task", "{v}");
    v["result"]["taskId"].as_str().unwrap().to_owned()
}

#[test]
fn task_methods_without_the_extension_are_missing_capability() {
    let s = HttpServer::start();
    let c = s.client();
    for (method, params) in [
        ("tasks/get", json!({"taskId": "x"})),
        ("tasks/update", json!({"taskId": "x", "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": "x"})),
    ] {
        let r = task_req(&c, method, params, envelope());
        let v = r.json();
        assert_eq!(v["error"]["code"], -32021, "{method}: {v}");
        assert!(
            v["error"]["data"]["requiredCapabilities"]["extensions"][EXT].is_object(),
            "{v}"
        );
    }
}

#[test]
fn required_task_tool_without_the_extension_is_missing_capability() {
    let s = HttpServer::start();
    let r = s.post(
        &request(
            1,
            "tools/call",
            json!({"name": "failing_job", "arguments": {}}),
        ),
        &[],
    );
    assert_eq!(r.error_code(), Some(-32021));
    // An optional task tool without the extension runs as a plain call.
    let r = s.post(
        &request(
            1,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0}}),
        ),
        &[],
    );
    let v = r.json();
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert!(v["result"].get("taskId").is_none());
}

#[test]
fn unknown_task_ids_and_removed_methods() {
    let s = HttpServer::start();
    let c = s.client();
    assert_eq!(get(&c, "no-such-task")["error"]["code"], -32602);
    assert_eq!(cancel(&c, "no-such-task")["error"]["code"], -32602);
    // tasks/update acknowledges any id (SEP-2663): nothing is revealed.
    let v = task_req(
        &c,
        "tasks/update",
        json!({"taskId": "no-such-task", "inputResponses": {}}),
        with_ext(),
    )
    .json();
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    for removed in ["tasks/result", "tasks/list"] {
        let r = c.post(
            &request(3, removed, json!({"taskId": "x", "_meta": with_ext()})),
            &[],
        );
        assert_eq!(r.error_code(), Some(-32601), "{removed}");
    }
    // A taskId that is not a string cannot match the Mcp-Name routing
    // header: the header ladder rejects it (HeaderMismatch) before dispatch.
    let r = task_req(&c, "tasks/get", json!({"taskId": 7}), with_ext());
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), Some(-32020));
}

#[test]
fn mcp_name_must_mirror_the_task_id() {
    let s = HttpServer::start();
    let c = s.client();
    let id = create(&c, "slow_compute", json!({"seconds": 60}));
    let body = request(2, "tasks/get", json!({"taskId": id, "_meta": with_ext()}));
    let r = c.post(&body, &[("Mcp-Name", "someone-else")]);
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), Some(-32020));
    let r = c.post(&body, &[]);
    assert_eq!(r.error_code(), Some(-32020), "Mcp-Name is required");
    cancel(&c, &id);
}

#[test]
fn results_are_inlined_and_stable_across_reads() {
    let s = HttpServer::start();
    let c = s.client();
    let id = create(&c, "slow_compute", json!({"seconds": 0, "label": "x"}));
    let first = settle(&c, &id, Duration::from_secs(10));
    assert_eq!(first["result"]["status"], "completed", "{first}");
    assert_eq!(
        first["result"]["result"]["content"][0]["text"],
        "Computed x in 0 s"
    );
    let second = get(&c, &id);
    assert_eq!(
        first["result"], second["result"],
        "a result read twice is the same"
    );
    // Tool error → completed + isError; protocol error → failed + error.
    let id = create(&c, "failing_job", json!({}));
    let v = settle(&c, &id, Duration::from_secs(10));
    assert_eq!(v["result"]["status"], "completed");
    assert_eq!(v["result"]["result"]["isError"], true);
    let id = create(&c, "protocol_error_job", json!({}));
    let v = settle(&c, &id, Duration::from_secs(10));
    assert_eq!(v["result"]["status"], "failed");
    assert_eq!(v["result"]["error"]["code"], -32603);
    assert!(v["result"].get("result").is_none());
    // Cancel on a finished task is the same empty ack and changes nothing.
    let ack = cancel(&c, &id);
    assert_eq!(ack["result"]["resultType"], "complete");
    assert!(ack["result"].get("status").is_none());
    assert_eq!(get(&c, &id)["result"]["status"], "failed");
}

#[test]
fn cancel_racing_completion_ends_in_one_consistent_state() {
    let s = HttpServer::start();
    let c = s.client();
    let ids: Vec<String> = (0..20)
        .map(|_| create(&c, "slow_compute", json!({"seconds": 0})))
        .collect();
    let handles: Vec<_> = ids
        .iter()
        .cloned()
        .map(|id| std::thread::spawn(move || cancel(&c, &id)))
        .collect();
    for h in handles {
        let ack = h.join().unwrap();
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    }
    for id in &ids {
        let a = settle(&c, id, Duration::from_secs(10));
        let b = get(&c, id);
        assert_eq!(a["result"], b["result"], "stable after the race");
        match a["result"]["status"].as_str() {
            Some("completed") => assert!(a["result"]["result"].is_object()),
            Some("cancelled") => assert!(a["result"].get("result").is_none()),
            other => panic!("unexpected terminal status {other:?}: {a}"),
        }
    }
}

#[test]
fn a_flood_of_creations_stays_within_the_caps() {
    let s = HttpServer::start_with(&[("MCP_TASKS_MAX_LIVE", "5"), ("MCP_TASKS_MAX_RETAINED", "8")]);
    let c = s.client();
    let outcomes: Vec<Value> = (0..16)
        .map(|_| std::thread::spawn(move || call(&c, "slow_compute", json!({"seconds": 60}))))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let created: Vec<&Value> = outcomes
        .iter()
        .filter(|v| v["result"]["resultType"] == "task")
        .collect();
    assert_eq!(created.len(), 5, "exactly the live cap is admitted");
    for v in outcomes.iter().filter(|v| v.get("error").is_some()) {
        assert_eq!(v["error"]["code"], -32603, "{v}");
        assert_eq!(v["error"]["data"]["reason"], "task_capacity", "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("running"));
    }
    // Finishing tasks frees live slots, but finished ones stay retained
    // until their TTL: the retained cap then refuses.
    for v in &created {
        let id = v["result"]["taskId"].as_str().unwrap();
        cancel(&c, id);
        settle(&c, id, Duration::from_secs(10));
    }
    let more: Vec<Value> = (0..4)
        .map(|_| call(&c, "slow_compute", json!({"seconds": 60})))
        .collect();
    assert_eq!(
        more.iter()
            .filter(|v| v["result"]["resultType"] == "task")
            .count(),
        3
    );
    let refused = more.iter().find(|v| v.get("error").is_some()).unwrap();
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("retained"),
        "{refused}"
    );
}

#[test]
fn tasks_expire_after_their_ttl() {
    let s = HttpServer::start_with(&[("MCP_TASK_TTL_MS", "300")]);
    let c = s.client();
    let v = call(&c, "slow_compute", json!({"seconds": 60}));
    assert_eq!(v["result"]["ttlMs"], 300);
    let id = v["result"]["taskId"].as_str().unwrap().to_owned();
    assert!(
        eventually(Duration::from_secs(10), || get(&c, &id)["error"]["code"]
            == -32602),
        "an expired task is gone"
    );
}

#[test]
fn input_required_round_trip_and_partial_answers() {
    let s = HttpServer::start();
    let c = s.client();
    let id = create(&c, "multi_input", json!({}));
    let mut v = Value::Null;
    assert!(eventually(Duration::from_secs(10), || {
        v = get(&c, &id);
        v["result"]["status"] == "input_required"
    }));
    let keys: Vec<String> = v["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["confirm", "name"]);
    let update = |answers: Value| {
        task_req(
            &c,
            "tasks/update",
            json!({"taskId": id, "inputResponses": answers}),
            with_ext(),
        )
        .json()
    };
    let ack = update(json!({"name": {"action": "accept", "content": {"name": "a"}}}));
    assert_eq!(ack["result"]["resultType"], "complete");
    assert!(ack["result"].get("taskId").is_none());
    let v = get(&c, &id);
    assert_eq!(v["result"]["status"], "input_required");
    assert_eq!(
        v["result"]["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["confirm"]
    );
    update(json!({"confirm": {"action": "accept", "content": {"confirm": true}}}));
    let v = settle(&c, &id, Duration::from_secs(10));
    assert_eq!(v["result"]["status"], "completed");
    assert_eq!(
        v["result"]["result"]["content"][0]["text"],
        "Both inputs received"
    );
}

/// Regression (issue 23, item 9): a malformed answer to an outstanding key
/// (`{"confirm": "yes"}` for a form elicitation) got an empty ack and was
/// recorded; the handler asked again under the same key, so a client that
/// answers each key once waited until the TTL. Now it is -32602 naming the
/// key, nothing of that update is recorded (not even a valid answer next
/// to it), unknown keys are still ignored, and well-formed answers complete
/// the task.
// MRTR-11
#[test]
fn malformed_answers_to_outstanding_keys_are_refused() {
    let s = HttpServer::start();
    let c = s.client();
    let id = create(&c, "multi_input", json!({}));
    let outstanding = |v: &Value| -> Vec<String> {
        v["result"]["inputRequests"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut v = Value::Null;
    assert!(eventually(Duration::from_secs(10), || {
        v = get(&c, &id);
        v["result"]["status"] == "input_required"
    }));
    assert_eq!(outstanding(&v), ["confirm", "name"]);
    let update = |answers: Value| {
        task_req(
            &c,
            "tasks/update",
            json!({"taskId": id, "inputResponses": answers}),
            with_ext(),
        )
        .json()
    };
    let name = json!({"action": "accept", "content": {"name": "a"}});
    for answers in [
        json!({"confirm": "yes"}),
        json!({"confirm": {"action": "maybe"}}),
        json!({"confirm": []}),
        json!({"name": name, "confirm": 7}),
    ] {
        let r = update(answers.clone());
        assert_eq!(r["error"]["code"], -32602, "{answers}: {r}");
        let msg = r["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains(r#"inputResponses["confirm"]"#),
            "{answers}: {msg}"
        );
        // Nothing recorded: both keys still outstanding.
        let v = get(&c, &id);
        assert_eq!(v["result"]["status"], "input_required", "{answers}: {v}");
        assert_eq!(outstanding(&v), ["confirm", "name"], "{answers}");
    }
    // A key that was never asked is ignored, whatever its value.
    let r = update(json!({"other": "yes"}));
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    // Well-formed answers, each sent once, complete the task.
    let r = update(json!({
        "name": name,
        "confirm": {"action": "accept", "content": {"confirm": true}}
    }));
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let v = settle(&c, &id, Duration::from_secs(10));
    assert_eq!(v["result"]["status"], "completed", "{v}");
    assert_eq!(
        v["result"]["result"]["content"][0]["text"],
        "Both inputs received"
    );
}
