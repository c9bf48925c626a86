//! The seam between the client core and the wire.
//!
//! The core builds complete JSON-RPC bodies and the MCP request headers
//! (computed with the protocol crate's codec) and hands them to a
//! [`Transport`]; it knows nothing of sockets or processes. Each request
//! yields an [`Exchange`]: the messages related to it (notifications,
//! handshake-era server requests, then its response). Dropping an exchange
//! before its response cancels the request the transport's way: an aborted
//! HTTP exchange or `notifications/cancelled` on stdio.
// HTTP-15, CANCEL-02

use crate::error::Result;
use crate::message::Inbound;
use ferromcp_protocol::RequestId;
use futures_util::future::BoxFuture;
use tokio::sync::mpsc;

#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg(feature = "http")]
pub(crate) mod http_sse;
pub(crate) mod router;
#[cfg(feature = "stdio")]
pub(crate) mod stdio;

/// Which kind of wire a transport speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// A child process over stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    // ERA-10
    /// The deprecated HTTP+SSE transport of 2024-11-05.
    HttpSse,
    /// An in-process transport (tests).
    Memory,
    /// Newline-delimited JSON-RPC over a caller-supplied reader/writer pair
    /// ([`crate::ClientBuilder::connect_io`]): an in-memory duplex to a
    /// server in the same process, a socket, a pipe.
    Io,
}

/// One outgoing message.
#[derive(Debug, Clone)]
pub(crate) struct Outbound {
    /// The request id (`None` for notifications and responses).
    pub id: Option<RequestId>,
    /// The serialized JSON-RPC message.
    pub body: Vec<u8>,
    /// MCP request headers (HTTP only): `MCP-Protocol-Version`,
    /// `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`.
    pub headers: Vec<(String, String)>,
    // LEGACY-05, DISC-07
    /// Whether dropping the exchange early should cancel the request
    /// (never for `initialize` or `server/discover`).
    pub cancellable: bool,
    // SSE-07
    /// Whether a broken SSE response may be resumed with `Last-Event-ID`
    /// (handshake era only).
    pub resumable: bool,
}

/// The messages related to one request, ending with its response; the
/// channel closes after the response or when the stream is lost.
pub(crate) struct Exchange {
    /// Related messages, or a transport failure (bounded:
    /// [`crate::Limits::message_queue`]).
    pub rx: mpsc::Receiver<Result<Inbound>>,
    /// Cancels the request when dropped early.
    pub _guard: Box<dyn Send + Sync>,
}

/// A wire the client core can drive.
pub(crate) trait Transport: Send + Sync + 'static {
    /// Sends a request and returns the exchange for it.
    fn request(&self, out: Outbound) -> BoxFuture<'_, Result<Exchange>>;
    // LEGACY-10
    /// Sends a notification, or (handshake era) a response to a server
    /// request.
    fn send(&self, out: Outbound) -> BoxFuture<'_, Result<()>>;
    /// Messages not related to any request (stdio notifications and server
    /// requests, the handshake-era GET stream); taken once by the core.
    fn take_unsolicited(&self) -> Option<mpsc::Receiver<Inbound>>;
    /// The kind of wire.
    fn kind(&self) -> TransportKind;
    // CACHE-05
    /// A string naming the server (origin or command line), used to
    /// partition caches.
    fn identity(&self) -> String;
    // CACHE-08
    /// The private-cache partition the authorization hook derives from
    /// its current credentials; `None` without a hook.
    fn auth_partition(&self) -> Option<String> {
        None
    }
    // LEGACY-15
    /// Handshake era: the session is initialized; open what the transport
    /// opens then (the HTTP GET stream). The future ends once the server
    /// has answered that stream's request (or it failed).
    fn session_started(&self, _headers: Vec<(String, String)>) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    // LEGACY-13
    /// Handshake era: forget the session (before re-initializing).
    fn reset_session(&self) {}
    /// Shuts the transport down (DELETE the session, stop the child).
    fn close(&self) -> BoxFuture<'_, ()>;
    /// Like [`Transport::close`], but waiting at most `grace` at each step
    /// of stopping a child process (stdio) instead of the configured
    /// shutdown grace. Other transports close as usual.
    fn close_within(&self, _grace: std::time::Duration) -> BoxFuture<'_, ()> {
        self.close()
    }
}

/// Aborts a spawned task when dropped.
pub(crate) struct AbortOnDrop(pub tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
