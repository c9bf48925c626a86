//! `mcp bridge --expose HOST:PORT -- CMD`: HTTP clients of both eras (raw
//! HTTP/1.1 here, so ids are chosen by the test and collide on purpose) in
//! front of a stdio child: `mcp serve --stdio` (the everything-server) or
//! `tests/fixtures/expose_child.py`, which hangs, crashes and writes
//! garbage on demand.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::raw::{Client, HANDSHAKE, MODERN, WAIT, messages, text_of, tool_names};
use common::{MCP, free_port, wait_listening};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn fixture() -> Vec<String> {
    vec![
        "python3".into(),
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/expose_child.py"
        )
        .into(),
    ]
}

fn everything() -> Vec<String> {
    vec![MCP.into(), "serve".into(), "--stdio".into()]
}

/// `mcp bridge --expose` on a free port; killed on drop.
struct Exposed {
    child: Child,
    addr: String,
    stderr: mpsc::Receiver<String>,
}

impl Exposed {
    fn start(extra: &[&str], cmd: &[String], env: &[(&str, &str)]) -> Self {
        let addr = format!("127.0.0.1:{}", free_port());
        let mut child = Command::new(MCP)
            .args(["bridge", "--expose", &addr])
            .args(extra)
            .arg("--")
            .args(cmd)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp bridge --expose");
        let mut err = child.stderr.take().unwrap();
        let (tx, stderr) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match err.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
                    }
                }
            }
        });
        wait_listening(&addr);
        Self {
            child,
            addr,
            stderr,
        }
    }

    /// Stderr so far, waiting up to WAIT for `needle` to appear in it.
    fn stderr_until(&self, needle: &str, text: &mut String) -> bool {
        let deadline = std::time::Instant::now() + WAIT;
        while !text.contains(needle) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(s) => text.push_str(&s),
                Err(_) => return false,
            }
        }
        true
    }
}

impl Drop for Exposed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child's own answers to `requests`, asked directly over stdio
/// (after a handshake; the first answer is the initialize result).
fn direct(cmd: &[String], requests: &[Value]) -> Vec<Value> {
    let mut c = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let stdout = c.stdout.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    let mut out = Vec::new();
    let mut ask = |msg: Value, answered: bool, out: &mut Vec<Value>| {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        if !answered {
            return;
        }
        loop {
            let line = lines.next().expect("the child ended").unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("id") == msg.get("id") && v.get("method").is_none() {
                out.push(v);
                break;
            }
        }
    };
    ask(
        json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
            "protocolVersion": HANDSHAKE, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        true,
        &mut out,
    );
    ask(
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        false,
        &mut out,
    );
    for (n, r) in requests.iter().enumerate() {
        let mut r = r.clone();
        r["jsonrpc"] = json!("2.0");
        r["id"] = json!(n);
        ask(r, true, &mut out);
    }
    drop(stdin);
    let _ = c.kill();
    let _ = c.wait();
    out
}

#[test]
fn eight_clients_of_both_eras_share_one_child_without_crosstalk() {
    let x = Exposed::start(&[], &everything(), &[]);
    let (tx, rx) = mpsc::channel();
    for c in 0..8 {
        let addr = x.addr.clone();
        let tx = tx.clone();
        std::thread::spawn(move || {
            let era = if c % 2 == 0 { MODERN } else { HANDSHAKE };
            let client = Client::new(&addr, era);
            for n in 0..10 {
                // Every client uses the same ids (alternately numbers and
                // strings), so only the bridge's remapping keeps them apart.
                let id = if n % 2 == 0 {
                    json!(n)
                } else {
                    json!(n.to_string())
                };
                let text = format!("client {c} ({era}) call {n}");
                let a = client.call(id.clone(), "echo", json!({"text": text}));
                let ok = a["id"] == id && text_of(&a).contains(&text);
                tx.send((c, n, ok, a.to_string())).unwrap();
            }
        });
    }
    drop(tx);
    let mut answers = 0;
    while let Ok((c, n, ok, a)) = rx.recv_timeout(WAIT) {
        assert!(ok, "client {c} call {n} got someone else's answer: {a}");
        answers += 1;
    }
    assert_eq!(answers, 80);
}

