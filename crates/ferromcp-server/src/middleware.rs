//! RPC-level middleware: code that sees every admitted request, whatever
//! the transport and the era, before the handler runs and after it answers.
//!
//! A request reaches middleware after its transport framed it and the
//! server admitted it (the ladder, the era rule, typed params): an
//! [`RpcRequest`] names its method, the tool or prompt name or resource URI,
//! the authenticated [`Principal`], the era and the
//! request id. Middleware is a stack of [`RpcLayer`]s registered with
//! [`ServerBuilder::layer`](crate::ServerBuilder::layer), the first one
//! outermost, around the server's dispatcher (an [`RpcService`]). Each layer
//! may pass the request on ([`Next::run`]), refuse it with a JSON-RPC error
//! ([`RpcResponse::refuse`]) or look at the answer on its way out
//! ([`RpcResponse::error`]). Scope checks, rate limits and audit logs go
//! here, once, for stdio and HTTP, the 2026-07-28 wire and handshake-era
//! sessions alike.
//!
//! Requests for methods the server does not implement pass through the
//! stack too when the server has a fallback handler
//! ([`ServerBuilder::fallback`](crate::ServerBuilder::fallback)); without
//! one the admission refuses them.
//!
//! What middleware does not see: the `initialize` handshake and
//! `subscriptions/listen` (answered by the transport, not the dispatcher),
//! notifications, and requests the transport or the admission refused
//! (their answer does not depend on the server's handlers).
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use ferromcp_server::middleware::{self, RpcResponse};
//! use ferromcp_server::protocol::ErrorObject;
//! use ferromcp_server::{NoArgs, RequestContext, Server, tool};
//!
//! let calls = Arc::new(AtomicUsize::new(0));
//! let seen = calls.clone();
//! // At most two tools/call per server; everything else passes.
//! let limit = middleware::from_fn(move |req, next| {
//!     let seen = seen.clone();
//!     async move {
//!         if req.method() == "tools/call" && seen.fetch_add(1, Ordering::SeqCst) >= 2 {
//!             return RpcResponse::refuse(ErrorObject::invalid_request("rate limit reached"));
//!         }
//!         next.run(req).await
//!     }
//! });
//! let server = Server::builder("demo", "1.0.0")
//!     .tool(tool("hello").handler(|_: NoArgs, _: RequestContext| async { "hi" }))
//!     .layer(limit)
//!     .build()?;
//! # let _ = server;
//! # Ok::<(), ferromcp_server::Error>(())
//! ```
// AUTH-03, AUTH-04

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use ferromcp_protocol::jsonrpc::RequestId;
use ferromcp_protocol::{Era, ErrorObject, Principal, ProtocolVersion};

use crate::future::BoxFuture;
use crate::outcome::{Failure, Reply};

/// What the server hands to middleware: an admitted request that can
/// describe itself and be dispatched. Implemented by the dispatcher's own
/// request type, so this module needs nothing of the server's core.
pub(crate) trait Admitted: Send + 'static {
    fn method(&self) -> &str;
    fn name(&self) -> Option<&str>;
    fn principal(&self) -> Option<&Principal>;
    fn version(&self) -> ProtocolVersion;
    fn id(&self) -> &RequestId;
    /// Runs the handler: the innermost service.
    fn dispatch(self: Box<Self>) -> BoxFuture<Reply>;
}

/// One admitted request, as middleware sees it.
///
/// Moved down the stack by value: a layer that passes it on gives it to
/// [`Next::run`]; one that refuses drops it.
pub struct RpcRequest(Box<dyn Admitted>);

impl fmt::Debug for RpcRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcRequest")
            .field("id", self.id())
            .field("method", &self.method())
            .field("name", &self.name())
            .field("era", &self.era())
            .finish_non_exhaustive()
    }
}

impl RpcRequest {
    /// The JSON-RPC method, e.g. `tools/call`.
    pub fn method(&self) -> &str {
        self.0.method()
    }

    /// What the request names: the tool of a `tools/call`, the prompt of a
    /// `prompts/get`, the resource URI of `resources/read`,
    /// `resources/subscribe` and `resources/unsubscribe`; `None` for other
    /// methods.
    pub fn name(&self) -> Option<&str> {
        self.0.name()
    }

    /// Who sent it, when an authentication layer in front of the HTTP
    /// transport verified a token (`None` over stdio and without one).
    pub fn principal(&self) -> Option<&Principal> {
        self.0.principal()
    }

    /// The era of the wire the request came in on.
    pub fn era(&self) -> Era {
        self.0.version().era()
    }

    /// The protocol revision the request is served at.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.0.version()
    }

    /// The JSON-RPC request id.
    pub fn id(&self) -> &RequestId {
        self.0.id()
    }
}

/// The answer to an [`RpcRequest`]: a result, or a JSON-RPC error.
pub struct RpcResponse(Reply);

impl fmt::Debug for RpcResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Ok(b) => f.debug_tuple("Result").field(&b.len()).finish(),
            Err(e) => f.debug_tuple("Error").field(e.error()).finish(),
        }
    }
}

impl RpcResponse {
    /// Refuses the request with `error`. Over HTTP it is answered with the
    /// status the error's code maps to, like any other JSON-RPC error.
    pub fn refuse(error: ErrorObject) -> Self {
        Self(Err(Failure::Error(error)))
    }

