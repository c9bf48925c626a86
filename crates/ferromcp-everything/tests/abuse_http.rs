//! Wire-level abuse suite for the Streamable HTTP transport: hostile input
//! sent over real TCP to a real everything-server process, each case with
//! its exact expected outcome. `docs/SECURITY.md` maps every threat to the
//! test here that covers it.
//!
//! Limits are lowered per test through the `MCP_*` environment variables of
//! the everything-server binary so timeouts and caps are reached quickly;
//! defaults are tested where that is fast. Memory bounds read `VmRSS` /
//! `VmHWM` of the server process from `/proc` (the test binary is a debug
//! build, so the margins are generous and stated next to each assertion).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

fn call(id: i64, name: &str, args: Value) -> Value {
    request(id, "tools/call", json!({"name": name, "arguments": args}))
}

fn echo(id: i64, text: &str) -> Value {
    call(id, "echo", json!({"text": text}))
}

/// Headers of a modern `tools/call` of `echo`, for raw bodies.
fn echo_headers() -> Vec<(&'static str, &'static str)> {
    vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
    ]
}

fn envelope_json() -> String {
    envelope().to_string()
}

/// A raw echo call whose `arguments` object is `args` (raw JSON text).
fn raw_echo(args: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{args},"_meta":{}}}}}"#,
        envelope_json()
    )
    .into_bytes()
}

fn status_code(r: &Response) -> (u16, Option<i64>) {
    (r.status, r.error_code())
}

fn assert_alive(s: &HttpServer) {
    let r = s.post(&echo(99, "alive"), &[]);
    assert_eq!(r.status, 200, "server no longer serves");
    assert_eq!(r.json()["result"]["content"][0]["text"], "alive");
}

fn connect(s: &HttpServer) -> TcpStream {
    let c = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(20))).ok();
    c
}

/// Reads until the peer closes (or the read timeout); returns the bytes and
/// whether the peer closed.
fn read_until_close(c: &mut TcpStream) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (out, true),
            Err(_) => return (out, false),
        }
    }
}

fn first_line(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

// ---------------------------------------------------------------------------
// Malformed JSON-RPC
// ---------------------------------------------------------------------------

#[test]
fn malformed_truncated_and_non_object_json() {
    let s = HttpServer::start();
    let h = echo_headers();
    let full = String::from_utf8(raw_echo(r#"{"text":"x"}"#)).unwrap();
    let truncated: Vec<String> = [10, full.len() / 2, full.len() - 1]
        .iter()
        .map(|n| full[..*n].to_owned())
        .collect();
    // (body, code, echoed id): the id is echoed whenever it could be read
    // (BASE-05) and null otherwise.
    let null = Value::Null;
    let one = json!(1);
    let mut cases: Vec<(Vec<u8>, i64, &Value)> = vec![
        (b"{".to_vec(), -32700, &null),
        (b"}".to_vec(), -32700, &null),
        (b"nul".to_vec(), -32700, &null),
        (b"tru".to_vec(), -32700, &null),
        (br#"{"jsonrpc":"2.0","id":1,}"#.to_vec(), -32700, &null),
        (b"{'jsonrpc':'2.0'}".to_vec(), -32700, &null),
        (format!("{full} trailing").into_bytes(), -32700, &null),
        (format!("{full}{full}").into_bytes(), -32700, &null),
        (format!("\u{feff}{full}").into_bytes(), -32700, &null), // BOM
        (b"\x00\x00".to_vec(), -32700, &null),
        (b"   ".to_vec(), -32700, &null),
        (b"5".to_vec(), -32600, &null),
        (b"-1.5e3".to_vec(), -32600, &null),
        (br#""a string""#.to_vec(), -32600, &null),
        (b"null".to_vec(), -32600, &null),
        (b"true".to_vec(), -32600, &null),
        (br#"{}"#.to_vec(), -32600, &null),
        (br#"{"jsonrpc":"2.0"}"#.to_vec(), -32600, &null),
        (br#"{"jsonrpc":"2.0","id":1}"#.to_vec(), -32600, &one),
        (
            br#"{"jsonrpc":"2.1","id":1,"method":"tools/call"}"#.to_vec(),
            -32600,
            &one,
        ),
        (
            br#"{"jsonrpc":2,"id":1,"method":"tools/call"}"#.to_vec(),
            -32600,
            &one,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":7}"#.to_vec(),
            -32600,
            &one,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":null}"#.to_vec(),
            -32600,
            &one,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}"#.to_vec(),
            -32600,
            &one,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#.to_vec(),
            -32600,
            &one,
        ),
        // A duplicated member: which copy is meant is unknowable.
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list"}"#.to_vec(),
            -32600,
            &null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call"}"#.to_vec(),
            -32600,
            &null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","result":{}}"#.to_vec(),
            -32600,
            &one,
        ),
    ];
    for t in &truncated {
        cases.push((t.clone().into_bytes(), -32700, &null));
    }
    for (body, code, id) in &cases {
        let r = s.raw("POST", "/mcp", &h, body);
        let what = String::from_utf8_lossy(&body[..body.len().min(60)]).into_owned();
        assert_eq!(status_code(&r), (400, Some(*code)), "{what}");
        assert_eq!(&r.json()["id"], *id, "{what}");
    }
    // A readable id is echoed on an invalid request.
    let r = s.raw(
        "POST",
        "/mcp",
        &h,
        br#"{"jsonrpc":"1.0","id":"keep","method":"tools/call"}"#,
    );
    assert_eq!(status_code(&r), (400, Some(-32600)));
    assert_eq!(r.json()["id"], "keep");
    // A duplicated params member is refused (a first-wins and a last-wins
    // reader would disagree); duplicated keys inside arguments resolve
    // last-wins for both the header check and the handler.
    let dup = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","name":"other","arguments":{{"text":"a"}},"_meta":{}}}}}"#,
        envelope_json()
    );
    let r = s.raw("POST", "/mcp", &h, dup.as_bytes());
    assert_eq!(status_code(&r), (400, Some(-32602)));
    let r = s.raw("POST", "/mcp", &h, &raw_echo(r#"{"text":"a","text":"b"}"#));
    assert_eq!(r.json()["result"]["content"][0]["text"], "b");
    assert_alive(&s);
}

#[test]
fn batches_are_rejected() {
    let s = HttpServer::start();
    let one = echo(1, "x").to_string();
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
            .to_string();
    let many = format!("[{}]", vec![one.as_str(); 10_000].join(","));
    let nested = format!("[[{one}]]");
    for (body, with_version_header) in [
        (format!("[{one}]"), true),
        (format!("[{one}]"), false),
        (format!("[{one},{one}]"), true),
        (format!("[{note}]"), true),
        ("[]".to_owned(), true),
        (nested, true),
        (many, true),
    ] {
        let mut h = echo_headers();
        if !with_version_header {
            h.retain(|(n, _)| *n != "MCP-Protocol-Version");
        }
        let started = Instant::now();
        let r = s.raw("POST", "/mcp", &h, body.as_bytes());
        assert_eq!(
            status_code(&r),
            (400, Some(-32600)),
            "{}",
            &body[..body.len().min(40)]
        );
        assert_eq!(r.json()["id"], Value::Null);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[test]
fn response_objects_sent_to_the_server() {
    let s = HttpServer::start();
    let result = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}"#;
    let null_error = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"x"}}"#;
    let bad_error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#;
    // Modern wire (version header present): a response is not a request (LADDER-05).
    for body in [&result[..], error, null_error] {
        let r = s.raw("POST", "/mcp", &echo_headers(), body);
        assert_eq!(status_code(&r), (400, Some(-32600)));
        assert_eq!(r.json()["id"], Value::Null);
    }
    let r = s.raw("POST", "/mcp", &echo_headers(), bad_error);
    assert_eq!(status_code(&r), (400, Some(-32600)));
    // No version header and no session: the handshake era needs a session.
    let plain = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let r = s.raw("POST", "/mcp", &plain, result);
    assert_eq!(status_code(&r), (400, Some(-32600)));
    // Inside a session: an answer nobody waits for is accepted and dropped.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = s.raw("POST", "/mcp", &plain, init.to_string().as_bytes());
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let with_sid = [plain[0], plain[1], ("Mcp-Session-Id", sid.as_str())];
    for body in [
        &result[..],
        error,
        null_error,
        br#"{"jsonrpc":"2.0","id":"srv-999999","result":{"action":"accept"}}"#,
    ] {
        let r = s.raw("POST", "/mcp", &with_sid, body);
        assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(body));
        assert!(r.body.is_empty());
    }
    assert_alive(&s);
}

#[test]
fn ids_of_every_kind() {
    let s = HttpServer::start();
    let long = format!("\"{}\"", "i".repeat(64 * 1024));
    let valid = [
        "0",
        "-1",
        "42",
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551615",
        r#""""#,
        r#""abc""#,
        r#""\u00e9\ud83d\ude00""#,
        r#""with \"quotes\" and \\ and \n""#,
        r#""\u0000""#,
        &long,
    ];
    for raw in valid {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{raw},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"x"}},"_meta":{}}}}}"#,
            envelope_json()
        );
        let r = s.raw("POST", "/mcp", &echo_headers(), body.as_bytes());
        assert_eq!(r.status, 200, "{}", &raw[..raw.len().min(40)]);
        let want: Value = serde_json::from_str(raw).unwrap();
        assert_eq!(r.json()["id"], want, "id echoed exactly");
        // Integers keep their JSON type and exact digits (no float round-trip).
        if !raw.starts_with('"') {
            let text = String::from_utf8_lossy(&r.body);
            assert!(text.contains(&format!("\"id\":{raw}")), "{text}");
        }
    }
    for (raw, code) in [
        ("null", -32600),
        ("1.0", -32600),
        ("1.5", -32600),
        ("1e3", -32600),
        ("-0", -32600),
        ("18446744073709551616", -32600),
        ("-9223372036854775809", -32600),
        ("true", -32600),
        ("{}", -32600),
        ("[]", -32600),
        ("[1]", -32600),
        (r#"{"a":1}"#, -32600),
        ("1e400", -32700),
        ("-1e400", -32700),
    ] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{raw},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"x"}},"_meta":{}}}}}"#,
            envelope_json()
        );
        let r = s.raw("POST", "/mcp", &echo_headers(), body.as_bytes());
        assert_eq!(status_code(&r), (400, Some(code)), "id {raw}");
        assert_eq!(r.json()["id"], Value::Null, "id {raw}");
    }
}