// Issue 24: initialize and server/discover answered from the child's session.
#[test]
fn both_eras_are_answered_from_the_childs_initialize() {
    // What the child itself says, asked directly over stdio.
    let direct = direct(&everything(), &[]).remove(0);
    let x = Exposed::start(&[], &everything(), &[]);
    let h = Client::new(&x.addr, HANDSHAKE);
    let init = h.init.clone().unwrap();
    assert_eq!(
        init["result"]["serverInfo"]["name"], direct["result"]["serverInfo"]["name"],
        "{init}"
    );
    assert_eq!(
        init["result"]["serverInfo"]["version"],
        direct["result"]["serverInfo"]["version"]
    );
    assert_eq!(
        init["result"]["instructions"],
        direct["result"]["instructions"]
    );
    let m = Client::new(&x.addr, MODERN);
    let d = m.request(json!("d"), "server/discover", json!({}));
    assert_eq!(
        d["result"]["instructions"], direct["result"]["instructions"],
        "{d}"
    );
    assert!(d["result"]["capabilities"]["tools"].is_object(), "{d}");
}

// Issue 24: --allow-tool/--deny-tool are enforced on tools/call, not only hidden.
#[test]
fn filtered_tools_are_absent_and_refused_in_both_eras() {
    let x = Exposed::start(
        &["--deny-tool", "debug_*", "--deny-tool", "echo"],
        &everything(),
        &[],
    );
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&x.addr, era);
        let names = tool_names(&c);
        assert!(
            names.iter().any(|n| n == "test_simple_text"),
            "{era}: {names:?}"
        );
        assert!(
            !names.iter().any(|n| n == "echo" || n.starts_with("debug_")),
            "{era}: {names:?}"
        );
        for denied in ["echo", "debug_sleep", "ECHO", "Echo"] {
            let a = c.call(json!(7), denied, json!({"text": "x", "ms": 1}));
            let refused = a.get("error").is_some() || a["result"]["isError"] == json!(true);
            assert!(refused, "{era}: {denied} was not refused: {a}");
            assert!(
                !a.to_string().contains("\"text\":\"x\""),
                "{era}: {denied} ran: {a}"
            );
        }
        let a = c.call(json!(8), "test_simple_text", json!({}));
        assert!(a.get("result").is_some(), "{era}: {a}");
    }
}

// Issue 24: a child that crashes fails its in-flight calls at once and is restarted.
#[test]
fn a_crashing_child_fails_in_flight_calls_and_is_restarted() {
    let starts = std::env::temp_dir().join(format!("expose-starts-{}", free_port()));
    let _ = std::fs::remove_file(&starts);
    let hangs = std::env::temp_dir().join(format!("expose-hangs-{}", free_port()));
    let _ = std::fs::remove_file(&hangs);
    let starts_s = starts.to_string_lossy().into_owned();
    let hangs_s = hangs.to_string_lossy().into_owned();
    let x = Exposed::start(
        &["--restart-initial-ms", "50", "--restart-max-ms", "200"],
        &fixture(),
        &[("STARTS_FILE", &starts_s), ("HANG_FILE", &hangs_s)],
    );
    let (tx, rx) = mpsc::channel();
    // Two calls the child never answers, from clients of both eras.
    for era in [MODERN, HANDSHAKE] {
        let addr = x.addr.clone();
        let tx = tx.clone();
        std::thread::spawn(move || {
            let c = Client::new(&addr, era);
            tx.send((era, c.call(json!(1), "hang", json!({})))).unwrap();
        });
    }
    // Wait until the child has both calls, then crash it.
    let deadline = std::time::Instant::now() + WAIT;
    while std::fs::read_to_string(&hangs)
        .unwrap_or_default()
        .lines()
        .count()
        < 2
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the hang calls never reached the child"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let c = Client::new(&x.addr, MODERN);
    let crash = c.call(json!(1), "crash", json!({}));
    assert!(crash.get("error").is_some(), "{crash}");
    assert!(
        crash["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("exited"),
        "{crash}"
    );
    for _ in 0..2 {
        let (era, a) = rx
            .recv_timeout(WAIT)
            .expect("an in-flight call hung after the crash");
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("exited"),
            "{era}: {a}"
        );
    }
    let mut err = String::new();
    assert!(x.stderr_until("was restarted", &mut err), "{err}");
    // The restarted child serves calls again.
    let again = c.call(json!(2), "echo", json!({"text": "back"}));
    assert_eq!(text_of(&again), "back", "{again}");
    let n = std::fs::read_to_string(&starts)
        .unwrap_or_default()
        .lines()
        .count();
    assert_eq!(n, 2, "the child should have been started twice");
    let _ = std::fs::remove_file(&starts);
    let _ = std::fs::remove_file(&hangs);
}

