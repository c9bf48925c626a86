//! `mcp bridge URL` at the wire: the test is the host on the bridge's
//! stdin/stdout, `mcp serve --http` (the everything-server) or a tiny raw
//! HTTP server is the remote, in both eras.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{HttpServer, MCP, free_port};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Long enough to never fire on a slow CI machine; only guards against a hang.
const WAIT: Duration = Duration::from_secs(30);

/// The host side: the bridge as a child process.
struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Value>,
    stderr: mpsc::Receiver<String>,
}

impl Host {
    fn start(url: &str, extra: &[&str]) -> Self {
        Self::start_env(url, extra, &[])
    }

    fn start_env(url: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(MCP)
            .arg("bridge")
            .arg(url)
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp bridge");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Every line on stdout must be one JSON-RPC message.
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on the bridge's stdout ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let (etx, stderr) = mpsc::channel();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            let _ = etx.send(s);
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            rx,
            stderr,
        }
    }

    fn send(&mut self, v: Value) {
        self.send_raw(&v.to_string());
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn recv(&self) -> Value {
        self.rx
            .recv_timeout(WAIT)
            .expect("the bridge sent nothing (hang?)")
    }

    /// Messages until the answer for `id`; returns (others, answer).
    fn answer_for(&self, id: &Value) -> (Vec<Value>, Value) {
        let mut others = Vec::new();
        loop {
            let Ok(m) = self.rx.recv_timeout(WAIT) else {
                panic!("no answer for {id} (hang?); got {others:?}");
            };
            if m.get("id") == Some(id) && m.get("method").is_none() {
                return (others, m);
            }
            others.push(m);
        }
    }

    /// Sends a request and waits for its answer.
    fn call(&mut self, v: Value) -> Value {
        let id = v["id"].clone();
        self.send(v);
        self.answer_for(&id).1
    }

    /// Closes stdin and waits for the bridge to exit; (code, stderr).
    fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        let err = self.stderr.recv_timeout(WAIT).unwrap_or_default();
        (status.code(), err)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The 2026-07-28 `_meta` envelope.
fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bridge-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "sampling": {}}
    })
}

/// A request in the given era (`modern` adds the envelope to params).
fn req(era: &str, id: Value, method: &str, mut params: Value) -> Value {
    if era == "modern" {
        params["_meta"] = match params.get("_meta") {
            Some(Value::Object(m)) => {
                let mut e = envelope();
                for (k, v) in m {
                    e[k] = v.clone();
                }
                e
            }
            _ => envelope(),
        };
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Opens the host's session: `initialize` + `notifications/initialized`
/// (handshake); nothing to do in 2026-07-28.
fn open(host: &mut Host, era: &str) {
    if era == "handshake" {
        let init = host.call(json!({
            "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}, "sampling": {}, "roots": {}},
                "clientInfo": {"name": "bridge-test", "version": "1"}
            }
        }));
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        host.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
}

fn text_of(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {answer}"))
        .to_owned()
}

fn tool_names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

const ERAS: [&str; 2] = ["handshake", "modern"];

#[test]
fn tools_progress_and_unknown_methods_cross_in_both_eras() {
    for era in ERAS {
        let server = HttpServer::start(&[]);
        let mut host = Host::start(&server.url, &[]);
        open(&mut host, era);

        let list = host.call(req(era, json!(1), "tools/list", json!({})));
        assert!(
            tool_names(&list).contains(&"echo".to_owned()),
            "{era}: {list}"
        );

        let echo = host.call(req(
            era,
            json!(2),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "over the bridge"}}),
        ));
        assert_eq!(text_of(&echo), "over the bridge", "{era}");

        // Progress notifications keep the host's token and arrive before
        // the answer.
        host.send(req(
            era,
            json!("p"),
            "tools/call",
            json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "tok-7"}}),
        ));
        let (before, done) = host.answer_for(&json!("p"));
        let progress: Vec<&Value> = before
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 3, "{era}: {before:?}");
        assert!(
            progress
                .iter()
                .all(|p| p["params"]["progressToken"] == "tok-7")
        );
        assert!(done.get("result").is_some(), "{era}: {done}");

        // An unknown (extension) method reaches the remote untouched and its
        // own -32601 comes back under the host's id.
        let unknown = host.call(req(
            era,
            json!("x-1"),
            "vendor/made-up",
            json!({"k": [1, 2]}),
        ));
        assert_eq!(unknown["id"], "x-1");
        assert_eq!(unknown["error"]["code"], -32601, "{era}: {unknown}");
        assert!(
            unknown["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("vendor/made-up"),
            "{era}: {unknown}"
        );

        // Resources and prompts cross as well.
        let res = host.call(req(era, json!(3), "resources/list", json!({})));
        assert!(res["result"]["resources"].is_array(), "{era}: {res}");
        let prompts = host.call(req(era, json!(4), "prompts/list", json!({})));
        assert!(prompts["result"]["prompts"].is_array(), "{era}: {prompts}");

        let (code, err) = host.finish();
        assert_eq!(code, Some(0), "{era}: {err}");
    }
}

#[test]
fn colliding_host_ids_string_and_number_are_kept_apart() {
    for era in ERAS {
        let server = HttpServer::start(&[]);
        let mut host = Host::start(&server.url, &[]);
        open(&mut host, era);
        // "1" is still in flight when 1 is sent and answered.
        host.send(req(
            era,
            json!("1"),
            "tools/call",
            json!({"name": "debug_sleep", "arguments": {"ms": 300}}),
        ));
        host.send(req(
            era,
            json!(1),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "number one"}}),
        ));
        let mut answers = Vec::new();
        while answers.len() < 2 {
            let m = host.recv();
            if m.get("method").is_none() {
                answers.push(m);
            }
        }
        let by_string = answers.iter().find(|a| a["id"] == json!("1")).unwrap();
        let by_number = answers.iter().find(|a| a["id"] == json!(1)).unwrap();
        assert_eq!(text_of(by_string), "slept", "{era}");
        assert_eq!(text_of(by_number), "number one", "{era}");
    }
}

#[test]
fn handshake_server_requests_cross_with_remapped_ids() {
    let server = HttpServer::start(&[]);
    let mut host = Host::start(&server.url, &[]);
    open(&mut host, "handshake");

    // Elicitation: the remote's request reaches the host, the host's
    // answer reaches the remote, the tool's result comes back.
    host.send(req(
        "handshake",
        json!(10),
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "Your colour?"}}),
    ));
    let ask = loop {
        let m = host.recv();
        if m["method"] == "elicitation/create" {
            break m;
        }
        assert!(
            m.get("id") != Some(&json!(10)),
            "answered without asking: {m}"
        );
    };
    assert_eq!(ask["params"]["message"], "Your colour?");
    host.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"response": "teal"}}}));
    let (_, done) = host.answer_for(&json!(10));
    assert!(text_of(&done).contains("teal"), "{done}");

    // Sampling, same way.
    host.send(req(
        "handshake",
        json!(11),
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "Say hi"}}),
    ));
    let ask = loop {
        let m = host.recv();
        if m["method"] == "sampling/createMessage" {
            break m;
        }
    };
    host.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "hi from the host"}, "model": "test"
    }}));
    let (_, done) = host.answer_for(&json!(11));
    assert_eq!(text_of(&done), "LLM response: hi from the host", "{done}");
}

#[test]
fn modern_input_required_round_trip_crosses_untouched() {
    let server = HttpServer::start(&[]);
    let mut host = Host::start(&server.url, &[]);
    let first = host.call(req(
        "modern",
        json!(1),
        "tools/call",
        json!({"name": "test_input_required_result_elicitation", "arguments": {}}),
    ));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].clone();
    let second = host.call(req(
        "modern",
        json!(2),
        "tools/call",
        json!({
            "name": "test_input_required_result_elicitation",
            "arguments": {},
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
            "requestState": state
        }),
    ));
    assert_eq!(second["result"]["resultType"], "complete", "{second}");
    assert!(text_of(&second).contains("Ada"), "{second}");
}

#[test]
fn modern_x_mcp_header_params_are_sent_after_tools_list() {
    let server = HttpServer::start(&[]);
    let mut host = Host::start(&server.url, &[]);
    // HDR-15: the bridge learns the annotation from the tools/list answer
    // and sends Mcp-Param-Region, which the remote checks.
    let list = host.call(req("modern", json!(1), "tools/list", json!({})));
    assert!(tool_names(&list).contains(&"test_x_mcp_header".to_owned()));
    let call = host.call(req(
        "modern",
        json!(2),
        "tools/call",
        json!({"name": "test_x_mcp_header", "arguments": {"region": "eu-west"}}),
    ));
    assert_eq!(text_of(&call), "region=eu-west", "{call}");
}

