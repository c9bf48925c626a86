//! End to end, the interactive side: elicitation prompts (form and URL
//! mode, MRTR rounds in the modern era and server requests in the
//! handshake era), `--no-input`, progress from `notifications/progress`
//! and Ctrl-C cancellation of `call`,
//! `read` and `prompt`, over stdio and HTTP in both eras; a tmux terminal
//! for the real prompt and the progress bar.
// PROG-01, CANCEL-01, CANCEL-02
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn form_elicitation_prompts_read_typed_answers() {
    let http = HttpServer::start(&[]);
    for t in targets(&http) {
        let label = &t.label;
        let args = t.args("call", &["test_elicitation_sep1034_defaults"]);
        // age: default, name: typed, score: bad then default, status: #2,
        // verified: n, send
        let r = run_with(&args, "\nAda\nlots\n\n2\nn\n\n", &[]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (
                0,
                "User response: action=accept, content={\"age\":30,\"name\":\"Ada\",\"score\":95.5,\"status\":\"inactive\",\"verified\":false}\n"
            ),
            "{label}: {}",
            r.stderr
        );
        for line in [
            "The server asks: Please review and update the form fields with defaults",
            "    2) inactive",
        ] {
            assert!(
                r.stderr.lines().any(|l| l == line),
                "{label}: {line:?} in {}",
                r.stderr
            );
        }
        // (answers typed into a pipe are not echoed, so prompts share lines)
        for prompt in [
            "age (integer, default 30): ",
            "name (string, default \"John Doe\"): ",
            "score (number, default 95.5):   expected a number\n",
            "status (string, default \"active\"): ",
            "verified (boolean, default true): ",
            "Send? [Y/n] ",
        ] {
            assert!(
                r.stderr.contains(prompt),
                "{label}: {prompt:?} in {}",
                r.stderr
            );
        }

        // declined at the end
        let r = run_with(&args, "\n\n\n\n\nn\n", &[]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "User response: action=decline, content=null\n"),
            "{label}"
        );
        // input ends: cancel
        let r = run_with(&args, "", &[]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "User response: action=cancel, content=null\n"),
            "{label}"
        );

        // enums: numbers, values and titles all pick an option
        let args = t.args("call", &["test_elicitation_sep1330_enums"]);
        let r = run_with(
            &args,
            "Option Two\n1, value3\nSecond Option\n3\noption2\n\n",
            &[],
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (
                0,
                "User response: action=accept, content={\"legacyEnum\":\"opt2\",\"titledMulti\":[\"value1\",\"value3\"],\"titledSingle\":\"value2\",\"untitledMulti\":[\"option3\"],\"untitledSingle\":\"option2\"}\n"
            ),
            "{label}: {}",
            r.stderr
        );
    }
}

#[test]
fn elicitation_inside_a_prompt_and_over_several_rounds() {
    let http = HttpServer::start(&[]);
    for t in targets(&http) {
        let label = &t.label;
        let args = t.args("prompt", &["test_input_required_result_prompt"]);
        let r = run_with(&args, "sunny\n\n", &[]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (
                0,
                "# Prompt built from elicited context\n[user]\nContext: User response: action=accept, content={\"context\":\"sunny\"}\n"
            ),
            "{label}: {}",
            r.stderr
        );
        let args = t.args("call", &["test_input_required_result_multi_round"]);
        let r = run_with(&args, "one\n\ntwo\n\n", &[]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "Multi-round flow completed\n"),
            "{label}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("The server asks: First question"));
        assert!(r.stderr.contains("The server asks: Second question"));
    }
}

// Issue 30 item 11: a form answered by field from the command line, no
// terminal needed (with --no-input), in both eras and transports.
#[test]
fn answer_options_fill_a_form_by_field() {
    let http = HttpServer::start(&[]);
    for t in targets(&http) {
        let label = &t.label;
        let r = t.run(
            "call",
            &[
                "--no-input",
                "--answer",
                "name=Ada",
                "--answer",
                "status=2",
                "--answer",
                "verified=n",
                "test_elicitation_sep1034_defaults",
            ],
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (
                0,
                "User response: action=accept, content={\"age\":30,\"name\":\"Ada\",\"score\":95.5,\"status\":\"inactive\",\"verified\":false}\n"
            ),
            "{label}: {}",
            r.stderr
        );
        // A field the form does not have is refused, naming the fields.
        let r = t.run(
            "call",
            &["--answer", "nmae=Ada", "test_elicitation_sep1034_defaults"],
        );
        assert_ne!(r.code, 0, "{label}");
        assert!(
            r.stderr
                .contains("--answer nmae: the form has no such field"),
            "{label}: {}",
            r.stderr
        );
    }
}

