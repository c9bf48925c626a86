//! The user-agent step of the authorization-code flow, and the checks on
//! what comes back (`state`; RFC 9207 `iss`).
//!
//! An [`AuthorizationHandler`] starts a [`AuthorizationSession`] (which
//! fixes the `redirect_uri`, e.g. by binding a loopback port), then is
//! given the authorization URL and returns the redirect it received.
//! Two implementations:
//!
//! - [`HeadlessAuthorization`]: GETs the authorization URL without
//!   following redirects and reads `Location` (tests, conformance, an AS
//!   that authorizes without user interaction);
//! - [`LoopbackAuthorization`]: listens on `127.0.0.1` on a random (or
//!   fixed) port (RFC 8252 §7.3), lets a caller-supplied opener show the
//!   URL (open a browser, print it), and waits, bounded by a timeout, for
//!   the browser's redirect.
// AUTH-26, AUTH-24

use super::BoxFuture;
use super::error::OAuthError;
use super::form;
use super::http::HttpClient;
use std::sync::Arc;
use std::time::Duration;

/// One authorization attempt in progress.
pub trait AuthorizationSession: Send {
    /// The `redirect_uri` to register and send.
    fn redirect_uri(&self) -> &str;
    /// Sends the user agent to `authorization_url` and returns the full
    /// redirect (callback) URL it came back with.
    fn authorize(
        self: Box<Self>,
        authorization_url: String,
    ) -> BoxFuture<'static, Result<String, OAuthError>>;
}

/// Starts authorization sessions.
pub trait AuthorizationHandler: Send + Sync + 'static {
    /// Prepares a session (binds a listener, picks the redirect URI).
    fn start(&self) -> BoxFuture<'_, Result<Box<dyn AuthorizationSession>, OAuthError>>;
    /// The redirect URIs this handler may use, for registration (RFC 7591).
    fn redirect_uris(&self) -> Vec<String>;
    // AUTH-13
    /// `application_type` for registration: `native` by default.
    fn application_type(&self) -> &str {
        "native"
    }
    /// Whether [`AuthorizationHandler::start`] may lead to a real flow (a
    /// user, a browser). Then the client holds the store's lock across
    /// it, so processes sharing the store run one flow at a time; a
    /// handler that only ever fails (e.g. "log in first") answers `false`
    /// and no lock is taken. Default `true`.
    fn interactive(&self) -> bool {
        true
    }
}

/// The parameters of an authorization response (RFC 6749 §4.1.2, RFC 9207).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallbackParams {
    /// `code`.
    pub code: Option<String>,
    /// `state`.
    pub state: Option<String>,
    /// `iss` (RFC 9207).
    pub iss: Option<String>,
    /// `error`.
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl CallbackParams {
    /// Reads the parameters from a callback URL's query.
    pub fn from_url(url: &str) -> Self {
        let mut p = Self::default();
        for (k, v) in form::query_of(url) {
            let slot = match k.as_str() {
                "code" => &mut p.code,
                "state" => &mut p.state,
                "iss" => &mut p.iss,
                "error" => &mut p.error,
                "error_description" => &mut p.error_description,
                _ => continue,
            };
            // A repeated parameter makes the response ambiguous; keep the
            // first and let validation decide on the rest.
            if slot.is_none() {
                *slot = Some(v);
            }
        }
        p
    }

    // AUTH-26, AUTH-24
    /// Validates the response and returns the code. Order: `state`
    /// (a mismatching callback is discarded), then `iss`
    /// (before looking at `error*`, which is not acted on or
    /// shown when `iss` is wrong), then `error`, then `code`.
    pub fn validate(
        &self,
        expected_state: &str,
        issuer: &str,
        iss_supported: bool,
    ) -> Result<String, OAuthError> {
        if self.state.as_deref() != Some(expected_state) {
            return Err(OAuthError::authorization(
                "the authorization response's state does not match; discarded (AUTH-26)",
            ));
        }
        check_iss(iss_supported, issuer, self.iss.as_deref())?;
        if let Some(e) = &self.error {
            return Err(OAuthError::authorization(format!(
                "the authorization server refused: {e} {}",
                self.error_description.as_deref().unwrap_or("")
            )));
        }
        match &self.code {
            Some(c) if !c.is_empty() => Ok(c.clone()),
            _ => Err(OAuthError::authorization(
                "the authorization response carries no code",
            )),
        }
    }
}

