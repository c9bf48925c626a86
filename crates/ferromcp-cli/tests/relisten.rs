//! `mcp listen --relisten` across a server restart: `mcp serve` drains on
//! SIGTERM (the listen stream gets its final result), the CLI
//! listens again with backoff once a new server is up on the same address,
//! says so on stderr, and receives a change made after the restart.
// SUB-10
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn serve(addr: &str) -> std::process::Child {
    let child = mcp()
        .args(["serve", "--http", addr, "--drain-timeout", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcp serve");
    wait_listening(addr);
    child
}

#[test]
fn listen_relisten_survives_a_server_restart() {
    let addr = format!("127.0.0.1:{}", free_port());
    let url = format!("http://{addr}/mcp");
    let mut first = serve(&addr);
    let mut listener = mcp()
        .args(["listen", &url, "--tools", "--relisten", "--count", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp listen");
    // Give the listen time to be acknowledged before the restart.
    std::thread::sleep(Duration::from_millis(800));
    let ok = Command::new("kill")
        .args(["-TERM", &first.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    assert!(
        first.wait().unwrap().success(),
        "mcp serve drains and exits 0"
    );
    let mut second = serve(&addr);
    // A change after the restart reaches the listener once it listens
    // again: trigger until it has (it may still be backing off).
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let r = run(&["call", &url, "test_trigger_tool_change"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        if let Some(st) = listener.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "mcp listen never saw the change");
        std::thread::sleep(Duration::from_millis(300));
    };
    let (mut out, mut err) = (String::new(), String::new());
    listener
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    listener
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let _ = second.kill();
    let _ = second.wait();
    assert!(status.success(), "{status:?}\n{err}");
    assert!(
        out.contains("tools/list_changed"),
        "stdout: {out}\nstderr: {err}"
    );
    assert!(err.contains("listening again"), "stderr: {err}");
}
