//! `mcp login URL --paste`: the authorization-code flow for a terminal
//! whose machine has no browser and whose authorization server has no
//! device flow. The authorization URL is printed; the user opens it on any
//! machine, approves, and the browser is sent to the registered loopback
//! redirect URI (`http://127.0.0.1:PORT/callback`), where nothing listens:
//! the page fails to load, and the user copies the whole address from the
//! address bar and pastes it into the terminal. Its `state` (and `iss`) are
//! checked like any redirect's; the code is exchanged with the PKCE
//! verifier that never left this process.
//!
//! Only the full URL is accepted, not a bare code: the URL's `state` is
//! what ties the answer to this attempt.
// AUTH-26, AUTH-24

use ferromcp_auth::client::{
    AuthorizationHandler, AuthorizationSession, BoxFuture, LoopbackAuthorization, OAuthError,
    OAuthErrorKind,
};
use std::io::{BufRead, Read};
use std::sync::Arc;
use std::time::Duration;

/// The longest line read from the terminal.
const MAX_PASTE_BYTES: u64 = 16 * 1024;

/// The paste-back handler: prints the URL on stderr, reads the redirected
/// URL from stdin.
pub struct PasteAuthorization {
    timeout: Duration,
}

impl PasteAuthorization {
    /// Waits at most `timeout` for the pasted URL.
    pub fn new(timeout: Duration) -> Self {
        Self { timeout }
    }
}

struct PasteSession {
    redirect_uri: String,
    timeout: Duration,
}

fn failed(m: impl Into<String>) -> OAuthError {
    OAuthError::new(OAuthErrorKind::Authorization, m)
}

/// The pasted line as a redirect URL on `redirect_uri`'s callback path.
fn accept(line: &str, redirect_uri: &str) -> Result<String, OAuthError> {
    let pasted = line.trim();
    if pasted.is_empty() {
        return Err(failed("nothing was pasted"));
    }
    let path = |u: &str| {
        u.split_once("://")
            .map(|(_, rest)| rest)
            .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
            .map(|p| p.split(['?', '#']).next().unwrap_or(p).to_owned())
    };
    if !pasted.contains('?') || path(pasted) != path(redirect_uri) {
        return Err(failed(format!(
            "paste the whole address the browser was sent to (it starts with {}?…); \
             a bare code is not accepted, its state must be checked",
            redirect_uri
        )));
    }
    Ok(pasted.to_owned())
}

impl AuthorizationSession for PasteSession {
    fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    fn authorize(self: Box<Self>, url: String) -> BoxFuture<'static, Result<String, OAuthError>> {
        Box::pin(async move {
            eprintln!(
                "To log in, open this URL in a browser on any machine:\n  {url}\n\
                 After you approve, the browser is sent to {} and shows a connection \
                 error: that is expected. Copy the whole address from its address bar \
                 and paste it here, then press Enter:",
                self.redirect_uri
            );
            let read = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin()
                    .lock()
                    .take(MAX_PASTE_BYTES)
                    .read_line(&mut line)
                    .map(|_| line)
            });
            let line = match tokio::time::timeout(self.timeout, read).await {
                Err(_) => {
                    return Err(failed(format!(
                        "nothing was pasted within {}s",
                        self.timeout.as_secs()
                    )));
                }
                Ok(Err(e)) => return Err(failed(format!("cannot read the terminal: {e}"))),
                Ok(Ok(Err(e))) => return Err(failed(format!("cannot read the terminal: {e}"))),
                Ok(Ok(Ok(line))) => line,
            };
            accept(&line, &self.redirect_uri)
        })
    }
}

impl AuthorizationHandler for PasteAuthorization {
    fn start(&self) -> BoxFuture<'_, Result<Box<dyn AuthorizationSession>, OAuthError>> {
        Box::pin(async move {
            // A loopback port that was free a moment ago: nothing listens
            // on it, so the browser cannot deliver the code anywhere but
            // to the user's clipboard.
            let port = std::net::TcpListener::bind(("127.0.0.1", 0))
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .map_err(|e| failed(format!("cannot pick a loopback port: {e}")))?;
            Ok(Box::new(PasteSession {
                redirect_uri: format!(
                    "http://127.0.0.1:{port}{}",
                    ferromcp_auth::client::authorize::LOOPBACK_CALLBACK_PATH
                ),
                timeout: self.timeout,
            }) as Box<dyn AuthorizationSession>)
        })
    }

    fn redirect_uris(&self) -> Vec<String> {
        // The loopback handler's: one registration serves both.
        LoopbackAuthorization::new(Arc::new(|_: &str| Ok(()))).redirect_uris()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_full_redirect_url_on_the_callback_path_is_accepted() {
        let r = "http://127.0.0.1:5000/callback";
        let ok = "http://127.0.0.1:5000/callback?code=c&state=s&iss=x\n";
        assert!(matches!(accept(ok, r), Ok(u) if u == ok.trim()));
        for bad in [
            "",
            "  \n",
            "just-a-code",
            "http://127.0.0.1:5000/elsewhere?code=c&state=s",
        ] {
            assert!(accept(bad, r).is_err(), "{bad:?}");
        }
    }
}
