//! The client's one error type.
//!
//! A JSON-RPC error sent by the peer ([`Error::is_protocol`], carrying the
//! [`ErrorObject`]) is kept apart from every failure produced locally by this
//! SDK (timeouts, transport loss, malformed answers, handler refusals): those
//! never masquerade as a peer error code.
// ERR-07

use ferromcp_protocol::ErrorObject;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What went wrong; see the `is_*` methods on [`Error`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The peer answered with a JSON-RPC error.
    Protocol(ErrorObject),
    /// The connection or the HTTP exchange failed (I/O, non-2xx without a
    /// JSON-RPC body, stream lost before the response).
    Transport {
        /// The HTTP status, when the failure was an HTTP answer.
        status: Option<u16>,
    },
    // LEGACY-13
    /// The handshake-era HTTP session is gone (404 on a request carrying
    /// `Mcp-Session-Id`).
    SessionExpired,
    /// The peer sent more than a configured size limit allows: a response
    /// body, an SSE line or event, or a stdio line (see [`crate::Limits`]).
    TooLarge {
        /// The limit that was exceeded, in bytes.
        limit: usize,
    },
    /// The request ran out of time.
    Timeout {
        /// How long the request had been running.
        elapsed: Duration,
    },
    /// The request was cancelled locally.
    Cancelled,
    // RESULT-03, HTTP-19
    /// The peer sent something this client cannot accept (malformed JSON-RPC,
    /// unknown `resultType`, a 202 answer to a request).
    InvalidResponse,
    // MRTR-13
    /// A user handler refused or failed an input request.
    Handler,
    // TOOL-06
    /// A typed tool call ([`Client::call_typed`](crate::Client::call_typed))
    /// got a result with `isError: true`; the message is its text.
    ToolError,
    // MRTR-13
    /// The MRTR loop hit its round limit.
    TooManyRounds {
        /// The configured limit.
        limit: u32,
    },
    /// No protocol era or version could be agreed on.
    Negotiation,
    /// The operation is not available in the negotiated era or transport,
    /// or (for a server's request) no handler is installed for it.
    Unsupported,
    /// A `tools/call` result does not match the tool's `outputSchema`
    /// (no `structuredContent`, or `structuredContent` breaking the
    /// schema); see [`crate::ClientBuilder::validate_output`].
    OutputSchemaMismatch {
        /// The tool.
        tool: String,
    },
    // META-01, META-02
    /// The application put a `_meta` key into a request that the key rules
    /// forbid or that the client sets itself; the request
    /// was not sent.
    InvalidMeta {
        /// The offending key (empty when `_meta` was not an object).
        key: String,
    },
    // LEGACY-04
    /// The server's capabilities do not offer the feature the request needs;
    /// the request was not sent.
    NotOffered {
        /// The missing capability, e.g. `resources` or `resources.subscribe`.
        capability: &'static str,
    },
    /// The client has been closed.
    Closed,
    /// The client was configured wrongly (bad URL, no command, ...).
    Config,
    /// The HTTP authorization hook could not supply or renew credentials,
    /// or gave up after a 401/403 (see [`crate::HttpAuth`]).
    Auth {
        /// The HTTP status that ended the attempt, when there was one.
        status: Option<u16>,
    },
}

/// An error from the MCP client.
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    /// The server's `Retry-After` on a 503 (or 429/502/504) answer.
    retry_after: Option<Duration>,
}