    // AUTH-18
    /// Refuses the request because the caller's token lacks a scope it
    /// needs. Over HTTP the answer is `403 Forbidden` with
    /// `WWW-Authenticate: challenge` (e.g.
    /// `Bearer error="insufficient_scope", scope="mcp admin"`, RFC 6750
    /// §3.1), in both eras, and the body of a bearer-token refusal
    /// (`{"error":"insufficient_scope","error_description":…}` with
    /// `error`'s message), as an HTTP authentication layer answers; over
    /// stdio, and inside a batch, the JSON-RPC `error`. A `challenge` that is not a valid
    /// header value is refused here: the answer is then an internal error,
    /// never a 403 without its challenge.
    pub fn insufficient_scope(error: ErrorObject, challenge: &str) -> Self {
        // What an HTTP header value may hold: visible ASCII, space and tab.
        let valid = challenge
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
        if !valid {
            return Self::refuse(ErrorObject::internal(
                "middleware made an invalid WWW-Authenticate challenge",
            ));
        }
        Self(Err(Failure::InsufficientScope {
            error,
            challenge: Arc::from(challenge),
        }))
    }

    /// The error answered, or `None` for a result (including a tool result
    /// with `isError`, which is a successful JSON-RPC answer).
    pub fn error(&self) -> Option<&ErrorObject> {
        self.0.as_ref().err().map(Failure::error)
    }

    /// True when the request was answered with a result.
    pub fn is_success(&self) -> bool {
        self.0.is_ok()
    }

    /// Rewrites the `result` of a successful answer with `f` (a layer that
    /// trims a list for its caller, say); an error passes unchanged, and
    /// the JSON-RPC envelope (`jsonrpc`, `id`) is kept. An answer that
    /// cannot be read back (never one the server produced) becomes an
    /// internal error rather than passing unrewritten.
    pub fn map_result(self, f: impl FnOnce(&mut serde_json::Value)) -> Self {
        let Ok(bytes) = self.0 else {
            return self;
        };
        let rewritten = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|mut v| {
                f(v.get_mut("result")?);
                serde_json::to_vec(&v).ok()
            });
        match rewritten {
            Some(b) => Self(Ok(bytes::Bytes::from(b))),
            None => Self::refuse(ErrorObject::internal(
                "middleware could not rewrite the result",
            )),
        }
    }
}

/// A service over admitted requests: the server's dispatcher, or a
/// middleware wrapping it.
pub trait RpcService: Send + Sync + 'static {
    /// Serves one request.
    fn call(&self, req: RpcRequest) -> BoxFuture<RpcResponse>;
}

/// Wraps an [`RpcService`] in middleware (tower's `Layer`, for admitted
/// requests).
pub trait RpcLayer: Send + Sync + 'static {
    /// The service `inner` wrapped in this layer.
    fn layer(&self, inner: Next) -> Arc<dyn RpcService>;
}

/// The rest of the stack below a layer.
#[derive(Clone)]
pub struct Next(Arc<dyn RpcService>);

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Next")
    }
}

impl Next {
    /// Passes `req` on, and returns the answer from below.
    pub fn run(&self, req: RpcRequest) -> BoxFuture<RpcResponse> {
        self.0.call(req)
    }
}

/// A layer from an async function of the request and the rest of the
/// stack (axum's `from_fn`, for admitted requests).
pub fn from_fn<F, Fut>(f: F) -> FromFn<F>
where
    F: Fn(RpcRequest, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = RpcResponse> + Send + 'static,
{
    FromFn(Arc::new(f))
}

/// The layer [`from_fn`] makes.
pub struct FromFn<F>(Arc<F>);

impl<F> fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FromFn")
    }
}

impl<F, Fut> RpcLayer for FromFn<F>
where
    F: Fn(RpcRequest, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = RpcResponse> + Send + 'static,
{
    fn layer(&self, inner: Next) -> Arc<dyn RpcService> {
        Arc::new(FromFnService {
            f: self.0.clone(),
            next: inner,
        })
    }
}

struct FromFnService<F> {
    f: Arc<F>,
    next: Next,
}

impl<F, Fut> RpcService for FromFnService<F>
where
    F: Fn(RpcRequest, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = RpcResponse> + Send + 'static,
{
    fn call(&self, req: RpcRequest) -> BoxFuture<RpcResponse> {
        Box::pin((self.f)(req, self.next.clone()))
    }
}

/// The innermost service: the server's dispatcher.
struct Dispatcher;

impl RpcService for Dispatcher {
    fn call(&self, req: RpcRequest) -> BoxFuture<RpcResponse> {
        let fut = req.0.dispatch();
        Box::pin(async move { RpcResponse(fut.await) })
    }
}

/// The stack of `layers` (the first outermost) around the dispatcher;
/// `None` without layers, so a server without middleware pays nothing.
pub(crate) fn stack(layers: &[Arc<dyn RpcLayer>]) -> Option<Arc<dyn RpcService>> {
    if layers.is_empty() {
        return None;
    }
    let inner: Arc<dyn RpcService> = Arc::new(Dispatcher);
    Some(
        layers
            .iter()
            .rev()
            .fold(inner, |inner, layer| layer.layer(Next(inner))),
    )
}

/// Serves `req` through `stack`.
pub(crate) fn serve(stack: &Arc<dyn RpcService>, req: Box<dyn Admitted>) -> BoxFuture<Reply> {
    let fut = stack.call(RpcRequest(req));
    Box::pin(async move { fut.await.0 })
}
