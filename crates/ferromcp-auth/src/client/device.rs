//! The device authorization grant (RFC 8628), for hosts without a browser
//! (SSH sessions, containers): the client asks the authorization server's
//! `device_authorization_endpoint` for a device code and a user code,
//! shows the user code and the verification URI through a
//! caller-supplied [`DevicePrompt`] (the user enters it on any other
//! device), then polls the token endpoint until the user approves, denies,
//! or the code expires.
//!
//! Polling honours the server's `interval` (5 seconds when absent),
//! adds 5 seconds on every `slow_down`, keeps going on
//! `authorization_pending`, and stops with an error on `expired_token`,
//! `access_denied` and any other error, and when [`DeviceGrant::timeout`]
//! (or the code's `expires_in`, whichever comes first) has passed. No PKCE
//! (RFC 8628 has none); the `resource` indicator is sent on both requests
//! as the authorization-code flow sends it.
// AUTH-22

use super::BoxFuture;
use super::client_auth::TokenEndpointContext;
use super::error::{OAuthError, OAuthErrorKind};
use super::grant::{Grant, GrantContext};
use super::scope;
use super::token::{TokenResponse, token_request};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// The `grant_type` of the device code token request (RFC 8628 §3.4).
pub const DEVICE_CODE_GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// The polling interval when the server names none (RFC 8628 §3.2).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// What a `slow_down` answer adds to the interval (RFC 8628 §3.5).
pub const SLOW_DOWN_STEP: Duration = Duration::from_secs(5);

/// The default bound on the whole grant, approval included.
pub const DEFAULT_DEVICE_TIMEOUT: Duration = Duration::from_secs(300);

/// Upper bound on an interval the server asks for (a hostile or broken
/// `interval` must not stall the client beyond its timeout anyway).
const MAX_INTERVAL: Duration = Duration::from_secs(60);

/// What the user must see: where to go and which code to enter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCodePrompt {
    /// The code the user enters (`user_code`).
    pub user_code: String,
    /// Where the user enters it (`verification_uri`).
    pub verification_uri: String,
    /// The URI carrying the code already (`verification_uri_complete`),
    /// when the server gives one.
    pub verification_uri_complete: Option<String>,
    /// How long the code is valid (`expires_in`).
    pub expires_in: Duration,
}

/// Shows a [`DeviceCodePrompt`] to the user (on a terminal's stderr,
/// say). Never given the device code itself.
pub type DevicePrompt = Arc<dyn Fn(&DeviceCodePrompt) + Send + Sync>;

/// The device authorization response (RFC 8628 §3.2).
#[derive(Deserialize)]
struct DeviceAuthorizationResponse {
    device_code: String,
    user_code: String,
    #[serde(alias = "verification_url")]
    verification_uri: String,
    #[serde(default)]
    verification_uri_complete: Option<String>,
    expires_in: u64,
    #[serde(default)]
    interval: Option<u64>,
}

/// An OAuth error response (RFC 6749 §5.2) at the device endpoint.
#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// What one poll of the token endpoint decided.
#[derive(Debug, PartialEq, Eq)]
enum Poll {
    /// Ask again after the interval.
    Pending,
    /// Ask again after the interval plus [`SLOW_DOWN_STEP`].
    SlowDown,
}

/// Whether `s` can be shown on a terminal as is (no control characters).
fn printable(s: &str) -> bool {
    !s.chars().any(char::is_control)
}

/// Classifies a token endpoint error while polling: go on, or stop with a
/// clear error.
fn classify(e: OAuthError) -> Result<Poll, OAuthError> {
    let code = match e.kind() {
        OAuthErrorKind::Token { code: Some(c) } => c.clone(),
        _ => return Err(e),
    };
    match code.as_str() {
        "authorization_pending" => Ok(Poll::Pending),
        "slow_down" => Ok(Poll::SlowDown),
        "access_denied" => Err(OAuthError::authorization(
            "the device authorization was denied (access_denied): nothing was stored",
        )),
        "expired_token" => Err(OAuthError::authorization(
            "the device code expired before it was approved (expired_token): \
             run the login again and enter the new code",
        )),
        _ => Err(e),
    }
}

/// The RFC 8628 device authorization grant, installed with
/// [`super::OAuthClientBuilder::grant`]. The client identity is the one
/// the client flow establishes (pre-registered, CIMD, stored or dynamic
/// registration), exactly as for the authorization-code flow.
pub struct DeviceGrant {
    prompt: DevicePrompt,
    timeout: Duration,
}

