//! Every limit the server enforces, with named defaults (set through
//! [`crate::ServerBuilder::limits`]). Nothing here is unbounded.

use std::time::Duration;

/// Limits applied by the core and the transports.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Limits {
    // HTTP-18
    /// Largest HTTP request body accepted; larger bodies get 413, enforced
    /// while streaming. Default 4 MiB.
    pub max_body_bytes: usize,
    /// Longest stdio line accepted; longer lines are discarded with a -32600
    /// error and reading resumes at the next newline. Default 4 MiB.
    pub max_line_bytes: usize,
    /// Requests processed concurrently per stdio connection; reading pauses
    /// while the cap is reached, so memory stays bounded however fast the
    /// client pipelines. Default 64.
    pub max_in_flight: usize,
    /// Requests processed concurrently across all HTTP connections; further
    /// requests wait for a slot. Default 1024.
    pub max_concurrent_requests: usize,
    /// A handler running longer than this is cancelled and the request
    /// answered with -32603. Default 5 minutes.
    pub handler_timeout: Duration,
    /// Time allowed to receive the whole request body (slowloris defence). Default 30 s.
    pub body_read_timeout: Duration,
    /// Time allowed to receive request headers. Default 10 s.
    pub header_read_timeout: Duration,
    /// Most header lines per request, HTTP/1 and HTTP/2 alike (more → 431).
    /// Default 100.
    pub max_headers: usize,
    /// HTTP/2: a connection with no request in flight (no open stream, no
    /// response still streaming) for this long is closed: a GOAWAY, then,
    /// if the peer has not closed it within the same time again, the
    /// socket. HTTP/1 keep-alive connections are bounded by
    /// [`Limits::header_read_timeout`] instead. Default 10 s.
    pub http2_idle_timeout: Duration,
    /// HTTP/2: send a PING this often and close the connection when one
    /// goes unanswered for [`Limits::http2_keep_alive_timeout`] (a dead
    /// peer holding streams open). `None` turns the PINGs off. Default 30 s.
    pub http2_keep_alive_interval: Option<Duration>,
    /// HTTP/2: how long a keep-alive PING may go unanswered. Default 20 s.
    pub http2_keep_alive_timeout: Duration,
    /// HTTP/2: the largest header list (HPACK-decoded names and values, 32
    /// bytes overhead each) a request may carry; advertised in SETTINGS,
    /// larger ones are refused. Default 16 KiB.
    pub http2_max_header_list_bytes: u32,
    /// HTTP/2: streams a client may have open at once on one connection
    /// (advertised in SETTINGS; more are refused). Default 200.
    pub http2_max_concurrent_streams: u32,
    /// Live handshake-era sessions; `initialize` beyond this gets 503. Default 10 000.
    pub max_sessions: usize,
    /// A session idle this long is freed. Default 30 minutes.
    pub session_idle_timeout: Duration,
    /// Concurrently open `subscriptions/listen` streams. Default 1 000.
    pub max_listen_streams: usize,
    // SUB-13
    /// Notifications buffered per listen stream before it is ended as
    /// overflowing. Default 256.
    pub listen_backlog: usize,
    // SSE-05
    /// SSE keep-alive comment interval. Default 15 s; zero sends none.
    pub sse_keepalive: Duration,
    /// A request whose handler has neither finished nor emitted a
    /// notification after this long is committed to SSE so keep-alives can
    /// flow and a disconnect is noticed. Default 10 s.
    pub sse_commit_after: Duration,
    /// Resource subscriptions one handshake-era session may hold; a
    /// `resources/subscribe` beyond it is refused with -32602 (shared
    /// sessions: checked by the store, atomically across replicas).
    /// Default 1 000.
    pub max_subscriptions_per_session: usize,
    /// Longest URI (bytes) a `resources/subscribe` may store; longer is
    /// refused with -32602. Default 2 KiB.
    pub max_subscription_uri_bytes: usize,
    /// Largest `capabilities` plus `clientInfo` (their JSON size, bytes) an
    /// `initialize` may store in its session for the session's lifetime;
    /// larger is refused with -32602. Default 64 KiB.
    pub max_client_metadata_bytes: usize,
    /// Events kept per handshake-era session for `Last-Event-ID` resumption. Default 256.
    pub session_event_buffer: usize,
    /// How long a server-to-client request (handshake era) waits for the
    /// client's answer. Default 5 minutes.
    pub client_request_timeout: Duration,
    // LEGACY-06
    /// Keep-alive: on a handshake-era stdio connection, send the
    /// client a `ping` this often. Off (`None`) by default.
    pub keep_alive_interval: Option<Duration>,
    /// How long a keep-alive `ping` may go unanswered before the connection
    /// is ended as dead. Default 10 s.
    pub keep_alive_timeout: Duration,
    // SUB-10
    /// Graceful drain (HTTP `serve*`): once the shutdown signal arrives, the
    /// listener is closed (new connections are refused, so a load balancer
    /// moves on at once), open listen streams end with their final result,
    /// and in-flight requests get this long to finish before the
    /// remaining connections are closed. Default 10 s.
    pub drain_timeout: Duration,
    /// The first part of the drain (within [`Limits::drain_timeout`]):
    /// connections with no request in flight stay open this long instead
    /// of closing at once, and every answer on them carries
    /// `connection: close`. A keep-alive peer such as a load balancer may
    /// already have sent a request on an idle connection when the drain
    /// begins; closing the connection under it loses that request (nginx
    /// answers 502 for a POST it may not retry). The grace ends early once
    /// every connection has closed. Default 1 s; zero closes idle
    /// connections at once.
    pub drain_grace: Duration,
}