#[test]
fn huge_numbers() {
    let s = HttpServer::start();
    let digits = "9".repeat(100_000);
    let h = echo_headers();
    let started = Instant::now();
    // In the handler's arguments: a params error naming the problem.
    for args in [
        r#"{"text":"x","n":1e400}"#.to_owned(),
        r#"{"text":1e400}"#.to_owned(),
        format!(r#"{{"text":"x","n":{digits}}}"#),
        format!(r#"{{"text":"x","n":-{digits}}}"#),
        format!(r#"{{"text":"x","n":0.{digits}e999999999}}"#),
    ] {
        let r = s.raw("POST", "/mcp", &h, &raw_echo(&args));
        assert_eq!(status_code(&r), (400, Some(-32602)), "{}", &args[..40]);
        assert_eq!(r.json()["id"], json!(1));
    }
    // Representable numbers that violate the schema: a tool error (TOOL-06).
    let r = s.raw("POST", "/mcp", &h, &raw_echo(r#"{"text":1e300}"#));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["isError"], json!(true));
    // In an ignored member, a huge number is skipped, not parsed.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","x":{digits},"params":{{"name":"echo","arguments":{{"text":"ok"}},"_meta":{}}}}}"#,
        envelope_json()
    );
    let r = s.raw("POST", "/mcp", &h, body.as_bytes());
    assert_eq!(r.json()["result"]["content"][0]["text"], "ok");
    // In the envelope: a malformed _meta is -32602.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1e400}}}"#;
    let r = s.raw(
        "POST",
        "/mcp",
        &[h[0], h[1], h[2], ("Mcp-Method", "tools/list")],
        body.as_bytes(),
    );
    assert_eq!(status_code(&r), (400, Some(-32602)));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn nesting_100k_deep() {
    let s = HttpServer::start();
    let d = 100_000;
    let arrays = format!("{}{}", "[".repeat(d), "]".repeat(d));
    let objects = format!("{}1{}", r#"{"a":"#.repeat(d), "}".repeat(d));
    let h = echo_headers();
    let env = envelope_json();
    let started = Instant::now();
    let cases: Vec<(String, u16, Option<i64>, Value)> = vec![
        // In the arguments: recursion limit → params error, id kept.
        (
            String::from_utf8(raw_echo(&format!(r#"{{"text":"x","d":{arrays}}}"#))).unwrap(),
            400,
            Some(-32602),
            json!(1),
        ),
        (
            String::from_utf8(raw_echo(&format!(r#"{{"text":"x","d":{objects}}}"#))).unwrap(),
            400,
            Some(-32602),
            json!(1),
        ),
        // In _meta (decoded by the ladder): -32602.
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"x"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"x":{arrays}}}}}}}}}"#
            ),
            400,
            Some(-32602),
            json!(1),
        ),
        // In members nobody decodes: skipped without recursion, served.
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","zz":{objects},"arguments":{{"text":"x"}},"_meta":{env}}}}}"#
            ),
            200,
            None,
            json!(1),
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","x":{arrays},"params":{{"name":"echo","arguments":{{"text":"x"}},"_meta":{env}}}}}"#
            ),
            200,
            None,
            json!(1),
        ),
        // As the id, the body, or unclosed.
        (
            format!(r#"{{"jsonrpc":"2.0","id":{arrays},"method":"tools/call"}}"#),
            400,
            Some(-32600),
            Value::Null,
        ),
        (arrays.clone(), 400, Some(-32600), Value::Null),
        (objects.clone(), 400, Some(-32600), Value::Null),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","x":{}"#,
                "[".repeat(d)
            ),
            400,
            Some(-32700),
            Value::Null,
        ),
    ];
    for (body, status, code, id) in cases {
        let r = s.raw("POST", "/mcp", &h, body.as_bytes());
        assert_eq!(
            (r.status, r.error_code()),
            (status, code),
            "{}",
            &body[..80]
        );
        assert_eq!(r.json()["id"], id);
    }
    // The handshake era decodes params into its own types: same outcome.
    let init = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{"x":{arrays}}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    let r = s.raw("POST", "/mcp", &h[..2], init.as_bytes());
    assert_eq!(status_code(&r), (400, Some(-32602)));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_alive(&s);
}

#[test]
fn invalid_utf8_and_lone_surrogates() {
    let s = HttpServer::start();
    let h = echo_headers();
    let env = envelope_json();
    let with_text = |text: &[u8]| {
        let mut b = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":""#.to_vec();
        b.extend_from_slice(text);
        b.extend_from_slice(format!(r#""}},"_meta":{env}}}}}"#).as_bytes());
        b
    };
    // Invalid UTF-8 anywhere: not JSON (BASE-01) → -32700.
    for bad in [
        &b"\xff\xfe"[..],
        b"\xc0\xaf",         // overlong '/'
        b"\xed\xa0\x80",     // UTF-8-encoded surrogate
        b"\xf4\x90\x80\x80", // above U+10FFFF
        b"\xe2\x82",         // truncated sequence
    ] {
        let r = s.raw("POST", "/mcp", &h, &with_text(bad));
        assert_eq!(status_code(&r), (400, Some(-32700)), "{bad:?}");
    }
    let mut bad_key = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call",""#.to_vec();
    bad_key.extend_from_slice(b"\xc3\":1}");
    assert_eq!(
        status_code(&s.raw("POST", "/mcp", &h, &bad_key)),
        (400, Some(-32700))
    );
    // A raw control character inside a string is not JSON.
    let r = s.raw("POST", "/mcp", &h, &with_text(b"a\x01b"));
    assert_eq!(status_code(&r), (400, Some(-32700)));
    // Escaped U+0000 is valid JSON and round-trips.
    let r = s.raw("POST", "/mcp", &h, &with_text(br"a\u0000b"));
    assert_eq!(r.json()["result"]["content"][0]["text"], "a\u{0}b");
    // Lone surrogates (valid JSON grammar, not Unicode).
    let r = s.raw("POST", "/mcp", &h, &with_text(br"\ud800"));
    assert_eq!(status_code(&r), (400, Some(-32602)), "in arguments");
    assert_eq!(r.json()["id"], json!(1));
    let r = s.raw("POST", "/mcp", &h, &with_text(br"\udc00x\ud800"));
    assert_eq!(status_code(&r), (400, Some(-32602)));
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/\ud800call","params":{{"_meta":{env}}}}}"#
    );
    let r = s.raw("POST", "/mcp", &h, body.as_bytes());
    assert_eq!(status_code(&r), (400, Some(-32600)), "in method");
    assert_eq!(r.json()["id"], Value::Null);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":"\ud800","method":"tools/call","params":{{"_meta":{env}}}}}"#
    );
    let r = s.raw("POST", "/mcp", &h, body.as_bytes());
    assert_eq!(status_code(&r), (400, Some(-32700)), "in id");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"ec\ud800ho","arguments":{{}},"_meta":{env}}}}}"#
    );
    let r = s.raw("POST", "/mcp", &h, body.as_bytes());
    assert_eq!(
        status_code(&r),
        (400, Some(-32020)),
        "in name: cannot equal any Mcp-Name"
    );
    // In a member nobody decodes: skipped.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"x":"\ud800","method":"tools/call","params":{{"name":"echo","arguments":{{"text":"ok"}},"_meta":{env}}}}}"#
    );
    let r = s.raw("POST", "/mcp", &h, body.as_bytes());
    assert_eq!(r.json()["result"]["content"][0]["text"], "ok");
    assert_alive(&s);
}

// ---------------------------------------------------------------------------
// Bodies: oversized, lying, trickled
// ---------------------------------------------------------------------------

#[test]
fn oversized_bodies_are_413_with_bounded_memory() {
    // 512 KiB limit so the one-byte-chunk case stays fast on a debug build.
    let limit = 512 * 1024;
    let s = HttpServer::start_with(&[("MCP_MAX_BODY_BYTES", &limit.to_string())]);
    let pid = s.child.id();
    let h = echo_headers();
    // Declared too large: refused before reading (no body sent at all).
    let mut c = connect(&s);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        s.host(),
        limit + 1
    );
    c.write_all(head.as_bytes()).unwrap();
    let (raw, _) = read_until_close(&mut c);
    assert!(first_line(&raw).contains(" 413 "), "{}", first_line(&raw));
    // Content-Length exactly at the limit is read (and is not JSON).
    let r = s.raw("POST", "/mcp", &h, &vec![b' '; limit]);
    assert_eq!(status_code(&r), (400, Some(-32700)));
    // Streamed (chunked) past the limit: 413 as soon as the limit is crossed.
    let mut chunked = Vec::new();
    for _ in 0..8 {
        chunked.extend_from_slice(format!("{:x}\r\n", 128 * 1024).as_bytes());
        chunked.extend(std::iter::repeat_n(b' ', 128 * 1024));
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let mut hc = h.clone();
    hc.push(("Transfer-Encoding", "chunked"));
    assert_eq!(s.raw("POST", "/mcp", &hc, &chunked).status, 413);
    // Memory: two concurrent bodies of one-byte chunks, each just under the
    // limit. Each costs its size plus one chunk; before the fix each cost
    // ~36x its size (18 MB here). Margin: 24 MB over the baseline peak for
    // 1 MiB of bodies.
    let before = mem_of(pid);
    let senders: Vec<_> = (0..2)
        .map(|_| {
            let port = s.port;
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(60))).ok();
                let mut body = format!(
                    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                )
                .into_bytes();
                for _ in 0..(512 * 1024 - 16) {
                    body.extend_from_slice(b"1\r\n \r\n");
                }
                body.extend_from_slice(b"0\r\n\r\n");
                c.write_all(&body).unwrap();
                let (raw, _) = read_until_close(&mut c);
                first_line(&raw)
            })
        })
        .collect();
    for t in senders {
        let line = t.join().unwrap();
        assert!(line.contains(" 400 "), "{line}"); // whitespace only: -32700
    }
    let after = mem_of(pid);
    let growth = after
        .hwm_kb
        .saturating_sub(before.hwm_kb.max(before.rss_kb));
    eprintln!("2 x 512 KiB of one-byte chunks: peak RSS +{growth} KiB");
    assert!(
        growth < 24 * 1024,
        "peak RSS grew by {growth} KiB reading 1 MiB of one-byte chunks ({before:?} → {after:?})"
    );
    assert_alive(&s);
}

