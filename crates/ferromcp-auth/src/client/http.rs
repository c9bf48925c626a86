//! The client flow's HTTP helper: one bounded exchange, never following
//! redirects, every URL checked by the [`NetPolicy`] (and every resolved
//! address by the [`GuardedResolver`]).
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use super::error::OAuthError;
use super::form;
use super::net::{GuardedResolver, NetPolicy};
use crate::core::fetch::{self as core_fetch, ExchangeError, HTTPS_SUPPORTED, HyperClient};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use std::time::Duration;

/// Default time for one whole exchange (connect, send, read): 10 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default response-body cap: 256 KiB (metadata and token responses are small).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 256 * 1024;

/// A complete HTTP response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    // Foreign type: the OAuth HTTP plumbing speaks `http` types, like the rest of the HTTP stack
    // (hyper, the MCP client transport).
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body (at most the configured cap).
    pub body: Bytes,
}

impl HttpResponse {
    /// A header value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Parses the body as JSON into `T`.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, OAuthError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| OAuthError::discovery(format!("malformed JSON response: {e}")))
    }
}

/// Outbound HTTP for the client flow.
///
/// Limits are explicit: [`HttpClient::timeout`] and
/// [`HttpClient::max_response_bytes`]; the [`NetPolicy`] decides which
/// destinations are reachable. Redirects are returned as they are, never
/// followed.
#[derive(Clone)]
pub struct HttpClient {
    client: HyperClient<GuardedResolver>,
    policy: NetPolicy,
    timeout: Duration,
    max_response_bytes: usize,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("policy", &self.policy)
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client enforcing `policy`, with the default limits.
    pub fn new(policy: NetPolicy) -> Self {
        let client = core_fetch::client(
            HttpConnector::new_with_resolver(GuardedResolver::new(policy)),
            DEFAULT_TIMEOUT,
            None,
        );
        Self {
            client,
            policy,
            timeout: DEFAULT_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// Time allowed for one whole exchange (default [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Largest response body read (default [`DEFAULT_MAX_RESPONSE_BYTES`]);
    /// a larger one fails the exchange.
    pub fn max_response_bytes(mut self, max: usize) -> Self {
        self.max_response_bytes = max;
        self
    }

    /// The network policy.
    pub fn policy(&self) -> NetPolicy {
        self.policy
    }

    // Foreign type: the OAuth HTTP plumbing speaks `http` types, like the rest of the HTTP stack
    // (hyper, the MCP client transport).
    /// Sends `request` (absolute URL) and reads the whole response.
    pub async fn send(&self, request: Request<Bytes>) -> Result<HttpResponse, OAuthError> {
        let url = request.uri().to_string();
        self.policy.check_url(&url)?;
        if !HTTPS_SUPPORTED && request.uri().scheme_str() == Some("https") {
            return Err(OAuthError::policy(format!(
                "{url}: https needs the ferromcp-auth feature `rustls`"
            )));
        }
        let resp =
            core_fetch::exchange(&self.client, request, self.max_response_bytes, self.timeout)
                .await
                .map_err(|e| {
                    OAuthError::network(match e {
                        ExchangeError::Request(e) => format!("{url}: request failed: {e}"),
                        ExchangeError::Read(e) => format!("{url}: reading the response: {e}"),
                        ExchangeError::TimedOut => {
                            format!("{url}: no complete answer within {:?}", self.timeout)
                        }
                    })
                })?;
        let (parts, body) = resp.into_parts();
        Ok(HttpResponse {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    /// `GET url` with `Accept: application/json`.
    pub async fn get(&self, url: &str) -> Result<HttpResponse, OAuthError> {
        self.get_with_headers(url, &[]).await
    }

    // LEGACY-26
    /// `GET url` with `Accept: application/json` and extra `headers`
    /// (e.g. `MCP-Protocol-Version` during discovery).
    pub async fn get_with_headers(
        &self,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<HttpResponse, OAuthError> {
        let req = core_fetch::json_get(url, headers)
            .map_err(|e| OAuthError::policy(format!("{url}: {e}")))?;
        self.send(req).await
    }

    /// `POST url` with a JSON body.
    pub async fn post_json(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<HttpResponse, OAuthError> {
        let req = Request::builder()
            .method(Method::POST)
            .uri(url)
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Bytes::from(serde_json::to_vec(body).unwrap_or_default()))
            .map_err(|e| OAuthError::policy(format!("{url}: {e}")))?;
        self.send(req).await
    }

    /// `POST url` with an `application/x-www-form-urlencoded` body and
    /// extra headers (client authentication, proofs).
    pub async fn post_form(
        &self,
        url: &str,
        params: &[(String, String)],
        headers: &[(String, String)],
    ) -> Result<HttpResponse, OAuthError> {
        let mut b = Request::builder()
            .method(Method::POST)
            .uri(url)
            .header(http::header::ACCEPT, "application/json")
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            );
        for (n, v) in headers {
            b = b.header(n.as_str(), v.as_str());
        }
        let req = b
            .body(Bytes::from(form::encode(params)))
            .map_err(|e| OAuthError::policy(format!("{url}: {e}")))?;
        self.send(req).await
    }
}