impl std::fmt::Debug for DeviceGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceGrant")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl DeviceGrant {
    /// A grant showing the user code through `prompt`, bounded by
    /// [`DEFAULT_DEVICE_TIMEOUT`].
    pub fn new(prompt: DevicePrompt) -> Self {
        Self {
            prompt,
            timeout: DEFAULT_DEVICE_TIMEOUT,
        }
    }

    /// The bound on the whole grant (request, approval, polling).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn run(&self, ctx: GrantContext<'_>) -> Result<TokenResponse, OAuthError> {
        let started = tokio::time::Instant::now();
        let endpoint = ctx
            .metadata
            .extra
            .get("device_authorization_endpoint")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| {
                OAuthError::new(
                    OAuthErrorKind::Discovery,
                    format!(
                        "the authorization server {} offers no device authorization \
                         (no device_authorization_endpoint in its metadata)",
                        ctx.metadata.issuer
                    ),
                )
            })?;
        ctx.http.policy().check_url(&endpoint)?;
        let mut params = Vec::new();
        if let Some(sc) = ctx.scopes {
            params.push(("scope".to_owned(), scope::join(sc)));
        }
        if let Some(r) = ctx.resource_indicator {
            params.push(("resource".to_owned(), r.to_owned()));
        }
        let mut headers = Vec::new();
        let device_ctx = TokenEndpointContext {
            issuer: ctx.token_endpoint.issuer.clone(),
            token_endpoint: endpoint.clone(),
        };
        ctx.client.apply(&device_ctx, &mut params, &mut headers)?;
        let resp = ctx.http.post_form(&endpoint, &params, &headers).await?;
        if !resp.status.is_success() {
            let why = serde_json::from_slice::<ErrorResponse>(&resp.body)
                .map(|e| format!("{} {}", e.error, e.error_description.unwrap_or_default()))
                .unwrap_or_default();
            return Err(OAuthError::authorization(format!(
                "the device authorization endpoint {endpoint} answered {}: {why}",
                resp.status
            )));
        }
        let d: DeviceAuthorizationResponse = serde_json::from_slice(&resp.body).map_err(|e| {
            OAuthError::authorization(format!("malformed device authorization response: {e}"))
        })?;
        if d.device_code.is_empty() || d.user_code.is_empty() {
            return Err(OAuthError::authorization(
                "the device authorization response has an empty device_code or user_code",
            ));
        }
        // The verification URIs are shown to a person, not fetched; still,
        // only http(s) ones are shown, and nothing the server sent may
        // carry control characters (terminal escape sequences) to the
        // user's terminal.
        let web = |u: &str| u.starts_with("https://") || u.starts_with("http://");
        if !web(&d.verification_uri) {
            return Err(OAuthError::authorization(
                "the device authorization response's verification_uri is not an http(s) URL",
            ));
        }
        if !printable(&d.user_code)
            || !printable(&d.verification_uri)
            || d.verification_uri_complete
                .as_deref()
                .is_some_and(|u| !printable(u))
        {
            return Err(OAuthError::authorization(
                "the device authorization response carries control characters; not shown",
            ));
        }
        (self.prompt)(&DeviceCodePrompt {
            user_code: d.user_code.clone(),
            verification_uri: d.verification_uri.clone(),
            verification_uri_complete: d.verification_uri_complete.clone().filter(|u| web(u)),
            expires_in: Duration::from_secs(d.expires_in),
        });
        let deadline = started + self.timeout.min(Duration::from_secs(d.expires_in));
        let mut interval = d
            .interval
            .map_or(DEFAULT_INTERVAL, Duration::from_secs)
            .min(MAX_INTERVAL);
        loop {
            let next = tokio::time::Instant::now() + interval;
            if next > deadline {
                return Err(OAuthError::authorization(format!(
                    "the device authorization was not approved within {}s: \
                     run the login again",
                    deadline.saturating_duration_since(started).as_secs()
                )));
            }
            tokio::time::sleep_until(next).await;
            let mut params = vec![
                ("grant_type".to_owned(), DEVICE_CODE_GRANT_TYPE.to_owned()),
                ("device_code".to_owned(), d.device_code.clone()),
            ];
            if let Some(r) = ctx.resource_indicator {
                params.push(("resource".to_owned(), r.to_owned()));
            }
            match token_request(ctx.http, &ctx.token_endpoint, params, ctx.client, ctx.proof).await
            {
                Ok(t) => return Ok(t),
                Err(e) => match classify(e)? {
                    Poll::Pending => {}
                    Poll::SlowDown => interval = (interval + SLOW_DOWN_STEP).min(MAX_INTERVAL),
                },
            }
        }
    }
}

impl Grant for DeviceGrant {
    fn obtain<'a>(
        &'a self,
        ctx: GrantContext<'a>,
    ) -> BoxFuture<'a, Result<TokenResponse, OAuthError>> {
        Box::pin(self.run(ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token_error(code: &str) -> OAuthError {
        OAuthError::new(
            OAuthErrorKind::Token {
                code: Some(code.into()),
            },
            format!("answered 400: {code}"),
        )
    }

    #[test]
    fn terminal_escapes_are_not_printable() {
        assert!(printable("WDJB-MJHT"));
        assert!(printable("https://as.example/device"));
        assert!(!printable("ABC\u{1b}]0;owned\u{7}"));
        assert!(!printable("ABC\nDEF"));
    }

    #[test]
    fn poll_answers_are_classified() {
        assert_eq!(
            classify(token_error("authorization_pending")),
            Ok(Poll::Pending)
        );
        assert_eq!(classify(token_error("slow_down")), Ok(Poll::SlowDown));
        for (code, says) in [
            ("access_denied", "denied"),
            ("expired_token", "expired"),
            ("invalid_client", "invalid_client"),
        ] {
            match classify(token_error(code)) {
                Err(e) => assert!(e.message().contains(says), "{code}: {e}"),
                Ok(p) => panic!("{code} taken for {p:?}"),
            }
        }
        let network = OAuthError::new(OAuthErrorKind::Network, "down");
        assert_eq!(classify(network.clone()), Err(network));
    }
}
