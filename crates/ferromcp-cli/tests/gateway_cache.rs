//! `mcp gateway` and its upstreams' caching hints (`gateway.cache`), with
//! real processes: the gateway, `tests/fixtures/caching_upstream.py` (a
//! stdio upstream whose results carry `ttlMs`/`cacheScope`, counting the
//! lists and reads that reach it) and raw HTTP clients of both eras.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::{Gateway, get_stream, until_message};
use common::raw::{Client, HANDSHAKE, MODERN, WAIT, text_of, tool_names};
use common::{free_port, scratch};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn fixture() -> String {
    format!(
        "{}/tests/fixtures/caching_upstream.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The fixture's count file: one line per list or read it served.
fn counted(file: &Path, line: &str) -> usize {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == line)
        .count()
}

/// An upstream `c` running the fixture with `env`, and the gateway keys.
fn config(count: &Path, env: Value, gateway: Value) -> Value {
    let mut env = env;
    env["COUNT_FILE"] = json!(count);
    json!({
        "mcpServers": {"c": {"command": "python3", "args": [fixture()], "env": env}},
        "gateway": gateway,
    })
}

/// The body of `GET /metrics` on `addr`.
fn scrape(addr: &str) -> String {
    common::raw::http_call(addr, "GET", "/metrics").2
}

fn scratch_with_count(name: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let count = dir.join("count.txt");
    let _ = std::fs::remove_file(&count);
    (dir, count)
}

/// Waits up to [`WAIT`] for `f` to hold.
fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "not within {WAIT:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

// CACHE-07, CACHE-09
/// An upstream whose lists carry `ttlMs: 50` and that never announces a
/// change: the gateway lists it again once the ttl ran out (but not
/// before `minRefreshMs`), its clients get `tools/list_changed` and the
/// new tool; a re-list that fails keeps the last catalogue; and the
/// upstream's list count stays within one per `minRefreshMs`, however
/// often clients list.
#[test]
fn a_silent_upstream_is_relisted_when_its_ttl_runs_out() {
    let (dir, count) = scratch_with_count("gateway-cache-relist");
    let (flip, fail) = (dir.join("flip"), dir.join("fail"));
    let _ = std::fs::remove_file(&flip);
    let _ = std::fs::remove_file(&fail);
    let min_refresh = Duration::from_millis(300);
    let config = config(
        &count,
        json!({"LIST_TTL_MS": "50", "FLIP_FILE": flip, "FAIL_FILE": fail}),
        json!({"cache": {"minRefreshMs": min_refresh.as_millis() as u64}}),
    );
    let started = Instant::now();
    let g = Gateway::start(&dir, &config, &[]);
    let c = Client::new(&g.addr, HANDSHAKE);
    let mut stream = get_stream(&g.addr, &c);
    let names = tool_names(&c);
    assert!(names.iter().any(|n| n == "c__first"), "{names:?}");
    assert!(!names.iter().any(|n| n == "c__second"), "{names:?}");

    // The upstream now offers `second`, and says nothing.
    std::fs::write(&flip, "").unwrap();
    until_message(&mut stream, "notifications/tools/list_changed");
    let m = Client::new(&g.addr, MODERN);
    for client in [&c, &m] {
        let names = tool_names(client);
        assert!(names.iter().any(|n| n == "c__second"), "{names:?}");
    }

    // Re-lists fail from now on: the catalogue stays as it was.
    let before = counted(&count, "tools/list");
    std::fs::write(&fail, "").unwrap();
    until("two failed re-lists", || {
        counted(&count, "tools/list") >= before + 2
    });
    for client in [&c, &m] {
        for _ in 0..10 {
            let names = tool_names(client);
            assert!(
                ["c__first", "c__second", "c__touch"]
                    .iter()
                    .all(|t| names.iter().any(|n| n == t)),
                "{names:?}"
            );
        }
    }
    // Bounded: the first listing, then at most one per minRefreshMs
    // (failures back off further), whatever the 20+ client lists did.
    let lists = counted(&count, "tools/list");
    let bound = 2 + (started.elapsed().as_millis() / min_refresh.as_millis()) as usize;
    assert!(lists <= bound, "{lists} tools/list calls, at most {bound}");
}

/// `resources/read` of `uri` through `c`: (its text, ttlMs, cacheScope).
fn read(c: &Client, uri: &str) -> (String, Option<u64>, String) {
    let r = c.request(json!(7), "resources/read", json!({"uri": uri}));
    let res = &r["result"];
    let text = res["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {r}"))
        .to_owned();
    (
        text,
        res["ttlMs"].as_u64(),
        res["cacheScope"].as_str().unwrap_or_default().to_owned(),
    )
}