// AUTH-24
/// RFC 9207 as the specification states it: advertised + present → compare;
/// advertised + absent → reject; not advertised + present → compare; not
/// advertised + absent → proceed. Exact string comparison (no case
/// folding, port elision, slash or percent normalization).
pub fn check_iss(advertised: bool, issuer: &str, iss: Option<&str>) -> Result<(), OAuthError> {
    match iss {
        Some(i) if i == issuer => Ok(()),
        Some(i) => Err(OAuthError::authorization(format!(
            "the authorization response's iss {i:?} is not the issuer {issuer:?} (AUTH-24)"
        ))),
        None if advertised => Err(OAuthError::authorization(
            "the authorization server promises iss but the response has none (AUTH-24)",
        )),
        None => Ok(()),
    }
}

/// Default redirect URI of the headless handler (never contacted).
pub const DEFAULT_HEADLESS_REDIRECT: &str = "http://localhost:3000/callback";

/// GETs the authorization URL (through the SSRF-guarded client, no
/// redirects followed) and returns the `Location` it answers with.
#[derive(Debug, Clone)]
pub struct HeadlessAuthorization {
    http: HttpClient,
    redirect_uri: String,
}

impl HeadlessAuthorization {
    /// Uses `http` for the GET and [`DEFAULT_HEADLESS_REDIRECT`].
    pub fn new(http: HttpClient) -> Self {
        Self {
            http,
            redirect_uri: DEFAULT_HEADLESS_REDIRECT.into(),
        }
    }

    /// Another redirect URI.
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = uri.into();
        self
    }
}

struct HeadlessSession {
    http: HttpClient,
    redirect_uri: String,
}

impl AuthorizationSession for HeadlessSession {
    fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    fn authorize(self: Box<Self>, url: String) -> BoxFuture<'static, Result<String, OAuthError>> {
        Box::pin(async move {
            let resp = self.http.get(&url).await?;
            if !resp.status.is_redirection() {
                return Err(OAuthError::authorization(format!(
                    "the authorization endpoint answered {} instead of a redirect",
                    resp.status
                )));
            }
            let location = resp.header("location").ok_or_else(|| {
                OAuthError::authorization("the authorization redirect has no Location")
            })?;
            Ok(location.to_owned())
        })
    }
}

impl AuthorizationHandler for HeadlessAuthorization {
    fn start(&self) -> BoxFuture<'_, Result<Box<dyn AuthorizationSession>, OAuthError>> {
        let s = HeadlessSession {
            http: self.http.clone(),
            redirect_uri: self.redirect_uri.clone(),
        };
        Box::pin(async move { Ok(Box::new(s) as Box<dyn AuthorizationSession>) })
    }

    fn redirect_uris(&self) -> Vec<String> {
        vec![self.redirect_uri.clone()]
    }
}

/// Shows the authorization URL to the user (open a browser, print it).
pub type BrowserOpener = Arc<dyn Fn(&str) -> Result<(), OAuthError> + Send + Sync>;

/// Default wait for the browser's redirect: 5 minutes.
pub const DEFAULT_LOOPBACK_TIMEOUT: Duration = Duration::from_secs(300);
/// Largest request head accepted on the loopback listener.
pub const MAX_CALLBACK_REQUEST_BYTES: usize = 16 * 1024;
/// The callback path.
pub const LOOPBACK_CALLBACK_PATH: &str = "/callback";

