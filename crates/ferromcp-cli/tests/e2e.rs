//! End to end: the real `mcp` binary against `mcp serve` (the
//! everything-server fixtures) over stdio and HTTP, in both eras:
//! every subcommand, its readable and `--json` output, and its
//! exit code (0 ok, 1 tool isError, 2 usage, 3 protocol, 4 transport).
// ERA-01, LEGACY-01
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::*;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn discover_in_both_eras_over_both_transports() {
    let http = HttpServer::start(&[]);
    for t in targets(&http) {
        let label = &t.label;
        let r = t.run("discover", &["--json"]);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{label}");
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["era"], t.era, "{label}");
        assert_eq!(v["protocolVersion"], t.version(), "{label}");
        assert_eq!(v["transport"], t.transport, "{label}");
        assert_eq!(
            v["serverInfo"]["name"], "mcp-rs-everything-server",
            "{label}"
        );
        assert_eq!(
            v["capabilities"]["resources"],
            json!({"listChanged": true, "subscribe": true}),
            "{label}"
        );
        let supported = if t.era == "modern" {
            json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
        } else {
            json!([])
        };
        assert_eq!(v["supportedVersions"], supported, "{label}");

        let r = t.run("discover", &[]);
        assert_eq!(r.code, 0, "{label}: {}", r.stderr);
        let mut expected = vec![
            format!("era:          {}", t.era),
            format!("version:      {}", t.version()),
            format!("transport:    {}", t.transport),
        ];
        if t.era == "modern" {
            expected.push("supported:    2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26".into());
        }
        // The tasks extension is offered on the modern wire only.
        let extensions = if t.era == "modern" {
            "extensions, "
        } else {
            ""
        };
        expected.extend([
            format!("server:       mcp-rs-everything-server {}", env!("CARGO_PKG_VERSION")),
            format!("capabilities: completions, {extensions}logging, prompts (listChanged), resources (listChanged, subscribe), tools (listChanged)"),
            "instructions: Conformance fixtures for the Rust MCP SDK.".into(),
        ]);
        assert_eq!(r.stdout, expected.join("\n") + "\n", "{label}");
    }
}

#[test]
fn tools_in_both_eras_over_both_transports() {
    let http = HttpServer::start(&[]);
    for t in targets(&http) {
        let label = &t.label;
        let r = t.run("tools", &[]);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{label}");
        let header = r.stdout.lines().next().unwrap();
        assert_eq!(
            cells(header),
            ["TOOL", "ARGUMENTS (* required)", "DESCRIPTION"],
            "{label}"
        );
        assert_eq!(
            row(&r.stdout, "echo"),
            ["echo", "text*:string", "Echoes the text back"]
        );
        assert_eq!(
            row(&r.stdout, "debug_sleep"),
            [
                "debug_sleep",
                "ms*:integer",
                "Diagnostic: sleeps for ms milliseconds unless cancelled, re…"
            ]
        );
        let r = t.run("tools", &["--json"]);
        assert_eq!(r.code, 0, "{label}");
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        let tools = v["tools"].as_array().unwrap();
        // one row per tool in the table
        assert_eq!(
            t.run("tools", &[]).stdout.lines().count(),
            tools.len() + 1,
            "{label}"
        );
        let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
        assert_eq!(echo["inputSchema"]["required"], json!(["text"]), "{label}");
    }
}

