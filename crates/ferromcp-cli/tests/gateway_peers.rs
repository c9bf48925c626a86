//! `mcp gateway` with upstreams nobody here wrote, and clients nobody here
//! wrote: npm `@modelcontextprotocol/server-memory` and
//! `@modelcontextprotocol/server-filesystem` and PyPI `mcp-server-time`
//! (stdio, pinned, installed by scripts/gateway-peers.sh) aggregated with
//! the everything-server and a Python SDK server over Streamable HTTP
//! (`tests/python/server.py`, an `MCPServer` of PyPI `mcp` 2.3.0); the
//! Python SDK (the venv of scripts/python-peer.sh) calling `memory__…`,
//! `time__…`, `py__…` and `ev__…` tools through the gateway over Streamable
//! HTTP in both eras, and the
//! TypeScript SDK (npm `@modelcontextprotocol/sdk` 1.32.2) calling the
//! filesystem server's tools, the allowed ones and the denied ones.
//!
//! Without the installed peers the test is skipped with a loud message;
//! with `CI` set it fails instead, so CI never goes green without running it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use common::python_remote::PythonRemote;
use common::{MCP, scratch};
use serde_json::{Value, json};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Long enough to never fire on a slow CI machine; only guards against a hang.
const WAIT: Duration = Duration::from_secs(90);

/// The installed peers.
struct Peers {
    /// The npm folder's `node_modules`.
    modules: PathBuf,
    /// The time server's venv python.
    time: PathBuf,
    /// The Python SDK's venv python.
    client: PathBuf,
}

impl Peers {
    /// An npm server's entry point.
    fn npm(&self, package: &str) -> PathBuf {
        self.modules
            .join("@modelcontextprotocol")
            .join(package)
            .join("dist/index.js")
    }
}

