//! JSON-RPC 2.0 framing.
//!
//! Decoding is a single borrowed pass: the body is parsed into a
//! [`Message`] whose `params` / `result` stay as raw JSON slices of the input
//! ([`RawValue`]), so that params can later be decoded straight into the
//! type the `method` names (see [`crate::method`]). There is no untagged
//! enum of every message: the shape is classified explicitly by which
//! members are present.
//!
//! Rules enforced here:
//! - invalid JSON → -32700, even when a data error comes first;
//! - an array body (batch) or any non-object → -32600;
//! - `"jsonrpc"` must be exactly `"2.0"`;
//! - ids are strings or integers, preserved exactly; `null`, fractions and
//!   integers outside the 64-bit range are rejected;
//! - a message with both `result` and `error` is invalid;
//! - `params`, when present, must be an object (every MCP method takes one).
// BASE-*, LADDER-04, BASE-09, LADDER-05, BASE-02
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use crate::error::ErrorObject;
use crate::types::tagged::Str;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// The JSON-RPC version string.
pub const JSONRPC_VERSION: &str = "2.0";

/// A JSON-RPC request id: a string or an integer, kept exactly as sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// An integer id (`i64` or `u64` range).
    Number(IntegerId),
    /// A string id.
    String(Arc<str>),
}

/// An integer id in the signed or unsigned 64-bit range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntegerId {
    /// Fits `i64`.
    Signed(i64),
    /// Above `i64::MAX`.
    Unsigned(u64),
}

impl RequestId {
    /// An integer id.
    pub fn number(n: i64) -> Self {
        Self::Number(IntegerId::Signed(n))
    }
    /// A string id.
    pub fn string(s: impl Into<Arc<str>>) -> Self {
        Self::String(s.into())
    }
    /// The id as a JSON value (same JSON type as on the wire).
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            Self::Number(IntegerId::Signed(n)) => (*n).into(),
            Self::Number(IntegerId::Unsigned(n)) => (*n).into(),
            Self::String(s) => serde_json::Value::String(s.to_string()),
        }
    }
    /// Reads an id from a JSON value; `None` unless a string or an integer.
    pub fn from_value(v: &serde_json::Value) -> Option<Self> {
        match v {
            serde_json::Value::String(s) => Some(Self::string(s.as_str())),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Some(Self::number(i))
                } else {
                    n.as_u64().map(|u| Self::Number(IntegerId::Unsigned(u)))
                }
            }
            _ => None,
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        Self::number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        Self::string(s)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(IntegerId::Signed(n)) => write!(f, "{n}"),
            Self::Number(IntegerId::Unsigned(n)) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(IntegerId::Signed(n)) => s.serialize_i64(*n),
            Self::Number(IntegerId::Unsigned(n)) => s.serialize_u64(*n),
            Self::String(v) => s.serialize_str(v),
        }
    }
}

