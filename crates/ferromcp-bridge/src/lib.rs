//! # ferromcp-bridge
//!
//! The translation core of `mcp bridge`: a newline-delimited JSON-RPC peer
//! (a Model Context Protocol host, over stdio in the `mcp` binary) on one
//! side, a Streamable HTTP server on the other.
//!
//! - Request ids are remapped in both directions ([`IdMap`]): the host's
//!   requests get the bridge's ids towards the remote, the remote's
//!   requests get the bridge's ids towards the host, and every answer gets
//!   its original id back. `notifications/cancelled` is remapped too.
//! - Messages are classified by reading only `id`, `method` and, for
//!   `tools/call`, the tool name ([`classify`]); everything else crosses
//!   byte for byte, so unknown methods, extension methods and new fields
//!   need no bridge release.
//! - A [`ToolFilter`] removes tools from `tools/list` answers and refuses
//!   calls to them locally, before anything reaches the remote.
//! - Towards the remote, each message is a POST with the headers its era
//!   needs: 2026-07-28 requests carry `MCP-Protocol-Version`, `Mcp-Method`,
//!   `Mcp-Name` and the `Mcp-Param-*` headers the tool's `x-mcp-header`
//!   annotations ask for (from the protocol crate's one header codec); a
//!   handshake-era session keeps `Mcp-Session-Id`, sends the negotiated
//!   `MCP-Protocol-Version`, listens on the GET stream and is DELETEd at
//!   the end.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ferromcp_bridge::Error> {
//! use ferromcp_bridge::{Bridge, Glob, ToolFilter};
//! let filter = ToolFilter::new().deny(Glob::new("debug_*").map_err(ferromcp_bridge::Error::config)?);
//! Bridge::new("https://example.com/mcp")?
//!     .header("Authorization", "Bearer …")?
//!     .filter(filter)
//!     .run(tokio::io::stdin(), tokio::io::stdout())
//!     .await
//! # }
//! ```

mod env;
pub mod expose;
mod filter;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod ids;
mod message;
mod relay;
mod session_setup;
mod upstream;

pub use env::expand_env;
pub use filter::{Glob, ToolFilter};
pub use ids::{IdMap, MapError};
pub use message::{Classified, Invalid, Kind, classify};

use http::header::{HeaderName, HeaderValue};
use std::fmt;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// The bridge's limits; every one can be changed.
#[derive(Debug, Clone)]
pub struct Limits {
    max_in_flight: usize,
    max_server_requests: usize,
    max_message: usize,
    timeout: Duration,
    max_tools: usize,
    max_listen_retries: u32,
    max_auth_retries: u32,
    max_input_waits: usize,
    input_wait: Duration,
    max_resource_subscriptions: usize,
    retries: u32,
    retry_max_wait: Duration,
    stream_open_wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_in_flight: Self::DEFAULT_MAX_IN_FLIGHT,
            max_server_requests: Self::DEFAULT_MAX_SERVER_REQUESTS,
            max_message: Self::DEFAULT_MAX_MESSAGE,
            timeout: Self::DEFAULT_TIMEOUT,
            max_tools: Self::DEFAULT_MAX_TOOLS,
            max_listen_retries: Self::DEFAULT_MAX_LISTEN_RETRIES,
            max_auth_retries: Self::DEFAULT_MAX_AUTH_RETRIES,
            max_input_waits: Self::DEFAULT_MAX_INPUT_WAITS,
            input_wait: Self::DEFAULT_INPUT_WAIT,
            max_resource_subscriptions: Self::DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS,
            retries: Self::DEFAULT_RETRIES,
            retry_max_wait: Self::DEFAULT_RETRY_MAX_WAIT,
            stream_open_wait: Self::DEFAULT_STREAM_OPEN_WAIT,
        }
    }
}

impl Limits {
    /// Default for [`Limits::max_in_flight`].
    pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;
    /// Default for [`Limits::max_server_requests`].
    pub const DEFAULT_MAX_SERVER_REQUESTS: usize = 256;
    /// Default for [`Limits::max_message`] (16 MiB).
    pub const DEFAULT_MAX_MESSAGE: usize = 16 << 20;
    /// Default for [`Limits::timeout`].
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
    /// Default for [`Limits::max_tools`].
    pub const DEFAULT_MAX_TOOLS: usize = 10_000;
    /// Default for [`Limits::max_listen_retries`].
    pub const DEFAULT_MAX_LISTEN_RETRIES: u32 = 5;
    /// Default for [`Limits::max_auth_retries`].
    pub const DEFAULT_MAX_AUTH_RETRIES: u32 = 2;
    /// Default for [`Limits::max_input_waits`].
    pub const DEFAULT_MAX_INPUT_WAITS: usize = 64;
    /// Default for [`Limits::input_wait`].
    pub const DEFAULT_INPUT_WAIT: Duration = Duration::from_secs(600);
    /// Default for [`Limits::max_resource_subscriptions`].
    pub const DEFAULT_MAX_RESOURCE_SUBSCRIPTIONS: usize = 1024;
    /// Default for [`Limits::retries`].
    pub const DEFAULT_RETRIES: u32 = 2;
    /// Default for [`Limits::retry_max_wait`].
    pub const DEFAULT_RETRY_MAX_WAIT: Duration = Duration::from_secs(10);
    /// Default for [`Limits::stream_open_wait`].
    pub const DEFAULT_STREAM_OPEN_WAIT: Duration = Duration::from_secs(5);

