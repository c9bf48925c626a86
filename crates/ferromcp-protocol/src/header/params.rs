//! `Mcp-Param-*` headers: client emission and server validation,
//! both driven by one [`ParamHeaderMap`].
//!
//! # Rendering (shared by both sides)
//!
//! The schema kind decides how an argument is rendered ([`ParamKind::render`]):
//!
//! - `string`: a JSON string, as-is;
//! - `boolean`: a JSON boolean, as `true` / `false`;
//! - `integer`: a JSON number with no fractional part, in plain decimal
//!   (`42`, `-7`). An integral float such as `42.0` (a valid JSON Schema
//!   integer) renders as `42`. Integers outside the JS safe range are
//!   rendered exactly, never rounded.
//!
//! `null` renders as nothing (absent). A value of the wrong
//! JSON type for its kind (a number for a `string` property, `3.5` for an
//! `integer` one, an object, …) has no rendering: the client omits the
//! header, and the server, which sees a non-null body value, rejects the
//! request with -32020 whatever header arrives, because no header can
//! mirror it (fail closed). Such a call violates the tool's schema
//! anyway.
//!
//! # Server comparison
//!
//! After OWS trimming and decoding, strings
//! compare exactly and booleans must be exactly `true` / `false`. Integers
//! compare numerically: the header must match `-?[0-9]+(\.[0-9]+)?` with an
//! all-zero fraction, so `42.0`, `042` and `-0` are accepted as 42, 42 and
//! 0 (the requirement's regex admits leading zeros; the value is what
//! counts), while `+42`, `4.2e1`, `42.5`, `0x2A` and surrounding spaces
//! never match. The comparison is exact in `i128`, with no float round-trip.
// HDR-15, HDR-16…HDR-20, HDR-15/HDR-17, HDR-16, HDR-18, HDR-05, HDR-09, HDR-10; handbook Appendix C.5
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use serde_json::{Map, Number, Value};
use std::borrow::Cow;

use super::codec::{DecodeError, is_plain_header_value, try_decode_header_value, wrap_base64};
use super::x_mcp_header::{HeaderParam, ParamHeaderMap, ParamKind};
use super::{HeaderList, trim_ows};
use crate::error::ErrorObject;

/// Longest header or body value echoed in an error message, in chars.
const MAX_ECHO_CHARS: usize = 64;

impl ParamKind {
    /// The header text (before [`encode_header_value`](super::codec::encode_header_value))
    /// for `value`, or `None` when nothing is mirrored: `null`, or a value
    /// of the wrong JSON type for this kind (see the [module docs](self)).
    pub fn render(self, value: &Value) -> Option<Cow<'_, str>> {
        match (self, value) {
            (ParamKind::String, Value::String(s)) => Some(Cow::Borrowed(s.as_str())),
            (ParamKind::Boolean, Value::Bool(b)) => Some(Cow::Borrowed(bool_text(*b))),
            (ParamKind::Integer, Value::Number(n)) => {
                integral_value(n).map(|i| Cow::Owned(i.to_string()))
            }
            _ => None,
        }
    }
}