/// Polls `debug_cancellations` until it reports `want` (bounded).
fn wait_cancellations(host: &mut Host, era: &str, want: &str) {
    for i in 0..100 {
        let a = host.call(req(
            era,
            json!(format!("count-{i}")),
            "tools/call",
            json!({"name": "debug_cancellations", "arguments": {}}),
        ));
        if text_of(&a) == want {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{era}: the remote never counted {want} cancellations");
}

#[test]
fn cancellation_reaches_the_remote_and_no_answer_follows() {
    for era in ERAS {
        let server = HttpServer::start(&[]);
        let mut host = Host::start(&server.url, &[]);
        open(&mut host, era);
        host.send(req(
            era,
            json!("long"),
            "tools/call",
            json!({"name": "debug_sleep", "arguments": {"ms": 600000}, "_meta": {"progressToken": 1}}),
        ));
        // Wait until it runs (its first progress notification).
        loop {
            let m = host.recv();
            if m["method"] == "notifications/progress" {
                break;
            }
        }
        host.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "long", "reason": "test"}}));
        wait_cancellations(&mut host, era, "1");
        // The cancelled request gets no answer; the bridge exits cleanly.
        host.send(req(era, json!("last"), "ping", json!({})));
        let (others, _) = host.answer_for(&json!("last"));
        assert!(
            others.iter().all(|m| m.get("id") != Some(&json!("long"))),
            "{era}: {others:?}"
        );
        let (code, err) = host.finish();
        assert_eq!(code, Some(0), "{era}: {err}");
    }
}

#[test]
fn deny_list_is_enforced_on_direct_calls_invented_names_and_case_variants() {
    for era in ERAS {
        let server = HttpServer::start(&[]);
        let mut host = Host::start(
            &server.url,
            &["--deny-tool", "echo", "--deny-tool", "test_trigger_*"],
        );
        open(&mut host, era);
        let names = tool_names(&host.call(req(era, json!(1), "tools/list", json!({}))));
        assert!(!names.contains(&"echo".to_owned()), "{era}: {names:?}");
        assert!(
            !names.iter().any(|n| n.starts_with("test_trigger_")),
            "{era}: {names:?}"
        );
        assert!(
            names.contains(&"test_simple_text".to_owned()),
            "{era}: {names:?}"
        );

        // A direct call to a denied tool is refused by the bridge.
        let refused = host.call(req(
            era,
            json!(2),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "leak"}}),
        ));
        assert_eq!(refused["error"]["code"], -32602, "{era}: {refused}");
        assert!(!refused.to_string().contains("leak"), "{era}: {refused}");

        // Never forwarded: had the remote run it, dynamic_tool would now be
        // listed.
        let refused = host.call(req(
            era,
            json!(3),
            "tools/call",
            json!({"name": "test_trigger_tool_change", "arguments": {}}),
        ));
        assert!(refused.get("error").is_some(), "{era}: {refused}");
        let names = tool_names(&host.call(req(era, json!(4), "tools/list", json!({}))));
        assert!(
            !names.contains(&"dynamic_tool".to_owned()),
            "{era}: {names:?}"
        );

        // Case variants, near misses and invented names never run the
        // denied tool (case variants are refused by the bridge, see
        // a_lenient_remote_never_sees_a_call_hidden_behind_duplicate_keys).
        for (i, name) in ["Echo", "ECHO", "echo ", "no_such_tool"].iter().enumerate() {
            let a = host.call(req(
                era,
                json!(10 + i),
                "tools/call",
                json!({"name": name, "arguments": {"text": "leak"}}),
            ));
            let ran = a["result"]["content"][0]["text"] == "leak";
            assert!(!ran, "{era}: {name:?} ran the denied tool: {a}");
            let refused = a.get("error").is_some() || a["result"]["isError"] == true;
            assert!(refused, "{era}: {name:?}: {a}");
        }
    }
}

#[test]
fn allow_list_lists_and_calls_only_matching_tools() {
    for era in ERAS {
        let server = HttpServer::start(&[]);
        let mut host = Host::start(
            &server.url,
            &["--allow-tool", "echo", "--allow-tool", "test_simple_*"],
        );
        open(&mut host, era);
        let mut names = tool_names(&host.call(req(era, json!(1), "tools/list", json!({}))));
        names.sort();
        assert_eq!(names, ["echo", "test_simple_text"], "{era}");
        let ok = host.call(req(
            era,
            json!(2),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "allowed"}}),
        ));
        assert_eq!(text_of(&ok), "allowed", "{era}");
        let refused = host.call(req(
            era,
            json!(3),
            "tools/call",
            json!({"name": "debug_sleep", "arguments": {"ms": 1}}),
        ));
        assert_eq!(refused["error"]["code"], -32602, "{era}: {refused}");
    }
}

#[test]
fn a_remote_that_dies_mid_call_fails_the_in_flight_request() {
    for era in ERAS {
        let server = HttpServer::start(&[]);
        let mut host = Host::start(&server.url, &[]);
        open(&mut host, era);
        host.send(req(
            era,
            json!("doomed"),
            "tools/call",
            json!({"name": "debug_sleep", "arguments": {"ms": 600000}, "_meta": {"progressToken": "d"}}),
        ));
        loop {
            let m = host.recv();
            if m["method"] == "notifications/progress" {
                break;
            }
        }
        drop(server);
        let (_, answer) = host.answer_for(&json!("doomed"));
        assert!(answer.get("error").is_some(), "{era}: {answer}");
        // The bridge keeps serving: a later request gets an answer too.
        let later = host.call(req(era, json!("after"), "ping", json!({})));
        assert!(later.get("error").is_some(), "{era}: {later}");
    }
}

/// A raw HTTP remote: records each request (head and body) and answers it
/// with a JSON-RPC result for the request's id (or, with `die`, closes the
/// connection without answering).
fn raw_remote(die: bool) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0u8; len];
            let _ = reader.read_exact(&mut body);
            head.push_str("\r\n");
            head.push_str(&String::from_utf8_lossy(&body));
            let _ = tx.send(head);
            if die {
                drop(stream);
                continue;
            }
            let id = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .unwrap_or(Value::Null);
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "content": []}}).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (url, rx)
}

