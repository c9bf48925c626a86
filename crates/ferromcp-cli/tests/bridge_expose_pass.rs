//! `mcp bridge --expose`: what the mirror server does not implement
//! passes through to the stdio child. Extension methods reach the child
//! with their params as sent (unknown members, `_meta` entries) and its
//! answer or error comes back unchanged, ids remapped, for a handshake
//! client and a 2026-07-28 client alike; a method the child does not know
//! gets the child's own -32601; a request the child raises during an
//! extension method reaches the client that called it; vendor `_meta`
//! entries on `tools/call` reach the child. The child is
//! `tests/fixtures/expose_ext_child.py`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::raw::{Client, HANDSHAKE, MODERN, WAIT, answer};
use common::{MCP, free_port, wait_listening};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Child, Command, Stdio};

/// `mcp bridge --expose` in front of the extension child; killed on drop.
struct Exposed {
    child: Child,
    addr: String,
}

impl Exposed {
    fn start() -> Self {
        Self::start_with(&[])
    }

    fn start_with(extra: &[&str]) -> Self {
        let addr = format!("127.0.0.1:{}", free_port());
        let child = Command::new(MCP)
            .args(["bridge", "--expose", &addr])
            .args(extra)
            .args(["--", "python3"])
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/expose_ext_child.py"
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn mcp bridge --expose");
        wait_listening(&addr);
        Self { child, addr }
    }
}