/// `true` / `false`.
fn bool_text(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// The exact value of a JSON number with no fractional part, or `None`
/// (fractional, or a float too large for `i128`).
pub fn integral_value(n: &Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    // 2^127: every integral f64 of smaller magnitude converts to i128 exactly.
    const LIMIT: f64 = 170_141_183_460_469_231_731_687_303_715_884_105_728.0;
    let f = n.as_f64()?;
    if f.is_finite() && f.fract() == 0.0 && f.abs() < LIMIT {
        Some(f as i128)
    } else {
        None
    }
}

// HDR-18
/// Parses a header integer: `-?[0-9]+(\.[0-9]+)?` whose fraction
/// (if any) is all zeros. `None` for anything else, including exponent
/// forms, a `+` sign, whitespace, a non-zero fraction and values beyond
/// `i128`.
pub fn parse_canonical_integer(s: &str) -> Option<i128> {
    let (negative, unsigned) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (int_part, fraction) = match unsigned.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (unsigned, None),
    };
    if int_part.is_empty() || !int_part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if let Some(f) = fraction {
        if f.is_empty() || !f.bytes().all(|b| b == b'0') {
            return None;
        }
    }
    let mut value: i128 = 0;
    for b in int_part.bytes() {
        value = value.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    // `value` is in 0..=i128::MAX, so negation cannot overflow.
    Some(if negative { -value } else { value })
}

/// Encodes rendered text without copying it again when it is already plain.
fn encode_rendered(text: Cow<'_, str>) -> String {
    if is_plain_header_value(&text) {
        text.into_owned()
    } else {
        wrap_base64(text.as_bytes())
    }
}

impl ParamHeaderMap {
    // HDR-15
    /// The `Mcp-Param-*` headers a client sends for a `tools/call` over HTTP,
    /// as `(header name, encoded value)` pairs in path order.
    ///
    /// For each annotation the argument is read at its exact `properties`
    /// path; absent, `null` or wrong-typed arguments emit nothing (see the
    /// [module docs](self)). The name is `Mcp-Param-` plus the annotation
    /// exactly as written (`Method` → `Mcp-Param-Method`); the value is
    /// encoded with [`encode_header_value`](super::codec::encode_header_value).
    pub fn emit(&self, arguments: Option<&Map<String, Value>>) -> Vec<(String, String)> {
        let Some(arguments) = arguments else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for param in self {
            let Some(text) = param.argument(arguments).and_then(|v| param.kind.render(v)) else {
                continue;
            };
            out.push((param.header_name(), encode_rendered(text)));
        }
        out
    }

    // HDR-16…HDR-20, LADDER-11, HDR-19, HDR-17, HDR-16, HDR-18, HDR-09, HDR-10, HDR-20
    /// Server-side check of the `Mcp-Param-*` headers of a `tools/call`
    /// against its arguments.
    ///
    /// `arguments` is `params.arguments` (`None` when absent or not an
    /// object); `headers` is the raw header list, duplicates included. Only
    /// headers named `Mcp-Param-<annotation>` (case-insensitively) are
    /// recognized; any other `Mcp-Param-*` header is ignored. For each
    /// annotation:
    ///
    /// - more than one recognized header line → mismatch;
    /// - argument absent or `null` → the header must be absent (our choice, as in the Python SDK);
    /// - argument present → exactly one header whose trimmed, decoded
    ///   value equals the argument; a value with invalid
    ///   characters or a malformed `=?base64?…?=` never matches.
    ///
    /// The first failure is returned as -32020 naming the header.
    /// Callers skip this check when the tool's schema is unavailable or has
    /// an invalid annotation, i.e. when no map could be built.
    pub fn validate(
        &self,
        arguments: Option<&Map<String, Value>>,
        headers: &dyn HeaderList,
    ) -> Result<(), ErrorObject> {
        for param in self {
            let body = arguments
                .and_then(|a| param.argument(a))
                .filter(|v| !v.is_null());
            let mut count = 0usize;
            let mut first = Ok(());
            headers.visit(&mut |name, raw| {
                if param.matches_header_name(name) {
                    count += 1;
                    if count == 1 {
                        first = check_header(param, body, trim_ows(raw));
                    }
                }
            });
            match (count, body) {
                (0, None) => {}
                (0, Some(value)) => return Err(missing(param, value)),
                (1, _) => first?,
                _ => {
                    return Err(ErrorObject::header_mismatch(format_args!(
                        "duplicate {} header",
                        HeaderName(param)
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Checks the single recognized header line of `param` (already trimmed).
fn check_header(param: &HeaderParam, body: Option<&Value>, raw: &[u8]) -> Result<(), ErrorObject> {
    let header = HeaderName(param);
    let Some(value) = body else {
        return Err(ErrorObject::header_mismatch(format_args!(
            "{header} header is present but argument '{}' is absent or null",
            dotted(&param.path)
        )));
    };
    let decoded = try_decode_header_value(raw).map_err(|e| match e {
        DecodeError::InvalidCharacters => ErrorObject::header_mismatch(format_args!(
            "{header} header value contains invalid characters"
        )),
        DecodeError::InvalidBase64 | DecodeError::InvalidUtf8 => {
            ErrorObject::header_mismatch(format_args!("invalid {header} header encoding ({e})"))
        }
    })?;
    let matches = match (param.kind, value) {
        (ParamKind::String, Value::String(s)) => *decoded == **s,
        (ParamKind::Boolean, Value::Bool(b)) => *decoded == *bool_text(*b),
        (ParamKind::Integer, Value::Number(n)) => match integral_value(n) {
            Some(expected) => parse_canonical_integer(&decoded) == Some(expected),
            None => return Err(unmirrorable(param, value)),
        },
        _ => return Err(unmirrorable(param, value)),
    };
    if matches {
        Ok(())
    } else {
        Err(ErrorObject::header_mismatch(format_args!(
            "{header} header value '{}' does not match body value '{}'",
            Echo(&decoded),
            Echo(&body_text(value)),
        )))
    }
}

/// The error for a body value with no header but a present argument.
fn missing(param: &HeaderParam, value: &Value) -> ErrorObject {
    if param.kind.render(value).is_none() {
        return unmirrorable(param, value);
    }
    ErrorObject::header_mismatch(format_args!(
        "missing {} header for argument '{}'",
        HeaderName(param),
        dotted(&param.path)
    ))
}

/// The error for a non-null argument of the wrong type for its kind.
fn unmirrorable(param: &HeaderParam, value: &Value) -> ErrorObject {
    let found = match value {
        Value::Number(n) if integral_value(n).is_some() => "an integer",
        Value::Number(_) => "a non-integer number",
        Value::String(_) => "a string",
        Value::Bool(_) => "a boolean",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
        Value::Null => "null",
    };
    ErrorObject::header_mismatch(format_args!(
        "{} header cannot mirror argument '{}': expected {}, found {found}",
        HeaderName(param),
        dotted(&param.path),
        param.kind.type_name(),
    ))
}

/// The body value as text for messages.
fn body_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// A property path as `a.b.c`, for messages.
fn dotted(path: &[String]) -> String {
    path.join(".")
}

/// Displays `Mcp-Param-<name>` without allocating.
struct HeaderName<'a>(&'a HeaderParam);

impl std::fmt::Display for HeaderName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(super::MCP_PARAM_PREFIX)?;
        f.write_str(&self.0.name)
    }
}

/// Displays untrusted text escaped and truncated to [`MAX_ECHO_CHARS`].
struct Echo<'a>(&'a str);

impl std::fmt::Display for Echo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut chars = self.0.chars();
        for c in chars.by_ref().take(MAX_ECHO_CHARS) {
            write!(f, "{}", c.escape_debug())?;
        }
        if chars.next().is_some() {
            f.write_str("…")?;
        }
        Ok(())
    }
}
