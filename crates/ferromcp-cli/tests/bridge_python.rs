//! `mcp bridge URL` between real peers nobody here wrote: the Python SDK
//! (PyPI `mcp`, pinned in interop/python/requirements-v2.txt and -v1.txt,
//! installed by scripts/python-peer.sh) as the stdio host in front of the
//! bridge, and as the Streamable HTTP remote behind it.
//!
//! The Python side is in tests/python/: `host.py` drives the bridge through
//! the SDK's own `Client` and prints one JSON line per step; `server.py` is an
//! `MCPServer` (mcp 2.3.0, the SDK's FastMCP) serving both eras on one
//! endpoint; `server_v1.py` is a FastMCP of the 1.x line (mcp 1.30.0), which
//! serves the initialize handshake only.
//!
//! Without the venvs the tests print a loud SKIPPED message and pass; with
//! `CI` set they fail instead, so CI never goes green without running them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::python_remote::{PythonRemote, script};
use common::{HttpServer, MCP, free_port, wait_listening};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Long enough to never fire on a slow CI machine; only guards against a hang.
const WAIT: Duration = Duration::from_secs(60);

/// The interpreters of the two pinned venvs of scripts/python-peer.sh.
struct Peers {
    /// mcp 2.3.0: both eras.
    v2: PathBuf,
    /// mcp 1.30.0: the initialize handshake only.
    v1: PathBuf,
}

