//! Outbound HTTP for the verifiers: JWKS, authorization-server metadata and
//! token introspection. Pluggable, so an application (or the client crate)
//! can bring its own HTTPS stack, proxy settings or test double.

use crate::core::BoxFuture;
use crate::core::fetch::{self as core_fetch, ExchangeError, HTTPS_SUPPORTED, HyperClient};
use bytes::Bytes;
use http::{Request, Response};
use hyper_util::client::legacy::connect::dns::GaiResolver;
use std::time::Duration;

/// Why a fetch failed: a URL the fetcher may not fetch, an exchange that
/// failed, or one that did not finish in time. Ask with the `is_*`
/// methods; the message is for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchError {
    kind: FetchErrorKind,
    message: String,
}

/// The kinds of [`FetchError`]; private so kinds can be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FetchErrorKind {
    Url,
    Exchange,
    TimedOut,
}

impl FetchError {
    /// An exchange that failed (connect, send, read, a response over the
    /// fetcher's size limit): what an [`HttpFetch`] implementation returns
    /// when the request did not produce a response.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            kind: FetchErrorKind::Exchange,
            message: message.into(),
        }
    }

    /// An exchange that did not finish within the fetcher's time limit.
    pub fn timed_out() -> Self {
        Self {
            kind: FetchErrorKind::TimedOut,
            message: "timed out".into(),
        }
    }

    /// A URL the fetcher refuses (invalid, not HTTP(S), plain HTTP while
    /// refused, HTTPS without TLS support).
    pub fn refused_url(message: impl Into<String>) -> Self {
        Self {
            kind: FetchErrorKind::Url,
            message: message.into(),
        }
    }

    /// True when the fetcher refused the URL itself; nothing was sent.
    pub fn is_refused_url(&self) -> bool {
        self.kind == FetchErrorKind::Url
    }

    /// True when the exchange did not finish in time.
    pub fn is_timeout(&self) -> bool {
        self.kind == FetchErrorKind::TimedOut
    }

    /// True when the exchange failed otherwise (connect, send, read, size).
    pub fn is_exchange(&self) -> bool {
        self.kind == FetchErrorKind::Exchange
    }
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FetchError {}

// Foreign type: requests and responses in `http` types with `Bytes` bodies, like the rest of the
// HTTP stack (hyper, the MCP client transport), so any HTTP client can implement it.
/// Performs one HTTP request and returns the whole response.
///
/// Implementations must bound time and response size and must not follow
/// redirects to other hosts.
pub trait HttpFetch: Send + Sync + 'static {
    /// Sends `request` (absolute URI) and reads the response.
    fn fetch(&self, request: Request<Bytes>) -> BoxFuture<'_, Result<Response<Bytes>, FetchError>>;
}

// AUTH-28
/// The built-in fetcher: hyper's pooled HTTP/1.1 client.
///
/// HTTPS needs the crate feature `rustls` (ring, webpki roots). Plain
/// `http://` is refused unless [`HyperFetch::allow_plain_http`] is set:
/// authorization-server endpoints must use TLS; plain HTTP is for
/// tests and trusted local networks only.
#[derive(Clone)]
pub struct HyperFetch {
    client: HyperClient<GaiResolver>,
    timeout: Duration,
    max_response_bytes: usize,
    allow_http: bool,
}

impl std::fmt::Debug for HyperFetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperFetch")
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("allow_http", &self.allow_http)
            .finish_non_exhaustive()
    }
}

impl Default for HyperFetch {
    fn default() -> Self {
        Self::new()
    }
}

impl HyperFetch {
    /// Default time for one whole exchange: 10 s.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default response-body cap: 1 MiB.
    pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1024 * 1024;