#[test]
fn no_input_fails_with_exit_code_5() {
    let http = HttpServer::start(&[]);
    for t in targets(&http) {
        let label = &t.label;
        for (cmd, what, message) in [
            ("call", "test_elicitation", "message=Hi"),
            ("prompt", "test_input_required_result_prompt", ""),
        ] {
            let mut a = vec!["--no-input", what];
            if !message.is_empty() {
                a.push(message);
            }
            let r = t.run(cmd, &a);
            assert_eq!((r.code, r.stdout.as_str()), (5, ""), "{label} {cmd}");
            assert!(
                r.stderr.contains("but --no-input was given"),
                "{label} {cmd}: {}",
                r.stderr
            );
        }
    }
}

/// A test browser: records the URL it was started with.
fn recording_browser(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let log = dir.join("opened.txt");
    let script = dir.join("browser.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$1\" >> '{}'\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, log)
}

#[test]
fn url_elicitation_shows_the_url_and_opens_it_on_consent() {
    let http = HttpServer::start(&[]);
    let dir = scratch("url-elicit");
    let (browser, log) = recording_browser(&dir);
    let env = [("MCP_BROWSER", browser.to_str().unwrap())];
    for t in targets(&http) {
        let label = &t.label;
        let _ = std::fs::remove_file(&log);
        let args = t.args(
            "call",
            &["debug_url_elicitation", "url=https://example.com/consent"],
        );
        let r = run_with(&args, "y\n\n", &env);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "User response: action=accept, content=null\n"),
            "{label}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(
                "It wants you to open this URL:\n  https://example.com/consent\nOpen it in your browser? [y/N] (opened with "
            ),
            "{label}: {}",
            r.stderr
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while !log.exists() {
            assert!(Instant::now() < deadline, "{label}: browser not run");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "https://example.com/consent\n"
        );
        // no consent: not opened; declined
        let _ = std::fs::remove_file(&log);
        let r = run_with(&args, "\nn\n", &env);
        assert_eq!(
            r.stdout, "User response: action=decline, content=null\n",
            "{label}"
        );
        std::thread::sleep(Duration::from_millis(200));
        assert!(!log.exists(), "{label}: opened without consent");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Checks `--progress always` lines: `progress N/T waited N of T ms`.
fn assert_progress_lines(label: &str, stderr: &str, total: u64) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines.len() >= 2, "{label}: {stderr}");
    assert_eq!(
        lines[0],
        format!("progress 0/{total} waited 0 of {total} ms"),
        "{label}"
    );
    let mut last = None;
    for l in &lines {
        let rest = l.strip_prefix("progress ").unwrap();
        let (n, tail) = rest.split_once('/').unwrap();
        let n: u64 = n.parse().unwrap();
        assert_eq!(
            tail,
            format!("{total} waited {n} of {total} ms"),
            "{label}: {l}"
        );
        assert!(n < total && last.is_none_or(|p| n > p), "{label}: {stderr}");
        last = Some(n);
    }
}

#[test]
fn progress_of_call_read_and_prompt() {
    let http = HttpServer::start(&[]);
    for t in targets(&http) {
        let label = &t.label;
        let r = t.run("call", &["debug_sleep", "ms=450", "--progress", "always"]);
        assert_eq!((r.code, r.stdout.as_str()), (0, "slept\n"), "{label}");
        assert_progress_lines(label, &r.stderr, 450);
        let r = t.run("read", &["test://debug/slow/450", "--progress", "always"]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "waited 450 ms\n"),
            "{label}"
        );
        assert_progress_lines(label, &r.stderr, 450);
        let r = t.run(
            "prompt",
            &["debug_slow_prompt", "ms=450", "--progress", "always"],
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "[user]\nwaited 450 ms\n"),
            "{label}"
        );
        assert_progress_lines(label, &r.stderr, 450);
        let r = t.run("call", &["test_tool_with_progress", "--progress", "always"]);
        assert_eq!(
            r.stderr,
            "progress 0/100 Completed step 0\nprogress 50/100 Completed step 50\nprogress 100/100 Completed step 100\n",
            "{label}"
        );
        // not a terminal, default mode: nothing on stderr
        let r = t.run("read", &["test://debug/slow/250"]);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{label}");
        // never: no progress token, nothing shown
        let r = t.run("call", &["test_tool_with_progress", "--progress", "never"]);
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (0, "Progress test completed\n", ""),
            "{label}"
        );
    }
}