/// The pinned venvs, or `None` (after a loud message) when they are not
/// installed; panics instead when `CI` is set.
fn python() -> Option<Peers> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("MCP_PYTHON_PEER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/python-peer"));
    let peers = Peers {
        v2: dir.join("v2/bin/python"),
        v1: dir.join("v1/bin/python"),
    };
    let imports = |py: &PathBuf, modules: &str| {
        Command::new(py)
            .args(["-c", &format!("import {modules}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if imports(&peers.v2, "mcp.client.stdio, mcp.server.mcpserver")
        && imports(&peers.v1, "mcp.server.fastmcp")
    {
        return Some(peers);
    }
    let msg = format!(
        "the Python SDK peers are not installed in {}: run `bash scripts/python-peer.sh`",
        dir.display()
    );
    common::peer_missing(&msg, "CI must run the Python interop tests");
    None
}

/// Waits for `child` with a deadline (a hang fails the test, never blocks
/// it); kills it when the deadline passes.
fn wait_deadline(child: &mut Child) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs tests/python/host.py: the SDK's `Client` in `mode` starting
/// `mcp bridge URL` as its stdio server, going through the fixtures of
/// `scenario` ("everything" or "fastmcp"). Returns each step's observations.
fn python_host(py: &Peers, url: &str, mode: &str, scenario: &str) -> HashMap<String, Value> {
    let mut child = Command::new(&py.v2)
        .arg(script("host.py"))
        .args([MCP, url, mode, scenario])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the Python host");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = wait_deadline(&mut child);
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(
        status.is_some_and(|s| s.success()),
        "the Python host ({mode}) failed: {status:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    let mut steps = HashMap::new();
    for line in out.lines() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a step line ({e}): {line}\nstderr:\n{err}"));
        steps.insert(v["step"].as_str().unwrap().to_owned(), v);
    }
    assert!(steps.contains_key("closed"), "{out}\n{err}");
    steps
}

/// What the Python host must have seen from the everything-server, whatever
/// the era pairing behind the bridge.
fn assert_everything_steps(s: &HashMap<String, Value>) {
    let names = s["tools/list"]["names"].as_array().unwrap();
    for t in [
        "echo",
        "test_tool_with_progress",
        "test_elicitation",
        "test_sampling",
    ] {
        assert!(names.contains(&json!(t)), "{t} missing: {names:?}");
    }
    assert_eq!(s["echo"]["text"], json!(["from python"]), "{:?}", s["echo"]);
    assert_eq!(s["echo"]["is_error"], false);
    // Progress crossed (three notifications, routed by the SDK to the
    // callback of this call).
    assert_eq!(
        s["progress"]["updates"].as_array().unwrap().len(),
        3,
        "{:?}",
        s["progress"]
    );
    // Elicitation: the SDK's callback was asked and its answer reached the
    // remote's tool.
    assert_eq!(s["elicitation"]["asked"], json!(["Your colour?"]));
    let text = s["elicitation"]["text"][0].as_str().unwrap();
    assert!(
        text.contains("accept") && text.contains("teal"),
        "{:?}",
        s["elicitation"]
    );
    // Sampling likewise.
    assert_eq!(s["sampling"]["asked"], json!(["Say hi"]));
    assert_eq!(
        s["sampling"]["text"],
        json!(["LLM response: hello from the python host"])
    );
    let uris = s["resources"]["uris"].as_array().unwrap();
    assert!(uris.contains(&json!("test://static-text")), "{uris:?}");
    assert_eq!(
        s["resources"]["text"],
        json!(["This is the content of the static text resource."])
    );
    let prompts = s["prompts"]["names"].as_array().unwrap();
    assert!(
        prompts.contains(&json!("test_simple_prompt")),
        "{prompts:?}"
    );
    assert_eq!(
        s["prompts"]["messages"],
        json!(["This is a simple prompt for testing."])
    );
}

// Pairing: handshake host (Python SDK, initialize) ↔ both-era remote.
#[test]
fn python_sdk_host_in_the_handshake_era_uses_a_both_era_remote() {
    let Some(py) = python() else { return };
    let server = HttpServer::start(&[]);
    let s = python_host(&py, &server.url, "legacy", "everything");
    assert_eq!(s["initialize"]["protocol_version"], "2025-11-25");
    assert_eq!(
        s["initialize"]["server_name"], "mcp-rs-everything-server",
        "{:?}",
        s["initialize"]
    );
    assert_everything_steps(&s);
}

// Pairing: 2026-07-28 host (Python SDK) ↔ both-era remote (passthrough).
#[test]
fn python_sdk_host_in_the_modern_era_uses_a_both_era_remote() {
    let Some(py) = python() else { return };
    let server = HttpServer::start(&[]);
    let s = python_host(&py, &server.url, "2026-07-28", "everything");
    assert_eq!(s["initialize"]["protocol_version"], "2026-07-28");
    assert_everything_steps(&s);
}

// Pairing: the SDK's "auto" mode probes server/discover (DISC-01) through
// the bridge and settles on 2026-07-28.
#[test]
fn python_sdk_host_in_auto_mode_discovers_through_the_bridge() {
    let Some(py) = python() else { return };
    let server = HttpServer::start(&[]);
    let s = python_host(&py, &server.url, "auto", "everything");
    assert_eq!(s["initialize"]["protocol_version"], "2026-07-28");
    assert_eq!(
        s["initialize"]["server_name"], "mcp-rs-everything-server",
        "{:?}",
        s["initialize"]
    );
    assert_everything_steps(&s);
}

/// The everything-server with the handshake era switched off, in process.
struct ModernOnlyServer {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ModernOnlyServer {
    fn start() -> Self {
        let addr: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let server = ferromcp_everything::everything_builder()
            .handshake_era(false)
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
        wait_listening(&addr.to_string());
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

// Pairing: handshake host (Python SDK) ↔ 2026-07-28-only remote: the bridge
// answers initialize from server/discover, and the remote's input_required
// rounds reach the SDK as pushed elicitation/sampling requests.
#[test]
fn python_sdk_handshake_host_is_translated_to_a_modern_only_remote() {
    let Some(py) = python() else { return };
    let server = ModernOnlyServer::start();
    let s = python_host(&py, &server.url, "legacy", "everything");
    assert_eq!(s["initialize"]["protocol_version"], "2025-11-25");
    assert_eq!(
        s["initialize"]["server_name"], "mcp-rs-everything-server",
        "{:?}",
        s["initialize"]
    );
    assert_everything_steps(&s);
}

// Pairing: 2026-07-28 host (Python SDK) ↔ 2026-07-28-only remote.
#[test]
fn python_sdk_modern_host_uses_a_modern_only_remote() {
    let Some(py) = python() else { return };
    let server = ModernOnlyServer::start();
    let s = python_host(&py, &server.url, "2026-07-28", "everything");
    assert_eq!(s["initialize"]["protocol_version"], "2026-07-28");
    assert_everything_steps(&s);
}

/// The test as the host: the bridge as a child process on stdio.
struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Value>,
}

impl Host {
    fn start(url: &str) -> Self {
        let mut child = Command::new(MCP)
            .args(["bridge", url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp bridge");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on the bridge's stdout ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self { child, stdin, rx }
    }

    fn send(&mut self, v: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// Messages until the answer for `id`, answering each pushed
    /// `elicitation/create` with `colour`; returns (others, answer).
    fn answer_for(&mut self, id: &Value, colour: &str) -> (Vec<Value>, Value) {
        let mut others = Vec::new();
        loop {
            let Ok(m) = self.rx.recv_timeout(WAIT) else {
                panic!("no answer for {id} (hang?); got {others:?}");
            };
            if m.get("id") == Some(id) && m.get("method").is_none() {
                return (others, m);
            }
            if m["method"] == "elicitation/create" && m.get("id").is_some() {
                self.send(&json!({
                    "jsonrpc": "2.0", "id": m["id"],
                    "result": {"action": "accept", "content": {"colour": colour}}
                }));
            }
            others.push(m);
        }
    }

    fn call(&mut self, v: Value) -> (Vec<Value>, Value) {
        let id = v["id"].clone();
        self.send(&v);
        self.answer_for(&id, "teal")
    }

    /// Closes stdin; the bridge must exit on its own.
    fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        wait_deadline(&mut self.child).and_then(|s| s.code())
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn texts(answer: &Value) -> Vec<&str> {
    answer["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {answer}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

/// The 2026-07-28 `_meta` envelope added to `params`.
fn modern(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bridge-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
    });
    params
}

// Pairing: handshake host ↔ the Python SDK's server. The SDK's server/discover
// lists only 2026-07-28 (although it also serves initialize), so the bridge
// translates: it answers initialize from discover, and the tool's
// input_required round reaches the host as a pushed elicitation/create.
#[test]
fn a_handshake_host_uses_the_python_sdk_server() {
    let Some(py) = python() else { return };
    let remote = PythonRemote::start(&py.v2, "server.py");
    let mut host = Host::start(&remote.url);
    let (_, init) = host.call(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "bridge-test", "version": "1"}
        }
    }));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(
        init["result"]["serverInfo"]["name"], "python-sdk-remote",
        "{init}"
    );
    host.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let (_, tools) = host.call(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let mut names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{tools}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["ask_colour", "count_with_progress", "echo"]);

    let (_, echo) = host.call(json!({
        "jsonrpc": "2.0", "id": "e", "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}}
    }));
    assert_eq!(texts(&echo), ["python echo: hi"], "{echo}");

    let (others, done) = host.call(json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "count_with_progress", "arguments": {"steps": 4}, "_meta": {"progressToken": "p"}}
    }));
    assert_eq!(texts(&done), ["counted 4"], "{done}");
    let progress: Vec<&Value> = others
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 4, "{others:?}");
    assert!(
        progress.iter().all(|m| m["params"]["progressToken"] == "p"),
        "{progress:?}"
    );

    let (others, asked) = host.call(json!({
        "jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "ask_colour", "arguments": {}}
    }));
    let pushed: Vec<&Value> = others
        .iter()
        .filter(|m| m["method"] == "elicitation/create")
        .collect();
    assert_eq!(pushed.len(), 1, "{others:?}");
    assert_eq!(pushed[0]["params"]["message"], "Your favourite colour?");
    assert_eq!(texts(&asked), ["colour: teal (input_required)"], "{asked}");

    let (_, list) = host.call(json!({"jsonrpc": "2.0", "id": 5, "method": "resources/list"}));
    assert_eq!(
        list["result"]["resources"][0]["uri"], "note://greeting",
        "{list}"
    );
    let (_, read) = host.call(json!({
        "jsonrpc": "2.0", "id": 6, "method": "resources/read",
        "params": {"uri": "note://greeting"}
    }));
    assert_eq!(
        read["result"]["contents"][0]["text"], "hello from the python remote",
        "{read}"
    );

    let (_, prompts) = host.call(json!({"jsonrpc": "2.0", "id": 7, "method": "prompts/list"}));
    assert_eq!(
        prompts["result"]["prompts"][0]["name"], "summarise",
        "{prompts}"
    );
    let (_, got) = host.call(json!({
        "jsonrpc": "2.0", "id": 8, "method": "prompts/get",
        "params": {"name": "summarise", "arguments": {"topic": "bridges"}}
    }));
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "Please summarise bridges.",
        "{got}"
    );

    // A tool the remote does not have: the SDK's own error reaches the host
    // under the host's id, and the bridge keeps serving.
    let (_, missing) = host.call(json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "no_such_tool", "arguments": {}}
    }));
    assert!(
        missing.get("error").is_some() || missing["result"]["isError"] == true,
        "{missing}"
    );
    let (_, again) = host.call(json!({
        "jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "still here"}}
    }));
    assert_eq!(texts(&again), ["python echo: still here"], "{again}");

    assert_eq!(host.finish(), Some(0));
}

