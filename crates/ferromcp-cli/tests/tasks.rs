//! `mcp call --task` and `mcp tasks …` end to end against `mcp serve` (the
//! everything-server fixtures, tasks extension: docs/TASKS.md).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use common::*;

#[test]
fn call_task_polls_to_the_result_over_both_transports() {
    let http = HttpServer::start(&[]);
    for t in targets(&http).into_iter().filter(|t| t.era == "modern") {
        let label = &t.label;
        let r = t.run(
            "call",
            &[
                "slow_compute",
                "seconds=1",
                "label=x",
                "--task",
                "--progress",
                "always",
            ],
        );
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "Computed x in 1 s\n"),
            "{label}: {}",
            r.stderr
        );
        let first = r.stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("task ") && first.ends_with(" working"),
            "{label}: {}",
            r.stderr
        );
        assert!(
            r.stderr.lines().any(|l| l.ends_with(" completed")),
            "{label}: {}",
            r.stderr
        );

        // Exit codes by outcome: tool error 1, protocol error 3.
        let r = t.run("call", &["failing_job", "--task", "--progress", "never"]);
        assert_eq!(r.code, 1, "{label}: {}", r.stderr);
        let r = t.run(
            "call",
            &["protocol_error_job", "--task", "--progress", "never"],
        );
        assert_eq!(r.code, 3, "{label}: {}", r.stderr);
        assert!(
            r.stderr.contains("internal error (by design)"),
            "{label}: {}",
            r.stderr
        );
    }
}

#[test]
fn call_task_against_a_handshake_era_server_is_a_plain_call() {
    let http = HttpServer::start(&[]);
    for t in targets(&http).into_iter().filter(|t| t.era == "handshake") {
        let r = t.run("call", &["slow_compute", "seconds=0", "label=y", "--task"]);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "Computed y in 0 s\n"),
            "{}: {}",
            t.label,
            r.stderr
        );
    }
}

#[test]
fn tasks_get_result_and_cancel() {
    let http = HttpServer::start(&[]);
    let url = http.url.as_str();
    // Start a long task and learn its id from the first status line.
    let mut child = mcp()
        .args([
            "call",
            url,
            "slow_compute",
            "seconds=60",
            "--task",
            "--progress",
            "always",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let id = line.split_whitespace().nth(1).unwrap().to_owned();

    let r = run(&["tasks", url, "get", &id]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with(&format!("{id} working")),
        "{}",
        r.stdout
    );
    let r = run(&["tasks", url, "get", &id, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["taskId"], id.as_str());
    assert_eq!(v["ttlMs"], 3_600_000);

    let r = run(&["tasks", url, "cancel", &id]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.stderr);
    // `result` waits for the end: a cancelled task is a failure (exit 3).
    let r = run(&["tasks", url, "result", &id, "--progress", "never"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("cancelled"), "{}", r.stderr);
    let r = run(&["tasks", url, "get", &id]);
    assert!(
        r.stdout.starts_with(&format!("{id} cancelled")),
        "{}",
        r.stdout
    );

    // Unknown ids are a protocol error; `list` does not exist in the extension.
    let r = run(&["tasks", url, "get", "no-such-task"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let r = run(&["tasks", url, "list"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no tasks/list"), "{}", r.stderr);
}
