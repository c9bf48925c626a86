//! What serving one request resolves to, typed from where it is decided to
//! the transport's edge.
//!
//! A request is answered with a serialized result ([`Reply`]'s `Ok`), or it
//! fails ([`Failure`]): with a JSON-RPC error (whose HTTP status comes from
//! the one error table), or because a shared store the request needed could
//! not answer. The latter is not the client's fault and is retryable: HTTP
//! answers it with 503 and `Retry-After`. Middleware may also refuse a
//! caller whose token lacks a scope: HTTP answers that with 403 and the
//! middleware's `WWW-Authenticate` challenge. The kind travels as a type, so
//! no transport has to look inside an error's `data` to tell them apart.
// MRTR-09

use ferromcp_protocol::ErrorObject;

use crate::request_state::StateError;

/// A serialized JSON-RPC response, or why there is none.
pub(crate) type Reply = Result<bytes::Bytes, Failure>;

/// Why a request was answered without a result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// A JSON-RPC error, answered with the status of the error table.
    Error(ErrorObject),
    /// A shared store could not answer; nothing was recorded, and the same
    /// request may be sent again after `retry_after_secs`.
    Unavailable {
        /// The JSON-RPC error sent in the body.
        error: ErrorObject,
        /// The `Retry-After` an HTTP answer carries, in seconds.
        retry_after_secs: u32,
    },
    // AUTH-18
    /// The caller's token lacks a scope the request needs: HTTP answers
    /// 403 with `WWW-Authenticate: challenge`; other transports send the
    /// error alone.
    InsufficientScope {
        /// The JSON-RPC error sent in the body.
        error: ErrorObject,
        /// The `WWW-Authenticate` value of an HTTP answer.
        challenge: std::sync::Arc<str>,
    },
}

impl Failure {
    /// The JSON-RPC error the body carries, whatever the kind.
    pub(crate) fn error(&self) -> &ErrorObject {
        match self {
            Self::Error(e)
            | Self::Unavailable { error: e, .. }
            | Self::InsufficientScope { error: e, .. } => e,
        }
    }
}

impl From<ErrorObject> for Failure {
    fn from(e: ErrorObject) -> Self {
        Self::Error(e)
    }
}

// MRTR-08, MRTR-09
impl From<StateError> for Failure {
    /// A refused `requestState`: a store outage is retryable, every other
    /// reason is the one generic -32602.
    fn from(e: StateError) -> Self {
        let error = e.to_error_object();
        if e.is_store_unavailable() {
            Self::Unavailable {
                error,
                retry_after_secs: crate::single_use::RETRY_AFTER_SECS,
            }
        } else {
            Self::Error(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_state::SealError;
    use ferromcp_protocol::ErrorCode;

    fn retry_after_secs(f: &Failure) -> Option<u32> {
        match f {
            Failure::Error(_) | Failure::InsufficientScope { .. } => None,
            Failure::Unavailable {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
        }
    }

    #[test]
    fn only_a_store_outage_is_retryable() {
        // MRTR-09: the store outage keeps its wire error and gains the
        // retry hint as a type, not as something to find in `data`.
        let f = Failure::from(StateError::StoreUnavailable);
        assert_eq!(
            retry_after_secs(&f),
            Some(crate::single_use::RETRY_AFTER_SECS)
        );
        assert_eq!(f.error(), &StateError::StoreUnavailable.to_error_object());
        assert_eq!(f.error().code, ErrorCode::INTERNAL_ERROR);
        for e in [
            StateError::Replayed,
            StateError::Tampered,
            StateError::Expired,
            StateError::ReplayStoreFull,
        ] {
            let f = Failure::from(e);
            assert_eq!(retry_after_secs(&f), None, "{e}");
            assert_eq!(f.error().clone(), e.to_error_object(), "{e}");
        }
    }

    #[test]
    fn an_error_that_looks_like_an_outage_is_still_an_error() {
        // A handler's error with the same code and data as the store
        // outage is the handler's: the kind is not read from the data.
        let lookalike = StateError::StoreUnavailable.to_error_object();
        let f = Failure::from(lookalike.clone());
        assert_eq!(retry_after_secs(&f), None);
        assert_eq!(f.error().clone(), lookalike);
        assert_eq!(
            retry_after_secs(&Failure::from(SealError::Rng.to_error_object())),
            None
        );
    }
}