    /// The host's requests waiting for the remote's answer at once; more
    /// are refused with a JSON-RPC error.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// The remote's requests (elicitation, sampling, roots) waiting for
    /// the host's answer at once; more are answered with an error.
    pub fn max_server_requests(mut self, n: usize) -> Self {
        self.max_server_requests = n.max(1);
        self
    }

    /// The largest message in either direction, in bytes. With
    /// `--expose` it also bounds what waits for the child's stdin while
    /// the child is not reading (twice this; a call beyond it is refused).
    pub fn max_message(mut self, n: usize) -> Self {
        self.max_message = n.max(1024);
        self
    }

    /// How long the bridge waits for the remote on an exchange
    /// (connecting, the answer's headers, each chunk of a JSON answer, the
    /// next message of an SSE answer); any progress notification or other
    /// message restarts it, keep-alive comments do not. The host gets an
    /// error answer when it runs out.
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d.max(Duration::from_millis(1));
        self
    }

    /// Tools whose `x-mcp-header` annotations are remembered (to send
    /// `Mcp-Param-*` headers).
    pub fn max_tools(mut self, n: usize) -> Self {
        self.max_tools = n;
        self
    }

    /// How many times in a row the handshake-era GET stream is reopened
    /// after failing before the bridge stops listening.
    pub fn max_listen_retries(mut self, n: u32) -> Self {
        self.max_listen_retries = n;
        self
    }

    /// How many times one HTTP request is sent again after the credentials
    /// hook ([`Bridge::auth`]) renewed the credentials on a 401 or 403
    /// (the first 401 of a run, which leads to the stored token, is one).
    pub fn max_auth_retries(mut self, n: u32) -> Self {
        self.max_auth_retries = n;
        self
    }

    /// A 2026-07-28 host in front of a handshake-era remote: how many of
    /// its calls may wait at once for the host's answer to an
    /// `input_required` round (each holds the remote's pushed request and
    /// its answer stream open); beyond it a pushed request is refused.
    pub fn max_input_waits(mut self, n: usize) -> Self {
        self.max_input_waits = n.max(1);
        self
    }

    /// How many times a request that is safe to repeat is sent again when
    /// the remote could not be reached or answered HTTP 429, 502, 503 or
    /// 504 (`0`: never). Safe to repeat: `server/discover`, the lists,
    /// `resources/read`, `prompts/get`, `completion/complete`, and
    /// `tools/call` of a tool whose `tools/list` annotations say
    /// `readOnlyHint` or `idempotentHint`. The same methods except
    /// `tools/call` are also sent again, within the same count, when no
    /// answer came within [`Limits::timeout`] (the remote may still be
    /// running a tool call, so that one never is). Never after a JSON-RPC
    /// error, another HTTP error, or once any of the answer was relayed.
    pub fn retries(mut self, n: u32) -> Self {
        self.retries = n;
        self
    }

    /// The longest wait before sending a request again: the bound of the
    /// backoff, and a remote whose `Retry-After` (seconds or an HTTP date)
    /// asks for longer is not retried (its answer stands).
    pub fn retry_max_wait(mut self, d: Duration) -> Self {
        self.retry_max_wait = d;
        self
    }

    /// A handshake host in front of a 2026-07-28 remote: how many
    /// resources it may be subscribed to at once (the bridge's
    /// `subscriptions/listen` carries them all); more are refused. In
    /// front of a handshake remote: how many of the host's subscriptions
    /// are remembered to be sent again in a renewed session.
    pub fn max_resource_subscriptions(mut self, n: usize) -> Self {
        self.max_resource_subscriptions = n.max(1);
        self
    }

    /// How long such a call waits for the host's retry; then it is
    /// cancelled at the remote and its `requestState` no longer accepted.
    pub fn input_wait(mut self, d: Duration) -> Self {
        self.input_wait = d.max(Duration::from_millis(1));
        self
    }

    /// A handshake host: how long the host's messages after
    /// `notifications/initialized` wait for the remote to answer the GET
    /// stream the bridge opens then (`0`: they do not wait). A remote that
    /// pushes a request on that stream right away and drops it when no
    /// stream is open yet loses nothing; after the wait the messages go
    /// on whatever the stream's state.
    pub fn stream_open_wait(mut self, d: Duration) -> Self {
        self.stream_open_wait = d;
        self
    }
}

/// What went wrong starting or running a bridge.
#[derive(Debug)]
pub struct Error {
    message: String,
}

impl Error {
    /// A configuration error (bad URL, header, pattern).
    pub fn config(message: impl fmt::Display) -> Self {
        Self {
            message: message.to_string(),
        }
    }

