//! Outbound HTTP for the verifiers: JWKS, authorization-server metadata and
//! token introspection. Pluggable, so an application (or the client crate)
//! can bring its own HTTPS stack, proxy settings or test double.

use crate::core::BoxFuture;
use crate::core::fetch::{self as core_fetch, ExchangeError, HTTPS_SUPPORTED, HyperClient};
use bytes::Bytes;
use http::{Request, Response};
use hyper_util::client::legacy::connect::dns::GaiResolver;
use std::time::Duration;

/// Why a fetch failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchError(pub String);

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
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
            .map_err(|_| FetchError(format!("invalid URL {url:?}")))?;
        match uri.scheme_str() {
            Some("https") if HTTPS_SUPPORTED => Ok(()),
            Some("https") => Err(FetchError(format!(
                "{url}: HTTPS needs the ferromcp-auth feature `rustls` or a custom HttpFetch"
            ))),
            Some("http") if self.allow_http => Ok(()),
            Some("http") => Err(FetchError(format!(
                "{url}: plain HTTP is refused for authorization-server endpoints (AUTH-28); \
                 enable HyperFetch::allow_plain_http for tests"
            ))),
            _ => Err(FetchError(format!("{url}: not an http(s) URL"))),
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
                    ExchangeError::Request(e) => FetchError(format!("request failed: {e}")),
                    ExchangeError::Read(e) => {
                        FetchError(format!("reading the response failed: {e}"))
                    }
                    ExchangeError::TimedOut => FetchError("timed out".into()),
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
        assert!(f.check_url("http://127.0.0.1:1/jwks").is_err());
        assert!(f.check_url("ftp://x/y").is_err());
        assert!(f.check_url("not a url").is_err());
        assert_eq!(
            f.check_url("https://as.example.com/jwks").is_ok(),
            cfg!(feature = "rustls")
        );
        let f = f.allow_plain_http(true);
        assert!(f.check_url("http://127.0.0.1:1/jwks").is_ok());
    }
}