/// The installed peers, or `None` after a loud message.
fn peers() -> Option<Peers> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(default))
    };
    let gw = dir("MCP_GATEWAY_PEERS_DIR", "target/gateway-peers");
    let sdk = dir("MCP_PYTHON_PEER_DIR", "target/python-peer");
    let modules = gw.join("npm/node_modules");
    let npm_files = [
        "@modelcontextprotocol/server-memory/dist/index.js",
        "@modelcontextprotocol/server-filesystem/dist/index.js",
        "@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js",
    ];
    let time = gw.join("time/bin/python");
    let client = sdk.join("v2/bin/python");
    let imports = |py: &PathBuf, module: &str| {
        Command::new(py)
            .args(["-c", &format!("import {module}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if node
        && npm_files.iter().all(|f| modules.join(f).is_file())
        && imports(&time, "mcp_server_time")
        && imports(&client, "mcp")
    {
        return Some(Peers {
            modules,
            time,
            client,
        });
    }
    let msg = format!(
        "the gateway's third-party peers are not installed ({} and {}): run `bash scripts/gateway-peers.sh` and `bash scripts/python-peer.sh`",
        gw.display(),
        sdk.display()
    );
    common::peer_missing(&msg, "CI must run the gateway interop test");
    None
}

/// Runs the Python SDK client script; its JSON lines by step.
fn python_client(python: &PathBuf, url: &str, mode: &str) -> Vec<Value> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/gateway_client.py");
    let mut cmd = Command::new(python);
    cmd.arg(script)
        .args([url, mode])
        .env("PYTHONDONTWRITEBYTECODE", "1");
    client_lines(cmd, mode)
}

/// Runs a client script to its end (a hang fails the test); its JSON lines.
fn client_lines(mut cmd: Command, what: &str) -> Vec<Value> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let deadline = Instant::now() + WAIT;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the client hung ({what})");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = String::new();
    let mut err = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{what}: {status}\n{out}\n{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn step<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["step"] == name)
        .unwrap_or_else(|| panic!("no step {name} in {lines:?}"))
}

/// The tool names the client's `tools/list` step saw.
fn listed(lines: &[Value]) -> Vec<&str> {
    step(lines, "tools/list")["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}

fn text(lines: &[Value], name: &str) -> String {
    let s = step(lines, name);
    assert_eq!(s["is_error"], false, "{s}");
    s["text"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn third_party_upstreams_behind_the_gateway_serve_the_python_sdk() {
    let Some(p) = peers() else {
        return;
    };
    let (memory, time, client) = (p.npm("server-memory"), &p.time, &p.client);
    let dir = scratch("gateway-peers");
    let memory_file = dir.join("memory.jsonl");
    let _ = std::fs::remove_file(&memory_file);
    // The Python SDK's own HTTP server as an upstream (both eras; the
    // gateway finds which with server/discover).
    let remote = PythonRemote::start(client, "server.py");
    let config = json!({"mcpServers": {
        "memory": {"command": "node", "args": [memory],
                   "env": {"MEMORY_FILE_PATH": memory_file}},
        "time": {"command": time, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "ev": {"command": MCP, "args": ["serve", "--stdio"]},
        "py": {"url": remote.url},
    }});
    let g = Gateway::start_at(&dir, &config, &[], "127.0.0.1:0", WAIT);
    assert!(
        g.seen.contains("4 of 4 upstream(s) connected"),
        "{}",
        g.seen
    );
    let url = format!("http://{}/mcp", g.addr);
    for mode in ["legacy", "2026-07-28"] {
        let lines = python_client(client, &url, mode);
        let names = listed(&lines);
        for t in [
            "memory__create_entities",
            "memory__read_graph",
            "time__get_current_time",
            "time__convert_time",
            "ev__echo",
            "py__echo",
            "py__count_with_progress",
        ] {
            assert!(names.contains(&t), "{mode}: no {t} in {names:?}");
        }
        assert!(
            names.iter().all(|n| n.starts_with("memory__")
                || n.starts_with("time__")
                || n.starts_with("py__")
                || n.starts_with("ev__")),
            "{names:?}"
        );
        let created = text(&lines, "memory__create_entities");
        assert!(created.contains(&format!("gateway-{mode}")), "{created}");
        let graph = text(&lines, "memory__read_graph");
        assert!(graph.contains(&format!("gateway-{mode}")), "{graph}");
        assert!(graph.contains("seen through mcp gateway"), "{graph}");
        let now: Value = serde_json::from_str(&text(&lines, "time__get_current_time")).unwrap();
        assert_eq!(now["timezone"], "Europe/Paris", "{now}");
        let conv: Value = serde_json::from_str(&text(&lines, "time__convert_time")).unwrap();
        assert_eq!(conv["target"]["timezone"], "Asia/Tokyo", "{conv}");
        assert!(
            conv["target"]["datetime"]
                .as_str()
                .unwrap()
                .contains("T21:00:00"),
            "{conv}"
        );
        assert_eq!(text(&lines, "ev__echo"), "through the gateway");
        assert_eq!(
            text(&lines, "py__echo"),
            format!("python echo: {mode} through the gateway")
        );
        step(&lines, "closed");
    }
    // The memory server kept what both clients created, in its own file.
    let stored = std::fs::read_to_string(&memory_file).unwrap();
    assert!(
        stored.contains("gateway-legacy") && stored.contains("gateway-2026-07-28"),
        "{stored}"
    );
}

/// The error a step observed (a JSON-RPC error the SDK threw).
fn refused(lines: &[Value], name: &str) -> String {
    let s = step(lines, name);
    s["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} was not refused: {s}"))
        .to_owned()
}

#[test]
fn the_typescript_sdk_calls_the_filesystem_server_through_the_gateway_under_its_deny_list() {
    let Some(p) = peers() else {
        return;
    };
    let dir = scratch("gateway-peers-ts");
    let shared = dir.join("shared");
    let _ = std::fs::remove_dir_all(&shared);
    std::fs::create_dir_all(&shared).unwrap();
    // The filesystem server answers with the canonical path of its folder.
    let shared = shared.canonicalize().unwrap();
    let file = shared.join("notes.txt");
    std::fs::write(&file, "written by the test\n").unwrap();
    let memory_file = dir.join("memory.jsonl");
    let _ = std::fs::remove_file(&memory_file);
    let config = json!({"mcpServers": {
        "fs": {"command": "node", "args": [p.npm("server-filesystem"), &shared],
               "denyTools": ["write_*", "edit_*", "move_*", "create_*"]},
        "memory": {"command": "node", "args": [p.npm("server-memory")],
                   "env": {"MEMORY_FILE_PATH": memory_file}},
        "ev": {"command": MCP, "args": ["serve", "--stdio"]},
    }});
    let g = Gateway::start_at(&dir, &config, &[], "127.0.0.1:0", WAIT);
    assert!(
        g.seen.contains("3 of 3 upstream(s) connected"),
        "{}",
        g.seen
    );
    let url = format!("http://{}/mcp", g.addr);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/node/gateway_client.mjs");
    let mut cmd = Command::new("node");
    cmd.arg(script).arg(&url).arg(&p.modules).arg(&file);
    let lines = client_lines(cmd, "node gateway_client.mjs");

    // The SDK negotiated a handshake session with the gateway.
    let connected = step(&lines, "connected");
    assert!(connected["session"].is_string(), "{connected}");
    let names = listed(&lines);
    for t in [
        "fs__read_text_file",
        "fs__list_directory",
        "fs__list_allowed_directories",
        "memory__read_graph",
        "ev__echo",
    ] {
        assert!(names.contains(&t), "no {t} in {names:?}");
    }
    for t in [
        "fs__write_file",
        "fs__edit_file",
        "fs__move_file",
        "fs__create_directory",
    ] {
        assert!(!names.contains(&t), "{t} is denied but listed: {names:?}");
    }
    let allowed = text(&lines, "fs__list_allowed_directories");
    assert!(
        allowed.contains(shared.to_str().unwrap()),
        "{allowed} does not name {}",
        shared.display()
    );
    assert_eq!(text(&lines, "fs__read_text_file"), "written by the test\n");
    // Denied tools called by name anyway: refused by the gateway, like an
    // invented name, and the upstream never acted on them.
    for t in ["fs__write_file", "fs__move_file"] {
        let e = refused(&lines, t);
        assert!(e.contains(t), "{t}: {e}");
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "written by the test\n"
    );
    assert!(!shared.join("notes.txt.moved").exists());
    assert!(text(&lines, "memory__read_graph").contains("entities"));
    assert_eq!(text(&lines, "ev__echo"), "typescript through the gateway");
    step(&lines, "closed");
}