impl Drop for Exposed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A request of `method` with `params` as given (their `_meta` kept; the
/// 2026-07-28 envelope added for a modern client); returns the answer.
fn send(c: &Client, id: Value, method: &str, mut params: Value) -> Value {
    if c.era == MODERN {
        let meta = params
            .as_object_mut()
            .unwrap()
            .entry("_meta")
            .or_insert_with(|| json!({}));
        meta["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
        meta["io.modelcontextprotocol/clientCapabilities"] = c.caps.clone();
    }
    let name = params["name"].as_str().map(str::to_owned);
    let (_, _, body) = c.send_raw(
        method,
        name.as_deref().filter(|_| method == "tools/call"),
        &json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
    );
    answer(&body)
}

/// Issue 24: "where they agree, messages pass through with only the ids
/// remapped, so unknown methods, extension methods and new fields cross
/// untouched".
#[test]
fn extension_methods_and_unknown_fields_cross_the_mirror_in_both_eras() {
    let x = Exposed::start();
    for era in [HANDSHAKE, MODERN] {
        let c = Client::new(&x.addr, era);
        // An extension method with unknown members and a vendor `_meta`
        // entry; the id is a string the child never sees.
        let params = json!({"n": 7, "deep": {"list": [1, "two", null]},
            "_meta": {"com.acme/trace": "t-1"}});
        let a = send(&c, json!("mine-1"), "acme/ping", params);
        assert_eq!(a["id"], "mine-1", "{era}: {a}");
        let r = &a["result"];
        assert_eq!(r["pong"], true, "{era}: {a}");
        assert_eq!(r["acme"], json!({"extra": 1}), "{era}: {a}");
        let got = &r["got"];
        assert_eq!(got["n"], 7, "{era}: {a}");
        assert_eq!(got["deep"], json!({"list": [1, "two", null]}), "{era}: {a}");
        assert_eq!(got["_meta"]["com.acme/trace"], "t-1", "{era}: {a}");
        // The modern envelope is the mirror's, not passed to a handshake child.
        assert!(
            got["_meta"]
                .get("io.modelcontextprotocol/protocolVersion")
                .is_none(),
            "{era}: {a}"
        );
        if era == MODERN {
            assert_eq!(r["resultType"], "complete", "{a}");
        } else {
            assert!(r.get("resultType").is_none(), "{a}");
        }
        // The child's own error, unchanged.
        let a = send(&c, json!(2), "io.example/thing", json!({"q": [true]}));
        assert_eq!(a["id"], 2, "{era}: {a}");
        assert_eq!(a["error"]["code"], -32050, "{era}: {a}");
        assert_eq!(a["error"]["message"], "vendor refusal", "{era}: {a}");
        assert_eq!(a["error"]["data"]["why"], "vendor", "{era}: {a}");
        assert_eq!(a["error"]["data"]["got"]["q"], json!([true]), "{era}: {a}");
        // A method the child does not know either: the child's -32601.
        let a = send(&c, json!(3), "acme/unknown", json!({}));
        assert_eq!(a["error"]["code"], -32601, "{era}: {a}");
        assert_eq!(
            a["error"]["message"], "acme child has no acme/unknown",
            "{era}: {a}"
        );
    }
}

/// Issue 24: the caller's own `_meta` entries on a known method
/// (`tools/call`) reach the child, and the child's result `_meta` entries
/// come back, in both eras.
#[test]
fn vendor_meta_entries_of_a_tools_call_cross_the_mirror() {
    let x = Exposed::start();
    for era in [HANDSHAKE, MODERN] {
        let c = Client::new(&x.addr, era);
        let a = send(
            &c,
            json!(4),
            "tools/call",
            json!({"name": "fields", "arguments": {"a": 1},
                "_meta": {"com.acme/call": "c-1"}}),
        );
        let r = &a["result"];
        assert_eq!(r["content"][0]["text"], "fields", "{era}: {a}");
        assert_eq!(r["_meta"]["com.acme/result"], "r", "{era}: {a}");
        let got = &r["structuredContent"]["got"];
        assert_eq!(got["arguments"], json!({"a": 1}), "{era}: {a}");
        assert_eq!(got["_meta"]["com.acme/call"], "c-1", "{era}: {a}");
    }
}

/// Issue 24: "new fields cross untouched" on a known method too: the
/// child's `tools/call` result reaches the client as the child wrote it
/// (an unknown top-level member, an unknown member of a content block, a
/// vendor `_meta` entry), in both eras; the mirror adds only `resultType`
/// and its `serverInfo` entry for a 2026-07-28 client.
#[test]
fn unknown_members_of_a_tools_call_result_cross_the_mirror_in_both_eras() {
    let x = Exposed::start();
    for era in [HANDSHAKE, MODERN] {
        let c = Client::new(&x.addr, era);
        let a = send(
            &c,
            json!(5),
            "tools/call",
            json!({"name": "fields", "arguments": {"b": [2]}}),
        );
        assert_eq!(a["id"], 5, "{era}: {a}");
        let mut r = a["result"].clone();
        assert_eq!(r["acmeTop"], json!({"t": 1}), "{era}: {a}");
        assert_eq!(r["content"][0]["acmeBlock"], "b", "{era}: {a}");
        assert_eq!(r["_meta"]["com.acme/result"], "r", "{era}: {a}");
        let o = r.as_object_mut().unwrap();
        if era == MODERN {
            assert_eq!(o.remove("resultType"), Some(json!("complete")), "{a}");
            let meta = o["_meta"].as_object_mut().unwrap();
            let info = meta.remove("io.modelcontextprotocol/serverInfo");
            assert_eq!(info.unwrap()["name"], "acme-child", "{a}");
        }
        // Nothing else added, nothing dropped: the child's result exactly.
        let got = o["structuredContent"]["got"].clone();
        assert_eq!(
            r,
            json!({
                "content": [{"type": "text", "text": "fields", "acmeBlock": "b"}],
                "structuredContent": {"got": got},
                "acmeTop": {"t": 1},
                "_meta": {"com.acme/result": "r"},
            }),
            "{era}: {a}"
        );
        assert_eq!(got["arguments"], json!({"b": [2]}), "{era}: {a}");
    }
}

/// Issue 24: the same for `resources/read`: the child's result reaches the
/// client as the child wrote it, in both eras; for a 2026-07-28 client
/// the mirror adds `resultType`, its `serverInfo` entry and the cache
/// hints the child did not give.
#[test]
fn unknown_members_of_a_resources_read_result_cross_the_mirror_in_both_eras() {
    let x = Exposed::start();
    for era in [HANDSHAKE, MODERN] {
        let c = Client::new(&x.addr, era);
        let a = c.request(json!(6), "resources/read", json!({"uri": "acme://r"}));
        assert_eq!(a["id"], 6, "{era}: {a}");
        let mut r = a["result"].clone();
        let o = r.as_object_mut().unwrap();
        if era == MODERN {
            assert_eq!(o.remove("resultType"), Some(json!("complete")), "{a}");
            assert!(o.remove("ttlMs").is_some(), "{a}");
            assert!(o.remove("cacheScope").is_some(), "{a}");
            let meta = o["_meta"].as_object_mut().unwrap();
            let info = meta.remove("io.modelcontextprotocol/serverInfo");
            assert_eq!(info.unwrap()["name"], "acme-child", "{a}");
        }
        assert_eq!(
            r,
            json!({
                "contents": [{"uri": "acme://r", "text": "r", "acmeItem": [1]}],
                "acmeRead": {"r": true},
                "_meta": {"com.acme/read": "m"},
            }),
            "{era}: {a}"
        );
    }
}

/// Sends the notification `method` with `params` (the 2026-07-28 envelope
/// added for a modern client); the mirror accepts it with 202.
fn notify(c: &Client, method: &str, mut params: Value) {
    if c.era == MODERN {
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
    }
    let (status, _, body) = c.send_raw(
        method,
        None,
        &json!({"jsonrpc":"2.0","method":method,"params":params}),
    );
    assert_eq!(status, 202, "{method}: {body}");
}

/// The notifications the child serving `c` has received, once one of
/// method `until` is among them (they cross on a task of their own).
fn seen_until(c: &Client, until: &str) -> Vec<Value> {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let a = send(c, json!("seen"), "acme/seen", json!({}));
        let seen = a["result"]["seen"].as_array().cloned().unwrap_or_default();
        if seen.iter().any(|n| n["method"] == until) {
            return seen;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{until} never reached the child: {a}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Issue 24: a client's extension notification reaches the child with its
/// params as sent (unknown members, vendor `_meta`; not the 2026-07-28
/// envelope), in both eras; `notifications/roots/list_changed` does not
/// reach a child shared by all clients (their roots differ; the child
/// asks within a call, and the bridge asks that call's client).
#[test]
fn extension_notifications_reach_the_shared_child_and_roots_changes_do_not() {
    let x = Exposed::start();
    for era in [HANDSHAKE, MODERN] {
        let c = Client::new(&x.addr, era);
        notify(&c, "notifications/roots/list_changed", json!({}));
        let method = format!("acme/changed-{era}");
        notify(
            &c,
            &method,
            json!({"n": [1, {"deep": true}], "_meta": {"com.acme/n": "v"}}),
        );
        let seen = seen_until(&c, &method);
        let got = seen
            .iter()
            .find(|n| n["method"] == method.as_str())
            .unwrap();
        assert_eq!(
            got["params"],
            json!({"n": [1, {"deep": true}], "_meta": {"com.acme/n": "v"}}),
            "{era}: {seen:?}"
        );
        assert!(
            !seen
                .iter()
                .any(|n| n["method"] == "notifications/roots/list_changed"),
            "{era}: {seen:?}"
        );
    }
}

/// Issue 24 with `--child-per-session`: a handshake client's
/// `notifications/roots/list_changed` reaches its own session's child
/// (whose roots are that client's alone).
#[test]
fn roots_changes_reach_a_sessions_own_child() {
    let x = Exposed::start_with(&["--child-per-session"]);
    let c = Client::new(&x.addr, HANDSHAKE);
    // The session's child starts with the session's first request.
    let _ = seen_until(&c, "notifications/initialized");
    notify(&c, "notifications/roots/list_changed", json!({}));
    let seen = seen_until(&c, "notifications/roots/list_changed");
    let n = seen
        .iter()
        .filter(|n| n["method"] == "notifications/roots/list_changed")
        .count();
    assert_eq!(n, 1, "{seen:?}");
}

/// Issue 24: a server→client request raised during an extension method
/// reaches the client whose request caused it (handshake era: on that
/// request's stream; 2026-07-28: as an `input_required` round).
#[test]
fn a_childs_request_during_an_extension_method_reaches_its_caller() {
    let x = Exposed::start();
    let c = Client::with_caps(&x.addr, HANDSHAKE, json!({"elicitation": {"form": {}}}));
    let (asked, m) = c.request_answering(
        json!("ask-1"),
        "acme/ask",
        json!({"text": "which?"}),
        |_| json!({"action": "accept", "content": {"r": "this one"}}),
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["method"], "elicitation/create", "{}", asked[0]);
    assert_eq!(asked[0]["params"]["message"], "which?", "{}", asked[0]);
    assert_eq!(m["result"]["answer"]["content"]["r"], "this one", "{m}");
    modern_round(&x);
}

/// The same on the 2026-07-28 wire: an `input_required` round, then the
/// retry with the client's answer and the sealed state.
fn modern_round(x: &Exposed) {
    let m = Client::with_caps(&x.addr, MODERN, json!({"elicitation": {"form": {}}}));
    let first = send(&m, json!(1), "acme/ask", json!({"text": "which, m?"}));
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required", "{first}");
    let requests = r["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("{first}"));
    assert_eq!(requests.len(), 1, "{first}");
    let (key, req) = requests.iter().next().unwrap();
    assert_eq!(req["method"], "elicitation/create", "{first}");
    assert_eq!(req["params"]["message"], "which, m?", "{first}");
    let retry = send(
        &m,
        json!(2),
        "acme/ask",
        json!({"text": "which, m?",
            "inputResponses": {key: {"action": "accept", "content": {"r": "that one"}}},
            "requestState": r["requestState"]}),
    );
    assert_eq!(
        retry["result"]["answer"]["content"]["r"], "that one",
        "{retry}"
    );
    assert_eq!(retry["result"]["resultType"], "complete", "{retry}");
}

/// `mcp bridge URL`: a stdio host in front of `url`; killed on drop.
struct StdioHost {
    child: Child,
    stdin: std::process::ChildStdin,
    rx: std::sync::mpsc::Receiver<Value>,
}

impl StdioHost {
    fn start(url: &str) -> Self {
        use std::io::BufRead;
        let mut child = Command::new(MCP)
            .args(["bridge", url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn mcp bridge URL");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on the bridge's stdout ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        Self { child, stdin, rx }
    }

    /// Sends `msg`; returns the answer with its id (other messages skipped).
    fn call(&mut self, msg: Value) -> Value {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let m = self.rx.recv_timeout(WAIT).expect("an answer in time");
            if m.get("id") == msg.get("id") && m.get("method").is_none() {
                return m;
            }
        }
    }
}

impl Drop for StdioHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Issue 24, `mcp bridge URL` where host and remote speak the same era:
/// an extension method, its unknown members and `_meta` entries cross
/// byte for byte, and the answer or the remote's own error comes back.
/// The remote is `--expose` in front of the extension child, so a message
/// crosses both bridges and reaches the child itself.
#[test]
fn the_stdio_bridge_passes_extension_methods_to_an_exposed_child() {
    let x = Exposed::start();
    let url = format!("http://{}/mcp", x.addr);
    for era in [HANDSHAKE, MODERN] {
        let mut host = StdioHost::start(&url);
        let mut meta = json!({"com.acme/trace": "t-2"});
        if era == HANDSHAKE {
            let init = host.call(json!({"jsonrpc":"2.0","id":"init","method":"initialize",
                "params":{"protocolVersion": HANDSHAKE, "capabilities": {},
                    "clientInfo": {"name": "host", "version": "1"}}}));
            assert_eq!(init["result"]["protocolVersion"], HANDSHAKE, "{init}");
            writeln!(
                host.stdin,
                "{}",
                json!({"jsonrpc":"2.0","method":"notifications/initialized"})
            )
            .unwrap();
        } else {
            meta["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
            meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
        }
        let a = host.call(json!({"jsonrpc":"2.0","id":"h-1","method":"acme/ping",
            "params":{"n": [1, {"m": null}], "_meta": meta}}));
        assert_eq!(a["id"], "h-1", "{era}: {a}");
        assert_eq!(a["result"]["pong"], true, "{era}: {a}");
        assert_eq!(a["result"]["acme"], json!({"extra": 1}), "{era}: {a}");
        assert_eq!(
            a["result"]["got"]["n"],
            json!([1, {"m": null}]),
            "{era}: {a}"
        );
        assert_eq!(
            a["result"]["got"]["_meta"]["com.acme/trace"], "t-2",
            "{era}: {a}"
        );
        let a = host.call(json!({"jsonrpc":"2.0","id":2,"method":"acme/unknown",
            "params":{"_meta": meta}}));
        assert_eq!(a["error"]["code"], -32601, "{era}: {a}");
        assert_eq!(
            a["error"]["message"], "acme child has no acme/unknown",
            "{era}: {a}"
        );
    }
}

/// Issue 24: the tool filter is enforced, not hidden. The bridge checks it
/// on the methods it understands only, so with a filter extension methods
/// are the mirror's -32601 and never reach the child (an extension could
/// run a denied tool by another route); a known method in disguise
/// (`TOOLS/CALL`) is never passed on either.
#[test]
fn with_a_tool_filter_extension_methods_do_not_reach_the_child() {
    let x = Exposed::start_with(&["--deny-tool", "fields"]);
    for era in [HANDSHAKE, MODERN] {
        let c = Client::new(&x.addr, era);
        let a = send(&c, json!(1), "acme/ping", json!({}));
        assert_eq!(a["error"]["code"], -32601, "{era}: {a}");
        assert!(a["result"].is_null(), "{era}: {a}");
        let message = a["error"]["message"].as_str().unwrap_or_default();
        assert!(!message.contains("acme child"), "{era}: {a}");
        let a = send(&c, json!(2), "tools/call", json!({"name": "fields"}));
        assert!(a.get("result").is_none(), "{era}: {a}");
    }
    let open = Exposed::start();
    for era in [HANDSHAKE, MODERN] {
        let c = Client::new(&open.addr, era);
        let a = send(&c, json!(3), "TOOLS/CALL", json!({"name": "fields"}));
        assert_eq!(a["error"]["code"], -32601, "{era}: {a}");
        let message = a["error"]["message"].as_str().unwrap_or_default();
        assert!(!message.contains("acme child"), "{era}: {a}");
    }
}