/// A loopback redirect listener (RFC 8252 §7.3) plus a browser opener.
#[derive(Clone)]
pub struct LoopbackAuthorization {
    opener: BrowserOpener,
    port: u16,
    timeout: Duration,
}

impl std::fmt::Debug for LoopbackAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackAuthorization")
            .field("port", &self.port)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackAuthorization {
    /// Listens on a random port of `127.0.0.1`; `opener` shows the URL.
    pub fn new(opener: BrowserOpener) -> Self {
        Self {
            opener,
            port: 0,
            timeout: DEFAULT_LOOPBACK_TIMEOUT,
        }
    }

    /// A fixed port (for authorization servers that match redirect URIs
    /// with the port); 0 = random (default).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// How long to wait for the redirect (default [`DEFAULT_LOOPBACK_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

struct LoopbackSession {
    listener: tokio::net::TcpListener,
    redirect_uri: String,
    opener: BrowserOpener,
    timeout: Duration,
}

/// Reads one request head (bounded) and returns its request target.
async fn read_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            break;
        }
        if buf.len() > MAX_CALLBACK_REQUEST_BYTES {
            return None;
        }
    }
    let line = buf.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    let method = parts.next()?;
    let target = parts.next()?;
    (method == "GET").then(|| target.to_owned())
}

impl AuthorizationSession for LoopbackSession {
    fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    fn authorize(self: Box<Self>, url: String) -> BoxFuture<'static, Result<String, OAuthError>> {
        Box::pin(async move {
            use tokio::io::AsyncWriteExt;
            (self.opener)(&url)?;
            let base = self
                .redirect_uri
                .trim_end_matches(LOOPBACK_CALLBACK_PATH)
                .to_owned();
            // Only a redirect carrying this attempt's `state` ends the wait;
            // anything else reaching the port (another tab, a hostile page
            // making the browser hit it) is answered and ignored (AUTH-26).
            let expected_state = form::query_of(&url)
                .into_iter()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v);
            let wait = async {
                loop {
                    let mut stream = match self.listener.accept().await {
                        Ok((s, _)) => s,
                        Err(_) => {
                            // e.g. out of descriptors: do not spin.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let target =
                        tokio::time::timeout(Duration::from_secs(10), read_target(&mut stream))
                            .await
                            .ok()
                            .flatten();
                    let Some(target) = target else {
                        continue;
                    };
                    let path = target.split('?').next().unwrap_or("");
                    let state = form::query_of(&target)
                        .into_iter()
                        .find(|(k, _)| k == "state")
                        .map(|(_, v)| v);
                    if path != LOOPBACK_CALLBACK_PATH
                        || (expected_state.is_some() && state != expected_state)
                    {
                        let _ = stream
                            .write_all(
                                b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                            )
                            .await;
                        continue;
                    }
                    let body = "Authorization received. You can close this window.";
                    let _ = stream
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            )
                            .as_bytes(),
                        )
                        .await;
                    let _ = stream.shutdown().await;
                    return format!("{base}{target}");
                }
            };
            tokio::time::timeout(self.timeout, wait).await.map_err(|_| {
                OAuthError::authorization(format!(
                    "no authorization redirect within {:?}",
                    self.timeout
                ))
            })
        })
    }
}

