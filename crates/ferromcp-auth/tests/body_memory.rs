//! A request body sent through the bearer layer to a real MCP server is read
//! once, by the server: the per-tool scope policy is RPC middleware on the
//! server's seam, so the layer never buffers the body. A body of a few MiB
//! sent as one-byte chunks is measured with a counting global allocator.
// AUTH-18

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use ferromcp_auth::resource::{
    AuthLayer, BoxFuture, ResourceUri, TokenVerifier, VerifiedToken, VerifyError,
};
use ferromcp_server::transport::http::{HttpConfig, McpService};
use ferromcp_server::{NoArgs, RequestContext, Server, tool};
use http_body::Frame;
use http_body_util::{BodyExt, Full};
use tower::{Layer, ServiceExt};

/// Counts live heap bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to the system allocator, which
// upholds GlobalAlloc's contract; the counters only observe sizes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same layout, forwarded (see the impl's comment).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc`/`realloc` above with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Accepts any token, with scopes `mcp` and `admin`.
struct AnyToken;

impl TokenVerifier for AnyToken {
    fn verify<'a>(&'a self, _token: &'a str) -> BoxFuture<'a, Result<VerifiedToken, VerifyError>> {
        Box::pin(async {
            Ok(VerifiedToken::new(
                "user",
                vec!["mcp".to_owned(), "admin".to_owned()],
            ))
        })
    }
}

/// Spaces after the request: 3 MiB (under the server's default 4 MiB
/// body limit), so that one buffer holding the body
/// (grown by doubling to 4 MiB) stays clear of two.
const PADDING: usize = 3 * 1024 * 1024;

/// A `tools/call` followed by `PADDING` spaces, one byte per frame.
struct OneByteChunks {
    head: Option<Bytes>,
    left: usize,
}

impl http_body::Body for OneByteChunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(h) = self.head.take() {
            return Poll::Ready(Some(Ok(Frame::data(h))));
        }
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(Frame::data(Bytes::copy_from_slice(b" ")))))
    }
}

fn request<B>(body: B, session: Option<&str>) -> http::Request<B> {
    let mut b = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", "Bearer token");
    if let Some(sid) = session {
        b = b
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", "2025-11-25");
    }
    b.body(body).unwrap()
}

#[tokio::test]
async fn a_one_byte_chunked_body_is_read_once_by_the_server() {
    let resource = ResourceUri::parse("http://127.0.0.1/mcp").unwrap();
    let auth = AuthLayer::builder(resource, AnyToken)
        .authorization_server("https://issuer.example.com")
        .require_scopes(["mcp"])
        .require_tool_scopes("admin", ["admin"])
        .build()
        .unwrap();
    let server = Server::builder("memory", "1.0.0")
        .tool(
            tool("admin")
                .description("Privileged")
                .handler(|_: NoArgs, _cx: RequestContext| async move { "done" }),
        )
        .layer(auth.scope_layer())
        .build()
        .unwrap();
    let svc = auth.layer(McpService::new(server, HttpConfig::default()));
    // A handshake-era session: its requests carry no routing headers, so
    // nothing but the body names the tool.
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let resp = svc
        .clone()
        .oneshot(request(Full::new(Bytes::from_static(init)), None))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let sid = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .unwrap()
        .to_owned();
    drop(resp);

    let head = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin","arguments":{}}}"#;
    let req = request(
        OneByteChunks {
            head: Some(Bytes::from_static(head)),
            left: PADDING,
        },
        Some(&sid),
    );
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let resp = svc.oneshot(req).await.unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    eprintln!("peak heap growth: {peak} bytes for a {PADDING}-byte body in one-byte chunks");
    // The body was read, the tool found and its scope granted.
    assert_eq!(status, 200, "{body:?}");
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("done"), "{text}");
    // One buffer of the body (4 MiB after doubling) and the server's
    // parsing: about 1.8 times the body. A second reader in front of the
    // server (the layer buffering the body to find the tool, then handing
    // the server a copy) cost 2.8 times; keeping every one-byte chunk,
    // over thirty times.
    assert!(
        peak < 5 * PADDING / 2,
        "peak {peak} bytes for a {PADDING}-byte body"
    );
}
