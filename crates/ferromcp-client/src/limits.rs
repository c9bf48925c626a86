//! Every limit the client enforces, with its named default. All of them are
//! set through [`crate::ClientBuilder`].

use std::time::Duration;

// CANCEL-08
/// Default per-request timeout.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
// CANCEL-08
/// Default hard maximum for one request, even when progress resets the
/// timeout.
pub const DEFAULT_MAX_TOTAL_TIMEOUT: Duration = Duration::from_secs(600);
// MRTR-13
/// Default MRTR round limit (Python's default).
pub const DEFAULT_MAX_MRTR_ROUNDS: u32 = 10;
/// Default largest SSE event (bytes of `data`) accepted.
pub const DEFAULT_MAX_SSE_EVENT_BYTES: usize = 16 * 1024 * 1024;
// LEGACY-17
/// Default cap on a server's SSE `retry` value.
pub const DEFAULT_SSE_RETRY_CAP: Duration = Duration::from_secs(30);
/// Default reconnection delay when the server sent no `retry`.
pub const DEFAULT_SSE_RETRY: Duration = Duration::from_secs(1);
/// Default number of `Last-Event-ID` resumptions for one stream.
pub const DEFAULT_MAX_SSE_RESUMES: u32 = 5;
/// Default largest JSON response body accepted.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
// CACHE-12
/// Default cap on a cache entry's TTL (Python's 24 h clamp).
pub const DEFAULT_MAX_CACHE_TTL: Duration = Duration::from_secs(24 * 60 * 60);
// STDIO-08
/// Default time a stdio child gets to exit after its stdin closes, and again
/// after SIGTERM, before it is killed.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// How long a keep-alive `ping` may go unanswered before the connection is
/// taken for dead (when keep-alive is on; see
/// [`crate::ClientBuilder::keep_alive`]).
pub const DEFAULT_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);
// LEGACY-15
/// Default time `connect` waits, in the handshake era over HTTP, for the
/// server to answer the standalone GET stream.
pub const DEFAULT_STREAM_OPEN_WAIT: Duration = Duration::from_secs(5);
// ERA-06
/// Default time to wait for a `server/discover` answer on stdio before
/// falling back to `initialize`.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default largest stdio line (one JSON-RPC message) accepted.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
// LEGACY-18
/// Default number of server→client requests (handshake-era `ping`,
/// `sampling/createMessage`, `elicitation/create`, `roots/list`) handled at
/// once; more arriving meanwhile are dropped.
pub const DEFAULT_MAX_CONCURRENT_SERVER_REQUESTS: usize = 16;
// LEGACY-17
/// Default shortest delay before reconnecting an SSE stream, whatever
/// `retry` the server sent: `retry: 0` must not make a busy loop.
pub const DEFAULT_SSE_MIN_RETRY: Duration = Duration::from_millis(100);
/// Default number of messages queued for a stdio server's stdin; a server
/// that stops reading makes writers wait (and time out) instead of growing
/// the queue.
pub const DEFAULT_STDIO_WRITE_QUEUE: usize = 256;
/// Default number of messages queued between a transport and the client
/// core, per request, per subscription and for unsolicited messages: a
/// server sending faster than the client handles is slowed down
/// (backpressure on its connection or pipe) instead of growing memory.
pub const DEFAULT_MESSAGE_QUEUE: usize = 256;
// PAGE-04
/// Default number of pages followed when listing everything.
pub const DEFAULT_MAX_LIST_PAGES: usize = 1000;
/// Default number of times one HTTP request is re-sent after the
/// authorization hook renewed credentials on a 401/403.
pub const DEFAULT_MAX_AUTH_RETRIES: u32 = 3;

/// The client's limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Per-request timeout; progress may reset it (see `reset_on_progress`).
    pub request_timeout: Duration,
    /// Hard maximum for one request, resets included.
    pub max_total_timeout: Duration,
    /// Whether a progress notification restarts the request timeout.
    pub reset_timeout_on_progress: bool,
    /// MRTR round limit.
    pub max_mrtr_rounds: u32,
    /// Largest SSE event accepted.
    pub max_sse_event_bytes: usize,
    /// Cap on the server's SSE `retry` hint.
    pub sse_retry_cap: Duration,
    /// Reconnection delay when the server sent no `retry`.
    pub sse_default_retry: Duration,
    /// Floor on every SSE reconnection delay.
    pub sse_min_retry: Duration,
    /// Resumptions of one SSE stream with `Last-Event-ID`.
    pub max_sse_resumes: u32,
    /// Largest JSON response body.
    pub max_response_bytes: usize,
    /// Cap on cached TTLs.
    pub max_cache_ttl: Duration,
    /// Grace period for stdio shutdown steps.
    pub shutdown_grace: Duration,
    /// How long to wait for the `server/discover` probe.
    pub probe_timeout: Duration,
    /// Handshake era over HTTP: how long `connect` waits for the server to
    /// answer the standalone GET stream before it returns, so that a
    /// request the server pushes right after initialization has a stream
    /// to arrive on (servers drop such a message when no stream is open).
    pub stream_open_wait: Duration,
    /// Largest stdio line.
    pub max_line_bytes: usize,
    /// Pages followed by the `list_*` calls that collect everything.
    pub max_list_pages: usize,
    /// Re-sends of one HTTP request after the [`crate::HttpAuth`] hook
    /// renewed credentials (bounded retries on 401/403).
    pub max_auth_retries: u32,
    /// Server→client requests handled at once.
    pub max_concurrent_server_requests: usize,
    /// Messages queued for a stdio server's stdin.
    pub stdio_write_queue: usize,
    /// Messages queued from a transport to the client core, per stream.
    pub message_queue: usize,
    /// Send a keep-alive `ping` this often (handshake era; off when `None`,
    /// the default).
    pub keep_alive_interval: Option<Duration>,
    /// How long a keep-alive `ping` may go unanswered before the
    /// connection is closed as dead.
    pub keep_alive_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_total_timeout: DEFAULT_MAX_TOTAL_TIMEOUT,
            reset_timeout_on_progress: true,
            max_mrtr_rounds: DEFAULT_MAX_MRTR_ROUNDS,
            max_sse_event_bytes: DEFAULT_MAX_SSE_EVENT_BYTES,
            sse_retry_cap: DEFAULT_SSE_RETRY_CAP,
            sse_default_retry: DEFAULT_SSE_RETRY,
            sse_min_retry: DEFAULT_SSE_MIN_RETRY,
            max_sse_resumes: DEFAULT_MAX_SSE_RESUMES,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_cache_ttl: DEFAULT_MAX_CACHE_TTL,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            stream_open_wait: DEFAULT_STREAM_OPEN_WAIT,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_list_pages: DEFAULT_MAX_LIST_PAGES,
            max_auth_retries: DEFAULT_MAX_AUTH_RETRIES,
            max_concurrent_server_requests: DEFAULT_MAX_CONCURRENT_SERVER_REQUESTS,
            stdio_write_queue: DEFAULT_STDIO_WRITE_QUEUE,
            message_queue: DEFAULT_MESSAGE_QUEUE,
            keep_alive_interval: None,
            keep_alive_timeout: DEFAULT_KEEP_ALIVE_TIMEOUT,
        }
    }
}