// Issue 24: a child that closed its stdin but stays up: a call whose write
// meets the closed pipe fails at once with a clear error (it used to wait
// for --timeout), in both eras, and the bridge keeps answering.
#[test]
fn a_call_written_to_a_closed_stdin_fails_at_once() {
    let x = Exposed::start(&["--timeout", "600"], &fixture(), &[]);
    let c = Client::new(&x.addr, MODERN);
    let a = c.call(json!(1), "close_stdin", json!({}));
    assert_eq!(text_of(&a), "closed", "{a}");
    for era in [MODERN, HANDSHAKE] {
        let addr = x.addr.clone();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let c = Client::new(&addr, era);
            let _ = tx.send(c.call(json!(2), "echo", json!({"text": "lost"})));
        });
        let a = rx
            .recv_timeout(WAIT)
            .expect("a call written to a closed stdin hung");
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("stdin is closed"),
            "{era}: {a}"
        );
    }
}

// Issue 24: a child writing garbage on stdout is reported, not trusted.
#[test]
fn garbage_on_the_childs_stdout_is_reported_and_not_forwarded() {
    let x = Exposed::start(&[], &fixture(), &[]);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&x.addr, era);
        let a = c.call(json!(1), "garbage", json!({"text": "clean"}));
        assert_eq!(text_of(&a), "clean", "{a}");
        assert!(!a.to_string().contains("not JSON-RPC {"), "{a}");
    }
    let mut err = String::new();
    assert!(x.stderr_until("not a JSON-RPC message", &mut err), "{err}");
    assert!(err.contains("this is not JSON-RPC"), "{err}");
}

// Issue 24: resources, templates and prompts cross, in both eras.
#[test]
fn resources_and_prompts_are_served_from_the_child_in_both_eras() {
    let child = direct(
        &everything(),
        &[
            json!({"method": "resources/list", "params": {}}),
            json!({"method": "resources/templates/list", "params": {}}),
            json!({"method": "prompts/list", "params": {}}),
        ],
    );
    let uris = |a: &Value, key: &str, member: &str| -> Vec<String> {
        a["result"][key]
            .as_array()
            .unwrap_or_else(|| panic!("no {key} in {a}"))
            .iter()
            .filter_map(|r| r[member].as_str().map(str::to_owned))
            .collect()
    };
    let resources = uris(&child[1], "resources", "uri");
    let templates = uris(&child[2], "resourceTemplates", "uriTemplate");
    let prompts = uris(&child[3], "prompts", "name");
    assert!(!resources.is_empty() && !templates.is_empty() && !prompts.is_empty());
    // A prompt without required arguments, and the child's own answers.
    let simple = child[3]["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["arguments"]
                .as_array()
                .is_none_or(|a| a.iter().all(|a| a["required"] != json!(true)))
        })
        .and_then(|p| p["name"].as_str())
        .expect("a prompt without required arguments")
        .to_owned();
    let answers = direct(
        &everything(),
        &[
            json!({"method": "resources/read", "params": {"uri": resources[0]}}),
            json!({"method": "prompts/get", "params": {"name": simple}}),
        ],
    );
    let x = Exposed::start(&[], &everything(), &[]);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&x.addr, era);
        let mut got = uris(
            &c.request(json!(1), "resources/list", json!({})),
            "resources",
            "uri",
        );
        let mut want = resources.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{era}");
        let t = c.request(json!(2), "resources/templates/list", json!({}));
        assert_eq!(
            uris(&t, "resourceTemplates", "uriTemplate").len(),
            templates.len(),
            "{era}: {t}"
        );
        let mut got = uris(
            &c.request(json!(3), "prompts/list", json!({})),
            "prompts",
            "name",
        );
        let mut want = prompts.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{era}");
        let r = c.request(json!(4), "resources/read", json!({"uri": resources[0]}));
        assert_eq!(
            r["result"]["contents"], answers[1]["result"]["contents"],
            "{era}: {r}"
        );
        let p = c.request(json!(5), "prompts/get", json!({"name": simple}));
        assert_eq!(
            p["result"]["messages"], answers[2]["result"]["messages"],
            "{era}: {p}"
        );
    }
}

// Issue 24: progress reaches the caller with its own token, in both eras.
#[test]
fn progress_reaches_the_caller_with_its_own_token() {
    let x = Exposed::start(&[], &everything(), &[]);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&x.addr, era);
        let mut params = json!({"name": "test_tool_with_progress", "arguments": {},
            "_meta": {"progressToken": "mine"}});
        if era == MODERN {
            params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
        }
        let (_, _, body) = c.send_raw(
            "tools/call",
            Some("test_tool_with_progress"),
            &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":params}),
        );
        let msgs = messages(&body);
        let progress: Vec<&Value> = msgs
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect();
        assert!(progress.len() >= 3, "{era}: {body}");
        assert!(
            progress
                .iter()
                .all(|m| m["params"]["progressToken"] == "mine"),
            "{era}: {body}"
        );
        assert!(
            msgs.iter()
                .any(|m| m["id"] == 1 && m.get("result").is_some()),
            "{era}: {body}"
        );
    }
}

