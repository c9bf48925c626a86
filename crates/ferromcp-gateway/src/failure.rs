//! Why a request to an upstream has no answer.

use crate::breaker::Refused;
use ferromcp_protocol::ErrorObject;

/// Why a request to an upstream has no answer.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Not connected (never was, or the connection was lost).
    Down,
    /// No answer within `timeoutMs`.
    Timeout,
    /// The upstream refused the gateway's credentials (HTTP 401/403).
    Auth(Option<u16>),
    /// The upstream answered with a JSON-RPC error.
    Rpc(ErrorObject),
    /// The connection failed (the child exited, the socket broke, …).
    Broken(String),
    /// Anything else (a malformed answer, …).
    Other(String),
    /// Refused by its circuit breaker, without reaching it.
    Open(Refused),
}
