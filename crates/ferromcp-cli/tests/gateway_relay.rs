//! `mcp gateway` relays an upstream's input requests (elicitation,
//! sampling, roots) to the client that made the call (issue 26): real
//! processes all the way. Upstream: the everything-server over stdio
//! (`mcp serve --stdio`, either era); clients: raw HTTP/1.1 in both eras.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use common::raw::{Client, HANDSHAKE, MODERN, text_of};
use common::{HttpServer, MCP, scratch};
use serde_json::{Value, json};

/// A gateway in front of the everything-server over stdio, as `ev`.
fn gateway(name: &str, extra: Value) -> Gateway {
    let dir = scratch(name);
    let mut config = json!({"mcpServers": {"ev": {"command": MCP, "args": ["serve", "--stdio"]}}});
    if !extra.is_null() {
        config["gateway"] = extra;
    }
    let mut g = Gateway::start(&dir, &config, &[]);
    assert!(g.stderr_until("1 of 1 upstream(s) connected"), "{}", g.seen);
    g
}

fn elicit_caps() -> Value {
    json!({"elicitation": {"form": {}}})
}

fn every_cap() -> Value {
    json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}})
}

/// The answer a client gives to one input request.
fn reply(req: &Value) -> Value {
    match req["method"].as_str().unwrap_or_default() {
        "elicitation/create" => {
            // Fills every property of the form with "Ada".
            let props = req["params"]["requestedSchema"]["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let content: serde_json::Map<String, Value> =
                props.keys().map(|k| (k.clone(), json!("Ada"))).collect();
            json!({"action": "accept", "content": content})
        }
        "sampling/createMessage" => json!({
            "role": "assistant", "model": "test-model",
            "content": {"type": "text", "text": "Paris"}
        }),
        "roots/list" => json!({"roots": [{"uri": "file:///tmp/a", "name": "a"}]}),
        other => panic!("unexpected input request {other}: {req}"),
    }
}

/// A modern client's retry of `tool` answering every input request of
/// `ir` (an `input_required` result).
fn answer_round(c: &Client, id: u64, tool: &str, ir: &Value) -> Value {
    let reqs = ir["result"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("no inputRequests in {ir}"));
    let answers: serde_json::Map<String, Value> =
        reqs.iter().map(|(k, r)| (k.clone(), reply(r))).collect();
    c.request(
        json!(id),
        "tools/call",
        json!({"name": tool, "arguments": {},
               "inputResponses": answers,
               "requestState": ir["result"]["requestState"]}),
    )
}

// MRTR-04, MRTR-06, MRTR-08
#[test]
fn a_modern_upstreams_input_requests_reach_a_modern_client_and_back() {
    let g = gateway("gateway-relay-modern", Value::Null);
    let c = Client::with_caps(&g.addr, MODERN, every_cap());
    // One round: the upstream's elicitation is the gateway's own.
    let tool = "ev__test_input_required_result_elicitation";
    let first = c.call(json!(1), tool, json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let req = &first["result"]["inputRequests"]["user_name"];
    assert_eq!(req["method"], "elicitation/create", "{first}");
    assert_eq!(req["params"]["message"], "What is your name?", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap();
    let done = answer_round(&c, 2, tool, &first);
    assert_eq!(
        text_of(&done),
        r#"Hello! User response: action=accept, content={"name":"Ada"}"#,
        "{done}"
    );
    // The upstream's own state comes back to it byte for byte, over
    // several rounds.
    let tool = "ev__test_input_required_result_multi_round";
    let mut r = c.call(json!(3), tool, json!({}));
    let mut rounds = 0;
    while r["result"]["resultType"] == "input_required" {
        rounds += 1;
        assert!(rounds <= 3, "{r}");
        r = answer_round(&c, 3 + rounds, tool, &r);
    }
    assert_eq!(rounds, 2, "{r}");
    assert_eq!(text_of(&r), "Multi-round flow completed", "{r}");
    // Sampling and roots, several at once.
    let tool = "ev__test_input_required_result_multiple_inputs";
    let first = c.call(json!(10), tool, json!({}));
    let keys: Vec<&String> = first["result"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("{first}"))
        .keys()
        .collect();
    assert_eq!(keys, ["capital_question", "client_roots", "user_name"]);
    let done = answer_round(&c, 11, tool, &first);
    assert_eq!(text_of(&done), "All inputs received", "{done}");

    // The gateway's state cannot be forged, changed, or replayed on
    // another tool (whose upstream state it would carry).
    let mut forged = state.to_owned();
    forged.replace_range(forged.len() - 4.., "AAAA");
    for (tool, st) in [
        (
            "ev__test_input_required_result_elicitation",
            forged.as_str(),
        ),
        ("ev__test_input_required_result_request_state", state),
    ] {
        let r = c.request(
            json!(20),
            "tools/call",
            json!({"name": tool, "arguments": {},
                   "inputResponses": {"user_name": reply(req)},
                   "requestState": st}),
        );
        assert_eq!(r["error"]["code"], -32602, "{tool}: {r}");
    }
}

// MRTR-04
#[test]
fn a_client_without_the_capability_gets_a_clear_error_naming_the_upstream() {
    let g = gateway("gateway-relay-caps", Value::Null);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::with_caps(&g.addr, era, elicit_caps());
        let r = c.call(
            json!(1),
            "ev__test_input_required_result_sampling",
            json!({}),
        );
        assert_eq!(r["error"]["code"], -32021, "{era}: {r}");
        let msg = r["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("\"ev\"") && msg.contains("sampling/createMessage"),
            "{era}: {r}"
        );
    }
}

#[test]
fn relayed_rounds_are_bounded_by_gateway_relay_max_rounds() {
    let g = gateway("gateway-relay-rounds", json!({"relay": {"maxRounds": 2}}));
    let c = Client::with_caps(&g.addr, MODERN, elicit_caps());
    let tool = "ev__test_input_required_result_multi_round";
    let first = c.call(json!(1), tool, json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let second = answer_round(&c, 2, tool, &first);
    let msg = second["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("gateway.relay.maxRounds"), "{second}");
}

// MRTR-13, LEGACY-18
#[test]
fn a_modern_upstreams_input_requests_reach_a_handshake_client_on_its_session() {
    let g = gateway("gateway-relay-handshake", Value::Null);
    let c = Client::with_caps(&g.addr, HANDSHAKE, every_cap());
    let call = |id: u64, tool: &str| {
        c.request_answering(
            json!(id),
            "tools/call",
            json!({"name": tool, "arguments": {}}),
            reply,
        )
    };
    let (asked, done) = call(1, "ev__test_input_required_result_elicitation");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["method"], "elicitation/create");
    assert_eq!(
        text_of(&done),
        r#"Hello! User response: action=accept, content={"name":"Ada"}"#,
        "{done}"
    );
    let (asked, done) = call(2, "ev__test_input_required_result_multi_round");
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(text_of(&done), "Multi-round flow completed", "{done}");
    let (asked, done) = call(3, "ev__test_input_required_result_multiple_inputs");
    let mut methods: Vec<&str> = asked
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    methods.sort_unstable();
    assert_eq!(
        methods,
        ["elicitation/create", "roots/list", "sampling/createMessage"]
    );
    assert_eq!(text_of(&done), "All inputs received", "{done}");
}

// LEGACY-18
#[test]
fn a_handshake_upstreams_server_requests_reach_a_handshake_client() {
    let old = HttpServer::start(&["--era", "handshake"]);
    let dir = scratch("gateway-relay-pushed");
    let config = json!({"mcpServers": {"old": {"url": old.url}}});
    let mut g = Gateway::start(&dir, &config, &[]);
    assert!(g.stderr_until("1 of 1 upstream(s) connected"), "{}", g.seen);
    let c = Client::with_caps(&g.addr, HANDSHAKE, every_cap());
    let (asked, done) = c.request_answering(
        json!(1),
        "tools/call",
        json!({"name": "old__test_elicitation", "arguments": {"message": "Who?"}}),
        reply,
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["method"], "elicitation/create", "{asked:?}");
    assert_eq!(asked[0]["params"]["message"], "Who?", "{asked:?}");
    assert_eq!(
        text_of(&done),
        r#"User response: action=accept, content={"response":"Ada"}"#,
        "{done}"
    );
    let (asked, done) = c.request_answering(
        json!(2),
        "tools/call",
        json!({"name": "old__test_sampling", "arguments": {"prompt": "Capital?"}}),
        reply,
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(text_of(&done), "LLM response: Paris", "{done}");
    // A client without the capability: the upstream hears why.
    let c = Client::with_caps(&g.addr, HANDSHAKE, elicit_caps());
    let (asked, done) = c.request_answering(
        json!(3),
        "tools/call",
        json!({"name": "old__test_sampling", "arguments": {"prompt": "Capital?"}}),
        reply,
    );
    assert!(asked.is_empty(), "{asked:?}");
    assert!(done.to_string().contains("did not declare"), "{done}");
}