    /// A fetcher with the default limits, HTTPS only.
    pub fn new() -> Self {
        let client = core_fetch::client(
            hyper_util::client::legacy::connect::HttpConnector::new(),
            Self::DEFAULT_TIMEOUT,
            Some(Duration::from_secs(60)),
        );
        Self {
            client,
            timeout: Self::DEFAULT_TIMEOUT,
            max_response_bytes: Self::DEFAULT_MAX_RESPONSE_BYTES,
            allow_http: false,
        }
    }

    /// Allows `http://` URLs (tests, loopback development). Off by default.
    pub fn allow_plain_http(mut self, allow: bool) -> Self {
        self.allow_http = allow;
        self
    }

    /// Time allowed for one whole exchange (connect, send, read).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Largest response body read; a larger one fails the fetch.
    pub fn max_response_bytes(mut self, max: usize) -> Self {
        self.max_response_bytes = max;
        self
    }

    /// Whether this fetcher may fetch `url` at all (scheme support and the
    /// plain-HTTP policy). Verifiers check their URLs with it when built.
    pub fn check_url(&self, url: &str) -> Result<(), FetchError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|_| FetchError::refused_url(format!("invalid URL {url:?}")))?;
        match uri.scheme_str() {
            Some("https") if HTTPS_SUPPORTED => Ok(()),
            Some("https") => Err(FetchError::refused_url(format!(
                "{url}: HTTPS needs the ferromcp-auth feature `rustls` or a custom HttpFetch"
            ))),
            Some("http") if self.allow_http => Ok(()),
            Some("http") => Err(FetchError::refused_url(format!(
                "{url}: plain HTTP is refused for authorization-server endpoints (AUTH-28); \
                 enable HyperFetch::allow_plain_http for tests"
            ))),
            _ => Err(FetchError::refused_url(format!(
                "{url}: not an http(s) URL"
            ))),
        }
    }
}

impl HttpFetch for HyperFetch {
    fn fetch(&self, request: Request<Bytes>) -> BoxFuture<'_, Result<Response<Bytes>, FetchError>> {
        Box::pin(async move {
            self.check_url(&request.uri().to_string())?;
            core_fetch::exchange(&self.client, request, self.max_response_bytes, self.timeout)
                .await
                .map_err(|e| match e {
                    ExchangeError::Request(e) => FetchError::new(format!("request failed: {e}")),
                    ExchangeError::Read(e) => {
                        FetchError::new(format!("reading the response failed: {e}"))
                    }
                    ExchangeError::TimedOut => FetchError::timed_out(),
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_plain_http_unless_allowed() {
        // AUTH-28: authorization-server endpoints over HTTPS.
        let f = HyperFetch::new();
        for url in ["http://127.0.0.1:1/jwks", "ftp://x/y", "not a url"] {
            let e = f.check_url(url).unwrap_err();
            assert!(
                e.is_refused_url() && !e.is_timeout() && !e.is_exchange(),
                "{e}"
            );
        }
        assert_eq!(
            f.check_url("https://as.example.com/jwks").is_ok(),
            cfg!(feature = "rustls")
        );
        let f = f.allow_plain_http(true);
        assert!(f.check_url("http://127.0.0.1:1/jwks").is_ok());
    }

    #[tokio::test]
    async fn a_refused_connection_is_an_exchange_error_and_a_silent_server_a_timeout() {
        let f = HyperFetch::new().allow_plain_http(true);
        // A port nothing listens on.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let req = |port: u16| {
            Request::get(format!("http://127.0.0.1:{port}/jwks"))
                .body(Bytes::new())
                .unwrap()
        };
        let e = f.fetch(req(port)).await.unwrap_err();
        assert!(
            e.is_exchange() && !e.is_timeout() && !e.is_refused_url(),
            "{e}"
        );
        // A server that accepts and never answers.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = silent.local_addr().unwrap().port();
        let f = f.timeout(Duration::from_millis(200));
        let e = f.fetch(req(port)).await.unwrap_err();
        assert!(e.is_timeout() && !e.is_exchange(), "{e}");
        drop(silent);
    }
}