impl Limits {
    /// Default body limit: 4 MiB.
    pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
    /// Default stdio line limit: 4 MiB.
    pub const DEFAULT_MAX_LINE_BYTES: usize = 4 * 1024 * 1024;
    /// Default stdio in-flight cap.
    pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;
    /// Default graceful-drain deadline: 10 s.
    pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default drain grace for idle connections: 1 s.
    pub const DEFAULT_DRAIN_GRACE: Duration = Duration::from_secs(1);
    /// Default HTTP/2 idle timeout: 10 s (as an idle HTTP/1 keep-alive
    /// connection waits for its next request head).
    pub const DEFAULT_HTTP2_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: Self::DEFAULT_MAX_BODY_BYTES,
            max_line_bytes: Self::DEFAULT_MAX_LINE_BYTES,
            max_in_flight: Self::DEFAULT_MAX_IN_FLIGHT,
            max_concurrent_requests: 1024,
            handler_timeout: Duration::from_secs(300),
            body_read_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(10),
            max_headers: 100,
            http2_idle_timeout: Self::DEFAULT_HTTP2_IDLE_TIMEOUT,
            http2_keep_alive_interval: Some(Duration::from_secs(30)),
            http2_keep_alive_timeout: Duration::from_secs(20),
            http2_max_header_list_bytes: 16 * 1024,
            http2_max_concurrent_streams: 200,
            max_sessions: 10_000,
            session_idle_timeout: Duration::from_secs(30 * 60),
            max_listen_streams: 1_000,
            listen_backlog: 256,
            sse_keepalive: Duration::from_secs(15),
            sse_commit_after: Duration::from_secs(10),
            max_subscriptions_per_session: 1_000,
            max_subscription_uri_bytes: 2 * 1024,
            max_client_metadata_bytes: 64 * 1024,
            session_event_buffer: 256,
            client_request_timeout: Duration::from_secs(300),
            keep_alive_interval: None,
            keep_alive_timeout: Duration::from_secs(10),
            drain_timeout: Self::DEFAULT_DRAIN_TIMEOUT,
            drain_grace: Self::DEFAULT_DRAIN_GRACE,
        }
    }
}