impl AuthorizationHandler for LoopbackAuthorization {
    fn start(&self) -> BoxFuture<'_, Result<Box<dyn AuthorizationSession>, OAuthError>> {
        Box::pin(async move {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
                .await
                .map_err(|e| {
                    OAuthError::authorization(format!("cannot listen on 127.0.0.1: {e}"))
                })?;
            let port = listener
                .local_addr()
                .map_err(|e| OAuthError::authorization(format!("loopback listener: {e}")))?
                .port();
            Ok(Box::new(LoopbackSession {
                listener,
                redirect_uri: format!("http://127.0.0.1:{port}{LOOPBACK_CALLBACK_PATH}"),
                opener: self.opener.clone(),
                timeout: self.timeout,
            }) as Box<dyn AuthorizationSession>)
        })
    }

    fn redirect_uris(&self) -> Vec<String> {
        // RFC 8252 §7.3: the AS must accept any port on loopback.
        vec![format!(
            "http://127.0.0.1{}{LOOPBACK_CALLBACK_PATH}",
            if self.port == 0 {
                String::new()
            } else {
                format!(":{}", self.port)
            }
        )]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn iss_rules_follow_auth_24() {
        let is = "https://as.example";
        assert!(check_iss(true, is, Some(is)).is_ok());
        assert!(check_iss(true, is, None).is_err());
        assert!(check_iss(false, is, Some(is)).is_ok());
        assert!(check_iss(false, is, None).is_ok());
        assert!(check_iss(false, is, Some("https://evil.example")).is_err());
        // Exact comparison: no normalization of any kind.
        for v in [
            "https://as.example/",
            "HTTPS://as.example",
            "https://AS.example",
            "https://as.example:443",
            "https://as%2Eexample",
        ] {
            assert!(check_iss(true, is, Some(v)).is_err(), "{v}");
        }
    }

    #[test]
    fn callback_validation_order() {
        let url = "http://localhost:3000/callback?code=c1&state=s1&iss=https%3A%2F%2Fas";
        let p = CallbackParams::from_url(url);
        assert_eq!(p.validate("s1", "https://as", true).unwrap(), "c1");
        // AUTH-26
        assert!(p.validate("s2", "https://as", true).is_err());
        // AUTH-24 before error: a wrong iss hides the error text.
        let e =
            CallbackParams::from_url("http://x/cb?error=access_denied&state=s1&iss=https://evil")
                .validate("s1", "https://as", false)
                .unwrap_err();
        assert!(!e.message().contains("access_denied"));
        let e = CallbackParams::from_url("http://x/cb?error=access_denied&state=s1")
            .validate("s1", "https://as", false)
            .unwrap_err();
        assert!(e.message().contains("access_denied"));
        assert!(
            CallbackParams::from_url("http://x/cb?state=s1")
                .validate("s1", "https://as", false)
                .is_err()
        );
    }

    #[tokio::test]
    async fn loopback_session_receives_the_redirect() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let tx = std::sync::Mutex::new(tx);
        let handler = LoopbackAuthorization::new(Arc::new(move |u: &str| {
            let _ = tx.lock().unwrap().send(u.to_owned());
            Ok(())
        }))
        .timeout(Duration::from_secs(10));
        let session = handler.start().await.unwrap();
        let redirect = session.redirect_uri().to_owned();
        assert!(redirect.starts_with("http://127.0.0.1:"));
        let wait = tokio::spawn(session.authorize("https://as/authorize?x=1&state=xyz".into()));
        let addr = redirect
            .trim_start_matches("http://")
            .trim_end_matches(LOOPBACK_CALLBACK_PATH)
            .to_owned();
        // A stray request to another path is refused and ignored.
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /favicon.ico HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        assert!(out.starts_with(b"HTTP/1.1 404"));
        // A callback with another state is refused and ignored (AUTH-26).
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /callback?code=evil&state=other HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        assert!(out.starts_with(b"HTTP/1.1 404"));
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /callback?code=abc&state=xyz HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        assert!(out.starts_with(b"HTTP/1.1 200"));
        let got = wait.await.unwrap().unwrap();
        assert_eq!(got, format!("{redirect}?code=abc&state=xyz"));
        assert_eq!(rx.recv().unwrap(), "https://as/authorize?x=1&state=xyz");
    }

    #[tokio::test]
    async fn loopback_session_times_out() {
        let handler = LoopbackAuthorization::new(Arc::new(|_: &str| Ok(())))
            .timeout(Duration::from_millis(50));
        let session = handler.start().await.unwrap();
        assert!(session.authorize("https://as/a".into()).await.is_err());
    }
}