#[test]
fn configured_headers_reach_the_remote_and_no_other_credentials_are_sent() {
    let (url, heads) = raw_remote(false);
    let mut host = Host::start_env(
        &url,
        &[
            "--header",
            "X-Api-Key: key-${BRIDGE_TEST_KEY}",
            "-H",
            "X-Team:blue",
        ],
        &[
            ("BRIDGE_TEST_KEY", "s3cr3t"),
            ("MCP_TOKEN", "not-configured"),
        ],
    );
    let a = host.call(req(
        "modern",
        json!(7),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    ));
    assert_eq!(a["id"], 7, "{a}");
    // The bridge's era probe comes first; it carries the headers too.
    let probe = heads.recv_timeout(WAIT).unwrap().to_ascii_lowercase();
    assert!(probe.contains("mcp-method: server/discover\r\n"), "{probe}");
    assert!(probe.contains("x-api-key: key-s3cr3t\r\n"), "{probe}");
    assert!(!probe.contains("authorization"), "{probe}");
    let head = heads.recv_timeout(WAIT).unwrap().to_ascii_lowercase();
    assert!(head.contains("x-api-key: key-s3cr3t\r\n"), "{head}");
    assert!(head.contains("x-team: blue\r\n"), "{head}");
    assert!(head.contains("mcp-method: tools/call\r\n"), "{head}");
    assert!(head.contains("mcp-name: echo\r\n"), "{head}");
    assert!(
        head.contains("mcp-protocol-version: 2026-07-28\r\n"),
        "{head}"
    );
    // A token the bridge was not configured to send is never sent.
    assert!(!head.contains("authorization"), "{head}");
    assert!(!head.contains("not-configured"), "{head}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0));
    // Header values never reach the logs.
    assert!(!err.contains("s3cr3t"), "{err}");
}

#[test]
fn a_missing_header_variable_is_a_start_up_error_naming_it() {
    let out = Command::new(MCP)
        .args([
            "bridge",
            &format!("http://127.0.0.1:{}/mcp", free_port()),
            "--header",
            "Authorization: Bearer ${BRIDGE_TEST_UNSET_VAR}",
        ])
        .env_remove("BRIDGE_TEST_UNSET_VAR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "stdout is the host's wire");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("BRIDGE_TEST_UNSET_VAR"), "{err}");
}

#[test]
fn a_connection_closed_without_an_answer_fails_the_request() {
    let (url, heads) = raw_remote(true);
    let mut host = Host::start(&url, &[]);
    let a = host.call(req("modern", json!("cut"), "tools/list", json!({})));
    assert!(a.get("error").is_some(), "{a}");
    assert!(heads.recv_timeout(WAIT).is_ok());
}

#[test]
fn malformed_host_input_gets_json_rpc_errors() {
    let (url, _heads) = raw_remote(false);
    let mut host = Host::start(&url, &[]);
    host.send_raw("{not json");
    let a = host.recv();
    assert_eq!(a["error"]["code"], -32700, "{a}");
    assert_eq!(a["id"], Value::Null);
    host.send_raw(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
    let a = host.recv();
    assert_eq!(a["error"]["code"], -32600, "{a}");
    host.send_raw(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#);
    let a = host.recv();
    assert_eq!(a["error"]["code"], -32600, "{a}");
    // The bridge still works afterwards.
    let a = host.call(req("modern", json!(9), "ping", json!({})));
    assert_eq!(a["id"], 9, "{a}");
}

#[test]
fn the_deny_list_cannot_be_bypassed_with_duplicate_keys_or_escapes() {
    for era in ERAS {
        let server = HttpServer::start(&[]);
        let mut host = Host::start(&server.url, &["--deny-tool", "test_trigger_tool_change"]);
        open(&mut host, era);
        let meta = if era == "modern" {
            format!(",\"_meta\":{}", envelope())
        } else {
            String::new()
        };
        // A duplicate `name` (JSON parsers disagree on which one counts), a
        // duplicate `params`, and a name spelled with a unicode escape.
        let attempts = [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","name":"test_trigger_tool_change","arguments":{{}}{meta}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"echo"}},"params":{{"name":"test_trigger_tool_change","arguments":{{}}{meta}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"test_trigger_tool_\u0063hange","arguments":{{}}{meta}}}}}"#
            ),
        ];
        for (i, line) in attempts.iter().enumerate() {
            host.send_raw(line);
            let (_, a) = host.answer_for(&json!(i + 1));
            assert!(a.get("error").is_some(), "{era}: attempt {i}: {a}");
        }
        // Had any reached the remote, dynamic_tool would now be listed.
        let names = tool_names(&host.call(req(era, json!(9), "tools/list", json!({}))));
        assert!(
            !names.contains(&"dynamic_tool".to_owned()),
            "{era}: {names:?}"
        );
    }
}

#[test]
fn a_lenient_remote_never_sees_a_call_hidden_behind_duplicate_keys() {
    // The everything-server refuses duplicate keys itself; a lenient remote
    // (last key wins) would run the denied tool, so the bridge must refuse
    // what it cannot read unambiguously.
    let (url, requests) = raw_remote(false);
    let mut host = Host::start(&url, &["--deny-tool", "secret"]);
    let meta = envelope();
    host.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","name":"secret","_meta":{meta}}}}}"#
    ));
    let (_, a) = host.answer_for(&json!(1));
    assert!(a.get("error").is_some(), "{a}");
    host.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"echo"}},"params":{{"name":"secret","_meta":{meta}}}}}"#
    ));
    let (_, a) = host.answer_for(&json!(2));
    assert!(a.get("error").is_some(), "{a}");
    // A case variant: a remote matching names case-insensitively would
    // run `secret` for it.
    let a = host.call(req(
        "modern",
        json!(4),
        "tools/call",
        json!({"name": "SeCrEt", "arguments": {}}),
    ));
    assert_eq!(a["error"]["code"], -32602, "{a}");
    let a = host.call(req("modern", json!(3), "ping", json!({})));
    assert_eq!(a["id"], 3);
    // Before the ping the remote saw only the bridge's own era probe
    // (server/discover), never a call.
    let first = requests.recv_timeout(WAIT).unwrap();
    assert!(first.contains("\"method\":\"server/discover\""), "{first}");
    assert!(!first.to_ascii_lowercase().contains("secret"), "{first}");
    let second = requests.recv_timeout(WAIT).unwrap();
    assert!(second.contains("\"method\":\"ping\""), "{second}");
    assert!(!second.to_ascii_lowercase().contains("secret"), "{second}");
}

#[test]
fn a_slow_user_answering_an_elicitation_is_not_a_stalled_remote() {
    let server = HttpServer::start(&[]);
    // --timeout 1: the remote's stream stays quiet while the host's user
    // thinks for longer than that.
    let mut host = Host::start(&server.url, &["--timeout", "1"]);
    open(&mut host, "handshake");
    host.send(req(
        "handshake",
        json!(1),
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "Take your time"}}),
    ));
    let ask = loop {
        let m = host.recv();
        if m["method"] == "elicitation/create" {
            break m;
        }
        assert!(
            m.get("id") != Some(&json!(1)),
            "answered without asking: {m}"
        );
    };
    std::thread::sleep(Duration::from_millis(2500));
    host.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"response": "done"}}}));
    let (_, a) = host.answer_for(&json!(1));
    assert!(text_of(&a).contains("done"), "{a}");
}

