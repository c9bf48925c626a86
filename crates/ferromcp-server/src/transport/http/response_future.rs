//! The future [`McpService`](super::McpService) returns for each request.

use super::body::McpBody;
use http::Response;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The future of one [`McpService`](super::McpService) call: resolves to
/// the HTTP response (never an error; every failure is an HTTP answer).
///
/// A named type, so a tower stack can name `McpService`'s future in its
/// own types instead of spelling out a boxed trait object.
#[must_use = "futures do nothing unless polled"]
pub struct ResponseFuture {
    inner: Pin<Box<dyn Future<Output = Response<McpBody>> + Send>>,
}

impl ResponseFuture {
    pub(crate) fn new(f: impl Future<Output = Response<McpBody>> + Send + 'static) -> Self {
        Self { inner: Box::pin(f) }
    }
}

impl Future for ResponseFuture {
    type Output = Result<Response<McpBody>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx).map(Ok)
    }
}

impl fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_future_is_send_and_resolves_to_the_response() {
        fn is_send<T: Send>(_: &T) {}
        let f = ResponseFuture::new(async { Response::new(McpBody::empty()) });
        is_send(&f);
        let r = futures_util::FutureExt::now_or_never(f);
        assert!(matches!(r, Some(Ok(_))));
    }
}