#[test]
fn call_prints_content_and_exits_by_outcome() {
    let http = HttpServer::start(&[]);
    let dir = scratch("call");
    for t in targets(&http) {
        let label = &t.label;
        let r = t.run("call", &["echo", "text=hello world"]);
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (0, "hello world\n", ""),
            "{label}"
        );
        // a number where the schema says string stays a string
        let r = t.run("call", &["echo", "text=42"]);
        assert_eq!((r.code, r.stdout.as_str()), (0, "42\n"), "{label}");
        let r = t.run("call", &["echo", r#"{"text":"from json"}"#, "--json"]);
        assert_eq!(r.code, 0, "{label}");
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(
            v["content"],
            json!([{"type": "text", "text": "from json"}]),
            "{label}"
        );
        let r = t.run("call", &["echo", "--args", r#"{"text":"via --args"}"#]);
        assert_eq!(r.stdout, "via --args\n", "{label}");

        let r = t.run("call", &["test_embedded_resource"]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (
                0,
                "[resource test://embedded-resource]\nThis is an embedded resource content.\n"
            ),
            "{label}"
        );

        // exit 1: the tool ran and said isError
        let r = t.run("call", &["test_error_handling"]);
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (
                1,
                "This tool intentionally returns an error for testing\n",
                "mcp: the tool reported an error\n"
            ),
            "{label}"
        );
        // invalid arguments are a tool error too (the server validates)
        let r = t.run("call", &["echo"]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (
                1,
                "Invalid arguments: \"text\" is a required property at the arguments object\n"
            ),
            "{label}"
        );
        // exit 2: usage
        let r = t.run("call", &["no_such_tool"]);
        assert_eq!(
            (r.code, r.stderr.as_str()),
            (2, "mcp: no tool named \"no_such_tool\" (see `mcp tools`)\n"),
            "{label}"
        );
        let r = t.run("call", &["echo", "oops"]);
        assert_eq!(
            (r.code, r.stderr.as_str()),
            (
                2,
                "mcp: argument \"oops\" is not key=value (or key:=JSON, or a JSON object)\n"
            ),
            "{label}"
        );
        let r = t.run("call", &["debug_sleep", "ms=soon"]);
        assert_eq!(r.code, 2, "{label}: {}", r.stderr);
        // exit 3: a JSON-RPC error (the handler panicked: -32603)
        let r = t.run("call", &["debug_panic"]);
        assert_eq!(r.code, 3, "{label}: {}", r.stderr);
        // (a stdio server's own stderr, its panic message, passes through)
        assert_eq!(
            r.stderr.lines().last(),
            Some("mcp: server error -32603: Internal error: the handler failed unexpectedly"),
            "{label}"
        );

        // images and audio are saved, with a note; nothing is overwritten
        let sub = dir.join(t.label.replace('/', "-"));
        std::fs::create_dir_all(&sub).unwrap();
        let save = sub.to_str().unwrap();
        let r = t.run("call", &["test_image_content", "--save-dir", save]);
        let png = sub.join("test_image_content-1.png");
        assert_eq!(
            (r.code, r.stdout.clone()),
            (
                0,
                format!("[image image/png, 70 bytes saved to {}]\n", png.display())
            ),
            "{label}"
        );
        assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
        let r = t.run("call", &["test_image_content", "--save-dir", save]);
        assert_eq!(
            r.stdout,
            format!(
                "[image image/png, 70 bytes saved to {}]\n",
                sub.join("test_image_content-1-2.png").display()
            ),
            "{label}"
        );
        let r = t.run("call", &["test_audio_content", "--save-dir", save]);
        let wav = sub.join("test_audio_content-1.wav");
        assert_eq!(
            (r.code, r.stdout.clone()),
            (
                0,
                format!("[audio audio/wav, 204 bytes saved to {}]\n", wav.display())
            ),
            "{label}"
        );
        assert_eq!(&std::fs::read(&wav).unwrap()[..4], b"RIFF");
        let r = t.run("call", &["test_multiple_content_types", "--save-dir", save]);
        assert_eq!(
            r.stdout,
            format!(
                "Multiple content types test:\n[image image/png, 70 bytes saved to {}]\n[resource test://mixed-content-resource]\n{{\"test\":\"data\",\"value\":123}}\n",
                sub.join("test_multiple_content_types-2.png").display()
            ),
            "{label}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn resources_and_read_in_both_eras_over_both_transports() {
    let http = HttpServer::start(&[]);
    let dir = scratch("read");
    for t in targets(&http) {
        let label = &t.label;
        let r = t.run("resources", &[]);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{label}");
        assert_eq!(
            cells(r.stdout.lines().next().unwrap()),
            ["URI", "MIME TYPE", "TITLE / DESCRIPTION"]
        );
        assert_eq!(
            row(&r.stdout, "test://static-text"),
            ["test://static-text", "text/plain", "A static text resource"],
            "{label}"
        );
        assert_eq!(
            row(&r.stdout, "test://template/{id}/data"),
            [
                "test://template/{id}/data",
                "(template)",
                "A templated resource"
            ],
            "{label}"
        );
        let r = t.run("resources", &["--json"]);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert!(
            v["resourceTemplates"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["uriTemplate"] == "test://template/{id}/data"),
            "{label}"
        );

        let r = t.run("read", &["test://static-text"]);
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (0, "This is the content of the static text resource.\n", ""),
            "{label}"
        );
        let r = t.run("read", &["test://template/7/data"]);
        assert_eq!(
            r.stdout, "{\"data\":\"Data for ID: 7\",\"id\":\"7\",\"templateTest\":true}\n",
            "{label}"
        );
        let sub = dir.join(t.label.replace('/', "-"));
        std::fs::create_dir_all(&sub).unwrap();
        let r = t.run(
            "read",
            &["test://static-binary", "--save-dir", sub.to_str().unwrap()],
        );
        assert_eq!(
            (r.code, r.stdout.clone()),
            (
                0,
                format!(
                    "[image image/png, 70 bytes saved to {}]\n",
                    sub.join("static-binary-1.png").display()
                )
            ),
            "{label}"
        );
        let r = t.run("read", &["test://static-text", "--json"]);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(
            v["contents"],
            json!([{"uri": "test://static-text", "mimeType": "text/plain", "text": "This is the content of the static text resource."}]),
            "{label}"
        );
        // exit 3: the server answers with a JSON-RPC error
        let r = t.run("read", &["test://nope"]);
        let not_found = if t.era == "modern" {
            "mcp: server error -32602: Invalid params: Resource not found: test://nope\n"
        } else {
            "mcp: server error -32002: Resource not found\n"
        };
        assert_eq!((r.code, r.stderr.as_str()), (3, not_found), "{label}");
        let r = t.run("read", &[]);
        assert_eq!(r.code, 2, "{label}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn prompts_prompt_and_complete_in_both_eras_over_both_transports() {
    let http = HttpServer::start(&[]);
    let dir = scratch("prompt");
    for t in targets(&http) {
        let label = &t.label;
        let r = t.run("prompts", &[]);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{label}");
        assert_eq!(
            cells(r.stdout.lines().next().unwrap()),
            ["PROMPT", "ARGUMENTS (* required)", "DESCRIPTION"]
        );
        assert_eq!(
            row(&r.stdout, "test_prompt_with_arguments"),
            [
                "test_prompt_with_arguments",
                "arg1* arg2*",
                "A prompt with two required arguments"
            ],
            "{label}"
        );
        assert_eq!(
            row(&r.stdout, "test_simple_prompt"),
            ["test_simple_prompt", "A simple prompt without arguments"],
            "{label}"
        );
        let r = t.run(
            "prompt",
            &["test_prompt_with_arguments", "arg1=a", "arg2=b c"],
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "[user]\nPrompt with arguments: arg1='a', arg2='b c'\n"),
            "{label}"
        );
        let r = t.run(
            "prompt",
            &["test_prompt_with_embedded_resource", "resourceUri=test://x"],
        );
        assert_eq!(
            r.stdout,
            "[user]\n[resource test://x]\nEmbedded resource content for testing.\n[user]\nPlease process the embedded resource above.\n",
            "{label}"
        );
        let sub = dir.join(t.label.replace('/', "-"));
        std::fs::create_dir_all(&sub).unwrap();
        let r = t.run(
            "prompt",
            &[
                "test_prompt_with_image",
                "--save-dir",
                sub.to_str().unwrap(),
            ],
        );
        assert_eq!(
            r.stdout,
            format!(
                "[user]\n[image image/png, 70 bytes saved to {}]\n[user]\nPlease analyze the image above.\n",
                sub.join("test_prompt_with_image-1.png").display()
            ),
            "{label}"
        );
        let r = t.run("prompt", &["test_simple_prompt", "--json"]);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(
            v["messages"],
            json!([{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}]),
            "{label}"
        );
        let r = t.run("prompt", &["no_such_prompt"]);
        assert_eq!(r.code, 3, "{label}: {}", r.stderr);
        let r = t.run("prompt", &["test_simple_prompt", "novalue"]);
        assert_eq!(
            (r.code, r.stderr.as_str()),
            (2, "mcp: argument \"novalue\" is not key=value\n"),
            "{label}"
        );

        let r = t.run(
            "complete",
            &["--prompt", "test_prompt_with_arguments", "arg1=test"],
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "test1\ntest2\ntest3\ntesting\n"),
            "{label}"
        );
        let r = t.run(
            "complete",
            &[
                "--prompt",
                "test_prompt_with_embedded_resource",
                "resourceUri=test://static-t",
            ],
        );
        assert_eq!(r.stdout, "test://static-text\n", "{label}");
        let r = t.run(
            "complete",
            &["--template", "test://template/{id}/data", "id=1"],
        );
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (0, "", "(no completions)\n"),
            "{label}"
        );
        let r = t.run(
            "complete",
            &["--prompt", "test_prompt_with_arguments", "arg1=t", "--json"],
        );
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(
            v["completion"]["values"],
            json!(["test1", "test2", "test3", "testing"]),
            "{label}"
        );
        let r = t.run("complete", &["arg1=x"]);
        assert_eq!(
            (r.code, r.stderr.as_str()),
            (2, "mcp: give --prompt NAME or --template URI_TEMPLATE\n"),
            "{label}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn listen_prints_list_changes_over_http_in_both_eras() {
    let http = HttpServer::start(&[]);
    for era in ERAS {
        for (flag, trigger, method) in [
            (
                "--tools",
                "test_trigger_tool_change",
                "notifications/tools/list_changed",
            ),
            (
                "--prompts",
                "test_trigger_prompt_change",
                "notifications/prompts/list_changed",
            ),
        ] {
            let listener = mcp()
                .args(["listen", &http.url, flag, "--count", "1", "--era", era])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // Trigger until the listener has seen one (it needs a moment to subscribe).
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut listener = Some(listener);
            let out = loop {
                let r = run(&["call", &http.url, trigger, "--era", era]);
                assert_eq!(r.code, 0, "{era}: {}", r.stderr);
                std::thread::sleep(Duration::from_millis(300));
                let l = listener.as_mut().unwrap();
                if l.try_wait().unwrap().is_some() {
                    break listener.take().unwrap().wait_with_output().unwrap();
                }
                assert!(Instant::now() < deadline, "{era}: the listener saw nothing");
            };
            let r = Run::from(out);
            assert_eq!(
                (r.code, r.stdout.trim_end()),
                (0, method),
                "{era} {flag}: {}",
                r.stderr
            );
            let how = if era == "modern" {
                "listening (modern subscriptions/listen); Ctrl-C to stop\n"
            } else {
                "listening (handshake-era notifications); Ctrl-C to stop\n"
            };
            assert_eq!(r.stderr, how, "{era}");
        }
    }
}

#[test]
fn listen_over_stdio_in_both_eras_stops_on_ctrl_c() {
    for era in ERAS {
        let child = mcp()
            .args([
                "listen", "--era", era, "--json", "--", MCP, "serve", "--stdio",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        let r = Run::from(child.wait_with_output().unwrap());
        assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{era}: {}", r.stderr);
        assert!(r.stderr.starts_with("listening ("), "{era}: {}", r.stderr);
    }
}

#[test]
fn check_in_both_eras_over_both_transports() {
    let http = HttpServer::start(&[]);
    for t in targets(&http) {
        let label = &t.label;
        let r = t.run("check", &[]);
        assert_eq!(r.code, 0, "{label}: {}{}", r.stdout, r.stderr);
        let mut names = vec!["connect"];
        if t.era == "modern" {
            names.push("server/discover");
        }
        names.extend(["tools/list", "x-mcp-header", "other era"]);
        if t.transport == "http" {
            names.push("Origin protection");
        }
        let got: Vec<String> = r
            .stdout
            .lines()
            .map(|l| cells(l).get(1).cloned().unwrap_or_default())
            .collect();
        assert_eq!(got, names, "{label}: {}", r.stdout);
        assert!(r.stdout.lines().all(|l| l.starts_with("ok   ")), "{label}");
        let first = r.stdout.lines().next().unwrap();
        assert!(
            first.contains(&format!(
                "{} era, version {}, {} transport (",
                t.era,
                t.version(),
                t.transport
            )),
            "{label}: {first}"
        );
        let r = t.run("check", &["--json"]);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["ok"], true, "{label}");
        assert_eq!(
            v["checks"].as_array().unwrap().len(),
            names.len(),
            "{label}"
        );
    }
}

#[test]
fn usage_and_transport_failures_have_their_exit_codes() {
    let r = run(&["tools"]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            "mcp: no server: give a URL (mcp tools http://127.0.0.1:8080/mcp) or a command after `--` (mcp tools -- mcp serve --stdio)\n"
        )
    );
    let r = run(&["tools", "--server", "ftp://x"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = run(&["tools", "http://127.0.0.1:1/mcp", "--", "x"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = run(&["tools", "http://127.0.0.1:1/mcp"]);
    assert_eq!(r.code, 4, "refused connection → transport: {}", r.stderr);
    assert!(
        r.stderr
            .starts_with("mcp: cannot connect to http://127.0.0.1:1/mcp: ")
    );
    let r = run(&["tools", "--", "/nonexistent/server-binary"]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            4,
            "mcp: cannot connect to `/nonexistent/server-binary`: cannot start \"/nonexistent/server-binary\": No such file or directory (os error 2)\n"
        )
    );
    // a server that exits at once: transport failure, not a hang
    let r = run(&["tools", "--", "true"]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    let r = run(&["--help"]);
    assert_eq!(r.code, 0);
    for line in [
        "  1    the tool ran and reported an error (isError: true)",
        "  3    protocol error (the server answered with a JSON-RPC error, or",
        "  4    transport failure (cannot connect or spawn, connection lost, timeout)",
        "  5    the server needs input from the user, but --no-input was given",
        "  130  interrupted (Ctrl-C; the request was cancelled)",
    ] {
        assert!(r.stdout.lines().any(|l| l == line), "{line}: {}", r.stdout);
    }
}

#[test]
fn serve_docs_folder_with_search() {
    let dir = scratch("docs");
    std::fs::create_dir_all(dir.join("guide")).unwrap();
    std::fs::write(
        dir.join("intro.md"),
        "# Introduction\nHello from the intro.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("guide/setup more.md"),
        "# Setup\nInstall the widget first.\n",
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), "not markdown").unwrap();
    let http = HttpServer::start(&["--docs", dir.to_str().unwrap()]);
    let r = run(&["resources", &http.url]);
    assert_eq!(
        row(&r.stdout, "docs://intro.md"),
        ["docs://intro.md", "text/markdown", "Introduction"]
    );
    assert_eq!(
        row(&r.stdout, "docs://guide/setup%20more.md"),
        ["docs://guide/setup%20more.md", "text/markdown", "Setup"]
    );
    // Plain text is served too (the title is its first line).
    assert_eq!(
        row(&r.stdout, "docs://notes.txt"),
        ["docs://notes.txt", "text/plain", "not markdown"]
    );
    let r = run(&["read", &http.url, "docs://guide/setup%20more.md"]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "# Setup\nInstall the widget first.\n")
    );
    let r = run(&["read", &http.url, "docs://../etc/passwd"]);
    assert_eq!(r.code, 3, "traversal is refused");
    assert!(r.stderr.contains("refused"), "{}", r.stderr);
    // search_docs ranks sections (the ferromcp-docs crate; tests/docs.rs).
    let r = run(&["call", &http.url, "search_docs", "query=widget"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("1. docs://guide/setup%20more.md#setup — Setup")
            && r.stdout.contains("Install the **widget** first."),
        "{}",
        r.stdout
    );
    let r = run(&["call", &http.url, "search_docs", "query=nothing-like-this"]);
    assert_eq!(r.stdout, "No section matches \"nothing-like-this\".\n");
    // the same folder over stdio
    let r = run(&[
        "read",
        "docs://intro.md",
        "--",
        MCP,
        "serve",
        "--stdio",
        "--docs",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "# Introduction\nHello from the intro.\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `mcp login` against a server without OAuth metadata fails with exit 6
/// and stores nothing; `mcp logout --all` removes the credential folder
/// under `$XDG_CONFIG_HOME/mcp/tokens`. (A full login against an
/// authorization server is not covered here yet.)
#[test]
fn login_failure_and_logout_all() {
    let http = HttpServer::start(&[]);
    let cfg = scratch("config");
    let env = [("XDG_CONFIG_HOME", cfg.to_str().unwrap())];
    let base = http.url.trim_end_matches("/mcp").to_owned();
    let login = ["login".to_owned(), http.url.clone(), "--no-browser".into()];
    let r = run_with(&login, "", &env);
    assert_eq!((r.code, r.stdout.as_str()), (6, ""), "{}", r.stderr);
    // No authorization at all: the missing PRM is named, and so is the
    // 2025-03-26 fallback (LEGACY-26) that was tried after it.
    assert!(
        r.stderr.contains(&format!(
            "{base}/.well-known/oauth-protected-resource answered 404 Not Found"
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "the 2025-03-26 default endpoints at {base} were tried"
        )),
        "{}",
        r.stderr
    );
    let tokens = cfg.join("mcp").join("tokens");
    assert!(!tokens.exists());
    // the other subcommands still work unauthenticated with the hook installed
    let r = run_with(
        &[
            "call".into(),
            http.url.clone(),
            "echo".into(),
            "text=hi".into(),
        ],
        "",
        &env,
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "hi\n"));
    std::fs::create_dir_all(&tokens).unwrap();
    std::fs::write(tokens.join("x.json"), "{}").unwrap();
    let all = ["logout".to_owned(), "--all".into()];
    let r = run_with(&all, "", &env);
    assert_eq!(
        (r.code, r.stdout.clone()),
        (
            0,
            format!("removed all credentials ({})\n", tokens.display())
        )
    );
    assert!(!tokens.exists());
    let r = run_with(&all, "", &env);
    assert_eq!((r.code, r.stdout.as_str()), (0, "no stored credentials\n"));
    let r = run(&["logout"]);
    assert_eq!(r.code, 2);
    let _ = std::fs::remove_dir_all(&cfg);
}