/// One HTTP/1.1 POST of `body` to `url` with the Streamable HTTP headers;
/// the whole answer (head and body) as text.
fn raw_post(url: &str, body: &str) -> String {
    let addr = url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// The everything-server fixtures with the handshake era switched off,
/// served over HTTP on a thread of the test (a 2026-07-28-only remote).
struct ModernOnlyServer {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ModernOnlyServer {
    fn start() -> Self {
        let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        // A tool that changes the subscribable resource (the fixtures have
        // none that does).
        let touch = ferromcp_server::tool("bridge_test_touch_watched")
            .description("Publishes an update of test://watched-resource")
            .handler(
                |_: ferromcp_server::NoArgs, cx: ferromcp_server::RequestContext| async move {
                    cx.server()
                        .notify_resource_updated("test://watched-resource");
                    "touched"
                },
            );
        let server = ferromcp_everything::everything_builder()
            .handshake_era(false)
            .tool(touch)
            .build()
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let _ = ferromcp_server::transport::http::serve(server, addr, async {
                    let _ = stopped.await;
                })
                .await;
            });
        });
        common::wait_listening(&addr.to_string());
        Self {
            url: format!("http://{addr}/mcp"),
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for ModernOnlyServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_handshake_host_works_in_front_of_a_modern_only_remote() {
    let server = ModernOnlyServer::start();
    // The remote really is 2026-07-28 only: it refuses an initialize.
    let refused = raw_post(
        &server.url,
        &json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}
        })
        .to_string(),
    );
    assert!(refused.contains("\"error\""), "{refused}");

    let mut host = Host::start(&server.url, &["--deny-tool", "test_trigger_*"]);
    // The bridge answers initialize itself from server/discover.
    let init = host.call(json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "old-host", "version": "1"}
        }
    }));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    assert_eq!(
        init["result"]["serverInfo"]["name"], "mcp-rs-everything-server",
        "{init}"
    );
    // List changes and resource subscriptions are translated (the
    // bridge's subscriptions/listen), so both are promised.
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"], true,
        "{init}"
    );
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"], true,
        "{init}"
    );
    host.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // Plain handshake-era requests, no envelope: the bridge adds it.
    let list = host.call(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let names = tool_names(&list);
    assert!(names.contains(&"echo".to_owned()), "{list}");
    assert!(
        !names.iter().any(|n| n.starts_with("test_trigger_")),
        "{names:?}"
    );
    let echo = host.call(json!({"jsonrpc": "2.0", "id": "e", "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "across eras"}}}));
    assert_eq!(text_of(&echo), "across eras", "{echo}");
    assert_eq!(echo["result"]["resultType"], "complete", "{echo}");
    assert!(echo["result"].get("ttlMs").is_none(), "{echo}");
    // Mcp-Param headers: learned from the translated tools/list.
    let hdr = host.call(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_x_mcp_header", "arguments": {"region": "ap"}}}));
    assert_eq!(text_of(&hdr), "region=ap", "{hdr}");

    // Progress with the host's token.
    host.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 99}}}));
    let (before, done) = host.answer_for(&json!(3));
    let progress = before
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == 99)
        .count();
    assert_eq!(progress, 3, "{before:?}");
    assert!(done.get("result").is_some(), "{done}");

    // logging/setLevel is answered locally and the level rides on later
    // requests' _meta, so the remote's log notifications reach the host.
    let set = host.call(json!({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {"level": "info"}}));
    assert!(set.get("result").is_some(), "{set}");
    host.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "test_logging_tool", "arguments": {}}}));
    let (before, _) = host.answer_for(&json!(5));
    assert!(
        before
            .iter()
            .any(|m| m["method"] == "notifications/message"),
        "{before:?}"
    );

    // Cancellation aborts the exchange; the remote counts it.
    host.send(json!({"jsonrpc": "2.0", "id": "long", "method": "tools/call",
        "params": {"name": "debug_sleep", "arguments": {"ms": 600000}, "_meta": {"progressToken": "l"}}}));
    loop {
        let m = host.recv();
        if m["method"] == "notifications/progress" && m["params"]["progressToken"] == "l" {
            break;
        }
    }
    host.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "long"}}));
    for i in 0..100 {
        let a = host.call(
            json!({"jsonrpc": "2.0", "id": format!("c{i}"), "method": "tools/call",
            "params": {"name": "debug_cancellations", "arguments": {}}}),
        );
        if text_of(&a) == "1" {
            break;
        }
        assert!(i < 99, "the remote never saw the cancellation");
        std::thread::sleep(Duration::from_millis(100));
    }

    // An unknown method gets the remote's own -32601 under the host's id.
    let unknown =
        host.call(json!({"jsonrpc": "2.0", "id": "u", "method": "vendor/x", "params": {}}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn requests_sent_right_behind_initialize_wait_for_the_session() {
    let server = HttpServer::start(&[]);
    let mut host = Host::start(&server.url, &[]);
    // All at once, without waiting for the initialize answer (as
    // `printf … | mcp bridge URL` does): the later messages need the
    // session id the answer brings.
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "eager", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "queued"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "vendor/x", "params": {}}),
    ];
    let all: Vec<String> = lines.iter().map(Value::to_string).collect();
    host.send_raw(&all.join("\n"));
    // The answers to 2 and 3 may come in either order.
    let mut answers = std::collections::HashMap::new();
    while answers.len() < 3 {
        let m = host.recv();
        if m.get("method").is_none() {
            answers.insert(m["id"].to_string(), m);
        }
    }
    assert!(answers["1"].get("result").is_some(), "{answers:?}");
    assert_eq!(text_of(&answers["2"]), "queued", "{answers:?}");
    assert_eq!(answers["3"]["error"]["code"], -32601, "{answers:?}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_handshake_host_answers_a_modern_remotes_input_rounds_as_pushed_requests() {
    let server = ModernOnlyServer::start();
    let mut host = Host::start(&server.url, &[]);
    let init = host.call(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}, "sampling": {}, "roots": {}},
            "clientInfo": {"name": "old-host", "version": "1"}
        }
    }));
    assert!(init.get("result").is_some(), "{init}");
    host.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // MRTR-01: the remote's input_required round reaches the host as an
    // elicitation/create request; the host's answer completes the call.
    host.send(json!({"jsonrpc": "2.0", "id": "e", "method": "tools/call",
        "params": {"name": "test_input_required_result_elicitation", "arguments": {}}}));
    let ask = host.recv();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert!(ask.get("id").is_some(), "{ask}");
    host.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}));
    let (_, done) = host.answer_for(&json!("e"));
    assert!(text_of(&done).contains("Ada"), "{done}");

    // Sampling and roots the same way.
    host.send(json!({"jsonrpc": "2.0", "id": "s", "method": "tools/call",
        "params": {"name": "test_input_required_result_sampling", "arguments": {}}}));
    let ask = host.recv();
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    host.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"}}));
    let (_, done) = host.answer_for(&json!("s"));
    assert!(done.get("result").is_some(), "{done}");
    assert!(done.to_string().contains("sampled"), "{done}");

    // Several rounds, each answered in turn.
    host.send(json!({"jsonrpc": "2.0", "id": "m", "method": "tools/call",
        "params": {"name": "test_input_required_result_multi_round", "arguments": {}}}));
    let mut rounds = 0;
    let done = loop {
        let m = host.recv();
        if m.get("method").is_none() {
            assert_eq!(m["id"], "m", "{m}");
            break m;
        }
        rounds += 1;
        assert!(rounds <= 16, "endless rounds");
        let answer = match m["method"].as_str() {
            Some("elicitation/create") => json!({"action": "accept", "content": {"name": "Ada"}}),
            Some("sampling/createMessage") => {
                json!({"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"})
            }
            Some("roots/list") => json!({"roots": []}),
            other => panic!("unexpected {other:?}: {m}"),
        };
        host.send(json!({"jsonrpc": "2.0", "id": m["id"], "result": answer}));
    };
    assert!(rounds >= 2, "{rounds} rounds");
    assert!(done.get("result").is_some(), "{done}");

    // A host that declines with an error answer fails the call with it.
    host.send(json!({"jsonrpc": "2.0", "id": "d", "method": "tools/call",
        "params": {"name": "test_input_required_result_elicitation", "arguments": {}}}));
    let ask = host.recv();
    host.send(json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -32000, "message": "no user here"}}));
    let (_, done) = host.answer_for(&json!("d"));
    assert_eq!(done["error"]["message"], "no user here", "{done}");
}

#[test]
fn a_tool_called_before_any_tools_list_still_gets_its_param_headers() {
    let server = HttpServer::start(&[]);
    let mut host = Host::start(&server.url, &[]);
    // HDR-21: no tools/list yet, so the first attempt lacks
    // Mcp-Param-Region and the remote answers -32020; the bridge fetches
    // tools/list itself and sends the call once more.
    let call = host.call(req(
        "modern",
        json!(1),
        "tools/call",
        json!({"name": "test_x_mcp_header", "arguments": {"region": "us"}}),
    ));
    assert_eq!(text_of(&call), "region=us", "{call}");
}

#[test]
fn a_host_that_leaves_during_an_elicitation_does_not_keep_the_bridge_running() {
    let server = HttpServer::start(&[]);
    let mut host = Host::start(&server.url, &[]);
    open(&mut host, "handshake");
    host.send(req(
        "handshake",
        json!(1),
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "Anyone?"}}),
    ));
    loop {
        let m = host.recv();
        if m["method"] == "elicitation/create" {
            break;
        }
    }
    // The host closes stdin without answering: the bridge answers the
    // remote's request with an error, the call ends, and the bridge exits.
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
}

/// A raw remote answering every POST with an SSE stream: `events`, then
/// the result for the request's id.
fn sse_remote(events: Vec<Value>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; len];
            let _ = reader.read_exact(&mut body);
            let id = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v.get("id").cloned());
            let Some(id) = id else {
                let _ = write!(
                    stream,
                    "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                continue;
            };
            let mut sse = String::new();
            for e in &events {
                sse.push_str(&format!("data: {e}\n\n"));
            }
            let done = json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}});
            sse.push_str(&format!("data: {done}\n\n"));
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{sse}",
                sse.len()
            );
        }
    });
    url
}

