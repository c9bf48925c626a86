//! JSON-RPC error codes, the wire error object, and the single table from
//! JSON-RPC code to HTTP status.
// ERR-*; the table is the handbook's Appendix A.
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// A JSON-RPC error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    // LADDER-04
    /// -32700: the body is not valid JSON.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    // LADDER-05
    /// -32600: not a valid single JSON-RPC request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    // ERR-08
    /// -32601: unknown method, or one gated on an unadvertised capability.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    // META-06
    /// -32602: invalid params, including a missing `_meta` envelope.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// -32603: internal error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    // LEGACY-08, ERR-05
    /// -32002: resource not found on handshake-era revisions only.
    pub const LEGACY_RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    // LADDER-07/09/11, HDR-20
    /// -32020: HTTP headers disagree with the body.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    // META-09
    /// -32021: the request lacks a client capability it needs.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    // VER-02
    /// -32022: unsupported or unknown protocol version.
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    // ERR-05
    /// -32042: 2025-11-25 URL elicitation required (never on the modern wire).
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);

    // The handbook's Appendix A; LADDER-12 leaves -32603 open.
    /// The HTTP status a modern server answers with when this code is the
    /// outcome of a request. This is the ONE table:
    /// ladder rejections and handler errors both go through it.
    ///
    /// -32603 maps to 200 (our choice, as in the Python SDK: an internal failure is
    /// an in-band JSON-RPC error, not an HTTP failure; the specification leaves it open).
    pub const fn http_status(self) -> u16 {
        match self.0 {
            -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => 400,
            -32601 => 404,
            _ => 200,
        }
    }

    /// True for the codes JSON-RPC 2.0 itself defines.
    pub const fn is_standard(self) -> bool {
        matches!(self.0, -32700 | -32600 | -32601 | -32602 | -32603)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of a JSON-RPC error response: plain data, nothing more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    // BASE-10
    /// One concise sentence.
    pub message: String,
    /// Optional structured details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// A new error object without data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700 Parse error.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    /// -32600 Invalid Request.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: {detail}"),
        )
    }

    /// -32601 Method not found.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// -32602 Invalid params.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(
            ErrorCode::INVALID_PARAMS,
            format!("Invalid params: {detail}"),
        )
    }

    /// -32603 Internal error.
    pub fn internal(detail: impl fmt::Display) -> Self {
        Self::new(
            ErrorCode::INTERNAL_ERROR,
            format!("Internal error: {detail}"),
        )
    }

    // HDR-20
    /// -32020 HeaderMismatch (the message names the header).
    pub fn header_mismatch(detail: impl fmt::Display) -> Self {
        Self::new(
            ErrorCode::HEADER_MISMATCH,
            format!("Header mismatch: {detail}"),
        )
    }

    /// -32021 MissingRequiredClientCapability with `data.requiredCapabilities`
    /// (a `ClientCapabilities`-shaped object such as `{"sampling":{}}`).
    pub fn missing_client_capability(required: Value) -> Self {
        Self::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability",
        )
        .with_data(serde_json::json!({ "requiredCapabilities": required }))
    }

    /// -32022 UnsupportedProtocolVersion with `data {supported, requested}`.
    pub fn unsupported_version<'a>(
        requested: &str,
        supported: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let supported: Vec<&str> = supported.into_iter().collect();
        Self::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            format!("Unsupported protocol version: {requested}"),
        )
        .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
    }

    /// The HTTP status for this error (see [`ErrorCode::http_status`]).
    pub fn http_status(&self) -> u16 {
        self.code.http_status()
    }
}

impl std::error::Error for ErrorObject {}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appendix_a_status_table() {
        for (code, status) in [
            (-32700, 400),
            (-32600, 400),
            (-32601, 404),
            (-32602, 400),
            (-32603, 200),
            (-32020, 400),
            (-32021, 400),
            (-32022, 400),
            (-32002, 200),
            (42, 200),
        ] {
            assert_eq!(ErrorCode(code).http_status(), status, "code {code}");
        }
    }

    #[test]
    fn typed_error_data_shapes() {
        let e = ErrorObject::unsupported_version("1999-01-01", ["2026-07-28", "2025-11-25"]);
        assert_eq!(
            serde_json::to_value(&e).unwrap_or_default(),
            serde_json::json!({"code":-32022,"message":"Unsupported protocol version: 1999-01-01",
                "data":{"supported":["2026-07-28","2025-11-25"],"requested":"1999-01-01"}})
        );
        let e = ErrorObject::missing_client_capability(serde_json::json!({"sampling":{}}));
        assert_eq!(
            e.data,
            Some(serde_json::json!({"requiredCapabilities":{"sampling":{}}}))
        );
    }
}
