//! `mcp gateway --config FILE (--http HOST:PORT | --stdio)`: real processes
//! all the way. Upstreams: the everything-server over stdio (`mcp serve
//! --stdio`) and over HTTP in both eras (`mcp serve --http`, `--era
//! handshake`), `tests/fixtures/expose_child.py` (hangs and crashes on
//! demand) and `tests/fixtures/recording_upstream.py` (records every
//! request it gets, answers 401 for one tool). Clients: raw HTTP/1.1 in
//! both eras (ids and headers chosen by the test) and the `mcp` CLI over
//! the gateway's stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::{Gateway, get_stream, until_message};
use common::raw::{Client, HANDSHAKE, MODERN, WAIT, text_of, tool_names};
use common::{HttpServer, MCP, free_port, run_with, scratch, wait_listening};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `recording_upstream.py`; killed on drop.
struct Recorder {
    child: Child,
    url: String,
    file: std::path::PathBuf,
}

impl Recorder {
    fn start(dir: &std::path::Path) -> Self {
        let file = dir.join("recorded.jsonl");
        let _ = std::fs::remove_file(&file);
        let mut child = Command::new("python3")
            .arg(fixture("recording_upstream.py"))
            .env("RECORD_FILE", &file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 recording_upstream.py");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut port = String::new();
        out.read_line(&mut port).unwrap();
        let url = format!("http://127.0.0.1:{}/mcp", port.trim());
        wait_listening(&url[7..url.len() - 4]);
        Self { child, url, file }
    }

    /// Every request it received: (headers, body).
    fn recorded(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.file)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The names of the tools called on it.
    fn calls(&self) -> Vec<String> {
        self.recorded()
            .iter()
            .filter(|r| r["body"]["method"] == "tools/call")
            .map(|r| r["body"]["params"]["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn everything_stdio() -> Value {
    json!({"command": MCP, "args": ["serve", "--stdio"]})
}

/// Polls `tools/list` until `name` is (or is not) listed.
fn until_tool(c: &Client, name: &str, present: bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        let names = tool_names(c);
        if names.iter().any(|n| n == name) == present {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name} present={present}: {names:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn stdio_and_http_upstreams_of_both_eras_behind_one_endpoint() {
    let modern_http = HttpServer::start(&[]);
    let handshake_http = HttpServer::start(&["--era", "handshake"]);
    let dir = scratch("gateway-aggregate");
    let config = json!({"mcpServers": {
        "web": {"url": modern_http.url},
        "ev": everything_stdio(),
        "old": {"url": handshake_http.url, "prefix": "legacy"},
    }});
    let mut g = Gateway::start(&dir, &config, &[]);
    assert!(g.stderr_until("3 of 3 upstream(s) connected"), "{}", g.seen);
    // All three serve the same resources: each keeps its own, under a
    // rewritten URI, and nothing is lost to a collision.
    assert!(!g.seen.contains("collides"), "{}", g.seen);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&g.addr, era);
        let names = tool_names(&c);
        for t in ["ev__greet", "legacy__greet", "web__greet"] {
            assert!(names.iter().any(|n| n == t), "{era}: no {t} in {names:?}");
        }
        // Deterministic order: by upstream name, each upstream's own order.
        let first = |p: &str| names.iter().position(|n| n.starts_with(p)).unwrap();
        assert!(first("ev__") < first("legacy__") && first("legacy__") < first("web__"));
        assert_eq!(names, tool_names(&c), "{era}: the order is stable");
        assert!(names.iter().all(|n| n.contains("__")), "{names:?}");
        for (i, t) in ["ev__greet", "legacy__greet", "web__greet"]
            .iter()
            .enumerate()
        {
            let a = c.call(json!(i), t, json!({"name": era}));
            assert_eq!(text_of(&a), format!("Hello, {era}!"), "{t}: {a}");
            // The upstream's own protocol _meta (its serverInfo) stays behind.
            assert!(!a.to_string().contains("mcp-rs-everything-server"), "{a}");
        }
        let p = c.request(
            json!(10),
            "prompts/get",
            json!({"name": "legacy__test_prompt_with_arguments",
                   "arguments": {"arg1": "one", "arg2": "two"}}),
        );
        let text = p["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{p}"));
        assert!(text.contains("one") && text.contains("two"), "{p}");
        for (i, prefix) in ["ev", "legacy", "web"].iter().enumerate() {
            let uri = format!("mcp-gateway://{prefix}/test://static-text");
            let r = c.request(json!(11 + i), "resources/read", json!({"uri": uri}));
            assert!(
                r["result"]["contents"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("static text"),
                "{r}"
            );
            assert_eq!(r["result"]["contents"][0]["uri"], uri.as_str(), "{r}");
        }
        let t = c.request(json!(15), "resources/templates/list", json!({}));
        let templates = t["result"]["resourceTemplates"].as_array().unwrap();
        for prefix in ["ev", "legacy", "web"] {
            let want = format!("mcp-gateway://{prefix}/test://template/{{id}}/data");
            assert!(
                templates.iter().any(|t| t["uriTemplate"] == want.as_str()),
                "{want}: {t}"
            );
        }
        let r = c.request(
            json!(16),
            "resources/read",
            json!({"uri": "mcp-gateway://web/test://template/42/data"}),
        );
        assert!(r["result"]["contents"][0].is_object(), "{r}");
    }
}

#[test]
fn the_gateway_serves_stdio_too_in_both_eras() {
    let dir = scratch("gateway-stdio");
    let file = dir.join("gateway.json");
    let config = json!({"mcpServers": {"ev": everything_stdio()}});
    std::fs::write(&file, config.to_string()).unwrap();
    let file = file.to_string_lossy().into_owned();
    for era in ["modern", "handshake"] {
        let args: Vec<String> = [
            "call",
            "--era",
            era,
            "ev__greet",
            "name=stdio",
            "--",
            MCP,
            "gateway",
            "--config",
            &file,
            "--stdio",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let r = run_with(&args, "", &[]);
        assert_eq!(r.code, 0, "{era}: {}", r.stderr);
        assert_eq!(r.stdout.trim(), "Hello, stdio!", "{era}");
    }
}

#[test]
fn denied_invented_and_case_variant_tools_never_reach_the_upstream() {
    let dir = scratch("gateway-policy");
    let rec = Recorder::start(&dir);
    let config = json!({"mcpServers": {
        "rec": {"url": rec.url, "denyTools": ["deniedtool"], "allowTools": ["whoami", "denied*"]},
    }});
    let g = Gateway::start(&dir, &config, &[]);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&g.addr, era);
        let names = tool_names(&c);
        // secret is not allowed, deniedtool is denied.
        assert_eq!(names, ["rec__whoami"], "{era}");
        for (i, name) in [
            "rec__deniedtool",
            "rec__DeniedTool",
            "rec__DENIEDTOOL",
            "rec__secret",
            "rec__nosuch",
            "REC__whoami",
            "rec__Whoami",
            "deniedtool",
            "whoami",
        ]
        .iter()
        .enumerate()
        {
            let a = c.call(json!(i), name, json!({}));
            assert!(
                a.get("error").is_some(),
                "{era} {name} was not refused: {a}"
            );
        }
        let a = c.call(json!(99), "rec__whoami", json!({}));
        assert_eq!(text_of(&a), "ok", "{a}");
    }
    // Only the permitted tool ever reached the upstream, under its own name.
    assert_eq!(rec.calls(), ["whoami", "whoami"]);
}

#[test]
fn client_credentials_are_never_forwarded_and_a_401_names_the_upstream() {
    let dir = scratch("gateway-creds");
    let rec = Recorder::start(&dir);
    let config = json!({"mcpServers": {
        "rec": {"url": rec.url, "headers": {"X-Upstream-Key": "${UPSTREAM_KEY}"}},
    }});
    let g = Gateway::start(&dir, &config, &[("UPSTREAM_KEY", "up-key-1")]);
    let inbound = [
        ("Authorization", "Bearer client-token-xyz"),
        ("Cookie", "session=client-cookie-xyz"),
        ("X-Api-Key", "client-key-xyz"),
    ];
    for era in [MODERN, HANDSHAKE] {
        let c = Client::with_headers(&g.addr, era, json!({}), &inbound);
        let a = c.call(json!(1), "rec__whoami", json!({}));
        assert_eq!(text_of(&a), "ok", "{a}");
        let a = c.call(json!(2), "rec__secret", json!({}));
        assert_eq!(a["result"]["isError"], true, "{a}");
        let text = text_of(&a);
        assert!(text.contains("\"rec\""), "{text}");
        assert!(text.contains(&format!("mcp login {}", rec.url)), "{text}");
        assert!(text.contains("401"), "{text}");
    }
    let recorded = rec.recorded();
    assert!(recorded.len() >= 6, "{recorded:?}");
    for r in &recorded {
        let h = r["headers"].to_string();
        assert!(
            !h.contains("xyz"),
            "a client header reached the upstream: {h}"
        );
        assert!(r["headers"].get("authorization").is_none(), "{h}");
        assert!(r["headers"].get("cookie").is_none(), "{h}");
        assert_eq!(r["headers"]["x-upstream-key"], "up-key-1", "{h}");
    }
}

#[test]
fn a_dead_upstream_does_not_stop_the_gateway_and_is_picked_up_later() {
    let dir = scratch("gateway-late");
    let port = free_port();
    let config = json!({"mcpServers": {
        "ev": everything_stdio(),
        "late": {"url": format!("http://127.0.0.1:{port}/mcp"), "timeoutMs": 5000},
    }});
    let mut g = Gateway::start(&dir, &config, &[]);
    assert!(g.stderr_until("1 of 2 upstream(s) connected"), "{}", g.seen);
    assert!(g.seen.contains("upstream \"late\""), "{}", g.seen);
    let c = Client::new(&g.addr, MODERN);
    let names = tool_names(&c);
    assert!(names.iter().any(|n| n == "ev__greet"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("late__")), "{names:?}");
    let a = c.call(json!(1), "ev__greet", json!({"name": "a"}));
    assert_eq!(text_of(&a), "Hello, a!");
    // The upstream comes up: retried with backoff, its tools appear.
    let addr = format!("127.0.0.1:{port}");
    let mut late = Command::new(MCP)
        .args(["serve", "--http", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    until_tool(&c, "late__greet", true);
    let a = c.call(json!(2), "late__greet", json!({"name": "b"}));
    assert_eq!(text_of(&a), "Hello, b!");
    let _ = late.kill();
    let _ = late.wait();
}

#[test]
fn a_slow_upstream_times_out_while_the_others_answer() {
    let dir = scratch("gateway-slow");
    let config = json!({"mcpServers": {
        "ev": everything_stdio(),
        "kid": {"command": "python3", "args": [fixture("expose_child.py")], "timeoutMs": 1500},
    }});
    let g = Gateway::start(&dir, &config, &[]);
    let addr = g.addr.clone();
    let hung = std::thread::spawn(move || {
        Client::new(&addr, MODERN).call(json!(1), "kid__hang", json!({}))
    });
    let c = Client::new(&g.addr, HANDSHAKE);
    let a = c.call(json!(2), "ev__greet", json!({"name": "meanwhile"}));
    assert_eq!(text_of(&a), "Hello, meanwhile!");
    let a = hung.join().unwrap();
    assert_eq!(a["result"]["isError"], true, "{a}");
    let text = text_of(&a);
    assert!(
        text.contains("\"kid\"") && text.contains("within 1500 ms"),
        "{text}"
    );
    // The timed-out upstream still serves other calls.
    let a = c.call(json!(3), "kid__echo", json!({"text": "still here"}));
    assert_eq!(text_of(&a), "still here");
}

#[test]
fn a_breaker_stops_calls_to_a_stalled_upstream_then_one_trial_closes_it() {
    // After `failures` requests in a row with no answer in time, calls to
    // that upstream are refused at once without reaching it; the others
    // are served; after `openMs` one trial goes through and closes it.
    let dir = scratch("gateway-breaker");
    let hangs = dir.join("hangs");
    let config = json!({"mcpServers": {
        "ev": everything_stdio(),
        "kid": {"command": "python3", "args": [fixture("expose_child.py")],
                "env": {"HANG_FILE": hangs.to_str().unwrap()},
                "timeoutMs": 500, "breaker": {"failures": 2, "openMs": 2000}},
    }});
    let g = Gateway::start(&dir, &config, &[]);
    let c = Client::new(&g.addr, MODERN);
    until_tool(&c, "kid__hang", true);
    until_tool(&c, "ev__greet", true);
    let reached = || {
        std::fs::read_to_string(&hangs)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    for i in 0..2 {
        let a = c.call(json!(i), "kid__hang", json!({}));
        assert!(text_of(&a).contains("within 500 ms"), "{a}");
    }
    assert_eq!(reached(), 2);
    // Open: refused at once, naming the upstream and the breaker; the
    // upstream never sees the call.
    let a = c.call(json!(3), "kid__hang", json!({}));
    assert_eq!(a["result"]["isError"], true, "{a}");
    let text = text_of(&a);
    assert!(
        text.contains("\"kid\"")
            && text.contains("2 requests in a row")
            && text.contains("breaker"),
        "{text}"
    );
    assert_eq!(reached(), 2, "a refused call reached the upstream");
    // The other upstream is served meanwhile, in both eras.
    for era in [MODERN, HANDSHAKE] {
        let a = Client::new(&g.addr, era).call(json!(4), "ev__greet", json!({"name": "other"}));
        assert_eq!(text_of(&a), "Hello, other!", "{era}: {a}");
    }
    // After openMs: a trial call answers and the breaker closes (bounded
    // by a count of attempts, not by a measured duration).
    let mut closed = false;
    for i in 0..40 {
        let a = c.call(json!(10 + i), "kid__echo", json!({"text": "back"}));
        if a["result"]["isError"] != true && text_of(&a) == "back" {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(closed, "the breaker never let a trial through");
    let a = c.call(json!(99), "kid__echo", json!({"text": "closed"}));
    assert_eq!(text_of(&a), "closed", "{a}");
}

#[test]
fn a_stdio_upstream_killed_mid_call_fails_that_call_and_is_restarted() {
    let dir = scratch("gateway-kill");
    let starts = dir.join("starts");
    let hangs = dir.join("hangs");
    let config = json!({"mcpServers": {
        "kid": {"command": "python3", "args": [fixture("expose_child.py")],
                "env": {"STARTS_FILE": starts.to_string_lossy(), "HANG_FILE": hangs.to_string_lossy()}},
    }});
    let g = Gateway::start(&dir, &config, &[]);
    let c = Client::new(&g.addr, MODERN);
    let pid = text_of(&c.call(json!(1), "kid__pid", json!({})));
    let addr = g.addr.clone();
    let hung = std::thread::spawn(move || {
        Client::new(&addr, HANDSHAKE).call(json!(1), "kid__hang", json!({}))
    });
    let deadline = Instant::now() + WAIT;
    while std::fs::read_to_string(&hangs)
        .unwrap_or_default()
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the hang call never reached the child"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = Command::new("kill").args(["-9", &pid]).status().unwrap();
    assert!(killed.success());
    let a = hung.join().unwrap();
    assert_eq!(a["result"]["isError"], true, "{a}");
    assert!(text_of(&a).contains("\"kid\""), "{a}");
    // Restarted: a new process answers.
    let deadline = Instant::now() + WAIT;
    loop {
        let a = c.call(json!(2), "kid__pid", json!({}));
        if a["result"]["isError"] != true {
            assert_ne!(text_of(&a), pid, "the same process answered");
            break;
        }
        assert!(Instant::now() < deadline, "never restarted: {a}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let n = std::fs::read_to_string(&starts).unwrap().lines().count();
    assert_eq!(n, 2, "one start and one restart");
}

#[test]
fn names_breaking_the_tool_name_rules_are_reported_and_skipped() {
    let dir = scratch("gateway-names");
    // 120 + "__" + a name: 128 characters with up to 6, too long beyond.
    let prefix = "p".repeat(120);
    let config = json!({"mcpServers": {
        "kid": {"command": "python3", "args": [fixture("expose_child.py")], "prefix": prefix},
    }});
    let mut g = Gateway::start(&dir, &config, &[]);
    assert!(g.stderr_until("\"garbage\""), "{}", g.seen);
    assert!(g.seen.contains("tool-name rules"), "{}", g.seen);
    let c = Client::new(&g.addr, MODERN);
    let names = tool_names(&c);
    assert!(names.contains(&format!("{prefix}__crash")), "{names:?}");
    assert!(names.contains(&format!("{prefix}__echo")), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with("garbage") || n.len() > 128),
        "{names:?}"
    );
}

#[test]
fn config_errors_name_the_key_and_stop_before_anything_starts() {
    let dir = scratch("gateway-badconfig");
    let file = dir.join("bad.json");
    std::fs::write(&file, r#"{"mcpServers": {"github": {"url": "not a url"}}}"#).unwrap();
    let mut out = String::new();
    let mut child = Command::new(MCP)
        .args(["gateway", "--config"])
        .arg(&file)
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{out}");
    assert!(
        out.contains("mcpServers.github.url: not a valid URL"),
        "{out}"
    );
}

#[test]
fn an_upstreams_list_change_reaches_the_gateways_clients() {
    let modern_http = HttpServer::start(&[]);
    let handshake_http = HttpServer::start(&["--era", "handshake"]);
    let dir = scratch("gateway-listchange");
    let config = json!({"mcpServers": {
        "ev": everything_stdio(),
        "old": {"url": handshake_http.url},
        "web": {"url": modern_http.url},
    }});
    let g = Gateway::start(&dir, &config, &[]);
    let c = Client::new(&g.addr, HANDSHAKE);
    for (i, up) in ["ev", "old", "web"].iter().enumerate() {
        let dynamic = format!("{up}__dynamic_tool");
        assert!(!tool_names(&c).contains(&dynamic));
        let a = c.call(
            json!(i),
            &format!("{up}__test_trigger_tool_change"),
            json!({}),
        );
        assert_eq!(text_of(&a), "Tool list changed", "{a}");
        until_tool(&c, &dynamic, true);
        let a = c.call(json!(10 + i), &dynamic, json!({}));
        assert_eq!(text_of(&a), "dynamic", "{a}");
        // And removed again.
        c.call(
            json!(20 + i),
            &format!("{up}__test_trigger_tool_change"),
            json!({}),
        );
        until_tool(&c, &dynamic, false);
    }
}

#[test]
fn sighup_reloads_upstreams_without_dropping_the_others_or_the_clients() {
    let dir = scratch("gateway-reload");
    let starts = dir.join("starts");
    let kid = json!({"command": "python3", "args": [fixture("expose_child.py")],
                     "env": {"STARTS_FILE": starts.to_string_lossy()}});
    let config = json!({"mcpServers": {"ev": everything_stdio(), "kid": kid}});
    // No file watch: the signal alone reloads.
    let mut g = Gateway::start_with_args(&dir, &config, &["--no-watch"]);
    let pid = g.pid().to_string();
    let hup = || {
        let s = Command::new("kill").args(["-HUP", &pid]).status().unwrap();
        assert!(s.success());
    };
    // A handshake session and a modern client, both kept across reloads.
    let session = Client::new(&g.addr, HANDSHAKE);
    let modern = Client::new(&g.addr, MODERN);
    let kid_pid = text_of(&session.call(json!(1), "kid__pid", json!({})));
    // Add "ev2" and remove "ev"; "kid" unchanged.
    let config = json!({"mcpServers": {"kid": kid, "ev2": everything_stdio()}});
    std::fs::write(dir.join("gateway.json"), config.to_string()).unwrap();
    hup();
    assert!(g.stderr_until("reloaded"), "{}", g.seen);
    assert!(
        g.seen.contains("added [ev2], removed [ev], changed []"),
        "{}",
        g.seen
    );
    until_tool(&session, "ev2__greet", true);
    until_tool(&modern, "ev__greet", false);
    let a = session.call(json!(2), "ev2__greet", json!({"name": "again"}));
    assert_eq!(text_of(&a), "Hello, again!");
    let a = modern.call(json!(3), "ev__greet", json!({"name": "gone"}));
    assert!(
        a.get("error").is_some(),
        "a removed upstream's tool answered: {a}"
    );
    // The unchanged upstream was not restarted.
    assert_eq!(
        text_of(&session.call(json!(4), "kid__pid", json!({}))),
        kid_pid
    );
    assert_eq!(std::fs::read_to_string(&starts).unwrap().lines().count(), 1);
    // A file that does not validate changes nothing.
    std::fs::write(dir.join("gateway.json"), r#"{"mcpServers": {"x": {}}}"#).unwrap();
    hup();
    assert!(g.stderr_until("not reloaded"), "{}", g.seen);
    assert!(g.seen.contains("mcpServers.x"), "{}", g.seen);
    let a = session.call(json!(5), "ev2__greet", json!({"name": "still"}));
    assert_eq!(text_of(&a), "Hello, still!");
}

#[test]
fn a_saved_config_file_reloads_without_dropping_the_others_or_the_clients() {
    // As `sighup_reloads_...`, with no signal: saving the file is enough.
    let dir = scratch("gateway-watch");
    let starts = dir.join("starts");
    let kid = json!({"command": "python3", "args": [fixture("expose_child.py")],
                     "env": {"STARTS_FILE": starts.to_string_lossy()}});
    let config = json!({"mcpServers": {"ev": everything_stdio(), "kid": kid}});
    let mut g = Gateway::start_with_args(&dir, &config, &["--reload-debounce-ms", "100"]);
    // Saved as editors do: a temporary file renamed over the config (a
    // watch of the file itself would lose it).
    let save = |text: &str| {
        let tmp = dir.join(".gateway.json.swp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, dir.join("gateway.json")).unwrap();
    };
    let session = Client::new(&g.addr, HANDSHAKE);
    let modern = Client::new(&g.addr, MODERN);
    let mut stream = get_stream(&g.addr, &session);
    let kid_pid = text_of(&session.call(json!(1), "kid__pid", json!({})));
    // Add "ev2" and remove "ev"; "kid" unchanged.
    save(&json!({"mcpServers": {"kid": kid, "ev2": everything_stdio()}}).to_string());
    assert!(
        g.stderr_until("added [ev2], removed [ev], changed []"),
        "{}",
        g.seen
    );
    until_tool(&session, "ev2__greet", true);
    until_tool(&modern, "ev__greet", false);
    let a = session.call(json!(2), "ev2__greet", json!({"name": "again"}));
    assert_eq!(text_of(&a), "Hello, again!");
    let a = modern.call(json!(3), "ev__greet", json!({"name": "gone"}));
    assert!(
        a.get("error").is_some(),
        "a removed upstream's tool answered: {a}"
    );
    // The listening session was told.
    until_message(&mut stream, "notifications/tools/list_changed");
    // The unchanged upstream was not restarted.
    assert_eq!(
        text_of(&session.call(json!(4), "kid__pid", json!({}))),
        kid_pid
    );
    assert_eq!(std::fs::read_to_string(&starts).unwrap().lines().count(), 1);
    // Saved mid-edit: reported, the running configuration stays.
    save(r#"{"mcpServers": {"kid": "#);
    assert!(g.stderr_until("not reloaded"), "{}", g.seen);
    assert!(g.seen.contains("not valid JSON"), "{}", g.seen);
    let a = session.call(json!(5), "ev2__greet", json!({"name": "still"}));
    assert_eq!(text_of(&a), "Hello, still!");
    let a = modern.call(json!(6), "kid__pid", json!({}));
    assert_eq!(text_of(&a), kid_pid);
    // The next valid save applies.
    save(
        &json!({"mcpServers": {"kid": kid, "ev2": everything_stdio(), "ev": everything_stdio()}})
            .to_string(),
    );
    assert!(
        g.stderr_until("added [ev], removed [], changed []"),
        "{}",
        g.seen
    );
    until_tool(&modern, "ev__greet", true);
    let a = modern.call(json!(7), "ev__greet", json!({"name": "back"}));
    assert_eq!(text_of(&a), "Hello, back!");
    let a = session.call(json!(8), "ev2__greet", json!({"name": "kept"}));
    assert_eq!(text_of(&a), "Hello, kept!");
    assert_eq!(std::fs::read_to_string(&starts).unwrap().lines().count(), 1);
}

#[test]
fn progress_reaches_the_caller_and_its_cancellation_reaches_the_upstream() {
    use std::io::Write;
    let dir = scratch("gateway-cancel");
    let config = json!({"mcpServers": {"ev": everything_stdio()}});
    let g = Gateway::start(&dir, &config, &[]);
    let c = Client::new(&g.addr, MODERN);
    let count = || text_of(&c.call(json!(1), "ev__debug_cancellations", json!({})));
    assert_eq!(count(), "0");
    // A modern call with a progress token, read as a stream.
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "ev__debug_sleep", "arguments": {"ms": 120_000},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "progressToken": "caller-token"}}})
    .to_string();
    let mut s = std::net::TcpStream::connect(&g.addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: ev__debug_sleep\r\nContent-Length: {}\r\n\r\n{body}",
        g.addr,
        body.len()
    )
    .unwrap();
    let mut lines = BufReader::new(s.try_clone().unwrap()).lines();
    let progress = loop {
        let line = lines
            .next()
            .expect("the stream ended before any progress")
            .expect("no progress within WAIT");
        if let Some(d) = line.strip_prefix("data:") {
            let m: Value = serde_json::from_str(d.trim()).unwrap();
            if m["method"] == "notifications/progress" {
                break m;
            }
        }
    };
    // The caller's own token, not the gateway's towards the upstream.
    assert_eq!(
        progress["params"]["progressToken"], "caller-token",
        "{progress}"
    );
    // Dropping the exchange cancels the call (2026-07-28 over HTTP); the
    // upstream sees its request cancelled.
    drop(lines);
    drop(s);
    let deadline = Instant::now() + WAIT;
    while count() != "1" {
        assert!(
            Instant::now() < deadline,
            "the upstream's call was never cancelled"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn completion_goes_to_the_upstream_owning_the_prompt_or_template() {
    let dir = scratch("gateway-complete");
    let seen = dir.join("upstream-stdin.jsonl");
    // The everything-server behind a tee of what the gateway sends it.
    let teed = format!("tee {} | {MCP} serve --stdio", seen.display());
    let config = json!({"mcpServers": {"ev": {"command": "sh", "args": ["-c", teed]}}});
    let g = Gateway::start(&dir, &config, &[]);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&g.addr, era);
        let a = c.request(
            json!(1),
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "ev__test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": "test"}}),
        );
        assert_eq!(
            a["result"]["completion"]["values"],
            json!(["test1", "test2", "test3", "testing"]),
            "{era}: {a}"
        );
        let a = c.request(
            json!(2),
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
                   "argument": {"name": "resourceUri", "value": "test://static-t"}}),
        );
        assert_eq!(
            a["result"]["completion"]["values"],
            json!(["test://static-text"]),
            "{era}: {a}"
        );
        // Nothing the gateway serves: refused, no upstream asked.
        let a = c.request(
            json!(3),
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": "t"}}),
        );
        assert!(a.get("error").is_some(), "{era}: {a}");
    }
    let sent: Vec<Value> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|m: &Value| m["method"] == "completion/complete")
        .collect();
    // Two routed per era, under the upstream's own prompt name.
    assert_eq!(sent.len(), 4, "{sent:?}");
    let prompts: Vec<&Value> = sent
        .iter()
        .filter(|m| m["params"]["ref"]["type"] == "ref/prompt")
        .collect();
    assert_eq!(prompts.len(), 2);
    for m in prompts {
        assert_eq!(
            m["params"]["ref"]["name"], "test_prompt_with_arguments",
            "{m}"
        );
    }
}

#[test]
fn an_upstreams_resource_update_reaches_subscribed_clients() {
    use std::io::Write;
    let dir = scratch("gateway-updates");
    let config = json!({"mcpServers": {
        "kid": {"command": "python3", "args": [fixture("expose_child.py")]},
    }});
    let g = Gateway::start(&dir, &config, &[]);
    let c = Client::new(&g.addr, HANDSHAKE);
    let sub = c.request(json!(1), "resources/subscribe", json!({"uri": "test://r"}));
    assert!(sub.get("result").is_some(), "{sub}");
    // The session's GET stream carries notifications tied to no request.
    let mut s = std::net::TcpStream::connect(&g.addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: {HANDSHAKE}\r\nMcp-Session-Id: {}\r\n\r\n",
        g.addr,
        c.session.as_deref().unwrap_or_default()
    )
    .unwrap();
    let mut lines = BufReader::new(s).lines();
    let status = lines.next().unwrap().unwrap();
    assert!(status.contains(" 200"), "{status}");
    // The fixture announces an update of test://r only if the gateway
    // subscribed to it there.
    let t = Client::new(&g.addr, MODERN).call(json!(1), "kid__touch", json!({}));
    assert!(t.get("result").is_some(), "{t}");
    // Keep-alive comments arrive meanwhile: bounded by a deadline too.
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(Instant::now() < deadline, "no update within {WAIT:?}");
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

/// A real authorization server and the everything-server behind
/// `AuthLayer` (JWTs checked against the issuer's JWKS, scope `mcp`
/// required), served in this process.
struct Protected {
    _rt: tokio::runtime::Runtime,
    authz: std::sync::Arc<ferromcp_test_issuer::AuthServer>,
    url: String,
}

impl Protected {
    fn start() -> Self {
        use ferromcp_auth::resource::{AuthLayer, HyperFetch, JwtVerifier, ResourceUri};
        use ferromcp_server::transport::http::{HttpConfig, McpService, serve_layered};
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (authz, url) = rt.block_on(async {
            let authz = ferromcp_test_issuer::AuthServer::start().await;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let resource = ResourceUri::parse(&format!("http://{addr}/mcp")).unwrap();
            let verifier = JwtVerifier::builder(&authz.url, &resource)
                .fetcher(std::sync::Arc::new(
                    HyperFetch::new().allow_plain_http(true),
                ))
                .build()
                .unwrap();
            let layer = AuthLayer::builder(resource.clone(), verifier)
                .authorization_server(&authz.url)
                .require_scopes(["mcp"])
                .scopes_supported(["mcp"])
                .build()
                .unwrap();
            let server = ferromcp_everything::everything_builder().build().unwrap();
            let svc = McpService::new(server, HttpConfig::default());
            tokio::spawn(async move {
                let _ = serve_layered(svc, layer, listener, std::future::pending::<()>()).await;
            });
            (authz, resource.to_string())
        });
        Self {
            _rt: rt,
            authz,
            url,
        }
    }
}

// AUTH-20
/// `auth` per upstream: a bearer token from an environment variable, the
/// stored `mcp login` credentials and client credentials (a secret, or a
/// key file for `private_key_jwt`) each reach a
/// protected everything-server; an upstream without credentials is
/// refused with a message naming it and `mcp login`; and an upstream that
/// records headers sees its own token only, never another upstream's.
#[test]
fn each_upstream_gets_its_own_configured_credential() {
    let rs = Protected::start();
    let dir = scratch("gateway-upstream-auth");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let home_s = home.to_str().unwrap();
    // `mcp login URL` stores the credentials `auth.login` uses.
    let r = run_with(
        &[
            "login".into(),
            rs.url.clone(),
            "--timeout".into(),
            "30".into(),
        ],
        "",
        &[
            ("XDG_CONFIG_HOME", home_s),
            ("HOME", home_s),
            ("MCP_BROWSER", "curl -fsSL -o /dev/null"),
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    rs.authz
        .secrets
        .lock()
        .unwrap()
        .insert("gw-svc".into(), "cc-secret-777".into());
    // A private_key_jwt client: the gateway holds its key in a file.
    let (pem, jwk) = common::client_key();
    rs.authz.clients.lock().unwrap().insert(
        "gw-key".into(),
        ferromcp_test_issuer::RegisteredClient {
            redirect_uris: vec![],
            jwk: Some(jwk),
        },
    );
    let key_file = dir.join("gw-key.pem");
    std::fs::write(&key_file, pem.as_bytes()).unwrap();
    let rec = Recorder::start(&dir);
    let minted = rs.authz.mint(&rs.url, "mcp");
    let config = json!({"mcpServers": {
        "tok": {"url": rs.url, "auth": {"bearerEnv": "UP_TOKEN"}},
        "lg": {"url": rs.url, "auth": {"login": true}},
        "cc": {"url": rs.url, "auth": {"clientCredentials":
            {"clientId": "gw-svc", "clientSecretEnv": "CC_SECRET", "scope": "mcp"}}},
        "ck": {"url": rs.url, "auth": {"clientCredentials":
            {"clientId": "gw-key", "clientKeyFile": key_file, "scope": "mcp"}}},
        "rec": {"url": rec.url, "auth": {"bearerEnv": "REC_TOKEN"}},
        "bare": {"url": rs.url, "timeoutMs": 5000},
    }});
    let mut g = Gateway::start(
        &dir,
        &config,
        &[
            ("UP_TOKEN", minted.as_str()),
            ("CC_SECRET", "cc-secret-777"),
            ("REC_TOKEN", "rec-only-token"),
            ("XDG_CONFIG_HOME", home_s),
            ("HOME", home_s),
        ],
    );
    assert!(g.stderr_until("5 of 6 upstream(s) connected"), "{}", g.seen);
    assert!(g.seen.contains("upstream \"bare\" refused"), "{}", g.seen);
    assert!(
        g.seen.contains(&format!("mcp login {}", rs.url)),
        "{}",
        g.seen
    );
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&g.addr, era);
        let names = tool_names(&c);
        assert!(!names.iter().any(|n| n.starts_with("bare__")), "{names:?}");
        for (i, t) in ["tok__greet", "lg__greet", "cc__greet", "ck__greet"]
            .iter()
            .enumerate()
        {
            let a = c.call(json!(i), t, json!({"name": "gw"}));
            assert_eq!(text_of(&a), "Hello, gw!", "{t}: {a}");
        }
        let a = c.call(json!(9), "rec__whoami", json!({}));
        assert_eq!(text_of(&a), "ok", "{a}");
    }
    // The client credentials were used, with the configured scope.
    let log = rs.authz.log.lock().unwrap();
    let cc: Vec<_> = log
        .token
        .iter()
        .filter(|(f, _)| f.get("grant_type").map(String::as_str) == Some("client_credentials"))
        .collect();
    assert!(
        !cc.is_empty(),
        "no client_credentials grant: {:?}",
        log.token
    );
    assert!(
        cc.iter()
            .all(|(f, _)| f["scope"] == "mcp" && f["resource"] == rs.url)
    );
    // gw-key proved itself with a signed assertion, never a secret.
    let keyed: Vec<_> = cc
        .iter()
        .filter(|(f, _)| f.get("client_id").map(String::as_str) == Some("gw-key"))
        .collect();
    assert!(!keyed.is_empty(), "{cc:?}");
    assert!(keyed.iter().all(|(f, _)| {
        f["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            && !f.contains_key("client_secret")
    }));
    drop(log);
    // The recording upstream saw its own token on every request, and
    // nothing of the others' credentials.
    let recorded = rec.recorded();
    assert!(recorded.len() >= 4, "{recorded:?}");
    for r in &recorded {
        let h = r["headers"].to_string();
        assert_eq!(
            r["headers"]["authorization"], "Bearer rec-only-token",
            "{h}"
        );
        assert!(!h.contains(&minted) && !h.contains("cc-secret"), "{h}");
    }
}

/// A GET of `url` (http://HOST:PORT/PATH): (status, body).
fn get(url: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let (status, head, body) = common::raw::http_call(host, "GET", &format!("/{path}"));
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        (status, common::raw::dechunk(&body))
    } else {
        (status, body)
    }
}

// AUTH-01, AUTH-03
/// `gateway.auth.introspection`: tokens checked by the authorization
/// server's RFC 7662 endpoint (the gateway authenticating with its own
/// client secret from the environment) instead of as JWTs: an active token
/// lists and calls, a revoked one and an opaque string the server does not
/// know are 401, and the secret never reaches stderr.
#[test]
fn inbound_tokens_can_be_introspected() {
    let rs = Protected::start();
    rs.authz
        .secrets
        .lock()
        .unwrap()
        .insert("gw-rs".into(), "rs-secret-77".into());
    let dir = scratch("gateway-introspect");
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let config = json!({
        "mcpServers": {"ev": {"command": MCP, "args": ["serve", "--stdio"]}},
        "gateway": {"auth": {"issuer": rs.authz.url, "resource": resource,
                             "requiredScopes": ["mcp"],
                             "introspection": {"endpoint": format!("{}/introspect", rs.authz.url),
                                               "clientId": "gw-rs",
                                               "clientSecretEnv": "GW_RS_SECRET"}}},
    });
    let mut g = Gateway::start_at(
        &dir,
        &config,
        &[("GW_RS_SECRET", "rs-secret-77")],
        &format!("127.0.0.1:{port}"),
        WAIT,
    );
    assert!(g.stderr_until("bearer tokens required ("), "{}", g.seen);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = |jti: &str| {
        rs.authz.key.sign(&json!({
            "iss": rs.authz.url, "aud": resource, "sub": "carol", "client_id": "c",
            "scope": "mcp", "iat": now, "exp": now + 300, "jti": jti,
        }))
    };
    let (active, revoked) = (token("active-1"), token("revoked-1"));
    rs.authz
        .revoked_access
        .lock()
        .unwrap()
        .push("revoked-1".into());
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let status_with = |t: &str| {
        let h = format!("Bearer {t}");
        let headers = [
            ("MCP-Protocol-Version", HANDSHAKE),
            ("Authorization", h.as_str()),
        ];
        common::raw::post(&g.addr, &headers, &list).0
    };
    let before = rs
        .authz
        .introspections
        .load(std::sync::atomic::Ordering::SeqCst);
    for refused in [revoked.as_str(), "opaque-and-unknown"] {
        assert_eq!(status_with(refused), 401, "{refused}");
    }
    assert!(
        rs.authz
            .introspections
            .load(std::sync::atomic::Ordering::SeqCst)
            >= before + 2
    );
    for era in [MODERN, HANDSHAKE] {
        let h = format!("Bearer {active}");
        let c = Client::with_headers(&g.addr, era, json!({}), &[("Authorization", h.as_str())]);
        assert!(tool_names(&c).iter().any(|n| n == "ev__echo"), "{era}");
        let ok = c.call(json!(2), "ev__echo", json!({"text": "introspected"}));
        assert_eq!(text_of(&ok), "introspected", "{era}: {ok}");
    }
    assert!(!g.seen.contains("rs-secret-77"), "{}", g.seen);
}

// AUTH-01, AUTH-03, AUTH-04
/// `gateway.auth`: the resource-server layer in front of the gateway (PRM
/// served, 401 + WWW-Authenticate without a valid token), the inbound
/// token never reaching an upstream, and `scopes` per server: callers
/// with different scopes see different tool lists, and a call of a tool
/// the caller's scopes do not cover is refused like an unknown tool (also
/// under case variants), before any upstream sees it.
#[test]
fn inbound_tokens_are_checked_never_forwarded_and_scopes_govern_tools() {
    let rs = Protected::start();
    let dir = scratch("gateway-inbound");
    let rec = Recorder::start(&dir);
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let config = json!({
        "mcpServers": {
            "ev": {"command": MCP, "args": ["serve", "--stdio"],
                   "scopes": {"debug_*": ["ev:admin"], "*": ["ev:use"]}},
            "rec": {"url": rec.url, "scopes": {"deniedtool": ["rec:never"]}},
        },
        "gateway": {"auth": {"issuer": rs.authz.url, "resource": resource,
                             "requiredScopes": ["mcp"]}},
    });
    let mut g = Gateway::start_at(&dir, &config, &[], &format!("127.0.0.1:{port}"), WAIT);
    assert!(g.stderr_until("bearer tokens required ("), "{}", g.seen);
    // The Protected Resource Metadata is served where stderr says.
    let at = g.seen.find("bearer tokens required (").unwrap() + "bearer tokens required (".len();
    let prm_url = g.seen[at..].split(')').next().unwrap().to_owned();
    let (status, prm) = get(&prm_url);
    assert_eq!(status, 200, "{prm}");
    let prm: Value = serde_json::from_str(&prm).unwrap();
    assert_eq!(prm["resource"], resource.as_str());
    assert_eq!(prm["authorization_servers"][0], rs.authz.url.as_str());
    assert_eq!(
        prm["scopes_supported"],
        json!(["ev:admin", "ev:use", "mcp", "rec:never"])
    );

    // Without a token, or with one for another audience: 401 and a
    // challenge pointing at the metadata.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let other = rs
        .authz
        .mint("http://127.0.0.1:1/mcp", "mcp ev:use ev:admin");
    for auth in [None, Some(format!("Bearer {other}"))] {
        let mut h = vec![("MCP-Protocol-Version", HANDSHAKE)];
        if let Some(a) = &auth {
            h.push(("Authorization", a));
        }
        let (status, headers, body) = common::raw::post(&g.addr, &h, &list);
        assert_eq!(status, 401, "{body}");
        let challenge = headers
            .iter()
            .find(|(k, _)| k == "www-authenticate")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        assert!(
            challenge.starts_with("Bearer") && challenge.contains("resource_metadata="),
            "{challenge}"
        );
    }

    let plain = rs.authz.mint(&resource, "mcp");
    let user = rs.authz.mint(&resource, "mcp ev:use");
    let admin = rs.authz.mint(&resource, "mcp ev:use ev:admin");
    for era in [MODERN, HANDSHAKE] {
        let client = |t: &str| {
            let h = format!("Bearer {t}");
            Client::with_headers(&g.addr, era, json!({}), &[("Authorization", h.as_str())])
        };
        let (p, u, a) = (client(&plain), client(&user), client(&admin));
        let (pn, un, an) = (tool_names(&p), tool_names(&u), tool_names(&a));
        // rec__whoami needs nothing; rec__deniedtool a scope nobody has.
        for names in [&pn, &un, &an] {
            assert!(names.iter().any(|n| n == "rec__whoami"), "{era}: {names:?}");
            assert!(
                !names.iter().any(|n| n == "rec__deniedtool"),
                "{era}: {names:?}"
            );
        }
        assert!(!pn.iter().any(|n| n.starts_with("ev__")), "{era}: {pn:?}");
        assert!(un.iter().any(|n| n == "ev__echo"), "{era}: {un:?}");
        assert!(
            !un.iter().any(|n| n.starts_with("ev__debug_")),
            "{era}: {un:?}"
        );
        assert!(
            an.iter().any(|n| n == "ev__debug_cancellations"),
            "{era}: {an:?}"
        );
        assert!(an.len() > un.len() && un.len() > pn.len(), "{era}");

        // Calls are enforced, not only hidden.
        let ok = u.call(json!(2), "ev__echo", json!({"text": "hi"}));
        assert_eq!(text_of(&ok), "hi", "{era}: {ok}");
        let ok = a.call(json!(3), "ev__debug_cancellations", json!({}));
        assert!(ok["result"].is_object(), "{era}: {ok}");
        // A refusal is indistinguishable from the server's own answer to
        // a name no upstream has.
        let unknown = a.call(json!(6), "zz__nothing", json!({}));
        assert_eq!(unknown["error"]["code"], -32602, "{era}: {unknown}");
        let unknown = unknown["error"]["message"].as_str().unwrap().to_owned();
        assert!(unknown.contains("zz__nothing"), "{unknown}");
        let refused = |c: &Client, name: &str| {
            let r = c.call(json!(4), name, json!({"text": "x"}));
            assert_eq!(r["error"]["code"], -32602, "{era} {name}: {r}");
            assert_eq!(
                r["error"]["message"],
                unknown.replace("zz__nothing", name),
                "{era} {name}: {r}"
            );
        };
        for name in [
            "ev__debug_cancellations",
            "EV__debug_cancellations",
            "ev__DEBUG_CANCELLATIONS",
            "ev__debug_invented",
        ] {
            refused(&u, name);
        }
        for name in [
            "ev__echo",
            "Ev__Echo",
            "ev__invented",
            "rec__deniedtool",
            "rec__DeniedTool",
        ] {
            refused(&p, name);
        }
        refused(&a, "rec__deniedtool");
        let ok = p.call(json!(5), "rec__whoami", json!({}));
        assert_eq!(text_of(&ok), "ok", "{era}: {ok}");
    }
    // Only permitted calls reached the upstreams; the inbound tokens never
    // did, under any header name.
    assert_eq!(rec.calls(), ["whoami", "whoami"]);
    let recorded = rec.recorded();
    assert!(!recorded.is_empty());
    for r in &recorded {
        let h = r["headers"].to_string();
        for t in [&plain, &user, &admin] {
            let signature = t.rsplit('.').next().unwrap();
            assert!(
                !h.contains(signature),
                "an inbound token reached the upstream: {h}"
            );
        }
        assert!(r["headers"].get("authorization").is_none(), "{h}");
    }
}

// CACHE-08
/// A warm gateway answers `tools/list` from its catalogue: however many
/// clients list, in either era and with pagination, the upstream is listed
/// once (when the gateway connected to it), never on a client's behalf.
#[test]
fn a_warm_tools_list_never_reaches_the_upstream() {
    let dir = scratch("gateway-warm-list");
    let rec = Recorder::start(&dir);
    let config = json!({"mcpServers": {"rec": {"url": rec.url}}});
    let g = Gateway::start(&dir, &config, &[]);
    let lists = || {
        rec.recorded()
            .iter()
            .filter(|r| r["body"]["method"] == "tools/list")
            .count()
    };
    let before = lists();
    assert_eq!(before, 1, "{:?}", rec.recorded());
    for era in [MODERN, HANDSHAKE] {
        for _ in 0..2 {
            let c = Client::new(&g.addr, era);
            for _ in 0..5 {
                assert!(tool_names(&c).iter().any(|n| n == "rec__whoami"));
            }
        }
    }
    assert_eq!(
        lists(),
        before,
        "a client's tools/list reached the upstream"
    );
}

/// `search_tools` through `c`: the names found, best first (panics on an
/// answer that is not a successful structured result).
fn search(c: &Client, id: u64, query: &str, limit: Option<u64>) -> Vec<String> {
    let mut args = json!({"query": query});
    if let Some(l) = limit {
        args["limit"] = json!(l);
    }
    let a = c.call(json!(id), "search_tools", args);
    assert_ne!(a["result"]["isError"], true, "{query}: {a}");
    let found = a["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{query}: {a}"));
    // The same JSON as text, for clients that read only content.
    let text: Value = serde_json::from_str(&text_of(&a)).unwrap();
    assert_eq!(text, a["result"]["structuredContent"], "{a}");
    for t in found {
        assert!(t["inputSchema"].is_object(), "{t}");
    }
    found
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Polls `search_tools` until `name` is (or is not) among the results.
fn until_found(c: &Client, query: &str, name: &str, present: bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        let found = search(c, 90, query, None);
        if found.iter().any(|n| n == name) == present {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name} present={present}: {found:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

// TOOL-06
/// An argument error of a meta-tool: a tool error the model reads,
/// naming what is wrong.
fn assert_invalid(a: &Value, what: &str) {
    assert_eq!(a["result"]["isError"], true, "{a}");
    let text = text_of(a);
    assert!(
        text.starts_with("Invalid arguments") && text.contains(what),
        "{what}: {text}"
    );
}

// Issue 26, TOOL-06, TOOL-07
/// `"toolMode": "search"`: `tools/list` offers only `search_tools` and
/// `call_tool`; the search ranks every upstream's tools by their names and
/// descriptions and returns their schemas; `call_tool` reaches tools of
/// stdio and HTTP upstreams from clients of both eras; `limit` is bounded
/// by `maxSearchResults`; a denied tool is neither found nor callable
/// (direct name, case variant, invented name) and never reaches its
/// upstream; an upstream's tool list change is searchable at once.
#[test]
fn search_mode_finds_and_calls_tools_of_every_upstream_under_policy() {
    let handshake_http = HttpServer::start(&["--era", "handshake"]);
    let dir = scratch("gateway-search");
    let rec = Recorder::start(&dir);
    let config = json!({
        "mcpServers": {
            "ev": everything_stdio(),
            "old": {"url": handshake_http.url, "prefix": "legacy"},
            "rec": {"url": rec.url, "denyTools": ["deniedtool"], "allowTools": ["whoami", "denied*"]},
        },
        "gateway": {"toolMode": "search", "maxSearchResults": 4},
    });
    let mut g = Gateway::start(&dir, &config, &[]);
    assert!(g.stderr_until("3 of 3 upstream(s) connected"), "{}", g.seen);
    for era in [MODERN, HANDSHAKE] {
        let c = Client::new(&g.addr, era);
        assert_eq!(tool_names(&c), ["search_tools", "call_tool"], "{era}");
        let list = c.request(json!(1), "tools/list", json!({}));
        assert!(list["result"].get("nextCursor").is_none(), "{list}");

        // The right tool first, among three upstreams' tools.
        let found = search(&c, 2, "echo the text back", None);
        assert!(
            ["ev__echo", "legacy__echo"].contains(&found[0].as_str()),
            "{era}: {found:?}"
        );
        let found = search(&c, 3, "greet someone by name", Some(2));
        let mut top: Vec<&str> = found.iter().map(String::as_str).collect();
        top.sort_unstable();
        assert_eq!(top, ["ev__greet", "legacy__greet"], "{era}");
        assert_eq!(search(&c, 4, "whoami", None)[0], "rec__whoami", "{era}");
        // `limit`: default and explicit, never above maxSearchResults.
        assert_eq!(search(&c, 5, "test", None).len(), 4, "{era}");
        assert_eq!(search(&c, 6, "test", Some(1)).len(), 1, "{era}");
        assert!(search(&c, 7, "kubernetes", None).is_empty(), "{era}");

        // call_tool reaches a stdio, a handshake-era HTTP and the
        // recording upstream.
        let a = c.call(
            json!(8),
            "call_tool",
            json!({"name": "ev__echo", "arguments": {"text": "hi"}}),
        );
        assert_eq!(text_of(&a), "hi", "{era}: {a}");
        let a = c.call(
            json!(9),
            "call_tool",
            json!({"name": "legacy__greet", "arguments": {"name": era}}),
        );
        assert_eq!(text_of(&a), format!("Hello, {era}!"), "{era}: {a}");
        let a = c.call(json!(10), "call_tool", json!({"name": "rec__whoami"}));
        assert_eq!(text_of(&a), "ok", "{era}: {a}");

        // Denied tools: never found, never callable.
        for q in ["deniedtool", "rec deniedtool secret", "secret"] {
            let found = search(&c, 11, q, Some(4));
            assert!(
                !found
                    .iter()
                    .any(|n| n == "rec__deniedtool" || n == "rec__secret"),
                "{era} {q}: {found:?}"
            );
        }
        let unknown = c.call(json!(12), "call_tool", json!({"name": "zz__nothing"}));
        assert_eq!(unknown["error"]["code"], -32602, "{era}: {unknown}");
        let unknown = unknown["error"]["message"].as_str().unwrap().to_owned();
        assert!(unknown.contains("zz__nothing"), "{unknown}");
        for name in [
            "rec__deniedtool",
            "rec__DeniedTool",
            "rec__DENIEDTOOL",
            "rec__secret",
            "rec__nosuch",
            "REC__whoami",
            "rec__Whoami",
            "deniedtool",
            "whoami",
            "search_tools",
            "call_tool",
        ] {
            let a = c.call(json!(13), "call_tool", json!({"name": name}));
            assert_eq!(a["error"]["code"], -32602, "{era} {name}: {a}");
            assert_eq!(
                a["error"]["message"],
                unknown.replace("zz__nothing", name),
                "{era} {name}: {a}"
            );
        }

        // Bad arguments of the meta-tools are answered, naming the problem.
        assert_invalid(&c.call(json!(14), "search_tools", json!({})), "query");
        assert_invalid(
            &c.call(json!(15), "search_tools", json!({"query": "x", "limit": 5})),
            "limit",
        );
        assert_invalid(
            &c.call(json!(16), "search_tools", json!({"query": "x", "limit": 0})),
            "limit",
        );
        assert_invalid(
            &c.call(json!(17), "search_tools", json!({"query": 3})),
            "query",
        );
        assert_invalid(&c.call(json!(18), "call_tool", json!({})), "name");
        assert_invalid(
            &c.call(
                json!(19),
                "call_tool",
                json!({"name": "ev__echo", "arguments": [1]}),
            ),
            "arguments",
        );
        let a = c.call(json!(20), "search_tools", json!({"query": "   "}));
        assert_eq!(a["result"]["isError"], true, "{a}");
    }
    // Only the permitted tool reached the recording upstream.
    assert_eq!(rec.calls(), ["whoami", "whoami"]);

    // An upstream's tool list change re-indexes.
    let c = Client::new(&g.addr, HANDSHAKE);
    let q = "Added at run time";
    assert!(
        !search(&c, 30, q, None)
            .iter()
            .any(|n| n == "ev__dynamic_tool")
    );
    let a = c.call(
        json!(31),
        "call_tool",
        json!({"name": "ev__test_trigger_tool_change"}),
    );
    assert_eq!(text_of(&a), "Tool list changed", "{a}");
    until_found(&c, q, "ev__dynamic_tool", true);
    let a = c.call(json!(32), "call_tool", json!({"name": "ev__dynamic_tool"}));
    assert_eq!(text_of(&a), "dynamic", "{a}");
    c.call(
        json!(33),
        "call_tool",
        json!({"name": "ev__test_trigger_tool_change"}),
    );
    until_found(&c, q, "ev__dynamic_tool", false);
}

// Issue 26, AUTH-04
/// Search mode under `scopes`: the search and `call_tool` make the
/// middleware's decision, so a caller whose token lacks a tool's scope
/// neither finds it nor calls it (direct name, case variants, invented
/// names answered alike), while a caller with the scope does both.
#[test]
fn search_mode_hides_and_refuses_tools_a_callers_scopes_do_not_cover() {
    let rs = Protected::start();
    let dir = scratch("gateway-search-scopes");
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let config = json!({
        "mcpServers": {
            "ev": {"command": MCP, "args": ["serve", "--stdio"],
                   "scopes": {"debug_*": ["ev:admin"], "*": ["ev:use"]}},
        },
        "gateway": {"auth": {"issuer": rs.authz.url, "resource": resource,
                             "requiredScopes": ["mcp"]},
                    "toolMode": "search"},
    });
    let mut g = Gateway::start_at(&dir, &config, &[], &format!("127.0.0.1:{port}"), WAIT);
    assert!(g.stderr_until("1 of 1 upstream(s) connected"), "{}", g.seen);
    let plain = rs.authz.mint(&resource, "mcp");
    let user = rs.authz.mint(&resource, "mcp ev:use");
    let admin = rs.authz.mint(&resource, "mcp ev:use ev:admin");
    for era in [MODERN, HANDSHAKE] {
        let client = |t: &str| {
            let h = format!("Bearer {t}");
            Client::with_headers(&g.addr, era, json!({}), &[("Authorization", h.as_str())])
        };
        let (p, u, a) = (client(&plain), client(&user), client(&admin));
        for c in [&p, &u, &a] {
            assert_eq!(tool_names(c), ["search_tools", "call_tool"], "{era}");
        }
        let q = "diagnostic debug cancellations";
        let found = search(&a, 1, q, None);
        assert_eq!(found[0], "ev__debug_cancellations", "{era}: {found:?}");
        let found = search(&u, 2, q, None);
        assert!(
            !found.iter().any(|n| n.starts_with("ev__debug_")),
            "{era}: {found:?}"
        );
        assert_eq!(search(&u, 3, "echo", None)[0], "ev__echo", "{era}");
        assert!(search(&p, 4, "echo", None).is_empty(), "{era}");
        assert!(search(&p, 5, q, None).is_empty(), "{era}");

        let ok = a.call(
            json!(6),
            "call_tool",
            json!({"name": "ev__debug_cancellations"}),
        );
        assert!(ok["result"].is_object(), "{era}: {ok}");
        let ok = u.call(
            json!(7),
            "call_tool",
            json!({"name": "ev__echo", "arguments": {"text": "hi"}}),
        );
        assert_eq!(text_of(&ok), "hi", "{era}: {ok}");
        let unknown = a.call(json!(8), "call_tool", json!({"name": "zz__nothing"}));
        let unknown = unknown["error"]["message"].as_str().unwrap().to_owned();
        let refused = |c: &Client, name: &str| {
            let r = c.call(
                json!(9),
                "call_tool",
                json!({"name": name, "arguments": {"text": "x"}}),
            );
            assert_eq!(r["error"]["code"], -32602, "{era} {name}: {r}");
            assert_eq!(
                r["error"]["message"],
                unknown.replace("zz__nothing", name),
                "{era} {name}: {r}"
            );
        };
        for name in [
            "ev__debug_cancellations",
            "EV__debug_cancellations",
            "ev__DEBUG_CANCELLATIONS",
            "ev__debug_invented",
        ] {
            refused(&u, name);
        }
        for name in ["ev__echo", "Ev__Echo", "ev__invented"] {
            refused(&p, name);
        }
        // Direct calls of the hidden names are refused the same way.
        let r = u.call(json!(10), "ev__debug_cancellations", json!({}));
        assert_eq!(r["error"]["code"], -32602, "{era}: {r}");
    }
}