#[test]
fn json_parse_amplification_is_bounded_per_request() {
    // A body just under the limit whose arguments are a million empty
    // arrays: decoded into JSON values it costs ~22x its size (measured on a
    // debug build; docs/SECURITY.md, "Memory sizing"). The bound asserted
    // here, 48x over the starting peak for a 1 MiB body, documents that the
    // cost is per request and linear in the body, and is released.
    let limit = 1024 * 1024;
    let s = HttpServer::start_with(&[("MCP_MAX_BODY_BYTES", &limit.to_string())]);
    let pid = s.child.id();
    assert_alive(&s);
    let before = mem_of(pid);
    let mut pad = String::from("[[]");
    while pad.len() < limit - 400 {
        pad.push_str(",[]");
    }
    pad.push(']');
    let body = raw_echo(&format!(r#"{{"text":"big","pad":{pad}}}"#));
    assert!(body.len() <= limit);
    let r = s.raw("POST", "/mcp", &echo_headers(), &body);
    assert_eq!(r.json()["result"]["content"][0]["text"], "big");
    let after = mem_of(pid);
    let growth = after
        .hwm_kb
        .saturating_sub(before.hwm_kb.max(before.rss_kb));
    eprintln!("1 MiB of [] arguments: peak RSS +{growth} KiB ({before:?} → {after:?})");
    assert!(growth < 48 * 1024, "peak RSS grew by {growth} KiB");
    assert!(
        eventually(Duration::from_secs(5), || mem_of(pid).rss_kb
            < before.rss_kb + 16 * 1024),
        "memory not released: {:?}",
        mem_of(pid)
    );
}

#[test]
fn lying_content_lengths() {
    let s = HttpServer::start_with(&[("MCP_BODY_READ_TIMEOUT_MS", "500")]);
    let body = echo(1, "x").to_string();
    let hs: Vec<(String, String)> = modern_headers(&echo(1, "x"));
    let head = |cl: &str, extra: &str| {
        let mut r = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\n{extra}", s.host());
        for (n, v) in &hs {
            r.push_str(&format!("{n}: {v}\r\n"));
        }
        r.push_str(&format!("Content-Length: {cl}\r\n\r\n"));
        r
    };
    // Longer than sent, then silence: 408 after the body timeout.
    let mut c = connect(&s);
    let started = Instant::now();
    c.write_all(format!("{}{body}", head(&(body.len() + 100).to_string(), "")).as_bytes())
        .unwrap();
    let (raw, _) = read_until_close(&mut c);
    assert!(first_line(&raw).contains(" 408 "), "{}", first_line(&raw));
    assert!(started.elapsed() < Duration::from_secs(5));
    // Longer than sent, then the client half-closes: the body is short → 400.
    let mut c = connect(&s);
    c.write_all(format!("{}{body}", head(&(body.len() + 100).to_string(), "")).as_bytes())
        .unwrap();
    c.shutdown(Shutdown::Write).unwrap();
    let (raw, _) = read_until_close(&mut c);
    assert!(first_line(&raw).contains(" 400 "), "{}", first_line(&raw));
    // Shorter than sent: the declared prefix is the request (truncated JSON,
    // -32700); the surplus is parsed as the next request line and refused.
    let mut c = connect(&s);
    c.write_all(format!("{}{body}", head(&(body.len() - 5).to_string(), "")).as_bytes())
        .unwrap();
    let mut rd = BufReader::new(c.try_clone().unwrap());
    let first = read_response(&mut rd).unwrap();
    assert_eq!(status_code(&first), (400, Some(-32700)));
    let (rest, closed) = read_until_close(&mut c);
    assert!(closed);
    assert!(
        rest.is_empty() || first_line(&rest).contains(" 400 "),
        "{}",
        first_line(&rest)
    );
    // Malformed or conflicting lengths: refused by the HTTP parser (400).
    for cl in ["abc", "-1", "+5", "99999999999999999999999", "1, 2"] {
        let mut c = connect(&s);
        c.write_all(format!("{}{body}", head(cl, "")).as_bytes())
            .unwrap();
        let (raw, _) = read_until_close(&mut c);
        assert!(
            first_line(&raw).contains(" 400 "),
            "CL {cl}: {}",
            first_line(&raw)
        );
    }
    let mut c = connect(&s);
    let dup = format!("Content-Length: {}\r\n", body.len() + 1);
    c.write_all(format!("{}{body}", head(&body.len().to_string(), &dup)).as_bytes())
        .unwrap();
    let (raw, _) = read_until_close(&mut c);
    assert!(first_line(&raw).contains(" 400 "), "{}", first_line(&raw));
    // Content-Length and Transfer-Encoding together: chunked wins (RFC 9112
    // §6.3) and the connection is closed afterwards, so no smuggled request.
    let mut c = connect(&s);
    let te = "Transfer-Encoding: chunked\r\n";
    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let smuggled = http_request(&s.host(), &hs, body.as_bytes(), false);
    let mut wire = format!("{}{chunked}", head("3", te)).into_bytes();
    wire.extend_from_slice(&smuggled);
    c.write_all(&wire).unwrap();
    let (raw, closed) = read_until_close(&mut c);
    let text = String::from_utf8_lossy(&raw);
    assert!(first_line(&raw).contains(" 200 "), "{text}");
    assert!(closed);
    assert_eq!(
        text.matches("HTTP/1.1 ").count(),
        1,
        "smuggled request served"
    );
    assert_alive(&s);
}

#[test]
fn trickled_body_times_out() {
    let s = HttpServer::start_with(&[("MCP_BODY_READ_TIMEOUT_MS", "500")]);
    let body = echo(1, "x").to_string();
    let mut c = connect(&s);
    let hs = modern_headers(&echo(1, "x"));
    let full = http_request(&s.host(), &hs, body.as_bytes(), true);
    let split = full.len() - body.len();
    c.write_all(&full[..split]).unwrap();
    // One byte every 50 ms: the body takes at least ~5 s; the limit is
    // 0.5 s. The whole body is trickled (until the server hangs up), so
    // without the limit it completes and is answered 200: the 408 alone
    // shows the limit fired, whatever the machine's load did to the clock.
    let mut reader = c.try_clone().unwrap();
    let t = std::thread::spawn(move || read_until_close(&mut reader));
    for b in &full[split..] {
        if c.write_all(&[*b]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (raw, _) = t.join().unwrap();
    assert!(first_line(&raw).contains(" 408 "), "{}", first_line(&raw));
    assert_alive(&s);
}

// ---------------------------------------------------------------------------
// Headers: slowloris, limits, duplicates, control characters, encoding
// ---------------------------------------------------------------------------

#[test]
fn slowloris_on_headers_times_out() {
    let s = HttpServer::start_with(&[("MCP_HEADER_READ_TIMEOUT_MS", "500")]);
    let pid = s.child.id();
    let closes_within = |prefix: &[u8], trickle: &[u8], within: Duration| {
        let mut c = connect(&s);
        c.write_all(prefix).unwrap();
        let started = Instant::now();
        let mut reader = c.try_clone().unwrap();
        let t = std::thread::spawn(move || read_until_close(&mut reader));
        for b in trickle {
            if c.write_all(&[*b]).is_err() || started.elapsed() > within * 3 {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let (_, closed) = t.join().unwrap();
        (closed, started.elapsed())
    };
    // The limit is 0.5 s and the default 10 s: 6 s tells them apart with
    // room for a loaded machine.
    let within = Duration::from_secs(6);
    let trickle = b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    for (what, prefix, slow) in [
        ("silent connection", &b""[..], &b""[..]),
        ("partial HTTP/2 preface", b"P", b""),
        ("partial request line", b"POST /mcp HT", b""),
        ("headers trickled", b"POST /mcp HTTP/1.1\r\n", &trickle[..]),
    ] {
        let (closed, took) = closes_within(prefix, slow, within);
        assert!(
            closed && took < within,
            "{what}: closed={closed} after {took:?}"
        );
    }
    // An idle keep-alive connection is closed after the same timeout.
    let mut c = connect(&s);
    let hs = modern_headers(&echo(1, "x"));
    c.write_all(&http_request(
        &s.host(),
        &hs,
        echo(1, "x").to_string().as_bytes(),
        false,
    ))
    .unwrap();
    let mut rd = BufReader::new(c.try_clone().unwrap());
    assert_eq!(read_response(&mut rd).unwrap().status, 200);
    let started = Instant::now();
    let (_, closed) = read_until_close(&mut c);
    assert!(closed && started.elapsed() < within);
    // The timeout counts from each request: a connection used every 0.2 s
    // for three times the limit stays open (one timer per connection is
    // armed at the first wait and moved when it fires early).
    let mut c = connect(&s);
    let mut rd = BufReader::new(c.try_clone().unwrap());
    for i in 0..8 {
        let body = echo(i, "x").to_string();
        c.write_all(&http_request(&s.host(), &hs, body.as_bytes(), false))
            .unwrap();
        let r = read_response(&mut rd);
        assert_eq!(r.map(|r| r.status), Some(200), "request {i}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Many silent connections at once: all closed, descriptors released.
    let base = fd_count(pid);
    let silent: Vec<TcpStream> = (0..200).map(|_| connect(&s)).collect();
    assert!(eventually(Duration::from_secs(5), || fd_count(pid) <= base + 5));
    drop(silent);
    assert_alive(&s);
}

#[test]
fn too_many_and_too_long_headers() {
    let s = HttpServer::start();
    let body = request(1, "tools/list", json!({})).to_string();
    let base = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ];
    let names: Vec<String> = (0..200).map(|i| format!("X-Filler-{i}")).collect();
    let with_n = |n: usize| {
        let mut h: Vec<(&str, &str)> = base.to_vec();
        h.extend(names.iter().take(n).map(|n| (n.as_str(), "a")));
        h
    };
    // Host, Connection, Content-Length and the 4 above make 7 lines.
    assert_eq!(
        s.raw("POST", "/mcp", &with_n(93), body.as_bytes()).status,
        200
    );
    assert_eq!(
        s.raw("POST", "/mcp", &with_n(94), body.as_bytes()).status,
        431
    );
    assert_eq!(
        s.raw("POST", "/mcp", &with_n(200), body.as_bytes()).status,
        431
    );
    let big = "a".repeat(1024 * 1024);
    let mut h = base.to_vec();
    h.push(("X-Big", &big));
    assert_eq!(s.raw("POST", "/mcp", &h, body.as_bytes()).status, 431);
    let long_path = format!("/mcp?{}", "a".repeat(100_000));
    assert_eq!(
        s.raw("POST", &long_path, &base, body.as_bytes()).status,
        414
    );
    assert_alive(&s);
}

#[test]
fn duplicated_routing_and_param_headers() {
    let s = HttpServer::start();
    let b = call(1, "test_x_mcp_header", json!({"region": "Hello"}));
    let body = b.to_string();
    let base: Vec<(String, String)> = modern_headers(&b);
    let send = |extra: &[(&str, &str)]| {
        let mut h: Vec<(&str, &str)> = base.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        h.push(("Mcp-Param-Region", "Hello"));
        h.extend_from_slice(extra);
        s.raw("POST", "/mcp", &h, body.as_bytes())
    };
    assert_eq!(send(&[]).status, 200);
    for extra in [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("mcp-protocol-version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("MCP-METHOD", "tools/call"),
        ("Mcp-Name", "test_x_mcp_header"),
        ("mcp-name", "test_x_mcp_header"),
        ("Mcp-Param-Region", "Hello"),
        ("MCP-PARAM-REGION", "Hello"),
    ] {
        let r = send(&[extra]);
        assert_eq!(status_code(&r), (400, Some(-32020)), "{extra:?} twice");
    }
    // A list-folded value is one (wrong) value, not two (Appendix C.9).
    let mut h: Vec<(&str, &str)> = base
        .iter()
        .filter(|(n, _)| n != "Mcp-Method")
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    h.push(("Mcp-Method", "tools/call, tools/call"));
    h.push(("Mcp-Param-Region", "Hello"));
    let r = s.raw("POST", "/mcp", &h, body.as_bytes());
    assert_eq!(status_code(&r), (400, Some(-32020)));
    // Unknown Mcp-Param-* headers are ignored (HDR-22 forwards them).
    assert_eq!(send(&[("Mcp-Param-Other", "x")]).status, 200);
    // Duplicated Host / Origin: refused before anything else.
    let host = s.host();
    assert_eq!(send(&[("Host", &host), ("Host", &host)]).status, 400);
    assert_eq!(
        send(&[("Host", &host), ("Host", "evil.example.com")]).status,
        400
    );
    let origin = format!("http://{host}");
    assert_eq!(
        send(&[("Origin", &origin), ("Origin", &origin)]).status,
        403
    );
    assert_eq!(
        send(&[("Origin", &origin), ("Origin", "http://evil.example.com")]).status,
        403
    );
}

#[test]
fn cr_lf_and_control_characters() {
    let s = HttpServer::start();
    let body = request(1, "tools/list", json!({})).to_string();
    let head = |line: &[u8]| {
        let mut r = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\n",
            s.host()
        )
        .into_bytes();
        r.extend_from_slice(line);
        r.extend_from_slice(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
        r
    };
    // Bytes the HTTP parser refuses outright: 400, no JSON-RPC at all.
    for line in [
        &b"Mcp-Method: tools/list\x00\r\n"[..],
        b"Mcp-Method: tools/\x01list\r\n",
        b"Mcp-Method: tools/\x7flist\r\n",
        b"Mcp-Method: tools/list\rX-Injected: 1\r\n",
        b"Mcp-Method: tools/\r\n list\r\n", // obs-fold
        b"Mcp-Method : tools/list\r\n",     // space before the colon
        b"Mcp\x01Method: tools/list\r\n",
    ] {
        let mut c = connect(&s);
        c.write_all(&head(line)).unwrap();
        let (raw, _) = read_until_close(&mut c);
        assert!(
            first_line(&raw).contains(" 400 "),
            "{:?}: {}",
            String::from_utf8_lossy(line),
            first_line(&raw)
        );
    }
    // Bare LF line endings are tolerated by the parser (RFC 9112 §2.2).
    let mut c = connect(&s);
    let lf = String::from_utf8(head(b"Mcp-Method: tools/list\r\n"))
        .unwrap()
        .replace("\r\n", "\n");
    c.write_all(lf.as_bytes()).unwrap();
    let (raw, _) = read_until_close(&mut c);
    assert!(first_line(&raw).contains(" 200 "));
    // obs-text (0x80-0xFF) reaches the MCP layer and is refused there (HDR-10).
    let b = echo(1, "x").to_string();
    for line in [&b"Mcp-Name: ech\xf6\r\n"[..], b"Mcp-Name: \xff\r\n"] {
        let mut r = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n",
            s.host()
        )
        .into_bytes();
        r.extend_from_slice(line);
        r.extend_from_slice(format!("Content-Length: {}\r\n\r\n{b}", b.len()).as_bytes());
        let mut c = connect(&s);
        c.write_all(&r).unwrap();
        let mut rd = BufReader::new(c);
        let resp = read_response(&mut rd).unwrap();
        assert_eq!(status_code(&resp), (400, Some(-32020)));
    }
    let xb = call(1, "test_x_mcp_header", json!({"region": "Hello"}));
    let r = s.post(&xb, &[("Mcp-Param-Region", "Hell\u{f6}")]);
    assert_eq!(status_code(&r), (400, Some(-32020)));
    // CR/LF inside JSON strings: never reach a header. A method with CRLF is
    // compared byte-exactly with Mcp-Method; a name with CRLF travels
    // base64-encoded in Mcp-Name and is then just an unknown tool.
    let crlf = request(1, "tools/list\r\n", json!({}));
    let r = s.post(&crlf, &[("Mcp-Method", "tools/list")]);
    assert_eq!(status_code(&r), (400, Some(-32020)));
    let crlf_name = call(1, "echo\r\nX-Injected: 1", json!({"text": "x"}));
    let r = s.post(
        &crlf_name,
        &[("Mcp-Name", "=?base64?ZWNobw0KWC1JbmplY3RlZDogMQ==?=")],
    );
    assert_eq!(status_code(&r), (400, Some(-32602)), "unknown tool");
    assert!(r.header("x-injected").is_none());
    // Error messages echoing header values stay valid JSON.
    let r = s.post(&echo(1, "x"), &[("Mcp-Name", r#"a"b\c"#)]);
    assert_eq!(status_code(&r), (400, Some(-32020)));
    assert!(r.json()["error"]["message"].is_string());
    assert_alive(&s);
}

#[test]
fn non_canonical_base64_sentinels() {
    let s = HttpServer::start();
    let region = call(1, "test_x_mcp_header", json!({"region": "Hello"}));
    let named = |name: &str| call(1, name, json!({"text": "x"}));
    // Accepted: plain, canonical base64, surrounding OWS (HDR-05).
    for ok in ["Hello", "=?base64?SGVsbG8=?=", "  Hello  ", "\tHello"] {
        let r = s.post(&region, &[("Mcp-Param-Region", ok)]);
        assert_eq!(r.status, 200, "{ok:?}");
    }
    let refused = [
        "=?base64?SGVsbG9=?=",   // non-zero trailing bits
        "=?base64?SGVsbG8?=",    // missing padding
        "=?base64?SGVsbG8==?=",  // extra padding
        "=?base64?SGVsbG8-?=",   // URL-safe alphabet
        "=?base64?SGVs bG8=?=",  // whitespace inside
        "=?base64?SGVsbG8=\t?=", // tab inside
        "=?base64?SGVs\\bG8=?=", // stray backslash
        "=?BASE64?SGVsbG8=?=",   // marker is case-sensitive: plain, not Hello
        "=?base64?SGVsbG8=?=x",  // text after the suffix: plain
        "=?base64?SGVsbG8=",     // no suffix: plain
        "=?base64??=",           // empty payload is ""
        "=?base64?/w==?=",       // payload not UTF-8
        "=?base64?wK8=?=",       // overlong UTF-8 payload
        "=?base64?7aCA?=",       // UTF-8-encoded surrogate payload
        "hello",                 // values compare case-sensitively
        "",
    ];
    for bad in refused {
        let r = s.post(&region, &[("Mcp-Param-Region", bad)]);
        assert_eq!(status_code(&r), (400, Some(-32020)), "{bad:?}");
    }
    // The same rules apply to Mcp-Name.
    assert_eq!(
        s.post(&named("echo"), &[("Mcp-Name", "=?base64?ZWNobw==?=")])
            .status,
        200
    );
    for bad in [
        "=?base64?ZWNobx==?=",
        "=?base64?ZWNobw?=",
        "=?BASE64?ZWNobw==?=",
    ] {
        let r = s.post(&named("echo"), &[("Mcp-Name", bad)]);
        assert_eq!(status_code(&r), (400, Some(-32020)), "{bad:?}");
    }
    // A body value that looks like a sentinel must itself travel encoded
    // (HDR-08): sent plain it decodes to something else.
    let lookalike = call(
        1,
        "test_x_mcp_header",
        json!({"region": "=?base64?SGVsbG8=?="}),
    );
    let r = s.post(&lookalike, &[("Mcp-Param-Region", "=?base64?SGVsbG8=?=")]);
    assert_eq!(status_code(&r), (400, Some(-32020)));
    let r = s.post(
        &lookalike,
        &[(
            "Mcp-Param-Region",
            "=?base64?PT9iYXNlNjQ/U0dWc2JHOD0/PQ==?=",
        )],
    );
    assert_eq!(r.status, 200);
}

#[test]
fn dns_rebinding_variants() {
    let s = HttpServer::start();
    let b = echo(1, "x");
    let body = b.to_string();
    let hs: Vec<(String, String)> = modern_headers(&b);
    let send = |extra: &[(&str, &str)]| {
        let mut h: Vec<(&str, &str)> = hs.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        h.extend_from_slice(extra);
        s.raw("POST", "/mcp", &h, body.as_bytes())
    };
    let port = s.port.to_string();
    for host in [
        "evil.example.com",
        "localhost.evil.com",
        "127.0.0.1.nip.io",
        "localhost.",
        "127.1",
        "2130706433",
        "0x7f.0.0.1",
        "0177.0.0.1",
        "[::ffff:127.0.0.1]",
        "0.0.0.0",
        "",
    ] {
        let r = send(&[("Host", host)]);
        assert_eq!(r.status, 421, "Host {host:?}");
    }
    // Not a Host value at all (RFC 9110 §7.2): 400, RFC 9112 §3.2. Since
    // issue 25 a Host that names no TCP endpoint (port out of range or
    // empty, an IPv6 literal that is none) is invalid here too, not 421.
    for host in [
        "localhost:80@evil.com",
        "evil.com#@localhost",
        "localhost:-1",
        "[::1",
        "local host",
        "localhost:99999",
        "localhost:",
        "[v1.fe]:80",
        "lοcalhost",
    ] {
        let r = send(&[("Host", host)]);
        assert_eq!(r.status, 400, "Host {host:?}");
    }
    for host in ["localhost", "LOCALHOST", "127.0.0.1", "[::1]"] {
        let with_port = format!("{host}:{port}");
        assert_eq!(send(&[("Host", &with_port)]).status, 200, "Host {host}");
    }
    for origin in [
        "null",
        "http://evil.example.com",
        "http://localhost.evil.com",
        "http://127.0.0.1@evil.com",
        "http://evil.com@127.0.0.1",
        "http://localhost/path",
        "file://",
        "ftp://localhost",
        "http://localhost:abc",
        "localhost",
        "",
    ] {
        let r = send(&[("Origin", origin)]);
        assert_eq!(r.status, 403, "Origin {origin:?}");
    }
    for origin in [
        format!("http://localhost:{port}"),
        "http://127.0.0.1".to_owned(),
        "https://[::1]:8443".to_owned(),
    ] {
        assert_eq!(send(&[("Origin", &origin)]).status, 200, "{origin}");
    }
    // Absolute-form target naming another host: its authority is checked.
    let mut c = connect(&s);
    let mut wire = http_request(&s.host(), &hs, body.as_bytes(), true);
    let at = wire.iter().position(|b| *b == b'/').unwrap();
    wire.splice(at..at, b"http://evil.example.com".iter().copied());
    c.write_all(&wire).unwrap();
    let (raw, _) = read_until_close(&mut c);
    assert!(first_line(&raw).contains(" 421 "), "{}", first_line(&raw));
    // GET / DELETE are checked before the method gate.
    let r = s.raw(
        "GET",
        "/mcp",
        &[
            ("Host", "evil.example.com"),
            ("Accept", "text/event-stream"),
        ],
        b"",
    );
    assert_eq!(r.status, 421);
    let r = s.raw(
        "DELETE",
        "/mcp",
        &[("Origin", "http://evil.example.com")],
        b"",
    );
    assert_eq!(r.status, 403);
}

/// RFC 9112 §3.2: an HTTP/1.1 request without Host, or with two, is 400;
/// HTTP/1.0 may omit Host and is served (issue 13 item 2).
#[test]
fn host_header_is_required_on_http_1_1() {
    let s = HttpServer::start();
    let b = echo(1, "x");
    let body = b.to_string();
    let hs = modern_headers(&b);
    let send = |version: &str, hosts: &[&str]| {
        let mut req = format!("POST /mcp {version}\r\nConnection: close\r\n");
        for h in hosts {
            req.push_str(&format!("Host: {h}\r\n"));
        }
        for (n, v) in &hs {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        let mut c = connect(&s);
        c.write_all(req.as_bytes()).unwrap();
        let (raw, _) = read_until_close(&mut c);
        first_line(&raw)
    };
    let host = s.host();
    let line = send("HTTP/1.1", &[]);
    assert!(line.contains(" 400 "), "HTTP/1.1 without Host: {line}");
    let line = send("HTTP/1.1", &[&host, &host]);
    assert!(line.contains(" 400 "), "two Host lines: {line}");
    let line = send("HTTP/1.1", &[&host]);
    assert!(line.contains(" 200 "), "control: {line}");
    let line = send("HTTP/1.0", &[]);
    assert!(line.contains(" 200 "), "HTTP/1.0 without Host: {line}");
    // Every method is gated, GET and DELETE too.
    for method in ["GET", "DELETE"] {
        let mut c = connect(&s);
        c.write_all(
            format!("{method} /mcp HTTP/1.1\r\nConnection: close\r\nAccept: text/event-stream\r\nMcp-Session-Id: x\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        let (raw, _) = read_until_close(&mut c);
        assert!(
            first_line(&raw).contains(" 400 "),
            "{method}: {}",
            first_line(&raw)
        );
    }
    assert_alive(&s);
}

// ---------------------------------------------------------------------------
// requestState
// ---------------------------------------------------------------------------

const STATE_KEY: [u8; 32] = [0x5a; 32];

fn state_key_hex() -> String {
    STATE_KEY.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Seals `state` the way the server does for the tampered-state tool, with
/// the test's copy of the key and a clock of our choosing.
fn mint(key: [u8; 32], at: u64, state: &[u8], tool: &str, args: &Value) -> String {
    use ferromcp_server::request_state::{KeyRing, StateBinding, StateSealer};
    use ferromcp_server::testing::ManualClock;
    let sealer = StateSealer::new(KeyRing::new("env", key).unwrap())
        .with_clock(std::sync::Arc::new(ManualClock::new(at)));
    sealer
        .seal(
            &StateBinding::new("tools/call", tool, Some(args), None),
            state,
        )
        .unwrap()
}

#[test]
fn request_state_tampered_expired_replayed() {
    let key = state_key_hex();
    let s = HttpServer::start_with(&[("MCP_STATE_KEY", &key)]);
    let tool = "test_input_required_result_tampered_state";
    let caps = json!({"elicitation": {}});
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});
    let retry = |state: Value, args: Value| {
        request(
            2,
            "tools/call",
            json!({"name": tool, "arguments": args, "inputResponses": answer, "requestState": state,
                   "_meta": envelope_with(caps.clone())}),
        )
    };
    let first = request(
        1,
        "tools/call",
        json!({"name": tool, "_meta": envelope_with(caps.clone())}),
    );
    let r = s.post(&first, &[]).json();
    assert_eq!(r["result"]["resultType"], "input_required");
    let token = r["result"]["requestState"].as_str().unwrap().to_owned();
    // MCP_STATE_KEY seals under the key's derived id (and still opens the
    // tokens older builds minted under `env`, as `mint` does).
    let kid = ferromcp_server::request_state::KeyRing::derived_kid(&STATE_KEY).unwrap();
    assert!(token.starts_with(&format!("v1.{kid}.")), "{token}");
    let complete = |r: &Response| r.status == 200 && r.json()["result"]["resultType"] == "complete";
    let invalid = |r: &Response| {
        r.status == 400
            && r.error_code() == Some(-32602)
            && r.json()["error"]["message"] == "Invalid or expired requestState"
    };
    // Genuine echo: accepted.
    assert!(complete(&s.post(&retry(json!(token), json!({})), &[])));
    // Replayed: the same token, same tool and arguments, is accepted again
    // while it is fresh — requestState is stateless by design (MRTR-09
    // single-use is the application's job; docs/SECURITY.md).
    assert!(complete(&s.post(&retry(json!(token), json!({})), &[])));
    // Replayed elsewhere: bound to the tool, the arguments and the method.
    let other_tool = request(
        3,
        "tools/call",
        json!({"name": "test_input_required_result_elicitation", "inputResponses": answer,
               "requestState": token, "_meta": envelope_with(caps.clone())}),
    );
    assert!(invalid(&s.post(&other_tool, &[])));
    let prompt = request(
        4,
        "prompts/get",
        json!({"name": "test_input_required_result_prompt", "inputResponses": answer,
               "requestState": token, "_meta": envelope_with(caps.clone())}),
    );
    assert!(invalid(&s.post(&prompt, &[])));
    // Tampered: every single-character change is detected.
    let bytes = token.as_bytes();
    let step = (bytes.len() / 40).max(1);
    for i in (0..bytes.len()).step_by(step) {
        let mut t = bytes.to_vec();
        t[i] = if t[i] == b'A' { b'B' } else { b'A' };
        let t = String::from_utf8(t).unwrap();
        assert!(
            invalid(&s.post(&retry(json!(t), json!({})), &[])),
            "byte {i}"
        );
    }
    // Truncated, extended, foreign shapes.
    let huge = "A".repeat(100 * 1024);
    for t in [
        &token[..token.len() - 1],
        &format!("{token}A"),
        &format!("{token}="),
        "",
        "v1.",
        "v1.env.",
        "v2.env.AAAA",
        "v1.other.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        &huge,
    ] {
        let started = Instant::now();
        assert!(
            invalid(&s.post(&retry(json!(t), json!({})), &[])),
            "{}",
            &t[..t.len().min(30)]
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }
    // Not a string at all: a params error.
    for t in [json!(5), json!({"a": 1}), json!(["x"])] {
        let r = s.post(&retry(t.clone(), json!({})), &[]);
        assert_eq!(status_code(&r), (400, Some(-32602)), "{t}");
    }
    // Minted by the test with the server's key: accepted when fresh (so the
    // failures below are about time or key only) ...
    let now = now_secs();
    let args = json!({});
    assert!(complete(&s.post(
        &retry(
            json!(mint(STATE_KEY, now, b"issued", tool, &args)),
            json!({})
        ),
        &[]
    )));
    // ... refused when expired (10 min TTL + 30 s skew), not yet valid, or
    // sealed with another key under the same key id.
    for t in [
        mint(STATE_KEY, now - 3600, b"issued", tool, &args),
        mint(STATE_KEY, now - 631, b"issued", tool, &args),
        mint(STATE_KEY, now + 3600, b"issued", tool, &args),
        mint([0x5b; 32], now, b"issued", tool, &args),
    ] {
        assert!(invalid(&s.post(&retry(json!(t), json!({})), &[])));
    }
    // Bound to the arguments: a token sealed for other arguments is refused
    // even though the state bytes would satisfy the tool.
    let t = mint(STATE_KEY, now, b"issued", tool, &json!({"x": 1}));
    assert!(invalid(&s.post(&retry(json!(t), json!({})), &[])));
}

#[test]
fn request_state_key_ring_rotates_across_replicas() {
    // Four replicas mid-rotation from key A to key B (MCP_STATE_KEYS, and
    // the single-key MCP_STATE_KEY form): the token's key id picks the key,
    // so mixed rings interoperate; once A is gone its tokens are refused
    // like tampered ones.
    let hex = |b: u8| format!("{b:02x}").repeat(32);
    let (a, b) = (hex(0xa1), hex(0xb2));
    let only_a_single = HttpServer::start_with(&[("MCP_STATE_KEY", &a)]);
    let only_a = HttpServer::start_with(&[("MCP_STATE_KEYS", &a)]);
    let b_then_a = HttpServer::start_with(&[("MCP_STATE_KEYS", &format!("{b},{a}"))]);
    let only_b = HttpServer::start_with(&[("MCP_STATE_KEYS", &b)]);
    let tool = "test_input_required_result_tampered_state";
    let caps = json!({"elicitation": {}});
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});
    let first_leg = |s: &HttpServer| {
        let first = request(
            1,
            "tools/call",
            json!({"name": tool, "_meta": envelope_with(caps.clone())}),
        );
        let r = s.post(&first, &[]).json();
        r["result"]["requestState"].as_str().unwrap().to_owned()
    };
    let retry = |s: &HttpServer, state: &str| {
        let body = request(
            2,
            "tools/call",
            json!({"name": tool, "inputResponses": answer, "requestState": state,
                   "_meta": envelope_with(caps.clone())}),
        );
        let r = s.post(&body, &[]);
        match r.status {
            200 if r.json()["result"]["resultType"] == "complete" => "complete",
            400 if r.json()["error"]["message"] == "Invalid or expired requestState" => "invalid",
            _ => "unexpected",
        }
    };
    for sealer in [&only_a_single, &only_a] {
        let t = first_leg(sealer);
        assert_eq!(retry(&only_a_single, &t), "complete");
        assert_eq!(retry(&only_a, &t), "complete");
        assert_eq!(retry(&b_then_a, &t), "complete");
        assert_eq!(retry(&only_b, &t), "invalid");
    }
    let t = first_leg(&b_then_a);
    assert_eq!(retry(&only_b, &t), "complete");
    assert_eq!(retry(&b_then_a, &t), "complete");
    assert_eq!(retry(&only_a, &t), "invalid");
}

#[test]
fn conflicting_state_key_variables_refuse_to_start() {
    let out = std::process::Command::new(BIN)
        .args(["--stdio"])
        .env("MCP_STATE_KEY", "11".repeat(32))
        .env("MCP_STATE_KEYS", "22".repeat(32))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not both"), "{err}");
    let out = std::process::Command::new(BIN)
        .args(["--stdio"])
        .env("MCP_STATE_KEYS", format!("{},zz", "22".repeat(32)))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("MCP_STATE_KEYS: key 2"), "{err}");
}

#[test]
fn request_state_single_use_refuses_replays() {
    // MRTR-09 "single-use where at-most-once matters": opt-in
    // (`RequestStateConfig::single_use`), here a record of 3 tokens.
    let s = HttpServer::start_with(&[("MCP_STATE_SINGLE_USE", "3")]);
    let tool = "test_input_required_result_tampered_state";
    let caps = json!({"elicitation": {}});
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});
    let fresh = || {
        let first = request(
            1,
            "tools/call",
            json!({"name": tool, "_meta": envelope_with(caps.clone())}),
        );
        let r = s.post(&first, &[]).json();
        assert_eq!(r["result"]["resultType"], "input_required");
        r["result"]["requestState"].as_str().unwrap().to_owned()
    };
    let retry = |state: &str| {
        let body = request(
            2,
            "tools/call",
            json!({"name": tool, "inputResponses": answer, "requestState": state,
                   "_meta": envelope_with(caps.clone())}),
        );
        s.post(&body, &[])
    };
    let complete = |r: &Response| r.status == 200 && r.json()["result"]["resultType"] == "complete";
    let invalid = |r: &Response| {
        r.status == 400
            && r.error_code() == Some(-32602)
            && r.json()["error"]["message"] == "Invalid or expired requestState"
    };
    let token = fresh();
    // A tampered copy fails and is not recorded ...
    let mut tampered = token.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    assert!(invalid(&retry(&tampered)));
    // ... the genuine echo is accepted once, the replay refused (same
    // answer as any invalid token: nothing is disclosed).
    assert!(complete(&retry(&token)));
    assert!(invalid(&retry(&token)));
    assert!(invalid(&retry(&token)));
    // Two more fill the record of 3; a fourth fresh token is refused while
    // they are unexpired (fail closed, never a silent replay window).
    assert!(complete(&retry(&fresh())));
    assert!(complete(&retry(&fresh())));
    assert!(invalid(&retry(&fresh())));
}

// ---------------------------------------------------------------------------
// HTTP/2 (h2c, prior knowledge): authority, idle connections, header limits
// ---------------------------------------------------------------------------

/// One h2c answer.
struct H2Answer {
    status: u16,
    body: Vec<u8>,
}

impl H2Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

fn h2_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// POSTs `body` over a fresh h2c connection with its modern headers plus
/// `extra`. `authority`: the `:authority` pseudo-header, or `None` to leave
/// it out (h2 then sends a relative target: `:scheme`, `:path` only).
async fn h2_post(
    port: u16,
    authority: Option<&str>,
    extra: &[(String, String)],
    body: &Value,
) -> Result<H2Answer, h2::Error> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let (client, conn) = h2::client::handshake(tcp).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let (uri, version) = match authority {
        Some(a) => (format!("http://{a}/mcp"), http::Version::HTTP_2),
        // h2 leaves :authority out only for a request marked as
        // translated from HTTP/1.1 with a relative target.
        None => ("/mcp".to_owned(), http::Version::HTTP_11),
    };
    let mut b = http::Request::post(uri).version(version);
    for (n, v) in modern_headers(body).iter().chain(extra) {
        b = b.header(n.as_str(), v.as_str());
    }
    let req = b.body(()).expect("request");
    let mut client = client.ready().await?;
    let (resp, mut send) = client.send_request(req, false)?;
    send.send_data(bytes::Bytes::from(body.to_string()), true)?;
    let resp = resp.await?;
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut out = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
    }
    Ok(H2Answer { status, body: out })
}

/// The types of the HTTP/2 frames in `raw` (server → client bytes).
fn h2_frame_types(mut raw: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    while raw.len() >= 9 {
        let len = (usize::from(raw[0]) << 16) | (usize::from(raw[1]) << 8) | usize::from(raw[2]);
        types.push(raw[3]);
        raw = raw.get(9 + len..).unwrap_or_default();
    }
    types
}

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame.
const H2_SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];

/// Regression (issue 23, item 2): an h2c request with neither `:authority`
/// nor `host` was executed, so the DNS-rebinding check had nothing to
/// check, and one whose `host` differed from `:authority` was routed on
/// `:authority` alone. Both are malformed (RFC 9113 §8.3.1): 400 with a
/// message naming `:authority`; a normal h2c request is still served.
// SEC-04, LADDER-01
#[test]
fn h2c_requests_need_one_consistent_authority() {
    let s = HttpServer::start();
    let port = s.port;
    let host = s.host();
    let call = echo(1, "over h2");
    let h = |v: &str| vec![("host".to_owned(), v.to_owned())];
    h2_runtime().block_on(async {
        // Served: :authority alone, Host alone, both the same (any case).
        for (authority, extra) in [
            (Some(host.clone()), vec![]),
            (None, h(&host)),
            (
                Some(format!("LOCALHOST:{port}")),
                h(&format!("localhost:{port}")),
            ),
        ] {
            let r = h2_post(port, authority.as_deref(), &extra, &call)
                .await
                .expect("h2c request");
            let what = format!("{authority:?} {extra:?}");
            assert_eq!(
                r.status,
                200,
                "{what}: {}",
                String::from_utf8_lossy(&r.body)
            );
            assert_eq!(
                r.json()["result"]["content"][0]["text"],
                "over h2",
                "{what}"
            );
        }
        // Neither :authority nor Host.
        let r = h2_post(port, None, &[], &call).await.expect("h2c request");
        assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        assert_eq!(v["error"]["code"], -32600, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains(":authority"),
            "{v}"
        );
        // Host naming another entity than :authority: another allowed
        // host, and a foreign one behind an allowed :authority.
        for other in [format!("localhost:{port}"), "evil.example".to_owned()] {
            let r = h2_post(port, Some(&host), &h(&other), &call)
                .await
                .expect("h2c request");
            assert_eq!(
                r.status,
                400,
                "{other}: {}",
                String::from_utf8_lossy(&r.body)
            );
            let v = r.json();
            assert!(
                v["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("differs from :authority"),
                "{v}"
            );
        }
    });
    assert_alive(&s);
}

/// Regression (issue 23, item 7): an h2c connection that sent the preface
/// and SETTINGS and then nothing stayed open forever (60 s and more). With
/// `http2_idle_timeout` at 1 s, every one of 20 such connections gets a
/// GOAWAY and is closed (the 20 s read timeout only bounds a failure), and
/// the server's descriptors return to their baseline.
#[test]
fn idle_h2c_connections_are_closed() {
    let s = HttpServer::start_with(&[("MCP_HTTP2_IDLE_TIMEOUT_MS", "1000")]);
    let pid = s.child.id();
    assert_alive(&s);
    let baseline = fd_count(pid);
    let mut conns: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut c = connect(&s);
            c.write_all(H2_PREFACE).unwrap();
            c.write_all(H2_SETTINGS).unwrap();
            c
        })
        .collect();
    for (i, c) in conns.iter_mut().enumerate() {
        let (raw, closed) = read_until_close(c);
        assert!(closed, "idle h2c connection {i} still open");
        let types = h2_frame_types(&raw);
        assert!(
            types.contains(&7),
            "connection {i}: no GOAWAY before the close: {types:?}"
        );
    }
    drop(conns);
    assert!(
        eventually(Duration::from_secs(10), || fd_count(pid) <= baseline),
        "descriptors: {} now, {baseline} before",
        fd_count(pid)
    );
    assert_alive(&s);
}

/// The idle timeout counts only connections with nothing in flight: a
/// request running (and, once committed to SSE, streaming) for three times
/// the idle timeout on an h2c connection is answered in full; the
/// connection is closed once it has been idle.
#[test]
fn h2c_connections_with_a_running_request_are_not_idle() {
    let s = HttpServer::start_with(&[
        ("MCP_HTTP2_IDLE_TIMEOUT_MS", "1000"),
        ("MCP_SSE_COMMIT_AFTER_MS", "300"),
    ]);
    let port = s.port;
    let host = s.host();
    h2_runtime().block_on(async {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let (client, conn) = h2::client::handshake(tcp).await.expect("handshake");
        let conn = tokio::spawn(conn);
        let call = call(1, "debug_sleep", json!({"ms": 3000}));
        let mut b = http::Request::post(format!("http://{host}/mcp"));
        for (n, v) in modern_headers(&call) {
            b = b.header(n.as_str(), v.as_str());
        }
        let mut client = client.ready().await.expect("ready");
        let (resp, mut send) = client
            .send_request(b.body(()).expect("request"), false)
            .expect("send");
        send.send_data(bytes::Bytes::from(call.to_string()), true)
            .expect("body");
        let resp = resp.await.expect("response head");
        assert_eq!(resp.status(), 200);
        let sse = resp
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes() == b"text/event-stream");
        assert!(sse, "committed to SSE after 300 ms: {:?}", resp.headers());
        let mut body = resp.into_body();
        let mut out = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.expect("the stream was cut");
            let _ = body.flow_control().release_capacity(chunk.len());
            out.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains(r#""text":"slept""#), "{text}");
        // Idle now: the server closes the connection (GOAWAY, NO_ERROR).
        drop(client);
        let closed = tokio::time::timeout(Duration::from_secs(20), conn).await;
        assert!(matches!(closed, Ok(Ok(Ok(())))), "{closed:?}");
    });
}

/// Regression (issue 23, item 7): `max_headers` was HTTP/1-only, and the
/// HTTP/2 header list size was hyper's default, not a configurable limit.
/// An h2c request with more header fields than `max_headers` gets 431; one
/// whose header list is over `http2_max_header_list_bytes` is refused
/// (431, or its stream reset as REFUSED_STREAM); within both it is served.
#[test]
fn h2c_header_count_and_size_are_limited() {
    let s = HttpServer::start_with(&[
        ("MCP_MAX_HEADERS", "20"),
        ("MCP_HTTP2_MAX_HEADER_LIST_BYTES", "4096"),
    ]);
    let port = s.port;
    let host = s.host();
    let call = echo(1, "h2 headers");
    let pad = |n: usize, len: usize| -> Vec<(String, String)> {
        (0..n)
            .map(|i| (format!("x-pad-{i}"), "v".repeat(len)))
            .collect()
    };
    h2_runtime().block_on(async {
        let r = h2_post(port, Some(&host), &pad(10, 10), &call)
            .await
            .expect("h2c request");
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let r = h2_post(port, Some(&host), &pad(30, 10), &call)
            .await
            .expect("h2c request");
        assert_eq!(r.status, 431, "{}", String::from_utf8_lossy(&r.body));
        match h2_post(port, Some(&host), &pad(2, 3000), &call).await {
            Ok(r) => assert_eq!(r.status, 431, "{}", String::from_utf8_lossy(&r.body)),
            Err(e) => assert_eq!(e.reason(), Some(h2::Reason::REFUSED_STREAM), "{e}"),
        }
    });
    assert_alive(&s);
}

// ---------------------------------------------------------------------------
// Sessions, pipelining, disconnects
// ---------------------------------------------------------------------------

fn initialize(s: &HttpServer) -> Response {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}});
    s.raw(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        init.to_string().as_bytes(),
    )
}

#[test]
fn session_flood_is_capped() {
    let s = HttpServer::start_with(&[("MCP_MAX_SESSIONS", "50")]);
    let pid = s.child.id();
    let mut ids = std::collections::HashSet::new();
    let mut refused = 0;
    for _ in 0..60 {
        let r = initialize(&s);
        match r.status {
            200 => {
                ids.insert(r.header("mcp-session-id").unwrap().to_owned());
            }
            503 => {
                assert_eq!(r.error_code(), Some(-32603));
                refused += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!((ids.len(), refused), (50, 10), "the cap holds exactly");
    // Ending a session frees its slot.
    let one = ids.iter().next().unwrap().clone();
    assert_eq!(
        s.raw("DELETE", "/mcp", &[("Mcp-Session-Id", &one)], b"")
            .status,
        200
    );
    assert_eq!(initialize(&s).status, 200);
    assert_eq!(initialize(&s).status, 503);
    // Forged, oversized and non-ASCII ids are unknown sessions (404), never errors.
    let long = "a".repeat(8 * 1024);
    let h = |sid: &str| {
        vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("Mcp-Session-Id".to_owned(), sid.to_owned()),
        ]
    };
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    for sid in [
        "0".repeat(64),
        "deadbeef".to_owned(),
        long,
        String::new(),
        one.to_uppercase(),
    ] {
        let hs = h(&sid);
        let hs: Vec<(&str, &str)> = hs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let r = s.raw("POST", "/mcp", &hs, list.as_bytes());
        assert_eq!(r.status, 404, "{}", &sid[..sid.len().min(20)]);
    }
    let mut c = connect(&s);
    let mut wire = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nMcp-Session-Id: ",
        s.host()
    )
    .into_bytes();
    wire.extend_from_slice(b"\xff\xfe");
    wire.extend_from_slice(format!("\r\nContent-Length: {}\r\n\r\n{list}", list.len()).as_bytes());
    c.write_all(&wire).unwrap();
    let (raw, _) = read_until_close(&mut c);
    assert!(first_line(&raw).contains(" 404 "), "{}", first_line(&raw));
    // 50 sessions cost little: generous bound of 64 MB resident.
    assert!(mem_of(pid).rss_kb < 64 * 1024, "{:?}", mem_of(pid));
    assert_alive(&s);
}

#[test]
fn idle_sessions_are_freed_when_the_table_is_full() {
    let s = HttpServer::start_with(&[
        ("MCP_MAX_SESSIONS", "5"),
        ("MCP_SESSION_IDLE_TIMEOUT_MS", "300"),
    ]);
    let old: Vec<String> = (0..5)
        .map(|_| initialize(&s).header("mcp-session-id").unwrap().to_owned())
        .collect();
    assert_eq!(initialize(&s).status, 503);
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..5 {
        assert_eq!(initialize(&s).status, 200);
    }
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let r = s.raw(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Mcp-Session-Id", &old[0]),
        ],
        list.as_bytes(),
    );
    assert_eq!(r.status, 404, "an expired session is gone");
}

#[test]
fn pipelined_requests_on_one_connection() {
    let s = HttpServer::start();
    let n = 1000;
    let mut wire = Vec::new();
    for i in 0..n {
        let b = echo(i, &i.to_string());
        wire.extend_from_slice(&http_request(
            &s.host(),
            &modern_headers(&b),
            b.to_string().as_bytes(),
            i == n - 1,
        ));
    }
    let c = connect(&s);
    let mut w = c.try_clone().unwrap();
    let writer = std::thread::spawn(move || w.write_all(&wire).is_ok());
    let mut rd = BufReader::new(c);
    for i in 0..n {
        let r = read_response(&mut rd).unwrap_or_else(|| panic!("response {i} missing"));
        assert_eq!(r.json()["id"], json!(i), "in order");
    }
    assert!(writer.join().unwrap());
}

/// Opens a request that the server answers with SSE, reads the response
/// head and first bytes of the stream, and disconnects.
fn open_and_drop_sse(port: u16, wire: &[u8]) -> bool {
    let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    c.set_read_timeout(Some(Duration::from_secs(10))).ok();
    if c.write_all(wire).is_err() {
        return false;
    }
    let mut buf = [0u8; 512];
    let mut seen = Vec::new();
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    seen.starts_with(b"HTTP/1.1 200")
        && String::from_utf8_lossy(&seen).contains("text/event-stream")
}

#[test]
fn ten_thousand_disconnects_mid_sse() {
    let s = HttpServer::start_with(&[
        ("MCP_MAX_LISTEN_STREAMS", "16"),
        ("MCP_MAX_CONCURRENT_REQUESTS", "16"),
        ("MCP_SSE_COMMIT_AFTER_MS", "1"),
    ]);
    let pid = s.child.id();
    let listen = request(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let sleep = call(2, "debug_sleep", json!({"ms": 600_000}));
    let wires: Vec<Vec<u8>> = [&listen, &sleep]
        .iter()
        .map(|b| {
            http_request(
                &s.host(),
                &modern_headers(b),
                b.to_string().as_bytes(),
                false,
            )
        })
        .collect();
    let base_fds = fd_count(pid);
    let base_mem = mem_of(pid);
    let total = 10_000;
    let pool = 8;
    let ok = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let threads: Vec<_> = (0..pool)
        .map(|t| {
            let wires = wires.clone();
            let ok = ok.clone();
            let port = s.port;
            std::thread::spawn(move || {
                for i in (t..total).step_by(pool) {
                    if open_and_drop_sse(port, &wires[i % 2]) {
                        ok.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let ok = ok.load(std::sync::atomic::Ordering::Relaxed);
    // Every stream opened (the pool never exceeds the caps of 16, so none
    // were refused) — which also shows slots are released on disconnect.
    assert_eq!(ok, total, "streams opened and dropped");
    // No leak: descriptors back to baseline, every listen slot and request
    // permit free again, resident memory bounded (debug build; margin 32 MB).
    assert!(
        eventually(Duration::from_secs(10), || fd_count(pid) <= base_fds + 2),
        "fds {} vs {base_fds}",
        fd_count(pid)
    );
    let held: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut c = connect(&s);
            c.write_all(&wires[0]).unwrap();
            let mut buf = [0u8; 64];
            let n = c.read(&mut buf).unwrap();
            assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "listen slot leaked");
            c
        })
        .collect();
    drop(held);
    let started = Instant::now();
    assert_alive(&s);
    // A leaked permit would hold this request until a 300 s handler timeout.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "permits leaked"
    );
    let after = mem_of(pid);
    eprintln!(
        "10k SSE disconnects: fds {base_fds} -> {}, {base_mem:?} -> {after:?}",
        fd_count(pid)
    );
    assert!(
        after.rss_kb < base_mem.rss_kb + 32 * 1024,
        "{base_mem:?} → {after:?}"
    );
}

// ---------------------------------------------------------------------------
// Misbehaving handlers
// ---------------------------------------------------------------------------

#[test]
fn panicking_handler_gets_32603_and_the_server_keeps_serving() {
    let s = HttpServer::start();
    let client = s.client();
    let panics: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let s = client;
                let mut codes = Vec::new();
                for i in 0..25 {
                    let r = s.post(&call(i, "debug_panic", json!({})), &[]);
                    codes.push((r.status, r.error_code(), r.json()["id"].clone()));
                }
                codes
            })
        })
        .collect();
    for t in panics {
        for (i, (status, code, id)) in t.join().unwrap().into_iter().enumerate() {
            // POLICY (LADDER-12): handler failure is -32603 with HTTP 200.
            assert_eq!((status, code), (200, Some(-32603)));
            assert_eq!(id, json!(i));
        }
    }
    // Handshake era too.
    let sid = initialize(&s).header("mcp-session-id").unwrap().to_owned();
    let r = s.raw(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
            ("Mcp-Session-Id", &sid),
        ],
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "debug_panic"}})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.error_code(), Some(-32603));
    assert_alive(&s);
}

