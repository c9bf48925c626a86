//! The header value codec shared by `Mcp-Name` and `Mcp-Param-*`.
//!
//! A value travels *plain* when it is already a safe HTTP field value, and
//! otherwise as `=?base64?<B64>?=`, where `<B64>` is the canonical RFC 4648
//! standard-alphabet, `=`-padded base64 of its UTF-8 bytes.
//!
//! Encoding never fails. Decoding is strict: anything that is not exactly
//! what [`encode_header_value`] could have produced for *some* string is
//! "no value" (`None`), which never equals a body value, so a
//! server rejects it with -32020.
//!
//! The base64 is the crate's [`base64`](crate::base64) module, canonical in
//! both directions: [`base64_decode`] accepts exactly the strings
//! [`base64_encode`] produces.
// HDR-06…HDR-10, HDR-09

use std::borrow::Cow;
use std::fmt;

// HDR-07
/// Opening marker of an encoded value; exact and lowercase.
pub const SENTINEL_PREFIX: &str = "=?base64?";
// HDR-07
/// Closing marker of an encoded value; exact.
pub const SENTINEL_SUFFIX: &str = "?=";

pub use crate::base64::{
    decode as base64_decode, encode as base64_encode, encode_into as base64_encode_into,
    encoded_len as base64_encoded_len,
};

// HDR-10
/// True when `raw` contains only bytes RFC 9110 allows in a field value we
/// accept: visible ASCII 0x21–0x7E, SP and HTAB. `obs-text`
/// (0x80–0xFF), DEL and every other control byte are rejected. The empty
/// value is valid.
pub fn is_valid_field_value(raw: &[u8]) -> bool {
    raw.iter().all(|&b| matches!(b, 0x20..=0x7E | b'\t'))
}

// HDR-08
/// True when `value` starts with `=?base64?` and ends with `?=`.
///
/// This is the *encoder's* test and deliberately lets the markers overlap
/// (`"=?base64?="` counts), so no decoder, however it splits the markers,
/// can misread a plain value as an encoded one.
pub fn is_sentinel_shaped(value: &[u8]) -> bool {
    value.starts_with(SENTINEL_PREFIX.as_bytes()) && value.ends_with(SENTINEL_SUFFIX.as_bytes())
}

// HDR-06, HDR-08
/// True when [`encode_header_value`] sends `value` unchanged:
/// every char is 0x20–0x7E, the first and last are not a space, and the
/// value is not sentinel-shaped. The empty string is plain.
pub fn is_plain_header_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.iter().all(|b| (0x20..=0x7E).contains(b))
        && bytes.first() != Some(&b' ')
        && bytes.last() != Some(&b' ')
        && !is_sentinel_shaped(bytes)
}

// HDR-06, HDR-08; handbook Appendix C.8 (empty fields)
/// Encodes `value` for `Mcp-Name` / `Mcp-Param-*`.
///
/// Plain values are borrowed unchanged; anything else becomes
/// `=?base64?<standard padded base64 of the UTF-8 bytes>?=`. The result is
/// always a safe field value: only 0x20–0x7E, no leading or trailing space.
///
/// The empty string stays empty (the conformance suite expects an empty
/// header for `""`; note that some HTTP stacks drop
/// empty fields, which a server then reports as a missing header).
pub fn encode_header_value(value: &str) -> Cow<'_, str> {
    if is_plain_header_value(value) {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(wrap_base64(value.as_bytes()))
    }
}

/// `=?base64?<B64>?=` for `bytes`, unconditionally.
pub fn wrap_base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(
        SENTINEL_PREFIX.len() + base64_encoded_len(bytes.len()) + SENTINEL_SUFFIX.len(),
    );
    out.push_str(SENTINEL_PREFIX);
    base64_encode_into(bytes, &mut out);
    out.push_str(SENTINEL_SUFFIX);
    out
}

// HDR-09, HDR-10
/// Why a received header value has no decoded value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecodeError {
    // HDR-10
    /// A plain value contains a byte outside visible ASCII / SP / HTAB.
    InvalidCharacters,
    // HDR-09
    /// A `=?base64?…?=` payload is not canonical standard padded base64.
    InvalidBase64,
    // HDR-09
    /// A base64 payload decodes to bytes that are not UTF-8.
    InvalidUtf8,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DecodeError::InvalidCharacters => "invalid characters",
            DecodeError::InvalidBase64 => "invalid base64",
            DecodeError::InvalidUtf8 => "base64 payload is not UTF-8",
        })
    }
}

impl std::error::Error for DecodeError {}

// HDR-07
/// The payload between the markers when `raw` is wrapped as
/// `=?base64?<payload>?=` with exact lowercase markers that do not overlap;
/// `None` for a plain value.
pub fn sentinel_payload(raw: &[u8]) -> Option<&[u8]> {
    raw.strip_prefix(SENTINEL_PREFIX.as_bytes())?
        .strip_suffix(SENTINEL_SUFFIX.as_bytes())
}

// HDR-05, HDR-07, HDR-09, HDR-10
/// Decodes a received `Mcp-Name` / `Mcp-Param-*` value, reporting why it
/// has no value on failure. `raw` must already be OWS-trimmed.
///
/// - Wrapped in the exact lowercase markers: the payload must be
///   canonical standard base64 ([`base64_decode`]) of UTF-8.
/// - Otherwise the value is literal and must contain only visible ASCII,
///   SP and HTAB; it is borrowed, not copied. Uppercase markers,
///   a missing suffix and similar near-misses are literal values.
pub fn try_decode_header_value(raw: &[u8]) -> Result<Cow<'_, str>, DecodeError> {
    if let Some(payload) = sentinel_payload(raw) {
        let bytes = base64_decode(payload).ok_or(DecodeError::InvalidBase64)?;
        return String::from_utf8(bytes)
            .map(Cow::Owned)
            .map_err(|_| DecodeError::InvalidUtf8);
    }
    if !is_valid_field_value(raw) {
        return Err(DecodeError::InvalidCharacters);
    }
    // All bytes are ASCII here, so this cannot fail; no panic path regardless.
    std::str::from_utf8(raw)
        .map(Cow::Borrowed)
        .map_err(|_| DecodeError::InvalidCharacters)
}

// HDR-07…HDR-10
/// Decodes a received `Mcp-Name` / `Mcp-Param-*` value.
///
/// `None` means "no value": it must never compare equal to a body value, so
/// the server rejects the request with -32020. See
/// [`try_decode_header_value`] for the rules and the failure reason.
pub fn decode_header_value(raw: &[u8]) -> Option<Cow<'_, str>> {
    try_decode_header_value(raw).ok()
}
