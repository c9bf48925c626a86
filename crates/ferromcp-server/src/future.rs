//! The boxed future every handler trait returns, and what serving one
//! request resolves to.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future: what type-erased tool, prompt, resource and
/// completion handlers return, and what server-to-client requests resolve
/// through.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

pub(crate) use crate::outcome::Reply;

/// The future [`Shared::dispatch`](crate::shared::Shared) returns: already answered, or one boxed
/// method future.
pub(crate) enum Dispatch {
    /// Answered synchronously; taken on the first poll.
    Ready(Option<Reply>),
    /// A handler-backed method.
    Pending(BoxFuture<Reply>),
}

impl std::future::Future for Dispatch {
    type Output = Reply;
    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Reply> {
        match self.get_mut() {
            Dispatch::Ready(r) => std::task::Poll::Ready(r.take().unwrap_or_else(|| {
                Err(
                    ferromcp_protocol::ErrorObject::internal("dispatch polled after completion")
                        .into(),
                )
            })),
            Dispatch::Pending(f) => f.as_mut().poll(cx),
        }
    }
}
