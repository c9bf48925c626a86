//! Typed transport rejections: every way the HTTP transport refuses a
//! request before (or instead of) a handler, each with one fixed status.
//!
//! JSON-RPC errors that handlers and the ladder produce take their status
//! from [`ferromcp_protocol::ErrorCode::http_status`]; what only the transport
//! can refuse (a foreign `Host`, a body that is too large, a missing
//! session…) is a [`Rejection`], whose [`Rejection::status`] is the one
//! table for those. Both render the same way: an id-less JSON-RPC error
//! body (optional per spec, useful to clients).

use super::{McpBody, json_response};
use bytes::Bytes;
use ferromcp_protocol::jsonrpc::{OutgoingError, to_vec};
use ferromcp_protocol::{ErrorCode, ErrorObject};
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};

/// Why the transport refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// The request is for another path than the endpoint's.
    NotFound,
    /// HTTP/1.1 without `Host` (RFC 9112 §3.2).
    MissingHost,
    /// An HTTP/2 (or HTTP/3) request with neither `:authority` nor `Host`
    /// (RFC 9113 §8.3.1).
    MissingAuthority,
    /// An HTTP/2 (or HTTP/3) request whose `Host` differs from its
    /// `:authority` (RFC 9113 §8.3.1).
    HostDiffersFromAuthority,
    /// More than one `Host` line (RFC 9112 §3.2).
    DuplicateHost,
    /// A `Host` value that is no authority (RFC 9110 §7.2).
    InvalidHost,
    // SEC-04
    /// A host the origin policy does not serve.
    HostNotAllowed,
    // SEC-01
    /// A foreign `Origin`, or more than one.
    OriginNotAllowed,
    /// An HTTP method the endpoint does not serve; `Allow` lists those it does.
    MethodNotAllowed(&'static str),
    /// A POST whose `Content-Type` is not JSON.
    UnsupportedMediaType,
    /// `Accept` allows neither JSON nor SSE.
    NotAcceptable,
    /// `subscriptions/listen` without `Accept: text/event-stream`.
    ListenNeedsSse,
    /// A handshake-era GET stream without `Accept: text/event-stream`.
    GetNeedsSse,
    /// An HTTP/2 request with more header fields than `Limits::max_headers`.
    TooManyHeaders,
    /// The body is over `Limits::max_body_bytes`.
    BodyTooLarge,
    /// The body did not arrive within `Limits::body_read_timeout`.
    BodyTimedOut,
    /// The body could not be read.
    BodyUnreadable,
    /// The server is shutting down.
    ShuttingDown,
    /// `Limits::max_sessions` are open.
    TooManySessions,
    /// `Limits::max_listen_streams` are open.
    TooManySubscriptions,
    // LEGACY-13
    /// A handshake-era request without `Mcp-Session-Id`.
    MissingSessionId,
    // LEGACY-13, STATE-06
    /// An unknown, ended or foreign session.
    SessionNotFound,
    // LEGACY-11
    /// A session request with an invalid or unsupported
    /// `MCP-Protocol-Version`.
    UnsupportedProtocolVersion,
    // LEGACY-17
    /// A `Last-Event-ID` naming no stream of the session.
    UnknownLastEventId,
    /// The session already has its GET stream open.
    GetStreamOpen,
}

impl Rejection {
    /// The one status of each rejection.
    pub(crate) fn status(self) -> StatusCode {
        use Rejection::*;
        match self {
            NotFound | SessionNotFound => StatusCode::NOT_FOUND,
            MissingHost
            | MissingAuthority
            | HostDiffersFromAuthority
            | DuplicateHost
            | InvalidHost
            | BodyUnreadable
            | MissingSessionId
            | UnsupportedProtocolVersion
            | UnknownLastEventId => StatusCode::BAD_REQUEST,
            HostNotAllowed => StatusCode::MISDIRECTED_REQUEST,
            OriginNotAllowed => StatusCode::FORBIDDEN,
            MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            NotAcceptable | ListenNeedsSse | GetNeedsSse => StatusCode::NOT_ACCEPTABLE,
            BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            TooManyHeaders => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            BodyTimedOut => StatusCode::REQUEST_TIMEOUT,
            ShuttingDown | TooManySessions | TooManySubscriptions => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            GetStreamOpen => StatusCode::CONFLICT,
        }
    }

    /// The JSON-RPC code of the error body.
    pub(crate) fn code(self) -> ErrorCode {
        use Rejection::*;
        match self {
            NotFound => ErrorCode::METHOD_NOT_FOUND,
            BodyUnreadable => ErrorCode::PARSE_ERROR,
            ShuttingDown | TooManySessions | TooManySubscriptions => ErrorCode::INTERNAL_ERROR,
            _ => ErrorCode::INVALID_REQUEST,
        }
    }