// CACHE-05, CACHE-07, CACHE-08, CACHE-10
/// Without inbound auth: a public read with a ttl is served from the
/// gateway's cache to every client, with honest hints; a `ttlMs: 0` read
/// and a private one (no verified caller to keep it for) always reach the
/// upstream; an announced update drops the cached read.
#[test]
fn public_reads_are_shared_and_private_or_zero_ttl_reads_are_not() {
    let (dir, count) = scratch_with_count("gateway-cache-reads");
    let metrics = format!("127.0.0.1:{}", common::free_port());
    let g = Gateway::start(
        &dir,
        &config(&count, json!({}), json!({"metrics": {"listen": metrics}})),
        &[],
    );
    let reads = |uri: &str| counted(&count, &format!("read {uri}"));
    let clients = [
        Client::new(&g.addr, MODERN),
        Client::new(&g.addr, HANDSHAKE),
        Client::new(&g.addr, MODERN),
    ];
    for c in &clients {
        for _ in 0..2 {
            let (text, ttl, scope) = read(c, "cache://pub");
            assert_eq!(text, "cache://pub read 1");
            assert!(ttl.is_some_and(|t| t > 0 && t <= 60_000), "{ttl:?}");
            assert_eq!(scope, "public");
        }
    }
    assert_eq!(reads("cache://pub"), 1);
    for (i, c) in clients.iter().enumerate() {
        let (text, ttl, _) = read(c, "cache://zero");
        assert_eq!(text, format!("cache://zero read {}", i + 1));
        assert_eq!(ttl, Some(0));
        let (text, ttl, scope) = read(c, "cache://priv");
        assert_eq!(text, format!("cache://priv read {}", i + 1));
        assert_eq!((ttl, scope.as_str()), (Some(60_000), "private"));
    }
    assert_eq!((reads("cache://zero"), reads("cache://priv")), (3, 3));
    // The lookups are counted: six reads of cache://pub made one miss and
    // five hits; the ttl-0 reads and the private reads (no inbound auth:
    // never cached) are misses.
    let text = scrape(&metrics);
    for line in [
        "mcp_gateway_cache_lookups_total{upstream=\"c\",result=\"hit\"} 5\n",
        "mcp_gateway_cache_lookups_total{upstream=\"c\",result=\"miss\"} 7\n",
    ] {
        assert!(text.contains(line), "{line} not in {text}");
    }
    // The upstream announces an update of cache://pub: the next read
    // reaches it.
    let touched = clients[0].call(json!(9), "c__touch", json!({"uri": "cache://pub"}));
    assert_eq!(text_of(&touched), "touched");
    until("the update dropped the cached read", || {
        read(&clients[1], "cache://pub").0 == "cache://pub read 2"
    });
    assert_eq!(reads("cache://pub"), 2);
    assert_eq!(read(&clients[2], "cache://pub").0, "cache://pub read 2");
    assert_eq!(reads("cache://pub"), 2);
    // A resource list change drops its cached reads too (the gateway
    // lists it again).
    let touched = clients[0].call(json!(10), "c__touch", json!({"list": true}));
    assert_eq!(text_of(&touched), "touched");
    until("the list change dropped the cached read", || {
        read(&clients[1], "cache://pub").0 == "cache://pub read 3"
    });
    assert_eq!(reads("cache://pub"), 3);
}

// CACHE-10
/// A reload that changes an upstream's entry drops its cached reads: the
/// restarted upstream is asked again.
#[test]
fn a_reload_drops_the_upstreams_cached_reads() {
    let (dir, count) = scratch_with_count("gateway-cache-reload");
    let mut config = config(&count, json!({}), json!({}));
    let mut g = Gateway::start(&dir, &config, &[]);
    let c = Client::new(&g.addr, MODERN);
    for _ in 0..2 {
        assert_eq!(read(&c, "cache://pub").0, "cache://pub read 1");
    }
    assert_eq!(counted(&count, "read cache://pub"), 1);
    config["mcpServers"]["c"]["env"]["CHANGED"] = json!("1");
    std::fs::write(dir.join("gateway.json"), config.to_string()).unwrap();
    assert!(g.stderr_until("changed [c]"), "{}", g.seen);
    until("the restarted upstream was read", || {
        c.request(json!(8), "resources/read", json!({"uri": "cache://pub"}))["result"].is_object()
            && counted(&count, "read cache://pub") == 2
    });
}

