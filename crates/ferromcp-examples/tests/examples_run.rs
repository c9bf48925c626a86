//! Every example runs, not only builds: each is started as the user would
//! start it (the binaries `cargo test` builds next to this test) and talked
//! to with the `client` example or over plain HTTP.
//!
//! `oauth_server`, `in_memory_test` and `rpc_middleware` have their own tests; `otel_stdout`
//! runs here when the `otel` feature is on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `target/<profile>/examples/<name>`, beside this test's own binary in
/// `target/<profile>/deps/`.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>")
        .join("examples");
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    build_examples();
    assert!(
        path.exists(),
        "{} is missing: `cargo test -p ferromcp-examples` builds the examples",
        path.display()
    );
    path
}

/// `cargo test` of the whole package builds the examples; a run of this
/// test alone (`--test examples_run`) does not, and would find stale ones:
/// build them once per test process (a no-op when they are up to date).
fn build_examples() {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let mut cargo = Command::new(env!("CARGO"));
        cargo.args(["build", "-p", "ferromcp-examples", "--examples"]);
        if cfg!(feature = "otel") {
            cargo.args(["--features", "otel"]);
        }
        if !cfg!(debug_assertions) {
            cargo.arg("--release");
        }
        let status = cargo.status().expect("run cargo build --examples");
        assert!(status.success(), "cargo build --examples failed");
    });
}