#[test]
fn a_remote_cancelling_its_own_request_reaches_the_host_with_the_host_side_id() {
    let url = sse_remote(vec![
        json!({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
            "params": {"mode": "form", "message": "?", "requestedSchema": {"type": "object"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": "srv-1", "reason": "changed my mind"}}),
    ]);
    let mut host = Host::start(&url, &[]);
    host.send(req(
        "modern",
        json!(1),
        "tools/call",
        json!({"name": "x", "arguments": {}}),
    ));
    let (before, done) = host.answer_for(&json!(1));
    assert!(done.get("result").is_some(), "{done}");
    let ask = before
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .unwrap_or_else(|| panic!("{before:?}"));
    let cancel = before
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("{before:?}"));
    // The host only ever sees the bridge's id for the remote's request.
    assert_ne!(ask["id"], "srv-1", "{ask}");
    assert_eq!(cancel["params"]["requestId"], ask["id"], "{cancel}");
    assert_eq!(cancel["params"]["reason"], "changed my mind");
}

#[test]
fn warnings_go_to_stderr_and_never_to_stdout_or_show_header_values() {
    // A remote whose answer stream carries something that is not JSON-RPC:
    // the bridge drops it and says so on stderr; stdout (checked line by
    // line by the Host reader) still carries only JSON-RPC.
    let url = sse_remote(vec![json!({"not": "json-rpc"})]);
    let run = |extra: &[&str]| {
        let mut args = vec!["-H", "X-Api-Key: ${BRIDGE_TEST_KEY}"];
        args.extend_from_slice(extra);
        let mut host = Host::start_env(&url, &args, &[("BRIDGE_TEST_KEY", "s3cret-key-value")]);
        let done = host.call(req(
            "modern",
            json!(1),
            "tools/call",
            json!({"name": "x", "arguments": {}}),
        ));
        assert!(done.get("result").is_some(), "{done}");
        let (code, stderr) = host.finish();
        assert_eq!(code, Some(0), "{stderr}");
        assert!(!stderr.contains("s3cret"), "{stderr}");
        stderr
    };
    let stderr = run(&[]);
    assert!(
        stderr.contains("warn") && stderr.contains("not a JSON-RPC message"),
        "the default level shows warnings: {stderr:?}"
    );
    let stderr = run(&["--log-level", "debug"]);
    assert!(stderr.contains("not a JSON-RPC message"), "{stderr:?}");
    let stderr = run(&["--log-level", "off"]);
    assert!(!stderr.contains("JSON-RPC"), "off is silent: {stderr:?}");
}

#[test]
fn a_modern_host_works_in_front_of_a_handshake_only_remote() {
    // The everything-server restricted to the handshake era: the bridge's
    // server/discover probe fails, so it opens one initialize'd session and
    // serves the 2026-07-28 host through it (ERA-06, DISC-06).
    let server = HttpServer::start(&["--era", "handshake"]);
    let mut host = Host::start(&server.url, &[]);

    let list = host.call(req("modern", json!(1), "tools/list", json!({})));
    assert!(tool_names(&list).contains(&"echo".to_owned()), "{list}");
    // RESULT-01, CACHE-01: the bridge serves the modern wire; the remote
    // gave no cache hint, so none is claimed (0, private).
    assert_eq!(list["result"]["resultType"], "complete", "{list}");
    assert_eq!(list["result"]["ttlMs"], 0, "{list}");
    assert_eq!(list["result"]["cacheScope"], "private", "{list}");

    // DISC-02: answered from the initialize result; no cache hint the
    // remote never gave (CACHE-01 wants one: 0, private).
    let disc = host.call(req("modern", json!(2), "server/discover", json!({})));
    let r = &disc["result"];
    assert_eq!(r["supportedVersions"], json!(["2026-07-28"]), "{disc}");
    assert_eq!(r["ttlMs"], 0, "{disc}");
    assert_eq!(r["cacheScope"], "private", "{disc}");
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-rs-everything-server",
        "{disc}"
    );
    assert!(r["capabilities"]["tools"].is_object(), "{disc}");

    let echo = host.call(req(
        "modern",
        json!("e"),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "across eras"}}),
    ));
    assert_eq!(text_of(&echo), "across eras", "{echo}");

    // The envelope's logLevel becomes logging/setLevel on the session
    // whenever it changes: an info log is held back at "error" and
    // reaches the host at "debug".
    let logs_at = |host: &mut Host, id: &str, level: &str| {
        host.send(req(
            "modern",
            json!(id),
            "tools/call",
            json!({"name": "test_logging_tool", "arguments": {},
                "_meta": {"io.modelcontextprotocol/logLevel": level}}),
        ));
        let (before, done) = host.answer_for(&json!(id));
        assert!(done.get("result").is_some(), "{done}");
        before
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .count()
    };
    assert_eq!(logs_at(&mut host, "log-1", "error"), 0);
    assert_eq!(logs_at(&mut host, "log-2", "debug"), 1);
    assert_eq!(logs_at(&mut host, "log-3", "error"), 0);

    // subscriptions/listen served from the session's GET stream.
    host.send(req(
        "modern",
        json!("listen-1"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": false}}),
    ));
    let ack = host.recv();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "{ack}"
    );
    host.send(req(
        "modern",
        json!(3),
        "tools/call",
        json!({"name": "test_trigger_tool_change", "arguments": {}}),
    ));
    // The change may come before the call's answer or after it.
    let (before, _) = host.answer_for(&json!(3));
    let is_change = |m: &Value| m["method"] == "notifications/tools/list_changed";
    let changed = match before.into_iter().find(is_change) {
        Some(m) => m,
        None => loop {
            let m = host.recv();
            if is_change(&m) {
                break m;
            }
        },
    };
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1",
        "{changed}"
    );
    let list = host.call(req("modern", json!(4), "tools/list", json!({})));
    assert!(
        tool_names(&list).contains(&"dynamic_tool".to_owned()),
        "{list}"
    );

    // The remote's elicitation becomes an input_required round (MRTR-15;
    // more in a_modern_host_answers_a_handshake_remotes_pushed_requests_as_input_rounds).
    let call = json!({"name": "test_elicitation", "arguments": {"message": "name?"}});
    let first = host.call(req("modern", json!(5), "tools/call", call.clone()));
    let (key, _, state) = input_round(&first, "elicitation/create");
    let mut retry = call;
    retry["inputResponses"] = json!({ key: {"action": "accept", "content": {"response": "Ada"}} });
    retry["requestState"] = json!(state);
    let done = host.call(req("modern", json!(6), "tools/call", retry));
    assert!(text_of(&done).contains("Ada"), "{done}");

    let (code, stderr) = host.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

/// The `input_required` round of a 2026-07-28 host's call, checked: one
/// input request of `method`, and the opaque `requestState`; (key, the
/// request's params, requestState).
fn input_round(answer: &Value, method: &str) -> (String, Value, String) {
    let r = &answer["result"];
    assert_eq!(r["resultType"], "input_required", "{answer}");
    let asks = r["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("no inputRequests in {answer}"));
    assert_eq!(asks.len(), 1, "{answer}");
    let (key, ask) = asks.iter().next().unwrap();
    assert_eq!(ask["method"], method, "{answer}");
    assert!(
        ask.get("id").is_none() && ask.get("jsonrpc").is_none(),
        "{answer}"
    );
    let state = r["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState in {answer}"));
    (key.clone(), ask["params"].clone(), state.to_owned())
}

// MRTR-02, MRTR-03, MRTR-06, MRTR-08, MRTR-15
#[test]
fn a_modern_host_answers_a_handshake_remotes_pushed_requests_as_input_rounds() {
    // The everything-server in the handshake era only pushes
    // elicitation/create and sampling/createMessage during tools/call; the
    // 2026-07-28 host gets input_required rounds, and its retries answer
    // the pushed requests.
    let server = HttpServer::start(&["--era", "handshake"]);
    let mut host = Host::start(&server.url, &[]);

    let call = |id: Value, name: &str, args: Value| {
        req(
            "modern",
            id,
            "tools/call",
            json!({"name": name, "arguments": args}),
        )
    };
    let retry = |id: Value, name: &str, args: Value, key: &str, answer: Value, state: &str| {
        let mut r = call(id, name, args);
        r["params"]["inputResponses"] = json!({ key: answer });
        r["params"]["requestState"] = json!(state);
        r
    };

    // Elicitation.
    let args = json!({"message": "Your colour?"});
    let first = host.call(call(json!(1), "test_elicitation", args.clone()));
    let (key, params, state) = input_round(&first, "elicitation/create");
    assert_eq!(params["message"], "Your colour?", "{first}");
    let accept = json!({"action": "accept", "content": {"response": "teal"}});
    // A forged state is refused; the real round still waits.
    let forged = host.call(retry(
        json!(2),
        "test_elicitation",
        args.clone(),
        &key,
        accept.clone(),
        "forged",
    ));
    assert_eq!(forged["error"]["code"], -32602, "{forged}");
    // The state is bound to its call: another tool cannot use it.
    let other = host.call(retry(
        json!(3),
        "echo",
        json!({"text": "x"}),
        &key,
        accept.clone(),
        &state,
    ));
    assert_eq!(other["error"]["code"], -32602, "{other}");
    let done = host.call(retry(
        json!(4),
        "test_elicitation",
        args.clone(),
        &key,
        accept.clone(),
        &state,
    ));
    assert!(text_of(&done).contains("teal"), "{done}");
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    // Used once: a replay is refused.
    let replay = host.call(retry(
        json!(5),
        "test_elicitation",
        args,
        &key,
        accept,
        &state,
    ));
    assert_eq!(replay["error"]["code"], -32602, "{replay}");

    // Sampling.
    let args = json!({"prompt": "Say hi"});
    let first = host.call(call(json!(6), "test_sampling", args.clone()));
    let (key, _, state) = input_round(&first, "sampling/createMessage");
    let sampled = json!({
        "role": "assistant", "content": {"type": "text", "text": "hi from the host"}, "model": "test"
    });
    let done = host.call(retry(
        json!(7),
        "test_sampling",
        args,
        &key,
        sampled,
        &state,
    ));
    assert_eq!(text_of(&done), "LLM response: hi from the host", "{done}");

    // Nothing was pushed to the 2026-07-28 host as a request.
    while let Ok(m) = host.rx.try_recv() {
        assert!(
            m.get("method").is_none() || m.get("id").is_none(),
            "pushed: {m}"
        );
    }
    let (code, _) = host.finish();
    assert_eq!(code, Some(0));
}

