//! Whether the listener speaks h2c is a runtime setting
//! (`HttpConfig::http2`); the `http2` feature only supplies the code. Off,
//! a connection opening with the HTTP/2 preface is closed unanswered while
//! HTTP/1.1 is served; asking for HTTP/2 in a build without the feature is
//! a configuration error. Run both ways:
//! `cargo nextest run -p ferromcp-server --test http2_setting` and
//! `cargo nextest run -p ferromcp-server --test http2_setting --no-default-features --features http`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ferromcp_server::transport::http::{HttpConfig, McpService, serve_listener};
use ferromcp_server::{Error, NoArgs, RequestContext, Server, tool};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An empty SETTINGS frame.
const H2_SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];
/// Generous: only a hang would take this long.
const PATIENCE: Duration = Duration::from_secs(20);

fn server() -> Server {
    Server::builder("h2c", "1.0.0")
        .tool(tool("hi").handler(|_: NoArgs, _cx: RequestContext| async { "hi" }))
        .build()
        .expect("server")
}

/// A listener on a free port serving `config` until the sender is used.
struct Running {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    serving: JoinHandle<Result<(), Error>>,
}

async fn start(config: HttpConfig) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(serve_listener(
        McpService::new(server(), config),
        listener,
        async move {
            let _ = stopped.await;
        },
    ));
    Running {
        addr,
        stop,
        serving,
    }
}

impl Running {
    async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(PATIENCE, self.serving)
            .await
            .expect("drained")
            .expect("join")
            .expect("served");
    }
}

/// Writes `bytes` on a fresh connection and returns what the server sends
/// until it closes the connection, or up to a first HTTP/2 SETTINGS frame
/// (an HTTP/2 server answers the preface with one and stays open).
async fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut conn = tokio::net::TcpStream::connect(addr).await.expect("connect");
    conn.write_all(bytes).await.expect("write");
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(PATIENCE, conn.read(&mut buf))
            .await
            .expect("the server answers or closes")
            .unwrap_or(0);
        let Some(chunk) = buf.get(..n).filter(|c| !c.is_empty()) else {
            return out;
        };
        out.extend_from_slice(chunk);
        if is_h2_settings(&out) {
            return out;
        }
    }
}

/// Whether `raw` starts with an HTTP/2 SETTINGS frame (type 4).
fn is_h2_settings(raw: &[u8]) -> bool {
    raw.len() >= 9 && raw.get(3) == Some(&4)
}

fn h2_hello() -> Vec<u8> {
    [H2_PREFACE, H2_SETTINGS].concat()
}

/// An HTTP/1.1 `tools/call` of `hi`, on the 2026-07-28 wire.
fn h1_call() -> Vec<u8> {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "hi", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
        }}
    })
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\
         content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: hi\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn assert_h1_call_served(answer: &[u8]) {
    let text = String::from_utf8_lossy(answer);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"text\":\"hi\""), "{text}");
}

// Issue 25 item 3: h2c off at run time, in any build.
#[tokio::test]
async fn h2c_off_closes_the_preface_unanswered_and_serves_http1() {
    let s = start(HttpConfig::default().http2(false)).await;
    let answer = exchange(s.addr, &h2_hello()).await;
    assert!(
        answer.is_empty(),
        "HTTP/2 is off, yet the server answered: {answer:?}"
    );
    assert_h1_call_served(&exchange(s.addr, &h1_call()).await);
    s.stop().await;
}

// The control: the same probe tells an HTTP/2 listener apart.
#[cfg(feature = "http2")]
#[tokio::test]
async fn h2c_is_on_by_default_with_the_feature() {
    let s = start(HttpConfig::default()).await;
    let answer = exchange(s.addr, &h2_hello()).await;
    assert!(is_h2_settings(&answer), "no SETTINGS frame: {answer:?}");
    assert_h1_call_served(&exchange(s.addr, &h1_call()).await);
    s.stop().await;
}

#[cfg(not(feature = "http2"))]
#[tokio::test]
async fn h2c_is_off_by_default_without_the_feature() {
    let s = start(HttpConfig::default()).await;
    assert!(exchange(s.addr, &h2_hello()).await.is_empty());
    assert_h1_call_served(&exchange(s.addr, &h1_call()).await);
    s.stop().await;
}

// Asking for HTTP/2 the build cannot speak is refused before serving, not
// silently served as HTTP/1.1 only.
#[cfg(not(feature = "http2"))]
#[tokio::test]
async fn h2c_without_the_feature_is_a_configuration_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let served = tokio::time::timeout(
        PATIENCE,
        serve_listener(
            McpService::new(server(), HttpConfig::default().http2(true)),
            listener,
            std::future::pending::<()>(),
        ),
    )
    .await
    .expect("refused at once");
    let e = served.expect_err("refused");
    assert!(e.is_config(), "{e}");
    assert!(e.to_string().contains("http2"), "{e}");
}