/// A handshake-era tools/call whose SSE answer is read as it comes: each
/// server→client request on it is answered with `reply(request)` (a POST
/// on the session); returns (the requests seen, the final answer).
fn call_answering(
    c: &Client,
    tool: &str,
    args: Value,
    reply: impl Fn(&Value) -> Value,
) -> (Vec<Value>, Value) {
    c.request_answering(
        json!(1),
        "tools/call",
        json!({"name": tool, "arguments": args}),
        reply,
    )
}

fn elicit_reply(req: &Value) -> Value {
    let msg = req["params"]["message"].as_str().unwrap_or_default();
    json!({"action": "accept", "content": {"response": format!("answer to {msg}")}})
}

// Issue 24: a server→client request reaches the client whose call caused it.
#[test]
fn elicitation_and_sampling_reach_the_calling_client_in_both_eras() {
    let x = Exposed::start(&[], &everything(), &[]);
    let caps = json!({"elicitation": {"form": {}}, "sampling": {}});
    // Handshake era: the request arrives on the call's own SSE stream.
    let h = Client::with_caps(&x.addr, HANDSHAKE, caps.clone());
    let (asked, a) = call_answering(
        &h,
        "test_elicitation",
        json!({"message": "for h"}),
        elicit_reply,
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["method"], "elicitation/create");
    assert_eq!(asked[0]["params"]["message"], "for h");
    assert!(text_of(&a).contains("answer to for h"), "{a}");
    let (asked, a) = call_answering(
        &h,
        "test_sampling",
        json!({"prompt": "p-h"}),
        |_| json!({"role": "assistant", "content": {"type": "text", "text": "sampled for h"}, "model": "m"}),
    );
    assert_eq!(asked[0]["method"], "sampling/createMessage", "{asked:?}");
    assert!(text_of(&a).contains("sampled for h"), "{a}");
    // 2026-07-28: an input_required round, then the retry with the answer.
    let m = Client::with_caps(&x.addr, MODERN, caps);
    let first = m.call(json!(1), "test_elicitation", json!({"message": "for m"}));
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required", "{first}");
    let requests = r["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("{first}"));
    assert_eq!(requests.len(), 1, "{first}");
    let (key, req) = requests.iter().next().unwrap();
    assert_eq!(req["method"], "elicitation/create", "{first}");
    assert_eq!(req["params"]["message"], "for m", "{first}");
    let retry = m.request(
        json!(2),
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "for m"},
            "inputResponses": {key: elicit_reply(req)}, "requestState": r["requestState"]}),
    );
    assert!(text_of(&retry).contains("answer to for m"), "{retry}");
    // A client without the capability is never asked: the child's request
    // is refused and the call fails instead.
    let bare = Client::new(&x.addr, HANDSHAKE);
    let (asked, a) = call_answering(
        &bare,
        "test_elicitation",
        json!({"message": "bare"}),
        elicit_reply,
    );
    assert!(asked.is_empty(), "{asked:?}");
    assert!(
        a.get("error").is_some() || a["result"]["isError"] == json!(true),
        "{a}"
    );
}

// Issue 24: a request of the child's that cannot be attributed to one call
// is refused, never sent to a client that may be the wrong one.
#[test]
fn a_childs_request_during_several_calls_is_refused_not_misrouted() {
    let hangs = std::env::temp_dir().join(format!("expose-hangs-{}", free_port()));
    let _ = std::fs::remove_file(&hangs);
    let hangs_s = hangs.to_string_lossy().into_owned();
    let x = Exposed::start(&["--timeout", "3"], &fixture(), &[("HANG_FILE", &hangs_s)]);
    let caps = json!({"elicitation": {"form": {}}});
    // B's call stays in flight (until the bridge's timeout ends it).
    let b = Client::with_caps(&x.addr, HANDSHAKE, caps.clone());
    let b_thread = std::thread::spawn(move || {
        call_answering(&b, "hang", json!({}), |_| json!({"action": "decline"}))
    });
    let deadline = std::time::Instant::now() + WAIT;
    while std::fs::read_to_string(&hangs)
        .unwrap_or_default()
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "B's call never reached the child"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // A's call makes the child ask while two calls are in flight.
    let a = Client::with_caps(&x.addr, HANDSHAKE, caps);
    let (asked, answer) = call_answering(&a, "ask", json!({"text": "for a"}), elicit_reply);
    assert!(asked.is_empty(), "{asked:?}");
    assert!(text_of(&answer).starts_with("refused: "), "{answer}");
    let (b_asked, b_answer) = b_thread.join().unwrap();
    assert!(b_asked.is_empty(), "B was asked A's question: {b_asked:?}");
    assert!(b_answer.get("error").is_some(), "{b_answer}");
    let mut err = String::new();
    assert!(x.stderr_until("calls are in flight", &mut err), "{err}");
    // With A's call alone in flight the same request reaches A.
    let (asked, answer) = call_answering(&a, "ask", json!({"text": "for a"}), elicit_reply);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["params"]["message"], "for a");
    assert!(text_of(&answer).contains("answer to for a"), "{answer}");
    let _ = std::fs::remove_file(&hangs);
}

