//! Wire-level abuse suite for the stdio transport: hostile lines written to
//! a real everything-server's stdin, each with its exact expected outcome on
//! stdout (which must only ever carry JSON-RPC messages).
//! `docs/SECURITY.md` maps every threat to the test here that covers it.
// STDIO-02

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn call(id: i64, name: &str, args: Value) -> Value {
    request(id, "tools/call", json!({"name": name, "arguments": args}))
}

fn echo(id: i64, text: &str) -> Value {
    call(id, "echo", json!({"text": text}))
}

fn raw_echo(id: &str, args: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{args},"_meta":{}}}}}"#,
        envelope()
    )
    .into_bytes()
}

fn code_and_id(v: &Value) -> (Option<i64>, Value) {
    (v["error"]["code"].as_i64(), v["id"].clone())
}

fn assert_alive(s: &mut StdioPipe) {
    s.send(&echo(4242, "alive"));
    let r = s.recv();
    assert_eq!(r["id"], json!(4242));
    assert_eq!(r["result"]["content"][0]["text"], "alive");
}

#[test]
fn malformed_truncated_and_non_object_lines() {
    let mut s = StdioPipe::start_with(&[]);
    let full = String::from_utf8(raw_echo("1", r#"{"text":"x"}"#)).unwrap();
    let null = Value::Null;
    let one = json!(1);
    let cases: Vec<(Vec<u8>, i64, &Value)> = vec![
        (b"{".to_vec(), -32700, &null),
        (full.as_bytes()[..full.len() / 2].to_vec(), -32700, &null),
        (full.as_bytes()[..full.len() - 1].to_vec(), -32700, &null),
        (format!("{full}{full}").into_bytes(), -32700, &null),
        (format!("{full} x").into_bytes(), -32700, &null),
        (format!("\u{feff}{full}").into_bytes(), -32700, &null),
        (b"nul".to_vec(), -32700, &null),
        (b"5".to_vec(), -32600, &null),
        (b"null".to_vec(), -32600, &null),
        (br#""s""#.to_vec(), -32600, &null),
        (b"{}".to_vec(), -32600, &null),
        (br#"{"jsonrpc":"2.0","id":1}"#.to_vec(), -32600, &one),
        (
            br#"{"jsonrpc":"1.0","id":1,"method":"tools/list"}"#.to_vec(),
            -32600,
            &one,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":[]}"#.to_vec(),
            -32600,
            &one,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":7}"#.to_vec(),
            -32600,
            &one,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"id":1,"method":"tools/list"}"#.to_vec(),
            -32600,
            &null,
        ),
    ];
    // Everything written at once; the answers come back one per line, in order.
    let mut wire = Vec::new();
    for (line, _, _) in &cases {
        wire.extend_from_slice(line);
        wire.push(b'\n');
        // Blank and whitespace-only lines are skipped without an answer.
        wire.extend_from_slice(b"\n   \t \r\n");
    }
    s.write(&wire);
    for (line, code, id) in &cases {
        let r = s.recv();
        let what = String::from_utf8_lossy(&line[..line.len().min(50)]).into_owned();
        assert_eq!(code_and_id(&r), (Some(*code), (*id).clone()), "{what}");
    }
    s.assert_silent(Duration::from_millis(200));
    assert_alive(&mut s);
}

#[test]
fn batches_and_response_objects() {
    let mut s = StdioPipe::start_with(&[]);
    let one = echo(1, "x").to_string();
    for batch in [
        format!("[{one}]"),
        format!("[{one},{one}]"),
        "[]".to_owned(),
        format!("[{}]", vec![one.as_str(); 5000].join(",")),
    ] {
        s.send_line(batch.as_bytes());
        assert_eq!(code_and_id(&s.recv()), (Some(-32600), Value::Null));
    }
    // Responses to requests the server never sent are dropped silently.
    for resp in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": "srv-1", "result": {"action": "accept"}}),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": "x"}}),
        json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "x", "data": [1]}}),
    ] {
        s.send(&resp);
    }
    s.assert_silent(Duration::from_millis(300));
    // A malformed error object is an invalid message.
    s.send_line(br#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#);
    assert_eq!(code_and_id(&s.recv()), (Some(-32600), json!(1)));
    assert_alive(&mut s);
}