// CACHE-04, CACHE-08
/// With inbound auth: a private read is served from the cache only to the
/// same verified caller, never to another (the test issuer's tokens share
/// a subject; these two differ in scopes, which the partition covers);
/// a public one is shared between them.
#[test]
fn a_private_read_is_never_served_to_another_principal() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let authz = rt.block_on(ferromcp_test_issuer::AuthServer::start());
    let (dir, count) = scratch_with_count("gateway-cache-private");
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let config = config(
        &count,
        json!({}),
        json!({"auth": {"issuer": authz.url, "resource": resource, "requiredScopes": ["mcp"]}}),
    );
    let g = Gateway::start_at(&dir, &config, &[], &format!("127.0.0.1:{port}"), WAIT);
    let reads = |uri: &str| counted(&count, &format!("read {uri}"));
    let client = |scope: &str, era: &'static str| {
        let h = format!("Bearer {}", authz.mint(&resource, scope));
        Client::with_headers(&g.addr, era, json!({}), &[("Authorization", h.as_str())])
    };
    let alice = [client("mcp alice", MODERN), client("mcp alice", HANDSHAKE)];
    let bob = client("mcp bob", MODERN);
    for c in &alice {
        let (text, ttl, scope) = read(c, "cache://priv");
        assert_eq!(text, "cache://priv read 1");
        assert!(ttl.is_some_and(|t| t > 0 && t <= 60_000), "{ttl:?}");
        assert_eq!(scope, "private");
    }
    assert_eq!(reads("cache://priv"), 1);
    let (text, _, scope) = read(&bob, "cache://priv");
    assert_eq!(
        (text.as_str(), scope.as_str()),
        ("cache://priv read 2", "private")
    );
    assert_eq!(reads("cache://priv"), 2);
    for c in [&alice[0], &bob] {
        assert_eq!(read(c, "cache://pub").0, "cache://pub read 1");
    }
    assert_eq!(reads("cache://pub"), 1);
    drop(g);
    drop(rt);
}

/// A list's hints through `c`: (ttlMs, cacheScope).
fn list_hints(c: &Client, method: &str) -> (Option<u64>, String) {
    let r = c.request(json!(3), method, json!({}));
    let res = &r["result"];
    assert!(res.is_object(), "{method}: {r}");
    (
        res["ttlMs"].as_u64(),
        res["cacheScope"].as_str().unwrap_or_default().to_owned(),
    )
}

const LISTS: [&str; 4] = [
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
];

// CACHE-01, CACHE-03, CACHE-04
/// The gateway's own list hints: every upstream's lists public with a
/// ttl and no scope rules give public lists with at most what is left of
/// it; `scopes` on an upstream (lists filtered per caller), or another
/// upstream whose lists carry no ttl, give the default (0, private).
#[test]
fn the_gateways_list_hints_follow_its_upstreams() {
    let (dir, count) = scratch_with_count("gateway-cache-hints");
    let base = config(&count, json!({"LIST_TTL_MS": "60000"}), json!({}));
    {
        let g = Gateway::start(&dir, &base, &[]);
        let m = Client::new(&g.addr, MODERN);
        for method in LISTS {
            let (ttl, scope) = list_hints(&m, method);
            assert!(
                ttl.is_some_and(|t| t > 0 && t <= 60_000),
                "{method}: {ttl:?}"
            );
            assert_eq!(scope, "public", "{method}");
        }
    }
    let mut scoped = base.clone();
    scoped["mcpServers"]["c"]["scopes"] = json!({"second": ["x"]});
    let mut mixed = base.clone();
    let mut d = base["mcpServers"]["c"].clone();
    d["env"]["LIST_TTL_MS"] = json!("0");
    d["env"]["COUNT_FILE"] = json!(dir.join("count-d.txt"));
    mixed["mcpServers"]["d"] = d;
    for (what, config) in [("scopes", scoped), ("an upstream without ttl", mixed)] {
        let g = Gateway::start(&dir, &config, &[]);
        let m = Client::new(&g.addr, MODERN);
        for method in LISTS {
            let hints = list_hints(&m, method);
            assert_eq!(hints, (Some(0), "private".to_owned()), "{what}: {method}");
        }
    }
}