#[test]
fn hanging_handler_times_out_and_disconnect_cancels() {
    let s = HttpServer::start_with(&[("MCP_HANDLER_TIMEOUT_MS", "300")]);
    let hang = call(1, "debug_sleep", json!({"ms": 600_000}));
    // JSON response: -32603 after the handler timeout.
    let started = Instant::now();
    let r = s.post(&hang, &[("Accept", "application/json")]);
    assert_eq!(status_code(&r), (200, Some(-32603)));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("timed out")
    );

    // Disconnect = cancellation (HTTP-14): with two request slots, two
    // hanging calls block a third until their clients go away.
    let s = HttpServer::start_with(&[("MCP_MAX_CONCURRENT_REQUESTS", "2")]);
    let wire = http_request(
        &s.host(),
        &modern_headers(&hang),
        hang.to_string().as_bytes(),
        true,
    );
    let mut hanging: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut c = connect(&s);
            c.write_all(&wire).unwrap();
            c
        })
        .collect();
    // JSON mode shows nothing until the handler ends, so the only way to
    // know both hanging calls hold their slots is to give them time: 1 s
    // (they only need to be read and admitted) before the third is sent.
    std::thread::sleep(Duration::from_millis(1000));
    let client = s.client();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = client.post(&echo(5, "after"), &[]);
        let _ = tx.send(r.status);
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(500)).is_err(),
        "third request must wait for a slot"
    );
    for c in hanging.drain(..) {
        c.shutdown(Shutdown::Both).ok();
    }
    // Without cancellation the slots stay taken until the 300 s default
    // handler timeout; 10 s tells the two apart on a loaded machine.
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(200));
}