#[test]
fn ids_of_every_kind() {
    let mut s = StdioPipe::start_with(&[]);
    let long = format!("\"{}\"", "i".repeat(64 * 1024));
    for raw in [
        "0",
        "-1",
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551615",
        r#""""#,
        r#""\u00e9\ud83d\ude00""#,
        r#""a\nb""#,
        &long,
    ] {
        s.send_line(&raw_echo(raw, r#"{"text":"x"}"#));
        let line = s.lines.recv_timeout(Duration::from_secs(20)).unwrap();
        let v: Value = serde_json::from_slice(&line).unwrap();
        let want: Value = serde_json::from_str(raw).unwrap();
        assert_eq!(v["id"], want);
        assert!(v["result"].is_object());
        if !raw.starts_with('"') {
            let text = String::from_utf8_lossy(&line);
            assert!(text.contains(&format!("\"id\":{raw}")), "{text}");
        }
    }
    for (raw, code) in [
        ("null", -32600),
        ("1.5", -32600),
        ("1e3", -32600),
        ("18446744073709551616", -32600),
        ("true", -32600),
        ("{}", -32600),
        ("[]", -32600),
        ("1e400", -32700),
    ] {
        s.send_line(&raw_echo(raw, r#"{"text":"x"}"#));
        assert_eq!(code_and_id(&s.recv()), (Some(code), Value::Null), "{raw}");
    }
}

#[test]
fn huge_numbers_and_deep_nesting() {
    let mut s = StdioPipe::start_with(&[]);
    let digits = "9".repeat(100_000);
    let d = 100_000;
    let arrays = format!("{}{}", "[".repeat(d), "]".repeat(d));
    let objects = format!("{}1{}", r#"{"a":"#.repeat(d), "}".repeat(d));
    let started = Instant::now();
    for args in [
        r#"{"text":"x","n":1e400}"#.to_owned(),
        format!(r#"{{"text":"x","n":{digits}}}"#),
        format!(r#"{{"text":"x","d":{arrays}}}"#),
        format!(r#"{{"text":"x","d":{objects}}}"#),
    ] {
        s.send_line(&raw_echo("7", &args));
        assert_eq!(code_and_id(&s.recv()), (Some(-32602), json!(7)));
    }
    // Skipped members: never decoded, so neither depth nor size matters.
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":8,"x":{arrays},"y":{digits},"method":"tools/call","params":{{"name":"echo","z":{objects},"arguments":{{"text":"ok"}},"_meta":{}}}}}"#,
        envelope()
    );
    s.send_line(line.as_bytes());
    assert_eq!(s.recv()["result"]["content"][0]["text"], "ok");
    for (line, code) in [
        (arrays.clone(), -32600),
        (objects.clone(), -32600),
        (
            format!(r#"{{"jsonrpc":"2.0","id":{arrays},"method":"m"}}"#),
            -32600,
        ),
        ("[".repeat(d), -32700),
    ] {
        s.send_line(line.as_bytes());
        assert_eq!(code_and_id(&s.recv()), (Some(code), Value::Null));
    }
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_alive(&mut s);
}

#[test]
fn invalid_utf8_lone_surrogates_and_control_bytes() {
    let mut s = StdioPipe::start_with(&[]);
    let with_text = |text: &[u8]| {
        let mut b =
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":""#
                .to_vec();
        b.extend_from_slice(text);
        b.extend_from_slice(format!(r#""}},"_meta":{}}}}}"#, envelope()).as_bytes());
        b
    };
    for bad in [
        &b"\xff"[..],
        b"\xc0\xaf",
        b"\xed\xa0\x80",
        b"\x00",
        b"a\x01b",
        b"\x1b[2J",
    ] {
        s.send_line(&with_text(bad));
        assert_eq!(
            code_and_id(&s.recv()),
            (Some(-32700), Value::Null),
            "{bad:?}"
        );
    }
    // Lone surrogates: in arguments a params error, in the id unparseable.
    s.send_line(&with_text(br"\ud800"));
    assert_eq!(code_and_id(&s.recv()), (Some(-32602), json!(3)));
    s.send_line(br#"{"jsonrpc":"2.0","id":"\udc00","method":"tools/list"}"#);
    assert_eq!(code_and_id(&s.recv()), (Some(-32700), Value::Null));
    // CR is JSON whitespace; CRLF line endings are tolerated (STDIO-01).
    let mut crlf = echo(4, "cr").to_string().replace(',', ",\r").into_bytes();
    crlf.extend_from_slice(b"\r\n");
    s.write(&crlf);
    assert_eq!(s.recv()["result"]["content"][0]["text"], "cr");
    // Escaped control characters round-trip as one line on stdout.
    s.send(&echo(5, "a\nb\r\u{0}\u{1b}"));
    assert_eq!(
        s.recv()["result"]["content"][0]["text"],
        "a\nb\r\u{0}\u{1b}"
    );
    assert_alive(&mut s);
}

#[test]
fn over_long_lines_with_bounded_memory() {
    let mut s = StdioPipe::start_with(&[("MCP_MAX_LINE_BYTES", "65536")]);
    let pid = s.pid();
    assert_alive(&mut s); // baseline of a running server
    let before = mem_of(pid);
    // 32 MiB without a newline, then the newline: refused once, -32600.
    let chunk = vec![b'a'; 1024 * 1024];
    for _ in 0..32 {
        s.write(&chunk);
    }
    s.write(b"\n");
    assert_eq!(code_and_id(&s.recv()), (Some(-32600), Value::Null));
    let after = mem_of(pid);
    eprintln!("32 MiB line: {before:?} -> {after:?}");
    // The framer drops the line as it streams in: growth stays far below
    // the 32 MiB sent (generous margin 16 MB for the debug build).
    assert!(
        after.hwm_kb < before.hwm_kb.max(before.rss_kb) + 16 * 1024,
        "{before:?} → {after:?}"
    );
    // Reading resumes at the next line; a line exactly at the cap is read.
    let at_cap = {
        let mut l = raw_echo("9", r#"{"text":"fits"}"#);
        l.pop(); // the final '}'
        let pad = 65536 - l.len() - 1;
        l.extend_from_slice(&vec![b' '; pad]);
        l.push(b'}');
        l
    };
    assert_eq!(at_cap.len(), 65536);
    s.send_line(&at_cap);
    assert_eq!(s.recv()["result"]["content"][0]["text"], "fits");
    let mut over = at_cap.clone();
    over.insert(1, b' ');
    s.send_line(&over);
    assert_eq!(code_and_id(&s.recv()), (Some(-32600), Value::Null));
    // An unterminated last line is still served at EOF.
    s.write(&raw_echo("10", r#"{"text":"last"}"#));
    s.close_stdin();
    assert_eq!(s.recv()["result"]["content"][0]["text"], "last");
}

#[test]
fn ten_thousand_pipelined_requests_with_bounded_memory() {
    let mut s = StdioPipe::start_with(&[]);
    let pid = s.pid();
    assert_alive(&mut s); // baseline of a running server
    let n = 10_000;
    let mut wire = Vec::new();
    for i in 0..n {
        wire.extend_from_slice(echo(i, &format!("{i:05}")).to_string().as_bytes());
        wire.push(b'\n');
    }
    let before = mem_of(pid);
    let mut stdin = s.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&wire).unwrap();
        stdin.flush().unwrap();
        stdin
    });
    // Do not read for a while: the server must stop reading (backpressure)
    // rather than queue 10k requests or responses.
    std::thread::sleep(Duration::from_secs(2));
    let stalled = mem_of(pid);
    let mut seen = vec![false; n as usize];
    for _ in 0..n {
        let r = s.recv();
        let id = r["id"].as_i64().unwrap();
        assert_eq!(
            r["result"]["content"][0]["text"],
            format!("{id:05}"),
            "answer matches request"
        );
        assert!(!std::mem::replace(&mut seen[id as usize], true), "dup {id}");
    }
    assert!(seen.iter().all(|s| *s));
    s.stdin = Some(writer.join().unwrap());
    let after = mem_of(pid);
    eprintln!("10k pipelined: {before:?} / stalled {stalled:?} / after {after:?}");
    // Generous bound for a debug build: 48 MB over the starting peak.
    let limit = before.hwm_kb.max(before.rss_kb) + 48 * 1024;
    assert!(
        stalled.rss_kb < limit && after.hwm_kb < limit,
        "{before:?} / stalled {stalled:?} / after {after:?}"
    );
}

#[test]
fn duplicate_in_flight_ids_and_cancellation() {
    let mut s = StdioPipe::start_with(&[]);
    let sleep = call(1, "debug_sleep", json!({"ms": 60_000}));
    s.send(&sleep);
    s.send(&sleep);
    let r = s.recv();
    assert_eq!(
        code_and_id(&r),
        (Some(-32600), json!(1)),
        "id in flight (BASE-03)"
    );
    // Malformed and unknown cancellations are ignored (CANCEL-05).
    for n in [
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": null}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}),
        json!({"jsonrpc": "2.0", "method": "notifications/unknown", "params": {}}),
    ] {
        s.send(&n);
    }
    s.assert_silent(Duration::from_millis(300));
    // Not a valid message at all (params must be an object): an id-less
    // -32600, as for any unreadable message.
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "x"}));
    assert_eq!(code_and_id(&s.recv()), (Some(-32600), Value::Null));
    // A real cancellation: no answer for it, and the id is free again.
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    );
    s.assert_silent(Duration::from_millis(300));
    s.send(&echo(1, "reused"));
    let r = s.recv();
    assert_eq!(r["result"]["content"][0]["text"], "reused");
    s.assert_silent(Duration::from_millis(300));
}

#[test]
fn handler_printing_to_stdout_keeps_the_stream_clean() {
    let mut s = StdioPipe::start_with(&[]);
    let n = 100;
    for i in 0..n {
        s.send(&call(2 * i, "debug_print_stdout", json!({})));
        s.send(&echo(2 * i + 1, "between"));
    }
    // Every line must be JSON (recv panics otherwise) and every id answered.
    let mut ids = std::collections::HashSet::new();
    for _ in 0..2 * n {
        ids.insert(s.recv()["id"].as_i64().unwrap());
    }
    assert_eq!(ids.len(), 2 * n as usize);
    s.assert_silent(Duration::from_millis(200));
}

#[test]
fn panicking_handlers_get_32603_and_the_server_keeps_serving() {
    let mut s = StdioPipe::start_with(&[]);
    let n = 100;
    let mut wire = Vec::new();
    for i in 0..n {
        wire.extend_from_slice(call(i, "debug_panic", json!({})).to_string().as_bytes());
        wire.push(b'\n');
    }
    s.write(&wire);
    let mut ids = std::collections::HashSet::new();
    for _ in 0..n {
        let r = s.recv();
        assert_eq!(r["error"]["code"], json!(-32603));
        ids.insert(r["id"].as_i64().unwrap());
    }
    assert_eq!(ids.len(), n as usize);
    assert_alive(&mut s);
}

#[test]
fn hanging_handlers_time_out_and_do_not_starve_the_connection() {
    let mut s = StdioPipe::start_with(&[
        ("MCP_HANDLER_TIMEOUT_MS", "300"),
        ("MCP_MAX_IN_FLIGHT", "4"),
    ]);
    // Four hanging calls fill every slot; a fifth request waits, then runs
    // once the handler timeout frees the slots. `started` is taken before
    // the first call is sent, so every handler's timeout starts after it
    // and the echo cannot come back earlier than 300 ms, however the
    // writes are scheduled.
    let started = Instant::now();
    for i in 0..4 {
        s.send(&call(i, "debug_sleep", json!({"ms": 600_000})));
    }
    s.send(&echo(10, "after"));
    let mut timed_out = 0;
    let mut echoed_at = None;
    for _ in 0..5 {
        let r = s.recv_within(Duration::from_secs(10));
        if r["id"] == json!(10) {
            echoed_at = Some(started.elapsed());
        } else {
            assert_eq!(r["error"]["code"], json!(-32603));
            assert!(
                r["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("timed out")
            );
            timed_out += 1;
        }
    }
    assert_eq!(timed_out, 4);
    let at = echoed_at.unwrap();
    assert!(
        at >= Duration::from_millis(300) && at < Duration::from_secs(10),
        "{at:?}"
    );
}

#[test]
fn eof_with_requests_in_flight_answers_then_exits() {
    let mut s = StdioPipe::start_with(&[]);
    s.send(&call(1, "debug_sleep", json!({"ms": 300})));
    s.send(&echo(2, "x"));
    s.close_stdin();
    let mut ids: Vec<i64> = (0..2).map(|_| s.recv()["id"].as_i64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, vec![1, 2]);
    assert!(eventually(Duration::from_secs(5), || matches!(
        s.child.try_wait(),
        Ok(Some(st)) if st.success()
    )));
}

#[test]
fn flood_of_garbage_lines_is_answered_with_bounded_memory() {
    let mut s = StdioPipe::start_with(&[]);
    let pid = s.pid();
    // The first request settles the process's era (ERA-04): modern here.
    assert_alive(&mut s);
    let before = mem_of(pid);
    let n = 10_000;
    let mut stdin = s.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        for i in 0..n {
            let line = match i % 4 {
                0 => b"{garbage\n".to_vec(),
                1 => b"[1,2,3]\n".to_vec(),
                2 => b"\xff\xfe\n".to_vec(),
                _ => {
                    format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"nope\"}}\n").into_bytes()
                }
            };
            stdin.write_all(&line).unwrap();
        }
        stdin.flush().unwrap();
        stdin
    });
    for i in 0..n {
        let r = s.recv();
        let want = match i % 4 {
            0 | 2 => -32700,
            1 => -32600,
            _ => -32602, // no envelope on a modern process (LADDER-08)
        };
        assert_eq!(r["error"]["code"], json!(want), "line {i}");
    }
    s.stdin = Some(writer.join().unwrap());
    let after = mem_of(pid);
    eprintln!("10k garbage lines: {before:?} -> {after:?}");
    assert!(
        after.hwm_kb < before.hwm_kb.max(before.rss_kb) + 32 * 1024,
        "{before:?} → {after:?}"
    );
    assert_alive(&mut s);
}

// LEGACY-06
/// Issue 13 item 11 (server side): with keep-alive on, a
/// handshake-era stdio connection gets a `ping` every interval; while the
/// client answers the connection stays, and once it stops answering the
/// server ends the connection by itself. The modern era gets no pings.
#[test]
fn keep_alive_pings_end_a_connection_whose_client_stopped_answering() {
    let env = [
        ("MCP_KEEP_ALIVE_MS", "100"),
        ("MCP_KEEP_ALIVE_TIMEOUT_MS", "300"),
    ];
    let mut s = StdioPipe::start_with(&env);
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    assert_eq!(s.recv()["id"], json!(1));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for _ in 0..3 {
        let p = s.recv_within(Duration::from_secs(20));
        assert_eq!(p["method"], json!("ping"), "{p}");
        s.send(&json!({"jsonrpc": "2.0", "id": p["id"], "result": {}}));
    }
    // Still serving: answer its pings while waiting for our answer.
    s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    loop {
        let m = s.recv_within(Duration::from_secs(20));
        if m["method"] == json!("ping") {
            s.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": {}}));
            continue;
        }
        assert_eq!(m["id"], json!(2), "{m}");
        break;
    }
    // Silence from the client: the server gives up and exits.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = s.child.try_wait().expect("try_wait") {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "the server kept a dead connection"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success(), "{status:?}");

    // The modern era: no server-to-client requests, so no pings.
    let mut s = StdioPipe::start_with(&env);
    s.send(&echo(1, "x"));
    assert_eq!(s.recv()["id"], json!(1));
    s.assert_silent(Duration::from_millis(500));
    assert_alive(&mut s);
}