/// What an `id` member held, before validation.
pub(crate) enum IdField {
    Valid(RequestId),
    Invalid(&'static str),
}

struct IdVisitor;

impl<'de> Visitor<'de> for IdVisitor {
    type Value = IdField;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or integer id")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<IdField, E> {
        Ok(IdField::Valid(RequestId::number(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<IdField, E> {
        Ok(IdField::Valid(match i64::try_from(v) {
            Ok(i) => RequestId::number(i),
            Err(_) => RequestId::Number(IntegerId::Unsigned(v)),
        }))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<IdField, E> {
        Ok(IdField::Invalid(
            "id must be a string or an integer in the 64-bit range",
        ))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<IdField, E> {
        Ok(IdField::Valid(RequestId::string(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<IdField, E> {
        Ok(IdField::Invalid("id must not be null"))
    }
    fn visit_none<E: de::Error>(self) -> Result<IdField, E> {
        Ok(IdField::Invalid("id must not be null"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<IdField, E> {
        Ok(IdField::Invalid("id must be a string or an integer"))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<IdField, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(IdField::Invalid("id must be a string or an integer"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<IdField, A::Error> {
        while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(IdField::Invalid("id must be a string or an integer"))
    }
}

impl<'de> Deserialize<'de> for IdField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IdVisitor)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match IdField::deserialize(d)? {
            IdField::Valid(id) => Ok(id),
            IdField::Invalid(why) => Err(de::Error::custom(why)),
        }
    }
}

/// A request: has `method` and `id`.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The id to echo.
    pub id: RequestId,
    /// The method name.
    pub method: Cow<'a, str>,
    /// Raw params object, if present.
    pub params: Option<&'a RawValue>,
}

/// A notification: has `method` and no `id` member.
#[derive(Debug, Clone)]
pub struct Notification<'a> {
    /// The method name.
    pub method: Cow<'a, str>,
    /// Raw params object, if present.
    pub params: Option<&'a RawValue>,
}

/// A response: `id` plus exactly one of `result` / `error`.
#[derive(Debug, Clone)]
pub struct Response<'a> {
    /// The id being answered; `None` when the peer sent `"id": null`.
    pub id: Option<RequestId>,
    /// The raw result, or the error object.
    pub outcome: Result<&'a RawValue, ErrorObject>,
}

/// One decoded JSON-RPC message, borrowing from the input bytes.
#[derive(Debug, Clone)]
pub enum Message<'a> {
    /// A request.
    Request(Request<'a>),
    /// A notification.
    Notification(Notification<'a>),
    /// A response (result or error).
    Response(Response<'a>),
}

/// Why a body could not be decoded; carries the error to send back.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeError {
    /// The JSON-RPC error (-32700 or -32600).
    pub error: ErrorObject,
    // BASE-05
    /// The request id, when it could be read (echo it).
    pub id: Option<RequestId>,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for DecodeError {}

/// Every member a JSON-RPC message may have, each optional; classification
/// happens after parsing.
struct Envelope<'a> {
    jsonrpc: Option<Cow<'a, str>>,
    jsonrpc_invalid: bool,
    id: Option<IdField>,
    method: Option<Cow<'a, str>>,
    method_invalid: bool,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

/// A string member that may turn out not to be a string.
pub(crate) enum MaybeStr<'a> {
    Str(Cow<'a, str>),
    NotStr,
}

impl<'de: 'a, 'a> Deserialize<'de> for MaybeStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Held raw, so that a string the JSON grammar accepts but Unicode
        // does not (a lone surrogate escape) is a data error (-32600), not a
        // syntax error. Without escapes the text between the quotes is the
        // string itself: borrowed, no second parse.
        let raw = <&'de RawValue>::deserialize(d)?;
        let text = raw.get();
        let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
            return Ok(MaybeStr::NotStr);
        };
        if !inner.contains('\\') {
            return Ok(MaybeStr::Str(Cow::Borrowed(inner)));
        }
        serde_json::from_str::<String>(text)
            .map(|s| MaybeStr::Str(Cow::Owned(s)))
            .map_err(de::Error::custom)
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
        let mut env = Envelope {
            jsonrpc: None,
            jsonrpc_invalid: false,
            id: None,
            method: None,
            method_invalid: false,
            params: None,
            result: None,
            error: None,
        };
        while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
            match &*key {
                "jsonrpc" => {
                    dup(env.jsonrpc.is_some() || env.jsonrpc_invalid, "jsonrpc")?;
                    match map.next_value::<MaybeStr<'de>>()? {
                        MaybeStr::Str(s) => env.jsonrpc = Some(s),
                        MaybeStr::NotStr => env.jsonrpc_invalid = true,
                    }
                }
                "id" => {
                    dup(env.id.is_some(), "id")?;
                    env.id = Some(map.next_value::<IdField>()?);
                }
                "method" => {
                    dup(env.method.is_some() || env.method_invalid, "method")?;
                    match map.next_value::<MaybeStr<'de>>()? {
                        MaybeStr::Str(s) => env.method = Some(s),
                        MaybeStr::NotStr => env.method_invalid = true,
                    }
                }
                "params" => {
                    dup(env.params.is_some(), "params")?;
                    env.params = Some(map.next_value()?);
                }
                "result" => {
                    dup(env.result.is_some(), "result")?;
                    env.result = Some(map.next_value()?);
                }
                "error" => {
                    dup(env.error.is_some(), "error")?;
                    env.error = Some(map.next_value()?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(env)
    }
}

fn dup<E: de::Error>(seen: bool, name: &'static str) -> Result<(), E> {
    if seen {
        Err(E::duplicate_field(name))
    } else {
        Ok(())
    }
}

/// Decodes one JSON-RPC message from `bytes`.
///
/// Batches (arrays) are rejected with -32600: MCP forbids them on every
/// revision from 2025-06-18 on; a 2025-03-26 peer that batches is served by
/// [`split_batch`] at the transport, never by this function.
pub fn decode_message(bytes: &[u8]) -> Result<Message<'_>, DecodeError> {
    let first = bytes
        .iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if first != Some(b'{') {
        // Not an object: decide between -32700 and -32600 by whether it is JSON at all.
        return Err(match serde_json::from_slice::<IgnoredAny>(bytes) {
            Err(e) => parse_error(e),
            Ok(_) if first == Some(b'[') => invalid(None, "batch arrays are not supported"),
            Ok(_) => invalid(None, "a JSON-RPC message must be an object"),
        });
    }
    // Valid UTF-8 (the norm) is checked once here and parsed as `str`, so
    // the raw members (`params`, …) are not validated again one by one.
    let parsed = match std::str::from_utf8(bytes) {
        Ok(text) => {
            let mut de = serde_json::Deserializer::from_str(text);
            de.deserialize_map(EnvelopeVisitor)
                .and_then(|e| de.end().map(|_| e))
        }
        Err(_) => {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            de.deserialize_map(EnvelopeVisitor)
                .and_then(|e| de.end().map(|_| e))
        }
    };
    let env = match parsed {
        Ok(env) => env,
        Err(e) => {
            return Err(match e.classify() {
                serde_json::error::Category::Data => {
                    // A data error (e.g. a duplicate member) may precede a
                    // syntax error; invalid JSON must win (LADDER-04).
                    match serde_json::from_slice::<IgnoredAny>(bytes) {
                        Err(syntax) => parse_error(syntax),
                        Ok(_) => invalid(None, e),
                    }
                }
                _ => parse_error(e),
            });
        }
    };
    classify(env)
}

fn parse_error(e: serde_json::Error) -> DecodeError {
    DecodeError {
        error: ErrorObject::parse_error(e),
        id: None,
    }
}

fn invalid(id: Option<RequestId>, why: impl fmt::Display) -> DecodeError {
    DecodeError {
        error: ErrorObject::invalid_request(why),
        id,
    }
}

fn classify(env: Envelope<'_>) -> Result<Message<'_>, DecodeError> {
    let id_present = env.id.is_some();
    let (id, id_problem) = match env.id {
        None => (None, None),
        Some(IdField::Valid(id)) => (Some(id), None),
        Some(IdField::Invalid(why)) => (None, Some(why)),
    };
    if env.jsonrpc_invalid || env.jsonrpc.as_deref() != Some(JSONRPC_VERSION) {
        return Err(invalid(id, "\"jsonrpc\" must be \"2.0\""));
    }
    if env.method_invalid {
        return Err(invalid(id, "\"method\" must be a string"));
    }
    if let Some(method) = env.method {
        if env.result.is_some() || env.error.is_some() {
            return Err(invalid(
                id,
                "a request must not carry \"result\" or \"error\"",
            ));
        }
        if let Some(p) = env.params {
            if !p.get().starts_with('{') {
                return Err(invalid(id, "\"params\" must be an object"));
            }
        }
        if let Some(why) = id_problem {
            return Err(invalid(None, why));
        }
        return Ok(match id {
            Some(id) => Message::Request(Request {
                id,
                method,
                params: env.params,
            }),
            None => Message::Notification(Notification {
                method,
                params: env.params,
            }),
        });
    }
    // No method: must be a response.
    if env.params.is_some() {
        return Err(invalid(id, "a response must not carry \"params\""));
    }
    let outcome = match (env.result, env.error) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                id,
                "a response must not carry both \"result\" and \"error\"",
            ));
        }
        (None, None) => {
            return Err(invalid(id, "missing \"method\", \"result\" or \"error\""));
        }
        (Some(r), None) => {
            if !id_present || id_problem.is_some() {
                return Err(invalid(
                    None,
                    "a result response needs a string or integer id",
                ));
            }
            Ok(r)
        }
        (None, Some(e)) => {
            // An error response may carry `"id": null` (unreadable id); BASE-05.
            if id_problem.is_some_and(|w| w != "id must not be null") {
                return Err(invalid(
                    None,
                    "error response id must be a string, integer or null",
                ));
            }
            match serde_json::from_str::<ErrorObject>(e.get()) {
                Ok(obj) => Err(obj),
                Err(err) => return Err(invalid(id, format_args!("malformed \"error\": {err}"))),
            }
        }
    };
    Ok(Message::Response(Response { id, outcome }))
}

// LEGACY-24
/// For 2025-03-26 peers: splits a batch array into its raw
/// elements. Returns `None` when `bytes` is not a JSON array; `Some(Err)`
/// for invalid JSON or an empty batch.
pub fn split_batch(bytes: &[u8]) -> Option<Result<Vec<&RawValue>, DecodeError>> {
    let first = bytes
        .iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if first != Some(b'[') {
        return None;
    }
    Some(match serde_json::from_slice::<Vec<&RawValue>>(bytes) {
        Err(e) => Err(parse_error(e)),
        Ok(v) if v.is_empty() => Err(invalid(None, "empty batch")),
        Ok(v) => Ok(v),
    })
}

/// An outgoing request.
#[derive(Debug, Serialize)]
pub struct OutgoingRequest<'a, P: Serialize> {
    /// Always `"2.0"`.
    pub jsonrpc: &'static str,
    /// The id.
    pub id: &'a RequestId,
    /// The method.
    pub method: &'a str,
    /// The params.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<'a, P: Serialize> OutgoingRequest<'a, P> {
    /// A request with params.
    pub fn new(id: &'a RequestId, method: &'a str, params: Option<P>) -> Self {
        Self {
            jsonrpc: JSONRPC_VERSION,
            id,
            method,
            params,
        }
    }
}

/// An outgoing notification.
#[derive(Debug, Serialize)]
pub struct OutgoingNotification<'a, P: Serialize> {
    /// Always `"2.0"`.
    pub jsonrpc: &'static str,
    /// The method.
    pub method: &'a str,
    /// The params.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<'a, P: Serialize> OutgoingNotification<'a, P> {
    /// A notification.
    pub fn new(method: &'a str, params: Option<P>) -> Self {
        Self {
            jsonrpc: JSONRPC_VERSION,
            method,
            params,
        }
    }
}

/// An outgoing result response.
#[derive(Debug, Serialize)]
pub struct OutgoingResult<'a, R: Serialize> {
    /// Always `"2.0"`.
    pub jsonrpc: &'static str,
    /// The id being answered.
    pub id: &'a RequestId,
    /// The result object.
    pub result: R,
}

impl<'a, R: Serialize> OutgoingResult<'a, R> {
    /// A result response.
    pub fn new(id: &'a RequestId, result: R) -> Self {
        Self {
            jsonrpc: JSONRPC_VERSION,
            id,
            result,
        }
    }
}

/// An outgoing error response; `id` is written as `null` when unknown.
#[derive(Debug, Serialize)]
pub struct OutgoingError<'a> {
    /// Always `"2.0"`.
    pub jsonrpc: &'static str,
    /// The id being answered, or `null`.
    pub id: Option<&'a RequestId>,
    /// The error.
    pub error: &'a ErrorObject,
}

impl<'a> OutgoingError<'a> {
    /// An error response.
    pub fn new(id: Option<&'a RequestId>, error: &'a ErrorObject) -> Self {
        Self {
            jsonrpc: JSONRPC_VERSION,
            id,
            error,
        }
    }
}

/// Serializes any outgoing message to bytes. Serializing these types cannot
/// fail for well-formed values; a failure (a non-string map key in user
/// data) is reported as an internal error response instead of panicking.
pub fn to_vec<T: Serialize>(msg: &T) -> Vec<u8> {
    // Most messages (results of a call, notifications) fit in 256 bytes:
    // one allocation instead of growing from serde_json's 128.
    to_vec_with_capacity(msg, 256)
}

/// [`to_vec`] into a buffer of `capacity` bytes to start with: for large
/// messages whose size is known ahead (a page of pre-serialized
/// definitions), so the buffer is not grown and copied on the way.
pub fn to_vec_with_capacity<T: Serialize>(msg: &T, capacity: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity);
    match serde_json::to_writer(&mut out, msg) {
        Ok(()) => out,
        Err(e) => {
            let err = ErrorObject::internal(format_args!("failed to serialize message: {e}"));
            serde_json::to_vec(&OutgoingError::new(None, &err)).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn code(bytes: &str) -> i64 {
        match decode_message(bytes.as_bytes()) {
            Err(e) => e.error.code.0,
            Ok(_) => 0,
        }
    }

    #[test]
    fn classifies_the_three_shapes() {
        let m = decode_message(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#);
        assert!(
            matches!(m, Ok(Message::Request(ref r)) if r.id == RequestId::number(7) && r.method == "tools/list")
        );
        let m = decode_message(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#);
        assert!(matches!(m, Ok(Message::Notification(_))));
        let m = decode_message(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#);
        assert!(matches!(m, Ok(Message::Response(ref r)) if r.outcome.is_ok()));
        let m =
            decode_message(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#);
        assert!(matches!(
            m,
            Ok(Message::Response(Response {
                id: None,
                outcome: Err(_)
            }))
        ));
    }

    #[test]
    fn ids_are_preserved_exactly() {
        for (raw, out) in [
            ("0", "0"),
            ("-5", "-5"),
            ("9223372036854775807", "9223372036854775807"),
            ("18446744073709551615", "18446744073709551615"),
            (r#""abc""#, r#""abc""#),
            (r#""""#, r#""""#),
            (r#""\u00e9""#, "\"é\""),
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"m"}}"#);
            let Ok(Message::Request(r)) = decode_message(body.as_bytes()) else {
                panic!("{raw} did not decode");
            };
            assert_eq!(serde_json::to_string(&r.id).unwrap_or_default(), out);
        }
        // 1.0, 1e3, null, bool, object and out-of-range integers are rejected.
        for raw in [
            "1.0",
            "1e3",
            "null",
            "true",
            "{}",
            "[]",
            "18446744073709551616",
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"m"}}"#);
            assert_eq!(code(&body), -32600, "{raw}");
        }
    }

    #[test]
    fn invalid_shapes() {
        assert_eq!(code("{"), -32700);
        assert_eq!(code(""), -32700);
        assert_eq!(code("nope"), -32700);
        assert_eq!(code("[1,"), -32700);
        assert_eq!(code(r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#), -32600);
        assert_eq!(code("[]"), -32600);
        assert_eq!(code("5"), -32600);
        assert_eq!(code(r#""s""#), -32600);
        assert_eq!(code(r#"{"id":1,"method":"m"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":5}"#), -32600);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#),
            -32600
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}"#),
            -32600
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#),
            -32600
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0","result":{}}"#), -32600);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#),
            -32600
        );
        // Data error first, syntax error later: invalid JSON wins.
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m""#),
            -32700
        );
        // Invalid UTF-8 and lone surrogates.
        assert_eq!(
            decode_message(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}")
                .map_err(|e| e.error.code)
                .err(),
            Some(ErrorCode::PARSE_ERROR)
        );
        assert!(decode_message(br#"{"jsonrpc":"2.0","id":1,"method":"\ud800"}"#).is_err());
    }

    #[test]
    fn readable_id_is_echoed_on_invalid_request() {
        let e = decode_message(br#"{"jsonrpc":"1.0","id":"x","method":"m"}"#).err();
        assert_eq!(e.and_then(|e| e.id), Some(RequestId::string("x")));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let depth = 100_000;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":{}{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        // Framing skips params without recursion; decoding them into a
        // value then hits serde_json's recursion limit: an error, never a crash.
        match decode_message(body.as_bytes()) {
            Ok(Message::Request(r)) => {
                let p = r
                    .params
                    .map(|p| serde_json::from_str::<serde_json::Value>(p.get()).is_err());
                assert_eq!(p, Some(true));
            }
            other => panic!("unexpected {other:?}"),
        }
        let top = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","x":{}{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let _ = decode_message(top.as_bytes());
    }

    #[test]
    fn outgoing_shapes() {
        let id = RequestId::number(3);
        let s = String::from_utf8(to_vec(&OutgoingResult::new(&id, serde_json::json!({}))))
            .unwrap_or_default();
        assert_eq!(s, r#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
        let err = ErrorObject::method_not_found("x");
        let s = String::from_utf8(to_vec(&OutgoingError::new(None, &err))).unwrap_or_default();
        assert_eq!(
            s,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found: x"}}"#
        );
    }

    #[test]
    fn batches_split_for_legacy_peers() {
        let b = br#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]"#;
        assert_eq!(
            split_batch(b).map(|r| r.map(|v| v.len()).ok()),
            Some(Some(2))
        );
        assert!(split_batch(b"{}").is_none());
        assert!(matches!(split_batch(b"[]"), Some(Err(_))));
    }
}
