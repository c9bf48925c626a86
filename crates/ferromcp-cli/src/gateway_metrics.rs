//! The gateway's Prometheus endpoint (`"gateway": {"metrics": {"listen":
//! "IP:PORT"}}`): `GET /metrics` on a listener of its own, never on the
//! MCP endpoint's.
//!
//! A listener of its own because it works with `--stdio` too, because a
//! scraper then needs no MCP session, Host/Origin allowance or bearer
//! token, and because the MCP endpoint's address (often public) never
//! answers anything but MCP. The endpoint only reads counters: a request
//! head larger than [`MAX_HEAD`] bytes, or slower than [`HEAD_TIMEOUT`],
//! gets its connection closed; at most [`MAX_CONNECTIONS`] are served at
//! once (further ones wait in the kernel's backlog).

use ferromcp_gateway::{METRICS_CONTENT_TYPE, Running};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long writing the answer may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
const MAX_CONNECTIONS: usize = 16;

/// Serves `GET /metrics` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, running: Arc<Running>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors and the like: try again shortly.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let running = running.clone();
        tokio::spawn(async move {
            answer(stream, &running).await;
            drop(permit);
        });
    }
}

/// Reads one request head and answers it; the connection is then closed.
async fn answer(mut stream: TcpStream, running: &Running) {
    let Ok(Some(head)) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await else {
        return;
    };
    let mut words = head.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            ("200 OK", METRICS_CONTENT_TYPE, running.metrics_text().await)
        }
        (_, "/metrics") => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".to_owned(),
        ),
        _ => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "the metrics are at /metrics\n".to_owned(),
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if status.starts_with("405") {
        out.push_str("Allow: GET, HEAD\r\n");
    }
    out.push_str("\r\n");
    if method != "HEAD" {
        out.push_str(&body);
    }
    let _ = tokio::time::timeout(WRITE_TIMEOUT, async {
        let _ = stream.write_all(out.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// The request line of a head ending in a blank line, or `None` when the
/// head is too large, not UTF-8 or the connection ends first.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() + n > MAX_HEAD {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = std::str::from_utf8(&buf).ok()?;
    text.lines().next().map(str::to_owned)
}
