//! Base64 (RFC 4648) for the workspace, through the `base64` crate: the
//! padded standard alphabet of the `Mcp-Name` / `Mcp-Param-*` header codec,
//! the unpadded URL-safe alphabet of tokens (sealed `requestState`), and a
//! lenient decoder for content a peer sent.
//!
//! The strict decoders accept exactly what the matching encoder produces
//! (canonical in both directions): the right alphabet only, no whitespace,
//! padding exactly as the encoder writes it, and zero trailing bits in the
//! last significant character.
// HDR-09 (canonical standard base64 in headers)

use base64::Engine as _;
use base64::alphabet;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{
    GeneralPurpose, GeneralPurposeConfig, STANDARD, URL_SAFE_NO_PAD,
};

/// Length of the padded standard encoding of `n` bytes.
pub const fn encoded_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// Appends the canonical, `=`-padded standard base64 of `input` to `out`.
pub fn encode_into(input: &[u8], out: &mut String) {
    STANDARD.encode_string(input, out);
}

/// The canonical, `=`-padded standard base64 of `input`.
pub fn encode(input: &[u8]) -> String {
    STANDARD.encode(input)
}

/// Strictly decodes canonical standard base64: `None` unless `input` is
/// exactly what [`encode`] produces for some byte string (length a multiple
/// of 4, the standard alphabet only, `=` only as the final one or two
/// padding characters, zero trailing bits; no whitespace, no URL-safe
/// alphabet, no missing padding).
pub fn decode(input: &[u8]) -> Option<Vec<u8>> {
    STANDARD.decode(input).ok()
}

/// The unpadded URL-safe base64 of `input` (RFC 4648 §5).
pub fn url_encode(input: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(input)
}

/// Strictly decodes unpadded URL-safe base64: `None` unless `input` is
/// exactly what [`url_encode`] produces (no padding, no `+` or `/`, no
/// whitespace, zero trailing bits).
pub fn url_decode(input: &[u8]) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(input).ok()
}

const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);
const LENIENT_STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
const LENIENT_URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

/// Decodes base64 a peer sent, leniently: the standard or the URL-safe
/// alphabet (not mixed), padding optional, line breaks and spaces ignored,
/// trailing bits allowed. `None` when it is not base64 even so.
pub fn decode_lenient(input: &str) -> Option<Vec<u8>> {
    let compact: Vec<u8> = input
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n' | b' ' | b'\t'))
        .collect();
    if compact.iter().any(|b| matches!(b, b'-' | b'_')) {
        LENIENT_URL_SAFE.decode(&compact).ok()
    } else {
        LENIENT_STANDARD.decode(&compact).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn standard_is_canonical() {
        assert_eq!(encode(b"hello"), "aGVsbG8=");
        assert_eq!(decode(b"aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        for bad in [
            "aGVsbG8",
            "aGVsbG9=",
            "aGVs bG8=",
            "aGVsbG8==",
            "-_8=",
            "YQ=",
            "a",
        ] {
            assert_eq!(decode(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(encoded_len(5), 8);
        let mut s = String::from("x");
        encode_into(b"a", &mut s);
        assert_eq!(s, "xYQ==");
    }

    #[test]
    fn url_safe_is_canonical() {
        assert_eq!(url_encode(&[0xfb, 0xff]), "-_8");
        assert_eq!(url_decode(b"-_8").as_deref(), Some(&[0xfb, 0xff][..]));
        // Padding, the standard alphabet, whitespace, an impossible length
        // and non-zero trailing bits ("YR"; "YQ" is "a") are refused.
        for bad in ["YQ==", "+/8", "YW Jj", "a", "abcde", "YR"] {
            assert_eq!(url_decode(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn lenient_takes_what_peers_send() {
        for ok in ["aGVsbG8=", "aGVsbG8", "aGVs\nbG8=", "aGVsbG9"] {
            assert_eq!(decode_lenient(ok).as_deref(), Some(&b"hello"[..]), "{ok:?}");
        }
        assert_eq!(decode_lenient("-_8").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(decode_lenient(""), Some(Vec::new()));
        assert_eq!(decode_lenient("a*b"), None);
        assert_eq!(decode_lenient("+_"), None);
    }

    proptest! {
        #[test]
        fn round_trips(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(decode(encode(&data).as_bytes()), Some(data.clone()));
            prop_assert_eq!(url_decode(url_encode(&data).as_bytes()), Some(data.clone()));
            prop_assert_eq!(decode_lenient(&encode(&data)), Some(data.clone()));
            prop_assert_eq!(decode_lenient(&url_encode(&data)), Some(data));
        }

        #[test]
        fn strict_decoders_are_canonical(text in "[A-Za-z0-9_=+/-]{0,24}") {
            if let Some(bytes) = decode(text.as_bytes()) {
                prop_assert_eq!(encode(&bytes), text.clone());
            }
            if let Some(bytes) = url_decode(text.as_bytes()) {
                prop_assert_eq!(url_encode(&bytes), text);
            }
        }
    }
}
