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
//! The base64 codec is written here (no dependency) and is canonical in both
//! directions: [`base64_decode`] accepts exactly the strings
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

/// The RFC 4648 §4 standard alphabet.
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Marks a byte that is not in [`ALPHABET`] in [`DECODE`].
const INVALID: u8 = 0xFF;

/// Reverse lookup table: byte → 6-bit value, or [`INVALID`].
const DECODE: [u8; 256] = {
    let mut table = [INVALID; 256];
    let mut i = 0;
    while i < 64 {
        table[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// The alphabet character for the low 6 bits of `v`.
#[inline]
fn sextet(v: u32) -> char {
    char::from(ALPHABET[(v & 0x3F) as usize])
}

/// Length of the padded base64 encoding of `n` bytes.
pub const fn base64_encoded_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// Appends the canonical, `=`-padded RFC 4648 standard base64 of `input` to `out`.
pub fn base64_encode_into(input: &[u8], out: &mut String) {
    out.reserve(base64_encoded_len(input.len()));
    let mut chunks = input.chunks_exact(3);
    for chunk in &mut chunks {
        if let [a, b, c] = *chunk {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8) | u32::from(c);
            out.push(sextet(n >> 18));
            out.push(sextet(n >> 12));
            out.push(sextet(n >> 6));
            out.push(sextet(n));
        }
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.push(sextet(n >> 18));
            out.push(sextet(n >> 12));
            out.push_str("==");
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.push(sextet(n >> 18));
            out.push(sextet(n >> 12));
            out.push(sextet(n >> 6));
            out.push('=');
        }
        _ => {}
    }
}

/// The canonical, `=`-padded RFC 4648 standard base64 of `input`.
pub fn base64_encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(base64_encoded_len(input.len()));
    base64_encode_into(input, &mut out);
    out
}

// HDR-09
/// Strictly decodes canonical RFC 4648 standard base64.
///
/// Returns `None` unless `input` is exactly what [`base64_encode`] produces
/// for some byte string: length a multiple of 4, only the standard alphabet,
/// `=` only as the one or two final padding characters, and zero trailing
/// bits in the last significant character (so re-encoding reproduces
/// `input` byte for byte). No whitespace, no URL-safe alphabet, no missing
/// padding.
pub fn base64_decode(input: &[u8]) -> Option<Vec<u8>> {
    if input.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(input.len() / 4 * 3);
    let Some((body, last)) = input.split_last_chunk::<4>() else {
        return Some(out); // empty input
    };
    for quad in body.chunks_exact(4) {
        let mut n = 0u32;
        for &c in quad {
            let v = DECODE[usize::from(c)];
            if v == INVALID {
                return None;
            }
            n = (n << 6) | u32::from(v);
        }
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
    }
    let [a, b, c, d] = *last;
    let (a, b) = (DECODE[usize::from(a)], DECODE[usize::from(b)]);
    if a == INVALID || b == INVALID {
        return None;
    }
    let head = (u32::from(a) << 18) | (u32::from(b) << 12);
    match (c, d) {
        (b'=', b'=') => {
            // One byte: the low 4 bits of `b` are padding and must be zero.
            if b & 0x0F != 0 {
                return None;
            }
            out.push((head >> 16) as u8);
        }
        (b'=', _) => return None,
        (c, b'=') => {
            let c = DECODE[usize::from(c)];
            // Two bytes: the low 2 bits of `c` are padding and must be zero.
            if c == INVALID || c & 0x03 != 0 {
                return None;
            }
            let n = head | (u32::from(c) << 6);
            out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8]);
        }
        (c, d) => {
            let (c, d) = (DECODE[usize::from(c)], DECODE[usize::from(d)]);
            if c == INVALID || d == INVALID {
                return None;
            }
            let n = head | (u32::from(c) << 6) | u32::from(d);
            out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
        }
    }
    Some(out)
}

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
