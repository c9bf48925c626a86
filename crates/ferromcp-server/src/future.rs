//! The boxed future every handler trait returns.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future: what type-erased tool, prompt, resource and
/// completion handlers return, and what server-to-client requests resolve
/// through.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
