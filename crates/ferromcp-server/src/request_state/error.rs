//! Why a token was refused or could not be sealed, and the wire error
//! for each.

use std::fmt;

use ferromcp_protocol::{ErrorCode, ErrorObject};

use super::INVALID_STATE_MESSAGE;

// MRTR-09
/// A bound claim that differed between the token and the retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BindingField {
    /// The JSON-RPC method.
    Method,
    /// The tool/prompt name or resource URI.
    Target,
    /// The arguments digest.
    Arguments,
    /// The authenticated principal (or its presence).
    Principal,
    /// The sealer's audience (or its presence).
    Audience,
}

impl fmt::Display for BindingField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Method => "method",
            Self::Target => "target",
            Self::Arguments => "arguments",
            Self::Principal => "principal",
            Self::Audience => "audience",
        })
    }
}

// MRTR-08
/// Why an echoed `requestState` was refused.
///
/// Every variant is answered on the wire with the same error
/// ([`StateError::to_error_object`]); `Display` gives the log-only reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StateError {
    /// Too long, wrong prefix or shape, non-canonical base64url, too short, or
    /// an envelope this version cannot read.
    Malformed,
    /// The key id names no key in the ring (rotated out, or another server).
    UnknownKey,
    /// The authentication tag does not verify: the token was modified.
    Tampered,
    /// The token's expiry (plus the skew allowance) has passed.
    Expired,
    /// The token claims to be issued later than now plus the skew allowance.
    NotYetValid,
    /// The token is authentic but bound to a different request or principal.
    Mismatch {
        /// The first claim that differed.
        field: BindingField,
    },
    /// Single use is on and this token was already opened.
    Replayed,
    /// Single use is on and its record is full of unexpired tokens.
    ReplayStoreFull,
    /// Single use is on and its store could not answer (unreachable or timed
    /// out). Not the client's fault: the token was not recorded as used,
    /// and the same retry may succeed later.
    StoreUnavailable,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed => f.write_str("malformed requestState"),
            Self::UnknownKey => f.write_str("requestState sealed under an unknown key"),
            Self::Tampered => f.write_str("requestState failed authentication"),
            Self::Expired => f.write_str("requestState expired"),
            Self::NotYetValid => f.write_str("requestState issued in the future"),
            Self::Mismatch { field } => write!(f, "requestState bound to a different {field}"),
            Self::Replayed => f.write_str("requestState already used"),
            Self::ReplayStoreFull => {
                f.write_str("requestState refused: the single-use record is full")
            }
            Self::StoreUnavailable => {
                f.write_str("requestState refused: the single-use store is unavailable")
            }
        }
    }
}

impl std::error::Error for StateError {}

impl StateError {
    // MRTR-08 POLICY
    /// The wire error: -32602 "Invalid or expired requestState" with
    /// `data: {"reason": "invalid_request_state"}` for every variant but
    /// [`StateError::StoreUnavailable`] (as the Python SDK).
    /// The specific reason is not included; log `self` instead. A wrong or
    /// unknown key, a tampered token and a replay all look the same.
    ///
    /// [`StateError::StoreUnavailable`] is -32603 "Service temporarily
    /// unavailable" with `data: {"reason": "state_store_unavailable"}`. The
    /// server's transports answer that variant (known from the type, not
    /// from this object) on HTTP with 503 and `Retry-After`
    /// ([`crate::single_use::RETRY_AFTER_SECS`]).
    pub fn to_error_object(&self) -> ErrorObject {
        if self.is_store_unavailable() {
            return store_unavailable_error();
        }
        ErrorObject::new(ErrorCode::INVALID_PARAMS, INVALID_STATE_MESSAGE)
            .with_data(serde_json::json!({ "reason": "invalid_request_state" }))
    }

    /// True when the single-use store could not answer (retryable).
    pub fn is_store_unavailable(&self) -> bool {
        matches!(self, Self::StoreUnavailable)
    }

    /// True when a single-use token was presented again.
    pub fn is_replayed(&self) -> bool {
        matches!(self, Self::Replayed)
    }
}

fn store_unavailable_error() -> ErrorObject {
    ErrorObject::new(ErrorCode::INTERNAL_ERROR, "Service temporarily unavailable")
        .with_data(serde_json::json!({ "reason": "state_store_unavailable" }))
}

/// Why [`StateSealer::seal`](super::StateSealer::seal) could not produce a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SealError {
    /// The token would exceed the sealer's maximum token length, so the
    /// retry carrying it would be refused.
    TooLarge {
        /// The length the token would have.
        len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The operating system's random number generator failed.
    Rng,
    /// The AEAD refused to encrypt (only for absurdly large inputs).
    Crypto,
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { len, max } => {
                write!(f, "sealed requestState would be {len} bytes (max {max})")
            }
            Self::Rng => f.write_str("the system random number generator failed"),
            Self::Crypto => f.write_str("requestState encryption failed"),
        }
    }
}

impl std::error::Error for SealError {}

impl SealError {
    /// The wire error: -32603 "Internal error" without details (the reason
    /// belongs in the server log).
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(ErrorCode::INTERNAL_ERROR, "Internal error")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn error_objects() {
        for e in [
            StateError::Malformed,
            StateError::UnknownKey,
            StateError::Tampered,
            StateError::Expired,
            StateError::NotYetValid,
            StateError::Mismatch {
                field: BindingField::Principal,
            },
        ] {
            let obj = e.to_error_object();
            assert_eq!(obj.code, ErrorCode::INVALID_PARAMS);
            assert_eq!(obj.message, "Invalid or expired requestState");
            assert!(!e.to_string().is_empty());
        }
        assert_eq!(
            StateError::Mismatch {
                field: BindingField::Arguments
            }
            .to_string(),
            "requestState bound to a different arguments"
        );
        let obj = SealError::Rng.to_error_object();
        assert_eq!(obj.code, ErrorCode::INTERNAL_ERROR);
    }
}
