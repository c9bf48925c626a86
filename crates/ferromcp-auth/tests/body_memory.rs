//! A request body the layer reads to find the operation (per-tool scopes,
//! no trusted routing headers) costs memory in proportion to its size, not
//! to the number of chunks it arrives in: a 4 MiB body sent as one-byte
//! chunks is measured with a counting global allocator.
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
use http_body::Frame;
use http_body_util::Full;
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

const PADDING: usize = 4 * 1024 * 1024;

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

#[tokio::test]
async fn a_one_byte_chunked_body_costs_memory_in_proportion_to_its_size() {
    let resource = ResourceUri::parse("https://mcp.example.com/mcp").unwrap();
    let layer = AuthLayer::builder(resource, AnyToken)
        .authorization_server("https://issuer.example.com")
        .require_scopes(["mcp"])
        .require_tool_scopes("admin", ["admin"])
        .body_peek_limit(2 * PADDING)
        .build()
        .unwrap();
    // The wrapped service answers without reading the body: what is
    // measured is the layer's own read.
    let inner = tower::service_fn(|_req: http::Request<_>| async {
        Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::new())))
    });
    let svc = layer.layer(inner);
    let head = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin","arguments":{}}}"#;
    let req = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "mcp.example.com")
        .header("content-type", "application/json")
        .header("authorization", "Bearer token")
        .body(OneByteChunks {
            head: Some(Bytes::from_static(head)),
            left: PADDING,
        })
        .unwrap();
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let resp = svc.oneshot(req).await.unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    eprintln!("peak heap growth: {peak} bytes for a {PADDING}-byte body in one-byte chunks");
    // The body was read and the operation found (admin is granted).
    assert_eq!(resp.status(), 200);
    // The body itself, plus the buffer's growth (at most one doubling in
    // flight): well under four times its size. Keeping every one-byte
    // chunk until the end costs over thirty times its size.
    assert!(
        peak < 4 * PADDING,
        "peak {peak} bytes for a {PADDING}-byte body"
    );
}