// Issue 24: --child-per-session gives each handshake session its own child.
#[test]
fn child_per_session_gives_each_handshake_session_its_own_child() {
    let starts = std::env::temp_dir().join(format!("expose-starts-{}", free_port()));
    let _ = std::fs::remove_file(&starts);
    let starts_s = starts.to_string_lossy().into_owned();
    let x = Exposed::start(
        &["--child-per-session"],
        &fixture(),
        &[("STARTS_FILE", &starts_s)],
    );
    let pid = |c: &Client, id: i64| text_of(&c.call(json!(id), "pid", json!({})));
    let a = Client::new(&x.addr, HANDSHAKE);
    let b = Client::new(&x.addr, HANDSHAKE);
    let m = Client::new(&x.addr, MODERN);
    let (a1, b1, m1) = (pid(&a, 1), pid(&b, 1), pid(&m, 1));
    // Each session keeps its child; sessions never share one.
    assert_eq!(pid(&a, 2), a1);
    assert_eq!(pid(&b, 2), b1);
    assert_ne!(a1, b1);
    // Requests without a session go to the shared child.
    assert_ne!(m1, a1);
    assert_ne!(m1, b1);
    assert_eq!(pid(&m, 2), m1);
    let n = std::fs::read_to_string(&starts)
        .unwrap_or_default()
        .lines()
        .count();
    assert_eq!(n, 3, "the shared child and one per session");
    let _ = std::fs::remove_file(&starts);
}

/// Polls `tools/list`-like `method` until `name` is (or is not) listed.
fn until_listed(c: &Client, method: &str, key: &str, name: &str, present: bool) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let a = c.request(json!("l"), method, json!({}));
        let listed = a["result"][key]
            .as_array()
            .is_some_and(|v| v.iter().any(|t| t["name"] == name));
        if listed == present {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} listed: {listed}; {a}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

// Issue 24: the child's list changes reach the clients (tools and prompts).
#[test]
fn tool_and_prompt_list_changes_of_the_child_reach_clients() {
    let x = Exposed::start(&[], &everything(), &[]);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&x.addr, era);
        let present = tool_names(&c).iter().any(|n| n == "dynamic_tool");
        c.call(json!(1), "test_trigger_tool_change", json!({}));
        until_listed(&c, "tools/list", "tools", "dynamic_tool", !present);
        let a = c.request(json!(2), "prompts/list", json!({}));
        let present = a.to_string().contains("dynamic_prompt");
        c.call(json!(3), "test_trigger_prompt_change", json!({}));
        until_listed(&c, "prompts/list", "prompts", "dynamic_prompt", !present);
    }
}

// Issue 24: a notification tied to no request reaches the clients subscribed to it.
#[test]
fn resource_updates_reach_subscribed_clients() {
    use std::io::BufRead;
    let x = Exposed::start(&[], &fixture(), &[]);
    let c = Client::new(&x.addr, HANDSHAKE);
    let sub = c.request(json!(1), "resources/subscribe", json!({"uri": "test://r"}));
    assert!(sub.get("result").is_some(), "{sub}");
    // The session's GET stream carries notifications tied to no request.
    let mut s = TcpStream::connect(&x.addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: {HANDSHAKE}\r\nMcp-Session-Id: {}\r\n\r\n",
        x.addr,
        c.session.as_deref().unwrap_or_default()
    )
    .unwrap();
    let mut lines = std::io::BufReader::new(s).lines();
    // Wait for the stream's headers before making the update happen.
    let status = lines.next().unwrap().unwrap();
    assert!(status.contains(" 200"), "{status}");
    let other = Client::new(&x.addr, MODERN);
    let t = other.call(json!(1), "touch", json!({}));
    assert!(t.get("result").is_some(), "{t}");
    loop {
        let line = lines
            .next()
            .expect("the GET stream ended")
            .expect("no update (hang?)");
        let Some(m) = line
            .strip_prefix("data:")
            .and_then(|d| serde_json::from_str::<Value>(d.trim()).ok())
        else {
            continue;
        };
        if m["method"] == "notifications/resources/updated" {
            assert_eq!(m["params"]["uri"], "test://r", "{m}");
            break;
        }
    }
}