// Pairing: 2026-07-28 host ↔ the Python SDK's server: passthrough; the
// input_required round (MRTR-01) crosses untouched and the retried call with
// inputResponses completes.
#[test]
fn a_modern_host_uses_the_python_sdk_server() {
    let Some(py) = python() else { return };
    let remote = PythonRemote::start(&py.v2, "server.py");
    let mut host = Host::start(&remote.url);
    let (_, disc) = host.call(json!({
        "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": modern(json!({}))
    }));
    assert_eq!(
        disc["result"]["supportedVersions"],
        json!(["2026-07-28"]),
        "{disc}"
    );

    let (_, tools) = host.call(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": modern(json!({}))
    }));
    assert_eq!(
        tools["result"]["tools"].as_array().map(Vec::len),
        Some(3),
        "{tools}"
    );

    let (_, echo) = host.call(json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": modern(json!({"name": "echo", "arguments": {"text": "modern"}}))
    }));
    assert_eq!(texts(&echo), ["python echo: modern"], "{echo}");

    let mut p = modern(json!({"name": "count_with_progress", "arguments": {"steps": 2}}));
    p["_meta"]["progressToken"] = json!(7);
    let (others, done) = host.call(json!({
        "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": p
    }));
    assert_eq!(texts(&done), ["counted 2"], "{done}");
    let progress = others
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == 7)
        .count();
    assert_eq!(progress, 2, "{others:?}");

    // The MRTR round: an input_required result, then the retry.
    let (_, round) = host.call(json!({
        "jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": modern(json!({"name": "ask_colour", "arguments": {}}))
    }));
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    assert_eq!(
        round["result"]["inputRequests"]["colour"]["method"], "elicitation/create",
        "{round}"
    );
    let (_, answered) = host.call(json!({
        "jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": modern(json!({
            "name": "ask_colour", "arguments": {},
            "inputResponses": {"colour": {"action": "accept", "content": {"colour": "ochre"}}}
        }))
    }));
    assert_eq!(
        texts(&answered),
        ["colour: ochre (input_required)"],
        "{answered}"
    );

    let (_, read) = host.call(json!({
        "jsonrpc": "2.0", "id": 7, "method": "resources/read",
        "params": modern(json!({"uri": "note://greeting"}))
    }));
    assert_eq!(
        read["result"]["contents"][0]["text"], "hello from the python remote",
        "{read}"
    );
    let (_, got) = host.call(json!({
        "jsonrpc": "2.0", "id": 8, "method": "prompts/get",
        "params": modern(json!({"name": "summarise", "arguments": {"topic": "eras"}}))
    }));
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "Please summarise eras.",
        "{got}"
    );
    assert_eq!(host.finish(), Some(0));
}

