//! Graceful drain on SIGTERM (HTTP), against a real everything-server:
//! the listener closes at once, in-flight requests finish, listen streams
//! end with their final result, and the process exits 0 within
//! `MCP_DRAIN_TIMEOUT_MS`; past the deadline, what is still open is closed.
// SUB-10
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

fn sigterm(pid: u32) {
    let ok = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill -TERM {pid}");
}

/// Sends `body` as a modern POST on a fresh connection and returns a reader
/// positioned after the response head (status checked to be 200 SSE).
fn open_sse(port: u16, body: &Value) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut headers = modern_headers(body);
    headers.retain(|(n, _)| n != "Accept");
    headers.push(("Accept".into(), "text/event-stream".into()));
    let req = http_request(
        &format!("127.0.0.1:{port}"),
        &headers,
        body.to_string().as_bytes(),
        true,
    );
    s.write_all(&req).expect("write");
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status).expect("status line");
    assert!(status.contains(" 200 "), "{status}");
    loop {
        let mut line = String::new();
        r.read_line(&mut line).expect("header");
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    r
}

/// The next JSON `data:` message of an SSE body (chunk-size lines and
/// comments skipped); `None` at the end of the stream.
fn next_message(r: &mut BufReader<TcpStream>) -> Option<Value> {
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(data) = line.trim_end().strip_prefix("data:")
            && let Ok(v) = serde_json::from_str::<Value>(data.trim())
        {
            return Some(v);
        }
    }
}