#[test]
fn long_running_sse_and_handshake_handlers_count_against_the_cap() {
    // Two request slots; handlers committed to SSE (after 50 ms) or running
    // on their own task (handshake era) keep their slot until they finish.
    let s = HttpServer::start_with(&[
        ("MCP_MAX_CONCURRENT_REQUESTS", "2"),
        ("MCP_SSE_COMMIT_AFTER_MS", "50"),
        ("MCP_HANDLER_TIMEOUT_MS", "1500"),
    ]);
    let hang = call(1, "debug_sleep", json!({"ms": 600_000}));
    let wire = http_request(
        &s.host(),
        &modern_headers(&hang),
        hang.to_string().as_bytes(),
        true,
    );
    let blocked_until_timeout = |label: &str| {
        let client = s.client();
        let (tx, rx) = std::sync::mpsc::channel();
        let started = Instant::now();
        std::thread::spawn(move || {
            let _ = tx.send(client.post(&echo(5, "third"), &[]).status);
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(700)).is_err(),
            "{label}: a third request must wait for a slot"
        );
        // The hanging handlers time out (1.5 s) and free their slots.
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(200), "{label}");
        assert!(started.elapsed() >= Duration::from_millis(700));
    };
    // Modern wire: both answers are committed SSE streams.
    let streams: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut c = connect(&s);
            c.write_all(&wire).unwrap();
            let mut head = [0u8; 256];
            let n = c.read(&mut head).unwrap();
            assert!(
                String::from_utf8_lossy(&head[..n]).contains("text/event-stream"),
                "committed to SSE"
            );
            c
        })
        .collect();
    blocked_until_timeout("SSE");
    drop(streams);
    // Handshake era: the handler keeps running after its stream is gone.
    let sid = initialize(&s).header("mcp-session-id").unwrap().to_owned();
    let client = s.client();
    let callers: Vec<_> = (0..2)
        .map(|i| {
            let sid = sid.clone();
            std::thread::spawn(move || {
                let body = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                    "params": {"name": "debug_sleep", "arguments": {"ms": 600_000}}});
                client.raw(
                    "POST",
                    "/mcp",
                    &[
                        ("Content-Type", "application/json"),
                        ("Accept", "application/json, text/event-stream"),
                        ("Mcp-Session-Id", &sid),
                    ],
                    body.to_string().as_bytes(),
                )
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    blocked_until_timeout("handshake era");
    for c in callers {
        assert_eq!(c.join().unwrap().error_code(), Some(-32603));
    }
}

// ---------------------------------------------------------------------------
// Soak (not part of the normal run: `bash scripts/soak.sh`)
// ---------------------------------------------------------------------------

/// Paces a loop at `per_sec` iterations per second until `end`.
fn paced(per_sec: u32, end: Instant, mut f: impl FnMut(u64)) {
    let period = Duration::from_secs(1) / per_sec.max(1);
    let mut next = Instant::now();
    let mut i = 0u64;
    while Instant::now() < end {
        f(i);
        i += 1;
        next += period;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        } else {
            next = Instant::now(); // behind: do not burst to catch up
        }
    }
}