// Pairing: handshake host ↔ a handshake-only remote, the SDK's 1.x FastMCP
// (it knows no server/discover: the bridge's probe is refused and the
// initialize is forwarded). Passthrough with a real session: the pushed
// elicitation/create reaches the host under an id of the bridge's, and the
// host's answer reaches the remote's tool.
#[test]
fn a_handshake_host_uses_the_handshake_only_python_sdk_v1_server() {
    let Some(py) = python() else { return };
    let remote = PythonRemote::start(&py.v1, "server_v1.py");
    let mut host = Host::start(&remote.url);
    let (_, init) = host.call(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "bridge-test", "version": "1"}
        }
    }));
    // The remote's own answer, forwarded: it negotiated the host's revision.
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(
        init["result"]["serverInfo"]["name"], "python-sdk-v1-remote",
        "{init}"
    );
    host.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let (_, tools) = host.call(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let mut names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{tools}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["ask_colour", "count_with_progress", "echo"]);

    let (_, echo) = host.call(json!({
        "jsonrpc": "2.0", "id": "e", "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}}
    }));
    assert_eq!(texts(&echo), ["python v1 echo: hi"], "{echo}");

    let (others, done) = host.call(json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "count_with_progress", "arguments": {"steps": 3}, "_meta": {"progressToken": "p"}}
    }));
    assert_eq!(texts(&done), ["counted 3"], "{done}");
    let progress = others
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == "p")
        .count();
    assert_eq!(progress, 3, "{others:?}");

    // Two elicitations in a row: each pushed request gets a fresh id from
    // the bridge, and each answer reaches the right tool call.
    for (id, colour) in [(4, "teal"), (5, "ochre")] {
        host.send(&json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ask_colour", "arguments": {}}
        }));
        let (others, asked) = host.answer_for(&json!(id), colour);
        let pushed: Vec<&Value> = others
            .iter()
            .filter(|m| m["method"] == "elicitation/create")
            .collect();
        assert_eq!(pushed.len(), 1, "{others:?}");
        assert_eq!(pushed[0]["params"]["message"], "Your favourite colour?");
        assert_eq!(texts(&asked), [format!("colour: {colour}")], "{asked}");
    }

    let (_, read) = host.call(json!({
        "jsonrpc": "2.0", "id": 6, "method": "resources/read",
        "params": {"uri": "note://greeting"}
    }));
    assert_eq!(
        read["result"]["contents"][0]["text"], "hello from the python v1 remote",
        "{read}"
    );
    let (_, got) = host.call(json!({
        "jsonrpc": "2.0", "id": 7, "method": "prompts/get",
        "params": {"name": "summarise", "arguments": {"topic": "sessions"}}
    }));
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "Please summarise sessions.",
        "{got}"
    );
    // An unknown method crosses to the remote, whose own error (this SDK
    // answers -32602, not -32601) comes back under the host's id; the
    // session goes on.
    let (_, unknown) = host.call(json!({"jsonrpc": "2.0", "id": 8, "method": "vendor/made-up"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let (_, again) = host.call(json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "still here"}}
    }));
    assert_eq!(texts(&again), ["python v1 echo: still here"], "{again}");
    assert_eq!(host.finish(), Some(0));
}