// Issue 24: era translation, a handshake client in front of a child that
// only speaks 2026-07-28 (and a modern client in front of the same child).
#[test]
fn both_eras_work_in_front_of_a_modern_only_child() {
    let modern_child = vec![
        "python3".to_owned(),
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/expose_modern_child.py"
        )
        .to_owned(),
    ];
    let x = Exposed::start(&[], &modern_child, &[]);
    let caps = json!({"elicitation": {"form": {}}});
    let h = Client::with_caps(&x.addr, HANDSHAKE, caps.clone());
    let init = h.init.clone().unwrap();
    assert_eq!(
        init["result"]["serverInfo"]["name"], "modern-child",
        "{init}"
    );
    assert_eq!(
        init["result"]["instructions"], "a modern-only child",
        "{init}"
    );
    let a = h.call(json!(1), "echo", json!({"text": "from h"}));
    assert_eq!(text_of(&a), "from h", "{a}");
    // The child's input_required round becomes a pushed elicitation.
    let (asked, a) = call_answering(&h, "ask", json!({"text": "q-h"}), elicit_reply);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["params"]["message"], "q-h");
    assert!(text_of(&a).contains("answer to q-h"), "{a}");
    // A modern client gets the round as input_required and retries.
    let m = Client::with_caps(&x.addr, MODERN, caps);
    let first = m.call(json!(1), "ask", json!({"text": "q-m"}));
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required", "{first}");
    let req = &r["inputRequests"]["k"];
    assert_eq!(req["params"]["message"], "q-m", "{first}");
    let retry = m.request(
        json!(2),
        "tools/call",
        json!({"name": "ask", "arguments": {"text": "q-m"},
            "inputResponses": {"k": elicit_reply(req)}, "requestState": r["requestState"]}),
    );
    assert!(text_of(&retry).contains("answer to q-m"), "{retry}");
}

// Issue 24: a child is reported, not trusted: tools the bridge cannot
// serve are left out instead of stopping it.
#[test]
fn tools_the_bridge_cannot_serve_are_reported_and_left_out() {
    let x = Exposed::start(&[], &fixture(), &[("BAD_TOOL", "1")]);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&x.addr, era);
        let names = tool_names(&c);
        assert!(!names.iter().any(|n| n == "bad"), "{era}: {names:?}");
        let a = c.call(json!(1), "echo", json!({"text": "still here"}));
        assert_eq!(text_of(&a), "still here", "{a}");
    }
    let mut err = String::new();
    assert!(
        x.stderr_until("\"bad\" cannot be served", &mut err),
        "{err}"
    );
    assert!(x.stderr_until("malformed", &mut err), "{err}");
}

// Issue 24: completion crosses, in both eras.
#[test]
fn completion_is_answered_by_the_child_in_both_eras() {
    let params = json!({"ref": {"type": "ref/resource", "uri": "test://{id}"},
        "argument": {"name": "resourceUri", "value": "test://static-t"}});
    let direct = direct(
        &everything(),
        &[json!({"method": "completion/complete", "params": params})],
    );
    let want = &direct[1]["result"]["completion"]["values"];
    assert!(want.as_array().is_some_and(|v| !v.is_empty()), "{direct:?}");
    let x = Exposed::start(&[], &everything(), &[]);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&x.addr, era);
        let a = c.request(json!(1), "completion/complete", params.clone());
        assert_eq!(&a["result"]["completion"]["values"], want, "{era}: {a}");
    }
}

/// A raw POST with the given Host and Origin; the status.
fn status_with(addr: &str, host: &str, origin: Option<&str>) -> u16 {
    let body = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": HANDSHAKE, "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    raw.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

// Issue 24: Origin/Host protection is on by default (the server crate's gate).
#[test]
fn host_and_origin_protection_is_on_by_default() {
    let x = Exposed::start(&[], &fixture(), &[]);
    assert_eq!(status_with(&x.addr, &x.addr, None), 200);
    assert_eq!(status_with(&x.addr, "evil.example", None), 421);
    assert_eq!(
        status_with(&x.addr, &x.addr, Some("https://evil.example")),
        403
    );
    let y = Exposed::start(
        &[
            "--allow-host",
            "mcp.example",
            "--allow-origin",
            "https://app.example",
        ],
        &fixture(),
        &[],
    );
    assert_eq!(
        status_with(&y.addr, "mcp.example", Some("https://app.example")),
        200
    );
    assert_eq!(status_with(&y.addr, "evil.example", None), 421);
}

/// A test authorization server (`ferromcp-test-issuer`) on its own runtime.
struct Issuer {
    _rt: tokio::runtime::Runtime,
    authz: std::sync::Arc<ferromcp_test_issuer::AuthServer>,
}

impl Issuer {
    fn start() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let authz = rt.block_on(ferromcp_test_issuer::AuthServer::start());
        Self { _rt: rt, authz }
    }
}

