//! Resource updates from a 2026-07-28 upstream reach the gateway's
//! subscribed clients, including for a resource the upstream added after
//! the gateway started listening (its listen filter is renewed when the
//! upstream's resources change). The upstream is the everything-server
//! built in this process with two more tools, `touch` (announces an update
//! of a URI) and `add` (adds `test://added`), served over Streamable HTTP;
//! the gateway is `mcp gateway --http`, the client raw HTTP in the
//! handshake era with its GET stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use common::raw::{Client, HANDSHAKE, WAIT};
use common::scratch;
use ferromcp_server::protocol::types::{JsonObject, Resource, ResourceContents};
use ferromcp_server::transport::http::{HttpConfig, McpService, serve_listener};
use ferromcp_server::{RequestContext, ResourceDef, ResourceRequest, Server, tool};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, OnceLock, mpsc};
use std::time::{Duration, Instant};

/// The upstream, served until dropped.
struct Upstream {
    _rt: tokio::runtime::Runtime,
    url: String,
}

impl Upstream {
    fn start() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let url = rt.block_on(async {
            let me: Arc<OnceLock<Server>> = Arc::default();
            let (m1, m2) = (me.clone(), me.clone());
            let server = ferromcp_everything::everything_builder()
                .tool(
                    tool("touch")
                        .input_schema(
                            json!({"type": "object", "properties": {"uri": {"type": "string"}}})
                                .as_object()
                                .cloned()
                                .unwrap(),
                        )
                        .raw_handler(move |args: JsonObject, _cx: RequestContext| {
                            let me = m1.clone();
                            async move {
                                let uri = args.get("uri").and_then(Value::as_str).unwrap_or("");
                                if let Some(s) = me.get() {
                                    s.notify_resource_updated(uri);
                                }
                                "touched".to_owned()
                            }
                        }),
                )
                .tool(
                    tool("add").raw_handler(move |_args: JsonObject, _cx: RequestContext| {
                        let me = m2.clone();
                        async move {
                            let def = ResourceDef::new(
                                Resource::new("test://added", "added"),
                                |r: ResourceRequest, _cx: RequestContext| async move {
                                    ResourceContents::text(r.uri, None, "added")
                                },
                            );
                            match me.get().map(|s| s.add_resource(def)) {
                                Some(Ok(())) => "added".to_owned(),
                                other => format!("not added: {other:?}"),
                            }
                        }
                    }),
                )
                .build()
                .unwrap();
            let _ = me.set(server.clone());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let svc = McpService::new(server, HttpConfig::default());
            tokio::spawn(async move {
                let _ = serve_listener(svc, listener, std::future::pending::<()>()).await;
            });
            format!("http://{addr}/mcp")
        });
        Self { _rt: rt, url }
    }
}

/// The `params.uri` of every `notifications/resources/updated` on the
/// session's GET stream, read by a thread of its own.
fn updates(addr: &str, c: &Client) -> mpsc::Receiver<String> {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: {HANDSHAKE}\r\nMcp-Session-Id: {}\r\n\r\n",
        c.session.as_deref().unwrap_or_default()
    )
    .unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(s).lines() {
            let Ok(line) = line else { break };
            let Some(m) = line
                .strip_prefix("data:")
                .and_then(|d| serde_json::from_str::<Value>(d.trim()).ok())
            else {
                continue;
            };
            if m["method"] == "notifications/resources/updated"
                && tx
                    .send(m["params"]["uri"].as_str().unwrap_or("").to_owned())
                    .is_err()
            {
                break;
            }
        }
    });
    rx
}

/// Touches `uri` at the upstream through the gateway until its update
/// arrives (a listen stream being renewed may miss one touch).
fn touch_until_updated(c: &Client, rx: &mpsc::Receiver<String>, uri: &str) {
    let deadline = Instant::now() + WAIT;
    let mut id = 100;
    loop {
        assert!(
            Instant::now() < deadline,
            "no update of {uri} within {WAIT:?}"
        );
        id += 1;
        let a = c.call(json!(id), "web__touch", json!({"uri": uri}));
        assert_eq!(a["result"]["content"][0]["text"], "touched", "{a}");
        let wait_until = Instant::now() + Duration::from_secs(2);
        while let Ok(got) = rx.recv_timeout(wait_until.saturating_duration_since(Instant::now())) {
            if got == uri {
                return;
            }
        }
    }
}

#[test]
fn a_modern_upstreams_resource_updates_reach_subscribers_even_for_added_resources() {
    let up = Upstream::start();
    let dir = scratch("gateway-listen");
    let config = json!({"mcpServers": {"web": {"url": up.url}}});
    let g = Gateway::start(&dir, &config, &[]);
    let c = Client::new(&g.addr, HANDSHAKE);
    let sub = c.request(
        json!(1),
        "resources/subscribe",
        json!({"uri": "test://watched-resource"}),
    );
    assert!(sub.get("result").is_some(), "{sub}");
    let rx = updates(&g.addr, &c);
    touch_until_updated(&c, &rx, "test://watched-resource");

    // A resource the upstream adds later: the gateway lists it, and its
    // listen filter must name it for the upstream to send its updates.
    let a = c.call(json!(2), "web__add", json!({}));
    assert_eq!(a["result"]["content"][0]["text"], "added", "{a}");
    let deadline = Instant::now() + WAIT;
    loop {
        let l = c.request(json!(3), "resources/list", json!({}));
        let listed = l["result"]["resources"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["uri"] == "test://added"));
        if listed {
            break;
        }
        assert!(Instant::now() < deadline, "test://added never listed: {l}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let sub = c.request(
        json!(4),
        "resources/subscribe",
        json!({"uri": "test://added"}),
    );
    assert!(sub.get("result").is_some(), "{sub}");
    touch_until_updated(&c, &rx, "test://added");
}