fn run(name: &str, args: &[&str]) -> Output {
    let out = Command::new(example(name))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run example");
    assert!(
        out.status.success(),
        "{name} {args:?} failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn free_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// A server example, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(name: &str, addr: SocketAddr) -> Running {
    start_with(name, &[addr.to_string()], addr)
}

/// Starts `name` with `args` and waits until it listens on `addr`.
fn start_with(name: &str, args: &[String], addr: SocketAddr) -> Running {
    let child = Command::new(example(name))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn example");
    let running = Running(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "{name} never listened on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
    running
}

#[test]
fn the_client_calls_the_stdio_server() {
    let server = example("stdio_server");
    let server = server.to_str().expect("utf-8 path");
    let out = run(
        "client",
        &["--call", "add", "--args", r#"{"a":2,"b":3}"#, server],
    );
    let text = stdout(&out);
    assert!(text.contains("tool add"), "{text}");
    assert!(text.contains(r#"add → {"sum":5}"#), "{text}");
    // The handshake era too.
    let out = run(
        "client",
        &[
            "--era",
            "handshake",
            "--call",
            "add",
            "--args",
            r#"{"a":1,"b":1}"#,
            server,
        ],
    );
    assert!(
        stdout(&out).contains(r#"add → {"sum":2}"#),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_client_calls_the_http_server() {
    let addr = free_addr();
    let _server = start("http_server", addr);
    let url = format!("http://{addr}/mcp");
    let out = run(
        "client",
        &[
            "--call",
            "word_count",
            "--args",
            r#"{"text":"a b c"}"#,
            &url,
        ],
    );
    let text = stdout(&out);
    assert!(text.contains("Modern"), "{text}");
    assert!(text.contains("word_count → structured"), "{text}");
    assert!(text.contains("\"words\":3"), "{text}");
}

// Issue 30 item 10: `serve_http` drains and returns on SIGTERM (what
// `docker stop` and Kubernetes send), not only on Ctrl-C.
#[cfg(unix)]
#[test]
fn the_http_server_stops_cleanly_on_sigterm() {
    let addr = free_addr();
    let mut server = start("http_server", addr);
    let pid = server.0.id().to_string();
    let sent = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = server.0.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "http_server ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}

#[test]
fn the_axum_app_serves_mcp_beside_its_routes() {
    let addr = free_addr();
    let _server = start("axum_mount", addr);
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("read");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with("ok\n"), "{reply}");
    let out = run(
        "client",
        &[
            "--call",
            "add",
            "--args",
            r#"{"a":20,"b":22}"#,
            &format!("http://{addr}/mcp"),
        ],
    );
    assert!(
        stdout(&out).contains(r#"add → {"sum":42}"#),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_elicitation_demo_runs_in_both_eras() {
    let text = stdout(&run("mrtr_elicitation", &[]));
    assert!(text.contains("Modern era"), "{text}");
    assert!(text.contains("Handshake era"), "{text}");
    assert_eq!(text.matches("user asked:").count(), 2, "{text}");
    assert_eq!(text.matches("result:").count(), 2, "{text}");
    assert_eq!(text.matches("Booked a table for 4").count(), 2, "{text}");
    // The work before the question was kept across the round, in both eras.
    assert_eq!(
        text.matches("ran 2 times, the quote was made 1 time(s)")
            .count(),
        2,
        "{text}"
    );
}

#[test]
fn the_tracing_example_prints_request_spans() {
    let text = stdout(&run("tracing_stdout", &[]));
    assert!(text.contains("mcp.request"), "{text}");
    assert!(text.contains("mcp.client.request"), "{text}");
    assert!(text.contains("4bf92f3577b34da6a3ce929d0e0e4736"), "{text}");
}

#[cfg(feature = "otel")]
#[test]
fn the_otel_example_prints_spans() {
    let out = run("otel_stdout", &[]);
    let text = stdout(&out);
    assert!(
        text.to_lowercase().contains("traceid") || text.contains("TraceId"),
        "{text}"
    );
}

/// How a test reaches the example: its stdio or its HTTP endpoint, in one era.
async fn connect_to(target: &str, era: ferromcp_client::EraPreference) -> ferromcp_client::Client {
    let builder = ferromcp_client::ClientBuilder::new("examples-run", "1")
        .era(era)
        .mcp_apps();
    let client = if target.starts_with("http://") {
        builder.connect_url(target).await
    } else {
        builder
            .connect_command(ferromcp_client::StdioCommand::new(
                target,
                Vec::<String>::new(),
            ))
            .await
    };
    client.expect("connect")
}

// SEP-1865: capability negotiation, tool linkage and visibility, the UI
// resource's MIME type and _meta.ui, over stdio and HTTP in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_example_serves_its_app_over_both_transports_and_eras() {
    use ferromcp_client::EraPreference;
    use ferromcp_client::protocol::types::{UI_EXTENSION, UI_MIME_TYPE};
    let addr = free_addr();
    let _http = start_with("apps_server", &["--http".into(), addr.to_string()], addr);
    let stdio = example("apps_server");
    let targets = [
        stdio.to_str().expect("utf-8 path").to_owned(),
        format!("http://{addr}/mcp"),
    ];
    for target in &targets {
        for era in [EraPreference::Modern, EraPreference::Handshake] {
            let what = format!("{target} {era:?}");
            let client = connect_to(target, era).await;
            let caps = client.server_capabilities();
            assert!(
                caps.extensions
                    .as_ref()
                    .is_some_and(|e| e.contains_key(UI_EXTENSION)),
                "{what}: {caps:?}"
            );
            let tools = client.list_tools().await.expect("tools/list");
            let roll = tools.iter().find(|t| t.name == "roll").expect("roll");
            let ui = roll.ui().expect("roll has _meta.ui");
            assert_eq!(
                ui.resource_uri.as_deref(),
                Some("ui://dice/view.html"),
                "{what}"
            );
            assert!(roll.visible_to_model(), "{what}");
            // App-only tools are listed (the host filters them): SEP-1865 "Visibility".
            let reroll = tools
                .iter()
                .find(|t| t.name == "reroll")
                .expect("reroll listed");
            assert!(!reroll.visible_to_model(), "{what}");
            assert!(reroll.ui().is_some_and(|u| u.visible_to_app()), "{what}");
            let listed = client.list_resources().await.expect("resources/list");
            let r = listed
                .iter()
                .find(|r| r.uri == "ui://dice/view.html")
                .expect("view listed");
            assert_eq!(r.mime_type.as_deref(), Some(UI_MIME_TYPE), "{what}");
            assert_eq!(r.ui().and_then(|u| u.prefers_border), Some(true), "{what}");
            let read = client
                .read_resource("ui://dice/view.html")
                .await
                .expect("resources/read");
            let c = read.contents.first().expect("one content item");
            let ferromcp_client::protocol::types::ResourceContents::Text(t) = c else {
                panic!("{what}: text contents expected: {c:?}");
            };
            assert_eq!(t.mime_type.as_deref(), Some(UI_MIME_TYPE), "{what}");
            assert!(t.text.starts_with("<!DOCTYPE html>"), "{what}");
            assert_eq!(c.ui().and_then(|u| u.prefers_border), Some(true), "{what}");
        }
    }
}

// SEP-1865 via SEP-1724: a server that uses no app does not declare the extension.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_apps_declares_no_ui_extension() {
    use ferromcp_client::EraPreference;
    use ferromcp_client::protocol::types::UI_EXTENSION;
    let stdio = example("stdio_server");
    let target = stdio.to_str().expect("utf-8 path");
    for era in [EraPreference::Modern, EraPreference::Handshake] {
        let client = connect_to(target, era).await;
        let caps = client.server_capabilities();
        assert!(
            !caps
                .extensions
                .as_ref()
                .is_some_and(|e| e.contains_key(UI_EXTENSION)),
            "{era:?}: {caps:?}"
        );
        assert!(caps.tools.is_some(), "{era:?}: a real answer was read");
    }
}

/// The JSON Schema of the pinned `@modelcontextprotocol/ext-apps` package
/// (scripts/ext-apps-peer.sh), or `None` after a loud message when it is
/// not installed; panics instead when `CI` is set.
fn ext_apps_schema() -> Option<serde_json::Value> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("MCP_EXT_APPS_PEER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/ext-apps-peer"));
    let file =
        dir.join("node_modules/@modelcontextprotocol/ext-apps/dist/src/generated/schema.json");
    match std::fs::read(&file) {
        Ok(bytes) => Some(serde_json::from_slice(&bytes).expect("schema.json is JSON")),
        Err(e) => {
            let msg = format!(
                "the ext-apps package is not installed ({}: {e}): run `bash scripts/ext-apps-peer.sh`",
                file.display()
            );
            peer_missing(&msg, "CI must run the MCP Apps schema check");
            None
        }
    }
}

/// A validator for the package schema's `$defs/NAME`.
fn def_validator(schema: &serde_json::Value, name: &str) -> jsonschema::Validator {
    let mut root = schema.clone();
    root.as_object_mut()
        .expect("schema object")
        .insert("$ref".into(), format!("#/$defs/{name}").into());
    jsonschema::validator_for(&root).expect("the package's schema compiles")
}

fn assert_valid(v: &jsonschema::Validator, name: &str, instance: &serde_json::Value) {
    let errors: Vec<String> = v.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{name} {instance}: {errors:?}");
}

// SEP-1865: our tool and resource `_meta.ui` and the host capability, as
// served on the wire, validated by the TypeScript package's own schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_example_metadata_matches_the_ext_apps_schema() {
    use ferromcp_client::protocol::types::{UI_META_KEY, UiClientCapability, UiPermission};
    let Some(schema) = ext_apps_schema() else {
        return;
    };
    let tool_meta = def_validator(&schema, "McpUiToolMeta");
    let resource_meta = def_validator(&schema, "McpUiResourceMeta");
    let client_caps = def_validator(&schema, "McpUiClientCapabilities");
    // The validators reject what the specification rejects.
    assert!(!tool_meta.is_valid(&serde_json::json!({"visibility": ["agent"]})));
    assert!(!resource_meta.is_valid(&serde_json::json!({"prefersBorder": "yes"})));

    let stdio = example("apps_server");
    let client = connect_to(
        stdio.to_str().expect("utf-8 path"),
        ferromcp_client::EraPreference::Modern,
    )
    .await;
    let mut checked = 0;
    for t in client.list_tools().await.expect("tools/list") {
        if let Some(ui) = t.meta.as_ref().and_then(|m| m.get(UI_META_KEY)) {
            assert_valid(&tool_meta, &t.name, ui);
            checked += 1;
        }
    }
    assert_eq!(checked, 2, "roll and reroll carry _meta.ui");
    for r in client.list_resources().await.expect("resources/list") {
        let ui = r
            .meta
            .as_ref()
            .and_then(|m| m.get(UI_META_KEY))
            .expect("listed _meta.ui");
        assert_valid(&resource_meta, &r.uri, ui);
        let read = client.read_resource(&r.uri).await.expect("resources/read");
        let ferromcp_client::protocol::types::ResourceContents::Text(t) = &read.contents[0] else {
            panic!("text contents expected");
        };
        let ui = t
            .meta
            .as_ref()
            .and_then(|m| m.get(UI_META_KEY))
            .expect("contents _meta.ui");
        assert_valid(&resource_meta, &r.uri, ui);
    }

    // Every member our builder writes, not only the example's.
    let full = ferromcp_server::ui_resource("ui://all/view.html", "all")
        .html("<!DOCTYPE html>")
        .connect_domain("https://api.example.com")
        .resource_domain("https://*.cdn.example.com")
        .frame_domain("https://www.youtube.com")
        .base_uri_domain("https://cdn.example.com")
        .permission(UiPermission::Camera)
        .permission(UiPermission::Microphone)
        .permission(UiPermission::Geolocation)
        .permission(UiPermission::ClipboardWrite)
        .domain("a904794854a047f6.claudemcpcontent.com")
        .prefers_border(false)
        .build()
        .expect("build");
    let ui = full
        .definition()
        .meta
        .as_ref()
        .and_then(|m| m.get(UI_META_KEY))
        .expect("_meta.ui");
    assert_eq!(
        ui["permissions"].as_object().map(|o| o.len()),
        Some(4),
        "{ui}"
    );
    assert_valid(&resource_meta, "full builder", ui);
    let caps = serde_json::Value::Object(UiClientCapability::html().to_settings());
    assert_valid(&client_caps, "client capability", &caps);
}

// SEP-2640: the skills example serves its folder over stdio and HTTP in
// both eras: the declaration, skills/list, skills/get, directory reads and
// files that match their listed digests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_skills_example_serves_its_folder_over_both_transports_and_eras() {
    use ferromcp_client::EraPreference;
    use ferromcp_client::protocol::types::SKILLS_EXTENSION;
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/skills");
    let addr = free_addr();
    let _http = start_with(
        "skills_server",
        &[folder.into(), "--http".into(), addr.to_string()],
        addr,
    );
    let stdio = example("skills_server");
    for http in [false, true] {
        for era in [EraPreference::Modern, EraPreference::Handshake] {
            let what = format!("http={http} {era:?}");
            let builder = ferromcp_client::ClientBuilder::new("examples-run", "1")
                .era(era)
                .skills();
            let client = if http {
                builder.connect_url(&format!("http://{addr}/mcp")).await
            } else {
                builder
                    .connect_command(ferromcp_client::StdioCommand::new(
                        stdio.to_str().expect("utf-8 path"),
                        vec![folder.to_owned()],
                    ))
                    .await
            }
            .expect("connect");
            let caps = client.server_capabilities();
            assert_eq!(
                caps.extensions
                    .as_ref()
                    .and_then(|e| e.get(SKILLS_EXTENSION)),
                Some(&serde_json::json!({"directoryRead": true})),
                "{what}"
            );
            let skills = client.list_skills().await.expect("skills/list");
            let names: Vec<&str> = skills.iter().filter_map(|s| s.name()).collect();
            assert_eq!(names, ["git-workflow", "release-notes"], "{what}");
            let git = client
                .get_skill("skill://git-workflow/SKILL.md")
                .await
                .expect("skills/get");
            assert_eq!(git, skills[0], "{what}");
            assert_eq!(git.frontmatter["metadata"]["version"], "1.0", "{what}");
            let md = client
                .read_skill_file(&git, &git.uri)
                .await
                .expect("verified read");
            assert_eq!(
                md,
                std::fs::read(format!("{folder}/git-workflow/SKILL.md")).expect("source"),
                "{what}"
            );
            let kids = client
                .read_directory("skill://release-notes/templates")
                .await
                .expect("resources/directory/read");
            let uris: Vec<&str> = kids.iter().map(|r| r.uri.as_str()).collect();
            assert_eq!(uris, ["skill://release-notes/templates/minor.md"], "{what}");
            // A file the entry does not list is refused before use.
            let other = &skills[1];
            assert!(
                client.read_skill_file(&git, &other.uri).await.is_err(),
                "{what}"
            );
        }
    }
}

/// The MCP Inspector's CLI entry point (npm `@modelcontextprotocol/inspector`,
/// installed by scripts/inspector-peer.sh), or `None` after a loud message;
/// panics instead when `CI` is set.
fn inspector() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("MCP_INSPECTOR_PEER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/inspector-peer"));
    let cli = dir.join("node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js");
    if cli.exists() {
        return Some(cli);
    }
    let msg = format!(
        "the MCP Inspector is not installed ({} is missing): run `bash scripts/inspector-peer.sh`",
        cli.display()
    );
    peer_missing(&msg, "CI must run the Inspector interop");
    None
}

/// Runs the Inspector CLI with `--format json` against `target` (a URL, or
/// a command and its arguments); returns its exit code, the JSON it printed
/// (`{"result": …}` unwrapped) and its whole output for messages.
fn inspect(
    cli: &std::path::Path,
    args: &[&str],
    target: &[&str],
) -> (i32, serde_json::Value, String) {
    let out = Command::new("node")
        .arg(cli)
        .args(["--format", "json", "-q"])
        .args(args)
        .args(target)
        .stdin(Stdio::null())
        .output()
        .expect("run node");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = match serde_json::from_str(text.trim()) {
        Ok(serde_json::Value::Object(mut o)) if o.contains_key("result") => {
            o.remove("result").unwrap_or_default()
        }
        Ok(other) => other,
        Err(_) => serde_json::Value::Null,
    };
    let all = format!("{text}\n{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), json, all)
}

// SEP-1865 interop: the MCP Inspector's --cli (which advertises the ui
// extension with --advertise-apps) reads the real apps example's tool
// metadata (--app-info, visibility included) and its ui:// resource, over
// stdio and Streamable HTTP, in both eras.
#[test]
fn the_inspector_drives_the_apps_example_over_stdio_and_http_in_both_eras() {
    let Some(cli) = inspector() else { return };
    let addr = free_addr();
    let _http = start_with("apps_server", &["--http".into(), addr.to_string()], addr);
    let url = format!("http://{addr}/mcp");
    let stdio = example("apps_server");
    let stdio = stdio.to_str().expect("utf-8 path");
    for era in ["legacy", "modern"] {
        for (label, target) in [("stdio", stdio), ("http", url.as_str())] {
            let what = format!("{label}/{era}");
            let e = ["--protocol-era", era];
            let info = |tool: &str| {
                inspect(
                    &cli,
                    &[
                        &e[..],
                        &[
                            "--method",
                            "tools/call",
                            "--tool-name",
                            tool,
                            "--app-info",
                            "--advertise-apps",
                        ],
                    ]
                    .concat(),
                    &[target],
                )
            };
            let (code, roll, out) = info("roll");
            assert_eq!(code, 0, "{what}: {out}");
            let app = &roll["appInfo"];
            assert_eq!(app["hasApp"], true, "{what}: {out}");
            assert_eq!(app["resourceUri"], "ui://dice/view.html", "{what}: {out}");
            assert_eq!(
                app["resourceMimeType"], "text/html;profile=mcp-app",
                "{what}: {out}"
            );
            assert_eq!(app["prefersBorder"], true, "{what}: {out}");
            let (code, reroll, out) = info("reroll");
            assert_eq!(code, 0, "{what}: {out}");
            assert_eq!(
                reroll["appInfo"]["visibility"],
                serde_json::json!(["app"]),
                "{what}: {out}"
            );
            let (code, read, out) = inspect(
                &cli,
                &[
                    &e[..],
                    &["--method", "resources/read", "--uri", "ui://dice/view.html"],
                ]
                .concat(),
                &[target],
            );
            assert_eq!(code, 0, "{what}: {out}");
            let c = &read["contents"][0];
            assert_eq!(c["mimeType"], "text/html;profile=mcp-app", "{what}: {out}");
            assert_eq!(c["_meta"]["ui"]["prefersBorder"], true, "{what}: {out}");
            assert_eq!(
                c["text"].as_str(),
                Some(include_str!("../examples/apps_server.html")),
                "{what}: {out}"
            );
        }
    }
}

/// A pinned third-party peer the test needs is missing (`msg` says which
/// and how to install it): with `CI` set (and not `false`) the test fails,
/// giving `ci_reason`; elsewhere a loud SKIPPED line, and the caller returns.
fn peer_missing(msg: &str, ci_reason: &str) {
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false") {
        panic!("{msg} ({ci_reason})");
    }
    eprintln!("\n!!! SKIPPED: {msg} !!!\n");
}