    /// The message, one sentence.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Header names the bridge sets itself or that belong to the connection;
/// `--header` cannot override them.
const RESERVED_HEADERS: [&str; 9] = [
    "host",
    "content-type",
    "content-length",
    "accept",
    "transfer-encoding",
    "connection",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
];

/// A bridge to one remote Streamable HTTP endpoint.
pub struct Bridge {
    url: http::Uri,
    headers: Vec<(HeaderName, HeaderValue)>,
    filter: ToolFilter,
    limits: Limits,
    auth: Option<std::sync::Arc<dyn ferromcp_client::HttpAuth>>,
}

impl fmt::Debug for Bridge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bridge")
            .field("url", &self.url)
            .field("headers", &self.headers)
            .field("filter", &self.filter)
            .field("limits", &self.limits)
            .field("auth", &self.auth.is_some())
            .finish()
    }
}

impl Bridge {
    /// A bridge to the `http` or `https` URL.
    pub fn new(url: &str) -> Result<Self, Error> {
        Ok(Self {
            url: upstream::parse_url(url).map_err(Error::config)?,
            headers: Vec::new(),
            filter: ToolFilter::new(),
            limits: Limits::default(),
            auth: None,
        })
    }

    /// Adds a header sent on every request to the remote. The bridge's own
    /// headers (`Mcp-*`, `Accept`, `Content-Type`, `Host`, …) cannot be
    /// set this way. Errors never repeat the value.
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        let n = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| Error::config(format!("{name:?} is not a valid header name")))?;
        if RESERVED_HEADERS.contains(&n.as_str()) || n.as_str().starts_with("mcp-") {
            return Err(Error::config(format!(
                "header {name} is set by the bridge itself and cannot be given"
            )));
        }
        let mut v = HeaderValue::from_str(value.trim()).map_err(|_| {
            Error::config(format!(
                "the value of header {name} is not a valid header value"
            ))
        })?;
        v.set_sensitive(true);
        self.headers.push((n, v));
        Ok(self)
    }

    /// Sets the tool filter.
    pub fn filter(mut self, filter: ToolFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Where credentials towards the remote come from (for instance
    /// `ferromcp_auth::client::OAuthClient` over the tokens `mcp login`
    /// stored): its headers go on every HTTP request, and a 401 or 403
    /// answer lets it renew them before the request is sent again. When
    /// it cannot, the host's request gets a JSON-RPC error carrying its
    /// message. Ignored when an `Authorization` header was given with
    /// [`Bridge::header`]: a configured credential is the only one sent.
    pub fn auth(mut self, auth: std::sync::Arc<dyn ferromcp_client::HttpAuth>) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Relays between the host (`reader`/`writer`, newline-delimited
    /// JSON-RPC) and the remote until the host closes its side and every
    /// request it sent has been answered (or failed).
    pub async fn run<R, W>(self, reader: R, writer: W) -> Result<(), Error>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let up = upstream::Upstream::new(self.url, self.headers, self.auth, self.limits.clone())
            .map_err(Error::config)?;
        relay::run(up, self.filter, self.limits, reader, writer).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_never_show_credentials_from_the_url() {
        let (w, _r) = tokio::io::duplex(64);
        let (host_in, mut feed) = tokio::io::duplex(4096);
        let (out_w, mut out_r) = tokio::io::duplex(4096);
        drop(w);
        let bridge =
            Bridge::new("http://user:s3cret@127.0.0.1:1/mcp").unwrap_or_else(|e| panic!("{e}"));
        let run = tokio::spawn(bridge.run(host_in, out_w));
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let msg = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}"#;
        feed.write_all(msg).await.unwrap_or_else(|e| panic!("{e}"));
        feed.write_all(b"\n")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        drop(feed);
        let mut out = String::new();
        out_r
            .read_to_string(&mut out)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let _ = run.await;
        assert!(out.contains(r#""id":1"#) && out.contains("error"), "{out}");
        assert!(out.contains("127.0.0.1:1/mcp"), "{out}");
        assert!(!out.contains("s3cret") && !out.contains("user"), "{out}");
    }

    #[test]
    fn urls_and_headers_are_checked() {
        assert!(Bridge::new("ftp://x/mcp").is_err());
        assert!(Bridge::new("not a url").is_err());
        let b = Bridge::new("http://127.0.0.1:1/mcp").unwrap_or_else(|e| panic!("{e}"));
        let b = b.header("X-Api-Key", "k").unwrap_or_else(|e| panic!("{e}"));
        assert!(b.header("Mcp-Session-Id", "s").is_err());
        let b = Bridge::new("http://127.0.0.1:1/mcp").unwrap_or_else(|e| panic!("{e}"));
        assert!(b.header("Mcp-Param-X", "s").is_err());
        let b = Bridge::new("http://127.0.0.1:1/mcp").unwrap_or_else(|e| panic!("{e}"));
        let e = b.header("Authorization", "Bearer se\ncret").err();
        let msg = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.contains("Authorization") && !msg.contains("cret"),
            "{msg}"
        );
    }
}
