//! `mcp gateway` observability, real processes all the way: the gateway
//! with the everything-server (`mcp serve --stdio`) as its upstream, a raw
//! HTTP/1.1 client, and its Prometheus endpoint read over TCP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use common::raw::{Client, HANDSHAKE, MODERN, WAIT, http_call as get, text_of, tool_names};
use common::{MCP, free_port, scratch};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn everything_stdio() -> Value {
    json!({"command": MCP, "args": ["serve", "--stdio"]})
}

/// One sample of the text format: metric name and labels.
type Key = (String, BTreeMap<String, String>);

/// Parses the Prometheus text exposition format (0.0.4) strictly enough
/// to catch what a scraper rejects: every sample belongs to a family
/// declared by a `# TYPE` line before it, names and label names are
/// valid, label values are quoted with only `\\`, `\"` and `\n` escapes,
/// values are floats, and no sample appears twice.
fn parse(text: &str) -> BTreeMap<Key, f64> {
    let valid_name = |n: &str| {
        !n.is_empty()
            && !n.starts_with(|c: char| c.is_ascii_digit())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut out = BTreeMap::new();
    assert!(
        text.ends_with('\n'),
        "the exposition must end with a newline"
    );
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(valid_name(name), "{line}");
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "{line}"
            );
            assert!(
                types.insert(name.into(), kind.into()).is_none(),
                "twice: {line}"
            );
            continue;
        }
        if line.starts_with("# HELP ") || line.is_empty() {
            continue;
        }
        assert!(!line.starts_with('#'), "unknown comment form: {line}");
        let (name, rest) = match line.find('{') {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => line.split_once(' ').unwrap(),
        };
        assert!(valid_name(name), "{line}");
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).is_some_and(|k| k == "histogram"))
            })
            .unwrap_or(name);
        assert!(types.contains_key(family), "no # TYPE before: {line}");
        let mut labels = BTreeMap::new();
        let mut chars = rest.chars().peekable();
        let value: String = if line.contains('{') {
            loop {
                let lname: String = chars.by_ref().take_while(|c| *c != '=').collect();
                assert!(valid_name(&lname), "label name {lname:?} in {line}");
                assert_eq!(chars.next(), Some('"'), "{line}");
                let mut v = String::new();
                loop {
                    match chars.next().unwrap() {
                        '\\' => match chars.next().unwrap() {
                            '\\' => v.push('\\'),
                            '"' => v.push('"'),
                            'n' => v.push('\n'),
                            c => panic!("bad escape \\{c} in {line}"),
                        },
                        '"' => break,
                        c => v.push(c),
                    }
                }
                assert!(labels.insert(lname, v).is_none(), "{line}");
                match chars.next().unwrap() {
                    ',' => continue,
                    '}' => break,
                    c => panic!("{c:?} after a label in {line}"),
                }
            }
            assert_eq!(chars.next(), Some(' '), "{line}");
            chars.collect()
        } else {
            rest.to_owned()
        };
        let v: f64 = match value.as_str() {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("value {v:?} in {line}")),
        };
        assert!(
            out.insert((name.to_owned(), labels), v).is_none(),
            "sample twice: {line}"
        );
    }
    out
}

