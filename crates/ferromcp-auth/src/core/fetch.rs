//! The bounded HTTP exchange both halves fetch documents with: hyper's
//! HTTP/1.1 client (HTTPS through rustls with the `rustls` feature), one
//! request, the response body read up to a size cap, the whole exchange
//! under a time limit, redirects never followed.
//!
//! The policies around it stay with each half: `resource::HyperFetch`
//! refuses plain HTTP unless allowed; `client::HttpClient`
//! applies its `NetPolicy` to every URL and resolved address.
// AUTH-28

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use std::time::Duration;

/// The connector over an `HttpConnector` with resolver `R`: TLS-capable
/// with the `rustls` feature, plain TCP without.
#[cfg(feature = "rustls")]
pub(crate) type Connector<R> = hyper_rustls::HttpsConnector<HttpConnector<R>>;
/// The connector over an `HttpConnector` with resolver `R`: TLS-capable
/// with the `rustls` feature, plain TCP without.
#[cfg(not(feature = "rustls"))]
pub(crate) type Connector<R> = HttpConnector<R>;

/// A pooled client whose requests carry whole bodies.
pub(crate) type HyperClient<R> = Client<Connector<R>, Full<Bytes>>;

/// Whether `https://` URLs can be fetched (the `rustls` feature).
pub(crate) const HTTPS_SUPPORTED: bool = cfg!(feature = "rustls");

/// A client over `http` (whose resolver decides which addresses are
/// reachable): connect timeout `timeout`, `TCP_NODELAY`, webpki roots
/// for HTTPS, and idle pooled connections closed after `pool_idle` when
/// given (hyper's default otherwise).
pub(crate) fn client<R>(
    mut http: HttpConnector<R>,
    timeout: Duration,
    pool_idle: Option<Duration>,
) -> HyperClient<R>
where
    Connector<R>: Connect + Clone,
{
    http.set_connect_timeout(Some(timeout));
    http.set_nodelay(true);
    #[cfg(feature = "rustls")]
    let connector = {
        http.enforce_http(false);
        hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .wrap_connector(http)
    };
    #[cfg(not(feature = "rustls"))]
    let connector = http;
    let mut builder =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new());
    if let Some(idle) = pool_idle {
        builder
            .pool_timer(hyper_util::rt::TokioTimer::new())
            .pool_idle_timeout(idle);
    }
    builder.build(connector)
}

/// Why [`exchange`] failed.
#[derive(Debug)]
pub(crate) enum ExchangeError {
    /// Connecting or sending failed, or no response head arrived.
    Request(hyper_util::client::legacy::Error),
    /// Reading the body failed, or it exceeded the size cap.
    Read(Box<dyn std::error::Error + Send + Sync>),
    /// The whole exchange took longer than allowed.
    TimedOut,
}

/// Sends `request` (absolute URI) and reads the whole response, at most
/// `max_body` bytes of body, everything within `timeout`.
pub(crate) async fn exchange<C>(
    client: &Client<C, Full<Bytes>>,
    request: Request<Bytes>,
    max_body: usize,
    timeout: Duration,
) -> Result<Response<Bytes>, ExchangeError>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    let (parts, body) = request.into_parts();
    let req = Request::from_parts(parts, Full::new(body));
    let exchange = async {
        let resp = client.request(req).await.map_err(ExchangeError::Request)?;
        let (parts, body) = resp.into_parts();
        let bytes = http_body_util::Limited::new(body, max_body)
            .collect()
            .await
            .map_err(ExchangeError::Read)?
            .to_bytes();
        Ok(Response::from_parts(parts, bytes))
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or(Err(ExchangeError::TimedOut))
}

/// `GET url` asking for JSON (`Accept: application/json`), plus `headers`.
pub(crate) fn json_get(url: &str, headers: &[(&str, &str)]) -> http::Result<Request<Bytes>> {
    let mut b = Request::get(url).header(http::header::ACCEPT, "application/json");
    for (n, v) in headers {
        b = b.header(*n, *v);
    }
    b.body(Bytes::new())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-shot HTTP/1.1 server answering `head` then `body`, after
    /// `delay`. Returns its base URL.
    async fn serve_once(body: Vec<u8>, delay: Duration) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            tokio::time::sleep(delay).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(&body).await;
        });
        format!("http://{addr}")
    }

    fn plain() -> HyperClient<hyper_util::client::legacy::connect::dns::GaiResolver> {
        client(HttpConnector::new(), Duration::from_secs(5), None)
    }

    #[tokio::test]
    async fn reads_a_whole_body_within_the_caps() {
        let url = serve_once(br#"{"ok":true}"#.to_vec(), Duration::ZERO).await;
        let req = json_get(&format!("{url}/doc"), &[("x-test", "1")]).unwrap();
        assert_eq!(req.headers()[http::header::ACCEPT], "application/json");
        assert_eq!(req.headers()["x-test"], "1");
        let resp = exchange(&plain(), req, 64, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(resp.status(), http::StatusCode::OK);
        assert_eq!(resp.body().as_ref(), br#"{"ok":true}"#);
    }

    #[tokio::test]
    async fn a_larger_body_fails() {
        let url = serve_once(vec![b'x'; 65], Duration::ZERO).await;
        let req = json_get(&url, &[]).unwrap();
        let r = exchange(&plain(), req, 64, Duration::from_secs(5)).await;
        assert!(matches!(r, Err(ExchangeError::Read(_))), "{r:?}");
    }

    #[tokio::test]
    async fn a_slow_answer_times_out() {
        let url = serve_once(b"{}".to_vec(), Duration::from_secs(5)).await;
        let req = json_get(&url, &[]).unwrap();
        let r = exchange(&plain(), req, 64, Duration::from_millis(100)).await;
        assert!(matches!(r, Err(ExchangeError::TimedOut)), "{r:?}");
    }

    #[test]
    fn json_get_refuses_bad_input() {
        assert!(json_get("http://x/a b", &[]).is_err());
        assert!(json_get("http://x/", &[("bad name", "v")]).is_err());
        assert!(json_get("http://x/", &[("x", "bad\nvalue")]).is_err());
    }
}