/// What the Python host must have seen from tests/python/server.py or
/// server_v1.py (`echo_prefix` tells them apart).
fn assert_fastmcp_steps(s: &HashMap<String, Value>, echo_prefix: &str, greeting: &str) {
    assert_fastmcp_steps_but_elicitation(s, echo_prefix, greeting);
    assert_eq!(s["elicitation"]["asked"], json!(["Your favourite colour?"]));
    let text = s["elicitation"]["text"][0].as_str().unwrap();
    assert!(text.starts_with("colour: teal"), "{:?}", s["elicitation"]);
}

/// [`assert_fastmcp_steps`] without the elicitation step.
fn assert_fastmcp_steps_but_elicitation(
    s: &HashMap<String, Value>,
    echo_prefix: &str,
    greeting: &str,
) {
    assert_eq!(
        s["tools/list"]["names"],
        json!(["ask_colour", "count_with_progress", "echo"])
    );
    assert_eq!(
        s["echo"]["text"],
        json!([format!("{echo_prefix}: from python")]),
        "{:?}",
        s["echo"]
    );
    assert_eq!(s["progress"]["updates"], json!([1.0, 2.0, 3.0]));
    assert_eq!(s["resources"]["text"], json!([greeting]));
    assert_eq!(
        s["prompts"]["messages"],
        json!(["Please summarise bridges."])
    );
}