fn key(name: &str, labels: &[(&str, &str)]) -> Key {
    (
        name.to_owned(),
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

/// `/metrics` counts each forwarded tool call by upstream, upstream tool
/// name and outcome (a result, a tool error, a JSON-RPC error), never a
/// call the gateway refused itself, with a latency histogram and each
/// upstream's connection and breaker state, in the text format; other
/// paths are 404 and other methods 405.
#[test]
fn metrics_count_calls_by_upstream_tool_and_outcome_in_the_text_format() {
    let dir = scratch("gateway-metrics");
    let maddr = format!("127.0.0.1:{}", free_port());
    let config = json!({
        "mcpServers": {"ev": everything_stdio()},
        "gateway": {"metrics": {"listen": maddr}},
    });
    let mut g = Gateway::start(&dir, &config, &[]);
    assert!(
        g.stderr_until(&format!("metrics on http://{maddr}/metrics")),
        "{}",
        g.seen
    );
    let c = Client::new(&g.addr, MODERN);
    let deadline = Instant::now() + WAIT;
    while !tool_names(&c).iter().any(|n| n == "ev__echo") {
        assert!(Instant::now() < deadline, "ev__echo never listed");
        std::thread::sleep(Duration::from_millis(100));
    }
    for i in 0..2 {
        let a = c.call(json!(i), "ev__echo", json!({"text": "hi"}));
        assert_eq!(text_of(&a), "hi", "{a}");
    }
    let a = c.call(json!(10), "ev__test_error_handling", json!({}));
    assert_eq!(a["result"]["isError"], true, "{a}");
    let a = c.call(json!(11), "ev__debug_panic", json!({}));
    assert!(a["error"].is_object(), "{a}");
    // Refused by the gateway itself: never reaches the upstream.
    let a = c.call(json!(12), "ev__invented", json!({}));
    assert!(a["error"].is_object(), "{a}");

    let (status, head, body) = get(&maddr, "GET", "/metrics");
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    let m = parse(&body);
    let calls = |tool: &str, outcome: &str| {
        m.get(&key(
            "mcp_gateway_tool_calls_total",
            &[("upstream", "ev"), ("tool", tool), ("outcome", outcome)],
        ))
        .copied()
    };
    assert_eq!(calls("echo", "ok"), Some(2.0), "{body}");
    assert_eq!(
        calls("test_error_handling", "tool_error"),
        Some(1.0),
        "{body}"
    );
    assert_eq!(calls("debug_panic", "rpc_error"), Some(1.0), "{body}");
    let all: f64 = m
        .iter()
        .filter(|((n, _), _)| n == "mcp_gateway_tool_calls_total")
        .map(|(_, v)| v)
        .sum();
    assert_eq!(all, 4.0, "only the four forwarded calls: {body}");
    let count = m.get(&key(
        "mcp_gateway_tool_call_duration_seconds_count",
        &[("upstream", "ev"), ("tool", "echo")],
    ));
    assert_eq!(count, Some(&2.0), "{body}");
    let inf = m.get(&key(
        "mcp_gateway_tool_call_duration_seconds_bucket",
        &[("upstream", "ev"), ("tool", "echo"), ("le", "+Inf")],
    ));
    assert_eq!(inf, Some(&2.0), "{body}");
    let up = |n: &str| m.get(&key(n, &[("upstream", "ev")])).copied();
    assert_eq!(up("mcp_gateway_upstream_connected"), Some(1.0), "{body}");
    assert_eq!(
        up("mcp_gateway_upstream_breaker_state"),
        Some(0.0),
        "{body}"
    );

    // Scraping again changes nothing; HEAD has no body; other paths and
    // methods are refused.
    let (_, _, again) = get(&maddr, "GET", "/metrics");
    assert_eq!(parse(&again), m);
    let (status, _, body) = get(&maddr, "HEAD", "/metrics");
    assert_eq!((status, body.as_str()), (200, ""));
    assert_eq!(get(&maddr, "GET", "/mcp").0, 404);
    assert_eq!(get(&maddr, "POST", "/metrics").0, 405);
    // A client sending an endless head is cut off; the endpoint serves on.
    let mut s = std::net::TcpStream::connect(&maddr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let junk = vec![b'a'; 64 * 1024];
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nX: ");
    let _ = s.write_all(&junk);
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "an oversized head got an answer");
    assert_eq!(get(&maddr, "GET", "/metrics").0, 200);
}

/// Without `gateway.metrics` nothing listens for metrics, and the MCP
/// endpoint does not serve them either.
#[test]
fn metrics_are_off_unless_configured() {
    let dir = scratch("gateway-metrics-off");
    let config = json!({"mcpServers": {"ev": everything_stdio()}});
    let g = Gateway::start(&dir, &config, &[]);
    assert!(!g.seen.contains("metrics on"), "{}", g.seen);
    let (status, _, body) = get(&g.addr, "GET", "/metrics");
    assert_ne!(status, 200, "{body}");
}

/// Waits until `tool` is listed.
fn until_listed(c: &Client, tool: &str) {
    let deadline = Instant::now() + WAIT;
    while !tool_names(c).iter().any(|n| n == tool) {
        assert!(Instant::now() < deadline, "{tool} never listed");
        std::thread::sleep(Duration::from_millis(100));
    }
}

// META-02
/// The W3C trace context of a client's call reaches the upstream in the
/// call's `_meta`: the same trace id and `tracestate`, the gateway's own
/// span id as the parent; an invalid `traceparent` is not passed on, and a
/// call without one sends none.
#[test]
fn the_callers_trace_context_reaches_the_upstream() {
    let dir = scratch("gateway-trace");
    let config = json!({"mcpServers": {"ev": everything_stdio()}});
    let g = Gateway::start(&dir, &config, &[]);
    let c = Client::new(&g.addr, HANDSHAKE);
    until_listed(&c, "ev__debug_request_meta");
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let sent = format!("00-{trace}-00f067aa0ba902b7-01");
    let seen = |id: u64, meta: Value| -> Value {
        let a = c.request(
            json!(id),
            "tools/call",
            json!({"name": "ev__debug_request_meta", "arguments": {}, "_meta": meta}),
        );
        serde_json::from_str(&text_of(&a)).unwrap_or_else(|e| panic!("{e}: {a}"))
    };
    let m = seen(1, json!({"traceparent": sent, "tracestate": "vendor=abc"}));
    let tp = m["traceparent"].as_str().unwrap_or_else(|| panic!("{m}"));
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "{tp}");
    assert_eq!((parts[0], parts[1], parts[3]), ("00", trace, "01"), "{tp}");
    assert_ne!(
        parts[2], "00f067aa0ba902b7",
        "the gateway's own span is the parent"
    );
    assert_ne!(parts[2], "0000000000000000", "{tp}");
    assert_eq!(m["tracestate"], "vendor=abc", "{m}");
    // Each upstream call is a span of its own.
    let again = seen(2, json!({"traceparent": sent}));
    let tp2 = again["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("{again}"));
    assert!(tp2.contains(trace) && tp2 != tp, "{tp2} vs {tp}");
    assert!(again.get("tracestate").is_none(), "{again}");
    let none = seen(3, json!({"traceparent": "00-zz-nope-01"}));
    assert!(none.get("traceparent").is_none(), "{none}");
    let none = seen(4, json!({}));
    assert!(none.get("traceparent").is_none(), "{none}");
}

/// The gateway's resident set in kB (`VmRSS`).
fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// An upstream flooding the gateway with 100,000 log messages and 1,000
/// list changes: the excess over its `notificationRate` is dropped and
/// counted (one report on stderr), its re-lists stay within the rate, the
/// other upstream's calls are all answered meanwhile, and the gateway's
/// memory stays bounded.
#[test]
fn a_notification_flood_is_dropped_counted_and_starves_nobody() {
    let dir = scratch("gateway-flood");
    let lists = dir.join("lists");
    let done = dir.join("done");
    let _ = std::fs::remove_file(&lists);
    let _ = std::fs::remove_file(&done);
    let maddr = format!("127.0.0.1:{}", free_port());
    let (per_second, burst) = (5u64, 5u64);
    let t0 = Instant::now();
    let config = json!({
        "mcpServers": {
            "ev": everything_stdio(),
            "hostile": {
                "command": "python3",
                "args": [format!("{}/tests/fixtures/flood_upstream.py", env!("CARGO_MANIFEST_DIR"))],
                "env": {"LIST_FILE": lists.to_str().unwrap(), "DONE_FILE": done.to_str().unwrap(),
                        "FLOOD_N": "100000"},
                "notificationRate": {"perSecond": per_second, "burst": burst},
            },
        },
        "gateway": {"metrics": {"listen": maddr}},
    });
    let mut g = Gateway::start(&dir, &config, &[]);
    let c = Client::new(&g.addr, MODERN);
    until_listed(&c, "ev__echo");
    // The other upstream is served throughout the flood.
    let mut answered = 0;
    for i in 0..50 {
        let a = c.call(json!(i), "ev__echo", json!({"text": format!("t{i}")}));
        if text_of(&a) == format!("t{i}") {
            answered += 1;
        }
    }
    assert_eq!(answered, 50, "calls of the other upstream went unanswered");
    let dropped = || {
        let (_, _, body) = get(&maddr, "GET", "/metrics");
        parse(&body)
            .get(&key(
                "mcp_gateway_notifications_dropped_total",
                &[("upstream", "hostile")],
            ))
            .copied()
            .unwrap_or(0.0)
    };
    // Every notification is either admitted (at most burst + rate x
    // elapsed) or dropped: 101,000 in all. The flood's last lines may
    // still sit in the pipe when it says it is done, so wait for the
    // gateway to have read them all (a gateway that admitted more than
    // its rate never gets there).
    let settled = || {
        let elapsed = t0.elapsed().as_secs() + 1;
        let admitted_max = burst + per_second * elapsed;
        dropped() >= (101_000 - admitted_max) as f64
    };
    let deadline = Instant::now() + WAIT;
    while !(done.exists() && settled()) {
        assert!(
            Instant::now() < deadline,
            "dropped {} (flood done: {})",
            dropped(),
            done.exists()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        g.stderr_until("faster than its notificationRate"),
        "{}",
        g.seen
    );
    let elapsed = t0.elapsed().as_secs() + 1;
    let admitted_max = burst + per_second * elapsed;
    // Re-lists: the first listing plus at most one per admitted list
    // change (the admitted ones are mostly log messages).
    let relists = std::fs::read_to_string(&lists).unwrap().lines().count() as u64;
    assert!(
        relists <= 1 + admitted_max,
        "{relists} listings of the flooding upstream in {elapsed} s"
    );
    let a = c.call(json!(99), "hostile__ping", json!({}));
    assert_eq!(text_of(&a), "pong", "{a}");
    let rss = rss_kb(g.pid());
    assert!(rss < 400 * 1024, "gateway VmRSS {rss} kB");
}