/// `tools/call echo` in `era` with `token` as bearer (none: no header);
/// (status, headers, body). A handshake-era call initializes first.
fn call_with_token(
    addr: &str,
    era: &'static str,
    token: Option<&str>,
) -> (u16, Vec<(String, String)>, String) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let auth: Vec<(&str, &str)> = bearer
        .iter()
        .map(|b| ("Authorization", b.as_str()))
        .collect();
    if era == HANDSHAKE {
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": HANDSHAKE, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        let (status, headers, body) = common::raw::post(addr, &auth, &init);
        if status != 200 {
            return (status, headers, body);
        }
        let c = Client::with_headers(addr, era, json!({}), &auth);
        let a = c.request(
            json!(2),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        );
        return (200, headers, a.to_string());
    }
    let c = Client::with_headers(addr, era, json!({}), &auth);
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name": "echo", "arguments": {"text": "hi"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    c.send_raw("tools/call", Some("echo"), &body)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A GET of `path` on `addr`; (status, body).
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    let body = if raw
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        common::raw::dechunk(&body)
    } else {
        body
    };
    (status, body)
}

// Issue 24 (--expose bearer protection), AUTH-05: no token is a 401 with
// WWW-Authenticate pointing at the Protected Resource Metadata, which is
// served; a token for this resource works in both eras; a token for
// another resource, or without the required scope, is refused; the token
// never reaches the child (not in what it reads, its environment or its
// arguments).
#[test]
fn bearer_protection_guards_the_exposed_endpoint() {
    let issuer = Issuer::start();
    let seen = std::env::temp_dir().join(format!("expose-seen-{}", free_port()));
    let _ = std::fs::remove_file(&seen);
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(MCP)
        .args([
            "bridge",
            "--expose",
            &addr,
            "--auth-issuer",
            &issuer.authz.url,
        ])
        .args(["--auth-allow-http", "--auth-scope", "mcp", "--"])
        .args(fixture())
        .env("SEEN_FILE", &seen)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_listening(&addr);
    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _guard = Kill(child);

    for era in [HANDSHAKE, MODERN] {
        let (status, headers, body) = call_with_token(&addr, era, None);
        assert_eq!(status, 401, "{era}: {body}");
        let challenge = header(&headers, "www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer"), "{era}: {headers:?}");
        assert!(
            challenge.contains("resource_metadata=\"http://127.0.0.1:"),
            "{era}: {challenge}"
        );
    }
    let (status, prm) = get(&addr, "/.well-known/oauth-protected-resource/mcp");
    assert_eq!(status, 200, "{prm}");
    let prm: Value = serde_json::from_str(&prm).unwrap();
    assert_eq!(prm["resource"], json!(resource));
    assert_eq!(prm["authorization_servers"], json!([issuer.authz.url]));

    let good = issuer.authz.mint(&resource, "mcp");
    let elsewhere = issuer.authz.mint("http://127.0.0.1:1/mcp", "mcp");
    let no_scope = issuer.authz.mint(&resource, "other");
    for era in [HANDSHAKE, MODERN] {
        let (status, _, body) = call_with_token(&addr, era, Some(&good));
        assert_eq!(status, 200, "{era}: {body}");
        assert_eq!(text_of(&answer_of(&body)), "hi", "{era}: {body}");
        let (status, headers, body) = call_with_token(&addr, era, Some(&elsewhere));
        assert_eq!(status, 401, "{era}: another resource's token: {body}");
        assert!(header(&headers, "www-authenticate").is_some(), "{era}");
        let (status, headers, body) = call_with_token(&addr, era, Some(&no_scope));
        assert_eq!(status, 403, "{era}: no scope: {body}");
        let challenge = header(&headers, "www-authenticate").unwrap_or_default();
        assert!(
            challenge.contains("insufficient_scope"),
            "{era}: {challenge}"
        );
    }
    let seen = std::fs::read_to_string(&seen).unwrap();
    assert!(seen.contains("\"echo\""), "the child saw no call: {seen}");
    for t in [&good, &elsewhere, &no_scope] {
        // The JWT's signature part alone must not appear either.
        let sig = t.rsplit('.').next().unwrap();
        assert!(!seen.contains(sig), "a token reached the child: {seen}");
    }
    // Nor the header by name in anything the child read (its first line is
    // its environment and arguments).
    let read: String = seen.lines().skip(1).collect();
    assert!(
        !read.to_ascii_lowercase().contains("authorization"),
        "{read}"
    );
}