    /// The message of the error body.
    pub(crate) fn message(self) -> &'static str {
        use Rejection::*;
        match self {
            NotFound => "Not Found",
            MissingHost => "Bad Request: HTTP/1.1 request without a Host header",
            MissingAuthority => {
                "Bad Request: HTTP/2 request with neither :authority nor Host (RFC 9113 section 8.3.1); send the server's host and port in :authority"
            }
            HostDiffersFromAuthority => {
                "Bad Request: the Host header differs from :authority (RFC 9113 section 8.3.1); send one authority, or the same in both"
            }
            DuplicateHost => "Bad Request: more than one Host header",
            InvalidHost => "Bad Request: invalid Host header",
            HostNotAllowed => {
                "Host not allowed: this server answers only the hosts its OriginPolicy allows (loopback by default, against DNS rebinding); serve another name with OriginPolicy::allow_host"
            }
            OriginNotAllowed => {
                "Origin not allowed: browsers may call this server only from the origins its OriginPolicy allows; add one with OriginPolicy::allow_origin"
            }
            MethodNotAllowed(_) => "Method Not Allowed",
            UnsupportedMediaType => "Content-Type must be application/json",
            NotAcceptable => "Accept must include application/json or text/event-stream",
            ListenNeedsSse => "subscriptions/listen requires Accept: text/event-stream",
            GetNeedsSse => "GET requires Accept: text/event-stream",
            BodyTooLarge => "Request body too large",
            TooManyHeaders => {
                "Request Header Fields Too Large: more header fields than the server's max_headers"
            }
            BodyTimedOut => "Request body not received in time",
            BodyUnreadable => "Request body could not be read",
            ShuttingDown => "Server shutting down",
            TooManySessions => "Too many sessions",
            TooManySubscriptions => "Too many open subscriptions",
            MissingSessionId => {
                "Bad Request: missing Mcp-Session-Id header. A 2026-07-28 request needs no session: send the MCP-Protocol-Version header and the protocol version in params._meta (\"io.modelcontextprotocol/protocolVersion\"). A 2025 client sends initialize first, then the Mcp-Session-Id it gets back"
            }
            SessionNotFound => {
                "Session not found: it ended or expired; send initialize again for a new one"
            }
            UnsupportedProtocolVersion => {
                "Bad Request: unsupported MCP-Protocol-Version (server/discover lists the supported versions)"
            }
            UnknownLastEventId => "Unknown Last-Event-ID",
            GetStreamOpen => "A GET stream is already open for this session",
        }
    }

    /// The response: the status, an id-less JSON-RPC error body, and `Allow`
    /// for 405.
    pub(crate) fn into_response(self) -> Response<McpBody> {
        self.into_response_saying(self.message())
    }

    /// Like [`Self::into_response`], with a more specific message.
    pub(crate) fn into_response_saying(self, message: &str) -> Response<McpBody> {
        let e = ErrorObject::new(self.code(), message);
        let mut r = json_response(
            self.status(),
            Bytes::from(to_vec(&OutgoingError::new(None, &e))),
        );
        if let Rejection::MethodNotAllowed(allow) = self {
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        r
    }
}

// Foreign type: this is an HTTP transport; `http`/`http-body` are the shared vocabulary of hyper,
// axum and tower, so it plugs into them without conversion.
impl From<Rejection> for Response<McpBody> {
    fn from(r: Rejection) -> Self {
        r.into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rejection_is_an_error_status_with_a_json_rpc_body() {
        use Rejection::*;
        for r in [
            NotFound,
            MissingHost,
            MissingAuthority,
            HostDiffersFromAuthority,
            DuplicateHost,
            InvalidHost,
            HostNotAllowed,
            OriginNotAllowed,
            MethodNotAllowed("POST"),
            UnsupportedMediaType,
            NotAcceptable,
            ListenNeedsSse,
            GetNeedsSse,
            TooManyHeaders,
            BodyTooLarge,
            BodyTimedOut,
            BodyUnreadable,
            ShuttingDown,
            TooManySessions,
            TooManySubscriptions,
            MissingSessionId,
            SessionNotFound,
            UnsupportedProtocolVersion,
            UnknownLastEventId,
            GetStreamOpen,
        ] {
            let resp = r.into_response();
            assert!(resp.status().is_client_error() || resp.status().is_server_error());
            assert_eq!(
                resp.headers()
                    .get(header::CONTENT_TYPE)
                    .map(|v| v.as_bytes()),
                Some(&b"application/json"[..])
            );
            assert_eq!(
                resp.headers().contains_key(header::ALLOW),
                matches!(r, MethodNotAllowed(_)),
                "{r:?}"
            );
        }
    }
}