/// A keep-alive HTTP/1.1 connection that reconnects when the server closes it.
struct KeepAlive {
    port: u16,
    conn: Option<(TcpStream, BufReader<TcpStream>)>,
}

impl KeepAlive {
    fn send(&mut self, body: &Value) -> Option<Response> {
        let host = format!("127.0.0.1:{}", self.port);
        let wire = http_request(
            &host,
            &modern_headers(body),
            body.to_string().as_bytes(),
            false,
        );
        for _ in 0..2 {
            if self.conn.is_none() {
                let c = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
                c.set_read_timeout(Some(Duration::from_secs(30))).ok();
                let r = BufReader::new(c.try_clone().ok()?);
                self.conn = Some((c, r));
            }
            let (c, r) = self.conn.as_mut()?;
            if c.write_all(&wire).is_ok()
                && let Some(resp) = read_response(r)
            {
                return Some(resp);
            }
            self.conn = None;
        }
        None
    }
}

/// Ten minutes (SOAK_SECONDS) of steady mixed load — both eras, SSE,
/// MRTR, listen streams, disconnects and hostile requests over HTTP, plus a
/// stdio server — with the resident memory of both servers sampled every
/// second. Writes the samples to SOAK_CSV (default target/soak-rss.csv) and
/// fails unless every sample after the warm-up (the first 10%, at least
/// 30 s) is within ±5% of the post-warm-up median.
#[test]
#[ignore = "soak: 10 minutes; run with scripts/soak.sh"]
fn soak() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let secs: u64 = std::env::var("SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let csv = std::env::var("SOAK_CSV").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/soak-rss.csv").to_owned()
    });
    let s = HttpServer::start();
    let client = s.client();
    let port = s.port;
    let mut stdio = StdioPipe::start_with(&[]);
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    let count = |done: &Arc<AtomicU64>, failed: &Arc<AtomicU64>, ok: bool| {
        done.fetch_add(1, Relaxed);
        if !ok {
            failed.fetch_add(1, Relaxed);
        }
    };
    // 1. Modern requests on a keep-alive connection: 100/s.
    {
        let (done, failed) = (done.clone(), failed.clone());
        workers.push(std::thread::spawn(move || {
            let mut ka = KeepAlive { port, conn: None };
            paced(100, end, |i| {
                let body = match i % 4 {
                    0 => echo(i as i64, "soak"),
                    1 => request(i as i64, "tools/list", json!({})),
                    2 => request(
                        i as i64,
                        "resources/read",
                        json!({"uri": "test://static-text"}),
                    ),
                    _ => request(
                        i as i64,
                        "prompts/get",
                        json!({"name": "test_simple_prompt"}),
                    ),
                };
                let ok = ka.send(&body).is_some_and(|r| r.status == 200);
                count(&done, &failed, ok);
            });
        }));
    }
    // 2. SSE (progress) and MRTR round trips: 10/s each.
    {
        let (done, failed) = (done.clone(), failed.clone());
        workers.push(std::thread::spawn(move || {
            paced(10, end, |i| {
                let mut env = envelope();
                env["progressToken"] = json!(i);
                let body = request(
                    i as i64,
                    "tools/call",
                    json!({"name": "test_tool_with_progress", "_meta": env}),
                );
                let r = client.post(&body, &[]);
                count(&done, &failed, r.status == 200 && r.messages().len() == 4);
            });
        }));
    }
    {
        let (done, failed) = (done.clone(), failed.clone());
        workers.push(std::thread::spawn(move || {
            let tool = "test_input_required_result_tampered_state";
            let caps = json!({"elicitation": {}});
            paced(10, end, |i| {
                let first = request(
                    i as i64,
                    "tools/call",
                    json!({"name": tool, "_meta": envelope_with(caps.clone())}),
                );
                let r = client.post(&first, &[]).json();
                let token = r["result"]["requestState"].clone();
                let retry = request(
                    i as i64,
                    "tools/call",
                    json!({"name": tool, "requestState": token, "_meta": envelope_with(caps.clone()),
                           "inputResponses": {"user_name": {"action": "accept", "content": {"name": "A"}}}}),
                );
                let r = client.post(&retry, &[]).json();
                count(&done, &failed, r["result"]["resultType"] == "complete");
            });
        }));
    }
    // 3. Hostile requests, each on a new connection: 20/s.
    {
        let (done, failed) = (done.clone(), failed.clone());
        workers.push(std::thread::spawn(move || {
            let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
            paced(20, end, |i| {
                let h = echo_headers();
                let ok = match i % 8 {
                    0 => client.raw("POST", "/mcp", &h, b"{not json").status == 400,
                    1 => client.raw("POST", "/mcp", &h, deep.as_bytes()).status == 400,
                    2 => {
                        client
                            .raw("POST", "/mcp", &h, &vec![b' '; 5 * 1024 * 1024])
                            .status
                            == 413
                    }
                    3 => {
                        client
                            .post(&echo(1, "x"), &[("Origin", "http://evil.example.com")])
                            .status
                            == 403
                    }
                    4 => {
                        client
                            .post(&echo(1, "x"), &[("Mcp-Name", "=?base64?ZWNobx==?=")])
                            .status
                            == 400
                    }
                    5 => {
                        client
                            .post(&call(1, "debug_panic", json!({})), &[])
                            .error_code()
                            == Some(-32603)
                    }
                    6 => {
                        client
                            .raw("GET", "/mcp", &[("Accept", "text/event-stream")], b"")
                            .status
                            == 405
                    }
                    _ => {
                        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                        c.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                            .is_ok()
                    }
                };
                count(&done, &failed, ok);
            });
        }));
    }
    // 4. Handshake-era sessions: initialize, list, delete: 5/s.
    {
        let (done, failed) = (done.clone(), failed.clone());
        workers.push(std::thread::spawn(move || {
            let plain = [
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ];
            paced(5, end, |_| {
                let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}});
                let r = client.raw("POST", "/mcp", &plain, init.to_string().as_bytes());
                let Some(sid) = r.header("mcp-session-id").map(str::to_owned) else {
                    return count(&done, &failed, false);
                };
                let h = [plain[0], plain[1], ("Mcp-Session-Id", sid.as_str())];
                let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
                let ok = client.raw("POST", "/mcp", &h, list.to_string().as_bytes()).status == 200
                    && client.raw("DELETE", "/mcp", &[h[2]], b"").status == 200;
                count(&done, &failed, ok);
            });
        }));
    }
    // 5. Listen streams and hanging SSE calls opened and dropped: 10/s.
    {
        let (done, failed) = (done.clone(), failed.clone());
        workers.push(std::thread::spawn(move || {
            let listen = request(
                1,
                "subscriptions/listen",
                json!({"notifications": {"toolsListChanged": true}}),
            );
            let host = format!("127.0.0.1:{port}");
            let mut env = envelope();
            env["progressToken"] = json!("p");
            let slow = request(
                2,
                "tools/call",
                json!({"name": "test_tool_with_progress", "_meta": env}),
            );
            let wires = [
                http_request(
                    &host,
                    &modern_headers(&listen),
                    listen.to_string().as_bytes(),
                    false,
                ),
                http_request(
                    &host,
                    &modern_headers(&slow),
                    slow.to_string().as_bytes(),
                    false,
                ),
            ];
            paced(10, end, |i| {
                let ok = open_and_drop_sse(port, &wires[(i % 2) as usize]);
                count(&done, &failed, ok);
            });
        }));
    }
    // 6. stdio: 100 echoes/s written and read back.
    let stdio_pid = stdio.pid();
    {
        let (done, failed) = (done.clone(), failed.clone());
        let mut stdin = stdio.stdin.take().unwrap();
        let lines = std::mem::replace(&mut stdio.lines, std::sync::mpsc::channel().1);
        workers.push(std::thread::spawn(move || {
            paced(100, end, |i| {
                let line = format!("{}\n", echo(i as i64, "soak"));
                let ok = stdin.write_all(line.as_bytes()).is_ok()
                    && lines
                        .recv_timeout(Duration::from_secs(30))
                        .is_ok_and(|l| l.starts_with(b"{\"jsonrpc\""));
                count(&done, &failed, ok);
            });
        }));
    }
    // Sampler: RSS of both servers every second.
    let http_pid = s.child.id();
    let mut samples: Vec<(u64, u64, u64, u64)> = Vec::new();
    let mut out = String::from("second,http_rss_kb,stdio_rss_kb,requests\n");
    // Sample once a second until one second before the load stops (then
    // the stdio server sees EOF and exits).
    for t in 1..secs {
        if let Some(wait) = (start + Duration::from_secs(t)).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
        let (h, st) = (mem_of(http_pid).rss_kb, mem_of(stdio_pid).rss_kb);
        let n = done.load(Relaxed);
        samples.push((t, h, st, n));
        out.push_str(&format!("{t},{h},{st},{n}\n"));
    }
    for w in workers {
        w.join().unwrap();
    }
    std::fs::write(&csv, &out).unwrap();
    let warm = (secs / 10).max(30);
    let summary = |name: &str, pick: fn(&(u64, u64, u64, u64)) -> u64| {
        let mut v: Vec<u64> = samples.iter().filter(|x| x.0 > warm).map(pick).collect();
        v.sort_unstable();
        let (min, max) = (v[0], v[v.len() - 1]);
        let median = v[v.len() / 2];
        let dev = (max.abs_diff(median).max(median.abs_diff(min))) as f64 * 100.0 / median as f64;
        let first = samples.iter().find(|x| x.0 > warm).map(pick).unwrap_or(0);
        let last = samples.last().map(pick).unwrap_or(0);
        eprintln!(
            "soak {name}: after {warm}s warm-up: min {min} KiB, median {median} KiB, max {max} KiB, \
             first {first} KiB, last {last} KiB, max deviation from median {dev:.2}%"
        );
        dev
    };
    let total = done.load(Relaxed);
    let bad = failed.load(Relaxed);
    eprintln!("soak: {secs}s, {total} operations, {bad} failed; samples in {csv}");
    let dev_http = summary("http", |x| x.1);
    let dev_stdio = summary("stdio", |x| x.2);
    assert_eq!(bad, 0, "operations failed during the soak");
    assert!(
        dev_http <= 5.0 && dev_stdio <= 5.0,
        "RSS not flat within 5%"
    );
}