/// The answer in a body that is either the JSON-RPC answer or an SSE body.
fn answer_of(body: &str) -> Value {
    messages(body)
        .into_iter()
        .find(|m| m.get("id").is_some() && m.get("method").is_none())
        .unwrap_or_else(|| panic!("no answer in {body}"))
}

// Issue 24: --auth-issuer only protects --expose; with a remote URL it is
// a usage error, not silently ignored.
#[test]
fn auth_issuer_without_expose_is_a_usage_error() {
    let out = Command::new(MCP)
        .args([
            "bridge",
            "http://127.0.0.1:1/mcp",
            "--auth-issuer",
            "https://as.example",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--auth-issuer protects the --expose endpoint"),
        "{err}"
    );
}

/// The TypeScript SDK's everything server installed by
/// scripts/ts-everything-peer.sh (`node ENTRY stdio`), or `None` after a
/// loud message when it is not installed; panics instead when `CI` is set.
fn ts_everything() -> Option<Vec<String>> {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("MCP_TS_EVERYTHING_PEER_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target/ts-everything-peer"));
    let entry = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if entry.is_file() {
        return Some(vec![
            "node".into(),
            entry.to_string_lossy().into_owned(),
            "stdio".into(),
        ]);
    }
    let msg = format!(
        "the TypeScript everything server is not installed in {}: run `bash scripts/ts-everything-peer.sh`",
        dir.display()
    );
    common::peer_missing(&msg, "CI must run the third-party --expose test");
    None
}

// Issue 24: a stdio child nobody here wrote (npm
// @modelcontextprotocol/server-everything, handshake era only) behind
// --expose, driven by a 2026-07-28 client and a handshake client: the tool
// list, echo and get-sum calls, a resource read, a prompt, and the
// long-running operation's progress reaching the caller with its token.
#[test]
fn a_typescript_sdk_child_serves_both_eras_behind_expose() {
    let Some(cmd) = ts_everything() else { return };
    let x = Exposed::start(&[], &cmd, &[]);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&x.addr, era);
        let names = tool_names(&c);
        for want in ["echo", "get-sum", "trigger-long-running-operation"] {
            assert!(names.iter().any(|n| n == want), "{era}: {names:?}");
        }
        let a = c.request(
            json!(1),
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "over the bridge"}}),
        );
        assert!(text_of(&a).contains("over the bridge"), "{era}: {a}");
        let a = c.request(
            json!(2),
            "tools/call",
            json!({"name": "get-sum", "arguments": {"a": 19, "b": 23}}),
        );
        assert!(text_of(&a).contains("42"), "{era}: {a}");
        let uri = "demo://resource/static/document/architecture.md";
        let a = c.request(json!(3), "resources/read", json!({"uri": uri}));
        let contents = &a["result"]["contents"][0];
        assert_eq!(contents["uri"], json!(uri), "{era}: {a}");
        assert!(
            contents["text"].as_str().is_some_and(|t| !t.is_empty()),
            "{era}: {a}"
        );
        let a = c.request(
            json!(4),
            "prompts/get",
            json!({"name": "args-prompt", "arguments": {"city": "Lyon"}}),
        );
        assert!(
            a["result"]["messages"].to_string().contains("Lyon"),
            "{era}: {a}"
        );
        let mut params = json!({"name": "trigger-long-running-operation",
            "arguments": {"duration": 1, "steps": 3},
            "_meta": {"progressToken": "ts-mine"}});
        if era == MODERN {
            params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
        }
        let (_, _, body) = c.send_raw(
            "tools/call",
            Some("trigger-long-running-operation"),
            &json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":params}),
        );
        let msgs = messages(&body);
        let progress: Vec<&Value> = msgs
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 3, "{era}: {body}");
        assert!(
            progress
                .iter()
                .all(|m| m["params"]["progressToken"] == "ts-mine"),
            "{era}: {body}"
        );
        assert!(
            msgs.iter()
                .any(|m| m["id"] == 5 && m.get("result").is_some()),
            "{era}: {body}"
        );
    }
}