impl Error {
    /// A new error of `kind` described by `message`.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
            retry_after: None,
        }
    }

    /// Records the server's `Retry-After` (either form, see
    /// [`crate::retry::parse_retry_after`]).
    pub(crate) fn with_retry_after(mut self, after: Option<Duration>) -> Self {
        self.retry_after = after;
        self
    }

    /// How long the server asked to wait before trying again (its
    /// `Retry-After` header, given in seconds or as an HTTP date), when
    /// it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Attaches the underlying cause.
    pub(crate) fn with_source(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// A peer JSON-RPC error.
    pub(crate) fn protocol(e: ErrorObject) -> Self {
        let message = format!("peer error {}: {}", e.code, e.message);
        Self::new(ErrorKind::Protocol(e), message)
    }

    /// A transport failure without an HTTP status.
    pub(crate) fn transport(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Transport { status: None }, message)
    }

    /// A transport failure carrying an HTTP status.
    pub(crate) fn http_status(status: u16, message: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::Transport {
                status: Some(status),
            },
            message,
        )
    }

    /// The peer exceeded the size limit `limit`.
    pub(crate) fn too_large(limit: usize, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::TooLarge { limit }, message)
    }

    /// A malformed or unacceptable answer from the peer.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidResponse, message)
    }

    /// The client is closed.
    pub(crate) fn closed() -> Self {
        Self::new(ErrorKind::Closed, "the client is closed")
    }

    /// A configuration error.
    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, message)
    }

    /// An authorization failure reported by the [`crate::HttpAuth`] hook.
    pub(crate) fn auth(status: Option<u16>, e: crate::auth::AuthError) -> Self {
        let message = match status {
            Some(s) => format!("authorization failed (HTTP {s})"),
            None => "authorization failed".to_owned(),
        };
        Self::new(ErrorKind::Auth { status }, message).with_source(e)
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The peer's JSON-RPC error, when this is one.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match &self.kind {
            ErrorKind::Protocol(e) => Some(e),
            _ => None,
        }
    }

    // LEGACY-22
    /// True when the server answered -32042 URLElicitationRequiredError
    /// (2025-11-25): the request can succeed once the user has
    /// completed the interactions in [`Self::url_elicitations`].
    pub fn is_url_elicitation_required(&self) -> bool {
        self.rpc_error()
            .is_some_and(|e| e.code == ferromcp_protocol::ErrorCode::URL_ELICITATION_REQUIRED)
    }

    /// The URL-mode elicitations a -32042 error carries in
    /// `data.elicitations` (message, URL and `elicitationId` each), in the
    /// server's order; empty for any other error. Entries that are not
    /// well-formed URL-mode elicitations are left out.
    pub fn url_elicitations(&self) -> Vec<ferromcp_protocol::types::ElicitRequestUrlParams> {
        if !self.is_url_elicitation_required() {
            return Vec::new();
        }
        self.rpc_error()
            .and_then(|e| e.data.as_ref())
            .and_then(|d| d.get("elicitations"))
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| {
                        match serde_json::from_value::<ferromcp_protocol::types::ElicitRequestParams>(
                            v.clone(),
                        ) {
                            Ok(ferromcp_protocol::types::ElicitRequestParams::Url(u)) => Some(u),
                            _ => None,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The HTTP status of a failed exchange, when known.
    pub fn status(&self) -> Option<u16> {
        match &self.kind {
            ErrorKind::Transport { status } => *status,
            ErrorKind::SessionExpired => Some(404),
            ErrorKind::Auth { status } => *status,
            _ => None,
        }
    }

    /// Whether the peer answered with a JSON-RPC error.
    pub fn is_protocol(&self) -> bool {
        matches!(self.kind, ErrorKind::Protocol(_))
    }

    // ERR-07
    /// Whether this failure was produced by this SDK rather than sent by
    /// the peer: everything except [`Error::is_protocol`].
    pub fn is_local(&self) -> bool {
        !self.is_protocol()
    }

    /// Whether the transport failed (connection, HTTP status, lost stream).
    pub fn is_transport(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Transport { .. } | ErrorKind::SessionExpired
        )
    }

    /// Whether authorization failed: the [`crate::HttpAuth`] hook gave up
    /// after a 401/403, could not obtain credentials, or the retry bound
    /// ([`crate::Limits::max_auth_retries`]) was reached.
    pub fn is_auth(&self) -> bool {
        matches!(self.kind, ErrorKind::Auth { .. })
    }

    /// Whether the peer exceeded a size limit (response body, SSE line or
    /// event, stdio line).
    pub fn is_too_large(&self) -> bool {
        matches!(self.kind, ErrorKind::TooLarge { .. })
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, ErrorKind::Timeout { .. })
    }

    /// Whether the request was cancelled locally.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.kind, ErrorKind::Cancelled)
    }

    /// Whether the peer sent an unacceptable answer.
    pub fn is_invalid_response(&self) -> bool {
        matches!(self.kind, ErrorKind::InvalidResponse)
    }

    /// True for [`ErrorKind::ToolError`]: the tool answered `isError: true`.
    pub fn is_tool_error(&self) -> bool {
        matches!(self.kind, ErrorKind::ToolError)
    }

    /// True for [`ErrorKind::Handler`].
    pub fn is_handler(&self) -> bool {
        matches!(self.kind, ErrorKind::Handler)
    }

    /// Whether the MRTR round limit was hit.
    pub fn is_too_many_rounds(&self) -> bool {
        matches!(self.kind, ErrorKind::TooManyRounds { .. })
    }

    /// Whether version/era negotiation failed.
    pub fn is_negotiation(&self) -> bool {
        matches!(self.kind, ErrorKind::Negotiation)
    }

    /// True when the server's capabilities do not offer what the request
    /// needs ([`ErrorKind::NotOffered`]); nothing was sent.
    pub fn is_not_offered(&self) -> bool {
        matches!(self.kind, ErrorKind::NotOffered { .. })
    }

    /// True when the application's `_meta` for a request broke the key rules.
    pub fn is_invalid_meta(&self) -> bool {
        matches!(self.kind, ErrorKind::InvalidMeta { .. })
    }

    /// True when a tool's result broke its declared `outputSchema`.
    pub fn is_output_schema_mismatch(&self) -> bool {
        matches!(self.kind, ErrorKind::OutputSchemaMismatch { .. })
    }

    /// True when the operation is not available in the negotiated era or
    /// transport, or a server's request found no handler.
    pub fn is_unsupported(&self) -> bool {
        matches!(self.kind, ErrorKind::Unsupported)
    }

    /// True when the client has been closed.
    pub fn is_closed(&self) -> bool {
        matches!(self.kind, ErrorKind::Closed)
    }

    // LEGACY-13
    /// Whether the handshake-era session expired.
    pub(crate) fn is_session_expired(&self) -> bool {
        matches!(self.kind, ErrorKind::SessionExpired)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("source", &self.source.as_ref().map(|s| s.to_string()))
            .finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(s) = &self.source {
            write!(f, ": {s}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|s| s.as_ref() as &(dyn std::error::Error + 'static))
    }
}

/// `Result` with the client's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {

    #[test]
    fn url_elicitation_required_surfaces_its_elicitations() {
        let data = serde_json::json!({"elicitations": [
            {"mode": "url", "elicitationId": "e1", "url": "https://a.example/x", "message": "Connect"},
            {"mode": "form", "message": "not a URL one", "requestedSchema": {"type": "object", "properties": {}}},
            "garbage",
        ]});
        let e = Error::protocol(
            ErrorObject::new(
                ferromcp_protocol::ErrorCode::URL_ELICITATION_REQUIRED,
                "needs it",
            )
            .with_data(data.clone()),
        );
        assert!(e.is_url_elicitation_required());
        let u = e.url_elicitations();
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].url, "https://a.example/x");
        assert_eq!(u[0].elicitation_id.as_deref(), Some("e1"));
        // Another code with the same data is not one.
        let other = Error::protocol(
            ErrorObject::new(ferromcp_protocol::ErrorCode::INTERNAL_ERROR, "x").with_data(data),
        );
        assert!(!other.is_url_elicitation_required());
        assert!(other.url_elicitations().is_empty());
    }

    use super::*;
    use ferromcp_protocol::ErrorCode;

    #[test]
    fn peer_errors_are_distinguishable_from_local_ones() {
        // ERR-07
        let peer = Error::protocol(ErrorObject::new(ErrorCode::INVALID_PARAMS, "bad"));
        assert!(peer.is_protocol() && !peer.is_local());
        assert_eq!(
            peer.rpc_error().map(|e| e.code),
            Some(ErrorCode::INVALID_PARAMS)
        );
        let t = Error::new(
            ErrorKind::Timeout {
                elapsed: Duration::from_secs(1),
            },
            "timed out",
        );
        assert!(t.is_timeout() && t.is_local() && t.rpc_error().is_none());
        let h = Error::http_status(503, "unavailable");
        assert!(h.is_transport());
        assert_eq!(h.status(), Some(503));
    }
}