// MRTR-08, MRTR-09
#[test]
fn input_rounds_of_a_handshake_remote_are_bounded_in_age_and_count() {
    let server = HttpServer::start(&["--era", "handshake"]);
    let ask = |id: i64| {
        req(
            "modern",
            json!(id),
            "tools/call",
            json!({"name": "test_elicitation", "arguments": {"message": "Your colour?"}}),
        )
    };
    let answer = |id: i64, key: &str, state: &str| {
        let mut r = ask(id);
        r["params"]["inputResponses"] =
            json!({ key: {"action": "accept", "content": {"response": "teal"}} });
        r["params"]["requestState"] = json!(state);
        r
    };

    // Age: a round older than --input-wait is dropped (the call is
    // cancelled at the remote) and its state refused.
    let mut host = Host::start(&server.url, &["--input-wait", "1"]);
    let first = host.call(ask(1));
    let (key, _, state) = input_round(&first, "elicitation/create");
    std::thread::sleep(Duration::from_millis(2100));
    let late = host.call(answer(2, &key, &state));
    assert_eq!(late["error"]["code"], -32602, "{late}");
    // A new call still works.
    let again = host.call(ask(3));
    let (key, _, state) = input_round(&again, "elicitation/create");
    let done = host.call(answer(4, &key, &state));
    assert!(text_of(&done).contains("teal"), "{done}");
    let (code, _) = host.finish();
    assert_eq!(code, Some(0));

    // Count: with one round allowed to wait, a second call's pushed
    // request is refused at the remote; that call is still answered.
    let mut host = Host::start(&server.url, &["--max-input-waits", "1"]);
    let first = host.call(ask(1));
    let (key, _, state) = input_round(&first, "elicitation/create");
    let second = host.call(ask(2));
    assert_ne!(second["result"]["resultType"], "input_required", "{second}");
    assert!(
        second.get("error").is_some() || second["result"]["isError"] == true,
        "{second}"
    );
    let done = host.call(answer(3, &key, &state));
    assert!(text_of(&done).contains("teal"), "{done}");
    let (code, _) = host.finish();
    assert_eq!(code, Some(0));
}

// SUB-01, SUB-12, SUB-14
#[test]
fn a_handshake_host_gets_a_modern_remotes_list_changes_through_the_bridges_listen() {
    let server = ModernOnlyServer::start();
    let mut host = Host::start(&server.url, &[]);
    let init = host.call(json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "old-host", "version": "1"}
        }
    }));
    for area in ["tools", "prompts", "resources"] {
        assert_eq!(
            init["result"]["capabilities"][area]["listChanged"], true,
            "{init}"
        );
    }
    host.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Each call toggles a tool; once the bridge's listen is open at the
    // remote, the change reaches the host (on the listen stream, so it may
    // come after the call's answer). Bounded by a count of calls.
    let is_change = |m: &Value| m["method"] == "notifications/tools/list_changed";
    let mut change = None;
    for i in 0..20 {
        let id = json!(format!("trigger-{i}"));
        host.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "test_trigger_tool_change", "arguments": {}}}));
        let (before, done) = host.answer_for(&id);
        assert!(done.get("result").is_some(), "{done}");
        change = before.into_iter().find(is_change).or_else(|| {
            host.rx
                .recv_timeout(Duration::from_millis(500))
                .ok()
                .filter(is_change)
        });
        if change.is_some() {
            break;
        }
    }
    let change = change.expect("no notifications/tools/list_changed reached the host");
    // A handshake-era notification: no subscriptionId, no acknowledgement.
    assert!(
        change["params"]["_meta"]
            .get("io.modelcontextprotocol/subscriptionId")
            .is_none(),
        "{change}"
    );
    while let Ok(m) = host.rx.try_recv() {
        assert_ne!(
            m["method"], "notifications/subscriptions/acknowledged",
            "{m}"
        );
    }
    let (code, stderr) = host.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_handshake_host_subscribes_to_a_modern_remotes_resource_through_the_bridge() {
    // SUB-01, SUB-12, SUB-14: the handshake host's resources/subscribe
    // becomes the bridge's subscriptions/listen with resourceSubscriptions.
    let server = ModernOnlyServer::start();
    let mut host = Host::start(&server.url, &[]);
    let init = host.call(json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "old-host", "version": "1"}
        }
    }));
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"], true,
        "{init}"
    );
    host.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let uri = "test://watched-resource";
    let sub = host.call(
        json!({"jsonrpc": "2.0", "id": "sub", "method": "resources/subscribe",
        "params": {"uri": uri}}),
    );
    assert_eq!(sub["result"], json!({}), "{sub}");
    // The answer came after the remote acknowledged the listen with the
    // new set: the next update reaches the host.
    let is_update = |m: &Value| m["method"] == "notifications/resources/updated";
    let touch = |host: &mut Host, id: &str| {
        let id = json!(id);
        host.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "bridge_test_touch_watched", "arguments": {}}}));
        let (before, done) = host.answer_for(&id);
        assert!(done.get("result").is_some(), "{done}");
        before
    };
    let before = touch(&mut host, "touch-1");
    let update = before.into_iter().find(is_update).or_else(|| {
        loop {
            match host.rx.recv_timeout(WAIT) {
                Ok(m) if is_update(&m) => break Some(m),
                Ok(_) => continue,
                Err(_) => break None,
            }
        }
    });
    let update = update.expect("no notifications/resources/updated reached the host");
    assert_eq!(update["params"]["uri"], uri, "{update}");
    assert!(
        update["params"]["_meta"]
            .get("io.modelcontextprotocol/subscriptionId")
            .is_none(),
        "a handshake-era notification carries no subscriptionId: {update}"
    );
    // Unsubscribing is answered too (the listen is reopened without it),
    // and a second subscribe of the same URI changes nothing.
    let again = host.call(
        json!({"jsonrpc": "2.0", "id": "sub-2", "method": "resources/subscribe",
        "params": {"uri": uri}}),
    );
    assert_eq!(again["result"], json!({}), "{again}");
    let unsub = host.call(
        json!({"jsonrpc": "2.0", "id": "unsub", "method": "resources/unsubscribe",
        "params": {"uri": uri}}),
    );
    assert_eq!(unsub["result"], json!({}), "{unsub}");
    let bad = host.call(
        json!({"jsonrpc": "2.0", "id": "bad", "method": "resources/subscribe",
        "params": {"uri": 7}}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let before = touch(&mut host, "touch-2");
    assert!(!before.iter().any(is_update), "{before:?}");
    // Only a grace period: no update may follow once unsubscribed.
    while let Ok(m) = host.rx.recv_timeout(Duration::from_millis(1500)) {
        assert!(!is_update(&m), "an update after unsubscribing: {m}");
    }
    let (code, stderr) = host.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

/// `tests/fixtures/bridge_remote.py MODE ARGS…`, recording every POST;
/// killed on drop.
struct ScriptedRemote {
    child: Child,
    url: String,
    file: std::path::PathBuf,
}

impl ScriptedRemote {
    fn start(args: &[&str]) -> Self {
        let file = std::env::temp_dir().join(format!(
            "bridge-remote-{}-{}.jsonl",
            std::process::id(),
            free_port()
        ));
        let _ = std::fs::remove_file(&file);
        let mut child = Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/bridge_remote.py"
            ))
            .args(args)
            .env("RECORD_FILE", &file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 bridge_remote.py");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut port = String::new();
        out.read_line(&mut port).unwrap();
        let addr = format!("127.0.0.1:{}", port.trim());
        common::wait_listening(&addr);
        Self {
            child,
            url: format!("http://{addr}/mcp"),
            file,
        }
    }

    /// Every message POSTed to it, in order.
    fn recorded(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for ScriptedRemote {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.file);
    }
}

#[test]
fn a_modern_host_never_sees_requests_a_handshake_remote_pushes_outside_a_call() {
    // MRTR-15: a 2026-07-28 host has no channel for a request tied to no
    // call; the bridge answers it at the remote (ping with a result, the
    // rest with -32601) and warns once per method.
    let remote = ScriptedRemote::start(&["get-push"]);
    let mut host = Host::start(&remote.url, &[]);
    let list = host.call(req("modern", json!(1), "tools/list", json!({})));
    assert!(tool_names(&list).contains(&"noop".to_owned()), "{list}");
    // The GET stream opens after the session: wait (bounded by a count of
    // polls) until the remote has the bridge's three answers.
    let answers = |r: &ScriptedRemote| -> Vec<Value> {
        r.recorded()
            .into_iter()
            .filter(|m| m.get("method").is_none())
            .collect()
    };
    for _ in 0..300 {
        if answers(&remote).len() >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let got = answers(&remote);
    let by_id = |id: &str| {
        got.iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no answer for {id}: {got:?}"))
    };
    for id in ["push-1", "push-2"] {
        assert_eq!(by_id(id)["error"]["code"], -32601, "{got:?}");
    }
    assert_eq!(by_id("push-3")["result"], json!({}), "{got:?}");
    // The host was never sent a request.
    let done = host.call(req(
        "modern",
        json!(2),
        "tools/call",
        json!({"name": "noop", "arguments": {}}),
    ));
    assert!(done.get("result").is_some(), "{done}");
    while let Ok(m) = host.rx.try_recv() {
        assert!(m.get("method").is_none() || m.get("id").is_none(), "{m}");
    }
    let (code, stderr) = host.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("roots/list").count(),
        1,
        "one warning per method: {stderr}"
    );
}

/// A handshake host's `initialize`, `notifications/initialized` and
/// `tools/call push` (id 2) written at once, without waiting for answers.
fn initialize_then_call_at_once(host: &mut Host) {
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
            "clientInfo": {"name": "eager", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "push", "arguments": {}}}),
    ];
    let all: Vec<String> = lines.iter().map(Value::to_string).collect();
    host.send_raw(&all.join("\n"));
}