/// How many waiting `debug_*` requests the HTTP server saw cancelled or dropped.
fn cancellations(http: &HttpServer) -> u64 {
    let r = run(&["call", &http.url, "debug_cancellations"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.stdout.trim().parse().unwrap()
}

#[test]
fn ctrl_c_cancels_call_read_and_prompt() {
    let http = HttpServer::start(&[]);
    for t in targets(&http) {
        let label = &t.label;
        for (cmd, args) in [
            ("call", vec!["debug_sleep", "ms=60000"]),
            ("read", vec!["test://debug/slow/60000"]),
            ("prompt", vec!["debug_slow_prompt", "ms=60000"]),
        ] {
            let before = (t.transport == "http").then(|| cancellations(&http));
            let child = mcp()
                .args(t.args(cmd, &args))
                .stdin(Stdio::null())
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
            let r = Run::from(child.wait_with_output().unwrap());
            assert_eq!(
                (r.code, r.stdout.as_str(), r.stderr.as_str()),
                (
                    130,
                    "",
                    format!("mcp: interrupted; the {cmd} was cancelled\n").as_str()
                ),
                "{label} {cmd}"
            );
            assert!(started.elapsed() < Duration::from_secs(5), "{label} {cmd}");
            // The server stopped the request: handshake era by
            // notifications/cancelled, modern era by the closed connection.
            if let Some(before) = before {
                let deadline = Instant::now() + Duration::from_secs(5);
                while cancellations(&http) != before + 1 {
                    assert!(
                        Instant::now() < deadline,
                        "{label} {cmd}: the server never saw the cancellation"
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}

fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A detached tmux session running `cmd`; killed on drop.
struct Tmux {
    session: String,
}

impl Tmux {
    fn start(name: &str, cmd: &str) -> Self {
        let session = format!("mcp-cli-{name}-{}", std::process::id());
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
                cmd,
            ])
            .status()
            .unwrap();
        assert!(ok.success());
        Self { session }
    }

    fn keys(&self, k: &str) {
        Command::new("tmux")
            .args(["send-keys", "-t", &self.session, k, "Enter"])
            .status()
            .unwrap();
    }

    fn screen(&self) -> String {
        let o = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.session])
            .status();
    }
}

fn wait_for_file(path: &std::path::Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(Instant::now() < deadline, "never saw {needle:?}: {text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The prompt in a real terminal: tmux drives `mcp call` and types answers.
#[test]
fn elicitation_in_a_tmux_terminal() {
    if !have_tmux() {
        eprintln!("tmux not installed; skipped");
        return;
    }
    let out = std::env::temp_dir().join(format!("mcp-cli-tmux-{}.out", std::process::id()));
    let cmd = format!(
        "{MCP} call test_elicitation message=Hi -- {MCP} serve --stdio > {} 2>&1; echo EXIT=$? >> {}",
        out.display(),
        out.display()
    );
    let tmux = Tmux::start("elicit", &cmd);
    wait_for_file(&out, "response (string):");
    tmux.keys("typed in tmux");
    wait_for_file(&out, "Send? [Y/n]");
    tmux.keys("y");
    let text = wait_for_file(&out, "EXIT=");
    let _ = std::fs::remove_file(&out);
    assert!(text.contains(r#"{"response":"typed in tmux"}"#), "{text}");
    assert!(text.contains("EXIT=0"), "{text}");
}

/// The progress bar in a real terminal: drawn while the read runs, cleared
/// when it ends.
#[test]
fn progress_bar_in_a_tmux_terminal() {
    if !have_tmux() {
        eprintln!("tmux not installed; skipped");
        return;
    }
    let out = std::env::temp_dir().join(format!("mcp-cli-bar-{}.out", std::process::id()));
    let cmd = format!(
        "{MCP} read test://debug/slow/4000 -- {MCP} serve --stdio > {}; echo EXIT=$? >> {}; sleep 30",
        out.display(),
        out.display()
    );
    let tmux = Tmux::start("bar", &cmd);
    let deadline = Instant::now() + Duration::from_secs(20);
    let bar = loop {
        let s = tmux.screen();
        if s.contains("/4000 waited") && s.contains("[=") {
            break s;
        }
        assert!(Instant::now() < deadline, "no progress bar: {s}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(bar.contains("] "), "{bar}");
    let text = wait_for_file(&out, "EXIT=");
    let _ = std::fs::remove_file(&out);
    assert_eq!(text, "waited 4000 ms\nEXIT=0\n");
    // cleared: no bar left on the screen
    let s = tmux.screen();
    assert!(!s.contains("/4000 waited"), "{s}");
}