fn wait_exit(server: &mut HttpServer, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(st) = server.child.try_wait().expect("try_wait") {
            return Some(st);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_finishes_in_flight_calls_ends_listen_streams_and_exits_0() {
    let mut server = HttpServer::start_with(&[("MCP_DRAIN_TIMEOUT_MS", "30000")]);
    let port = server.port;

    // A listen stream, acknowledged (so it is open before the signal).
    let listen = request(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut stream = open_sse(port, &listen);
    let ack = next_message(&mut stream).expect("acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");

    // A slow call, observed running (its first progress event arrived).
    let call = request(
        2,
        "tools/call",
        json!({"name": "debug_sleep", "arguments": {"ms": 4000},
               "_meta": {"progressToken": "p", "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {},
                         "io.modelcontextprotocol/clientInfo": {"name": "drain-test", "version": "1"}}}),
    );
    let mut slow = open_sse(port, &call);
    let first = next_message(&mut slow).expect("a progress notification");
    assert_eq!(first["method"], "notifications/progress", "{first}");

    let signalled = Instant::now();
    sigterm(server.child.id());

    // The listen stream ends with its final result (SUB-10), then closes.
    let mut last = None;
    while let Some(m) = next_message(&mut stream) {
        last = Some(m);
    }
    let last = last.expect("the listen stream's final result");
    assert_eq!(last["id"], 1, "{last}");
    assert_eq!(last["result"]["resultType"], "complete", "{last}");

    // New connections are refused while the call drains (the process is
    // still running: refused by the drain, not because it exited).
    let refused = eventually(Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", port)).is_err()
    });
    assert!(refused, "the listener still accepts after SIGTERM");
    assert!(
        server.child.try_wait().expect("try_wait").is_none(),
        "connections were refused only once the process had exited"
    );

    // The in-flight call completes with its result.
    let mut answer = None;
    while let Some(m) = next_message(&mut slow) {
        if m.get("id") == Some(&json!(2)) {
            answer = Some(m);
            break;
        }
    }
    let answer = answer.expect("the in-flight call's answer");
    assert!(answer.get("result").is_some(), "{answer}");
    assert_ne!(answer["result"]["isError"], true, "{answer}");

    let status = wait_exit(&mut server, Duration::from_secs(25)).expect("exit after the drain");
    assert!(status.success(), "{status:?}");
    // It waited for the call: a drain, not an abort.
    assert!(signalled.elapsed() >= Duration::from_millis(500));
}

#[test]
fn the_drain_deadline_closes_what_is_still_running() {
    let mut server = HttpServer::start_with(&[("MCP_DRAIN_TIMEOUT_MS", "300")]);
    let call = request(
        2,
        "tools/call",
        json!({"name": "debug_sleep", "arguments": {"ms": 120000},
               "_meta": {"progressToken": "p", "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {},
                         "io.modelcontextprotocol/clientInfo": {"name": "drain-test", "version": "1"}}}),
    );
    let mut slow = open_sse(server.port, &call);
    let first = next_message(&mut slow).expect("a progress notification");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    sigterm(server.child.id());
    // A 2-minute call does not hold the process: it exits soon after the
    // 300 ms deadline, well before the 5 s the drain was once hard-wired to (10 s default).
    let status = wait_exit(&mut server, Duration::from_secs(4)).expect("exit after the deadline");
    assert!(status.success(), "{status:?}");
}

/// An echo request on an open keep-alive connection; its answer, or `None`
/// when the connection was closed under it.
fn echo_on(conn: &mut BufReader<TcpStream>, port: u16, id: i64) -> Option<Response> {
    let body = request(
        id,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let req = http_request(
        &format!("127.0.0.1:{port}"),
        &modern_headers(&body),
        body.to_string().as_bytes(),
        false,
    );
    conn.get_mut().write_all(&req).ok()?;
    read_response(conn)
}

fn keep_alive(port: u16) -> BufReader<TcpStream> {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    BufReader::new(s)
}

/// What nginx's upstream keep-alive pool does at a rolling restart: it
/// sends a request on a connection that was idle when SIGTERM arrived.
/// Closing idle connections at once would lose that request (nginx answers
/// 502 for a POST it may not retry); during the drain grace they stay open,
/// the request is answered with `connection: close`, and the server exits
/// as soon as the last connection is gone, without waiting out the grace.
#[test]
fn an_idle_keep_alive_connection_is_still_answered_during_the_drain_grace() {
    let mut server = HttpServer::start_with(&[
        ("MCP_DRAIN_TIMEOUT_MS", "60000"),
        ("MCP_DRAIN_GRACE_MS", "30000"),
    ]);
    let port = server.port;
    let mut first = keep_alive(port);
    let mut second = keep_alive(port);
    for (conn, id) in [(&mut first, 1), (&mut second, 2)] {
        let r = echo_on(conn, port, id).expect("an answer before the drain");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("connection"), None, "keep-alive before the drain");
    }

    let signalled = Instant::now();
    sigterm(server.child.id());
    let refused = eventually(Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", port)).is_err()
    });
    assert!(refused, "the listener still accepts after SIGTERM");
    // The peer's next request comes a moment later (without a grace, the
    // drain has closed idle connections by now).
    std::thread::sleep(Duration::from_millis(500));

    // Both connections were idle at the signal; each still gets its answer,
    // which tells the peer to close.
    for (conn, id) in [(&mut first, 3), (&mut second, 4)] {
        let r = echo_on(conn, port, id).expect("an answer on an idle connection during the grace");
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["id"], id, "{:?}", r.json());
        assert_eq!(r.header("connection"), Some("close"));
        // The server closes it after that answer.
        let mut rest = Vec::new();
        let n = std::io::Read::read_to_end(conn, &mut rest).expect("end of stream");
        assert_eq!(n, 0, "nothing after a connection: close answer");
    }

    // No connection left: the grace ends early and the process exits 0.
    let status =
        wait_exit(&mut server, Duration::from_secs(20)).expect("exit once no connection is left");
    assert!(status.success(), "{status:?}");
    assert!(
        signalled.elapsed() < Duration::from_secs(25),
        "waited out the 30 s grace although every connection had closed"
    );
}

/// `MCP_DRAIN_GRACE_MS=0`: idle connections close as soon as the drain
/// begins (the behaviour before the grace existed), so the grace is what
/// the test above exercises.
#[test]
fn without_a_grace_idle_connections_close_at_once() {
    let mut server = HttpServer::start_with(&[
        ("MCP_DRAIN_TIMEOUT_MS", "60000"),
        ("MCP_DRAIN_GRACE_MS", "0"),
    ]);
    let port = server.port;
    let mut conn = keep_alive(port);
    assert_eq!(echo_on(&mut conn, port, 1).expect("an answer").status, 200);
    sigterm(server.child.id());
    let mut rest = Vec::new();
    let n = std::io::Read::read_to_end(&mut conn, &mut rest).expect("end of stream");
    assert_eq!(n, 0, "the idle connection is closed by the drain");
    let status = wait_exit(&mut server, Duration::from_secs(20)).expect("exit");
    assert!(status.success(), "{status:?}");
}