#[test]
fn a_request_pushed_on_the_get_stream_right_after_initialized_is_not_lost() {
    // LEGACY-15, LEGACY-18: the remote answers its GET stream after 1.5 s
    // and drops a request tied to no call when no stream is open (as the
    // TypeScript SDK does). A host that calls at once after
    // `notifications/initialized` must still get that request: the bridge
    // holds the call until the remote has answered the GET.
    let remote = ScriptedRemote::start(&["slow-get", "1500"]);
    let mut host = Host::start(&remote.url, &[]);
    initialize_then_call_at_once(&mut host);
    let mut done = None;
    while done.is_none() {
        let m = host.recv();
        if m["method"] == "roots/list" {
            host.send(json!({"jsonrpc": "2.0", "id": m["id"],
                "result": {"roots": [{"uri": "file:///work", "name": "work"}]}}));
        } else if m["id"] == 2 {
            done = Some(m);
        }
    }
    let done = done.unwrap_or_default();
    assert!(
        text_of(&done).starts_with("answered: ") && text_of(&done).contains("file:///work"),
        "{done}"
    );
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn stream_open_wait_zero_sends_at_once_and_the_push_is_lost() {
    // The other side of the test above, and what the wait costs nothing
    // to switch off: with `--stream-open-wait 0` the call overtakes the GET
    // stream and this remote drops its push.
    let remote = ScriptedRemote::start(&["slow-get", "1500"]);
    let mut host = Host::start(&remote.url, &["--stream-open-wait", "0"]);
    initialize_then_call_at_once(&mut host);
    let (_, done) = host.answer_for(&json!(2));
    assert_eq!(text_of(&done), "lost", "{done}");
    let (code, err) = host.finish();
    assert_eq!(code, Some(0), "{err}");
}

/// The calls of `method` (and tool `name`) the remote received.
fn attempts(remote: &ScriptedRemote, method: &str, name: Option<&str>) -> usize {
    remote
        .recorded()
        .iter()
        .filter(|m| m["method"] == method && name.is_none_or(|n| m["params"]["name"] == n))
        .count()
}

#[test]
fn read_only_requests_are_retried_on_503_and_others_are_not() {
    // The remote answers the first 2 attempts of each request with 503.
    let remote = ScriptedRemote::start(&["flaky", "2"]);
    let mut host = Host::start(&remote.url, &["--log-level", "info"]);
    let list = host.call(req("modern", json!(1), "tools/list", json!({})));
    assert_eq!(tool_names(&list), ["ro", "idem", "rw"], "{list}");
    assert_eq!(attempts(&remote, "tools/list", None), 3);
    for (i, tool) in ["ro", "idem"].into_iter().enumerate() {
        let done = host.call(req(
            "modern",
            json!(10 + i),
            "tools/call",
            json!({"name": tool, "arguments": {}}),
        ));
        assert_eq!(text_of(&done), format!("called {tool}"), "{done}");
        assert_eq!(attempts(&remote, "tools/call", Some(tool)), 3, "{tool}");
    }
    // A tool that is neither read-only nor idempotent: sent once, and the
    // host gets the failure.
    let done = host.call(req(
        "modern",
        json!(20),
        "tools/call",
        json!({"name": "rw", "arguments": {}}),
    ));
    assert!(
        done["error"]["message"].as_str().unwrap().contains("503"),
        "{done}"
    );
    assert_eq!(attempts(&remote, "tools/call", Some("rw")), 1);
    let (code, stderr) = host.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("sending the request again"), "{stderr}");
}

#[test]
fn retries_stop_at_the_configured_count() {
    // Three 503s in a row: one more than the default two retries, so the
    // host gets the failure after 3 attempts; with --retries 0 after one.
    let remote = ScriptedRemote::start(&["flaky", "3"]);
    let mut host = Host::start(&remote.url, &[]);
    let list = host.call(req("modern", json!(1), "tools/list", json!({})));
    assert!(
        list["error"]["message"].as_str().unwrap().contains("503"),
        "{list}"
    );
    assert_eq!(attempts(&remote, "tools/list", None), 3);
    drop(host);
    let mut host = Host::start(&remote.url, &["--retries", "0"]);
    let done = host.call(req("modern", json!(2), "prompts/list", json!({})));
    assert!(done.get("error").is_some(), "{done}");
    assert_eq!(attempts(&remote, "prompts/list", None), 1);
}

#[test]
fn a_read_only_request_is_retried_after_a_timeout_and_a_tool_call_is_not() {
    // The remote answers the first attempt of each request after 4 s,
    // past the bridge's --timeout of 1 s; the second attempt at once.
    let remote = ScriptedRemote::start(&["slow", "1"]);
    let mut host = Host::start(&remote.url, &["--timeout", "1", "--log-level", "info"]);
    let list = host.call(req("modern", json!(1), "tools/list", json!({})));
    assert_eq!(tool_names(&list), ["ro", "idem", "rw"], "{list}");
    assert_eq!(attempts(&remote, "tools/list", None), 2);
    // A tool call is never sent again after a timeout, even for a tool
    // annotated readOnlyHint (retried on a 503): the remote may still be
    // running the first one.
    let done = host.call(req(
        "modern",
        json!(2),
        "tools/call",
        json!({"name": "ro", "arguments": {}}),
    ));
    assert!(done.get("error").is_some(), "{done}");
    assert_eq!(attempts(&remote, "tools/call", Some("ro")), 1);
    let (code, stderr) = host.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("no answer within the timeout; sending the request again"),
        "{stderr}"
    );
}

#[test]
fn retries_with_a_timeout_stay_within_the_retry_count() {
    // Two slow answers in a row and --retries 1: two attempts, then the
    // host gets the timeout error.
    let remote = ScriptedRemote::start(&["slow", "2"]);
    let mut host = Host::start(&remote.url, &["--timeout", "1", "--retries", "1"]);
    let list = host.call(req("modern", json!(1), "prompts/list", json!({})));
    assert!(
        list["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no answer"),
        "{list}"
    );
    assert_eq!(attempts(&remote, "prompts/list", None), 2);
}

