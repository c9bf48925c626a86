//! End to end: the real `mcp` binary against `mcp serve` (the
//! everything-server fixtures) over stdio and HTTP, in both eras.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const MCP: &str = env!("CARGO_BIN_EXE_mcp");
const ERAS: [&str; 2] = ["modern", "handshake"];

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let out: Output = Command::new(MCP)
        .args(args)
        .env_remove("MCP_SERVER")
        .stdin(Stdio::null())
        .output()
        .expect("run mcp");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `mcp serve --http` on a free loopback port; killed on drop.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(extra: &[&str]) -> Self {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(MCP)
            .args(["serve", "--http", &addr])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp serve");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(Instant::now() < deadline, "mcp serve did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            url: format!("http://{addr}/mcp"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every way to reach a server: (label, args before the subcommand's own,
/// args after). HTTP puts the URL first, stdio puts the command last.
fn targets(http: &HttpServer) -> Vec<(String, Vec<String>, Vec<String>)> {
    let mut v = Vec::new();
    for era in ERAS {
        v.push((
            format!("http/{era}"),
            vec![http.url.clone()],
            vec!["--era".into(), era.into()],
        ));
        v.push((
            format!("stdio/{era}"),
            Vec::new(),
            vec![
                "--era".into(),
                era.into(),
                "--".into(),
                MCP.into(),
                "serve".into(),
                "--stdio".into(),
            ],
        ));
    }
    v
}

fn run_on(cmd: &str, pre: &[String], args: &[&str], post: &[String]) -> Run {
    let mut all: Vec<&str> = vec![cmd];
    all.extend(pre.iter().map(String::as_str));
    all.extend(args);
    all.extend(post.iter().map(String::as_str));
    run(&all)
}

#[test]
fn discover_in_both_eras_over_both_transports() {
    let http = HttpServer::start(&[]);
    for (label, pre, post) in targets(&http) {
        let r = run_on("discover", &pre, &["--json"], &post);
        assert_eq!(r.code, 0, "{label}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let era = label.split('/').nth(1).unwrap();
        assert_eq!(v["era"], era, "{label}");
        assert_eq!(
            v["serverInfo"]["name"], "mcp-rs-everything-server",
            "{label}"
        );
        if era == "modern" {
            assert_eq!(v["protocolVersion"], "2026-07-28");
            assert!(v["supportedVersions"].as_array().unwrap().len() >= 2);
        }
        let r = run_on("discover", &pre, &[], &post);
        assert!(
            r.stdout.contains(&format!("era:          {era}")),
            "{label}: {}",
            r.stdout
        );
    }
}

#[test]
fn tools_and_calls_with_exit_codes() {
    let http = HttpServer::start(&[]);
    let dir = std::env::temp_dir().join(format!("mcp-cli-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (label, pre, post) in targets(&http) {
        let r = run_on("tools", &pre, &[], &post);
        assert_eq!(r.code, 0, "{label}: {}", r.stderr);
        assert!(r.stdout.starts_with("TOOL"), "{label}");
        assert!(
            r.stdout.contains("echo") && r.stdout.contains("text*:string"),
            "{label}"
        );
        let r = run_on("tools", &pre, &["--json"], &post);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert!(
            v["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "echo")
        );

        let r = run_on("call", &pre, &["echo", "text=hello world"], &post);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "hello world\n"),
            "{label}: {}",
            r.stderr
        );
        let r = run_on(
            "call",
            &pre,
            &["echo", r#"{"text":"from json"}"#, "--json"],
            &post,
        );
        assert_eq!(r.code, 0, "{label}");
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["content"][0]["text"], "from json");
        // a number where the schema says string stays a string
        let r = run_on("call", &pre, &["echo", "text=42"], &post);
        assert_eq!(r.stdout, "42\n", "{label}");

        let r = run_on("call", &pre, &["test_error_handling"], &post);
        assert_eq!(r.code, 1, "{label}: tool isError → 1");
        let r = run_on("call", &pre, &["no_such_tool"], &post);
        assert_eq!(r.code, 2, "{label}: unknown tool → 2");
        let r = run_on("call", &pre, &["echo", "oops"], &post);
        assert_eq!(r.code, 2, "{label}: malformed argument → 2");
        let r = run_on("call", &pre, &["echo"], &post);
        assert_eq!(
            r.code, 1,
            "{label}: invalid arguments are a tool error: {}",
            r.stderr
        );

        let sub = dir.join(label.replace('/', "-"));
        std::fs::create_dir_all(&sub).unwrap();
        let r = run_on(
            "call",
            &pre,
            &["test_image_content", "--save-dir", sub.to_str().unwrap()],
            &post,
        );
        assert_eq!(r.code, 0, "{label}: {}", r.stderr);
        assert!(r.stdout.contains("saved to"), "{label}: {}", r.stdout);
        let png = std::fs::read(sub.join("test_image_content-1.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let r = run_on(
            "call",
            &pre,
            &["test_audio_content", "--save-dir", sub.to_str().unwrap()],
            &post,
        );
        assert_eq!(r.code, 0, "{label}: {}", r.stderr);
        assert!(sub.join("test_audio_content-1.wav").exists(), "{label}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn resources_prompts_and_completion() {
    let http = HttpServer::start(&[]);
    for (label, pre, post) in targets(&http) {
        let r = run_on("resources", &pre, &[], &post);
        assert_eq!(r.code, 0, "{label}: {}", r.stderr);
        assert!(r.stdout.contains("test://static-text"), "{label}");
        assert!(r.stdout.contains("test://template/{id}/data"), "{label}");
        let r = run_on("read", &pre, &["test://static-text"], &post);
        assert_eq!(r.code, 0, "{label}: {}", r.stderr);
        assert!(r.stdout.contains("static text resource"), "{label}");
        let r = run_on("read", &pre, &["test://nope"], &post);
        assert_eq!(r.code, 3, "{label}: unknown resource → 3");

        let r = run_on("prompts", &pre, &[], &post);
        assert!(
            r.stdout
                .lines()
                .any(|l| l.starts_with("test_prompt_with_arguments ") && l.contains("arg1* arg2*")),
            "{label}: {}",
            r.stdout
        );
        let r = run_on(
            "prompt",
            &pre,
            &["test_prompt_with_arguments", "arg1=a", "arg2=b"],
            &post,
        );
        assert_eq!(r.code, 0, "{label}: {}", r.stderr);
        assert!(
            r.stdout.contains("arg1='a', arg2='b'"),
            "{label}: {}",
            r.stdout
        );

        let r = run_on(
            "complete",
            &pre,
            &["--prompt", "test_prompt_with_arguments", "arg1=test"],
            &post,
        );
        assert_eq!(r.code, 0, "{label}: {}", r.stderr);
        assert_eq!(r.stdout, "test1\ntest2\ntest3\ntesting\n", "{label}");
    }
}

#[test]
fn listen_prints_list_changes_over_http_in_both_eras() {
    let http = HttpServer::start(&[]);
    for era in ERAS {
        let listener = Command::new(MCP)
            .args(["listen", &http.url, "--tools", "--count", "1", "--era", era])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Trigger until the listener has seen one (it needs a moment to subscribe).
        let deadline = Instant::now() + Duration::from_secs(20);
        let pid = listener.id();
        let mut listener = Some(listener);
        let out = loop {
            let r = run(&["call", &http.url, "test_trigger_tool_change", "--era", era]);
            assert_eq!(r.code, 0, "{era}: {}", r.stderr);
            std::thread::sleep(Duration::from_millis(300));
            let l = listener.as_mut().unwrap();
            if l.try_wait().unwrap().is_some() {
                break listener.take().unwrap().wait_with_output().unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "{era}: listener {pid} saw nothing"
            );
        };
        assert!(out.status.success(), "{era}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.starts_with("notifications/tools/list_changed"),
            "{era}: {stdout}"
        );
    }
}

#[test]
fn usage_and_transport_failures_have_their_exit_codes() {
    let r = run(&["tools"]);
    assert_eq!(r.code, 2, "no server → usage");
    assert!(r.stderr.contains("no server"));
    let r = run(&["tools", "http://127.0.0.1:1/mcp"]);
    assert_eq!(r.code, 4, "refused connection → transport: {}", r.stderr);
    let r = run(&["tools", "--", "/nonexistent/server-binary"]);
    assert_eq!(r.code, 4, "cannot spawn → transport: {}", r.stderr);
    let r = run(&["--help"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("Exit codes:"));
}

#[test]
fn serve_docs_folder_with_search() {
    let dir = std::env::temp_dir().join(format!("mcp-cli-docs-{}", std::process::id()));
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
    assert!(r.stdout.contains("docs://intro.md"), "{}", r.stdout);
    assert!(
        r.stdout.contains("docs://guide/setup%20more.md"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("notes.txt"));
    let r = run(&["read", &http.url, "docs://guide/setup%20more.md"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Install the widget"));
    let r = run(&["read", &http.url, "docs://../etc/passwd"]);
    assert_eq!(r.code, 3, "traversal is just an unknown resource");
    let r = run(&["call", &http.url, "search_docs", "query=widget"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("docs://guide/setup%20more.md"),
        "{}",
        r.stdout
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn run_with_stdin(args: &[String], input: &str) -> Run {
    use std::io::Write;
    let mut child = Command::new(MCP)
        .args(args)
        .env_remove("MCP_SERVER")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn elicitation_prompts_read_answers_in_both_eras() {
    let http = HttpServer::start(&[]);
    for (label, pre, post) in targets(&http) {
        let mut args = vec!["call".to_owned()];
        args.extend(pre.iter().cloned());
        args.push("test_elicitation_sep1034_defaults".into());
        args.extend(post.iter().cloned());
        // age: default, name: typed, score: bad then default, status: #2, verified: n, send
        let r = run_with_stdin(&args, "\nAda\nlots\n\n2\nn\n\n");
        assert_eq!(r.code, 0, "{label}: {}", r.stderr);
        assert!(
            r.stderr.contains("expected a number"),
            "{label}: {}",
            r.stderr
        );
        assert!(
            r.stdout.contains(r#""name":"Ada""#),
            "{label}: {}",
            r.stdout
        );
        assert!(r.stdout.contains(r#""status":"inactive""#), "{label}");
        assert!(r.stdout.contains(r#""verified":false"#), "{label}");
        assert!(r.stdout.contains(r#""age":30"#), "{label}");

        // declined at the end
        let r = run_with_stdin(&args, "\n\n\n\n\nn\n");
        assert!(r.stdout.contains("decline"), "{label}: {}", r.stdout);

        // --no-input fails instead of prompting
        let mut no = args.clone();
        no.insert(1, "--no-input".into());
        let r = run_with_stdin(&no, "");
        assert_ne!(r.code, 0, "{label}");
        assert!(r.stderr.contains("--no-input"), "{label}: {}", r.stderr);
    }
}

/// The prompt in a real terminal: tmux drives `mcp call` and types answers.
#[test]
fn elicitation_in_a_tmux_terminal() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux not installed; skipped");
        return;
    }
    let session = format!("mcp-cli-test-{}", std::process::id());
    let out = std::env::temp_dir().join(format!("{session}.out"));
    let cmd = format!(
        "{MCP} call test_elicitation message=Hi -- {MCP} serve --stdio > {} 2>&1; echo EXIT=$? >> {}",
        out.display(),
        out.display()
    );
    let ok = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "120",
            "-y",
            "30",
            &cmd,
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    let wait_for = |needle: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if text.contains(needle) {
                return text;
            }
            assert!(Instant::now() < deadline, "never saw {needle:?}: {text}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait_for("response (string):");
    let keys = |k: &str| {
        Command::new("tmux")
            .args(["send-keys", "-t", &session, k, "Enter"])
            .status()
            .unwrap();
    };
    keys("typed in tmux");
    wait_for("Send? [Y/n]");
    keys("y");
    let text = wait_for("EXIT=");
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", &session])
        .status();
    let _ = std::fs::remove_file(&out);
    assert!(text.contains(r#"{"response":"typed in tmux"}"#), "{text}");
    assert!(text.contains("EXIT=0"), "{text}");
}

#[test]
fn ctrl_c_cancels_a_long_call() {
    let http = HttpServer::start(&[]);
    for era in ERAS {
        let child = Command::new(MCP)
            .args(["call", &http.url, "debug_sleep", "ms=30000", "--era", era])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let started = Instant::now();
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{era}");
        assert!(started.elapsed() < Duration::from_secs(10), "{era}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("cancelled"));
    }
}

#[test]
fn check_reports_a_healthy_server() {
    let http = HttpServer::start(&[]);
    let r = run(&["check", &http.url]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for line in [
        "connect",
        "server/discover",
        "x-mcp-header",
        "other era",
        "Origin protection",
    ] {
        assert!(
            r.stdout
                .lines()
                .any(|l| l.starts_with("ok") && l.contains(line)),
            "{line}: {}",
            r.stdout
        );
    }
    let r = run(&["check", "--json", "--", MCP, "serve", "--stdio"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["ok"], true);
}
