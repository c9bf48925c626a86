//! The response body: a full buffer, nothing, or a stream of SSE frames.

use bytes::Bytes;
use futures_util::Stream;
use http_body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Body of every response the MCP service produces.
pub struct McpBody {
    kind: Kind,
}

enum Kind {
    Full(Option<Bytes>),
    Stream(Pin<Box<dyn Stream<Item = Bytes> + Send>>),
}

impl McpBody {
    // Foreign type: `Bytes` is the chunk type of http-body and hyper.
    /// A complete body.
    pub fn full(b: impl Into<Bytes>) -> Self {
        Self {
            kind: Kind::Full(Some(b.into())),
        }
    }
    /// An empty body.
    pub fn empty() -> Self {
        Self {
            kind: Kind::Full(None),
        }
    }
    // Foreign type: a `futures` `Stream` of `Bytes` chunks, the body shape hyper streams.
    /// A streamed body; each item is written as it is produced.
    pub fn stream(s: impl Stream<Item = Bytes> + Send + 'static) -> Self {
        Self {
            kind: Kind::Stream(Box::pin(s)),
        }
    }
}

impl std::fmt::Debug for McpBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Full(b) => f
                .debug_tuple("McpBody::Full")
                .field(&b.as_ref().map(Bytes::len))
                .finish(),
            Kind::Stream(_) => f.write_str("McpBody::Stream"),
        }
    }
}

// Foreign type: this is an HTTP transport; `http`/`http-body` are the shared vocabulary of hyper,
// axum and tower, so it plugs into them without conversion.
impl Body for McpBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.kind {
            Kind::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Kind::Stream(s) => s
                .as_mut()
                .poll_next(cx)
                .map(|o| o.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.kind, Kind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Stream(_) => SizeHint::default(),
        }
    }
}