#[test]
fn a_retry_after_http_date_is_honoured_and_one_past_the_max_wait_is_not() {
    // 503 with `Retry-After: <HTTP-date>` (RFC 9110 section 10.2.3).
    // A date in the past asks for no wait: sent again.
    let remote = ScriptedRemote::start(&["dated", "1", "-60"]);
    let mut host = Host::start(&remote.url, &[]);
    let list = host.call(req("modern", json!(1), "tools/list", json!({})));
    assert_eq!(tool_names(&list), ["ro", "idem", "rw"], "{list}");
    assert_eq!(attempts(&remote, "tools/list", None), 2);
    drop(host);
    // A date two seconds ahead, within --retry-max-wait: waited for, then
    // sent again.
    let remote = ScriptedRemote::start(&["dated", "1", "2"]);
    let mut host = Host::start(&remote.url, &[]);
    let list = host.call(req("modern", json!(1), "tools/list", json!({})));
    assert_eq!(tool_names(&list), ["ro", "idem", "rw"], "{list}");
    assert_eq!(attempts(&remote, "tools/list", None), 2);
    drop(host);
    // An hour ahead, past --retry-max-wait (10 s): not retried (the
    // bridge's own short backoff would be earlier than the remote asked),
    // the 503 stands.
    let remote = ScriptedRemote::start(&["dated", "1", "3600"]);
    let mut host = Host::start(&remote.url, &[]);
    let list = host.call(req("modern", json!(1), "tools/list", json!({})));
    assert!(
        list["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("503")),
        "{list}"
    );
    assert_eq!(attempts(&remote, "tools/list", None), 1);
}

/// `mcp serve --http ADDR ARGS…` on a fixed address (to be started again
/// on the same one); killed on drop.
struct FixedServer(Child);

impl FixedServer {
    fn start(addr: &str, extra: &[&str]) -> Self {
        let child = Command::new(MCP)
            .args(["serve", "--http", addr])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp serve");
        common::wait_listening(addr);
        Self(child)
    }
}

impl Drop for FixedServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_expired_remote_session_is_initialized_again_and_the_request_resent() {
    // LEGACY-12: the remote restarts between two calls and answers the
    // old session id with 404. Handshake host: the bridge re-runs the
    // host's initialize; 2026-07-28 host: the bridge's own session.
    for era in ERAS {
        let addr = format!("127.0.0.1:{}", free_port());
        let server = FixedServer::start(&addr, &["--era", "handshake"]);
        let mut host = Host::start(&format!("http://{addr}/mcp"), &[]);
        open(&mut host, era);
        let echo = |host: &mut Host, id: i64| {
            host.call(req(
                era,
                json!(id),
                "tools/call",
                json!({"name": "echo", "arguments": {"text": format!("hi {id}")}}),
            ))
        };
        let first = echo(&mut host, 1);
        assert_eq!(text_of(&first), "hi 1", "{era}: {first}");
        drop(server);
        let _server = FixedServer::start(&addr, &["--era", "handshake"]);
        let second = echo(&mut host, 2);
        assert_eq!(text_of(&second), "hi 2", "{era}: {second}");
        let list = host.call(req(era, json!(3), "tools/list", json!({})));
        assert!(tool_names(&list).contains(&"echo".to_owned()), "{list}");
        if era == "handshake" {
            // The GET stream is open again in the new session: a change
            // reaches the host (bounded by a count of triggers).
            let is_change = |m: &Value| m["method"] == "notifications/tools/list_changed";
            let mut seen = false;
            for i in 0..20 {
                let id = json!(format!("trigger-{i}"));
                host.send(req(
                    era,
                    id.clone(),
                    "tools/call",
                    json!({"name": "test_trigger_tool_change", "arguments": {}}),
                ));
                let (before, done) = host.answer_for(&id);
                assert!(done.get("result").is_some(), "{done}");
                seen = before.iter().any(is_change)
                    || host
                        .rx
                        .recv_timeout(Duration::from_millis(500))
                        .is_ok_and(|m| is_change(&m));
                if seen {
                    break;
                }
            }
            assert!(seen, "no list change after the new session");
        }
        let (code, stderr) = host.finish();
        assert_eq!(code, Some(0), "{era}: {stderr}");
        assert!(stderr.contains("session expired"), "{era}: {stderr}");
    }
}

#[test]
fn a_renewed_session_gets_the_hosts_level_and_subscriptions_again() {
    // LEGACY-12: the remote forgets the session; the bridge's new session
    // is set up as the host set up the old one (its last log level, the
    // resources it is still subscribed to) before the host's request is
    // sent again, so updates and the level survive the renewal.
    let remote = ScriptedRemote::start(&["forgetful"]);
    let mut host = Host::start(&remote.url, &[]);
    open(&mut host, "handshake");
    let ok = |host: &mut Host, id: &str, method: &str, params: Value| {
        let a = host.call(req("handshake", json!(id), method, params));
        assert!(a.get("result").is_some(), "{method}: {a}");
    };
    ok(
        &mut host,
        "l1",
        "logging/setLevel",
        json!({"level": "debug"}),
    );
    ok(
        &mut host,
        "l2",
        "logging/setLevel",
        json!({"level": "error"}),
    );
    for (i, uri) in ["file:///a", "file:///b", "file:///c"].iter().enumerate() {
        ok(
            &mut host,
            &format!("s{i}"),
            "resources/subscribe",
            json!({"uri": uri}),
        );
    }
    ok(
        &mut host,
        "u",
        "resources/unsubscribe",
        json!({"uri": "file:///b"}),
    );
    let call = |name: &str| json!({"name": name, "arguments": {}});
    ok(&mut host, "f", "tools/call", call("forget"));
    let after = host.call(req("handshake", json!("after"), "tools/call", call("noop")));
    assert_eq!(text_of(&after), "done", "{after}");
    let (code, stderr) = host.finish();
    assert_eq!(code, Some(0), "{stderr}");

    let new: Vec<Value> = remote
        .recorded()
        .into_iter()
        .filter(|m| m["_session"] == "s-2" && m.get("id").is_some())
        .collect();
    let methods: Vec<&str> = new.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        [
            "logging/setLevel",
            "resources/subscribe",
            "resources/subscribe",
            "tools/call"
        ],
        "{new:?}"
    );
    assert_eq!(new[0]["params"]["level"], "error", "{new:?}");
    let uris: Vec<&Value> = new[1..3].iter().map(|m| &m["params"]["uri"]).collect();
    assert_eq!(uris, [&json!("file:///a"), &json!("file:///c")], "{new:?}");
    assert_eq!(new[3]["params"]["name"], "noop", "{new:?}");
}

/// Calls `tool` on the hostile remote through a bridge with a 2-second
/// timeout, then a well-behaved tool, which must still work; the first
/// call's (messages before its answer, answer).
fn hostile_call(tool: &str) -> (Vec<Value>, Value) {
    let remote = ScriptedRemote::start(&["hostile"]);
    let mut host = Host::start(&remote.url, &["--timeout", "2", "--retries", "0"]);
    let call = |host: &mut Host, id: i64, tool: &str| {
        host.send(req(
            "modern",
            json!(id),
            "tools/call",
            json!({"name": tool, "arguments": {}}),
        ));
        host.answer_for(&json!(id))
    };
    let got = call(&mut host, 1, tool);
    let (_, ok) = call(&mut host, 2, "ok");
    assert_eq!(text_of(&ok), "ok", "the bridge no longer serves: {ok}");
    let (code, stderr) = host.finish();
    assert_eq!(code, Some(0), "{stderr}");
    got
}

fn error_of(answer: &Value) -> String {
    answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
        .to_owned()
}

#[test]
fn a_50_mib_answer_fails_that_call_past_the_message_limit() {
    // Refused past Limits::max_message (16 MiB), never buffered whole.
    let (_, big) = hostile_call("big");
    assert!(error_of(&big).contains("larger than"), "{big}");
}

#[test]
fn an_endless_stream_without_an_answer_fails_after_the_timeout() {
    // Keep-alive comments forever: only a message restarts the timeout.
    let (others, endless) = hostile_call("endless");
    assert!(error_of(&endless).contains("no message"), "{endless}");
    assert!(others.is_empty(), "{others:?}");
}

#[test]
fn a_garbage_event_stream_fails_that_call() {
    let (others, garbage) = hostile_call("garbage");
    assert!(garbage.get("error").is_some(), "{garbage}");
    assert!(
        others.is_empty(),
        "nothing of it reaches the host: {others:?}"
    );
}

#[test]
fn an_answer_with_the_wrong_id_is_dropped_and_the_call_fails() {
    let (others, wrong) = hostile_call("wrong-id");
    assert!(error_of(&wrong).contains("without answering"), "{wrong}");
    assert!(others.is_empty(), "{others:?}");
}

#[test]
fn a_notification_flood_is_relayed_and_the_answer_follows() {
    // 20000 notifications before the answer: relayed with backpressure
    // (bounded channels), then the answer.
    let (flood, done) = hostile_call("flood");
    assert_eq!(flood.len(), 20000);
    assert_eq!(text_of(&done), "after the flood", "{done}");
}

#[test]
fn a_read_only_request_is_retried_after_a_dropped_connection() {
    // The remote closes the connection without answering, twice.
    let remote = ScriptedRemote::start(&["drop", "2"]);
    let mut host = Host::start(&remote.url, &[]);
    let list = host.call(req("modern", json!(1), "tools/list", json!({})));
    assert_eq!(tool_names(&list), ["ro", "idem", "rw"], "{list}");
    assert_eq!(attempts(&remote, "tools/list", None), 3);
    // Not for a tool that may change something: one attempt, an error.
    let done = host.call(req(
        "modern",
        json!(2),
        "tools/call",
        json!({"name": "rw", "arguments": {}}),
    ));
    assert!(done.get("error").is_some(), "{done}");
    assert_eq!(attempts(&remote, "tools/call", Some("rw")), 1);
}