// Pairing: nobody here wrote either end: the Python SDK's Client in front of
// the bridge, its MCPServer behind it, in each of the client's modes. A
// handshake client is translated (the server's discover lists only
// 2026-07-28); auto and 2026-07-28 pass through.
#[test]
fn python_sdk_host_uses_the_python_sdk_server_through_the_bridge() {
    let Some(py) = python() else { return };
    let remote = PythonRemote::start(&py.v2, "server.py");
    for (mode, version) in [
        ("legacy", "2025-11-25"),
        ("auto", "2026-07-28"),
        ("2026-07-28", "2026-07-28"),
    ] {
        let s = python_host(&py, &remote.url, mode, "fastmcp");
        assert_eq!(s["initialize"]["protocol_version"], version, "{mode}");
        assert_fastmcp_steps(&s, "python echo", "hello from the python remote");
    }
}

// Pairing: the Python SDK's Client in front of the bridge, the SDK's
// handshake-only 1.x FastMCP behind it. In legacy mode the session passes
// through. In auto mode the client's server/discover gets the remote's
// refusal through the bridge and the client falls back to initialize; once
// a 2026-07-28 host is translated to a handshake-only remote, auto (and the
// 2026-07-28 mode, which fails today with the remote's "Missing session ID")
// should settle on 2026-07-28 and see the same steps.
#[test]
fn python_sdk_host_uses_the_handshake_only_python_sdk_v1_server() {
    let Some(py) = python() else { return };
    let remote = PythonRemote::start(&py.v1, "server_v1.py");
    let s = python_host(&py, &remote.url, "legacy", "fastmcp");
    assert_eq!(s["initialize"]["protocol_version"], "2025-11-25");
    assert_eq!(s["initialize"]["server_name"], "python-sdk-v1-remote");
    assert_fastmcp_steps(&s, "python v1 echo", "hello from the python v1 remote");
    // Auto mode: the host discovers, the bridge translates it to a
    // 2026-07-28 session of the handshake-only remote. The elicitation,
    // an input_required round for this host, has its own test below.
    let s = python_host(&py, &remote.url, "auto", "fastmcp");
    assert_eq!(s["initialize"]["server_name"], "python-sdk-v1-remote");
    assert_fastmcp_steps_but_elicitation(&s, "python v1 echo", "hello from the python v1 remote");
}

// MRTR-15: for a 2026-07-28 host of a handshake-only remote the bridge
// maps the remote's pushed elicitation/create onto an input_required round
// that the Python SDK's client answers with its elicitation callback.
#[test]
fn python_sdk_auto_host_gets_the_handshake_only_remotes_elicitation() {
    let Some(py) = python() else { return };
    let remote = PythonRemote::start(&py.v1, "server_v1.py");
    let s = python_host(&py, &remote.url, "auto", "fastmcp");
    assert_fastmcp_steps(&s, "python v1 echo", "hello from the python v1 remote");
}
